//! The priority queue against a simple model (controller-runtime's `TestFuzzPriorityQueue`
//! checks invariants; this checks every answer): random adds (priority, delay), gets, dones,
//! clock steps and shutdown on a fake clock, each compared with a linear-scan model of
//! controller-runtime's rules.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use kinformer::workqueue::{
    AddOpts, FakeClock, ItemExponentialFailureRateLimiter, PriorityQueue, QueueConfig,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Add {
        key: u8,
        priority: i32,
        after_ms: u64,
    },
    Get,
    Done(usize),
    Step(u64),
    ShutDown,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..8u8, -2..3i32, prop_oneof![3 => Just(0u64), 2 => 1..30u64])
            .prop_map(|(key, priority, after_ms)| Op::Add { key, priority, after_ms }),
        5 => Just(Op::Get),
        4 => (0..4usize).prop_map(Op::Done),
        3 => (0..25u64).prop_map(Op::Step),
        1 => Just(Op::ShutDown),
    ]
}

struct Item {
    key: u8,
    priority: i32,
    counter: u64,
    ready_at: Option<u64>,
}

/// controller-runtime's rules with linear scans.
#[derive(Default)]
struct Model {
    items: Vec<Item>,
    locked: Vec<u8>,
    counter: u64,
    now: u64,
    shut: bool,
}

impl Model {
    fn bump(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    /// Waiting items whose time came become ready, in (ready time, priority desc, counter)
    /// order, each at the end of its level.
    fn promote(&mut self) {
        let mut due: Vec<usize> = (0..self.items.len())
            .filter(|&i| self.items[i].ready_at.is_some_and(|t| t <= self.now))
            .collect();
        due.sort_by_key(|&i| {
            let it = &self.items[i];
            (it.ready_at, -it.priority, it.counter)
        });
        for i in due {
            let c = self.bump();
            self.items[i].ready_at = None;
            self.items[i].counter = c;
        }
    }

    fn add(&mut self, key: u8, priority: i32, after_ms: u64) {
        if self.shut {
            return;
        }
        self.promote();
        let ready_at = (after_ms > 0).then_some(self.now + after_ms);
        if let Some(i) = self.items.iter().position(|it| it.key == key) {
            let r = match (self.items[i].ready_at, ready_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                _ => None,
            };
            if priority > self.items[i].priority {
                let c = self.bump();
                self.items[i].priority = priority;
                self.items[i].counter = c;
            }
            self.items[i].ready_at = r;
        } else {
            let counter = self.bump();
            self.items.push(Item {
                key,
                priority,
                counter,
                ready_at,
            });
        }
    }

    /// `Some(None)`: shut down and nothing ready; `None`: would block.
    fn get(&mut self) -> Option<Option<(u8, i32)>> {
        self.promote();
        let best = (0..self.items.len())
            .filter(|&i| {
                self.items[i].ready_at.is_none() && !self.locked.contains(&self.items[i].key)
            })
            .min_by_key(|&i| (-self.items[i].priority, self.items[i].counter));
        match best {
            Some(i) => {
                let it = self.items.remove(i);
                self.locked.push(it.key);
                Some(Some((it.key, it.priority)))
            }
            None if self.shut => Some(None),
            None => None,
        }
    }

    fn len(&mut self) -> usize {
        self.promote();
        self.items.iter().filter(|it| it.ready_at.is_none()).count()
    }

    fn shut_down(&mut self) {
        self.shut = true;
        self.items.retain(|it| it.ready_at.is_none());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn priority_queue_matches_the_model(ops in proptest::collection::vec(op(), 1..150)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _guard = rt.enter();
        let clock = FakeClock::default();
        let q = PriorityQueue::<u8>::with_config(
            ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1)),
            QueueConfig { clock: Some(Arc::new(clock.clone())), ..QueueConfig::default() },
        );
        let mut model = Model::default();
        let mut held: Vec<u8> = Vec::new();
        for op in ops {
            match op {
                Op::Add { key, priority, after_ms } => {
                    q.add_with_opts([key], AddOpts {
                        after: Duration::from_millis(after_ms),
                        priority,
                        ..AddOpts::default()
                    });
                    model.add(key, priority, after_ms);
                }
                Op::Get => {
                    let got = q.try_get_with_priority();
                    prop_assert_eq!(got, model.get());
                    if let Some(Some((k, _))) = got {
                        prop_assert!(!held.contains(&k), "{} handed out twice", k);
                        held.push(k);
                    }
                }
                Op::Done(i) => {
                    if i < held.len() {
                        let k = held.remove(i);
                        q.done(&k);
                        model.locked.retain(|l| *l != k);
                    }
                }
                Op::Step(ms) => {
                    clock.step(Duration::from_millis(ms));
                    model.now += ms;
                }
                Op::ShutDown => {
                    q.shut_down();
                    model.shut_down();
                }
            }
            prop_assert_eq!(q.len(), model.len());
            prop_assert_eq!(q.processing_len(), model.locked.len());
            let held_set: HashSet<u8> = held.iter().copied().collect();
            prop_assert_eq!(held_set.len(), held.len());
        }
    }
}
