//! The controller runner with leader election, several replicas in one process on paused
//! Tokio time over an in-memory lease (client-go's `FakeControllerSource` feeding each
//! replica's own informer): every replica's reconcile windows are recorded, and no two
//! replicas' windows may overlap, through kills, cut-offs, failing renewals, skewed clock
//! rates and releases; the new leader takes over within the bound.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::leader_support::{CutOff, Skewed, Windows};
use crate::support::{FakeControllerSource, pod};
use k8s_openapi::api::core::v1::Pod;
use kinformer::controller::{Action, AfterLostLeadership, Controller, ControllerError};
use kinformer::informer::SharedIndexInformer;
use kinformer::leaderelection::{LeaderElectionConfig, LeaderElector, MemoryLease, ResourceLock};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const S: Duration = Duration::from_secs(1);
/// Each reconcile takes this long and asks to run again soon after: reconciles run all the
/// time, so any overlap would show.
const WORK: Duration = Duration::from_millis(700);

struct Replica {
    id: String,
    elector: LeaderElector,
    informer: SharedIndexInformer<Pod>,
    cancel: CancellationToken,
    run: JoinHandle<Result<(), ControllerError>>,
}

struct Setup {
    source: FakeControllerSource,
    lease: MemoryLease,
    windows: Windows,
    t0: Instant,
}

impl Setup {
    fn new(objects: usize) -> Self {
        let source = FakeControllerSource::new();
        for i in 0..objects {
            source.add(pod(&format!("p{i}")));
        }
        Self {
            source,
            lease: MemoryLease::new(),
            windows: Windows::default(),
            t0: Instant::now(),
        }
    }

    fn config(&self, lock: impl ResourceLock + 'static) -> LeaderElectionConfig {
        LeaderElectionConfig::new(lock)
    }

    /// Starts a replica: its own informer, its controller, its elector on `config`.
    fn replica(
        &self,
        id: &str,
        config: LeaderElectionConfig,
        after: AfterLostLeadership,
    ) -> Replica {
        let informer = SharedIndexInformer::builder(self.source.clone()).build();
        let cancel = CancellationToken::new();
        tokio::spawn({
            let (i, c) = (informer.clone(), cancel.clone());
            async move { i.run(c).await }
        });
        let elector = LeaderElector::new(config).unwrap();
        let controller = Controller::new(format!("c-{id}"), informer.clone())
            .workers(2)
            .leader_election(elector.clone())
            .after_lost_leadership(after);
        let (windows, rid) = (self.windows.clone(), id.to_owned());
        let run = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                controller
                    .run(cancel, move |key: String| {
                        let open = windows.open(&rid, &key);
                        async move {
                            tokio::time::sleep(WORK).await;
                            drop(open);
                            Ok::<_, String>(Action::requeue_after(Duration::from_millis(100)))
                        }
                    })
                    .await
            }
        });
        Replica {
            id: id.to_owned(),
            elector,
            informer,
            cancel,
            run,
        }
    }

    fn leader<'a>(&self, replicas: &'a [Replica]) -> Option<&'a Replica> {
        let mut leading = replicas.iter().filter(|r| r.elector.is_leader());
        let first = leading.next();
        assert!(leading.next().is_none(), "two replicas believe they lead");
        first
    }
}

/// The standbys' caches are warm before any failover: every replica lists and syncs.
async fn all_synced(replicas: &[Replica]) {
    for _ in 0..100 {
        if replicas.iter().all(|r| r.informer.has_synced()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the replicas never synced");
}

/// The leader killed (its task aborted, no release): a standby takes over within the lease
/// duration plus one jittered retry after the last renewal, and nobody reconciled at the same
/// time.
#[tokio::test(start_paused = true)]
async fn the_leader_killed_is_replaced_without_overlap() {
    let s = Setup::new(5);
    let mut replicas: Vec<Replica> = ["a", "b", "c"]
        .iter()
        .map(|id| s.replica(id, s.config(s.lease.lock(*id)), AfterLostLeadership::Return))
        .collect();
    all_synced(&replicas).await;
    for round in 0..2 {
        tokio::time::sleep(20 * S).await;
        let leader = s.leader(&replicas).expect("a leader").id.clone();
        assert!(
            s.windows.count(&leader) > 0,
            "round {round}: the leader reconciles"
        );
        let i = replicas.iter().position(|r| r.id == leader).unwrap();
        let killed = replicas.remove(i);
        // Killed: its controller's task aborted, nothing cancelled by hand (its informer
        // keeps running, which does not matter).
        killed.run.abort();
        let at = Instant::now();
        tokio::time::sleep(25 * S).await;
        let next = s.leader(&replicas).expect("a new leader").id.clone();
        let first = s
            .windows
            .first_start(&next, at)
            .expect("the new leader reconciles");
        // A standby observes the last renewal (made at most 2 s before the kill) on its next
        // try, at most 4.4 s later, and takes over on its first try after 15 s from then:
        // at most 15 + 2 × 4.4 s after the kill.
        assert!(
            first - at <= 15 * S + Duration::from_millis(8_800),
            "{:?}",
            first - at
        );
        assert!(first - at >= 15 * S - 2 * S, "{:?}", first - at);
    }
    s.windows.assert_no_overlap();
    assert_eq!(s.lease.record().unwrap().leader_transitions, 2);
    for r in replicas {
        r.cancel.cancel();
        r.run.await.unwrap().unwrap();
    }
    let _ = s.t0;
}

/// The leader cut off from the API (requests hang): it steps down at its renew deadline,
/// cancels its reconciles within the grace, returns LostLeadership; a standby takes over
/// after the lease duration; no overlap.
#[tokio::test(start_paused = true)]
async fn a_leader_cut_off_steps_down_before_another_takes_over() {
    let s = Setup::new(5);
    let (mut lock_a, cut) = CutOff::new(s.lease.lock("a"));
    lock_a.hang = true;
    let a = s.replica("a", s.config(lock_a), AfterLostLeadership::Return);
    tokio::time::sleep(S).await;
    let b = s.replica(
        "b",
        s.config(s.lease.lock("b")),
        AfterLostLeadership::Return,
    );
    let replicas = [a, b];
    all_synced(&replicas).await;
    tokio::time::sleep(10 * S).await;
    assert_eq!(s.leader(&replicas).unwrap().id, "a");
    cut.store(true, Ordering::SeqCst);
    let at = Instant::now();
    let [a, b] = replicas;
    let ended = a.run.await.unwrap();
    assert!(
        matches!(ended, Err(ControllerError::LostLeadership)),
        "{ended:?}"
    );
    let stepped_down = Instant::now();
    // Last good renewal ≤ 2 s before the cut; renew deadline 10 s; grace (15-10)/2 = 2.5 s.
    assert!(stepped_down - at <= 10 * S + Duration::from_millis(2_500));
    assert!(s.windows.last_end("a").unwrap() <= stepped_down);
    tokio::time::sleep(20 * S).await;
    assert!(b.elector.is_leader());
    let first = s.windows.first_start("b", at).unwrap();
    assert!(first > s.windows.last_end("a").unwrap());
    s.windows.assert_no_overlap();
    b.cancel.cancel();
    b.run.await.unwrap().unwrap();
    a.cancel.cancel();
}

/// Renewals failing now and then, each time for less than the renew deadline: the leader
/// keeps leading, nobody else reconciles.
#[tokio::test(start_paused = true)]
async fn transient_renewal_failures_keep_the_leader() {
    let s = Setup::new(3);
    let (lock_a, cut) = CutOff::new(s.lease.lock("a"));
    let a = s.replica("a", s.config(lock_a), AfterLostLeadership::Return);
    tokio::time::sleep(S).await;
    let b = s.replica(
        "b",
        s.config(s.lease.lock("b")),
        AfterLostLeadership::Return,
    );
    for _ in 0..6 {
        tokio::time::sleep(4 * S).await;
        cut.store(true, Ordering::SeqCst);
        tokio::time::sleep(6 * S).await;
        cut.store(false, Ordering::SeqCst);
    }
    tokio::time::sleep(4 * S).await;
    assert!(a.elector.is_leader());
    assert_eq!(s.windows.replicas(), vec!["a".to_owned()]);
    assert_eq!(s.lease.record().unwrap().leader_transitions, 0);
    for r in [a, b] {
        r.cancel.cancel();
        r.run.await.unwrap().unwrap();
    }
}

/// Clocks ticking at different rates within client-go's assumption (±5 %; the leader's the
/// slowest), wall clocks hours apart: the cut-off leader still stops before the fastest
/// standby takes over.
#[tokio::test(start_paused = true)]
async fn clock_rates_within_the_margin_keep_the_windows_apart() {
    let s = Setup::new(5);
    let clock = |rate: f64, hours: u64| Skewed {
        base: s.t0,
        rate,
        offset: Duration::from_secs(3600 * hours),
    };
    let (lock_a, cut) = CutOff::new(s.lease.lock("a"));
    let a = s.replica(
        "a",
        s.config(lock_a).clock(clock(0.95, 0)),
        AfterLostLeadership::StandBy,
    );
    tokio::time::sleep(S).await;
    let b = s.replica(
        "b",
        s.config(s.lease.lock("b")).clock(clock(1.05, 5)),
        AfterLostLeadership::StandBy,
    );
    let c = s.replica(
        "c",
        s.config(s.lease.lock("c")).clock(clock(1.0, 9)),
        AfterLostLeadership::StandBy,
    );
    tokio::time::sleep(12 * S).await;
    assert!(a.elector.is_leader());
    cut.store(true, Ordering::SeqCst);
    tokio::time::sleep(30 * S).await;
    // a stood by again after losing: back in the race, not leading.
    cut.store(false, Ordering::SeqCst);
    tokio::time::sleep(10 * S).await;
    assert!(!a.elector.is_leader());
    assert!(b.elector.is_leader() || c.elector.is_leader());
    assert_eq!(s.windows.replicas().len(), 2);
    s.windows.assert_no_overlap();
    for r in [a, b, c] {
        r.cancel.cancel();
        r.run.await.unwrap().unwrap();
    }
}

/// The check can fail: a leader whose clock runs at 40 % of the others' (far outside the
/// assumption) keeps reconciling after a standby took over.
#[tokio::test(start_paused = true)]
async fn clock_rates_outside_the_margin_do_overlap() {
    let s = Setup::new(5);
    let (lock_a, cut) = CutOff::new(s.lease.lock("a"));
    let slow = Skewed {
        base: s.t0,
        rate: 0.4,
        offset: Duration::ZERO,
    };
    let a = s.replica(
        "a",
        s.config(lock_a).clock(slow),
        AfterLostLeadership::Return,
    );
    tokio::time::sleep(S).await;
    let b = s.replica(
        "b",
        s.config(s.lease.lock("b")),
        AfterLostLeadership::Return,
    );
    tokio::time::sleep(12 * S).await;
    cut.store(true, Ordering::SeqCst);
    tokio::time::sleep(40 * S).await;
    assert!(!s.windows.overlaps().is_empty());
    for r in [a, b] {
        r.cancel.cancel();
        let _ = r.run.await;
    }
}

/// release_on_cancel: the cancelled leader stops its workers, then releases; a standby leads
/// on its next retry (≤ 4.4 s), not a lease duration later.
#[tokio::test(start_paused = true)]
async fn release_on_cancel_hands_over_fast_without_overlap() {
    let s = Setup::new(5);
    let a = s.replica(
        "a",
        s.config(s.lease.lock("a")).release_on_cancel(true),
        AfterLostLeadership::Return,
    );
    tokio::time::sleep(S).await;
    let b = s.replica(
        "b",
        s.config(s.lease.lock("b")),
        AfterLostLeadership::Return,
    );
    tokio::time::sleep(10 * S).await;
    assert!(a.elector.is_leader());
    let at = Instant::now();
    a.cancel.cancel();
    a.run.await.unwrap().unwrap();
    let record = s.lease.record().unwrap();
    assert_eq!(
        (
            record.holder_identity.as_str(),
            record.lease_duration_seconds
        ),
        ("", 1)
    );
    tokio::time::sleep(10 * S).await;
    let first = s.windows.first_start("b", at).expect("b took over");
    assert!(
        first - at <= Duration::from_millis(4_400) + WORK,
        "{:?}",
        first - at
    );
    s.windows.assert_no_overlap();
    b.cancel.cancel();
    b.run.await.unwrap().unwrap();
}

/// Without leader election nothing changed: a reconcile outliving the shutdown timeout is
/// cancelled and reported.
#[tokio::test(start_paused = true)]
async fn without_election_the_shutdown_timeout_still_applies() {
    let source = FakeControllerSource::new();
    source.add(pod("p"));
    let informer = SharedIndexInformer::builder(source.clone()).build();
    let cancel = CancellationToken::new();
    tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    let windows = Windows::default();
    let controller = Controller::new("c", informer).shutdown_timeout(S);
    let w = windows.clone();
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            controller
                .run(cancel, move |key: String| {
                    let open = w.open("x", &key);
                    async move {
                        tokio::time::sleep(3600 * S).await;
                        drop(open);
                        Ok::<_, String>(Action::await_change())
                    }
                })
                .await
        }
    });
    tokio::time::sleep(S).await;
    cancel.cancel();
    let at = Instant::now();
    let ended = run.await.unwrap();
    assert!(
        matches!(
            ended,
            Err(ControllerError::ShutdownTimeout { abandoned: 1 })
        ),
        "{ended:?}"
    );
    assert_eq!(Instant::now() - at, S);
    assert_eq!(windows.last_end("x"), Some(at + S));
    let _ = Arc::new(());
}

/// `AfterLostLeadership::StandBy`: a leader cut off steps down (its reconciles cancelled and
/// their keys queued again) but keeps its caches and queue and campaigns again; when the new
/// leader is killed it wins back and reconciles every key from its warm queue at once.
#[tokio::test(start_paused = true)]
async fn a_standby_after_losing_leads_again_from_its_warm_queue() {
    let s = Setup::new(4);
    let (lock_a, cut) = CutOff::new(s.lease.lock("a"));
    let a = s.replica("a", s.config(lock_a), AfterLostLeadership::StandBy);
    tokio::time::sleep(S).await;
    let b = s.replica(
        "b",
        s.config(s.lease.lock("b")),
        AfterLostLeadership::Return,
    );
    tokio::time::sleep(5 * S).await;
    assert!(a.elector.is_leader());
    cut.store(true, Ordering::SeqCst);
    tokio::time::sleep(25 * S).await;
    assert!(b.elector.is_leader());
    assert!(!a.run.is_finished(), "a stands by instead of returning");
    cut.store(false, Ordering::SeqCst);
    tokio::time::sleep(5 * S).await;
    b.run.abort();
    let killed = Instant::now();
    tokio::time::sleep(25 * S).await;
    assert!(a.elector.is_leader());
    let again: std::collections::BTreeSet<String> = s
        .windows
        .all()
        .into_iter()
        .filter(|w| w.replica == "a" && w.start >= killed)
        .map(|w| w.key)
        .collect();
    assert_eq!(again.len(), 4, "every key reconciled again by a: {again:?}");
    s.windows.assert_no_overlap();
    assert_eq!(s.lease.record().unwrap().leader_transitions, 2);
    a.cancel.cancel();
    a.run.await.unwrap().unwrap();
    b.cancel.cancel();
}
