//! `groundgate audit verify` and `groundgate audit keygen`: the shell around
//! `crate::audit::verify`. Reads JSON Lines exports or an audit topic (with a
//! progress bar when stderr is a terminal; the topic through the workers'
//! configuration layers), prints a summary table (or `--json`), and maps
//! the verdict to an exit code: 0 clean (redeliveries allowed), 1 a problem
//! found (nothing to verify included), 2 the trail could not be read (a
//! usage or configuration error, an inverted `--from`/`--to` range, a file
//! or brokers out of reach).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::BorrowedMessage;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use crate::audit::keys;
use crate::audit::seal::{ChainHead, ChainId};
use crate::audit::verify::{
    Anchor, AuditVerifier, Handed, Location, Options, ProblemKind, RecordHeaders, Report, SealRef,
};
use crate::cli::{
    AuditArgs, AuditCommand, AuditVerifyArgs, ClientFlags, KeygenArgs, PseudonymArgs,
};
use crate::config::{ConfigError, RawConfig};
use crate::core::pseudonym::{PseudonymField, Pseudonyms};
use crate::kafka::client::{LogContext, metadata_bytes};
use crate::kafka::outputs::{H_INPUT_OFFSET, H_INPUT_PARTITION, H_INPUT_TOPIC, H_SEAL};
use crate::kafka::range_read::{RangeError, RangeRead};
use crate::kafka::seals::read_head;
use crate::terminal::{Escaped, escape, escape_lines};

const EXIT_CLEAN: u8 = 0;
const EXIT_PROBLEM: u8 = 1;

#[derive(Debug, thiserror::Error)]
pub enum CmdError {
    #[error("{0}")]
    Key(#[from] keys::KeyError),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "give one or more audit files, or no files and the audit topic's brokers (--brokers, GROUNDGATE_BROKERS, or kafka.brokers in --config)"
    )]
    Source,
    #[error(
        "audit files are read alone: --brokers, --config, -X and --input-topic read the audit topic instead, give them without files"
    )]
    FilesAndTopic,
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("kafka: {0}{hint}", hint = read_hint(.0))]
    Kafka(#[from] rdkafka::error::KafkaError),
    #[error("topic {0} not found")]
    NoTopic(String),
    #[error(
        "{} {}: a trail of several runs of check is verified a run at a time, which reads each file twice (save it to a file, or verify each run alone)",
        path.display(),
        if *pipe { "is a pipe or standard input, which reads empty the second time" } else { "changed while it was verified" }
    )]
    ReadTwice { path: PathBuf, pipe: bool },
    #[error("--from {from} is after --to {to}: the range is empty, nothing would be verified")]
    EmptyRange { from: i64, to: i64 },
}

/// What a Kafka error of reading the audit topic leaves unsaid.
fn read_hint(e: &rdkafka::error::KafkaError) -> &'static str {
    if crate::kafka::client::deleted_under_reader(e) {
        ": the audit rows at the reader's position are no longer on the topic (deleted by its retention, or by a deletion of records, while this run read it); run it again: it reads from the oldest row the topic holds"
    } else {
        crate::kafka::unreachable_hint(e)
    }
}

pub fn main(args: AuditArgs) -> ExitCode {
    let result = match args.command {
        AuditCommand::Verify(v) => verify(&v),
        AuditCommand::Keygen(k) => keygen(&k),
        AuditCommand::Pseudonym(p) => pseudonym(&p),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln_lossy!("groundgate audit: {}", escape_lines(&e.to_string()));
            ExitCode::from(super::EXIT_USAGE)
        }
    }
}

/// The key file `--key-file` names, or the one the workers' configuration
/// (`--config`, with the environment layered on it) names.
fn pseudonym_key_file(args: &PseudonymArgs) -> Result<PathBuf, CmdError> {
    if let Some(path) = &args.key_file {
        return Ok(path.clone());
    }
    let Some(file) = args.config.as_deref() else {
        return Err(CmdError::Usage(
            "pseudonym needs the key the trail was written with: --key-file FILE, or --config with the workers' configuration file, whose audit.pseudonym_key_file names it".into(),
        ));
    };
    let config = RawConfig::load_from_process(Some(file), RawConfig::default())?;
    config.audit.pseudonym_key_file.ok_or_else(|| {
        CmdError::Usage(format!(
            "{} sets no audit.pseudonym_key_file: its workers write no pseudonyms",
            file.display()
        ))
    })
}

fn pseudonym(args: &PseudonymArgs) -> Result<u8, CmdError> {
    use std::io::{BufRead, Write};
    let key_file = pseudonym_key_file(args)?;
    let named_by = if args.key_file.is_some() {
        "--key-file"
    } else {
        "audit.pseudonym_key_file"
    };
    let key = crate::config::read_pseudonym_key_file(&key_file).map_err(|e| {
        CmdError::Usage(crate::config::secret_file::problem(
            named_by, &key_file, true, &e,
        ))
    })?;
    let pseudonyms = Pseudonyms::new(&key, &PseudonymField::ALL)
        .map_err(|e| CmdError::Usage(format!("{} {e}", key_file.display())))?;
    let mut out = std::io::stdout().lock();
    let mut write = |value: &str| writeln!(out, "{}", pseudonyms.of(value));
    let written = if args.values.is_empty() {
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            eprintln_lossy!(
                "groundgate audit pseudonym: reading values from standard input, which is this terminal: type one a line and end with Ctrl-D, or give them as arguments"
            );
        }
        let mut written = Ok(());
        for (i, line) in std::io::stdin().lock().lines().enumerate() {
            let line = line.map_err(|source| match source.kind() {
                std::io::ErrorKind::InvalidData => CmdError::Usage(format!(
                    "standard input, line {}: not UTF-8, which no value of a record is (records are JSON); save the list as UTF-8",
                    i + 1
                )),
                _ => CmdError::Read {
                    path: "standard input".into(),
                    source,
                },
            })?;
            // A list saved by a Windows editor ends its lines with CR LF
            // and may start with a byte order mark: neither is part of a
            // value, and either would give a pseudonym no row holds.
            let value = line.strip_suffix('\r').unwrap_or(&line);
            let value = match i {
                0 => value.strip_prefix('\u{feff}').unwrap_or(value),
                _ => value,
            };
            written = write(value);
            if written.is_err() {
                break;
            }
        }
        written
    } else {
        args.values.iter().try_for_each(|v| write(v))
    };
    super::stdout_written(written).map_err(CmdError::Usage)?;
    Ok(EXIT_CLEAN)
}

fn keygen(args: &KeygenArgs) -> Result<u8, CmdError> {
    let (private, public) = keys::generate(&args.out)?;
    // Read back: the fingerprint is the one of the file verify will read.
    let fingerprints: Vec<String> = keys::load_public_keys(&public)?
        .iter()
        .map(|(_, k)| keys::fingerprint(k))
        .collect();
    println!(
        "wrote {} (private, keep it secret; [audit] signing_key_file) and {} (public, for audit verify --public-key)",
        private.display(),
        public.display()
    );
    println!("public key fingerprint: {}", fingerprints.join(", "));
    Ok(EXIT_CLEAN)
}

fn verify(args: &AuditVerifyArgs) -> Result<u8, CmdError> {
    let topic = topic_source(args)?;
    let report = verify_trail(args, topic.as_ref())?;
    if args.json {
        // Indented for a person at a terminal; one line for a log
        // collector (a scheduled job's log), which takes a line as a record.
        let json = crate::terminal::to_json(&report, std::io::stdout().is_terminal());
        println!("{}", json.unwrap_or_default());
    } else {
        print_report(&report);
    }
    Ok(if report.ok() {
        EXIT_CLEAN
    } else {
        EXIT_PROBLEM
    })
}

/// How verify reaches an audit topic: the settings its Kafka readers start
/// from (`crate::kafka::client::reader`) and the topic.
pub struct TopicSource {
    pub client: ClientConfig,
    pub audit: String,
}

/// Where `args` says the trail is: its files (`None`), or the audit topic
/// of the cluster its configuration layers reach (the workers' own file,
/// `GROUNDGATE_*` variables, then the flags, as for `run`).
fn topic_source(args: &AuditVerifyArgs) -> Result<Option<TopicSource>, CmdError> {
    let kafka_flags = args.brokers.is_some()
        || args.config.is_some()
        || !args.kafka_property.is_empty()
        || args.input_topic.is_some();
    if !args.files.is_empty() {
        return if kafka_flags {
            Err(CmdError::FilesAndTopic)
        } else {
            Ok(None)
        };
    }
    // Nothing names a cluster: most likely the files were forgotten.
    if !kafka_flags && crate::config::env_layer_names().is_empty() {
        return Err(CmdError::Source);
    }
    let flags = ClientFlags {
        brokers: args.brokers.clone(),
        config: args.config.clone(),
        kafka_property: args.kafka_property.clone(),
        ..ClientFlags::default()
    }
    .raw_layer()
    .map_err(CmdError::Usage)?;
    let features = crate::kafka::client::library().features;
    let config = RawConfig::load_for_kafka(
        args.config.as_deref(),
        flags,
        &crate::config::Librdkafka {
            features: &features,
            refuses: &crate::kafka::client::refuses,
            clients: &crate::kafka::client::refuses_clients,
        },
    )?;
    // librdkafka's own errors (a refused TLS handshake, a failed SASL
    // login) go to stderr, where the report does not.
    super::init_logging(config.log.format, &config.log.level);
    let Some(bootstrap) = config.kafka.brokers.clone() else {
        return Err(CmdError::Source);
    };
    Ok(Some(TopicSource {
        client: crate::kafka::client::reader(&config.kafka, &bootstrap),
        audit: args
            .topic
            .clone()
            .unwrap_or_else(|| config.kafka.topics.audit.clone()),
    }))
}

/// The readers of verify: their client errors are logged (rate-limited).
type Reader = BaseConsumer<LogContext>;

/// Reads the trail of `args`'s files, or of `topic` when given, and
/// verifies it; prints nothing (a progress bar on a terminal aside).
/// `demo` verifies its own trail with it.
pub fn verify_trail(
    args: &AuditVerifyArgs,
    topic: Option<&TopicSource>,
) -> Result<Report, CmdError> {
    if let (Some(from), Some(to)) = (args.from, args.to)
        && from > to
    {
        return Err(CmdError::EmptyRange { from, to });
    }
    let keys = keys::load_keyring(&args.public_key)?;
    let input_side = topic.zip(args.input_topic.as_deref());
    let anchors = match input_side {
        Some((t, input)) => read_anchors(&t.client, input, args)?,
        None => BTreeMap::new(),
    };
    let options = Options {
        keys,
        from: args.from,
        to: args.to,
        anchors,
        input_topic: args.input_topic.clone(),
        allow_unsealed_tail: args.allow_unsealed_tail,
        allow_empty: args.allow_empty,
    };
    let mut report = read_and_judge(args, topic, options)?;
    crate::audit::verify::expect_runs(&mut report, &args.runs);
    Ok(report)
}

/// The trail of `args`'s files or of `topic`, judged under `options`
/// (and against the input topic, when one is given).
fn read_and_judge(
    args: &AuditVerifyArgs,
    topic: Option<&TopicSource>,
    options: Options,
) -> Result<Report, CmdError> {
    let Some(t) = topic else {
        if args.files.is_empty() {
            return Err(CmdError::Source);
        }
        return judge_files(&args.files, options);
    };
    if !args.files.is_empty() {
        return Err(CmdError::FilesAndTopic);
    }
    let mut v = AuditVerifier::new(options);
    read_topic(&mut v, &t.client, &t.audit)?;
    let Some(input) = args.input_topic.as_deref() else {
        return Ok(v.finish());
    };
    // Read after the trail: a row for a record written while the trail was
    // read is no ghost.
    for (partition, end) in input_ends(&t.client, input)? {
        let id = ChainId {
            topic: input.to_string(),
            partition,
        };
        v.input_end(id, end);
    }
    let mut report = v.finish();
    let handed = read_handed(&t.client, input, &crate::audit::verify::gaps(&report))?;
    crate::audit::verify::narrow(&mut report, &handed);
    Ok(report)
}

/// The most input offsets read over the gaps of one verification: a trail
/// missing rows across more offsets than this is reported on the gaps past
/// it as found.
const MAX_GAP_READ: i64 = 10_000_000;

/// Reads the input topic over the gaps the way a worker reads it
/// (`read_committed`), to learn which of their offsets hold a record a
/// worker is handed: the others are transaction markers and records of
/// aborted transactions, which no worker receives. A partition is read
/// once, from its first gap to its last (a marker may follow every few
/// records, so a gap at a time would cost a fetch each), and only from its
/// first offset (earlier ones are deleted and cannot be told apart) up to
/// its last stable offset (an open transaction's records are not readable
/// yet).
fn read_handed(
    client: &ClientConfig,
    input: &str,
    gaps: &[(ChainId, (i64, i64))],
) -> Result<BTreeMap<ChainId, Handed>, CmdError> {
    // Per partition, its gaps in offset order.
    let mut spans: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    for (id, gap) in gaps.iter().filter(|(id, _)| id.topic == input) {
        spans.entry(id.partition).or_default().push(*gap);
    }
    let mut handed: BTreeMap<ChainId, Handed> = BTreeMap::new();
    if spans.is_empty() {
        return Ok(handed);
    }
    let consumer: Reader = client
        .clone()
        .set("isolation.level", "read_committed")
        .set("enable.partition.eof", "true")
        .set("auto.offset.reset", "error")
        .create_with_context(LogContext::loud())?;
    let timeout = Duration::from_secs(10);
    let mut budget = MAX_GAP_READ;
    for (partition, gaps) in spans {
        // A chain's gaps come in offset order and do not overlap.
        let (Some(&(a, _)), Some(&(_, b))) = (gaps.first(), gaps.last()) else {
            continue;
        };
        // With read_committed the upper bound is the last stable offset.
        let (first, stable) = consumer.fetch_watermarks(input, partition, timeout)?;
        let from = a.max(first);
        let to = b.min(stable - 1).min(from.saturating_add(budget - 1));
        if from > to {
            continue;
        }
        budget -= to - from + 1;
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(input, partition, Offset::Offset(from))?;
        consumer.assign(&tpl)?;
        // Only the offsets in a gap are kept: those are rows lost.
        let mut offsets: Vec<i64> = Vec::new();
        let mut g = 0;
        let through = loop {
            match consumer.poll(timeout) {
                // Fetched for a partition read before this one.
                Some(Ok(m)) if m.partition() != partition => {}
                Some(Ok(m)) => {
                    let o = m.offset();
                    while gaps.get(g).is_some_and(|gap| gap.1 < o) {
                        g += 1;
                    }
                    if (from..=to).contains(&o) && gaps.get(g).is_some_and(|gap| gap.0 <= o) {
                        offsets.push(o);
                    }
                    if o >= to {
                        break true;
                    }
                }
                // Everything below the last stable offset read when the
                // span was set has been handed out.
                Some(Err(rdkafka::error::KafkaError::PartitionEOF(p))) if p == partition => {
                    break true;
                }
                Some(Err(rdkafka::error::KafkaError::PartitionEOF(_))) => {}
                Some(Err(e)) => return Err(e.into()),
                // Not read through in time: the gaps stay as found.
                None => break false,
            }
        };
        if through {
            let id = ChainId {
                topic: input.to_string(),
                partition,
            };
            handed.insert(
                id,
                Handed {
                    read: vec![(from, to)],
                    offsets,
                },
            );
        }
        if budget == 0 {
            break;
        }
    }
    Ok(handed)
}

/// The longest line of a trail file that is read: far above any audit row
/// or seal groundgate writes, so a longer one is not a row, and a file of
/// one endless line costs no more memory than this.
const MAX_TRAIL_LINE: usize = 64 << 20;

/// Reads the trail file `path` into `v` as a stream of its own, showing
/// `also` each line's length and bytes (none for an over-long line).
fn read_file(
    v: &mut AuditVerifier,
    path: &Path,
    mut also: impl FnMut(u64, &[u8]),
) -> Result<(), CmdError> {
    let stream = v.stream(path.display().to_string());
    each_line(path, |n, len, line| {
        also(len, line);
        record_line(v, stream, n, len, line, MAX_TRAIL_LINE);
    })
}

/// Hands line `n` of `stream` (`len` bytes, read as `line` unless longer
/// than `max`) to the verifier: an over-long line is reported as such, an
/// empty one is skipped.
pub(crate) fn record_line(
    v: &mut AuditVerifier,
    stream: u32,
    n: u64,
    len: u64,
    line: &[u8],
    max: usize,
) {
    let at = Location { stream, pos: n };
    if len > max as u64 {
        v.oversized(at, len, max);
    } else if !line.is_empty() {
        v.record(at, line);
    }
}

/// Calls `f(line number, length, bytes)` for every line of a trail file,
/// plain or compressed; a line longer than [`MAX_TRAIL_LINE`] comes with
/// its length and without its bytes.
fn each_line(path: &Path, f: impl FnMut(u64, u64, &[u8])) -> Result<(), CmdError> {
    let err = |source| CmdError::Read {
        path: path.to_path_buf(),
        source,
    };
    // Archived trails are often compressed: gzip and zstd are read as is.
    let input = crate::batch::input::open(path).map_err(|e| match e {
        crate::batch::InputError::Open { source, .. }
        | crate::batch::InputError::Read { source, .. } => err(source),
        other => err(std::io::Error::other(other.to_string())),
    })?;
    lines_of(BufReader::new(input.reader), MAX_TRAIL_LINE, f).map_err(err)
}

/// Calls `f(line number, length, bytes)` for every line `reader` holds; a
/// line longer than `max` comes with its length and without its bytes. A
/// line of a framed value ends past its 5-byte header, whatever bytes its
/// schema id holds, as `check` reads its inputs.
pub(crate) fn lines_of(
    mut reader: impl std::io::BufRead,
    max: usize,
    mut f: impl FnMut(u64, u64, &[u8]),
) -> std::io::Result<()> {
    let mut line = Vec::new();
    let mut n = 0u64;
    loop {
        line.clear();
        let Some(len) = crate::batch::input::read_value_line_bounded(&mut reader, &mut line, max)?
        else {
            return Ok(());
        };
        n += 1;
        let bytes: &[u8] = if len > max as u64 { &[] } else { &line };
        f(n, len, bytes);
    }
}

/// The trail of `files`, judged under `options`. A run of `check` names
/// each chain after its input file, so two runs over inputs of the same
/// name write chains of the same name: read together they would be one
/// chain, sealed twice. When every file's seals name one run (as each
/// `audit.jsonl` of `check` does) and the files hold several runs, each
/// run's files are verified apart. Any other file (a worker's trail, a
/// file of no seal, or of seals of several runs) keeps them all in one
/// group, so no file is judged without a file it may belong with.
///
/// The first read judges the files as one group, which is the verdict
/// whenever they are one; only a trail of several runs is read again, a
/// run at a time. A file must then read the same both times: one that
/// changed in between, or a pipe (read once, it is empty the second time),
/// is an error rather than a verdict on bytes that were never judged.
fn judge_files(files: &[PathBuf], options: Options) -> Result<Report, CmdError> {
    let mut whole = AuditVerifier::new(options.clone());
    let mut runs_of = Vec::with_capacity(files.len());
    let mut digests = Vec::with_capacity(files.len());
    // One file is one group: it is never read twice.
    let several = files.len() > 1;
    for path in files {
        let mut runs = std::collections::BTreeSet::new();
        let mut digest = FileDigest::default();
        read_file(&mut whole, path, |len, line| {
            if let Some(run) = crate::audit::verify::seal_run(line) {
                runs.insert(run);
            }
            if several {
                digest.line(len, line);
            }
        })?;
        let mut runs = runs.into_iter();
        runs_of.push(match (runs.next(), runs.next()) {
            (Some(Some(run)), None) => Some(run),
            _ => None,
        });
        digests.push(digest.finish());
    }
    let Some(groups) = run_groups(&runs_of) else {
        return Ok(Report::merge(vec![whole.finish()]));
    };
    drop(whole);
    let mut parts = Vec::with_capacity(groups.len());
    for group in groups {
        let mut v = AuditVerifier::new(options.clone());
        for i in group {
            let path = &files[i];
            let mut digest = FileDigest::default();
            read_file(&mut v, path, |len, line| digest.line(len, line))?;
            if digest.finish() != digests[i] {
                return Err(CmdError::ReadTwice {
                    path: path.clone(),
                    pipe: !crate::batch::input::reopens(path),
                });
            }
        }
        parts.push(v.finish());
    }
    Ok(Report::merge(parts))
}

/// The files (by index) of each run, in the order runs are named, when
/// every file's seals name exactly one run and the files hold two runs or
/// more; `None` when the files are verified as one group.
fn run_groups(runs_of: &[Option<String>]) -> Option<Vec<Vec<usize>>> {
    let mut by_run: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, run) in runs_of.iter().enumerate() {
        by_run.entry(run.as_deref()?).or_default().push(i);
    }
    (by_run.len() > 1).then(|| by_run.into_values().collect())
}

/// A digest of the lines read from a file (each line's length and bytes),
/// to tell whether a second read saw what the first one did.
#[derive(Default)]
struct FileDigest(sha2::Sha256);

impl FileDigest {
    fn line(&mut self, len: u64, line: &[u8]) {
        use sha2::Digest;
        self.0.update(len.to_le_bytes());
        self.0.update(line);
    }

    fn finish(self) -> [u8; 32] {
        use sha2::Digest;
        self.0.finalize().into()
    }
}

/// Reads every partition of the audit topic from its low to its high
/// watermark (as of the start of the read), so the run ends.
fn read_topic(v: &mut AuditVerifier, client: &ClientConfig, topic: &str) -> Result<(), CmdError> {
    let consumer: Reader = client
        .clone()
        .set("isolation.level", "read_committed")
        .create_with_context(LogContext::loud())?;
    let mut read = RangeRead::open(consumer, topic, None, None).map_err(range_error)?;
    let mut messages = 0;
    let mut streams = HashMap::new();
    for s in read.spans().iter().filter(|s| s.end > s.from) {
        messages += s.end - s.from;
        streams.insert(s.partition, v.stream(format!("{topic}/{}", s.partition)));
    }
    let bar = topic_progress(messages);
    while let Some(msg) = read.next_record()? {
        if let Some(b) = &bar {
            b.inc(1);
        }
        if let Some(&stream) = streams.get(&msg.partition()) {
            v.record_from_topic(
                Location {
                    stream,
                    pos: msg.offset() as u64,
                },
                msg.payload().unwrap_or_default(),
                &record_headers(&msg),
            );
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(())
}

/// A topic read's error as verify reports it.
fn range_error(e: RangeError) -> CmdError {
    match e {
        // Verify reads every partition: it asks for none that could be absent.
        RangeError::NoTopic(topic) | RangeError::NoPartition { topic, .. } => {
            CmdError::NoTopic(topic)
        }
        RangeError::Kafka(e) => CmdError::Kafka(e),
    }
}

/// The groundgate headers of an audit topic's message.
fn record_headers(msg: &BorrowedMessage<'_>) -> RecordHeaders {
    let mut h = RecordHeaders::default();
    for (key, value) in crate::kafka::client::headers_of(msg) {
        let slot = match key.as_ref() {
            H_INPUT_TOPIC => &mut h.input_topic,
            H_INPUT_PARTITION => &mut h.input_partition,
            H_INPUT_OFFSET => &mut h.input_offset,
            H_SEAL => &mut h.seal,
            _ => continue,
        };
        slot.push(String::from_utf8_lossy(value.unwrap_or_default()).into_owned());
    }
    h
}

/// What the input side says per input partition: the offsets the input
/// topic holds in `from..=to` and, with a consumer group, its committed
/// offsets and the chain heads committed with them (see
/// [`crate::kafka::seals::decode_head`]).
fn read_anchors(
    client: &ClientConfig,
    input: &str,
    args: &AuditVerifyArgs,
) -> Result<BTreeMap<ChainId, Anchor>, CmdError> {
    let group = args.group.as_deref();
    // Reading committed offsets does not join the group: the workers'
    // assignments are left alone.
    let mut client = client.clone();
    if let Some(group) = group {
        client.set("group.id", group);
    }
    let consumer: Reader = client.create_with_context(LogContext::loud())?;
    let timeout = Duration::from_secs(10);
    let ids = partitions(&consumer, input)?;
    let mut committed = BTreeMap::new();
    if group.is_some() {
        let mut tpl = TopicPartitionList::new();
        for &p in &ids {
            tpl.add_partition(input, p);
        }
        let got = consumer.committed_offsets(tpl, timeout)?;
        for e in got.elements() {
            if let Offset::Offset(o) = e.offset() {
                let metadata = metadata_bytes(&got, input, e.partition());
                let head = read_head(&metadata).map_err(|r| r.as_str());
                committed.insert(e.partition(), (o, head));
            }
        }
        // The anchor asked for is absent; verify goes on without it, as a
        // group that has not committed yet is no problem of the trail, but
        // a mistyped group name would otherwise pass unnoticed.
        if let (Some(group), true) = (group, committed.is_empty()) {
            eprintln_lossy!(
                "groundgate audit verify: group {} has committed no offset of {}: nothing anchors the trail (the range ends at the input topic's end and no chain head is checked); if the workers' group is another (their kafka.group_id), give that one to --group",
                Escaped(group),
                Escaped(input)
            );
        }
    }
    // A time is the first offset written at or after it; the end of a time
    // range is the offset before the first one written after it.
    let since = match args.from_time {
        Some(t) => Some(offsets_at(&consumer, input, &ids, t, timeout)?),
        None => None,
    };
    let until = match args.to_time {
        Some(t) => Some(offsets_at(
            &consumer,
            input,
            &ids,
            t + Duration::from_millis(1),
            timeout,
        )?),
        None => None,
    };
    let mut anchors = BTreeMap::new();
    for &p in &ids {
        let (lo, hi) = consumer.fetch_watermarks(input, p, timeout)?;
        let done = committed.get(&p).cloned();
        let (from, to) = time_bounds(
            (args.from, args.to),
            since.as_ref().map(|m| m.get(&p).copied().flatten()),
            until.as_ref().map(|m| m.get(&p).copied().flatten()),
            hi,
        );
        let anchor = anchor_for((lo, hi), from, to, done);
        let id = ChainId {
            topic: input.to_string(),
            partition: p,
        };
        anchors.insert(id, anchor);
    }
    Ok(anchors)
}

/// The high watermark of every partition of the input topic.
fn input_ends(client: &ClientConfig, input: &str) -> Result<Vec<(i32, i64)>, CmdError> {
    let consumer: Reader = client.create_with_context(LogContext::loud())?;
    let timeout = Duration::from_secs(10);
    partitions(&consumer, input)?
        .into_iter()
        .map(|p| Ok((p, consumer.fetch_watermarks(input, p, timeout)?.1)))
        .collect()
}

/// The partition ids of `topic`; an absent or partitionless topic is an error.
fn partitions(consumer: &Reader, topic: &str) -> Result<Vec<i32>, CmdError> {
    crate::kafka::range_read::partitions(consumer, topic).map_err(range_error)
}

/// Per partition, the first offset whose record timestamp is at or after
/// `at` (`None`: no record that late).
fn offsets_at(
    consumer: &Reader,
    topic: &str,
    partitions: &[i32],
    at: SystemTime,
    timeout: Duration,
) -> Result<HashMap<i32, Option<i64>>, CmdError> {
    let ms = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let mut tpl = TopicPartitionList::new();
    for &p in partitions {
        tpl.add_partition_offset(topic, p, Offset::Offset(ms))?;
    }
    let found = consumer.offsets_for_times(tpl, timeout)?;
    Ok(found
        .elements()
        .iter()
        .map(|e| match e.offset() {
            Offset::Offset(o) => (e.partition(), Some(o)),
            _ => (e.partition(), None),
        })
        .collect())
}

/// The offset range to check in one partition from `--from/--to` and the
/// offsets the times were found at (outer `None`: no such time given;
/// inner `None`: no record at or after that time). `hi`: the high watermark.
fn time_bounds(
    (from, to): (Option<i64>, Option<i64>),
    since: Option<Option<i64>>,
    until: Option<Option<i64>>,
    hi: i64,
) -> (Option<i64>, Option<i64>) {
    let from = match since {
        // Nothing written that late: the range starts past the end.
        Some(first) => Some(first.unwrap_or(hi).max(from.unwrap_or(i64::MIN))),
        None => from,
    };
    let to = match until {
        Some(after) => Some((after.unwrap_or(hi) - 1).min(to.unwrap_or(i64::MAX))),
        None => to,
    };
    (from, to)
}

/// One partition's anchor from its watermarks (`lo..hi`, `hi` exclusive),
/// the requested range and, with a group, what it committed (`None`:
/// nothing, or no group given).
fn anchor_for(
    (lo, hi): (i64, i64),
    from: Option<i64>,
    to: Option<i64>,
    committed: Option<(i64, Result<ChainHead, &'static str>)>,
) -> Anchor {
    // A group that committed nothing of the partition (a mistyped group
    // name, say) vouches for nothing: the input topic's watermarks alone
    // then say what is owed a row, as without --group.
    let mut last = hi - 1;
    if let Some((c, _)) = committed {
        last = last.min(c - 1);
    }
    let first = from.map_or(lo, |f| f.max(lo));
    let last = to.map_or(last, |t| t.min(last));
    Anchor {
        cover: (first <= last).then_some((first, last)),
        committed: committed.map(|(c, _)| c),
        head: committed.and_then(|(_, h)| h.ok()),
        head_unreadable: committed.and_then(|(_, h)| h.err()),
        end: None,
    }
}

/// A bar on stderr over the topic's messages (offsets between the
/// watermarks, so transaction markers count too), when stderr is a
/// terminal; nothing otherwise, so pipes and logs stay clean.
fn topic_progress(messages: i64) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(
        Some(u64::try_from(messages).unwrap_or(0)),
        ProgressDrawTarget::stderr(),
    );
    let style = ProgressStyle::with_template(
        "{bar:30} {human_pos}/{human_len} audit records, {elapsed} elapsed, ETA {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    Some(bar)
}

/// Problems the text report lists; a trail damaged throughout can have
/// one per line, which `--json` keeps.
const LISTED_PROBLEMS: usize = 100;

/// The table `audit verify` prints (`demo` prints it for a trail that fails).
pub fn print_report(r: &Report) {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    // Runs of `check` over inputs of the same name have chains of the same
    // name: the run tells them apart.
    let by_run = r.runs.len() > 1;
    let mut header = vec![
        "topic",
        "partition",
        "offsets",
        "rows",
        "sealed",
        "seals",
        "redelivered",
        "reseals",
        "unsealed tail",
        "gaps",
    ];
    if by_run {
        header.insert(2, "run");
    }
    t.set_header(header);
    for c in &r.chains {
        let range = match (c.first_offset, c.last_offset) {
            (Some(a), Some(b)) => format!("{a}..={b}"),
            _ => "-".into(),
        };
        // A trail under verification may have been written by anyone: every
        // name read from it is shown escaped, so it cannot redraw the report.
        let mut row = vec![escape(&c.topic).into_owned(), c.partition.to_string()];
        if by_run {
            // A run id read from the trail may be anything: cut by character.
            let id: String = c.run.as_deref().unwrap_or("-").chars().take(8).collect();
            row.push(escape(&id).into_owned());
        }
        row.extend([
            range,
            c.rows.to_string(),
            c.sealed_rows.to_string(),
            c.seals.to_string(),
            c.redeliveries.to_string(),
            c.reseals.to_string(),
            c.unsealed_tail.to_string(),
            c.gaps.len().to_string(),
        ]);
        t.add_row(row);
    }
    println!("{t}");
    println!(
        "{} records read; signatures {}",
        r.records,
        if r.signatures_checked {
            "checked"
        } else {
            "not checked (no --public-key)"
        }
    );
    for line in key_lines(r) {
        println!("{line}");
    }
    print_runs(r);
    let undelivered: u64 = r.chains.iter().map(|c| c.undelivered).sum();
    if undelivered > 0 {
        println!(
            "{undelivered} input offset(s) without a row hold no record a worker reads \
             (transaction markers, aborted records): no row is owed for them"
        );
    }
    let rows: u64 = r.chains.iter().map(|c| c.rows).sum();
    if r.empty_allowed && rows == 0 && r.ok() {
        println!("no audit row, and the input topic owes none (--allow-empty)");
    }
    let tail: u64 = r.chains.iter().map(|c| c.unsealed_tail).sum();
    if r.unsealed_tail_allowed && tail > 0 {
        println!("{tail} row(s) after the last seals accepted as a live tail: not vouched for yet");
    }
    if r.ok() {
        if r.signatures_checked {
            println!("verified: no integrity, completeness or authenticity problem");
        } else {
            println!(
                "verified: no integrity or completeness problem (authenticity not checked: pass --public-key to check the seals' signatures)"
            );
        }
        return;
    }
    let mut p = Table::new();
    p.load_style(UTF8_FULL_CONDENSED);
    p.set_header(vec![
        "problem",
        "topic/partition",
        "input offsets",
        "seal",
        "at",
        "detail",
    ]);
    for x in r.problems.iter().take(LISTED_PROBLEMS) {
        p.add_row(vec![
            x.kind.to_string(),
            match (&x.topic, x.partition) {
                (Some(t), Some(n)) => format!("{}/{n}", Escaped(t)),
                _ => "-".into(),
            },
            x.offsets
                .map(|(a, b)| {
                    if a == b {
                        a.to_string()
                    } else {
                        format!("{a}..={b}")
                    }
                })
                .unwrap_or_else(|| "-".into()),
            x.seal_seq
                .map(|s| s.to_string())
                .unwrap_or_else(|| "-".into()),
            x.at.map(|a| escape(&r.location(a)).into_owned())
                .unwrap_or_else(|| "-".into()),
            escape(&x.detail).into_owned(),
        ]);
    }
    println!("{p}");
    let n = r.problems.len();
    if n > LISTED_PROBLEMS {
        println!(
            "… and {} more: --json lists every problem",
            n - LISTED_PROBLEMS
        );
    }
    let unreadable = r
        .problems
        .iter()
        .filter(|x| x.kind == ProblemKind::Unreadable)
        .count() as u64;
    if r.records > 0 && unreadable == r.records {
        println!(
            "none of the {} line(s) read is an audit row or a seal: audit verify reads `check`'s audit.jsonl or an export of the audit topic",
            r.records
        );
    }
    println!("{n} problem(s) found");
}

/// Places a key signed again after a newer key that the text report lists
/// per key; `--json` lists them all.
const LISTED_SIGNED_AGAIN: usize = 10;

/// What each public key given signed: a key that signed nothing is listed
/// too, since a key expected to sign may have been left out of the rollout.
fn key_lines(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for k in &r.keys {
        let signed = match (&k.first, &k.last) {
            (Some(first), Some(last)) => format!(
                "{} seal(s), first {}, last {}",
                k.seals,
                seal_name(first),
                seal_name(last)
            ),
            _ => "signed no seal of the trail".into(),
        };
        out.push(format!(
            "key {} ({}, block {}): {signed}",
            k.fingerprint,
            Escaped(&k.file),
            k.block
        ));
        for again in k.signed_again.iter().take(LISTED_SIGNED_AGAIN) {
            out.push(format!(
                "  signed again after {} had signed: {} at {}",
                again.after,
                seal_name(&again.seal),
                escape(&r.location(again.seal.at))
            ));
        }
        let more = k.signed_again.len().saturating_sub(LISTED_SIGNED_AGAIN);
        if more > 0 {
            out.push(format!("  … and {more} more: --json lists them all"));
        }
    }
    out
}

/// `topic/partition seal N (time)`, with the run's id start for a seal of
/// `check` that names one.
fn seal_name(s: &SealRef) -> String {
    let mut name = format!("{}/{} seal {}", Escaped(&s.topic), s.partition, s.seq);
    if let Some(run) = &s.run {
        // A run id read from the trail may be anything: cut by character.
        let id: String = run.chars().take(8).collect();
        name.push_str(&format!(" of run {}", Escaped(&id)));
    }
    if let Some(time) = &s.time {
        name.push_str(&format!(" ({time})"));
    }
    name
}

/// The `check` runs the trail's chains belong to, and the chains of
/// `check`'s that name none.
fn print_runs(r: &Report) {
    for run in &r.runs {
        let stated = run
            .inputs
            .map_or_else(|| "?".to_string(), |n| n.to_string());
        println!(
            "run {}: {} of {stated} input chain(s) in the trail",
            Escaped(&run.run),
            run.chains
        );
    }
    if !r.unbound_chains.is_empty() {
        println!(
            "not bound to a run (sealed by a `check` whose seals name no run; a whole chain signed with the same key could stand in for one): {}",
            Escaped(&r.unbound_chains.join(", "))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_deleted_under_the_reader_are_named_as_such() {
        use rdkafka::error::KafkaError;
        use rdkafka::types::RDKafkaErrorCode as C;
        let deleted = CmdError::Kafka(KafkaError::MessageConsumption(C::AutoOffsetReset));
        assert!(
            deleted.to_string().contains("no longer on the topic"),
            "{deleted}"
        );
        let down = CmdError::Kafka(KafkaError::MessageConsumption(C::AllBrokersDown));
        assert!(
            !down.to_string().contains("no longer on the topic"),
            "{down}"
        );
    }

    #[test]
    fn each_key_says_what_it_signed_and_where_it_signed_again() {
        use crate::audit::verify::{KeyReport, SignedAgain};
        let seal = |seq, ts: i64, pos| SealRef {
            topic: "answers".into(),
            partition: 3,
            run: None,
            seq,
            ts: Some(ts),
            time: Some(format!("2026-11-27T10:00:0{ts}.000Z")),
            at: Location { stream: 0, pos },
        };
        let again = |seq| SignedAgain {
            seal: seal(seq, 5, 40 + seq),
            after: "SHA256:bb".into(),
        };
        let r = Report {
            streams: vec!["audit.jsonl".into()],
            keys: vec![
                KeyReport {
                    fingerprint: "SHA256:aa".into(),
                    file: "keys/ring.pem".into(),
                    block: 1,
                    seals: 14,
                    first: Some(seal(0, 1, 2)),
                    last: Some(seal(20, 9, 90)),
                    signed_again: (2..14).map(again).collect(),
                },
                KeyReport {
                    fingerprint: "SHA256:cc".into(),
                    file: "keys/ring.pem".into(),
                    block: 3,
                    ..KeyReport::default()
                },
            ],
            ..Report::default()
        };
        let lines = key_lines(&r);
        assert_eq!(
            lines[0],
            "key SHA256:aa (keys/ring.pem, block 1): 14 seal(s), first answers/3 seal 0 (2026-11-27T10:00:01.000Z), last answers/3 seal 20 (2026-11-27T10:00:09.000Z)"
        );
        assert_eq!(
            lines[1],
            "  signed again after SHA256:bb had signed: answers/3 seal 2 (2026-11-27T10:00:05.000Z) at audit.jsonl:42"
        );
        assert_eq!(lines[11], "  … and 2 more: --json lists them all");
        assert_eq!(
            lines[12],
            "key SHA256:cc (keys/ring.pem, block 3): signed no seal of the trail"
        );
        assert_eq!(lines.len(), 13);
    }

    #[test]
    fn times_narrow_the_range_per_partition() {
        // No time: --from/--to as given.
        assert_eq!(
            time_bounds((Some(3), None), None, None, 50),
            (Some(3), None)
        );
        // Records from offset 10 on are at or after --from-time; the first
        // record after --to-time is at 20.
        assert_eq!(
            time_bounds((None, None), Some(Some(10)), Some(Some(20)), 50),
            (Some(10), Some(19))
        );
        // --from/--to still narrow further.
        assert_eq!(
            time_bounds((Some(12), Some(15)), Some(Some(10)), Some(Some(20)), 50),
            (Some(12), Some(15))
        );
        // Nothing that late: starts past the end; nothing after --to-time:
        // up to the last record.
        assert_eq!(
            time_bounds((None, None), Some(None), Some(None), 50),
            (Some(50), Some(49))
        );
        let a = anchor_for((0, 50), Some(50), Some(49), None);
        assert_eq!(a.cover, None);
    }

    #[test]
    fn the_anchor_covers_what_the_topic_holds_up_to_the_commit() {
        let head = ChainHead {
            next_seq: 3,
            prev: [7; 32],
        };
        // Topic alone: everything between the watermarks.
        let a = anchor_for((5, 20), None, None, None);
        assert_eq!((a.cover, a.committed, a.head), (Some((5, 19)), None, None));
        // With a group: only what it committed, and its head.
        let a = anchor_for((5, 20), None, None, Some((12, Ok(head))));
        assert_eq!(
            (a.cover, a.committed, a.head),
            (Some((5, 11)), Some(12), Some(head))
        );
        // A group that committed nothing of the partition vouches for
        // nothing: the topic alone says what is owed, as without a group.
        assert_eq!(anchor_for((5, 20), None, None, None).cover, Some((5, 19)));
        // --from / --to narrow it; an empty topic or range covers nothing.
        assert_eq!(
            anchor_for((5, 20), Some(8), Some(9), None).cover,
            Some((8, 9))
        );
        assert_eq!(
            anchor_for((5, 20), Some(0), Some(100), None).cover,
            Some((5, 19))
        );
        assert_eq!(anchor_for((7, 7), None, None, None).cover, None);
        assert_eq!(anchor_for((5, 20), Some(30), None, None).cover, None);
    }
}
