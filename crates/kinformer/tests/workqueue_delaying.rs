//! The delaying and rate-limiting queues, ported from client-go `util/workqueue`
//! `delaying_queue_test.go` and `rate_limiting_queue_test.go` (names kept, in snake case).
//! client-go's tests run on a fake clock and so do these (`FakeClock::step`); each also runs
//! on the default clock under paused Tokio time (`tokio::time::advance`), which must keep
//! working.

use std::sync::Arc;
use std::time::Duration;

use kinformer::workqueue::{
    DelayingQueue, FakeClock, ItemExponentialFailureRateLimiter, QueueConfig, RateLimitingQueue,
};

const MS: Duration = Duration::from_millis(1);

/// Lets the delaying queue's waiting loop take its turn: it sees the entries added since its
/// last turn and moves the due ones into the queue (client-go's `waitForWaitingQueueToFill` /
/// `waitForAdded`; the loop's state is not observable from here, so this yields to it).
async fn waiting_loop_turn() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

async fn step(d: Duration) {
    tokio::time::advance(d).await;
    waiting_loop_turn().await;
}

/// Which clock a test runs on.
enum Time {
    /// The default clock, on paused Tokio time.
    Tokio,
    /// client-go's fake clock.
    Fake(FakeClock),
}

impl Time {
    fn fake() -> Self {
        Time::Fake(FakeClock::default())
    }

    fn config(&self) -> QueueConfig<&'static str> {
        QueueConfig {
            clock: match self {
                Time::Tokio => None,
                Time::Fake(c) => Some(Arc::new(c.clone())),
            },
            ..QueueConfig::default()
        }
    }

    fn queue(&self) -> DelayingQueue<&'static str> {
        DelayingQueue::with_config(self.config())
    }

    async fn step(&self, d: Duration) {
        match self {
            Time::Tokio => step(d).await,
            Time::Fake(c) => {
                c.step(d);
                waiting_loop_turn().await;
            }
        }
    }
}

/// A test body run twice: on the fake clock and on paused Tokio time.
macro_rules! on_both_clocks {
    ($(#[$doc:meta])* $fake:ident, $tokio:ident, $body:ident) => {
        $(#[$doc])*
        #[tokio::test]
        async fn $fake() {
            $body(Time::fake()).await;
        }
        $(#[$doc])*
        #[tokio::test(start_paused = true)]
        async fn $tokio() {
            $body(Time::Tokio).await;
        }
    };
}

on_both_clocks!(
    /// client-go `TestSimpleQueue`.
    test_simple_queue,
    test_simple_queue_on_tokio_time,
    simple_queue
);

async fn simple_queue(t: Time) {
    let q = t.queue();
    q.add_after("foo", 50 * MS);
    waiting_loop_turn().await;
    assert_eq!(q.len(), 0, "should not have added");
    t.step(60 * MS).await;
    assert_eq!(q.len(), 1, "should have added");
    let item = q.get().await.unwrap();
    q.done(&item);
    // Step past the next heartbeat: nothing is added again.
    t.step(10 * 1000 * MS).await;
    t.step(30 * MS).await;
    assert_eq!(q.len(), 0, "added to queue");
}

on_both_clocks!(
    /// client-go `TestDeduping`: one entry per item; the earliest time wins.
    test_deduping,
    test_deduping_on_tokio_time,
    deduping
);

async fn deduping(t: Time) {
    let q = t.queue();
    q.add_after("foo", 50 * MS);
    q.add_after("foo", 70 * MS);
    waiting_loop_turn().await;
    assert_eq!(q.len(), 0);
    // At 60 ms the first request fired.
    t.step(60 * MS).await;
    assert_eq!(q.len(), 1);
    let item = q.get().await.unwrap();
    q.done(&item);
    // At 80 ms the second (later) request was merged away.
    t.step(20 * MS).await;
    assert_eq!(q.len(), 0);

    // The other order: the earlier request moves the entry forward.
    q.add_after("foo", 50 * MS);
    q.add_after("foo", 30 * MS);
    waiting_loop_turn().await;
    assert_eq!(q.len(), 0);
    t.step(40 * MS).await;
    assert_eq!(q.len(), 1);
    let item = q.get().await.unwrap();
    q.done(&item);
    t.step(20 * MS).await;
    assert_eq!(q.len(), 0);
}

on_both_clocks!(
    /// client-go `TestAddTwoFireEarly`.
    test_add_two_fire_early,
    test_add_two_fire_early_on_tokio_time,
    add_two_fire_early
);

async fn add_two_fire_early(t: Time) {
    let q = t.queue();
    q.add_after("foo", 1000 * MS);
    q.add_after("bar", 50 * MS);
    waiting_loop_turn().await;
    assert_eq!(q.len(), 0);
    t.step(60 * MS).await;
    assert_eq!(q.len(), 1);
    let item = q.get().await.unwrap();
    assert_eq!(item, "bar");
    q.done(&item);
    q.add_after("baz", 2000 * MS);
    t.step(1000 * MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("foo"));
    t.step(2000 * MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("baz"));
}

on_both_clocks!(
    /// client-go `TestCopyShifting`: items enter the queue in ready-time order.
    test_copy_shifting,
    test_copy_shifting_on_tokio_time,
    copy_shifting
);

async fn copy_shifting(t: Time) {
    let q = t.queue();
    q.add_after("foo", 1000 * MS);
    q.add_after("bar", 500 * MS);
    q.add_after("baz", 250 * MS);
    waiting_loop_turn().await;
    assert_eq!(q.len(), 0);
    t.step(2000 * MS).await;
    assert_eq!(q.len(), 3);
    assert_eq!(q.get().await, Some("baz"));
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(q.get().await, Some("foo"));
}

/// Not in client-go: a zero delay adds at once.
#[tokio::test(start_paused = true)]
async fn add_after_zero_adds_at_once() {
    let q = DelayingQueue::<&str>::new();
    q.add_after("foo", Duration::ZERO);
    assert_eq!(q.len(), 1);
}

/// Not in client-go: `add_after` after shutdown is ignored; waiting entries are dropped at
/// shutdown.
#[tokio::test(start_paused = true)]
async fn shutdown_drops_waiting_entries() {
    let q = DelayingQueue::<&str>::new();
    q.add_after("foo", 10 * MS);
    assert_eq!(q.waiting_len(), 1);
    q.shut_down();
    assert_eq!(q.waiting_len(), 0);
    q.add_after("bar", 10 * MS);
    q.add_after("baz", Duration::ZERO);
    step(100 * MS).await;
    assert_eq!(q.len(), 0);
    assert_eq!(q.get().await, None);
}

/// Not in client-go (kubernetes #112325 documents it): `add` does not cancel a waiting entry,
/// so the item is processed now and again when the entry fires.
#[tokio::test(start_paused = true)]
async fn add_does_not_cancel_a_waiting_entry() {
    let q = DelayingQueue::<&str>::new();
    q.add_after("foo", 50 * MS);
    q.add("foo");
    let item = q.get().await.unwrap();
    q.done(&item);
    assert_eq!(q.len(), 0);
    step(60 * MS).await;
    assert_eq!(q.len(), 1);
}

/// Not in client-go: dropping every handle ends the waiting loop (no task leak).
#[tokio::test(start_paused = true)]
async fn dropping_the_queue_ends_the_waiting_loop() {
    let before = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    let q = DelayingQueue::<&str>::new();
    q.add_after("foo", 50 * MS);
    waiting_loop_turn().await;
    assert_eq!(
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        before + 1
    );
    drop(q);
    waiting_loop_turn().await;
    assert_eq!(
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        before
    );
}

on_both_clocks!(
    /// client-go `TestRateLimitingQueue`: per-item exponential delays, independent per item, reset
    /// by `forget`. (client-go reads the delaying queue's channel; here each retry is processed
    /// and the time it becomes ready is checked.)
    test_rate_limiting_queue,
    test_rate_limiting_queue_on_tokio_time,
    rate_limiting_queue
);

async fn rate_limiting_queue(t: Time) {
    let q = RateLimitingQueue::<&str>::with_config(
        ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1)),
        t.config(),
    );

    async fn ready_after(
        t: &Time,
        q: &RateLimitingQueue<&'static str>,
        item: &'static str,
        d: Duration,
    ) {
        q.add_rate_limited(item);
        t.step(d - Duration::from_nanos(1)).await;
        assert_eq!(q.len(), 0, "{item} ready before {d:?}");
        t.step(Duration::from_nanos(1)).await;
        assert_eq!(q.len(), 1, "{item} not ready at {d:?}");
        let got = q.get().await.unwrap();
        assert_eq!(got, item);
        q.done(&got);
    }

    ready_after(&t, &q, "one", MS).await;
    ready_after(&t, &q, "one", 2 * MS).await;
    assert_eq!(q.num_requeues(&"one"), 2);
    ready_after(&t, &q, "two", MS).await;
    ready_after(&t, &q, "two", 2 * MS).await;
    q.forget(&"one");
    assert_eq!(q.num_requeues(&"one"), 0);
    ready_after(&t, &q, "one", MS).await;
}

/// client-go `TestSimpleQueue`'s heartbeat part on the fake clock: the waiting loop sleeps on
/// the queue's clock (it has a waiter while an entry waits), and Tokio time is irrelevant.
#[tokio::test]
async fn waiting_loop_sleeps_on_the_queue_clock() {
    let clock = FakeClock::default();
    let t = Time::Fake(clock.clone());
    let q = t.queue();
    q.add_after("foo", Duration::from_secs(3600));
    waiting_loop_turn().await;
    assert!(
        clock.has_waiters(),
        "the waiting loop arms its timer on the fake clock"
    );
    t.step(Duration::from_secs(3599)).await;
    assert_eq!(q.len(), 0);
    t.step(Duration::from_secs(1)).await;
    assert_eq!(q.len(), 1);
}
