//! The decoder tells serde how many elements each list holds, so a decoded `Vec` is allocated
//! once at its final size: a cached object then holds no spare capacity, and the informer
//! needs no copy to shed it.

use kinformer_proto::{Envelope, MessageDeserializer, MessageRef, object_from_json};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Pod {
    spec: Spec,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    containers: Vec<Container>,
    security_context: SecurityContext,
}

#[derive(Deserialize)]
struct Container {
    ports: Vec<Port>,
    args: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Port {
    container_port: i32,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SecurityContext {
    // a packed repeated int64: one occurrence holding every element
    supplemental_groups: Vec<i64>,
}

fn decode(pod: &serde_json::Value) -> Pod {
    let bytes = object_from_json(pod).unwrap();
    let env = Envelope::parse(&bytes).unwrap();
    let msg = MessageRef::for_kind("v1", "Pod").unwrap();
    Pod::deserialize(&mut MessageDeserializer::new(msg, env.raw)).unwrap()
}

#[test]
fn every_decoded_list_is_allocated_at_its_final_length() {
    for n in [1usize, 3, 5, 9, 17] {
        let containers: Vec<_> = (0..n)
            .map(|i| {
                json!({"name": format!("c{i}"), "image": "x",
                    "args": (0..n).map(|a| format!("--a{a}")).collect::<Vec<_>>(),
                    "ports": (0..n).map(|p| json!({"containerPort": 8000 + p})).collect::<Vec<_>>()})
            })
            .collect();
        // small and multi-byte varints in one packed run
        let groups: Vec<i64> = (0..n as i64).map(|g| g * 100_000).collect();
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": containers, "securityContext": {"supplementalGroups": groups}}});
        let got = decode(&pod);
        let spec = &got.spec;
        assert_eq!(spec.containers.len(), n);
        assert_eq!(spec.containers.capacity(), n, "containers");
        for c in &spec.containers {
            assert_eq!((c.ports.len(), c.ports.capacity()), (n, n), "ports");
            assert_eq!((c.args.len(), c.args.capacity()), (n, n), "args");
            assert_eq!(c.ports[n - 1].container_port, 8000 + n as i32 - 1);
        }
        let g = &spec.security_context.supplemental_groups;
        assert_eq!(g, &groups);
        assert_eq!(g.capacity(), n, "packed supplementalGroups");
    }
}
