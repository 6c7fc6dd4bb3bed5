//! The example controller (`examples/controller.rs`) against the embedded API server: it
//! converges under churn and injected faults (failed creates and updates, dropped watches,
//! compaction with 410 Gone on rewatch).

#[allow(dead_code)]
#[path = "../examples/controller.rs"]
mod example;

use std::time::Duration;

#[tokio::test]
async fn example_controller_converges_under_churn_and_faults() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    let mut options = example::Options::default();
    (
        options.initial,
        options.rounds,
        options.faults,
        options.workers,
    ) = (25, 8, true, 3);
    options.limit = Duration::from_secs(60);
    let (summaries, stats) = example::run(&server, options).await.unwrap();
    // 25 initial + 3 per round, minus the 8 deleted.
    assert_eq!(summaries, 25 + 3 * 8 - 8);
    assert!(
        stats.errors() > 0,
        "the injected write failures were never hit"
    );
    assert_eq!(stats.panics(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn example_controller_converges_without_faults_with_one_worker() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    let mut options = example::Options::default();
    (
        options.initial,
        options.rounds,
        options.faults,
        options.workers,
    ) = (10, 3, false, 1);
    options.limit = Duration::from_secs(60);
    let (summaries, stats) = example::run(&server, options).await.unwrap();
    assert_eq!(summaries, 10 + 3 * 3 - 3);
    assert_eq!(stats.panics(), 0);
    server.shutdown().await;
}

/// The example leaves a deleted Deployment's summary to the server's garbage collector, as a
/// controller on a real cluster does: with the collector switched off, the summaries of the
/// deleted Deployments stay behind and the run never converges.
#[tokio::test]
async fn example_controller_relies_on_the_servers_garbage_collector() {
    let server = kinformer_apiserver::start(
        kinformer_apiserver::ServerConfig::default().garbage_collector(false),
    )
    .await
    .unwrap();
    let mut options = example::Options::default();
    (
        options.initial,
        options.rounds,
        options.faults,
        options.workers,
    ) = (6, 2, false, 2);
    options.limit = Duration::from_secs(3);
    let err = example::run(&server, options).await.unwrap_err();
    // The summaries of Deployments deleted after the controller made them stay behind (one
    // deleted early may never have had one).
    assert!(
        err.contains("orphans") && !err.contains(", 0 orphans"),
        "{err}"
    );
    server.shutdown().await;
}
