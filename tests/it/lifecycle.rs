//! The worker process through its life in a group: a SIGTERM'd worker
//! leaves the group so another takes over at once; a worker stopped while
//! its outputs cannot be acknowledged says so and exits 3; a worker whose
//! broker was killed and restarted does not stay "ready" with nothing
//! assigned; logs fit a file; `produce` does not let the dev broker drop
//! records silently; newcomer-facing outputs say what they do.

use std::net::SocketAddr;
use std::time::Instant;

use crate::common::*;

fn gauge(addr: SocketAddr, name: &str) -> Option<f64> {
    let (status, body) = http_get(addr, "/metrics")?;
    (status == 200).then(|| sum_where(&body, name, ""))
}

fn assigned(addr: SocketAddr) -> Option<f64> {
    gauge(addr, "groundgate_assigned_partitions")
}

fn metrics_addr() -> SocketAddr {
    format!("127.0.0.1:{}", free_port()).parse().unwrap()
}

#[test]
fn sigterm_leaves_the_group_and_the_other_worker_takes_over() {
    let (_broker, bs) = dev_broker(4);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("groundgate.toml");
    // Default session timeout: the point is that a clean stop does not wait for it.
    std::fs::write(&config, "[kafka]\ngroup_id = \"takeover\"\n").unwrap();
    // Some input, so offsets get committed and lag can be computed.
    assert!(produce_synthetic(&bs, 40));
    let (ma, mb) = (metrics_addr(), metrics_addr());
    let log_a = dir.path().join("a.log");
    let mut a = start_worker(&bs, &config, ma, &log_a);
    wait_for("worker A to own all 4 partitions", WAIT, || {
        assigned(ma).filter(|n| *n == 4.0)
    });
    let _b = start_worker(&bs, &config, mb, &dir.path().join("b.log"));
    wait_for("the group to split the partitions 2/2", WAIT, || {
        (assigned(ma)? == 2.0 && assigned(mb)? == 2.0).then_some(())
    });

    a.signal("TERM");
    let sent = Instant::now();
    let status = a.wait_exit(WAIT).expect("A exits after SIGTERM");
    assert!(status.success(), "{status:?}");
    // Without a LeaveGroup the group would only notice after the session
    // timeout; the bound is generous, the measured time is only reported.
    wait_for("worker B to take over all 4 partitions", WAIT, || {
        assigned(mb).filter(|n| *n == 4.0)
    });
    eprintln!(
        "takeover after SIGTERM: {:.1} s (dev-broker; see README)",
        sent.elapsed().as_secs_f64()
    );
    // Consumer lag is exported with the default configuration.
    wait_for("B to export consumer lag per partition", WAIT, || {
        let (_, body) = http_get(mb, "/metrics")?;
        (!samples(&body, "groundgate_consumer_lag_records").is_empty()).then_some(())
    });
    let log = std::fs::read_to_string(&log_a).unwrap();
    assert!(log.contains("worker stopped cleanly"), "{log}");
    assert!(
        log.contains("consumer closed; its partitions go to the rest of the group"),
        "{log}"
    );
    // A log file gets plain text, and the last line is a summary, not a debug dump.
    assert!(
        !log.contains('\u{1b}'),
        "ANSI escapes in a log file:\n{log}"
    );
    let last = log.lines().rfind(|l| !l.trim().is_empty()).unwrap();
    assert!(
        last.contains("stopped") && last.contains("records=") && !last.contains('{'),
        "last line: {last}"
    );
}

#[test]
fn broker_killed_and_restarted_the_worker_is_not_ready_and_exits_then_a_restart_works() {
    let port = free_port();
    let bs = format!("127.0.0.1:{port}");
    let first = dev_broker_on(port, 2);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("groundgate.toml");
    std::fs::write(
        &config,
        "[kafka]\ngroup_id = \"restart\"\nsession_timeout_ms = 6000\nunassigned_timeout_ms = 5000\n",
    )
    .unwrap();
    let m = metrics_addr();
    let log = dir.path().join("run.log");
    let mut w = start_worker(&bs, &config, m, &log);
    wait_for("the worker to own both partitions", WAIT, || {
        assigned(m).filter(|n| *n == 2.0)
    });
    assert_eq!(http_get(m, "/readyz").map(|(s, _)| s), Some(200));

    // The broker dies and comes back empty on the same port: a new cluster.
    first.signal("KILL");
    drop(first);
    let _second = dev_broker_on(port, 2);

    // Never "ready" with nothing assigned: /readyz turns 503 (or the
    // worker is already gone), and the worker exits non-zero on its own.
    wait_for("/readyz 503 or exit", WAIT, || {
        match http_get(m, "/readyz") {
            Some((503, _)) | None => Some(()),
            _ => None,
        }
    });
    let status = w.wait_exit(WAIT).expect("the worker stops by itself");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!status.success(), "non-zero exit: {status:?}\n{text}");
    assert!(
        text.contains("partitions were lost") && text.contains("unassigned_timeout_ms"),
        "{text}"
    );
    // The fatal path closes the consumer too, and does not claim to hand
    // over partitions it no longer holds.
    assert!(
        text.contains("consumer closed; it held no partitions"),
        "{text}"
    );
    // Each librdkafka failure is reported once by groundgate, not echoed by
    // every client and by librdkafka's own log.
    assert!(!text.contains("rdkafka::client"), "{text}");
    // librdkafka's own connection failures stay at debug level; the only
    // lines that may quote one are groundgate's (rate-limited) warning.
    for l in text.lines().filter(|l| l.contains("Connect to ipv4")) {
        assert!(l.contains(" groundgate::kafka::"), "{l}\n{text}");
    }

    // What the orchestrator does next: a restart works with the new broker.
    let m2 = metrics_addr();
    let mut w2 = start_worker(&bs, &config, m2, &dir.path().join("run-2.log"));
    assert!(produce_synthetic(&bs, 100));
    wait_for("100 new records audited after the restart", WAIT, || {
        gauge(m2, "groundgate_published_total{role=\"audit\"}").filter(|n| *n >= 100.0)
    });
    w2.signal("TERM");
    assert!(w2.wait_exit(WAIT).is_some_and(|s| s.success()));
}

/// Input records of the tests that stop a worker with its outputs unacknowledged.
const UNACKNOWLEDGED: u64 = 20;

/// A worker (`guarantee`, `drain_deadline_ms`) processes every input record
/// while the broker that leads the output topics is down, and is stopped:
/// its shutdown cannot finish, so it says what it left undone (the lines
/// `must_say`), never "stopped cleanly", exits 3 on its own (not through
/// the watchdog) and commits nothing. With the broker back, the next worker
/// processes the records again and a normal stop exits 0, "stopped cleanly".
fn stop_with_outputs_unacknowledged(guarantee: &str, drain_deadline_ms: u64, must_say: &[String]) {
    stop_with_outputs_unacknowledged_and(
        guarantee,
        drain_deadline_ms,
        must_say,
        UNACKNOWLEDGED,
        "",
    );
}

/// [`stop_with_outputs_unacknowledged`] with `extra` appended to the
/// stopped worker's configuration, stopped once it has processed
/// `processed` records.
fn stop_with_outputs_unacknowledged_and(
    guarantee: &str,
    drain_deadline_ms: u64,
    must_say: &[String],
    processed: u64,
    extra: &str,
) {
    let group = format!("unacked-{guarantee}");
    let broker = crate::common::outputs_on_broker_2(&group);
    let bs = broker.bootstrap();
    let dir = tempfile::tempdir().unwrap();
    let kafka = format!(
        "[kafka]\ngroup_id = \"{group}\"\ntransactional_id = \"{group}-txn\"\nguarantee = \"{guarantee}\"\ndrain_deadline_ms = {drain_deadline_ms}\n"
    );
    let config = dir.path().join("groundgate.toml");
    // No transaction falls due before the stop: the shutdown commits it.
    std::fs::write(
        &config,
        format!("{kafka}commit_interval_ms = 600000\n{extra}"),
    )
    .unwrap();
    broker.broker_down(2).unwrap();
    let m = metrics_addr();
    let log = dir.path().join("run.log");
    let mut w = start_worker(&bs, &config, m, &log);
    assert!(produce_synthetic(&bs, UNACKNOWLEDGED));
    // Judged, not written: the outputs wait for broker 2.
    wait_for("the input records processed", WAIT, || {
        gauge(m, "groundgate_process_duration_seconds_count").filter(|n| *n >= processed as f64)
    });

    w.signal("TERM");
    let status = w.wait_exit(WAIT).expect("the worker exits after SIGTERM");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(3), "{text}");
    assert!(text.contains("shutdown incomplete"), "{text}");
    for line in must_say {
        assert!(text.contains(line.as_str()), "{line:?} in:\n{text}");
    }
    assert!(text.contains("processed again by the next owner"), "{text}");
    assert!(!text.contains("stopped cleanly"), "{text}");
    assert!(!text.contains("overran its deadline"), "{text}");
    if guarantee == "at-least-once" {
        // The mock does not keep offsets committed inside a transaction, so
        // only at-least-once offsets can be read back.
        assert_eq!(committed(&bs, &group, 2).values().sum::<i64>(), 0);
    }

    broker.cluster().broker_up(2).unwrap();
    let m2 = metrics_addr();
    let log2 = dir.path().join("run-2.log");
    let config = dir.path().join("groundgate-2.toml");
    std::fs::write(&config, kafka).unwrap();
    let mut w2 = start_worker(&bs, &config, m2, &log2);
    wait_for("the records audited by the next worker", WAIT, || {
        gauge(m2, "groundgate_published_total{role=\"audit\"}")
            .filter(|n| *n >= UNACKNOWLEDGED as f64)
    });
    w2.signal("TERM");
    let status = w2
        .wait_exit(WAIT)
        .expect("the next worker exits after SIGTERM");
    let text = std::fs::read_to_string(&log2).unwrap();
    assert!(status.success(), "{status:?}\n{text}");
    assert!(text.contains("worker stopped cleanly"), "{text}");
    assert!(!text.contains("shutdown incomplete"), "{text}");
}

#[test]
fn at_least_once_stopped_with_outputs_unacknowledged_says_so_and_exits_3() {
    stop_with_outputs_unacknowledged(
        "at-least-once",
        5000,
        &[
            format!("{UNACKNOWLEDGED} input record(s) not settled"),
            "the producer flush did not complete".into(),
        ],
    );
}

#[test]
fn exactly_once_stopped_with_outputs_unacknowledged_says_so_and_exits_3() {
    // The stalled outputs would fail the commit after 5 s, and each
    // transaction call may wait 30 s: the final commit gives up at the
    // drain deadline instead, so the worker stops on its own well before
    // either.
    stop_with_outputs_unacknowledged(
        "exactly-once",
        2000,
        &[format!(
            "{UNACKNOWLEDGED} input record(s) not settled, the final commit failed"
        )],
    );
}

/// The producer's queue holds fewer outputs than the worker has to
/// publish while the brokers that lead the output topics are down: the
/// worker waits for room in the queue when it is stopped, and still stops
/// on its own, saying what it left undone, rather than being ended by the
/// watchdog.
const SMALL_QUEUE: &str = "[kafka.properties]\n\"queue.buffering.max.messages\" = \"6\"\n";

#[test]
fn at_least_once_stopped_while_the_producer_queue_is_full_says_so_and_exits_3() {
    stop_with_outputs_unacknowledged_and(
        "at-least-once",
        5000,
        &["input record(s) not settled".into()],
        1,
        SMALL_QUEUE,
    );
}

#[test]
fn exactly_once_stopped_while_the_producer_queue_is_full_says_so_and_exits_3() {
    stop_with_outputs_unacknowledged_and(
        "exactly-once",
        2000,
        &["input record(s) not settled, the final commit failed".into()],
        1,
        SMALL_QUEUE,
    );
}

/// Deterministic incompressible lines (lz4 cannot shrink them), so the
/// volume the mock broker keeps is reached with few records.
fn noise_lines(n: usize, bytes: usize) -> String {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = String::with_capacity(n * (bytes + 1));
    for _ in 0..n {
        for _ in 0..bytes / 16 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.push_str(&format!("{x:016x}"));
        }
        out.push('\n');
    }
    out
}

#[test]
fn produce_into_the_dev_broker_never_loses_records_silently() {
    let (_broker, bs) = dev_broker(1);
    // More than one partition of the mock keeps: refused before sending.
    let out = bin()
        .args([
            "produce",
            "--brokers",
            &bs,
            "--count",
            "100001",
            "--rate",
            "0",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("100000") && err.contains("--partitions"),
        "{err}"
    );

    // ~7 MB that does not compress: the mock drops the oldest; produce says so.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("noise.jsonl");
    std::fs::write(&file, noise_lines(700, 10_000)).unwrap();
    let out = bin()
        .args(["produce", "--brokers", &bs, "--rate", "0", "--file"])
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("DROPPED") && err.contains("partition 0"),
        "{err}"
    );

    // Within the limits nothing is said.
    let (_broker, bs) = dev_broker(1);
    let out = bin()
        .args(["produce", "--brokers", &bs, "--count", "50", "--rate", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("DROPPED"), "{err}");
}

#[test]
fn produce_help_promises_no_embedded_broker_and_no_group() {
    let out = bin().args(["produce", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(!help.contains("--group-id"), "{help}");
    assert!(!help.to_lowercase().contains("embedded"), "{help}");
    assert!(help.contains("dev-broker"), "{help}");
}

#[test]
fn check_says_which_configuration_it_used() {
    let dir = tempfile::tempdir().unwrap();
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/answers.jsonl");
    let out = bin()
        .arg("check")
        .arg(&sample)
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("built-in defaults") && err.contains("examples/demo.toml"),
        "{err}"
    );
}
