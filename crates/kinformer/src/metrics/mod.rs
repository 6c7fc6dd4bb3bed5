//! Prometheus metrics (feature `metrics`, with `prometheus-client`): client-go's workqueue
//! metrics, controller-runtime's reconcile metrics and informer figures, in one [`Metrics`]
//! handle registered into your [`Registry`].
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
    /// resource version, handlers and their backlogs).
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
