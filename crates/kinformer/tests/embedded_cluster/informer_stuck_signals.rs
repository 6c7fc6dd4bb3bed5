//! Issue 33 item 4 on paused time with a fake source: a held stream's oldest-pending age (the
//! listener bookkeeping handlers share) and the informer's time since the last watch activity
//! and the last list, as they grow and reset.

use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kinformer::SharedIndexInformer;
use kinformer::informer::Event;
use kinformer::reflector::{ListPage, ListWatch, WatchEvent};
use kube::api::ObjectMeta;
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

fn secs(d: Option<Duration>) -> u64 {
    d.expect("known").as_secs()
}

#[tokio::test(start_paused = true)]
async fn oldest_pending_age_and_watch_silence_grow_and_reset() {
    let lw = ListWatch::<Pod>::new(
        |_| async { Ok(ListPage::new(vec![pod("a", "1"), pod("b", "1")], "1")) }.boxed(),
        |_| {
            async {
                // Silent for 10 s, then one change, then silent again.
                let later = futures::stream::once(async {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    Ok(WatchEvent::Modified(pod("a", "2")))
                });
                Ok(later.chain(futures::stream::pending()).boxed())
            }
            .boxed()
        },
    );
    let informer = SharedIndexInformer::builder(lw).build();
    let mut held = informer.stream().unwrap();
    assert_eq!(
        held.registration().oldest_pending_age(),
        None,
        "nothing queued yet"
    );
    assert_eq!(informer.since_last_list(), None, "not started");
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    while !informer.has_synced() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        secs(held.registration().oldest_pending_age()),
        5,
        "held since the list"
    );
    assert_eq!(secs(informer.since_last_watch_activity()), 5);
    assert_eq!(secs(informer.since_last_list()), 5);
    let stats = informer.handler_stats();
    assert_eq!(stats.len(), 1);
    assert_eq!(stats[0].backlog, 3, "two adds and the sync marker");
    assert_eq!(stats[0].oldest_pending_age.map(|d| d.as_secs()), Some(5));

    tokio::time::sleep(Duration::from_secs(6)).await; // t = 11 s: the change came at 10 s
    assert_eq!(
        secs(informer.since_last_watch_activity()),
        1,
        "the change reset it"
    );
    assert_eq!(secs(informer.since_last_list()), 11);
    assert_eq!(secs(held.registration().oldest_pending_age()), 11);

    // Taking the oldest leaves the next one's age (the list's, then the change's at 10 s).
    for _ in 0..2 {
        assert!(matches!(held.next().await, Some(Event::Add { .. })));
    }
    assert_eq!(
        secs(held.registration().oldest_pending_age()),
        11,
        "the last initial add is in the consumer's hands until it asks for more"
    );
    assert!(matches!(held.next().await, Some(Event::Synced)));
    assert_eq!(
        secs(held.registration().oldest_pending_age()),
        1,
        "the change, queued at 10 s"
    );
    assert!(matches!(held.next().await, Some(Event::Update { .. })));
    assert_eq!(
        secs(held.registration().oldest_pending_age()),
        1,
        "in the consumer's hands"
    );
    assert!(held.next().now_or_never().is_none(), "nothing more");
    assert_eq!(
        held.registration().oldest_pending_age(),
        None,
        "all handled"
    );

    cancel.cancel();
    run.await.unwrap();
}
