//! `Fifo`: a queue holding the latest object per key (client-go's `FIFO`).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::pin::pin;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use super::error::QueueError;
use super::sync_state::{CheckOnDrop, SyncState};
use crate::object::{ExplicitKey, KeyFunc, Object, meta_namespace_key};
use crate::store::ReplaceStore;

/// A producer/consumer queue in which each key accumulates only the most recent object, and
/// keys are popped in the order they were first inserted (client-go's `FIFO`).
///
/// Use it when you want to process every object once, in its latest version, and do not care
/// about deletions or periodic resyncs. Compare [`DeltaFifo`](super::DeltaFifo), which keeps
/// every change.
///
/// # Contract
///
/// - **Latest wins.** Adding or updating a key that is queued replaces its object; the key keeps
///   its place in line (no line-jumping, no duplicate processing).
/// - **Order.** Keys pop in order of first insertion. A key deleted while queued keeps its slot:
///   re-adding it before that slot is reached puts the new object back in the old slot (exactly
///   like client-go, whose queue slot outlives the deletion). `replace` discards everything
///   pending and queues the list in list order (client-go uses map order, i.e. none).
/// - **Deletion** removes the pending object: it will not be popped.
/// - **Sync.** [`Fifo::has_synced`] is true once an add/update/delete happened before any
///   replace, or once as many entries as the first replace queued have been popped (entries
///   emptied by a deletion count too, as in client-go).
/// - **Close.** After [`Fifo::close`], `pop` still drains what is queued and then returns
///   [`QueueError::Closed`]; writes are still accepted (as in client-go).
/// - **Errors.** A write whose key cannot be computed returns [`QueueError::Key`] and leaves
///   the queue untouched.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use kinformer::object::ExplicitKey;
/// use kinformer::queue::Fifo;
/// let fifo = Fifo::for_explicit_keys();
/// fifo.add(ExplicitKey("a".into())).unwrap();
/// fifo.add(ExplicitKey("b".into())).unwrap();
/// fifo.add(ExplicitKey("a".into())).unwrap(); // already queued: keeps its place
/// let first = fifo.pop(|key, _initial| key).await.unwrap();
/// assert_eq!(first.as_str(), "a");
/// assert_eq!(fifo.list_keys(), vec!["b".to_string()]);
/// # }
/// ```
pub struct Fifo<T> {
    inner: Mutex<FifoInner<T>>,
    notify: Notify,
    key_func: KeyFunc<T>,
}

struct FifoInner<T> {
    /// Every key that has a slot in `queue`; `None` when the object was deleted since.
    slots: HashMap<String, Option<T>>,
    /// Keys in pop order, no duplicates; a key is here iff it is in `slots`.
    queue: VecDeque<String>,
    /// Number of slots holding an object.
    live: usize,
    sync: SyncState,
    closed: bool,
}

impl<T> fmt::Debug for Fifo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.lock();
        f.debug_struct("Fifo")
            .field("len", &inner.live)
            .field("has_synced", &inner.sync.has_synced())
            .field("closed", &inner.closed)
            .finish_non_exhaustive()
    }
}

impl<T> Fifo<T> {
    /// An empty queue keyed by `key_func`.
    pub fn new(key_func: KeyFunc<T>) -> Self {
        Self {
            inner: Mutex::new(FifoInner {
                slots: HashMap::new(),
                queue: VecDeque::new(),
                live: 0,
                sync: SyncState::new(),
                closed: false,
            }),
            notify: Notify::new(),
            key_func,
        }
    }

    fn key(&self, obj: &T) -> Result<String, QueueError> {
        Ok((self.key_func)(obj)?)
    }

    /// Queues `obj`, replacing the pending object of the same key if there is one (which keeps
    /// its place in line).
    ///
    /// # Errors
    /// [`QueueError::Key`] if the key cannot be computed; the queue is unchanged.
    pub fn add(&self, obj: T) -> Result<(), QueueError> {
        let key = self.key(&obj)?;
        let mut inner = self.inner.lock();
        inner.sync.mark_populated();
        inner.put(key, obj);
        drop(inner);
        self.notify.notify_one();
        Ok(())
    }

    /// The same as [`Fifo::add`].
    ///
    /// # Errors
    /// [`QueueError::Key`] if the key cannot be computed; the queue is unchanged.
    pub fn update(&self, obj: T) -> Result<(), QueueError> {
        self.add(obj)
    }

    /// Queues `obj` only if no object is pending under its key (client-go's former
    /// `AddIfNotPresent`, meant for a consumer re-queueing an item it failed to process without
    /// overwriting a newer one).
    ///
    /// # Errors
    /// [`QueueError::Key`] if the key cannot be computed; the queue is unchanged.
    pub fn add_if_not_present(&self, obj: T) -> Result<(), QueueError> {
        let key = self.key(&obj)?;
        let mut inner = self.inner.lock();
        inner.sync.mark_populated();
        if matches!(inner.slots.get(&key), Some(Some(_))) {
            return Ok(());
        }
        inner.put(key, obj);
        drop(inner);
        self.notify.notify_one();
        Ok(())
    }

    /// Removes the pending object with `obj`'s key, if any. Nothing is queued for a deletion.
    ///
    /// # Errors
    /// [`QueueError::Key`] if the key cannot be computed; the queue is unchanged.
    pub fn delete(&self, obj: &T) -> Result<(), QueueError> {
        let key = self.key(obj)?;
        let mut inner = self.inner.lock();
        inner.sync.mark_populated();
        if let Some(slot) = inner.slots.get_mut(&key)
            && slot.take().is_some()
        {
            inner.live -= 1;
        }
        Ok(())
    }

    /// Discards everything pending and queues `list` instead, in list order (for a key listed
    /// twice, the later object wins and the earlier position counts). The first replace before
    /// any other write defines the initial population that [`Fifo::has_synced`] waits for.
    ///
    /// # Errors
    /// [`QueueError::Key`] if any key cannot be computed; the queue is unchanged.
    pub fn replace(&self, list: Vec<T>, _resource_version: String) -> Result<(), QueueError> {
        let mut slots = HashMap::with_capacity(list.len());
        let mut queue = VecDeque::with_capacity(list.len());
        let keyed = list
            .into_iter()
            .map(|obj| Ok((self.key(&obj)?, obj)))
            .collect::<Result<Vec<_>, QueueError>>()?;
        for (key, obj) in keyed {
            if slots.insert(key.clone(), Some(obj)).is_none() {
                queue.push_back(key);
            }
        }
        let mut inner = self.inner.lock();
        inner.sync.first_replace(queue.len());
        inner.live = queue.len();
        inner.slots = slots;
        inner.queue = queue;
        let wake = !inner.queue.is_empty();
        drop(inner);
        if wake {
            self.notify.notify_one();
        }
        Ok(())
    }

    /// client-go's `FIFO.Resync` makes sure every pending object has a slot in the queue. That
    /// invariant always holds here, so this does nothing; it exists for the
    /// [`ReplaceStore`](crate::store::ReplaceStore) contract.
    ///
    /// # Errors
    /// Never fails.
    pub fn resync(&self) -> Result<(), QueueError> {
        Ok(())
    }

    /// The keys of the pending objects, in pop order.
    pub fn list_keys(&self) -> Vec<String> {
        let inner = self.inner.lock();
        inner
            .queue
            .iter()
            .filter(|k| matches!(inner.slots.get(*k), Some(Some(_))))
            .cloned()
            .collect()
    }

    /// How many objects are pending.
    pub fn len(&self) -> usize {
        self.inner.lock().live
    }

    /// Whether no object is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the initial population has been popped (see the type's contract).
    pub fn has_synced(&self) -> bool {
        self.inner.lock().sync.has_synced()
    }

    /// A receiver whose value becomes `true` (once, for good) when [`Fifo::has_synced`] does,
    /// so waiting needs no polling: `rx.wait_for(|s| *s).await`.
    pub fn synced_watch(&self) -> watch::Receiver<bool> {
        self.inner.lock().sync.subscribe()
    }

    /// Closes the queue: pops blocked on an empty queue return [`QueueError::Closed`]; pending
    /// items are still delivered first.
    pub fn close(&self) {
        self.inner.lock().closed = true;
        self.notify.notify_waiters();
    }

    /// Whether [`Fifo::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.lock().closed
    }

    /// Waits for an object, removes it and calls `process(object, is_in_initial_list)`, where
    /// `is_in_initial_list` is true while the queue has not synced yet.
    ///
    /// `process` runs under the queue's lock, so it may update state that must stay consistent
    /// with the queue; it must not call back into this queue (that would deadlock) and should be
    /// quick, since writers wait for it.
    ///
    /// Cancel-safe: dropping the future before it completes removes nothing. Several tasks may
    /// pop concurrently; each object goes to exactly one of them.
    ///
    /// # Errors
    /// [`QueueError::Closed`] when the queue is closed and empty.
    pub async fn pop<R>(&self, process: impl FnOnce(T, bool) -> R) -> Result<R, QueueError> {
        let (mut inner, obj, initial) = loop {
            let mut notified = pin!(self.notify.notified());
            notified.as_mut().enable();
            {
                let mut inner = self.inner.lock();
                if let Some((obj, initial)) = inner.take_next() {
                    break (inner, obj, initial);
                }
                if inner.closed {
                    return Err(QueueError::Closed);
                }
            }
            notified.await;
        };
        if !inner.queue.is_empty() {
            self.notify.notify_one();
        }
        let _publish = CheckOnDrop(&mut inner.sync);
        Ok(process(obj, initial))
    }
}

impl<T: Clone> Fifo<T> {
    /// The pending objects, in pop order.
    pub fn list(&self) -> Vec<T> {
        let inner = self.inner.lock();
        inner
            .queue
            .iter()
            .filter_map(|k| inner.slots.get(k).and_then(Clone::clone))
            .collect()
    }

    /// The pending object with `obj`'s key.
    ///
    /// # Errors
    /// [`QueueError::Key`] if the key cannot be computed.
    pub fn get(&self, obj: &T) -> Result<Option<T>, QueueError> {
        let key = self.key(obj)?;
        Ok(self.get_by_key(&key))
    }

    /// The pending object under `key`.
    pub fn get_by_key(&self, key: &str) -> Option<T> {
        self.inner.lock().slots.get(key).and_then(Clone::clone)
    }
}

impl<K: Object> Fifo<Arc<K>> {
    /// A queue of objects keyed by [`meta_namespace_key`] (`namespace/name`).
    pub fn for_objects() -> Self {
        Self::new(Arc::new(|obj: &Arc<K>| meta_namespace_key(obj.as_ref())))
    }
}

impl Fifo<ExplicitKey> {
    /// A queue of plain keys: each [`ExplicitKey`] is its own key.
    pub fn for_explicit_keys() -> Self {
        Self::new(Arc::new(|k: &ExplicitKey| Ok(k.0.clone())))
    }
}

impl<T> FifoInner<T> {
    fn put(&mut self, key: String, obj: T) {
        match self.slots.get_mut(&key) {
            Some(slot) => {
                if slot.replace(obj).is_none() {
                    self.live += 1;
                }
            }
            None => {
                self.queue.push_back(key.clone());
                self.slots.insert(key, Some(obj));
                self.live += 1;
            }
        }
    }

    /// Removes the first slot holding an object and returns it with its `is_in_initial_list`
    /// flag. Slots emptied by a deletion are dropped on the way; each counts as a consumed entry
    /// of the initial population, as in client-go's `Pop`, and publishes the synced state
    /// immediately since there is nothing to process for it.
    fn take_next(&mut self) -> Option<(T, bool)> {
        while let Some(key) = self.queue.pop_front() {
            let initial = !self.sync.has_synced();
            self.sync.consume_one();
            if let Some(obj) = self.slots.remove(&key).flatten() {
                self.live -= 1;
                return Some((obj, initial));
            }
            self.sync.check();
        }
        None
    }
}

impl<K: Send + Sync + 'static> ReplaceStore<K> for Fifo<Arc<K>> {
    type Error = QueueError;

    fn add(&self, obj: Arc<K>) -> Result<(), QueueError> {
        Fifo::add(self, obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), QueueError> {
        Fifo::update(self, obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), QueueError> {
        Fifo::delete(self, &obj)
    }
    fn replace(&self, list: Vec<Arc<K>>, resource_version: String) -> Result<(), QueueError> {
        Fifo::replace(self, list, resource_version)
    }
    fn resync(&self) -> Result<(), QueueError> {
        Fifo::resync(self)
    }
    /// Bookmarks carry nothing a FIFO needs: a no-op.
    fn update_resource_version(&self, _resource_version: &str) {}
}
