//! The HTML report of `groundgate check --report`, opened in a real browser
//! (headless Chromium): every section is there, the numbers it shows equal
//! `summary.json`, and a screenshot is kept as a test artefact.
//!
//! Needs Debian's `chromium`; without it the test prints a SKIPPED line,
//! and fails instead when GG_REQUIRE_TOOLS=1 (as in CI).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::BIN;

fn chromium() -> Option<PathBuf> {
    crate::common::need_tool("report_browser", "chromium", "chromium")
        .then(|| PathBuf::from("chromium"))
}

fn headless(chromium: &Path, profile: &Path) -> Command {
    let mut c = Command::new(chromium);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// The text of the element carrying `data-k="key"` (first one), from the DOM dump.
fn data_k<'a>(dom: &'a str, key: &str) -> Option<&'a str> {
    let marker = format!("data-k=\"{key}\">");
    let start = dom.find(&marker)? + marker.len();
    let end = dom[start..].find('<')?;
    Some(dom[start..start + end].trim())
}

#[test]
fn report_renders_in_chromium_with_the_numbers_of_summary_json() {
    let Some(chromium) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let report = out.join("report.html");
    let tightened = dir.path().join("tight.toml");
    std::fs::write(&tightened, "[policy]\nforbidden_terms = [\"churn\"]\n").unwrap();
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/answers.jsonl");
    let o = Command::new(BIN)
        .args(["check", sample, "--out"])
        .arg(&out)
        .arg("--report")
        .arg(&report)
        .arg("--config")
        .arg(&tightened)
        .args([
            "--compare-config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/groundgate.toml"),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();

    let url = format!("file://{}", report.display());
    let dump = headless(&chromium, &dir.path().join("profile-dom"))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let dom = String::from_utf8_lossy(&dump.stdout);

    for id in ["totals", "findings", "models", "charts", "worst", "compare"] {
        assert!(
            dom.contains(&format!("<section id=\"{id}\">")),
            "section {id} missing"
        );
    }
    for chart in ["chart-outcomes", "chart-scores", "chart-findings"] {
        assert!(
            dom.contains(&format!("id=\"{chart}\"")),
            "chart {chart} missing"
        );
    }
    assert_eq!(
        data_k(&dom, "records"),
        Some(summary["records"].to_string().as_str())
    );
    for (k, v) in summary["outcomes"].as_object().unwrap() {
        assert_eq!(
            data_k(&dom, &format!("outcome.{k}")),
            Some(v.to_string().as_str()),
            "{k}"
        );
    }
    for (k, v) in summary["findings"].as_object().unwrap() {
        assert_eq!(
            data_k(&dom, &format!("finding.{k}")),
            Some(v.to_string().as_str()),
            "{k}"
        );
    }
    let models = summary["models"].as_array().unwrap();
    assert!(!models.is_empty());
    for m in models {
        let key = format!(
            "data-model=\"{}/{}\"",
            m["provider"].as_str().unwrap(),
            m["model"].as_str().unwrap()
        );
        assert!(dom.contains(&key), "model row {key}");
    }
    let changed = summary["comparison"]["changed"].to_string();
    assert!(changed != "0", "the tightened policy changes outcomes");
    assert_eq!(data_k(&dom, "changed"), Some(changed.as_str()));
    assert!(
        !dom.contains("http://") && !dom.contains("https://"),
        "self-contained: no network"
    );

    // A screenshot as an artefact, for a human to look at.
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report.png");
    let _ = std::fs::remove_file(&shot);
    let s = headless(&chromium, &dir.path().join("profile-shot"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,2400")
        .arg(&url)
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG"),
        "a PNG screenshot at {}",
        shot.display()
    );
    eprintln!("report screenshot: {}", shot.display());
}
