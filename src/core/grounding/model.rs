//! The fitted model: how a claim's evidence features combine into its
//! support, a logistic regression whose coefficients are fitted on labelled
//! data by `groundgate eval --fit` (which prints this table) and pasted
//! here. Pure arithmetic; it must not compute features (that is `score`).

/// Number of evidence features of a claim (see [`FEATURE_NAMES`]).
pub const FEATURES: usize = 9;

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
];

/// Intercept, then one coefficient per feature.
pub const COEFFICIENTS: [f64; FEATURES + 1] = [-4.0, 4.0, -1.5, -1.0, 2.0, 1.0, 1.0, 0.0, 0.5, -0.5];

/// Probability that a claim with these features is supported.
pub fn probability(features: &[f64; FEATURES], coefficients: &[f64; FEATURES + 1]) -> f64 {
    let z = features
        .iter()
        .zip(&coefficients[1..])
        .fold(coefficients[0], |z, (x, w)| z + x * w);
    1.0 / (1.0 + (-z).exp())
}
