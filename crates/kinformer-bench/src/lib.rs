//! # kinformer-bench
//!
//! Side-by-side benchmarks of kinformer's `SharedIndexInformer`, kube-rs (`kube-runtime`
//! watcher + reflector + store) and client-go's `SharedIndexInformer`, plus a decode-only
//! floor, all against the embedded API server running in its own process.
//!
//! One binary, several roles (see `kinformer-bench --help`):
//!
//! * `server`: the embedded API server (the same code as the `kinformer-apiserver` binary)
//!   plus a line-based control port used to trigger writes and faults ([`control`]);
//! * `peer`: one peer running one workload, printing one JSON [`PeerReport`] on stdout
//!   ([`peers`]);
//! * `report`: the orchestrator ([`report`]): starts servers, runs every peer and workload
//!   several times interleaved, takes medians and writes Markdown and SVG charts to
//!   `target/bench-report/`.
//!
//! Each peer is its own process so the resident set size it reports is its own ([`rss`]).

pub mod control;
pub mod peers;
pub mod report;
pub mod result;
pub mod rss;
pub mod server;
pub mod svg;

pub use result::{PeerReport, Workload};
