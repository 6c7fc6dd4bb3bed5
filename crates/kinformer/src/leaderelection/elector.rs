//! The elector: client-go's `LeaderElector` (acquire, renew, release) on a [`ResourceLock`].

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::{ConfigError, JITTER_FACTOR, LeaderElectionConfig};
use super::lock::{LeaderElectionRecord, LockError, micro_time};

type StartedFn = Arc<dyn Fn(CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>;
type StoppedFn = Arc<dyn Fn() + Send + Sync>;
type NewLeaderFn = Arc<dyn Fn(&str) + Send + Sync>;

/// What the elector calls (client-go's `LeaderCallbacks`). Every callback is optional.
#[derive(Clone, Default)]
pub struct LeaderCallbacks {
    started: Option<StartedFn>,
    stopped: Option<StoppedFn>,
    new_leader: Option<NewLeaderFn>,
}

impl std::fmt::Debug for LeaderCallbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderCallbacks")
            .field("on_started_leading", &self.started.is_some())
            .field("on_stopped_leading", &self.stopped.is_some())
            .field("on_new_leader", &self.new_leader.is_some())
            .finish()
    }
}

impl LeaderCallbacks {
    /// No callbacks.
    pub fn new() -> Self {
        Self::default()
    }

    /// `OnStartedLeading(ctx)`: the work to do while leading. It is spawned on winning; its
    /// token is cancelled when leadership ends (lost or cancelled), and the elector waits for
    /// the future to return before it releases the lease and calls `on_stopped_leading`, so
    /// the future must return promptly once the token is cancelled. If the elector's `run`
    /// future is dropped while leading, the work's task is aborted at once.
    #[must_use]
    pub fn on_started_leading<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.started = Some(Arc::new(move |token| Box::pin(f(token))));
        self
    }

    /// `OnStoppedLeading`: called once leadership has ended and the leading work returned.
    ///
    /// Deliberate difference: client-go calls it whenever `Run` returns, even on a candidate
    /// that never led; here only after leading.
    #[must_use]
    pub fn on_stopped_leading(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.stopped = Some(Arc::new(f));
        self
    }

    /// `OnNewLeader(identity)`: called whenever the observed holder changes (this candidate
    /// included; an empty identity after a release, as client-go). Called inline: it must
    /// not block.
    #[must_use]
    pub fn on_new_leader(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.new_leader = Some(Arc::new(f));
        self
    }
}

/// The elector's state, as [`LeaderElector::watch`] streams it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderStatus {
    /// Whether this candidate leads now (between started and stopped leading).
    pub leading: bool,
    /// The holder last observed in the lock (`None` when nobody holds it or nothing was read).
    pub leader: Option<String>,
}

/// How [`LeaderElector::run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionEnd {
    /// Cancelled; `led` says whether it was leading then.
    Cancelled {
        /// Whether this candidate led before the cancellation.
        led: bool,
    },
    /// Renewal did not succeed within the renew deadline, or another holder was seen: this
    /// candidate stepped down.
    LostLeadership,
}

/// Why [`LeaderElector::run`] could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// `run` was called while another `run` of the same elector was going on.
    #[error("this elector is already running")]
    AlreadyRunning,
}

#[derive(Debug, Default)]
struct Observed {
    record: LeaderElectionRecord,
    /// The lock object's version the record came with (any write changes it).
    version: Option<String>,
    /// When this candidate saw the record change, on its own clock.
    time: Option<Instant>,
}

struct Inner {
    config: LeaderElectionConfig,
    observed: Mutex<Observed>,
    reported_leader: Mutex<String>,
    status: watch::Sender<LeaderStatus>,
    running: AtomicBool,
}

/// A candidate for leadership (client-go's `LeaderElector`). Cheap to clone: clones share
/// the state.
///
/// # The guarantee, and its limits
///
/// As in client-go, no timestamp written by another process is ever compared with a local
/// clock. A candidate records, on its own monotonic clock, *when it observed* the lock's
/// record change (any write: a renewal changes `renewTime` and the `resourceVersion`), and
/// takes the lease only once `leaseDurationSeconds` have passed since then without a
/// change. The leader counts its renew deadline from the *start* of its last successful
/// renewal, which is no later than when anyone can have observed it. So the leader stops
/// before anyone else may start provided:
///
/// * `renew_deadline` + the time the leading work needs to stop < `lease_duration`
///   (validation checks `renew_deadline < lease_duration`; the [controller
///   runner](crate::controller::Controller::leader_election) bounds its own stop time);
/// * clocks tick at nearly the same **rate** (over one lease duration, the leader's clock
///   may not run slower than the others' by more than the margin above). Their **offsets**
///   do not matter: wall-clock times in the lease are for people only.
///
/// It is not a fence: a write the old leader sent just before stepping down may still reach
/// the server after the new leader started. Processes that are paused (GC, SIGSTOP, a
/// suspended VM) past the renew deadline notice only when they resume.
///
/// Deliberate differences from client-go: the renew deadline runs from the last successful
/// renewal rather than from the start of each retry loop (client-go's leader may keep
/// leading up to one retry period longer); a leader that reads another holder in the lock
/// steps down at once; a release clears the lock only if it still names this candidate
/// (client-go checks its cached view); each acquire attempt is bounded by the renew
/// deadline. Coordinated leader election (`LeaseCandidate`, KEP-4355) is out of scope.
#[derive(Clone)]
pub struct LeaderElector {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.inner.config)
            .field("status", &*self.inner.status.borrow())
            .finish()
    }
}

impl LeaderElector {
    /// An elector for `config`, after client-go's checks.
    ///
    /// # Errors
    /// The first [`ConfigError`] the configuration fails.
    pub fn new(config: LeaderElectionConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                observed: Mutex::new(Observed::default()),
                reported_leader: Mutex::new(String::new()),
                status: watch::channel(LeaderStatus::default()).0,
                running: AtomicBool::new(false),
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.inner.config
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        self.inner.config.lock.identity()
    }

    /// Whether this candidate leads now.
    ///
    /// Deliberate difference: client-go's `IsLeader` compares the last observed holder with
    /// the identity, so it stays true after a leader stepped down for failed renewals; this
    /// is true only between started and stopped leading.
    pub fn is_leader(&self) -> bool {
        self.inner.status.borrow().leading
    }

    /// The holder last observed in the lock (client-go's `GetLeader`), `None` if nobody.
    pub fn get_leader(&self) -> Option<String> {
        let o = self.inner.observed.lock();
        (!o.record.holder_identity.is_empty()).then(|| o.record.holder_identity.clone())
    }

    /// The state as it changes: leading or not, and the observed leader.
    pub fn watch(&self) -> watch::Receiver<LeaderStatus> {
        self.inner.status.subscribe()
    }

    /// Campaigns until `cancel` is cancelled or leadership is lost (client-go's `Run`):
    /// retries acquiring every `retry_period` (jittered), then leads (`on_started_leading`)
    /// while renewing every `retry_period`, and steps down when a renewal has not succeeded
    /// within `renew_deadline`. On the way out it cancels the leading work's token, waits
    /// for the work, releases the lease if [`release_on_cancel`](LeaderElectionConfig::release_on_cancel),
    /// then calls `on_stopped_leading`. May be called again after it returned.
    ///
    /// # Errors
    /// [`RunError::AlreadyRunning`] if this elector is running already.
    pub async fn run(
        &self,
        cancel: CancellationToken,
        callbacks: LeaderCallbacks,
    ) -> Result<ElectionEnd, RunError> {
        if self.inner.running.swap(true, Ordering::SeqCst) {
            return Err(RunError::AlreadyRunning);
        }
        struct Running<'a>(&'a AtomicBool);
        impl Drop for Running<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::SeqCst);
            }
        }
        let _running = Running(&self.inner.running);
        let Some(acquired_at) = self.acquire(&cancel, &callbacks).await else {
            return Ok(ElectionEnd::Cancelled { led: false });
        };
        Ok(self.lead(&cancel, &callbacks, acquired_at).await)
    }

    /// Tries until acquired (returning the start of the successful attempt) or cancelled.
    async fn acquire(
        &self,
        cancel: &CancellationToken,
        callbacks: &LeaderCallbacks,
    ) -> Option<Instant> {
        let cfg = &self.inner.config;
        tracing::info!(lock = %cfg.lock.describe(), identity = %self.identity(), "attempting to acquire leader lease");
        loop {
            let attempt = cfg.clock.now();
            let result = tokio::select! {
                biased;
                _ = cancel.cancelled() => return None,
                _ = cfg.clock.sleep_until(attempt + cfg.renew_deadline) => Err(LockError::Other {
                    lock: cfg.lock.describe(),
                    message: "the attempt outlived the renew deadline".into(),
                }),
                r = self.try_acquire_or_renew() => r,
            };
            self.maybe_report_transition(callbacks);
            match result {
                Ok(true) => {
                    tracing::info!(lock = %cfg.lock.describe(), identity = %self.identity(), "successfully acquired lease");
                    return Some(attempt);
                }
                Ok(false) => {
                    tracing::debug!(lock = %cfg.lock.describe(), "lease is held by another candidate")
                }
                Err(e) => {
                    tracing::debug!(lock = %cfg.lock.describe(), error = %e, "failed to acquire lease")
                }
            }
            let jitter = rand::random::<f64>() * JITTER_FACTOR;
            let wait = cfg.retry_period + cfg.retry_period.mul_f64(jitter);
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return None,
                _ = cfg.clock.sleep_until(cfg.clock.now() + wait) => {}
            }
        }
    }

    async fn lead(
        &self,
        cancel: &CancellationToken,
        callbacks: &LeaderCallbacks,
        mut last_renewal: Instant,
    ) -> ElectionEnd {
        let cfg = &self.inner.config;
        let token = cancel.child_token();
        self.inner.status.send_modify(|s| s.leading = true);
        // If this future is dropped (its task aborted, a select elsewhere), nothing renews
        // the lease any more: the guard stops the work and the status at once.
        let mut guard = Leading {
            token: token.clone(),
            work: callbacks
                .started
                .as_ref()
                .map(|f| tokio::spawn(f(token.clone()))),
            status: &self.inner.status,
        };
        let end = 'renew: loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break 'renew ElectionEnd::Cancelled { led: true },
                _ = cfg.clock.sleep_until(cfg.clock.now() + cfg.retry_period) => {}
            }
            let deadline = last_renewal + cfg.renew_deadline;
            loop {
                let attempt = cfg.clock.now();
                if attempt >= deadline {
                    break 'renew ElectionEnd::LostLeadership;
                }
                let result = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => break 'renew ElectionEnd::Cancelled { led: true },
                    _ = cfg.clock.sleep_until(deadline) => break 'renew ElectionEnd::LostLeadership,
                    r = self.try_acquire_or_renew() => r,
                };
                self.maybe_report_transition(callbacks);
                match result {
                    Ok(true) => {
                        last_renewal = attempt;
                        continue 'renew;
                    }
                    Ok(false) => break 'renew ElectionEnd::LostLeadership,
                    Err(e) => {
                        tracing::debug!(lock = %cfg.lock.describe(), error = %e, "failed to renew lease")
                    }
                }
                let next = (attempt + cfg.retry_period).min(deadline);
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => break 'renew ElectionEnd::Cancelled { led: true },
                    _ = cfg.clock.sleep_until(next) => {}
                }
            }
        };
        if end == ElectionEnd::LostLeadership {
            tracing::info!(lock = %cfg.lock.describe(), identity = %self.identity(), "failed to renew lease: stepping down");
        }
        token.cancel();
        if let Some(work) = guard.work.as_mut()
            && let Err(e) = work.await
        {
            tracing::error!(error = %e, "the leading work panicked");
        }
        guard.work = None;
        drop(guard);
        if cfg.release_on_cancel {
            match self.release().await {
                Ok(true) => tracing::info!(lock = %cfg.lock.describe(), "released the lease"),
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(lock = %cfg.lock.describe(), error = %e, "failed to release the lease")
                }
            }
        }
        if let Some(stopped) = &callbacks.stopped {
            stopped();
        }
        end
    }

    /// Gives the lease up if the lock still names this candidate (client-go's `release`):
    /// holder cleared, `leaseDurationSeconds` 1, so others take it on their next try. Retries
    /// on conflicts, for at most the renew deadline. Call it only once the leading work has
    /// stopped ([`run`](Self::run) does so itself with `release_on_cancel`).
    ///
    /// Returns whether the lease was released by this call.
    ///
    /// # Errors
    /// The lock's error, or [`LockError::Other`] when the renew deadline passed.
    pub async fn release(&self) -> Result<bool, LockError> {
        let cfg = &self.inner.config;
        let deadline = cfg.clock.now() + cfg.renew_deadline;
        tokio::select! {
            biased;
            r = self.try_release() => r,
            _ = cfg.clock.sleep_until(deadline) => Err(LockError::Other {
                lock: cfg.lock.describe(),
                message: "the release outlived the renew deadline".into(),
            }),
        }
    }

    async fn try_release(&self) -> Result<bool, LockError> {
        let cfg = &self.inner.config;
        loop {
            let old = match cfg.lock.get().await {
                Ok((old, _)) => old,
                Err(LockError::NotFound(_)) => return Ok(false),
                Err(e) => return Err(e),
            };
            if old.holder_identity != self.identity() {
                return Ok(false);
            }
            let now = micro_time(cfg.clock.wall());
            let record = LeaderElectionRecord {
                holder_identity: String::new(),
                lease_duration_seconds: 1,
                acquire_time: now.clone(),
                renew_time: now,
                leader_transitions: old.leader_transitions,
            };
            match cfg.lock.update(record.clone()).await {
                Ok(version) => {
                    self.set_observed(record, version);
                    return Ok(true);
                }
                Err(LockError::Conflict(_)) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// One attempt (client-go's `tryAcquireOrRenew`): `Ok(true)` when this candidate holds
    /// the lease afterwards, `Ok(false)` when another candidate holds an unexpired lease.
    async fn try_acquire_or_renew(&self) -> Result<bool, LockError> {
        let cfg = &self.inner.config;
        let lock = &cfg.lock;
        let now = cfg.clock.now();
        let wall = micro_time(cfg.clock.wall());
        let mut record = LeaderElectionRecord {
            holder_identity: lock.identity().to_owned(),
            lease_duration_seconds: cfg.lease_duration_seconds(),
            acquire_time: wall.clone(),
            renew_time: wall,
            leader_transitions: 0,
        };
        // 1. The leader's fast path: update optimistically, assuming the version it last saw.
        let fast = {
            let o = self.inner.observed.lock();
            (self.holds(&o) && valid(&o, now)).then(|| o.record.clone())
        };
        if let Some(observed) = fast {
            record.acquire_time = observed.acquire_time;
            record.leader_transitions = observed.leader_transitions;
            match lock.update(record.clone()).await {
                Ok(version) => {
                    self.set_observed(record, version);
                    return Ok(true);
                }
                Err(e) => {
                    tracing::debug!(lock = %lock.describe(), error = %e, "failed to update the lease optimistically, falling back to the slow path")
                }
            }
        }
        // 2. Read the lock, or create it.
        let (old, version) = match lock.get().await {
            Ok(got) => got,
            Err(LockError::NotFound(_)) => {
                let version = lock.create(record.clone()).await?;
                self.set_observed(record, version);
                return Ok(true);
            }
            Err(e) => return Err(e),
        };
        // 3. A change restarts the observed time; an unexpired lease of another is respected.
        let holds = {
            let mut o = self.inner.observed.lock();
            if o.record != old || o.version.as_deref() != Some(version.as_str()) {
                *o = Observed {
                    record: old.clone(),
                    version: Some(version),
                    time: Some(cfg.clock.now()),
                };
                self.publish_leader(&o);
            }
            if !old.holder_identity.is_empty() && valid(&o, now) && !self.holds(&o) {
                return Ok(false);
            }
            self.holds(&o)
        };
        // 4. Take it over, or renew it on the slow path.
        if holds {
            record.acquire_time = old.acquire_time;
            record.leader_transitions = old.leader_transitions;
        } else {
            record.leader_transitions = old.leader_transitions.saturating_add(1);
        }
        let version = lock.update(record.clone()).await?;
        self.set_observed(record, version);
        Ok(true)
    }

    fn holds(&self, o: &Observed) -> bool {
        o.record.holder_identity == self.identity()
    }

    fn set_observed(&self, record: LeaderElectionRecord, version: String) {
        let mut o = self.inner.observed.lock();
        *o = Observed {
            record,
            version: Some(version),
            time: Some(self.inner.config.clock.now()),
        };
        self.publish_leader(&o);
    }

    fn publish_leader(&self, o: &Observed) {
        let leader =
            (!o.record.holder_identity.is_empty()).then(|| o.record.holder_identity.clone());
        self.inner.status.send_if_modified(|s| {
            let changed = s.leader != leader;
            s.leader = leader;
            changed
        });
    }

    /// client-go's `maybeReportTransition`.
    fn maybe_report_transition(&self, callbacks: &LeaderCallbacks) {
        let holder = self.inner.observed.lock().record.holder_identity.clone();
        {
            let mut reported = self.inner.reported_leader.lock();
            if *reported == holder {
                return;
            }
            reported.clone_from(&holder);
        }
        if let Some(f) = &callbacks.new_leader {
            f(&holder);
        }
    }
}

/// While leading: on drop, cancels the leading work's token, aborts its task if it is still
/// running, and clears the leading flag.
struct Leading<'a> {
    token: CancellationToken,
    work: Option<tokio::task::JoinHandle<()>>,
    status: &'a watch::Sender<LeaderStatus>,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        self.token.cancel();
        if let Some(work) = self.work.take() {
            work.abort();
        }
        self.status.send_modify(|s| s.leading = false);
    }
}

/// client-go's `isLeaseValid`: the observed record's lease has not run out on our clock.
fn valid(o: &Observed, now: Instant) -> bool {
    let secs = u64::try_from(o.record.lease_duration_seconds).unwrap_or(0);
    o.time
        .is_some_and(|t| t + std::time::Duration::from_secs(secs) > now)
}
