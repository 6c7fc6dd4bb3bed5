//! The OpenAPI documents the server publishes (served by `http/openapi.rs`): one v3 document
//! per group-version and one v2 document, for every served kind: the built-in kinds' schemas
//! of the selected Kubernetes version ([`crate::schemas`], generated from the k8s.io/kubernetes
//! module), and custom resources' from their CustomResourceDefinition's `openAPIV3Schema`,
//! published as kube-apiserver's CRD OpenAPI builder does (definition `com.example.v1.Widget`,
//! `apiVersion`, `kind` and `metadata` → `ObjectMeta` set by the server, a `WidgetList`, the
//! kind's `x-kubernetes-group-version-kind`).
//!
//! A v3 document holds `paths` (one operation per verb of each resource, with the query
//! parameters kubectl looks for: it finds server-side field validation from `fieldValidation`
//! on PATCH) and `components.schemas`: the group-version's kinds and every definition they
//! reference. Each has a hash of its content (SHA-512, as kube-openapi computes it) for the
//! index's links. Documents are built when first asked for and kept until the set of served
//! resources changes.

mod protobuf;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::api::Registry;
use crate::resource::ResourceInfo;
use crate::schemas::{self, V2_PREFIX, V3_PREFIX};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
/// Definitions every group-version document has (its operations answer them).
const COMMON: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
];
/// Kinds whose definitions declare a group-version whose document does not have them:
/// discovery documents (`/api`, `/apis`), TokenRequest (the `serviceaccounts/token`
/// subresource's, in `api/v1`), Eviction (`pods/eviction`'s, which the server does not serve).
const ELSEWHERE: &[&str] = &[
    "APIGroup",
    "APIGroupList",
    "APIVersions",
    "Eviction",
    "TokenRequest",
];
const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DOC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_METADATA_DOC: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// The documents built for one set of served resources.
pub(crate) struct Built {
    /// The registry's resources they describe (compared by pointer: any registration makes
    /// new ones).
    snapshot: Vec<Arc<ResourceInfo>>,
    /// `api/v1` / `apis/g/v` → (document, hash).
    v3: BTreeMap<String, (Bytes, String)>,
    /// The v2 document, built when first asked for.
    v2: std::sync::OnceLock<Bytes>,
    /// Its protobuf form, built when first asked for.
    v2_protobuf: std::sync::OnceLock<Bytes>,
}

/// The server's OpenAPI documents, rebuilt when the served resources change.
#[derive(Default)]
pub(crate) struct Cache(Mutex<Option<Arc<Built>>>);

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache").finish_non_exhaustive()
    }
}

impl Built {
    /// The `/openapi/v3` index: each document's link with its hash.
    pub(crate) fn index(&self) -> Value {
        let paths: Map<String, Value> = self
            .v3
            .iter()
            .map(|(gv, (_, hash))| {
                let url = format!("/openapi/v3/{gv}?hash={hash}");
                (gv.clone(), json!({ "serverRelativeURL": url }))
            })
            .collect();
        json!({ "paths": paths })
    }

    /// The v3 document of `gv` (`api/v1`, `apis/g/v`) and its hash.
    pub(crate) fn v3(&self, gv: &str) -> Option<(&Bytes, &str)> {
        self.v3.get(gv).map(|(doc, hash)| (doc, hash.as_str()))
    }

    /// The v2 document in gnostic's protobuf form.
    pub(crate) fn v2_protobuf(&self) -> Bytes {
        self.v2_protobuf
            .get_or_init(|| {
                let doc: Value = serde_json::from_slice(&self.v2()).unwrap_or(Value::Null);
                Bytes::from(protobuf::document(&doc))
            })
            .clone()
    }

    /// The v2 document.
    pub(crate) fn v2(&self) -> Bytes {
        self.v2
            .get_or_init(|| Bytes::from(serde_json::to_vec(&build_v2(self)).unwrap_or_default()))
            .clone()
    }
}

impl Cache {
    /// The documents for the registry's current resources.
    pub(crate) fn get(&self, registry: &Registry) -> Arc<Built> {
        let now = registry.all();
        let mut slot = self.0.lock();
        if let Some(b) = slot.as_ref()
            && b.snapshot.len() == now.len()
            && b.snapshot.iter().zip(&now).all(|(a, b)| Arc::ptr_eq(a, b))
        {
            return b.clone();
        }
        let v3 = build_v3(&now)
            .into_iter()
            .map(|(gv, doc)| {
                let bytes = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
                let hash = sha512_hex(&bytes);
                (gv, (bytes, hash))
            })
            .collect();
        let built = Arc::new(Built {
            snapshot: now,
            v3,
            v2: std::sync::OnceLock::new(),
            v2_protobuf: std::sync::OnceLock::new(),
        });
        *slot = Some(built.clone());
        built
    }
}

fn sha512_hex(b: &[u8]) -> String {
    use std::fmt::Write;
    let d = ring::digest::digest(&ring::digest::SHA512, b);
    d.as_ref().iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02X}");
        s
    })
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// kube-apiserver's definition name of a custom kind: the group reversed, the version, the
/// kind (`example.com`, `v1`, `Widget` → `com.example.v1.Widget`).
fn custom_name(r: &ResourceInfo, kind: &str) -> String {
    let mut group: Vec<&str> = r.group.split('.').collect();
    group.reverse();
    format!("{}.{}.{kind}", group.join("."), r.version)
}

/// Whether `r` is described by the built-in schemas (else by its own).
fn builtin(r: &ResourceInfo) -> bool {
    r.crd_name.is_none() && schemas::for_kind(&r.group, &r.version, &r.kind).is_some()
}

fn gvk_ext(r: &ResourceInfo, kind: &str) -> Value {
    json!([{ "group": r.group, "version": r.version, "kind": kind }])
}

fn meta_ref(name: &str, doc: &str) -> Value {
    json!({ "allOf": [{ "$ref": format!("{V3_PREFIX}{name}") }], "description": doc })
}

/// A custom kind's definitions (v3 form): the kind, from its schema with `apiVersion`, `kind`
/// and `metadata` set as kube-apiserver's CRD builder sets them, and its list.
fn custom_definitions(r: &ResourceInfo) -> [(String, Value); 2] {
    let mut def = match r.schema.as_deref() {
        Some(Value::Object(m)) => m.clone(),
        _ => {
            let mut m = Map::new();
            m.insert("type".into(), json!("object"));
            m.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
            m
        }
    };
    let props = def
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(p) = props {
        p.insert(
            "apiVersion".into(),
            json!({"description": API_VERSION_DOC, "type": "string"}),
        );
        p.insert(
            "kind".into(),
            json!({"description": KIND_DOC, "type": "string"}),
        );
        p.insert("metadata".into(), meta_ref(OBJECT_META, METADATA_DOC));
    }
    def.insert("type".into(), json!("object"));
    def.insert(
        "x-kubernetes-group-version-kind".into(),
        gvk_ext(r, &r.kind),
    );
    let name = custom_name(r, &r.kind);
    let list = json!({
        "description": format!("{} is a list of {}", r.list_kind(), r.kind),
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "items": {
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", r.plural),
                "items": {"$ref": format!("{V3_PREFIX}{name}")},
                "type": "array"
            },
            "kind": {"description": KIND_DOC, "type": "string"},
            "metadata": meta_ref(LIST_META, LIST_METADATA_DOC),
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": gvk_ext(r, &r.list_kind()),
    });
    [
        (name, Value::Object(def)),
        (custom_name(r, &r.list_kind()), list),
    ]
}

/// The definition name that describes `kind` of `r` in a document.
fn kind_ref(r: &ResourceInfo, kind: &str) -> String {
    if builtin(r) {
        schemas::for_kind(&r.group, &r.version, kind)
            .map(|(n, _)| n.to_string())
            .unwrap_or_default()
    } else {
        custom_name(r, kind)
    }
}

/// Every v3 document by group-version path.
fn build_v3(resources: &[Arc<ResourceInfo>]) -> BTreeMap<String, Value> {
    let mut by_gv: BTreeMap<String, Vec<&ResourceInfo>> = BTreeMap::new();
    for r in resources {
        by_gv
            .entry(gv_path(&r.group, &r.version))
            .or_default()
            .push(r);
    }
    let defs = schemas::definitions();
    by_gv
        .into_iter()
        .map(|(gv, rs)| {
            let (group, version) = (&rs[0].group, &rs[0].version);
            let mut local = Map::new();
            let has_builtin = rs.iter().any(|r| builtin(r));
            // A custom group-version's document has no discovery list or watch event
            // definitions (kube-apiserver's CRD builder adds neither); one of create-only
            // kinds (the reviews) only has the discovery list.
            let create_only = rs.iter().all(|r| r.create_only);
            let mut roots: BTreeSet<String> = COMMON
                .iter()
                .filter(|c| {
                    let discovery = c.ends_with(".APIResourceList");
                    if create_only {
                        discovery
                    } else {
                        has_builtin || !discovery && !c.ends_with(".WatchEvent")
                    }
                })
                .map(|s| s.to_string())
                .collect();
            if has_builtin {
                for (name, def) in defs {
                    // kinds no operation of the group-version answers (discovery documents, a
                    // subresource's kind served elsewhere) stay out, as in kube-apiserver's
                    if schemas::gvks(def).iter().any(|(g, v, k)| {
                        let k = k.as_str();
                        g == group
                            && v == version
                            && !ELSEWHERE.contains(&k)
                            && !(create_only && matches!(k, "DeleteOptions" | "WatchEvent"))
                    }) {
                        roots.insert(name.clone());
                    }
                }
            }
            for r in &rs {
                if r.scale.is_some() {
                    roots.insert("io.k8s.api.autoscaling.v1.Scale".into());
                }
                if r.group.is_empty() && r.plural == "serviceaccounts" {
                    roots.insert("io.k8s.api.authentication.v1.TokenRequest".into());
                }
                if !builtin(r) {
                    for (name, def) in custom_definitions(r) {
                        roots.insert(name.clone());
                        local.insert(name, def);
                    }
                }
            }
            let lookup = |n: &str| local.get(n).or_else(|| defs.get(n));
            let mut names = roots.clone();
            for root in &roots {
                if let Some(d) = lookup(root) {
                    schemas::references(d, &lookup, &mut names);
                }
            }
            let components: Map<String, Value> = names
                .iter()
                .filter_map(|n| lookup(n).map(|d| (n.clone(), d.clone())))
                .collect();
            let paths = paths(&gv, &rs, true);
            let doc = json!({
                "openapi": "3.0.0",
                "info": {"title": "Kubernetes", "version": crate::version::git_version()},
                "paths": paths,
                "components": {"schemas": components},
            });
            (gv, doc)
        })
        .collect()
}

/// The v2 document: every v3 document's paths and definitions in their v2 form.
fn build_v2(built: &Built) -> Value {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    let mut by_gv: BTreeMap<String, Vec<&ResourceInfo>> = BTreeMap::new();
    for r in &built.snapshot {
        by_gv
            .entry(gv_path(&r.group, &r.version))
            .or_default()
            .push(r);
    }
    for (gv, rs) in &by_gv {
        paths.extend(paths_of(gv, rs, false));
    }
    for (doc, _) in built.v3.values() {
        if let Ok(v) = serde_json::from_slice::<Value>(doc)
            && let Some(Value::Object(s)) = v.pointer("/components/schemas")
        {
            for (name, def) in s {
                definitions
                    .entry(name.clone())
                    .or_insert_with(|| schemas::to_v2(def));
            }
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": crate::version::git_version()},
        "paths": paths,
        "definitions": definitions,
    })
}

fn paths(gv: &str, rs: &[&ResourceInfo], v3: bool) -> Value {
    Value::Object(paths_of(gv, rs, v3))
}

/// A query parameter, in the v3 or v2 form.
fn query_param(name: &str, v3: bool) -> Value {
    if v3 {
        json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
    } else {
        json!({"name": name, "in": "query", "type": "string", "uniqueItems": true})
    }
}

fn path_param(name: &str, v3: bool) -> Value {
    if v3 {
        json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}})
    } else {
        json!({"name": name, "in": "path", "required": true, "type": "string", "uniqueItems": true})
    }
}

struct Op<'a> {
    action: &'a str,
    id: String,
    params: &'a [&'a str],
    gvk: (&'a str, &'a str, &'a str),
    body: Option<String>,
    answer: Option<String>,
}

fn operation(op: Op<'_>, v3: bool) -> Value {
    let schema = |name: &str| {
        let prefix = if v3 { V3_PREFIX } else { V2_PREFIX };
        json!({"$ref": format!("{prefix}{name}")})
    };
    let mut o = json!({
        "operationId": op.id,
        "parameters": op.params.iter().map(|p| query_param(p, v3)).collect::<Vec<_>>(),
        "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": {"group": op.gvk.0, "version": op.gvk.1, "kind": op.gvk.2},
    });
    let answer = op.answer.as_deref().unwrap_or("");
    let ok = match (v3, answer.is_empty()) {
        (_, true) => json!({"description": "OK"}),
        (true, false) => {
            json!({"description": "OK", "content": {"application/json": {"schema": schema(answer)}}})
        }
        (false, false) => json!({"description": "OK", "schema": schema(answer)}),
    };
    o["responses"] = json!({"200": ok, "401": {"description": "Unauthorized"}});
    if let Some(b) = op.body.filter(|b| !b.is_empty()) {
        if v3 {
            o["requestBody"] =
                json!({"content": {"*/*": {"schema": schema(&b)}}, "required": true});
        } else if let Value::Array(ps) = &mut o["parameters"] {
            ps.push(json!({"name": "body", "in": "body", "required": true, "schema": schema(&b)}));
        }
    }
    o
}

const WRITE: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];
const PATCH: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "force"];
const LIST: &[&str] = &[
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];

/// The operations of one group-version's resources, by path.
fn paths_of(gv: &str, rs: &[&ResourceInfo], v3: bool) -> Map<String, Value> {
    let mut out = Map::new();
    for r in rs {
        let ns = if r.namespaced() {
            "/namespaces/{namespace}"
        } else {
            ""
        };
        let collection = format!("/{gv}{ns}/{}", r.plural);
        let item = format!("{collection}/{{name}}");
        let kind = kind_ref(r, &r.kind);
        let list = kind_ref(r, &r.list_kind());
        let gvk = (r.group.as_str(), r.version.as_str(), r.kind.as_str());
        let ns_params: Vec<Value> = if r.namespaced() {
            vec![path_param("namespace", v3)]
        } else {
            Vec::new()
        };
        let op = |action: &'static str, verb: &str, params: &[&str], body: bool, answer: &str| {
            operation(
                Op {
                    action,
                    id: format!("{verb}{}", r.kind),
                    params,
                    gvk,
                    body: body.then(|| kind.clone()),
                    answer: Some(answer.to_string()),
                },
                v3,
            )
        };
        let mut coll = Map::new();
        coll.insert("parameters".into(), json!(ns_params));
        coll.insert("post".into(), op("post", "create", WRITE, true, &kind));
        if !r.create_only {
            coll.insert("get".into(), op("list", "list", LIST, false, &list));
            coll.insert(
                "delete".into(),
                op("deletecollection", "deletecollection", LIST, false, ""),
            );
        }
        out.insert(collection, Value::Object(coll));
        if r.create_only {
            continue;
        }
        let mut item_params = ns_params.clone();
        item_params.push(path_param("name", v3));
        let obj = json!({
            "parameters": item_params,
            "get": op("get", "read", &[], false, &kind),
            "put": op("put", "replace", WRITE, true, &kind),
            "patch": op("patch", "patch", PATCH, false, &kind),
            "delete": op("delete", "delete", &["dryRun", "gracePeriodSeconds"], false, ""),
        });
        out.insert(item.clone(), obj);
        if r.status_subresource {
            let status = json!({
                "parameters": item_params,
                "get": op("get", "readStatus", &[], false, &kind),
                "put": op("put", "replaceStatus", WRITE, true, &kind),
                "patch": op("patch", "patchStatus", PATCH, false, &kind),
            });
            out.insert(format!("{item}/status"), status);
        }
        if r.scale.is_some() {
            let scale = "io.k8s.api.autoscaling.v1.Scale";
            let sop = |action: &'static str, verb: &str, params: &[&str], body: bool| {
                operation(
                    Op {
                        action,
                        id: format!("{verb}{}Scale", r.kind),
                        params,
                        gvk: ("autoscaling", "v1", "Scale"),
                        body: body.then(|| scale.to_string()),
                        answer: Some(scale.to_string()),
                    },
                    v3,
                )
            };
            let s = json!({
                "parameters": item_params,
                "get": sop("get", "read", &[], false),
                "put": sop("put", "replace", WRITE, true),
                "patch": sop("patch", "patch", PATCH, false),
            });
            out.insert(format!("{item}/scale"), s);
        }
        if r.group.is_empty() && r.plural == "serviceaccounts" {
            let tr = "io.k8s.api.authentication.v1.TokenRequest";
            let post = operation(
                Op {
                    action: "post",
                    id: "createServiceAccountToken".into(),
                    params: WRITE,
                    gvk: ("authentication.k8s.io", "v1", "TokenRequest"),
                    body: Some(tr.into()),
                    answer: Some(tr.into()),
                },
                v3,
            );
            out.insert(
                format!("{item}/token"),
                json!({"parameters": item_params, "post": post}),
            );
        }
    }
    out
}
