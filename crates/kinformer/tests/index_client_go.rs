//! Ports of client-go's `tools/cache/index_test.go`, named after the cases they port.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kinformer::{IndexFunc, Indexer, Indexers, object::meta_namespace_key_func};
use kube::api::ObjectMeta;

/// client-go's `testIndexFunc`: the `foo` label.
fn test_index_func() -> IndexFunc<Pod> {
    Arc::new(|pod: &Pod| {
        Ok(vec![
            pod.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("foo"))
                .cloned()
                .unwrap_or_default(),
        ])
    })
}

/// client-go's `testUsersIndexFunc`: the comma-separated `users` annotation.
fn test_users_index_func() -> IndexFunc<Pod> {
    Arc::new(|pod: &Pod| {
        let users = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("users"))
            .cloned()
            .unwrap_or_default();
        Ok(users.split(',').map(str::to_owned).collect())
    })
}

fn pod_with_label(name: &str, foo_value: &str) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("foo".to_owned(), foo_value.to_owned())])),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn pod_with_users(name: &str, users: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: Some(BTreeMap::from([("users".to_owned(), users.to_owned())])),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn names(pods: &[Arc<Pod>]) -> BTreeSet<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

#[test]
fn test_get_index_func_values() {
    let index = Indexer::new(
        meta_namespace_key_func(),
        Indexers::from([("testmodes".to_owned(), test_index_func())]),
    );
    index.add(pod_with_label("one", "bar")).unwrap();
    index.add(pod_with_label("two", "bar")).unwrap();
    index.add(pod_with_label("tre", "biz")).unwrap();

    let keys = index.list_index_func_values("testmodes");
    assert_eq!(keys.len(), 2, "expected 2 keys but got {keys:?}");
    for key in &keys {
        assert!(key == "bar" || key == "biz", "unexpected value {key}");
    }
}

#[test]
fn test_multi_index_keys() {
    let index = Indexer::new(
        meta_namespace_key_func(),
        Indexers::from([("byUser".to_owned(), test_users_index_func())]),
    );
    let pod1 = Arc::new(pod_with_users("one", "ernie,bert"));
    let pod2 = Arc::new(pod_with_users("two", "bert,oscar"));
    let pod3 = Arc::new(pod_with_users("tre", "ernie,elmo"));
    index.add(pod1).unwrap();
    index.add(pod2.clone()).unwrap();
    index.add(pod3.clone()).unwrap();

    let set = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    let expected = [
        ("ernie", set(&["one", "tre"])),
        ("bert", set(&["one", "two"])),
        ("elmo", set(&["tre"])),
        ("oscar", set(&["two"])),
        ("elmo1", set(&[])),
    ];
    for (user, want) in expected {
        let found = names(&index.by_index("byUser", user).unwrap());
        assert_eq!(found, want, "index {user}");
    }

    index.delete(&pod3).unwrap();
    let ernie_pods = index.by_index("byUser", "ernie").unwrap();
    assert_eq!(names(&ernie_pods), set(&["one"]));
    let elmo_pods = index.by_index("byUser", "elmo").unwrap();
    assert!(
        elmo_pods.is_empty(),
        "expected 0 pods but got {}",
        elmo_pods.len()
    );

    let mut copy_of_pod2 = (*pod2).clone();
    copy_of_pod2
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert("users".into(), "oscar".into());
    index.update(Arc::new(copy_of_pod2)).unwrap();
    let bert_pods = index.by_index("byUser", "bert").unwrap();
    assert_eq!(names(&bert_pods), set(&["one"]));
}
