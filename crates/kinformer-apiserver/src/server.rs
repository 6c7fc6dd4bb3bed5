//! Running the server in process: [`start`] → [`RunningServer`].

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::api::{Api, Registry};
use crate::context::{Context, RequestRecord, Settings};
use crate::faults::{FaultState, Faults};
use crate::objects::{Preconditions, UpdateMode};
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::{HistoryConfig, Store};

/// How to run a server. Start from [`ServerConfig::default`] and adjust.
///
/// ```
/// use std::time::Duration;
/// use kinformer_apiserver::ServerConfig;
/// let config = ServerConfig::default()
///     .bookmark_interval(Duration::from_secs(1))
///     .too_large_wait(Duration::from_millis(100));
/// assert_eq!(config.port, 0);
/// ```
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Event history limits (automatic compaction).
    pub history: HistoryConfig,
    /// Behaviour settings (waits, bookmark interval, limits).
    pub settings: Settings,
    /// Extra resource types to serve from the start.
    pub resources: Vec<ResourceInfo>,
    /// Create `default`, `kube-system`, `kube-public` and `kube-node-lease` namespaces.
    pub default_namespaces: bool,
    /// Refuse creates in namespaces that do not exist (404), like the real server. Off by
    /// default so tests can use any namespace without creating it first.
    pub enforce_namespaces: bool,
    /// Serve HTTPS with a certificate generated at start (its CA in [`RunningServer::kubeconfig`])
    /// and require the bearer token [`RunningServer::token`] (401 without it), like a real
    /// server. Off by default in process (tests reach the plain HTTP address directly); the
    /// standalone server (`kinformer serve`, `kinformer-apiserver`) turns it on.
    pub tls: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            port: 0,
            history: HistoryConfig::default(),
            settings: Settings::default(),
            resources: Vec::new(),
            default_namespaces: true,
            enforce_namespaces: false,
            tls: false,
        }
    }
}

impl ServerConfig {
    /// Listens on this port (0: a free one).
    #[must_use]
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }
    /// Sets the history limits.
    #[must_use]
    pub fn history(mut self, history: HistoryConfig) -> Self {
        self.history = history;
        self
    }
    /// Sets the BOOKMARK interval (real servers: about a minute).
    #[must_use]
    pub fn bookmark_interval(mut self, d: Duration) -> Self {
        self.settings.bookmark_interval = d;
        self
    }
    /// Sets how long a future resourceVersion is waited for before 504 (real: 3 s).
    #[must_use]
    pub fn too_large_wait(mut self, d: Duration) -> Self {
        self.settings.too_large_wait = d;
        self
    }
    /// Serves an extra resource type (custom resource).
    #[must_use]
    pub fn resource(mut self, info: ResourceInfo) -> Self {
        self.resources.push(info);
        self
    }
    /// Refuses creates in namespaces that do not exist (404 `namespaces "x" not found`).
    #[must_use]
    pub fn enforce_namespaces(mut self, on: bool) -> Self {
        self.enforce_namespaces = on;
        self
    }
    /// Serves HTTPS and requires a bearer token ([`ServerConfig::tls`]).
    #[must_use]
    pub fn tls(mut self, on: bool) -> Self {
        self.tls = on;
        self
    }
    /// Turns the request log on or off (on by default).
    #[must_use]
    pub fn record_requests(mut self, on: bool) -> Self {
        self.settings.record_requests = on;
        self
    }
}

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
    /// Generating the certificates failed.
    #[error("cannot set up TLS: {0}")]
    Tls(String),
    /// Building the kube client failed.
    #[error("cannot build a kube client: {0}")]
    Client(String),
    /// Seeding an object failed.
    #[error("seeding failed: {0}")]
    Seed(#[from] ApiError),
}

/// One object as the server holds it (ground truth for tests).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectState {
    /// Namespace (empty for cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// The full object.
    pub object: Value,
}

/// The exact current objects of a resource.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerState {
    /// The store revision the state was read at.
    pub resource_version: u64,
    /// Objects in key order.
    pub objects: Vec<ObjectState>,
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
}

impl std::fmt::Debug for RunningServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningServer")
            .field("addr", &self.addr)
            .finish()
    }
}

/// Starts a server on 127.0.0.1 (a free port unless configured).
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
    let registry = Registry::new();
    for r in &config.resources {
        registry.register(r.clone());
    }
    let api = Arc::new(Api {
        enforce_namespaces: config.enforce_namespaces,
        registry,
        store: Store::new(config.history),
    });
    let credentials = if config.tls {
        Some(crate::tls::generate().map_err(|e| StartError::Tls(e.to_string()))?)
    } else {
        None
    };
    let ctx = Arc::new(Context {
        api,
        faults: Arc::new(FaultState::default()),
        settings: config.settings.clone(),
        shutdown: CancellationToken::new(),
        requests: Mutex::new(Vec::new()),
        address: Mutex::new(String::new()),
        bookmark_rv: tokio::sync::watch::channel(0).0,
        token: credentials.as_ref().map(|c| c.token.clone()),
        metrics: crate::metrics::Metrics::default(),
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
            let body = crate::seed::namespace(ns);
            if let Value::Object(m) = body {
                ctx.api.create(&res, None, m)?;
            }
        }
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
    Ok(RunningServer {
        ctx,
        addr,
        credentials: public,
        client,
        task: Mutex::new(Some(task)),
    })
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

fn resource_for<K: kube::Resource<DynamicType = ()>>(
    ctx: &Context,
) -> Result<Arc<ResourceInfo>, ApiError> {
    let (g, v, p) = (K::group(&()), K::version(&()), K::plural(&()));
    ctx.api
        .registry
        .find(&g, &v, &p)
        .ok_or_else(ApiError::not_found_path)
}

fn to_map<T: Serialize>(obj: &T) -> Result<Map<String, Value>, ApiError> {
    match serde_json::to_value(obj) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::bad_request("object is not a JSON object")),
        Err(e) => Err(ApiError::bad_request(e.to_string())),
    }
}

fn from_bytes<K: DeserializeOwned>(b: &[u8]) -> Result<K, ApiError> {
    serde_json::from_slice(b)
        .map_err(|e| ApiError::internal(&format!("cannot decode stored object: {e}")))
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

    fn find(&self, resource: &str) -> Result<Arc<ResourceInfo>, ApiError> {
        self.ctx
            .api
            .registry
            .find_by_name(resource)
            .ok_or_else(ApiError::not_found_path)
    }

    /// Creates a typed object without HTTP (same rules as POST); returns it as stored.
    pub fn create<K>(&self, obj: &K) -> Result<K, ApiError>
    where
        K: kube::Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        let res = resource_for::<K>(&self.ctx)?;
        let ns = obj.meta().namespace.clone();
        let o = self.ctx.api.create(&res, ns.as_deref(), to_map(obj)?)?;
        from_bytes(&o.bytes)
    }

    /// Replaces a typed object without HTTP. Unlike PUT, writes `status` too (a storage-level
    /// write for tests); the `resourceVersion` precondition still applies when set.
    pub fn update<K>(&self, obj: &K) -> Result<K, ApiError>
    where
        K: kube::Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        let res = resource_for::<K>(&self.ctx)?;
        let meta = obj.meta();
        let name = meta.name.clone().unwrap_or_default();
        let o = self.ctx.api.update(
            &res,
            meta.namespace.as_deref(),
            &name,
            to_map(obj)?,
            UpdateMode::Raw,
        )?;
        from_bytes(&o.bytes)
    }

    /// Reads a typed object without HTTP.
    pub fn get<K>(&self, namespace: Option<&str>, name: &str) -> Result<K, ApiError>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        let res = resource_for::<K>(&self.ctx)?;
        let o = self.ctx.api.get(&res, namespace, name)?;
        from_bytes(&o.bytes)
    }

    /// Deletes a typed object without HTTP (finalizers are honoured).
    pub fn delete<K>(&self, namespace: Option<&str>, name: &str) -> Result<(), ApiError>
    where
        K: kube::Resource<DynamicType = ()>,
    {
        let res = resource_for::<K>(&self.ctx)?;
        self.ctx
            .api
            .delete(&res, namespace, name, &Preconditions::default())?;
        Ok(())
    }

    /// Creates an untyped object of `resource` (`pods`, `deployments.apps`, a registered
    /// custom resource) without HTTP; returns the stored JSON.
    pub fn create_value(
        &self,
        resource: &str,
        namespace: Option<&str>,
        obj: Value,
    ) -> Result<Value, ApiError> {
        let res = self.find(resource)?;
        let Value::Object(m) = obj else {
            return Err(ApiError::bad_request("object is not a JSON object"));
        };
        Ok(self.ctx.api.create(&res, namespace, m)?.to_value())
    }

    /// Replaces an untyped object without HTTP (storage-level, status included).
    pub fn update_value(
        &self,
        resource: &str,
        namespace: Option<&str>,
        obj: Value,
    ) -> Result<Value, ApiError> {
        let res = self.find(resource)?;
        let Value::Object(m) = obj else {
            return Err(ApiError::bad_request("object is not a JSON object"));
        };
        let name = m
            .get("metadata")
            .and_then(|x| x.get("name"))
            .and_then(|n| n.as_str())
            .unwrap_or("")
            .to_string();
        Ok(self
            .ctx
            .api
            .update(&res, namespace, &name, m, UpdateMode::Raw)?
            .to_value())
    }

    /// Replaces an existing object at the storage layer, as a write straight into etcd would:
    /// no validation, no defaults, no managedFields. `build` gets the stored version and the
    /// revision this write takes, and returns the new version, whose JSON must carry that
    /// revision as `metadata.resourceVersion` (a [`StoredObject`](crate::store::StoredObject)
    /// keeps its key, name, namespace and uid from the old one). Watchers get a `MODIFIED`
    /// event as for any update. Returns the revision written.
    ///
    /// For load generators (the benchmarks' watch-throughput writer), which need writes far
    /// cheaper than the update handler's merge and checks.
    ///
    /// # Errors
    /// 404 when the resource or the object does not exist; whatever `build` returns.
    pub fn put_stored(
        &self,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
        build: impl FnOnce(
            &crate::store::StoredObject,
            u64,
        ) -> Result<crate::store::StoredObject, ApiError>,
    ) -> Result<u64, ApiError> {
        let res = self.find(resource)?;
        let ns = if res.namespaced() {
            namespace.unwrap_or("")
        } else {
            ""
        };
        let key = crate::objects::storage_key(&res, ns, name);
        self.ctx
            .api
            .store
            .mutate(&res.group_resource(), &key, |current, rev| {
                let Some(current) = current else {
                    return Err(ApiError::not_found(&res, name));
                };
                let built = build(current, rev)?;
                let next = crate::store::StoredObject {
                    key: current.key.clone(),
                    namespace: current.namespace.clone(),
                    name: current.name.clone(),
                    uid: current.uid.clone(),
                    resource_version: rev,
                    ..built
                };
                Ok(crate::store::Mutation::Put(Arc::new(next), rev))
            })
    }

    /// Deletes an untyped object without HTTP.
    pub fn delete_value(
        &self,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(), ApiError> {
        let res = self.find(resource)?;
        self.ctx
            .api
            .delete(&res, namespace, name, &Preconditions::default())?;
        Ok(())
    }

    /// Creates many objects of `resource` without HTTP (fast seeding); returns the revision
    /// after the last one.
    pub fn seed(
        &self,
        resource: &str,
        objects: impl IntoIterator<Item = Value>,
    ) -> Result<u64, ApiError> {
        let res = self.find(resource)?;
        for obj in objects {
            let Value::Object(m) = obj else {
                return Err(ApiError::bad_request("object is not a JSON object"));
            };
            let ns = m
                .get("metadata")
                .and_then(|x| x.get("namespace"))
                .and_then(|n| n.as_str())
                .unwrap_or("default")
                .to_string();
            self.ctx.api.create(&res, Some(&ns), m)?;
        }
        Ok(self.revision())
    }

    /// Seeds `count` realistic pods ([`crate::seed::pod`]) named `pod-00000...` spread over
    /// `namespaces` namespaces (`ns-0`, `ns-1`, ... created as needed; `default` when 1).
    pub fn seed_pods(&self, count: usize, namespaces: usize) -> Result<u64, ApiError> {
        let names = crate::seed::namespace_names(namespaces);
        for ns in &names {
            let _ = self.create_value("namespaces", None, crate::seed::namespace(ns));
        }
        let pods = (0..count)
            .map(|i| crate::seed::pod(&names[i % names.len()], &format!("pod-{i:06}"), i));
        self.seed("pods", pods)
    }

    /// The exact current objects of `resource` (optionally in one namespace), with their
    /// resourceVersions: the ground truth a client cache must converge to.
    pub fn state(&self, resource: &str, namespace: Option<&str>) -> Result<ServerState, ApiError> {
        let res = self.find(resource)?;
        let prefix = match namespace {
            Some(ns) if res.namespaced() => format!("{ns}/"),
            _ => String::new(),
        };
        let (rv, objs) = self
            .ctx
            .api
            .store
            .list(&res.group_resource(), None, &prefix, "")
            .map_err(|e| ApiError::internal(&e.to_string()))?;
        Ok(ServerState {
            resource_version: rv,
            objects: objs
                .iter()
                .map(|o| ObjectState {
                    namespace: o.namespace.clone(),
                    name: o.name.clone(),
                    uid: o.uid.clone(),
                    resource_version: o.resource_version.to_string(),
                    object: o.to_value(),
                })
                .collect(),
        })
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
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.ctx.shutdown.cancel();
    }
}
