//! Phrasal verbs read as the one verb they mean: "stepped down" as
//! "resign", "bought back" as "repurchase", "passed away" as "die", so a
//! claim in one wording is found in a source in the other, and a phrase
//! found in both is found as one word.
//!
//! Only a verb followed at once by its particle ("stepped down", not
//! "stepped slowly down" nor "paid the loan back"), and only phrases with
//! one reading in the text grounding sees: "took over" (bought, or
//! succeeded) and "gave up" are left as their words. Claims and sources
//! read a phrase alike, as a run of words read as one, the way a spelled
//! number is ("twenty-one": see `lexicon::run_read_as_one`); the word
//! memo marks each verb, so other words never reach [`phrase`].
//!
//! Pure and fixed: it reads the text after the verb and nothing else; it
//! must not look at a source's other words nor keep state.

/// Each phrase: the verb's forms, its particle, and the verb read in its
/// place (a base form; claims and sources stem it, so "resign" finds
/// "resigned").
const PHRASES: &[(&[&str], &str, &str)] = &[
    (&["step", "steps", "stepped", "stepping"], "down", "resign"),
    (&["pass", "passes", "passed", "passing"], "away", "die"),
    (&["buy", "buys", "bought", "buying"], "back", "repurchase"),
    (&["pay", "pays", "paid", "paying"], "back", "repay"),
    (
        &["carry", "carries", "carried", "carrying"],
        "out",
        "conduct",
    ),
    (&["find", "finds", "found", "finding"], "out", "discover"),
    (&["call", "calls", "called", "calling"], "off", "cancel"),
    (&["turn", "turns", "turned", "turning"], "down", "reject"),
    (
        &["take", "takes", "took", "taken", "taking"],
        "part",
        "participate",
    ),
    (
        &["take", "takes", "took", "taken", "taking"],
        "place",
        "occur",
    ),
    (&["go", "goes", "went", "gone", "going"], "public", "list"),
    (&["shut", "shuts", "shutting"], "down", "close"),
    (&["set", "sets", "setting"], "up", "establish"),
    (&["lay", "lays", "laid", "laying"], "off", "dismiss"),
    (&["put", "puts", "putting"], "forward", "propose"),
    (&["roll", "rolls", "rolled", "rolling"], "out", "launch"),
    // Not a verb, but read the same way: "free of charge" states that
    // there is no charge, as "without charge" does, so its "without"
    // negates the word after it in claims and sources alike.
    (&["free"], "of", "without"),
];

/// Whether the case-folded word `word` is the verb of a phrase: the word
/// memo marks it, so that only such words reach [`phrase`].
pub(super) fn is_phrase_verb(word: &str) -> bool {
    // Most words are longer than any verb of the table, or start with
    // another letter: two tests before the table.
    word.len() <= 8
        && matches!(
            word.as_bytes().first(),
            Some(b'b' | b'c' | b'f' | b'g' | b'l' | b'p' | b'r' | b's' | b't' | b'w')
        )
        && PHRASES.iter().any(|(verbs, _, _)| verbs.contains(&word))
}

/// The phrase the word at `at..at + len` of `bytes` opens, when its
/// particle follows it after one space: the verb read in its place,
/// written into `out`, and where the particle ends. `None` when the word
/// opens no phrase there.
pub(super) fn phrase(
    bytes: &[u8],
    at: usize,
    len: usize,
    out: &mut [u8; 48],
) -> Option<(usize, usize)> {
    let verb = bytes.get(at..at + len)?;
    if bytes.get(at + len) != Some(&b' ') {
        return None;
    }
    let from = at + len + 1;
    let end = from
        + bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_alphabetic())
            .count();
    // "set up-front", "laid off-site": the particle is part of another word.
    if end == from
        || bytes
            .get(end)
            .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return None;
    }
    // Most words after a verb are no particle: one test of their length
    // and first letter before the table.
    let particle = &bytes[from..end];
    if !(2..=7).contains(&particle.len())
        || !matches!(
            particle[0] | 0x20,
            b'a' | b'b' | b'd' | b'f' | b'o' | b'p' | b'u'
        )
    {
        return None;
    }
    let (_, _, reading) = PHRASES.iter().find(|(verbs, p, _)| {
        p.as_bytes().eq_ignore_ascii_case(particle)
            && verbs
                .iter()
                .any(|v| v.as_bytes().eq_ignore_ascii_case(verb))
    })?;
    out[..reading.len()].copy_from_slice(reading.as_bytes());
    Some((reading.len(), end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, len: usize) -> Option<(String, usize)> {
        let mut out = [0u8; 48];
        phrase(text.as_bytes(), 0, len, &mut out)
            .map(|(n, end)| (String::from_utf8(out[..n].to_vec()).unwrap(), end))
    }

    #[test]
    fn a_verb_and_its_particle_read_as_one_verb() {
        assert_eq!(
            read("stepped down as chief", 7),
            Some(("resign".into(), 12))
        );
        assert_eq!(
            read("Bought back shares", 6),
            Some(("repurchase".into(), 11))
        );
        assert_eq!(read("passed away.", 6), Some(("die".into(), 11)));
        assert_eq!(read("went public", 4), Some(("list".into(), 11)));
        assert_eq!(read("free of charge", 4), Some(("without".into(), 7)));
    }

    #[test]
    fn no_phrase_without_its_particle_right_after() {
        for (text, len) in [
            ("stepped up", 7),
            ("stepped  down", 7),
            ("stepped downstairs", 7),
            ("set up-front", 3),
            ("paid the loan back", 4),
            ("stepped", 7),
            ("resigned down", 8),
        ] {
            assert_eq!(read(text, len), None, "{text}");
        }
    }

    #[test]
    fn every_reading_fits_and_every_verb_is_folded() {
        for (verbs, particle, reading) in PHRASES {
            assert!(reading.len() <= 48);
            // The first tests of `phrase` let every particle through.
            assert!((2..=7).contains(&particle.len()), "{particle}");
            assert!("abdfopu".contains(&particle[..1]), "{particle}");
            assert!(!is_phrase_verb(reading), "{reading}");
            for v in verbs.iter().chain([particle, reading]) {
                assert_eq!(*v, v.to_lowercase(), "{v}");
            }
            for v in *verbs {
                assert!(is_phrase_verb(v));
            }
        }
    }
}
