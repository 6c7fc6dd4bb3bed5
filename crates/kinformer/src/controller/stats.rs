//! Counters a controller keeps whether or not the `metrics` feature is on.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
struct Counters {
    reconciles: AtomicU64,
    successes: AtomicU64,
    requeues_after: AtomicU64,
    errors: AtomicU64,
    panics: AtomicU64,
    active: AtomicU64,
    cache_waits: AtomicU64,
    cache_wait_timeouts: AtomicU64,
}

/// Live counts of a controller's reconciles (cheap atomics; clone to share).
#[derive(Debug, Clone, Default)]
pub struct ControllerStats {
    c: Arc<Counters>,
}

/// How one reconcile ended, as controller-runtime's `result` label names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileResult {
    /// `Ok(Action::await_change())`.
    Success,
    /// `Ok(Action::requeue_after(d))`.
    RequeueAfter,
    /// An error or a panic.
    Error,
}

impl ReconcileResult {
    /// Every result, in controller-runtime's order.
    #[cfg(feature = "metrics")]
    pub(crate) const ALL: [ReconcileResult; 3] = [
        ReconcileResult::Success,
        ReconcileResult::RequeueAfter,
        ReconcileResult::Error,
    ];

    /// controller-runtime's label value.
    pub fn as_str(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::RequeueAfter => "requeue_after",
            ReconcileResult::Error => "error",
        }
    }
}

impl ControllerStats {
    /// Reconciles finished (any outcome).
    pub fn reconciles(&self) -> u64 {
        self.c.reconciles.load(Ordering::Relaxed)
    }
    /// Reconciles that returned `await_change`.
    pub fn successes(&self) -> u64 {
        self.c.successes.load(Ordering::Relaxed)
    }
    /// Reconciles that asked to be requeued after a delay.
    pub fn requeues_after(&self) -> u64 {
        self.c.requeues_after.load(Ordering::Relaxed)
    }
    /// Reconciles that failed, panics included.
    pub fn errors(&self) -> u64 {
        self.c.errors.load(Ordering::Relaxed)
    }
    /// Reconciles that panicked.
    pub fn panics(&self) -> u64 {
        self.c.panics.load(Ordering::Relaxed)
    }
    /// Workers running a reconcile right now.
    pub fn active_workers(&self) -> u64 {
        self.c.active.load(Ordering::Relaxed)
    }

    /// Reconciles that first waited for the caches to show their key's recorded writes
    /// (read your own writes), timed-out waits included.
    pub fn cache_waits(&self) -> u64 {
        self.c.cache_waits.load(Ordering::Relaxed)
    }
    /// Waits for recorded writes that timed out: the reconcile was skipped and its key retried
    /// rate-limited (KCM's `stale_sync_skips_total`).
    pub fn cache_wait_timeouts(&self) -> u64 {
        self.c.cache_wait_timeouts.load(Ordering::Relaxed)
    }

    pub(crate) fn cache_waited(&self, timed_out: bool) {
        self.c.cache_waits.fetch_add(1, Ordering::Relaxed);
        if timed_out {
            self.c.cache_wait_timeouts.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn started(&self) {
        self.c.active.fetch_add(1, Ordering::Relaxed);
    }

    /// A reconcile cut short (its future dropped): no longer active, not counted as finished.
    pub(crate) fn abandoned(&self) {
        self.c.active.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn finished(&self, result: ReconcileResult, panicked: bool) {
        self.c.active.fetch_sub(1, Ordering::Relaxed);
        self.c.reconciles.fetch_add(1, Ordering::Relaxed);
        let counter = match result {
            ReconcileResult::Success => &self.c.successes,
            ReconcileResult::RequeueAfter => &self.c.requeues_after,
            ReconcileResult::Error => &self.c.errors,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if panicked {
            self.c.panics.fetch_add(1, Ordering::Relaxed);
        }
    }
}
