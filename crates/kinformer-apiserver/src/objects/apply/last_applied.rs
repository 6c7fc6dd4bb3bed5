//! kubectl's move from client-side to server-side apply, as kube-apiserver eases it for the
//! `kubectl` field manager only (`lastappliedmanager.go`, `lastappliedupdater.go`):
//! - conflicts on fields the `kubectl.kubernetes.io/last-applied-configuration` annotation
//!   records with the live values are not conflicts (the apply is forced for them);
//! - when the object keeps that annotation, it is rewritten to the applied configuration.

use serde_json::{Map, Value};

use super::merge::to_field_set;
use super::schema::MergeSchema;
use crate::objects::fieldset::{FieldSet, compare};
use crate::objects::managed_fields::without_managed;
use crate::resource::ResourceInfo;

/// The client-side apply annotation.
pub(crate) const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The manager kube-apiserver eases the migration for.
pub(crate) const KUBECTL: &str = "kubectl";

fn annotation(obj: &Map<String, Value>) -> Option<&str> {
    obj.get("metadata")?
        .get("annotations")?
        .get(ANNOTATION)?
        .as_str()
        .filter(|s| !s.is_empty())
}

/// The fields the live object's last-applied annotation still holds with the live values
/// (`allowedConflictsFromLastApplied`); `None` without a usable annotation.
pub(crate) fn allowed_conflicts(
    res: &ResourceInfo,
    schema: &dyn MergeSchema,
    live: &Map<String, Value>,
) -> Option<FieldSet> {
    let last: Map<String, Value> = serde_json::from_str(annotation(live)?).ok()?;
    if last.get("apiVersion").and_then(|v| v.as_str()) != Some(res.api_version().as_str()) {
        return None;
    }
    let cmp = compare(schema, &last, &without_managed(live));
    Some(
        to_field_set(schema, &last)
            .difference(&cmp.modified)
            .difference(&cmp.added)
            .difference(&cmp.removed),
    )
}

/// Rewrites the result's last-applied annotation, if it has one, to `config` (without the
/// annotation), encoded as kube-apiserver encodes it.
pub(crate) fn update_annotation(out: &mut Map<String, Value>, config: &Map<String, Value>) {
    if annotation(out).is_none() {
        return;
    }
    let mut applied = config.clone();
    if let Some(Value::Object(meta)) = applied.get_mut("metadata")
        && let Some(Value::Object(ann)) = meta.get_mut("annotations")
    {
        ann.remove(ANNOTATION);
    }
    let text = format!("{}\n", Value::Object(applied));
    if let Some(Value::Object(meta)) = out.get_mut("metadata")
        && let Some(Value::Object(ann)) = meta.get_mut("annotations")
    {
        ann.insert(ANNOTATION.into(), Value::String(text));
    }
}
