//! WATCH semantics over raw HTTP: one table of scripted watches (each row a fresh server, a
//! few writes, a watch, and the events it must deliver in order), one loop; plus shutdown and
//! a long stream, which need setups of their own.

use crate::common;

use std::time::Duration;

use common::*;
use kinformer_apiserver::{RunningServer, ServerConfig, start};
use serde_json::{Value, json};

fn ev(e: &Value) -> (String, String) {
    (
        e["type"].as_str().unwrap().to_string(),
        e["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}

fn rv_of(e: &Value) -> u64 {
    e["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// What a script has seen so far.
struct Ctx {
    s: RunningServer,
    /// The revision remembered by [`Step::Mark`].
    mark: u64,
    /// The revision [`Step::Compact`] compacted to.
    compacted: u64,
    watch: Option<WatchStream>,
    /// Every event read from the watches, in order.
    events: Vec<Value>,
}

/// One step of a watch script.
enum Step {
    /// Creates the pod `name` with `labels` in `namespace`.
    Pod(&'static str, &'static str, Value),
    /// Creates the ConfigMap `name` in `default` (another resource: moves the revision only).
    ConfigMap(&'static str),
    /// Merge-patches the pod `default/name` with this body.
    Patch(&'static str, &'static str),
    /// Deletes the pod `default/name`.
    Delete(&'static str),
    /// Remembers the current revision as `{mark}`.
    Mark,
    /// Compacts the history now.
    Compact,
    /// Opens a watch at this path: `{mark}` is the marked revision, `{now}` the current one,
    /// `{future}` ten past the current one.
    Watch(&'static str),
    /// The watch's HTTP status.
    Code(u16),
    /// The next event has this type and object name.
    Next(&'static str, &'static str),
    /// The next event passes this check.
    Event(fn(&Ctx, &Value)),
    /// One of the next `n` events has this type (the events before it are skipped).
    Within(usize, &'static str),
    /// A check of everything seen so far.
    Check(fn(&Ctx)),
    /// Nothing arrives for this many milliseconds.
    Quiet(u64),
    /// The stream ends.
    Ends,
    /// A GET of this path answers this status code, with this reason when given.
    Get(&'static str, u16, Option<&'static str>),
}

struct Script {
    name: &'static str,
    config: ServerConfig,
    steps: Vec<Step>,
}

async fn run_scripts(table: Vec<Script>) {
    for Script {
        name,
        config,
        steps,
    } in table
    {
        let s = start(config).await.unwrap();
        let mut c = Ctx {
            s,
            mark: 0,
            compacted: 0,
            watch: None,
            events: Vec::new(),
        };
        let a = c.s.addr();
        for (i, step) in steps.into_iter().enumerate() {
            let at = format!("{name}, step {i}");
            match step {
                Step::Pod(ns, n, labels) => {
                    post(
                        a,
                        &format!("/api/v1/namespaces/{ns}/pods"),
                        &pod_json(n, labels),
                    )
                    .await;
                }
                Step::ConfigMap(n) => {
                    post(
                        a,
                        "/api/v1/namespaces/default/configmaps",
                        &json!({"metadata": {"name": n}}),
                    )
                    .await;
                }
                Step::Patch(n, body) => {
                    request(
                        a,
                        "PATCH",
                        &format!("/api/v1/namespaces/default/pods/{n}"),
                        Some("application/merge-patch+json"),
                        body.as_bytes(),
                    )
                    .await;
                }
                Step::Delete(n) => {
                    let path = format!("/api/v1/namespaces/default/pods/{n}");
                    request(a, "DELETE", &path, None, b"").await;
                }
                Step::Mark => c.mark = c.s.revision(),
                Step::Compact => c.compacted = c.s.faults().compact_now(),
                Step::Watch(path) => {
                    let now = c.s.revision();
                    let path = path
                        .replace("{mark}", &c.mark.to_string())
                        .replace("{now}", &now.to_string())
                        .replace("{future}", &(now + 10).to_string());
                    c.watch = Some(watch(a, &path).await);
                }
                Step::Code(code) => assert_eq!(c.watch.as_ref().unwrap().code, code, "{at}"),
                Step::Next(kind, n) => {
                    let e = next(&mut c, &at).await;
                    assert_eq!(ev(&e), (kind.into(), n.into()), "{at}");
                }
                Step::Event(check) => {
                    let e = next(&mut c, &at).await;
                    check(&c, &e);
                }
                Step::Within(n, kind) => {
                    let mut found = false;
                    for _ in 0..n {
                        if next(&mut c, &at).await["type"] == kind {
                            found = true;
                            break;
                        }
                    }
                    assert!(found, "{at}: no {kind} within {n} events");
                }
                Step::Check(check) => check(&c),
                Step::Quiet(ms) => assert!(
                    c.watch
                        .as_mut()
                        .unwrap()
                        .quiet_for(Duration::from_millis(ms))
                        .await,
                    "{at}: an event arrived"
                ),
                Step::Ends => assert!(
                    c.watch.as_mut().unwrap().next_within(SECS).await.is_none(),
                    "{at}: the stream goes on"
                ),
                Step::Get(path, code, reason) => {
                    let r = get(a, path).await;
                    assert_eq!(r.code, code, "{at}: {path}");
                    if let Some(reason) = reason {
                        assert_eq!(r.json()["reason"], reason, "{at}: {path}");
                    }
                }
            }
        }
        c.s.shutdown().await;
    }
}

/// The next event of the open watch (within 5 s), recorded in `c.events`.
async fn next(c: &mut Ctx, at: &str) -> Value {
    let e = c
        .watch
        .as_mut()
        .expect("a watch is open")
        .next_within(SECS)
        .await;
    let e = e.unwrap_or_else(|| panic!("{at}: the stream ended"));
    c.events.push(e.clone());
    e
}

#[tokio::test]
async fn watch_scripts() {
    use Step::*;
    let mut table = vec![Script {
        name: "watch from a resourceVersion delivers later events in order",
        config: ServerConfig::default(),
        steps: vec![
            Pod("default", "before", json!({})),
            Mark,
            Pod("default", "p", json!({})),
            ConfigMap("other-resource"),
            Patch("p", r#"{"metadata":{"labels":{"x":"y"}}}"#),
            Watch("/api/v1/namespaces/default/pods?watch=true&resourceVersion={mark}"),
            Code(200),
            Next("ADDED", "p"),
            Next("MODIFIED", "p"),
            // Live events follow.
            Delete("p"),
            Next("DELETED", "p"),
            Check(|c| {
                assert_eq!(
                    c.events[2]["object"]["metadata"]["resourceVersion"],
                    c.s.revision().to_string(),
                    "a deletion carries the deletion revision"
                );
                assert!(rv_of(&c.events[0]) < rv_of(&c.events[2]));
            }),
        ],
    }];
    for (name, path) in [
        (
            "watch from empty starts with synthetic ADDED events",
            "/api/v1/namespaces/default/pods?watch=true",
        ),
        (
            "watch from 0 starts with synthetic ADDED events",
            "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0",
        ),
    ] {
        table.push(Script {
            name,
            config: ServerConfig::default(),
            steps: vec![
                Pod("default", "a", json!({})),
                Pod("default", "b", json!({})),
                Watch(path),
                Next("ADDED", "a"),
                Next("ADDED", "b"),
                Quiet(50),
            ],
        });
    }
    table.extend([
        Script {
            name: "a too old resourceVersion is an ERROR event with 410, then the end",
            config: ServerConfig::default(),
            steps: vec![
                Pod("default", "a", json!({})),
                Pod("default", "b", json!({})),
                Compact,
                Watch("/api/v1/namespaces/default/pods?watch=true&resourceVersion=2"),
                Code(200),
                Event(|c, e| {
                    assert_eq!(
                        *e,
                        json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": format!("too old resource version: 2 ({})", c.compacted), "reason": "Expired", "code": 410}})
                    );
                }),
                // the stream ends after the error
                Ends,
            ],
        },
        Script {
            name: "a streaming list from a future resourceVersion is an ERROR event with 504",
            config: ServerConfig::default().too_large_wait(Duration::from_millis(20)),
            steps: vec![
                Mark,
                Watch("/api/v1/pods?watch=true&resourceVersion={future}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
                Event(|c, e| {
                    let cur = c.mark;
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
                }),
            ],
        },
        Script {
            name: "bookmarks carry the current revision",
            config: ServerConfig::default().bookmark_interval(Duration::from_millis(100)),
            steps: vec![
                Mark,
                Watch("/api/v1/namespaces/default/pods?watch=true&resourceVersion={mark}&allowWatchBookmarks=true"),
                // A write to another resource moves the revision; the bookmark reports it.
                ConfigMap("c"),
                Event(|c, b| {
                    assert_eq!(b["type"], "BOOKMARK");
                    assert_eq!(b["object"]["kind"], "Pod");
                    assert_eq!(b["object"]["apiVersion"], "v1");
                    assert_eq!(
                        b["object"]["metadata"]["resourceVersion"],
                        c.s.revision().to_string()
                    );
                }),
                // Without allowWatchBookmarks: no bookmarks.
                Watch("/api/v1/namespaces/default/pods?watch=true&resourceVersion={now}"),
                Quiet(300),
            ],
        },
        Script {
            name: "sendInitialEvents ends with an annotated bookmark",
            config: ServerConfig::default(),
            steps: vec![
                Pod("default", "a", json!({})),
                Pod("default", "b", json!({})),
                Mark,
                Watch("/api/v1/namespaces/default/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
                Next("ADDED", "a"),
                Next("ADDED", "b"),
                Event(|c, b| {
                    assert_eq!(b["type"], "BOOKMARK");
                    assert_eq!(
                        b["object"]["metadata"]["annotations"],
                        json!({"k8s.io/initial-events-end": "true"})
                    );
                    assert_eq!(b["object"]["metadata"]["resourceVersion"], c.mark.to_string());
                }),
                Pod("default", "c", json!({})),
                Next("ADDED", "c"),
                // Invalid combinations are 422 responses, not streams.
                Get("/api/v1/pods?watch=true&sendInitialEvents=true", 422, None),
            ],
        },
        // kube-apiserver v1.35 (e2e/diff "initial-events-end / invalid-no-bookmarks"): a
        // streaming list without `allowWatchBookmarks` is accepted; the initial ADDED events
        // come, the end bookmark does not, live events follow. The end bookmark carries only
        // kind, apiVersion, resourceVersion and the annotation (no `creationTimestamp: null`).
        Script {
            name: "sendInitialEvents without bookmarks sends no end bookmark",
            config: ServerConfig::default(),
            steps: vec![
                Pod("default", "a", json!({})),
                Watch("/api/v1/namespaces/default/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"),
                Next("ADDED", "a"),
                Pod("default", "b", json!({})),
                // the next event is the live ADDED, not a BOOKMARK
                Next("ADDED", "b"),
                Watch("/api/v1/namespaces/default/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
                // an end bookmark after the initial events
                Within(3, "BOOKMARK"),
                Check(|c| {
                    let b = c.events.last().unwrap();
                    let meta = b["object"]["metadata"].as_object().unwrap();
                    let mut keys: Vec<_> = meta.keys().cloned().collect();
                    keys.sort();
                    assert_eq!(keys, ["annotations", "resourceVersion"]);
                }),
            ],
        },
        Script {
            name: "selectors turn moves into ADDED and DELETED",
            config: ServerConfig::default(),
            steps: vec![
                Pod("default", "p", json!({"app": "web"})),
                Mark,
                Watch("/api/v1/namespaces/default/pods?watch=true&resourceVersion={mark}&labelSelector=app%3Dweb"),
                Patch("p", r#"{"metadata":{"labels":{"app":"db"}}}"#), // leaves the selector
                Event(|c, e| {
                    assert_eq!(ev(e), ("DELETED".into(), "p".into()));
                    assert_eq!(
                        e["object"]["metadata"]["labels"]["app"], "web",
                        "the previous state"
                    );
                    assert_eq!(
                        e["object"]["metadata"]["resourceVersion"],
                        c.s.revision().to_string(),
                        "at the new revision"
                    );
                }),
                Patch("p", r#"{"metadata":{"labels":{"app":"other"}}}"#), // outside to outside: nothing
                Patch("p", r#"{"metadata":{"labels":{"app":"web"}}}"#), // enters the selector
                Next("ADDED", "p"),
                Patch("p", r#"{"metadata":{"annotations":{"x":"1"}}}"#),
                Next("MODIFIED", "p"),
                // Field selectors on watch.
                Watch("/api/v1/pods?watch=true&resourceVersion={now}&fieldSelector=metadata.name%3Dq"),
                Pod("default", "p2", json!({})),
                Pod("default", "q", json!({})),
                Next("ADDED", "q"),
            ],
        },
        Script {
            name: "a namespace-scoped watch ignores other namespaces",
            config: ServerConfig::default(),
            steps: vec![
                Watch("/api/v1/namespaces/default/pods?watch=true&resourceVersion={now}"),
                Pod("kube-system", "sys", json!({})),
                Pod("default", "mine", json!({})),
                Next("ADDED", "mine"),
            ],
        },
        Script {
            name: "timeoutSeconds ends the stream",
            config: ServerConfig::default(),
            steps: vec![
                Watch("/api/v1/pods?watch=true&resourceVersion={now}&timeoutSeconds=1"),
                Ends,
            ],
        },
        Script {
            name: "malformed watch parameters are 400 responses",
            config: ServerConfig::default(),
            steps: [
                "/api/v1/pods?watch=true&timeoutSeconds=abc",
                "/api/v1/pods?watch=true&resourceVersion=xyz",
                "/api/v1/pods?watch=true&labelSelector=a%20in%20(",
                "/api/v1/pods?watch=true&fieldSelector=spec.nope%3D1",
                "/api/v1/pods?watch=true&allowWatchBookmarks=perhaps",
            ]
            .map(|path| Get(path, 400, Some("BadRequest")))
            .into(),
        },
    ]);
    run_scripts(table).await;
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

/// kube-apiserver's `apiserver_longrunning_requests` gauge (and `RunningServer::open_watches`):
/// up while a watch is open, back down when the client drops the connection, even if nothing
/// is written to the watch meanwhile.
#[tokio::test]
async fn open_watch_gauge_rises_and_falls_with_client_disconnect() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let series = r#"apiserver_longrunning_requests{verb="WATCH",group="",version="v1",resource="configmaps",subresource="",scope="namespace",component="apiserver"}"#;
    let gauge = |text: &str| -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
    };
    assert_eq!(s.open_watches(None), 0);
    let first = watch(a, "/api/v1/namespaces/default/configmaps?watch=true").await;
    let second = watch(a, "/api/v1/namespaces/default/configmaps?watch=true").await;
    let pods = watch(a, "/api/v1/pods?watch=true").await;
    assert_eq!((first.code, second.code, pods.code), (200, 200, 200));
    assert_eq!(s.open_watches(Some("configmaps")), 2);
    assert_eq!(s.open_watches(Some("pods")), 1);
    assert_eq!(s.open_watches(None), 3);
    let text = String::from_utf8(get(a, "/metrics").await.body).unwrap();
    assert_eq!(gauge(&text), Some(2.0), "{text}");
    drop(first);
    drop(second);
    let deadline = tokio::time::Instant::now() + SECS;
    while s.open_watches(Some("configmaps")) > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "watches still counted open after the client went away"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let text = String::from_utf8(get(a, "/metrics").await.body).unwrap();
    assert_eq!(gauge(&text), Some(0.0), "{text}");
    assert_eq!(
        s.open_watches(Some("pods")),
        1,
        "the other watch stays open"
    );
    drop(pods);
}

/// kube-apiserver's watch cache sends a watch with `timeoutSeconds` one more BOOKMARK 2 s
/// before its deadline, carrying the current revision, so that a client watching again starts
/// from there (e2e/diff "bookmarks": a 4 s watch ends with one); none after it, none to a
/// watch too short for it, and only where bookmarks are allowed. Paused time: the server's
/// timers fire in order as the clock advances.
#[tokio::test(start_paused = true)]
async fn a_watch_gets_a_bookmark_two_seconds_before_its_deadline() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let cm = |n: &str| kinformer_apiserver::seed::configmap("default", n, 1);
    let rv = s.revision();
    let base = "/api/v1/namespaces/default/pods?watch=true";
    let opened = tokio::time::Instant::now();
    let mut w = watch(
        a,
        &format!("{base}&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=30"),
    )
    .await;
    // another resource moves the revision; no pod event comes
    s.create_value("configmaps", Some("default"), cm("a"))
        .unwrap();
    let b = w.next().await.expect("a bookmark before the stream ends");
    let at = opened.elapsed();
    assert_eq!(b["type"], "BOOKMARK");
    assert_eq!(
        b["object"]["metadata"]["resourceVersion"],
        s.revision().to_string()
    );
    // the periodic bookmark is a minute away, so this one is the deadline's: at 28 s
    assert!(
        at >= Duration::from_secs(28) && at < Duration::from_secs(29),
        "bookmark after {at:?}"
    );
    let after = w.next().await;
    assert!(
        after.is_none(),
        "nothing after it; the watch ends: {after:?}"
    );
    assert!(opened.elapsed() >= Duration::from_secs(30));

    // a watch of 2 s or less has no moment 2 s before its deadline: it only ends
    let opened = tokio::time::Instant::now();
    let mut w = watch(
        a,
        &format!("{base}&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=2"),
    )
    .await;
    assert!(w.next().await.is_none());
    assert!(opened.elapsed() >= Duration::from_secs(2));

    // without allowWatchBookmarks, no bookmark at all
    let mut w = watch(a, &format!("{base}&resourceVersion={rv}&timeoutSeconds=30")).await;
    assert!(w.next().await.is_none());

    // a long watch gets the periodic bookmark first (every minute), then the deadline's
    let opened = tokio::time::Instant::now();
    let mut w = watch(
        a,
        &format!("{base}&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=100"),
    )
    .await;
    let mut times = Vec::new();
    while let Some(e) = w.next().await {
        assert_eq!(e["type"], "BOOKMARK");
        times.push(opened.elapsed().as_secs());
    }
    assert_eq!(times, [60, 98]);
    s.shutdown().await;
}
