//! Why one `list_and_watch` cycle of a Reflector ended.

use std::time::Duration;

use super::error::ListWatchError;

/// Why a Reflector's `list_and_watch` cycle ended; what the watch error handler receives.
///
/// Every variant is recoverable: `run` hands it to the watch error handler, backs off and starts
/// a new cycle (relisting at the last synced resource version).
#[derive(Debug, thiserror::Error)]
pub enum ReflectorError {
    /// The list failed (after the 410 / "too large resource version" retry at `""`).
    #[error("failed to list: {0}")]
    List(#[source] ListWatchError),
    /// A watch could not be started (and the error is not one that is retried in place).
    #[error("failed to start a watch: {0}")]
    Watch(#[source] ListWatchError),
    /// An open watch ended with an error (an `ERROR` event such as `410 Expired`, or a broken
    /// stream). client-go only logs these; we also report them to the handler so callers can
    /// see them. The control flow is the same: back off, then relist.
    #[error("watch ended with an error: {0}")]
    WatchEnded(#[source] ListWatchError),
    /// A watch closed within a second without delivering anything (client-go's
    /// `VeryShortWatchError`).
    #[error(
        "very short watch: {name}: unexpected watch close - watch lasted less than a second and no items received"
    )]
    VeryShortWatch {
        /// The Reflector's name.
        name: String,
    },
    /// A streaming list did not deliver the bookmark that ends its initial events in time.
    /// (client-go waits forever; we fall back to list+watch.)
    #[error("no initial-events-end bookmark within {timeout:?}")]
    EndBookmarkTimeout {
        /// The configured timeout.
        timeout: Duration,
    },
    /// The store refused a `replace` or `resync`.
    #[error("store error during {operation}: {source}")]
    Store {
        /// `"replace"` or `"resync"`.
        operation: &'static str,
        /// The store's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl ReflectorError {
    /// The underlying list/watch error, if there is one.
    pub fn list_watch_error(&self) -> Option<&ListWatchError> {
        match self {
            Self::List(e) | Self::Watch(e) | Self::WatchEnded(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the underlying error is `410 Expired`/`Gone`.
    pub fn is_expired(&self) -> bool {
        self.list_watch_error()
            .is_some_and(ListWatchError::is_expired)
    }
}
