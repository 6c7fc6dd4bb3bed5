//! The headline: kinformer against client-go on protobuf on the real server, one sentence per
//! row of [`PER_SIZE`] for each size N and per row of [`ON_W2_SERVER`].

use std::fmt::Write;

use super::medians::{Metric, Tables, same_round, sizes_of, verdict};
use crate::report::W2_PODS;
use crate::result::{Peer, PeerReport, Tier, Workload};
use crate::svg::fmt_num;

/// What a lower figure means, in the words of [`verdict`].
#[derive(Debug, Clone, Copy)]
enum Cost {
    /// `slower` / `faster`.
    Time,
    /// `the memory` / `less memory`.
    Memory,
}

impl Cost {
    /// (worse, better).
    fn words(self) -> (&'static str, &'static str) {
        match self {
            Cost::Time => ("slower", "faster"),
            Cost::Memory => ("the memory", "less memory"),
        }
    }
}

/// One headline sentence: `peer` against `base` on the real server.
#[derive(Debug, Clone, Copy)]
struct Row {
    /// What is compared (after `N = …, ` in the per-size rows).
    label: &'static str,
    /// The measure.
    metric: Metric,
    /// The measure of `base`, when it is not `metric` (the lean cache's bytes when synced
    /// against client-go's settled W4 bytes).
    base_metric: Option<Metric>,
    /// The workload it was measured on.
    workload: Workload,
    /// The kinformer peer.
    peer: Peer,
    /// The client-go peer it is compared with.
    base: Peer,
    /// The measure's unit.
    unit: &'static str,
    /// What a lower figure means.
    cost: Cost,
    /// Also give the round-by-round ratio ([`same_round`]; sync times only).
    rounds: bool,
}

/// The sentences for each size N, in order.
const PER_SIZE: &[Row] = &[
    Row {
        label: "W1 sync",
        metric: Metric::Sync,
        base_metric: None,
        workload: Workload::W1,
        peer: Peer::Kinformer,
        base: Peer::ClientGo,
        unit: "ms",
        cost: Cost::Time,
        rounds: true,
    },
    Row {
        label: "W1t sync (managedFields dropped)",
        metric: Metric::Sync,
        base_metric: None,
        workload: Workload::W1t,
        peer: Peer::Kinformer,
        base: Peer::ClientGo,
        unit: "ms",
        cost: Cost::Time,
        rounds: true,
    },
    Row {
        label: "metadata-only informers, W1 sync",
        metric: Metric::Sync,
        base_metric: None,
        workload: Workload::W1,
        peer: Peer::KinformerMetadata,
        base: Peer::ClientGoMetadata,
        unit: "ms",
        cost: Cost::Time,
        rounds: true,
    },
    Row {
        label: "W1 peak RSS",
        metric: Metric::Peak,
        base_metric: None,
        workload: Workload::W1,
        peer: Peer::Kinformer,
        base: Peer::ClientGo,
        unit: "MiB",
        cost: Cost::Memory,
        rounds: false,
    },
    Row {
        label: "W4 bytes per cached pod",
        metric: Metric::BytesPerObject,
        base_metric: None,
        workload: Workload::W1,
        peer: Peer::Kinformer,
        base: Peer::ClientGo,
        unit: "B",
        cost: Cost::Memory,
        rounds: false,
    },
    Row {
        label: "W4 with managedFields dropped",
        metric: Metric::BytesPerObject,
        base_metric: None,
        workload: Workload::W1t,
        peer: Peer::Kinformer,
        base: Peer::ClientGo,
        unit: "B",
        cost: Cost::Memory,
        rounds: false,
    },
    Row {
        label: "lean cache (`CacheMode::Lean`), W1 sync",
        metric: Metric::Sync,
        base_metric: None,
        workload: Workload::W1,
        peer: Peer::KinformerLean,
        base: Peer::ClientGo,
        unit: "ms",
        cost: Cost::Time,
        rounds: false,
    },
    Row {
        label: "lean cache (`CacheMode::Lean`), W4 bytes per cached pod",
        metric: Metric::BytesPerObject,
        base_metric: None,
        workload: Workload::W1,
        peer: Peer::KinformerLean,
        base: Peer::ClientGo,
        unit: "B",
        cost: Cost::Memory,
        rounds: false,
    },
    Row {
        label: "lean cache (`CacheMode::Lean`), bytes per cached pod when synced (client-go: W4)",
        metric: Metric::BytesAtSync,
        base_metric: Some(Metric::BytesPerObject),
        workload: Workload::W1,
        peer: Peer::KinformerLean,
        base: Peer::ClientGo,
        unit: "B",
        cost: Cost::Memory,
        rounds: false,
    },
    Row {
        label: "metadata-only informers, W4 bytes per cached pod",
        metric: Metric::BytesPerObject,
        base_metric: None,
        workload: Workload::W1,
        peer: Peer::KinformerMetadata,
        base: Peer::ClientGoMetadata,
        unit: "B",
        cost: Cost::Memory,
        rounds: false,
    },
    Row {
        label: "metadata-only informers with the lean cache, W1 sync",
        metric: Metric::Sync,
        base_metric: None,
        workload: Workload::W1,
        peer: Peer::KinformerMetadataLean,
        base: Peer::ClientGoMetadata,
        unit: "ms",
        cost: Cost::Time,
        rounds: false,
    },
    Row {
        label: "metadata-only informers with the lean cache, W4 bytes per cached pod",
        metric: Metric::BytesPerObject,
        base_metric: None,
        workload: Workload::W1,
        peer: Peer::KinformerMetadataLean,
        base: Peer::ClientGoMetadata,
        unit: "B",
        cost: Cost::Memory,
        rounds: false,
    },
    Row {
        label: "W3 relist",
        metric: Metric::Relist,
        base_metric: None,
        workload: Workload::W3,
        peer: Peer::Kinformer,
        base: Peer::ClientGo,
        unit: "ms",
        cost: Cost::Time,
        rounds: false,
    },
];

/// The sentences on the W2 server ([`W2_PODS`] pods), after every size's.
const ON_W2_SERVER: &[Row] = &[Row {
    label: "W2 p50 write-to-handler latency",
    metric: Metric::P50,
    base_metric: None,
    workload: Workload::W2,
    peer: Peer::Kinformer,
    base: Peer::ClientGo,
    unit: "µs",
    cost: Cost::Time,
    rounds: false,
}];

impl Row {
    /// Writes the sentence for `n` objects, labelled `label`, when both figures exist, and
    /// the round-by-round line when asked for and there are rounds to pair.
    fn write(&self, md: &mut String, t: &Tables, results: &[PeerReport], label: &str, n: u64) {
        let k = t
            .of(self.metric)
            .get(Tier::Real, self.workload, n, self.peer);
        let c = t.of(self.base_metric.unwrap_or(self.metric)).get(
            Tier::Real,
            self.workload,
            n,
            self.base,
        );
        if let (Some(k), Some(c)) = (k, c) {
            let (worse, better) = self.cost.words();
            // the sentence names the libraries; the row's peers may be their variants
            let (ours, theirs, unit) = (Peer::Kinformer, Peer::ClientGo, self.unit);
            let _ = writeln!(
                md,
                "- {label}: {ours} {} {unit}, {theirs} {} {unit}: {ours} is {}.",
                fmt_num(k),
                fmt_num(c),
                verdict(k, c, worse, better)
            );
        }
        if !self.rounds {
            return;
        }
        let (tier, w, a, b) = (Tier::Real, self.workload, self.peer, self.base);
        if let Some((r, faster, rounds)) = same_round(results, tier, w, n, a, b) {
            let _ = writeln!(
                md,
                "  - round by round: median ratio {r:.2}×; {a} faster in {faster} of {rounds} rounds."
            );
        }
    }
}

/// The headline section; says so instead when the real tier or client-go on it did not run.
pub(super) fn headline(md: &mut String, t: &Tables, results: &[PeerReport]) {
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
    for &n in &sizes {
        for row in PER_SIZE {
            row.write(md, t, results, &format!("N = {n}, {}", row.label), n);
        }
    }
    for row in ON_W2_SERVER {
        row.write(md, t, results, row.label, W2_PODS);
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_headline_row_compares_peers_that_run_its_workload_on_the_real_tier() {
        for row in PER_SIZE.iter().chain(ON_W2_SERVER) {
            let peers = crate::report::peers_for(Tier::Real, row.workload, true);
            for p in [row.peer, row.base] {
                assert!(
                    peers.contains(&p),
                    "{}: {p} does not run {}",
                    row.label,
                    row.workload
                );
            }
            assert!(!row.base.is_floor() && row.base.is_go(), "{}", row.label);
        }
    }
}
