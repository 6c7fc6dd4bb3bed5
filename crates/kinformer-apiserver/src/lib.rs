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
//!   defaults, validation) or registered at run time ([`ResourceInfo`]). Namespaces as kube's
//!   registry has them: `Active` with the `kubernetes` finalizer, `Terminating` on delete,
//!   `/finalize`.
//! - **Transport**: plain HTTP in process by default; TLS with a generated CA and a bearer
//!   token with [`ServerConfig::tls`] ([`ServerConfig::standalone`], the default of
//!   `kinformer serve`), both in the kubeconfig. `/metrics` counts requests like
//!   kube-apiserver's `apiserver_request_total`, and open watches in its
//!   `apiserver_longrunning_requests` gauge ([`RunningServer::open_watches`]).
//! - **Verbs**: create, get, update, patch (merge, JSON, strategic with inferred merge keys,
//!   server-side apply with field ownership: `Apply` managedFields entries, 409 conflicts with
//!   kube-apiserver's causes, `force`, list-map and set semantics from CRD schemas and a table
//!   of the built-in kinds), delete and deletecollection (`DeleteOptions` with preconditions
//!   and `propagationPolicy` / `orphanDependents`, from the body or the query: the `orphan`
//!   and `foregroundDeletion` finalizers as kube-apiserver sets them), list, watch, with the
//!   real `Status` errors ([`ApiError`]), in the form kube-apiserver negotiates for them
//!   (protobuf when `Accept` prefers it, JSON otherwise; `404 page not found` in plain text
//!   for a path no handler takes: an unknown group, or an unknown version or resource of a
//!   group served only by custom resources; 406 for a custom resource asked for in protobuf
//!   alone). `dryRun=All` on every write (subresources included)
//!   decides and answers as a real write (validation, defaults, admission, preconditions,
//!   managedFields, conflicts) but stores nothing, uses no resourceVersion and sends no watch
//!   event. A deprecated API version answers every request with kube-apiserver's `Warning`
//!   (v1 Endpoints, v1 ComponentStatus, a CRD version marked `deprecated`).
//! - **Controllers inside the server** (event-driven, no timer; on by default, switchable):
//!   the garbage collector ([`ServerConfig::garbage_collector`]: background, foreground with
//!   `blockOwnerDeletion`, orphan; dangling references; cluster-scoped and custom-resource
//!   owners) and the namespace controller ([`ServerConfig::namespace_controller`]: a deleted
//!   namespace is `Terminating`, its content of every namespaced kind is deleted, its
//!   conditions report what finalizers hold back, then it goes) and the service account
//!   controller ([`ServerConfig::service_account_controller`]: a `default` ServiceAccount in
//!   every namespace), and with TLS (the standalone server) the root CA publisher
//!   ([`ServerConfig::root_ca_publisher`]: a `kube-root-ca.crt` ConfigMap with the server's
//!   CA in every namespace). envtest runs none of them. As kube-apiserver itself does, the
//!   `kubernetes` Service in `default` is kept with its Endpoints and EndpointSlice
//!   ([`ServerConfig::kubernetes_service`]).
//! - **Admission**: NamespaceLifecycle — 403 for creates in a terminating namespace, the
//!   immortal `default`/`kube-system`/`kube-public`, 404 for a missing namespace with
//!   [`ServerConfig::enforce_namespaces`] (on in [`ServerConfig::standalone`]).
//! - **Service account tokens**: `serviceaccounts/{name}/token` answers a `TokenRequest` with a
//!   JWT signed by a key generated at start (kube-apiserver's claims); the server accepts it
//!   as a bearer token (as `system:serviceaccount:<ns>:<name>`) and in a `TokenReview`, so
//!   `kubectl create token` works.
//! - **OpenAPI**: `/openapi/v2` (JSON and protobuf) and `/openapi/v3` with the built-in kinds' schemas of the
//!   selected Kubernetes version (generated from the k8s.io/kubernetes module's published
//!   spec, `gen/openapi.py`) and custom resources' from their CRD's `openAPIV3Schema`, so
//!   `kubectl explain` works on both.
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

mod admission;
mod api;
mod config;
mod context;
mod controllers;
mod crd;
mod faults;
mod go_text;
mod http;
mod kubeconfig;
mod list;
mod metrics;
mod names;
mod objects;
mod openapi;
mod options;
mod patch;
mod proto;
mod rbac;
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
mod warnings;

pub use config::ServerConfig;
pub use context::RequestRecord;
pub use faults::{FailureRule, Faults, Verb, WatchListFault};
pub use resource::{ResourceInfo, ScaleInfo, Scope};
pub use server::{ObjectState, RunningServer, ServerState, StartError, start};
pub use status::ApiError;
pub use store::HistoryConfig;
