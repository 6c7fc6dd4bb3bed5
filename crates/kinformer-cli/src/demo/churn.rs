//! The demo's workload: creates, updates and deletes through the server-side API, with faults
//! injected at fixed points of the run.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kinformer_apiserver::{FailureRule, RunningServer};
use rand::Rng;
use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio_util::sync::CancellationToken;

/// What the churn did (read live by the reporter).
#[derive(Debug, Default)]
pub struct ChurnStats {
    /// Objects created.
    pub creates: AtomicU64,
    /// Objects updated.
    pub updates: AtomicU64,
    /// Objects deleted.
    pub deletes: AtomicU64,
    /// Writes the server refused (e.g. a conflict); they change nothing.
    pub refused: AtomicU64,
    /// Faults injected, in order, with the second they happened at.
    pub faults: parking_lot::Mutex<Vec<String>>,
}

/// The objects the churn may touch.
pub struct Workload {
    /// Live pods as (namespace, name).
    pub pods: Vec<(String, String)>,
    /// Config maps as (namespace, name).
    pub configmaps: Vec<(String, String)>,
    /// Node names.
    pub nodes: Vec<String>,
    /// Namespaces for new pods.
    pub namespaces: Vec<String>,
}

/// Runs churn at about `rate` operations per second for `duration`, injecting faults at
/// 25 % (dropped watches), 50 % (a stalled watch while history is compacted: a 410 and a
/// relist for every informer) and 75 % (the same, after two 429s for the next pod requests).
/// Stops early on `cancel`.
pub async fn run(
    server: Arc<RunningServer>,
    mut work: Workload,
    rate: u32,
    duration: Duration,
    stats: Arc<ChurnStats>,
    cancel: CancellationToken,
) {
    let tick = Duration::from_millis(20);
    let per_tick = (f64::from(rate) * tick.as_secs_f64()).max(1.0);
    let mut budget = 0.0f64;
    let mut rng = StdRng::seed_from_u64(42);
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let start = tokio::time::Instant::now();
    let mut next_fault = 0usize;
    let fault_at = [duration / 4, duration / 2, duration * 3 / 4];
    let mut created = 0usize;
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = cancel.cancelled() => return,
        }
        let elapsed = start.elapsed();
        if elapsed >= duration {
            return;
        }
        if next_fault < fault_at.len() && elapsed >= fault_at[next_fault] {
            inject(&server, next_fault, elapsed, &stats, || {
                one_op(&server, &mut work, &mut rng, &mut created, &stats);
            })
            .await;
            next_fault += 1;
        }
        budget += per_tick;
        while budget >= 1.0 {
            budget -= 1.0;
            one_op(&server, &mut work, &mut rng, &mut created, &stats);
        }
    }
}

/// Writes made while watches are held back, before history is compacted past them.
const WRITES_WHILE_STALLED: usize = 20;
/// How long watches are held back before those writes.
const STALL_SETTLE: Duration = Duration::from_millis(100);

async fn inject(
    server: &RunningServer,
    which: usize,
    at: Duration,
    stats: &ChurnStats,
    mut write: impl FnMut(),
) {
    let faults = server.faults();
    // A 410 needs a client behind the compaction: with watches held back, the churn writes on,
    // history is compacted past what every informer has seen, and the watches are dropped. An
    // informer that re-watches from its last resourceVersion is told 410 Gone and relists (as
    // a client cut off by a network partition while etcd compacts). Compacting alone would
    // not do it: an informer that has seen the newest write re-watches from it without a 410.
    let stall = which > 0;
    if stall {
        faults.pause_watches();
        // Every watch stream finishes what it was sending and parks.
        tokio::time::sleep(STALL_SETTLE).await;
        for _ in 0..WRITES_WHILE_STALLED {
            write();
        }
    }
    let what = match which {
        0 => {
            faults.drop_watches();
            "dropped every watch"
        }
        1 => "watches stalled while history was compacted, then dropped (410 Gone → relist)",
        _ => {
            // Any verb: whether the relist is a streaming list (a watch) or a LIST, the pod
            // informer's next two requests are refused.
            faults.fail_next(FailureRule::new(429, 2).resource("pods").retry_after(1));
            "next 2 pod requests answer 429, then the same stall and compaction"
        }
    };
    if stall {
        faults.compact_now();
        faults.drop_watches();
        faults.resume_watches();
    }
    stats
        .faults
        .lock()
        .push(format!("{:>4.1}s {what}", at.as_secs_f64()));
}

fn one_op(
    server: &RunningServer,
    work: &mut Workload,
    rng: &mut StdRng,
    created: &mut usize,
    stats: &ChurnStats,
) {
    let roll = rng.random_range(0..100u32);
    let ok = match roll {
        0..30 => create_pod(server, work, rng, created),
        30..70 => update_pod(server, work, rng),
        70..90 => delete_pod(server, work, rng),
        90..97 => update_configmap(server, work, rng),
        _ => update_node(server, work, rng),
    };
    match ok {
        Some(Op::Create) => stats.creates.fetch_add(1, Ordering::Relaxed),
        Some(Op::Update) => stats.updates.fetch_add(1, Ordering::Relaxed),
        Some(Op::Delete) => stats.deletes.fetch_add(1, Ordering::Relaxed),
        None => stats.refused.fetch_add(1, Ordering::Relaxed),
    };
}

enum Op {
    Create,
    Update,
    Delete,
}

fn create_pod(
    server: &RunningServer,
    work: &mut Workload,
    rng: &mut StdRng,
    created: &mut usize,
) -> Option<Op> {
    let ns = work.namespaces[rng.random_range(0..work.namespaces.len())].clone();
    let name = format!("churn-{:06}", *created);
    let i = rng.random_range(0..1_000_000usize);
    *created += 1;
    let mut pod = kinformer_apiserver::seed::pod(&ns, &name, i);
    if let Some(node) = work.nodes.get(i % work.nodes.len().max(1)) {
        pod["spec"]["nodeName"] = serde_json::Value::String(node.clone());
    }
    server.create_value("pods", Some(&ns), pod).ok()?;
    work.pods.push((ns, name));
    Some(Op::Create)
}

fn update_pod(server: &RunningServer, work: &mut Workload, rng: &mut StdRng) -> Option<Op> {
    if work.pods.is_empty() {
        return None;
    }
    let (ns, name) = &work.pods[rng.random_range(0..work.pods.len())];
    let mut pod: Pod = server.get(Some(ns), name).ok()?;
    let labels = pod.metadata.labels.get_or_insert_with(Default::default);
    let generation = labels
        .get("churn")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    labels.insert("churn".into(), (generation + 1).to_string());
    server.update(&pod).ok()?;
    Some(Op::Update)
}

fn delete_pod(server: &RunningServer, work: &mut Workload, rng: &mut StdRng) -> Option<Op> {
    if work.pods.is_empty() {
        return None;
    }
    let (ns, name) = work.pods.swap_remove(rng.random_range(0..work.pods.len()));
    server.delete::<Pod>(Some(&ns), &name).ok()?;
    Some(Op::Delete)
}

fn update_configmap(server: &RunningServer, work: &Workload, rng: &mut StdRng) -> Option<Op> {
    if work.configmaps.is_empty() {
        return None;
    }
    let (ns, name) = &work.configmaps[rng.random_range(0..work.configmaps.len())];
    let mut cm: ConfigMap = server.get(Some(ns), name).ok()?;
    cm.data
        .get_or_insert_with(Default::default)
        .insert("touched".into(), rng.random::<u32>().to_string());
    server.update(&cm).ok()?;
    Some(Op::Update)
}

fn update_node(server: &RunningServer, work: &Workload, rng: &mut StdRng) -> Option<Op> {
    if work.nodes.is_empty() {
        return None;
    }
    let name = &work.nodes[rng.random_range(0..work.nodes.len())];
    let mut node: Node = server.get(None, name).ok()?;
    node.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(
            "kinformer.demo/heartbeat".into(),
            jiff::Timestamp::now().to_string(),
        );
    server.update(&node).ok()?;
    Some(Op::Update)
}
