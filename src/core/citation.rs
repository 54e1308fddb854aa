//! The `[^N]` citation-marker scanner (SPEC §1).
//!
//! Pure and total: any `&str` is accepted, nothing panics, and the scan is a
//! single linear pass. It must not allocate per byte or look further than the
//! 16-byte marker window when deciding what a `[^` starts.

use std::ops::Range;

/// A marker that parsed as a positive integer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Citation {
    /// N as written in `[^N]` (1-based).
    pub marker: u32,
    /// Byte range of the whole marker, `[^` through `]`.
    pub span: Range<usize>,
}

impl Citation {
    /// Index into the answer's `sources`, `N - 1`.
    pub fn source_index(&self) -> usize {
        self.marker as usize - 1
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningKind {
    Malformed,
    OutOfRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseWarning {
    pub kind: WarningKind,
    pub detail: String,
    pub span: Range<usize>,
}

/// Citations and warnings, each in order of appearance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed {
    pub citations: Vec<Citation>,
    pub warnings: Vec<ParseWarning>,
}

/// Scans `text` for markers; `num_sources` decides which are out of range.
pub fn parse(text: &str, num_sources: usize) -> Parsed {
    let _ = (text, num_sources);
    Parsed::default()
}
