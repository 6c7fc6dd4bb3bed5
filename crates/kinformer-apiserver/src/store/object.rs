//! One stored object version: its pre-serialized JSON plus what selectors need.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::Value;

/// How the JSON of an object stored with its type fields first begins ([`encode_typed`]).
const API_VERSION_HEAD: &[u8] = b"{\"apiVersion\":\"";

/// One version of an object, immutable once stored and shared (`Arc`) between the live map,
/// the event history and open watches.
///
/// `bytes` is the exact JSON served by GET and WATCH (with `kind`, `apiVersion` and
/// `metadata.resourceVersion` filled in), so reads never re-encode. It always starts with
/// `{"apiVersion":...,"kind":...,` (the type fields, `type_len` bytes after the `{`), so a LIST
/// serves each item as `{` followed by the bytes after the type fields: list items carry no
/// `kind`/`apiVersion`, as kube-apiserver's do, at the cost of one extra byte copy call per item.
/// `labels` and `fields` are extracted once at write time for selectors.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoredObject {
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
    /// Length of the type fields (`"apiVersion":..,"kind":..,`) right after the opening `{` of
    /// `bytes`; 0 when the object has none.
    pub type_len: usize,
    /// This version's protobuf message, encoded from `bytes` the first time a protobuf client
    /// reads it. A clone starts empty, so `..current.clone()` with new `bytes` never serves a
    /// stale encoding.
    pub proto: ProtoCache,
}

/// The protobuf form of one stored object version, encoded once on first use (see
/// [`StoredObject::proto`]). Empty when cloned; never part of equality.
#[derive(Debug, Default)]
pub(crate) struct ProtoCache(std::sync::OnceLock<Option<Bytes>>);

impl ProtoCache {
    /// The cached message, or `encode`'s result (kept, `None` included).
    pub(crate) fn get_or_encode(&self, encode: impl FnOnce() -> Option<Bytes>) -> Option<Bytes> {
        self.0.get_or_init(encode).clone()
    }
}

impl Clone for ProtoCache {
    fn clone(&self) -> Self {
        ProtoCache::default()
    }
}

impl PartialEq for ProtoCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Serializes a JSON object with `apiVersion` and `kind` first; returns the bytes and the
/// length of the type fields after the opening brace (see [`StoredObject::type_len`]).
pub(crate) fn encode_typed(value: &Value) -> (Vec<u8>, usize) {
    let Value::Object(map) = value else {
        return (serde_json::to_vec(value).unwrap_or_default(), 0);
    };
    let mut out = Vec::with_capacity(256);
    out.push(b'{');
    let mut first = true;
    let write_entry = |out: &mut Vec<u8>, k: &str, v: &Value, first: &mut bool| {
        if !*first {
            out.push(b',');
        }
        *first = false;
        // Writing a str or a Value into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, k);
        out.push(b':');
        let _ = serde_json::to_writer(&mut *out, v);
    };
    for k in ["apiVersion", "kind"] {
        if let Some(v) = map.get(k) {
            write_entry(&mut out, k, v, &mut first);
        }
    }
    let mut type_len = out.len() - 1;
    let mut typed = !first;
    for (k, v) in map {
        if k == "apiVersion" || k == "kind" {
            continue;
        }
        write_entry(&mut out, k, v, &mut first);
        if typed {
            // The comma after the type fields belongs to them.
            type_len += 1;
            typed = false;
        }
    }
    out.push(b'}');
    (out, type_len)
}

/// Field paths every resource can be selected by.
pub(crate) const COMMON_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];

/// Extra field-selectable paths per resource (plural, group), mirroring the real server's
/// field label conversion functions for the common cases.
pub(crate) fn extra_fields(group: &str, plural: &str) -> &'static [&'static str] {
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
    pub(crate) fn from_value(
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
        let (bytes, type_len) = encode_typed(value);
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
            bytes: Bytes::from(bytes),
            type_len,
            proto: ProtoCache::default(),
        }
    }

    /// The object's JSON without its opening `{` and type fields: a LIST item is `{` followed
    /// by this.
    pub(crate) fn untyped_tail(&self) -> &[u8] {
        self.bytes.get(1 + self.type_len..).unwrap_or(&[])
    }

    /// This version presented at another revision: the same object with
    /// `metadata.resourceVersion` set to `rev` (a DELETED event carries the last stored state at
    /// the deletion's revision).
    pub(crate) fn at_revision(&self, rev: u64) -> StoredObject {
        let mut v = self.to_value();
        if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            m.insert("resourceVersion".into(), Value::String(rev.to_string()));
        }
        let (bytes, type_len) = encode_typed(&v);
        StoredObject {
            resource_version: rev,
            bytes: Bytes::from(bytes),
            type_len,
            ..self.clone()
        }
    }

    /// This version without `metadata.resourceVersion` (resourceVersion 0): what a dry-run
    /// create answers with, since nothing was stored.
    pub(crate) fn without_resource_version(&self) -> StoredObject {
        let mut v = self.to_value();
        if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            m.remove("resourceVersion");
        }
        let (bytes, type_len) = encode_typed(&v);
        StoredObject {
            resource_version: 0,
            bytes: Bytes::from(bytes),
            type_len,
            ..self.clone()
        }
    }

    /// The value of a field-selectable path (`metadata.name`, `metadata.namespace`, or one of
    /// the resource's extra fields); `None` when absent.
    pub(crate) fn field(&self, path: &str) -> Option<&str> {
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

    /// The `apiVersion` this version's JSON starts with ([`encode_typed`] writes it first) and
    /// where its quoted form ends; `None` for JSON stored otherwise, or an escaped value.
    fn leading_api_version(&self) -> Option<(&[u8], usize)> {
        let rest = self.bytes.strip_prefix(API_VERSION_HEAD)?;
        let n = memchr::memchr(b'"', rest)?;
        let value = &rest[..n];
        (!value.contains(&b'\\')).then_some((value, API_VERSION_HEAD.len() + n + 1))
    }

    /// Whether this version's `apiVersion` is `api_version` (a custom resource may hold
    /// objects stored in an earlier storage version of its CRD).
    pub(crate) fn has_api_version(&self, api_version: &str) -> bool {
        match self.leading_api_version() {
            Some((value, _)) => value == api_version.as_bytes(),
            None => self.to_value().get("apiVersion").and_then(Value::as_str) == Some(api_version),
        }
    }

    /// This version shown with another `apiVersion` (a custom resource read through a served
    /// version other than its storage version); `None` when it already has it.
    ///
    /// The stored JSON starts with its `apiVersion` ([`encode_typed`]), so the new one is
    /// spliced in; an object stored otherwise is parsed and written again.
    pub(crate) fn in_api_version(&self, api_version: &str) -> Option<StoredObject> {
        let mut new = Vec::with_capacity(api_version.len() + 2);
        // writing a str into a Vec cannot fail
        let _ = serde_json::to_writer(&mut new, api_version);
        let open = API_VERSION_HEAD.len() - 1;
        let old_end = self.leading_api_version().map(|(_, end)| end);
        let (bytes, type_len) = match old_end {
            Some(end) if self.bytes[open..end] == new[..] => return None,
            Some(end) => {
                let mut bytes = Vec::with_capacity(self.bytes.len() + new.len());
                bytes.extend_from_slice(&self.bytes[..open]);
                bytes.extend_from_slice(&new);
                bytes.extend_from_slice(&self.bytes[end..]);
                let old_len = end - open;
                (bytes, self.type_len + new.len() - old_len)
            }
            None => {
                let mut v = self.to_value();
                let m = v.as_object_mut()?;
                if m.get("apiVersion").and_then(Value::as_str) == Some(api_version) {
                    return None;
                }
                m.insert("apiVersion".into(), Value::String(api_version.to_string()));
                encode_typed(&v)
            }
        };
        Some(StoredObject {
            bytes: Bytes::from(bytes),
            type_len,
            proto: ProtoCache::default(),
            ..self.clone()
        })
    }

    /// The object parsed back into JSON (for updates and patches).
    pub(crate) fn to_value(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_fields_come_first_and_list_items_omit_them() {
        let v = json!({"metadata": {"name": "a"}, "kind": "ConfigMap", "data": {"k": "v"}, "apiVersion": "v1"});
        let o = StoredObject::from_value(&v, "ns", "a", "u", 3, &[]);
        let text = std::str::from_utf8(&o.bytes).unwrap();
        assert!(
            text.starts_with(r#"{"apiVersion":"v1","kind":"ConfigMap","#),
            "{text}"
        );
        let back: Value = serde_json::from_slice(&o.bytes).unwrap();
        assert_eq!(back, v);
        let mut item = b"{".to_vec();
        item.extend_from_slice(o.untyped_tail());
        let item: Value = serde_json::from_slice(&item).unwrap();
        assert_eq!(item, json!({"metadata": {"name": "a"}, "data": {"k": "v"}}));
    }

    #[test]
    fn another_api_version_is_spliced_in_and_the_rest_kept() {
        let v = json!({"apiVersion": "example.com/v1", "kind": "Route", "metadata": {"name": "a"}, "spec": {"x": 1}});
        let o = StoredObject::from_value(&v, "ns", "a", "u", 3, &[]);
        assert!(o.in_api_version("example.com/v1").is_none());
        for version in ["example.com/v1beta1", "example.com/v2", "x"] {
            let shown = o.in_api_version(version).unwrap();
            let mut want = v.clone();
            want["apiVersion"] = json!(version);
            assert_eq!(serde_json::from_slice::<Value>(&shown.bytes).unwrap(), want);
            assert_eq!(shown.untyped_tail(), o.untyped_tail(), "{version}");
        }
        // stored without its apiVersion first: parsed and written again
        let mut odd = o.clone();
        odd.bytes = Bytes::from_static(br#"{"kind":"Route","apiVersion":"example.com/v1"}"#);
        odd.type_len = 0;
        let shown = odd.in_api_version("example.com/v2").unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&shown.bytes).unwrap(),
            json!({"apiVersion": "example.com/v2", "kind": "Route"})
        );
        assert!(odd.in_api_version("example.com/v1").is_none());
    }

    #[test]
    fn objects_without_type_or_other_fields_stay_valid() {
        for v in [
            json!({}),
            json!({"kind": "X", "apiVersion": "v1"}),
            json!({"a": 1}),
        ] {
            let o = StoredObject::from_value(&v, "", "a", "u", 1, &[]);
            assert_eq!(serde_json::from_slice::<Value>(&o.bytes).unwrap(), v);
            let mut item = b"{".to_vec();
            item.extend_from_slice(o.untyped_tail());
            let item: Value = serde_json::from_slice(&item).unwrap();
            let mut want = v.clone();
            want.as_object_mut().unwrap().remove("kind");
            want.as_object_mut().unwrap().remove("apiVersion");
            assert_eq!(item, want);
        }
    }

    #[test]
    fn at_revision_rewrites_only_the_resource_version() {
        let v = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "resourceVersion": "3"}});
        let o = StoredObject::from_value(&v, "ns", "a", "u", 3, &[]);
        let later = o.at_revision(9);
        assert_eq!(later.resource_version, 9);
        let mut want = v.clone();
        want["metadata"]["resourceVersion"] = json!("9");
        assert_eq!(later.to_value(), want);
        assert_eq!(later.type_len, o.type_len);
    }
}
