//! `groundgate check`: the offline batch runner. Reads JSON Lines, runs the
//! same [`crate::core::process()`] as the stream worker on every line, writes
//! the four output files, a sealed audit trail, `summary.json` and, on
//! request, an HTML report, then prints a summary.
//!
//! This is an I/O shell: it reads the clock (once per record) and the file
//! system, and must never make a verdict of its own. The work is spread by
//! `crate::batch::pipeline`: lines are validated on `--threads` workers and
//! written in input order; memory is bounded whatever the file or line size
//! (a line over `max_record_bytes` is streamed through SHA-256, never held).
//!
//! Numbering: a record's `input.offset` in the audit row and its `line` in
//! `dead_letter.jsonl` are the same number, the 1-based line number (as
//! editors and `sed -n Np` count).

use std::fs::{self, File};
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

use base64::Engine;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use crate::audit::seal::row_hash;
use crate::audit::{ChainHead, ChainId, Sealer};
use crate::batch::pipeline::{self, Fold, Line, Progress, Shape};
use crate::batch::report::{Aggregator, Comparison, ReportData};
use crate::cli::{CheckArgs, FailOn};
use crate::config::{Config, RawConfig};
use crate::core::process::too_large_summary;
use crate::core::{
    DeadLetter, DeadLetterValue, OutcomeKind, OutputRole, RecordMeta, Terminal, process,
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
}

pub fn main(args: CheckArgs) -> ExitCode {
    let data = match run(&args) {
        Ok(data) => data,
        Err(e) => {
            eprintln!("groundgate check: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    eprintln!(
        "{}",
        config_note(args.config.as_deref(), &crate::config::env_layer_names())
    );
    let mut code = EXIT_OK;
    // The outputs are complete by now; a closed or full stdout only loses
    // the summary table, which is said on stderr, never panicked.
    if let Err(e) = print_summary(&mut io::stdout().lock(), &data, &args) {
        let out = args.out.display();
        if e.kind() == io::ErrorKind::BrokenPipe {
            eprintln!(
                "groundgate check: standard output was closed early (broken pipe); the outputs in {out} are complete"
            );
        } else {
            eprintln!(
                "groundgate check: cannot write the summary to standard output: {e}; the outputs in {out} are complete"
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
        let n = data.count(kind);
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

/// Which configuration made the verdicts: every layer that applied, in the
/// order they override each other. `demo` runs with its own
/// (examples/demo.toml), so the same file gives different counts there.
fn config_note(config: Option<&Path>, env: &[String]) -> String {
    let mut layers = vec!["built-in defaults".to_string()];
    if let Some(p) = config {
        layers.push(format!("file {}", p.display()));
    }
    if !env.is_empty() {
        layers.push(format!("environment {}", env.join(", ")));
    }
    let mut note = format!("configuration: {}", layers.join(" < "));
    if layers.len() > 1 {
        note.push_str(" (later layers win)");
    }
    if config.is_none() {
        note.push_str("; no --config: `groundgate demo` uses examples/demo.toml, pass --config examples/demo.toml for the same verdicts");
    }
    note
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

/// Suffix of an output file while it is written.
const PARTIAL: &str = ".partial";

fn partial(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(PARTIAL);
    s.into()
}

/// The outputs of a run, written under their `.partial` names and renamed
/// into place only when the run is complete, so a run that stops half-way
/// (disk full, killed) never leaves files that look like a finished run's,
/// and leaves a previous run's outputs as they were. `summary.json` goes
/// last: beside it, the other files are always the same run's. A run that
/// fails with an error removes its `.partial` files; a killed one leaves
/// them, recognisable by their names.
struct Staged {
    /// Final names, in the order they are put in place; `summary.json` last.
    files: Vec<PathBuf>,
    committed: bool,
}

impl Staged {
    fn new(out: &Path, report: Option<&Path>) -> Staged {
        let mut files: Vec<PathBuf> = OutputRole::ALL
            .iter()
            .map(|r| out.join(file_name(*r)))
            .collect();
        files.extend(report.map(Path::to_path_buf));
        files.push(out.join(SUMMARY));
        Staged {
            files,
            committed: false,
        }
    }

    fn commit(mut self) -> Result<(), CheckError> {
        let rename = |to: &Path| {
            fs::rename(partial(to), to).map_err(|source| CheckError::Write {
                path: to.to_path_buf(),
                source,
            })
        };
        // The old summary goes first: until the new one is in place, the
        // directory has none, which says "not a finished run".
        let (summary, rest) = self.files.split_last().ok_or(CheckError::Flush)?;
        match fs::remove_file(summary) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(CheckError::Write {
                    path: summary.clone(),
                    source,
                });
            }
        }
        for f in rest {
            rename(f)?;
        }
        rename(summary)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            for f in &self.files {
                let _ = fs::remove_file(partial(f));
            }
        }
    }
}

const SUMMARY: &str = "summary.json";

/// `path` as the file system resolves it, to tell whether two paths name
/// one file: its longest existing ancestor canonicalized (symbolic links,
/// `..`), the rest appended with `.` and `..` applied by hand.
fn resolved(path: &Path) -> PathBuf {
    use std::path::Component;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let parts: Vec<Component<'_>> = abs.components().collect();
    for split in (1..=parts.len()).rev() {
        let head: PathBuf = parts[..split].iter().collect();
        if let Ok(mut out) = fs::canonicalize(&head) {
            for c in &parts[split..] {
                match c {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other),
                }
            }
            return out;
        }
    }
    abs
}

/// Whether two paths name one file: the same resolved path, or (hard
/// links) the same device and inode.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if resolved(a) == resolved(b) {
        return true;
    }
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Every file the run writes, named for a message.
fn outputs(args: &CheckArgs) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let names = OutputRole::ALL
        .iter()
        .map(|r| file_name(*r))
        .chain([SUMMARY]);
    for name in names {
        let p = args.out.join(name);
        out.push((format!("the output {name} of --out"), partial(&p)));
        out.push((format!("the output {name} of --out"), p));
    }
    if let Some(r) = &args.report {
        out.push(("--report".to_string(), partial(r)));
        out.push(("--report".to_string(), r.clone()));
    }
    out
}

/// Refuses a run that would overwrite one of its own inputs (`inputs`:
/// what and where) or write two outputs to one file.
fn refuse_overwrites(args: &CheckArgs, inputs: &[(&str, &Path)]) -> Result<(), CheckError> {
    let outs = outputs(args);
    let overwrite = |what: &str, path: &Path, (output, output_path): &(String, PathBuf)| {
        CheckError::Overwrite {
            what: what.to_string(),
            path: path.to_path_buf(),
            output: output.clone(),
            output_path: output_path.clone(),
        }
    };
    for (what, path) in inputs {
        if let Some(o) = outs.iter().find(|(_, o)| same_file(path, o)) {
            return Err(overwrite(what, path, o));
        }
    }
    if let Some(r) = &args.report
        && let Some(o) = outs
            .iter()
            .find(|(what, o)| what != "--report" && same_file(r, o))
    {
        return Err(overwrite("--report", r, o));
    }
    Ok(())
}

/// The input without a UTF-8 byte-order mark at its start: some editors
/// write one, and it is not part of the first record.
fn skip_bom(mut input: Box<dyn Read + Send>) -> io::Result<Box<dyn Read + Send>> {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    let mut head = [0u8; 3];
    let mut n = 0;
    while n < head.len() {
        match input.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let kept = if &head[..n] == BOM {
        &[][..]
    } else {
        &head[..n]
    };
    Ok(Box::new(io::Cursor::new(kept.to_vec()).chain(input)))
}

/// The file `check` writes an output role to, in `--out`.
fn file_name(role: OutputRole) -> &'static str {
    match role {
        OutputRole::Final => "final.jsonl",
        OutputRole::Retry => "retry.jsonl",
        OutputRole::Audit => "audit.jsonl",
        OutputRole::DeadLetter => "dead_letter.jsonl",
    }
}

/// The four output files. The in-order writer gives every block its byte
/// offsets in each file ([`Outputs::place`]); flush threads then copy the
/// blocks in at those offsets in parallel, so writing is not a one-core
/// step. (No fsync: like the serial writer before, `check` leaves
/// durability to the file system.)
struct Outputs {
    dir: PathBuf,
    /// Indexed by `OutputRole as usize` (ALL is in discriminant order).
    files: [File; 4],
}

impl Outputs {
    fn create(dir: &Path) -> Result<Outputs, CheckError> {
        fs::create_dir_all(dir).map_err(|source| CheckError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        let open = |role: OutputRole| -> Result<File, CheckError> {
            let path = partial(&dir.join(file_name(role)));
            File::create(&path).map_err(|source| CheckError::Write { path, source })
        };
        Ok(Outputs {
            dir: dir.to_path_buf(),
            files: [
                open(OutputRole::ALL[0])?,
                open(OutputRole::ALL[1])?,
                open(OutputRole::ALL[2])?,
                open(OutputRole::ALL[3])?,
            ],
        })
    }

    fn write_at(&self, role: OutputRole, at: u64, bytes: &[u8]) -> Result<(), CheckError> {
        use std::os::unix::fs::FileExt;
        self.files[role as usize]
            .write_all_at(bytes, at)
            .map_err(|source| CheckError::Write {
                path: partial(&self.dir.join(file_name(role))),
                source,
            })
    }
}

/// Where the next bytes of each file go.
#[derive(Default)]
struct Layout {
    len: [u64; 4],
}

impl Layout {
    fn place(&mut self, role: OutputRole, n: usize) -> u64 {
        let at = self.len[role as usize];
        self.len[role as usize] += n as u64;
        at
    }
}

/// Bytes of a block to write at an offset: a range of the block's own
/// buffer for that file, or a seal line made by the writer.
enum Piece {
    Range(OutputRole, u64, std::ops::Range<usize>),
    Seal(u64, Vec<u8>),
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
        }
    }
    p.block.recycle();
    Ok(())
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
    ctx: &'a Ctx<'a>,
    files: [Vec<u8>; 4],
    /// (line, end of the row in `files[audit]`, SHA-256 of the row).
    audit_rows: Vec<(u64, usize, [u8; 32])>,
    /// The block's counts; taken by the writer when it merges them.
    report: Option<Aggregator>,
}

/// What every worker reads.
struct Ctx<'a> {
    topic: &'a str,
    config: &'a Config,
    /// The policy of `--compare-config`: every record is also judged under it.
    baseline: Option<&'a Config>,
    worst: usize,
    /// Output buffers of written blocks, for the next blocks: buffers grown
    /// once are reused instead of grown again from empty (each growth a
    /// copy, and fresh pages the kernel must zero: a sixth of `check`'s time
    /// before). At most [`SPARE_BUFFERS`] sets.
    spare: Mutex<Vec<[Vec<u8>; 4]>>,
}

/// Most sets of spare output buffers kept: more than the blocks in flight
/// at once (two per worker plus two, and those queued for flushing).
const SPARE_BUFFERS: usize = 64;

const AUDIT: usize = OutputRole::Audit as usize;

impl<'a> Block<'a> {
    fn new(ctx: &'a Ctx<'a>) -> Block<'a> {
        let files = ctx
            .spare
            .lock()
            .ok()
            .and_then(|mut spare| spare.pop())
            .unwrap_or_default();
        Block {
            ctx,
            files,
            audit_rows: Vec::new(),
            report: Some(Aggregator::new(
                "",
                "",
                ctx.config.core.grounding.min_support,
                ctx.worst,
            )),
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
        let Ctx {
            topic,
            config,
            baseline,
            ..
        } = *self.ctx;
        let meta = RecordMeta {
            topic,
            partition: 0,
            offset: line_no as i64,
        };
        let now = crate::clock::now_nanos();
        let (o, baseline) = match line {
            Line::Whole(bytes) => (
                process(Some(bytes), &meta, now, &config.core),
                baseline.map(|b| process(Some(bytes), &meta, now, &b.core).kind),
            ),
            Line::TooLong {
                len,
                sha256,
                preview,
            } => (
                too_large_summary(len, &hex::encode(sha256), preview, &meta, now, &config.core),
                baseline.map(|_| OutcomeKind::DeadLetter),
            ),
        };
        let envelope = match &o.terminal {
            Terminal::Final(b) => {
                self.push(OutputRole::Final, b);
                Some(b.as_slice())
            }
            Terminal::Retry(b) => {
                self.push(OutputRole::Retry, b);
                None
            }
            Terminal::DeadLetter(d) => {
                let dl = dead_letter_line(line_no, d, &line);
                self.push(OutputRole::DeadLetter, &dl);
                None
            }
        };
        self.push(OutputRole::Audit, &o.audit);
        self.audit_rows
            .push((line_no, self.files[AUDIT].len(), row_hash(&o.audit)));
        if let Some(r) = &mut self.report {
            r.add(
                line_no,
                o.kind,
                &o.summary,
                o.summary.grounding_score,
                envelope,
            );
            if let Some(b) = baseline {
                r.compare(o.request_id.as_deref(), b, o.kind);
            }
        }
    }
}

fn dead_letter_line(line_no: u64, d: &DeadLetter, line: &Line<'_>) -> Vec<u8> {
    let mut dl = DeadLetterLine {
        detail: &d.detail,
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

/// Runs the whole file and returns what the report shows. Public for tests.
pub fn run(args: &CheckArgs) -> Result<ReportData, CheckError> {
    // Before anything is read or written: no output may be an input.
    let mut inputs: Vec<(&str, &Path)> = Vec::new();
    if args.input != "-" {
        inputs.push(("the input", Path::new(&args.input)));
    }
    inputs.extend(args.config.as_deref().map(|p| ("--config", p)));
    inputs.extend(
        args.compare_config
            .as_deref()
            .map(|p| ("--compare-config", p)),
    );
    refuse_overwrites(args, &inputs)?;
    let config: Config =
        RawConfig::load_from_process(args.config.as_deref(), RawConfig::default())?;
    if let Some(key) = config.audit.signing_key_file.as_deref() {
        refuse_overwrites(args, &[("audit.signing_key_file", key)])?;
    }
    let baseline: Option<Config> = args
        .compare_config
        .as_deref()
        .map(|p| RawConfig::load_from_process(Some(p), RawConfig::default()))
        .transpose()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (threads, lowered) = bounded_threads(args.threads, cores)?;
    if let Some(note) = lowered {
        eprintln!("groundgate check: {note}");
    }
    let (input, topic, size): (Box<dyn Read + Send>, String, Option<u64>) = if args.input == "-" {
        (Box::new(io::stdin()), "stdin".into(), None)
    } else {
        let path = PathBuf::from(&args.input);
        let f = File::open(&path).map_err(|source| CheckError::OpenInput {
            path: path.clone(),
            source,
        })?;
        let size = f.metadata().ok().map(|m| m.len());
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| args.input.clone());
        (Box::new(f), name, size)
    };
    let input = skip_bom(input).map_err(|source| CheckError::ReadInput { line: 1, source })?;
    let key = config
        .audit
        .signing_key_file
        .as_deref()
        .map(crate::audit::keys::load_signing_key)
        .transpose()?;
    // One chain per input file: the audit rows of this run, sealed every
    // `seal_every` rows and once at the end, so `audit verify` can prove the
    // file complete and untouched.
    let mut sealer = Sealer::new(
        ChainId {
            topic: topic.clone(),
            partition: 0,
        },
        "check",
        config.audit.seal_every,
        ChainHead::START,
        key,
    );
    let mut report = Aggregator::new(
        &topic,
        &config.core.policy_version,
        config.core.grounding.min_support,
        args.worst,
    );
    let staged = Staged::new(&args.out, args.report.as_deref());
    let out = Outputs::create(&args.out)?;
    let ctx = Ctx {
        topic: &topic,
        config: &config,
        baseline: baseline.as_ref(),
        worst: args.worst,
        spare: Mutex::new(Vec::new()),
    };

    let progress = Progress::default();
    let bar = progress_bar(size);
    let shape = Shape::new(threads, config.core.max_record_bytes);
    let mut layout = Layout::default();
    let failed: Mutex<Option<CheckError>> = Mutex::new(None);
    let result = std::thread::scope(|s| {
        let ticker = bar.as_ref().map(|bar| {
            let progress = &progress;
            s.spawn(move || tick(bar, progress))
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
        let r = pipeline::run(
            input,
            shape,
            &progress,
            || Block::new(&ctx),
            |b: Block<'_>| {
                if failed.lock().is_ok_and(|f| f.is_some()) {
                    return Err(CheckError::Flush);
                }
                let placed = place_block(b, &mut layout, &mut sealer, &mut report);
                flush_tx.send(placed).map_err(|_| CheckError::Flush)
            },
        );
        drop(flush_tx);
        if let Some(bar) = &bar {
            bar.finish_and_clear();
        }
        if let Some(t) = ticker {
            let _ = t.join();
        }
        r
    });
    // A write error from a flush thread is the real cause of a stop.
    if let Some(e) = failed.into_inner().ok().flatten() {
        return Err(e);
    }
    result.map_err(|e| match e {
        pipeline::PipelineError::Read { line, source } => CheckError::ReadInput { line, source },
        pipeline::PipelineError::Sink(e) => e,
    })?;
    if let Some(mut seal) = sealer.seal(crate::clock::now_nanos()) {
        seal.push(b'\n');
        out.write_at(
            OutputRole::Audit,
            layout.place(OutputRole::Audit, seal.len()),
            &seal,
        )?;
    }
    let names = |p: &Option<PathBuf>| {
        p.as_ref()
            .map_or_else(|| "(defaults)".to_string(), |p| p.display().to_string())
    };
    let mut data = report.finish(
        args.compare_config
            .as_ref()
            .map(|_| (names(&args.compare_config), names(&args.config))),
    );
    data.unsupported_claim_action = serde_json::to_value(config.core.grounding.unsupported_claim)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    write_file(
        &partial(&args.out.join(SUMMARY)),
        &serde_json::to_vec_pretty(&data).unwrap_or_default(),
    )?;
    if let Some(path) = &args.report {
        let html = crate::batch::report::html::render(&data)
            .map_err(|e| CheckError::Report(e.to_string()))?;
        write_file(&partial(path), html.as_bytes())?;
    }
    drop(out);
    staged.commit()?;
    Ok(data)
}

/// The writer's step for one block, in input order: place the joined
/// outputs in the files, put seals between audit rows where they fall due,
/// merge the block's counts.
fn place_block<'a>(
    b: Block<'a>,
    layout: &mut Layout,
    sealer: &mut Sealer,
    report: &mut Aggregator,
) -> Placed<'a> {
    let mut pieces = Vec::with_capacity(4);
    for role in [OutputRole::Final, OutputRole::Retry, OutputRole::DeadLetter] {
        let n = b.files[role as usize].len();
        if n > 0 {
            pieces.push(Piece::Range(role, layout.place(role, n), 0..n));
        }
    }
    let mut written = 0;
    for &(line, end, hash) in &b.audit_rows {
        if sealer.push_hash(line as i64, hash)
            && let Some(mut seal) = sealer.seal(crate::clock::now_nanos())
        {
            let at = layout.place(OutputRole::Audit, end - written);
            pieces.push(Piece::Range(OutputRole::Audit, at, written..end));
            written = end;
            seal.push(b'\n');
            pieces.push(Piece::Seal(
                layout.place(OutputRole::Audit, seal.len()),
                seal,
            ));
        }
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
    Placed { block: b, pieces }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CheckError> {
    fs::write(path, bytes).map_err(|source| CheckError::Write {
        path: path.to_path_buf(),
        source,
    })
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

fn tick(bar: &ProgressBar, p: &Progress) {
    let start = std::time::Instant::now();
    while !bar.is_finished() {
        let lines = p.lines.load(Ordering::Relaxed);
        bar.set_position(p.bytes.load(Ordering::Relaxed));
        let secs = start.elapsed().as_secs_f64().max(1e-3);
        bar.set_message(format!("{lines} records ({:.0}/s)", lines as f64 / secs));
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn print_comparison(w: &mut impl Write, c: &Comparison) -> io::Result<()> {
    writeln!(
        w,
        "what-if: {} -> {}: {} record(s) change outcome",
        c.baseline, c.candidate, c.changed
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
            tr.examples.join(", "),
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
    fn a_byte_order_mark_is_dropped_and_nothing_else() {
        let read = |bytes: &'static [u8]| {
            let mut out = Vec::new();
            skip_bom(Box::new(bytes))
                .unwrap()
                .read_to_end(&mut out)
                .unwrap();
            out
        };
        assert_eq!(read(b"\xEF\xBB\xBF{}\n"), b"{}\n");
        assert_eq!(read(b"{}\n"), b"{}\n");
        assert_eq!(read(b"\xEF\xBB"), b"\xEF\xBB");
        assert_eq!(read(b""), b"");
        // Only at the start.
        assert_eq!(read(b"a\xEF\xBB\xBF"), b"a\xEF\xBB\xBF");
    }

    #[test]
    fn output_files_are_indexed_by_role() {
        for (i, role) in OutputRole::ALL.into_iter().enumerate() {
            assert_eq!(role as usize, i, "{role:?}");
        }
    }
}
