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

/// One page of a list response.
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
}

impl<K> ListPage<K> {
    /// A complete (single-page) list at `resource_version`.
    pub fn new(items: Vec<K>, resource_version: impl Into<String>) -> Self {
        Self {
            items,
            resource_version: resource_version.into(),
            continue_token: None,
            remaining_item_count: None,
        }
    }

    /// The same page with every item mapped by `f` (e.g. `Arc::new`); the metadata stays.
    pub fn map_items<U>(self, f: impl FnMut(K) -> U) -> ListPage<U> {
        ListPage {
            items: self.items.into_iter().map(f).collect(),
            resource_version: self.resource_version,
            continue_token: self.continue_token,
            remaining_item_count: self.remaining_item_count,
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

/// How a Reflector lists and watches one kind of object (client-go's `ListerWatcher`).
///
/// Object-safe, so a Reflector holds an `Arc<dyn ListerWatcher<K>>`. Implementations:
/// [`ListWatch`] (two closures), and [`KubeListerWatcher`](crate::source::KubeListerWatcher)
/// for real clusters.
///
/// Contract: `list` returns one page for exactly the given options (the Reflector drives
/// pagination through `continue_token`); `watch` opens one watch with exactly the given options
/// (`send_initial_events` included) and reports a failure to start it as `Err`, not as a stream
/// item.
pub trait ListerWatcher<K>: Send + Sync {
    /// Lists one page.
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, Result<ListPage<K>, ListWatchError>>;
    /// Opens a watch.
    fn watch(&self, options: &ListOptions)
    -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>>;

    /// Lists one page with each object already behind its `Arc` (what the Reflector hands to
    /// its store); same contract as [`list`](Self::list).
    ///
    /// The default wraps the items of `list`. A source that decodes objects one by one
    /// overrides it to put each object behind its `Arc` as soon as it is decoded, so a large
    /// page never exists twice in memory (once inline in a `Vec<K>`, once behind `Arc`s);
    /// [`KubeListerWatcher`](crate::source::KubeListerWatcher) does.
    fn list_shared(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<ListPage<Arc<K>>, ListWatchError>>
    where
        K: Send + 'static,
    {
        let page = self.list(options);
        Box::pin(async move { Ok(page.await?.map_items(Arc::new)) })
    }

    /// Lists one page like [`list_shared`](Self::list_shared), but may hand items to
    /// `deliver` in batches while the response is still arriving; the returned page holds the
    /// items not delivered that way (all of them, in the default implementation).
    ///
    /// Contract for implementations: items go to `deliver` in server order, and only once the
    /// response is known to be a list of the right kind. If the call then fails, the delivered
    /// items were nevertheless objects of that list. The Reflector uses this to apply a large
    /// list while it downloads, holding at most a batch of it at a time.
    fn list_batched<'a>(
        &'a self,
        options: &ListOptions,
        deliver: &'a mut (dyn FnMut(Vec<Arc<K>>) + Send),
    ) -> BoxFuture<'a, Result<ListPage<Arc<K>>, ListWatchError>>
    where
        K: Send + 'static,
    {
        let _ = deliver;
        self.list_shared(options)
    }
}

impl<K, T: ListerWatcher<K> + ?Sized> ListerWatcher<K> for Arc<T> {
    fn list_batched<'a>(
        &'a self,
        options: &ListOptions,
        deliver: &'a mut (dyn FnMut(Vec<Arc<K>>) + Send),
    ) -> BoxFuture<'a, Result<ListPage<Arc<K>>, ListWatchError>>
    where
        K: Send + 'static,
    {
        (**self).list_batched(options, deliver)
    }
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, Result<ListPage<K>, ListWatchError>> {
        (**self).list(options)
    }
    fn list_shared(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<ListPage<Arc<K>>, ListWatchError>>
    where
        K: Send + 'static,
    {
        (**self).list_shared(options)
    }
    fn watch(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>> {
        (**self).watch(options)
    }
}

type ListFn<K> = Arc<
    dyn Fn(ListOptions) -> BoxFuture<'static, Result<ListPage<K>, ListWatchError>> + Send + Sync,
>;
type WatchFn<K> = Arc<
    dyn Fn(ListOptions) -> BoxFuture<'static, Result<WatchStream<K>, ListWatchError>> + Send + Sync,
>;
type TweakFn = Arc<dyn Fn(&mut ListOptions) + Send + Sync>;

/// A [`ListerWatcher`] made of two closures (client-go's `ListWatch`), with an optional hook
/// that adjusts every request's options (client-go `NewFilteredListWatchFromClient`'s
/// `optionsModifier`, e.g. to add a label selector).
///
/// ```
/// use futures::FutureExt;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::reflector::{ListPage, ListWatch};
/// let lw: ListWatch<Pod> = ListWatch::new(
///     |_opts| async { Ok(ListPage::new(vec![], "1")) }.boxed(),
///     |_opts| async { Ok(futures::StreamExt::boxed(futures::stream::empty())) }.boxed(),
/// )
/// .with_tweak_options(|o| o.label_selector = Some("app=web".into()));
/// # let _ = lw;
/// ```
pub struct ListWatch<K> {
    list_fn: ListFn<K>,
    watch_fn: WatchFn<K>,
    tweak: Option<TweakFn>,
}

impl<K> Clone for ListWatch<K> {
    fn clone(&self) -> Self {
        Self {
            list_fn: self.list_fn.clone(),
            watch_fn: self.watch_fn.clone(),
            tweak: self.tweak.clone(),
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
            tweak: None,
        }
    }

    /// Adds a hook that adjusts the options of every list and watch request before it is sent.
    #[must_use]
    pub fn with_tweak_options(
        mut self,
        tweak: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> Self {
        self.tweak = Some(Arc::new(tweak));
        self
    }

    fn tweaked(&self, options: &ListOptions) -> ListOptions {
        let mut o = options.clone();
        if let Some(t) = &self.tweak {
            t(&mut o);
        }
        o
    }
}

impl<K: Send + 'static> ListerWatcher<K> for ListWatch<K> {
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, Result<ListPage<K>, ListWatchError>> {
        (self.list_fn)(self.tweaked(options))
    }
    fn watch(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>> {
        (self.watch_fn)(self.tweaked(options))
    }
}
