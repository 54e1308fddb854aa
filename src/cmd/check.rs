//! `groundgate check`: the offline batch runner. Reads JSON Lines, runs the
//! same [`crate::core::process()`] as the stream worker on every line, writes
//! the four output files, a sealed audit trail, `summary.json` and, on
//! request, an HTML report, then prints a summary.
//!
//! This is an I/O shell: it reads the clock (once per record) and the file
//! system, and must never make a verdict of its own. The work is spread by
//! `crate::batch::pipeline`: lines are validated on `--threads` workers and
//! written in input order; memory is bounded whatever the file or line size
//! (a line over `max_record_bytes` is streamed through SHA-256, never held
//! whole).
//!
//! Several inputs are read one after another into one set of outputs, each
//! input its own audit chain. Every seal names the run (an id drawn at
//! random when it starts), and each chain's final seal states how many
//! chains the run sealed, so the final seals are written once every input
//! is read. Numbering: a record's `input.offset` in the
//! audit row and its `line` in `dead_letter.jsonl` are the same number, the
//! 1-based line number in its input (as editors and `sed -n Np` count);
//! `input.topic` and the dead letter's `input` name the input.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use crate::audit::seal::{CHECK_WORKER, row_hash};
use crate::audit::{ChainHead, ChainId, Sealer};
use crate::batch::files::{
    Layout, Outputs, Piece, SUMMARY, Staged, file_name, partial, refuse_overwrites, write_file,
};
use crate::batch::pipeline::{self, Fold, Line, Progress, Shape};
use crate::batch::report::{Aggregator, Comparison, ReportData, WorstBound};
use crate::batch::{CheckError, InputError};
use crate::cli::{CheckArgs, FailOn};
use crate::config::{Config, RawConfig};
use crate::core::process::too_large_summary;
use crate::core::wire::SCHEMA_REGISTRY_MAGIC;
use crate::core::{
    DeadLetter, DeadLetterKind, DeadLetterValue, OutcomeKind, OutputRole, RecordMeta, Terminal,
    process,
};
use crate::terminal::{Escaped, escape, escape_lines};

/// Exit code for a completed run with no `--fail-on` outcome.
const EXIT_OK: u8 = 0;
/// Exit code when a `--fail-on` outcome occurred.
const EXIT_FAILED_ON: u8 = 1;
/// Exit code when a record could not be judged (a defect in groundgate).
const EXIT_UNJUDGED: u8 = 3;

pub fn main(args: CheckArgs) -> ExitCode {
    let staging = Arc::new(Mutex::new(Staging::Open));
    let partials = Staged::new(&args.out, args.report.as_deref()).partials();
    if let Err(e) = on_signals(partials, args.out.clone(), staging.clone()) {
        eprintln_lossy!(
            "groundgate check: cannot install signal handlers ({e}): Ctrl-C stops the run without removing its .partial files"
        );
    }
    let (data, took, not_answers) = match run(&args, &staging) {
        Ok(done) => done,
        Err(e) => {
            eprintln_lossy!("groundgate check: {}", escape_lines(&e.to_string()));
            return ExitCode::from(super::EXIT_USAGE);
        }
    };
    eprintln_lossy!(
        "{}",
        config_note(args.config.as_deref(), &crate::config::env_layer_names())
    );
    let mut code = EXIT_OK;
    // The outputs are complete by now; a closed or full stdout only loses
    // the summary table, which is said on stderr, never panicked.
    if let Err(e) = print_summary(&mut io::stdout().lock(), &data, &args) {
        let out = args.out.display();
        if e.kind() == io::ErrorKind::BrokenPipe {
            eprintln_lossy!(
                "groundgate check: standard output was closed early (broken pipe); the outputs in {out} are complete"
            );
        } else {
            eprintln_lossy!(
                "groundgate check: cannot write the summary to standard output: {e}; the outputs in {out} are complete"
            );
            code = super::EXIT_USAGE;
        }
    }
    eprintln_lossy!("groundgate check: {}", took.line(data.records));
    for input in &not_answers {
        eprintln_lossy!("groundgate check: {}", escape(&input.to_string()));
    }
    if let Some(note) = no_markers(&data) {
        eprintln_lossy!("groundgate check: {note}");
    }
    for f in &args.fail_on {
        let kind = match f {
            FailOn::Rejected => OutcomeKind::Rejected,
            FailOn::Retry => OutcomeKind::Retry,
            FailOn::DeadLetter => OutcomeKind::DeadLetter,
        };
        let n = data.count(kind);
        if n > 0 {
            eprintln_lossy!(
                "groundgate check: exit code 1 because of --fail-on {kind}: {n} record{} had outcome {kind}",
                if n == 1 { "" } else { "s" }
            );
            if code == EXIT_OK {
                code = EXIT_FAILED_ON;
            }
        }
    }
    if let Some(note) = unjudged(&data, &args.out) {
        eprintln_lossy!("groundgate check: {note}");
        if code != super::EXIT_USAGE {
            code = EXIT_UNJUDGED;
        }
    }
    ExitCode::from(code)
}

/// Says when no judged answer held a `[^N]` marker: answers that cite in
/// another style (`[1]`) are accepted with nothing checked, which reads as
/// a clean run unless said.
fn no_markers(data: &ReportData) -> Option<String> {
    let judged = data.records - data.count(OutcomeKind::DeadLetter);
    (judged > 0 && data.cited == 0).then(|| {
        format!(
            "none of the {judged} answer(s) judged holds a [^N] citation marker, so no citation and no cited claim was checked against its source: groundgate reads [^N] markers only ([^1] cites the first source), and markers written otherwise ([1], (1), 【1】) are plain text to it (docs/input-and-outputs.md#how-an-answer-is-judged)"
        )
    })
}

/// Says how many records groundgate failed to judge (`internal` dead
/// letters), if any: a CI gate must not pass over them whatever its
/// `--fail-on`.
fn unjudged(data: &ReportData, out: &Path) -> Option<String> {
    let n = data
        .dead_letters
        .get(DeadLetterKind::Internal.as_str())
        .copied()
        .unwrap_or(0);
    (n > 0).then(|| {
        format!(
            "exit code 3: {n} record{s} could not be judged because of a defect in groundgate; {they} in {} as read (dead letter kind internal, with what failed): please report it",
            out.join("dead_letter.jsonl").display(),
            s = if n == 1 { "" } else { "s" },
            they = if n == 1 { "it is" } else { "they are" },
        )
    })
}

/// Where the outputs stand, shared with the signal watcher. It is locked
/// while `.partial` files are created or renamed into place, so a stop
/// never races them: it removes every `.partial` file before they are
/// complete, and after they are in place it leaves them be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Staging {
    Open,
    InPlace,
}

/// The first SIGINT or SIGTERM stops the run at once: its `.partial` files
/// are removed, the outputs of an earlier run in `--out` stay as they were,
/// and the process exits 130. Nothing can be finished instead: the outputs
/// and their seals are whole only at the end of the input, and a reader
/// blocked on standard input would not see a request to stop.
fn on_signals(
    partials: Vec<PathBuf>,
    out: PathBuf,
    staging: Arc<Mutex<Staging>>,
) -> io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let (mut int, mut term) = {
        let _entered = runtime.enter();
        (
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        )
    };
    std::thread::Builder::new()
        .name("check-signals".into())
        .spawn(move || {
            runtime.block_on(async {
                tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
            });
            // Held until the process exits: nothing is staged or renamed
            // after this point.
            let stage = staging.lock().unwrap_or_else(|p| p.into_inner());
            let out = out.display();
            match *stage {
                Staging::Open => {
                    for p in &partials {
                        let _ = std::fs::remove_file(p);
                    }
                    eprintln_lossy!(
                        "\ngroundgate check: interrupted before the run finished: nothing of it was kept (its .partial files are removed); the outputs already in {out}, if any, are as they were"
                    );
                }
                Staging::InPlace => eprintln_lossy!(
                    "\ngroundgate check: interrupted after the outputs in {out} were complete; the summary was not printed"
                ),
            }
            std::process::exit(super::EXIT_INTERRUPTED);
        })?;
    Ok(())
}

/// Which configuration made the verdicts: every layer that applied, in the
/// order they override each other. `demo` runs with its own
/// (examples/demo.toml), so the same file gives different counts there.
fn config_note(config: Option<&Path>, env: &[String]) -> String {
    let mut note = super::config_layers(config, env, false);
    if config.is_none() {
        note.push_str("; no --config: `groundgate demo` uses examples/demo.toml, pass --config examples/demo.toml for the same verdicts");
    }
    note
}

/// What a run took: its wall time and the CPU time of the whole process
/// (reading, validating and writing), from the first line read to the
/// outputs in place.
struct Took {
    wall: Duration,
    cpu: Duration,
    threads: usize,
}

impl Took {
    /// `300 records in 0.05 s on 2 threads (6000 records/s); CPU 0.09 s,
    /// 300 µs a record`: the CPU a record is what sizing a deployment
    /// starts from.
    fn line(&self, records: u64) -> String {
        let threads = match self.threads {
            1 => "1 thread".to_string(),
            n => format!("{n} threads"),
        };
        let mut line = format!(
            "{records} record{} in {:.2} s on {threads}",
            if records == 1 { "" } else { "s" },
            self.wall.as_secs_f64()
        );
        if records > 0 && !self.wall.is_zero() {
            let per_second = records as f64 / self.wall.as_secs_f64();
            let micros = self.cpu.as_secs_f64() * 1e6 / records as f64;
            line.push_str(&format!(
                " ({per_second:.0} records/s); CPU {:.2} s, {micros:.0} µs a record",
                self.cpu.as_secs_f64()
            ));
        }
        line
    }
}

/// Most validating threads per CPU core: past this, more threads only cost
/// memory (each holds up to two blocks of input and their outputs).
const THREADS_PER_CORE: usize = 4;

/// The thread count to run with, and a note when `--threads` was lowered.
fn bounded_threads(
    requested: Option<usize>,
    cores: usize,
) -> Result<(usize, Option<String>), CheckError> {
    let most = cores.max(1) * THREADS_PER_CORE;
    match requested {
        Some(0) => Err(CheckError::Threads),
        Some(n) if n > most => Ok((
            most,
            Some(format!(
                "--threads {n} is more than {THREADS_PER_CORE} per CPU core ({cores} cores): using {most}"
            )),
        )),
        Some(n) => Ok((n, None)),
        None => Ok((cores.max(1), None)),
    }
}

/// A line of `dead_letter.jsonl`. Fields are declared in alphabetical order
/// so the line is canonical JSON like every other output. The original
/// bytes are kept exactly: as `raw` when they are UTF-8, as `raw_base64`
/// otherwise; a line over `max_record_bytes` (or any record the core
/// bounds) keeps only its `length`, `sha256` and a `preview` of its first
/// bytes (lossy UTF-8).
#[derive(Serialize, Default)]
struct DeadLetterLine<'a> {
    detail: &'a str,
    /// The input the line was read from, as `input.topic` in its audit row.
    input: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    length: Option<u64>,
    /// The 1-based line number, also the audit row's `input.offset`.
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

/// Text when the bytes are UTF-8, base64 otherwise.
fn text_or_base64(bytes: &[u8]) -> (Option<&str>, Option<String>) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (Some(s), None),
        Err(_) => (
            None,
            Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
        ),
    }
}

/// What a worker makes of one block of lines: the outputs already joined
/// per file, the audit rows with where each ends (seals go between them),
/// and the block's counts. The in-order writer only copies and merges.
struct Block<'a> {
    ctx: &'a RunContext<'a>,
    /// The input the block's lines come from.
    input: &'a str,
    /// Lines of the inputs read before it: the worst answers are ordered by
    /// their place in the whole run.
    before: u64,
    /// The joined outputs by role but final: `files[Final]` stays empty.
    files: [Vec<u8>; 4],
    /// The final envelopes, each with its newline: written from where
    /// `process` made them, not copied into one buffer first (a RAG
    /// record's is ~18 KB).
    finals: Vec<Vec<u8>>,
    /// Their bytes in all.
    finals_len: usize,
    /// (line, end of the row in `files[audit]`, SHA-256 of the row).
    audit_rows: Vec<(u64, usize, [u8; 32])>,
    /// The block's counts; taken by the writer when it merges them.
    report: Option<Aggregator>,
    /// Its dead letters that carry a Schema Registry header.
    framed: FramedDeadLetters,
}

/// What every worker reads.
struct RunContext<'a> {
    config: &'a Config,
    /// The policy of `--compare-config`: every record is also judged under it.
    baseline: Option<&'a Config>,
    worst: usize,
    /// Output buffers of written blocks, for the next blocks: buffers grown
    /// once are reused instead of grown again from empty (each growth a
    /// copy, and fresh pages the kernel must zero: a sixth of `check`'s time
    /// before). At most [`SPARE_BUFFERS`] sets.
    spare: Mutex<Vec<[Vec<u8>; 4]>>,
    /// The worst answers merged so far, once a full list: a block started
    /// after it skips the answers that cannot be among them.
    worst_bound: Mutex<Option<WorstBound>>,
}

/// Most sets of spare output buffers kept: more than the blocks in flight
/// at once (two per worker plus two, and those queued for flushing).
const SPARE_BUFFERS: usize = 64;

const AUDIT: usize = OutputRole::Audit as usize;

impl<'a> Block<'a> {
    fn new(ctx: &'a RunContext<'a>, input: &'a str, before: u64) -> Block<'a> {
        let files = ctx
            .spare
            .lock()
            .ok()
            .and_then(|mut spare| spare.pop())
            .unwrap_or_default();
        let mut report = Aggregator::new("", "", ctx.config.core.grounding.min_support, ctx.worst);
        report.skip_not_worse_than(ctx.worst_bound.lock().ok().and_then(|b| *b));
        Block {
            ctx,
            input,
            before,
            files,
            finals: Vec::new(),
            finals_len: 0,
            audit_rows: Vec::new(),
            report: Some(report),
            framed: FramedDeadLetters::default(),
        }
    }

    /// Hands the emptied output buffers back for the next blocks.
    fn recycle(mut self) {
        for f in &mut self.files {
            f.clear();
        }
        if let Ok(mut spare) = self.ctx.spare.lock()
            && spare.len() < SPARE_BUFFERS
        {
            spare.push(std::mem::take(&mut self.files));
        }
    }

    fn push(&mut self, role: OutputRole, bytes: &[u8]) {
        let f = &mut self.files[role as usize];
        f.extend_from_slice(bytes);
        f.push(b'\n');
    }
}

impl Fold for Block<'_> {
    fn line(&mut self, index: u64, line: Line<'_>) {
        let line_no = index + 1;
        let RunContext {
            config, baseline, ..
        } = *self.ctx;
        let meta = RecordMeta {
            topic: self.input,
            partition: 0,
            offset: line_no as i64,
        };
        let now = crate::clock::now_nanos();
        // Lines are read up to the larger of the two limits, so that the
        // baseline judges every record it would hold whole; one over
        // --config's own limit is, for its outputs, what the reader makes
        // of a line it does not hold.
        let (line, whole) = match line {
            Line::Whole(bytes) if bytes.len() > config.core.max_record_bytes => {
                (Line::too_long(bytes), Some(bytes))
            }
            Line::Whole(bytes) => (Line::Whole(bytes), Some(bytes)),
            too_long => (too_long, None),
        };
        let mut o = match line {
            Line::Whole(bytes) => process(Some(bytes), &meta, now, &config.core),
            Line::TooLong {
                len,
                sha256,
                preview,
            } => too_large_summary(len, &hex::encode(sha256), preview, &meta, now, &config.core),
        };
        let baseline = baseline.map(|b| match whole {
            Some(bytes) => {
                let judged = process(Some(bytes), &meta, now, &b.core);
                (judged.kind, judged.request_id)
            }
            None => (OutcomeKind::DeadLetter, None),
        });
        let envelope = match &mut o.terminal {
            Terminal::Final(b) => {
                let mut b = std::mem::take(b);
                let len = b.len();
                // In the room left past the envelope, which is sized with
                // some to spare.
                b.push(b'\n');
                self.finals_len += b.len();
                self.finals.push(b);
                Some(len)
            }
            Terminal::Retry(b) => {
                self.push(OutputRole::Retry, b);
                None
            }
            Terminal::DeadLetter(d) => {
                if let Line::Whole(bytes) = &line
                    && bytes.first() == Some(&SCHEMA_REGISTRY_MAGIC)
                {
                    self.framed.add(line_no, &d.detail);
                }
                let dl = dead_letter_line(self.input, line_no, d, &line);
                self.push(OutputRole::DeadLetter, &dl);
                None
            }
        };
        self.push(OutputRole::Audit, &o.audit);
        self.audit_rows
            .push((line_no, self.files[AUDIT].len(), row_hash(&o.audit)));
        if let Some(r) = &mut self.report {
            let envelope = envelope.and_then(|len| Some(&self.finals.last()?[..len]));
            r.add(
                self.before + line_no,
                o.kind,
                &o.summary,
                o.summary.grounding_score,
                envelope,
            );
            if let Some((kind, request_id)) = baseline {
                // A record only the baseline decodes is named by its id.
                let id = o.request_id.as_deref().or(request_id.as_deref());
                r.compare(id, kind, o.kind);
            }
        }
    }
}

fn dead_letter_line(input: &str, line_no: u64, d: &DeadLetter, line: &Line<'_>) -> Vec<u8> {
    let mut dl = DeadLetterLine {
        detail: &d.detail,
        input,
        kind: d.kind.as_str(),
        line: line_no,
        ..DeadLetterLine::default()
    };
    let bounded;
    match (&d.value, line) {
        (DeadLetterValue::Original, Line::Whole(bytes)) => {
            (dl.raw, dl.raw_base64) = text_or_base64(bytes);
        }
        (DeadLetterValue::Bounded(b), _) => {
            // The core's bounded stand-in: exactly these fields.
            bounded = serde_json::from_slice::<Bounded>(b).ok();
            if let Some(b) = &bounded {
                dl.length = Some(b.length);
                dl.preview = Some(&b.preview);
                dl.sha256 = Some(&b.sha256);
            }
        }
        // A streamed line always gets a bounded value from the core.
        (DeadLetterValue::Original, Line::TooLong { .. }) => {}
    }
    serde_json::to_vec(&dl).unwrap_or_default()
}

/// The fields of the core's bounded dead-letter value that the file keeps.
#[derive(serde::Deserialize)]
struct Bounded {
    length: u64,
    preview: String,
    sha256: String,
}

/// A block with its pieces placed, on its way to a flush thread.
struct Placed<'a> {
    block: Block<'a>,
    pieces: Vec<Piece>,
}

fn flush(out: &Outputs, p: Placed<'_>) -> Result<(), CheckError> {
    for piece in &p.pieces {
        match piece {
            Piece::Range(role, at, r) => {
                out.write_at(*role, *at, &p.block.files[*role as usize][r.clone()])?
            }
            Piece::Seal(at, bytes) => out.write_at(OutputRole::Audit, *at, bytes)?,
            Piece::Envelopes(at) => out.write_bufs_at(OutputRole::Final, *at, &p.block.finals)?,
        }
    }
    p.block.recycle();
    Ok(())
}

/// An input none of whose lines is an answer record: every line a dead
/// letter for not being UTF-8, JSON or a record (a JSON array, a
/// pretty-printed file, CSV), or no line at all. The run stands, as every
/// line is accounted for; the note says what `check` reads instead, or
/// that an empty input leaves nothing in the audit trail to verify.
struct NotAnswers {
    name: String,
    arg: String,
    lines: u64,
    framed: FramedDeadLetters,
}

/// Dead letters whose line starts with byte 0x00, the start of a Schema
/// Registry header (no JSON text starts with it): an input of such lines
/// is a dump of a framed topic, whose remedy is the framing settings, not
/// a conversion of JSON.
#[derive(Default)]
struct FramedDeadLetters {
    count: u64,
    /// The first of them: its line and the dead letter's detail.
    first: Option<(u64, String)>,
}

impl FramedDeadLetters {
    fn add(&mut self, line: u64, detail: &str) {
        self.count += 1;
        self.first.get_or_insert_with(|| (line, detail.to_string()));
    }

    /// Adds those of a later block of the same input.
    fn merge(&mut self, later: FramedDeadLetters) {
        self.count += later.count;
        if self.first.is_none() {
            self.first = later.first;
        }
    }
}

/// Dead letters that say the line is not a record at all.
const NOT_A_RECORD: [DeadLetterKind; 3] = [
    DeadLetterKind::InvalidUtf8,
    DeadLetterKind::InvalidJson,
    DeadLetterKind::Schema,
];

impl std::fmt::Display for NotAnswers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let NotAnswers {
            name,
            arg,
            lines,
            framed,
        } = self;
        if *lines == 0 {
            return write!(
                f,
                "{name} is empty: no record was read from it, so the audit trail holds no chain of it"
            );
        }
        // The detail of a framed line says what to change: the framing
        // setting, value_schema_ids, or the producer's serializer.
        if let Some((line, detail)) = &framed.first {
            let count = framed.count;
            return write!(
                f,
                "none of the {lines} line(s) of {name} is an answer record; {count} of them start with a Confluent Schema Registry header (byte 0x00 and a 4-byte schema id), as a dump of a topic written through a Schema Registry serializer does. Line {line}: {detail} (dead_letter.jsonl gives each line's reason; docs/input-and-outputs.md#schema-registry-framing)"
            );
        }
        let convert = if arg == "-" {
            "… | jq -c '.[]' | groundgate check - …".to_string()
        } else {
            format!("jq -c '.[]' {arg} > answers.jsonl")
        };
        write!(
            f,
            "none of the {lines} line(s) of {name} is an answer record (each is a dead letter: not UTF-8, not JSON or not a record): check reads JSON Lines, one JSON object per line with at least request_id and answer (docs/input-and-outputs.md); to convert a JSON array or pretty-printed JSON: {convert}"
        )
    }
}

type Finished = (ReportData, Took, Vec<NotAnswers>);

/// Runs every input: what the report shows, what the run took, and the
/// inputs that held no answer record.
fn run(args: &CheckArgs, staging: &Mutex<Staging>) -> Result<Finished, CheckError> {
    // Before anything is read or written: no output may be an input, and
    // no input may be read twice.
    let files: Vec<&Path> = args
        .inputs
        .iter()
        .filter(|i| i.as_str() != "-")
        .map(Path::new)
        .collect();
    if args.inputs.len() - files.len() > 1 {
        return Err(CheckError::StdinTwice);
    }
    let mut read: Vec<(&str, &Path)> = files.iter().map(|p| ("the input", *p)).collect();
    read.extend(args.config.as_deref().map(|p| ("--config", p)));
    read.extend(
        args.compare_config
            .as_deref()
            .map(|p| ("--compare-config", p)),
    );
    refuse_overwrites(args, &read)?;
    if let (Some(config), Some(baseline)) = (&args.config, &args.compare_config)
        && crate::batch::files::same_file(config, baseline)
    {
        return Err(CheckError::CompareWithItself(baseline.clone()));
    }
    if let Some(r) = args.report.as_ref().filter(|r| r.is_dir()) {
        return Err(CheckError::ReportIsDir(
            r.display().to_string().trim_end_matches('/').into(),
        ));
    }
    if let Some(r) = &args.report
        && let Some(kind) = special_file(r)
    {
        return Err(CheckError::ReportNotAFile(r.clone(), kind));
    }
    let config: Config =
        RawConfig::load_writing_audit(args.config.as_deref(), RawConfig::default())?;
    if let Some(key) = config.audit.signing_key_file.as_deref() {
        refuse_overwrites(args, &[("audit.signing_key_file", key)])?;
    }
    if let Some(key) = config.audit.pseudonym_key_file.as_deref() {
        refuse_overwrites(args, &[("audit.pseudonym_key_file", key)])?;
    }
    if let Some(p) = &config.core.pseudonyms {
        eprintln_lossy!(
            "audit trail: {} written as pseudonyms (key {})",
            p.field_names(),
            p.key_id()
        );
    }
    if let Some(framed) = config.kafka.output_schema_ids.describe() {
        eprintln_lossy!(
            "groundgate check: output_schema_ids ({framed}) frames the worker's Kafka outputs; the files written here are plain JSON"
        );
    }
    let baseline: Option<Config> = args
        .compare_config
        .as_deref()
        .map(|p| {
            RawConfig::load_from_process(Some(p), RawConfig::default()).map_err(|source| {
                CheckError::Baseline {
                    path: p.to_path_buf(),
                    source,
                }
            })
        })
        .transpose()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (threads, lowered) = bounded_threads(args.threads, cores)?;
    if let Some(note) = lowered {
        eprintln_lossy!("groundgate check: {note}");
    }
    // Bytes read from all inputs (their own bytes: compressed ones count as
    // stored), against their summed size.
    let file_read = Arc::new(AtomicU64::new(0));
    // Every file is opened once before the run, so a missing, unreadable or
    // refused one stops it before any work; each is opened again, one at a
    // time, when its turn comes (thousands of inputs hold no more than one
    // open file). A pipe (`<(zcat …)`, a FIFO) cannot be opened again from
    // its start: opening it has read its first bytes to tell its packing,
    // so it is kept open for its turn.
    let names = input_names(&args.inputs);
    // By the input's place in the arguments.
    let mut kept: Vec<Option<crate::batch::input::Input>> =
        args.inputs.iter().map(|_| None).collect();
    let mut size = Some(0u64);
    let mut seen = std::collections::HashSet::new();
    if files.len() < args.inputs.len() {
        seen.extend(crate::batch::input::stdin_file_id().map(Some));
    }
    for (i, (arg, name)) in args.inputs.iter().zip(&names).enumerate() {
        if arg == "-" {
            continue;
        }
        let path = Path::new(arg);
        let input =
            crate::batch::input::open_counted(path, file_read.clone()).map_err(named(name))?;
        if !seen.insert(input.file_id) {
            return Err(CheckError::InputTwice(path.to_path_buf()));
        }
        size = size.zip(input.size).map(|(a, b)| a + b);
        if !crate::batch::input::reopens(path) {
            kept[i] = Some(input);
        }
    }
    // The progress counts from here: what the opening read is read again.
    file_read.store(0, Ordering::Relaxed);
    if files.len() < args.inputs.len() {
        size = None;
    }
    let key = config.audit.signing_key()?.cloned();
    let run_id = draw_run_id()?;
    let mut report = Aggregator::new(
        &names.join(", "),
        &config.core.policy_version,
        config.core.grounding.min_support,
        args.worst,
    );
    let staged = Staged::new(&args.out, args.report.as_deref());
    let out = {
        let _staging = staging.lock().unwrap_or_else(|p| p.into_inner());
        Outputs::create(&args.out)?
    };
    // Made now, as --out is, rather than found missing once every record
    // has been judged.
    if let Some(dir) = args
        .report
        .as_deref()
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir).map_err(|source| CheckError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let ctx = RunContext {
        config: &config,
        baseline: baseline.as_ref(),
        worst: args.worst,
        spare: Mutex::new(Vec::new()),
        worst_bound: Mutex::new(None),
    };

    if files.len() < args.inputs.len() {
        super::note_terminal_stdin("check");
    }
    let (started, cpu_before) = (Instant::now(), crate::clock::process_cpu());
    let progress = Progress::default();
    let bar = progress_bar(size);
    let max_line = baseline
        .as_ref()
        .map_or(0, |b| b.core.max_record_bytes)
        .max(config.core.max_record_bytes);
    let shape = Shape::new(threads, max_line);
    let mut layout = Layout::default();
    let failed: Mutex<Option<CheckError>> = Mutex::new(None);
    let result = std::thread::scope(|s| {
        let ticker = bar.as_ref().map(|bar| {
            let (progress, file_read) = (&progress, &*file_read);
            s.spawn(move || tick(bar, progress, file_read))
        });
        // Flush threads: copying into the page cache is cheap next to
        // validating, so a few suffice; the queue is bounded like the
        // pipeline, so blocks waiting to be written stay few.
        let flushers = threads.clamp(1, 4);
        let (flush_tx, flush_rx) = crossbeam_channel::bounded::<Placed<'_>>(flushers);
        for _ in 0..flushers {
            let (rx, out, failed) = (flush_rx.clone(), &out, &failed);
            s.spawn(move || {
                for p in rx {
                    if let Err(e) = flush(out, p)
                        && let Ok(mut f) = failed.lock()
                    {
                        f.get_or_insert(e);
                    }
                }
            });
        }
        drop(flush_rx);
        let mut before = 0u64;
        let mut r = Ok(());
        // Chains whose final seal waits for the end of the run.
        let mut waiting: Vec<Sealer> = Vec::new();
        let mut not_answers: Vec<NotAnswers> = Vec::new();
        let write_seal = |layout: &mut Layout, mut seal: Vec<u8>| {
            seal.push(b'\n');
            let at = layout.place(OutputRole::Audit, seal.len());
            out.write_at(OutputRole::Audit, at, &seal)
        };
        for (i, (arg, name)) in args.inputs.iter().zip(&names).enumerate() {
            let (records_before, dead_before) = report.dead_letters_among(&NOT_A_RECORD);
            let mut framed = FramedDeadLetters::default();
            r = run_input(Path::new(arg), name, &file_read, kept[i].take(), |input| {
                // One chain per input: its audit rows, sealed every
                // `seal_every` rows and by a final seal at its end, so `audit
                // verify` can prove each input complete and untouched, and
                // every seal naming this run, so that it can prove the
                // chains one run and the run whole.
                let mut sealer = Sealer::new(
                    ChainId {
                        topic: name.clone(),
                        partition: 0,
                    },
                    CHECK_WORKER,
                    config.audit.seal_every,
                    ChainHead::START,
                    key.clone(),
                )
                .in_run(run_id.as_str());
                let lines = pipeline::run(
                    input,
                    shape,
                    &progress,
                    || Block::new(&ctx, name, before),
                    |b: Block<'_>| {
                        if failed.lock().is_ok_and(|f| f.is_some()) {
                            return Err(CheckError::Flush);
                        }
                        let placed =
                            place_block(b, &mut layout, &mut sealer, &mut report, &mut framed);
                        if let Ok(mut bound) = ctx.worst_bound.lock() {
                            *bound = report.worst_bound();
                        }
                        flush_tx.send(placed).map_err(|_| CheckError::Flush)
                    },
                )?;
                // The final seal states how many chains the run sealed,
                // known once the last input is read (an empty input seals
                // none): until then a chain waits with its last row.
                if i + 1 < args.inputs.len()
                    && let Some(seal) = sealer.seal_keeping_last(crate::clock::now_nanos())
                {
                    write_seal(&mut layout, seal).map_err(pipeline::PipelineError::Sink)?;
                }
                if sealer.pending() > 0 {
                    waiting.push(sealer);
                }
                before += lines;
                Ok(())
            });
            if r.is_err() {
                break;
            }
            let (records, dead) = report.dead_letters_among(&NOT_A_RECORD);
            let lines = records - records_before;
            if dead - dead_before == lines {
                not_answers.push(NotAnswers {
                    name: name.clone(),
                    arg: arg.clone(),
                    lines,
                    framed,
                });
            }
        }
        if r.is_ok() {
            let chains = waiting.len() as u64;
            for mut sealer in waiting {
                if let Some(seal) = sealer.seal_final(crate::clock::now_nanos(), chains) {
                    r = write_seal(&mut layout, seal);
                    if r.is_err() {
                        break;
                    }
                }
            }
        }
        drop(flush_tx);
        if let Some(bar) = &bar {
            bar.finish_and_clear();
        }
        if let Some(t) = ticker {
            let _ = t.join();
        }
        r.map(|()| not_answers)
    });
    // A write error from a flush thread is the real cause of a stop.
    if let Some(e) = failed.into_inner().ok().flatten() {
        return Err(e);
    }
    let not_answers = result?;
    let names_of = |p: &Option<PathBuf>| {
        p.as_ref()
            .map_or_else(|| "(defaults)".to_string(), |p| p.display().to_string())
    };
    let mut data = report.finish(
        args.compare_config
            .as_ref()
            .map(|_| (names_of(&args.compare_config), names_of(&args.config))),
    );
    data.inputs = names;
    data.unsupported_claim_action = serde_json::to_value(config.core.grounding.unsupported_claim)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    data.grounding_model = config.core.grounding.model().as_str().to_string();
    data.audit_run = run_id;
    let mut stage = staging.lock().unwrap_or_else(|p| p.into_inner());
    write_file(
        &partial(&args.out.join(SUMMARY)),
        // Record text in it (request ids, provider and model names, worst
        // answers) reaches whoever prints the file: no raw control.
        crate::terminal::to_json(&data, true)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    if let Some(path) = &args.report {
        let html = crate::batch::report::html::render(&data)
            .map_err(|e| CheckError::Report(e.to_string()))?;
        write_file(&partial(path), html.as_bytes())?;
    }
    drop(out);
    staged.commit()?;
    *stage = Staging::InPlace;
    drop(stage);
    let took = Took {
        wall: started.elapsed(),
        cpu: crate::clock::process_cpu().saturating_sub(cpu_before),
        threads,
    };
    Ok((data, took, not_answers))
}

/// What `path` is when it exists and is neither a regular file nor a
/// directory (symbolic links followed): `/dev/null`, `/dev/stdout`, a FIFO.
fn special_file(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = std::fs::metadata(path).ok()?.file_type();
    if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else {
        None
    }
}

/// The id of this run, which every seal it writes names: 16 bytes from the
/// operating system's random source, in lower-case hex, so that no two runs
/// share one.
fn draw_run_id() -> Result<String, CheckError> {
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).map_err(|e| CheckError::Random(e.to_string()))?;
    Ok(hex::encode(id))
}

/// Reads one input through `each` (its lines into the outputs), naming the
/// input in a read error; `opened` is the input when it was kept open
/// since the run's start.
fn run_input(
    path: &Path,
    name: &str,
    read: &Arc<AtomicU64>,
    opened: Option<crate::batch::input::Input>,
    each: impl FnOnce(Box<dyn io::Read + Send>) -> Result<(), pipeline::PipelineError<CheckError>>,
) -> Result<(), CheckError> {
    let input = match opened {
        Some(input) => input,
        None => crate::batch::input::open_counted(path, read.clone()).map_err(named(name))?,
    };
    each(input.reader).map_err(|e| match e {
        pipeline::PipelineError::Read { line, source } => CheckError::InInput {
            input: name.to_string(),
            source: InputError::Read { line, source },
        },
        pipeline::PipelineError::Sink(e) => e,
    })
}

/// An error opening the input called `name`: a read error (its packing
/// broken in its first bytes) names the input, as one met further on does;
/// the others name its path.
fn named(name: &str) -> impl Fn(InputError) -> CheckError + '_ {
    move |e| match e {
        InputError::Read { .. } => CheckError::InInput {
            input: name.to_string(),
            source: e,
        },
        e => CheckError::Input(e),
    }
}

/// What each input is called in the outputs (`input.topic`, a dead
/// letter's `input`): its file name (`stdin` for `-`), or, where two inputs
/// share a file name (`day1/part-0.jsonl`, `day2/part-0.jsonl`), the path
/// as given, so every input's chain and records are told apart.
fn input_names(inputs: &[String]) -> Vec<String> {
    let base = |i: &String| {
        if i == "-" {
            "stdin".to_string()
        } else {
            let p = Path::new(i);
            p.file_name()
                .unwrap_or(p.as_os_str())
                .to_string_lossy()
                .into_owned()
        }
    };
    let bases: Vec<String> = inputs.iter().map(base).collect();
    let mut count = std::collections::HashMap::<&str, usize>::new();
    for b in &bases {
        *count.entry(b).or_default() += 1;
    }
    bases
        .iter()
        .zip(inputs)
        .map(|(b, i)| {
            if count[b.as_str()] > 1 {
                i.clone()
            } else {
                b.clone()
            }
        })
        .collect()
}

/// The writer's step for one block, in input order: place the joined
/// outputs in the files, put seals between audit rows where they fall due,
/// merge the block's counts.
fn place_block<'a>(
    b: Block<'a>,
    layout: &mut Layout,
    sealer: &mut Sealer,
    report: &mut Aggregator,
    framed: &mut FramedDeadLetters,
) -> Placed<'a> {
    let mut pieces = Vec::with_capacity(4);
    if b.finals_len > 0 {
        let at = layout.place(OutputRole::Final, b.finals_len);
        pieces.push(Piece::Envelopes(at));
    }
    for role in [OutputRole::Retry, OutputRole::DeadLetter] {
        let n = b.files[role as usize].len();
        if n > 0 {
            pieces.push(Piece::Range(role, layout.place(role, n), 0..n));
        }
    }
    // A full seal is written when the next row comes, before it: the
    // input's last rows are always left for its final seal.
    let (mut written, mut start) = (0, 0);
    for &(line, end, hash) in &b.audit_rows {
        if sealer.due()
            && let Some(mut seal) = sealer.seal(crate::clock::now_nanos())
        {
            if start > written {
                let at = layout.place(OutputRole::Audit, start - written);
                pieces.push(Piece::Range(OutputRole::Audit, at, written..start));
                written = start;
            }
            seal.push(b'\n');
            pieces.push(Piece::Seal(
                layout.place(OutputRole::Audit, seal.len()),
                seal,
            ));
        }
        sealer.push_hash(line as i64, hash, None);
        start = end;
    }
    let end = b.files[AUDIT].len();
    if end > written {
        let at = layout.place(OutputRole::Audit, end - written);
        pieces.push(Piece::Range(OutputRole::Audit, at, written..end));
    }
    let mut b = b;
    if let Some(part) = b.report.take() {
        report.merge(part);
    }
    framed.merge(std::mem::take(&mut b.framed));
    Placed { block: b, pieces }
}

/// A progress bar on stderr when it is a terminal; nothing otherwise.
fn progress_bar(size: Option<u64>) -> Option<ProgressBar> {
    if !io::stderr().is_terminal() {
        return None;
    }
    let bar = match size {
        Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
    };
    let template = if size.is_some() {
        "{bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {msg} ETA {eta}"
    } else {
        "{spinner} {binary_bytes} {binary_bytes_per_sec} {msg}"
    };
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    Some(bar)
}

/// Moves the bar by the bytes read from the file (`file_read`: compressed
/// bytes when the file is compressed, so the bar and its ETA measure
/// against the file's size), and says the records done.
fn tick(bar: &ProgressBar, p: &Progress, file_read: &std::sync::atomic::AtomicU64) {
    let start = std::time::Instant::now();
    while !bar.is_finished() {
        let lines = p.lines.load(Ordering::Relaxed);
        bar.set_position(file_read.load(Ordering::Relaxed));
        let secs = start.elapsed().as_secs_f64().max(1e-3);
        bar.set_message(format!("{lines} records ({:.0}/s)", lines as f64 / secs));
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn print_comparison(w: &mut impl Write, c: &Comparison) -> io::Result<()> {
    writeln!(
        w,
        "what-if: {} -> {}: {} record(s) change outcome",
        Escaped(&c.baseline),
        Escaped(&c.candidate),
        c.changed
    )?;
    if c.transitions.is_empty() {
        return Ok(());
    }
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["from", "to", "records", "examples"]);
    for tr in &c.transitions {
        t.add_row(vec![
            tr.from.clone(),
            tr.to.clone(),
            tr.count.to_string(),
            // Request ids are the producer's text.
            escape(&tr.examples.join(", ")).into_owned(),
        ]);
    }
    writeln!(w, "{t}")
}

fn print_summary(w: &mut impl Write, d: &ReportData, args: &CheckArgs) -> io::Result<()> {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["", "count"]);
    t.add_row(vec!["records".to_string(), d.records.to_string()]);
    for kind in OutcomeKind::ALL {
        t.add_row(vec![kind.as_str().to_string(), d.count(kind).to_string()]);
    }
    for (kind, n) in &d.findings {
        t.add_row(vec![format!("finding: {kind}"), n.to_string()]);
    }
    for (kind, n) in &d.dead_letters {
        t.add_row(vec![format!("dead letter: {kind}"), n.to_string()]);
    }
    writeln!(w, "{t}")?;
    let files: Vec<String> = OutputRole::ALL
        .iter()
        .map(|r| args.out.join(file_name(*r)).display().to_string())
        .collect();
    writeln!(
        w,
        "outputs: {} {}",
        files.join(" "),
        args.out.join(SUMMARY).display()
    )?;
    if d.records == 0 {
        writeln!(w, "audit trail: empty (no record read, nothing to verify)")?;
    } else {
        writeln!(
            w,
            "audit trail: run {} (keep it: `audit verify --run {}` shows a trail is this run's)",
            d.audit_run, d.audit_run
        )?;
    }
    if let Some(c) = &d.comparison {
        print_comparison(w, c)?;
    }
    if let Some(r) = &args.report {
        writeln!(w, "report: {}", r.display())?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    use crate::batch::files::same_file;

    #[test]
    fn records_groundgate_failed_to_judge_are_said_and_counted() {
        let mut data = ReportData::default();
        data.dead_letters.insert("schema".into(), 4);
        data.dead_letters.insert("internal".into(), 0);
        assert_eq!(unjudged(&data, Path::new("out")), None);
        data.dead_letters.insert("internal".into(), 2);
        let note = unjudged(&data, Path::new("out")).unwrap();
        assert!(
            note.starts_with("exit code 3: 2 records could not be judged"),
            "{note}"
        );
        assert!(note.contains("they are in out/dead_letter.jsonl"), "{note}");
        data.dead_letters.insert("internal".into(), 1);
        let note = unjudged(&data, Path::new("out")).unwrap();
        assert!(note.contains(": 1 record could not be judged"), "{note}");
        assert!(note.contains("it is in out/dead_letter.jsonl"), "{note}");
    }

    #[test]
    fn the_cost_line_gives_the_rate_and_the_cpu_a_record() {
        let took = Took {
            wall: Duration::from_millis(500),
            cpu: Duration::from_millis(900),
            threads: 2,
        };
        assert_eq!(
            took.line(3000),
            "3000 records in 0.50 s on 2 threads (6000 records/s); CPU 0.90 s, 300 µs a record"
        );
        let one = Took { threads: 1, ..took };
        assert_eq!(
            one.line(1),
            "1 record in 0.50 s on 1 thread (2 records/s); CPU 0.90 s, 900000 µs a record"
        );
        assert_eq!(one.line(0), "0 records in 0.50 s on 1 thread");
    }

    #[test]
    fn threads_are_bounded_per_core() {
        assert!(matches!(
            bounded_threads(Some(0), 2),
            Err(CheckError::Threads)
        ));
        assert_eq!(bounded_threads(Some(8), 2).unwrap(), (8, None));
        assert_eq!(bounded_threads(None, 6).unwrap(), (6, None));
        let (n, note) = bounded_threads(Some(100_000), 2).unwrap();
        assert_eq!(n, 8);
        let note = note.unwrap();
        assert!(
            note.contains("--threads 100000") && note.contains("using 8"),
            "{note}"
        );
    }

    #[test]
    fn the_note_lists_the_layers_in_order() {
        let env = ["GROUNDGATE_A".to_string(), "GROUNDGATE_B".to_string()];
        let n = config_note(Some(Path::new("gg.toml")), &env);
        assert!(
            n.starts_with(
                "configuration: built-in defaults < file gg.toml < environment GROUNDGATE_A, GROUNDGATE_B (later layers win)"
            ),
            "{n}"
        );
        let n = config_note(None, &[]);
        assert!(
            n.starts_with("configuration: built-in defaults; no --config"),
            "{n}"
        );
        assert!(!n.contains("environment"));
    }

    #[test]
    fn paths_naming_one_file_are_recognised() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::write(d.join("a"), "x").unwrap();
        fs::hard_link(d.join("a"), d.join("hard")).unwrap();
        std::os::unix::fs::symlink(d.join("a"), d.join("soft")).unwrap();
        assert!(same_file(&d.join("a"), &d.join("hard")));
        assert!(same_file(&d.join("a"), &d.join("soft")));
        assert!(same_file(&d.join("a"), &d.join("x/../a")));
        // Neither exists yet: compared as the paths they will be.
        assert!(same_file(&d.join("new/f"), &d.join("new/./g/../f")));
        assert!(!same_file(&d.join("a"), &d.join("b")));
        assert!(!same_file(&d.join("new/f"), &d.join("new/g")));
    }

    #[test]
    fn output_files_are_indexed_by_role() {
        for (i, role) in OutputRole::ALL.into_iter().enumerate() {
            assert_eq!(role as usize, i, "{role:?}");
        }
    }
}
