//! A [`ListerWatcher`] over a `kube::Client`: how a Reflector reaches a real cluster
//! (kubeconfig, in-cluster config and authentication are kube-rs's job).
//!
//! Requests are built here rather than with kube's `ListParams`/`WatchParams`, because those
//! cannot express everything a Reflector sends (kube drops `resourceVersion=0` when a `limit` is
//! set, and has no `resourceVersionMatch` for watches without `sendInitialEvents`).
//!
//! Built-in kinds are asked for in protobuf first, as client-go asks ([`WireFormat`]): a
//! protobuf list is cut into items while it downloads (`proto_list`) and a protobuf watch into
//! frames (`frames`); each item or object event is decoded from its message straight into `K`
//! by `kinformer-proto`'s serde deserializer (no JSON in between), each list in it allocated at
//! its final length. The list envelope and BOOKMARK and ERROR events are transcoded to JSON and
//! read by the JSON code. A server that answers JSON is read as JSON.
//!
//! Responses are decoded straight into `K`, never through a `serde_json::Value` tree (see
//! `wire`): a list while it downloads (items are found by a small scanner and decoded in
//! parallel batches, see `list_stream`), a watch line in one pass (framing in `frames`). They
//! are decoded defensively: a watch line that is not JSON, has no or an unknown `type`, or
//! carries an object of another kind becomes a [`ListWatchError::Decode`] item, which the
//! Reflector logs and skips; one object over the size limit ends the list or watch with
//! [`ListWatchError::TooLarge`]; nothing here panics.

use std::any::TypeId;
use std::fmt::Debug;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use http_body_util::BodyExt;
use kube::Resource;
use kube::client::Body;
use serde::de::DeserializeOwned;

use super::decode::json_list::ListStreamDecoder;
use super::decode::ordered::{Ordered, Step};
use super::decode::proto_list::ProtoListDecoder;
use super::decode::watch::{watch_frames, watch_lines};
use super::decode::{DECODE_BATCH, ListBody, ProtoItems};
use super::status::{error_from_response, from_kube_error};
use super::uncopied::UncopiedBodies;
use crate::InformerConfig;
use crate::reflector::{
    ItemSink, ListMeta, ListOptions, ListWatchError, ListerWatcher, WatchStream,
};

/// The default limit on one object as it crosses the wire: a watch event's line, a list item,
/// a list's metadata (16 MiB). A real API server stores objects of at most about 1.5 MiB
/// (etcd's request limit) and takes requests of at most 3 MiB; their JSON, wrapped in a watch
/// event, stays far below this. Past it, the list or watch fails with
/// [`ListWatchError::TooLarge`] and the bytes are dropped, so a broken server or proxy that
/// sends an endless line costs bounded memory.
pub const DEFAULT_MAX_OBJECT_SIZE: usize = 16 << 20;

/// The `Accept` header of a metadata-only list: the JSON clause client-go's metadata client
/// sends (`k8s.io/client-go/metadata`), and what kube-rs sends for `PartialObjectMeta`. The
/// server answers a `meta.k8s.io/v1` `PartialObjectMetadataList`.
pub const METADATA_LIST_ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
/// The `Accept` header of a metadata-only watch: every event carries a `meta.k8s.io/v1`
/// `PartialObjectMetadata`.
pub const METADATA_WATCH_ACCEPT: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
/// The `Accept` header of a metadata-only list in protobuf (what client-go's metadata client
/// sends): a protobuf `PartialObjectMetadataList` first, JSON as the fallback.
pub const METADATA_LIST_ACCEPT_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
/// The `Accept` header of a metadata-only watch in protobuf: `PartialObjectMetadata` events,
/// JSON as the fallback.
pub const METADATA_WATCH_ACCEPT_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
/// The kind of the objects a metadata-only list or watch carries.
const METADATA_KIND: &str = "PartialObjectMetadata";
/// Its API version.
const METADATA_API_VERSION: &str = "meta.k8s.io/v1";
/// The `Accept` header of lists and watches of built-in kinds: protobuf first, JSON as the
/// fallback, as client-go's typed clients ask.
pub const PROTOBUF_ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

/// What a [`KubeListerWatcher`] asks the server to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WireFormat {
    /// Protobuf for built-in kinds (every kind client-go registers) and for metadata-only
    /// requests of any resource (`PartialObjectMetadata` is a built-in message), JSON for full
    /// custom resources, as client-go does. The default. Objects are decoded from their
    /// messages straight into `K` (`kinformer-proto`'s serde deserializer, checked against
    /// Go's own encodings of every kind), giving the objects a JSON response gives; a server
    /// that answers JSON anyway is read as JSON.
    #[default]
    Protobuf,
    /// JSON only.
    Json,
}

/// A [`ListerWatcher`] that lists and watches through a `kube::Client`.
///
/// Works for typed resources (k8s-openapi types, `#[derive(CustomResource)]` types) and for
/// `DynamicObject` with its `ApiResource`, namespaced or across all namespaces. It takes its part
/// of an [`InformerConfig`]: the namespace, the [`WireFormat`], the size limit, and whether
/// managedFields must be decoded at all. It sends exactly the [`ListOptions`] it is given: the
/// selectors and tweak of the configuration are applied by the Reflector to every request,
/// whatever its source.
///
/// # Metadata only
///
/// For `K = kube::core::PartialObjectMeta<R>` (any resource `R`, typed or `DynamicObject`; kube
/// marks it with [`Resource::metadata_api`]) it lists and watches only metadata, as client-go's
/// `metadatainformer` does: lists ask for a `PartialObjectMetadataList`
/// ([`METADATA_LIST_ACCEPT_PROTOBUF`], protobuf first as client-go's metadata client asks;
/// [`METADATA_LIST_ACCEPT`] with [`WireFormat::Json`]), watches for `PartialObjectMetadata`
/// events ([`METADATA_WATCH_ACCEPT_PROTOBUF`], [`METADATA_WATCH_ACCEPT`]), and the server
/// strips everything but `metadata` before sending.
/// It is the same source otherwise (selectors, tweak, size limit, paging, streaming list,
/// bookmarks): only the `Accept` header and the expected kind differ.
///
/// ```no_run
/// # async fn demo(client: kube::Client) {
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::KubeListerWatcher;
/// use kube::core::PartialObjectMeta;
/// let lw = KubeListerWatcher::<PartialObjectMeta<Pod>>::new(client, &Default::default());
/// # let _ = lw; }
/// ```
///
/// # Paged lists
///
/// When a list page carries a continue token, the next page is asked for as soon as the
/// page's metadata arrives (it comes before the items), so the server prepares it while this
/// page downloads and decodes; the next [`list`](ListerWatcher::list) call for that page
/// (what the Reflector's pager makes) takes the response under way. Any other call cancels
/// it. A caller that reads one page of a multi-page list and stops has cost the server one
/// page more.
///
/// # Retries are the Reflector's
///
/// kube 5's default client retries 429, 503 and 504 responses itself (up to 15 times, with
/// delays growing to minutes). The Reflector has its own backoff and must *see* those statuses:
/// a 504 carrying "too large resource version" means "list again at the latest version", not
/// "try the same request again". So this source sends its requests with bodies kube's retry
/// layer cannot copy, and that layer passes them through untouched: a client built with
/// `Client::try_default()` behaves as one built with `Config::default_retry = false`, for this
/// source's requests only (the client's other requests keep kube's retries).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::{InformerConfig, KubeListerWatcher};
/// let client = kube::Client::try_default().await?;
/// let lw = KubeListerWatcher::<Pod>::new(client, &InformerConfig::default().namespace("prod"));
/// # let _ = lw; Ok(()) }
/// ```
pub struct KubeListerWatcher<K> {
    client: kube::Client,
    url_path: String,
    kind: String,
    max_object_size: usize,
    /// Whether `K` is a `PartialObjectMeta`: requests ask for metadata only.
    metadata_only: bool,
    /// The protobuf message of the objects: `K`'s when it has one, `PartialObjectMetadata`
    /// for metadata-only requests.
    proto: Option<kinformer_proto::MessageRef>,
    wire: WireFormat,
    drop_managed_fields: bool,
    /// The next page, asked for while the current one downloaded (see [`Prefetch`]).
    prefetched: parking_lot::Mutex<Option<Prefetch>>,
    /// Request bodies kube's retry layer cannot copy.
    bodies: UncopiedBodies,
    _k: PhantomData<fn() -> K>,
}

/// A list request sent ahead of its caller: as soon as a page's metadata (first in every
/// list body) gives the continue token, the next page is asked for, so the server prepares
/// it while this page's items download and decode. The paged list that follows continue
/// tokens (the pager's `list_pages`) asks for exactly that request next
/// ([`ListOptions::next_page`]) and gets the response already under way; any other request
/// drops it, which cancels it. At most one is in flight per source.
struct Prefetch {
    /// The request's query string: only the identical request may take the response.
    query: String,
    response: tokio_util::task::AbortOnDropHandle<Result<http::Response<Body>, ListWatchError>>,
}

impl<K> Clone for KubeListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            url_path: self.url_path.clone(),
            kind: self.kind.clone(),
            max_object_size: self.max_object_size,
            metadata_only: self.metadata_only,
            proto: self.proto,
            wire: self.wire,
            drop_managed_fields: self.drop_managed_fields,
            prefetched: parking_lot::Mutex::new(None),
            bodies: self.bodies.clone(),
            _k: PhantomData,
        }
    }
}

impl<K> KubeListerWatcher<K>
where
    K: Resource + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
{
    /// Lists and watches `K` in `config`'s namespace (all namespaces without one; cluster-scoped
    /// types ignore it), with `config`'s wire format and size limit.
    pub fn new(client: kube::Client, config: &InformerConfig<K>) -> Self
    where
        K::DynamicType: Default,
        K::Scope: 'static,
    {
        Self::new_with(client, config, &K::DynamicType::default())
    }

    /// [`new`](Self::new) for resources with a runtime type (`DynamicObject` and its
    /// `ApiResource`). Their scope is only known at run time: leave `config.namespace` unset
    /// for a cluster-scoped resource.
    ///
    /// One namespace or all: [`InformerConfig::namespaces`] is not this source's (a warning
    /// is logged and every namespace listed); the factory and
    /// [`SharedIndexInformer::new`](crate::SharedIndexInformer::new) make a
    /// [`NamespaceSetListerWatcher`](crate::NamespaceSetListerWatcher) for it.
    pub fn new_with(
        client: kube::Client,
        config: &InformerConfig<K>,
        dyntype: &K::DynamicType,
    ) -> Self
    where
        K::Scope: 'static,
    {
        let cluster_scoped =
            TypeId::of::<K::Scope>() == TypeId::of::<k8s_openapi::ClusterResourceScope>();
        let namespace = config.namespace.as_deref().filter(|_| !cluster_scoped);
        if config.namespaces.is_some() && namespace.is_none() && !cluster_scoped {
            tracing::warn!(
                "a KubeListerWatcher covers one namespace or all: InformerConfig::namespaces is \
                 ignored here, every namespace is listed (use NamespaceSetListerWatcher)"
            );
        }
        let metadata = K::metadata_api();
        Self {
            client,
            url_path: K::url_path(dyntype, namespace),
            kind: if metadata {
                METADATA_KIND.to_owned()
            } else {
                K::kind(dyntype).into_owned()
            },
            metadata_only: metadata,
            proto: if metadata {
                kinformer_proto::MessageRef::for_kind(METADATA_API_VERSION, METADATA_KIND)
            } else {
                kinformer_proto::MessageRef::for_kind(&K::api_version(dyntype), &K::kind(dyntype))
            },
            wire: config.wire_format,
            drop_managed_fields: config.decode_without_managed_fields(),
            max_object_size: config.max_object_size,
            prefetched: parking_lot::Mutex::new(None),
            bodies: UncopiedBodies::default(),
            _k: PhantomData,
        }
    }

    /// Whether requests ask for protobuf: [`WireFormat::Protobuf`] and a built-in kind, or
    /// metadata only (`PartialObjectMetadata` is a built-in message whatever the resource).
    pub fn asks_protobuf(&self) -> bool {
        self.wire == WireFormat::Protobuf && self.proto.is_some()
    }

    /// Whether this source lists and watches only metadata (`K` is a `PartialObjectMeta`).
    pub fn is_metadata_only(&self) -> bool {
        self.metadata_only
    }

    /// Sends a list (or, with `watch`, a watch) request; a list takes the prefetched
    /// response when it is the request that was sent ahead.
    async fn get(
        &self,
        options: &ListOptions,
        watch: bool,
    ) -> Result<http::Response<Body>, ListWatchError> {
        let query = options.to_query(watch);
        if !watch {
            // a prefetch this request does not match is dropped (cancelled) here
            let ahead = self.prefetched.lock().take();
            if let Some(ahead) = ahead.filter(|p| p.query == query) {
                return ahead.response.await.map_err(|e| {
                    ListWatchError::Decode(format!("the prefetched list request failed: {e}"))
                })?;
            }
        }
        self.send(query, watch).await
    }

    /// Asks for the page after the one whose metadata gave `token`, ahead of time (see
    /// [`Prefetch`]).
    fn prefetch_next(&self, options: &ListOptions, token: &str) {
        let query = options.next_page(token).to_query(false);
        let this = self.clone();
        let q = query.clone();
        let response = tokio::spawn(async move { this.send(q, false).await });
        *self.prefetched.lock() = Some(Prefetch {
            query,
            response: tokio_util::task::AbortOnDropHandle::new(response),
        });
    }

    async fn send(
        &self,
        query: String,
        watch: bool,
    ) -> Result<http::Response<Body>, ListWatchError> {
        let uri = format!("{}?{query}", self.url_path);
        let mut request = http::Request::get(uri);
        let accept = match (self.metadata_only, self.asks_protobuf(), watch) {
            (true, true, false) => Some(METADATA_LIST_ACCEPT_PROTOBUF),
            (true, true, true) => Some(METADATA_WATCH_ACCEPT_PROTOBUF),
            (true, false, false) => Some(METADATA_LIST_ACCEPT),
            (true, false, true) => Some(METADATA_WATCH_ACCEPT),
            (false, true, _) => Some(PROTOBUF_ACCEPT),
            (false, false, _) => None,
        };
        if let Some(accept) = accept {
            request = request.header(http::header::ACCEPT, accept);
        }
        let request = request
            .body(self.bodies.next().await)
            .map_err(|e| ListWatchError::Decode(format!("cannot build request: {e}")))?;
        let response = self.client.send(request).await.map_err(from_kube_error)?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(error_from_response(response).await)
    }

    /// How to decode the objects of a protobuf response (the server chooses, from the
    /// `Accept` this source sent): `K`'s message, whether `managedFields` is left out, and
    /// the type to present metadata-only objects with; `None` for JSON. Lists and watches
    /// both take it from here.
    fn protobuf_response(&self, response: &http::Response<Body>) -> Option<ProtoItems> {
        let ct = response
            .headers()
            .get(http::header::CONTENT_TYPE)?
            .to_str()
            .ok()?;
        let media = ct.split(';').next()?.trim();
        let msg = (self.asks_protobuf() && media.eq_ignore_ascii_case(kinformer_proto::MEDIA_TYPE))
            .then_some(self.proto)
            .flatten()?;
        Some(ProtoItems {
            msg,
            drop_managed_fields: self.drop_managed_fields,
            typed: self
                .is_metadata_only()
                .then_some((METADATA_API_VERSION, METADATA_KIND)),
        })
    }
}

impl<K> KubeListerWatcher<K>
where
    K: Resource + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
{
    /// Lists one page, decoding items while the body arrives ([`ListStreamDecoder`],
    /// [`ProtoListDecoder`]): the body is never held whole, and items are decoded in batches of
    /// [`DECODE_BATCH`] on the [`Ordered`] pipeline (tokio's blocking pool, a few batches at a
    /// time), so decoding a large list uses every core while the scan keeps reading. Order is
    /// kept. Decoded batches go to `sink` as soon as the list is known to be of this kind (its
    /// `kind` came before `items`); until then, and for a list without a `kind`, they are held
    /// to the end.
    async fn list_streamed(
        &self,
        options: &ListOptions,
        sink: ItemSink<'_, K>,
    ) -> Result<ListMeta, ListWatchError> {
        let response = self.get(options, false).await?;
        let mut decoder: Box<dyn ListBody<K>> = match self.protobuf_response(&response) {
            Some(items) => Box::new(ProtoListDecoder::<K>::new(
                &self.kind,
                items,
                self.max_object_size,
            )),
            None => Box::new(ListStreamDecoder::<K>::new(
                &self.kind,
                self.max_object_size,
            )),
        };
        let mut body = response.into_body();
        let mut prefetching = false;
        let mut pipeline = Ordered::new();
        // decoded items that may not leave yet
        let mut held: Vec<Arc<K>> = Vec::new();
        let mut body_done = false;
        while !(body_done && pipeline.is_empty()) {
            // read on while decoding, unless the body is over or the pipeline is full
            let may_read = !body_done && pipeline.has_room();
            match pipeline.next(may_read, body.frame()).await {
                Step::Decoded(r) => {
                    let items = r.map_err(|e| {
                        ListWatchError::Decode(format!("decoding a list batch failed: {e}"))
                    })??;
                    if decoder.kind_verified() {
                        if !held.is_empty() {
                            sink(std::mem::take(&mut held));
                        }
                        sink(items);
                    } else {
                        held.extend(items);
                    }
                }
                Step::Read(None) => body_done = true,
                Step::Read(Some(frame)) => {
                    let frame = frame.map_err(from_kube_error)?;
                    if let Ok(data) = frame.into_data() {
                        decoder.push(&data);
                    }
                    if let Some(e) = decoder.error() {
                        return Err(e);
                    }
                    if !prefetching && let Some(token) = decoder.early_continue() {
                        prefetching = true;
                        self.prefetch_next(options, token);
                    }
                    while let Some(raw) = decoder.take_raw(DECODE_BATCH) {
                        let kind = self.kind.clone();
                        pipeline.spawn(move || raw.decode::<K>(&kind));
                    }
                }
            }
        }
        let (mut items, meta) = decoder.finish()?.into_parts();
        if !held.is_empty() {
            held.append(&mut items);
            items = held;
        }
        if !items.is_empty() {
            sink(items);
        }
        Ok(meta)
    }
}

impl<K> ListerWatcher<K> for KubeListerWatcher<K>
where
    K: Resource + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
{
    fn list<'a>(
        &'a self,
        options: &ListOptions,
        sink: ItemSink<'a, K>,
    ) -> BoxFuture<'a, Result<ListMeta, ListWatchError>> {
        let options = options.clone();
        async move { self.list_streamed(&options, sink).await }.boxed()
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>> {
        let options = options.clone();
        async move {
            let response = self.get(&options, true).await?;
            let protobuf = self.protobuf_response(&response);
            let body = response.into_body().into_data_stream();
            Ok(match protobuf {
                Some(items) => watch_frames(body, self.kind.clone(), items, self.max_object_size),
                None => watch_lines(body, self.kind.clone(), self.max_object_size),
            })
        }
        .boxed()
    }

    /// Every API server since Kubernetes 1.27 streams lists (beta and on by default since
    /// 1.32); older ones refuse the request, and the Reflector falls back to list+watch.
    fn supports_streaming_list(&self) -> bool {
        true
    }
}
