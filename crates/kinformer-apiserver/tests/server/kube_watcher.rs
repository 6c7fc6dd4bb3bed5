//! kube-rs's own watcher converges to the server's exact state through a paginated initial
//! list, live events, bookmarks, a 410 relist and a dropped connection.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kinformer_apiserver::{RunningServer, ServerConfig, seed, start};
use kube::runtime::watcher;
use parking_lot::Mutex;
use tokio::sync::Notify;

/// (namespace/name) -> (resourceVersion, uid)
type Cache = BTreeMap<String, (String, String)>;

#[derive(Default)]
struct Mirror {
    cache: Mutex<Cache>,
    inits: Mutex<usize>,
    changed: Notify,
}

fn key(p: &Pod) -> (String, (String, String)) {
    let m = &p.metadata;
    (
        format!(
            "{}/{}",
            m.namespace.clone().unwrap_or_default(),
            m.name.clone().unwrap_or_default()
        ),
        (
            m.resource_version.clone().unwrap_or_default(),
            m.uid.clone().unwrap_or_default(),
        ),
    )
}

fn truth(s: &RunningServer) -> Cache {
    s.state("pods", None)
        .unwrap()
        .objects
        .into_iter()
        .map(|o| {
            (
                format!("{}/{}", o.namespace, o.name),
                (o.resource_version, o.uid),
            )
        })
        .collect()
}

async fn converge(m: &Mirror, s: &RunningServer) {
    let want = truth(s);
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let notified = m.changed.notified();
            if *m.cache.lock() == want {
                return;
            }
            notified.await;
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "watcher did not converge: have {:?}, want {:?}",
            m.cache.lock().len(),
            want.len()
        )
    });
}

fn requests_with(s: &RunningServer, needle: &str) -> Vec<String> {
    s.requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/pods") && r.query.contains(needle))
        .map(|r| r.query)
        .collect()
}

#[tokio::test]
async fn kube_watcher_converges_through_pagination_events_bookmarks_relist_and_drops() {
    let s = start(ServerConfig::default().bookmark_interval(Duration::from_millis(100)))
        .await
        .unwrap();
    s.seed_pods(25, 3).unwrap();
    let api: kube::Api<Pod> = kube::Api::all(s.client());
    let mirror = Arc::new(Mirror::default());
    let m = mirror.clone();
    let cfg = watcher::Config::default().page_size(10);
    let task = tokio::spawn(async move {
        let mut stream = watcher(api, cfg).boxed();
        let mut buffer = Cache::new();
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(watcher::Event::Init) => {
                    buffer.clear();
                    *m.inits.lock() += 1;
                }
                Ok(watcher::Event::InitApply(p)) => {
                    let (k, v) = key(&p);
                    buffer.insert(k, v);
                }
                Ok(watcher::Event::InitDone) => *m.cache.lock() = std::mem::take(&mut buffer),
                Ok(watcher::Event::Apply(p)) => {
                    let (k, v) = key(&p);
                    m.cache.lock().insert(k, v);
                }
                Ok(watcher::Event::Delete(p)) => {
                    m.cache.lock().remove(&key(&p).0);
                }
                Err(_) => {} // the watcher recovers by itself on the next poll
            }
            m.changed.notify_waiters();
        }
    });

    // 1. Paginated initial list: 25 pods in pages of 10.
    converge(&mirror, &s).await;
    let pages = requests_with(&s, "limit=10");
    assert_eq!(pages.len(), 3, "three pages: {pages:?}");
    assert_eq!(pages.iter().filter(|q| q.contains("continue=")).count(), 2);
    assert_eq!(*mirror.inits.lock(), 1);

    // 2. Live events.
    s.create_value("pods", Some("ns-0"), seed::pod("ns-0", "live-1", 1))
        .unwrap();
    s.delete_value("pods", Some("ns-1"), "pod-000001").unwrap();
    let mut p = s.state("pods", Some("ns-2")).unwrap().objects[0]
        .object
        .clone();
    p["metadata"]["labels"]["changed"] = "yes".into();
    s.update_value("pods", Some("ns-2"), p).unwrap();
    converge(&mirror, &s).await;

    // 3. Bookmarks: the watch asked for them, and after a drop the watcher resumes from a
    // bookmark's revision (newer than any pod event, since only configmaps changed).
    assert!(!requests_with(&s, "allowWatchBookmarks=true").is_empty());
    let last_pod_rv = s.revision();
    s.create_value(
        "configmaps",
        Some("default"),
        seed::configmap("default", "bump", 1),
    )
    .unwrap();
    let bumped = s.revision();
    assert!(bumped > last_pod_rv);
    assert!(
        s.wait_for_bookmark(bumped, Duration::from_secs(10)).await,
        "a bookmark was sent"
    );
    // 4. Dropped connection with changes made meanwhile: resumed from the bookmark's revision,
    // without a relist.
    s.clear_requests();
    s.faults().drop_watches();
    s.create_value("pods", Some("ns-0"), seed::pod("ns-0", "live-2", 2))
        .unwrap();
    converge(&mirror, &s).await;
    let rewatch = s
        .requests()
        .into_iter()
        .find(|r| r.verb.as_deref() == Some("watch"))
        .expect("re-watched");
    assert!(
        rewatch.query.contains(&format!("resourceVersion={bumped}")),
        "resumed from the bookmark: {}",
        rewatch.query
    );
    assert_eq!(
        *mirror.inits.lock(),
        1,
        "a dropped connection does not relist"
    );

    // 5. 410: changes the watcher has not seen are compacted away, the watch is dropped; the
    // re-watch gets 410 and the watcher relists.
    s.faults().pause_watches();
    s.create_value("pods", Some("ns-1"), seed::pod("ns-1", "unseen", 3))
        .unwrap();
    s.delete_value("pods", Some("ns-0"), "live-1").unwrap();
    s.faults().compact_now();
    s.faults().drop_watches();
    s.faults().resume_watches();
    converge(&mirror, &s).await;
    assert_eq!(*mirror.inits.lock(), 2, "exactly one relist after 410");
    assert!(
        s.requests()
            .iter()
            .any(|r| r.verb.as_deref() == Some("list")),
        "relisted"
    );

    task.abort();
    s.shutdown().await;
}

#[tokio::test]
async fn kube_watcher_with_streaming_lists_converges() {
    let s = start(ServerConfig::default()).await.unwrap();
    s.seed_pods(12, 2).unwrap();
    let api: kube::Api<Pod> = kube::Api::all(s.client());
    let mirror = Arc::new(Mirror::default());
    let m = mirror.clone();
    let cfg = watcher::Config::default().streaming_lists();
    let task = tokio::spawn(async move {
        let mut stream = watcher(api, cfg).boxed();
        let mut buffer = Cache::new();
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(watcher::Event::Init) => {
                    buffer.clear();
                    *m.inits.lock() += 1;
                }
                Ok(watcher::Event::InitApply(p)) => {
                    let (k, v) = key(&p);
                    buffer.insert(k, v);
                }
                Ok(watcher::Event::InitDone) => *m.cache.lock() = std::mem::take(&mut buffer),
                Ok(watcher::Event::Apply(p)) => {
                    let (k, v) = key(&p);
                    m.cache.lock().insert(k, v);
                }
                Ok(watcher::Event::Delete(p)) => {
                    m.cache.lock().remove(&key(&p).0);
                }
                Err(_) => {}
            }
            m.changed.notify_waiters();
        }
    });
    converge(&mirror, &s).await;
    // The initial state came from a watch with sendInitialEvents, not from a LIST.
    assert!(!requests_with(&s, "sendInitialEvents=true").is_empty());
    assert!(
        s.requests()
            .iter()
            .all(|r| r.verb.as_deref() != Some("list"))
    );
    s.delete_value("pods", Some("ns-0"), "pod-000000").unwrap();
    s.create_value("pods", Some("ns-1"), seed::pod("ns-1", "new", 5))
        .unwrap();
    converge(&mirror, &s).await;
    task.abort();
    s.shutdown().await;
}
