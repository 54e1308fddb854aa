//! The JSON Schemas under `schemas/` held to what groundgate really reads
//! and writes: each is a valid draft 2020-12 schema whose vocabularies are
//! the code's; every record `check` writes over the shipped and test data,
//! under several configurations, validates against its schema; a real
//! output altered by one key or value does not (the output schemas are
//! closed); and over generated records the input schema agrees with the
//! decoder, except for the decoder rules listed in [`INEXPRESSIBLE`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::OnceLock;

use groundgate::core::{
    CoreSettings, DeadLetterKind, DeadLetterValue, FindingKind, Mode, OutcomeKind, RecordMeta,
    Terminal, process,
};
use jsonschema::Validator;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::common::{bin, repo, succeeded};

/// Every schema file, by name (the file name without `.schema.json`).
const NAMES: [&str; 12] = [
    "answer",
    "audit-record",
    "audit-row",
    "check-dead-letter",
    "dead-letter-too-large",
    "eval",
    "eval-fit",
    "final",
    "retry",
    "seal",
    "summary",
    "verify-report",
];

struct Schema {
    doc: Value,
    validator: Validator,
}

fn schemas() -> &'static BTreeMap<&'static str, Schema> {
    static SCHEMAS: OnceLock<BTreeMap<&'static str, Schema>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        NAMES
            .iter()
            .map(|&name| {
                let path = repo(&format!("schemas/{name}.schema.json"));
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let doc: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let validator = jsonschema::draft202012::new(&doc)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                (name, Schema { doc, validator })
            })
            .collect()
    })
}

/// Asserts that `value`, which groundgate wrote, passes schema `name`.
pub fn assert_valid(name: &str, value: &Value) {
    let e = errors(name, value);
    assert!(e.is_empty(), "fails {name}.schema.json: {e:?}\n{value}");
}

/// Why `value` fails schema `name`, one line per error; empty when it passes.
fn errors(name: &str, value: &Value) -> Vec<String> {
    schemas()[name]
        .validator
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn valid(name: &str, value: &Value) -> bool {
    schemas()[name].validator.is_valid(value)
}

#[test]
fn the_schema_files_are_the_ones_listed() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(repo("schemas"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let listed: BTreeSet<String> = NAMES.iter().map(|n| format!("{n}.schema.json")).collect();
    assert_eq!(on_disk, listed);
}

#[test]
fn every_schema_is_a_described_draft_2020_12_schema() {
    for (name, s) in schemas() {
        if let Err(e) = jsonschema::draft202012::meta::validate(&s.doc) {
            panic!("{name}: not a valid draft 2020-12 schema: {e}");
        }
        assert_eq!(
            s.doc["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        assert_eq!(s.doc["$id"], format!("urn:groundgate:schema:{name}"));
        for key in ["title", "description"] {
            assert!(
                s.doc[key].as_str().is_some_and(|t| !t.is_empty()),
                "{name}: no {key}"
            );
        }
        let mut undescribed = Vec::new();
        undescribed_properties(&s.doc, "", &mut undescribed);
        assert!(
            undescribed.is_empty(),
            "{name}: properties without a description: {undescribed:?}"
        );
    }
}

/// Properties declared without a description. Conditional branches (`if`,
/// `then`, `else`, `oneOf`) only narrow properties declared beside them.
fn undescribed_properties(schema: &Value, at: &str, out: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else {
        if let Some(items) = schema.as_array() {
            for (i, item) in items.iter().enumerate() {
                undescribed_properties(item, &format!("{at}/{i}"), out);
            }
        }
        return;
    };
    for (key, sub) in obj {
        if ["if", "then", "else", "oneOf"].contains(&key.as_str()) {
            continue;
        }
        if key == "properties"
            && let Some(props) = sub.as_object()
        {
            for (prop, decl) in props {
                if decl.get("description").and_then(Value::as_str).is_none() {
                    out.push(format!("{at}/properties/{prop}"));
                }
            }
        }
        undescribed_properties(sub, &format!("{at}/{key}"), out);
    }
}

#[test]
fn a_definition_shared_by_several_schemas_is_the_same_in_each() {
    let mut seen: BTreeMap<&str, (&str, &Value)> = BTreeMap::new();
    for (name, s) in schemas() {
        for (def, body) in s.doc["$defs"].as_object().into_iter().flatten() {
            match seen.get(def.as_str()) {
                Some((first, other)) => assert_eq!(
                    body, *other,
                    "$defs/{def} differs between {first} and {name}"
                ),
                None => {
                    seen.insert(def, (name, body));
                }
            }
        }
    }
}

/// The audit topic's one schema (one subject, one id under
/// TopicNameStrategy) is the row's or the seal's, each repeated whole in
/// its `$defs`, so that it stands alone and cannot drift from them.
#[test]
fn the_audit_record_schema_is_exactly_the_row_or_the_seal() {
    let doc = &schemas()["audit-record"].doc;
    for (name, def) in [("audit-row", "audit_row"), ("seal", "seal")] {
        let mut body = schemas()[name].doc.clone();
        let body = body.as_object_mut().unwrap();
        for key in ["$schema", "$id", "$defs"] {
            body.remove(key);
        }
        assert_eq!(
            doc["$defs"][def],
            Value::Object(body.clone()),
            "$defs/{def} of audit-record is not {name}.schema.json"
        );
        for shared in schemas()[name].doc["$defs"].as_object().unwrap().keys() {
            assert!(
                doc["$defs"].get(shared).is_some(),
                "{name}'s $defs/{shared} missing from audit-record"
            );
        }
    }
    let branches: Vec<&Value> = doc["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["$ref"])
        .collect();
    assert_eq!(
        branches,
        [&json!("#/$defs/audit_row"), &json!("#/$defs/seal")]
    );
    // Neither a row nor a seal with a key of the other passes.
    let (row, seal) = (
        written().iter().find(|w| w.schema == "audit-row").unwrap(),
        written().iter().find(|w| w.schema == "seal").unwrap(),
    );
    for (v, other) in [(&row.value, "seq"), (&seal.value, "answer_hash")] {
        assert_valid("audit-record", v);
        let mut mixed = v.clone();
        mixed[other] = json!(0);
        assert!(!valid("audit-record", &mixed), "{mixed}");
    }
}

fn enum_of(name: &str, pointer: &str) -> Vec<String> {
    let at = schemas()[name]
        .doc
        .pointer(pointer)
        .unwrap_or_else(|| panic!("{name}: no {pointer}"));
    at["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}{pointer}: no enum"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn keys_of(name: &str, pointer: &str) -> BTreeSet<String> {
    schemas()[name].doc.pointer(pointer).unwrap()["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn closed_vocabularies_are_the_code_s() {
    let findings: Vec<String> = FindingKind::ALL.iter().map(|k| k.to_string()).collect();
    let dead: Vec<String> = DeadLetterKind::ALL.iter().map(|k| k.to_string()).collect();
    let outcomes: Vec<String> = OutcomeKind::ALL.iter().map(|k| k.to_string()).collect();
    let modes: Vec<String> = [Mode::Strict, Mode::Lenient]
        .iter()
        .map(|m| m.to_string())
        .collect();
    for name in ["final", "retry", "audit-row"] {
        assert_eq!(enum_of(name, "/$defs/finding_kind"), findings, "{name}");
    }
    assert_eq!(enum_of("audit-row", "/$defs/dead_letter_kind"), dead);
    assert_eq!(enum_of("check-dead-letter", "/properties/kind"), dead);
    assert_eq!(enum_of("audit-row", "/$defs/outcome"), outcomes);
    assert_eq!(enum_of("summary", "/$defs/outcome"), outcomes);
    for name in ["answer", "final", "audit-row"] {
        assert_eq!(enum_of(name, "/$defs/mode"), modes, "{name}");
    }
    let set = |v: Vec<String>| v.into_iter().collect::<BTreeSet<_>>();
    assert_eq!(keys_of("summary", "/properties/outcomes"), set(outcomes));
    assert_eq!(keys_of("summary", "/properties/findings"), set(findings));
    assert_eq!(keys_of("summary", "/properties/dead_letters"), set(dead));
}

/// The problem kinds of `audit verify`, as the table of docs/audit-trail.md
/// lists them (its first column).
fn documented_problem_kinds() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(repo("docs/audit-trail.md")).unwrap();
    doc.lines()
        .skip_while(|l| !l.starts_with("| problem | meaning |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .flat_map(|l| {
            let cell = l.split('|').nth(1).unwrap_or_default();
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_verify_report_s_problem_kinds_are_the_documented_ones() {
    let documented = documented_problem_kinds();
    assert!(documented.len() > 20, "{documented:?}");
    let in_schema: BTreeSet<String> = enum_of("verify-report", "/$defs/problem/properties/kind")
        .into_iter()
        .collect();
    assert_eq!(in_schema, documented);
}

// --- What groundgate writes ----------------------------------------------

/// One record or report groundgate wrote: the schema it must pass, where
/// it came from.
struct Written {
    schema: &'static str,
    whence: String,
    value: Value,
}

/// Input lines that reach every kind of output and every branch of the
/// schemas: each dead-letter kind and form, retries with and without
/// `prior`, lenient and fallback modes, lists cut short, an output too
/// large to write, structured payloads, extreme numbers.
fn edge_lines() -> Vec<Vec<u8>> {
    let rec = |extra: Value| -> Vec<u8> {
        let mut v = json!({
            "request_id": "edge",
            "answer": "Revenue grew 12% in Q3[^1]. Costs fell[^2].",
            "sources": [
                {"urn": "doc://q3", "payload": "Q3 revenue grew 12% year over year."},
                {"urn": "doc://costs", "payload": {"costs": "fell", "by": [1, 2.5]}},
                {"urn": "doc://empty", "payload": null},
                {"urn": "doc://absent"}
            ],
            "provider": "openai", "model": "gpt-4o", "provenance": "rag",
            "confidence": 0.9, "prompt_tokens": 10, "completion_tokens": 5,
            "cost_usd": 0.01, "question": "How did Q3 go?", "tenant": "t",
            "user": "u", "role": "analyst", "temperature": -0.5, "seed": 7
        });
        for (k, val) in extra.as_object().unwrap() {
            v[k] = val.clone();
        }
        serde_json::to_vec(&v).unwrap()
    };
    let prior = json!({"completion_tokens": 3, "cost_usd": 0.002, "prompt_tokens": 9});
    let many = |marker: &str, n: usize| -> String {
        (0..n)
            .map(|i| format!("Claim {i} here{marker}. "))
            .collect()
    };
    let long_urn = format!("doc://{}", "u".repeat(3000));
    vec![
        rec(json!({"request_id": "clean"})),
        rec(json!({"request_id": "out-of-range", "answer": "Revenue grew 12%[^9]."})),
        rec(json!({"request_id": "malformed", "answer": "Revenue grew 12%[^x]."})),
        rec(json!({"request_id": "retry-fixed", "attempt": 1, "prior": prior})),
        rec(
            json!({"request_id": "retry-still-bad", "attempt": 1, "prior": prior, "answer": "Grew[^9]."}),
        ),
        rec(json!({"request_id": "prior-missing", "attempt": 1})),
        rec(json!({"request_id": "prior-unexpected", "prior": prior})),
        rec(json!({"request_id": "lenient", "mode": "lenient", "answer": "Grew[^9] and[^y]."})),
        rec(json!({"request_id": "fallback", "provider": "nocite", "answer": "Grew[^9]."})),
        rec(json!({"request_id": "forbidden", "answer": "A guaranteed win[^1]."})),
        rec(json!({"request_id": "low-confidence", "confidence": 0.1, "provenance": null})),
        rec(json!({"request_id": "empty-answer", "answer": "   "})),
        rec(json!({"request_id": "too-long", "answer": "word ".repeat(2100)})),
        rec(json!({"request_id": "uncited", "answer": "Revenue was 12 million in 2020 at Acme."})),
        rec(
            json!({"request_id": "unsupported", "answer": "Profits tripled in Brazil during 1999[^1]."}),
        ),
        rec(json!({"request_id": "many-lenient", "mode": "lenient", "answer": many("[^x]", 150)})),
        rec(json!({"request_id": "many-strict", "answer": many("[^9]", 150)})),
        rec(
            json!({"request_id": "many-retry", "attempt": 1, "prior": prior, "answer": many("[^9]", 150)}),
        ),
        rec(json!({"request_id": "no-sources", "sources": [], "answer": "Plain text."})),
        rec(json!({
            "request_id": "saturating", "prompt_tokens": u64::MAX, "completion_tokens": u64::MAX,
            "seed": u64::MAX, "cost_usd": 1e300, "cache_hit": true, "temperature": null
        })),
        rec(json!({"request_id": "unknown-keys", "extra": {"nested": [1, {"x": null}]}})),
        rec(json!({
            "request_id": "output-too-large",
            "sources": [{"urn": long_urn, "payload": "p"}],
            "answer": "[^1]".repeat(40)
        })),
        rec(json!({"request_id": "x".repeat(256)})),
        // Dead letters: schema, invalid JSON, invalid UTF-8, empty, too large.
        rec(json!({"request_id": "attempt-2", "attempt": 2})),
        rec(json!({"request_id": "mode-null", "mode": null})),
        rec(json!({"request_id": "x".repeat(257)})),
        br#"{"request_id":"no-answer"}"#.to_vec(),
        br#"["an","array"]"#.to_vec(),
        b"{not json".to_vec(),
        b"{\"request_id\":\"bad-utf8\",\"answer\":\"\xff\xfe\"}".to_vec(),
        Vec::new(),
        rec(json!({"request_id": "too-large-line", "answer": "z".repeat(20_000)})),
    ]
}

/// The configurations `check` runs under, by name, and their inputs.
struct Run {
    name: &'static str,
    config: String,
    compare: Option<&'static str>,
    inputs: Vec<std::path::PathBuf>,
}

fn runs(dir: &Path) -> Vec<Run> {
    let edge = dir.join("edge.jsonl");
    let mut text = Vec::new();
    for line in edge_lines() {
        text.extend_from_slice(&line);
        text.push(b'\n');
    }
    std::fs::write(&edge, text).unwrap();
    let key = dir.join("audit");
    succeeded(
        bin().args(["audit", "keygen", "--out"]).arg(&key),
        "audit keygen",
    );
    let examples = repo("examples/answers.jsonl");
    let shipped = vec![
        examples.clone(),
        repo("tests/data/grounding_subset.jsonl"),
        repo("tests/data/grounding_wice_claims.jsonl"),
        edge.clone(),
    ];
    vec![
        Run {
            name: "demo",
            config: std::fs::read_to_string(repo("examples/demo.toml")).unwrap(),
            compare: Some("examples/what-if.toml"),
            inputs: shipped,
        },
        Run {
            name: "edge",
            config: format!(
                "policy_version = \"schemas-edge\"\ninclude_answer = true\n\
                 max_record_bytes = 16384\nmax_output_bytes = 65536\n\
                 non_citing_providers = [\"nocite\"]\n\
                 [policy]\nforbidden_terms = [\"guaranteed\"]\n\
                 [grounding]\nunsupported_claim = \"retry\"\nuncited_claim = \"retry\"\n\
                 [audit]\nseal_every = 7\nsigning_key_file = {:?}\n",
                key.with_extension("key")
            ),
            compare: None,
            inputs: vec![edge.clone()],
        },
        Run {
            name: "grounding-off",
            config: "[grounding]\nenabled = false\n[policy.actions]\nlow_confidence = \"reject\"\n"
                .to_string(),
            compare: Some("examples/demo.toml"),
            inputs: vec![edge, examples],
        },
    ]
}

/// Every record of every run, parsed, with the schema it must pass; and
/// the reports of `audit verify --json` over their trails and of `eval
/// --json` over the labelled test data.
fn written() -> &'static [Written] {
    static WRITTEN: OnceLock<Vec<Written>> = OnceLock::new();
    WRITTEN.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut all = Vec::new();
        for run in runs(dir.path()) {
            let config = dir.path().join(format!("{}.toml", run.name));
            std::fs::write(&config, &run.config).unwrap();
            let out = dir.path().join(run.name);
            let mut cmd = bin();
            cmd.current_dir(repo("."))
                .arg("check")
                .args(&run.inputs)
                .arg("--out")
                .arg(&out)
                .arg("--config")
                .arg(&config);
            if let Some(compare) = run.compare {
                cmd.args(["--compare-config", compare]);
            }
            succeeded(&mut cmd, &format!("check ({})", run.name));
            let mut push = |schema, file: &str, line: usize, value| {
                all.push(Written {
                    schema,
                    whence: format!("{} {file}:{line}", run.name),
                    value,
                })
            };
            for (file, schema) in [
                ("final.jsonl", "final"),
                ("retry.jsonl", "retry"),
                ("dead_letter.jsonl", "check-dead-letter"),
                ("audit.jsonl", "audit-row"),
            ] {
                let text = std::fs::read_to_string(out.join(file)).unwrap();
                for (i, line) in text.lines().enumerate() {
                    let value: Value = serde_json::from_str(line).unwrap();
                    let schema = if value.get("type").is_some() {
                        "seal"
                    } else {
                        schema
                    };
                    if file == "audit.jsonl" {
                        push("audit-record", file, i + 1, value.clone());
                    }
                    push(schema, file, i + 1, value);
                }
            }
            let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
            push(
                "summary",
                "summary.json",
                1,
                serde_json::from_str(&summary).unwrap(),
            );
        }
        all.extend(verify_reports(dir.path()));
        all.extend(eval_reports());
        all
    })
}

/// Reports of `audit verify --json` over the trails `check` wrote into
/// `dir`: the signed one with its key, and the demo's tampered (a row
/// dropped, another altered) and checked against a run it is not.
fn verify_reports(dir: &Path) -> Vec<Written> {
    let demo = std::fs::read_to_string(dir.join("demo/audit.jsonl")).unwrap();
    let tampered_lines: String = demo
        .lines()
        .enumerate()
        .filter(|&(i, _)| i != 3)
        .map(|(i, line)| match i {
            6 => line.replacen("\"outcome\":\"", "\"outcome\":\"x", 1) + "\n",
            _ => format!("{line}\n"),
        })
        .collect();
    let tampered = dir.join("tampered.jsonl");
    std::fs::write(&tampered, tampered_lines).unwrap();
    let public = dir.join("audit.pub");
    let edge = dir.join("edge/audit.jsonl");
    let runs: [(&str, Vec<&std::ffi::OsStr>); 3] = [
        (
            "signed",
            vec![
                edge.as_os_str(),
                "--public-key".as_ref(),
                public.as_os_str(),
            ],
        ),
        ("tampered", vec![tampered.as_os_str()]),
        (
            "another run",
            vec![
                edge.as_os_str(),
                "--run".as_ref(),
                "0123456789abcdef0123456789abcdef".as_ref(),
            ],
        ),
    ];
    runs.into_iter()
        .map(|(name, args)| {
            let o = bin()
                .args(["audit", "verify", "--json"])
                .args(args)
                .output()
                .unwrap();
            Written {
                schema: "verify-report",
                whence: format!("audit verify ({name}), exit {:?}", o.status.code()),
                value: serde_json::from_slice(&o.stdout)
                    .unwrap_or_else(|e| panic!("audit verify ({name}): {e}")),
            }
        })
        .collect()
}

/// Reports of `eval --json`, by file and by group, and of `eval --fit
/// --json` over one input and over two.
fn eval_reports() -> Vec<Written> {
    let subset = repo("tests/data/grounding_subset.jsonl");
    let claims = repo("tests/data/grounding_wice_claims.jsonl");
    let runs: [(&str, Vec<&std::ffi::OsStr>); 3] = [
        (
            "eval",
            vec![
                subset.as_os_str(),
                claims.as_os_str(),
                "--by".as_ref(),
                "kind".as_ref(),
            ],
        ),
        (
            "eval-fit",
            vec![
                "--fit".as_ref(),
                "--folds".as_ref(),
                "3".as_ref(),
                claims.as_os_str(),
            ],
        ),
        (
            "eval-fit",
            vec![
                "--fit".as_ref(),
                "--folds".as_ref(),
                "3".as_ref(),
                subset.as_os_str(),
                claims.as_os_str(),
            ],
        ),
    ];
    runs.into_iter()
        .map(|(schema, args)| {
            let out = succeeded(bin().args(["eval", "--json"]).args(&args), schema);
            Written {
                schema,
                whence: format!("{schema} {args:?}"),
                value: serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{schema}: {e}")),
            }
        })
        .collect()
}

#[test]
fn every_record_groundgate_writes_validates_against_its_schema() {
    let written = written();
    let mut failures = Vec::new();
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for w in written {
        *count.entry(w.schema).or_default() += 1;
        let e = errors(w.schema, &w.value);
        if !e.is_empty() {
            failures.push(format!("{} ({}): {e:?}", w.whence, w.schema));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} records fail their schema, the first: {:#?}",
        failures.len(),
        written.len(),
        &failures[..failures.len().min(10)]
    );
    // Every output schema was exercised, and by the shapes the corpus is
    // there for.
    for name in NAMES
        .iter()
        .filter(|n| !["answer", "dead-letter-too-large"].contains(n))
    {
        assert!(count.get(name).is_some_and(|&n| n > 0), "no {name} record");
    }
    let has = |schema: &str, pointer: &str, want: &Value| {
        written
            .iter()
            .any(|w| w.schema == schema && w.value.pointer(pointer) == Some(want))
    };
    for (schema, pointer, want) in [
        ("check-dead-letter", "/kind", json!("too_large")),
        ("check-dead-letter", "/kind", json!("invalid_utf8")),
        ("check-dead-letter", "/kind", json!("invalid_json")),
        ("check-dead-letter", "/kind", json!("schema")),
        ("audit-row", "/mode", json!("lenient")),
        ("audit-row", "/requested_mode", json!("strict")),
        ("audit-row", "/warnings/0/kind", json!("mode_fallback")),
        ("audit-row", "/outcome", json!("dead_letter")),
        ("final", "/retry_count", json!(1)),
        ("final", "/validation/warnings/100/kind", json!("malformed")),
        ("retry", "/problems/20/kind", json!("out_of_range")),
        ("seal", "/final", json!(true)),
        ("summary", "/saturated/0", json!("prompt_tokens")),
        ("verify-report", "/signatures_checked", json!(true)),
        ("eval", "/1/group", json!("(none)")),
        ("eval-fit", "/leave_one_file_out", Value::Null),
    ] {
        assert!(
            has(schema, pointer, &want),
            "no {schema} with {pointer} = {want}"
        );
    }
    assert!(
        written
            .iter()
            .any(|w| w.schema == "seal" && w.value["sig"].is_string()),
        "no signed seal"
    );
    assert!(
        written
            .iter()
            .any(|w| w.schema == "summary" && w.value["comparison"].is_object()),
        "no summary with a comparison"
    );
}

// --- The output schemas are closed ---------------------------------------

/// Whether an output may lack `key` of the object at `parent`: the audit
/// row's `answer` (only with `include_answer`), a seal's `run` (a worker's
/// seals name none), the same two of an audit-topic record, and in a verify report the `run` of a problem or a
/// seal (absent when none is concerned or named).
fn optional(schema: &str, parent: &str, key: &str) -> bool {
    match (schema, key) {
        ("audit-row" | "audit-record", "answer") | ("seal" | "audit-record", "run") => {
            parent.is_empty()
        }
        ("verify-report", "run") => {
            parent.starts_with("/problems/") || parent.starts_with("/keys/")
        }
        _ => false,
    }
}

/// JSON pointers of every object in `v`, but for the insides of a retry
/// request's structured payloads, which are the producer's and open.
fn objects(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            out.push(at.clone());
            for (k, sub) in m {
                if k != "payload" {
                    objects(sub, format!("{at}/{k}"), out);
                }
            }
        }
        Value::Array(a) => {
            for (i, sub) in a.iter().enumerate() {
                objects(sub, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Every output written, with the schema it must pass: `check`'s records
/// and the bounded dead letters of `process`.
fn outputs() -> Vec<(&'static str, Value)> {
    let mut all: Vec<(&str, Value)> = written()
        .iter()
        .map(|w| (w.schema, w.value.clone()))
        .collect();
    all.extend(
        bounded_dead_letters()
            .into_iter()
            .map(|v| ("dead-letter-too-large", v)),
    );
    all
}

/// A few records of each output schema, the most varied first: those with
/// the most objects and keys.
fn samples() -> Vec<(&'static str, Value)> {
    let mut by_schema: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for (schema, value) in outputs() {
        by_schema.entry(schema).or_default().push(value);
    }
    let size = |v: &Value| {
        let mut o = Vec::new();
        objects(v, String::new(), &mut o);
        o.len() * 100 + v.as_object().map_or(0, Map::len)
    };
    let mut out = Vec::new();
    for (schema, mut values) in by_schema {
        values.sort_by_key(|v| std::cmp::Reverse(size(v)));
        // The largest ones, and one of each top-level key set.
        let mut shapes = BTreeSet::new();
        for (i, v) in values.into_iter().enumerate() {
            let shape: Vec<String> = v
                .as_object()
                .into_iter()
                .flat_map(|o| o.keys().cloned())
                .collect();
            if i < 3 || shapes.insert(shape) {
                out.push((schema, v));
            }
        }
    }
    out
}

#[test]
fn an_extra_or_missing_key_anywhere_in_an_output_fails_its_schema() {
    let mut accepted = Vec::new();
    for (schema, sample) in samples() {
        assert!(
            valid(schema, &sample),
            "{schema}: {:?}",
            errors(schema, &sample)
        );
        let mut at = Vec::new();
        objects(&sample, String::new(), &mut at);
        for pointer in at {
            let mut extra = sample.clone();
            let obj = extra
                .pointer_mut(&pointer)
                .unwrap()
                .as_object_mut()
                .unwrap();
            obj.insert("unexpected".into(), json!(1));
            if valid(schema, &extra) {
                accepted.push(format!("{schema}: an extra key at {pointer:?}"));
            }
            let keys: Vec<String> = sample
                .pointer(&pointer)
                .unwrap()
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            for key in keys {
                let path = format!("{pointer}/{key}");
                if optional(schema, &pointer, &key) {
                    continue;
                }
                let mut missing = sample.clone();
                missing
                    .pointer_mut(&pointer)
                    .unwrap()
                    .as_object_mut()
                    .unwrap()
                    .remove(&key);
                if valid(schema, &missing) {
                    accepted.push(format!("{schema}: {path} missing"));
                }
            }
        }
    }
    assert!(accepted.is_empty(), "accepted: {accepted:#?}");
}

#[test]
fn a_value_outside_its_vocabulary_or_range_fails_its_schema() {
    let samples = outputs();
    let mut accepted = Vec::new();
    for (schema, pointer, bad) in [
        ("final", "/mode", json!("loose")),
        ("final", "/retry_count", json!(2)),
        ("final", "/validation/ok", json!("yes")),
        ("final", "/validation/warnings/0/kind", json!("bogus")),
        ("final", "/citations/0/marker", json!(0)),
        ("final", "/grounding/claims/0/support", json!(1.5)),
        ("final", "/grounding/claims/0/span", json!([1])),
        ("final", "/cost_usd", json!(-1)),
        ("final", "/request_id", json!("")),
        ("retry", "/attempt", json!(0)),
        ("retry", "/mode", json!("lenient")),
        ("retry", "/problems/0/kind", json!("bogus")),
        ("retry", "/prior/prompt_tokens", json!(-1)),
        ("retry", "/sources/0/payload", json!(null)),
        ("audit-row", "/outcome", json!("maybe")),
        ("audit-row", "/mode", json!("loose")),
        ("audit-row", "/errors/0/kind", json!("bogus")),
        ("audit-row", "/warnings/0/kind", json!("schema")),
        ("audit-row", "/answer_hash", json!("ABC")),
        ("audit-row", "/input/partition", json!(-1)),
        ("audit-row", "/grounding/score", json!(2)),
        ("seal", "/type", json!("groundgate.seal/v2")),
        ("seal", "/final", json!(false)),
        ("seal", "/sig", json!("zz")),
        ("seal", "/run", json!("ABC")),
        ("seal", "/rows/0", json!([1])),
        ("seal", "/prev", json!("0")),
        ("check-dead-letter", "/kind", json!("too_big")),
        ("check-dead-letter", "/line", json!(0)),
        ("dead-letter-too-large", "/kind", json!("schema")),
        ("dead-letter-too-large", "/sha256", json!("0")),
        ("summary", "/grounding_model", json!("mine")),
        ("summary", "/unsupported_claim_action", json!("ignore")),
        ("summary", "/outcomes/accepted", json!(-1)),
        ("summary", "/saturated", json!(["records"])),
        ("summary", "/score_histogram", json!([0, 0, 0])),
        ("summary", "/worst/0/outcome", json!("retry")),
        ("summary", "/audit_run", json!("run-1")),
        ("verify-report", "/problems/0/kind", json!("bogus")),
        ("verify-report", "/problems/0/offsets", json!([1])),
        ("verify-report", "/keys/0/fingerprint", json!("MD5:00")),
        ("verify-report", "/chains/0/head_seal", json!("x")),
        ("eval", "/0/auc", json!(1.5)),
        ("eval", "/0/records", json!(-1)),
        ("eval-fit", "/folds", json!(1)),
        ("eval-fit", "/coefficients/found", json!("high")),
    ] {
        let Some(sample) = samples
            .iter()
            .find(|(s, v)| *s == schema && v.pointer(pointer).is_some())
        else {
            panic!("no {schema} record has {pointer}");
        };
        let mut bad_value = sample.1.clone();
        *bad_value.pointer_mut(pointer).unwrap() = bad.clone();
        if valid(schema, &bad_value) {
            accepted.push(format!("{schema}: {pointer} = {bad}"));
        }
    }
    // A dead letter's audit row is never decoded: it carries no mode.
    let row = samples
        .iter()
        .find(|(s, v)| *s == "audit-row" && v["outcome"] == "dead_letter")
        .expect("a dead letter's audit row");
    let mut moded = row.1.clone();
    moded["mode"] = json!("strict");
    if valid("audit-row", &moded) {
        accepted.push("audit-row: a dead letter with a mode".into());
    }
    assert!(accepted.is_empty(), "accepted: {accepted:#?}");
}

// --- What `process` reads and writes -------------------------------------

const META: RecordMeta<'static> = RecordMeta {
    topic: "answers",
    partition: 2,
    offset: 7,
};
const NOW: i64 = 1_764_000_000_000_000_000;

/// Settings under which a small record can still outgrow the output limit.
fn settings() -> CoreSettings {
    CoreSettings {
        include_answer: true,
        max_record_bytes: 16 << 10,
        max_output_bytes: 64 << 10,
        non_citing_providers: vec!["nocite".into()],
        ..CoreSettings::default()
    }
}

/// The outputs of one `process` call, each checked against its schema.
fn outputs_fail(record: &[u8], settings: &CoreSettings) -> Vec<String> {
    let o = process(Some(record), &META, NOW, settings);
    let mut failures = Vec::new();
    let mut check = |schema: &str, bytes: &[u8]| match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => failures.extend(
            errors(schema, &v)
                .into_iter()
                .map(|e| format!("{schema}: {e}")),
        ),
        Err(e) => failures.push(format!("{schema}: not JSON: {e}")),
    };
    check("audit-row", &o.audit);
    match &o.terminal {
        Terminal::Final(b) => check("final", b),
        Terminal::Retry(b) => check("retry", b),
        Terminal::DeadLetter(d) => {
            if let DeadLetterValue::Bounded(b) = &d.value {
                check("dead-letter-too-large", b);
            }
        }
    }
    failures
}

/// The bounded values of a record over `max_record_bytes` and of one whose
/// outputs would be over `max_output_bytes`.
fn bounded_dead_letters() -> Vec<Value> {
    let s = settings();
    let too_long = format!(
        r#"{{"request_id":"big","answer":"{}"}}"#,
        "é".repeat(10_000)
    );
    let outgrows = serde_json::to_vec(&json!({
        "request_id": "outgrows",
        "answer": "[^1]".repeat(40),
        "sources": [{"urn": "u".repeat(3000)}]
    }))
    .unwrap();
    [too_long.into_bytes(), outgrows]
        .iter()
        .map(|r| match process(Some(r), &META, NOW, &s).terminal {
            Terminal::DeadLetter(d) => match d.value {
                DeadLetterValue::Bounded(b) => serde_json::from_slice(&b).unwrap(),
                DeadLetterValue::Original => panic!("not bounded: {}", d.detail),
            },
            _ => panic!("not a dead letter"),
        })
        .collect()
}

/// Whether a dead letter's detail says it was refused for a given rule.
type ToldBy = fn(&str) -> bool;

/// Decoder rules JSON Schema cannot express: a record may pass
/// `answer.schema.json` and still be a `schema` dead letter for one of
/// these, each told by the detail of its dead letter. The schema's
/// description lists them too, with those the JSON parser of this test
/// refuses itself (a number beyond a 64-bit float, a lone surrogate escape,
/// nesting deeper than 128) and the record size limit.
const INEXPRESSIBLE: [(&str, ToldBy); 4] = [
    ("request_id over 256 bytes", |detail| {
        detail
            .strip_prefix("request_id: must be 1 to 256 bytes, got ")
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|n| n > 256)
    }),
    (
        "an integer written with a fraction, an exponent or as -0",
        |detail| {
            // serde_json quotes the number as it read it: `1.0`, `100.0`, `-0.0`.
            detail
                .split_once("invalid type: floating point `")
                .and_then(|(_, rest)| rest.split_once('`'))
                .and_then(|(number, _)| number.parse::<f64>().ok())
                .is_some_and(|n| n.fract() == 0.0)
        },
    ),
    ("a key repeated in an object", |detail| {
        detail.contains("duplicate field")
    }),
    ("cost_usd + prior.cost_usd overflows", |detail| {
        detail.starts_with("prior.cost_usd: cost_usd + prior.cost_usd overflows")
    }),
];

/// How a record's fate under the decoder compares with the schema's
/// verdict: `Ok(None)` when they agree, `Ok(Some(rule))` when a listed rule
/// explains the difference, an error when nothing does.
fn agreement(record: &[u8]) -> Result<Option<&'static str>, String> {
    let o = process(Some(record), &META, NOW, &settings());
    let refused = match &o.terminal {
        Terminal::DeadLetter(d)
            if matches!(
                d.kind,
                DeadLetterKind::Schema | DeadLetterKind::InvalidJson | DeadLetterKind::InvalidUtf8
            ) =>
        {
            Some(d.detail.clone())
        }
        _ => None,
    };
    let text = String::from_utf8_lossy(record);
    let Ok(value) = serde_json::from_slice::<Value>(record) else {
        // Not JSON to any reader: no schema can judge it.
        return match refused {
            Some(_) => Ok(None),
            None => Err(format!("not JSON, yet decoded: {text}")),
        };
    };
    match (valid("answer", &value), refused) {
        (true, None) | (false, Some(_)) => Ok(None),
        (true, Some(detail)) => INEXPRESSIBLE
            .iter()
            .find(|(_, told_by)| told_by(&detail))
            .map(|(rule, _)| Some(*rule))
            .ok_or_else(|| format!("valid but dead-lettered ({detail}): {text}")),
        (false, None) => Err(format!(
            "invalid ({:?}) but decoded: {text}",
            errors("answer", &value)
        )),
    }
}

#[test]
fn the_input_schema_and_the_decoder_agree_but_for_the_listed_rules() {
    let mut records = edge_lines();
    for (line, rule) in [
        (r#"{"request_id":"é","answer":"a"}"#, None),
        (r#"{"request_id":"","answer":"a"}"#, None),
        (
            &format!(r#"{{"request_id":"{}","answer":"a"}}"#, "é".repeat(200)),
            Some(INEXPRESSIBLE[0].0),
        ),
        (
            r#"{"request_id":"r","answer":"a","attempt":1.0}"#,
            Some(INEXPRESSIBLE[1].0),
        ),
        (
            r#"{"request_id":"r","answer":"a","prompt_tokens":1e2}"#,
            Some(INEXPRESSIBLE[1].0),
        ),
        (
            r#"{"request_id":"r","answer":"a","seed":-0}"#,
            Some(INEXPRESSIBLE[1].0),
        ),
        (
            r#"{"request_id":"r","answer":"a","answer":"b"}"#,
            Some(INEXPRESSIBLE[2].0),
        ),
        (
            r#"{"request_id":"r","answer":"a","sources":[{"urn":"u","urn":"v"}]}"#,
            Some(INEXPRESSIBLE[2].0),
        ),
        (
            r#"{"request_id":"r","answer":"a","attempt":1,"cost_usd":1e308,"prior":{"completion_tokens":0,"cost_usd":1e308,"prompt_tokens":0}}"#,
            Some(INEXPRESSIBLE[3].0),
        ),
        (
            r#"{"request_id":"r","answer":"a","sources":[["u","p"]]}"#,
            None,
        ),
        (
            r#"{"request_id":"r","answer":"a","temperature":1e400}"#,
            None,
        ),
        (r#"{"request_id":"r\ud800","answer":"a"}"#, None),
        (r#"{"request_id":"r","answer":"a","prior":[1,0.5,2]}"#, None),
        (r#"{"request_id":"r","answer":"a","prior":{}}"#, None),
        (
            r#"{"request_id":"r","answer":"a","attempt":1,"prior":{"completion_tokens":1,"cost_usd":0,"prompt_tokens":1,"extra":1}}"#,
            None,
        ),
        (
            r#"{"request_id":"r","answer":"a","sources":[{"payload":"p"}]}"#,
            None,
        ),
    ] {
        assert_eq!(agreement(line.as_bytes()), Ok(rule), "{line}");
        records.push(line.as_bytes().to_vec());
    }
    let s = settings();
    for r in &records {
        if let Err(e) = agreement(r) {
            panic!("{e}");
        }
        let failures = outputs_fail(r, &s);
        assert!(
            failures.is_empty(),
            "{}: {failures:?}",
            String::from_utf8_lossy(r)
        );
    }
}

#[test]
fn sample_records_and_their_outputs_pass_their_schemas() {
    // The generator of examples/answers.jsonl (every kind of record, the
    // broken ones included) and of the RAG-shaped benchmark load.
    let settings = CoreSettings {
        include_answer: true,
        ..CoreSettings::default()
    };
    let records = (0..600)
        .map(|i| groundgate::sample::mixed(i, 600))
        .chain((0..100).map(|i| groundgate::sample::rag(i, 50)));
    for r in records {
        assert_eq!(agreement(&r), Ok(None), "{}", String::from_utf8_lossy(&r));
        let failures = outputs_fail(&r, &settings);
        assert!(
            failures.is_empty(),
            "{}: {failures:?}",
            String::from_utf8_lossy(&r)
        );
    }
}

/// A value for a field of the input record: the right type, a wrong one,
/// null, or a boundary.
fn field() -> impl Strategy<Value = (&'static str, Option<Value>)> {
    let pick = |name: &'static str, options: Vec<Value>| {
        (Just(name), prop::option::of(prop::sample::select(options)))
    };
    let text = prop::sample::select(vec![
        "Revenue grew 12% in Q3[^1].",
        "It fell[^2] and rose[^9] and[^x].",
        "Acme was founded in 1999 by Ada Lovelace.",
        "",
        "  ",
    ]);
    prop_oneof![
        text.prop_map(|t| ("answer", Some(json!(t)))),
        pick(
            "request_id",
            vec![
                json!("r-1"),
                json!(""),
                json!("x".repeat(256)),
                json!("x".repeat(257)),
                json!("é".repeat(130)),
                json!(7),
                Value::Null
            ]
        ),
        pick(
            "attempt",
            vec![
                json!(0),
                json!(1),
                json!(2),
                json!(-1),
                json!(0.5),
                json!("1"),
                Value::Null
            ]
        ),
        pick(
            "mode",
            vec![
                json!("strict"),
                json!("lenient"),
                json!("loose"),
                json!(1),
                json!(["strict"]),
                Value::Null
            ]
        ),
        pick(
            "provider",
            vec![
                json!("openai"),
                json!("nocite"),
                json!(""),
                json!(3),
                Value::Null
            ]
        ),
        pick("question", vec![json!("why?"), json!(false), Value::Null]),
        pick("model", vec![json!("m"), json!({}), Value::Null]),
        pick("tenant", vec![json!("t"), json!([]), Value::Null]),
        pick("user", vec![json!("u"), json!(1.5), Value::Null]),
        pick("role", vec![json!("r"), Value::Null]),
        pick(
            "prompt_tokens",
            vec![
                json!(0),
                json!(12),
                json!(u64::MAX),
                json!(-1),
                json!(1.5),
                json!("3"),
                Value::Null
            ]
        ),
        pick(
            "completion_tokens",
            vec![json!(5), json!(-7), json!(true), Value::Null]
        ),
        pick(
            "cost_usd",
            vec![
                json!(0),
                json!(0.25),
                json!(1e308),
                json!(-0.5),
                json!("1"),
                Value::Null
            ]
        ),
        pick(
            "cache_hit",
            vec![
                json!(true),
                json!(false),
                json!("yes"),
                json!(0),
                Value::Null
            ]
        ),
        pick(
            "temperature",
            vec![
                json!(0.7),
                json!(-2),
                json!(1e308),
                json!("hot"),
                Value::Null
            ]
        ),
        pick(
            "seed",
            vec![
                json!(42),
                json!(u64::MAX),
                json!(-1),
                json!(2.5),
                json!("7"),
                Value::Null
            ]
        ),
        pick(
            "confidence",
            vec![
                json!(0.3),
                json!(1),
                json!(0),
                json!(1.5),
                json!(-0.1),
                json!("high"),
                Value::Null
            ]
        ),
        pick(
            "provenance",
            vec![json!("rag"), json!(""), json!(3), Value::Null]
        ),
        pick(
            "prior",
            vec![
                json!({"completion_tokens": 1, "cost_usd": 0.5, "prompt_tokens": 2}),
                json!({"completion_tokens": 1, "cost_usd": 1e308, "prompt_tokens": 2}),
                json!({"completion_tokens": 1, "cost_usd": -1, "prompt_tokens": 2}),
                json!({"completion_tokens": 1, "prompt_tokens": 2}),
                json!({"completion_tokens": 1, "cost_usd": 0, "prompt_tokens": 2, "extra": 1}),
                json!({"completion_tokens": "1", "cost_usd": 0, "prompt_tokens": 2}),
                json!([1, 0.5, 2]),
                json!("prior"),
                Value::Null,
            ]
        ),
        pick(
            "sources",
            vec![
                json!([{"urn": "doc://1", "payload": "Q3 revenue grew 12%."}, {"urn": "doc://2", "payload": {"k": [1, null]}}]),
                json!([{"urn": "doc://1"}, {"urn": "doc://2", "payload": null, "extra": true}]),
                json!([{"urn": 7, "payload": "p"}]),
                json!([{"payload": "p"}]),
                json!(["doc://1"]),
                json!([null]),
                json!({"urn": "doc://1"}),
                json!("doc://1"),
                json!([]),
                Value::Null,
            ]
        ),
        pick(
            "unknown",
            vec![json!({"any": ["thing", 1, null]}), Value::Null]
        ),
    ]
}

/// An input record: a request id and an answer most of the time, and any
/// of the fields above, right or wrong.
fn record() -> impl Strategy<Value = Value> {
    (
        prop::bool::weighted(0.9),
        prop::bool::weighted(0.9),
        prop::collection::vec(field(), 0..12),
    )
        .prop_map(|(with_id, with_answer, fields)| {
            let mut m = Map::new();
            if with_id {
                m.insert("request_id".into(), json!("req"));
            }
            if with_answer {
                m.insert(
                    "answer".into(),
                    json!("Revenue grew 12% in Q3[^1]. Costs fell[^2]."),
                );
            }
            for (name, value) in fields {
                match value {
                    Some(v) => m.insert(name.into(), v),
                    None => m.remove(name),
                };
            }
            Value::Object(m)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn generated_records_agree_with_the_input_schema_and_their_outputs_with_theirs(rec in record()) {
        let bytes = serde_json::to_vec(&rec).unwrap();
        let agreed = agreement(&bytes);
        prop_assert!(agreed.is_ok(), "{}", agreed.unwrap_err());
        let failures = outputs_fail(&bytes, &settings());
        prop_assert!(failures.is_empty(), "{rec}: {failures:?}");
    }
}
