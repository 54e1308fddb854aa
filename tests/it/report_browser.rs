//! The HTML report of `groundgate check --report`: its content (missing
//! terms inline, the policy explained, varied worst answers, formatted
//! numbers), and the report opened in a real browser (headless Chromium):
//! every section is there, the numbers it shows equal `summary.json`, and a
//! 1400-px-wide screenshot is kept as a test artefact.
//!
//! The browser test needs Debian's `chromium`; without it the test prints a
//! SKIPPED line, and fails instead when GG_REQUIRE_TOOLS=1 (as in CI).

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

/// The DOM Chromium builds from the page at `url`, with its own profile
/// directory.
fn dump_dom(chromium: &Path, profile: &Path, url: &str) -> String {
    let dump = headless(chromium, profile)
        .arg("--dump-dom")
        .arg(url)
        .output()
        .unwrap();
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    String::from_utf8_lossy(&dump.stdout).into_owned()
}

/// The number in the element carrying `data-k="key"` (first one), from the
/// DOM dump, as a person reads it: thousands separators and `$` dropped.
fn data_k(dom: &str, key: &str) -> Option<String> {
    let marker = format!("data-k=\"{key}\">");
    let start = dom.find(&marker)? + marker.len();
    let end = dom[start..].find('<')?;
    Some(dom[start..start + end].trim().replace([',', '$'], ""))
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
    let dom = dump_dom(&chromium, &dir.path().join("profile-dom"), &url);

    for id in ["totals", "findings", "models", "charts", "worst", "compare"] {
        assert!(
            dom.contains(&format!("<section id=\"{id}\">")),
            "section {id} missing"
        );
    }
    for chart in ["chart-outcomes", "chart-scores"] {
        assert!(
            dom.contains(&format!("id=\"{chart}\"")),
            "chart {chart} missing"
        );
    }
    assert_eq!(
        data_k(&dom, "records"),
        Some(summary["records"].to_string())
    );
    for (k, v) in summary["outcomes"].as_object().unwrap() {
        assert_eq!(
            data_k(&dom, &format!("outcome.{k}")),
            Some(v.to_string()),
            "{k}"
        );
    }
    for (k, v) in summary["findings"].as_object().unwrap() {
        assert_eq!(
            data_k(&dom, &format!("finding.{k}")),
            Some(v.to_string()),
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
    assert_eq!(data_k(&dom, "changed"), Some(changed));
    assert!(
        !dom.contains("http://") && !dom.contains("https://"),
        "self-contained: no network"
    );

    // A screenshot as an artefact, for a human to look at, at a laptop's width.
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report.png");
    let _ = std::fs::remove_file(&shot);
    let s = headless(&chromium, &dir.path().join("profile-shot"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1400,3000")
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

/// `check --report` on the shipped sample with the demo's configuration,
/// where accepted answers carry unsupported claims: the report's HTML and
/// its `summary.json`.
fn demo_report(dir: &Path) -> (String, Value) {
    demo_report_on(dir, 2)
}

fn demo_report_on(dir: &Path, threads: usize) -> (String, Value) {
    let out = dir.join("out");
    let report = dir.join("report.html");
    let o = Command::new(BIN)
        .args([
            "check",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/answers.jsonl"),
            "--config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo.toml"),
            "--out",
        ])
        .arg(&out)
        .arg("--report")
        .arg(&report)
        .args(["--threads", &threads.to_string()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    (std::fs::read_to_string(report).unwrap(), summary)
}

#[test]
fn flagged_sentences_show_their_missing_terms_and_the_policy_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let (html, summary) = demo_report(dir.path());
    // A flagged sentence is followed by what its sources lack, in the text.
    let flagged = html
        .find("<mark class=\"flagged\"")
        .expect("a flagged sentence");
    let after = &html[flagged..];
    let chip = after
        .find("<span class=\"missing\">")
        .expect("missing terms after it");
    assert!(
        after[chip..].starts_with("<span class=\"missing\">support 0."),
        "{}",
        &after[..400.min(after.len())]
    );
    assert!(html.contains(" · not in source: "), "terms listed inline");
    // "accepted · score 0.00" is explained, with the way to act on it.
    assert!(
        summary["worst"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["outcome"] == "accepted")
    );
    assert!(
        html.contains("id=\"action-note\""),
        "the warn default is explained"
    );
    assert!(html.contains("unsupported_claim = \"retry\"") && html.contains("\"reject\""));
    assert!(html.contains("Accepted although unsupported"));
}

#[test]
fn worst_answers_are_varied_and_numbers_are_formatted() {
    let dir = tempfile::tempdir().unwrap();
    let (html, summary) = demo_report(dir.path());
    let worst = summary["worst"].as_array().unwrap();
    assert_eq!(worst.len(), 10);
    // One per near-duplicate: no two shown answers have the same words.
    let words = |w: &Value| -> String {
        let text: String = w["segments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["text"].as_str().unwrap())
            .collect();
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(c) = rest.chars().next() {
            if let Some(after) = rest.strip_prefix("[^")
                && let Some(end) = after.find(']')
            {
                rest = &after[end + 1..];
                continue;
            }
            if c.is_alphanumeric() {
                out.extend(c.to_lowercase());
            } else if !out.ends_with(' ') {
                out.push(' ');
            }
            rest = &rest[c.len_utf8()..];
        }
        out.trim().to_string()
    };
    let distinct: std::collections::BTreeSet<String> = worst.iter().map(words).collect();
    assert_eq!(distinct.len(), worst.len(), "near-duplicates shown twice");
    // Lowest score first; among equal scores, more unsupported claims first.
    for pair in worst.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let (sa, sb) = (a["score"].as_f64().unwrap(), b["score"].as_f64().unwrap());
        assert!(sa <= sb, "{sa} before {sb}");
        if sa == sb {
            assert!(
                a["unsupported_claims"].as_u64() >= b["unsupported_claims"].as_u64(),
                "ties by unsupported claims: {a}\n{b}"
            );
        }
    }

    // Thousands separators and dollars.
    let tokens =
        summary["prompt_tokens"].as_u64().unwrap() + summary["completion_tokens"].as_u64().unwrap();
    assert!(
        tokens >= 1000,
        "the sample has enough tokens to need a separator"
    );
    let digits = tokens.to_string();
    let shown: String = digits
        .chars()
        .enumerate()
        .flat_map(|(i, c)| {
            let comma = i > 0 && (digits.len() - i) % 3 == 0;
            comma.then_some(',').into_iter().chain([c])
        })
        .collect();
    assert!(
        html.contains(&format!("data-k=\"tokens\">{shown}<")),
        "tokens as {shown}"
    );
    assert!(html.contains("data-k=\"cost_usd\">$"), "cost in dollars");
    // The findings are one table with bars, not a table and a chart of it.
    assert!(!html.contains("chart-findings"));
    assert_eq!(
        html.matches("<td class=\"bar\">").count(),
        summary["findings"].as_object().unwrap().len()
            + summary["dead_letters"].as_object().unwrap().len()
    );
}

#[test]
fn worst_answers_do_not_depend_on_the_thread_count() {
    let ids = |threads| {
        let dir = tempfile::tempdir().unwrap();
        let (_, summary) = demo_report_on(dir.path(), threads);
        summary["worst"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["request_id"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(1), ids(3));
}

/// A record whose every text field is an attack on the report: markup that
/// would run script or break out of an attribute, and a right-to-left
/// override that would reorder what the report writes after it.
fn hostile_record(id: &str) -> Value {
    let markup = "</script><script>alert(1)</script><img src=x onerror=alert(2)>\"' onmouseover=alert(3) x=\"<!--javascript:alert(4)\u{2028}";
    serde_json::json!({
        "request_id": format!("{id}\u{202e}{markup}"),
        "answer": format!("Revenue grew 55% in Q3 {markup}\u{202e}.[^1] Profit fell 9% in Q1.[^1]"),
        "sources": [{"urn": format!("javascript:alert(5)\u{202e}{markup}"), "payload": format!("Revenue fell {markup}")}],
        "provider": format!("p\u{202e}{markup}"),
        "model": format!("m{markup}"),
    })
}

/// In the browser, record text is text: no element, attribute or script
/// comes from it, and a bidi override in it reorders nothing outside it.
/// The bidi probe is a script appended to a copy of the report (the report
/// itself holds none): it compares where "score" and the score's number are
/// drawn in the worst answer's first line.
#[test]
fn record_text_in_the_report_is_inert_in_chromium() {
    let Some(chromium) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("hostile.jsonl");
    let lines: Vec<String> = ["rlo-a", "rlo-b"]
        .iter()
        .map(|id| hostile_record(id).to_string())
        .collect();
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let out = dir.path().join("out");
    let report = dir.path().join("report.html");
    let o = Command::new(BIN)
        .arg("check")
        .arg(&input)
        .arg("--out")
        .arg(&out)
        .arg("--report")
        .arg(&report)
        .args([
            "--config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo.toml"),
            "--compare-config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/what-if.toml"),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&report).unwrap();
    // Both sections that quote records are there: worst answers, what-if.
    assert!(html.contains("data-request-id=\"rlo-a"), "{html}");
    assert!(html.contains("<section id=\"compare\">"), "{html}");
    assert!(!html.contains("<script"), "no script in the report itself");

    let probe = r#"<script>
(function () {
  var p = document.querySelector('[data-request-id^="rlo-a"] p');
  var walker = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
  var n, word = null;
  while ((n = walker.nextNode())) {
    var i = n.data.indexOf('score');
    if (i >= 0) { word = document.createRange(); word.setStart(n, i); word.setEnd(n, i + 5); break; }
  }
  var number = n.nextSibling;
  var inOrder = word.getBoundingClientRect().left < number.getBoundingClientRect().left;
  document.body.setAttribute('data-probe', inOrder ? 'as-written' : 'reordered');
})();
</script>"#;
    let probed = dir.path().join("probed.html");
    std::fs::write(&probed, format!("{html}{probe}")).unwrap();
    let dom = dump_dom(
        &chromium,
        &dir.path().join("profile"),
        &format!("file://{}", probed.display()),
    );
    assert!(dom.contains("data-probe=\"as-written\""), "{dom}");
    // The DOM as the browser built it: the probe is its only script, and
    // no element or attribute was made of the records' markup (the browser
    // writes an attribute it parsed as `name="value"`; as text, the
    // markup reads `name=value`).
    assert_eq!(dom.matches("<script").count(), 1, "{dom}");
    for made in ["<img", "onerror=\"", "onmouseover=\"", "<a ", "href=\""] {
        assert!(!dom.contains(made), "{made} in {dom}");
    }
    assert!(dom.contains("&lt;img src=x onerror=alert(2)&gt;"), "{dom}");
}
