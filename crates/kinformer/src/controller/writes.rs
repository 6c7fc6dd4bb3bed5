//! Read your own writes: what a reconcile wrote, and waiting for the caches to show it before
//! the same key is reconciled again (KEP-5647's consistency store in kube-controller-manager).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::{Mutex, RwLock};
use tokio::time::Instant;

use crate::informer::SharedIndexInformer;
use crate::object::{
    KeyError, Object, ResourceVersionError, compare_resource_versions,
    is_comparable_resource_version, resource_version,
};
use crate::store::CacheWaitError;

/// How long the next reconcile of a key waits for the caches to show that key's recorded
/// writes, unless set with [`Controller::read_your_writes_timeout`](super::Controller::read_your_writes_timeout).
pub const DEFAULT_READ_YOUR_WRITES_TIMEOUT: Duration = Duration::from_secs(5);

/// Why [`Writes::record`] recorded nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The controller knows no informer of this type (its primary, `owns` and `watches`
    /// informers): use [`Writes::record_in`] with the informer.
    #[error("the controller has no informer of type {0}; use record_in")]
    UnknownType(&'static str),
    /// The controller knows several informers of this type (e.g. `DynamicObject`): use
    /// [`Writes::record_in`] to say which.
    #[error("the controller has {count} informers of type {type_name}; use record_in")]
    Ambiguous {
        /// The Rust type.
        type_name: &'static str,
        /// How many informers of it the controller knows.
        count: usize,
    },
    /// The written object has no key (no name).
    #[error("the written object has no key: {0}")]
    Key(#[from] KeyError),
    /// The written object's resource version is missing or not comparable (KEP-5504): there
    /// is nothing to wait for.
    #[error("nothing to wait for: {0}")]
    NotComparable(#[from] ResourceVersionError),
}

/// A cache the controller can wait on, whatever its object type.
trait WatchedCache: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn object_type(&self) -> TypeId;
    fn informer_id(&self) -> u64;
    fn name(&self) -> &str;
    fn wait<'a>(
        &'a self,
        key: &'a str,
        wanted: &'a Wanted,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<(), CacheWaitError>>;
}

impl<T: Object> WatchedCache for SharedIndexInformer<T> {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn object_type(&self) -> TypeId {
        TypeId::of::<T>()
    }
    fn informer_id(&self) -> u64 {
        self.id()
    }
    fn name(&self) -> &str {
        SharedIndexInformer::name(self)
    }
    fn wait<'a>(
        &'a self,
        key: &'a str,
        wanted: &'a Wanted,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<(), CacheWaitError>> {
        match wanted {
            Wanted::Version(rv) => Box::pin(self.wait_for_key_resource_version(key, rv, timeout)),
            Wanted::Deleted(uid) => {
                Box::pin(self.indexer_wait_deleted(key, uid.as_deref(), timeout))
            }
        }
    }
}

impl<T: Object> SharedIndexInformer<T> {
    async fn indexer_wait_deleted(
        &self,
        key: &str,
        uid: Option<&str>,
        timeout: Duration,
    ) -> Result<(), CacheWaitError> {
        self.indexer().wait_for_key_deleted(key, uid, timeout).await
    }
}

/// What a recorded write waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Wanted {
    /// The object at this resource version or later.
    Version(String),
    /// The object with this UID gone.
    Deleted(Option<String>),
}

/// One write still to be seen: `object_key` as `wanted`, in `cache`.
#[derive(Clone)]
struct Pending {
    cache: Arc<dyn WatchedCache>,
    object_key: String,
    wanted: Wanted,
}

struct Inner {
    enabled: AtomicBool,
    timeout: Mutex<Duration>,
    /// The controller's informers (primary first), for [`Writes::record`].
    caches: RwLock<Vec<Arc<dyn WatchedCache>>>,
    /// By reconcile key: the writes its next reconcile waits for.
    pending: Mutex<HashMap<String, Vec<Pending>>>,
}

/// What waiting for a key's writes came to.
#[derive(Debug)]
pub(crate) enum Settled {
    /// Nothing was recorded for the key (or everything was already seen).
    Nothing,
    /// Recorded writes were waited for and are in the caches now (or cannot be waited for:
    /// not comparable, informer stopped; skipped as KCM does).
    Caught,
    /// A recorded write did not show up in time (the records are kept).
    TimedOut(CacheWaitError),
}

/// The writes of a controller's reconciles, so the next reconcile of a key first waits for
/// the caches to show what the last one wrote (read your own writes; see the
/// [module docs](super)). Cheap to clone; get it with
/// [`Controller::writes`](super::Controller::writes) and move it into the reconcile.
///
/// Record the object the server *returned* for a create, update or patch (it carries the
/// write's resource version), under the key being reconciled:
///
/// ```no_run
/// # async fn demo(client: kube::Client, writes: kinformer::controller::Writes, key: String,
/// #               cm: k8s_openapi::api::core::v1::ConfigMap) -> Result<(), kube::Error> {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::{Api, PostParams};
/// let created = Api::<ConfigMap>::namespaced(client, "default")
///     .create(&PostParams::default(), &cm)
///     .await?;
/// if let Err(e) = writes.record(&key, &created) {
///     tracing::debug!(error = %e, "write not recorded"); // e.g. no ConfigMap informer
/// }
/// # Ok(()) }
/// ```
///
/// A delete's response carries the object's last version, not the deletion's: record a
/// delete with [`record_delete`](Self::record_delete) (the next reconcile waits until the
/// object is gone from the cache, by UID, as controller-runtime does).
#[derive(Clone)]
pub struct Writes {
    inner: Arc<Inner>,
}

impl fmt::Debug for Writes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writes")
            .field("enabled", &self.enabled())
            .field("timeout", &self.timeout())
            .field("keys", &self.inner.pending.lock().len())
            .finish()
    }
}

impl Writes {
    pub(crate) fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                enabled: AtomicBool::new(true),
                timeout: Mutex::new(DEFAULT_READ_YOUR_WRITES_TIMEOUT),
                caches: RwLock::default(),
                pending: Mutex::default(),
            }),
        }
    }

    /// Makes `informer`'s type known to [`record`](Self::record).
    pub(crate) fn know<T: Object>(&self, informer: &SharedIndexInformer<T>) {
        let mut caches = self.inner.caches.write();
        if !caches.iter().any(|c| c.informer_id() == informer.id()) {
            caches.push(Arc::new(informer.clone()));
        }
    }

    pub(crate) fn set_enabled(&self, enabled: bool) {
        self.inner.enabled.store(enabled, Ordering::Relaxed);
        if !enabled {
            self.inner.pending.lock().clear();
        }
    }

    pub(crate) fn set_timeout(&self, timeout: Duration) {
        *self.inner.timeout.lock() = timeout;
    }

    /// Whether writes are recorded and waited for.
    pub fn enabled(&self) -> bool {
        self.inner.enabled.load(Ordering::Relaxed)
    }

    /// How long the next reconcile of a key waits for its writes.
    pub fn timeout(&self) -> Duration {
        *self.inner.timeout.lock()
    }

    /// Records that the reconcile of `reconcile_key` wrote `written` (the object the server
    /// returned), in the controller's informer of type `T`: the next reconcile of
    /// `reconcile_key` starts once that informer's cache holds `written` or something newer.
    /// Writes to the same object keep the newest version. Does nothing (and succeeds) when
    /// read-your-writes is off.
    ///
    /// # Errors
    /// [`RecordError`]: no informer of type `T`, or several; the object has no key; its
    /// resource version is missing or not comparable. Nothing is recorded then.
    pub fn record<T: Object>(&self, reconcile_key: &str, written: &T) -> Result<(), RecordError> {
        if !self.enabled() {
            return Ok(());
        }
        let informer = self.informer_of::<T>()?;
        self.record_in(&informer, reconcile_key, written)
    }

    /// Records that the reconcile of `reconcile_key` deleted `deleted` (the object as it was,
    /// e.g. from the cache): the next reconcile of `reconcile_key` starts once the
    /// controller's informer of type `T` no longer holds it (the key gone, or holding an
    /// object with another UID). Controller-runtime's read-your-writes client waits for
    /// deletes the same way (by UID). Does nothing when read-your-writes is off.
    ///
    /// # Errors
    /// As [`record`](Self::record), less the resource version.
    pub fn record_delete<T: Object>(
        &self,
        reconcile_key: &str,
        deleted: &T,
    ) -> Result<(), RecordError> {
        if !self.enabled() {
            return Ok(());
        }
        let informer = self.informer_of::<T>()?;
        self.record_delete_in(&informer, reconcile_key, deleted)
    }

    /// [`record_delete`](Self::record_delete) in a given informer (as
    /// [`record_in`](Self::record_in)).
    ///
    /// # Errors
    /// [`RecordError::Key`] when the object has no key.
    pub fn record_delete_in<T: Object>(
        &self,
        informer: &SharedIndexInformer<T>,
        reconcile_key: &str,
        deleted: &T,
    ) -> Result<(), RecordError> {
        if !self.enabled() {
            return Ok(());
        }
        let object_key = informer.indexer().key_of(deleted)?;
        self.push(
            reconcile_key,
            Pending {
                cache: Arc::new(informer.clone()),
                object_key,
                wanted: Wanted::Deleted(deleted.meta().uid.clone()),
            },
        );
        Ok(())
    }

    /// The controller's one informer of type `T`.
    fn informer_of<T: Object>(&self) -> Result<SharedIndexInformer<T>, RecordError> {
        let cache = {
            let caches = self.inner.caches.read();
            let mut of_type = caches
                .iter()
                .filter(|c| c.object_type() == TypeId::of::<T>());
            let first = of_type.next().cloned();
            let more = of_type.count();
            match first {
                None => return Err(RecordError::UnknownType(std::any::type_name::<T>())),
                Some(_) if more > 0 => {
                    return Err(RecordError::Ambiguous {
                        type_name: std::any::type_name::<T>(),
                        count: more + 1,
                    });
                }
                Some(cache) => cache,
            }
        };
        cache
            .as_any()
            .downcast_ref::<SharedIndexInformer<T>>()
            .cloned()
            .ok_or(RecordError::UnknownType(std::any::type_name::<T>()))
    }

    fn push(&self, reconcile_key: &str, write: Pending) {
        let mut pending = self.inner.pending.lock();
        merge(pending.entry(reconcile_key.to_owned()).or_default(), write);
    }

    /// [`record`](Self::record) in a given informer: one of several of a type, or one the
    /// controller does not watch (its cache is still what the reconcile reads).
    ///
    /// # Errors
    /// As [`record`](Self::record), less the informer look-up.
    pub fn record_in<T: Object>(
        &self,
        informer: &SharedIndexInformer<T>,
        reconcile_key: &str,
        written: &T,
    ) -> Result<(), RecordError> {
        if !self.enabled() {
            return Ok(());
        }
        let rv = resource_version(written);
        if !is_comparable_resource_version(rv) {
            return Err(ResourceVersionError(rv.to_owned()).into());
        }
        let object_key = informer.indexer().key_of(written)?;
        self.push(
            reconcile_key,
            Pending {
                cache: Arc::new(informer.clone()),
                object_key,
                wanted: Wanted::Version(rv.to_owned()),
            },
        );
        Ok(())
    }

    /// Whether writes of `reconcile_key` are waiting to be seen.
    pub fn is_pending(&self, reconcile_key: &str) -> bool {
        self.inner.pending.lock().contains_key(reconcile_key)
    }

    /// Waits now, within the [`timeout`](Self::timeout), until the caches show every write
    /// recorded for `reconcile_key` (e.g. in the middle of a reconcile, before listing what it
    /// just created). Writes whose versions cannot be compared, or whose informer stopped, are
    /// dropped without waiting, as KCM's consistency store skips them.
    ///
    /// # Errors
    /// [`CacheWaitError::TimedOut`] for the first write not seen in time; the records not
    /// seen yet are kept.
    pub async fn wait(&self, reconcile_key: &str) -> Result<(), CacheWaitError> {
        match self.settle(reconcile_key).await {
            Settled::TimedOut(e) => Err(e),
            Settled::Nothing | Settled::Caught => Ok(()),
        }
    }

    /// Waits for the writes recorded under `reconcile_key` (see [`wait`](Self::wait)).
    pub(crate) async fn settle(&self, reconcile_key: &str) -> Settled {
        let Some(writes) = self.inner.pending.lock().remove(reconcile_key) else {
            return Settled::Nothing;
        };
        let timeout = self.timeout();
        let deadline = Instant::now() + timeout;
        let mut rest = writes.into_iter();
        while let Some(write) = rest.next() {
            let left = deadline.saturating_duration_since(Instant::now());
            match write
                .cache
                .wait(&write.object_key, &write.wanted, left)
                .await
            {
                Ok(()) => {}
                Err(
                    e @ (CacheWaitError::TimedOut { .. } | CacheWaitError::DeleteNotSeen { .. }),
                ) => {
                    let mut pending = self.inner.pending.lock();
                    let kept = pending.entry(reconcile_key.to_owned()).or_default();
                    for w in std::iter::once(write).chain(rest) {
                        merge(kept, w);
                    }
                    let e = match e {
                        CacheWaitError::TimedOut {
                            wanted, have, key, ..
                        } => CacheWaitError::TimedOut {
                            wanted,
                            have,
                            key,
                            timeout,
                        },
                        CacheWaitError::DeleteNotSeen { key, .. } => {
                            CacheWaitError::DeleteNotSeen { key, timeout }
                        }
                        other => other,
                    };
                    return Settled::TimedOut(e);
                }
                Err(e) => {
                    tracing::debug!(cache = write.cache.name(), key = %write.object_key, error = %e, "read-your-writes: not waiting for this write");
                }
            }
        }
        Settled::Caught
    }
}

/// Adds `write` to `writes`: per cache and object, the newest version, or the latest of a
/// deletion and a write.
fn merge(writes: &mut Vec<Pending>, write: Pending) {
    let same = writes.iter_mut().find(|w| {
        w.cache.informer_id() == write.cache.informer_id() && w.object_key == write.object_key
    });
    match same {
        Some(w) => match (&w.wanted, &write.wanted) {
            (Wanted::Version(old), Wanted::Version(new))
                if !compare_resource_versions(new, old).is_ok_and(|o| o.is_gt()) => {}
            _ => w.wanted = write.wanted,
        },
        None => writes.push(write),
    }
}
