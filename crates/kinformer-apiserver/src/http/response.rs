//! Building responses: objects, lists (streamed from stored bytes), statuses, watch streams.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, StatusCode, header};

use crate::list::ListPage;
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::StoredObject;

const LIST_CHUNK: usize = 256 * 1024;

/// A JSON response with the given code.
pub(super) fn json_bytes(code: u16, body: impl Into<Body>) -> Response {
    let mut r = Response::new(body.into());
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A protobuf body (`application/vnd.kubernetes.protobuf`) with the given code.
pub(super) fn protobuf(code: u16, body: Vec<u8>) -> Response {
    let mut r = json_bytes(code, body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::proto::MEDIA_TYPE),
    );
    r
}

/// `resp` with one `Warning` header per message, as kube-apiserver sends them
/// (`299 - "unknown field \"x\""`).
pub(super) fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        if let Ok(v) = HeaderValue::from_str(&format!("299 - {w:?}")) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

/// One stored object: protobuf when the client asked for it and the object has that form,
/// JSON otherwise.
pub(super) fn object_as(code: u16, res: &ResourceInfo, o: &StoredObject, pb: bool) -> Response {
    let shown = crate::objects::served_object(res, o);
    let o = shown.as_ref().unwrap_or(o);
    match pb.then(|| crate::proto::object_body(res, o)).flatten() {
        Some(b) => protobuf(code, b),
        None => object(code, o),
    }
}

/// A Prometheus text exposition response.
pub(super) fn text(code: u16, body: String) -> Response {
    let mut r = json_bytes(code, body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

/// kube-apiserver's answer to a path no handler takes: `404 page not found` in plain text (Go's
/// `http.NotFound`), not a `Status`.
pub(super) fn page_not_found() -> Response {
    plain_text(404, "404 page not found\n")
}

/// Plain text as kube-apiserver's own handlers write it (`/healthz`'s `ok`, Go's
/// `http.NotFound`): `text/plain; charset=utf-8`, with `X-Content-Type-Options: nosniff`.
pub(super) fn plain_text(code: u16, body: impl Into<Body>) -> Response {
    let mut r = json_bytes(code, body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r.headers_mut().insert(
        header::HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// A JSON value response.
pub(super) fn json_value(code: u16, v: &serde_json::Value) -> Response {
    json_bytes(code, serde_json::to_vec(v).unwrap_or_default())
}

/// An error as a `Status` response (with `Retry-After` when set).
pub(super) fn error(e: &ApiError) -> Response {
    let mut r = json_bytes(e.code, e.to_bytes());
    if let Some(s) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// One stored object.
pub(super) fn object(code: u16, o: &StoredObject) -> Response {
    json_bytes(code, o.bytes.clone())
}

/// A list's `ListMeta`.
fn list_meta(
    page_rv: Option<u64>,
    cont: Option<&str>,
    remaining: Option<u64>,
) -> serde_json::Value {
    let mut meta = serde_json::Map::new();
    if let Some(rv) = page_rv {
        meta.insert("resourceVersion".into(), rv.to_string().into());
    }
    if let Some(c) = cont {
        meta.insert("continue".into(), c.into());
    }
    if let Some(n) = remaining {
        meta.insert("remainingItemCount".into(), n.into());
    }
    serde_json::Value::Object(meta)
}

fn list_header(res: &ResourceInfo, meta: serde_json::Value) -> Vec<u8> {
    let head = serde_json::json!({"kind": res.list_kind(), "apiVersion": res.api_version(), "metadata": meta});
    let mut s = serde_json::to_vec(&head).unwrap_or_default();
    // Reopen the object to append the items.
    s.pop();
    s.extend_from_slice(b",\"items\":[");
    s
}

/// A list response: JSON streamed in chunks built straight from the stored bytes, or one
/// protobuf body of the items' cached messages when the client asked for protobuf.
pub(super) fn list(res: &ResourceInfo, page: ListPage, pb: bool) -> Response {
    let mut meta = list_meta(
        Some(page.resource_version),
        page.continue_token.as_deref(),
        page.remaining_item_count,
    );
    set_shard_info(res, &mut meta, page.shard_info);
    list_of(res, meta, page.items, pb)
}

/// Echoes a shard selector as `shardInfo` where kube-apiserver 1.36 does: in typed lists only
/// (an `UnstructuredList`, custom resources, has no `SetShardInfo`, and metadata-only lists
/// and tables copy only resourceVersion, continue and remainingItemCount; those are built
/// elsewhere).
fn set_shard_info(res: &ResourceInfo, meta: &mut serde_json::Value, shard: Option<String>) {
    if let (Some(sel), Some(m), None) = (shard, meta.as_object_mut(), &res.crd_name) {
        m.insert("shardInfo".into(), serde_json::json!({ "selector": sel }));
    }
}

/// What a deletecollection answers: the list it deleted from, with its resourceVersion and,
/// for a sharded one, `shardInfo` (typed lists only, as a LIST).
pub(super) fn deleted_list(
    res: &ResourceInfo,
    rv: u64,
    shard_info: Option<String>,
    items: Vec<Arc<StoredObject>>,
    pb: bool,
) -> Response {
    let mut meta = list_meta(Some(rv), None, None);
    set_shard_info(res, &mut meta, shard_info);
    list_of(res, meta, items, pb)
}

fn list_of(
    res: &ResourceInfo,
    mut meta: serde_json::Value,
    mut items: Vec<Arc<StoredObject>>,
    pb: bool,
) -> Response {
    for o in &mut items {
        if let Some(shown) = crate::objects::served_object(res, o) {
            *o = Arc::new(shown);
        }
    }
    if pb && let Some(b) = crate::proto::list_body(res, &meta, &items) {
        return protobuf(200, b);
    }
    // custom resources are served as unstructured lists: every item keeps its kind and
    // apiVersion, and the metadata always has a `continue` (e2e/diff "crd")
    let custom = res.crd_name.is_some();
    if custom && let Some(m) = meta.as_object_mut() {
        m.entry("continue").or_insert_with(|| "".into());
    }
    items_body(list_header(res, meta), items, custom)
}

fn items_body(head: Vec<u8>, items: Vec<Arc<StoredObject>>, typed_items: bool) -> Response {
    let total: usize = items.iter().map(|o| o.bytes.len() + 1).sum::<usize>() + head.len() + 2;
    let mut first = BytesMut::with_capacity(LIST_CHUNK.min(total));
    first.put_slice(&head);
    let stream = futures::stream::unfold(
        (Some(first), items.into_iter().enumerate(), false),
        move |(buf, mut iter, done)| async move {
            if done {
                return None;
            }
            let mut buf = buf.unwrap_or_else(|| BytesMut::with_capacity(LIST_CHUNK));
            loop {
                match iter.next() {
                    Some((i, o)) => {
                        if i > 0 {
                            buf.put_u8(b',');
                        }
                        if typed_items {
                            buf.put_slice(&o.bytes);
                        } else {
                            // kube-apiserver's list items of built-in kinds carry no
                            // kind/apiVersion
                            buf.put_u8(b'{');
                            buf.put_slice(o.untyped_tail());
                        }
                        if buf.len() >= LIST_CHUNK {
                            let chunk: Bytes = buf.freeze();
                            return Some((
                                Ok::<_, std::convert::Infallible>(chunk),
                                (None, iter, false),
                            ));
                        }
                    }
                    None => {
                        buf.put_slice(b"]}");
                        return Some((Ok(buf.freeze()), (None, iter, true)));
                    }
                }
            }
        },
    );
    let mut r = Response::new(Body::from_stream(stream));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A streaming watch response fed by `rx`: JSON lines, or protobuf frames when `pb`. The body
/// owns `open`, the watch's place in the open-watch gauge, so it is released when the stream
/// ends or the client goes away (the server drops the body then).
pub(super) fn watch(
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    pb: bool,
    open: crate::metrics::OpenWatch,
) -> Response {
    let stream = futures::stream::unfold((rx, open), |(mut rx, open)| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(b), (rx, open)))
    });
    let mut r = Response::new(Body::from_stream(stream));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(if pb {
            crate::proto::WATCH_MEDIA_TYPE
        } else {
            "application/json"
        }),
    );
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    r
}
