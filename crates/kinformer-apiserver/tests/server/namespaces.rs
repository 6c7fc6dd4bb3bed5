//! Namespace lifecycle over HTTP: NamespaceLifecycle admission (404 for a missing namespace,
//! 403 while terminating, immortal namespaces), the `Terminating` phase with the `kubernetes`
//! finalizer, the namespace controller deleting the content (custom resources included) and
//! reporting what finalizers hold back, `/finalize`.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use kinformer_apiserver::{ServerConfig, start};
use serde_json::{Value, json};

async fn delete(addr: SocketAddr, path: &str) -> Resp {
    request(addr, "DELETE", path, None, b"").await
}

fn ns(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

fn cm(name: &str, finalizers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "finalizers": finalizers}})
}

fn enforcing() -> ServerConfig {
    ServerConfig::default().enforce_namespaces(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creating_in_a_missing_namespace_is_not_found() {
    let server = start(enforcing()).await.unwrap();
    let addr = server.addr();
    let r = post(
        addr,
        "/api/v1/namespaces/nowhere/configmaps",
        &cm("c", json!([])),
    )
    .await;
    assert_eq!(r.code, 404);
    assert_eq!(
        r.json(),
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "namespaces \"nowhere\" not found", "reason": "NotFound",
            "details": {"name": "nowhere", "kind": "namespaces"}, "code": 404
        })
    );
    // Server-side apply creating an object is a create too.
    let r = request(
        addr,
        "PATCH",
        "/api/v1/namespaces/nowhere/configmaps/c?fieldManager=t",
        Some("application/apply-patch+yaml"),
        cm("c", json!([])).to_string().as_bytes(),
    )
    .await;
    assert_eq!(r.code, 404);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_created_namespace_is_active_with_the_kubernetes_finalizer() {
    let server = start(enforcing()).await.unwrap();
    let addr = server.addr();
    let r = post(addr, "/api/v1/namespaces", &ns("fresh")).await;
    assert_eq!(r.code, 201);
    let v = r.json();
    assert_eq!(v["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(v["status"], json!({"phase": "Active"}));
    assert_eq!(
        v["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "fresh"
    );
    // A main-resource update cannot drop it.
    let mut b = v.clone();
    b["spec"] = json!({});
    let r = put(addr, "/api/v1/namespaces/fresh", &b).await;
    assert_eq!(r.code, 200);
    assert_eq!(r.json()["spec"], json!({"finalizers": ["kubernetes"]}));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn immortal_namespaces_cannot_be_deleted() {
    let server = start(enforcing()).await.unwrap();
    let addr = server.addr();
    for name in ["default", "kube-system", "kube-public"] {
        let r = delete(addr, &format!("/api/v1/namespaces/{name}")).await;
        assert_eq!(r.code, 403);
        assert_eq!(
            r.json(),
            json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted"),
                "reason": "Forbidden", "details": {"name": name, "kind": "namespaces"}, "code": 403
            })
        );
    }
    assert_eq!(
        get(addr, "/api/v1/namespaces/default").await.json()["status"]["phase"],
        "Active"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_with_finalized_content_terminates_until_the_finalizer_goes() {
    let server = start(enforcing()).await.unwrap();
    let addr = server.addr();
    assert_eq!(
        post(addr, "/api/v1/namespaces", &ns("doomed")).await.code,
        201
    );
    let cms = "/api/v1/namespaces/doomed/configmaps";
    assert_eq!(
        post(addr, cms, &cm("held", json!(["example.com/hold"])))
            .await
            .code,
        201
    );
    assert_eq!(post(addr, cms, &cm("free", json!([]))).await.code, 201);
    assert_eq!(
        post(
            addr,
            "/api/v1/namespaces/doomed/secrets",
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
        )
        .await
        .code,
        201
    );

    let r = delete(addr, "/api/v1/namespaces/doomed").await;
    assert_eq!(r.code, 200);
    let v = r.json();
    assert_eq!(v["kind"], "Namespace");
    assert_eq!(v["status"]["phase"], "Terminating");
    assert!(v["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(v["spec"]["finalizers"], json!(["kubernetes"]));

    // Nothing new may be created in it.
    let r = post(addr, cms, &cm("late", json!([]))).await;
    assert_eq!(r.code, 403);
    assert_eq!(
        r.json(),
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "configmaps \"late\" is forbidden: unable to create new content in namespace doomed because it is being terminated",
            "reason": "Forbidden",
            "details": {"name": "late", "kind": "configmaps", "causes": [{
                "reason": "NamespaceTerminating", "message": "namespace doomed is being terminated",
                "field": "metadata.namespace"}]},
            "code": 403
        })
    );

    // The controller deletes what it can and reports what the finalizer holds back.
    let v = eventually(addr, "/api/v1/namespaces/doomed", "conditions", |_, v| {
        v["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.len() == 5)
    })
    .await;
    let conds: Vec<(String, String, String, String)> = v["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap().into(),
                c["status"].as_str().unwrap().into(),
                c["reason"].as_str().unwrap().into(),
                c["message"].as_str().unwrap().into(),
            )
        })
        .collect();
    let expect = |t: &str, s: &str, r: &str, m: &str| {
        (t.to_string(), s.to_string(), r.to_string(), m.to_string())
    };
    assert_eq!(
        conds,
        vec![
            expect(
                "NamespaceDeletionDiscoveryFailure",
                "False",
                "ResourcesDiscovered",
                "All resources successfully discovered"
            ),
            expect(
                "NamespaceDeletionGroupVersionParsingFailure",
                "False",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed"
            ),
            expect(
                "NamespaceDeletionContentFailure",
                "False",
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization"
            ),
            expect(
                "NamespaceContentRemaining",
                "True",
                "SomeResourcesRemain",
                "Some resources are remaining: configmaps. has 1 resource instances"
            ),
            expect(
                "NamespaceFinalizersRemaining",
                "True",
                "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
            ),
        ]
    );
    assert_eq!(get(addr, &format!("{cms}/free")).await.code, 404);
    assert_eq!(
        get(addr, "/api/v1/namespaces/doomed/secrets/s").await.code,
        404
    );
    let held = get(addr, &format!("{cms}/held")).await.json();
    assert!(held["metadata"]["deletionTimestamp"].is_string());

    // Removing the finalizer lets everything go.
    let r = request(
        addr,
        "PATCH",
        &format!("{cms}/held"),
        Some("application/merge-patch+json"),
        br#"{"metadata":{"finalizers":null}}"#,
    )
    .await;
    assert_eq!(r.code, 200);
    eventually(
        addr,
        "/api/v1/namespaces/doomed",
        "namespace gone",
        |c, _| c == 404,
    )
    .await;
    // And it can be created again, fresh.
    let r = post(addr, "/api/v1/namespaces", &ns("doomed")).await;
    assert_eq!(r.code, 201);
    assert_eq!(r.json()["status"]["phase"], "Active");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_in_a_deleted_namespace_are_deleted() {
    let server = start(enforcing()).await.unwrap();
    let addr = server.addr();
    let r = post(addr, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    })).await;
    assert_eq!(r.code, 201);
    assert_eq!(
        post(addr, "/api/v1/namespaces", &ns("gadgets")).await.code,
        201
    );
    let path = "/apis/example.com/v1/namespaces/gadgets/gadgets";
    let r = post(
        addr,
        path,
        &json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}),
    )
    .await;
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(delete(addr, "/api/v1/namespaces/gadgets").await.code, 200);
    eventually(
        addr,
        "/api/v1/namespaces/gadgets",
        "namespace gone",
        |c, _| c == 404,
    )
    .await;
    assert_eq!(get(addr, &format!("{path}/g")).await.code, 404);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_controller_finalize_removes_the_namespace() {
    let server = start(enforcing().namespace_controller(false))
        .await
        .unwrap();
    let addr = server.addr();
    assert_eq!(
        post(addr, "/api/v1/namespaces", &ns("manual")).await.code,
        201
    );
    assert_eq!(
        post(
            addr,
            "/api/v1/namespaces/manual/configmaps",
            &cm("c", json!([]))
        )
        .await
        .code,
        201
    );
    let v = delete(addr, "/api/v1/namespaces/manual").await.json();
    assert_eq!(v["status"]["phase"], "Terminating");
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Nothing acts: the content stays, the namespace stays; a second delete changes nothing.
    assert_eq!(
        get(addr, "/api/v1/namespaces/manual/configmaps/c")
            .await
            .code,
        200
    );
    assert_eq!(delete(addr, "/api/v1/namespaces/manual").await.code, 200);
    assert_eq!(get(addr, "/api/v1/namespaces/manual").await.code, 200);
    // /finalize takes PUT only.
    let r = request(
        addr,
        "PATCH",
        "/api/v1/namespaces/manual/finalize",
        Some("application/merge-patch+json"),
        b"{}",
    )
    .await;
    assert_eq!(r.code, 405);
    let mut body = get(addr, "/api/v1/namespaces/manual").await.json();
    body["spec"]["finalizers"] = json!([]);
    let r = put(addr, "/api/v1/namespaces/manual/finalize", &body).await;
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(get(addr, "/api/v1/namespaces/manual").await.code, 404);
    server.shutdown().await;
}

/// kube-controller-manager's service account controller, inside the server: the system
/// namespaces have their `default` ServiceAccount when `start` returns, a new namespace gets
/// one, a deleted one comes back, and a token can be asked for it (`kubectl create token
/// default`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_namespace_has_a_default_service_account() {
    let s = start(enforcing()).await.unwrap();
    let a = s.addr();
    for system in ["default", "kube-system", "kube-public"] {
        let r = get(
            a,
            &format!("/api/v1/namespaces/{system}/serviceaccounts/default"),
        )
        .await;
        assert_eq!(r.code, 200, "{system}");
    }
    assert_eq!(post(a, "/api/v1/namespaces", &ns("team")).await.code, 201);
    let sa = "/api/v1/namespaces/team/serviceaccounts/default";
    let first = eventually(a, sa, "created", |c, _| c == 200).await;
    assert_eq!(delete(a, sa).await.code, 200);
    eventually(a, sa, "created again", |c, v| {
        c == 200 && v["metadata"]["uid"] != first["metadata"]["uid"]
    })
    .await;
    let req = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let r = post(a, &format!("{sa}/token"), &req).await;
    assert_eq!(r.code, 201, "{}", r.json());
    assert!(r.json()["status"]["token"].is_string());
    s.shutdown().await;
}

/// With the controller off, nothing creates service accounts (a bare API server).
#[tokio::test]
async fn without_the_service_account_controller_there_is_none() {
    let s = start(enforcing().service_account_controller(false))
        .await
        .unwrap();
    let r = get(
        s.addr(),
        "/api/v1/namespaces/default/serviceaccounts/default",
    )
    .await;
    assert_eq!(r.code, 404);
    s.shutdown().await;
}
