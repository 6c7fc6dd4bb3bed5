//! Leader election against the embedded API server (real Leases over HTTP, real time with
//! short leases: 3 s / 2 s / 0.5 s): several controller replicas in one process, each with
//! its own `kube::Client`, informers and queue; faults target one replica (its lease
//! traffic cut off by a wrapping lock) or the server (failed and conflicting lease updates).
//! Every replica's reconcile windows are recorded; no two replicas' windows may overlap,
//! and a new leader takes over within the bound.

use crate::leader_support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::SharedInformerFactory;
use kinformer::controller::{Action, AfterLostLeadership, Controller, ControllerError};
use kinformer::leaderelection::{LeaderElectionConfig, LeaderElector, LeaseLock, ResourceLock};
use kinformer_apiserver::{FailureRule, RunningServer, Verb};
use kube::api::ObjectMeta;
use leader_support::{CutOff, Skewed, Windows};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const MS: Duration = Duration::from_millis(1);
const LEASE: Duration = Duration::from_secs(3);
const RENEW: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(500);
/// The longest a standby takes to notice an unrenewed lease and take it: the lease duration
/// after its observation of the last renewal, which is at most one jittered retry (1.1 s)
/// after the renewal, plus one more retry; plus 1 s for HTTP and scheduling.
const TAKEOVER: Duration = Duration::from_millis(3_000 + 2 * 1_100 + 1_000);

struct Replica {
    id: String,
    elector: LeaderElector,
    factory: SharedInformerFactory,
    cancel: CancellationToken,
    run: JoinHandle<Result<(), ControllerError>>,
}

/// A client of its own, built from the server's kubeconfig as any process would.
async fn own_client(server: &RunningServer) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

fn lock(client: kube::Client, id: &str) -> LeaseLock {
    LeaseLock::new(client, "default", "demo-controller", id)
}

fn config(lock: impl ResourceLock + 'static) -> LeaderElectionConfig {
    LeaderElectionConfig::new(lock).durations(LEASE, RENEW, RETRY)
}

async fn start(
    server: &RunningServer,
    windows: &Windows,
    id: &str,
    make: impl FnOnce(kube::Client) -> LeaderElectionConfig,
) -> Replica {
    let client = own_client(server).await;
    let factory = SharedInformerFactory::new(client.clone());
    let informer = factory.informer::<ConfigMap>();
    let elector = LeaderElector::new(make(client)).unwrap();
    let controller = Controller::new(format!("c-{id}"), informer)
        .workers(2)
        .leader_election(elector.clone())
        .after_lost_leadership(AfterLostLeadership::Return);
    factory.start();
    let cancel = CancellationToken::new();
    let (windows, rid) = (windows.clone(), id.to_owned());
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            controller
                .run(cancel, move |key: String| {
                    let open = windows.open(&rid, &key);
                    async move {
                        tokio::time::sleep(150 * MS).await;
                        drop(open);
                        Ok::<_, String>(Action::requeue_after(50 * MS))
                    }
                })
                .await
        }
    });
    Replica {
        id: id.to_owned(),
        elector,
        factory,
        cancel,
        run,
    }
}

async fn server_with_objects() -> RunningServer {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    for i in 0..4 {
        server
            .create(&ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("cm-{i}")),
                    namespace: Some("default".into()),
                    ..Default::default()
                },
                ..Default::default()
            })
            .unwrap();
    }
    server
}

/// Polls (every 20 ms, for at most `limit`) until `done`; returns when it held.
async fn until(what: &str, limit: Duration, done: impl Fn() -> bool) -> Instant {
    let start = Instant::now();
    loop {
        if done() {
            return Instant::now();
        }
        assert!(
            start.elapsed() < limit,
            "gave up after {limit:?} waiting until {what}"
        );
        tokio::time::sleep(20 * MS).await;
    }
}

fn lease(server: &RunningServer) -> Lease {
    server
        .get::<Lease>(Some("default"), "demo-controller")
        .unwrap()
}

fn holder(server: &RunningServer) -> String {
    lease(server)
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default()
}

fn transitions(server: &RunningServer) -> i32 {
    lease(server)
        .spec
        .and_then(|s| s.lease_transitions)
        .unwrap_or_default()
}

async fn stop(replicas: Vec<Replica>) {
    for r in replicas {
        r.cancel.cancel();
        let _ = r.run.await;
        r.factory.shutdown().await;
    }
}

/// The leader's task is aborted (no release, as a killed process): another replica leads
/// within the bound, the lease's holder and leaseTransitions say so, no overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_killed_is_replaced_within_the_bound() {
    let server = server_with_objects().await;
    let windows = Windows::default();
    let mut replicas = Vec::new();
    for id in ["a", "b", "c"] {
        replicas.push(start(&server, &windows, id, |c| config(lock(c, id))).await);
    }
    until("someone leads and reconciles", 10 * LEASE, || {
        !windows.all().is_empty()
    })
    .await;
    let first = windows.replicas()[0].clone();
    assert_eq!(holder(&server), first);
    let i = replicas.iter().position(|r| r.id == first).unwrap();
    let killed = replicas.remove(i);
    killed.run.abort();
    let at = Instant::now();
    let took = until("another replica reconciles", 2 * TAKEOVER, || {
        windows.replicas().len() == 2
    })
    .await;
    assert!(took - at <= TAKEOVER, "took over after {:?}", took - at);
    let next = windows.replicas()[1].clone();
    assert_eq!(holder(&server), next);
    assert_eq!(transitions(&server), 1);
    let spec = lease(&server).spec.unwrap();
    assert_eq!(spec.lease_duration_seconds, Some(3));
    assert!(spec.acquire_time.is_some() && spec.renew_time >= spec.acquire_time);
    tokio::time::sleep(2 * LEASE).await;
    windows.assert_no_overlap();
    killed.cancel.cancel();
    killed.factory.shutdown().await;
    stop(replicas).await;
    server.shutdown().await;
}

/// The leader's lease requests hang (cut off from the API): it steps down at its renew
/// deadline and its `run` returns LostLeadership; the other leads after; no overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_from_the_api_steps_down_first() {
    let server = server_with_objects().await;
    let windows = Windows::default();
    let mut cut = None;
    let a = start(&server, &windows, "a", |c| {
        let (mut l, flag) = CutOff::new(lock(c, "a"));
        l.hang = true;
        cut = Some(flag);
        config(l)
    })
    .await;
    until("a leads", 10 * LEASE, || a.elector.is_leader()).await;
    let b = start(&server, &windows, "b", |c| config(lock(c, "b"))).await;
    tokio::time::sleep(LEASE).await;
    cut.unwrap().store(true, Ordering::SeqCst);
    let at = Instant::now();
    let ended = a.run.await.unwrap();
    assert!(
        matches!(ended, Err(ControllerError::LostLeadership)),
        "{ended:?}"
    );
    // The last good renewal began at most one retry before the cut.
    assert!(
        at.elapsed() <= RENEW + LEASE.saturating_sub(RENEW) / 2 + 300 * MS,
        "{:?}",
        at.elapsed()
    );
    let a_ended = windows.last_end("a").unwrap();
    until("b reconciles", 2 * TAKEOVER, || windows.count("b") > 0).await;
    assert!(windows.first_start("b", at).unwrap() > a_ended);
    assert_eq!(holder(&server), "b");
    windows.assert_no_overlap();
    a.factory.shutdown().await;
    stop(vec![b]).await;
    server.shutdown().await;
}

/// The server fails the leader's lease updates now and then (500s, then a 409): each burst
/// is shorter than the renew deadline, so the leader keeps the lease and nobody else
/// reconciles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_failing_transiently_keep_the_leader() {
    let server = server_with_objects().await;
    let windows = Windows::default();
    let a = start(&server, &windows, "a", |c| config(lock(c, "a"))).await;
    until("a leads", 10 * LEASE, || a.elector.is_leader()).await;
    let b = start(&server, &windows, "b", |c| config(lock(c, "b"))).await;
    let faults = server.faults();
    for code in [500, 503, 409, 500] {
        tokio::time::sleep(LEASE).await;
        faults.fail_next(
            FailureRule::new(code, 2)
                .verb(Verb::Update)
                .resource("leases.coordination.k8s.io"),
        );
    }
    tokio::time::sleep(LEASE).await;
    assert!(
        faults.pending_rules().is_empty(),
        "the renewals never hit the faults"
    );
    assert!(a.elector.is_leader());
    assert_eq!(windows.replicas(), vec!["a".to_owned()]);
    assert_eq!(transitions(&server), 0);
    stop(vec![a, b]).await;
    server.shutdown().await;
}

/// Clocks within client-go's assumption: rates 3 % apart, wall clocks hours apart (the
/// lease's timestamps disagree wildly; nobody compares them). The leader killed, the next
/// takes over, no overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skewed_clocks_within_the_assumption() {
    let server = server_with_objects().await;
    let windows = Windows::default();
    let base = Instant::now();
    let clock = |rate: f64, hours: u64| Skewed {
        base,
        rate,
        offset: Duration::from_secs(3600 * hours),
    };
    let a = start(&server, &windows, "a", |c| {
        config(lock(c, "a")).clock(clock(0.97, 7))
    })
    .await;
    until("a leads", 10 * LEASE, || a.elector.is_leader()).await;
    let b = start(&server, &windows, "b", |c| {
        config(lock(c, "b")).clock(clock(1.03, 0))
    })
    .await;
    tokio::time::sleep(LEASE).await;
    let renew_a = lease(&server).spec.unwrap().renew_time.unwrap();
    a.run.abort();
    let at = Instant::now();
    let took = until("b reconciles", 2 * TAKEOVER, || windows.count("b") > 0).await;
    assert!(took - at <= TAKEOVER);
    let renew_b = lease(&server).spec.unwrap().renew_time.unwrap();
    // b's wall clock is 7 h behind a's: its renewTime is earlier than a's last one.
    assert!(renew_b < renew_a);
    windows.assert_no_overlap();
    a.factory.shutdown().await;
    stop(vec![b]).await;
    server.shutdown().await;
}

/// release_on_cancel: the leader cancelled stops its workers, then clears the lease
/// (holder empty, leaseDurationSeconds 1); the other leads on its next try.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_on_cancel_hands_over_fast() {
    let server = server_with_objects().await;
    let windows = Windows::default();
    let a = start(&server, &windows, "a", |c| {
        config(lock(c, "a")).release_on_cancel(true)
    })
    .await;
    until("a leads", 10 * LEASE, || a.elector.is_leader()).await;
    let b = start(&server, &windows, "b", |c| config(lock(c, "b"))).await;
    tokio::time::sleep(LEASE).await;
    a.cancel.cancel();
    let at = Instant::now();
    a.run.await.unwrap().unwrap();
    let took = until("b reconciles", 2 * TAKEOVER, || windows.count("b") > 0).await;
    // One jittered retry (≤ 1.1 s) plus HTTP, far less than a lease duration.
    assert!(took - at < LEASE, "{:?}", took - at);
    assert_eq!(holder(&server), "b");
    assert_eq!(transitions(&server), 1);
    windows.assert_no_overlap();
    a.factory.shutdown().await;
    stop(vec![b]).await;
    server.shutdown().await;
}
