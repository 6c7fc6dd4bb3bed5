//! The real-server tier: kube-apiserver v1.36.3 with embedded etcd, started by the e2e
//! harness (`e2e/start.sh`, its own process), seeded through the API, and a control port
//! served from the orchestrator that speaks the embedded server's protocol
//! ([`crate::control`]) with what a client can do to a real server:
//!
//! * `update COUNT` — COUNT merge patches of [`TS_ANNOTATION`] (the write time, ns), round-robin
//!   over the seeded pods, [`WRITERS`] in flight. The time is taken when the request is built,
//!   so latency includes the write's own round trip through the API server.
//! * `relist` — writes a ConfigMap twice (the pods' watchers do not see it), compacts etcd at
//!   the current revision (the harness's admin endpoint) and cuts every connection through
//!   the [`Proxy`]; each peer re-watches from its last resourceVersion, gets 410 (the W3
//!   instance runs without the watch cache, where a compaction takes effect at once; see
//!   e2e/README.md) and relists. Replies `ok rv=REVISION`: the relist is done once the peer
//!   has listed at or after it. A real server cannot change every object unseen as the
//!   embedded one does, so the relist brings unchanged objects, which client-go does not
//!   hand to its handlers.
//! * `drop` — cuts every connection through the proxy; `compact` — compacts etcd.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use kube::api::{Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::control::{TS_ANNOTATION, now_nanos};
use crate::proxy::Proxy;

/// Concurrent writes of the seeder and the W2 writer.
pub(crate) const WRITERS: usize = 32;

/// Namespaces the pods are spread over (as on the embedded tier).
pub(crate) const NAMESPACES: usize = 10;

/// Why the real tier failed.
#[derive(Debug, thiserror::Error)]
pub enum RealError {
    /// The harness did not start.
    #[error("e2e harness: {0}")]
    Harness(String),
    /// An API call failed.
    #[error("{0}: {1}")]
    Api(String, String),
    /// Other I/O.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

/// The repository's `e2e/` directory.
pub(crate) fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../e2e")
}

/// A running harness instance; stopped (`e2e/stop.sh`) when dropped.
pub(crate) struct Harness {
    instance: PathBuf,
    /// Its kubeconfig (TLS, bearer token).
    pub kubeconfig: PathBuf,
    /// `POST` here compacts etcd at the current revision (plain HTTP).
    pub compact_url: String,
    /// The API server's address.
    pub server: SocketAddr,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let status = Command::new("bash")
            .arg(e2e_dir().join("stop.sh"))
            .env("E2E_DIR", &self.instance)
            .stdout(Stdio::null())
            .status();
        if !matches!(status, Ok(s) if s.success()) {
            eprintln!(
                "e2e/stop.sh for {} failed: {status:?}",
                self.instance.display()
            );
        }
    }
}

impl Harness {
    /// Starts an instance in `instance` (building the harness on first use, which takes
    /// minutes), with or without the watch cache.
    ///
    /// # Errors
    /// [`RealError::Harness`] when it does not start or its state file is unreadable.
    pub(crate) fn start(instance: &Path, watch_cache: bool) -> Result<Self, RealError> {
        std::fs::create_dir_all(instance)
            .map_err(|e| RealError::Io(instance.display().to_string(), e))?;
        let instance = instance
            .canonicalize()
            .map_err(|e| RealError::Io(instance.display().to_string(), e))?;
        let out = Command::new("bash")
            .arg(e2e_dir().join("start.sh"))
            .env("E2E_DIR", &instance)
            .env("E2E_WATCH_CACHE", watch_cache.to_string())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| RealError::Harness(format!("cannot run e2e/start.sh: {e}")))?;
        if !out.status.success() {
            return Err(RealError::Harness(format!(
                "e2e/start.sh exited with {}",
                out.status
            )));
        }
        let state_path = instance.join("state.json");
        let text = std::fs::read_to_string(&state_path)
            .map_err(|e| RealError::Harness(format!("{}: {e}", state_path.display())))?;
        let harness = Self::from_state(&instance, &text)?;
        Ok(harness)
    }

    fn from_state(instance: &Path, text: &str) -> Result<Self, RealError> {
        let bad = |what: &str| RealError::Harness(format!("state.json: {what}"));
        let state: Value = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
        let field = |k: &str| {
            state
                .get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| bad(&format!("no {k}")))
        };
        let server = field("server")?;
        let addr = server
            .strip_prefix("https://")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| bad(&format!("server {server:?} is not https://IP:PORT")))?;
        Ok(Self {
            instance: instance.to_path_buf(),
            kubeconfig: PathBuf::from(field("kubeconfig")?),
            compact_url: field("compactURL")?,
            server: addr,
        })
    }
}

/// Compacts etcd through the harness's admin endpoint; returns the compacted revision.
///
/// # Errors
/// [`RealError::Api`] when the endpoint does not answer with a revision.
pub(crate) fn compact(compact_url: &str) -> Result<u64, RealError> {
    use std::io::{Read, Write};
    let err = |m: String| RealError::Api("compact".into(), m);
    let rest = compact_url
        .strip_prefix("http://")
        .ok_or_else(|| err(format!("not plain HTTP: {compact_url}")))?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut s = std::net::TcpStream::connect(host).map_err(|e| err(e.to_string()))?;
    write!(
        s,
        "POST /{path} HTTP/1.0\r\nHost: {host}\r\nContent-Length: 0\r\n\r\n"
    )
    .map_err(|e| err(e.to_string()))?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)
        .map_err(|e| err(e.to_string()))?;
    parse_compact_reply(&reply).ok_or_else(|| err(format!("unexpected reply {reply:?}")))
}

/// The revision in an HTTP reply whose body is `{"revision": N}`.
pub(crate) fn parse_compact_reply(reply: &str) -> Option<u64> {
    if !reply.starts_with("HTTP/1.") || !reply.split_whitespace().nth(1)?.starts_with('2') {
        return None;
    }
    let body = reply.split_once("\r\n\r\n")?.1;
    serde_json::from_str::<Value>(body)
        .ok()?
        .get("revision")?
        .as_u64()
}

/// A seed pod as a client would create it: the embedded tier's realistic pod without what
/// the server sets (resourceVersion, uid, creation time, managedFields) and without status,
/// which goes in afterwards through the status subresource as a kubelet would write it.
pub(crate) fn pod_for_create(ns: &str, name: &str, i: usize) -> (Value, Value) {
    let mut pod = kinformer_apiserver::seed::pod(ns, name, i);
    let status = pod
        .as_object_mut()
        .and_then(|o| o.remove("status"))
        .unwrap_or(Value::Null);
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "managedFields",
            "generation",
        ] {
            meta.remove(k);
        }
    }
    (pod, json!({ "status": status }))
}

fn ignore_exists<T>(r: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates the namespaces with their `default` ServiceAccount (the ServiceAccount admission
/// needs it; there is no controller manager to make it), then `pods` pods (create, then the
/// status a kubelet would write, under its own field manager) with [`WRITERS`] in flight.
/// Returns the pods as `(namespace, name)`.
///
/// # Errors
/// [`RealError::Api`] for the first failed call.
pub(crate) async fn seed(
    client: &kube::Client,
    pods: u64,
) -> Result<Vec<(String, String)>, RealError> {
    let api = |what: &str, e: kube::Error| RealError::Api(what.to_string(), e.to_string());
    let names = kinformer_apiserver::seed::namespace_names(NAMESPACES);
    for ns in &names {
        let nsapi: kube::Api<Namespace> = kube::Api::all(client.clone());
        let obj: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))
            .map_err(|e| RealError::Api("namespace".into(), e.to_string()))?;
        ignore_exists(nsapi.create(&PostParams::default(), &obj).await)
            .map_err(|e| api("create namespace", e))?;
        let sa: kube::Api<ServiceAccount> = kube::Api::namespaced(client.clone(), ns);
        let obj: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "default"}}))
            .map_err(|e| RealError::Api("serviceaccount".into(), e.to_string()))?;
        ignore_exists(sa.create(&PostParams::default(), &obj).await)
            .map_err(|e| api("create serviceaccount", e))?;
    }
    let t0 = Instant::now();
    let all: Vec<(String, String)> = (0..pods as usize)
        .map(|i| (names[i % names.len()].clone(), format!("pod-{i:06}")))
        .collect();
    let results: Vec<Result<(), RealError>> =
        futures::stream::iter(all.iter().enumerate().map(|(i, (ns, name))| {
            let client = client.clone();
            async move {
                let api_ns: kube::Api<Pod> = kube::Api::namespaced(client, ns);
                let (pod, status) = pod_for_create(ns, name, i);
                let pod: Pod = serde_json::from_value(pod)
                    .map_err(|e| RealError::Api("seed pod".into(), e.to_string()))?;
                ignore_exists(api_ns.create(&PostParams::default(), &pod).await)
                    .map_err(|e| api("create pod", e))?;
                api_ns
                    .patch_status(
                        name,
                        &PatchParams {
                            field_manager: Some("kubelet".into()),
                            ..Default::default()
                        },
                        &Patch::Merge(status),
                    )
                    .await
                    .map_err(|e| api("pod status", e))?;
                Ok(())
            }
        }))
        .buffer_unordered(WRITERS)
        .collect()
        .await;
    results.into_iter().collect::<Result<Vec<()>, _>>()?;
    eprintln!(
        "real tier: seeded {pods} pods in {:.1}s",
        t0.elapsed().as_secs_f64()
    );
    Ok(all)
}

/// The control port's state on the real tier.
pub(crate) struct RealControl {
    rt: tokio::runtime::Handle,
    client: kube::Client,
    pods: Arc<Vec<(String, String)>>,
    compact_url: String,
    proxy: Option<Arc<Proxy>>,
    /// Rate (writes/s) of the last finished W2 writer, for the report.
    pub last_write_rate: Arc<Mutex<Option<f64>>>,
}

impl RealControl {
    /// A control for the seeded `pods`; `proxy` is needed for `relist` and `drop`.
    pub(crate) fn new(
        rt: tokio::runtime::Handle,
        client: kube::Client,
        pods: Vec<(String, String)>,
        compact_url: String,
        proxy: Option<Arc<Proxy>>,
    ) -> Self {
        Self {
            rt,
            client,
            pods: Arc::new(pods),
            compact_url,
            proxy,
            last_write_rate: Arc::new(Mutex::new(None)),
        }
    }

    /// Answers one command line (see the module docs).
    pub(crate) fn handle(&self, command: &str) -> String {
        let mut words = command.split_whitespace();
        match (words.next(), words.next()) {
            (Some("update"), Some(count)) => match count.parse::<usize>() {
                Ok(count) => {
                    self.start_updates(count);
                    "ok".into()
                }
                Err(e) => format!("error: count: {e}"),
            },
            (Some("relist"), None) => match self.relist() {
                Ok(rev) => format!("ok rv={rev}"),
                Err(e) => format!("error: {e}"),
            },
            (Some("drop"), None) => match &self.proxy {
                Some(p) => {
                    p.cut_all();
                    "ok".into()
                }
                None => "error: no proxy on this instance".into(),
            },
            (Some("compact"), None) => match compact(&self.compact_url) {
                Ok(_) => "ok".into(),
                Err(e) => format!("error: {e}"),
            },
            _ => format!("error: unknown command {command:?}"),
        }
    }

    fn relist(&self) -> Result<u64, RealError> {
        let proxy = self
            .proxy
            .as_ref()
            .ok_or_else(|| RealError::Harness("relist needs the proxy".into()))?;
        let cms: kube::Api<ConfigMap> = kube::Api::namespaced(self.client.clone(), "default");
        self.rt.block_on(async {
            for i in 0..2 {
                let cm = json!({"metadata": {"name": "bench-relist"}, "data": {"n": format!("{}-{i}", now_nanos())}});
                cms.patch(
                    "bench-relist",
                    &PatchParams::apply("kinformer-bench").force(),
                    &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": cm["metadata"], "data": cm["data"]})),
                )
                .await
                .map_err(|e| RealError::Api("relist configmap".into(), e.to_string()))?;
            }
            Ok::<(), RealError>(())
        })?;
        let rev = compact(&self.compact_url)?;
        proxy.cut_all();
        Ok(rev)
    }

    fn start_updates(&self, count: usize) {
        let client = self.client.clone();
        let pods = self.pods.clone();
        let rate = self.last_write_rate.clone();
        self.rt.spawn(async move {
            let t0 = Instant::now();
            let failed = futures::stream::iter((0..count).map(|i| {
                let client = client.clone();
                let (ns, name) = pods[i % pods.len()].clone();
                async move {
                    let api: kube::Api<Pod> = kube::Api::namespaced(client, &ns);
                    let patch = json!({"metadata": {"annotations": {TS_ANNOTATION: now_nanos().to_string()}}});
                    api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                        .await
                        .is_err()
                }
            }))
            .buffer_unordered(WRITERS)
            .filter(|failed| futures::future::ready(*failed))
            .count()
            .await;
            let secs = t0.elapsed().as_secs_f64();
            let r = (count - failed) as f64 / secs.max(1e-9);
            eprintln!("real writer: {count} updates ({failed} failed) in {secs:.1}s: {r:.0}/s");
            *rate.lock() = Some(r);
        });
    }
}

/// Waits for `what` up to `timeout`, polling.
pub(crate) fn wait_for(timeout: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_replies_parse_to_the_revision() {
        let ok = "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"revision\":1234}\n";
        assert_eq!(parse_compact_reply(ok), Some(1234));
        let err = "HTTP/1.0 500 Internal Server Error\r\n\r\n{\"revision\":1}";
        assert_eq!(parse_compact_reply(err), None);
        assert_eq!(parse_compact_reply("garbage"), None);
        assert_eq!(
            parse_compact_reply("HTTP/1.0 200 OK\r\n\r\n{\"rev\":1}"),
            None
        );
    }

    #[test]
    fn state_files_give_the_server_address_and_compact_url() {
        let text = r#"{"kubeconfig": "/x/kubeconfig", "server": "https://127.0.0.1:33551",
            "compactURL": "http://127.0.0.1:39109/compact", "watchCache": true}"#;
        let h = Harness::from_state(Path::new("/x"), text).unwrap();
        assert_eq!(h.server, "127.0.0.1:33551".parse().unwrap());
        assert_eq!(h.compact_url, "http://127.0.0.1:39109/compact");
        assert_eq!(h.kubeconfig, PathBuf::from("/x/kubeconfig"));
        std::mem::forget(h); // nothing was started: no stop.sh
        assert!(Harness::from_state(Path::new("/x"), r#"{"server": "http://a"}"#).is_err());
    }

    #[test]
    fn a_seed_pod_for_create_carries_nothing_the_server_sets() {
        let (pod, status) = pod_for_create("ns-1", "pod-000001", 1);
        let meta = &pod["metadata"];
        for k in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "managedFields",
        ] {
            assert!(meta.get(k).is_none(), "{k} left in");
        }
        assert!(pod.get("status").is_none());
        assert_eq!(status["status"]["phase"], "Running");
        assert_eq!(meta["name"], "pod-000001");
    }
}
