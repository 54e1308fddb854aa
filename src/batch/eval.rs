//! The measurement behind `groundgate eval` (the command is `crate::cmd::eval`):
//! scores labelled JSON Lines (`label`: `supported` | `unsupported`) and
//! computes AUC and the confusion matrix.
//!
//! Every line goes through the same [`crate::core::process()`] as `check` and
//! the worker; this module only reads labels, counts and prints. It must not
//! score anything itself: what it reports is what production would decide.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::PathBuf;

use crate::cli::EvalArgs;
use crate::config::{Config, RawConfig};
use crate::core::{FindingKind, RecordMeta, process};

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("cannot open input {path}: {source}")]
    OpenInput { path: PathBuf, source: io::Error },
    #[error("cannot read input at line {line}: {source}")]
    ReadInput { line: u64, source: io::Error },
    #[error("line {line}: {what}")]
    Label { line: u64, what: String },
    #[error("no labelled records in {0}")]
    Empty(PathBuf),
}

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

    /// Both labels occur: only then do balanced accuracy, precision and
    /// recall measure the finding rather than the data set.
    pub fn has_both_classes(&self) -> bool {
        self.tp + self.fn_ > 0 && self.tn + self.fp > 0
    }
}

/// Area under the ROC curve of "low score means unsupported" (Mann–Whitney,
/// ties count one half). `None` without both classes.
pub fn auc(items: &[Scored]) -> Option<f64> {
    let mut v: Vec<(f64, bool)> = items.iter().map(|s| (s.score, s.unsupported)).collect();
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

/// Runs every labelled line of `args.input` through `process`.
pub fn score_file(args: &EvalArgs) -> Result<(Config, Vec<Scored>), EvalError> {
    let config: Config =
        RawConfig::load_from_process(args.config.as_deref(), RawConfig::default())?;
    let file = File::open(&args.input).map_err(|source| EvalError::OpenInput {
        path: args.input.clone(),
        source,
    })?;
    let mut out = Vec::new();
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line_no = n as u64 + 1;
        let line = line.map_err(|source| EvalError::ReadInput {
            line: line_no,
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| EvalError::Label {
                line: line_no,
                what: format!("not JSON: {e}"),
            })?;
        let label = value.get(&args.label_field);
        let unsupported = match label.and_then(|v| v.as_str()) {
            Some("supported") => false,
            Some("unsupported") => true,
            _ => {
                // The value as written (`1`, `null`, `"yes"`), not Rust's view of it.
                let found =
                    label.map_or_else(|| "the field missing".to_string(), |v| v.to_string());
                return Err(EvalError::Label {
                    line: line_no,
                    what: if label.is_none() {
                        format!(
                            "no field {:?} (the label: \"supported\" or \"unsupported\"; --label-field names another field)",
                            args.label_field
                        )
                    } else {
                        format!(
                            "field {:?} must be \"supported\" or \"unsupported\", found {found}",
                            args.label_field
                        )
                    },
                });
            }
        };
        let meta = RecordMeta {
            topic: "eval",
            partition: 0,
            offset: n as i64,
        };
        let o = process(Some(line.as_bytes()), &meta, 0, &config.core);
        out.push(Scored {
            line: line_no,
            request_id: o.request_id.clone().unwrap_or_default(),
            unsupported,
            score: o.summary.grounding_score.unwrap_or(1.0),
            flagged: o.summary.findings.contains(&FindingKind::UnsupportedClaim),
            answer: value
                .get("answer")
                .and_then(|a| a.as_str())
                .unwrap_or_default()
                .to_string(),
        });
    }
    if out.is_empty() {
        return Err(EvalError::Empty(args.input.clone()));
    }
    Ok((config, out))
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
        }
    }

    #[test]
    fn auc_counts_ranks_and_ties() {
        // Perfect separation: every unsupported record scores lower.
        assert_eq!(auc(&[s(0.1, true), s(0.2, true), s(0.9, false)]), Some(1.0));
        // Reversed.
        assert_eq!(auc(&[s(0.9, true), s(0.1, false)]), Some(0.0));
        // All tied: chance.
        assert_eq!(auc(&[s(0.5, true), s(0.5, false)]), Some(0.5));
        // One of two pairs ordered right, one tied: (1 + 0.5) / 2.
        assert_eq!(
            auc(&[s(0.2, true), s(0.5, true), s(0.5, false)]),
            Some(0.75)
        );
        assert_eq!(auc(&[s(0.2, true)]), None);
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
