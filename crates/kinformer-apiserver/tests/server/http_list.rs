//! LIST semantics over raw HTTP: selectors, pagination, resourceVersion matching, errors.

use crate::common;

use std::time::Duration;

use common::*;
use kinformer_apiserver::{ServerConfig, start};
use serde_json::{Value, json};

/// kube-apiserver's message for a continue token whose revision was compacted.
const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

async fn seeded() -> kinformer_apiserver::RunningServer {
    let s = start(ServerConfig::default().too_large_wait(Duration::from_millis(50)))
        .await
        .unwrap();
    let pods = [
        ("a", json!({"app": "web", "tier": "front"})),
        ("b", json!({"app": "web", "tier": "back"})),
        ("c", json!({"app": "db"})),
        ("d", json!({"env": "prod"})),
    ];
    for (n, l) in pods {
        assert_eq!(
            post(s.addr(), "/api/v1/namespaces/default/pods", &pod_json(n, l))
                .await
                .code,
            201
        );
    }
    post(s.addr(), "/api/v1/namespaces/kube-system", &json!({})).await;
    assert_eq!(
        post(
            s.addr(),
            "/api/v1/namespaces/kube-system/pods",
            &pod_json("sys", json!({"app": "web"}))
        )
        .await
        .code,
        201
    );
    s
}

#[tokio::test]
async fn list_shape_and_resource_version() {
    let s = seeded().await;
    let l = get(s.addr(), "/api/v1/pods").await.json();
    assert_eq!(l["kind"], "PodList");
    assert_eq!(l["apiVersion"], "v1");
    assert_eq!(l["metadata"]["resourceVersion"], s.revision().to_string());
    // kube-apiserver's list items carry no kind/apiVersion (e2e/diff, every list step);
    // GET and watch objects do.
    for item in l["items"].as_array().unwrap() {
        assert!(item.get("kind").is_none(), "{item}");
        assert!(item.get("apiVersion").is_none(), "{item}");
        assert!(item["metadata"]["name"].is_string());
    }
    let one = get(s.addr(), "/api/v1/namespaces/default/pods/a")
        .await
        .json();
    assert_eq!(
        (one["kind"].as_str(), one["apiVersion"].as_str()),
        (Some("Pod"), Some("v1"))
    );
    assert_eq!(names(&l), ["a", "b", "c", "d", "sys"]);
    let l = get(s.addr(), "/api/v1/namespaces/kube-system/pods")
        .await
        .json();
    assert_eq!(names(&l), ["sys"]);
    let l = get(s.addr(), "/apis/apps/v1/deployments").await.json();
    assert_eq!(l["kind"], "DeploymentList");
    assert_eq!(l["apiVersion"], "apps/v1");
    assert_eq!(l["items"], json!([]));
    s.shutdown().await;
}

#[tokio::test]
async fn label_selectors() {
    let s = seeded().await;
    let cases = [
        ("app=web", vec!["a", "b"]),
        ("app==web", vec!["a", "b"]),
        ("app!=web", vec!["c", "d"]),
        ("app in (web,db)", vec!["a", "b", "c"]),
        ("app notin (web)", vec!["c", "d"]),
        ("tier", vec!["a", "b"]),
        ("!app", vec!["d"]),
        ("app=web,tier=back", vec!["b"]),
    ];
    for (sel, want) in cases {
        let l = get(
            s.addr(),
            &format!("/api/v1/namespaces/default/pods?labelSelector={}", enc(sel)),
        )
        .await
        .json();
        assert_eq!(names(&l), want, "{sel}");
    }
    for bad in ["app in (web", "a b", "=x", "app=%%"] {
        let r = get(
            s.addr(),
            &format!("/api/v1/pods?labelSelector={}", enc(bad)),
        )
        .await;
        assert_eq!(r.code, 400, "{bad}");
        assert_eq!(r.json()["reason"], "BadRequest");
    }
    s.shutdown().await;
}

#[tokio::test]
async fn field_selectors() {
    let s = seeded().await;
    let l = get(
        s.addr(),
        &format!("/api/v1/pods?fieldSelector={}", enc("metadata.name=c")),
    )
    .await
    .json();
    assert_eq!(names(&l), ["c"]);
    let l = get(
        s.addr(),
        &format!(
            "/api/v1/pods?fieldSelector={}",
            enc("metadata.namespace!=default")
        ),
    )
    .await
    .json();
    assert_eq!(names(&l), ["sys"]);
    let l = get(
        s.addr(),
        &format!(
            "/api/v1/pods?fieldSelector={}",
            enc("metadata.namespace==default,metadata.name!=a")
        ),
    )
    .await
    .json();
    assert_eq!(names(&l), ["b", "c", "d"]);
    let r = get(
        s.addr(),
        &format!("/api/v1/pods?fieldSelector={}", enc("spec.bogus=x")),
    )
    .await;
    assert_eq!(r.code, 400);
    assert_eq!(r.json()["message"], "field label not supported: spec.bogus");
    // Kinds without their own field label conversion use apimachinery's default message
    // (kube-apiserver v1.35, e2e/diff "bad-request / list-bad-field-selector").
    let r = get(
        s.addr(),
        &format!("/api/v1/configmaps?fieldSelector={}", enc("spec.nothing=x")),
    )
    .await;
    assert_eq!(r.code, 400);
    assert_eq!(
        r.json()["message"],
        "\"spec.nothing\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    let r = get(
        s.addr(),
        &format!("/api/v1/pods?fieldSelector={}", enc("metadata.name")),
    )
    .await;
    assert_eq!(r.code, 400);
    s.shutdown().await;
}

#[tokio::test]
async fn pagination_with_continue_and_remaining_count() {
    let s = seeded().await;
    let a = s.addr();
    let p1 = get(a, "/api/v1/pods?limit=2").await.json();
    assert_eq!(names(&p1), ["a", "b"]);
    assert_eq!(p1["metadata"]["remainingItemCount"], 3);
    let rv = p1["metadata"]["resourceVersion"].clone();
    // A write between pages does not show up: pages are read at the first page's revision.
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("bb", json!({})),
    )
    .await;
    let c = p1["metadata"]["continue"].as_str().unwrap();
    let p2 = get(a, &format!("/api/v1/pods?limit=2&continue={}", enc(c)))
        .await
        .json();
    assert_eq!(names(&p2), ["c", "d"]);
    assert_eq!(p2["metadata"]["resourceVersion"], rv);
    assert_eq!(p2["metadata"]["remainingItemCount"], 1);
    let c = p2["metadata"]["continue"].as_str().unwrap();
    let p3 = get(a, &format!("/api/v1/pods?limit=2&continue={}", enc(c)))
        .await
        .json();
    assert_eq!(names(&p3), ["sys"]);
    assert!(p3["metadata"].get("continue").is_none());
    assert!(p3["metadata"].get("remainingItemCount").is_none());
    // With a selector: no remainingItemCount, as the real server.
    let p = get(
        a,
        &format!("/api/v1/pods?limit=1&labelSelector={}", enc("app=web")),
    )
    .await
    .json();
    assert_eq!(names(&p), ["a"]);
    assert!(p["metadata"]["continue"].is_string());
    assert!(p["metadata"].get("remainingItemCount").is_none());
    // Garbage and conflicting continue parameters: 400.
    let r = get(a, "/api/v1/pods?limit=2&continue=garbage").await;
    assert_eq!(r.code, 400);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid continue token: continue key is not valid")
    );
    let r = get(
        a,
        &format!("/api/v1/pods?limit=2&resourceVersion=3&continue={}", enc(c)),
    )
    .await;
    assert_eq!(r.code, 400);
    assert_eq!(
        r.json()["message"],
        "specifying resource version is not allowed when using continue"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn expired_continue_token_is_410_with_a_fresh_token() {
    let s = seeded().await;
    let a = s.addr();
    let p1 = get(a, "/api/v1/pods?limit=2").await.json();
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("e", json!({})),
    )
    .await;
    s.faults().compact_now();
    let c = p1["metadata"]["continue"].as_str().unwrap();
    let r = get(a, &format!("/api/v1/pods?limit=2&continue={}", enc(c))).await;
    assert_eq!(r.code, 410);
    let st = r.json();
    assert_eq!(st["reason"], "Expired");
    assert_eq!(st["message"], INCONSISTENT_CONTINUE);
    let fresh = st["metadata"]["continue"].as_str().unwrap();
    // The fresh token continues at the latest revision (inconsistent, includes "e").
    let r = get(a, &format!("/api/v1/pods?limit=10&continue={}", enc(fresh)))
        .await
        .json();
    assert_eq!(names(&r), ["c", "d", "e", "sys"]);
    s.shutdown().await;
}

#[tokio::test]
async fn resource_version_semantics() {
    let s = seeded().await;
    let a = s.addr();
    let before: u64 = get(a, "/api/v1/pods").await.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    request(a, "DELETE", "/api/v1/namespaces/default/pods/a", None, b"").await;
    // Exact: the state at that revision.
    let l = get(
        a,
        &format!("/api/v1/pods?resourceVersion={before}&resourceVersionMatch=Exact"),
    )
    .await
    .json();
    assert_eq!(names(&l), ["a", "b", "c", "d", "sys"]);
    assert_eq!(l["metadata"]["resourceVersion"], before.to_string());
    // Legacy: resourceVersion=N with limit is exact too.
    let l = get(
        a,
        &format!("/api/v1/pods?resourceVersion={before}&limit=10"),
    )
    .await
    .json();
    assert_eq!(names(&l).len(), 5);
    // NotOlderThan: the latest state.
    let l = get(
        a,
        &format!("/api/v1/pods?resourceVersion={before}&resourceVersionMatch=NotOlderThan"),
    )
    .await
    .json();
    assert_eq!(names(&l), ["b", "c", "d", "sys"]);
    assert_eq!(l["metadata"]["resourceVersion"], s.revision().to_string());
    // "0": any; limit ignored (served whole, like the watch cache).
    let l = get(a, "/api/v1/pods?resourceVersion=0&limit=1")
        .await
        .json();
    assert_eq!(names(&l).len(), 4);
    assert!(l["metadata"].get("continue").is_none());
    // Compacted: 410 with the real message.
    s.faults().compact_now();
    let r = get(
        a,
        &format!("/api/v1/pods?resourceVersion={before}&resourceVersionMatch=Exact"),
    )
    .await;
    assert_eq!(r.code, 410);
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "The resourceVersion for the provided list is too old.", "reason": "Expired", "code": 410})
    );
    // Future: 504 Timeout with the ResourceVersionTooLarge cause, after a short wait.
    let cur = s.revision();
    let r = get(
        a,
        &format!(
            "/api/v1/pods?resourceVersion={}&resourceVersionMatch=NotOlderThan",
            cur + 100
        ),
    )
    .await;
    assert_eq!(r.code, 504);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("Timeout: Too large resource version: {}, current: {}", cur + 100, cur),
               "reason": "Timeout",
               "details": {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1},
               "code": 504})
    );
    let r = get(
        a,
        &format!(
            "/api/v1/pods?resourceVersion={}&resourceVersionMatch=Exact",
            cur + 100
        ),
    )
    .await;
    assert_eq!(r.code, 504);
    // Invalid combinations: 422 / 400.
    let r = get(a, "/api/v1/pods?resourceVersionMatch=Exact").await;
    assert_eq!(r.code, 422);
    assert_eq!(r.json()["details"]["kind"], "ListOptions");
    assert_eq!(get(a, "/api/v1/pods?resourceVersion=abc").await.code, 400);
    assert_eq!(get(a, "/api/v1/pods?limit=x").await.code, 400);
    s.shutdown().await;
}

#[tokio::test]
async fn a_future_resource_version_is_served_once_reached() {
    let s = start(ServerConfig::default().too_large_wait(Duration::from_secs(5)))
        .await
        .unwrap();
    let a = s.addr();
    let target = s.revision() + 1;
    let mut req = tokio::spawn(async move {
        get(
            a,
            &format!("/api/v1/pods?resourceVersion={target}&resourceVersionMatch=NotOlderThan"),
        )
        .await
    });
    // The list waits for the revision...
    assert!(
        tokio::time::timeout(Duration::from_millis(200), &mut req)
            .await
            .is_err(),
        "still waiting"
    );
    // ...and a write reaches it.
    post(
        a,
        "/api/v1/namespaces/default/pods",
        &pod_json("late", json!({})),
    )
    .await;
    let r = req.await.unwrap();
    assert_eq!(r.code, 200);
    assert_eq!(names(&r.json()), ["late"]);
    s.shutdown().await;
}

/// kube-apiserver v1.35 (e2e/diff "too-large-rv / get-future"): a GET at a resourceVersion the
/// server has not reached is 504 Timeout with the `ResourceVersionTooLarge` cause; at a reached
/// one it reads the object.
#[tokio::test]
async fn get_at_a_future_resource_version_is_504_too_large() {
    let s = seeded().await;
    let current = s.revision();
    let r = get(
        s.addr(),
        &format!(
            "/api/v1/namespaces/default/pods/a?resourceVersion={}",
            current + 100
        ),
    )
    .await;
    assert_eq!(r.code, 504);
    let body = r.json();
    assert_eq!(body["reason"], "Timeout");
    assert_eq!(
        body["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    assert_eq!(
        body["message"],
        format!(
            "Timeout: Too large resource version: {}, current: {current}",
            current + 100
        )
    );
    let r = get(
        s.addr(),
        &format!("/api/v1/namespaces/default/pods/a?resourceVersion={current}"),
    )
    .await;
    assert_eq!(r.code, 200);
    assert_eq!(r.json()["metadata"]["name"], "a");
    s.shutdown().await;
}
