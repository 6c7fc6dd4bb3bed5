//! [`Event`]: what an informer tells each of its listeners, handler or stream alike.

use std::sync::Arc;

use crate::ObjectOrTombstone;

/// One notification from an informer.
///
/// Handlers and [`EventStream`](super::EventStream)s receive the same notifications through the
/// same per-listener queue and bookkeeping: a handler is called with them
/// ([`ResourceEventHandler`](super::ResourceEventHandler)), a stream yields them.
pub enum Event<K> {
    /// An object appeared (`is_in_initial_list`: part of the initial list or cache replay).
    Add {
        /// The object.
        obj: Arc<K>,
        /// Whether it belongs to the initial list.
        is_in_initial_list: bool,
    },
    /// An object changed (or was resynced: same resource version).
    Update {
        /// The state before.
        old: Arc<K>,
        /// The state now.
        new: Arc<K>,
    },
    /// An object was deleted; a tombstone when its final state is unknown.
    Delete(ObjectOrTombstone<K>),
    /// Yielded once by a stream: every initial-list `Add` has been taken and the informer has
    /// synced. Everything after it is live. (Handlers are not called for it; their
    /// registration's [`has_synced`](super::ResourceEventHandlerRegistration::has_synced) says
    /// the same.)
    Synced,
}

impl<K> Event<K> {
    /// Whether this is an `Add` of the initial list (or of a late listener's cache replay).
    pub(crate) fn is_initial_add(&self) -> bool {
        matches!(
            self,
            Self::Add {
                is_in_initial_list: true,
                ..
            }
        )
    }
}

impl<K> Clone for Event<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Add {
                obj,
                is_in_initial_list,
            } => Self::Add {
                obj: obj.clone(),
                is_in_initial_list: *is_in_initial_list,
            },
            Self::Update { old, new } => Self::Update {
                old: old.clone(),
                new: new.clone(),
            },
            Self::Delete(o) => Self::Delete(o.clone()),
            Self::Synced => Self::Synced,
        }
    }
}

impl<K: std::fmt::Debug> std::fmt::Debug for Event<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Add {
                obj,
                is_in_initial_list,
            } => f
                .debug_struct("Add")
                .field("obj", obj)
                .field("is_in_initial_list", is_in_initial_list)
                .finish(),
            Self::Update { old, new } => f
                .debug_struct("Update")
                .field("old", old)
                .field("new", new)
                .finish(),
            Self::Delete(o) => f.debug_tuple("Delete").field(o).finish(),
            Self::Synced => f.write_str("Synced"),
        }
    }
}
