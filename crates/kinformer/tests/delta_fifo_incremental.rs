//! A DeltaFifo replace taken in parts (`replace_begin`, `replace_part`, `replace_end`,
//! `replace_abort`): what the Reflector uses to apply a list while it downloads. Taken without
//! pops in between, it queues exactly what one `replace` queues (checked against the model in
//! `delta_fifo_proptest.rs`); these tests cover what only parts can do: pops in between, the
//! sync signal, aborts and restarts.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::FutureExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::queue::{DeltaFifo, DeltaFifoOptions, DeltaType, QueueError};
use kinformer::{ObjectOrTombstone, store::KeyListerGetter};
use kube::api::ObjectMeta;
use parking_lot::Mutex;

fn cm(name: &str, val: u32) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("v".to_string(), val.to_string())])),
        ..Default::default()
    })
}

/// Known objects the consumer keeps up to date, as an informer's indexer.
#[derive(Default)]
struct Known(Mutex<BTreeMap<String, Arc<ConfigMap>>>);

impl KeyListerGetter<ConfigMap> for Known {
    fn list_keys(&self) -> Vec<String> {
        self.0.lock().keys().cloned().collect()
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<ConfigMap>> {
        self.0.lock().get(key).cloned()
    }
}

fn fifo(known: &Arc<Known>) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(known.clone()),
        emit_delta_type_replaced: true,
        ..Default::default()
    })
}

/// Pops one key now, applies its newest delta to `known`, and describes what was popped.
fn pop(f: &DeltaFifo<ConfigMap>, known: &Known) -> (Vec<(DeltaType, String)>, bool) {
    f.pop(|deltas, initial| {
        let newest = deltas.newest().unwrap();
        let mut k = known.0.lock();
        match &newest.object {
            ObjectOrTombstone::Object(o) if newest.delta_type != DeltaType::Deleted => {
                k.insert(o.metadata.name.clone().unwrap(), o.clone());
            }
            ObjectOrTombstone::Object(o) => {
                k.remove(o.metadata.name.as_deref().unwrap());
            }
            ObjectOrTombstone::Tombstone(t) => {
                k.remove(&t.key);
            }
        }
        let described = deltas
            .iter()
            .map(|d| {
                let what = match &d.object {
                    ObjectOrTombstone::Object(o) => format!(
                        "{}={}",
                        o.metadata.name.as_deref().unwrap(),
                        o.data.as_ref().unwrap()["v"]
                    ),
                    ObjectOrTombstone::Tombstone(t) => format!("tombstone {}", t.key),
                };
                (d.delta_type, what)
            })
            .collect();
        (described, initial)
    })
    .now_or_never()
    .expect("a queued key")
    .unwrap()
}

fn one(t: DeltaType, what: &str) -> Vec<(DeltaType, String)> {
    vec![(t, what.to_string())]
}

#[test]
fn parts_are_poppable_before_the_end_and_the_queue_syncs_only_after_it() {
    let known = Arc::new(Known::default());
    let f = fifo(&known);
    f.replace_begin();
    f.replace_part(vec![cm("a", 1), cm("b", 1)]).unwrap();
    assert_eq!(f.list_keys(), ["a", "b"], "a part is queued at once");
    assert_eq!(pop(&f, &known), (one(DeltaType::Replaced, "a=1"), true));
    f.replace_part(vec![cm("c", 1)]).unwrap();
    assert_eq!(pop(&f, &known).0, one(DeltaType::Replaced, "b=1"));
    assert_eq!(pop(&f, &known), (one(DeltaType::Replaced, "c=1"), true));
    assert!(f.is_empty());
    assert!(
        !f.has_synced(),
        "an empty queue is not synced before the list ends"
    );
    f.replace_end("5".into()).unwrap();
    assert!(
        f.has_synced(),
        "everything listed was popped: synced at the end"
    );
    assert!(
        f.is_empty(),
        "nothing is deleted: every known key was listed"
    );
}

#[test]
fn the_initial_population_is_what_is_still_queued_at_the_end() {
    let known = Arc::new(Known::default());
    let f = fifo(&known);
    f.replace_begin();
    f.replace_part(vec![cm("a", 1), cm("b", 1)]).unwrap();
    pop(&f, &known);
    f.replace_part(vec![cm("c", 1)]).unwrap();
    f.replace_end("5".into()).unwrap();
    assert!(!f.has_synced());
    assert_eq!(pop(&f, &known), (one(DeltaType::Replaced, "b=1"), true));
    assert!(!f.has_synced());
    assert_eq!(pop(&f, &known), (one(DeltaType::Replaced, "c=1"), true));
    assert!(f.has_synced());
}

#[test]
fn the_end_deletes_known_and_queued_keys_no_part_listed() {
    let known = Arc::new(Known::default());
    known.0.lock().insert("gone".into(), cm("gone", 1));
    known.0.lock().insert("kept".into(), cm("kept", 1));
    let f = fifo(&known);
    f.add(cm("queued-gone", 1)).unwrap();
    f.replace_begin();
    f.replace_part(vec![cm("kept", 2)]).unwrap();
    // the consumer pops the old add and the listed object before the list ends
    assert_eq!(pop(&f, &known).0, one(DeltaType::Added, "queued-gone=1"));
    assert_eq!(pop(&f, &known), (one(DeltaType::Replaced, "kept=2"), false));
    f.replace_end("9".into()).unwrap();
    let mut keys = f.list_keys();
    keys.sort();
    assert_eq!(
        keys,
        ["gone", "queued-gone"],
        "popped but unlisted keys are deleted too"
    );
    for _ in 0..2 {
        let (d, _) = pop(&f, &known);
        assert_eq!(d[0].0, DeltaType::Deleted);
    }
    assert_eq!(known.list_keys(), ["kept"]);
}

#[test]
fn an_abort_keeps_the_parts_and_deletes_nothing() {
    let known = Arc::new(Known::default());
    known.0.lock().insert("cached".into(), cm("cached", 1));
    let f = fifo(&known);
    f.replace_begin();
    f.replace_part(vec![cm("a", 1)]).unwrap();
    f.replace_abort();
    f.replace_end("3".into()).unwrap();
    assert_eq!(
        f.list_keys(),
        ["a"],
        "no tombstone for the cached key after an abort"
    );
    assert_eq!(pop(&f, &known).0, one(DeltaType::Replaced, "a=1"));
    assert_eq!(known.list_keys(), ["a", "cached"]);
}

#[test]
fn beginning_again_forgets_the_earlier_parts() {
    let known = Arc::new(Known::default());
    let f = fifo(&known);
    f.replace_begin();
    f.replace_part(vec![cm("a", 1), cm("b", 1)]).unwrap();
    // the list starts over (an expired continue token): only what follows counts
    f.replace_begin();
    f.replace_part(vec![cm("b", 2)]).unwrap();
    f.replace_end("7".into()).unwrap();
    assert_eq!(
        pop(&f, &known).0,
        vec![
            (DeltaType::Replaced, "a=1".to_string()),
            (DeltaType::Deleted, "tombstone a".to_string())
        ]
    );
    assert_eq!(
        pop(&f, &known).0,
        vec![
            (DeltaType::Replaced, "b=1".to_string()),
            (DeltaType::Replaced, "b=2".to_string())
        ]
    );
    assert!(f.has_synced());
}

#[test]
fn a_part_with_a_nameless_object_queues_nothing_of_that_part() {
    let known = Arc::new(Known::default());
    let f = fifo(&known);
    f.replace_begin();
    let err = f
        .replace_part(vec![cm("a", 1), Arc::new(ConfigMap::default())])
        .unwrap_err();
    assert!(matches!(err, QueueError::Key(_)), "{err:?}");
    assert!(f.is_empty());
    f.replace_part(vec![cm("b", 1)]).unwrap();
    f.replace_end("1".into()).unwrap();
    assert_eq!(f.list_keys(), ["b"]);
}

fn bounded(max: usize) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(DeltaFifoOptions {
        max_queued_deltas: Some(max),
        ..Default::default()
    })
}

#[tokio::test]
async fn wait_for_room_holds_a_writer_at_the_bound_until_half_is_popped() {
    let known = Known::default();
    let f = bounded(4);
    for (name, v) in [("a", 1), ("a", 2), ("b", 1), ("c", 1)] {
        f.update(cm(name, v)).unwrap();
    }
    assert_eq!(f.queued_deltas(), 4, "deltas are counted over all keys");
    let mut wait = Box::pin(f.wait_for_room());
    assert!(futures::poll!(&mut wait).is_pending(), "at the bound: wait");
    // writes never block: the bound is soft
    f.update(cm("d", 1)).unwrap();
    assert_eq!(f.queued_deltas(), 5);
    assert_eq!(pop(&f, &known).0.len(), 2, "key a held two deltas");
    assert_eq!(f.queued_deltas(), 3);
    assert!(
        futures::poll!(&mut wait).is_pending(),
        "3 > 4/2: still waiting"
    );
    pop(&f, &known);
    assert_eq!(f.queued_deltas(), 2);
    assert!(
        futures::poll!(&mut wait).is_ready(),
        "down to half: room again"
    );
    assert!(
        f.wait_for_room().now_or_never().is_some(),
        "below the bound: no wait"
    );
}

#[tokio::test]
async fn wait_for_room_returns_at_once_without_a_bound_and_when_closed() {
    let known = Arc::new(Known::default());
    let unbounded = fifo(&known);
    for i in 0..10_000 {
        unbounded.update(cm(&format!("k{i}"), 1)).unwrap();
    }
    assert!(unbounded.wait_for_room().now_or_never().is_some());
    let f = bounded(1);
    f.update(cm("a", 1)).unwrap();
    let mut wait = Box::pin(f.wait_for_room());
    assert!(futures::poll!(&mut wait).is_pending());
    f.close();
    assert!(
        futures::poll!(&mut wait).is_ready(),
        "closing releases a waiting writer"
    );
}
