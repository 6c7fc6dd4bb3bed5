//! The informer's queue between its Reflector and its cache: client-go 1.36's `RealFifo`
//! (the default) or the `DeltaFifo` of client-go ≤ 1.35.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::watch;

use crate::queue::{DeltaFifo, DeltaFifoOptions, QueueError, RealFifo, RealFifoOptions};
use crate::store::{Indexer, ReflectorStore};
use crate::{Object, Transform};

/// Which queue an informer runs on, and so which order its handlers see.
///
/// * [`QueueMode::RealFifo`] (the default; client-go 1.36's in-order informers, with
///   `AtomicFIFO` and batch processing on): notifications come in the order the server sent the
///   changes, across objects; a deletion the informer never cached still reaches `on_delete`; a
///   relist is one atomic step whose deletions (as tombstones) come before its updates and
///   adds. The queue is popped in batches of up to 1,000 distinct keys, each applied to the
///   cache in one transaction before its notifications go out.
/// * [`QueueMode::DeltaFifo`] (client-go ≤ 1.35): changes are grouped per object, and objects
///   come in the order their first queued change arrived; a deletion of an object never cached
///   is dropped; a relist's deletions come after its updates and adds. A list is applied to
///   the queue part by part while it downloads.
///
/// The default is `RealFifo`; an informer's [`InformerConfig::queue_mode`](crate::InformerConfig::queue_mode)
/// chooses, and nothing else does (client-go ≤ 1.35 let a process-wide feature gate,
/// `InOrderInformers`, choose; here the application decides per informer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum QueueMode {
    /// client-go 1.36's `RealFifo`, atomic and batched.
    #[default]
    RealFifo,
    /// client-go ≤ 1.35's `DeltaFifo`.
    DeltaFifo,
}

impl QueueMode {
    /// Parses `real-fifo` / `delta-fifo` (case and `-`/`_` insensitive, the separator optional),
    /// for command lines and test settings.
    pub fn parse(value: &str) -> Option<Self> {
        let v: String = value
            .trim()
            .chars()
            .filter(|c| *c != '-' && *c != '_')
            .collect::<String>()
            .to_ascii_lowercase();
        match v.as_str() {
            "realfifo" => Some(Self::RealFifo),
            "deltafifo" => Some(Self::DeltaFifo),
            _ => None,
        }
    }
}

/// The queue an informer runs on.
pub(crate) enum InformerQueue<K: Object> {
    Real(RealFifo<K>),
    Delta(DeltaFifo<K>),
}

impl<K: Object> InformerQueue<K> {
    pub(crate) fn new(
        mode: QueueMode,
        cache: &Indexer<K>,
        transformer: Option<Transform<K>>,
        bound: usize,
    ) -> Self {
        match mode {
            QueueMode::RealFifo => Self::Real(RealFifo::new(RealFifoOptions {
                transformer,
                max_queued: Some(bound),
                ..Default::default()
            })),
            QueueMode::DeltaFifo => Self::Delta(DeltaFifo::new(DeltaFifoOptions {
                known_objects: Some(Arc::new(cache.clone())),
                emit_delta_type_replaced: true,
                transformer,
                max_queued_deltas: Some(bound),
                ..Default::default()
            })),
        }
    }

    /// Entries (or deltas) queued.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Real(q) => q.queued_objects(),
            Self::Delta(q) => q.queued_deltas(),
        }
    }

    pub(crate) fn has_synced(&self) -> bool {
        match self {
            Self::Real(q) => q.has_synced(),
            Self::Delta(q) => q.has_synced(),
        }
    }

    pub(crate) fn synced_watch(&self) -> watch::Receiver<bool> {
        match self {
            Self::Real(q) => q.synced_watch(),
            Self::Delta(q) => q.synced_watch(),
        }
    }

    /// Counts the queue as populated (synced, nothing to pop): a resumed watch is established.
    pub(crate) fn mark_populated(&self) {
        match self {
            Self::Real(q) => q.mark_populated(),
            Self::Delta(q) => q.mark_populated(),
        }
    }

    /// Whether the next relist's deletions carry the last known object (DeltaFifo; a
    /// RealFifo relist is diffed by the informer itself).
    pub(crate) fn deletes_as_objects(&self, on: bool) {
        if let Self::Delta(q) = self {
            q.deletes_as_objects(on);
        }
    }

    pub(crate) fn close(&self) {
        match self {
            Self::Real(q) => q.close(),
            Self::Delta(q) => q.close(),
        }
    }
}

impl<K: Object> ReflectorStore<K> for InformerQueue<K> {
    type Error = QueueError;
    fn add(&self, obj: Arc<K>) -> Result<(), QueueError> {
        match self {
            Self::Real(q) => ReflectorStore::add(q, obj),
            Self::Delta(q) => ReflectorStore::add(q, obj),
        }
    }
    fn update(&self, obj: Arc<K>) -> Result<(), QueueError> {
        match self {
            Self::Real(q) => ReflectorStore::update(q, obj),
            Self::Delta(q) => ReflectorStore::update(q, obj),
        }
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), QueueError> {
        match self {
            Self::Real(q) => ReflectorStore::delete(q, obj),
            Self::Delta(q) => ReflectorStore::delete(q, obj),
        }
    }
    fn resync(&self) -> Result<(), QueueError> {
        match self {
            Self::Real(q) => ReflectorStore::resync(q),
            Self::Delta(q) => ReflectorStore::resync(q),
        }
    }
    fn replace_begin(&self) {
        match self {
            Self::Real(q) => ReflectorStore::replace_begin(q),
            Self::Delta(q) => ReflectorStore::replace_begin(q),
        }
    }
    fn replace_part(&self, items: Vec<Arc<K>>) -> Result<(), QueueError> {
        match self {
            Self::Real(q) => ReflectorStore::replace_part(q, items),
            Self::Delta(q) => ReflectorStore::replace_part(q, items),
        }
    }
    fn replace_end(&self, resource_version: String) -> Result<(), QueueError> {
        match self {
            Self::Real(q) => ReflectorStore::replace_end(q, resource_version),
            Self::Delta(q) => ReflectorStore::replace_end(q, resource_version),
        }
    }
    fn replace_abort(&self) {
        match self {
            Self::Real(q) => ReflectorStore::replace_abort(q),
            Self::Delta(q) => ReflectorStore::replace_abort(q),
        }
    }
    fn wait_for_room(&self) -> BoxFuture<'_, ()> {
        match self {
            Self::Real(q) => ReflectorStore::wait_for_room(q),
            Self::Delta(q) => ReflectorStore::wait_for_room(q),
        }
    }
    fn update_resource_version(&self, resource_version: &str) {
        match self {
            Self::Real(q) => ReflectorStore::update_resource_version(q, resource_version),
            Self::Delta(q) => ReflectorStore::update_resource_version(q, resource_version),
        }
    }
    fn bookmark(&self, resource_version: &str) {
        match self {
            Self::Real(q) => ReflectorStore::bookmark(q, resource_version),
            Self::Delta(q) => ReflectorStore::bookmark(q, resource_version),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::QueueMode;

    #[test]
    fn queue_mode_parses_its_spellings() {
        for s in ["real-fifo", "RealFifo", "real_fifo", " realfifo "] {
            assert_eq!(QueueMode::parse(s), Some(QueueMode::RealFifo), "{s}");
        }
        for s in ["delta-fifo", "DeltaFifo", "DELTA_FIFO"] {
            assert_eq!(QueueMode::parse(s), Some(QueueMode::DeltaFifo), "{s}");
        }
        for s in ["", "fifo", "delta", "real-fifo-2"] {
            assert_eq!(QueueMode::parse(s), None, "{s}");
        }
    }
}
