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

/// Whether a response for `res` should be protobuf: the client's first acceptable media type
/// is protobuf (a plain one: `as=Table` and `as=PartialObjectMetadata` requests are answered
/// elsewhere) and the kind has a message.
pub(crate) fn wants_protobuf(accept: &str, res: &ResourceInfo) -> bool {
    let first = accept
        .split(',')
        .map(str::trim)
        .find(|m| !m.is_empty() && !m.contains("as="));
    first.is_some_and(is_protobuf) && decodable(res)
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
}
