//! An informer's identity in the factory: its scope (namespace or namespace set, selectors,
//! shard), its type key, and its name.

use std::any::TypeId;
use std::collections::HashMap;

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

/// What tells apart informers that share a name in
/// [`wait_for_cache_sync`](super::SharedInformerFactory::wait_for_cache_sync)'s map: the API
/// version of the objects (`v1`, `apps/v1`) and, for a dynamic informer, `dynamic`.
pub(super) fn qualifier(key: &TypeKey, api_version: Option<String>) -> String {
    let dynamic = matches!(key, TypeKey::Dynamic(_) | TypeKey::DynamicMetadata(_));
    match (api_version, dynamic) {
        (Some(v), true) => format!("{v}, dynamic"),
        (Some(v), false) => v,
        (None, true) => "dynamic".to_owned(),
        (None, false) => String::new(),
    }
}

/// One distinct name per `(name, qualifier)`, in order: a name only one entry has is kept;
/// entries that share a name get their qualifier (`Event (events.k8s.io/v1)`), and entries
/// still alike after that a number from the second on (`Event (v1) #2`).
pub(super) fn distinct_names(entries: &[(String, String)]) -> Vec<String> {
    let mut sharing: HashMap<&str, usize> = HashMap::new();
    for (name, _) in entries {
        *sharing.entry(name).or_default() += 1;
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    entries
        .iter()
        .map(|(name, qualifier)| {
            let name = if sharing[name.as_str()] < 2 || qualifier.is_empty() {
                name.clone()
            } else {
                format!("{name} ({qualifier})")
            };
            let n = seen.entry(name.clone()).or_default();
            *n += 1;
            if *n == 1 {
                name
            } else {
                format!("{name} #{n}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(name: &str, qualifier: &str) -> (String, String) {
        (name.to_owned(), qualifier.to_owned())
    }

    #[test]
    fn names_only_one_informer_has_are_kept() {
        let names = distinct_names(&[
            e("Pod", "v1"),
            e("Pod (metadata)", "v1"),
            e("ConfigMap", "v1"),
        ]);
        assert_eq!(names, ["Pod", "Pod (metadata)", "ConfigMap"]);
    }

    #[test]
    fn a_shared_name_gets_the_api_version_and_whether_it_is_dynamic() {
        let names = distinct_names(&[
            e("Event", "v1"),
            e("Event", "events.k8s.io/v1"),
            e("ConfigMap", "v1"),
            e("ConfigMap", "v1, dynamic"),
        ]);
        assert_eq!(
            names,
            [
                "Event (v1)",
                "Event (events.k8s.io/v1)",
                "ConfigMap (v1)",
                "ConfigMap (v1, dynamic)"
            ]
        );
    }

    #[test]
    fn entries_still_alike_are_numbered_from_the_second_on() {
        let names = distinct_names(&[e("Foo", ""), e("Foo", ""), e("Foo", "x/v1"), e("Bar", "")]);
        assert_eq!(names, ["Foo", "Foo #2", "Foo (x/v1)", "Bar"]);
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn the_qualifier_names_the_api_version_and_dynamic_informers() {
        let typed = TypeKey::Typed(std::any::TypeId::of::<u8>());
        let dynamic = TypeKey::Dynamic("apps/v1/deployments".into());
        assert_eq!(qualifier(&typed, Some("apps/v1".into())), "apps/v1");
        assert_eq!(
            qualifier(&dynamic, Some("apps/v1".into())),
            "apps/v1, dynamic"
        );
        assert_eq!(qualifier(&dynamic, None), "dynamic");
        assert_eq!(qualifier(&typed, None), "");
    }
}
