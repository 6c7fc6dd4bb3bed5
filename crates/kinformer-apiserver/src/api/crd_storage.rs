//! What a CustomResourceDefinition's spec change does to its stored objects, as kube-apiserver
//! 1.36 does it: objects stay in storage as they were written, but every read decodes them
//! through the CRD's current structural schemas (the schema coercer and the defaulter of the
//! version each object is stored in: unknown fields pruned, non-nullable nulls dropped,
//! defaults set), so a default the CRD adds shows on every object at once, with its
//! resourceVersion unchanged, and a field it stops declaring disappears (and comes back if it
//! is declared again). The resource's storage and watch cache are built again: open watches
//! end without an event, and a watch from an older resourceVersion is 410 Gone, so an informer
//! lists again and sees the objects as the new schema shows them.
//!
//! Here the store keeps each object as the current schemas show it (decoded once, when the
//! CRD changes, rather than on every read), and the version as written aside while the two
//! differ, so the next change decodes from what was written. A write over such an object
//! stores it even when nothing else changed (what kube-apiserver compares with is the version
//! in etcd, without the new defaults).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use super::Api;
use crate::objects::rebuilt;
use crate::resource::ResourceInfo;
use crate::store::{Mutation, StoredObject};

/// The state [`Api::sync_crd`] keeps per CustomResourceDefinition.
#[derive(Debug, Default)]
pub(crate) struct CrdStorage {
    /// Per CRD name, the spec and accepted names its resource is served with.
    served: Mutex<HashMap<String, Value>>,
    /// Per resource (`plural.group`) and key, objects as written where the current schemas
    /// show them otherwise (the store holds what they show).
    as_written: Mutex<HashMap<String, HashMap<String, Arc<StoredObject>>>>,
}

impl CrdStorage {
    /// Whether the live object `o` of `resource` is stored otherwise than the schemas show it
    /// (a write over it is stored even when it changes nothing else).
    pub(crate) fn shown_otherwise(&self, resource: &str, o: &StoredObject) -> bool {
        self.as_written
            .lock()
            .get(resource)
            .and_then(|m| m.get(&o.key))
            .is_some_and(|w| w.resource_version == o.resource_version)
    }
}

/// What kube-apiserver compares to decide whether a CRD change rebuilds its resource's storage
/// (`updateCustomResourceDefinition`): the spec and the accepted names.
fn served_form(crd: &Value) -> Value {
    serde_json::json!({
        "spec": crd.get("spec").cloned().unwrap_or(Value::Null),
        "acceptedNames": crd.pointer("/status/acceptedNames").cloned().unwrap_or(Value::Null),
    })
}

impl Api {
    /// Serves the resource CRD `name` defines, or, when the CRD is gone, stops serving it and
    /// deletes its objects (watchers see them DELETED), as the real server's CRD finalizer does.
    pub(super) fn sync_crd(&self, crd_res: &ResourceInfo, name: &str) {
        let crd = self
            .store
            .get(&crd_res.group_resource(), name)
            .map(|o| o.to_value());
        let mut infos = crd
            .as_ref()
            .map(crate::crd::resource_infos)
            .unwrap_or_default();
        // A CRD never replaces a built-in resource (approved protected groups could name one).
        infos.retain(|i| {
            self.registry
                .find(&i.group, &i.version, &i.plural)
                .is_none_or(|r| r.crd_name.is_some())
        });
        // the storage version first, or nothing
        if infos.first().is_some_and(|i| i.storage_version.is_some()) {
            infos.clear();
        }
        match infos.first() {
            Some(info) => {
                if let Some(old) = self.registry.unregister_crd(name)
                    && (&old.group, &old.plural) != (&info.group, &info.plural)
                {
                    self.delete_all(&old);
                    self.crd_gone(name, &old.group_resource());
                }
                self.registry.register_crd(infos.clone());
                if let Some(crd) = &crd {
                    self.crd_changed(name, crd, &infos);
                }
            }
            None => {
                if let Some(old) = self.registry.unregister_crd(name) {
                    self.delete_all(&old);
                    self.crd_gone(name, &old.group_resource());
                }
            }
        }
    }

    /// Removes every object of `res` (finalizers are not waited for).
    fn delete_all(&self, res: &ResourceInfo) {
        let gr = res.group_resource();
        let Ok((_, objs)) = self.store.list(&gr, None, "", "") else {
            return;
        };
        for o in objs.iter() {
            let _ = self.store.mutate(&gr, &o.key, |current, rev| {
                Ok(match current {
                    Some(c) => {
                        let last = Arc::new(c.at_revision(rev));
                        Mutation::Delete(last, ())
                    }
                    None => Mutation::Nothing(()),
                })
            });
        }
    }

    /// After CRD `name` (its object `crd`) was written and its resource's versions `infos`
    /// (storage version first) registered: when its spec or accepted names changed, its objects
    /// decoded by the new schemas and its watches restarted (see the module's documentation).
    pub(super) fn crd_changed(&self, name: &str, crd: &Value, infos: &[ResourceInfo]) {
        let now = served_form(crd);
        let before = self
            .crd_storage
            .served
            .lock()
            .insert(name.to_string(), now.clone());
        if before.is_none_or(|b| b == now) {
            return;
        }
        let Some(storage) = infos.first() else {
            return;
        };
        self.decode_again(storage, infos);
        self.store.restart_watches(&storage.group_resource());
    }

    /// Forgets CRD `name` and what was kept of its objects (`resource`: theirs).
    pub(super) fn crd_gone(&self, name: &str, resource: &str) {
        self.crd_storage.served.lock().remove(name);
        self.crd_storage.as_written.lock().remove(resource);
    }

    /// Every stored object of `storage`'s resource as the schemas of `infos` (one per served
    /// version) show it: decoded from what was written by the schema of the version it is
    /// stored in.
    fn decode_again(&self, storage: &ResourceInfo, infos: &[ResourceInfo]) {
        let gr = storage.group_resource();
        let Ok((_, objs)) = self.store.list(&gr, None, "", "") else {
            return;
        };
        // not held while the store is: a write's decision (under the store's lock) asks it
        let mut kept = self
            .crd_storage
            .as_written
            .lock()
            .remove(&gr)
            .unwrap_or_default();
        let mut still = HashMap::new();
        for live in objs {
            let written = match kept.remove(&live.key) {
                Some(w) if w.resource_version == live.resource_version => w,
                _ => live.clone(),
            };
            let as_written = written.to_value();
            let version = as_written
                .get("apiVersion")
                .and_then(Value::as_str)
                .and_then(|v| v.rsplit('/').next())
                .unwrap_or("");
            let schema = infos
                .iter()
                .find(|i| i.version == version)
                .and_then(|i| i.schema.as_deref());
            let mut shown = as_written.clone();
            if let (Some(schema), Some(m)) = (schema, shown.as_object_mut()) {
                crate::crd::coerce_stored(schema, m);
            }
            let next = if shown == as_written {
                written
            } else {
                still.insert(live.key.clone(), written.clone());
                Arc::new(rebuilt(storage, &written, &shown))
            };
            if next.bytes != live.bytes {
                self.store.replace_unrecorded(&gr, &live.key, next);
            }
        }
        if !still.is_empty() {
            self.crd_storage.as_written.lock().insert(gr, still);
        }
    }
}
