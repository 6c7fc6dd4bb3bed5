//! The root CA publisher: every namespace has a ConfigMap `kube-root-ca.crt` holding the
//! cluster's CA (`data["ca.crt"]`, the PEM the kubeconfig trusts) and the annotation
//! `kubernetes.io/description`, as kube-controller-manager's `root-ca-cert-publisher` keeps it
//! on every real cluster. Pods read it through the `kube-api-access-<random>` volume the
//! ServiceAccount admission adds. As there:
//!
//! - it is created when a namespace appears (and when an active namespace changes), and
//!   again when deleted; a create refused because the namespace is gone or terminating is
//!   not retried;
//! - a changed copy whose `data` is not exactly `{"ca.crt": <the CA>}`, or whose description
//!   annotation is empty, is updated back (other labels and annotations are kept).

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::admitted::{Identity, Writes};
use super::{Controller, KeyQueue, Retries, being_deleted, writer};
use crate::api::Api;
use crate::context::Context;
use crate::objects::UpdateMode;
use crate::store::{EventType, StoredEvent};

/// The ConfigMap's name.
const NAME: &str = "kube-root-ca.crt";
/// The annotation saying what it is for, and its value (kube-controller-manager's words).
const DESCRIPTION_KEY: &str = "kubernetes.io/description";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver \
    when using internal endpoints such as the internal service IP or kubernetes.default.svc. \
    No other usage is guaranteed across distributions of Kubernetes clusters.";

/// See the module docs.
pub(crate) struct RootCaPublisher {
    /// The CA certificate (PEM) published.
    ca: String,
    queue: KeyQueue,
    /// Namespaces whose write failed, to try again.
    retries: Retries<String>,
}

impl RootCaPublisher {
    pub(crate) fn new(ca: String) -> Self {
        RootCaPublisher {
            ca,
            queue: KeyQueue::default(),
            retries: Retries::default(),
        }
    }

    /// Creates the ConfigMap in `namespace` when missing, puts its data and description back
    /// when changed; whether it wrote.
    async fn sync(&self, w: &Writes<'_>, namespace: &str) -> bool {
        let api = w.api();
        let Some(res) = api.registry.find("", "v1", "configmaps") else {
            return false;
        };
        let data = json!({"ca.crt": self.ca});
        let Ok(current) = api.get(&res, Some(namespace), NAME) else {
            if api.store.get("namespaces", namespace).is_none() {
                return false;
            }
            let Value::Object(body) = json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": NAME,
                    "namespace": namespace,
                    "annotations": {DESCRIPTION_KEY: DESCRIPTION},
                },
                "data": data,
            }) else {
                return false;
            };
            // 404 or 403 (the namespace gone or terminating meanwhile), 409 (created
            // meanwhile): nothing to retry, as kube-controller-manager does not.
            return w
                .create(&res, Some(namespace), body, &writer(None))
                .await
                .is_ok();
        };
        let Value::Object(mut current) = current.to_value() else {
            return false;
        };
        let described = current
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(DESCRIPTION_KEY))
            .and_then(Value::as_str)
            .is_some_and(|d| !d.is_empty());
        if described && current.get("data") == Some(&data) {
            return false;
        }
        current.insert("data".into(), data);
        if let Some(Value::Object(meta)) = current.get_mut("metadata") {
            let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
            if !annotations.is_object() {
                *annotations = json!({});
            }
            annotations[DESCRIPTION_KEY] = DESCRIPTION.into();
        }
        // Guarded by the resourceVersion read above: a 409 means someone wrote meanwhile, and
        // their event brings the namespace back into the queue.
        w.update(
            &res,
            Some(namespace),
            NAME,
            current,
            UpdateMode::Main,
            &writer(None),
        )
        .await
        .is_ok()
    }
}

impl Controller for RootCaPublisher {
    fn observe(&mut self, _api: &Api, event: &StoredEvent) {
        let obj = &event.object;
        match &*event.resource {
            // kube-controller-manager queues every added namespace, and an updated one only
            // while it is active (not terminating).
            "namespaces" => match event.event_type {
                EventType::Added => self.queue.push(&obj.name),
                EventType::Modified if !being_deleted(obj) => self.queue.push(&obj.name),
                _ => {}
            },
            "configmaps" if obj.name == NAME && event.event_type != EventType::Added => {
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
            let w = Writes::new(ctx, Identity::Controller("root-ca-cert-publisher"));
            for ns in self.retries.take_due() {
                self.queue.push(&ns);
            }
            let mut wrote = false;
            while let Some(ns) = self.queue.pop() {
                wrote |= self.sync(&w, &ns).await;
                self.retries.after(&ns, w.take_failed());
            }
            wrote
        })
    }

    fn next_retry(&self) -> Option<Instant> {
        self.retries.next()
    }
}
