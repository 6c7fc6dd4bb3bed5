//! The revisioned store.
//!
//! Contract:
//! - Every successful write (create, update, delete) takes the next revision; the revision is
//!   global across resources, like etcd's. A write that changes nothing takes none.
//! - The history holds every event with a revision greater than [`Store::compacted`], in
//!   revision order. Compaction (by count, by age, or on demand) drops the oldest events and
//!   raises `compacted`; requests for revisions below it get 410 Gone.
//! - The state at any revision `r >= compacted` can be read ([`Store::list`]): it is rebuilt
//!   from the live state by undoing the newer events.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::object::StoredObject;
use crate::status::ApiError;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    /// Created.
    Added,
    /// Updated.
    Modified,
    /// Deleted (the event's object is the last state, carrying the deletion revision).
    Deleted,
}

/// One change, as kept in the history.
#[derive(Debug, Clone)]
pub(crate) struct StoredEvent {
    /// Revision of the write.
    pub revision: u64,
    /// Resource (`plural` or `plural.group`).
    pub resource: Arc<str>,
    /// What happened.
    pub event_type: EventType,
    /// The object after the change (for deletes: the last state with the deletion revision).
    pub object: Arc<StoredObject>,
    /// The object before the change (`None` for creates).
    pub prev: Option<Arc<StoredObject>>,
    /// When it happened (tokio time, so age-based compaction follows paused test time).
    pub at: Instant,
}

/// Limits of the event history (automatic compaction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryConfig {
    /// Keep at most this many events (oldest dropped first).
    pub max_events: usize,
    /// Drop events older than this (checked on each write).
    pub max_age: Option<Duration>,
}

impl Default for HistoryConfig {
    /// 100,000 events, 5 minutes (etcd's default compaction interval in kube-apiserver).
    fn default() -> Self {
        HistoryConfig {
            max_events: 100_000,
            max_age: Some(Duration::from_secs(300)),
        }
    }
}

/// The result of the closure given to [`Store::mutate`].
#[derive(Debug)]
pub(crate) enum Mutation<T> {
    /// Store this object (create if absent, update otherwise).
    Put(Arc<StoredObject>, T),
    /// Delete the object; the given object is its final state carrying the new revision.
    Delete(Arc<StoredObject>, T),
    /// Change nothing (no revision is used).
    Nothing(T),
}

/// What [`Store::preview`] found: the closure's result, the live object it saw and the
/// revision a real write would have taken.
#[derive(Debug)]
pub(crate) struct Preview<T> {
    /// The closure's result.
    pub out: T,
    /// The live object when the preview ran.
    pub current: Option<Arc<StoredObject>>,
    /// The revision the write would have taken (not used).
    pub next: u64,
}

impl Preview<Arc<StoredObject>> {
    /// The object a dry-run write answers with, as kube-apiserver's dry-run storage does: a
    /// version the write would have stored keeps the live object's resourceVersion (updates,
    /// patches, deletes) or has none (creates); anything else is returned as is.
    pub(crate) fn answer(self) -> Arc<StoredObject> {
        if self.out.resource_version != self.next {
            return self.out;
        }
        Arc::new(match &self.current {
            Some(c) => self.out.at_revision(c.resource_version),
            None => self.out.without_resource_version(),
        })
    }
}

/// A read at a revision that cannot be served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReadError {
    /// The revision is older than the oldest kept one.
    #[error("too old resource version: {requested} ({compacted})")]
    Compacted {
        /// Requested revision.
        requested: u64,
        /// Current compaction revision.
        compacted: u64,
    },
    /// The revision is newer than the store's.
    #[error("too large resource version: {requested}, current: {current}")]
    Future {
        /// Requested revision.
        requested: u64,
        /// Current revision.
        current: u64,
    },
}

struct Inner {
    revision: u64,
    compacted: u64,
    objects: HashMap<Arc<str>, BTreeMap<String, Arc<StoredObject>>>,
    history: VecDeque<Arc<StoredEvent>>,
    /// Per resource, the revision its watches were last restarted at
    /// ([`Store::restart_watches`]).
    watch_floors: HashMap<Arc<str>, u64>,
}

/// The revisioned object store. Cheap to share behind an `Arc`; all methods take `&self`.
pub(crate) struct Store {
    inner: Mutex<Inner>,
    history_config: Mutex<HistoryConfig>,
    revision_tx: tokio::sync::watch::Sender<u64>,
    /// How many times any resource's watches were restarted ([`Store::restart_watches`]): a
    /// watch looks up its resource's floor only when this moved.
    watch_restarts: AtomicU64,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.lock();
        f.debug_struct("Store")
            .field("revision", &inner.revision)
            .field("compacted", &inner.compacted)
            .field("history", &inner.history.len())
            .finish()
    }
}

impl Store {
    /// An empty store at revision 1.
    pub(crate) fn new(history: HistoryConfig) -> Self {
        let (revision_tx, _) = tokio::sync::watch::channel(1);
        Store {
            inner: Mutex::new(Inner {
                revision: 1,
                compacted: 1,
                objects: HashMap::new(),
                history: VecDeque::new(),
                watch_floors: HashMap::new(),
            }),
            history_config: Mutex::new(history),
            revision_tx,
            watch_restarts: AtomicU64::new(0),
        }
    }

    /// The current revision (the resourceVersion of the latest write).
    pub(crate) fn revision(&self) -> u64 {
        self.inner.lock().revision
    }

    /// The compaction revision: events after it are kept, reads below it are 410 Gone.
    #[cfg(test)]
    pub(crate) fn compacted(&self) -> u64 {
        self.inner.lock().compacted
    }

    /// Number of events in the history.
    #[cfg(test)]
    pub(crate) fn history_len(&self) -> usize {
        self.inner.lock().history.len()
    }

    /// Changes the history limits (applied at the next write).
    pub(crate) fn set_history_config(&self, config: HistoryConfig) {
        *self.history_config.lock() = config;
    }

    /// A receiver that observes the current revision after every write.
    pub(crate) fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.revision_tx.subscribe()
    }

    /// Waits until the revision reaches `rv`, at most `timeout`; returns whether it did.
    pub(crate) async fn wait_for_revision(&self, rv: u64, timeout: Duration) -> bool {
        let mut rx = self.subscribe();
        let fut = rx.wait_for(|r| *r >= rv);
        matches!(tokio::time::timeout(timeout, fut).await, Ok(Ok(_)))
    }

    /// The live object at `key`, if any.
    pub(crate) fn get(&self, resource: &str, key: &str) -> Option<Arc<StoredObject>> {
        self.inner.lock().objects.get(resource)?.get(key).cloned()
    }

    /// Atomic read-modify-write of one key. `f` sees the live object and the revision a write
    /// would take, and decides what to do; it runs under the store lock, so writes are
    /// serialized like etcd transactions.
    pub(crate) fn mutate<T>(
        &self,
        resource: &str,
        key: &str,
        f: impl FnOnce(Option<&Arc<StoredObject>>, u64) -> Result<Mutation<T>, ApiError>,
    ) -> Result<T, ApiError> {
        let mut inner = self.inner.lock();
        let next = inner.revision + 1;
        let current = inner
            .objects
            .get(resource)
            .and_then(|m| m.get(key))
            .cloned();
        let mutation = f(current.as_ref(), next)?;
        let (event_type, object, out) = match mutation {
            Mutation::Nothing(out) => return Ok(out),
            Mutation::Put(obj, out) => {
                let ty = if current.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                let res = Self::resource_arc(&mut inner, resource);
                inner
                    .objects
                    .entry(res)
                    .or_default()
                    .insert(key.to_string(), obj.clone());
                (ty, obj, out)
            }
            Mutation::Delete(obj, out) => {
                if current.is_none() {
                    return Ok(out);
                }
                if let Some(m) = inner.objects.get_mut(resource) {
                    m.remove(key);
                }
                (EventType::Deleted, obj, out)
            }
        };
        inner.revision = next;
        let res = Self::resource_arc(&mut inner, resource);
        inner.history.push_back(Arc::new(StoredEvent {
            revision: next,
            resource: res,
            event_type,
            object,
            prev: current,
            at: Instant::now(),
        }));
        let config = *self.history_config.lock();
        Self::auto_compact(&mut inner, config);
        self.revision_tx.send_replace(next);
        Ok(out)
    }

    /// A dry run of [`Store::mutate`]: `f` sees the live object and the revision a write
    /// would take, exactly as a real write, and its result is returned with the live object,
    /// but nothing is stored, no revision is used and no watcher hears of it (kube-apiserver's
    /// `dryRun=All`).
    pub(crate) fn preview<T>(
        &self,
        resource: &str,
        key: &str,
        f: impl FnOnce(Option<&Arc<StoredObject>>, u64) -> Result<Mutation<T>, ApiError>,
    ) -> Result<Preview<T>, ApiError> {
        let inner = self.inner.lock();
        let current = inner
            .objects
            .get(resource)
            .and_then(|m| m.get(key))
            .cloned();
        let next = inner.revision + 1;
        let out = match f(current.as_ref(), next)? {
            Mutation::Nothing(out) | Mutation::Put(_, out) | Mutation::Delete(_, out) => out,
        };
        Ok(Preview { out, current, next })
    }

    fn resource_arc(inner: &mut Inner, resource: &str) -> Arc<str> {
        match inner.objects.get_key_value(resource) {
            Some((k, _)) => k.clone(),
            None => {
                let k: Arc<str> = Arc::from(resource);
                inner.objects.insert(k.clone(), BTreeMap::new());
                k
            }
        }
    }

    fn auto_compact(inner: &mut Inner, config: HistoryConfig) {
        while inner.history.len() > config.max_events {
            if let Some(ev) = inner.history.pop_front() {
                inner.compacted = ev.revision;
            }
        }
        if let Some(age) = config.max_age {
            let now = Instant::now();
            while let Some(front) = inner.history.front() {
                if now.duration_since(front.at) > age {
                    inner.compacted = front.revision;
                    inner.history.pop_front();
                } else {
                    break;
                }
            }
        }
    }

    /// Compacts the history up to `revision` (clamped to the current revision); returns the
    /// new compaction revision.
    pub(crate) fn compact(&self, revision: u64) -> u64 {
        let mut inner = self.inner.lock();
        let target = revision.min(inner.revision);
        while inner.history.front().is_some_and(|e| e.revision <= target) {
            inner.history.pop_front();
        }
        inner.compacted = inner.compacted.max(target);
        inner.compacted
    }

    /// A fault: removes the live object at `key` without a revision, an event or a history
    /// entry, as a lost write in storage would. Watches never hear of it; a list at any
    /// revision from the latest write of `key` on no longer has it. Returns whether it was
    /// there.
    pub(crate) fn lose(&self, resource: &str, key: &str) -> bool {
        let mut inner = self.inner.lock();
        inner
            .objects
            .get_mut(resource)
            .and_then(|m| m.remove(key))
            .is_some()
    }

    /// Replaces the live object at `key` without a revision, an event or a history entry, if
    /// it is still at `obj`'s resourceVersion (returns whether it was): the same version of the
    /// object, read differently (a custom resource decoded by its CRD's new schema, see
    /// `Api::sync_crd`). Watches never hear of it.
    pub(crate) fn replace_unrecorded(
        &self,
        resource: &str,
        key: &str,
        obj: Arc<StoredObject>,
    ) -> bool {
        let mut inner = self.inner.lock();
        match inner.objects.get_mut(resource).and_then(|m| m.get_mut(key)) {
            Some(live) if live.resource_version == obj.resource_version => {
                *live = obj;
                true
            }
            _ => false,
        }
    }

    /// Ends every open watch of `resource`, and makes a watch from a resourceVersion older than
    /// the current revision 410 Gone, as kube-apiserver does when a CRD's spec changes: it
    /// builds the resource's storage and watch cache again (watches end without an event; the
    /// new cache starts at the current revision). Returns that revision.
    pub(crate) fn restart_watches(&self, resource: &str) -> u64 {
        let floor = {
            let mut inner = self.inner.lock();
            let floor = inner.revision;
            inner.watch_floors.insert(resource.into(), floor);
            floor
        };
        self.watch_restarts.fetch_add(1, Ordering::AcqRel);
        // wakes every watch (the revision is unchanged), which then finds its floor moved
        self.revision_tx.send_modify(|_| {});
        floor
    }

    /// How many times any resource's watches were restarted: read before
    /// [`watch_floor`](Self::watch_floor), then compared, it says cheaply when to look again.
    pub(crate) fn watch_restarts(&self) -> u64 {
        self.watch_restarts.load(Ordering::Acquire)
    }

    /// The revision `resource`'s watches were last restarted at ([`Store::restart_watches`]),
    /// 0 if never: a watch ends when it changes.
    pub(crate) fn watch_floor(&self, resource: &str) -> u64 {
        self.inner
            .lock()
            .watch_floors
            .get(resource)
            .copied()
            .unwrap_or(0)
    }

    /// Compacts everything: the history becomes empty and only the current revision is readable.
    pub(crate) fn compact_now(&self) -> u64 {
        let rev = self.revision();
        self.compact(rev)
    }

    /// Objects of `resource` at revision `at` (`None` = now) whose key starts with `prefix`
    /// and is `>= start`, in key order, with the revision actually read.
    pub(crate) fn list(
        &self,
        resource: &str,
        at: Option<u64>,
        prefix: &str,
        start: &str,
    ) -> Result<(u64, Vec<Arc<StoredObject>>), ReadError> {
        self.list_page(resource, at, prefix, start, 0, None)
            .map(|(rv, items, _)| (rv, items))
    }

    /// Like [`Store::list`], keeping only objects that pass `keep` (all when `None`), at most
    /// `limit` of them (0 = no limit); also returns how many more objects pass after the page. Only the
    /// page's objects are cloned, so paging through a large collection costs O(page) clones.
    pub(crate) fn list_page(
        &self,
        resource: &str,
        at: Option<u64>,
        prefix: &str,
        start: &str,
        limit: usize,
        keep: Option<&dyn Fn(&StoredObject) -> bool>,
    ) -> Result<(u64, Vec<Arc<StoredObject>>, usize), ReadError> {
        let inner = self.inner.lock();
        let lower = if start > prefix { start } else { prefix };
        let in_range = |k: &str| k.starts_with(prefix) && k >= lower;
        // Keys with the prefix `ns/` are exactly those in [`ns/`, `ns0`): a range bound, so
        // iterating never has to read key bytes (which would cost a cache miss per object).
        let upper: Option<String> = prefix.strip_suffix('/').map(|p| format!("{p}0"));
        let empty = BTreeMap::new();
        let live = inner.objects.get(resource).unwrap_or(&empty);
        let live_range = || {
            let hi = match &upper {
                Some(u) => std::ops::Bound::Excluded(u.as_str()),
                None => std::ops::Bound::Unbounded,
            };
            let exact = upper.is_some() || prefix.is_empty();
            live.range::<str, _>((std::ops::Bound::Included(lower), hi))
                .take_while(move |(k, _)| exact || k.starts_with(prefix))
        };
        let page = |iter: &mut dyn Iterator<Item = &Arc<StoredObject>>| {
            let mut items = Vec::new();
            let mut rest = 0;
            match keep {
                Some(keep) => {
                    for o in iter.filter(|o| keep(o)) {
                        if limit == 0 || items.len() < limit {
                            items.push(o.clone());
                        } else {
                            rest += 1;
                        }
                    }
                }
                None => {
                    if limit == 0 {
                        items.extend(iter.cloned());
                    } else {
                        items.extend((&mut *iter).take(limit).cloned());
                        rest = iter.count();
                    }
                }
            }
            (items, rest)
        };
        let rv = match at {
            None => inner.revision,
            Some(at) if at < inner.compacted => {
                return Err(ReadError::Compacted {
                    requested: at,
                    compacted: inner.compacted,
                });
            }
            Some(at) if at > inner.revision => {
                return Err(ReadError::Future {
                    requested: at,
                    current: inner.revision,
                });
            }
            Some(at) => at,
        };
        if rv == inner.revision {
            let (items, rest) = page(&mut live_range().map(|(_, v)| v));
            return Ok((rv, items, rest));
        }
        let mut state: BTreeMap<&str, &Arc<StoredObject>> =
            live_range().map(|(k, v)| (k.as_str(), v)).collect();
        for ev in inner.history.iter().rev() {
            if ev.revision <= rv {
                break;
            }
            if &*ev.resource != resource || !in_range(&ev.object.key) {
                continue;
            }
            match &ev.prev {
                Some(prev) => {
                    state.insert(prev.key.as_str(), prev);
                }
                None => {
                    state.remove(ev.object.key.as_str());
                }
            }
        }
        let (items, rest) = page(&mut state.into_values());
        Ok((rv, items, rest))
    }

    /// Events after revision `cursor` (at most `max`), and the cursor to continue from: the
    /// last returned event's revision when truncated, else the current revision (every event up
    /// to it has been seen).
    pub(crate) fn events_after(
        &self,
        cursor: u64,
        max: usize,
    ) -> Result<(Vec<Arc<StoredEvent>>, u64), ReadError> {
        let inner = self.inner.lock();
        if cursor < inner.compacted {
            return Err(ReadError::Compacted {
                requested: cursor,
                compacted: inner.compacted,
            });
        }
        let start = inner.history.partition_point(|e| e.revision <= cursor);
        let events: Vec<_> = inner.history.range(start..).take(max).cloned().collect();
        let next = if events.len() == max {
            events.last().map(|e| e.revision).unwrap_or(cursor)
        } else {
            inner.revision
        };
        Ok((events, next))
    }

    /// Checks that a watch of `resource` may start at `rv` (not compacted, not older than the
    /// resource's watches were restarted at, not in the future).
    pub(crate) fn check_watchable(&self, resource: &str, rv: u64) -> Result<(), ReadError> {
        let inner = self.inner.lock();
        let floor = inner.watch_floors.get(resource).copied().unwrap_or(0);
        let oldest = inner.compacted.max(floor);
        if rv < oldest {
            return Err(ReadError::Compacted {
                requested: rv,
                compacted: oldest,
            });
        }
        if rv > inner.revision {
            return Err(ReadError::Future {
                requested: rv,
                current: inner.revision,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
