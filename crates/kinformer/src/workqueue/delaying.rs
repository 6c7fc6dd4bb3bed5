//! The delaying queue: client-go's `TypedDelayingInterface`, a [`Queue`] plus `add_after`.
//!
//! A waiting loop task owns the timer. One entry per item: a later request for an item already
//! waiting is dropped, an earlier one moves it forward ("earliest wins"). A plain `add` does not
//! cancel a waiting entry, and entries still waiting at shutdown are dropped. Ready items enter
//! the queue in ready-time order (ties in request order).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::clock::saturating_add;
use super::metrics::{CounterMetric, MetricsProvider, resolve};
use super::queue::{Queue, QueueConfig, QueueItem};

/// client-go's `maxWait`: the waiting loop wakes at least this often, as insurance.
const HEARTBEAT: Duration = Duration::from_secs(10);

/// One waiting entry in the heap; `seq` tells a live entry from a superseded one and orders
/// equal ready times by request order.
struct Waiting<T> {
    ready_at: Instant,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Waiting<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.ready_at, self.seq) == (other.ready_at, other.seq)
    }
}
impl<T> Eq for Waiting<T> {}
impl<T> PartialOrd for Waiting<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Waiting<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.ready_at, self.seq).cmp(&(other.ready_at, other.seq))
    }
}

struct Timers<T> {
    heap: BinaryHeap<Reverse<Waiting<T>>>,
    /// item → (ready_at, seq) of its live heap entry.
    by_item: HashMap<T, (Instant, u64)>,
    next_seq: u64,
}

impl<T: QueueItem> Timers<T> {
    /// Inserts or moves forward; returns whether the earliest ready time changed.
    fn insert(&mut self, item: T, ready_at: Instant) -> bool {
        if let Some((existing, _)) = self.by_item.get(&item)
            && *existing <= ready_at
        {
            return false;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let head_before = self.peek_ready_at();
        self.by_item.insert(item.clone(), (ready_at, seq));
        self.heap.push(Reverse(Waiting {
            ready_at,
            seq,
            item,
        }));
        head_before.is_none_or(|h| ready_at < h)
    }

    /// Drops superseded entries at the top of the heap.
    fn clean_top(&mut self) {
        while let Some(Reverse(top)) = self.heap.peek() {
            if self.by_item.get(&top.item).map(|e| e.1) == Some(top.seq) {
                return;
            }
            self.heap.pop();
        }
    }

    fn peek_ready_at(&mut self) -> Option<Instant> {
        self.clean_top();
        self.heap.peek().map(|Reverse(w)| w.ready_at)
    }

    fn pop_ready(&mut self, now: Instant) -> Vec<T> {
        let mut ready = Vec::new();
        while self.peek_ready_at().is_some_and(|t| t <= now) {
            if let Some(Reverse(w)) = self.heap.pop() {
                self.by_item.remove(&w.item);
                ready.push(w.item);
            }
        }
        ready
    }
}

/// What the waiting loop shares with the handles.
struct Shared<T> {
    timers: Mutex<Timers<T>>,
    wake: Notify,
}

struct DelayInner<T> {
    shared: Arc<Shared<T>>,
    retries: Option<Arc<dyn CounterMetric>>,
    /// Cancelled when the last handle is dropped, which ends the waiting loop.
    _loop_guard: DropGuard,
}

/// A [`Queue`] with delayed adds (client-go's `TypedDelayingInterface`). It dereferences to the
/// plain queue for `add`, `get`, `done` and the rest, the way Go embeds it.
pub struct DelayingQueue<T> {
    queue: Queue<T>,
    inner: Arc<DelayInner<T>>,
}

impl<T> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            inner: self.inner.clone(),
        }
    }
}

impl<T: QueueItem> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayingQueue")
            .field("queue", &self.queue)
            .field("waiting", &self.inner.shared.timers.lock().by_item.len())
            .finish()
    }
}

impl<T> Deref for DelayingQueue<T> {
    type Target = Queue<T>;
    fn deref(&self) -> &Queue<T> {
        &self.queue
    }
}

impl<T: QueueItem> Default for DelayingQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: QueueItem> DelayingQueue<T> {
    /// An unnamed delaying queue (client-go's `NewTypedDelayingQueue`).
    ///
    /// # Panics
    /// Outside a Tokio runtime (it spawns its waiting loop), like `tokio::spawn`.
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A delaying queue whose inner queue is built from `config`; a named queue with a metrics
    /// provider also counts `workqueue_retries_total`.
    ///
    /// # Panics
    /// Outside a Tokio runtime (it spawns its waiting loop), like `tokio::spawn`.
    pub fn with_config(config: QueueConfig<T>) -> Self {
        let retries = resolve(&config.name, config.metrics_provider.as_ref())
            .map(|p: Arc<dyn MetricsProvider>| p.new_retries_metric(&config.name));
        Self::wrap(Queue::with_config(config), retries)
    }

    /// Adds delays to an existing queue (client-go's `Queue` field of the config); the delays
    /// run on that queue's clock.
    ///
    /// # Panics
    /// Outside a Tokio runtime (it spawns its waiting loop), like `tokio::spawn`.
    pub fn from_queue(queue: Queue<T>) -> Self {
        Self::wrap(queue, None)
    }

    fn wrap(queue: Queue<T>, retries: Option<Arc<dyn CounterMetric>>) -> Self {
        let shared = Arc::new(Shared {
            timers: Mutex::new(Timers {
                heap: BinaryHeap::new(),
                by_item: HashMap::new(),
                next_seq: 0,
            }),
            wake: Notify::new(),
        });
        let stop = CancellationToken::new();
        tokio::spawn(waiting_loop(queue.clone(), shared.clone(), stop.clone()));
        let inner = Arc::new(DelayInner {
            shared,
            retries,
            _loop_guard: stop.drop_guard(),
        });
        Self { queue, inner }
    }

    /// Adds `item` once `delay` has passed (at once when `delay` is zero). Ignored after
    /// shutdown. If the item is already waiting, the earlier of the two times wins.
    pub fn add_after(&self, item: T, delay: Duration) {
        if self.queue.shutting_down() {
            return;
        }
        if let Some(r) = &self.inner.retries {
            r.inc();
        }
        if delay.is_zero() {
            self.queue.add(item);
            return;
        }
        // A delay too long to represent (an exhausted bucket without refill) waits ~forever.
        let ready_at = saturating_add(self.queue.clock().now(), delay);
        if self.inner.shared.timers.lock().insert(item, ready_at) {
            self.inner.shared.wake.notify_one();
        }
    }

    /// How many items are waiting for their delay to pass.
    pub fn waiting_len(&self) -> usize {
        self.inner.shared.timers.lock().by_item.len()
    }

    /// Shuts the queue down (see [`Queue::shut_down`]); entries still waiting are dropped.
    pub fn shut_down(&self) {
        self.queue.shut_down();
        self.drop_waiting();
    }

    /// Shuts down and waits for in-flight items (see [`Queue::shut_down_with_drain`]); entries
    /// still waiting are dropped.
    pub async fn shut_down_with_drain(&self) {
        let drain = self.queue.shut_down_with_drain();
        self.drop_waiting();
        drain.await;
    }

    fn drop_waiting(&self) {
        let mut t = self.inner.shared.timers.lock();
        t.heap.clear();
        t.by_item.clear();
        drop(t);
        self.inner.shared.wake.notify_one();
    }
}

/// client-go's `waitingLoop`: moves entries whose time has come into the queue, until
/// shutdown or until every handle is gone.
async fn waiting_loop<T: QueueItem>(
    queue: Queue<T>,
    shared: Arc<Shared<T>>,
    stop: CancellationToken,
) {
    let clock = queue.clock().clone();
    loop {
        if queue.shutting_down() {
            return;
        }
        let notified = shared.wake.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let now = clock.now();
        let (ready, next) = {
            let mut t = shared.timers.lock();
            let ready = t.pop_ready(now);
            (ready, t.peek_ready_at())
        };
        for item in ready {
            queue.add(item);
        }
        let heartbeat = saturating_add(now, HEARTBEAT);
        let deadline = next.map_or(heartbeat, |n| n.min(heartbeat));
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = &mut notified => {}
            _ = clock.sleep_until(deadline) => {}
        }
    }
}
