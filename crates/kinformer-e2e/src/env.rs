//! Which real server to use, clients for it, namespaces, compaction, convergence checks.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kinformer::InformerConfig;
use kinformer::informer::QueueMode;
use kinformer::{Object, meta_namespace_key};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

/// The kubeconfig of the real server started with the watch cache **on** (the default, like
/// real clusters: bookmarks, `resourceVersion=0` served from memory).
pub const WATCHCACHE_KUBECONFIG_VAR: &str = "KINFORMER_E2E_KUBECONFIG";

/// The kubeconfig of the real server started with the watch cache **off**
/// (`E2E_WATCH_CACHE=false`): lists, watches and continue tokens go to etcd, so a compaction
/// forces 410s at once and `limit` is honoured with `resourceVersion=0`.
pub const NOCACHE_KUBECONFIG_VAR: &str = "KINFORMER_E2E_NOCACHE_KUBECONFIG";

/// The kubeconfig of a real server started with its `WatchList` feature gate **off**
/// (`E2E_WATCH_LIST=false`): it refuses streaming lists (`sendInitialEvents=true`) with
/// `422 Invalid`, so informers must list. `scripts/test.sh` points it at the watch-cache-off
/// instance, started that way.
pub const NO_WATCH_LIST_KUBECONFIG_VAR: &str = "KINFORMER_E2E_NO_WATCH_LIST_KUBECONFIG";

/// What the e2e helpers can fail with.
#[derive(Debug, thiserror::Error)]
pub enum E2eError {
    /// The kubeconfig could not be read or turned into a client configuration.
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The harness's state file has no compact URL, or it is not `http://host:port/path`.
    #[error("no usable compact URL: {0}")]
    NoCompactUrl(String),
    /// The compact request failed.
    #[error("compact request: {0}")]
    Compact(String),
    /// A request to the API server failed.
    #[error("API request: {0}")]
    Kube(#[from] kube::Error),
}

/// A real API server to test against: its kubeconfig and, when the harness's `state.json` sits
/// next to it, the URL that compacts its etcd.
#[derive(Debug, Clone)]
pub struct E2eEnv {
    /// The kubeconfig path.
    pub kubeconfig: PathBuf,
    /// `compactURL` from `state.json` next to the kubeconfig, if present.
    pub compact_url: Option<String>,
}

impl E2eEnv {
    /// The server named by environment variable `var`, or `None` after printing one line
    /// `skipped <test>: <var> is not set …` (the test then returns and passes: without the Go
    /// harness there is nothing to test against).
    pub fn from_env(var: &str, test: &str) -> Option<Self> {
        match std::env::var_os(var) {
            Some(path) if !path.is_empty() => Some(Self::at(PathBuf::from(path))),
            _ => {
                // straight to stderr, not `eprintln!`: the test harness captures the macros, and
                // a skip must be visible in a normal run
                let _ = writeln!(
                    std::io::stderr(),
                    "skipped {test}: {var} is not set (no real kube-apiserver; ./scripts/test.sh \
                     starts one with e2e/start.sh and exports it)"
                );
                None
            }
        }
    }

    /// The server whose kubeconfig is at `kubeconfig`.
    pub fn at(kubeconfig: PathBuf) -> Self {
        let compact_url = kubeconfig
            .parent()
            .map(|dir| dir.join("state.json"))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
            .and_then(|v| v.get("compactURL")?.as_str().map(str::to_owned));
        Self {
            kubeconfig,
            compact_url,
        }
    }

    /// A `kube::Client` for this server with kube's implicit retries of 429/503/504 turned off
    /// (`default_retry = false`), so informers see those statuses as client-go's do.
    pub async fn client(&self) -> Result<kube::Client, E2eError> {
        let err = |message: String| E2eError::Kubeconfig {
            path: self.kubeconfig.clone(),
            message,
        };
        let kc = Kubeconfig::read_from(&self.kubeconfig).map_err(|e| err(e.to_string()))?;
        let mut config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .map_err(|e| err(e.to_string()))?;
        config.default_retry = false;
        kube::Client::try_from(config).map_err(|e| err(e.to_string()))
    }

    /// Compacts the server's etcd at its current revision (`POST compactURL`); returns the
    /// harness's answer (`{"revision": N}`). Every resourceVersion before it expires: on a
    /// server without watch cache the next list or watch from one answers 410 `Expired`.
    pub async fn compact(&self) -> Result<String, E2eError> {
        let url = self
            .compact_url
            .clone()
            .ok_or_else(|| E2eError::NoCompactUrl(self.kubeconfig.display().to_string()))?;
        tokio::task::spawn_blocking(move || post_plain_http(&url))
            .await
            .map_err(|e| E2eError::Compact(e.to_string()))?
    }
}

/// `POST http://host:port/path` with an empty body over plain HTTP/1.1 (the harness's admin
/// endpoint on 127.0.0.1); the body of a 2xx answer.
fn post_plain_http(url: &str) -> Result<String, E2eError> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| E2eError::NoCompactUrl(url.to_owned()))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let compact_err = |e: std::io::Error| E2eError::Compact(e.to_string());
    let mut sock = std::net::TcpStream::connect(authority).map_err(compact_err)?;
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(compact_err)?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    sock.write_all(request.as_bytes()).map_err(compact_err)?;
    let mut response = String::new();
    sock.read_to_string(&mut response).map_err(compact_err)?;
    let status_ok = response
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .is_some_and(|code| code.starts_with('2'));
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    if status_ok {
        Ok(body)
    } else {
        Err(E2eError::Compact(response))
    }
}

static NAMESPACE_SEQ: AtomicU32 = AtomicU32::new(0);

/// Creates a fresh namespace `<prefix>-<pid>-<seq>-<time>` (unique across parallel tests and
/// runs against the same server) and its `default` ServiceAccount (the ServiceAccount admission
/// plugin rejects pods whose service account does not exist). The harness's
/// kube-controller-manager creates that ServiceAccount too, asynchronously, and a harness started
/// with `E2E_KCM=false` does not: whoever comes first creates it, the other's 409 AlreadyExists
/// is fine. Returns the name.
pub async fn create_namespace(client: &kube::Client, prefix: &str) -> Result<String, E2eError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let name = format!(
        "{prefix}-{}-{}-{nanos:x}",
        std::process::id(),
        NAMESPACE_SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.clone());
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    let mut sa = ServiceAccount::default();
    sa.metadata.name = Some("default".into());
    match Api::<ServiceAccount>::namespaced(client.clone(), &name)
        .create(&PostParams::default(), &sa)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    Ok(name)
}

/// Deletes a namespace made by [`create_namespace`]. Best effort, not waited for: the harness's
/// namespace controller deletes its objects and then the namespace (with `E2E_KCM=false` it
/// stays `Terminating` until the server is stopped; its data directory is temporary).
pub async fn delete_namespace(client: &kube::Client, name: &str) {
    let _ = Api::<Namespace>::all(client.clone())
        .delete(name, &DeleteParams::default())
        .await;
}

/// `namespace/name` → `metadata.resourceVersion` of `objects`, in key order: what two caches
/// must agree on to hold the same state.
pub fn snapshot<'a, K: Resource + 'a>(
    objects: impl IntoIterator<Item = &'a K>,
) -> BTreeMap<String, String> {
    objects
        .into_iter()
        .filter_map(|o| {
            let key = meta_namespace_key(o).ok()?;
            Some((key, o.meta().resource_version.clone().unwrap_or_default()))
        })
        .collect()
}

/// A fresh, consistent list (no `resourceVersion`: read from etcd) of what `api` addresses,
/// filtered by `params`, as a [`snapshot`].
pub async fn server_snapshot<K>(
    api: &Api<K>,
    params: &ListParams,
) -> Result<BTreeMap<String, String>, E2eError>
where
    K: Object + Clone + DeserializeOwned + Debug,
{
    let list = api.list(params).await?;
    Ok(snapshot(list.items.iter()))
}

/// Polls `check` every 50 ms until it returns `Some`, for at most `timeout`; returns the value,
/// or `None` on timeout. For waiting on a real server, where convergence takes real time.
pub async fn eventually<T, F, Fut>(timeout: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return Some(v);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The environment variable that picks the queue mode the informer tests run in:
/// `real-fifo` (unset: the default) or `delta-fifo`. `scripts/test.sh` runs the informer tests
/// once in each. A test setting: the library itself reads no environment variable.
pub const QUEUE_MODE_VAR: &str = "KINFORMER_QUEUE_MODE";

/// The queue mode under test ([`QUEUE_MODE_VAR`]); an unknown value fails the test.
pub fn queue_mode() -> QueueMode {
    match std::env::var(QUEUE_MODE_VAR) {
        Err(_) => QueueMode::default(),
        Ok(v) => QueueMode::parse(&v).unwrap_or_else(|| {
            panic!("{QUEUE_MODE_VAR}={v:?} is neither real-fifo nor delta-fifo")
        }),
    }
}

/// `InformerConfig::default()` in the queue mode under test: what every informer test starts
/// from.
pub fn config<K>() -> InformerConfig<K> {
    InformerConfig::default().queue_mode(queue_mode())
}
