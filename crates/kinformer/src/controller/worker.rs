//! One worker's loop (client-go's `runWorker` / `processNextWorkItem`), with the
//! read-your-writes gate before each reconcile.

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::action::Action;
use super::queue::ControllerQueue;
use super::stats::{ControllerStats, ReconcileResult};
use super::writes::{Settled, Writes};
use crate::workqueue::AddOpts;

/// One worker's loop (client-go's `runWorker` / `processNextWorkItem`).
#[derive(Clone)]
pub(super) struct Worker {
    pub(super) name: String,
    pub(super) queue: ControllerQueue,
    pub(super) stats: ControllerStats,
    pub(super) writes: Writes,
    #[cfg(feature = "metrics")]
    pub(super) metrics: Option<crate::metrics::Metrics>,
}

impl Worker {
    /// Takes keys until `stop`; a reconcile still running when `abort` is cancelled is
    /// dropped and its key added again (for the next leader term).
    pub(super) async fn run<F, Fut, E>(
        self,
        stop: CancellationToken,
        abort: CancellationToken,
        reconcile: Arc<F>,
    ) where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        loop {
            let (key, priority) = tokio::select! {
                biased;
                _ = stop.cancelled() => return,
                next = self.queue.get_with_priority() => match next {
                    Some(next) => next,
                    None => return,
                },
            };
            let aborted = self
                .process(&key, priority, reconcile.as_ref(), &abort)
                .await;
            if aborted {
                self.queue.add_with_priority(key.clone(), priority);
            }
            self.queue.done(&key);
        }
    }

    /// Reconciles `key`, handed out at `priority`; requeues keep that priority unless the
    /// `Action` sets another (controller-runtime's `reconcileHandler`). True if `abort` cut the
    /// reconcile short.
    async fn process<F, Fut, E>(
        &self,
        key: &str,
        priority: i32,
        reconcile: &F,
        abort: &CancellationToken,
    ) -> bool
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<Action, E>>,
        E: fmt::Display,
    {
        self.stats.started();
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            m.worker_active(&self.name, 1);
        }
        let aborted = || {
            tracing::warn!(controller = %self.name, %key, "Reconcile cancelled: leadership ended");
            self.stats.abandoned();
            #[cfg(feature = "metrics")]
            if let Some(m) = &self.metrics {
                m.worker_active(&self.name, -1);
            }
            true
        };
        // Read your own writes: first wait for the caches to show what the last reconcile of
        // this key wrote; if they do not in time, skip and retry rate-limited (KCM).
        let settled = tokio::select! {
            biased;
            settled = self.writes.settle(key) => settled,
            _ = abort.cancelled() => return aborted(),
        };
        if !matches!(settled, Settled::Nothing) {
            self.stats
                .cache_waited(matches!(settled, Settled::TimedOut(_)));
            #[cfg(feature = "metrics")]
            if let Some(m) = &self.metrics {
                m.cache_waited(&self.name, matches!(settled, Settled::TimedOut(_)));
            }
        }
        if let Settled::TimedOut(e) = settled {
            tracing::debug!(controller = %self.name, %key, error = %e, "Reconcile skipped: the cache has not caught up with its last writes");
            self.stats.abandoned();
            #[cfg(feature = "metrics")]
            if let Some(m) = &self.metrics {
                m.worker_active(&self.name, -1);
            }
            self.queue.add_with_opts(key.to_owned(), retry(priority));
            return false;
        }
        let started = Instant::now();
        // The call itself may panic as well as the future: catch both.
        let call = AssertUnwindSafe(async { reconcile(key.to_owned()).await }).catch_unwind();
        let outcome = tokio::select! {
            biased;
            outcome = call => outcome,
            _ = abort.cancelled() => return aborted(),
        };
        let elapsed = started.elapsed();
        let key = key.to_owned();
        let (result, panicked) = match outcome {
            Ok(Ok(action)) => {
                self.queue.forget(&key);
                match action.requeue_delay() {
                    Some(delay) => {
                        let priority = action.priority().unwrap_or(priority);
                        let opts = AddOpts {
                            after: delay,
                            priority,
                            ..AddOpts::default()
                        };
                        self.queue.add_with_opts(key, opts);
                        (ReconcileResult::RequeueAfter, false)
                    }
                    None => (ReconcileResult::Success, false),
                }
            }
            Ok(Err(e)) => {
                tracing::debug!(controller = %self.name, %key, error = %e, retries = self.queue.num_requeues(&key), "Reconcile failed");
                self.queue.add_with_opts(key, retry(priority));
                (ReconcileResult::Error, false)
            }
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(controller = %self.name, %key, panic = %msg, "Reconcile panicked");
                self.queue.add_with_opts(key, retry(priority));
                (ReconcileResult::Error, true)
            }
        };
        self.stats.finished(result, panicked);
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            m.worker_active(&self.name, -1);
            m.reconciled(
                &self.name,
                (result.as_str(), result == ReconcileResult::Error),
                panicked,
                elapsed,
            );
        }
        #[cfg(not(feature = "metrics"))]
        let _ = elapsed;
        false
    }
}

/// A failed key goes back rate-limited at the priority it had.
fn retry(priority: i32) -> AddOpts {
    AddOpts {
        rate_limited: true,
        priority,
        ..AddOpts::default()
    }
}
