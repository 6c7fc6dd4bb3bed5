//! Event handlers: the [`ResourceEventHandler`] trait, a closure-based builder, and client-go's
//! filtering handler.

use std::fmt;
use std::sync::Arc;

use crate::ObjectOrTombstone;

/// Receives notifications from a shared informer (client-go's `ResourceEventHandler`).
///
/// Contract (as client-go's): each registered handler is called from its own listener, one
/// notification at a time, in the order the informer produced them. By the time a handler is
/// called the informer's cache already reflects the change (or a later one): handlers see the
/// *history* of an object only at the granularity the informer observed it, and may miss
/// intermediate states. Objects are shared (`Arc`) with the cache: treat them as read-only.
///
/// Every method has a no-op default, so implement only what you need.
pub trait ResourceEventHandler<K>: Send + Sync + 'static {
    /// An object appeared. `is_in_initial_list` is true when it is part of the informer's initial
    /// list (or, for a handler added late, of the cache replayed to it).
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let _ = (obj, is_in_initial_list);
    }
    /// An object changed, or a resync re-delivered it (then `old` and `new` have the same
    /// resource version).
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }
    /// An object was deleted. It is a [`ObjectOrTombstone::Tombstone`] when the deletion was
    /// only noticed by a relist, so the final state is unknown.
    fn on_delete(&self, obj: &ObjectOrTombstone<K>) {
        let _ = obj;
    }
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&ObjectOrTombstone<K>) + Send + Sync>;

/// A handler built from closures (client-go's `ResourceEventHandlerFuncs`); missing ones do
/// nothing.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::informer::ResourceEventHandlerFuncs;
/// let handler = ResourceEventHandlerFuncs::<Pod>::new()
///     .on_add(|pod, initial| println!("add {:?} (initial list: {initial})", pod.metadata.name))
///     .on_delete(|obj| println!("delete {:?}", obj.key()));
/// ```
pub struct ResourceEventHandlerFuncs<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for ResourceEventHandlerFuncs<K> {
    fn default() -> Self {
        Self {
            add: None,
            update: None,
            delete: None,
        }
    }
}

impl<K> fmt::Debug for ResourceEventHandlerFuncs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEventHandlerFuncs")
            .field("on_add", &self.add.is_some())
            .field("on_update", &self.update.is_some())
            .field("on_delete", &self.delete.is_some())
            .finish()
    }
}

impl<K> ResourceEventHandlerFuncs<K> {
    /// A handler that does nothing until closures are set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the add closure.
    #[must_use]
    pub fn on_add(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }
    /// Sets the update closure.
    #[must_use]
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }
    /// Sets the delete closure.
    #[must_use]
    pub fn on_delete(mut self, f: impl Fn(&ObjectOrTombstone<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> ResourceEventHandler<K> for ResourceEventHandlerFuncs<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_in_initial_list)
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new)
        }
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<K>) {
        if let Some(f) = &self.delete {
            f(obj)
        }
    }
}

/// client-go's `FilteringResourceEventHandler`: passes on only objects the filter accepts, and
/// turns an update that crosses the filter into an add (now accepted) or a delete (no longer
/// accepted).
///
/// A tombstone is filtered by the last state it carries; a tombstone that carries none is
/// passed on (the filter cannot judge it, and dropping a delete would leak state downstream).
pub struct FilteringResourceEventHandler<K, H> {
    filter: Box<dyn Fn(&K) -> bool + Send + Sync>,
    handler: H,
}

impl<K, H> fmt::Debug for FilteringResourceEventHandler<K, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteringResourceEventHandler")
            .finish_non_exhaustive()
    }
}

impl<K, H> FilteringResourceEventHandler<K, H> {
    /// Wraps `handler` behind `filter`.
    pub fn new(filter: impl Fn(&K) -> bool + Send + Sync + 'static, handler: H) -> Self {
        Self {
            filter: Box::new(filter),
            handler,
        }
    }
}

impl<K: Send + Sync + 'static, H: ResourceEventHandler<K>> ResourceEventHandler<K>
    for FilteringResourceEventHandler<K, H>
{
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if (self.filter)(obj) {
            self.handler.on_add(obj, is_in_initial_list);
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        match ((self.filter)(old), (self.filter)(new)) {
            (true, true) => self.handler.on_update(old, new),
            (false, true) => self.handler.on_add(new, false),
            (true, false) => self
                .handler
                .on_delete(&ObjectOrTombstone::Object(old.clone())),
            (false, false) => {}
        }
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<K>) {
        if obj.object().is_none_or(|o| (self.filter)(o)) {
            self.handler.on_delete(obj);
        }
    }
}

impl<K, H: ResourceEventHandler<K> + ?Sized> ResourceEventHandler<K> for Arc<H> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        (**self).on_add(obj, is_in_initial_list)
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        (**self).on_update(old, new)
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<K>) {
        (**self).on_delete(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DeletedFinalStateUnknown;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;
    use parking_lot::Mutex;

    fn cm(name: &str, keep: bool) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some([("keep".to_string(), keep.to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    fn keep(c: &ConfigMap) -> bool {
        c.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("keep"))
            .map(String::as_str)
            == Some("true")
    }

    fn recorder() -> (
        Arc<Mutex<Vec<String>>>,
        ResourceEventHandlerFuncs<ConfigMap>,
    ) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let (a, u, d) = (log.clone(), log.clone(), log.clone());
        let h = ResourceEventHandlerFuncs::new()
            .on_add(move |o: &Arc<ConfigMap>, i| {
                a.lock()
                    .push(format!("add {} {i}", o.metadata.name.as_deref().unwrap()))
            })
            .on_update(move |_, n: &Arc<ConfigMap>| {
                u.lock()
                    .push(format!("update {}", n.metadata.name.as_deref().unwrap()))
            })
            .on_delete(move |o: &ObjectOrTombstone<ConfigMap>| {
                d.lock().push(format!("delete {}", o.key().unwrap()))
            });
        (log, h)
    }

    #[test]
    fn filtering_handler_turns_crossing_updates_into_add_or_delete() {
        let (log, h) = recorder();
        let f = FilteringResourceEventHandler::new(keep, h);
        f.on_add(&cm("a", true), true);
        f.on_add(&cm("b", false), true);
        f.on_update(&cm("a", true), &cm("a", true));
        f.on_update(&cm("b", false), &cm("b", true));
        f.on_update(&cm("a", true), &cm("a", false));
        f.on_update(&cm("c", false), &cm("c", false));
        f.on_delete(&ObjectOrTombstone::Object(cm("d", false)));
        f.on_delete(&ObjectOrTombstone::Object(cm("e", true)));
        f.on_delete(&ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
            key: "f".into(),
            obj: None,
        }));
        f.on_delete(&ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
            key: "g".into(),
            obj: Some(cm("g", false)),
        }));
        assert_eq!(
            *log.lock(),
            [
                "add a true",
                "update a",
                "add b false",
                "delete a",
                "delete e",
                "delete f"
            ]
        );
    }

    #[test]
    fn funcs_without_closures_do_nothing() {
        let h = ResourceEventHandlerFuncs::<ConfigMap>::new();
        ResourceEventHandler::on_add(&h, &cm("a", true), false);
        ResourceEventHandler::on_update(&h, &cm("a", true), &cm("a", true));
        ResourceEventHandler::on_delete(&h, &ObjectOrTombstone::Object(cm("a", true)));
        assert!(format!("{h:?}").contains("on_add: false"));
    }
}
