//! A [`ListerWatcher`] wrapper that counts what crossed the wire.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kinformer::reflector::{
    INITIAL_EVENTS_END_ANNOTATION, ItemSink, ListMeta, ListOptions, ListWatchError, ListerWatcher,
    WatchEvent, WatchStream,
};
use parking_lot::Mutex;

/// What a [`CountingListerWatcher`] has seen so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchCounts {
    /// List requests (every page counts).
    pub lists: usize,
    /// List requests that carried a continue token (pages after the first).
    pub continued_lists: usize,
    /// Largest number of items in one list page.
    pub largest_page: usize,
    /// Watch requests.
    pub watches: usize,
    /// Watch requests with `sendInitialEvents=true` (streaming lists).
    pub streaming_watches: usize,
    /// `BOOKMARK` events without the initial-events-end annotation.
    pub bookmarks: usize,
    /// `BOOKMARK` events that end a streaming list's initial events.
    pub initial_events_end_bookmarks: usize,
    /// `ADDED`/`MODIFIED`/`DELETED` events.
    pub object_events: usize,
    /// HTTP codes of `ERROR` events and of failed list/watch requests, in order.
    pub error_codes: Vec<u16>,
}

/// Wraps a [`ListerWatcher`], passes every request and event through unchanged (except an
/// optional watch timeout override), and counts them in [`WatchCounts`].
///
/// The timeout override exists because a Reflector asks for watches of 5–10 minutes (client-go's
/// minimum, which kinformer enforces); a test that needs watches to end sooner (to see the
/// bookmark a real server sends 2 s before a watch's deadline, or to re-watch from an expired
/// resourceVersion) shortens them here, on the wire, without touching the Reflector.
pub struct CountingListerWatcher<K> {
    inner: Arc<dyn ListerWatcher<K>>,
    watch_timeout_seconds: Option<u32>,
    counts: Arc<Mutex<WatchCounts>>,
}

impl<K: Send + 'static> CountingListerWatcher<K> {
    /// Counts what `inner` lists and watches.
    pub fn new(inner: Arc<dyn ListerWatcher<K>>) -> Self {
        Self {
            inner,
            watch_timeout_seconds: None,
            counts: Arc::default(),
        }
    }

    /// Every watch asks the server to close it after `seconds` instead of what the caller asked.
    #[must_use]
    pub fn with_watch_timeout(mut self, seconds: u32) -> Self {
        self.watch_timeout_seconds = Some(seconds);
        self
    }

    /// A copy of the counts so far.
    pub fn counts(&self) -> WatchCounts {
        self.counts.lock().clone()
    }
}

impl<K: Send + 'static> ListerWatcher<K> for CountingListerWatcher<K> {
    fn list<'a>(
        &'a self,
        options: &ListOptions,
        sink: ItemSink<'a, K>,
    ) -> BoxFuture<'a, Result<ListMeta, ListWatchError>> {
        let counts = self.counts.clone();
        let continued = options.continue_token.is_some();
        let options = options.clone();
        async move {
            // The inner source's batches pass straight through, counted on the way.
            let mut items = 0usize;
            let result = {
                let mut counting = |batch: Vec<Arc<K>>| {
                    items += batch.len();
                    sink(batch);
                };
                self.inner.list(&options, &mut counting).await
            };
            let mut c = counts.lock();
            c.lists += 1;
            if continued {
                c.continued_lists += 1;
            }
            c.largest_page = c.largest_page.max(items);
            if let Err(ListWatchError::Api(s)) = &result {
                c.error_codes.push(s.code);
            }
            drop(c);
            result
        }
        .boxed()
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>> {
        let mut options = options.clone();
        if let Some(t) = self.watch_timeout_seconds {
            options.timeout_seconds = Some(t);
        }
        let counts = self.counts.clone();
        let streaming = options.send_initial_events == Some(true);
        let inner = self.inner.clone();
        async move {
            let result = inner.watch(&options).await;
            {
                let mut c = counts.lock();
                c.watches += 1;
                if streaming {
                    c.streaming_watches += 1;
                }
                if let Err(ListWatchError::Api(s)) = &result {
                    c.error_codes.push(s.code);
                }
            }
            let stream = result?;
            let counted = stream.inspect(move |item| {
                let mut c = counts.lock();
                match item {
                    Ok(WatchEvent::Bookmark { annotations, .. }) => {
                        if annotations
                            .get(INITIAL_EVENTS_END_ANNOTATION)
                            .is_some_and(|v| v == "true")
                        {
                            c.initial_events_end_bookmarks += 1;
                        } else {
                            c.bookmarks += 1;
                        }
                    }
                    Ok(WatchEvent::Error(s)) | Err(ListWatchError::Api(s)) => {
                        c.error_codes.push(s.code)
                    }
                    Ok(_) => c.object_events += 1,
                    Err(_) => {}
                }
            });
            Ok(counted.boxed())
        }
        .boxed()
    }

    fn supports_streaming_list(&self) -> bool {
        self.inner.supports_streaming_list()
    }
}
