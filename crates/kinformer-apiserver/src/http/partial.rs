//! Metadata-only responses: `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`
//! on a list, `as=PartialObjectMetadata` on a get or a watch (what client-go's metadata client
//! and kube-rs's `PartialObjectMeta` requests send).
//!
//! As kube-apiserver (`asPartialObjectMetadata(List)` in the apiserver's response handlers):
//! each object becomes `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
//! "metadata":{...}}` with its whole `metadata` (managedFields included); a list becomes a
//! `PartialObjectMetadataList` whose items carry that kind too, with the list's
//! resourceVersion, continue token and remaining count; a watch sends every object (bookmarks
//! included) converted, and ERROR events' `Status` unchanged. The response is JSON whatever
//! encoding the clause names (this server answers every request in JSON).

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, header};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::list::ListPage;
use crate::store::StoredObject;

/// Items per response chunk of a metadata list.
const ITEMS_PER_CHUNK: usize = 256;

/// `Some(protobuf)` when `accept` asks for metadata only (see [`metadata_clause`]), with
/// whether to answer in protobuf: its first metadata clause names protobuf (client-go's
/// metadata client lists protobuf first, then JSON). For custom resources too:
/// kube-apiserver serves `PartialObjectMetadata`, a built-in message, in protobuf whatever
/// the resource.
pub(crate) fn metadata_request(accept: &str, list: bool) -> Option<bool> {
    let clause = metadata_clause(accept, list)?;
    let media = clause.split(';').next().unwrap_or_default();
    Some(crate::proto::is_protobuf(media.trim()))
}

/// The first clause of `accept` asking for metadata only: a list when `list`
/// (`as=PartialObjectMetadataList`), one object or watch events otherwise
/// (`as=PartialObjectMetadata`), in `meta.k8s.io/v1`.
fn metadata_clause(accept: &str, list: bool) -> Option<&str> {
    let want = if list {
        "as=PartialObjectMetadataList"
    } else {
        "as=PartialObjectMetadata"
    };
    accept.split(',').find(|clause| {
        let parts: Vec<&str> = clause.split(';').map(str::trim).collect();
        parts.contains(&want) && parts.contains(&"g=meta.k8s.io") && parts.contains(&"v=v1")
    })
}

/// `meta.k8s.io/v1`, the group and version of `PartialObjectMetadata(List)`.
const META_V1: &str = "meta.k8s.io/v1";

/// Only the `metadata` of a stored object, kept as its raw JSON.
#[derive(Deserialize)]
struct MetadataOnly<'a> {
    #[serde(borrow)]
    metadata: Option<&'a RawValue>,
}

/// Appends `object` (a stored object's JSON) as a `PartialObjectMetadata`.
fn push_metadata_object(buf: &mut BytesMut, object: &[u8]) {
    let meta = serde_json::from_slice::<MetadataOnly<'_>>(object)
        .ok()
        .and_then(|m| m.metadata)
        .map_or("{}", RawValue::get);
    buf.reserve(meta.len() + 72);
    buf.put_slice(br#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":"#);
    buf.put_slice(meta.as_bytes());
    buf.put_u8(b'}');
}

/// `object` (a stored object's JSON) as a `PartialObjectMetadata`.
pub(crate) fn metadata_object(object: &[u8]) -> Bytes {
    let mut buf = BytesMut::new();
    push_metadata_object(&mut buf, object);
    buf.freeze()
}

/// A response holding one object's `PartialObjectMetadata`: protobuf when `protobuf` (and
/// it encodes), JSON otherwise.
pub(crate) fn object_response(o: &StoredObject, protobuf: bool) -> Response {
    let json = metadata_object(&o.bytes);
    if protobuf && let Some(body) = crate::proto::json_body(&json) {
        return super::response::protobuf(200, body);
    }
    super::response::json_bytes(200, json)
}

/// The list metadata of `page`.
fn list_meta(page: &ListPage) -> serde_json::Map<String, serde_json::Value> {
    let mut meta = serde_json::Map::new();
    meta.insert(
        "resourceVersion".into(),
        page.resource_version.to_string().into(),
    );
    if let Some(c) = &page.continue_token {
        meta.insert("continue".into(), c.clone().into());
    }
    if let Some(n) = page.remaining_item_count {
        meta.insert("remainingItemCount".into(), n.into());
    }
    meta
}

/// `page` as a protobuf `PartialObjectMetadataList`; `None` when an item does not encode
/// (the caller answers JSON, which the client also accepts).
fn list_protobuf(page: &ListPage) -> Option<Vec<u8>> {
    let msg = kinformer_proto::MessageRef::for_kind(META_V1, "PartialObjectMetadata")?;
    let items: Vec<Vec<u8>> = page
        .items
        .iter()
        .map(|o| {
            let v: serde_json::Value = serde_json::from_slice(&metadata_object(&o.bytes)).ok()?;
            kinformer_proto::message_from_json(msg, &v).ok()
        })
        .collect::<Option<_>>()?;
    let meta = serde_json::Value::Object(list_meta(page));
    let list = kinformer_proto::list_message(&meta, items.iter().map(Vec::as_slice)).ok()?;
    Some(kinformer_proto::envelope(
        META_V1,
        "PartialObjectMetadataList",
        &list,
    ))
}

/// A `PartialObjectMetadataList` response for `page`: protobuf when `protobuf` (and every
/// item encodes), else JSON streamed in chunks.
pub(crate) fn list_response(page: ListPage, protobuf: bool) -> Response {
    if protobuf && let Some(body) = list_protobuf(&page) {
        return super::response::protobuf(200, body);
    }
    let meta = list_meta(&page);
    let head = serde_json::json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
    });
    let mut head = serde_json::to_vec(&head).unwrap_or_default();
    head.pop();
    head.extend_from_slice(br#","items":["#);
    let items: Arc<[Arc<StoredObject>]> = page.items.into();
    let chunks = items.len().div_ceil(ITEMS_PER_CHUNK);
    let body = futures::stream::iter(
        std::iter::once(Bytes::from(head))
            .chain((0..chunks).map(move |c| {
                let mut buf = BytesMut::new();
                let from = c * ITEMS_PER_CHUNK;
                for (i, o) in items[from..(from + ITEMS_PER_CHUNK).min(items.len())]
                    .iter()
                    .enumerate()
                {
                    if from + i > 0 {
                        buf.put_u8(b',');
                    }
                    push_metadata_object(&mut buf, &o.bytes);
                }
                buf.freeze()
            }))
            .chain(std::iter::once(Bytes::from_static(b"]}")))
            .map(Ok::<_, std::convert::Infallible>),
    );
    let mut r = Response::new(Body::from_stream(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `accept` asks for metadata only.
    fn wants_metadata(accept: &str, list: bool) -> bool {
        metadata_request(accept, list).is_some()
    }

    #[test]
    fn accept_clauses_are_matched_per_verb() {
        let list = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        assert!(wants_metadata(list, true));
        assert!(!wants_metadata(list, false));
        let one = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
        assert!(wants_metadata(one, false));
        assert!(!wants_metadata(one, true));
        assert!(!wants_metadata("application/json", false));
        assert!(!wants_metadata(
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1",
            false
        ));
        assert!(!wants_metadata(
            "application/json;as=Table;g=meta.k8s.io;v=v1",
            true
        ));
    }

    #[test]
    fn an_object_keeps_only_its_metadata() {
        let o = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","managedFields":[{"manager":"m"}]},"spec":{"x":1}}"#;
        let v: serde_json::Value = serde_json::from_slice(&metadata_object(o)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
                "metadata":{"name":"a","managedFields":[{"manager":"m"}]}})
        );
    }
}
