//! Who waits for a cache to reach a resource version: a count (so writes skip the wake-up
//! when nobody waits), the notifier, and whether the cache's writer has stopped. See
//! [`Indexer::wait_for_resource_version`](super::Indexer::wait_for_resource_version).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtomicOrdering};

use tokio::sync::Notify;

/// The waiters of one cache: a count (so writes skip the wake-up when nobody waits), the
/// notifier, and whether the cache's writer has stopped.
#[derive(Debug, Default)]
pub(crate) struct Waiters {
    pub(super) waiting: AtomicUsize,
    pub(super) notify: Notify,
    pub(super) closed: AtomicBool,
}

impl Waiters {
    /// After a write: wakes every waiter, if there is one.
    pub(super) fn wake(&self) {
        if self.waiting.load(AtomicOrdering::SeqCst) > 0 {
            self.notify.notify_waiters();
        }
    }

    /// The writer has stopped: every wait, present and future, ends with
    /// [`CacheWaitError::Stopped`](super::CacheWaitError::Stopped) unless already satisfied.
    pub(super) fn close(&self) {
        self.closed.store(true, AtomicOrdering::SeqCst);
        self.notify.notify_waiters();
    }
}

/// Counts one waiter while it lives.
pub(super) struct Waiting<'a>(&'a Waiters);

impl<'a> Waiting<'a> {
    pub(super) fn new(waiters: &'a Waiters) -> Self {
        waiters.waiting.fetch_add(1, AtomicOrdering::SeqCst);
        Self(waiters)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, AtomicOrdering::SeqCst);
    }
}
