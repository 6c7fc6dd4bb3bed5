//! What a reconcile asks for next.

use std::time::Duration;

/// The outcome of a successful reconcile (controller-runtime's `Result`, kube-rs's `Action`).
///
/// Either way the key's retry history is forgotten; with [`Action::requeue_after`] the key is
/// reconciled again after the delay (not rate-limited), with [`Action::await_change`] only when
/// a watched object changes.
///
/// With the priority queue (the default), the requeue keeps the priority the key was handed
/// out with, unless [`Action::with_priority`] sets another (controller-runtime's
/// `Result.Priority`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Action {
    requeue_after: Option<Duration>,
    priority: Option<i32>,
}

impl Action {
    /// Reconcile the key again after `delay` (a periodic check), even if nothing changes.
    pub fn requeue_after(delay: Duration) -> Self {
        Self {
            requeue_after: Some(delay),
            priority: None,
        }
    }

    /// Done: reconcile again only when a watched object changes.
    pub fn await_change() -> Self {
        Self {
            requeue_after: None,
            priority: None,
        }
    }

    /// The requested delay, if any.
    pub fn requeue_delay(&self) -> Option<Duration> {
        self.requeue_after
    }

    /// The priority of the requeue (higher first; see
    /// [`LOW_PRIORITY`](crate::workqueue::LOW_PRIORITY)). Ignored by the FIFO queue.
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = Some(priority);
        self
    }

    /// The priority set with [`with_priority`](Self::with_priority), if any.
    pub fn priority(&self) -> Option<i32> {
        self.priority
    }
}
