//! A CRD whose storage version changes, as an operator's version migration meets it: objects
//! written before stay stored in the old version (as etcd keeps them, `status.storedVersions`
//! lists both), and every read through the new storage version shows them in it: relabelled
//! under conversion strategy `None`, converted by the webhook under `Webhook`, and pruned by
//! its schema either way; a write through it stores them in the new version.

use crate::conversion_webhooks::{GROUP, crd, crontab, crontabs, label, register, webhook};

use std::sync::atomic::Ordering;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::{Value, json};

/// `crd` with v1 as its storage version instead of v2 (or back).
fn stored_in(mut crd: CustomResourceDefinition, version: &str) -> CustomResourceDefinition {
    for v in &mut crd.spec.versions {
        v.storage = v.name == version;
    }
    crd
}

/// `crd` under conversion strategy `None`.
fn without_webhook(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    crd.spec.conversion = None;
    crd
}

/// Replaces the CRD with `crd` (its storage version changed); its stored versions after.
async fn change_storage(c: &kube::Client, crd: CustomResourceDefinition) -> Vec<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    let mut live = crds.get(&format!("crontabs.{GROUP}")).await.unwrap();
    live.spec = crd.spec;
    let replaced = crds
        .replace(&format!("crontabs.{GROUP}"), &PostParams::default(), &live)
        .await
        .unwrap();
    replaced.status.unwrap().stored_versions.unwrap_or_default()
}

/// The first object a watcher through `api` sees.
async fn watched(api: Api<DynamicObject>) -> DynamicObject {
    let mut events = watcher(api, Default::default()).boxed();
    loop {
        match events.next().await.unwrap().unwrap() {
            watcher::Event::InitApply(o) | watcher::Event::Apply(o) => return o,
            _ => {}
        }
    }
}

#[tokio::test]
async fn objects_of_an_earlier_storage_version_are_shown_in_the_new_one_without_a_webhook() {
    let w = webhook().await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let v1_stored = without_webhook(stored_in(crd(&w, "/convert"), "v1"));
    register(&c, &v1_stored).await;
    let (v1, v2) = (crontabs(&c, "v1"), crontabs(&c, "v2"));
    let spec = json!({"cronSpec": "*/1 * * * *", "size": 1});
    v1.create(&PostParams::default(), &crontab("v1", "a", spec.clone()))
        .await
        .unwrap();

    let stored = change_storage(&c, without_webhook(crd(&w, "/convert"))).await;
    assert_eq!(stored, ["v1", "v2"]);
    // through the new storage version: a GET, a LIST and a watch show it
    // as v2 (strategy None: only apiVersion changes)
    let api_version = |o: &DynamicObject| o.types.as_ref().unwrap().api_version.clone();
    // (and pruned by v2's schema, which declares none of v1's spec fields, as kube-apiserver
    // prunes every conversion's result)
    let got = v2.get("a").await.unwrap();
    assert_eq!(api_version(&got), format!("{GROUP}/v2"));
    assert_eq!(got.data["spec"], json!({}));
    let listed = v2.list(&Default::default()).await.unwrap();
    assert_eq!(listed.items[0].data["spec"], json!({}));
    let raw: Value = c
        .request(
            http::Request::get(format!("/apis/{GROUP}/v2/namespaces/default/crontabs"))
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(raw["items"][0]["apiVersion"], format!("{GROUP}/v2"));
    let seen = watched(v2.clone()).await;
    assert_eq!(api_version(&seen), format!("{GROUP}/v2"));
    // and through v1 as v1, as it is stored
    let own = v1.get("a").await.unwrap();
    assert_eq!(api_version(&own), format!("{GROUP}/v1"));
    assert_eq!(own.data["spec"], spec);
    // a patch through v2 answers and stores it in v2
    let patched = v2
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"migrated": "yes"}}})),
        )
        .await
        .unwrap();
    assert_eq!(api_version(&patched), format!("{GROUP}/v2"));
    // a label is not a change of spec: the generation stays
    assert_eq!(patched.metadata.generation, Some(1));
    // stored in v2 now, what v2 does not declare is gone through v1 too
    let migrated = v1.get("a").await.unwrap();
    assert_eq!(label(&migrated, "migrated").as_deref(), Some("yes"));
    assert_eq!(migrated.data["spec"], json!({}));
    // written through v1 now that v2 stores: stored pruned by v2's schema, answered so
    let b = v1
        .create(&PostParams::default(), &crontab("v1", "b", spec.clone()))
        .await
        .unwrap();
    assert_eq!(b.data["spec"], json!({}));
}

#[tokio::test]
async fn objects_of_an_earlier_storage_version_are_converted_by_the_webhook_when_read() {
    let w = webhook().await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    register(&c, &stored_in(crd(&w, "/convert"), "v1")).await;
    let (v1, v2) = (crontabs(&c, "v1"), crontabs(&c, "v2"));
    v1.create(
        &PostParams::default(),
        &crontab("v1", "a", json!({"cronSpec": "*/1 * * * *", "size": 1})),
    )
    .await
    .unwrap();
    let before = w.calls.load(Ordering::Relaxed);
    assert_eq!(before, 0, "written and stored in v1: nothing to convert");

    let stored = change_storage(&c, crd(&w, "/convert")).await;
    assert_eq!(stored, ["v1", "v2"]);
    let v2_spec = json!({"schedule": {"cron": "*/1 * * * *"}, "replicas": 1});
    // still stored in v1: every read through v2 asks the webhook
    let got = v2.get("a").await.unwrap();
    assert_eq!(got.data["spec"], v2_spec);
    assert_eq!(label(&got, "converted-from").as_deref(), Some("v1"));
    let listed = v2.list(&Default::default()).await.unwrap();
    assert_eq!(listed.items[0].data["spec"], v2_spec);
    assert_eq!(watched(v2.clone()).await.data["spec"], v2_spec);
    assert!(w.calls.load(Ordering::Relaxed) >= 3);
    // read through v1, its own version: as stored, no webhook
    let calls = w.calls.load(Ordering::Relaxed);
    assert_eq!(v1.get("a").await.unwrap().data["spec"]["size"], 1);
    assert_eq!(w.calls.load(Ordering::Relaxed), calls);

    // a patch through v2 is made over the converted object and stores it in v2
    let patched = v2
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.data["spec"],
        json!({"schedule": {"cron": "*/1 * * * *"}, "replicas": 3})
    );
    let calls = w.calls.load(Ordering::Relaxed);
    let again = v2.get("a").await.unwrap();
    assert_eq!(again.data["spec"]["replicas"], 3);
    assert_eq!(w.calls.load(Ordering::Relaxed), calls, "now stored in v2");
}
