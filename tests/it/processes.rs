//! The binary as operators run it: `dev-broker`, `produce`, `run`, `demo`
//! and `audit verify` as separate processes. The crash tests kill a worker
//! with SIGKILL mid-stream and restart it against the same long-lived
//! dev-broker (outputs lose nothing; the sealed audit trail verifies).
//! `kcat` (an independent Kafka client) counts what `produce` wrote.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::process::Stdio;

use crate::common::*;
use groundgate::kafka::inspect;
use rdkafka::message::OwnedMessage;

const PARTITIONS: u32 = 4;

#[test]
fn produce_writes_what_it_says_and_kcat_reads_it_back() {
    if !need_tool(
        "produce_writes_what_it_says_and_kcat_reads_it_back",
        "kcat",
        "kcat",
    ) {
        return;
    }
    let (_broker, bs) = dev_broker(PARTITIONS);
    let status = bin()
        .args(["produce", "--brokers", &bs, "--count", "250", "--rate", "0"])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(kcat_count(&bs, "answers"), 250);

    let file = tempfile::NamedTempFile::new().unwrap();
    let lines: Vec<String> = (0..40)
        .map(|i| String::from_utf8(groundgate::sample::mixed(i, 300)).unwrap_or_default())
        .collect();
    std::fs::write(file.path(), lines.join("\n") + "\n").unwrap();
    let status = bin()
        .args(["produce", "--brokers", &bs, "--rate", "0", "--file"])
        .arg(file.path())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(kcat_count(&bs, "answers"), 290);
}

#[test]
fn produce_without_brokers_says_how_to_get_one() {
    let out = bin().args(["produce", "--count", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--brokers") && err.contains("dev-broker"),
        "{err}"
    );
}

#[test]
fn demo_finishes_on_its_own_and_reports_what_went_where() {
    let port = free_port();
    let out = bin()
        .args(["demo", "--metrics-addr", &format!("127.0.0.1:{port}")])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("what went where"), "{stdout}");
    // The shipped sample has every outcome and dead-letter kinds in it.
    for word in [
        "accepted",
        "rejected",
        "retry",
        "dead_letter",
        "dead letter: invalid_json",
    ] {
        assert!(stdout.contains(word), "demo summary lacks {word}: {stdout}");
    }
    assert!(stdout.contains(&format!("http://127.0.0.1:{port}/metrics")));
    // The URL dies with the demo: say how to keep it, and which config it used.
    assert!(stdout.contains("demo --serve"), "{stdout}");
    assert!(stdout.contains("examples/demo.toml"), "{stdout}");
    // The summary counts every record on both sides: one terminal, one audit row.
    let count = |topic: &str| -> usize {
        let row = stdout
            .lines()
            .find(|l| l.starts_with('│') && l.split_whitespace().any(|w| w == topic))
            .unwrap_or_else(|| panic!("no row for {topic}: {stdout}"));
        row.split(|c: char| !c.is_ascii_digit())
            .rfind(|w| !w.is_empty())
            .and_then(|n| n.parse().ok())
            .unwrap()
    };
    let sample = include_str!("../../examples/answers.jsonl").lines().count();
    assert_eq!(count("answers.audit"), sample, "{stdout}");
    assert_eq!(
        count("answers.final") + count("answers.retry") + count("answers.dlq"),
        sample,
        "{stdout}"
    );

    // Findings are counted as `check` counts them with the same configuration.
    let dir = tempfile::tempdir().unwrap();
    let checked = bin()
        .args(["check", "--config"])
        .arg(repo("examples/demo.toml"))
        .arg(repo("examples/answers.jsonl"))
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(checked.status.success());
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("summary.json")).unwrap()).unwrap();
    let by_check = summary["findings"]["unsupported_claim"].as_u64().unwrap();
    assert!(by_check > 0);
    assert_eq!(count("unsupported_claim") as u64, by_check, "{stdout}");
    assert!(
        stdout.contains("counts sentences, not answers"),
        "the count is explained: {stdout}"
    );

    // One short example of each outcome.
    for example in [
        "  accepted ",
        "  retry ",
        "  dead letter ",
        "  worst claim ",
        "not in its cited source: ",
    ] {
        assert!(stdout.contains(example), "no {example:?} example: {stdout}");
    }

    // Seals are counted after the worker's final flush, and the demo's own
    // trail is verified as `audit verify` does it.
    let verified = stdout
        .lines()
        .find_map(|l| l.strip_prefix("trail verified: "))
        .unwrap_or_else(|| panic!("no `trail verified` line: {stdout}"));
    let numbers: Vec<usize> = verified
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .take(2)
        .collect();
    assert_eq!(numbers[0], sample, "every row: {verified}");
    assert!(numbers[1] >= 1, "sealed: {verified}");
    assert!(!stdout.contains("so far: 0"), "{stdout}");
}

#[test]
fn demo_serve_points_at_its_own_broker_and_configuration() {
    let mut cmd = bin();
    cmd.args(["demo", "--serve", "--metrics-addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut demo = Proc::spawn("demo --serve", cmd);
    let mut lines =
        std::io::BufRead::lines(std::io::BufReader::new(demo.child.stdout.take().unwrap()))
            .map_while(Result::ok);
    let mut before = Vec::new();
    for l in lines.by_ref() {
        let done = l.contains("Ctrl-C to stop");
        before.push(l);
        if done {
            break;
        }
    }
    let text = before.join("\n");
    let bootstrap = text
        .split("embedded in-memory broker at ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no broker address: {text}"));
    for hint in [
        format!("kcat -b {bootstrap} "),
        format!("groundgate run --brokers {bootstrap} --config "),
        format!("groundgate produce --brokers {bootstrap} "),
    ] {
        assert!(text.contains(&hint), "no {hint:?} in: {text}");
    }
    assert!(!text.contains(":9092"), "no other broker: {text}");
    // The configuration named in the hint is the demo's.
    let config = text
        .split(&format!("run --brokers {bootstrap} --config "))
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap();
    let config_text = std::fs::read_to_string(repo("").join(config))
        .or_else(|_| std::fs::read_to_string(config))
        .unwrap();
    assert_eq!(config_text, include_str!("../../examples/demo.toml"));

    demo.signal("INT");
    let rest: Vec<String> = lines.collect();
    let status = demo.wait_exit(WAIT).expect("demo exits after Ctrl-C");
    assert!(status.success());
    assert!(
        rest.iter().any(|l| l.starts_with("trail verified: ")),
        "{rest:?}"
    );
}

/// Writes sample answers `range` (500-byte answers) to `file` and produces
/// them to the input topic with the `produce` subcommand.
fn produce_answers(bootstrap: &str, file: &std::path::Path, range: std::ops::Range<u64>) {
    let lines: Vec<String> = range
        .map(|i| String::from_utf8_lossy(&groundgate::sample::mixed(i, 500)).into_owned())
        .collect();
    std::fs::write(file, lines.join("\n") + "\n").unwrap();
    let ok = bin()
        .args(["produce", "--brokers", bootstrap, "--rate", "0", "--file"])
        .arg(file)
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "produce {}", file.display());
}

/// The audit rows among the audit topic's records (the seals over them
/// name no input offset).
fn rows(audit: &[OwnedMessage]) -> impl Iterator<Item = &OwnedMessage> {
    audit.iter().filter(|m| !inspect::is_seal(m))
}

fn audits_published(metrics: SocketAddr) -> Option<f64> {
    let (status, body) = http_get(metrics, "/metrics")?;
    (status == 200).then(|| sum_where(&body, "groundgate_published_total", "role=\"audit\""))
}

#[test]
fn sigkill_mid_stream_then_restart_loses_nothing() {
    let (_broker, bs) = dev_broker(PARTITIONS);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("groundgate.toml");
    // Small commit batches, so a kill lands between commits with work after
    // the last one; a short session so the group notices the dead member
    // without waiting the default 45 s.
    std::fs::write(
        &config,
        "[kafka]\ngroup_id = \"crash\"\ncommit_interval_ms = 200\ncommit_max_records = 100\nmax_in_flight = 200\nsession_timeout_ms = 6000\n",
    )
    .unwrap();
    let first = 1500u64;
    produce_answers(&bs, &dir.path().join("first.jsonl"), 0..first);

    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut w = start_worker(&bs, &config, metrics, &dir.path().join("run-1.log"));
    wait_for("the first worker to publish some audit rows", WAIT, || {
        audits_published(metrics).filter(|n| *n >= 200.0)
    });
    w.signal("KILL");
    assert!(w.wait_exit(WAIT).is_some());
    let at_kill = committed(&bs, "crash", PARTITIONS as i32);

    // More input arrives while no worker runs.
    produce_answers(&bs, &dir.path().join("second.jsonl"), first..first + 300);
    let total = (first + 300) as usize;
    // An independent client confirms what was produced, when one is installed.
    if need_tool(
        "sigkill_mid_stream_then_restart_loses_nothing (kcat cross-check)",
        "kcat",
        "kcat",
    ) {
        assert_eq!(kcat_count(&bs, "answers"), total);
    }

    let metrics2: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut w2 = start_worker(&bs, &config, metrics2, &dir.path().join("run-2.log"));
    let b = bs.clone();
    let out = inspect::read_until(&b, &OUTPUTS, WAIT, |got| {
        let audited: BTreeSet<_> = rows(&got[2]).map(coords).collect();
        let terminal: BTreeSet<_> = got[0]
            .iter()
            .chain(&got[1])
            .chain(&got[3])
            .map(coords)
            .collect();
        audited.len() >= total && terminal.len() >= total
    })
    .unwrap();
    w2.signal("TERM");
    let status = w2.wait_exit(WAIT).expect("worker exits after SIGTERM");
    let log = std::fs::read_to_string(dir.path().join("run-2.log")).unwrap_or_default();
    assert!(status.success(), "graceful stop exits 0: {status:?}\n{log}");

    let mut audits: BTreeMap<(i32, i64), usize> = BTreeMap::new();
    for m in rows(&out[2]) {
        *audits.entry(coords(m)).or_default() += 1;
    }
    let mut terminals: BTreeMap<(i32, i64), usize> = BTreeMap::new();
    for m in out[0].iter().chain(&out[1]).chain(&out[3]) {
        *terminals.entry(coords(m)).or_default() += 1;
    }
    assert_eq!(audits.len(), total, "every input has an audit row");
    assert_eq!(terminals.len(), total, "every input has a terminal record");
    assert_eq!(
        audits.keys().collect::<Vec<_>>(),
        terminals.keys().collect::<Vec<_>>()
    );
    let dups = audits.values().filter(|n| **n > 1).count();
    eprintln!("committed at kill: {at_kill:?}; inputs redelivered after the crash: {dups}");
    // Redelivery is only allowed past the last commit before the kill.
    for ((p, o), n) in audits.iter().chain(terminals.iter()) {
        if *n > 1 {
            let c = at_kill.get(p).copied().unwrap_or(0);
            assert!(
                *o >= c,
                "input {p}:{o} duplicated but was committed (committed {c})"
            );
        }
    }
    // After the graceful stop everything is committed.
    let after = committed(&bs, "crash", PARTITIONS as i32);
    assert_eq!(after.values().sum::<i64>() as usize, total, "{after:?}");
}

/// The sealed audit trail survives a crash. A worker killed mid-stream
/// leaves audit rows that no seal covers yet and possibly seals whose input
/// offsets were never committed; its replacement continues each partition's
/// chain from the head in the committed offset's metadata, processes those
/// records again and seals them again. `audit verify` over the whole audit
/// topic then finds only redeliveries and reseals: every input offset has a
/// row, every row is sealed, every seal is signed by the configured key.
#[test]
fn sigkill_mid_stream_then_restart_leaves_a_trail_that_verifies() {
    let (_broker, bs) = dev_broker(PARTITIONS);
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("audit");
    let keygen = bin()
        .args(["audit", "keygen", "--out"])
        .arg(&key)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(keygen.success());
    let config = dir.path().join("groundgate.toml");
    // Seals every 50 rows or 200 ms and small commit batches, so the kill
    // lands with seals and rows after the last commit.
    std::fs::write(
        &config,
        format!(
            "[kafka]\ngroup_id = \"sealed-crash\"\ncommit_interval_ms = 200\ncommit_max_records = 100\nmax_in_flight = 200\nsession_timeout_ms = 6000\n[audit]\nseal_every = 50\nseal_interval_ms = 200\nsigning_key_file = \"{}\"\n",
            key.with_extension("key").display()
        ),
    )
    .unwrap();
    let (first, total) = (1500u64, 1800u64);
    produce_answers(&bs, &dir.path().join("first.jsonl"), 0..first);

    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut w = start_worker(&bs, &config, metrics, &dir.path().join("run-1.log"));
    wait_for("the first worker to publish some seals", WAIT, || {
        let (status, body) = http_get(metrics, "/metrics")?;
        let seals = sum_where(&body, "groundgate_audit_seals_total", "");
        (status == 200 && seals >= 4.0).then_some(())
    });
    w.signal("KILL");
    assert!(w.wait_exit(WAIT).is_some());
    produce_answers(&bs, &dir.path().join("second.jsonl"), first..total);

    let metrics2: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut w2 = start_worker(&bs, &config, metrics2, &dir.path().join("run-2.log"));
    // An offset is committed only once its audit row is sealed.
    let done = wait_for("every input offset to be committed", WAIT, || {
        let c = committed(&bs, "sealed-crash", PARTITIONS as i32);
        (c.values().sum::<i64>() == total as i64).then_some(c)
    });
    w2.signal("TERM");
    let status = w2.wait_exit(WAIT).expect("worker exits after SIGTERM");
    let log = std::fs::read_to_string(dir.path().join("run-2.log")).unwrap_or_default();
    assert!(status.success(), "graceful stop exits 0: {status:?}\n{log}");

    let out = bin()
        .args([
            "audit",
            "verify",
            "--brokers",
            &bs,
            "--json",
            "--public-key",
        ])
        .arg(key.with_extension("pub"))
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "--json report: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(report["problems"], serde_json::json!([]), "{report:#}");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(report["signatures_checked"], true);
    let chains = report["chains"].as_array().unwrap();
    assert_eq!(
        chains.len(),
        PARTITIONS as usize,
        "one chain per input partition"
    );
    let (mut redelivered, mut resealed) = (0, 0);
    for c in chains {
        let p = c["partition"].as_i64().unwrap() as i32;
        assert_eq!(c["topic"], "answers");
        assert_eq!(c["gaps"], serde_json::json!([]), "{c}");
        assert_eq!(c["unsealed_tail"], 0, "every row is sealed: {c}");
        assert_eq!(c["first_offset"], 0, "{c}");
        assert_eq!(c["last_offset"], done[&p] - 1, "rows up to the commit: {c}");
        redelivered += c["redeliveries"].as_u64().unwrap();
        resealed += c["reseals"].as_u64().unwrap();
    }
    eprintln!("after the crash: {redelivered} redelivered row(s), {resealed} reseal(s)");

    // Against the input side: the input topic and the group's committed
    // offsets and chain heads agree with the trail.
    let anchored = |group: Option<&str>| {
        let mut cmd = bin();
        cmd.args(["audit", "verify", "--brokers", &bs, "--json"])
            .args(["--input-topic", "answers"]);
        if let Some(g) = group {
            cmd.args(["--group", g]);
        }
        let out = cmd.output().unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code(), report)
    };
    let (code, report) = anchored(Some("sealed-crash"));
    assert_eq!(report["problems"], serde_json::json!([]), "{report:#}");
    assert_eq!(code, Some(0));
    // Input nobody has processed yet: owed rows against the topic alone,
    // not against the group, which has not committed them.
    produce_answers(&bs, &dir.path().join("third.jsonl"), total..total + 30);
    let (code, report) = anchored(None);
    assert_eq!(code, Some(1), "{report:#}");
    let problems = report["problems"].as_array().unwrap();
    assert!(!problems.is_empty());
    let mut owed = 0;
    for p in problems {
        assert_eq!(p["kind"], "gap", "{p}");
        let part = p["partition"].as_i64().unwrap() as i32;
        let (a, b) = (
            p["offsets"][0].as_i64().unwrap(),
            p["offsets"][1].as_i64().unwrap(),
        );
        assert_eq!(
            a, done[&part],
            "the gap starts at the committed offset: {p}"
        );
        owed += b - a + 1;
    }
    assert_eq!(owed, 30, "{report:#}");
    // verify read the input topic over the gaps: each of them holds a
    // record a worker is handed, so none is excused as a marker.
    for c in report["chains"].as_array().unwrap() {
        assert_eq!(c["undelivered"], 0, "{c}");
    }
    let (code, report) = anchored(Some("sealed-crash"));
    assert_eq!(report["problems"], serde_json::json!([]), "{report:#}");
    assert_eq!(code, Some(0));
}

/// A worker whose input topic does not exist is not told to check that
/// the brokers are reachable (they answered): its log says the topic is
/// missing and that groundgate creates none.
#[test]
fn a_missing_input_topic_is_named_as_missing_not_as_unreachable_brokers() {
    let (_broker, bs) = dev_broker(1);
    let dir = tempfile::tempdir().unwrap();
    let toml = "[kafka.topics]\ninput = \"answers-typo\"\n";
    let (w, log, _) = start_configured_worker(&bs, dir.path(), toml);
    let line = wait_for("the client error about the topic", WAIT, || {
        let text = std::fs::read_to_string(&log).ok()?;
        text.lines()
            .find(|l| l.contains("Kafka client error") && l.contains("answers-typo"))
            .map(str::to_string)
    });
    assert!(
        line.contains("a topic does not exist") && !line.contains("reachable"),
        "{line}"
    );
    drop(w);
}

#[test]
fn worker_started_before_its_broker_waits_says_why_and_then_works() {
    let port = free_port();
    let bs = format!("127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let toml = "[kafka]\ngroup_id = \"late-broker\"\n";
    let (mut w, log, metrics) = start_configured_worker(&bs, dir.path(), toml);

    // Alive, not ready, and the log names the problem.
    wait_for("the worker to serve /healthz", WAIT, || {
        http_get(metrics, "/healthz").filter(|(s, _)| *s == 200)
    });
    assert_eq!(http_get(metrics, "/readyz").map(|(s, _)| s), Some(503));
    wait_for(
        "a log line saying the brokers are unreachable",
        WAIT,
        || {
            let text = std::fs::read_to_string(&log).ok()?;
            text.contains("retrying; no broker answered; check the address (--brokers")
                .then_some(())
        },
    );
    assert!(w.child.try_wait().unwrap().is_none(), "still running");

    // The broker appears on that address; the worker carries on by itself.
    let _broker = dev_broker_on(port, 2);
    assert!(produce_synthetic(&bs, 30));
    wait_for("all 30 records to be audited", WAIT, || {
        audits_published(metrics).filter(|n| *n >= 30.0)
    });
    assert_eq!(http_get(metrics, "/readyz").map(|(s, _)| s), Some(200));
    w.signal("TERM");
    let status = w.wait_exit(WAIT).expect("exits after SIGTERM");
    assert!(status.success());
}

#[test]
fn bench_runs_all_three_and_reports_ratios() {
    // Works end to end on a tiny input; the numbers themselves are not
    // asserted (speed is measured, never tested).
    let out = bin()
        .args([
            "bench",
            "--records",
            "300",
            "--rounds",
            "1",
            "--partitions",
            "2",
        ])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    for row in [
        "passthrough",
        "at-least-once",
        "exactly-once",
        "× passthrough",
        "× at-least-once",
        "mock cluster",
    ] {
        assert!(
            stdout.contains(row),
            "bench output lacks {row:?}:\n{stdout}"
        );
    }
    assert!(!stdout.contains("goal"), "no internal goals: {stdout}");
}

/// The broker vanishes, then the worker is told to stop: shutdown is
/// bounded by `kafka.drain_deadline_ms` whatever the Kafka clients do (a
/// consumer close can block for good then), and `/readyz` turns 503 as soon
/// as the drain starts.
#[test]
fn sigterm_after_the_broker_vanished_ends_within_the_drain_deadline() {
    let (mut broker, bs) = dev_broker(2);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("groundgate.toml");
    std::fs::write(
        &config,
        "[kafka]\ngroup_id = \"vanished\"\ndrain_deadline_ms = 2000\n",
    )
    .unwrap();
    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let log = dir.path().join("run.log");
    let mut w = start_worker(&bs, &config, metrics, &log);
    assert!(produce_synthetic(&bs, 20));
    wait_for("the worker to be ready", WAIT, || {
        http_get(metrics, "/readyz").filter(|(s, _)| *s == 200)
    });

    broker.signal("KILL");
    broker.wait_exit(WAIT).expect("the broker is gone");
    w.signal("TERM");
    // From the signal on, never ready again: 503 until the process is gone.
    wait_for("/readyz to stop answering 200", WAIT, || {
        match http_get(metrics, "/readyz") {
            Some((200, _)) => None,
            _ => Some(()),
        }
    });
    if let Some((status, body)) = http_get(metrics, "/readyz") {
        assert_eq!(status, 503, "{body}");
    }
    let status = w.wait_exit(WAIT).expect("shutdown is bounded");
    let text = std::fs::read_to_string(&log).unwrap();
    match status.code() {
        // Closed in time.
        Some(0) => {}
        // The worker stopped with records left unsettled or uncommitted,
        // or the watchdog gave up on a close that did not return.
        Some(3) => assert!(
            text.contains("shutdown incomplete") || text.contains("drain_deadline_ms"),
            "{text}"
        ),
        other => panic!("exit {other:?}: {text}"),
    }
}

/// A worker configured with `[audit] pseudonymize` writes, in every audit
/// row on the topic, the keyed pseudonym `audit pseudonym` prints for the
/// listed field, never the value; the retry requests, which go back to the
/// model, keep it.
#[test]
fn a_worker_writes_pseudonyms_into_the_audit_topic_and_the_cli_finds_them() {
    let (_broker, bs) = dev_broker(1);
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("pseudonym.key");
    std::fs::write(
        &key,
        "8c1f0d6a4be34a7c9e215d0b7f3a6c2e9d4b1a0f5e6c7d8b9a0f1e2d3c4b5a69\n",
    )
    .unwrap();
    let toml = format!(
        "[kafka]\ngroup_id = \"pseudonyms\"\n[audit]\npseudonymize = [\"user\"]\npseudonym_key_file = \"{}\"\n",
        key.display()
    );
    let n = 60u64;
    produce_answers(&bs, &dir.path().join("in.jsonl"), 0..n);
    let (mut w, log, _) = start_configured_worker(&bs, dir.path(), &toml);
    // Every record's terminal record and its row: the topics are read in
    // turn, so the rows may all be in before the last retries are.
    let out = inspect::read_until(&bs, &OUTPUTS, WAIT, |got| {
        rows(&got[2]).count() >= n as usize
            && got[0].len() + got[1].len() + got[3].len() >= n as usize
    })
    .unwrap();
    w.signal("TERM");
    let status = w.wait_exit(WAIT).expect("worker exits after SIGTERM");
    let log = std::fs::read_to_string(log).unwrap_or_default();
    assert!(status.success(), "{status:?}\n{log}");
    assert!(
        log.contains("audit rows write these fields as pseudonyms"),
        "the worker says so at start:\n{log}"
    );

    let users: Vec<String> = (0..17).map(|i| format!("user-{i}")).collect();
    let printed = succeeded(
        bin()
            .args(["audit", "pseudonym", "--key-file"])
            .arg(&key)
            .args(&users),
        "audit pseudonym",
    );
    let printed = String::from_utf8(printed).unwrap();
    let pseudonym: BTreeSet<&str> = printed.lines().collect();
    assert_eq!(pseudonym.len(), users.len(), "{printed}");
    let json = |m: &OwnedMessage| -> serde_json::Value {
        serde_json::from_slice(rdkafka::Message::payload(m).unwrap()).unwrap()
    };
    let mut written = 0;
    for m in rows(&out[2]) {
        let row = json(m);
        let user = row["user"].as_str().unwrap();
        if row["outcome"] == "dead_letter" {
            continue;
        }
        assert!(pseudonym.contains(user), "{row}");
        assert!(
            row["tenant"].as_str().unwrap().starts_with("tenant-"),
            "{row}"
        );
        written += 1;
    }
    assert!(written > n / 2, "{written} judged rows of {n}");
    for m in &out[1] {
        let retry = json(m);
        assert!(
            retry["user"].as_str().unwrap().starts_with("user-"),
            "{retry}"
        );
    }
    assert!(!out[1].is_empty(), "the sample stream has retries");
}

#[test]
fn produce_to_an_address_where_no_broker_listens_says_so_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("one.jsonl");
    std::fs::write(&file, r#"{"request_id":"a","answer":"x"}"#).unwrap();
    let bootstrap = format!("127.0.0.1:{}", free_port());
    let mut cmd = bin();
    cmd.args(["produce", "--brokers", &bootstrap, "--rate", "0", "--file"])
        .arg(&file);
    // Without the check, the record waits out librdkafka's five-minute
    // message timeout, longer than `exit_and_stderr` waits.
    let (code, err) = exit_and_stderr("produce", cmd);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!("no broker at {bootstrap} answered"))
            && err.contains("nothing was sent")
            && err.contains("--brokers"),
        "{err}"
    );
}

#[test]
fn audit_verify_and_replay_where_no_broker_listens_say_what_to_check() {
    let bootstrap = format!("127.0.0.1:{}", free_port());
    for (name, args) in [
        (
            "audit verify",
            vec!["audit", "verify", "--brokers", &bootstrap],
        ),
        (
            "replay",
            vec!["replay", "--brokers", &bootstrap, "--kind", "internal"],
        ),
    ] {
        let mut cmd = bin();
        cmd.args(&args);
        let (code, err) = exit_and_stderr("unreachable", cmd);
        assert!(matches!(code, Some(1 | 2)), "{name}: {code:?} {err}");
        assert!(
            err.contains("no broker answered; check the address (--brokers"),
            "{name}: {err}"
        );
    }
}
