//! `groundgate check` run as a built binary over a file mixing every kind of
//! record: exactly one terminal record and one audit row per line.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::{BIN, repo};

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// audit.jsonl without its seal records (`type` = "groundgate.seal/v1").
fn read_audit_rows(path: &Path) -> Vec<Value> {
    read_jsonl(path)
        .into_iter()
        .filter(|v| v.get("type").is_none())
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

fn rec(id: &str, answer: &str, extra: Value) -> Vec<u8> {
    let mut v = json!({
        "request_id": id,
        "answer": answer,
        "sources": [{"urn": "urn:a", "payload": "A"}, {"urn": "urn:b", "payload": {"k": 1}}],
        "provider": "openai", "model": "gpt-4o", "provenance": "rag", "confidence": 0.9,
        "prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 0.01
    });
    for (k, val) in extra.as_object().unwrap() {
        v[k] = val.clone();
    }
    serde_json::to_vec(&v).unwrap()
}

/// (line bytes, expected outcome)
fn mixed_lines() -> Vec<(Vec<u8>, &'static str)> {
    vec![
        (
            rec("clean", "Revenue grew[^1] on volume[^2].", json!({})),
            "accepted",
        ),
        (rec("oor", "Revenue grew[^7].", json!({})), "retry"),
        (rec("malf", "Revenue grew[^x].", json!({})), "retry"),
        (
            rec(
                "retry-still-bad",
                "Revenue grew[^7].",
                json!({"attempt": 1, "prior": {"completion_tokens": 0, "cost_usd": 0.0, "prompt_tokens": 1}}),
            ),
            "rejected",
        ),
        (
            rec(
                "retry-fixed",
                "Revenue grew[^1].",
                json!({"attempt": 1, "prior": {"completion_tokens": 0, "cost_usd": 0.0, "prompt_tokens": 1}}),
            ),
            "accepted",
        ),
        (
            rec("lenient", "Revenue grew[^9].", json!({"mode": "lenient"})),
            "accepted",
        ),
        (
            rec("forbidden", "This is a guaranteed win[^1].", json!({})),
            "rejected",
        ),
        (
            rec("low-conf", "Maybe[^1].", json!({"confidence": 0.1})),
            "accepted",
        ),
        (b"{not json".to_vec(), "dead_letter"),
        (
            b"{\"request_id\":\"bad-utf8\",\"answer\":\"\xff\xfe\"}".to_vec(),
            "dead_letter",
        ),
        (br#"{"answer":"no id"}"#.to_vec(), "dead_letter"),
        (
            rec("attempt-2", "x[^1]", json!({"attempt": 2})),
            "dead_letter",
        ),
        (rec("big", &"y".repeat(3000), json!({})), "dead_letter"),
        (b"".to_vec(), "dead_letter"),
    ]
}

fn write_config(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("gg.toml");
    std::fs::write(
        &path,
        "max_record_bytes = 2048\npolicy_version = \"test-1\"\n[policy]\nforbidden_terms = [\"Guaranteed\"]\n",
    )
    .unwrap();
    path
}

#[test]
fn every_line_gets_one_terminal_record_and_one_audit_row() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("answers.jsonl");
    let lines = mixed_lines();
    let mut f = std::fs::File::create(&input).unwrap();
    for (l, _) in &lines {
        f.write_all(l).unwrap();
        f.write_all(b"\n").unwrap();
    }
    drop(f);
    let out = dir.path().join("out");
    let cfg = write_config(dir.path());
    let status = Command::new(BIN)
        .args([
            "check",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--config",
        ])
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(
        status.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let stdout = String::from_utf8_lossy(&status.stdout);
    assert!(
        stdout.contains("dead_letter") && stdout.contains("records"),
        "{stdout}"
    );

    let finals = read_jsonl(&out.join("final.jsonl"));
    let retries = read_jsonl(&out.join("retry.jsonl"));
    let dead = read_jsonl(&out.join("dead_letter.jsonl"));
    let audit = read_audit_rows(&out.join("audit.jsonl"));
    assert_eq!(
        finals.len() + retries.len() + dead.len(),
        lines.len(),
        "one terminal record per line"
    );
    assert_eq!(audit.len(), lines.len(), "one audit row per line");

    // Audit rows are in input order and cover every line exactly once.
    let offsets: Vec<i64> = audit
        .iter()
        .map(|a| a["input"]["offset"].as_i64().unwrap())
        .collect();
    // input.offset is the 1-based line number, like dead_letter.jsonl's `line`.
    assert_eq!(offsets, (1..=lines.len() as i64).collect::<Vec<_>>());
    for (a, (_, want)) in audit.iter().zip(&lines) {
        assert_eq!(a["outcome"], *want, "audit row {a}");
        assert_eq!(a["input"]["topic"], "answers.jsonl");
        assert_eq!(a["policy_version"], "test-1");
    }

    // Terminal records land on the file of their outcome.
    let finals_by_id: BTreeMap<String, &Value> = finals
        .iter()
        .map(|f| (f["request_id"].as_str().unwrap().to_string(), f))
        .collect();
    assert_eq!(finals_by_id["clean"]["validation"]["ok"], true);
    assert_eq!(finals_by_id["retry-still-bad"]["validation"]["ok"], false);
    assert_eq!(finals_by_id["retry-still-bad"]["retry_count"], 1);
    assert_eq!(
        finals_by_id["retry-still-bad"]["prompt_tokens"], 11,
        "usage summed with prior"
    );
    assert_eq!(finals_by_id["retry-fixed"]["validation"]["ok"], true);
    assert_eq!(
        finals_by_id["lenient"]["validation"]["warnings"][0]["kind"],
        "out_of_range"
    );
    assert_eq!(
        finals_by_id["forbidden"]["validation"]["errors"][0]["kind"],
        "forbidden_term"
    );
    assert_eq!(
        finals_by_id["low-conf"]["validation"]["warnings"][0]["kind"],
        "low_confidence"
    );
    let retry_ids: Vec<&str> = retries
        .iter()
        .map(|r| r["request_id"].as_str().unwrap())
        .collect();
    assert_eq!(retry_ids, ["oor", "malf"]);
    assert!(
        retries[0]["prompt"]
            .as_str()
            .unwrap()
            .contains("Do not invent")
    );

    // Dead letters: 1-based line, kind, detail naming the problem, raw text.
    let dl: Vec<(u64, &str)> = dead
        .iter()
        .map(|d| (d["line"].as_u64().unwrap(), d["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        dl,
        [
            (9, "invalid_json"),
            (10, "invalid_utf8"),
            (11, "schema"),
            (12, "schema"),
            (13, "too_large"),
            (14, "invalid_json")
        ]
    );
    assert_eq!(dead[0]["raw"], "{not json");
    // Bytes that are not UTF-8 are kept exactly, as base64.
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    assert_eq!(dead[1].get("raw"), None);
    assert_eq!(
        b64.decode(dead[1]["raw_base64"].as_str().unwrap()).unwrap(),
        lines[9].0,
        "original bytes, exactly"
    );
    // A line over max_record_bytes keeps only its length, digest and a preview.
    let big = &lines[12].0;
    assert_eq!(dead[4].get("raw"), None);
    assert_eq!(dead[4]["length"], big.len());
    assert_eq!(dead[4]["sha256"], sha256_hex(big));
    assert!(big.starts_with(dead[4]["preview"].as_str().unwrap().as_bytes()));
    // Every dead-letter line is canonical (keys sorted, compact), and its
    // `line` is the audit row's input.offset.
    let raw_dead = std::fs::read_to_string(out.join("dead_letter.jsonl")).unwrap();
    for (text, d) in raw_dead.lines().zip(&dead) {
        assert_eq!(serde_json::to_string(d).unwrap(), text);
        let n = d["line"].as_i64().unwrap();
        let a = &audit[n as usize - 1];
        assert_eq!(a["input"]["offset"], n);
        assert_eq!(a["outcome"], "dead_letter");
    }
    assert!(dead[2]["detail"].as_str().unwrap().contains("request_id"));
    assert!(dead[3]["detail"].as_str().unwrap().starts_with("attempt"));
    assert!(dead[4]["detail"].as_str().unwrap().contains("2048"));
    assert_eq!(
        audit[11]["request_id"], "attempt-2",
        "request id kept when readable"
    );
}

#[test]
fn worst_answers_are_bounded_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let run = |n: &str| {
        Command::new(BIN)
            .arg("check")
            .arg(repo("examples/answers.jsonl"))
            .args(["--worst", n, "--out"])
            .arg(dir.path().join(format!("out-{n}")))
            .output()
            .unwrap()
    };
    let o = run("1001");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("at most 1000"), "{err}");
    assert!(!dir.path().join("out-1001").exists());
    let o = run("1000");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn fail_on_sets_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    std::fs::write(
        &input,
        [
            rec("ok", "fine[^1]", json!({})),
            b"\n".to_vec(),
            rec("r", "bad[^9]", json!({})),
        ]
        .concat(),
    )
    .unwrap();
    let run = |flags: &[&str]| {
        Command::new(BIN)
            .args(["check", input.to_str().unwrap(), "--out"])
            .arg(dir.path().join("o"))
            .args(flags)
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(run(&[]), Some(0));
    assert_eq!(
        run(&["--fail-on", "rejected", "--fail-on", "dead_letter"]),
        Some(0)
    );
    assert_eq!(
        run(&["--fail-on", "dead_letter", "--fail-on", "retry"]),
        Some(1)
    );
    // Exit 1 says which outcome caused it.
    let o = Command::new(BIN)
        .args(["check", input.to_str().unwrap(), "--out"])
        .arg(dir.path().join("o"))
        .args([
            "--fail-on",
            "dead_letter",
            "--fail-on",
            "retry",
            "--fail-on",
            "rejected",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("exit code 1 because of --fail-on retry: 1 record had outcome retry"),
        "{stderr}"
    );
}

/// Writes `n` records, every 7th one broken, to a file.
fn many_lines(path: &Path, n: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..n {
        if i % 7 == 3 {
            f.write_all(b"{broken").unwrap();
        } else {
            let answer = if i % 5 == 0 {
                "Revenue grew[^1] on volume[^3]."
            } else {
                "Revenue grew[^1] on volume[^2]."
            };
            f.write_all(&rec(&format!("r{i}"), answer, json!({})))
                .unwrap();
        }
        f.write_all(b"\n").unwrap();
    }
}

/// A file's lines with the audit timestamp (the one non-deterministic
/// field) blanked; a seal (whose row hashes cover `ts`) is reduced to the
/// offsets it covers.
fn without_ts(path: &Path) -> Vec<String> {
    read_jsonl(path)
        .into_iter()
        .map(|mut v| {
            if v.get("type").is_some() {
                return format!(
                    "seal {} {}..={}",
                    v["seq"], v["first_offset"], v["last_offset"]
                );
            }
            if v.get("ts").is_some() {
                v["ts"] = json!(0);
            }
            v.to_string()
        })
        .collect()
}

#[test]
fn outputs_do_not_depend_on_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    many_lines(&input, 5000);
    let outs: Vec<_> = ["1", "4"]
        .iter()
        .map(|t| {
            let out = dir.path().join(format!("t{t}"));
            let o = Command::new(BIN)
                .args(["check", input.to_str().unwrap(), "--threads", t, "--out"])
                .arg(&out)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            out
        })
        .collect();
    for f in [
        "final.jsonl",
        "retry.jsonl",
        "dead_letter.jsonl",
        "audit.jsonl",
    ] {
        let a = without_ts(&outs[0].join(f));
        let b = without_ts(&outs[1].join(f));
        assert!(!a.is_empty(), "{f} has lines");
        assert_eq!(a.len(), b.len(), "{f}");
        if let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) {
            panic!("{f} line {}: {} != {}", i + 1, a[i], b[i]);
        }
    }
    let o = Command::new(BIN)
        .args(["check", input.to_str().unwrap(), "--threads", "0", "--out"])
        .arg(dir.path().join("t0"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_run_ends_with_what_it_cost() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args(["check", "--threads", "1", "--out"])
        .arg(dir.path().join("out"))
        .arg(repo("examples/answers.jsonl"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    let cost = last
        .strip_prefix("groundgate check: 300 records in ")
        .and_then(|rest| rest.split_once(" s on 1 thread ("))
        .and_then(|(_, rest)| rest.split_once(" records/s); CPU "))
        .and_then(|(_, rest)| rest.split_once(" s, "))
        .and_then(|(_, rest)| rest.strip_suffix(" µs a record"))
        .and_then(|micros| micros.parse::<u64>().ok());
    assert!(
        cost.is_some_and(|micros| micros > 0),
        "the last line gives the CPU a record: {last}"
    );
}

/// Waits for `child` and returns whether it succeeded and its own peak
/// resident memory: the high-water mark of its address space (`VmHWM`),
/// sampled until it exits. wait4's `ru_maxrss` would not do: Linux carries
/// the spawning process's high-water mark over `exec` into it, so the test
/// binary's own peak (other tests hold large buffers) shows up as the
/// child's. The mark only grows, so the last sample is the peak up to it;
/// what is missed is growth in the child's last sampling interval, after
/// its large line is long read.
fn wait_with_peak_rss(mut child: std::process::Child) -> (bool, u64) {
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    loop {
        if let Ok(status) = std::fs::read_to_string(&status_path)
            && let Some(kb) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kb * 1024);
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (status.success(), peak);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

#[test]
fn a_line_far_over_the_limit_is_dead_lettered_by_digest() {
    // 160 MB in one line between two good records: streamed past, never
    // held or copied into dead_letter.jsonl.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let mut f = std::fs::File::create(&input).unwrap();
    f.write_all(&rec("before", "x[^1]", json!({}))).unwrap();
    f.write_all(b"\n").unwrap();
    let chunk = vec![b'z'; 1 << 20];
    let mut digest = <sha2::Sha256 as sha2::Digest>::new();
    for _ in 0..160 {
        f.write_all(&chunk).unwrap();
        sha2::Digest::update(&mut digest, &chunk);
    }
    f.write_all(b"\n").unwrap();
    f.write_all(&rec("after", "y[^1]", json!({}))).unwrap();
    drop(f);
    let out = dir.path().join("o");
    let child = Command::new(BIN)
        .args(["check", input.to_str().unwrap(), "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (ok, rss) = wait_with_peak_rss(child);
    assert!(ok, "check failed");
    let dead = read_jsonl(&out.join("dead_letter.jsonl"));
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0]["line"], 2);
    assert_eq!(dead[0]["kind"], "too_large");
    assert_eq!(dead[0]["length"], 160 << 20);
    assert_eq!(
        dead[0]["sha256"],
        hex::encode(sha2::Digest::finalize(digest))
    );
    assert!(
        std::fs::metadata(out.join("dead_letter.jsonl"))
            .unwrap()
            .len()
            < 4096
    );
    // Bounded memory: far below the line's size.
    assert!(rss > 0, "no memory sample of the child");
    assert!(rss < 96 << 20, "peak RSS {} MiB", rss >> 20);
    let audit = read_audit_rows(&out.join("audit.jsonl"));
    let ids: Vec<_> = audit
        .iter()
        .map(|a| a["request_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["before", "", "after"]);
    assert_eq!(audit[1]["answer_hash"], dead[0]["sha256"]);
}

#[test]
fn a_closed_or_full_stdout_is_an_error_message_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    many_lines(&input, 20);
    // stdout is a pipe whose reader is gone (`check ... | head -0`).
    let mut child = Command::new(BIN)
        .args(["check", input.to_str().unwrap(), "--out"])
        .arg(dir.path().join("o1"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(0),
        "a closed pipe keeps the exit code: {stderr}"
    );
    assert!(stderr.contains("broken pipe"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The outputs were written before the summary.
    assert_eq!(
        read_audit_rows(&dir.path().join("o1/audit.jsonl")).len(),
        20
    );

    if Path::new("/dev/full").exists() {
        let o = Command::new(BIN)
            .args(["check", input.to_str().unwrap(), "--out"])
            .arg(dir.path().join("o2"))
            .stdout(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// A named pipe (`check <(zcat …)`, a FIFO) is read from its first byte:
/// opening every input before the run, to refuse a bad one early, reads
/// the bytes that tell its packing, and a pipe cannot be opened again from
/// its start. Plain or gzip, the outputs equal those of the same bytes in
/// a file of the same name.
#[test]
fn a_named_pipe_is_read_whole_plain_or_gzip() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(repo("examples/answers.jsonl")).unwrap();
    let check_into = |input: &Path, out: &Path| {
        let o = Command::new(BIN)
            .args([
                "check",
                input.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let file_dir = dir.path().join("file");
    std::fs::create_dir(&file_dir).unwrap();
    std::fs::write(file_dir.join("answers.jsonl"), &bytes).unwrap();
    let reference = dir.path().join("out-file");
    check_into(&file_dir.join("answers.jsonl"), &reference);

    for gzip in [false, true] {
        let pipe_dir = dir.path().join(format!("pipe-{gzip}"));
        std::fs::create_dir(&pipe_dir).unwrap();
        let fifo = pipe_dir.join("answers.jsonl");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let data = if gzip {
            let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            z.write_all(&bytes).unwrap();
            z.finish().unwrap()
        } else {
            bytes.clone()
        };
        let to = fifo.clone();
        let writer = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(to)?;
            f.write_all(&data)
        });
        let out = dir.path().join(format!("out-pipe-{gzip}"));
        let mut cmd = Command::new(BIN);
        cmd.args([
            "check",
            fifo.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null());
        let mut check = crate::common::Proc::spawn("check", cmd);
        // A check that closes the pipe early waits for a writer to open it
        // again; a bound, not a measure, so a failure ends the test.
        let status = check.wait_exit(std::time::Duration::from_secs(120));
        // Lets a writer still waiting for a reader go.
        let _ = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo);
        assert!(
            status.is_some_and(|s| s.success()),
            "check over a pipe: {status:?}"
        );
        writer.join().unwrap().unwrap();
        for f in [
            "final.jsonl",
            "retry.jsonl",
            "dead_letter.jsonl",
            "audit.jsonl",
        ] {
            let (a, b) = (without_ts(&reference.join(f)), without_ts(&out.join(f)));
            assert!(!a.is_empty(), "{f} has lines");
            assert_eq!(a, b, "{f}, gzip {gzip}");
        }
    }
}

#[test]
fn stdin_input_and_no_trailing_newline() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let mut child = Command::new(BIN)
        .args(["check", "-", "--out", out.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&rec("a", "x[^1]", json!({}))).unwrap();
    stdin.write_all(b"\r\n").unwrap();
    stdin.write_all(&rec("b", "y[^2]", json!({}))).unwrap();
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let audit = read_audit_rows(&out.join("audit.jsonl"));
    assert_eq!(audit.len(), 2, "CRLF handled, no phantom record at EOF");
    assert!(
        audit
            .iter()
            .all(|a| a["input"]["topic"] == "stdin" && a["outcome"] == "accepted")
    );
}

#[test]
fn bad_config_is_a_usage_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.toml");
    std::fs::write(&cfg, "[policy]\nmin_confidense = 0.2\n").unwrap();
    let input = dir.path().join("in.jsonl");
    std::fs::write(&input, "").unwrap();
    let out = Command::new(BIN)
        .args(["check", input.to_str().unwrap(), "--out"])
        .arg(dir.path().join("o"))
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("min_confidense"), "{err}");

    let missing = Command::new(BIN)
        .args(["check", "/nonexistent/in.jsonl", "--out"])
        .arg(dir.path().join("o"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/in.jsonl"));
}

/// A Schema Registry topic dumped as lines (`kcat -C -e` writes each value
/// and a newline) is read with the worker's setting: without it the framed
/// line is a dead letter that names the setting, with it both lines are
/// judged as their JSON text is. The schema id, 266, holds byte 0x0A, a
/// newline, which does not cut the value.
#[test]
fn framed_lines_are_read_with_the_workers_value_framing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("dump.jsonl");
    let framed = [&[0u8, 0, 0, 1, 0x0a][..], &rec("a", "x[^1]", json!({}))].concat();
    let lines = [
        framed.as_slice(),
        b"\n",
        &rec("b", "y[^2]", json!({})),
        b"\n",
    ]
    .concat();
    std::fs::write(&input, lines).unwrap();
    let run = |out: &Path, framing: Option<&str>| {
        let mut cmd = crate::common::bin();
        cmd.arg("check").arg(&input).arg("--out").arg(out);
        if let Some(f) = framing {
            cmd.env("GROUNDGATE_VALUE_FRAMING", f);
        }
        let o = cmd.output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    };

    let off = dir.path().join("off");
    run(&off, None);
    let dead = read_jsonl(&off.join("dead_letter.jsonl"));
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0]["kind"], "invalid_json");
    assert_eq!(dead[0]["line"], 1);
    assert!(
        dead[0]["detail"]
            .as_str()
            .unwrap()
            .contains("schema id (266) before its JSON: it looks like Confluent Schema Registry wire format; set value_framing = \"schema-registry\""),
        "{}",
        dead[0]["detail"]
    );
    assert_eq!(
        dead[0]["raw"].as_str().unwrap().as_bytes(),
        framed.as_slice()
    );

    let on = dir.path().join("on");
    run(&on, Some("schema-registry"));
    assert_eq!(std::fs::read(on.join("dead_letter.jsonl")).unwrap(), b"");
    let finals = read_jsonl(&on.join("final.jsonl"));
    let ids: Vec<&str> = finals
        .iter()
        .map(|f| f["request_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b"]);
}

/// The worker's `[output_schema_ids]` frames what it writes to Kafka; the
/// files `check` writes stay JSON Lines, and `check` says so.
#[test]
fn output_schema_ids_leave_checks_files_plain_and_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let input = one_record(dir.path());
    let plain = dir.path().join("plain");
    let o = check(&[os(&input), os("--out"), os(&plain)]);
    assert_eq!(o.status.code(), Some(0));
    let config = dir.path().join("framed.toml");
    std::fs::write(&config, "[output_schema_ids]\nfinal = 101\naudit = 103\n").unwrap();
    let framed = dir.path().join("framed");
    let o = check(&[
        os(&input),
        os("--out"),
        os(&framed),
        os("--config"),
        os(&config),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("output_schema_ids (final 101, audit 103) frames the worker's Kafka outputs; the files written here are plain JSON"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(framed.join("final.jsonl")).unwrap(),
        std::fs::read(plain.join("final.jsonl")).unwrap()
    );
    assert_eq!(
        without_ts(&framed.join("audit.jsonl")),
        without_ts(&plain.join("audit.jsonl"))
    );
}

/// `check` with the given arguments, GROUNDGATE_* variables removed.
fn check(args: &[&std::ffi::OsStr]) -> std::process::Output {
    crate::common::bin()
        .arg("check")
        .args(args)
        .output()
        .unwrap()
}

fn os(s: &(impl AsRef<std::ffi::OsStr> + ?Sized)) -> &std::ffi::OsStr {
    s.as_ref()
}

/// `in.jsonl` in `dir`, holding one accepted record.
fn one_record(dir: &Path) -> std::path::PathBuf {
    let input = dir.join("in.jsonl");
    std::fs::write(&input, rec("a", "x[^1]", json!({}))).unwrap();
    input
}

/// A finished run of two accepted records into `out`, for tests that need
/// outputs already there.
fn finished_run(dir: &Path, out: &Path) {
    let input = dir.join("first.jsonl");
    let mut text = rec("a", "x[^1]", json!({}));
    text.push(b'\n');
    text.extend(rec("b", "y[^2]", json!({})));
    std::fs::write(&input, text).unwrap();
    let o = check(&[os(&input), os("--out"), os(out)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn outputs_that_are_inputs_are_refused_before_anything_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    finished_run(dir.path(), &out);
    let snapshot = |out: &Path| -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(out)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect()
    };
    let before = snapshot(&out);
    let final_ = out.join("final.jsonl");
    let audit = out.join("audit.jsonl");
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&final_, &link).unwrap();
    let cfg = out.join("retry.jsonl");
    let (dotted, o2, o3) = (
        dir.path().join("o/../o"),
        dir.path().join("o2"),
        dir.path().join("o3"),
    );
    let first = dir.path().join("first.jsonl");
    let o2_audit = o2.join("audit.jsonl");
    let cases: Vec<(Vec<&std::ffi::OsStr>, &str)> = vec![
        // The input is one of the outputs (directly, through a symlink, or
        // spelled with `..`).
        (vec![os(&final_), os("--out"), os(&out)], "final.jsonl"),
        (vec![os(&link), os("--out"), os(&out)], "final.jsonl"),
        (vec![os(&final_), os("--out"), os(&dotted)], "final.jsonl"),
        // The report would overwrite the audit trail (of an output
        // directory that exists, or one not made yet).
        (
            vec![
                os(&link),
                os("--out"),
                os(&o2),
                os("--report"),
                os(&o2_audit),
            ],
            "audit.jsonl",
        ),
        (
            vec![
                os(&first),
                os("--out"),
                os(&out),
                os("--report"),
                os(&audit),
            ],
            "audit.jsonl",
        ),
        // The report would overwrite the input.
        (
            vec![os(&link), os("--out"), os(&o3), os("--report"), os(&link)],
            "--report",
        ),
        // A configuration file among the outputs.
        (
            vec![
                os(&first),
                os("--out"),
                os(&out),
                os("--compare-config"),
                os(&cfg),
            ],
            "--compare-config",
        ),
    ];
    for (args, names) in cases {
        let o = check(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
        assert!(snapshot(&out) == before, "{args:?} changed the outputs");
    }
    assert!(!dir.path().join("o2").exists() && !dir.path().join("o3").exists());
}

/// Runs `check` with a file-size limit, so writing the outputs fails half-way.
fn check_with_file_limit(
    args: &[&std::ffi::OsStr],
    limit: u64,
    ignore_sigxfsz: bool,
) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = crate::common::bin();
    cmd.arg("check").args(args);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if ignore_sigxfsz {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

/// The bytes of a finished run's outputs that a failed or stopped run must
/// leave as they were.
fn kept_outputs(out: &Path) -> Vec<Vec<u8>> {
    ["final.jsonl", "audit.jsonl", "summary.json"]
        .iter()
        .map(|f| std::fs::read(out.join(f)).unwrap())
        .collect()
}

/// The `.partial` files in `out`: none once a run has ended, unless killed.
fn partial_files(out: &Path) -> Vec<String> {
    std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".partial"))
        .collect()
}

#[test]
fn a_run_that_fails_half_way_leaves_no_finished_looking_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    finished_run(dir.path(), &out);
    let read_kept = || kept_outputs(&out);
    let previous = read_kept();
    let input = dir.path().join("big.jsonl");
    many_lines(&input, 3000);
    // A write error (as on a full disk): exit 2, the previous run's outputs
    // untouched, nothing of this run under the final names.
    let o = check_with_file_limit(&[os(&input), os("--out"), os(&out)], 256 << 10, true);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("File too large") || err.contains("too large"),
        "{err}"
    );
    assert!(read_kept() == previous, "the previous outputs changed");
    // Killed by the limit (SIGXFSZ) instead: the same, and the unfinished
    // files are recognisable by their names.
    let o = check_with_file_limit(&[os(&input), os("--out"), os(&out)], 256 << 10, false);
    assert_ne!(o.status.code(), Some(0));
    assert!(read_kept() == previous, "the previous outputs changed");
    assert!(out.join("final.jsonl.partial").exists());
    // The next run completes and replaces everything.
    let o = check(&[os(&input), os("--out"), os(&out)]);
    assert_eq!(o.status.code(), Some(0));
    // Counted without parsing: a large heap in this test process would
    // show in the peak memory another test measures for its child.
    let rows = std::fs::read_to_string(out.join("audit.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.contains("groundgate.seal"))
        .count();
    assert_eq!(rows, 3000);
    let leftovers = partial_files(&out);
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Ctrl-C in the middle of a run (here while it waits for more of standard
/// input): it stops, says so, exits 130, removes its `.partial` files and
/// leaves the previous run's outputs as they were.
#[test]
fn ctrl_c_stops_a_run_and_leaves_the_previous_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    finished_run(dir.path(), &out);
    let before = kept_outputs(&out);
    let child = crate::common::bin()
        .args([os("check"), os("-"), os("--out"), os(&out)])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut run = crate::common::Proc {
        child,
        name: "check",
    };
    let mut stdin = run.child.stdin.take().unwrap();
    for (line, _) in mixed_lines() {
        stdin.write_all(&line).unwrap();
        stdin.write_all(b"\n").unwrap();
    }
    stdin.flush().unwrap();
    crate::common::wait_for("the run's .partial files", crate::common::WAIT, || {
        out.join("final.jsonl.partial").exists().then_some(())
    });
    run.signal("INT");
    let status = run
        .wait_exit(crate::common::WAIT)
        .expect("check stops on Ctrl-C while its input is still open");
    drop(stdin);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut run.child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted before the run finished"), "{err}");
    assert!(kept_outputs(&out) == before, "the previous outputs changed");
    let leftovers = partial_files(&out);
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A pretty-printed JSON array is not JSON Lines: every line becomes a dead
/// letter, which alone looks like a bad stream. The run still accounts for
/// every line (exit 0), and stderr names the input and what `check` reads.
/// An input with any answer record gets no such note.
#[test]
fn an_input_without_one_answer_record_is_named_with_what_check_reads() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<Value> = mixed_lines()
        .iter()
        .filter_map(|(line, _)| serde_json::from_slice(line).ok())
        .collect();
    let array = dir.path().join("export.json");
    std::fs::write(&array, serde_json::to_vec_pretty(&records).unwrap()).unwrap();
    let good = dir.path().join("good.jsonl");
    let mut text = Vec::new();
    for (line, _) in mixed_lines() {
        text.extend(line);
        text.push(b'\n');
    }
    std::fs::write(&good, text).unwrap();
    let out = dir.path().join("o");
    let o = check(&[os(&array), os(&good), os("--out"), os(&out)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("is an answer record"))
        .collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains("of export.json ")
            && notes[0].contains("JSON Lines")
            && notes[0].contains("jq -c '.[]'"),
        "{err}"
    );

    // An empty input is named too: the trail holds nothing of it. A run
    // that read no record says its audit trail is empty instead of naming
    // a run that sealed nothing.
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let o = check(&[os(&empty), os(&good), os("--out"), os(&out)]);
    let (stdout, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(err.contains("empty.jsonl is empty"), "{err}");
    assert!(stdout.contains("audit trail: run "), "{stdout}");
    let o = check(&[os(&empty), os("--out"), os(&out)]);
    let (stdout, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(err.contains("empty.jsonl is empty"), "{err}");
    assert!(
        stdout.contains("audit trail: empty (no record read, nothing to verify)"),
        "{stdout}"
    );
}

/// A dump of a topic written through a Schema Registry serializer has every
/// line behind a 5-byte header: its note names the header and says what
/// the first line's dead letter says to change (the framing setting, or
/// value_schema_ids), never how to convert a JSON array.
#[test]
fn an_input_of_framed_lines_is_named_with_its_framing_not_jq() {
    let dir = tempfile::tempdir().unwrap();
    let mut dump = Vec::new();
    for (line, _) in mixed_lines().iter().filter(|(l, _)| l.starts_with(b"{")) {
        dump.extend([0, 0, 0, 0, 42]);
        dump.extend(line);
        dump.push(b'\n');
    }
    let input = dir.path().join("answers-dump.jsonl");
    std::fs::write(&input, dump).unwrap();
    let only_7 = dir.path().join("sr.toml");
    std::fs::write(
        &only_7,
        "value_framing = \"schema-registry\"\nvalue_schema_ids = [7]\n",
    )
    .unwrap();
    let out = dir.path().join("o");
    for (config, says) in [
        (None, "set value_framing = \"schema-registry\""),
        (
            Some(&only_7),
            "Schema Registry schema id 42 is not one of value_schema_ids = [7]",
        ),
    ] {
        let mut args = vec![os(&input), os("--out"), os(&out)];
        if let Some(c) = config {
            args.extend([os("--config"), os(c)]);
        }
        let o = check(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{err}");
        let note = err
            .lines()
            .find(|l| l.contains("is an answer record"))
            .unwrap_or_else(|| panic!("no note: {err}"));
        assert!(
            note.contains("of answers-dump.jsonl ")
                && note.contains("Confluent Schema Registry header")
                && note.contains("Line 1: ")
                && note.contains(says),
            "{note}"
        );
        assert!(!note.contains("jq"), "{note}");
    }
}

/// `--compare-config` naming the file `--config` names (by its path or
/// another) would compare a configuration with itself and always report
/// no change: a usage mistake, refused before anything is written.
#[test]
fn a_what_if_against_the_same_configuration_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = one_record(dir.path());
    let config = repo("examples/demo.toml");
    let link = dir.path().join("current.toml");
    std::os::unix::fs::symlink(&config, &link).unwrap();
    let out = dir.path().join("o");
    for baseline in [&config, &link] {
        let o = check(&[
            os(&input),
            os("--out"),
            os(&out),
            os("--config"),
            os(&config),
            os("--compare-config"),
            os(baseline),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("is the file --config names") && err.contains("baseline"),
            "{err}"
        );
        assert!(!out.join("summary.json").exists(), "{err}");
    }
}

/// A record longer than `--config`'s `max_record_bytes` but within the
/// baseline's is judged by the baseline in full: lowering the limit turns
/// it from accepted into a dead letter, and the what-if says so. The
/// outputs are still those of `--config`: a too_large summary, not the
/// record.
#[test]
fn a_what_if_that_lowers_max_record_bytes_counts_the_records_it_turns_away() {
    let dir = tempfile::tempdir().unwrap();
    let big = rec(
        "big",
        "x[^1]",
        json!({"sources": [{"urn": "urn:a", "payload": "A ".repeat(700_000)}]}),
    );
    assert!((1 << 20..2 << 20).contains(&big.len()));
    let input = dir.path().join("in.jsonl");
    let mut text = rec("small", "x[^1]", json!({}));
    text.push(b'\n');
    text.extend(&big);
    text.push(b'\n');
    std::fs::write(&input, text).unwrap();
    let (tight, loose) = (dir.path().join("tight.toml"), dir.path().join("loose.toml"));
    std::fs::write(&tight, "max_record_bytes = 1048576\n").unwrap();
    std::fs::write(
        &loose,
        "max_record_bytes = 4194304\nmax_output_bytes = 4194304\n",
    )
    .unwrap();
    let out = dir.path().join("o");
    let o = check(&[
        os(&input),
        os("--out"),
        os(&out),
        os("--config"),
        os(&tight),
        os("--compare-config"),
        os(&loose),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        summary["comparison"]["transitions"],
        json!([{"count": 1, "examples": ["big"], "from": "accepted", "to": "dead_letter"}]),
        "{err}"
    );
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(printed.contains("1 record(s) change outcome"), "{printed}");
    let dead = read_jsonl(&out.join("dead_letter.jsonl"));
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0]["kind"], "too_large");
    assert_eq!(dead[0]["length"], big.len());
    assert_eq!(dead[0]["sha256"], sha256_hex(&big));
    assert!(dead[0].get("raw").is_none(), "{}", dead[0]);
    let rows = read_audit_rows(&out.join("audit.jsonl"));
    assert_eq!(rows[1]["outcome"], "dead_letter");
    assert_eq!(rows[1]["answer_hash"], sha256_hex(&big));
}

/// With two configurations, a problem of the baseline's says it is the
/// baseline's: a problem found by validation, not in the file's syntax,
/// quotes no path of its own.
#[test]
fn an_invalid_baseline_configuration_is_named_as_the_compare_config() {
    let dir = tempfile::tempdir().unwrap();
    let input = one_record(dir.path());
    let (good, bad) = (dir.path().join("new.toml"), dir.path().join("current.toml"));
    std::fs::write(&good, "max_record_bytes = 1048576\n").unwrap();
    std::fs::write(&bad, "max_record_bytes = 4194304\n").unwrap();
    let out = dir.path().join("o");
    let o = check(&[
        os(&input),
        os("--out"),
        os(&out),
        os("--config"),
        os(&good),
        os("--compare-config"),
        os(&bad),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("--compare-config {}", bad.display()))
            && err.contains("max_record_bytes = 4194304 is larger than max_output_bytes"),
        "{err}"
    );
    assert!(!out.exists(), "{err}");
}

/// `--report` into a directory that does not exist yet is made like
/// `--out`, not found missing after every record was judged.
#[test]
fn the_report_directory_is_created_like_out() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("reports/2026-11/report.html");
    let (out, input) = (dir.path().join("o"), one_record(dir.path()));
    let o = crate::common::bin()
        .arg("check")
        .arg(&input)
        .args([os("--out"), os(&out), os("--report"), os(&report)])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(report.is_file(), "{err}");
}

#[test]
fn an_absurd_thread_count_is_bounded_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    many_lines(&input, 10);
    let o = check(&[
        os(&input),
        os("--out"),
        os(&dir.path().join("o")),
        os("--threads"),
        os("100000"),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("--threads 100000") && err.contains("using"),
        "{err}"
    );
}

#[test]
fn summary_counters_saturate_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let mut text = Vec::new();
    for i in 0..3 {
        text.extend(rec(
            &format!("r{i}"),
            "x[^1]",
            json!({"prompt_tokens": u64::MAX, "cost_usd": 1.7e308}),
        ));
        text.push(b'\n');
    }
    std::fs::write(&input, text).unwrap();
    let out = dir.path().join("o");
    let report = dir.path().join("r.html");
    let o = check(&[
        os(&input),
        os("--out"),
        os(&out),
        os("--report"),
        os(&report),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["prompt_tokens"], json!(u64::MAX));
    assert_eq!(s["cost_usd"], json!(f64::MAX));
    let saturated = s["saturated"].as_array().unwrap();
    assert!(saturated.contains(&json!("prompt_tokens")), "{s}");
    assert!(saturated.contains(&json!("cost_usd")), "{s}");
    assert_eq!(s["models"][0]["prompt_tokens"], json!(u64::MAX));
    let html = std::fs::read_to_string(&report).unwrap();
    let costs: Vec<&str> = html
        .split("data-k=\"cost_usd\">")
        .skip(1)
        .map(|rest| &rest[..rest.find('<').unwrap()])
        .collect();
    assert!(!costs.is_empty());
    for c in costs {
        assert!(
            c.trim_start_matches('$')
                .replace(',', "")
                .parse::<f64>()
                .is_ok_and(f64::is_finite),
            "cost shown as {c:?}"
        );
    }
    assert!(
        html.contains("at least"),
        "the report says the totals are a floor"
    );
}

#[test]
fn a_byte_order_mark_at_the_start_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let mut text = b"\xEF\xBB\xBF".to_vec();
    text.extend(rec("a", "x[^1]", json!({})));
    text.push(b'\n');
    text.extend(rec("b", "y[^2]", json!({})));
    std::fs::write(&input, text).unwrap();
    let out = dir.path().join("o");
    let o = check(&[os(&input), os("--out"), os(&out)]);
    assert_eq!(o.status.code(), Some(0));
    let audit = read_audit_rows(&out.join("audit.jsonl"));
    let outcomes: Vec<&str> = audit
        .iter()
        .map(|a| a["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["accepted", "accepted"]);
    // The same from standard input.
    let mut child = crate::common::bin()
        .args(["check", "-", "--out"])
        .arg(dir.path().join("o2"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&std::fs::read(&input).unwrap()).unwrap();
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert!(
        !std::fs::read_to_string(dir.path().join("o2/dead_letter.jsonl"))
            .unwrap()
            .contains("invalid_json")
    );
}

#[test]
fn the_banner_names_every_configuration_layer() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    many_lines(&input, 2);
    let cfg = dir.path().join("gg.toml");
    std::fs::write(&cfg, "policy_version = \"file\"\n").unwrap();
    let run = |with_file: bool| {
        let mut cmd = crate::common::bin();
        cmd.args(["check", input.to_str().unwrap(), "--out"])
            .arg(dir.path().join("o"))
            .env("GROUNDGATE_POLICY_VERSION", "from-env");
        if with_file {
            cmd.arg("--config").arg(&cfg);
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(0));
        let s: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("o/summary.json")).unwrap())
                .unwrap();
        assert_eq!(s["policy_version"], "from-env", "the variable applied");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = run(false);
    let banner = err
        .lines()
        .find(|l| l.starts_with("configuration:"))
        .unwrap_or_default();
    assert!(banner.contains("GROUNDGATE_POLICY_VERSION"), "{err}");
    assert!(banner.contains("built-in defaults"), "{err}");
    let err = run(true);
    let banner = err
        .lines()
        .find(|l| l.starts_with("configuration:"))
        .unwrap_or_default();
    assert!(
        banner.contains("GROUNDGATE_POLICY_VERSION") && banner.contains("gg.toml"),
        "{err}"
    );
}

#[test]
fn an_out_that_is_a_file_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let input = one_record(dir.path());
    let out = dir.path().join("notes.txt");
    std::fs::write(&out, "kept").unwrap();
    let o = check(&[os(&input), os("--out"), os(&out)]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("is a file, not a directory"),
        "the error says what is wrong with --out: {stderr}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept");
}

#[test]
fn gzip_and_zstd_inputs_give_the_plain_file_s_verdicts_and_other_packings_are_refused() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let plain = repo("examples/answers.jsonl");
    let text = std::fs::read(&plain).unwrap();
    let gz = dir.path().join("answers.jsonl.gz");
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&text).unwrap();
    let gz_bytes = z.finish().unwrap();
    std::fs::write(&gz, &gz_bytes).unwrap();
    // No telling name: the packing is read from the first bytes.
    let zst = dir.path().join("answers.data");
    std::fs::write(&zst, zstd::encode_all(text.as_slice(), 3).unwrap()).unwrap();
    let run = |input: &Path, out: &str| {
        let out = dir.path().join(out);
        let o = check(&[os(input), os("--out"), os(&out)]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        out
    };
    let want = run(&plain, "plain");
    for (input, out) in [(&gz, "gz"), (&zst, "zst")] {
        let got = run(input, out);
        for f in ["final.jsonl", "retry.jsonl"] {
            assert!(
                std::fs::read(want.join(f)).unwrap() == std::fs::read(got.join(f)).unwrap(),
                "{out}: {f} differs from the plain file's"
            );
        }
        // The dead letters differ only in the input they name.
        let unnamed = |dir: &Path| -> Vec<Value> {
            read_jsonl(&dir.join("dead_letter.jsonl"))
                .into_iter()
                .map(|mut v| {
                    v.as_object_mut().unwrap().remove("input");
                    v
                })
                .collect()
        };
        assert_eq!(unnamed(&want), unnamed(&got), "{out}: dead_letter.jsonl");
        let audit = Command::new(BIN)
            .args(["audit", "verify"])
            .arg(got.join("audit.jsonl"))
            .output()
            .unwrap();
        assert_eq!(audit.status.code(), Some(0), "{out}: audit verify");
    }

    // A cut stream stops the run with a read error and no outputs.
    let cut = dir.path().join("cut.jsonl.gz");
    std::fs::write(&cut, &gz_bytes[..gz_bytes.len() / 2]).unwrap();
    let out = dir.path().join("cut");
    let o = check(&[os(&cut), os("--out"), os(&out)]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{stderr}");
    // It names the line it broke, past those it read whole.
    let line: u64 = stderr
        .split("cannot read input at line ")
        .nth(1)
        .and_then(|t| t.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no line named: {stderr}"));
    assert!(line > 1, "{stderr}");
    assert!(!out.join("summary.json").exists() && !out.join("final.jsonl").exists());

    // xz is recognised, not read as lines of garbage.
    let xz = dir.path().join("answers.jsonl.xz");
    std::fs::write(&xz, b"\xFD7zXZ\x00\x00\x04\xE6\xD6\xB4\x46").unwrap();
    let o = check(&[os(&xz), os("--out"), os(&dir.path().join("xz"))]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("is xz-compressed") && stderr.contains("xz -dc"),
        "{stderr}"
    );
}

#[test]
fn an_input_whose_packing_breaks_in_its_first_bytes_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let ok = dir.path().join("ok.jsonl");
    many_lines(&ok, 3);
    // Told gzip and zstd by their magic numbers, broken right after them:
    // the error comes while the input is opened, before any line.
    let cases: [(&str, &[u8]); 2] = [
        ("head.gz", b"\x1F\x8B\x08\xFF\x00\x00 not a gzip header\n"),
        ("head.zst", b"\x28\xB5\x2F\xFD\xFF\xFF"),
    ];
    for (name, bytes) in cases {
        let bad = dir.path().join(name);
        std::fs::write(&bad, bytes).unwrap();
        let out = dir.path().join(format!("out-{name}"));
        let o = check(&[os(&ok), os(&bad), os("--out"), os(&out)]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("{name}: cannot read input at line 1:")),
            "the error names the input: {stderr}"
        );
    }
    // Standard input too.
    let out = dir.path().join("out-stdin");
    let mut child = crate::common::bin()
        .arg("check")
        .arg("-")
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"\x1F\x8B\x08\xFF\x00\x00 not a gzip header\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("stdin: cannot read input at line 1:"),
        "{stderr}"
    );
}

#[test]
fn several_inputs_are_read_in_turn_each_its_own_audit_chain() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for day in ["day1", "day2"] {
        std::fs::create_dir(d.join(day)).unwrap();
    }
    // Two inputs share a file name (a partitioned export), a third is
    // compressed.
    let a = d.join("day1/part-0.jsonl");
    let b = d.join("day2/part-0.jsonl");
    let plain_c = d.join("c.jsonl");
    many_lines(&a, 300);
    many_lines(&b, 200);
    many_lines(&plain_c, 100);
    let c = d.join("c.jsonl.gz");
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(&std::fs::read(&plain_c).unwrap()).unwrap();
    std::fs::write(&c, z.finish().unwrap()).unwrap();
    let inputs = [&a, &b, &c];
    let run = |out: &str, threads: &str| {
        let out = d.join(out);
        let mut args: Vec<&std::ffi::OsStr> = inputs.iter().map(os).collect();
        args.extend([os("--out"), os(&out), os("--threads"), os(threads)]);
        let o = check(&args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        out
    };
    let out = run("all", "3");
    let names = [
        a.display().to_string(),
        b.display().to_string(),
        "c.jsonl.gz".to_string(),
    ];
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["records"], 600);
    assert_eq!(summary["inputs"], json!(names));

    // Each input is its own chain, numbered by its own lines, in order.
    let mut offsets: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for row in read_audit_rows(&out.join("audit.jsonl")) {
        let topic = row["input"]["topic"].as_str().unwrap().to_string();
        offsets
            .entry(topic)
            .or_default()
            .push(row["input"]["offset"].as_i64().unwrap());
    }
    for (name, n) in names.iter().zip([300, 200, 100]) {
        assert_eq!(offsets[name], (1..=n).collect::<Vec<i64>>(), "{name}");
    }
    // A dead letter names its input and line: the broken lines of each.
    let dead: Vec<(String, u64)> = read_jsonl(&out.join("dead_letter.jsonl"))
        .iter()
        .map(|v| {
            (
                v["input"].as_str().unwrap().to_string(),
                v["line"].as_u64().unwrap(),
            )
        })
        .collect();
    let broken = |name: &String, n: u64| {
        let name = name.clone();
        (1..=n)
            .filter(|l| (l - 1) % 7 == 3)
            .map(move |l| (name.clone(), l))
    };
    let want: Vec<(String, u64)> = broken(&names[0], 300)
        .chain(broken(&names[1], 200))
        .chain(broken(&names[2], 100))
        .collect();
    assert_eq!(dead, want);
    let verify = Command::new(BIN)
        .args(["audit", "verify"])
        .arg(out.join("audit.jsonl"))
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );

    // The envelopes and retries are the inputs' own, in input order, and do
    // not depend on the thread count.
    let mut finals = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let alone = d.join(format!("alone{i}"));
        let o = check(&[os(*input), os("--out"), os(&alone)]);
        assert!(o.status.success());
        finals.extend(std::fs::read(alone.join("final.jsonl")).unwrap());
    }
    assert!(std::fs::read(out.join("final.jsonl")).unwrap() == finals);
    let one = run("one-thread", "1");
    for f in [
        "final.jsonl",
        "retry.jsonl",
        "dead_letter.jsonl",
        "audit.jsonl",
    ] {
        assert_eq!(without_ts(&out.join(f)), without_ts(&one.join(f)), "{f}");
    }
}

#[test]
fn an_input_named_twice_or_missing_stops_the_run_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = d.join("a.jsonl");
    many_lines(&a, 10);
    std::fs::hard_link(&a, d.join("link.jsonl")).unwrap();
    let out = d.join("out");
    let (link, missing) = (d.join("link.jsonl"), d.join("missing.jsonl"));
    let cases: [(Vec<&std::ffi::OsStr>, &str); 4] = [
        (vec![os(&a), os(&a)], "named more than once"),
        (vec![os(&a), os(&link)], "named more than once"),
        (
            vec![os("-"), os(&a), os("-")],
            "standard input (`-`) is named more than once",
        ),
        (vec![os(&a), os(&missing)], "missing.jsonl"),
    ];
    for (inputs, says) in cases {
        let mut args = inputs.clone();
        args.extend([os("--out"), os(&out)]);
        let o = check(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{inputs:?}: {stderr}");
        assert!(stderr.contains(says), "{inputs:?}: {stderr}");
        assert!(!out.exists(), "{inputs:?}: outputs were started");
    }
}

/// `--report` naming a FIFO, a socket or a device (`/dev/null`, `/dev/stdout`,
/// reached directly or through a symbolic link) is refused before any
/// record is read: the report is renamed into place, which would put a
/// regular file where the special one was (as root, in `/dev`).
#[test]
fn a_report_that_is_not_a_regular_file_is_refused_and_left_as_it_is() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    many_lines(&input, 3);
    let fifo = dir.path().join("fifo");
    crate::common::mkfifo(&fifo);
    let socket = dir.path().join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let link = dir.path().join("link.html");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    for (report, kind) in [(&fifo, "a FIFO"), (&socket, "a socket"), (&link, "a FIFO")] {
        let out = dir.path().join("out");
        let o = check(&[
            os(&input),
            os("--out"),
            os(&out),
            os("--report"),
            os(report),
        ]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}: {stderr}", report.display());
        assert!(
            stderr.contains(&format!("is {kind}, not a regular file")),
            "{stderr}"
        );
        assert!(!out.exists(), "outputs were started");
        let kept = std::fs::metadata(report).unwrap().file_type();
        assert!(kept.is_fifo() || kept.is_socket(), "{}", report.display());
    }
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    let left = partial_files(dir.path());
    assert!(left.is_empty(), "{left:?}");
}

/// `-` and a path to the same standard input (`/dev/stdin` for a pipe, the
/// file it is redirected from) are one input named twice: read as two,
/// they would split a pipe's bytes between them, cutting records.
#[test]
fn standard_input_named_again_by_a_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    many_lines(&input, 50);
    let out = dir.path().join("out");
    for (second, piped) in [(Path::new("/dev/stdin"), true), (input.as_path(), false)] {
        for order in [[os("-"), os(second)], [os(second), os("-")]] {
            let mut cmd = crate::common::bin();
            cmd.arg("check")
                .args(order)
                .arg("--out")
                .arg(&out)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let o = if piped {
                let mut child = cmd.stdin(Stdio::piped()).spawn().unwrap();
                let bytes = std::fs::read(&input).unwrap();
                let mut stdin = child.stdin.take().unwrap();
                // Refused before reading, the run may close the pipe first.
                let _ = stdin.write_all(&bytes);
                drop(stdin);
                child.wait_with_output().unwrap()
            } else {
                cmd.stdin(std::fs::File::open(&input).unwrap())
                    .output()
                    .unwrap()
            };
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{order:?}: {stderr}");
            assert!(
                stderr.contains("is named more than once among the inputs"),
                "{order:?}: {stderr}"
            );
            assert!(!out.exists(), "{order:?}: outputs were started");
        }
    }
}

/// Standard error that cannot be written (a full device, a pipe whose
/// reader is gone: `check … 2>&1 | head`) costs the messages, not the run:
/// its outputs are in place and the exit code is the run's, with no abort.
#[test]
fn an_unwritable_stderr_does_not_abort_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    many_lines(&input, 20);
    for (i, full) in [true, false].into_iter().enumerate() {
        let out = dir.path().join(format!("out{i}"));
        let mut cmd = crate::common::bin();
        cmd.arg("check")
            .arg(&input)
            .arg("--out")
            .arg(&out)
            .arg("--fail-on")
            .arg("dead_letter")
            .stdout(Stdio::null());
        let status = if full {
            let dev_full = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap();
            cmd.stderr(dev_full).status().unwrap()
        } else {
            let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
            drop(child.stderr.take());
            child.wait().unwrap()
        };
        // Some lines of the input are broken: --fail-on dead_letter.
        assert_eq!(status.code(), Some(1), "full {full}: {status:?}");
        assert!(out.join("summary.json").exists(), "full {full}");
        assert_eq!(
            read_jsonl(&out.join("dead_letter.jsonl")).len(),
            3,
            "full {full}"
        );
    }
}

#[test]
fn a_directory_in_the_way_of_an_output_stops_the_run_and_keeps_the_previous_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    finished_run(dir.path(), &out);
    let summary = std::fs::read(out.join("summary.json")).unwrap();
    let input = dir.path().join("second.jsonl");
    many_lines(&input, 20);

    // --report naming a directory: refused before any work.
    let reports = dir.path().join("reports");
    std::fs::create_dir(&reports).unwrap();
    let o = check(&[
        os(&input),
        os("--out"),
        os(&out),
        os("--report"),
        os(&reports),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is a directory: name the HTML file"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(out.join("summary.json")).unwrap(), summary);

    // A directory where an output goes: found before anything moves.
    std::fs::remove_file(out.join("retry.jsonl")).unwrap();
    std::fs::create_dir(out.join("retry.jsonl")).unwrap();
    let o = check(&[os(&input), os("--out"), os(&out)]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(std::fs::read(out.join("summary.json")).unwrap(), summary);
    assert_eq!(
        read_jsonl(&out.join("final.jsonl")).len(),
        2,
        "the first run's"
    );
    let left = partial_files(&out);
    assert!(left.is_empty(), "{left:?}");
}

/// With `[audit] pseudonymize`, `check`'s audit rows carry the pseudonyms
/// `audit pseudonym` prints for the listed fields, the trail verifies
/// without the key, the key is written nowhere, and every other output is
/// as without pseudonyms.
#[test]
fn pseudonymised_audit_rows_match_the_cli_and_change_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("answers.jsonl");
    let records: Vec<Vec<u8>> = (0..6)
        .map(|i| {
            rec(
                &format!("r{i}"),
                "Revenue grew[^1] on volume[^2].",
                json!({"user": format!("alice-{}", i % 2), "tenant": "acme", "question": "Why?"}),
            )
        })
        .chain([rec("anon", "Revenue grew[^1].", json!({"user": ""}))])
        .collect();
    std::fs::write(&input, records.join(&b"\n"[..])).unwrap();
    let key_text = "d41c9a0b7e5f43a8b2c6d0e1f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0";
    let key = dir.path().join("pseudonym.key");
    std::fs::write(&key, format!("{key_text}\n")).unwrap();
    let cfg = dir.path().join("gg.toml");
    std::fs::write(
        &cfg,
        format!(
            "[audit]\npseudonymize = [\"user\", \"sources_urns\"]\npseudonym_key_file = \"{}\"\n",
            key.display()
        ),
    )
    .unwrap();
    let (plain, pseudo) = (dir.path().join("plain"), dir.path().join("pseudo"));
    let run = check(&[os(&input), os("--out"), os(&plain)]);
    assert!(run.status.success(), "{run:?}");
    let run = check(&[
        os(&input),
        os("--out"),
        os(&pseudo),
        os("--config"),
        os(&cfg),
    ]);
    assert!(run.status.success(), "{run:?}");
    let said = String::from_utf8_lossy(&run.stderr);
    assert!(
        said.contains("audit trail: user, sources_urns written as pseudonyms (key "),
        "{said}"
    );

    let printed = crate::common::succeeded(
        crate::common::bin()
            .args(["audit", "pseudonym", "--key-file"])
            .arg(&key)
            .args(["alice-0", "alice-1", "urn:a", "urn:b"]),
        "audit pseudonym",
    );
    let printed = String::from_utf8(printed).unwrap();
    let p: Vec<&str> = printed.lines().collect();
    assert_eq!(p.len(), 4, "{printed}");
    let rows = read_audit_rows(&pseudo.join("audit.jsonl"));
    let plain_rows = read_audit_rows(&plain.join("audit.jsonl"));
    assert_eq!(rows.len(), 7);
    for (i, (row, before)) in rows.iter().zip(&plain_rows).enumerate() {
        crate::schemas::assert_valid("audit-row", row);
        let user = match i {
            6 => "",
            _ => p[i % 2],
        };
        assert_eq!(row["user"], user, "{row}");
        assert_eq!(row["sources_urns"], json!([p[2], p[3]]), "{row}");
        assert_eq!(row["tenant"], before["tenant"], "not listed: {row}");
        assert_eq!(row["question"], before["question"], "not listed: {row}");
        let mut row = row.clone();
        for k in ["user", "sources_urns", "ts"] {
            row[k] = before[k].clone();
        }
        assert_eq!(&row, before, "only the listed fields differ");
    }
    for f in ["final.jsonl", "retry.jsonl", "dead_letter.jsonl"] {
        assert_eq!(
            std::fs::read(plain.join(f)).unwrap(),
            std::fs::read(pseudo.join(f)).unwrap(),
            "{f}"
        );
    }
    for f in std::fs::read_dir(&pseudo).unwrap() {
        let text = std::fs::read(f.unwrap().path()).unwrap();
        assert!(
            !text
                .windows(key_text.len())
                .any(|w| w == key_text.as_bytes()),
            "the key is written nowhere"
        );
    }
    let verify = crate::common::bin()
        .args(["audit", "verify"])
        .arg(pseudo.join("audit.jsonl"))
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(0), "{verify:?}");
}

#[test]
fn answers_without_a_single_caret_marker_are_said_to_be_unchecked() {
    let dir = tempfile::tempdir().unwrap();
    let note = "holds a [^N] citation marker";
    let input = dir.path().join("in.jsonl");
    let bracketed = [
        rec("a", "Revenue grew 5% [1].", json!({})),
        rec("b", "Volume rose (2).", json!({})),
        b"not json".to_vec(),
    ]
    .join(&b'\n');
    std::fs::write(&input, bracketed).unwrap();
    let o = check(&[os(&input), os("--out"), os(&dir.path().join("out"))]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("none of the 2 answer(s) judged {note}")) && err.contains("[1]"),
        "{err}"
    );
    // One answer that cites as groundgate reads is enough: no note.
    let input = one_record(dir.path());
    let o = check(&[os(&input), os("--out"), os(&dir.path().join("out"))]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains(note), "{err}");
}

#[test]
fn standard_input_at_a_terminal_ends_at_one_ctrl_d() {
    let dir = tempfile::tempdir().unwrap();
    // Lines then Ctrl-D, and Ctrl-D alone (nothing typed).
    for (typed, records) in [
        ([rec("a", "x[^1]", json!({})), b"\n".to_vec()].concat(), 1),
        (Vec::new(), 0),
    ] {
        let out = dir.path().join(format!("out-{records}"));
        let mut cmd = crate::common::bin();
        cmd.args(["check", "-", "--out"]).arg(&out);
        let (status, _, err) = crate::common::typed_at_a_terminal("check", cmd, &typed);
        assert!(status.success(), "{err}");
        assert_eq!(read_jsonl(&out.join("final.jsonl")).len(), records, "{err}");
        assert!(
            err.contains("reading JSON Lines from standard input, which is this terminal")
                && err.contains("Ctrl-D"),
            "{err}"
        );
    }
}
