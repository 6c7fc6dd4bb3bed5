//! The kinformer peer: a `SharedIndexInformer<Pod>` over `KubeListerWatcher`, two indexes
//! (namespace, node name), two handlers.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use k8s_openapi::api::core::v1::Pod;
use kinformer::{
    IndexFunc, Indexers, KubeListerWatcher, NAMESPACE_INDEX, ResourceEventHandlerFuncs,
    SharedIndexInformer, namespace_index_func,
};
use tokio_util::sync::CancellationToken;

use super::{Counters, PeerError, RunningPeer};

/// A started kinformer informer.
pub struct KinformerPeer {
    informer: SharedIndexInformer<Pod>,
    cancel: CancellationToken,
}

impl RunningPeer for KinformerPeer {
    fn cached(&self) -> u64 {
        self.informer.get_indexer().list_keys().len() as u64
    }
}

impl Drop for KinformerPeer {
    fn drop(&mut self) {
        self.cancel.cancel();
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

/// Starts the informer on the current runtime.
///
/// # Errors
/// Never in practice (kept for symmetry with the other peers).
pub fn start(
    client: kube::Client,
    counters: Arc<Counters>,
    transform: bool,
) -> Result<KinformerPeer, PeerError> {
    let lw = KubeListerWatcher::<Pod>::new(kube::Api::all(client));
    let mut indexers: Indexers<Pod> = Indexers::new();
    indexers.insert(NAMESPACE_INDEX.to_string(), namespace_index_func());
    indexers.insert("node".to_string(), node_index());
    let informer = SharedIndexInformer::builder(lw).indexers(indexers).build();
    let err = |e: kinformer::InformerError| PeerError::Client(e.to_string());
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
    let cancel = CancellationToken::new();
    {
        let informer = informer.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move { informer.run(cancel).await });
    }
    {
        let signal = informer.synced_signal();
        tokio::spawn(async move {
            signal.wait().await;
            counters.synced.store(true, Ordering::Relaxed);
        });
    }
    Ok(KinformerPeer { informer, cancel })
}
