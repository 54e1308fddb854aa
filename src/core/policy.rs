//! Policy checks (SPEC §3).
