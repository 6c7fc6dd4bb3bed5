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

use super::runner::{Controller, ControllerError};
use crate::leaderelection::{ElectionEnd, LeaderCallbacks, LeaderElector};
use crate::object::Object;

/// What [`Controller::run`] does once this replica loses the lease (renewals failed for the
/// renew deadline, or another holder was seen).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AfterLostLeadership {
    /// Return [`ControllerError::LostLeadership`] (the default): the process should exit and
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

impl<K: Object> Controller<K> {
    /// Runs the workers only while `elector` holds its lease (warm standby, as
    /// controller-runtime's `EnableWarmup` with leader election).
    ///
    /// Every replica registers its handlers, syncs its caches and keeps its queue filled
    /// whether or not it leads; the replica that wins the lease starts its workers at once on
    /// the warm cache and the queue as it stands. The standby's queue is kept, not rebuilt:
    /// as with controller-runtime's warm-up (whose sources feed the queue before the
    /// election is won), it holds every object of the initial lists plus every change since,
    /// so the new leader reconciles everything once, as a cold start would, without waiting
    /// for a list.
    ///
    /// When leadership ends (lost, or `run` cancelled), workers stop taking keys at once;
    /// reconciles in flight get `min(shutdown_timeout, (lease_duration − renew_deadline) / 2)`
    /// to finish, then their futures are dropped and their keys queued again. So with the
    /// elector stepping down at most `renew_deadline` after its last good renewal began, every
    /// reconcile of this replica has ended by `renew_deadline + (lease_duration −
    /// renew_deadline) / 2`, half the margin before any other replica may take over (the
    /// other half absorbs clock-rate differences). Work a reconcile spawned on its own is not
    /// cancelled, and requests already sent may still land: leases are not fences.
    ///
    /// One elector leads one controller: give each controller of a process its own lease.
    /// The elector's `release_on_cancel` releases the lease after the workers stopped.
    pub fn leader_election(mut self, elector: LeaderElector) -> Self {
        self.election = Some(Election {
            elector,
            after_loss: AfterLostLeadership::default(),
        });
        self
    }

    /// What to do after losing the lease (default [`AfterLostLeadership::Return`]); only with
    /// [`leader_election`](Self::leader_election).
    pub fn after_lost_leadership(mut self, then: AfterLostLeadership) -> Self {
        if let Some(e) = self.election.as_mut() {
            e.after_loss = then;
        }
        self
    }

    /// The elector, if any.
    pub fn elector(&self) -> Option<&LeaderElector> {
        self.election.as_ref().map(|e| &e.elector)
    }
}

impl Election {
    /// Campaigns until `cancel`, running the workers while leading.
    pub(super) async fn run(
        &self,
        name: &str,
        cancel: &CancellationToken,
        shutdown_timeout: Duration,
        start: StartWorkers,
    ) -> Result<(), ControllerError> {
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
            match self.elector.run(cancel.clone(), callbacks).await? {
                ElectionEnd::Cancelled { .. } => {
                    return match abandoned.load(Ordering::SeqCst) {
                        0 => Ok(()),
                        abandoned => Err(ControllerError::ShutdownTimeout { abandoned }),
                    };
                }
                ElectionEnd::LostLeadership => match self.after_loss {
                    AfterLostLeadership::Return => return Err(ControllerError::LostLeadership),
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
