//! Ports of client-go's `shared_informer_test.go` scenarios, on paused tokio time.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::queue_mode::config;
use crate::support::{FakeControllerSource, caught_up, pod, wait_until};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kinformer::informer::{
    Event, HandlerOptions, InformerError, ResourceEventHandler, ResourceEventHandlerFuncs,
    SharedIndexInformer,
};
use kinformer::store::Indexers;
use kinformer::wait::wait_for_cache_sync;
use kinformer::{InformerConfig, ObjectOrTombstone, Transform};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// client-go's `testListener`: records the names it is called with on add and update.
#[derive(Default)]
struct TestListener {
    received: Mutex<Vec<String>>,
}

impl TestListener {
    fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
    fn names(&self) -> BTreeSet<String> {
        self.received.lock().iter().cloned().collect()
    }
    fn count(&self) -> usize {
        self.received.lock().len()
    }
    fn reset(&self) {
        self.received.lock().clear();
    }
    fn handle(&self, p: &Pod) {
        self.received.lock().push(p.metadata.name.clone().unwrap());
    }
}

impl ResourceEventHandler<Pod> for TestListener {
    fn on_add(&self, obj: &Arc<Pod>, _: bool) {
        self.handle(obj)
    }
    fn on_update(&self, _: &Arc<Pod>, new: &Arc<Pod>) {
        self.handle(new)
    }
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn informer(source: &FakeControllerSource, resync: Duration) -> SharedIndexInformer<Pod> {
    informer_with(source, config().resync_period(resync))
}

fn informer_with(
    source: &FakeControllerSource,
    config: InformerConfig<Pod>,
) -> SharedIndexInformer<Pod> {
    SharedIndexInformer::builder(source.clone())
        .config(config)
        .build()
}

struct Running {
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

fn run(informer: &SharedIndexInformer<Pod>) -> Running {
    let cancel = CancellationToken::new();
    let i = informer.clone();
    let c = cancel.clone();
    Running {
        cancel,
        task: tokio::spawn(async move { i.run(c).await }),
    }
}

impl Running {
    async fn stop(self) {
        self.cancel.cancel();
        self.task.await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn listener_resync_periods() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    let informer = informer(&source, Duration::from_secs(1));
    let l1 = TestListener::new();
    let l2 = TestListener::new();
    let l3 = TestListener::new();
    informer
        .add_event_handler_with(
            l1.clone(),
            HandlerOptions::default().resync_period(Duration::ZERO),
        )
        .unwrap();
    informer
        .add_event_handler_with(
            l2.clone(),
            HandlerOptions::default().resync_period(Duration::from_secs(2)),
        )
        .unwrap();
    informer
        .add_event_handler_with(
            l3.clone(),
            HandlerOptions::default().resync_period(Duration::from_secs(3)),
        )
        .unwrap();
    let running = run(&informer);
    caught_up(&informer).await;
    for l in [&l1, &l2, &l3] {
        assert_eq!(l.names(), set(&["pod1", "pod2"]));
        l.reset();
    }
    // advance so listener2 gets a resync
    tokio::time::sleep(Duration::from_secs(2) - Duration::from_millis(1)).await;
    caught_up(&informer).await;
    assert_eq!(l2.names(), set(&["pod1", "pod2"]));
    assert_eq!(l1.count(), 0);
    assert_eq!(l3.count(), 0);
    for l in [&l1, &l2, &l3] {
        l.reset();
    }
    // advance so listener3 gets a resync
    tokio::time::sleep(Duration::from_secs(1) - Duration::from_millis(1)).await;
    caught_up(&informer).await;
    assert_eq!(l3.names(), set(&["pod1", "pod2"]));
    assert_eq!(l1.count(), 0);
    assert_eq!(l2.count(), 0);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn resync_check_period() {
    let source = FakeControllerSource::new();
    let informer = informer(&source, Duration::from_secs(12 * 3600));
    let h1 = informer
        .add_event_handler_with(
            TestListener::new(),
            HandlerOptions::default().resync_period(Duration::ZERO),
        )
        .unwrap();
    assert_eq!(
        informer.resync_check_period(),
        Duration::from_secs(12 * 3600)
    );
    assert_eq!(h1.resync_period(), Duration::ZERO);

    let h2 = informer
        .add_event_handler_with(
            TestListener::new(),
            HandlerOptions::default().resync_period(Duration::from_secs(60)),
        )
        .unwrap();
    assert_eq!(informer.resync_check_period(), Duration::from_secs(60));
    assert_eq!(h1.resync_period(), Duration::ZERO);
    assert_eq!(h2.resync_period(), Duration::from_secs(60));

    let h3 = informer
        .add_event_handler_with(
            TestListener::new(),
            HandlerOptions::default().resync_period(Duration::from_secs(55)),
        )
        .unwrap();
    assert_eq!(informer.resync_check_period(), Duration::from_secs(55));
    assert_eq!(h1.resync_period(), Duration::ZERO);
    assert_eq!(h2.resync_period(), Duration::from_secs(60));
    assert_eq!(h3.resync_period(), Duration::from_secs(55));

    let h4 = informer
        .add_event_handler_with(
            TestListener::new(),
            HandlerOptions::default().resync_period(Duration::from_secs(5)),
        )
        .unwrap();
    assert_eq!(informer.resync_check_period(), Duration::from_secs(5));
    assert_eq!(h1.resync_period(), Duration::ZERO);
    assert_eq!(h2.resync_period(), Duration::from_secs(60));
    assert_eq!(h3.resync_period(), Duration::from_secs(55));
    assert_eq!(h4.resync_period(), Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn resync_period_rules_after_start_and_minimum() {
    let source = FakeControllerSource::new();
    let informer = informer(&source, Duration::from_secs(10));
    // below the minimum of 1s → raised to 1s, and lowers the check period before start
    let h = informer
        .add_event_handler_with(
            TestListener::new(),
            HandlerOptions::default().resync_period(Duration::from_millis(10)),
        )
        .unwrap();
    assert_eq!(h.resync_period(), Duration::from_secs(1));
    assert_eq!(informer.resync_check_period(), Duration::from_secs(1));
    let running = run(&informer);
    caught_up(&informer).await;
    // informer created with period 0 never resyncs: covered below; after start a smaller
    // period cannot lower the check period any more
    let informer2 = self::informer(&source, Duration::from_secs(30));
    let running2 = run(&informer2);
    caught_up(&informer2).await;
    let late = informer2
        .add_event_handler_with(
            TestListener::new(),
            HandlerOptions::default().resync_period(Duration::from_secs(2)),
        )
        .unwrap();
    assert_eq!(late.resync_period(), Duration::from_secs(30));
    assert_eq!(informer2.resync_check_period(), Duration::from_secs(30));
    running.stop().await;
    running2.stop().await;
}

#[tokio::test(start_paused = true)]
async fn informer_with_zero_period_never_resyncs() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    let informer = informer(&source, Duration::ZERO);
    let l = TestListener::new();
    let h = informer
        .add_event_handler_with(
            l.clone(),
            HandlerOptions::default().resync_period(Duration::from_secs(5)),
        )
        .unwrap();
    assert_eq!(h.resync_period(), Duration::ZERO);
    let running = run(&informer);
    caught_up(&informer).await;
    assert_eq!(l.count(), 1);
    tokio::time::sleep(Duration::from_secs(60)).await;
    caught_up(&informer).await;
    assert_eq!(l.count(), 1, "no resync may happen");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn shared_informer_watch_disruption() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    let informer = informer(&source, Duration::from_secs(1));
    let no_resync = TestListener::new();
    let resync = TestListener::new();
    informer
        .add_event_handler_with(
            no_resync.clone(),
            HandlerOptions::default().resync_period(Duration::ZERO),
        )
        .unwrap();
    informer
        .add_event_handler_with(
            resync.clone(),
            HandlerOptions::default().resync_period(Duration::from_secs(1)),
        )
        .unwrap();
    let running = run(&informer);
    caught_up(&informer).await;
    assert_eq!(no_resync.names(), set(&["pod1", "pod2"]));
    assert_eq!(resync.names(), set(&["pod1", "pod2"]));

    // Add pod3, bump pod2, without telling the watch: only a relist will see them.
    source.add_drop_watch(pod("pod3"));
    source.modify_drop_watch(pod("pod2"));
    caught_up(&informer).await;
    assert_eq!(no_resync.names(), set(&["pod1", "pod2"]));
    no_resync.reset();
    resync.reset();

    // The resync round at 1s includes only the resyncing listener, and the watch drops: the
    // relist delivers the changed pod2 and the new pod3 to both, and the unchanged pod1 only to
    // the listener whose resync is due.
    source.reset_watch();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    caught_up(&informer).await;
    tokio::time::sleep(Duration::from_millis(1601)).await;
    caught_up(&informer).await;
    assert_eq!(no_resync.names(), set(&["pod2", "pod3"]));
    assert!(resync.names().is_superset(&set(&["pod1", "pod2", "pod3"])));
    let cached: BTreeSet<String> = informer.indexer().list_keys().into_iter().collect();
    assert_eq!(cached, set(&["pod1", "pod2", "pod3"]));
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn shared_informer_error_handling() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    source.set_list_error(Some(kinformer::reflector::Status::internal_error(
        "Access Denied",
    )));
    let errors = Arc::new(AtomicUsize::new(0));
    let e = errors.clone();
    let informer = informer_with(
        &source,
        config()
            .resync_period(Duration::from_secs(1))
            .watch_error_handler(move |err| {
                assert!(err.to_string().contains("Access Denied"), "{err}");
                e.fetch_add(1, Ordering::SeqCst);
            }),
    );
    let running = run(&informer);
    caught_up(&informer).await;
    assert!(errors.load(Ordering::SeqCst) >= 1);
    assert!(!informer.has_synced());
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn shared_informer_transformer() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    let informer = informer_with(
        &source,
        config()
            .resync_period(Duration::from_secs(1))
            .transform(Transform::new(|p: &mut Pod| {
                p.metadata.name = p.metadata.name.take().map(|n| format!("{n}-transformed"))
            })),
    );
    let l = TestListener::new();
    informer.add_event_handler(l.clone()).unwrap();
    let running = run(&informer);
    caught_up(&informer).await;
    assert_eq!(l.names(), set(&["pod1-transformed", "pod2-transformed"]));
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn shared_informer_remove_handler() {
    let source = FakeControllerSource::new();
    let informer = informer(&source, Duration::from_secs(1));
    let h1 = informer.add_event_handler(TestListener::new()).unwrap();
    let h2 = informer.add_event_handler(TestListener::new()).unwrap();
    assert_eq!(informer.handler_count(), 2);
    informer.remove_event_handler(&h2).unwrap();
    assert_eq!(informer.handler_count(), 1);
    informer.remove_event_handler(&h1).unwrap();
    assert_eq!(informer.handler_count(), 0);
    // removing again is fine (idempotent)
    informer.remove_event_handler(&h1).unwrap();
    // a handle from another informer is refused
    let other = self::informer(&source, Duration::ZERO);
    let foreign = other.add_event_handler(TestListener::new()).unwrap();
    assert!(matches!(
        informer.remove_event_handler(&foreign),
        Err(InformerError::ForeignRegistration(..))
    ));
}

#[tokio::test(start_paused = true)]
async fn shared_informer_multiple_registration() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    let informer = informer(&source, Duration::ZERO);
    let l = TestListener::new();
    let r1 = informer.add_event_handler(l.clone()).unwrap();
    let r2 = informer.add_event_handler(l.clone()).unwrap();
    assert_eq!(informer.handler_count(), 2);
    let running = run(&informer);
    caught_up(&informer).await;
    // the same handler registered twice is called twice
    assert_eq!(l.count(), 2);
    informer.remove_event_handler(&r1).unwrap();
    source.add(pod("pod2"));
    caught_up(&informer).await;
    assert_eq!(l.count(), 3, "only the remaining registration is notified");
    assert!(r2.has_synced());
    informer.remove_event_handler(&r2).unwrap();
    assert_eq!(informer.handler_count(), 0);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn add_on_stopped_shared_informer() {
    let source = FakeControllerSource::new();
    let informer = informer(&source, Duration::ZERO);
    let running = run(&informer);
    caught_up(&informer).await;
    running.stop().await;
    assert!(informer.is_stopped());
    assert!(matches!(
        informer.add_event_handler(TestListener::new()),
        Err(InformerError::Stopped(_))
    ));
    assert!(matches!(informer.stream(), Err(InformerError::Stopped(_))));
    assert!(matches!(
        informer.add_indexers(Indexers::default()),
        Err(InformerError::Stopped(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn remove_on_stopped_shared_informer() {
    let source = FakeControllerSource::new();
    let informer = informer(&source, Duration::ZERO);
    let h = informer.add_event_handler(TestListener::new()).unwrap();
    let running = run(&informer);
    caught_up(&informer).await;
    running.stop().await;
    informer.remove_event_handler(&h).unwrap();
    assert!(h.is_stopped());
}

#[tokio::test(start_paused = true)]
async fn remove_while_active() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    let informer = informer(&source, Duration::ZERO);
    let l = TestListener::new();
    let h = informer.add_event_handler(l.clone()).unwrap();
    let running = run(&informer);
    caught_up(&informer).await;
    assert_eq!(l.names(), set(&["pod1"]));
    informer.remove_event_handler(&h).unwrap();
    source.add(pod("pod2"));
    caught_up(&informer).await;
    assert_eq!(l.names(), set(&["pod1"]), "nothing after removal");
    tokio::time::timeout(Duration::from_secs(5), h.stopped())
        .await
        .unwrap();
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn add_while_active() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    let informer = informer(&source, Duration::ZERO);
    let l1 = TestListener::new();
    let h1 = informer.add_event_handler(l1.clone()).unwrap();
    let running = run(&informer);
    caught_up(&informer).await;
    assert!(informer.has_synced() && h1.has_synced());

    // a late handler first gets the cache as initial-list adds, then live events
    let initial = Arc::new(Mutex::new(Vec::new()));
    let i = initial.clone();
    let h2 =
        informer
            .add_event_handler(ResourceEventHandlerFuncs::new().on_add(
                move |p: &Arc<Pod>, init| i.lock().push((p.metadata.name.clone().unwrap(), init)),
            ))
            .unwrap();
    tokio::time::timeout(Duration::from_secs(5), h2.synced_signal().wait())
        .await
        .unwrap();
    source.add(pod("pod3"));
    caught_up(&informer).await;
    let mut got = initial.lock().clone();
    let last = got.pop().unwrap();
    got.sort();
    assert_eq!(got, vec![("pod1".into(), true), ("pod2".into(), true)]);
    assert_eq!(last, ("pod3".into(), false));
    assert!(l1.names().contains("pod3"));
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn event_panics_are_caught_and_counted() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    let informer = informer(&source, Duration::ZERO);
    let calm = TestListener::new();
    let hc = informer.add_event_handler(calm.clone()).unwrap();
    let hp = informer
        .add_event_handler(ResourceEventHandlerFuncs::new().on_add(|p: &Arc<Pod>, _| {
            if p.metadata.name.as_deref() == Some("pod1") {
                panic!("handler bug on pod1");
            }
        }))
        .unwrap();
    let running = run(&informer);
    wait_until("the handler's panic is caught", || hp.panics() == 1).await;
    // the listener backs off after a panic before it carries on
    tokio::time::sleep(Duration::from_secs(2)).await;
    caught_up(&informer).await;
    assert_eq!(hp.panics(), 1);
    assert_eq!(hp.handled(), 2, "the listener carries on after a panic");
    assert!(hp.has_synced(), "a panic still counts the item as handled");
    assert_eq!(calm.count(), 2, "other handlers are unaffected");
    assert!(hc.has_synced());
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_leaves_no_task_and_stops_handlers() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    let informer = informer(&source, Duration::from_secs(1));
    let h = informer.add_event_handler(TestListener::new()).unwrap();
    let running = run(&informer);
    caught_up(&informer).await;
    assert!(h.has_synced());
    running.stop().await;
    assert!(h.is_stopped());
    tokio::time::timeout(Duration::from_secs(1), h.stopped())
        .await
        .unwrap();
    // running again after stop does nothing and returns at once
    tokio::time::timeout(
        Duration::from_secs(1),
        informer.run(CancellationToken::new()),
    )
    .await
    .unwrap();
}

#[tokio::test(start_paused = true)]
async fn handler_sync_waits_for_its_own_backlog() {
    let source = FakeControllerSource::new();
    for i in 0..10 {
        source.add(pod(&format!("pod{i}")));
    }
    let informer = informer(&source, Duration::ZERO);
    let slow = informer
        .add_event_handler_with(
            ResourceEventHandlerFuncs::new().on_add(|_: &Arc<Pod>, _| {}),
            HandlerOptions::default().name("slow"),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    let running = run(&informer);
    assert!(wait_for_cache_sync(&cancel, [informer.synced_signal(), slow.synced_signal()]).await);
    assert_eq!(slow.handled(), 10);
    assert_eq!(slow.backlog(), 0);
    assert_eq!(slow.name(), "slow");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn event_stream_yields_initial_list_then_synced_then_live() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    let informer = informer(&source, Duration::ZERO);
    let mut stream = informer.stream().unwrap();
    let running = run(&informer);
    let mut initial = BTreeSet::new();
    for _ in 0..2 {
        match stream.next().await.unwrap() {
            Event::Add {
                obj,
                is_in_initial_list: true,
            } => {
                // the cache already holds what the stream yields
                assert!(
                    informer
                        .indexer()
                        .get_by_key(obj.metadata.name.as_deref().unwrap())
                        .is_some()
                );
                initial.insert(obj.metadata.name.clone().unwrap());
            }
            other => panic!("expected an initial add, got {other:?}"),
        }
    }
    assert_eq!(initial, set(&["pod1", "pod2"]));
    assert!(matches!(stream.next().await.unwrap(), Event::Synced));
    assert!(stream.registration().has_synced());
    let mut p1 = pod("pod1");
    p1.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
    source.modify(p1);
    source.delete(pod("pod2"));
    match stream.next().await.unwrap() {
        Event::Update { old, new } => {
            assert_eq!(old.metadata.resource_version.as_deref(), Some("1"));
            assert_eq!(new.metadata.resource_version.as_deref(), Some("3"));
        }
        other => panic!("expected update, got {other:?}"),
    }
    match stream.next().await.unwrap() {
        Event::Delete(ObjectOrTombstone::Object(p)) => {
            assert_eq!(p.metadata.name.as_deref(), Some("pod2"))
        }
        other => panic!("expected delete, got {other:?}"),
    }
    assert_eq!(informer.handler_count(), 1);
    drop(stream);
    assert_eq!(
        informer.handler_count(),
        0,
        "dropping the stream removes its listener"
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn event_stream_ends_when_informer_stops() {
    let source = FakeControllerSource::new();
    let informer = informer(&source, Duration::ZERO);
    let mut stream = informer.stream().unwrap();
    let running = run(&informer);
    assert!(matches!(stream.next().await.unwrap(), Event::Synced));
    running.stop().await;
    assert!(stream.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn relist_delete_reaches_handlers_as_tombstone() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    let informer = informer(&source, Duration::ZERO);
    let deleted = Arc::new(Mutex::new(Vec::new()));
    let d = deleted.clone();
    informer
        .add_event_handler(ResourceEventHandlerFuncs::new().on_delete(
            move |o: &ObjectOrTombstone<Pod>| d.lock().push((o.key().unwrap(), o.is_tombstone())),
        ))
        .unwrap();
    let running = run(&informer);
    caught_up(&informer).await;
    // delete pod2 without telling the watch, then drop the watch: the relist finds it gone
    source.change_delete_silently("pod2");
    source.reset_watch();
    tokio::time::sleep(Duration::from_secs(2)).await;
    caught_up(&informer).await;
    assert_eq!(*deleted.lock(), vec![("pod2".to_string(), true)]);
    assert!(informer.indexer().get_by_key("pod2").is_none());
    running.stop().await;
}
