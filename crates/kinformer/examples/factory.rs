//! A `SharedInformerFactory` over several types, waiting for all caches with
//! `wait_for_cache_sync`, reading through the factory's listers (a typed error for a type
//! nobody watches), and removing an informer at run time, against the embedded API server.
//!
//! `cargo run -p kinformer --example factory`

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret};
use kinformer::SharedInformerFactory;
use kinformer::store::LabelSelector;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = kinformer_apiserver::start(Default::default()).await?;
    server.seed_pods(200, 3)?;
    server.seed(
        "configmaps",
        (0..5).map(|i| kinformer_apiserver::seed::configmap("ns-0", &format!("cm-{i}"), 3)),
    )?;

    let factory = SharedInformerFactory::new(server.client());
    // Asking twice for the same type returns the same shared informer.
    let pods = factory.informer::<Pod>();
    let configmaps = factory.informer::<ConfigMap>();
    let namespaces = factory.informer::<Namespace>();
    factory.start();

    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    println!("wait_for_cache_sync: {synced:?}");
    // Each informer's own signal says the same for it alone.
    pods.synced_signal().wait().await;
    configmaps.synced_signal().wait().await;
    namespaces.synced_signal().wait().await;
    println!(
        "{} pods, {} config maps, {} namespaces",
        pods.indexer().len(),
        configmaps.indexer().len(),
        namespaces.indexer().len()
    );
    // Reads through the factory: a lister for a watched type, a typed error for the others.
    let everything = LabelSelector::everything();
    let pod_lister = factory.lister::<Pod>()?;
    println!("lister: {} pods", pod_lister.list(&everything).len());
    match factory.lister::<Secret>() {
        Ok(_) => println!("secrets are watched"),
        Err(e) => println!("secrets: {e}"),
    }
    // Stop watching namespaces: its watch closes, its cache empties, reads fail again.
    factory.remove_informer::<Namespace>().await;
    println!(
        "namespaces removed: {} cached, lister read: {:?}",
        namespaces.indexer().len(),
        factory.lister::<Namespace>().err()
    );
    factory.shutdown().await;
    server.shutdown().await;
    Ok(())
}
