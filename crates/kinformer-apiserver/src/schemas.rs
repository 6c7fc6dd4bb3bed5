//! The built-in kinds' OpenAPI schemas, as the Kubernetes version the build selected publishes
//! them: `openapi/v1_NN.json`, written by `gen/openapi.py` from the k8s.io/kubernetes module's
//! `api/openapi-spec/v3` (the OpenAPI v3 `components.schemas` of the stable API versions'
//! kinds and everything they reference), with the enumerated fields' `enum`s and descriptions
//! the published spec leaves out taken from the module's generated definitions. For 1.35 the
//! result is, definition for definition, what kube-apiserver v1.35.4 serves (v3, and v2
//! through [`to_v2`]). Only the selected version's file is compiled in
//! (k8s-openapi's `k8s_if_1_NN!`, as kinformer-proto selects its table); it is parsed on first
//! use.
//!
//! Crate-internal API (the OpenAPI documents, and the schema-driven list semantics of
//! server-side apply):
//! - [`definition`]: a definition by name (`io.k8s.api.core.v1.PodSpec`), in its v3 form;
//! - [`for_kind`]: the definition of a group-version-kind (`x-kubernetes-group-version-kind`);
//! - [`ref_name`] / [`resolve`]: follow a property's reference (`$ref`, or v3's
//!   `allOf: [{$ref}]`) to the definition it names;
//! - [`to_v2`]: the OpenAPI v2 form of a v3 schema, exactly as kube-openapi writes both.
//!
//! List semantics sit on the property schemas: `x-kubernetes-list-type` (`atomic`, `set`,
//! `map`), `x-kubernetes-list-map-keys`, `x-kubernetes-patch-strategy`,
//! `x-kubernetes-patch-merge-key`, `x-kubernetes-map-type`.

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use serde_json::{Map, Value};

/// Declares the data file of one Kubernetes minor, compiled in when k8s-openapi's `$when`
/// macro keeps its contents (the selected version).
macro_rules! data {
    ($when:ident, $file:literal) => {
        k8s_openapi::$when! {
            /// The selected version's schemas (JSON, see `gen/openapi.py`).
            const DATA: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/", $file));
        }
    };
}

data!(k8s_if_1_33, "v1_33.json");
data!(k8s_if_1_34, "v1_34.json");
data!(k8s_if_1_35, "v1_35.json");
data!(k8s_if_1_36, "v1_36.json");
data!(k8s_if_1_37, "v1_37.json");

/// Where v3 references point.
pub(crate) const V3_PREFIX: &str = "#/components/schemas/";
/// Where v2 references point.
pub(crate) const V2_PREFIX: &str = "#/definitions/";

type Gvk = (String, String, String);

struct Schemas {
    definitions: Map<String, Value>,
    by_gvk: HashMap<Gvk, String>,
}

fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let definitions = match serde_json::from_str::<Value>(DATA) {
            Ok(Value::Object(mut m)) => match m.remove("schemas") {
                Some(Value::Object(d)) => d,
                _ => Map::new(),
            },
            _ => {
                tracing::error!("the compiled-in OpenAPI schemas do not parse");
                Map::new()
            }
        };
        let mut by_gvk = HashMap::new();
        for (name, def) in &definitions {
            for (g, v, k) in gvks(def) {
                // The kind's own definition, not a shared one listing every group-version
                // (DeleteOptions, WatchEvent): the first one wins, shared ones are few.
                by_gvk.entry((g, v, k)).or_insert_with(|| name.clone());
            }
        }
        Schemas {
            definitions,
            by_gvk,
        }
    })
}

/// The group-version-kinds a definition declares (`x-kubernetes-group-version-kind`).
pub(crate) fn gvks(def: &Value) -> Vec<(String, String, String)> {
    let Some(Value::Array(list)) = def.get("x-kubernetes-group-version-kind") else {
        return Vec::new();
    };
    let s = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    list.iter()
        .map(|e| (s(e, "group"), s(e, "version"), s(e, "kind")))
        .collect()
}

/// Every built-in definition, by name (v3 form).
pub(crate) fn definitions() -> &'static Map<String, Value> {
    &schemas().definitions
}

/// The definition named `name` (`io.k8s.api.core.v1.Pod`), in its v3 form.
pub(crate) fn definition(name: &str) -> Option<&'static Value> {
    schemas().definitions.get(name)
}

/// The name and definition of the kind `group`/`version`/`kind` (`""`, `v1`, `Pod`).
pub(crate) fn for_kind(
    group: &str,
    version: &str,
    kind: &str,
) -> Option<(&'static str, &'static Value)> {
    let s = schemas();
    let name = s
        .by_gvk
        .get(&(group.to_string(), version.to_string(), kind.to_string()))?;
    s.definitions
        .get_key_value(name)
        .map(|(k, v)| (k.as_str(), v))
}

/// The definition name a schema refers to: its `$ref`, or the one reference of v3's
/// `allOf: [{"$ref": ...}]` (how a property with a description or default refers).
pub(crate) fn ref_name(schema: &Value) -> Option<&str> {
    let r = match schema.get("$ref") {
        Some(Value::String(r)) => r,
        _ => match schema.get("allOf") {
            Some(Value::Array(all)) if all.len() == 1 => all[0].get("$ref")?.as_str()?,
            _ => return None,
        },
    };
    Some(r.rsplit('/').next().unwrap_or(r))
}

/// The schema a property's schema stands for: the built-in definition it refers to, else
/// itself.
pub(crate) fn resolve(schema: &Value) -> &Value {
    ref_name(schema).and_then(definition).unwrap_or(schema)
}

/// Adds to `out` every definition name `schema` refers to, directly or not (looked up with
/// `lookup`; names it does not know are kept but not followed).
pub(crate) fn references<'a>(
    schema: &Value,
    lookup: &dyn Fn(&str) -> Option<&'a Value>,
    out: &mut BTreeSet<String>,
) {
    let mut stack = vec![schema];
    while let Some(s) = stack.pop() {
        match s {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    let name = r.rsplit('/').next().unwrap_or(r);
                    if out.insert(name.to_string())
                        && let Some(d) = lookup(name)
                    {
                        stack.push(d);
                    }
                }
                stack.extend(m.iter().filter(|(k, _)| *k != "$ref").map(|(_, v)| v));
            }
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
}

/// The OpenAPI v2 form of a v3 schema, as kube-openapi writes the two (checked against the
/// module's `swagger.json` by `gen/openapi.py`): `allOf: [{$ref}]` becomes `$ref`, `default`
/// goes, a `oneOf` of types (Quantity, IntOrString) becomes `type: string`, references point
/// at `#/definitions/`.
pub(crate) fn to_v2(schema: &Value) -> Value {
    let Value::Object(m) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    let single_ref = match m.get("allOf") {
        Some(Value::Array(all)) if all.len() == 1 => all[0].get("$ref").cloned(),
        _ => None,
    };
    for (k, v) in m {
        match k.as_str() {
            "default" => {}
            "allOf" if single_ref.is_some() => {}
            "oneOf" => {
                out.insert("type".into(), Value::String("string".into()));
            }
            "$ref" => {
                out.insert(k.clone(), v2_ref(v));
            }
            "properties" | "patternProperties" => {
                let props = match v {
                    Value::Object(p) => p.iter().map(|(n, s)| (n.clone(), to_v2(s))).collect(),
                    other => other.clone(),
                };
                out.insert(k.clone(), props);
            }
            "items" | "additionalProperties" | "not" => {
                out.insert(k.clone(), to_v2(v));
            }
            "allOf" | "anyOf" => {
                let list = match v {
                    Value::Array(a) => Value::Array(a.iter().map(to_v2).collect()),
                    other => other.clone(),
                };
                out.insert(k.clone(), list);
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(r) = single_ref {
        out.insert("$ref".into(), v2_ref(&r));
    }
    Value::Object(out)
}

fn v2_ref(r: &Value) -> Value {
    match r.as_str() {
        Some(s) => Value::String(match s.strip_prefix(V3_PREFIX) {
            Some(name) => format!("{V2_PREFIX}{name}"),
            None => s.to_string(),
        }),
        None => r.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selected_versions_schemas_are_compiled_in() {
        // the tests build with v1_36
        assert!(DATA.contains("\"kubernetes\":\"1.36\""));
        let (name, pod) = for_kind("", "v1", "Pod").unwrap();
        assert_eq!(name, "io.k8s.api.core.v1.Pod");
        let spec = resolve(&pod["properties"]["spec"]);
        let containers = &spec["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-list-type"], "map");
        assert_eq!(
            ref_name(&containers["items"]),
            Some("io.k8s.api.core.v1.Container")
        );
        assert!(for_kind("apps", "v1", "Deployment").is_some());
        // only stable versions
        assert!(for_kind("apps", "v1beta1", "Deployment").is_none());
    }

    #[test]
    fn every_reference_resolves() {
        for def in definitions().values() {
            let mut refs = BTreeSet::new();
            references(def, &definition, &mut refs);
            for r in refs {
                assert!(definition(&r).is_some(), "{r}");
            }
        }
    }

    #[test]
    fn v2_forms_are_kube_openapis() {
        let meta = serde_json::json!({
            "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
            "default": {}, "description": "d"
        });
        assert_eq!(
            to_v2(&meta),
            serde_json::json!({"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "description": "d"})
        );
        let q = definition("io.k8s.apimachinery.pkg.api.resource.Quantity").unwrap();
        assert_eq!(to_v2(q)["type"], "string");
        assert!(to_v2(q).get("oneOf").is_none());
    }
}
