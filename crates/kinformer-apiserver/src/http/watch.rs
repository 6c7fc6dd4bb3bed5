//! WATCH: a newline-delimited stream of `{"type":...,"object":...}` events.
//!
//! Contract (as the real server's watch cache):
//! - from `resourceVersion=N`: every event after N for the resource, in revision order; if N
//!   is compacted, one ERROR event carrying a 410 Expired `Status`
//!   (`too old resource version: N (C)`); if N is in the future, nothing (no event, no
//!   bookmark) until the server passes N, as the real watch cache;
//! - `sendInitialEvents=true` from a future N: after a short wait, one ERROR event carrying the
//!   504 "Too large resource version" `Status`;
//! - from `""` or `"0"`: synthetic ADDED events for the current state, then live events;
//! - `sendInitialEvents=true` (with `resourceVersionMatch=NotOlderThan`,
//!   `allowWatchBookmarks=true`): the initial ADDED events, then a BOOKMARK annotated
//!   `k8s.io/initial-events-end: "true"`, then live events;
//! - `allowWatchBookmarks=true`: a BOOKMARK carrying the current revision every bookmark
//!   interval (only the revision is meaningful in it), and one more 2 s before the watch's
//!   deadline (none after it);
//! - selectors: an update that makes an object leave the selection is a DELETED event (of the
//!   previous state, at the new revision), one that makes it enter is an ADDED event;
//! - the stream ends at `timeoutSeconds` (without one, at a random moment between
//!   [`ServerConfig::min_request_timeout`](crate::ServerConfig::min_request_timeout) and twice
//!   it, as kube-apiserver's `--min-request-timeout`), on server shutdown, when faults drop
//!   watches, when the watcher falls so far behind that its events were compacted (like the
//!   real cacher closing a slow watcher), or when the CRD of a custom resource changes its
//!   spec (kube-apiserver builds the resource's storage and watch cache again; a watch from
//!   a resourceVersion older than that moment is then 410 Gone).
//!
//! Events are written as they are read from the history: all events ready at once go into one
//! HTTP chunk (up to the batch size), so a burst costs one write, and a single event is flushed
//! at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::conversion;
use super::table::{IncludeObject, table};
use crate::context::Context;
use crate::faults::WatchListFault;
use crate::list::matches;
use crate::options::ListOptions;
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::{EventType, ReadError, StoredEvent, StoredObject};

/// A watch request, validated.
#[derive(Debug, Clone)]
pub(crate) struct WatchRequest {
    /// The resource.
    pub resource: Arc<ResourceInfo>,
    /// Namespace scope (`None` = all namespaces or cluster-scoped).
    pub namespace: Option<String>,
    /// Options (selectors, resourceVersion, bookmarks, timeout).
    pub opts: ListOptions,
    /// Send objects as `Table`s (kubectl), with this `includeObject`.
    pub table: Option<IncludeObject>,
    /// Send objects as `PartialObjectMetadata` (`Accept: ...;as=PartialObjectMetadata;...`).
    pub metadata_only: bool,
    /// Send protobuf frames (`Accept` put protobuf first and the kind has a message).
    pub protobuf: bool,
}

fn push_event(buf: &mut BytesMut, ty: &str, object: &[u8]) {
    buf.reserve(object.len() + 32);
    buf.put_slice(b"{\"type\":\"");
    buf.put_slice(ty.as_bytes());
    buf.put_slice(b"\",\"object\":");
    buf.put_slice(object);
    buf.put_slice(b"}\n");
}

/// The JSON of a BOOKMARK object at `rev`.
pub(crate) fn bookmark_object(res: &ResourceInfo, rev: u64, initial_end: bool) -> Vec<u8> {
    // only the resourceVersion (and the end annotation): kube-apiserver v1.35 sends no
    // `creationTimestamp: null` on bookmarks (e2e/diff "initial-events-end")
    let mut meta = serde_json::json!({"resourceVersion": rev.to_string()});
    if initial_end {
        meta["annotations"] = serde_json::json!({"k8s.io/initial-events-end": "true"});
    }
    serde_json::to_vec(
        &serde_json::json!({"kind": res.kind, "apiVersion": res.api_version(), "metadata": meta}),
    )
    .unwrap_or_default()
}

struct Filter {
    resource: String,
    namespace: Option<String>,
    opts: ListOptions,
    table: Option<(Arc<ResourceInfo>, IncludeObject)>,
    metadata_only: bool,
    /// For a protobuf watch: the resource.
    protobuf: Option<Arc<ResourceInfo>>,
    /// For a custom resource watched through a version other than its storage version: the
    /// resource, whose version objects are shown in.
    served: Option<Arc<ResourceInfo>>,
    /// For a version a conversion webhook shows: the objects of the batch being written, as
    /// converted ([`Filter::convert_batch`]), by key and resourceVersion.
    converted: parking_lot::Mutex<HashMap<(String, u64), Arc<StoredObject>>>,
}

impl Filter {
    /// Writes one event whose object is JSON: a JSON line, or a protobuf frame.
    fn push(&self, buf: &mut BytesMut, ty: &str, object: &[u8]) {
        match &self.protobuf {
            None => push_event(buf, ty, object),
            Some(_) => match crate::proto::watch_frame(ty, object) {
                Some(f) => buf.put_slice(&f),
                None => self.push_unencodable(buf),
            },
        }
    }

    /// An object with no protobuf form: an ERROR event instead, after which the client
    /// relists (and a list of it is answered in JSON, which the client also accepts).
    fn push_unencodable(&self, buf: &mut BytesMut) {
        tracing::warn!(resource = %self.resource, "watch event has no protobuf form; sending an ERROR");
        self.push(
            buf,
            "ERROR",
            &ApiError::internal("object has no protobuf form").to_bytes(),
        );
    }

    /// One watch event carrying an error `Status`.
    fn error(&self, err: &ApiError) -> Bytes {
        let mut buf = BytesMut::new();
        self.push(&mut buf, "ERROR", &err.to_bytes());
        buf.freeze()
    }

    /// Writes one event of a stored object version (its cached protobuf message when the
    /// watch is protobuf).
    /// `o` as the watched version shows it, when that is not how it is stored.
    fn shown(&self, o: &StoredObject) -> Option<StoredObject> {
        let res = self.served.as_ref()?;
        if conversion::by_webhook(res) {
            let converted = self.converted.lock();
            return converted
                .get(&(o.key.clone(), o.resource_version))
                .map(|c| StoredObject::clone(c));
        }
        crate::objects::served_object(res, o)
    }

    /// Whether this watcher shows objects through a conversion webhook.
    fn converts(&self) -> bool {
        self.served
            .as_ref()
            .is_some_and(|r| conversion::by_webhook(r))
    }

    /// Converts, by the CRD's conversion webhook, the objects of `objs` this watcher shows
    /// (see [`crate::http::conversion`]), for [`Filter::shown`] to find as the batch is
    /// written; nothing for a version shown without one.
    async fn convert_batch(
        &self,
        ctx: &Context,
        objs: Vec<Arc<StoredObject>>,
    ) -> Result<(), ApiError> {
        let Some(res) = self.served.as_ref().filter(|r| conversion::by_webhook(r)) else {
            return Ok(());
        };
        let wanted: Vec<Arc<StoredObject>> = objs.into_iter().filter(|o| self.selects(o)).collect();
        let keys: Vec<(String, u64)> = wanted
            .iter()
            .map(|o| (o.key.clone(), o.resource_version))
            .collect();
        let converted = conversion::served(ctx, res, wanted).await?;
        let mut map = self.converted.lock();
        map.clear();
        map.extend(keys.into_iter().zip(converted));
        Ok(())
    }

    /// Converts the objects of `events` this watcher shows ([`Filter::convert_batch`]).
    async fn convert_events(
        &self,
        ctx: &Context,
        events: &[Arc<StoredEvent>],
    ) -> Result<(), ApiError> {
        if !self.converts() {
            return Ok(());
        }
        let mut objs = Vec::new();
        for ev in events.iter().filter(|ev| *ev.resource == *self.resource) {
            objs.push(ev.object.clone());
            objs.extend(ev.prev.clone());
        }
        self.convert_batch(ctx, objs).await
    }

    fn emit_stored(&self, buf: &mut BytesMut, ty: &str, o: &StoredObject) {
        let shown = self.shown(o);
        let o = shown.as_ref().unwrap_or(o);
        match &self.protobuf {
            Some(res) if self.table.is_none() && !self.metadata_only => {
                match crate::proto::object_body(res, o) {
                    Some(body) => buf.put_slice(&kinformer_proto::watch_frame(ty, &body)),
                    None => self.push_unencodable(buf),
                }
            }
            _ => self.emit(buf, ty, &o.bytes),
        }
    }

    /// Writes one event, as a Table when the client asked for tables, as its
    /// `PartialObjectMetadata` when it asked for metadata only.
    fn emit(&self, buf: &mut BytesMut, ty: &str, object: &[u8]) {
        match &self.table {
            None if self.metadata_only => {
                self.push(buf, ty, &super::partial::metadata_object(object));
            }
            None => self.push(buf, ty, object),
            Some((res, include)) => {
                let v: serde_json::Value = serde_json::from_slice(object).unwrap_or_default();
                let meta = serde_json::json!({"resourceVersion": v["metadata"]["resourceVersion"]});
                let t = table(res, std::slice::from_ref(&v), meta, *include);
                push_event(buf, ty, &serde_json::to_vec(&t).unwrap_or_default());
            }
        }
    }

    /// Writes a BOOKMARK: its object converted like every other for a metadata-only watch
    /// (kube-apiserver converts bookmarks too), as is otherwise.
    fn emit_bookmark(&self, buf: &mut BytesMut, object: &[u8]) {
        if self.metadata_only && self.table.is_none() {
            self.push(buf, "BOOKMARK", &super::partial::metadata_object(object));
        } else if self.table.is_none() {
            self.push(buf, "BOOKMARK", object);
        } else {
            push_event(buf, "BOOKMARK", object);
        }
    }

    fn selects(&self, o: &StoredObject) -> bool {
        self.namespace.as_ref().is_none_or(|ns| &o.namespace == ns) && matches(&self.opts, o)
    }

    /// Converts a stored event into what this watcher sees, if anything.
    fn convert(&self, ev: &StoredEvent, buf: &mut BytesMut) {
        if *ev.resource != *self.resource {
            return;
        }
        match ev.event_type {
            EventType::Added => {
                if self.selects(&ev.object) {
                    self.emit_stored(buf, "ADDED", &ev.object);
                }
            }
            EventType::Deleted => {
                if self.selects(&ev.object) {
                    self.emit_stored(buf, "DELETED", &ev.object);
                }
            }
            EventType::Modified => {
                let cur = self.selects(&ev.object);
                let prev = ev.prev.as_ref().is_some_and(|p| self.selects(p));
                match (prev, cur) {
                    (true, true) => self.emit_stored(buf, "MODIFIED", &ev.object),
                    (false, true) => self.emit_stored(buf, "ADDED", &ev.object),
                    (true, false) => {
                        if let Some(p) = &ev.prev {
                            let shown = self.shown(p);
                            let last = shown.as_ref().unwrap_or(p).at_revision(ev.revision);
                            self.emit(buf, "DELETED", &last.bytes);
                        }
                    }
                    (false, false) => {}
                }
            }
        }
    }
}

/// Runs one watch, writing chunks to `tx` until the watch ends or the client goes away.
pub(crate) async fn run_watch(ctx: Arc<Context>, req: WatchRequest, tx: mpsc::Sender<Bytes>) {
    let mut tx = Out {
        tx,
        delayed: None,
        faults: ctx.faults.clone(),
    };
    let store = &ctx.api.store;
    let res = req.resource.clone();
    let mut drop_rx = ctx.faults.drop_signal();
    let mut paused_rx = ctx.faults.paused();
    let mut rev_rx = store.subscribe();
    // the resource's storage as this watch found it: a CRD spec change builds it again, which
    // ends the watch (`Store::restart_watches`); its floor is looked up again only when some
    // resource's watches were restarted
    let mut restarts_seen = store.watch_restarts();
    let floor = store.watch_floor(&res.group_resource());
    let filter = Filter {
        resource: res.group_resource(),
        namespace: req.namespace.clone().filter(|_| res.namespaced()),
        opts: req.opts.clone(),
        table: req.table.map(|inc| (res.clone(), inc)),
        metadata_only: req.metadata_only,
        protobuf: req.protobuf.then(|| res.clone()),
        served: res.crd_name.is_some().then(|| res.clone()),
        converted: Default::default(),
    };
    let opts = &req.opts;
    let deadline = watch_timeout(opts.timeout_seconds, ctx.config.min_request_timeout)
        .map(|t| Instant::now() + t);
    let rv = match opts.numeric_rv() {
        Ok(rv) => rv,
        Err(e) => {
            let _ = tx.send(filter.error(&e)).await;
            return;
        }
    };
    let send_initial = match opts.send_initial_events {
        Some(b) => b,
        None => rv.is_none(),
    };
    let config = &ctx.config;
    // A watch that asks for the initial events waits for a future resourceVersion, like the
    // cacher, then gives up with 504. A plain watch from a future resourceVersion opens and
    // sends nothing (no event, no bookmark) until the server gets there: the cacher blocks
    // only `sendInitialEvents` watches ("clients can wait for events", kube-apiserver v1.36
    // `waitUntilWatchCacheFreshAndForceAllEvents`).
    if let Some(n) = rv
        && opts.send_initial_events == Some(true)
        && n > store.revision()
        && !store.wait_for_revision(n, config.too_large_wait).await
    {
        let e = ApiError::too_large_resource_version(n, store.revision());
        let _ = tx.send(filter.error(&e)).await;
        return;
    }
    let mut cursor;
    if send_initial {
        let prefix = match &filter.namespace {
            Some(ns) => format!("{ns}/"),
            None => String::new(),
        };
        let (read_rv, objs) = match store.list(&filter.resource, None, &prefix, "") {
            Ok(r) => r,
            Err(e) => {
                let _ = tx
                    .send(filter.error(&ApiError::internal(&e.to_string())))
                    .await;
                return;
            }
        };
        cursor = read_rv;
        let mut buf = BytesMut::new();
        for chunk in objs.chunks(config.watch_batch.max(1)) {
            if filter.converts()
                && let Err(e) = filter.convert_batch(&ctx, chunk.to_vec()).await
            {
                let _ = tx.send(filter.error(&e)).await;
                return;
            }
            for o in chunk.iter().filter(|o| filter.selects(o)) {
                filter.emit_stored(&mut buf, "ADDED", o);
            }
            if !buf.is_empty() && tx.send(buf.split().freeze()).await.is_err() {
                return;
            }
        }
        // the end bookmark only for a watch that allows bookmarks (kube-apiserver v1.35 sends
        // the initial events without it otherwise)
        match ctx.faults.watch_list_fault(&res.group) {
            Some(WatchListFault::CloseBeforeEndBookmark)
                if opts.send_initial_events == Some(true) =>
            {
                return;
            }
            Some(WatchListFault::NoEndBookmark) => {}
            _ if opts.send_initial_events == Some(true) && opts.allow_watch_bookmarks => {
                filter.emit_bookmark(&mut buf, &bookmark_object(&res, cursor, true));
                if tx.send(buf.split().freeze()).await.is_err() {
                    return;
                }
            }
            _ => {}
        }
    } else {
        let start = rv.unwrap_or_else(|| store.revision());
        if let Err(ReadError::Compacted {
            requested,
            compacted,
        }) = store.check_watchable(&filter.resource, start)
        {
            let e = ApiError::resource_expired(format!(
                "too old resource version: {requested} ({compacted})"
            ));
            let _ = tx.send(filter.error(&e)).await;
            return;
        }
        cursor = start;
    }
    let mut restarted = || {
        let now = store.watch_restarts();
        now != restarts_seen && {
            restarts_seen = now;
            store.watch_floor(&filter.resource) != floor
        }
    };
    // When the next bookmark is due, as kube-apiserver's watch cache schedules them
    // (`cacheWatcher.nextBookmarkTime`): every bookmark interval, and once more 2 s before the
    // watch's deadline (`timeoutSeconds`), so that a client that watches again starts from a
    // recent resourceVersion; none once that moment has passed.
    let bookmark_every = config.bookmark_interval;
    let next_bookmark_after = |now: Instant| -> Option<Instant> {
        if !opts.allow_watch_bookmarks {
            return None;
        }
        let periodic = now + bookmark_every;
        let due = match deadline {
            Some(d) => periodic.min(d.checked_sub(Duration::from_secs(2))?),
            None => periodic,
        };
        // past (or now, when it was just sent): none any more
        (due > now).then_some(due)
    };
    let mut next_bookmark = next_bookmark_after(Instant::now());
    // Whether writes may have happened since the last drain.
    let mut dirty = true;
    loop {
        if ctx.shutdown.is_cancelled()
            || drop_rx.has_changed().unwrap_or(true)
            || deadline.is_some_and(|d| Instant::now() >= d)
            || restarted()
        {
            return;
        }
        // Paused: hold events back until resumed.
        while *paused_rx.borrow_and_update() {
            tokio::select! {
                _ = ctx.shutdown.cancelled() => return,
                _ = drop_rx.changed() => return,
                _ = sleep_until_opt(deadline) => return,
                _ = tx.closed() => return,
                r = paused_rx.changed() => if r.is_err() { return },
            }
        }
        let bookmark_due = next_bookmark.is_some_and(|t| Instant::now() >= t);
        if dirty || bookmark_due {
            dirty = false;
            rev_rx.borrow_and_update();
            loop {
                let (events, next) = match store.events_after(cursor, config.watch_batch.max(1)) {
                    Ok(r) => r,
                    // Fell behind compaction: close, as the cacher closes a slow watcher.
                    Err(_) => return,
                };
                if let Err(e) = filter.convert_events(&ctx, &events).await {
                    // as a watch that cannot decode what storage sent: an error, and the end
                    let _ = tx.send(filter.error(&e)).await;
                    return;
                }
                let mut buf = BytesMut::new();
                for ev in &events {
                    filter.convert(ev, &mut buf);
                }
                // never back: a watch from a future resourceVersion stays there
                cursor = next.max(cursor);
                if !buf.is_empty() && tx.send(buf.freeze()).await.is_err() {
                    return;
                }
                if events.len() < config.watch_batch.max(1) {
                    break;
                }
            }
            // no bookmark below the watch's own resourceVersion (the cacher sends none)
            if bookmark_due {
                if store.revision() >= cursor {
                    let mut buf = BytesMut::new();
                    filter.emit_bookmark(&mut buf, &bookmark_object(&res, cursor, false));
                    if tx.send(buf.freeze()).await.is_err() {
                        return;
                    }
                    ctx.bookmark_rv.send_modify(|r| *r = (*r).max(cursor));
                }
                next_bookmark = next_bookmark_after(Instant::now());
            }
            continue;
        }
        tokio::select! {
            _ = ctx.shutdown.cancelled() => return,
            _ = drop_rx.changed() => return,
            _ = sleep_until_opt(deadline) => return,
            _ = tx.closed() => return,
            _ = sleep_until_opt(next_bookmark) => {},
            r = rev_rx.changed() => {
                if r.is_err() {
                    return;
                }
                dirty = true;
            }
            r = paused_rx.changed() => if r.is_err() { return },
        }
    }
}

/// A watch's output: straight to the client until a watch delay is set (see
/// [`Faults::set_watch_delay`](crate::Faults::set_watch_delay)); from then on through a
/// forwarder that holds every chunk until `delay` after it was read, in order.
struct Out {
    tx: mpsc::Sender<Bytes>,
    delayed: Option<mpsc::Sender<(Instant, Bytes)>>,
    faults: Arc<crate::faults::FaultState>,
}

impl Out {
    async fn send(&mut self, chunk: Bytes) -> Result<(), ()> {
        let delay = self.faults.watch_delay();
        if self.delayed.is_none() && !delay.is_zero() {
            let (delayed, mut held) = mpsc::channel::<(Instant, Bytes)>(1024);
            let tx = self.tx.clone();
            tokio::spawn(async move {
                while let Some((due, chunk)) = held.recv().await {
                    tokio::time::sleep_until(due).await;
                    if tx.send(chunk).await.is_err() {
                        return;
                    }
                }
            });
            self.delayed = Some(delayed);
        }
        match &self.delayed {
            Some(delayed) => delayed
                .send((Instant::now() + delay, chunk))
                .await
                .map_err(drop),
            None => self.tx.send(chunk).await.map_err(drop),
        }
    }

    /// Resolves when the client has gone away.
    async fn closed(&self) {
        self.tx.closed().await;
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// How long a watch lasts: its `timeoutSeconds`, or, without one (or 0), a random moment
/// between `min_request_timeout` and twice that, as kube-apiserver's watch handler picks it
/// (`minRequestTimeout * (1 + rand)`); `None` (no end) when that is zero too.
fn watch_timeout(timeout_seconds: Option<u64>, min_request_timeout: Duration) -> Option<Duration> {
    match timeout_seconds {
        Some(s) if s > 0 => Some(Duration::from_secs(s)),
        _ if min_request_timeout.is_zero() => None,
        _ => Some(min_request_timeout.mul_f64(1.0 + rand::random::<f64>())),
    }
}
