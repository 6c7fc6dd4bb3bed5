//! The Reflector and what it talks to: client-go's `reflector.go`, `listwatch.go` and
//! `tools/pager`.
//!
//! A [`Reflector`] keeps a [`ReflectorStore`](crate::store::ReflectorStore) (the informer's
//! `DeltaFifo`, or a plain store) in step with the API server. It lists everything once, hands
//! the list to the store as it arrives (`replace_begin`, `replace_part`..., `replace_end`), then
//! watches from the list's resourceVersion and
//! applies each event as `add`/`update`/`delete`. When the watch ends it is reopened from the
//! last resourceVersion seen; when that version is gone (410) the Reflector lists again. Every
//! rule about *which* request comes next (resource versions, pagination, retries, backoff) came
//! from production incidents in client-go and is kept exactly; see [`Reflector`].
//!
//! The API server is reached through a [`ListerWatcher`]: [`ListWatch`] wraps two closures (for
//! tests and custom sources), and [`KubeListerWatcher`](crate::source::KubeListerWatcher) talks
//! to real clusters through `kube::Client`.
//!
//! # List+watch or streaming list?
//!
//! The default, [`InitialListMode::Auto`], is client-go 1.35+'s: a streaming list
//! (`sendInitialEvents=true`: the current state as watch events, ended by a bookmark) where the
//! source says its server supports one ([`ListerWatcher::supports_streaming_list`]), else
//! list+watch. [`KubeListerWatcher`](crate::source::KubeListerWatcher) says yes (every API
//! server since 1.27; beta and on by default since 1.32); [`ListWatch`] says no unless told
//! ([`ListWatch::with_streaming_list`]), since its closures are usually fakes or custom
//! sources. A streaming list spares the server one large list response: on a real
//! kube-apiserver with 10,000 pods it spent about 0.2 s of CPU streaming them against 0.5 s
//! listing them, and the client's time was the same (its events are decoded on every core, as
//! a list is). If a streaming list fails (an older server refuses the request), or its end
//! bookmark does not arrive within [`InformerConfig::end_bookmark_wait`](crate::InformerConfig::end_bookmark_wait) (a server that
//! silently ignores the option turns it into a plain watch), the Reflector falls back to
//! list+watch for that cycle and says why in the logs. A server that does not finish
//! streaming lists (it closes them before the end bookmark, they time out, or it refuses
//! them) gets a bounded number of attempts in a row, then paged lists, remembered per API
//! group/version for a while by every informer of a factory
//! ([`InformerConfig::streaming_lists`](crate::InformerConfig::streaming_lists),
//! [`StreamingListMemory`]): kube-controller-manager stalled on such a server (kubernetes
//! #140890). [`InitialListMode::ListThenWatch`] and
//! [`InitialListMode::StreamingList`] force one or the other. Informers with a lean cache
//! list first under `Auto` (see [`InformerConfig::initial_list`](crate::InformerConfig::initial_list)).
//!
//! # Differences from client-go
//!
//! * An object without a name, or an event that does not decode, is logged and skipped (never a
//!   panic, never a bogus key).
//! * Errors that end an open watch (410, very short watch...) are also passed to the watch
//!   error handler; client-go only logs them. The next step is the same: back off, relist.
//! * The streaming list's end bookmark has a timeout, which also covers a server that never
//!   answers the request (client-go waits forever).
//! * A streaming list that closes before its end bookmark is reopened after a backoff (client-go
//!   reopens it at once, for ever: kubernetes #140890), at most
//!   [`StreamingListFallback::attempts`] times in a row (3; client-go's open fix, PR #140902,
//!   also bounds them), then the Reflector lists; and the server is remembered for
//!   [`StreamingListFallback::remember_for`] (10 minutes), so relists of every informer sharing
//!   the memory list at once (client-go tries again on every relist). A 410 on one already
//!   asked at `""` falls back to list+watch instead of asking again at once.
//! * A `Retry-After` (or `retryAfterSeconds`) on a 429 or 5xx answer to a list or watch makes
//!   the next request wait that long, capped at [`MAX_RETRY_AFTER`] (60 s), without a step of
//!   the exponential backoff, up to [`RETRIES_AFTER_ASKED`] (10) times in a row; later ones
//!   wait a backoff step and at least the `Retry-After`. That is client-go's timing: its rest
//!   client waits `Retry-After` out inside the request, up to 10 times, uncapped, before its
//!   Reflector sees the error (kinformer's source leaves retries to the Reflector, so the watch
//!   error handler hears of each 429). A 1.37 server answering consistent lists with 429
//!   (`ConsistentListFromCacheSkipTimeoutFallback`) is asked again after its `Retry-After`,
//!   not stormed, and a throttled informer recovers as fast as a Go one.
//! * The backoff resets after 2 minutes *without errors* (client-go: every 2 minutes).
//! * Internal errors (500) ending a watch are retried without a relist for 30 s by default
//!   (client-go: off unless `MaxInternalErrorRetryDuration` is set).
//! * A watch still open 30 s after its `timeoutSeconds` (a silently dead connection) is dropped
//!   and reopened from the last resourceVersion.

mod backoff;
mod builder;
mod error;
mod hooks;
mod lister_watcher;
mod options;
mod pager;
mod reflector_error;
mod resume;
mod run;
mod scoped;
mod sharded;
mod streamed_list;
mod streaming_memory;
mod watch;
mod watch_list;

pub use backoff::{Backoff, BackoffConfig};
pub use builder::{
    DEFAULT_END_BOOKMARK_TIMEOUT, DEFAULT_MAX_INTERNAL_ERROR_RETRY_DURATION,
    DEFAULT_MIN_WATCH_TIMEOUT, EndBookmarkWait, InitialListMode, ReflectorBuilder,
    default_watch_error_handler,
};
pub use error::{ListWatchError, Status, StatusCause, TransportErrorKind};
pub use hooks::{ShouldResyncFn, TweakFn, WatchErrorHandler};
pub use lister_watcher::{
    INITIAL_EVENTS_END_ANNOTATION, ItemSink, ListMeta, ListPage, ListWatch, ListerWatcher,
    ListerWatcherExt, WatchEvent, WatchStream,
};
pub use options::{ListOptions, ResourceVersionMatch};
pub use pager::{DEFAULT_PAGE_SIZE, FullList, list_all};
pub(crate) use pager::{ListSink, list_pages};
pub use reflector_error::ReflectorError;
pub use run::{MAX_RETRY_AFTER, RETRIES_AFTER_ASKED, Reflector};
pub use streaming_memory::{
    DEFAULT_STREAMING_LIST_ATTEMPTS, DEFAULT_STREAMING_LIST_FALLBACK, StreamingListFallback,
    StreamingListMemory,
};

pub(crate) use hooks::{ResumeEvent, ResumeHook};
