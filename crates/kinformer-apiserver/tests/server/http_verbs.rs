//! Verbs over raw HTTP: exact codes, reasons, messages and details of the real API server.

use crate::common;

use common::*;
use kinformer_apiserver::{ServerConfig, start};
use serde_json::json;

#[tokio::test]
async fn create_get_conflicts_and_not_found_have_real_shapes() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let r = post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("web", json!({"app": "web"})),
    )
    .await;
    assert_eq!(r.code, 201);
    let created = r.json();
    assert_eq!(created["kind"], "Pod");
    assert_eq!(created["metadata"]["namespace"], "default");
    let rv: u64 = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(rv, s.revision());

    let r = post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("web", json!({})),
    )
    .await;
    assert_eq!(r.code, 409);
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "pods \"web\" already exists", "reason": "AlreadyExists",
               "details": {"name": "web", "kind": "pods"}, "code": 409})
    );

    let r = get(a, "/api/v1/namespaces/default/pods/nope").await;
    assert_eq!(r.code, 404);
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "pods \"nope\" not found", "reason": "NotFound",
               "details": {"name": "nope", "kind": "pods"}, "code": 404})
    );
    let r = get(a, "/apis/apps/v1/namespaces/default/deployments/nope").await;
    assert_eq!(r.json()["message"], "deployments.apps \"nope\" not found");
    assert_eq!(r.json()["details"]["group"], "apps");

    let r = get(a, "/api/v1/namespaces/default/pods/web").await;
    assert_eq!(r.code, 200);
    assert_eq!(r.json(), created);
    s.shutdown().await;
}

#[tokio::test]
async fn update_precondition_conflict_and_no_op() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let created = post(
        a,
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "c"}, "data": {"k": "1"}}),
    )
    .await
    .json();
    let mut stale = created.clone();
    stale["data"]["k"] = json!("2");
    let r = put(a, "/api/v1/namespaces/default/configmaps/c", &stale).await;
    assert_eq!(r.code, 200);
    let updated = r.json();
    assert_ne!(
        updated["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    assert_eq!(updated["metadata"]["uid"], created["metadata"]["uid"]);
    // The same stale body again: 409 Conflict.
    let r = put(a, "/api/v1/namespaces/default/configmaps/c", &stale).await;
    assert_eq!(r.code, 409);
    let st = r.json();
    assert_eq!(st["reason"], "Conflict");
    assert_eq!(
        st["message"],
        "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again"
    );
    // A no-op update keeps the resourceVersion.
    let rev = s.revision();
    let r = put(a, "/api/v1/namespaces/default/configmaps/c", &updated).await;
    assert_eq!(
        r.json()["metadata"]["resourceVersion"],
        updated["metadata"]["resourceVersion"]
    );
    assert_eq!(s.revision(), rev);
    // PUT of a missing object: 404; name mismatch: 400.
    let r = put(
        a,
        "/api/v1/namespaces/default/configmaps/missing",
        &json!({"metadata": {"name": "missing"}}),
    )
    .await;
    assert_eq!(r.code, 404);
    let r = put(
        a,
        "/api/v1/namespaces/default/configmaps/c",
        &json!({"metadata": {"name": "other"}}),
    )
    .await;
    assert_eq!(r.code, 400);
    assert_eq!(
        r.json()["message"],
        "the name of the object (other) does not match the name on the URL (c)"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn invalid_and_bad_requests() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let r = post(
        a,
        "/api/v1/namespaces/default/pods",
        &json!({"metadata": {}}),
    )
    .await;
    assert_eq!(r.code, 422);
    let st = r.json();
    assert_eq!(st["reason"], "Invalid");
    assert_eq!(
        st["details"]["causes"][0],
        json!({"reason": "FieldValueRequired", "message": "Required value: name or generateName is required", "field": "metadata.name"})
    );
    let r = post(
        a,
        "/api/v1/namespaces/default/pods",
        &json!({"metadata": {"name": "UPPER"}}),
    )
    .await;
    assert_eq!(r.code, 422);
    for garbage in [&b"{nope"[..], b"[1,2]", b"", b"\xff\xfe"] {
        let r = request(
            a,
            "POST",
            "/api/v1/namespaces/default/pods",
            Some("application/json"),
            garbage,
        )
        .await;
        assert_eq!(r.code, 400, "{:?}", String::from_utf8_lossy(garbage));
        assert_eq!(r.json()["reason"], "BadRequest");
    }
    let r = post(
        a,
        "/api/v1/namespaces/default/pods",
        &json!({"metadata": {"name": "p", "namespace": "other"}}),
    )
    .await;
    assert_eq!(
        r.json()["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
    // 405: POST to an object path, PUT to a collection, POST to all namespaces.
    for (m, p) in [
        ("POST", "/api/v1/namespaces/default/pods/x"),
        ("PUT", "/api/v1/namespaces/default/pods"),
        ("POST", "/api/v1/pods"),
    ] {
        let r = request(a, m, p, Some("application/json"), b"{}").await;
        assert_eq!(r.code, 405, "{m} {p}");
        assert_eq!(r.json()["reason"], "MethodNotAllowed");
        assert_eq!(
            r.json()["message"],
            "the server does not allow this method on the requested resource"
        );
    }
    // 404 for unknown resources and paths: a NotFound Status under a built-in group,
    // kube-apiserver's plain-text "404 page not found" where no handler takes the path
    for p in ["/api/v1/widgets", "/api/v1/namespaces/default/pods/x/exec"] {
        let r = get(a, p).await;
        assert_eq!(r.code, 404, "{p}");
        assert_eq!(r.json()["reason"], "NotFound");
    }
    for p in ["/apis/nope/v1/things", "/nonsense"] {
        let r = get(a, p).await;
        assert_eq!(r.code, 404, "{p}");
        assert_eq!(r.body, b"404 page not found\n", "{p}");
    }
    // Too large body: 413.
    let big = vec![b' '; 4 * 1024 * 1024];
    let r = request(
        a,
        "POST",
        "/api/v1/namespaces/default/pods",
        Some("application/json"),
        &big,
    )
    .await;
    assert_eq!(r.code, 413);
    s.shutdown().await;
}

#[tokio::test]
async fn generate_name_creates_unique_names() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let mut names = std::collections::HashSet::new();
    for _ in 0..5 {
        let r = post(
            a,
            "/api/v1/namespaces/default/pods",
            &json!({"metadata": {"generateName": "web-"}}),
        )
        .await;
        assert_eq!(r.code, 201);
        names.insert(r.json()["metadata"]["name"].as_str().unwrap().to_string());
    }
    assert_eq!(names.len(), 5);
    assert!(names.iter().all(|n| n.starts_with("web-") && n.len() == 9));
    s.shutdown().await;
}

#[tokio::test]
async fn patches() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    post(
        a,
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "c", "labels": {"a": "1"}}, "data": {"x": "1", "y": "2"}}),
    )
    .await;
    let path = "/api/v1/namespaces/default/configmaps/c";
    let r = request(
        a,
        "PATCH",
        path,
        Some("application/merge-patch+json"),
        br#"{"data": {"x": null, "z": "3"}}"#,
    )
    .await;
    assert_eq!(r.code, 200);
    assert_eq!(r.json()["data"], json!({"y": "2", "z": "3"}));
    let r = request(
        a,
        "PATCH",
        path,
        Some("application/json-patch+json"),
        br#"[{"op": "add", "path": "/metadata/labels/b", "value": "2"}]"#,
    )
    .await;
    assert_eq!(r.code, 200);
    assert_eq!(r.json()["metadata"]["labels"], json!({"a": "1", "b": "2"}));
    let r = request(
        a,
        "PATCH",
        path,
        Some("application/strategic-merge-patch+json"),
        br#"{"data": {"w": "4"}}"#,
    )
    .await;
    assert_eq!(r.json()["data"]["w"], "4");
    // A patch carrying a stale resourceVersion is a precondition: 409.
    let r = request(
        a,
        "PATCH",
        path,
        Some("application/merge-patch+json"),
        br#"{"metadata": {"resourceVersion": "1"}, "data": {"q": "1"}}"#,
    )
    .await;
    assert_eq!(r.code, 409);
    let r = request(
        a,
        "PATCH",
        path,
        Some("application/json-patch+json"),
        br#"[{"op": "test", "path": "/data/y", "value": "nope"}]"#,
    )
    .await;
    assert_eq!(r.code, 422);
    let r = request(a, "PATCH", path, Some("text/plain"), b"{}").await;
    assert_eq!(r.code, 415);
    assert_eq!(r.json()["reason"], "UnsupportedMediaType");
    let r = request(
        a,
        "PATCH",
        path,
        Some("application/merge-patch+json"),
        b"not json",
    )
    .await;
    assert_eq!(r.code, 400);
    let r = request(
        a,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/none",
        Some("application/merge-patch+json"),
        b"{}",
    )
    .await;
    assert_eq!(r.code, 404);
    // Apply creates when absent.
    let r = request(a, "PATCH", "/api/v1/namespaces/default/configmaps/applied?fieldManager=t", Some("application/apply-patch+yaml"), br#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"a": "b"}}"#).await;
    assert_eq!(r.code, 201);
    assert_eq!(r.json()["data"]["a"], "b");
    s.shutdown().await;
}

#[tokio::test]
async fn status_subresource_and_generation() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1}, "status": {"replicas": 0}});
    let created = post(a, "/apis/apps/v1/namespaces/default/deployments", &d)
        .await
        .json();
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(
        created["status"],
        json!({}),
        "a create starts from an empty status"
    );
    let p = "/apis/apps/v1/namespaces/default/deployments/d";
    let r = request(
        a,
        "PATCH",
        p,
        Some("application/merge-patch+json"),
        br#"{"spec": {"replicas": 3}, "status": {"replicas": 9}}"#,
    )
    .await
    .json();
    assert_eq!(r["metadata"]["generation"], 2);
    assert_eq!(r["status"], json!({}), "main resource writes keep status");
    let r = request(
        a,
        "PATCH",
        &format!("{p}/status"),
        Some("application/merge-patch+json"),
        br#"{"spec": {"replicas": 7}, "status": {"replicas": 3}}"#,
    )
    .await
    .json();
    assert_eq!(r["status"]["replicas"], 3);
    assert_eq!(r["spec"]["replicas"], 3, "status writes keep spec");
    assert_eq!(r["metadata"]["generation"], 2);
    let r = get(a, &format!("{p}/status")).await;
    assert_eq!(r.code, 200);
    // configmaps have no status subresource.
    assert_eq!(
        get(a, "/api/v1/namespaces/default/configmaps/x/status")
            .await
            .code,
        404
    );
    s.shutdown().await;
}

#[tokio::test]
async fn delete_returns_object_or_status_and_honours_finalizers() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("p", json!({})),
    )
    .await;
    let r = request(a, "DELETE", "/api/v1/namespaces/default/pods/p", None, b"").await;
    assert_eq!(r.code, 200);
    assert_eq!(r.json()["kind"], "Pod");
    let c = post(
        a,
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "c"}}),
    )
    .await
    .json();
    let r = request(
        a,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/c",
        None,
        b"",
    )
    .await;
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
               "details": {"name": "c", "kind": "configmaps", "uid": c["metadata"]["uid"]}})
    );
    assert_eq!(
        request(
            a,
            "DELETE",
            "/api/v1/namespaces/default/configmaps/c",
            None,
            b""
        )
        .await
        .code,
        404
    );
    // Preconditions.
    let c = post(
        a,
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "c2"}}),
    )
    .await
    .json();
    let r = request(
        a,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/c2",
        Some("application/json"),
        br#"{"preconditions": {"uid": "wrong"}}"#,
    )
    .await;
    assert_eq!(r.code, 409);
    assert_eq!(
        r.json()["message"],
        format!(
            "Operation cannot be fulfilled on ConfigMap \"c2\": the UID in the precondition (wrong) does not match the UID in record ({}). The object might have been deleted and then recreated",
            c["metadata"]["uid"].as_str().unwrap()
        )
    );
    assert_eq!(
        request(
            a,
            "DELETE",
            "/api/v1/namespaces/default/configmaps/c2",
            Some("application/json"),
            b"{bad"
        )
        .await
        .code,
        400
    );
    // Finalizers: marked, then gone when the last finalizer is removed.
    post(
        a,
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "f", "finalizers": ["example.com/x"]}}),
    )
    .await;
    let r = request(
        a,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/f",
        None,
        b"",
    )
    .await;
    assert_eq!(r.code, 200);
    let marked = get(a, "/api/v1/namespaces/default/configmaps/f")
        .await
        .json();
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let r = request(
        a,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/f",
        Some("application/merge-patch+json"),
        br#"{"metadata": {"finalizers": null}}"#,
    )
    .await;
    assert_eq!(r.code, 200);
    assert_eq!(
        get(a, "/api/v1/namespaces/default/configmaps/f").await.code,
        404
    );
    s.shutdown().await;
}

#[tokio::test]
async fn delete_collection_by_selector() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    for (n, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        post(
            a,
            "/api/v1/namespaces/default/pods",
            &pod_json(n, json!({"app": app})),
        )
        .await;
    }
    let r = request(
        a,
        "DELETE",
        "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb",
        None,
        b"",
    )
    .await;
    assert_eq!(r.code, 200);
    let l = r.json();
    assert_eq!(l["kind"], "PodList");
    assert_eq!(l["items"].as_array().unwrap().len(), 2);
    let names: Vec<_> = s
        .state("pods", Some("default"))
        .unwrap()
        .objects
        .into_iter()
        .map(|o| o.name)
        .collect();
    assert_eq!(names, ["c"]);
    s.shutdown().await;
}

#[tokio::test]
async fn cluster_scoped_resources_and_namespaces() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let r = post(a, "/api/v1/nodes", &kinformer_apiserver::seed::node("n1")).await;
    assert_eq!(r.code, 201);
    assert!(r.json()["metadata"].get("namespace").is_none());
    assert_eq!(get(a, "/api/v1/nodes/n1").await.code, 200);
    let l = get(a, "/api/v1/namespaces").await.json();
    let names: Vec<_> = l["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"default".to_string()) && names.contains(&"kube-system".to_string()));
    assert_eq!(
        get(a, "/api/v1/namespaces/default").await.json()["kind"],
        "Namespace"
    );
    assert_eq!(get(a, "/api/v1/namespaces/default/status").await.code, 200);
    let r = post(
        a,
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "not.a.label"}}),
    )
    .await;
    assert_eq!(r.code, 422);
    s.shutdown().await;
}

#[tokio::test]
async fn discovery_documents() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let v = get(a, "/api").await.json();
    assert_eq!(v["kind"], "APIVersions");
    assert_eq!(v["versions"], json!(["v1"]));
    let g = get(a, "/apis").await.json();
    assert_eq!(g["kind"], "APIGroupList");
    let apps = g["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "apps")
        .unwrap();
    assert_eq!(apps["preferredVersion"]["groupVersion"], "apps/v1");
    // Every stable built-in group of k8s-openapi is served.
    for group in [
        "coordination.k8s.io",
        "batch",
        "rbac.authorization.k8s.io",
        "discovery.k8s.io",
        "apiextensions.k8s.io",
        "authorization.k8s.io",
    ] {
        assert!(
            g["groups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["name"] == group),
            "{group}: {g}"
        );
    }
    let authz = get(a, "/apis/authorization.k8s.io/v1").await.json();
    let ssar = authz["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "selfsubjectaccessreviews")
        .unwrap();
    assert_eq!(ssar["verbs"], json!(["create"]));
    let apps_v1 = get(a, "/apis/apps/v1").await.json();
    let names: Vec<&str> = apps_v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(names.contains(&"deployments/scale"), "{names:?}");
    assert!(names.contains(&"statefulsets/status"), "{names:?}");
    let core = get(a, "/api/v1").await.json();
    assert_eq!(core["kind"], "APIResourceList");
    let pods = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods")
        .unwrap()
        .clone();
    assert_eq!(pods["kind"], "Pod");
    assert_eq!(pods["namespaced"], true);
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert!(pods["verbs"].as_array().unwrap().contains(&json!("watch")));
    assert!(
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "pods/status")
    );
    let nodes = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "nodes")
        .unwrap()
        .clone();
    assert_eq!(nodes["namespaced"], false);
    assert_eq!(
        get(a, "/apis/apps/v1").await.json()["groupVersion"],
        "apps/v1"
    );
    assert_eq!(get(a, "/version").await.json()["major"], "1");
    let core_doc = get(a, "/openapi/v3").await.json()["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        core_doc.starts_with("/openapi/v3/api/v1?hash="),
        "{core_doc}"
    );
    assert_eq!(get(a, "/openapi/v2").await.code, 200);
    s.shutdown().await;
}

#[tokio::test]
async fn namespaces_can_be_enforced() {
    let s = start(ServerConfig::default().enforce_namespaces(true))
        .await
        .unwrap();
    let a = s.addr();
    let r = post(
        a,
        "/api/v1/namespaces/missing/pods",
        &pod_json("p", json!({})),
    )
    .await;
    assert_eq!(r.code, 404);
    assert_eq!(r.json()["message"], "namespaces \"missing\" not found");
    assert_eq!(
        r.json()["details"],
        json!({"name": "missing", "kind": "namespaces"})
    );
    assert_eq!(
        post(
            a,
            "/api/v1/namespaces/default/pods",
            &pod_json("p", json!({}))
        )
        .await
        .code,
        201
    );
    // Cluster-scoped objects are unaffected.
    assert_eq!(
        post(
            a,
            "/api/v1/namespaces",
            &json!({"metadata": {"name": "missing"}})
        )
        .await
        .code,
        201
    );
    assert_eq!(
        post(
            a,
            "/api/v1/namespaces/missing/pods",
            &pod_json("p", json!({}))
        )
        .await
        .code,
        201
    );
    s.shutdown().await;
}

#[tokio::test]
async fn tables_for_kubectl() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    s.seed_pods(2, 1).unwrap();
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let raw = |path: &str| {
        let path = path.to_string();
        async move {
            let mut st = tokio::net::TcpStream::connect(a).await.unwrap();
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let req = format!(
                "GET {path} HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
            );
            st.write_all(req.as_bytes()).await.unwrap();
            let mut out = Vec::new();
            st.read_to_end(&mut out).await.unwrap();
            let text = String::from_utf8_lossy(&out).into_owned();
            let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
            serde_json::from_str::<serde_json::Value>(&body).unwrap()
        }
    };
    let t = raw("/api/v1/namespaces/default/pods?limit=1").await;
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(t["columnDefinitions"][1]["name"], "Ready");
    assert_eq!(t["rows"].as_array().unwrap().len(), 1);
    assert_eq!(t["rows"][0]["cells"][0], "pod-000000");
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert!(t["metadata"]["continue"].is_string());
    let t = raw("/api/v1/namespaces/default/pods/pod-000001?includeObject=Object").await;
    assert_eq!(t["rows"][0]["object"]["kind"], "Pod");
    let t = raw("/api/v1/configmaps?includeObject=None").await;
    assert_eq!(t["columnDefinitions"][1]["name"], "Data");
    // Without the Accept header: plain objects.
    assert_eq!(
        get(a, "/api/v1/namespaces/default/pods/pod-000001")
            .await
            .json()["kind"],
        "Pod"
    );
    s.shutdown().await;
}
