//! The controller's work queue: one protocol over the two queue types a controller can use.

use std::fmt;
use std::time::Duration;

use crate::workqueue::{AddOpts, PriorityQueue, RateLimitingQueue};

#[derive(Clone)]
enum Kind {
    Fifo(RateLimitingQueue<String>),
    Priority(PriorityQueue<String>),
}

/// A controller's work queue of keys (see [`Controller::queue`](super::Controller::queue)):
/// a [`PriorityQueue`] by default, or client-go's rate-limiting FIFO queue. Cloning gives
/// another handle to the same queue.
///
/// The runner and the handlers speak only this protocol: adds with options (priority, delay,
/// rate limiting), `get_with_priority`, `done`, `forget`. Over a [`PriorityQueue`] every
/// option applies; over the plain FIFO [`RateLimitingQueue`]
/// ([`Controller::priority_queue`](super::Controller::priority_queue)`(false)`) priorities are
/// ignored and options map as controller-runtime's `priorityQueueWrapper` maps them
/// (rate-limited, else delayed, else plain add), and every key comes out at priority 0.
#[derive(Clone)]
pub struct ControllerQueue {
    kind: Kind,
}

impl fmt::Debug for ControllerQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Fifo(q) => q.fmt(f),
            Kind::Priority(q) => q.fmt(f),
        }
    }
}

impl From<PriorityQueue<String>> for ControllerQueue {
    fn from(q: PriorityQueue<String>) -> Self {
        Self {
            kind: Kind::Priority(q),
        }
    }
}

impl From<RateLimitingQueue<String>> for ControllerQueue {
    fn from(q: RateLimitingQueue<String>) -> Self {
        Self {
            kind: Kind::Fifo(q),
        }
    }
}

impl ControllerQueue {
    /// Adds `key` with `opts` (see [`ControllerQueue`] for the FIFO queue). Ignored after
    /// shutdown.
    pub fn add_with_opts(&self, key: String, opts: AddOpts) {
        match &self.kind {
            Kind::Priority(q) => q.add_with_opts([key], opts),
            Kind::Fifo(q) if opts.rate_limited => q.add_rate_limited(key),
            Kind::Fifo(q) if !opts.after.is_zero() => q.add_after(key, opts.after),
            Kind::Fifo(q) => q.add(key),
        }
    }

    /// Adds `key`, ready now, at priority 0 (a real change).
    pub fn add(&self, key: String) {
        self.add_with_opts(key, AddOpts::default());
    }

    /// Adds `key` at `priority` (e.g. [`LOW_PRIORITY`](crate::workqueue::LOW_PRIORITY)).
    pub fn add_with_priority(&self, key: String, priority: i32) {
        self.add_with_opts(key, AddOpts::priority(priority));
    }

    /// Adds `key` at priority 0 after `delay`.
    pub fn add_after(&self, key: String, delay: Duration) {
        self.add_with_opts(
            key,
            AddOpts {
                after: delay,
                ..AddOpts::default()
            },
        );
    }

    /// Adds `key` at priority 0 after its rate limiter's delay (which records a retry).
    pub fn add_rate_limited(&self, key: String) {
        self.add_with_opts(
            key,
            AddOpts {
                rate_limited: true,
                ..AddOpts::default()
            },
        );
    }

    /// Clears `key`'s retry history.
    pub fn forget(&self, key: &str) {
        let key = key.to_owned();
        match &self.kind {
            Kind::Fifo(q) => q.forget(&key),
            Kind::Priority(q) => q.forget(&key),
        }
    }

    /// How many times `key` has been retried since it was last forgotten.
    pub fn num_requeues(&self, key: &str) -> u32 {
        let key = key.to_owned();
        match &self.kind {
            Kind::Fifo(q) => q.num_requeues(&key),
            Kind::Priority(q) => q.num_requeues(&key),
        }
    }

    /// How many keys are ready to be handed out (delayed ones are not counted).
    pub fn len(&self) -> usize {
        match &self.kind {
            Kind::Fifo(q) => q.len(),
            Kind::Priority(q) => q.len(),
        }
    }

    /// How many keys wait for a delay (a requeue-after or a retry backoff) to pass.
    pub fn waiting_len(&self) -> usize {
        match &self.kind {
            Kind::Fifo(q) => q.waiting_len(),
            Kind::Priority(q) => q.waiting_len(),
        }
    }

    /// How many keys are being reconciled.
    pub fn processing_len(&self) -> usize {
        match &self.kind {
            Kind::Fifo(q) => q.processing_len(),
            Kind::Priority(q) => q.processing_len(),
        }
    }

    /// Whether no key is ready.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The queue's name (the controller's).
    pub fn name(&self) -> &str {
        match &self.kind {
            Kind::Fifo(q) => q.name(),
            Kind::Priority(q) => q.name(),
        }
    }

    /// Whether shutdown has begun.
    pub fn shutting_down(&self) -> bool {
        match &self.kind {
            Kind::Fifo(q) => q.shutting_down(),
            Kind::Priority(q) => q.shutting_down(),
        }
    }

    /// The priority queue, unless the controller uses the FIFO queue.
    pub fn as_priority_queue(&self) -> Option<&PriorityQueue<String>> {
        match &self.kind {
            Kind::Priority(q) => Some(q),
            Kind::Fifo(_) => None,
        }
    }

    /// The FIFO rate-limiting queue, if the controller uses it.
    pub fn as_rate_limiting_queue(&self) -> Option<&RateLimitingQueue<String>> {
        match &self.kind {
            Kind::Fifo(q) => Some(q),
            Kind::Priority(_) => None,
        }
    }

    /// The next key and its priority (0 from the FIFO queue); `None` at shutdown.
    pub(crate) async fn get_with_priority(&self) -> Option<(String, i32)> {
        match &self.kind {
            Kind::Fifo(q) => q.get().await.map(|k| (k, 0)),
            Kind::Priority(q) => q.get_with_priority().await,
        }
    }

    /// Marks `key` as processed.
    #[allow(clippy::ptr_arg)] // the queues' items are `String`s
    pub(crate) fn done(&self, key: &String) {
        match &self.kind {
            Kind::Fifo(q) => q.done(key),
            Kind::Priority(q) => q.done(key),
        }
    }

    /// Shuts the queue down (waiting keys are dropped; ready ones are still handed out).
    pub(crate) fn shut_down(&self) {
        match &self.kind {
            Kind::Fifo(q) => q.shut_down(),
            Kind::Priority(q) => q.shut_down(),
        }
    }
}
