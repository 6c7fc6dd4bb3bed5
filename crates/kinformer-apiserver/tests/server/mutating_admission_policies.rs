//! MutatingAdmissionPolicy (GA and on by default in Kubernetes 1.36) as a controller author's
//! tests meet it, through kube-rs: the policy an operator ships injects a sidecar and a label
//! into the Deployments of labelled namespaces on create, update, server-side apply and dry
//! run; the object is defaulted and validated after it, and a ValidatingAdmissionPolicy sees
//! the mutated object; a JSON Patch policy's failure refuses the write in kube-apiserver's
//! words; namespaces the binding does not select are left alone.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding, ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "app", "image": "nginx"}]}}
        }
    }))
    .unwrap()
}

/// Creates the mutating policy `name` with `spec` and its binding (`<name>-binding`) selecting
/// the namespaces labelled `sidecars=on`.
async fn install(c: &kube::Client, name: &str, spec: Value) {
    let policies: Api<MutatingAdmissionPolicy> = Api::all(c.clone());
    let policy = serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}));
    policies
        .create(&PostParams::default(), &policy.unwrap())
        .await
        .unwrap();
    let bindings: Api<MutatingAdmissionPolicyBinding> = Api::all(c.clone());
    let binding = serde_json::from_value(json!({
        "metadata": {"name": format!("{name}-binding")},
        "spec": {"policyName": name, "matchResources": {
            "namespaceSelector": {"matchLabels": {"sidecars": "on"}}}}
    }));
    bindings
        .create(&PostParams::default(), &binding.unwrap())
        .await
        .unwrap();
}

async fn namespaces(c: &kube::Client) {
    let namespaces: Api<Namespace> = Api::all(c.clone());
    for (name, labels) in [("meshed", json!({"sidecars": "on"})), ("plain", json!({}))] {
        let ns = serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}));
        namespaces
            .create(&PostParams::default(), &ns.unwrap())
            .await
            .unwrap();
    }
}

fn containers(d: &Deployment) -> Vec<(String, Option<String>)> {
    let spec = d.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    spec.containers
        .iter()
        .map(|c| (c.name.clone(), c.image_pull_policy.clone()))
        .collect()
}

#[tokio::test]
async fn an_operators_policy_injects_a_sidecar_that_is_defaulted_validated_and_stored() {
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    namespaces(&c).await;
    install(
        &c,
        "inject-sidecar",
        json!({
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
            "reinvocationPolicy": "IfNeeded",
            "mutations": [{
                "patchType": "ApplyConfiguration",
                "applyConfiguration": {"expression": r#"
                    Object{
                      metadata: Object.metadata{labels: {"mesh": "injected"}},
                      spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{
                        containers: [Object.spec.template.spec.containers{name: "proxy", image: "envoy:1.30"}]
                      }}}
                    }"#}
            }]
        }),
    )
    .await;
    // the policy's own objects were defaulted and given a generation
    let policies: Api<MutatingAdmissionPolicy> = Api::all(c.clone());
    let stored = policies.get("inject-sidecar").await.unwrap();
    assert_eq!(stored.metadata.generation, Some(1));
    let spec = stored.spec.unwrap();
    assert_eq!(spec.failure_policy.as_deref(), Some("Fail"));
    assert_eq!(
        spec.match_constraints.unwrap().match_policy.as_deref(),
        Some("Equivalent")
    );
    // a ValidatingAdmissionPolicy requiring the label sees the mutated object
    let vaps: Api<ValidatingAdmissionPolicy> = Api::all(c.clone());
    let vap = serde_json::from_value(json!({"metadata": {"name": "require-mesh"}, "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}],
            "namespaceSelector": {"matchLabels": {"sidecars": "on"}}},
        "validations": [{"expression": "has(object.metadata.labels) && 'mesh' in object.metadata.labels",
                         "message": "not meshed"}]}}));
    vaps.create(&PostParams::default(), &vap.unwrap())
        .await
        .unwrap();
    let vap_bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(c.clone());
    let vb = serde_json::from_value(json!({"metadata": {"name": "require-mesh"},
        "spec": {"policyName": "require-mesh", "validationActions": ["Deny"]}}));
    vap_bindings
        .create(&PostParams::default(), &vb.unwrap())
        .await
        .unwrap();

    let meshed: Api<Deployment> = Api::namespaced(c.clone(), "meshed");
    let created = meshed
        .create(&PostParams::default(), &deployment("web"))
        .await
        .expect("created, mutated, then admitted");
    let labels = created.metadata.labels.clone().unwrap();
    assert_eq!(labels.get("mesh").map(String::as_str), Some("injected"));
    // the injected container defaulted as one the client sent would be
    assert_eq!(
        containers(&created),
        [
            ("app".to_string(), Some("Always".to_string())),
            ("proxy".to_string(), Some("IfNotPresent".to_string()))
        ]
    );
    let got = meshed.get("web").await.unwrap();
    assert_eq!(containers(&got), containers(&created));
    // the client's fields are its own; what the policy added belongs to no manager
    let owned = serde_json::to_string(&got.metadata.managed_fields).unwrap();
    assert!(owned.contains(r#"k:{\"name\":\"app\"}"#), "{owned}");
    assert!(
        !owned.contains("proxy") && !owned.contains("f:mesh"),
        "{owned}"
    );

    // an update keeps one proxy (merged by name) and a server-side apply is mutated too
    let mut update = got.clone();
    update.spec.as_mut().unwrap().replicas = Some(2);
    let updated = meshed
        .replace("web", &PostParams::default(), &update)
        .await
        .unwrap();
    assert_eq!(containers(&updated).len(), 2);
    let applied = meshed
        .patch(
            "api",
            &PatchParams::apply("tests"),
            &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "api"},
                "spec": {"selector": {"matchLabels": {"app": "api"}},
                         "template": {"metadata": {"labels": {"app": "api"}},
                                      "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}})),
        )
        .await
        .unwrap();
    assert_eq!(containers(&applied).len(), 2);

    // a dry run is mutated and not stored
    let dry = meshed
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &deployment("dry"),
        )
        .await
        .unwrap();
    assert_eq!(containers(&dry).len(), 2);
    assert!(meshed.get_opt("dry").await.unwrap().is_none());

    // a namespace the binding does not select: untouched (and the VAP does not apply there)
    let plain: Api<Deployment> = Api::namespaced(c.clone(), "plain");
    let untouched = plain
        .create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    assert_eq!(containers(&untouched).len(), 1);
    assert!(
        !untouched
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key("mesh")
    );
}

#[tokio::test]
async fn a_json_patch_policy_mutates_updates_and_its_failure_refuses_in_kube_apiservers_words() {
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    namespaces(&c).await;
    install(
        &c,
        "stamp",
        json!({
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
            "reinvocationPolicy": "Never",
            "variables": [{"name": "op", "expression": "request.operation.lowerAscii()"}],
            "matchConditions": [{"name": "not-opted-out",
                "expression": "!has(object.metadata.annotations) || !('skip' in object.metadata.annotations)"}],
            "mutations": [{
                "patchType": "JSONPatch",
                "jsonPatch": {"expression": r#"
                    (has(object.data) ? [] : [JSONPatch{op: "add", path: "/data", value: {}}]) +
                    [JSONPatch{op: "add", path: "/data/" + jsonpatch.escapeKey("last." + variables.op), value: "yes"},
                     JSONPatch{op: "replace", path: "/data/must", value: object.data.must}]"#}
            }]
        }),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "meshed");
    let cm = |name: &str, data: Value, annotations: Value| -> ConfigMap {
        serde_json::from_value(
            json!({"metadata": {"name": name, "annotations": annotations},
            "data": data}),
        )
        .unwrap()
    };
    let created = cms
        .create(
            &PostParams::default(),
            &cm("a", json!({"must": "1"}), json!({})),
        )
        .await
        .unwrap();
    let data = created.data.clone().unwrap();
    assert_eq!(data.get("last.create").map(String::as_str), Some("yes"));
    let mut next = created.clone();
    next.data
        .as_mut()
        .unwrap()
        .insert("must".into(), "2".into());
    let replaced = cms
        .replace("a", &PostParams::default(), &next)
        .await
        .unwrap();
    let data = replaced.data.unwrap();
    assert_eq!(data.get("last.update").map(String::as_str), Some("yes"));
    assert_eq!(data.get("must").map(String::as_str), Some("2"));

    // `object.data.must` is missing: the expression fails and failurePolicy Fail refuses
    let e = cms
        .create(
            &PostParams::default(),
            &cm("b", json!({"other": "1"}), json!({})),
        )
        .await
        .expect_err("refused");
    let kube::Error::Api(status) = e else {
        panic!("not an API error: {e}")
    };
    assert_eq!((status.code, status.reason.as_str()), (403, "Invalid"));
    assert!(
        status.message.starts_with(
            "policy 'stamp' with binding 'stamp-binding' denied request: expression '"
        ) && status
            .message
            .ends_with("' resulted in error: no such key: must"),
        "{}",
        status.message
    );
    assert!(cms.get_opt("b").await.unwrap().is_none());
    // a matchCondition that is false skips the policy
    let skipped = cms
        .create(
            &PostParams::default(),
            &cm("c", json!({}), json!({"skip": "yes"})),
        )
        .await
        .unwrap();
    assert!(skipped.data.unwrap_or_default().is_empty());
}
