//! Namespaces' own registry rules, as kube-apiserver's namespace strategy and storage have
//! them: every namespace is created `Active` with the `kubernetes` finalizer in
//! `spec.finalizers` (which only the `/finalize` subresource changes); a DELETE moves it to
//! `Terminating` (`deletionTimestamp`, `status.phase`) instead of removing it; it is removed
//! once `spec.finalizers` and `metadata.finalizers` are both empty (the namespace controller,
//! [`crate::controllers`], empties the first).

use serde_json::{Map, Value, json};

use super::delete_options::DeleteOptions;
use super::*;
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::StoredObject;

/// The finalizer of the namespace controller in `spec.finalizers`.
pub(crate) const KUBERNETES_FINALIZER: &str = "kubernetes";

/// The label kube-apiserver sets on every namespace to its name.
const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Whether `res` is the core `namespaces` resource.
pub(crate) fn is_namespace(res: &ResourceInfo) -> bool {
    res.group.is_empty() && res.plural == "namespaces"
}

/// `spec.finalizers` of a namespace's JSON.
pub(crate) fn spec_finalizers(obj: &Map<String, Value>) -> Vec<String> {
    super::delete::strings(obj.get("spec").and_then(|s| s.get("finalizers")))
}

fn set_spec_finalizers(obj: &mut Map<String, Value>, finalizers: Vec<String>) {
    let spec = obj.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    if let Value::Object(spec) = spec {
        if finalizers.is_empty() {
            spec.remove("finalizers");
        } else {
            spec.insert("finalizers".into(), Value::from(finalizers));
        }
    }
}

pub(crate) fn set_name_label(obj: &mut Map<String, Value>, name: &str) {
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Value::Object(l) = labels {
            l.insert(NAME_LABEL.into(), Value::String(name.to_string()));
        }
    }
}

/// `PrepareForCreate`: the `kubernetes` finalizer appended when missing, `status` reset to
/// `{"phase": "Active"}`, the name label set.
pub(crate) fn prepare_create(obj: &mut Map<String, Value>, name: &str) {
    let mut f = spec_finalizers(obj);
    if !f.iter().any(|x| x == KUBERNETES_FINALIZER) {
        f.push(KUBERNETES_FINALIZER.into());
    }
    set_spec_finalizers(obj, f);
    obj.insert("status".into(), json!({"phase": "Active"}));
    set_name_label(obj, name);
}

/// `PrepareForUpdate`: a main-resource update keeps the stored `spec.finalizers` (only
/// `/finalize` changes them); `status` is kept by the status-subresource rule already.
pub(crate) fn prepare_update(
    mode: UpdateMode,
    old: &Map<String, Value>,
    new: &mut Map<String, Value>,
    name: &str,
) {
    if mode == UpdateMode::Main {
        set_spec_finalizers(new, spec_finalizers(old));
    }
    if mode != UpdateMode::Status {
        set_name_label(new, name);
    }
}

/// A DELETE of a namespace (kube's namespace storage `Delete`): the first one sets
/// `deletionTimestamp` and `status.phase: Terminating` (and the garbage-collection finalizer
/// the options ask for) and keeps the namespace; later ones remove it only once
/// `spec.finalizers` is empty, as any object with its `metadata.finalizers`.
pub(crate) fn prepare_delete(
    res: &ResourceInfo,
    old: &StoredObject,
    opts: &DeleteOptions,
    rev: u64,
) -> Result<DeleteOutcome, ApiError> {
    check_preconditions(res, old, &opts.preconditions)?;
    let Value::Object(mut obj) = old.to_value() else {
        return Err(ApiError::internal("stored object is not a JSON object"));
    };
    let meta = metadata_mut(res, &mut obj)?;
    if !meta.contains_key("deletionTimestamp") {
        meta.insert("deletionTimestamp".into(), Value::String(now_rfc3339()));
        if let Some(f) = gc_finalizers(res, &finalizers_of(meta), opts) {
            if f.is_empty() {
                meta.remove("finalizers");
            } else {
                meta.insert("finalizers".into(), Value::from(f));
            }
        }
        meta.insert("resourceVersion".into(), Value::String(rev.to_string()));
        let status = obj.entry("status").or_insert_with(|| json!({}));
        if !status.is_object() {
            *status = json!({});
        }
        if let Value::Object(s) = status {
            s.insert("phase".into(), Value::String("Terminating".into()));
        }
        return Ok(DeleteOutcome::MarkDeleting(finish(
            res,
            obj,
            &old.namespace,
            &old.name,
            &old.uid,
            rev,
        )));
    }
    if !spec_finalizers(&obj).is_empty() {
        return Ok(DeleteOutcome::AlreadyDeleting);
    }
    super::prepare_delete(res, old, opts, rev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::test_util::{body, res};
    use crate::objects::{prepare_create, prepare_update};

    #[test]
    fn namespace_is_created_active_and_deleted_in_two_steps() {
        let ns = res("namespaces");
        let (_, created) =
            prepare_create(&ns, "", body(json!({"metadata": {"name": "x"}})), 2).unwrap();
        let v = created.to_value();
        assert_eq!(v["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(v["status"]["phase"], "Active");
        assert_eq!(v["metadata"]["labels"][NAME_LABEL], "x");
        let DeleteOutcome::MarkDeleting(t) =
            prepare_delete(&ns, &created, &DeleteOptions::default(), 3).unwrap()
        else {
            panic!("expected Terminating")
        };
        let tv = t.to_value();
        assert_eq!(tv["status"]["phase"], "Terminating");
        assert!(tv["metadata"]["deletionTimestamp"].is_string());
        assert!(tv["metadata"].get("deletionGracePeriodSeconds").is_none());
        assert!(matches!(
            prepare_delete(&ns, &t, &DeleteOptions::default(), 4).unwrap(),
            DeleteOutcome::AlreadyDeleting
        ));
        // A main update cannot drop the kubernetes finalizer.
        let mut b = tv.as_object().unwrap().clone();
        b["spec"] = json!({});
        b["metadata"]["labels"] = json!({"a": "b"});
        b["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("resourceVersion");
        let UpdateOutcome::Write(u) =
            prepare_update(&ns, &t, b.clone(), 4, UpdateMode::Main).unwrap()
        else {
            panic!("expected a write")
        };
        assert_eq!(u.to_value()["spec"]["finalizers"], json!(["kubernetes"]));
        // /finalize does; with no finalizer left the namespace goes.
        let UpdateOutcome::Delete { .. } =
            prepare_update(&ns, &u, b, 5, UpdateMode::Finalize).unwrap()
        else {
            panic!("expected the namespace to go")
        };
    }
}
