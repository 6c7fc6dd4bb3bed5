//! Scripted per-namespace sources: the exact requests a set's list and watch send.

use std::collections::BTreeMap;

use futures::channel::mpsc;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::ObjectMeta;

use super::*;
use crate::reflector::{
    ListPage, ListWatch, ListerWatcherExt, ResourceVersionMatch, WatchEvent, list_all,
};

fn pod(ns: &str, name: &str, rv: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// One request: its namespace, `"list"` or `"watch"`, and its options.
type Request = (String, &'static str, ListOptions);

type Sender = mpsc::UnboundedSender<Result<WatchEvent<Pod>, ListWatchError>>;

/// Every request sent, `(namespace, "list"|"watch", options)`, and the open watches' senders.
#[derive(Default, Clone)]
struct Script {
    log: Arc<Mutex<Vec<Request>>>,
    watches: Arc<Mutex<BTreeMap<String, Vec<Sender>>>>,
    /// Namespace → its list pages: page `i` is asked with continue token `"p{i}"`.
    pages: Arc<Mutex<BTreeMap<String, Vec<Vec<Pod>>>>>,
    /// The list resourceVersion each namespace's list reports when listed as asked.
    rv: Arc<Mutex<String>>,
    /// How many more `Exact` lists fail with 410 (history compacted in between).
    fail_exact: Arc<std::sync::atomic::AtomicUsize>,
}

impl Script {
    fn source(&self, set: &NamespaceSet) -> NamespaceSetListerWatcher<Pod> {
        let script = self.clone();
        NamespaceSetListerWatcher::new(set.clone(), move |ns| {
            let (l, w) = (script.clone(), script.clone());
            let (ns_l, ns_w) = (ns.to_owned(), ns.to_owned());
            ListWatch::new(
                move |o: ListOptions| {
                    l.log.lock().push((ns_l.clone(), "list", o.clone()));
                    let pages = l.pages.lock().get(&ns_l).cloned().unwrap_or_default();
                    let index = o
                        .continue_token
                        .as_deref()
                        .map_or(0, |t| t[1..].parse::<usize>().unwrap());
                    let exact = o.resource_version_match == Some(ResourceVersionMatch::Exact);
                    if exact
                        && l.fail_exact
                            .fetch_update(
                                std::sync::atomic::Ordering::SeqCst,
                                std::sync::atomic::Ordering::SeqCst,
                                |n| n.checked_sub(1),
                            )
                            .is_ok()
                    {
                        let gone = Status::expired("too old resource version");
                        return async move { Err(gone.into()) }.boxed();
                    }
                    let rv = if exact {
                        o.resource_version.clone()
                    } else {
                        l.rv.lock().clone()
                    };
                    let mut page = ListPage::new(pages.get(index).cloned().unwrap_or_default(), rv);
                    if index + 1 < pages.len() {
                        page = page.with_continue(format!("p{}", index + 1));
                    }
                    async move { Ok(page) }.boxed()
                },
                move |o: ListOptions| {
                    w.log.lock().push((ns_w.clone(), "watch", o));
                    let (tx, rx) = mpsc::unbounded();
                    w.watches.lock().entry(ns_w.clone()).or_default().push(tx);
                    async move { Ok(rx.boxed()) }.boxed()
                },
            )
        })
    }

    fn requests(&self) -> Vec<(String, &'static str, String, Option<ResourceVersionMatch>)> {
        self.log
            .lock()
            .drain(..)
            .map(|(ns, verb, o)| (ns, verb, o.resource_version, o.resource_version_match))
            .collect()
    }

    /// Sends `event` on namespace `ns`'s newest watch.
    fn send(&self, ns: &str, event: WatchEvent<Pod>) {
        let watches = self.watches.lock();
        watches[ns]
            .last()
            .unwrap()
            .unbounded_send(Ok(event))
            .unwrap();
    }

    /// Closes namespace `ns`'s newest watch, as a server does at its timeout.
    fn close(&self, ns: &str) {
        self.watches.lock()[ns].last().unwrap().close_channel();
    }
}

fn set_of(names: &[&str]) -> NamespaceSet {
    NamespaceSet::new(names.iter().copied()).unwrap()
}

fn watch_options(rv: &str) -> ListOptions {
    ListOptions {
        resource_version: rv.into(),
        allow_watch_bookmarks: true,
        ..Default::default()
    }
}

fn rv_of(event: &WatchEvent<Pod>) -> String {
    match event {
        WatchEvent::Added(p) | WatchEvent::Modified(p) | WatchEvent::Deleted(p) => {
            crate::object::resource_version(p).to_owned()
        }
        WatchEvent::Bookmark {
            resource_version, ..
        } => resource_version.clone(),
        WatchEvent::Error(s) => format!("error {s}"),
    }
}

#[tokio::test]
async fn the_first_namespace_is_listed_as_asked_the_others_exactly_at_its_version() {
    let script = Script::default();
    *script.rv.lock() = "100".into();
    script
        .pages
        .lock()
        .insert("a".into(), vec![vec![pod("a", "1", "90")]]);
    script.pages.lock().insert(
        "b".into(),
        vec![vec![pod("b", "1", "80")], vec![pod("b", "2", "85")]],
    );
    let lw = script.source(&set_of(&["b", "a", "c"]));
    let options = ListOptions {
        resource_version: "0".into(),
        ..Default::default()
    };
    let list = list_all(&lw, options, Some(500)).await.unwrap();
    let names: Vec<_> = list.items.iter().map(meta_namespace).collect();
    assert_eq!(names, ["a/1", "b/1", "b/2"]);
    assert_eq!(list.resource_version, "100");
    assert!(list.paginated, "namespace b came in two pages");
    let exact = Some(ResourceVersionMatch::Exact);
    assert_eq!(
        script.requests(),
        [
            ("a".into(), "list", "0".into(), None),
            ("b".into(), "list", "100".into(), exact),
            ("b".into(), "list", String::new(), None),
            ("c".into(), "list", "100".into(), exact),
        ]
    );
}

fn meta_namespace(p: &Pod) -> String {
    crate::object::meta_namespace_key(p).unwrap()
}

#[tokio::test]
async fn an_unpaged_set_is_one_list_call_and_an_empty_set_lists_nothing() {
    let script = Script::default();
    *script.rv.lock() = "7".into();
    let lw = script.source(&set_of(&["a", "b"]));
    let page = lw.list_page(&ListOptions::default()).await.unwrap();
    assert_eq!(
        (page.resource_version.as_str(), page.continue_token),
        ("7", None)
    );
    assert_eq!(script.requests().len(), 2);

    let empty = script.source(&set_of(&[]));
    let page = empty.list_page(&ListOptions::default()).await.unwrap();
    assert_eq!(page.resource_version, "0");
    assert!(script.requests().is_empty());
}

#[tokio::test]
async fn every_namespace_is_watched_from_its_own_version_and_reopened_from_it() {
    let script = Script::default();
    *script.rv.lock() = "10".into();
    let lw = script.source(&set_of(&["a", "b"]));
    lw.list_page(&ListOptions::default()).await.unwrap();
    script.requests();
    let mut w = lw.watch(&watch_options("10")).await.unwrap();
    assert_eq!(
        script.requests(),
        [
            ("a".into(), "watch", "10".into(), None),
            ("b".into(), "watch", "10".into(), None),
        ]
    );
    script.send("a", WatchEvent::Added(pod("a", "x", "12")));
    assert_eq!(rv_of(&w.next().await.unwrap().unwrap()), "12");
    script.send("b", WatchEvent::Modified(pod("b", "y", "11")));
    assert_eq!(rv_of(&w.next().await.unwrap().unwrap()), "11");
    // b's watch closes: reopened from b's own version, inside the merged stream
    script.close("b");
    script.send("a", WatchEvent::Deleted(pod("a", "x", "13")));
    assert_eq!(rv_of(&w.next().await.unwrap().unwrap()), "13");
    tokio::task::yield_now().await;
    // the reopening waits a backoff step (the closed watch had delivered one event: none)
    for _ in 0..50 {
        if !script.log.lock().is_empty() {
            break;
        }
        tokio::task::yield_now().await;
        let _ = futures::poll!(w.next());
    }
    assert_eq!(
        script.requests(),
        [("b".into(), "watch", "11".into(), None)]
    );
    script.send("b", WatchEvent::Added(pod("b", "z", "14")));
    assert_eq!(rv_of(&w.next().await.unwrap().unwrap()), "14");
    drop(w);
    // the Reflector reopens from the last version it was handed: each namespace its own
    let _w = lw.watch(&watch_options("14")).await.unwrap();
    assert_eq!(
        script.requests(),
        [
            ("a".into(), "watch", "13".into(), None),
            ("b".into(), "watch", "14".into(), None),
        ]
    );
    // any other version is refused with a 410: the Reflector lists
    let e = lw.watch(&watch_options("12")).await.err().unwrap();
    assert!(e.is_expired());
}

#[tokio::test]
async fn bookmarks_are_forwarded_at_the_lowest_version_when_it_rises() {
    let script = Script::default();
    *script.rv.lock() = "10".into();
    let lw = script.source(&set_of(&["a", "b"]));
    lw.list_page(&ListOptions::default()).await.unwrap();
    let mut w = lw.watch(&watch_options("10")).await.unwrap();
    script.send("a", WatchEvent::bookmark("20"));
    script.send("b", WatchEvent::bookmark("15"));
    assert_eq!(
        rv_of(&w.next().await.unwrap().unwrap()),
        "15",
        "min(20, 15)"
    );
    script.send("b", WatchEvent::bookmark("18"));
    assert_eq!(rv_of(&w.next().await.unwrap().unwrap()), "18");
    script.send("b", WatchEvent::bookmark("30"));
    assert_eq!(
        rv_of(&w.next().await.unwrap().unwrap()),
        "20",
        "a holds the minimum"
    );
    script.send("a", WatchEvent::bookmark("20"));
    script.send("a", WatchEvent::Added(pod("a", "p", "31")));
    assert_eq!(
        rv_of(&w.next().await.unwrap().unwrap()),
        "31",
        "a bookmark that raises nothing is not forwarded"
    );
    drop(w);
    script.requests();
    let _w = lw.watch(&watch_options("31")).await.unwrap();
    assert_eq!(
        script.requests(),
        [
            ("a".into(), "watch", "31".into(), None),
            ("b".into(), "watch", "30".into(), None),
        ]
    );
}

#[tokio::test]
async fn a_set_change_ends_the_watch_with_a_410_and_the_next_list_takes_the_new_set() {
    let script = Script::default();
    *script.rv.lock() = "10".into();
    let set = set_of(&["a"]);
    let lw = script.source(&set);
    lw.list_page(&ListOptions::default()).await.unwrap();
    let mut w = lw.watch(&watch_options("10")).await.unwrap();
    assert!(!set.insert("a").unwrap(), "no change: the watch goes on");
    script.send("a", WatchEvent::Added(pod("a", "x", "11")));
    assert!(w.next().await.unwrap().is_ok());
    set.insert("b").unwrap();
    let e = w.next().await.unwrap().unwrap_err();
    assert!(e.is_expired());
    assert!(
        e.status()
            .unwrap()
            .causes
            .iter()
            .any(|c| c.cause_type == NAMESPACE_SET_CHANGED)
    );
    assert!(w.next().await.is_none());
    // a watch opened before the relist is refused the same way
    let e = lw.watch(&watch_options("11")).await.err().unwrap();
    assert!(e.status().unwrap().causes[0].cause_type == NAMESPACE_SET_CHANGED);
    script.requests();
    lw.list_page(&ListOptions {
        resource_version: "11".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    let listed: Vec<_> = script.requests().into_iter().map(|r| r.0).collect();
    assert_eq!(listed, ["a", "b"]);
    let _w = lw.watch(&watch_options("10")).await.unwrap();
}

#[tokio::test]
async fn a_relist_asks_for_at_least_the_newest_version_any_namespace_reached() {
    let script = Script::default();
    *script.rv.lock() = "10".into();
    let lw = script.source(&set_of(&["a", "b"]));
    lw.list_page(&ListOptions::default()).await.unwrap();
    let mut w = lw.watch(&watch_options("10")).await.unwrap();
    script.send("b", WatchEvent::Added(pod("b", "x", "20")));
    script.send("a", WatchEvent::Added(pod("a", "y", "15")));
    w.next().await.unwrap().unwrap();
    w.next().await.unwrap().unwrap();
    drop(w);
    script.requests();
    *script.rv.lock() = "21".into();
    let relist = |rv: &str| ListOptions {
        resource_version: rv.into(),
        ..Default::default()
    };
    // the Reflector's last version is 15 (a's event came last); b had reached 20
    assert_eq!(
        lw.list_page(&relist("15")).await.unwrap().resource_version,
        "21"
    );
    assert_eq!(script.requests()[0].2, "20");
    lw.list_page(&relist("")).await.unwrap();
    assert_eq!(script.requests()[0].2, "", "a consistent list stays one");
}

#[tokio::test]
async fn an_exact_list_reads_the_cached_set_and_leaves_the_resume_state_alone() {
    let script = Script::default();
    *script.rv.lock() = "10".into();
    let set = set_of(&["a"]);
    let lw = script.source(&set);
    lw.list_page(&ListOptions::default()).await.unwrap();
    set.insert("b").unwrap();
    script.requests();
    let exact = ListOptions {
        resource_version: "10".into(),
        resource_version_match: Some(ResourceVersionMatch::Exact),
        ..Default::default()
    };
    lw.list_page(&exact).await.unwrap();
    let listed: Vec<_> = script.requests().into_iter().map(|r| r.0).collect();
    assert_eq!(listed, ["a"], "the namespaces the cache holds");
    let e = lw.watch(&watch_options("10")).await.err().unwrap();
    assert!(e.status().unwrap().causes[0].cause_type == NAMESPACE_SET_CHANGED);
}

#[tokio::test]
async fn a_snapshots_version_check_does_not_let_a_resume_through() {
    let script = Script::default();
    *script.rv.lock() = "10".into();
    let lw = script.source(&set_of(&["a", "b"]));
    // what a resuming Reflector sends first: a one-item list not older than the snapshot's
    // version; here the server is still at that version
    let verify = ListOptions {
        resource_version: "10".into(),
        resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
        limit: Some(1),
        ..Default::default()
    };
    lw.list_page(&verify).await.unwrap();
    let e = lw.watch(&watch_options("10")).await.err().unwrap();
    assert!(e.is_expired(), "a snapshot's version is never resumed from");
}

#[tokio::test]
async fn streaming_lists_and_unlisted_resumes_are_refused() {
    let script = Script::default();
    let lw = script.source(&set_of(&["a"]));
    assert!(!lw.supports_streaming_list());
    let e = lw.watch(&watch_options("5")).await.err().unwrap();
    assert!(
        e.is_expired(),
        "never listed here (a snapshot's version): list first"
    );
    let streaming = ListOptions {
        send_initial_events: Some(true),
        ..watch_options("")
    };
    assert!(lw.watch(&streaming).await.err().unwrap().is_not_supported());
    assert!(script.requests().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_merged_watch_ends_at_its_timeout_and_an_empty_set_waits_for_a_change() {
    let script = Script::default();
    *script.rv.lock() = "10".into();
    let set = set_of(&[]);
    let lw = script.source(&set);
    lw.list_page(&ListOptions::default()).await.unwrap();
    let mut w = lw
        .watch(&ListOptions {
            timeout_seconds: Some(300),
            ..watch_options("0")
        })
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    assert!(w.next().await.is_none());
    assert_eq!(started.elapsed(), Duration::from_secs(300));
    let mut w = lw.watch(&watch_options("0")).await.unwrap();
    let waiting = tokio::spawn(async move { w.next().await.map(|r| r.is_err()) });
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!waiting.is_finished(), "an empty set's watch stays open");
    set.insert("a").unwrap();
    assert_eq!(waiting.await.unwrap(), Some(true));
}

use std::time::Duration;

/// Runs an informer over `lw` until it has synced; returns it, its adds and deletes told, and
/// what stops it.
async fn run_informer(
    lw: NamespaceSetListerWatcher<Pod>,
    config: crate::InformerConfig<Pod>,
) -> (
    crate::SharedIndexInformer<Pod>,
    Arc<Mutex<Vec<String>>>,
    tokio_util::sync::CancellationToken,
) {
    let informer = crate::SharedIndexInformer::builder(lw)
        .config(config)
        .build();
    let told: Arc<Mutex<Vec<String>>> = Arc::default();
    let (a, u, d) = (told.clone(), told.clone(), told.clone());
    informer
        .add_event_handler(
            crate::ResourceEventHandlerFuncs::new()
                .on_add(move |p: &Arc<Pod>, _| a.lock().push(format!("add {}", meta_namespace(p))))
                .on_update(move |_, p: &Arc<Pod>| {
                    u.lock().push(format!("update {}", meta_namespace(p)))
                })
                .on_delete(move |p: &crate::ObjectOrTombstone<Pod>| {
                    d.lock().push(format!("delete {}", p.key().unwrap()))
                }),
        )
        .unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    while !informer.has_synced() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    (informer, told, cancel)
}

/// Waits (paused time) until `told` holds `n` entries, then takes them, sorted.
async fn told_n(told: &Mutex<Vec<String>>, n: usize) -> Vec<String> {
    for _ in 0..100_000 {
        if told.lock().len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut out: Vec<String> = told.lock().drain(..).collect();
    out.sort();
    out
}

#[tokio::test(start_paused = true)]
async fn a_410_on_an_exact_list_fails_the_list_and_the_reflector_lists_again_at_the_newest() {
    let script = Script::default();
    *script.rv.lock() = "100".into();
    script
        .pages
        .lock()
        .insert("a".into(), vec![vec![pod("a", "1", "90")]]);
    script
        .pages
        .lock()
        .insert("b".into(), vec![vec![pod("b", "1", "95")]]);
    script
        .fail_exact
        .store(1, std::sync::atomic::Ordering::SeqCst);
    let lw = script.source(&set_of(&["a", "b"]));
    let (informer, told, cancel) = run_informer(lw, crate::InformerConfig::default()).await;
    assert_eq!(told_n(&told, 2).await, ["add a/1", "add b/1"]);
    assert_eq!(informer.indexer().len(), 2);
    let lists: Vec<_> = script
        .requests()
        .into_iter()
        .filter(|r| r.1 == "list")
        .map(|r| (r.0, r.2, r.3))
        .collect();
    let exact = Some(ResourceVersionMatch::Exact);
    assert_eq!(
        lists,
        [
            ("a".into(), "0".into(), None),
            ("b".into(), "100".into(), exact),
            // the 410 marked the version unavailable: the newest, then b at exactly it
            ("a".into(), String::new(), None),
            ("b".into(), "100".into(), exact),
        ]
    );
    cancel.cancel();
}

/// (On the default queue mode: the informer tests over HTTP run on both.)
#[tokio::test(start_paused = true)]
async fn a_lean_cache_over_a_set_tells_exactly_the_changed_namespaces() {
    let script = Script::default();
    *script.rv.lock() = "100".into();
    for ns in ["a", "b", "c"] {
        let pods = (0..3).map(|i| pod(ns, &i.to_string(), "50")).collect();
        script.pages.lock().insert(ns.into(), vec![pods]);
    }
    let set = set_of(&["a", "b"]);
    let config = crate::InformerConfig::default().cache_mode(crate::store::CacheMode::Lean);
    let (informer, told, cancel) = run_informer(script.source(&set), config).await;
    assert_eq!(told_n(&told, 6).await.len(), 6);
    set.insert("c").unwrap();
    set.remove("a");
    let want = [
        "add c/0",
        "add c/1",
        "add c/2",
        "delete a/0",
        "delete a/1",
        "delete a/2",
    ];
    assert_eq!(told_n(&told, 6).await, want);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(told.lock().is_empty(), "nothing for b: {:?}", told.lock());
    let mut keys = informer.indexer().list_keys();
    keys.sort();
    assert_eq!(keys, ["b/0", "b/1", "b/2", "c/0", "c/1", "c/2"]);
    cancel.cancel();
}
