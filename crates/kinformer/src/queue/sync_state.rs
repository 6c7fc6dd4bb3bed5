//! Initial-population accounting shared by [`Fifo`](super::Fifo),
//! [`DeltaFifo`](super::DeltaFifo) and [`RealFifo`](super::RealFifo): client-go's `populated`,
//! `initialPopulationCount` and the once-closed `synced` channel.

use tokio::sync::watch;

/// Tracks whether a queue has delivered its first complete list.
///
/// A queue is *synced* once it is populated (the first `replace`, or any add/update/delete
/// before one) and the first replace's population has been popped. The flag latches: once
/// true it stays true. It lives inside the queue's lock; the watch channel publishes it to
/// waiters outside.
#[derive(Debug)]
pub(crate) struct SyncState {
    populated: bool,
    initial_population_count: usize,
    synced: bool,
    tx: watch::Sender<bool>,
}

impl SyncState {
    pub(crate) fn new() -> Self {
        Self {
            populated: false,
            initial_population_count: 0,
            synced: false,
            tx: watch::Sender::new(false),
        }
    }

    /// Whether the initial population has been delivered (latched).
    pub(crate) fn has_synced(&self) -> bool {
        self.synced
    }

    /// Whether the queue counts as populated yet.
    pub(crate) fn is_populated(&self) -> bool {
        self.populated
    }

    /// An add/update/delete happened: the queue is populated (the first batch is empty if no
    /// replace came before).
    pub(crate) fn mark_populated(&mut self) {
        self.populated = true;
        self.check();
    }

    /// The first replace: it populates the queue with `count` items to pop before it is synced.
    /// Does nothing if the queue was already populated.
    pub(crate) fn first_replace(&mut self, count: usize) {
        if !self.populated {
            self.populated = true;
            self.initial_population_count = count;
            self.check();
        }
    }

    /// One queue entry was consumed (popped, or for a `Fifo` skipped because it was deleted).
    /// Does not publish: call [`SyncState::check`] once the popped item has been processed.
    pub(crate) fn consume_one(&mut self) {
        self.consume(1);
    }

    /// `n` queue entries were consumed at once (a batch); see [`SyncState::consume_one`].
    pub(crate) fn consume(&mut self, n: usize) {
        self.initial_population_count = self.initial_population_count.saturating_sub(n);
    }

    /// How many entries of the first replace's population are still queued (0 once synced, or
    /// before any replace).
    pub(crate) fn initial_remaining(&self) -> usize {
        self.initial_population_count
    }

    /// Latches and publishes `synced` when populated and nothing of the first population is left.
    pub(crate) fn check(&mut self) {
        if !self.synced && self.populated && self.initial_population_count == 0 {
            self.synced = true;
            self.tx.send_replace(true);
        }
    }

    /// A receiver that sees `true` once the queue has synced.
    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        self.tx.subscribe()
    }
}

/// Runs [`SyncState::check`] when dropped, so the synced flag is published after the popped
/// item was processed, even if processing panics.
pub(crate) struct CheckOnDrop<'a>(pub(crate) &'a mut SyncState);

impl Drop for CheckOnDrop<'_> {
    fn drop(&mut self) {
        self.0.check();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_before_replace_syncs_immediately() {
        let mut s = SyncState::new();
        assert!(!s.has_synced());
        s.mark_populated();
        assert!(s.has_synced());
        assert!(*s.subscribe().borrow());
    }

    #[test]
    fn first_replace_counts_down() {
        let mut s = SyncState::new();
        let rx = s.subscribe();
        s.first_replace(2);
        s.consume_one();
        s.check();
        assert!(!s.has_synced());
        assert!(!*rx.borrow());
        s.consume_one();
        s.check();
        assert!(s.has_synced());
        assert!(*rx.borrow());
        s.first_replace(5);
        assert!(s.has_synced(), "a later replace does not reset the latch");
    }
}
