//! `SharedIndexInformer`: one list/watch, one indexed cache, many handlers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::event::Event;
use super::handler::ResourceEventHandler;
use super::listener::{HandlerTask, ListenerQueue, ResourceEventHandlerRegistration, listener};
use super::processor::{HandlerStats, Processor, determine_resync_period};

/// The informer's bound on its queue's backlog
/// ([`DeltaFifoOptions::max_queued_deltas`](crate::queue::DeltaFifoOptions::max_queued_deltas)).
/// **Deliberate difference from client-go**, whose DeltaFIFO grows without bound: when watch
/// events arrive faster than the handlers take them, the Reflector stops reading the watch at
/// this many queued deltas and resumes at half, so a burst waits in the connection (TCP flow
/// control) instead of in memory. Nothing is dropped or reordered; a real API server may close
/// a watch that stays unread for long, and the Reflector then watches again from its last
/// resourceVersion, as after any closed watch.
pub const MAX_QUEUED_DELTAS: usize = 1024;
use self::deliver::Later;
use super::list_staging::{InitialPart, ListStaging, Ready};
use super::queue::InformerQueue;
use super::stream::EventStream;
use crate::InformerConfig;
use crate::object::resource_version;
use crate::queue::{DEFAULT_BATCH_SIZE, DeltaType, Deltas, Popped, QueueError};
use crate::reflector::{ListerWatcher, Reflector};
use crate::store::{
    CacheMode, CacheWaitError, Indexer, Indexers, Lister, ReflectorStore, StagedReplace,
    StoreError, Transaction,
};
use crate::wait::{SyncFlag, SyncSignal};
use crate::{DeletedFinalStateUnknown, Object, ObjectOrTombstone};

mod builder;
mod consistency;
mod deliver;
mod options;
mod process;
mod shutdown;
mod snapshot;

pub use builder::{KindName, SharedIndexInformerBuilder};
pub use consistency::{ConsistencyError, ConsistencyReport, ConsistencyStats};
pub use options::{HandlerOptions, InformerError};

/// client-go's `minimumResyncPeriod`: a handler may not ask to be resynced more often.
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

static NEXT_INFORMER_ID: AtomicU64 = AtomicU64::new(1);

/// What the informer's Reflector fills: the queue (a DeltaFifo), or the [`ListStaging`]
/// wrapped around a RealFifo.
type InformerStore<K> = Arc<dyn ReflectorStore<K, Error = QueueError>>;

/// A shared, indexed informer (client-go's `SharedIndexInformer`).
///
/// # Contract
///
/// These are client-go's guarantees, written down on its `SharedInformer` type, and they hold
/// here:
///
/// - The cache (the [`Indexer`] returned by [`indexer`](Self::indexer)) is updated
///   *before* any handler hears of a change. A handler may therefore read a state of the cache
///   that is newer than the notification it is handling.
/// - Eventually the cache holds the authoritative state of every object the list/watch covers,
///   and each handler is eventually notified of the final state of each object; intermediate
///   states may be skipped.
/// - Order across objects depends on the [`QueueMode`](super::QueueMode). With [`QueueMode::RealFifo`](super::QueueMode::RealFifo) (the
///   default; client-go 1.36): notifications come in the order the server sent the changes,
///   across objects; a deletion of an object never cached still reaches `on_delete`; a relist
///   is applied in one step, and its deletions (tombstones) are told before its updates and
///   adds; changes are applied in batches of up to 1,000 distinct keys (fewer when a listener
///   has less room), each batch to the cache in one transaction before its notifications. With [`QueueMode::DeltaFifo`](super::QueueMode::DeltaFifo) (client-go
///   ≤ 1.35): each object's changes come together and in order, objects in the order of their
///   first queued change; a deletion of an object never cached is dropped; a relist's deletions
///   come after its updates and adds.
/// - Each handler (and each [`EventStream`]) gets its notifications one at a time, in order,
///   on its own listener: a slow handler delays only itself, until it is
///   [`MAX_LISTENER_BACKLOG`](super::MAX_LISTENER_BACKLOG) live notifications behind, which it
///   never exceeds (the informer takes from its queue only what the fullest listener has room
///   for; a relist's notifications are queued chunk by chunk as room frees up). Then the
///   informer stops taking from its queue (and the Reflector, once the queue holds
///   [`MAX_QUEUED_DELTAS`], stops reading the watch) until that listener is down to half.
///   Nothing is dropped, merged or reordered. Initial-list adds do not count toward the bound.
/// - A handler added after the informer started first receives an add, marked
///   `is_in_initial_list`, for every object in the cache, then live notifications.
/// - A handler's registration [`has_synced`](ResourceEventHandlerRegistration::has_synced) once
///   the informer has synced and that handler has handled every initial-list notification.
/// - Resync (periodic re-delivery of every cached object as an update with an unchanged
///   resource version) reaches only the handlers whose own resync period is due. An update whose
///   resource version did not change (for instance after a relist) is treated the same way.
/// - After [`remove_event_handler`](Self::remove_event_handler) returns, that handler receives
///   nothing more, except a callback that was already running.
///
/// Deliberate differences from client-go: backlogs are bounded as above (client-go's listener
/// buffers and DeltaFIFO grow without bound); a handler that panics is caught, logged and
/// counted (client-go crashes the process); a cache write that fails (a failing index function) is
/// logged and skipped instead of aborting the rest of the deltas.
pub struct SharedIndexInformer<K: Object> {
    inner: Arc<Inner<K>>,
}

impl<K: Object> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<K: Object> std::fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("name", &self.inner.name)
            .field("has_synced", &self.has_synced())
            .finish_non_exhaustive()
    }
}

struct Inner<K: Object> {
    id: u64,
    name: String,
    indexer: Indexer<K>,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    processor: Arc<Processor<K>>,
    state: Mutex<State<K>>,
    /// Held while deltas are applied and while a late handler is primed (client-go's
    /// `blockDeltas`), so a new handler sees every object exactly once.
    block_deltas: Mutex<()>,
    synced_flag: SyncFlag,
    /// Whether a tidy-up after a list is scheduled (see [`crate::memory`]).
    tidy_pending: Arc<AtomicBool>,
    synced_signal: SyncSignal,
    next_listener_id: AtomicU64,
    /// Everything the informer was configured with; fixed once built.
    config: InformerConfig<K>,
    /// The consistency checks run so far.
    consistency: Mutex<ConsistencyStats>,
    /// Warm restart and seeding.
    snap: snapshot::SnapState<K>,
}

struct State<K: Object> {
    started: bool,
    stopped: bool,
    /// Removed from its factory: stopped for good, its cache emptied.
    removed: bool,
    resync_check_period: Duration,
    reflector: Option<Arc<Reflector<K, InformerStore<K>>>>,
    /// The queue between the Reflector and the cache, while the informer runs.
    queue: Option<Arc<InformerQueue<K>>>,
}

impl<K: Object> SharedIndexInformer<K> {
    /// A builder over `lister_watcher` (client-go's `NewSharedIndexInformer` and
    /// `NewSharedIndexInformerWithOptions`), with the defaults of [`InformerConfig`] (client-go's:
    /// no resync, in-order [`QueueMode::RealFifo`](super::QueueMode::RealFifo)) and no indexes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::{InformerConfig, SharedIndexInformer};
    /// use kinformer::reflector::ListWatch;
    /// use kinformer::store::namespace_indexers;
    /// # fn lw() -> ListWatch<Pod> { unimplemented!() }
    /// # fn demo() {
    /// let informer = SharedIndexInformer::builder(lw())
    ///     .config(InformerConfig::default().resync_period(Duration::from_secs(30)))
    ///     .indexers(namespace_indexers())
    ///     .build();
    /// assert_eq!(informer.name(), "Pod");
    /// # }
    /// ```
    ///
    /// A shared `Arc<dyn ListerWatcher<K>>` is a `ListerWatcher<K>` too. Types without a
    /// static kind (`DynamicObject`) are named with
    /// [`name`](SharedIndexInformerBuilder::name) before [`build`](SharedIndexInformerBuilder::build).
    /// For a real cluster, [`new`](Self::new) makes the source from the configuration.
    #[doc(alias = "NewSharedIndexInformer")]
    #[doc(alias = "NewSharedIndexInformerWithOptions")]
    pub fn builder(
        lister_watcher: impl ListerWatcher<K> + 'static,
    ) -> SharedIndexInformerBuilder<K> {
        SharedIndexInformerBuilder {
            lister_watcher: Arc::new(lister_watcher),
            config: InformerConfig::default(),
            indexers: Indexers::default(),
            name: builder::KindName,
            type_identity: None,
        }
    }

    fn from_parts(
        name: String,
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        indexer: Indexer<K>,
        config: InformerConfig<K>,
        snap: snapshot::SnapState<K>,
    ) -> Self {
        let (synced_flag, synced_signal) = SyncSignal::new(format!("informer {name}"));
        Self {
            inner: Arc::new(Inner {
                id: NEXT_INFORMER_ID.fetch_add(1, Ordering::Relaxed),
                indexer,
                lister_watcher,
                processor: Arc::new(Processor::new()),
                state: Mutex::new(State {
                    started: false,
                    stopped: false,
                    removed: false,
                    resync_check_period: config.resync_period,
                    reflector: None,
                    queue: None,
                }),
                block_deltas: Mutex::new(()),
                synced_flag,
                tidy_pending: Arc::default(),
                synced_signal,
                next_listener_id: AtomicU64::new(1),
                config,
                consistency: Mutex::default(),
                snap,
                name,
            }),
        }
    }

    /// This informer's process-unique id.
    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    /// The configuration the informer was built with.
    pub fn config(&self) -> &InformerConfig<K> {
        &self.inner.config
    }

    /// The informer's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// What tells this informer apart from others of its name (see [`super::naming`]): the
    /// `apiVersion` of the objects it caches (`v1`, `apps/v1`), when it was built with a type
    /// identity (every factory-made informer is), and `dynamic` when its objects' type is only
    /// known at run time (`DynamicObject`, `PartialObjectMeta<DynamicObject>`).
    pub(crate) fn qualifier(&self) -> String {
        let api_version = self.inner.snap.identity.as_ref().map(|id| {
            if id.group.is_empty() {
                id.version.clone()
            } else {
                format!("{}/{}", id.group, id.version)
            }
        });
        let dynamic = std::any::TypeId::of::<K::DynamicType>() != std::any::TypeId::of::<()>();
        super::naming::qualifier(api_version, dynamic)
    }

    /// Adds a handler with the informer's default resync period (client-go's
    /// `AddEventHandler`).
    ///
    /// # Errors
    /// [`InformerError::Stopped`] when the informer has stopped.
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K>,
    ) -> Result<ResourceEventHandlerRegistration, InformerError> {
        self.add_event_handler_with(handler, HandlerOptions::default())
    }

    /// Adds a handler with options: its own resync period, a name, a dedicated thread
    /// (client-go's `AddEventHandlerWithOptions` and `AddEventHandlerWithResyncPeriod`).
    ///
    /// Resync periods follow client-go: below [`MINIMUM_RESYNC_PERIOD`] is raised to it; a
    /// period below the informer's resync check period lowers the check period if the informer
    /// has not started, and is raised to the check period if it has; an informer whose check
    /// period is zero never resyncs.
    ///
    /// # Errors
    /// [`InformerError::Stopped`] when the informer has stopped.
    #[doc(alias = "AddEventHandlerWithOptions")]
    #[doc(alias = "AddEventHandlerWithResyncPeriod")]
    pub fn add_event_handler_with(
        &self,
        handler: impl ResourceEventHandler<K>,
        options: HandlerOptions,
    ) -> Result<ResourceEventHandlerRegistration, InformerError> {
        let blocking = options.blocking;
        let handler: Arc<dyn ResourceEventHandler<K>> = Arc::new(handler);
        let (registration, ()) = self.add_listener(options, |queue| {
            let task = HandlerTask {
                handler,
                queue,
                blocking,
            };
            (Some(task), ())
        })?;
        Ok(registration)
    }

    /// Registers an [`EventStream`]: the informer's notifications as an async stream, with the
    /// informer's default resync period.
    ///
    /// # Errors
    /// [`InformerError::Stopped`] when the informer has stopped.
    pub fn stream(&self) -> Result<EventStream<K>, InformerError> {
        self.stream_with(HandlerOptions::default())
    }

    /// [`stream`](Self::stream) with options (resync period, name; a stream has no thread of
    /// its own, so `blocking` does not apply).
    ///
    /// # Errors
    /// [`InformerError::Stopped`] when the informer has stopped.
    pub fn stream_with(&self, options: HandlerOptions) -> Result<EventStream<K>, InformerError> {
        let (registration, queue) = self.add_listener(options, |queue| (None, queue))?;
        Ok(EventStream::new(
            queue,
            registration,
            Arc::downgrade(&self.inner.processor),
        ))
    }

    /// Registers a listener. `consumer` gets the listener's queue and returns the handler task
    /// to run on it, or keeps the queue itself (a stream: no task) and returns it as `T`.
    fn add_listener<T>(
        &self,
        options: HandlerOptions,
        consumer: impl FnOnce(ListenerQueue<K>) -> (Option<HandlerTask<K>>, T),
    ) -> Result<(ResourceEventHandlerRegistration, T), InformerError> {
        let inner = &self.inner;
        let mut state = inner.state.lock();
        if state.stopped {
            return Err(InformerError::Stopped(inner.name.clone()));
        }
        let mut resync = options.resync_period.unwrap_or(inner.config.resync_period);
        if !resync.is_zero() {
            if resync < MINIMUM_RESYNC_PERIOD {
                tracing::warn!(informer = %inner.name, ?resync, "resync period is too small; using the minimum of 1s");
                resync = MINIMUM_RESYNC_PERIOD;
            }
            if resync < state.resync_check_period {
                if state.started {
                    tracing::warn!(informer = %inner.name, ?resync, check = ?state.resync_check_period,
                        "resync period is smaller than the resync check period and the informer has started; using the check period");
                    resync = state.resync_check_period;
                } else {
                    state.resync_check_period = resync;
                    inner.processor.resync_check_period_changed(resync);
                }
            }
        }
        let effective = determine_resync_period(resync, state.resync_check_period);
        let id = inner.next_listener_id.fetch_add(1, Ordering::Relaxed);
        let name = options
            .name
            .unwrap_or_else(|| format!("{}/handler-{id}", inner.name));
        let (mut listener, queue) = listener(
            id,
            name,
            resync,
            effective,
            inner.processor.room(),
            Instant::now(),
        );
        let (task, kept) = consumer(queue);
        let stream = task.is_none();
        if let Some(task) = task {
            listener = listener.with_handler(task);
        }
        let registration = ResourceEventHandlerRegistration {
            id,
            informer_id: inner.id,
            shared: listener.shared.clone(),
            stream,
        };
        if !state.started {
            inner.processor.add_listener(listener, |_| {});
            return Ok((registration, kept));
        }
        // Late handler: replay the cache as initial-list adds, under the delta lock so it sees
        // each object exactly once, then tell it whether the informer has synced.
        let _deltas = inner.block_deltas.lock();
        inner.processor.add_listener(listener, |l| {
            for obj in inner.indexer.list() {
                l.add(Event::Add {
                    obj,
                    is_in_initial_list: true,
                });
            }
            if inner.synced_flag.is_synced() {
                l.add(Event::Synced);
            }
        });
        Ok((registration, kept))
    }

    /// Removes a handler (client-go's `RemoveEventHandler`). Idempotent. After it returns the
    /// handler gets nothing more, except a callback already running; await
    /// [`ResourceEventHandlerRegistration::stopped`] to wait for that one, or call
    /// [`shut_down_event_handler`](Self::shut_down_event_handler) instead (or
    /// [`drain_event_handler`](Self::drain_event_handler) to deliver what was queued first).
    ///
    /// # Errors
    /// [`InformerError::ForeignRegistration`] for a registration from another informer.
    pub fn remove_event_handler(
        &self,
        registration: &ResourceEventHandlerRegistration,
    ) -> Result<(), InformerError> {
        self.check_own(registration)?;
        let _state = self.inner.state.lock();
        let _deltas = self.inner.block_deltas.lock();
        self.inner.processor.remove_listener(registration.id);
        Ok(())
    }

    /// [`InformerError::ForeignRegistration`] unless `registration` is one of this informer's.
    fn check_own(
        &self,
        registration: &ResourceEventHandlerRegistration,
    ) -> Result<(), InformerError> {
        if registration.informer_id != self.inner.id {
            return Err(InformerError::ForeignRegistration(
                registration.name().to_owned(),
                self.inner.name.clone(),
            ));
        }
        Ok(())
    }

    /// Adds indexes, before or after start; existing objects are indexed at once.
    ///
    /// # Errors
    /// [`InformerError::Stopped`] after the informer stopped; a conflict if a name exists.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), InformerError> {
        let state = self.inner.state.lock();
        if state.stopped {
            return Err(InformerError::Stopped(self.inner.name.clone()));
        }
        self.inner.indexer.add_indexers(indexers)?;
        Ok(())
    }

    /// The cache with its indexes (client-go's `GetIndexer` and `GetStore`, which return the
    /// same cache there too): cheap to clone, shared with the informer.
    #[doc(alias = "GetIndexer")]
    #[doc(alias = "GetStore")]
    #[doc(alias = "get_indexer")]
    #[doc(alias = "get_store")]
    pub fn indexer(&self) -> Indexer<K> {
        self.inner.indexer.clone()
    }

    /// Waits until the cache has observed resource version `rv` (bookmarks count): see
    /// [`Indexer::wait_for_resource_version`]. Use it to read your own writes: after a write
    /// whose response carried `rv`, the cache holds it (and everything before it) once this
    /// returns.
    ///
    /// # Errors
    /// [`CacheWaitError::TimedOut`], [`CacheWaitError::NotComparable`] (at once), or
    /// [`CacheWaitError::Stopped`] once the informer has stopped.
    pub async fn wait_for_resource_version(
        &self,
        rv: &str,
        timeout: Duration,
    ) -> Result<(), CacheWaitError> {
        self.inner
            .indexer
            .wait_for_resource_version(rv, timeout)
            .await
    }

    /// Waits until the cache's object under `key` is at resource version `rv` or later (or the
    /// whole cache is): see [`Indexer::wait_for_key_resource_version`].
    ///
    /// # Errors
    /// As [`wait_for_resource_version`](Self::wait_for_resource_version).
    pub async fn wait_for_key_resource_version(
        &self,
        key: &str,
        rv: &str,
        timeout: Duration,
    ) -> Result<(), CacheWaitError> {
        self.inner
            .indexer
            .wait_for_key_resource_version(key, rv, timeout)
            .await
    }

    /// A lister over the cache.
    pub fn lister(&self) -> Lister<K> {
        Lister::new(self.inner.indexer.clone())
    }

    /// Whether the cache holds the initial list (client-go's `HasSynced`).
    pub fn has_synced(&self) -> bool {
        self.inner.synced_flag.is_synced()
    }

    /// An awaitable signal for [`crate::wait::wait_for_cache_sync`].
    pub fn synced_signal(&self) -> SyncSignal {
        self.inner.synced_signal.clone()
    }

    /// The resource version of the last list or watch event applied ("" before start).
    pub fn last_sync_resource_version(&self) -> String {
        self.inner
            .state
            .lock()
            .reflector
            .as_ref()
            .map(|r| r.last_sync_resource_version())
            .unwrap_or_default()
    }

    /// How long since the informer's watch last delivered an event or a bookmark, or since its
    /// last successful list if that was later; `None` before the first list. On a real API
    /// server a healthy watch gets a bookmark about every minute even when nothing changes, so
    /// a figure that keeps growing well past that means a watch that stopped delivering.
    pub fn since_last_watch_activity(&self) -> Option<Duration> {
        let reflector = self.inner.state.lock().reflector.clone();
        reflector?.since_last_watch_activity()
    }

    /// How long since the informer's last successful list (or streaming list); `None` before
    /// the first.
    pub fn since_last_list(&self) -> Option<Duration> {
        let reflector = self.inner.state.lock().reflector.clone();
        reflector?.since_last_list()
    }

    /// Whether `run` was called.
    pub fn has_started(&self) -> bool {
        self.inner.state.lock().started
    }

    /// Whether the informer has stopped.
    pub fn is_stopped(&self) -> bool {
        self.inner.state.lock().stopped
    }

    /// Whether its factory removed it
    /// ([`SharedInformerFactory::remove_informer`](crate::SharedInformerFactory::remove_informer)):
    /// it has stopped for good, its cache is empty, and it has left the metrics scrape.
    pub fn is_removed(&self) -> bool {
        self.inner.state.lock().removed
    }

    /// The current resync check period.
    pub fn resync_check_period(&self) -> Duration {
        self.inner.state.lock().resync_check_period
    }

    /// Number of registered handlers and streams.
    pub fn handler_count(&self) -> usize {
        self.inner.processor.len()
    }

    /// Each handler's (and stream's) name and backlog: notifications queued for it and not yet
    /// handled.
    pub fn handler_backlogs(&self) -> Vec<(String, usize)> {
        self.inner.processor.backlogs()
    }

    /// Each handler's (and stream's) figures: name, backlog, and how long the oldest
    /// notification it has not yet handled has waited (a stuck handler's keeps growing).
    pub fn handler_stats(&self) -> Vec<HandlerStats> {
        self.inner.processor.stats()
    }

    /// How many lists (streaming lists included) and watches the informer's reflector has
    /// started: `(lists, watches)`; every list after the first is a relist, every watch after
    /// the first a restart. `(0, 0)` before the informer runs.
    pub fn list_watch_counts(&self) -> (u64, u64) {
        let reflector = self.inner.state.lock().reflector.clone();
        reflector.map_or((0, 0), |r| r.list_watch_counts())
    }

    /// Deltas queued between the reflector and the cache (0 before the informer runs).
    pub fn queued_deltas(&self) -> usize {
        let queue = self.inner.state.lock().queue.clone();
        queue.map_or(0, |q| q.len())
    }
}
