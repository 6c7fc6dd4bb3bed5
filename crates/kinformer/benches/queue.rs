//! Queue benchmarks: DeltaFifo add+pop, DeltaFifo replace of 100,000 objects with known
//! objects, the same for RealFifo (pops of one and batches of 1,000; relists atomic and per
//! object), Fifo add+pop.
//!
//! Run briefly: `cargo bench -p kinformer --bench queue -- --warm-up-time 1 --measurement-time 3`

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use futures::FutureExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::queue::{
    DEFAULT_BATCH_SIZE, DeltaFifo, DeltaFifoOptions, Fifo, RealFifo, RealFifoMode, RealFifoOptions,
};
use kinformer::{meta_namespace_key, store::KeyListerGetter};
use kube::api::ObjectMeta;

fn make(i: usize) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("cm-{i}")),
            namespace: Some("bench".into()),
            resource_version: Some(i.to_string()),
            ..Default::default()
        },
        ..Default::default()
    })
}

/// A plain map standing in for the informer's Indexer.
struct Known(HashMap<String, Arc<ConfigMap>>);

impl KeyListerGetter<ConfigMap> for Known {
    fn list_keys(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<ConfigMap>> {
        self.0.get(key).cloned()
    }
}

const BATCH: usize = 1_000;

fn delta_fifo_add_pop(c: &mut Criterion) {
    let objects: Vec<_> = (0..BATCH).map(make).collect();
    let fifo = DeltaFifo::<ConfigMap>::default();
    let mut g = c.benchmark_group("delta_fifo");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("add_pop_1000", |b| {
        b.iter(|| {
            for o in &objects {
                fifo.add(o.clone()).unwrap();
            }
            for _ in 0..BATCH {
                let n = fifo
                    .pop(|d, _| d.len())
                    .now_or_never()
                    .expect("non-empty")
                    .unwrap();
                black_box(n);
            }
        })
    });
    g.finish();
}

fn delta_fifo_replace(c: &mut Criterion) {
    const N: usize = 100_000;
    const GONE: usize = 10_000;
    let list: Vec<_> = (0..N).map(make).collect();
    // The cache knows every listed object plus 10,000 that the relist no longer contains.
    let known: HashMap<_, _> = (0..N + GONE)
        .map(make)
        .map(|o| (meta_namespace_key(o.as_ref()).unwrap(), o))
        .collect();
    let known: Arc<dyn KeyListerGetter<ConfigMap>> = Arc::new(Known(known));
    let mut g = c.benchmark_group("delta_fifo");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    g.bench_function("replace_100k_with_known", |b| {
        b.iter_batched(
            || {
                let fifo = DeltaFifo::new(DeltaFifoOptions {
                    known_objects: Some(known.clone()),
                    emit_delta_type_replaced: true,
                    ..Default::default()
                });
                (fifo, list.clone())
            },
            |(fifo, list)| {
                fifo.replace(list, "1".into()).unwrap();
                assert_eq!(fifo.len(), N + GONE);
                fifo
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn real_fifo_add_pop(c: &mut Criterion) {
    let objects: Vec<_> = (0..BATCH).map(make).collect();
    let fifo = RealFifo::<ConfigMap>::default();
    let mut g = c.benchmark_group("real_fifo");
    g.throughput(Throughput::Elements(BATCH as u64));
    for (name, batch) in [
        ("add_pop_1000", 1),
        ("add_pop_batch_1000", DEFAULT_BATCH_SIZE),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                for o in &objects {
                    fifo.add(o.clone()).unwrap();
                }
                while !fifo.is_empty() {
                    let n = fifo
                        .pop_batch(batch, |p, _| black_box(p))
                        .now_or_never()
                        .expect("non-empty")
                        .unwrap();
                    black_box(n);
                }
            })
        });
    }
    g.finish();
}

fn real_fifo_replace(c: &mut Criterion) {
    const N: usize = 100_000;
    const GONE: usize = 10_000;
    let list: Vec<_> = (0..N).map(make).collect();
    let known: HashMap<_, _> = (0..N + GONE)
        .map(make)
        .map(|o| (meta_namespace_key(o.as_ref()).unwrap(), o))
        .collect();
    let known: Arc<dyn KeyListerGetter<ConfigMap>> = Arc::new(Known(known));
    let mut g = c.benchmark_group("real_fifo");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    for (name, mode, entries) in [
        ("replace_100k_atomic", RealFifoMode::default(), 1),
        (
            "replace_100k_per_object_with_known",
            RealFifoMode::PerObject {
                known_objects: Some(known.clone()),
            },
            N + GONE,
        ),
    ] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let fifo = RealFifo::new(RealFifoOptions {
                        mode: mode.clone(),
                        ..Default::default()
                    });
                    (fifo, list.clone())
                },
                |(fifo, list)| {
                    fifo.replace(list, "1".into()).unwrap();
                    assert_eq!(fifo.len(), entries);
                    fifo
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

fn fifo_add_pop(c: &mut Criterion) {
    let objects: Vec<_> = (0..BATCH).map(make).collect();
    let fifo = Fifo::<Arc<ConfigMap>>::for_objects();
    let mut g = c.benchmark_group("fifo");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("add_pop_1000", |b| {
        b.iter(|| {
            for o in &objects {
                fifo.add(o.clone()).unwrap();
            }
            for _ in 0..BATCH {
                let o = fifo
                    .pop(|o, _| o)
                    .now_or_never()
                    .expect("non-empty")
                    .unwrap();
                black_box(o);
            }
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    delta_fifo_add_pop,
    delta_fifo_replace,
    real_fifo_add_pop,
    real_fifo_replace,
    fifo_add_pop
);
criterion_main!(benches);
