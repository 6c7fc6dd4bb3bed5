//! Property test: a lean-mode Indexer ([`CacheMode::Lean`]) and a default-mode one, given the
//! same random churn (add, update, delete, delete_by_key, replace, replace_reporting,
//! transactions, add_indexers), return equal results and equal objects from every read
//! (`get_by_key`, `list`, `list_keys`, `by_index`, `index`, `index_keys`,
//! `list_index_func_values`) after every step. Each indexer gets its own copy of every object,
//! dropped after the write, so the lean one's reads really decode (and, while a read's result is
//! held, share it).
//!
//! The number of cases comes from `PROPTEST_CASES` (CI sets 1,000; 256 when unset).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
use kinformer::store::{CacheMode, Transaction};
use kinformer::{
    DeletedFinalStateUnknown, IndexFunc, IndexFuncError, Indexer, Indexers, ObjectOrTombstone,
    StoreError, meta_namespace_key, object::meta_namespace_key_func, store::NAMESPACE_INDEX,
    store::namespace_index_func,
};
use kube::api::ObjectMeta;
use proptest::prelude::*;
use serde_json::json;

const CATALOG: [&str; 4] = [NAMESPACE_INDEX, "users", "app", "poison"];

fn data(o: &ConfigMap, key: &str) -> Option<String> {
    o.data.as_ref().and_then(|d| d.get(key)).cloned()
}

fn catalog(name: &str) -> IndexFunc<ConfigMap> {
    match name {
        NAMESPACE_INDEX => namespace_index_func(),
        "users" => Arc::new(|o: &ConfigMap| {
            Ok(data(o, "users")
                .map(|u| u.split(',').map(str::to_owned).collect())
                .unwrap_or_default())
        }),
        "app" => Arc::new(|o: &ConfigMap| {
            Ok(o.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app"))
                .cloned()
                .into_iter()
                .collect())
        }),
        _ => Arc::new(|o: &ConfigMap| {
            if data(o, "poison").is_some() {
                Err(IndexFuncError::new("poisoned"))
            } else {
                Ok(vec![o.metadata.name.clone().unwrap_or_default()])
            }
        }),
    }
}

/// What an object is made of; each indexer builds its own copy.
#[derive(Debug, Clone)]
struct Spec {
    name: Option<&'static str>,
    ns: &'static str,
    users: Vec<&'static str>,
    app: Option<&'static str>,
    poison: bool,
    rv: Option<u32>,
    text: String,
    managed: Option<(String, BTreeMap<String, u8>)>,
    binary: Option<Vec<u8>>,
}

impl Spec {
    fn build(&self) -> Arc<ConfigMap> {
        let mut data = BTreeMap::new();
        if !self.users.is_empty() {
            data.insert("users".to_owned(), self.users.join(","));
        }
        if self.poison {
            data.insert("poison".to_owned(), "yes".to_owned());
        }
        data.insert("text".to_owned(), self.text.clone());
        let managed_fields = self.managed.as_ref().map(|(manager, fields)| {
            let tree: serde_json::Map<String, serde_json::Value> = fields
                .iter()
                .map(|(k, v)| (format!("f:{k}"), json!({".": {}, "v": v, "n": null})))
                .collect();
            vec![ManagedFieldsEntry {
                manager: Some(manager.clone()),
                operation: Some("Update".into()),
                fields_type: Some("FieldsV1".into()),
                fields_v1: Some(FieldsV1(json!({ "f:data": tree }))),
                ..Default::default()
            }]
        });
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: self.name.map(str::to_owned),
                namespace: (!self.ns.is_empty()).then(|| self.ns.to_owned()),
                labels: self
                    .app
                    .map(|a| BTreeMap::from([("app".to_owned(), a.to_owned())])),
                resource_version: self.rv.map(|v| v.to_string()),
                managed_fields,
                ..Default::default()
            },
            data: Some(data),
            binary_data: self
                .binary
                .clone()
                .map(|b| BTreeMap::from([("bin".to_owned(), ByteString(b))])),
            ..Default::default()
        })
    }
}

fn spec_strategy() -> impl Strategy<Value = Spec> {
    (
        (
            prop_oneof![9 => prop::sample::select(vec!["a", "b", "c", "d"]).prop_map(Some), 1 => Just(None)],
            prop::sample::select(vec!["", "x", "y"]),
            prop::collection::vec(prop::sample::select(vec!["u1", "u2", "u3", ""]), 0..4),
            prop::option::of(prop::sample::select(vec!["web", "db"])),
            prop::bool::weighted(0.1),
        ),
        (
            prop::option::of(1u32..100),
            "\\PC{0,12}",
            prop::option::of(("[a-z]{1,8}", prop::collection::btree_map("[a-z.]{1,6}", any::<u8>(), 0..4))),
            prop::option::of(prop::collection::vec(any::<u8>(), 0..8)),
        ),
    )
        .prop_map(|((name, ns, users, app, poison), (rv, text, managed, binary))| Spec {
            name,
            ns,
            users,
            app,
            poison,
            rv,
            text,
            managed,
            binary,
        })
}

#[derive(Debug, Clone)]
enum Txn {
    Add(Spec),
    Update(Spec),
    Delete(Spec),
    DeleteKey(&'static str),
}

#[derive(Debug, Clone)]
enum Op {
    Add(Spec),
    Update(Spec),
    Upsert(Spec),
    Delete(Spec),
    DeleteByKey(&'static str),
    Replace(Vec<Spec>, &'static str),
    ReplaceReporting(Vec<Spec>, &'static str),
    Transaction(Vec<Txn>),
    AddIndexers(Vec<&'static str>),
    Bookmark(&'static str),
}

const KEYS: [&str; 5] = ["a", "x/a", "y/b", "c", "a/b/c"];

fn txn_strategy() -> impl Strategy<Value = Txn> {
    prop_oneof![
        3 => spec_strategy().prop_map(Txn::Add),
        3 => spec_strategy().prop_map(Txn::Update),
        2 => spec_strategy().prop_map(Txn::Delete),
        1 => prop::sample::select(KEYS.to_vec()).prop_map(Txn::DeleteKey),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let list = || prop::collection::vec(spec_strategy(), 0..6);
    let rv = || prop::sample::select(vec!["", "7", "123"]);
    prop_oneof![
        4 => spec_strategy().prop_map(Op::Add),
        3 => spec_strategy().prop_map(Op::Update),
        2 => spec_strategy().prop_map(Op::Upsert),
        2 => spec_strategy().prop_map(Op::Delete),
        1 => prop::sample::select(KEYS.to_vec()).prop_map(Op::DeleteByKey),
        1 => (list(), rv()).prop_map(|(l, rv)| Op::Replace(l, rv)),
        1 => (list(), rv()).prop_map(|(l, rv)| Op::ReplaceReporting(l, rv)),
        2 => prop::collection::vec(txn_strategy(), 0..6).prop_map(Op::Transaction),
        1 => prop::sample::subsequence(CATALOG.to_vec(), 1..3).prop_map(Op::AddIndexers),
        1 => rv().prop_map(Op::Bookmark),
    ]
}

/// Objects by key, compared by value.
fn by_key(objects: Vec<Arc<ConfigMap>>) -> BTreeMap<String, ConfigMap> {
    objects
        .into_iter()
        .map(|o| (meta_namespace_key(o.as_ref()).unwrap(), (*o).clone()))
        .collect()
}

fn tombstone_key(key: &str) -> ObjectOrTombstone<ConfigMap> {
    ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
        key: key.to_owned(),
        obj: None,
    })
}

/// Runs `op` on `idx` with objects of its own, and describes the outcome by value.
fn run(op: &Op, idx: &Indexer<ConfigMap>) -> String {
    let value = |o: Option<Arc<ConfigMap>>| o.map(|o| (*o).clone());
    match op {
        Op::Add(s) => format!("{:?}", idx.add(s.build())),
        Op::Update(s) => format!("{:?}", idx.update(s.build())),
        Op::Upsert(s) => format!("{:?}", idx.upsert(s.build()).map(value)),
        Op::Delete(s) => format!("{:?}", idx.delete(&s.build()).map(value)),
        Op::DeleteByKey(k) => format!("{:?}", idx.delete_by_key(k).map(value)),
        Op::Replace(l, rv) => format!("{:?}", idx.replace(l.iter().map(Spec::build).collect(), rv)),
        Op::ReplaceReporting(l, rv) => {
            match idx.replace_reporting(l.iter().map(Spec::build).collect(), rv) {
                Ok(outcome) => {
                    let previous: Vec<_> = outcome.previous.into_iter().map(value).collect();
                    let mut removed: Vec<_> = outcome
                        .removed
                        .into_iter()
                        .map(|(k, o)| (k, (*o).clone()))
                        .collect();
                    removed.sort_by(|a, b| a.0.cmp(&b.0));
                    format!("{previous:?} {removed:?}")
                }
                Err(e) => format!("{e:?}"),
            }
        }
        Op::Transaction(txns) => {
            let txns = txns
                .iter()
                .map(|t| match t {
                    Txn::Add(s) => Transaction::Add(s.build()),
                    Txn::Update(s) => Transaction::Update(s.build()),
                    Txn::Delete(s) => Transaction::Delete(ObjectOrTombstone::Object(s.build())),
                    Txn::DeleteKey(k) => Transaction::Delete(tombstone_key(k)),
                })
                .collect();
            let outcome = idx.transaction(txns);
            let results: Vec<_> = outcome
                .into_results()
                .into_iter()
                .map(|r| r.map(value))
                .collect();
            format!("{results:?}")
        }
        Op::AddIndexers(names) => {
            let result = idx.add_indexers(
                names
                    .iter()
                    .map(|n| (n.to_string(), catalog(n)))
                    .collect::<Indexers<ConfigMap>>(),
            );
            // Which poisoned object is reported depends on iteration order.
            match result {
                Err(StoreError::IndexFunc { index, .. }) => format!("IndexFunc({index})"),
                other => format!("{other:?}"),
            }
        }
        Op::Bookmark(rv) => {
            idx.bookmark(rv);
            String::new()
        }
    }
}

/// Every read of the two indexers agrees, by value.
fn same_reads(full: &Indexer<ConfigMap>, lean: &Indexer<ConfigMap>) -> Result<(), TestCaseError> {
    let mut keys = full.list_keys();
    keys.sort();
    let mut lean_keys = lean.list_keys();
    lean_keys.sort();
    prop_assert_eq!(&lean_keys, &keys);
    prop_assert_eq!(lean.len(), full.len());
    prop_assert_eq!(by_key(lean.list()), by_key(full.list()));
    for key in keys.iter().map(String::as_str).chain(KEYS) {
        let want = full.get_by_key(key).map(|o| (*o).clone());
        prop_assert_eq!(
            lean.get_by_key(key).map(|o| (*o).clone()),
            want,
            "get {}",
            key
        );
    }
    prop_assert_eq!(lean.last_resource_version(), full.last_resource_version());
    let mut names: Vec<String> = full.indexers().into_keys().collect();
    names.sort();
    let mut lean_names: Vec<String> = lean.indexers().into_keys().collect();
    lean_names.sort();
    prop_assert_eq!(&lean_names, &names);
    for name in &names {
        let values = full.list_index_func_values(name);
        prop_assert_eq!(&lean.list_index_func_values(name), &values);
        for value in values.iter().map(String::as_str).chain(["no-such-value"]) {
            prop_assert_eq!(lean.index_keys(name, value), full.index_keys(name, value));
            prop_assert_eq!(
                by_key(lean.by_index(name, value).unwrap()),
                by_key(full.by_index(name, value).unwrap()),
                "by_index {} {}",
                name,
                value
            );
        }
        for query in full.list() {
            prop_assert_eq!(
                lean.index(name, &query).map(by_key),
                full.index(name, &query).map(by_key),
                "index {}",
                name
            );
        }
    }
    prop_assert_eq!(
        lean.by_index("no-such-index", "x").err(),
        full.by_index("no-such-index", "x").err()
    );
    // While a read's result is held, the next read shares it.
    if let Some(key) = keys.first() {
        let held = lean.get_by_key(key).unwrap();
        prop_assert!(Arc::ptr_eq(&held, &lean.get_by_key(key).unwrap()));
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn lean_reads_equal_full_reads_under_churn(
        initial in prop::sample::subsequence(CATALOG.to_vec(), 0..=CATALOG.len()),
        ops in prop::collection::vec(op_strategy(), 1..30),
    ) {
        let indexers = || -> Indexers<ConfigMap> {
            initial.iter().map(|n| (n.to_string(), catalog(n))).collect()
        };
        let full = Indexer::new(meta_namespace_key_func(), indexers());
        let lean = Indexer::with_cache_mode(meta_namespace_key_func(), indexers(), CacheMode::Lean);
        prop_assert_eq!(lean.cache_mode(), CacheMode::Lean);
        for op in &ops {
            let want = run(op, &full);
            let got = run(op, &lean);
            prop_assert_eq!(got, want, "{:?}", op);
            same_reads(&full, &lean)?;
        }
        if !full.is_empty() {
            prop_assert!(lean.encoded_bytes().unwrap() > 0);
        }
        prop_assert_eq!(full.encoded_bytes(), None);
    }
}
