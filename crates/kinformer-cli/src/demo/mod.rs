//! `kinformer demo`: the informer machinery end to end on an embedded API server, checked.
//!
//! Seeds a realistic cluster, syncs pod/node/configmap informers (with indexes and several
//! handlers, one deliberately slow), runs churn with injected faults while printing live
//! figures, then verifies that every cache and every handler's own view equals the server's
//! exact state. Exits non-zero, naming what differed, when anything did not converge.

mod churn;
mod verify;
mod view;

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kinformer::{IndexFunc, SharedInformerFactory};
use kinformer_apiserver::{RunningServer, ServerConfig};
use tokio_util::sync::CancellationToken;

use crate::error::{CliError, with_causes};
use churn::{ChurnStats, Workload};
use view::{Tracked, count_watch_errors};

/// Arguments of `kinformer demo`.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// Pods to seed.
    #[arg(long, default_value_t = 5000)]
    pub pods: usize,
    /// Nodes to seed.
    #[arg(long, default_value_t = 50)]
    pub nodes: usize,
    /// Namespaces to spread pods and config maps over.
    #[arg(long, default_value_t = 10)]
    pub namespaces: usize,
    /// Seconds of churn (with faults).
    #[arg(long, default_value_t = 12)]
    pub duration: u64,
    /// Churn operations per second.
    #[arg(long, default_value_t = 400)]
    pub rate: u32,
    /// Microseconds the slow handler sleeps per event.
    #[arg(long, default_value_t = 100)]
    pub slow_handler_us: u64,
}

const BY_NODE: &str = "by-node";
const BY_APP: &str = "by-app";

/// Runs the demo.
pub async fn run(args: DemoArgs) -> Result<(), CliError> {
    let t0 = Instant::now();
    let server = kinformer_apiserver::start(ServerConfig::default().record_requests(true))
        .await
        .map_err(|e| CliError::Embedded(with_causes(&e)))?;
    let server = Arc::new(server);
    println!("embedded API server at {}", server.base_url());
    let work = seed(&server, &args)?;
    println!(
        "seeded {} pods on {} nodes in {} namespaces, {} config maps ({} ms)",
        args.pods,
        work.nodes.len(),
        work.namespaces.len(),
        work.configmaps.len(),
        t0.elapsed().as_millis()
    );

    let errors: [Arc<AtomicU64>; 3] = Default::default();
    let factory = SharedInformerFactory::builder(server.client())
        .for_type::<Pod>(count_watch_errors(errors[0].clone()))
        .for_type::<Node>(count_watch_errors(errors[1].clone()))
        .for_type::<ConfigMap>(count_watch_errors(errors[2].clone()))
        .build();
    let pods = factory.informer::<Pod>();
    pods.add_indexers(pod_indexers())?;
    let slow = Some(Duration::from_micros(args.slow_handler_us));
    let [pod_errors, node_errors, cm_errors] = errors;
    let tracked = vec![
        Tracked::new(
            "pods",
            &pods,
            pod_errors,
            &[("mirror", None), ("slow-audit", slow)],
        )?,
        Tracked::new(
            "nodes",
            &factory.informer::<Node>(),
            node_errors,
            &[("mirror", None)],
        )?,
        Tracked::new(
            "configmaps",
            &factory.informer::<ConfigMap>(),
            cm_errors,
            &[("mirror", None)],
        )?,
    ];
    // The informers' own metrics (kinformer's `metrics` feature), printed with the summary.
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = kinformer::metrics::Metrics::new(&mut registry);
    metrics.watch_informer(&pods);
    metrics.watch_informer(&factory.informer::<Node>());
    metrics.watch_informer(&factory.informer::<ConfigMap>());
    factory.start();
    sync_progress(&server, &tracked).await?;

    // Churn with faults, live figures once a second.
    let stats = Arc::new(ChurnStats::default());
    let cancel = CancellationToken::new();
    let duration = Duration::from_secs(args.duration);
    println!(
        "churn for {}s at ~{} ops/s with faults at 25%/50%/75%",
        args.duration, args.rate
    );
    let churn = tokio::spawn(churn::run(
        server.clone(),
        work,
        args.rate,
        duration,
        stats.clone(),
        cancel.clone(),
    ));
    let churn_start = Instant::now();
    let mut last_events = total_events(&tracked);
    let mut shown_faults = 0;
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    ticker.tick().await;
    while !churn.is_finished() {
        ticker.tick().await;
        let faults = stats.faults.lock().clone();
        for f in &faults[shown_faults..] {
            println!("  fault  {f}");
        }
        shown_faults = faults.len();
        let events = total_events(&tracked);
        println!(
            "  {:>3}s  {}",
            churn_start.elapsed().as_secs(),
            figures(&tracked, events - last_events, relists(&tracked))
        );
        last_events = events;
    }
    let _ = churn.await;
    let churn_secs = churn_start.elapsed().as_secs_f64();
    for f in &stats.faults.lock()[shown_faults..] {
        println!("  fault  {f}");
    }

    // Convergence: every backlog drains, every cache and view equals the server.
    server.faults().clear();
    let converge_start = Instant::now();
    let outcome = converge(&server, &tracked, Duration::from_secs(30)).await;
    let converge_ms = converge_start.elapsed().as_millis();

    // Summary.
    let indexer = pods.indexer();
    let node0 = "node-000";
    let on_node = indexer
        .by_index(BY_NODE, node0)
        .map(|l| l.len())
        .unwrap_or(0);
    let app = "app-7";
    let of_app = indexer.by_index(BY_APP, app).map(|l| l.len()).unwrap_or(0);
    let (truth_node, truth_app) = index_truth(&server, node0, app);
    let (c, u, d, r) = (
        stats.creates.load(Ordering::Relaxed),
        stats.updates.load(Ordering::Relaxed),
        stats.deletes.load(Ordering::Relaxed),
        stats.refused.load(Ordering::Relaxed),
    );
    let events = total_events(&tracked);
    println!("summary");
    println!("  churn: {c} creates, {u} updates, {d} deletes ({r} refused) in {churn_secs:.1}s");
    println!(
        "  handler events delivered: {events} ({:.0}/s over the run)",
        events as f64 / t0.elapsed().as_secs_f64()
    );
    println!(
        "  relists: {} ({}), watch errors: {}",
        relists(&tracked),
        tracked
            .iter()
            .map(|t| format!("{} {}", t.resource, t.relists()))
            .collect::<Vec<_>>()
            .join(", "),
        tracked
            .iter()
            .map(|t| t.watch_errors.load(Ordering::Relaxed))
            .sum::<u64>()
    );
    for t in &tracked {
        println!("  cache {:<10} {:>6} objects", t.resource, (t.len)());
    }
    println!("  index {BY_NODE}={node0}: {on_node} pods (server: {truth_node})");
    println!("  index {BY_APP}={app}: {of_app} pods (server: {truth_app})");
    println!(
        "  converged {converge_ms} ms after churn; total {:.1}s",
        t0.elapsed().as_secs_f64()
    );
    println!("metrics (a Prometheus scrape of the informers, as /metrics would serve it)");
    for line in metrics
        .encode(&registry)
        .lines()
        .filter(|l| l.starts_with("informer_"))
    {
        println!("  {line}");
    }
    factory.shutdown().await;
    let mut problems = outcome.err().unwrap_or_default();
    if on_node != truth_node || of_app != truth_app {
        problems.push(format!(
            "index answers differ from the server: {on_node}/{truth_node} on {node0}, {of_app}/{truth_app} of {app}"
        ));
    }
    if let Ok(server) = Arc::try_unwrap(server) {
        server.shutdown().await;
    }
    if problems.is_empty() {
        println!("OK: every cache and every handler's view equals the server's state");
        Ok(())
    } else {
        Err(CliError::NotConverged(problems.join("\n")))
    }
}

fn pod_indexers() -> kinformer::Indexers<Pod> {
    let by_node: IndexFunc<Pod> = Arc::new(|p: &Pod| {
        Ok(p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect())
    });
    let by_app: IndexFunc<Pod> = Arc::new(|p: &Pod| {
        Ok(p.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app").cloned())
            .into_iter()
            .collect())
    });
    HashMap::from([(BY_NODE.to_string(), by_node), (BY_APP.to_string(), by_app)])
}

fn seed(server: &RunningServer, args: &DemoArgs) -> Result<Workload, CliError> {
    let err = |e: kinformer_apiserver::ApiError| CliError::Embedded(format!("seeding: {e}"));
    let namespaces = kinformer_apiserver::seed::namespace_names(args.namespaces.max(2));
    for ns in &namespaces {
        server
            .create_value("namespaces", None, kinformer_apiserver::seed::namespace(ns))
            .map_err(err)?;
    }
    let nodes: Vec<String> = (0..args.nodes.max(1))
        .map(|i| format!("node-{i:03}"))
        .collect();
    for n in &nodes {
        server
            .create_value("nodes", None, kinformer_apiserver::seed::node(n))
            .map_err(err)?;
    }
    let mut pods = Vec::with_capacity(args.pods);
    let values = (0..args.pods).map(|i| {
        let ns = &namespaces[i % namespaces.len()];
        let name = format!("pod-{i:06}");
        let mut v = kinformer_apiserver::seed::pod(ns, &name, i);
        v["spec"]["nodeName"] = serde_json::Value::String(nodes[i % nodes.len()].clone());
        pods.push((ns.clone(), name));
        v
    });
    server
        .seed("pods", values.collect::<Vec<_>>())
        .map_err(err)?;
    let mut configmaps = Vec::new();
    for ns in &namespaces {
        for j in 0..5 {
            let name = format!("config-{j}");
            server
                .create_value(
                    "configmaps",
                    Some(ns),
                    kinformer_apiserver::seed::configmap(ns, &name, 8),
                )
                .map_err(err)?;
            configmaps.push((ns.clone(), name));
        }
    }
    Ok(Workload {
        pods,
        configmaps,
        nodes,
        namespaces,
    })
}

/// Shows the initial sync: a progress bar per informer on a terminal, plain lines otherwise.
async fn sync_progress(server: &RunningServer, tracked: &[Tracked]) -> Result<(), CliError> {
    let start = Instant::now();
    let bars_visible = std::io::stderr().is_terminal();
    let mp = MultiProgress::with_draw_target(if bars_visible {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let style = ProgressStyle::with_template("{prefix:>11} [{bar:40}] {pos:>6}/{len:6} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    let bars: Vec<ProgressBar> = tracked
        .iter()
        .map(|t| {
            let len = verify::truth(server, t.resource).len() as u64;
            let bar = mp.add(ProgressBar::new(len));
            bar.set_style(style.clone());
            bar.set_prefix(t.resource);
            bar
        })
        .collect();
    let mut done = vec![false; tracked.len()];
    while done.iter().any(|d| !d) {
        if start.elapsed() > Duration::from_secs(120) {
            return Err(CliError::NotConverged(
                "the initial sync did not finish within 120 s".into(),
            ));
        }
        for (i, t) in tracked.iter().enumerate() {
            if done[i] {
                continue;
            }
            bars[i].set_position((t.len)() as u64);
            if (t.synced)() {
                done[i] = true;
                let ms = start.elapsed().as_millis();
                bars[i].finish_with_message(format!("synced in {ms} ms"));
                if !bars_visible {
                    println!(
                        "synced {:<10} {:>6} objects in {ms} ms",
                        t.resource,
                        (t.len)()
                    );
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

fn total_events(tracked: &[Tracked]) -> u64 {
    tracked
        .iter()
        .flat_map(|t| t.handlers.iter())
        .map(|h| h.view.events())
        .sum()
}

/// Relists of every tracked informer (its own count: a streaming list is a watch request to
/// the server, so the server's LIST count would miss it).
fn relists(tracked: &[Tracked]) -> u64 {
    tracked.iter().map(Tracked::relists).sum()
}

fn figures(tracked: &[Tracked], events: u64, relists: u64) -> String {
    let sizes: Vec<String> = tracked
        .iter()
        .map(|t| format!("{} {}", t.resource, (t.len)()))
        .collect();
    // A handler's backlog, and how long its oldest notification has waited.
    let backlogs: Vec<String> = tracked
        .iter()
        .flat_map(|t| t.handlers.iter())
        .map(|h| {
            let oldest = h.reg.oldest_pending_age().unwrap_or_default();
            format!(
                "{} {} ({:.1}s)",
                h.view.name,
                h.reg.backlog(),
                oldest.as_secs_f64()
            )
        })
        .collect();
    // The longest any informer's watch has been silent (no event, no bookmark).
    let quiet = tracked
        .iter()
        .filter_map(|t| (t.quiet)())
        .max()
        .unwrap_or_default();
    format!(
        "events/s {events:>6} | cache {} | backlog (oldest) {} | watch quiet {:.1}s | relists {relists}",
        sizes.join(", "),
        backlogs.join(", "),
        quiet.as_secs_f64()
    )
}

/// Waits until every backlog is 0 and every cache and handler view equals the server's state;
/// on timeout returns what still differs.
async fn converge(
    server: &RunningServer,
    tracked: &[Tracked],
    timeout: Duration,
) -> Result<(), Vec<String>> {
    let start = Instant::now();
    loop {
        let mut problems = Vec::new();
        for t in tracked {
            let truth = verify::truth(server, t.resource);
            if let Some(d) = verify::diff(&format!("cache {}", t.resource), &truth, &(t.cache)()) {
                problems.push(d);
            }
            for h in &t.handlers {
                let backlog = h.reg.backlog();
                if backlog > 0 {
                    problems.push(format!("handler {}: backlog {backlog}", h.view.name));
                }
                if let Some(d) = verify::diff(
                    &format!("handler {}", h.view.name),
                    &truth,
                    &h.view.snapshot(),
                ) {
                    problems.push(d);
                }
            }
        }
        if problems.is_empty() {
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(problems);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Pods on `node` and pods of `app` according to the server's state.
fn index_truth(server: &RunningServer, node: &str, app: &str) -> (usize, usize) {
    let Ok(state) = server.state("pods", None) else {
        return (0, 0);
    };
    let on_node = state
        .objects
        .iter()
        .filter(|o| o.object["spec"]["nodeName"].as_str() == Some(node))
        .count();
    let of_app = state
        .objects
        .iter()
        .filter(|o| o.object["metadata"]["labels"]["app"].as_str() == Some(app))
        .count();
    (on_node, of_app)
}
