//! [`ServerConfig`]: how to run a server, in process or as its own process (`kinformer serve`,
//! the `kinformer-apiserver` binary, the bench server). One type, one set of defaults.

use std::path::PathBuf;
use std::time::Duration;

use crate::resource::ResourceInfo;
use crate::store::HistoryConfig;

/// How to run a server. Start from [`ServerConfig::default`] (in process: plain HTTP) or
/// [`ServerConfig::standalone`] (its own process: TLS and a bearer token) and adjust.
///
/// Behaviour knobs (waits, bookmark interval, limits), what to serve, transport, and what to do
/// once listening (seed pods, write a kubeconfig) are all here; [`start`](crate::start) applies
/// them in that order.
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
    /// How long a request for a future resourceVersion waits before 504 "Too large resource
    /// version" (the real watch cache waits 3 s).
    pub too_large_wait: Duration,
    /// Interval of BOOKMARK events on watches that allow them (real: about a minute). A watch
    /// with `timeoutSeconds` also gets one 2 s before its deadline, as from the real watch
    /// cache.
    pub bookmark_interval: Duration,
    /// How long a watch that sets no `timeoutSeconds` (or 0) lasts at least: it ends at a
    /// random moment between this and twice this, as kube-apiserver's `--min-request-timeout`
    /// (1800 s, the default here too) ends such watches, spreading the re-watches of clients
    /// that never set a timeout (`kubectl get -w`, client-go's raw watches). Zero: such a watch
    /// lasts until something else ends it.
    pub min_request_timeout: Duration,
    /// Most events sent in one chunk of a watch response.
    pub watch_batch: usize,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Keep a log of requests (see [`RunningServer::requests`](crate::RunningServer::requests)).
    pub record_requests: bool,
    /// Extra resource types to serve from the start.
    pub resources: Vec<ResourceInfo>,
    /// Create `default`, `kube-system`, `kube-public` and `kube-node-lease` namespaces.
    pub default_namespaces: bool,
    /// Refuse creates in namespaces that do not exist (404 `namespaces "x" not found`), like
    /// the real server's NamespaceLifecycle admission. On in [`ServerConfig::standalone`]; off
    /// in [`ServerConfig::default`] so in-process tests can use any namespace without creating
    /// it first (creating into a namespace being terminated is refused either way, 403).
    pub enforce_namespaces: bool,
    /// Run the garbage collector inside the server (on by default): deleting an owner deletes
    /// its dependents (background and foreground propagation, `blockOwnerDeletion`) or strips
    /// their `ownerReferences` (orphan), and dependents whose owners never existed are
    /// deleted, as kube-controller-manager's collector does. Off: a bare API server;
    /// `ownerReferences` and the `orphan`/`foregroundDeletion` finalizers the API server sets
    /// are stored and nothing acts on them (envtest's behaviour).
    ///
    /// **Delay bound**: event-driven, no timer and no polling. The collector's task reads the
    /// store's events as soon as it is scheduled after a write and acts on them in the same
    /// round (microseconds of work per object on a multi-threaded runtime); a cascade of `n`
    /// levels takes `n` such rounds. On a current-thread runtime the task runs when the caller
    /// next awaits. A test should still poll for the outcome (with a bound of seconds, not a
    /// sleep): the deletion is asynchronous, as on a real cluster.
    pub garbage_collector: bool,
    /// Run the namespace controller inside the server (on by default): a deleted namespace's
    /// content is deleted, its conditions report what remains, and it is removed once empty.
    /// Off: a deleted namespace stays `Terminating` until its `kubernetes` finalizer is
    /// removed through `/finalize` by hand.
    pub namespace_controller: bool,
    /// Run the service account controller inside the server (on by default): every namespace
    /// that is not terminating has a `default` ServiceAccount (created with the namespace, and
    /// again if deleted), as kube-controller-manager keeps it, so `kubectl create token
    /// default` works anywhere. The system namespaces' exist when [`start`](crate::start)
    /// returns; a new namespace's appears right after it, as on a real cluster.
    pub service_account_controller: bool,
    /// Run the root CA publisher inside the server: every namespace has a ConfigMap
    /// `kube-root-ca.crt` whose `data["ca.crt"]` is the server's CA (the one in
    /// [`RunningServer::kubeconfig`](crate::RunningServer::kubeconfig)), annotated
    /// `kubernetes.io/description`, created with the namespace and again if deleted, its data
    /// put back if changed, as kube-controller-manager's `root-ca-cert-publisher` keeps it on
    /// every real cluster (a namespace's ConfigMap list holds it; pods mount it through their
    /// `kube-api-access-<random>` volume). It needs [`tls`](Self::tls) (without TLS there is
    /// no CA: [`start`](crate::start) refuses the configuration), so it is on in
    /// [`ServerConfig::standalone`] and off in [`ServerConfig::default`]. The system
    /// namespaces' copies exist when [`start`](crate::start) returns; a new namespace's
    /// appears right after it.
    pub root_ca_publisher: bool,
    /// Keep the `kubernetes` Service in `default` (on by default), as kube-apiserver does:
    /// type `ClusterIP` at `10.96.0.1`, port `https` 443 targeting the port this server
    /// listens on, and its Endpoints and EndpointSlice (`127.0.0.1` and that port), written
    /// by the manager `kube-apiserver` and back when deleted, so a cluster-wide Service or
    /// EndpointSlice list holds what it holds on any real cluster. Off: none of the three.
    pub kubernetes_service: bool,
    /// Serve HTTPS with a certificate generated at start (its CA in [`RunningServer::kubeconfig`](crate::RunningServer::kubeconfig))
    /// and require the bearer token [`RunningServer::token`](crate::RunningServer::token) (401 without it), like a real
    /// server. Off by default in process (tests reach the plain HTTP address directly); the
    /// standalone server (`kinformer serve`, `kinformer-apiserver`) turns it on.
    pub tls: bool,
    /// Realistic pods to seed once listening ([`RunningServer::seed_pods`](crate::RunningServer::seed_pods));
    /// 0 seeds none.
    pub seed_pods: usize,
    /// Namespaces to spread the seeded pods over (`ns-0`, `ns-1`, ...; `default` when 0 or 1).
    pub seed_namespaces: usize,
    /// Where to write a kubeconfig for other clients once listening (readable by its owner
    /// only: with TLS it holds the token); `None` writes none.
    pub kubeconfig: Option<PathBuf>,
    /// The `ShardedListAndWatch` feature gate (KEP-5866): `shardSelector` on list, watch
    /// (streaming lists included) and deletecollection selects the objects whose uid or
    /// namespace hashes into the given ranges, and lists echo it in
    /// `metadata.shardInfo`, exactly as kube-apiserver 1.36 with the gate on. Off: the
    /// parameter is ignored and no `shardInfo` is sent, as a 1.35 server (or 1.36 with the
    /// gate off) does, so a sharded client's fallback to filtering on its own side can be
    /// tested.
    ///
    /// **On by default**, unlike kube-apiserver 1.36 where this alpha gate is off: a test
    /// server is where a user tries sharded informers, and a selector silently ignored would
    /// hide what they came to test (a correct client works either way).
    pub sharded_list_and_watch: bool,
    /// Authorize requests with RBAC, as kube-apiserver's `--authorization-mode=RBAC` does (on
    /// by default): the server starts with kube-apiserver 1.36's bootstrap roles and bindings
    /// (`cluster-admin`, `admin`, `edit`, `view`, the `system:*` roles; `admin`, `edit` and
    /// `view` aggregated as kube-controller-manager aggregates them), and a request by anyone
    /// but `system:masters` (the server's own token) is allowed only by the roles bound to its
    /// user and groups: a service account token (`kubectl create token`, a `TokenRequest`),
    /// a request impersonating a user or service account (`Impersonate-User`, kubectl's
    /// `--as`, kube's `AuthInfo::impersonate`), and a request without credentials
    /// (`system:anonymous`); else 403 in RBAC's words. Access reviews (`kubectl auth can-i`)
    /// are answered by the same rules. Off: no roles are created, every authenticated request
    /// may do everything, and one without credentials only reads `/healthz`, `/livez`,
    /// `/readyz` and `/version`.
    pub rbac: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            port: 0,
            history: HistoryConfig::default(),
            too_large_wait: Duration::from_secs(3),
            bookmark_interval: Duration::from_secs(60),
            min_request_timeout: Duration::from_secs(1800),
            watch_batch: 1000,
            max_body_bytes: 3 * 1024 * 1024,
            record_requests: true,
            resources: Vec::new(),
            default_namespaces: true,
            enforce_namespaces: false,
            garbage_collector: true,
            namespace_controller: true,
            service_account_controller: true,
            root_ca_publisher: false,
            kubernetes_service: true,
            tls: false,
            seed_pods: 0,
            seed_namespaces: 1,
            kubeconfig: None,
            sharded_list_and_watch: true,
            rbac: true,
        }
    }
}

impl ServerConfig {
    /// The defaults of a server run as its own process (`kinformer serve`, the
    /// `kinformer-apiserver` binary): [`ServerConfig::default`] with [`tls`](Self::tls),
    /// [`enforce_namespaces`](Self::enforce_namespaces) and
    /// [`root_ca_publisher`](Self::root_ca_publisher) on, like a real cluster. Everything
    /// else (the garbage collector and namespace controller included) is shared with the
    /// in-process default.
    ///
    /// ```
    /// use kinformer_apiserver::ServerConfig;
    /// let config = ServerConfig::standalone();
    /// assert!(config.tls && config.enforce_namespaces && config.root_ca_publisher);
    /// assert!(!ServerConfig::default().tls && !ServerConfig::default().root_ca_publisher);
    /// assert!(config.garbage_collector && ServerConfig::default().garbage_collector);
    /// assert_eq!(config.port, ServerConfig::default().port);
    /// ```
    pub fn standalone() -> Self {
        ServerConfig {
            tls: true,
            enforce_namespaces: true,
            root_ca_publisher: true,
            ..ServerConfig::default()
        }
    }

    /// Listens on this port (0: a free one).
    #[must_use]
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }
    /// Sets [`sharded_list_and_watch`](Self::sharded_list_and_watch) (the
    /// `ShardedListAndWatch` gate; on by default).
    #[must_use]
    pub fn sharded_list_and_watch(mut self, on: bool) -> Self {
        self.sharded_list_and_watch = on;
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
        self.bookmark_interval = d;
        self
    }
    /// Sets how long a watch without `timeoutSeconds` lasts at least
    /// ([`ServerConfig::min_request_timeout`]; real: `--min-request-timeout`, 1800 s).
    #[must_use]
    pub fn min_request_timeout(mut self, d: Duration) -> Self {
        self.min_request_timeout = d;
        self
    }
    /// Sets how long a future resourceVersion is waited for before 504 (real: 3 s).
    #[must_use]
    pub fn too_large_wait(mut self, d: Duration) -> Self {
        self.too_large_wait = d;
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
    /// Runs the garbage collector or not ([`ServerConfig::garbage_collector`]).
    #[must_use]
    pub fn garbage_collector(mut self, on: bool) -> Self {
        self.garbage_collector = on;
        self
    }
    /// Runs the namespace controller or not ([`ServerConfig::namespace_controller`]).
    #[must_use]
    pub fn namespace_controller(mut self, on: bool) -> Self {
        self.namespace_controller = on;
        self
    }
    /// Runs the service account controller or not
    /// ([`ServerConfig::service_account_controller`]).
    #[must_use]
    pub fn service_account_controller(mut self, on: bool) -> Self {
        self.service_account_controller = on;
        self
    }
    /// Runs the root CA publisher or not ([`ServerConfig::root_ca_publisher`]; needs
    /// [`tls`](Self::tls)).
    #[must_use]
    pub fn root_ca_publisher(mut self, on: bool) -> Self {
        self.root_ca_publisher = on;
        self
    }
    /// Keeps the `kubernetes` Service and its endpoints or not
    /// ([`ServerConfig::kubernetes_service`]).
    #[must_use]
    pub fn kubernetes_service(mut self, on: bool) -> Self {
        self.kubernetes_service = on;
        self
    }
    /// Authorizes requests with RBAC or not ([`ServerConfig::rbac`]).
    #[must_use]
    pub fn rbac(mut self, on: bool) -> Self {
        self.rbac = on;
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
        self.record_requests = on;
        self
    }
    /// Seeds `count` realistic pods over `namespaces` namespaces once listening
    /// ([`ServerConfig::seed_pods`]).
    #[must_use]
    pub fn seed_pods(mut self, count: usize, namespaces: usize) -> Self {
        self.seed_pods = count;
        self.seed_namespaces = namespaces;
        self
    }
    /// Writes a kubeconfig for other clients to `path` once listening.
    #[must_use]
    pub fn kubeconfig(mut self, path: impl Into<PathBuf>) -> Self {
        self.kubeconfig = Some(path.into());
        self
    }
}
