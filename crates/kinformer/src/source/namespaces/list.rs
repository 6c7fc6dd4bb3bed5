//! The list half of [`NamespaceSetListerWatcher`]: namespace after namespace, the first as
//! asked, the others at exactly its resourceVersion; pages carried by a composite token.

use std::sync::Arc;

use serde_json::json;

use super::{NamespaceSetListerWatcher, Resume};
use crate::reflector::{ItemSink, ListMeta, ListOptions, ListWatchError, ResourceVersionMatch};

/// Where a paged list of a set stands: what a continue token carries.
#[derive(Debug, Clone, PartialEq)]
struct Cursor {
    /// The namespaces being listed, in order (the set when the list began).
    names: Vec<String>,
    /// The namespace the next page belongs to.
    index: usize,
    /// The list's resourceVersion (the first namespace's); empty before it is known.
    rv: String,
    /// That namespace's own continue token.
    inner: Option<String>,
    /// Whether the list, once complete, sets where the next watch resumes.
    record: bool,
}

/// The prefix of every token this source hands out.
const TOKEN_PREFIX: &str = "kinformer-namespace-set:";

impl Cursor {
    fn encode(&self) -> String {
        let body = json!({
            "names": self.names,
            "index": self.index,
            "rv": self.rv,
            "inner": self.inner,
            "record": self.record,
        });
        format!("{TOKEN_PREFIX}{body}")
    }

    fn decode(token: &str) -> Result<Self, ListWatchError> {
        let bad = || {
            ListWatchError::Decode(format!(
                "not a continue token of a namespace set list: {token:?}"
            ))
        };
        let body = token.strip_prefix(TOKEN_PREFIX).ok_or_else(bad)?;
        let v: serde_json::Value = serde_json::from_str(body).map_err(|_| bad())?;
        let names = v["names"]
            .as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|n| n.as_str().map(str::to_owned).ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()?;
        let index = usize::try_from(v["index"].as_u64().ok_or_else(bad)?).map_err(|_| bad())?;
        if index >= names.len() {
            return Err(bad());
        }
        Ok(Self {
            names,
            index,
            rv: v["rv"].as_str().ok_or_else(bad)?.to_owned(),
            inner: v["inner"].as_str().map(str::to_owned),
            record: v["record"].as_bool().ok_or_else(bad)?,
        })
    }
}

impl<K: crate::Object> NamespaceSetListerWatcher<K> {
    /// One call of the Reflector's pager: every namespace from the cursor on, until one ends a
    /// page with a continue token (returned, wrapped) or all are listed.
    pub(super) async fn list_set(
        &self,
        options: ListOptions,
        sink: ItemSink<'_, K>,
    ) -> Result<ListMeta, ListWatchError> {
        let mut cursor = match &options.continue_token {
            Some(token) => Cursor::decode(token)?,
            None => self.start(&options),
        };
        let mut base = ListOptions {
            continue_token: None,
            ..options.clone()
        };
        if options.continue_token.is_none() && cursor.record {
            base.resource_version = self.not_older_than(&options.resource_version);
        }
        let mut shard_info = None;
        while let Some(ns) = cursor.names.get(cursor.index).cloned() {
            let request = match (cursor.inner.take(), cursor.rv.is_empty()) {
                (Some(inner), _) => base.next_page(inner),
                // the first namespace, as asked
                (None, true) => base.clone(),
                (None, false) => ListOptions {
                    resource_version: cursor.rv.clone(),
                    resource_version_match: Some(ResourceVersionMatch::Exact),
                    ..base.clone()
                },
            };
            let meta = self.source(&ns).list(&request, &mut *sink).await?;
            if cursor.rv.is_empty() {
                if meta.resource_version.is_empty() {
                    return Err(ListWatchError::Decode(format!(
                        "the list of namespace {ns} carried no resourceVersion"
                    )));
                }
                cursor.rv = meta.resource_version;
            }
            shard_info = meta.shard_info.or(shard_info);
            if let Some(token) = meta.continue_token.filter(|t| !t.is_empty()) {
                cursor.inner = Some(token);
                return Ok(ListMeta {
                    resource_version: cursor.rv.clone(),
                    continue_token: Some(cursor.encode()),
                    remaining_item_count: None,
                    shard_info,
                });
            }
            cursor.index += 1;
        }
        if cursor.rv.is_empty() {
            // an empty set: nothing to list, and no server version to report
            cursor.rv = match options.resource_version.as_str() {
                "" => "0".to_owned(),
                rv => rv.to_owned(),
            };
        }
        if cursor.record {
            let names: super::Names = Arc::new(cursor.names.iter().cloned().collect());
            self.retain_sources(&names);
            *self.resume.lock() = Some(Resume {
                per_ns: names
                    .iter()
                    .map(|ns| (ns.clone(), cursor.rv.clone()))
                    .collect(),
                names,
                rv: cursor.rv.clone(),
                bookmark: cursor.rv.clone(),
            });
        }
        Ok(ListMeta {
            resource_version: cursor.rv,
            continue_token: None,
            remaining_item_count: None,
            shard_info,
        })
    }

    /// The version a relist asks for: the one asked, or the newest any namespace's watch had
    /// reached if that is newer. The Reflector relists at the last version it was handed, which
    /// for a set can be behind some namespaces (events interleave, bookmarks carry the lowest
    /// version); asking for at least the newest keeps the relist from taking those namespaces
    /// back in time. `""` (newest) and `"0"` (any) are kept.
    fn not_older_than(&self, asked: &str) -> String {
        if asked.is_empty() || asked == "0" {
            return asked.to_owned();
        }
        let resume = self.resume.lock();
        let newest = resume
            .iter()
            .flat_map(|r| r.per_ns.values())
            .fold(
                asked,
                |a, b| match crate::object::compare_resource_versions(b, a) {
                    Ok(std::cmp::Ordering::Greater) => b,
                    _ => a,
                },
            );
        newest.to_owned()
    }

    /// The cursor of a list's first page: the set as it is now, or, for an `Exact` list (a
    /// consistency check at the cache's version), the set the cache holds. Only a list without
    /// `resourceVersionMatch` (the Reflector's list) sets where the next watch resumes; one with
    /// it (`Exact`: a consistency check; `NotOlderThan`: the check of a snapshot's version
    /// before a resume) reads without changing it.
    fn start(&self, options: &ListOptions) -> Cursor {
        let exact = options.resource_version_match == Some(ResourceVersionMatch::Exact);
        let held = exact
            .then(|| self.resume.lock().as_ref().map(|r| r.names.clone()))
            .flatten();
        let names = held.unwrap_or_else(|| self.set.names());
        Cursor {
            names: names.iter().cloned().collect(),
            index: 0,
            rv: String::new(),
            inner: None,
            record: options.resource_version_match.is_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_garbage_is_a_typed_error() {
        let c = Cursor {
            names: vec!["a".into(), "b".into()],
            index: 1,
            rv: "42".into(),
            inner: Some("abc=".into()),
            record: true,
        };
        assert_eq!(Cursor::decode(&c.encode()), Ok(c));
        for bad in [
            "",
            "abc",
            "kinformer-namespace-set:{",
            "kinformer-namespace-set:{\"names\":[\"a\"],\"index\":1,\"rv\":\"1\",\"record\":true}",
        ] {
            assert!(Cursor::decode(bad).unwrap_err().is_decode(), "{bad:?}");
        }
    }
}
