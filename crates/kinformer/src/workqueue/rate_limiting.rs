//! The rate-limiting queue: client-go's `TypedRateLimitingInterface`, a [`DelayingQueue`] whose
//! retries wait as long as a [`RateLimiter`] says.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use super::bucket::default_controller_rate_limiter;
use super::delaying::DelayingQueue;
use super::queue::{QueueConfig, QueueItem};
use super::rate_limiter::RateLimiter;

/// A delaying queue with per-item retry backoff. It dereferences to the [`DelayingQueue`] (and
/// through it to the plain `Queue`), the way Go embeds it. Give each queue its own limiter:
/// a shared one mixes up `forget`.
pub struct RateLimitingQueue<T> {
    queue: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            limiter: self.limiter.clone(),
        }
    }
}

impl<T: QueueItem> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

impl<T> Deref for RateLimitingQueue<T> {
    type Target = DelayingQueue<T>;
    fn deref(&self) -> &DelayingQueue<T> {
        &self.queue
    }
}

impl<T: QueueItem> RateLimitingQueue<T> {
    /// An unnamed queue with `limiter` (client-go's `NewTypedRateLimitingQueue`).
    ///
    /// # Panics
    /// Outside a Tokio runtime (the delaying queue spawns its waiting loop).
    pub fn new(limiter: impl RateLimiter<T> + 'static) -> Self {
        Self::with_config(limiter, QueueConfig::default())
    }

    /// A queue with client-go's default controller limiter (5 ms → 1000 s per item, 10 qps
    /// burst 100 overall), named `name` for metrics.
    ///
    /// # Panics
    /// Outside a Tokio runtime (the delaying queue spawns its waiting loop).
    pub fn with_default_limiter(name: impl Into<String>) -> Self {
        Self::with_config(default_controller_rate_limiter(), QueueConfig::named(name))
    }

    /// A queue with `limiter` whose queues are built from `config` (client-go's
    /// `NewTypedRateLimitingQueueWithConfig`).
    ///
    /// # Panics
    /// Outside a Tokio runtime (the delaying queue spawns its waiting loop).
    pub fn with_config(limiter: impl RateLimiter<T> + 'static, config: QueueConfig<T>) -> Self {
        Self::from_delaying(DelayingQueue::with_config(config), Arc::new(limiter))
    }

    /// Rate limiting over an existing delaying queue.
    pub fn from_delaying(queue: DelayingQueue<T>, limiter: Arc<dyn RateLimiter<T>>) -> Self {
        Self { queue, limiter }
    }

    /// Adds `item` after the delay the limiter gives it (which records a retry).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.limiter.when(&item);
        self.queue.add_after(item, delay);
    }

    /// Clears `item`'s retry history in the limiter. You still have to call `done`.
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    /// How many times `item` has been retried since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }
}
