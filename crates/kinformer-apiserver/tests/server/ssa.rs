//! Server-side apply over HTTP: field managers, conflicts (409 with kube-apiserver's Status),
//! `force`, shared ownership, removal of fields an applier stops applying, apply creating the
//! object, `/status` applies, a CRD's keyed list, and kube-rs's `Patch::Apply`.

use crate::common;

use common::{Resp, request};
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

const APPLY: &str = "application/apply-patch+yaml";
const CM: &str = "/api/v1/namespaces/default/configmaps/c";

async fn apply(a: std::net::SocketAddr, path: &str, query: &str, body: &Value) -> Resp {
    let p = format!("{path}?{query}");
    request(a, "PATCH", &p, Some(APPLY), body.to_string().as_bytes()).await
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data})
}

/// `(manager, operation, fieldsV1)` of each entry.
fn managed(obj: &Value) -> Vec<(String, String, Value)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or("").to_string(),
                e["operation"].as_str().unwrap_or("").to_string(),
                e["fieldsV1"].clone(),
            )
        })
        .collect()
}

fn m(manager: &str, op: &str, fields: Value) -> (String, String, Value) {
    (manager.into(), op.into(), fields)
}

#[tokio::test]
async fn two_managers_share_conflict_and_force() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let r = apply(a, CM, "fieldManager=alice", &cm(json!({"k": "1"}))).await;
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    let created = r.json();
    assert_eq!(
        managed(&created),
        vec![m("alice", "Apply", json!({"f:data": {"f:k": {}}}))]
    );
    assert!(created["metadata"]["managedFields"][0]["time"].is_string());
    assert_eq!(created["metadata"]["managedFields"][0]["apiVersion"], "v1");
    assert_eq!(
        created["metadata"]["managedFields"][0]["fieldsType"],
        "FieldsV1"
    );
    // Same value from bob: shared, no conflict, and the object does not change.
    let r = apply(a, CM, "fieldManager=bob", &cm(json!({"k": "1"}))).await;
    assert_eq!(r.code, 200);
    let shared = r.json();
    assert_eq!(shared["data"], json!({"k": "1"}));
    // The object did not change, so bob's new entry has no time (kube-apiserver's
    // managedFieldsUpdater stamps an applier only when the object changes) and sorts first.
    assert_eq!(
        managed(&shared),
        vec![
            m("bob", "Apply", json!({"f:data": {"f:k": {}}})),
            m("alice", "Apply", json!({"f:data": {"f:k": {}}})),
        ]
    );
    assert!(shared["metadata"]["managedFields"][0].get("time").is_none());
    // A different value from bob: 409 naming alice.
    let r = apply(a, CM, "fieldManager=bob", &cm(json!({"k": "2"}))).await;
    assert_eq!(r.code, 409);
    assert_eq!(
        r.json(),
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Apply failed with 1 conflict: conflict with \"alice\": .data.k",
            "reason": "Conflict",
            "details": {"causes": [{"reason": "FieldManagerConflict",
                                    "message": "conflict with \"alice\"", "field": ".data.k"}]},
            "code": 409
        })
    );
    // Nothing was written.
    let now = common::get(a, CM).await.json();
    assert_eq!(
        now["metadata"]["resourceVersion"],
        shared["metadata"]["resourceVersion"]
    );
    // Forced: bob takes the field, alice's entry (now empty) goes.
    let r = apply(a, CM, "fieldManager=bob&force=true", &cm(json!({"k": "2"}))).await;
    assert_eq!(r.code, 200);
    let forced = r.json();
    assert_eq!(forced["data"], json!({"k": "2"}));
    assert_eq!(
        managed(&forced),
        vec![m("bob", "Apply", json!({"f:data": {"f:k": {}}}))]
    );
}

#[tokio::test]
async fn updates_conflict_with_appliers_by_version_and_take_fields() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    apply(
        a,
        CM,
        "fieldManager=alice",
        &cm(json!({"a": "1", "b": "1"})),
    )
    .await;
    // A merge patch by another manager takes `b` (Update operations never conflict).
    let r = request(
        a,
        "PATCH",
        &format!("{CM}?fieldManager=editor"),
        Some("application/merge-patch+json"),
        br#"{"data": {"b": "2"}}"#,
    )
    .await;
    assert_eq!(r.code, 200);
    assert_eq!(
        managed(&r.json()),
        vec![
            m("alice", "Apply", json!({"f:data": {"f:a": {}}})),
            m("editor", "Update", json!({"f:data": {"f:b": {}}})),
        ]
    );
    let r = apply(
        a,
        CM,
        "fieldManager=alice",
        &cm(json!({"a": "1", "b": "3"})),
    )
    .await;
    assert_eq!(r.code, 409);
    let st = r.json();
    assert_eq!(
        st["message"],
        "Apply failed with 1 conflict: conflict with \"editor\" using v1: .data.b"
    );
    assert_eq!(
        st["details"]["causes"][0]["message"],
        "conflict with \"editor\" using v1"
    );
}

#[tokio::test]
async fn fields_an_applier_stops_applying_are_removed_unless_owned() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let q = "fieldManager=alice";
    apply(a, CM, q, &cm(json!({"x": "1", "y": "1", "z": "1"}))).await;
    apply(a, CM, "fieldManager=bob", &cm(json!({"y": "1"}))).await;
    let r = apply(a, CM, q, &cm(json!({"x": "1"}))).await;
    assert_eq!(r.code, 200);
    let o = r.json();
    // z was alice's alone: gone; y is still bob's.
    assert_eq!(o["data"], json!({"x": "1", "y": "1"}));
    // bob's apply changed nothing (no time): its entry sorts first.
    assert_eq!(
        managed(&o),
        vec![
            m("bob", "Apply", json!({"f:data": {"f:y": {}}})),
            m("alice", "Apply", json!({"f:data": {"f:x": {}}})),
        ]
    );
}

#[tokio::test]
async fn patch_options_and_bodies_are_checked() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let r = apply(a, CM, "", &cm(json!({"k": "1"}))).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.json()["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    assert_eq!(r.json()["details"]["kind"], "PatchOptions");
    let r = request(
        a,
        "PATCH",
        &format!("{CM}?force=true"),
        Some("application/merge-patch+json"),
        b"{}",
    )
    .await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.json()["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
    let mut with_mf = cm(json!({"k": "1"}));
    with_mf["metadata"]["managedFields"] = json!([]);
    let r = apply(a, CM, "fieldManager=x", &with_mf).await;
    assert_eq!(
        (r.code, r.json()["message"].clone()),
        (400, json!("metadata.managedFields must be nil"))
    );
    let r = apply(
        a,
        CM,
        "fieldManager=x",
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}}),
    )
    .await;
    assert_eq!(
        (r.code, r.json()["message"].clone()),
        (400, json!("invalid object type: /v1, Kind=Secret"))
    );
    let r = apply(a, CM, "fieldManager=x", &json!({"metadata": {"name": "c"}})).await;
    assert_eq!(r.json()["message"], "invalid object type: /, Kind=");
    // Nothing was created by the refused applies.
    assert_eq!(common::get(a, CM).await.code, 404);
}

#[tokio::test]
async fn status_applies_own_status_only() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let path = "/api/v1/namespaces/default/pods/p";
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let r = apply(a, path, "fieldManager=me", &pod).await;
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    let status = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                        "status": {"phase": "Running"}});
    let r = apply(
        a,
        &format!("{path}/status"),
        "fieldManager=kubelet",
        &status,
    )
    .await;
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.body));
    let o = r.json();
    assert_eq!(o["status"]["phase"], "Running");
    let entries = o["metadata"]["managedFields"].as_array().unwrap().clone();
    let kubelet = entries.iter().find(|e| e["manager"] == "kubelet").unwrap();
    assert_eq!(kubelet["operation"], "Apply");
    assert_eq!(kubelet["subresource"], "status");
    assert_eq!(kubelet["fieldsV1"], json!({"f:status": {"f:phase": {}}}));
    let me = entries.iter().find(|e| e["manager"] == "me").unwrap();
    assert_eq!(
        me["fieldsV1"],
        json!({"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}})
    );
}

#[tokio::test]
async fn crd_keyed_lists_merge_per_item() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                         "spec": {"type": "object", "properties": {
                             "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                       "x-kubernetes-list-map-keys": ["name"],
                                       "items": {"type": "object", "properties": {
                                           "name": {"type": "string"},
                                           "port": {"type": "integer"}}}}}}}}}}]}
    });
    let r = common::post(
        a,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    let path = "/apis/example.com/v1/namespaces/default/widgets/w";
    let w = |ports: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
               "spec": {"ports": ports}})
    };
    let mut code = 0;
    for _ in 0..50 {
        code = apply(
            a,
            path,
            "fieldManager=a",
            &w(json!([{"name": "http", "port": 80}])),
        )
        .await
        .code;
        if code != 404 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(code, 201);
    let r = apply(
        a,
        path,
        "fieldManager=b",
        &w(json!([{"name": "metrics", "port": 9090}])),
    )
    .await;
    assert_eq!(r.code, 200);
    let o = r.json();
    assert_eq!(
        o["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}])
    );
    assert_eq!(
        managed(&o)[1],
        m(
            "b",
            "Apply",
            json!({"f:spec": {"f:ports": {"k:{\"name\":\"metrics\"}": {
            ".": {}, "f:name": {}, "f:port": {}}}}})
        )
    );
    let r = apply(
        a,
        path,
        "fieldManager=b",
        &w(json!([{"name": "http", "port": 81}])),
    )
    .await;
    assert_eq!(r.code, 409);
    assert_eq!(
        r.json()["details"]["causes"][0],
        json!({"reason": "FieldManagerConflict", "message": "conflict with \"a\"",
               "field": ".spec.ports[name=\"http\"].port"})
    );
}

#[tokio::test]
async fn kube_rs_patch_apply() {
    let s = start(ServerConfig::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let body = |v: &str| cm(json!({"k": v}));
    let created = api
        .patch("c", &PatchParams::apply("one"), &Patch::Apply(body("1")))
        .await
        .unwrap();
    let mf = created.metadata.managed_fields.unwrap();
    assert_eq!(mf.len(), 1);
    assert_eq!(mf[0].manager.as_deref(), Some("one"));
    assert_eq!(mf[0].operation.as_deref(), Some("Apply"));
    let err = api
        .patch("c", &PatchParams::apply("two"), &Patch::Apply(body("2")))
        .await
        .unwrap_err();
    let kube::Error::Api(st) = err else {
        panic!("expected an API error")
    };
    assert_eq!((st.code, st.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        st.message,
        "Apply failed with 1 conflict: conflict with \"one\": .data.k"
    );
    let forced = api
        .patch(
            "c",
            &PatchParams::apply("two").force(),
            &Patch::Apply(body("2")),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["k"], "2");
    let mf = forced.metadata.managed_fields.unwrap();
    assert_eq!(mf.len(), 1);
    assert_eq!(mf[0].manager.as_deref(), Some("two"));
}

#[tokio::test]
async fn a_scale_write_takes_the_replicas_from_the_applier() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let path = "/apis/apps/v1/namespaces/default/deployments/web";
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let r = apply(a, path, "fieldManager=me", &deploy).await;
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    let r = request(
        a,
        "PATCH",
        &format!("{path}/scale?fieldManager=scaler"),
        Some("application/merge-patch+json"),
        br#"{"spec": {"replicas": 3}}"#,
    )
    .await;
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.body));
    let o = common::get(a, path).await.json();
    assert_eq!(o["spec"]["replicas"], 3);
    let entries = o["metadata"]["managedFields"].as_array().unwrap().clone();
    let scaler = entries.iter().find(|e| e["manager"] == "scaler").unwrap();
    assert_eq!(scaler["operation"], "Update");
    assert_eq!(scaler["subresource"], "scale");
    assert_eq!(scaler["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    let me = entries.iter().find(|e| e["manager"] == "me").unwrap();
    assert!(me["fieldsV1"]["f:spec"].get("f:replicas").is_none(), "{me}");
    // The applier now conflicts on the replicas with the scaler.
    let r = apply(a, path, "fieldManager=me", &deploy).await;
    assert_eq!(r.code, 409);
    assert_eq!(
        r.json()["message"],
        "Apply failed with 1 conflict: conflict with \"scaler\" with subresource \"scale\" using apps/v1: .spec.replicas"
    );
}

#[tokio::test]
async fn yaml_bodies_apply_like_json() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: \"1\"\n  other: text\n";
    let r = request(
        a,
        "PATCH",
        &format!("{CM}?fieldManager=y"),
        Some(APPLY),
        yaml,
    )
    .await;
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    let o = r.json();
    assert_eq!(o["data"], json!({"k": "1", "other": "text"}));
    assert_eq!(
        managed(&o),
        vec![m(
            "y",
            "Apply",
            json!({"f:data": {"f:k": {}, "f:other": {}}})
        )]
    );
    let r = request(
        a,
        "PATCH",
        &format!("{CM}?fieldManager=y"),
        Some(APPLY),
        b"a: [unclosed",
    )
    .await;
    assert_eq!(r.code, 400);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("error decoding patch: ")
    );
}
