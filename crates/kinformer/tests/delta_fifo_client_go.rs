//! Ports of client-go's `tools/cache/delta_fifo_test.go`: same inputs, same expected outputs.
//! client-go's `testFifoObject{name, val}` is a ConfigMap named `name` with `data.val = val`.

mod delta_fifo_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::queue::{DeltaFifo, DeltaFifoOptions, DeltaType, Deltas, QueueError};
use kinformer::{DeletedFinalStateUnknown, ObjectOrTombstone, store::ReflectorStore};

use DeltaType::{Added, Deleted, Replaced, Sync, Updated};
use delta_fifo_support::*;

fn val(o: &ConfigMap) -> i64 {
    o.data.as_ref().unwrap()["val"].parse().unwrap()
}

async fn pop(f: &DeltaFifo<ConfigMap>) -> Deltas<ConfigMap> {
    f.pop(|d, _| d).await.expect("an item")
}

async fn pop_newest_val(f: &DeltaFifo<ConfigMap>) -> i64 {
    let d = pop(f).await;
    val(d.newest().unwrap().object.object().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_delta_fifo_basic() {
    let f = Arc::new(fifo());
    const AMOUNT: i64 = 500;
    let fa = f.clone();
    let a = tokio::spawn(async move {
        for i in 0..AMOUNT {
            fa.add(obj(&format!("a{i}"), i + 1)).unwrap();
            tokio::task::yield_now().await;
        }
    });
    let fb = f.clone();
    let b = tokio::spawn(async move {
        for i in 0..AMOUNT {
            fb.add(obj(&format!("b{i}"), i + 1)).unwrap();
            tokio::task::yield_now().await;
        }
    });
    let (mut last_a, mut last_b) = (0, 0);
    for _ in 0..AMOUNT * 2 {
        let d = pop(&f).await;
        let o = d.newest().unwrap().object.object().unwrap().clone();
        let v = val(&o);
        let name = o.metadata.name.clone().unwrap();
        let last = if name.starts_with('a') {
            &mut last_a
        } else {
            &mut last_b
        };
        assert!(v > *last, "{name}={v} out of order, last was {last}");
        *last = v;
    }
    assert_eq!((last_a, last_b), (AMOUNT, AMOUNT));
    a.await.unwrap();
    b.await.unwrap();
}

#[tokio::test]
async fn test_delta_fifo_replace_with_delete_delta_in() {
    let old = obj("foo", 1);
    let new = obj("foo", 2);
    let f = fifo_known(vec![old.clone()], false);
    f.delete(old).unwrap();
    f.replace(vec![new], String::new()).unwrap();
    assert_eq!(
        pop_desc(&f).await,
        exp(&[(Deleted, "foo=1"), (Sync, "foo=2")])
    );
}

#[tokio::test]
async fn test_delta_fifo_replace_makes_deletions_for_objects_only_in_queue() {
    type Ops = fn(&DeltaFifo<ConfigMap>, &Arc<ConfigMap>, &Arc<ConfigMap>);
    type Case = (&'static str, bool, Ops, Vec<(DeltaType, &'static str)>);
    let table: Vec<Case> = vec![
        (
            "Added object should be deleted on Replace",
            false,
            |f, o, _| {
                f.add(o.clone()).unwrap();
                f.replace(vec![], "0".into()).unwrap();
            },
            vec![(Added, "foo=2"), (Deleted, "tombstone(foo, foo=2)")],
        ),
        (
            "Replaced object should have only a single Delete",
            true,
            |f, o, _| {
                f.add(o.clone()).unwrap();
                f.replace(vec![o.clone()], "0".into()).unwrap();
                f.replace(vec![], "0".into()).unwrap();
            },
            vec![
                (Added, "foo=2"),
                (Replaced, "foo=2"),
                (Deleted, "tombstone(foo, foo=2)"),
            ],
        ),
        (
            "Deleted object should have only a single Delete",
            false,
            |f, o, _| {
                f.add(o.clone()).unwrap();
                f.delete(o.clone()).unwrap();
                f.replace(vec![], "0".into()).unwrap();
            },
            vec![(Added, "foo=2"), (Deleted, "foo=2")],
        ),
        (
            "Synced objects should have a single delete",
            false,
            |f, o, _| {
                f.add(o.clone()).unwrap();
                f.replace(vec![o.clone()], "0".into()).unwrap();
                f.replace(vec![o.clone()], "0".into()).unwrap();
                f.replace(vec![], "0".into()).unwrap();
            },
            vec![
                (Added, "foo=2"),
                (Sync, "foo=2"),
                (Sync, "foo=2"),
                (Deleted, "tombstone(foo, foo=2)"),
            ],
        ),
        (
            "Added objects should have a single delete on multiple Replaces",
            false,
            |f, o, _| {
                f.add(o.clone()).unwrap();
                f.replace(vec![], "0".into()).unwrap();
                f.replace(vec![], "1".into()).unwrap();
            },
            vec![(Added, "foo=2"), (Deleted, "tombstone(foo, foo=2)")],
        ),
        (
            "Added and deleted and added object should be deleted",
            false,
            |f, o, v2| {
                f.add(o.clone()).unwrap();
                f.delete(o.clone()).unwrap();
                f.add(v2.clone()).unwrap();
                f.replace(vec![], "0".into()).unwrap();
            },
            vec![
                (Added, "foo=2"),
                (Deleted, "foo=2"),
                (Added, "foo=3"),
                (Deleted, "tombstone(foo, foo=3)"),
            ],
        ),
    ];
    let o = obj("foo", 2);
    let v2 = obj("foo", 3);
    for (name, emit, ops, expected) in table {
        for with_known in [true, false] {
            let f = if with_known {
                fifo_known(vec![], emit)
            } else {
                DeltaFifo::new(DeltaFifoOptions {
                    emit_delta_type_replaced: emit,
                    ..Default::default()
                })
            };
            ops(&f, &o, &v2);
            assert_eq!(
                pop_desc(&f).await,
                exp(&expected),
                "{name} (known objects: {with_known})"
            );
            assert!(f.is_empty(), "{name}: no extra deltas");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn test_delta_fifo_add_update() {
    let f = fifo();
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("foo", 12)).unwrap();
    f.delete(obj("foo", 15)).unwrap();
    let list: Vec<String> = f.list().iter().map(describe).collect();
    assert_eq!(list, ["foo=15"]);
    assert_eq!(f.list_keys(), ["foo"]);
    assert_eq!(pop_newest_val(&f).await, 15);
    let second = tokio::time::timeout(Duration::from_millis(50), pop(&f)).await;
    assert!(second.is_err(), "got a second value");
    assert!(
        f.get(&obj("foo", 0)).unwrap().is_none(),
        "item was not removed"
    );
}

fn xfrm_count(o: &ConfigMap) -> u32 {
    o.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("xfrm"))
        .map_or(0, |v| v.parse().unwrap())
}

#[tokio::test]
async fn test_delta_fifo_transformer() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let f = DeltaFifo::new(DeltaFifoOptions {
        transformer: Some(Arc::new(move |o: Arc<ConfigMap>| {
            counter.fetch_add(1, Ordering::SeqCst);
            let mut o = (*o).clone();
            let n = xfrm_count(&o) + 1;
            o.metadata
                .annotations
                .get_or_insert_default()
                .insert("xfrm".into(), n.to_string());
            Arc::new(o)
        })),
        ..Default::default()
    });
    f.add(obj("foo", 10)).unwrap();
    f.add(obj("bar", 11)).unwrap();
    f.update(obj("foo", 12)).unwrap();
    f.delete(obj("foo", 15)).unwrap();
    f.replace(vec![], String::new()).unwrap();
    f.add(obj("bar", 16)).unwrap();
    f.replace(vec![], String::new()).unwrap();

    assert_eq!(f.list_keys(), ["foo", "bar"]);
    assert_eq!(calls.load(Ordering::SeqCst), 5, "once per incoming object");
    for _ in 0..2 {
        let d = pop(&f).await;
        match &d.newest().unwrap().object {
            ObjectOrTombstone::Object(o) => {
                assert_eq!(o.metadata.name.as_deref(), Some("foo"));
                assert_eq!(val(o), 15, "expected the last message");
                assert_eq!(xfrm_count(o), 1);
            }
            ObjectOrTombstone::Tombstone(t) => {
                let o = t.obj.as_ref().unwrap();
                assert_eq!(o.metadata.name.as_deref(), Some("bar"));
                assert_eq!(val(o), 16, "expected the last message");
                assert_eq!(xfrm_count(o), 1);
            }
        }
    }
}

#[tokio::test]
async fn test_delta_fifo_enqueueing_no_lister() {
    let f = fifo();
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("bar", 15)).unwrap();
    f.add(obj("qux", 17)).unwrap();
    f.delete(obj("qux", 18)).unwrap();
    // baz does not exist: its deletion enqueues nothing.
    f.delete(obj("baz", 20)).unwrap();
    for expected in [10, 15, 18] {
        assert_eq!(pop_newest_val(&f).await, expected);
    }
    assert!(f.is_empty());
}

#[tokio::test]
async fn test_delta_fifo_enqueueing_with_lister() {
    let f = fifo_known(vec![obj("foo", 5), obj("bar", 6), obj("baz", 7)], false);
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("bar", 15)).unwrap();
    // baz is known, so its deletion is enqueued.
    f.delete(obj("baz", 20)).unwrap();
    for expected in [10, 15, 20] {
        assert_eq!(pop_newest_val(&f).await, expected);
    }
    assert!(f.is_empty());
}

#[tokio::test(start_paused = true)]
async fn test_delta_fifo_add_replace() {
    let f = fifo();
    f.add(obj("foo", 10)).unwrap();
    f.replace(vec![obj("foo", 15)], "0".into()).unwrap();
    assert_eq!(pop_newest_val(&f).await, 15);
    let second = tokio::time::timeout(Duration::from_millis(50), pop(&f)).await;
    assert!(second.is_err(), "got a second value");
    assert!(
        f.get(&obj("foo", 0)).unwrap().is_none(),
        "item was not removed"
    );
}

#[test]
fn test_delta_fifo_resync_non_existing() {
    let f = fifo_known(vec![obj("foo", 5)], false);
    f.delete(obj("foo", 10)).unwrap();
    f.resync().unwrap();
    let d = f.get_by_key("foo").unwrap();
    assert_eq!(describe_deltas(&d), exp(&[(Deleted, "foo=10")]));
}

#[test]
fn test_delta_fifo_resync() {
    let f = fifo_known(vec![obj("foo", 5)], false);
    f.resync().unwrap();
    let d = f.get_by_key("foo").unwrap();
    assert_eq!(describe_deltas(&d), exp(&[(Sync, "foo=5")]));
}

#[test]
fn test_delta_fifo_delete_existing_non_propagated() {
    let f = fifo_known(vec![], false);
    f.add(obj("foo", 5)).unwrap();
    f.delete(obj("foo", 6)).unwrap();
    let d = f.get_by_key("foo").unwrap();
    assert_eq!(d.len(), 2);
    assert_eq!(d.newest().unwrap().delta_type, Deleted);
}

fn foo_bar_baz() -> Vec<Arc<ConfigMap>> {
    vec![obj("foo", 5), obj("bar", 6), obj("baz", 7)]
}

#[tokio::test]
async fn test_delta_fifo_replace_makes_deletions() {
    // A pre-existing deletion.
    let f = fifo_known(foo_bar_baz(), false);
    f.delete(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(pop_desc(&f).await, exp(&[(Deleted, "baz=10")]));
    assert_eq!(pop_desc(&f).await, exp(&[(Sync, "foo=5")]));
    assert_eq!(
        pop_desc(&f).await,
        exp(&[(Deleted, "tombstone(bar, bar=6)")])
    );

    // Starting with an add instead.
    let f = fifo_known(foo_bar_baz(), false);
    f.add(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        pop_desc(&f).await,
        exp(&[(Added, "baz=10"), (Deleted, "tombstone(baz, baz=10)")])
    );
    assert_eq!(pop_desc(&f).await, exp(&[(Sync, "foo=5")]));
    assert_eq!(
        pop_desc(&f).await,
        exp(&[(Deleted, "tombstone(bar, bar=6)")])
    );

    // Deleting and recreating in the queue, then a replace deletes it.
    let f = fifo_known(foo_bar_baz(), false);
    f.delete(obj("bar", 6)).unwrap();
    f.add(obj("bar", 100)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        pop_desc(&f).await,
        exp(&[
            (Deleted, "bar=6"),
            (Added, "bar=100"),
            // the newest queued object, not the known one
            (Deleted, "tombstone(bar, bar=100)"),
        ])
    );
    assert_eq!(pop_desc(&f).await, exp(&[(Sync, "foo=5")]));
    assert_eq!(
        pop_desc(&f).await,
        exp(&[(Deleted, "tombstone(baz, baz=7)")])
    );

    // Syncing first, so the deletion uses the latest version.
    let f = fifo_known(foo_bar_baz(), false);
    f.replace(vec![obj("bar", 100), obj("foo", 5)], "0".into())
        .unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        pop_desc(&f).await,
        exp(&[(Sync, "bar=100"), (Deleted, "tombstone(bar, bar=100)")])
    );
    assert_eq!(pop_desc(&f).await, exp(&[(Sync, "foo=5"), (Sync, "foo=5")]));
    assert_eq!(
        pop_desc(&f).await,
        exp(&[(Deleted, "tombstone(baz, baz=7)")])
    );

    // Without known objects.
    let f = fifo();
    f.add(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        pop_desc(&f).await,
        exp(&[(Added, "baz=10"), (Deleted, "tombstone(baz, baz=10)")])
    );
    assert_eq!(pop_desc(&f).await, exp(&[(Sync, "foo=5")]));
    assert!(f.is_empty());
}

#[tokio::test]
async fn test_delta_fifo_replace_makes_deletions_replaced() {
    let f = fifo_known(foo_bar_baz(), true);
    f.delete(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 6)], "0".into()).unwrap();
    assert_eq!(pop_desc(&f).await, exp(&[(Deleted, "baz=10")]));
    assert_eq!(pop_desc(&f).await, exp(&[(Replaced, "foo=6")]));
    assert_eq!(
        pop_desc(&f).await,
        exp(&[(Deleted, "tombstone(bar, bar=6)")])
    );
}

#[tokio::test]
async fn test_delta_fifo_replace_delta_type() {
    let f = fifo_known(vec![obj("foo", 5)], true);
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(pop_desc(&f).await, exp(&[(Replaced, "foo=5")]));
}

#[tokio::test]
async fn test_delta_fifo_update_resync_race() {
    let f = fifo_known(vec![obj("foo", 5)], false);
    f.update(obj("foo", 6)).unwrap();
    f.resync().unwrap();
    assert_eq!(pop_desc(&f).await, exp(&[(Updated, "foo=6")]));
}

#[tokio::test]
async fn test_delta_fifo_has_synced_correct_on_deletion() {
    let f = fifo_known(foo_bar_baz(), false);
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    let expected = [
        exp(&[(Sync, "foo=5")]),
        exp(&[(Deleted, "tombstone(bar, bar=6)")]),
        exp(&[(Deleted, "tombstone(baz, baz=7)")]),
    ];
    for e in expected {
        assert!(!f.has_synced());
        let (d, initial) = f.pop(|d, initial| (d, initial)).await.unwrap();
        assert_eq!(describe_deltas(&d), e);
        assert!(initial, "expected an initial list item");
    }
    assert!(f.has_synced());
}

#[tokio::test]
async fn test_delta_fifo_detect_line_jumpers() {
    let f = fifo();
    f.add(obj("foo", 10)).unwrap();
    f.add(obj("bar", 1)).unwrap();
    f.add(obj("foo", 11)).unwrap();
    f.add(obj("foo", 13)).unwrap();
    f.add(obj("zab", 30)).unwrap();
    assert_eq!(pop_newest_val(&f).await, 13);
    f.add(obj("foo", 14)).unwrap(); // foo must not jump back in line
    assert_eq!(pop_newest_val(&f).await, 1);
    assert_eq!(pop_newest_val(&f).await, 30);
    assert_eq!(pop_newest_val(&f).await, 14);
}

#[test]
fn test_delta_fifo_key_of() {
    let f = fifo();
    let a: ObjectOrTombstone<ConfigMap> = obj("A", 0).into();
    assert_eq!(f.key_of(&a).unwrap(), "A");
    let b: ObjectOrTombstone<ConfigMap> = DeletedFinalStateUnknown {
        key: "B".into(),
        obj: None,
    }
    .into();
    assert_eq!(f.key_of(&b).unwrap(), "B");
    // client-go's Deltas cases: the key of a Deltas is the key of its newest object.
    let c = Deltas::from(vec![kinformer::queue::Delta::new(Added, obj("C", 0))]);
    assert_eq!(f.key_of(&c.newest().unwrap().object).unwrap(), "C");
    let d = Deltas::from(vec![kinformer::queue::Delta {
        delta_type: Deleted,
        object: DeletedFinalStateUnknown {
            key: "D".into(),
            obj: None,
        }
        .into(),
    }]);
    assert_eq!(f.key_of(&d.newest().unwrap().object).unwrap(), "D");
}

#[tokio::test]
async fn test_delta_fifo_has_synced() {
    enum Act {
        Add(&'static str, i64),
        Replace(Vec<(&'static str, i64)>),
        Pop,
    }
    use Act::*;
    let cases: Vec<(Vec<Act>, bool)> = vec![
        (vec![], false),
        (vec![Add("a", 1)], true),
        (vec![Replace(vec![])], true),
        (vec![Replace(vec![("a", 1), ("b", 2)])], false),
        (vec![Replace(vec![("a", 1), ("b", 2)]), Pop], false),
        (vec![Replace(vec![("a", 1), ("b", 2)]), Pop, Pop], true),
        // Duplicate keys in one list (a broken API server) count once.
        (vec![Replace(vec![("a", 1), ("a", 2)]), Pop], true),
    ];
    for (i, (actions, expected)) in cases.into_iter().enumerate() {
        let f = fifo();
        for a in actions {
            match a {
                Add(n, v) => f.add(obj(n, v)).unwrap(),
                Replace(list) => f
                    .replace(
                        list.into_iter().map(|(n, v)| obj(n, v)).collect(),
                        "0".into(),
                    )
                    .unwrap(),
                Pop => {
                    pop(&f).await;
                }
            }
        }
        assert_eq!(f.has_synced(), expected, "case {i}");
        assert_eq!(*f.synced_watch().borrow(), expected, "case {i} (watch)");
    }
}

#[tokio::test(start_paused = true)]
async fn test_delta_fifo_pop_should_unblock_when_closed() {
    let f = Arc::new(fifo_known(vec![obj("foo", 5)], false));
    let mut jobs = Vec::new();
    for _ in 0..10 {
        let f = f.clone();
        jobs.push(tokio::spawn(async move { f.pop(|_, _| ()).await }));
    }
    tokio::task::yield_now().await;
    f.close();
    for j in jobs {
        let r = tokio::time::timeout(Duration::from_millis(500), j)
            .await
            .expect("pop returned after close")
            .unwrap();
        assert_eq!(r, Err(QueueError::Closed));
    }
}
