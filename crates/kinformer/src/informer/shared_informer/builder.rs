//! [`SharedIndexInformerBuilder`]: how an informer is configured before it is built.

use super::*;

/// Builds a [`SharedIndexInformer`].
#[must_use]
pub struct SharedIndexInformerBuilder<K: Object> {
    pub(super) lister_watcher: Arc<dyn ListerWatcher<K>>,
    pub(super) resync_period: Duration,
    pub(super) indexers: Indexers<K>,
    pub(super) name: Option<String>,
    pub(super) queue_mode: QueueMode,
    pub(super) make_indexer: MakeIndexer<K>,
}

/// Builds the informer's cache: `Indexer::new` or `Indexer::new_lean`.
pub(super) type MakeIndexer<K> = fn(crate::KeyFunc<K>, Indexers<K>) -> Indexer<K>;

impl<K: Object> SharedIndexInformerBuilder<K> {
    /// How the cache holds its objects (default [`CacheMode::Full`]). [`CacheMode::Lean`]
    /// keeps them compressed and decodes them on demand: far less memory, dearer reads (see
    /// [`CacheMode`]). Handlers still receive decoded objects.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::{ListWatch, SharedIndexInformer};
    /// use kinformer::store::CacheMode;
    /// # fn lw() -> ListWatch<Pod> { unimplemented!() }
    /// # fn demo() {
    /// let informer = SharedIndexInformer::builder(lw()).cache_mode(CacheMode::Lean).build();
    /// assert_eq!(informer.get_indexer().cache_mode(), CacheMode::Lean);
    /// # }
    /// ```
    pub fn cache_mode(mut self, mode: CacheMode) -> Self
    where
        K: serde::Serialize + serde::de::DeserializeOwned,
    {
        self.make_indexer = match mode {
            CacheMode::Full => Indexer::new,
            CacheMode::Lean => Indexer::new_lean,
        };
        self
    }
    /// The queue between the Reflector and the cache, and with it the order handlers see (see
    /// [`QueueMode`]; default: client-go 1.36's in-order [`QueueMode::RealFifo`]).
    pub fn queue_mode(mut self, mode: QueueMode) -> Self {
        self.queue_mode = mode;
        self
    }
    /// The default resync period of handlers (and the initial resync check period). Zero (the
    /// default): never resync.
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = period;
        self
    }
    /// Indexes of the cache.
    pub fn indexers(mut self, indexers: Indexers<K>) -> Self {
        self.indexers = indexers;
        self
    }
    /// A name for logs (defaults to the kind).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// Builds the informer; nothing runs until [`SharedIndexInformer::run`].
    pub fn build(self) -> SharedIndexInformer<K>
    where
        K::DynamicType: Default,
    {
        let name = self
            .name
            .unwrap_or_else(|| K::kind(&K::DynamicType::default()).into_owned());
        SharedIndexInformer::from_parts(
            name,
            self.lister_watcher,
            self.resync_period,
            (self.make_indexer)(crate::meta_namespace_key_func(), self.indexers),
            self.queue_mode,
        )
    }
    /// Builds the informer with an explicit name (for types without a static kind, such as
    /// `DynamicObject`).
    pub fn build_named(self, name: impl Into<String>) -> SharedIndexInformer<K> {
        SharedIndexInformer::from_parts(
            name.into(),
            self.lister_watcher,
            self.resync_period,
            (self.make_indexer)(crate::meta_namespace_key_func(), self.indexers),
            self.queue_mode,
        )
    }
}
