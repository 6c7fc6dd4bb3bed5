//! client-go's workqueue metrics (component-base names, label `name`). `workqueue_depth` also
//! has controller-runtime's `priority` label: `""` for plain queues, the priority for a
//! [`PriorityQueue`](crate::workqueue::PriorityQueue) (at most 25 distinct values per queue,
//! then `exceeded_cardinality_limit`).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::Metrics;
use crate::workqueue::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, PriorityGaugeMetric,
    SettableGaugeMetric,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct QueueLabels {
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct DepthLabels {
    name: String,
    priority: String,
}

/// controller-runtime's `maxRecommendedUniquePriorities`.
const MAX_PRIORITY_LABELS: usize = 25;
/// controller-runtime's `priorityCardinalityExceededPlaceholder`.
const PRIORITY_LABELS_EXCEEDED: &str = "exceeded_cardinality_limit";

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// client-go's buckets: `ExponentialBuckets(10e-9, 10, 10)`, 1e-8 s … 10 s.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 10))
}

#[derive(Debug)]
pub(crate) struct WorkqueueFamilies {
    depth: Family<DepthLabels, Gauge>,
    adds: Family<QueueLabels, Counter>,
    latency: HistogramFamily<QueueLabels>,
    work_duration: HistogramFamily<QueueLabels>,
    unfinished: Family<QueueLabels, Gauge<f64, AtomicU64>>,
    longest: Family<QueueLabels, Gauge<f64, AtomicU64>>,
    retries: Family<QueueLabels, Counter>,
}

impl WorkqueueFamilies {
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let f = Self {
            depth: Family::default(),
            adds: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            work_duration: Family::new_with_constructor(latency_histogram),
            unfinished: Family::default(),
            longest: Family::default(),
            retries: Family::default(),
        };
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            f.depth.clone(),
        );
        // prometheus-client adds the `_total` suffix to counters.
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            f.adds.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            f.latency.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            f.work_duration.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads.",
            f.unfinished.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            f.longest.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            f.retries.clone(),
        );
        f
    }
}

fn labels(name: &str) -> QueueLabels {
    QueueLabels {
        name: name.to_owned(),
    }
}

struct IntGauge(Gauge);
impl GaugeMetric for IntGauge {
    fn inc(&self) {
        self.0.inc();
    }
    fn dec(&self) {
        self.0.dec();
    }
}

/// The depth of a priority queue, by priority.
///
/// Deliberate difference: controller-runtime sends every priority to
/// `exceeded_cardinality_limit` once more than 25 were seen, so an item counted under its
/// priority before is taken off the placeholder after; here a priority seen before the limit
/// keeps its label, so each series goes up and down in pairs.
struct PriorityDepth {
    family: Family<DepthLabels, Gauge>,
    name: String,
    seen: parking_lot::Mutex<HashSet<i32>>,
}

impl PriorityDepth {
    fn gauge(&self, priority: i32) -> Gauge {
        let label = {
            let mut seen = self.seen.lock();
            if seen.contains(&priority) {
                priority.to_string()
            } else if seen.len() < MAX_PRIORITY_LABELS {
                seen.insert(priority);
                priority.to_string()
            } else {
                PRIORITY_LABELS_EXCEEDED.to_owned()
            }
        };
        self.family.get_or_create_owned(&DepthLabels {
            name: self.name.clone(),
            priority: label,
        })
    }
}

impl PriorityGaugeMetric for PriorityDepth {
    fn inc(&self, priority: i32) {
        self.gauge(priority).inc();
    }
    fn dec(&self, priority: i32) {
        self.gauge(priority).dec();
    }
}

struct FloatGauge(Gauge<f64, AtomicU64>);
impl SettableGaugeMetric for FloatGauge {
    fn set(&self, value: f64) {
        self.0.set(value);
    }
}

struct Count(Counter);
impl CounterMetric for Count {
    fn inc(&self) {
        self.0.inc();
    }
}

struct Hist(Histogram);
impl HistogramMetric for Hist {
    fn observe(&self, value: f64) {
        self.0.observe(value);
    }
}

impl MetricsProvider for Metrics {
    fn new_depth_metric(&self, name: &str) -> Arc<dyn GaugeMetric> {
        Arc::new(IntGauge(self.workqueue.depth.get_or_create_owned(
            &DepthLabels {
                name: name.to_owned(),
                priority: String::new(),
            },
        )))
    }
    fn new_depth_metric_with_priority(&self, name: &str) -> Arc<dyn PriorityGaugeMetric> {
        Arc::new(PriorityDepth {
            family: self.workqueue.depth.clone(),
            name: name.to_owned(),
            seen: parking_lot::Mutex::new(HashSet::new()),
        })
    }
    fn new_adds_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Count(
            self.workqueue.adds.get_or_create_owned(&labels(name)),
        ))
    }
    fn new_latency_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(Hist(
            self.workqueue.latency.get_or_create_owned(&labels(name)),
        ))
    }
    fn new_work_duration_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(Hist(
            self.workqueue
                .work_duration
                .get_or_create_owned(&labels(name)),
        ))
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(FloatGauge(
            self.workqueue.unfinished.get_or_create_owned(&labels(name)),
        ))
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(FloatGauge(
            self.workqueue.longest.get_or_create_owned(&labels(name)),
        ))
    }
    fn new_retries_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Count(
            self.workqueue.retries.get_or_create_owned(&labels(name)),
        ))
    }
}
