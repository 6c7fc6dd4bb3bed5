//! `KubeListerWatcher` against raw bytes: a tiny HTTP server on 127.0.0.1 serves lists, watch
//! streams (garbage included) and error statuses; the Reflector must skip or retry, never panic,
//! and the store keeps what it had.

use kinformer::InformerConfig;
use kinformer::reflector::InitialListMode;
use std::sync::Arc;

use crate::support::*;
use k8s_openapi::api::core::v1::Pod;
use kinformer::reflector::{
    ListOptions, ListerWatcher, ListerWatcherExt, Reflector, ReflectorError,
};
use kinformer::{KubeListerWatcher, reflector::WatchEvent};
use kube::api::{ApiResource, DynamicObject};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// One canned HTTP response.
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

fn ok(body: impl Into<String>) -> Reply {
    Reply {
        status: 200,
        headers: vec![],
        body: body.into(),
    }
}

fn status(code: u16, body: impl Into<String>) -> Reply {
    Reply {
        status: code,
        headers: vec![],
        body: body.into(),
    }
}

type Handler = Arc<dyn Fn(&str, usize) -> Reply + Send + Sync>;

/// Serves `handler(path_and_query, request_number)` over HTTP/1.1, one request per connection,
/// bodies delimited by closing the connection. Returns the base URL and the recorded requests.
async fn serve(handler: Handler) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests: Arc<Mutex<Vec<String>>> = Arc::default();
    let recorded = requests.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let handler = handler.clone();
            let recorded = recorded.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).to_string();
                let target = head.split_whitespace().nth(1).unwrap_or("").to_owned();
                let n = {
                    let mut r = recorded.lock();
                    r.push(target.clone());
                    r.len()
                };
                let reply = handler(&target, n);
                let mut out = format!(
                    "HTTP/1.1 {} X\r\ncontent-type: application/json\r\nconnection: close\r\n",
                    reply.status
                );
                for (k, v) in &reply.headers {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str("\r\n");
                out.push_str(&reply.body);
                let _ = sock.write_all(out.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    (format!("http://{addr}"), requests)
}

async fn client(url: &str) -> kube::Client {
    let mut config = kube::Config::new(url.parse().unwrap());
    // the Reflector does its own backoff; kube's built-in retry of 429/503/504 would hide the
    // statuses it acts on
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

async fn pods_lw(url: &str) -> Arc<KubeListerWatcher<Pod>> {
    Arc::new(KubeListerWatcher::new(
        client(url).await,
        &InformerConfig::default(),
    ))
}

fn lines(lines: &[&str]) -> String {
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

const EXPIRED_STATUS: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}"#;

#[tokio::test]
async fn kube_list_decodes_a_page_and_sends_the_exact_query() {
    let (url, requests) = serve(Arc::new(|_, _| {
        ok(r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"12","continue":"c1","remainingItemCount":3},
              "items":[{"metadata":{"name":"a","namespace":"ns","resourceVersion":"11"}},{"metadata":{"name":"b","namespace":"ns","resourceVersion":"12"}}]}"#)
    }))
    .await;
    let lw = pods_lw(&url).await;
    let page = lw
        .list_page(&ListOptions {
            resource_version: "0".into(),
            limit: Some(500),
            label_selector: Some("app=web".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        requests.lock().as_slice(),
        ["/api/v1/pods?labelSelector=app%3Dweb&limit=500&resourceVersion=0"]
    );
    assert_eq!(page.resource_version, "12");
    assert_eq!(page.continue_token.as_deref(), Some("c1"));
    assert_eq!(page.remaining_item_count, Some(3));
    let names: Vec<_> = page
        .items
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
}

#[tokio::test]
async fn kube_watch_garbage_is_skipped_and_good_events_applied() {
    let (url, requests) = serve(Arc::new(|target, _| {
        if target.contains("watch=true") {
            ok(lines(&[
                r#"{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"c","resourceVersion":"2"}}}"#,
                "not json at all",
                r#"{"object":{"metadata":{"name":"x"}}}"#,
                r#"{"type":"EXPLODED","object":{"metadata":{"name":"x"}}}"#,
                r#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm","resourceVersion":"3"}}}"#,
                r#"{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1"}}"#,
                r#"{"type":"ADDED","object":{"metadata":{"name":"bad"},"spec":"not a spec"}}"#,
                r#"{"type":"DELETED"}"#,
                "",
                r#"{"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"4"}}}"#,
                r#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"5"}}}"#,
                &format!(r#"{{"type":"ERROR","object":{EXPIRED_STATUS}}}"#),
            ]))
        } else {
            ok(r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a","resourceVersion":"1"}},{"metadata":{"name":"b","resourceVersion":"1"}}]}"#)
        }
    }))
    .await;
    let store = RecordingStore::new();
    // the list+watch path, whatever the default
    let r = Reflector::builder(pods_lw(&url).await, store.clone())
        .config(&InformerConfig::default().initial_list(InitialListMode::ListThenWatch))
        .build();
    let err = r
        .list_and_watch(&CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ReflectorError::WatchEnded(e) if e.is_expired()),
        "{err:?}"
    );
    assert_eq!(
        store.content(),
        name_rv_pairs(&[("a", "4"), ("b", "1"), ("c", "2")])
    );
    assert_eq!(r.last_sync_resource_version(), "5");
    let reqs = requests.lock().clone();
    assert_eq!(reqs[0], "/api/v1/pods?limit=500&resourceVersion=0");
    assert!(
        reqs[1].starts_with("/api/v1/pods?watch=true&resourceVersion=1&timeoutSeconds="),
        "{}",
        reqs[1]
    );
    assert!(
        reqs[1].ends_with("&allowWatchBookmarks=true"),
        "{}",
        reqs[1]
    );
}

#[tokio::test]
async fn kube_list_garbage_fails_the_list_and_the_store_keeps_what_it_had() {
    let (url, _requests) = serve(Arc::new(|target, _| {
        if target.contains("watch=true") {
            ok(lines(&[&format!(r#"{{"type":"ERROR","object":{EXPIRED_STATUS}}}"#)]))
        } else if target.contains("resourceVersion=0") {
            ok(r#"{"kind":"PodList","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a","resourceVersion":"1"}}]}"#)
        } else if target.contains("resourceVersion=1") {
            ok("<html>502 bad gateway</html>")
        } else {
            ok(r#"{"kind":"PodList","metadata":{"resourceVersion":"2"},"items":[{"kind":"ConfigMap","metadata":{"name":"cm"}}]}"#)
        }
    }))
    .await;
    let store = RecordingStore::new();
    // the list+watch path, whatever the default
    let r = Reflector::builder(pods_lw(&url).await, store.clone())
        .config(&InformerConfig::default().initial_list(InitialListMode::ListThenWatch))
        .build();
    let token = CancellationToken::new();
    assert!(r.list_and_watch(&token).await.unwrap_err().is_expired());
    assert_eq!(store.content(), name_rv_pairs(&[("a", "1")]));
    let err = r.list_and_watch(&token).await.unwrap_err();
    assert!(
        matches!(&err, ReflectorError::List(e) if e.is_decode()),
        "{err:?}"
    );
    assert_eq!(
        store.content(),
        name_rv_pairs(&[("a", "1")]),
        "the store keeps what it had"
    );

    // a list item of another kind fails the page too
    let lw = pods_lw(&url).await;
    let err = lw
        .list_page(&ListOptions {
            resource_version: "2".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        err.is_decode() && err.to_string().contains("ConfigMap"),
        "{err}"
    );
}

#[tokio::test]
async fn kube_error_statuses_are_classified() {
    let (url, _) = serve(Arc::new(|target, _| {
        if target.contains("resourceVersion=5") {
            status(410, EXPIRED_STATUS)
        } else if target.contains("labelSelector=busy") {
            Reply { status: 429, headers: vec![("retry-after", "7".into())], body: "slow down".into() }
        } else if target.contains("resourceVersion=99") {
            status(504, r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Too large resource version","reason":"Timeout","code":504,"details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1}}"#)
        } else {
            status(500, r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"etcdserver: no leader","reason":"InternalError","code":500}"#)
        }
    }))
    .await;
    let lw = pods_lw(&url).await;
    let at = |rv: &str| ListOptions {
        resource_version: rv.into(),
        ..Default::default()
    };

    let e = lw.list_page(&at("5")).await.unwrap_err();
    assert!(e.is_expired(), "{e}");
    assert_eq!(e.status().unwrap().code, 410);

    let e = lw
        .watch(&ListOptions {
            label_selector: Some("busy".into()),
            ..Default::default()
        })
        .await
        .err()
        .unwrap();
    assert!(e.is_too_many_requests() && e.is_watch_retriable(), "{e}");
    assert_eq!(e.status().unwrap().retry_after_seconds, Some(7));

    let e = lw.list_page(&at("99")).await.unwrap_err();
    assert!(e.is_too_large_resource_version(), "{e}");

    let e = lw.watch(&at("7")).await.err().unwrap();
    assert!(e.is_internal_error(), "{e}");
}

#[tokio::test]
async fn kube_connection_refused_is_recognised() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let lw = pods_lw(&format!("http://{addr}")).await;
    let e = lw.watch(&ListOptions::default()).await.err().unwrap();
    assert!(e.is_connection_refused(), "{e}");
    assert!(e.is_watch_retriable());
}

#[tokio::test]
async fn kube_dynamic_object_lists_and_checks_the_kind() {
    let (url, requests) = serve(Arc::new(|target, _| {
        if target.contains("watch=true") {
            ok(lines(&[
                r#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm"}}}"#,
                r#"{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"}}}"#,
            ]))
        } else {
            ok(r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"3"},"items":[{"metadata":{"name":"a","namespace":"ns"}}]}"#)
        }
    }))
    .await;
    let ar = ApiResource::erase::<Pod>(&());
    let config = InformerConfig::default().namespace("ns");
    let lw = KubeListerWatcher::<DynamicObject>::new_with(client(&url).await, &config, &ar);
    let page = lw.list_page(&ListOptions::default()).await.unwrap();
    assert_eq!(page.items[0].metadata.name.as_deref(), Some("a"));
    let events: Vec<_> =
        futures::StreamExt::collect(lw.watch(&ListOptions::default()).await.unwrap()).await;
    assert!(
        events[0].as_ref().unwrap_err().is_decode(),
        "a ConfigMap is not a Pod"
    );
    assert!(
        matches!(&events[1], Ok(WatchEvent::Added(o)) if o.metadata.name.as_deref() == Some("p"))
    );
    assert!(requests.lock()[0].starts_with("/api/v1/namespaces/ns/pods?"));
}

#[tokio::test]
async fn kube_streaming_list_through_the_reflector() {
    let (url, requests) = serve(Arc::new(|target, _| {
        assert!(target.contains("watch=true"), "no list in streaming mode: {target}");
        ok(lines(&[
            r#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"3"}}}"#,
            r#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}"#,
            r#"{"type":"ADDED","object":{"metadata":{"name":"b","resourceVersion":"10"}}}"#,
            &format!(r#"{{"type":"ERROR","object":{EXPIRED_STATUS}}}"#),
        ]))
    }))
    .await;
    let store = RecordingStore::new();
    let r = Reflector::builder(pods_lw(&url).await, store.clone())
        .config(&InformerConfig::default().initial_list(InitialListMode::StreamingList))
        .build();
    let err = r
        .list_and_watch(&CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.is_expired(), "{err:?}");
    assert_eq!(
        store.ops()[0],
        Op::Replace(name_rv_pairs(&[("a", "3")]), "9".into())
    );
    assert_eq!(store.content(), name_rv_pairs(&[("a", "3"), ("b", "10")]));
    let q = requests.lock()[0].clone();
    assert!(
        q.starts_with("/api/v1/pods?watch=true&resourceVersionMatch=NotOlderThan&timeoutSeconds="),
        "{q}"
    );
    assert!(
        q.ends_with("&allowWatchBookmarks=true&sendInitialEvents=true"),
        "{q}"
    );
}

#[test]
fn kube_list_kind_is_checked_and_items_decode_in_one_pass() {
    use kinformer::source::decode_list;
    let page = decode_list::<DynamicObject>(
        br#"{"kind":"PodList","metadata":{"resourceVersion":"7","continue":"c","remainingItemCount":3},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#,
        "Pod",
    )
    .unwrap();
    let names: Vec<_> = page
        .items
        .iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(page.resource_version, "7");
    assert_eq!(page.continue_token.as_deref(), Some("c"));
    assert_eq!(page.remaining_item_count, Some(3));

    // a generic "List" and a list without kind are accepted; "items": null is an empty page
    assert!(decode_list::<Pod>(br#"{"kind":"List","items":[]}"#, "Pod").is_ok());
    let empty = decode_list::<Pod>(br#"{"metadata":{"continue":""},"items":null}"#, "Pod").unwrap();
    assert!(empty.items.is_empty() && empty.continue_token.is_none());

    // a list of another kind fails the page, even for DynamicObject
    let err = decode_list::<DynamicObject>(
        br#"{"kind":"ConfigMapList","items":[{"metadata":{"name":"a"}}]}"#,
        "Pod",
    )
    .unwrap_err();
    assert!(
        err.is_decode() && err.to_string().contains("ConfigMapList"),
        "{err}"
    );
    // items that are not objects, or a body that is not a list, fail with a decode error
    for body in [
        &br#"{"kind":"PodList","items":[1]}"#[..],
        br#"{"kind":"PodList","items":{}}"#,
        br#"[]"#,
        b"",
    ] {
        assert!(decode_list::<Pod>(body, "Pod").unwrap_err().is_decode());
    }
}

/// A large list reaches the informer's queue while its body is still downloading: the server
/// sends 300 pods, then waits until the queue holds some of them before finishing the body.
#[tokio::test]
async fn kube_list_items_reach_the_queue_before_the_body_ends() {
    use kinformer::queue::{DeltaFifo, DeltaFifoOptions};
    let fifo: Arc<DeltaFifo<Pod>> = Arc::new(DeltaFifo::new(DeltaFifoOptions::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen_mid_body = Arc::new(Mutex::new(None::<usize>));
    {
        let fifo = fifo.clone();
        let seen = seen_mid_body.clone();
        tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = sock.read(&mut buf).await;
            let item = |i: usize| {
                format!(
                    r#"{{"metadata":{{"name":"p{i}","namespace":"ns","resourceVersion":"5"}}}}"#
                )
            };
            let first: Vec<String> = (0..300).map(item).collect();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"5\"}},\"items\":[{}",
                first.join(",")
            );
            sock.write_all(head.as_bytes()).await.unwrap();
            sock.flush().await.unwrap();
            // wait (real time, bounded) for the first batch to be queued
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while fifo.is_empty() && std::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            *seen.lock() = Some(fifo.len());
            let rest: Vec<String> = (300..400).map(item).collect();
            let tail = format!(",{}]}}", rest.join(","));
            sock.write_all(tail.as_bytes()).await.unwrap();
            let _ = sock.shutdown().await;
        });
    }
    let lw = pods_lw(&url).await;
    let r = Arc::new(
        Reflector::builder(lw, fifo.clone())
            .config(&InformerConfig::default().initial_list(InitialListMode::ListThenWatch))
            .build(),
    );
    // the watch that follows cannot connect (the server accepts once) and would retry
    // forever: the list is what counts, so cancel once it is in
    let token = CancellationToken::new();
    let run = {
        let (r, token) = (r.clone(), token.clone());
        tokio::spawn(async move { r.list_and_watch(&token).await })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while r.last_sync_resource_version().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    token.cancel();
    let _ = run.await;
    let mid = seen_mid_body.lock().expect("the server finished the body");
    assert!(
        mid > 0 && mid <= 300,
        "items were queued while the body was incomplete: {mid}"
    );
    assert_eq!(fifo.len(), 400, "the whole list is queued in the end");
    assert_eq!(r.last_sync_resource_version(), "5");
}

#[test]
fn watch_lines_decode_in_one_pass_whatever_the_field_order() {
    use kinformer::source::decode_watch_line;
    let typed_first = decode_watch_line::<Pod>(
        br#"{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"3"}}}"#,
        "Pod",
    )
    .unwrap();
    assert!(
        matches!(&typed_first, WatchEvent::Modified(p) if p.metadata.name.as_deref() == Some("a"))
    );
    let object_first = decode_watch_line::<Pod>(
        br#"{"object":{"metadata":{"name":"b"}},"extra":[1,{"x":2}],"type":"DELETED"}"#,
        "Pod",
    )
    .unwrap();
    assert!(
        matches!(&object_first, WatchEvent::Deleted(p) if p.metadata.name.as_deref() == Some("b"))
    );
    let bookmark = decode_watch_line::<Pod>(
        br#"{"object":{"kind":"Pod","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}},"type":"BOOKMARK"}"#,
        "Pod",
    )
    .unwrap();
    assert_eq!(bookmark, WatchEvent::initial_events_end("9"));

    // another kind: rejected by the typed decoder, and for DynamicObject by its kind check
    for line in [
        &br#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"}}}"#[..],
        br#"{"object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"}},"type":"ADDED"}"#,
    ] {
        assert!(decode_watch_line::<Pod>(line, "Pod").unwrap_err().is_decode());
        let err = decode_watch_line::<DynamicObject>(line, "Pod").unwrap_err();
        assert!(err.is_decode() && err.to_string().contains("ConfigMap"), "{err}");
    }
    assert!(matches!(
        decode_watch_line::<DynamicObject>(
            br#"{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}}"#,
            "Pod"
        ),
        Ok(WatchEvent::Added(_))
    ));

    // malformed lines
    for line in [
        &br#"{"type":"ADDED","type":"ADDED","object":{}}"#[..],
        br#"{"type":"ADDED","object":{},"object":{}}"#,
        br#"{"type":"ADDED","object":7}"#,
        br#"{"type":"BOOKMARK","object":7}"#,
        br#"{"type":"ADDED"}"#,
        br#"{"type":"SURPRISE","object":{}}"#,
        br#"{"object":{}}"#,
        br#"[]"#,
        br#"{"type":"ADDED","object":{"metadata":{"name":"a"}}} trailing"#,
    ] {
        assert!(
            decode_watch_line::<Pod>(line, "Pod")
                .unwrap_err()
                .is_decode(),
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}
