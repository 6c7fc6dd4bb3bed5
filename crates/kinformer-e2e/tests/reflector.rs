//! A bare Reflector against a real kube-apiserver, with a [`CountingListerWatcher`] in between
//! to see what crossed the wire: pagination with a small page size, bookmarks, streaming lists
//! (`sendInitialEvents`) and a forced 410 (etcd compaction) followed by a relist.
//!
//! Needs `KINFORMER_E2E_KUBECONFIG` (watch cache on) and `KINFORMER_E2E_NOCACHE_KUBECONFIG`
//! (watch cache off, for pagination at `resourceVersion=0` and forced 410s); each test that
//! lacks its server prints one line and passes.

use kinformer::reflector::InitialListMode;
use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::{InformerConfig, KubeListerWatcher, reflector::Reflector};
use kinformer_e2e::{
    CountingListerWatcher, E2eEnv, MapStore, NOCACHE_KUBECONFIG_VAR, WATCHCACHE_KUBECONFIG_VAR,
    create_namespace, delete_namespace, eventually, server_snapshot,
};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use tokio_util::sync::CancellationToken;

const CONVERGE: Duration = Duration::from_secs(30);

type CmReflector = Reflector<ConfigMap, Arc<MapStore<ConfigMap>>>;

fn configmap(name: &str, value: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some(BTreeMap::from([("v".to_owned(), value.to_owned())]));
    cm
}

struct Fixture {
    client: kube::Client,
    env: E2eEnv,
    ns: String,
    cms: Api<ConfigMap>,
}

async fn fixture(var: &str, test: &str, prefix: &str) -> Option<Fixture> {
    let env = E2eEnv::from_env(var, test)?;
    let client = env.client().await.expect("client from the e2e kubeconfig");
    let ns = create_namespace(&client, prefix)
        .await
        .expect("create namespace");
    let cms = Api::namespaced(client.clone(), &ns);
    Some(Fixture {
        client,
        env,
        ns,
        cms,
    })
}

fn counting(f: &Fixture) -> CountingListerWatcher<ConfigMap> {
    let config = InformerConfig::default().namespace(f.ns.clone());
    CountingListerWatcher::new(Arc::new(KubeListerWatcher::new(f.client.clone(), &config)))
}

/// Runs `reflector` until the returned token is cancelled.
fn run(reflector: Arc<CmReflector>) -> CancellationToken {
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    tokio::spawn(async move { reflector.run(token).await });
    cancel
}

/// Waits until the store holds exactly what a fresh list returns.
async fn assert_converges(store: &MapStore<ConfigMap>, cms: &Api<ConfigMap>, what: &str) {
    let last = Arc::new(parking_lot::Mutex::new(BTreeMap::new()));
    let converged = eventually(CONVERGE, || {
        let cache = store.snapshot();
        let cms = cms.clone();
        let last = last.clone();
        async move {
            let server = server_snapshot(&cms, &ListParams::default()).await.ok()?;
            let same = cache == server;
            *last.lock() = server;
            same.then_some(())
        }
    })
    .await;
    assert!(
        converged.is_some(),
        "{what}: store never matched a fresh list within {CONVERGE:?}\nstore:  {:?}\nserver: {:?}",
        store.snapshot(),
        last.lock()
    );
}

async fn create_some(cms: &Api<ConfigMap>, names: &[&str]) {
    for name in names {
        cms.create(&PostParams::default(), &configmap(name, "0"))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn page_size_2_lists_in_pages_and_converges() {
    let Some(f) = fixture(
        NOCACHE_KUBECONFIG_VAR,
        "page_size_2_lists_in_pages_and_converges",
        "e2e-pages",
    )
    .await
    else {
        return;
    };
    create_some(&f.cms, &["a", "b", "c", "d", "e"]).await;
    let lw = Arc::new(counting(&f));
    let store = Arc::new(MapStore::default());
    let reflector = Arc::new(
        Reflector::builder(lw.clone(), store.clone())
            .name("e2e-pages")
            .config(
                &InformerConfig::default()
                    .initial_list(InitialListMode::ListThenWatch)
                    .page_size(NonZeroU32::new(2).unwrap()),
            )
            .build(),
    );
    let cancel = run(reflector);
    assert_converges(&store, &f.cms, "initial paginated list").await;
    let counts = lw.counts();
    // 5 objects in pages of at most 2: three pages, two of them asked for with a continue token
    assert!(counts.continued_lists >= 2, "{counts:?}");
    assert_eq!(counts.largest_page, 2, "{counts:?}");
    assert_eq!(store.replace_count(), 1);

    create_some(&f.cms, &["f"]).await;
    f.cms.delete("a", &DeleteParams::default()).await.unwrap();
    assert_converges(&store, &f.cms, "after the list").await;
    cancel.cancel();
    delete_namespace(&f.client, &f.ns).await;
}

#[tokio::test]
async fn bookmarks_arrive_on_a_watch_with_bookmarks_allowed() {
    let Some(f) = fixture(
        WATCHCACHE_KUBECONFIG_VAR,
        "bookmarks_arrive_on_a_watch_with_bookmarks_allowed",
        "e2e-bookmarks",
    )
    .await
    else {
        return;
    };
    create_some(&f.cms, &["a"]).await;
    // the watch cache sends a bookmark 2s before a watch's deadline: make the deadline 4s
    let lw = Arc::new(counting(&f).with_watch_timeout(4));
    let store = Arc::new(MapStore::default());
    let reflector = Arc::new(
        Reflector::builder(lw.clone(), store.clone())
            .name("e2e-bookmarks")
            .config(&InformerConfig::default().initial_list(InitialListMode::ListThenWatch))
            .build(),
    );
    let cancel = run(reflector.clone());
    assert_converges(&store, &f.cms, "initial list").await;
    let seen = eventually(CONVERGE, || {
        let c = lw.counts();
        async move { (c.bookmarks >= 1).then_some(c) }
    })
    .await;
    assert!(
        seen.is_some(),
        "no bookmark within {CONVERGE:?}: {:?}",
        lw.counts()
    );
    // a bookmark never changes the objects, and the watch kept going afterwards
    create_some(&f.cms, &["b"]).await;
    assert_converges(&store, &f.cms, "after a bookmark").await;
    assert!(lw.counts().watches >= 1);
    assert!(!reflector.last_sync_resource_version().is_empty());
    cancel.cancel();
    delete_namespace(&f.client, &f.ns).await;
}

#[tokio::test]
async fn streaming_list_fills_the_store_without_a_list_request() {
    let Some(f) = fixture(
        WATCHCACHE_KUBECONFIG_VAR,
        "streaming_list_fills_the_store_without_a_list_request",
        "e2e-watchlist",
    )
    .await
    else {
        return;
    };
    create_some(&f.cms, &["a", "b", "c"]).await;
    let lw = Arc::new(counting(&f));
    let store = Arc::new(MapStore::default());
    let reflector = Arc::new(
        Reflector::builder(lw.clone(), store.clone())
            .name("e2e-watchlist")
            .config(&InformerConfig::default().initial_list(InitialListMode::StreamingList))
            .build(),
    );
    let cancel = run(reflector);
    assert_converges(&store, &f.cms, "streaming list").await;
    let counts = lw.counts();
    assert_eq!(counts.lists, 0, "{counts:?}");
    assert!(counts.streaming_watches >= 1, "{counts:?}");
    assert_eq!(counts.initial_events_end_bookmarks, 1, "{counts:?}");
    assert_eq!(store.replace_count(), 1);

    create_some(&f.cms, &["d"]).await;
    f.cms.delete("b", &DeleteParams::default()).await.unwrap();
    assert_converges(&store, &f.cms, "live events after the streaming list").await;
    assert_eq!(lw.counts().lists, 0);
    cancel.cancel();
    delete_namespace(&f.client, &f.ns).await;
}

#[tokio::test]
async fn forced_410_after_compaction_relists_and_converges() {
    let Some(f) = fixture(
        NOCACHE_KUBECONFIG_VAR,
        "forced_410_after_compaction_relists_and_converges",
        "e2e-expired",
    )
    .await
    else {
        return;
    };
    assert!(
        f.env.compact_url.is_some(),
        "no compactURL in the state.json next to {}",
        f.env.kubeconfig.display()
    );
    create_some(&f.cms, &["a", "b"]).await;
    // watches end after 3s; the re-watch starts from the reflector's last resourceVersion
    let lw = Arc::new(counting(&f).with_watch_timeout(3));
    let store = Arc::new(MapStore::default());
    let reflector = Arc::new(
        Reflector::builder(lw.clone(), store.clone())
            .name("e2e-expired")
            .config(&InformerConfig::default().initial_list(InitialListMode::ListThenWatch))
            .build(),
    );
    let cancel = run(reflector);
    assert_converges(&store, &f.cms, "initial list").await;
    assert_eq!(store.replace_count(), 1);

    // Writes elsewhere move etcd's revision past the reflector's resourceVersion without
    // sending it an event (several, so the compaction is not at exactly its revision + 1, which
    // kube-apiserver answers with a 500 instead of 410); then compact.
    let other_ns = create_namespace(&f.client, "e2e-expired-other")
        .await
        .unwrap();
    let other: Api<ConfigMap> = Api::namespaced(f.client.clone(), &other_ns);
    create_some(&other, &["x", "y", "z"]).await;
    f.env.compact().await.expect("compact etcd");

    let relisted = eventually(CONVERGE, || {
        let c = lw.counts();
        let replaces = store.replace_count();
        async move { (c.error_codes.contains(&410) && replaces >= 2).then_some(c) }
    })
    .await;
    assert!(
        relisted.is_some(),
        "no 410 and relist within {CONVERGE:?}: {:?}, replaces {}",
        lw.counts(),
        store.replace_count()
    );
    create_some(&f.cms, &["c"]).await;
    f.cms.delete("a", &DeleteParams::default()).await.unwrap();
    assert_converges(&store, &f.cms, "after the 410").await;
    cancel.cancel();
    delete_namespace(&f.client, &other_ns).await;
    delete_namespace(&f.client, &f.ns).await;
}
