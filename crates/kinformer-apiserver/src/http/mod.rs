//! The HTTP face of the server: Kubernetes REST paths, discovery, and the admin endpoints.
//!
//! Requests are routed by hand (one fallback handler) because Kubernetes paths are ambiguous
//! for a static router: `/api/v1/namespaces/x/status` is the status of namespace `x`, while
//! `/api/v1/namespaces/x/pods` is the pods in it.
//!
//! Admin endpoints (fault injection and introspection), under `/__kinformer/`:
//! - `POST /__kinformer/faults/drop-watches`
//! - `POST /__kinformer/faults/fail` with a JSON [`crate::FailureRule`], e.g.
//!   `{"verb":"list","resource":"pods","code":503,"count":2,"retryAfterSeconds":1}`
//! - `POST /__kinformer/faults/latency` with `{"millis": 200}`
//! - `POST /__kinformer/faults/watch-delay` with `{"millis": 300}` (every watch event sent
//!   that much later, in order; see [`crate::Faults::set_watch_delay`])
//! - `POST /__kinformer/faults/watch-list` with `{"fault": "closeBeforeEndBookmark",
//!   "apiGroup": ""}` (`noEndBookmark`, `refuse`; `apiGroup` left out: every group;
//!   `{"fault": null}` clears it; see [`crate::Faults::set_watch_list_fault`])
//! - `POST /__kinformer/faults/compact`, `.../forget-history`, `.../pause-watches`,
//!   `.../resume-watches`, `.../clear`
//! - `GET /__kinformer/requests` (the request log as JSON), `DELETE` to clear it
//! - `GET /__kinformer/state/{resource}[?namespace=ns]`: exact objects with resourceVersions
//!
//! `/metrics` serves the request counters and the open-watch gauge (Prometheus text). With TLS
//! a request needs the bearer token, or a service account's: one without credentials is
//! `system:anonymous`, who may `GET` `/healthz`, `/livez`, `/readyz` and `/version` and gets
//! kube-apiserver's 403 for anything else, a wrong token 401. Every request is authorized as
//! its user, impersonation applied (see [`authn`], [`crate::rbac`]).

mod access;
mod admin;
mod authn;
mod conversion;
mod discovery;
mod endpoints;
mod openapi;
pub(crate) mod partial;
mod patch_options;
mod path;
mod resources;
mod response;
pub(crate) mod table;
mod watch;
pub(crate) mod webhooks;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::Response;

use crate::context::Context;

#[cfg(test)]
pub(crate) use path::parse_path;

/// The server's router.
pub(crate) fn router(ctx: Arc<Context>) -> Router {
    Router::new().fallback(handle).with_state(ctx)
}

/// The request's `Accept` header ("" when absent or not text).
fn accept(req: &Request) -> &str {
    req.headers()
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// Error `Status` bodies are larger than this only if something is wrong; such a body is sent
/// as it is.
const MAX_STATUS_BYTES: usize = 1 << 20;

/// Every request: served, then an error `Status` re-encoded as protobuf when the client's
/// `Accept` prefers it, as kube-apiserver negotiates errors on its API paths (built-in and
/// custom resources alike); the one place errors take their form, whichever handler made them.
async fn handle(State(ctx): State<Arc<Context>>, req: Request) -> Response {
    let path = req.uri().path();
    let api_path = ["/api", "/apis"].iter().any(|p| {
        path.strip_prefix(p)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    let status_as_protobuf = api_path && crate::proto::prefers_protobuf(accept(&req));
    let r = serve(ctx, req).await;
    if status_as_protobuf {
        status_in_protobuf(r).await
    } else {
        r
    }
}

/// `r` with its body as a protobuf `Status` if it is an error answered with a JSON `Status`.
async fn status_in_protobuf(r: Response) -> Response {
    let json = r
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/json");
    if r.status().as_u16() < 400 || !json {
        return r;
    }
    let (mut parts, body) = r.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_STATUS_BYTES).await else {
        tracing::warn!("an error body could not be read again to encode it as protobuf");
        return Response::from_parts(parts, axum::body::Body::empty());
    };
    let Some(pb) = crate::proto::json_body(&bytes) else {
        return Response::from_parts(parts, axum::body::Body::from(bytes));
    };
    parts.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(crate::proto::MEDIA_TYPE),
    );
    parts.headers.remove(http::header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(pb))
}

async fn serve(ctx: Arc<Context>, mut req: Request) -> Response {
    let path = req.uri().path().to_string();
    let request_uri = req.uri().path_and_query().map_or("", |p| p.as_str());
    if let Some(text) = access::request_info_error(&path, request_uri) {
        return response::plain_text(500, text);
    }
    match authn::admit(&ctx, &req) {
        // who is asking, for access reviews and admission
        Ok(Some(user)) => drop(req.extensions_mut().insert(user)),
        Ok(None) => {}
        Err(e) => return response::error(&e),
    }
    if path == "/metrics" {
        return response::text(200, ctx.metrics.encode());
    }
    if path.starts_with("/__kinformer/") {
        return admin::handle(ctx, req).await;
    }
    let latency = ctx.faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    resources::handle(ctx, req).await
}
