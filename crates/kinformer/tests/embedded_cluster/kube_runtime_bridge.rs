//! kube-runtime controllers fed by kinformer shared informers (`kinformer::kube_runtime`):
//! the ported example converges against the embedded server; one informer serves two
//! controllers and a handler with one watch; the kube `Store` always holds what the streams
//! yield; late streams start from what the `Store` holds; deletions reach `touched_objects`
//! only.

use crate::kube_runtime_example as example;

use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::kube_runtime::Bridge;
use kinformer::reflector::{ListPage, ListWatch, WatchEvent};
use kinformer::{InformerConfig, SharedIndexInformer, SharedInformerFactory};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The ported controller converges on shared informers exactly as on kube-runtime's own
/// watchers (the program before the move), and a kinformer handler shares its informer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ported_configmapgen_controller_converges_either_way() {
    for wiring in [
        example::Wiring::KubeRuntime,
        example::Wiring::SharedInformers,
    ] {
        let server = kinformer_apiserver::start(Default::default())
            .await
            .unwrap();
        let report = example::run(&server, 30, wiring).await.unwrap();
        assert!(
            report.reconciles >= 30 + 2,
            "{wiring:?}: every generator, then the changed one and the one whose ConfigMap was deleted: {report:?}"
        );
        let shared = wiring == example::Wiring::SharedInformers;
        assert_eq!(
            report.handler_adds,
            if shared { 30 } else { 0 },
            "{wiring:?}: the kinformer handler shares the informer"
        );
        server.shutdown().await;
    }
}

fn configmap(name: &str, rv: u64) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            resource_version: Some(rv.to_string()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// One informer, two kube-runtime controllers and a handler: each controller reconciles every
/// object, and the server sees one watch for the type, not one per controller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_informer_serves_two_controllers_with_one_watch() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    for i in 0..10 {
        cms.create(&PostParams::default(), &configmap(&format!("cm-{i}"), 0))
            .await
            .unwrap();
    }
    let factory = SharedInformerFactory::new(server.client());
    let informer = factory.informer::<ConfigMap>();
    let bridge = Bridge::new(&informer).unwrap();
    factory.start();
    let stop = CancellationToken::new();
    let mut counts = Vec::new();
    let mut controllers = Vec::new();
    for _ in 0..2 {
        let seen = Arc::new(parking_lot::Mutex::new(std::collections::BTreeSet::new()));
        counts.push(seen.clone());
        let stop = stop.clone();
        let bridge = bridge.clone();
        controllers.push(tokio::spawn(async move {
            Controller::for_shared_stream(bridge.applied_objects(), bridge.store())
                .graceful_shutdown_on(async move { stop.cancelled().await })
                .run(
                    |cm: Arc<ConfigMap>, seen: Arc<parking_lot::Mutex<std::collections::BTreeSet<String>>>| async move {
                        seen.lock().insert(cm.metadata.name.clone().unwrap());
                        Ok::<_, kube::Error>(Action::await_change())
                    },
                    |_, _, _| Action::await_change(),
                    seen,
                )
                .for_each(|_| async {})
                .await
        }));
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while counts.iter().any(|c| c.lock().len() < 10) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "controllers never reconciled all 10"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(informer.indexer().len(), 10);
    let watches = server
        .requests()
        .iter()
        .filter(|r| r.verb.as_deref() == Some("watch") && r.path.ends_with("/configmaps"))
        .count();
    let lists = server
        .requests()
        .iter()
        .filter(|r| r.verb.as_deref() == Some("list") && r.path.ends_with("/configmaps"))
        .count();
    assert_eq!(
        (lists, watches),
        (0, 1),
        "one streaming list for the informer, whatever the number of controllers"
    );
    stop.cancel();
    for c in controllers {
        c.await.unwrap();
    }
    factory.shutdown().await;
    server.shutdown().await;
}

/// An informer over a scripted source: `initial` listed, then whatever `events` sends.
fn scripted(
    initial: Vec<ConfigMap>,
) -> (
    SharedIndexInformer<ConfigMap>,
    mpsc::UnboundedSender<WatchEvent<ConfigMap>>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let rx = Arc::new(parking_lot::Mutex::new(Some(rx)));
    let lw = ListWatch::<ConfigMap>::new(
        move |_| {
            let items = initial.clone();
            async move { Ok(ListPage::new(items, "1")) }.boxed()
        },
        move |_| {
            let rx = rx.lock().take();
            async move {
                let Some(rx) = rx else {
                    return Ok(futures::stream::pending().boxed());
                };
                Ok(futures::stream::unfold(rx, |mut rx| async move {
                    rx.recv().await.map(|e| (Ok(e), rx))
                })
                .chain(futures::stream::pending())
                .boxed())
            }
            .boxed()
        },
    );
    let informer = SharedIndexInformer::builder(lw)
        .config(InformerConfig::default())
        .build();
    (informer, tx)
}

/// Whatever a stream yields, the bridge's `Store` already holds (at that version or a newer
/// one); a stream made after sync starts with every object; deletions reach
/// `touched_objects` and not `applied_objects`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_leads_every_stream_and_late_streams_start_from_it() {
    let (informer, events) = scripted((0..50).map(|i| configmap(&format!("a{i}"), 1)).collect());
    let bridge = Bridge::new(&informer).unwrap();
    let store = bridge.store();
    let mut applied = Box::pin(bridge.applied_objects());
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (i, s) = (informer.clone(), stop.clone());
        async move { i.run(s).await }
    });
    let ready = store.clone();
    tokio::time::timeout(Duration::from_secs(10), ready.wait_until_ready())
        .await
        .expect("the store is ready once the informer synced")
        .unwrap();
    let rv = |cm: &ConfigMap| cm.metadata.resource_version.clone().unwrap();
    let check = |cm: &Arc<ConfigMap>| {
        let held = store
            .get(&ObjectRef::from(cm.as_ref()))
            .expect("the store holds what a stream yields");
        assert!(rv(&held).parse::<u64>().unwrap() >= rv(cm).parse::<u64>().unwrap());
    };
    for _ in 0..50 {
        let cm = applied.next().await.unwrap();
        check(&cm);
    }
    // live changes, then a late stream of each kind
    for i in 0..20 {
        events
            .send(WatchEvent::Modified(configmap(&format!("a{i}"), 2 + i)))
            .unwrap();
    }
    events
        .send(WatchEvent::Deleted(configmap("a49", 30)))
        .unwrap();
    for _ in 0..20 {
        let cm = applied.next().await.unwrap();
        check(&cm);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while store
        .get(&ObjectRef::new("a49").within("default"))
        .is_some()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the deletion never reached the store"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Late streams start from the Store as it is when they are made: made once the deletion
    // is in it (made before, under load, they could start from a Store that still had a49).
    let mut late_touched = Box::pin(bridge.touched_objects());
    let mut late_applied = Box::pin(bridge.applied_objects());
    let late: Vec<_> = late_applied.by_ref().take(49).collect().await;
    assert!(
        late.iter()
            .all(|cm| cm.metadata.name.as_deref() != Some("a49"))
    );
    let _ = late_touched.by_ref().take(49).collect::<Vec<_>>().await;
    // a deletion now: touched streams see it, applied streams do not
    events
        .send(WatchEvent::Deleted(configmap("a0", 40)))
        .unwrap();
    events.send(WatchEvent::Added(configmap("b", 41))).unwrap();
    let next_touched = late_touched.next().await.unwrap();
    assert_eq!(next_touched.metadata.name.as_deref(), Some("a0"));
    let next_touched = late_touched.next().await.unwrap();
    assert_eq!(next_touched.metadata.name.as_deref(), Some("b"));
    let next_applied = late_applied.next().await.unwrap();
    assert_eq!(
        next_applied.metadata.name.as_deref(),
        Some("b"),
        "applied_objects skips the deletion"
    );
    stop.cancel();
    run.await.unwrap();
    // the informer stopped: a stream yields what it holds (the first stream never took "b"),
    // then ends
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(10), applied.collect::<Vec<_>>())
        .await
        .expect("the stream ends once the informer stops");
    let names: Vec<_> = rest
        .iter()
        .map(|cm| cm.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["b"]);
}
