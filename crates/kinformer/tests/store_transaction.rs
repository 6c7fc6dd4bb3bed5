//! Store transactions on the Indexer: ports of client-go's `TestCacheTransactionShouldIndexErrors`
//! (store_test.go) and the transaction step of `TestThreadSafeStoreRV` (thread_safe_store_test.go),
//! plus kinformer's own: previous objects, tombstones, index failures, atomicity for readers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::store::{Transaction, TransactionError};
use kinformer::{
    DeletedFinalStateUnknown, IndexFunc, Indexer, Indexers, KeyError, ObjectOrTombstone,
    StoreError, object::KeyFunc,
};
use kube::api::ObjectMeta;

fn cm(name: &str, val: &str, rv: &str) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            resource_version: (!rv.is_empty()).then(|| rv.to_owned()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("val".to_owned(), val.to_owned())])),
        ..Default::default()
    })
}

fn val(o: &ConfigMap) -> &str {
    o.data.as_ref().unwrap()["val"].as_str()
}

/// Keys are names; `fail*` names have no key.
fn key_func() -> KeyFunc<ConfigMap> {
    Arc::new(|o: &ConfigMap| match o.metadata.name.as_deref() {
        Some(name) if !name.starts_with("fail") => Ok(name.to_owned()),
        _ => Err(KeyError::MissingName { namespace: None }),
    })
}

fn by_val() -> Indexers<ConfigMap> {
    let f: IndexFunc<ConfigMap> = Arc::new(|o: &ConfigMap| {
        if val(o) == "bad" {
            Err("bad value".into())
        } else {
            Ok(vec![val(o).to_owned()])
        }
    });
    Indexers::from([("by_val".to_owned(), f)])
}

/// (name, object names, expected successful indices when the transaction fails).
type TxnCase = (&'static str, Vec<&'static str>, Option<Vec<usize>>);

#[test]
fn test_cache_transaction_should_index_errors() {
    let cases: Vec<TxnCase> = vec![
        (
            "txn all success objects should work",
            vec!["success1", "success2"],
            None,
        ),
        (
            "txn all fail objects should work",
            vec!["fail1", "fail2"],
            Some(vec![]),
        ),
        (
            "txn mix success and fail objects should work",
            vec!["success1", "fail1", "success2", "fail2"],
            Some(vec![0, 2]),
        ),
    ];
    for (name, objs, expected) in cases {
        let store = Indexer::new(key_func(), Indexers::new());
        let txns = objs
            .iter()
            .map(|n| Transaction::Add(cm(n, "v", "")))
            .collect();
        let outcome = store.transaction(txns);
        match expected {
            None => assert!(outcome.is_ok() && outcome.error().is_none(), "{name}"),
            Some(indices) => {
                let error = outcome.error().expect(name);
                assert_eq!(error.successful_indices, indices, "{name}");
                assert_eq!(error.total_transactions, objs.len(), "{name}");
                assert_eq!(error.failures.len(), objs.len() - indices.len(), "{name}");
                assert!(
                    error.to_string().starts_with(&format!(
                        "failed to execute ({}/{}) transactions",
                        objs.len() - indices.len(),
                        objs.len()
                    )),
                    "{name}: {error}"
                );
            }
        }
        let applied = objs.iter().filter(|n| n.starts_with("success")).count();
        assert_eq!(store.len(), applied, "{name}");
    }
}

#[test]
fn test_thread_safe_store_rv_transaction() {
    let store = Indexer::new(key_func(), Indexers::new());
    let outcome = store.transaction(vec![
        Transaction::Update(cm("key1", "a", "40")),
        Transaction::Update(cm("key2", "b", "30")),
        Transaction::Update(cm("key3", "c", "50")),
    ]);
    assert!(outcome.is_ok());
    assert_eq!(store.last_resource_version().as_deref(), Some("50"));
}

/// Each write reports what it replaced or removed, in order, so a consumer can tell an add
/// from an update without reading the cache first.
#[test]
fn transaction_reports_previous_objects() {
    let store = Indexer::new(key_func(), by_val());
    let a1 = cm("a", "x", "1");
    store.add(a1.clone()).unwrap();
    let a2 = cm("a", "y", "2");
    let outcome = store.transaction(vec![
        Transaction::Update(a2.clone()),
        Transaction::Add(cm("b", "x", "3")),
        Transaction::Delete(ObjectOrTombstone::Object(cm("a", "", "4"))),
        Transaction::Delete(ObjectOrTombstone::Object(cm("never", "", "5"))),
    ]);
    let results = outcome.into_results();
    assert!(Arc::ptr_eq(
        results[0].as_ref().unwrap().as_ref().unwrap(),
        &a1
    ));
    assert!(results[1].as_ref().unwrap().is_none());
    assert!(Arc::ptr_eq(
        results[2].as_ref().unwrap().as_ref().unwrap(),
        &a2
    ));
    assert!(
        results[3].as_ref().unwrap().is_none(),
        "deleting nothing is no error"
    );
    assert_eq!(store.list_keys(), ["b"]);
    assert_eq!(store.index_keys("by_val", "x").unwrap(), ["b"]);
    assert!(store.index_keys("by_val", "y").unwrap().is_empty());
    assert_eq!(store.last_resource_version().as_deref(), Some("5"));
}

/// A tombstone is deleted by its own key and records no resource version.
#[test]
fn transaction_deletes_tombstones_by_key() {
    let store = Indexer::new(key_func(), Indexers::new());
    store.add(cm("a", "x", "7")).unwrap();
    let outcome = store.transaction(vec![Transaction::Delete(ObjectOrTombstone::Tombstone(
        DeletedFinalStateUnknown {
            key: "a".into(),
            obj: None,
        },
    ))]);
    assert!(outcome.results()[0].as_ref().unwrap().is_some());
    assert!(store.is_empty());
    assert_eq!(store.last_resource_version().as_deref(), Some("7"));
}

/// A write whose index function fails changes nothing (client-go panics); the others apply.
#[test]
fn transaction_index_failure_is_per_write() {
    let store = Indexer::new(key_func(), by_val());
    store.add(cm("a", "x", "1")).unwrap();
    let outcome = store.transaction(vec![
        Transaction::Update(cm("a", "bad", "2")),
        Transaction::Add(cm("b", "y", "3")),
    ]);
    let error: TransactionError = outcome.error().unwrap();
    assert_eq!(error.successful_indices, [1]);
    assert!(matches!(
        error.failures[0],
        (0, StoreError::IndexFunc { .. })
    ));
    assert_eq!(
        val(&store.get_by_key("a").unwrap()),
        "x",
        "the failed write changed nothing"
    );
    assert_eq!(store.index_keys("by_val", "x").unwrap(), ["a"]);
    assert_eq!(store.index_keys("by_val", "y").unwrap(), ["b"]);
    assert_eq!(store.last_resource_version().as_deref(), Some("3"));
}

#[test]
fn empty_transaction_does_nothing() {
    let store = Indexer::new(key_func(), Indexers::new());
    let outcome = store.transaction(vec![]);
    assert!(outcome.is_ok() && outcome.results().is_empty());
    assert_eq!(store.last_resource_version(), None);
}

/// Readers see a transaction whole or not at all: every transaction adds (or removes) ten
/// objects, and a reader never sees a count that is not a multiple of ten.
#[test]
fn readers_see_all_or_nothing() {
    let store = Indexer::new(key_func(), by_val());
    let done = Arc::new(AtomicBool::new(false));
    let reader = std::thread::spawn({
        let store = store.clone();
        let done = done.clone();
        move || {
            let mut reads = 0u64;
            while !done.load(Ordering::Relaxed) {
                let n = store.len();
                assert_eq!(n % 10, 0, "saw a partial transaction: {n}");
                let indexed = store.index_keys("by_val", "v").unwrap().len();
                assert_eq!(indexed % 10, 0, "saw a partial index: {indexed}");
                reads += 1;
            }
            reads
        }
    });
    for round in 0..300 {
        let objs: Vec<_> = (0..10).map(|i| cm(&format!("o{i}"), "v", "")).collect();
        let txns = if round % 2 == 0 {
            objs.into_iter().map(Transaction::Add).collect()
        } else {
            objs.into_iter()
                .map(|o| Transaction::Delete(ObjectOrTombstone::Object(o)))
                .collect()
        };
        assert!(store.transaction(txns).is_ok());
    }
    done.store(true, Ordering::Relaxed);
    reader
        .join()
        .expect("the reader saw whole transactions only");
}

/// `replace_reporting` tells what each listed object replaced and what the list removed, from
/// one swap.
#[test]
fn replace_reporting_reports_updates_adds_and_removals() {
    let store = Indexer::new(key_func(), by_val());
    let kept = cm("kept", "x", "1");
    let gone = cm("gone", "x", "2");
    store.add(kept.clone()).unwrap();
    store.add(gone.clone()).unwrap();
    let outcome = store
        .replace_reporting(vec![cm("kept", "y", "3"), cm("new", "y", "4")], "10")
        .unwrap();
    assert!(Arc::ptr_eq(outcome.previous[0].as_ref().unwrap(), &kept));
    assert!(outcome.previous[1].is_none());
    assert_eq!(outcome.removed.len(), 1);
    assert_eq!(outcome.removed[0].0, "gone");
    assert!(Arc::ptr_eq(&outcome.removed[0].1, &gone));
    let mut keys = store.list_keys();
    keys.sort();
    assert_eq!(keys, ["kept", "new"]);
    assert_eq!(store.index_keys("by_val", "y").unwrap(), ["kept", "new"]);
    assert_eq!(store.last_resource_version().as_deref(), Some("10"));

    // A failing list changes nothing.
    assert!(matches!(
        store.replace_reporting(vec![cm("ok", "v", ""), cm("fail", "v", "")], "11"),
        Err(StoreError::Key(_))
    ));
    assert_eq!(store.len(), 2);
    assert!(matches!(
        store.replace_reporting(vec![cm("ok", "bad", "")], "11"),
        Err(StoreError::IndexFunc { .. })
    ));
    assert_eq!(store.len(), 2);
    assert_eq!(store.last_resource_version().as_deref(), Some("10"));
}
