//! The `metrics` feature: a scrape after the example controller ran on the embedded server
//! shows client-go's workqueue metrics, controller-runtime's reconcile metrics and the
//! informer figures, under their upstream names.
#![cfg(feature = "metrics")]

use crate::controller_example as example;

use std::time::Duration;

use kinformer::metrics::Metrics;
use kinformer::workqueue::{Queue, QueueConfig};
use prometheus_client::registry::Registry;

fn value(scrape: &str, series: &str) -> Option<f64> {
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

#[tokio::test]
async fn scrape_shows_workqueue_reconcile_and_informer_metrics() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let mut options = example::Options::default();
    (options.initial, options.rounds, options.workers) = (10, 4, 2);
    options.metrics = Some(metrics.clone());
    let (summaries, stats) = example::run(&server, options).await.unwrap();
    let scrape = metrics.encode(&registry);
    let q = r#"{name="configmap-summary"}"#;
    let c = r#"{controller="configmap-summary"}"#;
    let reconciles = stats.reconciles() as f64;
    assert_eq!(
        value(&scrape, &format!("workqueue_adds_total{q}")),
        Some(reconciles),
        "{scrape}"
    );
    // Depth by priority (controller-runtime's label): every series back at zero.
    let depths: Vec<&str> = scrape
        .lines()
        .filter(|l| l.starts_with(r#"workqueue_depth{name="configmap-summary","#))
        .collect();
    assert!(!depths.is_empty(), "{scrape}");
    assert!(depths.iter().all(|l| l.ends_with(" 0")), "{depths:?}");
    assert_eq!(
        value(
            &scrape,
            &format!("workqueue_queue_duration_seconds_count{q}")
        ),
        Some(reconciles)
    );
    assert_eq!(
        value(
            &scrape,
            &format!("workqueue_work_duration_seconds_count{q}")
        ),
        Some(reconciles)
    );
    assert!(value(&scrape, &format!("workqueue_unfinished_work_seconds{q}")).is_some());
    assert!(
        value(
            &scrape,
            &format!("workqueue_longest_running_processor_seconds{q}")
        )
        .is_some()
    );
    assert_eq!(
        value(&scrape, &format!("workqueue_retries_total{q}")),
        Some(stats.errors() as f64)
    );
    let total: f64 = ["success", "error", "requeue_after"]
        .iter()
        .filter_map(|r| {
            value(
                &scrape,
                &format!(r#"controller_runtime_reconcile_total{{controller="configmap-summary",result="{r}"}}"#),
            )
        })
        .sum();
    assert_eq!(total, reconciles);
    assert_eq!(
        value(
            &scrape,
            &format!("controller_runtime_reconcile_errors_total{c}")
        ),
        Some(stats.errors() as f64)
    );
    assert_eq!(
        value(
            &scrape,
            &format!("controller_runtime_reconcile_time_seconds_count{c}")
        ),
        Some(reconciles)
    );
    assert_eq!(
        value(&scrape, &format!("controller_runtime_active_workers{c}")),
        Some(0.0)
    );
    // Read your own writes: the example records its writes, so reconciles waited for them.
    assert!(stats.cache_waits() > 0);
    assert_eq!(
        value(
            &scrape,
            &format!("kinformer_controller_cache_waits_total{c}")
        ),
        Some(stats.cache_waits() as f64)
    );
    assert_eq!(
        value(
            &scrape,
            &format!("kinformer_controller_cache_wait_timeouts_total{c}")
        ),
        Some(stats.cache_wait_timeouts() as f64)
    );
    assert_eq!(
        value(&scrape, r#"informer_objects_cached{name="ConfigMap"}"#),
        Some(summaries as f64)
    );
    assert!(
        value(
            &scrape,
            r#"informer_store_resource_version{name="Deployment"}"#
        )
        .is_some_and(|v| v > 0.0)
    );
    assert!(value(&scrape, r#"informer_queued_items{name="Deployment"}"#).is_some());
    // Rounds 2 and 3 of the churn drop every watch (and compact history before the second).
    assert!(
        value(&scrape, r#"informer_lists_total{name="ConfigMap"}"#).is_some_and(|v| v >= 1.0),
        "{scrape}"
    );
    assert!(
        value(
            &scrape,
            r#"informer_watch_restarts_total{name="ConfigMap"}"#
        )
        .is_some_and(|v| v >= 2.0),
        "{scrape}"
    );
    assert!(value(&scrape, r#"informer_relists_total{name="ConfigMap"}"#).is_some());
    server.shutdown().await;
}

/// client-go semantics through the Prometheus provider: depth counts dirty items, adds count
/// only new dirty items, and an unnamed queue is not exported.
#[tokio::test(start_paused = true)]
async fn queue_metrics_follow_client_go() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let provider: std::sync::Arc<dyn kinformer::workqueue::MetricsProvider> =
        std::sync::Arc::new(metrics.clone());
    let q = Queue::with_config(QueueConfig {
        metrics_provider: Some(provider.clone()),
        ..QueueConfig::named("q")
    });
    let unnamed = Queue::with_config(QueueConfig {
        metrics_provider: Some(provider),
        ..QueueConfig::default()
    });
    unnamed.add("x");
    q.add("a");
    q.add("a");
    q.add("b");
    let a = q.get().await.unwrap();
    tokio::time::advance(Duration::from_millis(2)).await;
    q.done(&a);
    let scrape = metrics.encode(&registry);
    assert_eq!(
        value(&scrape, r#"workqueue_adds_total{name="q"}"#),
        Some(2.0)
    );
    assert_eq!(
        value(&scrape, r#"workqueue_depth{name="q",priority=""}"#),
        Some(1.0)
    );
    assert_eq!(
        value(
            &scrape,
            r#"workqueue_work_duration_seconds_count{name="q"}"#
        ),
        Some(1.0)
    );
    assert!(!scrape.contains(r#"name="""#));
}

/// controller-runtime's depth by priority: a priority queue's depth carries its priority label
/// (plain queues `""`); past 25 distinct priorities new ones share `exceeded_cardinality_limit`.
#[tokio::test(start_paused = true)]
async fn priority_queue_depth_has_a_capped_priority_label() {
    use kinformer::workqueue::{AddOpts, ItemExponentialFailureRateLimiter, PriorityQueue};
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let q = PriorityQueue::<u32>::with_config(
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1)),
        QueueConfig {
            metrics_provider: Some(std::sync::Arc::new(metrics.clone())),
            ..QueueConfig::named("pq")
        },
    );
    for p in 0..30u32 {
        q.add_with_opts([p], AddOpts::priority(p as i32));
    }
    q.add_with_opts([100], AddOpts::priority(-100));
    let scrape = metrics.encode(&registry);
    let depth = |p: &str| {
        value(
            &scrape,
            &format!(r#"workqueue_depth{{name="pq",priority="{p}"}}"#),
        )
    };
    assert_eq!(depth("0"), Some(1.0), "{scrape}");
    assert_eq!(depth("24"), Some(1.0));
    assert_eq!(depth("25"), None);
    assert_eq!(depth("exceeded_cardinality_limit"), Some(6.0));
    // A priority seen before the limit keeps its label when it goes down again.
    assert_eq!(q.get_with_priority().await, Some((29, 29)));
    let scrape = metrics.encode(&registry);
    assert_eq!(
        value(
            &scrape,
            r#"workqueue_depth{name="pq",priority="exceeded_cardinality_limit"}"#
        ),
        Some(5.0)
    );
}

/// A typed and a dynamic informer of one kind share a name: each has its own series, labelled
/// as in `wait_for_cache_sync`'s map, instead of one series that mixes both (a gauge
/// overwritten, a counter summed). An informer watched twice is reported once.
#[tokio::test]
async fn informers_sharing_a_name_have_their_own_series() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kinformer::SharedInformerFactory;
    use kube::api::ApiResource;
    use tokio_util::sync::CancellationToken;

    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    server
        .seed(
            "configmaps",
            (0..3).map(|i| kinformer_apiserver::seed::configmap("default", &format!("cm-{i}"), 1)),
        )
        .unwrap();
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let factory = SharedInformerFactory::new(server.client());
    let typed = factory.informer::<ConfigMap>();
    let dynamic = factory.dynamic_informer(&ApiResource::erase::<ConfigMap>(&()), true);
    metrics.watch_informer(&typed);
    metrics.watch_informer(&dynamic);
    metrics.watch_informer(&typed);
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert!(synced.values().all(|s| *s), "{synced:?}");

    let scrape = metrics.encode(&registry);
    for name in ["ConfigMap (v1)", "ConfigMap (v1, dynamic)"] {
        assert_eq!(
            value(
                &scrape,
                &format!(r#"informer_objects_cached{{name="{name}"}}"#)
            ),
            Some(3.0),
            "{scrape}"
        );
        assert_eq!(
            value(
                &scrape,
                &format!(r#"informer_lists_total{{name="{name}"}}"#)
            ),
            Some(1.0),
            "{scrape}"
        );
        assert!(synced.contains_key(name), "{synced:?}");
    }
    assert!(!scrape.contains(r#"name="ConfigMap""#), "{scrape}");
    factory.shutdown().await;
    server.shutdown().await;
}
