//! A relist built up part by part as it downloads, then installed in one swap: how a lean-mode
//! informer applies a list without ever holding it decoded (each part is keyed, indexed and
//! encoded as it arrives, and its decoded objects dropped).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::cache_state::{Entry, Replacement, to_stored};
use super::error::StoreError;
use super::index_func::IndexFunc;
use super::indexer::Indexer;
use super::lean::Stored;
use crate::object::{KeyError, Object};

/// A relist being staged for an [`Indexer`]: the parts given so far, keyed, indexed and stored
/// (encoded, in lean mode). The first failing object (an index function, an encoding) makes the
/// whole relist fail at [`Indexer::install_staged`], as [`Indexer::replace`] would.
pub(crate) struct StagedReplace<K> {
    funcs: Vec<(String, IndexFunc<K>)>,
    replacement: Replacement<K>,
    /// Every listed object's key and stored form, in list order (duplicates included).
    listed: Vec<(Arc<str>, Stored<K>)>,
    failed: Option<StoreError>,
}

/// What installing a staged relist replaced: decode its objects one by one with
/// [`Indexer::staged_object`] while notifying, so they are never all decoded at once.
pub(crate) struct StagedOutcome<K> {
    /// Every listed object's key and stored form, in list order.
    pub(crate) listed: Vec<(Arc<str>, Stored<K>)>,
    /// The previous contents.
    old: HashMap<Arc<str>, Entry<K>>,
}

impl<K> StagedOutcome<K> {
    /// The keys and stored forms of the previous objects the list lacks, sorted by key.
    pub(crate) fn removed(&self) -> Vec<(Arc<str>, Stored<K>)> {
        let listed: HashSet<&str> = self.listed.iter().map(|(k, _)| &**k).collect();
        let mut removed: Vec<(Arc<str>, Stored<K>)> = self
            .old
            .iter()
            .filter(|(key, _)| !listed.contains(&***key))
            .map(|(key, entry)| (key.clone(), entry.obj.clone()))
            .collect();
        removed.sort_by(|a, b| a.0.cmp(&b.0));
        removed
    }

    /// The previous stored form under `key`, if any.
    pub(crate) fn previous(&self, key: &str) -> Option<&Stored<K>> {
        self.old.get(key).map(|e| &e.obj)
    }
}

impl<K: Object> Indexer<K> {
    /// Starts staging a relist with the current index functions.
    pub(crate) fn stage_replace(&self) -> StagedReplace<K> {
        StagedReplace {
            funcs: self.index_funcs(),
            replacement: Replacement::empty(0, 0),
            listed: Vec::new(),
            failed: None,
        }
        .with_slots()
    }

    /// Adds the next items of a staged relist. Keys are computed first: if one cannot be, the
    /// part is not staged and the error returned (the relist goes on without it, as a queue
    /// drops such a part). An index function or encoding failure marks the relist failed.
    pub(crate) fn stage_part(
        &self,
        stage: &mut StagedReplace<K>,
        items: Vec<Arc<K>>,
    ) -> Result<(), KeyError> {
        let keys = items
            .iter()
            .map(|obj| self.key_of(obj))
            .collect::<Result<Vec<_>, _>>()?;
        if stage.failed.is_some() {
            return Ok(());
        }
        let codec = self.codec();
        let pairs: Vec<(String, Arc<K>)> = keys.into_iter().zip(items).collect();
        // Encoding is most of what lean staging costs. It runs on the task that delivers the
        // part (the Reflector's), while the source decodes the next items on the other cores:
        // as fast as spreading it (real kube-apiserver, 10,000 pods: lean W1 1,273-1,292 ms
        // against 1,290-1,335 with scoped threads) and without the memory that more threads
        // touching the heap leave behind (3.5k bytes a pod against 4.0-4.5k).
        let stored: Vec<_> = pairs
            .iter()
            .map(|(key, obj)| to_stored(codec, obj, key))
            .collect();
        for ((key, obj), stored) in pairs.into_iter().zip(stored) {
            let pushed = stored.and_then(|stored| {
                stage
                    .replacement
                    .push_stored(&stage.funcs, key, &obj, stored)
            });
            match pushed {
                Ok(listed) => stage.listed.push(listed),
                Err(e) => {
                    stage.failed = Some(e);
                    stage.listed = Vec::new();
                    stage.replacement = Replacement::empty(0, 0);
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Installs a staged relist at `resource_version` in one swap.
    ///
    /// # Errors
    /// The error that failed the staging, or an index function registered since it began that
    /// fails on a listed object; the cache is then unchanged.
    pub(crate) fn install_staged(
        &self,
        stage: StagedReplace<K>,
        resource_version: &str,
    ) -> Result<StagedOutcome<K>, StoreError> {
        if let Some(e) = stage.failed {
            return Err(e);
        }
        let old = self.install(stage.replacement, resource_version)?;
        Ok(StagedOutcome {
            listed: stage.listed,
            old,
        })
    }

    /// The object of a stored form from a [`StagedOutcome`] (decoded, or shared if alive);
    /// `None`, logged, when it cannot be decoded.
    pub(crate) fn staged_object(&self, key: &str, stored: &Stored<K>) -> Option<Arc<K>> {
        self.decoded(key, stored)
    }

    /// Each listed object of `chunk` with the object it replaced, as handlers are told them
    /// (decoded on every core in a lean cache); objects that cannot be decoded are left out.
    pub(crate) fn staged_objects(
        &self,
        chunk: &[(Arc<str>, Stored<K>)],
        outcome: &StagedOutcome<K>,
    ) -> Vec<(Option<Arc<K>>, Arc<K>)> {
        let pair = |(key, stored): &(Arc<str>, Stored<K>)| {
            let obj = self.staged_object(key, stored)?;
            let old = outcome
                .previous(key)
                .and_then(|old| self.staged_object(key, old));
            Some((old, obj))
        };
        match self.codec() {
            Some(_) => super::lean::par_map(chunk, pair)
                .into_iter()
                .flatten()
                .collect(),
            None => chunk.iter().filter_map(pair).collect(),
        }
    }
}

impl<K> StagedReplace<K> {
    /// A staged relist of encoded objects with their indexed values (a lean snapshot).
    pub(super) fn from_encoded(
        funcs: Vec<(String, IndexFunc<K>)>,
        items: Vec<(String, Vec<Vec<String>>, Stored<K>)>,
    ) -> Self {
        let mut replacement = Replacement::empty(funcs.len(), items.len());
        let listed = items
            .into_iter()
            .map(|(key, values, stored)| replacement.push_values(key, values, stored))
            .collect();
        Self {
            funcs,
            replacement,
            listed,
            failed: None,
        }
    }

    fn with_slots(mut self) -> Self {
        self.replacement = Replacement::empty(self.funcs.len(), 0);
        self
    }
}
