//! The controller: its builder and its run loop.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kube::Resource;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::action::Action;
use super::handlers::{EnqueueMapped, EnqueueOwn, MapFn, controller_owner_key};
use super::leader::{AfterLostLeadership, Election, Ended, drain};
use super::queue::ControllerQueue;
use super::stats::ControllerStats;
#[cfg(feature = "metrics")]
use super::stats::ReconcileResult;
use super::worker::Worker;
use super::writes::Writes;
use crate::informer::{InformerError, SharedIndexInformer};
use crate::leaderelection::LeaderElector;
use crate::object::Object;
use crate::wait::{SyncSignal, wait_for_named_cache_sync};
use crate::workqueue::{
    DelayingQueue, ItemExponentialFailureRateLimiter, PriorityQueue, QueueConfig, RateLimiter,
    RateLimitingQueue, default_controller_rate_limiter,
};

/// How long running reconciles may take to finish once the controller is cancelled, unless
/// set with [`Controller::shutdown_timeout`].
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// Why [`Controller::run`] ended early or untidily.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// A handler could not be registered (the informer has stopped).
    #[error("registering a handler: {0}")]
    Informer(#[from] InformerError),
    /// Cancelled before every cache synced; no reconcile ran.
    #[error("cancelled before the caches synced")]
    NotSynced,
    /// Reconciles still running when the shutdown timeout passed were abandoned.
    #[error("{abandoned} reconciles still running after the shutdown timeout were abandoned")]
    ShutdownTimeout {
        /// How many workers were stopped mid-reconcile.
        abandoned: usize,
    },
    /// This replica lost the leader lease (and [`AfterLostLeadership::Return`](super::AfterLostLeadership::Return) was set, the
    /// default): its workers have stopped; exit, as client-go and controller-runtime
    /// controllers do.
    #[error("lost the leader lease")]
    LostLeadership,
    /// The elector could not run (it is running for another controller already).
    #[error("leader election: {0}")]
    Election(#[from] crate::leaderelection::RunError),
}

/// What a registered handler leaves behind: its sync signal and how to remove it.
struct Registered {
    signal: SyncSignal,
    remove: Box<dyn FnOnce() + Send>,
}

type Register = Box<dyn FnOnce(&ControllerQueue) -> Result<Registered, InformerError> + Send>;

fn register<C: Object>(
    informer: SharedIndexInformer<C>,
    handler: impl crate::informer::ResourceEventHandler<C>,
) -> Result<Registered, InformerError> {
    let registration = informer.add_event_handler(handler)?;
    let signal = registration.synced_signal();
    Ok(Registered {
        signal,
        remove: Box::new(move || {
            if let Err(e) = informer.remove_event_handler(&registration) {
                tracing::debug!(error = %e, "removing a controller handler");
            }
        }),
    })
}

/// A controller of primary objects `K` (see the [module docs](super)).
pub struct Controller<K: Object> {
    name: String,
    primary: SharedIndexInformer<K>,
    queue: ControllerQueue,
    /// The retry limiter set with `rate_limiter`; `None`: the default for the queue kind.
    limiter: Option<Arc<dyn RateLimiter<String>>>,
    use_priority_queue: bool,
    registrations: Vec<Register>,
    workers: usize,
    shutdown_timeout: Duration,
    stats: ControllerStats,
    writes: Writes,
    #[cfg(feature = "metrics")]
    metrics: Option<crate::metrics::Metrics>,
    election: Option<Election>,
}

impl<K: Object> fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("informer", &self.primary.name())
            .field("watches", &self.registrations.len())
            .field("workers", &self.workers)
            .field("queue", &self.queue)
            .field("election", &self.election)
            .finish()
    }
}

impl<K> Controller<K>
where
    K: Object + Resource,
    K::DynamicType: Default,
{
    /// A controller named `name` (the queue's name and the metrics' `controller` label) that
    /// reconciles the objects of `primary`, with one worker and, as controller-runtime since
    /// v0.23, a [`PriorityQueue`] with per-key exponential backoff from 5 ms to 1000 s (see
    /// [`priority_queue`](Self::priority_queue)).
    ///
    /// # Panics
    /// Outside a Tokio runtime (the queue spawns its timer task).
    pub fn new(name: impl Into<String>, primary: SharedIndexInformer<K>) -> Self {
        let name = name.into();
        let queue = build_queue(true, None, QueueConfig::named(name.clone()));
        let writes = Writes::new();
        writes.know(&primary);
        let mut controller = Self {
            name,
            primary: primary.clone(),
            queue,
            limiter: None,
            use_priority_queue: true,
            registrations: Vec::new(),
            workers: 1,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            stats: ControllerStats::default(),
            writes,
            #[cfg(feature = "metrics")]
            metrics: None,
            election: None,
        };
        controller.registrations.push(Box::new(move |queue| {
            register(
                primary,
                EnqueueOwn {
                    queue: queue.clone(),
                },
            )
        }));
        controller
    }

    /// Also reconciles the controlling owner of every object of `children` whose owner is of
    /// kind `K` (controller-runtime's `Owns`).
    pub fn owns<C>(self, children: SharedIndexInformer<C>) -> Self
    where
        C: Object + Resource,
    {
        let dt = K::DynamicType::default();
        let api_version = K::api_version(&dt).into_owned();
        let kind = K::kind(&dt).into_owned();
        self.watches(children, move |child: &C| {
            controller_owner_key(child, &api_version, &kind)
                .into_iter()
                .collect()
        })
    }

    /// Also reconciles the keys `map` returns for every object of `informer` that changes
    /// (controller-runtime's `Watches` with a map function).
    pub fn watches<C: Object>(
        mut self,
        informer: SharedIndexInformer<C>,
        map: impl Fn(&C) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        let map: MapFn<C> = Arc::new(map);
        self.writes.know(&informer);
        self.registrations.push(Box::new(move |queue| {
            register(
                informer,
                EnqueueMapped {
                    queue: queue.clone(),
                    map,
                },
            )
        }));
        self
    }
}

impl<K: Object> Controller<K> {
    /// How many reconciles may run at once (at least one; default 1, as controller-runtime).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// Whether the next reconcile of a key first waits for the caches to show the writes the
    /// last one recorded with [`Writes::record`] (read your own writes; see the
    /// [module docs](super)). On by default: it acts only on recorded writes, so a reconcile
    /// that records nothing pays nothing, and kube-controller-manager's consistency store is
    /// on by default since 1.36. Off: records are dropped and nothing waits.
    pub fn read_your_writes(self, enabled: bool) -> Self {
        self.writes.set_enabled(enabled);
        self
    }

    /// How long the next reconcile of a key waits for its recorded writes to show (default
    /// [`DEFAULT_READ_YOUR_WRITES_TIMEOUT`](super::DEFAULT_READ_YOUR_WRITES_TIMEOUT), as
    /// controller-runtime's read-your-writes client). Past it, the key is skipped and retried
    /// rate-limited, as KCM's consistency store does.
    pub fn read_your_writes_timeout(self, timeout: Duration) -> Self {
        self.writes.set_timeout(timeout);
        self
    }

    /// The handle a reconcile records its writes with (and may wait on explicitly): clone it
    /// into the reconcile closure.
    pub fn writes(&self) -> Writes {
        self.writes.clone()
    }

    /// How long running reconciles may take to finish after cancellation.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Replaces the retry rate limiter (and the queue; keys added before are dropped).
    ///
    /// # Panics
    /// Outside a Tokio runtime (the queue spawns its timer task).
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<String> + 'static) -> Self {
        self.limiter = Some(Arc::new(limiter));
        self.rebuild_queue();
        self
    }

    /// Whether to use controller-runtime's [`PriorityQueue`] (`true`, the default, as
    /// controller-runtime's `UsePriorityQueue` since v0.23: initial-list adds and resyncs at
    /// [`LOW_PRIORITY`](crate::workqueue::LOW_PRIORITY), other events at 0, requeues keep
    /// their priority) or client-go's FIFO [`RateLimitingQueue`] (`false`). Without a
    /// [`rate_limiter`](Self::rate_limiter), the priority queue backs off per key from 5 ms to
    /// 1000 s and the FIFO queue uses client-go's default controller limiter (that plus a
    /// 10 qps, burst 100 bucket), as in controller-runtime. Replaces the queue; keys added
    /// before are dropped.
    ///
    /// # Panics
    /// Outside a Tokio runtime (the queue spawns its timer task).
    pub fn priority_queue(mut self, enabled: bool) -> Self {
        self.use_priority_queue = enabled;
        self.rebuild_queue();
        self
    }

    fn rebuild_queue(&mut self) {
        self.queue.shut_down();
        self.queue = build_queue(
            self.use_priority_queue,
            self.limiter.clone(),
            self.queue_config(),
        );
    }

    /// Records the workqueue and reconcile metrics into `metrics` (replaces the queue; keys
    /// added before are dropped).
    ///
    /// # Panics
    /// Outside a Tokio runtime (the queue spawns its timer task).
    #[cfg(feature = "metrics")]
    pub fn metrics(mut self, metrics: &crate::metrics::Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self.rebuild_queue();
        self
    }

    fn queue_config(&self) -> QueueConfig<String> {
        #[allow(unused_mut)]
        let mut config = QueueConfig::named(self.name.clone());
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            config.metrics_provider = Some(Arc::new(m.clone()));
        }
        config
    }

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
        self.election = Some(Election::new(elector));
        self
    }

    /// What to do after losing the lease (default [`AfterLostLeadership::Return`]); only with
    /// [`leader_election`](Self::leader_election).
    pub fn after_lost_leadership(mut self, then: AfterLostLeadership) -> Self {
        if let Some(e) = self.election.as_mut() {
            e.set_after_loss(then);
        }
        self
    }

    /// The elector, if any.
    pub fn elector(&self) -> Option<&LeaderElector> {
        self.election.as_ref().map(Election::elector)
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The work queue, e.g. to enqueue a key by hand.
    pub fn queue(&self) -> &ControllerQueue {
        &self.queue
    }

    /// Live reconcile counts.
    pub fn stats(&self) -> ControllerStats {
        self.stats.clone()
    }

    /// Runs until `cancel` is cancelled: registers the handlers, waits for the caches, then
    /// runs the workers calling `reconcile(key)` (with leader election: while leading).
    ///
    /// # Errors
    /// [`ControllerError::Informer`] if a handler cannot be registered,
    /// [`ControllerError::NotSynced`] if cancelled before the caches synced,
    /// [`ControllerError::ShutdownTimeout`] if reconciles outlived the shutdown timeout;
    /// with [`leader_election`](Self::leader_election), [`ControllerError::LostLeadership`]
    /// after losing the lease (unless [`AfterLostLeadership::StandBy`]) and
    /// [`ControllerError::Election`] if the elector is running already.
    pub async fn run<F, Fut, E>(
        mut self,
        cancel: CancellationToken,
        reconcile: F,
    ) -> Result<(), ControllerError>
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let mut registered = Vec::new();
        for r in std::mem::take(&mut self.registrations) {
            match r(&self.queue) {
                Ok(reg) => registered.push(reg),
                Err(e) => {
                    self.stop(registered);
                    return Err(e.into());
                }
            }
        }
        let mut signals: Vec<SyncSignal> = vec![self.primary.synced_signal()];
        signals.extend(registered.iter().map(|r| r.signal.clone()));
        if !wait_for_named_cache_sync(&self.name, &cancel, signals).await {
            self.stop(registered);
            return Err(ControllerError::NotSynced);
        }
        tracing::info!(controller = %self.name, workers = self.workers, "Starting workers");
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            m.controller_started(
                &self.name,
                self.workers,
                &ReconcileResult::ALL.map(ReconcileResult::as_str),
            );
        }
        let start = {
            let reconcile = Arc::new(reconcile);
            let worker = Worker {
                name: self.name.clone(),
                queue: self.queue.clone(),
                stats: self.stats.clone(),
                writes: self.writes.clone(),
                #[cfg(feature = "metrics")]
                metrics: self.metrics.clone(),
            };
            let count = self.workers;
            move |stop: CancellationToken, abort: CancellationToken| {
                let mut workers = JoinSet::new();
                for _ in 0..count {
                    let (worker, reconcile) = (worker.clone(), reconcile.clone());
                    let (stop, abort) = (stop.clone(), abort.clone());
                    workers.spawn(async move { worker.run(stop, abort, reconcile).await });
                }
                workers
            }
        };
        let result = match self.election.take() {
            Some(election) => match election
                .run(&self.name, &cancel, self.shutdown_timeout, Arc::new(start))
                .await
            {
                Ended::Cancelled { abandoned: 0 } => Ok(()),
                Ended::Cancelled { abandoned } => {
                    Err(ControllerError::ShutdownTimeout { abandoned })
                }
                Ended::Lost => Err(ControllerError::LostLeadership),
                Ended::Failed(e) => Err(e.into()),
            },
            None => {
                let abort = CancellationToken::new();
                let workers = start(cancel.clone(), abort.clone());
                cancel.cancelled().await;
                tracing::info!(controller = %self.name, "Shutting down workers");
                match drain(workers, self.shutdown_timeout, abort).await {
                    0 => Ok(()),
                    abandoned => {
                        tracing::warn!(controller = %self.name, abandoned, "Reconciles outlived the shutdown timeout");
                        Err(ControllerError::ShutdownTimeout { abandoned })
                    }
                }
            }
        };
        self.stop(registered);
        result
    }

    fn stop(&self, registered: Vec<Registered>) {
        self.queue.shut_down();
        for r in registered {
            (r.remove)();
        }
    }
}

/// The controller's queue: a priority queue or client-go's FIFO rate-limiting queue, with
/// `limiter` or the default for the kind.
fn build_queue(
    priority: bool,
    limiter: Option<Arc<dyn RateLimiter<String>>>,
    config: QueueConfig<String>,
) -> ControllerQueue {
    if priority {
        let limiter = limiter.unwrap_or_else(|| {
            Arc::new(ItemExponentialFailureRateLimiter::new(
                Duration::from_millis(5),
                Duration::from_secs(1000),
            ))
        });
        PriorityQueue::with_shared_limiter(limiter, config).into()
    } else {
        let limiter = limiter.unwrap_or_else(|| Arc::new(default_controller_rate_limiter()));
        RateLimitingQueue::from_delaying(DelayingQueue::with_config(config), limiter).into()
    }
}
