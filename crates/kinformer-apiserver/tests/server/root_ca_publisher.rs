//! The root CA publisher (`ServerConfig::root_ca_publisher`, on in `standalone`): every
//! namespace holds `kube-root-ca.crt` with the server's CA, as kube-controller-manager's
//! `root-ca-cert-publisher` keeps it; created with a namespace, again when deleted, its data
//! and description put back when changed; none in a terminating namespace.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kinformer_apiserver::{RunningServer, ServerConfig, StartError, start};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};

const NAME: &str = "kube-root-ca.crt";
const DESCRIPTION_KEY: &str = "kubernetes.io/description";

/// Polls `get` every 20 ms for at most 10 s until `done` holds; the last value.
async fn eventually<T>(
    what: &str,
    mut get: impl AsyncFnMut() -> T,
    done: impl Fn(&T) -> bool,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let v = get().await;
        if done(&v) {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn ca_data(s: &RunningServer) -> BTreeMap<String, String> {
    BTreeMap::from([("ca.crt".to_string(), s.ca_pem().unwrap().to_string())])
}

async fn create_namespace(s: &RunningServer, name: &str) {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(s.client())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_namespace_holds_the_servers_ca() {
    let s = start(ServerConfig::standalone()).await.unwrap();
    // the system namespaces' copies exist when start returns
    for system in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let cm = Api::<ConfigMap>::namespaced(s.client(), system)
            .get(NAME)
            .await
            .unwrap_or_else(|e| panic!("{system}: {e}"));
        assert_eq!(cm.data, Some(ca_data(&s)), "{system}");
        let annotations = cm.metadata.annotations.unwrap_or_default();
        assert!(
            annotations[DESCRIPTION_KEY].starts_with("Contains a CA bundle"),
            "{annotations:?}"
        );
        // written by kube-controller-manager, as on a real cluster
        let managers: Vec<_> = cm
            .metadata
            .managed_fields
            .unwrap_or_default()
            .into_iter()
            .filter_map(|m| m.manager)
            .collect();
        assert_eq!(managers, ["kube-controller-manager"]);
    }
    // the CA is the one the kubeconfig trusts
    assert!(s.ca_pem().unwrap().contains("BEGIN CERTIFICATE"));

    create_namespace(&s, "team").await;
    let cms = Api::<ConfigMap>::namespaced(s.client(), "team");
    let first = eventually(
        "team's copy exists",
        async || cms.get_opt(NAME).await.unwrap(),
        |c| c.is_some(),
    )
    .await
    .unwrap();
    assert_eq!(first.data, Some(ca_data(&s)));
    // a namespace's ConfigMap list holds it, as on any real cluster
    let names: Vec<_> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(names, [NAME]);

    // deleted: created again
    cms.delete(NAME, &DeleteParams::default()).await.unwrap();
    let again = eventually(
        "created again",
        async || cms.get_opt(NAME).await.unwrap(),
        |c| {
            c.as_ref()
                .is_some_and(|c| c.metadata.uid != first.metadata.uid)
        },
    )
    .await
    .unwrap();
    assert_eq!(again.data, Some(ca_data(&s)));

    // changed (data and description): put back, a label of the user's kept
    let mut changed = again.clone();
    changed.data = Some(BTreeMap::from([("ca.crt".into(), "not a CA".into())]));
    changed.metadata.annotations = None;
    changed.metadata.labels = Some(BTreeMap::from([("mine".into(), "yes".into())]));
    cms.replace(NAME, &PostParams::default(), &changed)
        .await
        .unwrap();
    let fixed = eventually(
        "put back",
        async || cms.get(NAME).await.unwrap(),
        |c| c.data == Some(ca_data(&s)),
    )
    .await;
    let annotations = fixed.metadata.annotations.unwrap_or_default();
    assert!(annotations[DESCRIPTION_KEY].starts_with("Contains a CA bundle"));
    assert_eq!(fixed.metadata.labels.unwrap_or_default()["mine"], "yes");
    assert_eq!(
        fixed.metadata.uid, again.metadata.uid,
        "updated, not re-created"
    );
    s.shutdown().await;
}

/// A terminating namespace does not get it back: the publisher's create is refused (403
/// NamespaceTerminating) and, as kube-controller-manager's, not retried; the namespace goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_namespace_goes_with_its_copy() {
    let s = start(ServerConfig::standalone()).await.unwrap();
    create_namespace(&s, "gone").await;
    let cms = Api::<ConfigMap>::namespaced(s.client(), "gone");
    eventually(
        "the copy exists",
        async || cms.get_opt(NAME).await.unwrap(),
        |c| c.is_some(),
    )
    .await;
    Api::<Namespace>::all(s.client())
        .delete("gone", &DeleteParams::default())
        .await
        .unwrap();
    let namespaces = Api::<Namespace>::all(s.client());
    eventually(
        "the namespace is gone",
        async || namespaces.get_opt("gone").await.unwrap(),
        |n| n.is_none(),
    )
    .await;
    assert!(cms.get_opt(NAME).await.unwrap().is_none());
    s.shutdown().await;
}

#[tokio::test]
async fn off_by_default_in_process_and_refused_without_tls() {
    let s = start(ServerConfig::default()).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    assert!(cms.get_opt(NAME).await.unwrap().is_none());
    s.shutdown().await;

    let s = start(ServerConfig::standalone().root_ca_publisher(false))
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    assert!(cms.get_opt(NAME).await.unwrap().is_none());
    s.shutdown().await;

    let Err(err) = start(ServerConfig::default().root_ca_publisher(true)).await else {
        panic!("a publisher without TLS was accepted");
    };
    assert!(matches!(err, StartError::Config(_)), "{err}");
    assert!(err.to_string().contains("needs tls"), "{err}");
}
