//! A consumer slower than the informer: at least ten times the backlog bound pushed through an
//! `EventStream` and through a handler. Both listeners share one bookkeeping path; each must
//! pause the informer at the bound, wake it when it catches up, and end synced with every
//! event once, in order. (Before handlers and streams shared that path, a stream that fell
//! 1,024 events behind stalled its informer for good.)

use crate::queue_mode;

use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kinformer::informer::{
    Event, HandlerOptions, MAX_LISTENER_BACKLOG, ResourceEventHandlerFuncs, SharedIndexInformer,
};
use kinformer::reflector::{ListPage, ListWatch, WatchEvent};
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// Live events pushed through: more than ten times the bound.
const EVENTS: usize = 10 * MAX_LISTENER_BACKLOG + 517;

fn pod(i: usize) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("p-{i:05}")),
            namespace: Some("ns".into()),
            resource_version: Some((i + 2).to_string()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// An informer over an empty list at rv 1, then one watch that adds `EVENTS` distinct pods
/// (so queue order is arrival order) and stays open.
fn informer() -> SharedIndexInformer<Pod> {
    let lw = ListWatch::<Pod>::new(
        |_| async { Ok(ListPage::new(vec![], "1")) }.boxed(),
        |_| {
            async {
                let events = (0..EVENTS).map(|i| Ok(WatchEvent::Added(pod(i))));
                let stream = futures::stream::iter(events).chain(futures::stream::pending());
                Ok(stream.boxed())
            }
            .boxed()
        },
    );
    SharedIndexInformer::builder(lw)
        .config(queue_mode::config())
        .build()
}

/// Waits until the listener is (nearly) at the bound, then checks that the informer has paused:
/// more time changes neither the cache nor the backlog. (The informer pauses when the live
/// backlog reaches the bound, and resumes only when the listener is down to half; the
/// listener may take its `Synced` or its first add just after the pause.)
async fn assert_paused_at_the_bound(
    informer: &SharedIndexInformer<Pod>,
    backlog: impl Fn() -> usize,
) {
    wait_until(Duration::from_secs(60), "the backlog bound", || {
        backlog() >= MAX_LISTENER_BACKLOG - 2
    })
    .await;
    let (cached, behind) = (informer.indexer().len(), backlog());
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        (informer.indexer().len(), backlog()),
        (cached, behind),
        "paused"
    );
    assert!(behind <= MAX_LISTENER_BACKLOG, "{behind}");
    assert!(cached <= MAX_LISTENER_BACKLOG + 1, "{cached}");
}

fn expected() -> Vec<String> {
    (0..EVENTS).map(|i| format!("p-{i:05}")).collect()
}

/// Sleeps in 1 ms steps of paused time until `done`, at most `limit` of virtual time.
async fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn event_stream_slower_than_the_informer_ends_synced_with_every_event_in_order() {
    let informer = informer();
    let mut stream = informer.stream().unwrap();
    let registration = stream.registration().clone();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });

    // The initial list is empty: Synced first.
    assert!(matches!(stream.next().await, Some(Event::Synced)));
    assert!(registration.has_synced());

    // Read nothing more until the informer has paused on this stream's backlog.
    assert_paused_at_the_bound(&informer, || registration.backlog()).await;

    // Now a slow reader: one event per millisecond of virtual time.
    let mut seen = Vec::with_capacity(EVENTS);
    let mut most_behind = 0;
    while seen.len() < EVENTS {
        most_behind = most_behind.max(registration.backlog());
        let ev = tokio::time::timeout(Duration::from_secs(60), stream.next())
            .await
            .unwrap_or_else(|_| panic!("stalled after {} events", seen.len()))
            .expect("the stream ends only when the informer stops");
        match ev {
            Event::Add {
                obj,
                is_in_initial_list: false,
            } => seen.push(obj.metadata.name.clone().unwrap()),
            other => panic!("unexpected event after {} adds: {other:?}", seen.len()),
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(seen, expected(), "every event once, in order");
    assert!(
        most_behind <= MAX_LISTENER_BACKLOG,
        "bounded: {most_behind}"
    );
    assert_eq!(informer.indexer().len(), EVENTS);
    assert!(registration.has_synced());

    cancel.cancel();
    run.await.unwrap();
    assert!(
        stream.next().await.is_none(),
        "ends when the informer stops"
    );
}

/// Real time here: a handler that blocks runs on its own thread, and tokio does not advance
/// paused time while such a thread runs. Nothing is timed: the waits poll for a state and fail
/// after a generous limit instead of hanging.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_slower_than_the_informer_ends_synced_with_every_event_in_order() {
    async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while !done() {
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let informer = informer();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    // The handler runs on its own thread and blocks until the test opens the gate.
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(Some(gate_rx));
    let registration = informer
        .add_event_handler_with(
            ResourceEventHandlerFuncs::new().on_add({
                let seen = seen.clone();
                move |pod: &Arc<Pod>, _initial| {
                    if let Some(rx) = gate.lock().take() {
                        rx.recv().expect("the test opens the gate");
                    }
                    seen.lock().push(pod.metadata.name.clone().unwrap());
                }
            }),
            HandlerOptions::default().name("slow").blocking(true),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });

    wait_for("the handler to sync", || registration.has_synced()).await;
    // The first add blocks the handler; the rest pile up to the bound, then the informer waits.
    wait_for("the backlog bound", || {
        registration.backlog() >= MAX_LISTENER_BACKLOG - 2
    })
    .await;
    // paused: two looks 300 ms apart agree
    let look = || (informer.indexer().len(), registration.backlog());
    let (mut cached, mut behind) = look();
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        if look() == (cached, behind) {
            break;
        }
        (cached, behind) = look();
    }
    assert!(behind <= MAX_LISTENER_BACKLOG, "{behind}");
    assert!(cached <= MAX_LISTENER_BACKLOG + 1, "{cached}");

    gate_tx.send(()).unwrap();
    wait_for("every event to be handled", || seen.lock().len() == EVENTS).await;
    assert_eq!(*seen.lock(), expected(), "every event once, in order");
    assert_eq!(registration.handled(), EVENTS as u64);
    assert_eq!(registration.backlog(), 0);
    assert!(registration.has_synced());

    cancel.cancel();
    run.await.unwrap();
}

/// A stream registered before start but read only after the informer synced: the initial list
/// (here more than ten times the bound) does not count toward the bound, so the sync completes
/// without a reader.
#[tokio::test(start_paused = true)]
async fn a_stream_read_only_after_sync_does_not_stall_a_large_initial_list() {
    let lw = ListWatch::<Pod>::new(
        |_| async { Ok(ListPage::new((0..EVENTS).map(pod).collect(), "1")) }.boxed(),
        |_| async { Ok(futures::stream::pending().boxed()) }.boxed(),
    );
    let informer = SharedIndexInformer::builder(lw)
        .config(queue_mode::config())
        .build();
    let mut stream = informer.stream().unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    wait_until(Duration::from_secs(60), "the informer to sync", || {
        informer.has_synced()
    })
    .await;
    assert_eq!(stream.registration().backlog(), EVENTS + 1, "adds + Synced");
    let mut names = Vec::new();
    loop {
        match stream.next().await.unwrap() {
            Event::Add {
                obj,
                is_in_initial_list: true,
            } => names.push(obj.metadata.name.clone().unwrap()),
            Event::Synced => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(names, expected());
    assert!(stream.registration().has_synced());
    cancel.cancel();
    run.await.unwrap();
}
