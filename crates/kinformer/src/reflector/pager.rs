//! Collecting a paginated list (client-go's `tools/pager` `ListPager.List`).

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
    mut options: ListOptions,
    page_size: Option<u32>,
) -> Result<FullList<K>, ListWatchError> {
    if options.limit.is_none() {
        options.limit = page_size.filter(|s| *s > 0);
    }
    let requested_rv = options.resource_version.clone();
    let requested_match = options.resource_version_match;
    let mut result: Option<FullList<K>> = None;
    loop {
        let page = match lw.list(&options).await {
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
                let page = lw.list(&full).await?;
                return Ok(FullList {
                    items: page.items,
                    resource_version: page.resource_version,
                    paginated: true,
                });
            }
            Err(e) => return Err(e),
        };
        let next = page.continue_token.filter(|c| !c.is_empty());
        match &mut result {
            None => {
                result = Some(FullList {
                    items: page.items,
                    resource_version: page.resource_version,
                    paginated: next.is_some(),
                })
            }
            Some(r) => r.items.extend(page.items),
        }
        match next {
            None => {
                return Ok(result.unwrap_or_else(|| FullList {
                    items: Vec::new(),
                    resource_version: String::new(),
                    paginated: false,
                }));
            }
            Some(token) => {
                options.continue_token = Some(token);
                options.resource_version = String::new();
                options.resource_version_match = None;
            }
        }
    }
}
