//! What order a handler sees, per queue mode, through the public API with scripted sources:
//! client-go 1.36's in-order informers (`QueueMode::RealFifo`, the default) against
//! client-go ≤ 1.35's `DeltaFifo` (issue #15's three cases; client-go `controller_test.go`'s
//! handler-order scenarios).

use crate::queue_mode;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kinformer::informer::{QueueMode, ResourceEventHandlerFuncs, SharedIndexInformer};
use kinformer::reflector::{ListPage, ListWatch, Status, WatchEvent};
use kinformer::store::CacheMode;
use kinformer::{InformerConfig, ObjectOrTombstone, object::resource_version};
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

fn pod(name: &str, rv: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

type Lists = Vec<ListPage<Pod>>;
type Watches = Vec<Vec<Result<WatchEvent<Pod>, kinformer::reflector::ListWatchError>>>;

/// Runs an informer in `mode` over scripted lists and watches (the last watch stays open) until
/// its handler has seen `expected` events; returns them as `"add ns/a@2"`, `"update ns/a@4"`,
/// `"delete ns/c"` (a tombstone: `"delete? ns/c"`).
async fn events(mode: QueueMode, lists: Lists, watches: Watches, expected: usize) -> Vec<String> {
    events_in(mode, CacheMode::Full, lists, watches, expected)
        .await
        .0
}

/// [`events`] with a cache mode; also returns the cache's objects at the end (sorted
/// `name@rv`) and, per update, the old object's resource version, and per tombstone whether
/// it carried the final state.
async fn events_in(
    mode: QueueMode,
    cache: CacheMode,
    lists: Lists,
    watches: Watches,
    expected: usize,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let details: Arc<Mutex<Vec<String>>> = Arc::default();
    let lists = Arc::new(Mutex::new(lists.into_iter()));
    let watches = Arc::new(Mutex::new(watches.into_iter()));
    let lw = ListWatch::<Pod>::new(
        move |_| {
            let page = lists.lock().next().expect("scripted list");
            async move { Ok(page) }.boxed()
        },
        move |_| {
            let events = watches.lock().next();
            async move {
                Ok(match events {
                    Some(events) => futures::stream::iter(events).boxed(),
                    None => futures::stream::pending().boxed(),
                })
            }
            .boxed()
        },
    );
    let informer = SharedIndexInformer::builder(lw)
        .config(InformerConfig::default().queue_mode(mode).cache_mode(cache))
        .build();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let s = (seen.clone(), seen.clone(), seen.clone());
    let d = (details.clone(), details.clone());
    informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new()
                .on_add(move |p: &Arc<Pod>, _| {
                    s.0.lock().push(format!(
                        "add ns/{}@{}",
                        p.metadata.name.as_deref().unwrap(),
                        resource_version(p.as_ref())
                    ))
                })
                .on_update(move |old, p| {
                    d.0.lock()
                        .push(format!("old@{}", resource_version(old.as_ref())));
                    s.1.lock().push(format!(
                        "update ns/{}@{}",
                        p.metadata.name.as_deref().unwrap(),
                        resource_version(p.as_ref())
                    ))
                })
                .on_delete(move |o| {
                    if let ObjectOrTombstone::Tombstone(t) = o {
                        d.1.lock()
                            .push(format!("final state known: {}", t.obj.is_some()));
                    }
                    let line = match o {
                        ObjectOrTombstone::Object(_) => format!("delete {}", o.key().unwrap()),
                        ObjectOrTombstone::Tombstone(_) => format!("delete? {}", o.key().unwrap()),
                    };
                    s.2.lock().push(line)
                }),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
    while seen.lock().len() < expected {
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {:?}",
            seen.lock()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // nothing more comes
    tokio::time::sleep(Duration::from_secs(5)).await;
    cancel.cancel();
    run.await.unwrap();
    let mut cached: Vec<String> = informer
        .indexer()
        .list()
        .iter()
        .map(|p| {
            format!(
                "{}@{}",
                p.metadata.name.as_deref().unwrap(),
                resource_version(p.as_ref())
            )
        })
        .collect();
    cached.sort();
    let details = details.lock().clone();
    (seen.lock().clone(), cached, details)
}

fn strs(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| s.to_string()).collect()
}

/// A burst ADDED a, ADDED b, MODIFIED a.
async fn burst(mode: QueueMode) -> Vec<String> {
    events(
        mode,
        vec![ListPage::new(vec![], "1")],
        vec![vec![
            Ok(WatchEvent::Added(pod("a", "2"))),
            Ok(WatchEvent::Added(pod("b", "3"))),
            Ok(WatchEvent::Modified(pod("a", "4"))),
        ]],
        3,
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn real_fifo_delivers_across_keys_in_arrival_order() {
    assert_eq!(
        burst(QueueMode::RealFifo).await,
        strs(&["add ns/a@2", "add ns/b@3", "update ns/a@4"])
    );
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_groups_changes_per_object() {
    assert_eq!(
        burst(QueueMode::DeltaFifo).await,
        strs(&["add ns/a@2", "update ns/a@4", "add ns/b@3"])
    );
}

/// A DELETED event for an object the informer never cached, then an add (so the DeltaFifo run
/// has something to wait for).
async fn never_cached_delete(mode: QueueMode) -> Vec<String> {
    let expected = if mode == QueueMode::RealFifo { 2 } else { 1 };
    events(
        mode,
        vec![ListPage::new(vec![], "1")],
        vec![vec![
            Ok(WatchEvent::Deleted(pod("ghost", "2"))),
            Ok(WatchEvent::Added(pod("a", "3"))),
        ]],
        expected,
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn real_fifo_tells_on_delete_for_a_never_cached_object() {
    assert_eq!(
        never_cached_delete(QueueMode::RealFifo).await,
        strs(&["delete ns/ghost", "add ns/a@3"])
    );
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_drops_a_delete_for_a_never_cached_object() {
    assert_eq!(
        never_cached_delete(QueueMode::DeltaFifo).await,
        strs(&["add ns/a@3"])
    );
}

/// List a, b; the watch ends with 410; the relist has b (changed) and c, not a.
async fn relist(mode: QueueMode) -> Vec<String> {
    events(
        mode,
        vec![
            ListPage::new(vec![pod("a", "1"), pod("b", "1")], "1"),
            ListPage::new(vec![pod("b", "5"), pod("c", "5")], "5"),
        ],
        vec![vec![Ok(WatchEvent::Error(Status::expired("too old")))]],
        5,
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn real_fifo_relist_tells_deletions_first() {
    assert_eq!(
        relist(QueueMode::RealFifo).await,
        strs(&[
            "add ns/a@1",
            "add ns/b@1",
            "delete? ns/a",
            "update ns/b@5",
            "add ns/c@5"
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_relist_tells_deletions_last() {
    assert_eq!(
        relist(QueueMode::DeltaFifo).await,
        strs(&[
            "add ns/a@1",
            "add ns/b@1",
            "update ns/b@5",
            "add ns/c@5",
            "delete? ns/a"
        ])
    );
}

/// The cache is written before a handler hears of the change, in both modes (client-go
/// `TestProcessDeltasInBatch`'s store-before-callback rule): every handler call sees its own
/// object, or a newer one, in the cache.
#[tokio::test(start_paused = true)]
async fn the_cache_is_written_before_the_handler_is_called_in_both_modes() {
    for mode in [QueueMode::RealFifo, QueueMode::DeltaFifo] {
        let lw = ListWatch::<Pod>::new(
            |_| async { Ok(ListPage::new(vec![pod("a", "1")], "1")) }.boxed(),
            |_| {
                async {
                    let events = (2..200)
                        .map(|i| Ok(WatchEvent::Modified(pod("a", &i.to_string()))))
                        .chain(std::iter::once(Ok(WatchEvent::Added(pod("b", "200")))));
                    Ok(futures::stream::iter(events)
                        .chain(futures::stream::pending())
                        .boxed())
                }
                .boxed()
            },
        );
        let informer = SharedIndexInformer::builder(lw)
            .config(InformerConfig::default().queue_mode(mode))
            .build();
        let cache = informer.indexer();
        let stale = Arc::new(AtomicUsize::new(0));
        let calls = Arc::new(AtomicUsize::new(0));
        let (st, ca) = (stale.clone(), calls.clone());
        informer
            .add_event_handler(ResourceEventHandlerFuncs::new().on_update(
                move |_, new: &Arc<Pod>| {
                    ca.fetch_add(1, Ordering::SeqCst);
                    let cached = cache.get_by_key("ns/a").unwrap();
                    let rv = |p: &Pod| resource_version(p).parse::<u32>().unwrap();
                    if rv(&cached) < rv(new) {
                        st.fetch_add(1, Ordering::SeqCst);
                    }
                },
            ))
            .unwrap();
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let (i, c) = (informer.clone(), cancel.clone());
            async move { i.run(c).await }
        });
        while informer.indexer().get_by_key("ns/b").is_none() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        cancel.cancel();
        run.await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 198, "{mode:?}");
        assert_eq!(stale.load(Ordering::SeqCst), 0, "{mode:?}");
    }
}

/// A lean cache notifies exactly as the full one does, on both queues: a list, watch events,
/// and a relist with a deletion (its tombstone carries the decoded final state) and an update
/// (its old object decoded from the cache); the caches end up equal.
#[tokio::test(start_paused = true)]
async fn lean_cache_notifies_and_caches_as_the_full_cache_does() {
    let lists = || {
        vec![
            ListPage::new(vec![pod("a", "1"), pod("b", "1")], "1"),
            ListPage::new(vec![pod("b", "5"), pod("c", "5"), pod("d", "5")], "5"),
        ]
    };
    let watches = || {
        vec![
            vec![
                Ok(WatchEvent::Modified(pod("a", "2"))),
                Ok(WatchEvent::Error(Status::expired("too old"))),
            ],
            vec![
                Ok(WatchEvent::Deleted(pod("d", "6"))),
                Ok(WatchEvent::Added(pod("e", "7"))),
            ],
        ]
    };
    for mode in [QueueMode::RealFifo, QueueMode::DeltaFifo] {
        let full = events_in(mode, CacheMode::Full, lists(), watches(), 9).await;
        let lean = events_in(mode, CacheMode::Lean, lists(), watches(), 9).await;
        assert_eq!(lean, full, "{mode:?}");
        assert_eq!(lean.1, strs(&["b@5", "c@5", "e@7"]), "{mode:?}");
        assert!(
            lean.2.contains(&"old@1".to_string()),
            "{mode:?}: {:?}",
            lean.2
        );
    }
    let lean = events_in(QueueMode::RealFifo, CacheMode::Lean, lists(), watches(), 9).await;
    assert!(
        lean.2.contains(&"final state known: true".to_string()),
        "{:?}",
        lean.2
    );
}

/// A lean informer resyncs every cached object (decoded from the cache) as an update with an
/// unchanged resource version.
#[tokio::test(start_paused = true)]
async fn lean_cache_resyncs_every_object() {
    let lw = ListWatch::<Pod>::new(
        |_| async { Ok(ListPage::new(vec![pod("a", "1"), pod("b", "2")], "2")) }.boxed(),
        |_| async { Ok(futures::stream::pending().boxed()) }.boxed(),
    );
    let informer = SharedIndexInformer::builder(lw)
        .config(
            queue_mode::config()
                .cache_mode(CacheMode::Lean)
                .resync_period(Duration::from_secs(1)),
        )
        .build();
    let resynced: Arc<Mutex<Vec<String>>> = Arc::default();
    let r = resynced.clone();
    informer
        .add_event_handler(ResourceEventHandlerFuncs::new().on_update(
            move |old: &Arc<Pod>, new: &Arc<Pod>| {
                assert_eq!(
                    resource_version(old.as_ref()),
                    resource_version(new.as_ref())
                );
                r.lock().push(new.metadata.name.clone().unwrap());
            },
        ))
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while resynced.lock().len() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            resynced.lock()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cancel.cancel();
    run.await.unwrap();
    let mut names = resynced.lock()[..2].to_vec();
    names.sort();
    assert_eq!(names, strs(&["a", "b"]));
}
