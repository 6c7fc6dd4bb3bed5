//! Transcoding cost per pod: protobuf to JSON (what a protobuf client or the server's request
//! path pays) and JSON to protobuf (what the server pays once per stored object version), next
//! to parsing the same pod's JSON with serde_json.

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn pod() -> serde_json::Value {
    let containers: Vec<_> = (0..2)
        .map(|i| {
            json!({"name": format!("c{i}"), "image": "registry.example/app:1.2.3",
                "args": ["--port=8080", "--verbose"],
                "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m"}},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 10},
                "volumeMounts": [{"name": "data", "mountPath": "/data"}]})
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-7d9f8b6c5d-x2x9k", "namespace": "default", "uid": "0b0e4c1e-4f5a-4c43-9c53-2b6c1f0f6c11",
            "resourceVersion": "123456", "creationTimestamp": "2026-11-24T10:00:00Z",
            "labels": {"app": "web", "tier": "frontend", "pod-template-hash": "7d9f8b6c5d"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f8b6c5d",
                "uid": "5f1c8f0e-1111-2222-3333-444455556666", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                "time": "2026-11-24T10:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"c0\"}": {".": {}, "f:image": {}}}}}}]},
        "spec": {"containers": containers, "nodeName": "node-17", "restartPolicy": "Always",
            "volumes": [{"name": "data", "emptyDir": {}}], "tolerations": [{"key": "k", "operator": "Exists"}]},
        "status": {"phase": "Running", "podIP": "10.0.3.17", "startTime": "2026-11-24T10:00:01Z",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-24T10:00:05Z"}]}})
}

fn bench(c: &mut Criterion) {
    let v = pod();
    let json = serde_json::to_vec(&v).unwrap();
    let proto = kinformer_proto::object_from_json(&v).unwrap();
    let mut g = c.benchmark_group("pod");
    g.bench_function("protobuf_to_json", |b| {
        b.iter(|| kinformer_proto::object_to_json(std::hint::black_box(&proto)).unwrap())
    });
    g.bench_function("json_to_protobuf", |b| {
        b.iter(|| kinformer_proto::object_from_json(std::hint::black_box(&v)).unwrap())
    });
    g.bench_function("serde_json_parse", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(std::hint::black_box(&json)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
