//! The namespace controller, as kube-controller-manager's
//! (`pkg/controller/namespace/deletion`): for a namespace being deleted whose
//! `spec.finalizers` still holds `kubernetes`, it deletes every object of every namespaced
//! kind in it (custom resources included; background propagation), reports what is left in
//! the namespace's conditions (`NamespaceContentRemaining`: `Some resources are remaining:
//! configmaps. has 1 resource instances`; `NamespaceFinalizersRemaining`: `Some content in the
//! namespace has finalizers remaining: example.com/x in 1 resource instances`;
//! `NamespaceDeletionContentFailure` when a delete was refused, an admission webhook's say:
//! `Failed to delete all resource types, 1 remaining: admission webhook "x" denied the request:
//! ...`, and then no count for that resource, as kube's; the others in their "ok" form), and
//! once nothing is left removes `kubernetes` through `/finalize`, which removes the namespace
//! when it has no other finalizer.
//!
//! It acts again on every change in a namespace being terminated (an object's finalizer
//! removed, an object gone), instead of kube's re-queue after an estimate.

use std::collections::{BTreeMap, HashSet, VecDeque};

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::admitted::{Identity, Writes};
use super::{Controller, Retries, being_deleted, writer};
use crate::api::Api;
use crate::context::Context;
use crate::objects::namespace::{KUBERNETES_FINALIZER, spec_finalizers};
use crate::objects::{DeleteOptions, Propagation, UpdateMode, finalizers_of, now_rfc3339};
use crate::store::{EventType, StoredEvent};

/// The namespaces being terminated and the queue.
#[derive(Debug, Default)]
pub(crate) struct NamespaceController {
    /// Names of the namespaces seen with a `deletionTimestamp`.
    terminating: HashSet<String>,
    queue: VecDeque<String>,
    /// Namespaces whose writes failed, to try again.
    retries: Retries<String>,
}

/// Condition types in kube's order, with their "ok" reason and message.
const CONDITIONS: [(&str, &str, &str); 5] = [
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
];

impl NamespaceController {
    fn enqueue(&mut self, name: &str) {
        if !self.queue.iter().any(|n| n == name) {
            self.queue.push_back(name.to_string());
        }
    }

    /// One pass over a namespace; returns whether it wrote.
    async fn process(&mut self, w: &Writes<'_>, name: &str) -> bool {
        let api = w.api();
        let Some(ns_res) = api.registry.find("", "v1", "namespaces") else {
            return false;
        };
        let Some(ns) = api.store.get(&ns_res.group_resource(), name) else {
            self.terminating.remove(name);
            return false;
        };
        let Value::Object(mut obj) = ns.to_value() else {
            return false;
        };
        let deleting = obj
            .get("metadata")
            .and_then(|m| m.get("deletionTimestamp"))
            .is_some();
        if !deleting {
            self.terminating.remove(name);
            return false;
        }
        self.terminating.insert(name.to_string());
        let finalizers = spec_finalizers(&obj);
        if !finalizers.iter().any(|f| f == KUBERNETES_FINALIZER) {
            return false;
        }
        let mut wrote = false;
        // Delete the content, then count what is left.
        let mut remaining: BTreeMap<String, usize> = BTreeMap::new();
        let mut by_finalizer: BTreeMap<String, usize> = BTreeMap::new();
        // a resource whose content could not all be deleted (a webhook refused): its first
        // error, and no count of what remains (as kube's deleteAllContent)
        let mut errors: Vec<String> = Vec::new();
        for res in api.registry.all() {
            // a custom resource's other served versions hold the same objects
            if !res.namespaced() || res.create_only || res.storage_version.is_some() {
                continue;
            }
            let gr = res.group_resource();
            let prefix = format!("{name}/");
            let Ok((_, objs)) = api.store.list(&gr, None, &prefix, "") else {
                continue;
            };
            let mut failed = None;
            for o in objs.iter() {
                let v = o.to_value();
                if v["metadata"].get("deletionTimestamp").is_none() {
                    let mut opts = DeleteOptions::propagation(Propagation::Background);
                    opts.preconditions.uid = Some(o.uid.clone());
                    match w.delete(&res, Some(name), &o.name, &opts).await {
                        Ok(_) => wrote = true,
                        // gone or replaced meanwhile: its event brings the namespace back
                        Err(e) if e.code == 404 || e.code == 409 => {}
                        Err(e) => {
                            failed.get_or_insert(e.message);
                        }
                    }
                }
            }
            if let Some(message) = failed {
                errors.push(message);
                continue;
            }
            let Ok((_, left)) = api.store.list(&gr, None, &prefix, "") else {
                continue;
            };
            if left.is_empty() {
                continue;
            }
            remaining.insert(format!("{}.{}", res.plural, res.group), left.len());
            for o in left.iter() {
                if let Some(meta) = o.to_value()["metadata"].as_object() {
                    for f in finalizers_of(meta) {
                        *by_finalizer.entry(f).or_default() += 1;
                    }
                }
            }
        }
        let mut failing: Vec<(&str, String, String)> = Vec::new();
        if !errors.is_empty() {
            errors.sort();
            failing.push((
                "NamespaceDeletionContentFailure",
                "ContentDeletionFailed".into(),
                format!(
                    "Failed to delete all resource types, {} remaining: {}",
                    errors.len(),
                    errors.join(", ")
                ),
            ));
        }
        if !remaining.is_empty() {
            // Sorted as formatted, as kube sorts them.
            let mut items: Vec<String> = remaining
                .iter()
                .map(|(r, n)| format!("{r} has {n} resource instances"))
                .collect();
            items.sort();
            failing.push((
                "NamespaceContentRemaining",
                "SomeResourcesRemain".into(),
                format!("Some resources are remaining: {}", items.join(", ")),
            ));
        }
        if !by_finalizer.is_empty() {
            let mut items: Vec<String> = by_finalizer
                .iter()
                .map(|(f, n)| format!("{f} in {n} resource instances"))
                .collect();
            items.sort();
            failing.push((
                "NamespaceFinalizersRemaining",
                "SomeFinalizersRemain".into(),
                format!(
                    "Some content in the namespace has finalizers remaining: {}",
                    items.join(", ")
                ),
            ));
        }
        if update_conditions(&mut obj, &failing) {
            let status = writer(Some("status"));
            let mode = UpdateMode::Status;
            match w
                .update(&ns_res, None, name, obj.clone(), mode, &status)
                .await
            {
                Ok(updated) => {
                    wrote = true;
                    if let Value::Object(o) = updated.to_value() {
                        obj = o;
                    }
                }
                Err(_) => return wrote,
            }
        }
        if !remaining.is_empty() || !errors.is_empty() {
            return wrote;
        }
        // Everything is gone: take our finalizer out.
        let keep: Vec<Value> = finalizers
            .iter()
            .filter(|f| *f != KUBERNETES_FINALIZER)
            .map(|f| Value::String(f.clone()))
            .collect();
        if let Some(Value::Object(spec)) = obj.get_mut("spec") {
            spec.insert("finalizers".into(), Value::Array(keep));
        }
        let finalize = writer(Some("finalize"));
        let mode = UpdateMode::Finalize;
        wrote
            | w.update(&ns_res, None, name, obj, mode, &finalize)
                .await
                .is_ok()
    }
}

/// kube's `updateConditions`: every condition type present, the failing ones as given, the
/// others in their "ok" form; `lastTransitionTime` changes only with the status. Returns
/// whether anything changed.
fn update_conditions(obj: &mut Map<String, Value>, failing: &[(&str, String, String)]) -> bool {
    let status = obj.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let Value::Object(status) = status else {
        return false;
    };
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !conditions.is_array() {
        *conditions = Value::Array(Vec::new());
    }
    let Value::Array(conditions) = conditions else {
        return false;
    };
    let mut changed = false;
    for (ty, ok_reason, ok_message) in CONDITIONS {
        let (st, reason, message) = match failing.iter().find(|(t, _, _)| *t == ty) {
            Some((_, r, m)) => ("True", r.clone(), m.clone()),
            None => ("False", ok_reason.to_string(), ok_message.to_string()),
        };
        let existing = conditions
            .iter_mut()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(ty));
        match existing {
            None => {
                conditions.push(json!({
                    "type": ty,
                    "status": st,
                    "lastTransitionTime": now_rfc3339(),
                    "reason": reason,
                    "message": message,
                }));
                changed = true;
            }
            Some(c) => {
                let same = c.get("status").and_then(Value::as_str) == Some(st)
                    && c.get("reason").and_then(Value::as_str) == Some(reason.as_str())
                    && c.get("message").and_then(Value::as_str) == Some(message.as_str());
                if !same {
                    if c.get("status").and_then(Value::as_str) != Some(st) {
                        c["lastTransitionTime"] = Value::String(now_rfc3339());
                    }
                    c["status"] = Value::String(st.into());
                    c["reason"] = Value::String(reason);
                    c["message"] = Value::String(message);
                    changed = true;
                }
            }
        }
    }
    changed
}

impl Controller for NamespaceController {
    fn observe(&mut self, _api: &Api, event: &StoredEvent) {
        let obj = &event.object;
        if &*event.resource == "namespaces" {
            if event.event_type == EventType::Deleted {
                self.terminating.remove(&obj.name);
            } else if being_deleted(obj) {
                self.enqueue(&obj.name.clone());
            }
        } else if !obj.namespace.is_empty() && self.terminating.contains(&obj.namespace) {
            let ns = obj.namespace.clone();
            self.enqueue(&ns);
        }
    }

    fn resync(&mut self, api: &Api) {
        *self = NamespaceController::default();
        let Ok((_, objs)) = api.store.list("namespaces", None, "", "") else {
            return;
        };
        for o in objs.iter() {
            if being_deleted(o) {
                self.enqueue(&o.name.clone());
            }
        }
    }

    fn work<'a>(&'a mut self, ctx: &'a Context) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let w = Writes::new(ctx, Identity::Controller("namespace-controller"));
            for name in self.retries.take_due() {
                self.enqueue(&name);
            }
            let mut wrote = false;
            while let Some(name) = self.queue.pop_front() {
                wrote |= self.process(&w, &name).await;
                self.retries.after(&name, w.take_failed());
            }
            wrote
        })
    }

    fn next_retry(&self) -> Option<Instant> {
        self.retries.next()
    }
}
