//! An informer of a custom resource whose CRD's schema changes under it (an operator upgrade
//! adding a default): the server restarts the resource's watches and shows every stored object
//! through the new schema with its resourceVersion unchanged (as kube-apiserver does), so the
//! informer lists again, and its cache must hold the objects as listed even though their uid
//! and resourceVersion did not change (client-go's cache does; one that kept what it held by
//! uid and resourceVersion would show the old schema until each object is written again).
//! Handlers are not asserted: as in client-go, a relisted object whose resourceVersion did not
//! change is a resync, told only to handlers whose resync is due.
//! In both cache modes, in the queue mode under test.

use crate::queue_mode;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinformer::object::resource_version;
use kinformer::store::CacheMode;
use kinformer::{SharedInformerFactory, meta_namespace_key};
use kinformer_apiserver::ServerConfig;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const CRD: &str = "gadgets.example.com";
const OBJECTS: usize = 20;
/// Guards, not measures.
const LIMIT: Duration = Duration::from_secs(60);

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

fn gadgets() -> ApiResource {
    ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Gadget".into(),
        plural: "gadgets".into(),
    }
}

async fn a_schema_change_reaches_the_cache(mode: CacheMode) {
    let server = kinformer_apiserver::start(ServerConfig::default())
        .await
        .expect("server starts");
    let c = server.client();
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    crds.create(
        &PostParams::default(),
        &crd(json!({"size": {"type": "integer"}, "extra": {"type": "string"}})),
    )
    .await
    .unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(c.clone(), "default", &gadgets());
    for i in 0..OBJECTS {
        let g: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Gadget",
            "metadata": {"name": format!("g-{i:02}")},
            "spec": {"size": i, "extra": "x"}
        }))
        .unwrap();
        api.create(&PostParams::default(), &g).await.unwrap();
    }

    let factory = SharedInformerFactory::builder(c.clone())
        .defaults(queue_mode::config().cache_mode(mode))
        .build();
    let informer = factory.dynamic_informer(&gadgets(), true);
    factory.start();
    let deadline = CancellationToken::new();
    let d = deadline.clone();
    tokio::spawn(async move {
        tokio::time::sleep(LIMIT).await;
        d.cancel();
    });
    assert!(
        factory
            .wait_for_cache_sync(&deadline)
            .await
            .values()
            .all(|s| *s)
    );
    let cache = informer.indexer();
    let view = || -> BTreeMap<String, (String, Value)> {
        cache
            .list()
            .iter()
            .map(|o| {
                (
                    meta_namespace_key(o.as_ref()).unwrap(),
                    (
                        resource_version(o.as_ref()).to_owned(),
                        o.data["spec"].clone(),
                    ),
                )
            })
            .collect()
    };
    let before = view();
    assert_eq!(before.len(), OBJECTS);

    let mut live = crds.get(CRD).await.unwrap();
    live.spec =
        crd(json!({"size": {"type": "integer"}, "mode": {"type": "string", "default": "fast"}}))
            .spec;
    crds.replace(CRD, &PostParams::default(), &live)
        .await
        .unwrap();
    let shown = |i: usize| json!({"size": i, "mode": "fast"});
    let want: BTreeMap<String, (String, Value)> = before
        .iter()
        .enumerate()
        .map(|(i, (k, (rv, _)))| (k.clone(), (rv.clone(), shown(i))))
        .collect();
    let start = std::time::Instant::now();
    while view() != want && start.elapsed() < LIMIT {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        view(),
        want,
        "{mode:?}: the cache shows every object through the new schema, at the same version"
    );
    deadline.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_schema_change_reaches_a_full_cache() {
    a_schema_change_reaches_the_cache(CacheMode::Full).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_schema_change_reaches_a_lean_cache() {
    a_schema_change_reaches_the_cache(CacheMode::Lean).await;
}
