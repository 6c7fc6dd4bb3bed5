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
    fn resync(&self) -> Result<(), KeyError> {
        Ok(())
    }
    // A streaming list fills it from watch events only; the list protocol is here for
    // completeness: a list replaces what it holds.
    fn replace_begin(&self) {
        self.items.lock().clear();
    }
    fn replace_part(&self, items: Vec<Arc<K>>) -> Result<(), KeyError> {
        items.into_iter().try_for_each(|obj| self.add(obj))
    }
    fn replace_end(&self, _resource_version: String) -> Result<(), KeyError> {
        Ok(())
    }
    fn replace_abort(&self) {}
    fn wait_for_room(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
    fn update_resource_version(&self, _resource_version: &str) {}
}
