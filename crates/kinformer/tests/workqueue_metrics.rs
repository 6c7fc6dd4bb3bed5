//! Queue metrics, ported from client-go `util/workqueue/metrics_test.go` (names kept, in snake
//! case), with a recording provider, on a fake clock as in client-go (exact durations) and
//! again on the default clock under paused Tokio time.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kinformer::workqueue::{
    Clock, CounterMetric, DelayingQueue, FakeClock, GaugeMetric, HistogramMetric, MetricsProvider,
    Queue, QueueConfig, SettableGaugeMetric,
};
use parking_lot::Mutex;

#[derive(Default)]
struct Value {
    value: Mutex<f64>,
    sets: Mutex<u32>,
    observations: Mutex<Vec<f64>>,
}

impl GaugeMetric for Value {
    fn inc(&self) {
        *self.value.lock() += 1.0;
    }
    fn dec(&self) {
        *self.value.lock() -= 1.0;
    }
}
impl SettableGaugeMetric for Value {
    fn set(&self, value: f64) {
        *self.value.lock() = value;
        *self.sets.lock() += 1;
    }
}
impl CounterMetric for Value {
    fn inc(&self) {
        *self.value.lock() += 1.0;
    }
}
impl HistogramMetric for Value {
    fn observe(&self, value: f64) {
        self.observations.lock().push(value);
    }
}

/// client-go's test `testMetricsProvider`: one recorded value per metric.
#[derive(Default)]
struct Recorder {
    metrics: Mutex<HashMap<&'static str, Arc<Value>>>,
}

impl Recorder {
    fn m(&self, which: &'static str) -> Arc<Value> {
        self.metrics.lock().entry(which).or_default().clone()
    }
    fn value(&self, which: &'static str) -> f64 {
        *self.m(which).value.lock()
    }
    fn observations(&self, which: &'static str) -> Vec<f64> {
        self.m(which).observations.lock().clone()
    }
}

impl MetricsProvider for Recorder {
    fn new_depth_metric(&self, _: &str) -> Arc<dyn GaugeMetric> {
        self.m("depth")
    }
    fn new_adds_metric(&self, _: &str) -> Arc<dyn CounterMetric> {
        self.m("adds")
    }
    fn new_latency_metric(&self, _: &str) -> Arc<dyn HistogramMetric> {
        self.m("latency")
    }
    fn new_work_duration_metric(&self, _: &str) -> Arc<dyn HistogramMetric> {
        self.m("duration")
    }
    fn new_unfinished_work_seconds_metric(&self, _: &str) -> Arc<dyn SettableGaugeMetric> {
        self.m("unfinished")
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        _: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        self.m("longest")
    }
    fn new_retries_metric(&self, _: &str) -> Arc<dyn CounterMetric> {
        self.m("retries")
    }
}

fn config(recorder: &Arc<Recorder>, name: &str) -> QueueConfig<&'static str> {
    QueueConfig {
        name: name.to_owned(),
        metrics_provider: Some(recorder.clone()),
        unfinished_work_update_period: Duration::from_millis(1),
        ..QueueConfig::default()
    }
}

async fn step(d: Duration) {
    tokio::time::advance(d).await;
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

/// Which clock a test runs on: client-go's fake clock, or the default on paused Tokio time.
#[derive(Clone)]
enum Time {
    Tokio,
    Fake(FakeClock),
}

impl Time {
    fn config(&self, recorder: &Arc<Recorder>, name: &str) -> QueueConfig<&'static str> {
        QueueConfig {
            clock: match self {
                Time::Tokio => None,
                Time::Fake(c) => Some(Arc::new(c.clone()) as Arc<dyn Clock>),
            },
            ..config(recorder, name)
        }
    }

    async fn step(&self, d: Duration) {
        match self {
            Time::Tokio => step(d).await,
            Time::Fake(c) => {
                c.step(d);
                for _ in 0..20 {
                    tokio::task::yield_now().await;
                }
            }
        }
    }

    /// The fake clock's durations are exact, as in client-go; Tokio's are too under paused
    /// time, but allow for float noise there.
    fn assert_seconds(&self, got: f64, want: f64, what: &str) {
        match self {
            Time::Fake(_) => assert_eq!(got, want, "{what}"),
            Time::Tokio => assert!(close(got, want), "{what}: {got} != {want}"),
        }
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// client-go `TestMetricShutdown`: the unfinished-work ticker stops at shutdown.
#[tokio::test]
async fn test_metric_shutdown() {
    metric_shutdown(Time::Fake(FakeClock::default())).await;
}

/// `test_metric_shutdown` on the default clock.
#[tokio::test(start_paused = true)]
async fn test_metric_shutdown_on_tokio_time() {
    metric_shutdown(Time::Tokio).await;
}

async fn metric_shutdown(t: Time) {
    let recorder = Arc::new(Recorder::default());
    let q = Queue::with_config(t.config(&recorder, "test"));
    t.step(Duration::ZERO).await;
    t.step(Duration::from_millis(1)).await;
    assert_eq!(*recorder.m("unfinished").sets.lock(), 1);
    q.shut_down();
    t.step(Duration::from_secs(3600)).await;
    assert_eq!(
        *recorder.m("unfinished").sets.lock(),
        1,
        "updated after shutdown"
    );
}

/// client-go `TestMetrics`: adds, depth, queue latency from the first add (also for a re-add
/// during processing), work duration, unfinished work and the longest running processor.
#[tokio::test]
async fn test_metrics() {
    metrics(Time::Fake(FakeClock::default())).await;
}

/// `test_metrics` on the default clock.
#[tokio::test(start_paused = true)]
async fn test_metrics_on_tokio_time() {
    metrics(Time::Tokio).await;
}

async fn metrics(t: Time) {
    let recorder = Arc::new(Recorder::default());
    let q = Queue::with_config(t.config(&recorder, "test"));
    t.step(Duration::ZERO).await;

    // Add one item.
    q.add("foo");
    assert_eq!(recorder.value("adds"), 1.0);
    assert_eq!(recorder.value("depth"), 1.0);

    t.step(Duration::from_micros(50)).await;
    let i = q.get().await.unwrap();
    assert_eq!(i, "foo");
    let latency = recorder.observations("latency");
    assert_eq!(latency.len(), 1);
    t.assert_seconds(latency[0], 5e-05, "latency");

    // Add it back while processing; multiple adds of the same item are de-duplicated.
    for _ in 0..5 {
        q.add(i);
    }
    assert_eq!(recorder.value("adds"), 2.0);
    assert_eq!(recorder.value("depth"), 1.0);

    t.step(Duration::from_micros(25)).await;
    q.done(&i);
    let duration = recorder.observations("duration");
    assert_eq!(duration.len(), 1);
    t.assert_seconds(duration[0], 2.5e-05, "work duration");
    assert_eq!(recorder.value("depth"), 1.0);

    // Get it again: the latency runs from the first re-add.
    let i = q.get().await.unwrap();
    let latency = recorder.observations("latency");
    assert_eq!(latency.len(), 2);
    t.assert_seconds(latency[1], 2.5e-05, "latency of the re-add");
    assert_eq!(recorder.value("depth"), 0.0);

    // Unfinished work and the longest running processor after a millisecond of processing.
    t.step(Duration::from_millis(1)).await;
    t.assert_seconds(recorder.value("unfinished"), 0.001, "unfinished");
    t.assert_seconds(recorder.value("longest"), 0.001, "longest");

    q.done(&i);
    let duration = recorder.observations("duration");
    assert_eq!(duration.len(), 2);
    t.assert_seconds(duration[1], 0.001, "work duration");
}

/// Not in client-go: an unnamed queue records nothing, even with a provider.
#[tokio::test(start_paused = true)]
async fn unnamed_queue_records_nothing() {
    let recorder = Arc::new(Recorder::default());
    let q = Queue::with_config(config(&recorder, ""));
    q.add("foo");
    assert!(recorder.metrics.lock().is_empty());
}

/// Not in client-go: every accepted `add_after` counts a retry (a zero delay too); none after
/// shutdown.
#[tokio::test(start_paused = true)]
async fn retries_count_every_accepted_add_after() {
    let recorder = Arc::new(Recorder::default());
    let q = DelayingQueue::with_config(config(&recorder, "test"));
    q.add_after("a", Duration::ZERO);
    q.add_after("b", Duration::from_millis(5));
    q.add_after("b", Duration::from_millis(9));
    assert_eq!(recorder.value("retries"), 3.0);
    q.shut_down();
    q.add_after("c", Duration::ZERO);
    assert_eq!(recorder.value("retries"), 3.0);
}
