//! The plain work queue: client-go's `workqueue.Typed[T]` with its exact semantics, async.
//!
//! * **Fair**: items are handed out in the order they were added.
//! * **Stingy**: an item added several times before it is processed is processed once, and an
//!   item is never handed to two workers at once. An item added while it is being processed is
//!   marked dirty and queued again by [`Queue::done`].
//! * **Shutdown**: after [`Queue::shut_down`], adds are ignored, but [`Queue::get`] keeps
//!   returning the items already queued; it returns `None` once the queue is empty.
//!
//! Invariant (client-go's): every queued item is dirty and not processing.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::clock::{Clock, default_clock};
use super::metrics::{MetricsProvider, QueueMetrics, resolve};

/// What a queue item must be: a small, cloneable, hashable key.
pub trait QueueItem: Clone + Eq + Hash + Send + Sync + 'static {}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueItem for T {}

/// The ordering store behind a [`Queue`] (client-go's `workqueue.Queue[T]`), called under the
/// queue's lock. The queue guarantees it never pushes an item already held.
pub trait QueueStorage<T>: Send + 'static {
    /// An item already queued was added again (a priority store may reorder it).
    fn touch(&mut self, item: &T);
    /// Appends an item.
    fn push(&mut self, item: T);
    /// Removes the next item.
    fn pop(&mut self) -> Option<T>;
    /// How many items are held.
    fn len(&self) -> usize;
    /// Whether no item is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The default FIFO store (client-go's `DefaultQueue`): `touch` does nothing.
#[derive(Debug)]
pub struct FifoStorage<T>(VecDeque<T>);

impl<T> Default for FifoStorage<T> {
    fn default() -> Self {
        Self(VecDeque::new())
    }
}

impl<T: Send + 'static> QueueStorage<T> for FifoStorage<T> {
    fn touch(&mut self, _item: &T) {}
    fn push(&mut self, item: T) {
        self.0.push_back(item);
    }
    fn pop(&mut self) -> Option<T> {
        self.0.pop_front()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// client-go's `defaultUnfinishedWorkUpdatePeriod`.
pub const DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// How to build a [`Queue`] (client-go's `TypedQueueConfig`).
pub struct QueueConfig<T> {
    /// The queue's name; metrics are recorded only for a named queue.
    pub name: String,
    /// The metrics provider; `None` uses the global one ([`super::set_provider`]), if any.
    pub metrics_provider: Option<Arc<dyn MetricsProvider>>,
    /// The ordering store; `None` is a FIFO.
    pub storage: Option<Box<dyn QueueStorage<T>>>,
    /// How often the unfinished-work gauges are updated.
    pub unfinished_work_update_period: Duration,
    /// The clock for delays and metric durations (client-go's `Clock`); `None` is
    /// [`TokioClock`](super::TokioClock). Tests pass a [`FakeClock`](super::FakeClock).
    pub clock: Option<Arc<dyn Clock>>,
}

impl<T> Default for QueueConfig<T> {
    fn default() -> Self {
        Self {
            name: String::new(),
            metrics_provider: None,
            storage: None,
            unfinished_work_update_period: DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD,
            clock: None,
        }
    }
}

impl<T> QueueConfig<T> {
    /// A configuration with this name.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }
}

struct State<T> {
    queue: Box<dyn QueueStorage<T>>,
    dirty: HashSet<T>,
    processing: HashSet<T>,
    shutting_down: bool,
    drain: bool,
    metrics: Option<QueueMetrics<T>>,
}

struct Inner<T> {
    name: String,
    clock: Arc<dyn Clock>,
    state: Mutex<State<T>>,
    /// Wakes getters: one per pushed item, all at shutdown.
    item_ready: Notify,
    /// Wakes `shut_down_with_drain` waiters.
    drained: Notify,
    /// Stops the unfinished-work ticker.
    stop: CancellationToken,
}

/// A work queue of keys (client-go's `workqueue.TypedInterface`). Cloning gives another handle
/// to the same queue.
pub struct Queue<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T: 'static> fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.inner.state.lock();
        f.debug_struct("Queue")
            .field("name", &self.inner.name)
            .field("len", &s.queue.len())
            .field("dirty", &s.dirty.len())
            .field("processing", &s.processing.len())
            .field("shutting_down", &s.shutting_down)
            .finish()
    }
}

impl<T: QueueItem> Default for Queue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: QueueItem> Queue<T> {
    /// An unnamed FIFO queue without metrics (client-go's `NewTyped`).
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A queue from a configuration (client-go's `NewTypedWithConfig`). A named queue with a
    /// metrics provider spawns a ticker for the unfinished-work gauges when called inside a
    /// Tokio runtime (outside one, those two gauges are not updated).
    pub fn with_config(config: QueueConfig<T>) -> Self {
        let clock = config.clock.unwrap_or_else(default_clock);
        let provider = resolve(&config.name, config.metrics_provider.as_ref());
        let metrics = provider.map(|p| QueueMetrics::new(&config.name, p.as_ref(), clock.clone()));
        let has_metrics = metrics.is_some();
        let queue = Self {
            inner: Arc::new(Inner {
                name: config.name,
                clock,
                state: Mutex::new(State {
                    queue: config
                        .storage
                        .unwrap_or_else(|| Box::new(FifoStorage::default())),
                    dirty: HashSet::new(),
                    processing: HashSet::new(),
                    shutting_down: false,
                    drain: false,
                    metrics,
                }),
                item_ready: Notify::new(),
                drained: Notify::new(),
                stop: CancellationToken::new(),
            }),
        };
        if has_metrics {
            queue.spawn_unfinished_work_loop(config.unfinished_work_update_period);
        }
        queue
    }

    fn spawn_unfinished_work_loop(&self, period: Duration) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::debug!(queue = %self.inner.name, "no Tokio runtime: unfinished-work gauges not updated");
            return;
        };
        // The ticker holds only a weak handle, so a dropped queue ends it.
        let weak = Arc::downgrade(&self.inner);
        let stop = self.inner.stop.clone();
        let clock = self.inner.clock.clone();
        let period = period.max(Duration::from_nanos(1));
        handle.spawn(async move {
            // A ticker on the queue's clock; a late tick is not made up for.
            let mut next = super::clock::saturating_add(clock.now(), period);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = clock.sleep_until(next) => {}
                }
                let now = clock.now();
                if now < next {
                    continue; // woken early (e.g. a fake clock was dropped)
                }
                next = super::clock::saturating_add(now, period);
                let Some(inner) = weak.upgrade() else { return };
                let s = inner.state.lock();
                if s.shutting_down {
                    return;
                }
                if let Some(m) = &s.metrics {
                    m.update_unfinished_work();
                }
            }
        });
    }

    /// The queue's name (empty when unnamed).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The clock the queue reads (its config's, or Tokio's).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// Marks `item` as needing processing. Ignored after shutdown; a no-op for an item already
    /// waiting; an item being processed is queued again when it is [`done`](Self::done).
    pub fn add(&self, item: T) {
        let mut s = self.inner.state.lock();
        if s.shutting_down {
            return;
        }
        if s.dirty.contains(&item) {
            // Already waiting (or re-added while processing): only a waiting one is touched.
            if !s.processing.contains(&item) {
                s.queue.touch(&item);
            }
            return;
        }
        if let Some(m) = s.metrics.as_mut() {
            m.add(&item);
        }
        s.dirty.insert(item.clone());
        if s.processing.contains(&item) {
            return;
        }
        s.queue.push(item);
        drop(s);
        self.inner.item_ready.notify_one();
    }

    /// How many items are waiting, not counting the ones being processed (for information).
    pub fn len(&self) -> usize {
        self.inner.state.lock().queue.len()
    }

    /// Whether no item is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes the next item, waiting for one. `None` means the queue is shutting down and
    /// empty: the worker should stop. The caller must call [`done`](Self::done) with the item
    /// when it has finished processing it.
    ///
    /// Cancellation-safe: dropping the future before it completes takes nothing off the queue.
    pub async fn get(&self) -> Option<T> {
        loop {
            let notified = self.inner.item_ready.notified();
            tokio::pin!(notified);
            // Register before looking, so an add between the look and the wait is not missed.
            notified.as_mut().enable();
            match self.try_get_inner() {
                Ok(item) => return item,
                Err(()) => notified.await,
            }
        }
    }

    /// Takes the next item if one is waiting, without waiting. `Some(None)`: shutting down and
    /// empty; `None`: nothing waiting yet.
    pub fn try_get(&self) -> Option<Option<T>> {
        self.try_get_inner().ok()
    }

    fn try_get_inner(&self) -> Result<Option<T>, ()> {
        let mut s = self.inner.state.lock();
        match s.queue.pop() {
            Some(item) => {
                if let Some(m) = s.metrics.as_mut() {
                    m.get(&item);
                }
                s.processing.insert(item.clone());
                s.dirty.remove(&item);
                let more = !s.queue.is_empty();
                drop(s);
                if more {
                    // Pass the wake-up on: an earlier notification may have been consumed by
                    // a getter that was then cancelled.
                    self.inner.item_ready.notify_one();
                }
                Ok(Some(item))
            }
            None if s.shutting_down => Ok(None),
            None => Err(()),
        }
    }

    /// Marks `item` as processed. If it was added again meanwhile, it is queued again.
    pub fn done(&self, item: &T) {
        let mut s = self.inner.state.lock();
        if let Some(m) = s.metrics.as_mut() {
            m.done(item);
        }
        if !s.processing.remove(item) {
            // Not handed out: nothing to finish (client-go would push a duplicate here).
            tracing::debug!(queue = %self.inner.name, "done() for an item not being processed");
            return;
        }
        let now_idle = s.processing.is_empty();
        if s.dirty.contains(item) {
            s.queue.push(item.clone());
            drop(s);
            self.inner.item_ready.notify_one();
        } else {
            drop(s);
        }
        // As client-go's `Done` (its one condition variable wakes the drain waiter too): the
        // drain waits for items being processed, so an item re-added while it was processing
        // and now only queued must not hold it up.
        if now_idle {
            self.inner.drained.notify_waiters();
        }
    }

    /// Stops accepting adds and wakes every waiting getter; does not wait for workers. Items
    /// already queued are still handed out. Idempotent.
    pub fn shut_down(&self) {
        self.inner.stop.cancel();
        let mut s = self.inner.state.lock();
        s.drain = false;
        s.shutting_down = true;
        drop(s);
        self.inner.item_ready.notify_waiters();
        self.inner.drained.notify_waiters();
    }

    /// Like [`shut_down`](Self::shut_down), then waits until no item is being processed (items
    /// still queued are not waited for). A later `shut_down` ends the wait early. Workers must
    /// call `done`, or this waits forever.
    pub async fn shut_down_with_drain(&self) {
        self.inner.stop.cancel();
        {
            let mut s = self.inner.state.lock();
            s.drain = true;
            s.shutting_down = true;
        }
        self.inner.item_ready.notify_waiters();
        loop {
            let notified = self.inner.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let s = self.inner.state.lock();
                if s.processing.is_empty() || !s.drain {
                    return;
                }
            }
            notified.await;
        }
    }

    /// Whether shutdown has begun.
    pub fn shutting_down(&self) -> bool {
        self.inner.state.lock().shutting_down
    }

    /// How many items are being processed (handed out, not yet done).
    pub fn processing_len(&self) -> usize {
        self.inner.state.lock().processing.len()
    }
}
