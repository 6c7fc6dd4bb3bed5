//! `kinformer-bench report`: the orchestrator of both tiers.
//!
//! * **Embedded** (fast, reproducible; the only tier of `--quick`): per size N one bench
//!   server process ([`crate::server`]) seeded with N pods; W2 on its own server with
//!   `W2_PODS` (1,000) pods.
//! * **Real**: kube-apiserver v1.36.3 started by the e2e harness (`real.rs`), pods created
//!   through the API. W1 and W1t on an instance with the watch cache (as clusters run); W3 on
//!   one without it behind a cutting proxy (`proxy.rs`; where a compaction forces 410 at
//!   once); W2 on a third with `W2_PODS` pods.
//!
//! Every peer runs `runs` times per workload, interleaved (round r starts with peer r mod P,
//! so noise hits every peer alike), each its own process connecting through a kubeconfig.
//! Medians go to `report.md` ([`crate::report_md`]), every raw run to `results.json`. The child
//! processes themselves (starting a bench server, building the client-go peer, running a peer
//! and reading its JSON line) are `process.rs`'s.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

pub use crate::error::ReportError;
use crate::process::{build_go_peer, run_peer, start_server};
use crate::real::{Harness, RealControl};
use crate::result::{Peer, PeerReport, Tier, Workload};

/// Pods on the W2 servers.
pub(crate) const W2_PODS: u64 = 1_000;

impl Tier {
    /// The informer peers run on this tier (each on the workloads it [runs](Peer::runs)).
    /// Both servers speak protobuf for built-in kinds, so client-go and kinformer run both
    /// ways on both tiers.
    pub(crate) fn informer_peers(self) -> &'static [Peer] {
        match self {
            Tier::Embedded => &[
                Peer::Kinformer,
                Peer::KinformerJson,
                Peer::KinformerList,
                Peer::KinformerLean,
                Peer::KinformerMetadata,
                Peer::KinformerMetadataLean,
                Peer::KinformerDeltaFifo,
                Peer::KubeRs,
                Peer::ClientGo,
                Peer::ClientGoJson,
                Peer::ClientGoMetadata,
            ],
            Tier::Real => &[
                Peer::Kinformer,
                Peer::KinformerJson,
                Peer::KinformerList,
                Peer::KinformerLean,
                Peer::KinformerMetadata,
                Peer::KinformerMetadataLean,
                Peer::KinformerDeltaFifo,
                Peer::KubeRs,
                Peer::ClientGo,
                Peer::ClientGoJson,
                Peer::ClientGoMetadata,
            ],
        }
    }
}

/// The peers of one workload on one tier: the informers, plus the workload's floors.
pub(crate) fn peers_for(tier: Tier, workload: Workload, with_go: bool) -> Vec<Peer> {
    let mut peers: Vec<Peer> = tier
        .informer_peers()
        .iter()
        .copied()
        .filter(|p| (with_go || !p.is_go()) && p.runs(workload))
        .collect();
    match workload {
        Workload::W1 => peers.extend([Peer::FloorPaged, Peer::FloorUnpaged, Peer::FloorStreaming]),
        Workload::W2 => peers.push(Peer::FloorWatch),
        Workload::W1t | Workload::W3 | Workload::W5 => {}
    }
    peers
}

/// What to run.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Sizes N for W1, W1t and W3.
    pub sizes: Vec<u64>,
    /// Runs per peer and workload.
    pub runs: usize,
    /// Unrecorded runs of each workload against each server before the recorded ones (the
    /// first runs after seeding are slow for every peer: the server's caches and heap are
    /// cold). Each is a run of the first peer listed for the workload.
    pub warmup: usize,
    /// W2 updates per run on the embedded tier.
    pub w2_updates: u64,
    /// W2 updates per run on the real tier, where the API server's write rate (hundreds per
    /// second on two shared cores) paces them.
    pub real_w2_updates: u64,
    /// Where to write the report.
    pub out_dir: PathBuf,
    /// Skip the client-go peers.
    pub skip_go: bool,
    /// Workloads to run (W5 is the `soak` command's).
    pub workloads: Vec<Workload>,
    /// Tiers to run.
    pub tiers: Vec<Tier>,
    /// Only these peers (all when `None`), e.g. to re-measure one peer and render its runs
    /// together with an earlier report's (`--from-results`).
    pub peers: Option<Vec<Peer>>,
}

impl ReportOptions {
    /// The peers of `tier` and `workload` that this run includes.
    fn peers(&self, tier: Tier, workload: Workload, with_go: bool) -> Vec<Peer> {
        let mut all = peers_for(tier, workload, with_go);
        if let Some(only) = &self.peers {
            all.retain(|p| only.contains(p));
        }
        all
    }
}

impl ReportOptions {
    /// The full report (both tiers; N = 10k, 50k; 5 runs) or the quick check (embedded
    /// tier only; N = 2,000; 2 runs).
    pub fn new(quick: bool) -> Self {
        Self {
            sizes: if quick {
                vec![2_000]
            } else {
                vec![10_000, 50_000]
            },
            runs: if quick { 2 } else { 5 },
            warmup: 1,
            w2_updates: if quick { 5_000 } else { 20_000 },
            real_w2_updates: if quick { 500 } else { 2_000 },
            out_dir: PathBuf::from("target/bench-report"),
            skip_go: false,
            workloads: vec![Workload::W1, Workload::W1t, Workload::W3, Workload::W2],
            tiers: if quick {
                vec![Tier::Embedded]
            } else {
                vec![Tier::Embedded, Tier::Real]
            },
            peers: None,
        }
    }
}

/// Where the peers of one server connect.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// The kubeconfig.
    pub kubeconfig: PathBuf,
    /// The control port.
    pub control: String,
}

/// The executables and settings every peer command needs.
struct Runner<'a> {
    exe: PathBuf,
    go: Option<PathBuf>,
    opts: &'a ReportOptions,
}

impl Runner<'_> {
    /// The command running `peer` on `workload`.
    fn command(
        &self,
        tier: Tier,
        peer: Peer,
        workload: Workload,
        at: &Endpoint,
        n: u64,
    ) -> Command {
        let updates = match tier {
            Tier::Embedded => self.opts.w2_updates,
            Tier::Real => self.opts.real_w2_updates,
        };
        let mut cmd = if peer.is_go() {
            let mut c = Command::new(self.go.as_deref().unwrap_or(Path::new("client-go-peer")));
            match peer {
                // the metadata client picks its own encodings (protobuf, then JSON)
                Peer::ClientGoMetadata => c.arg("--metadata"),
                Peer::ClientGo => c.args(["--content-type", "protobuf"]),
                _ => c.args(["--content-type", "json"]),
            };
            c
        } else {
            let mut c = Command::new(&self.exe);
            c.args(["peer", "--peer", peer.as_str()]);
            c
        };
        cmd.arg("--kubeconfig").arg(&at.kubeconfig).args([
            "--workload",
            workload.as_str(),
            "--control",
            &at.control,
            "--n",
            &n.to_string(),
            "--updates",
            &updates.to_string(),
        ]);
        cmd
    }

    /// Runs every round of `workloads` against one server and appends the results.
    fn rounds(
        &self,
        tier: Tier,
        workloads: &[Workload],
        at: &Endpoint,
        n: u64,
        results: &mut Vec<PeerReport>,
    ) {
        for round in 0..self.opts.warmup {
            for &w in workloads {
                if let Some(&peer) = self.opts.peers(tier, w, self.go.is_some()).first() {
                    let label = format!("warm-up {} (not recorded)", round + 1);
                    let _ = self.run_one(tier, peer, w, at, n, &label);
                }
            }
        }
        for round in 0..self.opts.runs {
            for &w in workloads {
                let mut order = self.opts.peers(tier, w, self.go.is_some());
                let len = order.len();
                order.rotate_left(round % len.max(1));
                for peer in order {
                    let label = format!("run {}", round + 1);
                    if let Some(mut r) = self.run_one(tier, peer, w, at, n, &label) {
                        r.tier = Some(tier);
                        results.push(r);
                        checkpoint(&self.opts.out_dir, results);
                    }
                }
            }
        }
    }

    /// Runs `peer` on workload `w` once, saying so with `label` (`run 3`).
    fn run_one(
        &self,
        tier: Tier,
        peer: Peer,
        w: Workload,
        at: &Endpoint,
        n: u64,
        label: &str,
    ) -> Option<PeerReport> {
        let what = format!("{tier} {peer} {w} n={n} {label}");
        eprintln!("running {what}");
        let report = run_peer(&mut self.command(tier, peer, w, at, n), &what);
        if w == Workload::W2 {
            // let the previous writer's tail drain
            std::thread::sleep(Duration::from_millis(200));
        }
        report
    }
}

/// What the report says besides the figures (skipped tiers, writer rates).
#[derive(Debug, Default, Clone)]
pub struct Notes {
    /// One line each.
    pub lines: Vec<String>,
    /// Real tier W2: the writer's achieved rates (writes/s), one per run.
    pub real_writer_rates: Vec<f64>,
}

/// Runs everything (each raw result is kept in `results.partial.json` as it comes); returns
/// the results and the notes for [`write_report`](crate::report_md::write_report).
///
/// # Errors
/// [`ReportError`] when an embedded server cannot start or the output cannot be written.
/// A real tier that cannot run (no Go, harness failure) is reported in the notes instead.
pub fn run(opts: &ReportOptions) -> Result<(Vec<PeerReport>, Notes), ReportError> {
    let exe = std::env::current_exe().map_err(|e| ReportError::Io("current_exe".into(), e))?;
    std::fs::create_dir_all(&opts.out_dir)
        .map_err(|e| ReportError::Io("create out dir".into(), e))?;
    let go = if opts.skip_go { None } else { build_go_peer() };
    let runner = Runner { exe, go, opts };
    let mut results = Vec::new();
    let mut notes = Notes::default();
    if runner.go.is_none() {
        notes
            .lines
            .push("client-go was left out (Go missing, the build failed, or --skip-go).".into());
    }
    if opts.tiers.contains(&Tier::Embedded) {
        run_embedded(&runner, &mut results)?;
    }
    if opts.tiers.contains(&Tier::Real) {
        let rt = tokio::runtime::Runtime::new()
            .map_err(|e| ReportError::Io("tokio runtime".into(), e))?;
        if let Err(e) = run_real(&runner, &rt, &mut results, &mut notes) {
            eprintln!("real tier stopped: {e}");
            notes
                .lines
                .push(format!("The real tier stopped early: {e}."));
        }
    }
    Ok((results, notes))
}

fn sized(opts: &ReportOptions, only: &[Workload]) -> Vec<Workload> {
    opts.workloads
        .iter()
        .copied()
        .filter(|w| only.contains(w))
        .collect()
}

fn run_embedded(runner: &Runner<'_>, results: &mut Vec<PeerReport>) -> Result<(), ReportError> {
    let opts = runner.opts;
    let out = &opts.out_dir;
    let workloads = sized(opts, &[Workload::W1, Workload::W1t, Workload::W3]);
    for &n in &opts.sizes {
        if workloads.is_empty() {
            break;
        }
        let server = start_server(&runner.exe, n)?;
        let kubeconfig = out.join(format!("kubeconfig-{}-{n}", Tier::Embedded));
        crate::kubeconfig::write_plain(&kubeconfig, &server.url)?;
        let at = Endpoint {
            kubeconfig,
            control: server.control.clone(),
        };
        runner.rounds(Tier::Embedded, &workloads, &at, n, results);
    }
    if opts.workloads.contains(&Workload::W2) {
        let server = start_server(&runner.exe, W2_PODS)?;
        let kubeconfig = out.join(format!("kubeconfig-{}-{}", Tier::Embedded, Workload::W2));
        crate::kubeconfig::write_plain(&kubeconfig, &server.url)?;
        let at = Endpoint {
            kubeconfig,
            control: server.control.clone(),
        };
        runner.rounds(Tier::Embedded, &[Workload::W2], &at, W2_PODS, results);
    }
    Ok(())
}

/// Serves `control` on a free port from a background thread; returns the address.
fn serve_control(control: Arc<RealControl>) -> Result<String, ReportError> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| ReportError::Io("control port".into(), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ReportError::Io("control port".into(), e))?
        .to_string();
    std::thread::spawn(move || crate::control::serve_with(listener, |c| control.handle(c)));
    Ok(addr)
}

/// One seeded harness instance with its control port.
fn real_instance(
    rt: &tokio::runtime::Runtime,
    name: &str,
    watch_cache: bool,
    pods: u64,
    with_proxy: bool,
    out: &Path,
) -> Result<(Harness, Endpoint, Arc<RealControl>), ReportError> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/bench-e2e")
        .join(name);
    let harness = Harness::start(&dir, watch_cache)?;
    let client = rt.block_on(crate::kubeconfig::client(&harness.kubeconfig))?;
    let seeded = rt.block_on(crate::real::seed(&client, pods))?;
    let (proxy, kubeconfig) = if with_proxy {
        let proxy = rt
            .block_on(crate::proxy::Proxy::start(harness.server))
            .map_err(|e| ReportError::Io("proxy".into(), e))?;
        let kc = out.join(format!("kubeconfig-{}-{name}-proxy", Tier::Real));
        crate::kubeconfig::rewrite_server(
            &harness.kubeconfig,
            &kc,
            &format!("https://{}", proxy.addr()),
        )?;
        (Some(Arc::new(proxy)), kc)
    } else {
        (None, harness.kubeconfig.clone())
    };
    let control = Arc::new(RealControl::new(
        rt.handle().clone(),
        client,
        seeded,
        harness.compact_url.clone(),
        proxy,
    ));
    let at = Endpoint {
        kubeconfig,
        control: serve_control(control.clone())?,
    };
    Ok((harness, at, control))
}

fn run_real(
    runner: &Runner<'_>,
    rt: &tokio::runtime::Runtime,
    results: &mut Vec<PeerReport>,
    notes: &mut Notes,
) -> Result<(), ReportError> {
    let opts = runner.opts;
    let out = &opts.out_dir;
    let w1 = sized(opts, &[Workload::W1, Workload::W1t]);
    let w3 = sized(opts, &[Workload::W3]);
    for &n in &opts.sizes {
        if !w1.is_empty() {
            let (_harness, at, _) = real_instance(rt, "cache", true, n, false, out)?;
            runner.rounds(Tier::Real, &w1, &at, n, results);
        }
        if !w3.is_empty() {
            let (_harness, at, _) = real_instance(rt, "nocache", false, n, true, out)?;
            runner.rounds(Tier::Real, &w3, &at, n, results);
        }
    }
    if opts.workloads.contains(&Workload::W2) {
        let (_harness, at, control) =
            real_instance(rt, Workload::W2.as_str(), true, W2_PODS, false, out)?;
        for round in 0..opts.runs {
            let mut order = runner
                .opts
                .peers(Tier::Real, Workload::W2, runner.go.is_some());
            let len = order.len();
            order.rotate_left(round % len.max(1));
            for peer in order {
                let what = format!("{} {peer} {} run {}", Tier::Real, Workload::W2, round + 1);
                eprintln!("running {what}");
                *control.last_write_rate.lock() = None;
                if let Some(mut r) = run_peer(
                    &mut runner.command(Tier::Real, peer, Workload::W2, &at, W2_PODS),
                    &what,
                ) {
                    r.tier = Some(Tier::Real);
                    results.push(r);
                    checkpoint(&runner.opts.out_dir, results);
                }
                // the writer is done once every update has reached the peer
                crate::real::wait_for(Duration::from_secs(10), || {
                    control.last_write_rate.lock().is_some()
                });
                if let Some(rate) = *control.last_write_rate.lock() {
                    notes.real_writer_rates.push(rate);
                }
            }
        }
    }
    Ok(())
}

mod render;
pub(crate) use render::checkpoint;
pub use render::load_results;

#[cfg(test)]
mod tests;
