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
            KinformerMetadataLean,
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
            KinformerMetadataLean,
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
