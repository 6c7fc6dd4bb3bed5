//! Mapping failures to [`ListWatchError`]s: API `Status` bodies, kube client errors, refused
//! connections.

use serde_json::Value;

use crate::reflector::{ListWatchError, Status, StatusCause, TransportErrorKind};

/// The most of an error response's body that is read (the rest is dropped): a `Status` is a
/// few hundred bytes, and a hostile or broken server must not make the client buffer more.
pub(crate) const MAX_ERROR_BODY: usize = 64 * 1024;

/// The failure a non-success response stands for: its `Status` body when it has one (read up
/// to [`MAX_ERROR_BODY`]), otherwise the HTTP code and the start of the body.
pub(crate) async fn error_from_response(
    response: http::Response<kube::client::Body>,
) -> ListWatchError {
    use http_body_util::BodyExt;
    let code = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u32>().ok());
    let mut body = Vec::new();
    let mut stream = response.into_body();
    while body.len() < MAX_ERROR_BODY {
        match stream.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    let room = MAX_ERROR_BODY - body.len();
                    body.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
            // a body that breaks off still says what it said so far
            Some(Err(_)) | None => break,
        }
    }
    // a protobuf request is answered with a protobuf `Status` (kube-apiserver encodes errors
    // in the negotiated format): transcoded to JSON first
    let transcoded = body
        .starts_with(b"k8s\0")
        .then(|| kinformer_proto::object_to_json(&body).ok())
        .flatten();
    let mut status = serde_json::from_slice::<Value>(transcoded.as_deref().unwrap_or(&body))
        .ok()
        .filter(|v| v.get("kind").and_then(Value::as_str) == Some("Status"))
        .map(|v| status_from_value(&v))
        .unwrap_or_else(|| Status::new(code, "", String::from_utf8_lossy(&body).trim().to_owned()));
    if status.code == 0 {
        status.code = code;
    }
    if status.retry_after_seconds.is_none() {
        status.retry_after_seconds = retry_after;
    }
    ListWatchError::Api(status)
}

pub(crate) fn status_from_value(v: &Value) -> Status {
    let s = |key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let details = v.get("details");
    let causes = details
        .and_then(|d| d.get("causes"))
        .and_then(Value::as_array)
        .map(|causes| {
            causes
                .iter()
                .map(|c| StatusCause {
                    cause_type: c
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    message: c
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    field: c
                        .get("field")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                })
                .collect()
        })
        .unwrap_or_default();
    Status {
        code: v
            .get("code")
            .and_then(Value::as_u64)
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(0),
        reason: s("reason"),
        message: s("message"),
        causes,
        retry_after_seconds: details
            .and_then(|d| d.get("retryAfterSeconds"))
            .and_then(Value::as_u64)
            .and_then(|c| u32::try_from(c).ok()),
    }
}

pub(crate) fn from_kube_error(e: impl Into<kube::Error>) -> ListWatchError {
    let e: kube::Error = e.into();
    match e {
        kube::Error::Api(status) => ListWatchError::Api(Status {
            code: status.code,
            reason: status.reason.clone(),
            message: status.message.clone(),
            causes: status
                .details
                .as_ref()
                .map(|d| {
                    d.causes
                        .iter()
                        .map(|c| StatusCause {
                            cause_type: c.reason.clone(),
                            message: c.message.clone(),
                            field: c.field.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            retry_after_seconds: status
                .details
                .as_ref()
                .map(|d| d.retry_after_seconds)
                .filter(|s| *s > 0),
        }),
        kube::Error::SerdeError(e) => ListWatchError::Decode(e.to_string()),
        kube::Error::FromUtf8(e) => ListWatchError::Decode(e.to_string()),
        other => {
            let kind = if is_connection_refused(&other) {
                TransportErrorKind::ConnectionRefused
            } else {
                TransportErrorKind::Other
            };
            ListWatchError::Transport {
                kind,
                message: error_chain(&other),
            }
        }
    }
}

fn is_connection_refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        cur = err.source();
    }
    false
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(err) = cur {
        out.push_str(": ");
        out.push_str(&err.to_string());
        cur = err.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(code: u16, body: Vec<u8>) -> http::Response<kube::client::Body> {
        http::Response::builder()
            .status(code)
            .header(http::header::RETRY_AFTER, "3")
            .body(kube::client::Body::from(body))
            .unwrap()
    }

    /// kube-apiserver answers a protobuf request's failure with a protobuf `Status`: its
    /// reason, causes and retryAfterSeconds are read, as from a JSON one.
    #[tokio::test]
    async fn a_protobuf_status_body_is_read_like_a_json_one() {
        let status = serde_json::json!({
            "apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 422,
            "reason": "Invalid",
            "message": "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden",
            "details": {"causes": [{"reason": "FieldValueForbidden", "message": "Forbidden", "field": "sendInitialEvents"}]}
        });
        let body = kinformer_proto::object_from_json(&status).unwrap();
        assert!(body.starts_with(b"k8s\0"));
        let ListWatchError::Api(s) = error_from_response(response(422, body)).await else {
            panic!("not an API error")
        };
        assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
        assert_eq!(s.causes[0].field, "sendInitialEvents");
        assert_eq!(s.retry_after_seconds, Some(3), "from the header");
        assert!(ListWatchError::Api(s).is_not_supported());
    }

    #[tokio::test]
    async fn a_body_that_is_no_status_keeps_its_code() {
        let e = error_from_response(response(429, b"k8s\0garbage".to_vec())).await;
        assert!(e.is_too_many_requests());
        assert_eq!(e.status().unwrap().retry_after_seconds, Some(3));
    }
}
