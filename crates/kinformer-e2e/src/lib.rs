//! # kinformer-e2e
//!
//! Helpers for kinformer's end-to-end tests against a **real** kube-apiserver (the Go harness
//! in `e2e/`, started by `e2e/start.sh`; `./scripts/test.sh` starts two instances and exports
//! their kubeconfigs). The tests live in `tests/`; this library holds what they share:
//!
//! * [`E2eEnv`]: which server to talk to, read from an environment variable
//!   ([`WATCHCACHE_KUBECONFIG_VAR`], [`NOCACHE_KUBECONFIG_VAR`],
//!   [`NO_WATCH_LIST_KUBECONFIG_VAR`]); a test whose variable is unset prints one line saying
//!   it was skipped and why, and passes;
//! * [`E2eEnv::client`]: a `kube::Client` built from the kubeconfig with kube's implicit
//!   429/503/504 retries **off** (a Reflector must see those statuses itself);
//! * [`E2eEnv::compact`]: compacts etcd through the harness's admin endpoint (forces 410s on a
//!   server started with the watch cache off);
//! * [`config`]: the `InformerConfig` every informer test starts from, in the queue mode under
//!   test ([`QUEUE_MODE_VAR`]);
//! * [`create_namespace`]: a fresh, uniquely named namespace per test (tests run in parallel);
//! * [`MapStore`]: a minimal [`ReflectorStore`] to drive a bare Reflector;
//! * [`CountingListerWatcher`]: wraps a [`ListerWatcher`] and counts what went over the wire
//!   (list pages, continue tokens, bookmarks, `ERROR` events);
//! * [`eventually`] and [`server_snapshot`]/[`snapshot`] to check that a cache converged on a
//!   fresh list.

mod counting;
mod env;
mod store;

pub use counting::{CountingListerWatcher, WatchCounts};
pub use env::{
    E2eEnv, E2eError, NO_WATCH_LIST_KUBECONFIG_VAR, NOCACHE_KUBECONFIG_VAR, QUEUE_MODE_VAR,
    WATCHCACHE_KUBECONFIG_VAR, config, create_namespace, delete_namespace, eventually, queue_mode,
    server_snapshot, snapshot,
};
pub use store::MapStore;

pub use kinformer::{reflector::ListerWatcher, store::ReflectorStore};
