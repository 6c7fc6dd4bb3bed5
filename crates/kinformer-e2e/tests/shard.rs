//! Sharded informers (KEP-5866 `shardSelector`) against a real kube-apiserver: shards by uid
//! and by namespace partition the objects (disjoint caches whose union is a fresh list) through
//! creates, updates and deletes, on streaming list and list+watch.
//!
//! Works on both harnesses: a kube-apiserver 1.36+ with `--feature-gates=ShardedListAndWatch=true`
//! filters and echoes the selector in `metadata.shardInfo` (checked, JSON and protobuf); one
//! without the gate (1.35) ignores it and the informers filter on their own side. The test
//! prints which it found.
//!
//! Needs `KINFORMER_E2E_KUBECONFIG` (see `./scripts/test.sh`); skipped with one line otherwise.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::reflector::{InitialListMode, ListOptions, ListerWatcherExt};
use kinformer::shard::{Shard, ShardKey};
use kinformer::source::WireFormat;
use kinformer::{InformerConfig, KubeListerWatcher, SharedIndexInformer};
use kinformer_e2e::{
    E2eEnv, WATCHCACHE_KUBECONFIG_VAR, config, create_namespace, delete_namespace, eventually,
    server_snapshot, snapshot,
};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use tokio_util::sync::CancellationToken;

const CONVERGE: Duration = Duration::from_secs(60);

fn configmap(name: &str, run: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.labels = Some(BTreeMap::from([("shard-e2e".to_owned(), run.to_owned())]));
    cm.data = Some(BTreeMap::from([("v".to_owned(), "0".to_owned())]));
    cm
}

/// Whether the server honours the selector: a raw list of one shard, in `wire`, checked
/// either way. `Some(true)`: shardInfo echoed and only the shard sent.
async fn server_honours(
    client: &kube::Client,
    shard: &Shard,
    run: &str,
    total: usize,
    wire: WireFormat,
) -> bool {
    let lw = KubeListerWatcher::<ConfigMap>::new(
        client.clone(),
        &InformerConfig::default().wire_format(wire),
    );
    let page = lw
        .list_page(&ListOptions {
            label_selector: Some(format!("shard-e2e={run}")),
            shard_selector: Some(shard.selector()),
            ..Default::default()
        })
        .await
        .expect("raw sharded list");
    match page.shard_info.as_deref() {
        Some(echoed) => {
            assert_eq!(echoed, shard.selector(), "{wire:?}: the echoed selector");
            assert!(
                page.items.iter().all(|o| shard.contains(o.as_ref())),
                "{wire:?}: the server sent objects outside the shard it echoed"
            );
            assert!(page.items.len() < total, "{wire:?}: nothing was filtered");
            true
        }
        None => {
            assert_eq!(
                page.items.len(),
                total,
                "{wire:?}: no shardInfo, yet filtered"
            );
            false
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_informers_partition_a_real_servers_objects() {
    let test = "sharded_informers_partition_a_real_servers_objects";
    let Some(env) = E2eEnv::from_env(WATCHCACHE_KUBECONFIG_VAR, test) else {
        return;
    };
    let client = env.client().await.expect("client from the e2e kubeconfig");
    let mut namespaces = Vec::new();
    for _ in 0..4 {
        namespaces.push(
            create_namespace(&client, "shard")
                .await
                .expect("create namespace"),
        );
    }
    let run = namespaces[0].clone();
    let selector = format!("shard-e2e={run}");
    for ns in &namespaces {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for i in 0..15 {
            api.create(&PostParams::default(), &configmap(&format!("cm-{i}"), &run))
                .await
                .expect("create");
        }
    }
    let total = 60;

    let probe = Shard::nth(ShardKey::Uid, 0, 2).unwrap();
    let json = server_honours(&client, &probe, &run, total, WireFormat::Json).await;
    let pb = server_honours(&client, &probe, &run, total, WireFormat::Protobuf).await;
    assert_eq!(json, pb, "JSON and protobuf lists disagree about shardInfo");
    let _ = writeln!(
        std::io::stderr(),
        "{test}: {}",
        if json {
            "the server honours the shard selector (ShardedListAndWatch on: shardInfo echoed)"
        } else {
            "the server ignores the shard selector (no ShardedListAndWatch): testing the client-side fallback"
        }
    );

    // n = 1, 2, 3 by uid and 2 by namespace; list modes alternate
    let mut groups: Vec<Vec<(Shard, SharedIndexInformer<ConfigMap>)>> = Vec::new();
    let mut i = 0;
    for (key, n) in [
        (ShardKey::Uid, 1),
        (ShardKey::Uid, 2),
        (ShardKey::Uid, 3),
        (ShardKey::Namespace, 2),
    ] {
        let mut group = Vec::new();
        for s in 0..n {
            i += 1;
            let shard = Shard::nth(key, s, n).unwrap();
            let informer = SharedIndexInformer::new(
                client.clone(),
                config::<ConfigMap>()
                    .label_selector(selector.clone())
                    .shard(shard.clone())
                    .initial_list(if i % 2 == 0 {
                        InitialListMode::StreamingList
                    } else {
                        InitialListMode::ListThenWatch
                    }),
            );
            group.push((shard, informer));
        }
        groups.push(group);
    }
    let cancel = CancellationToken::new();
    for group in &groups {
        for (_, informer) in group {
            let (inf, c) = (informer.clone(), cancel.clone());
            tokio::spawn(async move { inf.run(c).await });
        }
    }
    let all: Api<ConfigMap> = Api::all(client.clone());
    let params = ListParams::default().labels(&selector);
    let check = |round: &str| {
        let groups = &groups;
        let all = all.clone();
        let params = params.clone();
        let round = round.to_owned();
        async move {
            let converged = eventually(CONVERGE, || {
                let all = all.clone();
                let params = params.clone();
                let round = round.clone();
                async move {
                    let server = server_snapshot(&all, &params).await.ok()?;
                    for group in groups {
                        let mut union = BTreeMap::new();
                        for (shard, informer) in group {
                            let list = informer.indexer().list();
                            if list.iter().any(|o| !shard.contains(o.as_ref())) {
                                panic!("{round}: {shard} caches an object outside the shard");
                            }
                            let cache = snapshot(list.iter().map(|o| o.as_ref()));
                            for (k, v) in cache {
                                if union.insert(k.clone(), v).is_some() {
                                    panic!("{round}: {k} is cached by two shards");
                                }
                            }
                        }
                        if union != server {
                            return None;
                        }
                    }
                    Some(())
                }
            })
            .await;
            assert!(
                converged.is_some(),
                "{round}: the shards never covered the server's objects"
            );
        }
    };
    check("initial").await;

    // churn: update a third, delete a third, create more
    for (n, ns) in namespaces.iter().enumerate() {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for i in 0..15 {
            let name = format!("cm-{i}");
            match (i + n) % 3 {
                0 => {
                    api.patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(serde_json::json!({"data": {"v": "1"}})),
                    )
                    .await
                    .expect("update");
                }
                1 => {
                    api.delete(&name, &DeleteParams::default())
                        .await
                        .expect("delete");
                }
                _ => {
                    api.create(
                        &PostParams::default(),
                        &configmap(&format!("new-{i}"), &run),
                    )
                    .await
                    .expect("create");
                }
            }
        }
    }
    check("after churn").await;
    for group in &groups {
        for (_, informer) in group {
            assert!(informer.has_synced());
        }
    }
    cancel.cancel();
    for ns in &namespaces {
        delete_namespace(&client, ns).await;
    }
}
