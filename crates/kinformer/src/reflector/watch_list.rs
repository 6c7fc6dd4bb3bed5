//! The streaming list (watch-list): the initial state arrives as watch events.

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::options::{ListOptions, ResourceVersionMatch};
use super::reflector_error::ReflectorError;
use super::run::Reflector;
use super::streamed_list::StreamedList;
use super::streaming_memory::{StreamingDecision, StreamingOutcome, StreamingPermit, WatchListEnd};
use super::watch::{WatchContext, WatchEnd};
use crate::object::Object;
use crate::store::ReflectorStore;

impl<K: Object, S: ReflectorStore<K>> Reflector<K, S> {
    /// Whether this cycle may stream its list, as the streaming-list memory says.
    pub(crate) fn streaming_decision(&self) -> StreamingDecision {
        self.streaming_list_memory.decide(
            &self.name,
            &self.streaming_list_server,
            self.streaming_list_attempts,
        )
    }

    /// Records how one streaming list ended; true when its server is now remembered as not
    /// finishing streaming lists.
    fn streaming_outcome(&self, permit: StreamingPermit, outcome: StreamingOutcome) -> bool {
        permit.finish(
            &self.name,
            outcome,
            self.streaming_list_attempts,
            self.streaming_list_fallback,
        )
    }

    /// Streams the initial state into the store as a list taken in parts ([`StreamedList`])
    /// until the initial-events-end bookmark ends the list, and returns the still-open stream
    /// (client-go's `watchList`). `permit` is the first attempt's (see
    /// [`StreamingListMemory`](super::StreamingListMemory)); a stream that ends before its end
    /// bookmark is reopened after a backoff while the memory allows another attempt.
    pub(crate) async fn watch_list(
        &self,
        permit: StreamingPermit,
        cancel: &CancellationToken,
    ) -> WatchListEnd<K> {
        let mut first = Some(permit);
        loop {
            tokio::task::consume_budget().await;
            if cancel.is_cancelled() {
                return WatchListEnd::Cancelled;
            }
            let permit = match first.take() {
                Some(p) => p,
                None => match self.streaming_decision() {
                    StreamingDecision::Stream(p) => p,
                    StreamingDecision::Remembered | StreamingDecision::Spent => {
                        return WatchListEnd::FallBack(None);
                    }
                },
            };
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
                _ = cancel.cancelled() => return WatchListEnd::Cancelled,
                r = self.lister_watcher.watch(&options) => r,
                _ = no_answer => {
                    let timeout = self.end_bookmark_timeout.unwrap_or_default();
                    tracing::warn!(reflector = %self.name, ?timeout,
                        "the streaming list got no answer in time; the server may not support streaming lists");
                    self.streaming_outcome(permit, StreamingOutcome::Incomplete);
                    return WatchListEnd::FallBack(Some(ReflectorError::EndBookmarkTimeout { timeout }));
                }
            };
            let mut stream = match opened {
                Ok(s) => {
                    self.request_succeeded();
                    s
                }
                Err(e) => {
                    if e.is_not_supported() {
                        self.streaming_outcome(permit, StreamingOutcome::Refused);
                        return WatchListEnd::FallBack(Some(ReflectorError::Watch(e)));
                    }
                    drop(permit);
                    let err = ReflectorError::Watch(e);
                    if self.retriable_with_side_effects(&err, cancel).await {
                        continue;
                    }
                    return WatchListEnd::FallBack(Some(err));
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
            let incomplete = match end {
                Ok(list) => {
                    self.streaming_outcome(permit, StreamingOutcome::Finished);
                    // the stream carries on as the watch: counted as one, as after a list
                    self.watches
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    self.set_resource_version_unavailable(false);
                    if let Err(e) = list.finish(bookmark_rv.clone()) {
                        return WatchListEnd::FallBack(Some(ReflectorError::Store {
                            operation: "replace",
                            source: Box::new(e),
                        }));
                    }
                    self.set_last_sync_resource_version(&bookmark_rv);
                    self.listed_now();
                    return WatchListEnd::Streamed(stream);
                }
                // (InitialEventsEnd is the `Ok` above)
                Err(WatchEnd::Stopped | WatchEnd::InitialEventsEnd) => {
                    return WatchListEnd::Cancelled;
                }
                Err(WatchEnd::Closed) => None,
                Err(WatchEnd::Failed(ReflectorError::VeryShortWatch { .. })) => None,
                Err(WatchEnd::Broken(e)) => Some(e.to_string()),
                Err(WatchEnd::Failed(err)) => {
                    drop(stream);
                    if matches!(err, ReflectorError::EndBookmarkTimeout { .. }) {
                        tracing::warn!(reflector = %self.name, error = %err,
                            "no initial-events-end bookmark in time; the server may not support streaming lists");
                        self.streaming_outcome(permit, StreamingOutcome::Incomplete);
                        return WatchListEnd::FallBack(Some(err));
                    }
                    if err.list_watch_error().is_some_and(|e| e.is_not_supported()) {
                        self.streaming_outcome(permit, StreamingOutcome::Refused);
                        return WatchListEnd::FallBack(Some(err));
                    }
                    drop(permit);
                    if self.retriable_with_side_effects(&err, cancel).await {
                        continue;
                    }
                    return WatchListEnd::FallBack(Some(err));
                }
            };
            drop(stream);
            tracing::warn!(reflector = %self.name, error = incomplete.as_deref(),
                "streaming list ended before its initial-events-end bookmark");
            if self.streaming_outcome(permit, StreamingOutcome::Incomplete) {
                return WatchListEnd::FallBack(None);
            }
            // a server that keeps closing early is not asked again in a tight loop
            if !self.backoff_wait(cancel).await {
                return WatchListEnd::Cancelled;
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
            self.wait_after_error(Some(err), cancel).await;
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
