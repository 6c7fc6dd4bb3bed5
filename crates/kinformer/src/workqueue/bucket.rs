//! The overall token bucket (client-go's `TypedBucketRateLimiter`, over golang.org/x/time's
//! `rate.Limiter`).
//!
//! The bucket holds at most `burst` tokens, starts full and refills at `qps` tokens a second.
//! Each retry *reserves* a token: while tokens are left the delay is zero; after that the
//! token count goes negative, so every later reservation waits behind the earlier ones (with
//! 10 qps and a burst of 100, calls at one instant wait 0 s a hundred times, then 0.1 s,
//! 0.2 s, ...). Reservations are never cancelled.

use std::fmt;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::queue::QueueItem;
use super::rate_limiter::{ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimiter};

struct Bucket {
    tokens: f64,
    /// When `tokens` was last computed.
    last: Option<Instant>,
}

/// A token bucket shared by every item: `qps` a second, bursts of `burst`.
pub struct BucketRateLimiter {
    qps: f64,
    burst: u32,
    state: Mutex<Bucket>,
}

impl fmt::Debug for BucketRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketRateLimiter")
            .field("qps", &self.qps)
            .field("burst", &self.burst)
            .field("tokens", &self.state.lock().tokens)
            .finish()
    }
}

impl BucketRateLimiter {
    /// A full bucket of `burst` tokens refilled at `qps` a second. A `qps` that is not a
    /// positive finite number means no refill: once the burst is spent, every reservation
    /// waits [`Duration::MAX`] (cap it with a `WithMaxWaitRateLimiter`).
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            qps,
            burst,
            state: Mutex::new(Bucket {
                tokens: f64::from(burst),
                last: None,
            }),
        }
    }

    /// Reserves one token at `now` and returns how long after `now` it may be used (x/time's
    /// `ReserveN(now, 1).DelayFrom(now)`).
    pub fn reserve_at(&self, now: Instant) -> Duration {
        let refills = self.qps.is_finite() && self.qps > 0.0;
        let mut b = self.state.lock();
        // advance(): refill for the time since the last reservation, capped at the burst.
        let last = b.last.map_or(now, |l| l.min(now));
        let mut tokens = b.tokens;
        if refills {
            tokens += (now - last).as_secs_f64() * self.qps;
        }
        tokens = tokens.min(f64::from(self.burst));
        tokens -= 1.0;
        let wait = if tokens >= 0.0 {
            Duration::ZERO
        } else if refills {
            Duration::try_from_secs_f64(-tokens / self.qps).unwrap_or(Duration::MAX)
        } else {
            Duration::MAX
        };
        b.last = Some(now);
        b.tokens = tokens;
        wait
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve_at(Instant::now())
    }
    fn forget(&self, _item: &T) {}
    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// client-go's `DefaultTypedControllerRateLimiter`: per-item exponential backoff from 5 ms to
/// 1000 s, and overall at most 10 retries a second with bursts of 100.
pub fn default_controller_rate_limiter<T: QueueItem>() -> MaxOfRateLimiter<T> {
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ])
}
