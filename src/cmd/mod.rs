//! The subcommands, one file each: read the flags and the configuration,
//! set up logging, signals and the HTTP endpoints, call the library, and
//! turn the outcome into an exit code. `anyhow` is used here and in
//! `main.rs` only; everything below returns typed errors.
//!
//! Nothing here decides a verdict or talks the Kafka protocol itself.

/// `eprintln!` that gives up quietly. Standard error carries notes for
/// people; when it cannot be written (a full disk, `2>&1 | head` whose
/// reader is gone), `eprintln!` panics, and a panic while reporting that
/// panic aborts a run whose outputs may already be in place. Defined
/// before the modules below so that they all see it.
macro_rules! eprintln_lossy {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod audit;
pub mod bench;
pub mod check;
pub mod demo;
pub mod dev_broker;
pub mod eval;
pub mod produce;
pub mod replay;
pub mod run;
pub mod schema;

use std::sync::Once;

use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use crate::config::LogFormat;

/// Exit code after a second signal: stop now, drain nothing.
pub const EXIT_INTERRUPTED: i32 = 130;

/// Installs the global tracing subscriber once (later calls are no-ops, so
/// in-process demos and tests can call it freely).
pub fn init_logging(format: LogFormat, level: &str) {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::try_new(level)
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
        // Colours only for a person at a terminal, never in files or collectors.
        let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(ansi)
            .with_writer(std::io::stderr);
        let _ = match format {
            LogFormat::Json => builder.json().flatten_event(true).try_init(),
            LogFormat::Human => builder.fmt_fields(HumanFields).try_init(),
        };
    });
}

/// How the human log format writes an event's fields: the message, then
/// `name=value` pairs, every value escaped by [`crate::terminal::escape`].
/// A value can quote text from outside (a broker's error message, a
/// topic's name): a newline or carriage return in it must not start or
/// overwrite a log line, and an escape sequence must not reach the
/// terminal. The `log.*` fields that records of the `log` crate carry
/// (librdkafka's Rust binding logs through it) repeat the line's target and
/// are left out, as the default format does. (The JSON format needs none
/// of this: each event is one JSON line.)
struct HumanFields;

impl<'w> tracing_subscriber::fmt::FormatFields<'w> for HumanFields {
    fn format_fields<R: tracing_subscriber::field::RecordFields>(
        &self,
        writer: tracing_subscriber::fmt::format::Writer<'w>,
        fields: R,
    ) -> std::fmt::Result {
        let mut visitor = EscapedFields {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct EscapedFields<'w> {
    writer: tracing_subscriber::fmt::format::Writer<'w>,
    first: bool,
    result: std::fmt::Result,
}

impl tracing::field::Visit for EscapedFields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let name = field.name();
        if self.result.is_err() || name.starts_with("log.") {
            return;
        }
        let text = format!("{value:?}");
        let text = crate::terminal::escape(&text);
        let gap = if std::mem::take(&mut self.first) {
            ""
        } else {
            " "
        };
        self.result = match name {
            "message" => write!(self.writer, "{gap}{text}"),
            name => write!(self.writer, "{gap}{name}={text}"),
        };
    }
}

/// Longest panic message a report quotes: a message can quote text it was
/// handed (a slice of a record), which belongs in no log at any length.
const PANIC_MESSAGE_BYTES: usize = 1_000;

/// Reports every panic where the command's other messages go, instead of
/// the default report (several raw lines on stderr): once logging is set
/// up, as one error event in the configured format, so a JSON log stays one
/// object a line; before that, as one escaped line on stderr. Either way a
/// message that quotes outside text cannot forge a log line or reach a
/// terminal as control sequences. A panic is a defect in groundgate: where
/// it happens while a record is judged, the record still becomes an
/// `internal` dead letter; elsewhere the command stops.
pub fn report_panics() {
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let report = PanicReport {
            message: crate::core::process::panic_text(info.payload()),
            location: info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default(),
            thread: thread.name().unwrap_or("unnamed"),
            backtrace: std::backtrace::Backtrace::capture(),
        };
        if tracing::dispatcher::has_been_set() {
            report.log();
        } else {
            eprintln_lossy!("{}", report.line());
        }
    }));
}

/// One panic, as [`report_panics`] reports it.
struct PanicReport<'a> {
    message: &'a str,
    location: String,
    thread: &'a str,
    /// Captured only when `RUST_BACKTRACE` asks for it, as by default.
    backtrace: std::backtrace::Backtrace,
}

impl PanicReport<'_> {
    fn message(&self) -> std::borrow::Cow<'_, str> {
        crate::core::process::bounded(self.message, PANIC_MESSAGE_BYTES)
    }

    fn backtrace(&self) -> Option<String> {
        (self.backtrace.status() == std::backtrace::BacktraceStatus::Captured)
            .then(|| self.backtrace.to_string())
    }

    fn log(&self) {
        let message = self.message();
        match self.backtrace() {
            Some(backtrace) => error!(
                location = %self.location,
                thread = self.thread,
                backtrace,
                "groundgate panicked, a defect to report: {message}"
            ),
            None => error!(
                location = %self.location,
                thread = self.thread,
                "groundgate panicked, a defect to report: {message}"
            ),
        }
    }

    /// The report as one line for stderr, the backtrace (groundgate's own
    /// text) on the lines after it.
    fn line(&self) -> String {
        let mut line = format!(
            "groundgate panicked at {} (thread {}), a defect to report: {}",
            self.location,
            self.thread,
            crate::terminal::escape(&self.message())
        );
        if let Some(backtrace) = self.backtrace() {
            line.push('\n');
            line.push_str(&backtrace);
        }
        line
    }
}

/// The configuration of a command that connects as a client of the
/// workers' cluster (`produce`, `replay`): file, environment and `flags`
/// checked for Kafka, logging set up, and the brokers, which such a
/// command needs and never starts itself.
pub fn client_config(
    flags: &crate::cli::ClientFlags,
    command: &str,
) -> anyhow::Result<(crate::config::Config, String)> {
    let features = crate::kafka::client::library().features;
    let raw = flags.raw_layer().map_err(UsageError)?;
    let config = crate::config::RawConfig::load_for_kafka(
        flags.config.as_deref(),
        raw,
        &crate::config::Librdkafka {
            features: &features,
            refuses: &crate::kafka::client::refuses,
            clients: &crate::kafka::client::refuses_clients,
        },
    )?;
    init_logging(config.log.format, &config.log.level);
    // `load_for_kafka` refuses a configuration without brokers; these
    // commands never start a broker (`groundgate dev-broker` runs one).
    let bootstrap = config.kafka.brokers.clone().ok_or_else(|| {
        UsageError(format!(
            "no brokers configured: pass --brokers host:port (or GROUNDGATE_BROKERS); {command} does not start an embedded broker, use `groundgate dev-broker` for one"
        ))
    })?;
    Ok((config, bootstrap))
}

/// Which layers made a command's configuration, without their values (a
/// broker list may hold credentials): `configuration: built-in defaults <
/// file F < environment GROUNDGATE_… < flags (later layers win)`.
pub fn config_layers(file: Option<&std::path::Path>, env: &[String], flags: bool) -> String {
    let mut layers = vec!["built-in defaults".to_string()];
    if let Some(p) = file {
        layers.push(format!("file {}", p.display()));
    }
    if !env.is_empty() {
        layers.push(format!("environment {}", env.join(", ")));
    }
    if flags {
        layers.push("flags".to_string());
    }
    let mut line = format!("configuration: {}", layers.join(" < "));
    if layers.len() > 1 {
        line.push_str(" (later layers win)");
    }
    line
}

/// A mistake in how the command was called (a missing or malformed flag):
/// the binary exits 2 for it, as clap does for its own usage errors, and
/// for configuration errors.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// `e` and its causes, joined by `: `, leaving out a cause whose words the
/// message already holds (many errors quote their source in their own
/// message, as `cannot read F: No such file or directory` does); escaped
/// for a terminal, as a cause may quote a file name or a broker's text.
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    crate::terminal::escape_lines(&out).into_owned()
}

/// Exit code of usage and configuration errors (clap uses 2 as well).
pub const EXIT_USAGE: u8 = 2;

/// What writing a command's output to standard output came to. A reader
/// that stops early (`… | head -1`) closed the pipe because it has what it
/// wanted: that ends the command quietly, as it ends any filter; any other
/// failure (a full disk) is said.
pub fn stdout_written(written: std::io::Result<()>) -> Result<(), String> {
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write to standard output: {e}"))
        }
        _ => Ok(()),
    }
}

/// Says that `command` waits for lines typed at the terminal, when standard
/// input (`-`) is one: otherwise the command sits silent (or behind a
/// progress line of zero records) and reads as hung.
pub fn note_terminal_stdin(command: &str) {
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        eprintln_lossy!(
            "groundgate {command}: reading JSON Lines from standard input, which is this terminal: paste or type them and end with Ctrl-D, or name a file instead of `-`"
        );
    }
}

/// The exit code of a command that failed with `e`: [`EXIT_USAGE`] for a
/// usage or configuration error, 1 for anything else.
pub fn exit_code_of(e: &anyhow::Error) -> u8 {
    let usage = e.chain().any(|c| {
        c.downcast_ref::<UsageError>().is_some()
            || c.downcast_ref::<crate::config::ConfigError>().is_some()
    });
    if usage { EXIT_USAGE } else { 1 }
}

/// The one signal path: the first SIGINT or SIGTERM cancels `shutdown`
/// (the command then stops what it takes in, finishes what it holds and
/// exits); a second one exits at once with [`EXIT_INTERRUPTED`]. `stopping`
/// is logged at the first signal and says what the command does then.
/// Fails only if the handlers cannot be installed.
pub fn on_signals(shutdown: CancellationToken, stopping: &'static str) -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        info!("signal received: {stopping} (a second signal exits at once)");
        shutdown.cancel();
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        error!("second signal: exiting immediately");
        std::process::exit(EXIT_INTERRUPTED);
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What the human format writes for the events `emit` logs.
    fn logged(emit: impl FnOnce()) -> String {
        let out = Captured::default();
        let writer = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .fmt_fields(HumanFields)
            .finish();
        tracing::subscriber::with_default(subscriber, emit);
        String::from_utf8(out.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn a_human_log_line_stays_one_line_whatever_its_fields_quote() {
        let injected =
            "refused\n2026-01-01T00:00:00Z ERROR fake: forged line\r\x1b[2J\u{9b}\u{202e}";
        let text = logged(|| {
            tracing::warn!(error = %injected, topic = injected, "client error: {injected}");
        });
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            !text
                .trim_end_matches('\n')
                .chars()
                .any(crate::terminal::is_hazard),
            "{text}"
        );
        assert!(
            text.contains(
                "client error: refused\\n2026-01-01T00:00:00Z ERROR fake: forged line\\r\\u{1b}[2J\\u{9b}\\u{202e} error=refused\\n"
            ),
            "{text}"
        );
        // A string field keeps its quotes and Rust's own escapes, once.
        assert!(text.contains("topic=\"refused\\n2026"), "{text}");
    }

    #[test]
    fn the_log_crates_bookkeeping_fields_are_left_out() {
        let text = logged(|| {
            tracing::info!(log.target = "rdkafka::util", n = 1, "queue destroyed");
        });
        assert!(text.ends_with(" queue destroyed n=1\n"), "{text}");
    }

    #[test]
    fn a_cause_the_message_already_quotes_is_said_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let quoted = crate::batch::InputError::Open {
            path: "a.jsonl".into(),
            source: io,
        };
        assert_eq!(
            error_chain(&anyhow::Error::new(quoted)),
            "cannot open input a.jsonl: no such file"
        );
        let layered = anyhow::anyhow!("disk full").context("cannot write out/final.jsonl");
        assert_eq!(
            error_chain(&layered),
            "cannot write out/final.jsonl: disk full"
        );
    }

    /// A panic whose message quotes a record: a forged log line, a
    /// terminal escape, and more text than a log should hold.
    fn hostile_panic() -> PanicReport<'static> {
        let message: &'static str = Box::leak(
            format!(
                "byte index 3 is inside 'x\n2026-01-01T00:00:00Z INFO forged\x1b[2J' {}",
                "y".repeat(5_000)
            )
            .into_boxed_str(),
        );
        PanicReport {
            message,
            location: "src/core/x.rs:12".into(),
            thread: "rayon-1",
            backtrace: std::backtrace::Backtrace::disabled(),
        }
    }

    #[test]
    fn a_panic_is_one_json_log_event_once_logging_is_set_up() {
        let out = Captured::default();
        let writer = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .json()
            .flatten_event(true)
            .finish();
        tracing::subscriber::with_default(subscriber, || hostile_panic().log());
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let event: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(event["level"], "ERROR", "{text}");
        assert_eq!(event["location"], "src/core/x.rs:12", "{text}");
        assert_eq!(event["thread"], "rayon-1", "{text}");
        let message = event["message"].as_str().unwrap();
        assert!(
            message.starts_with("groundgate panicked, a defect to report: byte index 3"),
            "{message}"
        );
        assert!(message.len() < 1_200, "{}", message.len());
        assert!(message.ends_with("bytes in all)"), "{message}");
    }

    #[test]
    fn a_panic_before_logging_is_one_escaped_line() {
        let line = hostile_panic().line();
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(!line.chars().any(crate::terminal::is_hazard), "{line}");
        assert!(
            line.starts_with(
                "groundgate panicked at src/core/x.rs:12 (thread rayon-1), a defect to report: byte index 3"
            ),
            "{line}"
        );
        assert!(line.len() < 1_300, "{}", line.len());
    }
}
