//! What the demo tracks per informer: the cache, and for each handler a view of the objects
//! built only from the events that handler received.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kinformer::{
    HandlerOptions, InformerConfig, InformerError, Object, ResourceEventHandlerFuncs,
    ResourceEventHandlerRegistration, SharedIndexInformer, meta_namespace_key,
    object::resource_version,
};
use parking_lot::Mutex;

/// Object key → resourceVersion.
pub type KeyRvs = BTreeMap<String, String>;

/// One handler's own view of a resource: key → resourceVersion, maintained from its events.
#[derive(Debug, Default)]
pub struct HandlerView {
    /// The handler's name.
    pub name: String,
    map: Mutex<HashMap<String, String>>,
    events: AtomicU64,
}

impl HandlerView {
    fn set<K: Object>(&self, obj: &K) {
        self.events.fetch_add(1, Ordering::Relaxed);
        if let Ok(key) = meta_namespace_key(obj) {
            self.map
                .lock()
                .insert(key, resource_version(obj).to_string());
        }
    }

    fn remove(&self, key: Option<String>) {
        self.events.fetch_add(1, Ordering::Relaxed);
        if let Some(key) = key {
            self.map.lock().remove(&key);
        }
    }

    /// Events received so far.
    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// The view as a sorted map.
    pub fn snapshot(&self) -> KeyRvs {
        self.map
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// A registered handler and its view.
pub struct TrackedHandler {
    /// Its view.
    pub view: Arc<HandlerView>,
    /// Its registration (backlog, handled count).
    pub reg: ResourceEventHandlerRegistration,
}

/// A configuration change that counts the informer's list/watch errors in `errors` (and logs
/// them), for the factory's `for_type`.
pub fn count_watch_errors<K>(
    errors: Arc<AtomicU64>,
) -> impl Fn(InformerConfig<K>) -> InformerConfig<K> + Send + Sync + 'static {
    move |config| {
        let errors = errors.clone();
        config.watch_error_handler(move |e| {
            errors.fetch_add(1, Ordering::Relaxed);
            tracing::info!(error = %e, "watch error");
        })
    }
}

/// An informer under observation, type-erased so the demo can treat all kinds alike.
pub struct Tracked {
    /// The server's resource name (`pods`, `nodes`, `configmaps`).
    pub resource: &'static str,
    /// Cache size.
    pub len: Box<dyn Fn() -> usize + Send + Sync>,
    /// Whether the informer has synced.
    pub synced: Box<dyn Fn() -> bool + Send + Sync>,
    /// The cache as key → resourceVersion.
    pub cache: Box<dyn Fn() -> KeyRvs + Send + Sync>,
    /// Time since the informer's last watch event or bookmark (or list, if later).
    pub quiet: Box<dyn Fn() -> Option<Duration> + Send + Sync>,
    /// Lists the informer started (streaming lists included): one for the first sync, one
    /// more for every relist.
    pub lists: Box<dyn Fn() -> u64 + Send + Sync>,
    /// The handlers.
    pub handlers: Vec<TrackedHandler>,
    /// List/watch errors the informer reported.
    pub watch_errors: Arc<AtomicU64>,
}

impl Tracked {
    /// Tracks `informer` (not started yet), whose watch errors `watch_errors` counts (see
    /// [`count_watch_errors`]), and registers one view handler per `(name, delay)`; a handler
    /// with a delay is blocking and sleeps that long per event (a deliberately slow consumer on
    /// its own thread).
    pub fn new<K: Object>(
        resource: &'static str,
        informer: &SharedIndexInformer<K>,
        watch_errors: Arc<AtomicU64>,
        handlers: &[(&str, Option<Duration>)],
    ) -> Result<Self, InformerError> {
        let mut tracked = Vec::new();
        for (name, delay) in handlers {
            let view = Arc::new(HandlerView {
                name: format!("{resource}/{name}"),
                ..Default::default()
            });
            let delay = *delay;
            let (a, u, d) = (view.clone(), view.clone(), view.clone());
            let funcs = ResourceEventHandlerFuncs::<K>::new()
                .on_add(move |obj, _| {
                    pause(delay);
                    a.set(obj.as_ref());
                })
                .on_update(move |_, new| {
                    pause(delay);
                    u.set(new.as_ref());
                })
                .on_delete(move |obj| {
                    pause(delay);
                    d.remove(obj.key().ok());
                });
            let options = HandlerOptions::default()
                .name(view.name.clone())
                .blocking(delay.is_some());
            let reg = informer.add_event_handler_with(funcs, options)?;
            tracked.push(TrackedHandler { view, reg });
        }
        let (i1, i2, i3, i4, i5) = (
            informer.clone(),
            informer.clone(),
            informer.clone(),
            informer.clone(),
            informer.clone(),
        );
        Ok(Tracked {
            resource,
            len: Box::new(move || i1.indexer().len()),
            synced: Box::new(move || i2.has_synced()),
            cache: Box::new(move || {
                i3.indexer()
                    .list()
                    .iter()
                    .filter_map(|o| {
                        let key = meta_namespace_key(o.as_ref()).ok()?;
                        Some((key, resource_version(o.as_ref()).to_string()))
                    })
                    .collect()
            }),
            quiet: Box::new(move || i4.since_last_watch_activity()),
            lists: Box::new(move || i5.list_watch_counts().0),
            handlers: tracked,
            watch_errors,
        })
    }

    /// Relists so far: the lists after the first.
    pub fn relists(&self) -> u64 {
        (self.lists)().saturating_sub(1)
    }
}

fn pause(delay: Option<Duration>) {
    if let Some(d) = delay {
        // Deliberately blocking: this handler runs on its own thread (`blocking(true)`).
        std::thread::sleep(d);
    }
}
