//! Turning request bodies into stored objects: server-set metadata (uid, resourceVersion,
//! creationTimestamp, generation), validation with the real error shapes, the update rules
//! (status subresource, preconditions, no-op updates) and deletion with finalizers.

use serde_json::{Map, Value};

use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::{StoredObject, extra_fields};

pub(crate) mod apply;
mod cap_managers;
mod create;
pub(crate) mod defaults;
mod delete;
pub(crate) mod delete_options;
pub(crate) mod fields;
pub(crate) mod fieldset;
mod json_path;
pub(crate) mod managed_entries;
pub(crate) mod managed_fields;
pub(crate) mod namespace;
pub(crate) mod normalize;
pub(crate) mod pod_defaults;
pub(crate) mod service;
pub(crate) mod service_account;
mod update;
pub(crate) mod validate;

#[cfg(test)]
pub(crate) use create::prepare_create;
pub(crate) use create::{Admission, Created, prepare_create_as, prepare_create_by};
pub(crate) use delete::{
    DeleteOutcome, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Preconditions, check_preconditions,
    finalizers_of, gc_finalizers, prepare_delete,
};
pub(crate) use delete_options::{DeleteOptions, Propagation, dry_run};
pub(crate) use managed_fields::Writer;
#[cfg(test)]
pub(crate) use update::prepare_update;
pub(crate) use update::{UpdateMode, UpdateOutcome, prepare_applied_update, prepare_update_by};

fn invalid(res: &ResourceInfo, name: &str, field: &str, reason: &str, msg: String) -> ApiError {
    ApiError::invalid(
        &res.kind,
        &res.group,
        name,
        &[(field.to_string(), reason.to_string(), msg)],
    )
}

fn cannot_handle(res: &ResourceInfo, why: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!(
        "{} in version \"{}\" cannot be handled as a {}: {}",
        res.kind, res.version, res.kind, why
    ))
}

/// kube-apiserver's answer to a body whose apiVersion/kind cannot even be read
/// (`transformDecodeError` without a kind): `the object provided is unrecognized (must be of
/// type ConfigMap): couldn't get version/kind; json parse error: <error> (<summary>)`.
fn unrecognized(res: &ResourceInfo, why: &str, body: &[u8]) -> ApiError {
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: {why} ({})",
        res.kind,
        crate::go_text::summarize_data(body)
    ))
}

/// Parses a request body into a JSON object (400 BadRequest otherwise, with kube-apiserver's
/// wording for bodies that are not JSON or not an object).
pub(crate) fn decode_body(res: &ResourceInfo, body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| unrecognized(res, &crate::go_text::go_json_error(body, &e), body))?;
    match v {
        Value::Object(m) => Ok(m),
        Value::Null => Err(cannot_handle(res, "expected a JSON object, got null")),
        other => Err(unrecognized(
            res,
            &format!(
                "json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
                type_name(&other)
            ),
            body,
        )),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(crate) fn check_type_meta(
    res: &ResourceInfo,
    obj: &Map<String, Value>,
) -> Result<(), ApiError> {
    if let Some(v) = obj.get("apiVersion") {
        let want = res.api_version();
        if v.as_str() != Some(want.as_str()) {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({}) does not match the expected API version ({})",
                v.as_str().unwrap_or("?"),
                want
            )));
        }
    }
    if let Some(k) = obj.get("kind")
        && k.as_str() != Some(res.kind.as_str())
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({}) does not match the expected kind ({})",
            k.as_str().unwrap_or("?"),
            res.kind
        )));
    }
    Ok(())
}

fn metadata_mut<'a>(
    res: &ResourceInfo,
    obj: &'a mut Map<String, Value>,
) -> Result<&'a mut Map<String, Value>, ApiError> {
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if meta.is_null() {
        *meta = Value::Object(Map::new());
    }
    let Value::Object(meta) = meta else {
        return Err(cannot_handle(
            res,
            "json: cannot unmarshal into Go struct field .metadata of type v1.ObjectMeta",
        ));
    };
    for map_field in ["labels", "annotations"] {
        match meta.get(map_field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                if m.values().any(|v| !v.is_string()) {
                    return Err(cannot_handle(
                        res,
                        format!(
                            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.{map_field} of type string"
                        ),
                    ));
                }
            }
            Some(_) => {
                return Err(cannot_handle(
                    res,
                    format!(
                        "json: cannot unmarshal into Go struct field ObjectMeta.metadata.{map_field} of type map[string]string"
                    ),
                ));
            }
        }
    }
    for str_field in [
        "name",
        "namespace",
        "generateName",
        "resourceVersion",
        "uid",
    ] {
        if let Some(v) = meta.get(str_field)
            && !v.is_string()
            && !v.is_null()
        {
            return Err(cannot_handle(
                res,
                format!(
                    "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{str_field} of type string",
                    type_name(v)
                ),
            ));
        }
    }
    // Go's ObjectMeta omits empty collections (`omitempty`): `finalizers: []` or `labels: {}`
    // sent by a client are not stored or echoed (e2e/diff "finalizers / remove-finalizer").
    for collection in ["labels", "annotations", "finalizers", "ownerReferences"] {
        let empty = match meta.get(collection) {
            Some(Value::Null) => true,
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Object(m)) => m.is_empty(),
            _ => false,
        };
        if empty {
            meta.remove(collection);
        }
    }
    Ok(meta)
}

fn str_field<'a>(meta: &'a Map<String, Value>, f: &str) -> &'a str {
    meta.get(f).and_then(|v| v.as_str()).unwrap_or("")
}

/// The current time as the API server formats timestamps (RFC 3339, seconds).
pub(crate) fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A random v4 UUID string.
pub(crate) fn new_uid() -> String {
    let b: [u8; 16] = rand::random();
    let mut b = b;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Five characters from kube-apiserver's name generator's alphabet (no vowels, nothing
/// confusable), for `generateName` and the names the server picks.
pub(crate) fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect()
}

fn check_namespace(
    res: &ResourceInfo,
    meta: &mut Map<String, Value>,
    path_ns: &str,
) -> Result<String, ApiError> {
    if res.namespaced() {
        let body_ns = str_field(meta, "namespace").to_string();
        if !body_ns.is_empty() && body_ns != path_ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        meta.insert("namespace".into(), Value::String(path_ns.to_string()));
        Ok(path_ns.to_string())
    } else {
        meta.remove("namespace");
        Ok(String::new())
    }
}

fn finish(
    res: &ResourceInfo,
    obj: Map<String, Value>,
    ns: &str,
    name: &str,
    uid: &str,
    rev: u64,
) -> StoredObject {
    let mut obj = obj;
    normalize::null_fields(res, &mut obj);
    let value = Value::Object(obj);
    StoredObject::from_value(
        &value,
        ns,
        name,
        uid,
        rev,
        extra_fields(&res.group, &res.plural),
    )
}

/// The type fields objects are stored with (a custom resource's storage version, whatever
/// version it was written in).
fn set_type_meta(res: &ResourceInfo, obj: &mut Map<String, Value>) {
    obj.insert("apiVersion".into(), Value::String(res.stored_api_version()));
    obj.insert("kind".into(), Value::String(res.kind.clone()));
}

/// A stored object as the version `res` serves shows it, when that is not how it is stored
/// (what a read, a list or a watch through that version answers with). Only a custom
/// resource's objects can be: read through a version other than its CRD's storage version, or
/// stored before the CRD's storage version changed (kept in the version they were written in
/// until written again, as etcd keeps them; `status.storedVersions` lists both).
///
/// Shown in another version, it is pruned by that version's schema (conversion strategy `None`
/// changes only `apiVersion`; what the other version does not declare is dropped, as
/// kube-apiserver prunes every conversion's result).
pub(crate) fn served_object(res: &ResourceInfo, o: &StoredObject) -> Option<StoredObject> {
    if res.crd_name.is_none() || o.has_api_version(&res.api_version()) {
        return None;
    }
    let Value::Object(m) = o.to_value() else {
        return None;
    };
    Some(rebuilt(res, o, &Value::Object(in_version(res, m))))
}

/// A custom resource's stored JSON as the version `res` serves shows it, when it is stored in
/// another version ([`served_object`], parsed already: what an update through `res` compares
/// with); `None` when it is in that version.
pub(crate) fn served_map(
    res: &ResourceInfo,
    obj: &Map<String, Value>,
) -> Option<Map<String, Value>> {
    let version = res.api_version();
    if res.crd_name.is_none() || obj.get("apiVersion").and_then(Value::as_str) == Some(&version) {
        return None;
    }
    Some(in_version(res, obj.clone()))
}

/// `obj`, stored in another version of `res`'s CRD, in `res`'s version: relabelled and pruned
/// by its schema.
fn in_version(res: &ResourceInfo, mut obj: Map<String, Value>) -> Map<String, Value> {
    obj.insert("apiVersion".into(), Value::String(res.api_version()));
    if let Some(schema) = &res.schema {
        fields::prune_to_schema(schema, &mut obj);
    }
    obj
}

/// A stored object `o` of `res` with the content `v` (a conversion's result), its key, uid and
/// resourceVersion kept.
pub(crate) fn rebuilt(res: &ResourceInfo, o: &StoredObject, v: &Value) -> StoredObject {
    StoredObject::from_value(
        v,
        &o.namespace,
        &o.name,
        &o.uid,
        o.resource_version,
        crate::store::extra_fields(&res.group, &res.plural),
    )
}

/// An object decided through a version other than its CRD's storage version under conversion
/// strategy `None`, as it is stored: pruned by the storage version's schema (a webhook's
/// conversion is pruned where it is made, [`crate::http::conversion`]).
pub(crate) fn prune_for_storage(res: &ResourceInfo, obj: &mut Map<String, Value>) {
    if res.conversion.is_none()
        && let Some(schema) = &res.storage_schema
    {
        fields::prune_to_schema(schema, obj);
    }
}

/// A stored object's JSON as the version `res` serves shows it (its `apiVersion`): what a
/// patch or an apply through that version starts from.
pub(crate) fn in_served_version(res: &ResourceInfo, obj: &mut Value) {
    if res.crd_name.is_some()
        && let Some(m) = obj.as_object_mut()
    {
        m.insert("apiVersion".into(), Value::String(res.api_version()));
    }
}

/// The storage key of an object.
pub(crate) fn storage_key(res: &ResourceInfo, namespace: &str, name: &str) -> String {
    if res.namespaced() {
        format!("{namespace}/{name}")
    } else {
        name.to_string()
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    use serde_json::{Map, Value};

    use crate::resource::{ResourceInfo, builtin_resources};

    /// The built-in resource `plural` (a test's fixture; panics if there is none).
    pub(crate) fn res(plural: &str) -> ResourceInfo {
        builtin_resources()
            .into_iter()
            .find(|r| r.plural == plural)
            .unwrap()
    }

    pub(crate) fn pods() -> ResourceInfo {
        res("pods")
    }

    pub(crate) fn body(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }
}
