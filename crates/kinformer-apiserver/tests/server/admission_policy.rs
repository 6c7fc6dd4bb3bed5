//! ValidatingAdmissionPolicy as a controller author's tests meet it, through kube-rs: the
//! policy an operator ships (its Helm chart's `ValidatingAdmissionPolicy` and binding) refuses
//! the writes it names, in kube-apiserver's words, on creates, updates, patches, server-side
//! applies, deletes and dry runs, and leaves alone what it does not name (other namespaces, the
//! `/scale` subresource, the policies themselves).

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        }
    }))
    .unwrap()
}

/// Creates a policy named `name` with `spec`, and its binding `binding` with `binding_spec`
/// (`policyName` filled in).
async fn install(
    c: &kube::Client,
    name: &str,
    spec: Value,
    binding: &str,
    mut binding_spec: Value,
) {
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(c.clone());
    let policy = serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}));
    policies
        .create(&PostParams::default(), &policy.unwrap())
        .await
        .unwrap();
    binding_spec["policyName"] = json!(name);
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(c.clone());
    let b = serde_json::from_value(json!({"metadata": {"name": binding}, "spec": binding_spec}));
    bindings
        .create(&PostParams::default(), &b.unwrap())
        .await
        .unwrap();
}

fn api_error(e: kube::Error) -> (u16, String, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason, s.message),
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test]
async fn an_operators_admission_policy_refuses_what_it_names_in_kube_apiservers_words() {
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let namespaces: Api<Namespace> = Api::all(c.clone());
    for (name, labels) in [("guarded", json!({"env": "test"})), ("free", json!({}))] {
        let ns = serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}));
        namespaces
            .create(&PostParams::default(), &ns.unwrap())
            .await
            .unwrap();
    }
    install(
        &c,
        "replica-limit",
        json!({
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
            "validations": [
                {"expression": "object.spec.replicas <= 5"},
                {"expression": "oldObject == null || object.spec.replicas >= oldObject.spec.replicas",
                 "messageExpression": "'replicas may not go down from ' + string(oldObject.spec.replicas)",
                 "reason": "Forbidden"}
            ]
        }),
        "replica-limit-test",
        json!({"validationActions": ["Deny"],
               "matchResources": {"namespaceSelector": {"matchLabels": {"env": "test"}}}}),
    )
    .await;
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(c.clone());

    let guarded: Api<Deployment> = Api::namespaced(c.clone(), "guarded");
    let (code, reason, message) = api_error(
        guarded
            .create(&PostParams::default(), &deployment("big", 6))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with \
         binding 'replica-limit-test' denied request: failed expression: object.spec.replicas <= 5"
    );
    // a dry run is refused alike, and nothing is stored either way
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    assert_eq!(
        api_error(
            guarded
                .create(&dry, &deployment("big", 6))
                .await
                .unwrap_err()
        )
        .0,
        422
    );
    assert!(guarded.get_opt("big").await.unwrap().is_none());
    // not bound in a namespace without the label
    let free: Api<Deployment> = Api::namespaced(c.clone(), "free");
    free.create(&PostParams::default(), &deployment("big", 6))
        .await
        .unwrap();

    // updates see oldObject: a patch, an apply and a replace are each refused
    guarded
        .create(&PostParams::default(), &deployment("web", 3))
        .await
        .unwrap();
    let down = json!({"spec": {"replicas": 2}});
    let (code, reason, message) = api_error(
        guarded
            .patch("web", &PatchParams::default(), &Patch::Merge(&down))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert!(
        message.ends_with("denied request: replicas may not go down from 3"),
        "{message}"
    );
    let apply = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "web"}, "spec": {"replicas": 9}});
    let pp = PatchParams::apply("my-operator").force();
    let (code, _, message) = api_error(
        guarded
            .patch("web", &pp, &Patch::Apply(&apply))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert!(message.contains("object.spec.replicas <= 5"), "{message}");
    // the /scale subresource is not "deployments": the rule does not name it
    let scaled = guarded
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(1));
    let grown = json!({"spec": {"replicas": 4}});
    guarded
        .patch("web", &PatchParams::default(), &Patch::Merge(&grown))
        .await
        .unwrap();

    // the policies' own group is never subject to policies; deleting the binding ends it
    bindings
        .delete("replica-limit-test", &DeleteParams::default())
        .await
        .unwrap();
    guarded
        .create(&PostParams::default(), &deployment("big", 6))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_delete_policy_keeps_what_it_protects() {
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    install(
        &c,
        "protected",
        json!({
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["DELETE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "!has(oldObject.metadata.labels) || !('protected' in oldObject.metadata.labels)",
                             "message": "this configmap is protected"}]
        }),
        "protected",
        json!({"validationActions": ["Deny"]}),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    for (name, labels) in [("keep", json!({"protected": "true"})), ("drop", json!({}))] {
        let cm = serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}));
        cms.create(&PostParams::default(), &cm.unwrap())
            .await
            .unwrap();
    }
    let (code, _, message) = api_error(
        cms.delete("keep", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert!(
        message.ends_with("denied request: this configmap is protected"),
        "{message}"
    );
    assert!(cms.get_opt("keep").await.unwrap().is_some());
    cms.delete("drop", &DeleteParams::default()).await.unwrap();
    assert!(cms.get_opt("drop").await.unwrap().is_none());
}
