//! A `DynamicObject` informer for a custom resource registered on the embedded API server.
//!
//! `cargo run -p kinformer --example dynamic_custom_resource`

use std::time::Duration;

use futures::StreamExt;
use kinformer::{Event, SharedInformerFactory};
use kinformer_apiserver::{ResourceInfo, Scope};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = kinformer_apiserver::start(Default::default()).await?;
    server.register(ResourceInfo::new(
        "example.com",
        "v1",
        "Widget",
        "widgets",
        Scope::Namespaced,
    ));
    let widget = |name: &str, size: u32| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": name, "namespace": "default"}, "spec": {"size": size}})
    };
    server.create_value("widgets.example.com", Some("default"), widget("small", 1))?;

    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let factory = SharedInformerFactory::new(server.client());
    let widgets = factory.dynamic_informer(&ar, true);
    let mut events = widgets.stream()?;
    factory.start();

    server.create_value("widgets.example.com", Some("default"), widget("large", 9))?;
    let deadline = tokio::time::sleep(Duration::from_secs(5));
    tokio::pin!(deadline);
    let mut seen = 0;
    while seen < 2 {
        tokio::select! {
            Some(ev) = events.next() => {
                if let Event::Add { obj, .. } = ev {
                    println!("widget {} size {}", obj.metadata.name.as_deref().unwrap_or(""), obj.data["spec"]["size"]);
                    seen += 1;
                }
            }
            _ = &mut deadline => break,
        }
    }
    println!("cache holds {} widgets", widgets.indexer().len());
    drop(events);
    factory.shutdown().await;
    server.shutdown().await;
    Ok(())
}
