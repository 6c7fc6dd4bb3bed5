//! Issue 35, item 2, over HTTP against the embedded API server: a factory whose informers
//! cover a [`NamespaceSet`] that changes while they run.
//!
//! - a namespace added at run time gives exactly one add per object in it, a namespace
//!   removed exactly one delete per object it had, and objects of the other namespaces give
//!   no add, update or delete;
//! - the cache afterwards equals the server's objects in the set;
//! - live events of every namespace arrive, and watches the server closes are reopened without
//!   losing any (each handler's own view ends equal to the server's);
//! - cluster-scoped types ignore the set.

use crate::queue_mode;

use crate::embedded_support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use embedded_support::*;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kinformer::{
    NamespaceSet, ObjectOrTombstone, ResourceEventHandlerFuncs, SharedIndexInformer,
    SharedInformerFactory, meta_namespace_key, object::resource_version,
};
use kinformer_apiserver::RunningServer;
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(60);

fn configmap(ns: &str, name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("v".to_owned(), value.to_owned())])),
        ..Default::default()
    }
}

/// What a handler was told: `("add" | "update" | "delete", key)`, in order, and its own view
/// (key → resourceVersion) built from those events alone.
#[derive(Default)]
struct Told {
    events: Vec<(&'static str, String)>,
    view: BTreeMap<String, String>,
}

fn recording() -> (ResourceEventHandlerFuncs<ConfigMap>, Arc<Mutex<Told>>) {
    let told: Arc<Mutex<Told>> = Arc::default();
    let (a, u, d) = (told.clone(), told.clone(), told.clone());
    let funcs = ResourceEventHandlerFuncs::new()
        .on_add(move |obj: &Arc<ConfigMap>, _| {
            let key = meta_namespace_key(obj.as_ref()).unwrap();
            let mut t = a.lock();
            t.view
                .insert(key.clone(), resource_version(obj.as_ref()).into());
            t.events.push(("add", key));
        })
        .on_update(move |_: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
            let key = meta_namespace_key(new.as_ref()).unwrap();
            let mut t = u.lock();
            t.view
                .insert(key.clone(), resource_version(new.as_ref()).into());
            t.events.push(("update", key));
        })
        .on_delete(move |obj: &ObjectOrTombstone<ConfigMap>| {
            let key = match obj {
                ObjectOrTombstone::Object(o) => meta_namespace_key(o.as_ref()).unwrap(),
                ObjectOrTombstone::Tombstone(t) => t.key.clone(),
            };
            let mut t = d.lock();
            t.view.remove(&key);
            t.events.push(("delete", key));
        });
    (funcs, told)
}

/// The server's config maps in `namespaces`: key → resourceVersion.
fn server_in(server: &RunningServer, namespaces: &[&str]) -> BTreeMap<String, String> {
    server_view(server, "configmaps")
        .into_iter()
        .filter(|(k, _)| namespaces.iter().any(|ns| k.starts_with(&format!("{ns}/"))))
        .collect()
}

/// Polls until the informer's cache equals the server's objects in `namespaces`.
async fn converged(
    server: &RunningServer,
    informer: &SharedIndexInformer<ConfigMap>,
    namespaces: &[&str],
) {
    let start = std::time::Instant::now();
    loop {
        let want = server_in(server, namespaces);
        let have = cache_view(&informer.indexer());
        if want == have {
            return;
        }
        assert!(start.elapsed() < LIMIT, "{}", diff(&want, &have));
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn keys_in(server: &RunningServer, ns: &str) -> BTreeSet<String> {
    server_in(server, &[ns]).into_keys().collect()
}

/// Takes what was told since the last call, by kind: adds, updates, deletes.
fn take(told: &Mutex<Told>) -> [Vec<String>; 3] {
    let mut out: [Vec<String>; 3] = Default::default();
    for (kind, key) in told.lock().events.drain(..) {
        let i = match kind {
            "add" => 0,
            "update" => 1,
            _ => 2,
        };
        out[i].push(key);
    }
    out
}

/// Waits until the cache and the handler both show the server's objects in `namespaces`,
/// after a marker object created in `marker_ns` (handlers are told in order, so everything
/// told before the marker has been told), then takes what was told, markers left out.
async fn settle(
    server: &RunningServer,
    informer: &SharedIndexInformer<ConfigMap>,
    told: &Mutex<Told>,
    namespaces: &[&str],
    marker_ns: &str,
) -> [Vec<String>; 3] {
    static MARKERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = MARKERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    server
        .create(&configmap(marker_ns, &format!("marker-{n}"), "m"))
        .unwrap();
    converged(server, informer, namespaces).await;
    let start = std::time::Instant::now();
    loop {
        let want = server_in(server, namespaces);
        if told.lock().view == want {
            break;
        }
        assert!(
            start.elapsed() < LIMIT,
            "{}",
            diff(&want, &told.lock().view)
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let mut out = take(told);
    out[0].retain(|k| !k.contains("/marker-"));
    out
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_added_and_removed_at_run_time_give_exactly_their_adds_and_deletes() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    for (ns, n) in [("a", 3), ("b", 4), ("c", 5), ("outside", 2)] {
        for i in 0..n {
            server
                .create(&configmap(ns, &format!("cm-{i}"), "0"))
                .unwrap();
        }
    }
    for ns in ["a", "b", "c", "outside"] {
        server
            .create(&Namespace {
                metadata: ObjectMeta {
                    name: Some(ns.into()),
                    ..Default::default()
                },
                ..Default::default()
            })
            .unwrap();
    }
    let set = NamespaceSet::new(["a"]).unwrap();
    let factory = SharedInformerFactory::builder(server.client())
        .defaults(queue_mode::config().namespaces(set.clone()))
        .build();
    let configmaps = factory.informer::<ConfigMap>();
    let namespaces = factory.informer::<Namespace>();
    let (funcs, told) = recording();
    configmaps.add_event_handler(funcs).unwrap();
    // a change before the informer starts: it lists the set as it is when it starts
    assert!(set.insert("b").unwrap());
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert!(synced.values().all(|s| *s), "{synced:?}");
    let mut want: Vec<String> = keys_in(&server, "a").into_iter().collect();
    want.extend(keys_in(&server, "b"));
    let [adds, updates, deletes] = settle(&server, &configmaps, &told, &["a", "b"], "b").await;
    assert_eq!(sorted(adds), want);
    assert!(updates.is_empty() && deletes.is_empty());

    // cluster-scoped types ignore the set: every namespace object, whatever its name
    assert_eq!(
        namespaces.indexer().len(),
        server.state("namespaces", None).unwrap().objects.len()
    );
    assert!(
        !namespaces.name().contains("namespaces="),
        "{}",
        namespaces.name()
    );
    assert!(
        configmaps.name().contains("namespaces="),
        "{}",
        configmaps.name()
    );

    // a namespace added: exactly one add per object in it, nothing for the others
    let in_c: Vec<String> = keys_in(&server, "c").into_iter().collect();
    assert!(set.insert("c").unwrap());
    let [adds, updates, deletes] = settle(&server, &configmaps, &told, &["a", "b", "c"], "c").await;
    assert_eq!(sorted(adds), in_c);
    assert_eq!(
        updates,
        Vec::<String>::new(),
        "unchanged objects are not told"
    );
    assert_eq!(deletes, Vec::<String>::new());

    // a namespace removed: exactly one delete per object it had
    let had = keys_in(&server, "a");
    assert!(set.remove("a"));
    let [adds, updates, deletes] = settle(&server, &configmaps, &told, &["b", "c"], "c").await;
    assert_eq!(sorted(deletes), had.into_iter().collect::<Vec<_>>());
    assert!(
        adds.is_empty() && updates.is_empty(),
        "{adds:?} {updates:?}"
    );

    // live events in every namespace of the set arrive; outside it, none
    server.create(&configmap("b", "new", "1")).unwrap();
    server.create(&configmap("c", "new", "1")).unwrap();
    let mut cm = server.get::<ConfigMap>(Some("b"), "cm-0").unwrap();
    cm.data = Some(BTreeMap::from([("v".to_owned(), "2".to_owned())]));
    server.update(&cm).unwrap();
    server.delete::<ConfigMap>(Some("c"), "cm-1").unwrap();
    server.create(&configmap("outside", "new", "1")).unwrap();
    server.create(&configmap("a", "new", "1")).unwrap();
    let [adds, updates, deletes] = settle(&server, &configmaps, &told, &["b", "c"], "b").await;
    assert_eq!(sorted(adds), ["b/new", "c/new"]);
    assert_eq!(updates, ["b/cm-0"]);
    assert_eq!(deletes, ["c/cm-1"]);
    assert_eq!(told.lock().view, server_in(&server, &["b", "c"]));

    // the namespace set's watches are one per namespace: every list of the set after the
    // first namespace's is at exactly its resourceVersion
    let lists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/configmaps") && !r.query.contains("watch=true"))
        .collect();
    assert!(
        lists
            .iter()
            .all(|r| !r.path.ends_with("/api/v1/configmaps")),
        "never all namespaces"
    );
    assert!(
        lists
            .iter()
            .any(|r| r.query.contains("resourceVersionMatch=Exact"))
    );
    factory.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_closed_by_the_server_are_reopened_without_losing_events() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    let set = NamespaceSet::new(["x", "y", "z"]).unwrap();
    let factory = SharedInformerFactory::builder(server.client())
        .defaults(queue_mode::config())
        .for_type::<ConfigMap>({
            let set = set.clone();
            move |c| c.namespaces(set.clone())
        })
        .build();
    let configmaps = factory.informer::<ConfigMap>();
    let (funcs, told) = recording();
    configmaps.add_event_handler(funcs).unwrap();
    factory.start();
    factory.wait_for_cache_sync(&CancellationToken::new()).await;
    let faults = server.faults();
    let mut rng = Rng::new(35);
    for round in 0..30 {
        for _ in 0..5 {
            let ns = ["x", "y", "z", "w"][rng.below(4)];
            let name = format!("cm-{}", rng.below(8));
            match server.get::<ConfigMap>(Some(ns), &name) {
                Ok(_) if rng.chance(0.3) => {
                    server.delete::<ConfigMap>(Some(ns), &name).unwrap();
                }
                Ok(mut cm) => {
                    cm.data = Some(BTreeMap::from([("v".to_owned(), round.to_string())]));
                    server.update(&cm).unwrap();
                }
                Err(_) => {
                    server.create(&configmap(ns, &name, "0")).unwrap();
                }
            }
        }
        if round % 5 == 2 {
            faults.drop_watches();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    converged(&server, &configmaps, &["x", "y", "z"]).await;
    let start = std::time::Instant::now();
    while told.lock().view != server_in(&server, &["x", "y", "z"]) {
        assert!(
            start.elapsed() < LIMIT,
            "the handler's view never matched the server"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // closed watches were reopened, not relisted: one list per namespace, the initial one
    let lists = server
        .requests()
        .into_iter()
        .filter(|r| {
            r.path.contains("/configmaps") && !r.query.contains("watch=true") && r.method == "GET"
        })
        .count();
    assert_eq!(lists, 3, "one list per namespace, no relist");
    factory.shutdown().await;
    server.shutdown().await;
}

use crate::namespace_set_example as example;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_namespace_set_example_stamps_exactly_the_set_as_it_changes() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    let report = example::run(&server).await.unwrap();
    // 6 at start (team-a, team-b), 3 of team-c, 1 late in team-b; 3 deletes for team-a
    assert_eq!((report.adds, report.deletes), (10, 3));
    assert_eq!(
        report.stamps["team-a"],
        (4, 3),
        "the late one came after team-a left"
    );
    assert_eq!(report.stamps["team-b"], (4, 4));
    assert_eq!(report.stamps["team-c"], (3, 3));
    assert_eq!(report.stamps["team-d"], (3, 0), "never in the set");
    assert!(
        report.namespaces_cached >= 4,
        "cluster-scoped: every namespace"
    );
    server.shutdown().await;
}

/// A snapshot of an informer over a set: the restart lists the set (diffed against the
/// snapshot) instead of resuming from one resourceVersion, so what changed while it was down
/// reaches the handler as exactly those changes; an informer over all namespaces never loads
/// it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_of_a_set_is_listed_and_diffed_on_restart_never_resumed() {
    use kinformer::snapshot::{SnapshotOptions, SnapshotStatus, cluster_id};
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    for ns in ["a", "b", "c"] {
        for i in 0..2 {
            server
                .create(&configmap(ns, &format!("cm-{i}"), "0"))
                .unwrap();
        }
    }
    let dir = std::env::temp_dir().join(format!("kinformer-ns-set-snap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let snapshot = SnapshotOptions::new(&dir, cluster_id(&server.client()).await.unwrap());
    let run = |set: Option<NamespaceSet>| {
        let mut config = queue_mode::config().snapshot(snapshot.clone());
        if let Some(set) = set {
            config = config.namespaces(set);
        }
        let factory = SharedInformerFactory::builder(server.client())
            .defaults(config)
            .build();
        let informer = factory.informer::<ConfigMap>();
        let (funcs, told) = recording();
        informer.add_event_handler(funcs).unwrap();
        (factory, informer, told)
    };

    let (factory, informer, _) = run(Some(NamespaceSet::new(["a", "b"]).unwrap()));
    factory.start();
    factory.wait_for_cache_sync(&CancellationToken::new()).await;
    converged(&server, &informer, &["a", "b"]).await;
    factory.shutdown().await; // writes the snapshot

    // while down: a change in the set, and one outside it
    server.delete::<ConfigMap>(Some("a"), "cm-0").unwrap();
    server.create(&configmap("b", "new", "1")).unwrap();
    server.create(&configmap("c", "new", "1")).unwrap();

    let (factory, informer, told) = run(Some(NamespaceSet::new(["a", "b"]).unwrap()));
    factory.start();
    factory.wait_for_cache_sync(&CancellationToken::new()).await;
    converged(&server, &informer, &["a", "b"]).await;
    let status = informer.snapshot_status();
    assert!(
        matches!(status, SnapshotStatus::Relisted { .. }),
        "listed and diffed, not resumed: {status:?}"
    );
    let start = std::time::Instant::now();
    while told.lock().view != server_in(&server, &["a", "b"]) {
        assert!(start.elapsed() < LIMIT, "the handler never caught up");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let [adds, updates, deletes] = take(&told);
    // the snapshot's four, then the diff: the one created, the one deleted
    assert_eq!(
        sorted(adds),
        ["a/cm-0", "a/cm-1", "b/cm-0", "b/cm-1", "b/new"]
    );
    assert_eq!(deletes, ["a/cm-0"]);
    assert!(updates.is_empty(), "{updates:?}");
    factory.shutdown().await;

    // an informer over every namespace does not load the set's snapshot
    let (factory, informer, _) = run(None);
    factory.start();
    factory.wait_for_cache_sync(&CancellationToken::new()).await;
    converged(&server, &informer, &["a", "b", "c"]).await;
    assert_eq!(informer.snapshot_status(), SnapshotStatus::None);
    factory.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    server.shutdown().await;
}
