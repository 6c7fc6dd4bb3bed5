//! Fault injection: make the server misbehave the way real API servers do, on purpose.
//!
//! Available from Rust ([`Faults`], from `RunningServer::faults()`) and over HTTP under
//! `/__kinformer/faults/...` (a path no Kubernetes client uses; see [`crate::http`]).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::status::ApiError;

/// A Kubernetes API verb, as the server classifies requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// GET one object.
    Get,
    /// GET a collection.
    List,
    /// GET a collection with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE one object.
    Delete,
    /// DELETE a collection.
    #[serde(rename = "deletecollection")]
    DeleteCollection,
}

impl Verb {
    /// The lowercase name (`list`, `deletecollection`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

/// "Fail the next `count` requests matching `verb` and `resource` with `code`."
///
/// ```
/// use kinformer_apiserver::{FailureRule, Verb};
/// let rule = FailureRule::new(503, 2).verb(Verb::List).resource("pods");
/// assert_eq!(rule.count, 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureRule {
    /// Only this verb (any verb when `None`).
    #[serde(default)]
    pub verb: Option<Verb>,
    /// Only this resource, as `plural` or `plural.group` (any when `None`).
    #[serde(default)]
    pub resource: Option<String>,
    /// HTTP code to answer with (500, 503, 429, 410, ...), with the matching real `Status`.
    pub code: u16,
    /// How many matching requests fail.
    pub count: u32,
    /// `Retry-After` for 429 and 503.
    #[serde(default)]
    pub retry_after_seconds: Option<u32>,
}

impl FailureRule {
    /// Fails the next `count` requests (any verb, any resource) with `code`.
    pub fn new(code: u16, count: u32) -> Self {
        FailureRule {
            verb: None,
            resource: None,
            code,
            count,
            retry_after_seconds: None,
        }
    }

    /// Restricts the rule to one verb.
    #[must_use]
    pub fn verb(mut self, verb: Verb) -> Self {
        self.verb = Some(verb);
        self
    }

    /// Restricts the rule to one resource (`pods`, `deployments.apps`).
    #[must_use]
    pub fn resource(mut self, resource: &str) -> Self {
        self.resource = Some(resource.to_string());
        self
    }

    /// Sets `Retry-After`.
    #[must_use]
    pub fn retry_after(mut self, seconds: u32) -> Self {
        self.retry_after_seconds = Some(seconds);
        self
    }
}

/// How the server misbehaves on streaming lists (watches with `sendInitialEvents=true`), the
/// ways real servers have been seen to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WatchListFault {
    /// Send the initial events, then close the stream without the `k8s.io/initial-events-end`
    /// bookmark (the aggregated server of kubernetes #140890).
    CloseBeforeEndBookmark,
    /// Send the initial events and carry on as a plain watch, never sending the end bookmark
    /// (a server that ignores `sendInitialEvents`).
    NoEndBookmark,
    /// Refuse the request with kube-apiserver's `422 Invalid` when its `WatchList` feature
    /// gate is off (`sendInitialEvents is forbidden for watch unless the WatchList feature
    /// gate is enabled`).
    Refuse,
}

/// The mutable fault state consulted by the HTTP layer and the watch streams.
#[derive(Debug)]
pub(crate) struct FaultState {
    rules: Mutex<Vec<FailureRule>>,
    latency: Mutex<Duration>,
    watch_delay: Mutex<Duration>,
    drop_tx: tokio::sync::watch::Sender<u64>,
    paused_tx: tokio::sync::watch::Sender<bool>,
    /// A streaming-list fault, and the API group it is limited to (`None`: every group).
    watch_list: Mutex<Option<(WatchListFault, Option<String>)>>,
}

impl Default for FaultState {
    fn default() -> Self {
        FaultState {
            rules: Mutex::new(Vec::new()),
            latency: Mutex::new(Duration::ZERO),
            watch_delay: Mutex::new(Duration::ZERO),
            drop_tx: tokio::sync::watch::channel(0).0,
            paused_tx: tokio::sync::watch::channel(false).0,
            watch_list: Mutex::new(None),
        }
    }
}

impl FaultState {
    /// If a rule matches this request, consumes one of its failures and returns the error.
    pub(crate) fn take_failure(&self, verb: Verb, resource: &str) -> Option<ApiError> {
        let mut rules = self.rules.lock();
        let idx = rules.iter().position(|r| {
            r.count > 0
                && r.verb.is_none_or(|v| v == verb)
                && r.resource.as_deref().is_none_or(|x| x == resource)
        })?;
        let rule = &mut rules[idx];
        rule.count -= 1;
        let err = ApiError::injected(rule.code, rule.retry_after_seconds);
        if rule.count == 0 {
            rules.remove(idx);
        }
        Some(err)
    }

    /// The streaming-list fault for a resource of API group `group` (`""`: the core group).
    pub(crate) fn watch_list_fault(&self, group: &str) -> Option<WatchListFault> {
        match &*self.watch_list.lock() {
            Some((fault, None)) => Some(*fault),
            Some((fault, Some(g))) if g == group => Some(*fault),
            _ => None,
        }
    }

    /// The latency added to every request.
    pub(crate) fn latency(&self) -> Duration {
        *self.latency.lock()
    }

    /// How long every watch event is held back before it is sent.
    pub(crate) fn watch_delay(&self) -> Duration {
        *self.watch_delay.lock()
    }

    /// A receiver that changes whenever all watches must be dropped.
    pub(crate) fn drop_signal(&self) -> tokio::sync::watch::Receiver<u64> {
        self.drop_tx.subscribe()
    }

    /// A receiver of the "watch delivery paused" flag.
    pub(crate) fn paused(&self) -> tokio::sync::watch::Receiver<bool> {
        self.paused_tx.subscribe()
    }
}

/// The fault-injection API of a running server. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Faults {
    state: Arc<FaultState>,
    store: Arc<crate::api::Api>,
}

impl Faults {
    pub(crate) fn new(state: Arc<FaultState>, store: Arc<crate::api::Api>) -> Self {
        Faults { state, store }
    }

    /// Closes every open watch stream (clients see the connection end and re-watch).
    pub fn drop_watches(&self) {
        self.state.drop_tx.send_modify(|e| *e += 1);
    }

    /// Adds a failure rule.
    pub fn fail_next(&self, rule: FailureRule) {
        self.state.rules.lock().push(rule);
    }

    /// Makes streaming lists (`sendInitialEvents=true` watches) misbehave as `fault` says, for
    /// the resources of API group `api_group` (`Some("")`: the core group) or of every group
    /// (`None`), until [`clear_watch_list_fault`](Self::clear_watch_list_fault) or
    /// [`clear`](Self::clear). Plain watches are unaffected.
    pub fn set_watch_list_fault(&self, fault: WatchListFault, api_group: Option<&str>) {
        *self.state.watch_list.lock() = Some((fault, api_group.map(str::to_owned)));
    }

    /// Streaming lists behave again.
    pub fn clear_watch_list_fault(&self) {
        *self.state.watch_list.lock() = None;
    }

    /// Delays every request (before it is served) by `latency`; zero turns it off.
    pub fn set_latency(&self, latency: Duration) {
        *self.state.latency.lock() = latency;
    }

    /// Delays watch delivery: every watch event (initial events and bookmarks too) is sent
    /// `delay` after the server read it from its history, in order, on every open and future
    /// watch; requests are not delayed. Like a watch cache lagging behind etcd: a client that
    /// writes and then reads its informer's cache sees its own write only `delay` later. Zero
    /// turns it off (events already held back are still sent after their delay).
    pub fn set_watch_delay(&self, delay: Duration) {
        *self.state.watch_delay.lock() = delay;
    }

    /// Compacts the history now: every resourceVersion older than the current one becomes
    /// 410 Gone. Returns the compaction revision.
    pub fn compact_now(&self) -> u64 {
        self.store.store.compact_now()
    }

    /// Like a restarted API server: the history is gone (old resourceVersions are 410 Gone) and
    /// every watch is dropped. Objects are kept.
    pub fn forget_history(&self) {
        self.store.store.compact_now();
        self.drop_watches();
    }

    /// Plants a divergence: removes one object from storage without a new resourceVersion,
    /// a watch event or a history entry (as a write lost by storage would). Informers keep it
    /// in their caches; a list at exactly their resourceVersion no longer has it, so their
    /// consistency check reports it. `resource` is the plural, with its group for
    /// non-core kinds (`"pods"`, `"deployments.apps"`); `namespace` is `None` for a
    /// cluster-scoped object. Returns whether the object was there.
    pub fn lose_object(&self, resource: &str, namespace: Option<&str>, name: &str) -> bool {
        let key = match namespace {
            Some(ns) => format!("{ns}/{name}"),
            None => name.to_owned(),
        };
        self.store.store.lose(resource, &key)
    }

    /// Holds back watch events (watches stay open; events queue up in the history).
    pub fn pause_watches(&self) {
        self.state.paused_tx.send_replace(true);
    }

    /// Resumes watch delivery; held-back events are sent in order.
    pub fn resume_watches(&self) {
        self.state.paused_tx.send_replace(false);
    }

    /// Removes every failure rule, latency, watch delay and streaming-list fault, and resumes
    /// watches.
    pub fn clear(&self) {
        self.state.rules.lock().clear();
        self.set_latency(Duration::ZERO);
        self.set_watch_delay(Duration::ZERO);
        self.clear_watch_list_fault();
        self.resume_watches();
    }

    /// The failure rules still pending.
    pub fn pending_rules(&self) -> Vec<FailureRule> {
        self.state.rules.lock().clone()
    }
}
