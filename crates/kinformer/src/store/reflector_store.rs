//! The contract between a Reflector and the store it fills.

use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;

use super::{Indexer, StoreError};
use crate::object::Object;

/// What a Reflector writes into: client-go's `Store` as seen by `Reflector.ListAndWatch`
/// (`Add`, `Update`, `Delete`, `Replace`, `Resync`) and its `ResourceVersionUpdater`, with the
/// list taken in parts as it arrives.
///
/// Every method is required, so a store that wraps another forwards the whole protocol by
/// construction. The informer's queues implement it directly; a store that wants a list in one
/// piece (client-go's `Replace`) implements [`ReplaceStore`] and is wrapped in
/// [`ReplaceOnce`].
///
/// # The list protocol
///
/// A list is [`replace_begin`](Self::replace_begin), any number of
/// [`replace_part`](Self::replace_part) in server order, then
/// [`replace_end`](Self::replace_end) with the list's resourceVersion, or
/// [`replace_abort`](Self::replace_abort) when the list fails. Begin + parts + end must have the
/// effect of one client-go `Replace` with all the parts' items; a list that starts over (an
/// expired continue token) calls `replace_begin` again. Taking a list in parts lets a consumer
/// apply it while it downloads, so a relist never holds the whole new list next to the cached
/// one.
pub trait ReflectorStore<K>: Send + Sync {
    /// The error a write can fail with. The Reflector logs it and carries on.
    type Error: std::error::Error + Send + Sync + 'static;

    /// An object was added (watch `ADDED`).
    fn add(&self, obj: Arc<K>) -> Result<(), Self::Error>;
    /// An object was modified (watch `MODIFIED`).
    fn update(&self, obj: Arc<K>) -> Result<(), Self::Error>;
    /// An object was deleted (watch `DELETED`), carrying its final state.
    fn delete(&self, obj: Arc<K>) -> Result<(), Self::Error>;
    /// The resync timer fired (client-go's `Resync`).
    fn resync(&self) -> Result<(), Self::Error>;

    /// A list starts (again: the parts before a second call no longer count for detecting
    /// deletions).
    fn replace_begin(&self);
    /// The next items of the list, in server order.
    fn replace_part(&self, items: Vec<Arc<K>>) -> Result<(), Self::Error>;
    /// The list is complete at `resource_version`: whatever the store holds that no part
    /// listed is gone.
    fn replace_end(&self, resource_version: String) -> Result<(), Self::Error>;
    /// The list failed: nothing is deleted. (Whether the parts already given stay is the
    /// store's to say: the informer's queues keep them, they are real and newer states.)
    fn replace_abort(&self);

    /// Resolves when the store can take more: a Reflector awaits it before reading each watch
    /// event, so a store with a bounded backlog slows the watch down instead of growing.
    fn wait_for_room(&self) -> BoxFuture<'_, ()>;
    /// The reflector's resource version advanced: called after every watch event it applied
    /// (client-go's `ResourceVersionUpdater`).
    fn update_resource_version(&self, resource_version: &str);
    /// A BOOKMARK event reached `resource_version` (client-go's `ReflectorBookmarkStore`):
    /// called for bookmarks only, after [`update_resource_version`](Self::update_resource_version).
    /// The informer's RealFifo queues a bookmark entry for it, so its cache learns the version
    /// in order with the changes. Does nothing by default.
    fn bookmark(&self, resource_version: &str) {
        let _ = resource_version;
    }
}

impl<K, S: ReflectorStore<K> + ?Sized> ReflectorStore<K> for Arc<S> {
    type Error = S::Error;
    fn add(&self, obj: Arc<K>) -> Result<(), Self::Error> {
        (**self).add(obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), Self::Error> {
        (**self).update(obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), Self::Error> {
        (**self).delete(obj)
    }
    fn resync(&self) -> Result<(), Self::Error> {
        (**self).resync()
    }
    fn replace_begin(&self) {
        (**self).replace_begin()
    }
    fn replace_part(&self, items: Vec<Arc<K>>) -> Result<(), Self::Error> {
        (**self).replace_part(items)
    }
    fn replace_end(&self, resource_version: String) -> Result<(), Self::Error> {
        (**self).replace_end(resource_version)
    }
    fn replace_abort(&self) {
        (**self).replace_abort()
    }
    fn wait_for_room(&self) -> BoxFuture<'_, ()> {
        (**self).wait_for_room()
    }
    fn update_resource_version(&self, resource_version: &str) {
        (**self).update_resource_version(resource_version)
    }
    fn bookmark(&self, resource_version: &str) {
        (**self).bookmark(resource_version)
    }
}

/// A store that takes a list in one piece: client-go's `Store` as a Reflector writes it
/// (`Add`, `Update`, `Delete`, `Replace`, `Resync`, and the `ResourceVersionUpdater`). Give it
/// to a Reflector wrapped in [`ReplaceOnce`]. The [`Indexer`](super::Indexer) and the plain
/// [`Fifo`](crate::queue::Fifo) implement it.
pub trait ReplaceStore<K>: Send + Sync {
    /// The error a write can fail with.
    type Error: std::error::Error + Send + Sync + 'static;
    /// An object was added.
    fn add(&self, obj: Arc<K>) -> Result<(), Self::Error>;
    /// An object was modified.
    fn update(&self, obj: Arc<K>) -> Result<(), Self::Error>;
    /// An object was deleted, carrying its final state.
    fn delete(&self, obj: Arc<K>) -> Result<(), Self::Error>;
    /// A complete list at `resource_version` replaces everything.
    fn replace(&self, list: Vec<Arc<K>>, resource_version: String) -> Result<(), Self::Error>;
    /// The resync timer fired.
    fn resync(&self) -> Result<(), Self::Error>;
    /// The resource version advanced without an object change.
    fn update_resource_version(&self, resource_version: &str);
}

/// Adapts a [`ReplaceStore`] to the [`ReflectorStore`] protocol: a list's parts are collected
/// and handed over in one `replace` when the list ends (dropped if it fails), as client-go's
/// Reflector does. Its backlog is unbounded: `wait_for_room` resolves at once.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::store::{Indexer, ReplaceOnce};
/// let cache: Indexer<Pod> = Indexer::default_namespaced();
/// let store: ReplaceOnce<Pod, _> = ReplaceOnce::new(cache.clone());
/// # let _ = store;
/// ```
pub struct ReplaceOnce<K, S> {
    store: S,
    list: Mutex<Vec<Arc<K>>>,
}

impl<K, S: std::fmt::Debug> std::fmt::Debug for ReplaceOnce<K, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplaceOnce")
            .field("store", &self.store)
            .field("collected", &self.list.lock().len())
            .finish()
    }
}

impl<K, S> ReplaceOnce<K, S> {
    /// Wraps `store`.
    pub fn new(store: S) -> Self {
        Self {
            store,
            list: Mutex::new(Vec::new()),
        }
    }
    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.store
    }
}

impl<K: Send + Sync, S: ReplaceStore<K>> ReflectorStore<K> for ReplaceOnce<K, S> {
    type Error = S::Error;
    fn add(&self, obj: Arc<K>) -> Result<(), Self::Error> {
        self.store.add(obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), Self::Error> {
        self.store.update(obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), Self::Error> {
        self.store.delete(obj)
    }
    fn resync(&self) -> Result<(), Self::Error> {
        self.store.resync()
    }
    fn replace_begin(&self) {
        self.list.lock().clear();
    }
    fn replace_part(&self, items: Vec<Arc<K>>) -> Result<(), Self::Error> {
        self.list.lock().extend(items);
        Ok(())
    }
    fn replace_end(&self, resource_version: String) -> Result<(), Self::Error> {
        let list = std::mem::take(&mut *self.list.lock());
        self.store.replace(list, resource_version)
    }
    fn replace_abort(&self) {
        *self.list.lock() = Vec::new();
    }
    fn wait_for_room(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
    fn update_resource_version(&self, resource_version: &str) {
        self.store.update_resource_version(resource_version)
    }
}

impl<K: Object> ReplaceStore<K> for Indexer<K> {
    type Error = StoreError;
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        Indexer::add(self, obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        Indexer::update(self, obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        Indexer::delete(self, &obj).map(drop)
    }
    fn replace(&self, list: Vec<Arc<K>>, resource_version: String) -> Result<(), StoreError> {
        Indexer::replace(self, list, &resource_version)
    }
    fn resync(&self) -> Result<(), StoreError> {
        Indexer::resync(self)
    }
    fn update_resource_version(&self, resource_version: &str) {
        self.bookmark(resource_version);
    }
}
