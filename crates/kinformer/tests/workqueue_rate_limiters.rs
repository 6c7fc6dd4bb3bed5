//! The rate limiters, ported from client-go `util/workqueue/default_rate_limiters_test.go`
//! (names kept, in snake case), plus the token bucket's reservation semantics (golang.org/x/time
//! `rate`), which client-go does not test.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use kinformer::workqueue::{
    BucketRateLimiter, FakeClock, INF_DURATION, ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter, WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
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

const NS: fn(u64) -> Duration = Duration::from_nanos;

/// x/time's arithmetic to the nanosecond, at 3 qps with a burst of 1:
/// * t0: tokens 1 - 1 = 0 → delay 0;
/// * t0: tokens 0 - 1 = -1 → durationFromTokens(1) = (1 / 3) * 1e9 = 333333333.33… → 333333333 ns;
/// * t0 + 100 ms: tokensFromDuration = 0.1 s * 3 = 0.30000000000000004 (f64), tokens
///   -1 + 0.30000000000000004 - 1 = -1.7 → (1.7 / 3) * 1e9 = 566666666.66… → 566666666 ns.
#[test]
fn bucket_delays_are_x_time_nanoseconds_at_3_qps() {
    let bucket = BucketRateLimiter::new(3.0, 1);
    let t0 = Instant::now();
    assert_eq!(bucket.reserve_at(t0), Duration::ZERO);
    assert_eq!(bucket.reserve_at(t0), NS(333_333_333));
    assert_eq!(bucket.reserve_at(t0 + 100 * MS), NS(566_666_666));
}

/// 7 qps, burst 2, on a fake clock through `when`:
/// * t0 three times: tokens 2→1 (0), 1→0 (0), 0→-1 → (1 / 7) * 1e9 = 142857142.85… → 142857142 ns;
/// * t0 + 1.5 s: -1 + 1.5 * 7 = 9.5, capped at the burst 2, - 1 = 1 → 0; again 1 → 0 → 0;
/// * 123456789 ns later: 0.123456789 * 7 = 0.864197523, 0 + 0.864197523 - 1 =
///   `-0.13580247700000003` → (0.135802477… / 7) * 1e9 = 19400353.85… → 19400353 ns.
#[test]
fn bucket_refills_by_x_time_arithmetic_on_a_fake_clock() {
    let clock = FakeClock::default();
    let bucket = BucketRateLimiter::with_clock(7.0, 2, std::sync::Arc::new(clock.clone()));
    let when = |b: &BucketRateLimiter| RateLimiter::<&str>::when(b, &"any");
    assert_eq!(when(&bucket), Duration::ZERO);
    assert_eq!(when(&bucket), Duration::ZERO);
    assert_eq!(when(&bucket), NS(142_857_142));
    clock.step(Duration::from_millis(1500));
    assert_eq!(when(&bucket), Duration::ZERO);
    assert_eq!(when(&bucket), Duration::ZERO);
    clock.step(NS(123_456_789));
    assert_eq!(when(&bucket), NS(19_400_353));
}

/// x/time: `Reserve` with a burst of 0 and a finite rate is not ok, so client-go's
/// `Reserve().Delay()` is `InfDuration`, every time, and the bucket does not change.
#[test]
fn bucket_with_zero_burst_allows_no_event() {
    let bucket = BucketRateLimiter::new(1000.0, 0);
    let t0 = Instant::now();
    for s in [0, 1, 3600] {
        assert_eq!(bucket.reserve_at(t0 + Duration::from_secs(s)), INF_DURATION);
    }
    assert_eq!(INF_DURATION, Duration::from_nanos(i64::MAX as u64));
}

/// x/time: an infinite limit (`rate.Inf`) is no limit, whatever the burst.
#[test]
fn bucket_with_infinite_rate_never_waits() {
    for burst in [0, 1, 100] {
        let bucket = BucketRateLimiter::new(f64::INFINITY, burst);
        let t0 = Instant::now();
        for _ in 0..1000 {
            assert_eq!(bucket.reserve_at(t0), Duration::ZERO, "burst {burst}");
        }
    }
}

/// x/time: a limit of zero (or below) never refills; after the burst a reservation is still
/// ok but waits `InfDuration`; durationFromTokens past `MaxInt64` ns is `InfDuration` too.
#[test]
fn bucket_without_refill_or_with_huge_delays_waits_inf_duration() {
    for qps in [0.0, -5.0, f64::NAN] {
        let bucket = BucketRateLimiter::new(qps, 2);
        let t0 = Instant::now();
        assert_eq!(bucket.reserve_at(t0), Duration::ZERO);
        assert_eq!(
            bucket.reserve_at(t0 + Duration::from_secs(9)),
            Duration::ZERO
        );
        assert_eq!(
            bucket.reserve_at(t0 + Duration::from_secs(99)),
            INF_DURATION
        );
    }
    // (1 / 1e-12) * 1e9 = 1e21 ns > MaxInt64.
    let slow = BucketRateLimiter::new(1e-12, 1);
    let t0 = Instant::now();
    assert_eq!(slow.reserve_at(t0), Duration::ZERO);
    assert_eq!(slow.reserve_at(t0), INF_DURATION);
}

/// client-go: `float64(base) * 2^exp` past `MaxInt64` ns gives `max` (no wrap), also when
/// `max` itself is huge; right below it the exact product is returned.
#[test]
fn exponential_backoff_overflow_clamps_to_max() {
    let limiter = ItemExponentialFailureRateLimiter::new(Duration::from_secs(1), Duration::MAX);
    for exp in 0..34u32 {
        // 1e9 * 2^33 = 8.59e18 < 9.22e18: still exact.
        assert_eq!(
            limiter.when(&"k"),
            Duration::from_secs(1 << exp),
            "exp {exp}"
        );
    }
    // 1e9 * 2^34 = 1.7e19 > MaxInt64: clamped to max, however many failures follow.
    for _ in 0..2000 {
        assert_eq!(limiter.when(&"k"), Duration::MAX);
    }
    assert_eq!(limiter.num_requeues(&"k"), 2034);
    let zero = ItemExponentialFailureRateLimiter::new(Duration::ZERO, Duration::from_secs(1));
    for _ in 0..1100 {
        assert_eq!(zero.when(&"k"), Duration::ZERO);
    }
}

/// client-go's `MaxOf` of no limiter: `When` 0, `NumRequeues` 0; fast-slow switches after
/// exactly `maxFastAttempts` (the 4th call of 3 is slow); with-max-wait caps at exactly max.
#[test]
fn limiter_boundaries_match_client_go() {
    let none = MaxOfRateLimiter::<&str>::new(vec![]);
    assert_eq!(none.when(&"a"), Duration::ZERO);
    assert_eq!(none.num_requeues(&"a"), 0);
    let fs = ItemFastSlowRateLimiter::new(MS, Duration::from_secs(1), 0);
    assert_eq!(
        fs.when(&"a"),
        Duration::from_secs(1),
        "0 fast attempts: slow at once"
    );
    let capped = WithMaxWaitRateLimiter::new(
        Box::new(ItemExponentialFailureRateLimiter::<&str>::new(
            4 * MS,
            Duration::MAX,
        )),
        8 * MS,
    );
    assert_eq!(capped.when(&"a"), 4 * MS);
    assert_eq!(capped.when(&"a"), 8 * MS);
    assert_eq!(capped.when(&"a"), 8 * MS);
    assert_eq!(capped.num_requeues(&"a"), 3);
}
