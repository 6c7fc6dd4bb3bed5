//! Everything a request handler needs: the API core, faults, settings, shutdown.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::api::Api;
use crate::faults::FaultState;

/// Server settings that shape behaviour (see `ServerConfig` for the user-facing builder).
#[derive(Debug, Clone)]
pub struct Settings {
    /// How long a request for a future resourceVersion waits before 504 "Too large resource
    /// version" (the real watch cache waits 3 s).
    pub too_large_wait: Duration,
    /// Interval of BOOKMARK events on watches that allow them (real: about a minute).
    pub bookmark_interval: Duration,
    /// Most events sent in one chunk of a watch response.
    pub watch_batch: usize,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Keep a log of requests (see `RunningServer::requests`).
    pub record_requests: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            too_large_wait: Duration::from_secs(3),
            bookmark_interval: Duration::from_secs(60),
            watch_batch: 1000,
            max_body_bytes: 3 * 1024 * 1024,
            record_requests: true,
        }
    }
}

/// One served request, as recorded for tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestRecord {
    /// HTTP method.
    pub method: String,
    /// Path.
    pub path: String,
    /// Raw query string.
    pub query: String,
    /// The verb, when the request addressed a resource.
    pub verb: Option<String>,
    /// Response status code (for watches: the code of the response head).
    pub code: u16,
}

/// Shared state of one server.
#[derive(Debug)]
pub struct Context {
    /// The verbs, registry and store.
    pub api: Arc<Api>,
    /// Fault state.
    pub faults: Arc<FaultState>,
    /// Settings.
    pub settings: Settings,
    /// Cancelled when the server shuts down (ends every watch).
    pub shutdown: CancellationToken,
    /// Recorded requests.
    pub requests: Mutex<Vec<RequestRecord>>,
    /// The address clients reach the server at (`127.0.0.1:port`).
    pub address: Mutex<String>,
    /// The highest resourceVersion carried by a BOOKMARK sent so far (for tests that need to
    /// know a client has been told a revision).
    pub bookmark_rv: tokio::sync::watch::Sender<u64>,
    /// The bearer token every request must carry (TLS servers), `None` for no authentication.
    pub(crate) token: Option<String>,
    /// Request counters served at `/metrics`.
    pub(crate) metrics: crate::metrics::Metrics,
}
