//! Parsed `metadata.managedFields` entries: decoding, kube-apiserver's manager identity and
//! naming, sorting and encoding.

use serde_json::{Map, Value};

use super::fieldset::FieldSet;

/// One parsed `managedFields` entry.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// `manager`.
    pub manager: String,
    /// `operation`: `Apply` or `Update`.
    pub operation: String,
    /// `apiVersion`.
    pub api_version: String,
    /// `subresource` (empty for the main resource).
    pub subresource: String,
    /// `time`, as stored.
    pub time: Option<String>,
    /// The owned fields (`fieldsV1`).
    pub set: FieldSet,
}

impl Entry {
    /// Whether both entries are the same manager (kube-apiserver's manager identifier:
    /// manager, operation, subresource, and apiVersion for Update entries only).
    pub(crate) fn same_owner(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && (self.operation == "Apply" || self.api_version == other.api_version)
            && self.subresource == other.subresource
    }

    /// How kube-apiserver names this manager in conflict messages (`printManager`):
    /// `"mgr"`, `"mgr" with subresource "status"`, then ` using v1` for Update entries.
    pub(crate) fn describe(&self) -> String {
        let mut s = go_quote(if self.manager.is_empty() {
            "unknown"
        } else {
            &self.manager
        });
        if !self.subresource.is_empty() {
            s.push_str(&format!(
                " with subresource {}",
                go_quote(&self.subresource)
            ));
        }
        if self.operation == "Update" {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }

    /// kube-apiserver's manager identifier (the JSON of the entry's identity), the key its
    /// conflict messages are sorted by.
    pub(crate) fn identifier(&self) -> String {
        let mut m = Map::new();
        m.insert("manager".into(), Value::String(self.manager.clone()));
        m.insert("operation".into(), Value::String(self.operation.clone()));
        let mut s = Value::Object(m).to_string();
        s.pop();
        if self.operation != "Apply" {
            s.push_str(&format!(
                ",\"apiVersion\":{}",
                Value::String(self.api_version.clone())
            ));
        }
        if !self.subresource.is_empty() {
            s.push_str(&format!(
                ",\"subresource\":{}",
                Value::String(self.subresource.clone())
            ));
        }
        s.push('}');
        s
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        if !self.manager.is_empty() {
            m.insert("manager".into(), Value::String(self.manager.clone()));
        }
        m.insert("operation".into(), Value::String(self.operation.clone()));
        m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::String(t.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), self.set.to_fields_v1());
        if !self.subresource.is_empty() {
            m.insert(
                "subresource".into(),
                Value::String(self.subresource.clone()),
            );
        }
        Value::Object(m)
    }
}

/// Go's `%q` for a manager name (JSON string escaping, which agrees for printable text).
fn go_quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// Parses `managedFields`; `None` when absent, empty or malformed (an entry that is not an
/// object, a `fieldsType` other than `FieldsV1`, a non-object `fieldsV1`).
pub(crate) fn decode(v: Option<&Value>) -> Option<Vec<Entry>> {
    let list = v?.as_array()?;
    if list.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(list.len());
    for e in list {
        let e = e.as_object()?;
        let s = |k: &str| e.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
        if e.get("fieldsType")
            .is_some_and(|t| t.as_str() != Some("FieldsV1"))
        {
            return None;
        }
        let set = match e.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(f @ Value::Object(_)) => FieldSet::from_fields_v1(f),
            Some(_) => return None,
        };
        out.push(Entry {
            manager: s("manager"),
            operation: s("operation"),
            api_version: s("apiVersion"),
            subresource: s("subresource"),
            time: e
                .get("time")
                .and_then(|t| t.as_str())
                .map(|t| t.to_string()),
            set,
        });
    }
    Some(out)
}

/// Sorts `entries` as kube-apiserver does (operation, time, manager, apiVersion, subresource)
/// and stores them as `obj.metadata.managedFields` (removed when there are none).
pub(crate) fn write_entries(obj: &mut Map<String, Value>, mut entries: Vec<Entry>) {
    entries.sort_by(|a, b| {
        (
            &a.operation,
            a.time.as_deref().unwrap_or(""),
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                &b.operation,
                b.time.as_deref().unwrap_or(""),
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        if entries.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert(
                "managedFields".into(),
                Value::Array(entries.iter().map(Entry::to_value).collect()),
            );
        }
    }
}
