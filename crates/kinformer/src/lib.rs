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
//! The crate root holds what a controller names; everything else is reached through its module.
//!
//! - [`SharedInformerFactory`]: one shared informer per type, started together. Or build one
//!   informer yourself: [`SharedIndexInformer::new`] over a `kube::Client`, or
//!   [`SharedIndexInformer::builder`] over any [`ListerWatcher`](reflector::ListerWatcher).
//! - [`InformerConfig`]: every option of an informer in one place (which objects, how they
//!   travel, what the cache keeps, how changes are delivered), each documenting its default;
//!   the factory takes defaults for every type and per-type changes. [`Transform`] changes
//!   objects before they are cached.
//! - [`SharedIndexInformer`]: add handlers ([`add_event_handler`](SharedIndexInformer::add_event_handler),
//!   with [`HandlerOptions`] through
//!   [`add_event_handler_with`](SharedIndexInformer::add_event_handler_with)) or
//!   [`EventStream`]s ([`stream`](SharedIndexInformer::stream)), add indexes, read its cache
//!   ([`indexer`](SharedIndexInformer::indexer), [`lister`](SharedIndexInformer::lister)),
//!   wait for it with [`wait_for_cache_sync`].
//! - Handlers: [`ResourceEventHandlerFuncs`] (closures), or your own [`ResourceEventHandler`];
//!   a deletion arrives as an [`ObjectOrTombstone`] ([`DeletedFinalStateUnknown`] when the
//!   final state was missed).
//! - Reads: a [`Lister`] / [`NamespaceLister`], or the [`Indexer`] with your [`Indexers`]
//!   ([`IndexFunc`], [`namespace_indexers`]).
//! - Keys: [`meta_namespace_key`], [`deletion_handling_meta_namespace_key`] (for a handler's
//!   deletions) and [`split_meta_namespace_key`] (in a reconcile).
//!
//! Everything else is the machinery underneath, public so that it can be used on its own as in
//! client-go: the queues ([`queue`]), the [`Reflector`](reflector::Reflector) and the
//! [`ListerWatcher`](reflector::ListerWatcher) seam ([`reflector`], [`source`]), the store
//! ([`store`]), the informer's options ([`informer`], [`factory`]), sync signals ([`wait`]).
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
//! calling an async reconcile; with [`leaderelection`], client-go's leader election on
//! Leases, several replicas of it with warm standby). With the `metrics` feature, `metrics` exports client-go's
//! workqueue, controller-runtime's reconcile and informer metrics through `prometheus-client`.
//! With the `kube-runtime` feature, `kube_runtime::Bridge` feeds kube-runtime's `Controller`
//! from a shared informer, so a kube-runtime program moves over one piece at a time.
//!
//! # The application decides
//!
//! The crate enables no k8s-openapi version feature (pick one in your application, 1.33 to
//! 1.37, as with kube-rs) and no TLS stack of kube's; it reads no environment variable; its one
//! process-wide act, handing freed memory back to glibc after a list and while watch events
//! flow, is an option ([`InformerConfig::release_memory`]). Any `kube::Client` does, `Client::try_default()`
//! included: kube's retry layer never retries an informer's requests (see
//! [`KubeListerWatcher`]).

mod config;
pub mod controller;
pub mod factory;
pub mod informer;
#[cfg(feature = "kube-runtime")]
pub mod kube_runtime;
pub mod leaderelection;
pub mod memory;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod object;
pub mod queue;
pub mod reflector;
pub mod shard;
pub mod snapshot;
pub mod source;
pub mod store;
mod transform;
pub mod wait;
pub mod workqueue;

// The "start here" set: what a controller names. Everything else is reached through its module.
pub use config::InformerConfig;
pub use factory::SharedInformerFactory;
pub use informer::{
    Event, EventStream, HandlerOptions, InformerError, ResourceEventHandler,
    ResourceEventHandlerFuncs, ResourceEventHandlerRegistration, SharedIndexInformer,
};
pub use object::{
    DeletedFinalStateUnknown, KeyError, Object, ObjectOrTombstone,
    deletion_handling_meta_namespace_key, meta_namespace_key, split_meta_namespace_key,
};
pub use source::{
    KubeListerWatcher, NAMESPACE_SET_CHANGED, NamespaceError, NamespaceSet,
    NamespaceSetListerWatcher,
};
pub use store::{
    IndexFunc, IndexFuncError, Indexer, Indexers, Lister, NamespaceLister, StoreError,
    namespace_indexers,
};
pub use transform::Transform;
pub use wait::wait_for_cache_sync;

/// The README's Rust examples, compiled as doc tests so they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
