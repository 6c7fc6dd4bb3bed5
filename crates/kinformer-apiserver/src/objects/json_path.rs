//! Small helpers for filling in JSON objects (defaults, allocations).

use serde_json::{Map, Value};

/// Sets `field` of `spec` to `v` unless it has a value (a default).
pub(super) fn set(spec: &mut Map<String, Value>, field: &str, v: Value) {
    if spec.get(field).is_none_or(|x| x.is_null()) {
        spec.insert(field.to_string(), v);
    }
}

/// The object at `path` in `m`, if every step is an object.
pub(super) fn object<'a>(
    m: &'a mut Map<String, Value>,
    path: &[&str],
) -> Option<&'a mut Map<String, Value>> {
    let mut cur = m;
    for k in path {
        cur = cur.get_mut(*k)?.as_object_mut()?;
    }
    Some(cur)
}

/// The objects in the list at `field` of `m`.
pub(super) fn each_object<'a>(
    m: &'a mut Map<String, Value>,
    field: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    m.get_mut(field)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}
