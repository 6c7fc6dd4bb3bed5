//! The options of one list or watch request (client-go's `metav1.ListOptions`, the part a
//! Reflector uses).

/// How a list or watch interprets `resourceVersion` (the API's `resourceVersionMatch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceVersionMatch {
    /// Data at least as new as the given resource version (`NotOlderThan`).
    NotOlderThan,
    /// Data at exactly the given resource version (`Exact`).
    Exact,
}

impl ResourceVersionMatch {
    /// The value sent on the wire: `"NotOlderThan"` or `"Exact"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotOlderThan => "NotOlderThan",
            Self::Exact => "Exact",
        }
    }
}

/// One list or watch request's options: client-go's `metav1.ListOptions`.
///
/// `resource_version` keeps the API's string semantics: `""` means "most recent" (a consistent
/// read), `"0"` means "any version" (served from the watch cache), anything else is a specific
/// version. `None`/`false` fields are not sent.
///
/// ```
/// use kinformer::reflector::{ListOptions, ResourceVersionMatch};
/// let o = ListOptions { resource_version: "0".into(), limit: Some(500), ..Default::default() };
/// assert_eq!(o.resource_version_match, None::<ResourceVersionMatch>);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `limit`: the page size of a list; `None` lists everything in one response.
    pub limit: Option<u32>,
    /// `continue`: the token of the next page.
    pub continue_token: Option<String>,
    /// `resourceVersion` (`""` = most recent, `"0"` = any).
    pub resource_version: String,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `timeoutSeconds`: how long the server keeps a watch open.
    pub timeout_seconds: Option<u32>,
    /// `allowWatchBookmarks`.
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents` (streaming list).
    pub send_initial_events: Option<bool>,
    /// `shardSelector` (KEP-5866, Kubernetes 1.36 alpha): only the objects of one shard, e.g.
    /// `shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')`. Set by
    /// an informer with a [`Shard`](crate::shard::Shard); a server without the
    /// `ShardedListAndWatch` gate ignores it.
    pub shard_selector: Option<String>,
}

impl ListOptions {
    /// The options of the page after this one, whose response carried `token`: the same
    /// request with the continue token and without `resourceVersion`/`resourceVersionMatch`,
    /// as the API requires (client-go's `ListPager`).
    #[must_use]
    pub fn next_page(&self, token: impl Into<String>) -> Self {
        Self {
            continue_token: Some(token.into()),
            resource_version: String::new(),
            resource_version_match: None,
            ..self.clone()
        }
    }

    /// The query string (without `?`) for this request, `watch=true` included when `watch` is
    /// set. Values are percent-encoded; unset options are left out.
    ///
    /// ```
    /// use kinformer::reflector::ListOptions;
    /// let o = ListOptions { resource_version: "0".into(), limit: Some(500), label_selector: Some("a=b,c".into()), ..Default::default() };
    /// assert_eq!(o.to_query(false), "labelSelector=a%3Db%2Cc&limit=500&resourceVersion=0");
    /// ```
    pub fn to_query(&self, watch: bool) -> String {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if watch {
            pairs.push(("watch", "true".into()));
        }
        if let Some(l) = &self.label_selector {
            pairs.push(("labelSelector", l.clone()));
        }
        if let Some(f) = &self.field_selector {
            pairs.push(("fieldSelector", f.clone()));
        }
        if let Some(limit) = self.limit {
            pairs.push(("limit", limit.to_string()));
        }
        if let Some(c) = &self.continue_token {
            pairs.push(("continue", c.clone()));
        }
        if !self.resource_version.is_empty() {
            pairs.push(("resourceVersion", self.resource_version.clone()));
        }
        if let Some(m) = self.resource_version_match {
            pairs.push(("resourceVersionMatch", m.as_str().into()));
        }
        if let Some(t) = self.timeout_seconds {
            pairs.push(("timeoutSeconds", t.to_string()));
        }
        if self.allow_watch_bookmarks {
            pairs.push(("allowWatchBookmarks", "true".into()));
        }
        if let Some(s) = self.send_initial_events {
            pairs.push(("sendInitialEvents", s.to_string()));
        }
        if let Some(s) = &self.shard_selector {
            pairs.push(("shardSelector", s.clone()));
        }
        let mut out = String::new();
        for (i, (k, v)) in pairs.iter().enumerate() {
            if i > 0 {
                out.push('&');
            }
            out.push_str(k);
            out.push('=');
            percent_encode_into(v, &mut out);
        }
        out
    }
}

fn percent_encode_into(value: &str, out: &mut String) {
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.push('%');
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 0xf) as usize] as char);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_list_query_carries_every_streaming_option() {
        let o = ListOptions {
            resource_version: String::new(),
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            timeout_seconds: Some(300),
            allow_watch_bookmarks: true,
            send_initial_events: Some(true),
            ..Default::default()
        };
        assert_eq!(
            o.to_query(true),
            "watch=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=300&allowWatchBookmarks=true&sendInitialEvents=true"
        );
    }

    #[test]
    fn shard_selectors_are_sent_percent_encoded() {
        let o = ListOptions {
            shard_selector: Some(
                "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"
                    .into(),
            ),
            ..Default::default()
        };
        assert_eq!(
            o.to_query(true),
            "watch=true&shardSelector=shardRange%28object.metadata.uid%2C%20%270x0000000000000000%27%2C%20%270x10000000000000000%27%29"
        );
    }

    #[test]
    fn continue_tokens_are_percent_encoded() {
        let o = ListOptions {
            continue_token: Some("eyJ2Ijoi/+=".into()),
            limit: Some(4),
            ..Default::default()
        };
        assert_eq!(o.to_query(false), "limit=4&continue=eyJ2Ijoi%2F%2B%3D");
    }
}
