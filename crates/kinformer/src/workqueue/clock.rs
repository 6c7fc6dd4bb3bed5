//! The clock the queues read and sleep on (client-go's `clock.Clock` as `WithClock` takes it).
//!
//! * [`TokioClock`], the default: Tokio's clock, so paused Tokio time (`start_paused`,
//!   `tokio::time::advance`) drives it as before;
//! * [`FakeClock`]: time moves only when the test says so (k8s.io/utils `clock/testing`
//!   `FakeClock`): [`step`](FakeClock::step), [`set_time`](FakeClock::set_time), and every
//!   sleeper whose deadline the fake time reached wakes.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::{sync::Arc, time::Duration};
//! use kinformer::workqueue::{DelayingQueue, FakeClock, QueueConfig};
//!
//! let clock = FakeClock::default();
//! let queue = DelayingQueue::<&str>::with_config(QueueConfig {
//!     clock: Some(Arc::new(clock.clone())),
//!     ..QueueConfig::default()
//! });
//! queue.add_after("a", Duration::from_secs(60));
//! clock.step(Duration::from_secs(61));
//! assert_eq!(queue.get().await, Some("a"));
//! # }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// A sleep handed out by a [`Clock`]: completes once the clock reaches the deadline (it may
/// also complete early, e.g. when a fake clock is dropped; callers re-check the time).
pub type ClockSleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Where a queue or a leader elector reads the time and how it waits for a moment
/// (client-go's `clock.Clock`, reduced to what they use).
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Instant;
    /// A future that completes when the clock reaches `deadline` (at once if it has).
    fn sleep_until(&self, deadline: Instant) -> ClockSleep;
    /// A future that completes `duration` from now. A duration too long to represent sleeps
    /// about a century.
    fn sleep(&self, duration: Duration) -> ClockSleep {
        self.sleep_until(saturating_add(self.now(), duration))
    }
    /// The wall clock, for times written for people to read (a leader elector's
    /// `acquireTime` / `renewTime`); never compared. Default: the system's.
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// `instant + d`, or about a century later when that cannot be represented.
pub(crate) fn saturating_add(instant: Instant, d: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 86_400);
    instant
        .checked_add(d.min(CENTURY))
        .or_else(|| instant.checked_add(Duration::from_secs(86_400)))
        .unwrap_or(instant)
}

/// Tokio's clock (`tokio::time::Instant::now`, `tokio::time::sleep_until`): the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn sleep_until(&self, deadline: Instant) -> ClockSleep {
        Box::pin(tokio::time::sleep_until(deadline))
    }
}

/// The default clock as a shared handle.
pub(crate) fn default_clock() -> Arc<dyn Clock> {
    Arc::new(TokioClock)
}

struct FakeState {
    now: Instant,
    waiters: BTreeMap<(Instant, u64), oneshot::Sender<()>>,
    next_id: u64,
}

/// A clock that moves only when told to (k8s.io/utils `clock/testing.FakeClock`). Clones share
/// the same time. Starts at the Tokio instant it was created at (or the one given).
#[derive(Clone)]
pub struct FakeClock {
    state: Arc<Mutex<FakeState>>,
}

impl fmt::Debug for FakeClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.lock();
        f.debug_struct("FakeClock")
            .field("now", &s.now)
            .field("waiters", &s.waiters.len())
            .finish()
    }
}

impl Default for FakeClock {
    fn default() -> Self {
        Self::new(Instant::now())
    }
}

impl FakeClock {
    /// A fake clock reading `now`.
    pub fn new(now: Instant) -> Self {
        Self {
            state: Arc::new(Mutex::new(FakeState {
                now,
                waiters: BTreeMap::new(),
                next_id: 0,
            })),
        }
    }

    /// Moves the time forward by `d` and wakes the sleepers whose deadline passed
    /// (`FakeClock.Step`).
    pub fn step(&self, d: Duration) {
        let mut s = self.state.lock();
        let now = saturating_add(s.now, d);
        Self::set_locked(&mut s, now);
    }

    /// Sets the time (it may go backwards) and wakes the sleepers whose deadline it reached
    /// (`FakeClock.SetTime`).
    pub fn set_time(&self, t: Instant) {
        Self::set_locked(&mut self.state.lock(), t);
    }

    fn set_locked(s: &mut FakeState, now: Instant) {
        s.now = now;
        let later = s.waiters.split_off(&(now, u64::MAX));
        for (_, waiter) in std::mem::replace(&mut s.waiters, later) {
            let _ = waiter.send(());
        }
    }

    /// Whether anything is sleeping on this clock (`FakeClock.HasWaiters`): lets a test wait
    /// until a queue's timer loop has armed its timer before it steps the time.
    pub fn has_waiters(&self) -> bool {
        self.waiters() > 0
    }

    /// How many live sleeps wait on this clock.
    pub fn waiters(&self) -> usize {
        let mut s = self.state.lock();
        s.waiters.retain(|_, w| !w.is_closed());
        s.waiters.len()
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        self.state.lock().now
    }
    fn sleep_until(&self, deadline: Instant) -> ClockSleep {
        let mut s = self.state.lock();
        if deadline <= s.now {
            return Box::pin(std::future::ready(()));
        }
        // Abandoned sleeps (a timer loop re-arms on every wake-up) are pruned as they pile up.
        if s.waiters.len() >= 64 && s.waiters.len().is_power_of_two() {
            s.waiters.retain(|_, w| !w.is_closed());
        }
        let (tx, rx) = oneshot::channel();
        let id = s.next_id;
        s.next_id += 1;
        s.waiters.insert((deadline, id), tx);
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// k8s.io/utils `FakeClock`: `Step` and `SetTime` move the time and fire exactly the
    /// sleepers whose deadline was reached; a time going backwards fires nothing.
    #[tokio::test]
    async fn fake_clock_fires_sleepers_when_time_passes_their_deadline() {
        let start = Instant::now();
        let clock = FakeClock::new(start);
        let mut early = clock.sleep_until(start + Duration::from_secs(1));
        let mut late = clock.sleep(Duration::from_secs(5));
        let noop = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&noop);
        assert!(clock.has_waiters());
        assert_eq!(clock.waiters(), 2);
        clock.step(Duration::from_millis(999));
        assert!(early.as_mut().poll(&mut cx).is_pending());
        clock.step(Duration::from_millis(1));
        assert_eq!(clock.now(), start + Duration::from_secs(1));
        assert!(early.as_mut().poll(&mut cx).is_ready());
        assert!(late.as_mut().poll(&mut cx).is_pending());
        clock.set_time(start);
        assert!(late.as_mut().poll(&mut cx).is_pending());
        assert_eq!(clock.waiters(), 1);
        clock.set_time(start + Duration::from_secs(60));
        assert!(late.as_mut().poll(&mut cx).is_ready());
        assert!(!clock.has_waiters());
        // A deadline already reached does not wait; a dropped sleep is no waiter.
        assert!(clock.sleep_until(start).as_mut().poll(&mut cx).is_ready());
        drop(clock.sleep(Duration::from_secs(1)));
        assert!(!clock.has_waiters());
    }

    /// The default clock is Tokio's, so paused Tokio time drives it.
    #[tokio::test(start_paused = true)]
    async fn tokio_clock_follows_paused_time() {
        let clock = TokioClock;
        let t0 = clock.now();
        clock.sleep(Duration::from_secs(3600)).await;
        assert_eq!(clock.now() - t0, Duration::from_secs(3600));
    }
}
