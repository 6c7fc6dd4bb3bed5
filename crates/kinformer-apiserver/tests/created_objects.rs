//! Built-in objects as a controller reads them back, through kube-rs: a Deployment's pod
//! template comes back defaulted (and applying the same manifest again changes nothing), a
//! created Pod starts `Pending` whatever status it was sent with and gets its status through
//! `/status`, and seeding keeps the status given.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test]
async fn a_deployments_template_comes_back_defaulted_and_a_second_apply_changes_nothing() {
    let s = start(ServerConfig::default()).await.unwrap();
    let deployments: Api<Deployment> = Api::namespaced(s.client(), "default");
    let manifest = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                                                       "ports": [{"containerPort": 80}]}]}}}
    });
    let pp = PatchParams::apply("my-controller");
    let first = deployments
        .patch("web", &pp, &Patch::Apply(&manifest))
        .await
        .unwrap();
    let pod = first.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let c = &pod.containers[0];
    assert_eq!(c.image_pull_policy.as_deref(), Some("IfNotPresent"));
    assert_eq!(
        c.termination_message_path.as_deref(),
        Some("/dev/termination-log")
    );
    assert_eq!(
        c.ports.as_ref().unwrap()[0].protocol.as_deref(),
        Some("TCP")
    );
    assert_eq!(pod.restart_policy.as_deref(), Some("Always"));
    assert_eq!(pod.dns_policy.as_deref(), Some("ClusterFirst"));
    assert_eq!(pod.termination_grace_period_seconds, Some(30));
    // the defaults are the server's: the same manifest applied again is no change
    let second = deployments
        .patch("web", &pp, &Patch::Apply(&manifest))
        .await
        .unwrap();
    assert_eq!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );
    assert_eq!(second.metadata.generation, Some(1));
}

#[tokio::test]
async fn a_created_pod_starts_pending_and_gets_its_status_through_the_subresource() {
    let s = start(ServerConfig::default()).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    let sent: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx",
                                 "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]},
        "status": {"phase": "Running", "podIP": "10.0.0.9"}
    }))
    .unwrap();
    let created = pods.create(&PostParams::default(), &sent).await.unwrap();
    let status = created.status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    assert_eq!(status.pod_ip, None);
    // limits without requests: requests default to them, so the class is Guaranteed
    assert_eq!(status.qos_class.as_deref(), Some("Guaranteed"));
    let spec = created.spec.unwrap();
    assert_eq!(spec.service_account_name.as_deref(), Some("default"));
    assert_eq!(spec.tolerations.map(|t| t.len()), Some(2));
    let running = json!({"status": {"phase": "Running", "podIP": "10.0.0.9"}});
    let p = pods
        .patch_status("p", &PatchParams::default(), &Patch::Merge(&running))
        .await
        .unwrap();
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Running"));

    // seeding stores a pod as a cluster holds it: its status kept
    let mut seeded = serde_json::to_value(&sent).unwrap();
    seeded["metadata"]["name"] = json!("seeded");
    s.seed("pods", [seeded]).unwrap();
    let p = pods.get("seeded").await.unwrap();
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Running"));
}
