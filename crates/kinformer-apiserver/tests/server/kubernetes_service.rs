//! The `kubernetes` Service in `default`, as kube-apiserver keeps it: the Service at the
//! range's first address targeting the port the server listens on, its Endpoints and
//! EndpointSlice pointing at the server, read through kube-rs's typed objects; a deleted one
//! comes back, changed endpoints are reset, nothing writes in a loop; off with
//! `ServerConfig::kubernetes_service(false)`.

use crate::common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

const SVC: &str = "/api/v1/namespaces/default/services/kubernetes";
const EP: &str = "/api/v1/namespaces/default/endpoints/kubernetes";
const SLICE: &str = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubernetes_service_and_its_endpoints_point_at_the_server() {
    let s = start(ServerConfig::default()).await.unwrap();
    let port = i32::from(s.addr().port());
    let services: Api<Service> = Api::all(s.client());
    let all = services.list(&ListParams::default()).await.unwrap();
    let names: Vec<_> = all
        .items
        .iter()
        .map(|s| (s.metadata.namespace.clone(), s.metadata.name.clone()))
        .collect();
    assert_eq!(
        names,
        [(Some("default".into()), Some("kubernetes".into()))],
        "the only Service of a new cluster"
    );
    let svc = &all.items[0];
    let labels = svc.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("component").map(String::as_str),
        Some("apiserver")
    );
    assert_eq!(
        labels.get("provider").map(String::as_str),
        Some("kubernetes")
    );
    let managers: Vec<_> = svc
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert_eq!(managers, ["kube-apiserver"]);
    let spec = svc.spec.as_ref().unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.1"));
    assert_eq!(
        spec.cluster_ips.as_deref(),
        Some(&["10.96.0.1".to_string()][..])
    );
    assert_eq!(spec.ip_families.as_deref(), Some(&["IPv4".to_string()][..]));
    assert_eq!(spec.session_affinity.as_deref(), Some("None"));
    assert!(spec.selector.is_none());
    let ports = spec.ports.as_ref().unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].name.as_deref(), Some("https"));
    assert_eq!(ports[0].port, 443);
    assert_eq!(ports[0].protocol.as_deref(), Some("TCP"));
    assert_eq!(
        ports[0].target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(port))
    );

    let endpoints: Api<Endpoints> = Api::namespaced(s.client(), "default");
    let ep = endpoints.get("kubernetes").await.unwrap();
    let subsets = ep.subsets.unwrap();
    assert_eq!(subsets.len(), 1);
    let ips: Vec<_> = subsets[0]
        .addresses
        .iter()
        .flatten()
        .map(|a| a.ip.as_str())
        .collect();
    assert_eq!(ips, ["127.0.0.1"]);
    let ep_ports = subsets[0].ports.as_ref().unwrap();
    assert_eq!(ep_ports[0].port, port);
    assert_eq!(ep_ports[0].name.as_deref(), Some("https"));
    assert_eq!(
        ep.metadata
            .labels
            .unwrap_or_default()
            .get("endpointslice.kubernetes.io/skip-mirror")
            .map(String::as_str),
        Some("true")
    );

    let slices: Api<EndpointSlice> = Api::namespaced(s.client(), "default");
    let by_service = slices
        .list(&ListParams::default().labels("kubernetes.io/service-name=kubernetes"))
        .await
        .unwrap();
    assert_eq!(
        by_service.items.len(),
        1,
        "found by the label kube-proxy uses"
    );
    let slice = &by_service.items[0];
    assert_eq!(slice.address_type, "IPv4");
    let slice_endpoints = slice.endpoints.as_deref().unwrap_or_default();
    assert_eq!(slice_endpoints.len(), 1);
    assert_eq!(slice_endpoints[0].addresses, ["127.0.0.1"]);
    assert_eq!(
        slice_endpoints[0].conditions.as_ref().and_then(|c| c.ready),
        Some(true)
    );
    let slice_ports = slice.ports.as_ref().unwrap();
    assert_eq!(slice_ports[0].port, Some(port));
    assert_eq!(slice_ports[0].name.as_deref(), Some("https"));

    // The first address is the kubernetes Service's: asking for it is refused as in use.
    let mine: Service = serde_json::from_value(json!({
        "metadata": {"name": "mine"},
        "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 80}]}
    }))
    .unwrap();
    let err = Api::<Service>::namespaced(s.client(), "default")
        .create(&PostParams::default(), &mine)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("provided IP is already allocated"),
        "{err}"
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_one_comes_back_and_changed_endpoints_are_reset() {
    let s = start(ServerConfig::default()).await.unwrap();
    let a = s.addr();
    for path in [SVC, EP, SLICE] {
        let before = get(a, path).await.json();
        assert_eq!(
            request(a, "DELETE", path, None, b"").await.code,
            200,
            "{path}"
        );
        eventually(a, path, "created again", |c, v| {
            c == 200 && v["metadata"]["uid"] != before["metadata"]["uid"]
        })
        .await;
    }

    // Someone points the endpoints elsewhere: kube-apiserver's reconciler puts them back.
    let mut ep = get(a, EP).await.json();
    ep["subsets"] = json!([{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"name": "https", "port": 1, "protocol": "TCP"}]}]);
    ep["metadata"]["labels"] = json!({"mine": "yes"});
    assert_eq!(put(a, EP, &ep).await.code, 200);
    let port = a.port();
    let reset = eventually(a, EP, "reset", |c, v| {
        c == 200 && v["subsets"][0]["addresses"][0]["ip"] == "127.0.0.1"
    })
    .await;
    assert_eq!(reset["subsets"][0]["ports"][0]["port"], json!(port));
    assert_eq!(
        reset["metadata"]["labels"],
        json!({"endpointslice.kubernetes.io/skip-mirror": "true"})
    );
    let mut slice = get(a, SLICE).await.json();
    slice["endpoints"] = json!([]);
    assert_eq!(put(a, SLICE, &slice).await.code, 200);
    eventually(a, SLICE, "reset", |c, v| {
        c == 200 && v["endpoints"][0]["addresses"] == json!(["127.0.0.1"])
    })
    .await;

    // A user's change to the Service itself is kept (kube-apiserver no longer reconciles it).
    let mut svc = get(a, SVC).await.json();
    svc["metadata"]["labels"]["team"] = json!("platform");
    assert_eq!(put(a, SVC, &svc).await.code, 200);

    // Settled: nothing keeps writing (a reconciler fighting the store's defaults would).
    let rv =
        get(a, "/api/v1/namespaces/default/endpoints").await.json()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
    let mut events = watch(
        a,
        &format!("/api/v1/namespaces/default/endpoints?watch=1&resourceVersion={rv}"),
    )
    .await;
    assert_eq!(events.code, 200);
    assert!(events.quiet_for(Duration::from_millis(300)).await);
    assert_eq!(
        get(a, SVC).await.json()["metadata"]["labels"]["team"],
        "platform"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn off_there_is_none() {
    let s = start(ServerConfig::default().kubernetes_service(false))
        .await
        .unwrap();
    let services: Api<Service> = Api::all(s.client());
    assert!(
        services
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(get(s.addr(), EP).await.code, 404);
    assert_eq!(get(s.addr(), SLICE).await.code, 404);
    s.shutdown().await;
}
