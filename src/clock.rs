//! The shell's clock. The pure core never reads time; `check` and the worker
//! read it here, once per record, and pass it in.

use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock time in epoch nanoseconds (0 if the clock is before 1970).
pub fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
