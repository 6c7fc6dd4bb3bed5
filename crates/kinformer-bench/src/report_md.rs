//! Writes `report.md`, the SVG charts and `results.json` from raw results: both tiers side by
//! side, headline ratios against client-go on protobuf on the real server.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::report::{Notes, ReportError, ReportOptions, W2_PODS};
use crate::result::{Peer, PeerReport, Tier, Workload};
use crate::svg::{bar_chart, fmt_num};

/// Median of the values (ignoring `None`).
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

/// (tier, workload, n, peer).
type Key = (Tier, Workload, u64, Peer);

/// Medians of one measure per (tier, workload, n, peer).
pub struct Medians(BTreeMap<Key, f64>);

impl Medians {
    /// Medians of what `f` extracts from each run.
    pub fn of(results: &[PeerReport], f: impl Fn(&PeerReport) -> Option<f64>) -> Self {
        Self::by(results, f, median)
    }

    /// Least values of what `f` extracts from each run (the floor's best run).
    pub fn least(results: &[PeerReport], f: impl Fn(&PeerReport) -> Option<f64>) -> Self {
        Self::by(results, f, |v| {
            v.into_iter().flatten().min_by(f64::total_cmp)
        })
    }

    fn by(
        results: &[PeerReport],
        f: impl Fn(&PeerReport) -> Option<f64>,
        aggregate: impl Fn(Vec<Option<f64>>) -> Option<f64>,
    ) -> Self {
        let mut groups: BTreeMap<Key, Vec<Option<f64>>> = BTreeMap::new();
        for r in results {
            // a peer's own line, not yet placed on a tier by the orchestrator, is in no table
            let Some(tier) = r.tier else { continue };
            groups
                .entry((tier, r.workload, r.n, r.peer))
                .or_default()
                .push(f(r));
        }
        Self(
            groups
                .into_iter()
                .filter_map(|(k, v)| aggregate(v).map(|m| (k, m)))
                .collect(),
        )
    }

    /// One cell.
    pub fn get(&self, tier: Tier, w: Workload, n: u64, peer: Peer) -> Option<f64> {
        self.0.get(&(tier, w, n, peer)).copied()
    }

    /// The W1 floor: the fastest of the paged, unpaged and streaming floors, with which one it
    /// was (on a [`Medians::least`] table: the fastest run of any).
    pub fn floor(&self, tier: Tier, n: u64) -> Option<(f64, &'static str)> {
        [
            (Peer::FloorPaged, "paged"),
            (Peer::FloorUnpaged, "unpaged"),
            (Peer::FloorStreaming, "streaming"),
        ]
        .into_iter()
        .filter_map(|(peer, mode)| self.get(tier, Workload::W1, n, peer).map(|v| (v, mode)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
    }
}

fn show(v: Option<f64>) -> String {
    v.map(fmt_num).unwrap_or_else(|| "–".into())
}

/// `a / b` as `1.23×`, `–` when either is missing.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".into(),
    }
}

/// A plain sentence comparing kinformer's `k` with `other` where lower is better
/// (`slower`/`faster` or `more`/`less`).
pub fn verdict(k: f64, other: f64, worse: &str, better: &str) -> String {
    if other <= 0.0 || k <= 0.0 {
        return "not comparable".into();
    }
    let r = k / other;
    if (r - 1.0).abs() < 0.05 {
        format!("on par ({r:.2}×)")
    } else if r > 1.0 {
        format!("**{r:.2}× {worse}** (behind)")
    } else {
        format!("{:.2}× {better}", other / k)
    }
}

/// Sync time of `a` against `b` round by round: the i-th recorded run of each peer on one
/// (tier, workload, N) ran in the same round, minutes apart at most, so their ratio is free of
/// the machine's slow patches that medians taken apart are not. The median of those ratios,
/// the rounds in which `a` was faster, and the rounds paired.
pub fn same_round(
    results: &[PeerReport],
    tier: Tier,
    w: Workload,
    n: u64,
    a: Peer,
    b: Peer,
) -> Option<(f64, usize, usize)> {
    let runs = |peer: Peer| -> Vec<f64> {
        results
            .iter()
            .filter(|r| r.tier == Some(tier) && r.workload == w && r.n == n && r.peer == peer)
            .filter_map(|r| r.sync_ms)
            .collect()
    };
    let (ra, rb) = (runs(a), runs(b));
    let pairs: Vec<(f64, f64)> = ra
        .into_iter()
        .zip(rb)
        .filter(|&(x, y)| x > 0.0 && y > 0.0)
        .collect();
    let faster = pairs.iter().filter(|(x, y)| x < y).count();
    let ratio = median(pairs.iter().map(|(x, y)| Some(x / y)))?;
    Some((ratio, faster, pairs.len()))
}

fn sizes_of(results: &[PeerReport], tier: Tier, w: Workload) -> Vec<u64> {
    let mut s: Vec<u64> = results
        .iter()
        .filter(|r| r.tier == Some(tier) && r.workload == w)
        .map(|r| r.n)
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

const TIERS: [Tier; 2] = [Tier::Real, Tier::Embedded];
const INFORMERS: [Peer; 5] = [
    Peer::Kinformer,
    Peer::KinformerLean,
    Peer::KubeRs,
    Peer::ClientGo,
    Peer::ClientGoJson,
];

/// Everything the writer needs, computed once.
struct Tables {
    sync: Medians,
    /// Fastest runs (the W1 floor is the fastest fetch seen).
    sync_least: Medians,
    peak: Medians,
    bpo: Medians,
    relist: Medians,
    relist_peak: Medians,
    steady: Medians,
    eps: Medians,
    p50: Medians,
    p99: Medians,
}

impl Tables {
    fn new(results: &[PeerReport]) -> Self {
        let mib = |k: Option<u64>| k.map(|k| k as f64 / 1024.0);
        Self {
            sync: Medians::of(results, |r| r.sync_ms),
            sync_least: Medians::least(results, |r| r.sync_ms),
            peak: Medians::of(results, |r| mib(r.peak_rss_kib)),
            bpo: Medians::of(results, |r| r.bytes_per_object),
            relist: Medians::of(results, |r| r.relist_ms),
            relist_peak: Medians::of(results, |r| mib(r.relist_peak_rss_kib)),
            steady: Medians::of(results, |r| mib(r.steady_rss_kib)),
            eps: Medians::of(results, |r| r.events_per_sec),
            p50: Medians::of(results, |r| r.latency_p50_us),
            p99: Medians::of(results, |r| r.latency_p99_us),
        }
    }
}

fn headline(md: &mut String, t: &Tables, results: &[PeerReport]) {
    md.push_str("## Headline: kinformer against client-go on protobuf, real kube-apiserver\n\n");
    let sizes = sizes_of(results, Tier::Real, Workload::W1);
    let has_cg = sizes.iter().any(|&n| {
        t.sync
            .get(Tier::Real, Workload::W1, n, Peer::ClientGo)
            .is_some()
    });
    if sizes.is_empty() || !has_cg {
        md.push_str("The real tier (or client-go on it) did not run in this report, so there is no headline; see the notes.\n\n");
        return;
    }
    fn line(
        md: &mut String,
        label: &str,
        k: Option<f64>,
        c: Option<f64>,
        unit: &str,
        worse: &str,
        better: &str,
    ) {
        if let (Some(k), Some(c)) = (k, c) {
            let _ = writeln!(
                md,
                "- {label}: kinformer {} {unit}, client-go {} {unit}: kinformer is {}.",
                fmt_num(k),
                fmt_num(c),
                verdict(k, c, worse, better)
            );
        }
    }
    for &n in &sizes {
        for (w, a, b, label) in [
            (Workload::W1, Peer::Kinformer, Peer::ClientGo, "W1 sync"),
            (
                Workload::W1t,
                Peer::Kinformer,
                Peer::ClientGo,
                "W1t sync (managedFields dropped)",
            ),
            (
                Workload::W1,
                Peer::KinformerMetadata,
                Peer::ClientGoMetadata,
                "metadata-only informers, W1 sync",
            ),
        ] {
            line(
                md,
                &format!("N = {n}, {label}"),
                t.sync.get(Tier::Real, w, n, a),
                t.sync.get(Tier::Real, w, n, b),
                "ms",
                "slower",
                "faster",
            );
            if let Some((r, faster, rounds)) = same_round(results, Tier::Real, w, n, a, b) {
                let _ = writeln!(
                    md,
                    "  - round by round: median ratio {r:.2}×; {a} faster in {faster} of {rounds} rounds."
                );
            }
        }
        line(
            md,
            &format!("N = {n}, W1 peak RSS"),
            t.peak.get(Tier::Real, Workload::W1, n, Peer::Kinformer),
            t.peak.get(Tier::Real, Workload::W1, n, Peer::ClientGo),
            "MiB",
            "the memory",
            "less memory",
        );
        line(
            md,
            &format!("N = {n}, W4 bytes per cached pod"),
            t.bpo.get(Tier::Real, Workload::W1, n, Peer::Kinformer),
            t.bpo.get(Tier::Real, Workload::W1, n, Peer::ClientGo),
            "B",
            "the memory",
            "less memory",
        );
        line(
            md,
            &format!("N = {n}, W4 with managedFields dropped"),
            t.bpo.get(Tier::Real, Workload::W1t, n, Peer::Kinformer),
            t.bpo.get(Tier::Real, Workload::W1t, n, Peer::ClientGo),
            "B",
            "the memory",
            "less memory",
        );
        line(
            md,
            &format!("N = {n}, lean cache (`CacheMode::Lean`), W1 sync"),
            t.sync.get(Tier::Real, Workload::W1, n, Peer::KinformerLean),
            t.sync.get(Tier::Real, Workload::W1, n, Peer::ClientGo),
            "ms",
            "slower",
            "faster",
        );
        line(
            md,
            &format!("N = {n}, lean cache (`CacheMode::Lean`), W4 bytes per cached pod"),
            t.bpo.get(Tier::Real, Workload::W1, n, Peer::KinformerLean),
            t.bpo.get(Tier::Real, Workload::W1, n, Peer::ClientGo),
            "B",
            "the memory",
            "less memory",
        );
        line(
            md,
            &format!("N = {n}, metadata-only informers, W4 bytes per cached pod"),
            t.bpo
                .get(Tier::Real, Workload::W1, n, Peer::KinformerMetadata),
            t.bpo
                .get(Tier::Real, Workload::W1, n, Peer::ClientGoMetadata),
            "B",
            "the memory",
            "less memory",
        );
        line(
            md,
            &format!("N = {n}, W3 relist"),
            t.relist.get(Tier::Real, Workload::W3, n, Peer::Kinformer),
            t.relist.get(Tier::Real, Workload::W3, n, Peer::ClientGo),
            "ms",
            "slower",
            "faster",
        );
    }
    line(
        md,
        "W2 p50 write-to-handler latency",
        t.p50
            .get(Tier::Real, Workload::W2, W2_PODS, Peer::Kinformer),
        t.p50.get(Tier::Real, Workload::W2, W2_PODS, Peer::ClientGo),
        "µs",
        "slower",
        "faster",
    );
    md.push('\n');
}

fn w1_tables(md: &mut String, t: &Tables, results: &[PeerReport]) {
    md.push_str("## W1: initial sync (ms until synced and every add handled)\n\n");
    md.push_str("The floor is the fastest run of three decode-only fetches on every core (pages of 500, one unpaged response, or one streaming list: what the informers send first), no cache; the informers' columns are medians. kinformer / floor below 1.00× would be run-to-run noise.\n\n");
    md.push_str("| tier | N | floor | kinformer | kube-rs | client-go (protobuf) | client-go (JSON) | kinformer / floor | kinformer / client-go (protobuf) | kinformer / client-go (JSON) |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for tier in TIERS {
        for n in sizes_of(results, tier, Workload::W1) {
            let k = t.sync.get(tier, Workload::W1, n, Peer::Kinformer);
            let floor = t.sync_least.floor(tier, n);
            let cg = t.sync.get(tier, Workload::W1, n, Peer::ClientGo);
            let cgj = t.sync.get(tier, Workload::W1, n, Peer::ClientGoJson);
            let _ = writeln!(
                md,
                "| {tier} | {n} | {} | {} | {} | {} | {} | {} | {} | {} |",
                floor
                    .map(|(v, m)| format!("{} ({m})", fmt_num(v)))
                    .unwrap_or_else(|| "–".into()),
                show(k),
                show(t.sync.get(tier, Workload::W1, n, Peer::KubeRs)),
                show(cg),
                show(cgj),
                ratio(k, floor.map(|f| f.0)),
                ratio(k, cg),
                ratio(k, cgj),
            );
        }
    }
    md.push_str("\nPeak RSS during W1 (MiB):\n\n| tier | N | floor (paged) | floor (unpaged) | floor (streaming) | kinformer | kube-rs | client-go (protobuf) | client-go (JSON) |\n|---|---|---|---|---|---|---|---|---|\n");
    for tier in TIERS {
        for n in sizes_of(results, tier, Workload::W1) {
            let g = |p: Peer| show(t.peak.get(tier, Workload::W1, n, p));
            let _ = writeln!(
                md,
                "| {tier} | {n} | {} | {} | {} | {} | {} | {} | {} |",
                g(Peer::FloorPaged),
                g(Peer::FloorUnpaged),
                g(Peer::FloorStreaming),
                g(Peer::Kinformer),
                g(Peer::KubeRs),
                g(Peer::ClientGo),
                g(Peer::ClientGoJson),
            );
        }
    }
}

fn w4_table(md: &mut String, t: &Tables, results: &[PeerReport]) {
    md.push_str("\n## W4: memory per cached pod after sync (bytes: (steady RSS − baseline RSS) / objects)\n\n");
    md.push_str("| tier | N | transform | kinformer | kube-rs | client-go (protobuf) | client-go (JSON) | kinformer / client-go (protobuf) | kinformer / client-go (JSON) |\n|---|---|---|---|---|---|---|---|---|\n");
    for tier in TIERS {
        for n in sizes_of(results, tier, Workload::W1) {
            for (w, label) in [
                (Workload::W1, "none"),
                (Workload::W1t, "drop managedFields"),
            ] {
                let k = t.bpo.get(tier, w, n, Peer::Kinformer);
                let _ = writeln!(
                    md,
                    "| {tier} | {n} | {label} | {} | {} | {} | {} | {} | {} |",
                    show(k),
                    show(t.bpo.get(tier, w, n, Peer::KubeRs)),
                    show(t.bpo.get(tier, w, n, Peer::ClientGo)),
                    show(t.bpo.get(tier, w, n, Peer::ClientGoJson)),
                    ratio(k, t.bpo.get(tier, w, n, Peer::ClientGo)),
                    ratio(k, t.bpo.get(tier, w, n, Peer::ClientGoJson)),
                );
            }
        }
    }
}

fn w3_table(md: &mut String, t: &Tables, results: &[PeerReport]) {
    md.push_str("\n## W3: relist after a forced 410 (ms until relisted; peak RSS during the relist / steady RSS before it)\n\n");
    md.push_str("Embedded: every pod changed while watches were paused, done when N updates reached both handlers. Real (no watch cache, connections cut by a proxy after a compaction): unchanged pods, done when the library reports a list at or after the compaction.\n\n");
    md.push_str("| tier | N | kinformer | kube-rs | client-go (protobuf) | client-go (JSON) | kinformer / client-go (protobuf) | kinformer peak/steady | kube-rs peak/steady | client-go peak/steady |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for tier in TIERS {
        for n in sizes_of(results, tier, Workload::W3) {
            let pr = |p: Peer| {
                ratio(
                    t.relist_peak.get(tier, Workload::W3, n, p),
                    t.steady.get(tier, Workload::W3, n, p),
                )
            };
            let g = |p: Peer| t.relist.get(tier, Workload::W3, n, p);
            let cg_peak = if tier == Tier::Real {
                pr(Peer::ClientGo)
            } else {
                pr(Peer::ClientGoJson)
            };
            let _ = writeln!(
                md,
                "| {tier} | {n} | {} | {} | {} | {} | {} | {} | {} | {} |",
                show(g(Peer::Kinformer)),
                show(g(Peer::KubeRs)),
                show(g(Peer::ClientGo)),
                show(g(Peer::ClientGoJson)),
                ratio(g(Peer::Kinformer), g(Peer::ClientGo)),
                pr(Peer::Kinformer),
                pr(Peer::KubeRs),
                cg_peak,
            );
        }
    }
}

fn w2_table(md: &mut String, t: &Tables, opts: &ReportOptions, notes: &Notes) {
    let _ = writeln!(
        md,
        "\n## W2: watch throughput ({} updates on the embedded tier, {} on the real one, over {W2_PODS} cached pods; events/s per handler; write-to-handler latency)\n",
        opts.w2_updates, opts.real_w2_updates
    );
    md.push_str("The W2 floor decodes the same watch events with no cache and no handlers.\n\n");
    md.push_str("| tier | peer | events/s | p50 latency (µs) | p99 latency (µs) | events/s ÷ floor | p50 ÷ floor p50 |\n|---|---|---|---|---|---|---|\n");
    for tier in TIERS {
        let n = W2_PODS;
        let floor_eps = t.eps.get(tier, Workload::W2, n, Peer::FloorWatch);
        let floor_p50 = t.p50.get(tier, Workload::W2, n, Peer::FloorWatch);
        for p in INFORMERS
            .into_iter()
            .chain([Peer::KinformerDeltaFifo, Peer::FloorWatch])
        {
            let eps = t.eps.get(tier, Workload::W2, n, p);
            if eps.is_none() {
                continue;
            }
            let p50 = t.p50.get(tier, Workload::W2, n, p);
            let _ = writeln!(
                md,
                "| {tier} | {p} | {} | {} | {} | {} | {} |",
                show(eps),
                show(p50),
                show(t.p99.get(tier, Workload::W2, n, p)),
                ratio(eps, floor_eps),
                ratio(p50, floor_p50),
            );
        }
    }
    if let Some(rate) = median(notes.real_writer_rates.iter().map(|r| Some(*r))) {
        let _ = writeln!(
            md,
            "\nReal tier: the writer (merge patches through the API, {} in flight) reached a median {} writes/s, so the real tier's events/s is the API server's write rate, not the informers' ceiling; its latency includes the write's own round trip.",
            crate::real::WRITERS,
            fmt_num(rate)
        );
    }
}

#[allow(clippy::too_many_arguments)] // a private helper; the call sites read as a table
fn chart(
    out: &Path,
    file: &str,
    title: &str,
    unit: &str,
    m: &Medians,
    floor: Option<&Medians>,
    (tier, w): (Tier, Workload),
    sizes: &[u64],
) -> Result<(), ReportError> {
    if sizes.is_empty() {
        return Ok(());
    }
    let groups: Vec<(String, Vec<(String, f64)>)> = sizes
        .iter()
        .map(|&n| {
            let mut bars: Vec<(String, f64)> = INFORMERS
                .into_iter()
                .filter_map(|p| m.get(tier, w, n, p).map(|v| (p.to_string(), v)))
                .collect();
            if w == Workload::W1
                && let Some((v, _)) = floor.and_then(|f| f.floor(tier, n))
            {
                bars.insert(0, ("floor".into(), v));
            }
            (format!("N={}", fmt_num(n as f64)), bars)
        })
        .collect();
    std::fs::write(out.join(file), bar_chart(title, unit, &groups))
        .map_err(|e| ReportError::Io(file.into(), e))
}

/// Writes `report.md`, the SVG charts and `results.json`.
///
/// # Errors
/// [`ReportError::Io`] when a file cannot be written.
pub fn write_report(
    opts: &ReportOptions,
    results: &[PeerReport],
    notes: &Notes,
) -> Result<PathBuf, ReportError> {
    let out = &opts.out_dir;
    std::fs::create_dir_all(out).map_err(|e| ReportError::Io("create out dir".into(), e))?;
    let raw = serde_json::to_string_pretty(results).unwrap_or_default();
    std::fs::write(out.join("results.json"), raw)
        .map_err(|e| ReportError::Io("results.json".into(), e))?;
    let t = Tables::new(results);
    let mut md = String::new();
    let _ = writeln!(
        md,
        "Medians of {} runs per peer and workload (interleaved; the peer that goes first \
         rotates), after {} unrecorded warm-up run(s) of each workload against each server. \
         Machine: {}. Date: {}.\n",
        opts.runs,
        opts.warmup,
        machine(),
        date()
    );
    headline(&mut md, &t, results);
    w1_tables(&mut md, &t, results);
    w4_table(&mut md, &t, results);
    w3_table(&mut md, &t, results);
    w2_table(&mut md, &t, opts, notes);
    metadata_table(&mut md, &t, results);
    queue_modes_table(&mut md, &t, results);
    if !notes.lines.is_empty() {
        md.push_str("\n## Notes\n\n");
        for l in &notes.lines {
            let _ = writeln!(md, "- {l}");
        }
    }
    let mut charts = Vec::new();
    for tier in TIERS {
        let w1 = sizes_of(results, tier, Workload::W1);
        let w3 = sizes_of(results, tier, Workload::W3);
        let specs = [
            (
                "w1-sync",
                "W1 initial sync",
                "ms, lower is better",
                &t.sync,
                Workload::W1,
                &w1,
            ),
            (
                "w1-peak-rss",
                "W1 peak RSS",
                "MiB, lower is better",
                &t.peak,
                Workload::W1,
                &w1,
            ),
            (
                "w4-bytes-per-object",
                "W4 memory per pod",
                "bytes, lower is better",
                &t.bpo,
                Workload::W1,
                &w1,
            ),
            (
                "w3-relist",
                "W3 relist after 410",
                "ms, lower is better",
                &t.relist,
                Workload::W3,
                &w3,
            ),
        ];
        for (file, title, unit, m, w, sizes) in specs {
            if sizes.is_empty() {
                continue;
            }
            let name = format!("{file}-{tier}.svg");
            let floor = (file == "w1-sync").then_some(&t.sync_least);
            chart(
                out,
                &name,
                &format!("{title} ({tier} server)"),
                unit,
                m,
                floor,
                (tier, w),
                sizes,
            )?;
            charts.push(name);
        }
    }
    if !charts.is_empty() {
        let _ = writeln!(md, "\nCharts: {}.", charts.join(", "));
    }
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
    jiff::Timestamp::now()
        .strftime("%Y-%m-%d %H:%M UTC")
        .to_string()
}

mod kinformer_tables;
use kinformer_tables::{metadata_table, queue_modes_table};

#[cfg(test)]
mod tests;
