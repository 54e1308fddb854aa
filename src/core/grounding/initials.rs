//! Acronyms and the names they stand for: a claim's "EU" is found in a
//! source that spells out "European Union", and a claim's "Federal Bureau
//! of Investigation" (or "chief executive officer") in one that writes
//! "FBI" or "F.B.I." ("CEO"). Plain scans of a cited source's text, run only
//! for a claim's words that the source index did not find; this module must
//! not touch the index or the word memo.

use super::lexicon::{acronym_glued_to_number, is_stop_name_word};
use crate::core::terms::name_words;

/// Most letters an acronym has here; longer all-capital words are words.
pub(super) const MAX_LETTERS: usize = 6;

/// Words inside a name that its initials leave out ("Bureau *of*
/// Investigation"); not "and", which joins names in lists more often than
/// it sits inside one ("India and Pakistan").
const JOINERS: &[&str] = &["for", "of", "on", "the"];

/// Whether `word` may sit inside a name between its capitalised words.
pub(super) fn is_name_joiner(word: &[u8]) -> bool {
    JOINERS
        .iter()
        .any(|j| j.as_bytes().eq_ignore_ascii_case(word))
}

/// Whether `word` is "and", which sits inside a name only when the name
/// spells three letters or more ("Securities and Exchange Commission":
/// SEC), not in a list of two ("India and Pakistan").
pub(super) fn is_and(word: &[u8]) -> bool {
    word.eq_ignore_ascii_case(b"and")
}

/// Fewest letters of an acronym whose name may hold "and".
pub(super) const AND_LETTERS: usize = 3;

/// The other acronym of what `letters` names, where it has two ("USA",
/// "US" for the United States).
pub(super) fn other_acronym(letters: &[u8]) -> Option<&'static [u8]> {
    match letters {
        b"USA" => Some(b"US"),
        b"US" => Some(b"USA"),
        _ => None,
    }
}

/// The letters of `word` when it reads as an acronym, in capitals: 2 to 6
/// capital letters, or single capitals joined by dots ("U.K", "E.U."), or
/// capitals with single small letters between them for a name's small
/// words ("BoE": "Bank of England", "AuM": "assets under management"); a
/// plural's "s" after the capitals is no letter ("ETFs" stands for
/// "exchange-traded funds").
pub(super) fn acronym_letters(word: &[u8], out: &mut [u8; MAX_LETTERS]) -> Option<usize> {
    let word = match word {
        [capitals @ .., b's'] if capitals.len() >= 2 && !capitals.contains(&b'.') => capitals,
        _ => word,
    };
    let mut n = 0;
    let dotted = word.contains(&b'.');
    for (i, &b) in word.iter().enumerate() {
        if b == b'.' {
            // Dots only between single letters.
            if !dotted || i % 2 == 0 {
                return None;
            }
            continue;
        }
        // A small letter only between two capitals ("McDonald" and
        // "iPhone" are names, not acronyms).
        let small_inside = b.is_ascii_lowercase()
            && !dotted
            && i > 0
            && word[i - 1].is_ascii_uppercase()
            && word.get(i + 1).is_some_and(u8::is_ascii_uppercase);
        if !(b.is_ascii_uppercase() || small_inside) || (dotted && i % 2 == 1) || n == MAX_LETTERS {
            return None;
        }
        out[n] = b.to_ascii_uppercase();
        n += 1;
    }
    (n >= 2).then_some(n)
}

/// Whether `word` (of [`name_words`]) is a stop word ("In", "The"): it
/// opens no name.
fn is_stop_word(word: &[u8]) -> bool {
    is_stop_name_word(word)
}

/// Whether `text` spells out the acronym `letters` as a name: a run of
/// capitalised words one space apart (joiners allowed between them, stop
/// words not) whose last words have its letters as initials ("the Council
/// of the European Union" spells out "EU"; "In Paris" spells out nothing).
/// An acronym of three letters or more may also stand for words in lower
/// case ("the chief executive officer" spells out "CEO"). Calls `each`
/// with where each such name starts and ends (a name may come more than
/// once), and also with the places where a longer name's words before its
/// last have the letters as initials ("United States" of "United States
/// Senate"), marked as such (`false`): those stand for the acronym only
/// followed by the name's other words.
pub(super) fn spelled_out_in(
    text: &str,
    letters: &[u8],
    mut each: impl FnMut(usize, usize, bool),
) -> bool {
    let bytes = text.as_bytes();
    // The initials of the name being read and where each of its words
    // starts, whether it is in lower case, and where its last word ended.
    let mut initials = [0u8; 32];
    let mut starts = [0usize; 32];
    let mut n = 0;
    let mut lower = false;
    let mut last_end = 0;
    let mut any = false;
    let mut spelled = |initials: &[u8], starts: &[usize], end: usize, whole: bool| {
        if initials.ends_with(letters) {
            each(starts[initials.len() - letters.len()], end, whole);
            any |= whole;
        }
    };
    for (w, end) in name_words(bytes) {
        let start = end - w.len();
        let upper = w[0].is_ascii_uppercase();
        // A name of three or more words may be written in lower case
        // ("chief executive officer"); a shorter one must be capitalised.
        let cased = upper || (letters.len() >= 3 && w[0].is_ascii_lowercase());
        let name_word = cased && !is_name_joiner(w) && !is_stop_word(w);
        let joined = n > 0
            && bytes[last_end..start].iter().all(|&b| b == b' ')
            && (!name_word || upper != lower);
        if name_word && joined {
            if n == initials.len() {
                initials.copy_within(1.., 0);
                starts.copy_within(1.., 0);
                n -= 1;
            }
        } else if joined && (is_name_joiner(w) || (letters.len() >= AND_LETTERS && is_and(w))) {
            last_end = end;
            continue;
        } else {
            // A capitalised name read so far ends here (a name in lower
            // case was reported word by word).
            if !lower {
                spelled(&initials[..n], &starts[..n], last_end, true);
            }
            n = 0;
        }
        if name_word {
            initials[n] = w[0].to_ascii_uppercase();
            starts[n] = start;
            n += 1;
            lower = !upper;
            last_end = end;
            // Words in lower case run on into the sentence: any of their
            // stretches may be the name. A capitalised name's stretch is a
            // name only where the name ends (below).
            spelled(&initials[..n], &starts[..n], end, lower);
        }
    }
    if !lower {
        spelled(&initials[..n], &starts[..n], last_end, true);
    }
    any
}

/// Whether `word` is one of the small words an acronym may keep an
/// initial for ("return *on* equity": ROE, "loan-*to*-value": LTV, "know
/// *your* customer": KYC): and, at, by, for, in, of, on, over, per, to,
/// under, your.
pub(super) fn is_small_word(word: &[u8]) -> bool {
    // Most words are longer than the small ones.
    if word.len() > 5 {
        return false;
    }
    // Setting bit 5 lower-cases a letter and makes no letter of another byte.
    let mut lower = [0u8; 5];
    for (l, b) in lower.iter_mut().zip(word) {
        *l = b | 0x20;
    }
    matches!(
        &lower[..word.len()],
        b"and"
            | b"at"
            | b"by"
            | b"for"
            | b"in"
            | b"of"
            | b"on"
            | b"over"
            | b"per"
            | b"to"
            | b"under"
            | b"your"
    )
}

/// Whether `text` spells out the acronym `letters` with one initial for
/// every word, small words included ([`is_small_word`]): "return on equity"
/// (ROE), "loan-to-value" (LTV), "assets under management" (AUM), or with
/// a capital that only opens a sentence ("Net interest income rose": NII).
/// Three letters or more; the words one space or one hyphen apart; the
/// first and the last not stop words. Either a small word is inside, every
/// stop word inside is a small word, and the content words are all
/// capitalised or, after the first, all in lower case; or there is no stop
/// word, the first word opens a sentence and the others are in lower case;
/// or there is no stop word nor one of two letters or less, a hyphen joins
/// two of the words ("exchange-traded fund": ETF), and they are all
/// capitalised or, after the first, all in lower case.
/// The names [`spelled_out_in`] reads leave small words out ("Bureau *of*
/// Investigation") and keep a name's case: these are the other ways a name
/// is written short. Calls `each` with where each such name starts and
/// ends.
pub(super) fn spelled_word_by_word(
    text: &str,
    letters: &[u8],
    mut each: impl FnMut(usize, usize),
) -> bool {
    /// One word of a name.
    #[derive(Clone, Copy, Default)]
    struct Part {
        end: usize,
        stop: bool,
        small: bool,
        upper: bool,
        short: bool,
    }
    let k = letters.len();
    if !(3..=MAX_LETTERS).contains(&k) || !letters[0].is_ascii_uppercase() {
        return false;
    }
    let bytes = text.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'\'';
    let opens_sentence = |at: usize| {
        let before = bytes[..at].trim_ascii_end();
        before.is_empty()
            || matches!(before[before.len() - 1], b'.' | b'!' | b'?')
            || bytes[before.len()..at].contains(&b'\n')
    };
    let mut any = false;
    let mut name = [Part::default(); MAX_LETTERS];
    // A name opens with the acronym's first letter, in either case: only
    // the words that do are read.
    let lower = letters[0].to_ascii_lowercase();
    'starts: for start in memchr::memchr2_iter(letters[0], lower, bytes) {
        if start > 0 && is_word(bytes[start - 1]) {
            continue;
        }
        // The words' initials first; what each word is, only when they
        // all match.
        let mut at = start;
        let mut spans = [(0usize, 0usize); MAX_LETTERS];
        let mut hyphen = false;
        for (i, &letter) in letters.iter().enumerate() {
            if i > 0 {
                // One space or one hyphen ("loan-to-value") between words.
                match bytes.get(at) {
                    Some(b' ') => {}
                    Some(b'-') => hyphen = true,
                    _ => continue 'starts,
                }
                at += 1;
            }
            if !bytes
                .get(at)
                .is_some_and(|b| b.eq_ignore_ascii_case(&letter))
            {
                continue 'starts;
            }
            let end = at + bytes[at..].iter().take_while(|&&b| is_word(b)).count();
            spans[i] = (at, end);
            at = end;
        }
        for (part, &(at, end)) in name.iter_mut().zip(&spans[..k]) {
            let word = &bytes[at..end];
            let stop = is_stop_word(word);
            *part = Part {
                end,
                stop,
                small: stop && is_small_word(word),
                upper: word[0].is_ascii_uppercase(),
                short: word.len() < 3,
            };
        }
        let name = &name[..k];
        if name[0].stop || name[k - 1].stop {
            continue;
        }
        let inside = &name[1..k - 1];
        let content_after_first = || name[1..].iter().filter(|p| !p.stop);
        let with_small = inside.iter().any(|p| p.small)
            && inside.iter().all(|p| !p.stop || p.small)
            && (name[0].upper && content_after_first().all(|p| p.upper)
                || content_after_first().all(|p| !p.upper));
        let sentence_case = name[0].upper
            && inside.iter().all(|p| !p.stop)
            && content_after_first().all(|p| !p.upper)
            && opens_sentence(start);
        // "exchange-traded fund", "Non-Performing Loan": a hyphen inside
        // makes a name of words that alone would be a phrase ("agri-food
        // co" stays one: a name's words in lower case are longer).
        let hyphenated = hyphen
            && name.iter().all(|p| !p.short)
            && inside.iter().all(|p| !p.stop)
            && (name.iter().all(|p| p.upper) || content_after_first().all(|p| !p.upper));
        if with_small || sentence_case || hyphenated {
            each(start, name[k - 1].end);
            any = true;
        }
    }
    any
}

/// The words of a chief officer's title ("chief *executive* officer"):
/// the title without its "officer" stands for the acronym ("chief
/// executive" for "CEO"), while "chief economist" is another post.
const TITLE_WORDS: &[&str] = &[
    "commercial",
    "compliance",
    "data",
    "digital",
    "executive",
    "finance",
    "financial",
    "information",
    "investment",
    "legal",
    "marketing",
    "operating",
    "people",
    "product",
    "risk",
    "security",
    "strategy",
    "sustainability",
    "technology",
];

/// Whether `word` is "chief" (any case), which with a word of
/// [`TITLE_WORDS`] after it names a chief officer's post.
pub(super) fn is_chief(word: &[u8]) -> bool {
    word.eq_ignore_ascii_case(b"chief")
}

/// Whether `word` names a chief officer's post after "chief" (see
/// [`TITLE_WORDS`]).
pub(super) fn is_title_word(word: &[u8]) -> bool {
    TITLE_WORDS
        .iter()
        .any(|t| t.as_bytes().eq_ignore_ascii_case(word))
}

/// Whether `text` writes the chief officer's title that `letters` stands
/// for without its "officer" ("chief executive" for "CEO", "Chief
/// Financial" for "CFO"): "chief" and a word of [`TITLE_WORDS`] with the
/// middle letter as its initial, one space apart. Calls `each` with where
/// each such title starts and ends.
pub(super) fn chief_title_in(
    text: &str,
    letters: &[u8],
    mut each: impl FnMut(usize, usize),
) -> bool {
    let &[b'C', middle, b'O'] = letters else {
        return false;
    };
    let bytes = text.as_bytes();
    let word_end = |at: usize| {
        at + bytes[at..]
            .iter()
            .take_while(|b| b.is_ascii_alphabetic())
            .count()
    };
    let mut any = false;
    for start in memchr::memchr2_iter(b'c', b'C', bytes) {
        let chief = word_end(start);
        if (start > 0 && bytes[start - 1].is_ascii_alphanumeric())
            || !is_chief(&bytes[start..chief])
            || bytes.get(chief) != Some(&b' ')
        {
            continue;
        }
        let end = word_end(chief + 1);
        let title = &bytes[chief + 1..end];
        if title
            .first()
            .is_some_and(|b| b.eq_ignore_ascii_case(&middle))
            && is_title_word(title)
        {
            each(start, end);
            any = true;
        }
    }
    any
}

/// Names written clipped rather than by their initials, as in financial
/// news: the name (any case) and the word that stands for it.
const CLIPPED: &[(&str, &str)] = &[("federal reserve", "Fed")];

/// The clipped form of the name `name` ("Fed" for "Federal Reserve").
pub(super) fn clipped_name(name: &[u8]) -> Option<&'static [u8]> {
    CLIPPED
        .iter()
        .find(|(full, _)| full.as_bytes().eq_ignore_ascii_case(name))
        .map(|(_, short)| short.as_bytes())
}

/// Whether `text` holds `word` as written, as a word of its own or before
/// a possessive "'s" ("Fed's"). Calls `each` with where each one starts
/// and ends.
pub(super) fn word_written_in(text: &str, word: &[u8], mut each: impl FnMut(usize, usize)) -> bool {
    let bytes = text.as_bytes();
    let mut any = false;
    for start in memchr::memmem::find_iter(bytes, word) {
        let end = start + word.len();
        let ends = match &bytes[end..] {
            [] | [b'\'', b's', ..] => true,
            [b, ..] => !b.is_ascii_alphanumeric() && !matches!(b, b'-' | b'\''),
        };
        if (start == 0 || !bytes[start - 1].is_ascii_alphanumeric()) && ends {
            each(start, end);
            any = true;
        }
    }
    any
}

/// Whether `text` holds the acronym `letters` as a word of its own, plain
/// ("EU"), dotted ("E.U."), plural ("ETFs") or glued to a number ("CET" of
/// "CET1"). Calls
/// `each` with where each such acronym starts and ends.
pub(super) fn written_in(text: &str, letters: &[u8], mut each: impl FnMut(usize, usize)) -> bool {
    let bytes = text.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'\'' || b == b'-';
    // Both spellings open with the first letter: only the words that open
    // with it are read (a word of `name_words`, not a byte inside one).
    let Some(&first) = letters.first().filter(|&&b| is_word(b)) else {
        return false;
    };
    let mut any = false;
    for start in memchr::memchr_iter(first, bytes) {
        if start > 0 && is_word(bytes[start - 1]) {
            continue;
        }
        let end = start + bytes[start..].iter().take_while(|&&b| is_word(b)).count();
        let w = &bytes[start..end];
        let dotted = w.len() == 1 && bytes.get(end) == Some(&b'.');
        let span = if dotted {
            // "E.U." is split at its dots: read it whole.
            let start = end - 1;
            let whole = bytes[start..]
                .iter()
                .take_while(|b| b.is_ascii_uppercase() || **b == b'.')
                .count();
            let mut out = [0u8; MAX_LETTERS];
            acronym_letters(&bytes[start..start + whole], &mut out)
                .is_some_and(|k| &out[..k] == letters)
                .then_some((start, start + whole))
        } else {
            // "CET1": the acronym of "Common Equity Tier", then a number.
            let w = acronym_glued_to_number(w).map_or(w, |n| &w[..n]);
            // "BoE": in mixed case, the letters of "Bank of England".
            let mut out = [0u8; MAX_LETTERS];
            (w == letters
                || w.strip_suffix(b"s") == Some(letters)
                || acronym_letters(w, &mut out).is_some_and(|k| &out[..k] == letters))
            .then_some((start, start + w.len()))
        };
        if let Some((start, end)) = span {
            each(start, end);
            any = true;
        }
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spelled(text: &str, letters: &[u8]) -> bool {
        spelled_out_in(text, letters, |_, _, _| {})
    }

    fn written(text: &str, letters: &[u8]) -> bool {
        written_in(text, letters, |_, _| {})
    }

    /// Each place `find` reports, as the text there.
    fn places(text: &str, find: impl Fn(&str, &mut dyn FnMut(usize, usize))) -> Vec<&str> {
        let mut out = Vec::new();
        find(text, &mut |start, end| out.push((start, &text[start..end])));
        out.dedup();
        out.into_iter().map(|(_, name)| name).collect()
    }

    fn letters(w: &str) -> Option<String> {
        let mut out = [0u8; MAX_LETTERS];
        acronym_letters(w.as_bytes(), &mut out)
            .map(|n| String::from_utf8_lossy(&out[..n]).into_owned())
    }

    #[test]
    fn an_acronym_is_two_to_six_capitals_plain_or_dotted() {
        assert_eq!(letters("EU").as_deref(), Some("EU"));
        assert_eq!(letters("NATO").as_deref(), Some("NATO"));
        assert_eq!(letters("U.K").as_deref(), Some("UK"));
        assert_eq!(letters("ETFs").as_deref(), Some("ETF"));
        assert_eq!(letters("IPOs").as_deref(), Some("IPO"));
        // A small letter between capitals stands for a small word.
        assert_eq!(letters("BoE").as_deref(), Some("BOE"));
        assert_eq!(letters("AuM").as_deref(), Some("AUM"));
        assert_eq!(letters("MoUs").as_deref(), Some("MOU"));
        for word in [
            "E", "Eu", "EUROPEAN", "U.KK", "U..K", "E-U", "G7", "Es", "EUss", "U.K.s", "McDonald",
            "iPhone", "LinkedIn", "GmbH", "BoJo", "B.oE",
        ] {
            assert_eq!(letters(word), None, "{word}");
        }
    }

    #[test]
    fn a_name_spells_out_its_initials() {
        assert!(spelled("The European Union imposed tariffs.", b"EU"));
        assert!(spelled("the Federal Bureau of Investigation said", b"FBI"));
        assert!(spelled(
            "a report of the Council of the European Union",
            b"EU"
        ));
        // Not across a comma, a full stop or a lower-case word.
        assert!(!spelled("Europe, Union", b"EU"));
        // Only the end of a name, and no stop word in it.
        assert!(!spelled("the European Union Commission met", b"EU"));
        assert!(!spelled("In Paris the", b"IP"));
        assert!(!spelled("New Zealand, India and Pakistan", b"IP"));
        // Lower case for three letters or more only.
        assert!(spelled("the chief executive officer resigned", b"CEO"));
        assert!(spelled("gross domestic product", b"GDP"));
        assert!(!spelled("artificial intelligence", b"AI"));
        assert!(!spelled("in Europe. Unions met", b"EU"));
        assert!(!spelled("European trade Union", b"EU"));
        // Joiners only inside a name.
        assert!(!spelled("The Union", b"TU"));
        // "and" inside a name of three initials or more.
        assert!(spelled(
            "the National Aeronautics and Space Administration said",
            b"NASA"
        ));
        assert!(spelled(
            "the Securities and Exchange Commission said",
            b"SEC"
        ));
        assert!(!spelled("New Zealand, India and Pakistan", b"IP"));
    }

    #[test]
    fn each_place_a_name_or_an_acronym_stands_is_reported() {
        let names = |text, letters: &'static [u8]| {
            places(text, |t, each| {
                spelled_out_in(t, letters, |start, end, whole| {
                    if whole {
                        each(start, end)
                    }
                });
            })
        };
        let inside = |text, letters: &'static [u8]| {
            places(text, |t, each| {
                spelled_out_in(t, letters, |start, end, whole| {
                    if !whole {
                        each(start, end)
                    }
                });
            })
        };
        assert_eq!(
            inside("The United States Senate passed it", b"US"),
            ["United States"]
        );
        assert!(names("The United States Senate passed it", b"US").is_empty());
        assert_eq!(
            names(
                "The European Union met. Later the European Union voted",
                b"EU"
            ),
            ["European Union", "European Union"]
        );
        assert_eq!(
            names("the Council of the European Union.", b"EU"),
            ["European Union"]
        );
        assert_eq!(
            names("the Federal Bureau of Investigation said", b"FBI"),
            ["Federal Bureau of Investigation"]
        );
        assert_eq!(
            names("the chief executive officer resigned", b"CEO"),
            ["chief executive officer"]
        );
        let acronyms = |text, letters: &'static [u8]| {
            places(text, |t, each| {
                written_in(t, letters, each);
            })
        };
        assert_eq!(acronyms("The EU and the E.U. agree", b"EU"), ["EU", "E.U."]);
        assert_eq!(acronyms("Funds buy ETFs and ETFS", b"ETF"), ["ETFs"]);
    }

    /// [`written_in`] read word by word: the reference for its jump to
    /// the words that open with the acronym's first letter.
    fn written_word_by_word(text: &str, letters: &[u8]) -> Vec<(usize, usize)> {
        let bytes = text.as_bytes();
        let mut out = Vec::new();
        // No letters spell no acronym, not even the plural "s".
        if letters.is_empty() {
            return out;
        }
        for (w, end) in name_words(bytes) {
            let start = end - w.len();
            if w.len() == 1 && bytes.get(end) == Some(&b'.') {
                let whole = bytes[start..]
                    .iter()
                    .take_while(|b| b.is_ascii_uppercase() || **b == b'.')
                    .count();
                let mut out_letters = [0u8; MAX_LETTERS];
                if acronym_letters(&bytes[start..start + whole], &mut out_letters)
                    .is_some_and(|k| &out_letters[..k] == letters)
                {
                    out.push((start, start + whole));
                }
            } else {
                // "EU1": the acronym, then a number.
                let w = acronym_glued_to_number(w).map_or(w, |n| &w[..n]);
                let mut mixed = [0u8; MAX_LETTERS];
                if w == letters
                    || w.strip_suffix(b"s") == Some(letters)
                    || acronym_letters(w, &mut mixed).is_some_and(|k| &mixed[..k] == letters)
                {
                    out.push((start, start + w.len()));
                }
            }
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn an_acronym_is_found_where_a_word_by_word_read_finds_it(
            text in "([ .,'-]|E|U|EU|EUs|E\\.U\\.?|xEU|EUx|EU1|EoU|EoUs|Eou|é|[a-z0-9]{1,3})*",
            letters in proptest::sample::select(vec![&b"EU"[..], b"E", b"EUX", b"EOU", b""]),
        ) {
            let mut got = Vec::new();
            let any = written_in(&text, letters, |start, end| got.push((start, end)));
            let want = written_word_by_word(&text, letters);
            proptest::prop_assert_eq!(any, !want.is_empty());
            proptest::prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn the_small_words_are_those_listed_in_any_case() {
        const SMALL_WORDS: &[&[u8]] = &[
            b"and", b"at", b"by", b"for", b"in", b"of", b"on", b"over", b"per", b"to", b"under",
            b"your",
        ];
        for w in SMALL_WORDS {
            assert!(is_small_word(w));
            assert!(is_small_word(&w.to_ascii_uppercase()));
        }
        for w in ["a", "the", "is", "onto", "unde", "underr", "0n", "t@"] {
            assert!(!is_small_word(w.as_bytes()), "{w}");
        }
    }

    #[test]
    fn a_name_spells_out_its_initials_word_by_word_small_words_included() {
        let names = |text, letters: &'static [u8]| {
            places(text, |t, each| {
                spelled_word_by_word(t, letters, each);
            })
        };
        assert_eq!(
            names("The return on equity was 12%.", b"ROE"),
            ["return on equity"]
        );
        assert_eq!(
            names("a loan-to-value ratio of 80%", b"LTV"),
            ["loan-to-value"]
        );
        assert_eq!(
            names(
                "Net interest income rose. Assets under management fell.",
                b"NII"
            ),
            ["Net interest income"]
        );
        assert_eq!(
            names("Return on Equity and assets under management", b"AUM"),
            ["assets under management"]
        );
        assert_eq!(names("Return on Equity", b"ROE"), ["Return on Equity"]);
        assert_eq!(
            names("rose.\nNet interest income", b"NII"),
            ["Net interest income"]
        );
        assert_eq!(
            names("know your customer rules", b"KYC"),
            ["know your customer"]
        );
        assert_eq!(
            names("Banks hold risk-weighted assets.", b"RWA"),
            ["risk-weighted assets"]
        );
        assert_eq!(
            names("an exchange-traded fund and Non-Performing Loans", b"ETF"),
            ["exchange-traded fund"]
        );
        assert_eq!(
            names("the Non-Performing Loan ratio", b"NPL"),
            ["Non-Performing Loan"]
        );
        // Not across punctuation or two spaces, not opening or closing with
        // a stop word, not a capitalised word among words in lower case,
        // not two letters, not a stop word inside but a small one, and not
        // a capital inside a sentence before words in lower case.
        for (text, letters) in [
            ("return, on equity", &b"ROE"[..]),
            ("return on  equity", b"ROE"),
            ("on equity ratio", b"OER"),
            ("return equity on", b"REO"),
            ("return on Equity", b"ROE"),
            ("net income", b"NI"),
            ("return on equity", b"RE"),
            ("Texas is larger", b"TIL"),
            ("he understands the cruelty", b"UTC"),
            ("an American football league", b"AFL"),
            ("agri-food co", b"AFC"),
            ("exchange-traded Fund", b"ETF"),
            ("risk weighted assets", b"RWA"),
        ] {
            assert!(names(text, letters).is_empty(), "{text} {letters:?}");
        }
    }

    #[test]
    fn a_chief_title_stands_for_its_officer_where_its_word_is_a_post() {
        let titles = |text| {
            places(text, |t, each| {
                chief_title_in(t, b"CEO", each);
            })
        };
        assert_eq!(
            titles("The chief executive and the Chief Executive met."),
            ["chief executive", "Chief Executive"]
        );
        for text in [
            "The chief economist met.",
            "The chief financial officer met.",
            "The mischief executive met.",
            "The chief  executive met.",
        ] {
            assert!(titles(text).is_empty(), "{text}");
        }
        assert!(!chief_title_in(
            "The chief executive met.",
            b"CEX",
            |_, _| {}
        ));
    }

    #[test]
    fn a_clipped_name_is_found_as_its_word() {
        assert_eq!(clipped_name(b"Federal Reserve"), Some(&b"Fed"[..]));
        assert_eq!(clipped_name(b"federal reserve"), Some(&b"Fed"[..]));
        assert_eq!(clipped_name(b"Federal Reserve Bank"), None);
        let words = |text| {
            places(text, |t, each| {
                word_written_in(t, b"Fed", each);
            })
        };
        assert_eq!(
            words("The Fed and the Fed's board, Fed."),
            ["Fed", "Fed", "Fed"]
        );
        for text in ["Fedwire", "the Fed-funded lab", "Fed'n", "FedEx", "fed"] {
            assert!(words(text).is_empty(), "{text}");
        }
    }

    #[test]
    fn an_acronym_is_found_plain_or_dotted_as_a_word_of_its_own() {
        assert!(written("Tariffs imposed by the EU in 2018.", b"EU"));
        assert!(written("He moved to the U.K. in 1990.", b"UK"));
        assert!(written("He moved to the U.K in 1990.", b"UK"));
        assert!(!written("The EUR fell.", b"EU"));
        assert!(!written("The E.U.R. fell.", b"EU"));
        // In mixed case, as the letters of its name.
        assert!(written("The BoE raised rates.", b"BOE"));
        assert!(!written("The BoE raised rates.", b"BE"));
        assert!(!written("Roe deer graze.", b"ROE"));
    }
}
