//! A minimal OpenAPI v3 surface: enough for kubectl to find that the server supports
//! server-side field validation (`fieldValidation` on PATCH for each group-version-kind), so
//! `kubectl create -f` / `apply` validate on the server instead of downloading full schemas.
//!
//! Deliberate difference from the real server: no object schemas are published (clients that
//! generate code from OpenAPI need a real cluster).

use serde_json::{Map, Value, json};

use crate::api::Registry;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: the index of group-version documents.
pub(super) fn index(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for r in registry.all() {
        let p = gv_path(&r.group, &r.version);
        paths.entry(p.clone()).or_insert_with(
            || json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash=kinformer")}),
        );
    }
    json!({"paths": paths})
}

/// `/openapi/v3/{api/v1 | apis/g/v}`: one PATCH operation per resource, declaring the
/// `fieldValidation` query parameter and its group-version-kind.
pub(super) fn group_version(registry: &Registry, gv: &str) -> Option<Value> {
    let mut paths = Map::new();
    for r in registry.all() {
        if gv_path(&r.group, &r.version) != gv {
            continue;
        }
        let item = if r.namespaced() {
            format!("/{gv}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("/{gv}/{}/{{name}}", r.plural)
        };
        let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
        let op = |verb: &str| {
            json!({
                "operationId": format!("{verb}{}", r.kind),
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}}
                ],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": verb,
                "x-kubernetes-group-version-kind": gvk,
            })
        };
        paths.insert(item, json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}));
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": crate::version::git_version()},
        "paths": paths,
        "components": {"schemas": {}}
    }))
}
