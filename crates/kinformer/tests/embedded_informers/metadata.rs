//! Issue 17, parts 2 and 3, end to end over HTTP against the embedded API server:
//!
//! - a metadata-only informer (`factory.metadata_informer::<Pod>()`) over 10,000 pods receives
//!   only `PartialObjectMetadata` (listed and watched), and its cache and handlers behave as a
//!   full informer's do through adds, updates, deletes and a forced relist (410 after a
//!   compaction, with deletions made while the watch was paused);
//! - the dynamic variant (`dynamic_metadata_informer`) does the same for a custom resource;
//! - `strip_managed_fields` drops managedFields from every cached object, after the factory's
//!   own transform ran.

use crate::queue_mode;

use crate::embedded_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use embedded_support::*;
use k8s_openapi::api::core::v1::Pod;
use kinformer::{
    ObjectOrTombstone, ResourceEventHandlerFuncs, SharedInformerFactory, Transform,
    meta_namespace_key, object::resource_version,
};
use kinformer_apiserver::{RunningServer, ServerConfig};
use kube::Resource;
use kube::core::PartialObjectMeta;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(120);

/// Cancels after `limit`, so waits on the factory are bounded.
fn deadline(limit: Duration) -> CancellationToken {
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(limit).await;
        c.cancel();
    });
    cancel
}

/// What a handler saw: key → resourceVersion from its own events, and counts per event kind.
#[derive(Default)]
struct Seen {
    view: BTreeMap<String, String>,
    adds: usize,
    updates: usize,
    deletes: usize,
    /// Objects handed to handlers that were not `PartialObjectMetadata`s.
    not_metadata: usize,
}

/// A handler recording into `Seen`; `is_metadata` checks each object it receives.
fn recording<K: kube::Resource + Send + Sync + 'static>(
    is_metadata: fn(&K) -> bool,
) -> (ResourceEventHandlerFuncs<K>, Arc<Mutex<Seen>>) {
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let (a, u, d) = (seen.clone(), seen.clone(), seen.clone());
    let h = ResourceEventHandlerFuncs::new()
        .on_add(move |o: &Arc<K>, _| {
            let mut s = a.lock();
            s.adds += 1;
            s.not_metadata += usize::from(!is_metadata(o));
            s.view.insert(
                meta_namespace_key(o.as_ref()).expect("key"),
                resource_version(o.as_ref()).to_owned(),
            );
        })
        .on_update(move |_: &Arc<K>, o: &Arc<K>| {
            let mut s = u.lock();
            s.updates += 1;
            s.not_metadata += usize::from(!is_metadata(o));
            s.view.insert(
                meta_namespace_key(o.as_ref()).expect("key"),
                resource_version(o.as_ref()).to_owned(),
            );
        })
        .on_delete(move |o: &ObjectOrTombstone<K>| {
            let mut s = d.lock();
            s.deletes += 1;
            let key = match o {
                ObjectOrTombstone::Object(o) => meta_namespace_key(o.as_ref()).expect("key"),
                ObjectOrTombstone::Tombstone(t) => t.key.clone(),
            };
            s.view.remove(&key);
        });
    (h, seen)
}

/// Whether a metadata object came from the server as a `meta.k8s.io/v1`
/// `PartialObjectMetadata` (what the metadata Accept headers ask for).
fn is_partial<K>(o: &PartialObjectMeta<K>) -> bool {
    o.types
        .as_ref()
        .is_some_and(|t| t.kind == "PartialObjectMetadata" && t.api_version == "meta.k8s.io/v1")
}

/// Updates a pod's labels `n` times over `keys` and deletes `del` of them, directly in the
/// server; returns the deleted keys.
fn churn(server: &RunningServer, keys: &[String], updates: usize, deletes: usize) -> Vec<String> {
    for (i, key) in keys.iter().take(updates).enumerate() {
        let (ns, name) = key.split_once('/').expect("namespaced key");
        let mut pod: Pod = server.get(Some(ns), name).expect("get pod");
        pod.metadata
            .labels
            .get_or_insert_default()
            .insert("round".into(), format!("r{i}"));
        server.update(&pod).expect("update pod");
    }
    let gone: Vec<String> = keys.iter().rev().take(deletes).cloned().collect();
    for key in &gone {
        let (ns, name) = key.split_once('/').expect("namespaced key");
        server.delete::<Pod>(Some(ns), name).expect("delete pod");
    }
    gone
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_informer_gets_only_metadata_and_behaves_as_a_full_informer() {
    let server = kinformer_apiserver::start(ServerConfig::default())
        .await
        .expect("server starts");
    server.seed_pods(10_000, 8).expect("seed pods");
    let factory = SharedInformerFactory::builder(server.client())
        .defaults(queue_mode::config())
        .build();
    let meta = factory.metadata_informer::<Pod>();
    let full = factory.informer::<Pod>();
    assert!(
        factory
            .metadata_informer::<Pod>()
            .indexer()
            .has_index("namespace"),
        "the same shared informer, with the factory's namespace index"
    );
    assert_eq!(factory.len(), 2, "metadata and full informers are separate");
    let (h, meta_seen) = recording::<PartialObjectMeta<Pod>>(is_partial);
    meta.add_event_handler(h).expect("handler");
    let (h, full_seen) = recording::<Pod>(|_| true);
    full.add_event_handler(h).expect("handler");
    factory.start();
    let synced = factory.wait_for_cache_sync(&deadline(LIMIT)).await;
    assert_eq!(synced.len(), 2, "{synced:?}");
    assert!(synced.values().all(|s| *s), "{synced:?}");
    assert!(synced.contains_key("Pod (metadata)"), "{synced:?}");

    // The initial list: 10,000 metadata objects, equal to the full informer's metadata.
    let cache = meta.indexer();
    assert_eq!(cache.len(), 10_000);
    let listed = cache.list();
    assert!(listed.iter().all(|o| is_partial(o)), "listed as metadata");
    for o in listed.iter().step_by(97) {
        let key = meta_namespace_key(o.as_ref()).expect("key");
        let pod = full
            .indexer()
            .get_by_key(&key)
            .expect("full informer has it");
        assert_eq!(&o.metadata, pod.meta(), "{key}: same metadata");
        assert!(
            o.metadata.managed_fields.is_some(),
            "{key}: metadata is whole (managedFields included)"
        );
    }
    assert_eq!(
        cache
            .by_index("namespace", "ns-0")
            .expect("namespace index")
            .len(),
        full.indexer()
            .by_index("namespace", "ns-0")
            .expect("namespace index")
            .len()
    );

    // Watched updates, deletes and creates arrive as metadata.
    let keys: Vec<String> = cache_view(&cache).into_keys().collect();
    let gone = churn(&server, &keys, 300, 200);
    for i in 0..100 {
        let ns = format!("ns-{}", i % 8);
        server
            .create_value(
                "pods",
                Some(&ns),
                kinformer_apiserver::seed::pod(&ns, &format!("new-{i:03}"), 20_000 + i),
            )
            .expect("create pod");
    }
    wait_converged(&server, "pods", LIMIT, || cache_view(&cache))
        .await
        .expect("metadata cache converges");
    wait_converged(&server, "pods", LIMIT, || meta_seen.lock().view.clone())
        .await
        .expect("metadata handler converges");
    wait_converged(&server, "pods", LIMIT, || full_seen.lock().view.clone())
        .await
        .expect("full handler converges");
    assert!(
        cache.list().iter().all(|o| is_partial(o)),
        "watched as metadata"
    );
    for key in &gone {
        assert!(cache.get_by_key(key).is_none(), "{key} deleted");
    }
    {
        let (m, f) = (meta_seen.lock(), full_seen.lock());
        assert_eq!(m.not_metadata, 0, "handlers got only metadata");
        assert_eq!(
            (m.adds, m.updates, m.deletes),
            (10_100, 300, 200),
            "adds, updates, deletes"
        );
        assert_eq!(
            (m.adds, m.updates, m.deletes),
            (f.adds, f.updates, f.deletes),
            "the same events as the full informer"
        );
    }

    // A relist: watches paused while pods change and go, history compacted, watches cut: the
    // re-watch gets 410 and both informers relist; the deletions reach the handlers.
    server.clear_requests();
    server.faults().pause_watches();
    let keys: Vec<String> = cache_view(&cache).into_keys().collect();
    let gone = churn(&server, &keys, 50, 150);
    server.faults().compact_now();
    server.faults().drop_watches();
    server.faults().resume_watches();
    wait_converged(&server, "pods", LIMIT, || cache_view(&cache))
        .await
        .expect("metadata cache converges after the relist");
    wait_converged(&server, "pods", LIMIT, || meta_seen.lock().view.clone())
        .await
        .expect("metadata handler converges after the relist");
    wait_converged(&server, "pods", LIMIT, || full_seen.lock().view.clone())
        .await
        .expect("full handler converges after the relist");
    // a relist is a streaming list (the factory's default), or a list after a fallback
    let lists = server
        .requests()
        .iter()
        .filter(|r| {
            r.path.ends_with("/pods")
                && (r.verb.as_deref() == Some("list")
                    || (r.verb.as_deref() == Some("watch")
                        && r.query.contains("sendInitialEvents=true")))
        })
        .count();
    assert!(lists >= 2, "both informers relisted ({lists} lists)");
    for key in &gone {
        assert!(
            cache.get_by_key(key).is_none(),
            "{key} deleted by the relist"
        );
    }
    assert!(
        cache.list().iter().all(|o| is_partial(o)),
        "relisted as metadata"
    );
    {
        let m = meta_seen.lock();
        assert_eq!(
            m.deletes, 350,
            "deletions seen on the relist reached the handler"
        );
        assert_eq!(m.deletes, full_seen.lock().deletes);
        assert_eq!(m.not_metadata, 0);
    }
    factory.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strip_managed_fields_drops_them_after_the_factory_transform() {
    let server = kinformer_apiserver::start(ServerConfig::default())
        .await
        .expect("server starts");
    server.seed_pods(200, 2).expect("seed pods");
    let factory = SharedInformerFactory::builder(server.client())
        .defaults(
            queue_mode::config()
                .transform(Transform::metadata(|m| {
                    // the user's transform still sees managedFields
                    let managers = m.managed_fields.as_ref().map_or(0, Vec::len);
                    m.annotations
                        .get_or_insert_default()
                        .insert("test/managers".into(), managers.to_string());
                }))
                .strip_managed_fields(true),
        )
        .build();
    let pods = factory.informer::<Pod>();
    let meta = factory.metadata_informer::<Pod>();
    factory.start();
    let synced = factory.wait_for_cache_sync(&deadline(LIMIT)).await;
    assert!(synced.values().all(|s| *s), "{synced:?}");
    let raw: Pod = server.get(Some("ns-0"), "pod-000000").expect("get pod");
    let managers = raw.metadata.managed_fields.as_ref().map_or(0, Vec::len);
    assert!(managers > 0, "the server's pods carry managedFields");
    for o in pods.indexer().list() {
        assert!(o.metadata.managed_fields.is_none(), "stripped from pods");
        assert_eq!(
            o.metadata.annotations.as_ref().unwrap()["test/managers"],
            managers.to_string(),
            "the transform ran first"
        );
    }
    assert_eq!(meta.indexer().len(), 200);
    assert!(
        meta.indexer()
            .list()
            .iter()
            .all(|o| o.metadata.managed_fields.is_none()),
        "stripped from metadata-only objects too"
    );
    // Watched objects are stripped too.
    let mut pod = raw.clone();
    pod.metadata
        .labels
        .get_or_insert_default()
        .insert("touched".into(), "yes".into());
    let stored = server.update(&pod).expect("update");
    let rv = stored.metadata.resource_version.clone().unwrap_or_default();
    let cache = pods.indexer();
    let deadline_at = std::time::Instant::now() + LIMIT;
    loop {
        let cached = cache.get_by_key("ns-0/pod-000000").expect("cached");
        if resource_version(cached.as_ref()) == rv {
            assert!(
                cached.metadata.managed_fields.is_none(),
                "stripped on watch"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline_at,
            "update never arrived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    factory.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_metadata_informer_lists_and_watches_a_custom_resource() {
    use kinformer_apiserver::{ResourceInfo, Scope};
    use kube::api::{ApiResource, DynamicObject};
    let server = kinformer_apiserver::start(ServerConfig::default())
        .await
        .expect("server starts");
    server.register(ResourceInfo::new(
        "example.com",
        "v1",
        "Widget",
        "widgets",
        Scope::Namespaced,
    ));
    for i in 0..50 {
        server
            .create_value(
                "widgets.example.com",
                Some("default"),
                serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": format!("w-{i:02}"), "namespace": "default"},
                    "spec": {"size": i}}),
            )
            .expect("create widget");
    }
    let ar = ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let factory = SharedInformerFactory::builder(server.client())
        .defaults(queue_mode::config())
        .build();
    let meta = factory.dynamic_metadata_informer(&ar, true);
    let full = factory.dynamic_informer(&ar, true);
    assert_eq!(factory.len(), 2, "separate from the full dynamic informer");
    let (h, seen) = recording::<PartialObjectMeta<DynamicObject>>(is_partial);
    meta.add_event_handler(h).expect("handler");
    factory.start();
    let synced = factory.wait_for_cache_sync(&deadline(LIMIT)).await;
    assert!(synced.values().all(|s| *s), "{synced:?}");
    assert!(synced.contains_key("Widget (metadata)"), "{synced:?}");
    server
        .delete_value("widgets.example.com", Some("default"), "w-00")
        .expect("delete");
    wait_converged(&server, "widgets.example.com", LIMIT, || {
        cache_view(&meta.indexer())
    })
    .await
    .expect("converges");
    // the full informer is a separate watch: wait for it too before comparing
    wait_converged(&server, "widgets.example.com", LIMIT, || {
        cache_view(&full.indexer())
    })
    .await
    .expect("the full informer converges");
    assert_eq!(meta.indexer().len(), 49);
    assert_eq!(full.indexer().len(), 49);
    // the cache is updated before its handlers hear of the change: wait for the handler
    let handler_saw_the_delete = tokio::time::timeout(LIMIT, async {
        while seen.lock().deletes < 1 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(
        handler_saw_the_delete.is_ok(),
        "the handler never saw the delete"
    );
    {
        let s = seen.lock();
        assert_eq!((s.adds, s.deletes, s.not_metadata), (50, 1, 0));
    }
    factory.shutdown().await;
    server.shutdown().await;
}
