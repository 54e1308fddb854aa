//! The fitted model: how a claim's evidence features combine into its
//! support, a logistic regression whose coefficients are fitted on labelled
//! data by `groundgate eval --fit` (which prints this table) and pasted
//! here. A deployment may run with coefficients fitted on its own answers
//! instead (`grounding.coefficients`, carried in the settings). Pure
//! arithmetic; it must not compute features (that is `score`).

/// Number of evidence features of a claim (see [`FEATURE_NAMES`]).
pub const FEATURES: usize = 3;

/// What each feature is, in order; `eval --fit` prints the coefficients
/// under these names.
/// - `found`: the share of the claim's content terms found in its cited
///   sources, counted with three more words at the answer's share (a short
///   claim says little on its own);
/// - `entity_missing`: 1 when a name the claim states is not found;
/// - `answer_words_found`: the share of all the answer's cited words found,
///   function words included (how closely the answer keeps to the sources'
///   wording).
pub const FEATURE_NAMES: [&str; FEATURES] = ["found", "entity_missing", "answer_words_found"];

/// The names of a model's coefficients, in the order of [`COEFFICIENTS`]:
/// `intercept`, then each feature. `eval --fit` prints them and
/// `grounding.coefficients` is keyed by them.
pub fn coefficient_names() -> impl Iterator<Item = &'static str> {
    std::iter::once("intercept").chain(FEATURE_NAMES)
}

/// The shipped model: intercept, then one coefficient per feature.
pub const COEFFICIENTS: [f64; FEATURES + 1] = [
    -3.3959, // intercept
    2.6741,  // found
    -2.2899, // entity_missing
    1.9135,  // answer_words_found
];

/// Probability that a claim with these features is supported.
pub fn probability(features: &[f64; FEATURES], coefficients: &[f64; FEATURES + 1]) -> f64 {
    let z = features
        .iter()
        .zip(&coefficients[1..])
        .fold(coefficients[0], |z, (x, w)| z + x * w);
    1.0 / (1.0 + (-z).exp())
}

/// Highest support of a claim that breaks a strict rule (a number or a
/// negation the sources contradict, a word they say of another name, …).
pub const BROKEN: f64 = 0.25;

/// A claim's support from its evidence: 1 when every word and pair is
/// found; the model's probability, scaled down to at most [`BROKEN`] when a
/// strict rule is broken (flagged at any `min_support` above that, yet
/// still ranked by its evidence); else the model's probability.
pub fn support_of(e: &super::Evidence, coefficients: &[f64; FEATURES + 1]) -> f64 {
    match e.rule {
        Some(r) if r >= 1.0 => 1.0,
        Some(_) => BROKEN * probability(&e.features, coefficients),
        None => probability(&e.features, coefficients),
    }
}
