//! `kinformer-apiserver`: the embedded Kubernetes API server as a standalone process, the same
//! command as `kinformer serve` (same flags, same defaults: TLS and a bearer token, both in
//! the kubeconfig; `--plain-http` to opt out). Logs go to stderr, filtered by `RUST_LOG`.

use std::process::ExitCode;

use clap::Parser;

#[path = "../serve.rs"]
mod serve;

/// An in-memory Kubernetes API server on 127.0.0.1 for kubectl, kube-rs, client-go, Python...
#[derive(Debug, Parser)]
#[command(name = "kinformer-apiserver", version)]
struct Args {
    #[command(flatten)]
    serve: serve::ServeArgs,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    match serve::run(Args::parse().serve).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kinformer-apiserver: {e}");
            ExitCode::FAILURE
        }
    }
}
