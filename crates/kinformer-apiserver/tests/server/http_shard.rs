//! `shardSelector` (KEP-5866, gate `ShardedListAndWatch`) over raw HTTP: kube-apiserver
//! 1.36.3's parse errors, filtering of lists (paged too), watches and streaming lists,
//! `metadata.shardInfo` in JSON and protobuf lists, and the gate turned off (the parameter
//! ignored, no `shardInfo`).

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use kinformer_apiserver::{ServerConfig, start};
use serde_json::{Value, json};

const LOWER: &str = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
const UPPER: &str = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')";

fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

fn names(list: &Value) -> BTreeSet<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// 40 config maps in `default`; returns (name, uid) pairs.
async fn seeded(
    config: ServerConfig,
) -> (kinformer_apiserver::RunningServer, Vec<(String, String)>) {
    let s = start(config).await.unwrap();
    let mut objs = Vec::new();
    for i in 0..40 {
        let r = post(
            s.addr(),
            "/api/v1/namespaces/default/configmaps",
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i:02}")}}),
        )
        .await;
        assert_eq!(r.code, 201);
        let v = r.json();
        objs.push((
            v["metadata"]["name"].as_str().unwrap().to_owned(),
            v["metadata"]["uid"].as_str().unwrap().to_owned(),
        ));
    }
    (s, objs)
}

fn lower_half(objs: &[(String, String)]) -> BTreeSet<String> {
    objs.iter()
        .filter(|(_, uid)| fnv1a(uid) < 1 << 63)
        .map(|(n, _)| n.clone())
        .collect()
}

#[tokio::test]
async fn lists_hold_the_shard_and_echo_the_selector() {
    let (s, objs) = seeded(ServerConfig::default()).await;
    let want = lower_half(&objs);
    assert!(!want.is_empty() && want.len() < objs.len());
    // the selector as written, not canonical (spaces, double quotes): echoed canonical
    let sent = "shardRange(object.metadata.uid,\"0x0000000000000000\",'0x8000000000000000')";
    let l = get(
        s.addr(),
        &format!(
            "/api/v1/namespaces/default/configmaps?shardSelector={}",
            enc(sent)
        ),
    )
    .await
    .json();
    assert_eq!(names(&l), want);
    assert_eq!(l["metadata"]["shardInfo"], json!({"selector": LOWER}));
    // the two halves are disjoint and cover everything
    let u = get(
        s.addr(),
        &format!("/api/v1/configmaps?shardSelector={}", enc(UPPER)),
    )
    .await
    .json();
    let upper = names(&u);
    assert!(upper.is_disjoint(&want));
    assert_eq!(upper.len() + want.len(), objs.len());
    // both halves in one selector: everything
    let both = get(
        s.addr(),
        &format!(
            "/api/v1/namespaces/default/configmaps?shardSelector={}",
            enc(&format!("{UPPER} || {LOWER}"))
        ),
    )
    .await
    .json();
    assert_eq!(names(&both).len(), objs.len());
    assert_eq!(
        both["metadata"]["shardInfo"]["selector"],
        format!("{UPPER} || {LOWER}")
    );
    // without a selector: no shardInfo
    let all = get(s.addr(), "/api/v1/namespaces/default/configmaps")
        .await
        .json();
    assert!(all["metadata"].get("shardInfo").is_none());
    // an empty parameter is no selector (kube checks `!= ""` before parsing)
    let empty = get(
        s.addr(),
        "/api/v1/namespaces/default/configmaps?shardSelector=",
    )
    .await;
    assert_eq!(empty.code, 200);
    assert!(empty.json()["metadata"].get("shardInfo").is_none());
}

#[tokio::test]
async fn namespace_shards_keep_namespaces_whole() {
    let s = start(ServerConfig::default()).await.unwrap();
    for ns in ["alpha", "beta", "gamma", "delta"] {
        post(
            s.addr(),
            "/api/v1/namespaces",
            &json!({"metadata": {"name": ns}}),
        )
        .await;
        for i in 0..3 {
            let r = post(
                s.addr(),
                &format!("/api/v1/namespaces/{ns}/configmaps"),
                &json!({"metadata": {"name": format!("c{i}")}}),
            )
            .await;
            assert_eq!(r.code, 201);
        }
    }
    let sel = "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')";
    let l = get(
        s.addr(),
        &format!("/api/v1/configmaps?shardSelector={}", enc(sel)),
    )
    .await
    .json();
    for item in l["items"].as_array().unwrap() {
        let ns = item["metadata"]["namespace"].as_str().unwrap();
        assert!(fnv1a(ns) < 1 << 63, "{ns} is not in the lower half");
    }
    for ns in ["alpha", "beta", "gamma", "delta"] {
        let n = l["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["metadata"]["namespace"] == ns)
            .count();
        assert_eq!(n, if fnv1a(ns) < 1 << 63 { 3 } else { 0 }, "{ns}");
    }
}

#[tokio::test]
async fn pages_are_filtered_and_every_page_echoes_the_selector() {
    let (s, objs) = seeded(ServerConfig::default()).await;
    let want = lower_half(&objs);
    let mut got = BTreeSet::new();
    let mut path = format!(
        "/api/v1/namespaces/default/configmaps?limit=3&shardSelector={}",
        enc(LOWER)
    );
    let mut pages = 0;
    loop {
        let l = get(s.addr(), &path).await.json();
        pages += 1;
        assert_eq!(
            l["metadata"]["shardInfo"]["selector"], LOWER,
            "page {pages}"
        );
        assert!(l["items"].as_array().unwrap().len() <= 3);
        got.extend(names(&l));
        match l["metadata"]["continue"].as_str() {
            Some(c) if !c.is_empty() => {
                path = format!(
                    "/api/v1/namespaces/default/configmaps?limit=3&continue={}&shardSelector={}",
                    enc(c),
                    enc(LOWER)
                );
            }
            _ => break,
        }
    }
    assert_eq!(got, want);
    assert!(pages >= want.len().div_ceil(3));
    // an exact read at an older revision is filtered too
    let rv = get(s.addr(), "/api/v1/namespaces/default/configmaps")
        .await
        .json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = post(
        s.addr(),
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "later"}}),
    )
    .await;
    assert_eq!(r.code, 201);
    let exact = get(
        s.addr(),
        &format!(
            "/api/v1/namespaces/default/configmaps?resourceVersion={rv}&resourceVersionMatch=Exact&shardSelector={}",
            enc(LOWER)
        ),
    )
    .await
    .json();
    assert_eq!(names(&exact), want);
}

#[tokio::test]
async fn bad_selectors_fail_as_kube_apiserver_fails_them() {
    let (s, _) = seeded(ServerConfig::default()).await;
    let cases = [
        (
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
            "invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value, got \"0x0\" (did you mean \"0x0000000000000000\"?)",
        ),
        (
            " ",
            "invalid shard selector: empty shard selector is not allowed; omit the parameter for unfiltered lists",
        ),
        (
            "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
            "invalid shard selector: unsupported field path \"object.metadata.name\"; supported: object.metadata.uid, object.metadata.namespace",
        ),
    ];
    for (sel, message) in cases {
        for watch in ["", "&watch=true"] {
            let r = get(
                s.addr(),
                &format!(
                    "/api/v1/namespaces/default/configmaps?shardSelector={}{watch}",
                    enc(sel)
                ),
            )
            .await;
            // the registry returns a plain error: kube-apiserver answers 500, no reason
            assert_eq!(r.code, 500, "{sel} {watch}");
            let st = r.json();
            assert_eq!(
                st,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message, "code": 500}),
                "{sel} {watch}"
            );
        }
    }
}

#[tokio::test]
async fn with_the_gate_off_the_selector_is_ignored() {
    let (s, objs) = seeded(ServerConfig::default().sharded_list_and_watch(false)).await;
    let l = get(
        s.addr(),
        &format!(
            "/api/v1/namespaces/default/configmaps?shardSelector={}",
            enc(LOWER)
        ),
    )
    .await
    .json();
    assert_eq!(names(&l).len(), objs.len());
    assert!(l["metadata"].get("shardInfo").is_none());
    // not even parsed
    let bad = get(
        s.addr(),
        "/api/v1/namespaces/default/configmaps?shardSelector=%23%23",
    )
    .await;
    assert_eq!(bad.code, 200);
    let mut w = watch(
        s.addr(),
        &format!(
            "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&shardSelector={}",
            enc(LOWER)
        ),
    )
    .await;
    let mut added = 0;
    loop {
        let ev = w.next_within(Duration::from_secs(5)).await.unwrap();
        if ev["type"] == "BOOKMARK" {
            break;
        }
        added += 1;
    }
    assert_eq!(added, objs.len());
}

#[tokio::test]
async fn watches_and_streaming_lists_send_only_the_shard() {
    let (s, objs) = seeded(ServerConfig::default()).await;
    let want = lower_half(&objs);
    let mut w = watch(
        s.addr(),
        &format!(
            "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&shardSelector={}",
            enc(LOWER)
        ),
    )
    .await;
    assert_eq!(w.code, 200);
    let mut initial = BTreeSet::new();
    loop {
        let ev = w.next_within(Duration::from_secs(5)).await.unwrap();
        if ev["type"] == "BOOKMARK" {
            // kube's end bookmark carries no shardInfo
            assert_eq!(
                ev["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
                "true"
            );
            assert!(ev["object"]["metadata"].get("shardInfo").is_none());
            break;
        }
        assert_eq!(ev["type"], "ADDED");
        initial.insert(
            ev["object"]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(initial, want);
    // live events: create 20 more, then update and delete every object; only the shard's arrive
    let mut created = Vec::new();
    for i in 0..20 {
        let v = post(
            s.addr(),
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"name": format!("new-{i:02}")}}),
        )
        .await
        .json();
        created.push((
            v["metadata"]["name"].as_str().unwrap().to_owned(),
            v["metadata"]["uid"].as_str().unwrap().to_owned(),
        ));
    }
    let mut all = objs.clone();
    all.extend(created.iter().cloned());
    for (name, _) in &all {
        let r = request(
            s.addr(),
            "DELETE",
            &format!("/api/v1/namespaces/default/configmaps/{name}"),
            None,
            b"",
        )
        .await;
        assert_eq!(r.code, 200);
    }
    let want_created = lower_half(&created);
    let want_all = lower_half(&all);
    let mut added = BTreeSet::new();
    let mut deleted = BTreeSet::new();
    while deleted.len() < want_all.len() {
        let ev = w.next_within(Duration::from_secs(5)).await.unwrap();
        let name = ev["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let uid = ev["object"]["metadata"]["uid"].as_str().unwrap_or("");
        match ev["type"].as_str().unwrap() {
            "ADDED" => {
                assert!(fnv1a(uid) < 1 << 63);
                added.insert(name);
            }
            "DELETED" => {
                assert!(fnv1a(uid) < 1 << 63);
                deleted.insert(name);
            }
            "BOOKMARK" => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(added, want_created);
    assert_eq!(deleted, want_all);
    assert!(w.quiet_for(Duration::from_millis(200)).await);
}

#[tokio::test]
async fn protobuf_lists_carry_shard_info_as_listmeta_field_5() {
    let (s, objs) = seeded(ServerConfig::default()).await;
    let r = request_with_headers(
        s.addr(),
        "GET",
        &format!(
            "/api/v1/namespaces/default/configmaps?shardSelector={}",
            enc(LOWER)
        ),
        None,
        &[("Accept", "application/vnd.kubernetes.protobuf, */*")],
        b"",
    )
    .await;
    assert_eq!(r.code, 200);
    let env = kinformer_proto::Envelope::parse(&r.body).unwrap();
    assert_eq!(env.kind, "ConfigMapList");
    let (meta, items) = kinformer_proto::list_parts(env.raw).unwrap();
    assert_eq!(items.len(), lower_half(&objs).len());
    let meta: Value =
        serde_json::from_slice(&kinformer_proto::list_meta_to_json(meta).unwrap()).unwrap();
    assert_eq!(meta["shardInfo"]["selector"], LOWER);
}

#[tokio::test]
async fn metadata_only_lists_filter_but_do_not_echo() {
    let (s, objs) = seeded(ServerConfig::default()).await;
    let r = request_with_headers(
        s.addr(),
        "GET",
        &format!(
            "/api/v1/namespaces/default/configmaps?shardSelector={}",
            enc(LOWER)
        ),
        None,
        &[(
            "Accept",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )],
        b"",
    )
    .await;
    let l = r.json();
    assert_eq!(l["kind"], "PartialObjectMetadataList");
    assert_eq!(names(&l), lower_half(&objs));
    // kube's asPartialObjectMetadataList copies resourceVersion, continue and
    // remainingItemCount only
    assert!(l["metadata"].get("shardInfo").is_none());
}
