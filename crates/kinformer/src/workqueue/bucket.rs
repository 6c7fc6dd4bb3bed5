//! The overall token bucket (client-go's `TypedBucketRateLimiter`, over golang.org/x/time's
//! `rate.Limiter`).
//!
//! The bucket holds at most `burst` tokens, starts full and refills at `qps` tokens a second.
//! Each retry *reserves* a token: while tokens are left the delay is zero; after that the
//! token count goes negative, so every later reservation waits behind the earlier ones (with
//! 10 qps and a burst of 100, calls at one instant wait 0 s a hundred times, then 0.1 s,
//! 0.2 s, ...). Reservations are never cancelled.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::clock::{Clock, default_clock};
use super::queue::QueueItem;
use super::rate_limiter::{ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimiter};

/// x/time's `rate.InfDuration` (`math.MaxInt64` nanoseconds, about 292 years): the delay of a
/// reservation that can never be served.
///
/// Deliberate difference: none in value; Go returns it as a `time.Duration` and so does this
/// crate (a [`DelayingQueue`](super::DelayingQueue) given it waits about a century, i.e. never
/// in practice).
pub const INF_DURATION: Duration = Duration::from_nanos(i64::MAX as u64);

struct Bucket {
    tokens: f64,
    /// When `tokens` was last computed.
    last: Option<Instant>,
}

/// A token bucket shared by every item: `qps` a second, bursts of `burst` (x/time's
/// `rate.Limiter` with `Reserve().Delay()`, as client-go's `TypedBucketRateLimiter` uses it).
///
/// * an infinite `qps` ([`f64::INFINITY`], x/time's `rate.Inf`) is no limit at all: every
///   delay is zero, whatever the burst;
/// * a `burst` of 0 with a finite `qps` allows no event: every reservation fails and its
///   delay is [`INF_DURATION`] (x/time: `ok == false`, `Delay() == InfDuration`), leaving the
///   bucket unchanged;
/// * a `qps` of zero or below never refills: once the burst is spent, reservations still
///   succeed (and queue up) but wait [`INF_DURATION`];
/// * delays are computed to the nanosecond with x/time's arithmetic:
///   `tokensFromDuration(d) = d.Seconds() * qps` and
///   `durationFromTokens(n) = Duration((n / qps) * 1e9)` (truncated; `InfDuration` past
///   `MaxInt64`).
///
/// Deliberate difference: a NaN `qps` (meaningless in Go) is treated as zero.
pub struct BucketRateLimiter {
    qps: f64,
    burst: u32,
    clock: Arc<dyn Clock>,
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
    /// A full bucket of `burst` tokens refilled at `qps` a second, on Tokio's clock (see the
    /// type's docs for infinite, zero and negative rates and a zero burst).
    pub fn new(qps: f64, burst: u32) -> Self {
        Self::with_clock(qps, burst, default_clock())
    }

    /// Like [`new`](Self::new), reading the time from `clock` in [`RateLimiter::when`].
    pub fn with_clock(qps: f64, burst: u32, clock: Arc<dyn Clock>) -> Self {
        Self {
            qps: if qps.is_nan() { 0.0 } else { qps },
            burst,
            clock,
            state: Mutex::new(Bucket {
                tokens: f64::from(burst),
                last: None,
            }),
        }
    }

    /// Reserves one token at `now` and returns how long after `now` it may be used (x/time's
    /// `ReserveN(now, 1).DelayFrom(now)`); [`INF_DURATION`] when the reservation fails.
    pub fn reserve_at(&self, now: Instant) -> Duration {
        if self.qps == f64::INFINITY {
            return Duration::ZERO;
        }
        let mut b = self.state.lock();
        // advance(): refill for the time since the last reservation, capped at the burst.
        let last = b.last.map_or(now, |l| l.min(now));
        let tokens =
            (b.tokens + tokens_from_duration(self.qps, now - last)).min(f64::from(self.burst));
        let tokens = tokens - 1.0;
        let wait = if tokens < 0.0 {
            duration_from_tokens(self.qps, -tokens)
        } else {
            Duration::ZERO
        };
        // ok := n <= burst && wait <= maxFutureReserve (InfDuration for Reserve).
        if self.burst < 1 {
            return INF_DURATION;
        }
        b.last = Some(now);
        b.tokens = tokens;
        wait
    }
}

/// x/time's `Limit.tokensFromDuration`: `d.Seconds() * limit`, 0 for a limit ≤ 0.
fn tokens_from_duration(limit: f64, d: Duration) -> f64 {
    if limit <= 0.0 {
        return 0.0;
    }
    // Go's Duration.Seconds(): whole seconds plus the nanosecond remainder / 1e9.
    (d.as_secs() as f64 + f64::from(d.subsec_nanos()) / 1e9) * limit
}

/// x/time's `Limit.durationFromTokens`: `(tokens / limit) * 1e9` nanoseconds, truncated;
/// `InfDuration` for a limit ≤ 0 or past `MaxInt64`.
fn duration_from_tokens(limit: f64, tokens: f64) -> Duration {
    if limit <= 0.0 {
        return INF_DURATION;
    }
    let nanos = (tokens / limit) * 1e9;
    if nanos > i64::MAX as f64 {
        return INF_DURATION;
    }
    Duration::from_nanos(nanos as u64)
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve_at(self.clock.now())
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
