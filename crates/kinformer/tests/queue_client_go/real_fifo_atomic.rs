//! Ports of client-go's `the_real_fifo_test.go` batch and atomic cases
//! (`TestRealFIFO_PopMultipleDeltaInBatch`, `TestRealFIFO_PopBrokenItemsInBatch`,
//! `TestRealFIFO_ReplaceAtomic`, `TestRealFIFO_ReplaceAtomicPop`, `TestRealFIFO_ResyncAtomic`),
//! plus kinformer's own: relists taken in parts, the bound, close and sync publication.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::queue::{QueueError, RealFifo, RealFifoMode, RealFifoOptions};
use kinformer::{KeyError, meta_namespace_key};

use crate::delta_fifo_support::obj;
use crate::real_fifo_support::*;

const UNLIMITED: usize = 999_999;

type Action = fn(&RealFifo<ConfigMap>);

/// (name, initial objects fooN, actions, batch size, expected batches).
type BatchCase = (
    &'static str,
    Vec<usize>,
    Vec<Action>,
    usize,
    Vec<Vec<&'static str>>,
);

/// (name, incoming object names, expected batches).
type BrokenCase = (&'static str, Vec<&'static str>, Vec<Vec<&'static str>>);

#[test]
fn test_real_fifo_pop_multiple_delta_in_batch() {
    let o = |i: usize| obj(&format!("foo{i}"), 5);
    let cases: Vec<BatchCase> = vec![
        (
            "non-split: pop unique items should work",
            vec![1, 2, 3],
            vec![],
            UNLIMITED,
            vec![vec![
                "Replaced foo1=5",
                "Replaced foo2=5",
                "Replaced foo3=5",
            ]],
        ),
        (
            "split due to initial list: initial 2 items with 2 updates should have 2 batches",
            vec![1, 2],
            vec![|f| f.update(obj("foo3", 5)).unwrap(), |f| {
                f.update(obj("foo4", 5)).unwrap()
            }],
            2,
            vec![
                vec!["Replaced foo1=5", "Replaced foo2=5"],
                vec!["Updated foo3=5", "Updated foo4=5"],
            ],
        ),
        (
            "split due to non-unique#1: update single item for multiple items should have separate batch",
            vec![1],
            vec![|f| f.update(obj("foo1", 5)).unwrap(), |f| {
                f.update(obj("foo1", 5)).unwrap()
            }],
            UNLIMITED,
            vec![
                vec!["Replaced foo1=5"],
                vec!["Updated foo1=5"],
                vec!["Updated foo1=5"],
            ],
        ),
        (
            "split due to non-unique#2: update 3 item for with non-unique item at the end should have separate batch",
            vec![1, 2],
            vec![|f| f.update(obj("foo2", 5)).unwrap(), |f| {
                f.update(obj("foo3", 5)).unwrap()
            }],
            UNLIMITED,
            vec![
                vec!["Replaced foo1=5", "Replaced foo2=5"],
                vec!["Updated foo2=5", "Updated foo3=5"],
            ],
        ),
        (
            "split due to non-unique#3: update 3 item for with non-unique item in the mid should have separate batch",
            vec![1, 2, 3],
            vec![|f| f.update(obj("foo2", 5)).unwrap()],
            UNLIMITED,
            vec![
                vec!["Replaced foo1=5", "Replaced foo2=5", "Replaced foo3=5"],
                vec!["Updated foo2=5"],
            ],
        ),
        (
            "split due to batch size#1: batching initial list should work",
            vec![1, 2, 3],
            vec![],
            2,
            vec![
                vec!["Replaced foo1=5", "Replaced foo2=5"],
                vec!["Replaced foo3=5"],
            ],
        ),
        (
            "split due to batch size#2: batching incoming non-initial deltas should work",
            vec![],
            vec![
                |f| f.update(obj("foo1", 5)).unwrap(),
                |f| f.update(obj("foo2", 5)).unwrap(),
                |f| f.update(obj("foo3", 5)).unwrap(),
            ],
            2,
            vec![
                vec!["Updated foo1=5", "Updated foo2=5"],
                vec!["Updated foo3=5"],
            ],
        ),
        (
            "split due to batch size#3: pop 4 mixed initial & non-initial items with 2 batch size should have 3 batch",
            vec![1, 2, 3],
            vec![|f| f.update(obj("foo4", 5)).unwrap()],
            2,
            vec![
                vec!["Replaced foo1=5", "Replaced foo2=5"],
                vec!["Replaced foo3=5"],
                vec!["Updated foo4=5"],
            ],
        ),
    ];
    for (name, initial, actions, batch, expected) in cases {
        let initial: Vec<_> = initial.into_iter().map(o).collect();
        let f = per_object(initial.clone());
        f.replace(initial.clone(), "123".into()).unwrap();
        for action in actions {
            action(&f);
        }
        let mut batches = Vec::new();
        let mut initial_items = Vec::new();
        while !f.is_empty() {
            let (b, is_initial) = pop_batch_now(&f, batch);
            if is_initial {
                initial_items.extend(b.iter().cloned());
            }
            batches.push(b);
        }
        let expected: Vec<Vec<String>> = expected.iter().map(|b| strs(b)).collect();
        assert_eq!(batches, expected, "{name}");
        let expected_initial: Vec<String> = initial
            .iter()
            .map(|o| format!("Replaced {}=5", o.metadata.name.as_deref().unwrap()))
            .collect();
        assert_eq!(initial_items, expected_initial, "{name}: initial items");
    }
}

/// client-go pops an item whose key fails inside a batch. Here a key is computed when the
/// entry is queued, so a broken item is rejected by the write and never reaches a batch: the
/// batches are those of the remaining items.
#[test]
fn test_real_fifo_pop_broken_items_in_batch() {
    let key_func = Arc::new(|o: &ConfigMap| {
        let name = o.metadata.name.as_deref().unwrap_or("");
        if name == "foo3" || name == "foo4" {
            Err(KeyError::MissingName { namespace: None })
        } else {
            meta_namespace_key(o)
        }
    });
    let cases: Vec<BrokenCase> = vec![
        ("1st item is broken", vec!["foo3"], vec![]),
        (
            "nth item is broken",
            vec!["foo1", "foo2", "foo3"],
            vec![vec!["Added foo1=5", "Added foo2=5"]],
        ),
        (
            "multiple nth items are broken",
            vec!["foo1", "foo2", "foo3", "foo4"],
            vec![vec!["Added foo1=5", "Added foo2=5"]],
        ),
        (
            "mixed 1st and nth items are broken",
            vec!["foo3", "foo1", "foo4"],
            vec![vec!["Added foo1=5"]],
        ),
    ];
    for (name, incoming, expected) in cases {
        let f = RealFifo::new(RealFifoOptions {
            key_func: Some(key_func.clone()),
            mode: RealFifoMode::PerObject {
                known_objects: None,
            },
            ..Default::default()
        });
        for item in incoming {
            let result = f.add(obj(item, 5));
            let broken = item == "foo3" || item == "foo4";
            assert_eq!(
                matches!(result, Err(QueueError::Key(_))),
                broken,
                "{name}: {item}"
            );
        }
        let expected: Vec<Vec<String>> = expected.iter().map(|b| strs(b)).collect();
        assert_eq!(drain_batches(&f, UNLIMITED), expected, "{name}");
    }
}

#[test]
fn test_real_fifo_replace_atomic() {
    type Ops = fn(&RealFifo<ConfigMap>);
    let cases: Vec<(&str, Ops, Vec<&str>)> = vec![
        (
            "Base replace",
            |f| f.replace(vec![], "123".into()).unwrap(),
            vec!["ReplacedAll@123[]"],
        ),
        (
            "Added object exists in deltas on Atomic Replace",
            |f| {
                f.add(obj("foo", 2)).unwrap();
                f.replace(vec![], "123".into()).unwrap();
            },
            vec!["Added foo=2", "ReplacedAll@123[]"],
        ),
        (
            "Multiple replaces run in order",
            |f| {
                f.add(obj("foo", 2)).unwrap();
                f.replace(vec![obj("foo", 2)], "10".into()).unwrap();
                f.replace(vec![obj("foo", 2)], "20".into()).unwrap();
                f.replace(vec![], "56".into()).unwrap();
            },
            vec![
                "Added foo=2",
                "ReplacedAll@10[foo=2]",
                "ReplacedAll@20[foo=2]",
                "ReplacedAll@56[]",
            ],
        ),
        (
            "Bookmark object should not be included in Replace",
            |f| {
                f.bookmark("123");
                f.replace(vec![], "1234".into()).unwrap();
            },
            vec!["Bookmark@123", "ReplacedAll@1234[]"],
        ),
    ];
    for (name, ops, expected) in cases {
        let f = atomic(true);
        ops(&f);
        assert_eq!(drain(&f), strs(&expected), "{name}");
        assert!(f.is_empty(), "{name}");
    }
}

#[tokio::test(start_paused = true)]
async fn test_real_fifo_replace_atomic_pop() {
    let f = Arc::new(atomic(false));
    f.add(obj("foo", 10)).unwrap();
    f.replace(vec![obj("foo", 15)], "20".into()).unwrap();
    let consumer = tokio::spawn({
        let f = f.clone();
        async move {
            let mut got = Vec::new();
            while let Ok(p) = f.pop(|p, _| describe_popped(&p)).await {
                got.extend(p);
            }
            got
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(f.is_empty(), "item did not get removed");
    f.close();
    assert_eq!(
        consumer.await.unwrap(),
        strs(&["Added foo=10", "ReplacedAll@20[foo=15]"])
    );
}

#[test]
fn test_real_fifo_resync_atomic() {
    let f = atomic(false);
    f.resync().unwrap();
    assert_eq!(drain(&f), strs(&["SyncAll"]), "Base resync");

    let f = atomic(false);
    f.add(obj("foo", 2)).unwrap();
    f.resync().unwrap();
    assert_eq!(
        drain(&f),
        strs(&["Added foo=2", "SyncAll"]),
        "Added object exists in deltas on Atomic Resync"
    );
}

/// Scenario 27 of the research notes: a bookmark queued before the first relist counts in the
/// initial population; an atomic entry is never batched.
#[test]
fn atomic_entries_pop_alone_and_count_in_the_initial_population() {
    let f = atomic(true);
    f.bookmark("5");
    assert!(!f.is_populated(), "a bookmark does not populate");
    f.replace(vec![obj("a", 1), obj("b", 2)], "10".into())
        .unwrap();
    f.add(obj("c", 3)).unwrap();
    f.resync().unwrap();
    f.add(obj("d", 4)).unwrap();
    f.add(obj("e", 5)).unwrap();
    assert_eq!(f.len(), 6);
    assert_eq!(f.queued_objects(), 7, "a relist weighs its objects");
    assert_eq!(pop_batch_now(&f, UNLIMITED), (strs(&["Bookmark@5"]), true));
    assert!(!f.has_synced());
    assert_eq!(
        pop_batch_now(&f, UNLIMITED),
        (strs(&["ReplacedAll@10[a=1,b=2]"]), true)
    );
    assert!(f.has_synced());
    assert_eq!(pop_batch_now(&f, UNLIMITED), (strs(&["Added c=3"]), false));
    assert_eq!(pop_batch_now(&f, UNLIMITED), (strs(&["SyncAll"]), false));
    assert_eq!(
        pop_batch_now(&f, UNLIMITED),
        (strs(&["Added d=4", "Added e=5"]), false)
    );
}

/// Atomic mode processes without the queue's lock (client-go's UnlockWhileProcessing): the
/// consumer may write to the queue from inside `process` without deadlocking.
#[test]
fn atomic_mode_processes_without_the_lock() {
    let f = atomic(false);
    f.add(obj("a", 1)).unwrap();
    let popped = futures::FutureExt::now_or_never(f.pop(|p, _| {
        f.add(obj("b", 2)).unwrap();
        describe_popped(&p)
    }))
    .unwrap()
    .unwrap();
    assert_eq!(popped, strs(&["Added a=1"]));
    assert_eq!(drain(&f), strs(&["Added b=2"]));
}

/// has_synced turns true only after the last initial entry has been processed, in both modes.
#[test]
fn synced_is_published_after_processing() {
    for f in [atomic(false), per_object(vec![])] {
        f.replace(vec![obj("a", 1)], "1".into()).unwrap();
        let rx = f.synced_watch();
        let seen_inside = futures::FutureExt::now_or_never(f.pop(|_, initial| {
            assert!(initial);
            *rx.borrow()
        }))
        .unwrap()
        .unwrap();
        assert!(!seen_inside, "synced before the entry was processed");
        assert!(f.has_synced() && *rx.borrow());
    }
}

/// In atomic mode `process` runs without the lock, and a write made meanwhile (the Reflector
/// keeps going) must not declare the queue synced before the last initial entry is processed.
#[test]
fn a_write_during_unlocked_processing_does_not_sync_early() {
    let f = atomic(false);
    f.replace(vec![obj("a", 1)], "1".into()).unwrap();
    let synced_inside = futures::FutureExt::now_or_never(f.pop(|_, initial| {
        assert!(initial);
        f.add(obj("b", 2)).unwrap();
        f.has_synced()
    }))
    .unwrap()
    .unwrap();
    assert!(
        !synced_inside,
        "synced while the relist was still being processed"
    );
    assert!(f.has_synced());
    assert_eq!(pop2_now(&f), (strs(&["Added b=2"]), false));
}

/// A relist in parts is queued whole at `replace_end`; entries queued before it still pop in
/// between, nothing of the list does.
#[test]
fn replace_in_parts_is_queued_at_the_end() {
    let f = atomic(false);
    f.add(obj("x", 0)).unwrap();
    f.replace_begin();
    f.replace_part(vec![obj("a", 1)]).unwrap();
    assert_eq!(drain(&f), strs(&["Added x=0"]));
    f.replace_part(vec![obj("b", 2)]).unwrap();
    assert!(f.is_empty(), "nothing of an incomplete relist pops");
    f.replace_end("7".into()).unwrap();
    assert_eq!(drain(&f), strs(&["ReplacedAll@7[a=1,b=2]"]));

    let f = per_object(vec![obj("gone", 9), obj("a", 0)]);
    f.replace_begin();
    f.replace_part(vec![obj("a", 1)]).unwrap();
    f.replace_part(vec![obj("b", 2)]).unwrap();
    f.replace_end("7".into()).unwrap();
    assert_eq!(
        drain(&f),
        strs(&[
            "Deleted tombstone(gone, gone=9)",
            "Replaced a=1",
            "Replaced b=2"
        ])
    );
}

/// A second begin restarts the list; abort drops it; end without begin does nothing; a part
/// with a broken key keeps nothing of that part.
#[test]
fn replace_in_parts_restart_abort_and_errors() {
    let f = atomic(false);
    f.replace_begin();
    f.replace_part(vec![obj("a", 1)]).unwrap();
    f.replace_begin();
    f.replace_part(vec![obj("b", 2)]).unwrap();
    let no_name = Arc::new(ConfigMap::default());
    assert!(matches!(
        f.replace_part(vec![obj("c", 3), no_name.clone()]),
        Err(QueueError::Key(_))
    ));
    f.replace_end("2".into()).unwrap();
    assert_eq!(drain(&f), strs(&["ReplacedAll@2[b=2]"]));

    f.replace_begin();
    f.replace_part(vec![obj("a", 1)]).unwrap();
    f.replace_abort();
    f.replace_end("3".into()).unwrap();
    assert!(f.is_empty(), "an aborted relist queues nothing");

    assert!(matches!(
        f.replace(vec![obj("a", 1), no_name], "4".into()),
        Err(QueueError::Key(_))
    ));
    assert!(f.is_empty(), "a failed replace queues nothing");
    assert!(f.has_synced(), "the first successful relist was empty");
}

#[tokio::test(start_paused = true)]
async fn close_drains_then_fails_and_writes_still_work() {
    let f = Arc::new(atomic(false));
    f.add(obj("a", 1)).unwrap();
    f.close();
    assert!(f.is_closed());
    f.add(obj("b", 2)).unwrap();
    assert_eq!(drain(&f), strs(&["Added a=1", "Added b=2"]));
    assert!(pop_is_closed(&f));
    assert!(matches!(
        f.pop_batch(10, |_, _| ()).await,
        Err(QueueError::Closed)
    ));
}

/// A pop waiting on an empty queue wakes for a write, and dropping a waiting pop loses nothing.
#[tokio::test(start_paused = true)]
async fn pop_waits_and_is_cancel_safe() {
    let f = Arc::new(atomic(false));
    let waiting = tokio::time::timeout(Duration::from_secs(1), f.pop(|_, _| ())).await;
    assert!(waiting.is_err(), "nothing to pop");
    let consumer = tokio::spawn({
        let f = f.clone();
        async move { f.pop(|p, _| describe_popped(&p)).await }
    });
    tokio::task::yield_now().await;
    f.add(obj("a", 1)).unwrap();
    assert_eq!(consumer.await.unwrap().unwrap(), strs(&["Added a=1"]));
}

/// `wait_for_room` waits while the queue holds `max_queued` objects and wakes once pops bring
/// it down to half, or on close.
#[tokio::test(start_paused = true)]
async fn wait_for_room_bounds_the_queue() {
    let f = Arc::new(RealFifo::<ConfigMap>::new(RealFifoOptions {
        max_queued: Some(4),
        ..Default::default()
    }));
    f.replace(vec![obj("a", 1), obj("b", 2), obj("c", 3)], "1".into())
        .unwrap();
    f.add(obj("d", 4)).unwrap();
    assert_eq!(f.queued_objects(), 4);
    let waiter = tokio::spawn({
        let f = f.clone();
        async move { f.wait_for_room().await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!waiter.is_finished(), "full: the producer waits");
    assert_eq!(pop_now(&f), strs(&["ReplacedAll@1[a=1,b=2,c=3]"]));
    tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("room after the pop")
        .unwrap();

    f.add(obj("e", 5)).unwrap();
    f.add(obj("f", 6)).unwrap();
    f.add(obj("g", 7)).unwrap();
    let waiter = tokio::spawn({
        let f = f.clone();
        async move { f.wait_for_room().await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!waiter.is_finished());
    f.close();
    tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("close wakes the producer")
        .unwrap();

    let unbounded = atomic(false);
    for i in 0..100 {
        unbounded.add(obj(&format!("o{i}"), i)).unwrap();
    }
    tokio::time::timeout(Duration::from_secs(1), unbounded.wait_for_room())
        .await
        .expect("no bound: room at once");
}

/// A batch never exceeds its size, a batch of 0 counts as 1, and resyncs and relists in
/// per-object mode are batched like any delta.
#[test]
fn batch_limits() {
    let f = per_object(vec![obj("k", 1)]);
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.resync().unwrap();
    assert_eq!(pop_batch_now(&f, 0).0, strs(&["Added a=1"]));
    assert_eq!(
        pop_batch_now(&f, UNLIMITED).0,
        strs(&["Added b=2", "Sync k=1"])
    );
    assert!(f.is_empty());
    assert!(
        futures::FutureExt::now_or_never(f.pop(|_, _| ())).is_none(),
        "an empty queue does not pop at once"
    );
}
