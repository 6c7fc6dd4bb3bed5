//! Close and cancellation semantics of `DeltaFifo::pop` (and `Fifo::pop`), with paused time.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::object::ExplicitKey;
use kinformer::queue::{DeltaFifo, Fifo, QueueError};
use kube::api::ObjectMeta;

fn make(name: &str) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn key_of(d: &kinformer::queue::Deltas<ConfigMap>) -> String {
    d.newest().unwrap().object.key().unwrap()
}

#[tokio::test(start_paused = true)]
async fn close_lets_queued_items_drain_first() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.add(make("a")).unwrap();
    fifo.add(make("b")).unwrap();
    fifo.close();
    assert!(fifo.is_closed());
    assert_eq!(fifo.pop(|d, _| key_of(&d)).await, Ok("a".into()));
    assert_eq!(fifo.pop(|d, _| key_of(&d)).await, Ok("b".into()));
    assert_eq!(fifo.pop(|d, _| key_of(&d)).await, Err(QueueError::Closed));
}

#[tokio::test(start_paused = true)]
async fn blocked_pop_wakes_on_close() {
    let fifo = Arc::new(DeltaFifo::<ConfigMap>::default());
    let waiter = {
        let fifo = fifo.clone();
        tokio::spawn(async move { fifo.pop(|_, _| ()).await })
    };
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!waiter.is_finished(), "pop must wait on an empty queue");
    fifo.close();
    assert_eq!(waiter.await.unwrap(), Err(QueueError::Closed));
}

#[tokio::test(start_paused = true)]
async fn blocked_pop_wakes_on_add() {
    let fifo = Arc::new(DeltaFifo::<ConfigMap>::default());
    let waiter = {
        let fifo = fifo.clone();
        tokio::spawn(async move { fifo.pop(|d, _| key_of(&d)).await })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    fifo.add(make("late")).unwrap();
    assert_eq!(waiter.await.unwrap(), Ok("late".into()));
}

#[tokio::test(start_paused = true)]
async fn dropping_a_pending_pop_loses_nothing() {
    let fifo = Arc::new(DeltaFifo::<ConfigMap>::default());
    // A pop that times out is dropped while waiting.
    let timed_out = tokio::time::timeout(Duration::from_secs(1), fifo.pop(|_, _| ())).await;
    assert!(timed_out.is_err());
    // Another waiter, cancelled by select! the moment an item arrives.
    let cancelled = {
        let fifo = fifo.clone();
        tokio::spawn(async move {
            tokio::select! {
                biased;
                _ = tokio::time::sleep(Duration::from_secs(5)) => None,
                r = fifo.pop(|d, _| key_of(&d)) => Some(r),
            }
        })
    };
    tokio::task::yield_now().await;
    cancelled.abort();
    assert!(cancelled.await.unwrap_err().is_cancelled());
    fifo.add(make("a")).unwrap();
    // A fresh pop still gets the item and its wake-up was not swallowed by the dropped waiters.
    let got = tokio::time::timeout(Duration::from_secs(1), fifo.pop(|d, _| key_of(&d)))
        .await
        .expect("item delivered");
    assert_eq!(got, Ok("a".into()));
}

#[tokio::test(start_paused = true)]
async fn wake_up_is_forwarded_when_the_notified_waiter_is_dropped() {
    let fifo = Arc::new(DeltaFifo::<ConfigMap>::default());
    let first = {
        let fifo = fifo.clone();
        tokio::spawn(async move { fifo.pop(|d, _| key_of(&d)).await })
    };
    let second = {
        let fifo = fifo.clone();
        tokio::spawn(async move { fifo.pop(|d, _| key_of(&d)).await })
    };
    tokio::task::yield_now().await;
    // Wake one waiter, then kill the first before it can run.
    fifo.add(make("a")).unwrap();
    first.abort();
    // On this single-threaded runtime the first waiter has not run yet, so its wake-up must
    // be handed on to the second.
    let got = tokio::time::timeout(Duration::from_secs(1), second)
        .await
        .expect("second waiter woken")
        .unwrap();
    assert_eq!(got, Ok("a".into()));
}

#[tokio::test(start_paused = true)]
async fn pop_after_close_on_empty_returns_at_once() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.close();
    let r = tokio::time::timeout(Duration::from_millis(1), fifo.pop(|_, _| ())).await;
    assert_eq!(r, Ok(Err(QueueError::Closed)));
    // Writes are still accepted after close, and drained.
    fifo.add(make("x")).unwrap();
    assert_eq!(fifo.pop(|d, _| key_of(&d)).await, Ok("x".into()));
}

#[tokio::test(start_paused = true)]
async fn synced_watch_wakes_after_the_last_initial_item_is_processed() {
    let fifo = Arc::new(DeltaFifo::<ConfigMap>::default());
    let mut rx = fifo.synced_watch();
    let waiter = tokio::spawn(async move {
        rx.wait_for(|s| *s).await.unwrap();
    });
    fifo.replace(vec![make("a"), make("b")], "1".into())
        .unwrap();
    let processed_before_publish = fifo
        .pop(|_, initial| {
            assert!(initial);
            true
        })
        .await
        .unwrap();
    assert!(processed_before_publish);
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished(), "one initial item is still queued");
    let observer = fifo.synced_watch();
    fifo.pop(|_, initial| {
        assert!(initial);
        assert!(
            !*observer.borrow(),
            "published before the item was processed"
        );
    })
    .await
    .unwrap();
    assert!(*observer.borrow());
    tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("synced watch fired")
        .unwrap();
    assert!(fifo.has_synced());
}

#[tokio::test(start_paused = true)]
async fn fifo_close_drains_then_fails_and_wakes_waiters() {
    let fifo = Arc::new(Fifo::for_explicit_keys());
    fifo.add(ExplicitKey("a".into())).unwrap();
    fifo.close();
    assert_eq!(fifo.pop(|k, _| k.0).await, Ok("a".into()));
    assert_eq!(fifo.pop(|k, _| k.0).await, Err(QueueError::Closed));

    let open = Arc::new(Fifo::<ExplicitKey>::for_explicit_keys());
    let waiter = {
        let open = open.clone();
        tokio::spawn(async move { open.pop(|k, _| k.0).await })
    };
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!waiter.is_finished());
    open.close();
    assert_eq!(waiter.await.unwrap(), Err(QueueError::Closed));
}
