//! The garbage collector, as kube-controller-manager's (`pkg/controller/garbagecollector`):
//!
//! - **Background** (the default propagation): a dependent whose owners are all gone — no
//!   object of the reference's kind and name with the reference's uid; a reference to a uid
//!   that never existed is dangling too — is deleted (with its own orphan or foreground
//!   finalizer's policy if it has one, else background). A dependent with a live owner left
//!   only loses the dead references.
//! - **Foreground**: an owner being deleted with the `foregroundDeletion` finalizer has its
//!   dependents deleted (those that have dependents of their own in the foreground too);
//!   dependents with other live owners only lose the reference. The finalizer is removed once
//!   no dependent with `blockOwnerDeletion: true` is left, which removes the owner.
//! - **Orphan**: an owner being deleted with the `orphan` finalizer has its reference removed
//!   from every dependent, then the finalizer removed.
//!
//! Owners are resolved as kube does: the reference's `apiVersion` group and `kind` name a
//! served resource; a cluster-scoped owner is looked up by name, a namespaced one in the
//! dependent's namespace; it is the owner only if its uid is the reference's. Custom resources
//! are owners and dependents like any kind.
//!
//! Deliberate differences: a reference whose kind is not served, or a cluster-scoped dependent
//! naming a namespaced owner kind, keeps the dependent (kube retries the first and reports an
//! event for the second; neither deletes).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;

use super::admitted::{Identity, Writes};
use super::{Controller, Retries, being_deleted, ns_arg, patch_metadata_list, resource_named};
use crate::api::Api;
use crate::context::Context;
use crate::objects::{DeleteOptions, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Propagation};
use crate::resource::ResourceInfo;
use crate::store::{EventType, StoredEvent, StoredObject};

/// Where an object is stored.
#[derive(Debug, Clone)]
struct Node {
    /// Store resource name (`plural[.group]`).
    resource: Arc<str>,
    /// Storage key.
    key: String,
}

/// One `ownerReferences` entry.
#[derive(Debug, Clone)]
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    block: bool,
    /// The entry as stored (kept when the list is rewritten).
    raw: Value,
}

fn owner_refs(meta: &serde_json::Map<String, Value>) -> Vec<OwnerRef> {
    let Some(Value::Array(refs)) = meta.get("ownerReferences") else {
        return Vec::new();
    };
    refs.iter()
        .filter_map(|r| {
            let s = |f: &str| r.get(f).and_then(Value::as_str).map(str::to_string);
            Some(OwnerRef {
                api_version: s("apiVersion")?,
                kind: s("kind")?,
                name: s("name")?,
                uid: s("uid")?,
                block: r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true),
                raw: r.clone(),
            })
        })
        .collect()
}

/// The garbage collector's graph and queue.
#[derive(Debug, Default)]
pub(crate) struct GarbageCollector {
    /// Objects the collector may act on (dependents and owners being deleted), by uid.
    nodes: HashMap<String, Node>,
    /// Owner uid → uids of the live objects referencing it.
    dependents: HashMap<String, HashSet<String>>,
    /// Dependent uid → the owner uids it references.
    owners: HashMap<String, Vec<String>>,
    /// Uids to process, each once.
    queue: VecDeque<String>,
    queued: HashSet<String>,
    /// Uids whose write failed, to try again.
    retries: Retries<String>,
}

fn may_matter(obj: &StoredObject) -> bool {
    memchr::memmem::find(&obj.bytes, b"\"ownerReferences\"").is_some() || being_deleted(obj)
}

impl GarbageCollector {
    fn enqueue(&mut self, uid: &str) {
        if self.queued.insert(uid.to_string()) {
            self.queue.push_back(uid.to_string());
        }
    }

    fn forget(&mut self, uid: &str) {
        self.retries.forget(uid);
        self.nodes.remove(uid);
        for o in self.owners.remove(uid).unwrap_or_default() {
            if let Some(d) = self.dependents.get_mut(&o) {
                d.remove(uid);
                if d.is_empty() {
                    self.dependents.remove(&o);
                }
            }
            // An owner waiting for its dependents may be done now.
            if self.nodes.contains_key(&o) {
                self.enqueue(&o);
            }
        }
    }

    /// Indexes the current version of an object.
    fn track(&mut self, resource: &Arc<str>, obj: &StoredObject) {
        let known = self.nodes.contains_key(&obj.uid) || self.owners.contains_key(&obj.uid);
        if !known && !may_matter(obj) {
            return;
        }
        let Value::Object(v) = obj.to_value() else {
            return;
        };
        let meta = v
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let refs = owner_refs(&meta);
        let finalizers = crate::objects::finalizers_of(&meta);
        let gc_owner = meta.contains_key("deletionTimestamp")
            && finalizers
                .iter()
                .any(|f| f == ORPHAN_FINALIZER || f == FOREGROUND_FINALIZER);
        // Drop the old edges (queueing the owners that lose a dependent), add the new ones.
        self.forget(&obj.uid);
        let uids: Vec<String> = refs.iter().map(|r| r.uid.clone()).collect();
        for o in &uids {
            self.dependents
                .entry(o.clone())
                .or_default()
                .insert(obj.uid.clone());
            if self.nodes.contains_key(o) {
                self.enqueue(o);
            }
        }
        if !uids.is_empty() {
            self.owners.insert(obj.uid.clone(), uids);
        }
        if !refs.is_empty() || gc_owner {
            self.nodes.insert(
                obj.uid.clone(),
                Node {
                    resource: resource.clone(),
                    key: obj.key.clone(),
                },
            );
            self.enqueue(&obj.uid);
        }
    }

    /// One object, as `attemptToDeleteItem` / `processDeletingDependentsItem` /
    /// `orphanDependents` would. Returns whether it wrote.
    async fn process(&mut self, w: &Writes<'_>, uid: &str) -> bool {
        let api = w.api();
        let Some(node) = self.nodes.get(uid).cloned() else {
            return false;
        };
        let Some(res) = resource_named(api, &node.resource) else {
            return false;
        };
        let Some(obj) = api
            .store
            .get(&node.resource, &node.key)
            .filter(|o| o.uid == uid)
        else {
            return false;
        };
        let Value::Object(v) = obj.to_value() else {
            return false;
        };
        let meta = v
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let finalizers = crate::objects::finalizers_of(&meta);
        if meta.contains_key("deletionTimestamp") {
            if finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
                return self.orphan_dependents(w, &res, &obj, &finalizers).await;
            }
            if finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
                return self.deleting_dependents(w, &res, &obj, &finalizers).await;
            }
            return false;
        }
        let refs = owner_refs(&meta);
        if refs.is_empty() {
            return false;
        }
        self.attempt_to_delete(w, &res, &obj, &refs, &finalizers)
            .await
    }

    async fn attempt_to_delete(
        &mut self,
        w: &Writes<'_>,
        res: &ResourceInfo,
        obj: &StoredObject,
        refs: &[OwnerRef],
        finalizers: &[String],
    ) -> bool {
        let (mut solid, mut dead, mut waiting) = (0, Vec::new(), Vec::new());
        for r in refs {
            match owner_state(w.api(), res, obj, r) {
                OwnerState::Solid => solid += 1,
                OwnerState::Dangling => dead.push(r.uid.clone()),
                OwnerState::WaitingForDependents => waiting.push(r.uid.clone()),
            }
        }
        if solid > 0 {
            if dead.is_empty() && waiting.is_empty() {
                return false;
            }
            // Only the dead and waiting references go.
            let keep: Vec<Value> = refs
                .iter()
                .filter(|r| !dead.contains(&r.uid) && !waiting.contains(&r.uid))
                .map(|r| r.raw.clone())
                .collect();
            return patch_metadata_list(w, res, obj, "ownerReferences", keep).await;
        }
        let policy = if !waiting.is_empty() && self.dependents.contains_key(&obj.uid) {
            Propagation::Foreground
        } else if finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
            Propagation::Orphan
        } else if finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        let mut opts = DeleteOptions::propagation(policy);
        opts.preconditions.uid = Some(obj.uid.clone());
        w.delete(res, ns_arg(&obj.namespace), &obj.name, &opts)
            .await
            .is_ok()
    }

    /// The live dependents of `owner`, with their stored versions.
    fn live_dependents(&self, api: &Api, owner: &str) -> Vec<(Node, Arc<StoredObject>)> {
        let Some(deps) = self.dependents.get(owner) else {
            return Vec::new();
        };
        deps.iter()
            .filter_map(|d| {
                let n = self.nodes.get(d)?.clone();
                let o = api.store.get(&n.resource, &n.key).filter(|o| &o.uid == d)?;
                Some((n, o))
            })
            .collect()
    }

    async fn orphan_dependents(
        &mut self,
        w: &Writes<'_>,
        res: &ResourceInfo,
        owner: &StoredObject,
        finalizers: &[String],
    ) -> bool {
        let mut wrote = false;
        let mut left = false;
        let api = w.api();
        for (node, dep) in self.live_dependents(api, &owner.uid) {
            let Some(dep_res) = resource_named(api, &node.resource) else {
                continue;
            };
            let meta = dep.to_value()["metadata"].clone();
            let Some(meta) = meta.as_object() else {
                continue;
            };
            let refs = owner_refs(meta);
            let keep: Vec<Value> = refs
                .iter()
                .filter(|r| r.uid != owner.uid)
                .map(|r| r.raw.clone())
                .collect();
            if keep.len() == refs.len() {
                continue;
            }
            let ok = patch_metadata_list(w, &dep_res, &dep, "ownerReferences", keep).await;
            wrote |= ok;
            left |= !ok;
        }
        if left {
            return wrote;
        }
        remove_finalizer(w, res, owner, finalizers, ORPHAN_FINALIZER).await || wrote
    }

    async fn deleting_dependents(
        &mut self,
        w: &Writes<'_>,
        res: &ResourceInfo,
        owner: &StoredObject,
        finalizers: &[String],
    ) -> bool {
        let mut blocking = false;
        for (_, dep) in self.live_dependents(w.api(), &owner.uid) {
            let meta = dep.to_value()["metadata"].clone();
            let blocks = meta
                .as_object()
                .map(owner_refs)
                .unwrap_or_default()
                .iter()
                .any(|r| r.uid == owner.uid && r.block);
            blocking |= blocks;
            // Every dependent is looked at again: it sees its owner waiting for it.
            self.enqueue(&dep.uid);
        }
        if blocking {
            return false;
        }
        remove_finalizer(w, res, owner, finalizers, FOREGROUND_FINALIZER).await
    }
}

enum OwnerState {
    Solid,
    Dangling,
    WaitingForDependents,
}

/// Resolves one owner reference of `obj` (of resource `res`).
fn owner_state(api: &Api, res: &ResourceInfo, obj: &StoredObject, r: &OwnerRef) -> OwnerState {
    let group = r.api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let Some(owner_res) = api
        .registry
        .all()
        .into_iter()
        .find(|x| x.group == group && x.kind == r.kind && !x.create_only)
    else {
        return OwnerState::Solid;
    };
    if owner_res.namespaced() && !res.namespaced() {
        return OwnerState::Solid;
    }
    let key = crate::objects::storage_key(&owner_res, &obj.namespace, &r.name);
    let Some(owner) = api
        .store
        .get(&owner_res.group_resource(), &key)
        .filter(|o| o.uid == r.uid)
    else {
        return OwnerState::Dangling;
    };
    let v = owner.to_value();
    let meta = &v["metadata"];
    let waiting = meta.get("deletionTimestamp").is_some()
        && meta
            .get("finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|x| x == FOREGROUND_FINALIZER));
    if waiting {
        OwnerState::WaitingForDependents
    } else {
        OwnerState::Solid
    }
}

async fn remove_finalizer(
    w: &Writes<'_>,
    res: &ResourceInfo,
    obj: &StoredObject,
    finalizers: &[String],
    finalizer: &str,
) -> bool {
    let keep: Vec<Value> = finalizers
        .iter()
        .filter(|f| *f != finalizer)
        .map(|f| Value::String(f.clone()))
        .collect();
    patch_metadata_list(w, res, obj, "finalizers", keep).await
}

impl Controller for GarbageCollector {
    fn observe(&mut self, _api: &Api, event: &StoredEvent) {
        match event.event_type {
            EventType::Deleted => {
                let uid = event.object.uid.clone();
                self.forget(&uid);
                // Its dependents have lost an owner.
                let deps: Vec<String> = self
                    .dependents
                    .get(&uid)
                    .map(|d| d.iter().cloned().collect())
                    .unwrap_or_default();
                for d in deps {
                    self.enqueue(&d);
                }
            }
            EventType::Added | EventType::Modified => {
                self.track(&event.resource, &event.object);
            }
        }
    }

    fn resync(&mut self, api: &Api) {
        *self = GarbageCollector::default();
        // a custom resource's other served versions hold the same objects
        for res in api
            .registry
            .all()
            .iter()
            .filter(|r| r.storage_version.is_none())
        {
            let gr: Arc<str> = Arc::from(res.group_resource());
            let Ok((_, objs)) = api.store.list(&gr, None, "", "") else {
                continue;
            };
            for o in objs.iter() {
                self.track(&gr, o);
            }
        }
    }

    fn work<'a>(&'a mut self, ctx: &'a Context) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let w = Writes::new(ctx, Identity::Controller("generic-garbage-collector"));
            for uid in self.retries.take_due() {
                self.enqueue(&uid);
            }
            let mut wrote = false;
            while let Some(uid) = self.queue.pop_front() {
                self.queued.remove(&uid);
                wrote |= self.process(&w, &uid).await;
                self.retries.after(&uid, w.take_failed());
            }
            wrote
        })
    }

    fn next_retry(&self) -> Option<Instant> {
        self.retries.next()
    }
}
