//! The floor: the same list pages (limit 500, continue tokens) fetched and decoded into
//! `Pod`s, with no cache. Each page is dropped once decoded; the time is the least any client
//! needs to get N pods into memory as typed objects.

use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;

use super::{PeerArgs, PeerError};
use crate::result::PeerReport;
use crate::rss;

/// Lists every pod page by page and reports the time (`sync_ms`) and peak RSS.
///
/// # Errors
/// [`PeerError::List`] when a page fails.
pub async fn run(
    client: kube::Client,
    _args: &PeerArgs,
    mut report: PeerReport,
) -> Result<PeerReport, PeerError> {
    let api: kube::Api<Pod> = kube::Api::all(client);
    let t0 = Instant::now();
    let mut params = ListParams::default().limit(500);
    let mut decoded = 0u64;
    loop {
        let page = api
            .list(&params)
            .await
            .map_err(|e| PeerError::List(e.to_string()))?;
        decoded += page.items.len() as u64;
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    report.sync_ms = Some(t0.elapsed().as_secs_f64() * 1000.0);
    report.peak_rss_kib = Some(rss::peak_kib());
    report.objects = decoded;
    Ok(report)
}
