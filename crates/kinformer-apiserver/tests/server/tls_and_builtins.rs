//! The server as a test cluster: TLS with a generated CA and a bearer token (without one a
//! request is `system:anonymous`, 403 as on kube-apiserver; a wrong one 401),
//! the built-in kinds beyond the original eight (leases, jobs, service accounts, ...) with
//! their subresources, the access reviews `kubectl auth can-i` sends, and `/metrics`.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

async fn tls_server() -> kinformer_apiserver::RunningServer {
    start(ServerConfig::default().tls(true)).await.unwrap()
}

/// A client from the server's kubeconfig without its token.
async fn anonymous(s: &kinformer_apiserver::RunningServer) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(&s.kubeconfig()).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    config.auth_info.token = None;
    kube::Client::try_from(config).unwrap()
}

fn raw_get(path: &str) -> http::Request<Vec<u8>> {
    http::Request::get(path).body(Vec::new()).unwrap()
}

#[tokio::test]
async fn tls_requires_the_bearer_token() {
    let s = tls_server().await;
    assert!(s.base_url().starts_with("https://127.0.0.1:"));
    let kubeconfig = s.kubeconfig();
    assert!(kubeconfig.contains("certificate-authority-data: "));
    assert!(kubeconfig.contains(&format!("token: {}", s.token().unwrap())));
    assert!(s.ca_pem().unwrap().contains("BEGIN CERTIFICATE"));

    // The server's own client trusts the CA and sends the token.
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    assert!(
        pods.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // Without a token a request is system:anonymous, which kube-apiserver's RBAC forbids
    // everything but health and version, in its authorizer's words.
    let anon = anonymous(&s).await;
    match anon.request_text(raw_get("/api/v1/pods")).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"), "{e:?}");
            assert_eq!(
                e.message,
                r#"pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" at the cluster scope"#
            );
        }
        other => panic!("expected 403, got {other:?}"),
    }
    let leases: Api<Lease> = Api::namespaced(anon.clone(), "default");
    match leases.get("leader").await {
        Err(kube::Error::Api(e)) => assert_eq!(
            e.message,
            r#"leases.coordination.k8s.io "leader" is forbidden: User "system:anonymous" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "default""#
        ),
        other => panic!("expected 403, got {other:?}"),
    }
    match anon.request_text(raw_get("/metrics")).await {
        Err(kube::Error::Api(e)) => assert_eq!(
            e.message,
            r#"forbidden: User "system:anonymous" cannot get path "/metrics""#
        ),
        other => panic!("expected 403, got {other:?}"),
    }
    // Health and version are public, as on a real server.
    assert_eq!(anon.request_text(raw_get("/healthz")).await.unwrap(), "ok");
    assert!(anon.apiserver_version().await.is_ok());

    // A wrong token is refused too.
    let kc = kube::config::Kubeconfig::from_yaml(&kubeconfig.replace(s.token().unwrap(), "nope"))
        .unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    let wrong = kube::Client::try_from(config).unwrap();
    let pods: Api<Pod> = Api::all(wrong.clone());
    match pods.list(&ListParams::default()).await {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 401),
        other => panic!("expected 401, got {other:?}"),
    }
    // even on the public paths, as kube-apiserver authenticates before it authorizes
    match wrong.apiserver_version().await {
        Err(kube::Error::Api(e)) => assert_eq!((e.code, e.reason.as_str()), (401, "Unauthorized")),
        other => panic!("expected 401, got {other:?}"),
    }
    s.shutdown().await;
}

#[tokio::test]
async fn new_built_in_kinds_are_served_and_watched() {
    let s = tls_server().await;
    let c = s.client();
    let leases: Api<Lease> = Api::namespaced(c.clone(), "default");
    let mut events = leases
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "leader"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}
    }))
    .unwrap();
    let created = leases.create(&PostParams::default(), &lease).await.unwrap();
    assert_eq!(created.spec.unwrap().holder_identity.as_deref(), Some("me"));
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Added(l)) => assert_eq!(l.metadata.name.as_deref(), Some("leader")),
        other => panic!("expected ADDED, got {other:?}"),
    }

    let sas: Api<ServiceAccount> = Api::namespaced(c.clone(), "default");
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "robot"}})).unwrap();
    sas.create(&PostParams::default(), &sa).await.unwrap();
    // `default` is the service account controller's, as on a real cluster.
    let names: Vec<String> = sas
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    assert_eq!(names, ["default", "robot"]);

    // A job: generation tracked, a status subresource.
    let jobs: Api<Job> = Api::namespaced(c.clone(), "default");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "once"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}
    }))
    .unwrap();
    let j = jobs.create(&PostParams::default(), &job).await.unwrap();
    assert_eq!(j.metadata.generation, Some(1));
    let status = Patch::Merge(json!({"status": {"active": 1}}));
    let j = jobs
        .patch_status("once", &PatchParams::default(), &status)
        .await
        .unwrap();
    assert_eq!(j.status.unwrap().active, Some(1));
    assert_eq!(j.metadata.generation, Some(1));
    s.shutdown().await;
}

#[tokio::test]
async fn deployments_scale_through_the_scale_subresource() {
    let s = tls_server().await;
    let deploys: Api<Deployment> = Api::namespaced(s.client(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    deploys.create(&PostParams::default(), &d).await.unwrap();
    let scale = deploys.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    assert_eq!(scale.status.unwrap().selector.as_deref(), Some("app=web"));
    let patched = deploys
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.unwrap().replicas, Some(5));
    let d = deploys.get("web").await.unwrap();
    assert_eq!(d.spec.unwrap().replicas, Some(5));
    assert_eq!(d.metadata.generation, Some(2));
    s.shutdown().await;
}

#[tokio::test]
async fn access_reviews_allow_everything_and_metrics_count_requests() {
    let s = tls_server().await;
    let reviews: Api<SelfSubjectAccessReview> = Api::all(s.client());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some("list".into()),
                resource: Some("pods".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = reviews
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    assert!(answer.status.unwrap().allowed);
    // Nothing is stored: a review cannot be listed.
    assert!(reviews.list(&ListParams::default()).await.is_err());

    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    pods.list(&ListParams::default()).await.unwrap();
    pods.list(&ListParams::default()).await.unwrap();
    let _ = pods.get("missing").await;
    let text = s.client().request_text(raw_get("/metrics")).await.unwrap();
    assert!(text.contains("# TYPE apiserver_request counter"), "{text}");
    assert!(
        text.contains(r#"apiserver_request_total{verb="LIST",group="",version="v1",resource="pods",subresource="",scope="namespace",code="200"} 2"#),
        "{text}"
    );
    assert!(
        text.contains(r#"apiserver_request_total{verb="GET",group="",version="v1",resource="pods",subresource="",scope="resource",code="404"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"verb="POST",group="authorization.k8s.io",version="v1",resource="selfsubjectaccessreviews",subresource="",scope="cluster",code="201"} 1"#),
        "{text}"
    );
    s.shutdown().await;
}
