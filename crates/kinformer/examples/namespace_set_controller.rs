//! A controller over a set of namespaces that changes while it runs (a multi-tenant operator
//! gaining and losing tenants), against the embedded API server; it exits 0 on its own.
//!
//! `cargo run -p kinformer --example namespace_set_controller`
//!
//! The pieces: a [`NamespaceSet`] handed to the factory as the default scope
//! (`InformerConfig::default().namespaces(set)`), so every namespaced informer covers exactly
//! the set; a `Controller` that stamps every ConfigMap of the set with an annotation; and,
//! while it runs, a tenant added (`set.insert`: its ConfigMaps are listed, told as adds and
//! reconciled) and a tenant removed (`set.remove`: its ConfigMaps leave the cache, told as
//! deletes, and the controller no longer touches that namespace). The Namespace informer of
//! the same factory is cluster-scoped and ignores the set.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kinformer::controller::{Action, Controller};
use kinformer::{
    InformerConfig, NamespaceSet, ResourceEventHandlerFuncs, SharedInformerFactory,
    split_meta_namespace_key,
};
use kinformer_apiserver::RunningServer;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio_util::sync::CancellationToken;

/// The annotation the controller puts on every ConfigMap of the set.
pub const STAMP: &str = "example.com/tenant-seen";

/// A ConfigMap without the stamp.
pub fn configmap(ns: &str, name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("tenant".to_owned(), ns.to_owned())])),
        ..Default::default()
    }
}

fn stamped(cm: &ConfigMap) -> bool {
    cm.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(STAMP))
}

/// Stamps the ConfigMap `key` (read from the cache) if it is not stamped yet.
async fn reconcile(
    client: kube::Client,
    cache: kinformer::Indexer<ConfigMap>,
    key: String,
) -> Result<Action, kube::Error> {
    let Some(cm) = cache.get_by_key(&key) else {
        return Ok(Action::await_change()); // deleted, or its namespace left the set
    };
    if stamped(&cm) {
        return Ok(Action::await_change());
    }
    let Ok((ns, name)) = split_meta_namespace_key(&key) else {
        return Ok(Action::await_change());
    };
    let mut updated = (*cm).clone();
    updated
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(STAMP.into(), "true".into());
    // the cached resourceVersion makes this a compare-and-swap; a 409 is retried
    Api::<ConfigMap>::namespaced(client, ns)
        .replace(name, &PostParams::default(), &updated)
        .await?;
    Ok(Action::await_change())
}

/// How many of `ns`'s ConfigMaps the server holds, and how many are stamped.
pub fn stamps(server: &RunningServer, ns: &str) -> Result<(usize, usize), String> {
    let state = server
        .state("configmaps", Some(ns))
        .map_err(|e| e.to_string())?;
    let mut done = 0;
    for o in &state.objects {
        let cm: ConfigMap = serde_json::from_value(o.object.clone()).map_err(|e| e.to_string())?;
        done += usize::from(stamped(&cm));
    }
    Ok((state.objects.len(), done))
}

/// Polls `check` every 20 ms until it holds, at most 30 s.
async fn until(what: &str, mut check: impl FnMut() -> bool) -> Result<(), String> {
    let start = std::time::Instant::now();
    while !check() {
        if start.elapsed() > Duration::from_secs(30) {
            return Err(format!("timed out waiting until {what}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// What a run saw.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// ConfigMaps told to the handler as adds, and as deletes.
    pub adds: usize,
    /// See `adds`.
    pub deletes: usize,
    /// Per namespace at the end: (ConfigMaps on the server, stamped).
    pub stamps: BTreeMap<String, (usize, usize)>,
    /// Namespaces the cluster-scoped Namespace informer holds.
    pub namespaces_cached: usize,
}

/// Runs the story against `server`: tenants `team-a` and `team-b` at first, `team-c` added
/// and `team-a` removed while the controller runs, `team-d` never in the set.
pub async fn run(server: &RunningServer) -> Result<Report, String> {
    let tenants = ["team-a", "team-b", "team-c", "team-d"];
    for ns in tenants {
        server
            .create(&Namespace {
                metadata: ObjectMeta {
                    name: Some(ns.into()),
                    ..Default::default()
                },
                ..Default::default()
            })
            .map_err(|e| e.to_string())?;
        for i in 0..3 {
            server
                .create(&configmap(ns, &format!("settings-{i}")))
                .map_err(|e| e.to_string())?;
        }
    }
    let set = NamespaceSet::new(["team-a", "team-b"]).map_err(|e| e.to_string())?;
    let factory = SharedInformerFactory::builder(server.client())
        .defaults(InformerConfig::default().namespaces(set.clone()))
        .build();
    let configmaps = factory.informer::<ConfigMap>();
    let namespaces = factory.informer::<Namespace>();
    let (adds, deletes) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (a, d) = (adds.clone(), deletes.clone());
    let last_added = Arc::new(parking_lot::Mutex::new(String::new()));
    let last = last_added.clone();
    configmaps
        .add_event_handler(
            ResourceEventHandlerFuncs::new()
                .on_add(move |cm: &Arc<ConfigMap>, _| {
                    a.fetch_add(1, Ordering::Relaxed);
                    *last.lock() = kinformer::meta_namespace_key(cm.as_ref()).unwrap_or_default();
                })
                .on_delete(move |_| {
                    d.fetch_add(1, Ordering::Relaxed);
                }),
        )
        .map_err(|e| e.to_string())?;
    let controller = Controller::new("tenant-stamp", configmaps.clone()).workers(2);
    factory.start();
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let (client, cache, cancel) = (server.client(), configmaps.indexer(), cancel.clone());
        async move {
            controller
                .run(cancel, move |key| {
                    reconcile(client.clone(), cache.clone(), key)
                })
                .await
        }
    });
    let all_stamped = |ns: &str| stamps(server, ns).is_ok_and(|(n, done)| n == done);
    let show = |step: &str| {
        let line: Vec<String> = tenants
            .iter()
            .map(|ns| {
                let (n, done) = stamps(server, ns).unwrap_or_default();
                format!("{ns} {done}/{n}")
            })
            .collect();
        println!(
            "{step}: set {:?}, cache {} ConfigMaps (told {} adds, {} deletes); stamped: {}",
            set.snapshot(),
            configmaps.indexer().len(),
            adds.load(Ordering::Relaxed),
            deletes.load(Ordering::Relaxed),
            line.join(", ")
        );
    };

    until("team-a and team-b are stamped", || {
        all_stamped("team-a") && all_stamped("team-b")
    })
    .await?;
    show("started");

    set.insert("team-c").map_err(|e| e.to_string())?;
    until("team-c is stamped", || all_stamped("team-c")).await?;
    show("team-c added");

    set.remove("team-a");
    until("team-a left the cache", || {
        configmaps
            .indexer()
            .list()
            .iter()
            .all(|cm| cm.metadata.namespace.as_deref() != Some("team-a"))
    })
    .await?;
    // new ConfigMaps: the one in team-b is stamped, the one in team-a (out of the set) is not
    for ns in ["team-a", "team-b"] {
        server
            .create(&configmap(ns, "late"))
            .map_err(|e| e.to_string())?;
    }
    until("team-b's late ConfigMap is stamped", || {
        all_stamped("team-b")
    })
    .await?;
    // the handler is told in order: once it has heard of team-b's late ConfigMap, it has
    // been told everything before it
    until("the handler heard of team-b/late", || {
        *last_added.lock() == "team-b/late"
    })
    .await?;
    show("team-a removed");

    let mut report = Report {
        adds: adds.load(Ordering::Relaxed),
        deletes: deletes.load(Ordering::Relaxed),
        namespaces_cached: namespaces.indexer().len(),
        ..Default::default()
    };
    for ns in tenants {
        report.stamps.insert(ns.to_owned(), stamps(server, ns)?);
    }
    cancel.cancel();
    let stopped = running.await.map_err(|e| e.to_string())?;
    factory.shutdown().await;
    stopped.map_err(|e| e.to_string())?;
    Ok(report)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = kinformer_apiserver::start(Default::default()).await?;
    let report = run(&server).await?;
    println!(
        "done: {} adds and {} deletes told; the Namespace informer (cluster-scoped) holds {} namespaces",
        report.adds, report.deletes, report.namespaces_cached
    );
    server.shutdown().await;
    Ok(())
}
