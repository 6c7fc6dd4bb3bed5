//! `shut_down_event_handler` (client-go 1.37's `ShutDownEventHandler`) and
//! `drain_event_handler`, on paused tokio time: foreign registrations, informers that never
//! started, and streams (whose consumer is the caller's, so nothing is waited for).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::queue_mode::config;
use crate::support::{FakeControllerSource, caught_up, pod};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kinformer::informer::{Event, InformerError, ResourceEventHandlerFuncs, SharedIndexInformer};
use tokio_util::sync::CancellationToken;

fn informer(source: &FakeControllerSource) -> SharedIndexInformer<Pod> {
    SharedIndexInformer::builder(source.clone())
        .config(config())
        .build()
}

fn counting(count: &Arc<AtomicUsize>) -> ResourceEventHandlerFuncs<Pod> {
    let c = count.clone();
    ResourceEventHandlerFuncs::new().on_add(move |_: &Arc<Pod>, _| {
        c.fetch_add(1, Ordering::AcqRel);
    })
}

#[tokio::test(start_paused = true)]
async fn shut_down_refuses_foreign_registrations_and_is_idempotent() {
    let source = FakeControllerSource::new();
    let (a, b) = (informer(&source), informer(&source));
    let count = Arc::new(AtomicUsize::new(0));
    let foreign = b.add_event_handler(counting(&count)).unwrap();
    assert!(matches!(
        a.shut_down_event_handler(&foreign).await,
        Err(InformerError::ForeignRegistration(..))
    ));
    assert!(matches!(
        a.drain_event_handler(&foreign).await,
        Err(InformerError::ForeignRegistration(..))
    ));
    assert!(!foreign.is_stopped(), "a refused call changes nothing");
    b.shut_down_event_handler(&foreign).await.unwrap();
    b.shut_down_event_handler(&foreign).await.unwrap();
    assert!(foreign.is_stopped());
    assert_eq!(b.handler_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn before_start_both_return_at_once_and_nothing_is_delivered() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    let informer = informer(&source);
    let (stopped, drained) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let kept = Arc::new(AtomicUsize::new(0));
    let r1 = informer.add_event_handler(counting(&stopped)).unwrap();
    let r2 = informer.add_event_handler(counting(&drained)).unwrap();
    informer.add_event_handler(counting(&kept)).unwrap();
    tokio::time::timeout(
        Duration::from_secs(1),
        informer.shut_down_event_handler(&r1),
    )
    .await
    .unwrap()
    .unwrap();
    tokio::time::timeout(Duration::from_secs(1), informer.drain_event_handler(&r2))
        .await
        .unwrap()
        .unwrap();
    assert!(r1.is_stopped() && r2.is_stopped());
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    caught_up(&informer).await;
    assert_eq!(kept.load(Ordering::Acquire), 1);
    assert_eq!(stopped.load(Ordering::Acquire), 0);
    assert_eq!(drained.load(Ordering::Acquire), 0);
    cancel.cancel();
    running.await.unwrap();
}

fn added(ev: &Event<Pod>) -> Option<String> {
    match ev {
        Event::Add { obj, .. } => obj.metadata.name.clone(),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_drained_stream_yields_its_queue_then_ends_and_a_shut_down_one_ends_at_once() {
    let source = FakeControllerSource::new();
    for name in ["pod1", "pod2", "pod3"] {
        source.add(pod(name));
    }
    let informer = informer(&source);
    let mut drained = informer.stream().unwrap();
    let mut shut = informer.stream().unwrap();
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    // Nothing polled yet: each stream has the initial list queued.
    crate::support::wait_until("the streams have their queues", || {
        informer.has_synced()
            && drained.registration().backlog() >= 3
            && shut.registration().backlog() >= 3
    })
    .await;
    let (dr, sr) = (drained.registration().clone(), shut.registration().clone());
    // Neither waits for the caller's own consumer.
    tokio::time::timeout(Duration::from_secs(1), informer.drain_event_handler(&dr))
        .await
        .unwrap()
        .unwrap();
    tokio::time::timeout(
        Duration::from_secs(1),
        informer.shut_down_event_handler(&sr),
    )
    .await
    .unwrap()
    .unwrap();
    source.add(pod("pod4"));
    crate::support::wait_until("pod4 is cached", || {
        informer.indexer().get_by_key("pod4").is_some()
    })
    .await;
    let mut names = Vec::new();
    while let Some(ev) = drained.next().await {
        names.extend(added(&ev));
    }
    names.sort();
    assert_eq!(names, ["pod1", "pod2", "pod3"], "the queue, nothing after");
    assert!(shut.next().await.is_none(), "shut down: its queue dropped");
    dr.stopped().await;
    sr.stopped().await;
    cancel.cancel();
    running.await.unwrap();
}
