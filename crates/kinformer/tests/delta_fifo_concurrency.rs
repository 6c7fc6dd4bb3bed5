//! Several producer tasks, one consumer, on a multi-threaded runtime: per-producer order is
//! preserved and nothing is lost.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::queue::{DeltaFifo, DeltaType, QueueError};
use kube::api::ObjectMeta;

const PRODUCERS: usize = 4;
const PER_PRODUCER: u64 = 2_000;

fn make(name: String, seq: u64) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            resource_version: Some(seq.to_string()),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn seq(o: &ConfigMap) -> u64 {
    o.metadata
        .resource_version
        .as_ref()
        .unwrap()
        .parse()
        .unwrap()
}

/// Spawns [`PRODUCERS`] tasks; producer `p` calls `write(fifo, p, n)` for `n` in
/// `0..PER_PRODUCER`, yielding every `yield_every` writes.
fn spawn_producers(
    fifo: &Arc<DeltaFifo<ConfigMap>>,
    yield_every: u64,
    write: fn(&DeltaFifo<ConfigMap>, usize, u64),
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..PRODUCERS)
        .map(|p| {
            let fifo = fifo.clone();
            tokio::spawn(async move {
                for n in 0..PER_PRODUCER {
                    write(&fifo, p, n);
                    if n % yield_every == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect()
}

/// Each producer writes distinct keys `p{i}-{n}`; every one must come out, each producer's in
/// the order it wrote them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn distinct_keys_preserve_per_producer_order_and_lose_nothing() {
    let fifo = Arc::new(DeltaFifo::<ConfigMap>::default());
    let producers = spawn_producers(&fifo, 64, |fifo, p, n| {
        fifo.add(make(format!("p{p}-{n}"), n)).unwrap();
    });

    let consumer = {
        let fifo = fifo.clone();
        tokio::spawn(async move {
            let mut last: BTreeMap<usize, Option<u64>> = BTreeMap::new();
            let mut total = 0u64;
            loop {
                let popped = fifo.pop(|d, _| d).await;
                let deltas = match popped {
                    Ok(d) => d,
                    Err(QueueError::Closed) => break,
                    Err(e) => panic!("unexpected error {e}"),
                };
                assert_eq!(deltas.len(), 1, "each key is added once");
                let d = deltas.oldest().unwrap();
                assert_eq!(d.delta_type, DeltaType::Added);
                let o = d.object.object().unwrap();
                let name = o.metadata.name.as_deref().unwrap();
                let p: usize = name[1..name.find('-').unwrap()].parse().unwrap();
                let s = seq(o);
                let prev = last.entry(p).or_default();
                assert_eq!(
                    *prev,
                    s.checked_sub(1),
                    "producer {p}: out of order or lost"
                );
                *prev = Some(s);
                total += 1;
            }
            (total, last)
        })
    };

    for p in producers {
        p.await.unwrap();
    }
    fifo.close();
    let (total, last) = consumer.await.unwrap();
    assert_eq!(total, PRODUCERS as u64 * PER_PRODUCER);
    for p in 0..PRODUCERS {
        assert_eq!(last[&p], Some(PER_PRODUCER - 1));
    }
}

/// Each producer updates one key `p{i}` over and over: the deltas of a key come out in the order
/// written, batches never repeat or skip a version, and the last version arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_key_per_producer_accumulates_every_update_in_order() {
    let fifo = Arc::new(DeltaFifo::<ConfigMap>::default());
    let producers = spawn_producers(&fifo, 16, |fifo, p, n| {
        fifo.update(make(format!("p{p}"), n)).unwrap();
    });

    let consumer = {
        let fifo = fifo.clone();
        tokio::spawn(async move {
            let mut next: BTreeMap<String, u64> = BTreeMap::new();
            while let Ok(deltas) = fifo.pop(|d, _| d).await {
                for d in &deltas {
                    let o = d.object.object().unwrap();
                    let expected = next.entry(o.metadata.name.clone().unwrap()).or_default();
                    assert_eq!(seq(o), *expected, "{:?}", o.metadata.name);
                    *expected += 1;
                }
            }
            next
        })
    };

    for p in producers {
        p.await.unwrap();
    }
    fifo.close();
    let next = consumer.await.unwrap();
    assert_eq!(next.len(), PRODUCERS);
    assert!(next.values().all(|n| *n == PER_PRODUCER), "{next:?}");
}
