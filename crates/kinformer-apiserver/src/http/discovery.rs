//! Discovery documents: `/api`, `/apis`, `/apis/{group}`, `/api/v1`, `/apis/{g}/{v}`,
//! `/version`. Unaggregated (v1) discovery: kubectl falls back to it when the server does not
//! answer the aggregated form.

use crate::resource::version_priority;
use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::api::Registry;

/// A custom resource's verbs, in kube-apiserver's order for them (e2e/diff "crd").
const CUSTOM_VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// kube-apiserver's `storageVersionHash`: the first 8 bytes of SHA-256 of `group/version/kind`,
/// base64.
fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine;
    let d = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{group}/{version}/{kind}").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(&d.as_ref()[..8])
}

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// `/api`.
pub(super) fn core_versions(address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]
    })
}

fn group_entry(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({
        "name": group,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

fn groups(registry: &Registry) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in registry.all() {
        if r.group.is_empty() {
            continue;
        }
        let e = m.entry(r.group.clone()).or_default();
        if !e.contains(&r.version) {
            e.push(r.version.clone());
        }
    }
    for vs in m.values_mut() {
        vs.sort_by_cached_key(|v| (version_priority(v), v.clone()));
    }
    m
}

/// `/apis`.
pub(super) fn group_list(registry: &Registry) -> Value {
    let gs: Vec<Value> = groups(registry)
        .iter()
        .map(|(g, vs)| group_entry(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": gs})
}

/// `/`: the paths the server serves, sorted, as kube-apiserver lists its own (`kubectl get
/// --raw /`): discovery for every group and version, OpenAPI, health, metrics, version.
pub(super) fn root_paths(registry: &Registry) -> Value {
    let mut paths: Vec<String> = [
        "/api",
        "/api/v1",
        "/apis",
        "/healthz",
        "/livez",
        "/metrics",
        "/openapi/v2",
        "/openapi/v3",
        "/readyz",
        "/version",
    ]
    .map(String::from)
    .into();
    for (g, vs) in groups(registry) {
        paths.extend(vs.iter().map(|v| format!("/apis/{g}/{v}")));
        paths.push(format!("/apis/{g}"));
    }
    paths.sort();
    json!({ "paths": paths })
}

/// `/apis/{group}`.
pub(super) fn group(registry: &Registry, group: &str) -> Value {
    let vs = groups(registry).remove(group).unwrap_or_default();
    let mut g = group_entry(group, &vs);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    g
}

/// `/api/v1` or `/apis/{group}/{version}`.
pub(super) fn resource_list(registry: &Registry, group: &str, version: &str) -> Value {
    let mut resources = Vec::new();
    for r in registry
        .all()
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let verbs: &[&str] = if r.create_only {
            &["create"]
        } else if r.crd_name.is_some() {
            CUSTOM_VERBS
        } else {
            VERBS
        };
        let mut entry = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced(),
            "kind": r.kind,
            "verbs": verbs,
        });
        if !r.create_only {
            entry["storageVersionHash"] =
                json!(storage_version_hash(&r.group, &r.version, &r.kind));
        }
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            entry["categories"] = json!(r.categories);
        }
        resources.push(entry);
        if r.scale.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", r.plural),
                "singularName": "",
                "namespaced": r.namespaced(),
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
        if crate::objects::namespace::is_namespace(r) {
            resources.push(json!({
                "name": "namespaces/finalize",
                "singularName": "",
                "namespaced": false,
                "kind": "Namespace",
                "verbs": ["update"],
            }));
        }
        if r.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", r.plural),
                "singularName": "",
                "namespaced": r.namespaced(),
                "kind": r.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
}

/// `/version`.
pub(super) fn version() -> Value {
    json!({
        "major": "1",
        "minor": crate::version::minor(),
        "emulationMajor": "1",
        "emulationMinor": crate::version::minor(),
        "gitVersion": format!("{}-kinformer", crate::version::git_version()),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

#[cfg(test)]
mod tests {
    use super::storage_version_hash;

    #[test]
    fn storage_version_hashes_are_kube_apiservers() {
        // the values kube-apiserver v1.35 serves in /api/v1 and /apis/apps/v1
        assert_eq!(storage_version_hash("", "v1", "Pod"), "xPOwRZ+Yhw8=");
        assert_eq!(
            storage_version_hash("apps", "v1", "Deployment"),
            "8aSe+NMegvE="
        );
    }
}
