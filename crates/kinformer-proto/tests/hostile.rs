//! Untrusted bytes: whatever arrives, decoding returns a value or a typed error, never panics,
//! and never writes more than its output limit.

use kinformer_proto::{MessageRef, WatchEvent, message_to_json, object_to_json};
use proptest::prelude::*;

fn pod_bytes() -> Vec<u8> {
    let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"},
            "creationTimestamp": "2024-01-02T03:04:05Z"},
        "spec": {"containers": [{"name": "c", "image": "i",
            "ports": [{"containerPort": 80}],
            "resources": {"limits": {"cpu": "500m"}}}]},
        "status": {"phase": "Running"}});
    kinformer_proto::object_from_json(&pod).unwrap()
}

proptest! {
    #[test]
    fn random_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = object_to_json(&body);
        let mut framed = b"k8s\0".to_vec();
        framed.extend_from_slice(&body);
        let _ = object_to_json(&framed);
        let _ = WatchEvent::parse(&framed);
        let pod = MessageRef::for_kind("v1", "Pod").unwrap();
        let _ = message_to_json(pod, &body);
    }

    #[test]
    fn mutated_pods_never_panic(at in 0usize..400, byte in any::<u8>(), cut in 0usize..400) {
        let mut b = pod_bytes();
        let i = at % b.len();
        b[i] = byte;
        let _ = object_to_json(&b);
        b.truncate(cut % b.len());
        let _ = object_to_json(&b);
    }
}

#[test]
fn truncated_and_unknown_bodies_are_typed_errors() {
    let b = pod_bytes();
    assert!(object_to_json(&b[..b.len() - 3]).is_err());
    assert_eq!(
        object_to_json(b"{}"),
        Err(kinformer_proto::ProtoError::NoEnvelope)
    );
    let cr = kinformer_proto::envelope("example.com/v1", "Widget", b"");
    assert!(matches!(
        object_to_json(&cr),
        Err(kinformer_proto::ProtoError::UnknownKind { .. })
    ));
}

#[test]
fn output_is_bounded_for_amplifying_input() {
    // 100,000 empty containers: each two bytes in, a zero-valued container out
    let spec_num = 2u8;
    let mut spec = Vec::new();
    for _ in 0..100_000 {
        spec.extend_from_slice(&[0x12, 0x00]); // containers = 2, empty
    }
    let mut raw = vec![(spec_num << 3) | 2];
    let mut len = spec.len();
    while len >= 0x80 {
        raw.push((len as u8) | 0x80);
        len >>= 7;
    }
    raw.push(len as u8);
    raw.extend_from_slice(&spec);
    let body = kinformer_proto::envelope("v1", "Pod", &raw);
    match object_to_json(&body) {
        Ok(json) => assert!(json.len() <= body.len() * 64 + (1 << 20)),
        Err(e) => assert!(matches!(e, kinformer_proto::ProtoError::TooLarge), "{e}"),
    }
}
