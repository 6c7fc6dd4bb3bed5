//! A CRD whose schema changes under stored objects, as an operator upgrade meets it (and as
//! kube-apiserver v1.36.3 of the e2e harness was seen to do it, with kubectl, 2026-12-05): every read
//! shows the stored objects through the new schema (a new default set, an undeclared field
//! pruned) with their resourceVersion unchanged, and back when the schema goes back; open
//! watches of the resource end without an event and a watch from before the change is 410
//! Gone, so a watcher lists again; a change of the CRD that leaves its spec alone does neither;
//! an update that changes nothing stores what the new schema shows.

use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};

const CRD: &str = "gadgets.example.com";

/// The CRD with `spec`'s properties `props`.
fn crd(props: Value) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": props}}}}
            }]
        }
    }))
    .unwrap()
}

/// The first schema: `size` and `extra`.
fn first() -> CustomResourceDefinition {
    crd(json!({"size": {"type": "integer"}, "extra": {"type": "string"}}))
}

/// The second: `extra` gone, `mode` defaulted.
fn second() -> CustomResourceDefinition {
    crd(json!({"size": {"type": "integer"}, "mode": {"type": "string", "default": "fast"}}))
}

/// Replaces the live CRD's spec with `crd`'s; the CRD's resourceVersion after.
async fn change(c: &kube::Client, crd: CustomResourceDefinition) -> String {
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    let mut live = crds.get(CRD).await.unwrap();
    live.spec = crd.spec;
    let replaced = crds
        .replace(CRD, &PostParams::default(), &live)
        .await
        .unwrap();
    replaced.metadata.resource_version.unwrap()
}

fn gadgets(c: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    );
    Api::namespaced_with(c.clone(), "default", &ar)
}

fn gadget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": name}, "spec": spec
    }))
    .unwrap()
}

fn rv(o: &DynamicObject) -> String {
    o.metadata.resource_version.clone().unwrap()
}

/// The next watch event; `None` when the stream ended (a guard, not a measure: 30 s).
async fn next<S>(events: &mut S) -> Option<WatchEvent<DynamicObject>>
where
    S: Stream<Item = kube::Result<WatchEvent<DynamicObject>>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(30), events.next())
        .await
        .expect("the watch neither sent nor ended")
        .map(|e| e.unwrap())
}

/// A server with the first CRD and gadget `a` (`size` 3, `extra`), and `a` as created.
async fn with_gadget() -> (kinformer_apiserver::RunningServer, DynamicObject) {
    let s = start(ServerConfig::default()).await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(s.client());
    crds.create(&PostParams::default(), &first()).await.unwrap();
    let a = gadgets(&s.client())
        .create(
            &PostParams::default(),
            &gadget("a", json!({"size": 3, "extra": "hello"})),
        )
        .await
        .unwrap();
    (s, a)
}

#[tokio::test]
async fn stored_objects_are_read_through_the_new_schema_and_watches_start_over() {
    let (s, a) = with_gadget().await;
    let (c, api) = (s.client(), gadgets(&s.client()));
    let mut before = api
        .watch(&WatchParams::default(), &rv(&a))
        .await
        .unwrap()
        .boxed();

    let crd_rv = change(&c, second()).await;
    // the watch open across the change ends, without an event
    assert!(next(&mut before).await.is_none());
    // a GET and a LIST show `a` through the new schema: defaulted, pruned, same version
    let got = api.get("a").await.unwrap();
    assert_eq!(got.data["spec"], json!({"size": 3, "mode": "fast"}));
    assert_eq!(rv(&got), rv(&a));
    let listed = api.list(&Default::default()).await.unwrap();
    assert_eq!(listed.items[0].data["spec"], got.data["spec"]);
    // a watch from before the change: 410, as from a new watch cache
    let mut old = api
        .watch(&WatchParams::default(), &rv(&a))
        .await
        .unwrap()
        .boxed();
    match next(&mut old).await {
        Some(WatchEvent::Error(e)) => {
            assert_eq!(e.code, 410);
            assert_eq!(
                e.message,
                format!("too old resource version: {} ({crd_rv})", rv(&a))
            );
        }
        other => panic!("expected 410, got {other:?}"),
    }
    // a watch from the list's resourceVersion gets on with the new schema
    let mut after = api
        .watch(
            &WatchParams::default(),
            &listed.metadata.resource_version.unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &gadget("b", json!({"size": 1})))
        .await
        .unwrap();
    match next(&mut after).await {
        Some(WatchEvent::Added(b)) => {
            assert_eq!(b.data["spec"], json!({"size": 1, "mode": "fast"}))
        }
        other => panic!("expected b ADDED, got {other:?}"),
    }

    // back to the first schema: `a` as written again (its `extra` back, no `mode`); `b` was
    // written with the default, which stays
    change(&c, first()).await;
    let back = api.get("a").await.unwrap();
    assert_eq!(back.data["spec"], json!({"size": 3, "extra": "hello"}));
    assert_eq!(rv(&back), rv(&a));
    let b = api.get("b").await.unwrap();
    assert_eq!(b.data["spec"], json!({"size": 1}));
}

#[tokio::test]
async fn a_crd_change_that_leaves_its_spec_alone_keeps_watches_and_objects() {
    let (s, a) = with_gadget().await;
    let (c, api) = (s.client(), gadgets(&s.client()));
    let mut events = api
        .watch(&WatchParams::default(), &rv(&a))
        .await
        .unwrap()
        .boxed();
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    crds.patch(
        CRD,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"team": "x"}}})),
    )
    .await
    .unwrap();
    api.create(&PostParams::default(), &gadget("b", json!({"size": 1})))
        .await
        .unwrap();
    match next(&mut events).await {
        Some(WatchEvent::Added(b)) => assert_eq!(b.metadata.name.as_deref(), Some("b")),
        other => panic!("expected b ADDED on the same watch, got {other:?}"),
    }
    let got = api.get("a").await.unwrap();
    assert_eq!(got.data["spec"], json!({"size": 3, "extra": "hello"}));
}

#[tokio::test]
async fn an_update_that_changes_nothing_stores_what_the_new_schema_shows() {
    let (s, a) = with_gadget().await;
    let (c, api) = (s.client(), gadgets(&s.client()));
    let crd_rv = change(&c, second()).await;
    let shown = api.get("a").await.unwrap();
    let mut events = api
        .watch(&WatchParams::default(), &crd_rv)
        .await
        .unwrap()
        .boxed();
    // kube-apiserver compares with the object as etcd holds it (no `mode`, an `extra`)
    let replaced = api
        .replace("a", &PostParams::default(), &shown)
        .await
        .unwrap();
    assert_ne!(rv(&replaced), rv(&a));
    assert_eq!(replaced.data["spec"], shown.data["spec"]);
    assert_eq!(replaced.metadata.generation, shown.metadata.generation);
    match next(&mut events).await {
        Some(WatchEvent::Modified(m)) => assert_eq!(rv(&m), rv(&replaced)),
        other => panic!("expected a MODIFIED, got {other:?}"),
    }
    // stored as shown now: the same update again changes nothing
    let again = api
        .replace("a", &PostParams::default(), &replaced)
        .await
        .unwrap();
    assert_eq!(rv(&again), rv(&replaced));
    // back to the first schema: what was stored last, read through it (`extra` was gone when
    // it was stored, `mode` is not declared there)
    change(&c, first()).await;
    let back = api.get("a").await.unwrap();
    assert_eq!(back.data["spec"], json!({"size": 3}));
}
