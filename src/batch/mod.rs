//! The offline side: everything `check` and `eval` do between reading a
//! JSON Lines file and handing printable results to `cmd`. The ordered
//! parallel fold over lines (`pipeline`), the report's aggregation and HTML
//! (`report`), and the grounding evaluation on labelled records (`eval`).
//!
//! Must not parse command lines, draw progress bars or print: that is the
//! thin shell in `crate::cmd`.

use std::io;
use std::path::PathBuf;

pub mod eval;
pub(crate) mod files;
pub mod input;
pub(crate) mod pipeline;
pub(crate) mod report;

/// Why `check` stopped before finishing.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("cannot create output directory {path}: {source}")]
    CreateDir { path: PathBuf, source: io::Error },
    #[error("--out {0} is a file, not a directory: the outputs are files written into a directory")]
    OutIsFile(PathBuf),
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("cannot render the report: {0}")]
    Report(String),
    #[error("audit signing key: {0}")]
    Key(#[from] crate::audit::keys::KeyError),
    #[error("--threads must be at least 1")]
    Threads,
    #[error(
        "{what} {path} is also {output} ({output_path}): refusing to overwrite it; nothing was written"
    )]
    Overwrite {
        what: String,
        path: PathBuf,
        output: String,
        output_path: PathBuf,
    },
    #[error("writing the outputs stopped")]
    Flush,
    #[error("{input}: {source}")]
    InInput { input: String, source: InputError },
    #[error("--report {0} is a directory: name the HTML file to write, e.g. {0}/report.html")]
    ReportIsDir(PathBuf),
    #[error(
        "--report {0} is {1}, not a regular file: the report is written beside it under a temporary name and renamed over it, which would put a file in its place; name the HTML file to write, e.g. report.html"
    )]
    ReportNotAFile(PathBuf, &'static str),
    #[error("standard input (`-`) is named more than once among the inputs")]
    StdinTwice,
    #[error(
        "{0} is named more than once among the inputs (by this or another path): each input is read once"
    )]
    InputTwice(PathBuf),
    #[error(
        "--compare-config {0} is the file --config names: every record would be judged twice under one configuration, and no outcome could change; give --compare-config the configuration in force (the baseline) and --config the one to try"
    )]
    CompareWithItself(PathBuf),
    /// The baseline's own problems, told apart from those of `--config`.
    #[error("--compare-config {path}: {source}")]
    Baseline {
        path: PathBuf,
        source: crate::config::ConfigError,
    },
    #[error("cannot draw the run id the audit seals name from the system's random source: {0}")]
    Random(String),
}

/// Why the input of `check` or `eval` could not be read: their
/// configuration, or the JSON Lines file.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("cannot open input {path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot read input at line {line}: {source}")]
    Read { line: u64, source: io::Error },
    #[error(
        "{path} is {format}, which groundgate does not read (it reads JSON Lines in UTF-8, plain, gzip- or zstd-compressed); convert it first: {command} {path} > FILE.jsonl",
        path = path.display()
    )]
    Packed {
        path: PathBuf,
        format: &'static str,
        command: &'static str,
    },
}

impl From<crate::config::ConfigError> for CheckError {
    fn from(e: crate::config::ConfigError) -> Self {
        CheckError::Input(InputError::Config(e))
    }
}
