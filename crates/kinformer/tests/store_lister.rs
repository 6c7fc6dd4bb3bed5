//! Listers: ports of client-go's `listers_test.go` plus the namespaced views.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kinformer::{
    Indexer, Indexers, KeyError, Lister, object::meta_namespace_key_func, store::LabelSelector,
    store::NAMESPACE_INDEX,
};
use kube::api::ObjectMeta;

/// client-go's `mustCreateStore`: `num_objects` objects named `obj-<i>` keyed by name, the first
/// `num_matching` of them carrying `labels`.
fn must_create_store(
    num_objects: usize,
    num_matching: usize,
    labels: &BTreeMap<String, String>,
) -> Indexer<Namespace> {
    assert!(num_matching <= num_objects, "more matches than objects");
    let store = Indexer::new(
        Arc::new(|o: &Namespace| {
            o.metadata
                .name
                .clone()
                .ok_or(KeyError::MissingName { namespace: None })
        }),
        Indexers::new(),
    );
    for i in 0..num_objects {
        let obj = Namespace {
            metadata: ObjectMeta {
                name: Some(format!("obj-{i}")),
                labels: Some(if i < num_matching {
                    labels.clone()
                } else {
                    BTreeMap::new()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        store.add(Arc::new(obj)).unwrap();
    }
    store
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// client-go's `TestListAll`. client-go's "all match" and "no match" cases use 1,000,000
/// objects; they run here with 100,000 to spare a shared CI machine's memory, with the same
/// expectations (all objects, none).
#[test]
fn test_list_all() {
    let cases = [
        (
            "subset match",
            100_000,
            10_000,
            labels(&[("match", "true")]),
            LabelSelector::from_labels([("match", "true")]),
            10_000,
        ),
        (
            "all match",
            100_000,
            0,
            labels(&[]),
            LabelSelector::everything(),
            100_000,
        ),
        (
            "no match",
            100_000,
            0,
            labels(&[("nomatch", "true")]),
            LabelSelector::from_labels([("match", "true")]),
            0,
        ),
    ];
    for (name, num_objects, num_matching, matching_labels, selector, expected) in cases {
        let store = must_create_store(num_objects, num_matching, &matching_labels);
        let lister = Lister::new(store);
        assert_eq!(lister.list(&selector).len(), expected, "{name}");
    }
}

fn cm(ns: &str, name: &str, app: Option<&str>) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            labels: app.map(|a| labels(&[("app", a)])),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn populate(idx: &Indexer<ConfigMap>) {
    idx.add(cm("prod", "web", Some("web"))).unwrap();
    idx.add(cm("prod", "db", Some("db"))).unwrap();
    idx.add(cm("prod", "plain", None)).unwrap();
    idx.add(cm("dev", "web", Some("web"))).unwrap();
    idx.add(cm("", "global", Some("web"))).unwrap();
}

fn keys(objs: Vec<Arc<ConfigMap>>) -> BTreeSet<String> {
    objs.iter()
        .map(|o| kinformer::meta_namespace_key(o.as_ref()).unwrap())
        .collect()
}

fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|k| k.to_string()).collect()
}

fn check_views(lister: &Lister<ConfigMap>) {
    let web: LabelSelector = "app=web".parse().unwrap();
    let everything = LabelSelector::everything();
    assert_eq!(
        keys(lister.list(&web)),
        set(&["prod/web", "dev/web", "global"])
    );
    assert_eq!(keys(lister.list(&everything)).len(), 5);
    let prod = lister.namespaced("prod");
    assert_eq!(prod.namespace(), "prod");
    assert_eq!(keys(prod.list(&web)), set(&["prod/web"]));
    assert_eq!(
        keys(prod.list(&everything)),
        set(&["prod/web", "prod/db", "prod/plain"])
    );
    // `!app` matches the object without labels.
    assert_eq!(
        keys(prod.list(&"!app".parse().unwrap())),
        set(&["prod/plain"])
    );
    assert_eq!(
        keys(lister.namespaced("nowhere").list(&everything)),
        set(&[])
    );
    // The empty namespace means all namespaces.
    assert_eq!(keys(lister.namespaced("").list(&web)).len(), 3);
    // Gets.
    assert!(prod.get("db").is_some());
    assert!(lister.namespaced("dev").get("db").is_none());
    assert!(lister.get("global").is_some());
    assert!(lister.get("web").is_none());
}

#[test]
fn namespaced_lister_uses_the_namespace_index() {
    let idx = Indexer::<ConfigMap>::default_namespaced();
    assert!(idx.has_index(NAMESPACE_INDEX));
    populate(&idx);
    check_views(&Lister::new(idx));
}

#[test]
fn namespaced_lister_falls_back_to_a_scan_without_the_index() {
    let idx = Indexer::<ConfigMap>::new(meta_namespace_key_func(), Indexers::new());
    assert!(!idx.has_index(NAMESPACE_INDEX));
    populate(&idx);
    check_views(&Lister::new(idx));
}

#[test]
fn lister_sees_later_writes() {
    let idx = Indexer::<ConfigMap>::default_namespaced();
    let lister = Lister::new(idx.clone());
    assert!(lister.list(&LabelSelector::everything()).is_empty());
    idx.add(cm("prod", "web", Some("web"))).unwrap();
    assert!(lister.namespaced("prod").get("web").is_some());
    assert!(Arc::ptr_eq(
        &lister.namespaced("prod").get("web").unwrap(),
        &idx.get_by_key("prod/web").unwrap()
    ));
}
