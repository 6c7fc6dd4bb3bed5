//! A streaming list's initial events, handed to the store as a list taken in parts while they
//! arrive.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::object::{KeyError, meta_namespace_key};
use crate::store::ReflectorStore;

/// How many initial events are handed to the store in one list part.
pub(crate) const STREAMED_PART: usize = 128;

/// Where a streaming list's initial events go until the initial-events-end bookmark: the
/// store's own list protocol, a part of [`STREAMED_PART`] objects at a time, so a consumer that
/// stages a list as it arrives (an informer: keeping its cached object for every unchanged one)
/// never holds the whole new list (client-go fills a temporary store and hands it over whole
/// at the bookmark).
///
/// The initial events are the state at one resourceVersion, so a conforming server sends only
/// `ADDED`, once per object. Others are taken as client-go's temporary store takes them while
/// the object still waits for its part: a `MODIFIED` (or a repeated `ADDED`) replaces it, a
/// `DELETED` removes it. Deliberate difference, for an object already handed over (a part
/// cannot be taken back): a `MODIFIED` lists it again (the later object wins in the cache, as
/// in a `Replace`, and handlers may hear of both), and a `DELETED` reaches the store as a
/// delete right after the list ends ([`finish`](Self::finish)): the object is listed, then
/// deleted, instead of being left out of the list.
pub(crate) struct StreamedList<'a, K, S: ReflectorStore<K>> {
    store: &'a S,
    state: Mutex<State<K, S::Error>>,
}

struct State<K, E> {
    /// Objects not handed over yet, with their keys, in arrival order.
    pending: Vec<(String, Arc<K>)>,
    /// The keys of the objects handed over.
    handed: HashSet<String>,
    /// Objects deleted after they were handed over, by key.
    deleted: HashMap<String, Arc<K>>,
    /// The store's error for the first part it refused: nothing more is handed over, and the
    /// list fails at its end.
    failed: Option<E>,
}

impl<'a, K: kube::Resource + Send + Sync, S: ReflectorStore<K>> StreamedList<'a, K, S> {
    /// Starts a list in `store` ([`ReflectorStore::replace_begin`]).
    pub(crate) fn begin(store: &'a S) -> Self {
        store.replace_begin();
        Self {
            store,
            state: Mutex::new(State::empty()),
        }
    }

    /// The initial events ended at `resource_version`: hands over what is left, ends the list,
    /// then deletes what was deleted after it was handed over.
    ///
    /// # Errors
    /// The store's error for a part (the list is then aborted) or for the end.
    pub(crate) fn finish(self, resource_version: String) -> Result<(), S::Error> {
        let mut state = std::mem::replace(&mut *self.state.lock(), State::empty());
        let flushed = self.flush(&mut state, true);
        if let Some(e) = state.failed.take().or(flushed.err()) {
            self.store.replace_abort();
            return Err(e);
        }
        self.store.replace_end(resource_version)?;
        let mut deleted: Vec<(String, Arc<K>)> = state.deleted.into_iter().collect();
        deleted.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, obj) in deleted {
            if let Err(e) = self.store.delete(obj) {
                tracing::error!(%key, error = %e, "unable to delete an object the streaming list deleted");
            }
        }
        Ok(())
    }

    /// The stream ended before its initial-events-end bookmark: the list is abandoned
    /// ([`ReflectorStore::replace_abort`]).
    pub(crate) fn abort(self) {
        self.store.replace_abort();
    }

    /// Hands the pending objects over when there are enough of them (or `now`). After a
    /// refused part they are dropped.
    fn flush(&self, state: &mut State<K, S::Error>, now: bool) -> Result<(), S::Error> {
        if state.pending.is_empty() || (!now && state.pending.len() < STREAMED_PART) {
            return Ok(());
        }
        let part = std::mem::take(&mut state.pending);
        if state.failed.is_some() {
            return Ok(());
        }
        let mut objects = Vec::with_capacity(part.len());
        for (key, obj) in part {
            state.handed.insert(key);
            objects.push(obj);
        }
        self.store.replace_part(objects)
    }

    /// An object listed by an `ADDED` or `MODIFIED` event.
    fn listed(&self, obj: Arc<K>) -> Result<(), StreamedError> {
        let key = meta_namespace_key(obj.as_ref())?;
        let mut state = self.state.lock();
        state.deleted.remove(&key);
        if let Some(slot) = state.pending.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = obj;
            return Ok(());
        }
        state.pending.push((key, obj));
        match self.flush(&mut state, false) {
            Ok(()) => Ok(()),
            Err(e) => {
                let message = e.to_string();
                state.failed = Some(e);
                Err(StreamedError::Store(message))
            }
        }
    }
}

impl<K, E> State<K, E> {
    fn empty() -> Self {
        Self {
            pending: Vec::new(),
            handed: HashSet::new(),
            deleted: HashMap::new(),
            failed: None,
        }
    }
}

/// Why an initial event could not be taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StreamedError {
    /// The object has no key.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The store refused a list part (the list fails when it ends).
    #[error("the store refused a part of the streamed list: {0}")]
    Store(String),
}

impl<K: kube::Resource + Send + Sync, S: ReflectorStore<K>> ReflectorStore<K>
    for StreamedList<'_, K, S>
{
    type Error = StreamedError;
    fn add(&self, obj: Arc<K>) -> Result<(), Self::Error> {
        self.listed(obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), Self::Error> {
        self.listed(obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), Self::Error> {
        let key = meta_namespace_key(obj.as_ref())?;
        let mut state = self.state.lock();
        state.pending.retain(|(k, _)| *k != key);
        if state.handed.contains(&key) {
            state.deleted.insert(key, obj);
        }
        Ok(())
    }
    /// Nothing to resync in a list being streamed.
    fn resync(&self) -> Result<(), Self::Error> {
        Ok(())
    }
    /// The list starts over: the store's list too.
    fn replace_begin(&self) {
        let mut state = self.state.lock();
        state.pending.clear();
        state.handed.clear();
        state.deleted.clear();
        self.store.replace_begin();
    }
    /// Listed objects, as if each came as an `ADDED` event.
    fn replace_part(&self, items: Vec<Arc<K>>) -> Result<(), Self::Error> {
        items.into_iter().try_for_each(|obj| self.listed(obj))
    }
    /// The streaming list ends at its bookmark, through [`finish`](StreamedList::finish).
    fn replace_end(&self, _resource_version: String) -> Result<(), Self::Error> {
        Ok(())
    }
    /// The streaming list is abandoned through [`abort`](StreamedList::abort).
    fn replace_abort(&self) {}
    /// The list's parts are never held back: a store bounds its queue, not a list.
    fn wait_for_room(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
    /// The bookmark's version reaches the store with the list's end.
    fn update_resource_version(&self, _resource_version: &str) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn cm(name: &str, rv: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    /// What the store was told, in order.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl ReflectorStore<ConfigMap> for Recorder {
        type Error = KeyError;
        fn add(&self, _: Arc<ConfigMap>) -> Result<(), KeyError> {
            unreachable!("a streamed list adds nothing")
        }
        fn update(&self, _: Arc<ConfigMap>) -> Result<(), KeyError> {
            unreachable!("a streamed list updates nothing")
        }
        fn delete(&self, obj: Arc<ConfigMap>) -> Result<(), KeyError> {
            let name = obj.metadata.name.clone().unwrap_or_default();
            self.0.lock().push(format!("delete {name}"));
            Ok(())
        }
        fn resync(&self) -> Result<(), KeyError> {
            Ok(())
        }
        fn replace_begin(&self) {
            self.0.lock().push("begin".into());
        }
        fn replace_part(&self, items: Vec<Arc<ConfigMap>>) -> Result<(), KeyError> {
            let names: Vec<String> = items
                .iter()
                .map(|o| {
                    let m = &o.metadata;
                    format!(
                        "{}@{}",
                        m.name.as_deref().unwrap_or(""),
                        m.resource_version.as_deref().unwrap_or("")
                    )
                })
                .collect();
            self.0.lock().push(format!("part {}", names.join(" ")));
            Ok(())
        }
        fn replace_end(&self, resource_version: String) -> Result<(), KeyError> {
            self.0.lock().push(format!("end {resource_version}"));
            Ok(())
        }
        fn replace_abort(&self) {
            self.0.lock().push("abort".into());
        }
        fn wait_for_room(&self) -> futures::future::BoxFuture<'_, ()> {
            Box::pin(std::future::ready(()))
        }
        fn update_resource_version(&self, _: &str) {}
    }

    fn told(store: &Recorder) -> Vec<String> {
        store.0.lock().clone()
    }

    #[test]
    fn initial_events_reach_the_store_in_parts_while_they_arrive() {
        let store = Recorder::default();
        let list = StreamedList::begin(&store);
        for i in 0..STREAMED_PART {
            list.add(cm(&format!("o{i}"), "1")).unwrap();
        }
        let told_so_far = told(&store);
        assert_eq!(told_so_far.len(), 2, "begin, then a full part at once");
        assert!(told_so_far[1].starts_with("part o0@1 o1@1"));
        list.add(cm("last", "2")).unwrap();
        list.finish("7".into()).unwrap();
        let all = told(&store);
        assert_eq!(all[2..], ["part last@2".to_owned(), "end 7".to_owned()]);
    }

    #[test]
    fn a_modified_event_replaces_a_pending_object_and_a_deleted_one_takes_it_back() {
        let store = Recorder::default();
        let list = StreamedList::begin(&store);
        list.add(cm("a", "1")).unwrap();
        list.add(cm("b", "2")).unwrap();
        list.update(cm("a", "3")).unwrap();
        list.delete(cm("b", "4")).unwrap();
        list.delete(cm("never-listed", "5")).unwrap();
        list.finish("5".into()).unwrap();
        assert_eq!(told(&store), ["begin", "part a@3", "end 5"]);
    }

    /// Deliberate difference: a deletion of an object already handed over comes as a delete
    /// after the list ends (one listed again after its deletion is not deleted), and a
    /// modification lists it again.
    #[test]
    fn an_object_changed_after_its_part_was_handed_over_is_listed_again_or_deleted_after_the_end() {
        let store = Recorder::default();
        let list = StreamedList::begin(&store);
        for i in 0..STREAMED_PART {
            list.add(cm(&format!("o{i}"), "1")).unwrap();
        }
        list.delete(cm("o1", "2")).unwrap();
        list.delete(cm("o2", "3")).unwrap();
        list.add(cm("o2", "4")).unwrap();
        list.update(cm("o3", "5")).unwrap();
        list.finish("5".into()).unwrap();
        let all = told(&store);
        assert_eq!(
            all[2..],
            [
                "part o2@4 o3@5".to_owned(),
                "end 5".to_owned(),
                "delete o1".to_owned()
            ]
        );
    }

    #[test]
    fn an_abandoned_stream_aborts_the_list() {
        let store = Recorder::default();
        let list = StreamedList::begin(&store);
        list.add(cm("a", "1")).unwrap();
        list.abort();
        assert_eq!(told(&store), ["begin", "abort"]);
    }
}
