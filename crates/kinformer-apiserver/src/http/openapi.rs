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
//! `/openapi/v2` answers JSON or, for clients that ask for it (client-go's `OpenAPISchema`,
//! so kubectl's v2 `explain` and client-side apply), gnostic's protobuf form
//! (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`); another media type is 406,
//! as kube-openapi answers.
//!
//! Deliberate difference from kube-apiserver: the protobuf form has no `paths` (see
//! `crate::openapi`'s `protobuf` module); operations carry fewer parameters and responses than
//! kube-apiserver's; only the stable API versions the server serves are described.

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
        return match v2_form(accept) {
            Some(V2Form::Json) => (200, response::json_bytes(200, built.v2())),
            Some(V2Form::Protobuf) => {
                let mut r = response::json_bytes(200, built.v2_protobuf());
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(V2_PROTOBUF_ALT),
                );
                (200, r)
            }
            None => {
                let mut r = response::json_bytes(406, Bytes::new());
                r.headers_mut().remove(header::CONTENT_TYPE);
                (406, r)
            }
        };
    }
    let Some(gv) = gv else {
        // kube-openapi writes the index without a Content-Type; Go's server sniffs it as text
        // (e2e/diff "openapi / v3-index").
        let mut r = response::json_value(200, &built.index());
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        return (200, r);
    };
    let Some((doc, hash)) = built.v3(gv) else {
        // An unknown group-version: a bare 404, no body (e2e/diff "openapi / v3-missing-group").
        let mut r = response::json_bytes(404, Bytes::new());
        r.headers_mut().remove(header::CONTENT_TYPE);
        return (404, r);
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

/// The protobuf media type of the v2 document, as client-go asks for it.
const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The same, as kube-openapi names it in its answer.
const V2_PROTOBUF_ALT: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

enum V2Form {
    Json,
    Protobuf,
}

/// The form of the v2 document an `Accept` header asks for: the first media type listed that
/// the server has (JSON for none, `*/*` or `application/*`), as kube-openapi negotiates.
fn v2_form(accept: &str) -> Option<V2Form> {
    if accept.trim().is_empty() {
        return Some(V2Form::Json);
    }
    accept
        .split(',')
        .find_map(|part| match part.split(';').next().unwrap_or("").trim() {
            "*/*" | "application/*" | "application/json" => Some(V2Form::Json),
            V2_PROTOBUF | V2_PROTOBUF_ALT => Some(V2Form::Protobuf),
            _ => None,
        })
}
