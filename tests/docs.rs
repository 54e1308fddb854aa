//! The documentation's command examples, tested.
//!
//! - Every ```` ```console ```` block of the README and of the docs listed in
//!   [`RUNNABLE`] runs here with trycmd: each `$ groundgate …` line is run
//!   from the repository root and its output (stdout and stderr together)
//!   must match the lines below it (`...` stands for any lines, `[..]` for
//!   any text within a line; `? 2` before the output expects that exit code).
//!   After an intended change of output, `TRYCMD=overwrite cargo test --test
//!   docs` rewrites the expected text; review the diff, and put the `...` /
//!   `[..]` back where the output is volatile.
//! - Snippets that need a broker, a cluster or a long run (```` ```sh ````
//!   blocks) are not run; instead every `groundgate` command line in any
//!   Markdown file of the README and `docs/` must name a subcommand that
//!   exists, and only flags its `--help` lists.
//! - Every repository path the documents name (`src/…`, `tests/…`, relative
//!   links to files) must exist, so a moved file cannot leave a stale map.
//!
//! Needs nothing but the built binary: no broker, no network.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_groundgate");

/// Documents with `console` blocks, which run from the repository root.
/// Add a document here when it gains one.
const RUNNABLE: [&str; 7] = [
    "README.md",
    "docs/audit-trail.md",
    "docs/grounding.md",
    "docs/input-and-outputs.md",
    "docs/input-hardening.md",
    "docs/operations.md",
    "docs/secured-kafka.md",
];

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn console_examples_print_what_the_docs_say() {
    // groundgate refuses unknown GROUNDGATE_* variables and honours known
    // ones: the examples assume a clean environment.
    for (key, _) in std::env::vars() {
        assert!(
            !key.starts_with("GROUNDGATE_"),
            "unset {key}: the documented examples assume no GROUNDGATE_* variable"
        );
    }
    let cases = trycmd::TestCases::new();
    cases
        .register_bin("groundgate", Path::new(BIN))
        .env("NO_COLOR", "1")
        // A guard against a hang, not a timing assertion.
        .timeout(std::time::Duration::from_secs(300));
    for doc in RUNNABLE {
        cases.case(repo(doc));
    }
    cases.run();
}

/// The Markdown files whose command lines are checked: the README and
/// everything under `docs/`.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![repo("README.md")];
    let dir = repo("docs");
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "md") {
                docs.push(path);
            }
        }
    }
    docs.sort();
    docs
}

/// One `groundgate` invocation found in a document.
#[derive(Debug)]
struct Invocation {
    place: String,
    words: Vec<String>,
}

/// The lines of fenced code blocks that hold shell commands, with `\`
/// continuations joined, as (line number, text).
fn shell_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    let mut shell = false;
    // In a `console` block only `$ ` lines are commands; the rest is output.
    let mut console = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let ticks = trimmed.chars().take_while(|c| *c == '`').count();
        if ticks >= 3 {
            let marker = &trimmed[..ticks];
            match &fence {
                Some(open) if trimmed.trim_end() == open.as_str() => {
                    fence = None;
                    continue;
                }
                Some(_) => {}
                None => {
                    let lang = trimmed[ticks..].split(',').next().unwrap_or("").trim();
                    shell = matches!(lang, "sh" | "bash" | "shell" | "console" | "");
                    console = lang == "console";
                    fence = Some(marker.to_owned());
                    continue;
                }
            }
        }
        if fence.is_none() || !shell {
            continue;
        }
        let body = line.trim();
        if console && pending.is_none() && !body.starts_with("$ ") {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
        if let Some(head) = body.strip_suffix('\\') {
            joined.push_str(head);
            joined.push(' ');
            pending = Some((start, joined));
        } else {
            joined.push_str(body);
            out.push((start, joined));
        }
    }
    out
}

/// Splits a shell line into the `groundgate` invocations it holds, after
/// `$ `, environment assignments, `cargo run [--release] --`, pipes, `&&`,
/// `;` and `&`. Comments are dropped.
fn invocations(doc: &Path, text: &str) -> Vec<Invocation> {
    let name = doc
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(doc)
        .display()
        .to_string();
    let mut found = Vec::new();
    for (line_no, line) in shell_lines(text) {
        let line = line.strip_prefix("$ ").unwrap_or(&line);
        let line = line.split(" #").next().unwrap_or("");
        let Some(words) = shlex::split(line) else {
            continue;
        };
        let mut segment: Vec<String> = Vec::new();
        let mut segments = Vec::new();
        for word in words {
            if matches!(word.as_str(), "|" | "&&" | ";" | "&" | "||") {
                segments.push(std::mem::take(&mut segment));
            } else if let Some(stripped) = word.strip_suffix('&').filter(|s| !s.is_empty()) {
                segment.push(stripped.to_owned());
                segments.push(std::mem::take(&mut segment));
            } else {
                segment.push(word);
            }
        }
        segments.push(segment);
        for segment in segments {
            let mut rest: &[String] = &segment;
            while rest.first().is_some_and(|w| {
                w.contains('=')
                    && !w.starts_with('-')
                    && w.split('=').next().is_some_and(|k| {
                        !k.is_empty()
                            && k.chars()
                                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                    })
            }) {
                rest = &rest[1..];
            }
            if rest.first().is_some_and(|w| w == "cargo") && rest.get(1).is_some_and(|w| w == "run")
            {
                // `cargo run --example …` runs another program.
                if rest.iter().any(|w| w == "--example" || w == "--bin") {
                    continue;
                }
                match rest.iter().position(|w| w == "--") {
                    Some(dash) => rest = &rest[dash + 1..],
                    None => continue,
                }
            } else if rest.first().is_some_and(|w| w == "groundgate") {
                rest = &rest[1..];
            } else {
                continue;
            }
            found.push(Invocation {
                place: format!("{name}:{line_no}"),
                words: rest.to_vec(),
            });
        }
    }
    found
}

/// The `--help` text of a subcommand path, or None when it does not exist.
fn help(path: &[String], cache: &mut BTreeMap<Vec<String>, Option<String>>) -> Option<String> {
    cache
        .entry(path.to_vec())
        .or_insert_with(|| {
            let out = Command::new(BIN).args(path).arg("--help").output().ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        })
        .clone()
}

/// The subcommands a help text lists (the `Commands:` section).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// The long and short flags a help text lists.
fn flags(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in help.split(|c: char| c.is_whitespace() || c == ',') {
        let word = word.trim_matches(|c: char| c == '[' || c == ']' || c == '`');
        if word.starts_with('-') && word.len() > 1 && !word.starts_with("---") {
            let flag = word.split(['=', '<']).next().unwrap_or(word);
            out.push(flag.to_owned());
        }
    }
    out
}

#[test]
fn every_documented_command_and_flag_exists() {
    let mut cache = BTreeMap::new();
    let mut problems = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text =
            std::fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
        for inv in invocations(&doc, &text) {
            checked += 1;
            // The subcommand path: words up to the first flag or argument
            // that is not a subcommand of the path so far.
            let mut path: Vec<String> = Vec::new();
            let Some(top) = help(&path, &mut cache) else {
                problems.push(format!("{}: `groundgate --help` failed", inv.place));
                continue;
            };
            let mut current = top;
            let mut rest = inv.words.as_slice();
            while let Some(word) = rest.first() {
                if !subcommands(&current).contains(word) {
                    break;
                }
                path.push(word.clone());
                match help(&path, &mut cache) {
                    Some(h) => current = h,
                    None => {
                        problems.push(format!(
                            "{}: `groundgate {}` does not exist",
                            inv.place,
                            path.join(" ")
                        ));
                        break;
                    }
                }
                rest = &rest[1..];
            }
            if path.is_empty() && rest.first().is_some_and(|w| !w.starts_with('-')) {
                problems.push(format!(
                    "{}: `groundgate {}` is not a subcommand",
                    inv.place, rest[0]
                ));
                continue;
            }
            let known = flags(&current);
            for word in rest {
                let word = word.trim_start_matches('[').trim_end_matches(']');
                if !word.starts_with('-') || word == "-" || word.starts_with("---") || word == "--"
                {
                    continue;
                }
                let flag = word.split('=').next().unwrap_or(word);
                if !known.iter().any(|k| k == flag) {
                    problems.push(format!(
                        "{}: `groundgate {}` has no flag {flag}",
                        inv.place,
                        path.join(" ")
                    ));
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} groundgate command lines found in the docs"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_flag_check_sees_commands_in_every_kind_of_snippet() {
    let text = "```sh\nPATH=x groundgate check a --out b \\\n    --threads 2 | head\ncargo run --release -- eval f --misses 3 # note\ncargo run --example gen -- 5\n```\n```text\ngroundgate not-a-command\n```\n```console\n$ groundgate demo --serve\ngroundgate run: invalid\n```\n";
    let found = invocations(Path::new("x.md"), text);
    let words: Vec<Vec<&str>> = found
        .iter()
        .map(|i| i.words.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        words,
        vec![
            vec!["check", "a", "--out", "b", "--threads", "2"],
            vec!["eval", "f", "--misses", "3"],
            vec!["demo", "--serve"],
        ]
    );
    assert_eq!(found[0].place, "x.md:2");
}

#[test]
fn a_misspelt_flag_would_be_caught() {
    let mut cache = BTreeMap::new();
    let check = help(&["check".to_owned()], &mut cache).expect("groundgate check --help");
    let known = flags(&check);
    assert!(known.iter().any(|f| f == "--compare-config"), "{known:?}");
    assert!(!known.iter().any(|f| f == "--compare"), "{known:?}");
    assert!(help(&["no-such-command".to_owned()], &mut cache).is_none());
}

/// Repository paths the documents name in backticks (`src/…`, `tests/…`,
/// `examples/…`, …) and relative links to files other than Markdown pages.
fn named_paths(text: &str) -> Vec<String> {
    const ROOTS: [&str; 9] = [
        "src/",
        "schemas/",
        "fuzz/",
        "tests/",
        "examples/",
        "deploy/",
        "benches/",
        "templates/",
        ".ci/",
    ];
    let mut out = Vec::new();
    for (i, piece) in text.split('`').enumerate() {
        let is_code = i % 2 == 1;
        if is_code
            && ROOTS.iter().any(|r| piece.starts_with(r))
            && !piece.contains([' ', '*', '<', '…'])
        {
            out.push(piece.trim_end_matches(':').to_owned());
        }
        if !is_code {
            for link in piece.split("](").skip(1) {
                let target = link.split(')').next().unwrap_or("");
                let target = target.split('#').next().unwrap_or("");
                if !target.is_empty() && !target.contains("://") && !target.ends_with(".md") {
                    out.push(target.to_owned());
                }
            }
        }
    }
    out
}

#[test]
fn every_file_the_docs_name_exists() {
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text =
            std::fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
        let base = doc.parent().unwrap_or(Path::new("."));
        for path in named_paths(&text) {
            checked += 1;
            // Backticked paths are from the repository root, links from the document.
            if !repo(&path).exists() && !base.join(&path).exists() {
                missing.push(format!("{}: {path}", doc.display()));
            }
        }
    }
    assert!(checked > 10, "only {checked} paths found in the docs");
    assert!(
        missing.is_empty(),
        "named in the docs but absent:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_path_check_reads_backticks_and_links() {
    let text = "see `src/core/` and `tests/it/grounding.rs:` but not `src/*.rs` or `cargo test`; [a](../examples/x.toml#k) [b](other.md) [c](https://x.y/z)";
    assert_eq!(
        named_paths(text),
        vec!["src/core/", "tests/it/grounding.rs", "../examples/x.toml"]
    );
}
