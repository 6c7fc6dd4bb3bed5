//! `kinformer-bench report`: the orchestrator.
//!
//! For each size N it starts one bench server process seeded with N pods, then runs every
//! peer on W1, W1t and W3 `runs` times, interleaved (round r starts with peer r mod P, so
//! noise hits every peer alike), and the floor on W1. W2 runs against its own server with
//! [`W2_PODS`] pods. Medians of the runs go to `target/bench-report/report.md` (tables with
//! ratios) and one SVG bar chart per workload; every raw run goes to `results.json`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::result::{PeerReport, Workload};
use crate::svg::{bar_chart, fmt_num};

/// Pods on the W2 server.
pub const W2_PODS: u64 = 1_000;

/// What to run.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Sizes N for W1, W1t and W3.
    pub sizes: Vec<u64>,
    /// Runs per peer and workload.
    pub runs: usize,
    /// W2 updates per run.
    pub w2_updates: u64,
    /// Where to write the report.
    pub out_dir: PathBuf,
    /// Skip the client-go peer.
    pub skip_go: bool,
    /// Workloads to run.
    pub workloads: Vec<Workload>,
}

impl ReportOptions {
    /// The full report (N = 10k, 50k, 100k; 5 runs) or the quick check (N = 2,000; 2 runs).
    pub fn new(quick: bool) -> Self {
        Self {
            sizes: if quick {
                vec![2_000]
            } else {
                vec![10_000, 50_000, 100_000]
            },
            runs: if quick { 2 } else { 5 },
            w2_updates: if quick { 5_000 } else { 20_000 },
            out_dir: PathBuf::from("target/bench-report"),
            skip_go: false,
            workloads: vec![Workload::W1, Workload::W1t, Workload::W3, Workload::W2],
        }
    }
}

/// Why the report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A process could not be started or talked to.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// The server did not print its addresses.
    #[error("bench server did not start: {0}")]
    Server(String),
}

/// A bench server child process; killed on drop.
pub struct ServerProcess {
    child: Child,
    /// Base URL of the API server.
    pub url: String,
    /// The control port address.
    pub control: String,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `kinformer-bench server` (this executable) seeded with `pods` pods.
///
/// # Errors
/// [`ReportError`] when it cannot start or does not print its addresses.
pub fn start_server(exe: &Path, pods: u64) -> Result<ServerProcess, ReportError> {
    let mut child = Command::new(exe)
        .args([
            "server",
            "--seed-pods",
            &pods.to_string(),
            "--seed-namespaces",
            "10",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| ReportError::Io("spawn server".into(), e))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| ReportError::Server("no stdout".into()))?;
    let mut lines = BufReader::new(stdout).lines();
    let mut url = None;
    let mut control = None;
    while url.is_none() || control.is_none() {
        let Some(Ok(line)) = lines.next() else {
            return Err(ReportError::Server(
                "exited before printing its addresses".into(),
            ));
        };
        if let Some(u) = line.strip_prefix("listening on ") {
            url = Some(u.trim().to_string());
        } else if let Some(c) = line.strip_prefix("control on ") {
            control = Some(c.trim().to_string());
        }
    }
    Ok(ServerProcess {
        child,
        url: url.unwrap_or_default(),
        control: control.unwrap_or_default(),
    })
}

/// The client-go peer's directory in the source tree.
pub fn go_peer_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/peers/client-go")
}

/// Builds the client-go peer (into its gitignored `bin/`); `None` with a message on stderr
/// when Go is missing or the build fails.
pub fn build_go_peer() -> Option<PathBuf> {
    let dir = go_peer_dir();
    let bin = dir.join("bin/client-go-peer");
    let status = Command::new("go")
        .args(["build", "-o", "bin/client-go-peer", "."])
        .current_dir(&dir)
        .status();
    match status {
        Ok(s) if s.success() => Some(bin),
        other => {
            eprintln!("client-go peer not built ({other:?}); it is left out of the report");
            None
        }
    }
}

/// Runs one peer process and parses its JSON report.
fn run_peer(cmd: &mut Command, what: &str) -> Option<PeerReport> {
    let out = match cmd.stderr(Stdio::inherit()).output() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{what}: could not run: {e}");
            return None;
        }
    };
    if !out.status.success() {
        eprintln!("{what}: exited with {}", out.status);
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    match text.lines().rev().find(|l| l.trim_start().starts_with('{')) {
        Some(line) => match serde_json::from_str::<PeerReport>(line) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("{what}: bad JSON {line:?}: {e}");
                None
            }
        },
        None => {
            eprintln!("{what}: no JSON on stdout");
            None
        }
    }
}

/// The command running `peer` on `workload`.
fn peer_command(
    exe: &Path,
    go: Option<&Path>,
    peer: &str,
    workload: Workload,
    server: &ServerProcess,
    n: u64,
    updates: u64,
) -> Command {
    let mut cmd = if peer == "client-go" {
        Command::new(go.unwrap_or(Path::new("client-go-peer")))
    } else {
        let mut c = Command::new(exe);
        c.args(["peer", "--peer", peer]);
        c
    };
    cmd.args([
        "--workload",
        workload.as_str(),
        "--url",
        &server.url,
        "--control",
        &server.control,
        "--n",
        &n.to_string(),
        "--updates",
        &updates.to_string(),
    ]);
    cmd
}

/// Runs everything and writes the report; returns the path of `report.md`.
///
/// # Errors
/// [`ReportError`] when a server cannot start or the output cannot be written.
pub fn run(opts: &ReportOptions) -> Result<PathBuf, ReportError> {
    let exe = std::env::current_exe().map_err(|e| ReportError::Io("current_exe".into(), e))?;
    let go = if opts.skip_go { None } else { build_go_peer() };
    let mut peers: Vec<&str> = vec!["kinformer", "kube-rs"];
    if go.is_some() {
        peers.push("client-go");
    }
    let mut results: Vec<PeerReport> = Vec::new();
    let sized: Vec<Workload> = opts
        .workloads
        .iter()
        .copied()
        .filter(|w| *w != Workload::W2)
        .collect();
    for &n in &opts.sizes {
        if sized.is_empty() {
            break;
        }
        let server = start_server(&exe, n)?;
        for round in 0..opts.runs {
            for &w in &sized {
                let mut order: Vec<&str> = peers.clone();
                if w == Workload::W1 {
                    order.push("floor");
                }
                let len = order.len();
                order.rotate_left(round % len);
                for peer in order {
                    let what = format!("{peer} {} n={n} run {}", w.as_str(), round + 1);
                    eprintln!("running {what}");
                    let mut cmd =
                        peer_command(&exe, go.as_deref(), peer, w, &server, n, opts.w2_updates);
                    if let Some(r) = run_peer(&mut cmd, &what) {
                        results.push(r);
                    }
                }
            }
        }
    }
    if opts.workloads.contains(&Workload::W2) {
        let server = start_server(&exe, W2_PODS)?;
        for round in 0..opts.runs {
            let mut order = peers.clone();
            let len = order.len();
            order.rotate_left(round % len);
            for peer in order {
                let what = format!("{peer} w2 run {}", round + 1);
                eprintln!("running {what}");
                let mut cmd = peer_command(
                    &exe,
                    go.as_deref(),
                    peer,
                    Workload::W2,
                    &server,
                    W2_PODS,
                    opts.w2_updates,
                );
                if let Some(r) = run_peer(&mut cmd, &what) {
                    results.push(r);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    write_report(opts, &results)
}

/// Median of the values `f` extracts (ignoring `None`).
pub fn median(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().flatten().collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

type Key = (String, u64, String);

fn medians(results: &[PeerReport], f: impl Fn(&PeerReport) -> Option<f64>) -> BTreeMap<Key, f64> {
    let mut groups: BTreeMap<Key, Vec<Option<f64>>> = BTreeMap::new();
    for r in results {
        groups
            .entry((r.workload.clone(), r.n, r.peer.clone()))
            .or_default()
            .push(f(r));
    }
    groups
        .into_iter()
        .filter_map(|(k, v)| median(v).map(|m| (k, m)))
        .collect()
}

fn cell(m: &BTreeMap<Key, f64>, w: &str, n: u64, peer: &str) -> Option<f64> {
    m.get(&(w.to_string(), n, peer.to_string())).copied()
}

fn show(v: Option<f64>) -> String {
    v.map(fmt_num).unwrap_or_else(|| "–".into())
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".into(),
    }
}

const PEERS: [&str; 3] = ["kinformer", "kube-rs", "client-go"];

fn sizes_of(results: &[PeerReport], w: &str) -> Vec<u64> {
    let mut s: Vec<u64> = results
        .iter()
        .filter(|r| r.workload == w)
        .map(|r| r.n)
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

#[allow(clippy::too_many_arguments)] // a private helper; the call sites read as a table
fn chart(
    out: &Path,
    file: &str,
    title: &str,
    unit: &str,
    m: &BTreeMap<Key, f64>,
    w: &str,
    sizes: &[u64],
    peers: &[&str],
) -> Result<(), ReportError> {
    let groups: Vec<(String, Vec<(String, f64)>)> = sizes
        .iter()
        .map(|&n| {
            let bars = peers
                .iter()
                .filter_map(|p| cell(m, w, n, p).map(|v| (p.to_string(), v)))
                .collect();
            (format!("N={}", fmt_num(n as f64)), bars)
        })
        .collect();
    std::fs::write(out.join(file), bar_chart(title, unit, &groups))
        .map_err(|e| ReportError::Io(file.into(), e))
}

/// Writes `report.md`, the SVG charts and `results.json` from raw results.
///
/// # Errors
/// [`ReportError::Io`] when a file cannot be written.
pub fn write_report(opts: &ReportOptions, results: &[PeerReport]) -> Result<PathBuf, ReportError> {
    let out = &opts.out_dir;
    std::fs::create_dir_all(out).map_err(|e| ReportError::Io("create out dir".into(), e))?;
    let raw = serde_json::to_string_pretty(results).unwrap_or_default();
    std::fs::write(out.join("results.json"), raw)
        .map_err(|e| ReportError::Io("results.json".into(), e))?;
    let sync = medians(results, |r| r.sync_ms);
    let peak = medians(results, |r| r.peak_rss_kib.map(|k| k as f64 / 1024.0));
    let bpo = medians(results, |r| r.bytes_per_object);
    let relist = medians(results, |r| r.relist_ms);
    let relist_peak = medians(results, |r| {
        r.relist_peak_rss_kib.map(|k| k as f64 / 1024.0)
    });
    let steady = medians(results, |r| r.steady_rss_kib.map(|k| k as f64 / 1024.0));
    let eps = medians(results, |r| r.events_per_sec);
    let p50 = medians(results, |r| r.latency_p50_us);
    let p99 = medians(results, |r| r.latency_p99_us);
    let mut md = String::new();
    let runs = opts.runs;
    md.push_str(&format!(
        "Medians of {runs} runs per peer and workload (interleaved). Machine: {}. Date: {}.\n\n",
        machine(),
        date()
    ));
    let w1_sizes = sizes_of(results, "w1");
    md.push_str("### W1 — initial sync (ms until synced and every add handled)\n\n");
    md.push_str("| N | floor | kinformer | kube-rs | client-go | kinformer / floor | kinformer / kube-rs | kinformer / client-go |\n|---|---|---|---|---|---|---|---|\n");
    for &n in &w1_sizes {
        let k = cell(&sync, "w1", n, "kinformer");
        md.push_str(&format!(
            "| {n} | {} | {} | {} | {} | {} | {} | {} |\n",
            show(cell(&sync, "w1", n, "floor")),
            show(k),
            show(cell(&sync, "w1", n, "kube-rs")),
            show(cell(&sync, "w1", n, "client-go")),
            ratio(k, cell(&sync, "w1", n, "floor")),
            ratio(k, cell(&sync, "w1", n, "kube-rs")),
            ratio(k, cell(&sync, "w1", n, "client-go")),
        ));
    }
    md.push_str("\nPeak RSS during W1 (MiB):\n\n| N | floor | kinformer | kube-rs | client-go |\n|---|---|---|---|---|\n");
    for &n in &w1_sizes {
        md.push_str(&format!(
            "| {n} | {} | {} | {} | {} |\n",
            show(cell(&peak, "w1", n, "floor")),
            show(cell(&peak, "w1", n, "kinformer")),
            show(cell(&peak, "w1", n, "kube-rs")),
            show(cell(&peak, "w1", n, "client-go")),
        ));
    }
    md.push_str("\n### W4 — memory per cached object after sync (bytes: (steady RSS − baseline RSS) / objects)\n\n");
    md.push_str("| N | transform | kinformer | kube-rs | client-go | kinformer / kube-rs | kinformer / client-go |\n|---|---|---|---|---|---|---|\n");
    for &n in &w1_sizes {
        for (w, t) in [("w1", "none"), ("w1t", "drop managedFields")] {
            let k = cell(&bpo, w, n, "kinformer");
            md.push_str(&format!(
                "| {n} | {t} | {} | {} | {} | {} | {} |\n",
                show(k),
                show(cell(&bpo, w, n, "kube-rs")),
                show(cell(&bpo, w, n, "client-go")),
                ratio(k, cell(&bpo, w, n, "kube-rs")),
                ratio(k, cell(&bpo, w, n, "client-go")),
            ));
        }
    }
    let w3_sizes = sizes_of(results, "w3");
    md.push_str("\n### W3 — relist after a forced 410 (ms until synced again; peak RSS during the relist / steady RSS before it)\n\n");
    md.push_str("| N | kinformer | kube-rs | client-go | kinformer peak/steady | kube-rs peak/steady | client-go peak/steady |\n|---|---|---|---|---|---|---|\n");
    for &n in &w3_sizes {
        let pr = |p: &str| ratio(cell(&relist_peak, "w3", n, p), cell(&steady, "w3", n, p));
        md.push_str(&format!(
            "| {n} | {} | {} | {} | {} | {} | {} |\n",
            show(cell(&relist, "w3", n, "kinformer")),
            show(cell(&relist, "w3", n, "kube-rs")),
            show(cell(&relist, "w3", n, "client-go")),
            pr("kinformer"),
            pr("kube-rs"),
            pr("client-go"),
        ));
    }
    let w2_sizes = sizes_of(results, "w2");
    md.push_str(&format!("\n### W2 — watch throughput ({} updates over {W2_PODS} cached pods; events/s per handler; write-to-handler latency)\n\n", opts.w2_updates));
    md.push_str("| peer | events/s | p50 latency (µs) | p99 latency (µs) |\n|---|---|---|---|\n");
    for &n in &w2_sizes {
        for p in PEERS {
            if cell(&eps, "w2", n, p).is_none() {
                continue;
            }
            md.push_str(&format!(
                "| {p} | {} | {} | {} |\n",
                show(cell(&eps, "w2", n, p)),
                show(cell(&p50, "w2", n, p)),
                show(cell(&p99, "w2", n, p)),
            ));
        }
    }
    md.push_str("\nCharts: w1-sync.svg, w1-peak-rss.svg, w4-bytes-per-object.svg, w4t-bytes-per-object.svg, w3-relist.svg, w2-events.svg.\n");
    let all = ["floor", "kinformer", "kube-rs", "client-go"];
    chart(
        out,
        "w1-sync.svg",
        "W1 initial sync",
        "ms, lower is better",
        &sync,
        "w1",
        &w1_sizes,
        &all,
    )?;
    chart(
        out,
        "w1-peak-rss.svg",
        "W1 peak RSS",
        "MiB, lower is better",
        &peak,
        "w1",
        &w1_sizes,
        &all,
    )?;
    chart(
        out,
        "w4-bytes-per-object.svg",
        "W4 memory per object",
        "bytes, lower is better",
        &bpo,
        "w1",
        &w1_sizes,
        &PEERS,
    )?;
    chart(
        out,
        "w4t-bytes-per-object.svg",
        "W4 memory per object, managedFields dropped",
        "bytes, lower is better",
        &bpo,
        "w1t",
        &w1_sizes,
        &PEERS,
    )?;
    chart(
        out,
        "w3-relist.svg",
        "W3 relist after 410",
        "ms, lower is better",
        &relist,
        "w3",
        &w3_sizes,
        &PEERS,
    )?;
    chart(
        out,
        "w2-events.svg",
        "W2 watch throughput",
        "events/s, higher is better",
        &eps,
        "w2",
        &w2_sizes,
        &PEERS,
    )?;
    let path = out.join("report.md");
    std::fs::write(&path, md).map_err(|e| ReportError::Io("report.md".into(), e))?;
    Ok(path)
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    format!("{cpu}, {cores} cores, {}", std::env::consts::OS)
}

fn date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = secs / 86_400;
    let (y, m, d) = civil(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        (secs % 86_400) / 3600,
        (secs % 3600) / 60
    )
}

/// Days since 1970-01-01 to (year, month, day) (Howard Hinnant's algorithm).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts_ignores_missing() {
        assert_eq!(median([Some(3.0), None, Some(1.0), Some(2.0)]), Some(2.0));
        assert_eq!(median([Some(4.0), Some(1.0)]), Some(2.5));
        assert_eq!(median([None]), None);
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(20_254), (2025, 6, 15));
    }
}
