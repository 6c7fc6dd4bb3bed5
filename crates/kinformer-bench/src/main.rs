//! `kinformer-bench`: side-by-side informer benchmarks (see the crate docs and
//! docs/benchmarks.md).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use kinformer_bench::fleet::{self, FleetOptions};
use kinformer_bench::peers::{self, PeerArgs};
use kinformer_bench::replica::{self, ReplicaArgs};
use kinformer_bench::report::{self, ReportOptions};
use kinformer_bench::restart::{self, RestartOptions};
use kinformer_bench::soak::{self, SoakOptions};
use kinformer_bench::{Peer, Tier, Workload};

/// Benchmarks kinformer, kube-rs and client-go informers against the embedded API server and
/// a real kube-apiserver.
#[derive(Debug, Parser)]
#[command(name = "kinformer-bench")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run every peer and workload on both tiers and write target/bench-report/.
    Report {
        /// The embedded tier only, N = 2,000, 2 runs: a fast check.
        #[arg(long)]
        quick: bool,
        /// Sizes N (comma-separated) instead of the defaults.
        #[arg(long, value_delimiter = ',')]
        sizes: Option<Vec<u64>>,
        /// Runs per peer and workload.
        #[arg(long)]
        runs: Option<usize>,
        /// Unrecorded warm-up runs of each workload against each server, before the recorded
        /// ones (default 1; the first runs after seeding are slow for every peer).
        #[arg(long)]
        warmup: Option<usize>,
        /// Workloads (comma-separated).
        #[arg(long, value_delimiter = ',')]
        workloads: Option<Vec<Workload>>,
        /// Tiers (comma-separated: embedded, real).
        #[arg(long, value_delimiter = ',')]
        tiers: Option<Vec<Tier>>,
        /// Only these peers (comma-separated), e.g. to re-measure one and render it with an
        /// earlier run's results (`--from-results`).
        #[arg(long, value_delimiter = ',')]
        peers: Option<Vec<Peer>>,
        /// Leave the client-go peers out.
        #[arg(long)]
        skip_go: bool,
        /// W2 updates per run (embedded tier).
        #[arg(long)]
        updates: Option<u64>,
        /// W2 updates per run on the real tier.
        #[arg(long)]
        real_updates: Option<u64>,
        /// Output directory.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run nothing: render report.md from a results.json / results.partial.json written
        /// earlier (sizes, tiers and output directory as given).
        #[arg(long)]
        from_results: Option<PathBuf>,
    },
    /// W5: churn at a constant pod count with faults while sampling the kinformer peer's RSS.
    Soak {
        /// embedded or real.
        #[arg(long, value_enum, default_value_t = Tier::Embedded)]
        tier: Tier,
        /// Pods kept on the server.
        #[arg(long, default_value_t = 10_000)]
        pods: u64,
        /// Minutes of churn.
        #[arg(long, default_value_t = 10.0)]
        minutes: f64,
        /// RSS sampling interval, seconds.
        #[arg(long, default_value_t = 5)]
        sample_secs: u64,
        /// Churn ticks per second (each: one create, one delete, two updates).
        #[arg(long, default_value_t = 20)]
        rate: u32,
        /// Seconds between faults.
        #[arg(long, default_value_t = 30)]
        fault_secs: u64,
        /// Output directory.
        #[arg(long, default_value = "target/bench-report")]
        out: PathBuf,
    },
    /// A controller as several replicas: failover with warm standby against a cold start, and
    /// one replica per shard (writes target/bench-report/fleet.md).
    Fleet {
        /// Pods on the server (comma-separated sizes).
        #[arg(long, value_delimiter = ',', default_value = "10000,50000")]
        sizes: Vec<u64>,
        /// Tiers (comma-separated: embedded, real).
        #[arg(long, value_delimiter = ',', default_value = "embedded,real")]
        tiers: Vec<Tier>,
        /// Failover rounds per standby mode and size.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Shard counts (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
        shards: Vec<u32>,
        /// Timeout of each wait, seconds.
        #[arg(long, default_value_t = 300)]
        timeout_secs: u64,
        /// Output directory.
        #[arg(long, default_value = "target/bench-report")]
        out: PathBuf,
    },
    /// A pod informer restarted from its snapshot against a cold start: time to synced and
    /// bytes received (writes target/bench-report/restart.md).
    Restart {
        /// Pods on the server (comma-separated sizes).
        #[arg(long, value_delimiter = ',', default_value = "10000,50000")]
        sizes: Vec<u64>,
        /// Tiers (comma-separated: embedded, real).
        #[arg(long, value_delimiter = ',', default_value = "embedded,real")]
        tiers: Vec<Tier>,
        /// Rounds per size (each: one warm and one cold start).
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Pods updated while the informer is down.
        #[arg(long, default_value_t = 100)]
        changes: u64,
        /// Timeout of each wait, seconds.
        #[arg(long, default_value_t = 300)]
        timeout_secs: u64,
        /// Output directory.
        #[arg(long, default_value = "target/bench-report")]
        out: PathBuf,
    },
    /// One replica of the fleet benchmark's controller; prints JSON events on stdout.
    Replica {
        /// Kubeconfig to connect with.
        #[arg(long)]
        kubeconfig: PathBuf,
        /// Lease (in `default`) to elect a leader on; none: no election.
        #[arg(long)]
        lease: Option<String>,
        /// Identity in the lease.
        #[arg(long, default_value = "replica")]
        identity: String,
        /// Cold standby: informers start only once leading.
        #[arg(long)]
        cold: bool,
        /// Shard `I/N` by uid.
        #[arg(long)]
        shard: Option<String>,
        /// Where to write the reconciled keys once drained (with --shard).
        #[arg(long)]
        keys: Option<PathBuf>,
    },
    /// Run the embedded bench server (API server + control port).
    Server {
        /// Pods to seed (default: none, as `kinformer serve`).
        #[arg(long)]
        seed_pods: Option<usize>,
        /// Namespaces to spread them over (default: 1, `default`, as `kinformer serve`; the
        /// report passes 10).
        #[arg(long)]
        seed_namespaces: Option<usize>,
    },
    /// Run one Rust peer on one workload; prints one JSON report.
    Peer {
        /// The peer.
        #[arg(long, value_enum)]
        peer: Peer,
        /// The workload.
        #[arg(long, value_enum)]
        workload: Workload,
        /// Kubeconfig to connect with (TLS, client certificates, tokens).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// API server base URL (plain HTTP) when there is no kubeconfig.
        #[arg(long)]
        url: Option<String>,
        /// Control port address.
        #[arg(long)]
        control: Option<String>,
        /// Pods on the server.
        #[arg(long)]
        n: u64,
        /// W2 updates.
        #[arg(long, default_value_t = 10_000)]
        updates: u64,
        /// Timeout of each wait, seconds.
        #[arg(long, default_value_t = 300)]
        timeout_secs: u64,
        /// W5: RSS sampling interval, seconds.
        #[arg(long, default_value_t = 5)]
        sample_secs: u64,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result: Result<(), String> = match cli.command {
        Cmd::Report {
            quick,
            sizes,
            runs,
            warmup,
            workloads,
            tiers,
            peers,
            skip_go,
            updates,
            real_updates,
            out,
            from_results,
        } => {
            let mut opts = ReportOptions::new(quick);
            if let Some(s) = sizes {
                opts.sizes = s;
            }
            if let Some(r) = runs {
                opts.runs = r.max(1);
            }
            if let Some(w) = warmup {
                opts.warmup = w;
            }
            if let Some(w) = workloads {
                opts.workloads = w;
            }
            if let Some(t) = tiers {
                opts.tiers = t;
            }
            opts.peers = peers;
            if let Some(u) = updates {
                opts.w2_updates = u;
            }
            if let Some(u) = real_updates {
                opts.real_w2_updates = u;
            }
            if let Some(o) = out {
                opts.out_dir = o;
            }
            opts.skip_go = skip_go;
            match from_results {
                Some(file) => report::load_results(&opts, &file),
                None => report::run(&opts),
            }
            .and_then(|(results, notes)| {
                kinformer_bench::report_md::write_report(&opts, &results, &notes)
            })
            .map(|p| println!("report written to {}", p.display()))
            .map_err(|e| e.to_string())
        }
        Cmd::Soak {
            tier,
            pods,
            minutes,
            sample_secs,
            rate,
            fault_secs,
            out,
        } => {
            let opts = SoakOptions {
                tier,
                pods,
                duration: Duration::from_secs_f64(minutes.max(0.0) * 60.0),
                sample: Duration::from_secs(sample_secs.max(1)),
                rate,
                fault_secs: fault_secs.max(1),
                out_dir: out,
            };
            soak::run(&opts)
                .map(|p| println!("soak report written to {}", p.display()))
                .map_err(|e| e.to_string())
        }
        Cmd::Fleet {
            sizes,
            tiers,
            rounds,
            shards,
            timeout_secs,
            out,
        } => {
            let opts = FleetOptions {
                tiers,
                sizes,
                rounds: rounds.max(1),
                shards,
                timeout: Duration::from_secs(timeout_secs),
                out_dir: out,
            };
            fleet::run(&opts)
                .map(|p| println!("fleet report written to {}", p.display()))
                .map_err(|e| e.to_string())
        }
        Cmd::Restart {
            sizes,
            tiers,
            rounds,
            changes,
            timeout_secs,
            out,
        } => {
            let opts = RestartOptions {
                tiers,
                sizes,
                rounds: rounds.max(1),
                changes: changes.max(1),
                timeout: Duration::from_secs(timeout_secs),
                out_dir: out,
            };
            restart::run(&opts)
                .map(|p| println!("restart report written to {}", p.display()))
                .map_err(|e| e.to_string())
        }
        Cmd::Replica {
            kubeconfig,
            lease,
            identity,
            cold,
            shard,
            keys,
        } => parse_shard(shard.as_deref(), keys).and_then(|shard| {
            let args = ReplicaArgs {
                kubeconfig,
                lease,
                identity,
                warm: !cold,
                shard,
            };
            runtime().and_then(|rt| rt.block_on(replica::run(args)))
        }),
        Cmd::Server {
            seed_pods,
            seed_namespaces,
        } => runtime().and_then(|rt| {
            let defaults = kinformer_apiserver::ServerConfig::default();
            let config = defaults.clone().seed_pods(
                seed_pods.unwrap_or(defaults.seed_pods),
                seed_namespaces.unwrap_or(defaults.seed_namespaces),
            );
            rt.block_on(kinformer_bench::server::run(config))
                .map_err(|e| e.to_string())
        }),
        Cmd::Peer {
            peer,
            workload,
            kubeconfig,
            url,
            control,
            n,
            updates,
            timeout_secs,
            sample_secs,
        } => {
            let args = PeerArgs {
                kubeconfig,
                url,
                control,
                n,
                workload,
                updates,
                timeout: Duration::from_secs(timeout_secs),
                sample: Duration::from_secs(sample_secs.max(1)),
            };
            runtime().and_then(|rt| {
                rt.block_on(peers::run(peer, &args))
                    .map_err(|e| e.to_string())
                    .and_then(|r| serde_json::to_string(&r).map_err(|e| e.to_string()))
                    .map(|json| println!("{json}"))
            })
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kinformer-bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `I/N` and the keys file of `kinformer-bench replica --shard I/N --keys FILE`.
fn parse_shard(
    shard: Option<&str>,
    keys: Option<PathBuf>,
) -> Result<Option<(u32, u32, PathBuf)>, String> {
    let Some(text) = shard else {
        return Ok(None);
    };
    let (i, n) = text
        .split_once('/')
        .and_then(|(i, n)| Some((i.parse().ok()?, n.parse().ok()?)))
        .ok_or_else(|| format!("--shard {text:?}: expected I/N"))?;
    let keys = keys.ok_or("--shard needs --keys")?;
    Ok(Some((i, n, keys)))
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))
}
