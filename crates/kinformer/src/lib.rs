//! # kinformer
//!
//! Kubernetes client-go's informer machinery (`tools/cache`) rebuilt in Rust: keys and
//! tombstones, a Store/Indexer with multi-valued indexes, FIFO, DeltaFIFO and client-go 1.36's
//! in-order RealFIFO with client-go's exact semantics, a Reflector, shared informers with many handlers, and an informer factory.
//!
//! ```text
//!  API server ──list/watch──▶ ListerWatcher ──▶ Reflector ──Replace/Add/Update/Delete/Resync──▶ RealFifo (default) | DeltaFifo
//!                                                                                                  │ pop_batch (≤ 1,000 keys, in arrival order)
//!                                                                                                  ▼
//!  handlers ◀── Listener (one task + queue per handler or stream) ◀── Processor.distribute ◀── process loop ──▶ Indexer (one transaction per batch)
//! ```
//!
//! Every arrow goes one way. The store is updated before any handler hears of the change.
//!
//! The other half of a controller: [`workqueue`] (client-go's `util/workqueue`: rate-limited,
//! delaying, deduplicating queues) and [`controller`] (handlers that enqueue keys, N workers
//! calling an async reconcile). With the `metrics` feature, `metrics` exports client-go's
//! workqueue, controller-runtime's reconcile and informer metrics through `prometheus-client`.

pub mod controller;
pub mod factory;
pub mod informer;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod object;
pub mod queue;
pub mod reflector;
pub mod source;
pub mod store;
pub mod wait;
pub mod workqueue;

pub use factory::{InformerScope, SharedInformerFactory, SharedInformerFactoryBuilder};
pub use informer::{
    Event, EventStream, HandlerOptions, InformerError, QueueMode, ResourceEventHandler,
    ResourceEventHandlerFuncs, ResourceEventHandlerRegistration, SharedIndexInformer,
};
pub use object::{
    DeletedFinalStateUnknown, ExplicitKey, KeyError, KeyFunc, Object, ObjectOrTombstone,
    deletion_handling_meta_namespace_key, meta_namespace_key, meta_namespace_key_func,
    namespace_name_key, resource_version, split_meta_namespace_key,
};
pub use queue::{
    Delta, DeltaFifo, DeltaFifoOptions, DeltaType, Deltas, Fifo, QueueError, RealFifo,
    RealFifoMode, RealFifoOptions, TransformFunc,
};
pub use reflector::{
    ListOptions, ListPage, ListWatch, ListWatchError, ListerWatcher, Reflector, ReflectorBuilder,
    ReflectorError, WatchEvent,
};
pub use source::KubeListerWatcher;
pub use store::{
    IndexFunc, IndexFuncError, Indexer, Indexers, KeyListerGetter, LabelSelector,
    LabelSelectorError, Lister, NAMESPACE_INDEX, NamespaceLister, Operator, ReflectorStore,
    Requirement, StoreError, namespace_index_func, namespace_indexers,
};
pub use wait::{SyncSignal, wait_for_cache_sync, wait_for_named_cache_sync};
