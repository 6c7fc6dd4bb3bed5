//! Rate limiters: how long an item should wait before it is retried (client-go's
//! `default_rate_limiters.go`).

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use parking_lot::Mutex;

use super::queue::QueueItem;

/// Decides how long an item waits before its next retry (client-go's `TypedRateLimiter`).
pub trait RateLimiter<T>: Send + Sync {
    /// How long `item` should wait now. This records a retry (it changes the limiter's state).
    fn when(&self, item: &T) -> Duration;
    /// Forgets `item`'s history (call it when the item succeeded).
    fn forget(&self, item: &T);
    /// How many times `item` has been retried since it was last forgotten.
    fn num_requeues(&self, item: &T) -> u32;
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<R> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }
    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

/// Per-item exponential backoff: `base * 2^failures`, capped at `max` (client-go's
/// `TypedItemExponentialFailureRateLimiter`). The first call returns `base`; the product is
/// computed in `f64` nanoseconds as in Go, so a product past `i64::MAX` nanoseconds (however
/// many failures) gives `max` rather than overflowing.
///
/// Deliberate difference: a zero `base` always gives zero (Go's `0 * +Inf` is NaN after 1024
/// failures and converts to a negative duration).
pub struct ItemExponentialFailureRateLimiter<T> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T> fmt::Debug for ItemExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .finish()
    }
}

impl<T: QueueItem> ItemExponentialFailureRateLimiter<T> {
    /// Backoff from `base` doubling up to `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: QueueItem> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = {
            let mut f = self.failures.lock();
            let n = f.entry(item.clone()).or_insert(0);
            let exp = *n;
            *n = n.saturating_add(1);
            exp
        };
        if self.base.is_zero() {
            // client-go computes 0 * 2^exp, which is NaN from exp = 1024 on; zero it is.
            return Duration::ZERO;
        }
        // As client-go: computed in floating point so that large exponents saturate to `max`
        // instead of overflowing.
        let backoff = self.base.as_nanos() as f64 * 2f64.powi(exp.min(i32::MAX as u32) as i32);
        if !backoff.is_finite() || backoff > i64::MAX as f64 {
            return self.max;
        }
        Duration::from_nanos(backoff as u64).min(self.max)
    }
    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

/// `fast` for the first `max_fast_attempts` retries of an item, then `slow` (client-go's
/// `TypedItemFastSlowRateLimiter`).
pub struct ItemFastSlowRateLimiter<T> {
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T> fmt::Debug for ItemFastSlowRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .finish()
    }
}

impl<T: QueueItem> ItemFastSlowRateLimiter<T> {
    /// `fast` for `max_fast_attempts` retries, then `slow`.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        Self {
            fast,
            slow,
            max_fast_attempts,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: QueueItem> RateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let mut f = self.failures.lock();
        let n = f.entry(item.clone()).or_insert(0);
        *n = n.saturating_add(1);
        if *n <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }
    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

/// The longest delay of several limiters (client-go's `TypedMaxOfRateLimiter`). Every limiter's
/// `when` is called, so each one records the retry.
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> MaxOfRateLimiter<T> {
    /// The maximum of `limiters`.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or_default()
    }
    fn forget(&self, item: &T) {
        for l in &self.limiters {
            l.forget(item);
        }
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// Caps another limiter's delay at `max_delay` (client-go's `TypedWithMaxWaitRateLimiter`),
/// e.g. to bound a bucket's ever-growing reservations.
pub struct WithMaxWaitRateLimiter<T> {
    limiter: Box<dyn RateLimiter<T>>,
    max_delay: Duration,
}

impl<T> fmt::Debug for WithMaxWaitRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WithMaxWaitRateLimiter")
            .field("max_delay", &self.max_delay)
            .finish()
    }
}

impl<T> WithMaxWaitRateLimiter<T> {
    /// `limiter`, never waiting longer than `max_delay`.
    pub fn new(limiter: Box<dyn RateLimiter<T>>, max_delay: Duration) -> Self {
        Self { limiter, max_delay }
    }
}

impl<T> RateLimiter<T> for WithMaxWaitRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiter.when(item).min(self.max_delay)
    }
    fn forget(&self, item: &T) {
        self.limiter.forget(item)
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }
}

/// client-go's `DefaultTypedItemBasedRateLimiter`: exponential backoff from 1 ms to 1000 s.
pub fn default_item_based_rate_limiter<T: QueueItem>() -> ItemExponentialFailureRateLimiter<T> {
    ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1000))
}
