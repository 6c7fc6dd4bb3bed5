//! Queue metrics hooks: client-go's `workqueue.MetricsProvider` and the bookkeeping behind it.
//!
//! A queue records metrics only when it has a name and a provider (its own, or the global one
//! set once with [`set_provider`]); otherwise it keeps no timestamps and starts no ticker. The
//! Prometheus implementation lives in `kinformer::metrics` behind the `metrics` feature.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, OnceLock};

use tokio::time::Instant;

use super::clock::Clock;

/// A gauge that goes up and down by one (`workqueue_depth`).
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Subtracts one.
    fn dec(&self);
}

/// A gauge that goes up and down by one, per priority (`workqueue_depth` of a priority queue,
/// controller-runtime's `DepthMetricWithPriority`).
pub trait PriorityGaugeMetric: Send + Sync {
    /// Adds one at `priority`.
    fn inc(&self, priority: i32);
    /// Subtracts one at `priority`.
    fn dec(&self, priority: i32);
}

/// The default [`MetricsProvider::new_depth_metric_with_priority`]: one gauge, priorities
/// ignored.
struct IgnorePriority(Arc<dyn GaugeMetric>);

impl PriorityGaugeMetric for IgnorePriority {
    fn inc(&self, _priority: i32) {
        self.0.inc();
    }
    fn dec(&self, _priority: i32) {
        self.0.dec();
    }
}

/// A gauge set to a value (`workqueue_unfinished_work_seconds`, `..._longest_running_...`).
pub trait SettableGaugeMetric: Send + Sync {
    /// Sets the value.
    fn set(&self, value: f64);
}

/// A monotonic counter (`workqueue_adds_total`, `workqueue_retries_total`).
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A distribution of observations in seconds (`workqueue_queue_duration_seconds`, ...).
pub trait HistogramMetric: Send + Sync {
    /// Records one observation.
    fn observe(&self, value: f64);
}

/// Makes the metrics of a named queue (client-go's `workqueue.MetricsProvider`). Every
/// method receives the queue's name.
pub trait MetricsProvider: Send + Sync {
    /// `workqueue_depth`: items dirty (waiting, or re-added while processing).
    fn new_depth_metric(&self, name: &str) -> Arc<dyn GaugeMetric>;
    /// `workqueue_adds_total`: adds that made an item dirty.
    fn new_adds_metric(&self, name: &str) -> Arc<dyn CounterMetric>;
    /// `workqueue_queue_duration_seconds`: from the first add to `get`.
    fn new_latency_metric(&self, name: &str) -> Arc<dyn HistogramMetric>;
    /// `workqueue_work_duration_seconds`: from `get` to `done`.
    fn new_work_duration_metric(&self, name: &str) -> Arc<dyn HistogramMetric>;
    /// `workqueue_unfinished_work_seconds`: the summed age of the items in processing.
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric>;
    /// `workqueue_longest_running_processor_seconds`: the age of the oldest item in processing.
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Arc<dyn SettableGaugeMetric>;
    /// `workqueue_retries_total`: `add_after` calls accepted (delaying queues).
    fn new_retries_metric(&self, name: &str) -> Arc<dyn CounterMetric>;
    /// `workqueue_depth` of a [`PriorityQueue`](super::PriorityQueue), by priority
    /// (controller-runtime's `MetricsProviderWithPriority`). The default ignores the
    /// priority and uses [`new_depth_metric`](Self::new_depth_metric).
    fn new_depth_metric_with_priority(&self, name: &str) -> Arc<dyn PriorityGaugeMetric> {
        Arc::new(IgnorePriority(self.new_depth_metric(name)))
    }
}

static GLOBAL_PROVIDER: OnceLock<Arc<dyn MetricsProvider>> = OnceLock::new();

/// Sets the provider used by named queues that have none of their own (client-go's
/// `SetProvider`). Only the first call takes effect; it returns whether this one did.
pub fn set_provider(provider: Arc<dyn MetricsProvider>) -> bool {
    GLOBAL_PROVIDER.set(provider).is_ok()
}

/// The provider a queue named `name` uses: none without a name, else its own or the global one.
pub(crate) fn resolve(
    name: &str,
    own: Option<&Arc<dyn MetricsProvider>>,
) -> Option<Arc<dyn MetricsProvider>> {
    if name.is_empty() {
        return None;
    }
    own.cloned().or_else(|| GLOBAL_PROVIDER.get().cloned())
}

/// The queue-side bookkeeping (client-go's `defaultQueueMetrics`). Called under the queue's
/// lock.
pub(crate) struct QueueMetrics<T> {
    depth: Depth,
    adds: Arc<dyn CounterMetric>,
    latency: Arc<dyn HistogramMetric>,
    work_duration: Arc<dyn HistogramMetric>,
    unfinished_work: Arc<dyn SettableGaugeMetric>,
    longest_running: Arc<dyn SettableGaugeMetric>,
    add_times: HashMap<T, Instant>,
    processing_start_times: HashMap<T, Instant>,
    clock: Arc<dyn Clock>,
}

impl<T: Eq + Hash + Clone> QueueMetrics<T> {
    pub(crate) fn new(name: &str, provider: &dyn MetricsProvider, clock: Arc<dyn Clock>) -> Self {
        Self {
            depth: Depth::Plain(provider.new_depth_metric(name)),
            adds: provider.new_adds_metric(name),
            latency: provider.new_latency_metric(name),
            work_duration: provider.new_work_duration_metric(name),
            unfinished_work: provider.new_unfinished_work_seconds_metric(name),
            longest_running: provider.new_longest_running_processor_seconds_metric(name),
            add_times: HashMap::new(),
            processing_start_times: HashMap::new(),
            clock,
        }
    }

    /// The metrics of a priority queue: depth by priority.
    pub(crate) fn with_priority(
        name: &str,
        provider: &dyn MetricsProvider,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            depth: Depth::Priority(provider.new_depth_metric_with_priority(name)),
            ..Self::new(name, provider, clock)
        }
    }

    pub(crate) fn add(&mut self, item: &T) {
        self.add_at(item, 0);
    }

    /// An item became ready at `priority`.
    pub(crate) fn add_at(&mut self, item: &T, priority: i32) {
        self.adds.inc();
        self.depth.inc(priority);
        let clock = &self.clock;
        self.add_times
            .entry(item.clone())
            .or_insert_with(|| clock.now());
    }

    pub(crate) fn get(&mut self, item: &T) {
        self.get_at(item, 0);
    }

    /// An item at `priority` was handed out.
    pub(crate) fn get_at(&mut self, item: &T, priority: i32) {
        self.depth.dec(priority);
        let now = self.clock.now();
        self.processing_start_times.insert(item.clone(), now);
        if let Some(start) = self.add_times.remove(item) {
            self.latency
                .observe(now.saturating_duration_since(start).as_secs_f64());
        }
    }

    /// A ready item moved from one priority to another.
    pub(crate) fn reprioritize(&self, old: i32, new: i32) {
        if let Depth::Priority(d) = &self.depth {
            d.dec(old);
            d.inc(new);
        }
    }

    pub(crate) fn done(&mut self, item: &T) {
        if let Some(start) = self.processing_start_times.remove(item) {
            let elapsed = self.clock.now().saturating_duration_since(start);
            self.work_duration.observe(elapsed.as_secs_f64());
        }
    }

    pub(crate) fn update_unfinished_work(&self) {
        let now = self.clock.now();
        let mut total = 0.0;
        let mut oldest = 0.0_f64;
        for start in self.processing_start_times.values() {
            let age = now.saturating_duration_since(*start).as_secs_f64();
            total += age;
            oldest = oldest.max(age);
        }
        self.unfinished_work.set(total);
        self.longest_running.set(oldest);
    }
}

enum Depth {
    Plain(Arc<dyn GaugeMetric>),
    Priority(Arc<dyn PriorityGaugeMetric>),
}

impl Depth {
    fn inc(&self, priority: i32) {
        match self {
            Depth::Plain(g) => g.inc(),
            Depth::Priority(g) => g.inc(priority),
        }
    }
    fn dec(&self, priority: i32) {
        match self {
            Depth::Plain(g) => g.dec(),
            Depth::Priority(g) => g.dec(priority),
        }
    }
}
