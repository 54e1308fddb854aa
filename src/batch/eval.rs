//! The measurement behind `groundgate eval` (the command is `crate::cmd::eval`):
//! scores labelled JSON Lines (`label`: `supported` | `unsupported`),
//! computes AUC, the confusion matrix and two naive baselines beside them, and
//! fits the grounding model's coefficients (`--fit`) with k-fold
//! cross-validation and with each file held out.
//!
//! Every line goes through the same [`crate::core::process()`] as `check` and
//! the worker; the fit reads the evidence features of
//! [`crate::core::grounding::analyze`]. This module must not score claims
//! itself: what it reports is what production would decide. The naive
//! baselines (share of the answer's words found in the sources, of all its
//! words and of its content words) are the one number computed here, as a
//! reference.

use std::collections::HashSet;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use super::InputError;
use crate::cli::EvalArgs;
use crate::config::{Config, RawConfig};
use crate::core::grounding::model::{FEATURES, probability, support_of};
use crate::core::grounding::{self, Evidence};
use crate::core::{FindingKind, RecordMeta, citation, process};

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("line {line}: {what}")]
    Label { line: u64, what: String },
    #[error("{path}: {source}")]
    InFile {
        path: PathBuf,
        source: Box<EvalError>,
    },
    #[error("no labelled records in {0}")]
    Empty(PathBuf),
    #[error(
        "--folds {folds} is more than the {most} records of the largest input: each fold would hold at most one record of it, or none"
    )]
    Folds { folds: usize, most: usize },
    #[error(
        "--fit needs records of both labels: the inputs hold {records} {label} records and no {other} one, so a fitted model could only learn to call every claim {label} and would flag all answers or none"
    )]
    OneLabel {
        records: usize,
        label: &'static str,
        other: &'static str,
    },
    #[error("standard input (`-`) is named more than once among the inputs")]
    StdinTwice,
    #[error(
        "{0} is named more than once among the inputs (by this or another path): each file is scored once, as one row; named twice, its records would count twice in the threshold shared by all files and in --fit, which would score the model on the very records it was fitted on"
    )]
    InputTwice(PathBuf),
}

/// The `--by` group of a record that lacks the field.
pub const NO_FIELD: &str = "(none)";

/// One labelled record after `process`.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub line: u64,
    pub request_id: String,
    /// Ground truth: the answer is not supported by its sources.
    pub unsupported: bool,
    /// Grounding score; a record with no cited claim counts as fully supported.
    pub score: f64,
    /// Whether `process` reported an `unsupported_claim` finding.
    pub flagged: bool,
    pub answer: String,
    /// The `--by` field's value (strings as they are, other JSON as text).
    pub group: Option<String>,
    /// Naive baseline: share of the answer's words found in its sources.
    pub naive: f64,
    /// The same share of the answer's content words (stop words left out).
    pub naive_content: f64,
    /// Evidence of each cited claim (for `--fit`).
    pub evidence: Vec<Evidence>,
}

/// Counts of the `unsupported_claim` finding against the labels
/// (positive = unsupported).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Confusion {
    pub tp: u64,
    pub fp: u64,
    pub tn: u64,
    pub fn_: u64,
}

impl Confusion {
    pub fn of(items: impl Iterator<Item = (bool, bool)>) -> Self {
        let mut c = Confusion::default();
        for (truth, predicted) in items {
            match (truth, predicted) {
                (true, true) => c.tp += 1,
                (false, true) => c.fp += 1,
                (false, false) => c.tn += 1,
                (true, false) => c.fn_ += 1,
            }
        }
        c
    }

    fn ratio(a: u64, b: u64) -> f64 {
        if a + b == 0 {
            0.0
        } else {
            a as f64 / (a + b) as f64
        }
    }

    pub fn recall(&self) -> f64 {
        Self::ratio(self.tp, self.fn_)
    }

    pub fn specificity(&self) -> f64 {
        Self::ratio(self.tn, self.fp)
    }

    pub fn precision(&self) -> f64 {
        Self::ratio(self.tp, self.fp)
    }

    pub fn balanced_accuracy(&self) -> f64 {
        (self.recall() + self.specificity()) / 2.0
    }

    /// Whether the labels hold both classes: without them balanced
    /// accuracy, precision and recall say nothing (like the AUC).
    pub fn has_both_classes(&self) -> bool {
        self.tp + self.fn_ > 0 && self.tn + self.fp > 0
    }
}

/// Area under the ROC curve of "low score means unsupported" (Mann–Whitney,
/// ties count one half), of (score, unsupported) pairs. `None` without
/// both classes.
pub fn auc(items: &[(f64, bool)]) -> Option<f64> {
    let mut v = items.to_vec();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let pos = v.iter().filter(|x| x.1).count() as f64;
    let neg = v.len() as f64 - pos;
    if pos == 0.0 || neg == 0.0 {
        return None;
    }
    // Sum over unsupported records of (supported records scoring higher
    // + half the supported ones scoring equal).
    let mut sum = 0.0;
    let mut i = 0;
    let mut neg_below = 0.0;
    while i < v.len() {
        let mut j = i;
        while j < v.len() && v[j].0 == v[i].0 {
            j += 1;
        }
        let group_pos = v[i..j].iter().filter(|x| x.1).count() as f64;
        let group_neg = (j - i) as f64 - group_pos;
        let neg_above = neg - neg_below - group_neg;
        sum += group_pos * (neg_above + group_neg / 2.0);
        neg_below += group_neg;
        i = j;
    }
    Some(sum / (pos * neg))
}

/// Refuses inputs that name one file twice, by the same path or another
/// (`./f`, a link): a copy held out by `--fit` while the other is fitted
/// on would report figures the model never earned. A path that cannot be
/// read is left to [`score_file`] to report.
pub fn distinct_inputs(inputs: &[PathBuf]) -> Result<(), EvalError> {
    use std::os::unix::fs::MetadataExt;
    let mut seen = HashSet::new();
    if inputs.iter().any(|p| p.as_os_str() == "-") {
        seen.extend(super::input::stdin_file_id());
    }
    let mut stdin = false;
    for path in inputs {
        if path.as_os_str() == "-" {
            if std::mem::replace(&mut stdin, true) {
                return Err(EvalError::StdinTwice);
            }
        } else if let Ok(m) = std::fs::metadata(path)
            && !seen.insert((m.dev(), m.ino()))
        {
            return Err(EvalError::InputTwice(path.clone()));
        }
    }
    Ok(())
}

/// The configuration `eval` measures: the file given, on the defaults.
pub fn load_config(args: &EvalArgs) -> Result<Config, EvalError> {
    Ok(
        RawConfig::load_from_process(args.config.as_deref(), RawConfig::default())
            .map_err(InputError::from)?,
    )
}

/// Runs every labelled line of `path` through `process`; `by`: the record
/// field to group by.
pub fn score_file(
    path: &Path,
    config: &Config,
    label_field: &str,
    by: Option<&str>,
) -> Result<Vec<Scored>, EvalError> {
    let in_file = |e: EvalError| EvalError::InFile {
        path: path.to_path_buf(),
        source: Box::new(e),
    };
    // Opening reads the first bytes through the unpacker: an error there
    // names no input of its own, unlike failing to open or a refused packing.
    let input = super::input::open(path).map_err(|e| match e {
        InputError::Read { .. } => in_file(EvalError::Input(e)),
        other => EvalError::Input(other),
    })?;
    let mut reader = BufReader::new(input.reader);
    let mut out = Vec::new();
    let cap = config.core.max_record_bytes;
    let mut bytes = Vec::new();
    for n in 0u64.. {
        let line_no = n + 1;
        bytes.clear();
        // One byte over the limit keeps the `\r` of a CRLF ending, which
        // is no part of the record, as check does not count it either.
        let read = super::input::read_line_bounded(&mut reader, &mut bytes, cap + 1);
        let mut len = match read {
            Ok(Some(len)) => len,
            Ok(None) => break,
            Err(source) => {
                return Err(in_file(EvalError::Input(InputError::Read {
                    line: line_no,
                    source,
                })));
            }
        };
        let label_error = |what: String| {
            in_file(EvalError::Label {
                line: line_no,
                what,
            })
        };
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
            len -= 1;
        }
        if len > cap as u64 {
            return Err(label_error(format!(
                "{len} bytes, longer than max_record_bytes ({cap}): check would dead-letter it as too_large"
            )));
        }
        let line =
            std::str::from_utf8(&bytes).map_err(|e| label_error(format!("not UTF-8: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| label_error(format!("not JSON: {e}")))?;
        let kind = match &value {
            serde_json::Value::Object(_) => None,
            serde_json::Value::Array(_) => Some("an array"),
            serde_json::Value::String(_) => Some("a string"),
            serde_json::Value::Number(_) => Some("a number"),
            serde_json::Value::Bool(_) => Some("a boolean"),
            serde_json::Value::Null => Some("null"),
        };
        if let Some(kind) = kind {
            return Err(label_error(format!(
                "not a JSON object but {kind}: eval reads JSON Lines, one labelled record (an object) a line; to convert a JSON array: jq -c '.[]' FILE > labelled.jsonl"
            )));
        }
        let given = times_given(line, label_field);
        if given > 1 {
            return Err(label_error(format!(
                "field {label_field:?} is given {given} times in the record: JSON readers keep one of them, each its own, so the label is ambiguous; keep one"
            )));
        }
        let label = value.get(label_field);
        let unsupported = match label.and_then(|v| v.as_str()) {
            Some("supported") => false,
            Some("unsupported") => true,
            _ => {
                // The value as written (`1`, `null`, `"yes"`), not Rust's view of it.
                let what = match label {
                    // Unlabelled from its first line: answers to be judged,
                    // not measured.
                    None if line_no == 1 => format!(
                        "field {label_field:?} is missing (the label: \"supported\" or \"unsupported\"; --label-field names another field): eval measures the grounding check on answers labelled by hand; `groundgate check` judges unlabelled answers"
                    ),
                    None => format!(
                        "field {label_field:?} is missing (the label: \"supported\" or \"unsupported\"; --label-field names another field)"
                    ),
                    Some(v) => format!(
                        "field {label_field:?} must be \"supported\" or \"unsupported\", found {v}"
                    ),
                };
                return Err(label_error(what));
            }
        };
        let meta = RecordMeta {
            topic: "eval",
            partition: 0,
            offset: n as i64,
        };
        let o = process(Some(line.as_bytes()), &meta, 0, &config.core);
        // A record `check` would not judge has no grounding to measure:
        // scored, it would count as fully supported.
        if let crate::core::Terminal::DeadLetter(d) = &o.terminal {
            return Err(label_error(format!(
                "check would dead-letter this record ({}: {}), so it has no grounding to measure; fix or remove it",
                d.kind.as_str(),
                d.detail
            )));
        }
        let answer = value
            .get("answer")
            .and_then(|a| a.as_str())
            .unwrap_or_default();
        let sources: Vec<String> = value
            .get("sources")
            .and_then(|s| s.as_array())
            .map(|a| {
                a.iter()
                    .map(|s| match s.get("payload") {
                        Some(serde_json::Value::String(t)) => t.clone(),
                        Some(serde_json::Value::Null) | None => String::new(),
                        Some(other) => other.to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let texts: Vec<&str> = sources.iter().map(String::as_str).collect();
        let parsed = citation::parse(answer, texts.len());
        let g = grounding::analyze(answer, &parsed.citations, &texts, &config.core.grounding);
        let naive = naive_share(answer, &texts);
        out.push(Scored {
            line: line_no,
            request_id: o.request_id.clone().unwrap_or_default(),
            unsupported,
            score: o.summary.grounding_score.unwrap_or(1.0),
            flagged: o.summary.findings.contains(&FindingKind::UnsupportedClaim),
            answer: answer.to_string(),
            group: by.map(|f| match value.get(f) {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => NO_FIELD.to_string(),
            }),
            naive: naive.all,
            naive_content: naive.content,
            evidence: g.claims.iter().filter_map(|c| c.evidence).collect(),
        });
    }
    if out.is_empty() {
        return Err(EvalError::Empty(path.to_path_buf()));
    }
    Ok(out)
}

/// How many times the record's top-level object gives `field`: `Value`
/// keeps the last of repeated keys, which would settle two contradicting
/// labels silently.
fn times_given(line: &str, field: &str) -> usize {
    struct Count<'f>(&'f str);
    impl<'de> serde::de::Visitor<'de> for Count<'_> {
        type Value = usize;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
            let mut n = 0;
            while let Some(key) = map.next_key::<String>()? {
                n += usize::from(key == self.0);
                map.next_value::<serde::de::IgnoredAny>()?;
            }
            Ok(n)
        }
    }
    let mut de = serde_json::Deserializer::from_str(line);
    serde::Deserializer::deserialize_map(&mut de, Count(field)).unwrap_or(0)
}

/// Lower-cased runs of letters and digits, `[^N]` markers left out.
fn naive_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '^')
        .filter(|w| !w.is_empty() && !w.starts_with('^'))
        .map(str::to_lowercase)
}

/// The naive lexical baselines of one answer (each 1 for an answer without
/// such words).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NaiveShare {
    /// Share of the answer's words found anywhere in its sources.
    pub all: f64,
    /// The same share of its content words: the check's stop words left
    /// out.
    pub content: f64,
}

/// The naive lexical baselines: which of the answer's words occur anywhere
/// in its sources, as lower-cased runs of letters and digits.
pub fn naive_share(answer: &str, sources: &[&str]) -> NaiveShare {
    let known: HashSet<String> = sources.iter().flat_map(|s| naive_words(s)).collect();
    let (mut found, mut all) = ([0usize; 2], [0usize; 2]);
    for w in naive_words(answer) {
        let hit = usize::from(known.contains(&w));
        let content = usize::from(!grounding::is_stop_word(&w));
        all[0] += 1;
        found[0] += hit;
        all[1] += content;
        found[1] += hit * content;
    }
    let share = |i: usize| {
        if all[i] == 0 {
            1.0
        } else {
            found[i] as f64 / all[i] as f64
        }
    };
    NaiveShare {
        all: share(0),
        content: share(1),
    }
}

/// Balanced accuracy of "flag when `score` < t" at the best threshold t.
pub fn best_balanced_accuracy(items: &[(f64, bool)]) -> f64 {
    best_threshold(items).1
}

/// The threshold t for which "flag when `score` < t" has the best balanced
/// accuracy, and that accuracy: t is a score of `items`, the lowest left
/// unflagged. On a tie, the lowest such t. `(0, 0.5)` when `items` hold
/// one class only.
pub fn best_threshold(items: &[(f64, bool)]) -> (f64, f64) {
    let mut v: Vec<(f64, bool)> = items.to_vec();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let pos = v.iter().filter(|x| x.1).count() as f64;
    let neg = v.len() as f64 - pos;
    if pos == 0.0 || neg == 0.0 {
        return (0.0, 0.5);
    }
    // Flagging nothing, then everything up to each distinct score.
    let (mut tp, mut fp) = (0.0, 0.0);
    let mut best = (v[0].0, 0.5);
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j < v.len() && v[j].0 == v[i].0 {
            if v[j].1 {
                tp += 1.0;
            } else {
                fp += 1.0;
            }
            j += 1;
        }
        let accuracy = (tp / pos + (neg - fp) / neg) / 2.0;
        // Flagging everything (no next score) is never better than 0.5.
        if accuracy > best.1
            && let Some(next) = v.get(j)
        {
            best = (next.0, accuracy);
        }
        i = j;
    }
    best
}

/// The naive baseline held to one threshold for all `files` (each a
/// file's (naive score, unsupported) pairs), as the grounding check is held
/// to one `min_support`: the threshold with the best mean balanced
/// accuracy over the files that hold both labels, and each such file's
/// balanced accuracy there (`None` for a file with one label). `None` with
/// fewer than two such files.
pub fn naive_shared(files: &[Vec<(f64, bool)>]) -> Option<(f64, Vec<Option<f64>>)> {
    let both = |f: &Vec<(f64, bool)>| f.iter().any(|x| x.1) && f.iter().any(|x| !x.1);
    if files.iter().filter(|f| both(f)).count() < 2 {
        return None;
    }
    let at = |f: &Vec<(f64, bool)>, t: f64| {
        both(f).then(|| Confusion::of(f.iter().map(|&(s, u)| (u, s < t))).balanced_accuracy())
    };
    let mut candidates: Vec<f64> = files.iter().flatten().map(|x| x.0).collect();
    candidates.push(f64::INFINITY);
    candidates.sort_by(f64::total_cmp);
    candidates.dedup();
    let mean = |t: f64| {
        let v: Vec<f64> = files.iter().filter_map(|f| at(f, t)).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    // The lowest threshold of the best mean (scores are few thousand).
    let mut best = (candidates[0], mean(candidates[0]));
    for &t in &candidates[1..] {
        let m = mean(t);
        if m > best.1 {
            best = (t, m);
        }
    }
    Some((best.0, files.iter().map(|f| at(f, best.0)).collect()))
}

/// One row of the eval table: a file, or one group of it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    pub file: String,
    /// The `--by` group, if any.
    pub group: Option<String>,
    pub records: usize,
    pub unsupported: usize,
    /// AUC, balanced accuracy, precision and recall are `None` (printed
    /// `n/a`) where the labels hold one class only; precision also where
    /// nothing was flagged.
    pub auc: Option<f64>,
    pub balanced_accuracy: Option<f64>,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
    /// Share of records flagged `unsupported_claim`.
    pub flagged: f64,
    /// The `min_support` with the best balanced accuracy on these records,
    /// and that accuracy: what to configure for data like them.
    pub best_min_support: Option<f64>,
    pub best_balanced_accuracy: Option<f64>,
    /// The naive baseline over all the answer's words: its AUC, and its
    /// balanced accuracy at its best threshold for these records.
    pub naive_auc: Option<f64>,
    pub naive_best_balanced_accuracy: Option<f64>,
    /// The same over the answer's content words only.
    pub naive_content_auc: Option<f64>,
    pub naive_content_best_balanced_accuracy: Option<f64>,
}

impl Row {
    pub fn of(file: &str, group: Option<String>, scored: &[&Scored]) -> Row {
        let c = Confusion::of(scored.iter().map(|s| (s.unsupported, s.flagged)));
        let both = c.has_both_classes();
        let pairs = |score: fn(&Scored) -> f64| -> Vec<(f64, bool)> {
            scored.iter().map(|s| (score(s), s.unsupported)).collect()
        };
        let baseline = |share: fn(&Scored) -> f64| {
            let p = pairs(share);
            (auc(&p), both.then(|| best_balanced_accuracy(&p)))
        };
        let (naive_auc, naive_best) = baseline(|s| s.naive);
        let (content_auc, content_best) = baseline(|s| s.naive_content);
        let ours = pairs(|s| s.score);
        let best = both.then(|| best_threshold(&ours));
        Row {
            file: file.to_string(),
            group,
            records: scored.len(),
            unsupported: scored.iter().filter(|s| s.unsupported).count(),
            auc: auc(&ours),
            balanced_accuracy: both.then(|| c.balanced_accuracy()),
            precision: (both && c.tp + c.fp > 0).then(|| c.precision()),
            recall: both.then(|| c.recall()),
            flagged: (c.tp + c.fp) as f64 / scored.len().max(1) as f64,
            best_min_support: best.map(|b| b.0),
            best_balanced_accuracy: best.map(|b| b.1),
            naive_auc,
            naive_best_balanced_accuracy: naive_best,
            naive_content_auc: content_auc,
            naive_content_best_balanced_accuracy: content_best,
        }
    }
}

/// The rows of one file: the whole file, then each `--by` group (in order
/// of first appearance).
pub fn rows(file: &str, scored: &[Scored]) -> Vec<Row> {
    let all: Vec<&Scored> = scored.iter().collect();
    let mut out = vec![Row::of(file, None, &all)];
    // Groups in the order of their first record; one pass, however many
    // distinct values the field takes.
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut groups: Vec<(&str, Vec<&Scored>)> = Vec::new();
    for s in scored {
        if let Some(g) = s.group.as_deref() {
            let i = *at.entry(g).or_insert_with(|| {
                groups.push((g, Vec::new()));
                groups.len() - 1
            });
            groups[i].1.push(s);
        }
    }
    for (g, members) in groups {
        out.push(Row::of(file, Some(g.to_string()), &members));
    }
    out
}

/// A record's support under `coefficients`: the lowest of its claims'
/// (a strict rule's value, else the model's); 1 without a cited claim.
pub fn record_support(evidence: &[Evidence], coefficients: &[f64; FEATURES + 1]) -> f64 {
    evidence
        .iter()
        .map(|e| support_of(e, coefficients))
        .fold(1.0, f64::min)
}

/// One training example of the fit: features, label (1 = supported) and
/// weight.
type Example = ([f64; FEATURES], f64, f64);

/// The examples of `files` (each a file's records): per record not decided
/// by a strict rule, its weakest model-scored claim under `current`. Each
/// file weighs the same in all, and within a file each label half of it.
fn examples(files: &[Vec<&Scored>], current: &[f64; FEATURES + 1]) -> Vec<Example> {
    let mut out = Vec::new();
    for recs in files {
        let mut picked: Vec<([f64; FEATURES], bool)> = Vec::new();
        for r in recs {
            // Only claims no strict rule decided: a broken rule caps a claim
            // whatever the model says, and fitting on those claims too
            // lowers AttributionBench and BEGIN (measured).
            let weakest = r
                .evidence
                .iter()
                .filter(|e| e.rule.is_none())
                .map(|e| (probability(&e.features, current), e.features))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((_, f)) = weakest {
                picked.push((f, !r.unsupported));
            }
        }
        let pos = picked.iter().filter(|p| p.1).count().max(1) as f64;
        let neg = picked.iter().filter(|p| !p.1).count().max(1) as f64;
        for (f, supported) in picked {
            let w = if supported { 0.5 / pos } else { 0.5 / neg };
            out.push((f, f64::from(u8::from(supported)), w));
        }
    }
    out
}

/// Ridge strength of the fit (per unit of total example weight): keeps the
/// coefficients small where features move together.
const RIDGE: f64 = 0.001;

/// Weighted logistic regression by Newton's method (deterministic).
fn logistic(examples: &[Example]) -> [f64; FEATURES + 1] {
    const N: usize = FEATURES + 1;
    let total: f64 = examples.iter().map(|e| e.2).sum();
    let mut w = [0.0; N];
    for _ in 0..50 {
        let mut grad = [0.0; N];
        let mut hess = [[0.0; N]; N];
        for (f, y, weight) in examples {
            let x: [f64; N] = std::array::from_fn(|i| if i == 0 { 1.0 } else { f[i - 1] });
            let p = probability(f, &w);
            for i in 0..N {
                grad[i] += weight * (p - y) * x[i];
                for j in 0..N {
                    hess[i][j] += weight * p * (1.0 - p) * x[i] * x[j];
                }
            }
        }
        for i in 1..N {
            grad[i] += RIDGE * total * w[i];
            hess[i][i] += RIDGE * total;
        }
        for (i, row) in hess.iter_mut().enumerate() {
            row[i] += 1e-9;
        }
        let step = solve(hess, grad);
        let mut moved = 0.0f64;
        for i in 0..N {
            w[i] -= step[i];
            moved = moved.max(step[i].abs());
        }
        if moved < 1e-10 {
            break;
        }
    }
    w
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting.
fn solve<const N: usize>(mut a: [[f64; N]; N], mut b: [f64; N]) -> [f64; N] {
    for c in 0..N {
        let p = (c..N)
            .max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))
            .unwrap_or(c);
        a.swap(c, p);
        b.swap(c, p);
        if a[c][c].abs() < 1e-300 {
            continue;
        }
        let pivot = a[c];
        for r in c + 1..N {
            let k = a[r][c] / pivot[c];
            for (x, p) in a[r][c..].iter_mut().zip(&pivot[c..]) {
                *x -= k * p;
            }
            b[r] -= k * b[c];
        }
    }
    let mut x = [0.0; N];
    for c in (0..N).rev() {
        let s: f64 = (c + 1..N).map(|j| a[c][j] * x[j]).sum();
        x[c] = if a[c][c].abs() < 1e-300 {
            0.0
        } else {
            (b[c] - s) / a[c][c]
        };
    }
    x
}

/// Fits the coefficients on `files`: the weakest claim of each record is
/// picked under the previous round's fit, three rounds from a model that
/// only counts found terms.
pub fn fit(files: &[Vec<&Scored>]) -> [f64; FEATURES + 1] {
    let mut w = [0.0; FEATURES + 1];
    w[1] = 1.0;
    for _ in 0..3 {
        w = logistic(&examples(files, &w));
    }
    w
}

/// k-fold cross-validation of [`fit`]: each record's support predicted by
/// a model fitted without its fold (record `i` of a file is in fold
/// `i % k`), file by file.
pub fn cross_validate(files: &[Vec<Scored>], k: usize) -> Vec<Vec<f64>> {
    let k = k.max(2);
    let mut out: Vec<Vec<f64>> = files.iter().map(|f| vec![0.0; f.len()]).collect();
    for fold in 0..k {
        let train: Vec<Vec<&Scored>> = files
            .iter()
            .map(|f| {
                f.iter()
                    .enumerate()
                    .filter(|(i, _)| i % k != fold)
                    .map(|(_, s)| s)
                    .collect()
            })
            .collect();
        let w = fit(&train);
        for (f, preds) in files.iter().zip(out.iter_mut()) {
            for (i, s) in f.iter().enumerate().filter(|(i, _)| i % k == fold) {
                preds[i] = record_support(&s.evidence, &w);
            }
        }
    }
    out
}

/// Leave-one-file-out validation of [`fit`]: each file's records scored
/// by a model fitted on the other files only, as a labelled set from
/// another source would be. `None` with fewer than two files.
pub fn leave_one_file_out(files: &[Vec<Scored>]) -> Option<Vec<Vec<f64>>> {
    if files.len() < 2 {
        return None;
    }
    let out = (0..files.len())
        .map(|held| {
            let train: Vec<Vec<&Scored>> = files
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != held)
                .map(|(_, f)| f.iter().collect())
                .collect();
            let w = fit(&train);
            files[held]
                .iter()
                .map(|s| record_support(&s.evidence, &w))
                .collect()
        })
        .collect();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(score: f64, unsupported: bool) -> Scored {
        Scored {
            line: 0,
            request_id: String::new(),
            unsupported,
            score,
            flagged: false,
            answer: String::new(),
            group: None,
            naive: 0.0,
            naive_content: 0.0,
            evidence: Vec::new(),
        }
    }

    fn with_evidence(found: f64, unsupported: bool) -> Scored {
        Scored {
            evidence: vec![Evidence {
                features: [found, 0.0, found],
                rule: None,
            }],
            ..s(0.0, unsupported)
        }
    }

    #[test]
    fn by_rows_follow_the_first_record_of_each_group() {
        let g = |score, unsupported, group: Option<&str>| Scored {
            group: group.map(str::to_string),
            ..s(score, unsupported)
        };
        let scored = [
            g(0.9, false, Some("b")),
            g(0.1, true, Some("a")),
            g(0.2, true, None),
            g(0.8, false, Some("b")),
            g(0.3, true, Some("b")),
        ];
        let rows = rows("f", &scored);
        let got: Vec<(Option<&str>, usize, usize)> = rows
            .iter()
            .map(|r| (r.group.as_deref(), r.records, r.unsupported))
            .collect();
        assert_eq!(got, [(None, 5, 3), (Some("b"), 3, 1), (Some("a"), 1, 1)]);
    }

    #[test]
    fn a_held_out_file_is_scored_by_a_fit_on_the_others_only() {
        let a: Vec<Scored> = [(0.9, false), (0.8, false), (0.3, true), (0.2, true)]
            .into_iter()
            .map(|(f, u)| with_evidence(f, u))
            .collect();
        let b: Vec<Scored> = [(0.7, false), (0.6, false), (0.5, true), (0.1, true)]
            .into_iter()
            .map(|(f, u)| with_evidence(f, u))
            .collect();
        let files = vec![a.clone(), b.clone()];
        let held = leave_one_file_out(&files).expect("two files");
        let from_b = fit(&[b.iter().collect()]);
        let from_a = fit(&[a.iter().collect()]);
        let expect = |f: &[Scored], w: &[f64; FEATURES + 1]| -> Vec<f64> {
            f.iter().map(|s| record_support(&s.evidence, w)).collect()
        };
        assert_eq!(held, vec![expect(&a, &from_b), expect(&b, &from_a)]);
        // Each fit differs, so a file is not scored by a fit that saw it.
        assert_ne!(
            held[0],
            expect(&a, &fit(&[a.iter().collect(), b.iter().collect()]))
        );
        assert!(leave_one_file_out(&files[..1]).is_none());
    }

    #[test]
    fn auc_counts_ranks_and_ties() {
        // Perfect separation: every unsupported record scores lower.
        assert_eq!(auc(&[(0.1, true), (0.2, true), (0.9, false)]), Some(1.0));
        // Reversed.
        assert_eq!(auc(&[(0.9, true), (0.1, false)]), Some(0.0));
        // All tied: chance.
        assert_eq!(auc(&[(0.5, true), (0.5, false)]), Some(0.5));
        // One of two pairs ordered right, one tied: (1 + 0.5) / 2.
        assert_eq!(auc(&[(0.2, true), (0.5, true), (0.5, false)]), Some(0.75));
        assert_eq!(auc(&[(0.2, true)]), None);
    }

    #[test]
    fn the_best_threshold_is_the_lowest_score_left_unflagged() {
        // (score, unsupported): flagging below 0.6 catches both unsupported
        // records and no supported one.
        let items = [(0.3, true), (0.6, false), (0.5, true), (0.9, false)];
        assert_eq!(best_threshold(&items), (0.6, 1.0));
        // Overlapping: below 0.5 flags one of two unsupported records and no
        // supported one (0.75); below 0.7 flags both and one supported
        // (0.75 too): the lower threshold is kept.
        let items = [(0.4, true), (0.5, false), (0.6, true), (0.7, false)];
        assert_eq!(best_threshold(&items), (0.5, 0.75));
        // Unsupported records scoring highest: flagging nothing is best.
        let items = [(0.9, true), (0.2, false)];
        assert_eq!(best_threshold(&items), (0.2, 0.5));
        assert_eq!(best_threshold(&[(0.4, true)]), (0.0, 0.5));
    }

    #[test]
    fn the_naive_baselines_count_all_words_and_content_words() {
        // Eight words, four of them content words: "grew" is the content
        // word the source lacks; the stop word it lacks ("the", twice)
        // counts only among all words.
        let share = naive_share(
            "The profit of the bank grew in 2023[^1].",
            &["Bank profit rose 5% in 2023."],
        );
        assert_eq!(share.all, 4.0 / 8.0);
        assert_eq!(share.content, 3.0 / 4.0);
        // Negations are content words: the source's lack of "not" counts.
        let share = naive_share("Profit did not rise[^1].", &["Profit did rise."]);
        assert_eq!(share.content, 2.0 / 3.0);
        // An answer of stop words only has no content word to miss.
        let share = naive_share("It was[^1].", &["Nothing here."]);
        assert_eq!((share.all, share.content), (0.0, 1.0));
    }

    #[test]
    fn the_naive_baseline_shares_one_threshold_across_files() {
        // Alone, the first file is best cut below 0.6 and the second below
        // 0.9; held to one threshold, 0.9 serves both best on average
        // (first file: both unsupported flagged and one supported, 0.75;
        // second: 1.0), where 0.6 would give 1.0 and 0.5.
        let a = vec![(0.3, true), (0.5, true), (0.6, false), (0.95, false)];
        let b = vec![(0.7, true), (0.8, true), (0.9, false), (0.95, false)];
        let (t, each) = naive_shared(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(t, 0.9);
        assert_eq!(each, [Some(0.75), Some(1.0)]);
        // A file with one label has no balanced accuracy and no say; with
        // fewer than two files to share a threshold there is none.
        let one = vec![(0.2, true)];
        let (_, each) = naive_shared(&[a.clone(), one.clone(), b]).unwrap();
        assert_eq!(each[1], None);
        assert_eq!(naive_shared(&[a, one]), None);
    }

    #[test]
    fn confusion_rates() {
        let c = Confusion::of(
            [
                (true, true),
                (true, false),
                (false, false),
                (false, true),
                (false, false),
            ]
            .into_iter(),
        );
        assert_eq!((c.tp, c.fn_, c.tn, c.fp), (1, 1, 2, 1));
        assert_eq!(c.recall(), 0.5);
        assert_eq!(c.precision(), 0.5);
        assert!((c.balanced_accuracy() - (0.5 + 2.0 / 3.0) / 2.0).abs() < 1e-12);
    }
}
