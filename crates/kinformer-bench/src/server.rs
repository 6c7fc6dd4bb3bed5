//! `kinformer-bench server`: the embedded API server in its own process, plus the control
//! port ([`crate::control`]).
//!
//! Prints two lines on stdout once ready — `listening on http://127.0.0.1:PORT` and
//! `control on 127.0.0.1:PORT` — and runs until its stdin closes (the orchestrator holds the
//! pipe, so the server never outlives it) or it receives SIGINT/SIGTERM.

use std::io::{BufRead, Write};
use std::net::TcpListener;
use std::sync::Arc;

use kinformer_apiserver::ServerConfig;

/// Runs the bench server as `config` says (the in-process defaults, [`ServerConfig::default`]:
/// plain HTTP on a free port, which peers reach through a kubeconfig the orchestrator writes for
/// this URL; seeded with realistic pods as configured).
///
/// # Errors
/// The server could not start or seed, or the control port could not be bound.
pub async fn run(config: ServerConfig) -> Result<(), Box<dyn std::error::Error>> {
    let server = kinformer_apiserver::start(config).await?;
    let server = Arc::new(server);
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
