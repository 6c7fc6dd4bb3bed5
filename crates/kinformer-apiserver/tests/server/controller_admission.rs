//! The server's own controllers write through admission, as kube-controller-manager's do on a
//! real cluster: a webhook that protects objects from deletion holds back the garbage
//! collector and the namespace controller, a mutating webhook changes what the service account
//! controller creates, every review names the controller's service account, and a refused or
//! failed write is tried again with backoff until it goes through.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, Operation};
use serde_json::{Value, json};

use super::admission_webhooks::{Webhooks, config_map, hook, mutating, serve, validating};

/// Waits (at most 10 s) until `check` returns `Some`.
async fn until<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    check: impl Fn() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(t) = check().await {
            return t;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits (at most 10 s) until `name` is gone.
async fn until_gone<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    until(&format!("{name} gone"), || async {
        api.get_opt(name).await.unwrap().is_none().then_some(())
    })
    .await;
}

/// The reviews `path` was sent for writes of `name` by `user`.
fn reviews_of(
    w: &Webhooks,
    path: &str,
    name: &str,
    user: &str,
) -> Vec<AdmissionRequest<DynamicObject>> {
    w.seen
        .of(path)
        .into_iter()
        .filter(|r| r.name == name && r.user_info.username.as_deref() == Some(user))
        .collect()
}

/// Takes the label `/protect` looks for off the ConfigMap `name`.
async fn unprotect(cms: &Api<ConfigMap>, name: &str) {
    let unlabel = Patch::Merge(json!({"metadata": {"labels": {"protected": null}}}));
    cms.patch(name, &PatchParams::default(), &unlabel)
        .await
        .unwrap();
}

fn protect_deletes(w: &Webhooks) -> Vec<Value> {
    let at = json!({"url": w.url("/protect"), "caBundle": w.ca_bundle()});
    vec![hook("protect.example.com", at, &["DELETE"], json!({}))]
}

const GC: &str = "system:serviceaccount:kube-system:generic-garbage-collector";
const NAMESPACES: &str = "system:serviceaccount:kube-system:namespace-controller";
const ACCOUNTS: &str = "system:serviceaccount:kube-system:service-account-controller";

#[tokio::test]
async fn the_garbage_collector_deletes_through_admission_and_retries_a_refusal() {
    let w = serve(&[]).await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    validating(&c, "protect", protect_deletes(&w)).await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let pp = PostParams::default();
    let owner = cms
        .create(&pp, &config_map("owner", json!({})))
        .await
        .unwrap();
    let mut dependent = config_map("dependent", json!({"protected": "1"}));
    dependent.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "owner".into(),
        uid: owner.metadata.uid.clone().unwrap(),
        ..Default::default()
    }]);
    let dependent = cms.create(&pp, &dependent).await.unwrap();
    cms.delete("owner", &DeleteParams::default()).await.unwrap();

    // the collector's delete is refused, and tried again
    let refused = until("the collector's delete refused twice", || async {
        let seen = reviews_of(&w, "/protect", "dependent", GC);
        (seen.len() >= 2).then_some(seen)
    })
    .await;
    let review = &refused[0];
    assert_eq!(review.operation, Operation::Delete);
    assert_eq!(
        review.user_info.groups.as_deref().unwrap_or_default(),
        [
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system",
            "system:authenticated"
        ]
    );
    let options = &review.options.as_ref().unwrap().0;
    assert_eq!(options["kind"], "DeleteOptions");
    assert_eq!(options["propagationPolicy"], "Background");
    assert_eq!(
        options["preconditions"]["uid"],
        json!(dependent.metadata.uid.clone().unwrap())
    );
    assert!(cms.get_opt("dependent").await.unwrap().is_some());

    // unprotected, it is collected
    unprotect(&cms, "dependent").await;
    until_gone(&cms, "dependent").await;
}

#[tokio::test]
async fn the_namespace_controller_deletes_through_admission() {
    let w = serve(&[]).await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    validating(&c, "protect", protect_deletes(&w)).await;
    let namespaces: Api<Namespace> = Api::all(c.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "doomed");
    let pp = PostParams::default();
    cms.create(&pp, &config_map("kept", json!({"protected": "1"})))
        .await
        .unwrap();
    cms.create(&pp, &config_map("other", json!({})))
        .await
        .unwrap();
    namespaces
        .delete("doomed", &DeleteParams::default())
        .await
        .unwrap();

    until(
        "the namespace controller's delete of kept refused",
        || async { (!reviews_of(&w, "/protect", "kept", NAMESPACES).is_empty()).then_some(()) },
    )
    .await;
    assert!(!reviews_of(&w, "/protect", "other", NAMESPACES).is_empty());
    // reported as kube's namespace controller does: the refusal, and no count of what
    // remains of the resource it failed on
    let conditions = until("the namespace reports the refusal", || async {
        let ns = namespaces.get("doomed").await.unwrap();
        let conditions = ns.status?.conditions?;
        conditions
            .iter()
            .any(|c| c.type_ == "NamespaceDeletionContentFailure" && c.status == "True")
            .then_some(conditions)
    })
    .await;
    let of = |ty: &str| conditions.iter().find(|c| c.type_ == ty).unwrap();
    let failure = of("NamespaceDeletionContentFailure");
    assert_eq!(failure.reason.as_deref(), Some("ContentDeletionFailed"));
    assert_eq!(
        failure.message.as_deref(),
        Some(
            "Failed to delete all resource types, 1 remaining: admission webhook \"protect.example.com\" denied the request: protected objects stay"
        )
    );
    assert_eq!(of("NamespaceContentRemaining").status, "False");
    assert!(cms.get_opt("other").await.unwrap().is_none());
    assert!(cms.get_opt("kept").await.unwrap().is_some());

    // unprotected, it goes, and the namespace with it
    unprotect(&cms, "kept").await;
    until_gone(&namespaces, "doomed").await;
}

#[tokio::test]
async fn a_controllers_create_is_mutated_and_retried_while_a_webhook_is_down() {
    let w = serve(&[]).await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let accounts = json!({"rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                     "operations": ["CREATE"], "resources": ["serviceaccounts"]}]});
    let at = json!({"url": w.url("/mutate"), "caBundle": w.ca_bundle()});
    mutating(
        &c,
        "label",
        vec![hook("label.example.com", at, &["CREATE"], accounts.clone())],
    )
    .await;
    let namespaces: Api<Namespace> = Api::all(c.clone());
    let create_ns = |name: &str| {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        let namespaces = namespaces.clone();
        async move {
            namespaces
                .create(&PostParams::default(), &ns)
                .await
                .unwrap()
        }
    };

    // the service account controller's `default` account, mutated by the webhook
    create_ns("fresh").await;
    let sas: Api<ServiceAccount> = Api::namespaced(c.clone(), "fresh");
    let sa = until("default in fresh", || async {
        sas.get_opt("default").await.unwrap()
    })
    .await;
    assert_eq!(sa.metadata.labels.unwrap()["mutated"], "yes");
    let seen = reviews_of(&w, "/mutate", "default", ACCOUNTS);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].namespace.as_deref(), Some("fresh"));

    // a webhook that cannot be reached (failurePolicy Fail): refused, and tried again until
    // it is gone
    let unused = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = unused.local_addr().unwrap().port();
    drop(unused);
    let down = json!({"url": format!("https://127.0.0.1:{port}/validate")});
    validating(
        &c,
        "down",
        vec![hook("down.example.com", down, &["CREATE"], accounts)],
    )
    .await;
    create_ns("later").await;
    let later: Api<ServiceAccount> = Api::namespaced(c.clone(), "later");
    until("three attempts at default in later", || async {
        let attempts = reviews_of(&w, "/mutate", "default", ACCOUNTS)
            .into_iter()
            .filter(|r| r.namespace.as_deref() == Some("later"))
            .count();
        (attempts >= 3).then_some(())
    })
    .await;
    assert!(later.get_opt("default").await.unwrap().is_none());
    let configs: Api<k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration> =
        Api::all(c.clone());
    configs
        .delete("down", &DeleteParams::default())
        .await
        .unwrap();
    let sa = until("default in later", || async {
        later.get_opt("default").await.unwrap()
    })
    .await;
    assert_eq!(sa.metadata.labels.unwrap()["mutated"], "yes");
}
