//! The leader gate around the workers: leader election with warm standby.
//!
//! Every replica registers its handlers, syncs its informers and fills its queue; only the
//! replica holding the lease runs workers. See [`Controller::leader_election`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::leaderelection::{ElectionEnd, LeaderCallbacks, LeaderElector, RunError};

/// What [`Controller::run`](super::Controller::run) does once this replica loses the lease (renewals failed for the
/// renew deadline, or another holder was seen).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AfterLostLeadership {
    /// Return [`ControllerError::LostLeadership`](super::ControllerError::LostLeadership) (the default): the process should exit and
    /// be restarted, as client-go's `OnStoppedLeading: klog.Fatal` and controller-runtime's
    /// manager do. The safest choice: nothing of the old term survives.
    #[default]
    Return,
    /// Stay a warm standby: keep the informers, handlers and queue running and campaign
    /// again.
    StandBy,
}

/// Starts the workers: (stop taking keys, cancel running reconciles) → the worker tasks.
pub(super) type StartWorkers =
    Arc<dyn Fn(CancellationToken, CancellationToken) -> JoinSet<()> + Send + Sync>;

/// A controller's elector and what to do after losing.
#[derive(Debug)]
pub(super) struct Election {
    elector: LeaderElector,
    after_loss: AfterLostLeadership,
}

impl Election {
    /// `elector`, returning after a loss.
    pub(super) fn new(elector: LeaderElector) -> Self {
        Self {
            elector,
            after_loss: AfterLostLeadership::default(),
        }
    }

    pub(super) fn set_after_loss(&mut self, then: AfterLostLeadership) {
        self.after_loss = then;
    }

    pub(super) fn elector(&self) -> &LeaderElector {
        &self.elector
    }
}

/// How the leader terms of [`Election::run`] ended.
#[derive(Debug)]
pub(super) enum Ended {
    /// Cancelled; this many reconciles were cut short when the last term ended.
    Cancelled { abandoned: usize },
    /// Lost the lease with [`AfterLostLeadership::Return`].
    Lost,
    /// The elector could not run.
    Failed(RunError),
}

impl Election {
    /// Campaigns until `cancel`, running the workers while leading.
    pub(super) async fn run(
        &self,
        name: &str,
        cancel: &CancellationToken,
        shutdown_timeout: Duration,
        start: StartWorkers,
    ) -> Ended {
        let cfg = self.elector.config();
        let margin = cfg.lease_duration.saturating_sub(cfg.renew_deadline);
        let grace = shutdown_timeout.min(margin / 2);
        let abandoned = Arc::new(AtomicUsize::new(0));
        loop {
            let (start, abandoned_now, name_now) =
                (start.clone(), abandoned.clone(), name.to_owned());
            let callbacks = LeaderCallbacks::new().on_started_leading(move |leading: CancellationToken| {
                let (start, abandoned, name) = (start.clone(), abandoned_now.clone(), name_now.clone());
                async move {
                    tracing::info!(controller = %name, "Leading: starting workers");
                    let abort = CancellationToken::new();
                    let workers = start(leading.clone(), abort.clone());
                    leading.cancelled().await;
                    tracing::info!(controller = %name, "Stopped leading: stopping workers");
                    let n = drain(workers, grace, abort).await;
                    if n > 0 {
                        tracing::warn!(controller = %name, abandoned = n, "Reconciles cancelled: leadership ended");
                    }
                    abandoned.store(n, Ordering::SeqCst);
                }
            });
            match self.elector.run(cancel.clone(), callbacks).await {
                Err(e) => return Ended::Failed(e),
                Ok(ElectionEnd::Cancelled { .. }) => {
                    return Ended::Cancelled {
                        abandoned: abandoned.load(Ordering::SeqCst),
                    };
                }
                Ok(ElectionEnd::LostLeadership) => match self.after_loss {
                    AfterLostLeadership::Return => return Ended::Lost,
                    AfterLostLeadership::StandBy => {
                        tracing::info!(controller = %name, "Lost the lease: standing by");
                    }
                },
            }
        }
    }
}

/// Waits up to `grace` for `workers` to return, then cancels their reconciles (`abort`) and
/// waits for them; returns how many were still running at the deadline.
pub(super) async fn drain(
    mut workers: JoinSet<()>,
    grace: Duration,
    abort: CancellationToken,
) -> usize {
    let deadline = Instant::now() + grace;
    loop {
        match tokio::time::timeout_at(deadline, workers.join_next()).await {
            Ok(Some(_)) => {}
            Ok(None) => return 0,
            Err(_) => break,
        }
    }
    let abandoned = workers.len();
    abort.cancel();
    while workers.join_next().await.is_some() {}
    abandoned
}
