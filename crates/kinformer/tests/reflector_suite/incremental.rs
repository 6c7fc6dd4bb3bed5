//! A Reflector feeding a store that takes lists in parts (the informer's DeltaFifo): pages
//! reach the queue as they arrive, a failed list keeps what it delivered and deletes nothing,
//! and a complete list detects deletions as one `replace` does.

use std::num::NonZeroU32;
use std::sync::Arc;

use crate::support::*;
use k8s_openapi::api::core::v1::Pod;
use kinformer::InformerConfig;
use kinformer::queue::{DeltaFifo, DeltaFifoOptions, DeltaType};
use kinformer::reflector::{Reflector, ReflectorError, Status, WatchEvent};
use kinformer::{ObjectOrTombstone, store::KeyListerGetter};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// Known objects: what the test says the cache holds.
#[derive(Default)]
struct Known(Mutex<Vec<Arc<Pod>>>);

impl KeyListerGetter<Pod> for Known {
    fn list_keys(&self) -> Vec<String> {
        self.0
            .lock()
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect()
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<Pod>> {
        self.0
            .lock()
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(key))
            .cloned()
    }
}

fn fifo(known: Vec<Pod>) -> Arc<DeltaFifo<Pod>> {
    Arc::new(DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(Arc::new(Known(Mutex::new(
            known.into_iter().map(Arc::new).collect(),
        )))),
        emit_delta_type_replaced: true,
        ..Default::default()
    }))
}

fn queued(f: &DeltaFifo<Pod>) -> Vec<(String, Vec<DeltaType>)> {
    f.list_keys()
        .into_iter()
        .map(|k| {
            let types = f
                .get_by_key(&k)
                .unwrap()
                .iter()
                .map(|d| d.delta_type)
                .collect();
            (k, types)
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn each_page_is_queued_before_the_next_is_requested() {
    let pods = numbered_pods(6);
    let f = fifo(vec![pod("stale", "1")]);
    let seen_at_page_2: Arc<Mutex<Vec<String>>> = Arc::default();
    let (fl, seen) = (f.clone(), seen_at_page_2.clone());
    let lw = ScriptedLw::new(
        move |o, _| match o.continue_token.as_deref() {
            None => Ok(list_of("10", pods[0..3].to_vec()).with_continue("C1")),
            Some("C1") => {
                *seen.lock() = fl.list_keys();
                Ok(list_of("10", pods[3..6].to_vec()))
            }
            other => panic!("unexpected continue {other:?}"),
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let r = Reflector::builder(lw, f.clone())
        .config(&InformerConfig::default().page_size(NonZeroU32::new(3).unwrap()))
        .build();
    let _ = r.list_and_watch(&CancellationToken::new()).await;
    let first_page: Vec<String> = numbered_pods(3)
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(
        *seen_at_page_2.lock(),
        first_page,
        "page 1 was queued before page 2 was asked for"
    );
    let q = queued(&f);
    assert_eq!(q.len(), 7, "{q:?}");
    assert!(q[..6].iter().all(|(_, t)| t == &[DeltaType::Replaced]));
    assert_eq!(
        q[6],
        ("stale".to_string(), vec![DeltaType::Deleted]),
        "the unlisted cached pod is deleted at the end"
    );
    assert!(!f.has_synced(), "synced only once the population is popped");
}

#[tokio::test(start_paused = true)]
async fn a_list_failing_on_a_later_page_keeps_earlier_pages_and_deletes_nothing() {
    let pods = numbered_pods(4);
    let f = fifo(vec![pod("cached", "1")]);
    let lw = ScriptedLw::new(
        move |o, n| match (n, o.continue_token.as_deref()) {
            (1, None) => Ok(list_of("10", pods[0..2].to_vec()).with_continue("C1")),
            (2, Some("C1")) => Err(Status::new(500, "InternalError", "etcd is away").into()),
            (3, None) => Ok(list_of("12", pods[2..4].to_vec())),
            other => panic!("unexpected list {other:?}"),
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let r = Reflector::builder(lw, f.clone())
        .config(&InformerConfig::default().page_size(NonZeroU32::new(2).unwrap()))
        .build();
    let token = CancellationToken::new();
    let err = r.list_and_watch(&token).await.unwrap_err();
    assert!(matches!(err, ReflectorError::List(_)), "{err:?}");
    let q = queued(&f);
    assert_eq!(
        q.len(),
        2,
        "page 1 stays queued, no tombstone for the cached pod: {q:?}"
    );
    assert!(
        !f.is_populated(),
        "a failed first list does not make the queue populated"
    );

    // the next list completes: it alone decides what is deleted
    let _ = r.list_and_watch(&token).await;
    let q = queued(&f);
    let names: Vec<&str> = q.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names.len(), 5, "{q:?}");
    let deleted: Vec<&str> = q
        .iter()
        .filter(|(_, t)| t.last() == Some(&DeltaType::Deleted))
        .map(|(k, _)| k.as_str())
        .collect();
    let page1: Vec<String> = numbered_pods(2)
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    let mut expect_deleted: Vec<&str> = page1.iter().map(String::as_str).collect();
    expect_deleted.push("cached");
    let mut deleted_sorted = deleted.clone();
    deleted_sorted.sort_unstable();
    expect_deleted.sort_unstable();
    assert_eq!(
        deleted_sorted, expect_deleted,
        "what the complete list lacks is deleted"
    );
    // a tombstone for a page-1 pod carries the object it last queued
    let d = f.get_by_key(&page1[0]).unwrap();
    match &d.newest().unwrap().object {
        ObjectOrTombstone::Tombstone(t) => assert!(t.obj.is_some()),
        other => panic!("{other:?}"),
    }
    assert_eq!(r.last_sync_resource_version(), "12");
}
