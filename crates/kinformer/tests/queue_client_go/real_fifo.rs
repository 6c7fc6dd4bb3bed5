//! Ports of client-go's `tools/cache/the_real_fifo_test.go` for a RealFifo in per-object mode
//! (`AtomicEvents` off): same inputs, same expected outputs. The atomic and batch cases are in
//! `real_fifo_atomic.rs`. client-go's `testFifoObject{name, val}` is a ConfigMap named `name`
//! with `data.val = val`; entries are described as `"<type> <name>=<val>"`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::queue::{Popped, RealFifo, RealFifoMode, RealFifoOptions};
use kinformer::store::ReflectorStore;

use crate::delta_fifo_support::obj;
use crate::real_fifo_support::*;

fn val_of(p: &Popped<ConfigMap>) -> (String, i64) {
    let Popped::Deltas(d) = p else {
        panic!("expected a delta")
    };
    let o = d[0].delta.object.object().unwrap();
    (
        o.metadata.name.clone().unwrap(),
        o.data.as_ref().unwrap()["val"].parse().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_real_fifo_basic() {
    let f = Arc::new(per_object(vec![]));
    const AMOUNT: i64 = 500;
    let producers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|prefix| {
            let f = f.clone();
            tokio::spawn(async move {
                for i in 0..AMOUNT {
                    f.add(obj(&format!("{prefix}{i}"), i + 1)).unwrap();
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let (mut last_a, mut last_b) = (0, 0);
    for _ in 0..AMOUNT * 2 {
        let (name, v) = f.pop(|p, _| val_of(&p)).await.unwrap();
        let last = if name.starts_with('a') {
            &mut last_a
        } else {
            &mut last_b
        };
        assert!(v > *last, "{name}={v} out of order, last was {last}");
        *last = v;
    }
    for p in producers {
        p.await.unwrap();
    }
}

#[test]
fn test_real_fifo_replace_with_delete_delta_in() {
    let old = obj("foo", 1);
    let f = per_object(vec![old.clone()]);
    f.delete(old).unwrap();
    f.replace(vec![obj("foo", 2)], String::new()).unwrap();
    assert_eq!(drain(&f), strs(&["Deleted foo=1", "Replaced foo=2"]));
}

#[test]
fn test_real_fifow_replace_makes_deletions_for_objects_only_in_queue() {
    let o = obj("foo", 2);
    let o2 = obj("foo", 3);
    type Ops = Box<dyn Fn(&RealFifo<ConfigMap>)>;
    let cases: Vec<(&str, Ops, Vec<&str>)> = vec![
        (
            "Added object should be deleted on Replace",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    f.replace(vec![], "0".into()).unwrap();
                }
            }),
            vec!["Added foo=2", "Deleted tombstone(foo, foo=2)"],
        ),
        (
            "Deleted object should have only a single Delete",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    f.delete(o.clone()).unwrap();
                    f.replace(vec![], "0".into()).unwrap();
                }
            }),
            vec!["Added foo=2", "Deleted foo=2"],
        ),
        (
            "Synced objects should have a single delete",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    f.replace(vec![o.clone()], "0".into()).unwrap();
                    f.replace(vec![o.clone()], "0".into()).unwrap();
                    f.replace(vec![], "0".into()).unwrap();
                }
            }),
            vec![
                "Added foo=2",
                "Replaced foo=2",
                "Replaced foo=2",
                "Deleted tombstone(foo, foo=2)",
            ],
        ),
        (
            "Added objects should have a single delete on multiple Replaces",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    f.replace(vec![], "0".into()).unwrap();
                    f.replace(vec![], "1".into()).unwrap();
                }
            }),
            vec!["Added foo=2", "Deleted tombstone(foo, foo=2)"],
        ),
        (
            "Added and deleted and added object should be deleted",
            Box::new({
                let (o, o2) = (o.clone(), o2.clone());
                move |f| {
                    f.add(o.clone()).unwrap();
                    f.delete(o.clone()).unwrap();
                    f.add(o2.clone()).unwrap();
                    f.replace(vec![], "0".into()).unwrap();
                }
            }),
            vec![
                "Added foo=2",
                "Deleted foo=2",
                "Added foo=3",
                "Deleted tombstone(foo, foo=3)",
            ],
        ),
        (
            "Bookmark object should not be added without atomic",
            Box::new(|f| {
                f.bookmark("123");
                f.replace(vec![], "0".into()).unwrap();
                f.replace(vec![], "1".into()).unwrap();
            }),
            vec![],
        ),
    ];
    for (name, ops, expected) in cases {
        let f = per_object(vec![]);
        ops(&f);
        assert_eq!(drain(&f), strs(&expected), "{name}");
        assert!(f.is_empty(), "{name}");
    }
}

#[tokio::test(start_paused = true)]
async fn test_real_fifo_add_update() {
    let f = Arc::new(per_object(vec![]));
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("foo", 12)).unwrap();
    f.delete(obj("foo", 15)).unwrap();
    assert_eq!(f.len(), 3, "every change is queued");
    let consumer = tokio::spawn({
        let f = f.clone();
        async move {
            let mut got = Vec::new();
            while let Ok(d) = f.pop(|p, _| describe_popped(&p)).await {
                got.extend(d);
            }
            got
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(f.is_empty());
    f.close();
    assert_eq!(
        consumer.await.unwrap(),
        strs(&["Added foo=10", "Updated foo=12", "Deleted foo=15"])
    );
}

#[test]
fn test_real_fifo_transformer() {
    let calls = Arc::new(AtomicUsize::new(0));
    let f = RealFifo::new(RealFifoOptions {
        mode: RealFifoMode::PerObject {
            known_objects: Some(Arc::new(crate::delta_fifo_support::Literal(vec![]))),
        },
        transformer: Some(kinformer::Transform::new({
            let calls = calls.clone();
            move |o: &mut ConfigMap| {
                calls.fetch_add(1, Ordering::SeqCst);
                let v: i64 = o.data.as_ref().unwrap()["val"].parse().unwrap();
                o.data
                    .as_mut()
                    .unwrap()
                    .insert("val".into(), (v * 100).to_string());
            }
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
    // Once per incoming object; tombstones carry the transformed object and are not transformed.
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    assert_eq!(
        drain(&f),
        strs(&[
            "Added foo=1000",
            "Added bar=1100",
            "Updated foo=1200",
            "Deleted foo=1500",
            "Deleted tombstone(bar, bar=1100)",
            "Added bar=1600",
            "Deleted tombstone(bar, bar=1600)",
        ])
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        5,
        "popping transforms nothing"
    );
}

#[test]
fn test_real_fifo_enqueueing_no_lister() {
    let f = per_object(vec![]);
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("bar", 15)).unwrap();
    f.add(obj("qux", 17)).unwrap();
    f.delete(obj("qux", 18)).unwrap();
    // RealFifo queues everything, the deletion of an unknown key included.
    f.delete(obj("baz", 20)).unwrap();
    assert_eq!(
        drain(&f),
        strs(&[
            "Added foo=10",
            "Updated bar=15",
            "Added qux=17",
            "Deleted qux=18",
            "Deleted baz=20"
        ])
    );
}

#[test]
fn test_real_fifo_enqueueing_with_lister() {
    let f = per_object(vec![obj("foo", 5), obj("bar", 6), obj("baz", 7)]);
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("bar", 15)).unwrap();
    f.delete(obj("baz", 20)).unwrap();
    assert_eq!(
        drain(&f),
        strs(&["Added foo=10", "Updated bar=15", "Deleted baz=20"])
    );
    assert!(f.is_empty());
}

#[test]
fn test_real_fifo_add_replace() {
    let f = per_object(vec![]);
    f.add(obj("foo", 10)).unwrap();
    f.replace(vec![obj("foo", 15)], "0".into()).unwrap();
    assert_eq!(drain(&f), strs(&["Added foo=10", "Replaced foo=15"]));
    assert!(f.is_empty(), "item did not get removed");
}

#[test]
fn test_real_fifo_resync_non_existing() {
    let f = per_object(vec![obj("foo", 5)]);
    f.delete(obj("foo", 10)).unwrap();
    f.resync().unwrap();
    assert_eq!(drain(&f), strs(&["Deleted foo=10"]));
}

#[test]
fn test_real_fifo_resync() {
    let f = per_object(vec![obj("foo", 5)]);
    f.resync().unwrap();
    assert_eq!(drain(&f), strs(&["Sync foo=5"]));
}

#[test]
fn test_real_fifo_delete_existing_non_propagated() {
    let f = per_object(vec![]);
    f.add(obj("foo", 5)).unwrap();
    f.delete(obj("foo", 6)).unwrap();
    assert_eq!(drain(&f), strs(&["Added foo=5", "Deleted foo=6"]));
}

#[test]
fn test_real_fifo_replace_makes_deletions() {
    let known = || vec![obj("foo", 5), obj("bar", 6), obj("baz", 7)];

    // A pre-existing Delete.
    let f = per_object(known());
    f.delete(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        drain(&f),
        strs(&[
            "Deleted baz=10",
            "Deleted tombstone(bar, bar=6)",
            "Replaced foo=5"
        ])
    );

    // An Add instead of a Delete.
    let f = per_object(known());
    f.add(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        drain(&f),
        strs(&[
            "Added baz=10",
            "Deleted tombstone(baz, baz=10)",
            "Deleted tombstone(bar, bar=6)",
            "Replaced foo=5",
        ])
    );

    // Deleted and recreated in the queue, then deleted by the relist.
    let f = per_object(known());
    f.delete(obj("bar", 6)).unwrap();
    f.add(obj("bar", 100)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        drain(&f),
        strs(&[
            "Deleted bar=6",
            "Added bar=100",
            "Deleted tombstone(bar, bar=100)",
            "Deleted tombstone(baz, baz=7)",
            "Replaced foo=5",
        ])
    );

    // Synced first, so the deletion carries the latest version.
    let f = per_object(known());
    f.replace(vec![obj("bar", 100), obj("foo", 5)], "0".into())
        .unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        drain(&f),
        strs(&[
            "Deleted tombstone(baz, baz=7)",
            "Replaced bar=100",
            "Replaced foo=5",
            "Deleted tombstone(bar, bar=100)",
            "Replaced foo=5",
        ])
    );

    // No known objects.
    let f = per_object(vec![]);
    f.add(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        drain(&f),
        strs(&[
            "Added baz=10",
            "Deleted tombstone(baz, baz=10)",
            "Replaced foo=5"
        ])
    );
}

#[test]
fn test_real_fifo_replace_makes_deletions_replaced() {
    let f = per_object(vec![obj("foo", 5), obj("bar", 6), obj("baz", 7)]);
    f.delete(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 6)], "0".into()).unwrap();
    assert_eq!(
        drain(&f),
        strs(&[
            "Deleted baz=10",
            "Deleted tombstone(bar, bar=6)",
            "Replaced foo=6"
        ])
    );
}

#[test]
fn test_real_fifo_update_resync_race() {
    let f = per_object(vec![obj("foo", 5)]);
    f.update(obj("foo", 6)).unwrap();
    f.resync().unwrap();
    assert_eq!(drain(&f), strs(&["Updated foo=6"]));
}

#[test]
fn test_real_fifo_has_synced_correct_on_deletion() {
    let f = per_object(vec![obj("foo", 5), obj("bar", 6), obj("baz", 7)]);
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    for expected in [
        "Deleted tombstone(bar, bar=6)",
        "Deleted tombstone(baz, baz=7)",
        "Replaced foo=5",
    ] {
        assert!(!f.has_synced());
        assert_eq!(pop2_now(&f), (strs(&[expected]), true));
    }
    assert!(f.has_synced());
}

#[test]
fn test_real_fifo_detect_line_jumpers() {
    let f = per_object(vec![]);
    f.add(obj("foo", 10)).unwrap();
    f.add(obj("bar", 1)).unwrap();
    f.add(obj("foo", 11)).unwrap();
    f.add(obj("foo", 13)).unwrap();
    f.add(obj("zab", 30)).unwrap();
    assert_eq!(pop_now(&f), strs(&["Added foo=10"]));
    f.add(obj("foo", 14)).unwrap(); // foo doesn't jump back in line
    assert_eq!(
        drain(&f),
        strs(&[
            "Added bar=1",
            "Added foo=11",
            "Added foo=13",
            "Added zab=30",
            "Added foo=14"
        ])
    );
}

/// client-go's `keyOf` is internal; here every entry carries its key: the object's, or the
/// tombstone's own.
#[test]
fn test_real_fifo_key_of() {
    let f = per_object(vec![obj("B", 1)]);
    f.add(obj("A", 1)).unwrap();
    f.replace(vec![obj("A", 1)], String::new()).unwrap();
    let keys: Vec<String> = std::iter::from_fn(|| {
        (!f.is_empty()).then(|| {
            futures::FutureExt::now_or_never(f.pop(|p, _| match p {
                Popped::Deltas(d) => d[0].key.clone(),
                _ => panic!("a delta"),
            }))
            .unwrap()
            .unwrap()
        })
    })
    .collect();
    assert_eq!(keys, ["A", "B", "A"]);
}

#[test]
fn test_real_fifo_has_synced() {
    type Action = fn(&RealFifo<ConfigMap>);
    let replace_ab: Action = |f| {
        f.replace(vec![obj("a", 1), obj("b", 2)], "0".into())
            .unwrap()
    };
    let pop: Action = |f| {
        pop_now(f);
    };
    let cases: Vec<(Vec<Action>, bool)> = vec![
        (vec![], false),
        (vec![|f| f.add(obj("a", 1)).unwrap()], true),
        (vec![|f| f.replace(vec![], "0".into()).unwrap()], true),
        (vec![replace_ab], false),
        (vec![replace_ab, pop], false),
        (vec![replace_ab, pop, pop], true),
        // Every event is delivered: a listed twice must be popped twice.
        (
            vec![
                |f| {
                    f.replace(vec![obj("a", 1), obj("a", 2)], "0".into())
                        .unwrap()
                },
                pop,
            ],
            false,
        ),
        (
            vec![
                |f| {
                    f.replace(vec![obj("a", 1), obj("a", 2)], "0".into())
                        .unwrap()
                },
                pop,
                pop,
            ],
            true,
        ),
    ];
    for (i, (actions, expected)) in cases.into_iter().enumerate() {
        let f = per_object(vec![]);
        for action in actions {
            action(&f);
        }
        assert_eq!(f.has_synced(), expected, "case {i}");
        assert_eq!(*f.synced_watch().borrow(), expected, "case {i}");
    }
}

#[tokio::test(start_paused = true)]
async fn test_real_fifo_pop_should_unblock_when_closed() {
    let f = Arc::new(per_object(vec![obj("foo", 5)]));
    let pops: Vec<_> = (0..10)
        .map(|_| {
            let f = f.clone();
            tokio::spawn(async move { f.pop(|_, _| ()).await })
        })
        .collect();
    tokio::task::yield_now().await;
    f.close();
    for p in pops {
        let r = tokio::time::timeout(std::time::Duration::from_millis(500), p)
            .await
            .expect("pop returned after close")
            .unwrap();
        assert!(r.is_err());
    }
}

/// The queue as a Reflector's store: the trait's writes reach the same queue.
#[test]
fn reflector_store_writes_reach_the_queue() {
    let f = per_object(vec![]);
    ReflectorStore::add(&f, obj("a", 1)).unwrap();
    ReflectorStore::delete(&f, obj("a", 2)).unwrap();
    ReflectorStore::replace_begin(&f);
    ReflectorStore::replace_part(&f, vec![obj("b", 3)]).unwrap();
    ReflectorStore::replace_end(&f, "5".into()).unwrap();
    assert_eq!(
        drain(&f),
        strs(&["Added a=1", "Deleted a=2", "Replaced b=3"])
    );
}
