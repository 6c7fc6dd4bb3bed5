//! The controllers the server runs inside itself, as kube-controller-manager runs them next to
//! a real kube-apiserver: the garbage collector ([`gc`]), the namespace controller
//! ([`namespace`]), the service account controller ([`service_accounts`]), the root CA
//! publisher ([`root_ca`], with [`ServerConfig::tls`]) and the ClusterRole aggregation
//! controller ([`aggregation`], with [`ServerConfig::rbac`]), and what
//! kube-apiserver keeps itself: the `kubernetes` Service and its endpoints
//! ([`kubernetes_service`]). Each is switchable ([`ServerConfig::garbage_collector`],
//! [`ServerConfig::namespace_controller`], [`ServerConfig::service_account_controller`],
//! [`ServerConfig::root_ca_publisher`], [`ServerConfig::kubernetes_service`]; all on by
//! default but the root CA publisher, which needs TLS and is on in
//! [`ServerConfig::standalone`]).
//!
//! They are event-driven, not polling: one task follows the store's event history (woken by
//! every new revision, reading the events after the last one it processed), updates its
//! indexes and queues the objects an event concerns, then works the queue. Writes go through
//! the same [`Api`] paths and admission as HTTP requests ([`admitted`]: watchers see them,
//! webhooks and policies may change or refuse them; `managedFields` name the manager
//! `kube-controller-manager`, as on a real cluster).
//!
//! **Delay bound**: a write is acted on as soon as the task is scheduled after it (the only
//! timer is a failed write's retry, [`Retries`]) — on a multi-threaded runtime, well under a
//! millisecond of work per event, so a test polling for the outcome over HTTP sees it in its
//! next poll. A cascade of `n` levels takes `n` rounds of the loop.
//!
//! [`ServerConfig::garbage_collector`]: crate::ServerConfig::garbage_collector
//! [`ServerConfig::rbac`]: crate::ServerConfig::rbac
//! [`ServerConfig::tls`]: crate::ServerConfig::tls
//! [`ServerConfig::root_ca_publisher`]: crate::ServerConfig::root_ca_publisher
//! [`ServerConfig::standalone`]: crate::ServerConfig::standalone
//! [`ServerConfig::namespace_controller`]: crate::ServerConfig::namespace_controller
//! [`ServerConfig::service_account_controller`]: crate::ServerConfig::service_account_controller
//! [`ServerConfig::kubernetes_service`]: crate::ServerConfig::kubernetes_service

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::api::Api;
use crate::context::Context;
use crate::objects::Writer;
use crate::patch::PatchType;
use crate::resource::ResourceInfo;
use crate::store::{ReadError, StoredEvent, StoredObject};

mod admitted;
pub(crate) mod aggregation;
pub(crate) mod gc;
pub(crate) mod kubernetes_service;
pub(crate) mod namespace;
pub(crate) mod root_ca;
pub(crate) mod service_accounts;

/// Most events read from the history in one step.
const BATCH: usize = 512;

/// The field manager of the controllers' writes (kube-controller-manager's user agent prefix).
pub(crate) const MANAGER: &str = "kube-controller-manager";

/// A controller fed by the store's events.
trait Controller: Send {
    /// Takes in one event (updates indexes, queues work); cheap.
    fn observe(&mut self, api: &Api, event: &StoredEvent);
    /// Rebuilds the indexes from the live state (at start, and when events were compacted
    /// away before they were read).
    fn resync(&mut self, api: &Api);
    /// Works the queue, writing through the API as a client would (admission sees the
    /// writes, [`admitted`]); returns whether anything was done.
    fn work<'a>(&'a mut self, ctx: &'a Context) -> BoxFuture<'a, bool>;
    /// When a failed key is due again ([`Retries`]).
    fn next_retry(&self) -> Option<Instant>;
}

/// Keys whose work failed (a write refused by admission, a webhook that could not be reached),
/// each tried again after a delay doubling from 5 ms to 1,000 s, as client-go's default
/// controller rate limiter spaces a key's retries; a key is forgotten once its work succeeds.
#[derive(Debug)]
struct Retries<K> {
    /// Each failing key: its failures in a row, and when it is due again (`None` once taken
    /// back into the queue).
    keys: std::collections::BTreeMap<K, (u32, Option<Instant>)>,
}

impl<K> Default for Retries<K> {
    fn default() -> Self {
        Retries {
            keys: std::collections::BTreeMap::new(),
        }
    }
}

/// The first retry's delay, and the longest.
const RETRY_FIRST: Duration = Duration::from_millis(5);
const RETRY_MAX: Duration = Duration::from_secs(1000);

impl<K: Ord + Clone> Retries<K> {
    /// Records how the work of `key` went: a failure schedules it again, a success forgets it.
    fn after(&mut self, key: &K, failed: bool) {
        if !failed {
            self.keys.remove(key);
            return;
        }
        let failures = self.keys.get(key).map_or(0, |(n, _)| *n);
        let delay = RETRY_FIRST
            .saturating_mul(1u32 << failures.min(31))
            .min(RETRY_MAX);
        let due = Instant::now() + delay;
        self.keys.insert(key.clone(), (failures + 1, Some(due)));
    }

    /// Forgets `key` (its object is gone).
    fn forget<Q>(&mut self, key: &Q)
    where
        K: std::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.keys.remove(key);
    }

    /// The keys due by now, taken (they stay known until they succeed).
    fn take_due(&mut self) -> Vec<K> {
        let now = Instant::now();
        let mut due = Vec::new();
        for (key, (_, at)) in self.keys.iter_mut() {
            if at.is_some_and(|t| t <= now) {
                *at = None;
                due.push(key.clone());
            }
        }
        due
    }

    /// When the next key is due.
    fn next(&self) -> Option<Instant> {
        self.keys.values().filter_map(|(_, at)| *at).min()
    }
}

/// A first-in first-out queue of keys (namespace or object names) holding each key once
/// until it is taken: what the controllers work from.
#[derive(Default)]
struct KeyQueue {
    order: VecDeque<String>,
    queued: BTreeSet<String>,
}

impl KeyQueue {
    /// Queues `key` unless it is already waiting.
    fn push(&mut self, key: &str) {
        if self.queued.insert(key.to_string()) {
            self.order.push_back(key.to_string());
        }
    }

    /// Takes the oldest key.
    fn pop(&mut self) -> Option<String> {
        let key = self.order.pop_front()?;
        self.queued.remove(&key);
        Some(key)
    }

    /// Drops everything waiting and queues every namespace the store holds (a controller's
    /// resync when its work is per namespace).
    fn refill_with_namespaces(&mut self, api: &Api) {
        *self = KeyQueue::default();
        if let Ok((_, objs)) = api.store.list("namespaces", None, "", "") {
            for o in objs.iter() {
                self.push(&o.name);
            }
        }
    }
}

/// Which controllers to run.
#[derive(Debug, Clone)]
pub(crate) struct Switches {
    /// The garbage collector.
    pub gc: bool,
    /// The namespace controller.
    pub namespaces: bool,
    /// The service account controller.
    pub service_accounts: bool,
    /// The `kubernetes` Service, its target port (the port the server listens on).
    pub kubernetes_service: Option<u16>,
    /// The ClusterRole aggregation controller (with RBAC).
    pub aggregation: bool,
    /// The root CA publisher, the CA (PEM) it publishes.
    pub root_ca: Option<String>,
}

/// Starts the controllers `on` asks for; `None` when all are off. Each first catches up with
/// the state as it is, before this returns (so a server's start-up objects — the system
/// namespaces' `default` service accounts — exist when `start` hands the server out); then
/// one task follows the events.
pub(crate) async fn start(
    ctx: Arc<Context>,
    on: Switches,
    shutdown: CancellationToken,
) -> Option<JoinHandle<()>> {
    let api = &ctx.api;
    let mut controllers: Vec<Box<dyn Controller>> = Vec::new();
    if on.gc {
        controllers.push(Box::new(gc::GarbageCollector::default()));
    }
    if on.namespaces {
        controllers.push(Box::new(namespace::NamespaceController::default()));
    }
    if on.service_accounts {
        controllers.push(Box::new(
            service_accounts::ServiceAccountController::default(),
        ));
    }
    if on.aggregation {
        controllers.push(Box::new(aggregation::Aggregation::default()));
    }
    if let Some(ca) = on.root_ca {
        controllers.push(Box::new(root_ca::RootCaPublisher::new(ca)));
    }
    if let Some(port) = on.kubernetes_service {
        controllers.push(Box::new(kubernetes_service::KubernetesService::new(port)));
    }
    if controllers.is_empty() {
        return None;
    }
    for c in controllers.iter_mut() {
        c.resync(api);
        c.work(&ctx).await;
    }
    Some(tokio::spawn(run(ctx, controllers, shutdown)))
}

async fn run(
    ctx: Arc<Context>,
    mut controllers: Vec<Box<dyn Controller>>,
    shutdown: CancellationToken,
) {
    let api = &ctx.api;
    let mut rx = api.store.subscribe();
    rx.borrow_and_update();
    let mut cursor = api.store.revision();
    for c in controllers.iter_mut() {
        c.resync(api);
    }
    loop {
        for c in controllers.iter_mut() {
            c.work(&ctx).await;
        }
        rx.borrow_and_update();
        loop {
            match api.store.events_after(cursor, BATCH) {
                Ok((events, next)) => {
                    for e in &events {
                        for c in controllers.iter_mut() {
                            c.observe(api, e);
                        }
                    }
                    cursor = next;
                    if events.len() < BATCH {
                        break;
                    }
                }
                Err(ReadError::Compacted { .. }) | Err(ReadError::Future { .. }) => {
                    cursor = api.store.revision();
                    for c in controllers.iter_mut() {
                        c.resync(api);
                    }
                    break;
                }
            }
            tokio::task::yield_now().await;
        }
        let mut busy = false;
        for c in controllers.iter_mut() {
            busy |= c.work(&ctx).await;
        }
        if busy {
            // Our own writes produced events: read them before sleeping.
            tokio::task::yield_now().await;
            continue;
        }
        let retry = controllers.iter().filter_map(|c| c.next_retry()).min();
        let retry_due = async {
            match retry {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { return },
            _ = retry_due => {}
            _ = shutdown.cancelled() => return,
        }
    }
}

/// Whether `obj` is being deleted (its `deletionTimestamp` is set), read from its bytes.
fn being_deleted(obj: &StoredObject) -> bool {
    memchr::memmem::find(&obj.bytes, b"\"deletionTimestamp\"").is_some()
}

/// Whether the namespace `name` exists and is not being deleted.
fn namespace_live(api: &Api, name: &str) -> bool {
    api.store
        .get("namespaces", name)
        .is_some_and(|ns| !being_deleted(&ns))
}

/// The served resource with this `plural` or `plural.group` (a store resource name).
fn resource_named(api: &Api, group_resource: &str) -> Option<Arc<ResourceInfo>> {
    api.registry
        .all()
        .into_iter()
        .find(|r| r.group_resource() == group_resource)
}

fn writer(subresource: Option<&str>) -> Writer {
    Writer {
        manager: MANAGER.into(),
        subresource: subresource.map(str::to_string),
    }
}

/// `metadata.namespace` as the Api takes it.
fn ns_arg(namespace: &str) -> Option<&str> {
    (!namespace.is_empty()).then_some(namespace)
}

/// Replaces (or removes, when empty) the list at `/metadata/<field>` of the object with this
/// uid and resourceVersion, by a JSON patch whose `test` operations make it a no-op when the
/// object changed meanwhile (the next event brings it back).
async fn patch_metadata_list(
    w: &admitted::Writes<'_>,
    res: &ResourceInfo,
    obj: &StoredObject,
    field: &str,
    list: Vec<Value>,
) -> bool {
    let path = format!("/metadata/{field}");
    let change = if list.is_empty() {
        json!({"op": "remove", "path": path})
    } else {
        json!({"op": "replace", "path": path, "value": list})
    };
    let patch = json!([
        {"op": "test", "path": "/metadata/uid", "value": obj.uid},
        {"op": "test", "path": "/metadata/resourceVersion", "value": obj.resource_version.to_string()},
        change,
    ]);
    let body = patch.to_string();
    w.patch(
        res,
        ns_arg(&obj.namespace),
        &obj.name,
        PatchType::Json,
        body.as_bytes(),
        &writer(None),
    )
    .await
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_failing_key_waits_twice_as_long_each_time_up_to_the_cap_and_is_forgotten_on_success()
    {
        let mut r: Retries<String> = Retries::default();
        let key = "k".to_string();
        assert_eq!(r.next(), None);
        let mut waits = Vec::new();
        for _ in 0..5 {
            let start = Instant::now();
            r.after(&key, true);
            let due = r.next().unwrap();
            waits.push(due - start);
            assert!(r.take_due().is_empty(), "not due before its time");
            tokio::time::sleep_until(due).await;
            assert_eq!(r.take_due(), vec![key.clone()]);
            assert_eq!(r.next(), None, "taken back into the queue");
        }
        let ms = |n| Duration::from_millis(n);
        assert_eq!(waits, [ms(5), ms(10), ms(20), ms(40), ms(80)]);
        for _ in 0..40 {
            r.after(&key, true);
        }
        assert_eq!(r.next().unwrap() - Instant::now(), RETRY_MAX);
        // a success forgets it: its next failure starts again from the first delay
        r.after(&key, false);
        assert_eq!(r.next(), None);
        r.after(&key, true);
        assert_eq!(r.next().unwrap() - Instant::now(), RETRY_FIRST);
    }
}
