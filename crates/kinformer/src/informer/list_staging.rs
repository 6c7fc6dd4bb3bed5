//! [`ListStaging`]: how an informer on a RealFifo takes a list part by part as it downloads, so
//! a relist never holds the whole new list next to the cache: a wrapper at the Reflector's store
//! seam, the one path every list (paged or streamed) of such an informer goes through.
//!
//! The informer's first list into an empty cache is applied part by part as it downloads
//! ([`InitialPart`]) when the informer asks for it (a lean cache does): each part is written to
//! the cache and its adds told at once, with the objects the decoder produced, so no listed
//! object is decoded twice. Every later list (and a first one into a cache a snapshot filled)
//! is staged and installed in one swap.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;

use crate::queue::QueueError;
use crate::store::{Indexer, ReflectorStore, StagedReplace};
use crate::{Object, Transform};

/// Writes one part of the informer's first list to the (empty) cache and tells its adds
/// (the informer's, which holds its handler lock while it does).
pub(crate) type InitialPart<K> = Box<dyn Fn(Vec<Arc<K>>) + Send + Sync>;

/// What the process loop finds for a relist placeholder it pops.
pub(crate) enum Ready<K> {
    /// A relist staged while it downloaded: to install in one swap.
    Staged(StagedReplace<K>),
    /// The first list, already written and told part by part: only its resource version is
    /// left to record.
    Applied,
}

/// The list being downloaded.
enum Current<K> {
    Staged(StagedReplace<K>),
    Direct,
}

/// Wraps the informer's queue (a RealFifo, which hands a relist through whole) for every cache
/// mode: each list part is transformed, keyed, indexed and stored into a staged relist as it
/// arrives ([`Indexer::stage_part`]: a lean cache encodes it and drops the decoded objects; a
/// full cache keeps the object it holds for every unchanged one, same uid and resourceVersion,
/// and drops the fresh copy), and the queue gets an empty relist in its place when the list
/// ends, so order and sync stay the queue's. When the process loop pops that placeholder it
/// takes the staged relist from here ([`take_ready`](Self::take_ready)) and installs it in one
/// swap. Everything else (adds, updates, deletes, resync, room, bookmarks) goes to the queue
/// untouched: the whole [`ReflectorStore`] protocol is forwarded.
pub(crate) struct ListStaging<K, S> {
    inner: S,
    indexer: Indexer<K>,
    transformer: Option<Transform<K>>,
    /// Applies the first list part by part, until a list begins (then `None`).
    initial: Mutex<Option<InitialPart<K>>>,
    /// The relist being downloaded.
    current: Mutex<Option<Current<K>>>,
    /// Complete relists, in the order their placeholders were queued.
    ready: Mutex<VecDeque<Ready<K>>>,
}

impl<K: Object, S> ListStaging<K, S> {
    /// Stages the lists `inner` would get into `indexer`'s stored form, transformed first.
    /// `initial` applies the first list's parts if the cache is empty when it begins.
    pub(crate) fn new(
        inner: S,
        indexer: Indexer<K>,
        transformer: Option<Transform<K>>,
        initial: Option<InitialPart<K>>,
    ) -> Self {
        Self {
            inner,
            indexer,
            transformer,
            initial: Mutex::new(initial),
            current: Mutex::new(None),
            ready: Mutex::new(VecDeque::new()),
        }
    }

    /// The staged relist of the placeholder just popped.
    pub(crate) fn take_ready(&self) -> Option<Ready<K>> {
        self.ready.lock().pop_front()
    }
}

impl<K: Object, S: ReflectorStore<K, Error = QueueError>> ReflectorStore<K> for ListStaging<K, S> {
    type Error = QueueError;
    fn add(&self, obj: Arc<K>) -> Result<(), QueueError> {
        self.inner.add(obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), QueueError> {
        self.inner.update(obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), QueueError> {
        self.inner.delete(obj)
    }
    fn resync(&self) -> Result<(), QueueError> {
        self.inner.resync()
    }
    fn replace_begin(&self) {
        // Only the first list, and only into an empty cache (a snapshot's objects are diffed).
        let direct = self.initial.lock().is_some() && self.indexer.is_empty();
        if !direct {
            *self.initial.lock() = None;
        }
        *self.current.lock() = Some(if direct {
            Current::Direct
        } else {
            Current::Staged(self.indexer.stage_replace())
        });
    }
    fn replace_part(&self, items: Vec<Arc<K>>) -> Result<(), QueueError> {
        let items = match &self.transformer {
            Some(t) => items.into_iter().map(|o| t.apply(o)).collect(),
            None => items,
        };
        let mut current = self.current.lock();
        let current = current.get_or_insert_with(|| Current::Staged(self.indexer.stage_replace()));
        match current {
            Current::Staged(stage) => self
                .indexer
                .stage_part(stage, items)
                .map_err(QueueError::Key),
            Current::Direct => {
                if let Some(apply) = &*self.initial.lock() {
                    apply(items);
                }
                Ok(())
            }
        }
    }
    fn replace_end(&self, resource_version: String) -> Result<(), QueueError> {
        let ready = match self.current.lock().take() {
            Some(Current::Staged(stage)) => Ready::Staged(stage),
            Some(Current::Direct) => {
                // Lists after this one are staged.
                *self.initial.lock() = None;
                Ready::Applied
            }
            None => {
                tracing::error!("informer queue: replace_end without replace_begin; ignored");
                return Ok(());
            }
        };
        self.ready.lock().push_back(ready);
        // The placeholder: an empty relist, queued after the staged one is ready.
        self.inner.replace_begin();
        self.inner.replace_end(resource_version)
    }
    fn replace_abort(&self) {
        // A first list cut short left part of it in the cache: the next one is staged against it.
        if matches!(self.current.lock().take(), Some(Current::Direct)) {
            *self.initial.lock() = None;
        }
    }
    fn wait_for_room(&self) -> BoxFuture<'_, ()> {
        self.inner.wait_for_room()
    }
    fn update_resource_version(&self, resource_version: &str) {
        self.inner.update_resource_version(resource_version)
    }
    fn bookmark(&self, resource_version: &str) {
        self.inner.bookmark(resource_version)
    }
}
