//! Shared informers and the informer factory against a real kube-apiserver (watch cache on, like
//! real clusters): pods, configmaps and a custom resource converge on a fresh list after
//! creates, updates and deletes; label and field selectors.
//!
//! Needs `KINFORMER_E2E_KUBECONFIG` (see `./scripts/test.sh`); skipped with one line otherwise.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinformer::{Event, Object, ObjectOrTombstone, SharedIndexInformer, SharedInformerFactory};
use kinformer_e2e::{
    E2eEnv, WATCHCACHE_KUBECONFIG_VAR, create_namespace, delete_namespace, eventually,
    server_snapshot, snapshot,
};
use kube::Api;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::core::GroupVersionKind;
use tokio_util::sync::CancellationToken;

const CONVERGE: Duration = Duration::from_secs(30);

fn configmap(name: &str, labels: &[(&str, &str)], value: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    cm.data = Some(BTreeMap::from([("v".to_owned(), value.to_owned())]));
    cm
}

fn pod(name: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.spec = Some(PodSpec {
        containers: vec![Container {
            name: "c".into(),
            image: Some("registry.invalid/none:1".into()),
            ..Default::default()
        }],
        ..Default::default()
    });
    p
}

fn merge_labels(labels: serde_json::Value) -> Patch<serde_json::Value> {
    Patch::Merge(serde_json::json!({ "metadata": { "labels": labels } }))
}

/// Waits until the informer's cache holds exactly what a fresh list of `api` returns.
async fn assert_converges<K>(
    informer: &SharedIndexInformer<K>,
    api: &Api<K>,
    params: &ListParams,
    what: &str,
) where
    K: Object + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let last = Arc::new(parking_lot::Mutex::new((BTreeMap::new(), BTreeMap::new())));
    let converged = eventually(CONVERGE, || {
        let cache = snapshot(informer.indexer().list().iter().map(|o| o.as_ref()));
        let api = api.clone();
        let params = params.clone();
        let last = last.clone();
        async move {
            let server = server_snapshot(&api, &params).await.ok()?;
            let same = cache == server;
            *last.lock() = (cache, server);
            same.then_some(())
        }
    })
    .await;
    let last = last.lock().clone();
    assert!(
        converged.is_some(),
        "{what}: cache never matched a fresh list within {CONVERGE:?}\ncache:  {:?}\nserver: {:?}",
        last.0,
        last.1
    );
}

/// Starts the factory and waits until every informer it made has synced.
///
/// `SharedInformerFactory::wait_for_cache_sync` only counts informers whose task has already
/// begun running (`has_started`), and `start` merely spawns those tasks, so called right after
/// `start` on a current-thread runtime it can answer an empty map at once (client-go's factory
/// marks informers started synchronously in `Start`). Until that is fixed in `factory.rs`, ask
/// again until the map names every informer.
async fn start_and_sync(factory: &SharedInformerFactory) -> BTreeMap<String, bool> {
    factory.start();
    let cancel = CancellationToken::new();
    let synced = eventually(CONVERGE, || {
        let cancel = cancel.clone();
        async move {
            let m = factory.wait_for_cache_sync(&cancel).await;
            (m.len() == factory.len() && m.values().all(|s| *s)).then_some(m)
        }
    })
    .await;
    synced.expect("every informer of the factory syncs within 30s")
}

async fn setup(test: &str, prefix: &str) -> Option<(kube::Client, String)> {
    let env = E2eEnv::from_env(WATCHCACHE_KUBECONFIG_VAR, test)?;
    let client = env.client().await.expect("client from the e2e kubeconfig");
    let ns = create_namespace(&client, prefix)
        .await
        .expect("create namespace");
    Some((client, ns))
}

#[tokio::test]
async fn factory_pods_and_configmaps_converge_after_create_update_delete() {
    let Some((client, ns)) = setup(
        "factory_pods_and_configmaps_converge_after_create_update_delete",
        "e2e-factory",
    )
    .await
    else {
        return;
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let pp = PostParams::default();
    // existing before the informers start: part of the initial list
    for i in 0..3 {
        pods.create(&pp, &pod(&format!("p{i}"))).await.unwrap();
        cms.create(&pp, &configmap(&format!("c{i}"), &[], "0"))
            .await
            .unwrap();
    }

    // Every real namespace also holds kube-controller-manager's kube-root-ca.crt, written at
    // the publisher's own pace (before or after the informers list): left out by a field
    // selector, so the counts and the event sequence below are the test's objects only.
    let not_root_ca = "metadata.name!=kube-root-ca.crt";
    let factory = SharedInformerFactory::builder(client.clone())
        .defaults(
            kinformer_e2e::config()
                .namespace(ns.clone())
                .field_selector(not_root_ca),
        )
        .build();
    let pod_informer = factory.informer::<Pod>();
    let cm_informer = factory.informer::<ConfigMap>();
    let mut cm_events = cm_informer.stream().expect("event stream");
    let synced = start_and_sync(&factory).await;
    assert_eq!(synced.len(), 2, "{synced:?}");
    assert!(synced.values().all(|s| *s), "{synced:?}");
    assert_eq!(pod_informer.indexer().list().len(), 3);
    assert_eq!(cm_informer.indexer().list().len(), 3);

    // live changes
    pods.create(&pp, &pod("p3")).await.unwrap();
    pods.patch(
        "p0",
        &PatchParams::default(),
        &merge_labels(serde_json::json!({"x": "1"})),
    )
    .await
    .unwrap();
    pods.delete("p1", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    cms.create(&pp, &configmap("c3", &[], "0")).await.unwrap();
    cms.replace("c0", &pp, &{
        let mut c = cms.get("c0").await.unwrap();
        c.data = Some(BTreeMap::from([("v".to_owned(), "1".to_owned())]));
        c
    })
    .await
    .unwrap();
    cms.delete("c2", &DeleteParams::default()).await.unwrap();

    let lp = ListParams::default().fields(not_root_ca);
    assert_converges(&pod_informer, &pods, &lp, "pods").await;
    assert_converges(&cm_informer, &cms, &lp, "configmaps").await;
    let c0 = cm_informer
        .lister()
        .namespaced(&ns)
        .get("c0")
        .expect("c0 cached");
    assert_eq!(
        c0.data
            .as_ref()
            .and_then(|d| d.get("v"))
            .map(String::as_str),
        Some("1")
    );

    // the event stream: 3 initial adds, Synced, then the live add, update and delete
    let mut seen = Vec::new();
    let collected = tokio::time::timeout(CONVERGE, async {
        while let Some(ev) = cm_events.next().await {
            let entry = match ev {
                Event::Add {
                    obj,
                    is_in_initial_list,
                } => {
                    format!(
                        "add {} {is_in_initial_list}",
                        obj.metadata.name.as_deref().unwrap_or("")
                    )
                }
                Event::Update { new, .. } => {
                    format!("update {}", new.metadata.name.as_deref().unwrap_or(""))
                }
                Event::Delete(ObjectOrTombstone::Object(o)) => {
                    format!("delete {}", o.metadata.name.as_deref().unwrap_or(""))
                }
                Event::Delete(ObjectOrTombstone::Tombstone(t)) => {
                    format!("delete-tombstone {}", t.key)
                }
                Event::Synced => "synced".to_owned(),
            };
            seen.push(entry);
            if seen.len() == 7 {
                break;
            }
        }
    })
    .await;
    assert!(collected.is_ok(), "events so far: {seen:?}");
    let mut initial = seen[..3].to_vec();
    initial.sort();
    assert_eq!(initial, ["add c0 true", "add c1 true", "add c2 true"]);
    assert_eq!(seen[3], "synced");
    assert_eq!(seen[4..], ["add c3 false", "update c0", "delete c2"]);

    factory.shutdown().await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn label_selector_informer_follows_objects_moving_in_and_out() {
    let Some((client, ns)) = setup(
        "label_selector_informer_follows_objects_moving_in_and_out",
        "e2e-labels",
    )
    .await
    else {
        return;
    };
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let pp = PostParams::default();
    cms.create(&pp, &configmap("in", &[("app", "e2e")], "0"))
        .await
        .unwrap();
    cms.create(&pp, &configmap("out", &[("app", "other")], "0"))
        .await
        .unwrap();

    let factory = SharedInformerFactory::builder(client.clone())
        .defaults(
            kinformer_e2e::config()
                .namespace(ns.clone())
                .label_selector("app=e2e"),
        )
        .build();
    let informer = factory.informer::<ConfigMap>();
    start_and_sync(&factory).await;
    let keys = |i: &SharedIndexInformer<ConfigMap>| {
        let mut k = i.indexer().list_keys();
        k.sort();
        k
    };
    assert_eq!(keys(&informer), [format!("{ns}/in")]);

    // "out" moves in, "in" moves out, a new matching object appears
    let pq = PatchParams::default();
    cms.patch("out", &pq, &merge_labels(serde_json::json!({"app": "e2e"})))
        .await
        .unwrap();
    cms.patch("in", &pq, &merge_labels(serde_json::json!({"app": "gone"})))
        .await
        .unwrap();
    cms.create(&pp, &configmap("new", &[("app", "e2e")], "0"))
        .await
        .unwrap();
    let selected = ListParams::default().labels("app=e2e");
    assert_converges(&informer, &cms, &selected, "label selector").await;
    assert_eq!(keys(&informer), [format!("{ns}/new"), format!("{ns}/out")]);
    factory.shutdown().await;

    // a field selector: a single-object informer
    let factory = SharedInformerFactory::builder(client.clone())
        .defaults(
            kinformer_e2e::config()
                .namespace(ns.clone())
                .field_selector("metadata.name=new"),
        )
        .build();
    let informer = factory.informer::<ConfigMap>();
    start_and_sync(&factory).await;
    assert_eq!(keys(&informer), [format!("{ns}/new")]);
    cms.delete("new", &DeleteParams::default()).await.unwrap();
    let by_name = ListParams::default().fields("metadata.name=new");
    assert_converges(&informer, &cms, &by_name, "field selector").await;
    assert!(keys(&informer).is_empty());
    factory.shutdown().await;
    delete_namespace(&client, &ns).await;
}

const CRD_GROUP: &str = "e2e.kinformer.dev";

/// Creates (or finds) the `widgets.e2e.kinformer.dev` CRD and waits until it is established.
async fn widget_crd(client: &kube::Client) -> ApiResource {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{CRD_GROUP}")},
        "spec": {
            "group": CRD_GROUP,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}}
            }]
        }
    }))
    .expect("CRD JSON");
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        // another test run against the same server made it already
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("create CRD: {e}"),
    }
    let name = format!("widgets.{CRD_GROUP}");
    let established = eventually(CONVERGE, || {
        let crds = crds.clone();
        let name = name.clone();
        async move {
            let crd = crds.get(&name).await.ok()?;
            let conds = crd.status?.conditions?;
            conds
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        }
    })
    .await;
    assert!(
        established.is_some(),
        "CRD {name} not established within {CONVERGE:?}"
    );
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(CRD_GROUP, "v1", "Widget"), "widgets")
}

fn widget(name: &str, size: u32) -> DynamicObject {
    serde_json::from_value(serde_json::json!({
        "apiVersion": format!("{CRD_GROUP}/v1"),
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size}
    }))
    .expect("widget JSON")
}

#[tokio::test]
async fn dynamic_informer_for_a_custom_resource_converges() {
    let Some((client, ns)) = setup(
        "dynamic_informer_for_a_custom_resource_converges",
        "e2e-crd",
    )
    .await
    else {
        return;
    };
    let ar = widget_crd(&client).await;
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &ar);
    let pp = PostParams::default();
    // right after the CRD is established its REST handler may still answer 404 for a moment
    let created = eventually(CONVERGE, || {
        let widgets = widgets.clone();
        async move {
            widgets
                .create(&PostParams::default(), &widget("w0", 0))
                .await
                .ok()
        }
    })
    .await;
    assert!(
        created.is_some(),
        "could not create a Widget within {CONVERGE:?}"
    );
    widgets.create(&pp, &widget("w1", 1)).await.unwrap();

    let factory = SharedInformerFactory::builder(client.clone())
        .defaults(kinformer_e2e::config().namespace(ns.clone()))
        .build();
    let informer = factory.dynamic_informer(&ar, true);
    let synced = start_and_sync(&factory).await;
    assert!(synced.values().all(|s| *s), "{synced:?}");
    assert_eq!(informer.indexer().list().len(), 2);

    widgets.create(&pp, &widget("w2", 2)).await.unwrap();
    widgets
        .patch(
            "w0",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"size": 10}})),
        )
        .await
        .unwrap();
    widgets
        .delete("w1", &DeleteParams::default())
        .await
        .unwrap();
    assert_converges(&informer, &widgets, &ListParams::default(), "widgets").await;
    let w0: Arc<DynamicObject> = informer
        .indexer()
        .get_by_key(&format!("{ns}/w0"))
        .expect("w0 cached");
    assert_eq!(w0.data["spec"]["size"], serde_json::json!(10));
    factory.shutdown().await;
    delete_namespace(&client, &ns).await;
}

/// Issue 17: a metadata-only informer from the factory (with its label selector and
/// `strip_managed_fields`) gets `PartialObjectMetadata` from the real server and converges on
/// a fresh metadata list after creates, updates, deletes and objects leaving the selection.
#[tokio::test]
async fn metadata_informer_converges_with_only_metadata() {
    let Some((client, ns)) = setup(
        "metadata_informer_converges_with_only_metadata",
        "e2e-metadata",
    )
    .await
    else {
        return;
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let pp = PostParams::default();
    for i in 0..4 {
        let mut p = pod(&format!("p{i}"));
        let app = if i < 3 { "a" } else { "b" };
        p.metadata.labels = Some(BTreeMap::from([("app".to_owned(), app.to_owned())]));
        pods.create(&pp, &p).await.unwrap();
    }
    let factory = SharedInformerFactory::builder(client.clone())
        .defaults(
            kinformer_e2e::config()
                .namespace(ns.clone())
                .label_selector("app=a")
                .strip_managed_fields(true),
        )
        .build();
    let informer = factory.metadata_informer::<Pod>();
    let synced = start_and_sync(&factory).await;
    assert_eq!(synced.len(), 1, "{synced:?}");
    let is_partial = |o: &kube::core::PartialObjectMeta<Pod>| {
        o.types
            .as_ref()
            .is_some_and(|t| t.kind == "PartialObjectMetadata" && t.api_version == "meta.k8s.io/v1")
    };
    let listed = informer.indexer().list();
    assert_eq!(listed.len(), 3, "the selection: p0..p2");
    assert!(listed.iter().all(|o| is_partial(o)), "listed as metadata");
    assert!(
        listed.iter().all(|o| o.metadata.managed_fields.is_none()),
        "managedFields stripped"
    );

    let mut p = pod("p4");
    p.metadata.labels = Some(BTreeMap::from([("app".to_owned(), "a".to_owned())]));
    pods.create(&pp, &p).await.unwrap();
    let patch = PatchParams::default();
    pods.patch("p0", &patch, &merge_labels(serde_json::json!({"x": "1"})))
        .await
        .unwrap();
    pods.patch("p2", &patch, &merge_labels(serde_json::json!({"app": "b"})))
        .await
        .unwrap();
    pods.delete("p1", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let meta_api: Api<kube::core::PartialObjectMeta<Pod>> = Api::namespaced(client.clone(), &ns);
    assert_converges(
        &informer,
        &meta_api,
        &ListParams::default().labels("app=a"),
        "pod metadata",
    )
    .await;
    let cached = informer.indexer().list();
    assert_eq!(cached.len(), 2, "p0 and p4 remain selected");
    assert!(cached.iter().all(|o| is_partial(o)), "watched as metadata");
    assert!(cached.iter().all(|o| o.metadata.managed_fields.is_none()));
    factory.shutdown().await;
    delete_namespace(&client, &ns).await;
}
