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
