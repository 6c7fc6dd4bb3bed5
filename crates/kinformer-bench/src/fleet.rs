//! `kinformer-bench fleet`: a controller run as several replicas, each replica its own process
//! (`kinformer-bench replica`, [`crate::replica`]) so its memory is its own.
//!
//! * **Failover** — two replicas elect a leader on a Lease (client-go's defaults: 15 s lease,
//!   10 s renew deadline, 2 s retry period). Replica A leads and reconciles every pod; replica
//!   B stands by, then A is killed (`SIGKILL`, so the lease is not released, as in a crash or a
//!   lost node). Measured: from the kill to B's first reconcile, split into the wait for the
//!   lease (B acquires it once it has seen the record unchanged for a lease duration) and the
//!   time from acquiring it to the first reconcile. With warm standby B's informers have
//!   synced before it leads (the runner's leader election); cold, B lists only once it leads
//!   (client-go's `OnStartedLeading` starting the informers, as most controllers do).
//! * **Shards** — n replicas, replica i watching shard i of n by uid (KEP-5866's
//!   `shardSelector`; on a server without the gate the client filters), each reconciling its
//!   pods once. Measured: each replica's RSS once its queue is drained, its cached objects and
//!   reconciles, and that every pod was reconciled by exactly one replica.
//!
//! Rounds of the two failover modes are interleaved; medians are reported.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::ReportError;
pub use crate::fleet_md::{FailoverRound, FleetResults, ShardCheck, ShardReplica};
use crate::process::start_server;
use crate::replica::{Event, EventKind, ReplicaArgs};
use crate::result::Tier;

/// What to run.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// Which servers.
    pub tiers: Vec<Tier>,
    /// Pods on the server.
    pub sizes: Vec<u64>,
    /// Failover rounds per mode and size.
    pub rounds: usize,
    /// Shard counts.
    pub shards: Vec<u32>,
    /// Timeout of each wait.
    pub timeout: Duration,
    /// Where to write `fleet.md` and `fleet.json`.
    pub out_dir: PathBuf,
}

/// A replica child process, killed on drop, its stdout events read by a thread.
struct Replica {
    child: Child,
    events: mpsc::Receiver<Event>,
    /// Events received and not yet waited for (they can arrive in any order across tasks).
    seen: Vec<Event>,
    name: String,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Replica {
    fn spawn(exe: &Path, name: &str, args: &ReplicaArgs) -> Result<Self, ReportError> {
        let mut child = Command::new(exe)
            .arg("replica")
            .args(args.to_args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| ReportError::Io(format!("spawn replica {name}"), e))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| ReportError::Replica(format!("{name} has no stdout")))?;
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str::<Event>(&line)
                    && tx.send(event).is_err()
                {
                    return;
                }
            }
        });
        Ok(Self {
            child,
            events,
            seen: Vec::new(),
            name: name.to_string(),
        })
    }

    /// The first event of `kind`, received already or within `timeout`.
    fn wait_for(&mut self, kind: EventKind, timeout: Duration) -> Result<Event, ReportError> {
        if let Some(at) = self.seen.iter().position(|e| e.kind == kind) {
            return Ok(self.seen.remove(at));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(e) if e.kind == kind => return Ok(e),
                Ok(e) => self.seen.push(e),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(ReportError::Replica(format!(
                        "{}: no {kind:?} within {timeout:?}",
                        self.name
                    )));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(ReportError::Replica(format!(
                        "{} exited before {kind:?}",
                        self.name
                    )));
                }
            }
        }
    }

    fn kill(&mut self) -> u128 {
        let _ = self.child.kill();
        let t = crate::control::now_nanos();
        let _ = self.child.wait();
        t
    }
}

/// The server of one tier, seeded with `n` pods, and a kubeconfig to reach it.
pub(crate) struct Server {
    pub(crate) kubeconfig: PathBuf,
    _embedded: Option<crate::process::ServerProcess>,
    _harness: Option<crate::real::Harness>,
}

pub(crate) fn start_tier(
    exe: &Path,
    tier: Tier,
    n: u64,
    out: &Path,
    rt: &tokio::runtime::Runtime,
) -> Result<Server, ReportError> {
    match tier {
        Tier::Embedded => {
            let server = start_server(exe, n)?;
            let kc = out.join("kubeconfig-fleet-embedded");
            crate::kubeconfig::write_plain(&kc, &server.url)?;
            Ok(Server {
                kubeconfig: kc,
                _embedded: Some(server),
                _harness: None,
            })
        }
        Tier::Real => {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(format!("../../target/bench-e2e/fleet-{n}"));
            let harness = crate::real::Harness::start(&dir, true)?;
            let client = rt.block_on(crate::kubeconfig::client(&harness.kubeconfig))?;
            rt.block_on(crate::real::seed(&client, n))?;
            Ok(Server {
                kubeconfig: harness.kubeconfig.clone(),
                _embedded: None,
                _harness: Some(harness),
            })
        }
    }
}

/// What a benchmark run needs first: this executable (it runs the servers and replicas), the
/// output directory (created, canonical) and a tokio runtime.
pub(crate) fn prepare(
    out_dir: &Path,
) -> Result<(PathBuf, PathBuf, tokio::runtime::Runtime), ReportError> {
    let exe = std::env::current_exe().map_err(|e| ReportError::Io("current_exe".into(), e))?;
    std::fs::create_dir_all(out_dir).map_err(|e| ReportError::Io("create out dir".into(), e))?;
    let out = out_dir
        .canonicalize()
        .map_err(|e| ReportError::Io("out dir".into(), e))?;
    let rt =
        tokio::runtime::Runtime::new().map_err(|e| ReportError::Io("tokio runtime".into(), e))?;
    Ok((exe, out, rt))
}

fn secs(from: u128, to: u128) -> f64 {
    to.saturating_sub(from) as f64 / 1e9
}

/// One failover round: A leads and drains, B stands by (warm: synced; cold: electing), A is
/// killed, B's lease, first reconcile and drain are timed from the kill.
fn failover_round(
    exe: &Path,
    kubeconfig: &Path,
    (tier, n, warm, round): (Tier, u64, bool, usize),
    timeout: Duration,
) -> Result<FailoverRound, ReportError> {
    let mode = if warm { "warm" } else { "cold" };
    let lease = format!("fleet-{mode}-{n}-{round}");
    let args = |id: &str| ReplicaArgs {
        kubeconfig: kubeconfig.to_path_buf(),
        lease: Some(lease.clone()),
        identity: id.to_string(),
        warm,
        shard: None,
    };
    let mut a = Replica::spawn(exe, "a", &args("replica-a"))?;
    a.wait_for(EventKind::Leading, timeout)?;
    a.wait_for(EventKind::Drained, timeout)?;
    let mut b = Replica::spawn(exe, "b", &args("replica-b"))?;
    b.wait_for(
        if warm {
            EventKind::Synced
        } else {
            EventKind::Standby
        },
        timeout,
    )?;
    // Let B observe the lease record at least once more (one retry period and a half), so the
    // lease wait below is the lease's expiry as a running standby sees it.
    std::thread::sleep(Duration::from_secs(3));
    let killed = a.kill();
    let leading = b.wait_for(EventKind::Leading, timeout)?;
    let first = b.wait_for(EventKind::FirstReconcile, timeout)?;
    let drained = b.wait_for(EventKind::Drained, timeout).ok();
    Ok(FailoverRound {
        tier,
        n,
        mode,
        lease_wait_s: secs(killed, leading.t_ns),
        start_s: secs(leading.t_ns, first.t_ns),
        failover_s: secs(killed, first.t_ns),
        all_reconciled_s: drained.map(|d| secs(killed, d.t_ns)),
    })
}

/// n replicas on shards 0..n of n; waits until each has drained its queue.
fn shard_run(
    exe: &Path,
    kubeconfig: &Path,
    (tier, n, shards): (Tier, u64, u32),
    out: &Path,
    timeout: Duration,
    results: &mut FleetResults,
) -> Result<(), ReportError> {
    let mut replicas = Vec::new();
    for i in 0..shards {
        let keys = out.join(format!("fleet-keys-{}-{n}-{shards}-{i}.txt", tier.as_str()));
        let args = ReplicaArgs {
            kubeconfig: kubeconfig.to_path_buf(),
            lease: None,
            identity: format!("shard-{i}"),
            warm: true,
            shard: Some((i, shards, keys.clone())),
        };
        replicas.push((Replica::spawn(exe, &format!("shard-{i}"), &args)?, keys));
    }
    let mut seen: HashMap<String, u32> = HashMap::new();
    for (i, (replica, keys)) in replicas.iter_mut().enumerate() {
        let drained = replica.wait_for(EventKind::Drained, timeout)?;
        let text = std::fs::read_to_string(&*keys)
            .map_err(|e| ReportError::Io(keys.display().to_string(), e))?;
        for key in text.lines().filter(|l| !l.is_empty()) {
            *seen.entry(key.to_string()).or_default() += 1;
        }
        let _ = std::fs::remove_file(&*keys);
        results.shards.push(ShardReplica {
            tier,
            n,
            shards,
            index: i as u32,
            cached: drained.cached,
            reconciles: drained.reconciles,
            server_filtered: drained.server_filtered,
            rss_kib: drained.rss_kib,
        });
    }
    results.checks.push(ShardCheck {
        tier,
        n,
        shards,
        distinct: seen.len() as u64,
        duplicated: seen.values().filter(|c| **c > 1).count() as u64,
    });
    Ok(())
}

/// Runs the fleet benchmark and writes `fleet.md` and `fleet.json`; returns the path of
/// `fleet.md`.
///
/// # Errors
/// [`ReportError`] when a server cannot start or the report cannot be written. A failed round
/// is a note in the report, not an error.
pub fn run(opts: &FleetOptions) -> Result<PathBuf, ReportError> {
    let (exe, out, rt) = prepare(&opts.out_dir)?;
    let mut results = FleetResults::default();
    for &tier in &opts.tiers {
        for &n in &opts.sizes {
            let server = match start_tier(&exe, tier, n, &out, &rt) {
                Ok(s) => s,
                Err(e) => {
                    results
                        .notes
                        .push(format!("{} N={n}: server: {e}", tier.as_str()));
                    continue;
                }
            };
            for round in 0..opts.rounds {
                for warm in [true, false] {
                    let what = (tier, n, warm, round);
                    match failover_round(&exe, &server.kubeconfig, what, opts.timeout) {
                        Ok(r) => {
                            eprintln!(
                                "fleet: {} N={n} {} failover {:.2}s (lease {:.2}s + start {:.2}s)",
                                tier.as_str(),
                                r.mode,
                                r.failover_s,
                                r.lease_wait_s,
                                r.start_s
                            );
                            results.failover.push(r);
                        }
                        Err(e) => results.notes.push(format!(
                            "{} N={n} failover round {round} warm={warm}: {e}",
                            tier.as_str()
                        )),
                    }
                }
            }
            for &shards in &opts.shards {
                let what = (tier, n, shards);
                if let Err(e) = shard_run(
                    &exe,
                    &server.kubeconfig,
                    what,
                    &out,
                    opts.timeout,
                    &mut results,
                ) {
                    results
                        .notes
                        .push(format!("{} N={n} {shards} shards: {e}", tier.as_str()));
                }
            }
        }
    }
    crate::fleet_md::write(&out, &results)
}
