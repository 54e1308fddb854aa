//! `groundgate check` run as a built binary over a file mixing every kind of
//! record: exactly one terminal record and one audit row per line.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_groundgate");

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
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
                json!({"attempt": 1, "prior": {"prompt_tokens": 1}}),
            ),
            "rejected",
        ),
        (
            rec(
                "retry-fixed",
                "Revenue grew[^1].",
                json!({"attempt": 1, "prior": {"prompt_tokens": 1}}),
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
    let audit = read_jsonl(&out.join("audit.jsonl"));
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
    assert_eq!(
        offsets,
        (1..=lines.len() as i64).collect::<Vec<_>>(),
        "input.offset is the 1-based line number, like dead_letter.jsonl's line"
    );
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
    // Not UTF-8: the exact bytes, base64-encoded.
    assert!(dead[1].get("raw").is_none());
    use base64::Engine as _;
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(dead[1]["raw_base64"].as_str().unwrap())
            .unwrap(),
        lines[9].0
    );
    // Canonical: keys in alphabetical order, as on every output.
    for line in std::fs::read_to_string(out.join("dead_letter.jsonl"))
        .unwrap()
        .lines()
    {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            line,
            "canonical: {line}"
        );
    }
    // Too large: length, SHA-256 and a bounded preview instead of the bytes.
    assert!(dead[4].get("raw").is_none());
    assert_eq!(dead[4]["length"], lines[12].0.len());
    assert_eq!(
        dead[4]["sha256"],
        sha256_hex(&lines[12].0),
        "hash of the line's bytes"
    );
    assert!(
        lines[12]
            .0
            .starts_with(dead[4]["preview"].as_str().unwrap().as_bytes())
    );
    assert!(dead[2]["detail"].as_str().unwrap().contains("request_id"));
    assert!(dead[3]["detail"].as_str().unwrap().starts_with("attempt"));
    assert!(dead[4]["detail"].as_str().unwrap().contains("2048"));
    assert_eq!(
        audit[11]["request_id"], "attempt-2",
        "request id kept when readable"
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
        let out = Command::new(BIN)
            .args(["check", input.to_str().unwrap(), "--out"])
            .arg(dir.path().join("o"))
            .args(flags)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(run(&[]).0, Some(0));
    let (code, err) = run(&["--fail-on", "rejected", "--fail-on", "dead_letter"]);
    assert_eq!(code, Some(0));
    assert!(!err.contains("--fail-on"), "{err}");
    let (code, err) = run(&["--fail-on", "dead_letter", "--fail-on", "retry"]);
    assert_eq!(code, Some(1));
    // Says which outcome caused the exit code.
    assert!(
        err.contains("exit code 1 because of --fail-on retry: 1 record had outcome retry"),
        "{err}"
    );
    assert!(!err.contains("--fail-on dead_letter"), "{err}");
}

/// Peak resident memory of the largest child this test process has waited for.
fn children_max_rss_bytes() -> u64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0);
    usage.ru_maxrss as u64 * 1024
}

#[test]
fn a_huge_line_is_streamed_past_with_bounded_memory() {
    const LINE: usize = 192 << 20;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let mut child = Command::new(BIN)
        .args(["check", "-", "--out", out.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&rec("before", "x[^1]", json!({}))).unwrap();
    stdin.write_all(b"\n").unwrap();
    // A 192 MiB line, written in 1 MiB pieces, never held by this test.
    let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
    let piece = vec![b'"'; 1 << 20];
    for _ in 0..LINE >> 20 {
        stdin.write_all(&piece).unwrap();
        sha2::Digest::update(&mut hasher, &piece);
    }
    stdin.write_all(b"\r\n").unwrap();
    stdin.write_all(&rec("after", "y[^2]", json!({}))).unwrap();
    drop(stdin);
    let done = child.wait_with_output().unwrap();
    assert_eq!(
        done.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let rss = children_max_rss_bytes();
    assert!(
        rss < 96 << 20,
        "check used {} MiB for a {} MiB line",
        rss >> 20,
        LINE >> 20
    );
    let dead = read_jsonl(&out.join("dead_letter.jsonl"));
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0]["kind"], "too_large");
    assert_eq!(dead[0]["line"], 2);
    assert_eq!(dead[0]["length"], LINE as u64, "without the CRLF");
    assert_eq!(
        dead[0]["sha256"],
        hex::encode(sha2::Digest::finalize(hasher))
    );
    assert_eq!(dead[0]["preview"].as_str().unwrap().len(), 512);
    assert!(
        std::fs::metadata(out.join("dead_letter.jsonl"))
            .unwrap()
            .len()
            < 4096,
        "bounded, never the whole line"
    );
    let audit = read_jsonl(&out.join("audit.jsonl"));
    let outcomes: Vec<(&str, i64)> = audit
        .iter()
        .map(|a| {
            (
                a["outcome"].as_str().unwrap(),
                a["input"]["offset"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [("accepted", 1), ("dead_letter", 2), ("accepted", 3)]
    );
    assert_eq!(audit[1]["answer_hash"], dead[0]["sha256"]);
}

#[test]
fn a_closed_or_full_stdout_is_a_message_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    // `check … | head -0`: the reader is gone before the summary is printed.
    let mut child = Command::new(BIN)
        .args(["check", "-", "--out", out.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&rec("a", "x[^1]", json!({}))).unwrap();
    drop(stdin);
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{err}");
    assert!(
        err.contains("broken pipe") && !err.contains("panicked"),
        "{err}"
    );
    assert_eq!(read_jsonl(&out.join("final.jsonl")).len(), 1);

    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        println!("SKIPPED: /dev/full is not available on this system");
        return;
    };
    let input = dir.path().join("in.jsonl");
    std::fs::write(&input, rec("a", "x[^1]", json!({}))).unwrap();
    let done = Command::new(BIN)
        .args([
            "check",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::from(full))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot write the summary to standard output") && !err.contains("panicked"),
        "{err}"
    );
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
    let audit = read_jsonl(&out.join("audit.jsonl"));
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
