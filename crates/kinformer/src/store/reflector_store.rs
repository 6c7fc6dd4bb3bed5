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
}
