//! `Reflector::run`: backoff between cycles and its reset, relists after a 410, very short
//! watches, garbage in the stream, sharing, and cancellation.

use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kinformer::InformerConfig;
use kinformer::reflector::{
    BackoffConfig, ListWatchError, Reflector, ReflectorError, Status, WatchEvent, WatchStream,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

type Errors = Arc<Mutex<Vec<String>>>;

fn recording_handler() -> (Errors, impl Fn(&ReflectorError) + Send + Sync + 'static) {
    let errors: Errors = Arc::default();
    let e = errors.clone();
    (errors, move |err: &ReflectorError| {
        e.lock().push(err.to_string())
    })
}

fn spawn_run(
    r: Arc<Reflector<Pod, Arc<RecordingStore>>>,
    token: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let token = token.clone();
    tokio::spawn(async move { r.run(token).await })
}

#[tokio::test(start_paused = true)]
async fn run_backs_off_800ms_doubling_to_30s_between_failing_cycles() {
    let lw = ScriptedLw::new(
        |_, _| Err(Status::internal_error("etcd unavailable").into()),
        |_, _| panic!("no watch without a list"),
    );
    let (errors, handler) = recording_handler();
    let r = Arc::new(
        Reflector::builder(lw.clone(), RecordingStore::new())
            .config(
                &InformerConfig::default()
                    .backoff(BackoffConfig {
                        jitter: 0.0,
                        ..Default::default()
                    })
                    .watch_error_handler(handler),
            )
            .build(),
    );
    let token = CancellationToken::new();
    let task = spawn_run(r, &token);
    tokio::time::sleep(Duration::from_secs(200)).await;
    token.cancel();
    task.await.unwrap();
    let times: Vec<_> = lw.requests().iter().map(|r| r.at).collect();
    let gaps: Vec<u64> = times
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis() as u64)
        .collect();
    assert_eq!(
        gaps[..9],
        [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]
    );
    assert_eq!(errors.lock().len(), lw.count(Verb::List));
    assert!(errors.lock()[0].starts_with("failed to list"));
}

#[tokio::test(start_paused = true)]
async fn run_backoff_is_jittered_within_one_base_delay() {
    let lw = ScriptedLw::new(
        |_, _| Err(Status::internal_error("etcd unavailable").into()),
        |_, _| panic!("no watch without a list"),
    );
    let r = Arc::new(Reflector::builder(lw.clone(), RecordingStore::new()).build());
    let token = CancellationToken::new();
    let task = spawn_run(r, &token);
    tokio::time::sleep(Duration::from_secs(600)).await;
    token.cancel();
    task.await.unwrap();
    let times: Vec<_> = lw.requests().iter().map(|r| r.at).collect();
    let bases = [800u64, 1600, 3200, 6400, 12800, 25600, 30000, 30000];
    for (i, w) in times.windows(2).take(bases.len()).enumerate() {
        let gap = (w[1] - w[0]).as_millis() as u64;
        assert!(gap >= bases[i] && gap <= 2 * bases[i], "gap {i}: {gap} ms");
    }
}

#[tokio::test(start_paused = true)]
async fn run_backoff_resets_after_two_minutes_without_errors() {
    let lw = ScriptedLw::new_async(
        |_, n| {
            if n <= 3 || n >= 5 {
                Err(Status::internal_error("etcd unavailable").into())
            } else {
                Ok(list_of("1", vec![]))
            }
        },
        |_, _| {
            Box::pin(async {
                // a healthy watch for three minutes, then the server expires it
                Ok(futures::StreamExt::boxed(futures::stream::once(async {
                    tokio::time::sleep(Duration::from_secs(180)).await;
                    Ok(WatchEvent::Error(Status::expired("too old")))
                })))
            })
        },
    );
    let r = Arc::new(
        Reflector::builder(lw.clone(), RecordingStore::new())
            .config(&InformerConfig::default().backoff(BackoffConfig {
                jitter: 0.0,
                ..Default::default()
            }))
            .build(),
    );
    let token = CancellationToken::new();
    let task = spawn_run(r, &token);
    tokio::time::sleep(Duration::from_secs(190)).await;
    token.cancel();
    task.await.unwrap();
    let lists: Vec<_> = lw
        .requests()
        .into_iter()
        .filter(|r| r.verb == Verb::List)
        .map(|r| r.at)
        .collect();
    assert_eq!(lists[1] - lists[0], Duration::from_millis(800));
    assert_eq!(lists[2] - lists[1], Duration::from_millis(1600));
    assert_eq!(lists[3] - lists[2], Duration::from_millis(3200));
    // the fourth list succeeds and the watch runs 180 s: the next delay starts over at 800 ms
    assert_eq!(lists[4] - lists[3], Duration::from_millis(180_800));
}

#[tokio::test(start_paused = true)]
async fn run_relists_at_the_last_resource_version_after_a_410_on_the_watch() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(
        |o, _| match o.resource_version.as_str() {
            "0" => Ok(list_of("1", vec![pod("a", "1")])),
            "2" => Ok(list_of("3", vec![pod("a", "2"), pod("b", "3")])),
            other => panic!("unexpected list at {other:?}"),
        },
        move |o, _| match o.resource_version.as_str() {
            "1" => Ok(events_then_close(vec![
                WatchEvent::Modified(pod("a", "2")),
                WatchEvent::Error(Status::expired("too old resource version")),
            ])),
            _ => Ok(events_then_cancel(vec![], t.clone())),
        },
    );
    let store = RecordingStore::new();
    let (errors, handler) = recording_handler();
    let r = Arc::new(
        Reflector::builder(lw.clone(), store.clone())
            .config(&InformerConfig::default().watch_error_handler(handler))
            .build(),
    );
    spawn_run(r.clone(), &token).await.unwrap();
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![
            list_opts("0", Some(500), None),
            watch_opts("1"),
            list_opts("2", None, None),
            watch_opts("3"),
        ]
    );
    assert_eq!(errors.lock().len(), 1);
    assert!(errors.lock()[0].contains("Expired"), "{:?}", errors.lock());
    assert_eq!(store.content(), name_rv_pairs(&[("a", "2"), ("b", "3")]));
    assert_eq!(r.last_sync_resource_version(), "3");
}

#[tokio::test(start_paused = true)]
async fn very_short_watch_is_an_error_and_a_quiet_long_watch_is_not() {
    // closes at once with no events: an error ending the cycle
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![])),
        |_, _| Ok(events_then_close(vec![])),
    );
    let r = Reflector::builder(lw.clone(), RecordingStore::new())
        .name("short")
        .build();
    let err = r
        .list_and_watch(&CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(&err, ReflectorError::VeryShortWatch { name } if name == "short"));
    assert!(err.to_string().starts_with("very short watch: short:"));

    // stays open a second, no events, closes: reopened from the same version, no relist
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new_async(
        |_, _| Ok(list_of("1", vec![])),
        move |_, n| {
            let t = t.clone();
            Box::pin(async move {
                if n == 3 {
                    t.cancel();
                }
                Ok(futures::StreamExt::boxed(
                    futures::stream::once(async {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    })
                    .filter_map(|_| async { None }),
                ))
            })
        },
    );
    let r = Reflector::builder(lw.clone(), RecordingStore::new()).build();
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(lw.count(Verb::List), 1);
    assert_eq!(lw.watch_rvs(), vec!["1", "1", "1"]);
}

#[tokio::test(start_paused = true)]
async fn garbage_in_the_watch_is_skipped_and_the_store_keeps_what_it_had() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(
        |_, _| {
            Ok(list_of(
                "1",
                vec![pod("a", "1"), nameless_pod("1"), pod("b", "1")],
            ))
        },
        move |_, _| {
            let items = vec![
                Err(ListWatchError::Decode("watch event is not JSON".into())),
                Ok(WatchEvent::Added(nameless_pod("2"))),
                Err(ListWatchError::Decode("watch event has no type".into())),
                Ok(WatchEvent::Deleted(nameless_pod("3"))),
                Ok(WatchEvent::Modified(pod("a", "4"))),
                Err(ListWatchError::Decode("unexpected object kind".into())),
            ];
            let t = t.clone();
            Ok(futures::stream::iter(items)
                .chain(futures::stream::once(async move {
                    t.cancel();
                    futures::future::pending::<()>().await;
                    Err(ListWatchError::Decode("never".into()))
                }))
                .boxed())
        },
    );
    let store = RecordingStore::new();
    let r = Reflector::builder(lw, store.clone()).build();
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        store.ops(),
        vec![
            Op::Replace(name_rv_pairs(&[("a", "1"), ("b", "1")]), "1".into()),
            Op::Update("a".into(), "4".into()),
            Op::UpdateResourceVersion("4".into()),
        ]
    );
    assert_eq!(r.last_sync_resource_version(), "4");
}

#[tokio::test(start_paused = true)]
async fn cancel_closes_the_open_watch_and_run_returns_promptly() {
    let (tx, stream) = channel_watch();
    let stream = Mutex::new(Some(stream));
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![])),
        move |_, _| Ok(stream.lock().take().expect("a single watch")),
    );
    let store = RecordingStore::new();
    let r = Arc::new(Reflector::builder(lw.clone(), store.clone()).build());
    let token = CancellationToken::new();
    let task = spawn_run(r.clone(), &token);
    tx.send(Ok(WatchEvent::Added(pod("a", "2")))).unwrap();
    while r.last_sync_resource_version() != "2" {
        tokio::task::yield_now().await;
    }
    // read from another task while it runs
    assert_eq!(store.content(), name_rv_pairs(&[("a", "2")]));
    assert!(!tx.is_closed());
    let cancelled_at = tokio::time::Instant::now();
    token.cancel();
    task.await.unwrap();
    assert_eq!(
        cancelled_at.elapsed(),
        Duration::ZERO,
        "run returns without waiting"
    );
    assert!(tx.is_closed(), "the open watch was dropped");
    let requests = lw.requests().len();
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(lw.requests().len(), requests, "nothing starts after cancel");
}

#[tokio::test(start_paused = true)]
async fn cancel_during_backoff_returns_at_once() {
    let lw = ScriptedLw::new(
        |_, _| Err(ListWatchError::connection_refused("connection refused")),
        |_, _| panic!("no watch"),
    );
    let r = Arc::new(Reflector::builder(lw.clone(), RecordingStore::new()).build());
    let token = CancellationToken::new();
    let task = spawn_run(r, &token);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let cancelled_at = tokio::time::Instant::now();
    token.cancel();
    task.await.unwrap();
    assert_eq!(cancelled_at.elapsed(), Duration::ZERO);
    assert_eq!(lw.count(Verb::List), 1);
}

#[tokio::test(start_paused = true)]
async fn cancel_while_a_watch_is_being_opened() {
    let lw = ScriptedLw::new_async(
        |_, _| Ok(list_of("1", vec![])),
        |_, _| Box::pin(futures::future::pending()),
    );
    let r = Arc::new(Reflector::builder(lw.clone(), RecordingStore::new()).build());
    let token = CancellationToken::new();
    let task = spawn_run(r, &token);
    tokio::time::sleep(Duration::from_secs(5)).await;
    token.cancel();
    task.await.unwrap();
    assert_eq!(lw.count(Verb::Watch), 1);
}

#[test]
fn reflector_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Reflector<Pod, Arc<RecordingStore>>>();
}

#[tokio::test(start_paused = true)]
async fn a_server_closing_every_watch_at_once_does_not_starve_other_tasks() {
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("10", vec![])),
        |_, _| Ok(events_then_close(vec![WatchEvent::bookmark("11")])),
    );
    let token = CancellationToken::new();
    let r = Arc::new(Reflector::builder(lw.clone(), RecordingStore::new()).build());
    let task = spawn_run(r, &token);
    // this task gets to run while the reflector reopens watches in a loop
    while lw.count(Verb::Watch) < 500 {
        tokio::task::yield_now().await;
    }
    token.cancel();
    task.await.unwrap();
    assert_eq!(
        lw.count(Verb::List),
        1,
        "watches that end normally never relist"
    );
}

#[tokio::test(start_paused = true)]
async fn a_broken_watch_stream_is_reopened_from_the_last_version_without_relist() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![])),
        move |_, n| match n {
            1 => Ok(items_then_close(vec![
                Ok(WatchEvent::Added(pod("a", "2"))),
                Err(ListWatchError::Transport {
                    kind: kinformer::reflector::TransportErrorKind::Other,
                    message: "connection reset by peer".into(),
                }),
                Ok(WatchEvent::Added(pod("never", "3"))),
            ])),
            _ => Ok(events_then_cancel(vec![], t.clone())),
        },
    );
    let store = RecordingStore::new();
    let r = Reflector::builder(lw.clone(), store.clone()).build();
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(lw.count(Verb::List), 1);
    assert_eq!(lw.watch_rvs(), vec!["1", "2"]);
    assert_eq!(store.content(), name_rv_pairs(&[("a", "2")]));
}

/// A stream that delivers one event, stays open for `open`, then breaks as a reset
/// connection does.
fn event_then_reset(event: WatchEvent<Pod>, open: Duration) -> WatchStream<Pod> {
    let reset = futures::stream::once(async move {
        tokio::time::sleep(open).await;
        Err(ListWatchError::Transport {
            kind: kinformer::reflector::TransportErrorKind::Other,
            message: "connection reset by peer".into(),
        })
    });
    futures::stream::iter([Ok(event)]).chain(reset).boxed()
}

// client-go: a reset connection closes the watch's channel (a probable EOF) and the Reflector
// watches again at once. Backing off instead added up: the backoff resets only after two
// quiet minutes, so a connection cut every minute left the cache blind for up to a minute.
#[tokio::test(start_paused = true)]
async fn connections_cut_every_minute_are_watched_again_at_once_every_time() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![])),
        move |_, n| match n {
            1..=8 => Ok(event_then_reset(
                WatchEvent::Added(pod(&format!("p{n}"), &(n + 1).to_string())),
                Duration::from_secs(60),
            )),
            _ => Ok(events_then_cancel(vec![], t.clone())),
        },
    );
    let store = RecordingStore::new();
    let r = Reflector::builder(lw.clone(), store.clone()).build();
    r.list_and_watch(&token).await.unwrap();
    let watches: Vec<_> = lw
        .requests()
        .into_iter()
        .filter(|r| r.verb == Verb::Watch)
        .collect();
    assert_eq!(watches.len(), 9);
    for pair in watches.windows(2) {
        assert_eq!(
            pair[1].at - pair[0].at,
            Duration::from_secs(60),
            "watched again the moment the stream broke"
        );
    }
    assert_eq!(
        lw.watch_rvs(),
        ["1", "2", "3", "4", "5", "6", "7", "8", "9"],
        "each from the last version"
    );
    assert_eq!(lw.count(Verb::List), 1, "no relist");
    assert_eq!(store.content().len(), 8);
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_breaks_at_once_without_an_event_is_a_very_short_watch() {
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![])),
        |_, _| {
            Ok(items_then_close(vec![Err(ListWatchError::Transport {
                kind: kinformer::reflector::TransportErrorKind::Incomplete,
                message: "cut".into(),
            })]))
        },
    );
    let r = Reflector::builder(lw.clone(), RecordingStore::new())
        .name("cut")
        .build();
    let err = r
        .list_and_watch(&CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ReflectorError::VeryShortWatch { name } if name == "cut"),
        "the cycle ends (the Reflector backs off and relists): {err}"
    );
    assert_eq!(lw.count(Verb::Watch), 1);
}

#[tokio::test(start_paused = true)]
async fn a_watch_the_server_never_closes_is_dropped_30s_after_its_timeout_and_reopened_at_once() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![])),
        move |_, n| {
            if n == 2 {
                t.cancel();
            }
            Ok(events_then_pending(vec![WatchEvent::Added(pod("a", "2"))]))
        },
    );
    let r = Reflector::builder(lw.clone(), RecordingStore::new()).build();
    r.list_and_watch(&token).await.unwrap();
    let reqs = lw.requests();
    let timeout = u64::from(reqs[1].options.timeout_seconds.unwrap());
    // dropped 30 s past its timeout and reopened the same moment
    let gap = reqs[2].at - reqs[1].at;
    assert_eq!(gap, Duration::from_secs(timeout + 30));
    assert_eq!(
        lw.watch_rvs(),
        vec!["1", "2"],
        "reopened from the last version"
    );
    assert_eq!(lw.count(Verb::List), 1);
}
