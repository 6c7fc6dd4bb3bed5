//! Fault injection, from Rust and over the admin HTTP endpoints.

use crate::common;

use std::time::Duration;

use common::*;
use kinformer_apiserver::{FailureRule, ServerConfig, Verb, WatchListFault, start};
use serde_json::json;

#[tokio::test]
async fn fail_next_requests_with_real_statuses() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    s.faults().fail_next(
        FailureRule::new(503, 2)
            .verb(Verb::List)
            .resource("pods")
            .retry_after(2),
    );
    // Other verbs and resources are unaffected.
    assert_eq!(get(a, "/api/v1/configmaps").await.code, 200);
    assert_eq!(get(a, "/api/v1/namespaces/default/pods/x").await.code, 404);
    for _ in 0..2 {
        let r = get(a, "/api/v1/pods").await;
        assert_eq!(r.code, 503);
        assert_eq!(r.json()["reason"], "ServiceUnavailable");
        assert_eq!(r.header("retry-after"), Some("2"));
    }
    assert_eq!(get(a, "/api/v1/pods").await.code, 200);
    assert!(s.faults().pending_rules().is_empty());

    s.faults()
        .fail_next(FailureRule::new(429, 1).retry_after(3));
    let r = get(a, "/api/v1/pods").await;
    assert_eq!(r.code, 429);
    assert_eq!(r.json()["reason"], "TooManyRequests");
    assert_eq!(r.json()["details"]["retryAfterSeconds"], 3);
    assert_eq!(r.header("retry-after"), Some("3"));

    s.faults()
        .fail_next(FailureRule::new(500, 1).verb(Verb::Create));
    let r = post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("p", json!({})),
    )
    .await;
    assert_eq!(r.code, 500);
    assert_eq!(r.json()["reason"], "InternalError");
    assert_eq!(
        r.json()["message"],
        "Internal error occurred: injected fault"
    );
    assert_eq!(
        get(a, "/api/v1/namespaces/default/pods/p").await.code,
        404,
        "a failed create stores nothing"
    );

    s.faults()
        .fail_next(FailureRule::new(410, 1).verb(Verb::Watch));
    let r = get(a, "/api/v1/pods?watch=true").await;
    assert_eq!(r.code, 410);
    assert_eq!(r.json()["reason"], "Expired");
    s.shutdown().await;
}

#[tokio::test]
async fn drop_watches_closes_every_stream() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let mut w1 = watch(
        a,
        &format!("/api/v1/pods?watch=true&resourceVersion={}", s.revision()),
    )
    .await;
    let mut w2 = watch(
        a,
        &format!(
            "/api/v1/configmaps?watch=true&resourceVersion={}",
            s.revision()
        ),
    )
    .await;
    s.faults().drop_watches();
    assert!(w1.next_within(SECS).await.is_none());
    assert!(w2.next_within(SECS).await.is_none());
    // New watches work.
    let mut w3 = watch(
        a,
        &format!("/api/v1/pods?watch=true&resourceVersion={}", s.revision()),
    )
    .await;
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("p", json!({})),
    )
    .await;
    assert_eq!(w3.next_within(SECS).await.unwrap()["type"], "ADDED");
    s.shutdown().await;
}

#[tokio::test]
async fn pause_and_resume_watch_delivery() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let mut w = watch(
        a,
        &format!("/api/v1/pods?watch=true&resourceVersion={}", s.revision()),
    )
    .await;
    s.faults().pause_watches();
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("p1", json!({})),
    )
    .await;
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("p2", json!({})),
    )
    .await;
    assert!(
        w.quiet_for(Duration::from_millis(200)).await,
        "nothing is delivered while paused"
    );
    s.faults().resume_watches();
    assert_eq!(
        w.next_within(SECS).await.unwrap()["object"]["metadata"]["name"],
        "p1"
    );
    assert_eq!(
        w.next_within(SECS).await.unwrap()["object"]["metadata"]["name"],
        "p2"
    );
    s.shutdown().await;
}

/// A watch delay holds every event back by the delay (on a watch already open), in order;
/// requests are not delayed; zero (or clear) turns it off.
#[tokio::test]
async fn watch_delay_holds_every_event_back_in_order() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let mut w = watch(
        a,
        &format!("/api/v1/pods?watch=true&resourceVersion={}", s.revision()),
    )
    .await;
    let delay = Duration::from_millis(300);
    s.faults().set_watch_delay(delay);
    let t0 = std::time::Instant::now();
    for name in ["p1", "p2", "p3"] {
        let r = post(
            a,
            "/api/v1/namespaces/default/pods",
            &pod_json(name, json!({})),
        )
        .await;
        assert_eq!(r.code, 201, "writes are not delayed");
    }
    assert!(t0.elapsed() < delay, "the writes themselves were not held");
    assert!(
        w.quiet_for(Duration::from_millis(200)).await,
        "nothing arrives before the delay"
    );
    for name in ["p1", "p2", "p3"] {
        let e = w.next_within(SECS).await.unwrap();
        assert_eq!(e["object"]["metadata"]["name"], name, "in order");
    }
    assert!(t0.elapsed() >= delay);
    // Off again (over HTTP): the next event comes at once.
    assert_eq!(
        post(a, "/__kinformer/faults/watch-delay", &json!({"millis": 0}))
            .await
            .code,
        200
    );
    // In flight events are still delivered after their delay; new ones at once.
    let t1 = std::time::Instant::now();
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("p4", json!({})),
    )
    .await;
    let e = w.next_within(SECS).await.unwrap();
    assert_eq!(e["object"]["metadata"]["name"], "p4");
    assert!(t1.elapsed() < delay, "no delay once turned off");
    // Set over HTTP too, and cleared by `clear`.
    assert_eq!(
        post(
            a,
            "/__kinformer/faults/watch-delay",
            &json!({"millis": 250})
        )
        .await
        .code,
        200
    );
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("p5", json!({})),
    )
    .await;
    assert!(
        w.quiet_for(Duration::from_millis(150)).await,
        "delayed again"
    );
    assert_eq!(
        w.next_within(SECS).await.unwrap()["object"]["metadata"]["name"],
        "p5"
    );
    assert_eq!(
        post(a, "/__kinformer/faults/watch-delay", &json!({}))
            .await
            .code,
        400
    );
    s.faults().clear();
    s.shutdown().await;
}

#[tokio::test]
async fn forget_history_is_like_a_restarted_server() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("p", json!({})),
    )
    .await;
    let old = s.revision() - 1;
    let mut w = watch(a, &format!("/api/v1/pods?watch=true&resourceVersion={old}")).await;
    assert_eq!(w.next_within(SECS).await.unwrap()["type"], "ADDED");
    s.faults().forget_history();
    assert!(w.next_within(SECS).await.is_none(), "watches are dropped");
    let mut w = watch(a, &format!("/api/v1/pods?watch=true&resourceVersion={old}")).await;
    let e = w.next_within(SECS).await.unwrap();
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 410);
    // Objects survive.
    assert_eq!(get(a, "/api/v1/namespaces/default/pods/p").await.code, 200);
    s.shutdown().await;
}

#[tokio::test]
async fn latency_delays_requests() {
    let s = start(ServerConfig::default()).await.unwrap();
    s.faults().set_latency(Duration::from_millis(150));
    let t = std::time::Instant::now();
    assert_eq!(get(s.addr(), "/api/v1/pods").await.code, 200);
    assert!(t.elapsed() >= Duration::from_millis(150));
    s.faults().clear();
    s.shutdown().await;
}

#[tokio::test]
async fn admin_endpoints_drive_the_same_faults() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let r = post(
        a,
        "/__kinformer/faults/fail",
        &json!({"verb": "list", "resource": "pods", "code": 503, "count": 1}),
    )
    .await;
    assert_eq!(r.code, 200);
    assert_eq!(get(a, "/api/v1/pods").await.code, 503);
    assert_eq!(get(a, "/api/v1/pods").await.code, 200);
    let mut w = watch(a, "/api/v1/pods?watch=true").await;
    assert_eq!(
        post(a, "/__kinformer/faults/drop-watches", &json!({}))
            .await
            .code,
        200
    );
    assert!(w.next_within(SECS).await.is_none());
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("p", json!({})),
    )
    .await;
    let r = post(a, "/__kinformer/faults/compact", &json!({}))
        .await
        .json();
    assert_eq!(r["compacted"], s.revision());
    for p in ["pause-watches", "resume-watches", "forget-history", "clear"] {
        assert_eq!(
            post(a, &format!("/__kinformer/faults/{p}"), &json!({}))
                .await
                .code,
            200,
            "{p}"
        );
    }
    assert_eq!(
        post(a, "/__kinformer/faults/latency", &json!({"millis": 0}))
            .await
            .code,
        200
    );
    assert_eq!(
        post(a, "/__kinformer/faults/fail", &json!({"code": "x"}))
            .await
            .code,
        400
    );
    assert_eq!(
        post(a, "/__kinformer/faults/latency", &json!({}))
            .await
            .code,
        400
    );
    assert_eq!(
        post(a, "/__kinformer/faults/nope", &json!({})).await.code,
        404
    );
    let log = get(a, "/__kinformer/requests").await.json();
    assert!(
        log.as_array()
            .unwrap()
            .iter()
            .any(|r| r["verb"] == "list" && r["code"] == 503)
    );
    let st = get(a, "/__kinformer/state/pods?namespace=default")
        .await
        .json();
    assert_eq!(st["items"][0]["metadata"]["name"], "p");
    assert_eq!(
        request(a, "DELETE", "/__kinformer/requests", None, b"")
            .await
            .code,
        200
    );
    assert!(s.requests().is_empty());
    s.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn automatic_compaction_by_age_expires_old_versions() {
    let s = start(
        ServerConfig::default().history(kinformer_apiserver::HistoryConfig {
            max_events: 1000,
            max_age: Some(Duration::from_secs(60)),
        }),
    )
    .await
    .unwrap();
    let cm = |n: &str| kinformer_apiserver::seed::configmap("default", n, 1);
    s.create_value("configmaps", Some("default"), cm("a"))
        .unwrap();
    let old = s.revision();
    tokio::time::advance(Duration::from_secs(61)).await;
    s.create_value("configmaps", Some("default"), cm("b"))
        .unwrap();
    let mut w = watch(
        s.addr(),
        &format!("/api/v1/configmaps?watch=true&resourceVersion={}", old - 1),
    )
    .await;
    let e = w.next().await.unwrap();
    assert_eq!(e["object"]["code"], 410);
    s.shutdown().await;
}

/// Streaming lists that misbehave, as some servers' do: closed before the end bookmark,
/// never ended by one, refused as with the WatchList gate off; scoped to one API group, set
/// from Rust or over HTTP. Plain watches and other groups are unaffected.
#[tokio::test]
async fn watch_list_faults_break_streaming_lists_only() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("p", json!({})),
    )
    .await;
    const STREAM: &str = "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let is_end = |e: &serde_json::Value| {
        e["type"] == "BOOKMARK"
            && e["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"
    };

    s.faults()
        .set_watch_list_fault(WatchListFault::CloseBeforeEndBookmark, Some(""));
    let mut w = watch(a, &format!("/api/v1/pods{STREAM}")).await;
    assert_eq!(w.next_within(SECS).await.unwrap()["type"], "ADDED");
    assert!(
        w.next_within(SECS).await.is_none(),
        "closed before the bookmark"
    );
    // another group streams normally
    let mut w = watch(a, &format!("/apis/apps/v1/deployments{STREAM}")).await;
    assert!(is_end(&w.next_within(SECS).await.unwrap()));
    // a plain watch is unaffected
    let mut w = watch(a, "/api/v1/pods?watch=true").await;
    assert_eq!(w.next_within(SECS).await.unwrap()["type"], "ADDED");
    assert!(w.quiet_for(Duration::from_millis(200)).await, "stays open");

    s.faults()
        .set_watch_list_fault(WatchListFault::NoEndBookmark, None);
    let mut w = watch(a, &format!("/api/v1/pods{STREAM}")).await;
    assert_eq!(w.next_within(SECS).await.unwrap()["type"], "ADDED");
    assert!(
        w.quiet_for(Duration::from_millis(200)).await,
        "open, no end bookmark"
    );

    let r = post(
        a,
        "/__kinformer/faults/watch-list",
        &json!({"fault": "refuse", "apiGroup": ""}),
    )
    .await;
    assert_eq!(r.code, 200);
    let r = get(a, &format!("/api/v1/pods{STREAM}")).await;
    assert_eq!(r.code, 422);
    let body = r.json();
    assert_eq!(body["reason"], "Invalid");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
    );
    assert_eq!(
        post(
            a,
            "/__kinformer/faults/watch-list",
            &json!({"fault": "bogus"})
        )
        .await
        .code,
        400
    );
    assert_eq!(
        post(a, "/__kinformer/faults/watch-list", &json!({"fault": null}))
            .await
            .code,
        200
    );
    let mut w = watch(a, &format!("/api/v1/pods{STREAM}")).await;
    assert_eq!(w.next_within(SECS).await.unwrap()["type"], "ADDED");
    assert!(is_end(&w.next_within(SECS).await.unwrap()));
    s.shutdown().await;
}
