//! `SharedInformerFactory`: one shared informer per type and scope.
//!
//! client-go's `informers.SharedInformerFactory`: every part of a program that asks for the
//! pods informer gets the *same* informer (one list/watch, one cache), `start` starts whatever
//! has not started yet, and `wait_for_cache_sync` reports per informer. Unlike client-go, the
//! factory is generic: [`informer::<K>()`](SharedInformerFactory::informer) works for any
//! kube-rs resource type, and [`dynamic_informer`](SharedInformerFactory::dynamic_informer)
//! for `DynamicObject`s. The user never downcasts.

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use kube::Resource;
use kube::api::{ApiResource, DynamicObject, ObjectMeta};
use kube::core::PartialObjectMeta;
use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::informer::{QueueMode, SharedIndexInformer};
use crate::reflector::{InitialListMode, ListOptions};
use crate::source::{KubeListerWatcher, WireFormat};
use crate::store::{CacheMode, Indexers, NAMESPACE_INDEX, namespace_index_func};
use crate::wait::{SyncSignal, wait_for_cache_sync};

type TweakFn = Arc<dyn Fn(&mut ListOptions) + Send + Sync>;
type MetaTransform = Arc<dyn Fn(&mut ObjectMeta) + Send + Sync>;
/// An informer, its key, and whether this factory has started it (set synchronously in
/// `start`, like client-go's `startedInformers`, so `wait_for_cache_sync` right after `start`
/// waits for it even before its task has begun running).
type Registered = ((TypeKey, InformerScope), Arc<dyn ErasedInformer>, bool);

/// Which objects an informer covers: a namespace (or all) and selectors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InformerScope {
    /// Only this namespace (ignored for cluster-scoped types); `None`: all namespaces.
    pub namespace: Option<String>,
    /// Label selector applied to list and watch.
    pub label_selector: Option<String>,
    /// Field selector applied to list and watch.
    pub field_selector: Option<String>,
}

impl InformerScope {
    fn describe(&self) -> String {
        let mut s = String::new();
        if let Some(ns) = &self.namespace {
            s.push_str(&format!(" ns={ns}"));
        }
        if let Some(l) = &self.label_selector {
            s.push_str(&format!(" labels={l}"));
        }
        if let Some(f) = &self.field_selector {
            s.push_str(&format!(" fields={f}"));
        }
        s
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum TypeKey {
    Typed(TypeId),
    Dynamic(String),
    DynamicMetadata(String),
}

trait ErasedInformer: Send + Sync {
    fn name(&self) -> String;
    fn synced_signal(&self) -> SyncSignal;
    fn has_started(&self) -> bool;
    fn spawn(&self, tasks: &TaskTracker, cancel: CancellationToken);
    fn as_any(&self) -> &dyn Any;
}

impl<K: crate::Object> ErasedInformer for SharedIndexInformer<K> {
    fn name(&self) -> String {
        SharedIndexInformer::name(self).to_owned()
    }
    fn synced_signal(&self) -> SyncSignal {
        SharedIndexInformer::synced_signal(self)
    }
    fn has_started(&self) -> bool {
        SharedIndexInformer::has_started(self)
    }
    fn spawn(&self, tasks: &TaskTracker, cancel: CancellationToken) {
        let informer = self.clone();
        tasks.spawn(async move { informer.run(cancel).await });
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Builds a [`SharedInformerFactory`].
#[must_use]
pub struct SharedInformerFactoryBuilder {
    client: kube::Client,
    scope: InformerScope,
    tweak: Option<TweakFn>,
    default_resync: Duration,
    custom_resync: HashMap<TypeId, Duration>,
    transform: Option<MetaTransform>,
    /// managedFields may be left out while decoding (stripped, and no user transform).
    strip_managed_fields: bool,
    max_object_size: usize,
    queue_mode: QueueMode,
    initial_list: InitialListMode,
    cache_mode: CacheMode,
    wire_format: WireFormat,
}

impl SharedInformerFactoryBuilder {
    /// What every informer's source asks the server to send (default
    /// [`WireFormat::Protobuf`]: protobuf for built-in kinds and metadata-only informers, JSON
    /// for full custom resources, as client-go; see [`KubeListerWatcher::with_wire_format`]).
    pub fn wire_format(mut self, wire: WireFormat) -> Self {
        self.wire_format = wire;
        self
    }

    /// How every informer's cache holds its objects (default [`CacheMode::Full`];
    /// [`CacheMode::Lean`] keeps them compressed and decodes on demand: far less memory,
    /// dearer reads, see [`CacheMode`]).
    pub fn cache_mode(mut self, mode: CacheMode) -> Self {
        self.cache_mode = mode;
        self
    }
    /// Only this namespace (client-go's `WithNamespace`).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.scope.namespace = Some(namespace.into());
        self
    }
    /// A label selector for every informer.
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.scope.label_selector = Some(selector.into());
        self
    }
    /// A field selector for every informer.
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.scope.field_selector = Some(selector.into());
        self
    }
    /// Adjusts every list and watch request (client-go's `WithTweakListOptions`).
    pub fn tweak_list_options(
        mut self,
        f: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> Self {
        self.tweak = Some(Arc::new(f));
        self
    }
    /// The default resync period of every informer (zero: never).
    pub fn default_resync(mut self, period: Duration) -> Self {
        self.default_resync = period;
        self
    }
    /// The resync period of one type (client-go's `WithCustomResyncConfig`).
    pub fn resync_for<K: 'static>(mut self, period: Duration) -> Self {
        self.custom_resync.insert(TypeId::of::<K>(), period);
        self
    }
    /// A transform of every object's metadata before it is cached (client-go's
    /// `WithTransform`), e.g. `|m| m.managed_fields = None` to save memory.
    pub fn transform(mut self, f: impl Fn(&mut ObjectMeta) + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(f));
        self
    }
    /// Drops `metadata.managedFields` from every object before it is cached
    /// (controller-runtime's `cache.TransformStripManagedFields`). Composes with
    /// [`transform`](Self::transform): the transform runs first (so it can still read them),
    /// then the fields are dropped. Without a transform, a protobuf list (built-in kinds) is
    /// decoded without them at all, which saves the time and the transient memory of parsing
    /// them.
    ///
    /// # Trade-off
    ///
    /// managedFields is server-side apply's bookkeeping (which manager owns which field); it
    /// is usually the largest part of an object's metadata. On a real kube-apiserver with pods
    /// written by two managers, dropping it saved about 27 KB per cached pod (57.7 KB → 30.5 KB
    /// per pod for kinformer, issue #17's measurement). What breaks: anything that reads
    /// managedFields from the cache — server-side-apply logic that computes field ownership or
    /// conflicts client-side, or extracts "what my manager applied" (client-go's
    /// `Extract…` apply configurations) from a cached object. Such code must `GET` the object
    /// from the server instead. Objects written back from the cache with an update (not an
    /// apply) are unaffected: an update without `managedFields` leaves the server's unchanged.
    pub fn strip_managed_fields(mut self) -> Self {
        self.strip_managed_fields = true;
        self
    }
    /// The most bytes one object may take on the wire, for every informer's source (default
    /// [`DEFAULT_MAX_OBJECT_SIZE`](crate::source::DEFAULT_MAX_OBJECT_SIZE); see
    /// [`KubeListerWatcher::with_max_object_size`]).
    pub fn max_object_size(mut self, bytes: usize) -> Self {
        self.max_object_size = bytes;
        self
    }
    /// The queue every informer runs on (default: client-go 1.36's in-order
    /// [`QueueMode::RealFifo`]; [`QueueMode::DeltaFifo`] for client-go ≤ 1.35's order).
    pub fn queue_mode(mut self, mode: QueueMode) -> Self {
        self.queue_mode = mode;
        self
    }
    /// How every informer gets its initial state, and again on every relist (default
    /// [`InitialListMode::Auto`]: a streaming list, `sendInitialEvents=true`, as client-go 1.35+
    /// does, falling back to list+watch on a server that refuses it; see [`crate::reflector`]).
    /// [`InitialListMode::ListThenWatch`] is client-go's behaviour before 1.35. Informers with a
    /// lean cache ([`CacheMode::Lean`]) list first under `Auto`: a streaming list holds every
    /// decoded object until its end bookmark, a list reaches the lean cache compressed in parts.
    pub fn initial_list(mut self, mode: InitialListMode) -> Self {
        self.initial_list = mode;
        self
    }
    /// Builds the factory.
    pub fn build(self) -> SharedInformerFactory {
        SharedInformerFactory {
            inner: Arc::new(FactoryInner {
                client: self.client,
                scope: self.scope,
                tweak: self.tweak,
                default_resync: self.default_resync,
                custom_resync: self.custom_resync,
                // with no transform of the user's to read them first, they need not be decoded
                strip_managed_fields: self.strip_managed_fields && self.transform.is_none(),
                transform: compose_strip(self.transform, self.strip_managed_fields),
                max_object_size: self.max_object_size,
                queue_mode: self.queue_mode,
                initial_list: self.initial_list,
                cache_mode: self.cache_mode,
                wire_format: self.wire_format,
                informers: Mutex::new(Vec::new()),
                tasks: TaskTracker::new(),
                cancel: CancellationToken::new(),
            }),
        }
    }
}

/// An informer's name: its kind, `(metadata)` for metadata-only ones, and its scope.
fn informer_name<K: Resource>(kind: &str, scope: &InformerScope) -> String {
    let metadata = if K::metadata_api() { " (metadata)" } else { "" };
    format!("{kind}{metadata}{}", scope.describe())
}

/// The factory's metadata transform: the user's, then (if asked) dropping managedFields.
fn compose_strip(transform: Option<MetaTransform>, strip: bool) -> Option<MetaTransform> {
    if !strip {
        return transform;
    }
    Some(Arc::new(move |m: &mut ObjectMeta| {
        if let Some(t) = &transform {
            t(m);
        }
        m.managed_fields = None;
    }))
}

/// One shared informer per type and scope, started and waited for together.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
/// use kinformer::SharedInformerFactory;
/// use tokio_util::sync::CancellationToken;
/// let factory = SharedInformerFactory::builder(kube::Client::try_default().await?).build();
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
    scope: InformerScope,
    tweak: Option<TweakFn>,
    default_resync: Duration,
    custom_resync: HashMap<TypeId, Duration>,
    transform: Option<MetaTransform>,
    /// managedFields may be left out while decoding (stripped, and no user transform).
    strip_managed_fields: bool,
    max_object_size: usize,
    queue_mode: QueueMode,
    initial_list: InitialListMode,
    cache_mode: CacheMode,
    wire_format: WireFormat,
    informers: Mutex<Vec<Registered>>,
    tasks: TaskTracker,
    cancel: CancellationToken,
}

impl Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedInformerFactory")
            .field("scope", &self.inner.scope)
            .field("informers", &self.inner.informers.lock().len())
            .finish_non_exhaustive()
    }
}

impl SharedInformerFactory {
    /// A factory over `client` with default options (all namespaces, no resync).
    pub fn new(client: kube::Client) -> Self {
        Self::builder(client).build()
    }

    /// A builder.
    pub fn builder(client: kube::Client) -> SharedInformerFactoryBuilder {
        SharedInformerFactoryBuilder {
            client,
            scope: InformerScope::default(),
            tweak: None,
            default_resync: Duration::ZERO,
            custom_resync: HashMap::new(),
            transform: None,
            strip_managed_fields: false,
            max_object_size: crate::source::DEFAULT_MAX_OBJECT_SIZE,
            queue_mode: QueueMode::default(),
            initial_list: InitialListMode::default(),
            cache_mode: CacheMode::default(),
            wire_format: WireFormat::default(),
        }
    }

    /// The shared informer for `K` in the factory's scope (created on first use, with a
    /// namespace index).
    pub fn informer<K>(&self) -> SharedIndexInformer<K>
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
        self.informer_with_scope::<K>(self.inner.scope.clone())
    }

    /// The shared informer for `K` in another scope (namespace, selectors).
    pub fn informer_with_scope<K>(&self, scope: InformerScope) -> SharedIndexInformer<K>
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
        let cluster_scoped =
            TypeId::of::<K::Scope>() == TypeId::of::<k8s_openapi::ClusterResourceScope>();
        let mut scope = scope;
        if cluster_scoped {
            scope.namespace = None;
        }
        let key = (TypeKey::Typed(TypeId::of::<K>()), scope.clone());
        let resync = self.resync_of(TypeId::of::<K>());
        self.get_or_create(key, || {
            let lw = KubeListerWatcher::<K>::for_scope(
                self.inner.client.clone(),
                scope.namespace.as_deref(),
                &(),
            );
            let name = informer_name::<K>(&K::kind(&()), &scope);
            self.new_informer(lw, &scope, resync, name)
        })
    }

    /// The shared metadata-only informer for `K` in the factory's scope (client-go's
    /// `metadatainformer`): the server sends only each object's metadata (see
    /// [`KubeListerWatcher`]'s "Metadata only"), and the cache holds
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
    {
        let mut scope = self.inner.scope.clone();
        if !namespaced {
            scope.namespace = None;
        }
        let id = format!(
            "{}/{}/{}",
            resource.group, resource.version, resource.plural
        );
        let type_key = if K::metadata_api() {
            TypeKey::DynamicMetadata(id)
        } else {
            TypeKey::Dynamic(id)
        };
        let key = (type_key, scope.clone());
        let resync = self.inner.default_resync;
        self.get_or_create(key, || {
            let lw = KubeListerWatcher::<K>::for_scope(
                self.inner.client.clone(),
                scope.namespace.as_deref(),
                resource,
            );
            let name = informer_name::<K>(&resource.kind, &scope);
            self.new_informer(lw, &scope, resync, name)
        })
    }

    fn resync_of(&self, t: TypeId) -> Duration {
        self.inner
            .custom_resync
            .get(&t)
            .copied()
            .unwrap_or(self.inner.default_resync)
    }

    /// An informer over `lw` narrowed to `scope`'s selectors and the factory's tweak: the
    /// source carries them itself, so the informer gets the source's whole list protocol
    /// (streamed, decoded in parallel, applied in parts) with nothing in between.
    fn new_informer<K>(
        &self,
        mut lw: KubeListerWatcher<K>,
        scope: &InformerScope,
        resync: Duration,
        name: String,
    ) -> SharedIndexInformer<K>
    where
        K: crate::Object + Clone + Debug + Serialize + DeserializeOwned,
    {
        lw = lw
            .with_max_object_size(self.inner.max_object_size)
            .with_wire_format(self.inner.wire_format);
        if self.inner.strip_managed_fields {
            lw = lw.dropping_managed_fields();
        }
        if let Some(l) = &scope.label_selector {
            lw = lw.with_label_selector(l.clone());
        }
        if let Some(f) = &scope.field_selector {
            lw = lw.with_field_selector(f.clone());
        }
        if let Some(t) = self.inner.tweak.clone() {
            lw = lw.with_tweak_options(move |o| t(o));
        }
        let mut indexers = Indexers::default();
        indexers.insert(NAMESPACE_INDEX.to_owned(), namespace_index_func());
        let informer = SharedIndexInformer::builder(lw)
            .queue_mode(self.inner.queue_mode)
            .initial_list(self.inner.initial_list)
            .cache_mode(self.inner.cache_mode)
            .resync_period(resync)
            .indexers(indexers)
            .name(name)
            .build();
        if let Some(t) = self.inner.transform.clone() {
            let _ = informer.set_transform(move |mut obj: K| {
                t(obj.meta_mut());
                obj
            });
        }
        informer
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
        for (_, informer, started) in self.inner.informers.lock().iter_mut() {
            if !*started && !informer.has_started() {
                informer.spawn(&self.inner.tasks, self.inner.cancel.child_token());
            }
            *started = true;
        }
    }

    /// Waits until every *started* informer has synced or `cancel` fires; the result says, per
    /// informer name, whether it synced (client-go's `WaitForCacheSync`). An informer counts as
    /// started as soon as [`start`](Self::start) returns, even if its task has not run yet.
    pub async fn wait_for_cache_sync(&self, cancel: &CancellationToken) -> BTreeMap<String, bool> {
        let started: Vec<(String, SyncSignal)> = self
            .inner
            .informers
            .lock()
            .iter()
            .filter(|(_, i, started)| *started || i.has_started())
            .map(|(_, i, _)| (i.name(), i.synced_signal()))
            .collect();
        wait_for_cache_sync(cancel, started.iter().map(|(_, s)| s.clone())).await;
        started
            .into_iter()
            .map(|(name, s)| (name, s.has_synced()))
            .collect()
    }

    /// Number of informers created.
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
