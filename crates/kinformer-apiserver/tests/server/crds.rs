//! CustomResourceDefinitions over the API, driven by kube-rs: creating a CRD serves its
//! resource (discovery, every verb, status and scale subresources, cluster scope, short names
//! and categories), its structural schema prunes, defaults and validates, and deleting it
//! removes its objects.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::Discovery;
use serde_json::{Value, json};

fn crd(scope: &str, plural: &str, kind: &str) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {
            "group": "example.com",
            "scope": scope,
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind,
                      "shortNames": ["wd"], "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas"}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "required": ["size"], "properties": {
                            "size": {"type": "integer"},
                            "replicas": {"type": "integer", "default": 1},
                            "color": {"type": "string", "default": "blue"}}},
                        "status": {"type": "object", "properties": {
                            "replicas": {"type": "integer"},
                            "ready": {"type": "boolean"}}}
                    }
                }}
            }]
        }
    }))
    .unwrap()
}

fn widget_resource(plural: &str, kind: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", kind), plural)
}

fn widget(kind: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": kind,
        "metadata": {"name": name}, "spec": spec
    }))
    .unwrap()
}

#[tokio::test]
async fn a_crd_serves_its_resource_with_schema_and_subresources() {
    let s = start(ServerConfig::default().tls(true)).await.unwrap();
    let c = s.client();
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    let created = crds
        .create(
            &PostParams::default(),
            &crd("Namespaced", "widgets", "Widget"),
        )
        .await
        .unwrap();
    let conditions = created.status.unwrap().conditions.unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    );

    // Discovery lists it, with its short names, categories and subresources.
    let discovery = Discovery::new(c.clone()).run().await.unwrap();
    let (ar, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(ar, _)| ar.plural == "widgets")
        .expect("widgets discovered");
    assert_eq!(ar.group, "example.com");
    assert!(
        caps.subresources
            .iter()
            .any(|(s, _)| s.plural == "widgets/status" || s.plural == "status")
    );
    let list: Value = serde_json::from_str(
        &c.request_text(
            http::Request::get("/apis/example.com/v1")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap(),
    )
    .unwrap();
    let entry = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "widgets")
        .unwrap();
    assert_eq!(entry["shortNames"], json!(["wd"]));
    assert_eq!(entry["categories"], json!(["all"]));

    let widgets: Api<DynamicObject> =
        Api::namespaced_with(c.clone(), "default", &widget_resource("widgets", "Widget"));
    let mut events = widgets
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    // Pruning and defaults.
    let w = widgets
        .create(
            &PostParams::default(),
            &widget("Widget", "w1", json!({"size": 3, "unknown": "dropped"})),
        )
        .await
        .unwrap();
    assert_eq!(
        w.data["spec"],
        json!({"size": 3, "replicas": 1, "color": "blue"})
    );
    assert_eq!(w.metadata.generation, Some(1));
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Added(o)) => assert_eq!(o.metadata.name.as_deref(), Some("w1")),
        other => panic!("expected ADDED, got {other:?}"),
    }
    // Types and required fields.
    let bad = widgets
        .create(
            &PostParams::default(),
            &widget("Widget", "w2", json!({"size": "big"})),
        )
        .await;
    match bad {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 422);
            assert!(
                e.message
                    .contains("spec.size in body must be of type integer"),
                "{}",
                e.message
            );
        }
        other => panic!("expected 422, got {other:?}"),
    }
    match widgets
        .create(&PostParams::default(), &widget("Widget", "w3", json!({})))
        .await
    {
        Err(kube::Error::Api(e)) => assert!(e.message.contains("spec.size: Required value")),
        other => panic!("expected 422, got {other:?}"),
    }

    // Merge patch, status and scale subresources.
    let p = widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 4}, "status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(p.data["spec"]["size"], 4);
    assert_eq!(
        p.data.get("status"),
        None,
        "status is written through /status only"
    );
    assert_eq!(p.metadata.generation, Some(2));
    let st = widgets
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true, "replicas": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(st.data["status"], json!({"ready": true, "replicas": 1}));
    assert_eq!(st.metadata.generation, Some(2));
    let scaled = widgets
        .patch_scale(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(3));
    assert_eq!(scaled.status.unwrap().replicas, 1);
    assert_eq!(widgets.get("w1").await.unwrap().data["spec"]["replicas"], 3);

    // Deleting the CRD removes its objects (watchers see DELETED) and the resource.
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    loop {
        match events.try_next().await.unwrap() {
            Some(WatchEvent::Deleted(o)) => {
                assert_eq!(o.metadata.name.as_deref(), Some("w1"));
                break;
            }
            Some(_) => continue,
            None => panic!("watch ended before DELETED"),
        }
    }
    match widgets.list(&ListParams::default()).await {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 404),
        other => panic!("expected 404 after the CRD is gone, got {other:?}"),
    }
    assert_eq!(
        s.state("widgets.example.com", None)
            .map(|_| ())
            .unwrap_err()
            .code,
        404
    );
    s.shutdown().await;
}

#[tokio::test]
async fn cluster_scoped_crds_and_invalid_definitions() {
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    crds.create(&PostParams::default(), &crd("Cluster", "gadgets", "Gadget"))
        .await
        .unwrap();
    let gadgets: Api<DynamicObject> =
        Api::all_with(c.clone(), &widget_resource("gadgets", "Gadget"));
    gadgets
        .create(
            &PostParams::default(),
            &widget("Gadget", "g", json!({"size": 1})),
        )
        .await
        .unwrap();
    let all = gadgets.list(&ListParams::default()).await.unwrap();
    assert_eq!(all.items.len(), 1);
    assert_eq!(all.items[0].metadata.namespace, None);

    let mut bad = crd("Namespaced", "things", "Thing");
    bad.metadata.name = Some("wrong.example.com".into());
    match crds.create(&PostParams::default(), &bad).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 422);
            assert!(e.message.contains("metadata.name"), "{}", e.message);
        }
        other => panic!("expected 422, got {other:?}"),
    }
    s.shutdown().await;
}

/// A custom resource with a status subresource is created without the status its body
/// carries, before it is validated, as kube-apiserver creates it: a Go client's
/// `"status":{"parents":null}` against a status schema that requires `parents` (Gateway API's
/// HTTPRoute) is created, not refused; a resource without the subresource keeps its status.
#[tokio::test]
async fn creating_a_custom_resource_drops_the_status_its_subresource_owns() {
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    for (plural, kind, subresources) in [
        ("routes", "Route", json!({"status": {}})),
        ("plains", "Plain", json!({})),
    ] {
        let mut def = crd("Namespaced", plural, kind);
        let mut v = serde_json::to_value(&def).unwrap();
        let version = &mut v["spec"]["versions"][0];
        version["subresources"] = subresources;
        version["schema"]["openAPIV3Schema"]["properties"]["status"] = json!({
            "type": "object", "required": ["parents"],
            "properties": {"parents": {"type": "array", "maxItems": 2,
                                       "items": {"type": "string"}}}});
        def = serde_json::from_value(v).unwrap();
        crds.create(&PostParams::default(), &def).await.unwrap();
    }
    let api = |plural: &str, kind: &str| -> Api<DynamicObject> {
        Api::namespaced_with(c.clone(), "default", &widget_resource(plural, kind))
    };
    let with_status = |kind: &str, name: &str, status: Value| {
        let mut o = widget(kind, name, json!({"size": 1}));
        o.data["status"] = status;
        o
    };
    let routes = api("routes", "Route");
    for (name, status) in [
        ("null-parents", json!({"parents": null})),
        ("too-many", json!({"parents": ["a", "b", "c"]})),
        ("fine", json!({"parents": ["a"]})),
    ] {
        let created = routes
            .create(&PostParams::default(), &with_status("Route", name, status))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(created.data.get("status"), None, "{name}");
        let read = routes.get(name).await.unwrap();
        assert_eq!(read.data.get("status"), None, "{name}");
    }
    // The status subresource still validates what it writes.
    let mut route = routes.get("fine").await.unwrap();
    route.data["status"] = json!({"parents": ["a", "b", "c"]});
    match routes
        .replace_status("fine", &PostParams::default(), &route)
        .await
    {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 422, "{}", e.message),
        other => panic!("expected 422, got {other:?}"),
    }

    let plains = api("plains", "Plain");
    let kept = plains
        .create(
            &PostParams::default(),
            &with_status("Plain", "p", json!({"parents": ["a"]})),
        )
        .await
        .unwrap();
    assert_eq!(kept.data["status"], json!({"parents": ["a"]}));
    match plains
        .create(
            &PostParams::default(),
            &with_status("Plain", "q", json!({"parents": null})),
        )
        .await
    {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 422, "{}", e.message),
        other => panic!("expected 422, got {other:?}"),
    }
    s.shutdown().await;
}

/// A CRD served in several versions (Gateway API's HTTPRoute: `v1` stored, `v1beta1` served)
/// serves each: objects are stored once, in the storage version, and read, listed, watched,
/// patched and written through any served version, shown in that version's `apiVersion` and
/// validated by that version's schema; a version with `served: false` is not served; the
/// group's preferred version is the highest by Kubernetes' version priority.
#[tokio::test]
async fn every_served_version_of_a_crd_is_served() {
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    let schema = |max: i64| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "integer", "maximum": max}}}}}})
    };
    let version = |name: &str, served: bool, storage: bool, max: i64| json!({"name": name, "served": served, "storage": storage, "schema": schema(max)});
    let def: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "routes.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "routes", "kind": "Route"},
                 "versions": [version("v1beta1", true, false, 5), version("v1alpha1", false, false, 9),
                              version("v1", true, true, 10)]}
    }))
    .unwrap();
    crds.create(&PostParams::default(), &def).await.unwrap();
    let at = |v: &str| -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk("example.com", v, "Route");
        Api::namespaced_with(
            c.clone(),
            "default",
            &ApiResource::from_gvk_with_plural(&gvk, "routes"),
        )
    };
    let (v1, beta) = (at("v1"), at("v1beta1"));
    let route = |v: &str, name: &str, size: i64| -> DynamicObject {
        serde_json::from_value(
            json!({"apiVersion": format!("example.com/{v}"), "kind": "Route",
                                      "metadata": {"name": name}, "spec": {"size": size}}),
        )
        .unwrap()
    };
    let mut events = beta
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let created = v1
        .create(&PostParams::default(), &route("v1", "a", 7))
        .await
        .unwrap();
    assert_eq!(created.types.unwrap().api_version, "example.com/v1");
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Added(o)) => {
            assert_eq!(o.types.unwrap().api_version, "example.com/v1beta1")
        }
        other => panic!("expected ADDED, got {other:?}"),
    }
    let read = beta.get("a").await.unwrap();
    assert_eq!(read.types.unwrap().api_version, "example.com/v1beta1");
    assert_eq!(read.data["spec"]["size"], 7);
    // written through v1beta1: its schema (maximum 5), stored once, shown in each version
    match beta
        .create(&PostParams::default(), &route("v1beta1", "b", 7))
        .await
    {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 422, "{}", e.message),
        other => panic!("expected 422, got {other:?}"),
    }
    beta.create(&PostParams::default(), &route("v1beta1", "b", 3))
        .await
        .unwrap();
    let listed = v1.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 2);
    for o in &listed.items {
        assert_eq!(o.types.as_ref().unwrap().api_version, "example.com/v1");
    }
    let patched = beta
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.types.unwrap().api_version, "example.com/v1beta1");
    assert_eq!(
        v1.get("a").await.unwrap().metadata.labels.unwrap()["x"],
        "y"
    );
    assert_eq!(
        beta.list(&ListParams::default()).await.unwrap().items[1]
            .types
            .as_ref()
            .unwrap()
            .api_version,
        "example.com/v1beta1"
    );
    match at("v1alpha1").get("a").await {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 404),
        other => panic!("expected 404, got {other:?}"),
    }
    let group: Value = serde_json::from_str(
        &c.request_text(
            http::Request::get("/apis/example.com")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap(),
    )
    .unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v1");
    assert_eq!(group["versions"][1]["version"], "v1beta1");
    assert_eq!(group["versions"].as_array().unwrap().len(), 2);
    s.shutdown().await;
}
