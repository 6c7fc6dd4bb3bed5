//! An embedded, in-memory Kubernetes API server, faithful enough that real clients (kubectl,
//! client-go, kube-rs, the Python client) behave against it as against a real kube-apiserver.
//!
//! - **Storage**: an MVCC store with one global revision (the resourceVersion), per-object
//!   uid/creationTimestamp/generation, an event history with compaction; objects are kept as
//!   pre-serialized JSON so LIST and WATCH serve bytes without re-encoding ([`store`]).
//! - **Resources**: every listable kind of k8s-openapi's stable API versions, described from
//!   the types, with `/status` and `/scale`; the access and token reviews; custom resources
//!   from CustomResourceDefinitions created over the API (schema pruning, defaults,
//!   validation) or registered at run time ([`resource`]).
//! - **Transport**: plain HTTP in process by default; TLS with a generated CA and a bearer
//!   token with [`ServerConfig::tls`] (the standalone server's default), both in the kubeconfig.
//!   `/metrics` counts requests like kube-apiserver's `apiserver_request_total`.
//! - **Verbs**: create, get, update, patch (merge, JSON, strategic with inferred merge keys, apply as merge),
//!   delete, deletecollection, list, watch, with the real `Status` errors ([`status`]).
//! - **List/watch semantics**: selectors, pagination, resourceVersion matching, bookmarks,
//!   `sendInitialEvents`, 410 Gone and 504 "Too large resource version" ([`list`], [`watch`]).
//! - **Fault injection** ([`Faults`]) from Rust and over HTTP ([`http`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! let server = kinformer_apiserver::start(Default::default()).await?;
//! let cm: ConfigMap = serde_json::from_value(kinformer_apiserver::seed::configmap("default", "c", 2))?;
//! server.create(&cm)?; // direct, no HTTP
//! let api: kube::Api<ConfigMap> = kube::Api::namespaced(server.client(), "default");
//! assert_eq!(api.list(&Default::default()).await?.items.len(), 1);
//! server.faults().drop_watches();
//! server.shutdown().await;
//! # Ok(()) }
//! ```

pub mod api;
mod config;
pub mod context;
mod crd;
pub mod faults;
pub mod go_text;
pub mod http;
pub mod kubeconfig;
pub mod list;
mod metrics;
pub mod objects;
pub mod options;
pub mod patch;
mod proto;
pub mod resource;
mod review;
mod scale;
pub mod seed;
pub mod selector;
pub mod server;
pub mod status;
pub mod store;
mod tls;
pub mod watch;

pub use context::RequestRecord;
pub use faults::{FailureRule, Faults, Verb};
pub use resource::{ResourceInfo, Scope};
pub use server::{ObjectState, RunningServer, ServerConfig, ServerState, StartError, start};
pub use status::ApiError;
pub use store::HistoryConfig;
