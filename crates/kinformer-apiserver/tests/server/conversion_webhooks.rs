//! CRD conversion webhooks as an operator author's tests meet them: a CustomResourceDefinition
//! with two versions (v1 served, v2 stored) converted by a webhook written the way kube-rs users
//! write one (axum over rustls, kube's `ConversionReview` types), registered by URL with its CA
//! bundle. The test cluster stores what is written through v1 as the webhook converts it to v2,
//! shows every read, list and watch through v1 as the webhook converts it back, and fails in
//! kube-apiserver 1.36's words (a 500 `Status`) when the webhook fails or answers wrongly.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube::core::response::Status;
use kube::runtime::watcher;
use serde_json::{Value, json};

pub(crate) const GROUP: &str = "stable.example.com";

/// The webhook: `/convert` converts CronTabs between v1 (`spec.cronSpec`, `spec.size`) and v2
/// (`spec.schedule.cron`, `spec.replicas`), labelling each `converted-from: <version>`; `/fail`
/// refuses; `/rename` answers with another name; `/undeclared` adds a field neither version
/// declares. Counts the reviews it answers.
async fn convert(
    State((calls, path)): State<(Arc<AtomicUsize>, &'static str)>,
    Json(review): Json<ConversionReview>,
) -> Json<ConversionReview> {
    calls.fetch_add(1, Ordering::Relaxed);
    let req = ConversionRequest::from_review(review).unwrap();
    if path == "/fail" {
        let status = Status::failure("cannot convert CronTabs today", "");
        return Json(
            ConversionResponse::for_request(req)
                .failure(status)
                .into_review(),
        );
    }
    let desired = req.desired_api_version.clone();
    let objects = req
        .objects
        .iter()
        .map(|o| {
            let mut c = convert_crontab(o, &desired);
            if path == "/rename" {
                c["metadata"]["name"] = json!("someone-else");
            }
            if path == "/undeclared" {
                c["spec"]["undeclared"] = json!(true);
            }
            c
        })
        .collect();
    Json(
        ConversionResponse::for_request(req)
            .success(objects)
            .into_review(),
    )
}

fn convert_crontab(o: &Value, desired: &str) -> Value {
    let from = o["apiVersion"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap();
    let mut c = o.clone();
    c["apiVersion"] = json!(desired);
    let spec = &o["spec"];
    c["spec"] = if desired.ends_with("/v2") {
        json!({"schedule": {"cron": spec["cronSpec"]}, "replicas": spec["size"]})
    } else {
        json!({"cronSpec": spec["schedule"]["cron"], "size": spec["replicas"]})
    };
    if c["metadata"]["labels"].is_null() {
        c["metadata"]["labels"] = json!({});
    }
    c["metadata"]["labels"]["converted-from"] = json!(from);
    c
}

pub(crate) struct Webhook {
    served: common::tls_server::Served,
    pub(crate) calls: Arc<AtomicUsize>,
}

pub(crate) async fn webhook() -> Webhook {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut router = axum::Router::new();
    for path in ["/convert", "/fail", "/rename", "/undeclared"] {
        router = router.route(path, post(convert).with_state((calls.clone(), path)));
    }
    Webhook {
        served: common::tls_server::serve(&[], router).await,
        calls,
    }
}

pub(crate) fn crd(w: &Webhook, path: &str) -> CustomResourceDefinition {
    let version = |name: &str, storage: bool, spec: Value| {
        json!({"name": name, "served": true, "storage": storage,
               "subresources": {"status": {}},
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "spec": spec,
                   "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}})
    };
    serde_json::from_value(json!({
        "metadata": {"name": format!("crontabs.{GROUP}")},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
            "versions": [
                version("v1", false, json!({"type": "object", "properties": {
                    "cronSpec": {"type": "string"}, "size": {"type": "integer"}}})),
                version("v2", true, json!({"type": "object", "properties": {
                    "schedule": {"type": "object", "properties": {"cron": {"type": "string"}}},
                    "replicas": {"type": "integer"}}})),
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": w.served.url(path), "caBundle": w.served.ca_bundle()},
                "conversionReviewVersions": ["v1"]}},
        }
    }))
    .unwrap()
}

pub(crate) fn crontabs(c: &kube::Client, version: &str) -> Api<DynamicObject> {
    let ar = ApiResource {
        group: GROUP.into(),
        version: version.into(),
        api_version: format!("{GROUP}/{version}"),
        kind: "CronTab".into(),
        plural: "crontabs".into(),
    };
    Api::namespaced_with(c.clone(), "default", &ar)
}

pub(crate) fn crontab(version: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": format!("{GROUP}/{version}"), "kind": "CronTab",
                                  "metadata": {"name": name}, "spec": spec}),
    )
    .unwrap()
}

pub(crate) fn label(o: &DynamicObject, k: &str) -> Option<String> {
    o.metadata.labels.as_ref()?.get(k).cloned()
}

pub(crate) async fn register(c: &kube::Client, crd: &CustomResourceDefinition) {
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    crds.create(&PostParams::default(), crd).await.unwrap();
}

fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn objects_are_stored_as_the_webhook_converts_them_and_read_back_through_each_version() {
    let w = webhook().await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    register(&c, &crd(&w, "/convert")).await;
    let (v1, v2) = (crontabs(&c, "v1"), crontabs(&c, "v2"));

    // written through v1: stored in v2 as the webhook made it, answered in v1 again
    let spec = json!({"cronSpec": "*/1 * * * *", "size": 1});
    let created = v1
        .create(&PostParams::default(), &crontab("v1", "a", spec.clone()))
        .await
        .unwrap();
    assert_eq!(created.data["spec"], spec);
    assert_eq!(label(&created, "converted-from").as_deref(), Some("v2"));
    let stored = v2.get("a").await.unwrap();
    assert_eq!(
        stored.data["spec"],
        json!({"schedule": {"cron": "*/1 * * * *"}, "replicas": 1})
    );
    // the label the webhook added on the way in is stored
    assert_eq!(label(&stored, "converted-from").as_deref(), Some("v1"));

    // written through v2, read through v1 (a GET, a LIST)
    v2.create(
        &PostParams::default(),
        &crontab(
            "v2",
            "b",
            json!({"schedule": {"cron": "*/2 * * * *"}, "replicas": 2}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        v1.get("b").await.unwrap().data["spec"],
        json!({"cronSpec": "*/2 * * * *", "size": 2})
    );
    let listed = v1.list(&Default::default()).await.unwrap();
    let specs: Vec<&Value> = listed.items.iter().map(|o| &o.data["spec"]).collect();
    assert_eq!(
        specs,
        [
            &json!({"cronSpec": "*/1 * * * *", "size": 1}),
            &json!({"cronSpec": "*/2 * * * *", "size": 2})
        ]
    );

    // a merge patch and an apply through v1 change the v1 fields of the v1 view
    let patched = v1
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.data["spec"],
        json!({"cronSpec": "*/1 * * * *", "size": 4})
    );
    assert_eq!(v2.get("a").await.unwrap().data["spec"]["replicas"], 4);
    let applied = v1
        .patch(
            "c",
            &PatchParams::apply("tests"),
            &Patch::Apply(crontab(
                "v1",
                "c",
                json!({"cronSpec": "*/3 * * * *", "size": 3}),
            )),
        )
        .await
        .unwrap();
    assert_eq!(applied.data["spec"]["size"], 3);
    assert_eq!(v2.get("c").await.unwrap().data["spec"]["replicas"], 3);

    // a patch that changes nothing answers with what is stored, unchanged
    let before = v2.get("a").await.unwrap();
    let same = v1
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(
        same.metadata.resource_version,
        before.metadata.resource_version
    );

    // the status subresource through v1 keeps the spec as it is
    let status = v1
        .patch_status(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["ready"], true);
    assert_eq!(status.data["spec"]["size"], 4);
    assert_eq!(status.metadata.generation, before.metadata.generation);

    // a dry run is converted as a write would be, and stores nothing
    let dry = v1
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &crontab("v1", "dry", json!({"cronSpec": "*/5 * * * *", "size": 5})),
        )
        .await
        .unwrap();
    assert_eq!(dry.data["spec"]["size"], 5);
    assert!(v1.get_opt("dry").await.unwrap().is_none());
    assert!(w.calls.load(Ordering::Relaxed) > 0);
}

#[tokio::test]
async fn a_watcher_of_the_converted_version_sees_every_object_in_that_version() {
    let w = webhook().await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    register(&c, &crd(&w, "/convert")).await;
    let (v1, v2) = (crontabs(&c, "v1"), crontabs(&c, "v2"));
    v2.create(
        &PostParams::default(),
        &crontab(
            "v2",
            "before",
            json!({"schedule": {"cron": "*/1 * * * *"}, "replicas": 1}),
        ),
    )
    .await
    .unwrap();
    let mut events = watcher(v1, watcher::Config::default()).boxed();
    let mut seen = Vec::new();
    while let Some(e) = events.next().await {
        match e.unwrap() {
            watcher::Event::InitApply(o) => seen.push(o),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].data["spec"],
        json!({"cronSpec": "*/1 * * * *", "size": 1})
    );
    v2.create(
        &PostParams::default(),
        &crontab(
            "v2",
            "after",
            json!({"schedule": {"cron": "*/2 * * * *"}, "replicas": 2}),
        ),
    )
    .await
    .unwrap();
    loop {
        let e = tokio::time::timeout(std::time::Duration::from_secs(10), events.next())
            .await
            .expect("an event within 10 s")
            .unwrap()
            .unwrap();
        if let watcher::Event::Apply(o) = e {
            assert_eq!(o.metadata.name.as_deref(), Some("after"));
            assert_eq!(
                o.data["spec"],
                json!({"cronSpec": "*/2 * * * *", "size": 2})
            );
            assert_eq!(label(&o, "converted-from").as_deref(), Some("v2"));
            break;
        }
    }
}

#[tokio::test]
async fn a_failing_webhook_fails_the_converted_version_in_kube_apiservers_words() {
    let w = webhook().await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    register(&c, &crd(&w, "/fail")).await;
    let (v1, v2) = (crontabs(&c, "v1"), crontabs(&c, "v2"));
    v2.create(
        &PostParams::default(),
        &crontab(
            "v2",
            "a",
            json!({"schedule": {"cron": "*/1 * * * *"}, "replicas": 1}),
        ),
    )
    .await
    .unwrap();
    let e = api_error(v1.get("a").await.unwrap_err());
    assert_eq!(e.code, 500);
    assert_eq!(
        e.message,
        format!(
            "conversion webhook for {GROUP}/v2, Kind=CronTab failed: cannot convert CronTabs today"
        )
    );
    assert_eq!(e.reason, "");
    let e = api_error(v1.list(&Default::default()).await.unwrap_err());
    assert_eq!(e.code, 500);
    let e = api_error(
        v1.create(
            &PostParams::default(),
            &crontab("v1", "b", json!({"cronSpec": "*/2 * * * *", "size": 2})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(
        e.message,
        format!(
            "conversion webhook for {GROUP}/v1, Kind=CronTab failed: cannot convert CronTabs today"
        )
    );
    // nothing stored; the storage version needs no conversion
    assert!(v2.get_opt("b").await.unwrap().is_none());
    assert_eq!(v2.get("a").await.unwrap().data["spec"]["replicas"], 1);
}

#[tokio::test]
async fn a_webhook_may_not_rename_what_it_converts() {
    let w = webhook().await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    register(&c, &crd(&w, "/rename")).await;
    let v1 = crontabs(&c, "v1");
    let e = api_error(
        v1.create(
            &PostParams::default(),
            &crontab("v1", "a", json!({"cronSpec": "*/1 * * * *", "size": 1})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 500);
    assert_eq!(
        e.message,
        format!(
            "conversion webhook for {GROUP}/v1, Kind=CronTab returned invalid object: must have the same name: a != someone-else"
        )
    );
}

#[tokio::test]
async fn what_the_webhook_adds_that_the_version_does_not_declare_is_pruned() {
    let w = webhook().await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    register(&c, &crd(&w, "/undeclared")).await;
    let (v1, v2) = (crontabs(&c, "v1"), crontabs(&c, "v2"));
    // converted to v2 to be stored, and back to v1 for the answer: pruned both times
    let created = v1
        .create(
            &PostParams::default(),
            &crontab("v1", "a", json!({"cronSpec": "*/1 * * * *", "size": 1})),
        )
        .await
        .unwrap();
    assert_eq!(
        created.data["spec"],
        json!({"cronSpec": "*/1 * * * *", "size": 1})
    );
    assert_eq!(
        v2.get("a").await.unwrap().data["spec"],
        json!({"schedule": {"cron": "*/1 * * * *"}, "replicas": 1})
    );
    assert_eq!(
        v1.get("a").await.unwrap().data["spec"],
        json!({"cronSpec": "*/1 * * * *", "size": 1})
    );
}
