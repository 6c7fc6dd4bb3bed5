//! kube-rs's typed and dynamic clients against the server (`start()` + `client()`).

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kinformer_apiserver::{ResourceInfo, Scope, ServerConfig, seed, start};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::json;

fn api_err(e: kube::Error) -> (u16, String, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(seed::configmap("default", name, 2)).unwrap()
}

#[tokio::test]
async fn typed_crud_and_errors() {
    let s = start(ServerConfig::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let created = api.create(&PostParams::default(), &cm("a")).await.unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    let (code, reason, msg) = api_err(
        api.create(&PostParams::default(), &cm("a"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (code, reason.as_str(), msg.as_str()),
        (409, "AlreadyExists", "configmaps \"a\" already exists")
    );
    let mut changed = created.clone();
    changed
        .data
        .as_mut()
        .unwrap()
        .insert("new".into(), "v".into());
    let replaced = api
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_ne!(
        replaced.metadata.resource_version,
        created.metadata.resource_version
    );
    let (code, reason, _) = api_err(
        api.replace("a", &PostParams::default(), &changed)
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"p": "1"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.labels.unwrap()["p"], "1");
    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"s": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["s"], "1");
    let applied = api
        .patch("b", &PatchParams::apply("test"), &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"x": "y"}})))
        .await
        .unwrap();
    assert_eq!(applied.data.unwrap()["x"], "y");
    assert_eq!(
        api.get("a").await.unwrap().metadata.resource_version,
        api.get("a").await.unwrap().metadata.resource_version
    );
    let (code, reason, msg) = api_err(api.get("zzz").await.unwrap_err());
    assert_eq!(
        (code, reason.as_str(), msg.as_str()),
        (404, "NotFound", "configmaps \"zzz\" not found")
    );
    assert!(api.get_opt("zzz").await.unwrap().is_none());
    // ConfigMap deletion answers a Status; kube-rs exposes it as Right.
    let d = api.delete("a", &DeleteParams::default()).await.unwrap();
    assert!(d.is_right());
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(seed::pod("default", "p", 0)).unwrap(),
    )
    .await
    .unwrap();
    assert!(
        pods.delete("p", &DeleteParams::default())
            .await
            .unwrap()
            .is_left(),
        "pod deletion answers the pod"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn typed_list_pagination_and_watch() {
    let s = start(ServerConfig::default()).await.unwrap();
    s.seed_pods(7, 1).unwrap();
    let api: Api<Pod> = Api::namespaced(s.client(), "default");
    let p1 = api.list(&ListParams::default().limit(3)).await.unwrap();
    assert_eq!(p1.items.len(), 3);
    assert_eq!(p1.metadata.remaining_item_count, Some(4));
    let p2 = api
        .list(
            &ListParams::default()
                .limit(5)
                .continue_token(p1.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(p2.items.len(), 4);
    assert!(p2.metadata.continue_.is_none());
    let all = api
        .list(&ListParams::default().labels("tier=frontend"))
        .await
        .unwrap();
    assert_eq!(all.items.len(), 3, "pods 0, 3, 6");
    let rv = all.metadata.resource_version.unwrap();
    let mut stream = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    api.delete("pod-000001", &DeleteParams::default())
        .await
        .unwrap();
    match stream.try_next().await.unwrap().unwrap() {
        WatchEvent::Deleted(p) => assert_eq!(p.metadata.name.as_deref(), Some("pod-000001")),
        other => panic!("expected a deletion, got {other:?}"),
    }
    s.shutdown().await;
}

#[tokio::test]
async fn deployments_and_status_subresource_through_kube() {
    let s = start(ServerConfig::default()).await.unwrap();
    let api: Api<Deployment> = Api::namespaced(s.client(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "d"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &d).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let st = api
        .patch_status(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"readyReplicas": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(st.status.unwrap().ready_replicas, Some(1));
    assert_eq!(st.metadata.generation, Some(1));
    let scaled = api
        .patch(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(scaled.metadata.generation, Some(2));
    s.shutdown().await;
}

#[tokio::test]
async fn custom_resources_registered_at_run_time() {
    let s = start(ServerConfig::default()).await.unwrap();
    s.register(ResourceInfo::new(
        "example.com",
        "v1",
        "Widget",
        "widgets",
        Scope::Namespaced,
    ));
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let api: Api<DynamicObject> = Api::namespaced_with(s.client(), "default", &ar);
    let w: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3}})).unwrap();
    let created = api.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(created.data["spec"]["size"], 3);
    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.types.kind, "WidgetList");
    // Discovery lists the new group.
    let groups = s.client().list_api_groups().await.unwrap();
    assert!(groups.groups.iter().any(|g| g.name == "example.com"));
    let (code, _, msg) = api_err(api.get("nope").await.unwrap_err());
    assert_eq!(
        (code, msg.as_str()),
        (404, "widgets.example.com \"nope\" not found")
    );
    // Cluster-scoped custom resources too.
    s.register(ResourceInfo::new(
        "example.com",
        "v1",
        "Gadget",
        "gadgets",
        Scope::Cluster,
    ));
    let gar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    );
    let gapi: Api<DynamicObject> = Api::all_with(s.client(), &gar);
    let g: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}),
    )
    .unwrap();
    gapi.create(&PostParams::default(), &g).await.unwrap();
    assert_eq!(
        s.state("gadgets.example.com", None).unwrap().objects.len(),
        1
    );
    s.shutdown().await;
}

#[tokio::test]
async fn direct_access_matches_http_and_state_is_exact() {
    let s = start(ServerConfig::default()).await.unwrap();
    let created = s.create(&cm("direct")).unwrap();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let via_http = api.get("direct").await.unwrap();
    assert_eq!(via_http, created);
    let mut upd = created.clone();
    upd.data = Some([("k".to_string(), "v".to_string())].into());
    let updated = s.update(&upd).unwrap();
    assert_ne!(
        updated.metadata.resource_version,
        created.metadata.resource_version
    );
    let stale = s.update(&upd).unwrap_err();
    assert_eq!(stale.code, 409);
    let got: ConfigMap = s.get(Some("default"), "direct").unwrap();
    assert_eq!(got, updated);
    let state = s.state("configmaps", Some("default")).unwrap();
    assert_eq!(state.resource_version, s.revision());
    assert_eq!(state.objects.len(), 1);
    assert_eq!(
        Some(state.objects[0].resource_version.clone()),
        updated.metadata.resource_version
    );
    s.delete::<ConfigMap>(Some("default"), "direct").unwrap();
    assert!(s.state("configmaps", None).unwrap().objects.is_empty());
    assert_eq!(
        s.get::<ConfigMap>(Some("default"), "direct")
            .unwrap_err()
            .code,
        404
    );
    assert_eq!(s.state("nonsense", None).unwrap_err().code, 404);
    // Kubeconfig.
    let dir = std::env::temp_dir().join(format!("kinformer-kc-{}", std::process::id()));
    s.write_kubeconfig(&dir).unwrap();
    let text = std::fs::read_to_string(&dir).unwrap();
    assert!(text.contains(&s.base_url()));
    let _ = std::fs::remove_file(&dir);
    s.shutdown().await;
}

/// A field the kind does not declare is dropped, as on a real cluster (it used to be stored and
/// read back), and a patch under `fieldValidation=Strict` naming one is refused.
#[tokio::test]
async fn unknown_fields_are_dropped_or_refused() {
    let s = start(ServerConfig::default()).await.unwrap();
    let gvk = GroupVersionKind::gvk("", "v1", "ConfigMap");
    let dynamic: Api<DynamicObject> =
        Api::namespaced_with(s.client(), "default", &ApiResource::from_gvk(&gvk));
    let typo: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "typo", "labelz": {"a": "b"}},
        "data": {"a": "1"}, "dataa": {"b": "2"}
    }))
    .unwrap();
    let created = dynamic.create(&PostParams::default(), &typo).await.unwrap();
    assert_eq!(created.data, json!({"data": {"a": "1"}}));
    let read = dynamic.get("typo").await.unwrap();
    assert_eq!(
        read.data,
        json!({"data": {"a": "1"}}),
        "nothing undeclared stored"
    );
    let strict = PatchParams {
        field_validation: Some(kube::api::ValidationDirective::Strict),
        ..PatchParams::default()
    };
    let (code, reason, msg) = api_err(
        dynamic
            .patch("typo", &strict, &Patch::Merge(json!({"dataa": {"c": "3"}})))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert!(
        msg.ends_with("strict decoding error: unknown field \"dataa\""),
        "{msg}"
    );
    // without Strict the patch goes through, the field dropped
    let patched = dynamic
        .patch(
            "typo",
            &PatchParams::default(),
            &Patch::Merge(json!({"dataa": {"c": "3"}, "data": {"b": "2"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data, json!({"data": {"a": "1", "b": "2"}}));
}
