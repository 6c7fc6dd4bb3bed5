//! Shared helpers for the end-to-end tests against the embedded API server: a seeded RNG,
//! ground-truth snapshots, bounded convergence polling, random faults and random churn.

#![allow(dead_code)]

use kinformer::object::namespace_name_key;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::{Indexer, Object, meta_namespace_key, object::resource_version};
use kinformer_apiserver::RunningServer;
use kinformer_apiserver::{FailureRule, Verb};

/// A tiny deterministic xorshift generator: the same seed gives the same faults and churn.
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (never zero internally).
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next raw value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() % 10_000) as f64 / 10_000.0 < p
    }
}

/// Seeds from the env var `name` (comma separated), if set and valid.
pub fn env_seeds(name: &str) -> Option<Vec<u64>> {
    let raw = std::env::var(name).ok()?;
    let seeds: Vec<u64> = raw
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    (!seeds.is_empty()).then_some(seeds)
}

/// key → resourceVersion, as the server holds `resource` right now.
pub fn server_view(server: &RunningServer, resource: &str) -> BTreeMap<String, String> {
    let state = server.state(resource, None).expect("server state");
    state
        .objects
        .into_iter()
        .map(|o| {
            (
                namespace_name_key(&o.namespace, &o.name),
                o.resource_version,
            )
        })
        .collect()
}

/// key → resourceVersion of everything in a cache.
pub fn cache_view<K: Object>(cache: &Indexer<K>) -> BTreeMap<String, String> {
    cache
        .list()
        .iter()
        .map(|o| {
            (
                meta_namespace_key(o.as_ref()).expect("cached objects have keys"),
                resource_version(o.as_ref()).to_owned(),
            )
        })
        .collect()
}

/// A short description of how two views differ (for assertion messages).
pub fn diff(expected: &BTreeMap<String, String>, actual: &BTreeMap<String, String>) -> String {
    let missing: Vec<_> = expected
        .keys()
        .filter(|k| !actual.contains_key(*k))
        .take(5)
        .collect();
    let extra: Vec<_> = actual
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .take(5)
        .collect();
    let stale: Vec<_> = expected
        .iter()
        .filter(|(k, v)| actual.get(*k).is_some_and(|a| a != *v))
        .take(5)
        .map(|(k, v)| format!("{k}: want {v}, have {}", actual[k]))
        .collect();
    format!(
        "expected {} objects, have {}; missing {missing:?}; extra {extra:?}; stale {stale:?}",
        expected.len(),
        actual.len()
    )
}

/// Polls until `actual()` equals the server's view of `resource`, at most `limit`. Returns
/// how long it took; on timeout, the last difference.
pub async fn wait_converged(
    server: &RunningServer,
    resource: &str,
    limit: Duration,
    actual: impl Fn() -> BTreeMap<String, String>,
) -> Result<Duration, String> {
    let start = Instant::now();
    loop {
        let want = server_view(server, resource);
        let have = actual();
        if want == have {
            return Ok(start.elapsed());
        }
        if start.elapsed() > limit {
            return Err(diff(&want, &have));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Like [`wait_converged`], but polls against `expected` (the test's own record of what it
/// wrote, with the resourceVersions the server returned) and reads the server's `state()`
/// only to confirm: a `state()` of 10,000 realistic pods takes seconds in a debug build.
/// The result is the same exact comparison with the server's state.
pub async fn wait_converged_to(
    server: &RunningServer,
    resource: &str,
    expected: &BTreeMap<String, String>,
    limit: Duration,
    actual: impl Fn() -> BTreeMap<String, String>,
) -> Result<Duration, String> {
    let start = Instant::now();
    while actual() != *expected && start.elapsed() < limit {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let rest = limit.saturating_sub(start.elapsed());
    wait_converged(server, resource, rest, actual)
        .await
        .map(|_| start.elapsed())
}

/// The resourceVersion in a stored JSON object.
pub fn value_rv(v: &serde_json::Value) -> String {
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// One injected fault, for logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Every watch connection ends.
    DropWatches,
    /// History compacted and watches dropped: the rewatch gets 410 Gone and the Reflector
    /// relists.
    ExpireAndDrop,
    /// History compacted, watches left alone.
    CompactOnly,
    /// The next lists fail with 500, then watches drop so a relist is attempted.
    ListInternalErrors,
    /// The next watch requests fail with 500, then watches drop.
    WatchInternalErrors,
    /// The next list fails with 429 and Retry-After, then history is compacted and watches
    /// drop, so the Reflector must relist through the 429.
    TooManyRequests,
    /// Like a restarted server: history forgotten, watches dropped.
    ForgetHistory,
    /// Watch delivery paused for the round's churn, then resumed.
    PauseResume,
}

impl Fault {
    /// Every kind.
    pub const ALL: [Fault; 8] = [
        Fault::DropWatches,
        Fault::ExpireAndDrop,
        Fault::CompactOnly,
        Fault::ListInternalErrors,
        Fault::WatchInternalErrors,
        Fault::TooManyRequests,
        Fault::ForgetHistory,
        Fault::PauseResume,
    ];

    /// Injects the fault against `resource` (the `PauseResume` pause; call [`Fault::finish`]
    /// after the churn).
    pub fn inject(self, server: &RunningServer, resource: &str) {
        let f = server.faults();
        match self {
            Fault::DropWatches => f.drop_watches(),
            Fault::ExpireAndDrop => {
                f.compact_now();
                f.drop_watches();
            }
            Fault::CompactOnly => {
                f.compact_now();
            }
            Fault::ListInternalErrors => {
                f.fail_next(FailureRule::new(500, 2).verb(Verb::List).resource(resource));
                f.compact_now();
                f.drop_watches();
            }
            Fault::WatchInternalErrors => {
                f.fail_next(
                    FailureRule::new(500, 2)
                        .verb(Verb::Watch)
                        .resource(resource),
                );
                f.drop_watches();
            }
            Fault::TooManyRequests => {
                f.fail_next(
                    FailureRule::new(429, 1)
                        .verb(Verb::List)
                        .resource(resource)
                        .retry_after(1),
                );
                f.compact_now();
                f.drop_watches();
            }
            Fault::ForgetHistory => f.forget_history(),
            Fault::PauseResume => f.pause_watches(),
        }
    }

    /// Ends the fault's effect that would otherwise block convergence (resumes paused watches).
    pub fn finish(self, server: &RunningServer) {
        if self == Fault::PauseResume {
            server.faults().resume_watches();
        }
    }
}

/// Random churn of config maps in `namespaces`: creates, updates (data changes) and deletes,
/// tracking the live names in `live` (`(namespace, name)`).
pub struct ConfigMapChurn {
    /// Live config maps.
    pub live: Vec<(String, String)>,
    /// What the server should hold: key → resourceVersion, from the writes' responses.
    pub expected: BTreeMap<String, String>,
    next: usize,
    namespaces: Vec<String>,
}

impl ConfigMapChurn {
    /// Seeds `count` config maps over `namespaces` namespaces (`ns-0`, ...) and returns the
    /// churn tracker.
    pub fn seed(server: &RunningServer, count: usize, namespaces: usize) -> Self {
        let namespaces: Vec<String> = (0..namespaces).map(|i| format!("ns-{i}")).collect();
        let live: Vec<(String, String)> = (0..count)
            .map(|i| {
                (
                    namespaces[i % namespaces.len()].clone(),
                    format!("cm-{i:06}"),
                )
            })
            .collect();
        server
            .seed(
                "configmaps",
                live.iter()
                    .map(|(ns, n)| kinformer_apiserver::seed::configmap(ns, n, 2)),
            )
            .expect("seed config maps");
        Self {
            next: count,
            live,
            namespaces,
            expected: server_view(server, "configmaps"),
        }
    }

    /// `ops` random operations (about 40% updates, 30% creates, 30% deletes).
    pub fn churn(&mut self, server: &RunningServer, rng: &mut Rng, ops: usize) {
        for _ in 0..ops {
            let roll = rng.below(10);
            if roll < 3 || self.live.is_empty() {
                let ns = self.namespaces[rng.below(self.namespaces.len())].clone();
                let name = format!("cm-{:06}", self.next);
                self.next += 1;
                let stored = server
                    .create_value(
                        "configmaps",
                        Some(&ns),
                        kinformer_apiserver::seed::configmap(&ns, &name, 1),
                    )
                    .expect("create");
                self.expected
                    .insert(format!("{ns}/{name}"), value_rv(&stored));
                self.live.push((ns, name));
            } else if roll < 6 {
                let i = rng.below(self.live.len());
                let (ns, name) = self.live.swap_remove(i);
                server
                    .delete::<ConfigMap>(Some(&ns), &name)
                    .expect("delete");
                self.expected.remove(&format!("{ns}/{name}"));
            } else {
                let (ns, name) = &self.live[rng.below(self.live.len())];
                let mut cm: ConfigMap = server.get(Some(ns), name).expect("get");
                cm.data
                    .get_or_insert_default()
                    .insert("rand".into(), rng.next_u64().to_string());
                cm.metadata
                    .labels
                    .get_or_insert_default()
                    .insert("tier".into(), format!("t{}", rng.below(4)));
                let stored = server.update(&cm).expect("update");
                self.expected.insert(
                    format!("{ns}/{name}"),
                    stored.metadata.resource_version.unwrap_or_default(),
                );
            }
        }
    }
}
