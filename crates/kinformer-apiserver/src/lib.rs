//! An embedded, in-memory Kubernetes API server, faithful enough that real clients (kubectl,
//! client-go, kube-rs, the Python client) behave against it as against a real kube-apiserver.
//!
//! **Start here**: [`start`] a [`ServerConfig`] and get a [`RunningServer`]: its
//! [`client`](RunningServer::client), its [`kubeconfig`](RunningServer::kubeconfig) for other
//! clients, its [`faults`](RunningServer::faults), and direct reads and writes without HTTP
//! ([`create`](RunningServer::create), [`state`](RunningServer::state),
//! [`seed_pods`](RunningServer::seed_pods) with the realistic objects of [`seed`]). That is the
//! whole public surface; everything below is the server's own business.
//!
//! - **Storage**: an MVCC store with one global revision (the resourceVersion), per-object
//!   uid/creationTimestamp/generation, an event history with compaction ([`HistoryConfig`]);
//!   objects are kept as pre-serialized JSON so LIST and WATCH serve bytes without
//!   re-encoding.
//! - **Resources**: every listable kind of k8s-openapi's stable API versions, described from
//!   the types, with `/status` and `/scale`; the access and token reviews, token requests;
//!   custom resources from CustomResourceDefinitions created over the API (schema pruning,
//!   defaults, validation) or registered at run time ([`ResourceInfo`]).
//! - **Transport**: plain HTTP in process by default; TLS with a generated CA and a bearer
//!   token with [`ServerConfig::tls`] ([`ServerConfig::standalone`], the default of
//!   `kinformer serve`), both in the kubeconfig. `/metrics` counts requests like
//!   kube-apiserver's `apiserver_request_total`.
//! - **Service account tokens**: `serviceaccounts/{name}/token` answers a `TokenRequest` with a
//!   JWT signed by a key generated at start (kube-apiserver's claims); the server accepts it
//!   as a bearer token (as `system:serviceaccount:<ns>:<name>`) and in a `TokenReview`, so
//!   `kubectl create token` works. There is no service account controller: create the
//!   service account (`default` too) before asking for its token.
//! - **OpenAPI**: `/openapi/v2` (JSON and protobuf) and `/openapi/v3` with the built-in kinds' schemas of the
//!   selected Kubernetes version (generated from the k8s.io/kubernetes module's published
//!   spec, `gen/openapi.py`) and custom resources' from their CRD's `openAPIV3Schema`, so
//!   `kubectl explain` works on both.
//! - **Verbs**: create, get, update, patch (merge, JSON, strategic with inferred merge keys, apply as merge),
//!   delete, deletecollection, list, watch, with the real `Status` errors ([`ApiError`]).
//! - **List/watch semantics**: label selectors (the grammar of the `kinformer-selector` crate,
//!   shared with kinformer's listers), field selectors, pagination, resourceVersion matching,
//!   bookmarks, `sendInitialEvents`, 410 Gone and 504 "Too large resource version".
//! - **Fault injection** ([`Faults`]) from Rust and over HTTP (`/__kinformer/...`).
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

#![warn(unreachable_pub)]

mod api;
mod config;
mod context;
mod crd;
mod faults;
mod go_text;
mod http;
mod kubeconfig;
mod list;
mod metrics;
mod objects;
mod openapi;
mod options;
mod patch;
mod proto;
mod resource;
mod review;
mod scale;
mod schemas;
pub mod seed;
mod selector;
mod server;
mod status;
mod store;
mod tls;
mod token;
#[cfg(test)]
mod untrusted_input;
mod version;

pub use config::ServerConfig;
pub use context::RequestRecord;
pub use faults::{FailureRule, Faults, Verb};
pub use resource::{ResourceInfo, ScaleInfo, Scope};
pub use server::{ObjectState, RunningServer, ServerState, StartError, start};
pub use status::ApiError;
pub use store::HistoryConfig;
