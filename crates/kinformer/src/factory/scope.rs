//! An informer's identity in the factory: its scope (namespace or namespace set, selectors,
//! shard), its type key, and its name.

use std::any::TypeId;

use kube::Resource;
use kube::api::ApiResource;

use crate::InformerConfig;
use crate::source::NamespaceSet;

/// Which objects an informer covers: a namespace (or all) and selectors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InformerScope {
    /// Only this namespace (ignored for cluster-scoped types); `None`: all namespaces.
    pub namespace: Option<String>,
    /// Only the namespaces of this set ([`InformerConfig::namespaces`]; wins over
    /// `namespace`, ignored for cluster-scoped types). Sets compare by identity, so two
    /// informers over different sets are different informers.
    pub namespaces: Option<NamespaceSet>,
    /// Label selector applied to list and watch.
    pub label_selector: Option<String>,
    /// Field selector applied to list and watch.
    pub field_selector: Option<String>,
    /// The shard's `shardSelector` ([`InformerConfig::shard`]): informers of different
    /// shards of one type are different informers.
    pub shard_selector: Option<String>,
}

impl InformerScope {
    /// The scope of a configuration: its namespace and selectors.
    fn of<K>(config: &InformerConfig<K>) -> Self {
        Self {
            namespace: config
                .namespace
                .clone()
                .filter(|_| config.namespaces.is_none()),
            namespaces: config.namespaces.clone(),
            label_selector: config.label_selector.clone(),
            field_selector: config.field_selector.clone(),
            shard_selector: config.shard.as_ref().map(crate::shard::Shard::selector),
        }
    }

    fn describe(&self) -> String {
        let mut s = String::new();
        if let Some(ns) = &self.namespace {
            s.push_str(&format!(" ns={ns}"));
        }
        if let Some(set) = &self.namespaces {
            s.push_str(&format!(" namespaces=#{}", set.id()));
        }
        if let Some(l) = &self.label_selector {
            s.push_str(&format!(" labels={l}"));
        }
        if let Some(f) = &self.field_selector {
            s.push_str(&format!(" fields={f}"));
        }
        if let Some(shard) = &self.shard_selector {
            s.push_str(&format!(" shard={shard}"));
        }
        s
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum TypeKey {
    Typed(TypeId),
    Dynamic(String),
    DynamicMetadata(String),
}

/// The key of `K`'s informer with `config` (a cluster-scoped type's namespace cleared).
pub(super) fn typed_key<K>(config: &mut InformerConfig<K>) -> (TypeKey, InformerScope)
where
    K: Resource<DynamicType = ()> + 'static,
    K::Scope: 'static,
{
    if TypeId::of::<K::Scope>() == TypeId::of::<k8s_openapi::ClusterResourceScope>() {
        config.namespace = None;
        config.namespaces = None;
    }
    (TypeKey::Typed(TypeId::of::<K>()), InformerScope::of(config))
}

/// The key of a dynamic resource's informer (full or metadata-only by `K`) with `config` (a
/// cluster-scoped resource's namespace cleared).
pub(super) fn dynamic_key<K: Resource>(
    resource: &ApiResource,
    namespaced: bool,
    config: &mut InformerConfig<K>,
) -> (TypeKey, InformerScope) {
    if !namespaced {
        config.namespace = None;
        config.namespaces = None;
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
    (type_key, InformerScope::of(config))
}

/// An informer's name: its kind, `(metadata)` for metadata-only ones, and its scope.
pub(super) fn informer_name<K: Resource>(kind: &str, scope: &InformerScope) -> String {
    let metadata = if K::metadata_api() { " (metadata)" } else { "" };
    format!("{kind}{metadata}{}", scope.describe())
}
