//! The kinformer peer, built as the README builds it: a `SharedInformerFactory`,
//! `factory.informer::<Pod>()` (which comes with the namespace index), a second index
//! (`spec.nodeName`) and two handlers added on that informer, then `factory.start()`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use k8s_openapi::api::core::v1::Pod;
use kinformer::{
    IndexFunc, Indexers, ResourceEventHandlerFuncs, SharedIndexInformer, SharedInformerFactory,
};

use super::{Counters, PeerError, RunningPeer};

/// A started factory and its pod informer.
pub struct KinformerPeer {
    factory: SharedInformerFactory,
    informer: SharedIndexInformer<Pod>,
}

impl KinformerPeer {
    /// The pod informer.
    pub fn informer(&self) -> &SharedIndexInformer<Pod> {
        &self.informer
    }

    /// Stops every informer of the factory and waits for them.
    pub async fn shutdown(&self) {
        self.factory.shutdown().await;
    }
}

impl RunningPeer for KinformerPeer {
    fn cached(&self) -> u64 {
        self.informer.get_indexer().list_keys().len() as u64
    }

    fn last_sync_resource_version(&self) -> Option<u64> {
        self.informer.last_sync_resource_version().parse().ok()
    }
}

/// The node-name index (`spec.nodeName`, none when unscheduled).
fn node_index() -> IndexFunc<Pod> {
    Arc::new(|pod: &Pod| {
        Ok(pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect())
    })
}

fn handler(counters: Arc<Counters>, h: usize) -> ResourceEventHandlerFuncs<Pod> {
    let c2 = counters.clone();
    ResourceEventHandlerFuncs::new()
        .on_add(move |_, _| counters.on_add(h))
        .on_update(move |_, new| c2.on_update(h, new))
}

/// Builds the factory and informer and starts them on the current runtime; `lean`: the
/// factory's informers keep their caches in [`CacheMode::Lean`](kinformer::store::CacheMode).
///
/// # Errors
/// [`PeerError::Client`] when the informer refuses an index, transform or handler.
pub fn start(
    client: kube::Client,
    counters: Arc<Counters>,
    transform: bool,
    lean: bool,
) -> Result<KinformerPeer, PeerError> {
    let factory = if lean {
        SharedInformerFactory::builder(client)
            .cache_mode(kinformer::store::CacheMode::Lean)
            .build()
    } else {
        SharedInformerFactory::new(client)
    };
    let informer = factory.informer::<Pod>();
    let err = |e: kinformer::InformerError| PeerError::Client(e.to_string());
    let mut indexers: Indexers<Pod> = Indexers::new();
    indexers.insert("node".to_string(), node_index());
    informer.add_indexers(indexers).map_err(err)?;
    if transform {
        informer
            .set_transform(|mut pod: Pod| {
                pod.metadata.managed_fields = None;
                pod
            })
            .map_err(err)?;
    }
    informer
        .add_event_handler(handler(counters.clone(), 0))
        .map_err(err)?;
    informer
        .add_event_handler(handler(counters.clone(), 1))
        .map_err(err)?;
    factory.start();
    {
        let signal = informer.synced_signal();
        tokio::spawn(async move {
            signal.wait().await;
            counters.synced.store(true, Ordering::Relaxed);
        });
    }
    Ok(KinformerPeer { factory, informer })
}
