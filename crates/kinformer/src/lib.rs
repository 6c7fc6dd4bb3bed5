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
//! ## Start here
//!
//! Most users need four names: a [`SharedInformerFactory`] (one shared informer per type,
//! scoped by namespace or selectors, started together), the [`SharedIndexInformer`] it hands
//! out (add handlers or [`EventStream`]s, add indexes, read its cache), a handler
//! ([`ResourceEventHandlerFuncs`], or your own [`ResourceEventHandler`]) and a [`Lister`] or
//! the [`Indexer`] for reads. Everything else is the machinery underneath, public so that it can
//! be used on its own as in client-go: the queues ([`queue`]), the [`Reflector`] and the
//! [`ListerWatcher`] seam ([`reflector`], [`source`]), the store ([`store`]).
//!
//! ```no_run
//! use std::collections::HashMap;
//! use std::sync::Arc;
//!
//! use k8s_openapi::api::core::v1::Pod;
//! use kinformer::{IndexFunc, ResourceEventHandlerFuncs, SharedInformerFactory};
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let factory = SharedInformerFactory::new(kube::Client::try_default().await?);
//! let pods = factory.informer::<Pod>();
//! let by_node: IndexFunc<Pod> = Arc::new(|pod: &Pod| {
//!     Ok(pod.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect())
//! });
//! pods.add_indexers(HashMap::from([("by-node".to_owned(), by_node)]))?;
//! pods.add_event_handler(
//!     ResourceEventHandlerFuncs::new()
//!         .on_add(|pod: &Arc<Pod>, _initial| println!("add {:?}", pod.metadata.name))
//!         .on_update(|_old, new| println!("update {:?}", new.metadata.name)),
//! )?;
//! factory.start();
//! factory.wait_for_cache_sync(&CancellationToken::new()).await;
//! let on_node = pods.indexer().by_index("by-node", "node-1")?;
//! println!("{} pods on node-1", on_node.len());
//! factory.shutdown().await;
//! # Ok(()) }
//! ```
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

/// The README's Rust examples, compiled as doc tests so they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
