//! Replace reconciliation of the [`DeltaFifo`]: a complete list (whole or in parts) against
//! what the queue and its known objects hold, with a tombstone for every key gone from it.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::MutexGuard;

use super::{DeltaFifo, Inner};
use crate::object::Object;
use crate::queue::delta::DeltaType;
use crate::queue::error::QueueError;

impl<K: Object> DeltaFifo<K> {
    /// Replaces the queue's view with a complete list (a relist); see the type's contract for
    /// the exact deltas. The first replace before any add/update/delete defines the initial
    /// population [`DeltaFifo::has_synced`] waits for. The resource version is not used.
    ///
    /// # Errors
    /// [`QueueError::Key`] if any listed object's key cannot be computed; nothing changes.
    pub fn replace(&self, list: Vec<Arc<K>>, _resource_version: String) -> Result<(), QueueError> {
        let keyed = self.keyed(list)?;

        let mut inner = self.inner.lock();
        let mut listed = HashSet::with_capacity(keyed.len());
        self.queue_listed(&mut inner, keyed, &mut listed);
        let deletions = self.queue_missing(&mut inner, &listed);
        inner.sync.first_replace(listed.len() + deletions);
        self.wake_if_queued(inner);
        Ok(())
    }

    /// Starts a replace taken in parts: [`replace_part`](Self::replace_part) queues each part
    /// at once (so a consumer can pop while the rest of the list is still coming), and
    /// [`replace_end`](Self::replace_end) detects deletions against every key the parts listed.
    /// Begin + parts + end queue exactly what one [`replace`](Self::replace) with all the items
    /// would, except that items popped in between are already out of the queue (and, in the
    /// known objects, count as listed). Calling it again restarts the set of listed keys.
    pub fn replace_begin(&self) {
        self.inner.lock().replacing = Some(HashSet::new());
    }

    /// Queues one part of a replace (a `Replaced`, or `Sync`, delta per item; see
    /// [`replace_begin`](Self::replace_begin)).
    ///
    /// # Errors
    /// [`QueueError::Key`] if any item's key cannot be computed; nothing of this part is
    /// queued.
    pub fn replace_part(&self, items: Vec<Arc<K>>) -> Result<(), QueueError> {
        let keyed = self.keyed(items)?;
        let mut inner = self.inner.lock();
        let mut listed = inner.replacing.take().unwrap_or_default();
        self.queue_listed(&mut inner, keyed, &mut listed);
        inner.replacing = Some(listed);
        self.wake_if_queued(inner);
        Ok(())
    }

    /// Ends a replace taken in parts: queues a deletion (a tombstone) for every queued or
    /// known key no part listed, and, for the first replace, sets the initial population to
    /// what is still queued. Without a [`replace_begin`](Self::replace_begin) it does nothing
    /// (logged): deleting everything because a begin was missed would lose the cache.
    ///
    /// # Errors
    /// None today; the `Result` matches the other writes.
    pub fn replace_end(&self, _resource_version: String) -> Result<(), QueueError> {
        let mut inner = self.inner.lock();
        let Some(listed) = inner.replacing.take() else {
            tracing::error!("DeltaFifo: replace_end without replace_begin; ignored");
            return Ok(());
        };
        self.queue_missing(&mut inner, &listed);
        let queued = inner.queue.len();
        inner.sync.first_replace(queued);
        self.wake_if_queued(inner);
        Ok(())
    }

    /// Abandons a replace taken in parts: the parts stay queued, nothing is deleted.
    pub fn replace_abort(&self) {
        self.inner.lock().replacing = None;
    }

    /// Every object with its key; the first key that cannot be computed fails them all.
    fn keyed(&self, objs: Vec<Arc<K>>) -> Result<Vec<(String, Arc<K>)>, QueueError> {
        objs.into_iter()
            .map(|obj| Ok(((self.key_func)(&obj)?, obj)))
            .collect()
    }

    /// Releases the lock and wakes a consumer if anything is queued.
    fn wake_if_queued(&self, inner: MutexGuard<'_, Inner<K>>) {
        let wake = !inner.queue.is_empty();
        drop(inner);
        if wake {
            self.notify.notify_one();
        }
    }

    /// Queues a `Replaced` (or `Sync`) delta for every listed item and records its key.
    fn queue_listed(
        &self,
        inner: &mut Inner<K>,
        keyed: Vec<(String, Arc<K>)>,
        listed: &mut HashSet<String>,
    ) {
        let action = if self.emit_delta_type_replaced {
            DeltaType::Replaced
        } else {
            DeltaType::Sync
        };
        inner.items.reserve(keyed.len());
        inner.queue.reserve(keyed.len());
        listed.reserve(keyed.len());
        for (key, obj) in keyed {
            listed.insert(key.clone());
            self.queue_object(inner, key, action, obj);
        }
    }

    /// Queues a tombstone for every queued or known key not in `listed`; returns how many.
    fn queue_missing(&self, inner: &mut Inner<K>, listed: &HashSet<String>) -> usize {
        // Queued keys the relist no longer contains: their deletion was missed.
        let missing: Vec<String> = inner
            .queue
            .iter()
            .filter(|k| !listed.contains(*k))
            .cloned()
            .collect();
        let mut deletions = missing.len();
        for key in missing {
            let last = inner
                .items
                .get(&key)
                .and_then(|d| d.newest())
                .and_then(|d| d.object.object().cloned());
            Self::queue_tombstone(inner, key, last);
        }

        // Known keys neither listed nor queued: deleted while we were not watching.
        if let Some(known) = &self.known_objects {
            for key in known.list_keys() {
                if listed.contains(&key) || inner.items.contains_key(&key) {
                    continue;
                }
                let obj = known.get_by_key(&key);
                if obj.is_none() {
                    tracing::debug!(%key, "DeltaFifo: known key vanished during replace; tombstone without object");
                }
                deletions += 1;
                Self::queue_tombstone(inner, key, obj);
            }
        }
        inner.deletes_as_objects = false;
        deletions
    }
}
