//! Server-side apply (`application/apply-patch+yaml`), as kube-apiserver's field manager does
//! it with structured-merge-diff (`Updater.Apply` and the wrappers around it):
//! - the applied configuration is merged into the live object ([`merge::merge`]) with the
//!   list and map semantics of the type's schema ([`schema`]);
//! - the applier's `Apply` entry owns exactly the configuration's fields
//!   ([`merge::to_field_set`]), less the server-owned metadata and, on a resource with a
//!   status subresource, the half the request does not write;
//! - fields the applier applied last time and no longer applies are removed unless another
//!   manager owns them ([`merge::prune`]);
//! - a change to a field another manager (Apply or Update entry) owns is a conflict: 409
//!   with one cause per field and manager ([`conflicts`]), unless `force`, which moves the
//!   fields to the applier; the same value applied by two managers is owned by both;
//! - a live object without managedFields first gets a `before-first-apply` Update entry
//!   owning what it has (kube-apiserver's skip-non-applied manager);
//! - the applier's entry gets a new `time` only when the object changed.
//!
//! - for the `kubectl` manager, the client-side apply annotation is honoured as kube-apiserver
//!   does ([`last_applied`]).
//!
//! Deliberate differences: YAML bodies are read by serde-saphyr (YAML 1.2) where kube-apiserver
//! uses sigs.k8s.io/yaml (YAML 1.1 scalars such as `yes` and `on` are strings here), and
//! error messages for bad YAML differ; the configuration's scalar types are not checked against
//! the schema (a CRD's schema validation after the merge catches them, 422); `/scale`
//! applies are merge patches of the scale (kube-apiserver converts the managedFields between
//! the object and its `Scale`).

pub(crate) mod conflicts;
pub(crate) mod last_applied;
pub(crate) mod merge;
pub(crate) mod schema;
pub(crate) mod validate;

use serde_json::{Map, Value};

use super::fieldset::{FieldSet, compare};
use super::managed_fields::{
    Entry, Writer, decode, managed_of, ownable, stripped, update_managed_fields, without_managed,
    write_entries,
};
use super::now_rfc3339;
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use schema::schema_for;

/// Go's `GroupVersionKind.String()` of an applied object's type (`/v1, Kind=ConfigMap`).
fn gvk_string(obj: &Map<String, Value>) -> String {
    let api_version = obj.get("apiVersion").and_then(|v| v.as_str()).unwrap_or("");
    let kind = obj.get("kind").and_then(|v| v.as_str()).unwrap_or("");
    let (group, version) = match api_version.split('/').collect::<Vec<_>>()[..] {
        [v] => ("", v),
        [g, v] => (g, v),
        _ => ("", ""),
    };
    format!("{group}/{version}, Kind={kind}")
}

/// Decodes an apply patch body: JSON, else YAML (kube-apiserver's `application/apply-patch+yaml`
/// is YAML, of which JSON is a subset), to an object (400 otherwise).
pub(crate) fn decode_config(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => serde_saphyr::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
    };
    match v {
        Value::Object(m) => Ok(m),
        other => Err(ApiError::bad_request(format!(
            "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                Value::Bool(_) => "bool",
                _ => "null",
            }
        ))),
    }
}

/// Checks the applied configuration's type and that it carries no managedFields.
pub(crate) fn check_config(
    res: &ResourceInfo,
    config: &Map<String, Value>,
) -> Result<(), ApiError> {
    let want = format!("{}/{}, Kind={}", res.group, res.version, res.kind);
    let got = gvk_string(config);
    if got != want {
        return Err(ApiError::bad_request(format!("invalid object type: {got}")));
    }
    let mf = config.get("metadata").and_then(|m| m.get("managedFields"));
    if mf.is_some_and(|v| !v.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    super::fields::check_applied(res, config)
}

/// Applies `config` (checked by [`check_config`]) for `writer` to `live` (`None` when the
/// object does not exist yet). Returns the object to write, its `managedFields` set.
pub(crate) fn apply(
    res: &ResourceInfo,
    live: Option<&Map<String, Value>>,
    config: &Map<String, Value>,
    writer: &Writer,
    force: bool,
) -> Result<Map<String, Value>, ApiError> {
    let schema = schema_for(res);
    let schema = &*schema;
    validate::check_lists(schema, config, &gvk_string(config))?;
    let live_obj = live.map(without_managed).unwrap_or_default();
    let mut entries = live.and_then(|l| decode(managed_of(l))).unwrap_or_default();
    if entries.is_empty()
        && let Some(l) = live
    {
        // kube-apiserver's skip-non-applied manager: what the object has is owned by
        // `before-first-apply` before the first apply.
        let mut owned = without_managed(l);
        let first = Writer {
            manager: "before-first-apply".into(),
            subresource: writer.subresource.clone(),
        };
        update_managed_fields(res, None, &mut owned, &first);
        entries = decode(managed_of(&owned)).unwrap_or_default();
    }
    let me = Entry {
        manager: writer.manager.clone(),
        operation: "Apply".into(),
        api_version: res.api_version(),
        subresource: writer.subresource.clone().unwrap_or_default(),
        time: None,
        set: merge::to_field_set(schema, config).filter(|p| ownable(res, writer, p)),
    };
    let previous = entries
        .iter()
        .position(|e| e.same_owner(&me))
        .map(|i| entries.remove(i));
    let managed = entries
        .iter()
        .fold(me.set.clone(), |acc, e| acc.union(&e.set));
    let merged = merge::merge(schema, &live_obj, config);
    let last = previous.as_ref().map(|p| p.set.clone()).unwrap_or_default();
    let new = merge::prune(schema, &merged, &managed, &last);
    // structured-merge-diff's `update`: what changed, as the request may own it.
    let cmp = compare(schema, &live_obj, &new);
    let keep = |s: &FieldSet| s.filter(|p| ownable(res, writer, p));
    let changed = keep(&cmp.modified.union(&cmp.added));
    let removed = keep(&cmp.removed);
    let found: Vec<(Entry, FieldSet)> = entries
        .iter()
        .map(|e| (e.clone(), e.set.intersection(&changed)))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    if !force && !found.is_empty() {
        let allowed = (writer.manager == last_applied::KUBECTL)
            .then(|| live.and_then(|l| last_applied::allowed_conflicts(res, schema, l)))
            .flatten();
        let remaining: Vec<(Entry, FieldSet)> = match &allowed {
            Some(a) => found
                .iter()
                .map(|(e, c)| (e.clone(), c.difference(a)))
                .filter(|(_, c)| !c.is_empty())
                .collect(),
            None => found,
        };
        if !remaining.is_empty() {
            return Err(conflicts::conflict_error(&remaining));
        }
    }
    for e in &mut entries {
        e.set = e.set.difference(&changed).difference(&removed);
    }
    entries.retain(|e| !e.set.is_empty());
    let set = me.set.filter(|p| !stripped(p));
    if !set.is_empty() {
        let time = if new != live_obj {
            Some(now_rfc3339())
        } else {
            previous.and_then(|p| p.time)
        };
        entries.push(Entry { time, set, ..me });
    }
    let mut out = new;
    write_entries(&mut out, entries);
    if writer.manager == last_applied::KUBECTL {
        last_applied::update_annotation(&mut out, config);
    }
    Ok(out)
}

#[cfg(test)]
mod struct_tests;
#[cfg(test)]
mod tests;
