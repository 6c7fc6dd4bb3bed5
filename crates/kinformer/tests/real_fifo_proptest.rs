//! Property test: random operation sequences on a `RealFifo`, atomic and per-object, against a
//! small reference model written from client-go's rules (`the_real_fifo.go`), not from the
//! implementation. After every step the entries popped (and their batches), the
//! `is_in_initial_list` flags, `len`, the objects held, `has_synced`, the synced watch and the
//! consumer's cache must match the model.
//!
//! The case count comes from `PROPTEST_CASES` (CI runs 1,000).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::FutureExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::queue::{DeltaType, Popped, QueueError, RealFifo, RealFifoMode, RealFifoOptions};
use kinformer::{ObjectOrTombstone, store::KeyListerGetter};
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use proptest::prelude::*;

const NAMES: [&str; 4] = ["a", "b", "c", "d"];

#[derive(Debug, Clone)]
enum Op {
    Add(usize),
    Update(usize),
    Delete(usize),
    Replace(Vec<usize>),
    /// The same relist in two parts, popping once between them when `pop_between`.
    ReplaceInParts(Vec<usize>, usize, bool),
    /// A relist that fails half way: begin, one part, abort.
    ReplaceAborted(Vec<usize>),
    Resync,
    Bookmark,
    Pop,
    PopBatch(usize),
    AddNameless,
}

fn op() -> impl Strategy<Value = Op> {
    let list = || proptest::collection::vec(0..NAMES.len(), 0..5);
    prop_oneof![
        4 => (0..NAMES.len()).prop_map(Op::Add),
        3 => (0..NAMES.len()).prop_map(Op::Update),
        3 => (0..NAMES.len()).prop_map(Op::Delete),
        2 => list().prop_map(Op::Replace),
        2 => (list(), 0..6usize, any::<bool>()).prop_map(|(l, s, p)| Op::ReplaceInParts(l, s, p)),
        1 => list().prop_map(Op::ReplaceAborted),
        2 => Just(Op::Resync),
        1 => Just(Op::Bookmark),
        4 => Just(Op::Pop),
        4 => (1..5usize).prop_map(Op::PopBatch),
        1 => Just(Op::AddNameless),
    ]
}

/// An object as the model sees it: (name, version).
type MObj = (String, u64);

#[derive(Debug, Clone, PartialEq)]
enum MItem {
    Obj(MObj),
    Tomb(String, Option<MObj>),
}

#[derive(Debug, Clone, PartialEq)]
enum MEntry {
    D(DeltaType, String, MItem),
    All(String, Vec<MObj>),
    SyncAll,
    Bookmark(String),
}

impl MEntry {
    fn weight(&self) -> usize {
        match self {
            MEntry::All(_, objs) => objs.len().max(1),
            _ => 1,
        }
    }
}

struct Model {
    entries: Vec<MEntry>,
    /// The consumer's cache.
    known: BTreeMap<String, MObj>,
    atomic: bool,
    bookmarks: bool,
    populated: bool,
    initial: usize,
    synced: bool,
}

impl Model {
    fn check(&mut self) {
        if self.populated && self.initial == 0 {
            self.synced = true;
        }
    }

    fn write(&mut self, t: DeltaType, o: MObj) {
        self.populated = true;
        self.check();
        self.entries.push(MEntry::D(t, o.0.clone(), MItem::Obj(o)));
    }

    fn replace(&mut self, rv: String, list: Vec<MObj>) {
        if self.atomic {
            self.entries.push(MEntry::All(rv, list));
        } else {
            let listed: BTreeSet<&String> = list.iter().map(|o| &o.0).collect();
            let mut seen: Vec<String> = Vec::new();
            let mut last: BTreeMap<String, (DeltaType, MItem)> = BTreeMap::new();
            for e in &self.entries {
                if let MEntry::D(t, k, item) = e {
                    if !last.contains_key(k) {
                        seen.push(k.clone());
                    }
                    last.insert(k.clone(), (*t, item.clone()));
                }
            }
            let mut tombs = Vec::new();
            for k in &seen {
                let (t, item) = &last[k];
                if listed.contains(k) || *t == DeltaType::Deleted {
                    continue;
                }
                let MItem::Obj(o) = item else {
                    unreachable!("only deletions carry tombstones")
                };
                tombs.push(MEntry::D(
                    DeltaType::Deleted,
                    k.clone(),
                    MItem::Tomb(k.clone(), Some(o.clone())),
                ));
            }
            for (k, o) in &self.known {
                if listed.contains(k) || last.contains_key(k) {
                    continue;
                }
                tombs.push(MEntry::D(
                    DeltaType::Deleted,
                    k.clone(),
                    MItem::Tomb(k.clone(), Some(o.clone())),
                ));
            }
            self.entries.extend(tombs);
            for o in list {
                self.entries
                    .push(MEntry::D(DeltaType::Replaced, o.0.clone(), MItem::Obj(o)));
            }
        }
        if !self.populated {
            self.populated = true;
            self.initial = self.entries.len();
            self.check();
        }
    }

    fn resync(&mut self) {
        if self.atomic {
            self.entries.push(MEntry::SyncAll);
            return;
        }
        let queued: BTreeSet<String> = self
            .entries
            .iter()
            .filter_map(|e| match e {
                MEntry::D(_, k, _) => Some(k.clone()),
                _ => None,
            })
            .collect();
        for (k, o) in self.known.clone() {
            if !queued.contains(&k) {
                self.entries
                    .push(MEntry::D(DeltaType::Sync, k, MItem::Obj(o)));
            }
        }
    }

    fn bookmark(&mut self, rv: String) {
        if self.atomic && self.bookmarks {
            self.entries.push(MEntry::Bookmark(rv));
        }
    }

    fn pop_batch(&mut self, max: usize) -> Option<(Vec<MEntry>, bool)> {
        let first = self.entries.first()?;
        let initial = !self.synced;
        let n = if matches!(first, MEntry::D(..)) {
            let mut keys = BTreeSet::new();
            let mut n = 0;
            for e in &self.entries {
                if n == max || (self.initial > 0 && n >= self.initial) {
                    break;
                }
                let MEntry::D(_, k, _) = e else { break };
                if !keys.insert(k.clone()) {
                    break;
                }
                n += 1;
            }
            n
        } else {
            1
        };
        let batch: Vec<MEntry> = self.entries.drain(..n).collect();
        self.initial = self.initial.saturating_sub(n);
        for e in &batch {
            match e {
                MEntry::D(DeltaType::Deleted, k, _) => {
                    self.known.remove(k);
                }
                MEntry::D(_, k, MItem::Obj(o)) => {
                    self.known.insert(k.clone(), o.clone());
                }
                MEntry::All(_, objs) => {
                    self.known = objs.iter().map(|o| (o.0.clone(), o.clone())).collect();
                }
                _ => {}
            }
        }
        self.check();
        Some((batch, initial))
    }
}

/// The consumer's cache, which the per-object queue consults as known objects.
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
    /// What an informer does with what it popped.
    fn apply(&self, popped: &Popped<ConfigMap>) {
        let mut map = self.0.lock();
        match popped {
            Popped::Deltas(deltas) => {
                for d in deltas {
                    match d.delta.delta_type {
                        DeltaType::Deleted => {
                            map.remove(&d.key);
                        }
                        _ => {
                            map.insert(d.key.clone(), d.delta.object.object().unwrap().clone());
                        }
                    }
                }
            }
            Popped::ReplacedAll(r) => {
                *map = r.objects.iter().cloned().collect();
            }
            Popped::SyncAll | Popped::Bookmark { .. } => {}
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
    assert_eq!(
        transform_count(o),
        u32::from(transformed),
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

fn mentries(p: &Popped<ConfigMap>, transformed: bool) -> Vec<MEntry> {
    match p {
        Popped::Deltas(deltas) => {
            assert!(!deltas.is_empty(), "a batch is never empty");
            deltas
                .iter()
                .map(|d| {
                    let item = match &d.delta.object {
                        ObjectOrTombstone::Object(o) => MItem::Obj(mobj(o, transformed)),
                        ObjectOrTombstone::Tombstone(t) => MItem::Tomb(
                            t.key.clone(),
                            t.obj.as_deref().map(|o| mobj(o, transformed)),
                        ),
                    };
                    MEntry::D(d.delta.delta_type, d.key.clone(), item)
                })
                .collect()
        }
        Popped::ReplacedAll(r) => vec![MEntry::All(
            r.resource_version.clone(),
            r.objects
                .iter()
                .map(|(k, o)| {
                    let m = mobj(o, transformed);
                    assert_eq!(&m.0, k, "a relisted object's key");
                    m
                })
                .collect(),
        )],
        Popped::SyncAll => vec![MEntry::SyncAll],
        Popped::Bookmark { resource_version } => vec![MEntry::Bookmark(resource_version.clone())],
    }
}

fn run(ops: Vec<Op>, atomic: bool, bookmarks: bool, transformed: bool) {
    let known = Arc::new(Known::default());
    let fifo = RealFifo::new(RealFifoOptions {
        mode: if atomic {
            RealFifoMode::Atomic {
                emit_bookmarks: bookmarks,
            }
        } else {
            RealFifoMode::PerObject {
                known_objects: Some(known.clone() as Arc<dyn KeyListerGetter<ConfigMap>>),
            }
        },
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
        entries: Vec::new(),
        known: BTreeMap::new(),
        atomic,
        bookmarks,
        populated: false,
        initial: 0,
        synced: false,
    };
    let mut version = 0u64;
    let mut next = |name: &str| {
        version += 1;
        (make(name, version), (name.to_string(), version))
    };
    let pop = |fifo: &RealFifo<ConfigMap>, model: &mut Model, max: usize, step: usize| match model
        .pop_batch(max)
    {
        None => assert!(fifo.is_empty(), "step {step}: model empty, queue not"),
        Some((expected, expected_initial)) => {
            let (got, initial) = fifo
                .pop_batch(max, |p, initial| {
                    known.apply(&p);
                    (mentries(&p, transformed), initial)
                })
                .now_or_never()
                .expect("pop on a non-empty queue completes at once")
                .unwrap();
            assert_eq!(got, expected, "step {step}: popped (max {max})");
            assert_eq!(initial, expected_initial, "step {step}: is_in_initial_list");
        }
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
                model.write(DeltaType::Deleted, m);
            }
            Op::Replace(list) => {
                let (objs, mobjs): (Vec<_>, Vec<_>) = list.iter().map(|i| next(NAMES[*i])).unzip();
                fifo.replace(objs, format!("rv{step}")).unwrap();
                model.replace(format!("rv{step}"), mobjs);
            }
            Op::ReplaceInParts(list, split, pop_between) => {
                let (mut objs, mobjs): (Vec<_>, Vec<_>) =
                    list.iter().map(|i| next(NAMES[*i])).unzip();
                let rest = objs.split_off((*split).min(objs.len()));
                fifo.replace_begin();
                fifo.replace_part(objs).unwrap();
                if *pop_between {
                    pop(&fifo, &mut model, 1, step);
                }
                fifo.replace_part(rest).unwrap();
                fifo.replace_end(format!("rv{step}")).unwrap();
                model.replace(format!("rv{step}"), mobjs);
            }
            Op::ReplaceAborted(list) => {
                let objs: Vec<_> = list.iter().map(|i| next(NAMES[*i]).0).collect();
                fifo.replace_begin();
                fifo.replace_part(objs).unwrap();
                fifo.replace_abort();
                fifo.replace_end(format!("rv{step}")).unwrap();
            }
            Op::Resync => {
                fifo.resync().unwrap();
                model.resync();
            }
            Op::Bookmark => {
                fifo.bookmark(&format!("rv{step}"));
                model.bookmark(format!("rv{step}"));
            }
            Op::Pop => pop(&fifo, &mut model, 1, step),
            Op::PopBatch(max) => pop(&fifo, &mut model, *max, step),
            Op::AddNameless => {
                let r = fifo.add(Arc::new(ConfigMap::default()));
                assert!(matches!(r, Err(QueueError::Key(_))), "step {step}: {r:?}");
            }
        }

        assert_eq!(
            fifo.len(),
            model.entries.len(),
            "step {step} after {op:?}: len"
        );
        assert_eq!(
            fifo.queued_objects(),
            model.entries.iter().map(MEntry::weight).sum::<usize>(),
            "step {step} after {op:?}: objects held"
        );
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
        assert_eq!(
            fifo.is_populated(),
            model.populated,
            "step {step}: populated"
        );
        let known_now: BTreeMap<String, MObj> = known
            .0
            .lock()
            .iter()
            .map(|(k, o)| (k.clone(), mobj(o, transformed)))
            .collect();
        assert_eq!(known_now, model.known, "step {step}: consumer's cache");
    }

    // Drain: everything left pops in the model's order.
    let mut step = usize::MAX / 2;
    while !model.entries.is_empty() {
        pop(&fifo, &mut model, 3, step);
        step += 1;
    }
    assert!(fifo.is_empty());
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
    fn real_fifo_matches_reference_model(
        ops in proptest::collection::vec(op(), 1..60),
        atomic in any::<bool>(),
        bookmarks in any::<bool>(),
        transformed in any::<bool>(),
    ) {
        run(ops, atomic, bookmarks, transformed);
    }
}
