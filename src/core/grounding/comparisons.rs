//! Comparisons a claim states: "Kim Clijsters is older than Mary Pierce",
//! "Pablo Trapero was born first", "The airport is closer". Such a claim
//! says how two things stand to each other; a source that gives each
//! one's facts (two birth dates, two distances) does not state it, and a
//! lexical check cannot work it out. When the cited sources lack the
//! comparative, the comparison is the claim's own, as a number they lack
//! is: the claim breaks a strict rule.
//!
//! Only a comparative said of the claim's subject counts: one followed by
//! "than", or one that ends its sentence after the word it is said with
//! ("born first", "ranks higher"). One that describes a noun ("the younger
//! sister", "a larger volume of blood", "higher-level processes") names a
//! thing, and is an ordinary word to find.
//!
//! A pure test of the claim's text; it must not read a source (the scorer
//! knows whether the sources hold the word).

use super::lexicon::{letters_before, packed_sorted, packed_word};

/// Comparatives of age, size, rank, distance, time and degree, as
/// written. Left out: "more", "less" and "fewer" (quantities, mostly
/// before a number the number rule checks), "last" (also a verb: "did not
/// last"), "further" (also "in addition").
const COMPARATIVES: [&str; 37] = [
    "older", "younger", "elder", "larger", "smaller", "bigger", "greater", "higher", "lower",
    "taller", "shorter", "longer", "closer", "nearer", "farther", "earlier", "later", "first",
    "faster", "slower", "cheaper", "richer", "poorer", "heavier", "lighter", "wider", "narrower",
    "deeper", "stronger", "weaker", "better", "worse", "newer", "warmer", "colder", "hotter",
    "cooler",
];

/// [`COMPARATIVES`] packed (see `lexicon::packed_word`), sorted: one
/// search of numbers, no byte comparisons.
const PACKED: [u128; COMPARATIVES.len()] = packed_sorted(&COMPARATIVES);

/// Words before a comparative that make it describe a noun ("the younger
/// sister"), join a list or range ("65 and older"), or say when ("two
/// years later": a span, whose number the number rule checks).
const NOT_STATED_AFTER: [&[u8]; 30] = [
    b"the",
    b"a",
    b"an",
    b"its",
    b"their",
    b"his",
    b"her",
    b"our",
    b"my",
    b"your",
    b"this",
    b"that",
    b"these",
    b"those",
    b"and",
    b"or",
    b"year",
    b"years",
    b"month",
    b"months",
    b"week",
    b"weeks",
    b"day",
    b"days",
    b"decade",
    b"decades",
    b"century",
    b"centuries",
    b"hours",
    b"minutes",
];

/// Whether the word at `at..at + len` of the answer `text` is a
/// comparative the claim states of its subject: after a word of its own
/// sentence that is not one of [`NOT_STATED_AFTER`], and followed by
/// "than" in a claim that `asks` no question, or by the end of a sentence
/// that is not a question (a citation marker, quotes or a bracket may come
/// between). Reads the text no further than the sentence's end.
pub(super) fn states_comparison(text: &[u8], at: usize, len: usize, asks: bool) -> bool {
    let Some(word) = text.get(at..at + len) else {
        return false;
    };
    // Most missing words stop at the length; the rest cost one search.
    if !(5..=8).contains(&len) || PACKED.binary_search(&packed_word(word, 0x20)).is_err() {
        return false;
    }
    // The word before, one or more spaces back.
    if !text[..at].last().is_some_and(u8::is_ascii_whitespace) {
        return false;
    }
    let previous = letters_before(text, at);
    if previous.is_empty()
        || NOT_STATED_AFTER
            .iter()
            .any(|w| previous.eq_ignore_ascii_case(w))
    {
        return false;
    }
    let after = &text[at + len..];
    if opens_with_than(after) {
        // "Is it older than …?" asks; it does not state.
        return !asks;
    }
    matches!(
        sentence_close(after),
        None | Some(b'.' | b'!' | b';' | b':')
    )
}

/// Whether the word at `at..at + len` of `text` is a comparative of the
/// list with "than" after it ("larger than"): a comparison of two things
/// whose order a source may state the other way round.
pub(super) fn compares_than(text: &[u8], at: usize, len: usize) -> bool {
    (5..=8).contains(&len)
        && text.get(at..at + len).is_some_and(|word| {
            PACKED.binary_search(&packed_word(word, 0x20)).is_ok()
                && opens_with_than(&text[at + len..])
        })
}

/// Whether `after`, past spaces, opens with the word "than".
pub(super) fn opens_with_than(after: &[u8]) -> bool {
    let after = after.trim_ascii_start();
    after.len() >= 4
        && after[..4].eq_ignore_ascii_case(b"than")
        && after.get(4).is_none_or(|b| !b.is_ascii_alphanumeric())
}

/// The first byte of `after` past citation markers (`[^2]`), closing
/// quotes and brackets, and spaces: `None` at the end of the text.
fn sentence_close(mut after: &[u8]) -> Option<u8> {
    loop {
        after = after.trim_ascii_start();
        match after.first() {
            Some(b'"' | b'\'' | b')') => after = &after[1..],
            Some(b'[') if after.get(1) == Some(&b'^') => {
                let close = after.iter().position(|&b| b == b']')?;
                if !after[2..close].iter().all(u8::is_ascii_digit) {
                    return Some(b'[');
                }
                after = &after[close + 1..];
            }
            other => return other.copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{COMPARATIVES, states_comparison};
    use crate::core::grounding::index::asks_question;

    #[test]
    fn every_comparative_is_found_in_any_case() {
        for c in COMPARATIVES {
            assert!((5..=8).contains(&c.len()), "{c:?}");
            for w in [c.to_string(), c.to_ascii_uppercase()] {
                let text = format!("It is {w}.");
                assert!(
                    states_comparison(text.as_bytes(), 6, w.len(), false),
                    "{c:?}"
                );
            }
        }
    }

    /// The comparative of `claim` (the first word of the list in it) and
    /// whether it is stated.
    fn stated(claim: &str, word: &str) -> bool {
        let at = claim.find(word).expect("the word is in the claim");
        let asks = asks_question(claim.as_bytes());
        states_comparison(claim.as_bytes(), at, word.len(), asks)
    }

    #[test]
    fn a_comparison_said_of_the_subject_is_stated() {
        for (claim, word) in [
            ("Kim Clijsters is older than Mary Pierce[^1].", "older"),
            ("Pablo Trapero was born first[^1].", "first"),
            (
                "Children's National Medical Center ranks higher[^1].",
                "higher",
            ),
            ("WNP-3 and WNP-5 were constructed much later[^1].", "later"),
            ("The airport is closer.", "closer"),
            (
                "The demand is much higher than that for hearts[^2].",
                "higher",
            ),
            ("Its fees are lower than its rival's", "lower"),
            ("The bank's margin was wider[^1][^3].", "wider"),
            ("(Its fees are \"much cheaper\")[^1].", "cheaper"),
            ("Net income was HIGHER than expected[^1].", "HIGHER"),
        ] {
            assert!(stated(claim, word), "{claim}");
        }
    }

    #[test]
    fn a_comparative_naming_a_thing_or_a_time_is_an_ordinary_word() {
        for (claim, word) in [
            (
                "Lady Amelia is the younger sister of Edward Windsor[^1].",
                "younger",
            ),
            ("It pushes out a larger volume of blood[^1].", "larger"),
            (
                "Anatase shows higher photocatalytic performance[^1].",
                "higher",
            ),
            (
                "Executive functions are the higher-level processes[^1].",
                "higher",
            ),
            ("He moved to Paris two years later[^1].", "later"),
            ("It is open to people aged 65 and older[^1].", "older"),
            ("First, the bank raised its rates[^1].", "First"),
            ("Later, he moved to Paris[^1].", "Later"),
            ("Which of the two is older[^1]?", "older"),
            ("Is the track shorter than 6 km[^1]?", "shorter"),
            ("The first album sold well[^1].", "first"),
            ("He was born first, in 1971[^1].", "first"),
            ("Revenue rose, and so did margins, higher[^1].", "higher"),
            ("The fund was older[^x].", "older"),
            ("Its share of sales grew more than rivals'[^1].", "more"),
        ] {
            assert!(!stated(claim, word), "{claim}");
        }
    }
}
