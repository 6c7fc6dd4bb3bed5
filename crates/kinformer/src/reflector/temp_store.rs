//! The temporary store a streaming list fills before the real store is replaced.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::object::{KeyError, meta_namespace_key};
use crate::store::ReflectorStore;

/// Objects by key, as received so far in a streaming list's initial events.
pub(crate) struct TempStore<K> {
    items: Mutex<BTreeMap<String, Arc<K>>>,
}

impl<K> TempStore<K> {
    pub(crate) fn new() -> Self {
        Self {
            items: Mutex::new(BTreeMap::new()),
        }
    }

    /// Every object, in key order.
    pub(crate) fn into_items(self) -> Vec<Arc<K>> {
        self.items.into_inner().into_values().collect()
    }
}

impl<K: kube::Resource + Send + Sync> ReflectorStore<K> for TempStore<K> {
    type Error = KeyError;
    fn add(&self, obj: Arc<K>) -> Result<(), KeyError> {
        let key = meta_namespace_key(obj.as_ref())?;
        self.items.lock().insert(key, obj);
        Ok(())
    }
    fn update(&self, obj: Arc<K>) -> Result<(), KeyError> {
        self.add(obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), KeyError> {
        let key = meta_namespace_key(obj.as_ref())?;
        self.items.lock().remove(&key);
        Ok(())
    }
    fn replace(&self, list: Vec<Arc<K>>, _resource_version: String) -> Result<(), KeyError> {
        let mut map = BTreeMap::new();
        for obj in list {
            map.insert(meta_namespace_key(obj.as_ref())?, obj);
        }
        *self.items.lock() = map;
        Ok(())
    }
    fn resync(&self) -> Result<(), KeyError> {
        Ok(())
    }
}
