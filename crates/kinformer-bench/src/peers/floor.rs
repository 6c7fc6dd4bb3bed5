//! The floors: the least work any client must do to get the same objects into memory as the
//! same types, with no cache and no handlers.
//!
//! * W1 (`floor-paged`, `floor-unpaged`): fetch every pod and decode it into `Pod`, freeing
//!   the pages after the clock stops (as an informer keeps its list). Both fetch modes decode
//!   on every core: each response is decoded while it downloads, in batches on the blocking
//!   pool (kinformer's list decoder, [`KubeListerWatcher`], used here without its informer).
//!   Unpaged asks for the whole list at `resourceVersion=0` (served from the watch cache on a
//!   real server); paged sends the informers' own requests: `resourceVersion=0` and pages of
//!   500, then continue tokens (each next page asked for while the current one downloads, as
//!   kinformer does). Both run as a task on the runtime's workers, as a reflector does: on
//!   the thread that called `block_on` every body frame costs a cross-thread wake-up, which
//!   made the floors about 130 ms slower than the informer at 10,000 pods (the "floor slower
//!   than the informer" of the 2026-11-24 night report). The report takes the fastest run of
//!   either mode as the floor, so an informer can only meet it, not beat it, unless the
//!   noise between runs does.
//! * W1 (`floor-streaming`): what the informers send first since client-go 1.35 and
//!   kinformer's `InitialListMode::Auto`: one watch with `sendInitialEvents=true` at
//!   `resourceVersion=""` (`NotOlderThan`), every event decoded into `Pod` (on more than one
//!   core when a backlog builds, by the same source), until the bookmark that ends the initial
//!   events. The report's W1 floor is the fastest run of all three.
//! * W2 (`floor-watch`): one list to learn the resourceVersion, then one watch decoding every
//!   event into `Pod` and counting it as both handlers would, with no cache.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kinformer::KubeListerWatcher;
use kinformer::reflector::{
    INITIAL_EVENTS_END_ANNOTATION, ListOptions, ListerWatcher, ListerWatcherExt,
    ResourceVersionMatch, WatchEvent,
};

use super::{Counters, PeerError, RunningPeer};
use crate::result::PeerReport;
use crate::rss;

/// Page size of the paged floor (client-go's and kube-rs's default page).
pub(super) const PAGE: u32 = 500;

fn lister(client: kube::Client) -> KubeListerWatcher<Pod> {
    KubeListerWatcher::<Pod>::new(client, &kinformer::InformerConfig::default())
}

/// When a floor started: the wall clock and the process's CPU time.
type Start = (Instant, Option<f64>);

fn start() -> Start {
    (Instant::now(), crate::cpu::process_ms())
}

/// Stops the clock, then frees what was listed: freeing 10,000 pods takes long enough to
/// matter, and an informer never frees its list, so a floor must not count it.
fn finish<T>(
    mut report: PeerReport,
    (t0, cpu0): Start,
    listed: Vec<T>,
    decoded: u64,
) -> PeerReport {
    report.sync_ms = Some(t0.elapsed().as_secs_f64() * 1000.0);
    report.cpu_ms_at_sync = crate::cpu::since(cpu0);
    report.peak_rss_kib = Some(rss::peak_kib());
    drop(listed);
    report.objects = decoded;
    report
}

/// Fetches every pod in pages of [`PAGE`], each decoded on every core, and reports the time
/// (`sync_ms`) and peak RSS.
///
/// # Errors
/// [`PeerError::List`] when a page fails.
pub(super) async fn run_paged(
    client: kube::Client,
    report: PeerReport,
) -> Result<PeerReport, PeerError> {
    let lw = lister(client);
    let t0 = start();
    // what a Reflector sends first (client-go's and kinformer's), then continue tokens
    let mut options = ListOptions {
        limit: Some(PAGE),
        resource_version: "0".into(),
        ..Default::default()
    };
    let mut decoded = 0u64;
    let mut pages = Vec::new();
    loop {
        let mut page = lw
            .list_page(&options)
            .await
            .map_err(|e| PeerError::List(e.to_string()))?;
        decoded += page.items.len() as u64;
        let next = page.continue_token.take();
        pages.push(page);
        match next {
            Some(token) => options = options.next_page(token),
            None => break,
        }
    }
    Ok(finish(report, t0, pages, decoded))
}

/// Fetches every pod in one response at `resourceVersion=0`, decoded on every core while it
/// downloads, and reports the time (`sync_ms`) and peak RSS.
///
/// # Errors
/// [`PeerError::List`] when the list fails.
pub(super) async fn run_unpaged(
    client: kube::Client,
    report: PeerReport,
) -> Result<PeerReport, PeerError> {
    let lw = lister(client);
    let t0 = start();
    let options = ListOptions {
        resource_version: "0".into(),
        ..Default::default()
    };
    let page = lw
        .list_page(&options)
        .await
        .map_err(|e| PeerError::List(e.to_string()))?;
    let decoded = page.items.len() as u64;
    Ok(finish(report, t0, vec![page], decoded))
}

/// Fetches every pod through one streaming list (the informers' first request), each event
/// decoded into `Pod`, until the end bookmark; reports the time (`sync_ms`) and peak RSS.
///
/// # Errors
/// [`PeerError::List`] when the watch fails, or ends or errs before the end bookmark.
pub(super) async fn run_streaming(
    client: kube::Client,
    report: PeerReport,
) -> Result<PeerReport, PeerError> {
    let lw = lister(client);
    let t0 = start();
    let options = ListOptions {
        resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
        allow_watch_bookmarks: true,
        send_initial_events: Some(true),
        timeout_seconds: Some(600),
        ..Default::default()
    };
    let fail = |e: String| PeerError::List(format!("streaming list: {e}"));
    let mut stream = lw.watch(&options).await.map_err(|e| fail(e.to_string()))?;
    let mut pods = Vec::new();
    while let Some(event) = stream.next().await {
        match event.map_err(|e| fail(e.to_string()))? {
            WatchEvent::Added(pod) => pods.push(pod),
            WatchEvent::Bookmark { annotations, .. }
                if annotations
                    .get(INITIAL_EVENTS_END_ANNOTATION)
                    .is_some_and(|v| v == "true") =>
            {
                let decoded = pods.len() as u64;
                return Ok(finish(report, t0, pods, decoded));
            }
            WatchEvent::Bookmark { .. } => {}
            WatchEvent::Error(status) => return Err(fail(status.message)),
            WatchEvent::Modified(_) | WatchEvent::Deleted(_) => {
                return Err(fail("a change before the end bookmark".into()));
            }
        }
    }
    Err(fail("the stream ended before its end bookmark".into()))
}

/// The W2 floor once started: objects seen by its list (dropped at once).
pub(super) struct WatchFloor {
    listed: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningPeer for WatchFloor {
    fn cached(&self) -> u64 {
        self.listed.load(Ordering::Relaxed)
    }
}

impl Drop for WatchFloor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Lists once (decoding and dropping the items), marks itself synced, then decodes every
/// watch event and counts it for both "handlers" (no cache); re-watches from the last
/// resourceVersion when the server ends the watch.
pub(super) fn start_watch(client: kube::Client, counters: Arc<Counters>) -> WatchFloor {
    let lw = lister(client);
    let listed = Arc::new(AtomicU64::new(0));
    let seen = listed.clone();
    let task = tokio::spawn(async move {
        let list = ListOptions {
            resource_version: "0".into(),
            ..Default::default()
        };
        let Ok(page) = lw.list_page(&list).await else {
            eprintln!("floor-watch: the list failed");
            return;
        };
        let mut rv = page.resource_version.clone();
        for _ in &page.items {
            counters.on_add(0);
        }
        seen.store(page.items.len() as u64, Ordering::Relaxed);
        drop(page);
        counters.synced.store(true, Ordering::Relaxed);
        loop {
            let options = ListOptions {
                resource_version: rv.clone(),
                allow_watch_bookmarks: true,
                ..Default::default()
            };
            let mut stream = match lw.watch(&options).await {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("floor-watch: watch failed: {e}");
                    return;
                }
            };
            while let Some(event) = stream.next().await {
                match event {
                    Ok(WatchEvent::Modified(pod)) => {
                        rv = pod.metadata.resource_version.clone().unwrap_or(rv);
                        counters.on_update(0, &pod.metadata);
                        counters.on_update(1, &pod.metadata);
                    }
                    Ok(WatchEvent::Added(pod) | WatchEvent::Deleted(pod)) => {
                        rv = pod.metadata.resource_version.clone().unwrap_or(rv);
                    }
                    Ok(WatchEvent::Bookmark {
                        resource_version, ..
                    }) => rv = resource_version,
                    Ok(other) => {
                        eprintln!("floor-watch: watch ended: {other:?}");
                        return;
                    }
                    Err(e) if e.is_decode() => eprintln!("floor-watch: skipped: {e}"),
                    Err(e) => {
                        eprintln!("floor-watch: {e}");
                        return;
                    }
                }
            }
        }
    });
    WatchFloor { listed, task }
}
