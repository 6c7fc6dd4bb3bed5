//! Turning request bodies into stored objects: server-set metadata (uid, resourceVersion,
//! creationTimestamp, generation), validation with the real error shapes, the update rules
//! (status subresource, preconditions, no-op updates) and deletion with finalizers.

use serde_json::{Map, Value};

use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::{StoredObject, extra_fields};

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// Whether `s` is a DNS-1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters).
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// Whether `s` is a DNS-1123 subdomain (dot-separated labels, at most 253 characters).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

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

/// Parses a request body into a JSON object (400 BadRequest otherwise).
pub fn decode_body(res: &ResourceInfo, body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| cannot_handle(res, e))?;
    match v {
        Value::Object(m) => Ok(m),
        other => Err(cannot_handle(
            res,
            format!("expected a JSON object, got {}", type_name(&other)),
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

fn check_type_meta(res: &ResourceInfo, obj: &Map<String, Value>) -> Result<(), ApiError> {
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
    Ok(meta)
}

fn str_field<'a>(meta: &'a Map<String, Value>, f: &str) -> &'a str {
    meta.get(f).and_then(|v| v.as_str()).unwrap_or("")
}

/// The current time as the API server formats timestamps (RFC 3339, seconds).
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A random v4 UUID string.
pub fn new_uid() -> String {
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

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect()
}

fn validate_name(res: &ResourceInfo, name: &str) -> Result<(), ApiError> {
    let (ok, msg) = if res.plural == "namespaces" && res.group.is_empty() {
        (is_dns1123_label(name), LABEL_MSG)
    } else {
        (is_dns1123_subdomain(name), SUBDOMAIN_MSG)
    };
    if ok {
        Ok(())
    } else {
        Err(invalid(
            res,
            name,
            "metadata.name",
            "FieldValueInvalid",
            format!("Invalid value: \"{name}\": {msg}"),
        ))
    }
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

fn set_type_meta(res: &ResourceInfo, obj: &mut Map<String, Value>) {
    obj.insert("apiVersion".into(), Value::String(res.api_version()));
    obj.insert("kind".into(), Value::String(res.kind.clone()));
}

/// The storage key of an object.
pub fn storage_key(res: &ResourceInfo, namespace: &str, name: &str) -> String {
    if res.namespaced() {
        format!("{namespace}/{name}")
    } else {
        name.to_string()
    }
}

/// A new object ready to be created: name resolved (or generated from `generateName`),
/// validated, with server-set metadata. Returns the storage key and the object.
pub fn prepare_create(
    res: &ResourceInfo,
    path_ns: &str,
    mut obj: Map<String, Value>,
    rev: u64,
) -> Result<(String, StoredObject), ApiError> {
    check_type_meta(res, &obj)?;
    let meta = metadata_mut(res, &mut obj)?;
    let mut name = str_field(meta, "name").to_string();
    if name.is_empty() {
        let generate = str_field(meta, "generateName").to_string();
        if generate.is_empty() {
            return Err(invalid(
                res,
                "",
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required".into(),
            ));
        }
        name = format!("{generate}{}", random_suffix());
        meta.insert("name".into(), Value::String(name.clone()));
    }
    validate_name(res, &name)?;
    let ns = check_namespace(res, meta, path_ns)?;
    let uid = new_uid();
    meta.insert("uid".into(), Value::String(uid.clone()));
    meta.insert("resourceVersion".into(), Value::String(rev.to_string()));
    meta.insert("creationTimestamp".into(), Value::String(now_rfc3339()));
    meta.remove("deletionTimestamp");
    meta.remove("deletionGracePeriodSeconds");
    if res.tracks_generation {
        meta.insert("generation".into(), Value::from(1));
    } else {
        meta.remove("generation");
    }
    set_type_meta(res, &mut obj);
    let key = storage_key(res, &ns, &name);
    Ok((key, finish(res, obj, &ns, &name, &uid, rev)))
}

/// Which part of an object an update writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateMode {
    /// The main resource: `status` is kept from the stored object when the resource has a
    /// status subresource.
    Main,
    /// The `/status` subresource: only `status` changes.
    Status,
    /// Storage-level write (direct Rust API): the object is stored as given.
    Raw,
}

/// What an update resolves to.
#[derive(Debug)]
pub enum UpdateOutcome {
    /// Store this new version.
    Write(StoredObject),
    /// Nothing changed: the stored object stays (no revision is used).
    Unchanged,
    /// The last finalizer was removed from an object being deleted: delete it, with this final
    /// state.
    Delete(StoredObject),
}

fn without(v: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    v.iter()
        .filter(|(k, _)| !keys.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Applies an update of `old` to `new` (a full object body). Checks the name, namespace and
/// `metadata.resourceVersion` precondition (409 Conflict when stale), keeps immutable metadata,
/// bumps `generation` when anything but metadata and status changed, and detects no-op updates.
pub fn prepare_update(
    res: &ResourceInfo,
    old: &StoredObject,
    mut new: Map<String, Value>,
    rev: u64,
    mode: UpdateMode,
) -> Result<UpdateOutcome, ApiError> {
    check_type_meta(res, &new)?;
    let Value::Object(old_obj) = old.to_value() else {
        return Err(ApiError::internal("stored object is not a JSON object"));
    };
    {
        let meta = metadata_mut(res, &mut new)?;
        let body_name = str_field(meta, "name");
        if !body_name.is_empty() && body_name != old.name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({})",
                body_name, old.name
            )));
        }
        meta.insert("name".into(), Value::String(old.name.clone()));
        check_namespace(res, meta, &old.namespace)?;
        let body_rv = str_field(meta, "resourceVersion");
        if !body_rv.is_empty() {
            let Ok(rv) = body_rv.parse::<u64>() else {
                return Err(invalid(
                    res,
                    &old.name,
                    "metadata.resourceVersion",
                    "FieldValueInvalid",
                    format!("Invalid value: \"{body_rv}\": must be a valid resourceVersion"),
                ));
            };
            if rv != old.resource_version {
                return Err(ApiError::conflict_modified(res, &old.name));
            }
        }
    }
    let mut result = match mode {
        UpdateMode::Status => {
            let mut r = old_obj.clone();
            match new.get("status") {
                Some(s) => r.insert("status".into(), s.clone()),
                None => r.remove("status"),
            };
            r
        }
        UpdateMode::Main if res.status_subresource => {
            let mut r = new;
            match old_obj.get("status") {
                Some(s) => r.insert("status".into(), s.clone()),
                None => r.remove("status"),
            };
            r
        }
        _ => new,
    };
    set_type_meta(res, &mut result);
    let old_meta = old_obj
        .get("metadata")
        .and_then(|m| m.as_object())
        .cloned()
        .unwrap_or_default();
    let spec_changed =
        without(&result, &["metadata", "status"]) != without(&old_obj, &["metadata", "status"]);
    {
        let meta = metadata_mut(res, &mut result)?;
        for keep in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ] {
            match old_meta.get(keep) {
                Some(v) => meta.insert(keep.into(), v.clone()),
                None => meta.remove(keep),
            };
        }
        meta.insert(
            "resourceVersion".into(),
            Value::String(old.resource_version.to_string()),
        );
        if mode == UpdateMode::Status {
            // Status writes keep the stored metadata entirely (labels, annotations, ...).
            *meta = old_meta.clone();
        }
    }
    if result == old_obj {
        return Ok(UpdateOutcome::Unchanged);
    }
    let deleting = old_meta.contains_key("deletionTimestamp");
    let meta = metadata_mut(res, &mut result)?;
    meta.insert("resourceVersion".into(), Value::String(rev.to_string()));
    if res.tracks_generation && spec_changed {
        let g = meta.get("generation").and_then(|g| g.as_i64()).unwrap_or(0);
        meta.insert("generation".into(), Value::from(g + 1));
    }
    let no_finalizers = meta
        .get("finalizers")
        .and_then(|f| f.as_array())
        .is_none_or(|f| f.is_empty());
    let obj = finish(res, result, &old.namespace, &old.name, &old.uid, rev);
    if deleting && no_finalizers {
        Ok(UpdateOutcome::Delete(obj))
    } else {
        Ok(UpdateOutcome::Write(obj))
    }
}

/// Preconditions of a DELETE (`DeleteOptions.preconditions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// Required `metadata.uid`.
    pub uid: Option<String>,
    /// Required `metadata.resourceVersion`.
    pub resource_version: Option<String>,
}

/// What a delete resolves to.
#[derive(Debug)]
pub enum DeleteOutcome {
    /// Remove the object; this is its final state (carrying the deletion revision).
    Remove(StoredObject),
    /// The object has finalizers: it was marked with `deletionTimestamp` (this new version).
    MarkDeleting(StoredObject),
    /// Already marked for deletion; nothing changes.
    AlreadyDeleting,
}

/// Applies a delete of `old` at revision `rev`, checking preconditions (409 Conflict).
pub fn prepare_delete(
    res: &ResourceInfo,
    old: &StoredObject,
    pre: &Preconditions,
    rev: u64,
) -> Result<DeleteOutcome, ApiError> {
    if let Some(uid) = &pre.uid
        && *uid != old.uid
    {
        return Err(ApiError::conflict(
            res,
            &old.name,
            &format!(
                "Precondition failed: UID in precondition: {}, UID in object meta: {}",
                uid, old.uid
            ),
        ));
    }
    if let Some(rv) = &pre.resource_version
        && *rv != old.resource_version.to_string()
    {
        return Err(ApiError::conflict(
            res,
            &old.name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in object meta: {}",
                rv, old.resource_version
            ),
        ));
    }
    let Value::Object(mut obj) = old.to_value() else {
        return Err(ApiError::internal("stored object is not a JSON object"));
    };
    let meta = metadata_mut(res, &mut obj)?;
    let has_finalizers = meta
        .get("finalizers")
        .and_then(|f| f.as_array())
        .is_some_and(|f| !f.is_empty());
    if has_finalizers {
        if meta.contains_key("deletionTimestamp") {
            return Ok(DeleteOutcome::AlreadyDeleting);
        }
        meta.insert("deletionTimestamp".into(), Value::String(now_rfc3339()));
        meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
        if res.tracks_generation {
            let g = meta.get("generation").and_then(|g| g.as_i64()).unwrap_or(0);
            meta.insert("generation".into(), Value::from(g + 1));
        }
        meta.insert("resourceVersion".into(), Value::String(rev.to_string()));
        return Ok(DeleteOutcome::MarkDeleting(finish(
            res,
            obj,
            &old.namespace,
            &old.name,
            &old.uid,
            rev,
        )));
    }
    meta.insert("resourceVersion".into(), Value::String(rev.to_string()));
    Ok(DeleteOutcome::Remove(finish(
        res,
        obj,
        &old.namespace,
        &old.name,
        &old.uid,
        rev,
    )))
}

/// Rewrites `metadata.resourceVersion` in an object's JSON (used for watch events that
/// present the previous state at a newer revision).
pub fn with_resource_version(obj: &StoredObject, rev: u64) -> bytes::Bytes {
    let mut v = obj.to_value();
    if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        m.insert("resourceVersion".into(), Value::String(rev.to_string()));
    }
    bytes::Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::builtin_resources;
    use serde_json::json;

    fn pods() -> ResourceInfo {
        builtin_resources()
            .into_iter()
            .find(|r| r.plural == "pods")
            .unwrap()
    }

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn create_sets_server_metadata() {
        let (key, o) = prepare_create(
            &pods(),
            "ns",
            body(json!({"metadata": {"name": "p"}, "spec": {}})),
            7,
        )
        .unwrap();
        assert_eq!(key, "ns/p");
        let v = o.to_value();
        assert_eq!(v["metadata"]["resourceVersion"], "7");
        assert_eq!(v["metadata"]["namespace"], "ns");
        assert_eq!(v["metadata"]["generation"], 1);
        assert_eq!(v["kind"], "Pod");
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["metadata"]["uid"].as_str().unwrap().len(), 36);
        assert!(
            v["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap()
                .ends_with('Z')
        );
    }

    #[test]
    fn generate_name_appends_five_characters() {
        let (_, o) = prepare_create(
            &pods(),
            "ns",
            body(json!({"metadata": {"generateName": "web-"}})),
            2,
        )
        .unwrap();
        assert!(o.name.starts_with("web-"));
        assert_eq!(o.name.len(), 9);
    }

    #[test]
    fn create_errors_have_real_shapes() {
        let e = prepare_create(&pods(), "ns", body(json!({"metadata": {}})), 2).unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "Pod \"\" is invalid: metadata.name: Required value: name or generateName is required"
        );
        let e = prepare_create(
            &pods(),
            "ns",
            body(json!({"metadata": {"name": "Bad_Name"}})),
            2,
        )
        .unwrap_err();
        assert_eq!(e.reason, "Invalid");
        assert!(e.message.starts_with("Pod \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"));
        let e = prepare_create(
            &pods(),
            "ns",
            body(json!({"metadata": {"name": "p", "namespace": "other"}})),
            2,
        )
        .unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (400, "BadRequest"));
        let e = prepare_create(
            &pods(),
            "ns",
            body(json!({"kind": "ConfigMap", "metadata": {"name": "p"}})),
            2,
        )
        .unwrap_err();
        assert_eq!(e.code, 400);
        let e = prepare_create(
            &pods(),
            "ns",
            body(json!({"metadata": {"name": "p", "labels": {"a": 1}}})),
            2,
        )
        .unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message
                .starts_with("Pod in version \"v1\" cannot be handled as a Pod:")
        );
        let e = decode_body(&pods(), b"{not json").unwrap_err();
        assert_eq!(e.code, 400);
    }

    #[test]
    fn update_checks_precondition_and_bumps_generation() {
        let res = pods();
        let (_, old) = prepare_create(
            &res,
            "ns",
            body(json!({"metadata": {"name": "p"}, "spec": {"a": 1}})),
            2,
        )
        .unwrap();
        let e = prepare_update(
            &res,
            &old,
            body(json!({"metadata": {"name": "p", "resourceVersion": "1"}})),
            3,
            UpdateMode::Main,
        )
        .unwrap_err();
        assert_eq!(e.code, 409);
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on pods \"p\": the object has been modified; please apply your changes to the latest version and try again"
        );
        let UpdateOutcome::Write(new) = prepare_update(
            &res,
            &old,
            body(json!({"metadata": {"name": "p", "resourceVersion": "2"}, "spec": {"a": 2}})),
            3,
            UpdateMode::Main,
        )
        .unwrap() else {
            panic!("expected a write")
        };
        let v = new.to_value();
        assert_eq!(v["metadata"]["generation"], 2);
        assert_eq!(v["metadata"]["resourceVersion"], "3");
        assert_eq!(v["metadata"]["uid"].as_str(), Some(old.uid.as_str()));
        // Labels only: no generation bump.
        let UpdateOutcome::Write(new2) = prepare_update(
            &res,
            &new,
            body(json!({"metadata": {"name": "p", "labels": {"x": "y"}}, "spec": {"a": 2}})),
            4,
            UpdateMode::Main,
        )
        .unwrap() else {
            panic!("expected a write")
        };
        assert_eq!(new2.to_value()["metadata"]["generation"], 2);
        // Same content: no-op.
        assert!(matches!(
            prepare_update(
                &res,
                &new2,
                new2.to_value().as_object().unwrap().clone(),
                5,
                UpdateMode::Main
            )
            .unwrap(),
            UpdateOutcome::Unchanged
        ));
    }

    #[test]
    fn status_subresource_separates_status() {
        let res = pods();
        let (_, old) = prepare_create(&res, "ns", body(json!({"metadata": {"name": "p"}, "spec": {"a": 1}, "status": {"phase": "Pending"}})), 2).unwrap();
        // Main update cannot change status.
        let UpdateOutcome::Write(n) = prepare_update(&res, &old, body(json!({"metadata": {"name": "p"}, "spec": {"a": 2}, "status": {"phase": "Running"}})), 3, UpdateMode::Main).unwrap() else {
            panic!("expected a write")
        };
        assert_eq!(n.to_value()["status"]["phase"], "Pending");
        // Status update changes only status.
        let UpdateOutcome::Write(s) = prepare_update(&res, &n, body(json!({"metadata": {"name": "p"}, "spec": {"a": 9}, "status": {"phase": "Running"}})), 4, UpdateMode::Status).unwrap() else {
            panic!("expected a write")
        };
        let v = s.to_value();
        assert_eq!(v["status"]["phase"], "Running");
        assert_eq!(v["spec"]["a"], 2);
        assert_eq!(s.field("status.phase"), Some("Running"));
    }

    #[test]
    fn delete_with_finalizers_marks_then_removes() {
        let res = pods();
        let (_, old) = prepare_create(
            &res,
            "ns",
            body(json!({"metadata": {"name": "p", "finalizers": ["x"]}})),
            2,
        )
        .unwrap();
        let DeleteOutcome::MarkDeleting(marked) =
            prepare_delete(&res, &old, &Preconditions::default(), 3).unwrap()
        else {
            panic!("expected mark")
        };
        assert!(marked.to_value()["metadata"]["deletionTimestamp"].is_string());
        assert!(matches!(
            prepare_delete(&res, &marked, &Preconditions::default(), 4).unwrap(),
            DeleteOutcome::AlreadyDeleting
        ));
        let mut b = marked.to_value();
        b["metadata"]["finalizers"] = json!([]);
        assert!(matches!(
            prepare_update(
                &res,
                &marked,
                b.as_object().unwrap().clone(),
                4,
                UpdateMode::Main
            )
            .unwrap(),
            UpdateOutcome::Delete(_)
        ));
        let e = prepare_delete(
            &res,
            &old,
            &Preconditions {
                uid: Some("nope".into()),
                resource_version: None,
            },
            3,
        )
        .unwrap_err();
        assert_eq!(e.code, 409);
        assert!(
            e.message
                .contains("Precondition failed: UID in precondition: nope")
        );
    }
}
