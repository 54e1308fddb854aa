//! The shell's clock. The pure core never reads time; `check` and the worker
//! read it here, once per record, and pass it in. `check` also reads the
//! process's CPU time here, to report what a record costs.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Wall-clock time in epoch nanoseconds (0 if the clock is before 1970).
pub fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// CPU time this process has used so far, all threads together (user and
/// system).
pub fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}
