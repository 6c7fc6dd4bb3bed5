//! `Delta`, `Deltas` and `DeltaType`: what a [`DeltaFifo`](super::DeltaFifo) accumulates per key.

use std::fmt;
use std::sync::Arc;

use crate::object::ObjectOrTombstone;

/// The kind of change a [`Delta`] records (client-go's `DeltaType`).
///
/// ```
/// use kinformer::queue::DeltaType;
/// assert_eq!(DeltaType::Replaced.to_string(), "Replaced");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// The object was created (watch `ADDED`).
    Added,
    /// The object was modified (watch `MODIFIED`).
    Updated,
    /// The object was deleted (watch `DELETED`), or a relist no longer contains it (then the
    /// delta carries a [`DeletedFinalStateUnknown`](crate::DeletedFinalStateUnknown)).
    Deleted,
    /// The object was part of a relist (`Replace`); it may or may not have changed. Only emitted
    /// when [`DeltaFifoOptions::emit_delta_type_replaced`](super::DeltaFifoOptions) is set,
    /// otherwise a relist emits [`DeltaType::Sync`].
    Replaced,
    /// A periodic resync re-delivers an object the consumer already knows (or, for
    /// compatibility, a relist when `Replaced` is not emitted).
    Sync,
}

impl DeltaType {
    /// client-go's spelling of the type (`"Added"`, `"Updated"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "Added",
            Self::Updated => "Updated",
            Self::Deleted => "Deleted",
            Self::Replaced => "Replaced",
            Self::Sync => "Sync",
        }
    }
}

impl fmt::Display for DeltaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change to one object: its type, and the object's state *after* the change (for a
/// deletion, its final state before it went away, possibly a tombstone).
#[derive(Debug)]
pub struct Delta<K> {
    /// What happened.
    pub delta_type: DeltaType,
    /// The object after the change, or a tombstone for a deletion whose final state is unknown.
    pub object: ObjectOrTombstone<K>,
}

impl<K> Delta<K> {
    /// A delta carrying an object.
    pub fn new(delta_type: DeltaType, object: Arc<K>) -> Self {
        Self {
            delta_type,
            object: ObjectOrTombstone::Object(object),
        }
    }
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        Self {
            delta_type: self.delta_type,
            object: self.object.clone(),
        }
    }
}

impl<K> PartialEq for Delta<K> {
    /// Same type and the same object (by identity, see [`ObjectOrTombstone`]'s `PartialEq`).
    fn eq(&self, other: &Self) -> bool {
        self.delta_type == other.delta_type && self.object == other.object
    }
}

/// Every change to one object since it was last popped, oldest first (client-go's `Deltas`).
///
/// A `Deltas` handed out by a [`DeltaFifo`](super::DeltaFifo) is never empty.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::queue::{Delta, DeltaType, Deltas};
/// let a = Arc::new(ConfigMap::default());
/// let deltas = Deltas::from(vec![Delta::new(DeltaType::Added, a.clone()), Delta::new(DeltaType::Updated, a)]);
/// assert_eq!(deltas.oldest().unwrap().delta_type, DeltaType::Added);
/// assert_eq!(deltas.newest().unwrap().delta_type, DeltaType::Updated);
/// assert_eq!(deltas.len(), 2);
/// ```
#[derive(Debug)]
pub struct Deltas<K>(Vec<Delta<K>>);

impl<K> Deltas<K> {
    /// An empty list.
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// The oldest delta, or `None` when empty.
    pub fn oldest(&self) -> Option<&Delta<K>> {
        self.0.first()
    }

    /// The newest delta, or `None` when empty.
    pub fn newest(&self) -> Option<&Delta<K>> {
        self.0.last()
    }

    /// The deltas, oldest first.
    pub fn iter(&self) -> std::slice::Iter<'_, Delta<K>> {
        self.0.iter()
    }

    /// How many deltas there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The deltas as a slice, oldest first.
    pub fn as_slice(&self) -> &[Delta<K>] {
        &self.0
    }

    /// The underlying vector, oldest first.
    pub fn into_vec(self) -> Vec<Delta<K>> {
        self.0
    }

    /// Appends `delta`, collapsing two consecutive deletions into one (client-go's
    /// `dedupDeltas`/`isDeletionDup`): when both the newest delta and `delta` are `Deleted`, the
    /// list does not grow; the newer one replaces the older only if the older carries a
    /// tombstone, so a real deletion always wins over a tombstone.
    pub(crate) fn push_dedup(&mut self, delta: Delta<K>) {
        if delta.delta_type == DeltaType::Deleted
            && let Some(last) = self.0.last_mut()
            && last.delta_type == DeltaType::Deleted
        {
            if last.object.is_tombstone() {
                *last = delta;
            }
            return;
        }
        self.0.push(delta);
    }
}

impl<K> Default for Deltas<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> Clone for Deltas<K> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<K> PartialEq for Deltas<K> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<K> From<Vec<Delta<K>>> for Deltas<K> {
    fn from(deltas: Vec<Delta<K>>) -> Self {
        Self(deltas)
    }
}

impl<K> IntoIterator for Deltas<K> {
    type Item = Delta<K>;
    type IntoIter = std::vec::IntoIter<Delta<K>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a, K> IntoIterator for &'a Deltas<K> {
    type Item = &'a Delta<K>;
    type IntoIter = std::slice::Iter<'a, Delta<K>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::DeletedFinalStateUnknown;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn tombstone(obj: &Arc<ConfigMap>) -> Delta<ConfigMap> {
        Delta {
            delta_type: DeltaType::Deleted,
            object: DeletedFinalStateUnknown {
                key: "k".into(),
                obj: Some(obj.clone()),
            }
            .into(),
        }
    }

    #[test]
    fn real_deletion_replaces_a_trailing_tombstone() {
        let o = Arc::new(ConfigMap::default());
        let mut d = Deltas::new();
        d.push_dedup(tombstone(&o));
        d.push_dedup(Delta::new(DeltaType::Deleted, o.clone()));
        assert_eq!(d.len(), 1);
        assert!(!d.newest().unwrap().object.is_tombstone());
    }

    #[test]
    fn tombstone_after_real_deletion_is_dropped() {
        let o = Arc::new(ConfigMap::default());
        let mut d = Deltas::new();
        d.push_dedup(Delta::new(DeltaType::Deleted, o.clone()));
        d.push_dedup(tombstone(&o));
        assert_eq!(d.len(), 1);
        assert!(!d.newest().unwrap().object.is_tombstone());
    }

    #[test]
    fn second_real_deletion_keeps_the_first() {
        let first = Arc::new(ConfigMap::default());
        let second = Arc::new(ConfigMap::default());
        let mut d = Deltas::new();
        d.push_dedup(Delta::new(DeltaType::Deleted, first.clone()));
        d.push_dedup(Delta::new(DeltaType::Deleted, second));
        assert_eq!(d.as_slice(), &[Delta::new(DeltaType::Deleted, first)]);
    }

    #[test]
    fn non_deletions_always_append() {
        let o = Arc::new(ConfigMap::default());
        let mut d = Deltas::new();
        d.push_dedup(Delta::new(DeltaType::Sync, o.clone()));
        d.push_dedup(Delta::new(DeltaType::Sync, o.clone()));
        d.push_dedup(Delta::new(DeltaType::Deleted, o.clone()));
        d.push_dedup(Delta::new(DeltaType::Added, o));
        assert_eq!(d.len(), 4);
    }
}
