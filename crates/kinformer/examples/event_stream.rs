//! Consuming an informer as a `Stream` of `Event`s: the initial list, `Synced`, then live
//! events, against the embedded API server.
//!
//! `cargo run -p kinformer --example event_stream`

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::{Event, SharedInformerFactory};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = kinformer_apiserver::start(Default::default()).await?;
    server.seed(
        "configmaps",
        (0..3).map(|i| kinformer_apiserver::seed::configmap("default", &format!("cm-{i}"), 2)),
    )?;

    let factory = SharedInformerFactory::new(server.client());
    let mut events = factory.informer::<ConfigMap>().stream()?;
    factory.start();

    while let Some(ev) = events.next().await {
        match ev {
            Event::Add {
                obj,
                is_in_initial_list,
            } => {
                println!(
                    "add {} (initial: {is_in_initial_list})",
                    obj.metadata.name.as_deref().unwrap_or("")
                );
            }
            Event::Synced => {
                println!("synced; now live");
                // Live changes: one update, then one delete.
                let mut cm: ConfigMap = server.get(Some("default"), "cm-0")?;
                cm.data
                    .get_or_insert_with(Default::default)
                    .insert("k".into(), "v".into());
                server.update(&cm)?;
                server.delete::<ConfigMap>(Some("default"), "cm-1")?;
            }
            Event::Update { new, .. } => {
                println!("update {}", new.metadata.name.as_deref().unwrap_or(""));
            }
            Event::Delete(obj) => {
                println!("delete {}", obj.key()?);
                break; // the last change we made
            }
        }
    }
    drop(events);
    factory.shutdown().await;
    server.shutdown().await;
    Ok(())
}
