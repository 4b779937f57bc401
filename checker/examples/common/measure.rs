//! What the benchmark examples measure besides wall time: CPU time of
//! the (single-threaded) check and peak resident memory, from /proc.

/// CPU seconds used so far by this thread (from /proc/thread-self/schedstat,
/// nanosecond resolution; the analysis is single-threaded).
pub fn cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .next()
                .and_then(|x| x.parse::<f64>().ok())
        })
        .unwrap_or(0.0)
        / 1e9
}

/// Peak resident set so far, in MB.
pub fn peak_mb() -> f64 {
    status_mb("VmHWM:")
}

/// Resident set now, in MB.
#[allow(dead_code)] // only some of the examples that include this file use it
pub fn rss_mb() -> f64 {
    status_mb("VmRSS:")
}

/// A kB field of /proc/self/status (`VmHWM:`, `VmRSS:`), in MB.
fn status_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|x| x.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}
