//! Issue 33, "stuck signals" done-when: over HTTP (embedded server, a real `kube::Client`), one
//! handler is held (blocked on a channel) and the watch is silenced (`pause_watches`) while the
//! server changes objects. Two scrapes of the project's metrics show the held handler's
//! oldest-pending age and the seconds since the last watch activity growing; then an object is
//! lost from the server's storage without any event, and the periodic consistency check
//! reports it (metric > 0, and the report names the key). In both queue modes.
#![cfg(feature = "metrics")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::informer::QueueMode;
use kinformer::metrics::Metrics;
use kinformer::{HandlerOptions, InformerConfig, ResourceEventHandlerFuncs, SharedIndexInformer};
use kube::api::{Api, ObjectMeta, PostParams};
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

fn value(scrape: &str, series: &str) -> Option<f64> {
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

fn cm(name: &str, v: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        data: Some([("v".to_owned(), v.to_owned())].into()),
        ..Default::default()
    }
}

/// Polls `done` every 20 ms for at most 20 s.
async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_handler_a_silenced_watch_and_a_planted_divergence_show_in_a_scrape() {
    held_silenced_divergent(QueueMode::RealFifo).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_handler_a_silenced_watch_and_a_planted_divergence_show_in_a_scrape_delta_fifo() {
    held_silenced_divergent(QueueMode::DeltaFifo).await;
}

async fn held_silenced_divergent(mode: QueueMode) {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    for i in 0..5 {
        api.create(&PostParams::default(), &cm(&format!("cm-{i}"), "0"))
            .await
            .unwrap();
    }

    let config = InformerConfig::default()
        .consistency_check(Duration::from_millis(300))
        .queue_mode(mode);
    let informer = SharedIndexInformer::<ConfigMap>::new(server.client(), config);
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    metrics.watch_informer(&informer);

    // The handler blocks (on its own thread) on the first update until the test releases it.
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(Some(gate));
    let updates = Arc::new(Mutex::new(Vec::new()));
    let registration = informer
        .add_event_handler_with(
            ResourceEventHandlerFuncs::new().on_update({
                let updates = updates.clone();
                move |_, new: &Arc<ConfigMap>| {
                    if let Some(rx) = gate.lock().take() {
                        rx.recv().expect("the test releases the handler");
                    }
                    updates.lock().push(new.metadata.name.clone().unwrap());
                }
            }),
            HandlerOptions::default().name("held").blocking(true),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    wait_for("the handler to sync", || registration.has_synced()).await;
    wait_for("a consistent check", || {
        informer.consistency_stats().consistent > 0
    })
    .await;

    // Held: the first update blocks the handler; the second waits behind it.
    for i in 0..2 {
        api.replace(&format!("cm-{i}"), &PostParams::default(), &{
            let mut c = api.get(&format!("cm-{i}")).await.unwrap();
            c.data = Some([("v".to_owned(), "1".to_owned())].into());
            c
        })
        .await
        .unwrap();
    }
    wait_for("the second update to queue", || registration.backlog() == 1).await;
    // Silenced: the server keeps changing objects, the watch delivers nothing.
    server.faults().pause_watches();
    for i in 2..4 {
        let mut c = api.get(&format!("cm-{i}")).await.unwrap();
        c.data = Some([("v".to_owned(), "2".to_owned())].into());
        api.replace(&format!("cm-{i}"), &PostParams::default(), &c)
            .await
            .unwrap();
    }

    let held = r#"informer_handler_oldest_pending_seconds{name="ConfigMap",handler="held"}"#;
    let silent = r#"informer_seconds_since_watch_activity{name="ConfigMap"}"#;
    let first = metrics.encode(&registry);
    let (age1, quiet1) = (value(&first, held).unwrap(), value(&first, silent).unwrap());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let second = metrics.encode(&registry);
    let (age2, quiet2) = (
        value(&second, held).unwrap(),
        value(&second, silent).unwrap(),
    );
    assert!(
        age2 >= age1 + 1.0,
        "the held handler's age grows: {age1} -> {age2}\n{second}"
    );
    assert!(
        quiet2 >= quiet1 + 1.0,
        "seconds since watch activity grow: {quiet1} -> {quiet2}\n{second}"
    );
    assert!(value(&second, r#"informer_seconds_since_list{name="ConfigMap"}"#).is_some());
    assert!(registration.oldest_pending_age().unwrap() >= Duration::from_millis(1500));

    // Planted: cm-4 vanishes from storage without an event; the cache still holds it.
    assert!(
        server
            .faults()
            .lose_object("configmaps", Some("default"), "cm-4")
    );
    let divergent = r#"informer_consistency_divergent_objects{name="ConfigMap"}"#;
    let mut scrape = String::new();
    wait_for("the consistency check to report the divergence", || {
        scrape = metrics.encode(&registry);
        value(&scrape, divergent).is_some_and(|v| v > 0.0)
    })
    .await;
    assert_eq!(value(&scrape, divergent), Some(1.0), "{scrape}");
    assert!(
        value(
            &scrape,
            r#"informer_consistency_checks_total{name="ConfigMap",result="divergent"}"#
        )
        .is_some_and(|v| v >= 1.0),
        "{scrape}"
    );
    let report = informer.consistency_stats().last.unwrap();
    assert_eq!(report.extra, ["default/cm-4"], "{report:?}");
    assert!(
        report.missing.is_empty() && report.different.is_empty(),
        "{report:?}"
    );

    // Released: the handler catches up and the watch delivers what it held back.
    release.send(()).unwrap();
    server.faults().resume_watches();
    wait_for("every update handled", || updates.lock().len() == 4).await;
    wait_for("the handler to be idle", || {
        registration.oldest_pending_age().is_none()
    })
    .await;
    cancel.cancel();
    run.await.unwrap();
}

/// The server can no longer serve the cache's resourceVersion (its history was compacted past
/// it while the watch was silent): the check is skipped, says why, and counts it; nothing is
/// reported as divergent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consistency_check_at_a_compacted_resource_version_is_skipped() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("a", "0"))
        .await
        .unwrap();
    let informer =
        SharedIndexInformer::<ConfigMap>::new(server.client(), InformerConfig::default());
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    wait_for("the informer to sync", || informer.has_synced()).await;
    assert!(informer.check_consistency().await.unwrap().is_consistent());

    server.faults().pause_watches();
    api.create(&PostParams::default(), &cm("b", "0"))
        .await
        .unwrap();
    server.faults().compact_now();
    let err = informer.check_consistency().await.unwrap_err();
    assert!(
        matches!(
            err,
            kinformer::informer::ConsistencyError::Unavailable { .. }
        ),
        "{err}"
    );
    let stats = informer.consistency_stats();
    assert_eq!(
        (stats.consistent, stats.divergent, stats.skipped),
        (1, 0, 1)
    );
    assert!(
        stats.last.unwrap().is_consistent(),
        "the last comparison stands"
    );
    cancel.cancel();
    run.await.unwrap();
}
