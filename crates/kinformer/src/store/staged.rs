//! A relist built up part by part as it downloads, then installed in one swap: how an informer
//! on a RealFifo applies a list without holding it twice. Each part is keyed, indexed and
//! stored as it arrives: a lean cache encodes it, keeps the bytes it holds for every object
//! that encodes to the same bytes, and drops the decoded objects; a full cache keeps the
//! objects it already holds unchanged (same uid and resourceVersion, and for an informer's
//! cache the same serialized content: the server can show one version differently, see
//! `same_content.rs`) and drops their fresh copies. Either way a relist of unchanged objects
//! costs about nothing more than the cache.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::cache_state::{Entry, Replacement, to_stored};
use super::error::StoreError;
use super::index_func::IndexFunc;
use super::indexer::Indexer;
use super::lean::{LeanCodec, Stored};
use crate::object::{KeyError, Object};

/// A relist being staged for an [`Indexer`]: the parts given so far, keyed, indexed and stored
/// (encoded, in lean mode). The first failing object (an index function, an encoding) makes the
/// whole relist fail at [`Indexer::install_staged`], as [`Indexer::replace`] would.
pub(crate) struct StagedReplace<K> {
    funcs: Vec<(String, IndexFunc<K>)>,
    replacement: Replacement<K>,
    /// Every listed object's key and stored form, in list order (duplicates included).
    listed: Vec<(Arc<str>, Stored<K>)>,
    failed: Option<StoreError>,
}

/// What installing a staged relist replaced: decode its objects one by one with
/// [`Indexer::staged_object`] while notifying, so they are never all decoded at once.
pub(crate) struct StagedOutcome<K> {
    /// Every listed object's key and stored form, in list order.
    pub(crate) listed: Vec<(Arc<str>, Stored<K>)>,
    /// The previous contents.
    old: HashMap<Arc<str>, Entry<K>>,
}

impl<K> StagedOutcome<K> {
    /// The keys and stored forms of the previous objects the list lacks, sorted by key.
    pub(crate) fn removed(&self) -> Vec<(Arc<str>, Stored<K>)> {
        let listed: HashSet<&str> = self.listed.iter().map(|(k, _)| &**k).collect();
        let mut removed: Vec<(Arc<str>, Stored<K>)> = self
            .old
            .iter()
            .filter(|(key, _)| !listed.contains(&***key))
            .map(|(key, entry)| (key.clone(), entry.obj.clone()))
            .collect();
        removed.sort_by(|a, b| a.0.cmp(&b.0));
        removed
    }

    /// The previous stored form under `key`, if any.
    pub(crate) fn previous(&self, key: &str) -> Option<&Stored<K>> {
        self.old.get(key).map(|e| &e.obj)
    }
}

impl<K: Object> Indexer<K> {
    /// Starts staging a relist with the current index functions.
    pub(crate) fn stage_replace(&self) -> StagedReplace<K> {
        StagedReplace {
            funcs: self.index_funcs(),
            replacement: Replacement::empty(0, 0),
            listed: Vec::new(),
            failed: None,
        }
        .with_slots()
    }

    /// Adds the next items of a staged relist. Keys are computed first: if one cannot be, the
    /// part is not staged and the error returned (the relist goes on without it, as a queue
    /// drops such a part). An index function or encoding failure marks the relist failed.
    /// Unchanged objects are swapped for the cached ones first (see `reuse_unchanged`).
    pub(crate) fn stage_part(
        &self,
        stage: &mut StagedReplace<K>,
        items: Vec<Arc<K>>,
    ) -> Result<(), KeyError> {
        let keys = items
            .iter()
            .map(|obj| self.key_of(obj))
            .collect::<Result<Vec<_>, _>>()?;
        if stage.failed.is_some() {
            return Ok(());
        }
        let items = self.reuse_unchanged(&keys, items);
        let pairs: Vec<(String, Arc<K>)> = keys.into_iter().zip(items).collect();
        // Encoding is most of what lean staging costs. It runs on the task that delivers the
        // part (the Reflector's), while the source decodes the next items on the other cores:
        // as fast as spreading it (real kube-apiserver, 10,000 pods: lean W1 1,273-1,292 ms
        // against 1,290-1,335 with scoped threads) and without the memory that more threads
        // touching the heap leave behind (3.5k bytes a pod against 4.0-4.5k). Measured again on
        // the embedded server (2026-11-26, 10,000 pods, lean W1 medians of 6, same run): a part
        // encoded on every core (scoped threads, in list order after) synced in 438 ms against
        // 427 encoded here, the same within noise; glibc's allocator, most of what encoding
        // costs, did not scale over two threads.
        let stored: Vec<_> = match self.codec() {
            Some(codec) => self.encode_part(codec, &pairs),
            None => pairs
                .iter()
                .map(|(key, obj)| to_stored(None, obj, key))
                .collect(),
        };
        for ((key, obj), stored) in pairs.into_iter().zip(stored) {
            let pushed = stored.and_then(|stored| {
                stage
                    .replacement
                    .push_stored(&stage.funcs, key, &obj, stored)
            });
            match pushed {
                Ok(listed) => stage.listed.push(listed),
                Err(e) => {
                    stage.failed = Some(e);
                    stage.listed = Vec::new();
                    stage.replacement = Replacement::empty(0, 0);
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// The stored forms of one part of a lean cache's relist. Each object is encoded; one whose
    /// encoded bytes equal those cached under its key (the same object, unchanged since it was
    /// cached: the same JSON against the same dictionary) is stored as the cached bytes instead
    /// and its fresh encoding dropped, so an unchanged object is held once during and after the
    /// relist, and its notification decodes it once for both old and new (the decoded copy is
    /// shared by the address of its bytes). Every other object is remembered as the decoded
    /// form of its new bytes, as any write's is.
    fn encode_part(
        &self,
        codec: &LeanCodec<K>,
        pairs: &[(String, Arc<K>)],
    ) -> Vec<Result<Stored<K>, StoreError>> {
        let blobs: Vec<_> = pairs.iter().map(|(_, obj)| codec.compress(obj)).collect();
        let mut fresh_copies = Vec::new();
        let blobs: Vec<_> = self.with_state(|state| {
            pairs
                .iter()
                .zip(blobs)
                .map(
                    |((key, _), blob)| match (blob, state.entries.get(key.as_str())) {
                        (
                            Ok(fresh),
                            Some(Entry {
                                obj: Stored::Lean(cached),
                                ..
                            }),
                        ) if cached[..] == fresh[..] => {
                            fresh_copies.push(fresh);
                            (Ok(cached.clone()), true)
                        }
                        (blob, _) => (blob, false),
                    },
                )
                .collect()
        });
        // freed outside the read lock
        drop(fresh_copies);
        pairs
            .iter()
            .zip(blobs)
            .map(|((key, obj), (blob, unchanged))| {
                let blob = blob.map_err(|message| StoreError::Codec {
                    key: Some(key.clone()),
                    message,
                })?;
                if !unchanged {
                    codec.remember(&blob, obj);
                }
                Ok(Stored::Lean(blob))
            })
            .collect()
    }

    /// `items` (filed under `keys`) with every unchanged object replaced by the cached one: a
    /// full-mode cache that holds an object under the same key with the same uid and the same
    /// (non-empty) resourceVersion, and (for an informer's cache, `Indexer::for_informer`) the
    /// same serialized content, keeps its `Arc`, and the freshly decoded copy is dropped here,
    /// as the part arrives, so a relist of unchanged objects never holds them twice. A changed
    /// object, or one deleted and recreated under the same name (a new uid), is kept as given.
    /// A lean cache compares encoded bytes instead ([`encode_part`](Self::encode_part)).
    ///
    /// Every staged relist goes through here ([`stage_part`](Self::stage_part)): the list
    /// staging of informers on a RealFifo, paged or streamed, and snapshots. The objects given
    /// are transformed already, as the cached ones were, so both sides are compared after the
    /// same transform.
    fn reuse_unchanged(&self, keys: &[String], items: Vec<Arc<K>>) -> Vec<Arc<K>> {
        if self.codec().is_some() {
            return items;
        }
        let same_content = self.same_content();
        let mut fresh_copies = Vec::new();
        let items = self.with_state(|state| {
            keys.iter()
                .zip(items)
                .map(|(key, obj)| match state.entries.get(key.as_str()) {
                    Some(Entry {
                        obj: Stored::Full(cached),
                        ..
                    }) if same_version(cached.as_ref(), obj.as_ref())
                        && same_content.is_none_or(|same| same(cached.as_ref(), obj.as_ref())) =>
                    {
                        fresh_copies.push(obj);
                        cached.clone()
                    }
                    _ => obj,
                })
                .collect()
        });
        // dropped outside the read lock
        drop(fresh_copies);
        items
    }

    /// Installs a staged relist at `resource_version` in one swap.
    ///
    /// # Errors
    /// The error that failed the staging, or an index function registered since it began that
    /// fails on a listed object; the cache is then unchanged.
    pub(crate) fn install_staged(
        &self,
        stage: StagedReplace<K>,
        resource_version: &str,
    ) -> Result<StagedOutcome<K>, StoreError> {
        if let Some(e) = stage.failed {
            return Err(e);
        }
        let old = self.install(stage.replacement, resource_version)?;
        Ok(StagedOutcome {
            listed: stage.listed,
            old,
        })
    }

    /// The object of a stored form from a [`StagedOutcome`] (decoded, or shared if alive);
    /// `None`, logged, when it cannot be decoded.
    pub(crate) fn staged_object(&self, key: &str, stored: &Stored<K>) -> Option<Arc<K>> {
        self.decoded(key, stored)
    }

    /// Each listed object of `chunk` with the object it replaced, as handlers are told them
    /// (decoded on every core in a lean cache); objects that cannot be decoded are left out.
    pub(crate) fn staged_objects(
        &self,
        chunk: &[(Arc<str>, Stored<K>)],
        outcome: &StagedOutcome<K>,
    ) -> Vec<(Option<Arc<K>>, Arc<K>)> {
        let pair = |(key, stored): &(Arc<str>, Stored<K>)| {
            let obj = self.staged_object(key, stored)?;
            let old = outcome
                .previous(key)
                .and_then(|old| self.staged_object(key, old));
            Some((old, obj))
        };
        match self.codec() {
            Some(_) => super::lean::par_map(chunk, pair)
                .into_iter()
                .flatten()
                .collect(),
            None => chunk.iter().filter_map(pair).collect(),
        }
    }
}

/// Whether `a` and `b` are the same version of the same object: equal uids and equal
/// resourceVersions, neither empty (an object without them is never taken as unchanged).
fn same_version<K: Object>(a: &K, b: &K) -> bool {
    fn uid_and_version(m: &kube::api::ObjectMeta) -> Option<(&str, &str)> {
        let uid = m.uid.as_deref().filter(|s| !s.is_empty())?;
        let rv = m.resource_version.as_deref().filter(|s| !s.is_empty())?;
        Some((uid, rv))
    }
    let a = uid_and_version(a.meta());
    a.is_some() && a == uid_and_version(b.meta())
}

impl<K> StagedReplace<K> {
    /// A staged relist of encoded objects with their indexed values (a lean snapshot).
    pub(super) fn from_encoded(
        funcs: Vec<(String, IndexFunc<K>)>,
        items: Vec<(String, Vec<Vec<String>>, Stored<K>)>,
    ) -> Self {
        let mut replacement = Replacement::empty(funcs.len(), items.len());
        let listed = items
            .into_iter()
            .map(|(key, values, stored)| replacement.push_values(key, values, stored))
            .collect();
        Self {
            funcs,
            replacement,
            listed,
            failed: None,
        }
    }

    fn with_slots(mut self) -> Self {
        self.replacement = Replacement::empty(self.funcs.len(), 0);
        self
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ObjectMeta;

    use crate::store::{CacheMode, Indexer};

    fn pod(name: &str, uid: Option<&str>, rv: Option<&str>) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: uid.map(Into::into),
                resource_version: rv.map(Into::into),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    /// Each case: what the cache holds, what the relist brings, whether the cached `Arc`
    /// stays.
    #[test]
    fn a_staged_relist_keeps_the_cached_object_only_when_uid_and_version_match() {
        let cases = [
            (
                "unchanged",
                (Some("u"), Some("5")),
                (Some("u"), Some("5")),
                true,
            ),
            (
                "changed",
                (Some("u"), Some("5")),
                (Some("u"), Some("6")),
                false,
            ),
            (
                "recreated",
                (Some("u"), Some("5")),
                (Some("v"), Some("5")),
                false,
            ),
            ("no uid", (None, Some("5")), (None, Some("5")), false),
            ("no version", (Some("u"), None), (Some("u"), None), false),
            (
                "empty version",
                (Some("u"), Some("")),
                (Some("u"), Some("")),
                false,
            ),
        ];
        for (case, (uid, rv), (new_uid, new_rv), kept) in cases {
            let cache = Indexer::<Pod>::default_namespaced();
            let cached = pod("p", uid, rv);
            cache.add(cached.clone()).unwrap();
            let fresh = pod("p", new_uid, new_rv);
            let mut stage = cache.stage_replace();
            cache.stage_part(&mut stage, vec![fresh.clone()]).unwrap();
            let outcome = cache.install_staged(stage, "9").unwrap();
            let now = cache.get_by_key("ns/p").unwrap();
            assert_eq!(Arc::ptr_eq(&now, &cached), kept, "{case}");
            assert_eq!(Arc::ptr_eq(&now, &fresh), !kept, "{case}");
            assert_eq!(outcome.listed.len(), 1, "{case}");
            assert!(outcome.previous("ns/p").is_some(), "{case}");
        }
    }

    #[test]
    fn a_staged_relist_keeps_unchanged_objects_among_changed_new_and_removed_ones() {
        let cache = Indexer::<Pod>::default_namespaced();
        let (a, b, gone) = (
            pod("a", Some("a"), Some("1")),
            pod("b", Some("b"), Some("2")),
            pod("gone", Some("g"), Some("3")),
        );
        for p in [&a, &b, &gone] {
            cache.add(p.clone()).unwrap();
        }
        let mut stage = cache.stage_replace();
        let b2 = pod("b", Some("b"), Some("4"));
        cache
            .stage_part(&mut stage, vec![pod("a", Some("a"), Some("1")), b2.clone()])
            .unwrap();
        cache
            .stage_part(&mut stage, vec![pod("new", Some("n"), Some("5"))])
            .unwrap();
        let outcome = cache.install_staged(stage, "9").unwrap();
        assert!(Arc::ptr_eq(&cache.get_by_key("ns/a").unwrap(), &a));
        assert!(Arc::ptr_eq(&cache.get_by_key("ns/b").unwrap(), &b2));
        assert!(cache.get_by_key("ns/new").is_some());
        assert!(cache.get_by_key("ns/gone").is_none());
        let removed: Vec<String> = outcome
            .removed()
            .iter()
            .map(|(k, _)| k.to_string())
            .collect();
        assert_eq!(removed, ["ns/gone"]);
        assert_eq!(
            cache
                .by_index(crate::store::NAMESPACE_INDEX, "ns")
                .unwrap()
                .len(),
            3
        );
    }

    /// A lean cache holds encoded objects: nothing to share, the relist is encoded as given.
    #[test]
    fn a_lean_staged_relist_stores_what_it_is_given() {
        let cache = Indexer::<Pod>::with_cache_mode(
            crate::object::meta_namespace_key_func(),
            crate::store::namespace_indexers(),
            CacheMode::Lean,
        );
        cache.add(pod("p", Some("u"), Some("5"))).unwrap();
        let mut stage = cache.stage_replace();
        let mut fresh = (*pod("p", Some("u"), Some("5"))).clone();
        fresh.metadata.labels = Some([("seen".to_owned(), "fresh".to_owned())].into());
        cache.stage_part(&mut stage, vec![Arc::new(fresh)]).unwrap();
        cache.install_staged(stage, "9").unwrap();
        let now = cache.get_by_key("ns/p").unwrap();
        assert_eq!(now.metadata.labels.as_ref().unwrap()["seen"], "fresh");
    }

    fn blob(cache: &Indexer<Pod>, key: &str) -> Arc<[u8]> {
        cache.with_state(|state| match &state.entries[key].obj {
            super::Stored::Lean(b) => b.clone(),
            super::Stored::Full(_) => panic!("not lean"),
        })
    }

    /// A lean relist keeps the cached bytes of an object that encodes to the same bytes, and
    /// its notification pair is one decoded object; a changed object gets new bytes and two.
    #[test]
    fn a_lean_staged_relist_keeps_the_bytes_of_unchanged_objects() {
        // no hot set: old and new can only be one object through the shared bytes
        let cache = Indexer::<Pod>::new_lean_with_hot(
            crate::object::meta_namespace_key_func(),
            crate::store::namespace_indexers(),
            0,
        );
        for p in [
            pod("a", Some("a"), Some("1")),
            pod("b", Some("b"), Some("2")),
        ] {
            cache.add(p).unwrap();
        }
        let (a_before, b_before) = (blob(&cache, "ns/a"), blob(&cache, "ns/b"));
        let mut stage = cache.stage_replace();
        cache
            .stage_part(
                &mut stage,
                vec![
                    pod("a", Some("a"), Some("1")),
                    pod("b", Some("b"), Some("3")),
                ],
            )
            .unwrap();
        let outcome = cache.install_staged(stage, "9").unwrap();
        assert!(
            Arc::ptr_eq(&blob(&cache, "ns/a"), &a_before),
            "unchanged: same bytes"
        );
        assert!(
            !Arc::ptr_eq(&blob(&cache, "ns/b"), &b_before),
            "changed: new bytes"
        );
        let pairs = cache.staged_objects(&outcome.listed, &outcome);
        let (old_a, new_a) = &pairs[0];
        assert!(
            Arc::ptr_eq(old_a.as_ref().unwrap(), new_a),
            "one decode for a"
        );
        let (old_b, new_b) = &pairs[1];
        assert_eq!(
            old_b.as_ref().unwrap().metadata.resource_version.as_deref(),
            Some("2")
        );
        assert_eq!(new_b.metadata.resource_version.as_deref(), Some("3"));
        assert_eq!(
            cache
                .get_by_key("ns/b")
                .unwrap()
                .metadata
                .resource_version
                .as_deref(),
            Some("3")
        );
    }
}
