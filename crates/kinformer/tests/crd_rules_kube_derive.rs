//! A kube-rs user's custom resource with CEL rules (`#[derive(CustomResource, KubeSchema)]`,
//! `#[x_kube(validation = ...)]`), installed in the embedded API server as a real cluster
//! would take it: a rule kube-apiserver estimates too costly (items without bounds) refuses the
//! CRD in its words; bounded, the CRD is accepted and its rules refuse objects that break them.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::{CustomResource, CustomResourceExt, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Tags checked one by one, with no bound on how many or how long.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug)]
#[kube(
    group = "costly.example.com",
    version = "v1",
    kind = "Costly",
    namespaced
)]
pub struct CostlySpec {
    #[x_kube(validation = Rule::new("self.all(t, t.matches('^[a-z]+$'))").message("tags are lowercase"))]
    tags: Vec<String>,
}

/// A tag of at most 63 characters.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug)]
pub struct Tag(#[schemars(length(max = 63))] String);

/// The same rule on at most 16 tags of at most 63 characters.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug)]
#[kube(
    group = "bounded.example.com",
    version = "v1",
    kind = "Bounded",
    namespaced
)]
pub struct BoundedSpec {
    #[schemars(length(max = 16))]
    #[x_kube(validation = Rule::new("self.all(t, t.matches('^[a-z]+$'))").message("tags are lowercase"))]
    tags: Vec<Tag>,
}

#[tokio::test]
async fn a_costly_rule_refuses_the_crd_and_a_bounded_one_validates_objects() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    let client = server.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());

    let refused = crds
        .create(&PostParams::default(), &Costly::crd())
        .await
        .expect_err("kube-apiserver refuses this CRD");
    assert_invalid(
        refused,
        "spec.validation.openAPIV3Schema.properties[spec].properties[tags].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
    );

    crds.create(&PostParams::default(), &Bounded::crd())
        .await
        .expect("bounded, the same rule is accepted");
    let api: Api<Bounded> = Api::namespaced(client.clone(), "default");
    let bounded = |name: &str, tags: &[&str]| {
        Bounded::new(
            name,
            BoundedSpec {
                tags: tags.iter().map(|t| Tag(t.to_string())).collect(),
            },
        )
    };
    // The resource is served once the CRD is established; the embedded server does it at once.
    api.create(&PostParams::default(), &bounded("ok", &["a", "b"]))
        .await
        .expect("lowercase tags pass the rule");
    let broken = api
        .create(&PostParams::default(), &bounded("broken", &["A"]))
        .await
        .expect_err("an uppercase tag breaks the rule");
    assert_invalid(broken, "spec.tags: Invalid value: tags are lowercase");
    server.shutdown().await;
}

/// `e` is a 422 whose message says `words`.
fn assert_invalid(e: kube::Error, words: &str) {
    let kube::Error::Api(status) = e else {
        panic!("not an API error: {e}");
    };
    assert_eq!(status.code, 422);
    assert!(status.message.contains(words), "{}", status.message);
}
