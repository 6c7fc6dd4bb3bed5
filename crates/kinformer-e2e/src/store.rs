//! A minimal [`ReflectorStore`]: a map from `namespace/name` to the latest object.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;

use kinformer::{Object, meta_namespace_key, store::ReflectorStore};
use parking_lot::Mutex;

/// What a bare Reflector writes into in the e2e tests: `namespace/name` → object, plus how many
/// times a full list replaced everything (each relist counts).
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::store::ReflectorStore;
/// use kinformer_e2e::MapStore;
/// let store = MapStore::<ConfigMap>::default();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("a".into());
/// cm.metadata.namespace = Some("ns".into());
/// cm.metadata.resource_version = Some("7".into());
/// store.replace_begin();
/// store.replace_part(vec![Arc::new(cm)]).unwrap();
/// store.replace_end("7".into()).unwrap();
/// assert_eq!(store.snapshot().get("ns/a").map(String::as_str), Some("7"));
/// assert_eq!(store.replace_count(), 1);
/// ```
pub struct MapStore<K> {
    inner: Mutex<Inner<K>>,
}

struct Inner<K> {
    objects: BTreeMap<String, Arc<K>>,
    /// The list in progress (between `replace_begin` and `replace_end`).
    listing: Option<BTreeMap<String, Arc<K>>>,
    replaces: usize,
    last_rv: String,
}

impl<K> Default for MapStore<K> {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Inner {
                objects: BTreeMap::new(),
                listing: None,
                replaces: 0,
                last_rv: String::new(),
            }),
        }
    }
}

impl<K: Object> MapStore<K> {
    /// `namespace/name` → `metadata.resourceVersion` of every stored object, in key order.
    pub fn snapshot(&self) -> BTreeMap<String, String> {
        crate::snapshot(self.inner.lock().objects.values().map(|o| o.as_ref()))
    }

    /// How many lists completed (`replace_end`: the initial list and every relist).
    pub fn replace_count(&self) -> usize {
        self.inner.lock().replaces
    }

    /// The last resourceVersion passed to `replace_end` or `update_resource_version`.
    pub fn last_resource_version(&self) -> String {
        self.inner.lock().last_rv.clone()
    }

    fn put(&self, obj: Arc<K>) {
        // Objects from a server always have a name; one without is skipped, not stored.
        if let Ok(key) = meta_namespace_key(obj.as_ref()) {
            self.inner.lock().objects.insert(key, obj);
        }
    }
}

impl<K: Object> ReflectorStore<K> for MapStore<K> {
    type Error = Infallible;

    fn add(&self, obj: Arc<K>) -> Result<(), Infallible> {
        self.put(obj);
        Ok(())
    }

    fn update(&self, obj: Arc<K>) -> Result<(), Infallible> {
        self.put(obj);
        Ok(())
    }

    fn delete(&self, obj: Arc<K>) -> Result<(), Infallible> {
        if let Ok(key) = meta_namespace_key(obj.as_ref()) {
            self.inner.lock().objects.remove(&key);
        }
        Ok(())
    }

    fn replace_begin(&self) {
        self.inner.lock().listing = Some(BTreeMap::new());
    }

    fn replace_part(&self, items: Vec<Arc<K>>) -> Result<(), Infallible> {
        let mut inner = self.inner.lock();
        let listing = inner.listing.get_or_insert_with(BTreeMap::new);
        listing.extend(
            items
                .into_iter()
                .filter_map(|o| meta_namespace_key(o.as_ref()).ok().map(|k| (k, o))),
        );
        Ok(())
    }

    fn replace_end(&self, resource_version: String) -> Result<(), Infallible> {
        let mut inner = self.inner.lock();
        inner.objects = inner.listing.take().unwrap_or_default();
        inner.replaces += 1;
        inner.last_rv = resource_version;
        Ok(())
    }

    fn replace_abort(&self) {
        self.inner.lock().listing = None;
    }

    fn wait_for_room(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    fn resync(&self) -> Result<(), Infallible> {
        Ok(())
    }

    fn update_resource_version(&self, resource_version: &str) {
        self.inner.lock().last_rv = resource_version.to_owned();
    }
}
