//! Streaming lists that never wedge: a bounded number of attempts when the end bookmark does
//! not come, then lists, remembered per server for a while (kubernetes #140890); and a
//! `Retry-After` on a list honoured.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kinformer::InformerConfig;
use kinformer::reflector::{
    BackoffConfig, EndBookmarkWait, InitialListMode, ListWatchError, Reflector, Status,
    StreamingListFallback, StreamingListMemory, WatchEvent, WatchStream,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::support::*;

const MINUTE: Duration = Duration::from_secs(60);

fn config(
    attempts: u32,
    remember_for: Duration,
    memory: &StreamingListMemory,
) -> InformerConfig<Pod> {
    InformerConfig::default()
        .initial_list(InitialListMode::StreamingList)
        .streaming_lists(StreamingListFallback {
            attempts: NonZeroU32::new(attempts).unwrap(),
            remember_for,
            memory: Some(memory.clone()),
        })
}

fn reflector(
    lw: Arc<ScriptedLw>,
    config: &InformerConfig<Pod>,
    group: &str,
) -> Arc<Reflector<Pod, Arc<RecordingStore>>> {
    Arc::new(
        Reflector::builder(lw, RecordingStore::new())
            .name(format!("pods {group}"))
            .config(config)
            .streaming_list_server(group, "v1")
            .build(),
    )
}

fn is_streaming(r: &Req) -> bool {
    r.options.send_initial_events == Some(true)
}

/// A plain watch that ends after `after` with a 410, which makes the Reflector relist.
fn expire_after(after: Duration) -> WatchStream<Pod> {
    futures::stream::once(async move {
        tokio::time::sleep(after).await;
        Ok(WatchEvent::Error(Status::expired(
            "too old resource version",
        )))
    })
    .boxed()
}

/// The server of kubernetes #140890: every streaming list sends its objects and closes before
/// the end bookmark; lists work; plain watches end with a 410 after `relist_every`, forcing a
/// relist. Once `fixed` is set, streaming lists finish.
fn closing_server(
    relist_every: Duration,
    fixed: Arc<std::sync::atomic::AtomicBool>,
) -> Arc<ScriptedLw> {
    ScriptedLw::new(
        |_, n| Ok(list_of(&n.to_string(), vec![pod("p1", "1")])),
        move |o, _| {
            if o.send_initial_events == Some(true) {
                if fixed.load(std::sync::atomic::Ordering::SeqCst) {
                    return Ok(events_then_pending(vec![
                        WatchEvent::Added(pod("p1", "1")),
                        WatchEvent::initial_events_end("9"),
                    ]));
                }
                return Ok(events_then_close(vec![WatchEvent::Added(pod("p1", "1"))]));
            }
            Ok(expire_after(relist_every))
        },
    )
}

async fn run_for(r: &Arc<Reflector<Pod, Arc<RecordingStore>>>, time: Duration) {
    let token = CancellationToken::new();
    let task = tokio::spawn({
        let (r, token) = (r.clone(), token.clone());
        async move { r.run(token).await }
    });
    tokio::time::sleep(time).await;
    token.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_server_that_closes_every_streaming_list_costs_the_attempts_once_then_lists() {
    let memory = StreamingListMemory::new();
    let fixed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let lw = closing_server(MINUTE, fixed.clone());
    let r = reflector(lw.clone(), &config(3, 10 * MINUTE, &memory), "");
    // five relists or more in eight minutes (a relist every minute or so, the backoff's
    // jitter on top), all inside the ten minutes the fallback is remembered
    run_for(&r, 8 * MINUTE).await;
    let requests = lw.requests();
    let streaming = requests.iter().filter(|r| is_streaming(r)).count();
    assert_eq!(
        streaming, 3,
        "three streaming lists, then none: {requests:?}"
    );
    assert!(
        requests[..3].iter().all(is_streaming),
        "the attempts come first, in one cycle"
    );
    assert!(
        lw.count(Verb::List) >= 5,
        "every relist lists: {requests:?}"
    );
    assert!(r.store().content().contains(&("p1".into(), "1".into())));
    assert!(memory.fallback_remaining("/api/v1").is_some());
}

#[tokio::test(start_paused = true)]
async fn streaming_is_tried_again_once_the_fallback_period_is_over() {
    let memory = StreamingListMemory::new();
    let fixed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let lw = closing_server(MINUTE, fixed.clone());
    let r = reflector(lw.clone(), &config(3, 5 * MINUTE, &memory), "");
    let token = CancellationToken::new();
    let task = tokio::spawn({
        let (r, token) = (r.clone(), token.clone());
        async move { r.run(token).await }
    });
    tokio::time::sleep(MINUTE / 2).await;
    let remembered_at = Instant::now();
    assert!(memory.fallback_remaining("/api/v1").is_some());
    // the server is fixed; the Reflector keeps listing until the memory expires
    fixed.store(true, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(7 * MINUTE).await;
    token.cancel();
    task.await.unwrap();
    let requests = lw.requests();
    let streaming: Vec<_> = requests.iter().filter(|r| is_streaming(r)).collect();
    assert_eq!(streaming.len(), 4, "{requests:?}");
    let fourth = streaming[3].at;
    assert!(
        fourth >= remembered_at + 4 * MINUTE,
        "not retried before the fallback period ran out: {:?}",
        fourth - remembered_at
    );
    // the fourth finished, and its stream carries on as the watch: no list since
    let lists_after = requests
        .iter()
        .filter(|r| r.verb == Verb::List && r.at > fourth)
        .count();
    assert_eq!(lists_after, 0, "{requests:?}");
    assert_eq!(memory.fallback_remaining("/api/v1"), None);
}

#[tokio::test(start_paused = true)]
async fn reflectors_sharing_a_memory_spend_the_attempts_together_per_group_version() {
    let memory = StreamingListMemory::new();
    let never = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let first = closing_server(MINUTE, never.clone());
    let second = closing_server(MINUTE, never.clone());
    let other_group = closing_server(MINUTE, never.clone());
    let c = config(3, 10 * MINUTE, &memory);
    let a = reflector(first.clone(), &c, "");
    let b = reflector(second.clone(), &c, "");
    let apps = reflector(other_group.clone(), &c, "apps");
    run_for(&a, 2 * MINUTE).await;
    run_for(&b, 2 * MINUTE).await;
    run_for(&apps, 10 * Duration::from_secs(1)).await;
    let streaming = |lw: &ScriptedLw| lw.requests().iter().filter(|r| is_streaming(r)).count();
    assert_eq!(streaming(&first), 3);
    assert_eq!(streaming(&second), 0, "the second lists at once");
    assert!(second.count(Verb::List) >= 2);
    assert_eq!(
        streaming(&other_group),
        3,
        "another group/version is another server"
    );
}

#[tokio::test(start_paused = true)]
async fn a_refused_streaming_list_is_remembered_at_once() {
    let memory = StreamingListMemory::new();
    let lw = ScriptedLw::new(
        |_, n| Ok(list_of(&n.to_string(), vec![pod("p1", "1")])),
        |o, _| {
            if o.send_initial_events == Some(true) {
                return Err(Status::invalid(
                    "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
                )
                .into());
            }
            Ok(expire_after(MINUTE))
        },
    );
    let r = reflector(lw.clone(), &config(3, 10 * MINUTE, &memory), "");
    run_for(&r, 3 * MINUTE + Duration::from_secs(30)).await;
    let requests = lw.requests();
    assert_eq!(
        requests.iter().filter(|r| is_streaming(r)).count(),
        1,
        "{requests:?}"
    );
    assert_eq!(lw.count(Verb::List), 4, "the first list and three relists");
}

#[tokio::test(start_paused = true)]
async fn end_bookmark_timeouts_count_one_per_cycle() {
    let memory = StreamingListMemory::new();
    let lw = ScriptedLw::new(
        |_, n| Ok(list_of(&n.to_string(), vec![pod("p1", "1")])),
        |o, _| {
            if o.send_initial_events == Some(true) {
                // a server that ignores sendInitialEvents: a plain watch, no end bookmark
                return Ok(events_then_pending(vec![WatchEvent::Added(pod("p1", "1"))]));
            }
            Ok(expire_after(MINUTE))
        },
    );
    let c = config(2, 10 * MINUTE, &memory)
        .end_bookmark_wait(EndBookmarkWait::After(Duration::from_secs(10)));
    let r = reflector(lw.clone(), &c, "");
    run_for(&r, 5 * MINUTE).await;
    let requests = lw.requests();
    assert_eq!(
        requests.iter().filter(|r| is_streaming(r)).count(),
        2,
        "{requests:?}"
    );
    // each timed-out streaming list fell back to a list in its own cycle
    assert!(matches!(requests[1].verb, Verb::List), "{requests:?}");
}

/// A list answered `429` with `Retry-After`: the next list waits at least that long, however
/// short the backoff, and at most [`MAX_RETRY_AFTER`](kinformer::reflector::MAX_RETRY_AFTER).
#[tokio::test(start_paused = true)]
async fn a_list_answered_429_waits_its_retry_after() {
    for (retry_after, expected) in [(5, Duration::from_secs(5)), (3600, MINUTE)] {
        let lw = ScriptedLw::new(
            move |_, n| match n {
                1..=2 => Err(ListWatchError::from(Status::too_many_requests(
                    "storage is (re)initializing",
                    retry_after,
                ))),
                _ => Ok(list_of("7", vec![pod("p1", "7")])),
            },
            |_, _| Ok(events_then_pending(vec![])),
        );
        let c = InformerConfig::default()
            .initial_list(InitialListMode::ListThenWatch)
            .backoff(BackoffConfig {
                initial: Duration::from_millis(10),
                cap: Duration::from_millis(100),
                factor: 2.0,
                jitter: 0.0,
                reset_after: MINUTE,
            });
        let r = reflector(lw.clone(), &c, "");
        run_for(&r, 3 * MINUTE).await;
        let lists: Vec<_> = lw
            .requests()
            .into_iter()
            .filter(|r| r.verb == Verb::List)
            .collect();
        assert_eq!(lists.len(), 3, "no storm: {lists:?}");
        for pair in lists.windows(2) {
            let gap = pair[1].at - pair[0].at;
            assert!(
                gap >= expected && gap < expected + Duration::from_secs(1),
                "Retry-After {retry_after}: the next list came after {gap:?}"
            );
        }
        assert_eq!(r.last_sync_resource_version(), "7");
    }
}

/// Kubernetes 1.37's `ConsistentListFromCacheSkipTimeoutFallback`: a consistent list (at `""`,
/// here after the relist's version expired) that the watch cache cannot serve in time is
/// answered 429 with `Retry-After: 1`; the Reflector asks again, consistently, no sooner.
#[tokio::test(start_paused = true)]
async fn a_consistent_list_answered_429_is_asked_again_after_its_retry_after() {
    let lw = ScriptedLw::new(
        |o, n| match (n, o.resource_version.as_str()) {
            (1, "0") => Ok(list_of("5", vec![pod("p1", "5")])),
            (2, "5") => Err(Status::expired("too old resource version").into()),
            (3, "") => Err(Status::too_many_requests("Too large resource version", 1).into()),
            (4, "") => Ok(list_of("9", vec![pod("p1", "9")])),
            other => panic!("unexpected list {other:?}"),
        },
        |_, n| match n {
            1 => Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "too old resource version",
            ))])),
            _ => Ok(events_then_pending(vec![])),
        },
    );
    let c = InformerConfig::default()
        .initial_list(InitialListMode::ListThenWatch)
        .backoff(BackoffConfig {
            initial: Duration::from_millis(10),
            cap: Duration::from_millis(100),
            factor: 2.0,
            jitter: 0.0,
            reset_after: MINUTE,
        });
    let r = reflector(lw.clone(), &c, "");
    run_for(&r, MINUTE).await;
    let lists: Vec<_> = lw
        .requests()
        .into_iter()
        .filter(|r| r.verb == Verb::List)
        .collect();
    assert_eq!(lw.list_rvs(), ["0", "5", "", ""]);
    let gap = lists[3].at - lists[2].at;
    assert!(
        gap >= Duration::from_secs(1) && gap < Duration::from_secs(2),
        "{gap:?}"
    );
    assert_eq!(r.last_sync_resource_version(), "9");
}
