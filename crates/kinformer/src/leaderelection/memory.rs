//! An in-memory lock: several electors in one process share one record, with the Lease's
//! compare-and-swap semantics. For tests of code that runs an elector (on paused time), and
//! for the elector's own tests.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;

use super::lock::{LeaderElectionRecord, LockError, ResourceLock};

#[derive(Debug, Default)]
struct Shared {
    /// The record and its version (bumped on every write), or nothing before the first create.
    current: Option<(LeaderElectionRecord, u64)>,
    writes: u64,
}

/// One in-memory "Lease" that many [`MemoryLock`]s contend for. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct MemoryLease {
    shared: Arc<Mutex<Shared>>,
}

impl MemoryLease {
    /// An empty lease (the first candidate creates it).
    pub fn new() -> Self {
        Self::default()
    }

    /// A lock on this lease for candidate `identity`.
    pub fn lock(&self, identity: impl Into<String>) -> MemoryLock {
        MemoryLock {
            lease: self.clone(),
            identity: identity.into(),
            seen: Mutex::new(None),
        }
    }

    /// The record as it stands, if created.
    pub fn record(&self) -> Option<LeaderElectionRecord> {
        self.shared.lock().current.as_ref().map(|(r, _)| r.clone())
    }

    /// How many creates and updates succeeded.
    pub fn writes(&self) -> u64 {
        self.shared.lock().writes
    }
}

/// One candidate's lock on a [`MemoryLease`].
pub struct MemoryLock {
    lease: MemoryLease,
    identity: String,
    /// The version this candidate last read or wrote.
    seen: Mutex<Option<u64>>,
}

impl fmt::Debug for MemoryLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryLock")
            .field("identity", &self.identity)
            .finish()
    }
}

impl ResourceLock for MemoryLock {
    fn get(&self) -> BoxFuture<'_, Result<(LeaderElectionRecord, String), LockError>> {
        Box::pin(async move {
            let shared = self.lease.shared.lock();
            let (record, version) = shared
                .current
                .clone()
                .ok_or_else(|| LockError::NotFound(self.describe()))?;
            *self.seen.lock() = Some(version);
            Ok((record, version.to_string()))
        })
    }

    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>> {
        Box::pin(async move {
            let mut shared = self.lease.shared.lock();
            if shared.current.is_some() {
                return Err(LockError::Other {
                    lock: self.describe(),
                    message: "already exists".into(),
                });
            }
            shared.writes += 1;
            let version = shared.writes;
            shared.current = Some((record, version));
            *self.seen.lock() = Some(version);
            Ok(version.to_string())
        })
    }

    fn update(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>> {
        Box::pin(async move {
            let Some(seen) = *self.seen.lock() else {
                return Err(LockError::NotInitialized(self.describe()));
            };
            let mut shared = self.lease.shared.lock();
            match &shared.current {
                Some((_, version)) if *version == seen => {}
                Some(_) => return Err(LockError::Conflict(self.describe())),
                None => return Err(LockError::NotFound(self.describe())),
            }
            shared.writes += 1;
            let version = shared.writes;
            shared.current = Some((record, version));
            *self.seen.lock() = Some(version);
            Ok(version.to_string())
        })
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        "memory/lease".to_owned()
    }
}
