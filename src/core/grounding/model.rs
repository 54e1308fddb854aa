//! The fitted model: how a claim's evidence features combine into its
//! support, a logistic regression whose coefficients are fitted on labelled
//! data by `groundgate eval --fit` (which prints this table) and pasted
//! here. Pure arithmetic; it must not compute features (that is `score`).

/// Number of evidence features of a claim (see [`FEATURE_NAMES`]).
pub const FEATURES: usize = 16;

/// What each feature is, in order; `eval --fit` prints the coefficients
/// under these names.
pub const FEATURE_NAMES: [&str; FEATURES] = [
    "found",
    "entity_missing",
    "entity_missing_share",
    "pairs",
    "best_sentence",
    "best_two_sentences",
    "length",
    "function_words",
    "missing",
    "entity_aside",
    "pairs_missing",
    "short_scattered",
    "short_pairs_missing",
    "source_sentences",
    "answer_found",
    "answer_words_found",
];

/// Intercept, then one coefficient per feature.
pub const COEFFICIENTS: [f64; FEATURES + 1] = [
    -2.2261, // intercept
    -0.2450, // found
    -2.9335, // entity_missing
    1.2167,  // entity_missing_share
    0.2167,  // pairs
    0.0115,  // best_sentence
    0.2931,  // best_two_sentences
    0.5821,  // length
    -0.1358, // function_words
    -0.2057, // missing
    -0.4554, // entity_aside
    -0.2439, // pairs_missing
    -0.8003, // short_scattered
    -1.2944, // short_pairs_missing
    0.0832,  // source_sentences
    1.4172,  // answer_found
    1.1263,  // answer_words_found
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
/// negation the sources contradict).
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
