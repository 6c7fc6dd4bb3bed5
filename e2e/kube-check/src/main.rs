//! Lists namespaces and watches ConfigMaps once through kube-rs with the
//! kubeconfig given as the first argument; exits non-zero on any failure.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: kube-check KUBECONFIG")?;
    let kc = Kubeconfig::read_from(&path)?;
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    let client = Client::try_from(config)?;
    let version = client.apiserver_version().await?;
    println!("server version {}", version.git_version);
    let ns: Api<Namespace> = Api::all(client.clone());
    let names: Vec<String> = ns
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    println!("namespaces {names:?}");
    let cms: Api<ConfigMap> = Api::namespaced(client, "kube-system");
    let wp = WatchParams::default().timeout(2);
    let events: Vec<_> = cms.watch(&wp, "0").await?.boxed().try_collect().await?;
    println!("watch from 0 returned {} events", events.len());
    Ok(())
}
