//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) for every built-in kind, through
//! `kinformer-proto`'s schema-driven transcoder: request bodies are decoded into the JSON the
//! store keeps (as Go would decode them, zero values included), and responses (objects, lists,
//! watch frames) are encoded when the client's `Accept` puts protobuf first, as client-go and
//! kubectl do for built-in types. Custom resources have no protobuf form: a protobuf body for
//! one is 415 and their responses are JSON, as kube-apiserver answers.
//!
//! Each stored object version's message is encoded once, on first use by a protobuf client, and
//! kept beside its JSON ([`StoredObject::proto`](crate::store::StoredObject::proto)).

use bytes::Bytes;
use kinformer_proto::{Envelope, MessageRef, ProtoError};
use serde_json::{Map, Value};

use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::StoredObject;

pub(crate) use kinformer_proto::{MEDIA_TYPE, WATCH_MEDIA_TYPE};

fn bad(e: ProtoError) -> ApiError {
    ApiError::bad_request(format!("cannot decode protobuf body: {e}"))
}

/// Whether `content_type` is the Kubernetes protobuf media type.
pub(crate) fn is_protobuf(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(MEDIA_TYPE))
}

/// The protobuf message of `res`'s kind, if it has one (built-in kinds do, custom resources
/// do not).
pub(crate) fn message(res: &ResourceInfo) -> Option<MessageRef> {
    MessageRef::for_kind(&res.api_version(), &res.kind)
}

/// Whether protobuf bodies of `res` can be decoded.
pub(crate) fn decodable(res: &ResourceInfo) -> bool {
    message(res).is_some()
}

/// Decodes a protobuf body of `res` into its JSON form.
pub(crate) fn decode(res: &ResourceInfo, body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if !decodable(res) {
        return Err(ApiError::unsupported_body_media_type(&[
            "application/json",
            "application/yaml",
        ]));
    }
    let env = Envelope::parse(body).map_err(bad)?;
    let mut tm = Map::new();
    tm.insert("apiVersion".into(), env.api_version.into());
    tm.insert("kind".into(), env.kind.into());
    crate::objects::check_type_meta(res, &tm)?;
    let msg = env.message().map_err(bad)?;
    let json = kinformer_proto::typed_message_to_json(env.api_version, env.kind, msg, env.raw)
        .map_err(bad)?;
    serde_json::from_slice(&json).map_err(|e| bad(ProtoError::Json(e.to_string())))
}

/// Whether kube-apiserver's negotiation picks protobuf from `accept` among the plain media
/// types it serves: entries with `as=` (tables, metadata-only conversions, answered elsewhere)
/// and `q=0` are left out, the rest are taken by `q` (highest first, header order among
/// equals), unknown types are skipped, and the first of `application/json`,
/// `application/yaml`, `*/*`, `application/*` (JSON) or protobuf wins. An empty or unusable
/// header is JSON. This also decides the form of error `Status` bodies (e.g. `Accept:
/// text/html, application/vnd.kubernetes.protobuf` gets a protobuf 404, and
/// `application/vnd.kubernetes.protobuf;q=0.5, application/json` a JSON one, as
/// kube-apiserver 1.36 answers).
pub(crate) fn prefers_protobuf(accept: &str) -> bool {
    const JSON: [&str; 4] = [
        "application/json",
        "application/yaml",
        "*/*",
        "application/*",
    ];
    // the first entry of the highest weight: (q, protobuf)
    let mut best: Option<(f32, bool)> = None;
    for entry in accept.split(',') {
        let mut parts = entry.split(';').map(str::trim);
        let media = parts.next().unwrap_or("");
        let mut q = 1.0f32;
        let mut conversion = false;
        for param in parts {
            let (k, v) = param.split_once('=').unwrap_or((param, ""));
            match k.trim() {
                "as" => conversion = true,
                "q" => q = v.trim().parse().unwrap_or(1.0),
                _ => {}
            }
        }
        let protobuf = if media.eq_ignore_ascii_case(MEDIA_TYPE) {
            true
        } else if JSON.iter().any(|j| media.eq_ignore_ascii_case(j)) {
            false
        } else {
            continue;
        };
        if !conversion && q > 0.0 && best.is_none_or(|(b, _)| q > b) {
            best = Some((q, protobuf));
        }
    }
    best.is_some_and(|(_, protobuf)| protobuf)
}

/// Whether a response for `res` should be protobuf: [`prefers_protobuf`], and the kind has a
/// message.
pub(crate) fn wants_protobuf(accept: &str, res: &ResourceInfo) -> bool {
    prefers_protobuf(accept) && decodable(res)
}

/// kube-apiserver's 406 NotAcceptable for a request of a custom resource (which has no
/// protobuf form) whose `Accept` lists protobuf media types only; it answers JSON only when the
/// header also accepts it. A `metadata_only` request (answered as `PartialObjectMetadata`,
/// which has a protobuf form whatever the resource) is acceptable.
pub(crate) fn check_acceptable(
    accept: &str,
    res: &ResourceInfo,
    metadata_only: bool,
) -> Result<(), ApiError> {
    if decodable(res) || metadata_only || !protobuf_only(accept) {
        return Ok(());
    }
    Err(ApiError::not_acceptable())
}

/// Whether `accept` lists protobuf media types only (any parameters).
fn protobuf_only(accept: &str) -> bool {
    let mut entries = accept
        .split(',')
        .filter(|e| !e.trim().is_empty())
        .peekable();
    entries.peek().is_some() && entries.all(is_protobuf)
}

/// The message bytes of one stored object version (no envelope), encoded on first use.
fn stored_message(res: &ResourceInfo, o: &StoredObject) -> Option<Bytes> {
    o.proto
        .get_or_encode(|| {
            let msg = message(res)?;
            let v: Value = serde_json::from_slice(&o.bytes).ok()?;
            match kinformer_proto::message_from_json(msg, &v) {
                Ok(b) => Some(Bytes::from(b)),
                Err(e) => {
                    tracing::warn!(key = %o.key, error = %e, "stored object has no protobuf form; answering JSON");
                    None
                }
            }
        })
}

/// One stored object as a protobuf body; `None` when it has no protobuf form (the caller
/// answers JSON, which the client also accepts).
pub(crate) fn object_body(res: &ResourceInfo, o: &StoredObject) -> Option<Vec<u8>> {
    let raw = stored_message(res, o)?;
    Some(kinformer_proto::envelope(
        &res.api_version(),
        &res.kind,
        &raw,
    ))
}

/// A JSON object (an event's object, a bookmark, a `Status`) as a protobuf body.
pub(crate) fn json_body(json: &[u8]) -> Option<Vec<u8>> {
    let v: Value = serde_json::from_slice(json).ok()?;
    kinformer_proto::object_from_json(&v).ok()
}

/// A list of stored objects as a protobuf body; `None` when an item has no protobuf form.
pub(crate) fn list_body(
    res: &ResourceInfo,
    list_meta: &Value,
    items: &[std::sync::Arc<StoredObject>],
) -> Option<Vec<u8>> {
    let raws: Vec<Bytes> = items
        .iter()
        .map(|o| stored_message(res, o))
        .collect::<Option<_>>()?;
    let list = kinformer_proto::list_message(list_meta, raws.iter().map(|b| b.as_ref())).ok()?;
    Some(kinformer_proto::envelope(
        &res.api_version(),
        &res.list_kind(),
        &list,
    ))
}

/// One watch event whose object is JSON as a protobuf frame.
pub(crate) fn watch_frame(event_type: &str, object_json: &[u8]) -> Option<Vec<u8>> {
    let body = json_body(object_json)?;
    Some(kinformer_proto::watch_frame(event_type, &body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::test_util::res;

    #[test]
    fn a_protobuf_pod_decodes_as_go_would() {
        let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let body = kinformer_proto::object_from_json(&pod).unwrap();
        let obj = decode(&res("pods"), &body).unwrap();
        assert_eq!(obj["metadata"]["name"], "p");
        assert_eq!(obj["metadata"]["creationTimestamp"], Value::Null);
        assert_eq!(obj["spec"]["containers"][0]["image"], "nginx");
        // Go's zero values of non-omitempty fields: a struct is written even when empty
        assert_eq!(
            obj["spec"]["containers"][0]["resources"],
            serde_json::json!({})
        );
    }

    #[test]
    fn malformed_or_mistyped_bodies_are_400_and_custom_kinds_415() {
        let r = res("pods");
        for body in [&b"nope"[..], b"k8s\0\x0a\x7f", b"k8s\0\x0f"] {
            assert_eq!(decode(&r, body).unwrap_err().code, 400, "{body:?}");
        }
        let cm = kinformer_proto::object_from_json(
            &serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
        )
        .unwrap();
        assert_eq!(decode(&r, &cm).unwrap_err().code, 400);
        assert!(wants_protobuf(
            "application/vnd.kubernetes.protobuf, */*",
            &r
        ));
        assert!(wants_protobuf(
            "application/vnd.kubernetes.protobuf,application/json",
            &r
        ));
        assert!(!wants_protobuf("application/json, */*", &r));
        assert!(!wants_protobuf(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            &r
        ));
    }

    /// The answers of kube-apiserver v1.36.3 (e2e harness, 2026-11-27) to a GET of a missing
    /// pod under each header: which form its `Status` came in.
    #[test]
    fn negotiation_picks_protobuf_where_kube_apiserver_does() {
        let pb = MEDIA_TYPE;
        for accept in [
            pb.to_string(),
            format!("{pb}, application/json"),
            format!("text/html, {pb}"),
            format!("{pb};as=Table;g=meta.k8s.io;v=v1, {pb}"),
            format!("{pb};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,{pb}"),
        ] {
            assert!(prefers_protobuf(&accept), "{accept}");
        }
        for accept in [
            String::new(),
            "*/*".to_string(),
            format!("application/json, {pb}"),
            format!("{pb};q=0.5, application/json"),
            format!("{pb};as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
            // kinformer's and client-go's metadata-only lists
            format!(
                "{pb};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            ),
        ] {
            assert!(!prefers_protobuf(&accept), "{accept}");
        }
        assert!(protobuf_only(pb));
        assert!(protobuf_only(&format!(
            "{pb};as=Table;g=meta.k8s.io;v=v1, {pb}"
        )));
        assert!(!protobuf_only(&format!("{pb}, application/json")));
        assert!(!protobuf_only(""));
    }
}
