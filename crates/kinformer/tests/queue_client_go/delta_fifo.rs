//! Ports of client-go's `tools/cache/delta_fifo_test.go`: same inputs, same expected outputs.
//! client-go's `testFifoObject{name, val}` is a ConfigMap named `name` with `data.val = val`.
//!
//! The scenarios that drive one queue through adds, updates, deletes, replaces and resyncs and
//! check what comes out are one table of [`Script`]s run by one loop; the concurrency, the
//! transformer, `KeyOf` and closing keep setups of their own.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::queue::{DeltaFifo, DeltaFifoOptions, DeltaType, Deltas, QueueError};
use kinformer::{DeletedFinalStateUnknown, ObjectOrTombstone, store::ReflectorStore};

use crate::delta_fifo_support::*;
use DeltaType::{Added, Deleted, Replaced, Sync, Updated};

fn val(o: &ConfigMap) -> i64 {
    o.data.as_ref().unwrap()["val"].parse().unwrap()
}

async fn pop(f: &DeltaFifo<ConfigMap>) -> Deltas<ConfigMap> {
    f.pop(|d, _| d).await.expect("an item")
}

/// client-go's `TestDeltaFIFO_basic`: two producers, one consumer, each producer's order kept.
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

type Expected = &'static [(DeltaType, &'static str)];

/// One step of a [`Script`]: an operation on the queue, or a check of what it holds.
enum Step {
    Add(&'static str, i64),
    Update(&'static str, i64),
    Delete(&'static str, i64),
    /// `replace(objects, resourceVersion)`.
    Replace(&'static [(&'static str, i64)], &'static str),
    Resync,
    /// Pops one item; its deltas are exactly these.
    Pop(Expected),
    /// Pops one item from the initial list (`is_in_initial_list`); its deltas are exactly these.
    PopInitial(Expected),
    /// Pops one item; its newest object has this `val`.
    PopNewest(i64),
    /// Nothing more to pop within 50 ms (client-go: "got a second value").
    NothingToPop,
    /// `get_by_key(key)` holds exactly these deltas.
    Get(&'static str, Expected),
    /// `get` of this name finds nothing (client-go: "item was not removed").
    Gone(&'static str),
    /// `list()`, described as `name=val`.
    List(&'static [&'static str]),
    ListKeys(&'static [&'static str]),
    /// `has_synced()` and the synced watch both say this.
    Synced(bool),
    Empty,
}

/// A ported scenario: a queue (client-go's `literalListerGetter` of known objects or none, and
/// whether Replace emits `Replaced`), the steps run on it in order.
struct Script {
    /// The client-go test (and case) this row ports.
    name: &'static str,
    known: Option<&'static [(&'static str, i64)]>,
    emit_replaced: bool,
    steps: Vec<Step>,
}

fn objs(items: &[(&str, i64)]) -> Vec<Arc<ConfigMap>> {
    items.iter().map(|(n, v)| obj(n, *v)).collect()
}

async fn run_scripts(table: Vec<Script>) {
    for Script {
        name,
        known,
        emit_replaced,
        steps,
    } in table
    {
        let f = match known {
            Some(known) => fifo_known(objs(known), emit_replaced),
            None => DeltaFifo::new(DeltaFifoOptions {
                emit_delta_type_replaced: emit_replaced,
                ..Default::default()
            }),
        };
        for (i, step) in steps.into_iter().enumerate() {
            let at = format!("{name}, step {i}");
            match step {
                Step::Add(n, v) => f.add(obj(n, v)).unwrap(),
                Step::Update(n, v) => f.update(obj(n, v)).unwrap(),
                Step::Delete(n, v) => f.delete(obj(n, v)).unwrap(),
                Step::Replace(list, rv) => f.replace(objs(list), rv.into()).unwrap(),
                Step::Resync => f.resync().unwrap(),
                Step::Pop(expected) => assert_eq!(pop_desc(&f).await, exp(expected), "{at}"),
                Step::PopInitial(expected) => {
                    let (d, initial) = f.pop(|d, initial| (d, initial)).await.unwrap();
                    assert_eq!(describe_deltas(&d), exp(expected), "{at}");
                    assert!(initial, "{at}: expected an initial list item");
                }
                Step::PopNewest(expected) => {
                    let d = pop(&f).await;
                    let newest = val(d.newest().unwrap().object.object().unwrap());
                    assert_eq!(newest, expected, "{at}");
                }
                Step::NothingToPop => {
                    let second = tokio::time::timeout(Duration::from_millis(50), pop(&f)).await;
                    assert!(second.is_err(), "{at}: got a second value");
                }
                Step::Get(key, expected) => {
                    let d = f.get_by_key(key).unwrap();
                    assert_eq!(describe_deltas(&d), exp(expected), "{at}");
                }
                Step::Gone(n) => assert!(
                    f.get(&obj(n, 0)).unwrap().is_none(),
                    "{at}: item was not removed"
                ),
                Step::List(expected) => {
                    let list: Vec<String> = f.list().iter().map(describe).collect();
                    assert_eq!(list, expected, "{at}");
                }
                Step::ListKeys(expected) => assert_eq!(f.list_keys(), expected, "{at}"),
                Step::Synced(expected) => {
                    assert_eq!(f.has_synced(), expected, "{at}");
                    assert_eq!(*f.synced_watch().borrow(), expected, "{at} (watch)");
                }
                Step::Empty => assert!(f.is_empty(), "{at}: no extra deltas"),
            }
        }
    }
}

/// client-go's `TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue` runs each case with
/// and without an (empty) known-objects lister: two rows per case.
fn with_and_without_known(
    name: &'static str,
    emit_replaced: bool,
    steps: fn() -> Vec<Step>,
) -> [Script; 2] {
    [
        Script {
            name,
            known: Some(&[]),
            emit_replaced,
            steps: steps(),
        },
        Script {
            name,
            known: None,
            emit_replaced,
            steps: steps(),
        },
    ]
}

const FOO_BAR_BAZ: &[(&str, i64)] = &[("foo", 5), ("bar", 6), ("baz", 7)];

#[tokio::test(start_paused = true)]
async fn delta_fifo_scripts() {
    use Step::*;
    let mut table = vec![
        Script {
            name: "TestDeltaFIFO_replaceWithDeleteDeltaIn",
            known: Some(&[("foo", 1)]),
            emit_replaced: false,
            steps: vec![
                Delete("foo", 1),
                Replace(&[("foo", 2)], ""),
                Pop(&[(Deleted, "foo=1"), (Sync, "foo=2")]),
            ],
        },
        Script {
            name: "TestDeltaFIFO_addUpdate",
            known: None,
            emit_replaced: false,
            steps: vec![
                Add("foo", 10),
                Update("foo", 12),
                Delete("foo", 15),
                List(&["foo=15"]),
                ListKeys(&["foo"]),
                PopNewest(15),
                NothingToPop,
                Gone("foo"),
            ],
        },
        Script {
            name: "TestDeltaFIFO_enqueueingNoLister",
            known: None,
            emit_replaced: false,
            steps: vec![
                Add("foo", 10),
                Update("bar", 15),
                Add("qux", 17),
                Delete("qux", 18),
                // baz does not exist: its deletion enqueues nothing.
                Delete("baz", 20),
                PopNewest(10),
                PopNewest(15),
                PopNewest(18),
                Empty,
            ],
        },
        Script {
            name: "TestDeltaFIFO_enqueueingWithLister",
            known: Some(FOO_BAR_BAZ),
            emit_replaced: false,
            steps: vec![
                Add("foo", 10),
                Update("bar", 15),
                // baz is known, so its deletion is enqueued.
                Delete("baz", 20),
                PopNewest(10),
                PopNewest(15),
                PopNewest(20),
                Empty,
            ],
        },
        Script {
            name: "TestDeltaFIFO_addReplace",
            known: None,
            emit_replaced: false,
            steps: vec![
                Add("foo", 10),
                Replace(&[("foo", 15)], "0"),
                PopNewest(15),
                NothingToPop,
                Gone("foo"),
            ],
        },
        Script {
            name: "TestDeltaFIFO_ResyncNonExisting",
            known: Some(&[("foo", 5)]),
            emit_replaced: false,
            steps: vec![
                Delete("foo", 10),
                Resync,
                Get("foo", &[(Deleted, "foo=10")]),
            ],
        },
        Script {
            name: "TestDeltaFIFO_Resync",
            known: Some(&[("foo", 5)]),
            emit_replaced: false,
            steps: vec![Resync, Get("foo", &[(Sync, "foo=5")])],
        },
        Script {
            name: "TestDeltaFIFO_DeleteExistingNonPropagated",
            known: Some(&[]),
            emit_replaced: false,
            steps: vec![
                Add("foo", 5),
                Delete("foo", 6),
                Get("foo", &[(Added, "foo=5"), (Deleted, "foo=6")]),
            ],
        },
        Script {
            name: "TestDeltaFIFO_ReplaceMakesDeletions/a pre-existing deletion",
            known: Some(FOO_BAR_BAZ),
            emit_replaced: false,
            steps: vec![
                Delete("baz", 10),
                Replace(&[("foo", 5)], "0"),
                Pop(&[(Deleted, "baz=10")]),
                Pop(&[(Sync, "foo=5")]),
                Pop(&[(Deleted, "tombstone(bar, bar=6)")]),
            ],
        },
        Script {
            name: "TestDeltaFIFO_ReplaceMakesDeletions/starting with an add instead",
            known: Some(FOO_BAR_BAZ),
            emit_replaced: false,
            steps: vec![
                Add("baz", 10),
                Replace(&[("foo", 5)], "0"),
                Pop(&[(Added, "baz=10"), (Deleted, "tombstone(baz, baz=10)")]),
                Pop(&[(Sync, "foo=5")]),
                Pop(&[(Deleted, "tombstone(bar, bar=6)")]),
            ],
        },
        Script {
            name: "TestDeltaFIFO_ReplaceMakesDeletions/deleting and recreating in the queue, then a replace deletes it",
            known: Some(FOO_BAR_BAZ),
            emit_replaced: false,
            steps: vec![
                Delete("bar", 6),
                Add("bar", 100),
                Replace(&[("foo", 5)], "0"),
                Pop(&[
                    (Deleted, "bar=6"),
                    (Added, "bar=100"),
                    // the newest queued object, not the known one
                    (Deleted, "tombstone(bar, bar=100)"),
                ]),
                Pop(&[(Sync, "foo=5")]),
                Pop(&[(Deleted, "tombstone(baz, baz=7)")]),
            ],
        },
        Script {
            name: "TestDeltaFIFO_ReplaceMakesDeletions/syncing first, so the deletion uses the latest version",
            known: Some(FOO_BAR_BAZ),
            emit_replaced: false,
            steps: vec![
                Replace(&[("bar", 100), ("foo", 5)], "0"),
                Replace(&[("foo", 5)], "0"),
                Pop(&[(Sync, "bar=100"), (Deleted, "tombstone(bar, bar=100)")]),
                Pop(&[(Sync, "foo=5"), (Sync, "foo=5")]),
                Pop(&[(Deleted, "tombstone(baz, baz=7)")]),
            ],
        },
        Script {
            name: "TestDeltaFIFO_ReplaceMakesDeletions/without known objects",
            known: None,
            emit_replaced: false,
            steps: vec![
                Add("baz", 10),
                Replace(&[("foo", 5)], "0"),
                Pop(&[(Added, "baz=10"), (Deleted, "tombstone(baz, baz=10)")]),
                Pop(&[(Sync, "foo=5")]),
                Empty,
            ],
        },
        Script {
            name: "TestDeltaFIFO_ReplaceMakesDeletionsReplaced",
            known: Some(FOO_BAR_BAZ),
            emit_replaced: true,
            steps: vec![
                Delete("baz", 10),
                Replace(&[("foo", 6)], "0"),
                Pop(&[(Deleted, "baz=10")]),
                Pop(&[(Replaced, "foo=6")]),
                Pop(&[(Deleted, "tombstone(bar, bar=6)")]),
            ],
        },
        Script {
            name: "TestDeltaFIFO_ReplaceDeltaType",
            known: Some(&[("foo", 5)]),
            emit_replaced: true,
            steps: vec![Replace(&[("foo", 5)], "0"), Pop(&[(Replaced, "foo=5")])],
        },
        Script {
            name: "TestDeltaFIFO_UpdateResyncRace",
            known: Some(&[("foo", 5)]),
            emit_replaced: false,
            steps: vec![Update("foo", 6), Resync, Pop(&[(Updated, "foo=6")])],
        },
        Script {
            name: "TestDeltaFIFO_HasSyncedCorrectOnDeletion",
            known: Some(FOO_BAR_BAZ),
            emit_replaced: false,
            steps: vec![
                Replace(&[("foo", 5)], "0"),
                Synced(false),
                PopInitial(&[(Sync, "foo=5")]),
                Synced(false),
                PopInitial(&[(Deleted, "tombstone(bar, bar=6)")]),
                Synced(false),
                PopInitial(&[(Deleted, "tombstone(baz, baz=7)")]),
                Synced(true),
            ],
        },
        Script {
            name: "TestDeltaFIFO_detectLineJumpers",
            known: None,
            emit_replaced: false,
            steps: vec![
                Add("foo", 10),
                Add("bar", 1),
                Add("foo", 11),
                Add("foo", 13),
                Add("zab", 30),
                PopNewest(13),
                Add("foo", 14), // foo must not jump back in line
                PopNewest(1),
                PopNewest(30),
                PopNewest(14),
            ],
        },
    ];
    // TestDeltaFIFO_HasSynced, case by case.
    for (name, steps) in [
        ("TestDeltaFIFO_HasSynced/empty", vec![Synced(false)]),
        (
            "TestDeltaFIFO_HasSynced/Add",
            vec![Add("a", 1), Synced(true)],
        ),
        (
            "TestDeltaFIFO_HasSynced/empty Replace",
            vec![Replace(&[], "0"), Synced(true)],
        ),
        (
            "TestDeltaFIFO_HasSynced/Replace, nothing popped",
            vec![Replace(&[("a", 1), ("b", 2)], "0"), Synced(false)],
        ),
        (
            "TestDeltaFIFO_HasSynced/Replace, one of two popped",
            vec![
                Replace(&[("a", 1), ("b", 2)], "0"),
                PopNewest(1),
                Synced(false),
            ],
        ),
        (
            "TestDeltaFIFO_HasSynced/Replace, both popped",
            vec![
                Replace(&[("a", 1), ("b", 2)], "0"),
                PopNewest(1),
                PopNewest(2),
                Synced(true),
            ],
        ),
        // Duplicate keys in one list (a broken API server) count once.
        (
            "TestDeltaFIFO_HasSynced/duplicate keys in one Replace",
            vec![
                Replace(&[("a", 1), ("a", 2)], "0"),
                PopNewest(2),
                Synced(true),
            ],
        ),
    ] {
        table.push(Script {
            name,
            known: None,
            emit_replaced: false,
            steps,
        });
    }
    // TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue, with and without known objects;
    // each ends with nothing more queued.
    table.extend(with_and_without_known(
        "TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Added object should be deleted on Replace",
        false,
        || {
            vec![
                Add("foo", 2),
                Replace(&[], "0"),
                Pop(&[(Added, "foo=2"), (Deleted, "tombstone(foo, foo=2)")]),
                Empty,
            ]
        },
    ));
    table.extend(with_and_without_known(
        "TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Replaced object should have only a single Delete",
        true,
        || {
            vec![
                Add("foo", 2),
                Replace(&[("foo", 2)], "0"),
                Replace(&[], "0"),
                Pop(&[
                    (Added, "foo=2"),
                    (Replaced, "foo=2"),
                    (Deleted, "tombstone(foo, foo=2)"),
                ]),
                Empty,
            ]
        },
    ));
    table.extend(with_and_without_known(
        "TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Deleted object should have only a single Delete",
        false,
        || {
            vec![
                Add("foo", 2),
                Delete("foo", 2),
                Replace(&[], "0"),
                Pop(&[(Added, "foo=2"), (Deleted, "foo=2")]),
                Empty,
            ]
        },
    ));
    table.extend(with_and_without_known(
        "TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Synced objects should have a single delete",
        false,
        || {
            vec![
                Add("foo", 2),
                Replace(&[("foo", 2)], "0"),
                Replace(&[("foo", 2)], "0"),
                Replace(&[], "0"),
                Pop(&[
                    (Added, "foo=2"),
                    (Sync, "foo=2"),
                    (Sync, "foo=2"),
                    (Deleted, "tombstone(foo, foo=2)"),
                ]),
                Empty,
            ]
        },
    ));
    table.extend(with_and_without_known(
        "TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Added objects should have a single delete on multiple Replaces",
        false,
        || {
            vec![
                Add("foo", 2),
                Replace(&[], "0"),
                Replace(&[], "1"),
                Pop(&[(Added, "foo=2"), (Deleted, "tombstone(foo, foo=2)")]),
                Empty,
            ]
        },
    ));
    table.extend(with_and_without_known(
        "TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Added and deleted and added object should be deleted",
        false,
        || {
            vec![
                Add("foo", 2),
                Delete("foo", 2),
                Add("foo", 3),
                Replace(&[], "0"),
                Pop(&[
                    (Added, "foo=2"),
                    (Deleted, "foo=2"),
                    (Added, "foo=3"),
                    (Deleted, "tombstone(foo, foo=3)"),
                ]),
                Empty,
            ]
        },
    ));
    run_scripts(table).await;
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
        transformer: Some(kinformer::Transform::new(move |o: &mut ConfigMap| {
            counter.fetch_add(1, Ordering::SeqCst);
            let n = xfrm_count(o) + 1;
            o.metadata
                .annotations
                .get_or_insert_default()
                .insert("xfrm".into(), n.to_string());
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
