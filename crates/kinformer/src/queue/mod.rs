//! Queues between the Reflector and the consumer: [`Fifo`] and [`DeltaFifo`].
//!
//! A Reflector writes what it lists and watches into a queue; a single consumer pops from it.
//! Both queues are keyed: changes to one object accumulate under its key, and keys pop in the
//! order they were first queued, so a busy object cannot starve the others and is never
//! processed twice for one backlog.
//!
//! - [`Fifo`] keeps only the latest object per key: process each object once, latest version,
//!   ignore deletions.
//! - [`DeltaFifo`] keeps every change ([`Deltas`]: `Added`, `Updated`, `Deleted`, `Replaced`,
//!   `Sync`), reconciles relists against the consumer's known objects (producing
//!   [`DeletedFinalStateUnknown`](crate::DeletedFinalStateUnknown) tombstones for deletions
//!   missed while disconnected), and tells when the first list has been delivered
//!   ([`DeltaFifo::has_synced`]). It is what an informer runs on.
//!
//! `pop` is `async`, waits without polling, is cancel-safe, and calls your closure under the
//! queue's lock so the consumer can update its cache atomically with the pop, as in client-go.

mod delta;
mod delta_fifo;
mod error;
mod fifo;
mod options;
mod real_fifo;
mod room;
mod sync_state;

pub use delta::{Delta, DeltaType, Deltas};
pub use delta_fifo::DeltaFifo;
pub use error::QueueError;
pub use fifo::Fifo;
pub use options::{DeltaFifoOptions, TransformFunc};
pub use real_fifo::{
    DEFAULT_BATCH_SIZE, KeyedDelta, Popped, RealFifo, RealFifoMode, RealFifoOptions, ReplacedAll,
};
