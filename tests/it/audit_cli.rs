//! `groundgate audit`: `check` writes a sealed audit trail that `audit
//! verify` accepts, and each kind of tampering makes it exit 1 naming the
//! place; signatures are checked against `audit keygen`'s public key.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{BIN, exit_and_stderr, mkfifo, problem_kinds};

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run groundgate")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `check` over the shipped sample with `config` and returns audit.jsonl.
fn checked_trail(dir: &Path, config: &str) -> PathBuf {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/answers.jsonl");
    checked_input(dir, Path::new(sample), config)
}

/// Runs `check` over `input` with `config` and returns audit.jsonl.
fn checked_input(dir: &Path, input: &Path, config: &str) -> PathBuf {
    let cfg = dir.join("gg.toml");
    std::fs::write(&cfg, config).unwrap();
    let out = dir.join("out");
    let o = run(&[
        "check",
        input.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--config",
        cfg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    out.join("audit.jsonl")
}

fn verify(file: &Path, extra: &[&str]) -> (i32, Value) {
    verify_files(&[file], extra)
}

/// `audit verify` of `files` read as one trail, in that order.
fn verify_files(files: &[&Path], extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["audit", "verify", "--json"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend_from_slice(extra);
    let o = run(&args);
    let report: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("--json output: {e}: {}", text(&o)));
    crate::schemas::assert_valid("verify-report", &report);
    (o.status.code().unwrap_or(-1), report)
}

fn lines(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn write_lines(file: &Path, lines: &[String]) {
    std::fs::write(file, lines.join("\n") + "\n").unwrap();
}

#[test]
fn check_output_verifies_and_every_tampering_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let trail = checked_trail(dir.path(), "[audit]\nseal_every = 50\n");
    let all = lines(&trail);
    let seals = all
        .iter()
        .filter(|l| l.contains("groundgate.seal/v1"))
        .count();
    assert_eq!(seals, 6, "300 rows sealed every 50");

    let (code, report) = verify(&trail, &[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["chains"][0]["sealed_rows"], 300);
    assert_eq!(report["chains"][0]["gaps"], serde_json::json!([]));

    // The human report names the outcome too, and claims no authenticity
    // it did not check.
    let o = run(&["audit", "verify", trail.to_str().unwrap()]);
    assert!(text(&o).contains("verified"), "{}", text(&o));
    assert!(
        text(&o).contains("authenticity not checked")
            && !text(&o).contains("or authenticity problem"),
        "{}",
        text(&o)
    );

    let row_ix = |offset: i64| {
        all.iter()
            .position(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["input"]["offset"] == offset
            })
            .unwrap()
    };
    let tampered = dir.path().join("tampered.jsonl");

    // Flip one byte of a row's answer hash.
    let mut t = all.clone();
    let i = row_ix(120);
    t[i] = t[i].replacen("\"answer_hash\":\"", "\"answer_hash\":\"0", 1);
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &[]);
    assert_eq!(code, 1);
    assert_eq!(problem_kinds(&r), ["row_altered"]);
    assert_eq!(r["problems"][0]["offsets"], serde_json::json!([120, 120]));

    // Delete a row.
    let mut t = all.clone();
    t.remove(row_ix(7));
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &[]);
    assert_eq!(code, 1);
    assert_eq!(problem_kinds(&r), ["row_missing", "gap"]);
    assert_eq!(r["problems"][1]["offsets"], serde_json::json!([7, 7]));

    // Swap two rows.
    let mut t = all.clone();
    t.swap(row_ix(30), row_ix(31));
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &[]);
    assert_eq!(code, 1);
    assert_eq!(problem_kinds(&r), ["row_out_of_order"]);

    // Insert a forged row for an offset that was already audited.
    let mut t = all.clone();
    let forged = t[row_ix(40)].replacen("\"answer_hash\":\"", "\"answer_hash\":\"f", 1);
    t.insert(row_ix(41), forged);
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &[]);
    assert_eq!(code, 1);
    assert_eq!(problem_kinds(&r), ["conflict"]);

    // Drop a seal.
    let mut t = all.clone();
    let s = t
        .iter()
        .position(|l| l.contains("groundgate.seal/v1"))
        .unwrap();
    t.remove(s);
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &[]);
    assert_eq!(code, 1);
    let kinds = problem_kinds(&r);
    assert!(kinds.contains(&"seal_missing".to_string()), "{kinds:?}");
}

#[test]
fn signed_trails_verify_only_with_their_key() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("gg");
    let o = run(&["audit", "keygen", "--out", prefix.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let other = dir.path().join("other");
    assert!(
        run(&["audit", "keygen", "--out", other.to_str().unwrap()])
            .status
            .success()
    );
    // Refuses to overwrite a key.
    let again = run(&["audit", "keygen", "--out", prefix.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));

    let config = format!(
        "[audit]\nseal_every = 100\nsigning_key_file = {:?}\n",
        prefix.with_extension("key")
    );
    let trail = checked_trail(dir.path(), &config);
    let good = prefix.with_extension("pub");
    let bad = other.with_extension("pub");
    let (code, r) = verify(&trail, &["--public-key", good.to_str().unwrap()]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["signatures_checked"], true);
    let (code, r) = verify(&trail, &["--public-key", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        problem_kinds(&r).iter().all(|k| k == "seal_signature"),
        "{r}"
    );

    // An unsigned trail fails when a key is required.
    let unsigned_dir = dir.path().join("unsigned");
    std::fs::create_dir(&unsigned_dir).unwrap();
    let unsigned = checked_trail(&unsigned_dir, "");
    let (code, _) = verify(&unsigned, &["--public-key", good.to_str().unwrap()]);
    assert_eq!(code, 1);
}

/// `check` run twice over one input writes two chains from the same start;
/// read together they are one chain holding every seal and row twice,
/// which `check` never writes: duplicates, not a worker's reseals.
#[test]
fn the_same_input_checked_twice_verifies_as_two_runs_but_not_as_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[audit]\nseal_every = 50\n";
    let first = checked_trail(dir.path(), config);
    let again_dir = dir.path().join("again");
    std::fs::create_dir(&again_dir).unwrap();
    let second = checked_trail(&again_dir, config);

    // Each file is one run's whole trail: two runs, each complete, even
    // though their chains have the same name (the input's).
    let (code, r) = verify_files(&[&first, &second], &[]);
    assert_eq!(r["problems"], serde_json::json!([]), "{r}");
    assert_eq!(code, 0, "{r}");
    let chains = r["chains"].as_array().unwrap();
    assert_eq!(chains.len(), 2, "{r}");
    assert_ne!(chains[0]["run"], chains[1]["run"], "{r}");
    assert!(
        chains
            .iter()
            .all(|c| c["rows"] == 300 && c["sealed_rows"] == 300)
    );
    assert_eq!(r["runs"].as_array().unwrap().len(), 2, "{r}");
    let o = run(&[
        "audit",
        "verify",
        first.to_str().unwrap(),
        second.to_str().unwrap(),
    ]);
    assert!(
        text(&o).contains("partition ┆ run"),
        "the table names each chain's run:\n{}",
        text(&o)
    );

    // One file holding both runs is one trail in which the input was
    // sealed twice: seals 0..=5 once more, then every offset's second row;
    // and the chain holds the seals of two runs.
    let both = dir.path().join("both.jsonl");
    let mut text_both = std::fs::read_to_string(&first).unwrap();
    text_both.push_str(&std::fs::read_to_string(&second).unwrap());
    std::fs::write(&both, text_both).unwrap();
    for files in [vec![both.as_path()], vec![both.as_path(), first.as_path()]] {
        let (code, r) = verify_files(&files, &[]);
        assert_eq!(code, 1, "{r}");
        assert_eq!(r["chains"].as_array().unwrap().len(), 1, "{r}");
        let kinds = problem_kinds(&r);
        assert!(kinds.contains(&"duplicate".to_string()), "{r}");
        assert!(kinds.contains(&"run_mixed".to_string()), "{r}");
    }
    let (_, r) = verify_files(&[&both], &[]);
    let mut want = vec!["duplicate"; 7];
    want.push("run_mixed");
    assert_eq!(problem_kinds(&r), want, "{r}");
    assert_eq!(r["problems"][0]["seal_seq"], 0);
    assert_eq!(r["problems"][6]["offsets"], serde_json::json!([1, 300]));
    let c = &r["chains"][0];
    assert_eq!(
        (c["reseals"].as_u64(), c["redeliveries"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(c["sealed_rows"], 600);
}

/// Two runs' trails are verified a run at a time, which reads each file
/// twice: a trail given on standard input is read empty the second time,
/// and verify says so (exit 2) instead of passing a run it never judged.
/// Standard input holding one run with files of that same run is read
/// once and verified.
#[test]
fn a_trail_of_several_runs_on_standard_input_is_refused_not_half_verified() {
    let dir = tempfile::tempdir().unwrap();
    let first = checked_trail(dir.path(), "");
    let again_dir = dir.path().join("again");
    std::fs::create_dir(&again_dir).unwrap();
    let second = checked_trail(&again_dir, "");

    let piped = |stdin_file: &Path, files: &[&Path]| {
        let mut args = vec!["audit", "verify", "--json"];
        args.extend(files.iter().map(|f| f.to_str().unwrap()));
        Command::new(BIN)
            .args(&args)
            .stdin(std::fs::File::open(stdin_file).unwrap())
            .output()
            .expect("run groundgate")
    };
    let o = piped(&second, &[&first, Path::new("-")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("- is a pipe or standard input, which reads empty the second time"),
        "{}",
        text(&o)
    );

    // One run: split in two, one half piped in; read once, verified whole.
    let lines: Vec<String> = std::fs::read_to_string(&first)
        .unwrap()
        .lines()
        .map(|l| format!("{l}\n"))
        .collect();
    let head = dir.path().join("head.jsonl");
    let tail = dir.path().join("tail.jsonl");
    std::fs::write(&head, lines[..150].concat()).unwrap();
    std::fs::write(&tail, lines[150..].concat()).unwrap();
    let o = piped(&tail, &[&head, Path::new("-")]);
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(r["chains"][0]["sealed_rows"], 300, "{r}");
}

/// `check` names its run (on stdout and in summary.json), and `audit
/// verify --run` holds a trail to the runs kept that way: last week's
/// complete trail in place of this week's shows.
#[test]
fn a_trail_is_held_to_the_run_kept_from_check() {
    let dir = tempfile::tempdir().unwrap();
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/answers.jsonl");
    let check = |name: &str| {
        let out = dir.path().join(name);
        let o = run(&["check", sample, "--out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o));
        let summary: Value =
            serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
        let id = summary["audit_run"].as_str().unwrap().to_string();
        assert_eq!(id.len(), 32, "{summary}");
        assert!(
            text(&o).contains(&format!("audit trail: run {id}")),
            "{}",
            text(&o)
        );
        (out.join("audit.jsonl"), id)
    };
    let (this_week, this_id) = check("this");
    let (last_week, last_id) = check("last");
    let (code, r) = verify(&this_week, &["--run", &this_id]);
    assert_eq!((code, problem_kinds(&r)), (0, Vec::<String>::new()), "{r}");
    // Without --run, last week's trail verifies in its place.
    assert_eq!(verify(&last_week, &[]).0, 0);
    let (code, r) = verify(&last_week, &["--run", &this_id]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["run_unexpected", "run_absent"], "{r}");
    assert_eq!(r["problems"][0]["run"], last_id.as_str());
    assert_eq!(r["problems"][1]["run"], this_id.as_str());
    // Both weeks read together, each kept.
    let (code, r) = verify_files(
        &[&this_week, &last_week],
        &["--run", &this_id, "--run", &last_id],
    );
    assert_eq!(code, 0, "{r}");
}

/// The lines of `check`'s trail of the sample sealed every 50 rows, and a
/// path in `dir` to write a tampered copy to.
fn sample_trail_lines(dir: &Path) -> (Vec<String>, PathBuf) {
    let trail = checked_trail(dir, "[audit]\nseal_every = 50\n");
    (lines(&trail), dir.join("tampered.jsonl"))
}

#[test]
fn a_check_trail_holds_each_row_and_seal_once() {
    let dir = tempfile::tempdir().unwrap();
    let (all, tampered) = sample_trail_lines(dir.path());
    let row = all
        .iter()
        .position(|l| l.contains("\"offset\":100,"))
        .unwrap();

    // A row copied byte for byte, right after itself.
    let mut t = all.clone();
    t.insert(row + 1, all[row].clone());
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &[]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["duplicate"]);
    assert_eq!(r["problems"][0]["offsets"], serde_json::json!([100, 100]));
    assert_eq!(r["chains"][0]["redeliveries"], 0);

    // A seal copied.
    let seal = all.iter().position(|l| is_seal(l)).unwrap();
    let mut t = all.clone();
    t.insert(seal + 1, all[seal].clone());
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &[]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["duplicate"]);
    assert_eq!(r["problems"][0]["seal_seq"], 0);
    let o = run(&["audit", "verify", tampered.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("duplicate"), "{}", text(&o));
}

#[test]
fn a_signed_check_trail_cut_off_after_a_seal_does_not_verify() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("k");
    let o = run(&["audit", "keygen", "--out", prefix.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/answers.jsonl");
    let input = dir.path().join("in.jsonl");
    let first_200: Vec<String> = lines(Path::new(sample)).into_iter().take(200).collect();
    write_lines(&input, &first_200);
    let config = format!(
        "[audit]\nseal_every = 50\nsigning_key_file = {:?}\n",
        prefix.with_extension("key")
    );
    let trail = checked_input(dir.path(), &input, &config);
    let key = prefix.with_extension("pub");
    let key = key.to_str().unwrap();
    let all = lines(&trail);
    let seals: Vec<Value> = all
        .iter()
        .filter(|l| is_seal(l))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(seals.len(), 4, "200 rows sealed every 50");
    assert!(is_seal(all.last().unwrap()));
    let finals: Vec<bool> = seals.iter().map(|s| s["final"] == true).collect();
    assert_eq!(finals, [false, false, false, true]);
    let (code, r) = verify(&trail, &["--public-key", key]);
    assert_eq!(code, 0, "{r}");

    // Everything up to the third seal: signed and consistent, but cut off.
    let third = all
        .iter()
        .enumerate()
        .filter(|(_, l)| is_seal(l))
        .nth(2)
        .unwrap()
        .0;
    let trunc = dir.path().join("trunc.jsonl");
    write_lines(&trunc, &all[..=third]);
    let (code, r) = verify(&trunc, &["--public-key", key]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["final_seal_missing"]);
    assert_eq!(r["problems"][0]["seal_seq"], 2);
    assert_eq!(r["problems"][0]["offsets"], serde_json::json!([101, 150]));
    let o = run(&[
        "audit",
        "verify",
        trunc.to_str().unwrap(),
        "--public-key",
        key,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("final_seal_missing"), "{}", text(&o));
}

#[test]
fn a_row_with_a_repeated_key_is_not_a_redelivery() {
    let dir = tempfile::tempdir().unwrap();
    let (trail, key) = signed_trail(dir.path());
    let key = key.to_str().unwrap();
    let all = lines(&trail);
    let row = all
        .iter()
        .find(|l| l.contains("\"outcome\":\"accepted\"") && l.contains("\"validation_ok\":true"))
        .unwrap();
    // serde_json keeps the last of a repeated key: this parses to the
    // sealed row with another ts, yet a first-value reader sees a rejection.
    let v: Value = serde_json::from_str(row).unwrap();
    let (ts, offset) = (v["ts"].as_i64().unwrap(), &v["input"]["offset"]);
    let forged = row
        .replacen("{", "{\"outcome\":\"rejected\",\"validation_ok\":false,", 1)
        .replace(&format!("\"ts\":{ts}"), &format!("\"ts\":{}", ts + 1));
    let mut t = all.clone();
    t.push(forged);
    let tampered = dir.path().join("tampered.jsonl");
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &["--public-key", key]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["not_canonical"]);
    assert_eq!(
        r["problems"][0]["offsets"],
        serde_json::json!([offset, offset])
    );
    assert_eq!(r["chains"][0]["redeliveries"], 0);
}

#[test]
fn gaps_up_to_the_largest_offset_are_counted_without_wrapping() {
    let dir = tempfile::tempdir().unwrap();
    let trail = checked_trail(dir.path(), "[audit]\nseal_every = 50\n");
    let max = i64::MAX.to_string();
    let (code, r) = verify(&trail, &["--from", "0", "--to", &max]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["gap", "gap"]);
    assert_eq!(
        r["chains"][0]["gaps"],
        serde_json::json!([[0, 0], [301, i64::MAX]])
    );
    assert_eq!(
        r["problems"][1]["detail"],
        "9223372036854775507 input offset(s) without an audit row"
    );

    // Rows at both ends of the offsets, no seal: a live tail, and a gap
    // of all but two offsets.
    let row = lines(&trail).into_iter().find(|l| !is_seal(l)).unwrap();
    let at = |offset: i64| {
        let mut v: Value = serde_json::from_str(&row).unwrap();
        v["input"]["offset"] = Value::from(offset);
        serde_json::to_string(&v).unwrap()
    };
    let ends = dir.path().join("ends.jsonl");
    write_lines(&ends, &[at(i64::MIN), at(i64::MAX)]);
    let o = run(&[
        "audit",
        "verify",
        ends.to_str().unwrap(),
        "--allow-unsealed-tail",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("18446744073709551614 input offset(s) without an audit row"),
        "{}",
        text(&o)
    );
}

#[test]
fn usage_errors_exit_2() {
    let o = run(&["audit", "verify"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = run(&["audit", "verify", "/nonexistent/audit.jsonl"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// A signed trail and its public key, sealed every 50 rows.
fn signed_trail(dir: &Path) -> (PathBuf, PathBuf) {
    let prefix = dir.join("k1");
    let o = run(&["audit", "keygen", "--out", prefix.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let config = format!(
        "[audit]\nseal_every = 50\nsigning_key_file = {:?}\n",
        prefix.with_extension("key")
    );
    (checked_trail(dir, &config), prefix.with_extension("pub"))
}

fn is_seal(line: &str) -> bool {
    line.contains("groundgate.seal/v1")
}

/// `line` with its first `"outcome":"…"` replaced by `outcome`.
fn with_outcome(line: &str, outcome: &str) -> String {
    let mut v: Value = serde_json::from_str(line).unwrap();
    assert_ne!(v["outcome"], outcome, "{line}");
    v["outcome"] = Value::from(outcome);
    serde_json::to_string(&v).unwrap()
}

#[test]
fn a_trail_stripped_of_seals_or_of_its_last_seal_does_not_verify() {
    let dir = tempfile::tempdir().unwrap();
    let (trail, key) = signed_trail(dir.path());
    let all = lines(&trail);
    assert!(
        is_seal(all.last().unwrap()),
        "check ends its trail with a seal"
    );
    let key = key.to_str().unwrap();
    let tampered = dir.path().join("tampered.jsonl");

    // Every seal deleted and a row's outcome edited.
    let mut t: Vec<String> = all.iter().filter(|l| !is_seal(l)).cloned().collect();
    t[3] = with_outcome(&t[3], "rejected");
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &["--public-key", key]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["unsealed_tail"]);
    assert_eq!(r["problems"][0]["offsets"], serde_json::json!([1, 300]));
    // Asking for a live tail does not excuse it when signatures are required.
    let (code, r) = verify(&tampered, &["--public-key", key, "--allow-unsealed-tail"]);
    assert_eq!(code, 1, "{r}");
    // Without a key the reader may accept a live tail, and it is counted.
    let (code, r) = verify(&tampered, &["--allow-unsealed-tail"]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["chains"][0]["unsealed_tail"], 300);

    // Only the last seal deleted: its 50 rows could be edited unnoticed.
    let mut t = all.clone();
    t.pop();
    let last = t.len() - 1;
    t[last] = with_outcome(&t[last], "rejected");
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &["--public-key", key]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["final_seal_missing", "unsealed_tail"]);
    assert_eq!(r["problems"][1]["offsets"], serde_json::json!([251, 300]));
    let o = run(&["audit", "verify", tampered.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("--allow-unsealed-tail"), "{}", text(&o));
}

#[test]
fn a_copy_of_a_sealed_row_with_another_outcome_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let (trail, key) = signed_trail(dir.path());
    let key = key.to_str().unwrap();
    let all = lines(&trail);
    let tampered = dir.path().join("tampered.jsonl");
    let row = all.iter().find(|l| l.contains("\"offset\":100,")).unwrap();

    // The same row processed again (only `ts` differs), which a worker
    // may redeliver but `check` never writes: a duplicate.
    let ts = serde_json::from_str::<Value>(row).unwrap()["ts"]
        .as_i64()
        .unwrap();
    let again = row.replace(&format!("\"ts\":{ts}"), &format!("\"ts\":{}", ts + 1));
    let mut t = all.clone();
    t.push(again);
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &["--public-key", key]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["duplicate"]);
    assert_eq!(r["chains"][0]["redeliveries"], 0);

    // Same answer_hash, flipped outcome: a conflict.
    let flipped = with_outcome(
        row,
        if row.contains("\"outcome\":\"accepted\"") {
            "rejected"
        } else {
            "accepted"
        },
    );
    let mut t = all.clone();
    t.push(flipped);
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &["--public-key", key]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["conflict"]);
    assert_eq!(r["problems"][0]["offsets"], serde_json::json!([100, 100]));
}

/// `check`'s trail of the shipped sample with, after its final seal, a
/// row for input `offset` (a copy of the first row with that offset).
fn trail_with_a_row_at(dir: &Path, offset: i64) -> PathBuf {
    let trail = checked_trail(dir, "[audit]\nseal_every = 50\n");
    let mut t = lines(&trail);
    let last: Value = serde_json::from_str(t.last().unwrap()).unwrap();
    assert_eq!(
        last["final"], true,
        "check ends its trail with a final seal"
    );
    let row = t.iter().find(|l| !is_seal(l)).unwrap();
    let mut moved: Value = serde_json::from_str(row).unwrap();
    moved["input"]["offset"] = Value::from(offset);
    t.push(serde_json::to_string(&moved).unwrap());
    let tampered = dir.join("tampered.jsonl");
    write_lines(&tampered, &t);
    tampered
}

#[test]
fn a_row_for_an_offset_past_the_input_is_not_an_acceptable_tail() {
    let dir = tempfile::tempdir().unwrap();
    let tampered = trail_with_a_row_at(dir.path(), 999_999);
    let (code, r) = verify(&tampered, &[]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["unsealed_tail", "gap"]);
    assert_eq!(
        r["problems"][0]["offsets"],
        serde_json::json!([999_999, 999_999])
    );
}

#[test]
fn a_row_after_a_check_trails_final_seal_is_never_a_live_tail() {
    let dir = tempfile::tempdir().unwrap();
    // The next input line's row: what a live tail looks like on a worker's
    // trail.
    let tampered = trail_with_a_row_at(dir.path(), 301);
    for extra in [&[][..], &["--allow-unsealed-tail"][..]] {
        let (code, r) = verify(&tampered, extra);
        assert_eq!(code, 1, "{extra:?}: {r}");
        assert_eq!(problem_kinds(&r), ["unsealed_tail"], "{extra:?}: {r}");
        assert_eq!(r["problems"][0]["offsets"], serde_json::json!([301, 301]));
        let detail = r["problems"][0]["detail"].as_str().unwrap();
        assert!(detail.contains("final seal"), "{detail}");
    }
}

#[test]
fn nothing_to_verify_is_not_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let (code, r) = verify(&empty, &[]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["nothing_to_verify"]);
    let o = run(&["audit", "verify", empty.to_str().unwrap()]);
    assert!(!text(&o).contains("verified:"), "{}", text(&o));

    let trail = checked_trail(dir.path(), "[audit]\nseal_every = 50\n");
    let o = run(&[
        "audit",
        "verify",
        trail.to_str().unwrap(),
        "--from",
        "10",
        "--to",
        "5",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("nothing would be verified"),
        "{}",
        text(&o)
    );
}

#[test]
fn an_archived_gzip_trail_verifies_and_an_endless_line_is_a_problem_not_a_crash() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let trail = checked_trail(dir.path(), "");
    let plain = std::fs::read(&trail).unwrap();
    let gzip = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(bytes).unwrap();
        std::fs::write(&path, z.finish().unwrap()).unwrap();
        path
    };
    let gz = gzip("audit.jsonl.gz", &plain);
    let (code, want) = verify(&trail, &[]);
    assert_eq!(code, 0, "{want}");
    let (code, got) = verify(&gz, &[]);
    assert_eq!(code, 0, "{got}");
    assert_eq!(got["records"], want["records"]);
    assert_eq!(got["chains"], want["chains"]);

    // A line past the reader's bound between two valid halves of the
    // trail: reported where it is, the rest still read.
    let mut bad = plain.clone();
    let cut = plain.len() / 2
        + plain[plain.len() / 2..]
            .iter()
            .position(|&b| b == b'\n')
            .unwrap()
        + 1;
    let mut long = vec![b'x'; (64 << 20) + 10];
    long.push(b'\n');
    bad.splice(cut..cut, long);
    let zbad = gzip("bad.jsonl.gz", &bad);
    let (code, report) = verify(&zbad, &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(problem_kinds(&report), ["unreadable"], "{report}");
    assert!(
        report["problems"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("a line of 67108874 bytes"),
        "{report}"
    );
}

/// The index in `all` of the row for input `offset`.
fn row_at(all: &[String], offset: i64) -> usize {
    let key = format!("\"input\":{{\"offset\":{offset},");
    all.iter().position(|l| l.contains(&key)).unwrap()
}

/// The indices in `all` of its seals.
fn seal_lines(all: &[String]) -> Vec<usize> {
    (0..all.len()).filter(|&i| is_seal(&all[i])).collect()
}

/// The lines of [`signed_trail`], where its seals stand, and its public key.
fn signed_trail_lines(dir: &Path) -> (Vec<String>, Vec<usize>, String) {
    let (trail, key) = signed_trail(dir);
    let all = lines(&trail);
    let seals = seal_lines(&all);
    (all, seals, key.to_str().unwrap().to_string())
}

#[test]
fn rows_of_a_check_chain_moved_across_its_seals_are_out_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let (all, seals, key) = signed_trail_lines(dir.path());
    let key = key.as_str();
    let tampered = dir.path().join("tampered.jsonl");
    // Every problem is `row_out_of_order`, at these offset ranges.
    let out_of_order_at = |t: &[String], ranges: &[[i64; 2]]| {
        write_lines(&tampered, t);
        let (code, r) = verify(&tampered, &["--public-key", key]);
        assert_eq!(code, 1, "{r}");
        assert_eq!(
            problem_kinds(&r),
            vec!["row_out_of_order"; ranges.len()],
            "{r}"
        );
        let got: Vec<_> = (0..ranges.len())
            .map(|i| r["problems"][i]["offsets"].clone())
            .collect();
        assert_eq!(
            got,
            ranges
                .iter()
                .map(|x| serde_json::json!(x))
                .collect::<Vec<_>>(),
            "{r}"
        );
    };

    // The last row of seal 0 and the first of seal 1 swapped over seal 0:
    // each seal's own rows are still in its order, but 50 stands after its
    // seal and 51 before a row sealed ahead of it.
    let mut t = all.clone();
    t.swap(row_at(&all, 50), row_at(&all, 51));
    out_of_order_at(&t, &[[50, 50], [51, 51]]);

    // Seal 1's rows moved in front of seal 0's: the first before a row of
    // seal 0, the others before seal 0 itself.
    let mut t: Vec<String> = all[seals[0] + 1..seals[1]].to_vec();
    t.extend_from_slice(&all[..seals[0] + 1]);
    t.extend_from_slice(&all[seals[1]..]);
    out_of_order_at(&t, &[[51, 51], [52, 100]]);

    // A row moved to the top of the file.
    let mut t = all.clone();
    let row = t.remove(row_at(&all, 120));
    t.insert(0, row);
    out_of_order_at(&t, &[[120, 120]]);

    // Every seal moved to the top, each row still in its order: the rows
    // stand after the seals that list them.
    let (seal_lines, rows): (Vec<String>, Vec<String>) =
        all.iter().cloned().partition(|l| is_seal(l));
    let t: Vec<String> = seal_lines.into_iter().chain(rows).collect();
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &["--public-key", key]);
    assert_eq!(code, 1, "{r}");
    let kinds = problem_kinds(&r);
    assert!(
        !kinds.is_empty() && kinds.iter().all(|k| k == "row_out_of_order"),
        "{r}"
    );
    assert!(
        r["problems"][0]["detail"]
            .as_str()
            .unwrap()
            .ends_with("row(s) stand after seal 0, which lists them"),
        "{r}"
    );
}

/// An export of a framed audit topic whose schema id holds byte 0x0A
/// (266 = 00 00 01 0A) keeps each record on its line: the line's end is
/// looked for past the 5-byte header, as `check` reads its inputs.
#[test]
fn a_framed_export_whose_schema_id_holds_a_newline_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let (trail, key) = signed_trail(dir.path());
    let mut framed = Vec::new();
    for line in lines(&trail) {
        framed.extend_from_slice(&[0, 0, 0, 1, 0x0A]);
        framed.extend_from_slice(line.as_bytes());
        framed.push(b'\n');
    }
    let export = dir.path().join("audit-0.jsonl");
    std::fs::write(&export, framed).unwrap();
    let (code, r) = verify(&export, &["--public-key", key.to_str().unwrap()]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["records"], serde_json::json!(lines(&trail).len()), "{r}");
}

#[test]
fn a_check_trail_split_into_files_is_read_in_the_order_given() {
    let dir = tempfile::tempdir().unwrap();
    let (all, seals, key) = signed_trail_lines(dir.path());
    let key = key.as_str();
    let (head, tail) = (dir.path().join("1.jsonl"), dir.path().join("2.jsonl"));
    let both = |first: &Path, second: &Path| verify_files(&[first, second], &["--public-key", key]);
    write_lines(&head, &all[..=seals[1]]);
    write_lines(&tail, &all[seals[1] + 1..]);
    let (code, r) = both(&head, &tail);
    assert_eq!(code, 0, "{r}");
    let (code, r) = both(&tail, &head);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["row_out_of_order"; 2], "{r}");
    assert_eq!(r["problems"][0]["offsets"], serde_json::json!([101, 101]));
    // The rest of seal 2's rows stand before seal 1.
    assert_eq!(r["problems"][1]["offsets"], serde_json::json!([102, 150]));

    // One row taken out into a file of its own, read after the rest.
    let row = row_at(&all, 60);
    let mut rest = all.clone();
    let moved = rest.remove(row);
    write_lines(&head, &rest);
    write_lines(&tail, &[moved]);
    let (code, r) = both(&head, &tail);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["row_out_of_order"; 2], "{r}");
    // 61 stands before 60, which stands after its seal.
    assert_eq!(r["problems"][0]["offsets"], serde_json::json!([61, 61]));
    assert_eq!(r["problems"][1]["offsets"], serde_json::json!([60, 60]));
}

#[test]
fn in_a_trail_holding_checks_seals_no_chain_is_a_live_tail() {
    let dir = tempfile::tempdir().unwrap();
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/answers.jsonl");
    let sample = lines(Path::new(sample));
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    write_lines(&a, &sample[..20]);
    write_lines(&b, &sample[20..60]);
    let out = dir.path().join("out");
    let o = run(&[
        "check",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let trail = out.join("audit.jsonl");
    let all = lines(&trail);
    let (code, r) = verify(&trail, &[]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["chains"].as_array().unwrap().len(), 2, "{r}");
    let tampered = dir.path().join("tampered.jsonl");

    // b.jsonl's seals deleted and one of its rows edited: a.jsonl's seals
    // still show that `check` wrote the file.
    let in_b = |l: &String| l.contains("\"topic\":\"b.jsonl\"");
    let mut t: Vec<String> = all
        .iter()
        .filter(|l| !(is_seal(l) && in_b(l)))
        .cloned()
        .collect();
    let i = t.iter().position(in_b).unwrap();
    t[i] = with_outcome(&t[i], "rejected");
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &["--allow-unsealed-tail"]);
    assert_eq!(code, 1, "{r}");
    // Without its seals b.jsonl's chain is no longer the run's either.
    assert_eq!(
        problem_kinds(&r),
        ["unsealed_tail", "run_incomplete"],
        "{r}"
    );
    assert_eq!(r["problems"][0]["topic"], "b.jsonl");
    assert_eq!(r["problems"][0]["offsets"], serde_json::json!([1, 40]));
    let detail = r["problems"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("`check` seals every chain"), "{detail}");

    // A row of an input `check` never read, added at the end.
    let mut forged: Value = serde_json::from_str(&all[0]).unwrap();
    forged["input"]["topic"] = Value::from("c.jsonl");
    let mut t = all.clone();
    t.push(serde_json::to_string(&forged).unwrap());
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &["--allow-unsealed-tail"]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["unsealed_tail"], "{r}");
    assert_eq!(r["problems"][0]["topic"], "c.jsonl");
}

/// Runs `check` over `inputs` into `out` with `config`; returns the
/// trail's lines.
fn checked_into(out: &Path, inputs: &[&Path], config: &Path) -> Vec<String> {
    let mut args = vec!["check"];
    args.extend(inputs.iter().map(|i| i.to_str().unwrap()));
    args.extend(["--out", out.to_str().unwrap(), "--config"]);
    args.push(config.to_str().unwrap());
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    lines(&out.join("audit.jsonl"))
}

/// The run ids a `--json` report names.
fn run_ids(r: &Value) -> Vec<String> {
    r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["run"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_chain_swapped_between_two_runs_signed_with_one_key_does_not_verify() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("k");
    let o = run(&["audit", "keygen", "--out", prefix.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let key = prefix.with_extension("pub");
    let key = key.to_str().unwrap();
    let config = dir.path().join("gg.toml");
    let toml = format!(
        "[audit]\nseal_every = 50\nsigning_key_file = {:?}\n",
        prefix.with_extension("key")
    );
    std::fs::write(&config, toml).unwrap();
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/answers.jsonl");
    let sample = lines(Path::new(sample));
    let input = |name: &str, part: &[String]| {
        let p = dir.path().join(name);
        write_lines(&p, part);
        p
    };
    let (a, b) = (
        input("a.jsonl", &sample[..120]),
        input("b.jsonl", &sample[120..200]),
    );
    let (out1, out2) = (dir.path().join("run1"), dir.path().join("run2"));
    let first = checked_into(&out1, &[&a, &b], &config);
    let second = checked_into(&out2, &[&a, &b], &config);
    let (code, r1) = verify(&out1.join("audit.jsonl"), &["--public-key", key]);
    assert_eq!(code, 0, "{r1}");
    let (code, r2) = verify(&out2.join("audit.jsonl"), &["--public-key", key]);
    assert_eq!(code, 0, "{r2}");
    let (run1, run2) = (run_ids(&r1), run_ids(&r2));
    assert_eq!((run1.len(), run2.len()), (1, 1), "{r1} {r2}");
    assert_ne!(run1, run2, "each run draws its own id");
    assert_eq!(r1["runs"][0]["inputs"], 2);
    assert_eq!(r1["runs"][0]["chains"], 2);
    for seal in first.iter().filter(|l| is_seal(l)) {
        assert!(seal.contains(&format!("\"run\":\"{}\"", run1[0])), "{seal}");
    }

    // a.jsonl's chain of the second run, every line of it, in place of the
    // first run's: each chain is whole and signed.
    let in_a = |l: &String| l.contains("\"topic\":\"a.jsonl\"");
    let mut t: Vec<String> = second.iter().filter(|l| in_a(l)).cloned().collect();
    t.extend(first.iter().filter(|l| !in_a(l)).cloned());
    let swapped = dir.path().join("swapped.jsonl");
    write_lines(&swapped, &t);
    let (code, r) = verify(&swapped, &["--public-key", key]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(
        problem_kinds(&r),
        ["run_incomplete", "run_incomplete"],
        "{r}"
    );
    let mut named: Vec<String> = r["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["run"].as_str().unwrap().to_string())
        .collect();
    let mut both = vec![run1[0].clone(), run2[0].clone()];
    named.sort();
    both.sort();
    assert_eq!(named, both, "{r}");
    let o = run(&[
        "audit",
        "verify",
        swapped.to_str().unwrap(),
        "--public-key",
        key,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("run_incomplete"), "{}", text(&o));

    // A run of another input read beside the first: both runs whole.
    let c = input("c.jsonl", &sample[200..230]);
    let out3 = dir.path().join("run3");
    checked_into(&out3, &[&c], &config);
    let (code, r) = verify_files(
        &[&out1.join("audit.jsonl"), &out3.join("audit.jsonl")],
        &["--public-key", key],
    );
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["runs"].as_array().unwrap().len(), 2, "{r}");
    let o = run(&[
        "audit",
        "verify",
        out1.join("audit.jsonl").to_str().unwrap(),
        out3.join("audit.jsonl").to_str().unwrap(),
    ]);
    assert!(
        text(&o).contains(&format!("run {}: 2 of 2 input chain(s)", run1[0])),
        "{}",
        text(&o)
    );
}

/// An empty input has no row and no chain: a run counts the chains it
/// sealed, whichever inputs were empty.
#[test]
fn a_run_with_empty_inputs_states_the_chains_it_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/answers.jsonl");
    let sample = lines(Path::new(sample));
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    write_lines(&a, &sample[..7]);
    write_lines(&b, &sample[7..10]);
    let (e1, e2) = (dir.path().join("e1.jsonl"), dir.path().join("e2.jsonl"));
    std::fs::write(&e1, "").unwrap();
    std::fs::write(&e2, "").unwrap();
    let config = dir.path().join("gg.toml");
    std::fs::write(&config, "[audit]\nseal_every = 4\n").unwrap();
    let all = checked_into(&dir.path().join("out"), &[&e1, &a, &e2, &b], &config);
    let seals: Vec<Value> = all
        .iter()
        .filter(|l| is_seal(l))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let finals: Vec<&Value> = seals.iter().filter(|s| s["final"] == true).collect();
    assert_eq!(finals.len(), 2, "{seals:?}");
    assert!(finals.iter().all(|s| s["run_inputs"] == 2), "{finals:?}");
    let (code, r) = verify(&dir.path().join("out/audit.jsonl"), &[]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["runs"][0]["inputs"], 2, "{r}");
    assert_eq!(r["runs"][0]["chains"], 2, "{r}");
}

#[test]
fn a_byte_order_mark_is_skipped_only_at_the_start_of_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let (all, tampered) = sample_trail_lines(dir.path());
    let mut t = all.clone();
    t[0].insert(0, '\u{feff}');
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &[]);
    assert_eq!(code, 0, "{r}");
    let mut t = all.clone();
    let i = row_at(&all, 7);
    t[i].insert(0, '\u{feff}');
    write_lines(&tampered, &t);
    let (code, r) = verify(&tampered, &[]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(
        problem_kinds(&r),
        ["unreadable", "row_missing", "gap"],
        "{r}"
    );
}

/// A file that is no audit trail at all (here `check`'s input) is told so
/// in one line, and the text report lists a bounded number of problems
/// (`--json` keeps every one).
#[test]
fn a_file_that_is_no_trail_is_told_so() {
    let input = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/answers.jsonl");
    let o = run(&["audit", "verify", input]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("none of the 300 line(s) read is an audit row or a seal"),
        "{out}"
    );
    assert!(
        out.contains("… and 200 more: --json lists every problem"),
        "{out}"
    );
    assert!(out.contains("300 problem(s) found"), "{out}");
    let (_, r) = verify(Path::new(input), &[]);
    assert_eq!(r["problems"].as_array().unwrap().len(), 300);
}

/// `--json` into a pipe (a scheduled job's log) is one line: a log
/// collector takes it as one record.
#[test]
fn the_json_report_into_a_pipe_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let trail = checked_trail(dir.path(), "");
    let o = run(&["audit", "verify", trail.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out.lines().count(), 1, "{out}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["problems"], serde_json::json!([]));
}

/// `audit keygen` into `dir/name`: the public key file and the fingerprint
/// it printed.
fn keygen(dir: &Path, name: &str) -> (PathBuf, String) {
    let prefix = dir.join(name);
    let o = run(&["audit", "keygen", "--out", prefix.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let fingerprint = out
        .lines()
        .find_map(|l| l.strip_prefix("public key fingerprint: "))
        .unwrap_or_else(|| panic!("no fingerprint in {out}"))
        .to_string();
    (prefix.with_extension("pub"), fingerprint)
}

/// `check` over the first 120 lines of the sample, sealed every 50 rows
/// (three seals) and signed with the private key beside `public`.
fn checked_with(dir: &Path, public: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/answers.jsonl");
    let input = dir.join("answers.jsonl");
    let head: Vec<String> = lines(Path::new(sample)).into_iter().take(120).collect();
    write_lines(&input, &head);
    let config = format!(
        "[audit]\nseal_every = 50\nsigning_key_file = {:?}\n",
        public.with_extension("key")
    );
    checked_input(dir, &input, &config)
}

/// (fingerprint, file, block, seals, first seq, last seq) of a key.
type KeyTally = (String, String, u64, u64, Value, Value);

/// The tally of each key of a report.
fn key_tallies(r: &Value) -> Vec<KeyTally> {
    r["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["fingerprint"].as_str().unwrap().to_string(),
                k["file"].as_str().unwrap().to_string(),
                k["block"].as_u64().unwrap(),
                k["seals"].as_u64().unwrap(),
                k["first"]["seq"].clone(),
                k["last"]["seq"].clone(),
            )
        })
        .collect()
}

/// A rotation: the trail before it is signed by key A, the trail after by
/// key B. Verify takes both, from two flags or one bundle, says which key
/// signed which seals, and lists a key given that signed nothing.
#[test]
fn trails_signed_before_and_after_a_key_rotation_verify_with_the_keyring() {
    let dir = tempfile::tempdir().unwrap();
    let (a, fp_a) = keygen(dir.path(), "a");
    let (b, fp_b) = keygen(dir.path(), "b");
    let (c, fp_c) = keygen(dir.path(), "c");
    assert!(fp_a.starts_with("SHA256:") && fp_a.len() == 39, "{fp_a}");
    assert!(fp_a != fp_b && fp_b != fp_c);
    let before = checked_with(&dir.path().join("before"), &a);
    let after = checked_with(&dir.path().join("after"), &b);
    let trail = [before.as_path(), after.as_path()];
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let (a_s, b_s) = (path(&a), path(&b));

    // One key alone: the other key's seals are what they always were.
    let (code, r) = verify_files(&trail, &["--public-key", &a_s]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(problem_kinds(&r), ["seal_signature"; 3], "{r}");
    for p in r["problems"].as_array().unwrap() {
        let at = p["at"]["stream"].as_u64().unwrap() as usize;
        assert_eq!(r["streams"][at], path(&after), "{p}");
    }
    assert_eq!(
        key_tallies(&r),
        [(fp_a.clone(), a_s.clone(), 1, 3, 0.into(), 2.into())],
        "{r}"
    );

    // Both keys, one flag each (and A again, which counts once).
    let (code, r) = verify_files(
        &trail,
        &[
            "--public-key",
            &a_s,
            "--public-key",
            &b_s,
            "--public-key",
            &a_s,
        ],
    );
    assert_eq!(code, 0, "{r}");
    assert_eq!(
        key_tallies(&r),
        [
            (fp_a.clone(), a_s.clone(), 1, 3, 0.into(), 2.into()),
            (fp_b.clone(), b_s.clone(), 1, 3, 0.into(), 2.into()),
        ],
        "{r}"
    );
    // Each key's seals are the run it signed.
    let run_of = |trail: &Path| -> Value {
        let summary = std::fs::read(trail.with_file_name("summary.json")).unwrap();
        serde_json::from_slice::<Value>(&summary).unwrap()["audit_run"].clone()
    };
    assert_eq!(r["keys"][0]["first"]["run"], run_of(&before), "{r}");
    assert_eq!(r["keys"][1]["last"]["run"], run_of(&after), "{r}");
    assert!(
        r["keys"][1]["first"]["time"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );

    // One bundle holding the keyring, with a key that signed nothing.
    let bundle = dir.path().join("keyring.pem");
    let pem = |p: &Path| std::fs::read_to_string(p).unwrap();
    std::fs::write(
        &bundle,
        format!(
            "# groundgate audit keys\n{}{}# spare\n{}",
            pem(&a),
            pem(&b),
            pem(&c)
        ),
    )
    .unwrap();
    let bundle_s = path(&bundle);
    let (code, r) = verify_files(&trail, &["--public-key", &bundle_s]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(
        key_tallies(&r),
        [
            (fp_a.clone(), bundle_s.clone(), 1, 3, 0.into(), 2.into()),
            (fp_b.clone(), bundle_s.clone(), 2, 3, 0.into(), 2.into()),
            (
                fp_c.clone(),
                bundle_s.clone(),
                3,
                0,
                Value::Null,
                Value::Null
            ),
        ],
        "{r}"
    );
    assert!(
        r["keys"]
            .as_array()
            .unwrap()
            .iter()
            .all(|k| k["signed_again"] == serde_json::json!([]))
    );
    let mut args = vec![
        "audit",
        "verify",
        before.to_str().unwrap(),
        after.to_str().unwrap(),
    ];
    args.extend(["--public-key", &bundle_s]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = text(&o);
    for line in [
        format!(
            "key {fp_a} ({bundle_s}, block 1): 3 seal(s), first answers.jsonl/0 seal 0 of run "
        ),
        format!("key {fp_c} ({bundle_s}, block 3): signed no seal of the trail"),
    ] {
        assert!(out.contains(&line), "{line}\n{out}");
    }
}

/// A key file verify cannot use in full is refused before anything is
/// read, exit 2, naming the file and the block.
#[test]
fn a_keyring_file_that_is_not_all_public_keys_exits_2_naming_the_block() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = keygen(dir.path(), "a");
    let trail = checked_with(&dir.path().join("t"), &a);
    let pem = std::fs::read_to_string(&a).unwrap();
    // `content`: what the file holds; `None`: there is no such file.
    let refused = |name: &str, content: Option<&str>| {
        let file = dir.path().join(name);
        if let Some(content) = content {
            std::fs::write(&file, content).unwrap();
        }
        let o = run(&[
            "audit",
            "verify",
            trail.to_str().unwrap(),
            "--public-key",
            a.to_str().unwrap(),
            "--public-key",
            file.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(o.stdout.is_empty(), "{}", text(&o));
        let err = String::from_utf8(o.stderr).unwrap();
        assert!(err.contains(file.to_str().unwrap()), "{err}");
        err
    };
    // The second key's base64 damaged.
    let damaged = format!("{pem}{}", pem.replacen("MCow", "MCo", 1));
    let err = refused("damaged.pem", Some(&damaged));
    assert!(
        err.contains("PEM block 2: not an Ed25519 public key"),
        "{err}"
    );
    let private = std::fs::read_to_string(a.with_extension("key")).unwrap();
    let err = refused("with-private.pem", Some(&format!("{pem}{private}")));
    assert!(
        err.contains("PEM block 2: a PRIVATE KEY, not a PUBLIC KEY"),
        "{err}"
    );
    let err = refused("empty.pem", Some("keys go here\n"));
    assert!(err.contains("holds no PEM block"), "{err}");
    // Keys in the other two forms a team may hold: how to convert each.
    let err = refused(
        "id_ed25519.pub",
        Some(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHtA6QqB0YH0q3jW3n0dXn9xk4J9p2K1bZL3QK0aQ8Zc ops@bank\n",
        ),
    );
    assert!(
        err.contains("it is an OpenSSH public key, not one that signs seals"),
        "{err}"
    );
    let der_file = dir.path().join("key.der");
    let mut der = vec![
        0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
    ];
    der.extend([0xff; 32]);
    std::fs::write(&der_file, der).unwrap();
    let err = refused("key.der", None);
    assert!(
        err.contains("`openssl pkey -pubin -inform DER -in"),
        "{err}"
    );
    let err = refused("missing.pem", None);
    assert!(err.contains("cannot read it: No such file"), "{err}");
}

/// `audit pseudonym` reads a list saved on Windows (a byte order mark, CR
/// LF line ends) as the same values given on the command line, and stops
/// quietly when its reader has what it wanted.
#[test]
fn a_windows_list_of_values_gives_the_pseudonyms_of_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("pseudonym.key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    let key = key.to_str().unwrap();
    let given = run(&["audit", "pseudonym", "--key-file", key, "alice", "", "bob"]);
    assert!(given.status.success(), "{}", text(&given));
    assert!(
        String::from_utf8_lossy(&given.stdout).starts_with(
            "hmac-sha256:3eb1bd43:433deb45467e4e53dbaba594c88bc3a200f705a2150788c3d11e6040e63e8510\n\n"
        ),
        "{}",
        text(&given)
    );
    let list = dir.path().join("users.txt");
    std::fs::write(&list, "\u{feff}alice\r\n\r\nbob").unwrap();
    let read = Command::new(BIN)
        .args(["audit", "pseudonym", "--key-file", key])
        .stdin(std::fs::File::open(&list).unwrap())
        .output()
        .unwrap();
    assert!(read.status.success(), "{}", text(&read));
    assert_eq!(
        String::from_utf8_lossy(&read.stdout),
        String::from_utf8_lossy(&given.stdout)
    );
    // A list saved in a Windows code page is not UTF-8: the line is named.
    std::fs::write(&list, b"alice\r\nren\xe9e\r\n").unwrap();
    let latin1 = Command::new(BIN)
        .args(["audit", "pseudonym", "--key-file", key])
        .stdin(std::fs::File::open(&list).unwrap())
        .output()
        .unwrap();
    assert_eq!(latin1.status.code(), Some(2), "{}", text(&latin1));
    assert!(
        String::from_utf8_lossy(&latin1.stderr)
            .contains("standard input, line 2: not UTF-8, which no value of a record is"),
        "{}",
        text(&latin1)
    );

    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let closed = Command::new(BIN)
        .args(["audit", "pseudonym", "--key-file", key, "alice"])
        .stdout(writer)
        .output()
        .unwrap();
    assert_eq!(closed.status.code(), Some(0), "{}", text(&closed));
    assert_eq!(String::from_utf8_lossy(&closed.stderr), "");
}

/// `audit pseudonym` reading values typed at a terminal says so, and one
/// Ctrl-D ends them.
#[test]
fn values_typed_at_a_terminal_end_at_one_ctrl_d() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("pseudonym.key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["audit", "pseudonym", "--key-file"]).arg(&key);
    let (status, out, err) = crate::common::typed_at_a_terminal("audit pseudonym", cmd, b"alice\n");
    assert!(status.success(), "{err}");
    assert!(
        out.starts_with("hmac-sha256:3eb1bd43:") && out.lines().count() == 1,
        "{out}"
    );
    assert!(
        err.contains("reading values from standard input, which is this terminal")
            && err.contains("Ctrl-D"),
        "{err}"
    );
}

/// `audit pseudonym --config` takes the key the workers' configuration
/// names, with the environment layered on it as the workers read it.
#[test]
fn the_workers_configuration_names_the_pseudonym_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("pseudonym.key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    let config = dir.path().join("worker.toml");
    std::fs::write(
        &config,
        format!(
            "[audit]\npseudonymize = [\"user\"]\npseudonym_key_file = {:?}\n",
            key.to_str().unwrap()
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let o = run(&["audit", "pseudonym", "--config", config, "alice"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "hmac-sha256:3eb1bd43:433deb45467e4e53dbaba594c88bc3a200f705a2150788c3d11e6040e63e8510\n"
    );

    let other = dir.path().join("other.key");
    std::fs::write(&other, "another key of at least thirty-two bytes").unwrap();
    let o = Command::new(BIN)
        .args(["audit", "pseudonym", "--config", config, "alice"])
        .env("GROUNDGATE_AUDIT__PSEUDONYM_KEY_FILE", &other)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let by_env = String::from_utf8_lossy(&o.stdout);
    assert!(
        by_env.starts_with("hmac-sha256:") && !by_env.contains(":3eb1bd43:"),
        "{by_env}"
    );

    let plain = dir.path().join("plain.toml");
    std::fs::write(&plain, "[kafka]\ngroup_id = \"g\"\n").unwrap();
    let o = run(&[
        "audit",
        "pseudonym",
        "--config",
        plain.to_str().unwrap(),
        "alice",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("sets no audit.pseudonym_key_file: its workers write no pseudonyms"),
        "{}",
        text(&o)
    );
    let both = run(&[
        "audit",
        "pseudonym",
        "--config",
        config,
        "--key-file",
        key.to_str().unwrap(),
        "alice",
    ]);
    assert_eq!(both.status.code(), Some(2), "{}", text(&both));
    // Both ways to give the key are named, not only --key-file.
    let neither = run(&["audit", "pseudonym", "alice"]);
    assert_eq!(neither.status.code(), Some(2), "{}", text(&neither));
    assert!(
        text(&neither).contains("--key-file") && text(&neither).contains("--config"),
        "{}",
        text(&neither)
    );
}

/// `audit pseudonym` reads its key as the workers do: a FIFO is refused
/// at once rather than waited on, and a key typed where its file's path
/// belongs is not shown.
#[test]
fn the_pseudonym_key_must_be_a_regular_file_and_a_missing_one_is_not_shown() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pseudonym.key");
    mkfifo(&fifo);
    // Bounded: a reader that opens the FIFO would wait for a writer.
    let mut cmd = Command::new(BIN);
    cmd.args(["audit", "pseudonym", "--key-file"])
        .arg(&fifo)
        .arg("alice");
    let (code, err) = exit_and_stderr("audit pseudonym", cmd);
    assert_eq!(code, Some(2), "{err}");
    let expected = format!(
        "--key-file = {:?}: it is a FIFO (named pipe), not a regular file",
        fifo.to_str().unwrap()
    );
    assert!(err.contains(&expected), "{err}");
    let o = run(&[
        "audit",
        "pseudonym",
        "--key-file",
        "0123456789abcdef0123456789abcdef",
        "alice",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--key-file: cannot read it: No such file or directory (os error 2); its value is not shown"),
        "{}",
        text(&o)
    );
    assert!(!text(&o).contains("0123456789abcdef"), "{}", text(&o));
}
