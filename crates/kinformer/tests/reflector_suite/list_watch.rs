//! The list+watch protocol: the exact request sequence for each rule, ported from client-go's
//! `reflector_test.go` as tables whose rows carry client-go's test names: single runs
//! ([`Scenario`]s), cycles that share a store (`TestReflectorListAndWatchWithErrors`, a table
//! in client-go too) and relists.

use std::num::NonZeroU32;
use std::sync::Arc;

use crate::support::*;
use k8s_openapi::api::core::v1::Pod;
use kinformer::InformerConfig;
use kinformer::reflector::{
    InitialListMode, ListOptions, ListPage, ListWatchError, Reflector, ReflectorError, Status,
    WatchEvent,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

fn reflector(
    lw: Arc<ScriptedLw>,
    store: Arc<RecordingStore>,
) -> Reflector<Pod, Arc<RecordingStore>> {
    Reflector::builder(lw, store).name("test-reflector").build()
}

fn list_foo_at_1(_: &ListOptions, _: usize) -> Result<ListPage<Pod>, ListWatchError> {
    Ok(list_of("1", vec![pod("foo", "1")]))
}

fn empty_list_at_10(_: &ListOptions, _: usize) -> Result<ListPage<Pod>, ListWatchError> {
    Ok(list_of("10", vec![]))
}

/// What the server sends in client-go's `TestReflectorListAndWatch` after its first object
/// (foo at "1"): the same in both cases.
fn later_events() -> Vec<WatchEvent<Pod>> {
    vec![
        WatchEvent::Modified(pod("foo", "2")),
        WatchEvent::Added(pod("bar", "3")),
        WatchEvent::Added(pod("baz", "4")),
        WatchEvent::Added(pod("qux", "5")),
        WatchEvent::Added(pod("zoo", "6")),
    ]
}

/// client-go's `TestReflectorListAndWatch`: whether the first state comes from a list or a
/// streaming list, the store sees the same operations and ends with the same content.
fn reflector_list_and_watch(
    name: &'static str,
    initial_list: InitialListMode,
    list: fn(&ListOptions, usize) -> Result<ListPage<Pod>, ListWatchError>,
    first_events: Vec<WatchEvent<Pod>>,
    requests: Vec<(Verb, ListOptions)>,
) -> Scenario {
    Scenario {
        name,
        initial_list,
        list,
        watch: Box::new(move |_, n, t| {
            assert_eq!(n, 1, "only one watch expected");
            let events = first_events.iter().cloned().chain(later_events()).collect();
            Ok(events_then_cancel(events, t.clone()))
        }),
        requests: Some(requests),
        first_ops: Some(vec![
            Op::Replace(name_rv_pairs(&[("foo", "1")]), "1".into()),
            Op::Update("foo".into(), "2".into()),
        ]),
        content: Some(name_rv_pairs(&[
            ("bar", "3"),
            ("baz", "4"),
            ("foo", "2"),
            ("qux", "5"),
            ("zoo", "6"),
        ])),
        last_sync_rv: Some("6"),
        ..Default::default()
    }
}

/// One list+watch run each: client-go's `TestReflectorListAndWatch` (both cases) and
/// `TestReflectorResourceVersionUpdate`.
#[tokio::test(start_paused = true)]
async fn list_and_watch() {
    run_scenarios(vec![
        reflector_list_and_watch(
            "TestReflectorListAndWatch/UseWatchList disabled",
            InitialListMode::ListThenWatch,
            list_foo_at_1,
            vec![],
            vec![list_opts("0", Some(500), None), watch_opts("1")],
        ),
        // After the end bookmark the same stream carries on as the watch.
        reflector_list_and_watch(
            "TestReflectorListAndWatch/UseWatchList enabled",
            InitialListMode::StreamingList,
            no_list,
            vec![
                WatchEvent::Added(pod("foo", "1")),
                WatchEvent::initial_events_end("1"),
            ],
            vec![watch_list_opts("")],
        ),
        // Every event's resourceVersion reaches update_resource_version (the pods are named
        // here; nameless objects are skipped by design); only the BOOKMARK's reaches bookmark
        // (client-go's ReflectorBookmarkStore: a RealFifo queues an entry per bookmark, and one
        // per event would end every batch after one change).
        Scenario {
            name: "TestReflectorResourceVersionUpdate",
            list: empty_list_at_10,
            watch: Box::new(|_, _, t| {
                Ok(events_then_cancel(
                    vec![
                        WatchEvent::Added(pod("a", "10")),
                        WatchEvent::Modified(pod("a", "20")),
                        WatchEvent::bookmark("30"),
                        WatchEvent::Deleted(pod("a", "40")),
                    ],
                    t.clone(),
                ))
            }),
            rv_updates: Some(vec!["10", "20", "30", "40"]),
            bookmarks: Some(vec!["30"]),
            last_sync_rv: Some("40"),
            ..Default::default()
        },
    ])
    .await;
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

type ListScript =
    Box<dyn FnMut(&ListOptions, usize) -> Result<ListPage<Pod>, ListWatchError> + Send>;

/// A relist case: list+watch cycles on one Reflector and store, each cycle's watch ending in a
/// 410 so the next one lists again.
struct Relist {
    /// The client-go test this row ports.
    name: &'static str,
    page_size: Option<u32>,
    list: ListScript,
    /// The store's size after each cycle (one entry per cycle; `None`: not checked then).
    sizes: Vec<Option<usize>>,
    /// The resourceVersion of every LIST request, in order.
    list_rvs: Option<Vec<&'static str>>,
    /// Every LIST request, in order.
    lists: Option<Vec<(Verb, ListOptions)>>,
    last_sync_rv: Option<&'static str>,
}

impl Default for Relist {
    fn default() -> Self {
        Self {
            name: "",
            page_size: None,
            list: Box::new(no_list),
            sizes: vec![],
            list_rvs: None,
            lists: None,
            last_sync_rv: None,
        }
    }
}

fn too_old() -> ListWatchError {
    Status::expired("The resourceVersion for the provided watch is too old.").into()
}

/// The relist rules of client-go's `reflector_test.go`: pagination, the version a relist asks
/// for, and what a 410 or a "too large resource version" makes it ask next.
#[tokio::test(start_paused = true)]
async fn relist() {
    let pods = numbered_pods(10);
    let p = move |r: std::ops::Range<usize>| pods[r].to_vec();
    let version = Arc::new(Mutex::new(30));
    let table = vec![
        // A configured page size paginates every list (here: the first list, then a relist
        // at "10").
        Relist {
            name: "TestReflectorWatchListPageSize",
            page_size: Some(4),
            list: Box::new({
                let p = p.clone();
                move |o, _| {
                    assert_eq!(o.limit, Some(4));
                    Ok(
                        match (o.resource_version.as_str(), o.continue_token.as_deref()) {
                            ("0", None) => list_of("10", vec![]),
                            (_, None) => list_of("10", p(0..4)).with_continue("C1"),
                            (_, Some("C1")) => list_of("10", p(4..8)).with_continue("C2"),
                            (_, Some("C2")) => list_of("10", p(8..10)),
                            other => panic!("unexpected {other:?}"),
                        },
                    )
                }
            }),
            sizes: vec![None, Some(10)],
            lists: Some(vec![
                list_opts("0", Some(4), None),
                list_opts("10", Some(4), None),
                list_opts("", Some(4), Some("C1")),
                list_opts("", Some(4), Some("C2")),
            ]),
            ..Default::default()
        },
        // A relist at a specific version is not paginated.
        Relist {
            name: "TestReflectorNotPaginatingNotConsistentReads",
            list: Box::new({
                let p = p.clone();
                move |o, _| match o.resource_version.as_str() {
                    "0" => Ok(list_of("10", vec![])),
                    "10" => {
                        assert_eq!(o.limit, None);
                        Ok(list_of("10", p(0..10)))
                    }
                    other => panic!("unexpected rv {other}"),
                }
            }),
            sizes: vec![None, Some(10)],
            list_rvs: Some(vec!["0", "10"]),
            ..Default::default()
        },
        // When the first list at "0" came back paginated (no watch cache), relists keep
        // paginating with 500.
        Relist {
            name: "TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled",
            list: Box::new({
                let p = p.clone();
                move |o, _| {
                    assert_eq!(o.limit, Some(500));
                    Ok(match o.continue_token.as_deref() {
                        None => list_of("10", p(0..4)).with_continue("C1"),
                        Some("C1") => list_of("10", p(4..8)).with_continue("C2"),
                        Some("C2") => list_of("10", p(8..10)),
                        other => panic!("unexpected {other:?}"),
                    })
                }
            }),
            sizes: vec![Some(10), Some(10)],
            list_rvs: Some(vec!["0", "", "", "10", "", ""]),
            ..Default::default()
        },
        // A relist asks for the last synced version.
        Relist {
            name: "TestReflectorResyncWithResourceVersion",
            list: Box::new({
                let p = p.clone();
                move |o, _| match o.resource_version.as_str() {
                    "0" => Ok(list_of("10", p(0..4))),
                    "10" => Ok(list_of("11", p(0..8))),
                    other => panic!("unexpected rv {other}"),
                }
            }),
            sizes: vec![Some(4), Some(8)],
            list_rvs: Some(vec!["0", "10"]),
            ..Default::default()
        },
        // A 410 on a relist lists again at "".
        Relist {
            name: "TestReflectorExpiredExactResourceVersion",
            list: Box::new({
                let p = p.clone();
                move |o, _| match o.resource_version.as_str() {
                    "0" => Ok(list_of("10", p(0..4))),
                    "10" => Err(too_old()),
                    "" => Ok(list_of("11", p(0..8))),
                    other => panic!("unexpected rv {other}"),
                }
            }),
            sizes: vec![Some(4), Some(8)],
            list_rvs: Some(vec!["0", "10", ""]),
            last_sync_rv: Some("11"),
            ..Default::default()
        },
        // An expired continue token → one full list at the original version.
        Relist {
            name: "TestReflectorFullListIfExpired",
            page_size: Some(4),
            list: Box::new({
                let p = p.clone();
                move |o, _| match (
                    o.resource_version.as_str(),
                    o.continue_token.as_deref(),
                    o.limit,
                ) {
                    ("0", None, Some(4)) => Ok(list_of("10", p(0..4))),
                    ("10", None, Some(4)) => Ok(list_of("11", p(0..4)).with_continue("C1")),
                    ("", Some("C1"), Some(4)) => Err(too_old()),
                    ("10", None, None) => Ok(list_of("11", p(0..8))),
                    other => panic!("unexpected list options {other:?}"),
                }
            }),
            sizes: vec![Some(4), Some(8)],
            list_rvs: Some(vec!["0", "10", "", "10"]),
            ..Default::default()
        },
        // The three shapes of "too large resource version" each make the Reflector list again
        // at "".
        Relist {
            name: "TestReflectorFullListIfTooLarge",
            list: Box::new(move |o, _| match o.resource_version.as_str() {
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
            }),
            sizes: vec![None; 4],
            list_rvs: Some(vec!["0", "20", "", "30", "", "40", ""]),
            ..Default::default()
        },
    ];
    for case in table {
        let name = case.name;
        let lw = ScriptedLw::new(case.list, |_, _| {
            Ok(events_then_close(vec![WatchEvent::Error(Status::expired(
                "gone",
            ))]))
        });
        let store = RecordingStore::new();
        let mut builder = Reflector::builder(lw.clone(), store.clone()).name(name);
        if let Some(size) = case.page_size {
            builder = builder
                .config(&InformerConfig::default().page_size(NonZeroU32::new(size).unwrap()));
        }
        let r = builder.build();
        let token = CancellationToken::new();
        for (cycle, size) in case.sizes.into_iter().enumerate() {
            let result = r.list_and_watch(&token).await;
            assert!(
                result.as_ref().is_err_and(|e| e.is_expired()),
                "{name}, cycle {cycle}: every cycle ends with the watch's 410, got {result:?}"
            );
            if let Some(size) = size {
                assert_eq!(store.content().len(), size, "{name}, cycle {cycle}");
            }
        }
        if let Some(rvs) = case.list_rvs {
            assert_eq!(lw.list_rvs(), rvs, "{name}");
        }
        if let Some(lists) = case.lists {
            let got: Vec<_> = lw
                .requests_without_timeouts(300, 600)
                .into_iter()
                .filter(|(v, _)| *v == Verb::List)
                .collect();
            assert_eq!(got, lists, "{name}");
        }
        if let Some(rv) = case.last_sync_rv {
            assert_eq!(r.last_sync_resource_version(), rv, "{name}");
        }
    }
}

// client-go NewFilteredListWatchFromClient's optionsModifier: the tweak applies to every list
// and watch request.
/// The configuration's selectors and tweak (client-go's `NewFilteredListWatchFromClient`
/// options modifier, the factory's `WithTweakListOptions`) reach every list and watch the
/// Reflector sends, whatever its source: here two closures.
#[tokio::test(start_paused = true)]
async fn config_selectors_and_tweak_apply_to_every_list_and_watch() {
    use futures::FutureExt;
    use kinformer::reflector::ListWatch;
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
    );
    let config = InformerConfig::default()
        .initial_list(InitialListMode::ListThenWatch)
        .label_selector("app=web")
        .field_selector("spec.nodeName=n1")
        .tweak_list_options(|o| {
            o.label_selector = o.label_selector.take().map(|l| l + ",tier=front")
        });
    let r = Reflector::builder(Arc::new(lw), RecordingStore::new())
        .config(&config)
        .build();
    let _ = r.list_and_watch(&CancellationToken::new()).await;
    let seen = seen.lock();
    assert_eq!(seen.len(), 2, "one list, one watch");
    for o in seen.iter() {
        assert_eq!(o.label_selector.as_deref(), Some("app=web,tier=front"));
        assert_eq!(o.field_selector.as_deref(), Some("spec.nodeName=n1"));
    }
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
