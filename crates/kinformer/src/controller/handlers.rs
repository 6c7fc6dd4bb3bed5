//! The event handlers a controller registers: they turn notifications into queue keys.
//!
//! * the primary resource enqueues its own key (a tombstone's key on a missed delete);
//! * an owned resource enqueues the key of its controlling owner of the primary kind
//!   (controller-runtime's `Owns`), old and new owner on an update;
//! * any other watched resource enqueues whatever keys a mapping function returns
//!   (controller-runtime's `Watches` with `EnqueueRequestsFromMapFunc`).
//!
//! As controller-runtime's handlers do since v0.23 (`WithLowPriorityWhenUnchanged`), adds from
//! an informer's initial list and resync updates (old and new resourceVersion equal) enqueue at
//! [`LOW_PRIORITY`]; every other event at priority 0. The FIFO queue ignores priorities.

use std::sync::Arc;

use kube::Resource;

use super::queue::ControllerQueue;
use crate::informer::ResourceEventHandler;
use crate::object::{ObjectOrTombstone, namespace_name_key};
use crate::workqueue::LOW_PRIORITY;

/// Maps a watched object to the keys of the primary objects to reconcile.
pub type MapFn<C> = Arc<dyn Fn(&C) -> Vec<String> + Send + Sync>;

/// The priority of an add: low for an object from the initial list.
fn add_priority(is_in_initial_list: bool) -> i32 {
    if is_in_initial_list { LOW_PRIORITY } else { 0 }
}

/// The priority of an update: low for a resync (the resourceVersion did not change).
fn update_priority<K: Resource>(old: &K, new: &K) -> i32 {
    if old.meta().resource_version == new.meta().resource_version {
        LOW_PRIORITY
    } else {
        0
    }
}

/// Enqueues a primary object's own key.
pub(crate) struct EnqueueOwn {
    pub(crate) queue: ControllerQueue,
}

impl EnqueueOwn {
    fn enqueue<K: Resource>(&self, obj: &K, priority: i32) {
        match crate::object::meta_namespace_key(obj) {
            Ok(key) => self.queue.add_with_priority(key, priority),
            Err(e) => {
                tracing::warn!(queue = %self.queue.name(), error = %e, "skipping an object without a key")
            }
        }
    }
}

impl<K: Resource + Send + Sync + 'static> ResourceEventHandler<K> for EnqueueOwn {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        self.enqueue(obj.as_ref(), add_priority(is_in_initial_list));
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        self.enqueue(new.as_ref(), update_priority(old.as_ref(), new.as_ref()));
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<K>) {
        // A tombstone carries the key even when its last state is unknown.
        match obj.key() {
            Ok(key) => self.queue.add(key),
            Err(e) => {
                tracing::warn!(queue = %self.queue.name(), error = %e, "skipping a deletion without a key")
            }
        }
    }
}

/// Enqueues the keys a mapping function returns for each watched object.
pub(crate) struct EnqueueMapped<C> {
    pub(crate) queue: ControllerQueue,
    pub(crate) map: MapFn<C>,
}

impl<C> EnqueueMapped<C> {
    fn enqueue(&self, obj: &C, priority: i32) {
        for key in (self.map)(obj) {
            self.queue.add_with_priority(key, priority);
        }
    }
}

impl<C: Resource + Send + Sync + 'static> ResourceEventHandler<C> for EnqueueMapped<C> {
    fn on_add(&self, obj: &Arc<C>, is_in_initial_list: bool) {
        self.enqueue(obj, add_priority(is_in_initial_list));
    }
    fn on_update(&self, old: &Arc<C>, new: &Arc<C>) {
        // Both: an object that moved to another owner must update the old one too.
        let priority = update_priority(old.as_ref(), new.as_ref());
        self.enqueue(old, priority);
        self.enqueue(new, priority);
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<C>) {
        // A tombstone without its last state cannot name an owner.
        if let Some(obj) = obj.object() {
            self.enqueue(obj, 0);
        }
    }
}

/// The mapping of controller-runtime's `Owns`: the key of `obj`'s controlling owner if that
/// owner is of `kind` in `api_version` (the owner lives in the child's namespace).
pub(crate) fn controller_owner_key<C: Resource>(
    obj: &C,
    api_version: &str,
    kind: &str,
) -> Option<String> {
    let meta = obj.meta();
    let owner = meta
        .owner_references
        .as_ref()?
        .iter()
        .find(|o| o.controller == Some(true))?;
    if owner.kind != kind || group_of(&owner.api_version) != group_of(api_version) {
        return None;
    }
    Some(namespace_name_key(
        meta.namespace.as_deref().unwrap_or(""),
        &owner.name,
    ))
}

/// The group of an `apiVersion` (`"apps/v1"` → `"apps"`, `"v1"` → `""`): owners match across
/// versions, as in controller-runtime.
fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::api::ObjectMeta;

    use super::*;

    fn child(owners: Vec<OwnerReference>) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("c".into()),
                namespace: Some("ns".into()),
                owner_references: Some(owners),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn owner(api_version: &str, kind: &str, name: &str, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: "u".into(),
            controller: Some(controller),
            ..Default::default()
        }
    }

    #[test]
    fn only_the_controlling_owner_of_the_primary_kind_counts() {
        let c = child(vec![
            owner("apps/v1", "Deployment", "not-controller", false),
            owner("apps/v1beta1", "Deployment", "web", true),
        ]);
        assert_eq!(
            controller_owner_key(&c, "apps/v1", "Deployment").as_deref(),
            Some("ns/web")
        );
        assert_eq!(controller_owner_key(&c, "apps/v1", "StatefulSet"), None);
        assert_eq!(controller_owner_key(&c, "batch/v1", "Deployment"), None);
        assert_eq!(
            controller_owner_key(&child(vec![]), "apps/v1", "Deployment"),
            None
        );
    }

    fn cm(name: &str, rv: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    /// controller-runtime's `WithLowPriorityWhenUnchanged`: initial-list adds and resyncs
    /// (same resourceVersion) are low priority, real events priority 0, for the own and the
    /// mapped handlers alike.
    #[tokio::test]
    async fn initial_list_and_resyncs_enqueue_at_low_priority() {
        let pq = crate::workqueue::PriorityQueue::<String>::new("");
        let queue = ControllerQueue::from(pq.clone());
        let own = EnqueueOwn {
            queue: queue.clone(),
        };
        let mapped = EnqueueMapped::<ConfigMap> {
            queue,
            map: Arc::new(|c: &ConfigMap| {
                vec![format!(
                    "owner-of-{}",
                    c.metadata.name.as_deref().unwrap_or("")
                )]
            }),
        };
        let next = || pq.try_get_with_priority().flatten();
        own.on_add(&cm("a", "1"), true);
        own.on_add(&cm("b", "1"), false);
        own.on_update(&cm("c", "5"), &cm("c", "5"));
        own.on_update(&cm("d", "5"), &cm("d", "6"));
        mapped.on_add(&cm("e", "1"), true);
        mapped.on_update(&cm("f", "2"), &cm("f", "3"));
        let mut got = Vec::new();
        while let Some((key, priority)) = next() {
            got.push((key, priority));
        }
        let want = [
            ("ns/b", 0),
            ("ns/d", 0),
            ("owner-of-f", 0),
            ("ns/a", LOW_PRIORITY),
            ("ns/c", LOW_PRIORITY),
            ("owner-of-e", LOW_PRIORITY),
        ];
        assert_eq!(got, want.map(|(k, p)| (k.to_owned(), p)));
    }
}
