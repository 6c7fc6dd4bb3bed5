//! Informers, controllers, leader election, shards and snapshots end to end against the
//! embedded API server (and a few scripted sources), each module one former test file. One
//! binary instead of one per file: the code they share is compiled and linked once.

mod backlog_bound;
mod controller;
mod factory_lifecycle;
mod informer_stuck_signals;
mod kube_runtime_bridge;
mod leader_election;
mod lean_list_parts;
mod metrics_prometheus;
mod reflector_faults;
mod relist_reuse;
mod shard;
mod snapshot_restart;
mod streaming_fallback;
mod stuck_signals;
mod watch_list;

#[allow(dead_code)]
#[path = "../../examples/controller.rs"]
mod controller_example;
#[path = "../embedded_support/mod.rs"]
mod embedded_support;
#[allow(dead_code)]
#[path = "../../examples/kube_runtime_controller.rs"]
mod kube_runtime_example;
#[path = "../leader_support/mod.rs"]
mod leader_support;
