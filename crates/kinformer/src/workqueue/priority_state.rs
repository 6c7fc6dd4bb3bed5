//! The bookkeeping of a [`PriorityQueue`](super::PriorityQueue): one entry per key in a
//! map, ready keys in a B-tree by (priority desc, FIFO counter), waiting keys in a B-tree by
//! ready time; every operation is logarithmic (a hand-out skips at most the keys being
//! processed).

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::clock::saturating_add;
use super::metrics::{CounterMetric, QueueMetrics};
use super::queue::QueueItem;
use super::rate_limiter::RateLimiter;

/// controller-runtime's `handler.LowPriority`: the priority of adds from an informer's initial
/// list and of resync updates, so that real changes overtake them.
pub const LOW_PRIORITY: i32 = -100;

/// How an item is added to a [`PriorityQueue`](super::PriorityQueue) (controller-runtime's `AddOpts`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddOpts {
    /// Ready only after this delay (zero: ready now).
    pub after: Duration,
    /// Wait as long as the rate limiter says (its `when`, which records a retry); with
    /// `after` set too, the shorter of the two.
    pub rate_limited: bool,
    /// Higher is handed out first; 0 by default, [`LOW_PRIORITY`] for initial lists.
    pub priority: i32,
}

impl AddOpts {
    /// Ready now, at `priority`.
    pub fn priority(priority: i32) -> Self {
        Self {
            priority,
            ..Self::default()
        }
    }
}

/// One queued key: its priority, FIFO counter and, while waiting, its ready time.
pub(super) struct Entry {
    priority: i32,
    counter: u64,
    ready_at: Option<Instant>,
}

impl Entry {
    fn ready_key(&self) -> (Reverse<i32>, u64) {
        (Reverse(self.priority), self.counter)
    }
}

pub(super) struct State<T> {
    pub(super) items: HashMap<T, Entry>,
    /// Ready items: priority descending, then FIFO.
    pub(super) ready: BTreeMap<(Reverse<i32>, u64), T>,
    /// Waiting items: ready time, then the ready order.
    pub(super) waiting: BTreeMap<(Instant, Reverse<i32>, u64), T>,
    /// Handed out and not yet done.
    pub(super) locked: HashSet<T>,
    pub(super) counter: u64,
    pub(super) shutting_down: bool,
    pub(super) drain: bool,
    pub(super) metrics: Option<QueueMetrics<T>>,
    pub(super) retries: Option<Arc<dyn CounterMetric>>,
}

impl<T: QueueItem> State<T> {
    fn next_counter(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    /// controller-runtime's `lockedAddWithOpts` for one key; returns whether an item became
    /// ready and whether the earliest waiting time may have changed.
    pub(super) fn add(
        &mut self,
        key: T,
        opts: AddOpts,
        limiter: &dyn RateLimiter<T>,
        now: Instant,
    ) -> (bool, bool) {
        let mut after = opts.after;
        if opts.rate_limited {
            let rl = limiter.when(&key);
            if after.is_zero() || rl < after {
                after = rl;
            }
        }
        let ready_at = (!after.is_zero()).then(|| {
            if let Some(r) = &self.retries {
                r.inc();
            }
            saturating_add(now, after)
        });
        let Some(old) = self.items.get(&key) else {
            let entry = Entry {
                priority: opts.priority,
                counter: self.next_counter(),
                ready_at,
            };
            return self.insert(key, entry, true);
        };
        let (old_priority, old_counter, old_ready_at) = (old.priority, old.counter, old.ready_at);
        // Ready stays ready; otherwise the earlier time wins.
        let ready_at = match (old_ready_at, ready_at) {
            (None, _) | (Some(_), None) => None,
            (Some(a), Some(b)) => Some(a.min(b)),
        };
        let (mut priority, mut counter) = (old_priority, old_counter);
        if opts.priority > old_priority {
            if old_ready_at.is_none()
                && let Some(m) = &self.metrics
            {
                m.reprioritize(old_priority, opts.priority);
            }
            priority = opts.priority;
            counter = self.next_counter();
        }
        match old_ready_at {
            None => self.ready.remove(&(Reverse(old_priority), old_counter)),
            Some(t) => self
                .waiting
                .remove(&(t, Reverse(old_priority), old_counter)),
        };
        let entry = Entry {
            priority,
            counter,
            ready_at,
        };
        self.insert(key, entry, old_ready_at.is_some())
    }

    /// Files `entry` in its tree; `count` says whether a ready item counts as newly ready for
    /// the metrics.
    fn insert(&mut self, key: T, entry: Entry, count: bool) -> (bool, bool) {
        let result = match entry.ready_at {
            None => {
                if count && let Some(m) = self.metrics.as_mut() {
                    m.add_at(&key, entry.priority);
                }
                self.ready.insert(entry.ready_key(), key.clone());
                (count, false)
            }
            Some(t) => {
                self.waiting
                    .insert((t, Reverse(entry.priority), entry.counter), key.clone());
                (false, true)
            }
        };
        self.items.insert(key, entry);
        result
    }

    /// Moves the items whose time has come to the end of their level; returns whether any.
    pub(super) fn promote(&mut self, now: Instant) -> bool {
        let mut moved = false;
        while let Some(entry) = self.waiting.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let key = entry.remove();
            let counter = self.next_counter();
            let Some(e) = self.items.get_mut(&key) else {
                continue;
            };
            e.ready_at = None;
            e.counter = counter;
            let (priority, ready_key) = (e.priority, e.ready_key());
            if let Some(m) = self.metrics.as_mut() {
                m.add_at(&key, priority);
            }
            self.ready.insert(ready_key, key);
            moved = true;
        }
        moved
    }

    /// Whether `key` has an entry that is ready.
    pub(super) fn is_ready(&self, key: &T) -> bool {
        self.items.get(key).is_some_and(|e| e.ready_at.is_none())
    }

    /// Hands out the first ready key not being processed (skips at most `locked.len()`).
    pub(super) fn take(&mut self) -> Option<(T, i32)> {
        let (&ready_key, _) = self
            .ready
            .iter()
            .find(|(_, key)| !self.locked.contains(*key))?;
        let key = self.ready.remove(&ready_key)?;
        self.items.remove(&key);
        let priority = ready_key.0.0;
        if let Some(m) = self.metrics.as_mut() {
            m.get_at(&key, priority);
        }
        self.locked.insert(key.clone());
        Some((key, priority))
    }
}
