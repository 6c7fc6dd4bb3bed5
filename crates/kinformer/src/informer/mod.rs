//! Shared informers: one list/watch and one cache per resource, many handlers.
//!
//! The pieces follow client-go's `shared_informer.go`: a processor fans each notification out
//! to one listener per registered handler or [`EventStream`]; each listener queues the
//! notifications and its handler is called on its own task, in order, so a slow handler delays
//! only itself until it is [`MAX_LISTENER_BACKLOG`] live notifications behind; then the
//! informer pauses until it catches up (client-go's buffers grow without bound instead).

mod event;
mod handler;
mod list_staging;
mod listener;
pub(crate) mod naming;
mod processor;
mod queue;
mod shared_informer;
mod stream;
mod sync_tracker;

pub use event::Event;
pub use handler::{FilteringResourceEventHandler, ResourceEventHandler, ResourceEventHandlerFuncs};
pub use listener::MAX_LISTENER_BACKLOG;
pub use listener::ResourceEventHandlerRegistration;
pub use processor::HandlerStats;
pub use queue::QueueMode;
pub use shared_informer::{
    ConsistencyError, ConsistencyReport, ConsistencyStats, HandlerOptions, InformerError, KindName,
    MAX_QUEUED_DELTAS, MINIMUM_RESYNC_PERIOD, SharedIndexInformer, SharedIndexInformerBuilder,
};
pub use stream::EventStream;
