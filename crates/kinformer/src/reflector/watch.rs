//! The watch half of a Reflector cycle: reopening watches, applying events, the resync timer.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::backoff::RetryWithDeadline;
use super::error::{ListWatchError, TransportErrorKind};
use super::lister_watcher::{INITIAL_EVENTS_END_ANNOTATION, WatchEvent, WatchStream};
use super::options::ListOptions;
use super::reflector_error::ReflectorError;
use super::run::Reflector;
use crate::object::{Object, meta_namespace_key, resource_version};
use crate::store::ReflectorStore;

/// How long past its `timeoutSeconds` a watch may stay open before the Reflector drops it.
pub(crate) const WATCH_CLOSE_SLACK: Duration = Duration::from_secs(30);

/// How applying one watch stream ended.
pub(crate) enum WatchEnd {
    /// The server closed the stream.
    Closed,
    /// The stream broke: the connection failed, was cut inside an event, or went silent past
    /// the watch's timeout. Reopened at once from the last resourceVersion, as a closed watch
    /// is (a stream that breaks within a second without an event is a
    /// [`ReflectorError::VeryShortWatch`] instead).
    Broken(ListWatchError),
    /// Cancelled.
    Stopped,
    /// The initial-events-end bookmark arrived (streaming list only); the stream is still open.
    InitialEventsEnd,
    /// An error ended the stream.
    Failed(ReflectorError),
}

/// What `handle_watch` needs besides the stream and the sink.
pub(crate) struct WatchContext<'a> {
    pub(crate) start: Instant,
    pub(crate) exit_on_initial_events_end: bool,
    pub(crate) deadline: Option<(Instant, Duration)>,
    /// When the server should have closed the watch (its `timeoutSeconds` plus slack); past
    /// this the stream is dropped and treated as closed, so a silently dead connection does not
    /// hang the Reflector.
    pub(crate) close_by: Option<Instant>,
    pub(crate) cancel: &'a CancellationToken,
}

impl<K: Object, S: ReflectorStore<K>> Reflector<K, S> {
    /// Watches with the resync timer running alongside (client-go's `watchWithResync`).
    pub(crate) async fn watch_with_resync(
        &self,
        stream: Option<WatchStream<K>>,
        cancel: &CancellationToken,
    ) -> Result<(), ReflectorError> {
        tokio::select! {
            r = self.watch(stream, cancel) => r,
            e = self.resync_loop() => Err(e),
        }
    }

    /// Fires every resync period; returns only when the store refuses a resync.
    async fn resync_loop(&self) -> ReflectorError {
        let Some(period) = self.resync_period else {
            return std::future::pending().await;
        };
        loop {
            tokio::time::sleep(period).await;
            if self.should_resync.as_ref().is_none_or(|f| f()) {
                tracing::trace!(reflector = %self.name, "forcing resync");
                if let Err(e) = self.store.resync() {
                    return ReflectorError::Store {
                        operation: "resync",
                        source: Box::new(e),
                    };
                }
            }
        }
    }

    /// Opens watches one after another until one ends in a way that needs a relist
    /// (client-go's `Reflector.watch`).
    async fn watch(
        &self,
        mut stream: Option<WatchStream<K>>,
        cancel: &CancellationToken,
    ) -> Result<(), ReflectorError> {
        let mut retry = RetryWithDeadline::new(
            self.max_internal_error_retry_duration,
            Duration::from_secs(60),
        );
        loop {
            // a server that closes every watch at once must not starve the runtime
            tokio::task::consume_budget().await;
            if cancel.is_cancelled() {
                return Ok(());
            }
            let start = Instant::now();
            let mut propagate_rv_from_start = true;
            let mut timeout_seconds = None;
            let mut w = match stream.take() {
                Some(w) => w,
                None => {
                    let options = ListOptions {
                        resource_version: self.last_sync_resource_version(),
                        timeout_seconds: Some(self.watch_timeout_seconds()),
                        allow_watch_bookmarks: true,
                        ..Default::default()
                    };
                    if options.resource_version.is_empty() || options.resource_version == "0" {
                        propagate_rv_from_start = false;
                    }
                    timeout_seconds = options.timeout_seconds;
                    self.watches
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let opened = tokio::select! {
                        _ = cancel.cancelled() => return Ok(()),
                        r = self.lister_watcher.watch(&options) => r,
                    };
                    match opened {
                        Ok(w) => {
                            self.request_succeeded();
                            self.resume_watch_opened();
                            w
                        }
                        Err(e) if e.is_watch_retriable() => {
                            tracing::debug!(reflector = %self.name, error = %e, "watch failed; backing off");
                            if !self.backoff_wait_after(Some(&e), cancel).await {
                                return Ok(());
                            }
                            continue;
                        }
                        Err(e) => return Err(ReflectorError::Watch(e)),
                    }
                }
            };
            let ctx = WatchContext {
                start,
                exit_on_initial_events_end: false,
                deadline: None,
                close_by: timeout_seconds
                    .map(|t| start + Duration::from_secs(u64::from(t)) + WATCH_CLOSE_SLACK),
                cancel,
            };
            let store = &self.store;
            let end = self
                .handle_watch(&mut w, store, ctx, &mut |rv, besides_added| {
                    self.resume_event_seen();
                    if propagate_rv_from_start || besides_added {
                        self.set_last_sync_resource_version(rv);
                        store.update_resource_version(rv);
                    }
                })
                .await;
            drop(w);
            let internal = matches!(&end, WatchEnd::Failed(e)
                if e.list_watch_error().is_some_and(|e| e.is_internal_error()));
            retry.after(internal, Instant::now());
            match end {
                WatchEnd::Closed | WatchEnd::InitialEventsEnd => continue,
                WatchEnd::Broken(e) => {
                    // client-go: a stream that breaks with a probable EOF (reset, cut, closed)
                    // closes the watch's channel, and the Reflector watches again at once from
                    // the last version. A backoff here would add up: it resets only after two
                    // quiet minutes, so a connection cut every minute (a load balancer, a
                    // restarting server) left the cache blind for up to a minute each time.
                    tracing::info!(reflector = %self.name, error = %e,
                        "watch stream broke; watching again from the last version");
                    continue;
                }
                WatchEnd::Stopped => return Ok(()),
                WatchEnd::Failed(e) => {
                    let lwe = e.list_watch_error();
                    if lwe.is_some_and(|e| e.is_expired()) {
                        tracing::debug!(reflector = %self.name, error = %e, "watch closed");
                    } else if lwe.is_some_and(|e| e.is_too_many_requests()) {
                        tracing::debug!(reflector = %self.name, "watch returned 429; backing off");
                        if !self.backoff_step_after(lwe, cancel).await {
                            return Ok(());
                        }
                        continue;
                    } else if internal && retry.should_retry(Instant::now()) {
                        tracing::debug!(reflector = %self.name, error = %e, "retrying watch after internal error");
                        continue;
                    } else {
                        tracing::warn!(reflector = %self.name, error = %e, "watch ended with error");
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Applies one watch stream's events to `sink` (client-go's `handleAnyWatch`).
    ///
    /// `on_rv(rv, event_besides_added)` is called after every applied event; a bookmark's
    /// version also goes to [`ReflectorStore::bookmark`] (client-go hands its stores only
    /// BOOKMARK events as bookmarks).
    pub(crate) async fn handle_watch<T: ReflectorStore<K> + ?Sized>(
        &self,
        w: &mut WatchStream<K>,
        sink: &T,
        ctx: WatchContext<'_>,
        on_rv: &mut (dyn FnMut(&str, bool) + Send),
    ) -> WatchEnd {
        let mut besides_added = false;
        let mut initial_events_end = false;
        let mut count = 0usize;
        let mut broken = None;
        let deadline = async {
            match ctx.deadline {
                Some((at, _)) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(deadline);
        let close_by = async {
            match ctx.close_by {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(close_by);
        loop {
            let item = tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => return WatchEnd::Stopped,
                item = async {
                    sink.wait_for_room().await;
                    w.next().await
                } => item,
                _ = &mut deadline => {
                    let timeout = ctx.deadline.map(|(_, t)| t).unwrap_or_default();
                    return WatchEnd::Failed(ReflectorError::EndBookmarkTimeout { timeout });
                }
                _ = &mut close_by => {
                    return WatchEnd::Broken(ListWatchError::Transport {
                        kind: TransportErrorKind::Stalled,
                        message: format!(
                            "the watch was still open {}s past its timeout; dropping it",
                            WATCH_CLOSE_SLACK.as_secs()
                        ),
                    });
                }
            };
            let Some(item) = item else { break };
            let event = match item {
                Ok(event) => event,
                Err(e) if e.is_decode() => {
                    tracing::error!(reflector = %self.name, error = %e, "skipping a watch event that could not be decoded");
                    continue;
                }
                Err(e @ ListWatchError::Transport { .. }) => {
                    // client-go's StreamWatcher stops on a broken stream and the Reflector sees
                    // a closed watch: the same ending as a close below (a very short one
                    // included), only logged apart.
                    broken = Some(e);
                    break;
                }
                Err(e) => return WatchEnd::Failed(ReflectorError::WatchEnded(e)),
            };
            let is_bookmark = matches!(event, WatchEvent::Bookmark { .. });
            let rv = match event {
                WatchEvent::Error(status) => {
                    return WatchEnd::Failed(ReflectorError::WatchEnded(status.into()));
                }
                WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj)
                    if meta_namespace_key(&obj).is_err() =>
                {
                    tracing::error!(reflector = %self.name, "skipping a watch event whose object has no name");
                    continue;
                }
                WatchEvent::Added(obj) => {
                    let rv = resource_version(&obj).to_owned();
                    if let Err(e) = sink.add(Arc::new(obj)) {
                        tracing::error!(reflector = %self.name, error = %e, "unable to add watch event object to store");
                    }
                    rv
                }
                WatchEvent::Modified(obj) => {
                    besides_added = true;
                    let rv = resource_version(&obj).to_owned();
                    if let Err(e) = sink.update(Arc::new(obj)) {
                        tracing::error!(reflector = %self.name, error = %e, "unable to update watch event object in store");
                    }
                    rv
                }
                WatchEvent::Deleted(obj) => {
                    besides_added = true;
                    let rv = resource_version(&obj).to_owned();
                    if let Err(e) = sink.delete(Arc::new(obj)) {
                        tracing::error!(reflector = %self.name, error = %e, "unable to delete watch event object from store");
                    }
                    rv
                }
                WatchEvent::Bookmark {
                    resource_version,
                    annotations,
                } => {
                    besides_added = true;
                    if annotations
                        .get(INITIAL_EVENTS_END_ANNOTATION)
                        .is_some_and(|v| v == "true")
                    {
                        initial_events_end = true;
                    }
                    resource_version
                }
            };
            if !rv.is_empty() {
                on_rv(&rv, besides_added);
                if is_bookmark {
                    sink.bookmark(&rv);
                }
            }
            self.state.lock().last_watch_activity = Some(Instant::now());
            count += 1;
            if ctx.exit_on_initial_events_end && initial_events_end {
                tracing::debug!(reflector = %self.name, items = count, elapsed = ?ctx.start.elapsed(),
                    "initial events end bookmark received");
                return WatchEnd::InitialEventsEnd;
            }
        }
        if ctx.start.elapsed() < Duration::from_secs(1) && count == 0 {
            return WatchEnd::Failed(ReflectorError::VeryShortWatch {
                name: self.name.clone(),
            });
        }
        if let Some(e) = broken {
            return WatchEnd::Broken(e);
        }
        tracing::debug!(reflector = %self.name, items = count, "watch closed");
        WatchEnd::Closed
    }
}
