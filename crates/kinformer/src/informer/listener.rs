//! One listener per registered handler or stream (client-go's `processorListener`): a queue of
//! [`Event`]s and the bookkeeping around it.
//!
//! There is one bookkeeping path. The processor's side ([`Listener::add`]) counts what it
//! queues; the consumer's side ([`ListenerQueue`]) counts what it takes, wakes a processor
//! paused on this listener's backlog, turns the informer's sync marker into this listener's own
//! sync state, and records what was handled. A handler's task and an
//! [`EventStream`](super::EventStream) both consume through a `ListenerQueue`, so they cannot
//! drift apart.

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

/// How far one handler may fall behind before the informer pauses delivery: the processor
/// stops popping its queue while any listener holds this many undelivered notifications, and
/// resumes once that listener is down to half. The queue then fills up to its own bound
/// ([`MAX_QUEUED_DELTAS`](super::shared_informer::MAX_QUEUED_DELTAS)) and the Reflector stops
/// reading the watch, so a burst that outruns a handler waits on the wire instead of in
/// memory.
///
/// Initial-list adds (the informer's first list, and the cache replayed to a handler added
/// late) do not count toward the bound: they hold only objects the cache holds, and a
/// consumer may wait for the sync before it starts reading.
///
/// Handlers and [`EventStream`](super::EventStream)s are bounded alike (one listener type,
/// one bookkeeping path).
///
/// **Deliberate difference from client-go**, whose listener buffers grow without bound: there
/// a slow handler never delays the others but can exhaust memory (each notification keeps an
/// old and a new object alive); here a handler more than this far behind briefly delays the
/// others. Nothing is dropped, merged or reordered.
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
    room: Arc<Notify>,
}

impl ListenerShared {
    /// Events queued and not yet taken by the consumer.
    pub(crate) fn backlog(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// Whether the processor must wait for this listener before it delivers more.
    pub(crate) fn is_full(&self) -> bool {
        !self.stop.is_cancelled() && self.live.load(Ordering::Acquire) >= MAX_LISTENER_BACKLOG
    }

    /// The processor queued an event.
    fn queued(&self, is_initial_add: bool) {
        if is_initial_add {
            self.tracker.start();
        } else {
            self.live.fetch_add(1, Ordering::AcqRel);
        }
        self.pending.fetch_add(1, Ordering::AcqRel);
    }

    /// The consumer took an event off the queue, or it could not be queued. Wakes the
    /// processor when this listener's live backlog falls to half the bound.
    fn taken(&self, is_initial_add: bool) {
        self.pending.fetch_sub(1, Ordering::AcqRel);
        if !is_initial_add {
            let before = self.live.fetch_sub(1, Ordering::AcqRel);
            if before == MAX_LISTENER_BACKLOG / 2 + 1 {
                self.room.notify_waiters();
            }
        }
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
    room: Arc<Notify>,
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
            self.shared.taken(initial);
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
                // Counted even when a handler panicked on it, so a bad object cannot keep the
                // listener from ever syncing (client-go would crash the process instead).
                self.shared.handled.fetch_add(1, Ordering::AcqRel);
                initial && self.shared.tracker.finished()
            }
        }
    }

    fn take(&mut self, ev: Event<K>) -> Taken<K> {
        let initial = ev.is_initial_add();
        self.shared.taken(initial);
        if self.shared.stop.is_cancelled() {
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
            self.shared.taken(ev.is_initial_add());
        }
        self.shared.room.notify_waiters();
        self.shared.finished.cancel();
    }
}

/// Calls the handler for `ev`, catching panics. Returns whether it panicked.
fn dispatch<K: 'static>(
    shared: &ListenerShared,
    handler: &dyn ResourceEventHandler<K>,
    ev: &Event<K>,
) -> bool {
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| match ev {
        Event::Add {
            obj,
            is_in_initial_list,
        } => handler.on_add(obj, *is_in_initial_list),
        Event::Update { old, new } => handler.on_update(old, new),
        Event::Delete(obj) => handler.on_delete(obj),
        Event::Synced => {}
    }));
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
    /// when no callback is running any more (client-go's `ShutdownChan`).
    pub async fn stopped(&self) {
        self.shared.finished.cancelled().await
    }
}
