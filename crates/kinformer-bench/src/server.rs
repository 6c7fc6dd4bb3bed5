//! `kinformer-bench server`: the embedded API server in its own process, plus the control
//! port ([`crate::control`]).
//!
//! Prints two lines on stdout once ready — `listening on http://127.0.0.1:PORT` and
//! `control on 127.0.0.1:PORT` — and runs until its stdin closes (the orchestrator holds the
//! pipe, so the server never outlives it) or it receives SIGINT/SIGTERM.

use std::io::{BufRead, Write};
use std::net::TcpListener;
use std::sync::Arc;

use kinformer_apiserver::standalone::{StandaloneOptions, start_standalone};

/// Runs the bench server with `pods` realistic pods over `namespaces` namespaces.
///
/// # Errors
/// The server could not start or seed, or the control port could not be bound.
pub async fn run(pods: usize, namespaces: usize) -> Result<(), Box<dyn std::error::Error>> {
    let opts = StandaloneOptions {
        port: 0,
        seed_pods: pods,
        seed_namespaces: namespaces.max(1),
        kubeconfig: None,
        config: kinformer_apiserver::ServerConfig::default(),
        // The peers are given the URL, not a kubeconfig: plain HTTP as before.
        plain_http: true,
    };
    let server = Arc::new(start_standalone(opts).await?);
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let control_addr = listener.local_addr()?;
    {
        let server = server.clone();
        std::thread::spawn(move || crate::control::serve(listener, server));
    }
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {}", server.base_url())?;
        writeln!(out, "control on {control_addr}")?;
        out.flush()?;
    }
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let stdin = std::io::stdin();
        let mut line = String::new();
        while stdin
            .lock()
            .read_line(&mut line)
            .map(|n| n > 0)
            .unwrap_or(false)
        {
            line.clear();
        }
    });
    tokio::select! {
        _ = stdin_closed => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}
