//! The kinformer peers, built as the README builds them: a `SharedInformerFactory`,
//! `factory.informer::<Pod>()` (which comes with the namespace index), a second index
//! (`spec.nodeName`) and two handlers added on that informer, then `factory.start()`.
//!
//! Every kinformer peer is this build with one [`Variant`]: what it sets in the factory's
//! default [`InformerConfig`] (a queue mode, a cache mode) and whether the informer is
//! metadata-only (`factory.metadata_informer::<Pod>()`, which has no `spec` and so no node
//! index). W1t turns on the configuration's `strip_managed_fields`, as a user would.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use k8s_openapi::api::core::v1::Pod;
use kinformer::reflector::InitialListMode;
use kinformer::source::WireFormat;
use kinformer::store::CacheMode;
use kinformer::{
    IndexFunc, Indexers, InformerConfig, Object, ResourceEventHandlerFuncs, SharedIndexInformer,
    SharedInformerFactory, informer::QueueMode,
};

use super::{Counters, PeerError, RunningPeer};
use crate::result::Peer;

/// How one kinformer peer differs from the README's build.
#[derive(Debug, Clone, Copy)]
pub(super) struct Variant {
    /// Applied to the factory's default configuration.
    pub config: fn(InformerConfig) -> InformerConfig,
    /// A metadata-only informer (`metadata_informer::<Pod>()`) instead of `informer::<Pod>()`.
    pub metadata: bool,
}

impl Variant {
    /// The variant of a kinformer peer; `None` for the other peers. A new variant is one arm
    /// here (and its [`Peer`]).
    pub(super) fn of(peer: Peer) -> Option<Variant> {
        let v = |config, metadata| Some(Variant { config, metadata });
        match peer {
            Peer::Kinformer => v(|b| b, false),
            Peer::KinformerMetadata => v(|b| b, true),
            Peer::KinformerMetadataLean => v(|b| b.cache_mode(CacheMode::Lean), true),
            Peer::KinformerDeltaFifo => v(|b| b.queue_mode(QueueMode::DeltaFifo), false),
            Peer::KinformerLean => v(|b| b.cache_mode(CacheMode::Lean), false),
            Peer::KinformerJson => v(|b| b.wire_format(WireFormat::Json), false),
            Peer::KinformerList => v(|b| b.initial_list(InitialListMode::ListThenWatch), false),
            _ => None,
        }
    }
}

/// A started factory and its pod informer (`K`: `Pod`, or `PartialObjectMeta<Pod>`).
pub(super) struct KinformerPeer<K: Object = Pod> {
    factory: SharedInformerFactory,
    informer: SharedIndexInformer<K>,
}

impl<K: Object> KinformerPeer<K> {
    /// The pod informer.
    pub(super) fn informer(&self) -> &SharedIndexInformer<K> {
        &self.informer
    }

    /// Stops every informer of the factory and waits for them.
    pub(super) async fn shutdown(&self) {
        self.factory.shutdown().await;
    }
}

impl<K: Object> RunningPeer for KinformerPeer<K> {
    fn cached(&self) -> u64 {
        self.informer.indexer().list_keys().len() as u64
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

fn handler<K: Object>(counters: Arc<Counters>, h: usize) -> ResourceEventHandlerFuncs<K> {
    let c2 = counters.clone();
    ResourceEventHandlerFuncs::new()
        .on_add(move |_, _| counters.on_add(h))
        .on_update(move |_, new: &Arc<K>| c2.on_update(h, new.meta()))
}

fn factory(client: kube::Client, variant: Variant, strip: bool) -> SharedInformerFactory {
    let config = (variant.config)(InformerConfig::default()).strip_managed_fields(strip);
    SharedInformerFactory::builder(client)
        .defaults(config)
        .build()
}

/// Builds the factory and informer of `variant` and starts them on the current runtime;
/// `strip` turns on the configuration's `strip_managed_fields` (W1t).
///
/// # Errors
/// [`PeerError::Client`] when the informer refuses an index or handler.
pub(super) fn start(
    client: kube::Client,
    counters: Arc<Counters>,
    variant: Variant,
    strip: bool,
) -> Result<Box<dyn RunningPeer>, PeerError> {
    if variant.metadata {
        let factory = factory(client, variant, strip);
        let informer = factory.metadata_informer::<Pod>();
        return Ok(Box::new(finish(factory, informer, None, counters)?));
    }
    Ok(Box::new(start_pods(client, counters, variant, strip)?))
}

/// [`start`] for a full pod informer (the soak drives its cache directly).
///
/// # Errors
/// [`PeerError::Client`] when the informer refuses an index or handler.
pub(super) fn start_pods(
    client: kube::Client,
    counters: Arc<Counters>,
    variant: Variant,
    strip: bool,
) -> Result<KinformerPeer<Pod>, PeerError> {
    let factory = factory(client, variant, strip);
    let informer = factory.informer::<Pod>();
    finish(factory, informer, Some(node_index()), counters)
}

/// Adds the node index (when there is one) and the two handlers, then starts the factory.
fn finish<K: Object>(
    factory: SharedInformerFactory,
    informer: SharedIndexInformer<K>,
    node: Option<IndexFunc<K>>,
    counters: Arc<Counters>,
) -> Result<KinformerPeer<K>, PeerError> {
    let err = |e: kinformer::InformerError| PeerError::Client(e.to_string());
    if let Some(node) = node {
        let mut indexers: Indexers<K> = Indexers::new();
        indexers.insert("node".to_string(), node);
        informer.add_indexers(indexers).map_err(err)?;
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
