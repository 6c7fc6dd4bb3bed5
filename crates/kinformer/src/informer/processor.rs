//! Fans notifications out to listeners (client-go's `sharedProcessor`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

use super::event::Event;
use super::listener::{Listener, ListenerShared, MAX_LISTENER_BACKLOG, Room};

/// The listeners of one informer. Distribution never blocks: each listener queues; the
/// process loop waits for room ([`Processor::wait_for_room`]) before it pops the next item.
pub(crate) struct Processor<K> {
    inner: RwLock<Inner<K>>,
    tasks: TaskTracker,
    /// Signalled when a listener's backlog falls to the level waited for, or a listener goes
    /// away.
    room: Arc<Room>,
}

struct Inner<K> {
    listeners: Vec<Listener<K>>,
    started: bool,
    /// Listeners detached to drain what they were sent ([`Processor::detach_listener`]),
    /// until they finish; stopped by [`Processor::shutdown`].
    draining: Vec<Arc<ListenerShared>>,
}

impl<K: Send + Sync + 'static> Processor<K> {
    pub(crate) fn new() -> Self {
        Self {
            inner: RwLock::new(Inner {
                listeners: Vec::new(),
                started: false,
                draining: Vec::new(),
            }),
            tasks: TaskTracker::new(),
            room: Arc::default(),
        }
    }

    /// Waits until every listener has room for `need` more live notifications (`need` is
    /// clamped to `1..=MAX_LISTENER_BACKLOG`), and returns the room the fullest listener has
    /// left (at least `need`; [`MAX_LISTENER_BACKLOG`] without listeners). A listener without
    /// room is waited for until it is down to half the bound (or less, if `need` asks for
    /// more), so the processor does not wake for every notification handled. Cancel-safe.
    pub(crate) async fn wait_for_room(&self, need: usize) -> usize {
        let need = need.clamp(1, MAX_LISTENER_BACKLOG);
        let wake_at = (MAX_LISTENER_BACKLOG - need).min(MAX_LISTENER_BACKLOG / 2);
        loop {
            let mut notified = std::pin::pin!(self.room.notify.notified());
            notified.as_mut().enable();
            let fullest = self.fullest();
            if fullest + need <= MAX_LISTENER_BACKLOG {
                return MAX_LISTENER_BACKLOG - fullest;
            }
            self.room.wake_at.store(wake_at, Ordering::Release);
            // A listener may have crossed the level between the check and the store.
            if self.fullest() <= wake_at {
                continue;
            }
            notified.await;
        }
    }

    /// The largest live backlog of any listener.
    fn fullest(&self) -> usize {
        self.inner
            .read()
            .listeners
            .iter()
            .map(|l| l.shared.live())
            .max()
            .unwrap_or(0)
    }

    /// The ids of the listeners registered now, for [`distribute_to`](Self::distribute_to),
    /// and of those among them taking part in the current resync round.
    pub(crate) fn recipients(&self, is_sync: bool) -> Vec<u64> {
        self.inner
            .read()
            .listeners
            .iter()
            .filter(|l| !is_sync || l.syncing.load(Ordering::Acquire))
            .map(|l| l.id)
            .collect()
    }

    /// Adds a listener; starts its consumer at once if the processor runs. `prime` runs under
    /// the same lock, before any other notification can reach the listener.
    pub(crate) fn add_listener(&self, listener: Listener<K>, prime: impl FnOnce(&Listener<K>)) {
        let mut inner = self.inner.write();
        prime(&listener);
        if inner.started {
            listener.start(&self.tasks);
        }
        inner.listeners.push(listener);
    }

    /// Removes a listener: nothing more is delivered to it. Idempotent; false if unknown.
    pub(crate) fn remove_listener(&self, id: u64) -> bool {
        let removed = {
            let mut inner = self.inner.write();
            let Some(pos) = inner.listeners.iter().position(|l| l.id == id) else {
                return false;
            };
            inner.listeners.remove(pos)
        };
        stop_listener(&removed);
        self.room.notify.notify_waiters();
        true
    }

    /// Detaches a listener to drain: nothing more is sent to it, and it no longer holds the
    /// processor back, but its consumer still gets what was queued for it, then ends (its
    /// queue's sender goes with the listener). A listener whose consumer never started is
    /// stopped instead: nothing would deliver its queue. Idempotent; false if unknown.
    pub(crate) fn detach_listener(&self, id: u64) -> bool {
        let detached = {
            let mut inner = self.inner.write();
            inner.draining.retain(|d| !d.finished.is_cancelled());
            let Some(pos) = inner.listeners.iter().position(|l| l.id == id) else {
                return false;
            };
            let l = inner.listeners.remove(pos);
            if l.never_started() {
                stop_listener(&l);
            } else {
                inner.draining.push(l.shared.clone());
            }
            l
        };
        drop(detached);
        self.room.notify.notify_waiters();
        true
    }

    /// The wake-up every listener of this processor signals when its backlog falls to the
    /// level the processor waits for.
    pub(crate) fn room(&self) -> Arc<Room> {
        self.room.clone()
    }

    /// Sends `ev` to every listener, or, for a resync (`is_sync`), only to those whose resync
    /// is due in this round.
    pub(crate) fn distribute(&self, ev: &Event<K>, is_sync: bool) {
        let inner = self.inner.read();
        for l in &inner.listeners {
            if !is_sync || l.syncing.load(Ordering::Acquire) {
                l.add(ev.clone());
            }
        }
    }

    /// Sends `ev` to the listeners among `recipients` still registered (a relist's or resync's
    /// later chunks: only to those that were there when the cache changed), or, for an update
    /// that changed nothing (`is_sync`), only to those among them in the current resync round.
    pub(crate) fn distribute_to(&self, ev: &Event<K>, recipients: &[u64], is_sync: bool) {
        let inner = self.inner.read();
        for l in &inner.listeners {
            if recipients.contains(&l.id) && (!is_sync || l.syncing.load(Ordering::Acquire)) {
                l.add(ev.clone());
            }
        }
    }

    /// client-go's `shouldResync`: marks which listeners take part in this resync round and
    /// reports whether any does.
    pub(crate) fn should_resync(&self) -> bool {
        let now = Instant::now();
        let inner = self.inner.read();
        let mut any = false;
        for l in &inner.listeners {
            let due = l.should_resync(now);
            l.syncing.store(due, Ordering::Release);
            if due {
                any = true;
                l.determine_next_resync(now);
            }
        }
        any
    }

    /// The resync check period was lowered (before start): recompute every listener's period.
    pub(crate) fn resync_check_period_changed(&self, check: Duration) {
        let inner = self.inner.read();
        for l in &inner.listeners {
            l.set_resync_period(determine_resync_period(l.requested_resync_period, check));
        }
    }

    /// Starts every listener's consumer.
    pub(crate) fn start(&self) {
        let mut inner = self.inner.write();
        if inner.started {
            return;
        }
        inner.started = true;
        for l in &inner.listeners {
            l.start(&self.tasks);
        }
    }

    /// Stops every listener and waits until no callback runs any more.
    pub(crate) async fn shutdown(&self) {
        let (listeners, draining) = {
            let mut inner = self.inner.write();
            (
                std::mem::take(&mut inner.listeners),
                std::mem::take(&mut inner.draining),
            )
        };
        for l in &listeners {
            stop_listener(l);
        }
        for d in &draining {
            d.stop.cancel();
        }
        drop(listeners);
        self.room.notify.notify_waiters();
        self.tasks.close();
        self.tasks.wait().await;
    }

    /// Each live listener's name and undelivered notifications (for metrics).
    pub(crate) fn backlogs(&self) -> Vec<(String, usize)> {
        self.stats()
            .into_iter()
            .map(|s| (s.name, s.backlog))
            .collect()
    }

    /// Each live listener's figures.
    pub(crate) fn stats(&self) -> Vec<HandlerStats> {
        self.inner
            .read()
            .listeners
            .iter()
            .filter(|l| !l.shared.stop.is_cancelled())
            .map(|l| HandlerStats {
                name: l.shared.name.clone(),
                backlog: l.shared.backlog(),
                oldest_pending_age: l.shared.oldest_pending_age(),
            })
            .collect()
    }

    /// Number of listeners.
    pub(crate) fn len(&self) -> usize {
        self.inner.read().listeners.len()
    }
}

/// One handler's (or stream's) figures, from
/// [`SharedIndexInformer::handler_stats`](crate::SharedIndexInformer::handler_stats).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandlerStats {
    /// The handler's name.
    pub name: String,
    /// Notifications queued for it and not yet taken.
    pub backlog: usize,
    /// How long the oldest notification it has not yet handled has waited (see
    /// [`ResourceEventHandlerRegistration::oldest_pending_age`](crate::informer::ResourceEventHandlerRegistration::oldest_pending_age));
    /// `None` when it has nothing to do.
    pub oldest_pending_age: Option<Duration>,
}

fn stop_listener<K: Send + Sync + 'static>(l: &Listener<K>) {
    l.shared.stop.cancel();
    if l.never_started() {
        // No consumer task will ever run to say it finished.
        l.shared.finished.cancel();
    }
}

/// client-go's `determineResyncPeriod`.
pub(crate) fn determine_resync_period(desired: Duration, check: Duration) -> Duration {
    if desired.is_zero() {
        return desired;
    }
    if check.is_zero() {
        tracing::warn!(
            ?desired,
            "the specified resync period is invalid because this shared informer doesn't support resyncing"
        );
        return Duration::ZERO;
    }
    if desired < check {
        tracing::warn!(
            ?desired,
            resync_check_period = ?check,
            "the specified resync period is being increased to the minimum resync check period"
        );
        return check;
    }
    desired
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::handler::ResourceEventHandlerFuncs;
    use crate::informer::listener::{HandlerTask, ListenerShared, listener};
    use k8s_openapi::api::core::v1::ConfigMap;
    use parking_lot::Mutex;
    use std::sync::{Condvar, Mutex as StdMutex};

    fn add(name: &str) -> Event<ConfigMap> {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        Event::Add {
            obj: Arc::new(cm),
            is_in_initial_list: false,
        }
    }

    type Gate = Arc<(StdMutex<bool>, Condvar)>;

    /// A listener whose handler (on its own thread) waits for `gate` to open, then records.
    fn gated(
        p: &Processor<ConfigMap>,
        id: u64,
        gate: &Gate,
    ) -> (Arc<ListenerShared>, Arc<Mutex<Vec<String>>>) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let (g, l) = (gate.clone(), log.clone());
        let handler = ResourceEventHandlerFuncs::new().on_add(move |o: &Arc<ConfigMap>, _| {
            let (lock, cvar) = &*g;
            let _open = cvar
                .wait_while(lock.lock().unwrap(), |open| !*open)
                .unwrap();
            l.lock().push(o.metadata.name.clone().unwrap_or_default());
        });
        let (listener, queue) = listener(
            id,
            format!("h{id}"),
            Duration::ZERO,
            Duration::ZERO,
            p.room(),
            Instant::now(),
        );
        let listener = listener.with_handler(HandlerTask {
            handler: Arc::new(handler),
            queue,
            blocking: true,
        });
        let shared = listener.shared.clone();
        p.add_listener(listener, |_| {});
        (shared, log)
    }

    fn open(gate: &Gate) {
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
    }

    #[tokio::test]
    async fn a_detached_listener_drains_its_queue_and_a_removed_one_drops_it() {
        let p = Processor::<ConfigMap>::new();
        let gate = Gate::default();
        let (drained, drained_log) = gated(&p, 1, &gate);
        let (removed, removed_log) = gated(&p, 2, &gate);
        p.start();
        for i in 0..5 {
            p.distribute(&add(&format!("cm-{i}")), false);
        }
        assert!(p.detach_listener(1));
        assert!(!p.detach_listener(1), "idempotent");
        assert!(p.remove_listener(2));
        assert_eq!(p.len(), 0);
        assert_eq!(p.fullest(), 0, "a draining listener holds nothing back");
        p.distribute(&add("after"), false);
        open(&gate);
        drained.finished.cancelled().await;
        removed.finished.cancelled().await;
        assert_eq!(
            *drained_log.lock(),
            ["cm-0", "cm-1", "cm-2", "cm-3", "cm-4"],
            "everything queued before the detach, nothing after"
        );
        assert!(
            removed_log.lock().len() <= 1,
            "a removed listener finishes at most the callback it had in hand: {:?}",
            removed_log.lock()
        );
        p.shutdown().await;
    }

    #[tokio::test]
    async fn shutdown_stops_a_draining_listener() {
        let p = Processor::<ConfigMap>::new();
        let gate = Gate::default();
        let (drained, log) = gated(&p, 1, &gate);
        p.start();
        for i in 0..5 {
            p.distribute(&add(&format!("cm-{i}")), false);
        }
        assert!(p.detach_listener(1));
        let shutdown = tokio::spawn(async move { p.shutdown().await });
        // Once shutdown has stopped it, the running callback ends when the gate opens, and the
        // rest of the queue is dropped.
        while !drained.stop.is_cancelled() {
            tokio::task::yield_now().await;
        }
        open(&gate);
        shutdown.await.unwrap();
        assert!(drained.finished.is_cancelled());
        assert!(log.lock().len() <= 1, "{:?}", log.lock());
    }

    #[tokio::test]
    async fn detaching_a_listener_that_never_started_stops_it() {
        let p = Processor::<ConfigMap>::new();
        let gate = Gate::default();
        let (shared, log) = gated(&p, 1, &gate);
        p.distribute(&add("queued"), false);
        assert!(p.detach_listener(1));
        assert!(shared.finished.is_cancelled() && shared.stop.is_cancelled());
        p.start();
        open(&gate);
        p.shutdown().await;
        assert!(log.lock().is_empty());
    }
}
