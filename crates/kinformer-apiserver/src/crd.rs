//! CustomResourceDefinitions over the API: a CRD written to `apiextensions.k8s.io/v1` is
//! validated, gets its status (names accepted, established), and makes its resource served
//! (see `Api::sync_crd`); its structural schema is applied to the custom objects as
//! kube-apiserver applies it: unknown fields pruned, defaults set, then types, enums and
//! required fields checked (422 with one cause per field).
//!
//! Schemas are untrusted input: recursion is bounded ([`MAX_DEPTH`]) and nothing panics.

use serde_json::{Map, Value, json};

use crate::resource::ResourceInfo;
use crate::status::ApiError;
pub(crate) use coerce::coerce_stored;
pub(crate) use rules::{ExpressionError, cel_context, cel_evaluate, json_to_cel, kubernetes_env};
#[cfg(test)]
pub(crate) use served::resource_info;
pub(crate) use served::resource_infos;

/// Deeper schemas or objects than this are refused (422) rather than walked.
const MAX_DEPTH: usize = 64;

/// Whether `res` is the CustomResourceDefinition resource.
pub(crate) fn is_crd(res: &ResourceInfo) -> bool {
    res.group == "apiextensions.k8s.io" && res.plural == "customresourcedefinitions"
}

fn s<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(|v| v.as_str())
        .unwrap_or("")
}

fn crd_invalid(name: &str, causes: Vec<(String, String, String)>) -> ApiError {
    ApiError::invalid(
        "CustomResourceDefinition",
        "apiextensions.k8s.io",
        name,
        &causes,
    )
}

/// The version objects are stored in: the one marked `storage`, else the first served.
fn storage_version(spec: &Value) -> Option<&Value> {
    let versions = spec.get("versions")?.as_array()?;
    versions
        .iter()
        .find(|v| v.get("storage").and_then(|b| b.as_bool()) == Some(true))
        .or_else(|| {
            versions
                .iter()
                .find(|v| v.get("served").and_then(|b| b.as_bool()) != Some(false))
        })
}

/// Validates a CRD body (the essentials the real server checks) and fills its status: names
/// accepted, established, stored versions. Deterministic for an unchanged spec, so a no-op
/// apply stays a no-op.
/// What kube-apiserver finds wrong with a version's `deprecationWarning`, in its words: set on a
/// version that is not deprecated, longer than 256 bytes, empty, or holding a character that
/// is not printable (the first one's byte index).
fn deprecation_warning_errors(deprecated: bool, w: &str) -> Vec<String> {
    if !deprecated {
        return vec!["can only be set for deprecated versions".into()];
    }
    let mut errors = Vec::new();
    if w.len() > 256 {
        errors.push("must be <= 256 characters long".into());
    }
    if w.is_empty() {
        errors.push("must not be an empty string".into());
    }
    if let Some((i, _)) = w
        .char_indices()
        .find(|(_, c)| c.is_control() || (c.is_whitespace() && *c != ' '))
    {
        errors.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {i}"
        ));
    }
    errors
}

pub(crate) fn prepare(obj: &mut Map<String, Value>) -> Result<(), ApiError> {
    let v = Value::Object(obj.clone());
    let name = s(&v, &["metadata", "name"]).to_string();
    let spec = v.get("spec").cloned().unwrap_or(Value::Null);
    let group = s(&spec, &["group"]);
    let plural = s(&spec, &["names", "plural"]);
    let kind = s(&spec, &["names", "kind"]);
    let mut causes = Vec::new();
    let required = |f: &str| {
        (
            f.to_string(),
            "FieldValueRequired".to_string(),
            "Required value".to_string(),
        )
    };
    if group.is_empty() {
        causes.push(required("spec.group"));
    } else if !group.contains('.') {
        causes.push((
            "spec.group".into(),
            "FieldValueInvalid".into(),
            format!("Invalid value: \"{group}\": should be a domain with at least one dot"),
        ));
    } else if (group.ends_with(".k8s.io") || group.ends_with(".kubernetes.io"))
        && v.pointer("/metadata/annotations/api-approved.kubernetes.io")
            .is_none()
    {
        causes.push((
            "metadata.annotations[api-approved.kubernetes.io]".into(),
            "FieldValueRequired".into(),
            "Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111".to_string(),
        ));
    }
    if plural.is_empty() {
        causes.push(required("spec.names.plural"));
    }
    if kind.is_empty() {
        causes.push(required("spec.names.kind"));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        causes.push((
            "metadata.name".into(),
            "FieldValueInvalid".into(),
            format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    match s(&spec, &["scope"]) {
        "Namespaced" | "Cluster" => {}
        other => causes.push((
            "spec.scope".into(),
            "FieldValueNotSupported".into(),
            format!(
                "Unsupported value: \"{other}\": supported values: \"Cluster\", \"Namespaced\""
            ),
        )),
    }
    let versions = spec.get("versions").and_then(|v| v.as_array());
    let storage_count = versions.map_or(0, |vs| {
        vs.iter()
            .filter(|v| v.get("storage").and_then(|b| b.as_bool()) == Some(true))
            .count()
    });
    if versions.is_none_or(|v| v.is_empty()) {
        causes.push(required("spec.versions"));
    } else if storage_count != 1 {
        causes.push((
            "spec.versions".into(),
            "FieldValueInvalid".into(),
            "Invalid value: must have exactly one version marked as storage version".to_string(),
        ));
    }
    // kube-apiserver validates one schema when every version has the same (the conversion
    // to its internal form moves it to `spec.validation`), else each version's.
    let all = versions.map(Vec::as_slice).unwrap_or_default();
    let shared = all.len() > 1
        && all
            .windows(2)
            .all(|w| w[0].get("schema") == w[1].get("schema"));
    for (i, ver) in all.iter().enumerate() {
        let deprecated = ver.get("deprecated").and_then(Value::as_bool) == Some(true);
        if let Some(w) = ver.get("deprecationWarning").and_then(Value::as_str) {
            for why in deprecation_warning_errors(deprecated, w) {
                causes.push((
                    format!("spec.versions[{i}].deprecationWarning"),
                    "FieldValueInvalid".into(),
                    format!("Invalid value: {w:?}: {why}"),
                ));
            }
        }
        let Some(schema) = ver.pointer("/schema/openAPIV3Schema") else {
            continue;
        };
        let at = if shared || all.len() == 1 {
            "spec.validation.openAPIV3Schema".to_string()
        } else {
            format!("spec.versions[{i}].schema.openAPIV3Schema")
        };
        match check_schema(schema, 0) {
            Err(why) => causes.push((
                format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "FieldValueInvalid".into(),
                format!("Invalid value: {why}"),
            )),
            Ok(()) if !shared || i == 0 => causes.extend(rule_checks::check(schema, &at)),
            Ok(()) => {}
        }
    }
    if !causes.is_empty() {
        return Err(crd_invalid(&name, causes));
    }
    let storage = storage_version(&spec)
        .map(|v| s(v, &["name"]).to_string())
        .unwrap_or_default();
    let old_status = obj.get("status").cloned().unwrap_or(json!({}));
    let mut stored: Vec<Value> = old_status
        .get("storedVersions")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    if !stored.iter().any(|v| v.as_str() == Some(&storage)) {
        stored.push(Value::String(storage));
    }
    let established = old_status
        .get("conditions")
        .and_then(|c| c.as_array())
        .is_some_and(|c| {
            c.iter()
                .any(|x| x["type"] == "Established" && x["status"] == "True")
        });
    let conditions = if established {
        old_status["conditions"].clone()
    } else {
        let now = jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        json!([
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now,
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ])
    };
    let mut accepted = spec.get("names").cloned().unwrap_or(json!({}));
    if let Value::Object(m) = &mut accepted {
        m.entry("singular")
            .or_insert_with(|| Value::String(kind.to_lowercase()));
        m.entry("listKind")
            .or_insert_with(|| Value::String(format!("{kind}List")));
    }
    obj.insert(
        "status".into(),
        json!({"conditions": conditions, "acceptedNames": accepted, "storedVersions": stored}),
    );
    Ok(())
}

/// Refuses schemas nested deeper than [`MAX_DEPTH`] (they would be walked for every object),
/// and `x-kubernetes-validations` that is not a list of objects.
fn check_schema(schema: &Value, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("schema nested deeper than {MAX_DEPTH} levels"));
    }
    let Value::Object(m) = schema else {
        return Err("a schema must be an object".into());
    };
    rules::check_shape(m)?;
    for key in ["properties", "patternProperties"] {
        if let Some(Value::Object(props)) = m.get(key) {
            for p in props.values() {
                check_schema(p, depth + 1)?;
            }
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub @ Value::Object(_)) = m.get(key) {
            check_schema(sub, depth + 1)?;
        }
    }
    Ok(())
}

/// The schema as applied to an object's root: an object whatever its type says, whose
/// `apiVersion`, `kind` and `metadata` are the server's (not required by the schema).
fn root_schema(schema: &Value) -> Value {
    let mut root = schema.clone();
    if let Value::Object(m) = &mut root {
        m.insert("type".into(), Value::String("object".into()));
        if let Some(Value::Array(req)) = m.get_mut("required") {
            req.retain(|r| !matches!(r.as_str(), Some("apiVersion" | "kind" | "metadata")));
        }
    }
    root
}

/// A field error: (path, reason, message).
type Cause = (String, String, String);

fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{s}\""),
        Value::Number(n) => values::go_number(n),
        other => other.to_string(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_ok(want: &str, v: &Value) -> bool {
    match (want, v) {
        ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("string", Value::String(_))
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        ("", _) => true,
        _ => false,
    }
}

/// Applies `schema` to `v` at `path`: prunes unknown fields, sets defaults, checks types,
/// enums and required fields (collecting causes).
fn apply(schema: &Value, v: &mut Value, path: &str, depth: usize, causes: &mut Vec<Cause>) {
    walk(schema, v, None, path, depth, causes, true);
}

/// [`apply`], or with `prune` false only the validation (for the branches of `allOf` and the
/// like). With `old` (an update: the value `v` replaces), the causes found under a field or
/// map-list item that equals its old value are dropped, as kube-apiserver's validation
/// ratcheting drops them (an object stored before its schema grew stricter stays writable).
fn walk(
    schema: &Value,
    v: &mut Value,
    old: Option<&Value>,
    path: &str,
    depth: usize,
    causes: &mut Vec<Cause>,
    prune: bool,
) {
    if depth > MAX_DEPTH {
        causes.push((
            path.to_string(),
            "FieldValueInvalid".into(),
            format!("Invalid value: nested deeper than {MAX_DEPTH} levels"),
        ));
        return;
    }
    let Value::Object(sch) = schema else { return };
    let flag = |k: &str| sch.get(k).and_then(|b| b.as_bool()) == Some(true);
    let ty = sch.get("type").and_then(|t| t.as_str()).unwrap_or("");
    if v.is_null() && flag("nullable") {
        return;
    }
    let format = sch.get("format").and_then(|f| f.as_str()).unwrap_or("");
    if flag("x-kubernetes-int-or-string") {
        match &*v {
            Value::String(s) => values::check_string(sch, s, path, causes),
            Value::Number(n) if type_ok("integer", v) => {
                values::check_number(sch, n, "", "", path, causes)
            }
            _ => causes.push((
                path.to_string(),
                "FieldValueTypeInvalid".into(),
                format!(
                    "Invalid value: {}: {path} in body must be of type int-or-string: \"{}\"",
                    go_value(v),
                    type_name(v)
                ),
            )),
        }
        return;
    }
    if !type_ok(ty, v) {
        causes.push((
            path.to_string(),
            "FieldValueTypeInvalid".into(),
            format!(
                "Invalid value: \"{}\": {path} in body must be of type {ty}: \"{}\"",
                type_name(v),
                type_name(v)
            ),
        ));
        // the number checks apply to any number (a fraction for an integer is out of range)
        if let Value::Number(n) = v {
            values::check_number(sch, n, ty, format, path, causes);
        }
        return;
    }
    // go-openapi's order: allOf and the like, strings, numbers, an array's items and size, the
    // enum, an object's size and fields; the combinators are checked last (their causes put
    // first), on the value pruned and defaulted below, as kube-apiserver decodes (prunes,
    // defaults) a whole object before validating it
    let combinators_at = causes.len();
    match v {
        Value::String(s) => {
            values::check_string(sch, s, path, causes);
            formats::check_format(format, s, path, causes);
        }
        Value::Number(n) => values::check_number(sch, n, ty, format, path, causes),
        Value::Array(items) => {
            if let Some(item_schema) = sch.get("items") {
                let keys = rules::map_keys(sch);
                let old_items = old.and_then(Value::as_array);
                for (i, x) in items.iter_mut().enumerate() {
                    let old_x = keys.as_ref().zip(old_items).and_then(|(keys, olds)| {
                        olds.iter().find(|o| rules::same_keys(keys, o, x))
                    });
                    let at = causes.len();
                    let item_path = format!("{path}[{i}]");
                    walk(item_schema, x, old_x, &item_path, depth + 1, causes, prune);
                    ratchet(old_x, x, at, causes);
                }
            }
            values::check_items(sch, items.len(), path, causes);
        }
        _ => {}
    }
    if let Some(Value::Array(allowed)) = sch.get("enum")
        && !allowed.contains(v)
    {
        let list: Vec<String> = allowed.iter().map(go_value).collect();
        causes.push((
            path.to_string(),
            "FieldValueNotSupported".into(),
            format!(
                "Unsupported value: {}: supported values: {}",
                go_value(v),
                list.join(", ")
            ),
        ));
    }
    let child = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    if let Value::Object(obj) = v {
        let size_causes_at = causes.len();
        let props = sch.get("properties").and_then(|p| p.as_object());
        let additional = sch.get("additionalProperties");
        let preserve = flag("x-kubernetes-preserve-unknown-fields");
        let embedded = flag("x-kubernetes-embedded-resource");
        // Non-nullable nulls are dropped before defaulting, as the real server does.
        obj.retain(|k, x| {
            !(prune
                && x.is_null()
                && props
                    .and_then(|p| p.get(k))
                    .is_some_and(|s| s.get("nullable").and_then(|b| b.as_bool()) != Some(true)))
        });
        let keys: Vec<String> = obj.keys().cloned().collect();
        for k in keys {
            let meta_field = embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata");
            let old_x = old.and_then(|o| o.get(&k));
            let at = causes.len();
            if let Some(ps) = props.and_then(|p| p.get(&k)) {
                if let Some(x) = obj.get_mut(&k) {
                    walk(ps, x, old_x, &child(&k), depth + 1, causes, prune);
                    ratchet(old_x, x, at, causes);
                }
            } else if let Some(ap @ Value::Object(_)) = additional {
                if let Some(x) = obj.get_mut(&k) {
                    walk(ap, x, old_x, &child(&k), depth + 1, causes, prune);
                    ratchet(old_x, x, at, causes);
                }
            } else if prune && !(preserve || meta_field || additional == Some(&Value::Bool(true))) {
                obj.remove(&k);
            }
        }
        if let Some(props) = props.filter(|_| prune) {
            for (k, ps) in props {
                if !obj.contains_key(k)
                    && let Some(d) = ps.get("default")
                {
                    let mut d = d.clone();
                    apply(ps, &mut d, &child(k), depth + 1, causes);
                    obj.insert(k.clone(), d);
                }
            }
        }
        if let Some(Value::Array(req)) = sch.get("required") {
            for r in req.iter().filter_map(|r| r.as_str()) {
                if !obj.contains_key(r) {
                    causes.push((
                        child(r),
                        "FieldValueRequired".into(),
                        "Required value".into(),
                    ));
                }
            }
        }
        // counted once pruned and defaulted, reported before the fields' causes
        let mut size_causes = Vec::new();
        values::check_properties(sch, obj.len(), path, &mut size_causes);
        causes.splice(size_causes_at..size_causes_at, size_causes);
    }
    let mut combined = Vec::new();
    combinators::check(sch, v, path, depth, &mut combined);
    causes.splice(combinators_at..combinators_at, combined);
}

/// Drops the causes found from `at` on when `v` equals its `old` value (validation ratcheting).
fn ratchet(old: Option<&Value>, v: &Value, at: usize, causes: &mut Vec<Cause>) {
    if old.is_some_and(|o| o == v) {
        causes.truncate(at);
    }
}

/// Applies a custom resource's structural schema (as [`resource_info`] keeps it) to an object
/// (create, update, patch): `apiVersion`, `kind` and `metadata` at the root are kept as they are.
///
/// With `old` (an update: the object it replaces), `x-kubernetes-validations` transition rules
/// are evaluated too, and unchanged values' failures ratchet ([`rules`]).
pub(crate) fn apply_schema(
    res: &ResourceInfo,
    schema: &Value,
    obj: &mut Map<String, Value>,
    old: Option<&Map<String, Value>>,
) -> Result<(), ApiError> {
    let keep: Vec<(String, Value)> = ["apiVersion", "kind", "metadata"]
        .iter()
        .filter_map(|k| obj.remove(*k).map(|v| (k.to_string(), v)))
        .collect();
    let mut rest = Value::Object(std::mem::take(obj));
    let old_rest = old.map(|o| {
        let mut o = o.clone();
        o.retain(|k, _| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata"));
        Value::Object(o)
    });
    let mut causes = Vec::new();
    combinators::reset_budget();
    walk(
        schema,
        &mut rest,
        old_rest.as_ref(),
        "",
        0,
        &mut causes,
        true,
    );
    // list uniqueness ratchets as a whole: not checked when the old object broke it already
    let old_list_causes = old_rest.as_ref().map(|o| {
        let mut found = Vec::new();
        values::list_duplicates(schema, o, "", 0, &mut found);
        found.len()
    });
    if old_list_causes.unwrap_or(0) == 0 {
        values::list_duplicates(schema, &rest, "", 0, &mut causes);
    }
    if let Value::Object(m) = rest {
        *obj = m;
    }
    for (k, v) in keep {
        obj.insert(k, v);
    }
    // the root's own causes ratchet only when nothing at all changed
    if old == Some(&*obj) {
        causes.clear();
    }
    if rules::has_rules(schema) {
        match rules::blocked(&causes) {
            Some(cause) => causes.push(cause),
            None => rules::validate(schema, obj, old, &mut causes),
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    let name = obj
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(|n| n.as_str())
        .unwrap_or("");
    Err(ApiError::invalid(&res.kind, &res.group, name, &causes))
}

mod coerce;
mod combinators;
mod cost;
mod formats;
mod rule_checks;
mod rules;
mod served;
mod values;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
