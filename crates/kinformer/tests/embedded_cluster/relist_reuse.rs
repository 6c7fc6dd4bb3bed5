//! A relist of an informer on the default queue (RealFifo, atomic) and the default cache (full)
//! keeps the cached object for every object the list brings unchanged (same key, uid and
//! resourceVersion): the cache holds the very same `Arc` after the swap, so a relist never
//! holds two copies of what did not change. Changed objects, and objects deleted and recreated
//! under the same name (a new uid), are taken from the list. The handlers are told what they
//! were told before. On the paged list and on the streaming list, with and without a transform.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kinformer::informer::QueueMode;
use kinformer::reflector::{
    InitialListMode, ListOptions, ListPage, ListWatch, ListWatchError, Status, WatchEvent,
    WatchStream,
};
use kinformer::{
    InformerConfig, ObjectOrTombstone, ResourceEventHandlerFuncs, SharedIndexInformer, Transform,
};
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

type Sender = mpsc::UnboundedSender<Result<WatchEvent<Pod>, ListWatchError>>;

#[derive(Default)]
struct State {
    items: BTreeMap<String, Pod>,
    rv: u64,
    /// Watches from before this version get 410.
    compacted: u64,
    watchers: Vec<Sender>,
    lists: usize,
    streamed_lists: usize,
}

/// A fake API endpoint: paged lists (`limit`/`continue`), streaming lists, watches, and a
/// compaction that drops every watch so the informer's re-watch gets 410 and relists.
#[derive(Clone, Default)]
struct Source(Arc<Mutex<State>>);

fn pod(name: &str, uid: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(uid.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

impl Source {
    /// Stores `p` at the next resource version, telling no watch.
    fn put(&self, mut p: Pod) {
        let mut s = self.0.lock();
        s.rv += 1;
        p.metadata.resource_version = Some(s.rv.to_string());
        s.items.insert(p.metadata.name.clone().unwrap(), p);
    }

    /// Stores `p` with its resource version as given (a recreated object that happens to carry
    /// the old version: only its uid differs).
    fn put_as_is(&self, p: Pod) {
        self.0
            .lock()
            .items
            .insert(p.metadata.name.clone().unwrap(), p);
    }

    fn remove(&self, name: &str) {
        let mut s = self.0.lock();
        s.rv += 1;
        s.items.remove(name);
    }

    /// Compacts at the current version and drops every watch: re-watches get 410.
    fn compact(&self) {
        let mut s = self.0.lock();
        s.compacted = s.rv;
        s.watchers.clear();
    }

    fn expired(s: &State, rv: &str) -> bool {
        rv.parse::<u64>().is_ok_and(|rv| rv < s.compacted)
    }

    fn list(&self, options: &ListOptions) -> Result<ListPage<Pod>, ListWatchError> {
        let mut s = self.0.lock();
        s.lists += 1;
        let from: usize = options
            .continue_token
            .as_deref()
            .map_or(0, |c| c.parse().unwrap());
        let limit = options.limit.map_or(usize::MAX, |l| l as usize);
        let items: Vec<Pod> = s.items.values().skip(from).take(limit).cloned().collect();
        let next = from + items.len();
        let page = ListPage::new(items, s.rv.to_string());
        Ok(if next < s.items.len() {
            page.with_continue(next.to_string())
        } else {
            page
        })
    }

    fn watch(&self, options: &ListOptions) -> Result<WatchStream<Pod>, ListWatchError> {
        let mut s = self.0.lock();
        if Self::expired(&s, &options.resource_version) {
            return Err(ListWatchError::Api(Status::expired(
                "too old resource version",
            )));
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        if options.send_initial_events == Some(true) {
            s.streamed_lists += 1;
            for p in s.items.values() {
                let _ = tx.send(Ok(WatchEvent::Added(p.clone())));
            }
            let _ = tx.send(Ok(WatchEvent::initial_events_end(s.rv.to_string())));
        }
        s.watchers.push(tx);
        Ok(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed())
    }

    fn lister_watcher(&self, streaming: bool) -> ListWatch<Pod> {
        let (l, w) = (self.clone(), self.clone());
        let lw = ListWatch::new(
            move |o| std::future::ready(l.list(&o)).boxed(),
            move |o| std::future::ready(w.watch(&o)).boxed(),
        );
        if streaming {
            lw.with_streaming_list()
        } else {
            lw
        }
    }
}

/// What a handler was told, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Told {
    Add(String),
    /// name, old resourceVersion, new resourceVersion, whether old and new are the same `Arc`
    Update(String, String, String, bool),
    Delete(String),
}

fn name(p: &Pod) -> String {
    p.metadata.name.clone().unwrap()
}

fn rv(p: &Pod) -> String {
    p.metadata.resource_version.clone().unwrap_or_default()
}

async fn settle() {
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn wait_for(what: &str, done: impl Fn() -> bool) {
    for _ in 0..2000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("gave up waiting for {what}");
}

#[derive(Clone, Copy, Debug)]
enum Path {
    Paged,
    Streamed,
}

async fn relist_reuses_unchanged_objects(path: Path, transform: bool) {
    let case = format!("{path:?}, transform {transform}");
    let source = Source::default();
    for n in ["a", "b", "c", "d"] {
        source.put(pod(n, &format!("{n}-1")));
    }
    let mut config = InformerConfig::default()
        .queue_mode(QueueMode::RealFifo)
        .page_size(NonZeroU32::new(2).unwrap())
        .initial_list(match path {
            Path::Paged => InitialListMode::ListThenWatch,
            Path::Streamed => InitialListMode::StreamingList,
        });
    if transform {
        config = config.transform(Transform::metadata(|m| {
            m.annotations
                .get_or_insert_with(Default::default)
                .insert("transformed".into(), "yes".into());
        }));
    }
    let informer =
        SharedIndexInformer::builder(source.lister_watcher(matches!(path, Path::Streamed)))
            .config(config)
            .build();
    let told = Arc::new(Mutex::new(Vec::new()));
    let (a, u, d) = (told.clone(), told.clone(), told.clone());
    informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new()
                .on_add(move |p: &Arc<Pod>, _| a.lock().push(Told::Add(name(p))))
                .on_update(move |old: &Arc<Pod>, new: &Arc<Pod>| {
                    u.lock().push(Told::Update(
                        name(new),
                        rv(old),
                        rv(new),
                        Arc::ptr_eq(old, new),
                    ))
                })
                .on_delete(move |o: &ObjectOrTombstone<Pod>| {
                    let n = o.key().unwrap().rsplit('/').next().unwrap().to_owned();
                    d.lock().push(Told::Delete(n))
                }),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    wait_for("the first list", || told.lock().len() == 4).await;
    let cache = informer.indexer();
    let before: BTreeMap<String, Arc<Pod>> = ["a", "b", "c", "d"]
        .into_iter()
        .map(|n| {
            (
                n.to_owned(),
                cache.get_by_key(&format!("default/{n}")).unwrap(),
            )
        })
        .collect();
    let rv_of = |n: &str| rv(&before[n]);
    told.lock().clear();

    // unseen by any watch: b changes, c is recreated (new uid, same version), d goes, e comes
    let mut b = source.0.lock().items["b"].clone();
    b.metadata.labels = Some(BTreeMap::from([("changed".into(), "yes".into())]));
    source.put(b);
    let mut c = pod("c", "c-2");
    c.metadata.resource_version = Some(rv_of("c"));
    source.put_as_is(c);
    source.remove("d");
    source.put(pod("e", "e-1"));
    let (lists, streams) = {
        let s = source.0.lock();
        (s.lists, s.streamed_lists)
    };
    source.compact();
    wait_for("the relist", || cache.get_by_key("default/e").is_some()).await;
    settle().await;

    let after = |n: &str| cache.get_by_key(&format!("default/{n}"));
    assert!(
        Arc::ptr_eq(&before["a"], &after("a").unwrap()),
        "{case}: the unchanged object is the cached one"
    );
    let new_b = after("b").unwrap();
    assert!(!Arc::ptr_eq(&before["b"], &new_b), "{case}: b changed");
    assert_eq!(
        new_b.metadata.labels.as_ref().unwrap()["changed"],
        "yes",
        "{case}"
    );
    let new_c = after("c").unwrap();
    assert!(
        !Arc::ptr_eq(&before["c"], &new_c),
        "{case}: c was recreated"
    );
    assert_eq!(new_c.metadata.uid.as_deref(), Some("c-2"), "{case}");
    assert!(after("d").is_none(), "{case}");
    if transform {
        for n in ["a", "b", "c", "e"] {
            let p = after(n).unwrap();
            assert_eq!(
                p.metadata.annotations.as_ref().unwrap()["transformed"],
                "yes",
                "{case}: {n} is transformed"
            );
        }
    }
    {
        let s = source.0.lock();
        match path {
            Path::Paged => assert!(s.lists > lists, "{case}: relisted with a list"),
            Path::Streamed => {
                assert!(s.streamed_lists > streams, "{case}: relisted with a stream");
                assert_eq!(s.lists, 0, "{case}: no list request");
            }
        }
    }
    // As before this change: deletions first, then every listed object in list order, an
    // update when it was cached and an add when it was not; an update whose resourceVersion did
    // not change (a, and c recreated at the same version) is a sync, told only to handlers in
    // their resync round (client-go's `isSync`), so this handler (no resync) hears of b and e.
    let new_rv = |n: &str| rv(&after(n).unwrap());
    assert_eq!(
        *told.lock(),
        [
            Told::Delete("d".into()),
            Told::Update("b".into(), rv_of("b"), new_rv("b"), false),
            Told::Add("e".into()),
        ],
        "{case}"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_paged_relist_keeps_unchanged_objects() {
    relist_reuses_unchanged_objects(Path::Paged, false).await;
}

#[tokio::test(start_paused = true)]
async fn a_streamed_relist_keeps_unchanged_objects() {
    relist_reuses_unchanged_objects(Path::Streamed, false).await;
}

#[tokio::test(start_paused = true)]
async fn a_paged_relist_with_a_transform_keeps_unchanged_objects() {
    relist_reuses_unchanged_objects(Path::Paged, true).await;
}

#[tokio::test(start_paused = true)]
async fn a_streamed_relist_with_a_transform_keeps_unchanged_objects() {
    relist_reuses_unchanged_objects(Path::Streamed, true).await;
}
