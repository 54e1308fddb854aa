//! Strict/lenient decision (SPEC §2). Filled in below.
