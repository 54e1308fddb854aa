//! The offline side: everything `check` and `eval` do between reading a
//! JSON Lines file and handing printable results to `cmd`. The ordered
//! parallel fold over lines (`pipeline`), the report's aggregation and HTML
//! (`report`), and the grounding evaluation on labelled records (`eval`).
//!
//! Must not parse command lines, draw progress bars or print: that is the
//! thin shell in `crate::cmd`.

pub mod eval;
pub(crate) mod pipeline;
pub(crate) mod report;
