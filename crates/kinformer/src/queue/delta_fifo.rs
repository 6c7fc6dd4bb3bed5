//! `DeltaFifo`: the informer's queue of per-object change lists (client-go's `DeltaFIFO`).

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use super::delta::{Delta, DeltaType, Deltas};
use super::error::QueueError;
use super::options::DeltaFifoOptions;
use super::room::{Room, wait_until};
use super::sync_state::{CheckOnDrop, SyncState};
use crate::Transform;

mod replace;
use crate::object::{
    DeletedFinalStateUnknown, KeyFunc, Object, ObjectOrTombstone, meta_namespace_key_func,
};
use crate::store::{KeyListerGetter, ReflectorStore};

/// A producer/consumer queue that accumulates, per object key, every change ([`Deltas`]) since
/// the key was last popped (client-go's `DeltaFIFO`). A Reflector produces; the informer's
/// process loop consumes with [`DeltaFifo::pop`]. Share it as `Arc<DeltaFifo<K>>`; every
/// method takes `&self`.
///
/// # Contract
///
/// - **Order.** Keys pop in the order they were first queued; a queued key that receives more
///   deltas keeps its place. `pop` hands out a key's whole [`Deltas`], oldest first, never empty.
/// - **Deletions collapse.** Two consecutive `Deleted` deltas become one: a real deletion wins
///   over a [`DeletedFinalStateUnknown`] tombstone; of two real ones, the first is kept.
/// - **Dropped deletions.** `delete` of a key that is neither queued nor known (see
///   [`DeltaFifoOptions::known_objects`]) does nothing: the deletion was already reported (by a
///   relist, for example).
/// - **Replace** (a relist) queues `Replaced` (or `Sync` unless
///   [`DeltaFifoOptions::emit_delta_type_replaced`]) for every listed object, in list order; then
///   a `Deleted` tombstone for every queued key that is not listed (in queue order, carrying the
///   newest queued object), then for every known key that is neither listed nor queued (in the
///   order `known_objects.list_keys()` gives, carrying the known object, or nothing if it has
///   vanished meanwhile).
/// - **Resync** queues `Sync` with the known object for every known key that has no queued
///   deltas (a queued delta is newer than what the cache holds).
/// - **Sync.** [`DeltaFifo::has_synced`] becomes true, for good, once the queue is populated
///   (by the first `replace`, or by an add/update/delete before any replace) and the first
///   replace's population (its distinct keys plus its tombstones) has been popped *and
///   processed*. [`DeltaFifo::synced_watch`] publishes the same moment.
/// - **Transformer** runs exactly once per incoming object, never on `Sync` deltas from
///   `resync` or on tombstones.
/// - **Errors.** An object whose key cannot be computed makes the call fail with
///   [`QueueError::Key`] and leaves the queue, and its sync accounting, unchanged (client-go
///   has already marked the queue populated at that point; we do not, so a rejected write cannot
///   declare an informer synced).
/// - **Close.** After [`DeltaFifo::close`] pops drain what is queued, then return
///   [`QueueError::Closed`]; a pop waiting on an empty queue wakes up. Writes are still
///   accepted, as in client-go.
///
/// # Known objects and the consumer
///
/// `replace`, `delete` and `resync` consult the known objects while holding the queue's lock,
/// and `pop` calls its `process` closure under that same lock. A consumer that updates the
/// known objects (the Indexer) inside `process` therefore never races with a relist: the key it
/// just popped is either still queued or already known. Do it that way.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::ObjectMeta;
/// use kinformer::queue::{DeltaFifo, DeltaType};
///
/// let cm = |v: &str| Arc::new(ConfigMap {
///     metadata: ObjectMeta { name: Some("cfg".into()), resource_version: Some(v.into()), ..Default::default() },
///     ..Default::default()
/// });
/// let fifo = Arc::new(DeltaFifo::<ConfigMap>::new(Default::default()));
/// fifo.add(cm("1")).unwrap();
/// fifo.update(cm("2")).unwrap();
/// let types = fifo
///     .pop(|deltas, _initial| deltas.iter().map(|d| d.delta_type).collect::<Vec<_>>())
///     .await
///     .unwrap();
/// assert_eq!(types, [DeltaType::Added, DeltaType::Updated]);
/// assert!(fifo.has_synced());
/// # }
/// ```
pub struct DeltaFifo<K> {
    inner: Mutex<Inner<K>>,
    notify: Notify,
    /// The bound [`DeltaFifo::wait_for_room`] waits on.
    room: Room,
    key_func: KeyFunc<K>,
    known_objects: Option<Arc<dyn KeyListerGetter<K>>>,
    emit_delta_type_replaced: bool,
    transformer: Option<Transform<K>>,
}

struct Inner<K> {
    /// Every queued key's deltas; never empty.
    items: HashMap<String, Deltas<K>>,
    /// Keys in pop order, no duplicates; a key is here iff it is in `items`.
    queue: VecDeque<String>,
    sync: SyncState,
    closed: bool,
    /// Keys listed so far by a replace taken in parts (`replace_begin` .. `replace_end`).
    replacing: Option<HashSet<String>>,
    /// Deltas held, over all keys.
    delta_count: usize,
    /// The next replace's deletions carry their last known object as a plain deletion, not a
    /// tombstone (the first list after a snapshot or seed; see [`crate::snapshot`]).
    deletes_as_objects: bool,
}

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.lock();
        f.debug_struct("DeltaFifo")
            .field("len", &inner.queue.len())
            .field("has_synced", &inner.sync.has_synced())
            .field("closed", &inner.closed)
            .field("emit_delta_type_replaced", &self.emit_delta_type_replaced)
            .finish_non_exhaustive()
    }
}

impl<K: Object> Default for DeltaFifo<K> {
    fn default() -> Self {
        Self::new(DeltaFifoOptions::default())
    }
}

impl<K: Object> DeltaFifo<K> {
    /// An empty queue configured by `options`.
    pub fn new(options: DeltaFifoOptions<K>) -> Self {
        Self {
            inner: Mutex::new(Inner {
                items: HashMap::new(),
                queue: VecDeque::new(),
                sync: SyncState::new(),
                closed: false,
                replacing: None,
                delta_count: 0,
                deletes_as_objects: false,
            }),
            room: Room::new(options.max_queued_deltas),
            notify: Notify::new(),
            key_func: options.key_func.unwrap_or_else(meta_namespace_key_func),
            known_objects: options.known_objects,
            emit_delta_type_replaced: options.emit_delta_type_replaced,
            transformer: options.transformer,
        }
    }

    /// The key of an object or a tombstone (client-go's `KeyOf`, minus its `Deltas` case: use
    /// `deltas.newest()`).
    ///
    /// # Errors
    /// [`QueueError::Key`] if the key function rejects the object.
    pub fn key_of(&self, obj: &ObjectOrTombstone<K>) -> Result<String, QueueError> {
        match obj {
            ObjectOrTombstone::Object(o) => Ok((self.key_func)(o)?),
            ObjectOrTombstone::Tombstone(t) => Ok(t.key.clone()),
        }
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

    /// Queues a `Deleted` delta carrying `obj` (its final state), unless the key is neither
    /// queued nor known: then the deletion was already reported and it is dropped.
    ///
    /// # Errors
    /// [`QueueError::Key`] if the key cannot be computed; nothing changes.
    pub fn delete(&self, obj: Arc<K>) -> Result<(), QueueError> {
        let key = (self.key_func)(&obj)?;
        let mut inner = self.inner.lock();
        inner.sync.mark_populated();
        let known = || {
            self.known_objects
                .as_ref()
                .is_some_and(|k| k.get_by_key(&key).is_some())
        };
        if !inner.items.contains_key(&key) && !known() {
            tracing::trace!(%key, "DeltaFifo: dropping deletion of an object neither queued nor known");
            return Ok(());
        }
        self.queue_object(&mut inner, key, DeltaType::Deleted, obj);
        drop(inner);
        self.notify.notify_one();
        Ok(())
    }

    fn write(&self, delta_type: DeltaType, obj: Arc<K>) -> Result<(), QueueError> {
        let key = (self.key_func)(&obj)?;
        let mut inner = self.inner.lock();
        inner.sync.mark_populated();
        self.queue_object(&mut inner, key, delta_type, obj);
        drop(inner);
        self.notify.notify_one();
        Ok(())
    }

    /// Queues a `Sync` delta with the known object for every known key that has no queued
    /// deltas. Does nothing without [`DeltaFifoOptions::known_objects`].
    ///
    /// # Errors
    /// [`QueueError::Key`] for the first known object whose key cannot be computed; it is
    /// skipped (logged) and every other key is still resynced.
    pub fn resync(&self) -> Result<(), QueueError> {
        let Some(known) = &self.known_objects else {
            return Ok(());
        };
        let mut first_error = None;
        let mut inner = self.inner.lock();
        let before = inner.queue.len();
        for key in known.list_keys() {
            let Some(obj) = known.get_by_key(&key) else {
                tracing::debug!(%key, "DeltaFifo: known key vanished during resync; skipped");
                continue;
            };
            let id = match (self.key_func)(&obj) {
                Ok(id) => id,
                Err(err) => {
                    tracing::warn!(%key, %err, "DeltaFifo: cannot resync a known object");
                    first_error.get_or_insert(QueueError::Key(err));
                    continue;
                }
            };
            if inner.items.contains_key(&id) {
                continue;
            }
            Self::push(&mut inner, id, Delta::new(DeltaType::Sync, obj));
        }
        let wake = inner.queue.len() > before;
        drop(inner);
        if wake {
            self.notify.notify_one();
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Waits (without polling) for a queued key, removes it with all its deltas and returns
    /// `process(deltas, is_in_initial_list)`. `is_in_initial_list` is true while the queue has
    /// not synced, i.e. for the items of the first replace's population (client-go's
    /// `isInInitialList`).
    ///
    /// `process` runs under the queue's lock: update the known objects there (see the type's
    /// docs). It must not call back into this queue (that would deadlock) and should be quick,
    /// since producers wait for it. If this pop completes the initial population,
    /// [`DeltaFifo::has_synced`] turns true only after `process` has returned.
    ///
    /// Cancel-safe: dropping the future before it completes removes nothing. Several tasks may
    /// pop at once: each key's deltas go to exactly one of them and `process` calls never
    /// overlap, but whatever they do after `pop` returns may (client-go has the same caveat:
    /// one consumer is the intended use). If `process` panics, the popped deltas are lost, as
    /// in client-go; the queue itself stays consistent and usable.
    ///
    /// # Errors
    /// [`QueueError::Closed`] when the queue is closed and empty.
    pub async fn pop<R>(
        &self,
        process: impl FnOnce(Deltas<K>, bool) -> R,
    ) -> Result<R, QueueError> {
        let popped = wait_until(&self.notify, || {
            let mut inner = self.inner.lock();
            match inner.take_next() {
                Some((deltas, initial)) => Some(Ok((inner, deltas, initial))),
                None if inner.closed => Some(Err(QueueError::Closed)),
                None => None,
            }
        })
        .await;
        let (mut inner, deltas, initial) = popped?;
        if !inner.queue.is_empty() {
            self.notify.notify_one();
        }
        self.room.popped(inner.delta_count);
        let _publish = CheckOnDrop(&mut inner.sync);
        Ok(process(deltas, initial))
    }

    /// Like [`pop`](Self::pop), but takes the next object's deltas only when there are at
    /// most `max_deltas` of them; otherwise removes nothing and returns `Ok(Err(n))`, `n` their
    /// number (for a consumer that must make room for them first).
    ///
    /// # Errors
    /// [`QueueError::Closed`] when the queue is closed and empty.
    pub(crate) async fn pop_within<R>(
        &self,
        max_deltas: usize,
        process: impl FnOnce(Deltas<K>, bool) -> R,
    ) -> Result<Result<R, usize>, QueueError> {
        let popped = wait_until(&self.notify, || {
            let mut inner = self.inner.lock();
            let front = inner
                .queue
                .front()
                .and_then(|k| inner.items.get(k))
                .map(|d| d.len());
            if let Some(n) = front.filter(|n| *n > max_deltas) {
                return Some(Ok(Err(n)));
            }
            match inner.take_next() {
                Some((deltas, initial)) => Some(Ok(Ok((inner, deltas, initial)))),
                None if inner.closed => Some(Err(QueueError::Closed)),
                None => None,
            }
        })
        .await;
        let (mut inner, deltas, initial) = match popped? {
            Ok(taken) => taken,
            Err(n) => return Ok(Err(n)),
        };
        if !inner.queue.is_empty() {
            self.notify.notify_one();
        }
        self.room.popped(inner.delta_count);
        let _publish = CheckOnDrop(&mut inner.sync);
        Ok(Ok(process(deltas, initial)))
    }

    /// The queued keys, in pop order.
    pub fn list_keys(&self) -> Vec<String> {
        self.inner.lock().queue.iter().cloned().collect()
    }

    /// The newest object of every queued key, in pop order (a tombstone if the newest delta is a
    /// missed deletion).
    pub fn list(&self) -> Vec<ObjectOrTombstone<K>> {
        let inner = self.inner.lock();
        inner
            .queue
            .iter()
            .filter_map(|k| inner.items.get(k)?.newest().map(|d| d.object.clone()))
            .collect()
    }

    /// A copy of the deltas queued under `key`.
    pub fn get_by_key(&self, key: &str) -> Option<Deltas<K>> {
        self.inner.lock().items.get(key).cloned()
    }

    /// A copy of the deltas queued under `obj`'s key.
    ///
    /// # Errors
    /// [`QueueError::Key`] if the key cannot be computed.
    pub fn get(&self, obj: &K) -> Result<Option<Deltas<K>>, QueueError> {
        let key = (self.key_func)(obj)?;
        Ok(self.get_by_key(&key))
    }

    /// How many keys are queued.
    pub fn len(&self) -> usize {
        self.inner.lock().queue.len()
    }

    /// Whether no key is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    /// Whether the next complete replace queues its deletions as plain deletions of the last
    /// known object (where one is known), not tombstones: the first list after a snapshot or
    /// seed. A replace turns it off.
    pub(crate) fn deletes_as_objects(&self, on: bool) {
        self.inner.lock().deletes_as_objects = on;
    }

    /// A receiver whose value becomes `true`, for good, when [`DeltaFifo::has_synced`] does:
    /// `rx.wait_for(|synced| *synced).await` waits without polling.
    pub fn synced_watch(&self) -> watch::Receiver<bool> {
        self.inner.lock().sync.subscribe()
    }

    /// Whether the queue is populated yet (a replace, or an add/update/delete, happened).
    pub fn is_populated(&self) -> bool {
        self.inner.lock().sync.is_populated()
    }

    /// Closes the queue: pops drain what is queued, then fail with [`QueueError::Closed`]; a pop
    /// waiting on an empty queue wakes up and fails.
    pub fn close(&self) {
        self.inner.lock().closed = true;
        self.notify.notify_waiters();
        self.room.close();
    }

    /// Whether [`DeltaFifo::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.lock().closed
    }

    /// Appends a delta carrying `obj`, after running the transformer on it.
    fn queue_object(&self, inner: &mut Inner<K>, key: String, delta_type: DeltaType, obj: Arc<K>) {
        let obj = match &self.transformer {
            Some(transform) => transform.apply(obj),
            None => obj,
        };
        Self::push(inner, key, Delta::new(delta_type, obj));
    }

    fn queue_tombstone(inner: &mut Inner<K>, key: String, obj: Option<Arc<K>>) {
        let object = match obj {
            Some(obj) if inner.deletes_as_objects => ObjectOrTombstone::Object(obj),
            obj => ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
                key: key.clone(),
                obj,
            }),
        };
        let delta = Delta {
            delta_type: DeltaType::Deleted,
            object,
        };
        Self::push(inner, key, delta);
    }

    fn push(inner: &mut Inner<K>, key: String, delta: Delta<K>) {
        match inner.items.entry(key) {
            Entry::Occupied(mut e) => {
                let before = e.get().len();
                e.get_mut().push_dedup(delta);
                let after = e.get().len();
                inner.delta_count = (inner.delta_count + after).saturating_sub(before);
            }
            Entry::Vacant(e) => {
                inner.queue.push_back(e.key().clone());
                e.insert(Deltas::from(vec![delta]));
                inner.delta_count += 1;
            }
        }
    }

    /// Deltas held now, over all keys.
    pub fn queued_deltas(&self) -> usize {
        self.inner.lock().delta_count
    }

    /// Waits while the queue holds at least
    /// [`max_queued_deltas`](super::DeltaFifoOptions::max_queued_deltas), until pops bring it
    /// down to half of that (or the queue closes). Returns at once without a bound. A
    /// Reflector awaits it before reading each watch event, so a burst stays on the wire.
    ///
    /// Cancel-safe; never loses or reorders anything.
    pub async fn wait_for_room(&self) {
        self.room
            .wait(|| {
                let inner = self.inner.lock();
                (inner.delta_count, inner.closed)
            })
            .await;
    }
}

impl<K> Inner<K> {
    /// Removes the front key's deltas with its `is_in_initial_list` flag, and counts it against
    /// the initial population (published by the caller once processed).
    fn take_next(&mut self) -> Option<(Deltas<K>, bool)> {
        while let Some(key) = self.queue.pop_front() {
            let initial = !self.sync.has_synced();
            self.sync.consume_one();
            match self.items.remove(&key) {
                Some(deltas) => {
                    self.delta_count = self.delta_count.saturating_sub(deltas.len());
                    return Some((deltas, initial));
                }
                None => {
                    tracing::error!(%key, "DeltaFifo: queued key without deltas; skipped");
                    self.sync.check();
                }
            }
        }
        None
    }
}

impl<K: Object> ReflectorStore<K> for DeltaFifo<K> {
    type Error = QueueError;

    fn add(&self, obj: Arc<K>) -> Result<(), QueueError> {
        DeltaFifo::add(self, obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), QueueError> {
        DeltaFifo::update(self, obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), QueueError> {
        DeltaFifo::delete(self, obj)
    }
    fn resync(&self) -> Result<(), QueueError> {
        DeltaFifo::resync(self)
    }
    /// Bookmarks carry nothing the queue needs: a no-op.
    fn update_resource_version(&self, _resource_version: &str) {}
    fn replace_begin(&self) {
        DeltaFifo::replace_begin(self)
    }
    fn replace_part(&self, items: Vec<Arc<K>>) -> Result<(), QueueError> {
        DeltaFifo::replace_part(self, items)
    }
    fn replace_end(&self, resource_version: String) -> Result<(), QueueError> {
        DeltaFifo::replace_end(self, resource_version)
    }
    fn replace_abort(&self) {
        DeltaFifo::replace_abort(self)
    }
    fn wait_for_room(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(DeltaFifo::wait_for_room(self))
    }
}
