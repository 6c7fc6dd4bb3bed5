//! [`SharedIndexInformerBuilder`]: how an informer is configured before it is built.

use super::*;

/// Builds a [`SharedIndexInformer`]; made by [`SharedIndexInformer::builder`].
///
/// `N` records whether the informer has been given a [`name`](Self::name): until then the
/// informer is named after its kind, which needs a type with a static kind
/// (`K::DynamicType: Default`, true of every k8s-openapi type and custom resource); a
/// `DynamicObject` informer is named before it is built.
#[must_use]
pub struct SharedIndexInformerBuilder<K: Object, N = KindName> {
    pub(super) lister_watcher: Arc<dyn ListerWatcher<K>>,
    pub(super) resync_period: Duration,
    pub(super) indexers: Indexers<K>,
    pub(super) name: N,
    pub(super) queue_mode: QueueMode,
    pub(super) initial_list: InitialListMode,
    pub(super) make_indexer: MakeIndexer<K>,
}

/// The name of an informer that was not named: its kind (see [`SharedIndexInformerBuilder`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct KindName;

/// Builds the informer's cache: `Indexer::new` or `Indexer::new_lean`.
pub(super) type MakeIndexer<K> = fn(crate::object::KeyFunc<K>, Indexers<K>) -> Indexer<K>;

impl<K: Object, N> SharedIndexInformerBuilder<K, N> {
    /// How the cache holds its objects (default [`CacheMode::Full`]). [`CacheMode::Lean`]
    /// keeps them compressed and decodes them on demand: far less memory, dearer reads (see
    /// [`CacheMode`]). Handlers still receive decoded objects.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::SharedIndexInformer;
    /// use kinformer::reflector::ListWatch;
    /// use kinformer::store::CacheMode;
    /// # fn lw() -> ListWatch<Pod> { unimplemented!() }
    /// # fn demo() {
    /// let informer = SharedIndexInformer::builder(lw()).cache_mode(CacheMode::Lean).build();
    /// assert_eq!(informer.indexer().cache_mode(), CacheMode::Lean);
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
    /// How the informer's Reflector gets its initial state, and again on every relist
    /// (default [`InitialListMode::Auto`]: a streaming list where the source supports one, as
    /// client-go 1.35+ does; see [`crate::reflector`]). With [`CacheMode::Lean`], `Auto` lists
    /// first: a streaming list would hold every decoded object until its end bookmark.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::SharedIndexInformer;
    /// use kinformer::reflector::{InitialListMode, ListWatch};
    /// # fn lw() -> ListWatch<Pod> { unimplemented!() }
    /// # fn demo() {
    /// let informer = SharedIndexInformer::builder(lw())
    ///     .initial_list(InitialListMode::ListThenWatch)
    ///     .build();
    /// # let _ = informer;
    /// # }
    /// ```
    pub fn initial_list(mut self, mode: InitialListMode) -> Self {
        self.initial_list = mode;
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
    /// A name for logs, diagnostics and the handlers' default names (defaults to the kind).
    /// Required for a type without a static kind:
    ///
    /// ```
    /// use kube::api::DynamicObject;
    /// use kinformer::SharedIndexInformer;
    /// use kinformer::reflector::ListWatch;
    /// # fn lw() -> ListWatch<DynamicObject> { unimplemented!() }
    /// # fn demo() {
    /// let informer = SharedIndexInformer::builder(lw()).name("widgets").build();
    /// assert_eq!(informer.name(), "widgets");
    /// # }
    /// ```
    pub fn name(self, name: impl Into<String>) -> SharedIndexInformerBuilder<K, String> {
        SharedIndexInformerBuilder {
            lister_watcher: self.lister_watcher,
            resync_period: self.resync_period,
            indexers: self.indexers,
            name: name.into(),
            queue_mode: self.queue_mode,
            initial_list: self.initial_list,
            make_indexer: self.make_indexer,
        }
    }

    fn build_as(self, name: String) -> SharedIndexInformer<K> {
        SharedIndexInformer::from_parts(
            name,
            self.lister_watcher,
            self.resync_period,
            (self.make_indexer)(crate::object::meta_namespace_key_func(), self.indexers),
            self.queue_mode,
            self.initial_list,
        )
    }
}

impl<K: Object> SharedIndexInformerBuilder<K, KindName>
where
    K::DynamicType: Default,
{
    /// Builds the informer, named after its kind; nothing runs until
    /// [`SharedIndexInformer::run`].
    pub fn build(self) -> SharedIndexInformer<K> {
        let name = K::kind(&K::DynamicType::default()).into_owned();
        self.build_as(name)
    }
}

impl<K: Object> SharedIndexInformerBuilder<K, String> {
    /// Builds the informer under the name it was given; nothing runs until
    /// [`SharedIndexInformer::run`].
    pub fn build(mut self) -> SharedIndexInformer<K> {
        let name = std::mem::take(&mut self.name);
        self.build_as(name)
    }
}
