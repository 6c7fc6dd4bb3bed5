//! The `/scale` subresource: an `autoscaling/v1` `Scale` view of an object's replicas (the
//! workload kinds, and custom resources whose definition declares one).

use serde_json::{Map, Value, json};

use crate::resource::{ResourceInfo, ScaleInfo};
use crate::status::ApiError;

/// The value at a `.a.b.c` path.
pub(crate) fn get_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .try_fold(obj, |v, seg| v.get(seg))
}

/// Sets the value at a `.a.b.c` path, creating objects on the way; false when a non-object is
/// in the way.
pub(crate) fn set_path(obj: &mut Value, path: &str, value: Value) -> bool {
    let segs: Vec<&str> = path
        .trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .collect();
    let Some((last, parents)) = segs.split_last() else {
        return false;
    };
    let mut cur = obj;
    for seg in parents {
        let Value::Object(m) = cur else { return false };
        cur = m
            .entry(seg.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    match cur {
        Value::Object(m) => {
            m.insert(last.to_string(), value);
            true
        }
        _ => false,
    }
}

/// A label selector (a string as is, a `LabelSelector` object or a plain map) as the string
/// `Scale.status.selector` carries.
fn selector_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(m) => {
            let mut parts = Vec::new();
            let labels = match m.get("matchLabels") {
                Some(Value::Object(l)) => Some(l),
                Some(_) => None,
                // A plain map (a replication controller's selector).
                None if !m.contains_key("matchExpressions") => Some(m),
                None => None,
            };
            if let Some(l) = labels {
                for (k, v) in l {
                    parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
                }
            }
            if let Some(Value::Array(exprs)) = m.get("matchExpressions") {
                for e in exprs {
                    let key = e.get("key").and_then(|k| k.as_str()).unwrap_or_default();
                    let values: Vec<&str> = e
                        .get("values")
                        .and_then(|v| v.as_array())
                        .map(|a| a.iter().filter_map(|x| x.as_str()).collect())
                        .unwrap_or_default();
                    match e.get("operator").and_then(|o| o.as_str()) {
                        Some("In") => parts.push(format!("{key} in ({})", values.join(","))),
                        Some("NotIn") => parts.push(format!("{key} notin ({})", values.join(","))),
                        Some("Exists") => parts.push(key.to_string()),
                        Some("DoesNotExist") => parts.push(format!("!{key}")),
                        _ => {}
                    }
                }
            }
            parts.join(",")
        }
        _ => String::new(),
    }
}

/// The `Scale` of `obj`.
pub(crate) fn to_scale(scale: &ScaleInfo, obj: &Value) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or(json!({}));
    let mut m = Map::new();
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(f) {
            m.insert(f.into(), v.clone());
        }
    }
    let replicas = |p: &str| get_path(obj, p).and_then(|v| v.as_i64()).unwrap_or(0);
    let mut status = json!({"replicas": replicas(&scale.status_replicas_path)});
    if let Some(sel) = scale
        .label_selector_path
        .as_deref()
        .and_then(|p| get_path(obj, p))
    {
        let s = selector_string(sel);
        if !s.is_empty() {
            status["selector"] = Value::String(s);
        }
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": m,
        "spec": {"replicas": replicas(&scale.spec_replicas_path)},
        "status": status,
    })
}

/// `obj` with the replicas a written `Scale` asks for; 409 when the scale carries a stale
/// resourceVersion, 422 for negative replicas.
pub(crate) fn apply_scale(
    res: &ResourceInfo,
    scale: &ScaleInfo,
    mut obj: Value,
    written: &Value,
) -> Result<Map<String, Value>, ApiError> {
    let name = get_path(&obj, ".metadata.name")
        .and_then(|n| n.as_str())
        .unwrap_or_default()
        .to_string();
    if let Some(rv) = get_path(written, ".metadata.resourceVersion").and_then(|v| v.as_str())
        && !rv.is_empty()
        && get_path(&obj, ".metadata.resourceVersion").and_then(|v| v.as_str()) != Some(rv)
    {
        return Err(ApiError::conflict_modified(res, &name));
    }
    let replicas = match get_path(written, ".spec.replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::bad_request("Scale.spec.replicas must be an integer".to_string())
        })?,
    };
    if replicas < 0 {
        return Err(ApiError::invalid(
            "Scale",
            "autoscaling",
            &name,
            &[(
                "spec.replicas".into(),
                "FieldValueInvalid".into(),
                format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            )],
        ));
    }
    if !set_path(&mut obj, &scale.spec_replicas_path, json!(replicas)) {
        return Err(ApiError::internal(
            "the replicas path is not an object path",
        ));
    }
    match obj {
        Value::Object(m) => Ok(m),
        _ => Err(ApiError::internal("stored object is not a JSON object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::test_util::res;

    #[test]
    fn scale_view_and_write() {
        let r = res("deployments");
        let s = r.scale.clone().unwrap();
        let d = json!({"metadata": {"name": "web", "namespace": "d", "resourceVersion": "7"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": 1}});
        let v = to_scale(&s, &d);
        assert_eq!(v["spec"]["replicas"], 2);
        assert_eq!(v["status"], json!({"replicas": 1, "selector": "app=web"}));
        let out = apply_scale(&r, &s, d.clone(), &json!({"spec": {"replicas": 5}})).unwrap();
        assert_eq!(out["spec"]["replicas"], 5);
        let stale = json!({"metadata": {"resourceVersion": "6"}, "spec": {"replicas": 5}});
        assert_eq!(
            apply_scale(&r, &s, d.clone(), &stale).unwrap_err().code,
            409
        );
        let neg = json!({"spec": {"replicas": -1}});
        assert_eq!(apply_scale(&r, &s, d, &neg).unwrap_err().code, 422);
    }

    #[test]
    fn selectors_render_as_strings() {
        assert_eq!(selector_string(&json!({"a": "1"})), "a=1");
        assert_eq!(
            selector_string(
                &json!({"matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]})
            ),
            "k in (x,y)"
        );
        assert_eq!(selector_string(&json!("a=b")), "a=b");
    }
}
