//! What a list or watch request can fail with ([`ListWatchError`]), the API `Status` it may
//! carry, and the classifications a Reflector acts on (client-go's `apierrors.Is*` helpers).

use std::fmt;

/// One entry of a `Status`'s `details.causes`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusCause {
    /// `type`, e.g. `"ResourceVersionTooLarge"`.
    pub cause_type: String,
    /// `message`.
    pub message: String,
    /// `field`.
    pub field: String,
}

/// An API `Status` (a failed request, or a watch `ERROR` event): HTTP-like code, machine
/// reason, human message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// The HTTP status code (`410`, `429`, `500`...); 0 when unknown.
    pub code: u16,
    /// The machine-readable reason (`"Expired"`, `"Gone"`, `"TooManyRequests"`, `"Timeout"`,
    /// `"InternalError"`, `"Invalid"`...); may be empty.
    pub reason: String,
    /// The human-readable message.
    pub message: String,
    /// `details.causes`.
    pub causes: Vec<StatusCause>,
    /// `details.retryAfterSeconds` (or a `Retry-After` header), if the server suggested one.
    pub retry_after_seconds: Option<u32>,
}

impl Status {
    /// A status with this code, reason and message.
    pub fn new(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
            message: message.into(),
            ..Default::default()
        }
    }

    /// `410 Expired`: the resource version (or continue token) is too old
    /// (apimachinery's `NewResourceExpired`).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// `410 Gone` (apimachinery's `NewGone`).
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Gone", message)
    }

    /// `429 TooManyRequests` with a suggested retry delay.
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: u32) -> Self {
        Self {
            retry_after_seconds: Some(retry_after_seconds),
            ..Self::new(429, "TooManyRequests", message)
        }
    }

    /// `500 InternalError` (apimachinery's `NewInternalError`).
    pub fn internal_error(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// `504 Timeout` (apimachinery's `NewTimeoutError`); the form "too large resource version"
    /// errors take.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, "Timeout", message)
    }

    /// `422 Invalid`: what a server that refuses an option (e.g. `sendInitialEvents`) answers.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(422, "Invalid", message)
    }

    /// The same status with one more cause.
    #[must_use]
    pub fn with_cause(mut self, cause_type: &str, message: &str) -> Self {
        self.causes.push(StatusCause {
            cause_type: cause_type.into(),
            message: message.into(),
            field: String::new(),
        });
        self
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

/// What kind of transport failure a [`ListWatchError::Transport`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportErrorKind {
    /// The connection was refused (the server is not listening, e.g. while it restarts).
    ConnectionRefused,
    /// The response ended inside an object: the connection closed (or was cut) early.
    Incomplete,
    /// The connection went silent: no byte came for longer than the server was asked to keep
    /// it open.
    Stalled,
    /// Any other connection or I/O failure.
    Other,
}

/// Why a list or watch request failed, or why a watch stream item is unusable.
///
/// The kinds matter to the Reflector: an API [`Status`] drives relists and retries (410,
/// "too large resource version", 429, 500); a refused connection is retried with backoff; a
/// transport failure inside a watch stream (a broken, cut or stalled connection) ends that
/// watch, which is reopened at once from the last resourceVersion; an object over the
/// size limit ends the list or watch, and the Reflector backs off and relists; a decode error
/// inside a watch stream is logged and skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListWatchError {
    /// The server answered with a failure `Status`.
    #[error("API error: {0}")]
    Api(Status),
    /// The request never got an answer (connection refused, reset, TLS, DNS...).
    #[error("transport error ({kind:?}): {message}")]
    Transport {
        /// Which transport failure.
        kind: TransportErrorKind,
        /// What went wrong.
        message: String,
    },
    /// A response or watch event could not be understood.
    #[error("decode error: {0}")]
    Decode(String),
    /// One object (a watch event, a list item, a list's metadata) is larger than the
    /// client's limit (see
    /// [`InformerConfig::max_object_size`](crate::InformerConfig::max_object_size)).
    /// Nothing of it was kept.
    #[error("{what} is larger than the limit of {limit} bytes")]
    TooLarge {
        /// What was too large: `"a watch event"`, `"a list item"`, `"a list's metadata"`.
        what: &'static str,
        /// The limit, in bytes.
        limit: usize,
    },
}

impl From<Status> for ListWatchError {
    fn from(s: Status) -> Self {
        Self::Api(s)
    }
}

impl ListWatchError {
    /// A refused connection.
    pub fn connection_refused(message: impl Into<String>) -> Self {
        Self::Transport {
            kind: TransportErrorKind::ConnectionRefused,
            message: message.into(),
        }
    }

    /// The API status, if this is an API error.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Self::Api(s) => Some(s),
            _ => None,
        }
    }

    fn reason_is(&self, reason: &str) -> bool {
        self.status().is_some_and(|s| s.reason == reason)
    }

    fn code_without_reason(&self, code: u16) -> bool {
        self.status()
            .is_some_and(|s| s.reason.is_empty() && s.code == code)
    }

    /// client-go's `isExpiredError`: `410` with reason `Expired` or `Gone` (or a bare 410).
    pub fn is_expired(&self) -> bool {
        self.reason_is("Expired") || self.reason_is("Gone") || self.code_without_reason(410)
    }

    /// client-go's `isTooLargeResourceVersionError`: a `ResourceVersionTooLarge` cause, or a
    /// `Timeout` whose cause or message says "Too large resource version".
    pub fn is_too_large_resource_version(&self) -> bool {
        let Some(s) = self.status() else { return false };
        if s.causes
            .iter()
            .any(|c| c.cause_type == "ResourceVersionTooLarge")
        {
            return true;
        }
        let is_timeout = s.reason == "Timeout" || (s.reason.is_empty() && s.code == 504);
        is_timeout
            && (s
                .causes
                .iter()
                .any(|c| c.message == "Too large resource version")
                || s.message.contains("Too large resource version"))
    }

    /// `429 TooManyRequests`.
    pub fn is_too_many_requests(&self) -> bool {
        self.reason_is("TooManyRequests") || self.status().is_some_and(|s| s.code == 429)
    }

    /// `500 InternalError` (apimachinery's `IsInternalError`).
    pub fn is_internal_error(&self) -> bool {
        self.reason_is("InternalError") || self.code_without_reason(500)
    }

    /// `422 Invalid`, or a `400 BadRequest`: what a server says about an option it refuses
    /// (by code when the body gave no reason).
    pub fn is_invalid(&self) -> bool {
        self.reason_is("Invalid")
            || self.reason_is("BadRequest")
            || self.code_without_reason(422)
            || self.code_without_reason(400)
    }

    /// The server refuses the request's options as unsupported: `Invalid`, `BadRequest`,
    /// `MethodNotAllowed`, `NotAcceptable`, or a message saying "not supported". This is how a
    /// server without streaming lists answers `sendInitialEvents=true`.
    pub fn is_not_supported(&self) -> bool {
        self.is_invalid()
            || self.reason_is("MethodNotAllowed")
            || self.reason_is("NotAcceptable")
            || self.status().is_some_and(|s| {
                s.code == 405 || s.message.to_lowercase().contains("not supported")
            })
    }

    /// A refused connection.
    pub fn is_connection_refused(&self) -> bool {
        matches!(
            self,
            Self::Transport {
                kind: TransportErrorKind::ConnectionRefused,
                ..
            }
        )
    }

    /// A decode error.
    pub fn is_decode(&self) -> bool {
        matches!(self, Self::Decode(_))
    }

    /// An object over the size limit ([`ListWatchError::TooLarge`]).
    pub fn is_too_large(&self) -> bool {
        matches!(self, Self::TooLarge { .. })
    }

    /// client-go's `isWatchErrorRetriable`: a refused connection or a 429, both retried after a
    /// backoff without relisting.
    pub fn is_watch_retriable(&self) -> bool {
        self.is_connection_refused() || self.is_too_many_requests()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_and_gone_are_both_expired() {
        assert!(ListWatchError::from(Status::expired("old")).is_expired());
        assert!(ListWatchError::from(Status::gone("old")).is_expired());
        assert!(ListWatchError::from(Status::new(410, "", "x")).is_expired());
        assert!(!ListWatchError::from(Status::internal_error("x")).is_expired());
    }

    #[test]
    fn too_large_resource_version_three_forms() {
        // client-go TestReflectorFullListIfTooLarge's three error shapes.
        let by_cause_type =
            Status::timeout("too large resource version").with_cause("ResourceVersionTooLarge", "");
        let by_cause_message = Status::timeout("too large resource version")
            .with_cause("", "Too large resource version");
        let by_message = Status::timeout("Too large resource version");
        for s in [by_cause_type, by_cause_message, by_message] {
            assert!(ListWatchError::from(s).is_too_large_resource_version());
        }
        assert!(
            !ListWatchError::from(Status::timeout("too large resource version"))
                .is_too_large_resource_version()
        );
    }

    #[test]
    fn not_supported_forms() {
        assert!(
            ListWatchError::from(Status::invalid("streaming is not allowed")).is_not_supported()
        );
        assert!(ListWatchError::from(Status::new(405, "MethodNotAllowed", "")).is_not_supported());
        assert!(
            ListWatchError::from(Status::new(400, "", "sendInitialEvents is not supported"))
                .is_not_supported()
        );
        assert!(!ListWatchError::from(Status::internal_error("x")).is_not_supported());
        // a body that could not be read: the code says it
        assert!(ListWatchError::from(Status::new(422, "", "k8s\0...")).is_not_supported());
    }

    #[test]
    fn retriable_watch_errors() {
        assert!(ListWatchError::connection_refused("refused").is_watch_retriable());
        assert!(ListWatchError::from(Status::too_many_requests("busy", 1)).is_watch_retriable());
        assert!(!ListWatchError::from(Status::internal_error("x")).is_watch_retriable());
        assert!(!ListWatchError::Decode("x".into()).is_watch_retriable());
    }
}
