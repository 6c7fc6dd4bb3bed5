//! The priority queue: controller-runtime's `priorityqueue.PriorityQueue` (the default queue of
//! its controllers since v0.23), with the rate-limiting queue's methods on top.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::clock::{Clock, default_clock, saturating_add};
use super::metrics::{QueueMetrics, resolve};
use super::priority_state::State;
pub use super::priority_state::{AddOpts, LOW_PRIORITY};
use super::queue::{QueueConfig, QueueItem};
use super::rate_limiter::{ItemExponentialFailureRateLimiter, RateLimiter};

/// The waiting loop wakes at least this often (as the delaying queue's heartbeat).
const HEARTBEAT: Duration = Duration::from_secs(10);

struct Shared<T> {
    name: String,
    clock: Arc<dyn Clock>,
    limiter: Arc<dyn RateLimiter<T>>,
    state: Mutex<State<T>>,
    /// Wakes getters (all of them: a getter may find only keys being processed).
    item_ready: Notify,
    /// Wakes `shut_down_with_drain` waiters.
    drained: Notify,
    /// Wakes the waiting loop when the earliest ready time may have moved.
    timer: Notify,
}

/// A priority work queue of keys. Cloning gives another handle to the same queue; the waiting
/// loop ends when the last handle is dropped.
///
/// * **One entry per key.** Adding a key again keeps the **higher** priority (it never goes
///   down) and the **earlier** ready time; an item already ready stays ready, even when added
///   again with a delay.
/// * **Order**: ready items are handed out by priority (highest first), FIFO within a
///   priority. An item whose priority goes up moves to the **end** of its new level; an item
///   whose delay passes joins the end of its level when it becomes ready.
/// * **Stingy**: a key handed out is not handed out again before [`done`](PriorityQueue::done);
///   added meanwhile, it waits (counted in [`len`](PriorityQueue::len)) until then.
/// * **Rate limiting**: [`AddOpts::rate_limited`] waits as long as the limiter's `when` says
///   (the shorter of that and [`AddOpts::after`] when both are set).
/// * **Metrics**: client-go's workqueue metrics, with `workqueue_depth` by priority (items
///   count once they are ready; `workqueue_retries_total` counts adds that wait).
///
/// Deliberate difference: shutdown behaves as in the other queues of this module (client-go's),
/// not as controller-runtime's priority queue (whose `Get` reports shutdown at once and whose
/// `ShutDownWithDrain` does not wait): after [`shut_down`](PriorityQueue::shut_down), adds are
/// ignored, waiting (delayed) entries are dropped, ready items are still handed out and `get`
/// returns `None` once none is left; [`shut_down_with_drain`](PriorityQueue::shut_down_with_drain)
/// waits for the items being processed. One queue protocol for the controller runner either way.
pub struct PriorityQueue<T> {
    shared: Arc<Shared<T>>,
    _guard: Arc<DropGuard>,
}

impl<T> Clone for PriorityQueue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
            _guard: self._guard.clone(),
        }
    }
}

impl<T> fmt::Debug for PriorityQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.shared.state.lock();
        f.debug_struct("PriorityQueue")
            .field("name", &self.shared.name)
            .field("ready", &s.ready.len())
            .field("waiting", &s.waiting.len())
            .field("processing", &s.locked.len())
            .field("shutting_down", &s.shutting_down)
            .finish()
    }
}

impl<T: QueueItem> PriorityQueue<T> {
    /// A queue named `name` (for metrics) with controller-runtime's default limiter for it:
    /// per-item exponential backoff from 5 ms to 1000 s, no overall bucket.
    ///
    /// # Panics
    /// Outside a Tokio runtime (it spawns its waiting loop), like `tokio::spawn`.
    pub fn new(name: impl Into<String>) -> Self {
        Self::with_config(
            ItemExponentialFailureRateLimiter::new(
                Duration::from_millis(5),
                Duration::from_secs(1000),
            ),
            QueueConfig::named(name),
        )
    }

    /// A queue with `limiter`, named, measured and clocked by `config` (its `storage` does
    /// not apply: the order is the priority order).
    ///
    /// # Panics
    /// Outside a Tokio runtime (it spawns its waiting loop), like `tokio::spawn`.
    pub fn with_config(limiter: impl RateLimiter<T> + 'static, config: QueueConfig<T>) -> Self {
        Self::with_shared_limiter(Arc::new(limiter), config)
    }

    /// Like [`with_config`](Self::with_config) with a limiter handle.
    ///
    /// # Panics
    /// Outside a Tokio runtime (it spawns its waiting loop), like `tokio::spawn`.
    pub fn with_shared_limiter(limiter: Arc<dyn RateLimiter<T>>, config: QueueConfig<T>) -> Self {
        let clock = config.clock.unwrap_or_else(default_clock);
        let provider = resolve(&config.name, config.metrics_provider.as_ref());
        let metrics = provider
            .as_ref()
            .map(|p| QueueMetrics::with_priority(&config.name, p.as_ref(), clock.clone()));
        let retries = provider.map(|p| p.new_retries_metric(&config.name));
        let period = metrics.is_some().then_some(
            config
                .unfinished_work_update_period
                .max(Duration::from_nanos(1)),
        );
        let shared = Arc::new(Shared {
            name: config.name,
            clock,
            limiter,
            state: Mutex::new(State {
                items: HashMap::new(),
                ready: BTreeMap::new(),
                waiting: BTreeMap::new(),
                locked: HashSet::new(),
                counter: 0,
                shutting_down: false,
                drain: false,
                metrics,
                retries,
            }),
            item_ready: Notify::new(),
            drained: Notify::new(),
            timer: Notify::new(),
        });
        let stop = CancellationToken::new();
        tokio::spawn(waiting_loop(shared.clone(), stop.clone(), period));
        Self {
            shared,
            _guard: Arc::new(stop.drop_guard()),
        }
    }

    /// The queue's name (empty when unnamed).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The clock the queue reads.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.shared.clock
    }

    /// Adds `items` with `opts` (controller-runtime's `AddWithOpts`). Ignored after shutdown.
    pub fn add_with_opts(&self, items: impl IntoIterator<Item = T>, opts: AddOpts) {
        let now = self.shared.clock.now();
        let (mut ready, mut timer) = (false, false);
        {
            let mut s = self.shared.state.lock();
            if s.shutting_down {
                return;
            }
            // Items whose time has come are ready before anything added now.
            ready |= s.promote(now);
            for key in items {
                let (r, t) = s.add(key, opts, self.shared.limiter.as_ref(), now);
                ready |= r;
                timer |= t;
            }
        }
        if ready {
            self.shared.item_ready.notify_waiters();
        }
        if timer {
            self.shared.timer.notify_one();
        }
    }

    /// Adds `item`, ready now, at priority 0.
    pub fn add(&self, item: T) {
        self.add_with_opts([item], AddOpts::default());
    }

    /// Adds `item` at priority 0, ready after `delay`.
    pub fn add_after(&self, item: T, delay: Duration) {
        self.add_with_opts(
            [item],
            AddOpts {
                after: delay,
                ..AddOpts::default()
            },
        );
    }

    /// Adds `item` at priority 0 after the delay the limiter gives it (which records a retry).
    pub fn add_rate_limited(&self, item: T) {
        self.add_with_opts(
            [item],
            AddOpts {
                rate_limited: true,
                ..AddOpts::default()
            },
        );
    }

    /// Clears `item`'s retry history in the limiter. You still have to call `done`.
    pub fn forget(&self, item: &T) {
        self.shared.limiter.forget(item);
    }

    /// How many times `item` has been retried since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.shared.limiter.num_requeues(item)
    }

    /// Takes the next item with its priority, waiting for one (controller-runtime's
    /// `GetWithPriority`). `None`: shutting down and nothing ready is left. Call
    /// [`done`](Self::done) when finished with it. Cancellation-safe.
    pub async fn get_with_priority(&self) -> Option<(T, i32)> {
        loop {
            let notified = self.shared.item_ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Ok(got) = self.try_get_with_priority_inner() {
                return got;
            }
            notified.await;
        }
    }

    /// Takes the next item, waiting for one; `None` at shutdown (see
    /// [`get_with_priority`](Self::get_with_priority)).
    pub async fn get(&self) -> Option<T> {
        self.get_with_priority().await.map(|(item, _)| item)
    }

    /// Takes the next ready item without waiting. `Some(None)`: shutting down and nothing
    /// ready; `None`: nothing ready yet.
    pub fn try_get_with_priority(&self) -> Option<Option<(T, i32)>> {
        self.try_get_with_priority_inner().ok()
    }

    fn try_get_with_priority_inner(&self) -> Result<Option<(T, i32)>, ()> {
        let now = self.shared.clock.now();
        let mut s = self.shared.state.lock();
        s.promote(now);
        match s.take() {
            Some(got) => Ok(Some(got)),
            None if s.shutting_down => Ok(None),
            None => Err(()),
        }
    }

    /// Marks `item` as processed; if it was added again meanwhile, it can be handed out now.
    pub fn done(&self, item: &T) {
        let now = self.shared.clock.now();
        let mut s = self.shared.state.lock();
        let promoted = s.promote(now);
        if let Some(m) = s.metrics.as_mut() {
            m.done(item);
        }
        if !s.locked.remove(item) {
            drop(s);
            if promoted {
                self.shared.item_ready.notify_waiters();
            }
            tracing::debug!(queue = %self.shared.name, "done() for an item not being processed");
            return;
        }
        let waiting_for_it = promoted || s.is_ready(item);
        let idle = s.locked.is_empty();
        drop(s);
        if waiting_for_it {
            self.shared.item_ready.notify_waiters();
        }
        if idle {
            self.shared.drained.notify_waiters();
        }
    }

    /// How many items are ready (including ones added again while being processed); delayed
    /// items are not counted (controller-runtime's `Len`).
    pub fn len(&self) -> usize {
        let now = self.shared.clock.now();
        let mut s = self.shared.state.lock();
        if s.promote(now) {
            drop(s);
            self.shared.item_ready.notify_waiters();
            return self.shared.state.lock().ready.len();
        }
        s.ready.len()
    }

    /// Whether no item is ready.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many items wait for their delay to pass.
    pub fn waiting_len(&self) -> usize {
        self.shared.state.lock().waiting.len()
    }

    /// How many items are being processed (handed out, not yet done).
    pub fn processing_len(&self) -> usize {
        self.shared.state.lock().locked.len()
    }

    /// Whether shutdown has begun.
    pub fn shutting_down(&self) -> bool {
        self.shared.state.lock().shutting_down
    }

    /// Stops accepting adds, drops the waiting entries and wakes every getter; ready items are
    /// still handed out. Does not wait for workers. Idempotent.
    pub fn shut_down(&self) {
        self.begin_shutdown(false);
    }

    /// Like [`shut_down`](Self::shut_down), then waits until no item is being processed. A
    /// later `shut_down` ends the wait early. Workers must call `done`, or this waits forever.
    pub async fn shut_down_with_drain(&self) {
        self.begin_shutdown(true);
        loop {
            let notified = self.shared.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let s = self.shared.state.lock();
                if s.locked.is_empty() || !s.drain {
                    return;
                }
            }
            notified.await;
        }
    }

    fn begin_shutdown(&self, drain: bool) {
        {
            let mut s = self.shared.state.lock();
            s.drain = drain;
            s.shutting_down = true;
            let waiting = std::mem::take(&mut s.waiting);
            for key in waiting.into_values() {
                s.items.remove(&key);
            }
        }
        self.shared.item_ready.notify_waiters();
        self.shared.drained.notify_waiters();
        self.shared.timer.notify_one();
    }
}

/// Moves waiting items into the ready set when their time comes and, for a measured queue,
/// updates the unfinished-work gauges every `period`; ends at shutdown or with the last handle.
async fn waiting_loop<T: QueueItem>(
    shared: Arc<Shared<T>>,
    stop: CancellationToken,
    period: Option<Duration>,
) {
    let clock = shared.clock.clone();
    let mut next_tick = period.map(|p| saturating_add(clock.now(), p));
    loop {
        let notified = shared.timer.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let now = clock.now();
        let (moved, next_ready) = {
            let mut s = shared.state.lock();
            if s.shutting_down {
                return;
            }
            let moved = s.promote(now);
            if let (Some(tick), Some(p)) = (next_tick, period)
                && tick <= now
            {
                if let Some(m) = &s.metrics {
                    m.update_unfinished_work();
                }
                next_tick = Some(saturating_add(now, p));
            }
            (moved, s.waiting.first_key_value().map(|(k, _)| k.0))
        };
        if moved {
            shared.item_ready.notify_waiters();
        }
        let deadline = [next_ready, next_tick, Some(saturating_add(now, HEARTBEAT))]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = &mut notified => {}
            _ = clock.sleep_until(deadline) => {}
        }
    }
}
