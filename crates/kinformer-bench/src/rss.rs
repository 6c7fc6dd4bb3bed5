//! Resident set size of the current process, from `/proc/self/status` (Linux).
//!
//! All figures are KiB. On other platforms every reading is 0 (the report shows "n/a").

/// Reads one `Vm*` field of `/proc/self/status` in KiB (0 when unavailable).
fn status_field(field: &str) -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim_start_matches(':').split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Current resident set size (`VmRSS`), KiB.
pub(crate) fn current_kib() -> u64 {
    status_field("VmRSS")
}

/// Peak resident set size since start or the last [`reset_peak`] (`VmHWM`), KiB.
pub(crate) fn peak_kib() -> u64 {
    status_field("VmHWM")
}

/// Resets the peak (`VmHWM`) to the current RSS by writing `5` to `/proc/self/clear_refs`.
/// Returns false when the kernel refused (the peak then stays the lifetime peak).
pub(crate) fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// What glibc's `malloc` holds, KiB (its `mallinfo2`): memory handed out to the program
/// (`uordblks` + `hblkhd`: live objects and their overhead) and free memory kept in its heaps
/// (`fordblks`, part of which may already be handed back to the OS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeapUse {
    /// Allocated and not yet freed, KiB.
    pub in_use_kib: u64,
    /// Free inside the heaps, KiB.
    pub free_kib: u64,
}

/// The allocator's own account (see [`HeapUse`]); `None` where the allocator is not glibc's.
/// It takes every heap's lock and walks its free lists: sample it every few seconds, not in a
/// loop.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // a foreign call with no arguments, for a measurement only
pub(crate) fn heap_use() -> Option<HeapUse> {
    // SAFETY: `mallinfo2` takes no pointers and only reads glibc's bookkeeping under its locks.
    let m = unsafe { libc::mallinfo2() };
    Some(HeapUse {
        in_use_kib: ((m.uordblks + m.hblkhd) / 1024) as u64,
        free_kib: (m.fordblks / 1024) as u64,
    })
}

/// The allocator's own account; `None` where the allocator is not glibc's.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn heap_use() -> Option<HeapUse> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_are_positive_and_peak_is_at_least_current() {
        let cur = current_kib();
        let peak = peak_kib();
        assert!(cur > 0, "VmRSS should be readable on Linux");
        assert!(peak >= cur, "peak {peak} < current {cur}");
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn the_heap_account_sees_a_live_allocation_and_its_free() {
        let before = heap_use().expect("glibc reports its heaps");
        // under the mmap threshold, so it comes from the heap, in this thread's arena
        let held: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 64 * 1024 - 64]).collect();
        let during = heap_use().expect("glibc reports its heaps");
        assert!(
            during.in_use_kib >= before.in_use_kib + 3 * 1024,
            "4 MiB held: {before:?} -> {during:?}"
        );
        drop(std::hint::black_box(held));
        let after = heap_use().expect("glibc reports its heaps");
        assert!(
            after.in_use_kib + 3 * 1024 <= during.in_use_kib,
            "4 MiB freed: {during:?} -> {after:?}"
        );
    }
}
