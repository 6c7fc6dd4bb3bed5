//! `kinformer-bench replica`: one replica of a controller of pods, built as the README builds
//! one (a `SharedInformerFactory`, `informer::<Pod>()`, the controller runner), for the fleet
//! benchmark ([`crate::fleet`]). Its reconcile only counts. It prints one JSON [`Event`] per
//! line on stdout as it goes.
//!
//! * With a lease and warm standby: the runner's leader election (informers sync on every
//!   replica, only the leader reconciles).
//! * With a lease and cold standby: a leader elector alone; the factory, the informer and the
//!   controller start once it leads (client-go's `OnStartedLeading` pattern).
//! * With a shard: shard i of n by uid; the reconciled keys are written to a file once drained.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kinformer::controller::{Action, Controller};
use kinformer::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock};
use kinformer::shard::{Shard, ShardKey};
use kinformer::{InformerConfig, SharedIndexInformer, SharedInformerFactory};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// What a replica reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Cold standby: the elector runs, nothing is cached.
    Standby,
    /// The informer's cache has synced.
    Synced,
    /// This replica holds the lease.
    Leading,
    /// The first reconcile started.
    FirstReconcile,
    /// Every cached object was reconciled and the queue is empty.
    Drained,
}

/// One line of a replica's output.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// When (Unix time, ns).
    pub t_ns: u128,
    /// Objects cached ([`EventKind::Drained`]).
    #[serde(default)]
    pub cached: u64,
    /// Reconciles run ([`EventKind::Drained`]).
    #[serde(default)]
    pub reconciles: u64,
    /// RSS, KiB ([`EventKind::Drained`]).
    #[serde(default)]
    pub rss_kib: u64,
    /// Whether the server applied the shard selector ([`EventKind::Drained`]).
    #[serde(default)]
    pub server_filtered: bool,
}

fn emit(kind: EventKind) {
    emit_event(Event {
        kind,
        t_ns: crate::control::now_nanos(),
        cached: 0,
        reconciles: 0,
        rss_kib: 0,
        server_filtered: false,
    });
}

fn emit_event(event: Event) {
    if let Ok(line) = serde_json::to_string(&event) {
        println!("{line}");
    }
}

/// A replica's command line.
#[derive(Debug, Clone)]
pub struct ReplicaArgs {
    /// Kubeconfig to connect with.
    pub kubeconfig: PathBuf,
    /// Lease to elect a leader on (in `default`); none: no election.
    pub lease: Option<String>,
    /// Identity in the lease.
    pub identity: String,
    /// Warm standby (informers sync before leading) or cold.
    pub warm: bool,
    /// Shard `(i, n, keys file)`.
    pub shard: Option<(u32, u32, PathBuf)>,
}

impl ReplicaArgs {
    /// The arguments of `kinformer-bench replica` after the subcommand.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--kubeconfig".to_string(),
            self.kubeconfig.display().to_string(),
            "--identity".to_string(),
            self.identity.clone(),
        ];
        if let Some(lease) = &self.lease {
            args.extend(["--lease".to_string(), lease.clone()]);
        }
        if !self.warm {
            args.push("--cold".to_string());
        }
        if let Some((i, n, keys)) = &self.shard {
            args.extend([
                "--shard".to_string(),
                format!("{i}/{n}"),
                "--keys".to_string(),
                keys.display().to_string(),
            ]);
        }
        args
    }
}

/// What the reconciles have seen.
#[derive(Default)]
struct Tally {
    reconciles: AtomicU64,
    first: AtomicBool,
    keys: Mutex<HashSet<String>>,
}

impl Tally {
    fn reconciled(&self, key: String) {
        if !self.first.swap(true, Ordering::SeqCst) {
            emit(EventKind::FirstReconcile);
        }
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        self.keys.lock().insert(key);
    }
}

/// Reports [`EventKind::Drained`] once every cached key was reconciled and the queue is empty,
/// and writes the keys to `keys` when set.
async fn watch_drain(
    informer: SharedIndexInformer<Pod>,
    depth: impl Fn() -> usize,
    tally: Arc<Tally>,
    keys: Option<PathBuf>,
    server_filtered: bool,
) {
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let cached = informer.indexer().list_keys().len();
        let done = tally.keys.lock().len();
        if informer.has_synced() && cached > 0 && done >= cached && depth() == 0 {
            if let Some(path) = &keys {
                let text: String = tally.keys.lock().iter().map(|k| format!("{k}\n")).collect();
                if let Err(e) = std::fs::write(path, text) {
                    eprintln!("replica: cannot write {}: {e}", path.display());
                }
            }
            emit_event(Event {
                kind: EventKind::Drained,
                t_ns: crate::control::now_nanos(),
                cached: cached as u64,
                reconciles: tally.reconciles.load(Ordering::Relaxed),
                rss_kib: crate::rss::current_kib(),
                server_filtered,
            });
            return;
        }
    }
}

/// Connects, builds the factory (sharded when asked) and the controller, and runs until
/// killed.
///
/// # Errors
/// A message when the client, the configuration or the controller fails.
pub async fn run(args: ReplicaArgs) -> Result<(), String> {
    let client = crate::kubeconfig::client(&args.kubeconfig)
        .await
        .map_err(|e| e.to_string())?;
    let tally = Arc::new(Tally::default());
    let cancel = CancellationToken::new();
    let elector = match &args.lease {
        Some(lease) => {
            let lock = LeaseLock::new(client.clone(), "default", lease, &args.identity);
            Some(LeaderElector::new(LeaderElectionConfig::new(lock)).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    if let Some(elector) = &elector {
        let mut status = elector.watch();
        tokio::spawn(async move {
            while status.changed().await.is_ok() {
                if status.borrow().leading {
                    emit(EventKind::Leading);
                    return;
                }
            }
        });
    }
    match (elector, args.warm) {
        (Some(elector), false) => {
            emit(EventKind::Standby);
            let (client, tally) = (client.clone(), tally.clone());
            let callbacks = LeaderCallbacks::new().on_started_leading(move |token| {
                let (client, tally) = (client.clone(), tally.clone());
                async move {
                    if let Err(e) = controller(client, None, tally, None, token).await {
                        eprintln!("replica: {e}");
                    }
                }
            });
            elector
                .run(cancel, callbacks)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        (elector, _) => controller(client, elector, tally, args.shard, cancel).await,
    }
}

/// The factory, its pod informer and the controller; reports sync and drain.
async fn controller(
    client: kube::Client,
    elector: Option<LeaderElector>,
    tally: Arc<Tally>,
    shard: Option<(u32, u32, PathBuf)>,
    cancel: CancellationToken,
) -> Result<(), String> {
    let mut config = InformerConfig::default();
    let mut keys = None;
    let mut selector = None;
    if let Some((i, n, path)) = shard {
        let shard = Shard::nth(ShardKey::Uid, i, n).map_err(|e| e.to_string())?;
        selector = Some(shard.selector());
        config = config.shard(shard);
        keys = Some(path);
    }
    let factory = SharedInformerFactory::builder(client.clone())
        .defaults(config)
        .build();
    let informer = factory.informer::<Pod>();
    let mut controller = Controller::new("fleet", informer.clone()).workers(2);
    if let Some(elector) = elector {
        controller = controller.leader_election(elector);
    }
    let queue = controller.queue().clone();
    factory.start();
    let synced = informer.synced_signal();
    tokio::spawn(async move {
        synced.wait().await;
        emit(EventKind::Synced);
    });
    let server_filtered = match &selector {
        Some(selector) => server_applies(&client, selector).await,
        None => false,
    };
    tokio::spawn(watch_drain(
        informer,
        move || queue.len(),
        tally.clone(),
        keys,
        server_filtered,
    ));
    let result = controller
        .run(cancel, move |key| {
            let tally = tally.clone();
            async move {
                tally.reconciled(key);
                Ok::<_, std::convert::Infallible>(Action::await_change())
            }
        })
        .await
        .map_err(|e| e.to_string());
    factory.shutdown().await;
    result
}

/// Whether the server applies `selector`: a one-item list with it echoes `shardInfo` in its
/// metadata (KEP-5866); a server without the gate ignores the selector and echoes nothing.
async fn server_applies(client: &kube::Client, selector: &str) -> bool {
    let options = kinformer::reflector::ListOptions {
        limit: Some(1),
        shard_selector: Some(selector.to_string()),
        ..Default::default()
    };
    let uri = format!("/api/v1/pods?{}", options.to_query(false));
    let Ok(request) = http::Request::get(uri).body(Vec::new()) else {
        return false;
    };
    match client.request_text(request).await {
        Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.pointer("/metadata/shardInfo").cloned())
            .is_some(),
        Err(e) => {
            eprintln!("replica: checking the shard selector: {e}");
            false
        }
    }
}
