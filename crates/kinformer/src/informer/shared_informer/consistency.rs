//! The consistency check: the cache's keys and resourceVersions against a list from the server
//! at exactly the cache's resourceVersion (client-go's watch-list consistency detector,
//! `checkDataConsistency`, made periodic and opt-in).

use std::collections::BTreeMap;

use super::*;
use crate::object::meta_namespace_key;
use crate::reflector::{ListOptions, ListWatchError, ResourceVersionMatch};
use crate::reflector::{ListSink, list_pages};

/// Page size of a consistency check's list.
const CHECK_PAGE_SIZE: u32 = 500;

/// How many differing keys of each kind the log line names.
const LOGGED_KEYS: usize = 5;

/// What one consistency check found (see [`SharedIndexInformer::check_consistency`]). Each
/// list of keys is sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsistencyReport {
    /// The resourceVersion the cache was at, and the server was listed at.
    pub resource_version: String,
    /// Objects in the cache.
    pub cached: usize,
    /// Keys the server has at that version and the cache lacks.
    pub missing: Vec<String>,
    /// Keys the cache has and the server had not at that version.
    pub extra: Vec<String>,
    /// Keys both have, with different resourceVersions: `(key, cached, server)`.
    pub different: Vec<(String, String, String)>,
}

impl ConsistencyReport {
    /// How many objects differ (missing, extra or at another resourceVersion).
    pub fn divergent(&self) -> usize {
        self.missing.len() + self.extra.len() + self.different.len()
    }

    /// Whether the cache matched the server.
    pub fn is_consistent(&self) -> bool {
        self.divergent() == 0
    }
}

/// Why a consistency check did not compare anything.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsistencyError {
    /// The informer has not synced (or does not run): there is nothing to compare yet.
    #[error("informer {0:?} has not synced; consistency check skipped")]
    NotSynced(String),
    /// The cache records no resourceVersion to list at.
    #[error("informer {0:?}'s cache has no resourceVersion; consistency check skipped")]
    NoResourceVersion(String),
    /// DeltaFifo mode only: deltas were queued, so the cache was not at one resourceVersion.
    #[error("informer {0:?} has deltas queued; consistency check skipped")]
    Busy(String),
    /// The server can no longer serve the cache's resourceVersion (410 Gone, or too large).
    #[error(
        "the server cannot list at resourceVersion {resource_version}; consistency check skipped: {source}"
    )]
    Unavailable {
        /// The cache's resourceVersion.
        resource_version: String,
        /// The server's answer.
        source: ListWatchError,
    },
    /// The list failed otherwise.
    #[error("consistency check list failed: {0}")]
    List(ListWatchError),
}

/// Counts of the consistency checks an informer ran, and the last report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsistencyStats {
    /// Checks that found the cache consistent.
    pub consistent: u64,
    /// Checks that found a divergence.
    pub divergent: u64,
    /// Checks skipped (not synced, deltas queued, or the resourceVersion no longer served).
    pub skipped: u64,
    /// Checks whose list failed.
    pub failed: u64,
    /// The last check that compared.
    pub last: Option<ConsistencyReport>,
}

/// Collects each listed object's key and resourceVersion, nothing else.
struct Versions(BTreeMap<String, String>);

impl<K: Object> ListSink<K> for Versions {
    fn restart(&mut self) {
        self.0.clear();
    }
    fn deliver(&mut self, items: Vec<Arc<K>>) {
        for obj in items {
            if let Ok(key) = meta_namespace_key(obj.as_ref()) {
                self.0
                    .insert(key, resource_version(obj.as_ref()).to_owned());
            }
        }
    }
}

impl<K: Object> SharedIndexInformer<K> {
    /// Checks the cache against the server once, now: takes the cache's keys and
    /// resourceVersions together with the cache's resourceVersion, lists from the server at
    /// exactly that version (`resourceVersion=X&resourceVersionMatch=Exact`, paged), and
    /// compares. A divergence is logged (a warning naming the first keys that differ) and
    /// counted ([`consistency_stats`](Self::consistency_stats), and the metrics); so is a
    /// check that was skipped. [`InformerConfig::consistency_check`] runs it periodically.
    ///
    /// The cache is read while no change is being applied to it. In
    /// [`QueueMode::RealFifo`](crate::informer::QueueMode::RealFifo) mode it is then exactly at
    /// its resourceVersion (changes are applied in server order); in
    /// [`QueueMode::DeltaFifo`](crate::informer::QueueMode::DeltaFifo) mode only when no delta
    /// is queued, so a check that finds deltas queued is skipped (and one that races a change
    /// arriving in that instant may report it).
    ///
    /// client-go's precedent, the watch-list consistency detector, runs once after a streaming
    /// list, in tests, and panics on a difference; this one runs on demand or periodically
    /// and reports.
    ///
    /// # Errors
    /// [`ConsistencyError`] when nothing was compared.
    pub async fn check_consistency(&self) -> Result<ConsistencyReport, ConsistencyError> {
        let result = self.compare_with_server().await;
        let inner = &self.inner;
        let mut stats = inner.consistency.lock();
        match &result {
            Ok(report) if report.is_consistent() => {
                stats.consistent += 1;
                tracing::debug!(informer = %inner.name, resource_version = %report.resource_version,
                    objects = report.cached, "consistency check: the cache matches the server");
            }
            Ok(report) => {
                stats.divergent += 1;
                let first =
                    |keys: &[String]| keys.iter().take(LOGGED_KEYS).cloned().collect::<Vec<_>>();
                let different: Vec<String> = report
                    .different
                    .iter()
                    .take(LOGGED_KEYS)
                    .map(|(k, c, s)| format!("{k} (cache {c}, server {s})"))
                    .collect();
                tracing::warn!(informer = %inner.name, resource_version = %report.resource_version,
                    divergent = report.divergent(), missing = ?first(&report.missing),
                    extra = ?first(&report.extra), different = ?different,
                    "consistency check: the cache differs from the server");
            }
            Err(e @ ConsistencyError::List(_)) => {
                stats.failed += 1;
                tracing::warn!(informer = %inner.name, error = %e, "consistency check failed");
            }
            Err(e) => {
                stats.skipped += 1;
                tracing::info!(informer = %inner.name, reason = %e, "consistency check skipped");
            }
        }
        if let Ok(report) = &result {
            stats.last = Some(report.clone());
        }
        result
    }

    /// The consistency checks run so far and the last report.
    pub fn consistency_stats(&self) -> ConsistencyStats {
        self.inner.consistency.lock().clone()
    }

    async fn compare_with_server(&self) -> Result<ConsistencyReport, ConsistencyError> {
        let inner = &self.inner;
        let name = || inner.name.clone();
        if !self.has_synced() {
            return Err(ConsistencyError::NotSynced(name()));
        }
        let queue = inner.state.lock().queue.clone();
        let Some(queue) = queue else {
            return Err(ConsistencyError::NotSynced(name()));
        };
        if matches!(&*queue, InformerQueue::Delta(_)) && queue.len() > 0 {
            return Err(ConsistencyError::Busy(name()));
        }
        let (resource_version, cached) = {
            let _deltas = inner.block_deltas.lock();
            let rv = inner.indexer.last_resource_version();
            let objects = inner.indexer.list();
            (rv, objects)
        };
        let Some(resource_version) = resource_version else {
            return Err(ConsistencyError::NoResourceVersion(name()));
        };
        let cached: BTreeMap<String, String> = cached
            .iter()
            .filter_map(|o| {
                let key = meta_namespace_key(o.as_ref()).ok()?;
                Some((key, resource_version_of(o.as_ref())))
            })
            .collect();
        let options = ListOptions {
            resource_version: resource_version.clone(),
            resource_version_match: Some(ResourceVersionMatch::Exact),
            ..Default::default()
        };
        let mut server = Versions(BTreeMap::new());
        match list_pages(
            inner.lister_watcher.as_ref(),
            options,
            Some(CHECK_PAGE_SIZE),
            &mut server,
        )
        .await
        {
            Ok(_) => {}
            Err(e) if e.is_expired() || e.is_too_large_resource_version() => {
                return Err(ConsistencyError::Unavailable {
                    resource_version,
                    source: e,
                });
            }
            Err(e) => return Err(ConsistencyError::List(e)),
        }
        Ok(compare(resource_version, &cached, &server.0))
    }
}

fn resource_version_of<K: Object>(obj: &K) -> String {
    resource_version(obj).to_owned()
}

/// The differences between the cache's and the server's keys and resourceVersions.
fn compare(
    resource_version: String,
    cached: &BTreeMap<String, String>,
    server: &BTreeMap<String, String>,
) -> ConsistencyReport {
    let mut report = ConsistencyReport {
        resource_version,
        cached: cached.len(),
        ..Default::default()
    };
    for (key, rv) in server {
        match cached.get(key) {
            None => report.missing.push(key.clone()),
            Some(c) if c != rv => report.different.push((key.clone(), c.clone(), rv.clone())),
            Some(_) => {}
        }
    }
    report.extra = cached
        .keys()
        .filter(|k| !server.contains_key(*k))
        .cloned()
        .collect();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// Missing, extra and different keys are each found, sorted, and counted once.
    #[test]
    fn compare_finds_missing_extra_and_different_keys() {
        let cached = map(&[("ns/a", "1"), ("ns/b", "2"), ("ns/c", "3")]);
        let server = map(&[("ns/a", "1"), ("ns/c", "4"), ("ns/d", "5")]);
        let report = compare("9".into(), &cached, &server);
        assert_eq!(report.missing, ["ns/d"]);
        assert_eq!(report.extra, ["ns/b"]);
        assert_eq!(
            report.different,
            [("ns/c".to_owned(), "3".to_owned(), "4".to_owned())]
        );
        assert_eq!(report.divergent(), 3);
        assert!(!report.is_consistent());
        assert!(compare("9".into(), &cached, &cached).is_consistent());
    }
}
