//! Text taken from records, file names and trails, as `check`, `eval` and
//! `audit verify` print it: a terminal control, a carriage return, a
//! newline or a bidi override in a request id, a field value, a file name
//! or a trail's topic is shown escaped (`\u{1b}`, `\r`, `\u{202e}`), never
//! written raw where a terminal would obey it; JSON written for people and
//! programs stays valid and parses back to the text as sent.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::common::{bin, repo};

/// What the attacks are made of: CSI clear screen, an OSC 8 hyperlink, an
/// OSC 52 clipboard write, a carriage return, backspaces, a newline, C1 CSI,
/// a bidi override, zero-width characters, a line separator.
const HOSTILE: &str = "\x1b[2J\x1b]8;;http://e.example/\x07x\x1b]8;;\x07\x1b]52;c;cHduZWQ=\x07\rFAKE\x08\x08\n2026-01-01 INFO fake\u{9b}2J\u{202e}dcba\u{200b}\u{2060}\u{2028}";

/// Characters of [`HOSTILE`] a terminal would act on.
const OBEYED: [char; 10] = [
    '\x1b', '\x07', '\r', '\x08', '\n', '\u{9b}', '\u{202e}', '\u{200b}', '\u{2060}', '\u{2028}',
];

/// The characters of `OBEYED` in `text`, newlines between lines left out
/// when `lines` (a report is several lines; a fake one is caught by the
/// text around it instead).
fn raw_controls(text: &str, lines: bool) -> Vec<char> {
    text.chars()
        .filter(|c| OBEYED.contains(c) && !(lines && *c == '\n'))
        .collect()
}

/// `HOSTILE` as this crate shows it.
fn shown(prefix: &str) -> String {
    format!(
        "{prefix}\\u{{1b}}[2J\\u{{1b}}]8;;http://e.example/\\u{{7}}x\\u{{1b}}]8;;\\u{{7}}\\u{{1b}}]52;c;cHduZWQ=\\u{{7}}\\rFAKE\\u{{8}}\\u{{8}}\\n2026-01-01 INFO fake\\u{{9b}}2J\\u{{202e}}dcba\\u{{200b}}\\u{{2060}}\\u{{2028}}"
    )
}

fn record(id: &str, answer: &str, label: &str) -> Value {
    json!({
        "request_id": id,
        "answer": answer,
        "sources": [{"urn": format!("doc://{HOSTILE}"), "payload": "Revenue grew 5% in Q3 year over year."}],
        "provider": format!("p{HOSTILE}"),
        "model": "m",
        "tenant": format!("t{HOSTILE}"),
        "provenance": "rag",
        "label": label,
    })
}

/// Whether the strings of `field` in `items` include `want`.
fn any_of(items: &Value, field: &str, want: &str) -> bool {
    items
        .as_array()
        .unwrap()
        .iter()
        .any(|item| item[field] == want)
}

fn write(path: &Path, records: &[Value]) {
    let text: Vec<String> = records.iter().map(Value::to_string).collect();
    std::fs::write(path, text.join("\n") + "\n").unwrap();
}

fn run(args: &[&std::ffi::OsStr]) -> Output {
    bin().args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A file of records whose request ids, provider, tenant and source urn
/// carry `HOSTILE`; the second answer names a term `what-if.toml` forbids.
fn hostile_input(dir: &Path) -> PathBuf {
    let path = dir.join("hostile.jsonl");
    write(
        &path,
        &[
            record(
                &format!("a{HOSTILE}"),
                "Revenue grew 5% in Q3.[^1]",
                "supported",
            ),
            record(
                &format!("b{HOSTILE}"),
                &format!("Churn fell 90% in Q4 {HOSTILE}.[^1]"),
                "unsupported",
            ),
            record("c", "Profit fell 77% in Q1.[^1]", "supported"),
        ],
    );
    path
}

#[test]
fn check_shows_request_ids_of_the_what_if_table_escaped_and_summary_json_has_no_raw_control() {
    let dir = tempfile::tempdir().unwrap();
    let input = hostile_input(dir.path());
    let out = dir.path().join("out");
    let o = run(&[
        "check".as_ref(),
        input.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--config".as_ref(),
        repo("examples/what-if.toml").as_os_str(),
        "--compare-config".as_ref(),
        repo("examples/demo.toml").as_os_str(),
    ]);
    let text = stdout(&o);
    assert_eq!(raw_controls(&text, true), [], "{text}");
    assert!(text.contains(&shown("b")), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("2026-01-01")), "{text}");

    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert_eq!(raw_controls(&summary, true), [], "{summary}");
    // Escaped, not altered: a parser reads the request id as it was sent.
    let parsed: Value = serde_json::from_str(&summary).unwrap();
    let examples: Vec<&Value> = parsed["comparison"]["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["examples"].as_array().unwrap())
        .collect();
    assert!(
        examples.contains(&&json!(format!("b{HOSTILE}"))),
        "{examples:?}"
    );
}

#[test]
fn eval_shows_misses_and_by_groups_escaped_and_its_json_parses_back() {
    let dir = tempfile::tempdir().unwrap();
    let input = hostile_input(dir.path());
    let args = |extra: &[&str]| {
        let mut a: Vec<&std::ffi::OsStr> = vec!["eval".as_ref(), input.as_os_str()];
        a.extend(extra.iter().map(|s| std::ffi::OsStr::new(*s)));
        run(&a)
    };
    let text = stdout(&args(&["--by", "tenant", "--misses", "5"]));
    assert_eq!(raw_controls(&text, true), [], "{text}");
    assert!(text.contains(&shown("tenant=t")), "{text}");
    assert!(text.contains("\\u{1b}[2J"), "{text}");
    assert!(!text.lines().any(|l| l.contains("│ 2026-01-01")), "{text}");

    let json_text = stdout(&args(&["--by", "tenant", "--json"]));
    assert_eq!(raw_controls(&json_text, true), [], "{json_text}");
    let rows: Value = serde_json::from_str(&json_text).unwrap();
    assert!(any_of(&rows, "group", &format!("t{HOSTILE}")), "{rows}");
}

#[test]
fn audit_verify_shows_names_read_from_a_trail_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let input = hostile_input(dir.path());
    // The input's file name is the trail's topic.
    let named = dir
        .path()
        .join(format!("in{}.jsonl", HOSTILE.replace('/', "_")));
    std::fs::rename(&input, &named).unwrap();
    let out = dir.path().join("out");
    stdout(&run(&[
        "check".as_ref(),
        named.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]));
    // A forger's row: its own chain, named with the attack, and unsealed,
    // so the problem list quotes it too.
    let trail = out.join("audit.jsonl");
    let mut lines: Vec<String> = std::fs::read_to_string(&trail)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let mut row: Value = serde_json::from_str(&lines[0]).unwrap();
    row["input"]["topic"] = json!(format!("forged{HOSTILE}"));
    lines.push(row.to_string());
    std::fs::write(&trail, lines.join("\n") + "\n").unwrap();

    let o = run(&["audit".as_ref(), "verify".as_ref(), trail.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(raw_controls(&text, true), [], "{text}");
    assert!(text.contains(&shown("forged")), "{text}");
    assert!(text.contains("\\u{1b}[2J"), "{text}");
    assert!(text.contains("problem(s) found"), "{text}");

    let o = run(&[
        "audit".as_ref(),
        "verify".as_ref(),
        "--json".as_ref(),
        trail.as_os_str(),
    ]);
    let json_text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(raw_controls(&json_text, true), [], "{json_text}");
    let report: Value = serde_json::from_str(&json_text).unwrap();
    assert!(
        any_of(&report["chains"], "topic", &format!("forged{HOSTILE}")),
        "{report}"
    );
}

#[test]
fn a_configuration_error_shows_the_key_it_quotes_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gg.toml");
    std::fs::write(&config, "[grounding]\n\"a\\u001b[2J\\nb\" = 1\n").unwrap();
    let input = hostile_input(dir.path());
    let o = run(&[
        "check".as_ref(),
        input.as_os_str(),
        "--out".as_ref(),
        dir.path().join("out").as_os_str(),
        "--config".as_ref(),
        config.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(raw_controls(&err, true), [], "{err}");
    assert!(
        err.contains("grounding.a\\u{1b}[2J\\nb: unknown key"),
        "{err}"
    );
}
