//! The report's tables of W1, W4, W3 and W2, both tiers side by side. Each row's columns are
//! the peers of [`COMPARED`] (and the floors or client-go ratios the table adds).

use std::fmt::Write;

use super::medians::{Medians, Tables, W1_FLOORS, median, ratio, show, sizes_of};
use super::{INFORMERS, TIERS};
use crate::report::{Notes, ReportOptions, W2_PODS};
use crate::result::{Peer, PeerReport, Tier, Workload};
use crate::svg::fmt_num;

/// The informers of the W1, W4 and W3 tables, one column each, in order.
const COMPARED: [Peer; 4] = [
    Peer::Kinformer,
    Peer::KubeRs,
    Peer::ClientGo,
    Peer::ClientGoJson,
];

/// The peers kinformer is divided by in the W1 and W4 tables' last columns.
const CLIENT_GO: [Peer; 2] = [Peer::ClientGo, Peer::ClientGoJson];

/// W1 and its transform variant, as the W4 and metadata tables name them.
pub(super) const TRANSFORMS: [(Workload, &str); 2] = [
    (Workload::W1, "none"),
    (Workload::W1t, "drop managedFields"),
];

/// One table row: `| a | b | … |`.
pub(super) fn row(md: &mut String, cells: impl IntoIterator<Item = String>) {
    md.push('|');
    for c in cells {
        let _ = write!(md, " {c} |");
    }
    md.push('\n');
}

/// `m`'s cells of `peers` on one (tier, workload, N).
fn cells(m: &Medians, (tier, w, n): (Tier, Workload, u64), peers: &[Peer]) -> Vec<String> {
    peers.iter().map(|&p| show(m.get(tier, w, n, p))).collect()
}

/// W1 sync against the floor and client-go, and W1 peak RSS.
pub(super) fn w1_tables(md: &mut String, t: &Tables, results: &[PeerReport]) {
    md.push_str("## W1: initial sync (ms until synced and every add handled)\n\n");
    md.push_str("The floor is the fastest run of three decode-only fetches on every core (pages of 500, one unpaged response, or one streaming list: what the informers send first), no cache; the informers' columns are medians. kinformer / floor below 1.00× would be run-to-run noise.\n\n");
    md.push_str("| tier | N | floor | kinformer | kube-rs | client-go (protobuf) | client-go (JSON) | kinformer / floor | kinformer / client-go (protobuf) | kinformer / client-go (JSON) |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for tier in TIERS {
        for n in sizes_of(results, tier, Workload::W1) {
            let at = (tier, Workload::W1, n);
            let k = t.sync.get(tier, Workload::W1, n, Peer::Kinformer);
            let floor = t.sync_least.floor(tier, n);
            let floor_cell = floor
                .map(|(v, m)| format!("{} ({m})", fmt_num(v)))
                .unwrap_or_else(|| "–".into());
            let against = std::iter::once(floor.map(|f| f.0))
                .chain(CLIENT_GO.map(|p| t.sync.get(tier, Workload::W1, n, p)))
                .map(|base| ratio(k, base));
            row(
                md,
                [tier.to_string(), n.to_string(), floor_cell]
                    .into_iter()
                    .chain(cells(&t.sync, at, &COMPARED))
                    .chain(against),
            );
        }
    }
    md.push_str("\nPeak RSS during W1 (MiB):\n\n| tier | N | floor (paged) | floor (unpaged) | floor (streaming) | kinformer | kube-rs | client-go (protobuf) | client-go (JSON) |\n|---|---|---|---|---|---|---|---|---|\n");
    let peers: Vec<Peer> = W1_FLOORS
        .map(|(p, _)| p)
        .into_iter()
        .chain(COMPARED)
        .collect();
    for tier in TIERS {
        for n in sizes_of(results, tier, Workload::W1) {
            let head = [tier.to_string(), n.to_string()];
            row(
                md,
                head.into_iter()
                    .chain(cells(&t.peak, (tier, Workload::W1, n), &peers)),
            );
        }
    }
}

/// The peers of the W1 CPU table, one column each, in order (those with no CPU figure in the
/// results are left out).
const CPU_PEERS: [Peer; 9] = [
    Peer::FloorStreaming,
    Peer::Kinformer,
    Peer::KinformerLean,
    Peer::KinformerMetadata,
    Peer::KinformerMetadataLean,
    Peer::KubeRs,
    Peer::ClientGo,
    Peer::ClientGoJson,
    Peer::ClientGoMetadata,
];

/// W1's CPU time per object and the cores it kept busy, for the peers that report it.
pub(super) fn w1_cpu_table(md: &mut String, t: &Tables, results: &[PeerReport]) {
    let has_cpu = |p: Peer| {
        results
            .iter()
            .any(|r| r.peer == p && r.workload == Workload::W1 && r.cpu_ms_at_sync.is_some())
    };
    let peers: Vec<Peer> = CPU_PEERS.into_iter().filter(|&p| has_cpu(p)).collect();
    if peers.is_empty() {
        return;
    }
    md.push_str("\nCPU during W1: µs of CPU time per pod from start to synced (user and system, every thread of the peer's process), and in brackets the cores that kept busy (CPU time ÷ sync time). The API server's own CPU is not counted.\n\n");
    row(
        md,
        ["tier".to_owned(), "N".to_owned()]
            .into_iter()
            .chain(peers.iter().map(|p| p.to_string())),
    );
    md.push_str(&"|---".repeat(peers.len() + 2));
    md.push_str("|\n");
    for tier in TIERS {
        for n in sizes_of(results, tier, Workload::W1) {
            let cpu = peers.iter().map(|&p| {
                let per = t.cpu_per_object.get(tier, Workload::W1, n, p);
                match (per, t.cores.get(tier, Workload::W1, n, p)) {
                    (Some(per), Some(cores)) => format!("{per:.0} ({cores:.2})"),
                    _ => show(per),
                }
            });
            row(md, [tier.to_string(), n.to_string()].into_iter().chain(cpu));
        }
    }
}

/// W4: bytes per cached pod, without and with the transform.
pub(super) fn w4_table(md: &mut String, t: &Tables, results: &[PeerReport]) {
    md.push_str("\n## W4: memory per cached pod after sync (bytes: (steady RSS − baseline RSS) / objects)\n\n");
    md.push_str("| tier | N | transform | kinformer | kube-rs | client-go (protobuf) | client-go (JSON) | kinformer / client-go (protobuf) | kinformer / client-go (JSON) |\n|---|---|---|---|---|---|---|---|---|\n");
    for tier in TIERS {
        for n in sizes_of(results, tier, Workload::W1) {
            for (w, label) in TRANSFORMS {
                let k = t.bpo.get(tier, w, n, Peer::Kinformer);
                let against = CLIENT_GO.map(|p| ratio(k, t.bpo.get(tier, w, n, p)));
                row(
                    md,
                    [tier.to_string(), n.to_string(), label.to_string()]
                        .into_iter()
                        .chain(cells(&t.bpo, (tier, w, n), &COMPARED))
                        .chain(against),
                );
            }
        }
    }
}

/// W3: relist time and the relist's peak over the steady RSS.
pub(super) fn w3_table(md: &mut String, t: &Tables, results: &[PeerReport]) {
    md.push_str("\n## W3: relist after a forced 410 (ms until relisted; peak RSS during the relist / steady RSS before it)\n\n");
    md.push_str("Embedded: every pod changed while watches were paused, done when N updates reached both handlers. Real (no watch cache, connections cut by a proxy after a compaction): unchanged pods, done when the library reports a list at or after the compaction.\n\n");
    md.push_str("| tier | N | kinformer | kube-rs | client-go (protobuf) | client-go (JSON) | kinformer / client-go (protobuf) | kinformer peak/steady | kube-rs peak/steady | client-go peak/steady |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for tier in TIERS {
        // the client-go whose relist peak the table gives: protobuf on the real server
        let client_go = match tier {
            Tier::Real => Peer::ClientGo,
            Tier::Embedded => Peer::ClientGoJson,
        };
        for n in sizes_of(results, tier, Workload::W3) {
            let w3 = |m: &Medians, p: Peer| m.get(tier, Workload::W3, n, p);
            let peak_over_steady = [Peer::Kinformer, Peer::KubeRs, client_go]
                .map(|p| ratio(w3(&t.relist_peak, p), w3(&t.steady, p)));
            let against = ratio(
                w3(&t.relist, Peer::Kinformer),
                w3(&t.relist, Peer::ClientGo),
            );
            row(
                md,
                [tier.to_string(), n.to_string()]
                    .into_iter()
                    .chain(cells(&t.relist, (tier, Workload::W3, n), &COMPARED))
                    .chain([against])
                    .chain(peak_over_steady),
            );
        }
    }
}

/// W2: throughput and latency of every peer against the watch floor, and the real
/// writer's rate.
pub(super) fn w2_table(md: &mut String, t: &Tables, opts: &ReportOptions, notes: &Notes) {
    let _ = writeln!(
        md,
        "\n## W2: watch throughput ({} updates on the embedded tier, {} on the real one, over {W2_PODS} cached pods; events/s per handler; write-to-handler latency)\n",
        opts.w2_updates, opts.real_w2_updates
    );
    md.push_str("The W2 floor decodes the same watch events with no cache and no handlers.\n\n");
    md.push_str("| tier | peer | events/s | p50 latency (µs) | p99 latency (µs) | events/s ÷ floor | p50 ÷ floor p50 |\n|---|---|---|---|---|---|---|\n");
    for tier in TIERS {
        let w2 = |m: &Medians, p: Peer| m.get(tier, Workload::W2, W2_PODS, p);
        let (floor_eps, floor_p50) = (w2(&t.eps, Peer::FloorWatch), w2(&t.p50, Peer::FloorWatch));
        // the informers, kinformer on DeltaFifo, the floor
        for p in INFORMERS
            .into_iter()
            .chain([Peer::KinformerDeltaFifo, Peer::FloorWatch])
        {
            let eps = w2(&t.eps, p);
            if eps.is_none() {
                continue;
            }
            let p50 = w2(&t.p50, p);
            row(
                md,
                [
                    tier.to_string(),
                    p.to_string(),
                    show(eps),
                    show(p50),
                    show(w2(&t.p99, p)),
                    ratio(eps, floor_eps),
                    ratio(p50, floor_p50),
                ],
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
