//! Waiting until the cache has observed a resource version: the primitive behind reading your
//! own writes (KEP-5647's consistency store, controller-runtime's read-your-writes client).
//!
//! The cache's resource version ([`Indexer::last_resource_version`]) moves forward with every
//! list installed, every object written and every bookmark, in the order the server sent them.
//! So once it is at least `r` (compared with [`compare_resource_versions`], KEP-5504), every
//! change up to `r` is in the cache. For one key it is enough that the key's object is at `r`
//! or later.
//!
//! Waking is cheap: a write costs one atomic load when nobody waits, and wakes the waiters
//! (who re-check) when someone does. No polling.

use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtomicOrdering;
use std::time::Duration;

use tokio::time::Instant;

use super::indexer::Indexer;
use super::waiters::Waiting;
use crate::object::{
    Object, ResourceVersionError, compare_resource_versions, is_comparable_resource_version,
    resource_version,
};

/// Why waiting for the cache to reach a resource version failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheWaitError {
    /// The cache did not reach `wanted` within the timeout.
    #[error(
        "the cache did not reach resource version {wanted} within {timeout:?} (it is at {have:?}{})",
        key.as_ref().map(|k| format!("; key {k:?}")).unwrap_or_default()
    )]
    TimedOut {
        /// The resource version waited for.
        wanted: String,
        /// The cache's resource version when the time ran out (`None`: it has none yet).
        have: Option<String>,
        /// The key waited for, if the wait was for one key.
        key: Option<String>,
        /// How long was waited.
        timeout: Duration,
    },
    /// The wanted version, or the cache's, is not a comparable resource version (KEP-5504):
    /// the server's versions are not integers, or the input is malformed. Waiting could never
    /// end, so it does not start.
    #[error("cannot wait for the cache: {0}")]
    NotComparable(#[from] ResourceVersionError),
    /// The cache still held the deleted object under `key` when the time ran out.
    #[error("the cache still holds {key:?} after {timeout:?}; its deletion was not seen")]
    DeleteNotSeen {
        /// The key waited for.
        key: String,
        /// How long was waited.
        timeout: Duration,
    },
    /// The informer that writes this cache has stopped: the cache will not move any more.
    #[error("the informer writing this cache has stopped (cache at {have:?}, wanted {wanted})")]
    Stopped {
        /// The resource version waited for.
        wanted: String,
        /// The cache's resource version.
        have: Option<String>,
    },
}

/// Whether `have` is at least `wanted` (`wanted` is known comparable).
fn reached(have: Option<&str>, wanted: &str) -> Result<bool, ResourceVersionError> {
    match have {
        None => Ok(false),
        Some(have) => Ok(compare_resource_versions(have, wanted)? != Ordering::Less),
    }
}

impl<K: Object> Indexer<K> {
    /// Waits until the cache has observed resource version `rv`: its resource version
    /// ([`last_resource_version`](Self::last_resource_version), moved by lists, writes and
    /// bookmarks) is at least `rv`, compared as KEP-5504 says
    /// ([`compare_resource_versions`]). Returns at once if it is already.
    ///
    /// Use it after a write whose response carried `rv`: once this returns, every change up
    /// to your write is in the cache.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::{sync::Arc, time::Duration};
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::Indexer;
    ///
    /// let cache = Indexer::<Pod>::default_namespaced();
    /// let waiter = tokio::spawn({
    ///     let cache = cache.clone();
    ///     async move { cache.wait_for_resource_version("42", Duration::from_secs(5)).await }
    /// });
    /// cache.bookmark("42"); // the informer does this as events and bookmarks arrive
    /// assert_eq!(waiter.await.unwrap(), Ok(()));
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`CacheWaitError::TimedOut`] after `timeout`; [`CacheWaitError::NotComparable`] at once
    /// when `rv` or the cache's version is not a comparable resource version (see
    /// [`compare_resource_versions`]; *client-go's and KCM's consistency checks skip such
    /// versions rather than block; [`Controller`](crate::controller::Controller) does the
    /// same with this error*); [`CacheWaitError::Stopped`] when the informer writing the cache
    /// has stopped.
    pub async fn wait_for_resource_version(
        &self,
        rv: &str,
        timeout: Duration,
    ) -> Result<(), CacheWaitError> {
        self.wait_until(None, rv, timeout).await
    }

    /// Waits until the cache has observed resource version `rv` for the object under `key`:
    /// that object's resource version is at least `rv`, or the whole cache's is (which covers
    /// a key that was deleted, or never came back). Otherwise as
    /// [`wait_for_resource_version`](Self::wait_for_resource_version), whose errors it returns.
    ///
    /// # Errors
    /// As [`wait_for_resource_version`](Self::wait_for_resource_version).
    pub async fn wait_for_key_resource_version(
        &self,
        key: &str,
        rv: &str,
        timeout: Duration,
    ) -> Result<(), CacheWaitError> {
        self.wait_until(Some(key), rv, timeout).await
    }

    /// Ends every wait on this cache with [`CacheWaitError::Stopped`] (its informer stopped).
    pub(crate) fn close_waits(&self) {
        self.waiters().close();
    }

    /// Whether the cache (or `key`'s object) has reached `rv`.
    fn has_reached(&self, key: Option<&str>, rv: &str) -> Result<bool, ResourceVersionError> {
        if let Some(obj) = key.and_then(|k| self.get_by_key(k)) {
            let obj_rv = resource_version(obj.as_ref());
            // An object version that is not comparable says nothing; the cache's may.
            if is_comparable_resource_version(obj_rv) && reached(Some(obj_rv), rv)? {
                return Ok(true);
            }
        }
        reached(self.last_resource_version().as_deref(), rv)
    }

    async fn wait_until(
        &self,
        key: Option<&str>,
        rv: &str,
        timeout: Duration,
    ) -> Result<(), CacheWaitError> {
        if !is_comparable_resource_version(rv) {
            return Err(ResourceVersionError(rv.to_owned()).into());
        }
        let outcome = self
            .wait_for_goal(|| self.has_reached(key, rv), timeout)
            .await?;
        outcome.map_err(|stopped| {
            let have = self.last_resource_version();
            let wanted = rv.to_owned();
            match stopped {
                true => CacheWaitError::Stopped { wanted, have },
                false => CacheWaitError::TimedOut {
                    wanted,
                    have,
                    key: key.map(str::to_owned),
                    timeout,
                },
            }
        })
    }

    /// Waits until the cache no longer holds the object under `key` whose UID is `uid` (any
    /// object under `key` when `uid` is `None`): it was deleted, or replaced by a new object of
    /// the same name. For a reconcile that deleted an object and must not see it again (a
    /// delete's response carries the object's last version, not the deletion's, so waiting
    /// for a version would not do).
    ///
    /// # Errors
    /// [`CacheWaitError::DeleteNotSeen`] after `timeout`, [`CacheWaitError::Stopped`] when
    /// the informer writing the cache has stopped.
    pub async fn wait_for_key_deleted(
        &self,
        key: &str,
        uid: Option<&str>,
        timeout: Duration,
    ) -> Result<(), CacheWaitError> {
        let gone = || {
            Ok(self
                .get_by_key(key)
                .is_none_or(|obj| uid.is_some_and(|uid| obj.meta().uid.as_deref() != Some(uid))))
        };
        let outcome = self.wait_for_goal(gone, timeout).await?;
        outcome.map_err(|stopped| match stopped {
            true => CacheWaitError::Stopped {
                wanted: format!("deletion of {key}"),
                have: self.last_resource_version(),
            },
            false => CacheWaitError::DeleteNotSeen {
                key: key.to_owned(),
                timeout,
            },
        })
    }

    /// Waits, woken by every write, until `reached` says so (`Ok(Ok(()))`), the time is up
    /// (`Ok(Err(false))`) or the writer stopped (`Ok(Err(true))`).
    async fn wait_for_goal(
        &self,
        reached: impl Fn() -> Result<bool, ResourceVersionError>,
        timeout: Duration,
    ) -> Result<Result<(), bool>, CacheWaitError> {
        let deadline = Instant::now() + timeout;
        let waiters = self.waiters();
        let _counted = Waiting::new(waiters);
        loop {
            // Made before the check, so a write between the check and the await still wakes it.
            let notified = waiters.notify.notified();
            if reached()? {
                return Ok(Ok(()));
            }
            if waiters.closed.load(AtomicOrdering::SeqCst) {
                return Ok(Err(true));
            }
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep_until(deadline) => {
                    // One last look: a write may have landed just as time ran out.
                    return Ok(if reached()? { Ok(()) } else { Err(false) });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ObjectMeta;

    use super::*;

    const SEC: Duration = Duration::from_secs(1);

    fn pod(name: &str, rv: &str) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some(name.into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    fn waiting(cache: &Indexer<Pod>) -> usize {
        cache.waiters().waiting.load(AtomicOrdering::SeqCst)
    }

    /// Spawns a store-wide wait for `rv` and lets it start waiting.
    async fn spawn_wait(
        cache: &Indexer<Pod>,
        key: Option<&str>,
        rv: &str,
        timeout: Duration,
    ) -> tokio::task::JoinHandle<Result<(), CacheWaitError>> {
        let (cache2, key, rv) = (cache.clone(), key.map(str::to_owned), rv.to_owned());
        let task = tokio::spawn(async move {
            match key {
                Some(k) => cache2.wait_for_key_resource_version(&k, &rv, timeout).await,
                None => cache2.wait_for_resource_version(&rv, timeout).await,
            }
        });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert_eq!(waiting(cache), 1, "the wait has started");
        task
    }

    #[tokio::test(start_paused = true)]
    async fn a_reached_version_returns_at_once() {
        let cache = Indexer::<Pod>::default_namespaced();
        cache.replace(vec![pod("a", "7")], "10").unwrap();
        let t0 = Instant::now();
        for rv in ["1", "9", "10"] {
            assert_eq!(cache.wait_for_resource_version(rv, SEC).await, Ok(()));
        }
        assert_eq!(t0.elapsed(), Duration::ZERO);
        assert_eq!(waiting(&cache), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn every_kind_of_write_wakes_a_waiter() {
        let cache = Indexer::<Pod>::default_namespaced();
        // A bookmark.
        let w = spawn_wait(&cache, None, "5", SEC).await;
        cache.bookmark("4");
        tokio::task::yield_now().await;
        assert!(!w.is_finished(), "4 < 5: still waiting");
        cache.bookmark("5");
        assert_eq!(w.await.unwrap(), Ok(()));
        // A list (replace).
        let w = spawn_wait(&cache, None, "20", SEC).await;
        cache.replace(vec![pod("a", "12")], "20").unwrap();
        assert_eq!(w.await.unwrap(), Ok(()));
        // An add, an update, a delete (each carries its object's version).
        for (rv, write) in [("21", 0), ("22", 1), ("23", 2)] {
            let w = spawn_wait(&cache, None, rv, SEC).await;
            match write {
                0 => cache.add(pod("b", rv)).unwrap(),
                1 => cache.update(pod("b", rv)).unwrap(),
                _ => drop(cache.delete(&pod("b", rv)).unwrap()),
            }
            assert_eq!(w.await.unwrap(), Ok(()), "write {write}");
        }
        assert_eq!(waiting(&cache), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn times_out_with_what_was_wanted_and_what_the_cache_has() {
        let cache = Indexer::<Pod>::default_namespaced();
        cache.bookmark("99");
        let t0 = Instant::now();
        let err = cache.wait_for_resource_version("100", SEC).await;
        assert_eq!(t0.elapsed(), SEC);
        assert_eq!(
            err,
            Err(CacheWaitError::TimedOut {
                wanted: "100".into(),
                have: Some("99".into()),
                key: None,
                timeout: SEC,
            })
        );
        // Numeric, not lexical: "100" > "99".
        assert!(err.unwrap_err().to_string().contains("100"));
        // A cache with no version yet waits too.
        let empty = Indexer::<Pod>::default_namespaced();
        assert!(matches!(
            empty.wait_for_resource_version("1", SEC).await,
            Err(CacheWaitError::TimedOut { have: None, .. })
        ));
        assert_eq!(waiting(&cache), 0);
        assert_eq!(waiting(&empty), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn versions_that_cannot_be_compared_fail_at_once() {
        let cache = Indexer::<Pod>::default_namespaced();
        cache.bookmark("5");
        let t0 = Instant::now();
        for bad in ["", "0", "007", "abc"] {
            assert_eq!(
                cache.wait_for_resource_version(bad, SEC).await,
                Err(CacheWaitError::NotComparable(ResourceVersionError(
                    bad.into()
                )))
            );
        }
        // The cache's own version is not comparable (a server whose versions are not integers).
        cache.bookmark("etag-1");
        assert_eq!(
            cache.wait_for_resource_version("6", SEC).await,
            Err(CacheWaitError::NotComparable(ResourceVersionError(
                "etag-1".into()
            )))
        );
        assert_eq!(t0.elapsed(), Duration::ZERO, "no waiting");
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_is_caught_up_when_its_object_is() {
        let cache = Indexer::<Pod>::default_namespaced();
        cache.add(pod("a", "5")).unwrap();
        cache.add(pod("b", "3")).unwrap(); // the cache's version is now 3 (the last write's)
        assert_eq!(
            cache.wait_for_key_resource_version("ns/a", "5", SEC).await,
            Ok(())
        );
        assert!(matches!(
            cache.wait_for_resource_version("5", SEC).await,
            Err(CacheWaitError::TimedOut { .. })
        ));
        // b waits for its own update, not anyone else's.
        let w = spawn_wait(&cache, Some("ns/b"), "4", SEC).await;
        cache.add(pod("c", "3")).unwrap();
        tokio::task::yield_now().await;
        assert!(!w.is_finished());
        cache.update(pod("b", "4")).unwrap();
        assert_eq!(w.await.unwrap(), Ok(()));
        // A key that is gone (or never came) is caught up once the whole cache is.
        let w = spawn_wait(&cache, Some("ns/gone"), "8", SEC).await;
        cache.bookmark("8");
        assert_eq!(w.await.unwrap(), Ok(()));
        assert!(matches!(
            cache.wait_for_key_resource_version("ns/gone", "9", SEC).await,
            Err(CacheWaitError::TimedOut { key: Some(k), .. }) if k == "ns/gone"
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_lean_cache_waits_the_same() {
        let cache = Indexer::<Pod>::new_lean(
            crate::object::meta_namespace_key_func(),
            crate::store::namespace_indexers(),
        );
        cache.add(pod("a", "5")).unwrap();
        let w = spawn_wait(&cache, Some("ns/a"), "6", SEC).await;
        cache.update(pod("a", "6")).unwrap();
        assert_eq!(w.await.unwrap(), Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stopped_informer_ends_every_wait() {
        let cache = Indexer::<Pod>::default_namespaced();
        cache.bookmark("1");
        let w = spawn_wait(&cache, None, "2", SEC * 60).await;
        cache.close_waits();
        assert_eq!(
            w.await.unwrap(),
            Err(CacheWaitError::Stopped {
                wanted: "2".into(),
                have: Some("1".into())
            })
        );
        // Later waits end at once, unless already satisfied.
        assert!(matches!(
            cache.wait_for_resource_version("2", SEC).await,
            Err(CacheWaitError::Stopped { .. })
        ));
        assert_eq!(cache.wait_for_resource_version("1", SEC).await, Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_delete_is_seen_when_the_key_is_gone_or_holds_another_object() {
        let cache = Indexer::<Pod>::default_namespaced();
        let with_uid = |name: &str, rv: &str, uid: &str| {
            let mut p = (*pod(name, rv)).clone();
            p.metadata.uid = Some(uid.into());
            Arc::new(p)
        };
        cache.add(with_uid("a", "5", "u1")).unwrap();
        let t0 = Instant::now();
        assert_eq!(
            cache.wait_for_key_deleted("ns/a", Some("u1"), SEC).await,
            Err(CacheWaitError::DeleteNotSeen {
                key: "ns/a".into(),
                timeout: SEC
            })
        );
        assert_eq!(t0.elapsed(), SEC);
        // Deleted: seen.
        let cache2 = cache.clone();
        let w =
            tokio::spawn(async move { cache2.wait_for_key_deleted("ns/a", Some("u1"), SEC).await });
        tokio::task::yield_now().await;
        drop(cache.delete(&pod("a", "6")).unwrap());
        assert_eq!(w.await.unwrap(), Ok(()));
        // Re-created with a new UID: the old one's deletion is seen; without a UID it is not.
        cache.add(with_uid("a", "7", "u2")).unwrap();
        assert_eq!(
            cache.wait_for_key_deleted("ns/a", Some("u1"), SEC).await,
            Ok(())
        );
        assert!(cache.wait_for_key_deleted("ns/a", None, SEC).await.is_err());
        cache.close_waits();
        assert!(matches!(
            cache.wait_for_key_deleted("ns/a", None, SEC).await,
            Err(CacheWaitError::Stopped { .. })
        ));
        assert_eq!(waiting(&cache), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_wait_stops_counting() {
        let cache = Indexer::<Pod>::default_namespaced();
        let w = spawn_wait(&cache, None, "2", SEC * 60).await;
        w.abort();
        let _ = w.await;
        assert_eq!(waiting(&cache), 0, "writes skip the wake-up again");
    }
}
