//! The streaming list (watch-list), ported from client-go's `reflector_watchlist_test.go`
//! (`TestWatchList`, `TestWatchListResourceVersion`) as one table of [`Scenario`]s; plus two
//! behaviours of ours
//! with setups of their own (the end-bookmark timeout, a 410 on a streaming list).

use kinformer::InformerConfig;
use kinformer::reflector::{EndBookmarkWait, InitialListMode};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use k8s_openapi::api::core::v1::Pod;
use kinformer::reflector::{
    INITIAL_EVENTS_END_ANNOTATION, ListOptions, ListPage, ListWatchError, Reflector,
    ReflectorError, Status, TransportErrorKind, WatchEvent,
};
use tokio_util::sync::CancellationToken;

fn watch_list_reflector(
    lw: Arc<ScriptedLw>,
    store: Arc<RecordingStore>,
) -> Reflector<Pod, Arc<RecordingStore>> {
    Reflector::builder(lw, store)
        .name("watch-list")
        .config(&InformerConfig::default().initial_list(InitialListMode::StreamingList))
        .build()
}

fn end(rv: &str) -> WatchEvent<Pod> {
    WatchEvent::initial_events_end(rv)
}

/// A watch script that serves `events` on every watch, then cancels the run.
fn serve(events: Vec<WatchEvent<Pod>>) -> ScenarioWatch {
    Box::new(move |_, _, t| Ok(events_then_cancel(events.clone(), t.clone())))
}

/// client-go's fallback cases: the streaming list fails with `err`; the list+watch that follows
/// lists p1 at "1" and watches p2, and both reach the store.
fn fallback(name: &'static str, err: ListWatchError) -> Scenario {
    Scenario {
        name,
        initial_list: InitialListMode::StreamingList,
        list: list_p1_at_1,
        watch: Box::new(move |o, _, t| {
            if o.send_initial_events == Some(true) {
                return Err(err.clone());
            }
            Ok(events_then_cancel(
                vec![WatchEvent::Added(pod("p2", "2"))],
                t.clone(),
            ))
        }),
        requests: Some(vec![
            watch_list_opts(""),
            list_opts("0", Some(500), None),
            watch_opts("1"),
        ]),
        content: Some(name_rv_pairs(&[("p1", "1"), ("p2", "2")])),
        ..Default::default()
    }
}

fn list_p1_at_1(_: &ListOptions, _: usize) -> Result<ListPage<Pod>, ListWatchError> {
    Ok(list_of("1", vec![pod("p1", "1")]))
}

/// client-go's `TestWatchList` (every case, named as there) and `TestWatchListResourceVersion`:
/// one table, one loop. (`TestReflectorListAndWatch`'s "UseWatchList enabled" is in
/// `list_watch.rs`, beside "UseWatchList disabled".)
#[tokio::test(start_paused = true)]
async fn watch_list() {
    use InitialListMode::StreamingList;
    run_scenarios(vec![
        Scenario {
            name: "TestWatchList/the reflector won't be synced if the bookmark event has been received",
            initial_list: StreamingList,
            watch: serve(vec![WatchEvent::Added(pod("p1", "1"))]),
            requests: Some(vec![watch_list_opts("")]),
            // nothing reaches the store before the bookmark
            ops: Some(vec![]),
            last_sync_rv: Some(""),
            ..Default::default()
        },
        Scenario {
            name: "TestWatchList/the reflector uses the old LIST/WATCH semantics if the UseWatchList is turned off",
            initial_list: InitialListMode::ListThenWatch,
            list: list_p1_at_1,
            watch: Box::new(|_, _, t| {
                t.cancel();
                Ok(events_then_pending(vec![]))
            }),
            requests: Some(vec![list_opts("0", Some(500), None), watch_opts("1")]),
            content: Some(name_rv_pairs(&[("p1", "1")])),
            ..Default::default()
        },
        fallback(
            "TestWatchList/returning any other error than apierrors.NewInvalid forces fallback",
            ListWatchError::Transport {
                kind: TransportErrorKind::Other,
                message: "dummy error".into(),
            },
        ),
        fallback(
            "TestWatchList/the reflector can fall back to old LIST/WATCH semantics when a server doesn't support streaming",
            Status::invalid("streaming is not allowed").into(),
        ),
        Scenario {
            name: "TestWatchList/prove that the reflector is synced after receiving a bookmark event",
            initial_list: StreamingList,
            watch: serve(vec![
                WatchEvent::Added(pod("p1", "1")),
                WatchEvent::Added(pod("p2", "2")),
                end("2"),
            ]),
            requests: Some(vec![watch_list_opts("")]),
            ops: Some(vec![Op::Replace(
                name_rv_pairs(&[("p1", "1"), ("p2", "2")]),
                "2".into(),
            )]),
            last_sync_rv: Some("2"),
            ..Default::default()
        },
        Scenario {
            name: "TestWatchList/check if Updates and Deletes events are propagated during streaming (until the bookmark is received)",
            initial_list: StreamingList,
            watch: serve(vec![
                WatchEvent::Added(pod("p1", "1")),
                WatchEvent::Added(pod("p2", "2")),
                WatchEvent::Modified(pod("p1", "3")),
                WatchEvent::Added(pod("p3", "4")),
                WatchEvent::Deleted(pod("p3", "5")),
                end("5"),
            ]),
            watches: Some(1),
            ops: Some(vec![Op::Replace(
                name_rv_pairs(&[("p1", "3"), ("p2", "2")]),
                "5".into(),
            )]),
            ..Default::default()
        },
        Scenario {
            name: "TestWatchList/checks if the reflector retries 429",
            initial_list: StreamingList,
            watch: Box::new(|_, n, t| {
                if n < 3 {
                    return Err(Status::too_many_requests("busy, check again later", 1).into());
                }
                Ok(events_then_cancel(
                    vec![WatchEvent::Added(pod("p1", "1")), end("2")],
                    t.clone(),
                ))
            }),
            requests: Some(vec![watch_list_opts(""); 3]),
            content: Some(name_rv_pairs(&[("p1", "1")])),
            ..Default::default()
        },
        Scenario {
            name: "TestWatchList/check if stopping a watcher before sync results in creating a new watch-list request",
            initial_list: StreamingList,
            watch: Box::new(|_, n, t| match n {
                1 => Ok(events_then_close(vec![WatchEvent::Added(pod("p1", "1"))])),
                _ => Ok(events_then_cancel(
                    vec![WatchEvent::Added(pod("p1", "1")), end("1")],
                    t.clone(),
                )),
            }),
            requests: Some(vec![watch_list_opts(""); 2]),
            content: Some(name_rv_pairs(&[("p1", "1")])),
            ..Default::default()
        },
        Scenario {
            name: "TestWatchList/stopping a watcher after synchronization results in creating a new watch request",
            initial_list: StreamingList,
            watch: Box::new(|_, n, t| match n {
                1 => Ok(events_then_close(vec![
                    WatchEvent::Added(pod("p1", "1")),
                    WatchEvent::Added(pod("p2", "2")),
                    end("2"),
                    WatchEvent::Added(pod("p3", "3")),
                ])),
                _ => Ok(events_then_cancel(
                    vec![WatchEvent::Added(pod("p4", "4"))],
                    t.clone(),
                )),
            }),
            requests: Some(vec![watch_list_opts(""), watch_opts("3")]),
            content: Some(name_rv_pairs(&[
                ("p1", "1"),
                ("p2", "2"),
                ("p3", "3"),
                ("p4", "4"),
            ])),
            ..Default::default()
        },
        Scenario {
            name: "TestWatchList/expiring an established watcher results in returning an error from the reflector",
            initial_list: StreamingList,
            watch: Box::new(|_, n, _| match n {
                1 => Ok(events_then_close(vec![
                    WatchEvent::Added(pod("p1", "1")),
                    end("2"),
                    WatchEvent::Added(pod("p3", "3")),
                ])),
                _ => Err(Status::expired("rv already expired").into()),
            }),
            error: Some(|e| matches!(e, ReflectorError::Watch(e) if e.is_expired())),
            requests: Some(vec![watch_list_opts(""), watch_opts("3")]),
            content: Some(name_rv_pairs(&[("p1", "1"), ("p3", "3")])),
            ..Default::default()
        },
        Scenario {
            name: "TestWatchList/prove that the reflector is checking the value of the initialEventsEnd annotation",
            initial_list: StreamingList,
            watch: serve(vec![
                WatchEvent::Added(pod("p1", "1")),
                WatchEvent::Added(pod("p2", "2")),
                WatchEvent::Bookmark {
                    resource_version: "2".into(),
                    annotations: BTreeMap::from([(
                        INITIAL_EVENTS_END_ANNOTATION.to_owned(),
                        "false".to_owned(),
                    )]),
                },
            ]),
            watches: Some(1),
            // "false" does not end the initial events
            ops: Some(vec![]),
            ..Default::default()
        },
        Scenario {
            name: "TestWatchListResourceVersion/empty resource version",
            initial_list: StreamingList,
            watch: serve(vec![]),
            last_sync_rv: Some(""),
            ..Default::default()
        },
        Scenario {
            name: "TestWatchListResourceVersion/empty resource version without bookmark event",
            initial_list: StreamingList,
            watch: serve(vec![WatchEvent::Added(pod("p1", "1"))]),
            last_sync_rv: Some(""),
            ..Default::default()
        },
        Scenario {
            name: "TestWatchListResourceVersion/non empty resource version with bookmark event and initial events annotation",
            initial_list: StreamingList,
            watch: serve(vec![WatchEvent::Added(pod("p1", "1")), end("2")]),
            last_sync_rv: Some("2"),
            ..Default::default()
        },
    ])
    .await;
}

// Our addition: a server that ignores sendInitialEvents never sends the end bookmark; after the
// configured timeout the Reflector falls back to list+watch.
#[tokio::test(start_paused = true)]
async fn watch_list_end_bookmark_timeout_falls_back_to_list_and_watch() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("7", vec![pod("p1", "1")])),
        move |o, _| {
            if o.send_initial_events == Some(true) {
                return Ok(events_then_pending(vec![WatchEvent::Added(pod("p1", "1"))]));
            }
            t.cancel();
            Ok(events_then_pending(vec![]))
        },
    );
    let store = RecordingStore::new();
    let r = Reflector::builder(lw.clone(), store.clone())
        .config(
            &InformerConfig::default()
                .initial_list(InitialListMode::StreamingList)
                .end_bookmark_wait(EndBookmarkWait::After(Duration::from_secs(10))),
        )
        .build();
    let start = tokio::time::Instant::now();
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![
            watch_list_opts(""),
            list_opts("0", Some(500), None),
            watch_opts("7")
        ]
    );
    let reqs = lw.requests();
    assert_eq!(reqs[1].at - reqs[0].at, Duration::from_secs(10));
    assert_eq!(start.elapsed(), Duration::from_secs(10));
    assert_eq!(
        store.ops(),
        vec![Op::Replace(name_rv_pairs(&[("p1", "1")]), "7".into())]
    );
}

// A 410 on a streaming list at a known version retries the streaming list at "" (client-go's
// isExpiredError handling in watchList), without falling back.
#[tokio::test(start_paused = true)]
async fn watch_list_expired_resource_version_retries_at_most_recent() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(no_list, move |_, n| match n {
        1 => Ok(events_then_close(vec![
            WatchEvent::Added(pod("p1", "1")),
            end("5"),
            WatchEvent::Error(Status::expired("too old")),
        ])),
        2 => Err(Status::expired("too old").into()),
        _ => Ok(events_then_cancel(
            vec![WatchEvent::Added(pod("p1", "6")), end("6")],
            t.clone(),
        )),
    });
    let store = RecordingStore::new();
    let r = watch_list_reflector(lw.clone(), store.clone());
    let first = r.list_and_watch(&token).await.unwrap_err();
    assert!(first.is_expired(), "{first:?}");
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![
            watch_list_opts(""),
            watch_list_opts("5"),
            watch_list_opts("")
        ]
    );
    assert_eq!(store.content(), name_rv_pairs(&[("p1", "6")]));
    assert_eq!(r.last_sync_resource_version(), "6");
}

/// The first request a default-built Reflector (`InitialListMode::Auto`) makes over a
/// [`kinformer::reflector::ListWatch`] whose watch serves p1 and the end bookmark, with
/// `mode` forced on the builder when given; `streaming` declares the source able to stream.
async fn first_request(streaming: bool, mode: Option<InitialListMode>) -> (bool, Vec<Op>) {
    use futures::FutureExt;
    use kinformer::reflector::ListWatch;
    let token = CancellationToken::new();
    let seen: Arc<parking_lot::Mutex<Vec<bool>>> = Arc::default();
    let (s1, s2) = (seen.clone(), seen.clone());
    let t = token.clone();
    let mut lw = ListWatch::<Pod>::new(
        move |_| {
            s1.lock().push(false);
            async { Ok(list_of("1", vec![pod("p1", "1")])) }.boxed()
        },
        move |o: ListOptions| {
            s2.lock().push(o.send_initial_events == Some(true));
            let mut events = vec![];
            if o.send_initial_events == Some(true) {
                events = vec![WatchEvent::Added(pod("p1", "1")), end("1")];
            }
            let t = t.clone();
            async move { Ok(events_then_cancel(events, t)) }.boxed()
        },
    );
    if streaming {
        lw = lw.with_streaming_list();
    }
    // shared behind an Arc, as the factory and informers hold it: the answer is forwarded
    let lw: Arc<dyn kinformer::reflector::ListerWatcher<Pod>> = Arc::new(Arc::new(lw));
    let store = RecordingStore::new();
    let mut b = Reflector::builder(lw, store.clone());
    if let Some(m) = mode {
        b = b.config(&InformerConfig::default().initial_list(m));
    }
    b.build().list_and_watch(&token).await.unwrap();
    let first_is_streaming_watch = seen.lock()[0];
    (first_is_streaming_watch, store.ops())
}

// Ours: `InitialListMode::Auto` (the default) streams exactly when the source says its server
// can (client-go 1.35+: `WatchListClient` on, fakes opted out); the other modes decide alone.
#[tokio::test(start_paused = true)]
async fn auto_mode_streams_when_the_source_supports_it() {
    use InitialListMode::Auto;
    let p1 = vec![Op::Replace(name_rv_pairs(&[("p1", "1")]), "1".into())];
    assert_eq!(first_request(true, Some(Auto)).await, (true, p1.clone()));
    assert_eq!(first_request(false, Some(Auto)).await, (false, p1.clone()));
    assert_eq!(first_request(true, None).await, (true, p1.clone()));
    assert_eq!(first_request(false, None).await, (false, p1.clone()));
    assert_eq!(
        first_request(true, Some(InitialListMode::ListThenWatch)).await,
        (false, p1.clone())
    );
    assert_eq!(
        first_request(false, Some(InitialListMode::StreamingList)).await,
        (true, p1)
    );
}
