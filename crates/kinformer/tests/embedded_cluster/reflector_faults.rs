//! Issue 4, end to end: a Reflector over real HTTP (`KubeListerWatcher` + kube::Client) fills
//! an `Indexer` from the embedded API server, then survives 20 rounds of random faults
//! (dropped watches, 410 after compaction, compaction alone, 500s, 429 with Retry-After,
//! forgotten history, paused watch delivery) interleaved with random creates, updates and
//! deletes. After every round the cache must equal the server's exact state (keys and
//! resourceVersions) within a bounded time.
//!
//! Seeds are fixed; `KINFORMER_CONVERGE_SEEDS=7,8,9` runs other seeds in
//! `reflector_converges_under_faults_env_seeds` (default there: seed 4).

use crate::embedded_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use embedded_support::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::reflector::BackoffConfig;
use kinformer::store::ReplaceOnce;
use kinformer::{Indexer, InformerConfig, KubeListerWatcher, reflector::Reflector};
use kinformer_apiserver::ServerConfig;
use tokio_util::sync::CancellationToken;

const ROUNDS: usize = 20;
const CONVERGE_LIMIT: Duration = Duration::from_secs(20);

fn short_backoff() -> BackoffConfig {
    BackoffConfig {
        initial: Duration::from_millis(10),
        cap: Duration::from_millis(200),
        factor: 2.0,
        jitter: 0.5,
        reset_after: Duration::from_secs(2),
    }
}

async fn converge_under_faults(seed: u64, objects: usize) {
    let started = Instant::now();
    let server = kinformer_apiserver::start(ServerConfig::default())
        .await
        .expect("server starts");
    let mut rng = Rng::new(seed);
    let mut churn = ConfigMapChurn::seed(&server, objects, 8);

    let cache: Indexer<ConfigMap> = Indexer::default_namespaced();
    let config = InformerConfig::default().backoff(short_backoff());
    let lw = Arc::new(KubeListerWatcher::<ConfigMap>::new(
        server.client(),
        &config,
    ));
    let reflector = Arc::new(
        Reflector::builder(lw, ReplaceOnce::new(cache.clone()))
            .name(format!("configmaps-seed-{seed}"))
            .config(&config)
            .build(),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let reflector = reflector.clone();
        let cancel = cancel.clone();
        async move { reflector.run(cancel).await }
    });

    let initial = wait_converged(&server, "configmaps", CONVERGE_LIMIT, || cache_view(&cache))
        .await
        .unwrap_or_else(|d| panic!("seed {seed}: initial list never converged: {d}"));
    assert_eq!(cache.len(), objects, "seed {seed}: initial list");

    let mut slowest = Duration::ZERO;
    for round in 0..ROUNDS {
        let faults: Vec<Fault> = (0..1 + rng.below(3))
            .map(|_| Fault::ALL[rng.below(Fault::ALL.len())])
            .collect();
        // faults before, between and after bursts of churn
        for fault in &faults {
            let (before, after) = (rng.below(30), rng.below(30));
            churn.churn(&server, &mut rng, before);
            fault.inject(&server, "configmaps");
            churn.churn(&server, &mut rng, after);
        }
        for fault in &faults {
            fault.finish(&server);
        }
        let took = wait_converged(&server, "configmaps", CONVERGE_LIMIT, || cache_view(&cache))
            .await
            .unwrap_or_else(|d| {
                panic!("seed {seed}, round {round} ({faults:?}): never converged: {d}")
            });
        slowest = slowest.max(took);
        // failure rules the Reflector never hit would leak into the next round's fault mix
        server.faults().clear();
    }
    assert_eq!(
        cache.len(),
        churn.live.len(),
        "seed {seed}: the cache holds exactly the live objects"
    );

    cancel.cancel();
    task.await.expect("reflector task");
    server.shutdown().await;
    eprintln!(
        "seed {seed}: {objects} objects, initial sync {initial:?}, slowest round {slowest:?}, total {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_converges_under_faults_seed_1_full_10k() {
    converge_under_faults(1, 10_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_converges_under_faults_seed_2() {
    converge_under_faults(2, 2_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_converges_under_faults_seed_3() {
    converge_under_faults(3, 2_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_converges_under_faults_env_seeds() {
    let seeds = env_seeds("KINFORMER_CONVERGE_SEEDS").unwrap_or_else(|| vec![4]);
    for seed in seeds {
        converge_under_faults(seed, 1_000).await;
    }
}
