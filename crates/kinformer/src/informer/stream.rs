//! Consuming an informer as an async [`Stream`] of [`Event`]s.

use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc;

use super::listener::{ListenerShared, Notification, ResourceEventHandlerRegistration};
use super::processor::Processor;
use crate::ObjectOrTombstone;

/// One notification from an informer, as an [`EventStream`] yields it.
#[derive(Debug)]
pub enum Event<K> {
    /// An object appeared (`is_in_initial_list`: part of the initial list or cache replay).
    Add {
        /// The object.
        obj: Arc<K>,
        /// Whether it belongs to the initial list.
        is_in_initial_list: bool,
    },
    /// An object changed (or was resynced: same resource version).
    Update {
        /// The state before.
        old: Arc<K>,
        /// The state now.
        new: Arc<K>,
    },
    /// An object was deleted; a tombstone when its final state is unknown.
    Delete(ObjectOrTombstone<K>),
    /// Emitted once: every initial-list `Add` has been yielded and the informer has synced.
    /// Everything after it is live.
    Synced,
}

/// An informer's notifications as a [`Stream`]: the Rust-idiomatic alternative to a
/// `ResourceEventHandler`, with the same guarantees (the cache is updated before an event is
/// yielded; events come in order; the initial list comes first, then [`Event::Synced`], then
/// live events).
///
/// The stream is a registered listener: its registration (see [`EventStream::registration`])
/// reports sync and backlog like any handler's. Dropping the stream removes the listener. The
/// stream ends when the informer stops.
pub struct EventStream<K: Send + Sync + 'static> {
    rx: mpsc::UnboundedReceiver<Notification<K>>,
    shared: Arc<ListenerShared>,
    registration: ResourceEventHandlerRegistration,
    processor: Weak<Processor<K>>,
    finish_initial: bool,
    done: bool,
}

impl<K: Send + Sync + 'static> std::fmt::Debug for EventStream<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("registration", &self.registration)
            .finish_non_exhaustive()
    }
}

impl<K: Send + Sync + 'static> EventStream<K> {
    pub(crate) fn new(
        rx: mpsc::UnboundedReceiver<Notification<K>>,
        registration: ResourceEventHandlerRegistration,
        processor: Weak<Processor<K>>,
    ) -> Self {
        Self {
            rx,
            shared: registration.shared.clone(),
            registration,
            processor,
            finish_initial: false,
            done: false,
        }
    }

    /// This stream's registration: sync state, backlog, counters.
    pub fn registration(&self) -> &ResourceEventHandlerRegistration {
        &self.registration
    }

    fn end(&mut self) -> Poll<Option<Event<K>>> {
        self.done = true;
        self.shared.finished.cancel();
        Poll::Ready(None)
    }
}

impl<K: Send + Sync + 'static> Stream for EventStream<K> {
    type Item = Event<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event<K>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        loop {
            if std::mem::take(&mut this.finish_initial) && this.shared.tracker.finished() {
                return Poll::Ready(Some(Event::Synced));
            }
            let n = match this.rx.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return this.end(),
                Poll::Ready(Some(n)) => n,
            };
            this.shared
                .pending
                .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            if this.shared.stop.is_cancelled() {
                return this.end();
            }
            let counted = || {
                this.shared
                    .handled
                    .fetch_add(1, std::sync::atomic::Ordering::AcqRel)
            };
            let event = match n {
                Notification::UpstreamSynced => {
                    if this.shared.tracker.upstream_has_synced() {
                        return Poll::Ready(Some(Event::Synced));
                    }
                    continue;
                }
                Notification::Add {
                    obj,
                    is_in_initial_list,
                } => {
                    counted();
                    // Counted as handled when the consumer comes back for the next item.
                    this.finish_initial = is_in_initial_list;
                    Event::Add {
                        obj,
                        is_in_initial_list,
                    }
                }
                Notification::Update { old, new } => {
                    counted();
                    Event::Update { old, new }
                }
                Notification::Delete(obj) => {
                    counted();
                    Event::Delete(obj)
                }
            };
            return Poll::Ready(Some(event));
        }
    }
}

impl<K: Send + Sync + 'static> Drop for EventStream<K> {
    fn drop(&mut self) {
        if let Some(p) = self.processor.upgrade() {
            p.remove_listener(self.registration.id);
        }
        self.shared.finished.cancel();
    }
}
