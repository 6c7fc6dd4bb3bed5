//! Test support: a fake API endpoint (client-go's `FakeControllerSource`) and recording handlers.

use kinformer::SharedIndexInformer;
use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use kinformer::reflector::{
    ItemSink, ListMeta, ListOptions, ListPage, ListWatchError, ListerWatcher, Status, WatchEvent,
    WatchStream,
};
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use tokio::sync::mpsc;

/// A pod with a name (and uid = name), in no namespace, as client-go's tests build them.
pub fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            uid: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[derive(Clone)]
enum Change {
    Added(Pod),
    Modified(Pod),
    Deleted(Pod),
}

#[derive(Default)]
struct State {
    items: BTreeMap<String, Pod>,
    changes: Vec<(u64, Change)>,
    last_rv: u64,
    watchers: Vec<mpsc::UnboundedSender<Result<WatchEvent<Pod>, ListWatchError>>>,
    list_error: Option<Status>,
    lists: u64,
    watches: u64,
}

/// client-go's `FakeControllerSource`: an in-memory endpoint whose every change gets the next
/// resource version, with open watches that can be dropped (`reset_watch`).
#[derive(Clone, Default)]
pub struct FakeControllerSource {
    state: Arc<Mutex<State>>,
}

impl FakeControllerSource {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn add(&self, p: Pod) {
        self.change(Change::Added(p), true)
    }
    pub fn modify(&self, p: Pod) {
        self.change(Change::Modified(p), true)
    }
    pub fn delete(&self, p: Pod) {
        self.change(Change::Deleted(p), true)
    }
    pub fn add_drop_watch(&self, p: Pod) {
        self.change(Change::Added(p), false)
    }
    pub fn modify_drop_watch(&self, p: Pod) {
        self.change(Change::Modified(p), false)
    }
    /// Closes every open watch and forgets the change history (a watch from an old resource
    /// version then gets 410, forcing a relist).
    pub fn reset_watch(&self) {
        let mut s = self.state.lock();
        s.watchers.clear();
        s.changes.clear();
    }
    pub fn set_list_error(&self, status: Option<Status>) {
        self.state.lock().list_error = status;
    }

    fn change(&self, c: Change, broadcast: bool) {
        let mut s = self.state.lock();
        s.last_rv += 1;
        let rv = s.last_rv.to_string();
        let c = match c {
            Change::Added(mut p) => {
                p.metadata.resource_version = Some(rv);
                s.items.insert(p.metadata.name.clone().unwrap(), p.clone());
                Change::Added(p)
            }
            Change::Modified(mut p) => {
                p.metadata.resource_version = Some(rv);
                s.items.insert(p.metadata.name.clone().unwrap(), p.clone());
                Change::Modified(p)
            }
            Change::Deleted(mut p) => {
                p.metadata.resource_version = Some(rv);
                s.items.remove(p.metadata.name.as_deref().unwrap());
                Change::Deleted(p)
            }
        };
        let last = s.last_rv;
        s.changes.push((last, c.clone()));
        if broadcast {
            let ev = to_event(&c);
            s.watchers.retain(|w| w.send(Ok(ev.clone())).is_ok());
        }
    }
}

fn to_event(c: &Change) -> WatchEvent<Pod> {
    match c {
        Change::Added(p) => WatchEvent::Added(p.clone()),
        Change::Modified(p) => WatchEvent::Modified(p.clone()),
        Change::Deleted(p) => WatchEvent::Deleted(p.clone()),
    }
}

impl ListerWatcher<Pod> for FakeControllerSource {
    fn list<'a>(
        &'a self,
        _options: &ListOptions,
        sink: ItemSink<'a, Pod>,
    ) -> BoxFuture<'a, Result<ListMeta, ListWatchError>> {
        let mut s = self.state.lock();
        s.lists += 1;
        let result = match &s.list_error {
            Some(st) => Err(ListWatchError::Api(st.clone())),
            None => Ok(ListPage::new(
                s.items.values().cloned().collect(),
                s.last_rv.to_string(),
            )),
        };
        Box::pin(async move { Ok(result?.deliver(sink)) })
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<WatchStream<Pod>, ListWatchError>> {
        let mut s = self.state.lock();
        s.watches += 1;
        let rv: u64 = options.resource_version.parse().unwrap_or(0);
        let (tx, rx) = mpsc::unbounded_channel();
        let result = if rv < s.last_rv {
            let oldest = s.changes.first().map(|(rv, _)| *rv);
            match oldest {
                Some(oldest) if rv + 1 >= oldest => {
                    for (crv, c) in &s.changes {
                        if *crv > rv {
                            let _ = tx.send(Ok(to_event(c)));
                        }
                    }
                    s.watchers.push(tx);
                    Ok(())
                }
                _ => Err(ListWatchError::Api(Status::expired(format!(
                    "too old resource version: {rv} ({})",
                    s.last_rv
                )))),
            }
        } else {
            s.watchers.push(tx);
            Ok(())
        };
        Box::pin(async move {
            result?;
            Ok(tokio_stream_from(rx))
        })
    }
    /// client-go's fake controller source has list+watch semantics only.
    fn supports_streaming_list(&self) -> bool {
        false
    }
}

fn tokio_stream_from<T: Send + 'static>(
    mut rx: mpsc::UnboundedReceiver<T>,
) -> futures::stream::BoxStream<'static, T> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

/// One round on paused time: the ready tasks run; once every task waits, the clock moves 1 ms;
/// the tasks that woke run.
async fn round() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

/// Runs rounds until `what` holds (`done` says whether it does): at least one, at most a
/// hundred (then it panics naming `what`).
pub async fn wait_until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..100 {
        round().await;
        if done() {
            return;
        }
    }
    panic!("gave up waiting until {what}");
}

/// Waits until `informer` has caught up: nothing queued between its Reflector and its cache,
/// and every notification handed to a handler or stream handled.
pub async fn caught_up(informer: &SharedIndexInformer<Pod>) {
    let what = format!("informer {} has caught up", informer.name());
    wait_until(&what, || {
        informer.queued_deltas() == 0 && informer.handler_backlogs().iter().all(|(_, n)| *n == 0)
    })
    .await;
}

impl FakeControllerSource {
    /// The object stored under `name`, as a client would read it back after writing it.
    pub fn get(&self, name: &str) -> Option<Pod> {
        self.state.lock().items.get(name).cloned()
    }

    /// Deletes an object without telling open watches.
    pub fn change_delete_silently(&self, name: &str) {
        let p = self.state.lock().items.get(name).cloned();
        if let Some(p) = p {
            self.change(Change::Deleted(p), false);
        }
    }
}
