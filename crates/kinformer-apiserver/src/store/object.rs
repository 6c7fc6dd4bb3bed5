//! One stored object version: its pre-serialized JSON plus what selectors need.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::Value;

/// One version of an object, immutable once stored and shared (`Arc`) between the live map,
/// the event history and open watches.
///
/// `bytes` is the exact JSON served by GET, LIST and WATCH (with `kind`, `apiVersion` and
/// `metadata.resourceVersion` filled in), so reads never re-encode. `labels` and `fields` are
/// extracted once at write time for selectors.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredObject {
    /// Storage key: `namespace/name` for namespaced objects, `name` for cluster-scoped ones.
    /// Lists are ordered by this key, as etcd orders `/registry/...` keys.
    pub key: String,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.resourceVersion`: the store revision of the write that produced this version.
    pub resource_version: u64,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// Field-selectable values beyond name and namespace (e.g. `spec.nodeName` for pods).
    pub fields: Vec<(String, String)>,
    /// The object's JSON.
    pub bytes: Bytes,
}

/// Field paths every resource can be selected by.
pub const COMMON_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];

/// Extra field-selectable paths per resource (plural, group), mirroring the real server's
/// field label conversion functions for the common cases.
pub fn extra_fields(group: &str, plural: &str) -> &'static [&'static str] {
    match (group, plural) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "secrets") => &["type"],
        ("", "namespaces") => &["status.phase"],
        ("", "nodes") => &["spec.unschedulable"],
        ("", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "reason",
            "type",
        ],
        _ => &[],
    }
}

fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = v;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    Some(cur)
}

impl StoredObject {
    /// Builds the stored form of `value` (which must already carry its final metadata).
    pub fn from_value(
        value: &Value,
        namespace: &str,
        name: &str,
        uid: &str,
        resource_version: u64,
        extra: &[&str],
    ) -> Self {
        let labels = value
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(|l| l.as_object())
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let fields = extra
            .iter()
            .filter_map(|f| {
                lookup(value, f).map(|v| {
                    let s = match v {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        other => other.to_string(),
                    };
                    (f.to_string(), s)
                })
            })
            .collect();
        let key = if namespace.is_empty() {
            name.to_string()
        } else {
            format!("{namespace}/{name}")
        };
        StoredObject {
            key,
            namespace: namespace.to_string(),
            name: name.to_string(),
            uid: uid.to_string(),
            resource_version,
            labels,
            fields,
            bytes: Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
        }
    }

    /// The value of a field-selectable path (`metadata.name`, `metadata.namespace`, or one of
    /// the resource's extra fields); `None` when absent.
    pub fn field(&self, path: &str) -> Option<&str> {
        match path {
            "metadata.name" => Some(&self.name),
            "metadata.namespace" => Some(&self.namespace),
            other => self
                .fields
                .iter()
                .find(|(f, _)| f == other)
                .map(|(_, v)| v.as_str()),
        }
    }

    /// The object parsed back into JSON (for updates and patches).
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }
}
