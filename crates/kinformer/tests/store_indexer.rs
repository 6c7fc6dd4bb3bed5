//! The Indexer's own contract beyond client-go's test cases: upsert, delete results, replace,
//! add_indexers after start, index de-duplication, the reflector and known-objects views.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::Pod;
use kinformer::store::ReplaceOnce;
use kinformer::{
    IndexFunc, Indexer, Indexers, object::meta_namespace_key_func, store::KeyListerGetter,
    store::NAMESPACE_INDEX, store::ReflectorStore,
};
use kube::api::ObjectMeta;

fn pod(ns: &str, name: &str, users: &str, rv: &str) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            annotations: Some(BTreeMap::from([("users".to_owned(), users.to_owned())])),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn users_func() -> IndexFunc<Pod> {
    Arc::new(|p: &Pod| {
        let users = p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("users"))
            .cloned()
            .unwrap_or_default();
        Ok(users
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect())
    })
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn keys(idx: &Indexer<Pod>, objs: Vec<Arc<Pod>>) -> Vec<String> {
    sorted(objs.iter().map(|o| idx.key_of(o).unwrap()).collect())
}

#[test]
fn upsert_returns_the_replaced_object() {
    let idx = Indexer::<Pod>::default_namespaced();
    let first = pod("ns", "a", "", "1");
    assert_eq!(idx.upsert(first.clone()).unwrap(), None);
    let second = pod("ns", "a", "", "2");
    let old = idx.upsert(second.clone()).unwrap().unwrap();
    assert!(Arc::ptr_eq(&old, &first));
    assert!(Arc::ptr_eq(&idx.get_by_key("ns/a").unwrap(), &second));
    assert_eq!(idx.len(), 1);
}

#[test]
fn delete_returns_the_removed_object_and_delete_by_key_handles_tombstones() {
    let idx = Indexer::<Pod>::default_namespaced();
    let a = pod("ns", "a", "", "1");
    idx.add(a.clone()).unwrap();
    idx.add(pod("ns", "b", "", "2")).unwrap();
    let removed = idx.delete(&pod("ns", "a", "", "3")).unwrap().unwrap();
    assert!(Arc::ptr_eq(&removed, &a));
    assert_eq!(idx.delete(&pod("ns", "a", "", "4")).unwrap(), None);
    assert!(idx.delete_by_key("ns/b").unwrap().is_some());
    assert!(idx.is_empty());
    assert!(idx.list_index_func_values(NAMESPACE_INDEX).is_empty());
}

#[test]
fn index_returns_each_object_once_for_multi_valued_queries() {
    let idx = Indexer::new(
        meta_namespace_key_func(),
        Indexers::from([("users".to_owned(), users_func())]),
    );
    idx.add(pod("ns", "a", "ernie,bert", "1")).unwrap();
    idx.add(pod("ns", "b", "bert", "2")).unwrap();
    idx.add(pod("ns", "c", "elmo", "3")).unwrap();
    // "a" shares both ernie and bert with the query but comes back once.
    let found = idx
        .index("users", &pod("q", "q", "ernie,bert,bert", "0"))
        .unwrap();
    assert_eq!(keys(&idx, found), ["ns/a", "ns/b"]);
    // The single-value fast path.
    let found = idx.index("users", &pod("q", "q", "elmo", "0")).unwrap();
    assert_eq!(keys(&idx, found), ["ns/c"]);
    // No values: nothing.
    assert!(
        idx.index("users", &pod("q", "q", "", "0"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn duplicate_values_from_an_index_function_file_once_and_unfile_cleanly() {
    let idx = Indexer::new(
        meta_namespace_key_func(),
        Indexers::from([("users".to_owned(), users_func())]),
    );
    idx.add(pod("ns", "a", "x,x,y", "1")).unwrap();
    assert_eq!(idx.index_keys("users", "x").unwrap(), ["ns/a"]);
    idx.update(pod("ns", "a", "y", "2")).unwrap();
    assert_eq!(idx.list_index_func_values("users"), ["y"]);
    idx.delete_by_key("ns/a").unwrap();
    assert!(idx.list_index_func_values("users").is_empty());
}

#[test]
fn replace_swaps_contents_rebuilds_indexes_and_last_duplicate_wins() {
    let idx = Indexer::new(
        meta_namespace_key_func(),
        Indexers::from([("users".to_owned(), users_func())]),
    );
    idx.add(pod("old", "a", "ernie", "1")).unwrap();
    let winner = pod("new", "b", "oscar", "3");
    idx.replace(
        vec![
            pod("new", "b", "bert", "2"),
            winner.clone(),
            pod("new", "c", "", "4"),
        ],
        "10",
    )
    .unwrap();
    assert_eq!(sorted(idx.list_keys()), ["new/b", "new/c"]);
    assert!(Arc::ptr_eq(&idx.get_by_key("new/b").unwrap(), &winner));
    assert_eq!(idx.list_index_func_values("users"), ["oscar"]);
    assert_eq!(idx.last_resource_version().as_deref(), Some("10"));

    idx.replace(Vec::new(), "").unwrap();
    assert!(idx.is_empty());
    assert!(idx.list_index_func_values("users").is_empty());
    assert_eq!(idx.last_resource_version(), None);
}

#[test]
fn add_indexers_indexes_existing_objects_and_later_writes() {
    let idx = Indexer::<Pod>::default_namespaced();
    idx.add(pod("ns", "a", "ernie,bert", "1")).unwrap();
    idx.add(pod("other", "b", "bert", "2")).unwrap();
    idx.add_indexers(Indexers::from([("users".to_owned(), users_func())]))
        .unwrap();
    assert_eq!(
        idx.index_keys("users", "bert").unwrap(),
        ["ns/a", "other/b"]
    );
    idx.update(pod("ns", "a", "ernie", "3")).unwrap();
    assert_eq!(idx.index_keys("users", "bert").unwrap(), ["other/b"]);
    idx.replace(vec![pod("x", "z", "elmo", "4")], "5").unwrap();
    assert_eq!(idx.list_index_func_values("users"), ["elmo"]);
    assert_eq!(idx.list_index_func_values(NAMESPACE_INDEX), ["x"]);
    let mut names: Vec<String> = idx.indexers().into_keys().collect();
    names.sort();
    assert_eq!(names, [NAMESPACE_INDEX, "users"]);
}

/// kinformer remembers each object's indexed values, so updates and deletes do not call the
/// index function on the old object (client-go calls it twice per update).
#[test]
fn each_write_runs_each_index_function_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = {
        let calls = calls.clone();
        let inner = users_func();
        Arc::new(move |p: &Pod| {
            calls.fetch_add(1, Ordering::SeqCst);
            inner(p)
        }) as IndexFunc<Pod>
    };
    let idx = Indexer::new(
        meta_namespace_key_func(),
        Indexers::from([("users".to_owned(), counted)]),
    );
    idx.add(pod("ns", "a", "x", "1")).unwrap();
    idx.update(pod("ns", "a", "y", "2")).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    idx.delete(&pod("ns", "a", "y", "3")).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(idx.list_index_func_values("users").is_empty());
}

#[test]
fn clones_share_one_cache() {
    let idx = Indexer::<Pod>::default_namespaced();
    let clone = idx.clone();
    clone.add(pod("ns", "a", "", "1")).unwrap();
    assert_eq!(idx.len(), 1);
    assert!(idx.get_by_key("ns/a").is_some());
}

#[test]
fn resync_is_a_no_op() {
    let idx = Indexer::<Pod>::default_namespaced();
    idx.add(pod("ns", "a", "", "1")).unwrap();
    idx.resync().unwrap();
    assert_eq!(idx.list_keys(), ["ns/a"]);
    assert_eq!(idx.last_resource_version().as_deref(), Some("1"));
}

/// A Reflector can fill an Indexer (through `ReplaceOnce`: a list is collected and replaces the
/// cache once it is complete).
#[test]
fn reflector_store_view_writes_through() {
    fn drive<S: ReflectorStore<Pod>>(store: &S) {
        store.replace_begin();
        store.replace_part(vec![pod("ns", "a", "", "1")]).unwrap();
        store.replace_part(vec![pod("ns", "b", "", "2")]).unwrap();
        store.replace_end("5".into()).unwrap();
        store.add(pod("ns", "c", "", "6")).unwrap();
        store.update(pod("ns", "a", "", "7")).unwrap();
        store.delete(pod("ns", "b", "", "8")).unwrap();
        store.resync().unwrap();
        store.update_resource_version("9");
    }
    let idx = Indexer::<Pod>::default_namespaced();
    drive(&ReplaceOnce::new(idx.clone()));
    assert_eq!(sorted(idx.list_keys()), ["ns/a", "ns/c"]);
    assert_eq!(
        idx.get_by_key("ns/a")
            .unwrap()
            .metadata
            .resource_version
            .as_deref(),
        Some("7")
    );
    assert_eq!(idx.last_resource_version().as_deref(), Some("9"));
    // Through an Arc as well.
    let shared = Arc::new(ReplaceOnce::new(Indexer::<Pod>::default_namespaced()));
    drive(&shared);
    assert_eq!(shared.inner().len(), 2);
}

/// A DeltaFifo sees the Indexer as its known objects.
#[test]
fn key_lister_getter_view_reads_through() {
    fn known<S: KeyListerGetter<Pod>>(s: &S) -> (Vec<String>, bool) {
        (sorted(s.list_keys()), s.get_by_key("ns/a").is_some())
    }
    let idx = Indexer::<Pod>::default_namespaced();
    idx.add(pod("ns", "a", "", "1")).unwrap();
    idx.add(pod("ns", "b", "", "1")).unwrap();
    assert_eq!(known(&idx), (vec!["ns/a".into(), "ns/b".into()], true));
}
