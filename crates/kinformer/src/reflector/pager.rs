//! Collecting a paginated list (client-go's `tools/pager` `ListPager.List`).

use std::sync::Arc;

use super::error::ListWatchError;
use super::lister_watcher::ListerWatcher;
use super::options::ListOptions;

/// The default page size (client-go's `pager.defaultPageSize`).
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// A complete list, assembled from one or more pages.
#[derive(Debug, Clone, PartialEq)]
pub struct FullList<K> {
    /// Every item of every page, in server order.
    pub items: Vec<K>,
    /// The resource version of the list (the first page's).
    pub resource_version: String,
    /// Whether the server split the response into pages.
    pub paginated: bool,
}

/// Lists everything, following continue tokens (client-go's `ListPager.List` with
/// `FullListIfExpired`).
///
/// * `options.limit` unset → `page_size` is used (`None` = one unpaginated request);
/// * pages after the first are requested with the continue token and without
///   `resourceVersion`/`resourceVersionMatch`, as the API requires;
/// * when a continue token has expired (410 on page 2 or later), one full unpaginated list at the
///   originally requested resource version replaces the partial result.
///
/// # Errors
/// The first failing request's error (an expired *first* page is returned as is, so the caller
/// can decide to list at a different resource version).
pub async fn list_all<K>(
    lw: &(impl ListerWatcher<K> + ?Sized),
    options: ListOptions,
    page_size: Option<u32>,
) -> Result<FullList<K>, ListWatchError>
where
    K: Clone + Send + Sync + 'static,
{
    struct Collect<K>(Vec<Arc<K>>);
    impl<K: Send + Sync> ListSink<K> for Collect<K> {
        fn restart(&mut self) {
            self.0.clear();
        }
        fn deliver(&mut self, items: Vec<Arc<K>>) {
            self.0.extend(items);
        }
    }
    let mut sink = Collect(Vec::new());
    let end = list_pages(lw, options, page_size, &mut sink).await?;
    Ok(FullList {
        items: sink.0.into_iter().map(Arc::unwrap_or_clone).collect(),
        resource_version: end.resource_version,
        paginated: end.paginated,
    })
}

/// Where [`list_pages`] puts what it lists.
pub(crate) trait ListSink<K>: Send {
    /// The list starts over (after an expired continue token, one full list follows): what
    /// was delivered before no longer counts.
    fn restart(&mut self);
    /// The next items, in server order; called as often as items are ready (several times
    /// per page when the source delivers while downloading).
    fn deliver(&mut self, items: Vec<Arc<K>>);
}

/// How a paged list ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListEnd {
    /// The list's resource version (the first page's, or the full list's after a restart).
    pub(crate) resource_version: String,
    /// Whether the server split the response into pages.
    pub(crate) paginated: bool,
}

/// [`list_all`]'s protocol, delivering items to `sink` as they arrive (in the batches
/// [`ListerWatcher::list`] hands out) instead of collecting them.
pub(crate) async fn list_pages<K>(
    lw: &(impl ListerWatcher<K> + ?Sized),
    mut options: ListOptions,
    page_size: Option<u32>,
    sink: &mut dyn ListSink<K>,
) -> Result<ListEnd, ListWatchError>
where
    K: Send + Sync + 'static,
{
    if options.limit.is_none() {
        options.limit = page_size.filter(|s| *s > 0);
    }
    let requested_rv = options.resource_version.clone();
    let requested_match = options.resource_version_match;
    let mut first: Option<ListEnd> = None;
    loop {
        let page = {
            let mut deliver = |items: Vec<Arc<K>>| sink.deliver(items);
            lw.list(&options, &mut deliver).await
        };
        let page = match page {
            Ok(page) => page,
            Err(e) if e.is_expired() && options.continue_token.is_some() => {
                tracing::debug!(error = %e, "continue token expired; listing everything in one request");
                let full = ListOptions {
                    limit: None,
                    continue_token: None,
                    resource_version: requested_rv,
                    resource_version_match: requested_match,
                    ..options
                };
                sink.restart();
                let page = {
                    let mut deliver = |items: Vec<Arc<K>>| sink.deliver(items);
                    lw.list(&full, &mut deliver).await?
                };
                return Ok(ListEnd {
                    resource_version: page.resource_version,
                    paginated: true,
                });
            }
            Err(e) => return Err(e),
        };
        let next = page.continue_token.filter(|c| !c.is_empty());
        let end = first.get_or_insert(ListEnd {
            resource_version: page.resource_version,
            paginated: next.is_some(),
        });
        match next {
            None => return Ok(end.clone()),
            Some(token) => options = options.next_page(token),
        }
    }
}
