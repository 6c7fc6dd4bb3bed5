//! Store transactions: several writes applied to an [`Indexer`] under one lock (client-go's
//! `TransactionStore`, `Transaction` and `TransactionError`).

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use super::error::StoreError;
use super::indexer::Indexer;
use super::lean::Stored;
use crate::object::{Object, ObjectOrTombstone};

/// One write of a transaction (client-go's `Transaction` with its `TransactionType`).
pub enum Transaction<K> {
    /// Store the object (client-go's `TransactionTypeAdd`; the same as `Update`).
    Add(Arc<K>),
    /// Store the object (client-go's `TransactionTypeUpdate`).
    Update(Arc<K>),
    /// Remove what is stored under the object's key, or the tombstone's key.
    Delete(ObjectOrTombstone<K>),
}

impl<K> Clone for Transaction<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Add(o) => Self::Add(o.clone()),
            Self::Update(o) => Self::Update(o.clone()),
            Self::Delete(o) => Self::Delete(o.clone()),
        }
    }
}

impl<K> fmt::Debug for Transaction<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Add(_) => "Add",
            Self::Update(_) => "Update",
            Self::Delete(ObjectOrTombstone::Object(_)) => "Delete",
            Self::Delete(ObjectOrTombstone::Tombstone(_)) => "Delete(tombstone)",
        })
    }
}

/// Which writes of a transaction failed (client-go's `TransactionError`). The others were
/// applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "failed to execute ({failed}/{total}) transactions failed due to: {errors}",
    failed = self.failures.len(),
    total = self.total_transactions,
    errors = self.failures.iter().map(|(i, e)| format!("[{i}] {e}")).collect::<Vec<_>>().join("; ")
)]
pub struct TransactionError {
    /// The positions of the writes that were applied, ascending.
    pub successful_indices: Vec<usize>,
    /// How many writes the transaction had.
    pub total_transactions: usize,
    /// The position and the error of every write that was not applied, ascending.
    pub failures: Vec<(usize, StoreError)>,
}

/// What a transaction did, write by write: the object each one replaced or removed (`None`
/// when nothing was stored under its key), or why it was not applied.
#[must_use = "a transaction can fail write by write"]
pub struct TransactionOutcome<K> {
    results: Vec<Result<Option<Arc<K>>, StoreError>>,
}

impl<K> fmt::Debug for TransactionOutcome<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransactionOutcome")
            .field("total", &self.results.len())
            .field("error", &self.error())
            .finish()
    }
}

impl<K> TransactionOutcome<K> {
    /// Per write, in order: the previous object under its key, or its error.
    pub fn results(&self) -> &[Result<Option<Arc<K>>, StoreError>] {
        &self.results
    }

    /// The results, by value.
    pub fn into_results(self) -> Vec<Result<Option<Arc<K>>, StoreError>> {
        self.results
    }

    /// Whether every write was applied.
    pub fn is_ok(&self) -> bool {
        self.results.iter().all(Result::is_ok)
    }

    /// client-go's `TransactionError` when some write failed, `None` when all were applied.
    pub fn error(&self) -> Option<TransactionError> {
        if self.is_ok() {
            return None;
        }
        let mut error = TransactionError {
            successful_indices: Vec::new(),
            total_transactions: self.results.len(),
            failures: Vec::new(),
        };
        for (i, result) in self.results.iter().enumerate() {
            match result {
                Ok(_) => error.successful_indices.push(i),
                Err(e) => error.failures.push((i, e.clone())),
            }
        }
        Some(error)
    }
}

/// What [`Indexer::replace_reporting`] replaced: enough to tell handlers about a relist
/// without reading the cache again (client-go's `processReplacedAllInfo` reads it per object).
pub struct ReplaceOutcome<K> {
    /// Per listed object, in list order: the object that was stored under its key before, if
    /// any (an update when `Some`, an add when `None`).
    pub previous: Vec<Option<Arc<K>>>,
    /// The objects that were stored under keys the list lacks, with their keys: the relist's
    /// deletions, in no particular order.
    pub removed: Vec<(String, Arc<K>)>,
}

impl<K> fmt::Debug for ReplaceOutcome<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplaceOutcome")
            .field("previous", &self.previous.len())
            .field("removed", &self.removed.len())
            .finish()
    }
}

/// A transaction's write with its key and, for an add or update, its stored form.
type Keyed<K> = (
    Result<String, StoreError>,
    Option<Result<Stored<K>, StoreError>>,
    Transaction<K>,
);

/// A transaction's write as applied under the lock: the key and stored form it replaced.
type Applied<K> = Result<Option<(String, Stored<K>)>, StoreError>;

impl<K: Object> Indexer<K> {
    /// [`replace`](Self::replace), also reporting what each listed object replaced and what the
    /// list removed, computed from the previous contents after the swap (one acquisition of
    /// the write lock, no lookups). This is how a consumer applies an atomic relist
    /// ([`Popped::ReplacedAll`](crate::queue::Popped::ReplacedAll)) before notifying.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::ObjectMeta;
    /// use kinformer::Indexer;
    ///
    /// let cm = |name: &str| Arc::new(ConfigMap {
    ///     metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
    ///     ..Default::default()
    /// });
    /// let cache = Indexer::<ConfigMap>::default_namespaced();
    /// cache.add(cm("kept")).unwrap();
    /// cache.add(cm("gone")).unwrap();
    /// let outcome = cache.replace_reporting(vec![cm("kept"), cm("new")], "9").unwrap();
    /// assert!(outcome.previous[0].is_some() && outcome.previous[1].is_none());
    /// assert_eq!(outcome.removed.len(), 1);
    /// assert_eq!(outcome.removed[0].0, "gone");
    /// ```
    ///
    /// # Errors
    /// As [`replace`](Self::replace); the cache is then unchanged.
    pub fn replace_reporting(
        &self,
        list: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<ReplaceOutcome<K>, StoreError> {
        let keys = list
            .iter()
            .map(|obj| self.key_of(obj))
            .collect::<Result<Vec<_>, _>>()?;
        let old = self.swap(list, resource_version)?;
        let previous = keys
            .iter()
            .map(|key| {
                old.get(key.as_str())
                    .and_then(|e| self.decoded(key, &e.obj))
            })
            .collect();
        let listed: HashSet<&str> = keys.iter().map(String::as_str).collect();
        let removed = old
            .into_iter()
            .filter(|(key, _)| !listed.contains(&**key))
            .filter_map(|(key, entry)| {
                let obj = self.decoded(&key, &entry.obj)?;
                Some((key.to_string(), obj))
            })
            .collect();
        Ok(ReplaceOutcome { previous, removed })
    }

    /// Applies `txns` in order under one acquisition of the write lock (client-go's
    /// `Transaction`): readers see none of them or all of them. Each write stands alone: one
    /// that fails (no key, an index function error) changes nothing and the others are still
    /// applied, as in client-go. Keys are computed before the lock is taken.
    ///
    /// Each applied write records the resource version its object carries, as a single write
    /// would, so the last one carrying a version wins (client-go records the last write's).
    /// Deleting a tombstone records none.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::ObjectMeta;
    /// use kinformer::store::{Indexer, Transaction};
    ///
    /// let cm = |name: Option<&str>| Arc::new(ConfigMap {
    ///     metadata: ObjectMeta { name: name.map(Into::into), ..Default::default() },
    ///     ..Default::default()
    /// });
    /// let cache = Indexer::<ConfigMap>::default_namespaced();
    /// let outcome = cache.transaction(vec![
    ///     Transaction::Add(cm(Some("a"))),
    ///     Transaction::Add(cm(None)),
    ///     Transaction::Update(cm(Some("a"))),
    /// ]);
    /// let error = outcome.error().unwrap();
    /// assert_eq!(error.successful_indices, [0, 2]);
    /// assert!(outcome.results()[2].as_ref().unwrap().is_some(), "the update replaced the add");
    /// assert_eq!(cache.len(), 1);
    /// ```
    pub fn transaction(&self, txns: Vec<Transaction<K>>) -> TransactionOutcome<K> {
        let keyed: Vec<Keyed<K>> = txns
            .into_iter()
            .map(|txn| {
                let key = match &txn {
                    Transaction::Add(obj) | Transaction::Update(obj) => self.key_of(obj),
                    Transaction::Delete(ObjectOrTombstone::Object(obj)) => self.key_of(obj),
                    Transaction::Delete(ObjectOrTombstone::Tombstone(t)) => Ok(t.key.clone()),
                };
                let key = key.map_err(StoreError::from);
                // Encode before the lock is taken (lean mode).
                let stored = match (&key, &txn) {
                    (Ok(key), Transaction::Add(obj) | Transaction::Update(obj)) => {
                        Some(self.to_stored(obj, key))
                    }
                    _ => None,
                };
                (key, stored, txn)
            })
            .collect();
        let applied: Vec<Applied<K>> = self.with_state_mut(|state| {
            keyed
                .into_iter()
                .map(|(key, stored, txn)| {
                    let key = key?;
                    match (txn, stored) {
                        (Transaction::Add(obj) | Transaction::Update(obj), Some(stored)) => {
                            let old = state.upsert(key.clone(), &obj, stored?)?;
                            Self::note_resource_version(state, &obj);
                            Ok(old.map(|old| (key, old)))
                        }
                        (Transaction::Delete(target), _) => {
                            let old = state.remove(&key);
                            if let ObjectOrTombstone::Object(obj) = &target {
                                Self::note_resource_version(state, obj);
                            }
                            Ok(old.map(|old| (key, old)))
                        }
                        // An add or update always carries its stored form (built above).
                        (Transaction::Add(_) | Transaction::Update(_), None) => {
                            Err(StoreError::Codec {
                                key: Some(key),
                                message: "the object was not encoded".into(),
                            })
                        }
                    }
                })
                .collect()
        });
        // Decode what was replaced or removed (lean mode) after the lock is released.
        let results = applied
            .into_iter()
            .map(|r| r.map(|old| old.and_then(|(key, old)| self.decoded(&key, &old))))
            .collect();
        TransactionOutcome { results }
    }
}
