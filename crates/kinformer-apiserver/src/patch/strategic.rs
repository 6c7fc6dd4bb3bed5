//! Strategic merge patch, approximated without per-type schemas.
//!
//! The real server knows each list's merge key from the Go types (containers by `name`,
//! volumeMounts by `mountPath`, ports by `containerPort`, ...). Without schemas we infer it: a
//! list of objects is merged by the first of [`MERGE_KEYS`] that every patch element carries
//! (and the existing elements too); otherwise the list is replaced. Directives are honoured:
//! `$patch: replace` / `$patch: delete`, `$setElementOrder/<field>`,
//! `$deleteFromPrimitiveList/<field>` and `$retainKeys`; any other `$` key is dropped. This is
//! what `kubectl apply` and `kubectl patch` send, so both work as against a real server for the
//! built-in types.

use serde_json::{Map, Value};

/// Candidate merge keys, in the order they are tried.
pub(crate) const MERGE_KEYS: &[&str] = &[
    "name",
    "mountPath",
    "containerPort",
    "devicePath",
    "type",
    "uid",
    "ip",
    "topologyKey",
];

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

fn merge_key(doc: &[Value], patch: &[Value]) -> Option<&'static str> {
    if patch.is_empty() || !patch.iter().all(|p| p.is_object()) {
        return None;
    }
    MERGE_KEYS.iter().copied().find(|k| {
        patch.iter().all(|p| p.get(*k).is_some()) && doc.iter().all(|d| d.get(*k).is_some())
    })
}

fn merge_list(doc: &mut Value, patch: &[Value]) {
    let existing = doc.as_array().cloned().unwrap_or_default();
    let Some(key) = merge_key(&existing, patch) else {
        *doc = Value::Array(patch.iter().map(strip_directives).collect());
        return;
    };
    let mut out = existing;
    for p in patch {
        let id = &p[key];
        let pos = out.iter().position(|d| &d[key] == id);
        let directive = p.get("$patch").and_then(|d| d.as_str());
        match (directive, pos) {
            (Some("delete"), Some(i)) => {
                out.remove(i);
            }
            (Some("delete"), None) => {}
            (Some("replace"), Some(i)) => out[i] = strip_directives(p),
            (_, Some(i)) => merge(&mut out[i], p),
            (_, None) => out.push(strip_directives(p)),
        }
    }
    *doc = Value::Array(out);
}

fn reorder(list: &mut Value, order: &[Value]) {
    let Some(items) = list.as_array() else { return };
    let key = match order.first() {
        Some(Value::Object(m)) => m.keys().next().cloned(),
        _ => None,
    };
    let id = |v: &Value| -> Value {
        match &key {
            Some(k) => v.get(k).cloned().unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    let wanted: Vec<Value> = order.iter().map(&id).collect();
    let mut sorted: Vec<Value> = Vec::with_capacity(items.len());
    for w in &wanted {
        if let Some(item) = items.iter().find(|i| id(i) == *w) {
            sorted.push(item.clone());
        }
    }
    for item in items {
        if !wanted.contains(&id(item)) {
            sorted.push(item.clone());
        }
    }
    *list = Value::Array(sorted);
}

/// Applies a strategic merge patch to `doc`.
pub(crate) fn merge(doc: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *doc = patch.clone();
        return;
    };
    if p.get("$patch").and_then(|d| d.as_str()) == Some("replace") {
        *doc = strip_directives(patch);
        return;
    }
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    let mut orders = Vec::new();
    let mut retain: Option<Vec<String>> = None;
    if let Value::Object(d) = doc {
        for (k, v) in p {
            if let Some(field) = k.strip_prefix("$setElementOrder/") {
                if let Value::Array(order) = v {
                    orders.push((field.to_string(), order.clone()));
                }
                continue;
            }
            if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
                if let (Some(Value::Array(cur)), Value::Array(del)) = (d.get_mut(field), v) {
                    cur.retain(|x| !del.contains(x));
                }
                continue;
            }
            if k == "$retainKeys" {
                retain = v.as_array().map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(String::from))
                        .collect()
                });
                continue;
            }
            if k.starts_with('$') {
                continue;
            }
            match v {
                Value::Null => {
                    d.remove(k);
                }
                Value::Object(_) => merge(d.entry(k.clone()).or_insert(Value::Null), v),
                Value::Array(items) => merge_list(d.entry(k.clone()).or_insert(Value::Null), items),
                other => {
                    d.insert(k.clone(), other.clone());
                }
            }
        }
        for (field, order) in orders {
            if let Some(list) = d.get_mut(&field) {
                reorder(list, &order);
            }
        }
        if let Some(keep) = retain {
            d.retain(|k, _| keep.contains(k));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_merge_by_key_and_directives_are_honoured() {
        let mut doc = json!({"spec": {"containers": [
            {"name": "a", "image": "x:1", "env": [{"name": "E", "value": "1"}]},
            {"name": "b", "image": "y:1"}
        ], "finalizers": ["f1", "f2"]}});
        let patch = json!({"spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "a", "image": "x:2"}, {"name": "c", "image": "z", "$patch": "delete"}],
            "$deleteFromPrimitiveList/finalizers": ["f1"]
        }});
        merge(&mut doc, &patch);
        assert_eq!(
            doc,
            json!({"spec": {"containers": [
            {"name": "b", "image": "y:1"},
            {"name": "a", "image": "x:2", "env": [{"name": "E", "value": "1"}]}
        ], "finalizers": ["f2"]}})
        );
        merge(
            &mut doc,
            &json!({"spec": {"containers": [{"name": "b", "$patch": "delete"}]}}),
        );
        assert_eq!(doc["spec"]["containers"].as_array().unwrap().len(), 1);
        // Lists without a merge key are replaced; $patch: replace replaces maps.
        merge(
            &mut doc,
            &json!({"spec": {"finalizers": ["g"], "x": {"$patch": "replace", "only": 1}}}),
        );
        assert_eq!(doc["spec"]["finalizers"], json!(["g"]));
        assert_eq!(doc["spec"]["x"], json!({"only": 1}));
        merge(
            &mut doc,
            &json!({"spec": {"$retainKeys": ["containers"], "finalizers": null}}),
        );
        assert_eq!(
            doc["spec"].as_object().unwrap().keys().collect::<Vec<_>>(),
            ["containers"]
        );
    }
}
