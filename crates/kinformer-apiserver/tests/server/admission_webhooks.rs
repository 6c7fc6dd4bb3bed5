//! Admission webhooks as a controller author's tests meet them: a webhook server written the
//! way kube-rs users write one (axum over rustls, kube's `AdmissionReview` types), registered
//! with the test cluster through `ValidatingWebhookConfiguration` and
//! `MutatingWebhookConfiguration` objects, by URL with its CA bundle or by Service. The test
//! cluster calls it on creates, updates, patches, applies and deletes, applies what the
//! mutating ones patch before the validating ones look, refuses in kube-apiserver 1.36's words what
//! they deny, honours `failurePolicy`, selectors and dry runs, and stores nothing a webhook
//! refused.

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// What the webhook server saw: every request, by path.
#[derive(Default)]
pub(crate) struct Seen {
    requests: Mutex<Vec<(String, AdmissionRequest<DynamicObject>)>>,
}

impl Seen {
    pub(crate) fn of(&self, path: &str) -> Vec<AdmissionRequest<DynamicObject>> {
        self.requests
            .lock()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, r)| r.clone())
            .collect()
    }
}

/// A running webhook server and the CA its certificate chains to.
pub(crate) struct Webhooks {
    addr: SocketAddr,
    ca_pem: String,
    pub(crate) seen: Arc<Seen>,
}

impl Webhooks {
    pub(crate) fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.addr.port())
    }

    pub(crate) fn ca_bundle(&self) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }
}

fn labels(o: &DynamicObject) -> std::collections::BTreeMap<String, String> {
    o.metadata.labels.clone().unwrap_or_default()
}

/// `/validate`: denies objects labelled `deny`, with a warning on every answer.
fn validate(req: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let mut r = AdmissionResponse::from(req);
    r.warnings = Some(vec!["looked at by validate.example.com".into()]);
    match &req.object {
        Some(o) if labels(o).contains_key("deny") => r.deny("label deny is set"),
        _ => r,
    }
}

/// `/mutate`: labels what it sees `mutated: yes`.
fn mutate(req: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let r = AdmissionResponse::from(req);
    let Some(o) = &req.object else { return r };
    let mut ops = Vec::new();
    if o.metadata.labels.is_none() {
        ops.push(json!({"op": "add", "path": "/metadata/labels", "value": {}}));
    }
    ops.push(json!({"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}));
    let patch: json_patch_4::Patch = serde_json::from_value(Value::Array(ops)).unwrap();
    r.with_patch(patch).unwrap()
}

/// `/annotate`: notes whether `/mutate`'s label is there yet (`saw-mutated`).
fn annotate(req: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let r = AdmissionResponse::from(req);
    let Some(o) = &req.object else { return r };
    let saw = if labels(o).contains_key("mutated") {
        "yes"
    } else {
        "no"
    };
    let mut ops = Vec::new();
    if o.metadata.annotations.is_none() {
        ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {}}));
    }
    ops.push(json!({"op": "add", "path": "/metadata/annotations/saw-mutated", "value": saw}));
    let patch: json_patch_4::Patch = serde_json::from_value(Value::Array(ops)).unwrap();
    r.with_patch(patch).unwrap()
}

/// `/scale-cap`: refuses a `Scale` of more than 5 replicas.
fn scale_cap(req: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let r = AdmissionResponse::from(req);
    let replicas = req
        .object
        .as_ref()
        .and_then(|o| o.data["spec"]["replicas"].as_i64())
        .unwrap_or(0);
    if replicas > 5 {
        r.deny("at most 5 replicas")
    } else {
        r
    }
}

/// `/require-mutated`: denies what the mutating webhook has not labelled.
fn require_mutated(req: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let r = AdmissionResponse::from(req);
    match &req.object {
        Some(o) if labels(o).get("mutated").map(String::as_str) != Some("yes") => {
            r.deny("not mutated")
        }
        _ => r,
    }
}

/// `/protect`: refuses deletes of objects labelled `protected`.
fn protect(req: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let r = AdmissionResponse::from(req);
    match (&req.operation, &req.old_object) {
        (Operation::Delete, Some(o)) if labels(o).contains_key("protected") => {
            r.deny("protected objects stay")
        }
        _ => r,
    }
}

async fn answer(
    State((seen, path)): State<(Arc<Seen>, &'static str)>,
    Json(review): Json<AdmissionReview<DynamicObject>>,
) -> Json<AdmissionReview<DynamicObject>> {
    let req: AdmissionRequest<DynamicObject> = review.try_into().unwrap();
    seen.requests.lock().push((path.to_string(), req.clone()));
    let response = match path {
        "/validate" => validate(&req),
        "/mutate" => mutate(&req),
        "/annotate" => annotate(&req),
        "/scale-cap" => scale_cap(&req),
        "/require-mutated" => require_mutated(&req),
        "/protect" => protect(&req),
        _ => AdmissionResponse::invalid("unknown path"),
    };
    Json(response.into_review())
}

/// Starts the webhook server with a certificate for `names` (and 127.0.0.1) signed by a
/// fresh CA.
pub(crate) async fn serve(names: &[&str]) -> Webhooks {
    let seen = Arc::new(Seen::default());
    let mut router = axum::Router::new();
    for path in [
        "/validate",
        "/mutate",
        "/annotate",
        "/scale-cap",
        "/require-mutated",
        "/protect",
    ] {
        router = router.route(path, post(answer).with_state((seen.clone(), path)));
    }
    let served = common::tls_server::serve(names, router).await;
    Webhooks {
        addr: served.addr,
        ca_pem: served.ca_pem,
        seen,
    }
}

/// One webhook on configmaps (`operations`), called at `client_config`.
pub(crate) fn hook(name: &str, client_config: Value, operations: &[&str], extra: Value) -> Value {
    let mut h = json!({
        "name": name,
        "clientConfig": client_config,
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": operations,
                   "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Value::Object(h), Value::Object(extra)) = (&mut h, extra) {
        h.extend(extra);
    }
    h
}

pub(crate) async fn validating(c: &kube::Client, name: &str, hooks: Vec<Value>) {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(c.clone());
    let v = serde_json::from_value(json!({"metadata": {"name": name}, "webhooks": hooks})).unwrap();
    api.create(&PostParams::default(), &v).await.unwrap();
}

pub(crate) async fn mutating(c: &kube::Client, name: &str, hooks: Vec<Value>) {
    let api: Api<MutatingWebhookConfiguration> = Api::all(c.clone());
    let v = serde_json::from_value(json!({"metadata": {"name": name}, "webhooks": hooks})).unwrap();
    api.create(&PostParams::default(), &v).await.unwrap();
}

pub(crate) fn config_map(name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels},
                                  "data": {"k": "v"}}))
    .unwrap()
}

fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_validating_webhook_refuses_what_it_denies_on_every_verb() {
    let w = serve(&[]).await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let url = json!({"url": w.url("/validate"), "caBundle": w.ca_bundle()});
    let ops = ["CREATE", "UPDATE"];
    validating(
        &c,
        "validate",
        vec![hook("validate.example.com", url, &ops, json!({}))],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");

    // create: refused in kube-apiserver's words, nothing stored
    let e = api_error(
        cms.create(
            &PostParams::default(),
            &config_map("bad", json!({"deny": "1"})),
        )
        .await
        .unwrap_err(),
    );
    // kube-apiserver 1.36: the webhook's code (none: 400) and its message, prefixed
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "admission webhook \"validate.example.com\" denied the request: label deny is set"
    );
    assert!(cms.get_opt("bad").await.unwrap().is_none());

    // allowed: stored; the webhook saw the create as kube-apiserver sends it
    let good = cms
        .create(&PostParams::default(), &config_map("good", json!({})))
        .await
        .unwrap();
    let seen = w.seen.of("/validate");
    let last = seen.last().unwrap();
    assert_eq!(last.operation, Operation::Create);
    assert_eq!(last.name, "good");
    assert_eq!(last.namespace.as_deref(), Some("default"));
    assert_eq!(last.resource.resource, "configmaps");
    assert_eq!(last.kind.kind, "ConfigMap");
    assert_eq!(last.user_info.username.as_deref(), Some("kinformer-admin"));
    assert!(!last.dry_run);
    assert!(last.old_object.is_none());
    let object = last.object.as_ref().unwrap();
    // what validating webhooks see is what is stored: the uid included
    assert_eq!(object.metadata.uid, good.metadata.uid);

    // update, merge patch, strategic patch, apply: each refused when it sets the label
    let mut changed = good.clone();
    changed.metadata.labels = Some([("deny".to_string(), "1".to_string())].into());
    let e = api_error(
        cms.replace("good", &PostParams::default(), &changed)
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 400, "{}", e.message);
    let deny = json!({"metadata": {"labels": {"deny": "1"}}});
    for patch in [Patch::Merge(&deny), Patch::Strategic(&deny)] {
        let e = api_error(
            cms.patch("good", &PatchParams::default(), &patch)
                .await
                .unwrap_err(),
        );
        assert_eq!(e.code, 400, "{}", e.message);
    }
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "good", "labels": {"deny": "1"}}});
    let e = api_error(
        cms.patch(
            "good",
            &PatchParams::apply("tester"),
            &Patch::Apply(&applied),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 400, "{}", e.message);
    let stored = cms.get("good").await.unwrap();
    assert_eq!(
        stored.metadata.resource_version,
        good.metadata.resource_version
    );

    // an allowed update: the webhook saw the old object too
    let ok = json!({"data": {"k": "w"}});
    cms.patch("good", &PatchParams::default(), &Patch::Merge(&ok))
        .await
        .unwrap();
    let seen = w.seen.of("/validate");
    let last = seen.last().unwrap();
    assert_eq!(last.operation, Operation::Update);
    let old = last.old_object.as_ref().unwrap();
    assert_eq!(old.data["data"]["k"], "v");
    assert_eq!(last.object.as_ref().unwrap().data["data"]["k"], "w");

    // a dry run is sent as one, and stores nothing
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    cms.create(&dry, &config_map("dry", json!({})))
        .await
        .unwrap();
    assert!(w.seen.of("/validate").last().unwrap().dry_run);
    assert!(cms.get_opt("dry").await.unwrap().is_none());
}

#[tokio::test]
async fn mutating_webhooks_patch_before_validating_webhooks_look() {
    let w = serve(&[]).await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let ops = ["CREATE", "UPDATE"];
    let at = |p: &str| json!({"url": w.url(p), "caBundle": w.ca_bundle()});
    mutating(
        &c,
        "mutate",
        vec![hook("mutate.example.com", at("/mutate"), &ops, json!({}))],
    )
    .await;
    validating(
        &c,
        "require-mutated",
        vec![hook(
            "require.example.com",
            at("/require-mutated"),
            &ops,
            json!({}),
        )],
    )
    .await;
    // a ValidatingAdmissionPolicy sees the object after the mutating webhooks, as there
    let vap = json!({"metadata": {"name": "require-label"}, "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
        "validations": [{"expression": "'mutated' in object.metadata.labels"}]}});
    let vaps: Api<ValidatingAdmissionPolicy> = Api::all(c.clone());
    let vap = serde_json::from_value(vap).unwrap();
    vaps.create(&PostParams::default(), &vap).await.unwrap();
    let binding = json!({"metadata": {"name": "require-label"},
        "spec": {"policyName": "require-label", "validationActions": ["Deny"]}});
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(c.clone());
    let binding = serde_json::from_value(binding).unwrap();
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");

    // create with generateName: the mutating webhook sees no name yet, the validating one the
    // generated name, and the stored object carries the webhook's label
    let mut cm = config_map("", json!(null));
    cm.metadata.name = None;
    cm.metadata.generate_name = Some("gen-".into());
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    let name = created.metadata.name.clone().unwrap();
    assert!(name.starts_with("gen-"));
    assert_eq!(created.metadata.labels.as_ref().unwrap()["mutated"], "yes");
    let mutated = w.seen.of("/mutate");
    assert_eq!(mutated.last().unwrap().name, "");
    let validated = w.seen.of("/require-mutated");
    assert_eq!(validated.last().unwrap().name, name);
    // a webhook's change is not a field manager's
    let managed = serde_json::to_value(&created.metadata.managed_fields).unwrap();
    assert!(!managed.to_string().contains("f:mutated"), "{managed}");

    // an update that drops the label gets it back
    let mut replaced = created.clone();
    replaced.metadata.labels = None;
    let updated = cms
        .replace(&name, &PostParams::default(), &replaced)
        .await
        .unwrap();
    assert_eq!(updated.metadata.labels.as_ref().unwrap()["mutated"], "yes");

    // so does a server-side apply that creates
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "applied"}, "data": {"a": "b"}});
    let a = cms
        .patch(
            "applied",
            &PatchParams::apply("tester"),
            &Patch::Apply(&applied),
        )
        .await
        .unwrap();
    assert_eq!(a.metadata.labels.as_ref().unwrap()["mutated"], "yes");
    assert_eq!(
        cms.get("applied").await.unwrap().metadata.uid,
        a.metadata.uid
    );
}

#[tokio::test]
async fn deletes_are_seen_with_the_old_object() {
    let w = serve(&[]).await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let at = json!({"url": w.url("/protect"), "caBundle": w.ca_bundle()});
    validating(
        &c,
        "protect",
        vec![hook("protect.example.com", at, &["DELETE"], json!({}))],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    cms.create(
        &PostParams::default(),
        &config_map("kept", json!({"protected": "1"})),
    )
    .await
    .unwrap();
    cms.create(&PostParams::default(), &config_map("gone", json!({})))
        .await
        .unwrap();
    let e = api_error(
        cms.delete("kept", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        e.message,
        "admission webhook \"protect.example.com\" denied the request: protected objects stay"
    );
    assert!(cms.get_opt("kept").await.unwrap().is_some());
    cms.delete("gone", &DeleteParams::default()).await.unwrap();
    assert!(cms.get_opt("gone").await.unwrap().is_none());
    let seen = w.seen.of("/protect");
    let last = seen.last().unwrap();
    assert_eq!(last.operation, Operation::Delete);
    assert!(last.object.is_none());
    assert_eq!(
        last.old_object.as_ref().unwrap().metadata.name.as_deref(),
        Some("gone")
    );

    // a collection's deletes are each seen: the unprotected one goes, the protected one stays
    cms.create(&PostParams::default(), &config_map("also-gone", json!({})))
        .await
        .unwrap();
    let e = api_error(
        cms.delete_collection(&DeleteParams::default(), &Default::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 400, "{}", e.message);
    assert!(cms.get_opt("also-gone").await.unwrap().is_none());
    assert!(cms.get_opt("kept").await.unwrap().is_some());
}

#[tokio::test]
async fn failure_policy_decides_when_the_webhook_cannot_be_reached() {
    // a port nothing listens on
    let unused = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = unused.local_addr().unwrap().port();
    drop(unused);
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let url = json!({"url": format!("https://127.0.0.1:{port}/validate")});
    validating(
        &c,
        "unreachable",
        vec![
            hook(
                "ignore.example.com",
                url.clone(),
                &["CREATE"],
                json!({"failurePolicy": "Ignore"}),
            ),
            hook(
                "fail.example.com",
                url,
                &["CREATE"],
                json!({"objectSelector": {"matchLabels": {"strict": "yes"}}}),
            ),
        ],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    // only the Ignore webhook applies: passed over
    cms.create(&PostParams::default(), &config_map("open", json!({})))
        .await
        .unwrap();
    // the Fail one (the default) applies to objects labelled strict: refused as a 500
    let e = api_error(
        cms.create(
            &PostParams::default(),
            &config_map("closed", json!({"strict": "yes"})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 500);
    assert_eq!(e.reason, "InternalError");
    let prefix = format!(
        "Internal error occurred: failed calling webhook \"fail.example.com\": failed to call webhook: Post \"https://127.0.0.1:{port}/validate?timeout=10s\": "
    );
    assert!(e.message.starts_with(&prefix), "{}", e.message);
    assert!(cms.get_opt("closed").await.unwrap().is_none());
}

#[tokio::test]
async fn a_webhook_behind_a_service_and_a_namespace_selector() {
    let w = serve(&["hooks.webhooks.svc"]).await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let namespaces: Api<Namespace> = Api::all(c.clone());
    for (ns, label) in [
        ("webhooks", json!({})),
        ("watched", json!({"hooked": "yes"})),
        ("free", json!({})),
    ] {
        let n = serde_json::from_value(json!({"metadata": {"name": ns, "labels": label}})).unwrap();
        namespaces.create(&PostParams::default(), &n).await.unwrap();
    }
    // a Service without a selector and its EndpointSlice at the webhook server, as a test
    // points a cluster's Service at a process outside it
    let services: Api<DynamicObject> = Api::namespaced_with(
        c.clone(),
        "webhooks",
        &kube::discovery::ApiResource::erase::<k8s_openapi::api::core::v1::Service>(&()),
    );
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hooks"},
                     "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}});
    services
        .create(
            &PostParams::default(),
            &serde_json::from_value(svc).unwrap(),
        )
        .await
        .unwrap();
    let slices: Api<k8s_openapi::api::discovery::v1::EndpointSlice> =
        Api::namespaced(c.clone(), "webhooks");
    let slice = json!({"metadata": {"name": "hooks-1",
                                    "labels": {"kubernetes.io/service-name": "hooks"}},
                       "addressType": "IPv4",
                       "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
                       "ports": [{"name": "https", "port": w.addr.port()}]});
    slices
        .create(
            &PostParams::default(),
            &serde_json::from_value(slice).unwrap(),
        )
        .await
        .unwrap();
    let by_service = json!({"service": {"namespace": "webhooks", "name": "hooks",
                                        "path": "/validate"},
                            "caBundle": w.ca_bundle()});
    let selector = json!({"namespaceSelector": {"matchLabels": {"hooked": "yes"}}});
    validating(
        &c,
        "by-service",
        vec![hook(
            "service.example.com",
            by_service,
            &["CREATE"],
            selector,
        )],
    )
    .await;
    for ns in ["watched", "free"] {
        let cms: Api<ConfigMap> = Api::namespaced(c.clone(), ns);
        let r = cms
            .create(
                &PostParams::default(),
                &config_map("bad", json!({"deny": "1"})),
            )
            .await;
        match ns {
            "watched" => assert_eq!(api_error(r.unwrap_err()).code, 400),
            _ => {
                r.unwrap();
            }
        }
    }
    let seen = w.seen.of("/validate");
    assert_eq!(seen.len(), 1, "only the selected namespace's write is sent");
    assert_eq!(seen[0].namespace.as_deref(), Some("watched"));
}

#[tokio::test]
async fn a_configuration_a_real_cluster_refuses_is_refused_and_defaults_are_stored() {
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let api: Api<ValidatingWebhookConfiguration> = Api::all(c.clone());
    let bad = json!({"metadata": {"name": "bad"}, "webhooks": [{
        "name": "hook.example.com", "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": "http://127.0.0.1:1/v"}}]});
    let e = api_error(
        api.create(
            &PostParams::default(),
            &serde_json::from_value(bad).unwrap(),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 422);
    // k8s-openapi's `sideEffects` is a plain `String`: left out, it is sent as "", which
    // kube-apiserver calls an unsupported value (a missing one would be "Required value")
    assert_eq!(
        e.message,
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad\" is invalid: [webhooks[0].sideEffects: Unsupported value: \"\": supported values: \"None\", \"NoneOnDryRun\", webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]]"
    );
    let good = hook(
        "hook.example.com",
        json!({"url": "https://127.0.0.1:1/v"}),
        &["CREATE"],
        json!({}),
    );
    let good = json!({"metadata": {"name": "good"}, "webhooks": [good]});
    let stored = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(good).unwrap(),
        )
        .await
        .unwrap();
    let w = &stored.webhooks.as_ref().unwrap()[0];
    assert_eq!(w.failure_policy.as_deref(), Some("Fail"));
    assert_eq!(w.match_policy.as_deref(), Some("Equivalent"));
    assert_eq!(w.timeout_seconds, Some(10));
    assert_eq!(stored.metadata.generation, Some(1));
}

#[tokio::test]
async fn an_if_needed_webhook_is_called_again_after_a_later_change() {
    let w = serve(&[]).await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let ops = ["CREATE", "UPDATE"];
    let at = |p: &str| json!({"url": w.url(p), "caBundle": w.ca_bundle()});
    // configurations are called in the order of their names: "a-annotate" first
    let if_needed = json!({"reinvocationPolicy": "IfNeeded"});
    mutating(
        &c,
        "a-annotate",
        vec![hook(
            "annotate.example.com",
            at("/annotate"),
            &ops,
            if_needed,
        )],
    )
    .await;
    mutating(
        &c,
        "b-mutate",
        vec![hook("mutate.example.com", at("/mutate"), &ops, json!({}))],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let created = cms
        .create(&PostParams::default(), &config_map("r", json!({})))
        .await
        .unwrap();
    assert_eq!(created.metadata.annotations.unwrap()["saw-mutated"], "yes");
    assert_eq!(w.seen.of("/annotate").len(), 2, "called, then called again");
    assert_eq!(w.seen.of("/mutate").len(), 1);

    // without IfNeeded it is called once and keeps what it saw
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let w = serve(&[]).await;
    let at = |p: &str| json!({"url": w.url(p), "caBundle": w.ca_bundle()});
    mutating(
        &c,
        "a-annotate",
        vec![hook(
            "annotate.example.com",
            at("/annotate"),
            &ops,
            json!({}),
        )],
    )
    .await;
    mutating(
        &c,
        "b-mutate",
        vec![hook("mutate.example.com", at("/mutate"), &ops, json!({}))],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let created = cms
        .create(&PostParams::default(), &config_map("r", json!({})))
        .await
        .unwrap();
    assert_eq!(created.metadata.annotations.unwrap()["saw-mutated"], "no");
    assert_eq!(w.seen.of("/annotate").len(), 1);
}

#[tokio::test]
async fn writes_through_scale_are_seen_as_the_scale() {
    let w = serve(&[]).await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let at = json!({"url": w.url("/scale-cap"), "caBundle": w.ca_bundle()});
    let rules = json!({"rules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                  "operations": ["UPDATE"], "resources": ["deployments/scale"]}]});
    validating(
        &c,
        "scale-cap",
        vec![hook("cap.example.com", at, &["UPDATE"], rules)],
    )
    .await;
    let deploys: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(c.clone(), "default");
    let d = json!({"metadata": {"name": "web"}, "spec": {"replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    deploys
        .create(&PostParams::default(), &serde_json::from_value(d).unwrap())
        .await
        .unwrap();
    // a rule on deployments/scale does not see the deployment's own writes
    assert!(w.seen.of("/scale-cap").is_empty());
    let pp = PatchParams::default();
    let ok = deploys
        .patch_scale("web", &pp, &Patch::Merge(json!({"spec": {"replicas": 4}})))
        .await
        .unwrap();
    assert_eq!(ok.spec.unwrap().replicas, Some(4));
    let e = api_error(
        deploys
            .patch_scale("web", &pp, &Patch::Merge(json!({"spec": {"replicas": 9}})))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        e.message,
        "admission webhook \"cap.example.com\" denied the request: at most 5 replicas"
    );
    assert_eq!(
        deploys.get("web").await.unwrap().spec.unwrap().replicas,
        Some(4)
    );
    let seen = w.seen.of("/scale-cap");
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].kind.kind, "Scale");
    assert_eq!(seen[0].kind.group, "autoscaling");
    assert_eq!(seen[0].resource.resource, "deployments");
    assert_eq!(seen[0].sub_resource.as_deref(), Some("scale"));
    let old = seen[0].old_object.as_ref().unwrap();
    assert_eq!(old.data["spec"]["replicas"], 2);
}
