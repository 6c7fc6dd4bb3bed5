//! [`ListStaging`]: how an informer on a RealFifo takes a list part by part as it downloads, so
//! a relist never holds the whole new list next to the cache: a wrapper at the Reflector's store
//! seam, the one path every list (paged or streamed) of such an informer goes through.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;

use crate::queue::QueueError;
use crate::store::{Indexer, ReflectorStore, StagedReplace};
use crate::{Object, Transform};

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
    /// The relist being downloaded.
    current: Mutex<Option<StagedReplace<K>>>,
    /// Complete relists, in the order their placeholders were queued.
    ready: Mutex<VecDeque<StagedReplace<K>>>,
}

impl<K: Object, S> ListStaging<K, S> {
    /// Stages the lists `inner` would get into `indexer`'s stored form, transformed first.
    pub(crate) fn new(inner: S, indexer: Indexer<K>, transformer: Option<Transform<K>>) -> Self {
        Self {
            inner,
            indexer,
            transformer,
            current: Mutex::new(None),
            ready: Mutex::new(VecDeque::new()),
        }
    }

    /// The staged relist of the placeholder just popped.
    pub(crate) fn take_ready(&self) -> Option<StagedReplace<K>> {
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
        *self.current.lock() = Some(self.indexer.stage_replace());
    }
    fn replace_part(&self, items: Vec<Arc<K>>) -> Result<(), QueueError> {
        let items = match &self.transformer {
            Some(t) => items.into_iter().map(|o| t.apply(o)).collect(),
            None => items,
        };
        let mut current = self.current.lock();
        let stage = current.get_or_insert_with(|| self.indexer.stage_replace());
        self.indexer
            .stage_part(stage, items)
            .map_err(QueueError::Key)
    }
    fn replace_end(&self, resource_version: String) -> Result<(), QueueError> {
        let Some(stage) = self.current.lock().take() else {
            tracing::error!("informer queue: replace_end without replace_begin; ignored");
            return Ok(());
        };
        self.ready.lock().push_back(stage);
        // The placeholder: an empty relist, queued after the staged one is ready.
        self.inner.replace_begin();
        self.inner.replace_end(resource_version)
    }
    fn replace_abort(&self) {
        *self.current.lock() = None;
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
