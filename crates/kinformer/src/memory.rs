//! Giving memory the process freed back to the operating system, and growing the heap in
//! fewer steps while a list is decoded.
//!
//! Go's runtime returns freed heap to the OS on its own (its scavenger; `debug.FreeOSMemory`
//! does it at once). glibc's `malloc`, which a Rust program on Linux uses unless it picks
//! another allocator, keeps freed memory in its heaps: after an informer lists 10,000 pods,
//! the transient memory of the download (bodies, decoding buffers, objects a relist
//! replaced) stays resident between the live objects that pin its pages, and the process's
//! RSS stays near the list's peak. [`release_free_memory`] asks glibc to hand every free page
//! back (`malloc_trim(0)`); the live objects are untouched.
//!
//! Every informer calls it on its own after it installs a list (the initial one and every
//! relist), unless its [`InformerConfig::release_memory`](crate::InformerConfig::release_memory)
//! is off: half a second after the list, once a lean cache (see
//! [`CacheMode::Lean`](crate::store::CacheMode)) has forgotten the decoded objects the
//! handlers are done with, on a blocking thread, one release at a time for the whole
//! process. Under that same option it also releases while watch events flow, every 30 s for
//! the whole process, or sooner after 1,000 events (`release_while_events_flow`): replaced
//! objects are freed
//! into whichever glibc heap they came from, and without it the heaps' free memory grows
//! under steady churn. A program on another allocator loses nothing: the call finds nothing
//! to do.
//!
//! The other way glibc's `malloc` shows in an informer is the time to sync: a thread's heap
//! grows one `mprotect` call at a time, by exactly the pages the request in hand needs. The
//! list and watch decoders ask for room ahead of each object they decode (`grow_heap_ahead`),
//! so the heap grows in steps of up to 60 KiB instead: the initial list, every relist, and
//! a streaming list's initial events alike.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long after a list an informer first tidies up (handlers are usually done with the
/// listed objects by then).
pub(crate) const AFTER_LIST_WAIT: Duration = Duration::from_millis(500);
/// The longest wait between two tidying attempts; the attempts stop after it.
const AFTER_LIST_MAX_WAIT: Duration = Duration::from_secs(64);
/// Decoded objects someone may still hold after a list without it being worth waiting for
/// them (a reconciler's few).
const SETTLED_HELD: usize = 64;

/// Returns the free pages of the process's heaps to the operating system (glibc's
/// `malloc_trim(0)`). Returns whether anything was released; always `false` where the
/// allocator is not glibc's (other allocators, such as jemalloc and mimalloc, return memory
/// on their own).
///
/// It walks every heap, holding each one's lock while it does, so it costs time in
/// proportion to the heap (a few milliseconds for hundreds of MiB): call it after large
/// transient work, not in a loop.
pub fn release_free_memory() -> bool {
    imp::release()
}

/// How far ahead of a decoded object the heap is grown (see [`grow_heap_ahead`]): under
/// glibc's default mmap threshold (128 KiB), above which a request would be mapped on its
/// own instead of coming from the heap, and under its fastbin-consolidation threshold
/// (64 KiB), from which freeing a chunk sets off other work.
const GROW_AHEAD: usize = 60 * 1024;

/// Makes sure the calling thread's heap has room for the next object before it is decoded,
/// by asking for [`GROW_AHEAD`] bytes and freeing them at once.
///
/// glibc gives each thread that allocates a heap of its own (an arena) and grows it by
/// exactly the pages the request in hand needs, with one `mprotect` call each time: decoding
/// 10,000 pods (about 400 MiB) on tokio's blocking pool made about 90,000 `mprotect` calls,
/// each taking the memory-map lock that page faults on the other core take too. A 60 KiB
/// request the heap cannot serve grows it by up to 60 KiB in one call; freed at once, it
/// merges back into the heap's free top, and the object's small allocations are carved from
/// it. Decoding pods on a fresh thread went from 60 to 51 µs a pod (116,000 `mprotect` calls
/// to about 10,000 for 10,000 pods), and an informer's initial sync of 10,000 pods from a
/// real kube-apiserver from 510 to 418 ms (medians of 8 runs). On a heap that already has
/// room, and on other allocators, it costs one allocation and one free: about 30 ns on a
/// warm glibc heap, against the 30 µs a pod takes to decode.
pub(crate) fn grow_heap_ahead() {
    let room = Vec::<u8>::with_capacity(GROW_AHEAD);
    // keeps the optimizer from leaving the allocation out
    std::hint::black_box(&room);
}

/// Whether a release is running on a blocking thread (one at a time per process).
static RELEASING: AtomicBool = AtomicBool::new(false);

/// [`release_free_memory`] on tokio's blocking pool, unless one is already running.
pub(crate) async fn release_free_memory_in_background() {
    if RELEASING.swap(true, Ordering::AcqRel) {
        return;
    }
    // a panicked release has nothing to report: the next list releases again
    let _ = tokio::task::spawn_blocking(release_free_memory).await;
    RELEASING.store(false, Ordering::Release);
}

/// The shortest time between two releases while watch events flow (see
/// [`release_while_events_flow`]).
pub(crate) const WHILE_EVENTS_FLOW_EVERY: Duration = Duration::from_secs(30);

/// Watch events applied (by every informer of the process) after which a release while events
/// flow is due before [`WHILE_EVENTS_FLOW_EVERY`] has passed: a backlog after a reconnect, or
/// heavy churn, frees the objects it replaces in bulk.
pub(crate) const WHILE_EVENTS_FLOW_AFTER: usize = 1_000;

/// The shortest time between two releases while events flow, however many events come.
pub(crate) const WHILE_EVENTS_FLOW_MIN_GAP: Duration = Duration::from_secs(1);

/// When the next release while watch events flow is due: [`WHILE_EVENTS_FLOW_EVERY`] after the
/// process's last release of this kind, or once [`WHILE_EVENTS_FLOW_AFTER`] events were applied
/// since it (but not within [`WHILE_EVENTS_FLOW_MIN_GAP`] of it). Counted from the first event
/// after the last release (an idle process releases nothing).
pub(crate) struct EventsFlowing {
    /// When the count began, and the events applied since.
    last: parking_lot::Mutex<Option<(tokio::time::Instant, usize)>>,
}

impl EventsFlowing {
    pub(crate) const fn new() -> Self {
        Self {
            last: parking_lot::const_mutex(None),
        }
    }

    /// Called when `events` events were applied at `now`: whether a release is due (and, if
    /// so, the next one is counted from `now`). The first call only starts the count.
    pub(crate) fn due(&self, now: tokio::time::Instant, events: usize) -> bool {
        let mut last = self.last.lock();
        let Some((at, applied)) = &mut *last else {
            *last = Some((now, events));
            return false;
        };
        *applied = applied.saturating_add(events);
        let since = now.saturating_duration_since(*at);
        let due = since >= WHILE_EVENTS_FLOW_EVERY
            || (*applied >= WHILE_EVENTS_FLOW_AFTER && since >= WHILE_EVENTS_FLOW_MIN_GAP);
        if due {
            *last = Some((now, 0));
        }
        due
    }
}

/// The process's count for [`release_while_events_flow`]: one for every informer, so a
/// factory of many informers releases once per interval, not once per informer.
static EVENTS_FLOWING: EventsFlowing = EventsFlowing::new();

/// What an informer does after it applied `events` watch events to its cache (when its
/// [`InformerConfig::release_memory`](crate::InformerConfig::release_memory) is on): when a
/// release is due for the whole process (see [`EventsFlowing`]: every
/// [`WHILE_EVENTS_FLOW_EVERY`], or after [`WHILE_EVENTS_FLOW_AFTER`] events),
/// [`release_free_memory`] on a blocking thread, [`AFTER_LIST_WAIT`] later (so handlers are
/// done with the objects the events replaced). Returns whether a release was scheduled. Needs
/// a tokio runtime; without one, nothing happens.
///
/// Why: glibc gives every thread that allocates a heap of its own (an arena, up to 8 per
/// core). The objects the cache keeps come from several of them (the reading task's worker
/// threads, and tokio's blocking pool where bursts of events decode), and an object a later
/// event replaces is freed into the heap it came from, which keeps the memory as its own free
/// memory. Under steady churn the sum of the heaps' high-water marks keeps rising: on the real
/// tier's soak (10,000 pods, 80 writes a second, a fault every 30 s) the RSS rose by 27 MiB a
/// minute for ten minutes while the cache held the same 10,000 pods. Giving the free pages
/// back while events flow keeps the RSS near what is live.
pub(crate) fn release_while_events_flow(events: usize) -> bool {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return false;
    };
    if !EVENTS_FLOWING.due(tokio::time::Instant::now(), events) {
        return false;
    }
    runtime.spawn(async {
        tokio::time::sleep(AFTER_LIST_WAIT).await;
        release_free_memory_in_background().await;
    });
    true
}

/// What an informer does after it installs a list: waits [`AFTER_LIST_WAIT`], has `prune`
/// forget the decoded objects nobody holds (it returns how many are still held), waits twice
/// as long and prunes again while more than a few are held (a slow handler), up to a minute,
/// then runs `release` (the informer's: [`release_free_memory_in_background`], unless its
/// configuration turned that off). Returns how many prunes it took.
pub(crate) async fn tidy_after_list(
    mut prune: impl FnMut() -> usize,
    release: Option<impl std::future::Future<Output = ()>>,
) -> u32 {
    let mut wait = AFTER_LIST_WAIT;
    let mut prunes = 0;
    loop {
        tokio::time::sleep(wait).await;
        prunes += 1;
        let held = prune();
        if held <= SETTLED_HELD || wait >= AFTER_LIST_MAX_WAIT {
            break;
        }
        wait *= 2;
    }
    if let Some(release) = release {
        release.await;
    }
    prunes
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    // The library's one `unsafe`: a foreign call with no arguments to get wrong.
    #[allow(unsafe_code)]
    pub(super) fn release() -> bool {
        // SAFETY: `malloc_trim` takes a byte count and touches only the allocator's own free
        // lists, under the allocator's locks; it is safe to call from any thread at any time.
        unsafe { libc::malloc_trim(0) == 1 }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    pub(super) fn release() -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn tidying_waits_for_held_objects_then_gives_up() {
        let released = std::sync::atomic::AtomicU32::new(0);
        let release = || async {
            released.fetch_add(1, Ordering::Relaxed);
        };
        let start = tokio::time::Instant::now();
        // everything released at the first prune
        assert_eq!(tidy_after_list(|| 0, Some(release())).await, 1);
        assert_eq!(start.elapsed(), AFTER_LIST_WAIT);
        assert_eq!(
            released.load(Ordering::Relaxed),
            1,
            "then memory goes back to the OS"
        );
        // held for a while: 0.5 s, then 1 s, then 2 s
        let mut held = [10_000, 5_000, 3].into_iter();
        let start = tokio::time::Instant::now();
        let off: Option<std::future::Ready<()>> = None;
        assert_eq!(tidy_after_list(|| held.next().unwrap(), off).await, 3);
        assert_eq!(start.elapsed(), Duration::from_millis(500 + 1000 + 2000));
        assert_eq!(
            released.load(Ordering::Relaxed),
            1,
            "release_memory off: nothing released"
        );
        // held for good: it stops after the longest wait
        let start = tokio::time::Instant::now();
        assert_eq!(tidy_after_list(|| 10_000, Some(release())).await, 8);
        assert_eq!(released.load(Ordering::Relaxed), 2);
        assert_eq!(start.elapsed(), Duration::from_millis(127_500));
    }

    #[tokio::test(start_paused = true)]
    async fn while_events_flow_a_release_is_due_once_per_interval() {
        let flowing = EventsFlowing::new();
        let start = tokio::time::Instant::now();
        assert!(
            !flowing.due(start, 1),
            "the first events only start the count"
        );
        assert!(!flowing.due(start + Duration::from_secs(29), 1));
        let first = start + WHILE_EVENTS_FLOW_EVERY;
        assert!(flowing.due(first, 1), "due once the interval has passed");
        assert!(
            !flowing.due(first + Duration::from_secs(1), 1),
            "counted again from the release"
        );
        // events stop for ten minutes, then come back: due at the first of them
        let later = first + Duration::from_secs(600);
        assert!(flowing.due(later, 1));
        assert!(!flowing.due(later + Duration::from_secs(29), 1));
        assert!(flowing.due(later + WHILE_EVENTS_FLOW_EVERY, 1));
    }

    #[test]
    fn many_events_make_a_release_due_early_but_not_twice_a_second() {
        let flowing = EventsFlowing::new();
        let start = tokio::time::Instant::now();
        assert!(!flowing.due(start, 1));
        let burst = WHILE_EVENTS_FLOW_AFTER;
        assert!(
            !flowing.due(start + Duration::from_millis(500), burst),
            "within the shortest gap: not yet"
        );
        let at = start + WHILE_EVENTS_FLOW_MIN_GAP;
        assert!(flowing.due(at, 1), "a backlog's worth of events: due");
        let next = at + Duration::from_secs(2);
        assert!(
            !flowing.due(next, burst - 1),
            "the count starts again from the release"
        );
        assert!(flowing.due(next, 1));
        // a steady trickle is still released every interval
        let mut t = next;
        for _ in 0..29 {
            t += Duration::from_secs(1);
            assert!(!flowing.due(t, 10));
        }
        assert!(flowing.due(next + WHILE_EVENTS_FLOW_EVERY, 10));
    }

    #[tokio::test(start_paused = true)]
    async fn releasing_while_events_flow_is_throttled_for_the_process() {
        // the process-wide count: at most one release per interval, whoever calls
        let started = (0..1000).filter(|_| release_while_events_flow(1)).count();
        assert!(started <= 1, "{started} releases started at once");
        tokio::time::advance(WHILE_EVENTS_FLOW_EVERY).await;
        let started = (0..1000).filter(|_| release_while_events_flow(1)).count();
        assert!(started <= 1, "{started} releases started at once");
    }

    #[test]
    fn without_a_runtime_nothing_is_released_while_events_flow() {
        assert!(!release_while_events_flow(1));
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn freed_memory_goes_back_to_the_os() {
        fn rss_kib() -> u64 {
            std::fs::read_to_string("/proc/self/status")
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("VmRSS:"))
                        .and_then(|v| v.split_whitespace().next()?.parse().ok())
                })
                .unwrap_or(0)
        }
        // Many small blocks (below the mmap threshold, so they live in the heap), every
        // other one kept: the freed ones cannot be trimmed from the top of the heap.
        let mut blocks: Vec<Vec<u8>> = (0..200_000).map(|i| vec![i as u8; 1000]).collect();
        let kept: Vec<Vec<u8>> = blocks.iter_mut().step_by(64).map(std::mem::take).collect();
        drop(blocks);
        let before = rss_kib();
        assert!(release_free_memory(), "glibc had free pages to release");
        let after = rss_kib();
        assert!(
            after + 50_000 < before,
            "RSS {before} KiB -> {after} KiB: ~190 MB freed should have left"
        );
        assert_eq!(kept.len(), 3125);
        assert!(kept.iter().all(|b| b.len() == 1000));
    }
}
