//! Metadata-only responses, as kube-apiserver serves them to client-go's metadata client and
//! kube-rs's `PartialObjectMeta` requests: `as=PartialObjectMetadataList` on a list,
//! `as=PartialObjectMetadata` on a get and a watch.

use crate::common;

use common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use serde_json::json;

/// JSON (what kube-rs sends; client-go's metadata client puts protobuf first, see
/// `http_protobuf.rs`).
const LIST_ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
const ONE_ACCEPT: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

#[tokio::test]
async fn lists_pages_and_gets_carry_only_metadata() {
    let s = start(ServerConfig::default()).await.unwrap();
    for n in ["a", "b", "c"] {
        let r = post(
            s.addr(),
            "/api/v1/namespaces/default/pods",
            &pod_json(n, json!({"app": n})),
        )
        .await;
        assert_eq!(r.code, 201);
    }
    let path = "/api/v1/namespaces/default/pods?limit=2";
    let page = request_with_headers(s.addr(), "GET", path, None, &[("Accept", LIST_ACCEPT)], b"")
        .await
        .json();
    assert_eq!(page["kind"], "PartialObjectMetadataList");
    assert_eq!(page["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    for item in items {
        assert_eq!(item["kind"], "PartialObjectMetadata");
        assert_eq!(item["apiVersion"], "meta.k8s.io/v1");
        assert!(item.get("spec").is_none(), "no spec: {item}");
        assert!(item["metadata"]["labels"]["app"].is_string());
        let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 3, "kind, apiVersion, metadata: {keys:?}");
    }
    let cont = page["metadata"]["continue"].as_str().unwrap();
    let rest = request_with_headers(
        s.addr(),
        "GET",
        &format!("{path}&continue={cont}"),
        None,
        &[("Accept", LIST_ACCEPT)],
        b"",
    )
    .await
    .json();
    assert_eq!(rest["items"].as_array().unwrap().len(), 1);
    assert_eq!(rest["items"][0]["metadata"]["name"], "c");
    assert_eq!(
        rest["metadata"]["resourceVersion"],
        page["metadata"]["resourceVersion"]
    );

    let one = request_with_headers(
        s.addr(),
        "GET",
        "/api/v1/namespaces/default/pods/b",
        None,
        &[("Accept", ONE_ACCEPT)],
        b"",
    )
    .await
    .json();
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert_eq!(one["metadata"]["name"], "b");
    assert!(one.get("spec").is_none());

    // Without the parameter, or with the list's on a get, full objects as before.
    let full = get(s.addr(), "/api/v1/namespaces/default/pods")
        .await
        .json();
    assert_eq!(full["kind"], "PodList");
    assert!(full["items"][0].get("spec").is_some());
    let full = request_with_headers(
        s.addr(),
        "GET",
        "/api/v1/namespaces/default/pods/b",
        None,
        &[("Accept", LIST_ACCEPT)],
        b"",
    )
    .await
    .json();
    assert_eq!(full["kind"], "Pod");
    s.shutdown().await;
}

#[tokio::test]
async fn kube_rs_metadata_requests_list_and_watch_partial_objects() {
    let s = start(ServerConfig::default()).await.unwrap();
    let api: Api<Pod> = Api::namespaced(s.client(), "default");
    for n in ["a", "b"] {
        let pod: Pod = serde_json::from_value(pod_json(n, json!({}))).unwrap();
        api.create(&Default::default(), &pod).await.unwrap();
    }
    let list = api.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 2);
    assert!(list.items.iter().all(|m| m.metadata.name.is_some()));
    let rv = list.metadata.resource_version.clone().unwrap();
    let mut events = api
        .watch_metadata(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    api.delete("a", &Default::default()).await.unwrap();
    let ev = events.try_next().await.unwrap().unwrap();
    match ev {
        WatchEvent::Deleted(m) => {
            assert_eq!(m.metadata.name.as_deref(), Some("a"));
            assert_eq!(
                m.types.map(|t| t.kind).as_deref(),
                Some("PartialObjectMetadata")
            );
        }
        other => panic!("expected a DELETED event, got {other:?}"),
    }
    s.shutdown().await;
}
