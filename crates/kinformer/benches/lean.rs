//! Reads of 10,000 realistic pods (with managedFields, from `kinformer_apiserver::seed`) in both
//! cache modes: `get_by_key`, `list`, `by_index`, and the writes that fill the cache (one by one,
//! and a list applied a part at a time, as an informer's first list is). Prints the stored bytes
//! per object of the lean mode next to the pods' JSON size.
//!
//! In lean mode nothing but the cache's hot set (the most recently written or decoded objects,
//! [`kinformer::store::DEFAULT_HOT_OBJECTS`]) holds the decoded pods between iterations:
//! `get_by_key` reads keys spread over the whole cache (none hot: every read decodes),
//! `get_by_key_recently_written` reads back the 64 pods written last (all hot), and `list_10k`
//! decodes all but the hot ones.
//!
//! Run briefly with `cargo bench -p kinformer --bench lean -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kinformer::store::{CacheMode, Transaction};
use kinformer::{
    IndexFunc, Indexer, Indexers, namespace_indexers, object::meta_namespace_key_func,
};

const PODS: usize = 10_000;
const NAMESPACES: usize = 100;
/// Objects in one part of a paged list (a list page, as the benchmark's informers ask for).
const PART: usize = 500;

fn pods() -> Vec<Pod> {
    (0..PODS)
        .map(|i| {
            let ns = format!("ns-{}", i % NAMESPACES);
            let value = kinformer_apiserver::seed::pod(&ns, &format!("pod-{i}"), i);
            serde_json::from_value(value).expect("a seed pod decodes")
        })
        .collect()
}

/// Two indexes, as the benchmark's informer peers have: namespace and `spec.nodeName`.
fn indexer(mode: CacheMode) -> Indexer<Pod> {
    let mut indexers: Indexers<Pod> = namespace_indexers();
    let by_node: IndexFunc<Pod> = Arc::new(|p: &Pod| {
        Ok(p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect())
    });
    indexers.insert("node".into(), by_node);
    Indexer::with_cache_mode(meta_namespace_key_func(), indexers, mode)
}

fn populated(mode: CacheMode, pods: &[Pod]) -> Indexer<Pod> {
    let idx = indexer(mode);
    for p in pods {
        idx.add(Arc::new(p.clone())).unwrap();
    }
    idx
}

fn benches(c: &mut Criterion) {
    let pods = pods();
    let json: usize = pods
        .iter()
        .map(|p| serde_json::to_vec(p).unwrap().len())
        .sum();
    let lean = populated(CacheMode::Lean, &pods);
    let stored = lean.encoded_bytes().unwrap();
    println!(
        "lean: {PODS} pods, JSON {:.0} B/pod, stored (compressed) {:.0} B/pod ({:.1}x smaller)",
        json as f64 / PODS as f64,
        stored as f64 / PODS as f64,
        json as f64 / stored as f64
    );
    drop(lean);

    for mode in [CacheMode::Full, CacheMode::Lean] {
        let name = match mode {
            CacheMode::Full => "full",
            CacheMode::Lean => "lean",
        };
        let mut group = c.benchmark_group(format!("cache_{name}"));
        group.sample_size(10);

        group.throughput(Throughput::Elements(PODS as u64));
        group.bench_function("add_10k_pods", |b| {
            b.iter_batched(
                || {
                    let fresh: Vec<Arc<Pod>> = pods.iter().cloned().map(Arc::new).collect();
                    (indexer(mode), fresh)
                },
                |(idx, fresh)| {
                    for p in fresh {
                        idx.add(p).unwrap();
                    }
                    idx
                },
                BatchSize::LargeInput,
            )
        });

        // An informer's first list into an empty lean cache, applied a part at a time as it
        // downloads (one transaction of updates per part): the encoding is most of its cost.
        group.bench_function("apply_10k_pods_in_parts", |b| {
            b.iter_batched(
                || {
                    let parts: Vec<Vec<Transaction<Pod>>> = pods
                        .chunks(PART)
                        .map(|part| {
                            part.iter()
                                .map(|p| Transaction::Update(Arc::new(p.clone())))
                                .collect()
                        })
                        .collect();
                    (indexer(mode), parts)
                },
                |(idx, parts)| {
                    for part in parts {
                        let outcome = idx.transaction(part);
                        assert!(outcome.error().is_none());
                    }
                    idx
                },
                BatchSize::LargeInput,
            )
        });

        let idx = populated(mode, &pods);
        group.bench_function("list_10k", |b| b.iter(|| black_box(idx.list())));

        group.throughput(Throughput::Elements(1));
        // Cold: keys spread over the whole cache (a stride prime to its size), each read once
        // every 10,000 reads, so none is in a lean cache's hot set when read.
        group.bench_function("get_by_key", |b| {
            let mut i = 0usize;
            b.iter(|| {
                i = (i + 7919) % PODS;
                let key = format!("ns-{}/pod-{i}", i % NAMESPACES);
                black_box(idx.get_by_key(&key))
            })
        });
        // Hot: a key among the 64 objects most recently written (as an informer writes an
        // object before it tells the handlers), read back as a reconciler would.
        let recent: Vec<String> = (0..64)
            .map(|j| {
                let i = (j * 151) % PODS;
                idx.update(Arc::new(pods[i].clone())).unwrap();
                format!("ns-{}/pod-{i}", i % NAMESPACES)
            })
            .collect();
        group.bench_function("get_by_key_recently_written", |b| {
            let mut j = 0usize;
            b.iter(|| {
                j = (j + 1) % recent.len();
                black_box(idx.get_by_key(&recent[j]))
            })
        });

        group.throughput(Throughput::Elements(100));
        group.bench_function("by_index_namespace_100_of_10k", |b| {
            b.iter(|| black_box(idx.by_index("namespace", black_box("ns-42")).unwrap()))
        });
        group.bench_function("by_index_node_100_of_10k", |b| {
            b.iter(|| black_box(idx.by_index("node", black_box("node-042")).unwrap()))
        });
        group.finish();
    }
}

criterion_group!(lean, benches);
criterion_main!(lean);
