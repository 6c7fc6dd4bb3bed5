//! Streaming list (`use_watch_list(true)`: `sendInitialEvents=true` and the
//! `k8s.io/initial-events-end` bookmark) against the embedded API server over real HTTP: the
//! initial state arrives as a watch, not a LIST, and the cache converges exactly through
//! churn and faults that force new streaming lists.

use crate::embedded_support;

use kinformer::reflector::InitialListMode;
use std::sync::Arc;
use std::time::Duration;

use embedded_support::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::reflector::BackoffConfig;
use kinformer::store::ReplaceOnce;
use kinformer::{Indexer, InformerConfig, KubeListerWatcher, reflector::Reflector};
use kinformer_apiserver::ServerConfig;
use tokio_util::sync::CancellationToken;

const CONVERGE_LIMIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list_reflector_converges_under_faults() {
    let server = kinformer_apiserver::start(ServerConfig::default().record_requests(true))
        .await
        .expect("server starts");
    let mut churn = ConfigMapChurn::seed(&server, 3_000, 4);
    let mut rng = Rng::new(21);

    let cache: Indexer<ConfigMap> = Indexer::default_namespaced();
    let config = InformerConfig::default()
        .initial_list(InitialListMode::StreamingList)
        .backoff(BackoffConfig {
            initial: Duration::from_millis(10),
            cap: Duration::from_millis(200),
            factor: 2.0,
            jitter: 0.5,
            reset_after: Duration::from_secs(2),
        });
    let lw = Arc::new(KubeListerWatcher::<ConfigMap>::new(
        server.client(),
        &config,
    ));
    let reflector = Arc::new(
        Reflector::builder(lw, ReplaceOnce::new(cache.clone()))
            .name("configmaps-watch-list")
            .config(&config)
            .build(),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (reflector, cancel) = (reflector.clone(), cancel.clone());
        async move { reflector.run(cancel).await }
    });

    wait_converged_to(
        &server,
        "configmaps",
        &churn.expected,
        CONVERGE_LIMIT,
        || cache_view(&cache),
    )
    .await
    .unwrap_or_else(|d| panic!("initial streaming list never converged: {d}"));
    assert_eq!(cache.len(), 3_000);

    for fault in [
        Fault::DropWatches,
        Fault::ExpireAndDrop,
        Fault::ForgetHistory,
        Fault::PauseResume,
    ] {
        churn.churn(&server, &mut rng, 50);
        fault.inject(&server, "configmaps");
        churn.churn(&server, &mut rng, 50);
        fault.finish(&server);
        wait_converged_to(
            &server,
            "configmaps",
            &churn.expected,
            CONVERGE_LIMIT,
            || cache_view(&cache),
        )
        .await
        .unwrap_or_else(|d| panic!("after {fault:?}: never converged: {d}"));
        server.faults().clear();
    }
    assert_eq!(cache.len(), churn.live.len());

    let requests = server.requests();
    let configmap_requests: Vec<_> = requests
        .iter()
        .filter(|r| r.path.ends_with("/configmaps"))
        .collect();
    let streaming = configmap_requests
        .iter()
        .filter(|r| r.query.contains("sendInitialEvents=true"))
        .count();
    let lists = configmap_requests
        .iter()
        .filter(|r| !r.query.contains("watch=true") && !r.query.contains("watch=1"))
        .count();
    // Whether a fault forces a relist depends on timing (a re-watch at the current revision
    // needs none), so the count of relists is not fixed; what must hold is that every list,
    // initial or relist, was a streaming list.
    assert!(
        streaming >= 1,
        "the initial sync is a streaming list ({streaming} seen)"
    );
    assert_eq!(lists, 0, "no LIST was needed: {configmap_requests:?}");

    cancel.cancel();
    task.await.expect("reflector task");
    server.shutdown().await;
}
