//! `RealFifo`: the in-order informer queue (client-go's `RealFIFO`, the informers' queue since
//! Kubernetes 1.36).

mod entry;
mod options;
mod pop;
mod replace;

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use tokio::sync::{Notify, watch};

use super::delta::{Delta, DeltaType};
use super::error::QueueError;
use super::room::Room;
use super::sync_state::SyncState;
use crate::Transform;
use crate::object::{KeyFunc, Object, meta_namespace_key_func};
use crate::store::{KeyListerGetter, ReflectorStore};

use entry::Item;
pub use entry::{KeyedDelta, Popped, ReplacedAll};
pub use options::{RealFifoMode, RealFifoOptions};

/// How many distinct keys client-go's informers pop in one batch (`defaultBatchSize`).
pub const DEFAULT_BATCH_SIZE: usize = 1000;

/// A producer/consumer queue that delivers every change in the order it arrived, across all
/// objects (client-go's `RealFIFO`). A Reflector produces; an informer's process loop consumes
/// with [`RealFifo::pop`] or [`RealFifo::pop_batch`]. Share it as `Arc<RealFifo<K>>`; every
/// method takes `&self`.
///
/// # Contract
///
/// - **Order.** Entries pop in arrival order, whatever their keys: `add a, add b, update a` pops
///   as `a, b, a`. Nothing is merged or collapsed.
/// - **Deletions** are always queued, even for a key the consumer never held.
/// - **Relist** ([`RealFifoMode::Atomic`]): one [`Popped::ReplacedAll`] with every listed object.
///   ([`RealFifoMode::PerObject`]): first a `Deleted` tombstone for every queued key that the
///   list lacks and whose last queued change is not a deletion (in order of first appearance,
///   carrying the last queued object), then for every known key the list lacks that is not
///   queued (carrying the known object, or nothing if it vanished meanwhile), then a `Replaced`
///   delta per listed object in list order.
/// - **Resync** (atomic): one [`Popped::SyncAll`]. (Per-object): a `Sync` delta with the known
///   object for every known key that has nothing queued.
/// - **Bookmarks** ([`RealFifo::bookmark`]) are queued only in atomic mode with
///   `emit_bookmarks`.
/// - **Batches.** [`RealFifo::pop_batch`] hands out the longest run of leading deltas with
///   distinct keys, at most `max_unique_keys`; a repeated key ends the run. Entries of the first
///   relist never share a batch with later entries. A `ReplacedAll`, `SyncAll` or `Bookmark`
///   is always popped alone.
/// - **Sync.** [`RealFifo::has_synced`] becomes true, for good, once the queue is populated (by
///   the first relist, or by an add/update/delete before one) and every entry queued when the
///   first relist completed has been popped *and processed*. Only those entries are popped with
///   `is_in_initial_list` true.
/// - **Transformer** runs exactly once on every incoming object, outside the queue's lock;
///   never on tombstones nor on known objects re-delivered by a resync.
/// - **Errors.** An object whose key cannot be computed fails its write with
///   [`QueueError::Key`], and nothing of that write is queued (the queue does not count as
///   populated either). Keys are computed once, when queued, so no broken entry ever reaches a
///   batch.
/// - **Close.** After [`RealFifo::close`] pops drain what is queued, then return
///   [`QueueError::Closed`]; waiting pops wake up. Writes are still accepted, as in client-go.
/// - **Bound.** With [`RealFifoOptions::max_queued`], [`RealFifo::wait_for_room`] holds a
///   Reflector's watch back while the queue is full.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::ObjectMeta;
/// use kinformer::queue::{DeltaType, Popped, RealFifo};
///
/// let cm = |name: &str| Arc::new(ConfigMap {
///     metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
///     ..Default::default()
/// });
/// let fifo = RealFifo::<ConfigMap>::default();
/// fifo.add(cm("a")).unwrap();
/// fifo.add(cm("b")).unwrap();
/// fifo.update(cm("a")).unwrap();
/// // The repeated key "a" ends the first batch.
/// let first = fifo.pop_batch(1000, |popped, _initial| popped).await.unwrap();
/// let Popped::Deltas(batch) = first else { unreachable!() };
/// assert_eq!(batch.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(), ["a", "b"]);
/// let second = fifo.pop(|popped, _initial| popped).await.unwrap();
/// let Popped::Deltas(batch) = second else { unreachable!() };
/// assert_eq!(batch[0].delta_type(), DeltaType::Updated);
/// # }
/// ```
pub struct RealFifo<K> {
    inner: Mutex<Inner<K>>,
    notify: Notify,
    room: Room,
    key_func: KeyFunc<K>,
    mode: RealFifoMode<K>,
    transformer: Option<Transform<K>>,
}

struct Inner<K> {
    items: VecDeque<Item<K>>,
    sync: SyncState,
    closed: bool,
    /// The keyed, transformed objects of a relist taken in parts, queued at `replace_end`.
    replacing: Option<Vec<(String, Arc<K>)>>,
    /// The sum of the entries' weights (see `Item::weight`).
    held: usize,
    /// Entries of the initial population popped but not yet processed. They still count in
    /// `sync` (so a write during an unlocked `process` cannot declare the queue synced early,
    /// as client-go's deferred decrement ensures) but no longer bound the next batch.
    in_flight: usize,
}

impl<K> fmt::Debug for RealFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.lock();
        f.debug_struct("RealFifo")
            .field("len", &inner.items.len())
            .field("held", &inner.held)
            .field("has_synced", &inner.sync.has_synced())
            .field("closed", &inner.closed)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl<K: Object> Default for RealFifo<K> {
    fn default() -> Self {
        Self::new(RealFifoOptions::default())
    }
}

impl<K: Object> RealFifo<K> {
    /// An empty queue configured by `options`.
    pub fn new(options: RealFifoOptions<K>) -> Self {
        Self {
            inner: Mutex::new(Inner {
                items: VecDeque::new(),
                sync: SyncState::new(),
                closed: false,
                replacing: None,
                held: 0,
                in_flight: 0,
            }),
            notify: Notify::new(),
            room: Room::new(options.max_queued),
            key_func: options.key_func.unwrap_or_else(meta_namespace_key_func),
            mode: options.mode,
            transformer: options.transformer,
        }
    }

    /// Whether relists and resyncs are queued as one entry each.
    pub fn is_atomic(&self) -> bool {
        matches!(self.mode, RealFifoMode::Atomic { .. })
    }

    /// Queues an `Added` delta.
    ///
    /// # Errors
    /// [`QueueError::Key`] if the key cannot be computed; nothing changes.
    pub fn add(&self, obj: Arc<K>) -> Result<(), QueueError> {
        self.write(DeltaType::Added, obj)
    }

    /// Queues an `Updated` delta.
    ///
    /// # Errors
    /// [`QueueError::Key`] if the key cannot be computed; nothing changes.
    pub fn update(&self, obj: Arc<K>) -> Result<(), QueueError> {
        self.write(DeltaType::Updated, obj)
    }

    /// Queues a `Deleted` delta carrying `obj`, its final state, whether or not the key is
    /// known (unlike [`DeltaFifo`](super::DeltaFifo), which drops deletions of unknown keys).
    ///
    /// # Errors
    /// [`QueueError::Key`] if the key cannot be computed; nothing changes.
    pub fn delete(&self, obj: Arc<K>) -> Result<(), QueueError> {
        self.write(DeltaType::Deleted, obj)
    }

    fn write(&self, delta_type: DeltaType, obj: Arc<K>) -> Result<(), QueueError> {
        let key = (self.key_func)(&obj)?;
        let obj = self.transform(obj);
        let mut inner = self.inner.lock();
        inner.sync.mark_populated();
        inner.push(Item::Delta(KeyedDelta {
            key,
            delta: Delta::new(delta_type, obj),
        }));
        self.wake(inner);
        Ok(())
    }

    /// A BOOKMARK event reached `resource_version`. In atomic mode with `emit_bookmarks` it
    /// queues a [`Popped::Bookmark`] (client-go's `Bookmark`); otherwise it does nothing. It
    /// does not populate the queue. (The Reflector calls it for bookmarks only: an entry per
    /// watch event would end every batch after one change.)
    pub fn bookmark(&self, resource_version: &str) {
        if !matches!(
            self.mode,
            RealFifoMode::Atomic {
                emit_bookmarks: true
            }
        ) {
            return;
        }
        let mut inner = self.inner.lock();
        inner.push(Item::Bookmark(resource_version.to_owned()));
        self.wake(inner);
    }

    /// The resync timer fired. Atomic mode queues one [`Popped::SyncAll`]; per-object mode
    /// queues a `Sync` delta with the known object for every known key that has nothing queued
    /// (a queued change is newer than what the cache holds). It does not populate the queue.
    ///
    /// # Errors
    /// Never in atomic mode. Per-object: [`QueueError::Key`] for the first known object whose
    /// key cannot be computed (logged and skipped; every other key is still resynced).
    pub fn resync(&self) -> Result<(), QueueError> {
        let known = match &self.mode {
            RealFifoMode::Atomic { .. } => {
                let mut inner = self.inner.lock();
                inner.push(Item::SyncAll);
                self.wake(inner);
                return Ok(());
            }
            RealFifoMode::PerObject {
                known_objects: None,
            } => return Ok(()),
            RealFifoMode::PerObject {
                known_objects: Some(known),
            } => known,
        };
        let mut first_error = None;
        let mut inner = self.inner.lock();
        let queued: HashSet<String> = inner.queued_keys().map(str::to_owned).collect();
        for key in known.list_keys() {
            if queued.contains(&key) {
                continue;
            }
            let Some(obj) = known.get_by_key(&key) else {
                tracing::debug!(%key, "RealFifo: known key vanished during resync; skipped");
                continue;
            };
            match (self.key_func)(&obj) {
                Ok(key) => inner.push(Item::Delta(KeyedDelta {
                    key,
                    delta: Delta::new(DeltaType::Sync, obj),
                })),
                Err(err) => {
                    tracing::warn!(%key, %err, "RealFifo: cannot resync a known object");
                    first_error.get_or_insert(QueueError::Key(err));
                }
            }
        }
        self.wake(inner);
        first_error.map_or(Ok(()), Err)
    }

    /// How many entries are queued (a relist counts one in atomic mode).
    pub fn len(&self) -> usize {
        self.inner.lock().items.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many objects the queued entries hold: what
    /// [`max_queued`](RealFifoOptions::max_queued) bounds.
    pub fn queued_objects(&self) -> usize {
        self.inner.lock().held
    }

    /// Whether the initial population has been delivered (see the type's contract). Latches.
    pub fn has_synced(&self) -> bool {
        self.inner.lock().sync.has_synced()
    }

    /// Counts the queue as populated now, with nothing to pop first: an informer resuming
    /// from a snapshot is synced once its watch is established.
    pub(crate) fn mark_populated(&self) {
        self.inner.lock().sync.mark_populated();
    }

    /// A receiver whose value becomes `true`, for good, when [`RealFifo::has_synced`] does.
    pub fn synced_watch(&self) -> watch::Receiver<bool> {
        self.inner.lock().sync.subscribe()
    }

    /// Whether the queue is populated yet (a relist, or an add/update/delete, happened).
    pub fn is_populated(&self) -> bool {
        self.inner.lock().sync.is_populated()
    }

    /// Closes the queue: pops drain what is queued, then fail with [`QueueError::Closed`];
    /// waiting pops and [`wait_for_room`](Self::wait_for_room) calls wake up.
    pub fn close(&self) {
        self.inner.lock().closed = true;
        self.notify.notify_waiters();
        self.room.close();
    }

    /// Whether [`RealFifo::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.lock().closed
    }

    /// Waits while the queue holds at least [`max_queued`](RealFifoOptions::max_queued)
    /// objects, until pops bring it down to half of that (or the queue closes). Returns at once
    /// without a bound. Cancel-safe.
    pub async fn wait_for_room(&self) {
        self.room
            .wait(|| {
                let inner = self.inner.lock();
                (inner.held, inner.closed)
            })
            .await;
    }

    fn transform(&self, obj: Arc<K>) -> Arc<K> {
        match &self.transformer {
            Some(transform) => transform.apply(obj),
            None => obj,
        }
    }

    /// Releases the lock and wakes a consumer if anything is queued.
    fn wake(&self, inner: MutexGuard<'_, Inner<K>>) {
        let wake = !inner.items.is_empty();
        drop(inner);
        if wake {
            self.notify.notify_one();
        }
    }
}

impl<K> Inner<K> {
    fn push(&mut self, item: Item<K>) {
        self.held += item.weight();
        self.items.push_back(item);
    }

    /// The key of every queued delta, in queue order (repeats included).
    fn queued_keys(&self) -> impl Iterator<Item = &str> {
        self.items.iter().filter_map(|item| match item {
            Item::Delta(d) => Some(d.key.as_str()),
            _ => None,
        })
    }
}

impl<K: Object> ReflectorStore<K> for RealFifo<K> {
    type Error = QueueError;

    fn add(&self, obj: Arc<K>) -> Result<(), QueueError> {
        RealFifo::add(self, obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), QueueError> {
        RealFifo::update(self, obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), QueueError> {
        RealFifo::delete(self, obj)
    }
    fn resync(&self) -> Result<(), QueueError> {
        RealFifo::resync(self)
    }
    /// Every watch event's version: nothing to do (client-go's RealFIFO is no
    /// `ResourceVersionUpdater`); bookmarks come through [`bookmark`](Self::bookmark).
    fn update_resource_version(&self, _resource_version: &str) {}
    fn bookmark(&self, resource_version: &str) {
        RealFifo::bookmark(self, resource_version)
    }
    fn replace_begin(&self) {
        RealFifo::replace_begin(self)
    }
    fn replace_part(&self, items: Vec<Arc<K>>) -> Result<(), QueueError> {
        RealFifo::replace_part(self, items)
    }
    fn replace_end(&self, resource_version: String) -> Result<(), QueueError> {
        RealFifo::replace_end(self, resource_version)
    }
    fn replace_abort(&self) {
        RealFifo::replace_abort(self)
    }
    fn wait_for_room(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(RealFifo::wait_for_room(self))
    }
}
