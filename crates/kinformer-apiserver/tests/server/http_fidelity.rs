//! Behaviour recorded from kube-apiserver v1.35.4 by the differential runner
//! (e2e/diff/observations/real-nowatchcache.json), asserted over raw HTTP: managedFields,
//! finalizer removal, DELETE precondition conflicts, validation and ListOptions errors; plus
//! kube-apiserver's decoding rules the recording does not cover (media types, secrets'
//! `stringData`).

use crate::common;

use common::*;
use kinformer_apiserver::{ServerConfig, start};
use serde_json::{Value, json};

const UA: &str = "kinformer-e2e-diff/v0.0.0 (linux/amd64)";

async fn send(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    ua: &str,
    body: &Value,
) -> Resp {
    request_with_headers(
        addr,
        method,
        path,
        Some("application/json"),
        &[("User-Agent", ua)],
        body.to_string().as_bytes(),
    )
    .await
}

fn cm(name: &str, labels: Value, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": data})
}

/// managedFields without their `time` (which must be an RFC 3339 string).
fn entries(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut e| {
            let t = e.as_object_mut().unwrap().remove("time").unwrap();
            assert!(t.as_str().unwrap().ends_with('Z'), "{t}");
            e
        })
        .collect()
}

fn entry(manager: &str, fields: Value) -> Value {
    json!({"manager": manager, "operation": "Update", "apiVersion": "v1",
           "fieldsType": "FieldsV1", "fieldsV1": fields})
}

#[tokio::test]
async fn managed_fields_follow_the_field_manager() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let base = "/api/v1/namespaces/default/configmaps";
    let r = send(
        a,
        "POST",
        base,
        UA,
        &cm("a", json!({"app": "a"}), json!({"k": "1"})),
    )
    .await;
    assert_eq!(r.code, 201);
    let owned =
        json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}});
    assert_eq!(
        entries(&r.json()),
        vec![entry("kinformer-e2e-diff", owned.clone())]
    );
    // The same manager updating a value: same fields.
    let mut body = cm("a", json!({"app": "a"}), json!({"k": "2"}));
    let r = send(a, "PUT", &format!("{base}/a"), UA, &body).await;
    assert_eq!(r.code, 200);
    assert_eq!(
        entries(&r.json()),
        vec![entry("kinformer-e2e-diff", owned.clone())]
    );
    // Another manager adding a key owns just that key.
    body["data"]["k2"] = json!("x");
    let r = send(
        a,
        "PUT",
        &format!("{base}/a"),
        "kubectl/v1.35.0 (linux/amd64)",
        &body,
    )
    .await;
    let e = entries(&r.json());
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e.contains(&entry("kinformer-e2e-diff", owned.clone())));
    assert!(e.contains(&entry("kubectl", json!({"f:data": {"f:k2": {}}}))));
    // GET, LIST items and watch events carry them.
    let got = get(a, &format!("{base}/a")).await.json();
    assert_eq!(entries(&got).len(), 2);
    let list = get(a, base).await.json();
    assert_eq!(entries(&list["items"][0]).len(), 2);
    // `fieldManager` wins over the User-Agent.
    let r = send(
        a,
        "POST",
        &format!("{base}?fieldManager=custom"),
        UA,
        &cm("b", json!({}), json!({"k": "1"})),
    )
    .await;
    assert_eq!(
        entries(&r.json()),
        vec![entry("custom", json!({"f:data": {".": {}, "f:k": {}}}))]
    );
    // In-process seeding stores managedFields exactly as given.
    s.seed_pods(1, 1).unwrap();
    let pod = s.state("pods", Some("default")).unwrap().objects[0]
        .object
        .clone();
    let seeded = kinformer_apiserver::seed::pod("default", "pod-000000", 0);
    assert_eq!(
        pod["metadata"]["managedFields"],
        seeded["metadata"]["managedFields"]
    );
    s.shutdown().await;
}

#[tokio::test]
async fn removing_the_last_finalizer_answers_and_notifies_as_kube_apiserver() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let base = "/api/v1/namespaces/default/configmaps";
    let mut body = cm("a", json!({}), json!({"k": "1"}));
    body["metadata"]["finalizers"] = json!(["kinformer.dev/hold"]);
    let created = send(a, "POST", base, UA, &body).await.json();
    let rv0 = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut w = watch(a, &format!("{base}?watch=1&resourceVersion={rv0}")).await;
    let marked = send(a, "DELETE", &format!("{base}/a"), UA, &json!({}))
        .await
        .json();
    let rv1 = marked["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let mut release = cm("a", json!({}), json!({"k": "1"}));
    release["metadata"]["finalizers"] = json!([]);
    release["metadata"]["resourceVersion"] = json!(rv1);
    let r = send(a, "PUT", &format!("{base}/a"), UA, &release).await;
    assert_eq!(r.code, 200);
    let answered = r.json();
    // The object as updated, at the previous resourceVersion, finalizers omitted, and the
    // finalizer no longer owned.
    assert_eq!(answered["metadata"]["resourceVersion"], rv1.as_str());
    assert!(
        answered["metadata"].get("finalizers").is_none(),
        "{answered}"
    );
    assert!(answered["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        entries(&answered),
        vec![entry(
            "kinformer-e2e-diff",
            json!({"f:data": {".": {}, "f:k": {}}})
        )]
    );
    assert_eq!(get(a, &format!("{base}/a")).await.code, 404);
    let modified = w.next_within(SECS).await.unwrap();
    assert_eq!(modified["type"], "MODIFIED");
    let deleted = w.next_within(SECS).await.unwrap();
    assert_eq!(deleted["type"], "DELETED");
    // The DELETED event: the previous stored state (finalizer listed) at the deletion's
    // revision.
    let obj = &deleted["object"];
    assert_eq!(obj["metadata"]["finalizers"], json!(["kinformer.dev/hold"]));
    assert_eq!(obj["metadata"]["resourceVersion"], s.revision().to_string());
    assert_ne!(obj["metadata"]["resourceVersion"], rv1.as_str());
    assert_eq!(entries(obj), entries(&marked));
    s.shutdown().await;
}

#[tokio::test]
async fn delete_precondition_and_update_conflicts() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let base = "/api/v1/namespaces/default/configmaps";
    let created = send(a, "POST", base, UA, &cm("a", json!({}), json!({"k": "1"})))
        .await
        .json();
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    send(
        a,
        "PUT",
        &format!("{base}/a"),
        UA,
        &cm("a", json!({}), json!({"k": "2"})),
    )
    .await;
    let r = send(
        a,
        "DELETE",
        &format!("{base}/a"),
        UA,
        &json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": rv}}),
    )
    .await;
    assert_eq!(r.code, 409);
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("Operation cannot be fulfilled on ConfigMap \"a\": the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified", s.revision()),
               "reason": "Conflict", "details": {"name": "a", "kind": "ConfigMap"}, "code": 409})
    );
    let mut stale = cm("a", json!({}), json!({"k": "3"}));
    stale["metadata"]["resourceVersion"] = json!(rv);
    let r = send(a, "PUT", &format!("{base}/a"), UA, &stale).await;
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again",
               "reason": "Conflict", "details": {"name": "a", "kind": "configmaps"}, "code": 409})
    );
    s.shutdown().await;
}

#[tokio::test]
async fn invalid_objects_get_the_recorded_statuses() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let base = "/api/v1/namespaces/default/configmaps";
    let key_msg = "Invalid value: \"bad key!\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
    let r = send(
        a,
        "POST",
        base,
        UA,
        &cm("a", json!({}), json!({"bad key!": "v"})),
    )
    .await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("ConfigMap \"a\" is invalid: data[bad key!]: {key_msg}"),
               "reason": "Invalid", "code": 422,
               "details": {"name": "a", "kind": "ConfigMap", "causes": [
                   {"reason": "FieldValueInvalid", "message": key_msg, "field": "data[bad key!]"}]}})
    );
    let label_msg = "Invalid value: \"bad label!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    let r = send(
        a,
        "POST",
        base,
        UA,
        &cm("b", json!({"bad label!": "x"}), json!({})),
    )
    .await;
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("ConfigMap \"b\" is invalid: metadata.labels: {label_msg}"),
               "reason": "Invalid", "code": 422,
               "details": {"name": "b", "kind": "ConfigMap", "causes": [
                   {"reason": "FieldValueInvalid", "message": label_msg, "field": "metadata.labels"}]}})
    );
    // A nameless create: no details.name.
    let r = send(
        a,
        "POST",
        base,
        UA,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
    )
    .await;
    assert_eq!(
        r.json()["details"],
        json!({"kind": "ConfigMap", "causes": [
        {"reason": "FieldValueRequired", "message": "Required value: name or generateName is required", "field": "metadata.name"}]})
    );
    // Updates are validated too.
    send(a, "POST", base, UA, &cm("c", json!({}), json!({"k": "1"}))).await;
    let r = send(
        a,
        "PUT",
        &format!("{base}/c"),
        UA,
        &cm("c", json!({}), json!({"bad key!": "v"})),
    )
    .await;
    assert_eq!(
        (r.code, r.json()["reason"].as_str()),
        (422, Some("Invalid"))
    );
    assert_eq!(
        s.state("configmaps", Some("default"))
            .unwrap()
            .objects
            .len(),
        1
    );
    s.shutdown().await;
}

#[tokio::test]
async fn list_options_violations_are_reported_together() {
    let s = start(ServerConfig::default()).await.unwrap();
    let r = get(
        s.addr(),
        "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=Exact&allowWatchBookmarks=true&resourceVersion=1",
    )
    .await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]",
               "reason": "Invalid", "code": 422,
               "details": {"group": "meta.k8s.io", "kind": "ListOptions", "causes": [
                   {"reason": "FieldValueForbidden", "message": "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan", "field": "resourceVersionMatch"},
                   {"reason": "FieldValueNotSupported", "message": "Unsupported value: \"Exact\": supported values: \"NotOlderThan\"", "field": "resourceVersionMatch"}]}})
    );
    s.shutdown().await;
}

/// A body in a media type the server does not decode is 415 with apiserver's message; a body
/// that says protobuf but is not is 400; a JSON content type with parameters is fine.
#[tokio::test]
async fn non_json_bodies_are_unsupported_media_types() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let body = cm("a", json!({}), json!({"k": "1"})).to_string();
    let r = request(
        a,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("text/plain"),
        body.as_bytes(),
    )
    .await;
    assert_eq!(r.code, 415);
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "the body of the request was in an unknown format - accepted media types include: application/json",
               "reason": "UnsupportedMediaType", "code": 415})
    );
    let r = request(
        a,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/vnd.kubernetes.protobuf"),
        body.as_bytes(),
    )
    .await;
    assert_eq!(r.code, 400, "{}", String::from_utf8_lossy(&r.body));
    let r = request(
        a,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/json; charset=utf-8"),
        body.as_bytes(),
    )
    .await;
    assert_eq!(r.code, 201);
    s.shutdown().await;
}

/// kube-apiserver merges a secret's `stringData` into `data` (base64) and never stores it.
#[tokio::test]
async fn secret_string_data_is_stored_as_data() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let body = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                      "data": {"a": "eA=="}, "stringData": {"b": "hello"}});
    let r = send(a, "POST", "/api/v1/namespaces/default/secrets", UA, &body).await;
    assert_eq!(r.code, 201);
    let got = get(a, "/api/v1/namespaces/default/secrets/s").await.json();
    assert_eq!(got["data"], json!({"a": "eA==", "b": "aGVsbG8="}));
    assert!(got.get("stringData").is_none());
    s.shutdown().await;
}

/// A path no handler takes is answered as kube-apiserver's mux answers it, `404 page not found`
/// in plain text (observed on v1.36.3 with the same paths, 2026-11-27): an unknown group, and an
/// unknown version or resource of a group served only by custom resources. Unknown versions and
/// resources of built-in groups stay a 404 `Status`. Clients tell the two apart: client-go
/// turns the text into a generic NotFound, kube-rs into an error without a `Status`.
#[tokio::test]
async fn paths_no_handler_takes_are_a_plain_text_404() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let crd = widget_crd();
    let r = post(
        a,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    assert_eq!(r.code, 201);
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    for _ in 0..50 {
        if get(a, widgets).await.code == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(get(a, widgets).await.code, 200);
    for path in [
        "/foo",
        "/apis/nope.example.com",
        "/apis/nope.example.com/v1/foos",
        "/apis/example.com/v2",
        "/apis/example.com/v2/widgets",
        "/apis/example.com/v1/foos",
        "/apis/example.com/v1/namespaces/default/foos",
        "/apis/example.com/v1/widgets/x",
    ] {
        // a protobuf-first Accept does not turn it into a Status either
        let r = request_with_headers(
            a,
            "GET",
            path,
            None,
            &[(
                "Accept",
                "application/vnd.kubernetes.protobuf, application/json",
            )],
            b"",
        )
        .await;
        assert_eq!(r.code, 404, "{path}");
        assert_eq!(
            r.header("content-type"),
            Some("text/plain; charset=utf-8"),
            "{path}"
        );
        assert_eq!(r.body, b"404 page not found\n", "{path}");
    }
    for path in [
        "/api/v2/pods",
        "/api/v1/foos",
        "/apis/apps/v2",
        "/apis/apps/v2/deployments",
        "/apis/apps/v1/namespaces/default/foos",
    ] {
        let r = get(a, path).await;
        assert_eq!(r.code, 404, "{path}");
        assert_eq!(r.header("content-type"), Some("application/json"), "{path}");
        assert_eq!(
            r.json()["message"],
            "the server could not find the requested resource",
            "{path}"
        );
    }
    // A custom resource's handler answers a subresource it does not serve (any verb, the
    // object there or not, more parts after it) as the object not found, as kube-apiserver's
    // crdHandler does; built-in kinds' routes answer the generic NotFound.
    let w = post(
        a,
        widgets,
        &json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1"}}),
    )
    .await;
    assert_eq!(w.code, 201);
    for (method, path, name) in [
        ("GET", "w1/foo", "w1"),
        ("GET", "x/foo", "x"),
        ("GET", "w1/status", "w1"),
        ("GET", "w1/foo/bar", "w1"),
        ("DELETE", "w1/foo", "w1"),
        ("PATCH", "w1/scale", "w1"),
    ] {
        let r = request(
            a,
            method,
            &format!("{widgets}/{path}"),
            Some("application/merge-patch+json"),
            b"{}",
        )
        .await;
        assert_eq!(r.code, 404, "{method} {path}");
        let body = r.json();
        assert_eq!(
            body["message"],
            format!("widgets.example.com \"{name}\" not found"),
            "{method} {path}"
        );
        assert_eq!(
            body["details"],
            json!({"name": name, "group": "example.com", "kind": "widgets"}),
            "{method} {path}"
        );
    }
    assert_eq!(
        get(a, &format!("{widgets}/w1")).await.code,
        200,
        "still there"
    );
    let r = get(a, "/api/v1/namespaces/default/configmaps/x/foo").await;
    assert_eq!(
        r.json()["message"],
        "the server could not find the requested resource"
    );

    // `/` lists the paths that are taken, sorted, as kube-apiserver lists its own
    let r = get(a, "/").await;
    assert_eq!(r.code, 200);
    let paths: Vec<String> = serde_json::from_value(r.json()["paths"].clone()).unwrap();
    for p in [
        "/api",
        "/api/v1",
        "/apis/apps",
        "/apis/apps/v1",
        "/apis/example.com/v1",
        "/version",
    ] {
        assert!(paths.iter().any(|x| x == p), "{p} in {paths:?}");
    }
    assert!(paths.is_sorted());
    s.shutdown().await;
}

/// Undeclared and repeated fields in a body: one `Warning` header each under the default
/// `fieldValidation` (on an error answer too), a 400 under `Strict`; the fields are not stored.
#[tokio::test]
async fn undeclared_fields_are_warned_of_and_dropped() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    let path = "/api/v1/namespaces/default/configmaps";
    let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w","name":"w"},"zz":1,"data":{"a":"1"}}"#;
    let warnings = |r: &Resp| -> Vec<String> {
        r.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("warning"))
            .map(|(_, v)| v.clone())
            .collect()
    };
    let post = |q: &'static str| {
        let p = format!("{path}{q}");
        async move { request(a, "POST", &p, Some("application/json"), body).await }
    };
    let created = post("").await;
    assert_eq!(created.code, 201);
    assert_eq!(
        warnings(&created),
        [
            r#"299 - "duplicate field \"metadata.name\"""#,
            r#"299 - "unknown field \"zz\"""#
        ]
    );
    assert_eq!(get(a, &format!("{path}/w")).await.json().get("zz"), None);
    let again = post("").await;
    assert_eq!(again.code, 409);
    assert_eq!(
        warnings(&again).len(),
        2,
        "an error answer carries them too"
    );
    let strict = post("?fieldValidation=Strict").await;
    assert_eq!(strict.code, 400);
    assert!(warnings(&strict).is_empty());
    assert_eq!(
        strict.json()["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"metadata.name\", unknown field \"zz\""
    );
    let ignored = post("?fieldValidation=Ignore").await;
    assert_eq!(ignored.code, 409);
    assert!(warnings(&ignored).is_empty());
}
