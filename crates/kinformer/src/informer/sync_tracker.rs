//! Per-handler sync tracking (client-go's `synctrack.SingleFileTracker`).

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use crate::wait::{SyncFlag, SyncSignal};

/// Counts a handler's initial-list notifications still unhandled. The handler has synced once
/// its informer has synced *and* the count is zero.
///
/// All calls are made in the listener's order (the upstream signal travels through the
/// listener's own queue), so `finished` and `upstream_has_synced` never race.
#[derive(Debug)]
pub(crate) struct SyncTracker {
    count: AtomicI64,
    upstream: AtomicBool,
    flag: SyncFlag,
    signal: SyncSignal,
}

impl SyncTracker {
    pub(crate) fn new(name: String) -> Self {
        let (flag, signal) = SyncSignal::new(name);
        Self {
            count: AtomicI64::new(0),
            upstream: AtomicBool::new(false),
            flag,
            signal,
        }
    }

    /// An initial-list notification was queued.
    pub(crate) fn start(&self) {
        self.count.fetch_add(1, Ordering::AcqRel);
    }

    /// An initial-list notification was handled. Returns true if this made the handler synced.
    pub(crate) fn finished(&self) -> bool {
        let left = self.count.fetch_sub(1, Ordering::AcqRel) - 1;
        if left < 0 {
            // client-go panics here; a logic error must not take the process down.
            tracing::error!("sync tracker counter went negative; resetting it to zero");
            self.count.store(0, Ordering::Release);
        }
        left <= 0 && self.upstream.load(Ordering::Acquire) && self.mark()
    }

    /// The informer has synced. Returns true if this made the handler synced.
    pub(crate) fn upstream_has_synced(&self) -> bool {
        self.upstream.store(true, Ordering::Release);
        self.count.load(Ordering::Acquire) <= 0 && self.mark()
    }

    fn mark(&self) -> bool {
        let was = self.flag.is_synced();
        self.flag.mark_synced();
        !was
    }

    pub(crate) fn has_synced(&self) -> bool {
        self.flag.is_synced()
    }

    pub(crate) fn signal(&self) -> SyncSignal {
        self.signal.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synced_needs_upstream_and_all_initial_items_handled() {
        let t = SyncTracker::new("t".into());
        t.start();
        t.start();
        assert!(!t.upstream_has_synced());
        assert!(!t.finished());
        assert!(!t.has_synced());
        assert!(t.finished());
        assert!(t.has_synced());
        assert!(
            !t.upstream_has_synced(),
            "already synced: no second transition"
        );
    }

    #[test]
    fn empty_initial_list_syncs_with_upstream() {
        let t = SyncTracker::new("t".into());
        assert!(!t.has_synced());
        assert!(t.upstream_has_synced());
        assert!(t.signal().has_synced());
    }

    #[test]
    fn negative_counter_is_logged_not_fatal() {
        let t = SyncTracker::new("t".into());
        t.upstream_has_synced();
        assert!(!t.finished());
        assert!(t.has_synced());
    }
}
