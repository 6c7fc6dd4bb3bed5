//! Building a [`Reflector`].

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::backoff::{Backoff, BackoffConfig};
use super::hooks::{ShouldResyncFn, WatchErrorHandler};
use super::lister_watcher::ListerWatcher;
use super::reflector_error::ReflectorError;
use super::run::{Reflector, SyncState};
use crate::object::Object;
use crate::store::ReflectorStore;

/// client-go's `defaultMinWatchTimeout`: watches ask the server to close them after a random
/// time in `[5 min, 10 min]`.
pub const DEFAULT_MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// How long a streaming list waits for the bookmark that ends its initial events before falling
/// back to list+watch, unless configured otherwise.
pub const DEFAULT_END_BOOKMARK_TIMEOUT: Duration = Duration::from_secs(120);

/// How long internal errors (500) on a watch are retried without a relist, unless configured.
pub const DEFAULT_MAX_INTERNAL_ERROR_RETRY_DURATION: Duration = Duration::from_secs(30);

/// How a Reflector gets its initial state, and the state again on every relist.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InitialListMode {
    /// A streaming list where the source says its server supports one
    /// ([`ListerWatcher::supports_streaming_list`]), else list+watch: client-go 1.35+'s default
    /// (its `WatchListClient` gate is on, and sources that cannot stream, such as fakes, opt
    /// out). [`KubeListerWatcher`](crate::source::KubeListerWatcher) streams;
    /// [`ListWatch`](super::ListWatch) does only when told to.
    #[default]
    Auto,
    /// A list (in pages or whole), then a watch from the list's resourceVersion: what every API
    /// server supports, and client-go's default before 1.35.
    ListThenWatch,
    /// A streaming list (watch-list: one watch with `sendInitialEvents=true`, ended by a
    /// bookmark) whatever the source says, falling back to
    /// [`ListThenWatch`](Self::ListThenWatch) when the server does not support it or the end
    /// bookmark does not come in time ([`EndBookmarkWait`]).
    StreamingList,
}

impl InitialListMode {
    /// Whether a Reflector over a source that does (or does not) support streaming lists
    /// starts with one.
    pub fn streams(self, source_supports_it: bool) -> bool {
        match self {
            InitialListMode::Auto => source_supports_it,
            InitialListMode::ListThenWatch => false,
            InitialListMode::StreamingList => true,
        }
    }
}

/// How long a streaming list waits for the bookmark that ends its initial events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndBookmarkWait {
    /// Fall back to list+watch after this long.
    After(Duration),
    /// Wait as long as it takes (client-go's behaviour).
    Forever,
}

impl Default for EndBookmarkWait {
    fn default() -> Self {
        Self::After(DEFAULT_END_BOOKMARK_TIMEOUT)
    }
}

/// Builds a [`Reflector`]; start with [`Reflector::builder`].
#[must_use]
pub struct ReflectorBuilder<K, S> {
    name: Option<String>,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    store: S,
    resync_period: Option<Duration>,
    should_resync: Option<ShouldResyncFn>,
    page_size: Option<u32>,
    watch_error_handler: Option<WatchErrorHandler>,
    initial_list: InitialListMode,
    end_bookmark_timeout: Option<Duration>,
    min_watch_timeout: Duration,
    backoff: BackoffConfig,
    max_internal_error_retry_duration: Duration,
}

impl<K: Object, S: ReflectorStore<K>> Reflector<K, S> {
    /// Starts building a Reflector that fills `store` from `lister_watcher`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use futures::FutureExt;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::reflector::{ListPage, ListWatch, Reflector};
    /// use kinformer::store::{Indexer, ReplaceOnce};
    /// let lw = ListWatch::<Pod>::new(
    ///     |_| async { Ok(ListPage::new(vec![], "1")) }.boxed(),
    ///     |_| async { Ok(futures::StreamExt::boxed(futures::stream::pending())) }.boxed(),
    /// );
    /// let cache: Indexer<Pod> = Indexer::default_namespaced();
    /// let reflector = Reflector::builder(Arc::new(lw), ReplaceOnce::new(cache))
    ///     .name("pods")
    ///     .resync_period(Duration::from_secs(30))
    ///     .build();
    /// assert_eq!(reflector.last_sync_resource_version(), "");
    /// ```
    pub fn builder(lister_watcher: Arc<dyn ListerWatcher<K>>, store: S) -> ReflectorBuilder<K, S> {
        ReflectorBuilder {
            name: None,
            lister_watcher,
            store,
            resync_period: None,
            should_resync: None,
            page_size: None,
            watch_error_handler: None,
            initial_list: InitialListMode::Auto,
            end_bookmark_timeout: Some(DEFAULT_END_BOOKMARK_TIMEOUT),
            min_watch_timeout: DEFAULT_MIN_WATCH_TIMEOUT,
            backoff: BackoffConfig::default(),
            max_internal_error_retry_duration: DEFAULT_MAX_INTERNAL_ERROR_RETRY_DURATION,
        }
    }
}

impl<K: Object, S: ReflectorStore<K>> ReflectorBuilder<K, S> {
    /// The name used in logs (default: the object type's name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Calls `store.resync()` every `period` (zero disables; default: disabled).
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = (!period.is_zero()).then_some(period);
        self
    }

    /// Consulted each time the resync timer fires; `store.resync()` is called only when it
    /// returns true (client-go's `ShouldResync`). Default: always.
    pub fn should_resync(mut self, f: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.should_resync = Some(Arc::new(f));
        self
    }

    /// Lists in pages of this size (client-go's `WatchListPageSize`). Without it, the default
    /// rule applies: pages of 500 for lists at `""`/`"0"` or when the server paginated the
    /// first list, unpaginated otherwise.
    pub fn page_size(mut self, size: NonZeroU32) -> Self {
        self.page_size = Some(size.get());
        self
    }

    /// Receives every error that ends a cycle (default: logs it with `tracing`).
    pub fn watch_error_handler(
        mut self,
        f: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Self {
        self.watch_error_handler = Some(Arc::new(f));
        self
    }

    /// How the Reflector gets its initial state and relists (default:
    /// [`InitialListMode::Auto`]: a streaming list where the source supports one; see the
    /// module docs).
    pub fn initial_list(mut self, mode: InitialListMode) -> Self {
        self.initial_list = mode;
        self
    }

    /// How long a streaming list may take to deliver the bookmark that ends its initial events
    /// before the Reflector falls back to list+watch. Default:
    /// `EndBookmarkWait::After(DEFAULT_END_BOOKMARK_TIMEOUT)`.
    pub fn end_bookmark_wait(mut self, wait: EndBookmarkWait) -> Self {
        self.end_bookmark_timeout = match wait {
            EndBookmarkWait::After(timeout) => Some(timeout),
            EndBookmarkWait::Forever => None,
        };
        self
    }

    /// Watches are closed by the server after a random time in `[min, 2 × min]`; values below
    /// the 5-minute default are ignored (client-go's `MinWatchTimeout`).
    pub fn min_watch_timeout(mut self, min: Duration) -> Self {
        self.min_watch_timeout = min.max(DEFAULT_MIN_WATCH_TIMEOUT);
        self
    }

    /// The backoff between cycles and before retrying a watch (default:
    /// [`BackoffConfig::default`]).
    pub fn backoff(mut self, config: BackoffConfig) -> Self {
        self.backoff = config;
        self
    }

    /// How long internal errors (500) ending a watch are retried without relisting (zero: never;
    /// client-go's `MaxInternalErrorRetryDuration`, which defaults to zero there; we default to
    /// [`DEFAULT_MAX_INTERNAL_ERROR_RETRY_DURATION`]).
    pub fn max_internal_error_retry_duration(mut self, d: Duration) -> Self {
        self.max_internal_error_retry_duration = d;
        self
    }

    /// The Reflector.
    pub fn build(self) -> Reflector<K, S> {
        let name = self
            .name
            .unwrap_or_else(|| std::any::type_name::<K>().to_owned());
        let handler_name = name.clone();
        let use_watch_list = self
            .initial_list
            .streams(self.lister_watcher.supports_streaming_list());
        let watch_error_handler = self.watch_error_handler.unwrap_or_else(|| {
            Arc::new(move |e: &ReflectorError| default_watch_error_handler(&handler_name, e))
        });
        Reflector {
            name,
            lister_watcher: self.lister_watcher,
            store: self.store,
            resync_period: self.resync_period,
            should_resync: self.should_resync,
            page_size: self.page_size,
            watch_error_handler,
            use_watch_list,
            end_bookmark_timeout: self.end_bookmark_timeout,
            min_watch_timeout: self.min_watch_timeout,
            max_watch_timeout: self.min_watch_timeout * 2,
            max_internal_error_retry_duration: self.max_internal_error_retry_duration,
            backoff: Mutex::new(Backoff::new(self.backoff)),
            state: Mutex::new(SyncState::default()),
            lists: Default::default(),
            watches: Default::default(),
        }
    }
}

/// client-go's `DefaultWatchErrorHandler`: expired watches are routine (debug), anything else is
/// a warning.
pub fn default_watch_error_handler(name: &str, err: &ReflectorError) {
    if err.is_expired() {
        tracing::debug!(reflector = name, error = %err, "watch closed");
    } else {
        tracing::warn!(reflector = name, error = %err, "failed to watch");
    }
}
