//! A bridge to kube-runtime: one kinformer shared informer feeds any number of
//! `kube::runtime::Controller`s (and kinformer handlers) at once. Feature `kube-runtime`.
//!
//! kube-runtime's [`Controller`](kube::runtime::Controller) takes its objects from a watcher it
//! owns, one per controller, unless it is given a stream and a
//! [`Store`](kube::runtime::reflector::Store) (`Controller::for_shared_stream`,
//! `owns_shared_stream`, `watches_shared_stream`; kube's `unstable-runtime` feature). A
//! [`Bridge`] over a [`SharedIndexInformer`] is both: it keeps a kube `Store` in step with the
//! informer (from the informer's own notifications, on one task), and hands out as many streams
//! of objects as the program has controllers. So a program moves from kube-runtime piece by
//! piece: its controllers stay kube-runtime controllers and its reconcilers stay unchanged,
//! while one list and one watch per type serve all of them, and kinformer handlers, listers and
//! indexes on the same informer.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use futures::StreamExt;
//! # use k8s_openapi::api::apps::v1::Deployment;
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! # use kube::runtime::controller::{Action, Controller};
//! # async fn reconcile(_: Arc<Deployment>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::await_change()) }
//! # fn error_policy(_: Arc<Deployment>, _: &kube::Error, _: Arc<()>) -> Action { Action::await_change() }
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use kinformer::SharedInformerFactory;
//! use kinformer::kube_runtime::Bridge;
//! let factory = SharedInformerFactory::new(client);
//! let deployments = Bridge::new(&factory.informer::<Deployment>())?;
//! let configmaps = Bridge::new(&factory.informer::<ConfigMap>())?;
//! factory.start();
//! // was: Controller::new(Api::all(client), watcher::Config::default()).owns(cms, ...)
//! Controller::for_shared_stream(deployments.applied_objects(), deployments.store())
//!     .owns_shared_stream(configmaps.touched_objects())
//!     .run(reconcile, error_policy, Arc::new(()))
//!     .for_each(|_| async {})
//!     .await;
//! # Ok(()) }
//! ```
//!
//! # What it costs
//!
//! kube's `Store` keeps its own copy of every object (its API takes objects by value), so a
//! bridged informer holds each object twice: once in the informer's cache, which its handlers,
//! listers and indexes read, and once in the `Store` the controllers read. Every change is
//! copied once more on its way to the `Store`. The streams carry the informer's own `Arc`s.
//!
//! # Order and readiness
//!
//! The `Store` is updated before any stream hears of a change, so a controller never
//! reconciles an object its `Store` does not hold yet. It is ready (kube's
//! `Store::wait_until_ready`, which a `Controller` waits for before its first reconcile) once
//! the informer has synced. A stream made after the informer started first yields every object
//! the `Store` holds (or is receiving in the initial list), then every change, as a late
//! kinformer handler does. Each stream is bounded ([`STREAM_BUFFER`] objects): a controller
//! that does not keep up slows the bridge, and with it the informer (see
//! [`SharedIndexInformer`]'s bounded backlogs), instead of growing memory.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube::runtime::reflector::{Store, store::Writer};
use kube::runtime::watcher;
use tokio::sync::mpsc;

use crate::informer::{Event, HandlerOptions, InformerError, SharedIndexInformer};
use crate::{Object, ObjectOrTombstone};

/// Objects a bridge stream holds for a controller that has not taken them yet.
pub const STREAM_BUFFER: usize = 256;

/// Feeds kube-runtime controllers from a [`SharedIndexInformer`]: a kube
/// [`Store`] kept in step with the informer, and streams of its objects (see the
/// [module docs](self)). Cheap to clone; every clone serves the same `Store`.
pub struct Bridge<K: Object>
where
    K::DynamicType: Eq + Hash + Clone,
{
    store: Store<K>,
    subscribe: mpsc::UnboundedSender<Subscriber<K>>,
}

impl<K: Object> Clone for Bridge<K>
where
    K::DynamicType: Eq + Hash + Clone,
{
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            subscribe: self.subscribe.clone(),
        }
    }
}

impl<K: Object> Debug for Bridge<K>
where
    K::DynamicType: Eq + Hash + Clone,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("objects", &self.store.len())
            .finish_non_exhaustive()
    }
}

/// A stream's sender, and whether it wants deletions too.
struct Subscriber<K> {
    tx: mpsc::Sender<Arc<K>>,
    deletions: bool,
}

impl<K: Object> Bridge<K>
where
    K::DynamicType: Eq + Hash + Clone + Default,
{
    /// A bridge over `informer`, for a type with a static kind. Registers an event stream on
    /// the informer (named `kube-runtime bridge`) and spawns the task that applies it to the
    /// `Store`; must be called on a tokio runtime. Works before or after the informer starts.
    ///
    /// # Errors
    /// [`InformerError::Stopped`] when the informer has stopped.
    pub fn new(informer: &SharedIndexInformer<K>) -> Result<Self, InformerError> {
        Self::new_with(informer, K::DynamicType::default())
    }
}

impl<K: Object> Bridge<K>
where
    K::DynamicType: Eq + Hash + Clone,
{
    /// [`new`](Self::new) for a type with a runtime type (`DynamicObject` and its
    /// `ApiResource`).
    ///
    /// # Errors
    /// [`InformerError::Stopped`] when the informer has stopped.
    pub fn new_with(
        informer: &SharedIndexInformer<K>,
        dyntype: K::DynamicType,
    ) -> Result<Self, InformerError> {
        let events = informer.stream_with(
            HandlerOptions::default().name(format!("{}/kube-runtime bridge", informer.name())),
        )?;
        let writer = Writer::new(dyntype);
        let store = writer.as_reader();
        let (subscribe, subscriptions) = mpsc::unbounded_channel();
        tokio::spawn(run(events, writer, subscriptions));
        Ok(Self { store, subscribe })
    }

    /// The kube `Store` the bridge keeps: a `Controller`'s `reader`.
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// Every object added or changed, as kube's `applied_objects()` gives them: the trigger of
    /// a `Controller`'s own type (`Controller::for_shared_stream`). Ends when the informer
    /// stops.
    pub fn applied_objects(&self) -> impl Stream<Item = Arc<K>> + Send + 'static {
        self.subscribe(false)
    }

    /// Every object added, changed or deleted (a deletion yields the object's last known
    /// state), as kube's `touched_objects()` gives them: the trigger for objects a controller
    /// owns or watches (`owns_shared_stream`, `watches_shared_stream`), whose deletion must
    /// reconcile their owner. Ends when the informer stops.
    pub fn touched_objects(&self) -> impl Stream<Item = Arc<K>> + Send + 'static {
        self.subscribe(true)
    }

    fn subscribe(&self, deletions: bool) -> impl Stream<Item = Arc<K>> + Send + 'static {
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        // if the bridge task has ended (the informer stopped), the stream ends at once
        let _ = self.subscribe.send(Subscriber { tx, deletions });
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|o| (o, rx)) })
    }
}

/// The bridge's task: applies the informer's notifications to the kube `Store`, then hands
/// each object to the streams; a new stream first gets what the `Store` holds.
async fn run<K: Object>(
    mut events: crate::EventStream<K>,
    mut writer: Writer<K>,
    mut subscriptions: mpsc::UnboundedReceiver<Subscriber<K>>,
) where
    K::DynamicType: Eq + Hash + Clone,
{
    let mut subscribers: Vec<Subscriber<K>> = Vec::new();
    // the initial list, until the informer has synced (the Store takes it in one swap)
    let mut initial: Option<Vec<Arc<K>>> = Some(Vec::new());
    writer.apply_watcher_event(&watcher::Event::Init);
    loop {
        tokio::select! {
            biased;
            Some(sub) = subscriptions.recv() => {
                let held = writer.as_reader().state().into_iter().chain(initial.iter().flatten().cloned());
                if send_all(&sub, held).await {
                    subscribers.push(sub);
                }
            }
            event = events.next() => {
                let Some(event) = event else { break };
                let (obj, deleted) = match event {
                    Event::Add { obj, is_in_initial_list: true } if initial.is_some() => {
                        writer.apply_watcher_event(&watcher::Event::InitApply(K::clone(&obj)));
                        if let Some(initial) = &mut initial {
                            initial.push(obj.clone());
                        }
                        (obj, false)
                    }
                    Event::Add { obj, .. } | Event::Update { new: obj, .. } => {
                        writer.apply_watcher_event(&watcher::Event::Apply(K::clone(&obj)));
                        (obj, false)
                    }
                    Event::Delete(gone) => {
                        let last = match gone {
                            ObjectOrTombstone::Object(obj) => Some(obj),
                            ObjectOrTombstone::Tombstone(t) => t.obj,
                        };
                        match last {
                            Some(obj) => {
                                writer.apply_watcher_event(&watcher::Event::Delete(K::clone(&obj)));
                                (obj, true)
                            }
                            None => {
                                tracing::warn!("a deletion without its object reached the kube-runtime bridge; the Store keeps it until the informer relists");
                                continue;
                            }
                        }
                    }
                    Event::Synced => {
                        if initial.take().is_some() {
                            writer.apply_watcher_event(&watcher::Event::InitDone);
                        }
                        continue;
                    }
                };
                let mut kept = Vec::with_capacity(subscribers.len());
                for sub in subscribers.drain(..) {
                    if (!deleted || sub.deletions) && sub.tx.send(obj.clone()).await.is_err() {
                        continue; // the stream was dropped
                    }
                    kept.push(sub);
                }
                subscribers = kept;
            }
        }
    }
}

/// Sends `objects` to a new stream; false if it was dropped meanwhile.
async fn send_all<K>(sub: &Subscriber<K>, objects: impl Iterator<Item = Arc<K>>) -> bool {
    for obj in objects {
        if sub.tx.send(obj).await.is_err() {
            return false;
        }
    }
    true
}
