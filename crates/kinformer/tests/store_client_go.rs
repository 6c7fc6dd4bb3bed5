//! Ports of client-go's `tools/cache/store_test.go` and `thread_safe_store_test.go`: same
//! inputs, same expected outputs, each test named after the case it ports.
//!
//! client-go's tests store bare strings and `testStoreObject{id, val}` values; kinformer stores
//! Kubernetes objects, so those become ConfigMaps whose name is the id/key and whose `val` data
//! entry is the value, with key and index functions that read exactly those fields.

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error as _;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::{IndexFunc, Indexer, Indexers, KeyError, StoreError, object::KeyFunc};
use kube::api::ObjectMeta;

/// client-go's `testStoreObject{id, val}`.
fn mk_obj(id: &str, val: &str) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(id.to_owned()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("val".to_owned(), val.to_owned())])),
        ..Default::default()
    })
}

fn val(obj: &ConfigMap) -> String {
    obj.data
        .as_ref()
        .and_then(|d| d.get("val"))
        .cloned()
        .unwrap_or_default()
}

/// client-go's `testStoreKeyFunc`: the id.
fn test_store_key_func() -> KeyFunc<ConfigMap> {
    Arc::new(|obj: &ConfigMap| match obj.metadata.name.as_deref() {
        Some(name) if !name.is_empty() => Ok(name.to_owned()),
        _ => Err(KeyError::MissingName { namespace: None }),
    })
}

/// client-go's `testStoreIndexers`: `by_val` files an object under its value.
fn test_store_indexers() -> Indexers<ConfigMap> {
    let by_val: IndexFunc<ConfigMap> = Arc::new(|obj: &ConfigMap| Ok(vec![val(obj)]));
    Indexers::from([("by_val".to_owned(), by_val)])
}

fn vals(objs: &[Arc<ConfigMap>]) -> BTreeSet<String> {
    objs.iter().map(|o| val(o)).collect()
}

/// client-go's `doTestStore`.
fn do_test_store(store: &Indexer<ConfigMap>) {
    store.add(mk_obj("foo", "bar")).unwrap();
    let item = store
        .get(&mk_obj("foo", ""))
        .unwrap()
        .expect("didn't find inserted item");
    assert_eq!(val(&item), "bar");

    store.update(mk_obj("foo", "baz")).unwrap();
    let item = store
        .get(&mk_obj("foo", ""))
        .unwrap()
        .expect("didn't find inserted item");
    assert_eq!(val(&item), "baz");

    store.delete(&mk_obj("foo", "")).unwrap();
    assert!(
        store.get(&mk_obj("foo", "")).unwrap().is_none(),
        "found deleted item"
    );

    // Test List.
    store.add(mk_obj("a", "b")).unwrap();
    store.add(mk_obj("c", "d")).unwrap();
    store.add(mk_obj("e", "e")).unwrap();
    let found = store.list();
    assert_eq!(found.len(), 3, "extra items");
    assert_eq!(
        vals(&found),
        BTreeSet::from(["b".into(), "d".into(), "e".into()])
    );

    // Test Replace.
    store
        .replace(vec![mk_obj("foo", "foo"), mk_obj("bar", "bar")], "0")
        .unwrap();
    let found = store.list();
    assert_eq!(found.len(), 2, "extra items");
    assert_eq!(vals(&found), BTreeSet::from(["foo".into(), "bar".into()]));
}

#[test]
fn test_cache() {
    do_test_store(&Indexer::new(test_store_key_func(), Indexers::new()));
}

/// client-go's `doTestIndex` via `TestIndex`.
#[test]
fn test_index() {
    let indexer = Indexer::new(test_store_key_func(), test_store_indexers());
    let expected: BTreeMap<&str, BTreeSet<String>> = BTreeMap::from([
        ("b", BTreeSet::from(["a".into(), "c".into()])),
        ("f", BTreeSet::from(["e".into()])),
        ("h", BTreeSet::from(["g".into()])),
    ]);
    indexer.add(mk_obj("a", "b")).unwrap();
    indexer.add(mk_obj("c", "b")).unwrap();
    indexer.add(mk_obj("e", "f")).unwrap();
    indexer.add(mk_obj("g", "h")).unwrap();
    for (value, ids) in expected {
        // The query object has no id: Index only runs the index function on it.
        let query = mk_obj("", value);
        let found: BTreeSet<String> = indexer
            .index("by_val", &query)
            .unwrap()
            .iter()
            .map(|o| o.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(found, ids, "index {value}");
    }
}

/// client-go's `TestKeyError`: the key error is the cause of the store error.
#[test]
fn test_key_error() {
    let key_err = KeyError::MissingName { namespace: None };
    let err = StoreError::from(key_err.clone());
    let source = err.source().expect("a key error has a source");
    assert_eq!(source.downcast_ref::<KeyError>(), Some(&key_err));
}

// ---- thread_safe_store_test.go ----

/// client-go stores bare strings under explicit keys; here a ConfigMap named after the key
/// whose `val` is the string.
fn string_obj(key: &str, s: &str) -> Arc<ConfigMap> {
    mk_obj(key, s)
}

#[test]
fn test_thread_safe_store_delete_removes_empty_sets_from_index() {
    let test_indexer = "testIndexer";
    let indexers: Indexers<ConfigMap> = Indexers::from([(
        test_indexer.to_owned(),
        Arc::new(|obj: &ConfigMap| Ok(vec![val(obj)])) as IndexFunc<ConfigMap>,
    )]);
    let store = Indexer::new(test_store_key_func(), indexers);
    let test_key = "testKey";
    store.add(string_obj(test_key, test_key)).unwrap();

    // Assumption check: there is a set for `testKey` with one element.
    assert_eq!(
        store.index_keys(test_indexer, test_key).unwrap(),
        [test_key]
    );
    assert_eq!(store.list_index_func_values(test_indexer), [test_key]);

    store.delete_by_key(test_key).unwrap();
    assert!(
        store.list_index_func_values(test_indexer).is_empty(),
        "index backing set not deleted from index"
    );
    assert!(store.index_keys(test_indexer, test_key).unwrap().is_empty());
}

#[test]
fn test_thread_safe_store_add_keeps_non_empty_set_post_delete_from_index() {
    let test_indexer = "testIndexer";
    let test_index = "testIndex";
    let indexers: Indexers<ConfigMap> = Indexers::from([(
        test_indexer.to_owned(),
        Arc::new(move |_: &ConfigMap| Ok(vec![test_index.to_owned()])) as IndexFunc<ConfigMap>,
    )]);
    let store = Indexer::new(test_store_key_func(), indexers);
    store.add(string_obj("retain", "retain")).unwrap();
    store.add(string_obj("delete", "delete")).unwrap();

    assert_eq!(
        store.index_keys(test_indexer, test_index).unwrap(),
        ["delete", "retain"]
    );

    store.delete_by_key("delete").unwrap();
    assert_eq!(
        store.list_index_func_values(test_indexer),
        [test_index],
        "index backing set erroneously deleted from index"
    );
    assert_eq!(
        store.index_keys(test_indexer, test_index).unwrap(),
        ["retain"]
    );
}

#[test]
fn test_thread_safe_store_indexing_functions_with_multiple_values() {
    let test_indexer = "testIndexer";
    let indexers: Indexers<ConfigMap> = Indexers::from([(
        test_indexer.to_owned(),
        Arc::new(|obj: &ConfigMap| Ok(val(obj).split(',').map(str::to_owned).collect()))
            as IndexFunc<ConfigMap>,
    )]);
    let store = Indexer::new(test_store_key_func(), indexers);
    let compare = |value: &str, expected: &[&str]| {
        assert_eq!(
            store.index_keys(test_indexer, value).unwrap(),
            expected,
            "unexpected index for value {value}"
        );
    };

    store.add(string_obj("key1", "foo")).unwrap();
    store.add(string_obj("key2", "bar")).unwrap();
    compare("foo", &["key1"]);
    compare("bar", &["key2"]);

    store.update(string_obj("key2", "foo,bar")).unwrap();
    compare("foo", &["key1", "key2"]);
    compare("bar", &["key2"]);

    store.update(string_obj("key1", "foo,bar")).unwrap();
    compare("foo", &["key1", "key2"]);
    compare("bar", &["key1", "key2"]);

    store.add(string_obj("key3", "foo,bar,baz")).unwrap();
    compare("foo", &["key1", "key2", "key3"]);
    compare("bar", &["key1", "key2", "key3"]);
    compare("baz", &["key3"]);

    store.update(string_obj("key1", "foo")).unwrap();
    compare("foo", &["key1", "key2", "key3"]);
    compare("bar", &["key2", "key3"]);
    compare("baz", &["key3"]);

    store.update(string_obj("key2", "bar")).unwrap();
    compare("foo", &["key1", "key3"]);
    compare("bar", &["key2", "key3"]);
    compare("baz", &["key3"]);

    store.delete_by_key("key1").unwrap();
    compare("foo", &["key3"]);
    compare("bar", &["key2", "key3"]);
    compare("baz", &["key3"]);

    store.delete_by_key("key3").unwrap();
    compare("foo", &[]);
    compare("bar", &["key2"]);
    compare("baz", &[]);
}

/// An object whose only interesting field is its resource version (client-go uses a bare
/// `ObjectMeta`).
fn rv_obj(key: &str, rv: &str) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(key.to_owned()),
            resource_version: (!rv.is_empty()).then(|| rv.to_owned()),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn plain_store() -> Indexer<ConfigMap> {
    Indexer::new(test_store_key_func(), Indexers::new())
}

#[test]
fn test_thread_safe_store_rv_initial_state() {
    assert_eq!(plain_store().last_resource_version(), None);
}

#[test]
fn test_thread_safe_store_rv_add_update_and_delete() {
    let store = plain_store();
    store.add(rv_obj("key1", "10")).unwrap();
    assert_eq!(store.last_resource_version().as_deref(), Some("10"));

    // Same RV again.
    store.add(rv_obj("key3", "10")).unwrap();
    assert_eq!(store.last_resource_version().as_deref(), Some("10"));

    // Higher RV.
    store.add(rv_obj("key4", "20")).unwrap();
    assert_eq!(store.last_resource_version().as_deref(), Some("20"));

    // Delete an earlier object with a newer RV.
    store.delete(&rv_obj("key4", "30")).unwrap();
    assert_eq!(store.last_resource_version().as_deref(), Some("30"));

    // client-go adds a non-meta object here, which does not update the RV; every kinformer
    // object has metadata, and one without a resource version likewise leaves it alone.
    store.add(rv_obj("key5", "")).unwrap();
    assert_eq!(store.last_resource_version().as_deref(), Some("30"));

    store.add(rv_obj("key6", "40")).unwrap();
    assert_eq!(store.last_resource_version().as_deref(), Some("40"));

    // Delete without an object (client-go's `Delete(key)`): the RV stays.
    store.delete_by_key("key6").unwrap();
    assert_eq!(store.last_resource_version().as_deref(), Some("40"));

    // client-go then runs a Transaction whose last object has RV 50; kinformer has no
    // transactions, so the same writes go one by one and the last one's RV wins likewise.
    store.update(rv_obj("key9", "40")).unwrap();
    store.update(rv_obj("key10", "30")).unwrap();
    store.update(rv_obj("key11", "50")).unwrap();
    assert_eq!(store.last_resource_version().as_deref(), Some("50"));
}

#[test]
fn test_thread_safe_store_rv_replace() {
    let store = plain_store();
    store.add(rv_obj("key1", "10")).unwrap();
    assert_eq!(store.last_resource_version().as_deref(), Some("10"));
    store
        .replace(vec![rv_obj("key3", "40"), rv_obj("key2", "30")], "50")
        .unwrap();
    assert_eq!(store.last_resource_version().as_deref(), Some("50"));
}

#[test]
fn test_thread_safe_store_rv_delete() {
    let store = plain_store();
    store.add(rv_obj("key1", "10")).unwrap();
    assert_eq!(store.last_resource_version().as_deref(), Some("10"));
    store.delete(&rv_obj("key1", "20")).unwrap();
    assert_eq!(store.last_resource_version().as_deref(), Some("20"));
}

/// client-go's `Bookmark`: the RV moves without any object changing.
#[test]
fn test_thread_safe_store_rv_bookmark() {
    let store = plain_store();
    store.add(rv_obj("key1", "10")).unwrap();
    store.bookmark("25");
    assert_eq!(store.last_resource_version().as_deref(), Some("25"));
    assert_eq!(store.len(), 1);
}
