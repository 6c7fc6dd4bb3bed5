//! The figures the report's tables read: medians per (tier, workload, N, peer), one table per
//! measure, and the ways two figures are compared (ratios, verdicts, round by round).

use std::collections::BTreeMap;

use crate::result::{Peer, PeerReport, Tier, Workload};
use crate::svg::fmt_num;

/// Median of the values (ignoring `None`).
pub(crate) fn median(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
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
pub(super) struct Medians(BTreeMap<Key, f64>);

impl Medians {
    /// Medians of what `f` extracts from each run.
    pub(super) fn of(results: &[PeerReport], f: impl Fn(&PeerReport) -> Option<f64>) -> Self {
        Self::by(results, f, median)
    }

    /// Least values of what `f` extracts from each run (the floor's best run).
    pub(super) fn least(results: &[PeerReport], f: impl Fn(&PeerReport) -> Option<f64>) -> Self {
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
    pub(super) fn get(&self, tier: Tier, w: Workload, n: u64, peer: Peer) -> Option<f64> {
        self.0.get(&(tier, w, n, peer)).copied()
    }

    /// The W1 floor: the fastest of the paged, unpaged and streaming floors, with which one it
    /// was (on a [`Medians::least`] table: the fastest run of any).
    pub(super) fn floor(&self, tier: Tier, n: u64) -> Option<(f64, &'static str)> {
        W1_FLOORS
            .into_iter()
            .filter_map(|(peer, mode)| self.get(tier, Workload::W1, n, peer).map(|v| (v, mode)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
    }
}

/// The W1 floors, one per way of fetching the list, with the report's name for that way.
pub(super) const W1_FLOORS: [(Peer, &str); 3] = [
    (Peer::FloorPaged, "paged"),
    (Peer::FloorUnpaged, "unpaged"),
    (Peer::FloorStreaming, "streaming"),
];

/// A measure a row of the report names: one [`Medians`] table each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Metric {
    /// W1/W1t: ms until synced with every add handled.
    Sync,
    /// W1/W1t: peak RSS, MiB.
    Peak,
    /// W4: bytes per cached object.
    BytesPerObject,
    /// W1/W1t: bytes per cached object from the RSS when synced, before anything settles.
    BytesAtSync,
    /// W3: ms from the forced 410 to synced again.
    Relist,
    /// W3: peak RSS during the relist, MiB.
    RelistPeak,
    /// W2: events per second per handler.
    EventsPerSec,
    /// W2: median write-to-handler latency, µs.
    P50,
    /// W2: 99th percentile write-to-handler latency, µs.
    P99,
}

/// Every measure's table, computed once (the rows that are data name theirs by [`Metric`]).
pub(super) struct Tables {
    pub(super) sync: Medians,
    /// Fastest runs (the W1 floor is the fastest fetch seen).
    pub(super) sync_least: Medians,
    pub(super) peak: Medians,
    pub(super) bpo: Medians,
    pub(super) bpo_sync: Medians,
    pub(super) relist: Medians,
    pub(super) relist_peak: Medians,
    pub(super) steady: Medians,
    pub(super) eps: Medians,
    pub(super) p50: Medians,
    pub(super) p99: Medians,
    /// W1: CPU time from start to synced per object, µs.
    pub(super) cpu_per_object: Medians,
    /// W1: cores kept busy from start to synced (CPU time ÷ wall time).
    pub(super) cores: Medians,
}

impl Tables {
    pub(super) fn new(results: &[PeerReport]) -> Self {
        let mib = |k: Option<u64>| k.map(|k| k as f64 / 1024.0);
        Self {
            sync: Medians::of(results, |r| r.sync_ms),
            sync_least: Medians::least(results, |r| r.sync_ms),
            peak: Medians::of(results, |r| mib(r.peak_rss_kib)),
            bpo: Medians::of(results, |r| r.bytes_per_object),
            bpo_sync: Medians::of(results, |r| r.bytes_per_object_at_sync),
            relist: Medians::of(results, |r| r.relist_ms),
            relist_peak: Medians::of(results, |r| mib(r.relist_peak_rss_kib)),
            steady: Medians::of(results, |r| mib(r.steady_rss_kib)),
            eps: Medians::of(results, |r| r.events_per_sec),
            p50: Medians::of(results, |r| r.latency_p50_us),
            p99: Medians::of(results, |r| r.latency_p99_us),
            cpu_per_object: Medians::of(results, |r| {
                Some(r.cpu_ms_at_sync? * 1000.0 / r.n.max(1) as f64)
            }),
            cores: Medians::of(results, |r| Some(r.cpu_ms_at_sync? / r.sync_ms?)),
        }
    }

    /// The table of `metric`.
    pub(super) fn of(&self, metric: Metric) -> &Medians {
        match metric {
            Metric::Sync => &self.sync,
            Metric::Peak => &self.peak,
            Metric::BytesPerObject => &self.bpo,
            Metric::BytesAtSync => &self.bpo_sync,
            Metric::Relist => &self.relist,
            Metric::RelistPeak => &self.relist_peak,
            Metric::EventsPerSec => &self.eps,
            Metric::P50 => &self.p50,
            Metric::P99 => &self.p99,
        }
    }
}

/// A cell: the figure, or `–` when missing.
pub(super) fn show(v: Option<f64>) -> String {
    v.map(fmt_num).unwrap_or_else(|| "–".into())
}

/// `a / b` as `1.23×`, `–` when either is missing.
pub(super) fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".into(),
    }
}

/// A plain sentence comparing kinformer's `k` with `other` where lower is better
/// (`slower`/`faster` or `more`/`less`).
pub(super) fn verdict(k: f64, other: f64, worse: &str, better: &str) -> String {
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
pub(super) fn same_round(
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

/// The sizes N that `tier` ran `w` at, ascending.
pub(super) fn sizes_of(results: &[PeerReport], tier: Tier, w: Workload) -> Vec<u64> {
    let mut s: Vec<u64> = results
        .iter()
        .filter(|r| r.tier == Some(tier) && r.workload == w)
        .map(|r| r.n)
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}
