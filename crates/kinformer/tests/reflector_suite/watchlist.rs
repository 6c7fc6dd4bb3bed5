//! The streaming list (watch-list), ported from client-go's `reflector_watchlist_test.go`
//! (`TestWatchList` scenarios, `TestWatchListResourceVersion`) and the "UseWatchList enabled"
//! case of `TestReflectorListAndWatch`, plus the end-bookmark timeout we add.


use kinformer::reflector::{EndBookmarkWait, InitialListMode};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kinformer::reflector::{
    INITIAL_EVENTS_END_ANNOTATION, ListWatchError, Reflector, ReflectorError, Status,
    TransportErrorKind, WatchEvent,
};
use crate::support::*;
use tokio_util::sync::CancellationToken;

fn watch_list_reflector(
    lw: Arc<ScriptedLw>,
    store: Arc<RecordingStore>,
) -> Reflector<Pod, Arc<RecordingStore>> {
    Reflector::builder(lw, store)
        .name("watch-list")
        .initial_list(InitialListMode::StreamingList)
        .build()
}

fn end(rv: &str) -> WatchEvent<Pod> {
    WatchEvent::initial_events_end(rv)
}

fn no_list(
    _: &kinformer::reflector::ListOptions,
    _: usize,
) -> Result<kinformer::reflector::ListPage<Pod>, ListWatchError> {
    panic!("no LIST request expected")
}

// "the reflector won't be synced if the bookmark event has been received" (i.e. has not)
#[tokio::test(start_paused = true)]
async fn watch_list_not_synced_without_bookmark() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(no_list, move |_, _| {
        Ok(events_then_cancel(
            vec![WatchEvent::Added(pod("p1", "1"))],
            t.clone(),
        ))
    });
    let store = RecordingStore::new();
    let r = watch_list_reflector(lw.clone(), store.clone());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![watch_list_opts("")]
    );
    assert!(
        store.ops().is_empty(),
        "nothing reaches the store before the bookmark"
    );
    assert_eq!(r.last_sync_resource_version(), "");
}

// "the reflector uses the old LIST/WATCH semantics if the UseWatchList is turned off"
#[tokio::test(start_paused = true)]
async fn watch_list_turned_off_uses_list_and_watch() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![pod("p1", "1")])),
        move |_, _| {
            t.cancel();
            Ok(events_then_pending(vec![]))
        },
    );
    let store = RecordingStore::new();
    let r = Reflector::builder(lw.clone(), store.clone()).build();
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![list_opts("0", Some(500), None), watch_opts("1")]
    );
    assert_eq!(store.content(), name_rv_pairs(&[("p1", "1")]));
}

async fn fallback_case(err: ListWatchError) {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![pod("p1", "1")])),
        move |o, _| {
            if o.send_initial_events == Some(true) {
                return Err(err.clone());
            }
            Ok(events_then_cancel(
                vec![WatchEvent::Added(pod("p2", "2"))],
                t.clone(),
            ))
        },
    );
    let store = RecordingStore::new();
    let r = watch_list_reflector(lw.clone(), store.clone());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![
            watch_list_opts(""),
            list_opts("0", Some(500), None),
            watch_opts("1")
        ]
    );
    assert_eq!(store.content(), name_rv_pairs(&[("p1", "1"), ("p2", "2")]));
}

// "returning any other error than apierrors.NewInvalid forces fallback"
#[tokio::test(start_paused = true)]
async fn watch_list_any_other_error_forces_fallback() {
    fallback_case(ListWatchError::Transport {
        kind: TransportErrorKind::Other,
        message: "dummy error".into(),
    })
    .await;
}

// "the reflector can fall back to old LIST/WATCH semantics when a server doesn't support streaming"
#[tokio::test(start_paused = true)]
async fn watch_list_falls_back_when_server_does_not_support_streaming() {
    fallback_case(Status::invalid("streaming is not allowed").into()).await;
}

// "prove that the reflector is synced after receiving a bookmark event"
#[tokio::test(start_paused = true)]
async fn watch_list_synced_after_bookmark() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(no_list, move |_, _| {
        Ok(events_then_cancel(
            vec![
                WatchEvent::Added(pod("p1", "1")),
                WatchEvent::Added(pod("p2", "2")),
                end("2"),
            ],
            t.clone(),
        ))
    });
    let store = RecordingStore::new();
    let r = watch_list_reflector(lw.clone(), store.clone());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![watch_list_opts("")]
    );
    assert_eq!(
        store.ops(),
        vec![Op::Replace(
            name_rv_pairs(&[("p1", "1"), ("p2", "2")]),
            "2".into()
        )]
    );
    assert_eq!(r.last_sync_resource_version(), "2");
}

// "check if Updates and Deletes events are propagated during streaming (until the bookmark is received)"
#[tokio::test(start_paused = true)]
async fn watch_list_updates_and_deletes_during_streaming() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(no_list, move |_, _| {
        Ok(events_then_cancel(
            vec![
                WatchEvent::Added(pod("p1", "1")),
                WatchEvent::Added(pod("p2", "2")),
                WatchEvent::Modified(pod("p1", "3")),
                WatchEvent::Added(pod("p3", "4")),
                WatchEvent::Deleted(pod("p3", "5")),
                end("5"),
            ],
            t.clone(),
        ))
    });
    let store = RecordingStore::new();
    let r = watch_list_reflector(lw.clone(), store.clone());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(lw.count(Verb::Watch), 1);
    assert_eq!(
        store.ops(),
        vec![Op::Replace(
            name_rv_pairs(&[("p1", "3"), ("p2", "2")]),
            "5".into()
        )]
    );
}

// "checks if the reflector retries 429"
#[tokio::test(start_paused = true)]
async fn watch_list_retries_429() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(no_list, move |_, n| {
        if n < 3 {
            return Err(Status::too_many_requests("busy, check again later", 1).into());
        }
        Ok(events_then_cancel(
            vec![WatchEvent::Added(pod("p1", "1")), end("2")],
            t.clone(),
        ))
    });
    let store = RecordingStore::new();
    let r = watch_list_reflector(lw.clone(), store.clone());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![watch_list_opts(""); 3]
    );
    assert_eq!(store.content(), name_rv_pairs(&[("p1", "1")]));
}

// "check if stopping a watcher before sync results in creating a new watch-list request"
#[tokio::test(start_paused = true)]
async fn watch_list_stopped_before_sync_makes_a_new_watch_list_request() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(no_list, move |_, n| match n {
        1 => Ok(events_then_close(vec![WatchEvent::Added(pod("p1", "1"))])),
        _ => Ok(events_then_cancel(
            vec![WatchEvent::Added(pod("p1", "1")), end("1")],
            t.clone(),
        )),
    });
    let store = RecordingStore::new();
    let r = watch_list_reflector(lw.clone(), store.clone());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![watch_list_opts(""); 2]
    );
    assert_eq!(store.content(), name_rv_pairs(&[("p1", "1")]));
}

// "stopping a watcher after synchronization results in creating a new watch request"
#[tokio::test(start_paused = true)]
async fn watch_list_stopped_after_sync_makes_a_new_watch_request() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(no_list, move |_, n| match n {
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
    });
    let store = RecordingStore::new();
    let r = watch_list_reflector(lw.clone(), store.clone());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![watch_list_opts(""), watch_opts("3")]
    );
    assert_eq!(
        store.content(),
        name_rv_pairs(&[("p1", "1"), ("p2", "2"), ("p3", "3"), ("p4", "4")])
    );
}

// "expiring an established watcher results in returning an error from the reflector"
#[tokio::test(start_paused = true)]
async fn watch_list_expiring_an_established_watcher_returns_an_error() {
    let lw = ScriptedLw::new(no_list, |_, n| match n {
        1 => Ok(events_then_close(vec![
            WatchEvent::Added(pod("p1", "1")),
            end("2"),
            WatchEvent::Added(pod("p3", "3")),
        ])),
        _ => Err(Status::expired("rv already expired").into()),
    });
    let store = RecordingStore::new();
    let r = watch_list_reflector(lw.clone(), store.clone());
    let err = r
        .list_and_watch(&CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ReflectorError::Watch(e) if e.is_expired()),
        "{err:?}"
    );
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![watch_list_opts(""), watch_opts("3")]
    );
    assert_eq!(store.content(), name_rv_pairs(&[("p1", "1"), ("p3", "3")]));
}

// "prove that the reflector is checking the value of the initialEventsEnd annotation"
#[tokio::test(start_paused = true)]
async fn watch_list_checks_the_initial_events_end_annotation_value() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(no_list, move |_, _| {
        Ok(events_then_cancel(
            vec![
                WatchEvent::Added(pod("p1", "1")),
                WatchEvent::Added(pod("p2", "2")),
                WatchEvent::Bookmark {
                    resource_version: "2".into(),
                    annotations: BTreeMap::from([(
                        INITIAL_EVENTS_END_ANNOTATION.to_owned(),
                        "false".to_owned(),
                    )]),
                },
            ],
            t.clone(),
        ))
    });
    let store = RecordingStore::new();
    let r = watch_list_reflector(lw.clone(), store.clone());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(lw.count(Verb::Watch), 1);
    assert!(
        store.ops().is_empty(),
        "\"false\" does not end the initial events"
    );
}

// client-go TestWatchListResourceVersion: "empty resource version", "empty resource version
// without bookmark event", "non empty resource version with bookmark event and initial events
// annotation".
#[tokio::test(start_paused = true)]
async fn watch_list_resource_version() {
    let cases: Vec<(Vec<WatchEvent<Pod>>, &str)> = vec![
        (vec![], ""),
        (vec![WatchEvent::Added(pod("p1", "1"))], ""),
        (vec![WatchEvent::Added(pod("p1", "1")), end("2")], "2"),
    ];
    for (events, expected) in cases {
        let token = CancellationToken::new();
        let t = token.clone();
        let lw = ScriptedLw::new(no_list, move |_, _| {
            Ok(events_then_cancel(events.clone(), t.clone()))
        });
        let r = watch_list_reflector(lw, RecordingStore::new());
        r.list_and_watch(&token).await.unwrap();
        assert_eq!(r.last_sync_resource_version(), expected);
    }
}

// client-go TestReflectorListAndWatch / "UseWatchList enabled": after the end bookmark the same
// stream carries on as the watch.
#[tokio::test(start_paused = true)]
async fn reflector_list_and_watch_use_watch_list_enabled() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(no_list, move |_, n| {
        assert_eq!(n, 1, "only one watch expected");
        Ok(events_then_cancel(
            vec![
                WatchEvent::Added(pod("foo", "1")),
                end("1"),
                WatchEvent::Modified(pod("foo", "2")),
                WatchEvent::Added(pod("bar", "3")),
                WatchEvent::Added(pod("baz", "4")),
                WatchEvent::Added(pod("qux", "5")),
                WatchEvent::Added(pod("zoo", "6")),
            ],
            t.clone(),
        ))
    });
    let store = RecordingStore::new();
    let r = watch_list_reflector(lw.clone(), store.clone());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![watch_list_opts("")]
    );
    assert_eq!(
        store.ops()[..2],
        [
            Op::Replace(name_rv_pairs(&[("foo", "1")]), "1".into()),
            Op::Update("foo".into(), "2".into()),
        ]
    );
    assert_eq!(
        store.content(),
        name_rv_pairs(&[
            ("bar", "3"),
            ("baz", "4"),
            ("foo", "2"),
            ("qux", "5"),
            ("zoo", "6")
        ])
    );
    assert_eq!(r.last_sync_resource_version(), "6");
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
        .initial_list(InitialListMode::StreamingList)
        .end_bookmark_wait(EndBookmarkWait::After(Duration::from_secs(10)))
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
