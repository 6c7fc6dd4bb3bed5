//! Issue 5, end to end: a `SharedInformerFactory` over the embedded API server's client, with
//! pod and config map informers, three handlers (one per informer plus one added to pods after
//! start), namespace and label indexes, syncs 20,000 objects and stays consistent through churn
//! and injected faults:
//!
//! - every handler's view (a map built from its own add/update/delete events, tombstones
//!   included) ends equal to the server's state;
//! - every cache ends equal to the server's state;
//! - the label index answers equal a brute-force filter of the server's state;
//! - no handler ever hears of an object before the cache holds it (checked inside the handler).
//!
//! Also: the `DynamicObject` path (a custom resource registered on the server,
//! `factory.dynamic_informer`).

use crate::queue_mode;

use crate::embedded_support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use embedded_support::*;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kinformer::{
    IndexFuncError, Indexer, Indexers, Object, ObjectOrTombstone, ResourceEventHandlerFuncs,
    SharedIndexInformer, SharedInformerFactory, meta_namespace_key, object::resource_version,
};
use kinformer_apiserver::{ResourceInfo, RunningServer, Scope, ServerConfig};
use kube::api::{ApiResource, DynamicObject};
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const SYNC_LIMIT: Duration = Duration::from_secs(120);
const CONVERGE_LIMIT: Duration = Duration::from_secs(60);

/// What one handler has seen, built from its own events alone.
#[derive(Default)]
struct HandlerLog {
    /// key → resourceVersion.
    view: BTreeMap<String, String>,
    /// Events seen so far (a sequence number for ordering checks).
    seq: u64,
    /// Events delivered while the cache no longer held the key: `(key, seq)`; each must be
    /// followed by a delete of that key.
    absent_at: Vec<(String, u64)>,
    /// key → seq of the last delete.
    last_delete: HashMap<String, u64>,
    /// Events that arrived before the cache held them.
    violations: Vec<String>,
    tombstones: u64,
}

fn rv_number(rv: &str) -> u64 {
    rv.parse().unwrap_or(0)
}

impl HandlerLog {
    /// Records an add or update of `key` at `rv`, checking the cache first.
    fn saw<K: Object>(&mut self, cache: &Indexer<K>, key: String, rv: &str) {
        self.seq += 1;
        match cache.get_by_key(&key) {
            Some(cached) if rv_number(resource_version(cached.as_ref())) >= rv_number(rv) => {}
            Some(cached) => self.violations.push(format!(
                "{key}: delivered rv {rv} while the cache holds rv {}",
                resource_version(cached.as_ref())
            )),
            None => self.absent_at.push((key.clone(), self.seq)),
        }
        self.view.insert(key, rv.to_owned());
    }

    fn deleted(&mut self, key: String) {
        self.seq += 1;
        self.view.remove(&key);
        self.last_delete.insert(key, self.seq);
    }

    /// Deliveries for keys the cache did not hold that were not followed by a delete.
    fn unexplained_absences(&self) -> Vec<String> {
        self.absent_at
            .iter()
            .filter(|(k, seq)| self.last_delete.get(k).is_none_or(|d| d <= seq))
            .map(|(k, seq)| format!("{k} at event {seq}"))
            .collect()
    }
}

/// A handler that records its view into a shared [`HandlerLog`].
fn recording_handler<K: Object>(
    cache: Indexer<K>,
) -> (ResourceEventHandlerFuncs<K>, Arc<Mutex<HandlerLog>>) {
    let log: Arc<Mutex<HandlerLog>> = Arc::default();
    let (l1, l2, l3) = (log.clone(), log.clone(), log.clone());
    let (c1, c2) = (cache.clone(), cache);
    let funcs = ResourceEventHandlerFuncs::new()
        .on_add(move |obj: &Arc<K>, _| {
            let key = meta_namespace_key(obj.as_ref()).expect("key");
            l1.lock().saw(&c1, key, resource_version(obj.as_ref()));
        })
        .on_update(move |_old: &Arc<K>, new: &Arc<K>| {
            let key = meta_namespace_key(new.as_ref()).expect("key");
            l2.lock().saw(&c2, key, resource_version(new.as_ref()));
        })
        .on_delete(move |obj: &ObjectOrTombstone<K>| {
            let mut log = l3.lock();
            let key = match obj {
                ObjectOrTombstone::Object(o) => meta_namespace_key(o.as_ref()).expect("key"),
                ObjectOrTombstone::Tombstone(t) => {
                    log.tombstones += 1;
                    t.key.clone()
                }
            };
            log.deleted(key);
        });
    (funcs, log)
}

/// An index of objects by the value of label `label`.
fn label_index<K: Object>(name: &str, label: &'static str) -> Indexers<K> {
    let mut indexers = Indexers::default();
    indexers.insert(
        name.to_owned(),
        Arc::new(move |obj: &K| -> Result<Vec<String>, IndexFuncError> {
            Ok(obj
                .meta()
                .labels
                .as_ref()
                .and_then(|l| l.get(label))
                .map(|v| vec![v.clone()])
                .unwrap_or_default())
        }),
    );
    indexers
}

/// Brute force from the server's state: label value → sorted keys.
fn server_label_groups(
    server: &RunningServer,
    resource: &str,
    label: &str,
) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for o in server.state(resource, None).expect("state").objects {
        if let Some(v) = o.object["metadata"]["labels"][label].as_str() {
            groups
                .entry(v.to_owned())
                .or_default()
                .push(format!("{}/{}", o.namespace, o.name));
        }
    }
    for keys in groups.values_mut() {
        keys.sort();
    }
    groups
}

fn assert_label_index<K: Object>(
    server: &RunningServer,
    resource: &str,
    cache: &Indexer<K>,
    index: &str,
    label: &str,
) {
    let want = server_label_groups(server, resource, label);
    let values: BTreeSet<String> = cache.list_index_func_values(index).into_iter().collect();
    assert_eq!(
        values,
        want.keys().cloned().collect::<BTreeSet<_>>(),
        "{resource}: indexed label values"
    );
    for (value, keys) in &want {
        let mut have = cache.index_keys(index, value).expect("index exists");
        have.sort();
        assert_eq!(&have, keys, "{resource}: index {index}={value}");
    }
}

/// Random churn of pods: creates, label changes (moving pods between index values), deletes.
struct PodChurn {
    live: Vec<(String, String)>,
    next: usize,
    /// key → resourceVersion the server returned for the last write.
    expected: BTreeMap<String, String>,
}

impl PodChurn {
    fn seed(server: &RunningServer, count: usize, namespaces: usize) -> Self {
        server.seed_pods(count, namespaces).expect("seed pods");
        let names = kinformer_apiserver::seed::namespace_names(namespaces);
        Self {
            expected: server_view(server, "pods"),
            live: (0..count)
                .map(|i| (names[i % names.len()].clone(), format!("pod-{i:06}")))
                .collect(),
            next: count,
        }
    }

    fn churn(&mut self, server: &RunningServer, rng: &mut Rng, ops: usize) {
        for _ in 0..ops {
            let roll = rng.below(10);
            if roll < 3 || self.live.is_empty() {
                let ns = format!("ns-{}", rng.below(8));
                let name = format!("pod-{:06}", self.next);
                self.next += 1;
                let stored = server
                    .create_value(
                        "pods",
                        Some(&ns),
                        kinformer_apiserver::seed::pod(&ns, &name, self.next),
                    )
                    .expect("create pod");
                self.expected
                    .insert(format!("{ns}/{name}"), value_rv(&stored));
                self.live.push((ns, name));
            } else if roll < 6 {
                let (ns, name) = self.live.swap_remove(rng.below(self.live.len()));
                server.delete::<Pod>(Some(&ns), &name).expect("delete pod");
                self.expected.remove(&format!("{ns}/{name}"));
            } else {
                let (ns, name) = &self.live[rng.below(self.live.len())];
                let mut pod: Pod = server.get(Some(ns), name).expect("get pod");
                pod.metadata
                    .labels
                    .get_or_insert_default()
                    .insert("app".into(), format!("app-{}", rng.below(60)));
                let stored = server.update(&pod).expect("update pod");
                self.expected.insert(
                    format!("{ns}/{name}"),
                    stored.metadata.resource_version.unwrap_or_default(),
                );
            }
        }
    }
}

/// Cancels after `limit`, so waits on the factory are bounded.
fn deadline(limit: Duration) -> CancellationToken {
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(limit).await;
        c.cancel();
    });
    cancel
}

async fn assert_handler_converges(
    server: &RunningServer,
    resource: &str,
    expected: &BTreeMap<String, String>,
    name: &str,
    log: &Arc<Mutex<HandlerLog>>,
) {
    wait_converged_to(server, resource, expected, CONVERGE_LIMIT, || {
        log.lock().view.clone()
    })
    .await
    .unwrap_or_else(|d| panic!("handler {name}: view never converged: {d}"));
    let log = log.lock();
    assert!(
        log.violations.is_empty(),
        "handler {name} heard of objects before the cache held them: {:?}",
        &log.violations[..log.violations.len().min(5)]
    );
    let unexplained = log.unexplained_absences();
    assert!(
        unexplained.is_empty(),
        "handler {name} heard of objects the cache did not hold and that were never deleted: {:?}",
        &unexplained[..unexplained.len().min(5)]
    );
}

/// A factory over kube's default client (`Client::try_default`-style: `Config::default_retry`
/// on, so kube's retry layer resends 429, 503 and 504 itself, up to 15 times) behaves as
/// client-go does: its Reflector sees each 429 and 503 at once and backs off itself. Without
/// the source's uncopyable request bodies, kube would retry both within milliseconds and the
/// watch error handler would see nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_factory_over_kubes_default_client_sees_429_and_503_itself() {
    use kinformer::reflector::{BackoffConfig, InitialListMode};
    use kinformer_apiserver::{FailureRule, Verb};
    let server = kinformer_apiserver::start(ServerConfig::default())
        .await
        .expect("server starts");
    server.seed_pods(20, 2).expect("seed pods");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    assert!(config.default_retry, "kube's default: retries on");
    let client = kube::Client::try_from(config).unwrap();
    server
        .faults()
        .fail_next(FailureRule::new(429, 1).verb(Verb::List).resource("pods"));
    server
        .faults()
        .fail_next(FailureRule::new(503, 1).verb(Verb::List).resource("pods"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let factory = SharedInformerFactory::builder(client)
        .defaults(
            queue_mode::config()
                .initial_list(InitialListMode::ListThenWatch)
                .backoff(BackoffConfig {
                    initial: Duration::from_millis(10),
                    cap: Duration::from_millis(20),
                    ..Default::default()
                })
                .watch_error_handler(move |e| {
                    let code = e
                        .list_watch_error()
                        .and_then(|e| e.status())
                        .map(|s| s.code);
                    s.lock().push(code);
                }),
        )
        .build();
    let pods = factory.informer::<Pod>();
    factory.start();
    let synced = factory.wait_for_cache_sync(&deadline(SYNC_LIMIT)).await;
    assert!(synced.values().all(|s| *s), "{synced:?}");
    assert_eq!(pods.indexer().len(), 20);
    assert_eq!(
        *seen.lock(),
        [Some(429), Some(503)],
        "the Reflector saw both failures, in order, each after one request"
    );
    let pod_lists = server
        .requests()
        .iter()
        .filter(|r| r.verb.as_deref() == Some("list") && r.path.ends_with("/pods"))
        .count();
    assert_eq!(
        pod_lists, 3,
        "two failed lists and the one that worked: no retries"
    );
    factory.shutdown().await;
}

/// Regression: `start` used to leave "started" to the informer's task, so a
/// `wait_for_cache_sync` right after `start` could find no started informer and return an
/// empty map at once, before anything had synced. On a current-thread runtime the informer
/// tasks cannot run before `wait_for_cache_sync` looks, so this fails without the fix.
#[tokio::test]
async fn wait_for_cache_sync_right_after_start_waits_for_every_informer() {
    let server = kinformer_apiserver::start(ServerConfig::default())
        .await
        .expect("server starts");
    server.seed_pods(50, 2).expect("seed pods");
    let factory = SharedInformerFactory::builder(server.client())
        .defaults(queue_mode::config())
        .build();
    let pods = factory.informer::<Pod>();
    let configmaps = factory.informer::<ConfigMap>();
    factory.start();
    let synced = factory.wait_for_cache_sync(&deadline(SYNC_LIMIT)).await;
    assert_eq!(synced.len(), 2, "both informers are reported: {synced:?}");
    assert!(synced.values().all(|s| *s), "both synced: {synced:?}");
    assert_eq!(
        pods.indexer().len(),
        50,
        "the pods are cached when it returns"
    );
    assert!(configmaps.has_synced());
    factory.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn factory_handlers_caches_and_indexes_converge_through_churn_and_faults() {
    let started = Instant::now();
    let server = kinformer_apiserver::start(ServerConfig::default())
        .await
        .expect("server starts");
    let mut pods_churn = PodChurn::seed(&server, 10_000, 8);
    let mut cms = ConfigMapChurn::seed(&server, 10_000, 8);
    let mut rng = Rng::new(5);

    let factory = SharedInformerFactory::builder(server.client())
        .defaults(queue_mode::config())
        .build();
    let pods: SharedIndexInformer<Pod> = factory.informer::<Pod>();
    let configmaps: SharedIndexInformer<ConfigMap> = factory.informer::<ConfigMap>();
    assert!(
        factory.informer::<Pod>().indexer().has_index("namespace"),
        "the factory's informers carry a namespace index"
    );
    pods.add_indexers(label_index("by-app", "app"))
        .expect("pod label index");
    configmaps
        .add_indexers(label_index("by-tier", "tier"))
        .expect("config map label index");

    let (h, pod_log) = recording_handler(pods.indexer());
    pods.add_event_handler(h).expect("pod handler");
    let (h, cm_log) = recording_handler(configmaps.indexer());
    configmaps.add_event_handler(h).expect("config map handler");

    factory.start();
    let synced = factory.wait_for_cache_sync(&deadline(SYNC_LIMIT)).await;
    assert_eq!(synced.len(), 2);
    assert!(
        synced.values().all(|s| *s),
        "every informer syncs: {synced:?}"
    );
    let sync_time = started.elapsed();
    assert_eq!(pods.indexer().len() + configmaps.indexer().len(), 20_000);

    // a late handler replays the cache, then follows live events
    let (h, late_log) = recording_handler(pods.indexer());
    let late = pods.add_event_handler(h).expect("late pod handler");

    let rounds = [
        vec![Fault::DropWatches, Fault::PauseResume],
        vec![Fault::ExpireAndDrop, Fault::CompactOnly],
        vec![Fault::TooManyRequests, Fault::WatchInternalErrors],
        vec![Fault::ForgetHistory],
    ];
    for faults in &rounds {
        for fault in faults {
            pods_churn.churn(&server, &mut rng, 40);
            cms.churn(&server, &mut rng, 40);
            fault.inject(&server, "pods");
            if *fault != Fault::PauseResume {
                // pause, compaction and drops are server-wide; failure rules are per resource
                fault.inject(&server, "configmaps");
            }
            pods_churn.churn(&server, &mut rng, 40);
            cms.churn(&server, &mut rng, 40);
        }
        for fault in faults {
            fault.finish(&server);
        }
        let pod_cache = pods.indexer();
        let cm_cache = configmaps.indexer();
        let expected = &pods_churn.expected;
        wait_converged_to(&server, "pods", expected, CONVERGE_LIMIT, || {
            cache_view(&pod_cache)
        })
        .await
        .unwrap_or_else(|d| panic!("pods ({faults:?}): cache never converged: {d}"));
        let expected = &cms.expected;
        wait_converged_to(&server, "configmaps", expected, CONVERGE_LIMIT, || {
            cache_view(&cm_cache)
        })
        .await
        .unwrap_or_else(|d| panic!("configmaps ({faults:?}): cache never converged: {d}"));
        server.faults().clear();
        eprintln!("{faults:?}: converged at {:?}", started.elapsed());
    }

    assert!(late.has_synced(), "the late handler synced");
    let (pe, ce) = (&pods_churn.expected, &cms.expected);
    assert_handler_converges(&server, "pods", pe, "pods", &pod_log).await;
    assert_handler_converges(&server, "pods", pe, "late pods", &late_log).await;
    assert_handler_converges(&server, "configmaps", ce, "configmaps", &cm_log).await;
    let pod_state = server_view(&server, "pods");
    assert_eq!(cache_view(&pods.indexer()), pod_state);
    assert_eq!(
        cache_view(&configmaps.indexer()),
        server_view(&server, "configmaps")
    );
    assert_eq!(pods.indexer().len(), pods_churn.live.len());
    assert_eq!(configmaps.indexer().len(), cms.live.len());

    assert_label_index(&server, "pods", &pods.indexer(), "by-app", "app");
    assert_label_index(
        &server,
        "configmaps",
        &configmaps.indexer(),
        "by-tier",
        "tier",
    );
    // the namespace index agrees too
    for ns in kinformer_apiserver::seed::namespace_names(8) {
        let mut have = pods.indexer().index_keys("namespace", &ns).unwrap();
        have.sort();
        let want: Vec<_> = pod_state
            .keys()
            .filter(|k| k.starts_with(&format!("{ns}/")))
            .cloned()
            .collect();
        assert_eq!(have, want, "namespace index for {ns}");
    }

    factory.shutdown().await;
    server.shutdown().await;
    eprintln!(
        "20,000 objects synced in {sync_time:?}; total {:?}; tombstones seen: pods {}, late {}, configmaps {}",
        started.elapsed(),
        pod_log.lock().tombstones,
        late_log.lock().tombstones,
        cm_log.lock().tombstones
    );
}

fn widget(ns: &str, name: &str, size: u64) -> serde_json::Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": ns, "labels": {"size": size.to_string()}},
        "spec": {"size": size}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_informer_for_a_registered_custom_resource_converges() {
    let server = kinformer_apiserver::start(ServerConfig::default())
        .await
        .expect("server starts");
    server.register(ResourceInfo::new(
        "example.com",
        "v1",
        "Widget",
        "widgets",
        Scope::Namespaced,
    ));
    let mut live: Vec<(String, String)> = Vec::new();
    for i in 0..500 {
        let (ns, name) = (format!("ns-{}", i % 3), format!("w-{i:04}"));
        server
            .create_value("widgets.example.com", Some(&ns), widget(&ns, &name, i))
            .expect("create widget");
        live.push((ns, name));
    }

    let factory = SharedInformerFactory::builder(server.client())
        .defaults(queue_mode::config())
        .build();
    let ar = ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let widgets = factory.dynamic_informer(&ar, true);
    let (h, log) = recording_handler::<DynamicObject>(widgets.indexer());
    widgets.add_event_handler(h).expect("widget handler");
    factory.start();
    let synced = factory.wait_for_cache_sync(&deadline(SYNC_LIMIT)).await;
    assert!(synced.values().all(|s| *s), "synced: {synced:?}");
    assert_eq!(widgets.indexer().len(), 500);
    let cached = widgets.indexer().get_by_key("ns-1/w-0001").expect("w-0001");
    assert_eq!(
        cached.data["spec"]["size"], 1,
        "the dynamic object keeps its fields"
    );

    let mut rng = Rng::new(11);
    let mut next = 500;
    for fault in [
        Fault::DropWatches,
        Fault::ExpireAndDrop,
        Fault::ForgetHistory,
    ] {
        for step in 0..60 {
            if step == 30 {
                fault.inject(&server, "widgets");
            }
            match rng.below(3) {
                0 => {
                    let (ns, name) = (format!("ns-{}", rng.below(3)), format!("w-{next:04}"));
                    next += 1;
                    server
                        .create_value("widgets.example.com", Some(&ns), widget(&ns, &name, next))
                        .expect("create widget");
                    live.push((ns, name));
                }
                1 if !live.is_empty() => {
                    let (ns, name) = live.swap_remove(rng.below(live.len()));
                    server
                        .delete_value("widgets.example.com", Some(&ns), &name)
                        .expect("delete widget");
                }
                _ if !live.is_empty() => {
                    let (ns, name) = live[rng.below(live.len())].clone();
                    server
                        .update_value(
                            "widgets.example.com",
                            Some(&ns),
                            widget(&ns, &name, rng.below(1000) as u64),
                        )
                        .expect("update widget");
                }
                _ => {}
            }
        }
        let cache = widgets.indexer();
        wait_converged(&server, "widgets.example.com", CONVERGE_LIMIT, || {
            cache_view(&cache)
        })
        .await
        .unwrap_or_else(|d| panic!("widgets after {fault:?}: never converged: {d}"));
    }
    assert_eq!(widgets.indexer().len(), live.len());
    let expected = server_view(&server, "widgets.example.com");
    assert_handler_converges(&server, "widgets.example.com", &expected, "widgets", &log).await;
    factory.shutdown().await;
    server.shutdown().await;
}
