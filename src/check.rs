//! `groundgate check`: the offline batch runner. Reads JSON Lines, runs the
//! same [`crate::core::process()`] as the stream worker on every line, writes
//! the four output files and prints a summary.
//!
//! This is an I/O shell: it reads the clock (once per record) and the file
//! system, and must never make a verdict of its own. Memory stays bounded:
//! the input is streamed in batches of lines, each validated in parallel and
//! written in input order.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;

use crate::cli::{CheckArgs, FailOn};
use crate::config::{Config, RawConfig};
use crate::core::{DeadLetterKind, FindingKind, OutcomeKind, RecordMeta, Terminal, process};

/// Exit code for a completed run with no `--fail-on` outcome.
const EXIT_OK: u8 = 0;
/// Exit code when a `--fail-on` outcome occurred.
const EXIT_FAILED_ON: u8 = 1;
/// Exit code for usage, configuration or environment problems.
const EXIT_USAGE: u8 = 2;

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("cannot open input {path}: {source}")]
    OpenInput { path: PathBuf, source: io::Error },
    #[error("cannot read input at line {line}: {source}")]
    ReadInput { line: u64, source: io::Error },
    #[error("cannot create output directory {path}: {source}")]
    CreateDir { path: PathBuf, source: io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

/// Counts gathered over a run.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CheckSummary {
    pub records: u64,
    pub by_outcome: BTreeMap<&'static str, u64>,
    pub findings: BTreeMap<&'static str, u64>,
    pub dead_letters: BTreeMap<&'static str, u64>,
}

impl CheckSummary {
    pub fn count(&self, kind: OutcomeKind) -> u64 {
        self.by_outcome.get(kind.as_str()).copied().unwrap_or(0)
    }
}

pub fn main(args: CheckArgs) -> ExitCode {
    match run(&args) {
        Ok(summary) => {
            print_summary(&summary, &args.out);
            eprintln!("{}", config_note(args.config.as_deref()));
            let failed = args.fail_on.iter().any(|f| {
                let kind = match f {
                    FailOn::Rejected => OutcomeKind::Rejected,
                    FailOn::Retry => OutcomeKind::Retry,
                    FailOn::DeadLetter => OutcomeKind::DeadLetter,
                };
                summary.count(kind) > 0
            });
            ExitCode::from(if failed { EXIT_FAILED_ON } else { EXIT_OK })
        }
        Err(e) => {
            eprintln!("groundgate check: {e}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// The four output files, written in input order.
struct Outputs {
    dir: PathBuf,
    final_: BufWriter<File>,
    retry: BufWriter<File>,
    audit: BufWriter<File>,
    dead_letter: BufWriter<File>,
}

impl Outputs {
    fn create(dir: &Path) -> Result<Outputs, CheckError> {
        fs::create_dir_all(dir).map_err(|source| CheckError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        let open = |name: &str| -> Result<BufWriter<File>, CheckError> {
            let path = dir.join(name);
            File::create(&path)
                .map(|f| BufWriter::with_capacity(1 << 16, f))
                .map_err(|source| CheckError::Write { path, source })
        };
        Ok(Outputs {
            dir: dir.to_path_buf(),
            final_: open("final.jsonl")?,
            retry: open("retry.jsonl")?,
            audit: open("audit.jsonl")?,
            dead_letter: open("dead_letter.jsonl")?,
        })
    }

    fn line(&mut self, which: &str, bytes: &[u8]) -> Result<(), CheckError> {
        let w = match which {
            "final.jsonl" => &mut self.final_,
            "retry.jsonl" => &mut self.retry,
            "audit.jsonl" => &mut self.audit,
            _ => &mut self.dead_letter,
        };
        w.write_all(bytes)
            .and_then(|()| w.write_all(b"\n"))
            .map_err(|source| CheckError::Write {
                path: self.dir.join(which),
                source,
            })
    }

    fn finish(self) -> Result<(), CheckError> {
        let dir = self.dir;
        for (name, mut w) in [
            ("final.jsonl", self.final_),
            ("retry.jsonl", self.retry),
            ("audit.jsonl", self.audit),
            ("dead_letter.jsonl", self.dead_letter),
        ] {
            w.flush().map_err(|source| CheckError::Write {
                path: dir.join(name),
                source,
            })?;
        }
        Ok(())
    }
}

/// A dead-letter line of `dead_letter.jsonl`.
#[derive(Serialize)]
struct DeadLetterLine<'a> {
    /// 1-based line number, as editors and `sed -n Np` count.
    line: u64,
    kind: &'a str,
    detail: &'a str,
    raw: &'a str,
}

/// Runs the whole file; returns the counts. Public for tests and benches.
pub fn run(args: &CheckArgs) -> Result<CheckSummary, CheckError> {
    let config: Config =
        RawConfig::load_from_process(args.config.as_deref(), RawConfig::default())?;
    let (reader, topic): (Box<dyn BufRead>, String) = if args.input == "-" {
        (
            Box::new(BufReader::with_capacity(1 << 16, io::stdin().lock())),
            "stdin".into(),
        )
    } else {
        let path = PathBuf::from(&args.input);
        let f = File::open(&path).map_err(|source| CheckError::OpenInput {
            path: path.clone(),
            source,
        })?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| args.input.clone());
        (Box::new(BufReader::with_capacity(1 << 16, f)), name)
    };
    let mut out = Outputs::create(&args.out)?;
    let summary = run_lines(reader, &topic, &config, &mut out)?;
    out.finish()?;
    Ok(summary)
}

/// Lines validated together (in parallel); output order is input order.
const BATCH_LINES: usize = 1024;
/// A batch also ends once it holds this many bytes, so memory stays bounded
/// whatever the line sizes.
const BATCH_BYTES: usize = 16 << 20;

/// Reads up to one batch of lines, without their `\n` / `\r\n`. Lines are
/// split as bytes so an invalid UTF-8 line still reaches `process` (and
/// becomes an `invalid_utf8` dead letter) intact.
fn read_batch(
    reader: &mut dyn BufRead,
    first_line: u64,
    batch: &mut Vec<Vec<u8>>,
) -> Result<(), CheckError> {
    batch.clear();
    let mut bytes = 0;
    while batch.len() < BATCH_LINES && bytes < BATCH_BYTES {
        let mut line = Vec::new();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|source| CheckError::ReadInput {
                line: first_line + batch.len() as u64 + 1,
                source,
            })?;
        if n == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        }
        bytes += n;
        batch.push(line);
    }
    Ok(())
}

fn run_lines(
    mut reader: Box<dyn BufRead>,
    topic: &str,
    config: &Config,
    out: &mut Outputs,
) -> Result<CheckSummary, CheckError> {
    use rayon::prelude::*;
    let mut summary = CheckSummary::default();
    let mut batch = Vec::with_capacity(BATCH_LINES);
    let mut offset: u64 = 0;
    loop {
        read_batch(reader.as_mut(), offset, &mut batch)?;
        if batch.is_empty() {
            break;
        }
        let outcomes: Vec<_> = batch
            .par_iter()
            .enumerate()
            .map(|(i, line)| {
                let meta = RecordMeta {
                    topic,
                    partition: 0,
                    offset: (offset + i as u64) as i64,
                };
                process(Some(line), &meta, crate::clock::now_nanos(), &config.core)
            })
            .collect();
        for (line, outcome) in batch.iter().zip(outcomes) {
            summary.records += 1;
            *summary.by_outcome.entry(outcome.kind.as_str()).or_default() += 1;
            for f in &outcome.summary.findings {
                *summary.findings.entry(f.as_str()).or_default() += 1;
            }
            match &outcome.terminal {
                Terminal::Final(b) => out.line("final.jsonl", b)?,
                Terminal::Retry(b) => out.line("retry.jsonl", b)?,
                Terminal::DeadLetter(d) => {
                    *summary.dead_letters.entry(d.kind.as_str()).or_default() += 1;
                    let raw = String::from_utf8_lossy(line);
                    let dl = DeadLetterLine {
                        line: offset + 1,
                        kind: d.kind.as_str(),
                        detail: &d.detail,
                        raw: &raw,
                    };
                    out.line(
                        "dead_letter.jsonl",
                        &serde_json::to_vec(&dl).unwrap_or_default(),
                    )?;
                }
            }
            out.line("audit.jsonl", &outcome.audit)?;
            offset += 1;
        }
    }
    Ok(summary)
}

fn print_summary(s: &CheckSummary, out: &Path) {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["", "count"]);
    t.add_row(vec!["records".to_string(), s.records.to_string()]);
    for kind in OutcomeKind::ALL {
        t.add_row(vec![kind.as_str().to_string(), s.count(kind).to_string()]);
    }
    for kind in FindingKind::ALL {
        let n = s.findings.get(kind.as_str()).copied().unwrap_or(0);
        t.add_row(vec![format!("finding: {kind}"), n.to_string()]);
    }
    for kind in DeadLetterKind::ALL {
        let n = s.dead_letters.get(kind.as_str()).copied().unwrap_or(0);
        t.add_row(vec![format!("dead letter: {kind}"), n.to_string()]);
    }
    println!("{t}");
    println!(
        "outputs: {0}/final.jsonl {0}/retry.jsonl {0}/audit.jsonl {0}/dead_letter.jsonl",
        out.display()
    );
}

/// Which configuration made the verdicts: `demo` runs with its own
/// (examples/demo.toml), so the same file gives different counts there.
fn config_note(config: Option<&Path>) -> String {
    match config {
        Some(p) => format!("configuration: {}", p.display()),
        None => "configuration: built-in defaults (no --config); `groundgate demo` uses examples/demo.toml, pass --config examples/demo.toml for the same verdicts".to_string(),
    }
}
