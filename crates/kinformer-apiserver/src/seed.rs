//! Realistic objects for demos, tests and benchmarks.
//!
//! [`pod`] builds a pod of about 3.5 KB of JSON, shaped like what a Deployment's pod looks like
//! on a real cluster: labels, annotations, owner reference, managedFields, a container with
//! ports, env, resources, probes and volume mounts, and a Running status with conditions.

use serde_json::{Value, json};

/// A namespace object.
pub fn namespace(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"}
    })
}

/// Namespace names for `n` namespaces: `default` for one, else `ns-0`, `ns-1`, ...
pub fn namespace_names(n: usize) -> Vec<String> {
    if n <= 1 {
        vec!["default".to_string()]
    } else {
        (0..n).map(|i| format!("ns-{i}")).collect()
    }
}

/// A realistic pod (about 3.5 KB of JSON); `i` varies the app, node and addresses. It has no
/// `ownerReferences` (a reference to a ReplicaSet that does not exist would be garbage
/// collected, as on a real cluster); its ReplicaSet is named in an annotation instead.
pub fn pod(namespace: &str, name: &str, i: usize) -> Value {
    let app = format!("app-{}", i % 50);
    let hash = format!(
        "{:010x}",
        (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 24
    );
    let node = format!("node-{:03}", i % 100);
    let ip = format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
    let host_ip = format!("192.168.{}.{}", (i % 100) / 250, (i % 100) + 2);
    let ts = "2026-01-01T00:00:00Z";
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app": app,
                "app.kubernetes.io/name": app,
                "app.kubernetes.io/part-of": "kinformer-bench",
                "pod-template-hash": hash,
                "tier": if i.is_multiple_of(3) { "frontend" } else { "backend" },
                "version": format!("v{}", i % 4)
            },
            "annotations": {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "cluster-autoscaler.kubernetes.io/safe-to-evict": "true",
                // Where an owner reference would be: the server's garbage collector deletes a
                // pod whose owner does not exist, so seeded pods name their (absent)
                // ReplicaSet in the historical `created-by` annotation instead, keeping the
                // pod's size.
                "kubernetes.io/created-by": format!(
                    "{{\"kind\":\"SerializedReference\",\"apiVersion\":\"v1\",\"reference\":{{\"kind\":\"ReplicaSet\",\"namespace\":\"{namespace}\",\"name\":\"{app}-{hash}\",\"uid\":\"6b1f3c2a-0000-4000-8000-{:012x}\",\"apiVersion\":\"apps/v1\"}}}}",
                    i % 50
                )
            },
            "managedFields": [
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": ts,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}, "f:version": {}}, "f:annotations": {".": {}, "f:kubernetes.io/created-by": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:env": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:livenessProbe": {}, "f:name": {}, "f:ports": {}, "f:resources": {}, "f:volumeMounts": {}}}, "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:terminationGracePeriodSeconds": {}, "f:volumes": {}}
                    }
                },
                {
                    "manager": "kubelet",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": ts,
                    "fieldsType": "FieldsV1",
                    "subresource": "status",
                    "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {}, "f:startTime": {}}}
                }
            ]
        },
        "spec": {
            "containers": [{
                "name": "main",
                "image": format!("registry.example.com/{app}:1.{}.0", i % 7),
                "imagePullPolicy": "IfNotPresent",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}, {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
                "env": [
                    {"name": "APP_NAME", "value": app},
                    {"name": "LOG_LEVEL", "value": "info"}
                ],
                "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}, {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File"
            }],
            "volumes": [
                {"name": "config", "configMap": {"name": format!("{app}-config"), "defaultMode": 420}},
                {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": node,
            "schedulerName": "default-scheduler",
            "priority": 0,
            "enableServiceLinks": true
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": ts},
                {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": ts},
                {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": ts},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": ts}
            ],
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": ts,
            "containerStatuses": [{
                "name": "main",
                "state": {"running": {"startedAt": ts}},
                "lastState": {},
                "ready": true,
                "restartCount": 0,
                "image": format!("registry.example.com/{app}:1.{}.0", i % 7),
                "imageID": format!("registry.example.com/{app}@sha256:{:064x}", i % 7),
                "containerID": format!("containerd://{:064x}", i),
                "started": true
            }],
            "qosClass": "Burstable"
        }
    })
}

/// A realistic node.
pub fn node(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "m5.large", "topology.kubernetes.io/zone": "zone-a"}
        },
        "spec": {"podCIDR": "10.244.0.0/24", "providerID": format!("kinformer://{name}")},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "3800m", "memory": "15Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status", "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "addresses": [{"type": "InternalIP", "address": "192.168.0.10"}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": crate::version::git_version(), "containerRuntimeVersion": "containerd://2.0.0", "kernelVersion": "6.8.0", "osImage": "Ubuntu 24.04", "operatingSystem": "linux", "architecture": "amd64", "machineID": "", "systemUUID": "", "bootID": "", "kubeProxyVersion": ""}
        }
    })
}

/// A config map with `keys` entries.
pub fn configmap(namespace: &str, name: &str, keys: usize) -> Value {
    let data: serde_json::Map<String, Value> = (0..keys)
        .map(|k| (format!("key-{k}"), Value::String(format!("value-{k}"))))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "kinformer"}},
        "data": data
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_are_realistically_sized() {
        let len = serde_json::to_vec(&pod("default", "pod-000001", 1))
            .unwrap()
            .len();
        assert!((3000..=4000).contains(&len), "pod is {len} bytes");
    }
}
