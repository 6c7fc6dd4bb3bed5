//! Waiting without polling, shared by [`DeltaFifo`](super::DeltaFifo) and
//! [`RealFifo`](super::RealFifo): the wake-up loop of `pop`, and the soft bound on what a queue
//! holds that a Reflector awaits before reading the next watch event.

use std::pin::pin;

use tokio::sync::Notify;

/// Calls `ready` until it yields a value, sleeping on `notify` in between. The notification is
/// armed before `ready` runs, so a wake-up sent after `ready` saw nothing is never missed.
/// Cancel-safe: dropping the future consumes nothing.
pub(crate) async fn wait_until<T>(notify: &Notify, mut ready: impl FnMut() -> Option<T>) -> T {
    loop {
        let mut notified = pin!(notify.notified());
        notified.as_mut().enable();
        if let Some(value) = ready() {
            return value;
        }
        notified.await;
    }
}

/// A soft bound on how much a queue holds. Writes never block or fail;
/// [`Room::wait`] waits while the queue holds at least `max`, until pops bring it down to half
/// of that, or the queue closes.
#[derive(Debug)]
pub(crate) struct Room {
    max: Option<usize>,
    notify: Notify,
}

impl Room {
    /// A bound of `max` (unbounded when `None`).
    pub(crate) fn new(max: Option<usize>) -> Self {
        Self {
            max,
            notify: Notify::new(),
        }
    }

    /// The queue now holds `held` after a pop: wakes the waiters once it is down to half.
    pub(crate) fn popped(&self, held: usize) {
        if self.max.is_some_and(|max| held <= max / 2) {
            self.notify.notify_waiters();
        }
    }

    /// The queue closed: wakes every waiter.
    pub(crate) fn close(&self) {
        self.notify.notify_waiters();
    }

    /// Waits while `state()` reports (held, closed) with `held >= max` and not closed. Returns at
    /// once without a bound. Cancel-safe.
    pub(crate) async fn wait(&self, state: impl Fn() -> (usize, bool)) {
        let Some(max) = self.max else {
            return;
        };
        wait_until(&self.notify, || {
            let (held, closed) = state();
            (held < max || closed).then_some(())
        })
        .await;
    }
}
