//! Shared test scaffolding for the reflector tests: a recording store and a scripted,
//! recording ListerWatcher.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kinformer::InformerConfig;
use kinformer::reflector::{
    InitialListMode, ItemSink, ListMeta, ListOptions, ListPage, ListWatchError, ListerWatcher,
    Reflector, ReflectorError, WatchEvent, WatchStream,
};
use kinformer::{object::resource_version, store::ReflectorStore};
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// A pod with a name and a resource version.
pub fn pod(name: &str, rv: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            uid: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A pod without a name.
pub fn nameless_pod(rv: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// What the store was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Add(String, String),
    Update(String, String),
    Delete(String, String),
    Replace(Vec<(String, String)>, String),
    Resync,
    UpdateResourceVersion(String),
}

fn name_rv(p: &Pod) -> (String, String) {
    (
        p.metadata.name.clone().unwrap_or_default(),
        resource_version(p).to_owned(),
    )
}

#[derive(Debug, thiserror::Error)]
#[error("store error: {0}")]
pub struct StoreError(pub String);

/// Called on every resync with the 1-based call number.
pub type ResyncHook = Box<dyn FnMut(usize) -> Result<(), StoreError> + Send>;

/// A store that records every call and keeps name → resourceVersion.
#[derive(Default)]
pub struct RecordingStore {
    pub ops: Mutex<Vec<Op>>,
    pub content: Mutex<BTreeMap<String, String>>,
    /// Called on every resync with the 1-based call number; `Err` makes the resync fail.
    pub resync_hook: Mutex<Option<ResyncHook>>,
    resyncs: AtomicUsize,
    /// The list in progress: recorded as one `Op::Replace` when it ends.
    listing: Mutex<Option<Vec<(String, String)>>>,
    /// The versions passed to `bookmark`, in order (kept apart from `ops`).
    pub bookmarks: Mutex<Vec<String>>,
}

impl RecordingStore {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
    pub fn ops(&self) -> Vec<Op> {
        self.ops.lock().clone()
    }
    pub fn content(&self) -> Vec<(String, String)> {
        self.content
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
    pub fn resync_count(&self) -> usize {
        self.resyncs.load(Ordering::SeqCst)
    }
    pub fn rv_updates(&self) -> Vec<String> {
        self.ops()
            .into_iter()
            .filter_map(|op| match op {
                Op::UpdateResourceVersion(rv) => Some(rv),
                _ => None,
            })
            .collect()
    }
}

impl ReflectorStore<Pod> for RecordingStore {
    type Error = StoreError;
    fn add(&self, obj: Arc<Pod>) -> Result<(), StoreError> {
        let (n, rv) = name_rv(&obj);
        self.ops.lock().push(Op::Add(n.clone(), rv.clone()));
        self.content.lock().insert(n, rv);
        Ok(())
    }
    fn update(&self, obj: Arc<Pod>) -> Result<(), StoreError> {
        let (n, rv) = name_rv(&obj);
        self.ops.lock().push(Op::Update(n.clone(), rv.clone()));
        self.content.lock().insert(n, rv);
        Ok(())
    }
    fn delete(&self, obj: Arc<Pod>) -> Result<(), StoreError> {
        let (n, rv) = name_rv(&obj);
        self.ops.lock().push(Op::Delete(n.clone(), rv));
        self.content.lock().remove(&n);
        Ok(())
    }
    fn replace_begin(&self) {
        *self.listing.lock() = Some(Vec::new());
    }
    fn replace_part(&self, items: Vec<Arc<Pod>>) -> Result<(), StoreError> {
        self.listing
            .lock()
            .get_or_insert_with(Vec::new)
            .extend(items.iter().map(|p| name_rv(p)));
        Ok(())
    }
    fn replace_end(&self, resource_version: String) -> Result<(), StoreError> {
        let items = self.listing.lock().take().unwrap_or_default();
        self.ops
            .lock()
            .push(Op::Replace(items.clone(), resource_version));
        *self.content.lock() = items.into_iter().collect();
        Ok(())
    }
    fn replace_abort(&self) {
        *self.listing.lock() = None;
    }
    fn wait_for_room(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
    fn resync(&self) -> Result<(), StoreError> {
        let n = self.resyncs.fetch_add(1, Ordering::SeqCst) + 1;
        self.ops.lock().push(Op::Resync);
        match self.resync_hook.lock().as_mut() {
            Some(hook) => hook(n),
            None => Ok(()),
        }
    }
    fn update_resource_version(&self, resource_version: &str) {
        self.ops
            .lock()
            .push(Op::UpdateResourceVersion(resource_version.to_owned()));
    }
    fn bookmark(&self, resource_version: &str) {
        self.bookmarks.lock().push(resource_version.to_owned());
    }
}

/// list or watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    List,
    Watch,
}

/// One recorded request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Req {
    pub verb: Verb,
    pub options: ListOptions,
    pub at: tokio::time::Instant,
}

type ListScript =
    Box<dyn FnMut(&ListOptions, usize) -> Result<ListPage<Pod>, ListWatchError> + Send>;
type WatchScript = Box<
    dyn FnMut(&ListOptions, usize) -> BoxFuture<'static, Result<WatchStream<Pod>, ListWatchError>>
        + Send,
>;

/// A ListerWatcher whose answers come from closures (given the options and the 1-based call
/// number of that verb) and which records every request.
pub struct ScriptedLw {
    pub requests: Mutex<Vec<Req>>,
    list: Mutex<ListScript>,
    watch: Mutex<WatchScript>,
}

impl ScriptedLw {
    pub fn new(
        list: impl FnMut(&ListOptions, usize) -> Result<ListPage<Pod>, ListWatchError> + Send + 'static,
        watch: impl FnMut(&ListOptions, usize) -> Result<WatchStream<Pod>, ListWatchError>
        + Send
        + 'static,
    ) -> Arc<Self> {
        let mut watch = watch;
        Arc::new(Self {
            requests: Mutex::new(Vec::new()),
            list: Mutex::new(Box::new(list)),
            watch: Mutex::new(Box::new(move |o, n| {
                let r = watch(o, n);
                async move { r }.boxed()
            })),
        })
    }

    /// A ListerWatcher whose watch answers are futures (e.g. to let paused time pass).
    pub fn new_async(
        list: impl FnMut(&ListOptions, usize) -> Result<ListPage<Pod>, ListWatchError> + Send + 'static,
        watch: impl FnMut(
            &ListOptions,
            usize,
        ) -> BoxFuture<'static, Result<WatchStream<Pod>, ListWatchError>>
        + Send
        + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            requests: Mutex::new(Vec::new()),
            list: Mutex::new(Box::new(list)),
            watch: Mutex::new(Box::new(watch)),
        })
    }

    pub fn requests(&self) -> Vec<Req> {
        self.requests.lock().clone()
    }

    /// The requests with their timeouts checked against [min, max] and then cleared, so they
    /// can be compared with expected options.
    pub fn requests_without_timeouts(&self, min: u32, max: u32) -> Vec<(Verb, ListOptions)> {
        self.requests()
            .into_iter()
            .map(|r| {
                let mut o = r.options;
                if let Some(t) = o.timeout_seconds.take() {
                    assert!(
                        (min..=max).contains(&t),
                        "timeoutSeconds {t} outside [{min}, {max}]"
                    );
                    assert_eq!(r.verb, Verb::Watch, "only watches carry a timeout");
                } else {
                    assert_eq!(r.verb, Verb::List, "every watch carries a timeout");
                }
                (r.verb, o)
            })
            .collect()
    }

    pub fn count(&self, verb: Verb) -> usize {
        self.requests
            .lock()
            .iter()
            .filter(|r| r.verb == verb)
            .count()
    }

    pub fn list_rvs(&self) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter(|r| r.verb == Verb::List)
            .map(|r| r.options.resource_version)
            .collect()
    }

    pub fn watch_rvs(&self) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter(|r| r.verb == Verb::Watch)
            .map(|r| r.options.resource_version)
            .collect()
    }
}

impl ListerWatcher<Pod> for ScriptedLw {
    fn list<'a>(
        &'a self,
        options: &ListOptions,
        sink: ItemSink<'a, Pod>,
    ) -> BoxFuture<'a, Result<ListMeta, ListWatchError>> {
        let n = {
            let mut reqs = self.requests.lock();
            reqs.push(Req {
                verb: Verb::List,
                options: options.clone(),
                at: tokio::time::Instant::now(),
            });
            reqs.iter().filter(|r| r.verb == Verb::List).count()
        };
        let r = (self.list.lock())(options, n);
        async move { Ok(r?.deliver(sink)) }.boxed()
    }
    fn watch(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<WatchStream<Pod>, ListWatchError>> {
        let n = {
            let mut reqs = self.requests.lock();
            reqs.push(Req {
                verb: Verb::Watch,
                options: options.clone(),
                at: tokio::time::Instant::now(),
            });
            reqs.iter().filter(|r| r.verb == Verb::Watch).count()
        };
        (self.watch.lock())(options, n)
    }
    /// Like client-go's fakes, the scripted server declares no streaming lists: a scenario that
    /// wants one asks for it with `InitialListMode::StreamingList`.
    fn supports_streaming_list(&self) -> bool {
        false
    }
}

/// A watch that delivers `events` and then closes.
pub fn events_then_close(events: Vec<WatchEvent<Pod>>) -> WatchStream<Pod> {
    futures::stream::iter(events.into_iter().map(Ok)).boxed()
}

/// A watch that delivers `events` and then stays open.
pub fn events_then_pending(events: Vec<WatchEvent<Pod>>) -> WatchStream<Pod> {
    futures::stream::iter(events.into_iter().map(Ok))
        .chain(futures::stream::pending())
        .boxed()
}

/// A watch that delivers `events`, then cancels `token` and stays open (client-go's tests'
/// "cancel after N events").
pub fn events_then_cancel(
    events: Vec<WatchEvent<Pod>>,
    token: CancellationToken,
) -> WatchStream<Pod> {
    let tail = futures::stream::once(async move {
        token.cancel();
        futures::future::pending::<()>().await;
        unreachable_event()
    });
    futures::stream::iter(events.into_iter().map(Ok))
        .chain(tail)
        .boxed()
}

fn unreachable_event() -> Result<WatchEvent<Pod>, ListWatchError> {
    Err(ListWatchError::Decode("never delivered".into()))
}

/// A watch that delivers the given items (events or errors) and then closes.
pub fn items_then_close(items: Vec<Result<WatchEvent<Pod>, ListWatchError>>) -> WatchStream<Pod> {
    futures::stream::iter(items).boxed()
}

/// A watch fed through a channel; dropping the sender closes it.
pub fn channel_watch() -> (
    tokio::sync::mpsc::UnboundedSender<Result<WatchEvent<Pod>, ListWatchError>>,
    WatchStream<Pod>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (tx, tokio_stream_from(rx))
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Result<WatchEvent<Pod>, ListWatchError>>,
) -> WatchStream<Pod> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

/// A one-page list.
pub fn list_of(rv: &str, pods: Vec<Pod>) -> ListPage<Pod> {
    ListPage::new(pods, rv)
}

/// Pods "pod-0".."pod-{n-1}" with resourceVersions "0".."n-1".
pub fn numbered_pods(n: usize) -> Vec<Pod> {
    (0..n)
        .map(|i| pod(&format!("pod-{i}"), &i.to_string()))
        .collect()
}

pub fn name_rv_pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, rv)| ((*n).to_owned(), (*rv).to_owned()))
        .collect()
}

/// Watch options as the Reflector sends them (timeout cleared).
pub fn watch_opts(rv: &str) -> (Verb, ListOptions) {
    (
        Verb::Watch,
        ListOptions {
            resource_version: rv.into(),
            allow_watch_bookmarks: true,
            ..Default::default()
        },
    )
}

/// List options with a resourceVersion and an optional limit / continue token.
pub fn list_opts(rv: &str, limit: Option<u32>, cont: Option<&str>) -> (Verb, ListOptions) {
    (
        Verb::List,
        ListOptions {
            resource_version: rv.into(),
            limit,
            continue_token: cont.map(Into::into),
            ..Default::default()
        },
    )
}

/// Streaming-list options (timeout cleared).
pub fn watch_list_opts(rv: &str) -> (Verb, ListOptions) {
    (
        Verb::Watch,
        ListOptions {
            resource_version: rv.into(),
            allow_watch_bookmarks: true,
            send_initial_events: Some(true),
            resource_version_match: Some(kinformer::reflector::ResourceVersionMatch::NotOlderThan),
            ..Default::default()
        },
    )
}

/// A watch script for a [`Scenario`]: the request's options, the 1-based watch number and the
/// scenario's token (which [`events_then_cancel`] cancels to end the run).
pub type ScenarioWatch = Box<
    dyn Fn(&ListOptions, usize, &CancellationToken) -> Result<WatchStream<Pod>, ListWatchError>
        + Send
        + Sync,
>;

/// One `list_and_watch` run against a scripted server, and what it must leave behind: one row
/// of a table of ported client-go cases (as client-go's `TestWatchList` is written). Every
/// expectation left at `None` is not checked.
pub struct Scenario {
    /// The client-go test and case this row ports (every failure names it).
    pub name: &'static str,
    pub initial_list: InitialListMode,
    pub list: fn(&ListOptions, usize) -> Result<ListPage<Pod>, ListWatchError>,
    pub watch: ScenarioWatch,
    /// `None`: the run ends without error; otherwise the error must satisfy this.
    pub error: Option<fn(&ReflectorError) -> bool>,
    /// Every request, in order (timeouts checked against client-go's 5–10 minutes).
    pub requests: Option<Vec<(Verb, ListOptions)>>,
    /// How many watches were opened.
    pub watches: Option<usize>,
    /// Everything the store was asked to do.
    pub ops: Option<Vec<Op>>,
    /// What the store was asked to do first.
    pub first_ops: Option<Vec<Op>>,
    /// The store's final content (name, resourceVersion), sorted by name.
    pub content: Option<Vec<(String, String)>>,
    /// The resourceVersions the store was told about (`update_resource_version`), in order.
    pub rv_updates: Option<Vec<&'static str>>,
    /// The versions the store was told of as bookmarks (`bookmark`), in order.
    pub bookmarks: Option<Vec<&'static str>>,
    /// The Reflector's last synced resourceVersion afterwards.
    pub last_sync_rv: Option<&'static str>,
}

impl Default for Scenario {
    fn default() -> Self {
        Self {
            name: "",
            initial_list: InitialListMode::default(),
            list: no_list,
            watch: Box::new(|_, _, _| panic!("no WATCH request expected")),
            error: None,
            requests: None,
            watches: None,
            ops: None,
            first_ops: None,
            content: None,
            rv_updates: None,
            bookmarks: None,
            last_sync_rv: None,
        }
    }
}

/// A list script for scenarios that must not list.
pub fn no_list(_: &ListOptions, _: usize) -> Result<ListPage<Pod>, ListWatchError> {
    panic!("no LIST request expected")
}

/// Runs each scenario on its own Reflector, store and server, and checks what it expects.
pub async fn run_scenarios(table: Vec<Scenario>) {
    for case in table {
        let name = case.name;
        let token = CancellationToken::new();
        let t = token.clone();
        let watch = case.watch;
        let lw = ScriptedLw::new(case.list, move |o, n| watch(o, n, &t));
        let store = RecordingStore::new();
        let r = Reflector::builder(lw.clone(), store.clone())
            .name(name)
            .config(&InformerConfig::default().initial_list(case.initial_list))
            .build();
        let result = r.list_and_watch(&token).await;
        match (case.error, &result) {
            (None, Ok(())) => {}
            (Some(expected), Err(e)) => assert!(expected(e), "{name}: unexpected error {e:?}"),
            (_, result) => panic!("{name}: unexpected result {result:?}"),
        }
        if let Some(requests) = case.requests {
            assert_eq!(lw.requests_without_timeouts(300, 600), requests, "{name}");
        }
        if let Some(watches) = case.watches {
            assert_eq!(lw.count(Verb::Watch), watches, "{name}");
        }
        if let Some(ops) = case.ops {
            assert_eq!(store.ops(), ops, "{name}");
        }
        if let Some(first) = case.first_ops {
            assert_eq!(store.ops()[..first.len()], first[..], "{name}");
        }
        if let Some(content) = case.content {
            assert_eq!(store.content(), content, "{name}");
        }
        if let Some(rvs) = case.rv_updates {
            assert_eq!(store.rv_updates(), rvs, "{name}");
        }
        if let Some(rvs) = case.bookmarks {
            assert_eq!(*store.bookmarks.lock(), rvs, "{name}: bookmarks");
        }
        if let Some(rv) = case.last_sync_rv {
            assert_eq!(r.last_sync_resource_version(), rv, "{name}");
        }
    }
}
