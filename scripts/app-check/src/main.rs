//! A user's application: an embedded API server, a factory informer over it, synced, with the
//! Kubernetes version this build selected; then what a long-running controller does at run
//! time (reads through the factory, a namespace set changed while its informer runs, an
//! informer removed). Exits non-zero saying what went wrong.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kinformer::factory::FactoryError;
use kinformer::{InformerConfig, NamespaceSet, SharedInformerFactory};
use kinformer_apiserver::RunningServer;
use tokio_util::sync::CancellationToken;

const PODS: usize = 2_000;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let k8s = k8s_version();
    let table = kinformer_proto::kubernetes_version();
    if table != k8s {
        return Err(format!("the protobuf table is {table}, k8s-openapi is {k8s}").into());
    }
    let server = kinformer_apiserver::start(Default::default()).await?;
    server.seed_pods(PODS, 20)?;
    let server_version: serde_json::Value = {
        let client = server.client();
        let req = http::Request::get("/version").body(Vec::new())?;
        client.request(req).await?
    };
    if server_version["minor"] != k8s.trim_start_matches("1.") {
        return Err(format!("the embedded server plays {server_version}, not {k8s}").into());
    }
    // A field newer than the oldest supported version travels through protobuf whole.
    let newer = newer_field_pod();
    if let Some(pod) = &newer {
        server.create(pod)?;
    }

    let factory = SharedInformerFactory::new(server.client());
    let pods = factory.informer::<Pod>();
    factory.start();
    let cancel = CancellationToken::new();
    let timeout = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(120)).await;
            cancel.cancel();
        }
    });
    let synced = factory.wait_for_cache_sync(&cancel).await;
    timeout.abort();
    if !synced.values().all(|s| *s) {
        return Err(format!("not synced within 2 minutes: {synced:?}").into());
    }
    let want = PODS + usize::from(newer.is_some());
    if pods.indexer().len() != want {
        return Err(format!("{} pods cached, {want} on the server", pods.indexer().len()).into());
    }
    if newer.is_some() {
        check_newer_field(&pods.indexer())?;
    }
    factory.shutdown().await;
    let lifecycle = run_time_changes(&server).await?;
    server.shutdown().await;
    println!(
        "app-check: Kubernetes {k8s} (protobuf table {table}): {want} pods synced{}; {lifecycle}",
        if newer.is_some() {
            ", a 1.34+ field kept"
        } else {
            ""
        }
    );
    Ok(())
}

/// A factory over a namespace set of the seeded namespaces: the pods of a namespace added
/// while it runs arrive, those of a removed one leave; an unwatched type's read is a typed
/// error; the informer, removed, leaves no watch open on the server.
async fn run_time_changes(server: &RunningServer) -> Result<String, Box<dyn std::error::Error>> {
    let names = kinformer_apiserver::seed::namespace_names(3);
    let in_ns = |ns: &str| -> Result<usize, Box<dyn std::error::Error>> {
        Ok(server.state("pods", Some(ns))?.objects.len())
    };
    let set = NamespaceSet::new([names[0].clone(), names[1].clone()])?;
    let factory = SharedInformerFactory::builder(server.client())
        .defaults(InformerConfig::default().namespaces(set.clone()))
        .build();
    let pods = factory.informer::<Pod>();
    factory.start();
    let cached_becomes = |want: usize, what: &'static str| {
        let cache = pods.indexer();
        async move {
            for _ in 0..1200 {
                if cache.len() == want {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(format!(
                "{what}: {} pods cached, {want} expected",
                cache.len()
            ))
        }
    };
    cached_becomes(
        in_ns(&names[0])? + in_ns(&names[1])?,
        "namespace set synced",
    )
    .await?;
    set.insert(names[2].clone())?;
    let all_three = in_ns(&names[0])? + in_ns(&names[1])? + in_ns(&names[2])?;
    cached_becomes(all_three, "namespace added").await?;
    set.remove(&names[0]);
    cached_becomes(in_ns(&names[1])? + in_ns(&names[2])?, "namespace removed").await?;
    factory.lister::<Pod>()?;
    if !matches!(
        factory.lister::<ConfigMap>(),
        Err(FactoryError::NotWatched { .. })
    ) {
        return Err("a read of an unwatched type did not fail with NotWatched".into());
    }
    if !factory.remove_informer::<Pod>().await {
        return Err("remove_informer found no pod informer".into());
    }
    // the server sees each closed connection a moment later
    let mut open = server.open_watches(Some("pods"));
    for _ in 0..200 {
        if open == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        open = server.open_watches(Some("pods"));
    }
    if open != 0 || !pods.indexer().is_empty() {
        let cached = pods.indexer().len();
        return Err(format!("after removal: {open} pod watches open, {cached} cached").into());
    }
    factory.shutdown().await;
    Ok(format!(
        "namespace set changed at run time ({all_three} pods over 3 namespaces), informer removed"
    ))
}

/// The version this build's k8s-openapi feature selected.
fn k8s_version() -> &'static str {
    K8S_VERSION
}

k8s_openapi::k8s_if_1_33! { const K8S_VERSION: &str = "1.33"; }
k8s_openapi::k8s_if_1_34! { const K8S_VERSION: &str = "1.34"; }
k8s_openapi::k8s_if_1_35! { const K8S_VERSION: &str = "1.35"; }
k8s_openapi::k8s_if_1_36! { const K8S_VERSION: &str = "1.36"; }
k8s_openapi::k8s_if_1_37! { const K8S_VERSION: &str = "1.37"; }

// `spec.hostnameOverride` (Kubernetes 1.34+), where this version has it: a pod carrying it, and
// the check that the cached pod still does.
k8s_openapi::k8s_if_ge_1_34! {
    fn newer_field_pod() -> Option<Pod> {
        let mut pod: Pod =
            serde_json::from_value(kinformer_apiserver::seed::pod("app", "newer", 0))
                .expect("a seed pod");
        if let Some(spec) = pod.spec.as_mut() {
            spec.hostname_override = Some("overridden".into());
        }
        Some(pod)
    }

    fn check_newer_field(cache: &kinformer::Indexer<Pod>) -> Result<(), String> {
        let pod = cache.get_by_key("app/newer").ok_or("the newer pod is not cached")?;
        let kept = pod.spec.as_ref().and_then(|s| s.hostname_override.as_deref());
        if kept != Some("overridden") {
            return Err(format!("spec.hostnameOverride came back as {kept:?}"));
        }
        Ok(())
    }
}
k8s_openapi::k8s_if_le_1_33! {
    fn newer_field_pod() -> Option<Pod> {
        None
    }

    fn check_newer_field(_: &kinformer::Indexer<Pod>) -> Result<(), String> {
        Ok(())
    }
}
