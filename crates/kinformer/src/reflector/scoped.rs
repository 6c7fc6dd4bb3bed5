//! The selectors and tweak of an [`InformerConfig`](crate::InformerConfig), applied to every
//! request a Reflector sends, whatever its source.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::hooks::TweakFn;
use super::lister_watcher::{ItemSink, ListMeta, ListerWatcher, WatchStream};
use super::{ListOptions, ListWatchError};

/// What narrows every request: label and field selectors (where the request sets none) and
/// then the tweak.
#[derive(Clone, Default)]
pub(super) struct RequestScope {
    pub(super) label_selector: Option<String>,
    pub(super) field_selector: Option<String>,
    pub(super) tweak: Option<TweakFn>,
}

impl RequestScope {
    fn is_empty(&self) -> bool {
        self.label_selector.is_none() && self.field_selector.is_none() && self.tweak.is_none()
    }

    fn apply(&self, options: &ListOptions) -> ListOptions {
        let mut o = options.clone();
        if o.label_selector.is_none() {
            o.label_selector = self.label_selector.clone();
        }
        if o.field_selector.is_none() {
            o.field_selector = self.field_selector.clone();
        }
        if let Some(t) = &self.tweak {
            t(&mut o);
        }
        o
    }

    /// `source`, narrowed by this scope (itself when there is nothing to narrow).
    pub(super) fn wrap<K: Send + Sync + 'static>(
        self,
        source: Arc<dyn ListerWatcher<K>>,
    ) -> Arc<dyn ListerWatcher<K>> {
        if self.is_empty() {
            source
        } else {
            Arc::new(Scoped {
                inner: source,
                scope: self,
            })
        }
    }
}

/// A source whose every request is narrowed by a [`RequestScope`]; forwards the whole
/// [`ListerWatcher`] protocol.
struct Scoped<K> {
    inner: Arc<dyn ListerWatcher<K>>,
    scope: RequestScope,
}

impl<K: Send + Sync + 'static> ListerWatcher<K> for Scoped<K> {
    fn list<'a>(
        &'a self,
        options: &ListOptions,
        sink: ItemSink<'a, K>,
    ) -> BoxFuture<'a, Result<ListMeta, ListWatchError>> {
        let options = self.scope.apply(options);
        Box::pin(async move { self.inner.list(&options, sink).await })
    }
    fn watch(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>> {
        let options = self.scope.apply(options);
        Box::pin(async move { self.inner.watch(&options).await })
    }
    fn supports_streaming_list(&self) -> bool {
        self.inner.supports_streaming_list()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_fill_what_the_request_left_unset_then_the_tweak_runs() {
        let scope = RequestScope {
            label_selector: Some("app=web".into()),
            field_selector: Some("spec.nodeName=n1".into()),
            tweak: Some(Arc::new(|o: &mut ListOptions| {
                o.label_selector = o.label_selector.take().map(|l| l + ",tier=front")
            })),
        };
        let sent = scope.apply(&ListOptions::default());
        assert_eq!(sent.label_selector.as_deref(), Some("app=web,tier=front"));
        assert_eq!(sent.field_selector.as_deref(), Some("spec.nodeName=n1"));
        let own = ListOptions {
            field_selector: Some("metadata.name=x".into()),
            ..Default::default()
        };
        assert_eq!(
            scope.apply(&own).field_selector.as_deref(),
            Some("metadata.name=x"),
            "a request's own selector wins"
        );
    }
}
