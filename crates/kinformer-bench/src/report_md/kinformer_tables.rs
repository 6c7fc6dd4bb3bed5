//! The report's tables of kinformer's own variants: metadata-only informers, queue modes.

use std::fmt::Write;

use super::TIERS;
use super::medians::{Metric, Tables, ratio, show, sizes_of};
use super::tables::{TRANSFORMS, row};
use crate::report::W2_PODS;
use crate::result::{Peer, PeerReport, Workload};

/// The metadata-only informers' own rows: W1 sync and W4 bytes per cached object, without and
/// with managedFields dropped, for kinformer's default and lean caches and client-go's
/// metadata informer, next to the full kinformer informer's bytes.
pub(super) fn metadata_table(md: &mut String, t: &Tables, results: &[PeerReport]) {
    let (ours, lean, theirs) = (
        Peer::KinformerMetadata,
        Peer::KinformerMetadataLean,
        Peer::ClientGoMetadata,
    );
    if !results
        .iter()
        .any(|r| r.peer == ours || r.peer == lean || r.peer == theirs)
    {
        return;
    }
    md.push_str("\n## Metadata-only informers (W1 and W4)\n\n");
    md.push_str("kinformer: `factory.metadata_informer::<Pod>()`, with the default cache and with `cache_mode(CacheMode::Lean)`; client-go: `metadatainformer` (protobuf on the real server, JSON on the embedded one). All cache `PartialObjectMetadata` (metadata only, managedFields included unless dropped) with the namespace index and two handlers. Sync in ms, memory in bytes per cached pod; the full kinformer informer's bytes for comparison.\n\n");
    md.push_str("| tier | N | transform | kinformer-metadata sync | kinformer-metadata-lean sync | client-go-metadata sync | kinformer-metadata B/pod | kinformer-metadata-lean B/pod | client-go-metadata B/pod | kinformer (full) B/pod | kinformer-metadata / client-go-metadata (B/pod) | kinformer-metadata-lean / client-go-metadata (B/pod) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for tier in TIERS {
        for n in sizes_of(results, tier, Workload::W1) {
            for (w, label) in TRANSFORMS {
                let k = t.bpo.get(tier, w, n, ours);
                let l = t.bpo.get(tier, w, n, lean);
                let c = t.bpo.get(tier, w, n, theirs);
                if k.is_none() && l.is_none() && c.is_none() {
                    continue;
                }
                row(
                    md,
                    [
                        tier.to_string(),
                        n.to_string(),
                        label.to_string(),
                        show(t.sync.get(tier, w, n, ours)),
                        show(t.sync.get(tier, w, n, lean)),
                        show(t.sync.get(tier, w, n, theirs)),
                        show(k),
                        show(l),
                        show(c),
                        show(t.bpo.get(tier, w, n, Peer::Kinformer)),
                        ratio(k, c),
                        ratio(l, c),
                    ],
                );
            }
        }
    }
}

/// The queue-mode rows for each W3 size N: (measure, unit), read `{measure}, N = {n} ({unit})`.
const QUEUE_PER_SIZE: [(&str, Metric, &str); 2] = [
    ("W3 relist", Metric::Relist, "ms"),
    ("W3 peak RSS during the relist", Metric::RelistPeak, "MiB"),
];

/// The queue-mode rows on the W2 server.
const QUEUE_ON_W2_SERVER: [(&str, Metric); 3] = [
    ("W2 events/s", Metric::EventsPerSec),
    ("W2 p50 latency (µs)", Metric::P50),
    ("W2 p99 latency (µs)", Metric::P99),
];

/// kinformer on its two queues: client-go 1.36's RealFifo (the default; batches of up to 1,000
/// keys applied in one store transaction) and client-go ≤ 1.35's DeltaFifo, on W3 and W2.
pub(super) fn queue_modes_table(md: &mut String, t: &Tables, results: &[PeerReport]) {
    let (rf, df) = (Peer::Kinformer, Peer::KinformerDeltaFifo);
    if !results.iter().any(|r| r.peer == df) {
        return;
    }
    md.push_str(
        "\n## kinformer's queue modes: RealFifo (default, batched) and DeltaFifo (W3, W2)\n\n",
    );
    md.push_str(
        "| tier | measure | RealFifo | DeltaFifo | RealFifo / DeltaFifo |\n|---|---|---|---|---|\n",
    );
    for tier in TIERS {
        let mut line = |label: String, metric: Metric, w: Workload, n: u64| {
            let m = t.of(metric);
            let (a, b) = (m.get(tier, w, n, rf), m.get(tier, w, n, df));
            if a.is_some() || b.is_some() {
                let _ = writeln!(
                    md,
                    "| {tier} | {label} | {} | {} | {} |",
                    show(a),
                    show(b),
                    ratio(a, b)
                );
            }
        };
        for n in sizes_of(results, tier, Workload::W3) {
            for (measure, metric, unit) in QUEUE_PER_SIZE {
                line(
                    format!("{measure}, N = {n} ({unit})"),
                    metric,
                    Workload::W3,
                    n,
                );
            }
        }
        for (measure, metric) in QUEUE_ON_W2_SERVER {
            line(measure.to_string(), metric, Workload::W2, W2_PODS);
        }
    }
}
