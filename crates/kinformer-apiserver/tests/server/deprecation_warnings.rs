//! Deprecated API versions answer every request with kube-apiserver's `Warning` (what kubectl
//! prints as `Warning: ...` and client-go logs): the built-in v1 Endpoints and ComponentStatus,
//! and a CustomResourceDefinition's versions marked `deprecated`, in apiextensions-apiserver's
//! words or the version's own `deprecationWarning`; the `deprecationWarning`s kube-apiserver
//! refuses.

use crate::common;

use common::*;
use kinformer_apiserver::{ServerConfig, start};
use serde_json::json;

fn warnings(r: &Resp) -> Vec<&str> {
    r.headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("warning"))
        .map(|(_, v)| v.as_str())
        .collect()
}

const ENDPOINTS: &str =
    r#"299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice""#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_deprecated_kinds_warn_on_every_verb() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let eps = "/api/v1/namespaces/default/endpoints";
    let ep = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "mine"},
                    "subsets": [{"addresses": [{"ip": "10.0.0.9"}], "ports": [{"port": 80}]}]});
    let created = post(a, eps, &ep).await;
    assert_eq!(created.code, 201);
    assert_eq!(warnings(&created), [ENDPOINTS], "create");
    for path in [
        eps.to_string(),
        format!("{eps}/mine"),
        "/api/v1/endpoints".into(),
        format!("{eps}?watch=1&timeoutSeconds=1"),
    ] {
        let r = get(a, &path).await;
        assert_eq!(r.code, 200, "{path}");
        assert_eq!(warnings(&r), [ENDPOINTS], "{path}");
    }
    // an error answer carries it too: the warning is added before the request is served
    let missing = get(a, &format!("{eps}/nobody")).await;
    assert_eq!(missing.code, 404);
    assert_eq!(warnings(&missing), [ENDPOINTS]);
    let deleted = request(a, "DELETE", &format!("{eps}/mine"), None, b"").await;
    assert_eq!(deleted.code, 200);
    assert_eq!(warnings(&deleted), [ENDPOINTS], "delete");

    let cs = get(a, "/api/v1/componentstatuses").await;
    assert_eq!(
        warnings(&cs),
        [r#"299 - "v1 ComponentStatus is deprecated in v1.19+""#]
    );
    // the replacement and everything else: no warning
    for path in [
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        "/api/v1/namespaces/default/services",
        "/api/v1/namespaces",
    ] {
        let r = get(a, path).await;
        assert_eq!(r.code, 200, "{path}");
        assert!(warnings(&r).is_empty(), "{path}: {:?}", warnings(&r));
    }
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crds_deprecated_versions_warn_in_apiextensions_words() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    let version = |name: &str, extra: serde_json::Value| {
        let mut v =
            json!({"name": name, "served": true, "storage": name == "v1", "schema": schema});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "kind": "Gadget"},
                 "versions": [
                     version("v1alpha1", json!({"deprecated": true})),
                     version("v1beta1", json!({"deprecated": true, "deprecationWarning": "v1beta1 goes away in 2027"})),
                     version("v1", json!({})),
                     version("v2beta1", json!({})),
                     version("v2alpha1", json!({"deprecated": true})),
                     version("v3alpha1", json!({"deprecated": true, "served": false})),
                 ]}
    });
    assert_eq!(
        post(
            a,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd
        )
        .await
        .code,
        201
    );
    let list = |v: &str| format!("/apis/example.com/{v}/namespaces/default/gadgets");
    eventually(a, &list("v1"), "served", |c, _| c == 200).await;
    let expect = [
        // the highest served, not deprecated version above it: GA before beta
        (
            "v1alpha1",
            vec![r#"299 - "example.com/v1alpha1 Gadget is deprecated; use example.com/v1 Gadget""#],
        ),
        ("v1beta1", vec![r#"299 - "v1beta1 goes away in 2027""#]),
        ("v1", vec![]),
        ("v2beta1", vec![]),
        // above v2alpha1, served and not deprecated: v2beta1 and v1; v1 (GA) ranks highest
        (
            "v2alpha1",
            vec![r#"299 - "example.com/v2alpha1 Gadget is deprecated; use example.com/v1 Gadget""#],
        ),
    ];
    for (v, want) in expect {
        let r = get(a, &list(v)).await;
        assert_eq!(r.code, 200, "{v}");
        assert_eq!(warnings(&r), want, "{v}");
    }
    // writes through a deprecated version warn too, and the object is stored
    let g =
        json!({"apiVersion": "example.com/v1alpha1", "kind": "Gadget", "metadata": {"name": "g"}});
    let created = post(a, &list("v1alpha1"), &g).await;
    assert_eq!(created.code, 201);
    assert_eq!(warnings(&created).len(), 1);
    assert!(warnings(&get(a, &format!("{}/g", list("v1"))).await).is_empty());
    assert_eq!(get(a, &list("v3alpha1")).await.code, 404);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deprecated_version_with_no_newer_one_names_none() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "olds.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster",
                 "names": {"plural": "olds", "kind": "Old"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "deprecated": true,
                               "schema": {"openAPIV3Schema": {"type": "object"}}},
                              {"name": "v1beta1", "served": true, "storage": false,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}
    });
    assert_eq!(
        post(
            a,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd
        )
        .await
        .code,
        201
    );
    eventually(a, "/apis/example.com/v1/olds", "served", |c, _| c == 200).await;
    let r = get(a, "/apis/example.com/v1/olds").await;
    assert_eq!(
        warnings(&r),
        [r#"299 - "example.com/v1 Old is deprecated""#],
        "v1beta1 is not newer than v1"
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deprecation_warning_kube_apiserver_refuses_is_refused() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let crd = |v: serde_json::Value| {
        let mut version = json!({"name": "v1", "served": true, "storage": true,
                                 "schema": {"openAPIV3Schema": {"type": "object"}}});
        for (k, x) in v.as_object().unwrap() {
            version[k] = x.clone();
        }
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "bads.example.com"},
               "spec": {"group": "example.com", "scope": "Namespaced",
                        "names": {"plural": "bads", "kind": "Bad"}, "versions": [version]}})
    };
    let long = "x".repeat(257);
    for (v, why) in [
        (
            json!({"deprecated": true, "deprecationWarning": ""}),
            r#"Invalid value: "": must not be an empty string"#.to_string(),
        ),
        (
            json!({"deprecationWarning": "old"}),
            r#"Invalid value: "old": can only be set for deprecated versions"#.into(),
        ),
        (
            json!({"deprecated": true, "deprecationWarning": long}),
            format!(r#"Invalid value: "{long}": must be <= 256 characters long"#),
        ),
        (
            json!({"deprecated": true, "deprecationWarning": "old\tthing"}),
            r#"Invalid value: "old\tthing": must only contain printable UTF-8 characters; non-printable character found at index 3"#.into(),
        ),
    ] {
        let r = post(
            a,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd(v),
        )
        .await;
        assert_eq!(r.code, 422, "{why}");
        let body = r.json();
        assert_eq!(
            body["details"]["causes"][0]["field"],
            "spec.versions[0].deprecationWarning"
        );
        assert_eq!(body["details"]["causes"][0]["message"], why.as_str());
    }
    s.shutdown().await;
}
