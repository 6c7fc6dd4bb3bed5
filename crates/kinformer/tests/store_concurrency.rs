//! Several writer threads and readers on one Indexer: readers always see consistent snapshots
//! (an object returned for an indexed value has that value), and the final state equals what
//! the writers' own sequential histories say.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::{IndexFunc, Indexer, meta_namespace_key, store::NAMESPACE_INDEX};
use kube::api::ObjectMeta;

const WRITERS: usize = 4;
const READERS: usize = 3;
const STEPS: usize = 2_000;
const NAMES: usize = 40;
const COLORS: [&str; 3] = ["red", "green", "blue"];

fn color(o: &ConfigMap) -> String {
    o.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("color"))
        .cloned()
        .unwrap_or_default()
}

fn cm(ns: &str, name: usize, color: &str, rv: usize) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(format!("cm-{name}")),
            labels: Some(BTreeMap::from([("color".to_owned(), color.to_owned())])),
            resource_version: Some(rv.to_string()),
            ..Default::default()
        },
        ..Default::default()
    })
}

#[test]
fn concurrent_writers_and_readers_end_in_the_expected_state() {
    let idx = Indexer::<ConfigMap>::default_namespaced();
    let by_color: IndexFunc<ConfigMap> = Arc::new(|o: &ConfigMap| Ok(vec![color(o)]));
    idx.add_indexers([("color".to_owned(), by_color)].into())
        .unwrap();

    let done = AtomicBool::new(false);
    let reads = AtomicUsize::new(0);
    let expected: Vec<BTreeMap<String, String>> = std::thread::scope(|s| {
        for _ in 0..READERS {
            s.spawn(|| {
                while !done.load(Ordering::Acquire) {
                    for c in COLORS {
                        for o in idx.by_index("color", c).unwrap() {
                            assert_eq!(color(&o), c, "torn read from by_index");
                        }
                        let keys = idx.index_keys("color", c).unwrap();
                        assert!(keys.windows(2).all(|w| w[0] < w[1]), "unsorted keys");
                    }
                    for w in 0..WRITERS {
                        let ns = format!("w{w}");
                        for o in idx.by_index(NAMESPACE_INDEX, &ns).unwrap() {
                            assert_eq!(o.metadata.namespace.as_deref(), Some(ns.as_str()));
                        }
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let idx = idx.clone();
                s.spawn(move || {
                    let ns = format!("w{w}");
                    // This writer's keys → colors, kept sequentially alongside the Indexer.
                    let mut mine: BTreeMap<String, String> = BTreeMap::new();
                    for step in 0..STEPS {
                        let name = (step * 7 + w) % NAMES;
                        let c = COLORS[(step + w) % COLORS.len()];
                        let obj = cm(&ns, name, c, step + 1);
                        let key = meta_namespace_key(obj.as_ref()).unwrap();
                        match step % 5 {
                            0 | 1 => idx.add(obj).unwrap(),
                            2 => {
                                let old = idx.upsert(obj).unwrap();
                                assert_eq!(old.is_some(), mine.contains_key(&key));
                            }
                            3 => {
                                let old = idx.delete(&obj).unwrap();
                                assert_eq!(old.is_some(), mine.contains_key(&key));
                                mine.remove(&key);
                                continue;
                            }
                            _ => {
                                idx.delete_by_key(&key).unwrap();
                                mine.remove(&key);
                                continue;
                            }
                        }
                        mine.insert(key, c.to_owned());
                    }
                    mine
                })
            })
            .collect();
        let expected = writers.into_iter().map(|h| h.join().unwrap()).collect();
        done.store(true, Ordering::Release);
        expected
    });
    assert!(reads.load(Ordering::Relaxed) > 0, "readers never ran");

    let all: BTreeMap<String, String> = expected.into_iter().flatten().collect();
    let mut keys = idx.list_keys();
    keys.sort();
    assert_eq!(keys, all.keys().cloned().collect::<Vec<_>>());
    for (key, c) in &all {
        assert_eq!(&color(&idx.get_by_key(key).unwrap()), c, "{key}");
    }
    for c in COLORS {
        let want: Vec<String> = all
            .iter()
            .filter(|(_, v)| v.as_str() == c)
            .map(|(k, _)| k.clone())
            .collect();
        assert_eq!(idx.index_keys("color", c).unwrap(), want, "{c}");
    }
    let namespaces: BTreeSet<String> = all
        .keys()
        .map(|k| k.split('/').next().unwrap().to_owned())
        .collect();
    assert_eq!(
        idx.list_index_func_values(NAMESPACE_INDEX),
        namespaces.into_iter().collect::<Vec<_>>()
    );
}
