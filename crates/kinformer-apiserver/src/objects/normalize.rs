//! What kube-apiserver's decoding does to a body before anything else sees it, for the kinds
//! where it shows: a secret's `stringData` is merged into `data` (base64) and never stored;
//! empty or null `data`/`binaryData` maps are dropped (Go's `omitempty`), as are a pod spec's
//! empty fields ([`super::pod_defaults::drop_zero_values`]); a role's absent `rules` is `null`
//! (no `omitempty`).

use base64::Engine;
use serde_json::{Map, Value};

use crate::resource::ResourceInfo;

fn drop_if_empty(obj: &mut Map<String, Value>, field: &str) {
    let empty = match obj.get(field) {
        Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        _ => false,
    };
    if empty {
        obj.remove(field);
    }
}

/// Fields without `omitempty` that Go serializes as `null` when absent: a role's `rules`
/// (an empty list too: stored as protobuf, it reads back as none, e2e/diff "rbac /
/// role-name-with-colon"). Applied to the object as stored, after the field manager (which
/// owns no null; e2e/diff "gc-owners / create-cluster-owner").
pub(crate) fn null_fields(res: &ResourceInfo, obj: &mut Map<String, Value>) {
    if res.group == "rbac.authorization.k8s.io"
        && matches!(res.plural.as_str(), "roles" | "clusterroles")
    {
        let rules = obj.entry("rules").or_insert(Value::Null);
        if rules.as_array().is_some_and(Vec::is_empty) {
            *rules = Value::Null;
        }
    }
}

/// Normalizes a create or update body of `res` in place (see the module docs).
pub(crate) fn normalize_body(res: &ResourceInfo, obj: &mut Map<String, Value>) {
    super::pod_defaults::drop_zero_values(res, obj);
    if !res.group.is_empty() {
        return;
    }
    match res.plural.as_str() {
        "configmaps" => {
            drop_if_empty(obj, "data");
            drop_if_empty(obj, "binaryData");
        }
        "secrets" => {
            if let Some(Value::Object(plain)) = obj.remove("stringData")
                && !plain.is_empty()
            {
                let data = obj
                    .entry("data")
                    .or_insert_with(|| Value::Object(Map::new()));
                if !data.is_object() {
                    *data = Value::Object(Map::new());
                }
                if let Value::Object(data) = data {
                    // stringData wins over data for the same key, as the v1 conversion does.
                    for (k, v) in plain {
                        let text = v.as_str().unwrap_or_default();
                        let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                        data.insert(k, Value::String(encoded));
                    }
                }
            }
            drop_if_empty(obj, "data");
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::test_util::res;
    use serde_json::json;

    #[test]
    fn secret_string_data_is_merged_into_data() {
        let mut o =
            json!({"data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "new", "c": "z"}})
                .as_object()
                .unwrap()
                .clone();
        normalize_body(&res("secrets"), &mut o);
        assert_eq!(
            Value::Object(o),
            json!({"data": {"a": "eA==", "b": "bmV3", "c": "eg=="}})
        );
    }

    #[test]
    fn empty_data_maps_are_dropped() {
        let mut o = json!({"data": {}, "binaryData": null, "metadata": {}})
            .as_object()
            .unwrap()
            .clone();
        normalize_body(&res("configmaps"), &mut o);
        assert_eq!(Value::Object(o), json!({"metadata": {}}));
        let mut s = json!({"stringData": {}, "data": {}})
            .as_object()
            .unwrap()
            .clone();
        normalize_body(&res("secrets"), &mut s);
        assert!(s.is_empty());
    }
}
