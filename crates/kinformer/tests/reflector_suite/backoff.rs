//! Retries, backoff, watch timeouts and the resync timer, ported from client-go's
//! `reflector_test.go` (each test names the case it ports), with paused tokio time.

use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kinformer::InformerConfig;
use kinformer::reflector::{
    BackoffConfig, ListWatchError, Reflector, ReflectorError, Status, WatchEvent,
};
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
            .config(&InformerConfig::default().backoff(BackoffConfig {
                initial: Duration::from_millis(1),
                cap: Duration::from_millis(50),
                factor: 2.0,
                jitter: 1.0,
                reset_after: Duration::from_millis(100),
            }))
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
            b = b.config(&InformerConfig::default().backoff(cfg));
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
        .config(&InformerConfig::default().backoff(flat_backoff(Duration::from_secs(1))))
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

// client-go's rest client (`rest/with_retry.go`, `maxRetries` 10): a watch refused with 429
// and `Retry-After: 1` is asked again after 1 s, ten times, without a step of the Reflector's
// backoff; the eleventh refusal costs a backoff step. A watch that opens starts the count over.
#[tokio::test(start_paused = true)]
async fn retry_after_is_waited_alone_ten_times_then_backs_off() {
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![])),
        |_, n| match n {
            1..=11 | 13..=15 => Err(Status::too_many_requests("throttled", 1).into()),
            // opens, runs for 5 s and closes: the next refusals are a new run of retries
            12 => Ok(futures::stream::pending()
                .take_until(tokio::time::sleep(Duration::from_secs(5)))
                .boxed()),
            _ => Ok(events_then_pending(vec![])),
        },
    );
    let r = Reflector::builder(lw.clone(), RecordingStore::new())
        .config(&InformerConfig::default().backoff(BackoffConfig {
            initial: Duration::from_secs(10),
            cap: Duration::from_secs(100),
            factor: 2.0,
            jitter: 0.0,
            reset_after: Duration::from_secs(3600),
        }))
        .build();
    let token = CancellationToken::new();
    let run = tokio::spawn({
        let token = token.clone();
        async move { r.list_and_watch(&token).await }
    });
    tokio::time::sleep(Duration::from_secs(120)).await;
    token.cancel();
    run.await.unwrap().unwrap();
    let at: Vec<_> = lw
        .requests()
        .into_iter()
        .filter(|r| r.verb == Verb::Watch)
        .map(|r| r.at)
        .collect();
    assert_eq!(at.len(), 16, "{at:?}");
    let gaps: Vec<u64> = at.windows(2).map(|w| (w[1] - w[0]).as_secs()).collect();
    // 10 × Retry-After, then the first backoff step (10 s); the watch that opened runs 5 s;
    // then Retry-After again, three times
    assert_eq!(
        gaps,
        [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 10, 5, 1, 1, 1],
        "{at:?}"
    );
    assert_eq!(lw.count(Verb::List), 1, "no relist");
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
        .config(&InformerConfig::default().backoff(flat_backoff(Duration::ZERO)))
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
            .config(&InformerConfig::default().max_internal_error_retry_duration(max))
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
        .config(&InformerConfig::default().resync_period(Duration::from_millis(1)))
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
            .config(&InformerConfig::default().resync_period(Duration::from_secs(10)))
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
            b = b.config(&InformerConfig::default().min_watch_timeout(min));
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
