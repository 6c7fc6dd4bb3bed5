//! The fleet benchmark's results and their `fleet.md` and `fleet.json` (see [`crate::fleet`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::ReportError;
use crate::report_md::median;
use crate::result::Tier;
use serde::Serialize;

/// One failover round.
#[derive(Debug, Clone, Serialize)]
pub struct FailoverRound {
    /// `embedded` or `real`.
    pub tier: Tier,
    /// Pods on the server.
    pub n: u64,
    /// `warm` or `cold`.
    pub mode: &'static str,
    /// Kill → the new leader holds the lease, seconds.
    pub lease_wait_s: f64,
    /// Lease acquired → first reconcile, seconds.
    pub start_s: f64,
    /// Kill → first reconcile, seconds.
    pub failover_s: f64,
    /// Kill → every pod reconciled by the new leader, seconds.
    pub all_reconciled_s: Option<f64>,
}

/// One replica of a sharded run.
#[derive(Debug, Clone, Serialize)]
pub struct ShardReplica {
    /// `embedded` or `real`.
    pub tier: Tier,
    /// Pods on the server.
    pub n: u64,
    /// Shards in the run.
    pub shards: u32,
    /// This replica's shard.
    pub index: u32,
    /// Objects in its cache.
    pub cached: u64,
    /// Reconciles it ran.
    pub reconciles: u64,
    /// Whether the server applied the selector (`shardInfo` echoed) or the client filtered.
    pub server_filtered: bool,
    /// Its resident set size once drained, KiB.
    pub rss_kib: u64,
}

/// One sharded run's check: every pod reconciled by exactly one replica.
#[derive(Debug, Clone, Serialize)]
pub struct ShardCheck {
    /// `embedded` or `real`.
    pub tier: Tier,
    /// Pods on the server.
    pub n: u64,
    /// Shards in the run.
    pub shards: u32,
    /// Distinct pods reconciled.
    pub distinct: u64,
    /// Pods reconciled by more than one replica.
    pub duplicated: u64,
}

/// Everything measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FleetResults {
    /// Failover rounds.
    pub failover: Vec<FailoverRound>,
    /// Replicas of the sharded runs.
    pub shards: Vec<ShardReplica>,
    /// The sharded runs' checks.
    pub checks: Vec<ShardCheck>,
    /// Notes (what failed or was skipped).
    pub notes: Vec<String>,
}

fn fmt_s(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.2} s"))
}

fn failover_table(md: &mut String, results: &FleetResults) {
    let _ = writeln!(
        md,
        "## Failover: leader killed → first reconcile by the new leader\n\n\
         Medians over the rounds. Lease wait: kill → the standby holds the lease (client-go's \
         defaults: it takes over once it has seen the record unchanged for the 15 s lease \
         duration, checking every 2 s). Start: lease → first reconcile. All: kill → every pod \
         reconciled by the new leader.\n\n\
         | tier | N | standby | rounds | lease wait | start | failover | all reconciled |\n\
         |---|---:|---|---:|---:|---:|---:|---:|"
    );
    let mut keys: Vec<(Tier, u64, &str)> = results
        .failover
        .iter()
        .map(|r| (r.tier, r.n, r.mode))
        .collect();
    keys.sort_by_key(|k| (k.0.as_str(), k.1, k.2 != "warm"));
    keys.dedup();
    for (tier, n, mode) in keys {
        let rounds: Vec<_> = results
            .failover
            .iter()
            .filter(|r| r.tier == tier && r.n == n && r.mode == mode)
            .collect();
        let med = |f: &dyn Fn(&FailoverRound) -> Option<f64>| median(rounds.iter().map(|r| f(r)));
        let _ = writeln!(
            md,
            "| {} | {n} | {mode} | {} | {} | {} | {} | {} |",
            tier.as_str(),
            rounds.len(),
            fmt_s(med(&|r| Some(r.lease_wait_s))),
            fmt_s(med(&|r| Some(r.start_s))),
            fmt_s(med(&|r| Some(r.failover_s))),
            fmt_s(med(&|r| r.all_reconciled_s)),
        );
    }
}

fn shard_table(md: &mut String, results: &FleetResults) {
    let _ = writeln!(
        md,
        "\n## Shards: one replica per shard (by uid)\n\n\
         Each replica's RSS once its queue has drained, its cached objects and reconciles. \
         Filtered: `server` when the API server applied the selector (echoed `shardInfo`), \
         `client` when the replica filtered itself.\n\n\
         | tier | N | shards | replica | filtered | cached | reconciles | RSS |\n\
         |---|---:|---:|---:|---|---:|---:|---:|"
    );
    for r in &results.shards {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} MiB |",
            r.tier.as_str(),
            r.n,
            r.shards,
            r.index,
            if r.server_filtered {
                "server"
            } else {
                "client"
            },
            r.cached,
            r.reconciles,
            r.rss_kib as f64 / 1024.0
        );
    }
    let _ = writeln!(
        md,
        "\n| tier | N | shards | pods reconciled | by more than one replica | every pod exactly once |\n\
         |---|---:|---:|---:|---:|---|"
    );
    for c in &results.checks {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            c.tier.as_str(),
            c.n,
            c.shards,
            c.distinct,
            c.duplicated,
            if c.distinct == c.n && c.duplicated == 0 {
                "yes"
            } else {
                "**no**"
            }
        );
    }
}

/// Writes `fleet.md` and `fleet.json` into `out`; returns the path of `fleet.md`.
///
/// # Errors
/// [`ReportError::Io`] when a file cannot be written.
pub(crate) fn write(out: &Path, results: &FleetResults) -> Result<PathBuf, ReportError> {
    let mut md = String::from("# kinformer fleet benchmark\n\n");
    failover_table(&mut md, results);
    shard_table(&mut md, results);
    write_outputs(out, "fleet", md, &results.notes, results)
}

/// Appends `notes` to `md` under "Notes", writes `{stem}.json` (`results`) and `{stem}.md` in
/// `out`; returns the path of `{stem}.md`.
pub(crate) fn write_outputs(
    out: &Path,
    stem: &str,
    mut md: String,
    notes: &[String],
    results: &impl Serialize,
) -> Result<PathBuf, ReportError> {
    if !notes.is_empty() {
        md.push_str("\n## Notes\n\n");
        for n in notes {
            let _ = writeln!(md, "- {n}");
        }
    }
    let json = serde_json::to_string_pretty(results)
        .map_err(|e| ReportError::Server(format!("{stem}.json: {e}")))?;
    std::fs::write(out.join(format!("{stem}.json")), json)
        .map_err(|e| ReportError::Io(format!("{stem}.json"), e))?;
    let path = out.join(format!("{stem}.md"));
    std::fs::write(&path, md).map_err(|e| ReportError::Io(format!("{stem}.md"), e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(distinct: u64, duplicated: u64) -> ShardCheck {
        ShardCheck {
            tier: Tier::Embedded,
            n: 10,
            shards: 2,
            distinct,
            duplicated,
        }
    }

    #[test]
    fn a_shard_run_passes_only_when_every_pod_was_reconciled_exactly_once() {
        let results = FleetResults {
            checks: vec![check(10, 0), check(9, 0), check(10, 1)],
            ..FleetResults::default()
        };
        let mut md = String::new();
        shard_table(&mut md, &results);
        let verdicts: Vec<&str> = md
            .lines()
            .filter(|l| l.starts_with("| embedded | 10 | 2 |"))
            .map(|l| l.rsplit('|').nth(1).unwrap_or("").trim())
            .collect();
        assert_eq!(verdicts, ["yes", "**no**", "**no**"]);
    }

    #[test]
    fn failover_medians_are_per_tier_size_and_mode() {
        let round = |mode, failover_s| FailoverRound {
            tier: Tier::Embedded,
            n: 10,
            mode,
            lease_wait_s: failover_s - 1.0,
            start_s: 1.0,
            failover_s,
            all_reconciled_s: None,
        };
        let results = FleetResults {
            failover: vec![
                round("warm", 16.0),
                round("cold", 20.0),
                round("warm", 18.0),
                round("warm", 17.0),
            ],
            ..FleetResults::default()
        };
        let mut md = String::new();
        failover_table(&mut md, &results);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| embedded")).collect();
        assert_eq!(rows.len(), 2, "{md}");
        assert!(
            rows[0].contains("| warm | 3 |") && rows[0].contains("| 17.00 s |"),
            "{md}"
        );
        assert!(
            rows[1].contains("| cold | 1 |") && rows[1].contains("| 20.00 s |"),
            "{md}"
        );
    }
}
