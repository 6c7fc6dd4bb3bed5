//! Queues between the Reflector and the consumer: [`RealFifo`], [`DeltaFifo`] and [`Fifo`].
//!
//! A Reflector writes what it lists and watches into a queue; a single consumer pops from it.
//!
//! - [`RealFifo`] delivers every change in arrival order across all objects, deletions of
//!   objects never cached included, and reports a relist as one entry (or, per object,
//!   deletions first). Consumers pop batches of distinct keys and apply each in one store
//!   transaction. It is client-go's informer queue since Kubernetes 1.36.
//!
//! The two keyed queues below accumulate changes to one object under its key, and keys pop in
//! the order they were first queued, so a busy object cannot starve the others and is never
//! processed twice for one backlog; events for different objects may then come out of arrival
//! order.
//!
//! - [`Fifo`] keeps only the latest object per key: process each object once, latest version,
//!   ignore deletions.
//! - [`DeltaFifo`] keeps every change ([`Deltas`]: `Added`, `Updated`, `Deleted`, `Replaced`,
//!   `Sync`), reconciles relists against the consumer's known objects (producing
//!   [`DeletedFinalStateUnknown`](crate::DeletedFinalStateUnknown) tombstones for deletions
//!   missed while disconnected), and tells when the first list has been delivered
//!   ([`DeltaFifo::has_synced`]). It was client-go's informer queue up to Kubernetes 1.35.
//!
//! `pop` is `async`, waits without polling, is cancel-safe, and calls your closure under the
//! queue's lock so the consumer can update its cache atomically with the pop, as in client-go
//! (except a [`RealFifo`] in atomic mode, which consults no cache and releases its lock while
//! the closure runs, as client-go's `UnlockWhileProcessing` does).

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
pub use options::DeltaFifoOptions;
pub use real_fifo::{
    DEFAULT_BATCH_SIZE, KeyedDelta, Popped, RealFifo, RealFifoMode, RealFifoOptions, ReplacedAll,
};
