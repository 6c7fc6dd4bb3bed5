//! DeltaFifo behaviour beyond client-go's tests: typed errors for objects without a name, the
//! `ReflectorStore` implementation, and known objects that change underneath the queue.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::queue::{DeltaFifo, DeltaFifoOptions, DeltaType, QueueError};
use kinformer::{store::KeyListerGetter, store::ReflectorStore};

use crate::delta_fifo_support::*;
use DeltaType::{Added, Deleted, Replaced, Sync, Updated};

fn nameless() -> Arc<ConfigMap> {
    Arc::new(ConfigMap::default())
}

#[test]
fn object_without_name_is_a_typed_error_and_changes_nothing() {
    let f = fifo_known(vec![obj("known", 1)], true);
    f.add(obj("a", 1)).unwrap();
    let before = f.list_keys();
    for r in [
        f.add(nameless()),
        f.update(nameless()),
        f.delete(nameless()),
        f.replace(vec![obj("b", 1), nameless()], "1".into()),
    ] {
        assert!(matches!(r, Err(QueueError::Key(_))), "{r:?}");
    }
    assert_eq!(f.list_keys(), before);
    assert_eq!(
        describe_deltas(&f.get_by_key("a").unwrap()),
        exp(&[(Added, "a=1")])
    );

    let fresh = fifo();
    assert!(fresh.add(nameless()).is_err());
    assert!(!fresh.is_populated(), "a rejected write does not populate");
    assert!(!fresh.has_synced());
}

#[tokio::test]
async fn reflector_store_impl_forwards_to_the_queue() {
    let f = Arc::new(fifo_known(vec![obj("gone", 1)], true));
    let store: &dyn ReflectorStore<ConfigMap, Error = QueueError> = &f;
    store.replace_begin();
    store.replace_part(vec![obj("a", 1)]).expect("replace part");
    store.replace_end("10".into()).expect("replace end");
    store.update_resource_version("11");
    store.add(obj("b", 1)).unwrap();
    store.update(obj("b", 2)).unwrap();
    store.delete(obj("b", 3)).unwrap();
    store.resync().unwrap();
    assert_eq!(f.list_keys(), ["a", "gone", "b"]);
    assert_eq!(pop_desc(&f).await, exp(&[(Replaced, "a=1")]));
    assert_eq!(
        pop_desc(&f).await,
        exp(&[(Deleted, "tombstone(gone, gone=1)")])
    );
    assert_eq!(
        pop_desc(&f).await,
        exp(&[(Added, "b=1"), (Updated, "b=2"), (Deleted, "b=3")])
    );
}

/// Known objects whose `list_keys` and `get_by_key` disagree, as a cache changing underneath
/// could: "ghost" is listed but gone, "broken" yields an object without a name.
struct Inconsistent;

impl KeyListerGetter<ConfigMap> for Inconsistent {
    fn list_keys(&self) -> Vec<String> {
        vec!["ghost".into(), "broken".into(), "ok".into()]
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<ConfigMap>> {
        match key {
            "broken" => Some(nameless()),
            "ok" => Some(obj("ok", 1)),
            _ => None,
        }
    }
}

#[tokio::test]
async fn replace_makes_object_less_tombstone_for_a_vanished_known_key() {
    let f = DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(Arc::new(Inconsistent)),
        ..Default::default()
    });
    f.replace(vec![obj("ok", 2), obj("broken", 1)], "1".into())
        .unwrap();
    assert_eq!(f.list_keys(), ["ok", "broken", "ghost"]);
    assert_eq!(
        describe_deltas(&f.get_by_key("ghost").unwrap()),
        exp(&[(Deleted, "tombstone(ghost, none)")])
    );
}

#[test]
fn resync_skips_vanished_and_unkeyable_known_objects_but_syncs_the_rest() {
    let f = DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(Arc::new(Inconsistent)),
        ..Default::default()
    });
    let r = f.resync();
    assert!(matches!(r, Err(QueueError::Key(_))), "{r:?}");
    assert_eq!(f.list_keys(), ["ok"]);
    assert_eq!(
        describe_deltas(&f.get_by_key("ok").unwrap()),
        exp(&[(Sync, "ok=1")])
    );
}

#[test]
fn panicking_process_loses_only_its_item_and_still_publishes_sync() {
    use futures::FutureExt;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    let f = fifo();
    f.replace(vec![obj("a", 1)], "1".into()).unwrap();
    let rx = f.synced_watch();
    let r = catch_unwind(AssertUnwindSafe(|| {
        f.pop(|_, _| -> () { panic!("handler bug") }).now_or_never()
    }));
    assert!(r.is_err(), "the panic propagates to the caller");
    assert!(f.is_empty(), "the popped item is gone, as in client-go");
    assert!(f.has_synced(), "the initial population was consumed");
    assert!(*rx.borrow());
    f.add(obj("b", 2)).unwrap();
    let got = f.pop(|d, _| d).now_or_never().unwrap().unwrap();
    assert_eq!(describe_deltas(&got), exp(&[(Added, "b=2")]));
}
