//! The list+watch protocol: the exact request sequence for each rule, ported from client-go's
//! `reflector_test.go` (each test names the case it ports).

use std::num::NonZeroU32;
use std::sync::Arc;

use crate::support::*;
use k8s_openapi::api::core::v1::Pod;
use kinformer::reflector::{
    ListPage, ListWatchError, Reflector, ReflectorError, Status, WatchEvent,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

fn reflector(
    lw: Arc<ScriptedLw>,
    store: Arc<RecordingStore>,
) -> Reflector<Pod, Arc<RecordingStore>> {
    Reflector::builder(lw, store).name("test-reflector").build()
}

// client-go TestReflectorListAndWatch / "UseWatchList disabled"
#[tokio::test(start_paused = true)]
async fn reflector_list_and_watch_use_watch_list_disabled() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![pod("foo", "1")])),
        move |_, n| {
            assert_eq!(n, 1, "only one watch expected");
            Ok(events_then_cancel(
                vec![
                    WatchEvent::Modified(pod("foo", "2")),
                    WatchEvent::Added(pod("bar", "3")),
                    WatchEvent::Added(pod("baz", "4")),
                    WatchEvent::Added(pod("qux", "5")),
                    WatchEvent::Added(pod("zoo", "6")),
                ],
                t.clone(),
            ))
        },
    );
    let store = RecordingStore::new();
    let r = reflector(lw.clone(), store.clone());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(
        lw.requests_without_timeouts(300, 600),
        vec![list_opts("0", Some(500), None), watch_opts("1")]
    );
    assert_eq!(
        store.ops()[..2],
        [
            Op::Replace(name_rv_pairs(&[("foo", "1")]), "1".into()),
            Op::Update("foo".into(), "2".into()),
        ]
    );
    assert_eq!(
        store.content(),
        name_rv_pairs(&[
            ("bar", "3"),
            ("baz", "4"),
            ("foo", "2"),
            ("qux", "5"),
            ("zoo", "6")
        ])
    );
    assert_eq!(r.last_sync_resource_version(), "6");
}

// client-go TestReflectorListAndWatchWithErrors: consecutive cycles share one store; list and
// watch errors surface as the cycle's error.
#[tokio::test(start_paused = true)]
async fn reflector_list_and_watch_with_errors() {
    struct Case {
        list: Option<ListPage<Pod>>,
        list_err: Option<ListWatchError>,
        events: Vec<WatchEvent<Pod>>,
        watch_err: Option<ListWatchError>,
    }
    let mk_list = |rv: &str, pods: Vec<Pod>| Some(list_of(rv, pods));
    let table = vec![
        Case {
            list: mk_list("1", vec![]),
            list_err: None,
            events: vec![
                WatchEvent::Added(pod("foo", "2")),
                WatchEvent::Added(pod("bar", "3")),
            ],
            watch_err: None,
        },
        Case {
            list: mk_list("3", vec![pod("foo", "2"), pod("bar", "3")]),
            list_err: None,
            events: vec![
                WatchEvent::Deleted(pod("foo", "4")),
                WatchEvent::Added(pod("qux", "5")),
            ],
            watch_err: None,
        },
        Case {
            list: None,
            list_err: Some(ListWatchError::Decode("a list error".into())),
            events: vec![],
            watch_err: None,
        },
        Case {
            list: mk_list("5", vec![pod("bar", "3"), pod("qux", "5")]),
            list_err: None,
            events: vec![],
            watch_err: Some(ListWatchError::Decode("a watch error".into())),
        },
        Case {
            list: mk_list("5", vec![pod("bar", "3"), pod("qux", "5")]),
            list_err: None,
            events: vec![WatchEvent::Added(pod("baz", "6"))],
            watch_err: None,
        },
        Case {
            list: mk_list("6", vec![pod("bar", "3"), pod("qux", "5"), pod("baz", "6")]),
            list_err: None,
            events: vec![],
            watch_err: None,
        },
    ];
    let store = RecordingStore::new();
    for (line, case) in table.into_iter().enumerate() {
        if let Some(list) = &case.list {
            // what the store holds before this cycle is exactly what the server lists now
            let mut expected: Vec<(String, String)> = list
                .items
                .iter()
                .map(|p| {
                    (
                        p.metadata.name.clone().unwrap(),
                        p.metadata.resource_version.clone().unwrap(),
                    )
                })
                .collect();
            expected.sort();
            assert_eq!(store.content(), expected, "case {line}");
        }
        let token = CancellationToken::new();
        let t = token.clone();
        let list_result = match (&case.list, &case.list_err) {
            (_, Some(e)) => Err(e.clone()),
            (Some(l), None) => Ok(l.clone()),
            (None, None) => unreachable!(),
        };
        let events = case.events.clone();
        let watch_err = Mutex::new(case.watch_err.clone());
        let lw = ScriptedLw::new(
            move |_, _| list_result.clone(),
            move |_, _| {
                if let Some(e) = watch_err.lock().take() {
                    return Err(e);
                }
                Ok(events_then_cancel(events.clone(), t.clone()))
            },
        );
        let r = reflector(lw, store.clone());
        let result = r.list_and_watch(&token).await;
        match (case.list_err, case.watch_err) {
            (Some(e), _) => assert!(
                matches!(result, Err(ReflectorError::List(ref got)) if *got == e),
                "case {line}: {result:?}"
            ),
            (None, Some(e)) => assert!(
                matches!(result, Err(ReflectorError::Watch(ref got)) if *got == e),
                "case {line}: {result:?}"
            ),
            (None, None) => assert!(result.is_ok(), "case {line}: {result:?}"),
        }
    }
}

// client-go TestReflectorWatchListPageSize: a configured page size paginates every list
// (here: the first list, then a relist at "10").
#[tokio::test(start_paused = true)]
async fn reflector_watch_list_page_size() {
    let pods = numbered_pods(10);
    let lw = ScriptedLw::new(
        move |o, _| {
            assert_eq!(o.limit, Some(4));
            Ok(
                match (o.resource_version.as_str(), o.continue_token.as_deref()) {
                    ("0", None) => list_of("10", vec![]),
                    (_, None) => list_of("10", pods[0..4].to_vec()).with_continue("C1"),
                    (_, Some("C1")) => list_of("10", pods[4..8].to_vec()).with_continue("C2"),
                    (_, Some("C2")) => list_of("10", pods[8..10].to_vec()),
                    other => panic!("unexpected {other:?}"),
                },
            )
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let store = RecordingStore::new();
    let r = Reflector::builder(lw.clone(), store.clone())
        .page_size(NonZeroU32::new(4).unwrap())
        .build();
    let token = CancellationToken::new();
    assert!(r.list_and_watch(&token).await.unwrap_err().is_expired());
    assert!(r.list_and_watch(&token).await.unwrap_err().is_expired());
    assert_eq!(store.content().len(), 10);
    let lists: Vec<_> = lw
        .requests_without_timeouts(300, 600)
        .into_iter()
        .filter(|(v, _)| *v == Verb::List)
        .collect();
    assert_eq!(
        lists,
        vec![
            list_opts("0", Some(4), None),
            list_opts("10", Some(4), None),
            list_opts("", Some(4), Some("C1")),
            list_opts("", Some(4), Some("C2")),
        ]
    );
}

// client-go TestReflectorNotPaginatingNotConsistentReads: a relist at a specific version is
// not paginated.
#[tokio::test(start_paused = true)]
async fn reflector_not_paginating_not_consistent_reads() {
    let lw = ScriptedLw::new(
        |o, _| match o.resource_version.as_str() {
            "0" => Ok(list_of("10", vec![])),
            "10" => {
                assert_eq!(o.limit, None);
                Ok(list_of("10", numbered_pods(10)))
            }
            other => panic!("unexpected rv {other}"),
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let store = RecordingStore::new();
    let r = reflector(lw.clone(), store.clone());
    let token = CancellationToken::new();
    let _ = r.list_and_watch(&token).await;
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 10);
    assert_eq!(lw.list_rvs(), vec!["0", "10"]);
}

// client-go TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled: when the first list
// at "0" came back paginated (no watch cache), relists keep paginating with 500.
#[tokio::test(start_paused = true)]
async fn reflector_paginating_non_consistent_reads_if_watch_cache_disabled() {
    let pods = numbered_pods(10);
    let lw = ScriptedLw::new(
        move |o, _| {
            assert_eq!(o.limit, Some(500));
            Ok(match o.continue_token.as_deref() {
                None => list_of("10", pods[0..4].to_vec()).with_continue("C1"),
                Some("C1") => list_of("10", pods[4..8].to_vec()).with_continue("C2"),
                Some("C2") => list_of("10", pods[8..10].to_vec()),
                other => panic!("unexpected {other:?}"),
            })
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let store = RecordingStore::new();
    let r = reflector(lw.clone(), store.clone());
    let token = CancellationToken::new();
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 10);
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 10);
    assert_eq!(lw.list_rvs(), vec!["0", "", "", "10", "", ""]);
}

// client-go TestReflectorResyncWithResourceVersion: a relist asks for the last synced version.
#[tokio::test(start_paused = true)]
async fn reflector_resync_with_resource_version() {
    let pods = numbered_pods(8);
    let lw = ScriptedLw::new(
        move |o, _| match o.resource_version.as_str() {
            "0" => Ok(list_of("10", pods[0..4].to_vec())),
            "10" => Ok(list_of("11", pods[0..8].to_vec())),
            other => panic!("unexpected rv {other}"),
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let store = RecordingStore::new();
    let r = reflector(lw.clone(), store.clone());
    let token = CancellationToken::new();
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 4);
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 8);
    assert_eq!(lw.list_rvs(), vec!["0", "10"]);
}

// client-go TestReflectorExpiredExactResourceVersion: a 410 on a relist lists again at "".
#[tokio::test(start_paused = true)]
async fn reflector_expired_exact_resource_version() {
    let pods = numbered_pods(8);
    let lw = ScriptedLw::new(
        move |o, _| match o.resource_version.as_str() {
            "0" => Ok(list_of("10", pods[0..4].to_vec())),
            "10" => Err(
                Status::expired("The resourceVersion for the provided watch is too old.").into(),
            ),
            "" => Ok(list_of("11", pods[0..8].to_vec())),
            other => panic!("unexpected rv {other}"),
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let store = RecordingStore::new();
    let r = reflector(lw.clone(), store.clone());
    let token = CancellationToken::new();
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 4);
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 8);
    assert_eq!(lw.list_rvs(), vec!["0", "10", ""]);
    assert_eq!(r.last_sync_resource_version(), "11");
}

// client-go TestReflectorFullListIfExpired: an expired continue token → one full list at the
// original version.
#[tokio::test(start_paused = true)]
async fn reflector_full_list_if_expired() {
    let pods = numbered_pods(8);
    let lw = ScriptedLw::new(
        move |o, _| match (
            o.resource_version.as_str(),
            o.continue_token.as_deref(),
            o.limit,
        ) {
            ("0", None, Some(4)) => Ok(list_of("10", pods[0..4].to_vec())),
            ("10", None, Some(4)) => Ok(list_of("11", pods[0..4].to_vec()).with_continue("C1")),
            ("", Some("C1"), Some(4)) => Err(Status::expired(
                "The resourceVersion for the provided watch is too old.",
            )
            .into()),
            ("10", None, None) => Ok(list_of("11", pods[0..8].to_vec())),
            other => panic!("unexpected list options {other:?}"),
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let store = RecordingStore::new();
    let r = Reflector::builder(lw.clone(), store.clone())
        .page_size(NonZeroU32::new(4).unwrap())
        .build();
    let token = CancellationToken::new();
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 4);
    let _ = r.list_and_watch(&token).await;
    assert_eq!(store.content().len(), 8);
    assert_eq!(lw.list_rvs(), vec!["0", "10", "", "10"]);
}

// client-go TestReflectorFullListIfTooLarge: the three shapes of "too large resource version"
// each make the Reflector list again at "".
#[tokio::test(start_paused = true)]
async fn reflector_full_list_if_too_large() {
    let version = Arc::new(Mutex::new(30));
    let lw = ScriptedLw::new(
        move |o, _| match o.resource_version.as_str() {
            "0" => Ok(list_of("20", vec![])),
            "20" => Err(Status::timeout("too large resource version")
                .with_cause("ResourceVersionTooLarge", "")
                .into()),
            "30" => Err(Status::timeout("too large resource version")
                .with_cause("", "Too large resource version")
                .into()),
            "40" => Err(Status::timeout("Too large resource version").into()),
            "" => {
                let mut v = version.lock();
                let rv = v.to_string();
                *v += 10;
                Ok(list_of(&rv, vec![]))
            }
            other => panic!("unexpected rv {other}"),
        },
        |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        },
    );
    let r = reflector(lw.clone(), RecordingStore::new());
    let token = CancellationToken::new();
    for _ in 0..4 {
        let _ = r.list_and_watch(&token).await;
    }
    assert_eq!(lw.list_rvs(), vec!["0", "20", "", "30", "", "40", ""]);
}

// client-go TestReflectorResourceVersionUpdate: every event's resourceVersion reaches
// update_resource_version (the pods are named here; nameless objects are skipped by design).
#[tokio::test(start_paused = true)]
async fn reflector_resource_version_update() {
    let token = CancellationToken::new();
    let t = token.clone();
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("10", vec![])),
        move |_, _| {
            Ok(events_then_cancel(
                vec![
                    WatchEvent::Added(pod("a", "10")),
                    WatchEvent::Modified(pod("a", "20")),
                    WatchEvent::bookmark("30"),
                    WatchEvent::Deleted(pod("a", "40")),
                ],
                t.clone(),
            ))
        },
    );
    let store = RecordingStore::new();
    let r = reflector(lw, store.clone());
    r.list_and_watch(&token).await.unwrap();
    assert_eq!(store.rv_updates(), vec!["10", "20", "30", "40"]);
    assert_eq!(r.last_sync_resource_version(), "40");
}

// client-go NewFilteredListWatchFromClient's optionsModifier: the tweak applies to every list
// and watch request.
#[tokio::test(start_paused = true)]
async fn list_watch_tweak_options_apply_to_list_and_watch() {
    use futures::FutureExt;
    use kinformer::reflector::{ListOptions, ListWatch, ListerWatcher, ListerWatcherExt};
    let seen: Arc<Mutex<Vec<ListOptions>>> = Arc::default();
    let (s1, s2) = (seen.clone(), seen.clone());
    let lw: ListWatch<Pod> = ListWatch::new(
        move |o| {
            s1.lock().push(o);
            async { Ok(list_of("1", vec![])) }.boxed()
        },
        move |o| {
            s2.lock().push(o);
            async { Ok(events_then_close(vec![])) }.boxed()
        },
    )
    .with_tweak_options(|o| o.label_selector = Some("app=web".into()));
    lw.list_page(&ListOptions::default()).await.unwrap();
    let _ = lw.watch(&ListOptions::default()).await.unwrap();
    let seen = seen.lock();
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter()
            .all(|o| o.label_selector.as_deref() == Some("app=web"))
    );
}

/// A store whose `replace` always fails.
struct RefusingStore;

impl kinformer::store::ReplaceStore<Pod> for RefusingStore {
    type Error = StoreError;
    fn add(&self, _: Arc<Pod>) -> Result<(), StoreError> {
        Ok(())
    }
    fn update(&self, _: Arc<Pod>) -> Result<(), StoreError> {
        Ok(())
    }
    fn delete(&self, _: Arc<Pod>) -> Result<(), StoreError> {
        Ok(())
    }
    fn replace(&self, _: Vec<Arc<Pod>>, _: String) -> Result<(), StoreError> {
        Err(StoreError("full".into()))
    }
    fn resync(&self) -> Result<(), StoreError> {
        Ok(())
    }
    fn update_resource_version(&self, _: &str) {}
}

// client-go returns "unable to sync list result" when Replace fails; no watch starts.
#[tokio::test(start_paused = true)]
async fn a_failed_replace_ends_the_cycle_before_watching() {
    let lw = ScriptedLw::new(
        |_, _| Ok(list_of("1", vec![pod("a", "1")])),
        |_, _| panic!("no watch after a failed replace"),
    );
    let r = Reflector::builder(
        lw.clone(),
        kinformer::store::ReplaceOnce::new(RefusingStore),
    )
    .build();
    let err = r
        .list_and_watch(&CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ReflectorError::Store {
                operation: "replace",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        r.last_sync_resource_version(),
        "",
        "the version advances only after a replace"
    );
}
