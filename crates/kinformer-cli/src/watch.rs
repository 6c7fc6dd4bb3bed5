//! `kinformer watch`: an informer-backed live view of one resource.
//!
//! Output: sync progress on stderr-free plain lines (`synced N pods in X ms`), an optional index
//! summary (`--index-by`), then one line per event in kubectl-like columns
//! (`EVENT NAMESPACE NAME RESOURCEVERSION AGE`).

use std::collections::HashMap;
use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    ConfigMap, Event as CoreEvent, Namespace, Node, Pod, Secret, Service,
};
use kinformer::{
    Event, IndexFunc, InformerConfig, Object, SharedIndexInformer, SharedInformerFactory,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;

use crate::error::{CliError, with_causes};
use crate::resources::{Known, Resolved, resolve};

/// Arguments of `kinformer watch`.
#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// The resource: plural, singular or short name (pods, po, cm, svc, ns, deploy, ...) or
    /// group/version/plural (v1/endpoints, example.com/v1/widgets).
    pub resource: String,
    /// Only this namespace.
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Label selector (`app=web,tier!=db`).
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    /// Index the cache by this label key and print the values and counts after sync.
    #[arg(long)]
    pub index_by: Option<String>,
    /// Start an embedded API server in this process instead of using the kubeconfig.
    #[arg(long)]
    pub embedded: bool,
    /// With --embedded: where to write the kubeconfig for kubectl (default: temp directory).
    #[arg(long)]
    pub write_kubeconfig: Option<PathBuf>,
    /// With --embedded: realistic pods to seed.
    #[arg(long, default_value_t = 0)]
    pub seed_pods: usize,
    /// Print a health line this often (seconds; 0: never): seconds since the last watch event
    /// or bookmark and since the last list, this view's backlog and its oldest waiting
    /// notification, and the consistency checks.
    #[arg(long, default_value_t = 10)]
    pub health_every: u64,
    /// Check the cache against the server this often (seconds; 0, the default: never): a list
    /// at exactly the cache's resourceVersion, compared key by key.
    #[arg(long, default_value_t = 0)]
    pub consistency_check: u64,
}

const INDEX: &str = "by-label";

/// Runs the live view until Ctrl-C.
pub async fn run(args: WatchArgs) -> Result<(), CliError> {
    let resolved = resolve(&args.resource)?;
    let mut _server = None;
    let client = if args.embedded {
        let server = kinformer_apiserver::start(Default::default())
            .await
            .map_err(|e| CliError::Embedded(with_causes(&e)))?;
        if args.seed_pods > 0 {
            server
                .seed_pods(args.seed_pods, 4)
                .map_err(|e| CliError::Embedded(e.to_string()))?;
        }
        let path = args.write_kubeconfig.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("kinformer-watch-{}.kubeconfig", std::process::id()))
        });
        server
            .write_kubeconfig(&path)
            .map_err(|source| CliError::Io {
                path: path.display().to_string(),
                source,
            })?;
        println!("embedded API server at {}", server.base_url());
        println!("kubeconfig: {}", path.display());
        println!("try:  KUBECONFIG={} kubectl get pods -A", path.display());
        let client = server.client();
        _server = Some(server);
        client
    } else {
        connect().await?
    };
    let mut config = InformerConfig::default();
    config.namespace = args.namespace.clone();
    config.label_selector = args.selector.clone();
    config = config.consistency_check(Duration::from_secs(args.consistency_check));
    // A refused or failing list or watch is shown, not only logged (the log is off unless
    // KINFORMER_LOG says otherwise): an under-privileged kubeconfig would otherwise leave the
    // view at "syncing ..." with no reason given. Expired watches are routine and stay quiet.
    config = config.watch_error_handler(|e| {
        kinformer::reflector::default_watch_error_handler("kinformer watch", e);
        if !e.is_expired() {
            eprintln!("# error: {e} (retrying)");
        }
    });
    let factory = SharedInformerFactory::builder(client.clone())
        .defaults(config)
        .build();
    let view = View {
        index_by: args.index_by.clone(),
        health_every: Duration::from_secs(args.health_every),
    };
    let result = match resolved {
        Resolved::Known(k) => match k {
            Known::Pods => view.run(&factory, factory.informer::<Pod>(), "pods").await,
            Known::Nodes => {
                view.run(&factory, factory.informer::<Node>(), "nodes")
                    .await
            }
            Known::ConfigMaps => {
                view.run(&factory, factory.informer::<ConfigMap>(), "configmaps")
                    .await
            }
            Known::Secrets => {
                view.run(&factory, factory.informer::<Secret>(), "secrets")
                    .await
            }
            Known::Services => {
                view.run(&factory, factory.informer::<Service>(), "services")
                    .await
            }
            Known::Namespaces => {
                view.run(&factory, factory.informer::<Namespace>(), "namespaces")
                    .await
            }
            Known::Events => {
                view.run(&factory, factory.informer::<CoreEvent>(), "events")
                    .await
            }
            Known::Deployments => {
                view.run(&factory, factory.informer::<Deployment>(), "deployments")
                    .await
            }
        },
        Resolved::Dynamic {
            group,
            version,
            plural,
        } => {
            let (ar, namespaced) = discover(&client, &group, &version, &plural).await?;
            let informer = factory.dynamic_informer(&ar, namespaced);
            view.run(&factory, informer, &plural).await
        }
    };
    factory.shutdown().await;
    if let Some(server) = _server {
        server.shutdown().await;
    }
    result
}

/// A client for the current kubeconfig context, checked to reach its server.
async fn connect() -> Result<kube::Client, CliError> {
    let mut config = kube::Config::infer()
        .await
        .map_err(|e| CliError::NoKubeconfig(with_causes(&e)))?;
    // Informers must see 429/503/504 themselves (kube's own retries would hide them).
    config.default_retry = false;
    let url = config.cluster_url.to_string();
    let client = kube::Client::try_from(config).map_err(|e| CliError::Kube(with_causes(&e)))?;
    match tokio::time::timeout(Duration::from_secs(10), client.apiserver_version()).await {
        Ok(Ok(_)) => Ok(client),
        Ok(Err(e)) => Err(CliError::Unreachable {
            url,
            reason: with_causes(&e),
        }),
        Err(_) => Err(CliError::Unreachable {
            url,
            reason: "no answer within 10 s".into(),
        }),
    }
}

/// Finds `plural` in the server's discovery for `group/version`.
async fn discover(
    client: &kube::Client,
    group: &str,
    version: &str,
    plural: &str,
) -> Result<(ApiResource, bool), CliError> {
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let list = if group.is_empty() {
        client.list_core_api_resources(version).await
    } else {
        client.list_api_group_resources(&gv).await
    };
    let list = list.map_err(|_| CliError::NotServed(format!("{gv}/{plural}")))?;
    let r = list
        .resources
        .iter()
        .find(|r| r.name == plural)
        .ok_or_else(|| CliError::NotServed(format!("{gv}/{plural}")))?;
    let gvk = GroupVersionKind::gvk(group, version, &r.kind);
    Ok((
        ApiResource::from_gvk_with_plural(&gvk, plural),
        r.namespaced,
    ))
}

struct View {
    index_by: Option<String>,
    /// How often the health line is printed (zero: never).
    health_every: Duration,
}

impl View {
    async fn run<K>(
        &self,
        factory: &SharedInformerFactory,
        informer: SharedIndexInformer<K>,
        what: &str,
    ) -> Result<(), CliError>
    where
        K: Object + Clone + Debug + DeserializeOwned,
    {
        if let Some(label) = &self.index_by {
            let label = label.clone();
            let f: IndexFunc<K> = Arc::new(move |obj: &K| {
                Ok(obj.labels().get(&label).cloned().into_iter().collect())
            });
            informer.add_indexers(HashMap::from([(INDEX.to_string(), f)]))?;
        }
        let mut stream = informer.stream()?;
        let started = Instant::now();
        factory.start();
        println!("syncing {what} ...");
        let mut initial = 0usize;
        let mut last_report = Instant::now();
        let mut health = (!self.health_every.is_zero()).then(|| {
            tokio::time::interval_at(
                tokio::time::Instant::now() + self.health_every,
                self.health_every,
            )
        });
        loop {
            let next = tokio::select! {
                n = stream.next() => n,
                _ = tokio::signal::ctrl_c() => return Ok(()),
                _ = async { health.as_mut().expect("only when set").tick().await }, if health.is_some() => {
                    println!("{}", health_line(&informer, stream.registration()));
                    continue;
                }
            };
            let Some(event) = next else {
                return Ok(());
            };
            match event {
                Event::Add {
                    is_in_initial_list: true,
                    ..
                } => {
                    initial += 1;
                    if last_report.elapsed() >= Duration::from_secs(1) {
                        println!("  ... {initial} {what}");
                        last_report = Instant::now();
                    }
                }
                Event::Synced => {
                    println!(
                        "synced {initial} {what} in {} ms",
                        started.elapsed().as_millis()
                    );
                    self.print_index(&informer);
                    println!(
                        "{:<9} {:<20} {:<40} {:<16} AGE",
                        "EVENT", "NAMESPACE", "NAME", "RESOURCEVERSION"
                    );
                }
                Event::Add { obj, .. } => line("ADDED", obj.as_ref()),
                Event::Update { new, .. } => line("MODIFIED", new.as_ref()),
                Event::Delete(d) => match d.object() {
                    Some(obj) => line("DELETED", obj.as_ref()),
                    None => println!(
                        "{:<9} {}",
                        "DELETED",
                        d.key().unwrap_or_else(|e| e.to_string())
                    ),
                },
            }
        }
    }

    fn print_index<K: Object>(&self, informer: &SharedIndexInformer<K>) {
        let Some(label) = &self.index_by else {
            return;
        };
        let indexer = informer.indexer();
        let mut values = indexer.list_index_func_values(INDEX);
        values.sort();
        println!("index by label {label:?}: {} values", values.len());
        for v in values {
            let n = indexer.by_index(INDEX, &v).map(|l| l.len()).unwrap_or(0);
            println!("  {label}={v}: {n}");
        }
    }
}

/// `# health: watch quiet 3.2s | last list 61s ago | backlog 0 (oldest 0.0s) | consistency
/// 2 ok, 0 divergent, 0 skipped`: the stuck signals of one informer and this view's listener.
fn health_line<K: Object>(
    informer: &SharedIndexInformer<K>,
    registration: &kinformer::ResourceEventHandlerRegistration,
) -> String {
    let secs = |d: Option<Duration>| {
        d.map_or_else(|| "-".to_owned(), |d| format!("{:.1}s", d.as_secs_f64()))
    };
    let checks = informer.consistency_stats();
    let mut line = format!(
        "# health: watch quiet {} | last list {} ago | backlog {} (oldest {}) | consistency {} ok, {} divergent, {} skipped",
        secs(informer.since_last_watch_activity()),
        secs(informer.since_last_list()),
        registration.backlog(),
        secs(registration.oldest_pending_age()),
        checks.consistent,
        checks.divergent,
        checks.skipped + checks.failed,
    );
    if let Some(last) = checks.last.filter(|r| !r.is_consistent()) {
        let first: Vec<&String> = last
            .missing
            .iter()
            .chain(&last.extra)
            .chain(last.different.iter().map(|(k, _, _)| k))
            .take(3)
            .collect();
        line.push_str(&format!(" (last: {} differ: {first:?})", last.divergent()));
    }
    line
}

fn line<K: Resource>(event: &str, obj: &K) {
    let meta = obj.meta();
    println!(
        "{:<9} {:<20} {:<40} {:<16} {}",
        event,
        meta.namespace.as_deref().unwrap_or("-"),
        meta.name.as_deref().unwrap_or("-"),
        meta.resource_version.as_deref().unwrap_or("-"),
        meta.creation_timestamp
            .as_ref()
            .map(|t| age(t.0))
            .unwrap_or_else(|| "-".into())
    );
}

/// kubectl-style age: `42s`, `5m`, `3h`, `2d`.
pub fn age(created: jiff::Timestamp) -> String {
    let secs = (jiff::Timestamp::now().as_second() - created.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}
