//! Everything a request handler needs: the API core, faults, configuration, shutdown.

use std::sync::Arc;

use parking_lot::Mutex;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::api::Api;
use crate::config::ServerConfig;
use crate::faults::FaultState;

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
pub(crate) struct Context {
    /// The verbs, registry and store.
    pub api: Arc<Api>,
    /// Fault state.
    pub faults: Arc<FaultState>,
    /// The configuration the server was started with.
    pub config: ServerConfig,
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
    /// The key service account tokens are signed with.
    pub(crate) tokens: crate::token::Issuer,
    /// The OpenAPI documents, built when first asked for.
    pub(crate) openapi: crate::openapi::Cache,
    /// The clients admission webhooks are called with.
    pub(crate) webhooks: crate::admission::webhook::call::Clients,
    /// The RBAC objects the authorizer parsed ([`crate::rbac::Cache`]).
    pub(crate) rbac_cache: crate::rbac::Cache,
}
