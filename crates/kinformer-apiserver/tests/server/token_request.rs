//! Service account tokens over HTTP: `serviceaccounts/{name}/token` answers a TokenRequest
//! with a signed JWT (kube's claims, expiry bounds, 404 for a missing service account, bound
//! object checks), the server accepts that JWT as a bearer token over TLS (a tampered one or
//! one of a deleted service account is 401; a SelfSubjectReview names the service account),
//! and a TokenReview authenticates it.

use crate::common;

use base64::Engine;
use common::{get, post, request};
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};

const TOKEN: &str = "/api/v1/namespaces/default/serviceaccounts/builder/token";
const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

fn claims(jwt: &str) -> Value {
    let part = jwt.split('.').nth(1).unwrap();
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .unwrap();
    serde_json::from_slice(&raw).unwrap()
}

fn token_request(spec: Value) -> Value {
    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
}

#[tokio::test]
async fn token_requests_answer_signed_tokens_that_token_reviews_accept() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    // no service account yet: 404 as kube-apiserver answers
    let r = post(a, TOKEN, &token_request(json!({}))).await;
    assert_eq!(r.code, 404);
    assert_eq!(r.json()["message"], "serviceaccounts \"builder\" not found");
    let sa = post(
        a,
        "/api/v1/namespaces/default/serviceaccounts",
        &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"}}),
    )
    .await;
    assert_eq!(sa.code, 201);
    let sa_uid = sa.json()["metadata"]["uid"].as_str().unwrap().to_string();

    let r = post(a, TOKEN, &token_request(json!({}))).await;
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    let tr = r.json();
    assert_eq!(tr["kind"], "TokenRequest");
    assert_eq!(tr["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(tr["metadata"]["name"], "builder");
    assert_eq!(tr["metadata"]["namespace"], "default");
    assert_eq!(tr["spec"]["expirationSeconds"], 3600);
    assert_eq!(tr["spec"]["audiences"], json!([ISSUER]));
    let token = tr["status"]["token"].as_str().unwrap();
    let c = claims(token);
    assert_eq!(c["iss"], ISSUER);
    assert_eq!(c["sub"], "system:serviceaccount:default:builder");
    assert_eq!(c["aud"], json!([ISSUER]));
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        3600
    );
    assert_eq!(c["nbf"], c["iat"]);
    assert_eq!(c["jti"].as_str().unwrap().len(), 36);
    assert_eq!(
        c["kubernetes.io"],
        json!({"namespace": "default", "serviceaccount": {"name": "builder", "uid": sa_uid}})
    );
    let expires = tr["status"]["expirationTimestamp"].as_str().unwrap();
    let expires: jiff::Timestamp = expires.parse().unwrap();
    assert_eq!(expires.as_second(), c["exp"].as_i64().unwrap());

    // expiry bounds: 10 minutes at least
    let r = post(a, TOKEN, &token_request(json!({"expirationSeconds": 599}))).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.json()["message"],
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
    );
    let r = post(a, TOKEN, &token_request(json!({"expirationSeconds": 600}))).await;
    assert_eq!(r.code, 201);
    let c = claims(r.json()["status"]["token"].as_str().unwrap());
    assert_eq!(c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(), 600);
    // only POST; bound objects must exist and be of a bindable kind
    assert_eq!(get(a, TOKEN).await.code, 405);
    let bound = |kind: &str, name: &str| {
        token_request(json!({"boundObjectRef": {"apiVersion": "v1", "kind": kind, "name": name}}))
    };
    let r = post(a, TOKEN, &bound("ConfigMap", "c")).await;
    assert_eq!(r.code, 400);
    assert_eq!(
        r.json()["message"],
        "cannot bind token to object of type /v1, Kind=ConfigMap"
    );
    assert_eq!(post(a, TOKEN, &bound("Secret", "missing")).await.code, 404);

    // A TokenReview authenticates the token as its service account.
    let reviews = "/apis/authentication.k8s.io/v1/tokenreviews";
    let review = |token: &str, auds: Value| {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
               "spec": {"token": token, "audiences": auds}})
    };
    let r = post(a, reviews, &review(token, json!([]))).await;
    assert_eq!(r.code, 201);
    let st = &r.json()["status"];
    assert_eq!(st["authenticated"], true, "{st}");
    assert_eq!(
        st["user"]["username"],
        "system:serviceaccount:default:builder"
    );
    assert_eq!(st["user"]["uid"], sa_uid.as_str());
    assert_eq!(
        st["user"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    assert_eq!(st["audiences"], json!([ISSUER]));
    let r = post(a, reviews, &review(token, json!(["elsewhere"]))).await;
    assert_eq!(r.json()["status"].get("authenticated"), None);
    assert!(r.json()["status"]["error"].is_string());
    s.shutdown().await;
}

/// A kube client from the server's kubeconfig with `token` as its bearer token.
async fn client_with(s: &kinformer_apiserver::RunningServer, token: &str) -> kube::Client {
    common::kube_client(s, Some(token), None, &[]).await
}

async fn list_code(client: kube::Client) -> u16 {
    let pods: Api<Pod> = Api::namespaced(client, "default");
    match pods.list(&ListParams::default()).await {
        Ok(_) => 200,
        Err(kube::Error::Api(e)) => e.code,
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn service_account_tokens_authenticate_over_tls() {
    let s = start(ServerConfig::default().tls(true)).await.unwrap();
    let sas: Api<ServiceAccount> = Api::namespaced(s.client(), "default");
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "builder"}})).unwrap();
    sas.create(&PostParams::default(), &sa).await.unwrap();
    // built and read through JSON: `spec` and `status.token` are optional from k8s-openapi's 1.36
    let tr: TokenRequest =
        serde_json::from_value(json!({"spec": {"expirationSeconds": 3600}})).unwrap();
    let tr = sas
        .create_token_request("builder", &PostParams::default(), &tr)
        .await
        .unwrap();
    let token = serde_json::to_value(&tr).unwrap()["status"]["token"]
        .as_str()
        .unwrap()
        .to_string();

    // authenticated (not 401) and, with RBAC as on a real cluster, allowed nothing yet: 403
    assert_eq!(list_code(client_with(&s, &token).await).await, 403);
    let bindings: Api<RoleBinding> = Api::namespaced(s.client(), "default");
    let view: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "builder-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "builder", "namespace": "default"}],
    }))
    .unwrap();
    bindings
        .create(&PostParams::default(), &view)
        .await
        .unwrap();
    assert_eq!(list_code(client_with(&s, &token).await).await, 200);
    // `kubectl auth whoami`: the service account
    let ssr = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("Content-Type", "application/json")
        .body(
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
                .to_string()
                .into_bytes(),
        )
        .unwrap();
    let who: Value = client_with(&s, &token).await.request(ssr).await.unwrap();
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:default:builder"
    );
    assert_eq!(
        who["status"]["userInfo"]["groups"][1],
        "system:serviceaccounts:default"
    );
    // a flipped signature byte, or claims edited, are refused
    let mut tampered = token.clone().into_bytes();
    let last = tampered.len() - 2;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    assert_eq!(list_code(client_with(&s, &tampered).await).await, 401);
    let parts: Vec<&str> = token.split('.').collect();
    let mut c = claims(&token);
    c["sub"] = json!("system:serviceaccount:default:admin");
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(c.to_string()),
        parts[2]
    );
    assert_eq!(list_code(client_with(&s, &forged).await).await, 401);
    // the token dies with its service account
    sas.delete("builder", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(list_code(client_with(&s, &token).await).await, 401);
    s.shutdown().await;
}

#[tokio::test]
async fn a_token_bound_to_a_pod_names_it_and_dies_with_it() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    // a Pod's account must exist (the ServiceAccount admission)
    for name in ["builder", "other"] {
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}});
        assert_eq!(
            post(a, "/api/v1/namespaces/default/serviceaccounts", &sa)
                .await
                .code,
            201
        );
    }
    let pod = |sa: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("p-{sa}")},
               "spec": {"serviceAccountName": sa, "nodeName": "n1",
                        "containers": [{"name": "c", "image": "i"}]}})
    };
    let p = post(a, "/api/v1/namespaces/default/pods", &pod("builder")).await;
    assert_eq!(p.code, 201);
    let pod_uid = p.json()["metadata"]["uid"].as_str().unwrap().to_string();
    assert_eq!(
        post(a, "/api/v1/namespaces/default/pods", &pod("other"))
            .await
            .code,
        201
    );
    let bound = |name: &str, uid: &str| {
        token_request(
            json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid}}),
        )
    };
    // a pod of another service account, a wrong uid
    let r = post(a, TOKEN, &bound("p-other", "")).await;
    assert_eq!(r.code, 400);
    assert_eq!(
        r.json()["message"],
        "cannot bind token for serviceaccount \"builder\" to pod running with different serviceaccount name."
    );
    assert_eq!(post(a, TOKEN, &bound("p-builder", "wrong")).await.code, 409);
    let r = post(a, TOKEN, &bound("p-builder", &pod_uid)).await;
    assert_eq!(r.code, 201);
    let token = r.json()["status"]["token"].as_str().unwrap().to_string();
    let c = claims(&token);
    assert_eq!(
        c["kubernetes.io"]["pod"],
        json!({"name": "p-builder", "uid": pod_uid})
    );
    assert_eq!(c["kubernetes.io"]["node"]["name"], "n1");
    let reviews = "/apis/authentication.k8s.io/v1/tokenreviews";
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                        "spec": {"token": token}});
    let st = post(a, reviews, &review).await.json()["status"].clone();
    assert_eq!(st["authenticated"], true, "{st}");
    assert_eq!(
        st["user"]["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["p-builder"])
    );
    let del = request(
        a,
        "DELETE",
        "/api/v1/namespaces/default/pods/p-builder",
        None,
        b"",
    )
    .await;
    assert_eq!(del.code, 200);
    let st = post(a, reviews, &review).await.json()["status"].clone();
    assert_eq!(
        st["error"], "service account token has been invalidated",
        "{st}"
    );
    s.shutdown().await;
}
