//! Serving OpenAPI: `/openapi/v2` (one document) and `/openapi/v3` (an index of one document
//! per group-version, `/openapi/v3/api/v1`, `/openapi/v3/apis/{group}/{version}`), built by
//! [`crate::openapi`]: the built-in kinds' schemas of the selected Kubernetes version and the
//! CRDs' `openAPIV3Schema`, so `kubectl explain` works on both, and the `fieldValidation`
//! parameters from which kubectl finds server-side field validation.
//!
//! The index links each document with a `hash` of its content, so a new CRD changes its
//! group-version's link and clients' caches refresh; a request with the current hash is
//! answered `Cache-Control: public, immutable`, one with a stale hash is redirected (301) to
//! the current link, as kube-openapi does.
//!
//! Deliberate difference from kube-apiserver: `/openapi/v2` is served as JSON only. A client
//! that accepts nothing but the protobuf form
//! (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, as client-go's
//! `OpenAPISchema` asks) gets 406 Not Acceptable, as kube-openapi answers a media type it cannot
//! serve; kubectl then does without v2 (`kubectl explain` reads v3; client-side `kubectl apply`
//! falls back to the types' own patch strategies). Operations carry fewer parameters and
//! responses than kube-apiserver's, and only the stable API versions the server serves are
//! described.

use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, header};

use super::response;
use crate::api::Registry;
use crate::openapi::Cache;

/// Serves `/openapi/v2` (`gv` `None`, `v2`), `/openapi/v3` (`None`) and `/openapi/v3/{gv}`.
pub(super) fn serve(
    cache: &Cache,
    registry: &Registry,
    v2: bool,
    gv: Option<&str>,
    accept: &str,
    query: &str,
) -> (u16, Response) {
    let built = cache.get(registry);
    if v2 {
        if !accepts_json(accept) {
            let mut r = response::json_bytes(406, Bytes::new());
            r.headers_mut().remove(header::CONTENT_TYPE);
            return (406, r);
        }
        return (200, response::json_bytes(200, built.v2()));
    }
    let Some(gv) = gv else {
        return (200, response::json_value(200, &built.index()));
    };
    let Some((doc, hash)) = built.v3(gv) else {
        let e = crate::status::ApiError::not_found_path();
        return (e.code, response::error(&e));
    };
    let asked = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("hash="))
        .filter(|h| !h.is_empty());
    let mut r = match asked {
        Some(h) if h != hash => {
            let mut r = response::json_bytes(301, Bytes::new());
            if let Ok(v) = HeaderValue::from_str(&format!("/openapi/v3/{gv}?hash={hash}")) {
                r.headers_mut().insert(header::LOCATION, v);
            }
            return (301, r);
        }
        Some(_) => {
            let mut r = response::json_bytes(200, doc.clone());
            r.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, immutable"),
            );
            r
        }
        None => response::json_bytes(200, doc.clone()),
    };
    if let Ok(v) = HeaderValue::from_str(&format!("\"{hash}\"")) {
        r.headers_mut().insert(header::ETAG, v);
    }
    (200, r)
}

/// Whether an `Accept` header admits JSON (no header, `*/*`, `application/*`, JSON).
fn accepts_json(accept: &str) -> bool {
    accept.trim().is_empty()
        || accept.split(',').any(|part| {
            let media = part.split(';').next().unwrap_or("").trim();
            matches!(media, "*/*" | "application/*" | "application/json")
        })
}
