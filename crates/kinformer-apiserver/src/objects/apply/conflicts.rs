//! The 409 of an apply that changes fields other managers own, worded as kube-apiserver v1.35
//! words it (`NewConflictError`): one cause per field and manager,
//! `{"reason": "FieldManagerConflict", "message": "conflict with \"mgr\" using v1", "field":
//! ".data.k"}`, and the message `Apply failed with 1 conflict: conflict with "mgr" using v1:
//! .data.k`, or for several `Apply failed with N conflicts: conflicts with "mgr" using v1:`
//! followed by one `- <field>` line per field, managers sorted by their identifier.

use serde_json::{Value, json};

use crate::objects::fieldset::FieldSet;
use crate::objects::managed_fields::Entry;
use crate::status::ApiError;

/// structured-merge-diff's `Path.String()` of a field path: `.spec.containers[name="c"].image`,
/// `[=value]` for set items.
pub(crate) fn path_string(path: &[String]) -> String {
    let mut out = String::new();
    for pe in path {
        if let Some(f) = pe.strip_prefix("f:") {
            out.push('.');
            out.push_str(f);
        } else if let Some(k) = pe.strip_prefix("k:") {
            let key: Value = serde_json::from_str(k).unwrap_or(Value::Null);
            let parts: Vec<String> = key
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={}", go_value(v)))
                        .collect()
                })
                .unwrap_or_default();
            out.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(v) = pe.strip_prefix("v:") {
            let v: Value = serde_json::from_str(v).unwrap_or(Value::Null);
            out.push_str(&format!("[={}]", go_value(&v)));
        } else if let Some(i) = pe.strip_prefix("i:") {
            out.push_str(&format!("[{i}]"));
        }
    }
    out
}

/// structured-merge-diff's `value.ToString`: strings quoted, numbers and booleans bare.
fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::String(_) => v.to_string(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_value).collect::<Vec<_>>().join(",")),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", go_value(v)))
            .collect(),
        other => other.to_string(),
    }
}

/// The 409 for `conflicts`: each conflicting manager's entry with the fields it would lose.
pub(crate) fn conflict_error(conflicts: &[(Entry, FieldSet)]) -> ApiError {
    let mut by_manager: Vec<(String, String, Vec<String>)> = conflicts
        .iter()
        .map(|(e, set)| {
            let fields = set
                .iterate_in_go_order()
                .iter()
                .map(|p| path_string(p))
                .collect();
            (e.identifier(), e.describe(), fields)
        })
        .collect();
    by_manager.sort_by(|a, b| a.0.cmp(&b.0));
    let count: usize = by_manager.iter().map(|(_, _, f)| f.len()).sum();
    let message = if count == 1 {
        let (_, who, fields) = &by_manager[0];
        format!(
            "Apply failed with 1 conflict: conflict with {who}: {}",
            fields[0]
        )
    } else {
        let mut lines = Vec::new();
        for (_, who, fields) in &by_manager {
            lines.push(format!("conflicts with {who}:"));
            lines.extend(fields.iter().map(|f| format!("- {f}")));
        }
        format!("Apply failed with {count} conflicts: {}", lines.join("\n"))
    };
    let causes: Vec<Value> = by_manager
        .iter()
        .flat_map(|(_, who, fields)| {
            fields.iter().map(move |f| {
                json!({"reason": "FieldManagerConflict", "message": format!("conflict with {who}"), "field": f})
            })
        })
        .collect();
    let mut e = ApiError::new(409, "Conflict", message);
    e.details = Some(json!({ "causes": causes }));
    e
}
