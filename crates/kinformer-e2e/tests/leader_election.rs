//! Leader election against a real kube-apiserver (real `coordination.k8s.io/v1` Leases):
//! three controller replicas in one process, each with its own client, informers and queue,
//! electing through one Lease with short durations (3 s / 2 s / 0.5 s). The leader is
//! killed (its task aborted, no release), another takes over within the bound; then the new
//! leader is cancelled with release on cancel and the last takes over at once. No two
//! replicas' reconcile windows overlap.
//!
//! Needs `KINFORMER_E2E_KUBECONFIG` (see `./scripts/test.sh`); skipped with one line otherwise.

#[path = "../../kinformer/tests/leader_support/mod.rs"]
mod leader_support;

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::SharedInformerFactory;
use kinformer::controller::{Action, Controller, ControllerError};
use kinformer::leaderelection::{LeaderElectionConfig, LeaderElector, LeaseLock};
use kinformer_e2e::{E2eEnv, WATCHCACHE_KUBECONFIG_VAR, create_namespace, delete_namespace};
use kube::Api;
use kube::api::PostParams;
use leader_support::Windows;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const MS: Duration = Duration::from_millis(1);
const LEASE: Duration = Duration::from_secs(3);
/// Lease duration after the standby's observation of the last renewal (at most one
/// jittered retry, 1.1 s, after it), plus one more retry, plus 1.5 s for a real server.
const TAKEOVER: Duration = Duration::from_millis(3_000 + 2 * 1_100 + 1_500);

struct Replica {
    id: String,
    elector: LeaderElector,
    factory: SharedInformerFactory,
    cancel: CancellationToken,
    run: JoinHandle<Result<(), ControllerError>>,
}

async fn replica(env: &E2eEnv, ns: &str, windows: &Windows, id: &str) -> Replica {
    let client = env.client().await.expect("client from the e2e kubeconfig");
    let factory = SharedInformerFactory::builder(client.clone())
        .defaults(kinformer::InformerConfig::default().namespace(ns))
        .build();
    let informer = factory.informer::<ConfigMap>();
    let lock = LeaseLock::new(client, ns, "e2e-controller", id);
    let elector = LeaderElector::new(
        LeaderElectionConfig::new(lock)
            .durations(LEASE, Duration::from_secs(2), 500 * MS)
            .release_on_cancel(true),
    )
    .unwrap();
    let controller = Controller::new(format!("e2e-{id}"), informer)
        .workers(2)
        .leader_election(elector.clone());
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_elect_one_leader_and_hand_over_without_overlap() {
    let test = "replicas_elect_one_leader_and_hand_over_without_overlap";
    let Some(env) = E2eEnv::from_env(WATCHCACHE_KUBECONFIG_VAR, test) else {
        return;
    };
    let client = env.client().await.expect("client from the e2e kubeconfig");
    let ns = create_namespace(&client, "e2e-leader")
        .await
        .expect("namespace");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    for i in 0..4 {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("cm-{i}"));
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    let windows = Windows::default();
    let mut replicas = Vec::new();
    for id in ["a", "b", "c"] {
        replicas.push(replica(&env, &ns, &windows, id).await);
    }
    until("someone reconciles", 10 * LEASE, || {
        !windows.all().is_empty()
    })
    .await;
    tokio::time::sleep(LEASE).await;
    let first = windows.replicas();
    assert_eq!(first.len(), 1, "one replica reconciles: {first:?}");
    let leader = first[0].clone();
    let spec = leases.get("e2e-controller").await.unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(leader.as_str()));
    assert_eq!(spec.lease_duration_seconds, Some(3));

    // Killed: no release.
    let i = replicas.iter().position(|r| r.id == leader).unwrap();
    let killed = replicas.remove(i);
    killed.run.abort();
    let at = Instant::now();
    let took = until("another replica reconciles", 2 * TAKEOVER, || {
        windows.replicas().len() == 2
    })
    .await;
    assert!(took - at <= TAKEOVER, "took over after {:?}", took - at);
    assert!(
        took - at >= LEASE - 600 * MS,
        "took over after {:?}",
        took - at
    );
    let second = windows.replicas()[1].clone();
    let spec = leases.get("e2e-controller").await.unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(second.as_str()));
    assert_eq!(spec.lease_transitions, Some(1));
    tokio::time::sleep(LEASE).await;

    // Cancelled with release on cancel: the last replica takes over on its next try.
    let i = replicas.iter().position(|r| r.id == second).unwrap();
    let stepped = replicas.remove(i);
    assert!(stepped.elector.is_leader());
    stepped.cancel.cancel();
    let at = Instant::now();
    stepped.run.await.unwrap().unwrap();
    let took = until("the last replica reconciles", 2 * TAKEOVER, || {
        windows.replicas().len() == 3
    })
    .await;
    assert!(took - at < LEASE, "took over after {:?}", took - at);
    let spec = leases.get("e2e-controller").await.unwrap().spec.unwrap();
    assert_eq!(
        spec.holder_identity.as_deref(),
        Some(replicas[0].id.as_str())
    );
    assert_eq!(spec.lease_transitions, Some(2));
    tokio::time::sleep(LEASE).await;

    windows.assert_no_overlap();
    for r in replicas {
        r.cancel.cancel();
        r.run.await.unwrap().unwrap();
        r.factory.shutdown().await;
    }
    killed.cancel.cancel();
    killed.factory.shutdown().await;
    stepped.factory.shutdown().await;
    delete_namespace(&client, &ns).await;
}
