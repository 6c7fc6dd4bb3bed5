//! The rate limiters, ported from client-go `util/workqueue/default_rate_limiters_test.go`
//! (names kept, in snake case), plus the token bucket's reservation semantics (golang.org/x/time
//! `rate`), which client-go does not test.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use kinformer::workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxOfRateLimiter, RateLimiter, WithMaxWaitRateLimiter, default_controller_rate_limiter,
};
use tokio::time::Instant;

const MS: Duration = Duration::from_millis(1);

/// client-go `TestItemExponentialFailureRateLimiter`.
#[test]
fn test_item_exponential_failure_rate_limiter() {
    let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
    for want in [1, 2, 4, 8, 16] {
        assert_eq!(limiter.when(&"one"), want * MS);
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), MS);
    assert_eq!(limiter.when(&"two"), 2 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), MS);
}

/// client-go `TestItemExponentialFailureRateLimiterOverFlow`: huge exponents saturate at the
/// maximum instead of overflowing.
#[test]
fn test_item_exponential_failure_rate_limiter_over_flow() {
    let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1000));
    for _ in 0..5 {
        limiter.when(&"one");
    }
    assert_eq!(limiter.when(&"one"), 32 * MS);
    for _ in 0..1000 {
        limiter.when(&"overflow1");
    }
    assert_eq!(limiter.when(&"overflow1"), Duration::from_secs(1000));

    let limiter = ItemExponentialFailureRateLimiter::new(
        Duration::from_secs(60),
        Duration::from_secs(3_600_000),
    );
    for _ in 0..2 {
        limiter.when(&"two");
    }
    assert_eq!(limiter.when(&"two"), Duration::from_secs(240));
    for _ in 0..1000 {
        limiter.when(&"overflow2");
    }
    assert_eq!(limiter.when(&"overflow2"), Duration::from_secs(3_600_000));
}

/// The script client-go runs on a fast/slow limiter (5 ms for three tries, then `slow`): "one"
/// five times, "two" twice, then "one" forgotten.
fn check_fast_then_slow(limiter: &dyn RateLimiter<&'static str>, slow: Duration) {
    for want in [5 * MS, 5 * MS, 5 * MS, slow, slow] {
        assert_eq!(limiter.when(&"one"), want);
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), 5 * MS);
}

/// client-go `TestItemFastSlowRateLimiter`.
#[test]
fn test_item_fast_slow_rate_limiter() {
    let limiter = ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(10), 3);
    check_fast_then_slow(&limiter, Duration::from_secs(10));
}

/// client-go `TestMaxOfRateLimiter`: the fast/slow limiter dominates the exponential one.
#[test]
fn test_max_of_rate_limiter() {
    let limiter = MaxOfRateLimiter::new(vec![
        Box::new(ItemFastSlowRateLimiter::new(
            5 * MS,
            Duration::from_secs(3),
            3,
        )),
        Box::new(ItemExponentialFailureRateLimiter::new(
            MS,
            Duration::from_secs(1),
        )),
    ]);
    check_fast_then_slow(&limiter, Duration::from_secs(3));
}

/// client-go's test `StepRateLimiter`: `base` for the first `threshold` calls overall, then
/// `max`.
struct StepRateLimiter {
    count: AtomicU32,
    threshold: u32,
    base: Duration,
    max: Duration,
}

impl RateLimiter<u32> for StepRateLimiter {
    fn when(&self, _item: &u32) -> Duration {
        if self.count.fetch_add(1, Ordering::SeqCst) < self.threshold {
            self.base
        } else {
            self.max
        }
    }
    fn forget(&self, _item: &u32) {
        self.count.store(0, Ordering::SeqCst);
    }
    fn num_requeues(&self, _item: &u32) -> u32 {
        self.count.load(Ordering::SeqCst)
    }
}

/// client-go `TestWithMaxWaitRateLimiter`.
#[test]
fn test_with_max_wait_rate_limiter() {
    let limiter = WithMaxWaitRateLimiter::new(
        Box::new(StepRateLimiter {
            count: AtomicU32::new(0),
            threshold: 100,
            base: 5 * MS,
            max: Duration::from_secs(1000),
        }),
        Duration::from_secs(500),
    );
    for i in 0..100 {
        assert_eq!(limiter.when(&i), 5 * MS, "item {i}");
    }
    for i in 100..200 {
        assert_eq!(limiter.when(&i), Duration::from_secs(500), "item {i}");
    }
}

/// Not in client-go: a full bucket of 100 at 10 qps gives 100 immediate tokens, then every
/// later reservation at the same instant waits 100 ms longer than the one before.
#[test]
fn bucket_reservations_queue_behind_each_other() {
    let bucket = BucketRateLimiter::new(10.0, 100);
    let now = Instant::now();
    for i in 0..100 {
        assert_eq!(bucket.reserve_at(now), Duration::ZERO, "token {i}");
    }
    for i in 1..=5u32 {
        let d = bucket.reserve_at(now);
        assert!(
            (d.as_secs_f64() - 0.1 * f64::from(i)).abs() < 1e-9,
            "reservation {i}: {d:?}"
        );
    }
    // 0.5 s later the debt (-5 tokens) is paid off: the next one waits 100 ms again.
    let later = now + Duration::from_millis(500);
    assert!((bucket.reserve_at(later).as_secs_f64() - 0.1).abs() < 1e-9);
    // After a long idle time the bucket is full again, but never fuller than the burst.
    let idle = later + Duration::from_secs(3600);
    for _ in 0..100 {
        assert_eq!(bucket.reserve_at(idle), Duration::ZERO);
    }
    assert!(bucket.reserve_at(idle) > Duration::ZERO);
}

/// Not in client-go: a bucket without refill waits "forever" once spent, and `WithMaxWait` caps it.
#[test]
fn bucket_without_refill_is_capped_by_with_max_wait() {
    let capped = WithMaxWaitRateLimiter::new(
        Box::new(BucketRateLimiter::new(0.0, 1)),
        Duration::from_secs(7),
    );
    assert_eq!(capped.when(&"a"), Duration::ZERO);
    assert_eq!(capped.when(&"a"), Duration::from_secs(7));
}

/// Not in client-go: the default controller limiter's per-item sequence (5 ms doubling to the
/// 1000 s cap from the 19th failure) and its bucket (no per-item history).
#[tokio::test(start_paused = true)]
async fn default_controller_rate_limiter_sequence() {
    let limiter = default_controller_rate_limiter::<&str>();
    let mut d = 5 * MS;
    for n in 0..18 {
        assert_eq!(limiter.when(&"k"), d, "failure {}", n + 1);
        d *= 2;
    }
    // 18 failures used 18 of the 100 burst tokens, so the bucket does not dominate yet.
    assert_eq!(limiter.when(&"k"), Duration::from_secs(1000));
    assert_eq!(limiter.num_requeues(&"k"), 19);
    limiter.forget(&"k");
    assert_eq!(limiter.num_requeues(&"k"), 0);
    assert_eq!(limiter.when(&"k"), 5 * MS);
}
