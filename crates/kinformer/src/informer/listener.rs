//! One listener per registered handler: an unbounded buffer and a task (client-go's
//! `processorListener`).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::handler::ResourceEventHandler;
use super::sync_tracker::SyncTracker;
use crate::ObjectOrTombstone;
use crate::wait::SyncSignal;

/// What travels from the informer to a listener.
pub(crate) enum Notification<K> {
    Add {
        obj: Arc<K>,
        is_in_initial_list: bool,
    },
    Update {
        old: Arc<K>,
        new: Arc<K>,
    },
    Delete(ObjectOrTombstone<K>),
    /// The informer has synced; ordered after every initial-list add queued before it.
    UpstreamSynced,
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Add {
                obj,
                is_in_initial_list,
            } => Self::Add {
                obj: obj.clone(),
                is_in_initial_list: *is_in_initial_list,
            },
            Self::Update { old, new } => Self::Update {
                old: old.clone(),
                new: new.clone(),
            },
            Self::Delete(o) => Self::Delete(o.clone()),
            Self::UpstreamSynced => Self::UpstreamSynced,
        }
    }
}

/// State a listener shares with its registration handle.
#[derive(Debug)]
pub(crate) struct ListenerShared {
    pub(crate) name: String,
    pub(crate) pending: AtomicUsize,
    pub(crate) handled: AtomicU64,
    pub(crate) panics: AtomicU64,
    /// The effective resync period in nanoseconds (zero: never).
    pub(crate) resync_nanos: AtomicU64,
    pub(crate) tracker: SyncTracker,
    /// Cancelled on removal or shutdown: no notification is delivered after it.
    pub(crate) stop: CancellationToken,
    /// Cancelled once the listener's consumer has finished (client-go's `runFinished`).
    pub(crate) finished: CancellationToken,
    /// The processor's wake-up for a delivery paused on this listener's backlog
    /// ([`super::processor::MAX_LISTENER_BACKLOG`]); set when the listener is added.
    pub(crate) room: std::sync::OnceLock<Arc<tokio::sync::Notify>>,
}

/// The processor's side of a listener: where notifications are sent, and resync bookkeeping.
pub(crate) struct Listener<K> {
    pub(crate) id: u64,
    tx: mpsc::UnboundedSender<Notification<K>>,
    pub(crate) shared: Arc<ListenerShared>,
    /// Whether the current resync round includes this listener.
    pub(crate) syncing: AtomicBool,
    pub(crate) requested_resync_period: Duration,
    resync: Mutex<ResyncState>,
    consumer: Mutex<Option<Consumer<K>>>,
}

struct ResyncState {
    period: Duration,
    next: Instant,
}

/// Who consumes a listener's queue.
pub(crate) enum Consumer<K> {
    /// A handler called on a tokio task (`blocking == false`) or a dedicated thread.
    Handler {
        handler: Arc<dyn ResourceEventHandler<K>>,
        rx: mpsc::UnboundedReceiver<Notification<K>>,
        blocking: bool,
    },
    /// An event stream polls the queue itself; nothing to spawn.
    Stream,
}

impl<K: Send + Sync + 'static> Listener<K> {
    /// A listener that sends into `tx` and is consumed by `consumer` (which owns the matching
    /// receiver when it is a handler; a stream keeps its receiver itself).
    pub(crate) fn new(
        id: u64,
        name: String,
        tx: mpsc::UnboundedSender<Notification<K>>,
        consumer: Consumer<K>,
        requested_resync_period: Duration,
        resync_period: Duration,
        now: Instant,
    ) -> Self {
        let shared = Arc::new(ListenerShared {
            tracker: SyncTracker::new(name.clone()),
            name,
            pending: AtomicUsize::new(0),
            handled: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            resync_nanos: AtomicU64::new(resync_period.as_nanos() as u64),
            stop: CancellationToken::new(),
            finished: CancellationToken::new(),
            room: std::sync::OnceLock::new(),
        });
        Self {
            id,
            tx,
            shared,
            syncing: AtomicBool::new(false),
            requested_resync_period,
            resync: Mutex::new(ResyncState {
                period: resync_period,
                next: now + resync_period,
            }),
            consumer: Mutex::new(Some(consumer)),
        }
    }

    /// Queues a notification; never blocks.
    pub(crate) fn add(&self, n: Notification<K>) {
        if let Notification::Add {
            is_in_initial_list: true,
            ..
        } = n
        {
            self.shared.tracker.start();
        }
        self.shared.pending.fetch_add(1, Ordering::AcqRel);
        if self.tx.send(n).is_err() {
            // The consumer is gone (a dropped stream): nothing will handle it.
            self.shared.pending.fetch_sub(1, Ordering::AcqRel);
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
        matches!(*self.consumer.lock(), Some(Consumer::Handler { .. }))
    }

    /// Starts the consumer task (once).
    pub(crate) fn start(&self, tasks: &TaskTracker) {
        let Some(consumer) = self.consumer.lock().take() else {
            return;
        };
        let Consumer::Handler {
            handler,
            rx,
            blocking,
        } = consumer
        else {
            return;
        };
        let shared = self.shared.clone();
        if blocking {
            tasks.spawn_blocking(move || run_blocking(shared, handler, rx));
        } else {
            tasks.spawn(run_async(shared, handler, rx));
        }
    }
}

impl ListenerShared {
    /// Accounts one received notification and decides what to deliver. Returns whether the
    /// tracker must be told `finished` after delivery.
    fn received(&self) {
        let before = self.pending.fetch_sub(1, Ordering::AcqRel);
        if before == super::processor::MAX_LISTENER_BACKLOG / 2 + 1
            && let Some(room) = self.room.get()
        {
            room.notify_waiters();
        }
    }

    /// Calls the handler for `n`, catching panics. Returns whether it panicked.
    fn dispatch<K: Send + Sync + 'static>(
        &self,
        handler: &dyn ResourceEventHandler<K>,
        n: Notification<K>,
    ) -> bool {
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| match &n {
            Notification::Add {
                obj,
                is_in_initial_list,
            } => handler.on_add(obj, *is_in_initial_list),
            Notification::Update { old, new } => handler.on_update(old, new),
            Notification::Delete(obj) => handler.on_delete(obj),
            Notification::UpstreamSynced => {}
        }));
        let panicked = result.is_err();
        if panicked {
            self.panics.fetch_add(1, Ordering::AcqRel);
            tracing::error!(handler = %self.name, "event handler panicked; the listener carries on");
        }
        match n {
            Notification::UpstreamSynced => {
                self.tracker.upstream_has_synced();
            }
            Notification::Add {
                is_in_initial_list: true,
                ..
            } => {
                // Counted even when the handler panicked, so a bad object cannot keep the
                // handler from ever syncing (client-go would crash the process instead).
                self.handled.fetch_add(1, Ordering::AcqRel);
                self.tracker.finished();
            }
            _ => {
                self.handled.fetch_add(1, Ordering::AcqRel);
            }
        }
        panicked
    }
}

/// Pause after a handler panic before the next notification, as client-go does, so a handler
/// that always panics does not spin.
const PANIC_BACKOFF: Duration = Duration::from_secs(1);

async fn run_async<K: Send + Sync + 'static>(
    shared: Arc<ListenerShared>,
    handler: Arc<dyn ResourceEventHandler<K>>,
    mut rx: mpsc::UnboundedReceiver<Notification<K>>,
) {
    loop {
        let next = tokio::select! {
            biased;
            _ = shared.stop.cancelled() => None,
            n = rx.recv() => n,
        };
        let Some(n) = next else { break };
        shared.received();
        if shared.stop.is_cancelled() {
            break;
        }
        if shared.dispatch(handler.as_ref(), n) {
            tokio::select! {
                _ = shared.stop.cancelled() => break,
                _ = tokio::time::sleep(PANIC_BACKOFF) => {}
            }
        }
    }
    shared.finished.cancel();
}

fn run_blocking<K: Send + Sync + 'static>(
    shared: Arc<ListenerShared>,
    handler: Arc<dyn ResourceEventHandler<K>>,
    mut rx: mpsc::UnboundedReceiver<Notification<K>>,
) {
    // The sender is dropped when the listener is removed or the informer stops, which ends
    // `blocking_recv`; the stop token makes sure nothing buffered is delivered after that.
    while let Some(n) = rx.blocking_recv() {
        shared.received();
        if shared.stop.is_cancelled() {
            break;
        }
        if shared.dispatch(handler.as_ref(), n) && !shared.stop.is_cancelled() {
            std::thread::sleep(PANIC_BACKOFF);
        }
    }
    shared.finished.cancel();
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
    /// Notifications queued for this handler and not yet handled.
    pub fn backlog(&self) -> usize {
        self.shared.pending.load(Ordering::Acquire)
    }
    /// Notifications this handler has been called with.
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
