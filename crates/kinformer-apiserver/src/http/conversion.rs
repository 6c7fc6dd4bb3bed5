//! Custom resources converted by their CRD's conversion webhook (`spec.conversion.strategy:
//! Webhook`), as kube-apiserver 1.36 converts them: objects are stored in the CRD's storage
//! version; one served in another version is sent to the webhook in a `ConversionReview` each
//! time the server reads it from storage for that version (a GET, each item of a LIST, each
//! watch event, the answer of every write) and each time a write through that version is
//! stored (the object written, converted to the storage version; a dry run too, and back).
//!
//! A write through a converted version is made over the live object as that version shows it
//! (read and converted first, pinned in the write's [`crate::api::Gate`]; a write that finds
//! the object changed since is decided again), so an update, a patch or an apply sees and
//! keeps what the client sees.
//!
//! The webhook's answer is checked as kube-apiserver checks it, in its words (`conversion
//! webhook for <group>/<version>, Kind=<Kind> failed: ...`, `... returned invalid object: must
//! have the same name: a != b`): the review's kind and uid, `result.status`, one object back in
//! the version asked for, of the same kind, name, namespace and uid; its metadata is the
//! original's but for `labels` and `annotations`, which the webhook may change (validated).
//! A failure is a 500 `Status` without a reason, as there.
//!
//! Objects stored before the CRD's storage version changed stay in the version they were
//! written in until written again (as etcd keeps them): read through the new storage version,
//! they are converted too, and a write through it is decided over them converted.
//!
//! Not as kube-apiserver: `managedFields` entries of other versions are not recomputed through
//! the webhook (the server compares field sets as written, per version); in-process
//! `RunningServer` reads and writes of a converted version, and its reads of an object stored in
//! another version, are refused rather than converted (an in-process write through the storage
//! version, the garbage collector's among them, is decided over such an object as stored);
//! `/scale` of a converted version is served without conversion.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use serde_json::{Map, Value, json};

use crate::context::Context;
use crate::objects::rebuilt;
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::StoredObject;

/// How long a conversion webhook is waited for (kube-apiserver's webhook client default).
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How many objects of one list or watch batch are converted at once.
const AT_ONCE: usize = 8;

/// Whether objects of `res` go through a conversion webhook to be shown or stored.
pub(crate) fn by_webhook(res: &ResourceInfo) -> bool {
    res.conversion.is_some()
}

/// Stored objects of `res` as its version shows them (see the module's documentation),
/// in order; as they are when `res` needs no webhook.
pub(crate) async fn served(
    ctx: &Context,
    res: &ResourceInfo,
    objs: Vec<Arc<StoredObject>>,
) -> Result<Vec<Arc<StoredObject>>, ApiError> {
    if !by_webhook(res) {
        return Ok(objs);
    }
    futures::stream::iter(objs)
        .map(|o| served_one(ctx, res, o))
        .buffered(AT_ONCE)
        .try_collect()
        .await
}

/// One stored object of `res` as its version shows it (see [`served`]).
pub(crate) async fn served_one(
    ctx: &Context,
    res: &ResourceInfo,
    o: Arc<StoredObject>,
) -> Result<Arc<StoredObject>, ApiError> {
    let Some(webhook) = &res.conversion else {
        return Ok(o);
    };
    // most objects are stored in the version read through: nothing to parse or send
    if o.has_api_version(&res.api_version()) {
        return Ok(o);
    }
    let converted = convert(ctx, webhook, o.to_value(), &res.api_version()).await?;
    Ok(match converted {
        Some(v) => Arc::new(rebuilt(res, &o, &pruned(res.schema.as_deref(), v))),
        None => o,
    })
}

/// A conversion's result pruned by the structural schema of the version it is in, as
/// kube-apiserver prunes it (what the webhook added that the version does not declare is
/// dropped).
fn pruned(schema: Option<&Value>, mut v: Value) -> Value {
    if let (Some(schema), Some(m)) = (schema, v.as_object_mut()) {
        crate::objects::fields::prune_to_schema(schema, m);
    }
    v
}

/// An object a write through `res` decided (written in `res`'s version, carrying the storage
/// version's `apiVersion` as every decided object does) converted to the storage version:
/// what is stored.
pub(crate) async fn to_storage(
    ctx: &Context,
    res: &ResourceInfo,
    o: &Arc<StoredObject>,
) -> Result<Arc<StoredObject>, ApiError> {
    let Some(webhook) = &res.conversion else {
        return Ok(o.clone());
    };
    let mut v = o.to_value();
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), res.api_version().into());
    }
    let converted = convert(ctx, webhook, v, &res.stored_api_version()).await?;
    let storage_schema = res.storage_schema.as_deref().or(res.schema.as_deref());
    Ok(match converted {
        Some(v) => Arc::new(rebuilt(res, o, &pruned(storage_schema, v))),
        None => o.clone(),
    })
}

/// `obj` converted to `desired` by the webhook `webhook` (a CRD's `spec.conversion.webhook`);
/// `None` when it is in that version already (nothing is sent).
async fn convert(
    ctx: &Context,
    webhook: &Value,
    obj: Value,
    desired: &str,
) -> Result<Option<Value>, ApiError> {
    let from = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let only_type = |m: &Map<String, Value>| {
        m.len() == 2 && m.contains_key("kind") && m.contains_key("apiVersion")
    };
    if from == desired || obj.as_object().is_none_or(only_type) {
        return Ok(None);
    }
    let gvk = format!("{from}, Kind={kind}");
    let fail = |why: String| ApiError::new(500, "", format!("conversion webhook for {gvk} {why}"));
    let failed = |why: String| fail(format!("failed: {why}"));
    let Some(review_version) = review_version(webhook) else {
        return Err(ApiError::new(
            500,
            "",
            "no supported conversion review versions",
        ));
    };
    let uid = crate::objects::new_uid();
    let review = json!({
        "kind": "ConversionReview",
        "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": [&obj]},
    });
    let cc = webhook.get("clientConfig").unwrap_or(&Value::Null);
    let at = super::endpoints::endpoint_of(&ctx.api, cc).map_err(&failed)?;
    let ca = ca_bundle(cc);
    let body = serde_json::to_vec(&review).unwrap_or_default();
    let answer = ctx
        .webhooks
        .post_to(&ca, TIMEOUT, &at, body)
        .await
        .map_err(&failed)?;
    let mut objects = converted_objects(&answer, review_version, &uid).map_err(&failed)?;
    if objects.len() != 1 {
        return Err(fail(format!(
            "returned {} objects, expected 1",
            objects.len()
        )));
    }
    let Value::Object(mut converted) = objects.remove(0) else {
        return Err(fail(
            "returned invalid object at index 0: not a JSON object".into(),
        ));
    };
    let text = |m: &Map<String, Value>, k: &str| {
        m.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let got = text(&converted, "apiVersion");
    if got != desired {
        return Err(fail(format!(
            "returned invalid object at index 0: invalid groupVersion (expected {desired}, received {got})"
        )));
    }
    let got_kind = text(&converted, "kind");
    if got_kind != kind {
        return Err(fail(format!(
            "returned invalid object at index 0: invalid kind (expected {kind}, received {got_kind})"
        )));
    }
    let meta_of = |v: &Map<String, Value>, k: &str| {
        v.get("metadata")
            .and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let original = obj.as_object().cloned().unwrap_or_default();
    for (what, k) in [("name", "name"), ("namespace", "namespace"), ("UID", "uid")] {
        let (e, a) = (meta_of(&original, k), meta_of(&converted, k));
        if e != a {
            return Err(fail(format!(
                "returned invalid object: must have the same {what}: {e} != {a}"
            )));
        }
    }
    restore_metadata(&original, &mut converted)
        .map_err(|why| fail(format!("returned invalid metadata: {why}")))?;
    Ok(Some(Value::Object(converted)))
}

/// The `ConversionReview` version a webhook is sent: the first of its
/// `conversionReviewVersions` this server speaks (`v1beta1` or `v1`).
fn review_version(webhook: &Value) -> Option<&'static str> {
    webhook
        .get("conversionReviewVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(|v| match v.as_str() {
            Some("v1") => Some("v1"),
            Some("v1beta1") => Some("v1beta1"),
            _ => None,
        })
}

/// The PEM CA bundle of a `clientConfig` (empty: the system's roots).
fn ca_bundle(cc: &Value) -> Vec<u8> {
    crate::admission::webhook::call::ca_bundle(cc)
        .filter(|b| !b.trim_ascii().is_empty())
        .unwrap_or_default()
}

/// The converted objects of a `ConversionReview` answer to the review `uid` sent in
/// `version`, or why the answer is not one (kube-apiserver's words; a `v1beta1` answer's kind
/// and uid are not checked, as there).
fn converted_objects(answer: &[u8], version: &str, uid: &str) -> Result<Vec<Value>, String> {
    let review: Value = serde_json::from_slice(answer).map_err(|e| e.to_string())?;
    let s = |k: &str| review.get(k).and_then(Value::as_str).unwrap_or_default();
    if version == "v1" {
        let (api_version, kind) = (s("apiVersion"), s("kind"));
        if api_version != "apiextensions.k8s.io/v1" || kind != "ConversionReview" {
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {api_version}, Kind={kind}"
            ));
        }
    }
    let response = match review.get("response") {
        Some(r @ Value::Object(_)) => r,
        _ => return Err("no response provided".into()),
    };
    let got_uid = response
        .get("uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if version == "v1" && got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let result = response.get("result");
    let field = |k: &str| {
        result
            .and_then(|r| r.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    if field("status") != "Success" {
        if !field("message").is_empty() {
            return Err(field("message").to_string());
        }
        return Err(format!(
            "response.result.status was '{}', not 'Success'",
            field("status")
        ));
    }
    Ok(response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// kube-apiserver's `restoreObjectMeta`: the converted object's metadata becomes the
/// original's, but for the `labels` and `annotations` the webhook answered with (checked as
/// strings, validated when they changed; dropped when it answered none).
fn restore_metadata(
    original: &Map<String, Value>,
    converted: &mut Map<String, Value>,
) -> Result<(), String> {
    let answered = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(v) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(v)
            ));
        }
    };
    let mut meta = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        let theirs = match answered.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(v) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(v)
                ));
            }
        };
        let ours = match meta.get(field) {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(v) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in original object",
                    go_type(v)
                ));
            }
        };
        let mut changed = ours.len() != theirs.len();
        for (k, v) in theirs {
            if !v.is_string() {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            }
            changed |= ours.get(k) != Some(v);
        }
        if changed {
            let mut only = Map::new();
            only.insert(field.into(), Value::Object(theirs.clone()));
            let causes = if field == "labels" {
                crate::objects::validate::label_causes(&only)
            } else {
                // kube-apiserver names the path `metadata.annotation` here
                crate::objects::validate::annotation_causes(&only, "metadata.annotation")
            };
            let errs: Vec<String> = causes
                .into_iter()
                .map(|(path, _, message)| format!("{path}: {message}"))
                .collect();
            match errs.len() {
                0 => {}
                1 => return Err(errs[0].clone()),
                _ => return Err(format!("[{}]", errs.join(", "))),
            }
        }
        meta.insert(field.into(), Value::Object(theirs.clone()));
    }
    converted.insert("metadata".into(), Value::Object(meta));
    Ok(())
}

/// Go's `%T` of a JSON value decoded into an unstructured object.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests;
