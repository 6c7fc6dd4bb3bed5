//! The Reflector's view of the API server: one list page, one watch stream
//! (client-go's `ListerWatcher`, `ListWatch` and `NewFilteredListWatchFromClient`).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;

use super::error::{ListWatchError, Status};
use super::options::ListOptions;

/// The annotation on the bookmark that ends a streaming list's initial events
/// (`metav1.InitialEventsAnnotationKey`). Only the value `"true"` counts.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// What a list response says besides its items.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListMeta {
    /// The list's `metadata.resourceVersion`.
    pub resource_version: String,
    /// `metadata.continue`: present when more pages follow.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount`, when the server reported it.
    pub remaining_item_count: Option<i64>,
    /// `metadata.shardInfo.selector`: the shard selector the server applied (Kubernetes 1.36+
    /// with the `ShardedListAndWatch` gate); `None` when it applied none.
    pub shard_info: Option<String>,
}

/// One page of a list response, whole (what a [`ListWatch`] closure returns, and what
/// [`ListerWatcherExt::list_page`] collects).
#[derive(Debug, Clone, PartialEq)]
pub struct ListPage<K> {
    /// The page's objects, in server order.
    pub items: Vec<K>,
    /// The list's `metadata.resourceVersion`.
    pub resource_version: String,
    /// `metadata.continue`: present when more pages follow.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount`, when the server reported it.
    pub remaining_item_count: Option<i64>,
    /// `metadata.shardInfo.selector`, when the server applied a shard selector.
    pub shard_info: Option<String>,
}

impl<K> ListPage<K> {
    /// A complete (single-page) list at `resource_version`.
    pub fn new(items: Vec<K>, resource_version: impl Into<String>) -> Self {
        Self {
            items,
            resource_version: resource_version.into(),
            continue_token: None,
            remaining_item_count: None,
            shard_info: None,
        }
    }

    /// A page of `items` with the metadata `meta`.
    pub fn from_meta(items: Vec<K>, meta: ListMeta) -> Self {
        Self {
            items,
            resource_version: meta.resource_version,
            continue_token: meta.continue_token,
            remaining_item_count: meta.remaining_item_count,
            shard_info: meta.shard_info,
        }
    }

    /// Hands the items to `sink` in one batch (each behind its `Arc`) and returns the
    /// metadata: how a source that produces whole pages implements
    /// [`ListerWatcher::list`].
    pub fn deliver(self, sink: ItemSink<'_, K>) -> ListMeta {
        let (items, meta) = self.into_parts();
        if !items.is_empty() {
            sink(items.into_iter().map(Arc::new).collect());
        }
        meta
    }

    /// The items and the metadata, apart.
    pub fn into_parts(self) -> (Vec<K>, ListMeta) {
        let meta = ListMeta {
            resource_version: self.resource_version,
            continue_token: self.continue_token,
            remaining_item_count: self.remaining_item_count,
            shard_info: self.shard_info,
        };
        (self.items, meta)
    }

    /// The same page with every item mapped by `f` (e.g. `Arc::new`); the metadata stays.
    pub fn map_items<U>(self, f: impl FnMut(K) -> U) -> ListPage<U> {
        ListPage {
            items: self.items.into_iter().map(f).collect(),
            resource_version: self.resource_version,
            continue_token: self.continue_token,
            remaining_item_count: self.remaining_item_count,
            shard_info: self.shard_info,
        }
    }

    /// The same page with a continue token (more pages follow).
    #[must_use]
    pub fn with_continue(mut self, token: impl Into<String>) -> Self {
        self.continue_token = Some(token.into());
        self
    }
}

/// One watch event (client-go's `watch.Event`).
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent<K> {
    /// `ADDED`.
    Added(K),
    /// `MODIFIED`.
    Modified(K),
    /// `DELETED`, carrying the object's final state.
    Deleted(K),
    /// `BOOKMARK`: the watch has seen everything up to `resource_version`.
    Bookmark {
        /// The bookmark object's `metadata.resourceVersion`.
        resource_version: String,
        /// The bookmark object's annotations (the end of a streaming list's initial events is
        /// marked with [`INITIAL_EVENTS_END_ANNOTATION`]`: "true"`).
        annotations: BTreeMap<String, String>,
    },
    /// `ERROR`: the server ends the watch with this status (often `410 Expired`).
    Error(Status),
}

impl<K> WatchEvent<K> {
    /// A bookmark at `resource_version` without annotations.
    pub fn bookmark(resource_version: impl Into<String>) -> Self {
        Self::Bookmark {
            resource_version: resource_version.into(),
            annotations: BTreeMap::new(),
        }
    }

    /// The bookmark that ends a streaming list's initial events, at `resource_version`.
    pub fn initial_events_end(resource_version: impl Into<String>) -> Self {
        Self::Bookmark {
            resource_version: resource_version.into(),
            annotations: BTreeMap::from([(
                INITIAL_EVENTS_END_ANNOTATION.to_owned(),
                "true".to_owned(),
            )]),
        }
    }
}

/// An open watch: events until the server closes it. Dropping the stream closes the watch.
///
/// An `Err` item whose [`ListWatchError::is_decode`] is true stands for one event that could not
/// be understood; the Reflector logs and skips it. A [`ListWatchError::Transport`] item means the
/// stream broke: the Reflector treats it like a close and reopens the watch from the last
/// resourceVersion (as client-go does). An [`ListWatchError::Api`] item ends the watch like an
/// `ERROR` event.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>, ListWatchError>>;

/// Where a list's items go: batches of objects, in server order, as they arrive.
pub type ItemSink<'a, K> = &'a mut (dyn FnMut(Vec<Arc<K>>) + Send);

/// How a Reflector lists and watches one kind of object (client-go's `ListerWatcher`).
///
/// Two methods, both required, nothing optional: a wrapper (one that counts requests, or
/// adjusts options) implements both and so forwards the whole protocol by construction, the
/// way a tower `Service` does. Object-safe, so a Reflector holds an
/// `Arc<dyn ListerWatcher<K>>`. Implementations: [`ListWatch`] (two closures), and
/// [`KubeListerWatcher`](crate::source::KubeListerWatcher) for real clusters.
///
/// # Contract
///
/// * `list` sends one request for exactly the given options (the Reflector drives pagination
///   through `continue_token`) and hands the page's items to `sink`, in server order, in as
///   many batches as suit the source: a source that decodes while the response downloads
///   delivers batches as they are decoded, so a large list is applied while it arrives and
///   never held whole. It delivers items only once the response is known to be a list of the
///   right kind; if the call then fails, the delivered items were nevertheless objects of that
///   list. It returns the page's metadata ([`ListMeta`]).
/// * `watch` opens one watch with exactly the given options (`send_initial_events` included)
///   and reports a failure to start it as `Err`, not as a stream item.
///
/// To get a whole page instead of batches, use [`ListerWatcherExt::list_page`].
pub trait ListerWatcher<K>: Send + Sync {
    /// Lists one page into `sink`; returns the page's metadata.
    fn list<'a>(
        &'a self,
        options: &ListOptions,
        sink: ItemSink<'a, K>,
    ) -> BoxFuture<'a, Result<ListMeta, ListWatchError>>;
    /// Opens a watch.
    fn watch(&self, options: &ListOptions)
    -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>>;
    /// Whether this source's server supports streaming lists (`sendInitialEvents=true` on a
    /// watch, ended by the `k8s.io/initial-events-end` bookmark), so a Reflector in
    /// [`InitialListMode::Auto`](super::InitialListMode::Auto) starts with one (client-go's
    /// `watchlist.DoesClientNotSupportWatchListSemantics`, turned around). No default: a wrapper
    /// forwards its inner source's answer, so wrapping never silently changes the protocol.
    fn supports_streaming_list(&self) -> bool;
}

impl<K, T: ListerWatcher<K> + ?Sized> ListerWatcher<K> for Arc<T> {
    fn list<'a>(
        &'a self,
        options: &ListOptions,
        sink: ItemSink<'a, K>,
    ) -> BoxFuture<'a, Result<ListMeta, ListWatchError>> {
        (**self).list(options, sink)
    }
    fn watch(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>> {
        (**self).watch(options)
    }
    fn supports_streaming_list(&self) -> bool {
        (**self).supports_streaming_list()
    }
}

/// Conveniences over any [`ListerWatcher`] (implemented for all of them; nothing to forward).
pub trait ListerWatcherExt<K>: ListerWatcher<K> {
    /// Lists one page and collects its items.
    fn list_page<'a>(
        &'a self,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<ListPage<Arc<K>>, ListWatchError>>
    where
        K: Send + Sync + 'static,
    {
        Box::pin(async move {
            let mut items = Vec::new();
            let meta = {
                let mut sink = |batch: Vec<Arc<K>>| items.extend(batch);
                self.list(options, &mut sink).await?
            };
            Ok(ListPage::from_meta(items, meta))
        })
    }
}

impl<K, T: ListerWatcher<K> + ?Sized> ListerWatcherExt<K> for T {}

type ListFn<K> = Arc<
    dyn Fn(ListOptions) -> BoxFuture<'static, Result<ListPage<K>, ListWatchError>> + Send + Sync,
>;
type WatchFn<K> = Arc<
    dyn Fn(ListOptions) -> BoxFuture<'static, Result<WatchStream<K>, ListWatchError>> + Send + Sync,
>;

/// A [`ListerWatcher`] made of two closures (client-go's `ListWatch`). Selectors and an options
/// hook (client-go `NewFilteredListWatchFromClient`'s `optionsModifier`) are the Reflector's,
/// from its [`InformerConfig`](crate::InformerConfig): they reach these closures in the options.
///
/// ```
/// use futures::FutureExt;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::reflector::{ListPage, ListWatch};
/// let lw: ListWatch<Pod> = ListWatch::new(
///     |_opts| async { Ok(ListPage::new(vec![], "1")) }.boxed(),
///     |_opts| async { Ok(futures::StreamExt::boxed(futures::stream::empty())) }.boxed(),
/// );
/// # let _ = lw;
/// ```
pub struct ListWatch<K> {
    list_fn: ListFn<K>,
    watch_fn: WatchFn<K>,
    streaming_list: bool,
}

impl<K> Clone for ListWatch<K> {
    fn clone(&self) -> Self {
        Self {
            list_fn: self.list_fn.clone(),
            watch_fn: self.watch_fn.clone(),
            streaming_list: self.streaming_list,
        }
    }
}

impl<K> ListWatch<K> {
    /// A ListerWatcher from a list closure and a watch closure, each given the request's options.
    pub fn new<L, W>(list: L, watch: W) -> Self
    where
        L: Fn(ListOptions) -> BoxFuture<'static, Result<ListPage<K>, ListWatchError>>
            + Send
            + Sync
            + 'static,
        W: Fn(ListOptions) -> BoxFuture<'static, Result<WatchStream<K>, ListWatchError>>
            + Send
            + Sync
            + 'static,
    {
        Self {
            list_fn: Arc::new(list),
            watch_fn: Arc::new(watch),
            streaming_list: false,
        }
    }

    /// Declares that the watch closure honours streaming lists (`send_initial_events`: the
    /// current state as `ADDED` events, then a bookmark annotated
    /// `k8s.io/initial-events-end: "true"`), so a Reflector in
    /// [`InitialListMode::Auto`](super::InitialListMode::Auto) starts with one. Off by default:
    /// closures are usually fakes or custom sources, and a watch that ignores the option would
    /// never send the end bookmark.
    #[must_use]
    pub fn with_streaming_list(mut self) -> Self {
        self.streaming_list = true;
        self
    }
}

impl<K: Send + Sync + 'static> ListerWatcher<K> for ListWatch<K> {
    fn list<'a>(
        &'a self,
        options: &ListOptions,
        sink: ItemSink<'a, K>,
    ) -> BoxFuture<'a, Result<ListMeta, ListWatchError>> {
        let page = (self.list_fn)(options.clone());
        Box::pin(async move { Ok(page.await?.deliver(sink)) })
    }
    fn watch(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>> {
        (self.watch_fn)(options.clone())
    }
    fn supports_streaming_list(&self) -> bool {
        self.streaming_list
    }
}
