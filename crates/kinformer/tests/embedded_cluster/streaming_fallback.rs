//! Streaming lists that never wedge (issue #35), over HTTP against the embedded API server and
//! its request log: a server that closes every streaming list before its end bookmark
//! (kubernetes #140890) costs a factory's informers the bounded attempts once, then paged
//! lists on every relist; once the memory's time is over, streaming is tried again; a LIST
//! answered 429 with `Retry-After` is retried no sooner than that.

use crate::embedded_support;

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use embedded_support::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kinformer::reflector::{
    BackoffConfig, InitialListMode, StreamingListFallback, StreamingListMemory,
};
use kinformer::{InformerConfig, SharedIndexInformer, SharedInformerFactory};
use kinformer_apiserver::{
    FailureRule, RequestRecord, RunningServer, ServerConfig, Verb, WatchListFault,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(30);

async fn server_with_objects() -> RunningServer {
    let server = kinformer_apiserver::start(ServerConfig::default().record_requests(true))
        .await
        .expect("server starts");
    ConfigMapChurn::seed(&server, 20, 2);
    server
        .seed(
            "secrets",
            (0..10).map(|i| {
                json!({"apiVersion": "v1", "kind": "Secret",
                       "metadata": {"name": format!("s-{i}"), "namespace": "ns-0"},
                       "data": {"k": "dg=="}})
            }),
        )
        .expect("seed secrets");
    server
}

fn fast_backoff() -> BackoffConfig {
    BackoffConfig {
        initial: Duration::from_millis(10),
        cap: Duration::from_millis(200),
        factor: 2.0,
        jitter: 0.5,
        reset_after: Duration::from_secs(2),
    }
}

fn factory(server: &RunningServer, remember_for: Duration) -> SharedInformerFactory {
    SharedInformerFactory::builder(server.client())
        .defaults(
            InformerConfig::default()
                .backoff(fast_backoff())
                .streaming_lists(StreamingListFallback {
                    remember_for,
                    ..Default::default()
                }),
        )
        .build()
}

fn of(requests: &[RequestRecord], path_end: &str) -> Vec<RequestRecord> {
    requests
        .iter()
        .filter(|r| r.path.ends_with(path_end))
        .cloned()
        .collect()
}

fn streaming(r: &RequestRecord) -> bool {
    r.query.contains("sendInitialEvents=true")
}

fn is_list(r: &RequestRecord) -> bool {
    r.verb.as_deref() == Some("list")
}

async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < LIMIT, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn synced(factory: &SharedInformerFactory) {
    let synced = tokio::time::timeout(
        LIMIT,
        factory.wait_for_cache_sync(&CancellationToken::new()),
    )
    .await
    .expect("synced in time");
    assert!(synced.values().all(|s| *s), "{synced:?}");
}

/// Lists of configmaps and secrets so far.
fn core_lists(server: &RunningServer) -> (usize, usize) {
    let requests = server.requests();
    let count = |end| of(&requests, end).iter().filter(|r| is_list(r)).count();
    (count("/configmaps"), count("/secrets"))
}

/// Forces every informer to relist: history forgotten, watches dropped, so the re-watch at
/// the old resourceVersion is answered 410. Waits until the informers of `resources` (path
/// ends) listed again.
async fn relist(server: &RunningServer, resources: &[&str]) {
    let lists = |server: &RunningServer| -> Vec<usize> {
        let requests = server.requests();
        resources
            .iter()
            .map(|end| of(&requests, end).iter().filter(|r| is_list(r)).count())
            .collect()
    };
    let before = lists(server);
    // a write the informers do not see before the history is forgotten, so their
    // resourceVersion is older than the compaction
    static WRITES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    server.faults().pause_watches();
    let name = format!("relist-{n}");
    server
        .create_value(
            "configmaps",
            Some("ns-1"),
            kinformer_apiserver::seed::configmap("ns-1", &name, 1),
        )
        .expect("create");
    server.faults().forget_history();
    server.faults().resume_watches();
    until("the informers relisted", || {
        lists(server)
            .iter()
            .zip(&before)
            .all(|(now, then)| now > then)
    })
    .await;
}

/// [`relist`], waiting for a streaming list that the server finished instead of a list.
async fn relist_streaming(server: &RunningServer) {
    let before = of(&server.requests(), "/configmaps").len();
    server.faults().pause_watches();
    server
        .create_value(
            "configmaps",
            Some("ns-1"),
            kinformer_apiserver::seed::configmap("ns-1", "streamed", 1),
        )
        .expect("create");
    server.faults().forget_history();
    server.faults().resume_watches();
    until("a streaming list after the memory expired", || {
        of(&server.requests(), "/configmaps")[before..]
            .iter()
            .any(|r| streaming(r) && r.code == 200)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_finishes_streaming_lists_costs_the_attempts_once_per_server() {
    let server = server_with_objects().await;
    // the core group's server closes every streaming list before its end bookmark; apps/v1
    // (another group/version, so possibly another server) streams fine
    server
        .faults()
        .set_watch_list_fault(WatchListFault::CloseBeforeEndBookmark, Some(""));
    let factory = factory(&server, Duration::from_secs(600));
    let configmaps = factory.informer::<ConfigMap>();
    let secrets = factory.informer::<Secret>();
    let _deployments = factory.informer::<Deployment>();
    factory.start();
    synced(&factory).await;
    assert_eq!(configmaps.indexer().len(), 20);
    assert_eq!(secrets.indexer().len(), 10);
    assert!(
        factory
            .streaming_list_memory()
            .fallback_remaining(&StreamingListMemory::key("", "v1"))
            .is_some()
    );

    for _ in 0..2 {
        relist(&server, &["/configmaps", "/secrets"]).await;
    }
    until("the deployments informer relisted", || {
        of(&server.requests(), "/deployments")
            .iter()
            .filter(|r| streaming(r))
            .count()
            >= 2
    })
    .await;

    let requests = server.requests();
    let core: Vec<_> = requests
        .iter()
        .filter(|r| r.path.ends_with("/configmaps") || r.path.ends_with("/secrets"))
        .cloned()
        .collect();
    let core_streaming: Vec<_> = core.iter().filter(|r| streaming(r)).collect();
    assert_eq!(
        core_streaming.len(),
        3,
        "three streaming lists between both informers: {core:?}"
    );
    // every informer listed at its start and on both relists, without streaming again
    let (cm_lists, secret_lists) = core_lists(&server);
    assert!(cm_lists >= 3 && secret_lists >= 3, "{core:?}");
    // the other group/version kept streaming and never listed
    let deployments = of(&requests, "/deployments");
    assert!(deployments.iter().all(|r| !is_list(r)), "{deployments:?}");

    // the caches follow the server through the relists
    server
        .create_value(
            "configmaps",
            Some("ns-0"),
            kinformer_apiserver::seed::configmap("ns-0", "late", 1),
        )
        .expect("create");
    let expected = server_view(&server, "configmaps");
    until("the new config map is cached", || {
        cache_view(&configmaps.indexer()) == expected
    })
    .await;
    factory.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_is_tried_again_after_the_memory_expires() {
    let server = server_with_objects().await;
    server
        .faults()
        .set_watch_list_fault(WatchListFault::Refuse, None);
    let remember_for = Duration::from_secs(2);
    let factory = factory(&server, remember_for);
    let configmaps = factory.informer::<ConfigMap>();
    factory.start();
    synced(&factory).await;
    let remembered_at = Instant::now();
    let requests = of(&server.requests(), "/configmaps");
    assert_eq!(
        requests.iter().filter(|r| streaming(r)).count(),
        1,
        "one refused streaming list: {requests:?}"
    );
    assert_eq!(requests[0].code, 422);

    // a relist within the memory's time lists
    relist(&server, &["/configmaps"]).await;
    let requests = of(&server.requests(), "/configmaps");
    assert_eq!(requests.iter().filter(|r| streaming(r)).count(), 1);

    // the server now streams; after the memory's time, the next relist streams again
    server.faults().clear_watch_list_fault();
    tokio::time::sleep(
        remember_for.saturating_sub(remembered_at.elapsed()) + Duration::from_millis(200),
    )
    .await;
    let before = of(&server.requests(), "/configmaps").len();
    relist_streaming(&server).await;
    let after = of(&server.requests(), "/configmaps");
    assert!(
        after[before..].iter().all(|r| !is_list(r)),
        "no list once streaming works again: {:?}",
        &after[before..]
    );
    let expected = server_view(&server, "configmaps").len();
    until("the cache follows", || {
        configmaps.indexer().len() == expected
    })
    .await;
    factory.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_answered_429_is_retried_no_sooner_than_its_retry_after() {
    let server = server_with_objects().await;
    server.faults().fail_next(
        FailureRule::new(429, 1)
            .verb(Verb::List)
            .resource("configmaps")
            .retry_after(2),
    );
    let informer = SharedIndexInformer::<ConfigMap>::new(
        server.client(),
        InformerConfig::default()
            .initial_list(InitialListMode::ListThenWatch)
            .backoff(fast_backoff())
            .streaming_lists(StreamingListFallback {
                attempts: NonZeroU32::MIN,
                ..Default::default()
            }),
    );
    let started = Instant::now();
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    until("synced", || informer.has_synced()).await;
    let took = started.elapsed();
    let lists: Vec<_> = of(&server.requests(), "/configmaps")
        .into_iter()
        .filter(is_list)
        .collect();
    assert_eq!(
        lists.iter().map(|r| r.code).collect::<Vec<_>>(),
        vec![429, 200],
        "one refused list, then one that worked: {lists:?}"
    );
    assert!(
        took >= Duration::from_secs(2),
        "the second list waited Retry-After (2 s), not the 10 ms backoff: synced after {took:?}"
    );
    assert_eq!(informer.indexer().len(), 20);
    cancel.cancel();
    task.await.unwrap();
    server.shutdown().await;
}
