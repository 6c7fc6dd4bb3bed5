//! A Reflector's source narrowed to one [`Shard`]: the selector sent with every request, and
//! every object and event checked on arrival, so the cache holds only the shard's objects
//! whether or not the server honoured the selector.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use futures::StreamExt;
use futures::future::BoxFuture;

use super::lister_watcher::{ItemSink, ListMeta, ListerWatcher, WatchEvent, WatchStream};
use super::{ListOptions, ListWatchError};
use crate::Object;
use crate::shard::Shard;

/// What the last list response said about the selector.
const UNKNOWN: u8 = 0;
const HONOURED: u8 = 1;
const IGNORED: u8 = 2;

/// A source whose requests carry `shard`'s selector and whose objects are filtered by it.
///
/// The selector replaces any `shardSelector` the options carry (a tweak's included): the
/// configuration's shard is what the cache is filtered by, so it is what the server is asked.
pub(super) struct Sharded<K> {
    inner: Arc<dyn ListerWatcher<K>>,
    shard: Shard,
    selector: String,
    name: String,
    /// [`UNKNOWN`], [`HONOURED`] or [`IGNORED`]: logged when it changes (once per informer
    /// in practice).
    seen: Arc<AtomicU8>,
}

impl<K: Object> Sharded<K> {
    /// `inner` narrowed to `shard`; `name` is the Reflector's, for the logs.
    pub(super) fn wrap(
        inner: Arc<dyn ListerWatcher<K>>,
        shard: Shard,
        name: &str,
    ) -> Arc<dyn ListerWatcher<K>> {
        Arc::new(Self {
            inner,
            selector: shard.selector(),
            shard,
            name: name.to_owned(),
            seen: Arc::new(AtomicU8::new(UNKNOWN)),
        })
    }

    fn options(&self, options: &ListOptions) -> ListOptions {
        ListOptions {
            shard_selector: Some(self.selector.clone()),
            ..options.clone()
        }
    }

    /// Records what a list response's `shardInfo` says, logging when it changes.
    fn observe(&self, meta: &ListMeta) {
        let now = match &meta.shard_info {
            Some(s) if *s == self.selector => HONOURED,
            Some(other) => {
                tracing::warn!(
                    reflector = %self.name,
                    sent = %self.selector,
                    echoed = %other,
                    "the server echoed another shard selector; filtering on the client"
                );
                IGNORED
            }
            None => IGNORED,
        };
        if self.seen.swap(now, Ordering::Relaxed) != now {
            if now == HONOURED {
                tracing::info!(reflector = %self.name, selector = %self.selector,
                    "the server honours the shard selector (shardInfo echoed)");
            } else {
                tracing::info!(reflector = %self.name, selector = %self.selector,
                    "the list carried no shardInfo (a server without the ShardedListAndWatch gate, or a list kube-apiserver does not echo it in: custom resources, metadata only); filtering on the client");
            }
        }
    }
}

impl<K: Object> ListerWatcher<K> for Sharded<K> {
    fn list<'a>(
        &'a self,
        options: &ListOptions,
        sink: ItemSink<'a, K>,
    ) -> BoxFuture<'a, Result<ListMeta, ListWatchError>> {
        let options = self.options(options);
        Box::pin(async move {
            let shard = &self.shard;
            let mut filtered = |items: Vec<Arc<K>>| {
                let kept: Vec<Arc<K>> = items
                    .into_iter()
                    .filter(|o| shard.contains(o.as_ref()))
                    .collect();
                if !kept.is_empty() {
                    sink(kept);
                }
            };
            let meta = self.inner.list(&options, &mut filtered).await?;
            self.observe(&meta);
            Ok(meta)
        })
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>> {
        let options = self.options(options);
        Box::pin(async move {
            let stream = self.inner.watch(&options).await?;
            let shard = self.shard.clone();
            Ok(stream
                .filter(move |event| {
                    // uid and namespace are immutable: an object outside the shard never was
                    // in it, so none of its events (MODIFIED and DELETED included) concern
                    // the cache
                    let keep = match event {
                        Ok(
                            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o),
                        ) => shard.contains(o),
                        _ => true,
                    };
                    std::future::ready(keep)
                })
                .boxed())
        })
    }

    fn supports_streaming_list(&self) -> bool {
        self.inner.supports_streaming_list()
    }
}
