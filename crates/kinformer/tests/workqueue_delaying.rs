//! The delaying and rate-limiting queues, ported from client-go `util/workqueue`
//! `delaying_queue_test.go` and `rate_limiting_queue_test.go` (names kept, in snake case), on
//! paused Tokio time: client-go's `fakeClock.Step(d)` is `tokio::time::advance(d)`.

use std::time::Duration;

use kinformer::workqueue::{DelayingQueue, ItemExponentialFailureRateLimiter, RateLimitingQueue};

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

/// client-go `TestSimpleQueue`.
#[tokio::test(start_paused = true)]
async fn test_simple_queue() {
    let q = DelayingQueue::<&str>::new();
    q.add_after("foo", 50 * MS);
    waiting_loop_turn().await;
    assert_eq!(q.len(), 0, "should not have added");
    step(60 * MS).await;
    assert_eq!(q.len(), 1, "should have added");
    let item = q.get().await.unwrap();
    q.done(&item);
    // Step past the next heartbeat: nothing is added again.
    step(10 * 1000 * MS).await;
    step(30 * MS).await;
    assert_eq!(q.len(), 0, "added to queue");
}

/// client-go `TestDeduping`: one entry per item; the earliest time wins.
#[tokio::test(start_paused = true)]
async fn test_deduping() {
    let q = DelayingQueue::<&str>::new();
    q.add_after("foo", 50 * MS);
    q.add_after("foo", 70 * MS);
    waiting_loop_turn().await;
    assert_eq!(q.len(), 0);
    // At 60 ms the first request fired.
    step(60 * MS).await;
    assert_eq!(q.len(), 1);
    let item = q.get().await.unwrap();
    q.done(&item);
    // At 80 ms the second (later) request was merged away.
    step(20 * MS).await;
    assert_eq!(q.len(), 0);

    // The other order: the earlier request moves the entry forward.
    q.add_after("foo", 50 * MS);
    q.add_after("foo", 30 * MS);
    waiting_loop_turn().await;
    assert_eq!(q.len(), 0);
    step(40 * MS).await;
    assert_eq!(q.len(), 1);
    let item = q.get().await.unwrap();
    q.done(&item);
    step(20 * MS).await;
    assert_eq!(q.len(), 0);
}

/// client-go `TestAddTwoFireEarly`.
#[tokio::test(start_paused = true)]
async fn test_add_two_fire_early() {
    let q = DelayingQueue::<&str>::new();
    q.add_after("foo", 1000 * MS);
    q.add_after("bar", 50 * MS);
    waiting_loop_turn().await;
    assert_eq!(q.len(), 0);
    step(60 * MS).await;
    assert_eq!(q.len(), 1);
    let item = q.get().await.unwrap();
    assert_eq!(item, "bar");
    q.done(&item);
    q.add_after("baz", 2000 * MS);
    step(1000 * MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("foo"));
    step(2000 * MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("baz"));
}

/// client-go `TestCopyShifting`: items enter the queue in ready-time order.
#[tokio::test(start_paused = true)]
async fn test_copy_shifting() {
    let q = DelayingQueue::<&str>::new();
    q.add_after("foo", 1000 * MS);
    q.add_after("bar", 500 * MS);
    q.add_after("baz", 250 * MS);
    waiting_loop_turn().await;
    assert_eq!(q.len(), 0);
    step(2000 * MS).await;
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

/// client-go `TestRateLimitingQueue`: per-item exponential delays, independent per item, reset
/// by `forget`. (client-go reads the delaying queue's channel; here each retry is processed
/// and the time it becomes ready is checked.)
#[tokio::test(start_paused = true)]
async fn test_rate_limiting_queue() {
    let q = RateLimitingQueue::<&str>::new(ItemExponentialFailureRateLimiter::new(
        MS,
        Duration::from_secs(1),
    ));

    async fn ready_after(q: &RateLimitingQueue<&'static str>, item: &'static str, d: Duration) {
        q.add_rate_limited(item);
        step(d - Duration::from_micros(1)).await;
        assert_eq!(q.len(), 0, "{item} ready before {d:?}");
        step(Duration::from_micros(1)).await;
        assert_eq!(q.len(), 1, "{item} not ready at {d:?}");
        let got = q.get().await.unwrap();
        assert_eq!(got, item);
        q.done(&got);
    }

    ready_after(&q, "one", MS).await;
    ready_after(&q, "one", 2 * MS).await;
    assert_eq!(q.num_requeues(&"one"), 2);
    ready_after(&q, "two", MS).await;
    ready_after(&q, "two", 2 * MS).await;
    q.forget(&"one");
    assert_eq!(q.num_requeues(&"one"), 0);
    ready_after(&q, "one", MS).await;
}
