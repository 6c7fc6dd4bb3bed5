//! `SharedInformerFactory`: one shared informer per type and scope.
//!
//! client-go's `informers.SharedInformerFactory`: every part of a program that asks for the
//! pods informer gets the *same* informer (one list/watch, one cache), `start` starts whatever
//! has not started yet, and `wait_for_cache_sync` reports per informer. Unlike client-go, the
//! factory is generic: [`informer::<K>()`](SharedInformerFactory::informer) works for any
//! kube-rs resource type, and [`dynamic_informer`](SharedInformerFactory::dynamic_informer)
//! for `DynamicObject`s. The user never downcasts.
//!
//! At run time (controller-runtime's cache is the model): [`remove_informer`](SharedInformerFactory::remove_informer)
//! stops one informer and waits for it (its watch closed, handlers told, cache emptied, metrics
//! series gone); [`lister`](SharedInformerFactory::lister) reads through the factory and fails
//! with a [`FactoryError`] for a type nobody watches, or, with
//! [`lazy_start`](SharedInformerFactoryBuilder::lazy_start), starts its informer.

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::Arc;

use kube::Resource;
use kube::api::{ApiResource, DynamicObject};
use kube::core::PartialObjectMeta;
use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::InformerConfig;
use crate::informer::SharedIndexInformer;
use crate::reflector::ListerWatcher;
use crate::source::kube_source;
use crate::store::{Indexers, NAMESPACE_INDEX, namespace_index_func};
use crate::wait::{SyncSignal, wait_for_cache_sync};

mod lifecycle;
mod scope;

pub use lifecycle::FactoryError;
pub use scope::InformerScope;
use scope::{TypeKey, dynamic_key, informer_name, typed_key};

/// An informer, its key, and whether this factory has started it (set synchronously in
/// `start`, like client-go's `startedInformers`, so `wait_for_cache_sync` right after `start`
/// waits for it even before its task has begun running).
type Registered = ((TypeKey, InformerScope), Arc<dyn ErasedInformer>, bool);

trait ErasedInformer: Send + Sync {
    fn name(&self) -> String;
    fn qualifier(&self) -> String;
    fn synced_signal(&self) -> SyncSignal;
    fn has_started(&self) -> bool;
    /// Runs the informer on `tasks` until `cancel`; `done` is cancelled once it has returned.
    fn spawn(&self, tasks: &TaskTracker, cancel: CancellationToken, done: CancellationToken);
    fn as_any(&self) -> &dyn Any;
    /// The informer's process-unique id.
    fn id(&self) -> u64;
    /// Winds down a removed informer whose run (if any) has returned (see `lifecycle`).
    fn wind_down(&self) -> futures::future::BoxFuture<'_, ()>;
}

impl<K: crate::Object> ErasedInformer for SharedIndexInformer<K> {
    fn name(&self) -> String {
        SharedIndexInformer::name(self).to_owned()
    }
    fn qualifier(&self) -> String {
        SharedIndexInformer::qualifier(self)
    }
    fn synced_signal(&self) -> SyncSignal {
        SharedIndexInformer::synced_signal(self)
    }
    fn has_started(&self) -> bool {
        SharedIndexInformer::has_started(self)
    }
    fn spawn(&self, tasks: &TaskTracker, cancel: CancellationToken, done: CancellationToken) {
        let informer = self.clone();
        tasks.spawn(async move {
            let _done = done.drop_guard();
            informer.run(cancel).await
        });
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn id(&self) -> u64 {
        SharedIndexInformer::id(self)
    }
    fn wind_down(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(lifecycle::wind_down(self))
    }
}

/// Builds a [`SharedInformerFactory`]: the [`InformerConfig`] every informer starts from,
/// and per-type changes to it (controller-runtime's `cache.Options` with its `ByObject`).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
/// use kinformer::{InformerConfig, SharedInformerFactory};
/// use kinformer::store::CacheMode;
/// let factory = SharedInformerFactory::builder(kube::Client::try_default().await?)
///     .defaults(
///         InformerConfig::default()
///             .resync_period(Duration::from_secs(600))
///             .strip_managed_fields(true),
///     )
///     .for_type::<Pod>(|c| c.label_selector("app=web").cache_mode(CacheMode::Lean))
///     .for_type::<ConfigMap>(|c| c.namespace("kube-system"))
///     .build();
/// # let _ = factory; Ok(()) }
/// ```
#[must_use]
pub struct SharedInformerFactoryBuilder {
    client: kube::Client,
    defaults: InformerConfig,
    by_type: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    lazy_start: bool,
}

/// What the factory's typed getters ([`informer`](SharedInformerFactory::informer),
/// [`lister`](SharedInformerFactory::lister), [`remove_informer`](SharedInformerFactory::remove_informer)
/// and their kin) ask of `K`: a kube-rs resource whose type says everything about it
/// (`DynamicType = ()`: k8s-openapi's types, `#[derive(CustomResource)]` types,
/// `PartialObjectMeta<K>`), read and written with serde, shared between tasks. Implemented for
/// every such type; nothing to implement by hand.
pub trait TypedResource:
    Resource<DynamicType = (), Scope: 'static>
    + Serialize
    + DeserializeOwned
    + Clone
    + Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> TypedResource for K
where
    K: Resource<DynamicType = ()>
        + Serialize
        + DeserializeOwned
        + Clone
        + Debug
        + Send
        + Sync
        + 'static,
    K::Scope: 'static,
{
}

/// A per-type change of the factory's defaults, stored under `K`'s `TypeId`.
type ByType<K> = Arc<dyn Fn(InformerConfig<K>) -> InformerConfig<K> + Send + Sync>;

impl SharedInformerFactoryBuilder {
    /// The configuration every informer starts from (default: `InformerConfig::default()`).
    /// Being for every type, its [`transform`](InformerConfig::transform) can only be a
    /// [metadata transform](crate::Transform::metadata).
    pub fn defaults(mut self, defaults: InformerConfig) -> Self {
        self.defaults = defaults;
        self
    }

    /// Changes the configuration of `K`'s informers: `f` gets the defaults and returns the
    /// configuration for `K` (controller-runtime's `ByObject`; client-go's
    /// `WithCustomResyncConfig` is `.for_type::<K>(|c| c.resync_period(p))`). Dynamic
    /// informers are all `K = DynamicObject` (or `PartialObjectMeta<DynamicObject>`). A second
    /// call for the same type replaces the first.
    pub fn for_type<K: 'static>(
        mut self,
        f: impl Fn(InformerConfig<K>) -> InformerConfig<K> + Send + Sync + 'static,
    ) -> Self {
        let f: ByType<K> = Arc::new(f);
        self.by_type.insert(TypeId::of::<K>(), Box::new(f));
        self
    }

    /// Whether a read of a type nobody watches creates and starts its informer (default:
    /// false, the read fails with [`FactoryError::NotWatched`]): controller-runtime's
    /// `ReaderFailOnMissingInformer`, the other way round. See
    /// [`SharedInformerFactory::lister`].
    pub fn lazy_start(mut self, lazy: bool) -> Self {
        self.lazy_start = lazy;
        self
    }

    /// Builds the factory.
    pub fn build(self) -> SharedInformerFactory {
        SharedInformerFactory {
            inner: Arc::new(FactoryInner {
                client: self.client,
                defaults: self.defaults,
                by_type: self.by_type,
                informers: Mutex::new(Vec::new()),
                tasks: TaskTracker::new(),
                cancel: CancellationToken::new(),
                streaming_lists: crate::reflector::StreamingListMemory::new(),
                lifecycle: lifecycle::Lifecycle::new(self.lazy_start),
            }),
        }
    }
}

/// One shared informer per type and scope, started and waited for together.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
/// use kinformer::SharedInformerFactory;
/// use tokio_util::sync::CancellationToken;
/// let factory = SharedInformerFactory::new(kube::Client::try_default().await?);
/// let pods = factory.informer::<Pod>();
/// let _configmaps = factory.informer::<ConfigMap>();
/// factory.start();
/// let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
/// assert!(synced.values().all(|s| *s));
/// println!("{} pods", pods.indexer().len());
/// factory.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SharedInformerFactory {
    inner: Arc<FactoryInner>,
}

struct FactoryInner {
    client: kube::Client,
    defaults: InformerConfig,
    by_type: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    informers: Mutex<Vec<Registered>>,
    tasks: TaskTracker,
    cancel: CancellationToken,
    /// Which of this client's servers do not finish streaming lists, shared by every informer
    /// whose configuration names no memory of its own
    /// ([`StreamingListFallback::memory`](crate::reflector::StreamingListFallback::memory)).
    streaming_lists: crate::reflector::StreamingListMemory,
    /// Removal and reads (see `lifecycle`).
    lifecycle: lifecycle::Lifecycle,
}

impl Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedInformerFactory")
            .field("defaults", &self.inner.defaults)
            .field("informers", &self.inner.informers.lock().len())
            .finish_non_exhaustive()
    }
}

impl SharedInformerFactory {
    /// A factory over `client` with the default [`InformerConfig`] for every type (all
    /// namespaces, no resync). Any `kube::Client` does, `Client::try_default()` included: its
    /// retry layer never retries an informer's requests (see
    /// [`KubeListerWatcher`](crate::KubeListerWatcher)'s "Retries are the Reflector's").
    pub fn new(client: kube::Client) -> Self {
        Self::builder(client).build()
    }

    /// A builder: defaults for every type, and per-type changes.
    pub fn builder(client: kube::Client) -> SharedInformerFactoryBuilder {
        SharedInformerFactoryBuilder {
            client,
            defaults: InformerConfig::default(),
            by_type: HashMap::new(),
            lazy_start: false,
        }
    }

    /// What this factory's informers have learnt about which of its servers (API
    /// group/versions) do not finish streaming lists, shared by every informer whose
    /// configuration names no memory of its own (see
    /// [`StreamingListMemory`](crate::reflector::StreamingListMemory)).
    pub fn streaming_list_memory(&self) -> &crate::reflector::StreamingListMemory {
        &self.inner.streaming_lists
    }

    /// The configuration of `K`'s informers: the defaults, changed by the type's
    /// [`for_type`](SharedInformerFactoryBuilder::for_type) if it has one.
    pub fn config_for<K: 'static>(&self) -> InformerConfig<K> {
        let config = self.inner.defaults.for_type::<K>();
        match self
            .inner
            .by_type
            .get(&TypeId::of::<K>())
            .and_then(|f| f.downcast_ref::<ByType<K>>())
        {
            Some(f) => f(config),
            None => config,
        }
    }

    /// The shared informer for `K` (created on first use, with a namespace index), configured
    /// by [`config_for::<K>()`](Self::config_for).
    pub fn informer<K>(&self) -> SharedIndexInformer<K>
    where
        K: TypedResource,
    {
        self.typed(self.config_for::<K>())
    }

    /// The shared informer for `K` in another scope (namespace, selectors): `K`'s
    /// configuration with the scope's namespace and selectors. Each scope is its own informer.
    pub fn informer_with_scope<K>(&self, scope: InformerScope) -> SharedIndexInformer<K>
    where
        K: TypedResource,
    {
        self.typed(self.config_with_scope(scope))
    }

    /// `K`'s configuration with `scope`'s namespace and selectors.
    fn config_with_scope<K: 'static>(&self, scope: InformerScope) -> InformerConfig<K> {
        let mut config = self.config_for::<K>();
        config.namespace = scope.namespace;
        config.namespaces = scope.namespaces;
        config.label_selector = scope.label_selector;
        config.field_selector = scope.field_selector;
        config
    }

    fn typed<K>(&self, mut config: InformerConfig<K>) -> SharedIndexInformer<K>
    where
        K: TypedResource,
    {
        let namespaced =
            TypeId::of::<K::Scope>() != TypeId::of::<k8s_openapi::ClusterResourceScope>();
        let key = typed_key(&mut config);
        let scope = key.1.clone();
        self.get_or_create(key, || {
            let lw = kube_source::<K>(self.inner.client.clone(), &config, &(), namespaced);
            let name = informer_name::<K>(&K::kind(&()), &scope);
            let identity = crate::snapshot::TypeIdentity {
                group: K::group(&()).into_owned(),
                version: K::version(&()).into_owned(),
                kind: K::kind(&()).into_owned(),
                plural: K::plural(&()).into_owned(),
                metadata_only: K::metadata_api(),
            };
            self.new_informer(lw, config, name, identity)
        })
    }

    /// The shared metadata-only informer for `K` in the factory's scope (client-go's
    /// `metadatainformer`): the server sends only each object's metadata (see
    /// [`KubeListerWatcher`](crate::KubeListerWatcher)'s "Metadata only"), and the cache holds
    /// `PartialObjectMeta<K>`s, with a namespace index. Everything else is a full informer's
    /// (handlers, indexes, resync, relist, the factory's scope, tweak and transforms); it is
    /// its own informer, separate from [`informer::<K>()`](Self::informer). Its name (in
    /// [`wait_for_cache_sync`](Self::wait_for_cache_sync)) is the kind followed by
    /// `(metadata)`. Same as `informer::<PartialObjectMeta<K>>()`.
    ///
    /// ```no_run
    /// # async fn demo(client: kube::Client) {
    /// use k8s_openapi::api::core::v1::Pod;
    /// let factory = kinformer::SharedInformerFactory::new(client);
    /// let pods = factory.metadata_informer::<Pod>();
    /// factory.start();
    /// # let _ = pods; }
    /// ```
    pub fn metadata_informer<K>(&self) -> SharedIndexInformer<PartialObjectMeta<K>>
    where
        K: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
        K::Scope: 'static,
    {
        self.informer::<PartialObjectMeta<K>>()
    }

    /// The shared metadata-only informer for a dynamic resource, in the factory's scope (see
    /// [`metadata_informer`](Self::metadata_informer) and
    /// [`dynamic_informer`](Self::dynamic_informer)); separate from the resource's full
    /// dynamic informer.
    pub fn dynamic_metadata_informer(
        &self,
        resource: &ApiResource,
        namespaced: bool,
    ) -> SharedIndexInformer<PartialObjectMeta<DynamicObject>> {
        self.dynamic(resource, namespaced)
    }

    /// The shared informer for a dynamic resource (a custom resource without a Rust type).
    /// `namespaced` says whether the resource is namespaced (see kube's discovery).
    pub fn dynamic_informer(
        &self,
        resource: &ApiResource,
        namespaced: bool,
    ) -> SharedIndexInformer<DynamicObject> {
        self.dynamic(resource, namespaced)
    }

    /// The shared informer of a dynamic resource: `DynamicObject`s, or their metadata only
    /// (`PartialObjectMeta<DynamicObject>`, a separate informer).
    fn dynamic<K>(&self, resource: &ApiResource, namespaced: bool) -> SharedIndexInformer<K>
    where
        K: Resource<DynamicType = ApiResource>
            + Serialize
            + DeserializeOwned
            + Clone
            + Debug
            + Send
            + Sync
            + 'static,
        K::Scope: 'static,
    {
        let mut config = self.config_for::<K>();
        let key = dynamic_key(resource, namespaced, &mut config);
        let scope = key.1.clone();
        self.get_or_create(key, || {
            let lw = kube_source::<K>(self.inner.client.clone(), &config, resource, namespaced);
            let name = informer_name::<K>(&resource.kind, &scope);
            let identity = crate::snapshot::TypeIdentity {
                group: resource.group.clone(),
                version: resource.version.clone(),
                kind: resource.kind.clone(),
                plural: resource.plural.clone(),
                metadata_only: K::metadata_api(),
            };
            self.new_informer(lw, config, name, identity)
        })
    }

    /// An informer over `lw` with `config` and a namespace index: the source carries the
    /// configuration's namespace and wire options, the Reflector its selectors and tweak, so
    /// the informer gets the source's whole list protocol (streamed, decoded in parallel,
    /// applied in parts) with nothing in between.
    fn new_informer<K>(
        &self,
        lw: Arc<dyn ListerWatcher<K>>,
        mut config: InformerConfig<K>,
        name: String,
        identity: crate::snapshot::TypeIdentity,
    ) -> SharedIndexInformer<K>
    where
        K: crate::Object + Clone + Debug + Serialize + DeserializeOwned,
    {
        let mut indexers = Indexers::default();
        indexers.insert(NAMESPACE_INDEX.to_owned(), namespace_index_func());
        let memory = &mut config.streaming_lists.memory;
        memory.get_or_insert_with(|| self.inner.streaming_lists.clone());
        SharedIndexInformer::builder(lw)
            .config(config)
            .indexers(indexers)
            .name(name)
            .type_identity(identity)
            .build()
    }

    fn get_or_create<K: crate::Object>(
        &self,
        key: (TypeKey, InformerScope),
        create: impl FnOnce() -> SharedIndexInformer<K>,
    ) -> SharedIndexInformer<K> {
        let mut informers = self.inner.informers.lock();
        if let Some((_, existing, _)) = informers.iter().find(|(k, _, _)| *k == key)
            && let Some(i) = existing.as_any().downcast_ref::<SharedIndexInformer<K>>()
        {
            return i.clone();
        }
        let informer = create();
        informers.push((key, Arc::new(informer.clone()), false));
        informer
    }

    /// Starts every informer that has not started yet (client-go's `Start`); safe to call
    /// again after adding informers. Does nothing after [`shutdown`](Self::shutdown).
    pub fn start(&self) {
        if self.inner.cancel.is_cancelled() {
            tracing::warn!("the informer factory is shut down; start ignored");
            return;
        }
        self.inner.lifecycle.mark_started();
        for (_, informer, started) in self.inner.informers.lock().iter_mut() {
            if !*started && !informer.has_started() {
                self.inner.lifecycle.spawn(
                    informer.as_ref(),
                    &self.inner.tasks,
                    &self.inner.cancel,
                );
            }
            *started = true;
        }
    }

    /// Waits until every *started* informer has synced or `cancel` fires; the result says, per
    /// informer, whether it synced (client-go's `WaitForCacheSync`, which keys it by Go type).
    /// An informer counts as started as soon as [`start`](Self::start) returns, even if its
    /// task has not run yet.
    ///
    /// Each informer is keyed by its name (`Pod`, `Pod (metadata)`, `Pod ns=default`). Names
    /// that more than one started informer shares are told apart, so no informer is left out
    /// of the map: each of them gets its API version and whether it is dynamic
    /// (`Event (v1)`, `Event (events.k8s.io/v1)`, `ConfigMap (v1, dynamic)`), and any that are
    /// still alike a number in the order the factory made them (`… #2`).
    pub async fn wait_for_cache_sync(&self, cancel: &CancellationToken) -> BTreeMap<String, bool> {
        let (names, signals): (Vec<(String, String)>, Vec<SyncSignal>) = self
            .inner
            .informers
            .lock()
            .iter()
            .filter(|(_, i, started)| *started || i.has_started())
            .map(|(_, i, _)| ((i.name(), i.qualifier()), i.synced_signal()))
            .unzip();
        wait_for_cache_sync(cancel, signals.iter().cloned()).await;
        crate::informer::naming::distinct_names(&names)
            .into_iter()
            .zip(&signals)
            .map(|(name, s)| (name, s.has_synced()))
            .collect()
    }

    /// Number of informers the factory holds (created, and not removed since).
    pub fn len(&self) -> usize {
        self.inner.informers.lock().len()
    }

    /// Whether no informer was created yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops every informer and waits until all their tasks have finished (client-go's
    /// `Shutdown`). Afterwards `start` does nothing.
    pub async fn shutdown(&self) {
        self.inner.cancel.cancel();
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
    }
}
