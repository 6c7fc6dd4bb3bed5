use super::*;
use serde_json::json;

fn obj(name: &str, rv: u64, v: i64) -> StoredObject {
    StoredObject::from_value(
        &json!({"metadata": {"name": name, "namespace": "ns"}, "v": v}),
        "ns",
        name,
        "uid",
        rv,
        &[],
    )
}

fn put(store: &Store, name: &str, v: i64) -> u64 {
    store
        .mutate("pods", &format!("ns/{name}"), |_, rev| {
            Ok(Mutation::Put(Arc::new(obj(name, rev, v)), rev))
        })
        .unwrap()
}

fn del(store: &Store, name: &str) -> u64 {
    store
        .mutate("pods", &format!("ns/{name}"), |_, rev| {
            Ok(Mutation::Delete(Arc::new(obj(name, rev, 0)), rev))
        })
        .unwrap()
}

#[test]
fn revisions_increase_by_one_per_write() {
    let s = Store::new(HistoryConfig::default());
    assert_eq!(s.revision(), 1);
    assert_eq!(put(&s, "a", 1), 2);
    assert_eq!(put(&s, "b", 1), 3);
    assert_eq!(del(&s, "a"), 4);
    assert_eq!(s.revision(), 4);
    let nothing = s
        .mutate("pods", "ns/b", |_, _| Ok(Mutation::Nothing(0u64)))
        .unwrap();
    assert_eq!(nothing, 0);
    assert_eq!(s.revision(), 4, "a no-op write takes no revision");
}

#[test]
fn past_states_are_reconstructed() {
    let s = Store::new(HistoryConfig::default());
    put(&s, "a", 1); // 2
    put(&s, "b", 1); // 3
    put(&s, "a", 2); // 4
    del(&s, "b"); // 5
    let names = |at| {
        let (rv, objs) = s.list("pods", Some(at), "", "").unwrap();
        (
            rv,
            objs.iter()
                .map(|o| (o.name.clone(), o.resource_version))
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(names(2), (2, vec![("a".into(), 2)]));
    assert_eq!(names(3), (3, vec![("a".into(), 2), ("b".into(), 3)]));
    assert_eq!(names(4), (4, vec![("a".into(), 4), ("b".into(), 3)]));
    assert_eq!(names(5), (5, vec![("a".into(), 4)]));
    assert_eq!(
        s.list("pods", Some(6), "", "").unwrap_err(),
        ReadError::Future {
            requested: 6,
            current: 5
        }
    );
}

#[test]
fn compaction_makes_old_revisions_gone() {
    let s = Store::new(HistoryConfig::default());
    put(&s, "a", 1);
    put(&s, "a", 2);
    put(&s, "a", 3); // 4
    assert_eq!(s.compact(3), 3);
    assert_eq!(
        s.list("pods", Some(2), "", "").unwrap_err(),
        ReadError::Compacted {
            requested: 2,
            compacted: 3
        }
    );
    assert!(s.list("pods", Some(3), "", "").is_ok());
    assert_eq!(
        s.events_after(2, 10).unwrap_err(),
        ReadError::Compacted {
            requested: 2,
            compacted: 3
        }
    );
    let (evs, next) = s.events_after(3, 10).unwrap();
    assert_eq!(evs.len(), 1);
    assert_eq!(next, 4);
}

#[test]
fn history_is_bounded_by_count() {
    let s = Store::new(HistoryConfig {
        max_events: 3,
        max_age: None,
    });
    for i in 0..10 {
        put(&s, "a", i);
    }
    assert_eq!(s.history_len(), 3);
    assert_eq!(s.compacted(), 8);
    assert_eq!(s.revision(), 11);
}

#[tokio::test(start_paused = true)]
async fn history_is_bounded_by_age() {
    let s = Store::new(HistoryConfig {
        max_events: 100,
        max_age: Some(Duration::from_secs(60)),
    });
    put(&s, "a", 1); // 2
    put(&s, "a", 2); // 3
    tokio::time::advance(Duration::from_secs(61)).await;
    put(&s, "a", 3); // 4
    assert_eq!(s.history_len(), 1);
    assert_eq!(s.compacted(), 3);
}

#[test]
fn prefix_and_start_bound_the_list() {
    let s = Store::new(HistoryConfig::default());
    for n in ["a", "b", "c"] {
        put(&s, n, 1);
    }
    let (_, objs) = s.list("pods", None, "ns/", "ns/b").unwrap();
    assert_eq!(
        objs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        ["b", "c"]
    );
    let (_, objs) = s.list("pods", None, "other/", "").unwrap();
    assert!(objs.is_empty());
}

#[test]
fn namespace_prefixes_do_not_leak_into_similar_names() {
    let s = Store::new(HistoryConfig::default());
    for ns in ["a", "a-b", "a0", "a.c", "ab"] {
        let key = format!("{ns}/p");
        s.mutate("pods", &key, |_, rev| {
            let o = StoredObject::from_value(&json!({}), ns, "p", "u", rev, &[]);
            Ok(Mutation::Put(Arc::new(o), ()))
        })
        .unwrap();
    }
    let (_, objs) = s.list("pods", None, "a/", "").unwrap();
    assert_eq!(
        objs.iter().map(|o| o.key.as_str()).collect::<Vec<_>>(),
        ["a/p"]
    );
    let (_, objs, rest) = s.list_page("pods", None, "", "", 2, None).unwrap();
    assert_eq!((objs.len(), rest), (2, 3));
}

#[test]
fn events_after_truncates_and_resumes() {
    let s = Store::new(HistoryConfig::default());
    for i in 0..5 {
        put(&s, "a", i); // revs 2..=6
    }
    let (evs, next) = s.events_after(1, 2).unwrap();
    assert_eq!(evs.iter().map(|e| e.revision).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(next, 3);
    let (evs, next) = s.events_after(next, 10).unwrap();
    assert_eq!(
        evs.iter().map(|e| e.revision).collect::<Vec<_>>(),
        [4, 5, 6]
    );
    assert_eq!(next, 6);
}

/// `lose` removes an object without a revision or an event: the current and exact past lists
/// after its last write lack it, the history does not mention it, and the revision is unchanged.
#[test]
fn a_lost_object_vanishes_without_an_event() {
    let s = Store::new(HistoryConfig::default());
    put(&s, "a", 1); // 2
    put(&s, "b", 1); // 3
    put(&s, "c", 1); // 4
    let history = s.history_len();
    assert!(s.lose("pods", "ns/b"));
    assert!(!s.lose("pods", "ns/b"), "already gone");
    assert_eq!(s.revision(), 4, "no revision taken");
    assert_eq!(s.history_len(), history, "no event recorded");
    let names = |at| {
        let (_, objs) = s.list("pods", at, "", "").unwrap();
        objs.iter().map(|o| o.name.clone()).collect::<Vec<_>>()
    };
    assert_eq!(names(None), ["a", "c"]);
    assert_eq!(
        names(Some(4)),
        ["a", "c"],
        "an exact list at 4 shows the loss"
    );
    assert_eq!(
        names(Some(3)),
        ["a"],
        "c's creation is undone; b stays lost"
    );
    let (events, _) = s.events_after(3, 100).unwrap();
    assert_eq!(events.len(), 1, "only c's creation after revision 3");
    assert!(s.get("pods", "ns/b").is_none());
}

#[test]
fn an_object_replaced_unrecorded_keeps_its_version_and_tells_no_watch() {
    let s = Store::new(HistoryConfig::default());
    let rv = put(&s, "a", 1);
    let events = s.events_after(1, 10).unwrap().0.len();
    // the same version read differently
    assert!(s.replace_unrecorded("pods", "ns/a", Arc::new(obj("a", rv, 7))));
    let live = s.get("pods", "ns/a").unwrap();
    assert_eq!(
        (live.resource_version, live.to_value()["v"].clone()),
        (rv, json!(7))
    );
    assert_eq!(s.revision(), rv, "no revision taken");
    assert_eq!(s.events_after(1, 10).unwrap().0.len(), events, "no event");
    // not over a newer version, nor where nothing is
    put(&s, "a", 2);
    assert!(!s.replace_unrecorded("pods", "ns/a", Arc::new(obj("a", rv, 9))));
    assert_eq!(s.get("pods", "ns/a").unwrap().to_value()["v"], json!(2));
    assert!(!s.replace_unrecorded("pods", "ns/b", Arc::new(obj("b", rv, 9))));
}

#[test]
fn restarted_watches_of_one_resource_refuse_older_versions() {
    let s = Store::new(HistoryConfig::default());
    let first = put(&s, "a", 1);
    put(&s, "a", 2);
    assert_eq!(s.watch_floor("pods"), 0);
    let mut rx = s.subscribe();
    rx.borrow_and_update();
    let floor = s.restart_watches("pods");
    assert_eq!(floor, s.revision());
    assert_eq!(s.watch_floor("pods"), floor);
    assert!(rx.has_changed().unwrap(), "watches are woken to end");
    assert_eq!(
        s.check_watchable("pods", first),
        Err(ReadError::Compacted {
            requested: first,
            compacted: floor
        })
    );
    assert_eq!(s.check_watchable("pods", floor), Ok(()));
    // other resources keep their history
    assert_eq!(s.check_watchable("configmaps", first), Ok(()));
}
