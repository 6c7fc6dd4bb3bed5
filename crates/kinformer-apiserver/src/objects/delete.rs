//! DELETE: preconditions and finalizers.

use serde_json::Value;

use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::StoredObject;

use super::delete_options::{DeleteOptions, Propagation};
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

/// The finalizer kube-apiserver adds for `propagationPolicy: Orphan`.
pub(crate) const ORPHAN_FINALIZER: &str = "orphan";
/// The finalizer kube-apiserver adds for `propagationPolicy: Foreground`.
pub(crate) const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// The propagation a resource's objects get when a DELETE names none
/// (`DefaultGarbageCollectionPolicy`): orphan for `batch/v1` Jobs, kept for backwards
/// compatibility; background for everything else this server serves (the legacy
/// `extensions/v1beta1` and `apps/v1beta*` versions that also default to orphan are not served).
fn default_propagation(res: &ResourceInfo) -> Propagation {
    if res.group == "batch" && res.version == "v1" && res.plural == "jobs" {
        Propagation::Orphan
    } else {
        Propagation::Background
    }
}

/// `shouldOrphanDependents` and `shouldDeleteDependents` of kube-apiserver's registry: an
/// explicit option wins, then a garbage-collection finalizer already on the object, then the
/// resource's default.
fn wanted_propagation(
    res: &ResourceInfo,
    finalizers: &[String],
    opts: &DeleteOptions,
) -> Propagation {
    if let Some(orphan) = opts.orphan_dependents {
        return if orphan {
            Propagation::Orphan
        } else {
            Propagation::Background
        };
    }
    if let Some(p) = opts.propagation {
        return p;
    }
    for f in finalizers {
        if f == ORPHAN_FINALIZER {
            return Propagation::Orphan;
        }
        if f == FOREGROUND_FINALIZER {
            return Propagation::Foreground;
        }
    }
    default_propagation(res)
}

/// The finalizers an object gets on DELETE (`deletionFinalizersForGarbageCollection`): both
/// garbage-collection finalizers removed, then `orphan` or `foregroundDeletion` added as the
/// propagation says; `None` when the set does not change.
pub(crate) fn gc_finalizers(
    res: &ResourceInfo,
    finalizers: &[String],
    opts: &DeleteOptions,
) -> Option<Vec<String>> {
    let wanted = wanted_propagation(res, finalizers, opts);
    let mut out: Vec<String> = finalizers
        .iter()
        .filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER)
        .cloned()
        .collect();
    match wanted {
        Propagation::Orphan => out.push(ORPHAN_FINALIZER.into()),
        Propagation::Foreground => out.push(FOREGROUND_FINALIZER.into()),
        Propagation::Background => {}
    }
    let old: std::collections::BTreeSet<&String> = finalizers.iter().collect();
    let new: std::collections::BTreeSet<&String> = out.iter().collect();
    (old != new).then_some(out)
}

/// `metadata.finalizers` of an object's JSON metadata.
pub(crate) fn finalizers_of(meta: &serde_json::Map<String, Value>) -> Vec<String> {
    strings(meta.get("finalizers"))
}

/// The strings of a JSON list (`finalizers`, `spec.finalizers`); none for anything else.
pub(crate) fn strings(list: Option<&Value>) -> Vec<String> {
    list.and_then(|f| f.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Checks a DELETE's preconditions against the stored object (409 Conflict).
pub(crate) fn check_preconditions(
    res: &ResourceInfo,
    old: &StoredObject,
    pre: &Preconditions,
) -> Result<(), ApiError> {
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
    Ok(())
}

/// Applies a delete of `old` at revision `rev`, checking preconditions (409 Conflict).
///
/// As kube-apiserver's registry: the garbage-collection finalizers are set from the options
/// first (`orphan` for Orphan, `foregroundDeletion` for Foreground, whether or not the object
/// has dependents); an object left with any finalizer is only marked (`deletionTimestamp`,
/// `deletionGracePeriodSeconds: 0`, `generation` bumped on the first mark), one without is
/// removed. A second DELETE of an object being deleted may still switch its
/// garbage-collection finalizer.
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
    let finalizers = finalizers_of(meta);
    let changed = gc_finalizers(res, &finalizers, opts);
    let pending = match &changed {
        Some(f) => !f.is_empty(),
        None => !finalizers.is_empty(),
    };
    if let Some(f) = &changed {
        if f.is_empty() {
            meta.remove("finalizers");
        } else {
            meta.insert("finalizers".into(), Value::from(f.clone()));
        }
    }
    if pending {
        let deleting = meta.contains_key("deletionTimestamp");
        if deleting && changed.is_none() {
            return Ok(DeleteOutcome::AlreadyDeleting);
        }
        if !deleting {
            meta.insert("deletionTimestamp".into(), Value::String(now_rfc3339()));
            if res.tracks_generation {
                let g = meta.get("generation").and_then(|g| g.as_i64()).unwrap_or(0);
                meta.insert("generation".into(), Value::from(g + 1));
            }
        }
        meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
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
            prepare_delete(&res, &old, &DeleteOptions::default(), 3).unwrap()
        else {
            panic!("expected mark")
        };
        assert!(marked.to_value()["metadata"]["deletionTimestamp"].is_string());
        assert!(matches!(
            prepare_delete(&res, &marked, &DeleteOptions::default(), 4).unwrap(),
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
            &DeleteOptions {
                preconditions: Preconditions {
                    uid: Some("nope".into()),
                    resource_version: None,
                },
                ..Default::default()
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

    #[test]
    fn propagation_sets_the_garbage_collection_finalizers() {
        let res = pods();
        let (_, old) = prepare_create(
            &res,
            "ns",
            body(json!({"metadata": {"name": "p", "finalizers": ["x"]}})),
            2,
        )
        .unwrap();
        let fg = DeleteOptions::propagation(Propagation::Foreground);
        let DeleteOutcome::MarkDeleting(marked) = prepare_delete(&res, &old, &fg, 3).unwrap()
        else {
            panic!("expected mark")
        };
        assert_eq!(
            marked.to_value()["metadata"]["finalizers"],
            json!(["x", "foregroundDeletion"])
        );
        // A second delete switches the policy; one with none keeps what is there.
        let orphan = DeleteOptions::propagation(Propagation::Orphan);
        let DeleteOutcome::MarkDeleting(switched) =
            prepare_delete(&res, &marked, &orphan, 4).unwrap()
        else {
            panic!("expected mark")
        };
        assert_eq!(
            switched.to_value()["metadata"]["finalizers"],
            json!(["x", "orphan"])
        );
        assert!(matches!(
            prepare_delete(&res, &switched, &DeleteOptions::default(), 5).unwrap(),
            DeleteOutcome::AlreadyDeleting
        ));
        // No finalizer but Orphan: marked, not removed; Background: removed.
        let (_, bare) =
            prepare_create(&res, "ns", body(json!({"metadata": {"name": "b"}})), 6).unwrap();
        assert!(matches!(
            prepare_delete(&res, &bare, &orphan, 7).unwrap(),
            DeleteOutcome::MarkDeleting(_)
        ));
        assert!(matches!(
            prepare_delete(&res, &bare, &DeleteOptions::default(), 7).unwrap(),
            DeleteOutcome::Remove(_)
        ));
        // batch/v1 Jobs default to orphan.
        let jobs = crate::objects::test_util::res("jobs");
        let (_, job) = prepare_create(
            &jobs,
            "ns",
            body(json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}}}})),
            8,
        )
        .unwrap();
        let DeleteOutcome::MarkDeleting(j) =
            prepare_delete(&jobs, &job, &DeleteOptions::default(), 9).unwrap()
        else {
            panic!("expected mark")
        };
        assert_eq!(j.to_value()["metadata"]["finalizers"], json!(["orphan"]));
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
            &DeleteOptions {
                preconditions: Preconditions {
                    uid: None,
                    resource_version: Some("3".into()),
                },
                ..Default::default()
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
