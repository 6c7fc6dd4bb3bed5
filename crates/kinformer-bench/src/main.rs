//! `kinformer-bench`: side-by-side informer benchmarks (see the crate docs and
//! docs/benchmarks.md).

use std::time::Duration;

use clap::{Parser, Subcommand};
use kinformer_bench::Workload;
use kinformer_bench::peers::{self, PeerArgs};
use kinformer_bench::report::{self, ReportOptions};

/// Benchmarks kinformer, kube-rs and client-go informers against the embedded API server.
#[derive(Debug, Parser)]
#[command(name = "kinformer-bench")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run every peer and workload and write target/bench-report/.
    Report {
        /// Small N and fewer runs, for a fast check.
        #[arg(long)]
        quick: bool,
        /// Sizes N (comma-separated) instead of the defaults.
        #[arg(long, value_delimiter = ',')]
        sizes: Option<Vec<u64>>,
        /// Runs per peer and workload.
        #[arg(long)]
        runs: Option<usize>,
        /// Workloads (comma-separated: w1,w1t,w3,w2).
        #[arg(long, value_delimiter = ',')]
        workloads: Option<Vec<Workload>>,
        /// Leave the client-go peer out.
        #[arg(long)]
        skip_go: bool,
    },
    /// Run the bench server (embedded API server + control port).
    Server {
        /// Pods to seed.
        #[arg(long, default_value_t = 0)]
        seed_pods: usize,
        /// Namespaces to spread them over.
        #[arg(long, default_value_t = 10)]
        seed_namespaces: usize,
    },
    /// Run one peer on one workload; prints one JSON report.
    Peer {
        /// kinformer, kube-rs or floor.
        #[arg(long)]
        peer: String,
        /// w1, w1t, w2 or w3.
        #[arg(long)]
        workload: Workload,
        /// API server base URL.
        #[arg(long)]
        url: String,
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
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kinformer-bench: runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result: Result<(), String> = match cli.command {
        Cmd::Report {
            quick,
            sizes,
            runs,
            workloads,
            skip_go,
        } => {
            let mut opts = ReportOptions::new(quick);
            if let Some(s) = sizes {
                opts.sizes = s;
            }
            if let Some(r) = runs {
                opts.runs = r.max(1);
            }
            if let Some(w) = workloads {
                opts.workloads = w;
            }
            opts.skip_go = skip_go;
            report::run(&opts)
                .map(|p| println!("report written to {}", p.display()))
                .map_err(|e| e.to_string())
        }
        Cmd::Server {
            seed_pods,
            seed_namespaces,
        } => rt
            .block_on(kinformer_bench::server::run(seed_pods, seed_namespaces))
            .map_err(|e| e.to_string()),
        Cmd::Peer {
            peer,
            workload,
            url,
            control,
            n,
            updates,
            timeout_secs,
        } => {
            let args = PeerArgs {
                url,
                control,
                n,
                workload,
                updates,
                timeout: Duration::from_secs(timeout_secs),
            };
            rt.block_on(peers::run(&peer, &args))
                .map_err(|e| e.to_string())
                .and_then(|r| serde_json::to_string(&r).map_err(|e| e.to_string()))
                .map(|json| println!("{json}"))
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
