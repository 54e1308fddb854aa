//! The batch report of `groundgate check`: what a compliance reviewer reads
//! the morning after. [`Aggregator`] folds every record's outcome into
//! bounded counters (per provider/model, findings, a grounding-score
//! histogram, the worst answers); [`ReportData`] is `summary.json`;
//! [`html::render`] turns it into one self-contained HTML file.
//!
//! Pure: it is handed what `process` produced and never reads files, the
//! clock or the environment. Memory is bounded whatever the input size:
//! per-model score quantiles come from fixed histograms, the list of models
//! is capped, and only the worst `N` answers are kept.

pub mod html;
mod worst;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::core::{DeadLetterKind, FindingKind, OutcomeKind, Summary};

use worst::{Candidate, near_duplicate_key, worst_answer};
pub use worst::{WorstAnswer, WorstBound};

/// Distinct (provider, model) rows kept; the rest are pooled as `other`.
pub const MAX_MODELS: usize = 200;
/// Longest provider or model name kept, in bytes: real names are a few
/// dozen. A record may send a megabyte in either, which the report would
/// otherwise hold for every row and repeat, escaped, in several places of
/// the HTML. Names that agree in their first this many bytes share a row.
pub const MAX_NAME_BYTES: usize = 120;

/// The name a row shows for `sent`, kept as `kept`: with `…` when it was
/// cut.
fn shown_name(sent: &str, kept: &str) -> String {
    if sent.len() > kept.len() && sent.starts_with(kept) {
        format!("{kept}…")
    } else {
        kept.to_string()
    }
}

/// The first [`MAX_NAME_BYTES`] of `name`, on a character boundary.
fn kept_name(name: &str) -> &str {
    &name[..name.floor_char_boundary(MAX_NAME_BYTES)]
}

/// `name` cut to [`MAX_NAME_BYTES`], with `…` when it was cut.
fn bounded_name(name: &str) -> String {
    shown_name(name, kept_name(name))
}

/// Resolution of the per-model score quantiles.
const QUANTILE_BINS: usize = 1000;
/// Bins of the report's grounding-score histogram (width 0.1).
pub const HISTOGRAM_BINS: usize = 10;

/// One (provider, model) row of the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ModelRow {
    pub provider: String,
    pub model: String,
    pub records: u64,
    pub accepted: u64,
    pub retry: u64,
    pub rejected: u64,
    pub dead_letter: u64,
    /// Records with at least one finding of the kind.
    pub malformed: u64,
    pub out_of_range: u64,
    pub unsupported_claim: u64,
    pub scored: u64,
    pub mean_score: Option<f64>,
    pub p10_score: Option<f64>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Every attempt's cost, retries included.
    pub cost_usd: f64,
    #[serde(skip)]
    score_sum: f64,
    #[serde(skip)]
    score_bins: Vec<u32>,
}

impl ModelRow {
    /// Prompt and completion tokens together, saturating like each.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    pub fn rate(&self, n: u64) -> f64 {
        if self.records == 0 {
            0.0
        } else {
            n as f64 / self.records as f64
        }
    }
}

/// Records whose outcome differs between two policies.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    pub changed: u64,
    pub transitions: Vec<Transition>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Transition {
    pub from: String,
    pub to: String,
    pub count: u64,
    /// The first few request ids (input order).
    pub examples: Vec<String>,
}

/// `summary.json`: everything the HTML report shows, as data.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReportData {
    /// The inputs' names, joined by ", ".
    pub input: String,
    /// Each input's name, in the order read (`input.topic` of its records).
    pub inputs: Vec<String>,
    pub policy_version: String,
    pub min_support: f64,
    /// What an unsupported claim does under the policy: `warn`, `retry` or
    /// `reject` (the `[grounding] unsupported_claim` setting).
    pub unsupported_claim_action: String,
    /// Which model gave the supports: `shipped`, or `configured` (one set
    /// in `[grounding] coefficients`).
    pub grounding_model: String,
    pub records: u64,
    pub outcomes: BTreeMap<String, u64>,
    pub findings: BTreeMap<String, u64>,
    pub dead_letters: BTreeMap<String, u64>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    /// Records with a grounding score, and their score histogram
    /// (`HISTOGRAM_BINS` bins of width 0.1; 1.0 falls in the last).
    pub scored: u64,
    pub score_histogram: Vec<u64>,
    /// Records judged (not dead letters) that hold at least one citation
    /// marker; for a note of `check`, not written to summary.json.
    #[serde(skip)]
    pub cited: u64,
    pub models: Vec<ModelRow>,
    pub worst: Vec<WorstAnswer>,
    pub comparison: Option<Comparison>,
    /// Usage totals (`prompt_tokens`, `completion_tokens`, `cost_usd`) that
    /// reached the largest value they can hold, overall or for a model: they
    /// stop there, so the true total is at least the value shown.
    pub saturated: Vec<&'static str>,
    /// The run id every seal of the run's `audit.jsonl` names: kept apart
    /// from the outputs (a load log, say), it lets `audit verify --run`
    /// show later that a trail is this run's and no other's.
    pub audit_run: String,
}

impl ReportData {
    pub fn count(&self, kind: OutcomeKind) -> u64 {
        self.outcomes.get(kind.as_str()).copied().unwrap_or(0)
    }

    /// Prompt and completion tokens together, saturating like each.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

/// Adds token counts, stopping at `u64::MAX` (input counts are only bounded
/// by the producer).
fn add_tokens(total: &mut u64, n: u64) {
    *total = total.saturating_add(n);
}

/// Adds costs (finite, non-negative: the core checks them), stopping at the
/// largest finite `f64` so a total never becomes infinite (no JSON number).
fn add_cost(total: &mut f64, c: f64) {
    *total = (*total + c).min(f64::MAX);
}

/// Folds outcomes into a [`ReportData`].
pub struct Aggregator {
    data: ReportData,
    /// provider → model → row.
    models: BTreeMap<String, BTreeMap<String, ModelRow>>,
    model_count: usize,
    worst_n: usize,
    /// At most `worst_n` candidates with distinct keys, unordered.
    worst: Vec<Candidate>,
    /// Kept elsewhere already (see [`Aggregator::skip_not_worse_than`]).
    bound: Option<WorstBound>,
    transitions: BTreeMap<(&'static str, &'static str), Transition>,
}

/// Examples kept per what-if transition.
const EXAMPLES: usize = 5;

impl Aggregator {
    pub fn new(input: &str, policy_version: &str, min_support: f64, worst_n: usize) -> Aggregator {
        let zeroes = |names: &mut dyn Iterator<Item = &'static str>| {
            names
                .map(|n| (n.to_string(), 0))
                .collect::<BTreeMap<_, _>>()
        };
        Aggregator {
            data: ReportData {
                input: input.to_string(),
                policy_version: policy_version.to_string(),
                min_support,
                outcomes: zeroes(&mut OutcomeKind::ALL.iter().map(|k| k.as_str())),
                findings: zeroes(&mut FindingKind::ALL.iter().map(|k| k.as_str())),
                dead_letters: zeroes(&mut DeadLetterKind::ALL.iter().map(|k| k.as_str())),
                score_histogram: vec![0; HISTOGRAM_BINS],
                ..ReportData::default()
            },
            models: BTreeMap::new(),
            model_count: 0,
            worst_n,
            worst: Vec::new(),
            bound: None,
            transitions: BTreeMap::new(),
        }
    }

    /// One record's outcome. `score` is its grounding score (None when no
    /// claim cites a source); `envelope` its final envelope, when it has one.
    /// `line` orders the worst answers among equal scores.
    pub fn add(
        &mut self,
        line: u64,
        kind: OutcomeKind,
        summary: &Summary,
        score: Option<f64>,
        envelope: Option<&[u8]>,
    ) {
        let d = &mut self.data;
        d.records += 1;
        bump(&mut d.outcomes, kind.as_str());
        for f in &summary.findings {
            bump(&mut d.findings, f.as_str());
        }
        if let Some(dl) = summary.dead_letter {
            bump(&mut d.dead_letters, dl.as_str());
        } else if summary.citations > 0 {
            d.cited += 1;
        }
        add_tokens(&mut d.prompt_tokens, summary.prompt_tokens);
        add_tokens(&mut d.completion_tokens, summary.completion_tokens);
        add_cost(&mut d.cost_usd, summary.cost_usd);
        let score = score.filter(|s| s.is_finite()).map(|s| s.clamp(0.0, 1.0));
        if let Some(s) = score {
            d.scored += 1;
            let bin = ((s * HISTOGRAM_BINS as f64) as usize).min(HISTOGRAM_BINS - 1);
            d.score_histogram[bin] += 1;
        }

        let row = self.model_row(&summary.provider, &summary.model);
        row.records += 1;
        match kind {
            OutcomeKind::Accepted => row.accepted += 1,
            OutcomeKind::Retry => row.retry += 1,
            OutcomeKind::Rejected => row.rejected += 1,
            OutcomeKind::DeadLetter => row.dead_letter += 1,
        }
        let has = |k: FindingKind| summary.findings.contains(&k);
        row.malformed += u64::from(has(FindingKind::Malformed));
        row.out_of_range += u64::from(has(FindingKind::OutOfRange));
        row.unsupported_claim += u64::from(has(FindingKind::UnsupportedClaim));
        add_tokens(&mut row.prompt_tokens, summary.prompt_tokens);
        add_tokens(&mut row.completion_tokens, summary.completion_tokens);
        add_cost(&mut row.cost_usd, summary.cost_usd);
        if let Some(s) = score {
            row.scored += 1;
            row.score_sum += s;
            row.score_bins[(s * QUANTILE_BINS as f64).round() as usize] += 1;
        }

        if let (Some(s), Some(env)) = (score, envelope) {
            let unsupported_claims = summary
                .findings
                .iter()
                .filter(|f| **f == FindingKind::UnsupportedClaim)
                .count() as u64;
            let probe = |key| Candidate {
                score: s,
                unsupported_claims,
                seq: line,
                key,
                outcome: kind,
                provider: String::new(),
                model: String::new(),
                envelope: Vec::new(),
            };
            // Most records are not among the worst: decided before the
            // envelope is read or copied.
            let p = probe(0);
            if self.bound.is_none_or(|b| p.worse_than(&b))
                && (self.worst.len() < self.worst_n || self.best_kept().is_some_and(|b| p < *b))
            {
                let c = Candidate {
                    provider: bounded_name(&summary.provider),
                    model: bounded_name(&summary.model),
                    envelope: env.to_vec(),
                    ..probe(near_duplicate_key(env))
                };
                self.keep_if_worse(c);
            }
        }
    }

    /// The least bad kept candidate: the one a worse one replaces.
    fn best_kept(&self) -> Option<&Candidate> {
        self.worst.iter().max()
    }

    /// When the worst answers kept are a full list: the least bad of them.
    /// No answer that is not worse can be among the worst of a run whose
    /// parts this one is merged with.
    pub fn worst_bound(&self) -> Option<WorstBound> {
        if self.worst.len() < self.worst_n {
            return None;
        }
        self.best_kept().map(Candidate::bound)
    }

    /// Leaves out of the worst answers any answer not worse than `bound`
    /// (from [`Aggregator::worst_bound`] of the parts merged so far): it
    /// could not be shown, and reading it costs a copy of its envelope.
    pub fn skip_not_worse_than(&mut self, bound: Option<WorstBound>) {
        self.bound = bound;
    }

    /// Keeps `c` when it is among the `worst_n` worst with distinct keys: a
    /// kept near-duplicate is replaced only by a worse one of its key.
    fn keep_if_worse(&mut self, c: Candidate) {
        if self.worst_n == 0 {
            return;
        }
        if let Some(i) = self.worst.iter().position(|k| k.key == c.key) {
            if c < self.worst[i] {
                self.worst[i] = c;
            }
            return;
        }
        if self.worst.len() < self.worst_n {
            self.worst.push(c);
            return;
        }
        let best = (0..self.worst.len()).max_by(|&a, &b| self.worst[a].cmp(&self.worst[b]));
        if let Some(i) = best
            && c < self.worst[i]
        {
            self.worst[i] = c;
        }
    }

    /// Records folded so far, and how many of them were dead letters of
    /// one of `kinds`.
    pub fn dead_letters_among(&self, kinds: &[DeadLetterKind]) -> (u64, u64) {
        let dead = kinds
            .iter()
            .map(|k| self.data.dead_letters.get(k.as_str()).copied().unwrap_or(0))
            .sum();
        (self.data.records, dead)
    }

    /// Adds a later part of the input, folded separately (one block of
    /// `check`'s pipeline): counts add up, the worst answers and the
    /// what-if examples stay the first in input order.
    pub fn merge(&mut self, other: Aggregator) {
        let d = &mut self.data;
        let o = other.data;
        d.records += o.records;
        for (mine, theirs) in [
            (&mut d.outcomes, o.outcomes),
            (&mut d.findings, o.findings),
            (&mut d.dead_letters, o.dead_letters),
        ] {
            for (k, n) in theirs {
                *mine.entry(k).or_default() += n;
            }
        }
        add_tokens(&mut d.prompt_tokens, o.prompt_tokens);
        add_tokens(&mut d.completion_tokens, o.completion_tokens);
        add_cost(&mut d.cost_usd, o.cost_usd);
        d.scored += o.scored;
        d.cited += o.cited;
        for (mine, theirs) in d.score_histogram.iter_mut().zip(o.score_histogram) {
            *mine += theirs;
        }
        for row in other.models.into_values().flat_map(|m| m.into_values()) {
            let r = self.model_row(&row.provider, &row.model);
            r.records += row.records;
            r.accepted += row.accepted;
            r.retry += row.retry;
            r.rejected += row.rejected;
            r.dead_letter += row.dead_letter;
            r.malformed += row.malformed;
            r.out_of_range += row.out_of_range;
            r.unsupported_claim += row.unsupported_claim;
            r.scored += row.scored;
            r.score_sum += row.score_sum;
            add_tokens(&mut r.prompt_tokens, row.prompt_tokens);
            add_tokens(&mut r.completion_tokens, row.completion_tokens);
            add_cost(&mut r.cost_usd, row.cost_usd);
            for (mine, theirs) in r.score_bins.iter_mut().zip(row.score_bins) {
                *mine += theirs;
            }
        }
        for c in other.worst {
            self.keep_if_worse(c);
        }
        for (key, t) in other.transitions {
            let mine = self.transitions.entry(key).or_insert_with(|| Transition {
                from: t.from.clone(),
                to: t.to.clone(),
                count: 0,
                examples: Vec::new(),
            });
            mine.count += t.count;
            let room = EXAMPLES.saturating_sub(mine.examples.len());
            mine.examples.extend(t.examples.into_iter().take(room));
        }
    }

    /// The row of (provider, model), created on first sight; past
    /// `MAX_MODELS` rows, new pairs share one `other` row. Looked up by
    /// borrowed names: this runs once per record on the writer thread.
    fn model_row(&mut self, provider: &str, model: &str) -> &mut ModelRow {
        fn name(s: &str) -> &str {
            // Dead letters and records without these fields have no names.
            if s.is_empty() { "(none)" } else { kept_name(s) }
        }
        let (mut p, mut m) = (name(provider), name(model));
        let known = |models: &BTreeMap<String, BTreeMap<String, ModelRow>>, p: &str, m: &str| {
            models.get(p).is_some_and(|ms| ms.contains_key(m))
        };
        if !known(&self.models, p, m) {
            if self.model_count >= MAX_MODELS {
                (p, m) = ("other", "other");
            }
            if !known(&self.models, p, m) {
                self.model_count += 1;
                self.models.entry(p.to_string()).or_default().insert(
                    m.to_string(),
                    ModelRow {
                        provider: shown_name(provider, p),
                        model: shown_name(model, m),
                        score_bins: vec![0; QUANTILE_BINS + 1],
                        ..ModelRow::default()
                    },
                );
            }
        }
        match self.models.get_mut(p).and_then(|ms| ms.get_mut(m)) {
            Some(row) => row,
            None => unreachable!("row inserted above"),
        }
    }

    /// One record judged under two policies (the what-if of `--compare-config`).
    pub fn compare(
        &mut self,
        request_id: Option<&str>,
        baseline: OutcomeKind,
        candidate: OutcomeKind,
    ) {
        if baseline == candidate {
            return;
        }
        let t = self
            .transitions
            .entry((baseline.as_str(), candidate.as_str()))
            .or_insert_with(|| Transition {
                from: baseline.as_str().to_string(),
                to: candidate.as_str().to_string(),
                count: 0,
                examples: Vec::new(),
            });
        t.count += 1;
        if t.examples.len() < EXAMPLES {
            t.examples
                .push(request_id.unwrap_or("(no request_id)").to_string());
        }
    }

    pub fn finish(mut self, comparison: Option<(String, String)>) -> ReportData {
        let mut rows: Vec<ModelRow> = self
            .models
            .into_values()
            .flat_map(|m| m.into_values())
            .collect();
        for r in &mut rows {
            if r.scored > 0 {
                r.mean_score = Some(r.score_sum / r.scored as f64);
                r.p10_score = Some(quantile(&r.score_bins, r.scored, 0.10));
            }
        }
        // Busiest first, then by name for a stable order.
        rows.sort_by(|a, b| {
            b.records
                .cmp(&a.records)
                .then_with(|| (&a.provider, &a.model).cmp(&(&b.provider, &b.model)))
        });
        let d = &self.data;
        let (tokens, costs) = (
            |a: u64, b: u64| a == u64::MAX || b == u64::MAX,
            |c: f64| c == f64::MAX,
        );
        self.data.saturated = [
            (
                "prompt_tokens",
                tokens(d.prompt_tokens, 0) || rows.iter().any(|r| tokens(r.prompt_tokens, 0)),
            ),
            (
                "completion_tokens",
                tokens(d.completion_tokens, 0)
                    || rows.iter().any(|r| tokens(r.completion_tokens, 0)),
            ),
            (
                "cost_usd",
                costs(d.cost_usd) || rows.iter().any(|r| costs(r.cost_usd)),
            ),
        ]
        .into_iter()
        .filter_map(|(name, hit)| hit.then_some(name))
        .collect();
        self.data.models = rows;
        let min_support = self.data.min_support;
        self.worst.sort();
        self.data.worst = self
            .worst
            .into_iter()
            .map(|c| worst_answer(c, min_support))
            .collect();
        self.data.comparison = comparison.map(|(baseline, candidate)| {
            let transitions: Vec<Transition> = self.transitions.into_values().collect();
            Comparison {
                baseline,
                candidate,
                changed: transitions.iter().map(|t| t.count).sum(),
                transitions,
            }
        });
        self.data
    }
}

fn bump(counts: &mut BTreeMap<String, u64>, key: &str) {
    match counts.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            counts.insert(key.to_string(), 1);
        }
    }
}

/// The `q` quantile from a histogram of `QUANTILE_BINS + 1` bins over [0, 1].
fn quantile(bins: &[u32], n: u64, q: f64) -> f64 {
    let rank = ((n as f64 * q).ceil() as u64).max(1);
    let mut seen = 0u64;
    for (i, &c) in bins.iter().enumerate() {
        seen += u64::from(c);
        if seen >= rank {
            return i as f64 / QUANTILE_BINS as f64;
        }
    }
    1.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn summary(provider: &str, model: &str, findings: Vec<FindingKind>, cost: f64) -> Summary {
        Summary {
            mode: None,
            attempt: 0,
            findings,
            dead_letter: None,
            citations: 0,
            provider: provider.into(),
            model: model.into(),
            prompt_tokens: 10,
            completion_tokens: 5,
            cost_usd: cost,
            grounding_score: None,
        }
    }

    #[test]
    fn usage_totals_saturate_and_are_listed() {
        let mut big = summary("p", "m", vec![], 1.7e308);
        big.prompt_tokens = u64::MAX;
        let mut a = Aggregator::new("in", "v", 0.6, 3);
        let mut b = Aggregator::new("in", "v", 0.6, 3);
        for agg in [&mut a, &mut b] {
            for i in 0..2 {
                agg.add(i, OutcomeKind::Accepted, &big, None, None);
            }
        }
        a.merge(b);
        let d = a.finish(None);
        assert_eq!(d.prompt_tokens, u64::MAX);
        assert_eq!(d.cost_usd, f64::MAX);
        assert_eq!(d.completion_tokens, 20);
        assert_eq!(d.models[0].prompt_tokens, u64::MAX);
        assert_eq!(d.tokens(), u64::MAX);
        assert_eq!(d.saturated, ["prompt_tokens", "cost_usd"]);
        let clean = Aggregator::new("in", "v", 0.6, 3).finish(None);
        assert!(clean.saturated.is_empty());
    }

    #[test]
    fn per_model_rates_costs_and_quantiles() {
        let mut a = Aggregator::new("in.jsonl", "v1", 0.5, 3);
        for i in 0..10 {
            let kind = if i < 7 {
                OutcomeKind::Accepted
            } else {
                OutcomeKind::Retry
            };
            let f = if i == 9 {
                vec![FindingKind::Malformed]
            } else {
                vec![]
            };
            a.add(
                1,
                kind,
                &summary("openai", "gpt", f, 0.5),
                Some(i as f64 / 10.0),
                None,
            );
        }
        a.add(
            2,
            OutcomeKind::Rejected,
            &summary("anthropic", "claude", vec![], 1.0),
            None,
            None,
        );
        let d = a.finish(None);
        assert_eq!(d.records, 11);
        assert_eq!(d.outcomes["accepted"], 7);
        assert_eq!(d.outcomes["dead_letter"], 0, "zero-filled");
        assert_eq!(d.findings["malformed"], 1);
        assert_eq!(d.models[0].model, "gpt");
        let gpt = &d.models[0];
        assert_eq!((gpt.accepted, gpt.retry, gpt.malformed), (7, 3, 1));
        assert!((gpt.cost_usd - 5.0).abs() < 1e-9);
        assert!((gpt.mean_score.unwrap() - 0.45).abs() < 1e-9);
        assert_eq!(gpt.p10_score, Some(0.0));
        assert_eq!(d.models[1].mean_score, None);
        assert_eq!(d.scored, 10);
        assert_eq!(d.score_histogram.iter().sum::<u64>(), 10);
        assert!((d.cost_usd - 6.0).abs() < 1e-9);
    }

    #[test]
    fn merging_block_folds_equals_one_fold() {
        let rec = |i: u64| {
            let kind = OutcomeKind::ALL[(i % 4) as usize];
            let f = if i.is_multiple_of(3) {
                vec![FindingKind::OutOfRange]
            } else {
                vec![]
            };
            let model = format!("m{}", i % 5);
            (
                kind,
                summary("p", &model, f, 0.25),
                Some((i % 10) as f64 / 10.0),
            )
        };
        let env =
            |i: u64| serde_json::json!({"answer": "a", "request_id": format!("r{i}")}).to_string();
        let mut whole = Aggregator::new("in", "v", 0.5, 3);
        let mut merged = Aggregator::new("in", "v", 0.5, 3);
        let mut part = Aggregator::new("", "", 0.5, 3);
        for i in 0..100u64 {
            let (k, s, sc) = rec(i);
            let e = env(i);
            whole.add(i, k, &s, sc, Some(e.as_bytes()));
            whole.compare(Some(&format!("r{i}")), OutcomeKind::Accepted, k);
            part.add(i, k, &s, sc, Some(e.as_bytes()));
            part.compare(Some(&format!("r{i}")), OutcomeKind::Accepted, k);
            if i % 7 == 6 {
                merged.merge(std::mem::replace(
                    &mut part,
                    Aggregator::new("", "", 0.5, 3),
                ));
            }
        }
        merged.merge(part);
        let names = Some(("a".to_string(), "b".to_string()));
        let a = serde_json::to_value(whole.finish(names.clone())).unwrap();
        let b = serde_json::to_value(merged.finish(names)).unwrap();
        // Sums of floats are added in another order: equal to 1e-9.
        fn close(a: &Value, b: &Value) -> bool {
            match (a, b) {
                (Value::Number(x), Value::Number(y)) => {
                    (x.as_f64().unwrap() - y.as_f64().unwrap()).abs() < 1e-9
                }
                (Value::Array(x), Value::Array(y)) => {
                    x.len() == y.len() && x.iter().zip(y).all(|(a, b)| close(a, b))
                }
                (Value::Object(x), Value::Object(y)) => {
                    x.len() == y.len()
                        && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| close(v, w)))
                }
                _ => a == b,
            }
        }
        assert!(close(&a, &b), "{a}\n{b}");
    }

    /// Record `i` of a stream whose answers repeat (near-duplicates share
    /// a key) and whose scores and unsupported counts tie often.
    fn scored(i: u64) -> (Summary, f64, String) {
        let uns = (i % 3) as usize;
        let s = summary("p", "m", vec![FindingKind::UnsupportedClaim; uns], 0.0);
        let score = ((i * 37) % 11) as f64 / 10.0;
        let env = serde_json::json!({"answer": format!("Answer number {}.", i % 41)});
        (s, score, env.to_string())
    }

    #[test]
    fn parts_skipping_answers_not_worse_than_the_merged_worst_keep_the_same_worst() {
        for n in [1, 5, 12] {
            let mut whole = Aggregator::new("in", "v", 0.5, n);
            let mut merged = Aggregator::new("in", "v", 0.5, n);
            let mut part = Aggregator::new("", "", 0.5, n);
            let mut skipped_some = false;
            for i in 0..400u64 {
                let (s, score, env) = scored(i);
                whole.add(
                    i,
                    OutcomeKind::Accepted,
                    &s,
                    Some(score),
                    Some(env.as_bytes()),
                );
                part.add(
                    i,
                    OutcomeKind::Accepted,
                    &s,
                    Some(score),
                    Some(env.as_bytes()),
                );
                if i % 17 == 16 {
                    skipped_some |= part.worst.len() < n;
                    merged.merge(std::mem::replace(
                        &mut part,
                        Aggregator::new("", "", 0.5, n),
                    ));
                    part.skip_not_worse_than(merged.worst_bound());
                }
            }
            merged.merge(part);
            assert!(skipped_some, "the bound left a part short of {n}");
            let (a, b) = (whole.finish(None), merged.finish(None));
            assert_eq!(a.worst.len(), n);
            assert_eq!(
                serde_json::to_value(&a.worst).unwrap(),
                serde_json::to_value(&b.worst).unwrap(),
                "worst {n}"
            );
        }
    }

    #[test]
    fn an_answer_not_worse_than_the_bound_is_left_out() {
        let (s, _, env) = scored(0);
        let mut first = Aggregator::new("", "", 0.5, 1);
        assert_eq!(first.worst_bound(), None, "not a full list yet");
        first.add(
            1,
            OutcomeKind::Accepted,
            &s,
            Some(0.2),
            Some(env.as_bytes()),
        );
        let bound = first.worst_bound();
        assert!(bound.is_some());
        let mut later = Aggregator::new("", "", 0.5, 1);
        later.skip_not_worse_than(bound);
        // Same score and claims, later in the input: not worse.
        later.add(
            2,
            OutcomeKind::Accepted,
            &s,
            Some(0.2),
            Some(env.as_bytes()),
        );
        assert!(later.worst.is_empty());
        later.add(
            3,
            OutcomeKind::Accepted,
            &s,
            Some(0.1),
            Some(env.as_bytes()),
        );
        assert_eq!(later.worst.len(), 1);
    }

    #[test]
    fn models_past_the_cap_share_one_other_row() {
        let mut a = Aggregator::new("in", "v", 0.5, 0);
        for i in 0..MAX_MODELS + 50 {
            let model = format!("m{i}");
            a.add(
                3,
                OutcomeKind::Accepted,
                &summary("p", &model, vec![], 0.0),
                None,
                None,
            );
            a.add(
                4,
                OutcomeKind::Accepted,
                &summary("p", &model, vec![], 0.0),
                None,
                None,
            );
        }
        a.add(
            5,
            OutcomeKind::Accepted,
            &summary("", "", vec![], 0.0),
            None,
            None,
        );
        let d = a.finish(None);
        assert_eq!(d.models.len(), MAX_MODELS + 1);
        assert_eq!(d.models[0].model, "other");
        assert_eq!(d.models[0].records, 101);
        assert_eq!(d.models.iter().map(|m| m.records).sum::<u64>(), d.records);
    }

    #[test]
    fn a_long_provider_or_model_name_is_kept_cut() {
        let long = format!("{}é{}", "<".repeat(MAX_NAME_BYTES - 1), "x".repeat(1 << 20));
        let mut a = Aggregator::new("in", "v", 0.5, 3);
        let mut b = Aggregator::new("in", "v", 0.5, 3);
        let env = r#"{"answer":"A.","request_id":"r","sources_flat":[]}"#;
        a.add(
            1,
            OutcomeKind::Accepted,
            &summary(&long, &long, vec![], 0.0),
            Some(0.1),
            Some(env.as_bytes()),
        );
        // Another name with the same first bytes shares its row, also once
        // the parts of the input are merged.
        let other = format!("{long}other");
        b.add(
            2,
            OutcomeKind::Accepted,
            &summary(&other, "m", vec![], 0.0),
            None,
            None,
        );
        b.add(
            3,
            OutcomeKind::Accepted,
            &summary(&other, &long, vec![], 0.0),
            None,
            None,
        );
        a.merge(b);
        let d = a.finish(None);
        // The cut falls before the two-byte `é` that would cross the limit.
        let kept = format!("{}…", "<".repeat(MAX_NAME_BYTES - 1));
        let rows: Vec<(&str, &str, u64)> = d
            .models
            .iter()
            .map(|m| (m.provider.as_str(), m.model.as_str(), m.records))
            .collect();
        assert!(
            rows.contains(&(kept.as_str(), kept.as_str(), 2)),
            "{rows:?}"
        );
        assert!(rows.contains(&(kept.as_str(), "m", 1)), "{rows:?}");
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(
            (d.worst[0].provider.as_str(), d.worst[0].model.as_str()),
            (kept.as_str(), kept.as_str())
        );
        let json = serde_json::to_string(&d).unwrap();
        assert!(json.len() < 10_000, "{} bytes", json.len());
    }

    #[test]
    fn keeps_the_worst_answers_lowest_first_with_flagged_claims() {
        let mut a = Aggregator::new("in", "v", 0.5, 2);
        let env = |id: &str, support: f64| {
            serde_json::json!({
                // Each answer its own: near-duplicates would be shown once.
                "answer": format!("Good claim[^1]. Bad claim[^1]. Answer {id}."),
                "request_id": id,
                "sources_flat": [{"payload": "good claim", "urn": "u1"}],
                "grounding": {"claims": [
                    {"markers": [1], "span": [0, 15], "support": 1.0, "unsupported_terms": []},
                    {"markers": [1], "span": [16, 30], "support": support, "unsupported_terms": ["bad"]}
                ], "score": support}
            })
            .to_string()
        };
        for (id, s) in [("a", 0.4), ("b", 0.1), ("c", 0.9), ("d", 0.2)] {
            let e = env(id, s);
            a.add(
                6,
                OutcomeKind::Accepted,
                &summary("p", "m", vec![], 0.0),
                Some(s),
                Some(e.as_bytes()),
            );
        }
        let d = a.finish(None);
        let ids: Vec<_> = d.worst.iter().map(|w| w.request_id.as_str()).collect();
        assert_eq!(ids, ["b", "d"]);
        let segs = &d.worst[0].segments;
        assert_eq!(segs.len(), 4);
        assert!(!segs[0].flagged && segs[2].flagged && !segs[3].flagged);
        assert_eq!(segs[2].text, "Bad claim[^1].");
        assert_eq!(
            segs[2].missing,
            ["bad"],
            "the missing terms go with the sentence"
        );
        assert!(segs[0].missing.is_empty());
        assert_eq!(d.worst[0].sources[0].urn, "u1");
    }

    #[test]
    fn near_duplicates_share_a_key() {
        let key = |answer: &str| {
            near_duplicate_key(
                serde_json::json!({ "answer": answer })
                    .to_string()
                    .as_bytes(),
            )
        };
        let a = key("Revenue fell 5%[^1]. Churn rose in March[^2].");
        // Other markers, case, order and repetition: the same sentences.
        assert_eq!(
            a,
            key("churn rose in march[^1]. Revenue fell 5%[^2]. Revenue fell 5%.")
        );
        // A number inside a sentence does not end it.
        assert_ne!(
            key("Latency rose to 1.9 s[^1]."),
            key("Latency rose to 1[^1]. 9 s.")
        );
        // Another sentence is another answer.
        assert_ne!(a, key("Revenue fell 5%[^1]. Churn rose in April[^2]."));
        assert_ne!(a, key("Revenue fell 5%[^1]."));
        // The answer read alone (first key) and from a whole parse agree,
        // escapes included.
        let answer = "He said \"hi\"\\n, twice[^1].\nThen left[^2].";
        let first = serde_json::json!({ "answer": answer, "zeta": 1 }).to_string();
        let later = serde_json::json!({ "aaa": 1, "answer": answer }).to_string();
        assert!(first.starts_with(r#"{"answer":"#), "{first}");
        assert_eq!(
            near_duplicate_key(first.as_bytes()),
            near_duplicate_key(later.as_bytes())
        );
        assert_ne!(near_duplicate_key(first.as_bytes()), key("He said hi."));
        // Letters past ASCII are lower-cased too, and stay themselves.
        assert_eq!(key("Ärger über Café[^1]."), key("ärger ÜBER café[^3]."));
        assert_ne!(key("Ärger über Café[^1]."), key("Arger uber Cafe[^1]."));
    }

    /// The near-duplicate key computed character by character, each
    /// sentence's words in a `String`: the reference for the byte scan.
    fn reference_key(answer: &str) -> u64 {
        let mut sentences: Vec<u64> = Vec::new();
        let mut words = String::new();
        let mut in_word = false;
        let mut chars = answer.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if answer[i..].starts_with("[^")
                && let Some(close) = answer[i + 2..].find(']')
            {
                while chars.peek().is_some_and(|&(j, _)| j <= i + 2 + close) {
                    chars.next();
                }
                continue;
            }
            if c.is_alphanumeric() {
                if !in_word {
                    words.push(' ');
                }
                words.extend(c.to_lowercase());
                in_word = true;
                continue;
            }
            in_word = false;
            let next = chars.peek().map(|&(_, n)| n);
            if c == '\n'
                || (matches!(c, '.' | '!' | '?')
                    && next.is_none_or(|n| n.is_whitespace() || n == '['))
            {
                if !words.is_empty() {
                    sentences.push(crate::core::terms::term_hash(&words));
                }
                words.clear();
            }
        }
        if !words.is_empty() {
            sentences.push(crate::core::terms::term_hash(&words));
        }
        sentences.sort_unstable();
        sentences.dedup();
        sentences.iter().fold(sentences.len() as u64, |h, &s| {
            (h.rotate_left(5) ^ s).wrapping_mul(0x517c_c1b7_2722_0a95)
        })
    }

    proptest::proptest! {
        #[test]
        fn the_near_duplicate_key_matches_the_character_scan(
            answer in "([a-zA-Z0-9 .!?\\[\\]^\n\t\u{0B}]|Ä|é|ß|İ|\u{2009}|\u{00A0}|。|ǅ|[^1]|\\[\\^2\\]){0,80}",
        ) {
            let env = serde_json::json!({ "answer": answer }).to_string();
            proptest::prop_assert_eq!(near_duplicate_key(env.as_bytes()), reference_key(&answer));
        }
    }

    #[test]
    fn worst_answers_keep_one_per_near_duplicate_and_prefer_more_unsupported_claims() {
        let mut a = Aggregator::new("in", "v", 0.5, 3);
        let env = |id: &str, answer: &str| {
            serde_json::json!({"answer": answer, "request_id": id}).to_string()
        };
        let unsupported = |n: usize| vec![FindingKind::UnsupportedClaim; n];
        let records = [
            ("a", "One[^1]. Two[^1].", 1),
            ("b", "Two[^1]. One[^1]. One[^1].", 3),
            ("c", "Three[^1].", 2),
            ("d", "Four[^1].", 1),
            ("e", "Five[^1].", 0),
        ];
        for (i, (id, answer, n)) in records.into_iter().enumerate() {
            let e = env(id, answer);
            a.add(
                i as u64,
                OutcomeKind::Accepted,
                &summary("p", "m", unsupported(n), 0.0),
                Some(0.0),
                Some(e.as_bytes()),
            );
        }
        let d = a.finish(None);
        let ids: Vec<_> = d.worst.iter().map(|w| w.request_id.as_str()).collect();
        // All score 0: most unsupported claims first; "a" is "b" again.
        assert_eq!(ids, ["b", "c", "d"]);
        assert_eq!(d.worst[0].unsupported_claims, 3);
    }

    #[test]
    fn comparison_counts_transitions_with_examples() {
        let mut a = Aggregator::new("in", "v", 0.5, 0);
        for i in 0..7 {
            let id = format!("r{i}");
            a.compare(Some(&id), OutcomeKind::Accepted, OutcomeKind::Rejected);
        }
        a.compare(Some("same"), OutcomeKind::Retry, OutcomeKind::Retry);
        a.compare(None, OutcomeKind::Accepted, OutcomeKind::Retry);
        let c = a
            .finish(Some(("old.toml".into(), "new.toml".into())))
            .comparison
            .unwrap();
        assert_eq!(c.changed, 8);
        assert_eq!(c.transitions[0].count, 7);
        assert_eq!(c.transitions[0].examples.len(), EXAMPLES);
        assert_eq!(c.transitions[1].examples, ["(no request_id)"]);
    }
}
