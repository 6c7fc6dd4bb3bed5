//! The watch half of [`NamespaceSetListerWatcher`]: one watch per namespace, merged, each
//! resumed from its own resourceVersion; bookmarks at the lowest version of all.

use std::cmp::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::{BoxStream, SelectAll};
use parking_lot::Mutex;
use tokio::time::Instant;

use super::set::Names;
use super::{NamespaceSetListerWatcher, Resume, set_changed};
use crate::object::{compare_resource_versions, meta_namespace_key, resource_version};
use crate::reflector::{
    Backoff, ListOptions, ListWatchError, ListerWatcher, Status, WatchEvent, WatchStream,
};

type Item<K> = Result<WatchEvent<K>, ListWatchError>;

/// A namespace's watch that closed sooner than this without an event is reopened after a
/// backoff delay, so a server that closes every watch at once is not hammered.
const SHORT_WATCH: Duration = Duration::from_secs(1);

impl<K: crate::Object> NamespaceSetListerWatcher<K> {
    /// Opens the merged watch (see the type's "Watch").
    pub(super) async fn watch_set(
        &self,
        options: ListOptions,
    ) -> Result<WatchStream<K>, ListWatchError> {
        if options.send_initial_events == Some(true) {
            return Err(Status::invalid(
                "streaming lists (sendInitialEvents) are not supported over a namespace set",
            )
            .into());
        }
        let mut changes = self.set.subscribe();
        let now = changes.borrow_and_update().clone();
        let resume = self.resume.lock().clone();
        let Some(resume) = resume else {
            return Err(Status::expired(
                "this namespace set was never listed here; a list comes first",
            )
            .into());
        };
        if resume.names != now {
            return Err(set_changed());
        }
        if resume.rv != options.resource_version {
            return Err(Status::expired(format!(
                "a namespace set's watch resumes only from the last version it handed out ({}), not {:?}",
                resume.rv, options.resource_version
            ))
            .into());
        }
        let deadline = options
            .timeout_seconds
            .map(|t| Instant::now() + Duration::from_secs(u64::from(t)));
        let names: Vec<String> = resume.names.iter().cloned().collect();
        let opened = futures::future::try_join_all(names.iter().map(|ns| {
            let source = self.source(ns);
            let request = ListOptions {
                resource_version: resume.per_ns.get(ns).cloned().unwrap_or_default(),
                ..options.clone()
            };
            async move { source.watch(&request).await }
        }))
        .await?;
        let mut subs = SelectAll::new();
        for (index, (ns, stream)) in names.iter().zip(opened).enumerate() {
            subs.push(
                Sub {
                    index,
                    ns: ns.clone(),
                    source: self.source(ns),
                    options: options.clone(),
                    stream: Some(stream),
                    resume: self.resume.clone(),
                    backoff: Backoff::new(self.backoff),
                    opened: Instant::now(),
                    delivered: false,
                    deadline,
                    failed: false,
                }
                .into_stream(),
            );
        }
        let merged = Merged {
            subs,
            names,
            listed: resume.names,
            changes,
            resume: self.resume.clone(),
            deadline,
            done: false,
        };
        Ok(merged.into_stream())
    }
}

/// One namespace's watch, reopened from the namespace's own version when the server closes it.
struct Sub<K> {
    index: usize,
    ns: String,
    source: Arc<dyn ListerWatcher<K>>,
    options: ListOptions,
    stream: Option<WatchStream<K>>,
    resume: Arc<Mutex<Option<Resume>>>,
    backoff: Backoff,
    opened: Instant,
    delivered: bool,
    deadline: Option<Instant>,
    failed: bool,
}

impl<K: crate::Object> Sub<K> {
    fn into_stream(self) -> BoxStream<'static, (usize, Item<K>)> {
        futures::stream::unfold(self, |mut sub| async move {
            let item = sub.next().await?;
            Some(((sub.index, item), sub))
        })
        .boxed()
    }

    async fn next(&mut self) -> Option<Item<K>> {
        loop {
            if self.failed {
                return None;
            }
            if let Some(stream) = &mut self.stream {
                match stream.next().await {
                    Some(item) => {
                        self.delivered = true;
                        return Some(item);
                    }
                    None => self.stream = None,
                }
            }
            // closed by the server: reopen from this namespace's own version
            let timeout = match self.deadline {
                Some(at) => {
                    let left = at.saturating_duration_since(Instant::now()).as_secs();
                    if left < 1 {
                        // the merged watch ends at its deadline; nothing to reopen for
                        return std::future::pending().await;
                    }
                    Some(u32::try_from(left).unwrap_or(u32::MAX))
                }
                None => None,
            };
            if !self.delivered && self.opened.elapsed() < SHORT_WATCH {
                let delay = self.backoff.next_delay(Instant::now());
                tokio::time::sleep(delay).await;
            }
            let rv = self
                .resume
                .lock()
                .as_ref()
                .and_then(|r| r.per_ns.get(&self.ns).cloned());
            let Some(rv) = rv else {
                self.failed = true;
                return Some(Err(Status::expired(format!(
                    "namespace {} is no longer part of the listed set",
                    self.ns
                ))
                .into()));
            };
            let request = ListOptions {
                resource_version: rv,
                timeout_seconds: timeout.or(self.options.timeout_seconds),
                ..self.options.clone()
            };
            tracing::debug!(namespace = %self.ns, resource_version = %request.resource_version,
                "a namespace's watch closed; reopening it");
            match self.source.watch(&request).await {
                Ok(stream) => {
                    self.stream = Some(stream);
                    self.opened = Instant::now();
                    self.delivered = false;
                }
                Err(e) if e.is_watch_retriable() => {
                    let delay = self.backoff.next_delay(Instant::now());
                    tokio::time::sleep(delay).await;
                }
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// The merged stream: forwards events (recording each namespace's version), forwards
/// bookmarks that raise the lowest version, ends on a set change, an error or its deadline.
struct Merged<K> {
    subs: SelectAll<BoxStream<'static, (usize, Item<K>)>>,
    names: Vec<String>,
    /// The set the cache holds.
    listed: Names,
    changes: tokio::sync::watch::Receiver<Names>,
    resume: Arc<Mutex<Option<Resume>>>,
    deadline: Option<Instant>,
    done: bool,
}

impl<K: crate::Object> Merged<K> {
    fn into_stream(self) -> WatchStream<K> {
        futures::stream::unfold(self, |mut merged| async move {
            let item = merged.next().await?;
            Some((item, merged))
        })
        .boxed()
    }

    async fn next(&mut self) -> Option<Item<K>> {
        loop {
            if self.done {
                return None;
            }
            let at = self.deadline;
            let deadline = async {
                match at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let (index, item) = tokio::select! {
                biased;
                changed = self.changes.changed() => {
                    if changed.is_err() || *self.changes.borrow_and_update() != self.listed {
                        self.done = true;
                        return Some(Err(set_changed()));
                    }
                    continue;
                }
                () = deadline => return None,
                next = async {
                    // an empty set's watch waits for a change (or its deadline)
                    if self.subs.is_empty() {
                        std::future::pending::<()>().await;
                    }
                    self.subs.next().await
                } => next?,
            };
            let event = match item {
                Ok(event) => event,
                Err(e) => {
                    // a decode error skips one event; anything else ends the watch
                    self.done = !e.is_decode();
                    return Some(Err(e));
                }
            };
            if let Some(event) = self.record(index, event) {
                return Some(Ok(event));
            }
        }
    }

    /// Records where namespace `index` stands after `event`; returns what to forward.
    fn record(&mut self, index: usize, event: WatchEvent<K>) -> Option<WatchEvent<K>> {
        let mut guard = self.resume.lock();
        let Some(resume) = guard.as_mut().filter(|r| r.names == self.listed) else {
            // the source listed again meanwhile: this watch is stale
            self.done = true;
            return Some(WatchEvent::Error(Status::expired(
                "the namespace set was listed again while this watch was open",
            )));
        };
        let ns = &self.names[index];
        match event {
            WatchEvent::Added(ref obj)
            | WatchEvent::Modified(ref obj)
            | WatchEvent::Deleted(ref obj) => {
                let rv = resource_version(obj);
                if !rv.is_empty() {
                    resume.per_ns.insert(ns.clone(), rv.to_owned());
                    // the Reflector takes the version of every event it applies
                    if meta_namespace_key(obj).is_ok() {
                        resume.rv = rv.to_owned();
                    }
                }
                Some(event)
            }
            WatchEvent::Bookmark {
                resource_version, ..
            } => {
                if resource_version.is_empty() {
                    return None;
                }
                resume.per_ns.insert(ns.clone(), resource_version);
                let lowest = lowest(resume.per_ns.values())?;
                let raised = compare_resource_versions(&lowest, &resume.bookmark)
                    .map_or(resume.bookmark.is_empty() || resume.bookmark == "0", |o| {
                        o == Ordering::Greater
                    });
                if !raised {
                    return None;
                }
                resume.bookmark = lowest.clone();
                resume.rv = lowest.clone();
                Some(WatchEvent::bookmark(lowest))
            }
            WatchEvent::Error(status) => {
                self.done = true;
                Some(WatchEvent::Error(status))
            }
        }
    }
}

/// The lowest of comparable resource versions; `None` if any is not comparable.
fn lowest<'a>(rvs: impl Iterator<Item = &'a String>) -> Option<String> {
    let mut low: Option<&String> = None;
    for rv in rvs {
        low = match low {
            None => Some(rv),
            Some(l) => match compare_resource_versions(rv, l).ok()? {
                Ordering::Less => Some(rv),
                _ => Some(l),
            },
        };
    }
    if !crate::object::is_comparable_resource_version(low?) {
        return None;
    }
    low.cloned()
}
