//! Read your own writes in the controller runner, on paused Tokio time: a reconcile records a
//! write the watch has not delivered yet (the fake source changes the object without telling
//! the watch, like a lagging watch cache); the key's next reconcile waits for it.

use std::sync::Arc;
use std::time::Duration;

use crate::support::{FakeControllerSource, pod, wait_until};
use k8s_openapi::api::core::v1::Pod;
use kinformer::controller::{Action, Controller, RecordError};
use kinformer::informer::SharedIndexInformer;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn informer(source: &FakeControllerSource) -> SharedIndexInformer<Pod> {
    SharedIndexInformer::builder(source.clone())
        .config(crate::queue_mode::config())
        .build()
}

/// Runs a controller over one pod "a" whose first reconcile writes it behind the watch's back
/// and records the write (when `record`); then enqueues "a" again. Returns what each reconcile
/// read from the cache (the pod's resource version), when, and the controller's counts.
struct Run {
    source: FakeControllerSource,
    reads: Arc<Mutex<Vec<(Duration, String)>>>,
    stats: kinformer::controller::ControllerStats,
    cancel: CancellationToken,
    t0: Instant,
}

async fn run(read_your_writes: bool) -> Run {
    let source = FakeControllerSource::new();
    source.add(pod("a"));
    let pods = informer(&source);
    let cancel = CancellationToken::new();
    let controller = Controller::new("ryw", pods.clone())
        .read_your_writes(read_your_writes)
        .read_your_writes_timeout(Duration::from_secs(1));
    let (stats, writes, queue) = (
        controller.stats(),
        controller.writes(),
        controller.queue().clone(),
    );
    let reads = Arc::new(Mutex::new(Vec::new()));
    let t0 = Instant::now();
    {
        let (source, reads, cache) = (source.clone(), reads.clone(), pods.indexer());
        let cancel = cancel.clone();
        tokio::spawn(controller.run(cancel, move |key: String| {
            let seen = cache.get_by_key(&key).unwrap();
            let rv = seen.metadata.resource_version.clone().unwrap();
            let first = {
                let mut reads = reads.lock();
                reads.push((t0.elapsed(), rv));
                reads.len() == 1
            };
            if first {
                source.modify_drop_watch(pod("a"));
                let written = source.get("a").unwrap();
                writes.record(&key, &written).unwrap();
                assert_eq!(writes.is_pending(&key), read_your_writes);
            }
            async { Ok::<_, String>(Action::await_change()) }
        }));
    }
    let (i, c) = (pods.clone(), cancel.clone());
    tokio::spawn(async move { i.run(c).await });
    wait_until("the first reconcile", || reads.lock().len() == 1).await;
    queue.add("a".to_owned());
    Run {
        source,
        reads,
        stats,
        cancel,
        t0,
    }
}

/// With read-your-writes on, the next reconcile waits the timeout, is skipped (no reconcile of
/// the stale object) and retried rate-limited; once the watch delivers a newer version, the
/// retry's wait ends at once and the reconcile reads it.
#[tokio::test(start_paused = true)]
async fn the_next_reconcile_waits_for_the_recorded_write() {
    let r = run(true).await;
    tokio::time::sleep(Duration::from_millis(1001)).await;
    wait_until("the wait timed out", || r.stats.cache_wait_timeouts() == 1).await;
    assert_eq!(
        r.reads.lock().len(),
        1,
        "the stale object was not reconciled"
    );
    assert!(r.t0.elapsed() >= Duration::from_secs(1));
    // The watch catches up (the next change carries a later version).
    r.source.modify(pod("a"));
    wait_until("the second reconcile", || r.reads.lock().len() == 2).await;
    let reads = r.reads.lock().clone();
    assert_eq!(reads[0].1, "1");
    assert_eq!(reads[1].1, "3", "the reconcile read the caught-up object");
    assert!(r.stats.cache_waits() >= 2);
    assert_eq!(r.stats.cache_wait_timeouts(), 1);
    assert_eq!(r.stats.errors(), 0, "a skipped reconcile is not an error");
    r.cancel.cancel();
}

/// With it off, the next reconcile reads the stale object at once.
#[tokio::test(start_paused = true)]
async fn without_read_your_writes_the_next_reconcile_reads_stale() {
    let r = run(false).await;
    wait_until("the second reconcile", || r.reads.lock().len() == 2).await;
    let reads = r.reads.lock().clone();
    assert_eq!(
        reads[1].1, "1",
        "stale: the write (version 2) is not in the cache"
    );
    assert!(reads[1].0 < Duration::from_millis(100));
    assert_eq!(r.stats.cache_waits(), 0);
    r.cancel.cancel();
}

/// A write to a type the controller has no informer of is refused with a typed error, as is
/// one without a comparable resource version.
#[tokio::test(start_paused = true)]
async fn unknown_types_and_versions_are_typed_errors() {
    let source = FakeControllerSource::new();
    let controller = Controller::new("ryw", informer(&source));
    let writes = controller.writes();
    let cm = k8s_openapi::api::core::v1::ConfigMap::default();
    assert!(matches!(
        writes.record("k", &cm),
        Err(RecordError::UnknownType(_))
    ));
    let mut p = pod("a");
    assert!(matches!(
        writes.record("k", &p),
        Err(RecordError::NotComparable(_))
    ));
    p.metadata.resource_version = Some("0".into());
    assert!(matches!(
        writes.record("k", &p),
        Err(RecordError::NotComparable(_))
    ));
    p.metadata.resource_version = Some("3".into());
    writes.record("k", &p).unwrap();
    assert!(writes.is_pending("k"));
    assert!(!writes.is_pending("other"));
}

/// A recorded delete: the next reconcile waits until the deleted object is gone from the
/// cache (here the watch never tells; a relist does).
#[tokio::test(start_paused = true)]
async fn the_next_reconcile_waits_for_a_recorded_delete() {
    let source = FakeControllerSource::new();
    source.add(pod("a"));
    source.add(pod("b"));
    let pods = informer(&source);
    let cancel = CancellationToken::new();
    let controller =
        Controller::new("ryw", pods.clone()).read_your_writes_timeout(Duration::from_secs(1));
    let (stats, writes, queue) = (
        controller.stats(),
        controller.writes(),
        controller.queue().clone(),
    );
    // Per reconcile of "a": whether "b" was in the cache.
    let saw_b = Arc::new(Mutex::new(Vec::new()));
    {
        let (source, saw_b, cache) = (source.clone(), saw_b.clone(), pods.indexer());
        tokio::spawn(controller.run(cancel.clone(), move |key: String| {
            if key == "a" {
                let b = cache.get_by_key("b");
                let first = {
                    let mut saw = saw_b.lock();
                    saw.push(b.is_some());
                    saw.len() == 1
                };
                if first {
                    source.change_delete_silently("b");
                    writes.record_delete(&key, b.as_deref().unwrap()).unwrap();
                }
            }
            async { Ok::<_, String>(Action::await_change()) }
        }));
    }
    let (i, c) = (pods.clone(), cancel.clone());
    tokio::spawn(async move { i.run(c).await });
    wait_until("the first reconcile of a", || saw_b.lock().len() == 1).await;
    queue.add("a".to_owned());
    tokio::time::sleep(Duration::from_millis(1001)).await;
    wait_until("the wait timed out", || stats.cache_wait_timeouts() == 1).await;
    assert_eq!(
        saw_b.lock().len(),
        1,
        "not reconciled while b is still cached"
    );
    // A relist brings the deletion.
    source.reset_watch();
    tokio::time::sleep(Duration::from_secs(5)).await; // the reflector's backoff, then a relist
    wait_until("the second reconcile of a", || saw_b.lock().len() == 2).await;
    assert_eq!(*saw_b.lock(), vec![true, false]);
    cancel.cancel();
}

/// A reconcile can wait on the spot: `Writes::wait` times out (keeping the record) while the
/// watch lags, and returns once the informer's cache holds the write.
#[tokio::test(start_paused = true)]
async fn a_reconcile_can_wait_for_its_writes_on_the_spot() {
    let source = FakeControllerSource::new();
    source.add(pod("a"));
    let pods = informer(&source);
    let controller =
        Controller::new("ryw", pods.clone()).read_your_writes_timeout(Duration::from_secs(1));
    let writes = controller.writes();
    let cancel = CancellationToken::new();
    let (i, c) = (pods.clone(), cancel.clone());
    tokio::spawn(async move { i.run(c).await });
    wait_until("synced", || pods.has_synced()).await;
    source.modify_drop_watch(pod("a"));
    writes.record("a", &source.get("a").unwrap()).unwrap();
    let t0 = Instant::now();
    let err = writes.wait("a").await.unwrap_err();
    assert_eq!(t0.elapsed(), Duration::from_secs(1));
    assert!(
        matches!(&err, kinformer::store::CacheWaitError::TimedOut { wanted, key: Some(k), .. } if wanted == "2" && k == "a"),
        "{err:?}"
    );
    assert!(writes.is_pending("a"), "kept for the next try");
    source.modify(pod("a"));
    assert_eq!(writes.wait("a").await, Ok(()));
    assert!(!writes.is_pending("a"));
    // The informer's own wait: at once for a version it has seen.
    assert_eq!(
        pods.wait_for_resource_version("3", Duration::from_secs(1))
            .await,
        Ok(())
    );
    cancel.cancel();
}

/// Once the informer stops, a wait on its cache ends at once with `Stopped`.
#[tokio::test(start_paused = true)]
async fn a_stopped_informer_ends_the_wait() {
    let source = FakeControllerSource::new();
    source.add(pod("a"));
    let pods = informer(&source);
    let cancel = CancellationToken::new();
    let (i, c) = (pods.clone(), cancel.clone());
    let running = tokio::spawn(async move { i.run(c).await });
    wait_until("synced", || pods.has_synced()).await;
    let waiting = {
        let pods = pods.clone();
        tokio::spawn(async move {
            pods.wait_for_key_resource_version("a", "9", Duration::from_secs(3600))
                .await
        })
    };
    tokio::task::yield_now().await;
    cancel.cancel();
    running.await.unwrap();
    let t0 = Instant::now();
    assert!(matches!(
        waiting.await.unwrap(),
        Err(kinformer::store::CacheWaitError::Stopped { .. })
    ));
    assert!(t0.elapsed() < Duration::from_secs(1));
}
