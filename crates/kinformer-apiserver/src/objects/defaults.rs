//! The defaults kube-apiserver sets on the workload kinds' top-level spec fields, which
//! controllers and kubectl read back (`spec.replicas`, a deployment's strategy, a job's
//! completions and backoff limit, ...), and on a CRD's spec (`conversion`, `names.listKind`).
//! Pod specs, in pods and in every workload's template, get theirs from [`super::pod_defaults`].

use serde_json::{Map, Value, json};

use super::json_path::set;
use crate::resource::ResourceInfo;

/// A CRD's defaults (`SetDefaults_CustomResourceDefinitionSpec`): no conversion webhook, the
/// singular and list kind from the kind.
fn crd_defaults(obj: &mut Map<String, Value>) {
    let Some(Value::Object(spec)) = obj.get_mut("spec") else {
        return;
    };
    set(spec, "conversion", json!({"strategy": "None"}));
    if let Some(Value::Object(names)) = spec.get_mut("names") {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let empty = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
        if empty(names.get("singular")) {
            names.insert("singular".into(), Value::String(kind.to_lowercase()));
        }
        if empty(names.get("listKind")) && !kind.is_empty() {
            names.insert("listKind".into(), Value::String(format!("{kind}List")));
        }
    }
}

/// `SetDefaults_ReplicationController`: one replica, and the selector and labels from the
/// template's labels when not given.
fn replication_controller(obj: &mut Map<String, Value>) {
    let template_labels = obj
        .get("spec")
        .and_then(|s| s.pointer("/template/metadata/labels"))
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    if let Some(labels) = &template_labels {
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta
            && meta
                .get("labels")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty)
        {
            meta.insert("labels".into(), labels.clone());
        }
    }
    let Value::Object(spec) = obj
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()))
    else {
        return;
    };
    set(spec, "replicas", json!(1));
    if let Some(labels) = template_labels
        && spec
            .get("selector")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
    {
        spec.insert("selector".into(), labels);
    }
}

/// Fills the defaults of `obj` (a create or update body of `res`) in place.
/// `SetDefaults_EndpointPort` of core/v1: a port's protocol is `TCP`.
fn endpoints(obj: &mut Map<String, Value>) {
    let subsets = obj.get_mut("subsets").and_then(Value::as_array_mut);
    for subset in subsets.into_iter().flatten() {
        let ports = subset.get_mut("ports").and_then(Value::as_array_mut);
        for port in ports.into_iter().flatten().filter_map(Value::as_object_mut) {
            set(port, "protocol", json!("TCP"));
        }
    }
}

/// `SetDefaults_EndpointPort` of discovery/v1: a port's name is `""` and its protocol `TCP`.
fn endpoint_slice(obj: &mut Map<String, Value>) {
    let ports = obj.get_mut("ports").and_then(Value::as_array_mut);
    for port in ports.into_iter().flatten().filter_map(Value::as_object_mut) {
        set(port, "name", json!(""));
        set(port, "protocol", json!("TCP"));
    }
}

/// A ValidatingAdmissionPolicy or MutatingAdmissionPolicy
/// (`SetObjectDefaults_ValidatingAdmissionPolicy`, `..._MutatingAdmissionPolicy`): `Fail`, and
/// its `matchConstraints` as [`match_resources`].
fn admission_policy(obj: &mut Map<String, Value>) {
    let Some(Value::Object(spec)) = obj.get_mut("spec") else {
        return;
    };
    set(spec, "failurePolicy", json!("Fail"));
    if let Some(Value::Object(m)) = spec.get_mut("matchConstraints") {
        match_resources(m);
    }
}

/// `SetDefaults_MatchResources` and its rules' `SetDefaults_Rule`.
fn match_resources(m: &mut Map<String, Value>) {
    set(m, "matchPolicy", json!("Equivalent"));
    set(m, "namespaceSelector", json!({}));
    set(m, "objectSelector", json!({}));
    for k in ["resourceRules", "excludeResourceRules"] {
        let rules = m.get_mut(k).and_then(Value::as_array_mut);
        for rule in rules.into_iter().flatten().filter_map(Value::as_object_mut) {
            set(rule, "scope", json!("*"));
        }
    }
}

/// A webhook configuration's webhooks (`SetDefaults_ValidatingWebhook`,
/// `SetDefaults_MutatingWebhook`, `SetDefaults_Rule`, `SetDefaults_ServiceReference`).
fn webhooks(obj: &mut Map<String, Value>, mutating: bool) {
    let hooks = obj.get_mut("webhooks").and_then(Value::as_array_mut);
    for hook in hooks.into_iter().flatten().filter_map(Value::as_object_mut) {
        set(hook, "failurePolicy", json!("Fail"));
        set(hook, "matchPolicy", json!("Equivalent"));
        set(hook, "namespaceSelector", json!({}));
        set(hook, "objectSelector", json!({}));
        set(hook, "timeoutSeconds", json!(10));
        if mutating {
            set(hook, "reinvocationPolicy", json!("Never"));
        }
        let rules = hook.get_mut("rules").and_then(Value::as_array_mut);
        for rule in rules.into_iter().flatten().filter_map(Value::as_object_mut) {
            set(rule, "scope", json!("*"));
        }
        if let Some(Value::Object(svc)) = hook
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
        {
            set(svc, "port", json!(443));
        }
    }
}

pub(crate) fn apply_defaults(res: &ResourceInfo, obj: &mut Map<String, Value>) {
    let (group, plural) = (res.group.as_str(), res.plural.as_str());
    if (group, plural) == ("apiextensions.k8s.io", "customresourcedefinitions") {
        crd_defaults(obj);
        return;
    }
    if super::service::is_service(res) {
        super::service::defaults(obj);
        return;
    }
    match (group, plural) {
        ("", "endpoints") => {
            endpoints(obj);
            return;
        }
        ("discovery.k8s.io", "endpointslices") => {
            endpoint_slice(obj);
            return;
        }
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies" | "mutatingadmissionpolicies",
        ) => {
            admission_policy(obj);
            return;
        }
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings" | "mutatingadmissionpolicybindings",
        ) => {
            if let Some(Value::Object(m)) = obj
                .get_mut("spec")
                .and_then(|s| s.get_mut("matchResources"))
            {
                match_resources(m);
            }
            return;
        }
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => {
            webhooks(obj, true);
            return;
        }
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations") => {
            webhooks(obj, false);
            return;
        }
        _ => {}
    }
    super::pod_defaults::apply(res, obj);
    if (group, plural) == ("", "replicationcontrollers") {
        replication_controller(obj);
        return;
    }
    if !matches!(
        (group, plural),
        (
            "apps",
            "deployments" | "replicasets" | "statefulsets" | "daemonsets"
        ) | ("batch", "jobs" | "cronjobs")
    ) {
        return;
    }
    let Value::Object(spec) = obj
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()))
    else {
        return;
    };
    match (group, plural) {
        ("apps", "deployments") => {
            set(spec, "replicas", json!(1));
            set(spec, "revisionHistoryLimit", json!(10));
            set(spec, "progressDeadlineSeconds", json!(600));
            set(spec, "strategy", json!({"type": "RollingUpdate"}));
            if let Some(Value::Object(st)) = spec.get_mut("strategy")
                && st.get("type").and_then(|t| t.as_str()) == Some("RollingUpdate")
            {
                let ru = st
                    .entry("rollingUpdate")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(ru) = ru {
                    set(ru, "maxUnavailable", json!("25%"));
                    set(ru, "maxSurge", json!("25%"));
                }
            }
        }
        ("apps", "replicasets") => set(spec, "replicas", json!(1)),
        ("apps", "statefulsets") => {
            set(spec, "replicas", json!(1));
            set(spec, "podManagementPolicy", json!("OrderedReady"));
            set(spec, "revisionHistoryLimit", json!(10));
            set(
                spec,
                "updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
            );
            set(
                spec,
                "persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            );
        }
        ("apps", "daemonsets") => {
            set(spec, "revisionHistoryLimit", json!(10));
            set(
                spec,
                "updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            );
        }
        ("batch", "jobs") => {
            let unset = |f: &str| spec.get(f).is_none_or(|x| x.is_null());
            if unset("completions") && unset("parallelism") {
                spec.insert("completions".into(), json!(1));
            }
            set(spec, "parallelism", json!(1));
            set(spec, "backoffLimit", json!(6));
            set(spec, "completionMode", json!("NonIndexed"));
            set(spec, "suspend", json!(false));
            if spec.get("podFailurePolicy").is_none() {
                set(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
            }
        }
        ("batch", "cronjobs") => {
            set(spec, "concurrencyPolicy", json!("Allow"));
            set(spec, "suspend", json!(false));
            set(spec, "successfulJobsHistoryLimit", json!(3));
            set(spec, "failedJobsHistoryLimit", json!(1));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::test_util::{body, res};

    #[test]
    fn workload_defaults() {
        let mut d = body(json!({"spec": {"replicas": 3}}));
        apply_defaults(&res("deployments"), &mut d);
        assert_eq!(
            d["spec"],
            json!({"replicas": 3, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}})
        );
        let mut recreate = body(json!({"spec": {"strategy": {"type": "Recreate"}}}));
        apply_defaults(&res("deployments"), &mut recreate);
        assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(recreate["spec"]["replicas"], 1);

        let mut j = body(json!({"spec": {"parallelism": 2}}));
        apply_defaults(&res("jobs"), &mut j);
        assert_eq!(j["spec"].get("completions"), None);
        assert_eq!(j["spec"]["backoffLimit"], 6);
        let mut j = body(json!({}));
        apply_defaults(&res("jobs"), &mut j);
        assert_eq!(
            (
                j["spec"]["completions"].clone(),
                j["spec"]["parallelism"].clone()
            ),
            (json!(1), json!(1))
        );

        let mut cm = body(json!({"data": {}}));
        apply_defaults(&res("configmaps"), &mut cm);
        assert_eq!(cm, body(json!({"data": {}})));
    }

    #[test]
    fn crd_defaults_as_kube_apiserver_sets_them() {
        let crds = res("customresourcedefinitions");
        let mut crd = body(json!({"spec": {"names": {"plural": "widgets", "kind": "Widget"}}}));
        apply_defaults(&crds, &mut crd);
        assert_eq!(
            crd["spec"],
            json!({"conversion": {"strategy": "None"}, "names": {"plural": "widgets",
                "kind": "Widget", "singular": "widget", "listKind": "WidgetList"}})
        );
        let given = json!({"conversion": {"strategy": "Webhook"}, "names": {"plural": "ws",
            "kind": "W", "singular": "one", "listKind": "Many"}});
        let mut crd = body(json!({ "spec": given }));
        apply_defaults(&crds, &mut crd);
        assert_eq!(crd["spec"], given);
    }
}
