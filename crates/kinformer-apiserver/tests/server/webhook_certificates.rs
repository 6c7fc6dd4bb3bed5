//! How the test cluster trusts a webhook's serving certificate, as kube-apiserver's Go client
//! does: through `caBundle`, a self-signed CA certificate served as the webhook's own (what
//! `openssl req -x509` makes, the quick-start setup) included, and refused in Go's words when
//! the bundle does not vouch for it, it is not for the name called, or it has expired.

use crate::admission_webhooks::{config_map, hook, validating};
use crate::common;
use crate::common::tls_server::Serving;

use axum::Json;
use axum::routing::post;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer_apiserver::{ServerConfig, start};
use kube::api::{Api, PostParams};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use serde_json::{Value, json};

/// Denies objects labelled `deny: "yes"`.
async fn validate(
    Json(review): Json<AdmissionReview<DynamicObject>>,
) -> Json<AdmissionReview<DynamicObject>> {
    let req: AdmissionRequest<DynamicObject> = review.try_into().unwrap();
    let denied = req
        .object
        .as_ref()
        .and_then(|o| o.metadata.labels.as_ref())
        .is_some_and(|l| l.get("deny").map(String::as_str) == Some("yes"));
    let r = AdmissionResponse::from(&req);
    Json(if denied { r.deny("denied by label") } else { r }.into_review())
}

async fn webhook(serving: Serving) -> common::tls_server::Served {
    let router = axum::Router::new().route("/validate", post(validate));
    common::tls_server::serve_with(serving, &[], router).await
}

/// Registers one validating webhook on configmap creates (failure policy Fail).
async fn register(c: &kube::Client, name: &str, client_config: Value) {
    let hook = hook(
        &format!("{name}.example.com"),
        client_config,
        &["CREATE"],
        json!({}),
    );
    validating(c, name, vec![hook]).await;
}

/// A config map, labelled to be denied or not.
fn labelled(name: &str, deny: bool) -> ConfigMap {
    config_map(
        name,
        if deny {
            json!({"deny": "yes"})
        } else {
            json!({})
        },
    )
}

/// The message of a refused create.
async fn refusal(cms: &Api<ConfigMap>, name: &str, deny: bool) -> String {
    match cms
        .create(&PostParams::default(), &labelled(name, deny))
        .await
    {
        Err(kube::Error::Api(s)) => s.message,
        other => panic!("{name}: expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_webhook_serving_the_self_signed_ca_certificate_of_its_ca_bundle_is_called() {
    let w = webhook(Serving::SelfSignedCa).await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    register(
        &c,
        "self-signed",
        json!({"url": w.url("/validate"), "caBundle": w.ca_bundle()}),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    cms.create(&PostParams::default(), &labelled("allowed", false))
        .await
        .unwrap();
    // the webhook answered: its denial, not a TLS failure
    let message = refusal(&cms, "denied", true).await;
    assert_eq!(
        message,
        "admission webhook \"self-signed.example.com\" denied the request: denied by label"
    );
}

#[tokio::test]
async fn a_certificate_the_bundle_does_not_vouch_for_is_refused_in_gos_words() {
    let w = webhook(Serving::SignedByCa).await;
    let other = webhook(Serving::SelfSignedCa).await;
    let expired = webhook(Serving::Expired).await;
    let s = start(ServerConfig::default()).await.unwrap();
    let c = s.client();
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let call = |port: u16, host: &str| {
        format!(
            "Internal error occurred: failed calling webhook \"{{}}.example.com\": failed to call webhook: Post \"https://{host}:{port}/validate?timeout=10s\": tls: "
        )
    };

    // another server's self-signed CA as the bundle
    register(
        &c,
        "unknown",
        json!({"url": w.url("/validate"), "caBundle": other.ca_bundle()}),
    )
    .await;
    let message = refusal(&cms, "a", false).await;
    assert_eq!(
        message,
        call(w.addr.port(), "127.0.0.1").replace("{}", "unknown")
            + "failed to verify certificate: x509: certificate signed by unknown authority"
    );
    unregister(&c, "unknown").await;

    // the self-signed certificate is in the bundle, but not for the name called
    register(
        &c,
        "wrong-name",
        json!({"url": format!("https://localhost:{}/validate", other.addr.port()),
               "caBundle": other.ca_bundle()}),
    )
    .await;
    let message = refusal(&cms, "b", false).await;
    let prefix = call(other.addr.port(), "localhost").replace("{}", "wrong-name");
    assert!(message.starts_with(&prefix), "{message}");
    assert!(message.contains("not valid for name"), "{message}");
    unregister(&c, "wrong-name").await;

    // signed by the bundle's CA, expired
    register(
        &c,
        "expired",
        json!({"url": expired.url("/validate"), "caBundle": expired.ca_bundle()}),
    )
    .await;
    let message = refusal(&cms, "c", false).await;
    let prefix = call(expired.addr.port(), "127.0.0.1").replace("{}", "expired")
        + "failed to verify certificate: x509: certificate has expired or is not yet valid: current time ";
    assert!(message.starts_with(&prefix), "{message}");
    assert!(
        message.ends_with(" is after 2020-01-01T00:00:00Z"),
        "{message}"
    );
    assert!(
        cms.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

async fn unregister(c: &kube::Client, name: &str) {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(c.clone());
    api.delete(name, &Default::default()).await.unwrap();
}
