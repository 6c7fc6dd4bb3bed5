//! The plain work queue, ported from client-go `util/workqueue/queue_test.go` (test names
//! kept, in snake case). Time-dependent ones run on paused Tokio time.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kinformer::workqueue::{Queue, QueueConfig, QueueStorage};
use parking_lot::Mutex;

#[derive(Clone, Copy)]
enum Shutdown {
    Plain,
    WithDrain,
}

async fn shut(q: &Queue<String>, how: Shutdown) {
    match how {
        Shutdown::Plain => q.shut_down(),
        Shutdown::WithDrain => q.shut_down_with_drain().await,
    }
}

/// client-go `TestBasic`: 50 producers, 10 consumers; an add after shutdown is never seen,
/// every consumer ends, and the queue ends empty.
#[tokio::test(start_paused = true)]
async fn test_basic() {
    for how in [Shutdown::Plain, Shutdown::WithDrain] {
        let q: Queue<String> = Queue::new();
        let mut producers = Vec::new();
        for i in 0..50 {
            let q = q.clone();
            producers.push(tokio::spawn(async move {
                for j in 0..50 {
                    q.add(format!("{i}"));
                    let _ = j;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }));
        }
        let mut consumers = Vec::new();
        for _ in 0..10 {
            let q = q.clone();
            consumers.push(tokio::spawn(async move {
                let mut seen = Vec::new();
                while let Some(item) = q.get().await {
                    seen.push(item.clone());
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    q.done(&item);
                }
                seen
            }));
        }
        for p in producers {
            p.await.unwrap();
        }
        shut(&q, how).await;
        q.add("added after shutdown!".to_owned());
        for c in consumers {
            let seen = c.await.unwrap();
            assert!(!seen.iter().any(|s| s == "added after shutdown!"));
        }
        assert_eq!(q.len(), 0);
    }
}

/// client-go `TestAddWhileProcessing`: consumers re-add items they hold; the queue neither
/// loses a wake-up nor deadlocks, and ends empty.
#[tokio::test(start_paused = true)]
async fn test_add_while_processing() {
    for how in [Shutdown::Plain, Shutdown::WithDrain] {
        let q: Queue<String> = Queue::new();
        let mut producers = Vec::new();
        for i in 0..50 {
            let q = q.clone();
            producers.push(tokio::spawn(async move { q.add(format!("{i}")) }));
        }
        let finished = Arc::new(AtomicUsize::new(0));
        let mut consumers = Vec::new();
        for _ in 0..10 {
            let q = q.clone();
            let finished = finished.clone();
            consumers.push(tokio::spawn(async move {
                let mut counters = std::collections::HashMap::<String, u32>::new();
                while let Some(item) = q.get().await {
                    let n = counters.entry(item.clone()).or_default();
                    if *n < 1 {
                        q.add(item.clone());
                        *n += 1;
                    } else {
                        finished.fetch_add(1, Ordering::SeqCst);
                    }
                    q.done(&item);
                }
            }));
        }
        for p in producers {
            p.await.unwrap();
        }
        shut(&q, how).await;
        for c in consumers {
            c.await.unwrap();
        }
        assert_eq!(q.len(), 0);
        // Every item was processed once; re-adds after shutdown were ignored.
        assert!(finished.load(Ordering::SeqCst) <= 50);
    }
}

/// client-go `TestLen`: duplicates are not counted.
#[test]
fn test_len() {
    let q: Queue<&str> = Queue::new();
    q.add("foo");
    assert_eq!(q.len(), 1);
    q.add("bar");
    assert_eq!(q.len(), 2);
    q.add("foo");
    assert_eq!(q.len(), 2);
}

/// client-go `TestReinsert`: an item added while processing comes back after `done`.
#[tokio::test]
async fn test_reinsert() {
    let q: Queue<&str> = Queue::new();
    q.add("foo");
    let i = q.get().await.unwrap();
    assert_eq!(i, "foo");
    q.add(i);
    q.done(&i);
    let i = q.get().await.unwrap();
    assert_eq!(i, "foo");
    q.done(&i);
    assert_eq!(q.len(), 0);
}

/// A storage that records `touch` calls (client-go's test `tracingQueue`).
struct Tracing {
    items: std::collections::VecDeque<&'static str>,
    touched: Arc<Mutex<Vec<&'static str>>>,
}

impl QueueStorage<&'static str> for Tracing {
    fn touch(&mut self, item: &&'static str) {
        self.touched.lock().push(item);
    }
    fn push(&mut self, item: &'static str) {
        self.items.push_back(item);
    }
    fn pop(&mut self) -> Option<&'static str> {
        self.items.pop_front()
    }
    fn len(&self) -> usize {
        self.items.len()
    }
}

fn tracing_queue() -> (Queue<&'static str>, Arc<Mutex<Vec<&'static str>>>) {
    let touched = Arc::new(Mutex::new(Vec::new()));
    let q = Queue::with_config(QueueConfig {
        storage: Some(Box::new(Tracing {
            items: Default::default(),
            touched: touched.clone(),
        })),
        ..QueueConfig::default()
    });
    (q, touched)
}

/// client-go `TestCollapse`: two adds of a waiting item are one, and the store is touched.
#[tokio::test]
async fn test_collapse() {
    let (q, touched) = tracing_queue();
    q.add("bar");
    q.add("bar");
    let i = q.get().await.unwrap();
    assert_eq!(i, "bar");
    q.done(&i);
    assert_eq!(q.len(), 0);
    assert_eq!(*touched.lock(), vec!["bar"]);
}

/// client-go `TestCollapseWhileProcessing`: an item re-added while processing is not handed to
/// a second worker until `done`, and a processing item is not touched.
#[tokio::test(start_paused = true)]
async fn test_collapse_while_processing() {
    let (q, touched) = tracing_queue();
    q.add("foo");
    let i = q.get().await.unwrap();
    assert_eq!(i, "foo");
    q.add("foo");
    q.add("foo");
    let second = {
        let q = q.clone();
        tokio::spawn(async move {
            let j = q.get().await.unwrap();
            q.done(&j);
            j
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !second.is_finished(),
        "the second worker got foo while it was processing"
    );
    q.done(&i);
    assert_eq!(second.await.unwrap(), "foo");
    assert_eq!(q.len(), 0);
    assert!(touched.lock().is_empty());
}

/// client-go's drain tests' setup: "foo" and "bar" taken by workers (not done), then
/// `shut_down_with_drain` running in a task, returned once the queue says it is shutting down.
async fn draining_with_two_in_flight() -> (
    Queue<&'static str>,
    &'static str,
    &'static str,
    tokio::task::JoinHandle<()>,
) {
    let q: Queue<&str> = Queue::new();
    q.add("foo");
    q.add("bar");
    let a = q.get().await.unwrap();
    let b = q.get().await.unwrap();
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain().await })
    };
    while !q.shutting_down() {
        tokio::task::yield_now().await;
    }
    (q, a, b, drain)
}

/// client-go `TestQueueDrainageUsingShutDownWithDrain`: the drain waits for both `done`s.
#[tokio::test(start_paused = true)]
async fn test_queue_drainage_using_shut_down_with_drain() {
    let (q, a, b, drain) = draining_with_two_in_flight().await;
    assert_eq!(q.get().await, None);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!drain.is_finished(), "drain returned with items in flight");
    q.done(&a);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !drain.is_finished(),
        "drain returned with one item in flight"
    );
    q.done(&b);
    drain.await.unwrap();
}

/// client-go `TestNoQueueDrainageUsingShutDown`: `shut_down` does not wait for workers.
#[tokio::test]
async fn test_no_queue_drainage_using_shut_down() {
    let q: Queue<&str> = Queue::new();
    q.add("foo");
    q.add("bar");
    let _a = q.get().await.unwrap();
    let _b = q.get().await.unwrap();
    q.shut_down();
    assert!(q.shutting_down());
    assert_eq!(q.get().await, None);
}

/// client-go `TestForceQueueShutdownUsingShutDown`: `shut_down` releases a waiting drain.
#[tokio::test(start_paused = true)]
async fn test_force_queue_shutdown_using_shut_down() {
    let (q, _a, _b, drain) = draining_with_two_in_flight().await;
    assert_eq!(q.get().await, None);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!drain.is_finished());
    q.shut_down();
    drain.await.unwrap();
}

/// client-go `TestQueueDrainageUsingShutDownWithDrainWithDirtyItem`: after `get` reported
/// shutdown, `done` of a dirty item queues it again and the next `get` returns it.
#[tokio::test(start_paused = true)]
async fn test_queue_drainage_using_shut_down_with_drain_with_dirty_item() {
    let q: Queue<&str> = Queue::new();
    q.add("foo");
    let foo = q.get().await.unwrap();
    q.add("foo");
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain().await })
    };
    while !q.shutting_down() {
        tokio::task::yield_now().await;
    }
    assert_eq!(q.get().await, None);
    q.done(&foo);
    let again = q.get().await;
    assert_eq!(
        again,
        Some("foo"),
        "a dirty item is handed out again during drain"
    );
    assert!(!drain.is_finished());
    q.done(&"foo");
    assert_eq!(q.get().await, None);
    drain.await.unwrap();
}

/// client-go `TestGarbageCollection`: a processed item is not kept alive by the queue.
#[tokio::test]
async fn test_garbage_collection() {
    #[derive(Debug)]
    struct Big(#[allow(dead_code)] u64);
    #[derive(Clone, Debug)]
    struct Key(Arc<Big>);
    impl PartialEq for Key {
        fn eq(&self, o: &Self) -> bool {
            Arc::ptr_eq(&self.0, &o.0)
        }
    }
    impl Eq for Key {}
    impl std::hash::Hash for Key {
        fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
            (Arc::as_ptr(&self.0) as usize).hash(h)
        }
    }
    let q: Queue<Key> = Queue::new();
    let obj = Arc::new(Big(1));
    let weak = Arc::downgrade(&obj);
    q.add(Key(obj));
    let k = q.get().await.unwrap();
    q.done(&k);
    drop(k);
    assert!(
        weak.upgrade().is_none(),
        "the queue kept a processed item alive"
    );
}

/// Not in client-go: `shut_down_with_drain` waits only for in-flight items, not queued ones.
#[tokio::test]
async fn drain_returns_with_items_still_queued() {
    let q: Queue<&str> = Queue::new();
    q.add("foo");
    q.add("bar");
    q.shut_down_with_drain().await;
    assert_eq!(q.len(), 2);
    assert_eq!(q.get().await, Some("foo"));
}

/// Not in client-go: `get` is cancellation-safe; a dropped get takes nothing.
#[tokio::test(start_paused = true)]
async fn cancelled_get_loses_nothing() {
    let q: Queue<&str> = Queue::new();
    let waiting = {
        let q = q.clone();
        tokio::spawn(async move { q.get().await })
    };
    tokio::task::yield_now().await;
    waiting.abort();
    q.add("foo");
    assert!(
        tokio::time::timeout(Duration::from_secs(1), q.get())
            .await
            .is_ok_and(|i| i == Some("foo"))
    );
    // A get dropped by a timeout while another waits: the other still gets the item.
    let other = {
        let q = q.clone();
        tokio::spawn(async move { q.get().await })
    };
    let _ = tokio::time::timeout(Duration::from_millis(5), q.get()).await;
    q.add("bar");
    assert_eq!(other.await.unwrap(), Some("bar"));
}

/// client-go's `Done` wakes the drain waiter whenever the processing set changes: when the
/// last item being processed had been re-added meanwhile, `done` queues it again and the
/// drain (which waits for processing items only) returns, although the item is queued.
#[tokio::test(start_paused = true)]
async fn drain_returns_when_the_last_processing_item_was_re_added() {
    let q: Queue<&str> = Queue::new();
    q.add("foo");
    let foo = q.get().await.unwrap();
    q.add("foo"); // dirty while processing
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain().await })
    };
    while !q.shutting_down() {
        tokio::task::yield_now().await;
    }
    assert!(!drain.is_finished(), "foo is still being processed");
    q.done(&foo);
    tokio::time::timeout(Duration::from_secs(60), drain)
        .await
        .expect("the drain must return once nothing is processing")
        .unwrap();
    assert_eq!(q.processing_len(), 0);
    assert_eq!(q.len(), 1, "the re-added foo is queued, not processing");
    assert_eq!(q.get().await, Some("foo"));
}
