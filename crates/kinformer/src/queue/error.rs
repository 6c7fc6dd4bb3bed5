//! The one error type of the queue module.

use crate::object::KeyError;

/// Why a [`Fifo`](super::Fifo) or [`DeltaFifo`](super::DeltaFifo) operation failed.
///
/// A failed write leaves the queue exactly as it was: nothing is enqueued, nothing already
/// queued is lost, and the sync accounting does not move.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// The key of an object could not be computed (for example, it has no name).
    #[error("cannot compute the key of an object: {0}")]
    Key(#[from] KeyError),
    /// `pop` was called on a queue that is closed and has nothing left to drain
    /// (client-go's `ErrFIFOClosed`).
    #[error("the queue is closed")]
    Closed,
}
