//! The streaming list (watch-list): the initial state arrives as watch events.

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::lister_watcher::WatchStream;
use super::options::{ListOptions, ResourceVersionMatch};
use super::reflector_error::ReflectorError;
use super::run::Reflector;
use super::streamed_list::StreamedList;
use super::watch::{WatchContext, WatchEnd};
use crate::object::Object;
use crate::store::ReflectorStore;

impl<K: Object, S: ReflectorStore<K>> Reflector<K, S> {
    /// Streams the initial state into the store as a list taken in parts ([`StreamedList`])
    /// until the initial-events-end bookmark ends the list, and returns the still-open stream
    /// (client-go's `watchList`).
    ///
    /// `Ok(None)` when cancelled. An `Err` makes the caller fall back to list+watch.
    pub(crate) async fn watch_list(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Option<WatchStream<K>>, ReflectorError> {
        loop {
            tokio::task::consume_budget().await;
            if cancel.is_cancelled() {
                return Ok(None);
            }
            let options = ListOptions {
                resource_version: self.rewatch_resource_version(),
                resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
                allow_watch_bookmarks: true,
                send_initial_events: Some(true),
                timeout_seconds: Some(self.watch_timeout_seconds()),
                ..Default::default()
            };
            let start = Instant::now();
            self.lists
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // the end-bookmark wait covers opening too: a server that never answers is left
            // for list+watch like one that never sends the bookmark
            let no_answer = async {
                match self.end_bookmark_timeout {
                    Some(t) => tokio::time::sleep_until(start + t).await,
                    None => std::future::pending().await,
                }
            };
            let opened = tokio::select! {
                _ = cancel.cancelled() => return Ok(None),
                r = self.lister_watcher.watch(&options) => r,
                _ = no_answer => {
                    let timeout = self.end_bookmark_timeout.unwrap_or_default();
                    tracing::warn!(reflector = %self.name, ?timeout,
                        "the streaming list got no answer in time; the server may not support streaming lists");
                    return Err(ReflectorError::EndBookmarkTimeout { timeout });
                }
            };
            let mut stream = match opened {
                Ok(s) => s,
                Err(e) => {
                    let err = ReflectorError::Watch(e);
                    if self.retriable_with_side_effects(&err, cancel).await {
                        continue;
                    }
                    return Err(err);
                }
            };
            let mut bookmark_rv = String::new();
            // the initial events go to the store as a list taken in parts while they arrive
            let list = StreamedList::begin(&self.store);
            let ctx = WatchContext {
                start,
                exit_on_initial_events_end: true,
                deadline: self.end_bookmark_timeout.map(|t| (start + t, t)),
                close_by: None,
                cancel,
            };
            let end = self
                .handle_watch(&mut stream, &list, ctx, &mut |rv, besides_added| {
                    if besides_added {
                        bookmark_rv = rv.to_owned();
                    }
                })
                .await;
            let end = match end {
                WatchEnd::InitialEventsEnd => Ok(list),
                other => {
                    list.abort();
                    Err(other)
                }
            };
            match end {
                Ok(list) => {
                    // the stream carries on as the watch: counted as one, as after a list
                    self.watches
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    self.set_resource_version_unavailable(false);
                    let store_error = |e: S::Error| ReflectorError::Store {
                        operation: "replace",
                        source: Box::new(e),
                    };
                    list.finish(bookmark_rv.clone()).map_err(store_error)?;
                    self.set_last_sync_resource_version(&bookmark_rv);
                    self.listed_now();
                    return Ok(Some(stream));
                }
                Err(WatchEnd::Closed) => {
                    tracing::debug!(reflector = %self.name,
                        "streaming list closed before its initial-events-end bookmark; opening a new one after a backoff");
                    drop(stream);
                    // a server that keeps closing early is not asked again in a tight loop
                    if !self.backoff_wait(cancel).await {
                        return Ok(None);
                    }
                    continue;
                }
                Err(WatchEnd::Broken(e)) => {
                    tracing::warn!(reflector = %self.name, error = %e,
                        "streaming list broke before its initial-events-end bookmark; opening a new one after a backoff");
                    drop(stream);
                    if !self.backoff_wait(cancel).await {
                        return Ok(None);
                    }
                    continue;
                }
                // (InitialEventsEnd is the `Ok` above)
                Err(WatchEnd::Stopped | WatchEnd::InitialEventsEnd) => return Ok(None),
                Err(WatchEnd::Failed(err)) => {
                    drop(stream);
                    if matches!(err, ReflectorError::EndBookmarkTimeout { .. }) {
                        tracing::warn!(reflector = %self.name, error = %err,
                            "no initial-events-end bookmark in time; the server may not support streaming lists");
                        return Err(err);
                    }
                    if self.retriable_with_side_effects(&err, cancel).await {
                        continue;
                    }
                    return Err(err);
                }
            }
        }
    }

    /// 429 / refused connection: back off, retry. 410 / too large: retry at `""`.
    async fn retriable_with_side_effects(
        &self,
        err: &ReflectorError,
        cancel: &CancellationToken,
    ) -> bool {
        let Some(e) = err.list_watch_error() else {
            return false;
        };
        if e.is_watch_retriable() {
            tracing::debug!(reflector = %self.name, error = %e, "streaming list failed; backing off");
            self.backoff_wait(cancel).await;
            return true;
        }
        if e.is_expired() || e.is_too_large_resource_version() {
            // Already asked at "" (the most recent version): a server that still answers 410 is
            // not retried at once, in a loop; the cycle falls back to list+watch instead.
            if self.state.lock().resource_version_unavailable {
                return false;
            }
            self.set_resource_version_unavailable(true);
            return true;
        }
        false
    }
}
