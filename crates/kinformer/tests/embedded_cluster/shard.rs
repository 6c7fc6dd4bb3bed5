//! Sharded informers (KEP-5866 `shardSelector`) against the embedded API server over HTTP:
//! n = 1, 2 and 4 shards by uid and by namespace over 2,000 config maps with churn. The
//! shards' caches are disjoint, their union is the server's state, and each holds exactly
//! its shard, with the server's `ShardedListAndWatch` gate on (the server filters and echoes
//! `shardInfo`) and off (the server ignores the selector: the client filters, and watch events
//! for objects outside the shard are dropped). Informers alternate between streaming list and
//! list+watch, and between RealFifo and DeltaFifo. A controller on a sharded informer
//! reconciles only its shard's keys.

use crate::embedded_support;

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use embedded_support::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::controller::{Action, Controller};
use kinformer::informer::QueueMode;
use kinformer::reflector::{InitialListMode, ListOptions, ListerWatcherExt};
use kinformer::shard::{Shard, ShardKey};
use kinformer::{
    InformerConfig, KubeListerWatcher, ObjectOrTombstone, ResourceEventHandlerFuncs,
    SharedIndexInformer, meta_namespace_key,
};
use kinformer_apiserver::{RunningServer, ServerConfig};
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(60);

/// The server's config maps: (key, uid, namespace, resourceVersion), read once (a `state()`
/// is slow in a debug build).
fn server_objects(server: &RunningServer) -> Vec<(String, String, String, String)> {
    server
        .state("configmaps", None)
        .expect("state")
        .objects
        .into_iter()
        .map(|o| {
            (
                format!("{}/{}", o.namespace, o.name),
                o.uid,
                o.namespace,
                o.resource_version,
            )
        })
        .collect()
}

/// key → resourceVersion of `objects` in `shard`.
fn shard_view(
    objects: &[(String, String, String, String)],
    shard: &Shard,
) -> BTreeMap<String, String> {
    objects
        .iter()
        .filter(|(_, uid, ns, _)| {
            shard.contains_meta(&ObjectMeta {
                uid: Some(uid.clone()),
                namespace: Some(ns.clone()),
                ..Default::default()
            })
        })
        .map(|(k, _, _, rv)| (k.clone(), rv.clone()))
        .collect()
}

struct ShardInformer {
    shard: Shard,
    informer: SharedIndexInformer<ConfigMap>,
    /// Keys of every object a handler was given.
    seen: Arc<Mutex<BTreeSet<String>>>,
    /// Objects given to a handler that were outside the shard.
    strays: Arc<Mutex<Vec<String>>>,
}

fn shard_informer(server: &RunningServer, shard: Shard, i: usize) -> ShardInformer {
    let config = InformerConfig::default()
        .shard(shard.clone())
        .queue_mode(if i.is_multiple_of(2) {
            QueueMode::RealFifo
        } else {
            QueueMode::DeltaFifo
        })
        .initial_list(if (i / 2).is_multiple_of(2) {
            InitialListMode::StreamingList
        } else {
            InitialListMode::ListThenWatch
        });
    let informer = SharedIndexInformer::new(server.client(), config);
    let seen: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let strays: Arc<Mutex<Vec<String>>> = Arc::default();
    let check = {
        let (shard, seen, strays) = (shard.clone(), seen.clone(), strays.clone());
        move |cm: &ConfigMap| {
            let key = meta_namespace_key(cm).expect("key");
            if !shard.contains(cm) {
                strays.lock().push(key.clone());
            }
            seen.lock().insert(key);
        }
    };
    let (c1, c2, c3) = (check.clone(), check.clone(), check);
    informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new()
                .on_add(move |o: &Arc<ConfigMap>, _| c1(o))
                .on_update(move |_, o: &Arc<ConfigMap>| c2(o))
                .on_delete(move |o: &ObjectOrTombstone<ConfigMap>| {
                    if let ObjectOrTombstone::Object(o) = o {
                        c3(o)
                    }
                }),
        )
        .expect("handler");
    ShardInformer {
        shard,
        informer,
        seen,
        strays,
    }
}

/// Runs 14 informers (n = 1, 2, 4 by uid and by namespace) through seeding and churn on a
/// server with the gate `gate`, and checks the partition.
async fn partition(gate: bool) {
    let server = kinformer_apiserver::start(
        ServerConfig::default()
            .record_requests(true)
            .sharded_list_and_watch(gate),
    )
    .await
    .expect("server starts");
    let mut churn = ConfigMapChurn::seed(&server, 2_000, 8);
    let mut rng = Rng::new(if gate { 5866 } else { 1366 });
    let mut groups: Vec<(ShardKey, u32, Vec<ShardInformer>)> = Vec::new();
    let mut i = 0;
    for key in [ShardKey::Uid, ShardKey::Namespace] {
        for n in [1, 2, 4] {
            let informers = (0..n)
                .map(|s| {
                    i += 1;
                    shard_informer(&server, Shard::nth(key, s, n).unwrap(), i)
                })
                .collect();
            groups.push((key, n, informers));
        }
    }
    let cancel = CancellationToken::new();
    for (_, _, informers) in &groups {
        for s in informers {
            let (inf, c) = (s.informer.clone(), cancel.clone());
            tokio::spawn(async move { inf.run(c).await });
        }
    }
    for round in 0..4 {
        // relists on top of churn: 410 after compaction, a forgotten history, and a relist
        // after a pause in which objects were deleted (the Replace must delete them, and only
        // from the shard that held them)
        match round {
            1 => {
                churn.churn(&server, &mut rng, 150);
                Fault::ExpireAndDrop.inject(&server, "configmaps");
            }
            2 => {
                Fault::ForgetHistory.inject(&server, "configmaps");
                churn.churn(&server, &mut rng, 150);
            }
            3 => {
                Fault::PauseResume.inject(&server, "configmaps");
                churn.churn(&server, &mut rng, 150);
                Fault::ExpireAndDrop.inject(&server, "configmaps");
                Fault::PauseResume.finish(&server);
            }
            _ => {}
        }
        let objects = server_objects(&server);
        let all: BTreeMap<String, String> = objects
            .iter()
            .map(|(k, _, _, rv)| (k.clone(), rv.clone()))
            .collect();
        assert_eq!(all, churn.expected, "round {round}: the server's state");
        let wants: Vec<Vec<BTreeMap<String, String>>> = groups
            .iter()
            .map(|(_, _, informers)| {
                informers
                    .iter()
                    .map(|s| shard_view(&objects, &s.shard))
                    .collect()
            })
            .collect();
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let behind: Vec<String> = groups
                .iter()
                .zip(&wants)
                .flat_map(|((key, n, informers), wants)| {
                    informers.iter().zip(wants).filter_map(move |(s, want)| {
                        let have = cache_view(&s.informer.indexer());
                        (have != *want).then(|| {
                            format!("{key:?} {n} shards, {}: {}", s.shard, diff(want, &have))
                        })
                    })
                })
                .collect();
            if behind.is_empty() {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "round {round}: shards never converged: {behind:#?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for (key, n, informers) in &groups {
            // disjoint, and together exactly the server's state
            let mut union = BTreeMap::new();
            for s in informers {
                for (k, v) in cache_view(&s.informer.indexer()) {
                    assert!(
                        union.insert(k.clone(), v).is_none(),
                        "{k} is in two of {n} shards by {key:?}"
                    );
                }
            }
            assert_eq!(union, all, "{key:?} {n} shards: the union");
        }
    }
    for (key, n, informers) in &groups {
        let sizes: Vec<usize> = informers
            .iter()
            .map(|s| s.informer.indexer().len())
            .collect();
        if *key == ShardKey::Uid && *n > 1 {
            assert!(sizes.iter().all(|s| *s > 0), "{n} uid shards: {sizes:?}");
        }
        for s in informers {
            assert!(
                s.strays.lock().is_empty(),
                "{key:?} {n}: handlers saw objects outside {}: {:?}",
                s.shard,
                s.strays.lock()
            );
            assert!(!s.seen.lock().is_empty() || s.informer.indexer().is_empty());
        }
    }
    // every request carried the selector, gate or not
    let requests = server.requests();
    let configmap_requests: Vec<_> = requests
        .iter()
        .filter(|r| r.path.ends_with("/configmaps") && r.method == "GET")
        .collect();
    assert!(
        configmap_requests
            .iter()
            .any(|r| r.verb.as_deref() == Some("watch"))
    );
    for r in &configmap_requests {
        assert!(
            r.query.contains("shardSelector=shardRange"),
            "a request without the selector: {}?{}",
            r.path,
            r.query
        );
    }
    // what the server answers: shardInfo with the gate, none without
    let shard = Shard::nth(ShardKey::Uid, 1, 2).unwrap();
    let lw = KubeListerWatcher::<ConfigMap>::new(server.client(), &InformerConfig::default());
    let page = lw
        .list_page(&ListOptions {
            shard_selector: Some(shard.selector()),
            ..Default::default()
        })
        .await
        .expect("list");
    if gate {
        assert_eq!(page.shard_info.as_deref(), Some(shard.selector().as_str()));
        assert!(page.items.iter().all(|o| shard.contains(o.as_ref())));
    } else {
        assert_eq!(page.shard_info, None);
        assert_eq!(
            page.items.len(),
            churn.expected.len(),
            "the server ignored it"
        );
        assert!(
            page.items.iter().any(|o| !shard.contains(o.as_ref())),
            "the server sent objects outside the shard, which the informers dropped"
        );
    }
    cancel.cancel();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_partition_the_cache_with_the_gate_on() {
    partition(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_partition_the_cache_with_the_gate_off_by_filtering_on_the_client() {
    partition(false).await;
}

/// A factory's shard: the defaults' shard reaches every informer, a per-type one replaces
/// it (each factory keys its informers by scope, the shard included).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_factorys_default_and_per_type_shards_reach_its_informers() {
    let server = kinformer_apiserver::start(ServerConfig::default().sharded_list_and_watch(false))
        .await
        .expect("server starts");
    let _churn = ConfigMapChurn::seed(&server, 400, 4);
    let objects = server_objects(&server);
    let default_shard = Shard::nth(ShardKey::Uid, 0, 2).unwrap();
    let per_type_shard = Shard::nth(ShardKey::Namespace, 1, 2).unwrap();
    let factory = kinformer::SharedInformerFactory::builder(server.client())
        .defaults(InformerConfig::default().shard(default_shard.clone()))
        .build();
    let other = kinformer::SharedInformerFactory::builder(server.client())
        .defaults(InformerConfig::default().shard(default_shard.clone()))
        .for_type::<ConfigMap>({
            let s = per_type_shard.clone();
            move |c| c.shard(s.clone())
        })
        .build();
    let (a, b) = (
        factory.informer::<ConfigMap>(),
        other.informer::<ConfigMap>(),
    );
    assert_eq!(a.config().shard.as_ref(), Some(&default_shard));
    assert_eq!(b.config().shard.as_ref(), Some(&per_type_shard));
    factory.start();
    other.start();
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let done = cache_view(&a.indexer()) == shard_view(&objects, &default_shard)
            && cache_view(&b.indexer()) == shard_view(&objects, &per_type_shard);
        if done {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the factories' informers never converged"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    factory.shutdown().await;
    other.shutdown().await;
    server.shutdown().await;
}

/// Without the gate the server sends every watch event; the informer drops those outside its
/// shard: with one object in the shard and one outside, only the first ever reaches the cache
/// and the handlers, through create, update and delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_events_outside_the_shard_are_dropped() {
    let server = kinformer_apiserver::start(ServerConfig::default().sharded_list_and_watch(false))
        .await
        .expect("server starts");
    let shard = Shard::nth(ShardKey::Namespace, 0, 2).unwrap();
    // two namespaces, one on each side
    let in_ns = (0..)
        .map(|i| format!("in-{i}"))
        .find(|ns| kinformer::shard::fnv1a_64(ns.as_bytes()) < 1 << 63)
        .unwrap();
    let out_ns = (0..)
        .map(|i| format!("out-{i}"))
        .find(|ns| kinformer::shard::fnv1a_64(ns.as_bytes()) >= 1 << 63)
        .unwrap();
    let s = shard_informer(&server, shard, 0);
    let cancel = CancellationToken::new();
    tokio::spawn({
        let (inf, c) = (s.informer.clone(), cancel.clone());
        async move { inf.run(c).await }
    });
    let deadline = tokio::time::Instant::now() + LIMIT;
    while !s.informer.has_synced() {
        assert!(tokio::time::Instant::now() < deadline, "never synced");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for ns in [&out_ns, &in_ns] {
        server
            .create_value(
                "configmaps",
                Some(ns),
                kinformer_apiserver::seed::configmap(ns, "x", 1),
            )
            .expect("create");
        let mut cm: ConfigMap = server.get(Some(ns), "x").expect("get");
        cm.data
            .get_or_insert_default()
            .insert("k".into(), "v".into());
        server.update(&cm).expect("update");
        server.delete::<ConfigMap>(Some(ns), "x").expect("delete");
    }
    let in_key = format!("{in_ns}/x");
    // the in-shard object's delete (sent after the out-of-shard object's events) arrives
    loop {
        if s.seen.lock().contains(&in_key) && s.informer.indexer().is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the in-shard events never arrived"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*s.seen.lock(), BTreeSet::from([in_key]));
    assert!(s.strays.lock().is_empty());
    cancel.cancel();
    server.shutdown().await;
}

/// Three controllers, each on its own uid shard: every config map is reconciled, each by
/// exactly the controller whose shard holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_object_is_reconciled_by_exactly_one_sharded_controller() {
    for gate in [true, false] {
        let server =
            kinformer_apiserver::start(ServerConfig::default().sharded_list_and_watch(gate))
                .await
                .expect("server starts");
        let churn = ConfigMapChurn::seed(&server, 300, 3);
        let reconciled: Arc<Mutex<BTreeMap<String, BTreeSet<u32>>>> = Arc::default();
        let cancel = CancellationToken::new();
        let mut shards = Vec::new();
        for i in 0..3 {
            let shard = Shard::nth(ShardKey::Uid, i, 3).unwrap();
            shards.push(shard.clone());
            let informer = SharedIndexInformer::<ConfigMap>::new(
                server.client(),
                InformerConfig::default().shard(shard),
            );
            let controller = Controller::new(format!("shard-{i}"), informer.clone()).workers(2);
            tokio::spawn({
                let c = cancel.clone();
                async move { informer.run(c).await }
            });
            let (c, log) = (cancel.clone(), reconciled.clone());
            tokio::spawn(async move {
                controller
                    .run(c, move |key: String| {
                        log.lock().entry(key).or_default().insert(i);
                        async { Ok::<_, Infallible>(Action::await_change()) }
                    })
                    .await
            });
        }
        let deadline = tokio::time::Instant::now() + LIMIT;
        while reconciled.lock().len() < churn.expected.len() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "only {} of {} reconciled",
                reconciled.lock().len(),
                churn.expected.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let state = server.state("configmaps", None).expect("state");
        let log = reconciled.lock().clone();
        assert_eq!(log.len(), churn.expected.len());
        for o in state.objects {
            let key = format!("{}/{}", o.namespace, o.name);
            let meta = ObjectMeta {
                uid: Some(o.uid.clone()),
                ..Default::default()
            };
            let owner = shards.iter().position(|s| s.contains_meta(&meta)).unwrap() as u32;
            assert_eq!(log[&key], BTreeSet::from([owner]), "{key} (gate {gate})");
        }
        cancel.cancel();
        server.shutdown().await;
    }
}
