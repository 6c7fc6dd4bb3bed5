//! Ending one handler and waiting for it (client-go 1.37's `ShutDownEventHandler`), and what
//! the factory needs to wind down an informer it removes.

use super::*;
use crate::informer::listener::in_callback_of;

impl<K: Object> SharedIndexInformer<K> {
    /// Removes a handler and waits until it has stopped: when this returns, no callback of it
    /// runs and none ever will (client-go 1.37's `ShutDownEventHandler`, whose behaviour this
    /// is). Notifications queued for the handler and not yet handled are **dropped**, as
    /// [`remove_event_handler`](Self::remove_event_handler) drops them; only the callback
    /// already running is waited for. To have them delivered first, use
    /// [`drain_event_handler`](Self::drain_event_handler). Idempotent: for a handler already
    /// removed it waits for that one's last callback too.
    ///
    /// For an [`EventStream`]'s registration it removes the stream and returns at once: the
    /// stream's consumer is the caller's own task (the stream yields its end at its next poll).
    /// A handler of an informer that has not started has no task, and this returns at once.
    ///
    /// # Errors
    /// [`InformerError::ForeignRegistration`] for a registration from another informer;
    /// [`InformerError::FromOwnHandler`] when called from inside one of this handler's own
    /// callbacks (for instance through a blocking executor): waiting there would wait for
    /// itself, so the handler is removed and the call returns this error instead of
    /// deadlocking (client-go documents the deadlock instead).
    #[doc(alias = "ShutDownEventHandler")]
    pub async fn shut_down_event_handler(
        &self,
        registration: &ResourceEventHandlerRegistration,
    ) -> Result<(), InformerError> {
        self.remove_event_handler(registration)?;
        self.wait_handler_finished(registration).await
    }

    /// Stops sending a handler anything new, lets it handle everything already queued for it,
    /// then waits until its last callback has returned. The informer carries on meanwhile: the
    /// draining handler no longer holds it back (its backlog no longer counts toward
    /// [`MAX_LISTENER_BACKLOG`](crate::informer::MAX_LISTENER_BACKLOG)). client-go has no
    /// equivalent; its [`shut_down_event_handler`](Self::shut_down_event_handler) drops the
    /// queue. If the informer stops while the handler drains, the rest is dropped and this
    /// returns once the running callback has. A handler of an informer that has not started
    /// gets nothing (nothing runs it) and this returns at once. An [`EventStream`] yields what
    /// was queued, then its end; for a stream this returns at once.
    ///
    /// # Errors
    /// As [`shut_down_event_handler`](Self::shut_down_event_handler): a foreign registration,
    /// or a call from inside the handler's own callback (the handler is then detached and
    /// drains on its own after the callback returns).
    pub async fn drain_event_handler(
        &self,
        registration: &ResourceEventHandlerRegistration,
    ) -> Result<(), InformerError> {
        self.check_own(registration)?;
        {
            let _state = self.inner.state.lock();
            let _deltas = self.inner.block_deltas.lock();
            self.inner.processor.detach_listener(registration.id);
        }
        self.wait_handler_finished(registration).await
    }

    /// Waits for a removed or detached handler's last callback, unless that is impossible
    /// (a stream's consumer, or a call from inside the handler).
    async fn wait_handler_finished(
        &self,
        registration: &ResourceEventHandlerRegistration,
    ) -> Result<(), InformerError> {
        if registration.stream {
            return Ok(());
        }
        if in_callback_of(&registration.shared) {
            return Err(InformerError::FromOwnHandler(
                registration.name().to_owned(),
            ));
        }
        registration.stopped().await;
        Ok(())
    }

    /// Stops an informer that never ran: it will not run, takes no handlers, and its handlers'
    /// registrations end. Returns false (and does nothing) if it has started.
    pub(crate) async fn stop_unstarted(&self) -> bool {
        {
            let mut state = self.inner.state.lock();
            if state.started {
                return false;
            }
            state.stopped = true;
        }
        self.inner.indexer.close_waits();
        self.inner.processor.shutdown().await;
        true
    }

    /// After its factory removed it and it stopped: empties the cache (its objects go; listers
    /// held elsewhere read empty from now on) and marks it removed (it leaves the metrics
    /// scrape).
    pub(crate) fn retire(&self) {
        self.inner.state.lock().removed = true;
        if let Err(e) = self.inner.indexer.replace(Vec::new(), "") {
            tracing::warn!(informer = %self.inner.name, error = %e, "emptying the cache failed");
        }
    }
}
