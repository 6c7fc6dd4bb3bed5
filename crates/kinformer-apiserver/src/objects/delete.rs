//! DELETE: preconditions and finalizers.

use serde_json::Value;

use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::StoredObject;

use super::*;

/// Preconditions of a DELETE (`DeleteOptions.preconditions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Preconditions {
    /// Required `metadata.uid`.
    pub uid: Option<String>,
    /// Required `metadata.resourceVersion`.
    pub resource_version: Option<String>,
}

/// What a delete resolves to.
#[derive(Debug)]
pub(crate) enum DeleteOutcome {
    /// Remove the object; this is its final state (carrying the deletion revision).
    Remove(StoredObject),
    /// The object has finalizers: it was marked with `deletionTimestamp` (this new version).
    MarkDeleting(StoredObject),
    /// Already marked for deletion; nothing changes.
    AlreadyDeleting,
}

/// Applies a delete of `old` at revision `rev`, checking preconditions (409 Conflict).
pub(crate) fn prepare_delete(
    res: &ResourceInfo,
    old: &StoredObject,
    pre: &Preconditions,
    rev: u64,
) -> Result<DeleteOutcome, ApiError> {
    if let Some(uid) = &pre.uid
        && *uid != old.uid
    {
        return Err(ApiError::conflict_kind(
            res,
            &old.name,
            &format!(
                "the UID in the precondition ({}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                uid, old.uid
            ),
        ));
    }
    if let Some(rv) = &pre.resource_version
        && *rv != old.resource_version.to_string()
    {
        return Err(ApiError::conflict_kind(
            res,
            &old.name,
            &format!(
                "the ResourceVersion in the precondition ({}) does not match the ResourceVersion in record ({}). The object might have been modified",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::test_util::{body, pods};
    use crate::objects::{UpdateMode, UpdateOutcome, prepare_create, prepare_update};
    use serde_json::json;

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
        let UpdateOutcome::Delete { response, last } = prepare_update(
            &res,
            &marked,
            b.as_object().unwrap().clone(),
            4,
            UpdateMode::Main,
        )
        .unwrap() else {
            panic!("expected the update to delete")
        };
        // As kube-apiserver (e2e/diff "finalizers"): the PUT is answered with the object as
        // updated (no finalizers) at the previous resourceVersion; the DELETED event carries
        // the previous stored state (finalizer still listed) at the deletion's revision.
        let r = response.to_value();
        assert_eq!(r["metadata"]["resourceVersion"], "3");
        assert_eq!(response.resource_version, 3);
        assert!(r["metadata"].get("finalizers").is_none(), "{r}");
        let l = last.to_value();
        assert_eq!(l["metadata"]["resourceVersion"], "4");
        assert_eq!(last.resource_version, 4);
        assert_eq!(l["metadata"]["finalizers"], json!(["x"]));
        assert!(l["metadata"]["deletionTimestamp"].is_string());
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
        assert_eq!(
            e.message,
            format!(
                "Operation cannot be fulfilled on Pod \"p\": the UID in the precondition (nope) does not match the UID in record ({}). The object might have been deleted and then recreated",
                old.uid
            )
        );
    }

    /// kube-apiserver v1.35 (e2e/diff "conflict / delete-stale-precondition"): the delete path
    /// names the kind, not the resource, in the message and in `details.kind`.
    #[test]
    fn stale_resource_version_precondition_names_the_kind() {
        let res = pods();
        let (_, old) =
            prepare_create(&res, "ns", body(json!({"metadata": {"name": "a"}})), 5).unwrap();
        let e = prepare_delete(
            &res,
            &old,
            &Preconditions {
                uid: None,
                resource_version: Some("3".into()),
            },
            6,
        )
        .unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on Pod \"a\": the ResourceVersion in the precondition (3) does not match the ResourceVersion in record (5). The object might have been modified"
        );
        assert_eq!(e.details, Some(json!({"name": "a", "kind": "Pod"})));
    }
}
