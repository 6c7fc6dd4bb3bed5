//! Unknown and duplicate fields in a written object, as kube-apiserver's decoding treats them:
//! a field the kind's schema does not declare is dropped (Go's typed decoding, or a custom
//! resource's pruning), and the request's `fieldValidation` says what the client hears of it:
//! `Strict` (kubectl's default) a 400 "strict decoding error: unknown field \"spec.x\"",
//! `Warn` (the default) one `Warning` header per field, `Ignore` nothing. A key given twice in
//! one JSON object is a "duplicate field" (the last value wins).
//!
//! Built-in kinds list the fields in the order the body has them; custom resources list the
//! duplicates first, then the unknown fields sorted (they come from pruning), as kube does.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::resource::ResourceInfo;
use crate::schemas;
use crate::status::ApiError;

/// A request's `fieldValidation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop them and say so in `Warning` headers (kube-apiserver's default).
    Warn,
    /// Refuse the request (400).
    Strict,
}

impl FieldValidation {
    /// `fieldValidation` of a write's query; anything else than `Ignore`, `Warn`, `Strict` or
    /// nothing is 422 for `options_kind` (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
    pub(crate) fn from_query(
        query: &std::collections::HashMap<String, String>,
        options_kind: &str,
    ) -> Result<Self, ApiError> {
        match query.get("fieldValidation").map(String::as_str) {
            None | Some("" | "Warn") => Ok(Self::Warn),
            Some("Ignore") => Ok(Self::Ignore),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(ApiError::invalid(
                options_kind,
                "meta.k8s.io",
                "",
                &[(
                    "fieldValidation".into(),
                    "FieldValueNotSupported".into(),
                    format!(
                        "Unsupported value: \"{other}\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                    ),
                )],
            )),
        }
    }

    /// What the client hears of `problems` (from [`problems`]): the 400 under `Strict`, the
    /// warnings to send under `Warn`.
    pub(crate) fn judge(
        self,
        res: &ResourceInfo,
        problems: Vec<String>,
    ) -> Result<Vec<String>, ApiError> {
        match self {
            _ if problems.is_empty() => Ok(Vec::new()),
            Self::Ignore => Ok(Vec::new()),
            Self::Warn => Ok(problems),
            Self::Strict => Err(super::cannot_handle(
                res,
                format!("strict decoding error: {}", problems.join(", ")),
            )),
        }
    }
}

/// ObjectMeta's definition: every kind's `metadata`, a custom resource's included.
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The schema a kind's objects are decoded by: a custom resource's structural schema, else the
/// built-in definition of its group, version and kind. `None`: anything goes (an unknown kind).
fn kind_schema(res: &ResourceInfo) -> Option<&Value> {
    match &res.schema {
        Some(s) => Some(s),
        None => schemas::for_kind(&res.group, &res.version, &res.kind).map(|(_, d)| d),
    }
}

/// How a schema node takes an object's keys.
enum Keys<'a> {
    /// Declared properties (and, at a resource's root, `apiVersion`, `kind`, `metadata`).
    Declared(&'a Map<String, Value>, bool),
    /// A map: every key, values of this schema.
    Map(&'a Value),
    /// Anything (no properties, or `x-kubernetes-preserve-unknown-fields`).
    Any,
}

fn keys_of(schema: &Value, root: bool) -> Keys<'_> {
    let s = schemas::resolve(schema);
    if s.get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return Keys::Any;
    }
    let embedded = root
        || s.get("x-kubernetes-embedded-resource")
            .and_then(Value::as_bool)
            == Some(true);
    match (
        s.get("properties").and_then(Value::as_object),
        s.get("additionalProperties"),
    ) {
        (Some(p), None | Some(Value::Bool(false))) => Keys::Declared(p, embedded),
        (None, Some(a @ Value::Object(_))) => Keys::Map(a),
        (None, None) if embedded => Keys::Declared(empty(), true),
        _ => Keys::Any,
    }
}

fn empty() -> &'static Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

/// The schema of key `k` under `keys`; `None` when `k` is unknown. `Some(None)`: known, anything
/// goes below it.
fn child<'a>(keys: &Keys<'a>, k: &str) -> Option<Option<&'a Value>> {
    match keys {
        // a resource's metadata is ObjectMeta, whatever a custom resource's schema says of it
        Keys::Declared(_, true) if k == "metadata" => Some(schemas::definition(OBJECT_META)),
        Keys::Declared(props, embedded) => match props.get(k) {
            Some(s) => Some(Some(s)),
            None if *embedded && matches!(k, "apiVersion" | "kind") => Some(None),
            None => None,
        },
        Keys::Map(v) => Some(Some(v)),
        Keys::Any => Some(None),
    }
}

fn items_of(schema: &Value) -> Option<&Value> {
    schemas::resolve(schema).get("items")
}

fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

/// What a JSON body's strict decoding reports, in kube-apiserver's order and words
/// (`unknown field "spec.x"`, `duplicate field "data.a"`). Empty for a body that is not JSON
/// (its decoding reports that) or a kind without a schema.
pub(crate) fn problems(res: &ResourceInfo, body: &[u8]) -> Vec<String> {
    let Some(schema) = kind_schema(res) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    let seed = Scan {
        schema: Some(schema),
        root: true,
        path: String::new(),
        found: &mut found,
    };
    if seed.deserialize(&mut de).is_err() {
        return Vec::new();
    }
    if res.schema.is_some() {
        // a custom resource: the decoder's duplicates, then what pruning dropped, sorted
        let (mut unknown, dups): (Vec<Found>, Vec<Found>) =
            found.into_iter().partition(|f| f.unknown);
        unknown.sort_by(|a, b| a.path.cmp(&b.path));
        found = dups.into_iter().chain(unknown).collect();
    }
    found
        .into_iter()
        .map(|f| {
            let what = if f.unknown { "unknown" } else { "duplicate" };
            format!("{what} field \"{}\"", f.path)
        })
        .collect()
}

struct Found {
    unknown: bool,
    path: String,
}

/// Walks one JSON value in document order against `schema` (`None`: anything goes).
struct Scan<'s, 'f> {
    schema: Option<&'s Value>,
    root: bool,
    path: String,
    found: &'f mut Vec<Found>,
}

impl<'de> DeserializeSeed<'de> for Scan<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scan<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let items = self.schema.and_then(items_of);
        let mut i = 0usize;
        loop {
            let seed = Scan {
                schema: items,
                root: false,
                path: format!("{}[{i}]", self.path),
                found: &mut *self.found,
            };
            if seq.next_element_seed(seed)?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let keys = match self.schema {
            Some(s) => keys_of(s, self.root),
            None => Keys::Any,
        };
        let mut seen = std::collections::HashSet::new();
        while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let path = join(&self.path, &k);
            if !seen.insert(k.to_string()) {
                self.found.push(Found {
                    unknown: false,
                    path: path.clone(),
                });
            }
            match child(&keys, &k) {
                None => {
                    self.found.push(Found {
                        unknown: true,
                        path,
                    });
                    map.next_value::<IgnoredAny>()?;
                }
                Some(schema) => map.next_value_seed(Scan {
                    schema,
                    root: false,
                    path,
                    found: &mut *self.found,
                })?,
            }
        }
        Ok(())
    }
}

/// Drops the fields a built-in kind's schema does not declare, as Go's typed decoding does
/// (a custom resource's pruning is its schema's, [`crate::crd::apply_schema`]; its `metadata`
/// is pruned here too). Returns the paths dropped (`spec.x`, `items[0].y`).
pub(crate) fn drop_unknown(res: &ResourceInfo, obj: &mut Map<String, Value>) -> Vec<String> {
    let mut dropped = Vec::new();
    let Some(schema) = kind_schema(res) else {
        return dropped;
    };
    if res.schema.is_some() {
        if let (Some(Value::Object(meta)), Some(def)) =
            (obj.get_mut("metadata"), schemas::definition(OBJECT_META))
        {
            prune_map(def, meta, false, 0, "metadata", &mut dropped);
        }
    } else {
        prune_map(schema, obj, true, 0, "", &mut dropped);
    }
    dropped
}

/// Prunes a custom resource object by the structural schema of one of its CRD's versions (its
/// `metadata` by ObjectMeta's), as kube-apiserver prunes what a conversion to that version made.
pub(crate) fn prune_to_schema(schema: &Value, obj: &mut Map<String, Value>) {
    prune_map(schema, obj, true, 0, "", &mut Vec::new());
}

/// The paths of the fields in `obj` its kind does not declare, sorted (`obj` untouched).
fn undeclared(res: &ResourceInfo, obj: &Map<String, Value>) -> Vec<String> {
    let mut unknown = Vec::new();
    if let Some(schema) = kind_schema(res) {
        prune_map(schema, &mut obj.clone(), true, 0, "", &mut unknown);
        unknown.sort();
    }
    unknown
}

/// An applied configuration with a field its kind does not declare: kube-apiserver's field
/// manager cannot type it, a 500 naming the first such field (sorted), whatever
/// `fieldValidation` says.
pub(crate) fn check_applied(
    res: &ResourceInfo,
    config: &Map<String, Value>,
) -> Result<(), ApiError> {
    let Some(first) = undeclared(res, config).into_iter().next() else {
        return Ok(());
    };
    let gvk = format!("{}/{}, Kind={}", res.group, res.version, res.kind);
    let error = format!(".{first}: field not declared in schema");
    Err(super::apply::validate::typed_patch_error(
        config,
        &gvk,
        vec![error],
    ))
}

/// What a patched object carries that its kind does not declare, as kube-apiserver's strict
/// decoding of the patch result lists it (sorted); under `Strict` the 422 kube answers, whose
/// value is the patched object (merge and JSON patches) or the patch (strategic merge, in Go's
/// `map[...]` form).
pub(crate) fn check_patched(
    res: &ResourceInfo,
    fields: FieldValidation,
    patched: &Value,
    strategic_patch: Option<&[u8]>,
) -> Result<Vec<String>, ApiError> {
    let (Value::Object(obj), false) = (patched, fields == FieldValidation::Ignore) else {
        return Ok(Vec::new());
    };
    let problems: Vec<String> = undeclared(res, obj)
        .into_iter()
        .map(|p| format!("unknown field \"{p}\""))
        .collect();
    if fields == FieldValidation::Warn || problems.is_empty() {
        return Ok(problems);
    }
    let shown = match strategic_patch {
        Some(patch) => serde_json::from_slice(patch)
            .map(|p| crate::go_text::go_map_text(&p))
            .unwrap_or_default(),
        None => patched.to_string(),
    };
    let mut e = ApiError::invalid(
        "",
        "",
        "",
        &[(
            "patch".into(),
            "FieldValueInvalid".into(),
            format!(
                "Invalid value: {shown:?}: strict decoding error: {}",
                problems.join(", ")
            ),
        )],
    );
    // kube's Status has no kind here (empty, left out)
    if let Some(Value::Object(d)) = &mut e.details {
        d.remove("kind");
    }
    Err(e)
}

/// How deep pruning follows an object (bodies are bounded in size; this bounds the stack).
const MAX_DEPTH: usize = 100;

fn prune_map(
    schema: &Value,
    obj: &mut Map<String, Value>,
    root: bool,
    depth: usize,
    path: &str,
    dropped: &mut Vec<String>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let keys = keys_of(schema, root);
    obj.retain(|k, _| {
        let known = child(&keys, k).is_some();
        if !known {
            dropped.push(join(path, k));
        }
        known
    });
    for (k, v) in obj.iter_mut() {
        if let Some(Some(s)) = child(&keys, k) {
            prune_value(s, v, depth + 1, &join(path, k), dropped);
        }
    }
}

fn prune_value(schema: &Value, v: &mut Value, depth: usize, path: &str, dropped: &mut Vec<String>) {
    match v {
        Value::Object(m) => prune_map(schema, m, false, depth, path, dropped),
        Value::Array(items) => {
            if let Some(s) = items_of(schema) {
                for (i, x) in items.iter_mut().enumerate() {
                    prune_value(s, x, depth + 1, &format!("{path}[{i}]"), dropped);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::test_util::{body, res};
    use serde_json::json;

    /// Each expectation copied from kube-apiserver v1.36.3's answer to the same body (the
    /// differential check's `field-validation` scenario compares them over HTTP).
    #[test]
    fn problems_in_kube_apiservers_order_and_words() {
        let cm = res("configmaps");
        let got = problems(
            &cm,
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","name":"d","labelz":{}},"zz":1,"data":{"a":"1","a":"2"},"aa":2}"#,
        );
        assert_eq!(
            got,
            [
                "duplicate field \"metadata.name\"",
                "unknown field \"metadata.labelz\"",
                "unknown field \"zz\"",
                "duplicate field \"data.a\"",
                "unknown field \"aa\"",
            ]
        );
        let pod = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x","foo":1,"ports":[{"containerPort":80,"bar":2}],"resources":{"limits":{"cpu":"1","zz":"2"}},"env":[{"name":"e","valueFrom":{"fieldRef":{"fieldPath":"x","q":1}}}]}],"overhead":{"x":"1"},"baz":3},"status":{"foo":1}}"#;
        assert_eq!(
            problems(&res("pods"), pod),
            [
                "unknown field \"spec.containers[0].foo\"",
                "unknown field \"spec.containers[0].ports[0].bar\"",
                "unknown field \"spec.containers[0].env[0].valueFrom.fieldRef.q\"",
                "unknown field \"spec.baz\"",
                "unknown field \"status.foo\"",
            ],
            "maps (limits, overhead) take any key"
        );
        assert!(problems(&cm, br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ok","managedFields":[{"fieldsV1":{"f:data":{}}}]},"data":{"a":"1"}}"#).is_empty());
        assert!(
            problems(&cm, b"not json").is_empty(),
            "decoding reports that"
        );
    }

    #[test]
    fn a_custom_resource_lists_duplicates_then_pruned_fields_sorted() {
        let mut gizmo = res("configmaps");
        gizmo.kind = "Gizmo".into();
        gizmo.schema = Some(std::sync::Arc::new(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }}}
        })));
        let got = problems(
            &gizmo,
            br#"{"apiVersion":"x/v1","kind":"Gizmo","metadata":{"name":"w","labelz":1},"spec":{"zz":1,"replicas":3,"replicas":4,"aa":2,"labels":{"q":"1","q":"2"}},"top":1}"#,
        );
        assert_eq!(
            got,
            [
                "duplicate field \"spec.replicas\"",
                "duplicate field \"spec.labels.q\"",
                "unknown field \"metadata.labelz\"",
                "unknown field \"spec.aa\"",
                "unknown field \"spec.zz\"",
                "unknown field \"top\"",
            ]
        );
        let mut obj = body(json!({"metadata": {"name": "w", "labelz": 1}, "spec": {"zz": 1}}));
        assert_eq!(drop_unknown(&gizmo, &mut obj), ["metadata.labelz"]);
        assert_eq!(
            obj["metadata"],
            json!({"name": "w"}),
            "spec is the schema's to prune"
        );
    }

    #[test]
    fn unknown_fields_are_dropped_from_built_in_kinds() {
        let mut obj = body(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labelz": {}},
            "spec": {"containers": [{"name": "a", "foo": 1, "resources": {"limits": {"zz": "1"}}}]},
            "extra": true
        }));
        let dropped = drop_unknown(&res("pods"), &mut obj);
        assert_eq!(
            dropped,
            ["extra", "metadata.labelz", "spec.containers[0].foo"]
        );
        assert_eq!(
            Value::Object(obj),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"containers": [{"name": "a", "resources": {"limits": {"zz": "1"}}}]}})
        );
    }

    #[test]
    fn field_validation_decides_what_the_client_hears() {
        let q = |v: &str| {
            [("fieldValidation".to_string(), v.to_string())]
                .into_iter()
                .collect()
        };
        let cm = res("configmaps");
        let found = || vec!["unknown field \"x\"".to_string()];
        let warn = FieldValidation::from_query(&Default::default(), "CreateOptions").unwrap();
        assert_eq!(
            warn.judge(&cm, found()).unwrap(),
            found(),
            "Warn is the default"
        );
        let strict = FieldValidation::from_query(&q("Strict"), "CreateOptions").unwrap();
        let e = strict.judge(&cm, found()).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"x\""
        );
        assert!(strict.judge(&cm, Vec::new()).unwrap().is_empty());
        let ignore = FieldValidation::from_query(&q("Ignore"), "CreateOptions").unwrap();
        assert!(ignore.judge(&cm, found()).unwrap().is_empty());
        let e = FieldValidation::from_query(&q("Bogus"), "UpdateOptions").unwrap_err();
        assert_eq!(e.code, 422);
        assert!(e.message.starts_with("UpdateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Bogus\""), "{}", e.message);
    }

    #[test]
    fn an_apply_naming_an_undeclared_field_is_a_500() {
        let cm = res("configmaps");
        let config = body(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w", "namespace": "ns"}, "zz": 1, "aa": 2}),
        );
        let e = check_applied(&cm, &config).unwrap_err();
        assert_eq!(e.code, 500);
        assert_eq!(
            e.message,
            "failed to create typed patch object (ns/w; /v1, Kind=ConfigMap): .aa: field not declared in schema"
        );
        let ok = body(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}, "data": {"a": "1"}}),
        );
        assert!(check_applied(&cm, &ok).is_ok());
    }
}
