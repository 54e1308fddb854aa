//! `groundgate eval` on inputs it cannot measure well (labels of the wrong
//! type, files holding a single class), and its comparison across files.

use serde_json::json;

fn write(dir: &std::path::Path, lines: &[serde_json::Value]) -> std::path::PathBuf {
    let path = dir.join("labelled.jsonl");
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(&path, text.join("\n")).unwrap();
    path
}

fn labelled(id: &str, label: serde_json::Value) -> serde_json::Value {
    json!({
        "request_id": id,
        "answer": "Revenue grew 5% in Q3[^1].",
        "sources": [{"urn": "u", "payload": "Revenue grew 5% in Q3."}],
        "provenance": "p",
        "label": label,
    })
}

fn eval(input: &std::path::Path) -> std::process::Output {
    crate::common::bin()
        .arg("eval")
        .arg(input)
        .output()
        .unwrap()
}

#[test]
fn a_label_of_the_wrong_type_is_named_with_its_value() {
    let dir = tempfile::tempdir().unwrap();
    for (label, shown) in [
        (json!(1), "1"),
        (json!(null), "null"),
        (json!(true), "true"),
    ] {
        let input = write(dir.path(), &[labelled("a", label.clone())]);
        let o = eval(&input);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(!err.contains("None"), "{label}: {err}");
        assert!(err.contains(&format!("found {shown}")), "{label}: {err}");
    }
    let input = write(dir.path(), &[json!({"request_id": "a", "answer": "x"})]);
    let o = eval(&input);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("\"label\" is missing") && err.contains("--label-field"),
        "{err}"
    );
    // A file unlabelled from its first line is answers to judge: check
    // is named for them.
    assert!(
        err.contains("`groundgate check` judges unlabelled answers"),
        "{err}"
    );
    let input = write(
        dir.path(),
        &[
            labelled("a", json!("supported")),
            json!({"request_id": "b", "answer": "x"}),
        ],
    );
    let err = String::from_utf8_lossy(&eval(&input).stderr).into_owned();
    assert!(
        err.contains("line 2") && !err.contains("groundgate check"),
        "{err}"
    );
}

#[test]
fn one_class_only_prints_no_rates_that_need_both() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        &[
            labelled("a", json!("supported")),
            labelled("b", json!("supported")),
        ],
    );
    let o = eval(&input);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let row = out
        .lines()
        .find(|l| l.contains("labelled.jsonl"))
        .unwrap_or_else(|| panic!("no row for the file: {out}"));
    // AUC, balanced accuracy, precision, recall, the best min_support and
    // the naive figures, over all words and over content words.
    assert_eq!(row.matches("n/a").count(), 9, "{row}");
    assert!(!out.contains("0.500") && !out.contains("0.000"), "{out}");
}

#[test]
fn two_files_show_the_naive_baseline_at_one_threshold_for_both() {
    let dir = tempfile::tempdir().unwrap();
    let answer = |id: &str, answer: &str, label: &str| {
        json!({
            "request_id": id,
            "answer": answer,
            "sources": [{"urn": "u", "payload": "Revenue grew 5% in Q3."}],
            "provenance": "p",
            "label": label,
        })
    };
    let mut paths = Vec::new();
    for name in ["first", "second"] {
        let lines = [
            answer("a", "Revenue grew 5% in Q3[^1].", "supported"),
            answer("b", "Profit fell 9% in Q1[^1].", "unsupported"),
        ];
        let path = dir.path().join(format!("{name}.jsonl"));
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        std::fs::write(&path, text.join("\n")).unwrap();
        paths.push(path);
    }
    let o = crate::common::bin()
        .arg("eval")
        .args(&paths)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    for variant in ["naive", "naive, content words"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{variant} at one threshold for all files")))
            .unwrap_or_else(|| panic!("no shared-threshold line for {variant}: {out}"));
        // Each file is separated perfectly by the same threshold.
        assert!(
            line.contains("first.jsonl 1.000") && line.contains("second.jsonl 1.000"),
            "{line}"
        );
    }
    // One file: no line.
    let o = eval(&paths[0]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("at one threshold"), "{out}");
}

#[test]
fn a_gzip_file_scores_as_its_plain_text() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let plain = crate::common::repo("tests/data/grounding_subset.jsonl");
    let gz = dir.path().join("grounding_subset.jsonl.gz");
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(&std::fs::read(&plain).unwrap()).unwrap();
    std::fs::write(&gz, z.finish().unwrap()).unwrap();
    let json = |input: &std::path::Path| {
        let o = crate::common::bin()
            .args(["eval", "--json"])
            .arg(input)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        String::from_utf8_lossy(&o.stdout)
            .replace("grounding_subset.jsonl.gz", "grounding_subset.jsonl")
    };
    let (a, b) = (json(&plain), json(&gz));
    assert!(a.contains("\"records\": 300"), "{a}");
    assert_eq!(a, b);
}

#[test]
fn a_line_longer_than_a_record_may_be_is_named_not_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(2 << 20);
    let path = write(
        dir.path(),
        &[
            labelled("a", json!("supported")),
            json!({"request_id": "b", "label": "supported", "answer": long}),
        ],
    );
    let o = eval(&path);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("line 2: ") && stderr.contains("longer than max_record_bytes (1048576)"),
        "{stderr}"
    );
}

#[test]
fn a_record_check_would_dead_letter_is_named_not_scored_as_supported() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = labelled("b", json!("unsupported"));
    bad["attempt"] = json!(2);
    let input = write(
        dir.path(),
        &[labelled("a", json!("supported")), bad.clone()],
    );
    let o = eval(&input);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("line 2: check would dead-letter this record (schema: attempt"),
        "{err}"
    );
    bad["attempt"] = json!(1);
    let input = write(dir.path(), &[labelled("a", json!("supported")), bad]);
    assert_eq!(eval(&input).status.code(), Some(0));
}

#[test]
fn folds_are_at_least_two_and_at_most_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<_> = (0..6)
        .map(|i| {
            labelled(
                &format!("r{i}"),
                json!(if i % 2 == 0 {
                    "supported"
                } else {
                    "unsupported"
                }),
            )
        })
        .collect();
    let input = write(dir.path(), &lines);
    let fit = |folds: &str| {
        crate::common::bin()
            .args(["eval", "--fit", "--folds", folds])
            .arg(&input)
            .output()
            .unwrap()
    };
    for (folds, says) in [
        ("1", "at least 2"),
        ("0", "at least 2"),
        ("7", "--folds 7 is more than the 6 records"),
        ("100000000000", "more than the 6 records"),
    ] {
        let o = fit(folds);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{folds}: {err}");
        assert!(err.contains(says), "{folds}: {err}");
    }
    let o = fit("6");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Without --fit nothing is cross-validated: folds asked for are a
    // mistake to say, not a setting to drop unsaid.
    let o = crate::common::bin()
        .args(["eval", "--folds", "3"])
        .arg(&input)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--fit"), "{err}");
}

#[test]
fn a_file_named_twice_is_refused_by_either_path() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        &[
            labelled("a", json!("supported")),
            labelled("b", json!("unsupported")),
        ],
    );
    let same = dir.path().join(".").join("labelled.jsonl");
    for (second, fit) in [(&input, false), (&same, false), (&same, true)] {
        let mut cmd = crate::common::bin();
        cmd.arg("eval").arg(&input).arg(second);
        if fit {
            cmd.args(["--fit", "--folds", "2"]);
        }
        let o = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(o.stdout.is_empty(), "no table for a refused run");
        assert!(
            err.contains("labelled.jsonl is named more than once among the inputs"),
            "{err}"
        );
    }
}

/// `-` and the file standard input is redirected from (or `/dev/stdin`)
/// are one file named twice.
#[test]
fn standard_input_named_again_by_a_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        &[
            labelled("a", json!("supported")),
            labelled("b", json!("unsupported")),
        ],
    );
    for second in [input.as_path(), std::path::Path::new("/dev/stdin")] {
        let o = crate::common::bin()
            .arg("eval")
            .arg("-")
            .arg(second)
            .stdin(std::fs::File::open(&input).unwrap())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(o.stdout.is_empty(), "no table for a refused run");
        assert!(
            err.contains("is named more than once among the inputs"),
            "{err}"
        );
    }
}

/// `--fit` on inputs that hold one label only has nothing to separate:
/// refused rather than printing coefficients to ship that say every claim
/// is of that label.
#[test]
fn a_fit_on_one_label_only_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for label in ["supported", "unsupported"] {
        let input = write(
            dir.path(),
            &(0..4)
                .map(|i| labelled(&format!("r{i}"), json!(label)))
                .collect::<Vec<_>>(),
        );
        for json in [false, true] {
            let mut cmd = crate::common::bin();
            cmd.args(["eval", "--fit", "--folds", "2"]).arg(&input);
            if json {
                cmd.arg("--json");
            }
            let o = cmd.output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{label} {json}: {err}");
            assert!(o.stdout.is_empty(), "no coefficients for a refused fit");
            assert!(
                err.contains(&format!(
                    "--fit needs records of both labels: the inputs hold 4 {label} records"
                )),
                "{err}"
            );
        }
    }
}

/// An error that cannot be told on a full standard error still ends with
/// its exit code, not an abort.
#[test]
fn an_unwritable_stderr_keeps_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), &[json!({"request_id": "a", "answer": "x"})]);
    let dev_full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let status = crate::common::bin()
        .arg("eval")
        .arg(&input)
        .stderr(dev_full)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2), "{status:?}");
}

/// The `\r` of a CRLF line ending is not part of the record, for the
/// record size limit too: a line of exactly `max_record_bytes` is scored
/// with either ending, as `check` judges it; one byte more is refused.
#[test]
fn a_crlf_line_of_exactly_the_record_limit_is_scored() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gg.toml");
    std::fs::write(&config, "max_record_bytes = 1024\n").unwrap();
    let line = |len: usize, label: &str| {
        let mut v = labelled("a", json!(label));
        v["pad"] = json!("");
        let short = serde_json::to_string(&v).unwrap().len();
        v["pad"] = json!("p".repeat(len - short));
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(text.len(), len);
        text
    };
    let input = dir.path().join("crlf.jsonl");
    for (len, ok) in [(1024, true), (1025, false)] {
        let text = format!(
            "{}\r\n{}\r\n",
            line(len, "supported"),
            line(len, "unsupported")
        );
        std::fs::write(&input, text).unwrap();
        let o = crate::common::bin()
            .arg("eval")
            .arg(&input)
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        if ok {
            assert_eq!(o.status.code(), Some(0), "{err}");
        } else {
            assert_eq!(o.status.code(), Some(2), "{err}");
            assert!(
                err.contains("line 1: ") && err.contains("longer than max_record_bytes (1024)"),
                "{err}"
            );
        }
    }
}

/// A label given twice in one record, the two values contradicting each
/// other, is refused: JSON readers keep one of them, each its own.
#[test]
fn a_label_repeated_in_a_record_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("twice.jsonl");
    let first = serde_json::to_string(&labelled("a", json!("supported"))).unwrap();
    let twice = first.replacen('{', "{\"label\":\"unsupported\",", 1);
    let other = serde_json::to_string(&labelled("b", json!("unsupported"))).unwrap();
    std::fs::write(&input, format!("{other}\n{twice}\n")).unwrap();
    let o = eval(&input);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(o.stdout.is_empty(), "no table for a refused run");
    assert!(
        err.contains("line 2: field \"label\" is given 2 times in the record"),
        "{err}"
    );
}

/// A gzip or zstd input that breaks in its first bytes (the error comes
/// while it is opened) is named, as one that breaks later is: of several
/// inputs, the user learns which.
#[test]
fn an_input_whose_packing_breaks_in_its_first_bytes_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let ok = write(
        dir.path(),
        &[
            labelled("a", json!("supported")),
            labelled("b", json!("unsupported")),
        ],
    );
    let cases: [(&str, &[u8]); 2] = [
        ("head.gz", b"\x1F\x8B\x08\xFF\x00\x00 not a gzip header\n"),
        ("head.zst", b"\x28\xB5\x2F\xFD\xFF\xFF"),
    ];
    for (name, bytes) in cases {
        let bad = dir.path().join(name);
        std::fs::write(&bad, bytes).unwrap();
        let o = crate::common::bin()
            .arg("eval")
            .arg(&ok)
            .arg(&bad)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("{name}: cannot read input at line 1:")),
            "the error names the input: {err}"
        );
    }
}

/// A line that is JSON but not an object (a JSON array file, a number) is
/// told as such, not as a record whose label is missing.
#[test]
fn a_line_that_is_not_an_object_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("array.json");
    let records = json!([labelled("a", json!("supported"))]);
    std::fs::write(&input, format!("{records}\n")).unwrap();
    let o = eval(&input);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("line 1: not a JSON object but an array"),
        "{err}"
    );
    assert!(err.contains("jq -c '.[]'"), "{err}");
}

#[test]
fn files_of_one_name_in_two_directories_are_rows_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = Vec::new();
    for week in ["week1", "week2"] {
        let d = dir.path().join(week);
        std::fs::create_dir(&d).unwrap();
        inputs.push(write(
            &d,
            &[
                labelled("a", json!("supported")),
                labelled("b", json!("unsupported")),
            ],
        ));
    }
    let o = crate::common::bin()
        .arg("eval")
        .args(&inputs)
        .arg("--json")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let files: Vec<String> = report
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["file"].as_str().unwrap().to_string())
        .collect();
    let given: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    assert_eq!(files, given, "{out}");
}

#[test]
fn a_file_without_a_caret_marker_is_said_to_measure_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let note = "has a claim citing a source with a [^N] marker";
    let bracketed = |id, label| {
        let mut r = labelled(id, label);
        r["answer"] = json!("Revenue grew 5% in Q3 [1].");
        r
    };
    let input = write(
        dir.path(),
        &[
            bracketed("a", json!("supported")),
            bracketed("b", json!("unsupported")),
        ],
    );
    let o = eval(&input);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("no answer of labelled.jsonl {note}")),
        "{err}"
    );
    let input = write(
        dir.path(),
        &[
            labelled("a", json!("supported")),
            bracketed("b", json!("unsupported")),
        ],
    );
    let err = String::from_utf8_lossy(&eval(&input).stderr).into_owned();
    assert!(!err.contains(note), "{err}");
}
