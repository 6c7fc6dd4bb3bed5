//! The kube-rs peer: `kube_runtime::watcher` (pages of 500) → `reflector` into a
//! `reflector::Store`, with two handlers fed from the reflected event stream. kube-rs's store
//! has no indexes. The transform (W1t) is `WatchStreamExt::modify` before the reflector.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};

use super::{Counters, PeerError, RunningPeer};

/// A started kube-rs watcher + reflector.
pub(super) struct KubeRsPeer {
    store: Store<Pod>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningPeer for KubeRsPeer {
    fn cached(&self) -> u64 {
        self.store.len() as u64
    }
}

impl Drop for KubeRsPeer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn handle(counters: &Counters, event: &Event<Pod>) {
    match event {
        Event::InitApply(_) => {
            counters.on_add(0);
            counters.on_add(1);
        }
        Event::Apply(pod) => {
            counters.on_update(0, &pod.metadata);
            counters.on_update(1, &pod.metadata);
        }
        Event::InitDone => {
            counters.synced.store(true, Ordering::Relaxed);
            counters.init_done.fetch_add(1, Ordering::Relaxed);
        }
        Event::Init | Event::Delete(_) => {}
    }
}

/// Starts the watcher and reflector on the current runtime.
///
/// # Errors
/// Never in practice (kept for symmetry with the other peers).
pub(super) fn start(
    client: kube::Client,
    counters: Arc<Counters>,
    transform: bool,
) -> Result<KubeRsPeer, PeerError> {
    let api: kube::Api<Pod> = kube::Api::all(client);
    let (store, writer) = reflector::store::<Pod>();
    let config = watcher::Config::default().page_size(500);
    let task = tokio::spawn(async move {
        let stream = watcher::watcher(api, config).default_backoff();
        let stream = if transform {
            stream
                .modify(|pod| pod.metadata.managed_fields = None)
                .boxed()
        } else {
            stream.boxed()
        };
        let mut stream = stream.reflect(writer).boxed();
        while let Some(item) = stream.next().await {
            if let Ok(event) = item {
                handle(&counters, &event);
            }
        }
    });
    Ok(KubeRsPeer { store, task })
}
