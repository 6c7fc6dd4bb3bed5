//! The elector's configuration and its validation.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::lock::ResourceLock;
use crate::workqueue::{Clock, TokioClock};

/// client-go's `JitterFactor`: a candidate waits `retry_period * (1 + rand * 1.2)` between
/// attempts to acquire.
pub const JITTER_FACTOR: f64 = 1.2;
/// client-go's default lease duration (`LeaseDuration`, as kube-controller-manager uses).
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// client-go's default renew deadline.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// client-go's default retry period.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// Why a configuration was refused (client-go's `NewLeaderElector` checks, plus one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// client-go: "leaseDuration must be greater than renewDeadline".
    #[error("leaseDuration must be greater than renewDeadline")]
    LeaseNotLongerThanRenewDeadline,
    /// client-go: "renewDeadline must be greater than retryPeriod*JitterFactor".
    #[error("renewDeadline must be greater than retryPeriod*JitterFactor")]
    RenewDeadlineTooShort,
    /// client-go: "leaseDuration must be greater than zero".
    #[error("leaseDuration must be greater than zero")]
    ZeroLeaseDuration,
    /// client-go: "renewDeadline must be greater than zero".
    #[error("renewDeadline must be greater than zero")]
    ZeroRenewDeadline,
    /// client-go: "retryPeriod must be greater than zero".
    #[error("retryPeriod must be greater than zero")]
    ZeroRetryPeriod,
    /// client-go: "Lock identity is empty".
    #[error("Lock identity is empty")]
    EmptyIdentity,
    /// The lease records whole seconds (`leaseDurationSeconds`), and the other candidates wait
    /// only that long: its whole seconds must still exceed the renew deadline.
    ///
    /// Deliberate difference: client-go truncates silently (a 10.5 s lease with a 10.2 s renew
    /// deadline lets others take over after 10 s, while the leader believes itself leader
    /// until 10.2 s).
    #[error("leaseDuration in whole seconds ({whole_seconds}s) must be greater than renewDeadline")]
    WholeSecondsNotLongerThanRenewDeadline {
        /// `leaseDurationSeconds` as written into the lease.
        whole_seconds: u64,
    },
}

/// An elector's configuration (client-go's `LeaderElectionConfig`), with client-go's
/// defaults.
#[derive(Clone)]
pub struct LeaderElectionConfig {
    /// The lock: a [`LeaseLock`](super::LeaseLock) (name, namespace, identity) or your own.
    pub lock: Arc<dyn ResourceLock>,
    /// How long non-leaders wait, after they last saw the lease change, before they try to
    /// take it (written as `leaseDurationSeconds`). Default 15 s.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leadership, counted from
    /// the start of its last successful renewal. Default 10 s.
    pub renew_deadline: Duration,
    /// How long candidates wait between attempts (jittered by [`JITTER_FACTOR`] while
    /// acquiring). Default 2 s.
    pub retry_period: Duration,
    /// Release the lease when the elector is cancelled while leading (holder cleared,
    /// `leaseDurationSeconds` 1), so another candidate takes over at once. Only safe when the
    /// leading work has stopped first, which the elector waits for. Default false, as client-go.
    pub release_on_cancel: bool,
    /// A name for logs (client-go's `Name`).
    pub name: String,
    /// The clock observed times and waits are measured on, and whose [`wall`](Clock::wall)
    /// stamps `acquireTime` / `renewTime` (the work queues' [`Clock`]). Default
    /// [`TokioClock`]: Tokio's clock (paused in tests) and the system's wall clock. Tests may
    /// run candidates on clocks that tick at different rates.
    pub clock: Arc<dyn Clock>,
}

impl fmt::Debug for LeaderElectionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElectionConfig")
            .field("lock", &self.lock.describe())
            .field("identity", &self.lock.identity())
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .field("release_on_cancel", &self.release_on_cancel)
            .field("name", &self.name)
            .finish()
    }
}

impl LeaderElectionConfig {
    /// client-go's defaults (15 s / 10 s / 2 s, no release on cancel) on `lock`.
    pub fn new(lock: impl ResourceLock + 'static) -> Self {
        Self {
            lock: Arc::new(lock),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: false,
            name: String::new(),
            clock: Arc::new(TokioClock),
        }
    }

    /// Sets the three durations.
    #[must_use]
    pub fn durations(mut self, lease: Duration, renew_deadline: Duration, retry: Duration) -> Self {
        self.lease_duration = lease;
        self.renew_deadline = renew_deadline;
        self.retry_period = retry;
        self
    }

    /// Sets [`release_on_cancel`](Self::release_on_cancel).
    #[must_use]
    pub fn release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// Sets the name used in logs.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets the clock.
    #[must_use]
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// client-go's checks, in client-go's order, then the whole-seconds check.
    ///
    /// # Errors
    /// The first check that fails.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.lease_duration <= self.renew_deadline {
            return Err(ConfigError::LeaseNotLongerThanRenewDeadline);
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER_FACTOR) {
            return Err(ConfigError::RenewDeadlineTooShort);
        }
        if self.lease_duration.is_zero() {
            return Err(ConfigError::ZeroLeaseDuration);
        }
        if self.renew_deadline.is_zero() {
            return Err(ConfigError::ZeroRenewDeadline);
        }
        if self.retry_period.is_zero() {
            return Err(ConfigError::ZeroRetryPeriod);
        }
        if self.lock.identity().is_empty() {
            return Err(ConfigError::EmptyIdentity);
        }
        let whole_seconds = self.lease_duration.as_secs();
        if Duration::from_secs(whole_seconds) <= self.renew_deadline {
            return Err(ConfigError::WholeSecondsNotLongerThanRenewDeadline { whole_seconds });
        }
        Ok(())
    }

    /// `leaseDurationSeconds` as written (whole seconds, as client-go truncates).
    pub(crate) fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}
