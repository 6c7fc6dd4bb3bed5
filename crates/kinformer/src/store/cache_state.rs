//! The unlocked state behind an [`Indexer`](super::Indexer): items by key and one inverted index
//! per registered index function (client-go's `threadSafeMap` + `storeIndex`, minus the lock).
//!
//! Invariants, which every method keeps and the property tests check:
//! - `entries[k].values.slot(i)` is the sorted, de-duplicated output of `slots[i].func` for the
//!   entry's object, computed when the object was written;
//! - `slots[i].index[v]` holds exactly the keys whose `values.slot(i)` contains `v`, and is never empty
//!   (empty sets are removed, as client-go does since kubernetes#84959).
//!
//! Keeping each entry's indexed values means an update or delete never re-runs an index function
//! on the old object (client-go does): it costs one call per index per write instead of two, and
//! the old values are removed exactly even if an index function is not deterministic.

use std::collections::HashMap;
use std::sync::Arc;

use super::error::StoreError;
use super::filed::{Filed, Index, refile};
use super::index_func::{IndexFunc, Indexers};
use super::lean::{LeanCodec, Stored};

/// One stored object with the values it is filed under.
pub(crate) struct Entry<K> {
    pub(super) key: Arc<str>,
    pub(super) obj: Stored<K>,
    /// Per slot: sorted, de-duplicated indexed values (see [`Filed`]).
    pub(super) values: Filed,
}

/// One registered index.
pub(super) struct IndexSlot<K> {
    pub(super) name: String,
    pub(super) func: IndexFunc<K>,
    pub(super) index: Index,
}

/// The items and indexes, without a lock.
pub(super) struct CacheState<K> {
    pub(super) entries: HashMap<Arc<str>, Entry<K>>,
    pub(super) slots: Vec<IndexSlot<K>>,
    pub(super) resource_version: Option<String>,
    /// Lean mode's codec; `None` in full mode.
    pub(super) codec: Option<Arc<LeanCodec<K>>>,
}

/// The form `obj` is stored in: itself in full mode, encoded in lean mode.
pub(super) fn to_stored<K>(
    codec: Option<&LeanCodec<K>>,
    obj: &Arc<K>,
    key: &str,
) -> Result<Stored<K>, StoreError> {
    match codec {
        None => Ok(Stored::Full(obj.clone())),
        Some(codec) => codec
            .encode(obj)
            .map(Stored::Lean)
            .map_err(|message| StoreError::Codec {
                key: Some(key.to_owned()),
                message,
            }),
    }
}

/// The decoded object of a stored one.
pub(super) fn from_stored<K>(
    codec: Option<&LeanCodec<K>>,
    stored: &Stored<K>,
    key: &str,
) -> Result<Arc<K>, StoreError> {
    let error = |message| StoreError::Codec {
        key: Some(key.to_owned()),
        message,
    };
    match (stored, codec) {
        (Stored::Full(obj), _) => Ok(obj.clone()),
        (Stored::Lean(blob), Some(codec)) => codec.decode(blob).map_err(error),
        (Stored::Lean(_), None) => Err(error("an encoded object in a full-mode cache".into())),
    }
}

/// Runs one index function and normalizes its output (sorted, no duplicates).
pub(super) fn index_values<K>(
    name: &str,
    func: &IndexFunc<K>,
    obj: &K,
    key: Option<&str>,
) -> Result<Vec<String>, StoreError> {
    let mut values = func(obj).map_err(|source| StoreError::IndexFunc {
        index: name.to_owned(),
        key: key.map(str::to_owned),
        source,
    })?;
    if values.len() > 1 {
        values.sort_unstable();
        values.dedup();
    }
    Ok(values)
}

/// Runs every given index function on `obj`, in order; the first failure wins.
pub(super) fn all_index_values<'a, K: 'a>(
    funcs: impl IntoIterator<Item = (&'a str, &'a IndexFunc<K>)>,
    obj: &K,
    key: &str,
) -> Result<Vec<Vec<String>>, StoreError> {
    funcs
        .into_iter()
        .map(|(name, func)| index_values(name, func, obj, Some(key)))
        .collect()
}

impl<K> CacheState<K> {
    /// An empty state with `indexers` registered, slots ordered by name.
    pub(super) fn new(indexers: Indexers<K>, codec: Option<Arc<LeanCodec<K>>>) -> Self {
        let mut slots: Vec<IndexSlot<K>> = indexers
            .into_iter()
            .map(|(name, func)| IndexSlot {
                name,
                func,
                index: Index::new(),
            })
            .collect();
        slots.sort_by(|a, b| a.name.cmp(&b.name));
        Self {
            entries: HashMap::new(),
            slots,
            resource_version: None,
            codec,
        }
    }

    /// The slot named `name`.
    pub(super) fn slot(&self, name: &str) -> Result<&IndexSlot<K>, StoreError> {
        self.slots
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| StoreError::UnknownIndex(name.to_owned()))
    }

    /// The index functions, in slot order.
    pub(super) fn funcs(&self) -> impl Iterator<Item = (&str, &IndexFunc<K>)> {
        self.slots.iter().map(|s| (s.name.as_str(), &s.func))
    }

    /// Stores `stored` (the stored form of `obj`) under `key`, returning the previous stored
    /// object. Computes every indexed value before changing anything, so a failing index
    /// function leaves the state untouched.
    pub(super) fn upsert(
        &mut self,
        key: String,
        obj: &K,
        stored: Stored<K>,
    ) -> Result<Option<Stored<K>>, StoreError> {
        let values = all_index_values(self.funcs(), obj, &key)?;
        let indexes = self.slots.iter_mut().map(|s| &mut s.index);
        if let Some(entry) = self.entries.get_mut(key.as_str()) {
            if let Some(filed) = refile(indexes, 0, &entry.key, &entry.values, &values) {
                entry.values = filed;
            }
            return Ok(Some(std::mem::replace(&mut entry.obj, stored)));
        }
        let key: Arc<str> = key.into();
        let values = refile(indexes, 0, &key, &Filed::default(), &values).unwrap_or_default();
        self.entries.insert(
            key.clone(),
            Entry {
                key,
                obj: stored,
                values,
            },
        );
        Ok(None)
    }

    /// Removes the object under `key`, returning it.
    pub(super) fn remove(&mut self, key: &str) -> Option<Stored<K>> {
        let entry = self.entries.remove(key)?;
        entry
            .values
            .unfile(self.slots.iter_mut().map(|s| &mut s.index), key);
        Some(entry.obj)
    }

    /// Registers more index functions and indexes every stored object with them. Checks for
    /// name conflicts and computes every new value first, so a failure changes nothing.
    pub(super) fn add_indexers(&mut self, indexers: Indexers<K>) -> Result<(), StoreError> {
        let mut conflicts: Vec<String> = indexers
            .keys()
            .filter(|name| self.slots.iter().any(|s| &s.name == *name))
            .cloned()
            .collect();
        if !conflicts.is_empty() {
            conflicts.sort_unstable();
            return Err(StoreError::IndexerConflict(conflicts));
        }
        let mut added: Vec<(String, IndexFunc<K>)> = indexers.into_iter().collect();
        added.sort_by(|a, b| a.0.cmp(&b.0));
        let mut per_entry: Vec<(Arc<str>, Vec<Vec<String>>)> =
            Vec::with_capacity(self.entries.len());
        for entry in self.entries.values() {
            let obj = from_stored(self.codec.as_deref(), &entry.obj, &entry.key)?;
            let values =
                all_index_values(added.iter().map(|(n, f)| (n.as_str(), f)), &obj, &entry.key)?;
            per_entry.push((entry.key.clone(), values));
        }
        let first_new = self.slots.len();
        self.slots
            .extend(added.into_iter().map(|(name, func)| IndexSlot {
                name,
                func,
                index: Index::new(),
            }));
        for (key, values) in per_entry {
            if let Some(entry) = self.entries.get_mut(&key) {
                let indexes = self.slots[first_new..].iter_mut().map(|s| &mut s.index);
                if let Some(filed) = refile(indexes, first_new, &entry.key, &entry.values, &values)
                {
                    entry.values = filed;
                }
            }
        }
        Ok(())
    }
}

/// A complete replacement, built outside the lock by [`build_replacement`].
pub(super) struct Replacement<K> {
    pub(super) entries: HashMap<Arc<str>, Entry<K>>,
    /// One index per slot the replacement was built for (a prefix of the current slots).
    pub(super) indexes: Vec<Index>,
}

/// Keys and indexes `list` with the given functions. A later object with the same key as an
/// earlier one wins, as in client-go (it builds a map).
pub(super) fn build_replacement<K>(
    key_func: &crate::object::KeyFunc<K>,
    funcs: &[(String, IndexFunc<K>)],
    list: Vec<Arc<K>>,
    codec: Option<&LeanCodec<K>>,
) -> Result<Replacement<K>, StoreError> {
    let mut replacement = Replacement::empty(funcs.len(), list.len());
    for obj in list {
        let key = key_func(&obj)?;
        replacement.push(funcs, key, &obj, codec)?;
    }
    Ok(replacement)
}

impl<K> Replacement<K> {
    /// An empty replacement for `slots` index functions.
    pub(super) fn empty(slots: usize, capacity: usize) -> Self {
        Self {
            entries: HashMap::with_capacity(capacity),
            indexes: (0..slots).map(|_| Index::new()).collect(),
        }
    }

    /// Keys, indexes and stores `obj` under `key`; a later object with the same key as an
    /// earlier one wins, as in client-go (it builds a map). Returns the key and the stored form.
    pub(super) fn push(
        &mut self,
        funcs: &[(String, IndexFunc<K>)],
        key: String,
        obj: &Arc<K>,
        codec: Option<&LeanCodec<K>>,
    ) -> Result<(Arc<str>, Stored<K>), StoreError> {
        let stored = to_stored(codec, obj, &key)?;
        self.push_stored(funcs, key, obj, stored)
    }

    /// [`push`](Self::push) with the stored form already made.
    pub(super) fn push_stored(
        &mut self,
        funcs: &[(String, IndexFunc<K>)],
        key: String,
        obj: &Arc<K>,
        stored: Stored<K>,
    ) -> Result<(Arc<str>, Stored<K>), StoreError> {
        let values = all_index_values(funcs.iter().map(|(n, f)| (n.as_str(), f)), obj, &key)?;
        Ok(self.push_values(key, values, stored))
    }

    /// [`push_stored`](Self::push_stored) with the indexed values already computed.
    pub(super) fn push_values(
        &mut self,
        key: String,
        values: Vec<Vec<String>>,
        stored: Stored<K>,
    ) -> (Arc<str>, Stored<K>) {
        if let Some(earlier) = self.entries.get_mut(key.as_str()) {
            // A duplicate key: the later object replaces the earlier one and its index entries.
            if let Some(filed) = refile(
                self.indexes.iter_mut(),
                0,
                &earlier.key,
                &earlier.values,
                &values,
            ) {
                earlier.values = filed;
            }
            earlier.obj = stored.clone();
            return (earlier.key.clone(), stored);
        }
        let key: Arc<str> = key.into();
        let values = refile(self.indexes.iter_mut(), 0, &key, &Filed::default(), &values)
            .unwrap_or_default();
        self.entries.insert(
            key.clone(),
            Entry {
                key: key.clone(),
                obj: stored.clone(),
                values,
            },
        );
        (key, stored)
    }
}

impl<K> CacheState<K> {
    /// Installs a replacement built for the first `replacement.indexes.len()` slots, indexing
    /// its objects with any slot registered since. Returns the previous entries so the caller
    /// can drop them after releasing the lock.
    pub(super) fn install(
        &mut self,
        mut replacement: Replacement<K>,
    ) -> Result<HashMap<Arc<str>, Entry<K>>, StoreError> {
        let built = replacement.indexes.len();
        if built < self.slots.len() {
            // Indexers were added while the replacement was built: index it with those too.
            let late: Vec<(&str, &IndexFunc<K>)> = self.slots[built..]
                .iter()
                .map(|s| (s.name.as_str(), &s.func))
                .collect();
            let mut extra = Vec::with_capacity(replacement.entries.len());
            for entry in replacement.entries.values() {
                let obj = from_stored(self.codec.as_deref(), &entry.obj, &entry.key)?;
                let values = all_index_values(late.iter().copied(), &obj, &entry.key)?;
                extra.push((entry.key.clone(), values));
            }
            replacement
                .indexes
                .extend((built..self.slots.len()).map(|_| Index::new()));
            for (key, values) in extra {
                if let Some(entry) = replacement.entries.get_mut(&key) {
                    let indexes = replacement.indexes[built..].iter_mut();
                    if let Some(filed) = refile(indexes, built, &entry.key, &entry.values, &values)
                    {
                        entry.values = filed;
                    }
                }
            }
        }
        for (slot, index) in self.slots.iter_mut().zip(replacement.indexes) {
            slot.index = index;
        }
        Ok(std::mem::replace(&mut self.entries, replacement.entries))
    }
}

#[cfg(test)]
mod tests {
    use super::super::filed::keys_of;
    use super::*;
    use crate::object::{KeyError, KeyFunc};

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn index_values_are_sorted_and_deduplicated() {
        let func: IndexFunc<()> = Arc::new(|_: &()| Ok(strings(&["b", "a", "b", ""])));
        assert_eq!(
            index_values("i", &func, &(), Some("k")).unwrap(),
            strings(&["", "a", "b"])
        );
    }

    /// A test object: (key, indexed value).
    type Obj = (&'static str, &'static str);

    fn key_func() -> KeyFunc<Obj> {
        Arc::new(|o: &Obj| {
            if o.0.is_empty() {
                Err(KeyError::MissingName { namespace: None })
            } else {
                Ok(o.0.to_owned())
            }
        })
    }

    fn by_value() -> IndexFunc<Obj> {
        Arc::new(|o: &Obj| Ok(vec![o.1.to_owned()]))
    }

    /// Duplicate keys in a replacement: the later object wins, in the items and the index.
    #[test]
    fn build_replacement_lets_the_later_duplicate_win() {
        let funcs = vec![("v".to_owned(), by_value())];
        let list = vec![
            Arc::new(("a", "x")),
            Arc::new(("b", "x")),
            Arc::new(("a", "y")),
        ];
        let r = build_replacement(&key_func(), &funcs, list, None).unwrap();
        assert_eq!(r.entries.len(), 2);
        let Stored::Full(a) = &r.entries["a"].obj else {
            panic!("full mode stores objects decoded")
        };
        assert_eq!(**a, ("a", "y"));
        assert_eq!(keys_of(&r.indexes[0], "x"), ["b"]);
        assert_eq!(keys_of(&r.indexes[0], "y"), ["a"]);
    }

    /// `replace` builds outside the lock; an indexer added meanwhile is filled in on install.
    #[test]
    fn install_indexes_a_replacement_with_indexers_added_meanwhile() {
        let mut state = CacheState::new(Indexers::from([("v".to_owned(), by_value())]), None);
        let funcs: Vec<(String, IndexFunc<Obj>)> = state
            .funcs()
            .map(|(n, f)| (n.to_owned(), f.clone()))
            .collect();
        let r = build_replacement(&key_func(), &funcs, vec![Arc::new(("a", "x"))], None).unwrap();
        let by_key: IndexFunc<Obj> = Arc::new(|o: &Obj| Ok(vec![o.0.to_owned()]));
        state
            .add_indexers(Indexers::from([("k".to_owned(), by_key)]))
            .unwrap();
        state.install(r).unwrap();
        assert_eq!(keys_of(&state.slot("v").unwrap().index, "x"), ["a"]);
        assert_eq!(keys_of(&state.slot("k").unwrap().index, "a"), ["a"]);
        assert_eq!(state.entries["a"].values.per_slot(2), [["x"], ["a"]]);
    }

    /// If an indexer added meanwhile fails on the replacement, nothing is installed.
    #[test]
    fn install_fails_cleanly_when_a_late_indexer_fails() {
        let mut state = CacheState::new(Indexers::from([("v".to_owned(), by_value())]), None);
        let old = Arc::new(("old", "o"));
        state
            .upsert("old".into(), &old, Stored::Full(old.clone()))
            .unwrap();
        let funcs: Vec<(String, IndexFunc<Obj>)> = state
            .funcs()
            .map(|(n, f)| (n.to_owned(), f.clone()))
            .collect();
        let r = build_replacement(&key_func(), &funcs, vec![Arc::new(("bad", "x"))], None).unwrap();
        let picky: IndexFunc<Obj> = Arc::new(|o: &Obj| {
            if o.0 == "bad" {
                Err("bad".into())
            } else {
                Ok(vec![])
            }
        });
        state
            .add_indexers(Indexers::from([("p".to_owned(), picky)]))
            .unwrap();
        assert!(matches!(
            state.install(r),
            Err(StoreError::IndexFunc { index, .. }) if index == "p"
        ));
        assert_eq!(state.entries.len(), 1);
        assert!(state.entries.contains_key("old"));
        assert_eq!(keys_of(&state.slot("v").unwrap().index, "o"), ["old"]);
        assert!(!state.slot("v").unwrap().index.contains_key("x"));
    }
}
