//! Writes `report.md`, the SVG charts and `results.json` from raw results: both tiers side by
//! side, headline ratios against client-go on protobuf on the real server.
//!
//! The report is written from data: the figures are medians per (tier, workload, N, peer), one
//! table per measure (`medians.rs`); the headline is a list of rows, each naming its measure,
//! workload, peer and the client-go peer it is compared with (`headline.rs`); each table names
//! its columns' peers in one array (`tables.rs`, `kinformer_tables.rs`); the charts are a list
//! too (`CHARTS`). Peers, tiers and workloads are their enums throughout.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::error::ReportError;
use crate::report::{Notes, ReportOptions};
use crate::result::{Peer, PeerReport, Tier, Workload};
use crate::svg::{bar_chart, fmt_num};

mod headline;
mod kinformer_tables;
mod medians;
mod tables;

use headline::headline;
use kinformer_tables::{metadata_table, queue_modes_table};
pub(crate) use medians::median;
use medians::{Metric, Tables, sizes_of};
use tables::{w1_cpu_table, w1_tables, w2_table, w3_table, w4_table};

/// The tiers, in the order of every table's rows.
const TIERS: [Tier; 2] = [Tier::Real, Tier::Embedded];

/// The informers of the charts and the W2 table.
const INFORMERS: [Peer; 5] = [
    Peer::Kinformer,
    Peer::KinformerLean,
    Peer::KubeRs,
    Peer::ClientGo,
    Peer::ClientGoJson,
];

/// One bar chart per tier: the [`INFORMERS`]' medians of one measure, one group per size N.
struct Chart {
    /// The file name before `-{tier}.svg`.
    file: &'static str,
    /// The title before ` ({tier} server)`.
    title: &'static str,
    /// The value axis.
    unit: &'static str,
    /// The measure.
    metric: Metric,
    /// The workload, whose sizes are the groups.
    workload: Workload,
    /// Whether the W1 floor (the fastest fetch) leads each group.
    floor: bool,
}

/// The charts, in the order the report lists them.
const CHARTS: [Chart; 4] = [
    Chart {
        file: "w1-sync",
        title: "W1 initial sync",
        unit: "ms, lower is better",
        metric: Metric::Sync,
        workload: Workload::W1,
        floor: true,
    },
    Chart {
        file: "w1-peak-rss",
        title: "W1 peak RSS",
        unit: "MiB, lower is better",
        metric: Metric::Peak,
        workload: Workload::W1,
        floor: false,
    },
    Chart {
        file: "w4-bytes-per-object",
        title: "W4 memory per pod",
        unit: "bytes, lower is better",
        metric: Metric::BytesPerObject,
        workload: Workload::W1,
        floor: false,
    },
    Chart {
        file: "w3-relist",
        title: "W3 relist after 410",
        unit: "ms, lower is better",
        metric: Metric::Relist,
        workload: Workload::W3,
        floor: false,
    },
];

impl Chart {
    /// Writes this chart of `tier` into `out`; its file name, `None` when the tier did not run
    /// the workload.
    fn write(
        &self,
        out: &Path,
        t: &Tables,
        results: &[PeerReport],
        tier: Tier,
    ) -> Result<Option<String>, ReportError> {
        let sizes = sizes_of(results, tier, self.workload);
        if sizes.is_empty() {
            return Ok(None);
        }
        let m = t.of(self.metric);
        let groups: Vec<(String, Vec<(String, f64)>)> = sizes
            .iter()
            .map(|&n| {
                let mut bars: Vec<(String, f64)> = INFORMERS
                    .into_iter()
                    .filter_map(|p| m.get(tier, self.workload, n, p).map(|v| (p.to_string(), v)))
                    .collect();
                if self.floor
                    && let Some((v, _)) = t.sync_least.floor(tier, n)
                {
                    bars.insert(0, ("floor".into(), v));
                }
                (format!("N={}", fmt_num(n as f64)), bars)
            })
            .collect();
        let name = format!("{}-{tier}.svg", self.file);
        let title = format!("{} ({tier} server)", self.title);
        std::fs::write(out.join(&name), bar_chart(&title, self.unit, &groups))
            .map_err(|e| ReportError::Io(name.clone(), e))?;
        Ok(Some(name))
    }
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
    w1_cpu_table(&mut md, &t, results);
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
        for spec in &CHARTS {
            if let Some(name) = spec.write(out, &t, results, tier)? {
                charts.push(name);
            }
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

#[cfg(test)]
mod tests;
