//! Running the server: [`start`] a [`ServerConfig`] → [`RunningServer`].

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::api::{Api, Registry};
use crate::context::{Context, RequestRecord};
use crate::faults::{FaultState, Faults};
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::{HistoryConfig, Store};

mod objects;

use crate::config::ServerConfig;
pub use objects::{ObjectState, ServerState};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Binding the listener failed.
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// Requested port.
        port: u16,
        /// Cause.
        source: std::io::Error,
    },
    /// The configuration asks for something it cannot have (e.g.
    /// [`ServerConfig::root_ca_publisher`] without [`ServerConfig::tls`]).
    #[error("invalid server configuration: {0}")]
    Config(String),
    /// Generating the certificates failed.
    #[error("cannot set up TLS: {0}")]
    Tls(String),
    /// Building the kube client failed.
    #[error("cannot build a kube client: {0}")]
    Client(String),
    /// Seeding an object failed.
    #[error("seeding failed: {0}")]
    Seed(#[from] ApiError),
    /// Writing the kubeconfig ([`ServerConfig::kubeconfig`]) failed.
    #[error("cannot write kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The path.
        path: std::path::PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

/// A server running in this process on 127.0.0.1. Dropping it shuts it down (without waiting);
/// [`RunningServer::shutdown`] shuts down and waits until nothing is left running.
pub struct RunningServer {
    ctx: Arc<Context>,
    addr: SocketAddr,
    /// The CA (PEM) and token when serving TLS.
    credentials: Option<(String, String)>,
    client: kube::Client,
    task: Mutex<Option<JoinHandle<()>>>,
    /// The in-server controllers' task ([`crate::controllers`]), if any runs.
    controllers: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for RunningServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningServer")
            .field("addr", &self.addr)
            .finish()
    }
}

/// Starts a server on 127.0.0.1 (a free port unless configured), then seeds it and writes its
/// kubeconfig when the configuration says so.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use k8s_openapi::api::core::v1::Pod;
/// let server = kinformer_apiserver::start(Default::default()).await?;
/// let pods: kube::Api<Pod> = kube::Api::namespaced(server.client(), "default");
/// assert!(pods.list(&Default::default()).await?.items.is_empty());
/// server.shutdown().await;
/// # Ok(()) }
/// ```
pub async fn start(config: ServerConfig) -> Result<RunningServer, StartError> {
    if config.root_ca_publisher && !config.tls {
        return Err(StartError::Config(
            "root_ca_publisher needs tls: without TLS the server has no CA to publish".into(),
        ));
    }
    let registry = Registry::new();
    for r in &config.resources {
        registry.register(r.clone());
    }
    let api = Arc::new(Api {
        enforce_namespaces: config.enforce_namespaces,
        service_accounts_kept: config.service_account_controller,
        registry,
        store: Store::new(config.history),
        crd_storage: Default::default(),
    });
    let credentials = if config.tls {
        Some(crate::tls::generate().map_err(|e| StartError::Tls(e.to_string()))?)
    } else {
        None
    };
    let tokens = crate::token::Issuer::generate()
        .map_err(|e| StartError::Tls(format!("cannot generate the service account key: {e}")))?;
    let ctx = Arc::new(Context {
        api,
        faults: Arc::new(FaultState::default()),
        config: config.clone(),
        shutdown: CancellationToken::new(),
        requests: Mutex::new(Vec::new()),
        address: Mutex::new(String::new()),
        bookmark_rv: tokio::sync::watch::channel(0).0,
        token: credentials.as_ref().map(|c| c.token.clone()),
        metrics: crate::metrics::Metrics::default(),
        openapi: Default::default(),
        webhooks: Default::default(),
        rbac_cache: Default::default(),
        tokens,
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.port))
        .await
        .map_err(|source| StartError::Bind {
            port: config.port,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| StartError::Bind {
        port: config.port,
        source,
    })?;
    *ctx.address.lock() = addr.to_string();
    if config.default_namespaces {
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let res = ctx
                .api
                .registry
                .find("", "v1", "namespaces")
                .ok_or_else(ApiError::not_found_path)?;
            // As kube-apiserver's system-namespaces controller creates them: a bare namespace
            // by the `kube-apiserver` manager, so managedFields own the name label (a default)
            // and nothing else (e2e/diff "namespace-lifecycle / get-default-after").
            let body = serde_json::json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns},
            });
            let writer = crate::objects::Writer {
                manager: "kube-apiserver".into(),
                subresource: None,
            };
            if let Value::Object(m) = body {
                ctx.api.create_by(&res, None, m, Some(&writer), false)?;
            }
        }
    }
    if config.rbac {
        crate::rbac::bootstrap::create(&ctx.api)?;
    }
    let public = credentials
        .as_ref()
        .map(|c| (c.ca_pem.clone(), c.token.clone()));
    let base = base_url(addr, public.is_some());
    let yaml = crate::kubeconfig::yaml(&base, public.as_ref());
    let client = client_from_kubeconfig(&yaml).await?;
    let router = crate::http::router(ctx.clone());
    let token = ctx.shutdown.clone();
    let task = match credentials {
        Some(c) => {
            let listener = crate::tls::TlsListener::new(listener, addr, c.acceptor, token.clone());
            tokio::spawn(async move {
                let serve =
                    axum::serve(listener, router).with_graceful_shutdown(token.cancelled_owned());
                if let Err(e) = serve.await {
                    tracing::warn!(error = %e, "kinformer-apiserver stopped with an error");
                }
            })
        }
        None => {
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            tokio::spawn(async move {
                let serve =
                    axum::serve(listener, router).with_graceful_shutdown(token.cancelled_owned());
                if let Err(e) = serve.await {
                    tracing::warn!(error = %e, "kinformer-apiserver stopped with an error");
                }
            })
        }
    };
    tracing::info!(%addr, "kinformer-apiserver listening");
    let controllers = crate::controllers::start(
        ctx.clone(),
        crate::controllers::Switches {
            gc: config.garbage_collector,
            namespaces: config.namespace_controller,
            service_accounts: config.service_account_controller,
            kubernetes_service: config.kubernetes_service.then_some(addr.port()),
            aggregation: config.rbac,
            root_ca: public
                .as_ref()
                .filter(|_| config.root_ca_publisher)
                .map(|(ca, _)| ca.clone()),
        },
        ctx.shutdown.clone(),
    )
    .await;
    let server = RunningServer {
        ctx,
        addr,
        credentials: public,
        client,
        task: Mutex::new(Some(task)),
        controllers: Mutex::new(controllers),
    };
    if config.seed_pods > 0 {
        server.seed_pods(config.seed_pods, config.seed_namespaces)?;
    }
    if let Some(path) = &config.kubeconfig {
        server
            .write_kubeconfig(path)
            .map_err(|source| StartError::Kubeconfig {
                path: path.clone(),
                source,
            })?;
    }
    Ok(server)
}

fn base_url(addr: SocketAddr, tls: bool) -> String {
    if tls {
        format!("https://{addr}")
    } else {
        format!("http://{addr}")
    }
}

/// A kube client configured the way any client would be: from the kubeconfig the server writes.
async fn client_from_kubeconfig(yaml: &str) -> Result<kube::Client, StartError> {
    let kc =
        kube::config::Kubeconfig::from_yaml(yaml).map_err(|e| StartError::Client(e.to_string()))?;
    let mut kube_config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(|e| StartError::Client(e.to_string()))?;
    // kube's default retry policy silently retries 429, 503 and 504; informers and reflectors
    // must see those statuses to apply client-go's backoff and relist rules.
    kube_config.default_retry = false;
    kube::Client::try_from(kube_config).map_err(|e| StartError::Client(e.to_string()))
}

impl RunningServer {
    /// `https://127.0.0.1:PORT` with TLS ([`ServerConfig::tls`]), else `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        base_url(self.addr, self.credentials.is_some())
    }

    /// The bearer token the server requires (TLS only).
    pub fn token(&self) -> Option<&str> {
        self.credentials.as_ref().map(|(_, t)| t.as_str())
    }

    /// The CA certificate (PEM) of the serving certificate (TLS only).
    pub fn ca_pem(&self) -> Option<&str> {
        self.credentials.as_ref().map(|(ca, _)| ca.as_str())
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A kube client for this server (built from [`RunningServer::kubeconfig`]). Its default retry policy is off, so
    /// callers see 429, 503 and 504 as the server sends them (reflectors must).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// A kubeconfig (YAML) pointing at this server, context `kinformer`, namespace `default`;
    /// with TLS, the CA as `certificate-authority-data` and the bearer token.
    pub fn kubeconfig(&self) -> String {
        crate::kubeconfig::yaml(&self.base_url(), self.credentials.as_ref())
    }

    /// Writes [`RunningServer::kubeconfig`] to `path`.
    /// The file is readable by its owner only (it holds the token).
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        use std::io::Write;
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        opts.open(path)?.write_all(self.kubeconfig().as_bytes())
    }

    /// The fault-injection API.
    pub fn faults(&self) -> Faults {
        Faults::new(self.ctx.faults.clone(), self.ctx.api.clone())
    }

    /// Serves a new resource type (custom resource) from now on.
    pub fn register(&self, info: ResourceInfo) {
        self.ctx.api.registry.register(info);
    }

    /// The current store revision.
    pub fn revision(&self) -> u64 {
        self.ctx.api.store.revision()
    }

    /// The requests served so far (method, path, query, verb, code).
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.ctx.requests.lock().clone()
    }

    /// Clears the request log.
    pub fn clear_requests(&self) {
        self.ctx.requests.lock().clear();
    }

    /// Waits until some watch has been sent a BOOKMARK carrying a resourceVersion of at least
    /// `revision` (at most `timeout`); returns whether one was.
    pub async fn wait_for_bookmark(&self, revision: u64, timeout: Duration) -> bool {
        let mut rx = self.ctx.bookmark_rv.subscribe();
        matches!(
            tokio::time::timeout(timeout, rx.wait_for(|r| *r >= revision)).await,
            Ok(Ok(_))
        )
    }

    /// Watches open right now: of `resource` (its plural for the core group, `plural.group`
    /// otherwise, e.g. `configmaps`, `deployments.apps`), or of every resource (`None`). The
    /// same figure as the `apiserver_longrunning_requests{verb="WATCH"}` gauge at `/metrics`:
    /// a watch counts from its response head until its body ends or the client disconnects.
    pub fn open_watches(&self, resource: Option<&str>) -> usize {
        self.ctx.metrics.open_watches(resource)
    }

    /// Changes the history limits.
    pub fn set_history(&self, history: HistoryConfig) {
        self.ctx.api.store.set_history_config(history);
    }

    /// Shuts down gracefully: ends every watch, stops accepting, waits for the server task.
    pub async fn shutdown(self) {
        self.ctx.shutdown.cancel();
        let task = self.task.lock().take();
        if let Some(t) = task {
            let _ = t.await;
        }
        let controllers = self.controllers.lock().take();
        if let Some(t) = controllers {
            let _ = t.await;
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.ctx.shutdown.cancel();
    }
}
