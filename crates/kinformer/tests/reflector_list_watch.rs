//! The list+watch protocol: the exact request sequence for each rule, ported from client-go's
//! `reflector_test.go` (each test names the case it ports).

mod reflector_support;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kinformer::reflector::{
    BackoffConfig, ListPage, ListWatchError, Reflector, ReflectorError, Status, WatchEvent,
};
use parking_lot::Mutex;
use reflector_support::*;
use tokio_util::sync::CancellationToken;

fn reflector(
    lw: Arc<ScriptedLw>,
    store: Arc<RecordingStore>,
) -> Reflector<Pod, Arc<RecordingStore>> {
    Reflector::builder(lw, store).name("test-reflector").build()
}

/// No backoff noise: every delay is exactly `d`.
fn flat_backoff(d: Duration) -> BackoffConfig {
    BackoffConfig {
        initial: d,
        cap: d,
        factor: 1.0,
        jitter: 0.0,
        reset_after: Duration::from_secs(3600),
    }
}

// client-go TestReflectorListAndWatch / "UseWatchList disabled"
#[tokio::test(start_paused = true)]
async fn reflector_list_and_watch_use_watch_list_disabled() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![pod("foo", "1")])),
        move |_, n| {
            assert_eq!(n, 1, "only one watch expected");
            Ok(events_then_cancel(
                vec![
                    WatchEvent::Modified(pod("foo", "2")),
                    WatchEvent::Added(pod("bar", "3")),
                    WatchEvent::Added(pod("baz", "4")),
                    WatchEvent::Added(pod("qux", "5")),
                    WatchEvent::Added(pod("zoo", "6")),
                ],
                t.clone(),
            ))
        },
    );
    let store = RecordingStore::new();
    let r = reflector(lw.clone(), store.clone());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![list_opts("0", Some(500), None), watch_opts("1")]
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

// client-go TestReflectorListAndWatchWithErrors: consecutive cycles share one store; list and
// watch errors surface as the cycle's error.
#[tokio::test(start_paused = true)]
async fn reflector_list_and_watch_with_errors() {
    struct Case {
        list: Option<ListPage<Pod>>,
        list_err: Option<ListWatchError>,
        events: Vec<WatchEvent<Pod>>,
        watch_err: Option<ListWatchError>,
    }
    let mk_list = |rv: &str, pods: Vec<Pod>| Some(list_of(rv, pods));
    let table = vec![
        Case {
            list: mk_list("1", vec![]),
            list_err: None,
            events: vec![
                WatchEvent::Added(pod("foo", "2")),
                WatchEvent::Added(pod("bar", "3")),
            ],
            watch_err: None,
        },
        Case {
            list: mk_list("3", vec![pod("foo", "2"), pod("bar", "3")]),
            list_err: None,
            events: vec![
                WatchEvent::Deleted(pod("foo", "4")),
                WatchEvent::Added(pod("qux", "5")),
            ],
            watch_err: None,
        },
        Case {
            list: None,
            list_err: Some(ListWatchError::Decode("a list error".into())),
            events: vec![],
            watch_err: None,
        },
        Case {
            list: mk_list("5", vec![pod("bar", "3"), pod("qux", "5")]),
            list_err: None,
            events: vec![],
            watch_err: Some(ListWatchError::Decode("a watch error".into())),
        },
        Case {
            list: mk_list("5", vec![pod("bar", "3"), pod("qux", "5")]),
            list_err: None,
            events: vec![WatchEvent::Added(pod("baz", "6"))],
            watch_err: None,
        },
        Case {
            list: mk_list("6", vec![pod("bar", "3"), pod("qux", "5"), pod("baz", "6")]),
            list_err: None,
            events: vec![],
            watch_err: None,
        },
    ];
    let store = RecordingStore::new();
    for (line, case) in table.into_iter().enumerate() {
        if let Some(list) = &case.list {
            // what the store holds before this cycle is exactly what the server lists now
            let mut expected: Vec<(String, String)> = list
                .items
                .iter()
                .map(|p| {
                    (
                        p.metadata.name.clone().unwrap(),
                        p.metadata.resource_version.clone().unwrap(),
                    )
                })
                .collect();
            expected.sort();
            assert_eq!(store.content(), expected, "case {line}");
        }
        let token = CancellationToken::new();
        let t = token.clone();
        let list_result = match (&case.list, &case.list_err) {
            (_, Some(e)) => Err(e.clone()),
            (Some(l), None) => Ok(l.clone()),
            (None, None) => unreachable!(),
        };
        let events = case.events.clone();
        let watch_err = Mutex::new(case.watch_err.clone());
        let lw = ScriptedLw::new(
            move |_, _| list_result.clone(),
            move |_, _| {
                if let Some(e) = watch_err.lock().take() {
                    return Err(e);
                }
                Ok(events_then_cancel(events.clone(), t.clone()))
            },
        );
        let r = reflector(lw, store.clone());
        let result = r.list_and_watch(&token).await;
        match (case.list_err, case.watch_err) {
            (Some(e), _) => assert!(
                matches!(result, Err(ReflectorError::List(ref got)) if *got == e),
                "case {line}: {result:?}"
            ),
            (None, Some(e)) => assert!(
                matches!(result, Err(ReflectorError::Watch(ref got)) if *got == e),
                "case {line}: {result:?}"
            ),
            (None, None) => assert!(result.is_ok(), "case {line}: {result:?}"),
        }
    }
}

// client-go TestReflectorListAndWatchInitConnBackoff: refused connections when opening a watch
// are retried after exponential backoff delays, without a relist.
#[tokio::test(start_paused = true)]
async fn reflector_list_and_watch_init_conn_backoff() {
    // (failures, lower bound, upper bound): bases 1,2,4,8,16 ms (+ up to 100% jitter), and with
    // the 50 ms cap: 1+2+4+8+16+32 + 34×50 ms (+ jitter).
    for (fails, lower, upper) in [(5usize, 31u64, 62u64), (40, 1763, 3526)] {
        let token = CancellationToken::new();
        let t = token.clone();
        let lw = ScriptedLw::new(
            |_, _| Ok(list_of("1", vec![])),
            move |_, n| {
                if n <= fails {
                    return Err(ListWatchError::connection_refused("connection refused"));
                }
                t.cancel();
                Ok(events_then_pending(vec![]))
            },
        );
        let store = RecordingStore::new();
        let r = Reflector::builder(lw.clone(), store)
            .backoff(BackoffConfig {
                initial: Duration::from_millis(1),
                cap: Duration::from_millis(50),
                factor: 2.0,
                jitter: 1.0,
                reset_after: Duration::from_millis(100),
            })
            .build();
        let start = tokio::time::Instant::now();
        r.list_and_watch(&token).await.unwrap();
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_millis(lower),
            "{fails}: {elapsed:?}"
        );
        assert!(
            elapsed <= Duration::from_millis(upper),
            "{fails}: {elapsed:?}"
        );
        assert_eq!(lw.count(Verb::List), 1);
        assert_eq!(lw.count(Verb::Watch), fails + 1);
        assert!(lw.watch_rvs().iter().all(|rv| rv == "1"));
    }
}

// client-go TestNewReflectorWithCustomBackoff
#[tokio::test(start_paused = true)]
async fn new_reflector_with_custom_backoff() {
    let cases: [(Option<BackoffConfig>, usize, Duration, Duration); 2] = [
        (None, 2, Duration::ZERO, Duration::from_secs(10)),
        (
            Some(BackoffConfig {
                initial: Duration::from_millis(10),
                cap: Duration::from_millis(100),
                factor: 2.0,
                jitter: 0.0,
                reset_after: Duration::from_secs(120),
            }),
            5,
            Duration::from_millis(250),
            Duration::from_millis(300),
        ),
    ];
    for (backoff, fails, lower, upper) in cases {
        let token = CancellationToken::new();
        let t = token.clone();
        let lw = ScriptedLw::new(
            |_, _| Ok(list_of("1", vec![])),
            move |_, n| {
                if n <= fails {
                    return Err(ListWatchError::connection_refused("connection refused"));
                }
                t.cancel();
                Ok(events_then_pending(vec![]))
            },
        );
        let mut b = Reflector::builder(lw, RecordingStore::new());
        if let Some(cfg) = backoff {
            b = b.backoff(cfg);
        }
        let r = b.build();
        let start = tokio::time::Instant::now();
        r.list_and_watch(&token).await.unwrap();
        let elapsed = start.elapsed();
        assert!(elapsed >= lower && elapsed <= upper, "{elapsed:?}");
    }
}

// client-go TestBackoffOnTooManyRequests: a 429 when opening the watch and a 429 ERROR event
// each cost one backoff delay.
#[tokio::test(start_paused = true)]
async fn backoff_on_too_many_requests() {
    let err = Status::too_many_requests("too many requests", 1);
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![])),
        move |_, n| match n {
            1 => Err(err.clone().into()),
            2 => Ok(events_then_close(vec![WatchEvent::Error(err.clone())])),
            _ => Ok(events_then_close(vec![])),
        },
    );
    let r = Reflector::builder(lw.clone(), RecordingStore::new())
        .backoff(flat_backoff(Duration::from_secs(1)))
        .build();
    let start = tokio::time::Instant::now();
    let result = r.list_and_watch(&CancellationToken::new()).await;
    // the third watch closes at once without events: client-go logs that and returns; we
    // report it.
    assert!(
        matches!(result, Err(ReflectorError::VeryShortWatch { .. })),
        "{result:?}"
    );
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(2),
        "two backoff delays"
    );
    assert_eq!(lw.count(Verb::Watch), 3);
    assert_eq!(lw.count(Verb::List), 1);
}

// client-go TestNoRelistOnTooManyRequests
#[tokio::test(start_paused = true)]
async fn no_relist_on_too_many_requests() {
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![])),
        |_, n| {
            if n < 5 {
                return Err(Status::too_many_requests("too many requests", 1).into());
            }
            Ok(events_then_close(vec![]))
        },
    );
    let r = Reflector::builder(lw.clone(), RecordingStore::new())
        .backoff(flat_backoff(Duration::ZERO))
        .build();
    let _ = r.list_and_watch(&CancellationToken::new()).await;
    assert_eq!(lw.count(Verb::List), 1);
    assert_eq!(lw.count(Verb::Watch), 5);
    assert_eq!(lw.watch_rvs(), vec!["1"; 5]);
}

// client-go TestRetryInternalError: "retries off", "retries on, all calls fail",
// "retries on, one call successful". Each watch takes one second; at call `rewind` a minute
// passes on top.
#[tokio::test(start_paused = true)]
async fn retry_internal_error() {
    for (name, max, rewind, want_retries) in [
        ("retries off", Duration::ZERO, 0usize, 0usize),
        ("retries on, all calls fail", Duration::from_secs(30), 0, 31),
        (
            "retries on, one call successful",
            Duration::from_secs(30),
            10,
            40,
        ),
    ] {
        let lw = ScriptedLw::new_async(
            |_, _| Ok(list_of("1", vec![])),
            move |_, n| {
                Box::pin(async move {
                    if n == rewind {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Ok(events_then_close(vec![WatchEvent::Error(
                        Status::internal_error("etcdserver: no leader"),
                    )]))
                })
            },
        );
        let r = Reflector::builder(lw.clone(), RecordingStore::new())
            .max_internal_error_retry_duration(max)
            .build();
        let result = r.list_and_watch(&CancellationToken::new()).await;
        assert!(
            matches!(result, Err(ReflectorError::WatchEnded(ref e)) if e.is_internal_error()),
            "{name}: {result:?}"
        );
        assert_eq!(lw.count(Verb::Watch) - 1, want_retries, "{name}");
        assert_eq!(
            lw.count(Verb::List),
            1,
            "{name}: internal errors never relist"
        );
    }
}

// client-go TestReflectorResync: the resync timer calls store.resync(); a failing resync ends
// the cycle.
#[tokio::test(start_paused = true)]
async fn reflector_resync() {
    let store = RecordingStore::new();
    *store.resync_hook.lock() = Some(Box::new(|n| {
        if n == 2 {
            Err(StoreError("expected resync reached".into()))
        } else {
            Ok(())
        }
    }));
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("0", vec![])),
        |_, _| Ok(events_then_pending(vec![])),
    );
    let r = Reflector::builder(lw, store.clone())
        .resync_period(Duration::from_millis(1))
        .build();
    let start = tokio::time::Instant::now();
    let result = r.list_and_watch(&CancellationToken::new()).await;
    assert!(
        matches!(
            result,
            Err(ReflectorError::Store {
                operation: "resync",
                ..
            })
        ),
        "{result:?}"
    );
    assert_eq!(store.resync_count(), 2);
    assert_eq!(start.elapsed(), Duration::from_millis(2));
}

#[tokio::test(start_paused = true)]
async fn resync_timer_consults_should_resync() {
    let store = RecordingStore::new();
    let token = CancellationToken::new();
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![])),
        |_, _| Ok(events_then_pending(vec![])),
    );
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let a = asked.clone();
    let r = Arc::new(
        Reflector::builder(lw, store.clone())
            .resync_period(Duration::from_secs(10))
            .should_resync(move || a.fetch_add(1, std::sync::atomic::Ordering::SeqCst) % 2 == 1)
            .build(),
    );
    let task = tokio::spawn({
        let r = r.clone();
        let token = token.clone();
        async move { r.run(token).await }
    });
    tokio::time::sleep(Duration::from_secs(45)).await;
    token.cancel();
    task.await.unwrap();
    assert_eq!(
        asked.load(std::sync::atomic::Ordering::SeqCst),
        4,
        "timer fired at 10, 20, 30, 40 s"
    );
    assert_eq!(
        store.resync_count(),
        2,
        "resync only when should_resync said yes"
    );
}

// client-go TestReflectorWatchListPageSize: a configured page size paginates every list
// (here: the first list, then a relist at "10").
#[tokio::test(start_paused = true)]
async fn reflector_watch_list_page_size() {
    let pods = numbered_pods(10);
    let lw = ScriptedLw::new(
        move |o, _| {
            assert_eq!(o.limit, Some(4));
            Ok(
                match (o.resource_version.as_str(), o.continue_token.as_deref()) {
                    ("0", None) => list_of("10", vec![]),
                    (_, None) => list_of("10", pods[0..4].to_vec()).with_continue("C1"),
                    (_, Some("C1")) => list_of("10", pods[4..8].to_vec()).with_continue("C2"),
                    (_, Some("C2")) => list_of("10", pods[8..10].to_vec()),
                    other => panic!("unexpected {other:?}"),
                },
            )
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let store = RecordingStore::new();
    let r = Reflector::builder(lw.clone(), store.clone())
        .page_size(4)
        .build();
    let token = CancellationToken::new();
    assert!(r.list_and_watch(&token).await.unwrap_err().is_expired());
    assert!(r.list_and_watch(&token).await.unwrap_err().is_expired());
    assert_eq!(store.content().len(), 10);
    let lists: Vec<_> = lw
        .requests_without_timeouts(300, 600)
        .into_iter()
        .filter(|(v, _)| *v == Verb::List)
        .collect();
    assert_eq!(
        lists,
        vec![
            list_opts("0", Some(4), None),
            list_opts("10", Some(4), None),
            list_opts("", Some(4), Some("C1")),
            list_opts("", Some(4), Some("C2")),
        ]
    );
}

// client-go TestReflectorNotPaginatingNotConsistentReads: a relist at a specific version is
// not paginated.
#[tokio::test(start_paused = true)]
async fn reflector_not_paginating_not_consistent_reads() {
    let lw = ScriptedLw::new(
        |o, _| match o.resource_version.as_str() {
            "0" => Ok(list_of("10", vec![])),
            "10" => {
                assert_eq!(o.limit, None);
                Ok(list_of("10", numbered_pods(10)))
            }
            other => panic!("unexpected rv {other}"),
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let store = RecordingStore::new();
    let r = reflector(lw.clone(), store.clone());
    let token = CancellationToken::new();
    let _ = r.list_and_watch(&token).await;
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 10);
    assert_eq!(lw.list_rvs(), vec!["0", "10"]);
}

// client-go TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled: when the first list
// at "0" came back paginated (no watch cache), relists keep paginating with 500.
#[tokio::test(start_paused = true)]
async fn reflector_paginating_non_consistent_reads_if_watch_cache_disabled() {
    let pods = numbered_pods(10);
    let lw = ScriptedLw::new(
        move |o, _| {
            assert_eq!(o.limit, Some(500));
            Ok(match o.continue_token.as_deref() {
                None => list_of("10", pods[0..4].to_vec()).with_continue("C1"),
                Some("C1") => list_of("10", pods[4..8].to_vec()).with_continue("C2"),
                Some("C2") => list_of("10", pods[8..10].to_vec()),
                other => panic!("unexpected {other:?}"),
            })
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let store = RecordingStore::new();
    let r = reflector(lw.clone(), store.clone());
    let token = CancellationToken::new();
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 10);
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 10);
    assert_eq!(lw.list_rvs(), vec!["0", "", "", "10", "", ""]);
}

// client-go TestReflectorResyncWithResourceVersion: a relist asks for the last synced version.
#[tokio::test(start_paused = true)]
async fn reflector_resync_with_resource_version() {
    let pods = numbered_pods(8);
    let lw = ScriptedLw::new(
        move |o, _| match o.resource_version.as_str() {
            "0" => Ok(list_of("10", pods[0..4].to_vec())),
            "10" => Ok(list_of("11", pods[0..8].to_vec())),
            other => panic!("unexpected rv {other}"),
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let store = RecordingStore::new();
    let r = reflector(lw.clone(), store.clone());
    let token = CancellationToken::new();
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 4);
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 8);
    assert_eq!(lw.list_rvs(), vec!["0", "10"]);
}

// client-go TestReflectorExpiredExactResourceVersion: a 410 on a relist lists again at "".
#[tokio::test(start_paused = true)]
async fn reflector_expired_exact_resource_version() {
    let pods = numbered_pods(8);
    let lw = ScriptedLw::new(
        move |o, _| match o.resource_version.as_str() {
            "0" => Ok(list_of("10", pods[0..4].to_vec())),
            "10" => Err(
                Status::expired("The resourceVersion for the provided watch is too old.").into(),
            ),
            "" => Ok(list_of("11", pods[0..8].to_vec())),
            other => panic!("unexpected rv {other}"),
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let store = RecordingStore::new();
    let r = reflector(lw.clone(), store.clone());
    let token = CancellationToken::new();
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 4);
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 8);
    assert_eq!(lw.list_rvs(), vec!["0", "10", ""]);
    assert_eq!(r.last_sync_resource_version(), "11");
}

// client-go TestReflectorFullListIfExpired: an expired continue token → one full list at the
// original version.
#[tokio::test(start_paused = true)]
async fn reflector_full_list_if_expired() {
    let pods = numbered_pods(8);
    let lw = ScriptedLw::new(
        move |o, _| match (
            o.resource_version.as_str(),
            o.continue_token.as_deref(),
            o.limit,
        ) {
            ("0", None, Some(4)) => Ok(list_of("10", pods[0..4].to_vec())),
            ("10", None, Some(4)) => Ok(list_of("11", pods[0..4].to_vec()).with_continue("C1")),
            ("", Some("C1"), Some(4)) => Err(Status::expired(
                "The resourceVersion for the provided watch is too old.",
            )
            .into()),
            ("10", None, None) => Ok(list_of("11", pods[0..8].to_vec())),
            other => panic!("unexpected list options {other:?}"),
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let store = RecordingStore::new();
    let r = Reflector::builder(lw.clone(), store.clone())
        .page_size(4)
        .build();
    let token = CancellationToken::new();
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 4);
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 8);
    assert_eq!(lw.list_rvs(), vec!["0", "10", "", "10"]);
}

// client-go TestReflectorFullListIfTooLarge: the three shapes of "too large resource version"
// each make the Reflector list again at "".
#[tokio::test(start_paused = true)]
async fn reflector_full_list_if_too_large() {
    let version = Arc::new(Mutex::new(30));
    let lw = ScriptedLw::new(
        move |o, _| match o.resource_version.as_str() {
            "0" => Ok(list_of("20", vec![])),
            "20" => Err(Status::timeout("too large resource version")
                .with_cause("ResourceVersionTooLarge", "")
                .into()),
            "30" => Err(Status::timeout("too large resource version")
                .with_cause("", "Too large resource version")
                .into()),
            "40" => Err(Status::timeout("Too large resource version").into()),
            "" => {
                let mut v = version.lock();
                let rv = v.to_string();
                *v += 10;
                Ok(list_of(&rv, vec![]))
            }
            other => panic!("unexpected rv {other}"),
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let r = reflector(lw.clone(), RecordingStore::new());
    let token = CancellationToken::new();
    for _ in 0..4 {
        let _ = r.list_and_watch(&token).await;
    }
    assert_eq!(lw.list_rvs(), vec!["0", "20", "", "30", "", "40", ""]);
}

// client-go TestWatchTimeout: "no timeout", "small timeout not honored", "30m timeout".
#[tokio::test(start_paused = true)]
async fn watch_timeout() {
    for (min, expected_min) in [
        (None, 300u32),
        (Some(Duration::from_secs(1)), 300),
        (Some(Duration::from_secs(1800)), 1800),
    ] {
        let token = CancellationToken::new();
        let t = token.clone();
        let lw = ScriptedLw::new(
            |_, _| Ok(list_of("10", vec![])),
            move |_, _| {
                t.cancel();
                Ok(events_then_pending(vec![]))
            },
        );
        let mut b = Reflector::builder(lw.clone(), RecordingStore::new());
        if let Some(min) = min {
            b = b.min_watch_timeout(min);
        }
        b.build().list_and_watch(&token).await.unwrap();
        let got = lw.requests()[1].options.timeout_seconds.unwrap();
        assert!((expected_min..=2 * expected_min).contains(&got), "{got}");
    }
}

#[tokio::test(start_paused = true)]
async fn watch_timeouts_are_random_in_five_to_ten_minutes() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("10", vec![])),
        move |_, n| {
            if n == 50 {
                t.cancel();
            }
            Ok(events_then_close(vec![WatchEvent::bookmark("11")]))
        },
    );
    let r = reflector(lw.clone(), RecordingStore::new());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        lw.count(Verb::Watch),
        50,
        "a watch that ends normally is reopened, no relist"
    );
    assert_eq!(lw.count(Verb::List), 1);
    let timeouts: std::collections::BTreeSet<u32> = lw
        .requests()
        .iter()
        .filter_map(|r| r.options.timeout_seconds)
        .collect();
    assert!(
        timeouts.iter().all(|t| (300..=600).contains(t)),
        "{timeouts:?}"
    );
    assert!(
        timeouts.len() > 1,
        "timeouts are drawn at random: {timeouts:?}"
    );
}

// client-go TestReflectorResourceVersionUpdate: every event's resourceVersion reaches
// update_resource_version (the pods are named here; nameless objects are skipped by design).
#[tokio::test(start_paused = true)]
async fn reflector_resource_version_update() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("10", vec![])),
        move |_, _| {
            Ok(events_then_cancel(
                vec![
                    WatchEvent::Added(pod("a", "10")),
                    WatchEvent::Modified(pod("a", "20")),
                    WatchEvent::bookmark("30"),
                    WatchEvent::Deleted(pod("a", "40")),
                ],
                t.clone(),
            ))
        },
    );
    let store = RecordingStore::new();
    let r = reflector(lw, store.clone());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(store.rv_updates(), vec!["10", "20", "30", "40"]);
    assert_eq!(r.last_sync_resource_version(), "40");
}
