//! The garbage collector inside the server, over HTTP: background, foreground and orphan
//! propagation, `blockOwnerDeletion`, dangling references, owners that are custom resources
//! or cluster-scoped, owners identified by uid, and the switch that turns it off.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use kinformer_apiserver::{ServerConfig, start};
use serde_json::{Value, json};

async fn gone(addr: SocketAddr, path: &str) {
    eventually(addr, path, "expected gone", |c, _| c == 404).await;
}

async fn delete(addr: SocketAddr, path: &str, body: &Value) -> Resp {
    let b = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    request(addr, "DELETE", path, Some("application/json"), &b).await
}

async fn create(addr: SocketAddr, path: &str, body: Value) -> Value {
    let r = post(addr, path, &body).await;
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

fn owner_ref(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"], "kind": owner["kind"],
        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
        "controller": true, "blockOwnerDeletion": block
    })
}

fn rs(name: &str, owners: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "ownerReferences": owners},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

fn pod(name: &str, owners: Value, finalizers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "ownerReferences": owners, "finalizers": finalizers},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

fn cm(name: &str, owners: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "ownerReferences": owners}, "data": {"k": "v"}})
}

const DEPLOY: &str = "/apis/apps/v1/namespaces/default/deployments";
const RS: &str = "/apis/apps/v1/namespaces/default/replicasets";
const PODS: &str = "/api/v1/namespaces/default/pods";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_deletion_cascades_over_two_levels() {
    let server = start(ServerConfig::default()).await.unwrap();
    let addr = server.addr();
    let d = create(addr, DEPLOY, deployment("web")).await;
    let r = create(addr, RS, rs("web-1", json!([owner_ref(&d, true)]))).await;
    for i in 0..3 {
        create(
            addr,
            PODS,
            pod(
                &format!("web-1-{i}"),
                json!([owner_ref(&r, true)]),
                json!([]),
            ),
        )
        .await;
    }
    // No propagationPolicy: background, the owner goes at once.
    let resp = delete(addr, &format!("{DEPLOY}/web"), &Value::Null).await;
    assert_eq!(resp.code, 200);
    assert_eq!(get(addr, &format!("{DEPLOY}/web")).await.code, 404);
    gone(addr, &format!("{RS}/web-1")).await;
    for i in 0..3 {
        gone(addr, &format!("{PODS}/web-1-{i}")).await;
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_resource_owns_a_configmap() {
    let server = start(ServerConfig::default()).await.unwrap();
    let addr = server.addr();
    create(
        addr,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        widget_crd(),
    )
    .await;
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let w = create(
        addr,
        widgets,
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
    )
    .await;
    // A widget owned by the widget too: custom resources are dependents as well.
    create(
        addr,
        widgets,
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w-child", "ownerReferences": [owner_ref(&w, false)]}}),
    )
    .await;
    create(addr, CMS, cm("w-config", json!([owner_ref(&w, false)]))).await;
    assert_eq!(
        delete(addr, &format!("{widgets}/w"), &Value::Null)
            .await
            .code,
        200
    );
    gone(addr, &format!("{CMS}/w-config")).await;
    gone(addr, &format!("{widgets}/w-child")).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let server = start(ServerConfig::default()).await.unwrap();
    let addr = server.addr();
    let r = create(addr, RS, rs("fg", json!([]))).await;
    // The blocking one holds its own finalizer, so it stays (being deleted) for a while.
    create(
        addr,
        PODS,
        pod(
            "fg-block",
            json!([owner_ref(&r, true)]),
            json!(["example.com/hold"]),
        ),
    )
    .await;
    create(
        addr,
        PODS,
        pod("fg-free", json!([owner_ref(&r, false)]), json!([])),
    )
    .await;
    let resp = delete(
        addr,
        &format!("{RS}/fg"),
        &json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}),
    )
    .await;
    assert_eq!(resp.code, 200);
    let v = resp.json();
    assert_eq!(v["kind"], "ReplicaSet");
    assert_eq!(v["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    assert!(v["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        v["metadata"]["generation"], 2,
        "the first mark bumps generation"
    );
    gone(addr, &format!("{PODS}/fg-free")).await;
    eventually(
        addr,
        &format!("{PODS}/fg-block"),
        "blocking pod marked",
        |c, v| c == 200 && v["metadata"]["deletionTimestamp"].is_string(),
    )
    .await;
    // The owner stays while the blocking dependent exists.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let owner = get(addr, &format!("{RS}/fg")).await;
    assert_eq!(owner.code, 200);
    assert_eq!(
        owner.json()["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    let r = request(
        addr,
        "PATCH",
        &format!("{PODS}/fg-block"),
        Some("application/merge-patch+json"),
        br#"{"metadata":{"finalizers":null}}"#,
    )
    .await;
    assert_eq!(r.code, 200);
    gone(addr, &format!("{PODS}/fg-block")).await;
    gone(addr, &format!("{RS}/fg")).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_deletion_of_a_chain_deletes_bottom_up() {
    let server = start(ServerConfig::default()).await.unwrap();
    let addr = server.addr();
    let d = create(addr, DEPLOY, deployment("chain")).await;
    let r = create(addr, RS, rs("chain-1", json!([owner_ref(&d, true)]))).await;
    create(
        addr,
        PODS,
        pod("chain-1-a", json!([owner_ref(&r, true)]), json!([])),
    )
    .await;
    let mut w = watch(
        addr,
        &format!("{DEPLOY}?watch=true&resourceVersion={}", server.revision()),
    )
    .await;
    // kubectl delete --cascade=foreground sends the policy in the body.
    let resp = delete(
        addr,
        &format!("{DEPLOY}/chain"),
        &json!({"propagationPolicy": "Foreground"}),
    )
    .await;
    assert_eq!(resp.code, 200);
    gone(addr, &format!("{PODS}/chain-1-a")).await;
    gone(addr, &format!("{RS}/chain-1")).await;
    gone(addr, &format!("{DEPLOY}/chain")).await;
    // MODIFIED (marked, foregroundDeletion), MODIFIED (finalizer removed is the delete itself:
    // DELETED carries the last state).
    let e1 = w.next_within(SECS).await.unwrap();
    assert_eq!(e1["type"], "MODIFIED");
    assert_eq!(
        e1["object"]["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    let e2 = w.next_within(SECS).await.unwrap();
    assert_eq!(e2["type"], "DELETED");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphan_deletion_strips_the_references_and_keeps_the_dependents() {
    let server = start(ServerConfig::default()).await.unwrap();
    let addr = server.addr();
    let r = create(addr, RS, rs("orph", json!([]))).await;
    let other = create(addr, CMS, cm("other-owner", json!([]))).await;
    create(
        addr,
        PODS,
        pod("orph-a", json!([owner_ref(&r, true)]), json!([])),
    )
    .await;
    create(
        addr,
        PODS,
        pod(
            "orph-b",
            json!([owner_ref(&r, false), owner_ref(&other, false)]),
            json!([]),
        ),
    )
    .await;
    // Query form (no body), as client-go may send it.
    let resp = request(
        addr,
        "DELETE",
        &format!("{RS}/orph?propagationPolicy=Orphan"),
        None,
        b"",
    )
    .await;
    assert_eq!(resp.code, 200);
    assert_eq!(resp.json()["metadata"]["finalizers"], json!(["orphan"]));
    gone(addr, &format!("{RS}/orph")).await;
    let a = get(addr, &format!("{PODS}/orph-a")).await.json();
    assert!(a["metadata"].get("ownerReferences").is_none(), "{a}");
    // The removed field is owned by nobody any more (a manager that only removes fields gets
    // no managedFields entry, as in kube).
    assert!(
        !a["metadata"]["managedFields"]
            .to_string()
            .contains("ownerReferences"),
        "{a}"
    );
    let b = get(addr, &format!("{PODS}/orph-b")).await.json();
    assert_eq!(
        b["metadata"]["ownerReferences"].as_array().unwrap().len(),
        1
    );
    assert_eq!(b["metadata"]["ownerReferences"][0]["name"], "other-owner");

    // orphanDependents=true (deprecated) means the same.
    let r2 = create(addr, RS, rs("orph2", json!([]))).await;
    create(
        addr,
        PODS,
        pod("orph2-a", json!([owner_ref(&r2, true)]), json!([])),
    )
    .await;
    let resp = delete(
        addr,
        &format!("{RS}/orph2"),
        &json!({"orphanDependents": true}),
    )
    .await;
    assert_eq!(resp.json()["metadata"]["finalizers"], json!(["orphan"]));
    gone(addr, &format!("{RS}/orph2")).await;
    assert_eq!(get(addr, &format!("{PODS}/orph2-a")).await.code, 200);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_delete_options_are_refused_as_kube_apiserver_does() {
    let server = start(ServerConfig::default()).await.unwrap();
    let addr = server.addr();
    create(addr, CMS, cm("c", json!([]))).await;
    let r = delete(
        addr,
        &format!("{CMS}/c"),
        &json!({"propagationPolicy": "Sometimes"}),
    )
    .await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.json(),
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sometimes\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
            "reason": "Invalid",
            "details": {"group": "meta.k8s.io", "kind": "DeleteOptions", "causes": [{
                "reason": "FieldValueNotSupported",
                "message": "Unsupported value: \"Sometimes\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                "field": "propagationPolicy"}]},
            "code": 422
        })
    );
    let r = request(
        addr,
        "DELETE",
        &format!("{CMS}?propagationPolicy=Nope"),
        None,
        b"",
    )
    .await;
    assert_eq!(r.code, 422, "deletecollection validates the same options");
    assert_eq!(
        get(addr, &format!("{CMS}/c")).await.code,
        200,
        "nothing was deleted"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dangling_and_wrong_uid_references_are_collected() {
    let server = start(ServerConfig::default()).await.unwrap();
    let addr = server.addr();
    let owner = create(addr, CMS, cm("owner", json!([]))).await;
    // A uid that never existed.
    create(
        addr,
        CMS,
        cm(
            "dangling",
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost",
        "uid": "00000000-0000-4000-8000-000000000000"}]),
        ),
    )
    .await;
    // The right name, another uid: not its owner.
    create(
        addr,
        CMS,
        cm(
            "wrong-uid",
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
        "uid": "00000000-0000-4000-8000-000000000001"}]),
        ),
    )
    .await;
    create(addr, CMS, cm("owned", json!([owner_ref(&owner, false)]))).await;
    // A namespaced owner is looked up in the dependent's namespace only.
    create(
        addr,
        "/api/v1/namespaces/other/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "elsewhere", "ownerReferences": [owner_ref(&owner, false)]}}),
    )
    .await;
    gone(addr, &format!("{CMS}/dangling")).await;
    gone(addr, &format!("{CMS}/wrong-uid")).await;
    gone(addr, "/api/v1/namespaces/other/configmaps/elsewhere").await;
    assert_eq!(get(addr, &format!("{CMS}/owned")).await.code, 200);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependent_with_a_live_owner_only_loses_the_dead_reference() {
    let server = start(ServerConfig::default()).await.unwrap();
    let addr = server.addr();
    let a = create(addr, CMS, cm("a", json!([]))).await;
    let b = create(addr, CMS, cm("b", json!([]))).await;
    create(
        addr,
        CMS,
        cm("both", json!([owner_ref(&a, false), owner_ref(&b, false)])),
    )
    .await;
    assert_eq!(
        delete(addr, &format!("{CMS}/a"), &Value::Null).await.code,
        200
    );
    let v = eventually(addr, &format!("{CMS}/both"), "reference removed", |_, v| {
        v["metadata"]["ownerReferences"]
            .as_array()
            .is_some_and(|r| r.len() == 1)
    })
    .await;
    assert_eq!(v["metadata"]["ownerReferences"][0]["name"], "b");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_scoped_owners_own_namespaced_dependents() {
    let server = start(ServerConfig::default()).await.unwrap();
    let addr = server.addr();
    let role = create(addr, "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "owner-role"}})).await;
    let ns = create(
        addr,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "owner-ns"}}),
    )
    .await;
    create(addr, CMS, cm("by-role", json!([owner_ref(&role, false)]))).await;
    create(addr, CMS, cm("by-ns", json!([owner_ref(&ns, false)]))).await;
    assert_eq!(
        delete(
            addr,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/owner-role",
            &Value::Null
        )
        .await
        .code,
        200
    );
    gone(addr, &format!("{CMS}/by-role")).await;
    assert_eq!(
        delete(addr, "/api/v1/namespaces/owner-ns", &Value::Null)
            .await
            .code,
        200
    );
    gone(addr, "/api/v1/namespaces/owner-ns").await;
    gone(addr, &format!("{CMS}/by-ns")).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switched_off_the_collector_leaves_dependents_alone() {
    let server = start(ServerConfig::default().garbage_collector(false))
        .await
        .unwrap();
    let addr = server.addr();
    let owner = create(addr, CMS, cm("owner", json!([]))).await;
    create(addr, CMS, cm("dep", json!([owner_ref(&owner, false)]))).await;
    create(
        addr,
        CMS,
        cm(
            "dangling",
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "nope"}]),
        ),
    )
    .await;
    assert_eq!(
        delete(addr, &format!("{CMS}/owner"), &Value::Null)
            .await
            .code,
        200
    );
    // Orphan still marks (the apiserver's part), and nothing removes the finalizer.
    let o2 = create(addr, CMS, cm("owner2", json!([]))).await;
    create(addr, CMS, cm("dep2", json!([owner_ref(&o2, false)]))).await;
    let r = delete(
        addr,
        &format!("{CMS}/owner2"),
        &json!({"propagationPolicy": "Orphan"}),
    )
    .await;
    assert_eq!(r.json()["metadata"]["finalizers"], json!(["orphan"]));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(get(addr, &format!("{CMS}/dep")).await.code, 200);
    assert_eq!(get(addr, &format!("{CMS}/dangling")).await.code, 200);
    assert_eq!(get(addr, &format!("{CMS}/owner2")).await.code, 200);
    let d2 = get(addr, &format!("{CMS}/dep2")).await.json();
    assert_eq!(
        d2["metadata"]["ownerReferences"].as_array().unwrap().len(),
        1
    );
    server.shutdown().await;
}

/// A small xorshift generator: reproducible random graphs without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Random owner graphs (a DAG of ConfigMaps, up to three owners each, random
/// `blockOwnerDeletion`), random deletions with random propagation: once the collector is quiet,
/// no live object references a dead owner and no object is stuck with a garbage-collection
/// finalizer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_owner_graphs_leave_no_reference_to_a_dead_owner() {
    for seed in 1..=6u64 {
        let server = start(ServerConfig::default()).await.unwrap();
        let addr = server.addr();
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut made: Vec<Value> = Vec::new();
        for i in 0..30 {
            let mut owners = Vec::new();
            if i > 0 {
                for _ in 0..rng.below(4) {
                    let o = &made[rng.below(i as u64) as usize];
                    if !owners
                        .iter()
                        .any(|r: &Value| r["uid"] == o["metadata"]["uid"])
                    {
                        owners.push(owner_ref(o, rng.below(2) == 0));
                    }
                }
            }
            made.push(create(addr, CMS, cm(&format!("n{i}"), Value::Array(owners))).await);
        }
        for _ in 0..10 {
            let victim = rng.below(30);
            let policy = ["Background", "Foreground", "Orphan"][rng.below(3) as usize];
            let r = delete(
                addr,
                &format!("{CMS}/n{victim}"),
                &json!({"propagationPolicy": policy}),
            )
            .await;
            assert!(r.code == 200 || r.code == 404, "{}", r.code);
        }
        let deadline = tokio::time::Instant::now() + SECS;
        loop {
            let state = server.state("configmaps", Some("default")).unwrap();
            let live: std::collections::HashSet<String> =
                state.objects.iter().map(|o| o.uid.clone()).collect();
            let bad: Vec<String> = state
                .objects
                .iter()
                .filter(|o| {
                    let m = &o.object["metadata"];
                    let dead_ref = m["ownerReferences"].as_array().is_some_and(|refs| {
                        refs.iter()
                            .any(|r| !live.contains(r["uid"].as_str().unwrap_or("")))
                    });
                    let stuck = m["finalizers"].as_array().is_some_and(|f| {
                        f.iter().any(|x| x == "orphan" || x == "foregroundDeletion")
                    });
                    dead_ref || stuck
                })
                .map(|o| o.object.to_string())
                .collect();
            if bad.is_empty() {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "seed {seed}: still {bad:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletecollection_and_the_job_default_follow_the_same_rules() {
    let server = start(ServerConfig::default()).await.unwrap();
    let addr = server.addr();
    for n in ["c1", "c2"] {
        let r = create(addr, RS, rs(n, json!([]))).await;
        create(
            addr,
            PODS,
            pod(&format!("{n}-p"), json!([owner_ref(&r, true)]), json!([])),
        )
        .await;
    }
    let r = delete(addr, RS, &json!({"propagationPolicy": "Orphan"})).await;
    assert_eq!(r.code, 200);
    let items = r.json()["items"].clone();
    assert_eq!(items.as_array().unwrap().len(), 2);
    // kube-apiserver's registry answers a deletecollection with the list it deleted from, as
    // listed: the items are the objects before their delete added the orphan finalizer.
    assert!(
        items
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["metadata"].get("finalizers").is_none()),
        "{items}"
    );
    for n in ["c1", "c2"] {
        gone(addr, &format!("{RS}/{n}")).await;
        let p = get(addr, &format!("{PODS}/{n}-p")).await.json();
        assert!(p["metadata"].get("ownerReferences").is_none(), "{p}");
    }
    // batch/v1 Jobs default to orphan (kube-apiserver keeps that for compatibility; kubectl
    // sends Background explicitly).
    let job = create(addr, "/apis/batch/v1/namespaces/default/jobs", json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}
    })).await;
    create(
        addr,
        PODS,
        pod("j-p", json!([owner_ref(&job, true)]), json!([])),
    )
    .await;
    let r = delete(
        addr,
        "/apis/batch/v1/namespaces/default/jobs/j",
        &Value::Null,
    )
    .await;
    assert_eq!(r.json()["metadata"]["finalizers"], json!(["orphan"]));
    gone(addr, "/apis/batch/v1/namespaces/default/jobs/j").await;
    let p = eventually(addr, &format!("{PODS}/j-p"), "orphaned", |c, v| {
        c == 200 && v["metadata"].get("ownerReferences").is_none()
    })
    .await;
    assert_eq!(p["metadata"]["name"], "j-p");
    server.shutdown().await;
}
