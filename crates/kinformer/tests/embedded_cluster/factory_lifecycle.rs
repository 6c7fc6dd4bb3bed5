//! Issue 35, items 1 and 3, over HTTP against the embedded API server:
//!
//! - an informer removed from the factory mid-churn leaves no task, no open watch (the
//!   server's open-watch count), no cache entry and no metrics series (a scrape, with the
//!   `metrics` feature) behind; its handler's registration has stopped and its stream ended;
//!   another informer of the factory runs on throughout; a new informer for the same type then
//!   starts and syncs with the server's objects;
//! - `shut_down_event_handler` returns only once the handler's running callback has returned
//!   (a gated handler) and drops what was queued; `drain_event_handler` delivers everything
//!   queued first; called from inside the handler, it errors instead of deadlocking;
//! - a lister read of a type nobody watches returns the typed error; with lazy start the read
//!   starts the informer and it syncs.

use crate::embedded_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use embedded_support::{cache_view, server_view, wait_converged};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kinformer::factory::FactoryError;
use kinformer::{
    HandlerOptions, InformerError, ResourceEventHandlerFuncs, ResourceEventHandlerRegistration,
    SharedIndexInformer, SharedInformerFactory,
};
use kinformer_apiserver::RunningServer;
use kube::api::{Api, ApiResource, DeleteParams, PostParams};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(30);

/// Polls `done` until it holds, at most [`LIMIT`]; panics with `what` otherwise.
async fn until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < LIMIT, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn configmaps(server: &RunningServer, names: impl IntoIterator<Item = String>) {
    server
        .seed(
            "configmaps",
            names
                .into_iter()
                .map(|n| kinformer_apiserver::seed::configmap("default", &n, 1)),
        )
        .expect("seed configmaps");
}

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A client of its own (its own connection pool and tasks, gone when it is dropped).
fn own_client(server: &RunningServer) -> kube::Client {
    let config = kube::Config::new(server.base_url().parse().expect("base url"));
    kube::Client::try_from(config).expect("client")
}

/// Writes config maps until `stop`: creates `churn-N`, deletes `churn-(N-3)`. Returns the
/// number of writes.
async fn churn(server_url_client: kube::Client, stop: Arc<AtomicBool>, writes: Arc<AtomicUsize>) {
    let api: Api<ConfigMap> = Api::namespaced(server_url_client, "default");
    let mut n = 0usize;
    while !stop.load(Ordering::Acquire) {
        api.create(&PostParams::default(), &cm(&format!("churn-{n}")))
            .await
            .expect("create");
        if n >= 3 {
            api.delete(&format!("churn-{}", n - 3), &DeleteParams::default())
                .await
                .expect("delete");
        }
        n += 1;
        writes.fetch_add(1, Ordering::AcqRel);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn everything() -> kinformer::store::LabelSelector {
    kinformer::store::LabelSelector::everything()
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removed_mid_churn_leaves_nothing_behind_and_a_new_one_syncs() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    configmaps(&server, (0..50).map(|i| format!("seed-{i}")));
    #[cfg(feature = "metrics")]
    let mut registry = prometheus_client::registry::Registry::default();
    #[cfg(feature = "metrics")]
    let metrics = kinformer::metrics::Metrics::new(&mut registry);

    let factory = SharedInformerFactory::new(server.client());
    // The informer that keeps running throughout.
    let pods = factory.informer::<Pod>();
    let pod_adds = Arc::new(AtomicUsize::new(0));
    let counter = pod_adds.clone();
    pods.add_event_handler(
        ResourceEventHandlerFuncs::new().on_add(move |_: &Arc<Pod>, _| {
            counter.fetch_add(1, Ordering::AcqRel);
        }),
    )
    .unwrap();
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert!(synced.values().all(|s| *s), "{synced:?}");
    until("the pod watch is open", || {
        server.open_watches(Some("pods")) == 1
    })
    .await;
    let baseline = alive_tasks();

    let configmaps_informer = factory.informer::<ConfigMap>();
    #[cfg(feature = "metrics")]
    {
        metrics.watch_informer(&pods);
        metrics.watch_informer(&configmaps_informer);
    }
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let registration = configmaps_informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new()
                .on_add({
                    let c = counter.clone();
                    move |_: &Arc<ConfigMap>, _| {
                        c.fetch_add(1, Ordering::AcqRel);
                    }
                })
                .on_delete(move |_| {
                    counter.fetch_add(1, Ordering::AcqRel);
                }),
        )
        .unwrap();
    let mut stream = configmaps_informer.stream().unwrap();
    let stream_task = tokio::spawn(async move {
        let mut events = 0usize;
        while stream.next().await.is_some() {
            events += 1;
        }
        events
    });
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert_eq!(synced.get("ConfigMap"), Some(&true), "{synced:?}");
    let held_lister = factory.lister::<ConfigMap>().expect("watched and started");
    assert_eq!(held_lister.list(&everything()).len(), 50);
    until("the config map watch is open", || {
        server.open_watches(Some("configmaps")) == 1
    })
    .await;

    // Churn, and remove the informer in the middle of it.
    let (stop, writes) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicUsize::new(0)),
    );
    let writer = tokio::spawn(churn(own_client(&server), stop.clone(), writes.clone()));
    until("the handler hears of the churn", || {
        seen.load(Ordering::Acquire) > 50 + 20
    })
    .await;
    #[cfg(feature = "metrics")]
    assert!(
        metrics
            .encode(&registry)
            .contains(r#"informer_objects_cached{name="ConfigMap"}"#)
    );
    assert!(factory.remove_informer::<ConfigMap>().await);
    let writes_at_removal = writes.load(Ordering::Acquire);

    // Told: the registration has stopped, the stream ended.
    assert!(registration.is_stopped());
    tokio::time::timeout(Duration::from_millis(1), registration.stopped())
        .await
        .expect("the handler's registration has stopped when remove_informer returns");
    tokio::time::timeout(LIMIT, stream_task)
        .await
        .expect("the stream ends")
        .unwrap();
    // Stopped, its cache dropped, reads through the factory refused.
    assert!(configmaps_informer.is_stopped() && configmaps_informer.is_removed());
    assert!(configmaps_informer.indexer().is_empty());
    assert!(
        held_lister.list(&everything()).is_empty(),
        "a lister held elsewhere reads empty"
    );
    assert!(matches!(
        factory.lister::<ConfigMap>(),
        Err(FactoryError::NotWatched { informer }) if informer == "ConfigMap"
    ));
    assert!(
        !factory.remove_informer::<ConfigMap>().await,
        "already removed"
    );
    assert_eq!(factory.len(), 1);
    // No watch left open; the other informer's stays.
    until("the config map watch is closed on the server", || {
        server.open_watches(Some("configmaps")) == 0
    })
    .await;
    assert_eq!(server.open_watches(Some("pods")), 1);
    // Its metrics series are gone, the other informer's are there.
    #[cfg(feature = "metrics")]
    {
        let scrape = metrics.encode(&registry);
        assert!(!scrape.contains(r#"name="ConfigMap""#), "{scrape}");
        assert!(
            scrape.contains(r#"informer_objects_cached{name="Pod"}"#),
            "{scrape}"
        );
    }

    // The churn went on past the removal; then stop it, and every task is gone.
    until("the churn goes on after the removal", || {
        writes.load(Ordering::Acquire) > writes_at_removal + 10
    })
    .await;
    stop.store(true, Ordering::Release);
    writer.await.unwrap();
    until(
        &format!(
            "the alive tasks are back to {baseline} (now {})",
            alive_tasks()
        ),
        || alive_tasks() <= baseline,
    )
    .await;

    // The other informer ran throughout.
    let before = pod_adds.load(Ordering::Acquire);
    Api::<Pod>::namespaced(own_client(&server), "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({
                "metadata": {"name": "after-removal"},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    until("the pod informer hears of a new pod", || {
        pod_adds.load(Ordering::Acquire) > before
    })
    .await;

    // A new informer for the same type: fresh, started by start(), synced with the server.
    let fresh = factory.informer::<ConfigMap>();
    assert!(!fresh.is_removed() && !fresh.has_started());
    assert!(matches!(
        factory.lister::<ConfigMap>(),
        Err(FactoryError::NotStarted { .. })
    ));
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert_eq!(synced.get("ConfigMap"), Some(&true), "{synced:?}");
    let indexer = fresh.indexer();
    wait_converged(&server, "configmaps", LIMIT, || cache_view(&indexer))
        .await
        .unwrap();
    assert_eq!(
        factory
            .lister::<ConfigMap>()
            .unwrap()
            .list(&everything())
            .len(),
        server_view(&server, "configmaps").len()
    );
    factory.shutdown().await;
    server.shutdown().await;
}

/// A handler whose every callback waits for a permit: logs `enter` and `exit` per callback.
#[derive(Clone, Default)]
struct Gated {
    permits: Arc<(std::sync::Mutex<usize>, std::sync::Condvar)>,
    entered: Arc<AtomicUsize>,
    exited: Arc<AtomicUsize>,
    names: Arc<Mutex<Vec<String>>>,
}

impl Gated {
    fn permit(&self, n: usize) {
        let (lock, cvar) = &*self.permits;
        *lock.lock().unwrap() += n;
        cvar.notify_all();
    }

    fn pass(&self, name: String) {
        self.entered.fetch_add(1, Ordering::AcqRel);
        let (lock, cvar) = &*self.permits;
        let mut permits = lock.lock().unwrap();
        while *permits == 0 {
            permits = cvar.wait(permits).unwrap();
        }
        *permits -= 1;
        drop(permits);
        self.names.lock().push(name);
        self.exited.fetch_add(1, Ordering::AcqRel);
    }

    /// Adds it as a blocking handler (its own thread), so it may block.
    fn register(
        &self,
        informer: &SharedIndexInformer<ConfigMap>,
    ) -> ResourceEventHandlerRegistration {
        let (a, u) = (self.clone(), self.clone());
        informer
            .add_event_handler_with(
                ResourceEventHandlerFuncs::new()
                    .on_add(move |o: &Arc<ConfigMap>, _| {
                        a.pass(o.metadata.name.clone().unwrap_or_default())
                    })
                    .on_update(move |_, n: &Arc<ConfigMap>| {
                        u.pass(n.metadata.name.clone().unwrap_or_default())
                    }),
                HandlerOptions::default().blocking(true),
            )
            .unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shut_down_waits_for_the_running_callback_and_drain_delivers_the_queue() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    configmaps(&server, (0..5).map(|i| format!("seed-{i}")));
    let factory = SharedInformerFactory::new(server.client());
    let informer = factory.informer::<ConfigMap>();
    let (stopping, draining) = (Gated::default(), Gated::default());
    let stop_reg = stopping.register(&informer);
    let drain_reg = draining.register(&informer);
    // A handler that tries to wait for its own shutdown from inside its callback.
    let own: Arc<Mutex<Option<Result<(), InformerError>>>> = Arc::default();
    let own_reg: Arc<std::sync::OnceLock<ResourceEventHandlerRegistration>> = Arc::default();
    let (me, result, this) = (own_reg.clone(), own.clone(), informer.clone());
    let own_handled = Arc::new(AtomicUsize::new(0));
    let handled = own_handled.clone();
    let registration = informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new().on_add(move |_: &Arc<ConfigMap>, _| {
                handled.fetch_add(1, Ordering::AcqRel);
                if let Some(reg) = me.get()
                    && result.lock().is_none()
                {
                    let r = futures::executor::block_on(this.shut_down_event_handler(reg));
                    *result.lock() = Some(r);
                }
            }),
        )
        .unwrap();
    own_reg.set(registration.clone()).unwrap();
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert!(synced.values().all(|s| *s));

    // From inside its own callback: an error, no deadlock; the handler is removed.
    until("the self-stopping handler ran", || own.lock().is_some()).await;
    assert!(
        matches!(*own.lock(), Some(Err(InformerError::FromOwnHandler(_)))),
        "{:?}",
        own.lock()
    );
    tokio::time::timeout(LIMIT, registration.stopped())
        .await
        .expect("the handler removed from inside its callback stops after it");
    assert_eq!(
        own_handled.load(Ordering::Acquire),
        1,
        "nothing after the removal"
    );

    // Both gated handlers sit in their first callback with the rest queued; more arrives live.
    until("both handlers are in their first callback", || {
        stopping.entered.load(Ordering::Acquire) == 1
            && draining.entered.load(Ordering::Acquire) == 1
    })
    .await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    for i in 0..3 {
        api.create(&PostParams::default(), &cm(&format!("live-{i}")))
            .await
            .unwrap();
    }
    until("the live events are queued for both", || {
        stop_reg.backlog() >= 7 && drain_reg.backlog() >= 7
    })
    .await;

    // shut_down returns only after the running callback returned; the queue is dropped.
    let shut = tokio::spawn({
        let (informer, reg) = (informer.clone(), stop_reg.clone());
        async move { informer.shut_down_event_handler(&reg).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !shut.is_finished(),
        "returned while the callback still runs"
    );
    assert_eq!(stopping.exited.load(Ordering::Acquire), 0);
    stopping.permit(100);
    tokio::time::timeout(LIMIT, shut)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        stopping.exited.load(Ordering::Acquire),
        1,
        "the running callback returned before shut_down did; the queue was dropped"
    );
    assert_eq!(stopping.entered.load(Ordering::Acquire), 1);

    // drain: everything queued is delivered (5 initial adds, 3 live adds), then it stops.
    let drain = tokio::spawn({
        let (informer, reg) = (informer.clone(), drain_reg.clone());
        async move { informer.drain_event_handler(&reg).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !drain.is_finished(),
        "returned while the callback still runs"
    );
    api.create(&PostParams::default(), &cm("after-drain"))
        .await
        .unwrap();
    let indexer = informer.indexer();
    until("the informer carries on while the handler drains", || {
        indexer.get_by_key("default/after-drain").is_some()
    })
    .await;
    draining.permit(100);
    tokio::time::timeout(LIMIT, drain)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let mut names = draining.names.lock().clone();
    names.sort();
    assert_eq!(
        names,
        [
            "live-0", "live-1", "live-2", "seed-0", "seed-1", "seed-2", "seed-3", "seed-4"
        ],
        "everything queued before the drain, nothing after"
    );
    assert!(drain_reg.is_stopped() || drain_reg.backlog() == 0);
    tokio::time::timeout(Duration::from_millis(1), drain_reg.stopped())
        .await
        .expect("stopped when drain returns");
    assert_eq!(informer.handler_count(), 0);
    factory.shutdown().await;
    server.shutdown().await;
}

#[tokio::test]
async fn reads_of_unwatched_types_fail_and_lazy_start_syncs() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    configmaps(&server, (0..7).map(|i| format!("cm-{i}")));
    let factory = SharedInformerFactory::new(server.client());
    let err = factory.lister::<ConfigMap>().unwrap_err();
    assert_eq!(
        err,
        FactoryError::NotWatched {
            informer: "ConfigMap".into()
        }
    );
    assert!(err.to_string().contains("lazy_start"), "{err}");
    let widgets = ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    assert!(matches!(
        factory.dynamic_lister(&widgets, true),
        Err(FactoryError::NotWatched { .. })
    ));
    assert!(matches!(
        factory.metadata_lister::<ConfigMap>(),
        Err(FactoryError::NotWatched { informer }) if informer == "ConfigMap (metadata)"
    ));
    // Between informer() and start(): not started; after: the lister.
    let _cms = factory.informer::<ConfigMap>();
    assert!(matches!(
        factory.lister::<ConfigMap>(),
        Err(FactoryError::NotStarted { .. })
    ));
    factory.start();
    let lister = factory
        .synced_lister::<ConfigMap>(&CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(lister.list(&everything()).len(), 7);
    // Created after start() and not started since: the read says so.
    let _secrets = factory.informer::<Secret>();
    assert!(matches!(
        factory.lister::<Secret>(),
        Err(FactoryError::NotStarted { .. })
    ));
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    assert!(matches!(
        factory.synced_lister::<Secret>(&cancelled).await,
        Err(FactoryError::NotStarted { .. })
    ));
    factory.shutdown().await;

    // Lazy start: the read creates and starts the informer, and it syncs.
    let lazy = SharedInformerFactory::builder(server.client())
        .lazy_start(true)
        .build();
    assert!(
        matches!(
            lazy.lister::<ConfigMap>(),
            Err(FactoryError::NotStarted { .. })
        ),
        "before start(), a lazy read creates the informer but cannot read it yet"
    );
    lazy.start();
    let lister = lazy
        .synced_lister::<ConfigMap>(&CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(lister.list(&everything()).len(), 7);
    let pods = lazy.lister::<Pod>().expect("lazily started");
    let synced = lazy.wait_for_cache_sync(&CancellationToken::new()).await;
    assert_eq!(
        synced.keys().cloned().collect::<Vec<_>>(),
        ["ConfigMap", "Pod"]
    );
    assert!(synced.values().all(|s| *s));
    assert!(pods.list(&everything()).is_empty());
    lazy.shutdown().await;
    assert!(matches!(
        lazy.lister::<Secret>(),
        Err(FactoryError::ShutDown { .. })
    ));
    server.shutdown().await;
}

#[tokio::test]
async fn removing_an_informer_that_never_started_ends_its_handlers() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    let factory = SharedInformerFactory::new(server.client());
    let informer = factory.informer::<ConfigMap>();
    let registration = informer
        .add_event_handler(ResourceEventHandlerFuncs::new())
        .unwrap();
    let mut stream = informer.stream().unwrap();
    assert!(factory.remove_informer::<ConfigMap>().await);
    tokio::time::timeout(Duration::from_millis(1), registration.stopped())
        .await
        .expect("registration stopped");
    assert!(stream.next().await.is_none(), "the stream ends");
    assert!(informer.is_stopped() && informer.is_removed());
    assert!(matches!(
        informer.add_event_handler(ResourceEventHandlerFuncs::new()),
        Err(InformerError::Stopped(_))
    ));
    // start() does not run it: it left the factory, and a removed informer never runs.
    factory.start();
    informer.run(CancellationToken::new()).await;
    assert!(!informer.has_started());
    assert_eq!(server.open_watches(None), 0);
    assert!(!factory.remove_informer::<ConfigMap>().await);
    factory.shutdown().await;
    server.shutdown().await;
}

/// Each kind of informer the factory makes is removed on its own: a scoped one, the
/// metadata-only one, the dynamic ones; the others keep their watch (the server's count).
#[tokio::test]
async fn scoped_metadata_and_dynamic_informers_are_removed_one_by_one() {
    use kinformer::factory::InformerScope;
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    configmaps(&server, (0..3).map(|i| format!("cm-{i}")));
    let factory = SharedInformerFactory::new(server.client());
    let resource = ApiResource::erase::<ConfigMap>(&());
    let scope = InformerScope {
        namespace: Some("default".into()),
        ..Default::default()
    };
    let full = factory.informer::<ConfigMap>();
    let scoped = factory.informer_with_scope::<ConfigMap>(scope.clone());
    let metadata = factory.metadata_informer::<ConfigMap>();
    let dynamic = factory.dynamic_informer(&resource, true);
    let dynamic_metadata = factory.dynamic_metadata_informer(&resource, true);
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    // A typed and a dynamic informer of one kind share a name: each has its own entry.
    assert_eq!(factory.len(), 5);
    assert_eq!(
        synced.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "ConfigMap (metadata) (v1)",
            "ConfigMap (metadata) (v1, dynamic)",
            "ConfigMap (v1)",
            "ConfigMap (v1, dynamic)",
            "ConfigMap ns=default",
        ],
        "{synced:?}"
    );
    assert!(synced.values().all(|s| *s), "{synced:?}");
    assert!(dynamic.has_synced() && dynamic_metadata.has_synced());
    until("five watches are open", || {
        server.open_watches(Some("configmaps")) == 5
    })
    .await;
    assert_eq!(
        factory
            .lister_with_scope::<ConfigMap>(scope.clone())
            .unwrap()
            .list(&everything())
            .len(),
        3
    );
    assert_eq!(
        factory
            .metadata_lister::<ConfigMap>()
            .unwrap()
            .list(&everything())
            .len(),
        3
    );
    assert_eq!(
        factory
            .dynamic_lister(&resource, true)
            .unwrap()
            .list(&everything())
            .len(),
        3
    );
    assert_eq!(
        factory
            .dynamic_metadata_lister(&resource, true)
            .unwrap()
            .list(&everything())
            .len(),
        3
    );

    assert!(
        factory
            .remove_informer_with_scope::<ConfigMap>(scope.clone())
            .await
    );
    assert!(scoped.is_removed() && !full.is_stopped());
    until("four watches", || {
        server.open_watches(Some("configmaps")) == 4
    })
    .await;
    assert!(matches!(
        factory.lister_with_scope::<ConfigMap>(scope),
        Err(FactoryError::NotWatched { informer }) if informer == "ConfigMap ns=default"
    ));

    assert!(factory.remove_metadata_informer::<ConfigMap>().await);
    assert!(metadata.is_removed() && metadata.indexer().is_empty());
    until("three watches", || {
        server.open_watches(Some("configmaps")) == 3
    })
    .await;
    assert!(factory.metadata_lister::<ConfigMap>().is_err());

    assert!(factory.remove_dynamic_informer(&resource, true).await);
    assert!(dynamic.is_removed() && !dynamic_metadata.is_stopped());
    until("two watches", || {
        server.open_watches(Some("configmaps")) == 2
    })
    .await;
    assert!(factory.dynamic_lister(&resource, true).is_err());

    assert!(
        factory
            .remove_dynamic_metadata_informer(&resource, true)
            .await
    );
    assert!(dynamic_metadata.is_removed());
    until("one watch", || server.open_watches(Some("configmaps")) == 1).await;

    // The full informer ran on throughout, and still hears of changes.
    assert!(!full.is_stopped() && !full.is_removed());
    configmaps(&server, ["late".to_string()]);
    until("the full informer hears of a late config map", || {
        full.indexer().get_by_key("default/late").is_some()
    })
    .await;
    assert_eq!(factory.len(), 1);
    factory.shutdown().await;
    server.shutdown().await;
}
