//! The informer's error type and the options a handler is added with.

use super::*;

/// Errors from informer operations. Nothing an informer is configured with can fail once it
/// runs: its options are fixed when it is built ([`InformerConfig`](crate::InformerConfig)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// The informer has stopped; it takes no new handlers or indexers.
    #[error("informer {0:?} has stopped; handler or indexer not added")]
    Stopped(String),
    /// The registration belongs to another informer.
    #[error("registration {0:?} does not belong to informer {1:?}")]
    ForeignRegistration(String, String),
    /// A handler's shutdown was awaited from inside that handler's own callback, where it
    /// would wait for itself; the handler was removed, but not waited for.
    #[error("handler {0:?} cannot wait for its own shutdown from inside its callback")]
    FromOwnHandler(String),
    /// An indexer could not be added.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Options for one handler (client-go's `HandlerOptions`).
#[derive(Debug, Clone, Default)]
pub struct HandlerOptions {
    /// The handler's resync period; `None` takes the informer's default. Zero: never resync.
    pub resync_period: Option<Duration>,
    /// A name for logs and diagnostics; defaults to `handler-N`.
    pub name: Option<String>,
    /// Run the handler on a dedicated thread instead of a tokio task: for handlers that block
    /// (synchronous I/O, heavy CPU), so they cannot stall the async runtime.
    pub blocking: bool,
}

impl HandlerOptions {
    /// Sets the resync period.
    #[must_use]
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = Some(period);
        self
    }
    /// Sets the name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// Runs the handler on a dedicated thread.
    #[must_use]
    pub fn blocking(mut self, blocking: bool) -> Self {
        self.blocking = blocking;
        self
    }
}
