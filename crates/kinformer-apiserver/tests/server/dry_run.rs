//! `dryRun=All` on every write path, over HTTP: the answer is the one a real write gives
//! (same code, same object but for what only storing decides), and nothing is stored, no
//! resourceVersion is used and no watcher hears of it. kube-apiserver's dry-run storage: a
//! create answers without a resourceVersion, an update, patch or delete with the live one.

use crate::common;

use std::net::SocketAddr;

use common::*;
use kinformer_apiserver::{RunningServer, ServerConfig, start};
use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const PODS: &str = "/api/v1/namespaces/default/pods";

fn with_dry_run(path: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}dryRun=All")
}

/// What only storing decides, removed: identity, versions and times.
fn normalized(mut v: Value) -> Value {
    if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        for f in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
        ] {
            m.remove(f);
        }
        if let Some(Value::Array(entries)) = m.get_mut("managedFields") {
            for e in entries {
                if let Some(e) = e.as_object_mut() {
                    e.remove("time");
                }
            }
        }
    }
    if let Some(d) = v.get_mut("details").and_then(|d| d.as_object_mut()) {
        d.remove("uid");
    }
    if let Some(Value::Array(items)) = v.get_mut("items") {
        for i in items.iter_mut() {
            *i = normalized(i.take());
        }
    }
    v
}

fn rv(v: &Value) -> Option<&str> {
    v["metadata"]["resourceVersion"].as_str()
}

struct Write<'a> {
    method: &'a str,
    path: &'a str,
    content_type: Option<&'a str>,
    body: Value,
}

impl Write<'_> {
    async fn send(&self, a: SocketAddr, dry: bool) -> Resp {
        let path = if dry {
            with_dry_run(self.path)
        } else {
            self.path.to_string()
        };
        let body = if self.body.is_null() {
            Vec::new()
        } else {
            self.body.to_string().into_bytes()
        };
        request(a, self.method, &path, self.content_type, &body).await
    }
}

/// Sends `w` as a dry run, checks that nothing changed (the objects under `list`, the revision,
/// the watch stream), then sends it for real and checks both answers agree. Returns the dry and
/// the real answers.
async fn dry_then_real(s: &RunningServer, list: &str, w: &Write<'_>) -> (Resp, Resp) {
    let a = s.addr();
    let before = get(a, list).await.json()["items"].clone();
    let revision = s.revision();
    let mut events = watch(a, &format!("{list}?watch=1&resourceVersion={revision}")).await;
    assert_eq!(events.code, 200);

    let dry = w.send(a, true).await;
    assert!(
        dry.code < 300,
        "dry run failed: {} {}",
        dry.code,
        dry.json()
    );
    assert_eq!(s.revision(), revision, "a dry run used a resourceVersion");
    assert_eq!(
        get(a, list).await.json()["items"],
        before,
        "a dry run changed the stored objects"
    );

    let real = w.send(a, false).await;
    assert_eq!(dry.code, real.code, "{} vs {}", dry.json(), real.json());
    assert_eq!(normalized(dry.json()), normalized(real.json()));
    // The first event after the dry run is the real write's first one: the dry run sent none.
    if s.revision() > revision {
        let ev = events.next_within(SECS).await.expect("an event");
        assert_eq!(
            ev["object"]["metadata"]["resourceVersion"],
            (revision + 1).to_string(),
            "{ev}"
        );
    }
    (dry, real)
}

async fn server() -> RunningServer {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    for (name, finalizers) in [("a", json!([])), ("b", json!([])), ("held", json!(["x/y"]))] {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"app": "t"}, "finalizers": finalizers},
            "data": {"k": "v"}});
        assert_eq!(post(a, CMS, &cm).await.code, 201);
    }
    assert_eq!(post(a, PODS, &pod_json("p", json!({}))).await.code, 201);
    s
}

#[tokio::test]
async fn dry_run_create_answers_without_a_resource_version_and_stores_nothing() {
    let s = server().await;
    let w = Write {
        method: "POST",
        path: CMS,
        content_type: Some("application/json"),
        body: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new"}, "data": {"x": "1"}}),
    };
    let (dry, real) = dry_then_real(&s, CMS, &w).await;
    assert_eq!(dry.code, 201);
    let d = dry.json();
    assert_eq!(rv(&d), None, "{d}");
    assert!(d["metadata"]["uid"].is_string() && d["metadata"]["creationTimestamp"].is_string());
    assert_ne!(d["metadata"]["uid"], real.json()["metadata"]["uid"]);
    assert_eq!(d["metadata"]["managedFields"][0]["operation"], "Update");
    // An object created by a dry run can be created again for real: it was never there.
    let again = post(s.addr(), &with_dry_run(CMS), &w.body).await;
    assert_eq!(again.code, 409, "the real one exists now");
    s.shutdown().await;
}

#[tokio::test]
async fn dry_run_update_and_every_patch_type_answer_with_the_live_resource_version() {
    let s = server().await;
    let a = s.addr();
    let live = get(a, &format!("{CMS}/a")).await.json();
    let mut replaced = live.clone();
    replaced["data"] = json!({"k": "put"});
    let path = format!("{CMS}/a");
    let writes = [
        ("PUT", Some("application/json"), replaced),
        (
            "PATCH",
            Some("application/merge-patch+json"),
            json!({"data": {"m": "merge"}}),
        ),
        (
            "PATCH",
            Some("application/json-patch+json"),
            json!([{"op": "add", "path": "/data/j", "value": "json"}]),
        ),
        (
            "PATCH",
            Some("application/strategic-merge-patch+json"),
            json!({"metadata": {"labels": {"s": "strategic"}}}),
        ),
        (
            "PATCH",
            Some("application/apply-patch+yaml"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "applied"}}),
        ),
    ];
    for (method, ct, body) in writes {
        let live = get(a, &path).await.json();
        let path = if ct == Some("application/apply-patch+yaml") {
            format!("{path}?fieldManager=tester&force=true")
        } else {
            path.clone()
        };
        let w = Write {
            method,
            path: &path,
            content_type: ct,
            body,
        };
        let (dry, real) = dry_then_real(&s, CMS, &w).await;
        assert_eq!(dry.code, 200, "{ct:?}");
        assert_eq!(
            rv(&dry.json()),
            rv(&live),
            "{ct:?}: the live resourceVersion"
        );
        assert_ne!(rv(&real.json()), rv(&live));
    }
    s.shutdown().await;
}

#[tokio::test]
async fn dry_run_apply_of_a_missing_object_answers_as_a_create() {
    let s = server().await;
    let path = format!("{CMS}/applied?fieldManager=tester");
    let w = Write {
        method: "PATCH",
        path: &path,
        content_type: Some("application/apply-patch+yaml"),
        body: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"k": "v"}}),
    };
    let (dry, _) = dry_then_real(&s, CMS, &w).await;
    assert_eq!(dry.code, 201);
    assert_eq!(rv(&dry.json()), None);
    s.shutdown().await;
}

#[tokio::test]
async fn dry_run_delete_keeps_the_object_with_and_without_finalizers() {
    let s = server().await;
    let a = s.addr();
    // kubectl delete --dry-run=server sends DeleteOptions in the body.
    let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background", "dryRun": ["All"]});
    let r = request(
        a,
        "DELETE",
        &format!("{CMS}/a"),
        Some("application/json"),
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(r.code, 200);
    assert_eq!(r.json()["status"], "Success");
    assert_eq!(get(a, &format!("{CMS}/a")).await.code, 200);

    // A plain delete (Status), a pod (the object itself), a finalized object (marked).
    for (list, path) in [
        (CMS, format!("{CMS}/b")),
        (PODS, format!("{PODS}/p")),
        (CMS, format!("{CMS}/held")),
    ] {
        let live = get(a, &path).await.json();
        let w = Write {
            method: "DELETE",
            path: &path,
            content_type: None,
            body: Value::Null,
        };
        let (dry, _) = dry_then_real(&s, list, &w).await;
        let d = dry.json();
        if d["kind"] != "Status" {
            assert_eq!(rv(&d), rv(&live), "{d}");
        }
        if path.ends_with("held") {
            assert!(d["metadata"]["deletionTimestamp"].is_string(), "{d}");
        }
    }
    s.shutdown().await;
}

#[tokio::test]
async fn dry_run_deletecollection_lists_what_it_would_delete() {
    let s = server().await;
    let path = format!("{CMS}?labelSelector=app%3Dt");
    let w = Write {
        method: "DELETE",
        path: &path,
        content_type: None,
        body: Value::Null,
    };
    let (dry, real) = dry_then_real(&s, CMS, &w).await;
    let names = |r: &Resp| -> Vec<Value> {
        r.json()["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].clone())
            .collect()
    };
    assert_eq!(names(&dry), vec![json!("a"), json!("b"), json!("held")]);
    assert_eq!(names(&dry), names(&real));
    s.shutdown().await;
}

#[tokio::test]
async fn dry_run_on_subresources_status_and_scale() {
    let s = server().await;
    let a = s.addr();
    let mut pod = get(a, &format!("{PODS}/p")).await.json();
    pod["status"] = json!({"phase": "Running"});
    let path = format!("{PODS}/p/status");
    let w = Write {
        method: "PUT",
        path: &path,
        content_type: Some("application/json"),
        body: pod,
    };
    let (dry, _) = dry_then_real(&s, PODS, &w).await;
    assert_eq!(dry.json()["status"]["phase"], "Running");

    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    assert_eq!(post(a, deploys, &d).await.code, 201);
    let path = format!("{deploys}/d/scale");
    let w = Write {
        method: "PATCH",
        path: &path,
        content_type: Some("application/merge-patch+json"),
        body: json!({"spec": {"replicas": 3}}),
    };
    let (dry, _) = dry_then_real(&s, deploys, &w).await;
    assert_eq!(dry.json()["spec"]["replicas"], 3);
    s.shutdown().await;
}

#[tokio::test]
async fn dry_run_still_validates_and_conflicts() {
    let s = server().await;
    let a = s.addr();
    let revision = s.revision();
    // Already exists.
    let dup = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    assert_eq!(post(a, &with_dry_run(CMS), &dup).await.code, 409);
    // Invalid.
    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}});
    let r = post(a, &with_dry_run(CMS), &bad).await;
    assert_eq!(
        (r.code, r.json()["reason"].clone()),
        (422, json!("Invalid"))
    );
    // Stale resourceVersion.
    let stale = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "1"}});
    assert_eq!(
        put(a, &with_dry_run(&format!("{CMS}/a")), &stale)
            .await
            .code,
        409
    );
    // Missing.
    let r = request(
        a,
        "DELETE",
        &with_dry_run(&format!("{CMS}/nope")),
        None,
        b"",
    )
    .await;
    assert_eq!(r.code, 404);
    assert_eq!(s.revision(), revision);
    s.shutdown().await;
}

#[tokio::test]
async fn an_unknown_dry_run_value_is_invalid_on_the_verbs_options() {
    let s = server().await;
    let a = s.addr();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "z"}});
    let r = post(a, &format!("{CMS}?dryRun=Some"), &cm).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Some\"]: supported values: \"All\"",
            "reason": "Invalid",
            "details": {"group": "meta.k8s.io", "kind": "CreateOptions",
                "causes": [{"reason": "FieldValueNotSupported",
                    "message": "Unsupported value: [\"Some\"]: supported values: \"All\"",
                    "field": "dryRun"}]},
            "code": 422})
    );
    let r = request(a, "DELETE", &format!("{CMS}/a?dryRun=x"), None, b"").await;
    assert_eq!(r.code, 422);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("DeleteOptions.meta.k8s.io \"\" is invalid"),
        "{}",
        r.json()
    );
    assert_eq!(get(a, &format!("{CMS}/z")).await.code, 404);
    assert_eq!(get(a, &format!("{CMS}/a")).await.code, 200);
    s.shutdown().await;
}

#[tokio::test]
async fn a_dry_run_crd_serves_nothing() {
    let s = server().await;
    let a = s.addr();
    let crd = widget_crd();
    let r = post(
        a,
        &with_dry_run("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        &crd,
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.json());
    assert_eq!(
        get(a, "/apis/example.com/v1/namespaces/default/widgets")
            .await
            .code,
        404
    );
    s.shutdown().await;
}
