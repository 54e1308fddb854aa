//! `groundgate check`: the offline batch runner. Reads JSON Lines, runs the
//! same [`crate::core::process()`] as the stream worker on every line, writes
//! the four output files and prints a summary.
//!
//! This is an I/O shell: it reads the clock (once per record) and the file
//! system, and must never make a verdict of its own. Memory stays bounded:
//! the input is streamed in batches of lines, each validated in parallel and
//! written in input order, and a line longer than `max_record_bytes` is never
//! held: it is hashed as it streams past and dead-lettered as `too_large`.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;

use crate::cli::{CheckArgs, FailOn};
use crate::config::{Config, RawConfig};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use sha2::{Digest, Sha256};

use crate::core::process::{PREVIEW_BYTES, too_large_summary};
use crate::core::{
    DeadLetter, DeadLetterKind, DeadLetterValue, FindingKind, OutcomeKind, RecordMeta, Terminal,
    process,
};

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
            let mut code = EXIT_OK;
            // The outputs are complete by now; a closed or full stdout only
            // loses the summary table, which is said on stderr, not panicked.
            if let Err(e) = print_summary(&summary, &args.out) {
                if e.kind() == io::ErrorKind::BrokenPipe {
                    eprintln!(
                        "groundgate check: standard output was closed early (broken pipe); the outputs in {} are complete",
                        args.out.display()
                    );
                } else {
                    eprintln!(
                        "groundgate check: cannot write the summary to standard output: {e}; the outputs in {} are complete",
                        args.out.display()
                    );
                    code = EXIT_USAGE;
                }
            }
            for f in &args.fail_on {
                let kind = match f {
                    FailOn::Rejected => OutcomeKind::Rejected,
                    FailOn::Retry => OutcomeKind::Retry,
                    FailOn::DeadLetter => OutcomeKind::DeadLetter,
                };
                let n = summary.count(kind);
                if n > 0 {
                    eprintln!(
                        "groundgate check: exit code 1 because of --fail-on {kind}: {n} record{} had outcome {kind}",
                        if n == 1 { "" } else { "s" }
                    );
                    if code == EXIT_OK {
                        code = EXIT_FAILED_ON;
                    }
                }
            }
            ExitCode::from(code)
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

/// A dead-letter line of `dead_letter.jsonl`: canonical like every other
/// output (keys in alphabetical order, compact). The record's bytes are kept
/// exactly: `raw` when they are UTF-8, `raw_base64` when not; a `too_large`
/// line carries `length`, `preview` and `sha256` instead.
#[derive(Serialize)]
struct DeadLetterLine<'a> {
    detail: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    length: Option<u64>,
    /// 1-based line number, as editors and `sed -n Np` count; the audit
    /// row's `input.offset` is the same number.
    line: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    preview: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<&'a str>,
}

/// The fields of the core's bounded dead-letter value that a line repeats.
#[derive(serde::Deserialize)]
struct Bounded {
    length: u64,
    preview: String,
    sha256: String,
}

fn dead_letter_line(line_no: u64, input: &Line, d: &DeadLetter) -> Vec<u8> {
    let mut dl = DeadLetterLine {
        detail: &d.detail,
        kind: d.kind.as_str(),
        length: None,
        line: line_no,
        preview: None,
        raw: None,
        raw_base64: None,
        sha256: None,
    };
    let bounded;
    match (&d.value, input) {
        (DeadLetterValue::Original, Line::Record(bytes)) => match std::str::from_utf8(bytes) {
            Ok(text) => dl.raw = Some(text),
            Err(_) => dl.raw_base64 = Some(BASE64.encode(bytes)),
        },
        (DeadLetterValue::Bounded(b), _) => {
            // Built by the core from a struct with exactly these fields.
            bounded = serde_json::from_slice::<Bounded>(b).ok();
            if let Some(b) = &bounded {
                dl.length = Some(b.length);
                dl.preview = Some(&b.preview);
                dl.sha256 = Some(&b.sha256);
            }
        }
        // A streamed line always gets a bounded value.
        (DeadLetterValue::Original, Line::TooLarge { .. }) => {}
    }
    serde_json::to_vec(&dl).unwrap_or_default()
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

/// One input line, without its `\n` / `\r\n`.
enum Line {
    /// At most `max_record_bytes` (+1 for a `\r`): handed to `process`.
    Record(Vec<u8>),
    /// Longer: streamed past without being held, known by its length,
    /// SHA-256 and first bytes (all without the line ending).
    TooLarge {
        length: u64,
        sha256: String,
        preview: Vec<u8>,
    },
}

impl Line {
    fn held_bytes(&self) -> usize {
        match self {
            Line::Record(b) => b.len(),
            Line::TooLarge { preview, .. } => preview.len(),
        }
    }
}

/// Reads one line, holding at most `max + 1` bytes of it whatever its
/// length. Lines are split as bytes so an invalid UTF-8 line still reaches
/// `process` (and becomes an `invalid_utf8` dead letter) intact.
fn read_line(reader: &mut dyn BufRead, max: usize) -> io::Result<Option<Line>> {
    let mut buf = Vec::new();
    // Once the line outgrows `max`: its running hash, and whether a `\r` is
    // held back until we know if it ends the line.
    let mut stream: Option<(Sha256, bool)> = None;
    let mut preview = Vec::new();
    let mut length: u64 = 0;
    let mut any = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (part, used, eol) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        if stream.is_none() && buf.len() + part.len() > max + 1 {
            preview = buf[..buf.len().min(PREVIEW_BYTES)].to_vec();
            let room = PREVIEW_BYTES - preview.len();
            preview.extend_from_slice(&part[..part.len().min(room)]);
            let mut h = Sha256::new();
            h.update(&buf);
            stream = Some((h, false));
            buf = Vec::new();
        }
        match stream.as_mut() {
            Some((h, pending_cr)) => {
                if *pending_cr && !part.is_empty() {
                    h.update(b"\r");
                    *pending_cr = false;
                }
                let body = match part.last() {
                    Some(b'\r') => {
                        *pending_cr = true;
                        &part[..part.len() - 1]
                    }
                    _ => part,
                };
                h.update(body);
            }
            None => buf.extend_from_slice(part),
        }
        length += part.len() as u64;
        reader.consume(used);
        if eol {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    Ok(Some(match stream {
        Some((h, pending_cr)) => Line::TooLarge {
            length: length - u64::from(pending_cr),
            sha256: hex::encode(h.finalize()),
            preview,
        },
        None => {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            Line::Record(buf)
        }
    }))
}

/// Reads up to one batch of lines.
fn read_batch(
    reader: &mut dyn BufRead,
    first_line: u64,
    max_record_bytes: usize,
    batch: &mut Vec<Line>,
) -> Result<(), CheckError> {
    batch.clear();
    let mut bytes = 0;
    while batch.len() < BATCH_LINES && bytes < BATCH_BYTES {
        let line = read_line(reader, max_record_bytes).map_err(|source| CheckError::ReadInput {
            line: first_line + batch.len() as u64 + 1,
            source,
        })?;
        let Some(line) = line else {
            break;
        };
        bytes += line.held_bytes() + 1;
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
    // Lines read so far; a line's number (1-based) is also its audit
    // `input.offset`, so both files name a record the same way.
    let mut offset: u64 = 0;
    loop {
        read_batch(
            reader.as_mut(),
            offset,
            config.core.max_record_bytes,
            &mut batch,
        )?;
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
                    offset: (offset + i as u64 + 1) as i64,
                };
                let now = crate::clock::now_nanos();
                match line {
                    Line::Record(bytes) => process(Some(bytes), &meta, now, &config.core),
                    Line::TooLarge {
                        length,
                        sha256,
                        preview,
                    } => too_large_summary(*length, sha256, preview, &meta, now, &config.core),
                }
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
                    out.line("dead_letter.jsonl", &dead_letter_line(offset + 1, line, d))?;
                }
            }
            out.line("audit.jsonl", &outcome.audit)?;
            offset += 1;
        }
    }
    Ok(summary)
}

fn print_summary(s: &CheckSummary, out: &Path) -> io::Result<()> {
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
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{t}")?;
    writeln!(
        stdout,
        "outputs: {0}/final.jsonl {0}/retry.jsonl {0}/audit.jsonl {0}/dead_letter.jsonl",
        out.display()
    )?;
    stdout.flush()
}
