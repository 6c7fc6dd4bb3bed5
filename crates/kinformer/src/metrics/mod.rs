//! Prometheus metrics (feature `metrics`, with `prometheus-client`): client-go's workqueue
//! metrics, controller-runtime's reconcile metrics and informer figures, in one [`Metrics`]
//! handle registered into your [`Registry`].
//!
//! The informer families ([`Metrics::watch_informer`]), read at every scrape; each is labelled
//! `name` (the informer's name; informers that share one are told apart as in
//! [`wait_for_cache_sync`](crate::SharedInformerFactory::wait_for_cache_sync)'s map, by API
//! version and `dynamic`, so `Pod (v1)` and `Pod (v1, dynamic)`), and the handler families
//! also `handler`:
//!
//! | family | type | what |
//! |---|---|---|
//! | `informer_objects_cached` | gauge | objects in the cache |
//! | `informer_queued_items` | gauge | deltas queued between the reflector and the cache |
//! | `informer_store_resource_version` | gauge | the last resourceVersion synced (last 15 digits) |
//! | `informer_handler_backlog` | gauge | notifications queued for a handler, not yet taken |
//! | `informer_handler_oldest_pending_seconds` | gauge | how long the oldest notification a handler has not yet handled has waited (0: none); growing: a stuck handler |
//! | `informer_seconds_since_watch_activity` | gauge | since the last watch event or bookmark (or list, if later); growing well past a minute: a silent watch |
//! | `informer_seconds_since_list` | gauge | since the last successful list |
//! | `informer_lists_total`, `informer_relists_total` | counter | lists started; those after the first |
//! | `informer_watches_total`, `informer_watch_restarts_total` | counter | watches started; those after the first |
//! | `informer_consistency_checks_total` | counter | consistency checks by `result`: `consistent`, `divergent`, `skipped`, `failed` |
//! | `informer_consistency_divergent_objects` | gauge | objects that differed in the last check that compared |
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use kinformer::metrics::Metrics;
//! use kinformer::workqueue::{Queue, QueueConfig};
//! use prometheus_client::registry::Registry;
//! let mut registry = Registry::default();
//! let metrics = Metrics::new(&mut registry);
//! let queue = Queue::with_config(QueueConfig {
//!     metrics_provider: Some(std::sync::Arc::new(metrics.clone())),
//!     ..QueueConfig::named("demo")
//! });
//! queue.add("a");
//! let text = metrics.encode(&registry);
//! assert!(text.contains(r#"workqueue_adds_total{name="demo"} 1"#));
//! # }
//! ```

mod controller;
mod informer;
mod workqueue;

use std::sync::Arc;

use prometheus_client::registry::Registry;

pub use informer::InformerProbe;

/// Every metric family kinformer records; cheap to clone (the families are shared).
#[derive(Clone, Debug)]
pub struct Metrics {
    pub(crate) workqueue: Arc<workqueue::WorkqueueFamilies>,
    pub(crate) controller: Arc<controller::ControllerFamilies>,
    informers: Arc<informer::InformerCollector>,
}

impl Metrics {
    /// Registers every family into `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let informers = Arc::new(informer::InformerCollector::default());
        registry.register_collector(Box::new(informers.clone()));
        Self {
            workqueue: Arc::new(workqueue::WorkqueueFamilies::register(registry)),
            controller: Arc::new(controller::ControllerFamilies::register(registry)),
            informers,
        }
    }

    /// Reports an informer's figures at every scrape (objects cached, queued deltas, last
    /// resource version, handlers with their backlogs and oldest waiting notifications, the
    /// time since the last watch activity and list, consistency checks; see the module docs).
    ///
    /// An informer removed from its factory
    /// ([`SharedInformerFactory::remove_informer`](crate::SharedInformerFactory::remove_informer)
    /// and the other `remove_*` methods) leaves the scrape, every series of it, and the
    /// collector lets go of it at the next scrape or `watch_informer`. One that merely stopped
    /// (its factory shut down) keeps reporting its last figures. Watching an informer again
    /// changes nothing.
    pub fn watch_informer<K: crate::Object>(&self, informer: &crate::SharedIndexInformer<K>) {
        self.informers.add(Box::new(informer.clone()));
    }

    /// The text exposition of `registry` (OpenMetrics text format).
    pub fn encode(&self, registry: &Registry) -> String {
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, registry) {
            tracing::warn!(error = %e, "encoding metrics");
        }
        out
    }
}
