//! Work queue and controller benchmarks: queue add+get+done with 1, 4 and 16 workers, and
//! reconciles per second end to end (embedded API server → informer → handler → queue →
//! worker → reconcile reading the cache).
//!
//! Run briefly: `cargo bench -p kinformer --bench workqueue -- --warm-up-time 1 --measurement-time 3`

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::SharedInformerFactory;
use kinformer::controller::{Action, Controller};
use kinformer::workqueue::Queue;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

const ITEMS: u32 = 10_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime")
}

/// One producer adds `ITEMS` distinct keys; `workers` tasks get and done them until the queue
/// is shut down and empty.
fn queue_add_get_done(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("workqueue");
    g.throughput(Throughput::Elements(u64::from(ITEMS)));
    for workers in [1usize, 4, 16] {
        g.bench_function(format!("add_get_done_{workers}_workers"), |b| {
            b.iter(|| {
                rt.block_on(async {
                    let q: Queue<u32> = Queue::new();
                    let tasks: Vec<_> = (0..workers)
                        .map(|_| {
                            let q = q.clone();
                            tokio::spawn(async move {
                                while let Some(k) = q.get().await {
                                    q.done(&k);
                                }
                            })
                        })
                        .collect();
                    for k in 0..ITEMS {
                        q.add(k);
                    }
                    q.shut_down();
                    for t in tasks {
                        t.await.expect("worker");
                    }
                })
            })
        });
    }
    g.finish();
}

const OBJECTS: usize = 200;

/// Each iteration updates `OBJECTS` ConfigMaps on the embedded server and waits until the
/// controller has reconciled every one of them at its new generation.
fn controller_end_to_end(c: &mut Criterion) {
    let rt = runtime();
    let (server, target, done, cancel) = rt.block_on(async {
        let server = kinformer_apiserver::start(Default::default())
            .await
            .expect("embedded server");
        server
            .seed(
                "configmaps",
                (0..OBJECTS)
                    .map(|i| kinformer_apiserver::seed::configmap("bench", &format!("cm-{i}"), 1)),
            )
            .expect("seed");
        let factory = SharedInformerFactory::new(server.client());
        let configmaps = factory.informer::<ConfigMap>();
        let controller = Controller::new("bench", configmaps.clone()).workers(4);
        factory.start();
        let target = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicU64::new(0));
        let seen = Arc::new(Mutex::new(HashMap::<String, u64>::new()));
        let cancel = CancellationToken::new();
        let cache = configmaps.indexer();
        let (t, d) = (target.clone(), done.clone());
        let c2 = cancel.clone();
        tokio::spawn(async move {
            let _ = controller
                .run(c2, move |key: String| {
                    let generation = cache
                        .get_by_key(&key)
                        .and_then(|cm| cm.data.as_ref()?.get("gen")?.parse::<u64>().ok());
                    let want = t.load(Ordering::Acquire);
                    if generation == Some(want) {
                        let mut seen = seen.lock();
                        if seen.insert(key, want) != Some(want) {
                            d.fetch_add(1, Ordering::AcqRel);
                        }
                    }
                    async { Ok::<_, std::convert::Infallible>(Action::await_change()) }
                })
                .await;
        });
        (server, target, done, cancel)
    });
    let mut g = c.benchmark_group("controller");
    g.throughput(Throughput::Elements(OBJECTS as u64));
    g.sample_size(10);
    g.bench_function("reconciles_end_to_end_200", |b| {
        b.iter(|| {
            let generation = target.fetch_add(1, Ordering::AcqRel) + 1;
            done.store(0, Ordering::Release);
            for i in 0..OBJECTS {
                let mut cm: ConfigMap = server.get(Some("bench"), &format!("cm-{i}")).expect("get");
                cm.data = Some([("gen".to_owned(), generation.to_string())].into());
                server.update(&cm).expect("update");
            }
            rt.block_on(async {
                while done.load(Ordering::Acquire) < OBJECTS as u64 {
                    tokio::time::sleep(Duration::from_micros(200)).await;
                }
            });
        })
    });
    g.finish();
    cancel.cancel();
    rt.block_on(server.shutdown());
}

criterion_group!(benches, queue_add_get_done, controller_end_to_end);
criterion_main!(benches);
