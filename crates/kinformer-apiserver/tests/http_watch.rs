//! WATCH semantics over raw HTTP.

mod common;

use std::time::Duration;

use common::*;
use kinformer_apiserver::{ServerConfig, start};
use serde_json::json;

fn ev(e: &serde_json::Value) -> (String, String) {
    (
        e["type"].as_str().unwrap().to_string(),
        e["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}

#[tokio::test]
async fn watch_from_resource_version_delivers_later_events_in_order() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("before", json!({})),
    )
    .await;
    let rv = s.revision();
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("p", json!({})),
    )
    .await;
    post(
        a,
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "other-resource"}}),
    )
    .await;
    request(
        a,
        "PATCH",
        "/api/v1/namespaces/default/pods/p",
        Some("application/merge-patch+json"),
        br#"{"metadata":{"labels":{"x":"y"}}}"#,
    )
    .await;
    let mut w = watch(
        a,
        &format!("/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}"),
    )
    .await;
    assert_eq!(w.code, 200);
    let e1 = w.next_within(SECS).await.unwrap();
    assert_eq!(ev(&e1), ("ADDED".into(), "p".into()));
    assert_eq!(
        ev(&w.next_within(SECS).await.unwrap()),
        ("MODIFIED".into(), "p".into())
    );
    // Live events follow.
    request(a, "DELETE", "/api/v1/namespaces/default/pods/p", None, b"").await;
    let d = w.next_within(SECS).await.unwrap();
    assert_eq!(ev(&d), ("DELETED".into(), "p".into()));
    assert_eq!(
        d["object"]["metadata"]["resourceVersion"],
        s.revision().to_string(),
        "a deletion carries the deletion revision"
    );
    let rvs: Vec<u64> = [&e1, &d]
        .iter()
        .map(|e| {
            e["object"]["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(rvs[0] < rvs[1]);
    s.shutdown().await;
}

#[tokio::test]
async fn watch_from_empty_or_zero_starts_with_synthetic_added_events() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    for n in ["a", "b"] {
        post(
            a,
            "/api/v1/namespaces/default/pods",
            &pod_json(n, json!({})),
        )
        .await;
    }
    for q in ["watch=true", "watch=true&resourceVersion=0"] {
        let mut w = watch(a, &format!("/api/v1/namespaces/default/pods?{q}")).await;
        assert_eq!(
            ev(&w.next_within(SECS).await.unwrap()),
            ("ADDED".into(), "a".into())
        );
        assert_eq!(
            ev(&w.next_within(SECS).await.unwrap()),
            ("ADDED".into(), "b".into())
        );
        assert!(w.quiet_for(Duration::from_millis(50)).await);
    }
    s.shutdown().await;
}

#[tokio::test]
async fn too_old_resource_version_is_an_error_event_with_410() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("a", json!({})),
    )
    .await;
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("b", json!({})),
    )
    .await;
    let compacted = s.faults().compact_now();
    let mut w = watch(
        a,
        "/api/v1/namespaces/default/pods?watch=true&resourceVersion=2",
    )
    .await;
    assert_eq!(w.code, 200);
    let e = w.next_within(SECS).await.unwrap();
    assert_eq!(
        e,
        json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("too old resource version: 2 ({compacted})"), "reason": "Expired", "code": 410}})
    );
    assert!(
        w.next_within(SECS).await.is_none(),
        "the stream ends after the error"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn future_resource_version_is_an_error_event_with_504() {
    let s = start(ServerConfig::default().too_large_wait(Duration::from_millis(20)))
        .await
        .unwrap();
    let cur = s.revision();
    let mut w = watch(
        s.addr(),
        &format!("/api/v1/pods?watch=true&resourceVersion={}", cur + 10),
    )
    .await;
    let e = w.next_within(SECS).await.unwrap();
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 504);
    assert_eq!(e["object"]["reason"], "Timeout");
    assert_eq!(
        e["object"]["message"],
        format!(
            "Timeout: Too large resource version: {}, current: {cur}",
            cur + 10
        )
    );
    assert_eq!(
        e["object"]["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn bookmarks_carry_the_current_revision() {
    let s = start(ServerConfig::default().bookmark_interval(Duration::from_millis(100)))
        .await
        .unwrap();
    let a = s.addr();
    let rv = s.revision();
    let mut w = watch(a, &format!("/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&allowWatchBookmarks=true")).await;
    // A write to another resource moves the revision; the bookmark reports it.
    post(
        a,
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "c"}}),
    )
    .await;
    let b = w.next_within(SECS).await.unwrap();
    assert_eq!(b["type"], "BOOKMARK");
    assert_eq!(b["object"]["kind"], "Pod");
    assert_eq!(b["object"]["apiVersion"], "v1");
    assert_eq!(
        b["object"]["metadata"]["resourceVersion"],
        s.revision().to_string()
    );
    // Without allowWatchBookmarks: no bookmarks.
    let mut w = watch(
        a,
        &format!(
            "/api/v1/namespaces/default/pods?watch=true&resourceVersion={}",
            s.revision()
        ),
    )
    .await;
    assert!(w.quiet_for(Duration::from_millis(300)).await);
    s.shutdown().await;
}

#[tokio::test]
async fn send_initial_events_ends_with_an_annotated_bookmark() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    for n in ["a", "b"] {
        post(
            a,
            "/api/v1/namespaces/default/pods",
            &pod_json(n, json!({})),
        )
        .await;
    }
    let rv = s.revision();
    let mut w = watch(a, "/api/v1/namespaces/default/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true").await;
    assert_eq!(
        ev(&w.next_within(SECS).await.unwrap()),
        ("ADDED".into(), "a".into())
    );
    assert_eq!(
        ev(&w.next_within(SECS).await.unwrap()),
        ("ADDED".into(), "b".into())
    );
    let b = w.next_within(SECS).await.unwrap();
    assert_eq!(b["type"], "BOOKMARK");
    assert_eq!(
        b["object"]["metadata"]["annotations"],
        json!({"k8s.io/initial-events-end": "true"})
    );
    assert_eq!(b["object"]["metadata"]["resourceVersion"], rv.to_string());
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("c", json!({})),
    )
    .await;
    assert_eq!(
        ev(&w.next_within(SECS).await.unwrap()),
        ("ADDED".into(), "c".into())
    );
    // Invalid combinations are 422 responses, not streams.
    let r = get(a, "/api/v1/pods?watch=true&sendInitialEvents=true").await;
    assert_eq!(r.code, 422);
    s.shutdown().await;
}

/// kube-apiserver v1.35 (e2e/diff "initial-events-end / invalid-no-bookmarks"): a streaming
/// list without `allowWatchBookmarks` is accepted; the initial ADDED events come, the end
/// bookmark does not, live events follow. The end bookmark carries only kind, apiVersion,
/// resourceVersion and the annotation (no `creationTimestamp: null`).
#[tokio::test]
async fn send_initial_events_without_bookmarks_sends_no_end_bookmark() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("a", json!({})),
    )
    .await;
    let mut w = watch(
        a,
        "/api/v1/namespaces/default/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
    )
    .await;
    assert_eq!(
        ev(&w.next_within(SECS).await.unwrap()),
        ("ADDED".into(), "a".into())
    );
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("b", json!({})),
    )
    .await;
    // the next event is the live ADDED, not a BOOKMARK
    assert_eq!(
        ev(&w.next_within(SECS).await.unwrap()),
        ("ADDED".into(), "b".into())
    );

    let mut w = watch(
        a,
        "/api/v1/namespaces/default/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
    )
    .await;
    let mut bookmark = None;
    for _ in 0..3 {
        let e = w.next_within(SECS).await.unwrap();
        if e["type"] == "BOOKMARK" {
            bookmark = Some(e);
            break;
        }
    }
    let b = bookmark.expect("an end bookmark after the initial events");
    let meta = b["object"]["metadata"].as_object().unwrap();
    let mut keys: Vec<_> = meta.keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["annotations", "resourceVersion"]);
    s.shutdown().await;
}

#[tokio::test]
async fn selectors_turn_moves_into_added_and_deleted() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("p", json!({"app": "web"})),
    )
    .await;
    let rv = s.revision();
    let mut w = watch(a, &format!("/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&labelSelector=app%3Dweb")).await;
    let patch = |v: &'static str| async move {
        request(
            a,
            "PATCH",
            "/api/v1/namespaces/default/pods/p",
            Some("application/merge-patch+json"),
            format!(r#"{{"metadata":{{"labels":{{"app":"{v}"}}}}}}"#).as_bytes(),
        )
        .await
    };
    patch("db").await; // leaves the selector
    let e = w.next_within(SECS).await.unwrap();
    assert_eq!(ev(&e), ("DELETED".into(), "p".into()));
    assert_eq!(
        e["object"]["metadata"]["labels"]["app"], "web",
        "the previous state"
    );
    assert_eq!(
        e["object"]["metadata"]["resourceVersion"],
        s.revision().to_string(),
        "at the new revision"
    );
    patch("other").await; // outside to outside: nothing
    patch("web").await; // enters the selector
    let e = w.next_within(SECS).await.unwrap();
    assert_eq!(ev(&e), ("ADDED".into(), "p".into()));
    request(
        a,
        "PATCH",
        "/api/v1/namespaces/default/pods/p",
        Some("application/merge-patch+json"),
        br#"{"metadata":{"annotations":{"x":"1"}}}"#,
    )
    .await;
    assert_eq!(
        ev(&w.next_within(SECS).await.unwrap()),
        ("MODIFIED".into(), "p".into())
    );
    // Field selectors on watch.
    let mut w = watch(
        a,
        &format!(
            "/api/v1/pods?watch=true&resourceVersion={}&fieldSelector=metadata.name%3Dq",
            s.revision()
        ),
    )
    .await;
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("p2", json!({})),
    )
    .await;
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("q", json!({})),
    )
    .await;
    assert_eq!(
        ev(&w.next_within(SECS).await.unwrap()),
        ("ADDED".into(), "q".into())
    );
    s.shutdown().await;
}

#[tokio::test]
async fn namespace_scoped_watch_ignores_other_namespaces() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let mut w = watch(
        a,
        &format!(
            "/api/v1/namespaces/default/pods?watch=true&resourceVersion={}",
            s.revision()
        ),
    )
    .await;
    post(
        a,
        "/api/v1/namespaces/kube-system/pods",
        &pod_json("sys", json!({})),
    )
    .await;
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("mine", json!({})),
    )
    .await;
    assert_eq!(
        ev(&w.next_within(SECS).await.unwrap()),
        ("ADDED".into(), "mine".into())
    );
    s.shutdown().await;
}

#[tokio::test]
async fn timeout_seconds_ends_the_stream() {
    let s = start(ServerConfig::default()).await.unwrap();
    let mut w = watch(
        s.addr(),
        &format!(
            "/api/v1/pods?watch=true&resourceVersion={}&timeoutSeconds=1",
            s.revision()
        ),
    )
    .await;
    assert!(w.next_within(SECS).await.is_none());
    s.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_open_watches() {
    let s = start(ServerConfig::default()).await.unwrap();
    let mut w = watch(s.addr(), "/api/v1/pods?watch=true").await;
    let addr = s.addr();
    tokio::time::timeout(SECS, s.shutdown())
        .await
        .expect("shutdown completes with a watch open");
    assert!(w.next_within(SECS).await.is_none());
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "nothing listens after shutdown"
    );
}

#[tokio::test]
async fn many_events_arrive_complete_and_in_order() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let rv = s.revision();
    let mut w = watch(
        a,
        &format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}"),
    )
    .await;
    let cms = (0..3000)
        .map(|i| kinformer_apiserver::seed::configmap("default", &format!("cm-{i:05}"), 2));
    s.seed("configmaps", cms).unwrap();
    let mut last = rv;
    for i in 0..3000 {
        let e = w.next_within(SECS).await.unwrap();
        assert_eq!(ev(&e), ("ADDED".into(), format!("cm-{i:05}")));
        let r: u64 = e["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(r > last);
        last = r;
    }
    s.shutdown().await;
}

#[tokio::test]
async fn malformed_watch_parameters_are_400_responses() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    for q in [
        "watch=true&timeoutSeconds=abc",
        "watch=true&resourceVersion=xyz",
        "watch=true&labelSelector=a%20in%20(",
        "watch=true&fieldSelector=spec.nope%3D1",
        "watch=true&allowWatchBookmarks=perhaps",
    ] {
        let r = get(a, &format!("/api/v1/pods?{q}")).await;
        assert_eq!(r.code, 400, "{q}");
        assert_eq!(r.json()["reason"], "BadRequest", "{q}");
    }
    s.shutdown().await;
}
