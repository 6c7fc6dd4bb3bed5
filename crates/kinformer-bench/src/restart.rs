//! `kinformer-bench restart`: a pod informer restarted from its snapshot (warm) against a cold
//! start, built as the README builds it (a `SharedInformerFactory`, `informer::<Pod>()`), in
//! this process, through a proxy that counts the bytes the server sends.
//!
//! Each round, per tier and size:
//!
//! 1. **prime** — an informer with [`SnapshotOptions`] syncs, then the factory shuts down,
//!    which writes the snapshot (its write time and file size are reported);
//! 2. `changes` pods are updated while no informer runs ("while the controller was down");
//! 3. **warm** and **cold**, in alternating order: warm starts with the same snapshot options
//!    (it loads the snapshot and watches from its resourceVersion: no list), cold without
//!    (a list of everything). Measured: start → synced, start → caught up (the last changed
//!    pod is in the cache at the resourceVersion its update returned), and the bytes the server
//!    sent until then (the cluster-identity read included).
//!
//! Medians over the rounds are reported in `restart.md` / `restart.json`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kinformer::snapshot::{SnapshotOptions, SnapshotStatus};
use kinformer::{InformerConfig, SharedInformerFactory};
use kube::api::{ListParams, Patch, PatchParams};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::error::ReportError;
use crate::fleet::{Server, start_tier};
use crate::proxy::Proxy;
use crate::report_md::median;
use crate::result::Tier;

/// What to run.
#[derive(Debug, Clone)]
pub struct RestartOptions {
    /// Which servers.
    pub tiers: Vec<Tier>,
    /// Pods on the server.
    pub sizes: Vec<u64>,
    /// Rounds per size.
    pub rounds: usize,
    /// Pods updated while the informer is down.
    pub changes: u64,
    /// Timeout of each wait.
    pub timeout: Duration,
    /// Where to write `restart.md` and `restart.json` (the snapshots go to a subdirectory).
    pub out_dir: PathBuf,
}

/// One start of the informer.
#[derive(Debug, Clone, Serialize)]
pub struct StartRun {
    /// `embedded` or `real`.
    pub tier: Tier,
    /// Pods on the server.
    pub n: u64,
    /// `warm` (from the snapshot) or `cold`.
    pub mode: &'static str,
    /// Start → the informer has synced, seconds.
    pub synced_s: f64,
    /// Start → the last change made while down is in the cache, seconds.
    pub caught_up_s: f64,
    /// Bytes the server sent until caught up.
    pub bytes: u64,
    /// Requests the informer's reflector made: lists and watches.
    pub lists: u64,
    /// Watches started.
    pub watches: u64,
    /// What the snapshot did (warm), as the informer reports it.
    pub status: String,
}

/// One snapshot written on shutdown.
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotWrite {
    /// `embedded` or `real`.
    pub tier: Tier,
    /// Pods on the server.
    pub n: u64,
    /// Cancel → the factory has shut down (the snapshot written), seconds.
    pub shutdown_s: f64,
    /// The snapshot directory's size, bytes.
    pub file_bytes: u64,
}

/// Everything measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RestartResults {
    /// Every start.
    pub starts: Vec<StartRun>,
    /// Every snapshot written.
    pub writes: Vec<SnapshotWrite>,
    /// Notes (what failed or was skipped).
    pub notes: Vec<String>,
}

/// A client through the proxy, and the proxy.
struct Wire {
    client: kube::Client,
    proxy: Proxy,
}

async fn wire(kubeconfig: &Path, out: &Path, tier: Tier) -> Result<Wire, ReportError> {
    let direct = crate::kubeconfig::config(kubeconfig).await?;
    let upstream = direct
        .cluster_url
        .authority()
        .and_then(|a| a.as_str().parse().ok())
        .ok_or_else(|| {
            ReportError::Server(format!("server {} is not IP:PORT", direct.cluster_url))
        })?;
    let proxy = Proxy::start(upstream)
        .await
        .map_err(|e| ReportError::Io("proxy".into(), e))?;
    let scheme = direct.cluster_url.scheme_str().unwrap_or("http");
    let through = out.join(format!("kubeconfig-restart-{}", tier.as_str()));
    crate::kubeconfig::rewrite_server(
        kubeconfig,
        &through,
        &format!("{scheme}://{}", proxy.addr()),
    )?;
    let client = crate::kubeconfig::client(&through).await?;
    Ok(Wire { client, proxy })
}

fn factory(client: kube::Client, snapshot: Option<SnapshotOptions>) -> SharedInformerFactory {
    let mut defaults = InformerConfig::default();
    if let Some(snapshot) = snapshot {
        defaults = defaults.snapshot(snapshot);
    }
    SharedInformerFactory::builder(client)
        .defaults(defaults)
        .build()
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Starts a factory with one pod informer; waits for sync and for `last` (a pod's key and the
/// resourceVersion its update returned) to be in the cache; shuts down (which writes the
/// snapshot when one is configured).
async fn start_once(
    wire: &Wire,
    snapshot: Option<SnapshotOptions>,
    last: Option<&(String, String)>,
    timeout: Duration,
) -> Result<(f64, f64, u64, (u64, u64), String, f64), ReportError> {
    let snapshot_configured = snapshot.is_some();
    let before = wire.proxy.bytes_to_clients();
    let t0 = Instant::now();
    let factory = factory(wire.client.clone(), snapshot);
    let informer = factory.informer::<Pod>();
    factory.start();
    let cancel = CancellationToken::new();
    let wait = factory.wait_for_cache_sync(&cancel);
    let synced = tokio::time::timeout(timeout, wait)
        .await
        .map_err(|_| ReportError::Restart("the informer did not sync in time".into()))?;
    if !synced.values().all(|s| *s) {
        return Err(ReportError::Restart("the informer did not sync".into()));
    }
    let synced_s = t0.elapsed().as_secs_f64();
    if let Some((key, rv)) = last {
        let deadline = Instant::now() + timeout;
        loop {
            let current = informer
                .indexer()
                .get_by_key(key)
                .and_then(|p| p.metadata.resource_version.clone());
            if current.as_deref() == Some(rv.as_str()) {
                break;
            }
            if Instant::now() > deadline {
                return Err(ReportError::Restart(format!(
                    "{key} never reached resourceVersion {rv} (cache: {current:?})"
                )));
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let caught_up_s = t0.elapsed().as_secs_f64();
    let bytes = wire.proxy.bytes_to_clients() - before;
    if snapshot_configured && last.is_none() {
        // the prime run: a write now says why it fails, where the shutdown's would only log
        informer
            .write_snapshot()
            .await
            .map_err(|e| ReportError::Restart(format!("snapshot write: {e}")))?;
    }
    let counts = informer.list_watch_counts();
    let status = match informer.snapshot_status() {
        SnapshotStatus::None => "none".to_string(),
        other => format!("{other:?}"),
    };
    let t1 = Instant::now();
    factory.shutdown().await;
    let shutdown_s = t1.elapsed().as_secs_f64();
    Ok((synced_s, caught_up_s, bytes, counts, status, shutdown_s))
}

/// Updates `changes` pods (a label) with `client`; returns the last one's key and the
/// resourceVersion its update returned.
async fn change_pods(
    client: &kube::Client,
    changes: u64,
    round: usize,
) -> Result<Option<(String, String)>, ReportError> {
    let all: kube::Api<Pod> = kube::Api::all(client.clone());
    let page = all
        .list_metadata(&ListParams::default().limit(changes as u32))
        .await
        .map_err(|e| ReportError::Restart(format!("list pods: {e}")))?;
    let mut last = None;
    for meta in page.items.iter().take(changes as usize) {
        let (Some(ns), Some(name)) = (&meta.metadata.namespace, &meta.metadata.name) else {
            continue;
        };
        let api: kube::Api<Pod> = kube::Api::namespaced(client.clone(), ns);
        let patch =
            serde_json::json!({"metadata": {"labels": {"restart-round": round.to_string()}}});
        let pod = api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| ReportError::Restart(format!("patch {ns}/{name}: {e}")))?;
        last = pod
            .metadata
            .resource_version
            .map(|rv| (format!("{ns}/{name}"), rv));
    }
    Ok(last)
}

/// One round: prime, change, then warm and cold in `warm_first` order.
async fn round(
    (tier, n, round): (Tier, u64, usize),
    wire: &Wire,
    direct: &kube::Client,
    snapshot: &SnapshotOptions,
    opts: &RestartOptions,
    results: &mut RestartResults,
) -> Result<(), ReportError> {
    let (.., shutdown_s) = start_once(wire, Some(snapshot.clone()), None, opts.timeout).await?;
    results.writes.push(SnapshotWrite {
        tier,
        n,
        shutdown_s,
        file_bytes: dir_bytes(&snapshot.dir),
    });
    let last = change_pods(direct, opts.changes, round).await?;
    let warm_first = round % 2 == 0;
    for warm in [warm_first, !warm_first] {
        let options = warm.then(|| snapshot.clone());
        let (synced_s, caught_up_s, bytes, (lists, watches), status, _) =
            start_once(wire, options, last.as_ref(), opts.timeout).await?;
        let mode = if warm { "warm" } else { "cold" };
        eprintln!(
            "restart: {} N={n} {mode}: synced {synced_s:.3}s, caught up {caught_up_s:.3}s, {:.1} MB, lists {lists}, watches {watches}, {status}",
            tier.as_str(),
            bytes as f64 / 1e6
        );
        results.starts.push(StartRun {
            tier,
            n,
            mode,
            synced_s,
            caught_up_s,
            bytes,
            lists,
            watches,
            status,
        });
    }
    Ok(())
}

/// Runs the restart benchmark and writes `restart.md` and `restart.json`; returns the path of
/// `restart.md`.
///
/// # Errors
/// [`ReportError`] when the report cannot be written. A server that cannot start or a failed
/// round is a note in the report.
pub fn run(opts: &RestartOptions) -> Result<PathBuf, ReportError> {
    let (exe, out, rt) = crate::fleet::prepare(&opts.out_dir)?;
    let mut results = RestartResults::default();
    for &tier in &opts.tiers {
        for &n in &opts.sizes {
            let server: Server = match start_tier(&exe, tier, n, &out, &rt) {
                Ok(s) => s,
                Err(e) => {
                    results
                        .notes
                        .push(format!("{} N={n}: server: {e}", tier.as_str()));
                    continue;
                }
            };
            let outcome = rt.block_on(async {
                let wire = wire(&server.kubeconfig, &out, tier).await?;
                let direct = crate::kubeconfig::client(&server.kubeconfig).await?;
                let cluster = kinformer::snapshot::cluster_id(&direct)
                    .await
                    .map_err(|e| ReportError::Restart(format!("cluster id: {e}")))?;
                let dir = out.join(format!("snapshots-{}-{n}", tier.as_str()));
                let _ = std::fs::remove_dir_all(&dir);
                let snapshot = SnapshotOptions::new(&dir, cluster);
                for r in 0..opts.rounds {
                    if let Err(e) =
                        round((tier, n, r), &wire, &direct, &snapshot, opts, &mut results).await
                    {
                        results
                            .notes
                            .push(format!("{} N={n} round {r}: {e}", tier.as_str()));
                    }
                }
                let _ = std::fs::remove_dir_all(&dir);
                Ok::<_, ReportError>(())
            });
            if let Err(e) = outcome {
                results.notes.push(format!("{} N={n}: {e}", tier.as_str()));
            }
        }
    }
    write(&out, opts, &results)
}

fn med(values: impl Iterator<Item = f64>) -> Option<f64> {
    median(values.map(Some))
}

fn write(
    out: &Path,
    opts: &RestartOptions,
    results: &RestartResults,
) -> Result<PathBuf, ReportError> {
    let mut md = String::from("# kinformer restart benchmark\n\n");
    let _ = writeln!(
        md,
        "A pod informer built through the factory, restarted from its snapshot (warm) or \
         without one (cold), after {} pods were updated while it was down. Medians of {} \
         rounds; warm and cold alternate. Bytes: what the server sent until the last change \
         was in the cache, TLS included on the real tier.\n",
        opts.changes, opts.rounds
    );
    md.push_str("| tier | N | mode | synced | caught up | MB received | lists | watches |\n");
    md.push_str("|---|---|---|---|---|---|---|---|\n");
    let mut keys: Vec<(Tier, u64)> = results.starts.iter().map(|s| (s.tier, s.n)).collect();
    keys.dedup();
    for (tier, n) in keys {
        for mode in ["cold", "warm"] {
            let runs: Vec<&StartRun> = results
                .starts
                .iter()
                .filter(|s| s.tier == tier && s.n == n && s.mode == mode)
                .collect();
            if runs.is_empty() {
                continue;
            }
            let f = |g: fn(&StartRun) -> f64| med(runs.iter().map(|r| g(r))).unwrap_or(f64::NAN);
            let _ = writeln!(
                md,
                "| {} | {n} | {mode} | {:.3} s | {:.3} s | {:.2} | {:.0} | {:.0} |",
                tier.as_str(),
                f(|r| r.synced_s),
                f(|r| r.caught_up_s),
                f(|r| r.bytes as f64) / 1e6,
                f(|r| r.lists as f64),
                f(|r| r.watches as f64),
            );
        }
        let writes: Vec<&SnapshotWrite> = results
            .writes
            .iter()
            .filter(|w| w.tier == tier && w.n == n)
            .collect();
        if let (Some(s), Some(b)) = (
            med(writes.iter().map(|w| w.shutdown_s)),
            med(writes.iter().map(|w| w.file_bytes as f64)),
        ) {
            let _ = writeln!(
                md,
                "| {} | {n} | snapshot on shutdown | {s:.3} s to write | | {:.2} MB on disk | | |",
                tier.as_str(),
                b / 1e6
            );
        }
    }
    let statuses: Vec<String> = results
        .starts
        .iter()
        .filter(|s| s.mode == "warm")
        .map(|s| format!("{} N={}: {}", s.tier.as_str(), s.n, s.status))
        .collect();
    if !statuses.is_empty() {
        md.push_str("\nWhat each warm start did:\n\n");
        for s in statuses {
            let _ = writeln!(md, "- {s}");
        }
    }
    crate::fleet_md::write_outputs(out, "restart", md, &results.notes, results)
}
