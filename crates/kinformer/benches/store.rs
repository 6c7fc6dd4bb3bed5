//! Indexer benchmarks: add and update of 10k pods with 3 indexes, `by_index`, and a replace of
//! 100,000 objects.
//!
//! Run briefly with `cargo bench -p kinformer --bench store -- --warm-up-time 1 --measurement-time 3`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kinformer::{
    IndexFunc, Indexer, Indexers, namespace_indexers, object::meta_namespace_key_func,
};
use kube::api::ObjectMeta;

const PODS: usize = 10_000;
const NAMESPACES: usize = 100;
const NODES: usize = 500;
const REPLACE: usize = 100_000;

fn pod(i: usize, generation: usize) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            namespace: Some(format!("ns-{}", i % NAMESPACES)),
            name: Some(format!("pod-{i}")),
            resource_version: Some((generation * 1_000_000 + i).to_string()),
            labels: Some(BTreeMap::from([(
                "app".to_owned(),
                format!("app-{}", i % 20),
            )])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some(format!("node-{}", (i + generation) % NODES)),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// Three indexes: namespace, node, and the `app` label.
fn indexer() -> Indexer<Pod> {
    let mut indexers: Indexers<Pod> = namespace_indexers();
    let by_node: IndexFunc<Pod> = Arc::new(|p: &Pod| {
        Ok(p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect())
    });
    let by_app: IndexFunc<Pod> = Arc::new(|p: &Pod| {
        Ok(p.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app").cloned())
            .into_iter()
            .collect())
    });
    indexers.insert("node".into(), by_node);
    indexers.insert("app".into(), by_app);
    Indexer::new(meta_namespace_key_func(), indexers)
}

fn populated(generation: usize) -> Indexer<Pod> {
    let idx = indexer();
    for i in 0..PODS {
        idx.add(pod(i, generation)).unwrap();
    }
    idx
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("indexer");

    group.throughput(Throughput::Elements(PODS as u64));
    let fresh: Vec<Arc<Pod>> = (0..PODS).map(|i| pod(i, 0)).collect();
    group.bench_function("add_10k_pods_3_indexes", |b| {
        b.iter_batched(
            || (indexer(), fresh.clone()),
            |(idx, pods)| {
                for p in pods {
                    idx.add(p).unwrap();
                }
                idx
            },
            BatchSize::LargeInput,
        )
    });

    // Updates that keep every indexed value (the common resync/status-update case) ...
    let same_values: Vec<Arc<Pod>> = (0..PODS)
        .map(|i| {
            let mut p = (*pod(i, 0)).clone();
            p.metadata.resource_version = Some(format!("9{i}"));
            Arc::new(p)
        })
        .collect();
    let idx = populated(0);
    group.bench_function("update_10k_pods_3_indexes_same_values", |b| {
        b.iter_batched(
            || same_values.clone(),
            |pods| {
                for p in pods {
                    idx.update(p).unwrap();
                }
            },
            BatchSize::LargeInput,
        )
    });

    // ... and updates that move every pod to another node.
    let moved: Vec<Arc<Pod>> = (0..PODS).map(|i| pod(i, 1)).collect();
    group.bench_function("update_10k_pods_3_indexes_node_changes", |b| {
        b.iter_batched(
            || (populated(0), moved.clone()),
            |(idx, pods)| {
                for p in pods {
                    idx.update(p).unwrap();
                }
                idx
            },
            BatchSize::LargeInput,
        )
    });

    group.throughput(Throughput::Elements(1));
    let idx = populated(0);
    group.bench_function("by_index_namespace_100_of_10k", |b| {
        b.iter(|| black_box(idx.by_index("namespace", black_box("ns-42")).unwrap()))
    });
    group.bench_function("by_index_node_20_of_10k", |b| {
        b.iter(|| black_box(idx.by_index("node", black_box("node-42")).unwrap()))
    });
    group.bench_function("index_keys_namespace_100_of_10k", |b| {
        b.iter(|| black_box(idx.index_keys("namespace", black_box("ns-42")).unwrap()))
    });
    group.bench_function("get_by_key", |b| {
        b.iter(|| black_box(idx.get_by_key(black_box("ns-42/pod-42"))))
    });

    group.throughput(Throughput::Elements(REPLACE as u64));
    group.sample_size(10);
    let big: Vec<Arc<Pod>> = (0..REPLACE).map(|i| pod(i, 0)).collect();
    let idx = populated(1);
    group.bench_function("replace_100k_pods_3_indexes", |b| {
        b.iter_batched(
            || big.clone(),
            |list| idx.replace(list, "100").unwrap(),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(store, benches);
criterion_main!(store);
