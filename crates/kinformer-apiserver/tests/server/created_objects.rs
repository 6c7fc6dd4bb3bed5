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

/// The fields a created object's `managedFields` give its creator, as one flat list of paths.
fn owned_paths(managed: &serde_json::Value) -> Vec<String> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
        if let Some(m) = v.as_object() {
            for (k, x) in m {
                let p = format!("{prefix}/{k}");
                out.push(p.clone());
                walk(&p, x, out);
            }
        }
    }
    let mut out = Vec::new();
    walk("", managed, &mut out);
    out
}

/// What the ServiceAccount admission adds to a created Pod: the projected token volume mounted
/// in every container, unless the Pod or its ServiceAccount says not to; and, as on a real
/// server, the creator's `managedFields` own none of what admission added, nor a Service's
/// allocated addresses.
#[tokio::test]
async fn a_created_pod_gets_its_token_volume_and_owns_only_what_it_sent() {
    let s = start(ServerConfig::default()).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    let pod = |name: &str, extra: serde_json::Value| -> Pod {
        let mut p = json!({"metadata": {"name": name},
                           "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}});
        for (k, v) in extra.as_object().unwrap() {
            p["spec"][k] = v.clone();
        }
        serde_json::from_value(p).unwrap()
    };
    let pp = PostParams {
        field_manager: Some("my-controller".into()),
        ..PostParams::default()
    };
    let created = pods.create(&pp, &pod("p", json!({}))).await.unwrap();
    let spec = created.spec.as_ref().unwrap();
    let volumes = spec.volumes.as_deref().unwrap_or_default();
    assert_eq!(volumes.len(), 1);
    let name = &volumes[0].name;
    assert!(name.starts_with("kube-api-access-"), "{name}");
    let sources = volumes[0]
        .projected
        .as_ref()
        .unwrap()
        .sources
        .as_ref()
        .unwrap();
    assert_eq!(
        sources[0]
            .service_account_token
            .as_ref()
            .unwrap()
            .expiration_seconds,
        Some(3607)
    );
    let mounts = spec.containers[0]
        .volume_mounts
        .as_deref()
        .unwrap_or_default();
    assert_eq!(mounts[0].name, *name);
    assert_eq!(
        mounts[0].mount_path,
        "/var/run/secrets/kubernetes.io/serviceaccount"
    );
    let entry = &created.metadata.managed_fields.as_ref().unwrap()[0];
    assert_eq!(entry.manager.as_deref(), Some("my-controller"));
    let owned = owned_paths(&entry.fields_v1.as_ref().unwrap().0);
    assert!(
        owned.contains(&"/f:spec/f:dnsPolicy".to_string()),
        "{owned:?}"
    );
    for added in [
        "/f:spec/f:volumes",
        "/f:spec/f:serviceAccountName",
        "/f:spec/f:tolerations",
        "/f:spec/f:priority",
    ] {
        assert!(
            !owned.iter().any(|p| p == added),
            "{added} owned: {owned:?}"
        );
    }

    // the Pod says no; its ServiceAccount says no; the Pod overrides its ServiceAccount
    let no = pods
        .create(
            &pp,
            &pod("no", json!({"automountServiceAccountToken": false})),
        )
        .await
        .unwrap();
    assert!(no.spec.unwrap().volumes.is_none());
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(s.client(), "default");
    let quiet = serde_json::from_value(json!({"metadata": {"name": "quiet"},
                                              "automountServiceAccountToken": false}))
    .unwrap();
    accounts.create(&pp, &quiet).await.unwrap();
    let silent = pods
        .create(&pp, &pod("silent", json!({"serviceAccountName": "quiet"})))
        .await
        .unwrap();
    assert!(silent.spec.unwrap().volumes.is_none());
    let loud = pods
        .create(
            &pp,
            &pod(
                "loud",
                json!({"serviceAccountName": "quiet", "automountServiceAccountToken": true}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(loud.spec.unwrap().volumes.map(|v| v.len()), Some(1));

    // a Service's allocated cluster IPs and families are nobody's
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(s.client(), "default");
    let svc = serde_json::from_value(json!({"metadata": {"name": "web"},
                                            "spec": {"ports": [{"port": 80}]}}))
    .unwrap();
    let svc = services.create(&pp, &svc).await.unwrap();
    assert!(svc.spec.unwrap().cluster_ip.is_some());
    let owned = owned_paths(
        &svc.metadata.managed_fields.unwrap()[0]
            .fields_v1
            .as_ref()
            .unwrap()
            .0,
    );
    assert!(
        owned.contains(&"/f:spec/f:sessionAffinity".to_string()),
        "{owned:?}"
    );
    for allocated in [
        "/f:spec/f:clusterIP",
        "/f:spec/f:clusterIPs",
        "/f:spec/f:ipFamilies",
    ] {
        assert!(
            !owned.iter().any(|p| p == allocated),
            "{allocated} owned: {owned:?}"
        );
    }
    s.shutdown().await;
}

#[tokio::test]
async fn more_kinds_start_from_the_status_kube_apiserver_gives_them() {
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    use k8s_openapi::api::networking::v1::Ingress;
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    let s = start(ServerConfig::default()).await.unwrap();
    let pp = PostParams::default();
    let c = s.client();
    // each sent with a status it does not keep (as kube-apiserver v1.36.3 answered them)
    let pdb: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "p"}, "spec": {"minAvailable": 1},
        "status": {"disruptionsAllowed": 3, "currentHealthy": 4, "desiredHealthy": 1, "expectedPods": 4}
    }))
    .unwrap();
    let pdb = Api::<PodDisruptionBudget>::namespaced(c.clone(), "default")
        .create(&pp, &pdb)
        .await
        .unwrap();
    let st = pdb.status.unwrap();
    assert_eq!(
        (st.disruptions_allowed, st.current_healthy, st.expected_pods),
        (Some(0), Some(0), Some(0))
    );
    let hpa: HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "h"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 3},
        "status": {"currentReplicas": 2, "desiredReplicas": 3}
    }))
    .unwrap();
    let hpa = Api::<HorizontalPodAutoscaler>::namespaced(c.clone(), "default")
        .create(&pp, &hpa)
        .await
        .unwrap();
    let st = hpa.status.unwrap();
    assert_eq!((st.current_replicas, st.desired_replicas), (None, 0));
    let ing: Ingress = serde_json::from_value(json!({
        "metadata": {"name": "i"},
        "spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}},
        "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}
    }))
    .unwrap();
    let ing = Api::<Ingress>::namespaced(c.clone(), "default")
        .create(&pp, &ing)
        .await
        .unwrap();
    assert_eq!(ing.status.unwrap().load_balancer.unwrap().ingress, None);
    let pvc: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "c"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}
    }))
    .unwrap();
    let pvc = Api::<PersistentVolumeClaim>::namespaced(c, "default")
        .create(&pp, &pvc)
        .await
        .unwrap();
    let st = pvc.status.unwrap();
    assert_eq!(st.phase.as_deref(), Some("Pending"));
    assert_eq!(st.capacity, None);
    s.shutdown().await;
}
