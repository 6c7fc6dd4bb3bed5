//! Object validation with kube-apiserver's rules and wording: `ValidateObjectMeta` for every
//! kind (name, generateName, labels, annotations, finalizers) and the data keys of config maps
//! and secrets (`IsConfigMapKey`).
//!
//! Every violated rule is reported, in kube-apiserver's order, as one 422 Invalid whose causes
//! are `(field, reason, message)` and whose message is apimachinery's aggregate (`[a, b]` when
//! more than one). Where Go iterates a map (labels, annotations, data), the order is random in
//! kube-apiserver; here it is the keys' sorted order (serde_json's map order).

use serde_json::{Map, Value};

use crate::resource::ResourceInfo;
use crate::status::ApiError;

/// One field error: `(field, reason, message)`.
pub(crate) type Cause = (String, String, String);

mod webhooks;

pub(crate) use crate::names::{
    config_map_key_errors, dns1035_label_errors, dns1123_label_errors, dns1123_subdomain_errors,
    label_value_errors, qualified_name_errors,
};

/// `field.Invalid(path, value, detail)` for a string value: `Invalid value: "v": detail`.
fn invalid_value(field: &str, value: &str, detail: &str) -> Cause {
    (
        field.to_string(),
        "FieldValueInvalid".to_string(),
        format!("Invalid value: {value:?}: {detail}"),
    )
}

/// The name rule of a resource (`ValidateNameFunc`): namespaces are DNS-1123 labels, services
/// DNS-1035 labels, RBAC's roles and bindings path segments (`system:aggregate-to-edit`),
/// everything else DNS-1123 subdomains.
fn name_errors(res: &ResourceInfo, name: &str) -> Vec<String> {
    match (res.group.as_str(), res.plural.as_str()) {
        ("", "namespaces") => dns1123_label_errors(name),
        ("", "services") => dns1035_label_errors(name),
        ("rbac.authorization.k8s.io", _) => path_segment_errors(name),
        _ => dns1123_subdomain_errors(name),
    }
}

/// apimachinery's `IsValidPathSegmentName`.
fn path_segment_errors(name: &str) -> Vec<String> {
    if let Some(bad) = [".", ".."].into_iter().find(|b| *b == name) {
        return vec![format!("may not be '{bad}'")];
    }
    ["/", "%"]
        .into_iter()
        .filter(|c| name.contains(c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// The entries of a metadata string map, in the map's (key) order, without copying.
fn string_entries<'a>(
    meta: &'a Map<String, Value>,
    field: &str,
) -> impl Iterator<Item = (&'a str, &'a str)> {
    meta.get(field)
        .and_then(|m| m.as_object())
        .into_iter()
        .flat_map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
        })
}

/// kube-apiserver's total annotation size limit (keys plus values), 256 KiB.
const TOTAL_ANNOTATION_SIZE: usize = 256 * 1024;

/// `ValidateLabels` of `meta`'s labels: each key a qualified name, each value a label value.
pub(crate) fn label_causes(meta: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (k, v) in string_entries(meta, "labels") {
        for m in qualified_name_errors(k) {
            causes.push(invalid_value("metadata.labels", k, &m));
        }
        for m in label_value_errors(v) {
            causes.push(invalid_value("metadata.labels", v, &m));
        }
    }
    causes
}

/// `ValidateAnnotations` of `meta`'s annotations, reported at `field`: each key a qualified
/// name (in lower case), all of them at most 256 KiB.
pub(crate) fn annotation_causes(meta: &Map<String, Value>, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut size = 0;
    for (k, v) in string_entries(meta, "annotations") {
        // Annotation keys are qualified names in any case.
        let errs = if k.bytes().any(|b| b.is_ascii_uppercase()) {
            qualified_name_errors(&k.to_lowercase())
        } else {
            qualified_name_errors(k)
        };
        for m in errs {
            causes.push(invalid_value(field, k, &m));
        }
        size += k.len() + v.len();
    }
    if size > TOTAL_ANNOTATION_SIZE {
        causes.push((
            field.into(),
            "FieldValueTooLong".into(),
            format!("Too long: may not be more than {TOTAL_ANNOTATION_SIZE} bytes"),
        ));
    }
    causes
}

/// `ValidateObjectMeta`: every violated metadata rule of `meta` (whose name is already resolved
/// from `generateName` when one was asked for).
pub(crate) fn object_meta_causes(res: &ResourceInfo, meta: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let s = |f: &str| meta.get(f).and_then(|v| v.as_str()).unwrap_or("");
    let generate = s("generateName");
    if !generate.is_empty() {
        // A prefix may end with '-' (maskTrailingDash).
        let b = generate.as_bytes();
        let masked = if b.len() > 1 && b.ends_with(b"-") {
            let mut m = b[..b.len() - 2].to_vec();
            m.push(b'a');
            String::from_utf8_lossy(&m).into_owned()
        } else {
            generate.to_string()
        };
        for m in name_errors(res, &masked) {
            causes.push(invalid_value("metadata.generateName", generate, &m));
        }
    }
    let name = s("name");
    if name.is_empty() {
        causes.push((
            "metadata.name".into(),
            "FieldValueRequired".into(),
            "Required value: name or generateName is required".into(),
        ));
    } else {
        for m in name_errors(res, name) {
            causes.push(invalid_value("metadata.name", name, &m));
        }
    }
    if let Some(g) = meta.get("generation").and_then(|g| g.as_i64())
        && g < 0
    {
        causes.push((
            "metadata.generation".into(),
            "FieldValueInvalid".into(),
            format!("Invalid value: {g}: must be greater than or equal to 0"),
        ));
    }
    causes.extend(label_causes(meta));
    causes.extend(annotation_causes(meta, "metadata.annotations"));
    // ValidateOwnerReferences (the garbage collector relies on them). Not checked: the single
    // controller rule and the banned owner kinds.
    if let Some(refs) = meta.get("ownerReferences").and_then(|r| r.as_array()) {
        for r in refs {
            let s = |f: &str| r.get(f).and_then(|v| v.as_str()).unwrap_or("");
            let version = s("apiVersion").rsplit('/').next().unwrap_or("");
            for (field, empty, value, what) in [
                ("apiVersion", version.is_empty(), s("apiVersion"), "version"),
                ("kind", s("kind").is_empty(), s("kind"), "kind"),
                ("name", s("name").is_empty(), s("name"), "name"),
                ("uid", s("uid").is_empty(), s("uid"), "uid"),
            ] {
                if empty {
                    causes.push(invalid_value(
                        &format!("metadata.ownerReferences.{field}"),
                        value,
                        &format!("{what} must not be empty"),
                    ));
                }
            }
        }
    }
    if let Some(finalizers) = meta.get("finalizers").and_then(|f| f.as_array()) {
        for f in finalizers.iter().filter_map(|f| f.as_str()) {
            for m in qualified_name_errors(f) {
                causes.push(invalid_value("metadata.finalizers", f, &m));
            }
        }
    }
    causes
}

/// Kind-specific rules: the data keys of config maps (`data`, `binaryData`) and secrets
/// (`data`; `stringData` is merged into it before validation, see [`super::normalize`]).
pub(crate) fn kind_causes(res: &ResourceInfo, obj: &Map<String, Value>) -> Vec<Cause> {
    match (res.group.as_str(), res.plural.as_str()) {
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => {
            return webhooks::causes(obj, true);
        }
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations") => {
            return webhooks::causes(obj, false);
        }
        _ => {}
    }
    let bags: &[&str] = match (res.group.as_str(), res.plural.as_str()) {
        ("", "configmaps") => &["data", "binaryData"],
        ("", "secrets") => &["data", "stringData"],
        _ => return Vec::new(),
    };
    let mut causes = Vec::new();
    for bag in bags {
        let Some(m) = obj.get(*bag).and_then(|m| m.as_object()) else {
            continue;
        };
        for key in m.keys() {
            for msg in config_map_key_errors(key) {
                causes.push(invalid_value(&format!("{bag}[{key}]"), key, &msg));
            }
        }
    }
    if res.plural == "configmaps" {
        let data = obj.get("data").and_then(|m| m.as_object());
        let binary = obj.get("binaryData").and_then(|m| m.as_object());
        if let (Some(d), Some(b)) = (data, binary) {
            for key in d.keys().filter(|k| b.contains_key(*k)) {
                causes.push(invalid_value(
                    &format!("data[{key}]"),
                    key,
                    "duplicate of key present in binaryData",
                ));
                causes.push(invalid_value(
                    &format!("binaryData[{key}]"),
                    key,
                    "duplicate of key present in data",
                ));
            }
        }
    }
    causes
}

/// Validates an object about to be stored (create or update): 422 Invalid naming every
/// violated rule, metadata first, as kube-apiserver's strategies do.
pub(crate) fn validate_object(
    res: &ResourceInfo,
    obj: &Map<String, Value>,
) -> Result<(), ApiError> {
    let empty = Map::new();
    let meta = obj
        .get("metadata")
        .and_then(|m| m.as_object())
        .unwrap_or(&empty);
    let mut causes = object_meta_causes(res, meta);
    causes.extend(kind_causes(res, obj));
    if causes.is_empty() {
        return Ok(());
    }
    // apimachinery's aggregate drops duplicate messages.
    let mut seen = std::collections::HashSet::new();
    causes.retain(|(f, _, m)| seen.insert(format!("{f}: {m}")));
    let name = meta.get("name").and_then(|n| n.as_str()).unwrap_or("");
    Err(ApiError::invalid(&res.kind, &res.group, name, &causes))
}

#[cfg(test)]
mod tests;
