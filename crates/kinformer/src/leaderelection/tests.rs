//! The lease state machine on paused time, over the in-memory lock (client-go's
//! `leaderelection_test.go` cases where they apply).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::*;

const S: Duration = Duration::from_secs(1);

/// A lock that fails every call while `cut` is set (a replica cut off from the API).
#[derive(Debug)]
struct Flaky {
    inner: MemoryLock,
    cut: Arc<AtomicBool>,
}

impl Flaky {
    fn check(&self) -> Result<(), LockError> {
        if self.cut.load(Ordering::SeqCst) {
            Err(LockError::Other {
                lock: self.describe(),
                message: "connection refused".into(),
            })
        } else {
            Ok(())
        }
    }
}

impl ResourceLock for Flaky {
    fn get(&self) -> BoxFuture<'_, Result<(LeaderElectionRecord, String), LockError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.get().await
        })
    }
    fn create(&self, r: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.create(r).await
        })
    }
    fn update(&self, r: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.update(r).await
        })
    }
    fn identity(&self) -> &str {
        self.inner.identity()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

type Log = Arc<Mutex<Vec<(Duration, String)>>>;

/// Callbacks that log `started <id>`, `stopped <id>`, `leader <holder>` with the time.
fn logging(id: &str, log: &Log, t0: Instant) -> LeaderCallbacks {
    let (a, b, c) = (log.clone(), log.clone(), log.clone());
    let (ia, ib) = (id.to_owned(), id.to_owned());
    LeaderCallbacks::new()
        .on_started_leading(move |token: CancellationToken| {
            a.lock().push((t0.elapsed(), format!("started {ia}")));
            async move { token.cancelled().await }
        })
        .on_stopped_leading(move || b.lock().push((t0.elapsed(), format!("stopped {ib}"))))
        .on_new_leader(move |h| c.lock().push((t0.elapsed(), format!("leader {h}"))))
}

fn elector(lock: impl ResourceLock + 'static) -> LeaderElector {
    LeaderElector::new(LeaderElectionConfig::new(lock)).unwrap()
}

fn entries(log: &Log, what: &str) -> Vec<Duration> {
    log.lock()
        .iter()
        .filter(|(_, s)| s == what)
        .map(|(t, _)| *t)
        .collect()
}

async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

#[test]
fn validation_follows_client_go() {
    let lease = MemoryLease::new();
    let cfg = |l: u64, r: u64, p: u64| {
        LeaderElectionConfig::new(lease.lock("a")).durations(
            Duration::from_millis(l),
            Duration::from_millis(r),
            Duration::from_millis(p),
        )
    };
    assert_eq!(cfg(15_000, 10_000, 2_000).validate(), Ok(()));
    assert_eq!(
        cfg(10_000, 10_000, 2_000).validate(),
        Err(ConfigError::LeaseNotLongerThanRenewDeadline)
    );
    // 1.2 × 2 s = 2.4 s: a 2.4 s renew deadline is not greater.
    assert_eq!(
        cfg(15_000, 2_400, 2_000).validate(),
        Err(ConfigError::RenewDeadlineTooShort)
    );
    assert_eq!(cfg(15_000, 2_401, 2_000).validate(), Ok(()));
    assert_eq!(
        cfg(15_000, 10_000, 0).validate(),
        Err(ConfigError::ZeroRetryPeriod)
    );
    assert_eq!(
        cfg(10_900, 10_100, 2_000).validate(),
        Err(ConfigError::WholeSecondsNotLongerThanRenewDeadline { whole_seconds: 10 })
    );
    assert_eq!(
        LeaderElectionConfig::new(lease.lock("")).validate(),
        Err(ConfigError::EmptyIdentity)
    );
    let d = LeaderElectionConfig::new(lease.lock("a"));
    assert_eq!(
        (
            d.lease_duration,
            d.renew_deadline,
            d.retry_period,
            d.release_on_cancel
        ),
        (15 * S, 10 * S, 2 * S, false)
    );
    assert!(LeaderElector::new(cfg(1_000, 1_000, 100)).is_err());
}

#[tokio::test(start_paused = true)]
async fn the_first_candidate_creates_the_lease_and_leads() {
    let lease = MemoryLease::new();
    let log = Log::default();
    let t0 = Instant::now();
    let a = elector(lease.lock("a"));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (a, cancel, cb) = (a.clone(), cancel.clone(), logging("a", &log, t0));
        async move { a.run(cancel, cb).await }
    });
    settle().await;
    assert!(a.is_leader());
    assert_eq!(a.get_leader().as_deref(), Some("a"));
    let r = lease.record().unwrap();
    assert_eq!(r.holder_identity, "a");
    assert_eq!(r.lease_duration_seconds, 15);
    assert_eq!(r.leader_transitions, 0);
    assert!(r.acquire_time.is_some() && r.acquire_time == r.renew_time);
    assert_eq!(entries(&log, "leader a"), vec![Duration::ZERO]);
    assert_eq!(entries(&log, "started a"), vec![Duration::ZERO]);
    // Renewed every retry period, acquireTime kept.
    tokio::time::sleep(7 * S).await;
    assert_eq!(lease.writes(), 1 + 3);
    let renewed = lease.record().unwrap();
    assert_eq!(renewed.acquire_time, r.acquire_time);
    assert_eq!(renewed.leader_transitions, 0);
    assert!(
        a.run(CancellationToken::new(), LeaderCallbacks::new())
            .await
            == Err(RunError::AlreadyRunning)
    );
    cancel.cancel();
    assert_eq!(run.await.unwrap(), Ok(ElectionEnd::Cancelled { led: true }));
    assert!(!a.is_leader());
    assert_eq!(entries(&log, "stopped a").len(), 1);
    // Without release_on_cancel the lease still names a.
    assert_eq!(lease.record().unwrap().holder_identity, "a");
}

/// A killed leader (no release): the candidate takes over only once `leaseDurationSeconds`
/// passed since it last saw the record change, and increments leaseTransitions.
#[tokio::test(start_paused = true)]
async fn a_killed_leader_is_replaced_after_the_lease_duration() {
    let lease = MemoryLease::new();
    let log = Log::default();
    let t0 = Instant::now();
    let a = elector(lease.lock("a"));
    let b = elector(lease.lock("b"));
    let run_a = tokio::spawn({
        let (a, cb) = (a.clone(), logging("a", &log, t0));
        async move { a.run(CancellationToken::new(), cb).await }
    });
    settle().await;
    let cancel_b = CancellationToken::new();
    let run_b = tokio::spawn({
        let (b, cb, c) = (b.clone(), logging("b", &log, t0), cancel_b.clone());
        async move { b.run(c, cb).await }
    });
    tokio::time::sleep(5 * S).await;
    assert!(!b.is_leader());
    assert_eq!(b.get_leader().as_deref(), Some("a"));
    assert_eq!(entries(&log, "leader a").len(), 2, "both report a");
    // a's last renewal before the kill was at 4 s (every 2 s).
    run_a.abort();
    let killed = t0.elapsed();
    tokio::time::sleep(30 * S).await;
    let started = entries(&log, "started b");
    assert_eq!(started.len(), 1);
    // b observed a's last renewal (at 4 s) no earlier than it was made and at most one try
    // (4.4 s) later, and takes over on its first try after 15 s from then.
    assert!(started[0] > 4 * S + 15 * S, "{started:?}");
    assert!(
        started[0] <= 4 * S + 15 * S + Duration::from_millis(8_800),
        "{started:?}"
    );
    assert!(started[0] > killed);
    let r = lease.record().unwrap();
    assert_eq!((r.holder_identity.as_str(), r.leader_transitions), ("b", 1));
    assert!(b.is_leader());
    cancel_b.cancel();
    run_b.await.unwrap().unwrap();
}

/// Renewals failing: the leader steps down once no renewal succeeded for `renew_deadline`
/// since the start of the last good one, before the others may take over.
#[tokio::test(start_paused = true)]
async fn a_leader_whose_renewals_fail_steps_down_before_the_lease_expires() {
    let lease = MemoryLease::new();
    let log = Log::default();
    let t0 = Instant::now();
    let cut = Arc::new(AtomicBool::new(false));
    let a = elector(Flaky {
        inner: lease.lock("a"),
        cut: cut.clone(),
    });
    let b = elector(lease.lock("b"));
    let run_a = tokio::spawn({
        let (a, cb) = (a.clone(), logging("a", &log, t0));
        async move { a.run(CancellationToken::new(), cb).await }
    });
    settle().await;
    let cancel_b = CancellationToken::new();
    let run_b = tokio::spawn({
        let (b, cb, c) = (b.clone(), logging("b", &log, t0), cancel_b.clone());
        async move { b.run(c, cb).await }
    });
    // Last good renewal at 4 s; cut off from 5 s.
    tokio::time::sleep(5 * S).await;
    cut.store(true, Ordering::SeqCst);
    assert_eq!(run_a.await.unwrap(), Ok(ElectionEnd::LostLeadership));
    let stopped = entries(&log, "stopped a");
    assert_eq!(stopped, vec![4 * S + 10 * S]);
    tokio::time::sleep(20 * S).await;
    let started = entries(&log, "started b");
    assert_eq!(started.len(), 1);
    assert!(
        started[0] > stopped[0] + 5 * S - Duration::from_millis(1),
        "{started:?}"
    );
    assert!(started[0] > 4 * S + 15 * S);
    cancel_b.cancel();
    run_b.await.unwrap().unwrap();
}

/// Transient failures shorter than the renew deadline keep the leader leading.
#[tokio::test(start_paused = true)]
async fn transient_renewal_failures_within_the_deadline_keep_the_lease() {
    let lease = MemoryLease::new();
    let cut = Arc::new(AtomicBool::new(false));
    let a = elector(Flaky {
        inner: lease.lock("a"),
        cut: cut.clone(),
    });
    let cancel = CancellationToken::new();
    let stops = Arc::new(AtomicUsize::new(0));
    let run_a = tokio::spawn({
        let (a, c, stops) = (a.clone(), cancel.clone(), stops.clone());
        let cb = LeaderCallbacks::new().on_stopped_leading(move || {
            stops.fetch_add(1, Ordering::SeqCst);
        });
        async move { a.run(c, cb).await }
    });
    for _ in 0..5 {
        tokio::time::sleep(3 * S).await;
        cut.store(true, Ordering::SeqCst);
        tokio::time::sleep(7 * S).await;
        cut.store(false, Ordering::SeqCst);
    }
    tokio::time::sleep(3 * S).await;
    assert!(a.is_leader());
    assert_eq!(stops.load(Ordering::SeqCst), 0);
    assert_eq!(lease.record().unwrap().leader_transitions, 0);
    cancel.cancel();
    run_a.await.unwrap().unwrap();
}

/// release_on_cancel: holder cleared, leaseDurationSeconds 1, transitions kept; the other
/// candidate takes over on its next try, not a lease duration later.
#[tokio::test(start_paused = true)]
async fn release_on_cancel_hands_over_at_once() {
    let lease = MemoryLease::new();
    let log = Log::default();
    let t0 = Instant::now();
    let a = LeaderElector::new(LeaderElectionConfig::new(lease.lock("a")).release_on_cancel(true))
        .unwrap();
    let b = elector(lease.lock("b"));
    let cancel_a = CancellationToken::new();
    let run_a = tokio::spawn({
        let (a, cb, c) = (a.clone(), logging("a", &log, t0), cancel_a.clone());
        async move { a.run(c, cb).await }
    });
    settle().await;
    let cancel_b = CancellationToken::new();
    let run_b = tokio::spawn({
        let (b, cb, c) = (b.clone(), logging("b", &log, t0), cancel_b.clone());
        async move { b.run(c, cb).await }
    });
    tokio::time::sleep(3 * S).await;
    cancel_a.cancel();
    assert_eq!(
        run_a.await.unwrap(),
        Ok(ElectionEnd::Cancelled { led: true })
    );
    let released = lease.record().unwrap();
    assert_eq!(released.holder_identity, "");
    assert_eq!(released.lease_duration_seconds, 1);
    assert_eq!(released.leader_transitions, 0);
    assert_eq!(a.get_leader(), None);
    tokio::time::sleep(10 * S).await;
    let started = entries(&log, "started b");
    assert_eq!(started.len(), 1);
    // b's next try is at most 4.4 s away.
    assert!(
        started[0] <= 3 * S + Duration::from_millis(4_400),
        "{started:?}"
    );
    assert_eq!(lease.record().unwrap().leader_transitions, 1);
    assert_eq!(entries(&log, "leader b"), started, "{:?}", log.lock());
    cancel_b.cancel();
    run_b.await.unwrap().unwrap();
}

/// A release never clears a lease another candidate holds.
#[tokio::test(start_paused = true)]
async fn release_leaves_another_holders_lease_alone() {
    let lease = MemoryLease::new();
    let b = elector(lease.lock("b"));
    let cancel = CancellationToken::new();
    let run_b = tokio::spawn({
        let (b, c) = (b.clone(), cancel.clone());
        async move { b.run(c, LeaderCallbacks::new()).await }
    });
    settle().await;
    let a = elector(lease.lock("a"));
    assert!(!a.release().await.unwrap());
    assert_eq!(lease.record().unwrap().holder_identity, "b");
    cancel.cancel();
    run_b.await.unwrap().unwrap();
}

/// Two candidates starting together: exactly one wins (the loser's write is a conflict),
/// and the leading windows never overlap through a series of kills.
#[tokio::test(start_paused = true)]
async fn candidates_racing_never_lead_together() {
    let lease = MemoryLease::new();
    let leading = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let mut runs = Vec::new();
    for id in ["a", "b", "c"] {
        let e = elector(lease.lock(id));
        let (leading, max) = (leading.clone(), max.clone());
        let cb = LeaderCallbacks::new().on_started_leading(move |token: CancellationToken| {
            let now = leading.fetch_add(1, Ordering::SeqCst) + 1;
            max.fetch_max(now, Ordering::SeqCst);
            let leading = leading.clone();
            async move {
                token.cancelled().await;
                leading.fetch_sub(1, Ordering::SeqCst);
            }
        });
        runs.push((
            e.clone(),
            tokio::spawn(async move { e.run(CancellationToken::new(), cb).await }),
        ));
    }
    for _ in 0..2 {
        tokio::time::sleep(20 * S).await;
        let (i, _) = runs
            .iter()
            .enumerate()
            .find(|(_, (e, _))| e.is_leader())
            .expect("a leader");
        let (_, handle) = runs.remove(i);
        handle.abort();
        // The killed leader's work never ran its exit: count it out by hand.
        leading.fetch_sub(1, Ordering::SeqCst);
    }
    tokio::time::sleep(30 * S).await;
    assert!(runs[0].0.is_leader());
    assert_eq!(max.load(Ordering::SeqCst), 1);
    assert_eq!(lease.record().unwrap().leader_transitions, 2);
}

#[test]
fn lease_spec_round_trips_the_record() {
    let now = lock::micro_time(std::time::SystemTime::now());
    let r = LeaderElectionRecord {
        holder_identity: "a".into(),
        lease_duration_seconds: 15,
        acquire_time: now.clone(),
        renew_time: now,
        leader_transitions: 3,
    };
    let spec = r.to_spec();
    assert_eq!(spec.lease_transitions, Some(3));
    assert_eq!(spec.holder_identity.as_deref(), Some("a"));
    assert_eq!(LeaderElectionRecord::from_spec(&spec), r);
    assert_eq!(
        LeaderElectionRecord::from_spec(&Default::default()),
        LeaderElectionRecord::default()
    );
}

/// A leader whose `run` future is dropped (its task aborted) renews nothing any more: its
/// leading work is aborted at once, not left running without a lease.
#[tokio::test(start_paused = true)]
async fn dropping_run_while_leading_aborts_the_work() {
    let lease = MemoryLease::new();
    let a = elector(lease.lock("a"));
    let alive = Arc::new(AtomicBool::new(false));
    struct Alive(Arc<AtomicBool>);
    impl Drop for Alive {
        fn drop(&mut self) {
            self.0.store(false, Ordering::SeqCst);
        }
    }
    let cb = LeaderCallbacks::new().on_started_leading({
        let alive = alive.clone();
        move |_token: CancellationToken| {
            alive.store(true, Ordering::SeqCst);
            let guard = Alive(alive.clone());
            async move {
                // Ignores its token: only an abort stops it.
                futures::future::pending::<()>().await;
                drop(guard);
            }
        }
    });
    let run = tokio::spawn({
        let a = a.clone();
        async move { a.run(CancellationToken::new(), cb).await }
    });
    tokio::time::sleep(3 * S).await;
    assert!(alive.load(Ordering::SeqCst) && a.is_leader());
    run.abort();
    settle().await;
    assert!(!alive.load(Ordering::SeqCst));
    assert!(!a.is_leader());
}
