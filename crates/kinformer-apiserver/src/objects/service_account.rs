//! kube-apiserver's ServiceAccount admission, for a Pod being created:
//!
//! - a Pod naming no service account runs as `default`;
//! - the account must exist (`error looking up service account <ns>/<name>: serviceaccount
//!   "<name>" not found`, 403; the lookup is the API layer's, which knows the store);
//! - the projected volume `kube-api-access-<5 random characters>` (a bound service-account
//!   token that expires after 3607 s, the cluster's CA from the `kube-root-ca.crt` ConfigMap,
//!   the pod's namespace) is mounted read-only at `/var/run/secrets/kubernetes.io/serviceaccount`
//!   in every init container and container that has nothing mounted there yet — not when the
//!   Pod says `automountServiceAccountToken: false`, or says nothing and its account says
//!   `false`; a Pod that already has a `kube-api-access-` volume keeps it and has it mounted
//!   where it is missing;
//! - a Pod without `imagePullSecrets` gets its account's;
//! - a mirror pod (`kubernetes.io/config.mirror`) gets none of this, and may not name a service
//!   account, reference a secret or project a service-account token ([`check_mirror`]).
//!
//! It comes after kube-apiserver's field manager, so nobody owns what it adds. Not done: the
//! `kubernetes.io/enforce-mountable-secrets` annotation's limits.

use serde_json::{Map, Value, json};

/// Where the token, CA and namespace files are mounted.
const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The volume's name before its random suffix.
const PREFIX: &str = "kube-api-access-";
/// The annotation of a static pod's mirror.
const MIRROR: &str = "kubernetes.io/config.mirror";

/// What the admission reads of a Pod's ServiceAccount.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Account {
    /// Its `automountServiceAccountToken` (`None`: unset).
    pub(crate) automount: Option<bool>,
    /// Its `imagePullSecrets`' names, in order.
    pub(crate) image_pull_secrets: Vec<String>,
}

impl Account {
    /// The facts of a stored ServiceAccount.
    pub(crate) fn of(account: &Value) -> Self {
        Account {
            automount: account
                .get("automountServiceAccountToken")
                .and_then(Value::as_bool),
            image_pull_secrets: account
                .get("imagePullSecrets")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|r| {
                    r.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                })
                .collect(),
        }
    }
}

/// The ServiceAccount a Pod body runs as: `spec.serviceAccountName`, else the deprecated
/// `spec.serviceAccount`, else `default`.
pub(crate) fn service_account_of(pod: &Map<String, Value>) -> String {
    named_account(pod).unwrap_or("default").to_string()
}

/// The ServiceAccount a Pod body names, if any.
fn named_account(pod: &Map<String, Value>) -> Option<&str> {
    let spec = pod.get("spec");
    ["serviceAccountName", "serviceAccount"]
        .iter()
        .find_map(|k| {
            spec.and_then(|s| s.get(*k))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        })
}

/// Whether a Pod body is a static pod's mirror.
pub(crate) fn is_mirror(pod: &Map<String, Value>) -> bool {
    pod.get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(MIRROR))
        .is_some()
}

/// What the admission refuses in a mirror pod (the reason, in kube-apiserver's words): a
/// service account, any secret it references, a projected service-account token.
pub(crate) fn check_mirror(pod: &Map<String, Value>) -> Result<(), String> {
    if named_account(pod).is_some() {
        return Err("a mirror pod may not reference service accounts".into());
    }
    let spec = pod.get("spec");
    let list = |v: Option<&Value>, k: &str| -> Vec<Value> {
        v.and_then(|v| v.get(k))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let named = |v: Option<&Value>| v.and_then(|v| v.as_str()).is_some_and(|n| !n.is_empty());
    let mut secrets = list(spec, "imagePullSecrets")
        .iter()
        .any(|r| named(r.get("name")));
    for kind in ["initContainers", "containers", "ephemeralContainers"] {
        for c in list(spec, kind) {
            secrets |= list(Some(&c), "envFrom")
                .iter()
                .any(|e| named(e.pointer("/secretRef/name")));
            secrets |= list(Some(&c), "env")
                .iter()
                .any(|e| named(e.pointer("/valueFrom/secretKeyRef/name")));
        }
    }
    for v in list(spec, "volumes") {
        // the first volume source a volume has, as Go's switch takes them
        let refs = [
            ("azureFile", "/azureFile/secretName"),
            ("cephfs", "/cephfs/secretRef/name"),
            ("cinder", "/cinder/secretRef/name"),
            ("flexVolume", "/flexVolume/secretRef/name"),
            ("projected", ""),
            ("rbd", "/rbd/secretRef/name"),
            ("secret", "/secret/secretName"),
            ("scaleIO", "/scaleIO/secretRef/name"),
            ("iscsi", "/iscsi/secretRef/name"),
            ("storageos", "/storageos/secretRef/name"),
            ("csi", "/csi/nodePublishSecretRef/name"),
        ];
        let set = |k: &str| v.get(k).is_some_and(|x| !x.is_null());
        let Some((source, pointer)) = refs.iter().find(|(k, _)| set(k)) else {
            continue;
        };
        if *source == "projected" {
            let sources = list(v.get("projected"), "sources");
            secrets |= sources.iter().any(|s| named(s.pointer("/secret/name")));
        } else {
            secrets |= named(v.pointer(pointer));
        }
    }
    if secrets {
        return Err("a mirror pod may not reference secrets".into());
    }
    let projects_token = list(spec, "volumes").iter().any(|v| {
        list(v.get("projected"), "sources")
            .iter()
            .any(|s| s.get("serviceAccountToken").is_some_and(|t| !t.is_null()))
    });
    if projects_token {
        return Err("a mirror pod may not use ServiceAccountToken volume projections".into());
    }
    Ok(())
}

/// What the admission adds to the Pod `obj` running as `account`: its service account's name,
/// the token volume, the account's image pull secrets. A mirror pod gets nothing.
pub(crate) fn admit(obj: &mut Map<String, Value>, account: &Account) {
    if is_mirror(obj) {
        return;
    }
    let name = service_account_of(obj);
    let Some(Value::Object(spec)) = obj.get_mut("spec") else {
        return;
    };
    // v1's conversion shows the name in the deprecated field too
    spec.insert("serviceAccountName".into(), json!(name));
    spec.insert("serviceAccount".into(), json!(name));
    let pull = spec.get("imagePullSecrets").and_then(Value::as_array);
    if pull.is_none_or(Vec::is_empty) && !account.image_pull_secrets.is_empty() {
        let refs = account
            .image_pull_secrets
            .iter()
            .map(|n| json!({"name": n}))
            .collect();
        spec.insert("imagePullSecrets".into(), Value::Array(refs));
    }
    mount(obj, account.automount);
}

/// Mounts the token volume into the Pod `obj` as the admission does; `account_automount` is
/// its ServiceAccount's `automountServiceAccountToken` (`None`: unset, or no such account).
fn mount(obj: &mut Map<String, Value>, account_automount: Option<bool>) {
    let Some(Value::Object(spec)) = obj.get_mut("spec") else {
        return;
    };
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or(account_automount)
        .unwrap_or(true);
    if !automount {
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
        let account = Account {
            automount: Some(true),
            image_pull_secrets: vec!["r".into()],
        };
        admit(&mut m, &account);
        assert_eq!(
            m["spec"],
            json!({"containers": [{"name": "a", "image": "x"}]})
        );
    }

    #[test]
    fn admission_names_the_account_and_copies_its_pull_secrets_into_a_pod_without() {
        let account = Account::of(&json!({"automountServiceAccountToken": false,
            "imagePullSecrets": [{"name": "r1"}, {"name": "r2"}]}));
        assert_eq!(account.automount, Some(false));
        let mut p =
            pod(json!({"serviceAccount": "old", "containers": [{"name": "a", "image": "x"}]}));
        admit(&mut p, &account);
        assert_eq!(p["spec"]["serviceAccountName"], "old");
        assert_eq!(p["spec"]["serviceAccount"], "old");
        assert_eq!(
            p["spec"]["imagePullSecrets"],
            json!([{"name": "r1"}, {"name": "r2"}])
        );
        assert!(p["spec"].get("volumes").is_none());
        let mut own = pod(json!({"imagePullSecrets": [{"name": "mine"}], "containers": []}));
        admit(&mut own, &account);
        assert_eq!(own["spec"]["imagePullSecrets"], json!([{"name": "mine"}]));
        assert_eq!(own["spec"]["serviceAccountName"], "default");
    }

    #[test]
    fn a_mirror_pod_may_reference_no_account_secret_or_token() {
        let mirror = |spec: Value| {
            let mut p = pod(spec);
            p["metadata"]["annotations"] = json!({MIRROR: "x"});
            check_mirror(&p)
        };
        let c = |extra: Value| {
            let mut c = json!({"name": "a", "image": "x"});
            c.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            json!({"containers": [c]})
        };
        assert_eq!(mirror(c(json!({}))), Ok(()));
        // empty names are no reference
        assert_eq!(mirror(json!({"imagePullSecrets": [{"name": ""}]})), Ok(()));
        assert_eq!(
            mirror(json!({"volumes": [{"name": "v", "configMap": {"name": "c"}}]})),
            Ok(())
        );
        let secrets = "a mirror pod may not reference secrets";
        for spec in [
            json!({"imagePullSecrets": [{"name": "r"}]}),
            c(json!({"envFrom": [{"secretRef": {"name": "s"}}]})),
            c(
                json!({"env": [{"name": "e", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}),
            ),
            json!({"initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "s"}}]}]}),
            json!({"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}),
            json!({"volumes": [{"name": "v", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "s"}}}]}),
            json!({"volumes": [{"name": "v", "azureFile": {"secretName": "s", "shareName": "x"}}]}),
            json!({"volumes": [{"name": "v", "projected": {"sources": [{"secret": {"name": "s"}}]}}]}),
        ] {
            assert_eq!(mirror(spec.clone()), Err(secrets.into()), "{spec}");
        }
        assert_eq!(
            mirror(json!({"serviceAccountName": "x"})),
            Err("a mirror pod may not reference service accounts".into())
        );
        assert_eq!(
            mirror(
                json!({"volumes": [{"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]})
            ),
            Err("a mirror pod may not use ServiceAccountToken volume projections".into())
        );
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
