//! Ports of client-go's `tools/cache/fifo_test.go` (plus the former `TestFIFO_addIfNotPresent`):
//! same inputs, same expected outputs. client-go's `testFifoObject{name, val}` is a
//! `(String, i64)` keyed by its name.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::object::ExplicitKey;
use kinformer::queue::{Fifo, QueueError};
use kinformer::store::ReplaceStore;
use kube::api::ObjectMeta;

type Obj = (String, i64);

fn fifo() -> Fifo<Obj> {
    Fifo::new(Arc::new(|o: &Obj| Ok(o.0.clone())))
}

fn obj(name: &str, val: i64) -> Obj {
    (name.to_string(), val)
}

async fn pop(f: &Fifo<Obj>) -> Obj {
    f.pop(|o, _| o).await.expect("an item")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_fifo_basic() {
    let f = Arc::new(fifo());
    const AMOUNT: i64 = 500;
    let mut producers = Vec::new();
    for prefix in ["a", "b"] {
        let f = f.clone();
        producers.push(tokio::spawn(async move {
            for i in 0..AMOUNT {
                f.add(obj(&format!("{prefix}{i}"), i + 1)).unwrap();
                tokio::task::yield_now().await;
            }
        }));
    }
    let (mut last_a, mut last_b) = (0, 0);
    for _ in 0..AMOUNT * 2 {
        let (name, v) = pop(&f).await;
        let last = if name.starts_with('a') {
            &mut last_a
        } else {
            &mut last_b
        };
        assert!(v > *last, "{name}={v} out of order, last was {last}");
        *last = v;
    }
    assert_eq!((last_a, last_b), (AMOUNT, AMOUNT));
    for p in producers {
        p.await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn test_fifo_add_update() {
    let f = fifo();
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("foo", 15)).unwrap();
    assert_eq!(f.list(), [obj("foo", 15)]);
    assert_eq!(f.list_keys(), ["foo"]);
    assert_eq!(pop(&f).await.1, 15);
    let second = tokio::time::timeout(Duration::from_millis(50), pop(&f)).await;
    assert!(second.is_err(), "got a second value");
    assert_eq!(f.get(&obj("foo", 0)).unwrap(), None, "item was not removed");
}

#[tokio::test(start_paused = true)]
async fn test_fifo_add_replace() {
    let f = fifo();
    f.add(obj("foo", 10)).unwrap();
    f.replace(vec![obj("foo", 15)], "15".into()).unwrap();
    assert_eq!(pop(&f).await.1, 15);
    let second = tokio::time::timeout(Duration::from_millis(50), pop(&f)).await;
    assert!(second.is_err(), "got a second value");
    assert_eq!(f.get(&obj("foo", 0)).unwrap(), None, "item was not removed");
}

#[tokio::test]
async fn test_fifo_detect_line_jumpers() {
    let f = fifo();
    f.add(obj("foo", 10)).unwrap();
    f.add(obj("bar", 1)).unwrap();
    f.add(obj("foo", 11)).unwrap();
    f.add(obj("foo", 13)).unwrap();
    f.add(obj("zab", 30)).unwrap();
    assert_eq!(pop(&f).await.1, 13);
    f.add(obj("foo", 14)).unwrap(); // foo must not jump back in line
    assert_eq!(pop(&f).await.1, 1);
    assert_eq!(pop(&f).await.1, 30);
    assert_eq!(pop(&f).await.1, 14);
}

#[tokio::test]
async fn test_fifo_add_if_not_present() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.add_if_not_present(obj("b", 3)).unwrap();
    f.add_if_not_present(obj("c", 4)).unwrap();
    assert_eq!(f.len(), 3);
    for expected in [1, 2, 4] {
        assert_eq!(pop(&f).await.1, expected);
    }
}

#[tokio::test]
async fn test_fifo_has_synced() {
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
async fn test_fifo_pop_should_unblock_when_closed() {
    let f = Arc::new(fifo());
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

// Beyond client-go.

#[tokio::test]
async fn deleted_item_is_not_popped_and_counts_towards_sync() {
    let f = fifo();
    f.replace(vec![obj("a", 1), obj("b", 2)], "1".into())
        .unwrap();
    f.delete(&obj("a", 0)).unwrap();
    assert_eq!(f.list_keys(), ["b"]);
    assert_eq!(f.len(), 1);
    let (o, initial) = f.pop(|o, initial| (o, initial)).await.unwrap();
    assert_eq!(o, obj("b", 2));
    assert!(initial);
    assert!(f.has_synced());
}

#[tokio::test]
async fn re_added_after_delete_keeps_its_slot() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.delete(&obj("a", 0)).unwrap();
    f.add(obj("a", 3)).unwrap();
    assert_eq!(f.list_keys(), ["a", "b"]);
    assert_eq!(pop(&f).await, obj("a", 3));
    assert_eq!(pop(&f).await, obj("b", 2));
}

#[test]
fn replace_discards_pending_and_keeps_list_order() {
    let f = fifo();
    f.add(obj("x", 1)).unwrap();
    f.replace(vec![obj("c", 1), obj("a", 2), obj("c", 3)], "1".into())
        .unwrap();
    assert_eq!(f.list(), [obj("c", 3), obj("a", 2)]);
    assert_eq!(f.get_by_key("x"), None);
}

#[test]
fn key_errors_change_nothing() {
    let f: Fifo<Obj> = Fifo::new(Arc::new(|o: &Obj| {
        if o.0.is_empty() {
            Err(kinformer::KeyError::MissingName { namespace: None })
        } else {
            Ok(o.0.clone())
        }
    }));
    f.add(obj("a", 1)).unwrap();
    assert!(matches!(f.add(obj("", 1)), Err(QueueError::Key(_))));
    assert!(matches!(f.delete(&obj("", 1)), Err(QueueError::Key(_))));
    assert!(matches!(
        f.replace(vec![obj("b", 1), obj("", 2)], "1".into()),
        Err(QueueError::Key(_))
    ));
    assert_eq!(f.list(), [obj("a", 1)]);
}

#[tokio::test]
async fn explicit_keys_and_objects_constructors() {
    let keys = Fifo::for_explicit_keys();
    keys.add(ExplicitKey("ns/a".into())).unwrap();
    assert_eq!(keys.list_keys(), ["ns/a"]);

    let objects: Fifo<Arc<ConfigMap>> = Fifo::for_objects();
    let cm = Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some("cfg".into()),
            namespace: Some("ns".into()),
            ..Default::default()
        },
        ..Default::default()
    });
    let store: &dyn ReplaceStore<ConfigMap, Error = QueueError> = &objects;
    store.add(cm.clone()).unwrap();
    store.resync().unwrap();
    assert_eq!(objects.list_keys(), ["ns/cfg"]);
    store.delete(cm.clone()).unwrap();
    assert!(objects.is_empty());
    store.replace(vec![cm.clone()], "2".into()).unwrap();
    let popped = objects.pop(|o, _| o).await.unwrap();
    assert!(Arc::ptr_eq(&popped, &cm));
    assert!(matches!(
        store.add(Arc::new(ConfigMap::default())),
        Err(QueueError::Key(_))
    ));
}
