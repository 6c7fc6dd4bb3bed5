//! An informer with default settings against a real kube-apiserver whose `WatchList` feature
//! gate is off (`E2E_WATCH_LIST=false`): the server refuses the streaming list with `422
//! Invalid`; the informer lists instead, syncs, keeps watching, and remembers the refusal, so
//! a relist (forced by an etcd compaction: a 410) lists at once without asking for a
//! streaming list again.
//!
//! Needs `KINFORMER_E2E_NO_WATCH_LIST_KUBECONFIG` (a harness started with `-watch-list=false`
//! and, for the forced 410, the watch cache off); without it the test prints one line and
//! passes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::{InformerConfig, KubeListerWatcher, SharedIndexInformer};
use kinformer_e2e::{
    CountingListerWatcher, E2eEnv, NO_WATCH_LIST_KUBECONFIG_VAR, create_namespace,
    delete_namespace, eventually, server_snapshot, snapshot,
};
use kube::Api;
use kube::api::{ListParams, PostParams};
use tokio_util::sync::CancellationToken;

const CONVERGE: Duration = Duration::from_secs(30);

fn configmap(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some(BTreeMap::from([("v".to_owned(), "0".to_owned())]));
    cm
}

async fn create_some(cms: &Api<ConfigMap>, names: &[&str]) {
    for name in names {
        cms.create(&PostParams::default(), &configmap(name))
            .await
            .unwrap();
    }
}

/// Waits until the informer's cache holds exactly what a fresh list returns.
async fn assert_converges(
    informer: &SharedIndexInformer<ConfigMap>,
    cms: &Api<ConfigMap>,
    what: &str,
) {
    let converged = eventually(CONVERGE, || {
        let cache = snapshot(informer.indexer().list().iter().map(|o| &**o));
        let cms = cms.clone();
        async move {
            let server = server_snapshot(&cms, &ListParams::default()).await.ok()?;
            (cache == server).then_some(())
        }
    })
    .await;
    assert!(
        converged.is_some(),
        "{what}: the cache never matched a fresh list within {CONVERGE:?}"
    );
}

#[tokio::test]
async fn an_informer_lists_when_streaming_lists_are_refused_and_remembers_it() {
    let test = "an_informer_lists_when_streaming_lists_are_refused_and_remembers_it";
    let Some(env) = E2eEnv::from_env(NO_WATCH_LIST_KUBECONFIG_VAR, test) else {
        return;
    };
    let client = env.client().await.expect("client from the e2e kubeconfig");
    let ns = create_namespace(&client, "e2e-nowatchlist").await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    create_some(&cms, &["a", "b", "c"]).await;

    // default settings (a streaming list first, as client-go 1.35+), scoped to the namespace;
    // watches shortened on the wire so the re-watch after the compaction comes soon
    let config = InformerConfig::default().namespace(ns.clone());
    let lw = Arc::new(
        CountingListerWatcher::new(Arc::new(KubeListerWatcher::new(client.clone(), &config)))
            .with_watch_timeout(3),
    );
    let informer = SharedIndexInformer::builder(lw.clone())
        .config(config)
        .build();
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    let synced = eventually(CONVERGE, || async { informer.has_synced().then_some(()) }).await;
    assert!(synced.is_some(), "never synced: {:?}", lw.counts());
    assert_converges(&informer, &cms, "initial list").await;
    let counts = lw.counts();
    assert_eq!(
        counts.streaming_watches, 1,
        "one streaming list, refused: {counts:?}"
    );
    assert_eq!(counts.error_codes.first(), Some(&422), "{counts:?}");
    assert!(counts.lists >= 1, "{counts:?}");

    // it keeps watching
    create_some(&cms, &["d"]).await;
    cms.delete("a", &Default::default()).await.unwrap();
    assert_converges(&informer, &cms, "live events").await;

    // a relist: writes elsewhere, then a compaction past the informer's resourceVersion; its
    // next re-watch is answered 410 and it lists again, without a streaming list
    assert!(
        env.compact_url.is_some(),
        "no compactURL next to {}",
        env.kubeconfig.display()
    );
    let lists_before = lw.counts().lists;
    let other_ns = create_namespace(&client, "e2e-nowatchlist-other")
        .await
        .unwrap();
    let other: Api<ConfigMap> = Api::namespaced(client.clone(), &other_ns);
    create_some(&other, &["x", "y", "z"]).await;
    env.compact().await.expect("compact etcd");
    let relisted = eventually(CONVERGE, || {
        let c = lw.counts();
        async move { (c.error_codes.contains(&410) && c.lists > lists_before).then_some(c) }
    })
    .await;
    assert!(
        relisted.is_some(),
        "no 410 and relist within {CONVERGE:?}: {:?}",
        lw.counts()
    );
    create_some(&cms, &["e"]).await;
    assert_converges(&informer, &cms, "after the relist").await;
    let counts = lw.counts();
    assert_eq!(
        counts.streaming_watches, 1,
        "the relist did not stream: {counts:?}"
    );

    cancel.cancel();
    task.await.unwrap();
    delete_namespace(&client, &other_ns).await;
    delete_namespace(&client, &ns).await;
}
