//! Work queues: client-go's `util/workqueue`, generic over the key type and async.
//!
//! The other half of every informer-based controller: event handlers [`add`](Queue::add) keys,
//! workers [`get`](Queue::get) them, process them and call [`done`](Queue::done).
//!
//! * [`Queue`]: fair, stingy (dedupes; never hands one key to two workers), with shutdown and
//!   drain;
//! * [`DelayingQueue`]: plus [`add_after`](DelayingQueue::add_after), earliest time wins;
//! * [`RateLimitingQueue`]: plus per-item backoff ([`add_rate_limited`](RateLimitingQueue::add_rate_limited),
//!   [`forget`](RateLimitingQueue::forget), [`num_requeues`](RateLimitingQueue::num_requeues));
//! * [`PriorityQueue`]: controller-runtime's priority queue (the controller runner's default):
//!   the rate-limiting queue's methods plus [`add_with_opts`](PriorityQueue::add_with_opts)
//!   with a priority, and [`get_with_priority`](PriorityQueue::get_with_priority);
//! * the rate limiters of client-go, with its defaults ([`default_controller_rate_limiter`]);
//! * a [`Clock`] every queue takes ([`QueueConfig::clock`]): Tokio's by default, a
//!   [`FakeClock`] in tests.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use kinformer::workqueue::RateLimitingQueue;
//! let queue = RateLimitingQueue::<String>::with_default_limiter("example");
//! queue.add("ns/a".to_owned());
//! queue.add("ns/a".to_owned()); // collapses into the first
//! let key = queue.get().await.unwrap();
//! queue.forget(&key); // success: clear its backoff
//! queue.done(&key);
//! assert_eq!(queue.len(), 0);
//! queue.shut_down();
//! assert_eq!(queue.get().await, None);
//! # }
//! ```

mod bucket;
mod clock;
mod delaying;
mod metrics;
mod priority;
mod priority_state;
mod queue;
mod rate_limiter;
mod rate_limiting;

pub use bucket::{BucketRateLimiter, INF_DURATION, default_controller_rate_limiter};
pub use clock::{Clock, ClockSleep, FakeClock, TokioClock};
pub use delaying::DelayingQueue;
pub use metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, PriorityGaugeMetric,
    SettableGaugeMetric, set_provider,
};
pub use priority::{AddOpts, LOW_PRIORITY, PriorityQueue};
pub use queue::{
    DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD, FifoStorage, Queue, QueueConfig, QueueItem, QueueStorage,
};
pub use rate_limiter::{
    ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter,
    WithMaxWaitRateLimiter, default_item_based_rate_limiter,
};
pub use rate_limiting::RateLimitingQueue;
