//! `kinformer serve` (and the `kinformer-apiserver` binary, which is the same command): the
//! embedded API server standalone, for kubectl and other clients: TLS and a bearer token by
//! default (both in the kubeconfig it writes), its request counters at `/metrics`.
//!
//! Every default is [`ServerConfig::standalone`]'s: a flag left out keeps it.

use std::path::PathBuf;
use std::time::Duration;

use kinformer_apiserver::{ServerConfig, StartError};

/// Arguments of `kinformer serve` and of the `kinformer-apiserver` binary.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Port on 127.0.0.1 (default: a free one).
    #[arg(long)]
    pub port: Option<u16>,
    /// Realistic pods to seed (default: none).
    #[arg(long)]
    pub seed_pods: Option<usize>,
    /// Namespaces to spread the seeded pods over: ns-0, ns-1, ... (default: 1, `default`).
    #[arg(long)]
    pub seed_namespaces: Option<usize>,
    /// Where to write the kubeconfig (default: a file in the temp directory).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Serve plain HTTP without authentication (default: TLS with a CA generated at start and a
    /// bearer token, both written to the kubeconfig).
    #[arg(long)]
    pub plain_http: bool,
    /// BOOKMARK interval in seconds, at least 1 (default: 60, like a real server).
    #[arg(long)]
    pub bookmark_interval_secs: Option<u64>,
}

impl ServeArgs {
    /// The server configuration: [`ServerConfig::standalone`] with the flags given applied, and
    /// the kubeconfig path (given or the default one).
    pub fn config(&self) -> (ServerConfig, PathBuf) {
        // Plain HTTP has no CA, so no kube-root-ca.crt to publish either.
        let mut config = ServerConfig::standalone()
            .tls(!self.plain_http)
            .root_ca_publisher(!self.plain_http);
        if let Some(port) = self.port {
            config = config.port(port);
        }
        config.seed_pods = self.seed_pods.unwrap_or(config.seed_pods);
        config.seed_namespaces = self.seed_namespaces.unwrap_or(config.seed_namespaces);
        if let Some(secs) = self.bookmark_interval_secs {
            config = config.bookmark_interval(Duration::from_secs(secs.max(1)));
        }
        let kubeconfig = self.kubeconfig.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("kinformer-{}.kubeconfig", std::process::id()))
        });
        (config.kubeconfig(kubeconfig.clone()), kubeconfig)
    }
}

/// Starts the server as `args` say, prints where it listens, where its kubeconfig is and how
/// to reach it (the first line is `kinformer API server listening on URL`), and runs it until
/// Ctrl-C (SIGINT) or SIGTERM, then shuts down gracefully.
///
/// # Errors
/// The server did not start, could not be seeded, or the kubeconfig could not be written.
pub async fn run(args: ServeArgs) -> Result<(), StartError> {
    let (config, kubeconfig) = args.config();
    let server = kinformer_apiserver::start(config).await?;
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
    wait_for_signal().await;
    server.shutdown().await;
    println!("stopped");
    Ok(())
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(plain_http: bool) -> ServeArgs {
        ServeArgs {
            port: None,
            seed_pods: None,
            seed_namespaces: None,
            kubeconfig: Some(std::env::temp_dir().join(format!(
                "kinformer-serve-test-{}-{plain_http}.kubeconfig",
                std::process::id()
            ))),
            plain_http,
            bookmark_interval_secs: None,
        }
    }

    /// `--plain-http` starts (no CA, so no root CA publisher); the default publishes the CA.
    #[tokio::test]
    async fn plain_http_starts_without_the_root_ca_publisher() {
        for plain in [true, false] {
            let (config, path) = args(plain).config();
            assert_eq!(config.tls, !plain);
            assert_eq!(config.root_ca_publisher, !plain);
            let server = kinformer_apiserver::start(config)
                .await
                .unwrap_or_else(|e| panic!("plain_http {plain}: {e}"));
            let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
                kube::Api::namespaced(server.client(), "default");
            let copy = cms.get_opt("kube-root-ca.crt").await.unwrap();
            assert_eq!(copy.is_some(), !plain, "plain_http {plain}");
            server.shutdown().await;
            let _ = std::fs::remove_file(path);
        }
    }
}
