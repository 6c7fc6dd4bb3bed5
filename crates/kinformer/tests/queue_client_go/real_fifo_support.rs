//! Helpers shared by the RealFifo test files, on top of `delta_fifo_support` (client-go's
//! `testFifoObject` as a ConfigMap, `literalListerGetter`): queues in either mode and readable
//! descriptions of what they pop.

use std::sync::Arc;

use futures::FutureExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::queue::{Popped, QueueError, RealFifo, RealFifoMode, RealFifoOptions};

use crate::delta_fifo_support::{Literal, describe, describe_obj};

/// client-go's `NewRealFIFO(keyFunc, literalListerGetter(known), nil)`: per-object mode.
pub fn per_object(known: Vec<Arc<ConfigMap>>) -> RealFifo<ConfigMap> {
    RealFifo::new(RealFifoOptions {
        mode: RealFifoMode::PerObject {
            known_objects: Some(Arc::new(Literal(known))),
        },
        ..Default::default()
    })
}

/// A RealFifo with `emitAtomicEvents` (and `emitDeltaTypeBookmark` if `bookmarks`).
pub fn atomic(bookmarks: bool) -> RealFifo<ConfigMap> {
    RealFifo::new(RealFifoOptions {
        mode: RealFifoMode::Atomic {
            emit_bookmarks: bookmarks,
        },
        ..Default::default()
    })
}

/// One line per delta (`"Added foo=10"`, `"Deleted tombstone(bar, bar=6)"`), or one line for
/// an atomic entry (`"ReplacedAll@10[foo=2]"`, `"SyncAll"`, `"Bookmark@123"`).
pub fn describe_popped(p: &Popped<ConfigMap>) -> Vec<String> {
    match p {
        Popped::Deltas(deltas) => deltas
            .iter()
            .map(|d| {
                let key_matches = d.delta.object.key().is_ok_and(|k| k == d.key);
                assert!(key_matches, "entry key {} differs from its object's", d.key);
                format!("{} {}", d.delta.delta_type, describe(&d.delta.object))
            })
            .collect(),
        Popped::ReplacedAll(r) => vec![format!(
            "ReplacedAll@{}[{}]",
            r.resource_version,
            r.objects
                .iter()
                .map(|(_, o)| describe_obj(o))
                .collect::<Vec<_>>()
                .join(",")
        )],
        Popped::SyncAll => vec!["SyncAll".into()],
        Popped::Bookmark { resource_version } => vec![format!("Bookmark@{resource_version}")],
    }
}

/// Pops one entry that must already be queued.
pub fn pop_now(f: &RealFifo<ConfigMap>) -> Vec<String> {
    f.pop(|p, _| describe_popped(&p))
        .now_or_never()
        .expect("an entry is queued")
        .expect("not closed")
}

/// Pops one entry with its `is_in_initial_list`.
pub fn pop2_now(f: &RealFifo<ConfigMap>) -> (Vec<String>, bool) {
    f.pop(|p, initial| (describe_popped(&p), initial))
        .now_or_never()
        .expect("an entry is queued")
        .expect("not closed")
}

/// Pops one batch that must already be queued.
pub fn pop_batch_now(f: &RealFifo<ConfigMap>, max: usize) -> (Vec<String>, bool) {
    f.pop_batch(max, |p, initial| (describe_popped(&p), initial))
        .now_or_never()
        .expect("an entry is queued")
        .expect("not closed")
}

/// Pops everything queued, one entry at a time, flattened (client-go's `collapseDeltas(popN)`).
pub fn drain(f: &RealFifo<ConfigMap>) -> Vec<String> {
    let mut out = Vec::new();
    while !f.is_empty() {
        out.extend(pop_now(f));
    }
    out
}

/// Pops batches until the queue is empty.
pub fn drain_batches(f: &RealFifo<ConfigMap>, max: usize) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    while !f.is_empty() {
        out.push(pop_batch_now(f, max).0);
    }
    out
}

/// Whether a pop on this (closed) queue fails with `Closed` at once.
pub fn pop_is_closed(f: &RealFifo<ConfigMap>) -> bool {
    matches!(
        f.pop(|_, _| ()).now_or_never(),
        Some(Err(QueueError::Closed))
    )
}

pub fn strs(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
