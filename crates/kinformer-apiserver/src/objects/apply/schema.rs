//! The merge semantics of an object's lists and maps, as structured-merge-diff reads them
//! from a type's schema: [`MergeSchema`] answers by path, so the data behind it can change
//! (today: a hand table for built-in kinds, a CRD's `openAPIV3Schema` for custom resources;
//! generated OpenAPI definitions for built-ins can replace the table behind the same trait).
//!
//! Paths are field names, with `[]` standing for "any item of the list here"
//! (`["spec", "containers", "[]", "ports"]`).
//!
//! Without a schema (unknown fields, `x-kubernetes-preserve-unknown-fields`), structured-merge-
//! diff deduces the type from the value (`__untyped_deduced_`): lists are atomic, maps are
//! granular and their keys are not named fields; [`CrdSchema`] answers so for paths its
//! schema does not describe.

use serde_json::Value;

use crate::resource::ResourceInfo;

/// One key of an associative list (`x-kubernetes-list-map-keys`), with the default value
/// structured-merge-diff uses when an item omits it (a port's `protocol` is `TCP`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ListKey {
    /// The key field.
    pub name: String,
    /// Its schema default, if any.
    pub default: Option<Value>,
}

impl ListKey {
    fn plain(name: &str) -> Self {
        ListKey {
            name: name.to_string(),
            default: None,
        }
    }
}

/// How a list merges (`x-kubernetes-list-type`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ListType {
    /// Replaced and owned as a whole (a leaf).
    Atomic,
    /// A set of scalars: items are `v:<json>`.
    Set,
    /// Items keyed by these fields: `k:{...}`.
    Map(Vec<ListKey>),
}

/// How a map or struct merges (`x-kubernetes-map-type`, `+structType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MapType {
    /// Replaced and owned as a whole.
    Atomic,
    /// Merged key by key.
    Granular,
}

/// The schema questions structured-merge-diff asks while merging, comparing and computing
/// field sets.
pub(crate) trait MergeSchema {
    /// The merge type of the list at `path`.
    fn list_at(&self, path: &[&str]) -> ListType;
    /// The merge type of the map or struct at `path`.
    fn map_at(&self, path: &[&str]) -> MapType;
    /// Whether `key` of the map at `path` is a named field of a struct (its ownership is
    /// implied by its children) rather than a key of a map (always a member of field sets).
    fn is_field(&self, path: &[&str], key: &str) -> bool;
}

/// The schema of objects of `res`: the CRD's schema for custom resources that have one, the
/// generated OpenAPI definition of the selected Kubernetes version for built-in kinds (the
/// same data `/openapi/v3` serves, [`crate::schemas`]), else the built-in table.
pub(crate) fn schema_for(res: &ResourceInfo) -> Box<dyn MergeSchema + '_> {
    if let Some(s) = &res.schema {
        return Box::new(CrdSchema { root: s });
    }
    match crate::schemas::for_kind(&res.group, &res.version, &res.kind) {
        Some((_, root)) => Box::new(CrdSchema { root }),
        None => Box::new(BuiltinSchema { res }),
    }
}

fn keys(names: &[&str]) -> ListType {
    ListType::Map(names.iter().map(|n| ListKey::plain(n)).collect())
}

/// Keyed by a port number and `protocol` (defaulted to `TCP`).
fn port_keys(port: &str) -> ListType {
    ListType::Map(vec![
        ListKey::plain(port),
        ListKey {
            name: "protocol".into(),
            default: Some(Value::String("TCP".into())),
        },
    ])
}

/// `ObjectMeta`'s lists (every kind's `metadata` and pod templates' `metadata`).
fn object_meta_list(rest: &[&str]) -> Option<ListType> {
    match rest {
        ["finalizers"] => Some(ListType::Set),
        ["ownerReferences"] => Some(keys(&["uid"])),
        _ => None,
    }
}

/// Lists of a pod spec, by their path below the spec.
fn pod_spec_list(rest: &[&str]) -> ListType {
    const CONTAINERS: &[&str] = &["containers", "initContainers", "ephemeralContainers"];
    match rest {
        [c] if CONTAINERS.contains(c) => keys(&["name"]),
        [c, "[]", "ports"] if CONTAINERS.contains(c) => port_keys("containerPort"),
        [c, "[]", "env"] if CONTAINERS.contains(c) => keys(&["name"]),
        [c, "[]", "volumeMounts"] if CONTAINERS.contains(c) => keys(&["mountPath"]),
        [c, "[]", "volumeDevices"] if CONTAINERS.contains(c) => keys(&["devicePath"]),
        [c, "[]", "resizePolicy"] if CONTAINERS.contains(c) => keys(&["resourceName"]),
        [c, "[]", "resources", "claims"] if CONTAINERS.contains(c) => keys(&["name"]),
        ["volumes"] | ["imagePullSecrets"] | ["schedulingGates"] | ["resourceClaims"] => {
            keys(&["name"])
        }
        ["hostAliases"] => keys(&["ip"]),
        ["topologySpreadConstraints"] => keys(&["topologyKey", "whenUnsatisfiable"]),
        _ => ListType::Atomic,
    }
}

/// The built-in kinds' keyed and set lists, from their Go types' list markers (a hand table:
/// every list not in it is atomic).
pub(crate) struct BuiltinSchema<'a> {
    /// The resource whose objects are described.
    pub res: &'a ResourceInfo,
}

impl BuiltinSchema<'_> {
    fn list(&self, path: &[&str]) -> ListType {
        if let ["metadata", rest @ ..] = path
            && let Some(l) = object_meta_list(rest)
        {
            return l;
        }
        match (self.res.group.as_str(), self.res.plural.as_str(), path) {
            ("", "pods", ["spec", rest @ ..]) => pod_spec_list(rest),
            ("", "pods", ["status", "conditions"]) => keys(&["type"]),
            ("", "pods", ["status", "podIPs"]) => keys(&["ip"]),
            (
                "apps",
                "deployments" | "replicasets" | "statefulsets" | "daemonsets",
                ["spec", "template", "metadata", rest @ ..],
            )
            | ("batch", "jobs", ["spec", "template", "metadata", rest @ ..]) => {
                object_meta_list(rest).unwrap_or(ListType::Atomic)
            }
            (
                "apps",
                "deployments" | "replicasets" | "statefulsets" | "daemonsets",
                ["spec", "template", "spec", rest @ ..],
            )
            | ("batch", "jobs", ["spec", "template", "spec", rest @ ..]) => pod_spec_list(rest),
            ("apps" | "batch", _, ["status", "conditions"]) => keys(&["type"]),
            ("", "services", ["spec", "ports"]) => port_keys("port"),
            ("", "services", ["spec", "clusterIPs" | "ipFamilies"]) => ListType::Atomic,
            ("", "nodes", ["spec", "podCIDRs"]) => ListType::Set,
            ("", "nodes", ["status", "addresses"]) => keys(&["type"]),
            ("", "nodes" | "namespaces", ["status", "conditions"]) => keys(&["type"]),
            _ => ListType::Atomic,
        }
    }
}

/// Maps whose keys are data, not named fields (every other built-in object is a struct).
fn builtin_string_map(path: &[&str]) -> bool {
    matches!(
        path.last(),
        Some(
            &("labels"
                | "annotations"
                | "data"
                | "binaryData"
                | "stringData"
                | "nodeSelector"
                | "limits"
                | "requests"
                | "matchLabels"
                | "capacity"
                | "allocatable"
                | "overhead")
        )
    )
}

impl MergeSchema for BuiltinSchema<'_> {
    fn list_at(&self, path: &[&str]) -> ListType {
        self.list(path)
    }

    fn map_at(&self, path: &[&str]) -> MapType {
        // `LabelSelector` is `+structType=atomic`.
        let selector = matches!(
            (self.res.group.as_str(), path),
            ("apps" | "batch", ["spec", "selector"])
        );
        if selector {
            MapType::Atomic
        } else {
            MapType::Granular
        }
    }

    fn is_field(&self, path: &[&str], _key: &str) -> bool {
        if path == ["spec", "selector"] {
            // A service's selector is a `map[string]string`; other selectors are structs.
            return self.res.plural != "services";
        }
        !builtin_string_map(path)
    }
}

/// A structural schema: a custom resource's (the CRD's `openAPIV3Schema` of its storage
/// version; `metadata` is `ObjectMeta`, as in the OpenAPI kube-apiserver builds for a CRD) or
/// a built-in kind's generated definition, whose references (`$ref`, `allOf: [{$ref}]`) are
/// followed as the walk goes.
pub(crate) struct CrdSchema<'a> {
    /// The root schema.
    pub root: &'a Value,
}

impl CrdSchema<'_> {
    /// The schema node at `path`; `None` where the schema does not describe it (deduced).
    fn node(&self, path: &[&str]) -> Option<&Value> {
        let mut node = self.root;
        for step in path {
            let here = crate::schemas::resolve(node);
            node = if *step == "[]" {
                here.get("items")?
            } else if let Some(p) = here.get("properties").and_then(|p| p.get(*step)) {
                p
            } else {
                match here.get("additionalProperties") {
                    Some(ap @ Value::Object(_)) => ap,
                    _ => return None,
                }
            };
        }
        Some(node)
    }
}

fn ext<'v>(node: &'v Value, key: &str) -> Option<&'v str> {
    node.get(key).and_then(|v| v.as_str())
}

impl MergeSchema for CrdSchema<'_> {
    fn list_at(&self, path: &[&str]) -> ListType {
        if let ["metadata", rest @ ..] = path {
            return object_meta_list(rest).unwrap_or(ListType::Atomic);
        }
        let Some(node) = self.node(path) else {
            return ListType::Atomic;
        };
        let item_default = |k: &str| {
            node.get("items")
                .map(crate::schemas::resolve)
                .and_then(|i| i.get("properties"))
                .and_then(|p| p.get(k))
                .and_then(|p| p.get("default"))
                .cloned()
        };
        let map_keys = |names: Vec<String>| {
            ListType::Map(
                names
                    .into_iter()
                    .map(|name| ListKey {
                        default: item_default(&name),
                        name,
                    })
                    .collect(),
            )
        };
        match ext(node, "x-kubernetes-list-type") {
            Some("set") => return ListType::Set,
            Some("map") => {
                let names: Vec<String> = node
                    .get("x-kubernetes-list-map-keys")
                    .and_then(|k| k.as_array())
                    .map(|a| {
                        a.iter()
                            .filter_map(|k| k.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                return if names.is_empty() {
                    ListType::Atomic
                } else {
                    map_keys(names)
                };
            }
            Some(_) => return ListType::Atomic,
            None => {}
        }
        match ext(node, "x-kubernetes-patch-strategy") {
            Some("merge" | "merge,retainKeys") => match ext(node, "x-kubernetes-patch-merge-key") {
                Some(k) => map_keys(vec![k.to_string()]),
                None => ListType::Set,
            },
            _ => ListType::Atomic,
        }
    }

    fn map_at(&self, path: &[&str]) -> MapType {
        // An owner reference is `+structType=atomic`: owned as a whole (`k:{"uid":..}`).
        if path == ["metadata", "ownerReferences", "[]"] {
            return MapType::Atomic;
        }
        if path.first() == Some(&"metadata") {
            return MapType::Granular;
        }
        // The marker sits on the property (`x-kubernetes-map-type`) or on the definition it
        // refers to (`+structType=atomic`).
        let atomic = self.node(path).is_some_and(|n| {
            ext(n, "x-kubernetes-map-type") == Some("atomic")
                || ext(crate::schemas::resolve(n), "x-kubernetes-map-type") == Some("atomic")
        });
        if atomic {
            MapType::Atomic
        } else {
            MapType::Granular
        }
    }

    fn is_field(&self, path: &[&str], key: &str) -> bool {
        match path {
            [] if matches!(key, "apiVersion" | "kind" | "metadata") => return true,
            ["metadata", rest @ ..] => return !builtin_string_map(rest),
            _ => {}
        }
        self.node(path)
            .map(crate::schemas::resolve)
            .and_then(|n| n.get("properties"))
            .is_some_and(|p| p.get(key).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::test_util::res;
    use serde_json::json;

    #[test]
    fn builtin_lists_follow_the_go_markers() {
        let pods = res("pods");
        let s = BuiltinSchema { res: &pods };
        assert_eq!(s.list_at(&["spec", "containers"]), keys(&["name"]));
        assert_eq!(
            s.list_at(&["spec", "containers", "[]", "ports"]),
            port_keys("containerPort")
        );
        assert_eq!(s.list_at(&["metadata", "finalizers"]), ListType::Set);
        assert_eq!(s.list_at(&["spec", "tolerations"]), ListType::Atomic);
        assert!(s.is_field(&["metadata"], "labels"));
        assert!(!s.is_field(&["metadata", "labels"], "app"));
        let deps = res("deployments");
        let d = BuiltinSchema { res: &deps };
        assert_eq!(d.map_at(&["spec", "selector"]), MapType::Atomic);
        assert_eq!(
            d.list_at(&["spec", "template", "spec", "containers", "[]", "env"]),
            keys(&["name"])
        );
    }

    #[test]
    fn crd_schemas_give_list_and_map_types() {
        let root = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "items": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "properties": {
                              "name": {"type": "string"}, "port": {"type": "integer", "default": 80}}}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "byMerge": {"type": "array", "x-kubernetes-patch-strategy": "merge",
                            "x-kubernetes-patch-merge-key": "port", "items": {"type": "object"}},
                "plain": {"type": "array", "items": {"type": "string"}},
                "sel": {"type": "object", "x-kubernetes-map-type": "atomic"},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }}
        }});
        let s = CrdSchema { root: &root };
        assert_eq!(s.list_at(&["spec", "items"]), keys(&["name"]));
        assert_eq!(s.list_at(&["spec", "tags"]), ListType::Set);
        assert_eq!(
            s.list_at(&["spec", "byMerge"]),
            ListType::Map(vec![ListKey::plain("port")])
        );
        assert_eq!(s.list_at(&["spec", "plain"]), ListType::Atomic);
        assert_eq!(s.list_at(&["spec", "free", "x"]), ListType::Atomic);
        assert_eq!(s.map_at(&["spec", "sel"]), MapType::Atomic);
        assert_eq!(s.map_at(&["spec", "free"]), MapType::Granular);
        assert!(s.is_field(&["spec"], "items"));
        assert!(!s.is_field(&["spec", "free"], "x"));
        assert_eq!(s.list_at(&["metadata", "finalizers"]), ListType::Set);
    }
}
