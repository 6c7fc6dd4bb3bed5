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
}
