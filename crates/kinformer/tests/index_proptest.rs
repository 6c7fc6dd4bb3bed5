//! Property test: random sequences of add/update/delete/delete_by_key/replace/add_indexers on an
//! Indexer, checked after every step against a model (a plain map of objects) and indexes
//! recomputed by brute force from it.
//!
//! The number of cases comes from `PROPTEST_CASES` (CI sets 1,000; 256 when unset).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::{
    IndexFunc, IndexFuncError, Indexer, Indexers, StoreError, meta_namespace_key,
    object::meta_namespace_key_func, store::NAMESPACE_INDEX, store::namespace_index_func,
};
use kube::api::ObjectMeta;
use proptest::prelude::*;

/// Every index the test may register, by name.
const CATALOG: [&str; 4] = [NAMESPACE_INDEX, "users", "app", "poison"];

/// The index function registered under `name`.
fn catalog(name: &str) -> IndexFunc<ConfigMap> {
    match name {
        NAMESPACE_INDEX => namespace_index_func(),
        // Multi-valued, with duplicates and empty values possible.
        "users" => Arc::new(|o: &ConfigMap| Ok(users(o))),
        // Zero or one value.
        "app" => Arc::new(|o: &ConfigMap| Ok(app(o).into_iter().collect())),
        // Fails on poisoned objects.
        _ => Arc::new(|o: &ConfigMap| {
            if poisoned(o) {
                Err(IndexFuncError::new("poisoned"))
            } else {
                Ok(vec![o.metadata.name.clone().unwrap_or_default()])
            }
        }),
    }
}

/// The same functions, as the brute force computes them (no error case: only called on
/// objects that are stored, which cannot be poisoned while "poison" is registered).
fn expected_values(name: &str, o: &ConfigMap) -> BTreeSet<String> {
    match name {
        NAMESPACE_INDEX => BTreeSet::from([o.metadata.namespace.clone().unwrap_or_default()]),
        "users" => users(o).into_iter().collect(),
        "app" => app(o).into_iter().collect(),
        _ => BTreeSet::from([o.metadata.name.clone().unwrap_or_default()]),
    }
}

fn data(o: &ConfigMap, key: &str) -> Option<String> {
    o.data.as_ref().and_then(|d| d.get(key)).cloned()
}

fn users(o: &ConfigMap) -> Vec<String> {
    data(o, "users")
        .map(|u| u.split(',').map(str::to_owned).collect())
        .unwrap_or_default()
}

fn app(o: &ConfigMap) -> Option<String> {
    o.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("app"))
        .cloned()
}

fn poisoned(o: &ConfigMap) -> bool {
    data(o, "poison").is_some()
}

fn obj_strategy() -> impl Strategy<Value = Arc<ConfigMap>> {
    (
        prop_oneof![9 => prop::sample::select(vec!["a", "b", "c", "d"]).prop_map(Some), 1 => Just(None)],
        prop::sample::select(vec!["", "x", "y"]),
        prop::collection::vec(prop::sample::select(vec!["u1", "u2", "u3", ""]), 0..4),
        prop::option::of(prop::sample::select(vec!["web", "db"])),
        prop::bool::weighted(0.1),
        prop::option::of(1u32..100),
    )
        .prop_map(|(name, ns, users, app, poison, rv)| {
            let mut data = BTreeMap::new();
            if !users.is_empty() {
                data.insert("users".to_owned(), users.join(","));
            }
            if poison {
                data.insert("poison".to_owned(), "yes".to_owned());
            }
            Arc::new(ConfigMap {
                metadata: ObjectMeta {
                    name: name.map(str::to_owned),
                    namespace: (!ns.is_empty()).then(|| ns.to_owned()),
                    labels: app.map(|a| BTreeMap::from([("app".to_owned(), a.to_owned())])),
                    resource_version: rv.map(|v| v.to_string()),
                    ..Default::default()
                },
                data: Some(data),
                ..Default::default()
            })
        })
}

#[derive(Debug, Clone)]
enum Op {
    Add(Arc<ConfigMap>),
    Update(Arc<ConfigMap>),
    Delete(Arc<ConfigMap>),
    DeleteByKey(String),
    Replace(Vec<Arc<ConfigMap>>, String),
    AddIndexers(Vec<&'static str>),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => obj_strategy().prop_map(Op::Add),
        3 => obj_strategy().prop_map(Op::Update),
        2 => obj_strategy().prop_map(Op::Delete),
        1 => prop::sample::select(vec!["a", "x/a", "y/b", "c", "a/b/c"]).prop_map(|k| Op::DeleteByKey(k.to_owned())),
        1 => (prop::collection::vec(obj_strategy(), 0..6), prop::sample::select(vec!["", "7", "123"]))
            .prop_map(|(l, rv)| Op::Replace(l, rv.to_owned())),
        1 => prop::sample::subsequence(CATALOG.to_vec(), 1..3).prop_map(Op::AddIndexers),
    ]
}

/// What the Indexer should hold.
struct Model {
    objects: BTreeMap<String, Arc<ConfigMap>>,
    indexes: BTreeSet<&'static str>,
    rv: Option<String>,
}

impl Model {
    /// The error a write of `obj` must fail with, if any.
    fn write_error(&self, obj: &ConfigMap) -> Option<StoreError> {
        let key = match meta_namespace_key(obj) {
            Ok(key) => key,
            Err(e) => return Some(StoreError::Key(e)),
        };
        // Index functions run in name order; only "poison" can fail.
        (self.indexes.contains("poison") && poisoned(obj)).then(|| StoreError::IndexFunc {
            index: "poison".into(),
            key: Some(key),
            source: IndexFuncError::new("poisoned"),
        })
    }

    fn note_rv(&mut self, obj: &ConfigMap) {
        if let Some(rv) = obj.metadata.resource_version.clone() {
            self.rv = Some(rv);
        }
    }

    /// Applies `op` to the model and returns whether the Indexer must report an error.
    fn apply(&mut self, op: &Op) -> Result<(), StoreError> {
        match op {
            Op::Add(obj) | Op::Update(obj) => {
                if let Some(e) = self.write_error(obj) {
                    return Err(e);
                }
                self.objects
                    .insert(meta_namespace_key(obj.as_ref()).unwrap(), obj.clone());
                self.note_rv(obj);
            }
            Op::Delete(obj) => {
                let key = meta_namespace_key(obj.as_ref()).map_err(StoreError::Key)?;
                self.objects.remove(&key);
                self.note_rv(obj);
            }
            Op::DeleteByKey(key) => {
                self.objects.remove(key);
            }
            Op::Replace(list, rv) => {
                if let Some(e) = list.iter().find_map(|o| self.write_error(o)) {
                    return Err(e);
                }
                self.objects = list
                    .iter()
                    .map(|o| (meta_namespace_key(o.as_ref()).unwrap(), o.clone()))
                    .collect();
                self.rv = (!rv.is_empty()).then(|| rv.clone());
            }
            Op::AddIndexers(names) => {
                let conflicts: Vec<String> = names
                    .iter()
                    .filter(|n| self.indexes.contains(*n))
                    .map(|n| n.to_string())
                    .collect();
                if !conflicts.is_empty() {
                    let mut conflicts = conflicts;
                    conflicts.sort();
                    return Err(StoreError::IndexerConflict(conflicts));
                }
                if names.contains(&"poison")
                    && let Some((key, _)) = self.objects.iter().find(|(_, o)| poisoned(o))
                {
                    return Err(StoreError::IndexFunc {
                        index: "poison".into(),
                        key: Some(key.clone()),
                        source: IndexFuncError::new("poisoned"),
                    });
                }
                self.indexes.extend(names.iter().copied());
            }
        }
        Ok(())
    }

    /// Brute force: index name → value → sorted keys.
    fn brute_force(&self) -> BTreeMap<&'static str, BTreeMap<String, Vec<String>>> {
        let mut out = BTreeMap::new();
        for &name in &self.indexes {
            let mut index: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for (key, obj) in &self.objects {
                for value in expected_values(name, obj) {
                    index.entry(value).or_default().push(key.clone());
                }
            }
            out.insert(name, index);
        }
        out
    }
}

fn run(op: &Op, idx: &Indexer<ConfigMap>) -> Result<(), StoreError> {
    match op {
        Op::Add(o) => idx.add(o.clone()),
        Op::Update(o) => idx.update(o.clone()),
        Op::Delete(o) => idx.delete(o).map(drop),
        Op::DeleteByKey(k) => idx.delete_by_key(k).map(drop),
        Op::Replace(l, rv) => idx.replace(l.clone(), rv),
        Op::AddIndexers(names) => idx.add_indexers(
            names
                .iter()
                .map(|n| (n.to_string(), catalog(n)))
                .collect::<Indexers<ConfigMap>>(),
        ),
    }
}

fn check(idx: &Indexer<ConfigMap>, model: &Model) -> Result<(), TestCaseError> {
    let mut keys = idx.list_keys();
    keys.sort();
    prop_assert_eq!(&keys, &model.objects.keys().cloned().collect::<Vec<_>>());
    prop_assert_eq!(idx.len(), model.objects.len());
    for (key, obj) in &model.objects {
        let stored = idx.get_by_key(key);
        prop_assert!(
            stored.is_some_and(|s| Arc::ptr_eq(&s, obj)),
            "object under {}",
            key
        );
    }
    prop_assert_eq!(idx.last_resource_version(), model.rv.clone());
    let mut names: Vec<String> = idx.indexers().into_keys().collect();
    names.sort();
    prop_assert_eq!(
        names,
        model
            .indexes
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    );
    for (name, index) in model.brute_force() {
        prop_assert_eq!(
            idx.list_index_func_values(name),
            index.keys().cloned().collect::<Vec<_>>(),
            "values of {}",
            name
        );
        for (value, keys) in &index {
            prop_assert_eq!(&idx.index_keys(name, value).unwrap(), keys);
            let mut by_index: Vec<String> = idx
                .by_index(name, value)
                .unwrap()
                .iter()
                .map(|o| meta_namespace_key(o.as_ref()).unwrap())
                .collect();
            by_index.sort();
            prop_assert_eq!(&by_index, keys);
        }
        // A value nobody has.
        prop_assert!(idx.index_keys(name, "no-such-value").unwrap().is_empty());
        // `index` with each stored object as the query: the union over its values.
        for obj in model.objects.values() {
            let want: BTreeSet<String> = expected_values(name, obj)
                .iter()
                .flat_map(|v| index.get(v).cloned().unwrap_or_default())
                .collect();
            let got: Vec<String> = idx
                .index(name, obj)
                .unwrap()
                .iter()
                .map(|o| meta_namespace_key(o.as_ref()).unwrap())
                .collect();
            prop_assert_eq!(got.len(), want.len(), "index() returned duplicates");
            prop_assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want);
        }
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
    fn indexer_matches_brute_force_model(
        initial in prop::sample::subsequence(CATALOG.to_vec(), 0..=CATALOG.len()),
        ops in prop::collection::vec(op_strategy(), 1..40),
    ) {
        let idx = Indexer::new(
            meta_namespace_key_func(),
            initial.iter().map(|n| (n.to_string(), catalog(n))).collect(),
        );
        let mut model = Model { objects: BTreeMap::new(), indexes: initial.iter().copied().collect(), rv: None };
        check(&idx, &model)?;
        for op in &ops {
            let want = model.apply(op);
            let got = run(op, &idx);
            match (&want, &got) {
                // Which poisoned object add_indexers reports depends on iteration order.
                (Err(StoreError::IndexFunc { index: a, .. }), Err(StoreError::IndexFunc { index: b, .. }))
                    if matches!(op, Op::AddIndexers(_)) => prop_assert_eq!(a, b),
                _ => prop_assert_eq!(&got, &want, "{:?}", op),
            }
            check(&idx, &model)?;
        }
    }
}
