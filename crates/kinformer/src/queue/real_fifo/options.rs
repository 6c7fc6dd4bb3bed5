//! Construction options of a [`RealFifo`](super::RealFifo).

use std::fmt;
use std::sync::Arc;

use crate::object::KeyFunc;
use crate::store::KeyListerGetter;

/// How a [`RealFifo`](super::RealFifo) reports relists and resyncs. client-go expresses the same
/// choice with `AtomicEvents`, `KnownObjects` and `EmitDeltaTypeBookmark`, and panics on the
/// combinations that make no sense; here they cannot be written.
pub enum RealFifoMode<K> {
    /// client-go's `AtomicEvents` (the `AtomicFIFO` feature, on by default since 1.36): a relist
    /// is one [`Popped::ReplacedAll`](super::Popped::ReplacedAll), a resync one
    /// [`Popped::SyncAll`](super::Popped::SyncAll), and the consumer reconciles them against its
    /// cache. The queue consults no known objects, so `pop` runs its closure without holding the
    /// queue's lock (client-go's `UnlockWhileProcessing`).
    Atomic {
        /// Queue a [`Popped::Bookmark`](super::Popped::Bookmark) for every
        /// [`bookmark`](super::RealFifo::bookmark) (client-go's `EmitDeltaTypeBookmark`), so the consumer's
        /// cache learns resource versions in order with the changes.
        emit_bookmarks: bool,
    },
    /// Every change is its own entry, relists and resyncs included (client-go's RealFIFO with
    /// `AtomicEvents` off): a relist queues a `Deleted` tombstone for every queued or known key
    /// the list lacks, *then* a `Replaced` delta per listed object. `pop` runs its closure under
    /// the queue's lock, so a consumer that updates the known objects there never races a relist.
    PerObject {
        /// The consumer's view of what it already holds (normally the informer's Indexer): a
        /// relist makes tombstones for its keys the list lacks, and a resync re-delivers them.
        /// `None` behaves as an empty cache.
        known_objects: Option<Arc<dyn KeyListerGetter<K>>>,
    },
}

impl<K> Default for RealFifoMode<K> {
    /// Atomic with bookmarks, as client-go 1.36's informers run.
    fn default() -> Self {
        Self::Atomic {
            emit_bookmarks: true,
        }
    }
}

impl<K> Clone for RealFifoMode<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Atomic { emit_bookmarks } => Self::Atomic {
                emit_bookmarks: *emit_bookmarks,
            },
            Self::PerObject { known_objects } => Self::PerObject {
                known_objects: known_objects.clone(),
            },
        }
    }
}

impl<K> fmt::Debug for RealFifoMode<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Atomic { emit_bookmarks } => f
                .debug_struct("Atomic")
                .field("emit_bookmarks", emit_bookmarks)
                .finish(),
            Self::PerObject { known_objects } => f
                .debug_struct("PerObject")
                .field("known_objects", &known_objects.is_some())
                .finish(),
        }
    }
}

/// How a [`RealFifo`](super::RealFifo) is built (client-go's `RealFIFOOptions`). [`Default`]
/// gives what client-go 1.36's informers use: atomic events with bookmarks, no transformer,
/// no bound.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::queue::{RealFifo, RealFifoMode, RealFifoOptions};
/// let fifo: RealFifo<Pod> = RealFifo::new(RealFifoOptions {
///     mode: RealFifoMode::PerObject { known_objects: None },
///     ..Default::default()
/// });
/// assert!(fifo.is_empty());
/// ```
pub struct RealFifoOptions<K> {
    /// Computes an object's key; defaults to [`meta_namespace_key`](crate::meta_namespace_key).
    pub key_func: Option<KeyFunc<K>>,
    /// Atomic or per-object relists and resyncs; see [`RealFifoMode`].
    pub mode: RealFifoMode<K>,
    /// Called exactly once on every incoming object before it is queued; see
    /// [`Transform`](crate::Transform).
    /// Never called on tombstones nor on the known objects a per-object resync re-delivers.
    pub transformer: Option<crate::Transform<K>>,
    /// A soft bound on the objects held (one per delta, one per object of a relist, one per
    /// resync or bookmark entry): writes never block or fail, but
    /// [`wait_for_room`](super::RealFifo::wait_for_room), which a Reflector awaits before it
    /// reads the next watch event, waits while at least this many are held, until pops bring
    /// it down to half. `None` (the default): unbounded.
    pub max_queued: Option<usize>,
}

impl<K> Default for RealFifoOptions<K> {
    fn default() -> Self {
        Self {
            key_func: None,
            mode: RealFifoMode::default(),
            transformer: None,
            max_queued: None,
        }
    }
}

impl<K> Clone for RealFifoOptions<K> {
    fn clone(&self) -> Self {
        Self {
            key_func: self.key_func.clone(),
            mode: self.mode.clone(),
            transformer: self.transformer.clone(),
            max_queued: self.max_queued,
        }
    }
}

impl<K> fmt::Debug for RealFifoOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealFifoOptions")
            .field("key_func", &self.key_func.as_ref().map(|_| "custom"))
            .field("mode", &self.mode)
            .field("transformer", &self.transformer.is_some())
            .field("max_queued", &self.max_queued)
            .finish()
    }
}
