//! The priority queue, ported from controller-runtime `pkg/controller/priorityqueue`
//! `priorityqueue_test.go` (names kept, in snake case). Its time-forwarder tests run on a
//! `FakeClock`; its metrics expectations use a recording provider with depth by priority.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use kinformer::workqueue::{
    AddOpts, Clock, CounterMetric, FakeClock, GaugeMetric, HistogramMetric,
    ItemExponentialFailureRateLimiter, LOW_PRIORITY, MetricsProvider, PriorityGaugeMetric,
    PriorityQueue, QueueConfig, RateLimiter, SettableGaugeMetric,
};
use parking_lot::Mutex;

const MS: Duration = Duration::from_millis(1);

/// controller-runtime's `fakeMetricsProvider`: depth by priority, adds and retries.
#[derive(Default)]
struct Recorder {
    depth: Mutex<BTreeMap<i32, i64>>,
    adds: Mutex<u64>,
    retries: Mutex<u64>,
    unfinished: Mutex<Vec<f64>>,
}

struct Unfinished(Arc<Recorder>);
impl SettableGaugeMetric for Unfinished {
    fn set(&self, v: f64) {
        self.0.unfinished.lock().push(v);
    }
}

struct Depth(Arc<Recorder>);
impl PriorityGaugeMetric for Depth {
    fn inc(&self, p: i32) {
        *self.0.depth.lock().entry(p).or_default() += 1;
    }
    fn dec(&self, p: i32) {
        *self.0.depth.lock().entry(p).or_default() -= 1;
    }
}
impl GaugeMetric for Depth {
    fn inc(&self) {
        panic!("a priority queue records depth by priority")
    }
    fn dec(&self) {
        panic!("a priority queue records depth by priority")
    }
}
struct Adds(Arc<Recorder>);
impl CounterMetric for Adds {
    fn inc(&self) {
        *self.0.adds.lock() += 1;
    }
}
struct Retries(Arc<Recorder>);
impl CounterMetric for Retries {
    fn inc(&self) {
        *self.0.retries.lock() += 1;
    }
}
struct Ignore;
impl HistogramMetric for Ignore {
    fn observe(&self, _: f64) {}
}
impl SettableGaugeMetric for Ignore {
    fn set(&self, _: f64) {}
}

struct Provider(Arc<Recorder>);
impl MetricsProvider for Provider {
    fn new_depth_metric(&self, _: &str) -> Arc<dyn GaugeMetric> {
        Arc::new(Depth(self.0.clone()))
    }
    fn new_depth_metric_with_priority(&self, _: &str) -> Arc<dyn PriorityGaugeMetric> {
        Arc::new(Depth(self.0.clone()))
    }
    fn new_adds_metric(&self, _: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Adds(self.0.clone()))
    }
    fn new_latency_metric(&self, _: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(Ignore)
    }
    fn new_work_duration_metric(&self, _: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(Ignore)
    }
    fn new_unfinished_work_seconds_metric(&self, _: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Unfinished(self.0.clone()))
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        _: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Ignore)
    }
    fn new_retries_metric(&self, _: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Retries(self.0.clone()))
    }
}

impl Recorder {
    fn depth(&self) -> Vec<(i32, i64)> {
        self.depth.lock().iter().map(|(p, d)| (*p, *d)).collect()
    }
    fn adds(&self) -> u64 {
        *self.adds.lock()
    }
    fn retries(&self) -> u64 {
        *self.retries.lock()
    }
}

/// controller-runtime's `newQueue` plus `newQueueWithTimeForwarder`: a queue named "test" on
/// a fake clock, recording metrics.
fn new_queue() -> (PriorityQueue<&'static str>, Arc<Recorder>, FakeClock) {
    let recorder = Arc::new(Recorder::default());
    let clock = FakeClock::default();
    let q = PriorityQueue::with_config(
        ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000)),
        QueueConfig {
            name: "test".into(),
            metrics_provider: Some(Arc::new(Provider(recorder.clone()))),
            clock: Some(Arc::new(clock.clone()) as Arc<dyn Clock>),
            ..QueueConfig::default()
        },
    );
    (q, recorder, clock)
}

fn prio(p: i32) -> AddOpts {
    AddOpts::priority(p)
}

fn after(d: Duration) -> AddOpts {
    AddOpts {
        after: d,
        ..AddOpts::default()
    }
}

async fn turn() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn returns_an_item() {
    let (q, m, _) = new_queue();
    q.add_with_opts(["foo"], AddOpts::default());
    assert_eq!(q.get_with_priority().await, Some(("foo", 0)));
    assert_eq!(m.depth(), [(0, 0)]);
    assert_eq!((m.adds(), m.retries()), (1, 0));
}

#[tokio::test]
async fn returns_items_in_order() {
    let (q, m, _) = new_queue();
    q.add("foo");
    q.add("bar");
    assert_eq!(q.get().await, Some("foo"));
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(m.depth(), [(0, 0)]);
    assert_eq!(m.adds(), 2);
}

#[tokio::test]
async fn does_not_return_an_item_that_is_currently_locked() {
    let (q, m, _) = new_queue();
    q.add("foo");
    assert_eq!(q.get().await, Some("foo"));
    q.add("foo");
    q.add("bar");
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(m.depth(), [(0, 1)]);
    assert_eq!(m.adds(), 3);
}

#[tokio::test]
async fn returns_an_item_as_soon_as_its_unlocked() {
    let (q, m, _) = new_queue();
    q.add("foo");
    assert_eq!(q.get().await, Some("foo"));
    q.add("foo");
    q.add("bar");
    assert_eq!(q.get().await, Some("bar"));
    q.add("baz");
    q.done(&"foo");
    assert_eq!(q.get().await, Some("foo"), "foo was added before baz");
    assert_eq!(m.depth(), [(0, 1)]);
    assert_eq!(m.adds(), 4);
}

#[tokio::test]
async fn de_duplicates_items() {
    let (q, m, _) = new_queue();
    q.add("foo");
    q.add("foo");
    assert_eq!(q.len(), 1);
    assert_eq!(q.processing_len(), 0);
    assert_eq!(m.depth(), [(0, 1)]);
    assert_eq!(m.adds(), 1);
}

#[tokio::test]
async fn enqueues_a_locked_item() {
    let (q, m, _) = new_queue();
    q.add("foo");
    assert_eq!(q.len(), 1);
    assert_eq!(q.get_with_priority().await, Some(("foo", 0)));
    q.add("foo");
    assert_eq!(q.len(), 1);
    q.done(&"foo");
    assert_eq!(q.get_with_priority().await, Some(("foo", 0)));
    assert_eq!(m.depth(), [(0, 0)]);
    assert_eq!(m.adds(), 2);
}

#[tokio::test]
async fn retains_the_highest_priority() {
    let (q, m, _) = new_queue();
    q.add_with_opts(["foo"], prio(1));
    q.add_with_opts(["foo"], prio(2));
    assert_eq!(q.get_with_priority().await, Some(("foo", 2)));
    assert_eq!(q.len(), 0);
    assert_eq!(m.depth(), [(1, 0), (2, 0)]);
    assert_eq!(m.adds(), 1);
}

#[tokio::test]
async fn will_not_decrease_the_priority() {
    let (q, m, _) = new_queue();
    q.add_with_opts(["foo"], prio(2));
    q.add_with_opts(["foo"], prio(1));
    assert_eq!(q.get_with_priority().await, Some(("foo", 2)));
    assert_eq!(q.len(), 0);
    assert_eq!(m.depth(), [(2, 0)]);
    assert_eq!(m.adds(), 1);
}

#[tokio::test]
async fn gets_pushed_to_the_front_if_the_priority_increases() {
    let (q, m, _) = new_queue();
    q.add_with_opts(["foo", "bar", "baz"], AddOpts::default());
    q.add_with_opts(["baz"], prio(1));
    assert_eq!(q.get_with_priority().await, Some(("baz", 1)));
    assert_eq!(q.len(), 2);
    assert_eq!(m.depth(), [(0, 2), (1, 0)]);
    assert_eq!(m.adds(), 3);
}

#[tokio::test]
async fn retains_the_lowest_after_duration() {
    let (q, m, _) = new_queue();
    q.add_with_opts(["foo"], after(Duration::ZERO));
    q.add_with_opts(["foo"], after(Duration::from_secs(3600)));
    assert_eq!(q.get_with_priority().await, Some(("foo", 0)));
    assert_eq!(q.len(), 0);
    assert_eq!(m.depth(), [(0, 0)]);
    assert_eq!(m.adds(), 1);
}

#[tokio::test]
async fn does_not_include_non_ready_items_in_len() {
    let (q, m, _) = new_queue();
    q.add_with_opts(["foo"], after(Duration::from_secs(60)));
    q.add("baz");
    q.add_with_opts(["bar"], after(Duration::from_secs(60)));
    q.add("bal");
    assert_eq!(q.len(), 2);
    assert_eq!(m.depth(), [(0, 2)]);
}

/// controller-runtime's "Get from priority queue might get stuck when the priority queue is
/// shut down" (#3239): adds after shutdown are ignored and `get` never blocks after shutdown.
/// Deliberate difference (module docs): the item ready before shutdown is still handed out,
/// as client-go's queues do, where controller-runtime reports shutdown at once.
#[tokio::test]
async fn get_does_not_get_stuck_after_shut_down() {
    let (q, _, _) = new_queue();
    q.add("baz");
    q.shut_down();
    q.add_with_opts(["foo"], after(Duration::from_secs(1)));
    q.add("bar");
    assert_eq!(q.get_with_priority().await, Some(("baz", 0)));
    q.done(&"baz");
    assert_eq!(q.get_with_priority().await, None);
    assert_eq!(q.get_with_priority().await, None);
}

#[tokio::test]
async fn updates_metrics_correctly_for_an_item_added_with_after_and_then_without() {
    let (q, m, _) = new_queue();
    q.add_with_opts(["foo"], after(Duration::from_secs(3600)));
    assert_eq!(q.len(), 0);
    assert_eq!(m.depth(), []);
    q.add("foo");
    assert_eq!(q.len(), 1);
    assert_eq!(m.depth(), [(0, 1)]);
    assert_eq!(q.get().await, Some("foo"));
    assert_eq!(q.len(), 0);
    assert_eq!(m.depth(), [(0, 0)]);
}

#[tokio::test]
async fn updates_metrics_when_an_item_with_after_is_re_added_with_higher_priority() {
    let (q, m, _) = new_queue();
    q.add_with_opts(
        ["foo"],
        AddOpts {
            after: Duration::from_secs(3600),
            priority: 0,
            ..AddOpts::default()
        },
    );
    assert_eq!(q.len(), 0);
    assert_eq!(m.depth(), []);
    q.add_with_opts(["foo"], prio(1));
    assert_eq!(q.len(), 1);
    assert_eq!(m.depth(), [(1, 1)]);
    assert_eq!(q.get_with_priority().await, Some(("foo", 1)));
    assert_eq!(q.len(), 0);
    assert!(m.depth().iter().all(|(_, d)| *d == 0), "{:?}", m.depth());
}

#[tokio::test]
async fn follows_fifo_order_in_the_new_priority_when_item_priority_changes() {
    let (q, _, _) = new_queue();
    q.add_with_opts(["foo"], prio(0));
    q.add_with_opts(["bar"], prio(1));
    q.add_with_opts(["foo"], prio(1));
    assert_eq!(q.len(), 2);
    assert_eq!(q.get_with_priority().await, Some(("bar", 1)));
    assert_eq!(q.len(), 1);
    assert_eq!(q.get_with_priority().await, Some(("foo", 1)));
    assert_eq!(q.len(), 0);
}

/// controller-runtime `TestHighPriorityItemsAreReturnedBeforeLowPriorityItemMultipleTimes`
/// (its `after` of -1 s, 0 and 1 s: a non-positive delay is ready at once).
#[tokio::test]
async fn test_high_priority_items_are_returned_before_low_priority_items() {
    for delay in [Duration::ZERO, Duration::from_secs(1)] {
        let (q, m, clock) = new_queue();
        let high: Vec<String> = (0..100).map(|i| format!("high-{i}")).collect();
        let low: Vec<String> = (0..100).map(|i| format!("low-{i}")).collect();
        let high: Vec<&'static str> = high.into_iter().map(|s| &*s.leak()).collect();
        let low: Vec<&'static str> = low.into_iter().map(|s| &*s.leak()).collect();
        q.add_with_opts(
            low.iter().copied(),
            AddOpts {
                after: delay,
                priority: LOW_PRIORITY,
                ..AddOpts::default()
            },
        );
        q.add_with_opts(
            high.iter().copied(),
            AddOpts {
                after: delay,
                priority: 0,
                ..AddOpts::default()
            },
        );
        clock.step(delay);
        turn().await;
        for want in high.iter().chain(&low) {
            let (got, _) = q.get_with_priority().await.unwrap();
            assert_eq!(got, *want);
            q.done(&got);
        }
        assert_eq!(m.depth(), [(LOW_PRIORITY, 0), (0, 0)]);
        assert_eq!(m.adds(), 200);
        assert_eq!(m.retries(), if delay.is_zero() { 0 } else { 200 });
    }
}

#[tokio::test]
async fn test_item_is_only_returned_after_after_has_passed() {
    let (q, m, clock) = new_queue();
    let getter = {
        let q = q.clone();
        tokio::spawn(async move { q.get_with_priority().await })
    };
    q.add_with_opts(["foo"], after(Duration::from_secs(1)));
    turn().await;
    assert!(!getter.is_finished());
    clock.step(Duration::from_secs(1) - Duration::from_nanos(1));
    turn().await;
    assert!(!getter.is_finished());
    clock.step(Duration::from_nanos(1));
    turn().await;
    assert!(getter.is_finished());
    assert_eq!(getter.await.unwrap(), Some(("foo", 0)));
    assert_eq!(m.depth(), [(0, 0)]);
    assert_eq!((m.adds(), m.retries()), (1, 1));
}

#[tokio::test]
async fn test_high_priority_item_that_became_ready_is_returned_before_low_priority_item() {
    let (q, m, clock) = new_queue();
    q.add_with_opts(["foo"], prio(LOW_PRIORITY));
    q.add_with_opts(["prio"], after(Duration::from_secs(1)));
    clock.step(Duration::from_secs(1));
    turn().await;
    assert_eq!(q.get_with_priority().await, Some(("prio", 0)));
    assert_eq!(m.depth(), [(LOW_PRIORITY, 1), (0, 0)]);
    assert_eq!((m.adds(), m.retries()), (2, 1));
}

#[tokio::test]
async fn test_waiting_item_is_returned_right_after_re_add_without_after() {
    let (q, m, _) = new_queue();
    let getter = {
        let q = q.clone();
        tokio::spawn(async move { q.get().await })
    };
    turn().await;
    q.add_with_opts(["foo"], after(Duration::from_secs(60)));
    turn().await;
    assert!(!getter.is_finished());
    q.add("foo");
    turn().await;
    assert_eq!(getter.await.unwrap(), Some("foo"));
    assert_eq!(m.depth(), [(0, 0)]);
    assert_eq!(m.adds(), 1);
}

#[tokio::test]
async fn test_multiple_items_with_after_are_returned_in_correct_order() {
    let (q, m, clock) = new_queue();
    q.add_with_opts(["foo"], after(Duration::from_secs(1)));
    q.add_with_opts(["bar"], after(200 * MS));
    turn().await;
    assert_eq!(q.try_get_with_priority(), None);
    clock.step(Duration::from_secs(1));
    turn().await;
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(q.get().await, Some("foo"));
    assert_eq!(m.depth(), [(0, 0)]);
    assert_eq!(m.adds(), 2);
}

#[tokio::test]
async fn test_get_from_priority_queue_is_unblocked_on_shutdown() {
    let (q, _, _) = new_queue();
    let getter = {
        let q = q.clone();
        tokio::spawn(async move { q.get_with_priority().await })
    };
    turn().await;
    assert!(!getter.is_finished());
    q.shut_down();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), getter)
            .await
            .expect("shutdown unblocks get")
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn test_items_are_included_in_len_and_metrics_once_they_are_ready() {
    let (q, m, clock) = new_queue();
    for _ in 0..2 {
        q.add_with_opts(["foo"], after(500 * MS));
        q.add("baz");
        q.add_with_opts(["bar"], after(500 * MS));
        q.add("bal");
        assert_eq!(q.len(), 2);
        assert_eq!(m.depth(), [(0, 2)]);
        clock.step(Duration::from_secs(1));
        turn().await;
        assert_eq!(m.depth(), [(0, 4)], "the waiting loop promoted them");
        assert_eq!(q.len(), 4);
        for _ in 0..4 {
            let item = q.get().await.unwrap();
            q.done(&item);
        }
        assert_eq!(q.len(), 0);
        assert_eq!(m.depth(), [(0, 0)]);
    }
}

#[tokio::test]
async fn test_metrics_for_an_expired_item_added_again_without_after() {
    let (q, m, clock) = new_queue();
    q.add_with_opts(["foo"], after(50 * MS));
    clock.step(50 * MS);
    turn().await;
    assert_eq!(q.len(), 1);
    assert_eq!(m.depth(), [(0, 1)]);
    q.add("foo");
    assert_eq!(q.len(), 1);
    assert_eq!(m.depth(), [(0, 1)]);
    assert_eq!(q.get().await, Some("foo"));
    assert_eq!(q.len(), 0);
    assert_eq!(m.depth(), [(0, 0)]);
}

#[tokio::test]
async fn test_when_adding_multiple_items_with_rate_limit_true_they_dont_affect_each_other() {
    let limiter = Arc::new(ItemExponentialFailureRateLimiter::new(
        5 * MS,
        Duration::from_secs(1000),
    ));
    let recorder = Arc::new(Recorder::default());
    let clock = FakeClock::default();
    let q = PriorityQueue::with_shared_limiter(
        limiter.clone(),
        QueueConfig {
            name: "test".into(),
            metrics_provider: Some(Arc::new(Provider(recorder.clone()))),
            clock: Some(Arc::new(clock.clone())),
            ..QueueConfig::default()
        },
    );
    // After 7 calls, the next when("bar") is 5 ms * 2^7 = 640 ms.
    for _ in 0..7 {
        limiter.when(&"bar");
    }
    q.add_with_opts(
        ["foo", "bar"],
        AddOpts {
            rate_limited: true,
            ..AddOpts::default()
        },
    );
    clock.step(5 * MS);
    turn().await;
    assert_eq!(q.get().await, Some("foo"));
    assert_eq!(q.try_get_with_priority(), None);
    clock.step(635 * MS - Duration::from_nanos(1));
    turn().await;
    assert_eq!(q.try_get_with_priority(), None);
    clock.step(Duration::from_nanos(1));
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(recorder.depth(), [(0, 0)]);
    assert_eq!((recorder.adds(), recorder.retries()), (2, 2));
}

/// `after` and `rate_limited` together: the shorter delay wins.
#[tokio::test]
async fn rate_limited_with_after_takes_the_shorter_delay() {
    let (q, _, clock) = new_queue();
    q.add_with_opts(
        ["a"],
        AddOpts {
            after: Duration::from_secs(1),
            rate_limited: true,
            priority: 0,
        },
    );
    assert_eq!(q.num_requeues(&"a"), 1);
    clock.step(5 * MS);
    assert_eq!(q.len(), 1, "the limiter's 5 ms beat the 1 s");
    q.forget(&"a");
    assert_eq!(q.num_requeues(&"a"), 0);
}

/// controller-runtime `TestPriorityQueueDoesNotDeadlockOnShutdownWhileHandingOutItems`
/// (#3538): workers getting while the queue shuts down all return.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_priority_queue_does_not_deadlock_on_shutdown_while_handing_out_items() {
    for round in 0..50 {
        let q = PriorityQueue::<u32>::new("test");
        let mut workers = Vec::new();
        for _ in 0..4 {
            let q = q.clone();
            workers.push(tokio::spawn(async move {
                while let Some(item) = q.get().await {
                    q.done(&item);
                }
            }));
        }
        for i in 0..200 {
            q.add(i);
        }
        q.shut_down();
        for w in workers {
            tokio::time::timeout(Duration::from_secs(10), w)
                .await
                .unwrap_or_else(|_| panic!("round {round}: a worker is stuck"))
                .unwrap();
        }
    }
}

/// `shut_down_with_drain` waits for items being processed, like the other queues.
#[tokio::test]
async fn shut_down_with_drain_waits_for_processing_items() {
    let (q, _, _) = new_queue();
    q.add("foo");
    let foo = q.get().await.unwrap();
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain().await })
    };
    turn().await;
    assert!(!drain.is_finished());
    q.done(&foo);
    tokio::time::timeout(Duration::from_secs(5), drain)
        .await
        .expect("drain returns once nothing is processing")
        .unwrap();
}

/// controller-runtime `TestFuzzPriorityQueue`: several producers and consumers; no deadlock,
/// no key handed out twice at once, each hand-out carries the highest priority added.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_fuzz_priority_queue() {
    use rand::Rng;
    let q = PriorityQueue::<u16>::new("test");
    let expected: Arc<tokio::sync::Mutex<HashMap<u16, i32>>> = Arc::default();
    let handed_out: Arc<Mutex<HashSet<u16>>> = Arc::default();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (q, expected) = (q.clone(), expected.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..500 {
                let (key, priority, delay) = {
                    let mut r = rand::rng();
                    (
                        r.random_range(0..200u16),
                        r.random_range(-3..4),
                        Duration::from_micros(r.random_range(0..3) * 500),
                    )
                };
                let mut e = expected.lock().await;
                q.add_with_opts(
                    [key],
                    AddOpts {
                        after: delay,
                        priority,
                        ..AddOpts::default()
                    },
                );
                let p = e.entry(key).or_insert(priority);
                *p = (*p).max(priority);
            }
        }));
    }
    for t in tasks.drain(..) {
        t.await.unwrap();
    }
    let mut consumers = Vec::new();
    for _ in 0..8 {
        let (q, expected, handed_out) = (q.clone(), expected.clone(), handed_out.clone());
        consumers.push(tokio::spawn(async move {
            loop {
                let (key, priority) = {
                    let mut e = expected.lock().await;
                    if e.is_empty() {
                        return;
                    }
                    let (key, priority) = q.get_with_priority().await.unwrap();
                    assert_eq!(e.remove(&key), Some(priority), "priority of {key}");
                    (key, priority)
                };
                assert!(handed_out.lock().insert(key), "{key} handed out twice");
                let _ = priority;
                tokio::task::yield_now().await;
                handed_out.lock().remove(&key);
                q.done(&key);
            }
        }));
    }
    for c in consumers {
        tokio::time::timeout(Duration::from_secs(30), c)
            .await
            .expect("no deadlock")
            .unwrap();
    }
    assert_eq!(q.len(), 0);
}

/// 50,000 keys at 8 priorities: every operation is logarithmic, and the hand-out order is
/// priority first, FIFO within a priority.
#[tokio::test]
async fn fifty_thousand_keys_in_priority_then_fifo_order() {
    let q = PriorityQueue::<u32>::new("");
    let started = std::time::Instant::now();
    for i in 0..50_000u32 {
        q.add_with_opts([i], AddOpts::priority((i % 8) as i32));
    }
    // Re-adding everything at a lower priority changes nothing.
    for i in 0..50_000u32 {
        q.add_with_opts([i], AddOpts::priority(-1));
    }
    assert_eq!(q.len(), 50_000);
    let mut last: Option<(i32, u32)> = None;
    for _ in 0..50_000 {
        let (i, p) = q.try_get_with_priority().unwrap().unwrap();
        assert_eq!(p, (i % 8) as i32);
        if let Some((lp, li)) = last {
            assert!(p < lp || (p == lp && i > li), "{i}@{p} after {li}@{lp}");
        }
        last = Some((p, i));
        q.done(&i);
    }
    assert!(q.is_empty());
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

/// Dropping every handle ends the waiting loop (no task leak).
#[tokio::test]
async fn dropping_the_queue_ends_its_waiting_loop() {
    let alive = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    let before = alive();
    let (q, _, _) = new_queue();
    q.add_with_opts(["foo"], after(Duration::from_secs(60)));
    turn().await;
    assert_eq!(alive(), before + 1);
    let other = q.clone();
    drop(q);
    turn().await;
    assert_eq!(alive(), before + 1, "a clone keeps it");
    drop(other);
    turn().await;
    assert_eq!(alive(), before);
}

/// The unfinished-work gauge ticks on the queue's clock (every 500 ms by default) and stops
/// at shutdown.
#[tokio::test]
async fn unfinished_work_is_updated_on_the_queue_clock() {
    let (q, m, clock) = new_queue();
    q.add("foo");
    assert_eq!(q.get().await, Some("foo"));
    turn().await;
    clock.step(499 * MS);
    turn().await;
    assert!(m.unfinished.lock().is_empty());
    clock.step(MS);
    turn().await;
    assert_eq!(*m.unfinished.lock(), [0.5]);
    q.shut_down();
    clock.step(Duration::from_secs(60));
    turn().await;
    assert_eq!(*m.unfinished.lock(), [0.5]);
}
