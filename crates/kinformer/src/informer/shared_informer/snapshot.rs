//! Warm restart and seeding (see [`crate::snapshot`]): loading a snapshot or seed into the
//! cache before the Reflector starts, resuming, and writing snapshots.

use std::path::PathBuf;

use super::*;
use crate::reflector::{ResumeEvent, ResumeHook};
use crate::snapshot::{
    Body, ListScope, SnapshotError, SnapshotHeader, SnapshotOptions, SnapshotRefusal,
    SnapshotStatus, SnapshotWritten, StoredAs, TypeIdentity, encode, read_whole,
    snapshot_file_name, write_atomic,
};
use crate::store::Stored;

/// Encodes and decodes `K` as JSON (captured where `K: Serialize + DeserializeOwned`).
pub(super) struct JsonCodec<K> {
    pub(super) to_json: fn(&K) -> serde_json::Result<Vec<u8>>,
    pub(super) from_json: fn(&[u8]) -> serde_json::Result<K>,
}

/// An informer's snapshot state.
pub(super) struct SnapState<K> {
    pub(super) codec: JsonCodec<K>,
    pub(super) identity: Option<TypeIdentity>,
    pub(super) status: Mutex<SnapshotStatus>,
    /// The next relist is the first after a snapshot or seed: its deletions carry the last
    /// known object (RealFifo; a DeltaFifo is told directly).
    pub(super) diff_pending: AtomicBool,
    /// One write at a time.
    pub(super) writing: tokio::sync::Mutex<()>,
}

impl<K> SnapState<K> {
    pub(super) fn new(codec: JsonCodec<K>, identity: Option<TypeIdentity>) -> Self {
        Self {
            codec,
            identity,
            status: Mutex::new(SnapshotStatus::None),
            diff_pending: AtomicBool::new(false),
            writing: tokio::sync::Mutex::new(()),
        }
    }
}

/// A snapshot or seed read, checked and staged, ready to go into the cache.
pub(super) struct Prepared<K> {
    staged: StagedReplace<K>,
    /// The snapshot's resourceVersion; `None` for a seed.
    resource_version: Option<String>,
    objects: usize,
}

/// How the Reflector starts after [`SharedIndexInformer::install_prepared`].
pub(super) enum StartPlan {
    /// Resume from the snapshot's resourceVersion.
    Resume {
        resource_version: String,
        verify: bool,
    },
    /// A consistent first list, diffed against the seed.
    Diff,
}

fn cache_stored_as(mode: CacheMode) -> StoredAs {
    match mode {
        CacheMode::Full => StoredAs::Full,
        CacheMode::Lean => StoredAs::Lean,
    }
}

impl<K: Object> SharedIndexInformer<K> {
    /// What the informer started from: a snapshot resumed, relisted or refused, a seed, or
    /// nothing (see [`SnapshotStatus`]). Final once the informer has synced, except that a
    /// [`Resumed`](SnapshotStatus::Resumed) informer whose watch's first answer is 410 Gone
    /// becomes [`Relisted`](SnapshotStatus::Relisted).
    pub fn snapshot_status(&self) -> SnapshotStatus {
        self.inner.snap.status.lock().clone()
    }

    /// The informer's list scope, as a snapshot records it.
    pub fn list_scope(&self) -> ListScope {
        let c = &self.inner.config;
        ListScope {
            namespace: c.namespace.clone().filter(|_| c.namespaces.is_none()),
            namespaces: (c.namespaces.as_ref()).map(|set| set.snapshot().into_iter().collect()),
            label_selector: c.label_selector.clone(),
            field_selector: c.field_selector.clone(),
            shard: c.shard.as_ref().map(crate::shard::Shard::selector),
        }
    }

    /// The file this informer's snapshots go to, if snapshots are configured and the type is
    /// known.
    pub fn snapshot_path(&self) -> Option<PathBuf> {
        let options = self.inner.config.snapshot.as_ref()?;
        let identity = self.inner.snap.identity.as_ref()?;
        Some(
            options
                .dir
                .join(snapshot_file_name(identity, &self.list_scope())),
        )
    }

    fn set_status(&self, status: SnapshotStatus) {
        *self.inner.snap.status.lock() = status;
    }

    /// Writes a snapshot of the cache now (it is also written periodically and on shutdown,
    /// see [`SnapshotOptions`]): the objects and resourceVersion are taken together under the
    /// delta lock, encoded and written atomically on a blocking thread.
    ///
    /// # Errors
    /// [`SnapshotError::NotConfigured`], [`NoTypeIdentity`](SnapshotError::NoTypeIdentity),
    /// [`NotSynced`](SnapshotError::NotSynced), [`Busy`](SnapshotError::Busy) (a DeltaFifo
    /// with queued deltas), an encoding or an I/O error.
    pub async fn write_snapshot(&self) -> Result<SnapshotWritten, SnapshotError> {
        let inner = &self.inner;
        let options = inner
            .config
            .snapshot
            .clone()
            .ok_or(SnapshotError::NotConfigured)?;
        let identity = inner
            .snap
            .identity
            .clone()
            .ok_or(SnapshotError::NoTypeIdentity)?;
        let path = self.snapshot_path().ok_or(SnapshotError::NoTypeIdentity)?;
        let _one = inner.snap.writing.lock().await;
        if !self.has_synced() {
            return Err(SnapshotError::NotSynced);
        }
        let queue = inner.state.lock().queue.clone();
        let view = {
            let _deltas = inner.block_deltas.lock();
            if matches!(queue.as_deref(), Some(InformerQueue::Delta(q)) if q.queued_deltas() > 0) {
                return Err(SnapshotError::Busy);
            }
            inner.indexer.snapshot_view()
        };
        let resource_version = view
            .resource_version
            .clone()
            .ok_or(SnapshotError::NoResourceVersion)?;
        let header = SnapshotHeader {
            type_identity: identity,
            scope: self.list_scope(),
            cluster_id: options.cluster_id.clone(),
            resource_version,
            object_count: view.entries.len() as u64,
            stored_as: cache_stored_as(inner.indexer.cache_mode()),
        };
        let to_json = inner.snap.codec.to_json;
        let written = tokio::task::spawn_blocking(move || {
            let dict = view.dict;
            let objects = header.object_count as usize;
            let mut full = Vec::new();
            let mut lean = Vec::new();
            for (key, stored) in view.entries {
                match stored {
                    Stored::Full(obj) => full.push(
                        to_json(&obj).map_err(|e| SnapshotError::Encode(format!("{key}: {e}")))?,
                    ),
                    Stored::Lean(blob) => lean.push((key.to_string(), blob.to_vec())),
                }
            }
            let body = match header.stored_as {
                StoredAs::Full => Body::Full(full),
                StoredAs::Lean => Body::Lean {
                    dict: dict.unwrap_or_default(),
                    entries: lean,
                },
            };
            let bytes = encode(&header, &body)?;
            write_atomic(&path, &bytes)?;
            Ok(SnapshotWritten {
                path,
                resource_version: header.resource_version,
                objects,
                bytes: bytes.len() as u64,
            })
        })
        .await
        .map_err(|e| SnapshotError::Encode(format!("the writing thread failed: {e}")))?;
        if let Ok(w) = &written {
            tracing::debug!(informer = %inner.name, path = %w.path.display(), objects = w.objects,
                bytes = w.bytes, resource_version = %w.resource_version, "snapshot written");
        }
        written
    }

    /// Reads, checks and stages the snapshot (or, without one, the seed), off the runtime's
    /// threads. Sets the status of a refused snapshot.
    pub(super) async fn prepare_start(&self) -> Option<Prepared<K>> {
        let inner = &self.inner;
        if let Some(options) = inner.config.snapshot.clone().filter(|o| o.load) {
            match self.clone().prepare_snapshot(options).await {
                Ok(Some(prepared)) => return Some(prepared),
                Ok(None) => {}
                Err(reason) => {
                    tracing::warn!(informer = %inner.name, %reason, "snapshot refused; starting cold");
                    self.set_status(SnapshotStatus::Refused { reason: *reason });
                }
            }
        }
        let seed = inner.config.initial_state.clone()?;
        let this = self.clone();
        let staged = tokio::task::spawn_blocking(move || {
            let transform = this.inner.config.cache_transform();
            let objects: Vec<Arc<K>> = seed
                .iter()
                .map(|o| match &transform {
                    Some(t) => t.apply(o.clone()),
                    None => o.clone(),
                })
                .collect();
            let indexer = &this.inner.indexer;
            let mut stage = indexer.stage_replace();
            indexer
                .stage_part(&mut stage, objects)
                .map(|()| (stage, seed.len()))
        })
        .await;
        match staged {
            Ok(Ok((staged, objects))) => Some(Prepared {
                staged,
                resource_version: None,
                objects,
            }),
            Ok(Err(e)) => {
                tracing::error!(informer = %inner.name, error = %e, "initial state not loaded: an object has no key");
                None
            }
            Err(e) => {
                tracing::error!(informer = %inner.name, error = %e, "initial state not loaded");
                None
            }
        }
    }

    /// The snapshot file, checked and staged; `Ok(None)` when there is none.
    async fn prepare_snapshot(
        self,
        options: SnapshotOptions,
    ) -> Result<Option<Prepared<K>>, Box<SnapshotRefusal>> {
        let Some(expected_type) = self.inner.snap.identity.clone() else {
            return Err(Box::new(SnapshotRefusal::NoTypeIdentity));
        };
        let Some(path) = self.snapshot_path() else {
            return Ok(None);
        };
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            this.check_and_stage(&path, &options, expected_type)
                .map_err(Box::new)
        })
        .await
        .map_err(|e| {
            Box::new(SnapshotRefusal::Unreadable(format!(
                "the reading thread failed: {e}"
            )))
        })?
    }

    /// Reads the snapshot at `path`, checks it against this informer, stages its objects.
    #[allow(clippy::result_large_err)] // boxed by the caller
    fn check_and_stage(
        &self,
        path: &std::path::Path,
        options: &SnapshotOptions,
        expected_type: TypeIdentity,
    ) -> Result<Option<Prepared<K>>, SnapshotRefusal> {
        let this = self;
        {
            let unreadable = |e: SnapshotError| SnapshotRefusal::Unreadable(e.to_string());
            let Some((header, body)) =
                read_whole(path, options.max_file_bytes).map_err(unreadable)?
            else {
                return Ok(None);
            };
            let expected_scope = this.list_scope();
            let expected_mode = cache_stored_as(this.inner.indexer.cache_mode());
            if header.cluster_id != options.cluster_id {
                return Err(SnapshotRefusal::OtherCluster {
                    snapshot: header.cluster_id,
                    expected: options.cluster_id.clone(),
                });
            }
            if header.type_identity != expected_type {
                return Err(SnapshotRefusal::OtherType {
                    snapshot: header.type_identity,
                    expected: expected_type,
                });
            }
            if header.scope != expected_scope {
                return Err(SnapshotRefusal::OtherScope {
                    snapshot: header.scope,
                    expected: expected_scope,
                });
            }
            if header.stored_as != expected_mode {
                return Err(SnapshotRefusal::OtherCacheMode {
                    snapshot: header.stored_as,
                    expected: expected_mode,
                });
            }
            if header.resource_version.is_empty() {
                return Err(SnapshotRefusal::Unreadable(
                    "the snapshot has no resourceVersion".into(),
                ));
            }
            let indexer = &this.inner.indexer;
            let bad = |e: String| SnapshotRefusal::Unreadable(e);
            let (staged, objects) = match body {
                Body::Full(jsons) => {
                    let from_json = this.inner.snap.codec.from_json;
                    // decoded on every core, as a list is (the order is kept)
                    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
                    let per = jsons.len().div_ceil(threads).max(1);
                    let parts = std::thread::scope(|scope| {
                        let running: Vec<_> = jsons
                            .chunks(per)
                            .map(|chunk| {
                                scope.spawn(move || {
                                    chunk
                                        .iter()
                                        .map(|j| from_json(j).map(Arc::new))
                                        .collect::<Result<Vec<_>, _>>()
                                        .map_err(|e| e.to_string())
                                })
                            })
                            .collect();
                        running
                            .into_iter()
                            .map(|t| {
                                t.join()
                                    .unwrap_or_else(|_| Err("decoding panicked".to_owned()))
                            })
                            .collect::<Vec<_>>()
                    });
                    let mut objects = Vec::with_capacity(jsons.len());
                    for part in parts {
                        objects.extend(
                            part.map_err(|e| bad(format!("an object does not decode: {e}")))?,
                        );
                    }
                    let n = objects.len();
                    let mut stage = indexer.stage_replace();
                    indexer
                        .stage_part(&mut stage, objects)
                        .map_err(|e| bad(e.to_string()))?;
                    (stage, n)
                }
                Body::Lean { dict, entries } => {
                    let n = entries.len();
                    let stage = indexer
                        .stage_encoded(&dict, entries)
                        .map_err(|e| bad(e.to_string()))?;
                    (stage, n)
                }
            };
            Ok(Some(Prepared {
                staged,
                resource_version: Some(header.resource_version),
                objects,
            }))
        }
    }

    /// Installs a prepared snapshot or seed in the cache and tells every handler its objects
    /// as initial-list adds; arms the diff of the first relist. Caller holds the state lock
    /// (so a handler added meanwhile is either told here or replays the cache).
    pub(super) fn install_prepared(
        &self,
        prepared: Prepared<K>,
        queue: &InformerQueue<K>,
    ) -> StartPlan {
        let inner = &self.inner;
        let _deltas = inner.block_deltas.lock();
        let rv = prepared.resource_version.clone().unwrap_or_default();
        self.apply_relist(Some(prepared.staged), &rv, true);
        self.tidy_after_list();
        inner.snap.diff_pending.store(true, Ordering::Release);
        queue.deletes_as_objects(true);
        let objects = prepared.objects;
        match prepared.resource_version {
            Some(resource_version) => {
                tracing::info!(informer = %inner.name, objects, %resource_version, "snapshot loaded");
                self.set_status(SnapshotStatus::Loaded {
                    resource_version: resource_version.clone(),
                    objects,
                });
                let verify = inner
                    .config
                    .snapshot
                    .as_ref()
                    .is_none_or(|o| o.verify_resource_version);
                StartPlan::Resume {
                    resource_version,
                    verify,
                }
            }
            None => {
                tracing::info!(informer = %inner.name, objects, "initial state loaded");
                if !matches!(*inner.snap.status.lock(), SnapshotStatus::Refused { .. }) {
                    self.set_status(SnapshotStatus::Seeded { objects });
                }
                StartPlan::Diff
            }
        }
    }

    /// What the Reflector tells the informer while it resumes from `resource_version`.
    pub(super) fn resume_hook(
        &self,
        queue: Arc<InformerQueue<K>>,
        resource_version: String,
    ) -> ResumeHook {
        let weak = Arc::downgrade(&self.inner);
        Arc::new(move |event| {
            let Some(inner) = weak.upgrade() else { return };
            let this = SharedIndexInformer { inner };
            let name = &this.inner.name;
            let rv = resource_version.clone();
            match event {
                ResumeEvent::Established => {
                    tracing::info!(informer = %name, resource_version = %rv, "resumed from the snapshot: watching, no list");
                    this.set_status(SnapshotStatus::Resumed {
                        resource_version: rv,
                    });
                    queue.mark_populated();
                }
                ResumeEvent::Confirmed => {
                    this.inner.snap.diff_pending.store(false, Ordering::Release);
                    queue.deletes_as_objects(false);
                }
                ResumeEvent::Expired(reason) | ResumeEvent::Failed(reason) => {
                    tracing::info!(informer = %name, resource_version = %rv, %reason,
                        "the snapshot's resourceVersion is gone; listing, diffed against the snapshot");
                    this.set_status(SnapshotStatus::Relisted {
                        resource_version: rv,
                        reason,
                    });
                }
                ResumeEvent::TooLarge(message) => {
                    let reason = SnapshotRefusal::ResourceVersionAhead {
                        resource_version: rv,
                        message,
                    };
                    tracing::warn!(informer = %name, %reason, "snapshot refused; listing, diffed against its objects");
                    this.set_status(SnapshotStatus::Refused { reason });
                }
            }
        })
    }

    /// Writes a snapshot every `interval` until `stop`.
    pub(super) async fn write_periodically(self, interval: Duration, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(interval) => {}
            }
            self.write_logged("periodic").await;
        }
    }

    /// [`write_snapshot`](Self::write_snapshot), its failure logged.
    pub(super) async fn write_logged(&self, why: &str) {
        match self.write_snapshot().await {
            Ok(_) => {}
            Err(e @ (SnapshotError::NotSynced | SnapshotError::Busy)) => {
                tracing::debug!(informer = %self.inner.name, error = %e, why, "snapshot not written")
            }
            Err(e) => {
                tracing::warn!(informer = %self.inner.name, error = %e, why, "snapshot not written")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::reflector::{ListPage, ListWatch};

    fn lw() -> ListWatch<ConfigMap> {
        ListWatch::new(
            |_| async { Ok(ListPage::new(vec![], "1")) }.boxed(),
            |_| async { Ok(futures::StreamExt::boxed(futures::stream::pending())) }.boxed(),
        )
    }

    #[tokio::test]
    async fn writing_needs_a_configuration_and_a_synced_informer() {
        let plain = SharedIndexInformer::builder(lw()).build();
        assert!(matches!(
            plain.write_snapshot().await,
            Err(SnapshotError::NotConfigured)
        ));
        assert_eq!(plain.snapshot_status(), SnapshotStatus::None);
        let options = SnapshotOptions::new(std::env::temp_dir(), "c");
        let configured = SharedIndexInformer::builder(lw())
            .config(InformerConfig::default().snapshot(options))
            .build();
        assert!(matches!(
            configured.write_snapshot().await,
            Err(SnapshotError::NotSynced)
        ));
        let path = configured.snapshot_path().unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("core.v1.configmaps."), "{name}");
    }

    #[tokio::test]
    async fn a_named_informer_of_unknown_type_cannot_snapshot() {
        let options = SnapshotOptions::new(std::env::temp_dir(), "c");
        let named = SharedIndexInformer::builder(lw())
            .config(InformerConfig::default().snapshot(options))
            .name("widgets")
            .build();
        assert!(named.snapshot_path().is_none());
        assert!(matches!(
            named.write_snapshot().await,
            Err(SnapshotError::NoTypeIdentity)
        ));
    }
}
