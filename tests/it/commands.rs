//! The command-line surface a newcomer meets first: every `--help` ends with
//! examples, `run --help` shows the defaults, `run` and `check` list their
//! exit codes, usage errors exit 2 in every
//! command, `produce` stops cleanly on a signal, and a taken metrics port
//! says how to choose another one.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Output, Stdio};
use std::time::Duration;

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

use crate::common::*;

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The example command lines of a help text: the lines of its last
/// `Examples:` block.
fn examples(help: &str) -> Vec<String> {
    let Some(at) = help.rfind("\nExamples:\n") else {
        return Vec::new();
    };
    help[at + "\nExamples:\n".len()..]
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn every_help_ends_with_two_to_four_examples() {
    let commands: [&[&str]; 13] = [
        &[],
        &["check"],
        &["run"],
        &["dev-broker"],
        &["demo"],
        &["produce"],
        &["bench"],
        &["audit"],
        &["audit", "verify"],
        &["audit", "keygen"],
        &["audit", "pseudonym"],
        &["eval"],
        &["schema"],
    ];
    for cmd in commands {
        let mut args = cmd.to_vec();
        args.push("--help");
        let o = run(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let help = stdout(&o);
        let ex = examples(&help);
        assert!(
            (2..=4).contains(&ex.len()),
            "groundgate {}: {} example(s):\n{help}",
            cmd.join(" "),
            ex.len()
        );
        for line in &ex {
            // Each is a command line to copy, of this very command.
            assert!(
                line.starts_with("  ") && line.contains(&format!("groundgate {}", cmd.join(" "))),
                "groundgate {}: not an example of it: {line:?}",
                cmd.join(" ")
            );
        }
        // The block closes the help (at most a one-paragraph note after it).
        let after = &help[help.rfind("\nExamples:\n").unwrap()..];
        assert!(
            after.split("\n\n").count() <= 3,
            "examples are not at the end of `groundgate {} --help`:\n{help}",
            cmd.join(" ")
        );
    }
}

/// The exit codes a script or an orchestrator acts on are in the help of
/// the commands that have more than success and usage errors, each code
/// the documents list.
#[test]
fn help_lists_the_exit_codes_of_the_commands_that_have_them() {
    for (cmd, codes) in [
        ("run", &["0 ", "1 ", "2 ", "3 ", "130 "][..]),
        ("check", &["0 ", "1 ", "2 ", "130 "][..]),
        ("replay", &["0 ", "1 ", "2 ", "130 "][..]),
        ("produce", &["0 ", "1 ", "2 ", "130 "][..]),
    ] {
        let help = stdout(&run(&[cmd, "--help"]));
        let Some(at) = help.find("Exit codes: ") else {
            panic!("{cmd} --help lists no exit codes:\n{help}");
        };
        let line = &help[at..];
        for code in codes {
            assert!(
                line.contains(&format!(": {code}")) || line.contains(&format!("; {code}")),
                "{cmd} --help does not explain exit code {code}:\n{line}"
            );
        }
    }
}

#[test]
fn run_help_shows_the_defaults_it_runs_with() {
    let help = stdout(&run(&["run", "--help"]));
    let d = groundgate::config::Config::default();
    for default in [
        format!("[default: {}]", d.metrics.addr),
        format!("[default: {}]", d.kafka.guarantee),
        format!("[default: {}]", d.kafka.group_id),
        format!("[default: {}]", d.kafka.client_id),
        format!("[default: {}]", d.kafka.topics.input),
        "[default: human]".to_string(),
    ] {
        assert!(
            help.contains(&default),
            "run --help lacks {default}:\n{help}"
        );
    }
    assert!(help.contains("never start a broker"), "{help}");
}

#[test]
fn usage_errors_exit_2_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let missing = missing.to_str().unwrap();
    let cases: [&[&str]; 12] = [
        &["schema", "no-such-record"],
        &["audit", "pseudonym", "--key-file", missing, "alice"],
        &["produce", "--count", "1"],
        &["run", "-X", "no-equals-sign"],
        &[
            "produce",
            "--brokers",
            "127.0.0.1:1",
            "-X",
            "no-equals-sign",
        ],
        &["dev-broker", "--partitions", "0"],
        &["dev-broker", "--config", missing],
        &["demo", "--metrics-addr", "not-an-address"],
        &["demo", "--input", missing],
        &["bench", "--partitions", "0"],
        &["eval", missing],
        &["check", missing, "--out", "/tmp/unused"],
    ];
    for args in cases {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty(), "{args:?} says why");
    }
}

/// Records in all partitions of `topic`.
fn topic_count(bootstrap: &str, topic: &str) -> i64 {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let timeout = Duration::from_secs(10);
    let md = c.fetch_metadata(Some(topic), timeout).unwrap();
    md.topics()
        .iter()
        .flat_map(|t| t.partitions())
        .map(|p| {
            let (lo, hi) = c.fetch_watermarks(topic, p.id(), timeout).unwrap();
            hi - lo
        })
        .sum()
}

#[test]
fn produce_stops_on_a_signal_and_says_how_many_it_sent() {
    let (_broker, bs) = dev_broker(2);
    // Synthetic answers with no --count: only a signal ends this.
    let mut cmd = bin();
    cmd.args(["produce", "--brokers", &bs, "--rate", "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut p = Proc::spawn("produce", cmd);
    wait_for("produce to deliver records", WAIT, || {
        (topic_count(&bs, "answers") > 0).then_some(())
    });
    p.signal("INT");
    let status = p.wait_exit(WAIT).expect("produce exits after SIGINT");
    assert_eq!(
        status.code(),
        Some(0),
        "a stop is the only end of synthetic answers without --count"
    );
    let mut out = String::new();
    std::io::Read::read_to_string(&mut p.child.stdout.take().unwrap(), &mut out).unwrap();
    let sent: i64 = out
        .strip_prefix("sent ")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `sent N` line: {out:?}"));
    assert!(out.contains("stopped by a signal"), "{out}");
    assert_eq!(
        sent,
        topic_count(&bs, "answers"),
        "every record counted as sent is in the topic"
    );
    // With a --count, the run has a whole to send, and a stop short of it
    // is not a success.
    let mut cmd = bin();
    cmd.args([
        "produce",
        "--brokers",
        &bs,
        "--rate",
        "200",
        "--count",
        "150000",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let mut p = Proc::spawn("produce", cmd);
    wait_for("produce to deliver records", WAIT, || {
        (topic_count(&bs, "answers") > sent).then_some(())
    });
    p.signal("INT");
    let status = p.wait_exit(WAIT).expect("produce exits after SIGINT");
    assert_eq!(status.code(), Some(130));
}

/// `produce --file -` with three answers written to its standard input,
/// left open, once the three are on the topic.
fn produce_three_lines_from_an_open_pipe(bs: &str) -> (Proc, std::process::ChildStdin) {
    let mut cmd = bin();
    cmd.args(["produce", "--brokers", bs, "--rate", "0", "--file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // Not `Proc::spawn`, which closes standard input.
    let mut p = Proc {
        child: cmd.spawn().expect("produce starts"),
        name: "produce",
    };
    let answers = std::fs::read_to_string(repo("examples/answers.jsonl")).unwrap();
    let mut stdin = p.child.stdin.take().unwrap();
    for line in answers.lines().take(3) {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    wait_for("produce to deliver the lines written", WAIT, || {
        (topic_count(bs, "answers") == 3).then_some(())
    });
    (p, stdin)
}

/// Standard input left open with nothing more to read (`tail -f … |`) must
/// not hold a stop back until a line comes; a file not sent to its end
/// exits 130, as an interrupted run.
#[test]
fn produce_reading_an_open_pipe_stops_on_one_signal() {
    let (_broker, bs) = dev_broker(2);
    let (mut p, stdin) = produce_three_lines_from_an_open_pipe(&bs);
    p.signal("INT");
    let status = p.wait_exit(WAIT).expect("produce exits after one SIGINT");
    assert_eq!(
        status.code(),
        Some(130),
        "a file not sent to its end is not done"
    );
    let mut out = String::new();
    std::io::Read::read_to_string(&mut p.child.stdout.take().unwrap(), &mut out).unwrap();
    assert_eq!(
        out,
        "sent 3 records to answers (stopped by a signal: go on with --skip 3)\n"
    );
    // The pipe was open until produce had exited.
    drop(stdin);
}

/// A signal that comes once the last line was sent, while the input is
/// about to end, stops nothing: exit 0 and no `--skip`, which would send
/// nothing.
#[test]
fn produce_signalled_as_its_input_ends_is_a_finished_run() {
    let (_broker, bs) = dev_broker(2);
    let (mut p, stdin) = produce_three_lines_from_an_open_pipe(&bs);
    p.signal("INT");
    std::thread::sleep(Duration::from_millis(30));
    drop(stdin);
    let status = p.wait_exit(WAIT).expect("produce exits after SIGINT");
    let mut out = String::new();
    std::io::Read::read_to_string(&mut p.child.stdout.take().unwrap(), &mut out).unwrap();
    assert_eq!(status.code(), Some(0), "{out}");
    assert_eq!(out, "sent 3 records to answers\n");
}

#[test]
fn produce_exits_130_on_a_second_signal() {
    // Nothing listens here: after the first signal produce still waits for
    // the broker, which is when a second one must end it at once.
    let port = free_port();
    let mut cmd = bin();
    cmd.args([
        "produce",
        "--brokers",
        &format!("127.0.0.1:{port}"),
        "--count",
        "3",
        "--log-format",
        "json",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut p = Proc::spawn("produce", cmd);
    let mut lines = BufReader::new(p.child.stderr.take().unwrap()).lines();
    let mut wait_line = |what: &str| {
        lines
            .by_ref()
            .map_while(Result::ok)
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("produce never logged {what:?}"))
    };
    wait_line("\"producing\"");
    p.signal("INT");
    wait_line("signal received");
    p.signal("INT");
    let status = p.wait_exit(WAIT).expect("exits after the second signal");
    assert_eq!(status.code(), Some(130));
}

#[test]
fn a_taken_port_says_how_to_choose_another() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let port = taken.local_addr().unwrap().port().to_string();
    for (args, knobs) in [
        // The broker's own port, taken (by another dev-broker, say).
        (
            vec!["dev-broker", "--port", port.as_str()],
            &["--port", "--port 0"][..],
        ),
        (
            vec!["demo", "--metrics-addr", addr.as_str()],
            &["--metrics-addr"][..],
        ),
        (
            // Unreachable brokers: the metrics address is bound first.
            vec![
                "run",
                "--brokers",
                "127.0.0.1:1",
                "--metrics-addr",
                addr.as_str(),
            ],
            &[
                "--metrics-addr",
                "GROUNDGATE_METRICS_ADDR",
                "[metrics] addr",
            ][..],
        ),
    ] {
        let o = run(&args);
        let err = stderr(&o);
        assert!(!o.status.success(), "{args:?} started on a taken port");
        assert!(err.contains(&addr), "{err}");
        for knob in knobs {
            assert!(err.contains(knob), "{args:?} does not name {knob}: {err}");
        }
        assert_eq!(
            err.matches("os error").count(),
            1,
            "the OS error once: {err}"
        );
    }
}

#[test]
fn dev_broker_says_it_stops_the_broker_not_that_it_drains_records() {
    let mut cmd = bin();
    cmd.args(["dev-broker", "--port", "0", "--partitions", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut p = Proc::spawn("dev-broker", cmd);
    let mut line = String::new();
    BufReader::new(p.child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("bootstrap="), "{line}");
    p.signal("TERM");
    let status = p.wait_exit(WAIT).expect("exits after SIGTERM");
    assert!(status.success());
    let mut err = String::new();
    std::io::Read::read_to_string(&mut p.child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("stopping the broker"), "{err}");
    assert!(
        !err.contains("draining"),
        "a broker has no records in flight: {err}"
    );
}

#[test]
fn preflight_names_each_missing_topic_and_exits_1_until_all_are_there() {
    use groundgate::kafka::embedded::EmbeddedBroker;
    // The input and the audit topic missing (the mock broker creates no
    // topic on a metadata request for all topics).
    let partial = EmbeddedBroker::start(3, &["answers.final", "answers.retry", "answers.dlq"])
        .expect("embedded broker");
    // And a partition that stays without a leader (read again until the
    // preflight's deadline, then reported).
    partial
        .cluster()
        .partition_leader("answers.final", 1, None)
        .unwrap();
    let whole = EmbeddedBroker::start(
        3,
        &[
            "answers",
            "answers.final",
            "answers.retry",
            "answers.audit",
            "answers.dlq",
        ],
    )
    .expect("embedded broker");
    let preflight = |bootstrap: String| {
        std::thread::spawn(move || run(&["run", "--brokers", &bootstrap, "--preflight"]))
    };
    let (p, w) = (preflight(partial.bootstrap()), preflight(whole.bootstrap()));
    let (p, w) = (p.join().unwrap(), w.join().unwrap());

    let out = stdout(&p);
    assert_eq!(p.status.code(), Some(1), "{out}{}", stderr(&p));
    let problems: Vec<&str> = out.lines().filter(|l| l.starts_with("problem")).collect();
    assert_eq!(problems.len(), 3, "{out}");
    assert!(problems[0].starts_with("problem  answers (input): does not exist"));
    assert_eq!(
        problems[1],
        "problem  answers.final (final): partition(s) 1 have no leader"
    );
    assert!(problems[2].starts_with("problem  answers.audit (audit): does not exist"));
    assert!(out.contains("ok       answers.final (final): 3 partition(s)"));
    assert!(
        out.contains("\nconfiguration: built-in defaults < flags (later layers win)\n"),
        "{out}"
    );
    assert!(
        out.ends_with("preflight: 3 problem(s), 2 note(s)\n"),
        "{out}"
    );

    let out = stdout(&w);
    assert_eq!(w.status.code(), Some(0), "{out}{}", stderr(&w));
    assert!(!out.contains("problem "), "{out}");
    assert!(
        out.contains("at most 3 worker(s) of group groundgate take part"),
        "{out}"
    );
}

#[test]
fn settings_the_client_cannot_be_made_from_are_a_configuration_error_in_preflight_too() {
    // Nothing listens on port 1: the client is refused before any connection.
    let o = run(&[
        "run",
        "--brokers",
        "127.0.0.1:1",
        "-X",
        "security.protocol=SSL",
        "-X",
        "ssl.ca.location=/nonexistent/ca.pem",
        "--preflight",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("invalid configuration"),
        "{}",
        stderr(&o)
    );
    assert!(!stdout(&o).contains("problem:"), "{}", stdout(&o));
}

#[test]
fn produce_stopped_by_a_line_it_cannot_send_says_how_many_it_sent() {
    let (_broker, bs) = dev_broker(2);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("answers.jsonl");
    let mut text = String::new();
    for i in 0..5 {
        text.push_str(&format!("{{\"request_id\":\"r{i}\",\"answer\":\"x\"}}\n"));
    }
    // Longer than kafka.max_message_bytes (set below), then more records.
    text.push_str(&format!(
        "{{\"request_id\":\"big\",\"answer\":\"{}\"}}\n",
        "x".repeat(140_000)
    ));
    text.push_str("{\"request_id\":\"after\",\"answer\":\"x\"}\n");
    std::fs::write(&file, text).unwrap();
    let o = bin()
        .args(["produce", "--brokers", &bs, "--rate", "0", "--file"])
        .arg(&file)
        .env("GROUNDGATE_MAX_RECORD_BYTES", "65536")
        .env("GROUNDGATE_MAX_OUTPUT_BYTES", "65536")
        .env("GROUNDGATE_KAFKA__MAX_MESSAGE_BYTES", "131072")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("line 6 is"), "{err}");
    assert!(err.contains("the 5 records before it were sent"), "{err}");
    assert_eq!(topic_count(&bs, "answers"), 5, "{err}");
    let o = run(&[
        "produce",
        "--brokers",
        &bs,
        "--file",
        dir.path().join("missing.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// A run stopped by a line it cannot send names the flag that goes on
/// from there: the run with it, once the line is fixed, sends the rest and
/// nothing twice. A file shorter than what is to be left out is refused.
#[test]
fn produce_goes_on_where_a_stopped_run_left_off_without_sending_twice() {
    let (_broker, bs) = dev_broker(2);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("answers.jsonl");
    let line = |id: &str, bytes: usize| {
        format!(
            "{{\"request_id\":\"{id}\",\"answer\":\"{}\"}}\n",
            "x".repeat(bytes)
        )
    };
    let write = |sixth: usize| {
        let mut text: String = (0..5).map(|i| line(&format!("r{i}"), 1)).collect();
        text.push_str(&line("r5", sixth));
        text.push_str(&line("r6", 1));
        std::fs::write(&file, text).unwrap();
    };
    let produce = |extra: &[&str]| {
        bin()
            .args(["produce", "--brokers", &bs, "--rate", "0", "--file"])
            .arg(&file)
            .args(extra)
            .env("GROUNDGATE_MAX_RECORD_BYTES", "65536")
            .env("GROUNDGATE_MAX_OUTPUT_BYTES", "65536")
            .env("GROUNDGATE_KAFKA__MAX_MESSAGE_BYTES", "131072")
            .output()
            .unwrap()
    };
    // Line 6 is longer than kafka.max_message_bytes.
    write(140_000);
    let o = produce(&[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("go on with --skip 5 once it is short enough, or --skip 6 to leave it out"),
        "{err}"
    );
    assert_eq!(topic_count(&bs, "answers"), 5, "{err}");
    write(1);
    let o = produce(&["--skip", "5"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(stdout(&o).starts_with("sent 2 records"), "{}", stdout(&o));
    assert_eq!(topic_count(&bs, "answers"), 7, "{err}");
    let o = produce(&["--skip", "9"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("holds 7 records"), "{err}");
    assert_eq!(topic_count(&bs, "answers"), 7, "{err}");
}

/// A file of values in Schema Registry wire format (a topic dumped with
/// kcat) goes back as the values it holds: a schema id with byte 0x0A in
/// it is part of its value's header, not a line break, as `check` reads
/// the same file.
#[test]
fn produce_sends_a_framed_value_whose_schema_id_holds_a_newline_as_one_record() {
    let (_broker, bs) = dev_broker(1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dump.jsonl");
    let mut text = vec![0, 0, 0, 0, 0x0a];
    text.extend_from_slice(b"{\"request_id\":\"framed\",\"answer\":\"x\"}\n");
    text.extend_from_slice(b"{\"request_id\":\"plain\",\"answer\":\"x\"}\n");
    std::fs::write(&file, text).unwrap();
    let o = bin()
        .args(["produce", "--brokers", &bs, "--rate", "0", "--file"])
        .arg(&file)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(stdout(&o).contains("sent 2 records"), "{}", stdout(&o));
    assert_eq!(topic_count(&bs, "answers"), 2, "{err}");
}

/// A mistyped --file is said before anything connects: with no broker
/// listening, the only line is the missing file, not connection warnings
/// from a producer that was never needed.
#[test]
fn produce_names_a_missing_file_before_it_connects() {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap().to_string();
    drop(closed);
    let o = run(&[
        "produce",
        "--brokers",
        &addr,
        "--file",
        "/nonexistent/answers.jsonl",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent/answers.jsonl"), "{err}");
    assert!(
        !err.contains("Kafka client error") && !err.contains("producing"),
        "connected before opening the file: {err}"
    );
}

#[test]
fn preflight_against_a_closed_port_says_why_once_not_per_retry() {
    // A port bound and let go: nothing listens there now.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let brokers = format!("127.0.0.1:{port}");
    let o = run(&["run", "--brokers", &brokers, "--preflight"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("cannot read the cluster's metadata"),
        "{}",
        stdout(&o)
    );
    let err = stderr(&o);
    let about: Vec<&str> = err.lines().filter(|l| l.contains(&brokers)).collect();
    assert!(
        !about.is_empty() && about.len() <= 2,
        "the cause, logged once (twice at most across the limiter's 10 s): {err}"
    );
    assert!(!err.contains("ERROR"), "{err}");
}

/// `schema`'s standard output may be a reader that stops early or a full
/// disk: the first ends the command quietly, the second is an error that
/// says so; neither is a panic.
#[test]
fn schema_output_to_a_closed_pipe_or_a_full_disk_never_panics() {
    for args in [&["schema", "final"][..], &["schema"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = bin().args(args).stdout(writer).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}");

        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = bin().args(args).stdout(full).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("groundgate schema: cannot write to standard output: "),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("schemas.json");
    std::fs::write(&file, "{}").unwrap();
    let o = run(&["schema", "--out", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("schemas.json is not a directory: the schemas are written into one"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"{}");
}

/// `groundgate schema` carries every file of `schemas/`, byte for byte:
/// printed one at a time, listed with its title, written into a directory.
#[test]
fn the_schemas_built_into_the_binary_are_the_repositorys() {
    let files: std::collections::BTreeMap<String, Vec<u8>> =
        std::fs::read_dir(crate::common::repo("schemas"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                let name = p.file_name().unwrap().to_str().unwrap().to_string();
                let name = name.strip_suffix(".schema.json").unwrap().to_string();
                (name, std::fs::read(&p).unwrap())
            })
            .collect();
    let listed = run(&["schema"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let names: Vec<String> = stdout(&listed)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        files.keys().cloned().collect::<Vec<_>>(),
        "every schema file is built in"
    );
    assert!(
        stdout(&listed).contains("final  ")
            && stdout(&listed).contains("groundgate final envelope"),
        "{}",
        stdout(&listed)
    );
    for (name, bytes) in &files {
        let o = run(&["schema", name]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(&o.stdout, bytes, "{name}");
        let o = run(&["schema", &format!("{name}.schema.json")]);
        assert_eq!(&o.stdout, bytes, "{name}.schema.json");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("nested/schemas");
    let o = run(&["schema", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (name, bytes) in &files {
        assert_eq!(
            &std::fs::read(out.join(format!("{name}.schema.json"))).unwrap(),
            bytes,
            "{name}"
        );
    }
    let o = run(&["schema", "envelope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "no schema named \"envelope\"; the schemas are answer, audit-record, audit-row"
        ),
        "{}",
        stderr(&o)
    );
}

/// A replay told to start at an offset whose dead letters the topic no
/// longer holds (its retention deleted them, say while an operator went
/// on from where a stopped run said) says which were not put back, as it
/// starts at the oldest one kept.
#[test]
fn replay_names_the_dead_letters_no_longer_on_the_topic_from_where_it_was_told_to_start() {
    use groundgate::kafka::embedded::EmbeddedBroker;
    use rdkafka::message::{Header, OwnedHeaders};
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let broker = EmbeddedBroker::start(1, &["answers", "answers.dlq"]).expect("embedded broker");
    let bs = broker.bootstrap();
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", &bs)
        .create()
        .unwrap();
    // 80 dead letters of 100 KB: the embedded broker keeps 5 MB a
    // partition and deletes the oldest.
    let value = vec![b'x'; 100_000];
    for _ in 0..80 {
        let headers = OwnedHeaders::new().insert(Header {
            key: "groundgate.error.kind",
            value: Some("schema"),
        });
        let record = BaseRecord::<[u8], [u8]>::to("answers.dlq")
            .payload(&value)
            .headers(headers);
        producer.send(record).unwrap();
    }
    producer.flush(Duration::from_secs(10)).unwrap();
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &bs)
        .create()
        .unwrap();
    let (kept_from, end) = consumer
        .fetch_watermarks("answers.dlq", 0, Duration::from_secs(10))
        .unwrap();
    assert!(kept_from > 5, "none was deleted");
    let o = run(&[
        "replay",
        "--brokers",
        &bs,
        "--kind",
        "schema",
        "--partition",
        "0",
        "--from-offset",
        "5",
        "--dry-run",
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains(&format!("0 [{kept_from}, {end})")), "{out}");
    assert!(
        out.contains(&format!(
            "no longer on the topic (deleted before this run read them), not put back: partition 0 offsets [5, {kept_from})"
        )),
        "{out}"
    );
}

/// A `--partition` the dead-letter topic does not have is a mistake in
/// the command line: exit 2, as for a malformed flag, naming the
/// partitions the topic has.
#[test]
fn replay_of_a_partition_the_topic_does_not_have_is_a_usage_error() {
    use groundgate::kafka::embedded::EmbeddedBroker;
    let broker = EmbeddedBroker::start(2, &["answers", "answers.dlq"]).expect("embedded broker");
    let bs = broker.bootstrap();
    let replay = |partition: &str| {
        run(&[
            "replay",
            "--brokers",
            &bs,
            "--kind",
            "schema",
            "--partition",
            partition,
            "--dry-run",
        ])
    };
    let o = replay("5");
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o)
            .contains("--partition 5: the dead-letter topic answers.dlq has 2 partitions, 0 and 1"),
        "{}",
        stderr(&o)
    );
    let o = replay("1");
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}
