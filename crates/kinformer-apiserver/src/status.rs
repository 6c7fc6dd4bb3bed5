//! Kubernetes `Status` errors with the real API server's codes, reasons and message shapes.
//!
//! Every failed request is answered with a `meta/v1` `Status` object, exactly as
//! `k8s.io/apimachinery/pkg/api/errors` builds them: the same HTTP code, `reason`, message text
//! and `details`. Clients (client-go, kube-rs, kubectl, the Python client) branch on these, so
//! the shapes matter more than anything else here.

use serde_json::{Map, Value, json};

use crate::resource::ResourceInfo;

/// A failed API request: the `Status` the server answers with.
///
/// The server builds them with helpers that reproduce the messages of apimachinery's
/// `errors.New*` functions; [`RunningServer`](crate::RunningServer)'s direct reads and writes
/// return them as the HTTP API would answer.
///
/// ```
/// use kinformer_apiserver::ApiError;
/// let e = ApiError::new(410, "Expired", "too old resource version: 5 (120)");
/// assert_eq!(e.code, 410);
/// assert_eq!(e.to_string(), "410 Expired: too old resource version: 5 (120)");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code (`Status.code`).
    pub code: u16,
    /// Machine-readable reason (`Status.reason`), e.g. `NotFound`; empty for none.
    pub reason: String,
    /// Human-readable message (`Status.message`).
    pub message: String,
    /// `Status.details`, if any.
    pub details: Option<Value>,
    /// `Status.metadata.continue` (set on an expired continue token, as the real server does).
    pub continue_token: Option<String>,
    /// `Retry-After` seconds to send as a header (429, 503 faults, 504 too-large RV).
    pub retry_after: Option<u32>,
}

fn details(name: &str, res: &ResourceInfo) -> Value {
    let mut d = Map::new();
    if !name.is_empty() {
        d.insert("name".into(), Value::String(name.to_string()));
    }
    if !res.group.is_empty() {
        d.insert("group".into(), Value::String(res.group.clone()));
    }
    d.insert("kind".into(), Value::String(res.plural.clone()));
    Value::Object(d)
}

impl ApiError {
    /// A bare error with a code, reason and message.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: None,
            continue_token: None,
            retry_after: None,
        }
    }

    /// 404 NotFound: `pods "web-1" not found` (`deployments.apps "x" not found` for groups).
    pub(crate) fn not_found(res: &ResourceInfo, name: &str) -> Self {
        let mut e = Self::new(
            404,
            "NotFound",
            format!("{} \"{}\" not found", res.group_resource(), name),
        );
        e.details = Some(details(name, res));
        e
    }

    /// 403 Forbidden: `namespaces "default" is forbidden: <why>` (apimachinery's
    /// `NewForbidden`, as admission plugins answer).
    pub(crate) fn forbidden(res: &ResourceInfo, name: &str, why: &str) -> Self {
        let mut e = Self::new(
            403,
            "Forbidden",
            format!(
                "{} \"{}\" is forbidden: {}",
                res.group_resource(),
                name,
                why
            ),
        );
        e.details = Some(details(name, res));
        e
    }

    /// 404 NotFound for a path that names no known resource.
    pub(crate) fn not_found_path() -> Self {
        let mut e = Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
        e.details = Some(json!({}));
        e
    }

    /// 409 AlreadyExists: `pods "web-1" already exists`.
    pub(crate) fn already_exists(res: &ResourceInfo, name: &str) -> Self {
        let mut e = Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{}\" already exists", res.group_resource(), name),
        );
        e.details = Some(details(name, res));
        e
    }

    /// 409 Conflict: `Operation cannot be fulfilled on pods "web-1": <why>`.
    pub(crate) fn conflict(res: &ResourceInfo, name: &str, why: &str) -> Self {
        let mut e = Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {}",
                res.group_resource(),
                name,
                why
            ),
        );
        e.details = Some(details(name, res));
        e
    }

    /// 409 Conflict naming the object by its kind, as kube-apiserver's delete path does
    /// (`rest.BeforeDelete` builds the group-resource from the kind): `Operation cannot be
    /// fulfilled on ConfigMap "a": <why>`, with `details.kind` the kind (`Deployment.apps` and
    /// `details.group` for grouped kinds).
    pub(crate) fn conflict_kind(res: &ResourceInfo, name: &str, why: &str) -> Self {
        let qualified = if res.group.is_empty() {
            res.kind.clone()
        } else {
            format!("{}.{}", res.kind, res.group)
        };
        let mut e = Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {qualified} \"{name}\": {why}"),
        );
        let mut d = Map::new();
        if !name.is_empty() {
            d.insert("name".into(), Value::String(name.to_string()));
        }
        if !res.group.is_empty() {
            d.insert("group".into(), Value::String(res.group.clone()));
        }
        d.insert("kind".into(), Value::String(res.kind.clone()));
        e.details = Some(Value::Object(d));
        e
    }

    /// 409 Conflict for a stale `metadata.resourceVersion` on update.
    pub(crate) fn conflict_modified(res: &ResourceInfo, name: &str) -> Self {
        Self::conflict(
            res,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid: `Pod "x" is invalid: metadata.name: Required value: ...`, with one cause per
    /// field error as `(field, reason, message)`, e.g. `("metadata.name", "FieldValueRequired",
    /// "Required value: name or generateName is required")`.
    pub(crate) fn invalid(
        kind: &str,
        group: &str,
        name: &str,
        causes: &[(String, String, String)],
    ) -> Self {
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let joined: Vec<String> = causes
            .iter()
            .map(|(field, _, msg)| format!("{field}: {msg}"))
            .collect();
        let summary = if joined.len() == 1 {
            joined[0].clone()
        } else {
            format!("[{}]", joined.join(", "))
        };
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{qualified} \"{name}\" is invalid: {summary}"),
        );
        let mut d = Map::new();
        // kube-apiserver omits an empty name (`omitempty`), e.g. for a nameless create or
        // ListOptions errors.
        if !name.is_empty() {
            d.insert("name".into(), Value::String(name.to_string()));
        }
        if !group.is_empty() {
            d.insert("group".into(), Value::String(group.to_string()));
        }
        if !kind.is_empty() {
            d.insert("kind".into(), Value::String(kind.to_string()));
        }
        d.insert(
            "causes".into(),
            Value::Array(
                causes
                    .iter()
                    .map(|(field, reason, msg)| json!({"reason": reason, "message": msg, "field": field}))
                    .collect(),
            ),
        );
        e.details = Some(Value::Object(d));
        e
    }

    /// 422 Invalid: kube-apiserver's answer to a streaming list when its `WatchList` feature
    /// gate is off (apimachinery's `validateWatchOptions`).
    pub(crate) fn watch_list_disabled() -> Self {
        Self::invalid(
            "ListOptions",
            "meta.k8s.io",
            "",
            &[(
                "sendInitialEvents".into(),
                "FieldValueForbidden".into(),
                "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled".into(),
            )],
        )
    }

    /// 400 BadRequest with the given message.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 405 MethodNotAllowed, as the real server answers a verb a resource does not support.
    pub(crate) fn method_not_allowed() -> Self {
        let mut e = Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        );
        e.details = Some(json!({}));
        e
    }

    /// 410 Expired (`errors.NewResourceExpired`), e.g. `too old resource version: 5 (120)`.
    pub(crate) fn resource_expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 504 Timeout for a resourceVersion newer than the server's: `Timeout: Too large resource
    /// version: 200, current: 100`, with the `ResourceVersionTooLarge` cause and
    /// `retryAfterSeconds: 1`, as the real watch cache answers after waiting.
    pub(crate) fn too_large_resource_version(requested: u64, current: u64) -> Self {
        let mut e = Self::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
        );
        e.details = Some(json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1
        }));
        e.retry_after = Some(1);
        e
    }

    /// 500 InternalError: `Internal error occurred: <why>`.
    pub(crate) fn internal(why: &str) -> Self {
        let mut e = Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {why}"),
        );
        e.details = Some(json!({"causes": [{"message": why}]}));
        e
    }

    /// 503 ServiceUnavailable.
    pub(crate) fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// 429 TooManyRequests with `Retry-After`.
    pub(crate) fn too_many_requests(retry_after: u32) -> Self {
        let mut e = Self::new(
            429,
            "TooManyRequests",
            "The server has received too many requests and has asked us to try again later",
        );
        e.details = Some(json!({"retryAfterSeconds": retry_after}));
        e.retry_after = Some(retry_after);
        e
    }

    /// 415 UnsupportedMediaType for a PATCH with an unknown content type.
    pub(crate) fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {content_type:?})"
            ),
        )
    }

    /// 415 UnsupportedMediaType for a create or update body in a media type the server does not
    /// decode (apiserver's `errUnsupportedMediaType`).
    pub(crate) fn unsupported_body_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 406 NotAcceptable: what kube-apiserver answers a request for a custom resource whose
    /// `Accept` lists protobuf only (its message names protobuf among the accepted types all
    /// the same).
    pub(crate) fn not_acceptable() -> Self {
        Self::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        )
    }

    /// 413 RequestEntityTooLarge.
    pub(crate) fn too_large_body(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("the request body is larger than the limit of {limit} bytes"),
        )
    }

    /// An error for a fault injected with the given code (500, 503, 429, 410, or any other).
    pub(crate) fn injected(code: u16, retry_after: Option<u32>) -> Self {
        match code {
            500 => Self::internal("injected fault"),
            503 => {
                let mut e = Self::service_unavailable(
                    "injected fault: the server is currently unable to handle the request",
                );
                e.retry_after = retry_after;
                e
            }
            429 => Self::too_many_requests(retry_after.unwrap_or(1)),
            410 => Self::resource_expired("injected fault: too old resource version"),
            409 => Self::new(409, "Conflict", "injected fault: conflict"),
            404 => Self::new(404, "NotFound", "injected fault: not found"),
            504 => Self::new(504, "Timeout", "Timeout: injected fault"),
            other => Self::new(other, "", format!("injected fault with code {other}")),
        }
    }

    /// The `Status` object as JSON.
    pub(crate) fn to_status(&self) -> Value {
        let mut metadata = Map::new();
        if let Some(c) = &self.continue_token {
            metadata.insert("continue".into(), Value::String(c.clone()));
        }
        let mut s = Map::new();
        s.insert("kind".into(), Value::String("Status".into()));
        s.insert("apiVersion".into(), Value::String("v1".into()));
        s.insert("metadata".into(), Value::Object(metadata));
        s.insert("status".into(), Value::String("Failure".into()));
        s.insert("message".into(), Value::String(self.message.clone()));
        if !self.reason.is_empty() {
            s.insert("reason".into(), Value::String(self.reason.clone()));
        }
        if let Some(d) = &self.details {
            s.insert("details".into(), d.clone());
        }
        s.insert("code".into(), Value::from(self.code));
        Value::Object(s)
    }

    /// The `Status` object as JSON bytes.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_status()).unwrap_or_default()
    }
}

/// A `Status` with `status: Success`, as returned by DELETE for resources that do not return the
/// deleted object.
pub(crate) fn success_status(res: &ResourceInfo, name: &str, uid: &str) -> Value {
    let mut d = details(name, res);
    if let Value::Object(m) = &mut d {
        m.insert("uid".into(), Value::String(uid.to_string()));
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": d})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_expired_is_410_expired() {
        let e = ApiError::resource_expired("too old resource version: 5 (120)");
        assert_eq!(e.code, 410);
        assert_eq!(e.reason, "Expired");
    }
}
