//! [`SharedIndexInformerBuilder`]: an informer's source, configuration, indexes and name.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::*;

/// Builds a [`SharedIndexInformer`]; made by [`SharedIndexInformer::builder`].
///
/// Everything an informer does is set by its [`InformerConfig`] ([`config`](Self::config));
/// besides it, the builder takes the cache's first indexes ([`indexers`](Self::indexers); more
/// can be added at any time with [`SharedIndexInformer::add_indexers`]) and a name.
///
/// `N` records whether the informer has been given a [`name`](Self::name): until then the
/// informer is named after its kind, which needs a type with a static kind
/// (`K::DynamicType: Default`, true of every k8s-openapi type and custom resource); a
/// `DynamicObject` informer is named before it is built.
#[must_use]
pub struct SharedIndexInformerBuilder<K: Object, N = KindName> {
    pub(super) lister_watcher: Arc<dyn ListerWatcher<K>>,
    pub(super) config: InformerConfig<K>,
    pub(super) indexers: Indexers<K>,
    pub(super) name: N,
    pub(super) type_identity: Option<crate::snapshot::TypeIdentity>,
}

/// The name of an informer that was not named: its kind (see [`SharedIndexInformerBuilder`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct KindName;

impl<K: Object, N> SharedIndexInformerBuilder<K, N> {
    /// Everything the informer does (see [`InformerConfig`]; default: its `Default`).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::{InformerConfig, SharedIndexInformer};
    /// use kinformer::reflector::ListWatch;
    /// use kinformer::store::CacheMode;
    /// # fn lw() -> ListWatch<Pod> { unimplemented!() }
    /// # fn demo() {
    /// let informer = SharedIndexInformer::builder(lw())
    ///     .config(InformerConfig::default().cache_mode(CacheMode::Lean))
    ///     .build();
    /// assert_eq!(informer.indexer().cache_mode(), CacheMode::Lean);
    /// # }
    /// ```
    pub fn config(mut self, config: InformerConfig<K>) -> Self {
        self.config = config;
        self
    }

    /// The cache's indexes from the start (client-go's `NewSharedIndexInformer` `indexers`);
    /// default none.
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
            config: self.config,
            indexers: self.indexers,
            name: name.into(),
            type_identity: self.type_identity,
        }
    }

    /// The type the informer caches, as a snapshot records it (see [`crate::snapshot`]).
    /// Known by itself for a type with a static kind built unnamed; the factory sets it for
    /// every informer it makes; a named informer of another type needs it for snapshots.
    pub fn type_identity(mut self, identity: crate::snapshot::TypeIdentity) -> Self {
        self.type_identity = Some(identity);
        self
    }

    /// Objects the cache starts from (fabric8's `initialState`; see
    /// [`InformerConfig::initial_state`]).
    pub fn initial_state(mut self, objects: impl IntoIterator<Item = K>) -> Self {
        self.config = self.config.initial_state(objects);
        self
    }

    fn build_as(self, name: String) -> SharedIndexInformer<K>
    where
        K: Serialize + DeserializeOwned,
    {
        let key_func = crate::object::meta_namespace_key_func();
        let indexer = Indexer::for_informer(
            key_func,
            self.indexers,
            self.config.cache_mode,
            self.config.lean_hot_objects,
        );
        let codec = snapshot::JsonCodec {
            to_json: |obj| serde_json::to_vec(obj),
            from_json: |bytes| serde_json::from_slice(bytes),
        };
        let snap = snapshot::SnapState::new(codec, self.type_identity);
        SharedIndexInformer::from_parts(name, self.lister_watcher, indexer, self.config, snap)
    }
}

impl<K: Object + Serialize + DeserializeOwned> SharedIndexInformerBuilder<K, KindName>
where
    K::DynamicType: Default,
{
    /// Builds the informer, named after its kind; nothing runs until
    /// [`SharedIndexInformer::run`].
    pub fn build(mut self) -> SharedIndexInformer<K> {
        let dt = K::DynamicType::default();
        let name = K::kind(&dt).into_owned();
        if self.type_identity.is_none() {
            self.type_identity = Some(crate::snapshot::TypeIdentity {
                group: K::group(&dt).into_owned(),
                version: K::version(&dt).into_owned(),
                kind: name.clone(),
                plural: K::plural(&dt).into_owned(),
                metadata_only: K::metadata_api(),
            });
        }
        self.build_as(name)
    }
}

impl<K: Object + Serialize + DeserializeOwned> SharedIndexInformerBuilder<K, String> {
    /// Builds the informer under the name it was given; nothing runs until
    /// [`SharedIndexInformer::run`].
    pub fn build(mut self) -> SharedIndexInformer<K> {
        let name = std::mem::take(&mut self.name);
        self.build_as(name)
    }
}

impl<K> SharedIndexInformer<K>
where
    K: Object + Serialize + DeserializeOwned + std::fmt::Debug,
    K::DynamicType: Default + Clone,
    K::Scope: 'static,
{
    /// An informer over a real cluster, its source made from `config`
    /// ([`KubeListerWatcher::new`](crate::KubeListerWatcher::new)): `K` in `config`'s namespace
    /// (all namespaces without one), or over its [namespace set](InformerConfig::namespaces)
    /// ([`NamespaceSetListerWatcher`](crate::NamespaceSetListerWatcher)), named after its kind, without indexes. The factory
    /// ([`SharedInformerFactory`](crate::SharedInformerFactory)) shares one per type; this is
    /// for a program that wants one informer of its own.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::{InformerConfig, SharedIndexInformer};
    /// let client = kube::Client::try_default().await?;
    /// let pods = SharedIndexInformer::<Pod>::new(client, InformerConfig::default().namespace("prod"));
    /// # let _ = pods; Ok(()) }
    /// ```
    pub fn new(client: kube::Client, config: InformerConfig<K>) -> Self {
        let namespaced = std::any::TypeId::of::<K::Scope>()
            != std::any::TypeId::of::<k8s_openapi::ClusterResourceScope>();
        let dyntype = K::DynamicType::default();
        let source = crate::source::kube_source(client, &config, &dyntype, namespaced);
        Self::builder(source).config(config).build()
    }
}
