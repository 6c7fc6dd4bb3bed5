//! The standalone server (`kinformer-apiserver` binary, later `kinformer serve`).

use std::path::PathBuf;

use crate::server::{RunningServer, ServerConfig, StartError, start};

/// Options of the standalone server.
#[derive(Debug, Clone, Default)]
pub struct StandaloneOptions {
    /// Port on 127.0.0.1 (0: a free one).
    pub port: u16,
    /// Realistic pods to seed.
    pub seed_pods: usize,
    /// Namespaces to spread the seeded pods over (`default` when 0 or 1).
    pub seed_namespaces: usize,
    /// Where to write a kubeconfig for other clients.
    pub kubeconfig: Option<PathBuf>,
    /// Server configuration (the port above overrides its port, `plain_http` its `tls`).
    pub config: ServerConfig,
    /// Serve plain HTTP without authentication instead of TLS with a bearer token (the
    /// default, like a real server).
    pub plain_http: bool,
}

/// Errors of the standalone server.
#[derive(Debug, thiserror::Error)]
pub enum StandaloneError {
    /// The server did not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// Seeding failed.
    #[error("seeding failed: {0}")]
    Seed(#[from] crate::status::ApiError),
    /// Writing the kubeconfig failed.
    #[error("cannot write kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The path.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

/// Starts the server, seeds it, writes the kubeconfig; returns the running server.
pub async fn start_standalone(opts: StandaloneOptions) -> Result<RunningServer, StandaloneError> {
    let server = start(opts.config.clone().port(opts.port).tls(!opts.plain_http)).await?;
    if opts.seed_pods > 0 {
        server.seed_pods(opts.seed_pods, opts.seed_namespaces)?;
    }
    if let Some(path) = &opts.kubeconfig {
        server
            .write_kubeconfig(path)
            .map_err(|source| StandaloneError::Kubeconfig {
                path: path.clone(),
                source,
            })?;
    }
    Ok(server)
}

/// Runs the standalone server until Ctrl-C (SIGINT) or SIGTERM, then shuts down gracefully.
/// Prints one line `listening on https://127.0.0.1:PORT` (`http://` with `plain_http`) to
/// stdout once ready.
pub async fn serve_standalone(opts: StandaloneOptions) -> Result<(), StandaloneError> {
    let server = start_standalone(opts).await?;
    println!("listening on {}", server.base_url());
    wait_for_signal().await;
    server.shutdown().await;
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
