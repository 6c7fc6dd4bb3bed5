//! One informer over a set of namespaces that can change while it runs: [`NamespaceSet`] (the
//! shared handle) and [`NamespaceSetListerWatcher`] (the source that lists and watches the set
//! as one).

mod list;
mod set;
mod watch;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;

use self::set::Names;
pub use self::set::{NamespaceError, NamespaceSet};
use crate::reflector::{
    BackoffConfig, ItemSink, ListMeta, ListOptions, ListWatchError, ListerWatcher, Status,
    WatchStream,
};

/// The `details.causes[].type` of the `410` a [`NamespaceSetListerWatcher`] ends its watch with
/// when its [`NamespaceSet`] changed, so that the Reflector relists the new set. A
/// [watch error handler](crate::InformerConfig::watch_error_handler) can tell it apart:
///
/// ```
/// use kinformer::NAMESPACE_SET_CHANGED;
/// use kinformer::reflector::ReflectorError;
/// fn on_error(e: &ReflectorError) {
///     let set_changed = e.list_watch_error().and_then(|e| e.status())
///         .is_some_and(|s| s.causes.iter().any(|c| c.cause_type == NAMESPACE_SET_CHANGED));
///     if !set_changed { eprintln!("{e}") }
/// }
/// # let _ = on_error;
/// ```
pub const NAMESPACE_SET_CHANGED: &str = "NamespaceSetChanged";

/// The `410` that makes the Reflector relist a changed set.
fn set_changed() -> ListWatchError {
    let message = "the namespace set changed; relisting it";
    Status::expired(message)
        .with_cause(NAMESPACE_SET_CHANGED, message)
        .into()
}

/// Where the informer's cache stands, per namespace: what the next watch resumes from.
#[derive(Debug, Clone)]
struct Resume {
    /// The namespaces the cache holds (the last list's set).
    names: Names,
    /// The last resourceVersion handed to the Reflector (a list's, an event's or a forwarded
    /// bookmark's): a watch asked from it resumes every namespace from its own version.
    rv: String,
    /// Each namespace's last resourceVersion seen (its events and bookmarks).
    per_ns: BTreeMap<String, String>,
    /// The last bookmark forwarded (a version every namespace has reached).
    bookmark: String,
}

/// The per-namespace sources, made on first use.
type MakeSource<K> = Arc<dyn Fn(&str) -> Arc<dyn ListerWatcher<K>> + Send + Sync>;

/// A [`ListerWatcher`] over the namespaces of a [`NamespaceSet`], as one source: everything
/// that takes a [`SharedIndexInformer`](crate::SharedIndexInformer) (controllers, listers,
/// indexes, metrics, lean caches, snapshots) works unchanged over a set. The factory and
/// [`SharedIndexInformer::new`](crate::SharedIndexInformer::new) make one for every namespaced
/// type whose [`InformerConfig::namespaces`](crate::InformerConfig::namespaces) is set; `new`
/// makes one over any per-namespace source.
///
/// # List
///
/// Namespace by namespace, in name order, each through its own source (a
/// [`KubeListerWatcher`](crate::KubeListerWatcher): decoded in parallel while it downloads and
/// handed to the store in parts, page by page, as for one namespace). The first namespace is
/// listed as the Reflector asked; every other at exactly the first list's resourceVersion
/// (`resourceVersionMatch=Exact`), so the union is one consistent snapshot at that version,
/// which is the list's. A relist asks the first namespace for at least the newest version any
/// namespace's watch had reached (the Reflector's own version can be behind some namespaces),
/// so no namespace goes back in time. A `410` on one of them (history compacted in between) fails the list,
/// and the Reflector lists again at the newest version. A namespace whose list is paged ends a
/// page with a continue token that carries the namespaces, the version and the namespace's own
/// token, so the Reflector's pager drives the pages of every namespace in turn.
///
/// # Watch
///
/// One watch per namespace, merged into one stream. Events of different namespaces interleave
/// out of resourceVersion order, so no single version says where every namespace stands. This
/// source therefore keeps each namespace's last version (from its events and bookmarks): a
/// namespace's watch that the server closes is reopened inside the merged stream from that
/// namespace's own version, and when the Reflector reopens the whole watch (after the merged
/// stream ends at its `timeoutSeconds`, or breaks) from the last version it was handed, every
/// namespace resumes from its own. A watch asked from any other version (this process never
/// listed the set, e.g. resuming from a [snapshot](crate::snapshot)) is refused with a `410`,
/// so the Reflector lists (diffed against the snapshot) instead of risking lost events: a
/// snapshot holds each namespace up to its own version, which one resourceVersion cannot say.
/// **Deliberate difference** from a single-namespace informer, which resumes without a list.
///
/// Bookmarks: a namespace's bookmark is forwarded only when it raises the lowest version over
/// all namespaces, and carries that lowest version: every namespace has seen everything up to
/// it, so it is a version the whole cache has reached. The Reflector's activity signals
/// ([`since_last_watch_activity`](crate::reflector::Reflector::since_last_watch_activity))
/// then see a quiet set's bookmarks about once a minute, as for one namespace.
///
/// # A change of the set
///
/// The open watch ends with a `410` whose cause is [`NAMESPACE_SET_CHANGED`] (a watch opened
/// after a change is refused with it), and the Reflector relists the new set after one backoff
/// step (0.8 to 1.6 s while the informer has been healthy): the store replaces its contents
/// atomically, so a new namespace's objects arrive as adds and a removed namespace's leave as
/// deletes. The cost is a relist of the whole set: every object is downloaded and decoded
/// again, but an unchanged one (same resourceVersion) keeps the cached object and is told to
/// no handler outside a resync round (the informer's rule for relists, as client-go's). An
/// informer not yet started lists the set as it is when it starts.
///
/// # Streaming lists
///
/// Not used ([`supports_streaming_list`](ListerWatcher::supports_streaming_list) is false):
/// each namespace's streaming list ends at its own version, so the union would not be one
/// snapshot, and there is no single version for the end bookmark to carry. Lists with `Exact`
/// have none of these problems. A watch asked with `sendInitialEvents=true` is refused as
/// unsupported (the Reflector then lists).
///
/// # Consistency checks
///
/// A list with `resourceVersionMatch=Exact` and no continue token (what
/// [`check_consistency`](crate::SharedIndexInformer::check_consistency) sends) lists the
/// namespaces the cache holds and leaves the resume state alone (as does any list with a
/// `resourceVersionMatch`: only the Reflector's own lists, which send none, set it). Because the cache of a set is
/// up to date per namespace, not at one version, a check during churn can report objects that
/// changed after the cache's version in a namespace whose watch had got further.
///
/// Give each informer its own source: the resume state is the source's. `n` namespaces cost
/// `n` watches and, on every relist, `n` list requests, as controller-runtime's one informer
/// per namespace does.
///
/// # Deliberate differences from controller-runtime
///
/// controller-runtime's `cache.Options.DefaultNamespaces` makes one informer (one cache, one
/// resourceVersion, one handler registration each) per namespace, fixed when the cache is
/// built, and fans handlers out over them. Here:
/// * one informer over the set: one cache, one index, one handler registration, one
///   `has_synced`, and everything that takes a [`SharedIndexInformer`](crate::SharedIndexInformer)
///   works unchanged;
/// * the set can change while it runs (controller-runtime #2829), with adds and deletes for
///   exactly the namespaces that changed;
/// * every namespace shares the informer's selectors and transform: no per-namespace
///   `cache.Config`, and no `cache.AllNamespaces` entry meaning "every other namespace".
pub struct NamespaceSetListerWatcher<K> {
    set: NamespaceSet,
    make: MakeSource<K>,
    sources: Mutex<BTreeMap<String, Arc<dyn ListerWatcher<K>>>>,
    resume: Arc<Mutex<Option<Resume>>>,
    backoff: BackoffConfig,
}

impl<K: Send + Sync + 'static> NamespaceSetListerWatcher<K> {
    /// A source over `set`, with `per_namespace(ns)` making the source of namespace `ns` (made
    /// once, when the namespace is first listed).
    ///
    /// ```
    /// use futures::FutureExt;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::{NamespaceSet, NamespaceSetListerWatcher};
    /// use kinformer::reflector::{ListPage, ListWatch, ListerWatcher};
    /// let set = NamespaceSet::new(["a", "b"])?;
    /// let lw = NamespaceSetListerWatcher::<Pod>::new(set, |_ns| ListWatch::new(
    ///     |_| async { Ok(ListPage::new(vec![], "1")) }.boxed(),
    ///     |_| async { Ok(futures::StreamExt::boxed(futures::stream::empty())) }.boxed(),
    /// ));
    /// assert!(!lw.supports_streaming_list());
    /// # Ok::<(), kinformer::NamespaceError>(())
    /// ```
    pub fn new<L, F>(set: NamespaceSet, per_namespace: F) -> Self
    where
        L: ListerWatcher<K> + 'static,
        F: Fn(&str) -> L + Send + Sync + 'static,
    {
        Self {
            set,
            make: Arc::new(move |ns| Arc::new(per_namespace(ns)) as Arc<dyn ListerWatcher<K>>),
            sources: Mutex::new(BTreeMap::new()),
            resume: Arc::new(Mutex::new(None)),
            backoff: BackoffConfig::default(),
        }
    }

    /// The delays between reopenings of one namespace's watch that keeps closing at once, or
    /// whose reopening the server answers with 429 or a refused connection (default: the
    /// Reflector's, [`BackoffConfig::default`]).
    #[must_use]
    pub fn backoff(mut self, backoff: BackoffConfig) -> Self {
        self.backoff = backoff;
        self
    }

    /// The set this source follows.
    pub fn namespace_set(&self) -> &NamespaceSet {
        &self.set
    }

    /// The source of namespace `ns`.
    fn source(&self, ns: &str) -> Arc<dyn ListerWatcher<K>> {
        let mut sources = self.sources.lock();
        sources
            .entry(ns.to_owned())
            .or_insert_with(|| (self.make)(ns))
            .clone()
    }

    /// Forgets the sources of namespaces no longer listed.
    fn retain_sources(&self, names: &Names) {
        self.sources.lock().retain(|ns, _| names.contains(ns));
    }
}

impl<K> NamespaceSetListerWatcher<K>
where
    K: kube::Resource + serde::de::DeserializeOwned + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Clone,
    K::Scope: 'static,
{
    /// A source over `config`'s [`namespaces`](crate::InformerConfig::namespaces) through
    /// `client`, each namespace a [`KubeListerWatcher`](crate::KubeListerWatcher) with
    /// `config`'s wire options; `None` when `config` has no namespace set.
    pub(crate) fn kube(
        client: kube::Client,
        config: &crate::InformerConfig<K>,
        dyntype: &K::DynamicType,
    ) -> Option<Self> {
        let set = config.namespaces.clone()?;
        let mut per_ns = config.clone();
        per_ns.namespaces = None;
        let dyntype = dyntype.clone();
        let source = move |ns: &str| {
            let mut config = per_ns.clone();
            config.namespace = Some(ns.to_owned());
            crate::KubeListerWatcher::new_with(client.clone(), &config, &dyntype)
        };
        Some(Self::new(set, source).backoff(config.backoff))
    }
}

/// The source of an informer the library makes from `config`: over its namespace set when it
/// has one and `K` is namespaced, else one [`KubeListerWatcher`](crate::KubeListerWatcher).
pub(crate) fn kube_source<K>(
    client: kube::Client,
    config: &crate::InformerConfig<K>,
    dyntype: &K::DynamicType,
    namespaced: bool,
) -> Arc<dyn ListerWatcher<K>>
where
    K: kube::Resource + serde::de::DeserializeOwned + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Clone,
    K::Scope: 'static,
{
    if namespaced
        && let Some(set) = NamespaceSetListerWatcher::kube(client.clone(), config, dyntype)
    {
        return Arc::new(set);
    }
    Arc::new(crate::KubeListerWatcher::new_with(client, config, dyntype))
}

impl<K> ListerWatcher<K> for NamespaceSetListerWatcher<K>
where
    K: crate::Object,
{
    fn list<'a>(
        &'a self,
        options: &ListOptions,
        sink: ItemSink<'a, K>,
    ) -> BoxFuture<'a, Result<ListMeta, ListWatchError>> {
        let options = options.clone();
        Box::pin(async move { self.list_set(options, sink).await })
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>> {
        let options = options.clone();
        Box::pin(async move { self.watch_set(options).await })
    }

    /// False: see the type's "Streaming lists".
    fn supports_streaming_list(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
