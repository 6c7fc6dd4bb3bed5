//! A controller you can copy: it keeps one ConfigMap per Deployment in step (`<name>-summary`,
//! holding the replica count and the image), owning it, against the embedded API server, under
//! churn and injected faults, and exits 0 once everything has converged.
//!
//! `cargo run -p kinformer --example controller` (add `--features metrics` to print the
//! Prometheus scrape at the end).
//!
//! With leader election, as several replicas of one controller against any API server
//! (`kinformer serve` writes a kubeconfig), until Ctrl-C or SIGTERM:
//!
//! ```sh
//! cargo run -p kinformer-cli -- serve --kubeconfig /tmp/kc &
//! cargo run -p kinformer --example controller -- --leader-elect --kubeconfig /tmp/kc --identity a &
//! cargo run -p kinformer --example controller -- --leader-elect --kubeconfig /tmp/kc --identity b
//! ```
//!
//! Both sync their caches and queue every Deployment; only the holder of the Lease
//! `default/kinformer-example-controller` reconciles. Kill the leader (`kill -9`) and the other
//! takes over once the lease expires (15 s by default; `--lease-duration`, `--renew-deadline`,
//! `--retry-period` in seconds); stop it with Ctrl-C and it releases the lease first, so the
//! other takes over at once. Each prints `<identity> leading` / `<identity> standing by
//! (leader <x>)` as that changes.
//!
//! The pieces: a `SharedInformerFactory` with Deployment and ConfigMap informers; a
//! `Controller` that reconciles Deployments and `owns` ConfigMaps (a changed or deleted summary
//! reconciles its Deployment); a reconcile that reads the caches and writes through the API.
//! Write conflicts and injected 500s are plain errors: the key is retried with backoff.
//! Read your own writes is on: the reconcile records every summary it writes, so the next
//! reconcile of that Deployment first waits for the ConfigMap cache to show the write, and
//! never creates a summary twice or updates from a stale one (`--no-read-your-writes` turns it
//! off, in either mode). A
//! deleted Deployment's summary is left to the server's garbage collector (the summary's
//! `ownerReferences` name the Deployment), as on a real cluster: the embedded server runs one.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kinformer::controller::{Action, Controller, ControllerStats, Writes};
use kinformer::leaderelection::{LeaderElectionConfig, LeaderElector, LeaseLock};
use kinformer::{Indexer, SharedInformerFactory, split_meta_namespace_key};
use kinformer_apiserver::RunningServer;
use kinformer_apiserver::{FailureRule, Verb};
use kube::api::{Api, ObjectMeta, PostParams};
use tokio_util::sync::CancellationToken;

/// The label on every ConfigMap this controller manages.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kinformer-example");

/// The summary a Deployment should have: its ConfigMap's data.
pub fn desired_data(d: &Deployment) -> BTreeMap<String, String> {
    let spec = d.spec.as_ref();
    let replicas = spec.and_then(|s| s.replicas).unwrap_or(1);
    let image = spec
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    BTreeMap::from([
        ("replicas".to_owned(), replicas.to_string()),
        ("image".to_owned(), image),
    ])
}

fn summary_name(deployment: &str) -> String {
    format!("{deployment}-summary")
}

/// What the reconcile needs: the caches and an API client.
#[derive(Clone)]
pub struct Context {
    deployments: Indexer<Deployment>,
    configmaps: Indexer<ConfigMap>,
    client: kube::Client,
    /// Where the reconcile records what it wrote (read your own writes).
    writes: Writes,
}

/// Brings the summary ConfigMap of the Deployment `key` in step.
pub async fn reconcile(ctx: Context, key: String) -> Result<Action, kube::Error> {
    let Ok((ns, name)) = split_meta_namespace_key(&key) else {
        return Ok(Action::await_change()); // not a key we produced: nothing to do
    };
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), ns);
    let cm_name = summary_name(name);
    let existing = ctx.configmaps.get_by_key(&format!("{ns}/{cm_name}"));
    let Some(deployment) = ctx.deployments.get_by_key(&key) else {
        // The Deployment is gone. Its summary names it in `ownerReferences`, so the server's
        // garbage collector deletes the summary, on a real cluster as on the embedded server:
        // nothing to do here.
        return Ok(Action::await_change());
    };
    let data = desired_data(&deployment);
    match existing {
        Some(cm) if cm.data.as_ref() == Some(&data) => {}
        Some(cm) => {
            let mut updated = (*cm).clone();
            updated.data = Some(data);
            // The cached resourceVersion makes this a compare-and-swap: a 409 means our cache
            // was stale, and the retry sees the newer object.
            let written = api
                .replace(&cm_name, &PostParams::default(), &updated)
                .await?;
            record(&ctx.writes, &key, &written);
        }
        None => {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(cm_name.clone()),
                    namespace: Some(ns.to_owned()),
                    labels: Some(BTreeMap::from([(MANAGED_BY.0.into(), MANAGED_BY.1.into())])),
                    owner_references: Some(vec![OwnerReference {
                        api_version: "apps/v1".into(),
                        kind: "Deployment".into(),
                        name: name.to_owned(),
                        uid: deployment.metadata.uid.clone().unwrap_or_default(),
                        controller: Some(true),
                        block_owner_deletion: Some(true),
                    }]),
                    ..Default::default()
                },
                data: Some(data),
                ..Default::default()
            };
            let written = api.create(&PostParams::default(), &cm).await?;
            record(&ctx.writes, &key, &written);
        }
    }
    Ok(Action::await_change())
}

/// Records a write for the next reconcile of `key` to wait for. It cannot fail here (the
/// controller owns ConfigMaps and the server returns resource versions); if it did, the next
/// reconcile would only read a possibly stale cache, as without read-your-writes.
fn record(writes: &Writes, key: &str, written: &ConfigMap) {
    if let Err(error) = writes.record(key, written) {
        tracing::warn!(%key, %error, "write not recorded");
    }
}

/// A Deployment with `replicas` and `image`.
pub fn deployment(ns: &str, name: &str, replicas: i32, image: &str) -> Deployment {
    let labels = BTreeMap::from([("app".to_owned(), name.to_owned())]);
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "app".into(),
                        image: Some(image.into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Whether the server holds exactly one up-to-date summary per Deployment and no orphan; else
/// what differs.
pub fn converged(server: &RunningServer) -> Result<usize, String> {
    let deployments = server
        .state("deployments.apps", None)
        .map_err(|e| e.to_string())?;
    let configmaps = server
        .state("configmaps", None)
        .map_err(|e| e.to_string())?;
    let mut want = BTreeMap::new();
    for o in &deployments.objects {
        let d: Deployment = serde_json::from_value(o.object.clone()).map_err(|e| e.to_string())?;
        want.insert(
            (o.namespace.clone(), summary_name(&o.name)),
            desired_data(&d),
        );
    }
    let mut have = BTreeMap::new();
    for o in &configmaps.objects {
        let cm: ConfigMap = serde_json::from_value(o.object.clone()).map_err(|e| e.to_string())?;
        let managed = cm
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(MANAGED_BY.0))
            .is_some_and(|v| v == MANAGED_BY.1);
        if managed {
            have.insert(
                (o.namespace.clone(), o.name.clone()),
                cm.data.unwrap_or_default(),
            );
        }
    }
    if want == have {
        Ok(want.len())
    } else {
        let missing = want.keys().filter(|k| !have.contains_key(*k)).count();
        let orphans = have.keys().filter(|k| !want.contains_key(*k)).count();
        let stale = want
            .iter()
            .filter(|(k, v)| have.get(*k).is_some_and(|h| h != *v))
            .count();
        Err(format!(
            "{missing} missing, {orphans} orphans, {stale} stale summaries"
        ))
    }
}

/// Knobs of one run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Deployments created before the controller starts.
    pub initial: usize,
    /// Rounds of churn (creates, updates, deletes) while it runs.
    pub rounds: usize,
    /// Inject faults (failed writes, dropped watches, compaction) during the churn.
    pub faults: bool,
    /// Reconcile workers.
    pub workers: usize,
    /// Give up waiting for convergence after this long.
    pub limit: Duration,
    /// Read your own writes (on unless `--no-read-your-writes`).
    pub read_your_writes: bool,
    /// Record the workqueue, reconcile and informer metrics here.
    #[cfg(feature = "metrics")]
    pub metrics: Option<kinformer::metrics::Metrics>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            initial: 20,
            rounds: 5,
            faults: true,
            workers: 4,
            limit: Duration::from_secs(60),
            read_your_writes: true,
            #[cfg(feature = "metrics")]
            metrics: None,
        }
    }
}

/// Runs the controller against `server` with churn and faults until converged. Returns the
/// number of summaries and the controller's counts.
pub async fn run(
    server: &RunningServer,
    options: Options,
) -> Result<(usize, ControllerStats), String> {
    let ns = "default";
    for i in 0..options.initial {
        server
            .create(&deployment(ns, &format!("web-{i}"), 1, "nginx:1.0"))
            .map_err(|e| e.to_string())?;
    }
    let factory = SharedInformerFactory::new(server.client());
    let deployments = factory.informer::<Deployment>();
    let configmaps = factory.informer::<ConfigMap>();
    #[allow(unused_mut)]
    let mut controller = Controller::new("configmap-summary", deployments.clone())
        .owns(configmaps.clone())
        .workers(options.workers)
        .read_your_writes(options.read_your_writes);
    let ctx = Context {
        deployments: deployments.indexer(),
        configmaps: configmaps.indexer(),
        client: server.client(),
        writes: controller.writes(),
    };
    #[cfg(feature = "metrics")]
    if let Some(m) = &options.metrics {
        controller = controller.metrics(m);
        m.watch_informer(&deployments);
        m.watch_informer(&configmaps);
    }
    let stats = controller.stats();
    let queue = controller.queue().clone();
    factory.start();
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let cancel = cancel.clone();
        let ctx = Arc::new(ctx);
        async move {
            controller
                .run(cancel, move |key| reconcile((*ctx).clone(), key))
                .await
        }
    });

    // Churn: every round creates, updates and deletes Deployments (and a summary by hand,
    // which the controller must restore), with a fault injected now and then.
    let faults = server.faults();
    let mut next = options.initial;
    for round in 0..options.rounds {
        if options.faults {
            match round % 4 {
                0 => faults.fail_next(
                    FailureRule::new(500, 5)
                        .verb(Verb::Create)
                        .resource("configmaps"),
                ),
                1 => faults.fail_next(
                    FailureRule::new(500, 5)
                        .verb(Verb::Update)
                        .resource("configmaps"),
                ),
                2 => faults.drop_watches(),
                _ => {
                    faults.compact_now();
                    faults.drop_watches();
                }
            }
        }
        for _ in 0..3 {
            server
                .create(&deployment(ns, &format!("web-{next}"), 1, "nginx:1.0"))
                .map_err(|e| e.to_string())?;
            next += 1;
        }
        for i in (round..next).step_by(4) {
            let name = format!("web-{i}");
            if let Ok(mut d) = server.get::<Deployment>(Some(ns), &name) {
                if let Some(spec) = d.spec.as_mut() {
                    spec.replicas = Some(spec.replicas.unwrap_or(1) + 1);
                    if let Some(c) = spec
                        .template
                        .spec
                        .as_mut()
                        .and_then(|p| p.containers.first_mut())
                    {
                        c.image = Some(format!("nginx:1.{}", round + 1));
                    }
                }
                server.update(&d).map_err(|e| e.to_string())?;
            }
        }
        let victim = format!("web-{}", round * 2);
        if server.delete::<Deployment>(Some(ns), &victim).is_ok() {
            tracing::debug!(%victim, "deleted");
        }
        // Someone tampers with a summary: the owned ConfigMap's change brings it back.
        let tampered = summary_name(&format!("web-{}", round * 2 + 1));
        if let Ok(mut cm) = server.get::<ConfigMap>(Some(ns), &tampered) {
            cm.data = Some(BTreeMap::from([(
                "replicas".to_owned(),
                "tampered".to_owned(),
            )]));
            let _ = server.update(&cm);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Converged: the server holds the desired state and the controller has nothing left to
    // do (no key queued, waiting for a retry or being reconciled), twice in a row.
    let start = std::time::Instant::now();
    let mut settled = 0;
    let result = loop {
        let idle = queue.is_empty() && queue.waiting_len() == 0 && stats.active_workers() == 0;
        match converged(server) {
            Ok(n) if idle => {
                settled += 1;
                if settled == 2 {
                    break Ok(n);
                }
            }
            Ok(_) => settled = 0,
            Err(e) => {
                settled = 0;
                if start.elapsed() > options.limit {
                    break Err(format!("not converged after {:?}: {e}", options.limit));
                }
            }
        }
        if start.elapsed() > options.limit {
            break Err(format!(
                "the controller stayed busy for {:?}",
                options.limit
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    cancel.cancel();
    let stopped = running.await.map_err(|e| e.to_string())?;
    factory.shutdown().await;
    stopped.map_err(|e| e.to_string())?;
    result.map(|n| (n, stats))
}

/// The Lease the replicas of the example contend for, in `default`.
pub const LEASE_NAME: &str = "kinformer-example-controller";

/// The knobs of one replica under leader election.
#[derive(Debug, Clone)]
pub struct ElectionOptions {
    /// This replica's identity (unique among the replicas).
    pub identity: String,
    /// Lease duration, renew deadline, retry period (client-go's 15 s / 10 s / 2 s by default).
    pub durations: (Duration, Duration, Duration),
    /// Reconcile workers.
    pub workers: usize,
    /// Read your own writes (on unless `--no-read-your-writes`).
    pub read_your_writes: bool,
}

/// One replica of the controller with leader election on `client`'s server: syncs and queues
/// everything, reconciles only while it holds the Lease, until `cancel` (then releases the
/// lease) or until it loses the lease. Prints `<identity> leading` / `<identity> standing by
/// (leader <x>)` as that changes.
pub async fn run_elected(
    client: kube::Client,
    options: ElectionOptions,
    cancel: CancellationToken,
) -> Result<ControllerStats, Box<dyn std::error::Error + Send + Sync>> {
    let factory = SharedInformerFactory::new(client.clone());
    let deployments = factory.informer::<Deployment>();
    let configmaps = factory.informer::<ConfigMap>();
    let (lease, renew, retry) = options.durations;
    let lock = LeaseLock::new(
        client.clone(),
        "default",
        LEASE_NAME,
        options.identity.clone(),
    );
    let elector = LeaderElector::new(
        LeaderElectionConfig::new(lock)
            .durations(lease, renew, retry)
            .release_on_cancel(true)
            .name("configmap-summary"),
    )?;
    let controller = Controller::new("configmap-summary", deployments.clone())
        .owns(configmaps.clone())
        .workers(options.workers)
        .read_your_writes(options.read_your_writes)
        .leader_election(elector.clone());
    let ctx = Context {
        deployments: deployments.indexer(),
        configmaps: configmaps.indexer(),
        client: client.clone(),
        writes: controller.writes(),
    };
    let stats = controller.stats();
    factory.start();
    let mut status = elector.watch();
    let identity = options.identity.clone();
    let printer = tokio::spawn(async move {
        let mut last = None;
        loop {
            let now = status.borrow_and_update().clone();
            let line = if now.leading {
                format!("{identity} leading")
            } else {
                let leader = now.leader.as_deref().unwrap_or("none");
                format!("{identity} standing by (leader {leader})")
            };
            if last.as_ref() != Some(&line) {
                println!("{line}");
                last = Some(line);
            }
            if status.changed().await.is_err() {
                return;
            }
        }
    });
    let ctx = Arc::new(ctx);
    let result = controller
        .run(cancel, move |key| reconcile((*ctx).clone(), key))
        .await;
    printer.abort();
    factory.shutdown().await;
    result?;
    Ok(stats)
}

/// `--leader-elect --kubeconfig PATH [--identity ID] [--lease-duration S] [--renew-deadline S]
/// [--retry-period S]`, or `None` without `--leader-elect`.
fn election_args() -> Result<Option<(String, ElectionOptions)>, String> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != NO_READ_YOUR_WRITES)
        .collect();
    if !args.iter().any(|a| a == "--leader-elect") {
        return match args.first() {
            None => Ok(None),
            Some(a) => Err(format!("unknown argument {a} (see the example's docs)")),
        };
    }
    let mut kubeconfig = None;
    let mut options = ElectionOptions {
        identity: format!("controller-{}", std::process::id()),
        durations: (
            Duration::from_secs(15),
            Duration::from_secs(10),
            Duration::from_secs(2),
        ),
        workers: 4,
        read_your_writes: read_your_writes_arg(),
    };
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        if arg == "--leader-elect" {
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{arg} needs a value"))?;
        let secs = || {
            value
                .parse::<f64>()
                .ok()
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .ok_or_else(|| format!("{arg}: not a number of seconds: {value}"))
        };
        match arg.as_str() {
            "--kubeconfig" => kubeconfig = Some(value.clone()),
            "--identity" => options.identity = value.clone(),
            "--lease-duration" => options.durations.0 = secs()?,
            "--renew-deadline" => options.durations.1 = secs()?,
            "--retry-period" => options.durations.2 = secs()?,
            _ => return Err(format!("unknown argument {arg}")),
        }
    }
    let kubeconfig = kubeconfig.ok_or("--leader-elect needs --kubeconfig PATH")?;
    Ok(Some((kubeconfig, options)))
}

/// The flag that turns read-your-own-writes off.
const NO_READ_YOUR_WRITES: &str = "--no-read-your-writes";

/// Whether read-your-own-writes is on (no `--no-read-your-writes`).
fn read_your_writes_arg() -> bool {
    !std::env::args().any(|a| a == NO_READ_YOUR_WRITES)
}

/// Cancelled on Ctrl-C or SIGTERM.
fn on_signal() -> CancellationToken {
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            if let Ok(mut term) = signal(SignalKind::terminate()) {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
                c.cancel();
                return;
            }
        }
        let _ = tokio::signal::ctrl_c().await;
        c.cancel();
    });
    cancel
}

async fn main_elected(
    kubeconfig: String,
    options: ElectionOptions,
) -> Result<(), Box<dyn std::error::Error>> {
    let yaml = std::fs::read_to_string(&kubeconfig)?;
    let kc = kube::config::Kubeconfig::from_yaml(&yaml)?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?;
    config.default_retry = false;
    let client = kube::Client::try_from(config)?;
    let identity = options.identity.clone();
    let stats = run_elected(client, options, on_signal())
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "{identity} stopped: {} reconciles ({} errors retried)",
        stats.reconciles(),
        stats.errors()
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Some((kubeconfig, options)) = election_args()? {
        return main_elected(kubeconfig, options).await;
    }
    let server = kinformer_apiserver::start(Default::default()).await?;
    #[cfg(feature = "metrics")]
    let mut registry = prometheus_client::registry::Registry::default();
    #[cfg(feature = "metrics")]
    let metrics = kinformer::metrics::Metrics::new(&mut registry);
    let options = Options {
        #[cfg(feature = "metrics")]
        metrics: Some(metrics.clone()),
        read_your_writes: read_your_writes_arg(),
        ..Options::default()
    };
    let started = std::time::Instant::now();
    let (summaries, stats) = run(&server, options).await?;
    println!(
        "converged in {:.1?}: {summaries} summaries for {summaries} deployments; {} reconciles ({} ok, {} errors retried with backoff)",
        started.elapsed(),
        stats.reconciles(),
        stats.successes(),
        stats.errors()
    );
    #[cfg(feature = "metrics")]
    for line in metrics.encode(&registry).lines() {
        if !line.starts_with('#') && !line.contains("_bucket{") {
            println!("{line}");
        }
    }
    server.shutdown().await;
    Ok(())
}
