//! # kinformer-bench
//!
//! Side-by-side benchmarks of kinformer's `SharedIndexInformer` (built through the
//! `SharedInformerFactory`, as the README builds it), kube-rs (`kube-runtime` watcher +
//! reflector + store) and client-go's `SharedIndexInformer` (on protobuf, as in the field, and
//! on JSON), plus decode-only floors, on two tiers: the embedded API server in its own
//! process, and a real kube-apiserver v1.36.3 started by the e2e harness (`real.rs`).
//!
//! One binary, several roles (see `kinformer-bench --help`):
//!
//! * `server`: the embedded API server (the same code as the `kinformer-apiserver` binary)
//!   plus a line-based control port used to trigger writes and faults ([`control`]);
//! * `peer`: one peer running one workload, printing one JSON [`PeerReport`] on stdout
//!   ([`peers`]);
//! * `report`: the orchestrator ([`report`]; its child processes in `process.rs`): starts
//!   servers, runs every peer and workload several times interleaved, takes medians and writes
//!   Markdown and SVG charts to `target/bench-report/` ([`report_md`]);
//! * `fleet` / `replica`: a controller as several replica processes, leader election failover
//!   with warm standby against a cold start, and one replica per shard ([`fleet`]);
//! * `restart`: a pod informer restarted from its snapshot against a cold start ([`restart`]);
//! * `soak`: W5, churn at a constant object count with faults while sampling the kinformer
//!   peer's RSS ([`soak`]).
//!
//! Each peer is its own process so the resident set size it reports is its own (`rss.rs`).

#![warn(unreachable_pub)]

pub mod control;
mod cpu;
mod error;
pub mod fleet;
pub mod fleet_md;
pub mod kubeconfig;
pub mod peers;
mod process;
mod proxy;
mod real;
pub mod replica;
pub mod report;
pub mod report_md;
pub mod restart;
mod result;
mod rss;
pub mod server;
pub mod soak;
mod svg;

pub use result::{Peer, PeerReport, Tier, Workload};
