//! DELETE: preconditions and finalizers.

use serde_json::Value;

use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::StoredObject;

use super::*;

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
