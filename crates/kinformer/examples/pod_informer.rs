//! A typed pod informer with event handlers, against the embedded API server.
//!
//! `cargo run -p kinformer --example pod_informer`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kinformer::{
    InformerConfig, ResourceEventHandlerFuncs, SharedIndexInformer, namespace_indexers,
};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = kinformer_apiserver::start(Default::default()).await?;
    server.seed_pods(100, 2)?;

    let informer = SharedIndexInformer::<Pod>::new(server.client(), InformerConfig::default());
    informer.add_indexers(namespace_indexers())?;
    let adds = Arc::new(AtomicUsize::new(0));
    let a = adds.clone();
    informer.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .on_add(move |_pod: &Arc<Pod>, _initial| {
                a.fetch_add(1, Ordering::Relaxed);
            })
            .on_update(|_old, new: &Arc<Pod>| {
                println!("updated {}", new.metadata.name.as_deref().unwrap_or(""));
            })
            .on_delete(|obj| println!("deleted {}", obj.key().unwrap_or_default())),
    )?;

    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let informer = informer.clone();
        let cancel = cancel.clone();
        async move { informer.run(cancel).await }
    });
    informer.synced_signal().wait().await;
    println!("synced: {} pods in the cache", informer.indexer().len());

    // A change on the server reaches the handlers.
    server.delete::<Pod>(Some("ns-0"), "pod-000000")?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    println!("handler saw {} adds", adds.load(Ordering::Relaxed));

    cancel.cancel();
    run.await?;
    server.shutdown().await;
    Ok(())
}
