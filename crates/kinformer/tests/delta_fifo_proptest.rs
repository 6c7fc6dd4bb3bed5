//! Property test: random operation sequences on a `DeltaFifo` against a small reference model
//! written from the documented rules (not from the implementation). After every step the
//! queue's keys (in order), every key's deltas (types and objects), `has_synced`, the synced
//! watch and the consumer's known objects must match the model.
//!
//! The case count comes from `PROPTEST_CASES` (CI runs 1,000).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::FutureExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::queue::{DeltaFifo, DeltaFifoOptions, DeltaType, Deltas, QueueError};
use kinformer::{ObjectOrTombstone, store::KeyListerGetter};
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use proptest::prelude::*;

const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];

#[derive(Debug, Clone)]
enum Op {
    Add(usize),
    Update(usize),
    Delete(usize),
    Replace(Vec<usize>),
    /// The same replace taken in parts (`replace_begin`, two parts split at the index, end):
    /// must queue exactly what `Replace` queues.
    ReplaceInParts(Vec<usize>, usize),
    Resync,
    Pop,
    AddNameless,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..NAMES.len()).prop_map(Op::Add),
        3 => (0..NAMES.len()).prop_map(Op::Update),
        3 => (0..NAMES.len()).prop_map(Op::Delete),
        2 => proptest::collection::vec(0..NAMES.len(), 0..6).prop_map(Op::Replace),
        2 => (proptest::collection::vec(0..NAMES.len(), 0..6), 0..7usize)
            .prop_map(|(list, split)| Op::ReplaceInParts(list, split)),
        2 => Just(Op::Resync),
        5 => Just(Op::Pop),
        1 => Just(Op::AddNameless),
    ]
}

/// An object as the model sees it: (name, version).
type MObj = (String, u64);

/// What a delta carries, as the model sees it.
#[derive(Debug, Clone, PartialEq)]
enum MItem {
    Obj(MObj),
    Tomb(String, Option<MObj>),
}

type MDeltas = Vec<(DeltaType, MItem)>;

/// The reference model.
struct Model {
    queue: Vec<(String, MDeltas)>,
    known: BTreeMap<String, MObj>,
    with_known: bool,
    emit_replaced: bool,
    populated: bool,
    initial: usize,
    synced: bool,
}

impl Model {
    fn position(&self, key: &str) -> Option<usize> {
        self.queue.iter().position(|(k, _)| k == key)
    }

    fn append(&mut self, key: &str, t: DeltaType, item: MItem) {
        let Some(i) = self.position(key) else {
            self.queue.push((key.to_string(), vec![(t, item)]));
            return;
        };
        let deltas = &mut self.queue[i].1;
        let last = deltas.last_mut().expect("never empty");
        if t == DeltaType::Deleted && last.0 == DeltaType::Deleted {
            if matches!(last.1, MItem::Tomb(..)) {
                *last = (t, item);
            }
        } else {
            deltas.push((t, item));
        }
    }

    fn check(&mut self) {
        if self.populated && self.initial == 0 {
            self.synced = true;
        }
    }

    fn write(&mut self, t: DeltaType, o: MObj) {
        self.populated = true;
        self.check();
        self.append(&o.0.clone(), t, MItem::Obj(o));
    }

    fn delete(&mut self, o: MObj) {
        self.populated = true;
        self.check();
        let queued = self.position(&o.0).is_some();
        let known = self.with_known && self.known.contains_key(&o.0);
        if queued || known {
            self.append(&o.0.clone(), DeltaType::Deleted, MItem::Obj(o));
        }
    }

    fn replace(&mut self, list: Vec<MObj>) {
        let t = if self.emit_replaced {
            DeltaType::Replaced
        } else {
            DeltaType::Sync
        };
        let mut listed = BTreeSet::new();
        for o in list {
            listed.insert(o.0.clone());
            self.append(&o.0.clone(), t, MItem::Obj(o));
        }
        let mut deletions = 0;
        let queued: Vec<String> = self.queue.iter().map(|(k, _)| k.clone()).collect();
        for k in queued {
            if listed.contains(&k) {
                continue;
            }
            let i = self.position(&k).unwrap();
            let newest = match &self.queue[i].1.last().unwrap().1 {
                MItem::Obj(o) => Some(o.clone()),
                MItem::Tomb(_, o) => o.clone(),
            };
            self.append(&k, DeltaType::Deleted, MItem::Tomb(k.clone(), newest));
            deletions += 1;
        }
        if self.with_known {
            for (k, o) in self.known.clone() {
                if listed.contains(&k) || self.position(&k).is_some() {
                    continue;
                }
                self.append(&k, DeltaType::Deleted, MItem::Tomb(k.clone(), Some(o)));
                deletions += 1;
            }
        }
        if !self.populated {
            self.populated = true;
            self.initial = listed.len() + deletions;
            self.check();
        }
    }

    fn resync(&mut self) {
        if !self.with_known {
            return;
        }
        for (k, o) in self.known.clone() {
            if self.position(&k).is_none() {
                self.append(&k, DeltaType::Sync, MItem::Obj(o));
            }
        }
    }

    fn pop(&mut self) -> Option<(MDeltas, bool)> {
        if self.queue.is_empty() {
            return None;
        }
        let (key, deltas) = self.queue.remove(0);
        let initial = !self.synced;
        self.initial = self.initial.saturating_sub(1);
        for (t, item) in &deltas {
            match (t, item) {
                (DeltaType::Deleted, _) => {
                    self.known.remove(&key);
                }
                (_, MItem::Obj(o)) => {
                    self.known.insert(key.clone(), o.clone());
                }
                (_, MItem::Tomb(..)) => unreachable!("only deletions carry tombstones"),
            }
        }
        self.check();
        Some((deltas, initial))
    }
}

/// The consumer's cache: what the queue consults as known objects.
#[derive(Default)]
struct Known(Mutex<BTreeMap<String, Arc<ConfigMap>>>);

impl KeyListerGetter<ConfigMap> for Known {
    fn list_keys(&self) -> Vec<String> {
        self.0.lock().keys().cloned().collect()
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<ConfigMap>> {
        self.0.lock().get(key).cloned()
    }
}

impl Known {
    /// What an informer does with a popped key's deltas.
    fn apply(&self, deltas: &Deltas<ConfigMap>) {
        let mut map = self.0.lock();
        for d in deltas {
            let key = d.object.key().expect("queued objects have keys");
            match d.delta_type {
                DeltaType::Deleted => {
                    map.remove(&key);
                }
                _ => {
                    map.insert(key, d.object.object().expect("an object").clone());
                }
            }
        }
    }
}

fn make(name: &str, version: u64) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            resource_version: Some(version.to_string()),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn transform_count(o: &ConfigMap) -> u32 {
    o.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("xf"))
        .map_or(0, |v| v.parse().unwrap())
}

fn mobj(o: &ConfigMap, transformed: bool) -> MObj {
    let expected = u32::from(transformed);
    assert_eq!(
        transform_count(o),
        expected,
        "transformer ran a wrong number of times"
    );
    (
        o.metadata.name.clone().unwrap(),
        o.metadata
            .resource_version
            .as_ref()
            .unwrap()
            .parse()
            .unwrap(),
    )
}

fn mdeltas(d: &Deltas<ConfigMap>, transformed: bool) -> MDeltas {
    assert!(!d.is_empty(), "Deltas handed out are never empty");
    d.iter()
        .map(|d| {
            let item = match &d.object {
                ObjectOrTombstone::Object(o) => MItem::Obj(mobj(o, transformed)),
                ObjectOrTombstone::Tombstone(t) => MItem::Tomb(
                    t.key.clone(),
                    t.obj.as_deref().map(|o| mobj(o, transformed)),
                ),
            };
            (d.delta_type, item)
        })
        .collect()
}

fn run(ops: Vec<Op>, with_known: bool, emit_replaced: bool, transformed: bool) {
    let known = Arc::new(Known::default());
    let fifo = DeltaFifo::new(DeltaFifoOptions {
        known_objects: with_known.then(|| known.clone() as Arc<dyn KeyListerGetter<ConfigMap>>),
        emit_delta_type_replaced: emit_replaced,
        transformer: transformed.then(|| {
            kinformer::Transform::new(|o: &mut ConfigMap| {
                let n = transform_count(o) + 1;
                o.metadata
                    .annotations
                    .get_or_insert_default()
                    .insert("xf".into(), n.to_string());
            })
        }),
        ..Default::default()
    });
    let synced_rx = fifo.synced_watch();
    let mut model = Model {
        queue: Vec::new(),
        known: BTreeMap::new(),
        with_known,
        emit_replaced,
        populated: false,
        initial: 0,
        synced: false,
    };
    let mut version = 0u64;
    let mut next = |name: &str| {
        version += 1;
        (make(name, version), (name.to_string(), version))
    };

    for (step, op) in ops.into_iter().enumerate() {
        match &op {
            Op::Add(i) => {
                let (o, m) = next(NAMES[*i]);
                fifo.add(o).unwrap();
                model.write(DeltaType::Added, m);
            }
            Op::Update(i) => {
                let (o, m) = next(NAMES[*i]);
                fifo.update(o).unwrap();
                model.write(DeltaType::Updated, m);
            }
            Op::Delete(i) => {
                let (o, m) = next(NAMES[*i]);
                fifo.delete(o).unwrap();
                model.delete(m);
            }
            Op::Replace(list) => {
                let (objs, mobjs): (Vec<_>, Vec<_>) = list.iter().map(|i| next(NAMES[*i])).unzip();
                fifo.replace(objs, format!("rv{step}")).unwrap();
                model.replace(mobjs);
            }
            Op::ReplaceInParts(list, split) => {
                let (objs, mobjs): (Vec<_>, Vec<_>) = list.iter().map(|i| next(NAMES[*i])).unzip();
                let mut objs = objs;
                let rest = objs.split_off((*split).min(objs.len()));
                fifo.replace_begin();
                fifo.replace_part(objs).unwrap();
                fifo.replace_part(rest).unwrap();
                fifo.replace_end(format!("rv{step}")).unwrap();
                model.replace(mobjs);
            }
            Op::Resync => {
                fifo.resync().unwrap();
                model.resync();
            }
            Op::Pop => match model.pop() {
                None => assert!(fifo.is_empty(), "step {step}: model empty, queue not"),
                Some((expected, expected_initial)) => {
                    let (got, initial) = fifo
                        .pop(|d, initial| {
                            known.apply(&d);
                            (d, initial)
                        })
                        .now_or_never()
                        .expect("pop on a non-empty queue completes at once")
                        .unwrap();
                    assert_eq!(mdeltas(&got, transformed), expected, "step {step}: popped");
                    assert_eq!(initial, expected_initial, "step {step}: is_in_initial_list");
                }
            },
            Op::AddNameless => {
                let r = fifo.add(Arc::new(ConfigMap::default()));
                assert!(matches!(r, Err(QueueError::Key(_))), "step {step}: {r:?}");
            }
        }

        let keys: Vec<String> = model.queue.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(fifo.list_keys(), keys, "step {step} after {op:?}: keys");
        assert_eq!(fifo.len(), keys.len());
        assert_eq!(
            fifo.queued_deltas(),
            model.queue.iter().map(|(_, d)| d.len()).sum::<usize>(),
            "step {step} after {op:?}: delta count"
        );
        for (k, expected) in &model.queue {
            let got = fifo.get_by_key(k).expect("queued key has deltas");
            assert_eq!(
                &mdeltas(&got, transformed),
                expected,
                "step {step} after {op:?}: {k}"
            );
        }
        assert_eq!(
            fifo.has_synced(),
            model.synced,
            "step {step} after {op:?}: has_synced"
        );
        assert_eq!(
            *synced_rx.borrow(),
            model.synced,
            "step {step}: synced watch"
        );
        let known_now: BTreeMap<String, MObj> = known
            .0
            .lock()
            .iter()
            .map(|(k, o)| (k.clone(), mobj(o, transformed)))
            .collect();
        assert_eq!(known_now, model.known, "step {step}: consumer's cache");
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn delta_fifo_matches_reference_model(
        ops in proptest::collection::vec(op(), 1..60),
        with_known in any::<bool>(),
        emit_replaced in any::<bool>(),
        transformed in any::<bool>(),
    ) {
        run(ops, with_known, emit_replaced, transformed);
    }
}
