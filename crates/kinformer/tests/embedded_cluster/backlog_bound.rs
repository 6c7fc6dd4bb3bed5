//! Issue 33 item 5: `MAX_LISTENER_BACKLOG` is exact. One listener is held (an `EventStream`
//! nobody reads: handlers and streams share one bookkeeping path) while a burst of three
//! RealFifo batches' worth of watch events arrives, then a relist that updates every object.
//! Whenever the informer has paused, the held listener holds exactly the bound, never more
//! (before, a whole batch of up to 1,000 went out after one room check: about 2,000 behind);
//! released, it gets every notification once, in order. Both queue modes. A second handler
//! added while the held one is full sees every object exactly once.

use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kinformer::informer::{
    Event, EventStream, MAX_LISTENER_BACKLOG, QueueMode, SharedIndexInformer,
};
use kinformer::reflector::{ListPage, ListWatch, ListWatchError, Status, WatchEvent};
use kinformer::{InformerConfig, queue::DEFAULT_BATCH_SIZE};
use kube::api::ObjectMeta;
use tokio_util::sync::CancellationToken;

/// Watch events in the burst: more than three batches.
const EVENTS: usize = 3 * DEFAULT_BATCH_SIZE + 217;

fn pod(i: usize, rv: usize) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("p-{i:05}")),
            namespace: Some("ns".into()),
            resource_version: Some(rv.to_string()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// First list: empty, without a resourceVersion. First watch: `EVENTS` adds (rv 2..), then 410 Gone. Second list:
/// every pod updated (rv `EVENTS + 10`). Later watches: open, silent.
fn informer(mode: QueueMode) -> SharedIndexInformer<Pod> {
    let lists = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let watches = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let relist_rv = EVENTS + 10;
    let lw = ListWatch::<Pod>::new(
        move |_| {
            let n = lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                Ok(if n == 0 {
                    // No resourceVersion: the watch then starts at "" and its adds do not
                    // advance the store's resourceVersion, so no bookmark entry separates
                    // them in the RealFifo and they form full batches.
                    ListPage::new(vec![], "")
                } else {
                    let pods = (0..EVENTS).map(|i| pod(i, relist_rv)).collect();
                    ListPage::new(pods, relist_rv.to_string())
                })
            }
            .boxed()
        },
        move |_| {
            let n = watches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                if n > 0 {
                    return Ok(futures::stream::pending().boxed());
                }
                let events = (0..EVENTS).map(|i| Ok(WatchEvent::Added(pod(i, i + 2))));
                let gone =
                    WatchEvent::Error(Status::new(410, "Expired", "too old resource version"));
                let stream = futures::stream::iter(events)
                    .chain(futures::stream::iter([Ok::<_, ListWatchError>(gone)]))
                    .chain(futures::stream::pending());
                Ok(stream.boxed())
            }
            .boxed()
        },
    );
    SharedIndexInformer::builder(lw)
        .config(InformerConfig::default().queue_mode(mode))
        .build()
}

/// Lets paused time run until the informer stops moving: cache size and backlog unchanged
/// over 5 s of virtual time.
async fn settle(informer: &SharedIndexInformer<Pod>, stream: &EventStream<Pod>) -> usize {
    let look = || {
        (
            informer.indexer().len(),
            stream.registration().backlog(),
            informer.list_watch_counts(),
        )
    };
    let mut last = look();
    loop {
        tokio::time::sleep(Duration::from_secs(5)).await;
        let now = look();
        if now == last {
            return now.1;
        }
        last = now;
    }
}

async fn next(stream: &mut EventStream<Pod>, mode: QueueMode) -> Event<Pod> {
    tokio::time::timeout(Duration::from_secs(60), stream.next())
        .await
        .unwrap_or_else(|_| panic!("{mode:?}: stalled"))
        .expect("the stream ends only when the informer stops")
}

async fn held_listener_never_exceeds_the_bound(mode: QueueMode) {
    let informer = informer(mode);
    let mut held = informer.stream().unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    assert!(matches!(next(&mut held, mode).await, Event::Synced));

    // Held: the informer fills it to the bound exactly, and stops.
    // The bound counts the sync marker, which the held stream took before it stopped reading.
    let behind = settle(&informer, &held).await;
    assert_eq!(
        behind,
        MAX_LISTENER_BACKLOG - 1,
        "{mode:?}: filled to the bound, not past it"
    );
    assert_eq!(
        informer.indexer().len(),
        MAX_LISTENER_BACKLOG - 1,
        "{mode:?}: nothing more applied"
    );

    // A listener added now is sent the cache (initial adds, which do not count), then only
    // what comes after: every object once. It is read as fast as it comes.
    let mut late = informer.stream().unwrap();
    let late_reader = tokio::spawn(async move {
        let mut added = Vec::new();
        let mut updates = 0;
        while updates < EVENTS {
            match next(&mut late, mode).await {
                Event::Add { obj, .. } => added.push(obj.metadata.name.clone().unwrap()),
                Event::Update { .. } => updates += 1,
                Event::Synced => {}
                other => panic!("{mode:?}: late: unexpected {other:?}"),
            }
        }
        added
    });

    // Take 600 (down to 424, below half): the informer resumes and fills it to the bound again.
    let mut seen = Vec::new();
    for _ in 0..600 {
        match next(&mut held, mode).await {
            Event::Add {
                obj,
                is_in_initial_list: false,
            } => seen.push(obj.metadata.name.clone().unwrap()),
            other => panic!("{mode:?}: unexpected {other:?}"),
        }
    }
    let behind = settle(&informer, &held).await;
    assert_eq!(
        behind, MAX_LISTENER_BACKLOG,
        "{mode:?}: refilled to the bound exactly"
    );

    // Released: the rest of the burst, then the relist's updates (chunk by chunk as there is
    // room), every one once and in order, never more than the bound behind.
    let mut updates = Vec::new();
    let mut most_behind = 0;
    while updates.len() < EVENTS {
        most_behind = most_behind.max(held.registration().backlog());
        match next(&mut held, mode).await {
            Event::Add {
                obj,
                is_in_initial_list: false,
            } => seen.push(obj.metadata.name.clone().unwrap()),
            Event::Update { old, new } => {
                assert_ne!(old.metadata.resource_version, new.metadata.resource_version);
                updates.push(new.metadata.name.clone().unwrap());
            }
            other => panic!("{mode:?}: unexpected {other:?}"),
        }
        // a relist's notifications are queued a chunk at a time: look between them
        tokio::task::yield_now().await;
    }
    let expected: Vec<String> = (0..EVENTS).map(|i| format!("p-{i:05}")).collect();
    assert_eq!(seen, expected, "{mode:?}: every add once, in order");
    let mut sorted = updates.clone();
    sorted.sort();
    assert_eq!(sorted, expected, "{mode:?}: every update once");
    assert!(
        most_behind <= MAX_LISTENER_BACKLOG,
        "{mode:?}: {most_behind}"
    );

    // The late listener: each object exactly once as an add (initial or live), then updated once.
    let mut added = late_reader.await.unwrap();
    added.sort();
    assert_eq!(
        added, expected,
        "{mode:?}: the late listener saw every object once"
    );

    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_held_listener_is_never_more_than_the_bound_behind_real_fifo() {
    held_listener_never_exceeds_the_bound(QueueMode::RealFifo).await;
}

#[tokio::test(start_paused = true)]
async fn a_held_listener_is_never_more_than_the_bound_behind_delta_fifo() {
    held_listener_never_exceeds_the_bound(QueueMode::DeltaFifo).await;
}
