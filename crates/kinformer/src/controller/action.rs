//! What a reconcile asks for next.

use std::time::Duration;

/// The outcome of a successful reconcile (controller-runtime's `Result`, kube-rs's `Action`).
///
/// Either way the key's retry history is forgotten; with [`Action::requeue_after`] the key is
/// reconciled again after the delay (not rate-limited), with [`Action::await_change`] only when
/// a watched object changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Action {
    requeue_after: Option<Duration>,
}

impl Action {
    /// Reconcile the key again after `delay` (a periodic check), even if nothing changes.
    pub fn requeue_after(delay: Duration) -> Self {
        Self {
            requeue_after: Some(delay),
        }
    }

    /// Done: reconcile again only when a watched object changes.
    pub fn await_change() -> Self {
        Self {
            requeue_after: None,
        }
    }

    /// The requested delay, if any.
    pub fn requeue_delay(&self) -> Option<Duration> {
        self.requeue_after
    }
}
