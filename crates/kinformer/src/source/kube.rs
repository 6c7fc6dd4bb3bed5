//! A [`ListerWatcher`] over `kube::Api<K>`: how a Reflector reaches a real cluster
//! (kubeconfig, in-cluster config and authentication are kube-rs's job).
//!
//! Requests are built here rather than with kube's `ListParams`/`WatchParams`, because those
//! cannot express everything a Reflector sends (kube drops `resourceVersion=0` when a `limit` is
//! set, and has no `resourceVersionMatch` for watches without `sendInitialEvents`).
//!
//! Responses are decoded straight into `K`, never through a `serde_json::Value` tree: a list
//! while it downloads (items are found by a small scanner and decoded in parallel batches, see
//! `list_stream`), a watch line in one pass. They are decoded defensively: a watch line that is
//! not JSON, has no or an unknown `type`, or carries an object of another kind (rejected by
//! typed objects' own decoders, and checked here for `DynamicObject`) becomes a
//! [`ListWatchError::Decode`] item, which the Reflector logs and skips; nothing here panics.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;
use std::marker::PhantomData;
use std::sync::Arc;

use bytes::BytesMut;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use http_body_util::BodyExt;
use kube::Resource;
use kube::client::Body;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use super::list_stream::ListStreamDecoder;
use crate::reflector::{
    ListOptions, ListPage, ListWatchError, ListerWatcher, Status, StatusCause, TransportErrorKind,
    WatchEvent, WatchStream,
};

/// A [`ListerWatcher`] that lists and watches through a `kube::Api<K>`.
///
/// Works for typed resources (k8s-openapi types, `#[derive(CustomResource)]` types) and for
/// `DynamicObject` with its `ApiResource`, namespaced (`Api::namespaced`) or across all
/// namespaces (`Api::all`).
///
/// # Build the client without kube's retry layer
///
/// kube 5's default client retries 429, 503 and 504 responses itself (up to 15 times, with
/// delays growing to minutes). The Reflector has its own backoff and must *see* those statuses:
/// a 504 carrying "too large resource version" means "list again at the latest version", not
/// "try the same request again". Set `Config::default_retry = false` for the client you hand
/// in, as below.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::KubeListerWatcher;
/// let mut config = kube::Config::infer().await?;
/// config.default_retry = false;
/// let client = kube::Client::try_from(config)?;
/// let lw = KubeListerWatcher::new(kube::Api::<Pod>::all(client));
/// # let _ = lw; Ok(()) }
/// ```
pub struct KubeListerWatcher<K> {
    client: kube::Client,
    url_path: String,
    kind: String,
    _k: PhantomData<fn() -> K>,
}

impl<K> Clone for KubeListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            url_path: self.url_path.clone(),
            kind: self.kind.clone(),
            _k: PhantomData,
        }
    }
}

/// Items per decoding job (and per batch handed on) while a list arrives.
const DECODE_BATCH: usize = 64;
/// Decoding jobs in flight at most (each holds one batch's JSON, about 256 KB for pods).
const DECODE_JOBS: usize = 4;

impl<K> KubeListerWatcher<K>
where
    K: Resource + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
{
    /// Lists and watches what `api` addresses (a typed resource).
    pub fn new(api: kube::Api<K>) -> Self
    where
        K::DynamicType: Default,
    {
        Self::new_with(api, &K::DynamicType::default())
    }

    /// Lists and watches what `api` addresses, for resources with a runtime type
    /// (`DynamicObject` and its `ApiResource`).
    pub fn new_with(api: kube::Api<K>, dyntype: &K::DynamicType) -> Self {
        let url_path = api.resource_url().to_owned();
        Self {
            client: api.into_client(),
            url_path,
            kind: K::kind(dyntype).into_owned(),
            _k: PhantomData,
        }
    }

    /// Lists and watches `K` in `namespace` (`None`: all namespaces), built from a client
    /// directly. For cluster-scoped types pass `None`. This is what the informer factory uses,
    /// since `kube::Api::namespaced` cannot be called for a type whose scope is only known at
    /// run time.
    pub fn for_scope(
        client: kube::Client,
        namespace: Option<&str>,
        dyntype: &K::DynamicType,
    ) -> Self {
        Self {
            client,
            url_path: K::url_path(dyntype, namespace),
            kind: K::kind(dyntype).into_owned(),
            _k: PhantomData,
        }
    }

    async fn get(
        &self,
        options: &ListOptions,
        watch: bool,
    ) -> Result<http::Response<Body>, ListWatchError> {
        let uri = format!("{}?{}", self.url_path, options.to_query(watch));
        let request = http::Request::get(uri)
            .body(Body::from(Vec::new()))
            .map_err(|e| ListWatchError::Decode(format!("cannot build request: {e}")))?;
        let response = self.client.send(request).await.map_err(from_kube_error)?;
        if response.status().is_success() {
            return Ok(response);
        }
        let code = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u32>().ok());
        let body = response
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let mut status = serde_json::from_slice::<Value>(&body)
            .ok()
            .filter(|v| v.get("kind").and_then(Value::as_str) == Some("Status"))
            .map(|v| status_from_value(&v))
            .unwrap_or_else(|| {
                Status::new(code, "", String::from_utf8_lossy(&body).trim().to_owned())
            });
        if status.code == 0 {
            status.code = code;
        }
        if status.retry_after_seconds.is_none() {
            status.retry_after_seconds = retry_after;
        }
        Err(ListWatchError::Api(status))
    }
}

impl<K> KubeListerWatcher<K>
where
    K: Resource + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
{
    /// Lists one page, decoding items while the body arrives ([`ListStreamDecoder`]): the
    /// body is never held whole, and items are decoded in batches of [`DECODE_BATCH`] on
    /// tokio's blocking pool, up to [`DECODE_JOBS`] batches at a time, so decoding a large list
    /// uses every core while the scan keeps reading. Order is kept.
    ///
    /// With `deliver`, decoded batches leave as soon as the list is known to be of this kind
    /// (see [`ListerWatcher::list_batched`]).
    async fn list_streamed(
        &self,
        options: &ListOptions,
        mut deliver: Option<&mut (dyn FnMut(Vec<Arc<K>>) + Send)>,
    ) -> Result<ListPage<Arc<K>>, ListWatchError> {
        type Job<K> = tokio::task::JoinHandle<Result<Vec<Arc<K>>, ListWatchError>>;
        enum Step<D, F> {
            Decoded(D),
            Frame(F),
        }
        let response = self.get(options, false).await?;
        let mut body = response.into_body();
        let mut decoder = ListStreamDecoder::<K>::new(&self.kind);
        let mut jobs: VecDeque<Job<K>> = VecDeque::new();
        // decoded items that may not leave yet (or have nowhere to go)
        let mut held: Vec<Arc<K>> = Vec::new();
        let mut body_done = false;
        loop {
            if body_done && jobs.is_empty() {
                break;
            }
            let must_wait = body_done || jobs.len() >= DECODE_JOBS;
            let step = match jobs.front_mut() {
                Some(job) if must_wait => Step::Decoded(job.await),
                Some(job) => tokio::select! {
                    biased;
                    r = job => Step::Decoded(r),
                    f = body.frame() => Step::Frame(f),
                },
                None => Step::Frame(body.frame().await),
            };
            match step {
                Step::Decoded(r) => {
                    jobs.pop_front();
                    let items = r.map_err(|e| {
                        ListWatchError::Decode(format!("decoding a list batch failed: {e}"))
                    })??;
                    match deliver.as_deref_mut() {
                        Some(deliver) if decoder.kind_verified() && held.is_empty() => {
                            deliver(items)
                        }
                        _ => held.extend(items),
                    }
                }
                Step::Frame(None) => body_done = true,
                Step::Frame(Some(frame)) => {
                    let frame = frame.map_err(from_kube_error)?;
                    if let Ok(data) = frame.into_data() {
                        decoder.push(&data);
                    }
                    while let Some(raw) = decoder.take_raw(DECODE_BATCH) {
                        let kind = self.kind.clone();
                        jobs.push_back(tokio::task::spawn_blocking(move || raw.decode::<K>(&kind)));
                    }
                }
            }
        }
        let mut page = decoder.finish()?;
        if !held.is_empty() {
            held.append(&mut page.items);
            page.items = held;
        }
        Ok(page)
    }
}

impl<K> ListerWatcher<K> for KubeListerWatcher<K>
where
    K: Resource + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
{
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, Result<ListPage<K>, ListWatchError>> {
        let options = options.clone();
        async move {
            let page = self.list_streamed(&options, None).await?;
            Ok(page.map_items(Arc::unwrap_or_clone))
        }
        .boxed()
    }

    fn list_shared(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<ListPage<Arc<K>>, ListWatchError>> {
        let options = options.clone();
        async move { self.list_streamed(&options, None).await }.boxed()
    }

    fn list_batched<'a>(
        &'a self,
        options: &ListOptions,
        deliver: &'a mut (dyn FnMut(Vec<Arc<K>>) + Send),
    ) -> BoxFuture<'a, Result<ListPage<Arc<K>>, ListWatchError>> {
        let options = options.clone();
        async move { self.list_streamed(&options, Some(deliver)).await }.boxed()
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>> {
        let options = options.clone();
        async move {
            let response = self.get(&options, true).await?;
            let kind = self.kind.clone();
            let body = response.into_body().into_data_stream();
            Ok(watch_lines(body, kind))
        }
        .boxed()
    }
}

/// Splits a watch body into lines and decodes each.
fn watch_lines<K, B>(body: B, kind: String) -> WatchStream<K>
where
    K: Resource + DeserializeOwned + Send + 'static,
    B: futures::Stream<Item = Result<bytes::Bytes, kube::Error>> + Send + 'static,
{
    struct State<B> {
        body: std::pin::Pin<Box<B>>,
        buf: BytesMut,
        done: bool,
    }
    let state = State {
        body: Box::pin(body),
        buf: BytesMut::new(),
        done: false,
    };
    futures::stream::unfold(state, move |mut st| {
        let kind = kind.clone();
        async move {
            loop {
                if let Some(pos) = st.buf.iter().position(|b| *b == b'\n') {
                    let line = st.buf.split_to(pos + 1);
                    let line = &line[..pos];
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    return Some((decode_watch_line::<K>(line, &kind), st));
                }
                if st.done {
                    if st.buf.iter().all(u8::is_ascii_whitespace) {
                        return None;
                    }
                    let rest = st.buf.split();
                    return Some((decode_watch_line::<K>(&rest, &kind), st));
                }
                match st.body.next().await {
                    Some(Ok(chunk)) => st.buf.extend_from_slice(&chunk),
                    Some(Err(e)) => {
                        st.done = true;
                        st.buf.clear();
                        return Some((
                            Err(ListWatchError::Transport {
                                kind: TransportErrorKind::Other,
                                message: format!("reading watch stream: {e}"),
                            }),
                            st,
                        ));
                    }
                    None => st.done = true,
                }
            }
        }
    })
    .boxed()
}

/// Decodes one line of a watch response (`{"type": ..., "object": ...}`).
///
/// The object is decoded straight from the line's bytes into `K` (no intermediate JSON tree).
/// Returns a [`ListWatchError::Decode`] for anything that is not a well-formed event of the
/// expected `kind`: not JSON, no or unknown `type`, no `object`, an object of another kind, or an
/// object that does not deserialize into `K`. An `ERROR` event becomes [`WatchEvent::Error`].
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::source::decode_watch_line;
/// let ok = decode_watch_line::<Pod>(br#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#, "Pod");
/// assert!(ok.is_ok());
/// assert!(decode_watch_line::<Pod>(b"garbage", "Pod").unwrap_err().is_decode());
/// assert!(decode_watch_line::<Pod>(br#"{"object":{}}"#, "Pod").unwrap_err().is_decode());
/// ```
///
/// # Errors
/// [`ListWatchError::Decode`] as described.
pub fn decode_watch_line<K: DeserializeOwned + 'static>(
    line: &[u8],
    kind: &str,
) -> Result<WatchEvent<K>, ListWatchError> {
    let wire: WireLine<'_, K> = serde_json::from_slice(line)
        .map_err(|e| ListWatchError::Decode(format!("cannot decode a {kind} watch event: {e}")))?;
    let event_type = wire
        .event_type
        .ok_or_else(|| ListWatchError::Decode("watch event has no type".into()))?;
    let object = match wire.object {
        Some(WireObject::Typed(obj)) => return typed_event(&event_type, check_kind(obj, kind)?),
        Some(WireObject::Raw(raw)) if raw.get().starts_with('{') => raw,
        _ => {
            return Err(ListWatchError::Decode(format!(
                "{event_type} event has no object"
            )));
        }
    };
    match &*event_type {
        // the object came before the type: decode it now
        "ADDED" | "MODIFIED" | "DELETED" => typed_event(&event_type, decode_object(object, kind)?),
        "BOOKMARK" => {
            let value: Value = serde_json::from_str(object.get())
                .map_err(|e| ListWatchError::Decode(format!("bookmark object: {e}")))?;
            let meta = value.get("metadata");
            let resource_version = meta
                .and_then(|m| m.get("resourceVersion"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let annotations = meta
                .and_then(|m| m.get("annotations"))
                .and_then(Value::as_object)
                .map(|a| {
                    a.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                        .collect::<BTreeMap<_, _>>()
                })
                .unwrap_or_default();
            Ok(WatchEvent::Bookmark {
                resource_version,
                annotations,
            })
        }
        "ERROR" => {
            let value: Value = serde_json::from_str(object.get())
                .map_err(|e| ListWatchError::Decode(format!("error object: {e}")))?;
            Ok(WatchEvent::Error(status_from_value(&value)))
        }
        other => Err(ListWatchError::Decode(format!(
            "unknown watch event type {other:?}"
        ))),
    }
}

fn typed_event<K>(event_type: &str, obj: K) -> Result<WatchEvent<K>, ListWatchError> {
    match event_type {
        "ADDED" => Ok(WatchEvent::Added(obj)),
        "MODIFIED" => Ok(WatchEvent::Modified(obj)),
        "DELETED" => Ok(WatchEvent::Deleted(obj)),
        other => Err(ListWatchError::Decode(format!(
            "unknown watch event type {other:?}"
        ))),
    }
}

/// The kind check a typed decoder cannot do itself: a `DynamicObject` takes any kind, so its
/// `kind` is compared here. Typed objects (k8s-openapi's) reject another kind while decoding.
fn check_kind<K: 'static>(obj: K, kind: &str) -> Result<K, ListWatchError> {
    if let Some(dynamic) = (&obj as &dyn std::any::Any).downcast_ref::<kube::api::DynamicObject>()
        && let Some(actual) = dynamic.types.as_ref().map(|t| t.kind.as_str())
        && actual != kind
    {
        return Err(ListWatchError::Decode(format!(
            "unexpected object kind {actual:?}, expected {kind:?}"
        )));
    }
    Ok(obj)
}

/// A watch line as sent, decoded in one pass: when `type` comes before `object` (as servers
/// write it) and names an object event, the object is decoded straight into `K`; otherwise it
/// stays raw until the type is known.
struct WireLine<'a, K> {
    event_type: Option<Cow<'a, str>>,
    object: Option<WireObject<'a, K>>,
}

enum WireObject<'a, K> {
    Typed(K),
    Raw(&'a RawValue),
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for WireLine<'de, K> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct LineVisitor<K>(PhantomData<fn() -> K>);
        impl<'de, K: DeserializeOwned> serde::de::Visitor<'de> for LineVisitor<K> {
            type Value = WireLine<'de, K>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a watch event object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                #[derive(Deserialize)]
                #[serde(field_identifier, rename_all = "lowercase")]
                enum Field {
                    Type,
                    Object,
                    #[serde(other)]
                    Other,
                }
                let mut event_type: Option<Cow<'de, str>> = None;
                let mut object = None;
                while let Some(key) = map.next_key::<Field>()? {
                    match key {
                        Field::Type if event_type.is_none() => event_type = Some(map.next_value()?),
                        Field::Object if object.is_none() => {
                            let typed = matches!(
                                event_type.as_deref(),
                                Some("ADDED" | "MODIFIED" | "DELETED")
                            );
                            object = Some(if typed {
                                WireObject::Typed(map.next_value::<K>()?)
                            } else {
                                WireObject::Raw(map.next_value::<&'de RawValue>()?)
                            });
                        }
                        Field::Type => return Err(serde::de::Error::duplicate_field("type")),
                        Field::Object => {
                            return Err(serde::de::Error::duplicate_field("object"));
                        }
                        Field::Other => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(WireLine { event_type, object })
            }
        }
        d.deserialize_map(LineVisitor(PhantomData))
    }
}

/// Only the `kind` of an object; every other field is skipped without being built.
#[derive(Deserialize)]
struct KindProbe<'a> {
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
}

/// A list body as sent, decoded in one pass: the items go straight into `K`.
#[derive(Deserialize)]
#[serde(bound(deserialize = "K: DeserializeOwned"))]
struct WireList<K> {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<WireListMeta>,
    #[serde(default)]
    items: Option<Vec<K>>,
}

/// The fields of a list's `metadata` a Reflector uses.
#[derive(Deserialize)]
struct WireListMeta {
    #[serde(rename = "resourceVersion", default)]
    resource_version: Option<String>,
    #[serde(rename = "continue", default)]
    continue_token: Option<String>,
    #[serde(rename = "remainingItemCount", default)]
    remaining_item_count: Option<i64>,
}

/// Whether a list's `kind` says it holds `kind` objects: `<kind>List`, or the generic `List`
/// (how client-go decides what a list holds).
pub(crate) fn is_list_of(list_kind: &str, kind: &str) -> bool {
    list_kind == "List" || list_kind.strip_suffix("List") == Some(kind)
}

/// Decodes a list response body into one page.
///
/// The body is decoded in a single pass straight into `K` (no intermediate JSON tree), which
/// is what keeps a large initial list cheap in time and memory. The list's own `kind`, when
/// present, must be `<kind>List` (or the generic `List`): that is how client-go decides what a
/// list holds. Items are not checked one by one (servers omit their `kind`); typed objects
/// such as k8s-openapi's reject a `kind`/`apiVersion` of another type themselves. An item that
/// does not deserialize fails the whole page (skipping it would make the store forget an
/// object that exists).
///
/// # Errors
/// [`ListWatchError::Decode`] when the body is not a list of `kind`.
pub fn decode_list<K: DeserializeOwned>(
    body: &[u8],
    kind: &str,
) -> Result<ListPage<K>, ListWatchError> {
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ListWatchError::Decode(format!(
            "cannot decode {kind}List: the body is not a JSON object"
        )));
    }
    let list: WireList<K> = serde_json::from_slice(body)
        .map_err(|e| ListWatchError::Decode(format!("cannot decode {kind}List: {e}")))?;
    if let Some(list_kind) = list.kind.as_deref()
        && !is_list_of(list_kind, kind)
    {
        return Err(ListWatchError::Decode(format!(
            "unexpected list kind {list_kind:?}, expected \"{kind}List\""
        )));
    }
    let meta = list.metadata;
    let (resource_version, continue_token, remaining_item_count) = match meta {
        Some(m) => (m.resource_version, m.continue_token, m.remaining_item_count),
        None => (None, None, None),
    };
    Ok(ListPage {
        items: list.items.unwrap_or_default(),
        resource_version: resource_version.unwrap_or_default(),
        continue_token: continue_token.filter(|c| !c.is_empty()),
        remaining_item_count,
    })
}

/// Decodes one watch object into `K` after checking its `kind` (when it has one).
fn decode_object<K: DeserializeOwned>(object: &RawValue, kind: &str) -> Result<K, ListWatchError> {
    let probe: KindProbe<'_> = serde_json::from_str(object.get())
        .map_err(|e| ListWatchError::Decode(format!("object is not a JSON object: {e}")))?;
    if let Some(actual) = probe.kind.as_deref()
        && actual != kind
    {
        return Err(ListWatchError::Decode(format!(
            "unexpected object kind {actual:?}, expected {kind:?}"
        )));
    }
    serde_json::from_str(object.get())
        .map_err(|e| ListWatchError::Decode(format!("cannot decode {kind}: {e}")))
}

fn status_from_value(v: &Value) -> Status {
    let s = |key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let details = v.get("details");
    let causes = details
        .and_then(|d| d.get("causes"))
        .and_then(Value::as_array)
        .map(|causes| {
            causes
                .iter()
                .map(|c| StatusCause {
                    cause_type: c
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    message: c
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    field: c
                        .get("field")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                })
                .collect()
        })
        .unwrap_or_default();
    Status {
        code: v
            .get("code")
            .and_then(Value::as_u64)
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(0),
        reason: s("reason"),
        message: s("message"),
        causes,
        retry_after_seconds: details
            .and_then(|d| d.get("retryAfterSeconds"))
            .and_then(Value::as_u64)
            .and_then(|c| u32::try_from(c).ok()),
    }
}

fn from_kube_error(e: impl Into<kube::Error>) -> ListWatchError {
    let e: kube::Error = e.into();
    match e {
        kube::Error::Api(status) => ListWatchError::Api(Status {
            code: status.code,
            reason: status.reason.clone(),
            message: status.message.clone(),
            causes: status
                .details
                .as_ref()
                .map(|d| {
                    d.causes
                        .iter()
                        .map(|c| StatusCause {
                            cause_type: c.reason.clone(),
                            message: c.message.clone(),
                            field: c.field.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            retry_after_seconds: status
                .details
                .as_ref()
                .map(|d| d.retry_after_seconds)
                .filter(|s| *s > 0),
        }),
        kube::Error::SerdeError(e) => ListWatchError::Decode(e.to_string()),
        kube::Error::FromUtf8(e) => ListWatchError::Decode(e.to_string()),
        other => {
            let kind = if is_connection_refused(&other) {
                TransportErrorKind::ConnectionRefused
            } else {
                TransportErrorKind::Other
            };
            ListWatchError::Transport {
                kind,
                message: error_chain(&other),
            }
        }
    }
}

fn is_connection_refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        cur = err.source();
    }
    false
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(err) = cur {
        out.push_str(": ");
        out.push_str(&err.to_string());
        cur = err.source();
    }
    out
}
