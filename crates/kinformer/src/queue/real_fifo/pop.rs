//! `pop` and `pop_batch`.

use std::collections::HashSet;

use parking_lot::MutexGuard;

use super::entry::{Item, Popped};
use super::{Inner, RealFifo, RealFifoMode};
use crate::object::Object;
use crate::queue::QueueError;
use crate::queue::room::wait_until;

impl<K: Object> RealFifo<K> {
    /// Waits (without polling) for the oldest entry, removes it and returns
    /// `process(entry, is_in_initial_list)`. A delta comes as a [`Popped::Deltas`] of one.
    /// `is_in_initial_list` is true for the entries of the initial population (client-go's
    /// `isInInitialList`).
    ///
    /// In per-object mode `process` runs under the queue's lock: update the known objects there,
    /// and do not call back into this queue (that would deadlock). In atomic mode it runs
    /// without the lock, so producers are not held up (client-go's `UnlockWhileProcessing`).
    /// Either way, if this pop completes the initial population,
    /// [`RealFifo::has_synced`] turns true only after `process` has returned.
    ///
    /// One consumer is the intended use, as in client-go: concurrent pops each get distinct
    /// entries, but in atomic mode their `process` calls may overlap. Cancel-safe: dropping the
    /// future before it completes removes nothing. If `process` panics the entry is lost, and
    /// the queue stays consistent.
    ///
    /// # Errors
    /// [`QueueError::Closed`] when the queue is closed and empty.
    pub async fn pop<R>(
        &self,
        process: impl FnOnce(Popped<K>, bool) -> R,
    ) -> Result<R, QueueError> {
        self.pop_batch(1, process).await
    }

    /// Like [`pop`](Self::pop), but hands out up to `max_unique_keys` leading deltas at once
    /// (client-go's `PopBatch`; its informers use [`DEFAULT_BATCH_SIZE`](super::DEFAULT_BATCH_SIZE)):
    /// the longest run of deltas with distinct keys, ended by a repeated key, by an entry that
    /// is not a delta, or by the end of the initial population (whose entries never share a
    /// batch with later ones). A `ReplacedAll`, `SyncAll` or `Bookmark` at the front is handed
    /// out alone. `max_unique_keys` 0 counts as 1.
    ///
    /// A consumer applies the batch to its cache in one transaction, then notifies in order.
    ///
    /// # Errors
    /// [`QueueError::Closed`] when the queue is closed and empty.
    pub async fn pop_batch<R>(
        &self,
        max_unique_keys: usize,
        process: impl FnOnce(Popped<K>, bool) -> R,
    ) -> Result<R, QueueError> {
        let taken = wait_until(&self.notify, || {
            let mut inner = self.inner.lock();
            match inner.take(max_unique_keys.max(1)) {
                Some((popped, initial, counted)) => Some(Ok((inner, popped, initial, counted))),
                None if inner.closed => Some(Err(QueueError::Closed)),
                None => None,
            }
        })
        .await;
        let (inner, popped, initial, counted) = taken?;
        if !inner.items.is_empty() {
            self.notify.notify_one();
        }
        self.room.popped(inner.held);
        let mut publish = PublishOnDrop {
            fifo: self,
            guard: Some(inner),
            counted,
        };
        if matches!(self.mode, RealFifoMode::Atomic { .. }) {
            publish.guard = None;
        }
        Ok(process(popped, initial))
    }
}

/// Once the popped entries were processed (or processing panicked), counts the `counted`
/// entries of the initial population as delivered and publishes `synced`, re-taking the lock
/// if processing ran without it.
struct PublishOnDrop<'a, K> {
    fifo: &'a RealFifo<K>,
    guard: Option<MutexGuard<'a, Inner<K>>>,
    counted: usize,
}

impl<K> Drop for PublishOnDrop<'_, K> {
    fn drop(&mut self) {
        let mut relocked;
        let inner = match &mut self.guard {
            Some(inner) => &mut **inner,
            None => {
                relocked = self.fifo.inner.lock();
                &mut *relocked
            }
        };
        inner.in_flight = inner.in_flight.saturating_sub(self.counted);
        inner.sync.consume(self.counted);
        inner.sync.check();
    }
}

impl<K> Inner<K> {
    /// Removes the next batch (see `pop_batch`) with its `is_in_initial_list` flag and how many
    /// of its entries belong to the initial population; those are marked in flight, and counted
    /// as delivered by `PublishOnDrop` once processed.
    fn take(&mut self, max_unique_keys: usize) -> Option<(Popped<K>, bool, usize)> {
        let first = self.items.front()?;
        let initial = !self.sync.has_synced();
        let remaining = self.sync.initial_remaining().saturating_sub(self.in_flight);
        let (popped, n) = if matches!(first, Item::Delta(_)) {
            let limit = if remaining > 0 {
                max_unique_keys.min(remaining)
            } else {
                max_unique_keys
            };
            let mut seen = HashSet::new();
            let n = self
                .items
                .iter()
                .take(limit)
                .take_while(|item| match item {
                    Item::Delta(d) => seen.insert(d.key.as_str()),
                    _ => false,
                })
                .count();
            let deltas: Vec<_> = self
                .items
                .drain(..n)
                .filter_map(|item| match item {
                    Item::Delta(d) => Some(d),
                    _ => None,
                })
                .collect();
            self.held = self.held.saturating_sub(n);
            (Popped::Deltas(deltas), n)
        } else {
            let item = self.items.pop_front()?;
            self.held = self.held.saturating_sub(item.weight());
            (item.into_popped(), 1)
        };
        let counted = n.min(remaining);
        self.in_flight += counted;
        Some((popped, initial, counted))
    }
}
