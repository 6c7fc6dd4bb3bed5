//! Custom indexes (`by_index`, `index_keys`, `list_index_func_values`) and listers (label
//! selectors, namespaces), against the embedded API server.
//!
//! `cargo run -p kinformer --example indexes_and_listers`

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kinformer::{IndexFunc, SharedInformerFactory, store::LabelSelector};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = kinformer_apiserver::start(Default::default()).await?;
    server.seed_pods(500, 4)?; // seeded pods carry app/tier labels and spec.nodeName

    let factory = SharedInformerFactory::new(server.client());
    let pods = factory.informer::<Pod>();
    let by_node: IndexFunc<Pod> = Arc::new(|p: &Pod| {
        Ok(p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect())
    });
    let by_app: IndexFunc<Pod> = Arc::new(|p: &Pod| {
        Ok(p.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app").cloned())
            .into_iter()
            .collect())
    });
    pods.add_indexers(HashMap::from([
        ("by-node".to_string(), by_node),
        ("by-app".to_string(), by_app),
    ]))?;
    factory.start();
    factory.wait_for_cache_sync(&CancellationToken::new()).await;

    let indexer = pods.indexer();
    println!(
        "{} nodes carry pods",
        indexer.list_index_func_values("by-node").len()
    );
    println!(
        "pods on node-007: {}",
        indexer.by_index("by-node", "node-007")?.len()
    );
    println!(
        "keys of app-3: {:?}",
        &indexer.index_keys("by-app", "app-3")?[..3]
    );

    let lister = pods.lister();
    let frontend = LabelSelector::parse("tier=frontend,version in (v0,v1)")?;
    println!("frontend v0/v1 pods: {}", lister.list(&frontend).len());
    println!(
        "backend pods in ns-2: {}",
        lister
            .namespaced("ns-2")
            .list(&LabelSelector::parse("tier=backend")?)
            .len()
    );
    println!(
        "ns-1/pod-000001 exists: {}",
        lister.namespaced("ns-1").get("pod-000001").is_some()
    );

    factory.shutdown().await;
    server.shutdown().await;
    Ok(())
}
