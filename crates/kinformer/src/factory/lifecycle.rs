//! The factory's informers at run time: removing one (controller-runtime's `RemoveInformer`),
//! and reading through the factory with a typed error for a type nobody watches
//! (controller-runtime's `ReaderFailOnMissingInformer` and `ErrResourceNotCached`), or, opted
//! in, starting its informer on the first read.

use std::sync::atomic::{AtomicBool, Ordering};

use super::*;
use crate::store::Lister;

/// Why a read through the factory ([`SharedInformerFactory::lister`] and its kin) has no cache
/// to read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FactoryError {
    /// No informer of the factory watches this type in this scope: none was created (or it was
    /// removed), and the factory was not built with
    /// [`lazy_start`](SharedInformerFactoryBuilder::lazy_start) (controller-runtime's
    /// `ErrResourceNotCached`).
    #[error(
        "no informer watches {informer}: create it with informer() before start(), or build the factory with lazy_start(true)"
    )]
    NotWatched {
        /// The informer's name (kind, `(metadata)`, scope).
        informer: String,
    },
    /// The informer exists but the factory has not started it: [`start`](SharedInformerFactory::start)
    /// was not called since it was created (controller-runtime's `ErrCacheNotStarted`).
    #[error("the informer {informer} has not been started: call start()")]
    NotStarted {
        /// The informer's name.
        informer: String,
    },
    /// The factory is shut down, so a lazily created informer cannot start.
    #[error("the informer factory is shut down; {informer} cannot start")]
    ShutDown {
        /// The informer's name.
        informer: String,
    },
    /// [`synced_lister`](SharedInformerFactory::synced_lister)'s cancellation fired before the
    /// informer synced.
    #[error("cancelled before {informer} synced")]
    Cancelled {
        /// The informer's name.
        informer: String,
    },
}

/// What the factory keeps to stop its informers one by one and to start them on a read.
pub(super) struct Lifecycle {
    lazy_start: bool,
    /// Whether `start` was called.
    started: AtomicBool,
    /// Informers the factory runs, by informer id: their own token (a child of the factory's)
    /// and `done`, cancelled once their run has returned.
    running: Mutex<HashMap<u64, (CancellationToken, CancellationToken)>>,
}

impl Lifecycle {
    pub(super) fn new(lazy_start: bool) -> Self {
        Self {
            lazy_start,
            started: AtomicBool::new(false),
            running: Mutex::default(),
        }
    }

    pub(super) fn mark_started(&self) {
        self.started.store(true, Ordering::Release);
    }

    /// Runs `informer` on `tasks` under a token of its own, a child of `parent`.
    pub(super) fn spawn(
        &self,
        informer: &dyn ErasedInformer,
        tasks: &TaskTracker,
        parent: &CancellationToken,
    ) {
        let (cancel, done) = (parent.child_token(), CancellationToken::new());
        let mut running = self.running.lock();
        running.retain(|_, (_, done)| !done.is_cancelled());
        running.insert(informer.id(), (cancel.clone(), done.clone()));
        drop(running);
        informer.spawn(tasks, cancel, done);
    }
}

/// A removed informer, its run (if the factory started one) returned: stops it if it never
/// ran (its handlers' registrations end), then empties its cache and marks it removed.
pub(super) async fn wind_down<K: crate::Object>(informer: &SharedIndexInformer<K>) {
    if !informer.stop_unstarted().await && !informer.is_stopped() {
        tracing::warn!(informer = %informer.name(), "removed from the factory, but started outside it: left running");
        return;
    }
    informer.retire();
}

impl SharedInformerFactory {
    /// Removes `K`'s informer (in `K`'s configured scope) and waits until it has stopped
    /// (controller-runtime's `RemoveInformer`); false if the factory has none. The factory's
    /// other informers carry on. When this returns:
    ///
    /// - its list/watch is closed and its tasks (reflector, process loop, handlers) have
    ///   finished: it ran under a cancellation token of its own, a child of the factory's;
    /// - its handlers were told: each registration has stopped
    ///   ([`ResourceEventHandlerRegistration::stopped`](crate::ResourceEventHandlerRegistration::stopped)
    ///   resolves; notifications still queued for a handler are dropped, as on any informer
    ///   stop), and each [`EventStream`](crate::EventStream) ends after what it was sent;
    /// - its cache is empty: listers and indexers of it held elsewhere read empty from now on
    ///   (there is no final delete notification per object, as in controller-runtime);
    /// - it has left the metrics scrape
    ///   ([`Metrics::watch_informer`](crate::metrics::Metrics::watch_informer), feature
    ///   `metrics`), and [`SharedIndexInformer::is_removed`] says so;
    /// - reads through the factory ([`lister`](Self::lister)) fail with
    ///   [`FactoryError::NotWatched`] (or, with lazy start, start a fresh informer), and a
    ///   later [`informer::<K>()`](Self::informer) creates a fresh informer, which
    ///   [`start`](Self::start) starts and [`wait_for_cache_sync`](Self::wait_for_cache_sync)
    ///   waits for.
    ///
    /// A [`wait_for_cache_sync`](Self::wait_for_cache_sync) already waiting when an informer
    /// it waits for is removed waits until its cancellation fires (the removed informer never
    /// syncs), as client-go's does for an informer that stops.
    ///
    /// It waits for the informer's handlers' running callbacks, so it must not be awaited from
    /// inside one of them (through a blocking executor): spawn it instead.
    ///
    /// An informer the factory created but the caller ran itself (`informer.run(..)`) cannot be
    /// stopped here: it leaves the factory but keeps running (logged).
    ///
    /// Deliberate difference from controller-runtime, whose `RemoveInformer` only signals the
    /// informer to stop: this waits until it has.
    pub async fn remove_informer<K>(&self) -> bool
    where
        K: TypedResource,
    {
        let mut config = self.config_for::<K>();
        self.remove_key(typed_key(&mut config)).await
    }

    /// [`remove_informer`](Self::remove_informer) for the informer
    /// [`informer_with_scope::<K>(scope)`](Self::informer_with_scope) returns.
    pub async fn remove_informer_with_scope<K>(&self, scope: InformerScope) -> bool
    where
        K: TypedResource,
    {
        let mut config = self.config_with_scope::<K>(scope);
        self.remove_key(typed_key(&mut config)).await
    }

    /// [`remove_informer`](Self::remove_informer) for `K`'s
    /// [`metadata_informer`](Self::metadata_informer).
    pub async fn remove_metadata_informer<K>(&self) -> bool
    where
        K: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
        K::Scope: 'static,
    {
        self.remove_informer::<PartialObjectMeta<K>>().await
    }

    /// [`remove_informer`](Self::remove_informer) for a
    /// [`dynamic_informer`](Self::dynamic_informer).
    pub async fn remove_dynamic_informer(&self, resource: &ApiResource, namespaced: bool) -> bool {
        let mut config = self.config_for::<DynamicObject>();
        self.remove_key(dynamic_key(resource, namespaced, &mut config))
            .await
    }

    /// [`remove_informer`](Self::remove_informer) for a
    /// [`dynamic_metadata_informer`](Self::dynamic_metadata_informer).
    pub async fn remove_dynamic_metadata_informer(
        &self,
        resource: &ApiResource,
        namespaced: bool,
    ) -> bool {
        let mut config = self.config_for::<PartialObjectMeta<DynamicObject>>();
        self.remove_key(dynamic_key(resource, namespaced, &mut config))
            .await
    }

    async fn remove_key(&self, key: (TypeKey, InformerScope)) -> bool {
        let removed = {
            let mut informers = self.inner.informers.lock();
            let Some(pos) = informers.iter().position(|(k, _, _)| *k == key) else {
                return false;
            };
            informers.remove(pos).1
        };
        let running = self.inner.lifecycle.running.lock().remove(&removed.id());
        if let Some((cancel, done)) = running {
            cancel.cancel();
            done.cancelled().await;
        }
        removed.wind_down().await;
        tracing::debug!(informer = %removed.name(), "informer removed from the factory");
        true
    }

    /// A lister over `K`'s cache (in `K`'s configured scope), if the factory runs an informer
    /// for it: a read through the factory that fails loudly where
    /// [`informer::<K>().lister()`](Self::informer) would read an empty cache forever.
    ///
    /// - No informer for `K` (never created, or [removed](Self::remove_informer)):
    ///   [`FactoryError::NotWatched`], unless the factory was built with
    ///   [`lazy_start(true)`](SharedInformerFactoryBuilder::lazy_start), in which case the read
    ///   creates the informer and starts it (if the factory has started; otherwise
    ///   [`FactoryError::NotStarted`], and [`start`](Self::start) starts it).
    /// - An informer created but not started (between `informer::<K>()` and `start()`, or
    ///   created after `start()` and no `start()` since): [`FactoryError::NotStarted`]; with
    ///   lazy start and a started factory the read starts it.
    /// - A started informer: its lister, at once, synced or not (see
    ///   [`synced_lister`](Self::synced_lister) to wait). After [`shutdown`](Self::shutdown)
    ///   it still reads the informer's last state.
    ///
    /// Deliberate differences from controller-runtime: lazy start is opt-in (controller-runtime
    /// fails only with `ReaderFailOnMissingInformer`); the read does not block until the cache
    /// has synced (its cache reader does), [`synced_lister`](Self::synced_lister) does.
    ///
    /// # Errors
    /// [`FactoryError::NotWatched`], [`FactoryError::NotStarted`], or
    /// [`FactoryError::ShutDown`] (lazy start after [`shutdown`](Self::shutdown)).
    pub fn lister<K>(&self) -> Result<Lister<K>, FactoryError>
    where
        K: TypedResource,
    {
        Ok(self.typed_read(self.config_for::<K>())?.lister())
    }

    /// [`lister`](Self::lister) for the informer
    /// [`informer_with_scope::<K>(scope)`](Self::informer_with_scope) returns.
    ///
    /// # Errors
    /// As [`lister`](Self::lister).
    pub fn lister_with_scope<K>(&self, scope: InformerScope) -> Result<Lister<K>, FactoryError>
    where
        K: TypedResource,
    {
        Ok(self.typed_read(self.config_with_scope(scope))?.lister())
    }

    /// [`lister`](Self::lister) over `K`'s [`metadata_informer`](Self::metadata_informer).
    ///
    /// # Errors
    /// As [`lister`](Self::lister).
    pub fn metadata_lister<K>(&self) -> Result<Lister<PartialObjectMeta<K>>, FactoryError>
    where
        K: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
        K::Scope: 'static,
    {
        self.lister::<PartialObjectMeta<K>>()
    }

    /// [`lister`](Self::lister) over a [`dynamic_informer`](Self::dynamic_informer).
    ///
    /// # Errors
    /// As [`lister`](Self::lister).
    pub fn dynamic_lister(
        &self,
        resource: &ApiResource,
        namespaced: bool,
    ) -> Result<Lister<DynamicObject>, FactoryError> {
        Ok(self.dynamic_read(resource, namespaced)?.lister())
    }

    /// [`lister`](Self::lister) over a
    /// [`dynamic_metadata_informer`](Self::dynamic_metadata_informer).
    ///
    /// # Errors
    /// As [`lister`](Self::lister).
    pub fn dynamic_metadata_lister(
        &self,
        resource: &ApiResource,
        namespaced: bool,
    ) -> Result<Lister<PartialObjectMeta<DynamicObject>>, FactoryError> {
        Ok(self.dynamic_read(resource, namespaced)?.lister())
    }

    /// [`lister`](Self::lister), then waits until the informer has synced or `cancel` fires
    /// (controller-runtime's cache reads block this way). With lazy start, the first call
    /// creates, starts and syncs the informer.
    ///
    /// # Errors
    /// As [`lister`](Self::lister), and [`FactoryError::Cancelled`] when `cancel` fires first
    /// (an informer removed meanwhile never syncs).
    pub async fn synced_lister<K>(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Lister<K>, FactoryError>
    where
        K: TypedResource,
    {
        let informer = self.typed_read(self.config_for::<K>())?;
        let synced = informer.synced_signal();
        tokio::select! {
            biased;
            () = synced.wait() => Ok(informer.lister()),
            () = cancel.cancelled() => Err(FactoryError::Cancelled {
                informer: informer.name().to_owned(),
            }),
        }
    }

    fn typed_read<K>(
        &self,
        config: InformerConfig<K>,
    ) -> Result<SharedIndexInformer<K>, FactoryError>
    where
        K: TypedResource,
    {
        let mut keyed = config.clone();
        let key = typed_key(&mut keyed);
        let name = informer_name::<K>(&K::kind(&()), &key.1);
        self.read(key, name, || self.typed(config))
    }

    fn dynamic_read<K>(
        &self,
        resource: &ApiResource,
        namespaced: bool,
    ) -> Result<SharedIndexInformer<K>, FactoryError>
    where
        K: Resource<DynamicType = ApiResource>
            + Serialize
            + DeserializeOwned
            + Clone
            + Debug
            + Send
            + Sync
            + 'static,
        K::Scope: 'static,
    {
        let mut config = self.config_for::<K>();
        let key = dynamic_key(resource, namespaced, &mut config);
        let name = informer_name::<K>(&resource.kind, &key.1);
        self.read(key, name, || self.dynamic(resource, namespaced))
    }

    /// The started informer under `key`, or why there is none (see [`lister`](Self::lister));
    /// with lazy start, `create` makes it and the read starts it.
    fn read<K: crate::Object>(
        &self,
        key: (TypeKey, InformerScope),
        informer: String,
        create: impl FnOnce() -> SharedIndexInformer<K>,
    ) -> Result<SharedIndexInformer<K>, FactoryError> {
        let lazy = self.inner.lifecycle.lazy_start;
        {
            let informers = self.inner.informers.lock();
            match informers.iter().find(|(k, _, _)| *k == key) {
                Some((_, existing, started)) => {
                    if let Some(i) = existing.as_any().downcast_ref::<SharedIndexInformer<K>>()
                        && (*started || i.has_started())
                    {
                        return Ok(i.clone());
                    }
                    if !lazy {
                        return Err(FactoryError::NotStarted { informer });
                    }
                }
                None if !lazy => return Err(FactoryError::NotWatched { informer }),
                None => {}
            }
        }
        if self.inner.cancel.is_cancelled() {
            return Err(FactoryError::ShutDown { informer });
        }
        let created = create();
        if !self.inner.lifecycle.started.load(Ordering::Acquire) {
            return Err(FactoryError::NotStarted { informer });
        }
        let mut informers = self.inner.informers.lock();
        if let Some((_, i, started)) = informers.iter_mut().find(|(k, _, _)| *k == key) {
            if !*started && !i.has_started() {
                self.inner
                    .lifecycle
                    .spawn(i.as_ref(), &self.inner.tasks, &self.inner.cancel);
            }
            *started = true;
        }
        Ok(created)
    }
}
