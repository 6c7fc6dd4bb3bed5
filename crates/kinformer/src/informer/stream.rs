//! Consuming an informer as an async [`Stream`] of [`Event`]s.

use std::pin::Pin;
use std::sync::Weak;
use std::task::{Context, Poll};

use futures::Stream;

use super::event::Event;
use super::listener::{ListenerQueue, ResourceEventHandlerRegistration};
use super::processor::Processor;

/// An informer's notifications as a [`Stream`]: the Rust-idiomatic alternative to a
/// `ResourceEventHandler`, with the same guarantees (the cache is updated before an event is
/// yielded; events come in order; the initial list comes first, then [`Event::Synced`], then
/// live events).
///
/// The stream is a registered listener, with the same queue and bookkeeping as a handler: its
/// registration (see [`EventStream::registration`]) reports sync and backlog like any
/// handler's, and the same backlog bound applies (see
/// [`MAX_LISTENER_BACKLOG`](super::MAX_LISTENER_BACKLOG)): poll it, or the informer pauses
/// once this stream is that many live events behind. The initial list never counts toward the
/// bound, so waiting for the informer to sync before polling is fine. Dropping the stream
/// removes the listener. The stream ends when the informer stops.
pub struct EventStream<K: Send + Sync + 'static> {
    queue: ListenerQueue<K>,
    registration: ResourceEventHandlerRegistration,
    processor: Weak<Processor<K>>,
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
        queue: ListenerQueue<K>,
        registration: ResourceEventHandlerRegistration,
        processor: Weak<Processor<K>>,
    ) -> Self {
        Self {
            queue,
            registration,
            processor,
            done: false,
        }
    }

    /// This stream's registration: sync state, backlog, counters.
    pub fn registration(&self) -> &ResourceEventHandlerRegistration {
        &self.registration
    }
}

impl<K: Send + Sync + 'static> Stream for EventStream<K> {
    type Item = Event<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event<K>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        let next = std::task::ready!(this.queue.poll_next(cx));
        if next.is_none() {
            this.done = true;
            this.queue.shared.finished.cancel();
        }
        Poll::Ready(next)
    }
}

impl<K: Send + Sync + 'static> Drop for EventStream<K> {
    fn drop(&mut self) {
        if let Some(p) = self.processor.upgrade() {
            p.remove_listener(self.registration.id);
        }
    }
}
