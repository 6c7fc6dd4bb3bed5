//! Unit tests of the report runner.

use super::*;

#[test]
fn peers_per_tier_and_workload() {
    use Peer::*;
    assert_eq!(
        peers_for(Tier::Real, Workload::W1, true),
        vec![
            Kinformer,
            KinformerJson,
            KinformerList,
            KinformerLean,
            KinformerMetadata,
            KubeRs,
            ClientGo,
            ClientGoJson,
            ClientGoMetadata,
            FloorPaged,
            FloorUnpaged,
            FloorStreaming
        ]
    );
    assert_eq!(
        peers_for(Tier::Embedded, Workload::W1t, false),
        vec![
            Kinformer,
            KinformerJson,
            KinformerList,
            KinformerLean,
            KinformerMetadata,
            KubeRs
        ]
    );
    assert_eq!(
        peers_for(Tier::Embedded, Workload::W2, true),
        vec![
            Kinformer,
            KinformerJson,
            KinformerDeltaFifo,
            KubeRs,
            ClientGo,
            ClientGoJson,
            FloorWatch
        ]
    );
    assert_eq!(
        peers_for(Tier::Real, Workload::W3, false),
        vec![Kinformer, KinformerLean, KinformerDeltaFifo, KubeRs]
    );
}

#[test]
fn peer_output_is_the_last_json_line() {
    let out = "log line\n{\"peer\":\"kinformer\",\"workload\":\"w1\",\"n\":3,\"objects\":3,\"baseline_rss_kib\":1,\"sync_ms\":2.5,\"peak_rss_kib\":null,\"steady_rss_kib\":null,\"bytes_per_object\":null,\"events_per_sec\":null,\"events\":null,\"latency_p50_us\":null,\"latency_p99_us\":null,\"relist_ms\":null,\"relist_peak_rss_kib\":null}\n";
    let r = parse_peer_output(out).unwrap();
    assert_eq!((r.peer, r.n, r.sync_ms), (Peer::Kinformer, 3, Some(2.5)));
    assert!(parse_peer_output("no json here").is_err());
    assert!(parse_peer_output("{not json").is_err());
}

#[test]
fn checkpointed_results_render_into_a_report() {
    let dir = std::env::temp_dir().join(format!("kinformer-bench-render-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |peer: Peer, sync: f64| PeerReport {
        tier: Some(Tier::Embedded),
        objects: 2_000,
        sync_ms: Some(sync),
        bytes_per_object: Some(1_000.0),
        ..PeerReport::new(peer, Workload::W1, 2_000)
    };
    checkpoint(
        &dir,
        &[run(Peer::Kinformer, 90.0), run(Peer::KubeRs, 140.0)],
    );
    let mut opts = ReportOptions::new(true);
    opts.out_dir = dir.join("out");
    let (results, notes) = load_results(&opts, &dir.join("results.partial.json")).unwrap();
    let md = crate::report_md::write_report(&opts, &results, &notes).unwrap();
    let text = std::fs::read_to_string(md).unwrap();
    assert!(text.contains("Rendered from"), "{text}");
    assert!(
        text.contains("| kube-rs |") || text.contains("kube-rs"),
        "{text}"
    );
    assert!(load_results(&opts, &dir.join("missing.json")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
