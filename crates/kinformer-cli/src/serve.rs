//! `kinformer serve`: the embedded API server standalone, for kubectl and other clients: TLS
//! and a bearer token by default (both in the kubeconfig it writes), its request counters at
//! `/metrics`.

use std::path::PathBuf;

use kinformer_apiserver::{StandaloneOptions, standalone::start_standalone};

use crate::error::{CliError, with_causes};

/// Arguments of `kinformer serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Port on 127.0.0.1 (0: a free one).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Realistic pods to seed.
    #[arg(long, default_value_t = 0)]
    pub seed_pods: usize,
    /// Namespaces to spread the seeded pods over.
    #[arg(long, default_value_t = 4)]
    pub seed_namespaces: usize,
    /// Where to write the kubeconfig (default: a file in the temp directory).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Serve plain HTTP without authentication (default: TLS with a CA generated at start and a
    /// bearer token, both written to the kubeconfig).
    #[arg(long)]
    pub plain_http: bool,
}

/// Runs the server until Ctrl-C or SIGTERM.
pub async fn run(args: ServeArgs) -> Result<(), CliError> {
    let kubeconfig = args.kubeconfig.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("kinformer-{}.kubeconfig", std::process::id()))
    });
    let server = start_standalone(StandaloneOptions {
        port: args.port,
        seed_pods: args.seed_pods,
        seed_namespaces: args.seed_namespaces,
        kubeconfig: Some(kubeconfig.clone()),
        config: Default::default(),
        plain_http: args.plain_http,
    })
    .await
    .map_err(|e| CliError::Embedded(with_causes(&e)))?;
    println!("kinformer API server listening on {}", server.base_url());
    println!("kubeconfig written to {}", kubeconfig.display());
    println!(
        "try:  KUBECONFIG={} kubectl get pods -A",
        kubeconfig.display()
    );
    println!(
        "request metrics (Prometheus text) at {}/metrics",
        server.base_url()
    );
    println!("Ctrl-C to stop");
    let _ = tokio::signal::ctrl_c().await;
    server.shutdown().await;
    println!("stopped");
    Ok(())
}
