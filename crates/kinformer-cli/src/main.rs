//! `kinformer`: a self-checking demo of the informer machinery on an embedded API server
//! (`demo`), the embedded API server standalone (`serve`), and an informer-backed live view of
//! any resource (`watch`).

mod demo;
mod error;
mod resources;
mod serve;
mod watch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// kinformer: client-go's informer machinery in Rust.
#[derive(Debug, Parser)]
#[command(name = "kinformer", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Seed an embedded API server, run informers through churn and faults, and check that
    /// every cache and every handler converged to the server's exact state.
    Demo(demo::DemoArgs),
    /// Run the embedded API server on 127.0.0.1 until Ctrl-C, with a kubeconfig for kubectl.
    Serve(serve::ServeArgs),
    /// Watch a resource through an informer: sync progress, then one line per event.
    Watch(watch::WatchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KINFORMER_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Demo(args) => demo::run(args).await,
            Command::Serve(args) => serve::run(args)
                .await
                .map_err(|e| error::CliError::Embedded(error::with_causes(&e))),
            Command::Watch(args) => watch::run(args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
