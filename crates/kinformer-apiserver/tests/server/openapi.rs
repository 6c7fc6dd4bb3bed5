//! OpenAPI over HTTP: the built-in kinds' schemas in `/openapi/v2` and `/openapi/v3/{gv}`
//! (Pod with its descriptions and group-version-kind, every reference resolving inside the
//! document, v2 in JSON and in protobuf, the `fieldValidation` parameter kubectl looks for),
//! the index's hashes, and a CustomResourceDefinition's schema appearing and disappearing
//! with it.

use crate::common;

use std::time::Duration;

use common::{Resp, get, post, request, request_with_headers};
use kinformer_apiserver::{RunningServer, ServerConfig, start};
use serde_json::{Value, json};

/// Every `$ref` in `doc` (v3 `#/components/schemas/...` or v2 `#/definitions/...`) names a
/// definition of the document.
fn assert_refs_resolve(doc: &Value, defs: &Value, prefix: &str, at_least: usize) {
    let mut stack = vec![doc];
    let mut n = 0;
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    let name = r.strip_prefix(prefix).unwrap_or_else(|| panic!("{r}"));
                    assert!(defs.get(name).is_some(), "{r} does not resolve");
                    n += 1;
                }
                stack.extend(m.values());
            }
            Value::Array(a) => stack.extend(a),
            _ => {}
        }
    }
    assert!(n >= at_least, "only {n} references");
}

async fn index(s: &RunningServer) -> Value {
    let r = get(s.addr(), "/openapi/v3").await;
    assert_eq!(r.code, 200);
    r.json()
}

fn url(index: &Value, gv: &str) -> Option<String> {
    index["paths"][gv]["serverRelativeURL"]
        .as_str()
        .map(String::from)
}

#[tokio::test]
async fn built_in_schemas_are_served_in_v2_and_v3() {
    let s = start(ServerConfig::default()).await.unwrap();
    let idx = index(&s).await;
    let core = url(&idx, "api/v1").unwrap();
    assert!(core.starts_with("/openapi/v3/api/v1?hash="), "{core}");
    assert!(url(&idx, "apis/apps/v1").is_some());

    let r = get(s.addr(), &core).await;
    assert_eq!(r.code, 200);
    assert_eq!(r.header("cache-control"), Some("public, immutable"));
    let doc = r.json();
    let schemas = &doc["components"]["schemas"];
    let pod = &schemas["io.k8s.api.core.v1.Pod"];
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "Pod", "version": "v1"}])
    );
    let spec = &schemas["io.k8s.api.core.v1.PodSpec"];
    let containers = &spec["properties"]["containers"];
    assert!(
        containers["description"]
            .as_str()
            .unwrap()
            .starts_with("List of containers belonging to the pod."),
        "{containers}"
    );
    assert_eq!(
        containers["items"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.Container"
    );
    assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_refs_resolve(&doc, schemas, "#/components/schemas/", 100);
    // kubectl finds server-side field validation from the PATCH operations' parameters.
    let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
    assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Pod");
    assert!(
        patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation")
    );
    // a group-version only has its own kinds and what they reference
    let apps = get(s.addr(), &url(&idx, "apis/apps/v1").unwrap())
        .await
        .json();
    let apps_schemas = apps["components"]["schemas"].as_object().unwrap();
    assert!(apps_schemas.contains_key("io.k8s.api.apps.v1.Deployment"));
    assert!(apps_schemas.contains_key("io.k8s.api.core.v1.PodSpec"));
    assert!(!apps_schemas.contains_key("io.k8s.api.core.v1.Service"));
    // as kube-apiserver's: TokenRequest with the service accounts, not discovery documents;
    // the reviews' group has no DeleteOptions
    assert!(
        schemas
            .get("io.k8s.api.authentication.v1.TokenRequest")
            .is_some()
    );
    assert!(
        schemas
            .get("io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList")
            .is_none()
    );
    let authn = get(
        s.addr(),
        &url(&idx, "apis/authentication.k8s.io/v1").unwrap(),
    )
    .await
    .json();
    let authn = authn["components"]["schemas"].as_object().unwrap();
    assert!(authn.contains_key("io.k8s.api.authentication.v1.TokenReview"));
    assert!(!authn.contains_key("io.k8s.api.authentication.v1.TokenRequest"));
    assert!(!authn.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"));
    assert_eq!(get(s.addr(), "/openapi/v3/apis/nothing/v1").await.code, 404);

    // v2: JSON, or gnostic's protobuf form for client-go; another media type is 406, as
    // kube-openapi answers
    let v2 = request_with_headers(
        s.addr(),
        "GET",
        "/openapi/v2",
        None,
        &[("Accept", "application/json")],
        b"",
    )
    .await;
    assert_eq!(v2.code, 200);
    let v2 = v2.json();
    assert_eq!(v2["swagger"], "2.0");
    let defs = &v2["definitions"];
    let pod = &defs["io.k8s.api.core.v1.Pod"];
    assert_eq!(pod["x-kubernetes-group-version-kind"][0]["kind"], "Pod");
    assert_eq!(
        pod["properties"]["spec"]["$ref"],
        "#/definitions/io.k8s.api.core.v1.PodSpec"
    );
    assert!(
        defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]["description"]
            .as_str()
            .unwrap()
            .starts_with("List of containers")
    );
    assert_refs_resolve(&v2, defs, "#/definitions/", 100);
    let pb = request_with_headers(
        s.addr(),
        "GET",
        "/openapi/v2",
        None,
        &[(
            "Accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )],
        b"",
    )
    .await;
    assert_eq!(pb.code, 200);
    assert_eq!(
        pb.header("content-type"),
        Some("application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    );
    // Document.swagger = "2.0", then the definitions, Pod's among them
    assert_eq!(&pb.body[..5], &[0x0a, 3, b'2', b'.', b'0']);
    assert!(pb.body.windows(22).any(|w| w == b"io.k8s.api.core.v1.Pod"));
    let html = request_with_headers(
        s.addr(),
        "GET",
        "/openapi/v2",
        None,
        &[("Accept", "text/html")],
        b"",
    )
    .await;
    assert_eq!(html.code, 406);
    s.shutdown().await;
}

fn crd(plural: &str, kind: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "description": "The widget's wishes.",
                                 "properties": {"size": {"type": "integer", "description": "How big."}}}
                    }
                }}
            }]
        }
    })
}

/// Polls the index until `gv`'s link satisfies `ok` (at most 5 s).
async fn wait_index(s: &RunningServer, gv: &str, ok: impl Fn(Option<&str>) -> bool) -> Value {
    for _ in 0..100 {
        let idx = index(s).await;
        if ok(url(&idx, gv).as_deref()) {
            return idx;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the index never satisfied the condition for {gv}");
}

#[tokio::test]
async fn a_crds_schema_comes_and_goes_with_it() {
    let s = start(ServerConfig::default()).await.unwrap();
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    assert_eq!(
        post(s.addr(), crds, &crd("widgets", "Widget")).await.code,
        201
    );
    let idx = wait_index(&s, "apis/example.com/v1", |u| u.is_some()).await;
    let first = url(&idx, "apis/example.com/v1").unwrap();
    let doc = get(s.addr(), &first).await.json();
    let schemas = &doc["components"]["schemas"];
    let w = &schemas["com.example.v1.Widget"];
    assert_eq!(
        w["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "kind": "Widget", "version": "v1"}])
    );
    assert_eq!(
        w["properties"]["spec"]["description"],
        "The widget's wishes."
    );
    assert_eq!(
        w["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert_eq!(w["properties"]["apiVersion"]["type"], "string");
    assert_eq!(
        schemas["com.example.v1.WidgetList"]["properties"]["items"]["items"]["$ref"],
        "#/components/schemas/com.example.v1.Widget"
    );
    assert_refs_resolve(&doc, schemas, "#/components/schemas/", 10);
    let v2 = get(s.addr(), "/openapi/v2").await.json();
    assert_eq!(
        v2["definitions"]["com.example.v1.Widget"]["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );

    // A second kind in the group-version changes its document, so its hash.
    assert_eq!(
        post(s.addr(), crds, &crd("gadgets", "Gadget")).await.code,
        201
    );
    let idx = wait_index(&s, "apis/example.com/v1", |u| u != Some(first.as_str())).await;
    let second = url(&idx, "apis/example.com/v1").unwrap();
    let doc = get(s.addr(), &second).await.json();
    assert!(doc["components"]["schemas"]["com.example.v1.Gadget"].is_object());
    // the stale link is redirected to the current one, as kube-openapi does
    let stale: Resp = request(s.addr(), "GET", &first, None, b"").await;
    assert_eq!(stale.code, 301);
    assert_eq!(stale.header("location"), Some(second.as_str()));
    // other group-versions keep their hash
    assert_eq!(
        url(&idx, "api/v1"),
        url(&index(&s).await, "api/v1"),
        "unrelated documents are unchanged"
    );

    for plural in ["widgets", "gadgets"] {
        let path = format!("{crds}/{plural}.example.com");
        assert_eq!(
            request(s.addr(), "DELETE", &path, None, b"").await.code,
            200
        );
    }
    wait_index(&s, "apis/example.com/v1", |u| u.is_none()).await;
    assert_eq!(
        get(s.addr(), "/openapi/v3/apis/example.com/v1").await.code,
        404
    );
    let v2 = get(s.addr(), "/openapi/v2").await.json();
    assert!(v2["definitions"].get("com.example.v1.Widget").is_none());
    s.shutdown().await;
}
