//! The Reflector's exponential backoff (client-go's `wait.Backoff` with `DelayWithReset`) and
//! the deadline for retrying internal errors (client-go's `retryWithDeadline`).

use std::time::Duration;

use tokio::time::Instant;

/// Backoff parameters: client-go's `wait.Backoff` plus the reset interval.
///
/// The defaults are client-go's Reflector values: 800 ms, ×2, jitter 1.0, capped at 30 s,
/// reset after 2 minutes without a backoff.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffConfig {
    /// The first delay.
    pub initial: Duration,
    /// The largest base delay (jitter may add up to `jitter × cap` on top, as in client-go).
    pub cap: Duration,
    /// Each delay's base is the previous one times this.
    pub factor: f64,
    /// Each delay is `base × (1 + jitter × r)` with `r` uniform in `[0, 1)`; 0 disables jitter.
    pub jitter: f64,
    /// After this long without anyone asking for a delay, the next delay starts over at
    /// `initial`.
    pub reset_after: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            cap: Duration::from_secs(30),
            factor: 2.0,
            jitter: 1.0,
            reset_after: Duration::from_secs(120),
        }
    }
}

/// Stateful exponential backoff.
///
/// Differs from client-go's `backoffManager` in one respect, on purpose: client-go resets every
/// `resetInterval` measured from the previous *reset*, so a steady stream of errors is reset
/// periodically; here the reset happens only after `reset_after` *without errors* (measured from
/// the end of the last delay handed out), so a server that keeps failing keeps being backed off
/// from.
///
/// ```
/// use std::time::Duration;
/// use kinformer::reflector::{Backoff, BackoffConfig};
/// let mut b = Backoff::new(BackoffConfig { jitter: 0.0, ..Default::default() });
/// let now = tokio::time::Instant::now();
/// assert_eq!(b.next_delay(now), Duration::from_millis(800));
/// assert_eq!(b.next_delay(now), Duration::from_millis(1600));
/// ```
#[derive(Debug, Clone)]
pub struct Backoff {
    config: BackoffConfig,
    base: Duration,
    last_delay_end: Option<Instant>,
}

impl Backoff {
    /// A fresh backoff.
    pub fn new(config: BackoffConfig) -> Self {
        Self {
            config,
            base: config.initial,
            last_delay_end: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &BackoffConfig {
        &self.config
    }

    /// The next delay, with jitter drawn from the thread RNG.
    pub fn next_delay(&mut self, now: Instant) -> Duration {
        self.next_delay_with(now, rand::random::<f64>())
    }

    /// The next delay, with the jitter's random draw `r` in `[0, 1)` given (for tests).
    pub fn next_delay_with(&mut self, now: Instant, r: f64) -> Duration {
        if let Some(end) = self.last_delay_end
            && now.saturating_duration_since(end) >= self.config.reset_after
        {
            self.base = self.config.initial;
        }
        let base = self.base;
        let next = base.mul_f64(self.config.factor.max(1.0));
        self.base = if next > self.config.cap {
            self.config
                .cap
                .max(self.config.initial.min(self.config.cap))
        } else {
            next
        };
        let delay = if self.config.jitter > 0.0 {
            base + base.mul_f64(self.config.jitter * r.clamp(0.0, 1.0))
        } else {
            base
        };
        self.last_delay_end = Some(now + delay);
        delay
    }
}

/// client-go's `retryWithDeadline`: internal errors are retried without a relist for up to
/// `max_duration` after the first one; an error-free minute starts a new window.
#[derive(Debug, Clone)]
pub(crate) struct RetryWithDeadline {
    max_duration: Duration,
    reset_period: Duration,
    first_error: Option<Instant>,
    last_error: Option<Instant>,
}

impl RetryWithDeadline {
    pub(crate) fn new(max_duration: Duration, reset_period: Duration) -> Self {
        Self {
            max_duration,
            reset_period,
            first_error: None,
            last_error: None,
        }
    }

    /// Records the outcome of one watch: `retryable` is whether it ended with an internal error.
    pub(crate) fn after(&mut self, retryable: bool, now: Instant) {
        if !retryable {
            return;
        }
        if let Some(last) = self.last_error
            && now.saturating_duration_since(last) >= self.reset_period
        {
            self.first_error = None;
            self.last_error = None;
        }
        if self.first_error.is_none() {
            self.first_error = Some(now);
        }
        self.last_error = Some(now);
    }

    pub(crate) fn should_retry(&self, now: Instant) -> bool {
        if self.max_duration.is_zero() {
            return false;
        }
        match self.first_error {
            Some(first) => now.saturating_duration_since(first) <= self.max_duration,
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn doubles_from_800ms_to_a_30s_cap() {
        let mut b = Backoff::new(BackoffConfig::default());
        let now = Instant::now();
        let got: Vec<_> = (0..9).map(|_| b.next_delay_with(now, 0.0)).collect();
        assert_eq!(
            got,
            vec![
                ms(800),
                ms(1600),
                ms(3200),
                ms(6400),
                ms(12800),
                ms(25600),
                ms(30000),
                ms(30000),
                ms(30000)
            ]
        );
    }

    #[test]
    fn jitter_adds_up_to_one_base_delay() {
        let mut b = Backoff::new(BackoffConfig::default());
        let now = Instant::now();
        assert_eq!(b.next_delay_with(now, 0.5), ms(1200));
        assert_eq!(
            b.next_delay_with(now, 0.999),
            ms(1600) + ms(1600).mul_f64(0.999)
        );
        for _ in 0..20 {
            let d = b.next_delay(now);
            assert!(d >= ms(3200) && d < ms(60000), "{d:?}");
        }
    }

    #[test]
    fn resets_after_two_minutes_without_errors() {
        let mut b = Backoff::new(BackoffConfig::default());
        let t0 = Instant::now();
        for _ in 0..5 {
            b.next_delay_with(t0, 0.0);
        }
        // the last delay (12.8 s) ends at t0 + 12.8 s; 2 min after that the backoff starts over.
        let before = t0 + ms(12800) + Duration::from_secs(119);
        assert_eq!(b.clone().next_delay_with(before, 0.0), ms(25600));
        let after = t0 + ms(12800) + Duration::from_secs(120);
        assert_eq!(b.next_delay_with(after, 0.0), ms(800));
    }

    #[test]
    fn retry_with_deadline_allows_retries_for_max_duration() {
        let t0 = Instant::now();
        let mut r = RetryWithDeadline::new(Duration::from_secs(30), Duration::from_secs(60));
        r.after(true, t0);
        assert!(r.should_retry(t0 + Duration::from_secs(30)));
        assert!(!r.should_retry(t0 + Duration::from_secs(31)));
        // a quiet minute opens a new window
        r.after(true, t0 + Duration::from_secs(100));
        assert!(r.should_retry(t0 + Duration::from_secs(110)));
        let off = RetryWithDeadline::new(Duration::ZERO, Duration::from_secs(60));
        assert!(!off.should_retry(t0));
    }
}
