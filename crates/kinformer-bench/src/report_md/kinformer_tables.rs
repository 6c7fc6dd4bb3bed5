//! The report's tables of kinformer's own variants: metadata-only informers, queue modes.

use super::*;

/// The metadata-only informers' own rows: W1 sync and W4 bytes per cached object, without and
/// with managedFields dropped, next to the full kinformer informer's bytes.
pub(super) fn metadata_table(md: &mut String, t: &Tables, results: &[PeerReport]) {
    let any = results
        .iter()
        .any(|r| r.peer == Peer::KinformerMetadata || r.peer == Peer::ClientGoMetadata);
    if !any {
        return;
    }
    md.push_str("\n## Metadata-only informers (W1 and W4)\n\n");
    md.push_str("kinformer: `factory.metadata_informer::<Pod>()`; client-go: `metadatainformer` (protobuf on the real server, JSON on the embedded one). Both cache `PartialObjectMetadata` (metadata only, managedFields included unless dropped) with the namespace index and two handlers. Sync in ms, memory in bytes per cached pod; the full kinformer informer's bytes for comparison.\n\n");
    md.push_str("| tier | N | transform | kinformer-metadata sync | client-go-metadata sync | kinformer-metadata B/pod | client-go-metadata B/pod | kinformer (full) B/pod | kinformer-metadata / client-go-metadata (B/pod) |\n|---|---|---|---|---|---|---|---|---|\n");
    for tier in TIERS {
        for n in sizes_of(results, tier, Workload::W1) {
            for (w, label) in [
                (Workload::W1, "none"),
                (Workload::W1t, "drop managedFields"),
            ] {
                let k = t.bpo.get(tier, w, n, Peer::KinformerMetadata);
                let c = t.bpo.get(tier, w, n, Peer::ClientGoMetadata);
                if k.is_none() && c.is_none() {
                    continue;
                }
                let _ = writeln!(
                    md,
                    "| {tier} | {n} | {label} | {} | {} | {} | {} | {} | {} |",
                    show(t.sync.get(tier, w, n, Peer::KinformerMetadata)),
                    show(t.sync.get(tier, w, n, Peer::ClientGoMetadata)),
                    show(k),
                    show(c),
                    show(t.bpo.get(tier, w, n, Peer::Kinformer)),
                    ratio(k, c),
                );
            }
        }
    }
}

/// kinformer on its two queues: client-go 1.36's RealFifo (the default; batches of up to 1,000
/// keys applied in one store transaction) and client-go ≤ 1.35's DeltaFifo, on W3 and W2.
pub(super) fn queue_modes_table(md: &mut String, t: &Tables, results: &[PeerReport]) {
    if !results.iter().any(|r| r.peer == Peer::KinformerDeltaFifo) {
        return;
    }
    md.push_str(
        "\n## kinformer's queue modes: RealFifo (default, batched) and DeltaFifo (W3, W2)\n\n",
    );
    md.push_str(
        "| tier | measure | RealFifo | DeltaFifo | RealFifo / DeltaFifo |\n|---|---|---|---|---|\n",
    );
    let (rf, df) = (Peer::Kinformer, Peer::KinformerDeltaFifo);
    for tier in TIERS {
        let mut row = |label: String, m: &Medians, w: Workload, n: u64| {
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
            row(
                format!("W3 relist, N = {n} (ms)"),
                &t.relist,
                Workload::W3,
                n,
            );
            row(
                format!("W3 peak RSS during the relist, N = {n} (MiB)"),
                &t.relist_peak,
                Workload::W3,
                n,
            );
        }
        row("W2 events/s".into(), &t.eps, Workload::W2, W2_PODS);
        row("W2 p50 latency (µs)".into(), &t.p50, Workload::W2, W2_PODS);
        row("W2 p99 latency (µs)".into(), &t.p99, Workload::W2, W2_PODS);
    }
}
