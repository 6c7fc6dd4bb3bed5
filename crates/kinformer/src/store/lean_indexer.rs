//! The lean-mode constructors of [`Indexer`] (kept apart so `lean` does not depend on
//! `indexer`).

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::index_func::Indexers;
use super::indexer::Indexer;
use super::lean::{CacheMode, DEFAULT_HOT_OBJECTS, LeanCodec};
use crate::object::{KeyFunc, Object};

impl<K: Object + Serialize + DeserializeOwned> Indexer<K> {
    /// An empty cache in lean mode ([`CacheMode::Lean`]): objects are kept compressed and
    /// decoded on demand. Otherwise as [`new`](Self::new).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kube::api::ObjectMeta;
    /// use kinformer::object::meta_namespace_key_func;
    /// use kinformer::{Indexer, namespace_indexers};
    /// use kinformer::store::CacheMode;
    ///
    /// let cache = Indexer::<Pod>::new_lean(meta_namespace_key_func(), namespace_indexers());
    /// let pod = Arc::new(Pod {
    ///     metadata: ObjectMeta { namespace: Some("prod".into()), name: Some("web-0".into()), ..Default::default() },
    ///     ..Default::default()
    /// });
    /// cache.add(pod.clone()).unwrap();
    /// assert_eq!(cache.cache_mode(), CacheMode::Lean);
    /// // While the written Arc lives, reads share it; afterwards they decode a copy.
    /// assert!(Arc::ptr_eq(&cache.get_by_key("prod/web-0").unwrap(), &pod));
    /// drop(pod);
    /// assert_eq!(cache.get_by_key("prod/web-0").unwrap().metadata.name.as_deref(), Some("web-0"));
    /// assert!(cache.encoded_bytes().unwrap() > 0);
    /// ```
    pub fn new_lean(key_func: KeyFunc<K>, indexers: Indexers<K>) -> Self {
        Self::new_lean_with_hot(key_func, indexers, DEFAULT_HOT_OBJECTS)
    }

    /// [`new_lean`](Self::new_lean) keeping the `hot` most recently written or decoded objects
    /// decoded (default [`DEFAULT_HOT_OBJECTS`]; 0 keeps none): a read of one of them costs
    /// what a read of a full-mode cache does. They cost their decoded size on top of the
    /// cache (see [`CacheMode`]).
    pub fn new_lean_with_hot(key_func: KeyFunc<K>, indexers: Indexers<K>, hot: usize) -> Self {
        Self::with_codec(key_func, indexers, Some(Arc::new(LeanCodec::with_hot(hot))))
    }

    /// An empty cache in the given mode: [`new`](Self::new) or [`new_lean`](Self::new_lean).
    pub fn with_cache_mode(key_func: KeyFunc<K>, indexers: Indexers<K>, mode: CacheMode) -> Self {
        match mode {
            CacheMode::Full => Self::new(key_func, indexers),
            CacheMode::Lean => Self::new_lean(key_func, indexers),
        }
    }

    /// An informer's cache: as [`with_cache_mode`](Self::with_cache_mode) (lean keeping `hot`
    /// objects decoded), and in full mode a relist keeps a cached object only when the listed
    /// one of the same uid and resourceVersion also serializes to the same values: the server
    /// may show the same version differently (a CRD's new default, see `same_content.rs`), and
    /// client-go's cache then holds what was listed. (A lean cache compares encoded bytes.)
    pub(crate) fn for_informer(
        key_func: KeyFunc<K>,
        indexers: Indexers<K>,
        mode: CacheMode,
        hot: usize,
    ) -> Self {
        match mode {
            CacheMode::Full => Self::new(key_func, indexers)
                .with_content_check(super::same_content::same_content::<K>),
            CacheMode::Lean => Self::new_lean_with_hot(key_func, indexers, hot),
        }
    }
}
