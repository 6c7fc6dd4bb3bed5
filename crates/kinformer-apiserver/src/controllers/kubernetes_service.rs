//! The `kubernetes` Service: what kube-apiserver's own `kubernetesservice` controller and
//! endpoint reconciler keep in the `default` namespace, so clients in a pod can reach the API
//! at `kubernetes.default.svc`, and so every cluster's Service, Endpoints and EndpointSlice
//! lists include it:
//!
//! - Service `kubernetes` (labels `component: apiserver`, `provider: kubernetes`), type
//!   `ClusterIP`, the first address of the service range (`10.96.0.1`), one port `https` 443
//!   whose target is the port this server listens on, no selector;
//! - Endpoints `kubernetes` (label `endpointslice.kubernetes.io/skip-mirror: "true"`) and
//!   EndpointSlice `kubernetes` (label `kubernetes.io/service-name: kubernetes`, `IPv4`, one
//!   ready endpoint): `127.0.0.1` and that port, named `https`.
//!
//! All three are written by the manager `kube-apiserver`, once the `default` namespace exists.
//! As there, a deleted one comes back, and an Endpoints or EndpointSlice whose addresses,
//! ports or labels were changed is reset; the Service is only re-created, never reconciled
//! (kube-apiserver stopped correcting it in 1.17). kube-apiserver does this on a 10-second
//! loop; here it happens on the event, so a test sees it at once.

use std::collections::{BTreeMap, BTreeSet};

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::admitted::{Identity, Writes};
use super::{Controller, Retries, namespace_live};
use crate::api::Api;
use crate::context::Context;
use crate::objects::{UpdateMode, Writer};
use crate::resource::ResourceInfo;
use crate::store::{EventType, StoredEvent, StoredObject};

/// The Service's name and namespace.
const NAME: &str = "kubernetes";
const NAMESPACE: &str = "default";
/// The Service's cluster IP: the first address of the service range.
const CLUSTER_IP: &str = "10.96.0.1";
/// The address the Endpoints and EndpointSlice give (the server listens on loopback).
const ADDRESS: &str = "127.0.0.1";
/// The field manager of kube-apiserver's own writes.
const MANAGER: &str = "kube-apiserver";

/// Which of the three objects to look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Service,
    Endpoints,
    Slice,
}

/// See the module docs.
pub(crate) struct KubernetesService {
    /// The port the server listens on (the Service's target port, the endpoints' port).
    port: u16,
    queue: BTreeSet<Part>,
    /// The resourceVersion of this controller's last write of each part: its own events are
    /// not acted on (a value the store normalises differently from `desired` cannot make it
    /// write again and again).
    own: BTreeMap<Part, u64>,
    /// Parts whose write failed, to try again (kube-apiserver's loop tries every 10 s).
    retries: Retries<Part>,
}

impl KubernetesService {
    pub(crate) fn new(port: u16) -> Self {
        KubernetesService {
            port,
            queue: BTreeSet::new(),
            own: BTreeMap::new(),
            retries: Retries::default(),
        }
    }

    fn resource(api: &Api, part: Part) -> Option<std::sync::Arc<ResourceInfo>> {
        match part {
            Part::Service => api.registry.find("", "v1", "services"),
            Part::Endpoints => api.registry.find("", "v1", "endpoints"),
            Part::Slice => api
                .registry
                .find("discovery.k8s.io", "v1", "endpointslices"),
        }
    }

    /// The object as kube-apiserver writes it.
    fn desired(&self, part: Part) -> Value {
        let port = self.port;
        match part {
            Part::Service => json!({
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": NAME,
                    "namespace": NAMESPACE,
                    "labels": {"component": "apiserver", "provider": "kubernetes"},
                },
                "spec": {
                    "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
                    "clusterIP": CLUSTER_IP,
                    "ipFamilyPolicy": "SingleStack",
                    "sessionAffinity": "None",
                    "type": "ClusterIP",
                },
            }),
            Part::Endpoints => json!({
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {
                    "name": NAME,
                    "namespace": NAMESPACE,
                    "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
                },
                "subsets": [{
                    "addresses": [{"ip": ADDRESS}],
                    "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
                }],
            }),
            Part::Slice => json!({
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": NAME,
                    "namespace": NAMESPACE,
                    "labels": {"kubernetes.io/service-name": NAME},
                },
                "addressType": "IPv4",
                "endpoints": [{"addresses": [ADDRESS], "conditions": {"ready": true}}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
            }),
        }
    }

    /// The fields kube-apiserver's reconciler compares (and resets) on an existing object.
    fn reconciled(part: Part) -> &'static [&'static str] {
        match part {
            Part::Service => &[],
            Part::Endpoints => &["subsets"],
            Part::Slice => &["endpoints", "ports", "addressType"],
        }
    }

    /// Creates the object when missing, resets its reconciled fields and labels when changed;
    /// whether it wrote.
    async fn ensure(&mut self, w: &Writes<'_>, part: Part) -> bool {
        let api = w.api();
        let Some(res) = Self::resource(api, part) else {
            return false;
        };
        if !namespace_live(api, NAMESPACE) {
            return false;
        }
        let writer = Writer {
            manager: MANAGER.into(),
            subresource: None,
        };
        let Value::Object(want) = self.desired(part) else {
            return false;
        };
        let Ok(current) = api.get(&res, Some(NAMESPACE), NAME) else {
            // 409 (created meanwhile) or 403 (namespace terminating meanwhile): nothing to retry.
            let created = w.create(&res, Some(NAMESPACE), want, &writer).await;
            return self.wrote(part, created);
        };
        let fields = Self::reconciled(part);
        if fields.is_empty() {
            return false;
        }
        let Value::Object(mut current) = current.to_value() else {
            return false;
        };
        let labels =
            |o: &Map<String, Value>| o.get("metadata").and_then(|m| m.get("labels")).cloned();
        let same = labels(&current) == labels(&want)
            && fields.iter().all(|f| current.get(*f) == want.get(*f));
        if same {
            return false;
        }
        for f in fields {
            match want.get(*f) {
                Some(v) => current.insert((*f).to_string(), v.clone()),
                None => current.remove(*f),
            };
        }
        if let (Some(Value::Object(meta)), Some(l)) = (current.get_mut("metadata"), labels(&want)) {
            meta.insert("labels".into(), l);
        }
        // The resourceVersion read above guards the update: a 409 means someone wrote
        // meanwhile, and their event brings this back.
        let result = w
            .update(
                &res,
                Some(NAMESPACE),
                NAME,
                current,
                UpdateMode::Main,
                &writer,
            )
            .await;
        self.wrote(part, result)
    }

    /// Remembers the resourceVersion of a successful write of `part`; whether it succeeded.
    fn wrote<E>(&mut self, part: Part, result: Result<std::sync::Arc<StoredObject>, E>) -> bool {
        match result {
            Ok(obj) => {
                self.own.insert(part, obj.resource_version);
                true
            }
            Err(_) => false,
        }
    }

    /// Queues `part` unless the event is this controller's own write.
    fn changed(&mut self, part: Part, event: &StoredEvent) {
        if event.event_type == EventType::Deleted
            || self.own.get(&part) != Some(&event.object.resource_version)
        {
            self.queue.insert(part);
        }
    }
}

impl Controller for KubernetesService {
    fn observe(&mut self, _api: &Api, event: &StoredEvent) {
        let obj = &event.object;
        match &*event.resource {
            "namespaces" if obj.name == NAMESPACE && event.event_type != EventType::Deleted => {
                self.queue
                    .extend([Part::Service, Part::Endpoints, Part::Slice]);
            }
            "services"
                if obj.namespace == NAMESPACE
                    && obj.name == NAME
                    && event.event_type == EventType::Deleted =>
            {
                self.queue.insert(Part::Service);
            }
            "endpoints" if obj.namespace == NAMESPACE && obj.name == NAME => {
                self.changed(Part::Endpoints, event);
            }
            "endpointslices.discovery.k8s.io" if obj.namespace == NAMESPACE && obj.name == NAME => {
                self.changed(Part::Slice, event);
            }
            _ => {}
        }
    }

    fn resync(&mut self, _api: &Api) {
        self.queue = [Part::Service, Part::Endpoints, Part::Slice].into();
    }

    fn work<'a>(&'a mut self, ctx: &'a Context) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let w = Writes::new(ctx, Identity::ApiServer);
            self.queue.extend(self.retries.take_due());
            let mut wrote = false;
            while let Some(part) = self.queue.pop_first() {
                wrote |= self.ensure(&w, part).await;
                self.retries.after(&part, w.take_failed());
            }
            wrote
        })
    }

    fn next_retry(&self) -> Option<Instant> {
        self.retries.next()
    }
}
