//! Property tests of the work queue: under random add/get/done/shut-down sequences with several
//! workers, no key is ever processed by two workers at once, and no accepted add is lost (every
//! accepted add of a key is followed by a hand-out of that key).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kinformer::workqueue::Queue;
use parking_lot::Mutex;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    Get(usize),
    Done(usize),
    ShutDown,
}

fn op(workers: usize, keys: u8) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..keys).prop_map(Op::Add),
        4 => (0..workers).prop_map(Op::Get),
        4 => (0..workers).prop_map(Op::Done),
        1 => Just(Op::ShutDown),
    ]
}

/// Checks the hand-outs of a run: `events` is the log of (time, key, accepted add | hand-out).
fn no_add_lost(adds: &HashMap<u8, u64>, last_get: &HashMap<u8, u64>) -> Result<(), String> {
    for (k, t_add) in adds {
        match last_get.get(k) {
            Some(t_get) if t_get > t_add => {}
            other => {
                return Err(format!(
                    "key {k} added at {t_add}, last handed out at {other:?}"
                ));
            }
        }
    }
    Ok(())
}

proptest! {
    /// Sequential model: workers are slots that hold at most one key.
    #[test]
    fn sequential_ops_never_double_process_or_lose(
        ops in proptest::collection::vec(op(4, 6), 1..200)
    ) {
        let q: Queue<u8> = Queue::new();
        let mut held: Vec<Option<u8>> = vec![None; 4];
        let mut last_add: HashMap<u8, u64> = HashMap::new();
        let mut last_get: HashMap<u8, u64> = HashMap::new();
        let mut shut = false;
        let mut clock = 0u64;
        let mut hand_out = |k: u8, w: usize, held: &mut Vec<Option<u8>>, clock: u64| {
            prop_assert!(
                !held.contains(&Some(k)),
                "key {} handed to worker {} while another holds it", k, w
            );
            held[w] = Some(k);
            last_get.insert(k, clock);
            Ok(())
        };
        for op in ops {
            clock += 1;
            match op {
                Op::Add(k) => {
                    q.add(k);
                    if !shut {
                        last_add.insert(k, clock);
                    }
                }
                Op::Get(w) => {
                    if held[w].is_none() {
                        match q.try_get() {
                            Some(Some(k)) => hand_out(k, w, &mut held, clock)?,
                            Some(None) => prop_assert!(shut, "shutdown reported before shut_down"),
                            None => prop_assert!(q.is_empty()),
                        }
                    }
                }
                Op::Done(w) => {
                    if let Some(k) = held[w].take() {
                        q.done(&k);
                    }
                }
                Op::ShutDown => {
                    q.shut_down();
                    shut = true;
                }
            }
        }
        // Drain: every worker finishes, then worker 0 takes what is left.
        for slot in held.iter_mut() {
            if let Some(k) = slot.take() {
                q.done(&k);
            }
        }
        loop {
            clock += 1;
            match q.try_get() {
                Some(Some(k)) => {
                    hand_out(k, 0, &mut held, clock)?;
                    held[0] = None;
                    q.done(&k);
                }
                _ => break,
            }
        }
        prop_assert_eq!(q.len(), 0);
        prop_assert_eq!(q.processing_len(), 0);
        no_add_lost(&last_add, &last_get).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Concurrent: real worker tasks on a multi-threaded runtime, producers adding random keys,
    /// then shutdown. A shared in-flight set catches any double hand-out.
    #[test]
    fn concurrent_workers_never_double_process_or_lose(
        batches in proptest::collection::vec(proptest::collection::vec(0u8..8, 1..40), 1..6),
        workers in 1usize..6,
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let result: Result<(), String> = rt.block_on(async move {
            let q: Queue<u8> = Queue::new();
            let in_flight = Arc::new(Mutex::new(HashSet::new()));
            let clock = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let last_get = Arc::new(Mutex::new(HashMap::<u8, u64>::new()));
            let violations = Arc::new(Mutex::new(Vec::new()));
            let mut tasks = Vec::new();
            for _ in 0..workers {
                let (q, in_flight, clock, last_get, violations) =
                    (q.clone(), in_flight.clone(), clock.clone(), last_get.clone(), violations.clone());
                tasks.push(tokio::spawn(async move {
                    while let Some(k) = q.get().await {
                        let t = clock.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        if !in_flight.lock().insert(k) {
                            violations.lock().push(format!("key {k} processed twice at once"));
                        }
                        last_get.lock().insert(k, t);
                        tokio::task::yield_now().await;
                        in_flight.lock().remove(&k);
                        q.done(&k);
                    }
                }));
            }
            let mut last_add = HashMap::new();
            for batch in batches {
                for k in batch {
                    let t = clock.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    q.add(k);
                    last_add.insert(k, t);
                }
                tokio::task::yield_now().await;
            }
            q.shut_down();
            for t in tasks {
                t.await.map_err(|e| e.to_string())?;
            }
            if let Some(v) = violations.lock().first() {
                return Err(v.clone());
            }
            let last_get = last_get.lock().clone();
            no_add_lost(&last_add, &last_get)?;
            if !q.is_empty() || q.processing_len() != 0 {
                return Err(format!("left over: {} queued, {} processing", q.len(), q.processing_len()));
            }
            Ok(())
        });
        result.map_err(TestCaseError::fail)?;
    }
}
