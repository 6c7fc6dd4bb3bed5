//! The contract between a Reflector and the store it fills.

use std::sync::Arc;

/// What a Reflector writes into: client-go's `Store` as seen by `Reflector.ListAndWatch`
/// (`Add`, `Update`, `Delete`, `Replace`, `Resync`) plus the optional `ResourceVersionUpdater`
/// that bookmarks feed.
///
/// The informer's `DeltaFifo` implements it, and so does a plain `Indexer`, so a Reflector can
/// keep either up to date.
pub trait ReflectorStore<K>: Send + Sync {
    /// The error a write can fail with. The Reflector logs it and carries on.
    type Error: std::error::Error + Send + Sync + 'static;

    /// An object was added (watch `ADDED`).
    fn add(&self, obj: Arc<K>) -> Result<(), Self::Error>;
    /// An object was modified (watch `MODIFIED`).
    fn update(&self, obj: Arc<K>) -> Result<(), Self::Error>;
    /// An object was deleted (watch `DELETED`), carrying its final state.
    fn delete(&self, obj: Arc<K>) -> Result<(), Self::Error>;
    /// A complete list at `resource_version` replaces everything.
    fn replace(&self, list: Vec<Arc<K>>, resource_version: String) -> Result<(), Self::Error>;
    /// The resync timer fired (client-go's `Resync`).
    fn resync(&self) -> Result<(), Self::Error>;

    /// Whether this store takes a list while it arrives: [`replace_begin`](Self::replace_begin),
    /// any number of [`replace_part`](Self::replace_part), then
    /// [`replace_end`](Self::replace_end) — or [`replace_abort`](Self::replace_abort) when the
    /// list fails. When `false` (the default) the Reflector collects the whole list and calls
    /// [`replace`](Self::replace); the four methods below are then never called, and their
    /// default implementations do nothing.
    ///
    /// Taking a list in parts lets a consumer apply it while it downloads, so a relist never
    /// holds the whole new list next to the cached one. The result of begin + parts + end must
    /// be the result of one `replace` with all the parts' items.
    fn supports_incremental_replace(&self) -> bool {
        false
    }
    /// A list starts (again: a list that starts over after an expired continue token calls it
    /// a second time, and the parts before it no longer count for detecting deletions).
    fn replace_begin(&self) {}
    /// The next items of the list, in server order.
    fn replace_part(&self, _items: Vec<Arc<K>>) -> Result<(), Self::Error> {
        Ok(())
    }
    /// The list is complete at `resource_version`: whatever the store holds that no part
    /// listed is gone.
    fn replace_end(&self, _resource_version: String) -> Result<(), Self::Error> {
        Ok(())
    }
    /// The list failed: the parts already given stay, nothing is deleted.
    fn replace_abort(&self) {}

    /// Resolves when the store can take more: a Reflector awaits it before reading each watch
    /// event, so a store with a bounded backlog (a `DeltaFifo` with
    /// [`max_queued_deltas`](crate::queue::DeltaFifoOptions::max_queued_deltas)) slows the
    /// watch down instead of growing. The default resolves at once.
    fn wait_for_room(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
    /// The reflector's resource version advanced without an object change (a bookmark, or the
    /// end of a list). client-go's `ResourceVersionUpdater`; optional.
    fn update_resource_version(&self, _resource_version: &str) {}
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
    fn replace(&self, list: Vec<Arc<K>>, resource_version: String) -> Result<(), Self::Error> {
        (**self).replace(list, resource_version)
    }
    fn resync(&self) -> Result<(), Self::Error> {
        (**self).resync()
    }
    fn update_resource_version(&self, resource_version: &str) {
        (**self).update_resource_version(resource_version)
    }
    fn supports_incremental_replace(&self) -> bool {
        (**self).supports_incremental_replace()
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
    fn wait_for_room(&self) -> futures::future::BoxFuture<'_, ()> {
        (**self).wait_for_room()
    }
}
