use serde_json::{Value, json};

use super::*;
use crate::objects::test_util::{body, res};

fn svc(spec: Value) -> Map<String, Value> {
    body(json!({"metadata": {"name": "s"}, "spec": spec}))
}

#[test]
fn services_are_defaulted_as_kube_apiserver_defaults_them() {
    // kube-apiserver v1.36.3's answers to these specs (2026-11-28, the allocated values aside)
    let cases = [
        (
            json!({"selector": {"app": "a"}, "ports": [{"port": 80}]}),
            json!({"internalTrafficPolicy": "Cluster", "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                   "selector": {"app": "a"}, "sessionAffinity": "None", "type": "ClusterIP"}),
        ),
        (
            json!({"ports": [{"name": "http", "port": 80, "targetPort": "web"}, {"name": "dns", "port": 53, "protocol": "UDP"}], "type": "NodePort"}),
            json!({"externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster",
                   "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "web"},
                             {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53}],
                   "sessionAffinity": "None", "type": "NodePort"}),
        ),
        (
            json!({"type": "ExternalName", "externalName": "example.com"}),
            json!({"externalName": "example.com", "sessionAffinity": "None", "type": "ExternalName"}),
        ),
        (
            json!({"type": "LoadBalancer", "ports": [{"port": 443}]}),
            json!({"allocateLoadBalancerNodePorts": true, "externalTrafficPolicy": "Cluster",
                   "internalTrafficPolicy": "Cluster", "ports": [{"port": 443, "protocol": "TCP", "targetPort": 443}],
                   "sessionAffinity": "None", "type": "LoadBalancer"}),
        ),
        (
            json!({"ports": [{"port": 80}], "sessionAffinity": "ClientIP"}),
            json!({"internalTrafficPolicy": "Cluster", "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                   "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
                   "type": "ClusterIP"}),
        ),
    ];
    for (sent, want) in cases {
        let mut o = svc(sent);
        defaults(&mut o);
        assert_eq!(o["spec"], want);
    }
}

#[test]
fn a_created_service_gets_a_free_cluster_ip_and_node_ports() {
    let services = res("services");
    let stored = [
        json!({"spec": {"clusterIPs": ["10.96.0.10"], "ports": [{"port": 80, "nodePort": 30080}]}}),
    ];
    let used = Used::of(&stored);
    let mut o =
        svc(json!({"type": "NodePort", "ports": [{"port": 80}, {"port": 81, "nodePort": 30081}]}));
    allocate(&services, &mut o, "s", &used, false).unwrap();
    let ip = o["spec"]["clusterIP"].as_str().unwrap().to_string();
    let addr: Ipv4Addr = ip.parse().unwrap();
    assert_eq!(addr.octets()[..2], [10, 96]);
    assert_ne!(ip, "10.96.0.10");
    assert_eq!(o["spec"]["clusterIPs"], json!([ip]));
    assert_eq!(o["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(o["spec"]["ipFamilyPolicy"], "SingleStack");
    let port = o["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&port) && port != 30080 && port != 30081);
    assert_eq!(o["spec"]["ports"][1]["nodePort"], 30081);
    // headless stays headless; an ExternalName gets nothing
    let mut h = svc(json!({"clusterIP": "None", "ports": [{"port": 80}]}));
    allocate(&services, &mut h, "h", &used, false).unwrap();
    assert_eq!(h["spec"]["clusterIPs"], json!(["None"]));
    assert_eq!(h["spec"]["ipFamilyPolicy"], "RequireDualStack");
    assert_eq!(h["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
    let mut hs =
        svc(json!({"clusterIP": "None", "selector": {"app": "a"}, "ports": [{"port": 80}]}));
    allocate(&services, &mut hs, "hs", &used, false).unwrap();
    assert_eq!(hs["spec"]["ipFamilies"], json!(["IPv4"]));
    let mut e = svc(json!({"type": "ExternalName", "externalName": "x.example"}));
    allocate(&services, &mut e, "e", &used, false).unwrap();
    assert!(e["spec"].get("clusterIP").is_none());
    // what is in use is refused
    let mut taken = svc(json!({"clusterIP": "10.96.0.10", "ports": [{"port": 80}]}));
    let err = allocate(&services, &mut taken, "t", &used, false).unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "Service \"t\" is invalid: spec.clusterIPs: Invalid value: [\"10.96.0.10\"]: failed to allocate IP 10.96.0.10: provided IP is already allocated"
    );
    let mut port = svc(json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}));
    assert_eq!(
        allocate(&services, &mut port, "p", &used, false)
            .unwrap_err()
            .code,
        422
    );
}

#[test]
fn a_dry_run_answers_kube_apiservers_placeholders() {
    let services = res("services");
    let stored = [
        json!({"spec": {"clusterIPs": ["10.96.0.10"], "ports": [{"port": 80, "nodePort": 30080}]}}),
    ];
    let used = Used::of(&stored);
    let mut o = svc(json!({"type": "NodePort",
        "ports": [{"port": 80}, {"port": 81, "nodePort": 31000}, {"port": 82}]}));
    allocate(&services, &mut o, "s", &used, true).unwrap();
    assert_eq!(o["spec"]["clusterIP"], "10.96.0.0");
    assert_eq!(o["spec"]["clusterIPs"], json!(["10.96.0.0"]));
    let ports: Vec<i64> = (0..3)
        .map(|i| o["spec"]["ports"][i]["nodePort"].as_i64().unwrap())
        .collect();
    assert_eq!(ports, [32769, 31000, 32770]);
    // an address in use is not checked; a node port in use is
    let mut taken = svc(json!({"clusterIP": "10.96.0.10", "ports": [{"port": 80}]}));
    allocate(&services, &mut taken, "t", &used, true).unwrap();
    assert_eq!(taken["spec"]["clusterIPs"], json!(["10.96.0.10"]));
    let mut port = svc(json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}));
    assert_eq!(
        allocate(&services, &mut port, "p", &used, true)
            .unwrap_err()
            .code,
        422
    );
}

#[test]
fn an_update_without_the_allocated_values_keeps_them() {
    let old = svc(
        json!({"type": "NodePort", "clusterIP": "10.96.3.4", "clusterIPs": ["10.96.3.4"],
                         "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                         "ports": [{"port": 80, "protocol": "TCP", "nodePort": 31000},
                                   {"port": 53, "protocol": "UDP", "nodePort": 31001}]}),
    );
    let mut new = svc(
        json!({"type": "NodePort", "ports": [{"port": 53, "protocol": "UDP"}, {"port": 80, "protocol": "TCP"}]}),
    );
    keep_allocated(&old, &mut new);
    assert_eq!(new["spec"]["clusterIP"], "10.96.3.4");
    assert_eq!(new["spec"]["ports"][0]["nodePort"], 31001);
    assert_eq!(new["spec"]["ports"][1]["nodePort"], 31000);
}
