//! `groundgate check` run as a built binary over a file mixing every kind of
//! record: exactly one terminal record and one audit row per line.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_groundgate");

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
            rec("retry-fixed", "Revenue grew[^1].", json!({"attempt": 1})),
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
    assert_eq!(offsets, (0..lines.len() as i64).collect::<Vec<_>>());
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
    assert!(
        dead[1]["raw"].as_str().unwrap().contains('\u{FFFD}'),
        "lossy raw text"
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
