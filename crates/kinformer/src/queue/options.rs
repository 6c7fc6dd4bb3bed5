//! Construction options of a [`DeltaFifo`](super::DeltaFifo).

use std::fmt;
use std::sync::Arc;

use crate::object::KeyFunc;
use crate::store::KeyListerGetter;

/// How a [`DeltaFifo`](super::DeltaFifo) is built (client-go's `DeltaFIFOOptions`). All fields
/// are optional; [`Default`] gives client-go's defaults.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::queue::{DeltaFifo, DeltaFifoOptions};
/// let fifo: DeltaFifo<Pod> = DeltaFifo::new(DeltaFifoOptions {
///     emit_delta_type_replaced: true,
///     ..Default::default()
/// });
/// assert!(fifo.is_empty());
/// ```
pub struct DeltaFifoOptions<K> {
    /// Computes an object's key; defaults to [`meta_namespace_key`](crate::meta_namespace_key).
    pub key_func: Option<KeyFunc<K>>,
    /// The consumer's view of the objects it already knows (normally the informer's Indexer).
    /// It lets `replace` produce deletions for known objects missing from a relist, `delete`
    /// accept deletions of known objects that are not queued, and `resync` re-deliver known
    /// objects. Without it, those deletions are missed and `resync` does nothing.
    pub known_objects: Option<Arc<dyn KeyListerGetter<K>>>,
    /// Whether `replace` emits [`DeltaType::Replaced`](super::DeltaType::Replaced) (true) or,
    /// for compatibility with consumers that predate it, [`DeltaType::Sync`](super::DeltaType::Sync)
    /// (false, the default as in client-go).
    pub emit_delta_type_replaced: bool,
    /// Called on every incoming object before it is queued (client-go's `Transformer`): exactly
    /// once for every object handed to `add`, `update`, `delete` (unless the deletion is
    /// dropped) and `replace`, while holding the queue's lock, so it must be fast; never for
    /// `Sync` deltas made by `resync` (those objects come from the cache and were transformed
    /// already) nor for tombstones. See [`Transform`](crate::Transform).
    pub transformer: Option<crate::Transform<K>>,
    /// A soft bound on the deltas held: writes never block or fail, but
    /// [`wait_for_room`](super::DeltaFifo::wait_for_room) (which a Reflector awaits before it
    /// reads the next watch event) waits while at least this many are queued, until the
    /// consumer has popped the queue down to half of it. The backlog of a burst then stays on
    /// the wire (TCP flow control) instead of in memory. `None` (the default, as in client-go):
    /// unbounded. A `SharedIndexInformer`, which owns its queue's consumer, sets one.
    pub max_queued_deltas: Option<usize>,
}

impl<K> Default for DeltaFifoOptions<K> {
    fn default() -> Self {
        Self {
            key_func: None,
            known_objects: None,
            emit_delta_type_replaced: false,
            transformer: None,
            max_queued_deltas: None,
        }
    }
}

impl<K> Clone for DeltaFifoOptions<K> {
    fn clone(&self) -> Self {
        Self {
            key_func: self.key_func.clone(),
            known_objects: self.known_objects.clone(),
            emit_delta_type_replaced: self.emit_delta_type_replaced,
            transformer: self.transformer.clone(),
            max_queued_deltas: self.max_queued_deltas,
        }
    }
}

impl<K> fmt::Debug for DeltaFifoOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaFifoOptions")
            .field("key_func", &self.key_func.as_ref().map(|_| "custom"))
            .field("known_objects", &self.known_objects.is_some())
            .field("emit_delta_type_replaced", &self.emit_delta_type_replaced)
            .field("transformer", &self.transformer.is_some())
            .field("max_queued_deltas", &self.max_queued_deltas)
            .finish()
    }
}
