//! Taking from the queue only what the listeners have room for, and telling a relist's or a
//! resync's notifications chunk by chunk (see [`MAX_LISTENER_BACKLOG`]).

use super::*;
use crate::informer::listener::MAX_LISTENER_BACKLOG;
use crate::store::StagedOutcome;

/// Notifications a relist is told in at a time (a lean cache decodes each chunk on every
/// core); also the resync's chunk.
const LATER_CHUNK: usize = 256;

/// Notifications of an entry already applied to the cache, to be told as the listeners make
/// room, before the next entry is taken. Only the listeners registered when the cache changed
/// hear them (a handler added since was sent the cache, this change included).
pub(super) enum Later<K: Object> {
    /// A relist (not the initial one): its deletions, then its updates and adds.
    Relist {
        outcome: StagedOutcome<K>,
        recipients: Vec<u64>,
        /// The first relist after a snapshot or seed: deletions carry the last known object.
        diff: bool,
    },
    /// A resync: every cached object, to the listeners in this resync round.
    Resync {
        keys: Vec<String>,
        recipients: Vec<u64>,
    },
}

impl<K: Object> SharedIndexInformer<K> {
    /// Waits until the fullest listener has room, then takes at most that much from the queue
    /// and applies it: a RealFifo batch is cut to the room; a DeltaFifo object whose deltas do
    /// not fit waits (unsplit) until they do. Returns what is left to tell.
    pub(super) async fn pop_within_room(
        &self,
        fifo: &InformerQueue<K>,
        staging: Option<&ListStaging<K, Arc<InformerQueue<K>>>>,
    ) -> Result<Option<Later<K>>, QueueError> {
        let processor = &self.inner.processor;
        match fifo {
            InformerQueue::Real(q) => {
                let room = processor.wait_for_room(1).await;
                q.pop_batch(room.min(DEFAULT_BATCH_SIZE), |popped, initial| {
                    self.handle_popped(popped, initial, staging)
                })
                .await
            }
            InformerQueue::Delta(q) => {
                let mut need = 1;
                loop {
                    let room = processor.wait_for_room(need).await;
                    // More deltas than the bound fit only in empty listeners.
                    let room = if room == MAX_LISTENER_BACKLOG {
                        usize::MAX
                    } else {
                        room
                    };
                    match q
                        .pop_within(room, |deltas, initial| self.handle_deltas(deltas, initial))
                        .await?
                    {
                        Ok(()) => return Ok(None),
                        Err(n) => need = n,
                    }
                }
            }
        }
    }

    /// What a relist tells of an object it removed: client-go's tombstone
    /// (`DeletedFinalStateUnknown` with the last known object), or, on the first relist after a
    /// snapshot or seed (`diff`), the last known object itself (see [`crate::snapshot`]).
    pub(super) fn relist_deletion(
        &self,
        key: &str,
        stored: &crate::store::Stored<K>,
        diff: bool,
    ) -> ObjectOrTombstone<K> {
        match self.inner.indexer.staged_object(key, stored) {
            Some(obj) if diff => ObjectOrTombstone::Object(obj),
            obj => ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
                key: key.to_string(),
                obj,
            }),
        }
    }

    /// Tells `later`'s notifications a chunk at a time, each once every listener has room for
    /// it.
    pub(super) async fn notify_later(&self, later: Later<K>) {
        let inner = &self.inner;
        let processor = &inner.processor;
        match later {
            Later::Relist {
                outcome,
                recipients,
                diff,
            } => {
                let removed = outcome.removed();
                for chunk in removed.chunks(LATER_CHUNK) {
                    processor.wait_for_room(chunk.len()).await;
                    for (key, stored) in chunk {
                        let deleted = self.relist_deletion(key, stored, diff);
                        processor.distribute_to(&Event::Delete(deleted), &recipients, false);
                    }
                }
                for chunk in outcome.listed.chunks(LATER_CHUNK) {
                    processor.wait_for_room(chunk.len()).await;
                    for (old, obj) in inner.indexer.staged_objects(chunk, &outcome) {
                        let ev = match old {
                            Some(old) => {
                                let is_sync = resource_version(old.as_ref())
                                    == resource_version(obj.as_ref());
                                processor.distribute_to(
                                    &Event::Update { old, new: obj },
                                    &recipients,
                                    is_sync,
                                );
                                continue;
                            }
                            None => Event::Add {
                                obj,
                                is_in_initial_list: false,
                            },
                        };
                        processor.distribute_to(&ev, &recipients, false);
                    }
                }
            }
            Later::Resync { keys, recipients } => {
                // one object at a time (a lean cache decodes each), not the whole cache at once
                for chunk in keys.chunks(LATER_CHUNK) {
                    processor.wait_for_room(chunk.len()).await;
                    for key in chunk {
                        let Some(obj) = inner.indexer.get_by_key(key) else {
                            continue;
                        };
                        processor.distribute_to(
                            &Event::Update {
                                old: obj.clone(),
                                new: obj,
                            },
                            &recipients,
                            false,
                        );
                    }
                }
            }
        }
    }
}
