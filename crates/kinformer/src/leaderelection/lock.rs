//! The lock an elector takes: client-go's `resourcelock.Interface`, its `LeaderElectionRecord`,
//! and the `coordination.k8s.io/v1` Lease implementation (`resourcelock.LeaseLock`).

use std::collections::BTreeMap;
use std::fmt;
use std::time::SystemTime;

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};
use parking_lot::Mutex;

/// What a lock holds (client-go's `resourcelock.LeaderElectionRecord`), read from and written
/// to a Lease's spec.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// `spec.holderIdentity`: who holds the lease; empty when nobody does (after a release).
    pub holder_identity: String,
    /// `spec.leaseDurationSeconds`: how long others wait, on their own clocks, after they last
    /// saw the record change before they may take the lease.
    pub lease_duration_seconds: i32,
    /// `spec.acquireTime`: when the current holder acquired it (the holder's wall clock).
    pub acquire_time: Option<MicroTime>,
    /// `spec.renewTime`: when the holder last renewed it (the holder's wall clock).
    pub renew_time: Option<MicroTime>,
    /// `spec.leaseTransitions`: how many times the lease changed hands.
    pub leader_transitions: i32,
}

impl LeaderElectionRecord {
    /// The record a Lease's spec holds (client-go's `LeaseSpecToLeaderElectionRecord`).
    pub fn from_spec(spec: &LeaseSpec) -> Self {
        Self {
            holder_identity: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
            acquire_time: spec.acquire_time.clone(),
            renew_time: spec.renew_time.clone(),
            leader_transitions: spec.lease_transitions.unwrap_or_default(),
        }
    }

    /// The Lease spec holding this record (client-go's `LeaderElectionRecordToLeaseSpec`).
    pub fn to_spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder_identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time.clone(),
            renew_time: self.renew_time.clone(),
            lease_transitions: Some(self.leader_transitions),
            ..Default::default()
        }
    }
}

/// A wall-clock instant as a Lease timestamp (microseconds; `None` before 1970 or after 9999).
pub(crate) fn micro_time(t: SystemTime) -> Option<MicroTime> {
    let ts = k8s_openapi::jiff::Timestamp::try_from(t).ok()?;
    let micros = ts.as_microsecond();
    k8s_openapi::jiff::Timestamp::from_microsecond(micros)
        .ok()
        .map(MicroTime)
}

/// Why a lock operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The lock object does not exist (404): the elector creates it.
    #[error("the lock {0} does not exist")]
    NotFound(String),
    /// Someone else changed the lock since it was read (409): the elector reads it again on
    /// its next try.
    #[error("the lock {0} changed since it was read (conflict)")]
    Conflict(String),
    /// `update` before any `get` or `create` (client-go: "lease not initialized, call get or
    /// create first").
    #[error("the lock {0} was not read yet: call get or create first")]
    NotInitialized(String),
    /// Any other API error (network, 5xx, 403, ...).
    #[error("lock {lock}: {source}")]
    Api {
        /// The lock, as [`ResourceLock::describe`] names it.
        lock: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// A failure a custom lock reports (tests inject these).
    #[error("lock {lock}: {message}")]
    Other {
        /// The lock, as [`ResourceLock::describe`] names it.
        lock: String,
        /// What went wrong.
        message: String,
    },
}

/// A lock an elector takes (client-go's `resourcelock.Interface`, without `RecordEvent`).
///
/// `get` returns the current record; `create` and `update` write one. An `update` must be a
/// compare-and-swap against the version the last `get`/`create`/`update` saw, failing with
/// [`LockError::Conflict`] when the object changed in between (a Lease's `resourceVersion`).
pub trait ResourceLock: Send + Sync + fmt::Debug {
    /// Reads the record and the object's version (a Lease's `resourceVersion`), and remembers
    /// the version for the next `update`.
    fn get(&self) -> BoxFuture<'_, Result<(LeaderElectionRecord, String), LockError>>;
    /// Creates the lock object holding `record`; returns its version.
    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>>;
    /// Replaces the record, if the object is still the version last seen; returns the new
    /// version.
    fn update(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>>;
    /// This candidate's identity (written as `holderIdentity`).
    fn identity(&self) -> &str;
    /// The lock for logs: `namespace/name`.
    fn describe(&self) -> String;
}

/// A `coordination.k8s.io/v1` Lease as the lock (client-go's `resourcelock.LeaseLock`).
pub struct LeaseLock {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    labels: BTreeMap<String, String>,
    /// The Lease last read or written: its `resourceVersion` makes `update` a compare-and-swap.
    lease: Mutex<Option<Lease>>,
}

impl fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseLock")
            .field("lease", &self.describe())
            .field("identity", &self.identity)
            .finish()
    }
}

impl LeaseLock {
    /// The Lease `namespace/name`, taken as `identity` (usually the pod name plus a random
    /// suffix: identities must be unique among the candidates).
    pub fn new(
        client: kube::Client,
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        let namespace = namespace.into();
        Self {
            api: Api::namespaced(client, &namespace),
            namespace,
            name: name.into(),
            identity: identity.into(),
            labels: BTreeMap::new(),
            lease: Mutex::new(None),
        }
    }

    /// Labels set on the Lease when it is created and kept on every update (client-go's
    /// `LeaseLock.Labels`: only these keys are overwritten).
    #[must_use]
    pub fn labels(mut self, labels: BTreeMap<String, String>) -> Self {
        self.labels = labels;
        self
    }

    fn map_err(&self, e: kube::Error) -> LockError {
        match &e {
            kube::Error::Api(s) if s.code == 404 => LockError::NotFound(self.describe()),
            kube::Error::Api(s) if s.code == 409 => LockError::Conflict(self.describe()),
            _ => LockError::Api {
                lock: self.describe(),
                source: e,
            },
        }
    }
}

impl ResourceLock for LeaseLock {
    fn get(&self) -> BoxFuture<'_, Result<(LeaderElectionRecord, String), LockError>> {
        Box::pin(async move {
            let lease = self
                .api
                .get(&self.name)
                .await
                .map_err(|e| self.map_err(e))?;
            let record = LeaderElectionRecord::from_spec(&lease.spec.clone().unwrap_or_default());
            let version = lease.metadata.resource_version.clone().unwrap_or_default();
            *self.lease.lock() = Some(lease);
            Ok((record, version))
        })
    }

    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>> {
        Box::pin(async move {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: Some(self.namespace.clone()),
                    labels: (!self.labels.is_empty()).then(|| self.labels.clone()),
                    ..Default::default()
                },
                spec: Some(record.to_spec()),
            };
            let created = self
                .api
                .create(&PostParams::default(), &lease)
                .await
                .map_err(|e| self.map_err(e))?;
            let version = created
                .metadata
                .resource_version
                .clone()
                .unwrap_or_default();
            *self.lease.lock() = Some(created);
            Ok(version)
        })
    }

    fn update(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>> {
        Box::pin(async move {
            let Some(mut lease) = self.lease.lock().clone() else {
                return Err(LockError::NotInitialized(self.describe()));
            };
            lease.spec = Some(record.to_spec());
            if !self.labels.is_empty() {
                let labels = lease.metadata.labels.get_or_insert_with(BTreeMap::new);
                labels.extend(self.labels.clone());
            }
            // The cached resourceVersion travels with the object: a 409 when it changed.
            let updated = self
                .api
                .replace(&self.name, &PostParams::default(), &lease)
                .await
                .map_err(|e| self.map_err(e))?;
            let version = updated
                .metadata
                .resource_version
                .clone()
                .unwrap_or_default();
            *self.lease.lock() = Some(updated);
            Ok(version)
        })
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}
