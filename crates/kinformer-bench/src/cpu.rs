//! CPU time the current process has used (user and system, every thread), from `getrusage`:
//! what a sync cost in CPU, beside the wall-clock time it took.

/// User plus system CPU time of the whole process so far, milliseconds (`None` where
/// `getrusage` is not available or fails).
#[cfg(unix)]
#[allow(unsafe_code)] // a foreign call filling a struct we own, for a measurement only
pub(crate) fn process_ms() -> Option<f64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` writes one `rusage` into the pointer it is given, which points at
    // memory of that type and size that we own.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: `getrusage` succeeded, so it filled the struct (and it was zeroed before).
    let usage = unsafe { usage.assume_init() };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    Some(ms(usage.ru_utime) + ms(usage.ru_stime))
}

/// CPU time of the process; unknown off Unix.
#[cfg(not(unix))]
pub(crate) fn process_ms() -> Option<f64> {
    None
}

/// CPU milliseconds used since `start` (a [`process_ms`] reading), if both are known.
pub(crate) fn since(start: Option<f64>) -> Option<f64> {
    Some(process_ms()? - start?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_work_shows_as_cpu_time() {
        let start = process_ms().expect("getrusage on Linux");
        let t = std::time::Instant::now();
        let mut x = 0u64;
        // Spin until the process has been charged 10 ms, which on any machine happens long
        // before the minute runs out, unless busy work is not counted.
        while since(Some(start)).unwrap() < 10.0 {
            assert!(
                t.elapsed().as_secs() < 60,
                "a minute of spinning was not counted"
            );
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        assert!(process_ms().unwrap() >= start + 10.0);
    }
}
