//! Building a [`Reflector`].

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::backoff::Backoff;
use super::hooks::ShouldResyncFn;
use super::lister_watcher::ListerWatcher;
use super::reflector_error::ReflectorError;
use super::run::{Reflector, SyncState};
use super::scoped::RequestScope;
use super::sharded::Sharded;
use crate::InformerConfig;
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
    /// bookmark does not come in time ([`EndBookmarkWait`]), and for a while once the server
    /// has not finished several in a row ([`StreamingListFallback`](super::StreamingListFallback)).
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
///
/// Its options are the list/watch part of an [`InformerConfig`] ([`config`](Self::config)):
/// selectors and tweak (applied to every request, whatever the source), the initial-list mode,
/// page size, end-bookmark wait, watch timeout, backoff, internal-error retries, the watch
/// error handler and the resync period. Besides them, a name for logs and the informer's
/// `should_resync` hook.
#[must_use]
pub struct ReflectorBuilder<K, S> {
    name: Option<String>,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    store: S,
    should_resync: Option<ShouldResyncFn>,
    config: InformerConfig<K>,
    resume: super::hooks::ResumeState,
    on_resume: Option<super::hooks::ResumeHook>,
    consistent_first_list: bool,
    streaming_list_server: Option<String>,
}

impl<K: Object, S: ReflectorStore<K>> Reflector<K, S> {
    /// Starts building a Reflector that fills `store` from `lister_watcher`, with the defaults
    /// of [`InformerConfig`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use futures::FutureExt;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::InformerConfig;
    /// use kinformer::reflector::{ListPage, ListWatch, Reflector};
    /// use kinformer::store::{Indexer, ReplaceOnce};
    /// let lw = ListWatch::<Pod>::new(
    ///     |_| async { Ok(ListPage::new(vec![], "1")) }.boxed(),
    ///     |_| async { Ok(futures::StreamExt::boxed(futures::stream::pending())) }.boxed(),
    /// );
    /// let cache: Indexer<Pod> = Indexer::default_namespaced();
    /// let reflector = Reflector::builder(Arc::new(lw), ReplaceOnce::new(cache))
    ///     .name("pods")
    ///     .config(&InformerConfig::default().resync_period(Duration::from_secs(30)))
    ///     .build();
    /// assert_eq!(reflector.last_sync_resource_version(), "");
    /// ```
    pub fn builder(lister_watcher: Arc<dyn ListerWatcher<K>>, store: S) -> ReflectorBuilder<K, S> {
        ReflectorBuilder {
            name: None,
            lister_watcher,
            store,
            should_resync: None,
            config: InformerConfig::default(),
            resume: super::hooks::ResumeState::Off,
            on_resume: None,
            consistent_first_list: false,
            streaming_list_server: None,
        }
    }
}

impl<K: Object, S: ReflectorStore<K>> ReflectorBuilder<K, S> {
    /// The name used in logs (default: the object type's name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The list/watch options (see the type's docs); the informer's own fields (cache mode,
    /// queue mode, transform, memory) do not concern a Reflector, except that a lean cache
    /// mode makes [`InitialListMode::Auto`] list first.
    pub fn config(mut self, config: &InformerConfig<K>) -> Self {
        self.config = config.clone();
        self
    }

    /// Consulted each time the resync timer fires; `store.resync()` is called only when it
    /// returns true (client-go's `ShouldResync`). Default: always.
    pub fn should_resync(mut self, f: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.should_resync = Some(Arc::new(f));
        self
    }

    /// The first cycle resumes from `resource_version` (a snapshot's): checked with a
    /// one-object list if `verify`, then watched from, no list; `hook` hears how it goes.
    pub(crate) fn resume_from(
        mut self,
        resource_version: String,
        verify: bool,
        hook: super::hooks::ResumeHook,
    ) -> Self {
        self.resume = super::hooks::ResumeState::Planned {
            resource_version,
            verify,
        };
        self.on_resume = Some(hook);
        self
    }

    /// The API group (`""` for the core group) and version this Reflector's server serves:
    /// its entry in the [`StreamingListMemory`](super::StreamingListMemory) of its
    /// configuration ([`StreamingListFallback::memory`](super::StreamingListFallback::memory)), so every Reflector of one
    /// group/version learns from the others whether its server finishes streaming lists.
    /// Informers set it from their type; default: the Reflector's name (an entry of its own).
    pub fn streaming_list_server(mut self, group: &str, version: &str) -> Self {
        self.streaming_list_server = Some(super::StreamingListMemory::key(group, version));
        self
    }

    /// The first list is consistent (`resourceVersion=""`), as after a refused resume: for a
    /// cache seeded from objects without a resourceVersion.
    pub(crate) fn consistent_first_list(mut self) -> Self {
        self.consistent_first_list = true;
        self
    }

    /// The Reflector.
    pub fn build(self) -> Reflector<K, S> {
        let name = self
            .name
            .unwrap_or_else(|| std::any::type_name::<K>().to_owned());
        let handler_name = name.clone();
        let config = self.config;
        let use_watch_list = config
            .effective_initial_list()
            .streams(self.lister_watcher.supports_streaming_list());
        let watch_error_handler = config.watch_error_handler.clone().unwrap_or_else(|| {
            Arc::new(move |e: &ReflectorError| default_watch_error_handler(&handler_name, e))
        });
        let scope = RequestScope {
            label_selector: config.label_selector.clone(),
            field_selector: config.field_selector.clone(),
            tweak: config.tweak_list_options.clone(),
        };
        let min_watch_timeout = config.min_watch_timeout.max(DEFAULT_MIN_WATCH_TIMEOUT);
        // the shard's selector is set after the tweak (innermost), so it is the one sent
        let lister_watcher = scope.wrap(match &config.shard {
            Some(shard) => Sharded::wrap(self.lister_watcher, shard.clone(), &name),
            None => self.lister_watcher,
        });
        let streaming_list_server = self
            .streaming_list_server
            .unwrap_or_else(|| format!("reflector {name}"));
        Reflector {
            streaming_list_server,
            streaming_list_attempts: config.streaming_lists.attempts.get(),
            streaming_list_fallback: config.streaming_lists.remember_for,
            streaming_list_memory: config.streaming_lists.memory.clone().unwrap_or_default(),
            name,
            lister_watcher,
            store: self.store,
            resync_period: (!config.resync_period.is_zero()).then_some(config.resync_period),
            should_resync: self.should_resync,
            page_size: config.page_size.map(NonZeroU32::get),
            watch_error_handler,
            use_watch_list,
            end_bookmark_timeout: match config.end_bookmark_wait {
                EndBookmarkWait::After(timeout) => Some(timeout),
                EndBookmarkWait::Forever => None,
            },
            min_watch_timeout,
            max_watch_timeout: min_watch_timeout * 2,
            max_internal_error_retry_duration: config.max_internal_error_retry_duration,
            backoff: Mutex::new(Backoff::new(config.backoff)),
            retry_afters_in_a_row: Default::default(),
            state: Mutex::new(SyncState {
                resource_version_unavailable: self.consistent_first_list,
                ..SyncState::default()
            }),
            lists: Default::default(),
            watches: Default::default(),
            resume: Mutex::new(self.resume),
            on_resume: self.on_resume,
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
