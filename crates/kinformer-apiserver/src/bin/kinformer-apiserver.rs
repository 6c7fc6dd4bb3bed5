//! `kinformer-apiserver`: the embedded Kubernetes API server as a standalone process.

use std::path::PathBuf;

use clap::Parser;
use kinformer_apiserver::standalone::{StandaloneOptions, serve_standalone};

/// An in-memory Kubernetes API server on 127.0.0.1 for kubectl, kube-rs, client-go, Python...
#[derive(Debug, Parser)]
#[command(name = "kinformer-apiserver", version)]
struct Args {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Number of realistic pods to seed.
    #[arg(long, default_value_t = 0)]
    seed_pods: usize,
    /// Namespaces to spread seeded pods over (`default` when 1).
    #[arg(long, default_value_t = 1)]
    seed_namespaces: usize,
    /// Write a kubeconfig for other clients here.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Serve plain HTTP without authentication (default: TLS with a generated CA and a bearer
    /// token, both in the kubeconfig).
    #[arg(long)]
    plain_http: bool,
    /// BOOKMARK interval in seconds.
    #[arg(long, default_value_t = 60)]
    bookmark_interval_secs: u64,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let opts = StandaloneOptions {
        port: args.port,
        seed_pods: args.seed_pods,
        seed_namespaces: args.seed_namespaces,
        kubeconfig: args.kubeconfig,
        plain_http: args.plain_http,
        config: kinformer_apiserver::ServerConfig::default().bookmark_interval(
            std::time::Duration::from_secs(args.bookmark_interval_secs.max(1)),
        ),
    };
    match serve_standalone(opts).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kinformer-apiserver: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
