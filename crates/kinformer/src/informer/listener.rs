//! One listener per registered handler or stream (client-go's `processorListener`): a queue of
//! [`Event`]s and the bookkeeping around it.
//!
//! There is one bookkeeping path. The processor's side ([`Listener::add`]) counts what it
//! queues; the consumer's side ([`ListenerQueue`]) counts what it takes, wakes a processor
//! paused on this listener's backlog, turns the informer's sync marker into this listener's own
//! sync state, and records what was handled. A handler's task and an
//! [`EventStream`](super::EventStream) both consume through a `ListenerQueue`, so they cannot
//! drift apart. The same path keeps when each notification was queued, so the age of the
//! oldest one not yet handled ([`ResourceEventHandlerRegistration::oldest_pending_age`]) is
//! the same figure for handlers and streams.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::event::Event;
use super::handler::ResourceEventHandler;
use super::sync_tracker::SyncTracker;
use crate::wait::SyncSignal;

/// How far one handler may fall behind: at no time does a listener hold more than this many
/// undelivered live notifications (the ones that count, below).
///
/// How it holds exactly: before the informer takes anything from its queue it waits until the
/// fullest listener has room, and then takes no more than that room.
///
/// * [`QueueMode::RealFifo`](super::QueueMode::RealFifo): a batch of watch changes is cut to
///   the room the fullest listener has left (each change is at most one notification per
///   listener). A relist or a resync, which may stand for many more notifications than the
///   bound, is applied to the cache in one step as before, and its notifications are then
///   queued chunk by chunk, each chunk only once there is room for it; the next queue entry is
///   taken only when all of them are queued. They go only to the listeners registered when the
///   cache changed, so a handler added in between (which is first sent the cache, relist
///   included) sees every object exactly once, and every handler hears only of changes the
///   cache already holds.
/// * [`QueueMode::DeltaFifo`](super::QueueMode::DeltaFifo): one object's deltas are taken only
///   when every listener has room for all of them. The one exception: an object with more
///   deltas queued than the bound (the queue itself holds about
///   [`MAX_QUEUED_DELTAS`](super::shared_informer::MAX_QUEUED_DELTAS)) is taken, unsplit, once
///   every listener is empty.
///
/// When a listener is full, the informer waits until it is down to half before it takes more
/// (so it does not wake for every notification handled). The queue then fills up to its own
/// bound ([`MAX_QUEUED_DELTAS`](super::shared_informer::MAX_QUEUED_DELTAS)) and the Reflector
/// stops reading the watch, so a burst that outruns a handler waits on the wire instead of in
/// memory.
///
/// What counts: every notification except initial-list adds (the informer's first list, and
/// the cache replayed to a handler added late). Those hold only objects the cache holds, and a
/// consumer may wait for the sync before it starts reading.
///
/// Handlers and [`EventStream`](super::EventStream)s are bounded alike (one listener type,
/// one bookkeeping path).
///
/// **Deliberate difference from client-go**, whose listener buffers grow without bound: there
/// a slow handler never delays the others but can exhaust memory (each notification keeps an
/// old and a new object alive); here a handler this far behind delays the others. Nothing is
/// dropped, merged or reordered.
pub const MAX_LISTENER_BACKLOG: usize = 1024;

/// State a listener shares between the processor, its consumer and its registration handle.
#[derive(Debug)]
pub(crate) struct ListenerShared {
    pub(crate) name: String,
    /// Events queued and not yet taken by the consumer.
    pending: AtomicUsize,
    /// The part of `pending` that counts toward [`MAX_LISTENER_BACKLOG`]: everything but
    /// initial-list adds. Those hold only objects the cache holds too, and pausing on them
    /// would stall an initial sync whose consumer waits for the sync before it reads.
    live: AtomicUsize,
    handled: AtomicU64,
    panics: AtomicU64,
    /// The effective resync period in nanoseconds (zero: never).
    resync_nanos: AtomicU64,
    tracker: SyncTracker,
    /// Cancelled on removal or shutdown: no event is delivered after it.
    pub(crate) stop: CancellationToken,
    /// Cancelled once the listener's consumer has finished (client-go's `runFinished`).
    pub(crate) finished: CancellationToken,
    /// Wakes a processor paused on this listener's backlog.
    room: Arc<Room>,
    /// When each notification not yet handled was queued, oldest first.
    ages: Mutex<Ages>,
}

/// When the notifications not yet handled were queued.
#[derive(Debug, Default)]
struct Ages {
    /// The queued ones, in queue order.
    queued: VecDeque<Instant>,
    /// The one handed to the consumer and not yet handled.
    in_hand: Option<Instant>,
}

/// What a processor paused on its listeners' backlogs waits for: a listener's live backlog
/// falling to `wake_at` (shared by the processor and all its listeners).
#[derive(Debug)]
pub(crate) struct Room {
    pub(crate) notify: Notify,
    /// The live backlog at which a listener wakes the processor.
    pub(crate) wake_at: AtomicUsize,
}

impl Default for Room {
    fn default() -> Self {
        Self {
            notify: Notify::new(),
            wake_at: AtomicUsize::new(MAX_LISTENER_BACKLOG / 2),
        }
    }
}

impl ListenerShared {
    /// Events queued and not yet taken by the consumer.
    pub(crate) fn backlog(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// Undelivered notifications that count toward [`MAX_LISTENER_BACKLOG`] (zero once the
    /// listener stopped: it takes nothing more).
    pub(crate) fn live(&self) -> usize {
        if self.stop.is_cancelled() {
            0
        } else {
            self.live.load(Ordering::Acquire)
        }
    }

    /// How long the oldest notification not yet handled (queued, or in the consumer's hands)
    /// has waited; `None` when there is none.
    pub(crate) fn oldest_pending_age(&self) -> Option<Duration> {
        let ages = self.ages.lock();
        let oldest = ages.in_hand.or_else(|| ages.queued.front().copied())?;
        Some(Instant::now().saturating_duration_since(oldest))
    }

    /// The processor queued an event.
    fn queued(&self, is_initial_add: bool) {
        self.ages.lock().queued.push_back(Instant::now());
        if is_initial_add {
            self.tracker.start();
        } else {
            self.live.fetch_add(1, Ordering::AcqRel);
        }
        self.pending.fetch_add(1, Ordering::AcqRel);
    }

    /// The consumer took an event off the queue (`in_hand`: and will handle it), or it could
    /// not be queued. Wakes the processor when this listener's live backlog falls to the level
    /// the processor waits for.
    fn taken(&self, is_initial_add: bool, in_hand: bool) {
        {
            let mut ages = self.ages.lock();
            let at = ages.queued.pop_front();
            ages.in_hand = if in_hand { at } else { None };
        }
        self.pending.fetch_sub(1, Ordering::AcqRel);
        if !is_initial_add {
            let before = self.live.fetch_sub(1, Ordering::AcqRel);
            if before == self.room.wake_at.load(Ordering::Acquire) + 1 {
                self.room.notify.notify_waiters();
            }
        }
    }

    /// The consumer finished the notification it had in hand.
    fn handled(&self) {
        self.ages.lock().in_hand = None;
    }
}

/// The processor's side of a listener: where events are sent, and resync bookkeeping.
pub(crate) struct Listener<K> {
    pub(crate) id: u64,
    tx: mpsc::UnboundedSender<Event<K>>,
    pub(crate) shared: Arc<ListenerShared>,
    /// Whether the current resync round includes this listener.
    pub(crate) syncing: AtomicBool,
    pub(crate) requested_resync_period: Duration,
    resync: Mutex<ResyncState>,
    /// A handler to run once the processor starts (`None` for a stream, or once started).
    handler: Mutex<Option<HandlerTask<K>>>,
}

struct ResyncState {
    period: Duration,
    next: Instant,
}

/// A handler waiting for its task: the handler, its queue, and where it runs.
pub(crate) struct HandlerTask<K> {
    pub(crate) handler: Arc<dyn ResourceEventHandler<K>>,
    pub(crate) queue: ListenerQueue<K>,
    /// On a dedicated thread instead of a tokio task.
    pub(crate) blocking: bool,
}

/// The consumer's end of a listener's queue (see the module docs).
pub(crate) struct ListenerQueue<K> {
    rx: mpsc::UnboundedReceiver<Event<K>>,
    pub(crate) shared: Arc<ListenerShared>,
    /// The event handed out last, not yet accounted as handled: `Some(is_initial_add)`.
    unfinished: Option<bool>,
}

/// What one event taken off the queue means for the consumer.
enum Taken<K> {
    Deliver(Event<K>),
    /// Bookkeeping only (the informer synced, but this listener has initial adds left).
    Skip,
    /// The listener was stopped.
    End,
}

/// Creates a listener's two ends.
pub(crate) fn listener<K: Send + Sync + 'static>(
    id: u64,
    name: String,
    requested_resync_period: Duration,
    resync_period: Duration,
    room: Arc<Room>,
    now: Instant,
) -> (Listener<K>, ListenerQueue<K>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let shared = Arc::new(ListenerShared {
        tracker: SyncTracker::new(name.clone()),
        name,
        pending: AtomicUsize::new(0),
        live: AtomicUsize::new(0),
        handled: AtomicU64::new(0),
        panics: AtomicU64::new(0),
        resync_nanos: AtomicU64::new(resync_period.as_nanos() as u64),
        stop: CancellationToken::new(),
        finished: CancellationToken::new(),
        room,
        ages: Mutex::default(),
    });
    let listener = Listener {
        id,
        tx,
        shared: shared.clone(),
        syncing: AtomicBool::new(false),
        requested_resync_period,
        resync: Mutex::new(ResyncState {
            period: resync_period,
            next: now + resync_period,
        }),
        handler: Mutex::new(None),
    };
    let queue = ListenerQueue {
        rx,
        shared,
        unfinished: None,
    };
    (listener, queue)
}

impl<K: Send + Sync + 'static> Listener<K> {
    /// Gives the listener a handler to run once the processor starts.
    pub(crate) fn with_handler(self, task: HandlerTask<K>) -> Self {
        *self.handler.lock() = Some(task);
        self
    }

    /// Queues an event; never blocks.
    pub(crate) fn add(&self, ev: Event<K>) {
        let initial = ev.is_initial_add();
        self.shared.queued(initial);
        if self.tx.send(ev).is_err() {
            // The consumer is gone (a dropped stream): nothing will take it.
            self.shared.taken(initial, false);
        }
    }

    /// client-go's `shouldResync`: due when a period is set and its time has come.
    pub(crate) fn should_resync(&self, now: Instant) -> bool {
        let r = self.resync.lock();
        !r.period.is_zero() && now >= r.next
    }

    pub(crate) fn determine_next_resync(&self, now: Instant) {
        let mut r = self.resync.lock();
        r.next = now + r.period;
    }

    pub(crate) fn set_resync_period(&self, period: Duration) {
        self.resync.lock().period = period;
        self.shared
            .resync_nanos
            .store(period.as_nanos() as u64, Ordering::Release);
    }

    /// Whether the consumer is a handler whose task was never started.
    pub(crate) fn never_started(&self) -> bool {
        self.handler.lock().is_some()
    }

    /// Starts the handler's task (once; nothing for a stream).
    pub(crate) fn start(&self, tasks: &TaskTracker) {
        let Some(HandlerTask {
            handler,
            queue,
            blocking,
        }) = self.handler.lock().take()
        else {
            return;
        };
        if blocking {
            tasks.spawn_blocking(move || run_blocking(queue, handler));
        } else {
            tasks.spawn(run_async(queue, handler));
        }
    }
}

impl<K> ListenerQueue<K> {
    /// Accounts the event handed out last as handled. Returns true when that made this
    /// listener synced (its last initial add, after the informer synced).
    pub(crate) fn complete(&mut self) -> bool {
        match self.unfinished.take() {
            None => false,
            Some(initial) => {
                self.shared.handled();
                // Counted even when a handler panicked on it, so a bad object cannot keep the
                // listener from ever syncing (client-go would crash the process instead).
                self.shared.handled.fetch_add(1, Ordering::AcqRel);
                initial && self.shared.tracker.finished()
            }
        }
    }

    fn take(&mut self, ev: Event<K>) -> Taken<K> {
        let initial = ev.is_initial_add();
        let stopped = self.shared.stop.is_cancelled();
        let in_hand = !stopped && !matches!(ev, Event::Synced);
        self.shared.taken(initial, in_hand);
        if stopped {
            return Taken::End;
        }
        match ev {
            // The informer's sync marker, queued after every initial add it sent.
            Event::Synced if self.shared.tracker.upstream_has_synced() => {
                Taken::Deliver(Event::Synced)
            }
            Event::Synced => Taken::Skip,
            ev => {
                self.unfinished = Some(initial);
                Taken::Deliver(ev)
            }
        }
    }

    /// The next event for the consumer. The one handed out before is accounted as handled
    /// first (if [`complete`](Self::complete) was not called); `Synced` is yielded once this
    /// listener has synced. `None` once the listener has stopped.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Event<K>>> {
        loop {
            if self.complete() {
                return Poll::Ready(Some(Event::Synced));
            }
            let Some(ev) = std::task::ready!(self.rx.poll_recv(cx)) else {
                return Poll::Ready(None);
            };
            match self.take(ev) {
                Taken::Deliver(ev) => return Poll::Ready(Some(ev)),
                Taken::Skip => continue,
                Taken::End => return Poll::Ready(None),
            }
        }
    }

    async fn next(&mut self) -> Option<Event<K>> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    /// [`poll_next`](Self::poll_next) for a consumer on its own thread.
    fn blocking_next(&mut self) -> Option<Event<K>> {
        loop {
            if self.complete() {
                return Some(Event::Synced);
            }
            // The sender is dropped when the listener is removed or the informer stops, which
            // ends `blocking_recv`.
            let ev = self.rx.blocking_recv()?;
            match self.take(ev) {
                Taken::Deliver(ev) => return Some(ev),
                Taken::Skip => continue,
                Taken::End => return None,
            }
        }
    }
}

impl<K> Drop for ListenerQueue<K> {
    fn drop(&mut self) {
        // Whatever is still queued will never be taken: release the processor.
        self.shared.stop.cancel();
        self.rx.close();
        while let Ok(ev) = self.rx.try_recv() {
            self.shared.taken(ev.is_initial_add(), false);
        }
        self.shared.handled();
        self.shared.room.notify.notify_waiters();
        self.shared.finished.cancel();
    }
}

std::thread_local! {
    /// The listener whose callback runs on this thread right now (its `ListenerShared`'s
    /// address; 0: none). Callbacks are synchronous, so a thread-local is exact.
    static IN_CALLBACK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether the current thread is inside a callback of the listener `shared` (for
/// [`shut_down_event_handler`](super::SharedIndexInformer::shut_down_event_handler), which
/// would wait for itself).
pub(crate) fn in_callback_of(shared: &Arc<ListenerShared>) -> bool {
    IN_CALLBACK.with(|c| c.get()) == Arc::as_ptr(shared) as usize
}

/// Calls the handler for `ev`, catching panics. Returns whether it panicked.
fn dispatch<K: 'static>(
    shared: &ListenerShared,
    handler: &dyn ResourceEventHandler<K>,
    ev: &Event<K>,
) -> bool {
    let outer = IN_CALLBACK.with(|c| c.replace(std::ptr::from_ref(shared) as usize));
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| match ev {
        Event::Add {
            obj,
            is_in_initial_list,
        } => handler.on_add(obj, *is_in_initial_list),
        Event::Update { old, new } => handler.on_update(old, new),
        Event::Delete(obj) => handler.on_delete(obj),
        Event::Synced => {}
    }));
    IN_CALLBACK.with(|c| c.set(outer));
    if result.is_err() {
        shared.panics.fetch_add(1, Ordering::AcqRel);
        tracing::error!(handler = %shared.name, "event handler panicked; the listener carries on");
    }
    result.is_err()
}

/// Pause after a handler panic before the next event, as client-go does, so a handler that
/// always panics does not spin.
const PANIC_BACKOFF: Duration = Duration::from_secs(1);

async fn run_async<K: Send + Sync + 'static>(
    mut queue: ListenerQueue<K>,
    handler: Arc<dyn ResourceEventHandler<K>>,
) {
    let stop = queue.shared.stop.clone();
    loop {
        let next = tokio::select! {
            biased;
            _ = stop.cancelled() => None,
            ev = queue.next() => ev,
        };
        let Some(ev) = next else { break };
        let panicked = dispatch(&queue.shared, handler.as_ref(), &ev);
        queue.complete();
        if panicked {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep(PANIC_BACKOFF) => {}
            }
        }
    }
}

fn run_blocking<K: Send + Sync + 'static>(
    mut queue: ListenerQueue<K>,
    handler: Arc<dyn ResourceEventHandler<K>>,
) {
    while let Some(ev) = queue.blocking_next() {
        let panicked = dispatch(&queue.shared, handler.as_ref(), &ev);
        queue.complete();
        if panicked && !queue.shared.stop.is_cancelled() {
            std::thread::sleep(PANIC_BACKOFF);
        }
    }
}

/// The handle `add_event_handler` returns (client-go's `ResourceEventHandlerRegistration`).
///
/// Pass it to `remove_event_handler`. It reports whether this handler has synced (the informer
/// synced and every initial-list notification was handled by *this* handler), its backlog, and
/// how many notifications it handled or panicked on.
#[derive(Debug, Clone)]
pub struct ResourceEventHandlerRegistration {
    pub(crate) id: u64,
    pub(crate) informer_id: u64,
    pub(crate) shared: Arc<ListenerShared>,
    /// An [`EventStream`](super::EventStream)'s registration: its consumer is the caller's,
    /// not a task of the informer's.
    pub(crate) stream: bool,
}

impl ResourceEventHandlerRegistration {
    /// Whether this handler has received and handled the informer's whole initial list.
    pub fn has_synced(&self) -> bool {
        self.shared.tracker.has_synced()
    }
    /// An awaitable sync signal, for `wait_for_cache_sync`.
    pub fn synced_signal(&self) -> SyncSignal {
        self.shared.tracker.signal()
    }
    /// Notifications queued for this handler and not yet taken.
    pub fn backlog(&self) -> usize {
        self.shared.backlog()
    }
    /// How long the oldest notification this handler has not yet handled has waited since the
    /// informer queued it for this handler (the one the handler is running counts); `None` when
    /// it has nothing to do. A figure that keeps growing means a stuck handler.
    pub fn oldest_pending_age(&self) -> Option<Duration> {
        self.shared.oldest_pending_age()
    }
    /// Notifications this handler has handled (for a stream: yielded, and the stream polled
    /// again).
    pub fn handled(&self) -> u64 {
        self.shared.handled.load(Ordering::Acquire)
    }
    /// How many calls to this handler panicked (each was caught and logged).
    pub fn panics(&self) -> u64 {
        self.shared.panics.load(Ordering::Acquire)
    }
    /// The resync period in effect for this handler (zero: never).
    pub fn resync_period(&self) -> Duration {
        Duration::from_nanos(self.shared.resync_nanos.load(Ordering::Acquire))
    }
    /// The handler's name, as used in logs.
    pub fn name(&self) -> &str {
        &self.shared.name
    }
    /// Whether the handler was removed or its informer stopped.
    pub fn is_stopped(&self) -> bool {
        self.shared.stop.is_cancelled()
    }
    /// Resolves once the handler's listener has finished: after removal or informer shutdown,
    /// when no callback is running any more (client-go's `ShutdownChan`). For an
    /// [`EventStream`](super::EventStream): once the stream has yielded its end or was
    /// dropped.
    pub async fn stopped(&self) {
        self.shared.finished.cancelled().await
    }
}
