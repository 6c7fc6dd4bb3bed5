//! Warm restart: an informer persists its cache to a file and, on the next start, resumes from
//! it instead of listing everything again; and seeding from objects the application supplies
//! (fabric8's `initialState`).
//!
//! # What is saved
//!
//! With [`InformerConfig::snapshot`](crate::InformerConfig::snapshot), an informer writes its
//! cache to one file in [`SnapshotOptions::dir`]: the objects (each one's JSON, or in a lean
//! cache the compressed form the cache holds), the resourceVersion the cache was at, the type
//! (group, version, kind, plural, metadata-only), the list scope (namespace, selectors, shard),
//! the cluster's identity ([`cluster_id`]: the `kube-system` namespace's UID) and a checksum
//! over everything. Each type and scope has its own file name, so the factory's defaults can
//! carry one `SnapshotOptions` for every informer. The file is written every
//! [`interval`](SnapshotOptions::interval), when [`run`](crate::SharedIndexInformer::run)
//! returns after a cancel, and on demand
//! ([`write_snapshot`](crate::SharedIndexInformer::write_snapshot)); always from a consistent
//! state (objects and resourceVersion taken together under the informer's delta lock), encoded
//! outside that lock, into a temporary file in the same directory that is synced, renamed over
//! the old one, and the directory synced: a crash mid-write leaves the previous snapshot.
//!
//! # What happens at start
//!
//! The file is read and checked; a file of another cluster, type, scope, cache mode or format
//! version, a corrupt or truncated one, or one over the size limit is **refused**: not loaded,
//! the informer starts cold (a list), and the reason is logged and in
//! [`snapshot_status`](crate::SharedIndexInformer::snapshot_status). Otherwise its objects go
//! into the cache (not synced yet) and every handler gets them as adds marked
//! `is_in_initial_list`: a controller reconciles everything once, as after any start; only the
//! server traffic is saved. Then:
//!
//! - **Resume.** The Reflector checks the resourceVersion with a one-object list
//!   (`limit=1&resourceVersion=<rv>&resourceVersionMatch=NotOlderThan`; see
//!   [`verify_resource_version`](SnapshotOptions::verify_resource_version)), then *watches*
//!   from it: no list of the objects. The informer counts as synced once that watch is
//!   established (its response received); the changes made since the snapshot then arrive as
//!   ordinary events.
//! - **Relist.** If the server no longer has that resourceVersion (410 Gone, "too old", on
//!   the check or on the watch), the Reflector lists (a consistent list, `resourceVersion=""`)
//!   and the list is diffed against the cache: adds for new objects, updates (old = the
//!   snapshot's object) for changed ones, nothing for unchanged ones (same resourceVersion),
//!   and for objects gone a delete carrying the **last known object**
//!   ([`ObjectOrTombstone::Object`](crate::ObjectOrTombstone::Object)), not a
//!   `DeletedFinalStateUnknown`, once. Only this first list after a snapshot or seed does so;
//!   later relists deliver client-go's tombstones.
//! - **resourceVersion ahead of the server** (etcd restored from a backup, or a file from
//!   elsewhere): the check answers 504 "Too large resource version"; the snapshot's
//!   resourceVersion is refused (logged, in the status) and the informer starts as from a seed:
//!   a consistent list diffed against the loaded objects, so what no longer exists reaches
//!   `on_delete`. Never a wrong cache.
//!
//! A seed ([`InformerConfig::initial_state`](crate::InformerConfig::initial_state)) has no
//! resourceVersion: it is loaded like a snapshot and always followed by that diffed list.

mod checksum;
mod file;
mod format;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use file::{read_snapshot, snapshot_file_name};
pub(crate) use file::{read_whole, write_atomic};
pub(crate) use format::{Body, encode};
pub use format::{FORMAT_VERSION, FormatError, ListScope, SnapshotHeader, StoredAs, TypeIdentity};

/// The default [`SnapshotOptions::interval`]: 5 minutes.
pub const DEFAULT_SNAPSHOT_INTERVAL: Duration = Duration::from_secs(5 * 60);

/// The default [`SnapshotOptions::max_file_bytes`]: 4 GiB.
pub const DEFAULT_MAX_SNAPSHOT_BYTES: u64 = 4 << 30;

/// Where and how an informer persists its cache (see the [module docs](self)).
///
/// ```
/// use std::time::Duration;
/// use kinformer::snapshot::SnapshotOptions;
/// let options = SnapshotOptions::new("/var/lib/my-controller/snapshots", "3f1c…-uid")
///     .interval(Duration::from_secs(60));
/// assert_eq!(options.interval, Duration::from_secs(60));
/// assert!(options.write_on_shutdown);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotOptions {
    /// The directory of the snapshot files (one per type and scope, named by
    /// [`snapshot_file_name`]). Created on the first write if it does not exist.
    pub dir: PathBuf,
    /// The cluster's identity ([`cluster_id`]); a snapshot of another cluster is refused.
    pub cluster_id: String,
    /// How often the cache is written while the informer runs (after it has synced). Default
    /// [`DEFAULT_SNAPSHOT_INTERVAL`], 5 minutes: a restart after a clean shutdown resumes from
    /// the snapshot written on the way out whatever the interval; the periodic one serves a
    /// crash, where the snapshot is usually older than the API server's watch history (about
    /// 75 s) and the restart relists anyway, diffed, so its value is the deletes it reports,
    /// which a 5-minute-old snapshot gives as well as a fresh one; more often costs an encode
    /// of the whole cache each time. Zero: never periodically.
    pub interval: Duration,
    /// Whether the cache is written when [`run`](crate::SharedIndexInformer::run) returns
    /// after a cancel (if it had synced). Default `true`.
    ///
    /// A [`QueueMode::DeltaFifo`](crate::informer::QueueMode::DeltaFifo) informer writes only
    /// while its queue is empty (its cache is a consistent state of the server only then; a
    /// write meanwhile is [`SnapshotError::Busy`] and the periodic one tries again at the next
    /// interval), so its shutdown write is skipped when deltas were still queued. The default
    /// queue's cache is always a consistent prefix of the server's changes.
    pub write_on_shutdown: bool,
    /// Whether a snapshot is loaded at start. Default `true`; `false` only writes.
    pub load: bool,
    /// Whether the snapshot's resourceVersion is checked with a one-object list before the
    /// watch resumes from it. Default `true`. A real kube-apiserver opens a watch from a
    /// resourceVersion it has not reached without complaint and sends nothing until it gets
    /// there (the cacher only waits for `sendInitialEvents` watches): after an etcd restore the
    /// informer would silently miss every change in between (kubernetes#107457). The check
    /// (served by etcd, one object) answers 504 "Too large resource version" instead. `false`
    /// saves that request and trusts the resourceVersion.
    pub verify_resource_version: bool,
    /// Files larger than this are refused unread. Default [`DEFAULT_MAX_SNAPSHOT_BYTES`].
    pub max_file_bytes: u64,
}

impl SnapshotOptions {
    /// Snapshots in `dir` for the cluster `cluster_id`, with the defaults above.
    pub fn new(dir: impl Into<PathBuf>, cluster_id: impl Into<String>) -> Self {
        Self {
            dir: dir.into(),
            cluster_id: cluster_id.into(),
            interval: DEFAULT_SNAPSHOT_INTERVAL,
            write_on_shutdown: true,
            load: true,
            verify_resource_version: true,
            max_file_bytes: DEFAULT_MAX_SNAPSHOT_BYTES,
        }
    }
    /// Sets [`interval`](Self::interval).
    #[must_use]
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }
    /// Sets [`write_on_shutdown`](Self::write_on_shutdown).
    #[must_use]
    pub fn write_on_shutdown(mut self, write: bool) -> Self {
        self.write_on_shutdown = write;
        self
    }
    /// Sets [`load`](Self::load).
    #[must_use]
    pub fn load(mut self, load: bool) -> Self {
        self.load = load;
        self
    }
    /// Sets [`verify_resource_version`](Self::verify_resource_version).
    #[must_use]
    pub fn verify_resource_version(mut self, verify: bool) -> Self {
        self.verify_resource_version = verify;
        self
    }
    /// Sets [`max_file_bytes`](Self::max_file_bytes).
    #[must_use]
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }
}

/// A snapshot written by [`SharedIndexInformer::write_snapshot`](crate::SharedIndexInformer::write_snapshot).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotWritten {
    /// The file.
    pub path: PathBuf,
    /// The cache's resourceVersion it records.
    pub resource_version: String,
    /// How many objects it holds.
    pub objects: usize,
    /// Its size in bytes.
    pub bytes: u64,
}

/// What an informer started from ([`SharedIndexInformer::snapshot_status`](crate::SharedIndexInformer::snapshot_status)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SnapshotStatus {
    /// No snapshot or seed: no snapshot configured, none to load, or the informer has not
    /// started.
    #[default]
    None,
    /// Loaded from a seed (`objects` of them); the first list is diffed against it.
    Seeded {
        /// How many objects were seeded.
        objects: usize,
    },
    /// Loaded from a snapshot; the Reflector has not yet told whether it resumes.
    Loaded {
        /// The snapshot's resourceVersion.
        resource_version: String,
        /// How many objects were loaded.
        objects: usize,
    },
    /// Resumed: watching from the snapshot's resourceVersion, no list. (Becomes
    /// [`Relisted`](Self::Relisted) should the watch's first answer be 410 Gone.)
    Resumed {
        /// The snapshot's resourceVersion.
        resource_version: String,
    },
    /// The server no longer had the snapshot's resourceVersion: listed, diffed against the
    /// snapshot.
    Relisted {
        /// The snapshot's resourceVersion.
        resource_version: String,
        /// The server's answer.
        reason: String,
    },
    /// The snapshot was refused; see the reason for what happened instead.
    Refused {
        /// Why.
        reason: SnapshotRefusal,
    },
}

/// Why a snapshot was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotRefusal {
    /// Written for another cluster. Not loaded; cold start.
    #[error("the snapshot is of cluster {snapshot:?}, this is {expected:?}")]
    OtherCluster {
        /// The snapshot's cluster id.
        snapshot: String,
        /// This informer's.
        expected: String,
    },
    /// Of another type. Not loaded; cold start.
    #[error("the snapshot holds {snapshot:?}, this informer {expected:?}")]
    OtherType {
        /// The snapshot's type.
        snapshot: TypeIdentity,
        /// This informer's.
        expected: TypeIdentity,
    },
    /// Of another list scope. Not loaded; cold start.
    #[error("the snapshot is of scope {snapshot:?}, this informer {expected:?}")]
    OtherScope {
        /// The snapshot's scope.
        snapshot: ListScope,
        /// This informer's.
        expected: ListScope,
    },
    /// Written by a cache of the other mode. Not loaded; cold start.
    #[error("the snapshot stores objects {snapshot:?}, this cache {expected:?}")]
    OtherCacheMode {
        /// The snapshot's.
        snapshot: StoredAs,
        /// This cache's.
        expected: StoredAs,
    },
    /// Unreadable: corrupt, truncated, another format version, too large, or an I/O error.
    /// Not loaded; cold start.
    #[error("the snapshot cannot be read: {0}")]
    Unreadable(String),
    /// Its resourceVersion is ahead of the server's (etcd restored, or a file from elsewhere).
    /// The objects stay loaded as a seed: a consistent list diffed against them follows.
    #[error("the snapshot's resourceVersion {resource_version} is ahead of the server: {message}")]
    ResourceVersionAhead {
        /// The snapshot's resourceVersion.
        resource_version: String,
        /// The server's answer.
        message: String,
    },
    /// The informer does not know its type's identity (a named informer of a dynamic type
    /// without [`type_identity`](crate::informer::SharedIndexInformerBuilder::type_identity)).
    #[error("the informer's type identity is unknown")]
    NoTypeIdentity,
}

/// Why a snapshot could not be written or read.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The informer has no [`SnapshotOptions`].
    #[error("no snapshot is configured")]
    NotConfigured,
    /// The informer does not know its type's identity.
    #[error("the informer's type identity is unknown")]
    NoTypeIdentity,
    /// The informer has not synced: there is no complete state to write.
    #[error("the informer has not synced")]
    NotSynced,
    /// The cache has no resourceVersion to resume from.
    #[error("the cache has no resourceVersion")]
    NoResourceVersion,
    /// A DeltaFifo informer with queued deltas: its cache is not a consistent prefix of the
    /// server's changes until they are applied. Try again.
    #[error("the informer's queue holds unapplied deltas")]
    Busy,
    /// An I/O error.
    #[error("snapshot I/O on {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: Arc<std::io::Error>,
    },
    /// The file is over [`SnapshotOptions::max_file_bytes`].
    #[error("the snapshot is {size} bytes, over the limit of {limit}")]
    TooLarge {
        /// The file's size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The file is not a valid snapshot.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// An object could not be encoded.
    #[error("an object could not be encoded: {0}")]
    Encode(String),
    /// Reading the cluster id failed.
    #[error("reading the cluster id: {0}")]
    ClusterId(Arc<kube::Error>),
    /// The `kube-system` namespace has no UID.
    #[error("the kube-system namespace has no uid")]
    NoClusterUid,
}

/// The cluster's identity for snapshots: the UID of the `kube-system` namespace, which every
/// cluster has from its creation and which stays the same for its whole life (a cluster
/// rebuilt from scratch gets a new one).
///
/// # Errors
/// [`SnapshotError::ClusterId`] when the request fails; [`SnapshotError::NoClusterUid`] when
/// the namespace has no UID.
pub async fn cluster_id(client: &kube::Client) -> Result<String, SnapshotError> {
    use k8s_openapi::api::core::v1::Namespace;
    let api: kube::Api<Namespace> = kube::Api::all(client.clone());
    let ns = api
        .get("kube-system")
        .await
        .map_err(|e| SnapshotError::ClusterId(Arc::new(e)))?;
    ns.metadata
        .uid
        .filter(|u| !u.is_empty())
        .ok_or(SnapshotError::NoClusterUid)
}
