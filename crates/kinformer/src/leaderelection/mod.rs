//! Leader election on `coordination.k8s.io/v1` Leases: client-go's `tools/leaderelection`.
//!
//! Several replicas of a controller run a [`LeaderElector`] each on the same lock; one leads
//! (holds the Lease and renews it every `retry_period`), the others wait, read the Lease every
//! `retry_period` (jittered) and take it over once the leader has not renewed it for
//! `lease_duration` as *they* observe it. The defaults are client-go's (15 s / 10 s / 2 s);
//! the guarantee and its limits (clock rates, not offsets) are on [`LeaderElector`].
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use kinformer::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock};
//! use tokio_util::sync::CancellationToken;
//!
//! let lock = LeaseLock::new(client, "kube-system", "my-controller", "pod-a-5f2c");
//! let elector = LeaderElector::new(LeaderElectionConfig::new(lock).release_on_cancel(true))?;
//! let callbacks = LeaderCallbacks::new()
//!     .on_started_leading(|token: CancellationToken| async move {
//!         // lead until the token is cancelled, then return promptly
//!         token.cancelled().await;
//!     })
//!     .on_stopped_leading(|| eprintln!("stopped leading"))
//!     .on_new_leader(|id| eprintln!("new leader: {id}"));
//! let end = elector.run(CancellationToken::new(), callbacks).await?;
//! eprintln!("{end:?}");
//! # Ok(()) }
//! ```
//!
//! The [controller runner](crate::controller::Controller::leader_election) runs an elector
//! for you, with warm standby.
//!
//! Out of scope: client-go's coordinated leader election (`LeaseCandidate` objects and the
//! `Coordinated` option, KEP-4355), and the other lock kinds (Endpoints and ConfigMap locks
//! were removed from client-go; a [`ResourceLock`] of your own can be plugged in).

mod config;
mod elector;
mod lock;
mod memory;
#[cfg(test)]
mod tests;

/// The clock an elector measures with: the work queues' clock.
pub use crate::workqueue::{Clock, TokioClock};
pub use config::{
    ConfigError, DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD,
    JITTER_FACTOR, LeaderElectionConfig,
};
pub use elector::{ElectionEnd, LeaderCallbacks, LeaderElector, LeaderStatus, RunError};
pub use lock::{LeaderElectionRecord, LeaseLock, LockError, ResourceLock};
pub use memory::{MemoryLease, MemoryLock};
