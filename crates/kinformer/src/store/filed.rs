//! Where a cached object is filed: the inverted indexes of a cache, and the values each entry
//! is filed under, kept so that an update or delete never re-runs an index function on the old
//! object.
//!
//! An entry's values are one allocation ([`Filed`]), and each value in it is the index's own
//! key, shared, not a copy: a pod filed under its namespace and its node costs one 64-byte
//! chunk here, where a `Vec` per index and a `String` per value cost five allocations. Measured
//! with glibc's own count (`mallinfo2`, 10,000 variants of the benchmarks' real-server pod, the
//! namespace and node indexes, release build, 2026-11-26): a lean cache went from 534 to 323
//! bytes a pod (of which 133 are the compressed pod), a full one from 49,819 to 49,661.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// An inverted index: indexed value → keys of the objects filed under it.
pub(super) type Index = HashMap<Arc<str>, HashSet<Arc<str>>>;

/// The values one entry is filed under, slot by slot: `(slot, value)` pairs ordered by slot,
/// then value (sorted and de-duplicated within a slot), each value the `Arc` its index keys
/// the value's set by. Empty (no allocation) for an entry filed nowhere.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Filed(Box<[(u32, Arc<str>)]>);

impl Filed {
    /// The values of `slot`.
    pub(super) fn slot(&self, slot: usize) -> &[(u32, Arc<str>)] {
        let start = self.0.partition_point(|(s, _)| (*s as usize) < slot);
        let end = start + self.0[start..].partition_point(|(s, _)| *s as usize == slot);
        &self.0[start..end]
    }

    /// Every slot's values, for the first `slots` slots (tests and debugging).
    #[cfg(test)]
    pub(super) fn per_slot(&self, slots: usize) -> Vec<Vec<&str>> {
        (0..slots)
            .map(|s| self.slot(s).iter().map(|(_, v)| &**v).collect())
            .collect()
    }

    /// Takes `key` out of `indexes` (every slot from the first, in order) for every value it is
    /// filed under, dropping sets that become empty.
    pub(super) fn unfile<'i>(&self, indexes: impl IntoIterator<Item = &'i mut Index>, key: &str) {
        for (slot, index) in indexes.into_iter().enumerate() {
            for (_, value) in self.slot(slot) {
                unfile(index, key, value);
            }
        }
    }
}

/// Files `key` under `value`; returns the index's key for `value` (made here if the value is
/// new to the index).
fn file(index: &mut Index, key: &Arc<str>, value: &str) -> Arc<str> {
    if let Some((shared, _)) = index.get_key_value(value) {
        let shared = shared.clone();
        if let Some(keys) = index.get_mut(value) {
            keys.insert(key.clone());
        }
        return shared;
    }
    let shared: Arc<str> = value.into();
    index.insert(shared.clone(), HashSet::from([key.clone()]));
    shared
}

/// Takes `key` out of `value`'s set, dropping the set if it becomes empty.
fn unfile(index: &mut Index, key: &str, value: &str) {
    if let Some(keys) = index.get_mut(value) {
        keys.remove(key);
        if keys.is_empty() {
            index.remove(value);
        }
    }
}

/// Moves `key` from the values `old` holds for the slots `first..first + new.len()` to `new`
/// (one sorted, de-duplicated list per slot, `indexes` being those slots' indexes in order),
/// touching only the values that differ: an update that keeps an object's values leaves the
/// indexes alone. Returns the entry's new [`Filed`] (the other slots as in `old`), or `None`
/// when nothing differs (`old` stays; nothing is allocated).
pub(super) fn refile<'i>(
    indexes: impl IntoIterator<Item = &'i mut Index>,
    first: usize,
    key: &Arc<str>,
    old: &Filed,
    new: &[Vec<String>],
) -> Option<Filed> {
    // the slots whose values differ, as `(position in new, values)`: empty, so not allocated,
    // when nothing differs
    let mut changed: Vec<(usize, Vec<Arc<str>>)> = Vec::new();
    for (i, (index, new)) in indexes.into_iter().zip(new).enumerate() {
        let old = old.slot(first + i);
        if old.len() == new.len() && old.iter().zip(new).all(|((_, o), n)| **o == **n) {
            continue;
        }
        let mut now = Vec::with_capacity(new.len());
        let (mut o, mut n) = (old.iter().peekable(), new.iter().peekable());
        loop {
            match (o.peek(), n.peek()) {
                (Some((_, ov)), Some(nv)) if **ov == ***nv => {
                    now.push(ov.clone());
                    o.next();
                    n.next();
                }
                (Some((_, ov)), Some(nv)) if **ov < ***nv => {
                    unfile(index, key, ov);
                    o.next();
                }
                (Some((_, ov)), None) => {
                    unfile(index, key, ov);
                    o.next();
                }
                (_, Some(nv)) => {
                    now.push(file(index, key, nv));
                    n.next();
                }
                (None, None) => break,
            }
        }
        changed.push((first + i, now));
    }
    if changed.is_empty() {
        return None;
    }
    let last_old = old.0.last().map_or(0, |(s, _)| *s as usize + 1);
    let slots = last_old.max(first + new.len());
    let mut out: Vec<(u32, Arc<str>)> =
        Vec::with_capacity(old.0.len() + changed.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut changed = changed.into_iter().peekable();
    for slot in 0..slots {
        match changed.next_if(|(s, _)| *s == slot) {
            Some((_, now)) => {
                let tag = u32::try_from(slot).unwrap_or(u32::MAX);
                out.extend(now.into_iter().map(|v| (tag, v)));
            }
            None => out.extend(old.slot(slot).iter().cloned()),
        }
    }
    Some(Filed(out.into_boxed_slice()))
}

/// The keys filed under `value`, sorted (tests).
#[cfg(test)]
pub(super) fn keys_of(index: &Index, value: &str) -> Vec<String> {
    let mut keys: Vec<String> = index
        .get(value)
        .map(|s| s.iter().map(|k| k.to_string()).collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|s| s.to_string()).collect()
    }

    /// An update that keeps the values does not touch the index at all, and allocates no new
    /// [`Filed`]. Proven by tampering: the value's set was removed behind the index's back, and
    /// stays removed.
    #[test]
    fn refile_with_unchanged_values_does_not_touch_the_index() {
        let key: Arc<str> = "k".into();
        let mut index = Index::new();
        let filed = refile(
            [&mut index],
            0,
            &key,
            &Filed::default(),
            &[strings(&["a", "b"])],
        )
        .expect("filed under new values");
        index.clear();
        assert_eq!(
            refile([&mut index], 0, &key, &filed, &[strings(&["a", "b"])]),
            None
        );
        assert!(index.is_empty());
    }

    /// With several values only the differing ones move: `b` (kept) is left alone.
    #[test]
    fn refile_moves_only_the_values_that_changed() {
        let key: Arc<str> = "k".into();
        let other: Arc<str> = "other".into();
        let mut index = Index::new();
        refile(
            [&mut index],
            0,
            &other,
            &Filed::default(),
            &[strings(&["a"])],
        );
        let filed = refile(
            [&mut index],
            0,
            &key,
            &Filed::default(),
            &[strings(&["a", "b"])],
        )
        .expect("filed");
        index.get_mut("b").expect("b is filed").clear();
        let filed = refile([&mut index], 0, &key, &filed, &[strings(&["b", "c"])]).expect("moved");
        assert_eq!(keys_of(&index, "a"), ["other"]);
        assert!(
            keys_of(&index, "b").is_empty(),
            "the kept value was touched"
        );
        assert_eq!(keys_of(&index, "c"), ["k"]);
        assert_eq!(filed.per_slot(1), [["b", "c"]]);
        let filed = refile([&mut index], 0, &key, &filed, &[strings(&[])]).expect("moved");
        assert!(!index.contains_key("c"), "empty sets are removed");
        assert_eq!(filed, Filed::default());
    }

    /// Values are the index's own keys: an entry filed under a value another entry brought
    /// shares that value's allocation.
    #[test]
    fn filed_values_share_the_index_keys() {
        let mut index = Index::new();
        let a = refile(
            [&mut index],
            0,
            &"a".into(),
            &Filed::default(),
            &[strings(&["ns"])],
        )
        .expect("filed");
        let b = refile(
            [&mut index],
            0,
            &"b".into(),
            &Filed::default(),
            &[strings(&["ns"])],
        )
        .expect("filed");
        let (shared, _) = index.get_key_value("ns").expect("ns is filed");
        assert!(Arc::ptr_eq(&a.slot(0)[0].1, shared));
        assert!(Arc::ptr_eq(&b.slot(0)[0].1, shared));
    }

    /// Slots filed later (an indexer added to a populated cache) go after the existing ones;
    /// the existing slots are kept, and unfiling takes the key out of every slot.
    #[test]
    fn later_slots_extend_an_entry_and_unfile_clears_every_slot() {
        let key: Arc<str> = "k".into();
        let (mut first, mut second, mut third) = (Index::new(), Index::new(), Index::new());
        let filed = refile(
            [&mut first, &mut second],
            0,
            &key,
            &Filed::default(),
            &[strings(&["x"]), strings(&["p", "q"])],
        )
        .expect("filed");
        let filed = refile([&mut third], 2, &key, &filed, &[strings(&["z"])]).expect("extended");
        assert_eq!(filed.per_slot(3), [vec!["x"], vec!["p", "q"], vec!["z"]]);
        let filed = refile([&mut second], 1, &key, &filed, &[strings(&["q"])]).expect("changed");
        assert_eq!(filed.per_slot(3), [vec!["x"], vec!["q"], vec!["z"]]);
        assert!(keys_of(&second, "p").is_empty());
        filed.unfile([&mut first, &mut second, &mut third], &key);
        assert!(first.is_empty() && second.is_empty() && third.is_empty());
    }
}
