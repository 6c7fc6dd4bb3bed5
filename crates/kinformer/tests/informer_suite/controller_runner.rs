//! The controller runner on paused Tokio time, against client-go's `FakeControllerSource`.
//! Requeue semantics follow controller-runtime's `pkg/internal/controller/controller_test.go`
//! (the cases named below); the backoff is client-go's default controller rate limiter.

use std::sync::Arc;
use std::time::Duration;

use crate::support::{FakeControllerSource, pod, wait_until};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kinformer::controller::{Action, Controller, ControllerError};
use kinformer::informer::SharedIndexInformer;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const MS: Duration = Duration::from_millis(1);

fn informer(source: &FakeControllerSource) -> SharedIndexInformer<Pod> {
    SharedIndexInformer::builder(source.clone())
        .config(crate::queue_mode::config())
        .build()
}

/// Runs `informers` until `cancel`.
fn start(cancel: &CancellationToken, informers: &[SharedIndexInformer<Pod>]) {
    for i in informers {
        let (i, c) = (i.clone(), cancel.clone());
        tokio::spawn(async move { i.run(c).await });
    }
}

/// Every reconcile call: (time since start, key).
type Calls = Arc<Mutex<Vec<(Duration, String)>>>;

fn spawn_controller<F, Fut>(
    controller: Controller<Pod>,
    cancel: &CancellationToken,
    reconcile: F,
) -> JoinHandle<Result<(), ControllerError>>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Action, String>> + Send + 'static,
{
    let cancel = cancel.clone();
    tokio::spawn(async move { controller.run(cancel, reconcile).await })
}

fn recorder(calls: &Calls, t0: Instant) -> impl Fn(&str) + Send + Sync + 'static {
    let calls = calls.clone();
    move |key: &str| calls.lock().push((t0.elapsed(), key.to_owned()))
}

/// Workers start only once the cache has synced and the controller's handler has processed
/// the initial list (controller-runtime "should not call Reconcile until all event handlers
/// have processed initial objects"); every existing object is reconciled once.
#[tokio::test(start_paused = true)]
async fn reconciles_every_object_after_sync() {
    let source = FakeControllerSource::new();
    for n in ["a", "b", "c"] {
        source.add(pod(n));
    }
    let pods = informer(&source);
    let cancel = CancellationToken::new();
    let controller = Controller::new("test", pods.clone()).workers(2);
    let stats = controller.stats();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let run = {
        let (seen, pods) = (seen.clone(), pods.clone());
        spawn_controller(controller, &cancel, move |key| {
            seen.lock()
                .push((key, pods.has_synced(), pods.indexer().len()));
            async { Ok(Action::await_change()) }
        })
    };
    start(&cancel, &[pods]);
    wait_until("a reconcile of each of the three pods", || {
        stats.successes() == 3
    })
    .await;
    let mut seen = seen.lock().clone();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("a".to_owned(), true, 3),
            ("b".to_owned(), true, 3),
            ("c".to_owned(), true, 3)
        ]
    );
    assert_eq!(stats.successes(), 3);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// A failing reconcile backs off exponentially per key (client-go's default controller
/// limiter: 5 ms, 10, 20, 40, ...), on paused time.
#[tokio::test(start_paused = true)]
async fn failing_reconcile_backs_off_exponentially() {
    let source = FakeControllerSource::new();
    source.add(pod("broken"));
    let pods = informer(&source);
    let cancel = CancellationToken::new();
    let controller = Controller::new("test", pods.clone());
    let queue = controller.queue().clone();
    let calls: Calls = Default::default();
    let record = recorder(&calls, Instant::now());
    let run = spawn_controller(controller, &cancel, move |key| {
        record(&key);
        async { Err("always fails".to_owned()) }
    });
    start(&cancel, &[pods]);
    while calls.lock().len() < 9 {
        tokio::time::sleep(MS).await;
    }
    cancel.cancel();
    run.await.unwrap().unwrap();
    let times: Vec<Duration> = calls.lock().iter().map(|(t, _)| *t).collect();
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let want: Vec<Duration> = (0..8).map(|i| 5 * MS * 2u32.pow(i)).collect();
    assert_eq!(gaps, want, "reconcile times {times:?}");
    assert!(queue.num_requeues("broken") >= 8);
}

/// controller-runtime "should not reset backoff until there's a non-error result": the retry
/// count grows with each error and is forgotten on success.
#[tokio::test(start_paused = true)]
async fn backoff_is_forgotten_only_on_success() {
    let source = FakeControllerSource::new();
    source.add(pod("a"));
    let pods = informer(&source);
    let cancel = CancellationToken::new();
    let controller = Controller::new("test", pods.clone());
    let queue = controller.queue().clone();
    let requeues = Arc::new(Mutex::new(Vec::new()));
    let run = {
        let (requeues, queue) = (requeues.clone(), queue.clone());
        spawn_controller(controller, &cancel, move |key| {
            let n = queue.num_requeues(&key);
            requeues.lock().push(n);
            async move {
                if n < 2 {
                    Err(format!("attempt {n}"))
                } else {
                    Ok(Action::await_change())
                }
            }
        })
    };
    start(&cancel, &[pods]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(*requeues.lock(), vec![0, 1, 2]);
    assert_eq!(queue.num_requeues("a"), 0);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// controller-runtime "should requeue a Request after a duration (but not rate-limited)":
/// `requeue_after` adds the key again after exactly that delay and forgets its backoff.
#[tokio::test(start_paused = true)]
async fn requeue_after_adds_the_key_again_after_the_delay() {
    let source = FakeControllerSource::new();
    source.add(pod("a"));
    let pods = informer(&source);
    let cancel = CancellationToken::new();
    let controller = Controller::new("test", pods.clone());
    let stats = controller.stats();
    let calls: Calls = Default::default();
    let record = recorder(&calls, Instant::now());
    let run = spawn_controller(controller, &cancel, move |key| {
        record(&key);
        async { Ok(Action::requeue_after(Duration::from_secs(30))) }
    });
    start(&cancel, &[pods]);
    tokio::time::sleep(Duration::from_secs(95)).await;
    let times: Vec<Duration> = calls.lock().iter().map(|(t, _)| *t).collect();
    assert_eq!(times.len(), 4, "{times:?}");
    for w in times.windows(2) {
        assert_eq!(w[1] - w[0], Duration::from_secs(30));
    }
    assert_eq!(stats.requeues_after(), 4);
    assert_eq!(stats.errors(), 0);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// A panicking reconcile is caught, counted as an error and retried rate-limited; the worker
/// carries on with other keys.
#[tokio::test(start_paused = true)]
async fn panic_is_caught_and_retried_as_an_error() {
    let source = FakeControllerSource::new();
    source.add(pod("bomb"));
    source.add(pod("fine"));
    let pods = informer(&source);
    let cancel = CancellationToken::new();
    let controller = Controller::new("test", pods.clone());
    let stats = controller.stats();
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let run = {
        let attempts = attempts.clone();
        spawn_controller(controller, &cancel, move |key| {
            attempts.lock().push(key.clone());
            let explode =
                key == "bomb" && attempts.lock().iter().filter(|k| **k == "bomb").count() == 1;
            async move {
                if explode {
                    panic!("reconcile exploded");
                }
                Ok(Action::await_change())
            }
        })
    };
    start(&cancel, &[pods]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut attempts = attempts.lock().clone();
    attempts.sort();
    assert_eq!(attempts, vec!["bomb", "bomb", "fine"]);
    assert_eq!(stats.panics(), 1);
    assert_eq!(stats.errors(), 1);
    assert_eq!(stats.successes(), 2);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

fn owned_by(name: &str, owner: &str) -> Pod {
    let mut p = pod(name);
    p.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: owner.into(),
        uid: owner.into(),
        controller: Some(true),
        ..Default::default()
    }]);
    p
}

/// `owns`: a change to a child reconciles its controlling owner (controller-runtime's
/// `Owns`), including a child's deletion; `watches` maps any object to keys.
#[tokio::test(start_paused = true)]
async fn owned_and_watched_objects_enqueue_their_owner() {
    let parents = FakeControllerSource::new();
    parents.add(pod("parent"));
    let children = FakeControllerSource::new();
    let others = FakeControllerSource::new();
    let (p, c, o) = (informer(&parents), informer(&children), informer(&others));
    let cancel = CancellationToken::new();
    let controller =
        Controller::new("test", p.clone())
            .owns(c.clone())
            .watches(o.clone(), |obj: &Pod| {
                vec![format!(
                    "mapped-{}",
                    obj.metadata.name.as_deref().unwrap_or("")
                )]
            });
    let calls: Calls = Default::default();
    let record = recorder(&calls, Instant::now());
    let run = spawn_controller(controller, &cancel, move |key| {
        record(&key);
        async { Ok(Action::await_change()) }
    });
    start(&cancel, &[p, c, o]);
    let reconciles = |n: usize| {
        let calls = calls.clone();
        move || calls.lock().len() == n
    };
    wait_until("the parent's first reconcile", reconciles(1)).await;
    let keys = |calls: &Calls| {
        calls
            .lock()
            .iter()
            .map(|(_, k)| k.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&calls), vec!["parent"]);
    children.add(owned_by("child", "parent"));
    wait_until("the reconcile for the new child", reconciles(2)).await;
    assert_eq!(keys(&calls), vec!["parent", "parent"]);
    children.add(pod("orphan"));
    children.delete(owned_by("child", "parent"));
    wait_until("the reconcile for the deleted child", reconciles(3)).await;
    assert_eq!(keys(&calls), vec!["parent", "parent", "parent"]);
    others.add(pod("x"));
    wait_until("the mapped key's reconcile", || {
        calls.lock().last().is_some_and(|(_, k)| k == "mapped-x")
    })
    .await;
    assert_eq!(keys(&calls).last().map(String::as_str), Some("mapped-x"));
    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// Shutdown waits for a running reconcile within the deadline, and abandons one that outlives
/// it.
#[tokio::test(start_paused = true)]
async fn shutdown_drains_in_flight_work_within_a_deadline() {
    for (work, want_timeout) in [
        (Duration::from_secs(2), false),
        (Duration::from_secs(60), true),
    ] {
        let source = FakeControllerSource::new();
        source.add(pod("slow"));
        let pods = informer(&source);
        let cancel = CancellationToken::new();
        let controller =
            Controller::new("test", pods.clone()).shutdown_timeout(Duration::from_secs(5));
        let stats = controller.stats();
        let finished = Arc::new(Mutex::new(false));
        let run = {
            let finished = finished.clone();
            spawn_controller(controller, &cancel, move |_key| {
                let finished = finished.clone();
                async move {
                    tokio::time::sleep(work).await;
                    *finished.lock() = true;
                    Ok(Action::await_change())
                }
            })
        };
        start(&cancel, &[pods]);
        wait_until("the reconcile of \"slow\" is in flight", || {
            stats.active_workers() == 1
        })
        .await;
        cancel.cancel();
        let result = run.await.unwrap();
        if want_timeout {
            assert!(
                matches!(
                    result,
                    Err(ControllerError::ShutdownTimeout { abandoned: 1 })
                ),
                "{result:?}"
            );
            assert!(!*finished.lock());
        } else {
            result.unwrap();
            assert!(*finished.lock(), "the in-flight reconcile was not awaited");
        }
    }
}

/// Cancelled before the caches sync: no reconcile runs.
#[tokio::test(start_paused = true)]
async fn cancelled_before_sync_runs_nothing() {
    let source = FakeControllerSource::new();
    source.add(pod("a"));
    let pods = informer(&source);
    let cancel = CancellationToken::new();
    let controller = Controller::new("test", pods);
    let stats = controller.stats();
    let run = spawn_controller(controller, &cancel, |_key| async {
        Ok(Action::await_change())
    });
    // The informer never runs: the controller can only wait for it.
    wait_until(
        "the controller has started (and reconciled nothing)",
        || stats.reconciles() == 0,
    )
    .await;
    cancel.cancel();
    assert!(matches!(
        run.await.unwrap(),
        Err(ControllerError::NotSynced)
    ));
    assert_eq!(stats.reconciles(), 0);
}

/// 1,000 pods in the initial list, one worker (1 ms a reconcile), then one real change to the
/// pod last in the list once 10 reconciles ran. Returns how many reconciles had started when
/// the change came and the index of the changed pod's first reconcile after it.
async fn backlog_then_change(priority_queue: bool) -> (usize, usize) {
    let source = FakeControllerSource::new();
    for i in 0..1000 {
        source.add(pod(&format!("p{i:04}")));
    }
    let pods = informer(&source);
    let cancel = CancellationToken::new();
    let controller = Controller::new("test", pods.clone()).priority_queue(priority_queue);
    let stats = controller.stats();
    let calls: Arc<Mutex<Vec<String>>> = Default::default();
    let run = {
        let calls = calls.clone();
        spawn_controller(controller, &cancel, move |key| {
            calls.lock().push(key);
            async {
                tokio::time::sleep(MS).await;
                Ok(Action::await_change())
            }
        })
    };
    start(&cancel, &[pods]);
    while calls.lock().len() < 10 {
        tokio::time::sleep(MS / 4).await;
    }
    let at_change = calls.lock().len();
    let mut changed = pod("p0999");
    changed.metadata.labels = Some([("changed".to_owned(), "yes".to_owned())].into());
    source.modify(changed);
    let reconciled_change = || calls.lock()[at_change..].iter().position(|k| k == "p0999");
    while reconciled_change().is_none() || stats.successes() < 1000 {
        tokio::time::sleep(MS).await;
    }
    cancel.cancel();
    run.await.unwrap().unwrap();
    (at_change, at_change + reconciled_change().unwrap())
}

/// controller-runtime's default since v0.23: the initial list enqueues at low priority, so
/// after a restart a real change overtakes the relist backlog (reconciled within a few
/// reconciles of its event, not after the ~990 still queued).
#[tokio::test(start_paused = true)]
async fn real_change_overtakes_the_initial_list_backlog() {
    let (at_change, position) = backlog_then_change(true).await;
    assert!(
        position < at_change + 5,
        "the change came after {at_change} reconciles and ran at {position}"
    );
    assert!(position < 100, "reconciled at {position} of ~1000");
}

/// The same with `priority_queue(false)`: client-go's FIFO queue reconciles the change only in
/// its place in the backlog (the key was already queued, so the add collapses into it).
#[tokio::test(start_paused = true)]
async fn fifo_queue_reconciles_the_change_in_backlog_order() {
    let (_, position) = backlog_then_change(false).await;
    assert_eq!(position, 999, "the last pod of the list is reconciled last");
}

#[derive(Clone, Copy)]
enum FirstResult {
    Error,
    RequeueAfter,
    RequeueAfterAt(i32),
}

/// Reconcile order with one worker: `a` (initial list, low priority) runs first and adds `b`
/// (priority 0) by hand, then ends with `first` (its requeue is ready 5 ms later); `b` adds
/// `c` at priority -50 and runs 10 ms, so when the worker is free again `a`'s requeue and `c`
/// are both ready and their priorities decide.
async fn requeue_order(first: FirstResult) -> Vec<String> {
    let source = FakeControllerSource::new();
    source.add(pod("a"));
    let pods = informer(&source);
    let cancel = CancellationToken::new();
    let controller = Controller::new("test", pods.clone());
    let queue = controller.queue().clone();
    let stats = controller.stats();
    let calls: Arc<Mutex<Vec<String>>> = Default::default();
    let run = {
        let calls = calls.clone();
        spawn_controller(controller, &cancel, move |key| {
            let first_call = !calls.lock().contains(&key);
            calls.lock().push(key.clone());
            let queue = queue.clone();
            async move {
                match (key.as_str(), first_call) {
                    ("a", true) => {
                        queue.add("b".to_owned());
                        tokio::time::sleep(10 * MS).await;
                        match first {
                            FirstResult::Error => Err("first try fails".to_owned()),
                            FirstResult::RequeueAfter => Ok(Action::requeue_after(5 * MS)),
                            FirstResult::RequeueAfterAt(p) => {
                                Ok(Action::requeue_after(5 * MS).with_priority(p))
                            }
                        }
                    }
                    ("b", _) => {
                        queue.add_with_priority("c".to_owned(), -50);
                        tokio::time::sleep(10 * MS).await;
                        Ok(Action::await_change())
                    }
                    _ => Ok(Action::await_change()),
                }
            }
        })
    };
    start(&cancel, &[pods]);
    wait_until("four reconciles", || {
        calls.lock().len() == 4 && stats.active_workers() == 0
    })
    .await;
    cancel.cancel();
    run.await.unwrap().unwrap();
    calls.lock().clone()
}

/// controller-runtime's `reconcileHandler`: a failed key goes back rate-limited at the
/// priority it was handed out with (here the initial list's low priority), so `c` at -50
/// overtakes it; a requeue-after keeps it too, unless the `Action` sets another priority.
#[tokio::test(start_paused = true)]
async fn requeues_keep_their_priority_unless_the_action_sets_one() {
    assert_eq!(
        requeue_order(FirstResult::Error).await,
        ["a", "b", "c", "a"]
    );
    assert_eq!(
        requeue_order(FirstResult::RequeueAfter).await,
        ["a", "b", "c", "a"]
    );
    assert_eq!(
        requeue_order(FirstResult::RequeueAfterAt(-10)).await,
        ["a", "b", "a", "c"]
    );
}
