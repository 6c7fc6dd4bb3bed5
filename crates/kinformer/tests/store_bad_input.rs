//! Bad input never panics and never changes what the Indexer holds: an object without a name,
//! an index function that fails, malformed and unknown keys, unknown indexes, duplicate indexer
//! names.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kinformer::{
    IndexFunc, IndexFuncError, Indexer, Indexers, KeyError, Lister, StoreError,
    object::meta_namespace_key_func, store::NAMESPACE_INDEX, store::namespace_index_func,
};
use kube::api::ObjectMeta;

fn pod(ns: &str, name: Option<&str>, node: Option<&str>, rv: &str) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: name.map(Into::into),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        spec: node.map(|n| k8s_openapi::api::core::v1::PodSpec {
            node_name: Some(n.into()),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// Pods by node; an unscheduled pod is an index function error.
fn by_node() -> IndexFunc<Pod> {
    Arc::new(|p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .map(|n| vec![n])
            .ok_or_else(|| IndexFuncError::new("pod is not scheduled"))
    })
}

fn indexer() -> Indexer<Pod> {
    Indexer::new(
        meta_namespace_key_func(),
        Indexers::from([
            (NAMESPACE_INDEX.to_owned(), namespace_index_func()),
            ("node".to_owned(), by_node()),
        ]),
    )
}

/// Everything observable: objects by key (by identity), every index, the resource version.
#[derive(Debug, PartialEq)]
struct Snapshot {
    objects: BTreeMap<String, usize>,
    indexes: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    rv: Option<String>,
}

fn snapshot(idx: &Indexer<Pod>) -> Snapshot {
    let objects = idx
        .list_keys()
        .into_iter()
        .map(|k| {
            let obj = idx.get_by_key(&k).unwrap();
            (k, Arc::as_ptr(&obj) as usize)
        })
        .collect();
    let mut names: Vec<String> = idx.indexers().into_keys().collect();
    names.sort();
    let indexes = names
        .into_iter()
        .map(|name| {
            let values = idx
                .list_index_func_values(&name)
                .into_iter()
                .map(|v| {
                    let keys = idx.index_keys(&name, &v).unwrap();
                    (v, keys)
                })
                .collect();
            (name, values)
        })
        .collect();
    Snapshot {
        objects,
        indexes,
        rv: idx.last_resource_version(),
    }
}

fn populated() -> Indexer<Pod> {
    let idx = indexer();
    idx.add(pod("a", Some("p1"), Some("n1"), "1")).unwrap();
    idx.add(pod("a", Some("p2"), Some("n2"), "2")).unwrap();
    idx.add(pod("b", Some("p1"), Some("n1"), "3")).unwrap();
    idx
}

#[test]
fn object_without_a_name_is_a_key_error_and_changes_nothing() {
    let idx = populated();
    let before = snapshot(&idx);
    let nameless = pod("a", None, Some("n9"), "99");
    let want = StoreError::Key(KeyError::MissingName {
        namespace: Some("a".into()),
    });
    assert_eq!(idx.add(nameless.clone()), Err(want.clone()));
    assert_eq!(idx.update(nameless.clone()), Err(want.clone()));
    assert_eq!(idx.upsert(nameless.clone()), Err(want.clone()));
    assert_eq!(idx.delete(&nameless), Err(want.clone()));
    assert_eq!(idx.get(&nameless), Err(want.clone()));
    assert_eq!(
        idx.replace(vec![pod("c", Some("ok"), Some("n1"), "5"), nameless], "100"),
        Err(want)
    );
    assert_eq!(snapshot(&idx), before);
}

#[test]
fn failing_index_function_on_add_changes_nothing() {
    let idx = populated();
    let before = snapshot(&idx);
    let unscheduled = pod("a", Some("p3"), None, "50");
    let err = idx.add(unscheduled).unwrap_err();
    assert_eq!(
        err,
        StoreError::IndexFunc {
            index: "node".into(),
            key: Some("a/p3".into()),
            source: IndexFuncError::new("pod is not scheduled"),
        }
    );
    assert!(err.to_string().contains("pod is not scheduled"), "{err}");
    assert_eq!(snapshot(&idx), before);
}

#[test]
fn failing_index_function_on_update_keeps_the_old_object_and_its_index_entries() {
    let idx = populated();
    let before = snapshot(&idx);
    let old = idx.get_by_key("a/p1").unwrap();
    // The update moves the pod to namespace index "a" (unchanged) but cannot compute its node.
    assert!(matches!(
        idx.update(pod("a", Some("p1"), None, "60")),
        Err(StoreError::IndexFunc { .. })
    ));
    assert!(Arc::ptr_eq(&idx.get_by_key("a/p1").unwrap(), &old));
    assert_eq!(snapshot(&idx), before);
    assert_eq!(idx.index_keys("node", "n1").unwrap(), ["a/p1", "b/p1"]);
}

#[test]
fn failing_index_function_in_replace_changes_nothing() {
    let idx = populated();
    let before = snapshot(&idx);
    let list = vec![
        pod("c", Some("q1"), Some("n3"), "70"),
        pod("c", Some("q2"), None, "71"),
    ];
    assert!(matches!(
        idx.replace(list, "72"),
        Err(StoreError::IndexFunc { key: Some(k), .. }) if k == "c/q2"
    ));
    assert_eq!(snapshot(&idx), before);
}

#[test]
fn failing_index_function_in_add_indexers_adds_no_index() {
    let idx = populated();
    let before = snapshot(&idx);
    let picky: IndexFunc<Pod> = Arc::new(|p: &Pod| {
        if p.metadata.namespace.as_deref() == Some("b") {
            Err("namespace b is not allowed".into())
        } else {
            Ok(vec!["ok".into()])
        }
    });
    assert!(matches!(
        idx.add_indexers(Indexers::from([("picky".to_owned(), picky)])),
        Err(StoreError::IndexFunc { index, .. }) if index == "picky"
    ));
    assert!(!idx.has_index("picky"));
    assert_eq!(
        idx.by_index("picky", "ok"),
        Err(StoreError::UnknownIndex("picky".into()))
    );
    assert_eq!(snapshot(&idx), before);
}

#[test]
fn failing_index_function_on_a_query_object_is_an_error() {
    let idx = populated();
    assert_eq!(
        idx.index("node", &pod("a", Some("x"), None, "1")),
        Err(StoreError::IndexFunc {
            index: "node".into(),
            key: None,
            source: IndexFuncError::new("pod is not scheduled"),
        })
    );
}

#[test]
fn malformed_and_unknown_keys_find_and_remove_nothing() {
    let idx = populated();
    let before = snapshot(&idx);
    for key in ["a/b/c", "", "/", "a/", "nope", "a/p1/"] {
        assert_eq!(idx.get_by_key(key), None, "{key:?}");
        assert_eq!(idx.delete_by_key(key), Ok(None), "{key:?}");
    }
    assert_eq!(snapshot(&idx), before);
    // A lister asked for a name containing a slash finds nothing either.
    let lister = Lister::new(idx.clone());
    assert!(lister.namespaced("a").get("p1/x").is_none());
    assert!(lister.get("a/b/c").is_none());
}

#[test]
fn unknown_index_is_a_typed_error() {
    let idx = populated();
    let unknown = || StoreError::UnknownIndex("nope".into());
    assert_eq!(idx.by_index("nope", "x"), Err(unknown()));
    assert_eq!(idx.index_keys("nope", "x"), Err(unknown()));
    assert_eq!(
        idx.index("nope", &pod("a", Some("p1"), Some("n1"), "1")),
        Err(unknown())
    );
    // As in client-go, listing the values of an unknown index is simply empty.
    assert!(idx.list_index_func_values("nope").is_empty());
    assert_eq!(
        unknown().to_string(),
        "index with name \"nope\" does not exist"
    );
}

#[test]
fn duplicate_indexer_name_is_a_conflict_and_changes_nothing() {
    let idx = populated();
    let before = snapshot(&idx);
    let other: IndexFunc<Pod> = Arc::new(|_: &Pod| Ok(vec!["x".into()]));
    let err = idx
        .add_indexers(Indexers::from([
            ("node".to_owned(), other.clone()),
            ("fresh".to_owned(), other.clone()),
            (NAMESPACE_INDEX.to_owned(), other),
        ]))
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::IndexerConflict(vec!["namespace".into(), "node".into()])
    );
    // Neither the conflicting nor the fresh name was registered, and the existing "node" index
    // still uses the original function.
    assert!(!idx.has_index("fresh"));
    assert_eq!(idx.index_keys("node", "n1").unwrap(), ["a/p1", "b/p1"]);
    assert_eq!(snapshot(&idx), before);
}
