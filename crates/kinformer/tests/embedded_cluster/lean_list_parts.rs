//! A lean informer's lists, in parts of 300 objects (each part's objects encoded together): the
//! first list, applied part by part as it downloads, leaves the cache holding exactly the listed
//! objects and tells each add once, in list order, as listed; a relist (staged, then installed
//! in one swap) leaves exactly the relisted objects and tells each change once, and tells
//! nothing of the objects it relisted unchanged.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kinformer::reflector::{ListOptions, ListPage, ListWatch, ListWatchError, Status};
use kinformer::store::CacheMode;
use kinformer::{
    InformerConfig, ObjectOrTombstone, ResourceEventHandlerFuncs, SharedIndexInformer,
};
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const PODS: usize = 900;
const PAGE: u32 = 300;

/// Pods listed in both rounds that round 2 leaves unchanged (every tenth).
const UNCHANGED: usize = (PODS - 100) / 10;

/// Pod `i` as listed in round `round`: its label and a container image carry both, so any
/// mix-up between objects (or rounds) shows in what the cache decodes.
fn pod(i: usize, round: usize) -> Pod {
    // every tenth pod never changes after round 1: relisted unchanged
    let round = if i % 10 == 5 { 1 } else { round };
    serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": format!("p{i:04}"),
            "namespace": format!("ns-{}", i % 7),
            "uid": format!("uid-{i}"),
            "resourceVersion": round.to_string(),
            "labels": {"i": i.to_string(), "round": round.to_string()},
        },
        "spec": {"containers": [{"name": "c", "image": format!("img:{i}-{round}")}]},
    }))
    .unwrap()
}

/// The list of round 1 (pods 0..PODS) or round 2 (pods 100..PODS+100, changed).
fn listed(round: usize) -> Vec<Pod> {
    let from = if round == 1 { 0 } else { 100 };
    (from..from + PODS).map(|i| pod(i, round)).collect()
}

/// A source whose first watch fails with 410 once `relist` is notified (so the informer
/// relists, and gets round 2); later watches stay open with nothing to tell.
fn source(
    lists: Arc<AtomicUsize>,
    watches: Arc<AtomicUsize>,
    relist: Arc<Notify>,
) -> ListWatch<Pod> {
    ListWatch::new(
        move |o: ListOptions| {
            let from: usize = o
                .continue_token
                .as_deref()
                .map_or(0, |c| c.parse().unwrap());
            if from == 0 {
                lists.fetch_add(1, Ordering::SeqCst);
            }
            let round = lists.load(Ordering::SeqCst).min(2);
            let all = listed(round);
            let limit = o.limit.map_or(usize::MAX, |l| l as usize);
            let items: Vec<Pod> = all.iter().skip(from).take(limit).cloned().collect();
            let next = from + items.len();
            let page = ListPage::new(items, round.to_string());
            let page = if next < all.len() {
                page.with_continue(next.to_string())
            } else {
                page
            };
            std::future::ready(Ok(page)).boxed()
        },
        move |_| {
            let first = watches.fetch_add(1, Ordering::SeqCst) == 0;
            let relist = relist.clone();
            async move {
                if first {
                    relist.notified().await;
                    Err(ListWatchError::Api(Status::expired(
                        "too old resource version",
                    )))
                } else {
                    Ok(futures::stream::pending().boxed())
                }
            }
            .boxed()
        },
    )
}

async fn wait_for(what: &str, done: impl Fn() -> bool) {
    for _ in 0..3000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("gave up waiting for {what}");
}

/// What the cache holds: every object by key, as pods.
fn cached(informer: &SharedIndexInformer<Pod>) -> BTreeMap<String, Pod> {
    let indexer = informer.indexer();
    indexer
        .list_keys()
        .into_iter()
        .map(|k| {
            let p = indexer.get_by_key(&k).unwrap();
            (k, (*p).clone())
        })
        .collect()
}

fn by_key(pods: Vec<Pod>) -> BTreeMap<String, Pod> {
    pods.into_iter()
        .map(|p| {
            let key = format!(
                "{}/{}",
                p.metadata.namespace.as_deref().unwrap(),
                p.metadata.name.as_deref().unwrap()
            );
            (key, p)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lean_informers_lists_encoded_on_every_core_hold_exactly_the_listed_objects() {
    let (lists, watches) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let config = InformerConfig::default()
        .cache_mode(CacheMode::Lean)
        .page_size(NonZeroU32::new(PAGE).unwrap());
    let relist = Arc::new(Notify::new());
    let informer =
        SharedIndexInformer::builder(source(lists.clone(), watches.clone(), relist.clone()))
            .config(config)
            .build();
    let adds = Arc::new(Mutex::new(Vec::new()));
    let updates = Arc::new(Mutex::new(Vec::new()));
    let deletes = Arc::new(Mutex::new(Vec::new()));
    let (a, u, d) = (adds.clone(), updates.clone(), deletes.clone());
    informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new()
                .on_add(move |p: &Arc<Pod>, _| a.lock().push((**p).clone()))
                .on_update(move |old: &Arc<Pod>, new: &Arc<Pod>| {
                    u.lock().push(((**old).clone(), (**new).clone()))
                })
                .on_delete(move |o: &ObjectOrTombstone<Pod>| d.lock().push(o.key().unwrap())),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });

    // The first list, applied page by page.
    wait_for("the first list", || adds.lock().len() >= PODS).await;
    assert_eq!(
        *adds.lock(),
        listed(1),
        "each listed object told once, in list order, as listed"
    );
    wait_for("sync", || informer.has_synced()).await;
    assert_eq!(
        cached(&informer),
        by_key(listed(1)),
        "exactly the listed objects"
    );
    assert_eq!(adds.lock().len(), PODS, "no add told twice");
    relist.notify_one();

    // The relist (round 2): 100 pods gone, 100 new, 720 changed, 80 unchanged.
    wait_for("the relist", || {
        lists.load(Ordering::SeqCst) >= 2
            && updates.lock().len() + adds.lock().len() >= PODS * 2 - UNCHANGED
    })
    .await;
    wait_for("the relist's deletions", || deletes.lock().len() >= 100).await;
    assert!(informer.has_synced());
    assert_eq!(
        cached(&informer),
        by_key(listed(2)),
        "exactly the relisted objects"
    );
    let updates = updates.lock().clone();
    assert_eq!(
        updates.len(),
        PODS - 100 - UNCHANGED,
        "each changed object told once"
    );
    for (old, new) in &updates {
        let i: usize = new.metadata.labels.as_ref().unwrap()["i"].parse().unwrap();
        assert_eq!((old, new), (&pod(i, 1), &pod(i, 2)));
        assert_ne!(
            i % 10,
            5,
            "an unchanged object is not told (client-go: a sync update)"
        );
    }
    let new_adds: Vec<Pod> = adds.lock()[PODS..].to_vec();
    assert_eq!(
        new_adds,
        (PODS..PODS + 100).map(|i| pod(i, 2)).collect::<Vec<_>>()
    );
    let mut deleted = deletes.lock().clone();
    deleted.sort();
    let mut expected: Vec<String> = listed(1)[..100]
        .iter()
        .map(|p| {
            format!(
                "{}/{}",
                p.metadata.namespace.as_deref().unwrap(),
                p.metadata.name.as_deref().unwrap()
            )
        })
        .collect();
    expected.sort();
    assert_eq!(deleted, expected);
    cancel.cancel();
    run.await.unwrap();
}
