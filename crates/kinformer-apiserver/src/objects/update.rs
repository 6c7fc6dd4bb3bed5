//! UPDATE: preconditions, immutable metadata, status subresource, generation, no-op detection.

use serde_json::{Map, Value};

use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::StoredObject;

use super::*;

/// Which part of an object an update writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpdateMode {
    /// The main resource: `status` is kept from the stored object when the resource has a
    /// status subresource.
    Main,
    /// The `/status` subresource: only `status` changes.
    Status,
    /// Storage-level write (direct Rust API): the object is stored as given.
    Raw,
    /// The `/scale` subresource: as [`UpdateMode::Main`] (the scale's replicas were written
    /// into the object); admission sees the write as one of the `Scale`.
    Scale,
    /// A namespace's `/finalize` subresource: as [`UpdateMode::Main`], but `spec.finalizers`
    /// is taken from the body ([`super::namespace`]).
    Finalize,
}

/// What an update resolves to.
#[derive(Debug)]
pub(crate) enum UpdateOutcome {
    /// Store this new version.
    Write(Box<StoredObject>),
    /// Nothing changed: the stored object stays (no revision is used).
    Unchanged,
    /// The last finalizer was removed from an object being deleted: it is deleted, as
    /// kube-apiserver does (its update is not persisted, so `response` — the object as updated
    /// — keeps the previous resourceVersion, and the DELETED event carries `last`: the previously
    /// stored state, finalizers still listed, at the deletion's revision).
    Delete {
        /// What the update request is answered with.
        response: Box<StoredObject>,
        /// The DELETED event's object.
        last: Box<StoredObject>,
    },
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
/// Tests only: the server writes through [`prepare_update_by`].
#[cfg(test)]
pub(crate) fn prepare_update(
    res: &ResourceInfo,
    old: &StoredObject,
    new: Map<String, Value>,
    rev: u64,
    mode: UpdateMode,
) -> Result<UpdateOutcome, ApiError> {
    prepare_update_by(res, old, new, rev, mode, None)
}

/// [`prepare_update`] by a field manager: with a `writer`, `metadata.managedFields` are
/// maintained for its Update operation ([`super::managed_fields`]); without one they are
/// stored as given.
pub(crate) fn prepare_update_by(
    res: &ResourceInfo,
    old: &StoredObject,
    new: Map<String, Value>,
    rev: u64,
    mode: UpdateMode,
    writer: Option<&Writer>,
) -> Result<UpdateOutcome, ApiError> {
    prepare(res, old, new, rev, mode, writer, false)
}

/// [`prepare_update`] of the result of a server-side apply ([`super::apply::apply`]): its
/// `managedFields` are kept as computed, a `/status` apply included.
pub(crate) fn prepare_applied_update(
    res: &ResourceInfo,
    old: &StoredObject,
    new: Map<String, Value>,
    rev: u64,
    mode: UpdateMode,
) -> Result<UpdateOutcome, ApiError> {
    prepare(res, old, new, rev, mode, None, true)
}

/// Puts back in `new` what this write keeps from the stored object (everything but `status`
/// for a `/status` write; `status` for a main write when the resource has a status
/// subresource), before it is validated: an object is validated as it will be stored, as
/// kube-apiserver validates it after its strategy's `PrepareForUpdate` (a status write is not
/// refused for a spec it cannot change). The envelope (`apiVersion`, `kind`, `metadata`) stays
/// the body's, for the checks of its name and resourceVersion.
fn keep_what_the_write_cannot_change(
    res: &ResourceInfo,
    mode: UpdateMode,
    old: &Map<String, Value>,
    new: &mut Map<String, Value>,
) {
    let envelope = |k: &str| matches!(k, "apiVersion" | "kind" | "metadata");
    match mode {
        UpdateMode::Status => {
            new.retain(|k, _| k == "status" || envelope(k));
            for (k, v) in old {
                if k != "status" && !envelope(k) {
                    new.insert(k.clone(), v.clone());
                }
            }
        }
        UpdateMode::Main | UpdateMode::Scale | UpdateMode::Finalize if res.status_subresource => {
            match old.get("status") {
                Some(s) => new.insert("status".into(), s.clone()),
                None => new.remove("status"),
            };
        }
        _ => {}
    }
}

fn prepare(
    res: &ResourceInfo,
    old: &StoredObject,
    mut new: Map<String, Value>,
    rev: u64,
    mode: UpdateMode,
    writer: Option<&Writer>,
    applied: bool,
) -> Result<UpdateOutcome, ApiError> {
    check_type_meta(res, &new)?;
    let applied_fields = new
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .cloned()
        .filter(|_| applied);
    let Value::Object(old_obj) = old.to_value() else {
        return Err(ApiError::internal("stored object is not a JSON object"));
    };
    if mode != UpdateMode::Raw {
        normalize::normalize_body(res, &mut new);
        fields::drop_unknown(res, &mut new);
        defaults::apply_defaults(res, &mut new);
    }
    keep_what_the_write_cannot_change(res, mode, &old_obj, &mut new);
    if mode != UpdateMode::Raw && super::service::is_service(res) {
        super::service::keep_allocated(&old_obj, &mut new);
    }
    if mode != UpdateMode::Raw
        && (res.group.as_str(), res.plural.as_str()) == ("apps", "daemonsets")
    {
        super::pod_defaults::daemonset_updated(&old_obj, &mut new);
    }
    if mode != UpdateMode::Raw
        && let Some(schema) = &res.schema
    {
        crate::crd::apply_schema(res, schema, &mut new, Some(&old_obj))?;
    }
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
    let mut result = new;
    if mode == UpdateMode::Status {
        // a status write keeps the stored envelope too
        for k in ["apiVersion", "kind", "metadata"] {
            match old_obj.get(k) {
                Some(v) => result.insert(k.into(), v.clone()),
                None => result.remove(k),
            };
        }
    }
    if namespace::is_namespace(res) && mode != UpdateMode::Raw {
        namespace::prepare_update(mode, &old_obj, &mut result, &old.name);
    }
    set_type_meta(res, &mut result);
    if crate::crd::is_crd(res) && mode != UpdateMode::Raw {
        crate::crd::prepare(&mut result)?;
    }
    let old_meta = old_obj
        .get("metadata")
        .and_then(|m| m.as_object())
        .cloned()
        .unwrap_or_default();
    // compared in one version, as kube-apiserver compares an object stored in an earlier
    // version of its CRD after converting it: a change of apiVersion alone is not a change
    let unversioned = ["apiVersion", "metadata", "status"];
    let old_shown = crate::objects::served_map(res, &old_obj);
    let old_in_version = old_shown.as_ref().unwrap_or(&old_obj);
    let spec_changed = without(&result, &unversioned) != without(old_in_version, &unversioned);
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
            match applied_fields {
                Some(mf) => meta.insert("managedFields".into(), mf),
                None if applied => meta.remove("managedFields"),
                None => None,
            };
        }
    }
    if mode != UpdateMode::Raw {
        validate::validate_object(res, &result)?;
    }
    if let Some(w) = writer {
        // the fields compared in the version written through, as kube-apiserver's field
        // manager compares them
        managed_fields::update_managed_fields(res, Some(old_in_version), &mut result, w);
    }
    // converted to the storage version after the field manager, which records the fields
    // written in the version written through
    if mode != UpdateMode::Raw {
        super::prune_for_storage(res, &mut result);
    }
    if result == old_obj {
        return Ok(UpdateOutcome::Unchanged);
    }
    let deleting = old_meta.contains_key("deletionTimestamp");
    // A namespace also waits for its `spec.finalizers` (ShouldDeleteNamespaceDuringUpdate).
    let spec_finalized =
        !namespace::is_namespace(res) || namespace::spec_finalizers(&result).is_empty();
    let meta = metadata_mut(res, &mut result)?;
    if res.tracks_generation && spec_changed {
        let g = meta.get("generation").and_then(|g| g.as_i64()).unwrap_or(0);
        meta.insert("generation".into(), Value::from(g + 1));
    }
    let no_finalizers = meta
        .get("finalizers")
        .and_then(|f| f.as_array())
        .is_none_or(|f| f.is_empty())
        && spec_finalized;
    if deleting && no_finalizers {
        let response = finish(
            res,
            result,
            &old.namespace,
            &old.name,
            &old.uid,
            old.resource_version,
        );
        return Ok(UpdateOutcome::Delete {
            response: Box::new(response),
            last: Box::new(old.at_revision(rev)),
        });
    }
    meta.insert("resourceVersion".into(), Value::String(rev.to_string()));
    let obj = finish(res, result, &old.namespace, &old.name, &old.uid, rev);
    Ok(UpdateOutcome::Write(Box::new(obj)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::prepare_create;
    use crate::objects::test_util::{body, pods};
    use crate::resource::Scope;
    use serde_json::json;

    #[test]
    fn update_checks_precondition_and_bumps_generation() {
        let res = pods();
        let (_, old) = prepare_create(
            &res,
            "ns",
            body(json!({"metadata": {"name": "p"}, "spec": {"activeDeadlineSeconds": 1}})),
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
            body(json!({"metadata": {"name": "p", "resourceVersion": "2"}, "spec": {"activeDeadlineSeconds": 2}})),
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
            body(json!({"metadata": {"name": "p", "labels": {"x": "y"}}, "spec": {"activeDeadlineSeconds": 2}})),
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
    fn a_custom_resource_is_validated_as_it_will_be_stored() {
        let mut res =
            ResourceInfo::new("example.com", "v1", "Widget", "widgets", Scope::Namespaced);
        res.status_subresource = true;
        res.schema = Some(std::sync::Arc::new(
            json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}},
                "status": {"type": "object", "properties": {"note": {"type": "string", "maxLength": 3}}}
            }}),
        ));
        let (_, old) = prepare_create(
            &res,
            "ns",
            body(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"name": "abc"}, "status": {"note": "ok"}})),
            2,
        )
        .unwrap();
        let write = |spec: Value, status: Value, mode| {
            prepare_update(
                &res,
                &old,
                body(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": spec, "status": status})),
                3,
                mode,
            )
        };
        // a status write with a spec it cannot change: the stored spec is what is checked
        let Ok(UpdateOutcome::Write(s)) = write(
            json!({"name": "far too long"}),
            json!({"note": "new"}),
            UpdateMode::Status,
        ) else {
            panic!("expected a write")
        };
        assert_eq!(s.to_value()["spec"]["name"], "abc");
        assert_eq!(s.to_value()["status"]["note"], "new");
        assert!(
            write(
                json!({"name": "abc"}),
                json!({"note": "far too long"}),
                UpdateMode::Status
            )
            .is_err()
        );
        // a main write with a status it cannot change, and the other way round
        assert!(
            write(
                json!({"name": "xyz"}),
                json!({"note": "far too long"}),
                UpdateMode::Main
            )
            .is_ok()
        );
        assert!(
            write(
                json!({"name": "far too long"}),
                json!({"note": "ok"}),
                UpdateMode::Main
            )
            .is_err()
        );
    }

    #[test]
    fn status_subresource_separates_status() {
        let res = pods();
        let (_, old) = prepare_create(&res, "ns", body(json!({"metadata": {"name": "p"}, "spec": {"activeDeadlineSeconds": 1}, "status": {"phase": "Pending"}})), 2).unwrap();
        // Main update cannot change status.
        let UpdateOutcome::Write(n) = prepare_update(&res, &old, body(json!({"metadata": {"name": "p"}, "spec": {"activeDeadlineSeconds": 2}, "status": {"phase": "Running"}})), 3, UpdateMode::Main).unwrap() else {
            panic!("expected a write")
        };
        assert_eq!(n.to_value()["status"]["phase"], "Pending");
        // Status update changes only status.
        let UpdateOutcome::Write(s) = prepare_update(&res, &n, body(json!({"metadata": {"name": "p"}, "spec": {"activeDeadlineSeconds": 9}, "status": {"phase": "Running"}})), 4, UpdateMode::Status).unwrap() else {
            panic!("expected a write")
        };
        let v = s.to_value();
        assert_eq!(v["status"]["phase"], "Running");
        assert_eq!(v["spec"]["activeDeadlineSeconds"], 2);
        assert_eq!(s.field("status.phase"), Some("Running"));
    }
}
