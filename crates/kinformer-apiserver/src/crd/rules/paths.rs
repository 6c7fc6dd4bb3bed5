//! Where a rule's failure is reported (`fieldPath`), and how the items of a map list are
//! paired with the old list's (by their keys).

use serde_json::{Map, Value};

use super::str_of;

/// A rule's `fieldPath` (`.spec.x`, `.labels['a.b']`) as a field path relative to the value
/// the rule is declared on (`spec.x`, `labels.a.b`), or `None` when it has none.
pub(super) fn normalized_field_path(field_path: &str) -> Option<String> {
    let names = field_path_segments(field_path.trim())?;
    (!names.is_empty()).then(|| names.join("."))
}

/// The names a `fieldPath` steps through (`.spec.x` and `.labels['a.b']` are `spec`, `x`,
/// `labels`, `a.b`), `None` when it is not written so.
pub(in crate::crd) fn field_path_segments(path: &str) -> Option<Vec<&str>> {
    let mut names = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']")?;
            names.push(&r[..end]);
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            names.push(&r[..end]);
            rest = &r[end..];
        } else {
            return None;
        }
    }
    Some(names)
}

/// The key fields of an `x-kubernetes-list-type: map` list (whose items kube-apiserver pairs
/// with the old list's by those keys).
pub(in crate::crd) fn map_keys(sch: &Map<String, Value>) -> Option<Vec<String>> {
    if str_of(sch, "x-kubernetes-list-type") != "map" {
        return None;
    }
    let keys: Vec<String> = sch
        .get("x-kubernetes-list-map-keys")?
        .as_array()?
        .iter()
        .filter_map(|k| k.as_str().map(str::to_string))
        .collect();
    (!keys.is_empty()).then_some(keys)
}

/// Whether two items of a map list have the same keys.
pub(in crate::crd) fn same_keys(keys: &[String], a: &Value, b: &Value) -> bool {
    keys.iter().all(|k| a.get(k) == b.get(k))
}
