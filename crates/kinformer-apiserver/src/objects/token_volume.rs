//! What kube-apiserver's ServiceAccount admission mounts into a Pod when it is created: a
//! projected volume `kube-api-access-<5 random characters>` (a bound service-account token that
//! expires after 3607 s, the cluster's CA from the `kube-root-ca.crt` ConfigMap, the pod's
//! namespace), mounted read-only at `/var/run/secrets/kubernetes.io/serviceaccount` in every
//! init container and container that has nothing mounted there yet.
//!
//! Not mounted when the Pod says `automountServiceAccountToken: false`, or says nothing and its
//! ServiceAccount says `false`; a Pod that already has a `kube-api-access-` volume keeps it and
//! has it mounted where it is missing; a mirror pod (`kubernetes.io/config.mirror`) gets
//! nothing. It comes after kube-apiserver's field manager, so nobody owns it.

use serde_json::{Map, Value, json};

/// Where the token, CA and namespace files are mounted.
const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The volume's name before its random suffix.
const PREFIX: &str = "kube-api-access-";
/// The annotation of a static pod's mirror.
const MIRROR: &str = "kubernetes.io/config.mirror";

/// The ServiceAccount a Pod body runs as: `spec.serviceAccountName`, else the deprecated
/// `spec.serviceAccount`, else `default`.
pub(crate) fn service_account_of(pod: &Map<String, Value>) -> String {
    let spec = pod.get("spec");
    ["serviceAccountName", "serviceAccount"]
        .iter()
        .find_map(|k| {
            spec.and_then(|s| s.get(*k))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        })
        .unwrap_or("default")
        .to_string()
}

/// Mounts the token volume into the Pod `obj` as the admission does; `account_automount` is
/// its ServiceAccount's `automountServiceAccountToken` (`None`: unset, or no such account).
pub(crate) fn mount(obj: &mut Map<String, Value>, account_automount: Option<bool>) {
    let mirror = obj
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(MIRROR))
        .is_some();
    let Some(Value::Object(spec)) = obj.get_mut("spec") else {
        return;
    };
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or(account_automount)
        .unwrap_or(true);
    if mirror || !automount {
        return;
    }
    let volumes: Vec<&str> = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .collect();
    let existing = volumes
        .iter()
        .find(|n| n.starts_with(PREFIX))
        .map(|n| n.to_string());
    let name = existing.clone().unwrap_or_else(|| {
        loop {
            let n = format!("{PREFIX}{}", super::random_suffix());
            if !volumes.contains(&n.as_str()) {
                break n;
            }
        }
    });
    let mut mounted = false;
    for list in ["initContainers", "containers"] {
        let Some(Value::Array(containers)) = spec.get_mut(list) else {
            continue;
        };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            let mounts = c
                .entry("volumeMounts")
                .or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(mounts) = mounts else {
                continue;
            };
            let taken = mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH));
            if !taken {
                mounts.push(json!({"name": name, "readOnly": true, "mountPath": MOUNT_PATH}));
                mounted = true;
            }
        }
    }
    if mounted && existing.is_none() {
        let volumes = spec
            .entry("volumes")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(volumes) = volumes {
            volumes.push(volume(&name));
        }
    }
}

/// The projected volume, as the admission writes it (its default mode set explicitly).
fn volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
            "defaultMode": 420,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(spec: Value) -> Map<String, Value> {
        let Value::Object(m) = json!({"metadata": {"name": "p"}, "spec": spec}) else {
            unreachable!()
        };
        m
    }

    fn mounts(p: &Map<String, Value>, list: &str, i: usize) -> Vec<(String, String)> {
        p["spec"][list][i]["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                (
                    m["name"].as_str().unwrap().to_string(),
                    m["mountPath"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn every_container_gets_the_volume_once() {
        let mut p = pod(json!({
            "initContainers": [{"name": "i", "image": "x"}],
            "containers": [{"name": "a", "image": "x"},
                           {"name": "b", "image": "x", "volumeMounts": [{"name": "own", "mountPath": MOUNT_PATH}]}],
            "volumes": [{"name": "own", "emptyDir": {}}]
        }));
        mount(&mut p, None);
        let volumes = p["spec"]["volumes"].as_array().unwrap();
        assert_eq!(volumes.len(), 2);
        let name = volumes[1]["name"].as_str().unwrap().to_string();
        assert_eq!(name.len(), PREFIX.len() + 5);
        assert!(name.starts_with(PREFIX));
        assert_eq!(volumes[1], volume(&name));
        assert_eq!(
            mounts(&p, "initContainers", 0),
            [(name.clone(), MOUNT_PATH.into())]
        );
        assert_eq!(mounts(&p, "containers", 0), [(name, MOUNT_PATH.into())]);
        // something already mounted there stays alone
        assert_eq!(
            mounts(&p, "containers", 1),
            [("own".into(), MOUNT_PATH.into())]
        );
        assert_eq!(
            p["spec"]["containers"][0]["volumeMounts"][0]["readOnly"],
            true
        );
    }

    #[test]
    fn the_pod_decides_before_its_service_account() {
        let one = json!({"containers": [{"name": "a", "image": "x"}]});
        for (pod_says, account_says, mounted) in [
            (None, None, true),
            (None, Some(false), false),
            (None, Some(true), true),
            (Some(false), Some(true), false),
            (Some(true), Some(false), true),
        ] {
            let mut spec = one.clone();
            if let Some(b) = pod_says {
                spec["automountServiceAccountToken"] = json!(b);
            }
            let mut p = pod(spec);
            mount(&mut p, account_says);
            assert_eq!(
                p["spec"].get("volumes").is_some(),
                mounted,
                "{pod_says:?} {account_says:?}"
            );
        }
    }

    #[test]
    fn an_existing_token_volume_is_reused_and_a_mirror_pod_left_alone() {
        let mut p = pod(json!({
            "containers": [{"name": "a", "image": "x"}],
            "volumes": [{"name": "kube-api-access-abcde", "emptyDir": {}}]
        }));
        mount(&mut p, None);
        assert_eq!(p["spec"]["volumes"].as_array().unwrap().len(), 1);
        assert_eq!(
            mounts(&p, "containers", 0),
            [("kube-api-access-abcde".into(), MOUNT_PATH.into())]
        );
        let mut m = pod(json!({"containers": [{"name": "a", "image": "x"}]}));
        m["metadata"]["annotations"] = json!({MIRROR: "x"});
        mount(&mut m, None);
        assert!(m["spec"].get("volumes").is_none());
        assert!(m["spec"]["containers"][0].get("volumeMounts").is_none());
    }

    #[test]
    fn the_account_is_named_by_either_field_or_is_default() {
        assert_eq!(service_account_of(&pod(json!({}))), "default");
        assert_eq!(
            service_account_of(&pod(json!({"serviceAccount": "old"}))),
            "old"
        );
        assert_eq!(
            service_account_of(&pod(
                json!({"serviceAccountName": "new", "serviceAccount": "old"})
            )),
            "new"
        );
    }
}
