//! The embedded API server's integration tests, each module one area (HTTP verbs, lists,
//! watches, admission, RBAC, CRDs, clients such as kube-rs, kubectl and Python's). One binary
//! instead of one per module: the server, client and test helper code they share is compiled
//! and linked once.

mod admission_policy;
mod admission_webhooks;
mod controller_admission;
mod conversion_webhooks;
mod crd_schema_changes;
mod crd_storage_versions;
mod crds;
mod created_objects;
mod deprecation_warnings;
mod dry_run;
mod faults;
mod gc;
mod http_fidelity;
mod http_list;
mod http_metadata;
mod http_protobuf;
mod http_shard;
mod http_verbs;
mod http_watch;
mod kube_client;
mod kube_watcher;
mod kubectl;
mod kubernetes_service;
mod mutating_admission_policies;
mod namespaces;
mod openapi;
mod python_client;
mod rbac;
mod root_ca_publisher;
mod service_account_admission;
mod ssa;
mod tls_and_builtins;
mod token_request;
mod watch_timeout;
mod webhook_certificates;

#[path = "../common/mod.rs"]
mod common;
