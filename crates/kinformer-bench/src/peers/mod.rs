//! The Rust peers (kinformer, kube-rs, the decode-only floors) and the workload driver they
//! share. The Go peer (bench/peers/client-go) implements the same workloads and JSON.
//!
//! Every informer peer runs with the same setup: two handlers (both count adds and updates;
//! the first also records W2 latencies) and, where the library has indexes, two indexes
//! (namespace and `spec.nodeName`). kube-rs's store has no indexes. Every peer connects
//! through a kubeconfig ([`crate::kubeconfig`]).

mod floor;
mod kinformer_peer;
mod kube_rs;
mod soak;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kube::api::ObjectMeta;
use parking_lot::Mutex;

use crate::control::{TS_ANNOTATION, now_nanos};
use crate::result::{Peer, PeerReport, Workload, percentile};
use crate::rss;

/// Why a peer run failed.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The kube client could not be built.
    #[error("client: {0}")]
    Client(String),
    /// The peer did not reach the expected state in time.
    #[error("timed out after {0:?} waiting for {1}")]
    Timeout(Duration, &'static str),
    /// The control port failed.
    #[error("control: {0}")]
    Control(String),
    /// A list failed (floor).
    #[error("list: {0}")]
    List(String),
    /// The peer is not a Rust peer or does not run this workload.
    #[error("{0} does not run {1} here")]
    Unsupported(Peer, Workload),
}

/// What a peer run is told.
#[derive(Debug, Clone)]
pub struct PeerArgs {
    /// The kubeconfig to connect with (its current context).
    pub kubeconfig: Option<PathBuf>,
    /// The API server's base URL (plain HTTP, no credentials) when there is no kubeconfig.
    pub url: Option<String>,
    /// The control port address (`127.0.0.1:PORT`); needed by W2 and W3.
    pub control: Option<String>,
    /// Pods on the server.
    pub n: u64,
    /// The workload.
    pub workload: Workload,
    /// W2: updates to request.
    pub updates: u64,
    /// Give up after this long in any one wait.
    pub timeout: Duration,
    /// W5: RSS sampling interval.
    pub sample: Duration,
}

/// Counters shared by a peer's handlers and the driver.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Adds seen by the first handler.
    pub adds: AtomicU64,
    /// Updates seen by each of the two handlers.
    pub updates: [AtomicU64; 2],
    /// Set by the peer once its library reports synced.
    pub synced: AtomicBool,
    /// kube-rs: `InitDone` events seen (a relist ends with one).
    pub init_done: AtomicU64,
    /// W2: latencies in microseconds (first handler), with the arrival time of the first and
    /// last measured update.
    pub w2: Mutex<W2Samples>,
    /// W2: record latencies only while set.
    pub recording: AtomicBool,
}

/// Latency samples of W2.
#[derive(Debug, Default)]
pub(crate) struct W2Samples {
    /// Write-to-handler latencies, microseconds.
    pub latencies_us: Vec<f64>,
    /// Arrival of the first recorded update.
    pub first: Option<Instant>,
    /// Arrival of the last recorded update.
    pub last: Option<Instant>,
}

impl Counters {
    /// An add seen by handler `h`.
    pub(crate) fn on_add(&self, h: usize) {
        if h == 0 {
            self.adds.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// An update seen by handler `h` (the object's metadata); the first handler records W2
    /// latency.
    pub(crate) fn on_update(&self, h: usize, meta: &ObjectMeta) {
        self.updates[h.min(1)].fetch_add(1, Ordering::Relaxed);
        if h != 0 || !self.recording.load(Ordering::Relaxed) {
            return;
        }
        let written = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(TS_ANNOTATION))
            .and_then(|v| v.parse::<u128>().ok());
        if let Some(written) = written {
            let now = now_nanos();
            let us = now.saturating_sub(written) as f64 / 1000.0;
            let at = Instant::now();
            let mut s = self.w2.lock();
            s.latencies_us.push(us);
            s.first.get_or_insert(at);
            s.last = Some(at);
        }
    }

    fn updates_min(&self) -> u64 {
        self.updates[0]
            .load(Ordering::Relaxed)
            .min(self.updates[1].load(Ordering::Relaxed))
    }
}

/// A running peer: the driver asks it for its cache size and stops it at the end.
pub(crate) trait RunningPeer {
    /// Objects in the cache now.
    fn cached(&self) -> u64;
    /// The resourceVersion of the library's last list or watch event, when it tells.
    fn last_sync_resource_version(&self) -> Option<u64> {
        None
    }
}

/// Polls `cond` every millisecond until true or `timeout`.
async fn wait_until(
    timeout: Duration,
    what: &'static str,
    mut cond: impl FnMut() -> bool,
) -> Result<(), PeerError> {
    let deadline = Instant::now() + timeout;
    while !cond() {
        if Instant::now() > deadline {
            return Err(PeerError::Timeout(timeout, what));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}

/// Builds a kube client from the kubeconfig (or, without one, for the plain URL) with kube's
/// implicit 429/503/504 retries off.
///
/// # Errors
/// [`PeerError::Client`] for a bad kubeconfig or URL.
pub(crate) async fn client(args: &PeerArgs) -> Result<kube::Client, PeerError> {
    if let Some(path) = &args.kubeconfig {
        return crate::kubeconfig::client(path)
            .await
            .map_err(|e| PeerError::Client(e.to_string()));
    }
    let url = args
        .url
        .as_deref()
        .ok_or_else(|| PeerError::Client("need --kubeconfig or --url".into()))?;
    let uri: http::Uri = url.parse().map_err(|e| PeerError::Client(format!("{e}")))?;
    let mut config = kube::Config::new(uri);
    config.default_retry = false;
    kube::Client::try_from(config).map_err(|e| PeerError::Client(e.to_string()))
}

/// A relist reply `ok rv=N` (a real server, which cannot change every object unseen): the
/// relist is done once the library has listed at or after N. `None` for a bare `ok`.
pub(crate) fn relist_target(reply: &str) -> Option<u64> {
    reply.strip_prefix("rv=")?.trim().parse().ok()
}

/// Sends `command` to the control port; returns what follows `ok` (trimmed).
fn control(args: &PeerArgs, command: &str) -> Result<String, PeerError> {
    let addr = args
        .control
        .as_deref()
        .ok_or_else(|| PeerError::Control("no --control address".into()))?;
    let reply =
        crate::control::send(addr, command).map_err(|e| PeerError::Control(e.to_string()))?;
    match reply.strip_prefix("ok") {
        Some(rest) if rest.is_empty() || rest.starts_with(' ') => Ok(rest.trim().to_string()),
        _ => Err(PeerError::Control(reply)),
    }
}

/// Settling time before reading a steady-state RSS: long enough for an informer's own
/// tidy-up after its list (`kinformer::memory`, half a second after the list).
const SETTLE: Duration = Duration::from_secs(2);

/// Runs `work` as a task on the runtime's workers, as an informer's reflector runs, rather
/// than on the thread that called `block_on` (which every body frame would have to wake).
async fn spawned(
    work: impl std::future::Future<Output = Result<PeerReport, PeerError>> + Send + 'static,
) -> Result<PeerReport, PeerError> {
    tokio::spawn(work)
        .await
        .map_err(|e| PeerError::List(format!("the floor's task failed: {e}")))?
}

/// Runs a Rust `peer` on the workload and returns its report.
///
/// # Errors
/// See [`PeerError`]; [`PeerError::Unsupported`] for the Go peers (their own binary), a floor
/// on a workload it has no floor for, and W5 on anything but kinformer.
pub async fn run(peer: Peer, args: &PeerArgs) -> Result<PeerReport, PeerError> {
    let unsupported = || PeerError::Unsupported(peer, args.workload);
    let client = client(args).await?;
    let mut report = PeerReport::new(peer, args.workload, args.n);
    report.baseline_rss_kib = rss::current_kib();
    match (peer, args.workload) {
        (Peer::FloorPaged, Workload::W1) => {
            return spawned(floor::run_paged(client, report)).await;
        }
        (Peer::FloorUnpaged, Workload::W1) => {
            return spawned(floor::run_unpaged(client, report)).await;
        }
        (Peer::FloorStreaming, Workload::W1) => {
            return spawned(floor::run_streaming(client, report)).await;
        }
        (Peer::FloorWatch, Workload::W2) | (Peer::KubeRs, _) => {}
        (p, w) if p.runs(w) && kinformer_peer::Variant::of(p).is_some() => {}
        _ => return Err(unsupported()),
    }
    if args.workload == Workload::W5 && peer != Peer::Kinformer {
        return Err(unsupported());
    }
    let counters = Arc::new(Counters::default());
    let transform = args.workload == Workload::W1t;
    let (t0, cpu0) = (Instant::now(), crate::cpu::process_ms());
    let running: Box<dyn RunningPeer> = match (peer, kinformer_peer::Variant::of(peer)) {
        (_, Some(variant)) if args.workload == Workload::W5 => {
            let p = kinformer_peer::start_pods(client.clone(), counters.clone(), variant, false)?;
            return soak::run(p, client, counters, args, report, t0).await;
        }
        (_, Some(variant)) => {
            kinformer_peer::start(client.clone(), counters.clone(), variant, transform)?
        }
        (Peer::KubeRs, _) => Box::new(kube_rs::start(client, counters.clone(), transform)?),
        _ => Box::new(floor::start_watch(client, counters.clone())),
    };
    let n = args.n;
    wait_until(args.timeout, "initial sync", || {
        counters.synced.load(Ordering::Relaxed) && counters.adds.load(Ordering::Relaxed) >= n
    })
    .await?;
    let sync = t0.elapsed();
    let cpu_at_sync = crate::cpu::since(cpu0);
    let at_sync = rss::current_kib();
    let peak = rss::peak_kib();
    tokio::time::sleep(SETTLE).await;
    // Like the Go peer (`runtime.GC(); debug.FreeOSMemory()`), hand freed memory back to the
    // OS first, so the figure is live data, not what the allocator keeps for later.
    kinformer::memory::release_free_memory();
    let steady = rss::current_kib();
    report.objects = running.cached();
    report.steady_rss_kib = Some(steady);
    match args.workload {
        Workload::W1 | Workload::W1t => {
            report.sync_ms = Some(sync.as_secs_f64() * 1000.0);
            report.cpu_ms_at_sync = cpu_at_sync;
            report.peak_rss_kib = Some(peak);
            let per_object = |kib: u64| {
                kib.saturating_sub(report.baseline_rss_kib) as f64 * 1024.0
                    / report.objects.max(1) as f64
            };
            report.bytes_per_object = Some(per_object(steady));
            report.bytes_per_object_at_sync = Some(per_object(at_sync));
        }
        Workload::W3 => {
            rss::reset_peak();
            let before = counters.updates_min();
            let inits = counters.init_done.load(Ordering::Relaxed);
            let target = relist_target(&control(args, "relist")?);
            let t = Instant::now();
            wait_until(args.timeout, "relist", || {
                counters.init_done.load(Ordering::Relaxed) > inits
                    || match target {
                        Some(rv) => running
                            .last_sync_resource_version()
                            .is_some_and(|v| v >= rv),
                        None => counters.updates_min() >= before + n,
                    }
            })
            .await?;
            report.relist_ms = Some(t.elapsed().as_secs_f64() * 1000.0);
            report.relist_peak_rss_kib = Some(rss::peak_kib());
        }
        Workload::W2 => {
            let before = counters.updates_min();
            counters.recording.store(true, Ordering::Relaxed);
            control(args, &format!("update {}", args.updates))?;
            let want = before + args.updates;
            wait_until(args.timeout, "updates", || counters.updates_min() >= want).await?;
            counters.recording.store(false, Ordering::Relaxed);
            let s = counters.w2.lock();
            let mut lat = s.latencies_us.clone();
            lat.sort_by(|a, b| a.total_cmp(b));
            let span = match (s.first, s.last) {
                (Some(a), Some(b)) => (b - a).as_secs_f64(),
                _ => 0.0,
            };
            report.events = Some(lat.len() as u64);
            report.events_per_sec = Some(if span > 0.0 {
                (lat.len() as f64 - 1.0) / span
            } else {
                0.0
            });
            report.latency_p50_us = percentile(&lat, 50.0);
            report.latency_p99_us = percentile(&lat, 99.0);
        }
        Workload::W5 => return Err(unsupported()),
    }
    report.objects = running.cached();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relist_replies_with_and_without_a_target() {
        assert_eq!(relist_target("rv=1234"), Some(1234));
        assert_eq!(relist_target(""), None);
        assert_eq!(relist_target("rv=x"), None);
        assert_eq!(relist_target("revision=3"), None);
    }
}
