//! The Reflector: its state, `run`, one `list_and_watch` cycle and the list half.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::backoff::Backoff;
use super::error::ListWatchError;
use super::hooks::{ShouldResyncFn, WatchErrorHandler};
use super::lister_watcher::ListerWatcher;
use super::options::ListOptions;
use super::pager::{DEFAULT_PAGE_SIZE, ListSink, list_pages};
use super::reflector_error::ReflectorError;
use super::streaming_memory::{StreamingDecision, WatchListEnd};
use crate::object::{Object, meta_namespace_key};
use crate::store::ReflectorStore;

#[derive(Debug, Default)]
pub(crate) struct SyncState {
    pub(crate) last_sync_resource_version: String,
    /// The last synced resource version was refused (410 / too large): list at `""` next.
    pub(crate) resource_version_unavailable: bool,
    /// The first list (at `"0"`) came back paginated: the watch cache is off, keep paginating.
    pub(crate) paginated_result: bool,
    /// When the last watch event or bookmark arrived, or the last list succeeded (the watch
    /// goes on from it), whichever is later.
    pub(crate) last_watch_activity: Option<Instant>,
    /// When the last list (or streaming list) succeeded.
    pub(crate) last_list: Option<Instant>,
}

/// Keeps a store in sync with the API server: lists, then watches, forever (client-go's
/// `Reflector`).
///
/// # Protocol (client-go's `ListAndWatch`)
///
/// * **List.** The first list asks for resourceVersion `"0"` with `limit=500` (real servers
///   serve `"0"` from the watch cache and ignore the limit); a relist asks for the last synced
///   resourceVersion, unpaginated unless a page size was set or the first list came back
///   paginated. The store gets the items as they arrive
///   ([`replace_begin`](ReflectorStore::replace_begin), then
///   [`replace_part`](ReflectorStore::replace_part) page by page, and within a page batch by
///   batch as the ListerWatcher delivers them while the response downloads), then
///   [`replace_end`](ReflectorStore::replace_end) with the list's resourceVersion; a store
///   that wants the list whole is wrapped in [`ReplaceOnce`](crate::store::ReplaceOnce).
///   **Deliberate difference from client-go:** client-go holds the whole new list before
///   touching the queue, so a relist briefly holds two copies of every object; taking it in
///   parts keeps about one. The price: a list that fails midway has already queued the objects
///   it delivered (as `Replaced` deltas of real, newer states); deletions are detected only by
///   a list that completes. A `410 Expired` or
///   "too large resource version" answer marks that version unavailable and lists again at `""`
///   at once; an expired continue token causes one full list at the original version.
/// * **Watch.** From the list's resourceVersion, always with bookmarks, with a random
///   `timeoutSeconds` in `[5 min, 10 min]`; a watch still open 30 s past its timeout (a
///   silently dead or stalled connection) is dropped and reopened at once (our addition).
///   Bookmarks advance the resourceVersion (and call
///   [`update_resource_version`](ReflectorStore::update_resource_version)). A watch that ends
///   normally is reopened from the last resourceVersion without a relist; 429 and refused
///   connections when opening a watch are retried after a backoff without a relist; a watch that
///   ends with an internal error (500) is reopened at once for up to
///   `max_internal_error_retry_duration`; anything else (410 included) ends the cycle, and the
///   next cycle relists at the last resourceVersion. A watch that closes within a second
///   without events is an error ([`ReflectorError::VeryShortWatch`]).
/// * **Garbage.** An event that does not decode, or an object without a name, is logged and
///   skipped; it never ends the watch and never touches the store. A stream that breaks
///   (connection reset, a body cut inside an event) counts as a closed watch, as in client-go
///   (a probable EOF closes its watch): reopened at once from the last version, no relist;
///   one that breaks within a second without an event is a very short watch. One object over the source's size limit
///   ([`ListWatchError::TooLarge`](super::ListWatchError::TooLarge)) ends the watch or list
///   with that error: the cycle ends, the Reflector backs off and relists; the store keeps
///   everything it had (a failed list deletes nothing).
/// * **Resync.** Every resync period, if `should_resync` says so, [`resync`](ReflectorStore::resync).
/// * **Between cycles.** The error goes to the watch error handler, then the Reflector waits
///   an exponential backoff (800 ms doubling to 30 s, jittered, reset after 2 quiet minutes).
/// * **Streaming list** (the default where the source supports it, see
///   [`InitialListMode`](super::InitialListMode)):
///   one watch with `sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan`, bookmarks;
///   the initial events go to the store as a list taken in parts while they arrive
///   ([`replace_begin`](ReflectorStore::replace_begin), a
///   [`replace_part`](ReflectorStore::replace_part) every 128 objects), ended at the bookmark
///   annotated `k8s.io/initial-events-end: "true"` with its resourceVersion, and the same
///   stream carries on as the watch (client-go collects them in a temporary store and replaces
///   the store with it at the bookmark: the same result, without holding the new list whole).
///   A stream that ends before that bookmark aborts the list
///   ([`replace_abort`](ReflectorStore::replace_abort)) and is reopened after a backoff; an error (the server does not support
///   it, or the bookmark does not come within `end_bookmark_timeout`) falls back to
///   list+watch. Streams that end without the bookmark count against the server's attempts
///   ([`StreamingListFallback`](super::StreamingListFallback)): once they are spent the
///   Reflector lists, and later cycles list at once while the server is remembered.
/// * **Retry-After.** A 429 or 5xx carrying `Retry-After` (or `retryAfterSeconds`) makes the
///   next request wait that long (at most [`MAX_RETRY_AFTER`]), whichever the request was: a
///   list, a streaming list or a watch. Up to [`RETRIES_AFTER_ASKED`] such waits in a row
///   leave the exponential backoff alone (client-go's rest client retries them inside the
///   request); after that each is a backoff step, and at least the `Retry-After`.
///
/// # Sharing
///
/// `Reflector` is `Send + Sync`: run it with `run(&self, token)` on one task while other tasks
/// read [`last_sync_resource_version`](Self::last_sync_resource_version).
///
/// # Cancellation
///
/// After the token is cancelled no new list or watch starts, the open watch is dropped (which
/// closes it) and `run` returns promptly.
pub struct Reflector<K, S> {
    pub(crate) name: String,
    pub(crate) lister_watcher: Arc<dyn ListerWatcher<K>>,
    pub(crate) store: S,
    pub(crate) resync_period: Option<Duration>,
    pub(crate) should_resync: Option<ShouldResyncFn>,
    pub(crate) page_size: Option<u32>,
    pub(crate) watch_error_handler: WatchErrorHandler,
    pub(crate) use_watch_list: bool,
    pub(crate) end_bookmark_timeout: Option<Duration>,
    pub(crate) min_watch_timeout: Duration,
    pub(crate) max_watch_timeout: Duration,
    pub(crate) max_internal_error_retry_duration: Duration,
    pub(crate) backoff: Mutex<Backoff>,
    /// Waits in a row that were a server's `Retry-After` alone (see [`RETRIES_AFTER_ASKED`]);
    /// back to zero when a request succeeds or the backoff takes a step.
    pub(crate) retry_afters_in_a_row: std::sync::atomic::AtomicU32,
    pub(crate) state: Mutex<SyncState>,
    /// Lists (streaming lists included) and watches started, for metrics (a streaming list
    /// that reaches its end bookmark carries on as a watch and counts as both).
    pub(crate) lists: std::sync::atomic::AtomicU64,
    pub(crate) watches: std::sync::atomic::AtomicU64,
    /// A resume from a snapshot's resourceVersion, planned or under way.
    pub(crate) resume: Mutex<super::hooks::ResumeState>,
    pub(crate) on_resume: Option<super::hooks::ResumeHook>,
    /// This Reflector's entry in the streaming-list memory (its API group/version).
    pub(crate) streaming_list_server: String,
    /// Streaming lists allowed in a row without their end bookmark.
    pub(crate) streaming_list_attempts: u32,
    /// How long a server that spent them is sent lists instead.
    pub(crate) streaming_list_fallback: Duration,
    pub(crate) streaming_list_memory: super::StreamingListMemory,
}

impl<K: Object, S: ReflectorStore<K>> Reflector<K, S> {
    /// How many lists (streaming lists included) and watches this Reflector has started; a
    /// streaming list that reaches its end bookmark carries on as the watch and counts as both,
    /// so the watch counts are the same whichever way the Reflector lists.
    pub fn list_watch_counts(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.lists.load(Relaxed), self.watches.load(Relaxed))
    }

    /// The name used in logs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The store this Reflector fills.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The resourceVersion of the last list, bookmark or event applied to the store
    /// (`""` before the first list).
    pub fn last_sync_resource_version(&self) -> String {
        self.state.lock().last_sync_resource_version.clone()
    }

    /// How long since the last watch event or bookmark arrived, or since the last successful
    /// list if that was later (the watch carries on from it); `None` before the first list.
    /// A healthy watch on a real API server gets a bookmark about every minute even when
    /// nothing changes, so a figure that keeps growing well past that means a watch that
    /// stopped delivering.
    pub fn since_last_watch_activity(&self) -> Option<Duration> {
        let at = self.state.lock().last_watch_activity?;
        Some(Instant::now().saturating_duration_since(at))
    }

    /// How long since the last list (or streaming list) succeeded; `None` before the first.
    pub fn since_last_list(&self) -> Option<Duration> {
        let at = self.state.lock().last_list?;
        Some(Instant::now().saturating_duration_since(at))
    }

    /// A list (or streaming list) succeeded now.
    pub(crate) fn listed_now(&self) {
        self.request_succeeded();
        let now = Instant::now();
        let mut s = self.state.lock();
        s.last_list = Some(now);
        s.last_watch_activity = Some(now);
    }

    pub(crate) fn set_last_sync_resource_version(&self, rv: &str) {
        self.state.lock().last_sync_resource_version = rv.to_owned();
    }

    pub(crate) fn set_resource_version_unavailable(&self, unavailable: bool) {
        self.state.lock().resource_version_unavailable = unavailable;
    }

    /// The resourceVersion a list asks for: `""` after a 410, `"0"` before the first list, the
    /// last synced one otherwise (client-go's `relistResourceVersion`).
    pub(crate) fn relist_resource_version(&self) -> String {
        let s = self.state.lock();
        if s.resource_version_unavailable {
            String::new()
        } else if s.last_sync_resource_version.is_empty() {
            "0".to_owned()
        } else {
            s.last_sync_resource_version.clone()
        }
    }

    /// The resourceVersion a streaming list asks for (client-go's `rewatchResourceVersion`).
    pub(crate) fn rewatch_resource_version(&self) -> String {
        let s = self.state.lock();
        if s.resource_version_unavailable {
            String::new()
        } else {
            s.last_sync_resource_version.clone()
        }
    }

    /// A random watch timeout in `[min, max]` seconds.
    pub(crate) fn watch_timeout_seconds(&self) -> u32 {
        let min = self.min_watch_timeout.as_secs();
        let max = self.max_watch_timeout.as_secs().max(min);
        let secs = min + (rand::random::<f64>() * (max - min) as f64) as u64;
        u32::try_from(secs).unwrap_or(u32::MAX)
    }

    /// Waits one backoff delay; false when cancelled first.
    pub(crate) async fn backoff_wait(&self, cancel: &CancellationToken) -> bool {
        self.backoff_wait_after(None, cancel).await
    }

    /// Waits after `error`, the answer to a request (a list, a streaming list or a watch
    /// refused when opened): the server's `Retry-After` alone (capped at [`MAX_RETRY_AFTER`])
    /// for up to [`RETRIES_AFTER_ASKED`] such waits in a row, as client-go's rest client
    /// retries the request; otherwise one backoff delay, and at least that `Retry-After`. False
    /// when cancelled first.
    pub(crate) async fn backoff_wait_after(
        &self,
        error: Option<&ListWatchError>,
        cancel: &CancellationToken,
    ) -> bool {
        self.wait_after(error, true, cancel).await
    }

    /// Waits after `error`, which an open stream sent (an ERROR event): one backoff delay, and
    /// at least the `Retry-After` it carried (client-go's Reflector backs off; its rest client
    /// never saw it). False when cancelled first.
    pub(crate) async fn backoff_step_after(
        &self,
        error: Option<&ListWatchError>,
        cancel: &CancellationToken,
    ) -> bool {
        self.wait_after(error, false, cancel).await
    }

    /// Waits after a cycle or a streaming list ended with `error`: as the answer to a request
    /// unless a stream sent it.
    pub(crate) async fn wait_after_error(
        &self,
        error: Option<&ReflectorError>,
        cancel: &CancellationToken,
    ) -> bool {
        let answered = !matches!(error, Some(ReflectorError::WatchEnded(_)));
        let error = error.and_then(ReflectorError::list_watch_error);
        self.wait_after(error, answered, cancel).await
    }

    async fn wait_after(
        &self,
        error: Option<&ListWatchError>,
        answered: bool,
        cancel: &CancellationToken,
    ) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let asked = error.and_then(retry_after);
        let delay = match asked {
            Some(wait)
                if answered
                    && self.retry_afters_in_a_row.fetch_add(1, Relaxed) < RETRIES_AFTER_ASKED =>
            {
                tracing::debug!(reflector = %self.name, retry_after = ?wait,
                    "waiting as long as the server asked before the next request");
                wait
            }
            _ => {
                self.retry_afters_in_a_row.store(0, Relaxed);
                let backoff = self.backoff.lock().next_delay(Instant::now());
                asked.map_or(backoff, |wait| wait.max(backoff))
            }
        };
        tokio::select! {
            _ = cancel.cancelled() => false,
            _ = tokio::time::sleep(delay) => true,
        }
    }

    /// A list or watch request succeeded: the next `Retry-After` starts a new run of retries.
    pub(crate) fn request_succeeded(&self) {
        self.retry_afters_in_a_row
            .store(0, std::sync::atomic::Ordering::Relaxed);
    }

    /// Runs list-and-watch cycles until `cancel` fires (client-go's `Run`): each error goes to
    /// the watch error handler, and every cycle is followed by a backoff delay.
    pub async fn run(&self, cancel: CancellationToken) {
        tracing::debug!(reflector = %self.name, "starting reflector");
        while !cancel.is_cancelled() {
            let mut ended_by = None;
            if let Err(e) = self.list_and_watch(&cancel).await
                && !cancel.is_cancelled()
            {
                (self.watch_error_handler)(&e);
                ended_by = Some(e);
            }
            if !self.wait_after_error(ended_by.as_ref(), &cancel).await {
                break;
            }
        }
        tracing::debug!(reflector = %self.name, "stopping reflector");
    }

    /// One cycle: list (or stream a list), then watch until the watch ends with an error that
    /// needs a relist, or `cancel` fires (client-go's `ListAndWatch`).
    ///
    /// Returns `Ok(())` when cancelled.
    ///
    /// # Errors
    /// Why the cycle ended; see [`ReflectorError`].
    pub async fn list_and_watch(&self, cancel: &CancellationToken) -> Result<(), ReflectorError> {
        tracing::debug!(reflector = %self.name, "listing and watching");
        if self.resume_if_planned(cancel).await? {
            return Ok(());
        }
        let mut stream = None;
        let mut fall_back_to_list = !self.use_watch_list;
        if self.use_watch_list {
            let end = match self.streaming_decision() {
                StreamingDecision::Stream(permit) => self.watch_list(permit, cancel).await,
                StreamingDecision::Remembered => {
                    tracing::debug!(reflector = %self.name, server = %self.streaming_list_server,
                        "this server does not finish streaming lists; listing");
                    WatchListEnd::FallBack(None)
                }
                StreamingDecision::Spent => {
                    tracing::debug!(reflector = %self.name, server = %self.streaming_list_server,
                        "this server's streaming-list attempts are spent; listing");
                    WatchListEnd::FallBack(None)
                }
            };
            match end {
                WatchListEnd::Streamed(s) => stream = Some(s),
                WatchListEnd::Cancelled => return Ok(()),
                WatchListEnd::FallBack(None) => fall_back_to_list = true,
                WatchListEnd::FallBack(Some(e)) => {
                    let unsupported = e.list_watch_error().is_some_and(|e| e.is_not_supported());
                    tracing::info!(reflector = %self.name, error = %e, server_does_not_support_it = unsupported,
                        "streaming list failed; falling back to list+watch");
                    fall_back_to_list = true;
                }
            }
        }
        if fall_back_to_list {
            self.list(cancel).await?;
            if cancel.is_cancelled() {
                return Ok(());
            }
        }
        tracing::debug!(reflector = %self.name, "caches populated");
        self.watch_with_resync(stream, cancel).await
    }

    /// The list half (client-go's `Reflector.list`): every page, handed to the store in parts
    /// as it downloads (see the type's docs), then `replace_end`.
    async fn list(&self, cancel: &CancellationToken) -> Result<(), ReflectorError> {
        self.lists
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let options = ListOptions {
            resource_version: self.relist_resource_version(),
            ..Default::default()
        };
        let page_size = match (self.page_size, self.state.lock().paginated_result) {
            (Some(size), _) => Some(size),
            (None, true) => Some(DEFAULT_PAGE_SIZE),
            (None, false)
                if !options.resource_version.is_empty() && options.resource_version != "0" =>
            {
                None
            }
            (None, false) => Some(DEFAULT_PAGE_SIZE),
        };
        let requested_rv = options.resource_version.clone();
        let lw = self.lister_watcher.as_ref();
        let mut sink = StoreSink {
            name: &self.name,
            store: &self.store,
            error: None,
        };
        sink.restart();
        let result = tokio::select! {
            _ = cancel.cancelled() => None,
            r = async {
                match list_pages(lw, options, page_size, &mut sink).await {
                    Err(e) if e.is_expired() || e.is_too_large_resource_version() => {
                        tracing::debug!(reflector = %self.name, error = %e,
                            "resource version unavailable; listing at the most recent version");
                        self.set_resource_version_unavailable(true);
                        let fresh = ListOptions { resource_version: self.relist_resource_version(), ..Default::default() };
                        sink.restart();
                        list_pages(lw, fresh, page_size, &mut sink).await
                    }
                    other => other,
                }
            } => Some(r),
        };
        let list = match result {
            None => {
                self.store.replace_abort();
                return Ok(());
            }
            Some(Err(e)) => {
                self.store.replace_abort();
                return Err(ReflectorError::List(e));
            }
            Some(Ok(list)) => list,
        };
        {
            let mut s = self.state.lock();
            if requested_rv == "0" && list.paginated {
                s.paginated_result = true;
            }
            s.resource_version_unavailable = false;
        }
        let store_error = |e: S::Error| ReflectorError::Store {
            operation: "replace",
            source: Box::new(e),
        };
        if let Some(e) = sink.error.take() {
            self.store.replace_abort();
            return Err(store_error(e));
        }
        self.store
            .replace_end(list.resource_version.clone())
            .map_err(store_error)?;
        self.set_last_sync_resource_version(&list.resource_version);
        self.listed_now();
        Ok(())
    }
}

/// The most a Reflector waits because a server's `Retry-After` said so: a hint, not an order,
/// so a broken proxy asking for an hour does not leave the cache an hour stale (client-go's
/// rest client waits it out uncapped).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How many answers in a row carrying `Retry-After` (a 429, or a 5xx) the Reflector waits out
/// as the server asked, without taking a step of its exponential backoff: client-go's rest
/// client retries such a request itself up to 10 times (`maxRetries`) before the Reflector
/// sees the error and backs off. After that many, each wait is a backoff step (and at least
/// the `Retry-After`). kinformer's source leaves every retry to the Reflector, so a 429 still
/// reaches the watch error handler, where client-go's would not until its retries are spent.
pub const RETRIES_AFTER_ASKED: u32 = 10;

/// How long the server asked the client to wait (`Retry-After`, or a `Status`'s
/// `retryAfterSeconds`) with a 429 or a 5xx, capped at [`MAX_RETRY_AFTER`] (client-go's rest
/// client honours it on the same codes).
pub(crate) fn retry_after(error: &ListWatchError) -> Option<Duration> {
    let status = error.status()?;
    if status.code != 429 && status.code < 500 && !error.is_too_many_requests() {
        return None;
    }
    let seconds = status.retry_after_seconds.filter(|s| *s > 0)?;
    Some(Duration::from_secs(u64::from(seconds)).min(MAX_RETRY_AFTER))
}

/// Where a Reflector's list goes: straight into the store, part by part. Objects without a
/// name are logged and skipped.
struct StoreSink<'a, K, S: ReflectorStore<K>> {
    name: &'a str,
    store: &'a S,
    /// The first failed part (the rest of the list is then dropped, and the replace aborted).
    error: Option<S::Error>,
}

impl<K: Object, S: ReflectorStore<K>> ListSink<K> for StoreSink<'_, K, S> {
    fn restart(&mut self) {
        self.store.replace_begin();
    }

    fn deliver(&mut self, mut items: Vec<Arc<K>>) {
        items.retain(|obj| match meta_namespace_key(&**obj) {
            Ok(_) => true,
            Err(e) => {
                tracing::error!(reflector = %self.name, error = %e, "skipping a listed object without a name");
                false
            }
        });
        if self.error.is_none()
            && let Err(e) = self.store.replace_part(items)
        {
            self.error = Some(e);
        }
    }
}
