//! The service account controller: every namespace that is not terminating has a `default`
//! ServiceAccount, created when the namespace appears and again when it is deleted, as
//! kube-controller-manager's `serviceaccount` controller keeps it — so `kubectl create token
//! default` and pods naming no service account work in any namespace, as on a real cluster.

use futures::future::BoxFuture;
use serde_json::json;
use tokio::time::Instant;

use super::admitted::{Identity, Writes};
use super::{Controller, KeyQueue, Retries, being_deleted, namespace_live, writer};
use crate::api::Api;
use crate::context::Context;
use crate::store::{EventType, StoredEvent};

/// The service account every namespace gets.
const DEFAULT: &str = "default";

/// See the module docs.
#[derive(Default)]
pub(crate) struct ServiceAccountController {
    queue: KeyQueue,
    /// Namespaces whose write failed, to try again.
    retries: Retries<String>,
}

impl ServiceAccountController {
    /// Creates `default` in `namespace` when the namespace is live and lacks it.
    async fn ensure(w: &Writes<'_>, namespace: &str) -> bool {
        let api = w.api();
        let Some(sa_res) = api.registry.find("", "v1", "serviceaccounts") else {
            return false;
        };
        if !namespace_live(api, namespace) || api.get(&sa_res, Some(namespace), DEFAULT).is_ok() {
            return false;
        }
        let body = json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT, "namespace": namespace},
        });
        let serde_json::Value::Object(body) = body else {
            return false;
        };
        // A 409 (created meanwhile) or a 403 (terminating meanwhile) is nothing to retry.
        w.create(&sa_res, Some(namespace), body, &writer(None))
            .await
            .is_ok()
    }
}

impl Controller for ServiceAccountController {
    fn observe(&mut self, _api: &Api, event: &StoredEvent) {
        let obj = &event.object;
        match &*event.resource {
            "namespaces" if event.event_type != EventType::Deleted && !being_deleted(obj) => {
                self.queue.push(&obj.name);
            }
            "serviceaccounts" if event.event_type == EventType::Deleted && obj.name == DEFAULT => {
                self.queue.push(&obj.namespace);
            }
            _ => {}
        }
    }

    fn resync(&mut self, api: &Api) {
        self.queue.refill_with_namespaces(api);
    }

    fn work<'a>(&'a mut self, ctx: &'a Context) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let w = Writes::new(ctx, Identity::Controller("service-account-controller"));
            for ns in self.retries.take_due() {
                self.queue.push(&ns);
            }
            let mut wrote = false;
            while let Some(ns) = self.queue.pop() {
                wrote |= Self::ensure(&w, &ns).await;
                self.retries.after(&ns, w.take_failed());
            }
            wrote
        })
    }

    fn next_retry(&self) -> Option<Instant> {
        self.retries.next()
    }
}
