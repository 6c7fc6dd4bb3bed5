//! A RealFifo and an Indexer driven the way an informer's process loop drives them (client-go's
//! `processDeltas`, `processDeltasInBatch` and `processReplacedAllInfo`), with ports of
//! `controller_test.go`'s `TestProcessDeltasInBatch` and `TestReplaceEvents`, and the issue's
//! three user-visible orderings. The consumer here is a reference for the informer
//! integration: batches go to the cache in one transaction, relists in one swap, and handlers
//! hear of each change after the cache holds it, in arrival order.

use std::sync::Arc;

use futures::FutureExt;
use k8s_openapi::api::core::v1::Pod;
use kinformer::queue::{DEFAULT_BATCH_SIZE, DeltaType, Popped, RealFifo};
use kinformer::store::Transaction;
use kinformer::{
    DeletedFinalStateUnknown, IndexFunc, Indexer, Indexers, ObjectOrTombstone,
    object::meta_namespace_key_func, object::resource_version,
};
use kube::api::ObjectMeta;

/// client-go's `eventRecord`: what a handler saw, and what the store held for that key then.
#[derive(Debug, Clone, PartialEq)]
struct Event {
    action: &'static str,
    key: String,
    event_rv: String,
    store_rv: String,
}

fn pod(name: &str, rv: &str) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn ev(action: &'static str, name: &str, event_rv: &str, store_rv: &str) -> Event {
    Event {
        action,
        key: format!("default/{name}"),
        event_rv: event_rv.into(),
        store_rv: store_rv.into(),
    }
}

struct Consumer {
    store: Indexer<Pod>,
    events: Vec<Event>,
    /// Errors of the last batch, as client-go's `processDeltasInBatch` returns them.
    last_error: Option<String>,
}

impl Consumer {
    fn new(store: Indexer<Pod>) -> Self {
        Self {
            store,
            events: Vec::new(),
            last_error: None,
        }
    }

    /// A handler callback: records the event with the store's current version of the key.
    fn notify(&mut self, action: &'static str, obj: &ObjectOrTombstone<Pod>) {
        let key = obj.key().unwrap();
        let event_rv = obj
            .object()
            .map_or(String::new(), |o| resource_version(o.as_ref()).to_owned());
        let store_rv = self
            .store
            .get_by_key(&key)
            .map_or(String::new(), |o| resource_version(o.as_ref()).to_owned());
        self.events.push(Event {
            action,
            key,
            event_rv,
            store_rv,
        });
    }

    fn apply(&mut self, popped: Popped<Pod>) {
        match popped {
            Popped::Deltas(batch) => {
                let txns = batch
                    .iter()
                    .map(|d| match (d.delta_type(), &d.delta.object) {
                        (DeltaType::Deleted, o) => Transaction::Delete(o.clone()),
                        (_, ObjectOrTombstone::Object(o)) => Transaction::Update(o.clone()),
                        (_, ObjectOrTombstone::Tombstone(_)) => unreachable!("only deletions"),
                    })
                    .collect();
                let outcome = self.store.transaction(txns);
                self.last_error = outcome.error().map(|e| e.to_string());
                for (d, result) in batch.iter().zip(outcome.into_results()) {
                    let Ok(previous) = result else { continue };
                    let action = match (d.delta_type(), previous) {
                        (DeltaType::Deleted, _) => "delete",
                        (_, Some(_)) => "update",
                        (_, None) => "add",
                    };
                    self.notify(action, &d.delta.object);
                }
            }
            Popped::ReplacedAll(r) => {
                let objects: Vec<Arc<Pod>> = r.objects.iter().map(|(_, o)| o.clone()).collect();
                let outcome = self
                    .store
                    .replace_reporting(objects, &r.resource_version)
                    .unwrap();
                let mut removed = outcome.removed;
                removed.sort_by(|a, b| a.0.cmp(&b.0));
                // As client-go's reconcileReplacement: a relist's deletions are tombstones.
                for (key, obj) in removed {
                    let tombstone = DeletedFinalStateUnknown {
                        key,
                        obj: Some(obj),
                    };
                    self.notify("delete", &ObjectOrTombstone::Tombstone(tombstone));
                }
                for ((_, obj), previous) in r.objects.iter().zip(outcome.previous) {
                    let action = if previous.is_some() { "update" } else { "add" };
                    self.notify(action, &ObjectOrTombstone::Object(obj.clone()));
                }
            }
            Popped::SyncAll => {
                for obj in self.store.list() {
                    self.notify("update", &ObjectOrTombstone::Object(obj));
                }
            }
            Popped::Bookmark { resource_version } => self.store.bookmark(&resource_version),
        }
    }

    /// Pops and applies batches until the queue is empty.
    fn drain(&mut self, fifo: &RealFifo<Pod>) {
        while !fifo.is_empty() {
            fifo.pop_batch(DEFAULT_BATCH_SIZE, |p, _| self.apply(p))
                .now_or_never()
                .unwrap()
                .unwrap();
        }
    }
}

fn atomic_fifo() -> RealFifo<Pod> {
    RealFifo::default()
}

fn per_object_fifo(store: &Indexer<Pod>) -> RealFifo<Pod> {
    RealFifo::new(kinformer::queue::RealFifoOptions {
        mode: kinformer::queue::RealFifoMode::PerObject {
            known_objects: Some(Arc::new(store.clone())),
        },
        ..Default::default()
    })
}

/// Deletions from a relist are not ordered in client-go either; sort them by key.
fn sort_deletes(mut events: Vec<Event>) -> Vec<Event> {
    let n = events.iter().take_while(|e| e.action == "delete").count();
    events[..n].sort_by(|a, b| a.key.cmp(&b.key));
    events
}

#[test]
fn test_replace_events() {
    type Case = (&'static str, Vec<Arc<Pod>>, Vec<Arc<Pod>>, Vec<Event>);
    let cases: Vec<Case> = vec![
        (
            "Create with no initial objects",
            vec![],
            vec![pod("pod-1", "1")],
            vec![ev("add", "pod-1", "1", "1")],
        ),
        (
            "Delete all objects",
            vec![pod("pod-1", "1"), pod("pod-3", "2")],
            vec![],
            vec![
                ev("delete", "pod-1", "1", ""),
                ev("delete", "pod-3", "2", ""),
            ],
        ),
        (
            "Create, update, delete",
            vec![pod("pod-1", "1"), pod("pod-2", "2"), pod("pod-3", "3")],
            vec![pod("pod-1", "4"), pod("pod-2", "5"), pod("pod-4", "6")],
            vec![
                ev("delete", "pod-3", "3", ""),
                ev("update", "pod-1", "4", "4"),
                ev("update", "pod-2", "5", "5"),
                ev("add", "pod-4", "6", "6"),
            ],
        ),
    ];
    for atomic in [false, true] {
        let store = Indexer::new(meta_namespace_key_func(), Indexers::new());
        let fifo = if atomic {
            atomic_fifo()
        } else {
            per_object_fifo(&store)
        };
        let mut consumer = Consumer::new(store.clone());
        fifo.replace(vec![], "0".into()).unwrap();
        consumer.drain(&fifo);
        assert!(fifo.has_synced());
        for (name, initial, replaced, expected) in cases.clone() {
            for o in &initial {
                fifo.add(o.clone()).unwrap();
            }
            consumer.drain(&fifo);
            consumer.events.clear();
            fifo.replace(replaced.clone(), "9".into()).unwrap();
            consumer.drain(&fifo);
            assert_eq!(
                sort_deletes(std::mem::take(&mut consumer.events)),
                expected,
                "{name} (atomic: {atomic})"
            );
            let mut held: Vec<(String, String)> = store
                .list()
                .iter()
                .map(|o| {
                    (
                        o.metadata.name.clone().unwrap(),
                        resource_version(o.as_ref()).to_owned(),
                    )
                })
                .collect();
            held.sort();
            let mut want: Vec<(String, String)> = replaced
                .iter()
                .map(|o| {
                    (
                        o.metadata.name.clone().unwrap(),
                        resource_version(o.as_ref()).to_owned(),
                    )
                })
                .collect();
            want.sort();
            assert_eq!(held, want, "{name} (atomic: {atomic}): store");
        }
    }
}

#[test]
fn test_process_deltas_in_batch() {
    type Case = (
        &'static str,
        Vec<&'static str>,
        Vec<&'static str>,
        Option<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (
            "all transaction succeeding should works",
            vec!["testname1"],
            vec![],
            None,
        ),
        (
            "all transaction failing should not trigger listener",
            vec!["testname1"],
            vec!["testname1"],
            Some("failed to execute (1/1) transactions"),
        ),
        (
            "partial transaction failing should only trigger successful events to listener #1",
            vec!["testname1", "testname2"],
            vec!["testname2"],
            Some("failed to execute (1/2) transactions"),
        ),
        (
            "partial transaction failing should only trigger successful events to listener #2",
            vec!["testname1", "testname2", "testname3"],
            vec!["testname2"],
            Some("failed to execute (1/3) transactions"),
        ),
    ];
    for (name, deltas, failing, error) in cases {
        // client-go's mockTxnStore fails the listed objects; here an index function does.
        let failing_names: Vec<String> = failing.iter().map(|s| s.to_string()).collect();
        let fail: IndexFunc<Pod> = Arc::new(move |o: &Pod| {
            if failing_names.contains(o.metadata.name.as_ref().unwrap()) {
                Err("test error".into())
            } else {
                Ok(vec![])
            }
        });
        let store = Indexer::new(
            meta_namespace_key_func(),
            Indexers::from([("fail".to_owned(), fail)]),
        );
        let fifo = atomic_fifo();
        let mut consumer = Consumer::new(store.clone());
        for n in &deltas {
            fifo.add(pod(n, "1")).unwrap();
        }
        consumer.drain(&fifo);
        let received: Vec<String> = consumer
            .events
            .iter()
            .map(|e| e.key.trim_start_matches("default/").to_owned())
            .collect();
        let expected: Vec<&str> = deltas
            .iter()
            .filter(|n| !failing.contains(n))
            .copied()
            .collect();
        assert_eq!(received, expected, "{name}");
        assert_eq!(store.len(), expected.len(), "{name}");
        match error {
            None => assert!(consumer.last_error.is_none(), "{name}"),
            Some(text) => assert!(
                consumer.last_error.as_deref().unwrap().contains(text),
                "{name}: {:?}",
                consumer.last_error
            ),
        }
    }
}

/// The issue's three user-visible differences from a DeltaFifo, in both modes: arrival order
/// across keys, OnDelete for a never-cached key, and a relist's deletions first.
#[test]
fn in_order_delivery_as_the_issue_states() {
    for atomic in [false, true] {
        let store = Indexer::new(meta_namespace_key_func(), Indexers::new());
        let fifo = if atomic {
            atomic_fifo()
        } else {
            per_object_fifo(&store)
        };
        let mut consumer = Consumer::new(store.clone());
        fifo.replace(vec![], "0".into()).unwrap();
        consumer.drain(&fifo);

        fifo.add(pod("a", "1")).unwrap();
        fifo.add(pod("b", "2")).unwrap();
        fifo.update(pod("a", "3")).unwrap();
        fifo.delete(pod("never", "4")).unwrap();
        consumer.drain(&fifo);
        assert_eq!(
            std::mem::take(&mut consumer.events),
            [
                ev("add", "a", "1", "1"),
                ev("add", "b", "2", "2"),
                ev("update", "a", "3", "3"),
                ev("delete", "never", "4", ""),
            ],
            "atomic: {atomic}"
        );

        fifo.replace(vec![pod("a", "5"), pod("c", "6")], "6".into())
            .unwrap();
        consumer.drain(&fifo);
        assert_eq!(
            consumer.events,
            [
                ev("delete", "b", "2", ""),
                ev("update", "a", "5", "5"),
                ev("add", "c", "6", "6"),
            ],
            "atomic: {atomic}"
        );
    }
}
