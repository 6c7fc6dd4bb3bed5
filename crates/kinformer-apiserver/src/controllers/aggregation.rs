//! The ClusterRole aggregation controller: a ClusterRole with an `aggregationRule` gets the
//! rules of every other ClusterRole its selectors pick (by name, each rule once), written by
//! server-side apply as kube-controller-manager's `clusterrole-aggregation-controller` writes
//! them; so the bootstrap `admin`, `edit` and `view` hold their rules, and a ClusterRole an
//! operator ships labelled `rbac.authorization.k8s.io/aggregate-to-edit: "true"` extends `edit`
//! at once.

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::admitted::{Identity, Writes};
use super::{Controller, KeyQueue, Retries};
use crate::api::Api;
use crate::context::Context;
use crate::objects::Writer;
use crate::store::StoredEvent;

/// The ClusterRoles' store name.
const CLUSTER_ROLES: &str = "clusterroles.rbac.authorization.k8s.io";
/// Most rounds of syncing every aggregated role in one go (roles aggregating roles that
/// aggregate in a cycle would otherwise never settle).
const MAX_ROUNDS: usize = 8;
/// The controller's field manager.
const MANAGER: &str = "clusterrole-aggregation-controller";

/// See the module docs.
#[derive(Default)]
pub(crate) struct Aggregation {
    queue: KeyQueue,
    /// Roles whose apply failed, to try again.
    retries: Retries<String>,
}

impl Aggregation {
    /// Queues every aggregated ClusterRole (any ClusterRole's change may concern each).
    fn enqueue_all(&mut self, api: &Api) {
        let Ok((_, objs)) = api.store.list(CLUSTER_ROLES, None, "", "") else {
            return;
        };
        for o in objs.iter() {
            if memchr::memmem::find(&o.bytes, b"\"aggregationRule\"").is_some() {
                self.queue.push(&o.name);
            }
        }
    }

    /// Applies the aggregated rules of `name`, when they differ from its own.
    async fn sync(w: &Writes<'_>, name: &str) -> bool {
        let api = w.api();
        let Some(role) = api.store.get(CLUSTER_ROLES, name) else {
            return false;
        };
        let role = role.to_value();
        let Some(selectors) = role
            .pointer("/aggregationRule/clusterRoleSelectors")
            .and_then(Value::as_array)
        else {
            return false;
        };
        let Ok((_, all)) = api.store.list(CLUSTER_ROLES, None, "", "") else {
            return false;
        };
        let mut rules: Vec<Value> = Vec::new();
        for selector in selectors {
            let Some(sel) = crate::admission::policy::label_selector(selector) else {
                // an invalid selector: the controller's sync fails and retries for ever
                return false;
            };
            // the store lists by name, as the controller sorts them
            for o in all
                .iter()
                .filter(|o| o.name != name && sel.matches(&o.labels))
            {
                let v = o.to_value();
                for rule in v
                    .get("rules")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if !rules.contains(rule) {
                        rules.push(rule.clone());
                    }
                }
            }
        }
        let current = role.get("rules").and_then(Value::as_array);
        if current.map_or(rules.is_empty(), |c| *c == rules) {
            return false;
        }
        let Some(res) = api
            .registry
            .find("rbac.authorization.k8s.io", "v1", "clusterroles")
        else {
            return false;
        };
        let body = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        });
        let writer = Writer {
            manager: MANAGER.into(),
            subresource: None,
        };
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        w.apply(&res, None, name, &bytes, &writer, true)
            .await
            .is_ok()
    }
}

impl Controller for Aggregation {
    fn observe(&mut self, api: &Api, event: &StoredEvent) {
        if &*event.resource == CLUSTER_ROLES {
            self.enqueue_all(api);
        }
    }

    fn resync(&mut self, api: &Api) {
        *self = Aggregation::default();
        self.enqueue_all(api);
    }

    /// Syncs the queued roles, and all of them again while that changed one (an aggregated
    /// role may aggregate another: `admin` takes `edit`'s rules, `edit` `view`'s), so that the
    /// roles are settled when it returns (at start, before the server is handed out).
    fn work<'a>(&'a mut self, ctx: &'a Context) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let w = Writes::new(ctx, Identity::Controller(MANAGER));
            for name in self.retries.take_due() {
                self.queue.push(&name);
            }
            let mut wrote = false;
            for _ in 0..MAX_ROUNDS {
                let mut round = false;
                while let Some(name) = self.queue.pop() {
                    round |= Self::sync(&w, &name).await;
                    self.retries.after(&name, w.take_failed());
                }
                if !round {
                    break;
                }
                wrote = true;
                self.enqueue_all(w.api());
            }
            wrote
        })
    }

    fn next_retry(&self) -> Option<Instant> {
        self.retries.next()
    }
}
