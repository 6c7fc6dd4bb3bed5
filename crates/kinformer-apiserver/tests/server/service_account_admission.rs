//! kube-apiserver's ServiceAccount admission on created Pods, through kube-rs: a Pod naming an
//! account that does not exist is refused (403, in kube-apiserver's words, dry runs too), a
//! Pod without pull secrets gets its account's, a fresh namespace's Pods are admitted before
//! the controller has written `default`, and mirror pods get nothing and may reference neither
//! accounts nor secrets.

use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

fn pod(meta: Value, spec: Value) -> Pod {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "c", "image": "nginx:1.27"}]);
    serde_json::from_value(json!({"metadata": meta, "spec": spec})).unwrap()
}

/// The 403 a create got, as (reason, message).
async fn refused(pods: &Api<Pod>, pp: &PostParams, p: &Pod) -> (String, String) {
    match pods.create(pp, p).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 403, "{s:?}");
            (s.reason, s.message)
        }
        other => panic!("expected a 403, got {other:?}"),
    }
}

#[tokio::test]
async fn a_pod_naming_a_missing_service_account_is_refused_until_it_exists() {
    let s = start(ServerConfig::default()).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    let pp = PostParams::default();
    let ghost = pod(json!({"name": "p"}), json!({"serviceAccountName": "ghost"}));
    let (reason, message) = refused(&pods, &pp, &ghost).await;
    assert_eq!(reason, "Forbidden");
    assert_eq!(
        message,
        "pods \"p\" is forbidden: error looking up service account default/ghost: serviceaccount \"ghost\" not found"
    );
    // a generated name is not known yet: the refusal names the prefix
    let generated = pod(
        json!({"generateName": "p-"}),
        json!({"serviceAccount": "ghost"}),
    );
    let (_, message) = refused(&pods, &pp, &generated).await;
    assert!(
        message.starts_with(
            "pods \"p-\" is forbidden: error looking up service account default/ghost"
        ),
        "{message}"
    );
    // a dry run is refused alike, and admission comes before validation
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    refused(&pods, &dry, &ghost).await;
    let mut invalid = ghost.clone();
    invalid.spec.as_mut().unwrap().containers.clear();
    refused(&pods, &pp, &invalid).await;
    assert!(
        pods.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    let accounts: Api<ServiceAccount> = Api::namespaced(s.client(), "default");
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "ghost"}})).unwrap();
    accounts.create(&pp, &sa).await.unwrap();
    let created = pods.create(&pp, &ghost).await.unwrap();
    let spec = created.spec.unwrap();
    assert_eq!(spec.service_account_name.as_deref(), Some("ghost"));
    assert_eq!(spec.service_account.as_deref(), Some("ghost"));
    s.shutdown().await;
}

#[tokio::test]
async fn a_pod_without_pull_secrets_gets_its_accounts() {
    let s = start(ServerConfig::default()).await.unwrap();
    let pp = PostParams::default();
    let accounts: Api<ServiceAccount> = Api::namespaced(s.client(), "default");
    let sa: ServiceAccount = serde_json::from_value(json!({
        "metadata": {"name": "puller"},
        "imagePullSecrets": [{"name": "registry"}, {"name": "mirror"}]
    }))
    .unwrap();
    accounts.create(&pp, &sa).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    let names = |p: Pod| -> Vec<String> {
        p.spec
            .unwrap()
            .image_pull_secrets
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.name)
            .collect()
    };
    let plain = pods
        .create(
            &pp,
            &pod(
                json!({"name": "a"}),
                json!({"serviceAccountName": "puller"}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(names(plain), ["registry", "mirror"]);
    let own = pods
        .create(
            &pp,
            &pod(
                json!({"name": "b"}),
                json!({"serviceAccountName": "puller", "imagePullSecrets": [{"name": "mine"}]}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(names(own), ["mine"]);
    // `default` has none
    let none = pods
        .create(&pp, &pod(json!({"name": "c"}), json!({})))
        .await
        .unwrap();
    assert!(names(none).is_empty());
    s.shutdown().await;
}

#[tokio::test]
async fn a_fresh_namespaces_pods_are_admitted_at_once() {
    let s = start(ServerConfig::standalone()).await.unwrap();
    let pp = PostParams::default();
    let namespaces: Api<Namespace> = Api::all(s.client());
    for i in 0..20 {
        let name = format!("fresh-{i}");
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        namespaces.create(&pp, &ns).await.unwrap();
        // no wait for the controller's `default`
        let pods: Api<Pod> = Api::namespaced(s.client(), &name);
        let created = pods
            .create(&pp, &pod(json!({"name": "p"}), json!({})))
            .await
            .unwrap();
        assert_eq!(
            created.spec.unwrap().service_account_name.as_deref(),
            Some("default")
        );
        // another account is looked up
        let (_, message) = refused(
            &pods,
            &pp,
            &pod(json!({"name": "q"}), json!({"serviceAccountName": "robot"})),
        )
        .await;
        assert!(message.contains(&format!("{name}/robot")), "{message}");
    }
    s.shutdown().await;
}

#[tokio::test]
async fn where_no_namespace_was_created_any_account_is_taken() {
    // in process, namespaces are not enforced: a namespace nobody created holds no accounts,
    // and a test that never creates one still creates its Pods
    let s = start(ServerConfig::default()).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(s.client(), "nowhere");
    let created = pods
        .create(
            &PostParams::default(),
            &pod(json!({"name": "p"}), json!({"serviceAccountName": "robot"})),
        )
        .await
        .unwrap();
    let spec = created.spec.unwrap();
    assert_eq!(spec.service_account_name.as_deref(), Some("robot"));
    assert!(
        spec.volumes.unwrap()[0]
            .name
            .starts_with("kube-api-access-")
    );
    s.shutdown().await;
}

#[tokio::test]
async fn without_the_service_account_controller_default_must_exist_too() {
    // a bare API server (envtest's) refuses Pods until somebody creates `default`
    let s = start(ServerConfig::standalone().service_account_controller(false))
        .await
        .unwrap();
    let pp = PostParams::default();
    let namespaces: Api<Namespace> = Api::all(s.client());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "bare"}})).unwrap();
    namespaces.create(&pp, &ns).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(s.client(), "bare");
    let p = pod(json!({"name": "p"}), json!({}));
    let (_, message) = refused(&pods, &pp, &p).await;
    assert_eq!(
        message,
        "pods \"p\" is forbidden: error looking up service account bare/default: serviceaccount \"default\" not found"
    );
    let accounts: Api<ServiceAccount> = Api::namespaced(s.client(), "bare");
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    accounts.create(&pp, &sa).await.unwrap();
    pods.create(&pp, &p).await.unwrap();
    s.shutdown().await;
}

#[tokio::test]
async fn a_mirror_pod_gets_nothing_and_may_reference_no_account_nor_secret() {
    let s = start(ServerConfig::default()).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    let pp = PostParams::default();
    let mirror =
        |name: &str| json!({"name": name, "annotations": {"kubernetes.io/config.mirror": "hash"}});
    let created = pods
        .create(
            &pp,
            &pod(mirror("static-node1"), json!({"nodeName": "node1"})),
        )
        .await
        .unwrap();
    let spec = created.spec.unwrap();
    assert_eq!(spec.service_account_name, None);
    assert_eq!(spec.volumes, None);
    assert_eq!(spec.containers[0].volume_mounts, None);
    for (spec, why) in [
        (
            json!({"serviceAccountName": "default"}),
            "a mirror pod may not reference service accounts",
        ),
        (
            json!({"imagePullSecrets": [{"name": "registry"}]}),
            "a mirror pod may not reference secrets",
        ),
        (
            json!({"volumes": [{"name": "v", "projected": {"sources": [{"secret": {"name": "s"}}]}}]}),
            "a mirror pod may not reference secrets",
        ),
        (
            json!({"volumes": [{"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]}),
            "a mirror pod may not use ServiceAccountToken volume projections",
        ),
    ] {
        let (_, message) = refused(&pods, &pp, &pod(mirror("m"), spec.clone())).await;
        assert_eq!(message, format!("pods \"m\" is forbidden: {why}"), "{spec}");
    }
    // a secret in a container's environment
    let mut p = pod(mirror("m"), json!({}));
    p.spec.as_mut().unwrap().containers[0].env = Some(vec![
        serde_json::from_value(json!(
            {"name": "E", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
        ))
        .unwrap(),
    ]);
    let (_, message) = refused(&pods, &pp, &p).await;
    assert!(
        message.ends_with("a mirror pod may not reference secrets"),
        "{message}"
    );
    s.shutdown().await;
}
