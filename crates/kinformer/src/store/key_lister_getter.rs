//! The read-only view of the cache a `DeltaFifo` consults ("known objects").

use std::sync::Arc;

use super::Indexer;
use crate::object::Object;

/// client-go's `KeyListerGetter`: list every key, and get an object by key.
///
/// The `DeltaFifo` uses this view of the informer's Indexer to find objects that a relist no
/// longer contains and to decide which keys a resync touches.
pub trait KeyListerGetter<K>: Send + Sync {
    /// Every key currently held.
    fn list_keys(&self) -> Vec<String>;
    /// The object stored under `key`, if any.
    fn get_by_key(&self, key: &str) -> Option<Arc<K>>;
}

impl<K, T: KeyListerGetter<K> + ?Sized> KeyListerGetter<K> for Arc<T> {
    fn list_keys(&self) -> Vec<String> {
        (**self).list_keys()
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        (**self).get_by_key(key)
    }
}

impl<K: Object> KeyListerGetter<K> for Indexer<K> {
    fn list_keys(&self) -> Vec<String> {
        Indexer::list_keys(self)
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        Indexer::get_by_key(self, key)
    }
}
