//! W5, the peer's side of the soak: the kinformer peer syncs, then samples its own RSS every
//! `--sample-secs` while the orchestrator churns the server and injects faults. When a line
//! `stop` arrives on stdin (or stdin closes), the churn is over: the peer compares its cache
//! with fresh consistent lists (name and resourceVersion of every pod) until they match or the
//! timeout passes, and reports the samples and the verdict.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use parking_lot::Mutex;

use super::kinformer_peer::KinformerPeer;
use super::{Counters, PeerArgs, PeerError, wait_until};
use crate::result::{HeapSample, PeerReport};
use crate::rss;

/// `namespace/name` → resourceVersion of every pod in `pods`.
fn versions<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> BTreeMap<String, String> {
    pods.into_iter()
        .map(|p| {
            (
                format!(
                    "{}/{}",
                    p.metadata.namespace.as_deref().unwrap_or(""),
                    p.metadata.name.as_deref().unwrap_or("")
                ),
                p.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// What the server holds now, by a consistent list (pages of 500).
async fn server_versions(client: &kube::Client) -> Result<BTreeMap<String, String>, PeerError> {
    let api: kube::Api<Pod> = kube::Api::all(client.clone());
    let mut params = ListParams::default().limit(500);
    let mut out = BTreeMap::new();
    loop {
        let page = api
            .list(&params)
            .await
            .map_err(|e| PeerError::List(e.to_string()))?;
        out.extend(versions(page.items.iter()));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(out),
        }
    }
}

/// Describes how two maps differ (for the log), empty when equal.
pub(super) fn difference(
    cache: &BTreeMap<String, String>,
    server: &BTreeMap<String, String>,
) -> String {
    let missing = server.keys().filter(|k| !cache.contains_key(*k)).count();
    let extra = cache.keys().filter(|k| !server.contains_key(*k)).count();
    let stale = server
        .iter()
        .filter(|(k, v)| cache.get(*k).is_some_and(|c| c != *v))
        .count();
    if missing + extra + stale == 0 {
        String::new()
    } else {
        format!("{missing} missing, {extra} extra, {stale} stale")
    }
}

/// Runs W5 on a started kinformer peer.
///
/// # Errors
/// [`PeerError::Timeout`] when the first sync does not finish in time.
pub(super) async fn run(
    peer: KinformerPeer,
    client: kube::Client,
    counters: Arc<Counters>,
    args: &PeerArgs,
    mut report: PeerReport,
    t0: Instant,
) -> Result<PeerReport, PeerError> {
    wait_until(args.timeout, "initial sync", || {
        counters.synced.load(Ordering::Relaxed)
    })
    .await?;
    report.sync_ms = Some(t0.elapsed().as_secs_f64() * 1000.0);
    eprintln!("kinformer w5: synced; sampling RSS every {:?}", args.sample);
    let start = Instant::now();
    let samples = Arc::new(Mutex::new((Vec::new(), Vec::new())));
    let sampler = {
        let samples = samples.clone();
        let every = args.sample;
        let indexer = peer.informer().indexer();
        let counters = counters.clone();
        let runtime = tokio::runtime::Handle::current();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let secs = start.elapsed().as_secs_f64();
                let heap = rss::heap_use();
                let mut s = samples.lock();
                s.0.push((secs, rss::current_kib()));
                s.1.push(HeapSample {
                    secs,
                    in_use_kib: heap.map(|h| h.in_use_kib),
                    free_kib: heap.map(|h| h.free_kib),
                    tasks: runtime.metrics().num_alive_tasks() as u64,
                    cached: indexer.len() as u64,
                    adds: counters.adds.load(Ordering::Relaxed),
                    updates: counters.updates[0].load(Ordering::Relaxed),
                });
            }
        })
    };
    // The orchestrator writes `stop` (or closes stdin) when the churn is over.
    let _ = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        while std::io::stdin()
            .read_line(&mut line)
            .map(|n| n > 0)
            .unwrap_or(false)
        {
            if line.trim() == "stop" {
                break;
            }
            line.clear();
        }
    })
    .await;
    sampler.abort();
    (report.rss_samples, report.heap_samples) = std::mem::take(&mut *samples.lock());
    let t = Instant::now();
    let deadline = t + args.timeout;
    loop {
        let cache = versions(peer.informer().indexer().list().iter().map(|p| &**p));
        let diff = match server_versions(&client).await {
            Ok(server) => difference(&cache, &server),
            Err(e) => e.to_string(),
        };
        report.objects = cache.len() as u64;
        if diff.is_empty() {
            report.converged = Some(true);
            report.convergence_ms = Some(t.elapsed().as_secs_f64() * 1000.0);
            break;
        }
        if Instant::now() > deadline {
            eprintln!(
                "kinformer w5: not converged after {:?}: {diff}",
                args.timeout
            );
            report.converged = Some(false);
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    report.steady_rss_kib = Some(rss::current_kib());
    report.peak_rss_kib = Some(rss::peak_kib());
    peer.shutdown().await;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    #[test]
    fn difference_counts_missing_extra_and_stale() {
        let server = map(&[("a/1", "5"), ("a/2", "6"), ("a/3", "7")]);
        assert_eq!(difference(&server, &server), "");
        let cache = map(&[("a/1", "5"), ("a/2", "4"), ("a/9", "1")]);
        assert_eq!(difference(&cache, &server), "1 missing, 1 extra, 1 stale");
    }
}
