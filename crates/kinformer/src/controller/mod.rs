//! A controller runner: informers → handlers that enqueue keys → a work queue (by default
//! controller-runtime's [`PriorityQueue`](crate::workqueue::PriorityQueue)) → N workers calling
//! your async `reconcile(key)`.
//!
//! The semantics are controller-runtime's (and client-go's sample-controller's):
//!
//! * workers start only after every informer's cache has synced **and** each of the
//!   controller's handlers has processed its initial list;
//! * a key is never reconciled by two workers at once, and changes during a reconcile
//!   reconcile it again afterwards (the [`workqueue`](crate::workqueue) guarantees);
//! * `Ok(Action::await_change())` forgets the key's backoff; `Ok(Action::requeue_after(d))`
//!   forgets it and adds the key again after `d`; an `Err` adds it again rate-limited
//!   (per-key exponential backoff, 5 ms → 1000 s; the FIFO queue adds an overall bucket); a
//!   panic is caught and counted as an error;
//! * priorities (controller-runtime's default since v0.23): adds from an informer's initial
//!   list and resyncs are enqueued at [`LOW_PRIORITY`](crate::workqueue::LOW_PRIORITY), other
//!   events at 0, so after a restart real changes overtake the relist backlog; a requeue keeps
//!   the priority the key was handed out with unless [`Action::with_priority`] sets one.
//!   [`Controller::priority_queue`]`(false)` switches to client-go's FIFO rate-limiting queue;
//! * **read your own writes** (KEP-5647, kube-controller-manager's consistency store): a
//!   reconcile records the objects the server returned for its writes with
//!   [`Writes::record`] (from [`Controller::writes`]; the primary's type and every
//!   [`owns`](Controller::owns)/[`watches`](Controller::watches) type), and the next reconcile
//!   of that key first waits until the informer's cache holds each one (its object at the
//!   written resource version or later, or the whole cache past it; versions compared per
//!   KEP-5504, [`compare_resource_versions`](crate::object::compare_resource_versions)). If a
//!   write does not show within [`Controller::read_your_writes_timeout`] (5 s), the reconcile
//!   is skipped and the key added again rate-limited, as KCM's `EnsureReady` error does (not
//!   counted as a reconcile nor an error: [`ControllerStats::cache_wait_timeouts`]; the
//!   queue's retry count does include it). A version that cannot be compared and an informer
//!   that stopped are not waited for, as KCM skips them. A reconcile can also wait on the spot
//!   ([`Writes::wait`], or [`SharedIndexInformer::wait_for_resource_version`](crate::SharedIndexInformer::wait_for_resource_version)).
//!   On by default (it acts only on recorded writes); [`Controller::read_your_writes`]`(false)`
//!   turns it off. *Deliberate differences from KCM: the next reconcile waits (up to the
//!   timeout, as controller-runtime's read-your-writes client) instead of failing at once into
//!   a 5 ms, 10 ms, ... backoff; records are per reconcile key (KCM: per owner and UID) and
//!   dropped once seen; one key's object at the written version suffices (KCM compares the
//!   whole store's version). Deletes ([`Writes::record_delete`]) are awaited by UID, as
//!   controller-runtime does.*
//! * on cancellation no new reconcile starts, running ones get [`Controller::shutdown_timeout`]
//!   to finish (then their futures are dropped), then the queue shuts down and the handlers
//!   are removed;
//! * with [`Controller::leader_election`], every replica syncs its caches and fills its queue,
//!   and only the lease holder runs workers (warm standby).
//!
//! Informers are started by their owner (usually `factory.start()`), as in client-go.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use std::convert::Infallible;
//! use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
//! use kinformer::SharedInformerFactory;
//! use kinformer::controller::{Action, Controller};
//! use tokio_util::sync::CancellationToken;
//!
//! let factory = SharedInformerFactory::new(client);
//! let deployments = factory.informer::<Deployment>();
//! let controller = Controller::new("cm-sync", deployments.clone())
//!     .owns(factory.informer::<ConfigMap>())
//!     .workers(2);
//! factory.start();
//! let cache = deployments.indexer();
//! controller
//!     .run(CancellationToken::new(), move |key: String| {
//!         let found = cache.get_by_key(&key).is_some();
//!         async move {
//!             println!("{key}: exists={found}");
//!             Ok::<_, Infallible>(Action::await_change())
//!         }
//!     })
//!     .await?;
//! # Ok(()) }
//! ```

mod action;
mod handlers;
mod leader;
mod queue;
mod runner;
mod stats;
mod worker;
mod writes;

pub use action::Action;
pub use handlers::MapFn;
pub use leader::AfterLostLeadership;
pub use queue::ControllerQueue;
pub use runner::{Controller, ControllerError, DEFAULT_SHUTDOWN_TIMEOUT};
pub use stats::{ControllerStats, ReconcileResult};
pub use writes::{DEFAULT_READ_YOUR_WRITES_TIMEOUT, RecordError, Writes};
