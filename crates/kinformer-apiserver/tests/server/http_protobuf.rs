//! Protobuf on the wire for built-in kinds, as client-go and kubectl speak it: bodies in,
//! objects, lists and watch frames out when `Accept` puts protobuf first, JSON otherwise, and
//! 415 for a custom resource's protobuf body.

use crate::common;

use common::*;
use kinformer_apiserver::{ServerConfig, start};
use kinformer_proto::{Envelope, WatchEvent, object_from_json, object_to_json};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};

const PB: &str = "application/vnd.kubernetes.protobuf";
const ACCEPT_PB: (&str, &str) = ("Accept", "application/vnd.kubernetes.protobuf, */*");

fn decoded(body: &[u8]) -> Value {
    serde_json::from_slice(&object_to_json(body).expect("a protobuf object")).unwrap()
}

fn configmap(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

#[tokio::test]
async fn create_get_update_and_list_in_protobuf() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let path = "/api/v1/namespaces/default/configmaps";
    let body = object_from_json(&configmap("a", json!({"k": "1"}))).unwrap();
    let r = request_with_headers(a, "POST", path, Some(PB), &[ACCEPT_PB], &body).await;
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("content-type"), Some(PB));
    let created = decoded(&r.body);
    assert_eq!(created["data"], json!({"k": "1"}));
    assert_eq!(created["metadata"]["namespace"], "default");
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();

    // the same object in JSON for a JSON client
    let j = get(a, &format!("{path}/a")).await;
    assert_eq!(j.header("content-type"), Some("application/json"));
    assert_eq!(j.json()["metadata"]["resourceVersion"], rv.as_str());

    let r = request_with_headers(a, "GET", &format!("{path}/a"), None, &[ACCEPT_PB], b"").await;
    assert_eq!(r.code, 200);
    let got = decoded(&r.body);
    assert_eq!(got["metadata"]["uid"], created["metadata"]["uid"]);

    let mut next = got.clone();
    next["data"] = json!({"k": "2"});
    let body = object_from_json(&next).unwrap();
    let r = request_with_headers(
        a,
        "PUT",
        &format!("{path}/a"),
        Some(PB),
        &[ACCEPT_PB],
        &body,
    )
    .await;
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(decoded(&r.body)["data"], json!({"k": "2"}));

    for i in 0..3 {
        let body =
            object_from_json(&configmap(&format!("b{i}"), json!({"i": i.to_string()}))).unwrap();
        let r = request_with_headers(a, "POST", path, Some(PB), &[], &body).await;
        assert_eq!(r.code, 201);
        // no Accept: JSON, as kube-apiserver answers
        assert_eq!(r.header("content-type"), Some("application/json"));
    }
    let r = request_with_headers(a, "GET", path, None, &[ACCEPT_PB], b"").await;
    assert_eq!(r.header("content-type"), Some(PB));
    let list = decoded(&r.body);
    assert_eq!(list["kind"], "ConfigMapList");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b0", "b1", "b2"]);
    assert!(list["metadata"]["resourceVersion"].as_str().is_some());

    // paged, with a continue token
    let r = request_with_headers(
        a,
        "GET",
        &format!("{path}?limit=3"),
        None,
        &[ACCEPT_PB],
        b"",
    )
    .await;
    let page = decoded(&r.body);
    assert_eq!(page["items"].as_array().unwrap().len(), 3);
    assert!(!page["metadata"]["continue"].as_str().unwrap().is_empty());
    s.shutdown().await;
}

/// Reads protobuf watch frames (4-byte big-endian length, then a WatchEvent envelope).
async fn read_frames(
    addr: std::net::SocketAddr,
    path: &str,
    want: usize,
) -> (String, Vec<(String, Value)>) {
    read_frames_as(addr, path, "application/vnd.kubernetes.protobuf, */*", want).await
}

/// [`read_frames`] with this `Accept` header.
async fn read_frames_as(
    addr: std::net::SocketAddr,
    path: &str,
    accept: &str,
    want: usize,
) -> (String, Vec<(String, Value)>) {
    let s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut r = BufReader::new(s);
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    );
    r.get_mut().write_all(head.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let mut events = Vec::new();
    let mut buf = [0u8; 65536];
    let mut ct = String::new();
    let mut body_at = None;
    while events.len() < want {
        let n = tokio::time::timeout(SECS, r.read(&mut buf))
            .await
            .expect("watch frames")
            .unwrap();
        assert!(n > 0, "watch ended early");
        raw.extend_from_slice(&buf[..n]);
        if body_at.is_none()
            && let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n")
        {
            let head = String::from_utf8_lossy(&raw[..i]).to_string();
            ct = head
                .lines()
                .find_map(|l| {
                    l.strip_prefix("content-type: ")
                        .or_else(|| l.strip_prefix("Content-Type: "))
                })
                .unwrap_or("")
                .to_owned();
            body_at = Some(i + 4);
        }
        let Some(at) = body_at else { continue };
        // undo chunked framing, then split frames
        let mut body = Vec::new();
        let mut p = &raw[at..];
        while let Some(i) = p.windows(2).position(|w| w == b"\r\n") {
            let size =
                usize::from_str_radix(std::str::from_utf8(&p[..i]).unwrap().trim(), 16).unwrap();
            if p.len() < i + 2 + size + 2 {
                break;
            }
            body.extend_from_slice(&p[i + 2..i + 2 + size]);
            p = &p[i + 2 + size + 2..];
        }
        events.clear();
        let mut f = &body[..];
        while f.len() >= 4 {
            let len = u32::from_be_bytes([f[0], f[1], f[2], f[3]]) as usize;
            if f.len() < 4 + len {
                break;
            }
            // kube-apiserver's stream serializer is the raw one: no envelope around WatchEvent
            assert!(!f[4..].starts_with(kinformer_proto::MAGIC));
            let ev = WatchEvent::parse(&f[4..4 + len]).unwrap();
            assert!(
                Envelope::parse(ev.object).is_ok(),
                "the object keeps its envelope"
            );
            events.push((ev.event_type.to_owned(), decoded(ev.object)));
            f = &f[4 + len..];
        }
    }
    (ct, events)
}

#[tokio::test]
async fn watch_frames_in_protobuf() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let path = "/api/v1/namespaces/default/configmaps";
    let r = post(a, path, &configmap("w0", json!({}))).await;
    assert_eq!(r.code, 201);
    let rv = r.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let watcher = tokio::spawn(read_frames(
        a,
        "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        4,
    ));
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let mut cm = get(a, &format!("{path}/w0")).await.json();
    cm["data"] = json!({"x": "y"});
    assert_eq!(put(a, &format!("{path}/w0"), &cm).await.code, 200);
    assert_eq!(post(a, path, &configmap("w1", json!({}))).await.code, 201);
    let (ct, events) = watcher.await.unwrap();
    assert_eq!(ct, kinformer_proto::WATCH_MEDIA_TYPE);
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .map(|(t, o)| (t.as_str(), o["metadata"]["name"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        kinds,
        [
            ("ADDED", "w0"),
            ("BOOKMARK", ""),
            ("MODIFIED", "w0"),
            ("ADDED", "w1")
        ]
    );
    assert_eq!(events[0].1["metadata"]["resourceVersion"], rv.as_str());
    assert_eq!(
        events[1].1["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(events[2].1["data"], json!({"x": "y"}));
    s.shutdown().await;
}

#[tokio::test]
async fn a_custom_resource_has_no_protobuf_form() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let crd = widget_crd();
    // the CRD itself goes in as protobuf (a built-in kind)
    let body = object_from_json(&crd).unwrap();
    let r = request(
        a,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some(PB),
        &body,
    )
    .await;
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let mut code = 404;
    for _ in 0..50 {
        code = get(a, path).await.code;
        if code == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(code, 200);
    let w = kinformer_proto::envelope("example.com/v1", "Widget", b"");
    let r = request(a, "POST", path, Some(PB), &w).await;
    assert_eq!(r.code, 415);
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert_eq!(post(a, path, &widget).await.code, 201);
    // a protobuf-first Accept still gets JSON for a custom resource
    let r = request_with_headers(a, "GET", &format!("{path}/w"), None, &[ACCEPT_PB], b"").await;
    assert_eq!(r.code, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    // ... and its errors as a protobuf Status, as kube-apiserver 1.36 sends them
    let r = request_with_headers(a, "GET", &format!("{path}/nope"), None, &[ACCEPT_PB], b"").await;
    assert_eq!(r.code, 404);
    assert_eq!(r.header("content-type"), Some(PB));
    assert_eq!(
        decoded(&r.body)["message"],
        "widgets.example.com \"nope\" not found"
    );
    // an Accept of protobuf alone is refused (406 NotAcceptable) for every verb, before
    // anything is written, as kube-apiserver refuses it
    let only_pb = [("Accept", PB)];
    for (method, p) in [("GET", format!("{path}/w")), ("GET", path.to_string())] {
        let r = request_with_headers(a, method, &p, None, &only_pb, b"").await;
        assert_eq!(r.code, 406, "{method} {p}");
        assert_eq!(r.header("content-type"), Some(PB));
        let status = decoded(&r.body);
        assert_eq!(status["reason"], "NotAcceptable");
        assert_eq!(
            status["message"],
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }
    // a table asked for in protobuf alone too (its Status in JSON: nothing plain in the header
    // to negotiate), and metadata-only in the wrong form for the verb; but a metadata-only list
    // or get is served in protobuf, whatever the resource (all as kube-apiserver 1.36.3)
    let table_only = format!("{PB};as=Table;g=meta.k8s.io;v=v1");
    let r = request_with_headers(a, "GET", path, None, &[("Accept", &table_only)], b"").await;
    assert_eq!(r.code, 406);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let meta = |kind: &str| format!("{PB};as={kind};g=meta.k8s.io;v=v1");
    let r = request_with_headers(
        a,
        "GET",
        path,
        None,
        &[("Accept", &meta("PartialObjectMetadata"))],
        b"",
    )
    .await;
    assert_eq!(r.code, 406);
    for (p, kind) in [
        (path.to_string(), "PartialObjectMetadataList"),
        (format!("{path}/w"), "PartialObjectMetadata"),
    ] {
        let r = request_with_headers(a, "GET", &p, None, &[("Accept", &meta(kind))], b"").await;
        assert_eq!(r.code, 200, "{p}");
        assert_eq!(r.header("content-type"), Some(PB), "{p}");
        assert_eq!(decoded(&r.body)["kind"], kind, "{p}");
    }
    let other =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w2"}});
    let body = serde_json::to_vec(&other).unwrap();
    let r = request_with_headers(a, "POST", path, Some("application/json"), &only_pb, &body).await;
    assert_eq!(r.code, 406);
    assert_eq!(get(a, &format!("{path}/w2")).await.code, 404);
    s.shutdown().await;
}

/// Errors are a `Status` in the form kube-apiserver 1.36 negotiates for them: protobuf when
/// the client's `Accept` prefers it (client-go's protobuf clients, kinformer's informers), JSON
/// otherwise, whichever part of the server made the error (a lookup, a bad query, a conflict,
/// an unknown resource, an injected fault with its `Retry-After`). Observed on the e2e
/// harness's kube-apiserver v1.36.3 with the same requests.
#[tokio::test]
async fn errors_come_as_a_protobuf_status_when_accept_prefers_protobuf() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let pods = "/api/v1/namespaces/default/pods";
    let cms = "/api/v1/namespaces/default/configmaps";
    assert_eq!(post(a, cms, &configmap("taken", json!({}))).await.code, 201);
    let taken = object_from_json(&configmap("taken", json!({}))).unwrap();
    let text_then_pb = format!("text/html, {PB}");
    // (method, path, protobuf body, Accept, code, reason)
    type Case<'a> = (&'a str, String, Option<&'a [u8]>, &'a str, u16, &'a str);
    let cases: Vec<Case> = vec![
        (
            "GET",
            format!("{pods}/missing"),
            None,
            ACCEPT_PB.1,
            404,
            "NotFound",
        ),
        (
            "GET",
            format!("{pods}/missing"),
            None,
            &text_then_pb,
            404,
            "NotFound",
        ),
        (
            "GET",
            format!("{pods}?continue=bogus"),
            None,
            PB,
            400,
            "BadRequest",
        ),
        (
            "GET",
            format!("{pods}?fieldSelector=bogus"),
            None,
            PB,
            400,
            "BadRequest",
        ),
        ("GET", "/api/v1/foos".into(), None, PB, 404, "NotFound"),
        ("POST", cms.into(), Some(&taken), PB, 409, "AlreadyExists"),
    ];
    for (method, path, body, accept, code, reason) in cases {
        let ct = body.map(|_| PB);
        let r = request_with_headers(
            a,
            method,
            &path,
            ct,
            &[("Accept", accept)],
            body.unwrap_or(b""),
        )
        .await;
        assert_eq!(r.code, code, "{method} {path}");
        assert_eq!(
            r.header("content-type"),
            Some(PB),
            "{method} {path} ({accept})"
        );
        let status = decoded(&r.body);
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["code"], code);
        assert_eq!(status["reason"], reason, "{method} {path}");
    }
    // JSON first, or protobuf at a lower weight: JSON, as before
    for accept in [
        format!("application/json, {PB}"),
        format!("{PB};q=0.5, application/json"),
        "*/*".to_string(),
    ] {
        let r = request_with_headers(
            a,
            "GET",
            &format!("{pods}/missing"),
            None,
            &[("Accept", &accept)],
            b"",
        )
        .await;
        assert_eq!(r.code, 404);
        assert_eq!(
            r.header("content-type"),
            Some("application/json"),
            "{accept}"
        );
        assert_eq!(r.json()["reason"], "NotFound");
    }
    // an injected 429 keeps its Retry-After
    s.faults().fail_next(
        kinformer_apiserver::FailureRule::new(429, 1)
            .verb(kinformer_apiserver::Verb::List)
            .resource("pods")
            .retry_after(3),
    );
    let r = request_with_headers(a, "GET", pods, None, &[ACCEPT_PB], b"").await;
    assert_eq!(r.code, 429);
    assert_eq!(r.header("content-type"), Some(PB));
    assert_eq!(r.header("retry-after"), Some("3"));
    assert_eq!(decoded(&r.body)["reason"], "TooManyRequests");
    // the server's own endpoints stay JSON
    let r =
        request_with_headers(a, "GET", "/__kinformer/state/nope", None, &[ACCEPT_PB], b"").await;
    assert_ne!(r.header("content-type"), Some(PB));
    s.shutdown().await;
}

/// Metadata-only requests that put protobuf first (client-go's metadata client) are answered
/// in protobuf, as kube-apiserver answers them: a `PartialObjectMetadataList`, a
/// `PartialObjectMetadata`, watch frames of `PartialObjectMetadata` events.
#[tokio::test]
async fn metadata_only_in_protobuf() {
    const LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    const ONE: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let path = "/api/v1/namespaces/default/configmaps";
    for n in ["m0", "m1", "m2"] {
        let r = post(a, path, &configmap(n, json!({"k": "v"}))).await;
        assert_eq!(r.code, 201);
    }
    let page = request_with_headers(
        a,
        "GET",
        &format!("{path}?limit=2"),
        None,
        &[("Accept", LIST)],
        b"",
    )
    .await;
    assert_eq!(page.code, 200);
    assert_eq!(
        page.header("content-type"),
        Some(kinformer_proto::MEDIA_TYPE)
    );
    let list = decoded(&page.body);
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
    assert!(list["metadata"]["continue"].is_string(), "{list}");
    let items = list["items"].as_array().unwrap();
    let names: Vec<&str> = items
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["m0", "m1"]);
    assert!(items.iter().all(|i| i.get("data").is_none()), "{list}");

    let one = request_with_headers(
        a,
        "GET",
        &format!("{path}/m2"),
        None,
        &[("Accept", ONE)],
        b"",
    )
    .await;
    assert_eq!(
        one.header("content-type"),
        Some(kinformer_proto::MEDIA_TYPE)
    );
    let one = decoded(&one.body);
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert_eq!(one["metadata"]["name"], "m2");
    assert!(one.get("data").is_none());

    let (ct, events) = read_frames_as(
        a,
        &format!("{path}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
        ONE,
        4,
    )
    .await;
    assert_eq!(ct, kinformer_proto::WATCH_MEDIA_TYPE);
    let seen: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|(t, o)| {
            (
                t.as_str(),
                o["kind"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("ADDED", "PartialObjectMetadata", "m0"),
            ("ADDED", "PartialObjectMetadata", "m1"),
            ("ADDED", "PartialObjectMetadata", "m2"),
            ("BOOKMARK", "PartialObjectMetadata", ""),
        ]
    );
    assert!(events.iter().all(|(_, o)| o.get("data").is_none()));
    s.shutdown().await;
}
