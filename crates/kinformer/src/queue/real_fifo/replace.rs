//! Relists: `replace`, and the same taken in parts (`replace_begin` .. `replace_end`).
//!
//! A relist is queued whole at `replace_end`: in atomic mode it is one entry, and in
//! per-object mode its deletions must come before its objects, which cannot be known before the
//! list is complete. Until then the parts wait, keyed and transformed, outside the queue:
//! nothing of a relist can be popped before it is complete, while entries queued before it
//! still can. The list is held once (the raw objects are dropped as each part is transformed),
//! and `replace_end` moves it into the queue without copying.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::entry::{Item, KeyedDelta, ReplacedAll};
use super::{Inner, RealFifo, RealFifoMode};
use crate::object::{DeletedFinalStateUnknown, Object, ObjectOrTombstone};
use crate::queue::{Delta, DeltaType, QueueError};
use crate::store::KeyListerGetter;

impl<K: Object> RealFifo<K> {
    /// Replaces the consumer's view with a complete list (a relist); see the type's contract
    /// for what is queued. The first relist before any add/update/delete defines the initial
    /// population [`RealFifo::has_synced`] waits for: every entry queued once it completes.
    /// The same as [`replace_begin`](Self::replace_begin), one
    /// [`replace_part`](Self::replace_part) and [`replace_end`](Self::replace_end).
    ///
    /// # Errors
    /// [`QueueError::Key`] if any listed object's key cannot be computed; nothing changes.
    pub fn replace(&self, list: Vec<Arc<K>>, resource_version: String) -> Result<(), QueueError> {
        self.replace_begin();
        if let Err(e) = self.replace_part(list) {
            self.replace_abort();
            return Err(e);
        }
        self.replace_end(resource_version)
    }

    /// Starts a relist taken in parts. Calling it again drops the parts given so far (a list
    /// that starts over).
    pub fn replace_begin(&self) {
        self.inner.lock().replacing = Some(Vec::new());
    }

    /// Adds the next items of a relist, in list order: keyed and transformed now, queued at
    /// [`replace_end`](Self::replace_end). Without a `replace_begin` it starts a relist.
    ///
    /// # Errors
    /// [`QueueError::Key`] if any item's key cannot be computed; nothing of this part is kept.
    pub fn replace_part(&self, items: Vec<Arc<K>>) -> Result<(), QueueError> {
        let keys = items
            .iter()
            .map(|obj| (self.key_func)(obj))
            .collect::<Result<Vec<_>, _>>()?;
        let keyed: Vec<(String, Arc<K>)> = keys
            .into_iter()
            .zip(items)
            .map(|(key, obj)| (key, self.transform(obj)))
            .collect();
        let mut inner = self.inner.lock();
        match &mut inner.replacing {
            Some(listed) => listed.extend(keyed),
            None => inner.replacing = Some(keyed),
        }
        Ok(())
    }

    /// Completes a relist taken in parts at `resource_version` and queues it (see the type's
    /// contract). Without a [`replace_begin`](Self::replace_begin) it does nothing (logged):
    /// a relist of nothing would delete everything.
    ///
    /// # Errors
    /// None today; the `Result` matches the other writes.
    pub fn replace_end(&self, resource_version: String) -> Result<(), QueueError> {
        let mut inner = self.inner.lock();
        let Some(listed) = inner.replacing.take() else {
            tracing::error!("RealFifo: replace_end without replace_begin; ignored");
            return Ok(());
        };
        match &self.mode {
            RealFifoMode::Atomic { .. } => inner.push(Item::ReplacedAll(ReplacedAll {
                resource_version,
                objects: listed,
            })),
            RealFifoMode::PerObject { known_objects } => {
                reconcile(&mut inner, known_objects.as_deref(), listed);
            }
        }
        if !inner.sync.is_populated() {
            let queued = inner.items.len();
            inner.sync.first_replace(queued);
        }
        self.wake(inner);
        Ok(())
    }

    /// Abandons a relist taken in parts: its parts are dropped and nothing is queued (the next
    /// complete relist reconciles everything).
    pub fn replace_abort(&self) {
        self.inner.lock().replacing = None;
    }
}

/// client-go's `reconcileReplacement`: tombstones for queued keys the list lacks (unless their
/// last queued change is a deletion), then for known keys the list lacks that are not queued,
/// then a `Replaced` delta per listed object.
fn reconcile<K>(
    inner: &mut Inner<K>,
    known: Option<&dyn KeyListerGetter<K>>,
    listed: Vec<(String, Arc<K>)>,
) {
    let listed_keys: HashSet<&str> = listed.iter().map(|(k, _)| k.as_str()).collect();

    // The last queued delta of every queued key, keys in order of first appearance.
    let mut order: Vec<&str> = Vec::new();
    let mut last: HashMap<&str, &Delta<K>> = HashMap::new();
    for item in &inner.items {
        if let Item::Delta(d) = item
            && last.insert(d.key.as_str(), &d.delta).is_none()
        {
            order.push(d.key.as_str());
        }
    }
    let mut tombstones: Vec<(String, Option<Arc<K>>)> = order
        .iter()
        .filter(|key| !listed_keys.contains(*key))
        .filter_map(|key| {
            let delta = last[key];
            (delta.delta_type != DeltaType::Deleted)
                .then(|| ((*key).to_owned(), delta.object.object().cloned()))
        })
        .collect();

    if let Some(known) = known {
        for key in known.list_keys() {
            if listed_keys.contains(key.as_str()) || last.contains_key(key.as_str()) {
                continue;
            }
            let obj = known.get_by_key(&key);
            if obj.is_none() {
                tracing::debug!(%key, "RealFifo: known key vanished during replace; tombstone without object");
            }
            tombstones.push((key, obj));
        }
    }
    drop(last);
    drop(order);
    drop(listed_keys);

    for (key, obj) in tombstones {
        let tombstone = DeletedFinalStateUnknown {
            key: key.clone(),
            obj,
        };
        inner.push(Item::Delta(KeyedDelta {
            key,
            delta: Delta {
                delta_type: DeltaType::Deleted,
                object: ObjectOrTombstone::Tombstone(tombstone),
            },
        }));
    }
    for (key, obj) in listed {
        inner.push(Item::Delta(KeyedDelta {
            key,
            delta: Delta::new(DeltaType::Replaced, obj),
        }));
    }
}
