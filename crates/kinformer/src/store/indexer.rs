//! The thread-safe, indexed object cache: client-go's `Indexer` (`NewIndexer` over a
//! `threadSafeMap`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use parking_lot::RwLock;

use super::cache_state::{
    CacheState, Entry, Replacement, build_replacement, from_stored, index_values, to_stored,
};
use super::error::StoreError;
use super::index_func::{IndexFunc, Indexers, namespace_indexers};
use super::lean::{CacheMode, LeanCodec, Stored};
use super::waiters::Waiters;
use crate::object::{KeyError, KeyFunc, Object, meta_namespace_key_func, resource_version};

/// A thread-safe cache of objects by key, with any number of named indexes: client-go's
/// `Indexer` (a `Store` plus `Index`, `IndexKeys`, `ListIndexFuncValues`, `ByIndex`,
/// `GetIndexers`, `AddIndexers`).
///
/// There are three kinds of strings here, as in client-go: a *key* (computed by the key
/// function, e.g. `"ns/name"`), an *index name* (e.g. [`NAMESPACE_INDEX`](super::NAMESPACE_INDEX)),
/// and an *indexed value* (computed by an [`IndexFunc`], e.g. `"ns"`).
///
/// # Contract
///
/// - Objects are stored as `Arc<K>`: reads clone pointers, never objects. Treat what you get as
///   read-only (it is shared with the informer and every other reader).
/// - Cloning an `Indexer` is cheap; clones share one cache.
/// - Every operation takes the lock once, so each one is atomic: a reader sees either all or none
///   of a write, including its index changes. `replace` keys and indexes the new list before it
///   takes the write lock, so readers are blocked only for the swap.
/// - A failed write (no key, an index function error) returns a [`StoreError`] and changes
///   nothing: not the objects, not any index, not the resource version. *client-go panics when an
///   index function fails; a controller should not die because one object is odd.*
/// - Index functions run under the write lock and must not call back into the Indexer.
/// - `list`, `list_keys`, `by_index` and `index` return in no particular order; `index_keys` and
///   `list_index_func_values` are sorted.
/// - An update that leaves an object's indexed values unchanged does not touch the indexes, and
///   a value no object is filed under any more is removed from its index.
///
/// *Deliberate difference:* the indexed values of each object are remembered when it is written,
/// so an update or delete removes the old values without calling the index function on the old
/// object again (client-go recomputes them). For a deterministic index function the result is
/// the same, at half the calls.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::api::ObjectMeta;
/// use kinformer::Indexer;
/// use kinformer::store::NAMESPACE_INDEX;
///
/// let pod = |ns: &str, name: &str| Arc::new(Pod {
///     metadata: ObjectMeta { namespace: Some(ns.into()), name: Some(name.into()), ..Default::default() },
///     ..Default::default()
/// });
/// let cache = Indexer::<Pod>::default_namespaced();
/// cache.add(pod("prod", "web-0")).unwrap();
/// cache.add(pod("prod", "web-1")).unwrap();
/// cache.add(pod("dev", "web-0")).unwrap();
///
/// assert_eq!(cache.len(), 3);
/// assert!(cache.get_by_key("dev/web-0").is_some());
/// assert_eq!(cache.index_keys(NAMESPACE_INDEX, "prod").unwrap(), ["prod/web-0", "prod/web-1"]);
/// assert_eq!(cache.list_index_func_values(NAMESPACE_INDEX), ["dev", "prod"]);
/// ```
pub struct Indexer<K> {
    inner: Arc<Inner<K>>,
}

struct Inner<K> {
    key_func: KeyFunc<K>,
    state: RwLock<CacheState<K>>,
    /// Lean mode's codec (also in the state, for writes that need it under the lock).
    codec: Option<Arc<LeanCodec<K>>>,
    /// Who waits for the cache to reach a resource version (woken after every write).
    waiters: Waiters,
    /// Full mode: may a relist keep a cached object of the same uid and version (`staged.rs`)?
    same_content: Option<fn(&K, &K) -> bool>,
}

/// An object read out of the cache under its lock: ready, or still to decode (after the lock
/// is released).
pub(super) enum Pick<K> {
    Ready(Arc<K>),
    Encoded(Arc<str>, Stored<K>),
}

impl<K> Pick<K> {
    pub(super) fn of(entry: &Entry<K>) -> Self {
        match &entry.obj {
            Stored::Full(obj) => Self::Ready(obj.clone()),
            lean => Self::Encoded(entry.key.clone(), lean.clone()),
        }
    }
}

impl<K> Clone for Indexer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<K> fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.read();
        f.debug_struct("Indexer")
            .field("len", &state.entries.len())
            .field(
                "indexes",
                &state
                    .slots
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("resource_version", &state.resource_version)
            .field("lean", &self.inner.codec.is_some())
            .finish()
    }
}

impl<K: Object> Indexer<K> {
    /// An empty cache that keys objects with `key_func` and maintains one index per entry of
    /// `indexers` (client-go's `NewIndexer`). Pass `Indexers::new()` for a plain store
    /// (client-go's `NewStore`).
    pub fn new(key_func: KeyFunc<K>, indexers: Indexers<K>) -> Self {
        Self::with_codec(key_func, indexers, None)
    }

    pub(super) fn with_codec(
        key_func: KeyFunc<K>,
        indexers: Indexers<K>,
        codec: Option<Arc<LeanCodec<K>>>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                key_func,
                state: RwLock::new(CacheState::new(indexers, codec.clone())),
                codec,
                waiters: Waiters::default(),
                same_content: None,
            }),
        }
    }

    /// This new cache, with `same` as its [`same_content`](Self::same_content) check.
    pub(super) fn with_content_check(mut self, same: fn(&K, &K) -> bool) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.same_content = Some(same);
        }
        self
    }

    /// The check of [`with_content_check`](Self::with_content_check).
    pub(super) fn same_content(&self) -> Option<fn(&K, &K) -> bool> {
        self.inner.same_content
    }

    /// How this cache holds its objects ([`CacheMode::Full`] unless built by
    /// [`new_lean`](Self::new_lean) or [`with_cache_mode`](Self::with_cache_mode)).
    pub fn cache_mode(&self) -> CacheMode {
        match self.inner.codec {
            Some(_) => CacheMode::Lean,
            None => CacheMode::Full,
        }
    }

    /// The bytes the stored objects take in their encoded form: their sum in lean mode, `None`
    /// in full mode (objects are not encoded there). Keys, indexes and the allocator's own
    /// overhead come on top.
    pub fn encoded_bytes(&self) -> Option<usize> {
        self.inner.codec.as_ref()?;
        let state = self.inner.state.read();
        Some(state.entries.values().map(|e| e.obj.encoded_len()).sum())
    }

    /// Lean mode: forgets the decoded objects nobody holds any more, so their allocations go
    /// (see [`CacheMode`]); returns how many decoded objects are still held by someone. Full
    /// mode: does nothing and returns 0.
    pub(crate) fn prune_decoded(&self) -> usize {
        self.inner.codec.as_ref().map_or(0, |c| c.prune())
    }

    /// Lean mode: empties the hot set (see [`CacheMode`]), so the objects it kept decoded go
    /// unless someone else holds them. Full mode: does nothing.
    pub(crate) fn forget_hot_decoded(&self) {
        if let Some(codec) = &self.inner.codec {
            codec.forget_hot();
        }
    }

    /// Lean mode: how many decoded objects the codec remembers (held or not yet pruned).
    #[cfg(test)]
    pub(crate) fn decoded_entries(&self) -> usize {
        self.inner.codec.as_ref().map_or(0, |c| c.shared_len())
    }

    /// The stored form of `obj` (filed under `key`).
    pub(super) fn to_stored(&self, obj: &Arc<K>, key: &str) -> Result<Stored<K>, StoreError> {
        to_stored(self.inner.codec.as_deref(), obj, key)
    }

    /// The object of a stored form, or `None` (logged) when it cannot be decoded.
    pub(super) fn decoded(&self, key: &str, stored: &Stored<K>) -> Option<Arc<K>> {
        match from_stored(self.inner.codec.as_deref(), stored, key) {
            Ok(obj) => Some(obj),
            Err(error) => {
                tracing::error!(%key, %error, "lean cache: a stored object cannot be decoded; left out of the read (it stays cached)");
                None
            }
        }
    }

    /// The objects of `picked`, decoding the encoded ones (call it without holding the lock), on
    /// every core for a large read of a lean cache.
    pub(super) fn finish(&self, picked: Vec<Pick<K>>) -> Vec<Arc<K>> {
        let one = |p: &Pick<K>| match p {
            Pick::Ready(obj) => Some(obj.clone()),
            Pick::Encoded(key, stored) => self.decoded(key, stored),
        };
        match self.inner.codec {
            Some(_) => super::lean::par_map(&picked, one)
                .into_iter()
                .flatten()
                .collect(),
            None => picked
                .into_iter()
                .filter_map(|p| match p {
                    Pick::Ready(obj) => Some(obj),
                    Pick::Encoded(key, stored) => self.decoded(&key, &stored),
                })
                .collect(),
        }
    }

    /// What informers use: keys from [`meta_namespace_key`](crate::meta_namespace_key) and the
    /// namespace index ([`NAMESPACE_INDEX`](super::NAMESPACE_INDEX)).
    pub fn default_namespaced() -> Self {
        Self::new(meta_namespace_key_func(), namespace_indexers())
    }

    /// The key this cache files `obj` under.
    ///
    /// # Errors
    /// The key function's [`KeyError`].
    pub fn key_of(&self, obj: &K) -> Result<String, KeyError> {
        (self.inner.key_func)(obj)
    }

    /// Records the resource version a write carried, if it carried one.
    pub(super) fn note_resource_version(state: &mut CacheState<K>, obj: &K) {
        let rv = resource_version(obj);
        if !rv.is_empty() {
            state.resource_version = Some(rv.to_owned());
        }
    }

    /// Runs `f` on the cache under one acquisition of the read lock.
    pub(super) fn with_state<R>(&self, f: impl FnOnce(&CacheState<K>) -> R) -> R {
        f(&self.inner.state.read())
    }

    /// Runs `f` on the cache under one acquisition of the write lock (store transactions).
    pub(super) fn with_state_mut<R>(&self, f: impl FnOnce(&mut CacheState<K>) -> R) -> R {
        let r = f(&mut self.inner.state.write());
        self.inner.waiters.wake();
        r
    }

    /// The waiters for a resource version (see [`wait_for_resource_version`](Self::wait_for_resource_version)).
    pub(super) fn waiters(&self) -> &Waiters {
        &self.inner.waiters
    }

    /// Stores `obj`, replacing any object with the same key (client-go's `Add`; the same as
    /// [`update`](Self::update)).
    ///
    /// # Errors
    /// [`StoreError::Key`] or [`StoreError::IndexFunc`]; the cache is then unchanged.
    pub fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.upsert(obj).map(drop)
    }

    /// Stores `obj`, replacing any object with the same key (client-go's `Update`).
    ///
    /// # Errors
    /// [`StoreError::Key`] or [`StoreError::IndexFunc`]; the cache is then unchanged.
    pub fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.upsert(obj).map(drop)
    }

    /// Stores `obj` and returns the object it replaced, under one acquisition of the lock (the
    /// informer's process loop needs the old object to tell an add from an update).
    ///
    /// # Errors
    /// [`StoreError::Key`] or [`StoreError::IndexFunc`]; the cache is then unchanged.
    pub fn upsert(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.key_of(&obj)?;
        let stored = self.to_stored(&obj, &key)?;
        let mut state = self.inner.state.write();
        let old = state.upsert(key.clone(), &obj, stored)?;
        Self::note_resource_version(&mut state, &obj);
        drop(state);
        self.inner.waiters.wake();
        Ok(old.and_then(|old| self.decoded(&key, &old)))
    }

    /// Removes the object with `obj`'s key and returns it, if it was there (client-go's
    /// `Delete`). The resource version of `obj` is recorded even if nothing was removed, as in
    /// client-go: it is the deletion's resource version.
    ///
    /// # Errors
    /// [`StoreError::Key`]; the cache is then unchanged.
    pub fn delete(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.key_of(obj)?;
        let mut state = self.inner.state.write();
        let old = state.remove(&key);
        Self::note_resource_version(&mut state, obj);
        drop(state);
        self.inner.waiters.wake();
        Ok(old.and_then(|old| self.decoded(&key, &old)))
    }

    /// Removes the object stored under `key` and returns it, if it was there. This is how a
    /// tombstone ([`DeletedFinalStateUnknown`](crate::DeletedFinalStateUnknown)) is deleted.
    /// It records no resource version (there is no object to take it from). Any string is
    /// accepted: a key that is not stored, malformed or not, removes nothing.
    ///
    /// # Errors
    /// None today; the `Result` leaves room for stores that can fail.
    pub fn delete_by_key(&self, key: &str) -> Result<Option<Arc<K>>, StoreError> {
        let old = self.inner.state.write().remove(key);
        self.inner.waiters.wake();
        Ok(old.and_then(|old| self.decoded(key, &old)))
    }

    /// Every stored object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        let state = self.inner.state.read();
        let picked: Vec<Pick<K>> = state.entries.values().map(Pick::of).collect();
        drop(state);
        self.finish(picked)
    }

    /// Every stored key, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        let state = self.inner.state.read();
        state.entries.keys().map(|k| k.to_string()).collect()
    }

    /// The stored object with `obj`'s key.
    ///
    /// # Errors
    /// [`StoreError::Key`] when `obj` has no key.
    pub fn get(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.key_of(obj)?;
        Ok(self.get_by_key(&key))
    }

    /// The object stored under `key`.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        let state = self.inner.state.read();
        let picked = Pick::of(state.entries.get(key)?);
        drop(state);
        match picked {
            Pick::Ready(obj) => Some(obj),
            Pick::Encoded(key, stored) => self.decoded(&key, &stored),
        }
    }

    /// Replaces everything with `list`, taken at `resource_version` (client-go's `Replace`).
    /// Objects with equal keys: the later one wins. Every index is rebuilt.
    ///
    /// The new contents are keyed and indexed before the write lock is taken; readers see the
    /// old contents until the swap, then the new ones. An empty `resource_version` records
    /// none ([`last_resource_version`](Self::last_resource_version) becomes `None`).
    ///
    /// # Errors
    /// [`StoreError::Key`] or [`StoreError::IndexFunc`] for any object of the list; the cache
    /// is then unchanged.
    pub fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        drop(self.swap(list, resource_version)?);
        Ok(())
    }

    /// [`replace`](Self::replace), returning the previous contents (for the caller to inspect
    /// or drop after the lock is released).
    pub(super) fn swap(
        &self,
        list: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<HashMap<Arc<str>, Entry<K>>, StoreError> {
        let funcs = self.index_funcs();
        let replacement = build_replacement(
            &self.inner.key_func,
            &funcs,
            list,
            self.inner.codec.as_deref(),
        )?;
        self.install(replacement, resource_version)
    }

    /// The index functions, in slot order (for building a replacement outside the lock).
    pub(super) fn index_funcs(&self) -> Vec<(String, IndexFunc<K>)> {
        let state = self.inner.state.read();
        state
            .funcs()
            .map(|(n, f)| (n.to_owned(), f.clone()))
            .collect()
    }

    /// Lean mode's codec, `None` in full mode.
    pub(super) fn codec(&self) -> Option<&LeanCodec<K>> {
        self.inner.codec.as_deref()
    }

    /// Swaps in a replacement built outside the lock, returning the previous contents.
    pub(super) fn install(
        &self,
        replacement: Replacement<K>,
        resource_version: &str,
    ) -> Result<HashMap<Arc<str>, Entry<K>>, StoreError> {
        let mut state = self.inner.state.write();
        let old = state.install(replacement)?;
        state.resource_version =
            (!resource_version.is_empty()).then(|| resource_version.to_owned());
        drop(state);
        self.inner.waiters.wake();
        Ok(old)
    }

    /// Does nothing: a plain store has nothing to resync (client-go's `Resync`, deprecated
    /// there for stores). Kept so an Indexer can stand where a [`ReplaceStore`](super::ReplaceStore) is expected.
    ///
    /// # Errors
    /// Never.
    pub fn resync(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// The number of stored objects.
    pub fn len(&self) -> usize {
        self.inner.state.read().entries.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The resource version of the last write: the list's for [`replace`](Self::replace), the
    /// object's for add/update/delete, a bookmark's for [`bookmark`](Self::bookmark). `None`
    /// before any write that carried one (client-go's `LastStoreSyncResourceVersion`, `""`).
    ///
    /// Writes of objects without a resource version leave it unchanged. *client-go records the
    /// empty string for them; an object that carries no version says nothing about how current
    /// the store is, so kinformer keeps the last one it knows.*
    pub fn last_resource_version(&self) -> Option<String> {
        self.inner.state.read().resource_version.clone()
    }

    /// Records that the store is current at `resource_version` without any object changing
    /// (client-go's `Bookmark`). An empty version records none.
    pub fn bookmark(&self, resource_version: &str) {
        self.inner.state.write().resource_version =
            (!resource_version.is_empty()).then(|| resource_version.to_owned());
        self.inner.waiters.wake();
    }

    /// The stored objects that share at least one indexed value with `obj` in the index
    /// `index_name` (client-go's `Index`), each once, in no particular order. `obj` need not be
    /// stored; it is only a query.
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`], or [`StoreError::IndexFunc`] (with `key: None`) when the
    /// index function fails on `obj`.
    pub fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>, StoreError> {
        let state = self.inner.state.read();
        let slot = state.slot(index_name)?;
        let values = index_values(&slot.name, &slot.func, obj, None)?;
        let picked: Vec<Pick<K>> = match values.as_slice() {
            // The common case: one value, whose key set needs no de-duplication.
            [value] => slot
                .index
                .get(value.as_str())
                .map(|keys| {
                    keys.iter()
                        .filter_map(|k| state.entries.get(k).map(Pick::of))
                        .collect()
                })
                .unwrap_or_default(),
            values => {
                let mut keys: std::collections::HashSet<&Arc<str>> =
                    std::collections::HashSet::new();
                for value in values {
                    if let Some(set) = slot.index.get(value.as_str()) {
                        keys.extend(set);
                    }
                }
                keys.into_iter()
                    .filter_map(|k| state.entries.get(k).map(Pick::of))
                    .collect()
            }
        };
        drop(state);
        Ok(self.finish(picked))
    }

    /// The keys of the stored objects filed under `indexed_value` in `index_name`, sorted
    /// (client-go's `IndexKeys`).
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`].
    pub fn index_keys(
        &self,
        index_name: &str,
        indexed_value: &str,
    ) -> Result<Vec<String>, StoreError> {
        let state = self.inner.state.read();
        let slot = state.slot(index_name)?;
        let mut keys: Vec<String> = slot
            .index
            .get(indexed_value)
            .map(|keys| keys.iter().map(|k| k.to_string()).collect())
            .unwrap_or_default();
        drop(state);
        keys.sort_unstable();
        Ok(keys)
    }

    /// Every value at least one stored object is filed under in `index_name`, sorted
    /// (client-go's `ListIndexFuncValues`). Empty for an unknown index, as in client-go.
    pub fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        let state = self.inner.state.read();
        let mut values: Vec<String> = match state.slot(index_name) {
            Ok(slot) => slot.index.keys().map(|v| v.to_string()).collect(),
            Err(_) => Vec::new(),
        };
        drop(state);
        values.sort_unstable();
        values
    }

    /// The stored objects filed under `indexed_value` in `index_name`, in no particular order
    /// (client-go's `ByIndex`).
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`].
    pub fn by_index(
        &self,
        index_name: &str,
        indexed_value: &str,
    ) -> Result<Vec<Arc<K>>, StoreError> {
        let state = self.inner.state.read();
        let slot = state.slot(index_name)?;
        let picked: Vec<Pick<K>> = slot
            .index
            .get(indexed_value)
            .map(|keys| {
                keys.iter()
                    .filter_map(|k| state.entries.get(k).map(Pick::of))
                    .collect()
            })
            .unwrap_or_default();
        drop(state);
        Ok(self.finish(picked))
    }

    /// The registered index functions by name (client-go's `GetIndexers`).
    pub fn indexers(&self) -> Indexers<K> {
        let state = self.inner.state.read();
        state
            .funcs()
            .map(|(n, f)| (n.to_owned(), f.clone()))
            .collect()
    }

    /// Whether an index named `index_name` is registered.
    pub fn has_index(&self, index_name: &str) -> bool {
        self.inner.state.read().slot(index_name).is_ok()
    }

    /// Registers more indexes; every stored object is indexed with them at once, so this works
    /// on a cache that already holds objects (client-go's `AddIndexers`, which allows this since
    /// informers accept indexers after start).
    ///
    /// # Errors
    /// [`StoreError::IndexerConflict`] when a name is already registered, or
    /// [`StoreError::IndexFunc`] when a new function fails on a stored object. Either way no
    /// index is added.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), StoreError> {
        self.inner.state.write().add_indexers(indexers)
    }
}
