//! What a [`RealFifo`](super::RealFifo) holds and hands out.

use std::sync::Arc;

use crate::queue::{Delta, DeltaType};

/// One change to one object with the object's key, computed once when it was queued.
#[derive(Debug)]
pub struct KeyedDelta<K> {
    /// The object's key (a tombstone's own key for a deletion detected by a relist).
    pub key: String,
    /// The change.
    pub delta: Delta<K>,
}

impl<K> KeyedDelta<K> {
    /// The change's type.
    pub fn delta_type(&self) -> DeltaType {
        self.delta.delta_type
    }
}

impl<K> Clone for KeyedDelta<K> {
    fn clone(&self) -> Self {
        Self {
            key: self.key.clone(),
            delta: self.delta.clone(),
        }
    }
}

impl<K> PartialEq for KeyedDelta<K> {
    /// Same key and the same delta (objects by identity).
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.delta == other.delta
    }
}

/// A complete relist taken atomically (client-go's `ReplacedAllInfo`): the consumer replaces
/// its cache with `objects` and tells its handlers, deletions first.
#[derive(Debug)]
pub struct ReplacedAll<K> {
    /// The list's resource version.
    pub resource_version: String,
    /// Every listed object with its key, in list order, transformed.
    pub objects: Vec<(String, Arc<K>)>,
}

impl<K> Clone for ReplacedAll<K> {
    fn clone(&self) -> Self {
        Self {
            resource_version: self.resource_version.clone(),
            objects: self.objects.clone(),
        }
    }
}

impl<K> PartialEq for ReplacedAll<K> {
    /// Same resource version and the same keyed objects (by identity), in the same order.
    fn eq(&self, other: &Self) -> bool {
        self.resource_version == other.resource_version
            && self.objects.len() == other.objects.len()
            && self
                .objects
                .iter()
                .zip(&other.objects)
                .all(|((ka, a), (kb, b))| ka == kb && Arc::ptr_eq(a, b))
    }
}

/// What one `pop` or `pop_batch` of a [`RealFifo`](super::RealFifo) hands out.
///
/// A consumer applies [`Popped::Deltas`] to its cache in one transaction and then notifies its
/// handlers in the order given; the other variants stand alone, never batched with anything.
#[derive(Debug)]
pub enum Popped<K> {
    /// Changes to *distinct* keys, in arrival order: one from [`pop`](super::RealFifo::pop),
    /// one to `max_unique_keys` from [`pop_batch`](super::RealFifo::pop_batch). Their types
    /// are `Added`, `Updated`, `Deleted` (the object's final state, or a tombstone), and in
    /// per-object mode `Replaced` (a relist) and `Sync` (a resync). Never empty.
    Deltas(Vec<KeyedDelta<K>>),
    /// An atomic relist (client-go's `ReplacedAll`).
    ReplacedAll(ReplacedAll<K>),
    /// An atomic resync (client-go's `SyncAll`): re-deliver every cached object as an update.
    SyncAll,
    /// The watch reached this resource version without a change (client-go's `Bookmark`).
    Bookmark {
        /// The bookmark's resource version.
        resource_version: String,
    },
}

impl<K> Clone for Popped<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Deltas(d) => Self::Deltas(d.clone()),
            Self::ReplacedAll(r) => Self::ReplacedAll(r.clone()),
            Self::SyncAll => Self::SyncAll,
            Self::Bookmark { resource_version } => Self::Bookmark {
                resource_version: resource_version.clone(),
            },
        }
    }
}

impl<K> PartialEq for Popped<K> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Deltas(a), Self::Deltas(b)) => a == b,
            (Self::ReplacedAll(a), Self::ReplacedAll(b)) => a == b,
            (Self::SyncAll, Self::SyncAll) => true,
            (
                Self::Bookmark {
                    resource_version: a,
                },
                Self::Bookmark {
                    resource_version: b,
                },
            ) => a == b,
            _ => false,
        }
    }
}

/// One queued entry.
pub(super) enum Item<K> {
    Delta(KeyedDelta<K>),
    ReplacedAll(ReplacedAll<K>),
    SyncAll,
    Bookmark(String),
}

impl<K> Item<K> {
    /// How much the entry counts against the bound: its objects, at least one.
    pub(super) fn weight(&self) -> usize {
        match self {
            Self::ReplacedAll(r) => r.objects.len().max(1),
            Self::Delta(_) | Self::SyncAll | Self::Bookmark(_) => 1,
        }
    }

    /// The entry handed out alone.
    pub(super) fn into_popped(self) -> Popped<K> {
        match self {
            Self::Delta(d) => Popped::Deltas(vec![d]),
            Self::ReplacedAll(r) => Popped::ReplacedAll(r),
            Self::SyncAll => Popped::SyncAll,
            Self::Bookmark(resource_version) => Popped::Bookmark { resource_version },
        }
    }
}
