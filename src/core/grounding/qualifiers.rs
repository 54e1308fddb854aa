//! Words that keep the word after them from being stated as done: "may
//! cut", "is expected to approve", "plans to acquire", "allegedly stole",
//! "failed to complete", "is considering selling"; and ranks that keep a
//! superlative from being a first place ("the second largest", "one of the
//! largest"). A claim
//! that states plainly what its best source sentence only qualifies so
//! ("The regulator approved the deal" against "The regulator is expected
//! to approve the deal") turns a forecast, a plan or an allegation into a
//! fact; every word of it is found, so the fitted model alone scored such
//! claims high.
//!
//! Pure tables, and the rule by which a sentence read again tells which
//! words its qualifiers govern; it must not look a word up in a source
//! (the scorer asks the index).

use super::lexicon::{letters_before, packed_word};
use super::memo::Packed;

/// Qualifiers that govern the next content word ("may *cut*", "reportedly
/// *paid*"). Sorted: looked up by binary search. Left out: "would"
/// (Wikipedia narrates with it: "he would later become president"),
/// "will" and "should" (a tense and a duty, not a doubt), "can" (an
/// ability), and "May" written with a capital (the month).
const BEFORE_WORD: &[&str] = &[
    "allegedly",
    "could",
    "may",
    "might",
    "perhaps",
    "possibly",
    "potentially",
    "probably",
    "purportedly",
    "reportedly",
    "supposedly",
];

/// Qualifiers that govern the content word after their "to" ("expected to
/// *rise*", "failed to *complete*"), written with it as a finding names
/// them; any other word between them ends the qualifier ("expected by
/// analysts …"). Sorted. Left out: "due" ("due to"
/// is "because of"), "set" ("set to music").
const BEFORE_TO: &[&str] = &[
    "aim to",
    "aimed to",
    "aiming to",
    "aims to",
    "attempted to",
    "attempting to",
    "attempts to",
    "expected to",
    "expects to",
    "failed to",
    "fails to",
    "forecast to",
    "hope to",
    "hoped to",
    "hopes to",
    "hoping to",
    "intend to",
    "intended to",
    "intending to",
    "intends to",
    "likely to",
    "plan to",
    "planned to",
    "planning to",
    "plans to",
    "poised to",
    "predicted to",
    "projected to",
    "proposed to",
    "proposes to",
    "scheduled to",
    "seek to",
    "seeking to",
    "seeks to",
    "sought to",
    "tried to",
    "tries to",
    "trying to",
    "unlikely to",
    "want to",
    "wanted to",
    "wants to",
];

/// Ranks that govern a superlative after them ("the second *largest*
/// bank", "the 2nd *largest*", "one of the *largest* banks", "one of the
/// most *profitable*", stop words and a possessive between: "one of the
/// world's *largest*"): "the largest bank" against it states a first
/// place the source does not give. Sorted. A rank governs only a
/// superlative, a word ending in "est" or the word after "most"
/// ("second quarter", "one bank" qualify nothing).
const RANKS: &[&str] = &[
    "10th", "2nd", "3rd", "4th", "5th", "6th", "7th", "8th", "9th", "eighth", "fifth", "fourth",
    "ninth", "one", "second", "seventh", "sixth", "tenth", "third",
];

/// Verbs of deliberation that govern a gerund after them ("is considering
/// *selling* its stake"): a sale only weighed. Sorted. They govern only a
/// word ending in "ing" ("considering its size" qualifies nothing).
const WEIGHING: &[&str] = &[
    "considering",
    "contemplating",
    "exploring",
    "mulling",
    "weighing",
];

/// Words that make a claim's own statement conditional, modal, permitted
/// or intended, besides the qualifiers above: such a claim states nothing
/// as done, so a qualified source sentence does not contradict it ("You
/// may close your account" is a permission, and "Customers are allowed to
/// close" or "can close" restate it), or ranked ("among the largest"
/// against "one of the largest"; a claim's own rank, "one of the largest"
/// against "the second largest", is a qualifier above). Not "will" nor
/// "shall": "The bank will cut its dividend" states as certain what "may
/// cut" leaves open. Sorted.
const CLAIM_ONLY: &[&str] = &[
    "able",
    "allowed",
    "among",
    "can",
    "eligible",
    "entitled",
    "if",
    "must",
    "need",
    "needs",
    "optional",
    "permitted",
    "possible",
    "should",
    "unless",
    "whether",
    "would",
];

/// Every word of the four tables, packed (see `lexicon::packed_word`)
/// and sorted, with its number: a qualifier's place in [`BEFORE_WORD`],
/// past it in [`BEFORE_TO`], past both in [`RANKS`]; [`CLAIM_WORD`] for
/// a word of [`CLAIM_ONLY`]. One search of numbers, no byte comparisons.
const PACKED: [(u128, u8); QUALIFIERS + CLAIM_ONLY.len()] = {
    let mut out = [(0u128, 0u8); QUALIFIERS + CLAIM_ONLY.len()];
    let mut i = 0;
    while i < out.len() {
        let (w, n) = if i < BEFORE_WORD.len() {
            (BEFORE_WORD[i], i as u8)
        } else if i < TO_END {
            (without_to(BEFORE_TO[i - BEFORE_WORD.len()]), i as u8)
        } else if i < RANKS_END {
            (RANKS[i - TO_END], i as u8)
        } else if i < QUALIFIERS {
            (WEIGHING[i - RANKS_END], i as u8)
        } else {
            (CLAIM_ONLY[i - QUALIFIERS], CLAIM_WORD)
        };
        let x = (packed_word(w.as_bytes(), 0), n);
        let mut j = i;
        while j > 0 && out[j - 1].0 > x.0 {
            out[j] = out[j - 1];
            j -= 1;
        }
        out[j] = x;
        i += 1;
    }
    out
};

/// A phrase of [`BEFORE_TO`] without its " to": the word looked up.
const fn without_to(phrase: &str) -> &str {
    match phrase.as_bytes().split_last_chunk::<3>() {
        Some((word, b" to")) => match std::str::from_utf8(word) {
            Ok(word) => word,
            Err(_) => phrase,
        },
        _ => phrase,
    }
}

/// The number of a word of [`CLAIM_ONLY`] in [`PACKED`].
const CLAIM_WORD: u8 = u8::MAX;

/// Longest word of the tables: a longer one is none of them.
const LONGEST: usize = 13;

/// A word's bit in [`FIRST_AND_LENGTH`]: of its first letter (any case)
/// and its length.
const fn filter_bit(first: u8, len: usize) -> u64 {
    1 << ((((first | 0x20) as usize).wrapping_mul(7) ^ len.wrapping_mul(13)) % 64)
}

/// The bits of every word of the tables: a word whose bit is clear is
/// none of them, told without packing it.
const FIRST_AND_LENGTH: u64 = {
    let mut bits = 0;
    let mut i = 0;
    while i < PACKED.len() {
        let p = PACKED[i].0;
        let mut len = 0;
        while len < 16 && (p >> (8 * len)) & 0xff != 0 {
            len += 1;
        }
        bits |= filter_bit(p as u8, len);
        i += 1;
    }
    bits
};

/// The number of `w` (ASCII letters, any case) in [`PACKED`].
fn lookup(w: &[u8]) -> Option<u8> {
    let first = *w.first()?;
    if w.len() > LONGEST || FIRST_AND_LENGTH & filter_bit(first, w.len()) == 0 {
        return None;
    }
    let x = packed_word(w, 0x20);
    PACKED
        .binary_search_by(|e| e.0.cmp(&x))
        .ok()
        .map(|i| PACKED[i].1)
}

/// Where [`BEFORE_TO`]'s numbers end and [`RANKS`]' begin.
const TO_END: usize = BEFORE_WORD.len() + BEFORE_TO.len();

/// How a qualifier governs the word after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The next content word.
    Next,
    /// The content word after its "to".
    AfterTo,
    /// The next content word, when it is a superlative.
    Superlative,
    /// The next content word, when it is a gerund.
    Gerund,
}

/// A qualifier's number and how it governs.
fn number_of(w: &[u8]) -> Option<(u8, Kind)> {
    let n = lookup(w).filter(|&n| n != CLAIM_WORD)?;
    let kind = match usize::from(n) {
        i if i < BEFORE_WORD.len() => Kind::Next,
        i if i < TO_END => Kind::AfterTo,
        i if i < RANKS_END => Kind::Superlative,
        _ => Kind::Gerund,
    };
    Some((n, kind))
}

/// Whether the case-folded word `lower` is a qualifier (the word memo
/// keeps this as one bit, so the readers test only that).
pub(super) fn is_qualifier(lower: &str) -> bool {
    number_of(lower.as_bytes()).is_some()
}

/// How qualifier number `n` reads in a finding: the word, with its "to"
/// when it governs through one ("may", "expected to").
pub(super) fn phrase(n: u8) -> &'static str {
    let n = usize::from(n);
    if n < BEFORE_WORD.len() {
        BEFORE_WORD[n]
    } else if n < TO_END {
        BEFORE_TO[n - BEFORE_WORD.len()]
    } else if n < RANKS_END {
        match RANKS[n - TO_END] {
            "one" => "one of",
            rank => rank,
        }
    } else {
        WEIGHING.get(n - RANKS_END).copied().unwrap_or("")
    }
}

/// Where [`RANKS`]' numbers end and [`WEIGHING`]'s begin.
const RANKS_END: usize = TO_END + RANKS.len();

/// Whether qualifier number `n` is a rank.
pub(super) fn is_rank(n: u8) -> bool {
    (TO_END..RANKS_END).contains(&usize::from(n))
}

/// Whether the word `w` (any case) is a rank.
pub(super) fn is_rank_word(w: &[u8]) -> bool {
    lookup(w).is_some_and(is_rank)
}

/// Qualifiers in all: their numbers fit the readers' one byte.
pub(super) const QUALIFIERS: usize = RANKS_END + WEIGHING.len();
const _: () = assert!(QUALIFIERS < 200);

/// Where a reading of one sentence stands with its qualifiers: none open,
/// one waiting for its "to", or one governing the next content word. A
/// qualifier is a word written in lower case (not "May" the month); the
/// word it governs is the next content word, negations passed over ("may
/// not *rise*") and an adverb governed with the word after it ("could
/// sharply *cut*"), and counts as qualified when it is written in lower case
/// and is no number (a qualifier governs a verb or an adjective, not a
/// name); a rank governs only a superlative, and a verb of deliberation
/// only a gerund. The scorer's reading of one
/// sentence steps through its words with one; the index only notes which
/// sentences hold a qualifier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Qualifying {
    state: u8,
    /// The open qualifier's number.
    which: u8,
}

const WAITING_FOR_TO: u8 = 1;
const GOVERNING: u8 = 2;
const GOVERNING_SUPERLATIVE: u8 = 3;
const GOVERNING_GERUND: u8 = 4;

impl Qualifying {
    /// Whether the word `info` needs [`Qualifying::step`]: a qualifier, or
    /// any word while one is open. One test per word for the reader.
    #[inline(always)]
    pub(super) fn wants(self, info: Packed) -> bool {
        self.state != 0 || info.qualifier()
    }

    /// The next word of the sentence, `w` as written and `info` as the
    /// memo reads it; the number of the qualifier that governs it, when it
    /// is a content word one governs.
    #[inline(never)]
    pub(super) fn step(&mut self, w: &[u8], info: Packed) -> Option<u8> {
        let lower = w.first().is_some_and(u8::is_ascii_lowercase);
        let mut governed = None;
        if info.function() {
            if self.state == WAITING_FOR_TO {
                self.state = if w == b"to" { GOVERNING } else { 0 };
            } else if self.state == GOVERNING_SUPERLATIVE && w.eq_ignore_ascii_case(b"most") {
                // "one of the most *profitable*": a superlative in two words.
                self.state = GOVERNING;
            }
        } else if !info.negation() {
            let superlative = || w.len() >= 4 && w.ends_with(b"est");
            // "one of the world's largest": the possessive passes the rank on.
            if self.state == GOVERNING_SUPERLATIVE && possessive(w) {
                return None;
            }
            let governs = match self.state {
                GOVERNING => true,
                GOVERNING_SUPERLATIVE => superlative(),
                GOVERNING_GERUND => w.len() > 4 && w.ends_with(b"ing"),
                _ => false,
            };
            if governs && lower && !info.number() {
                governed = Some(self.which);
            }
            // An adverb passes the qualifier on: "could sharply *cut*".
            let adverb = governs && w.len() > 4 && w.ends_with(b"ly");
            if !adverb {
                self.state = 0;
            }
        }
        // A rank in digits ("2nd") opens with one.
        if info.qualifier()
            && (lower || w.first().is_some_and(u8::is_ascii_digit))
            && let Some((n, kind)) = number_of(w)
        {
            self.state = match kind {
                Kind::Next => GOVERNING,
                Kind::AfterTo => WAITING_FOR_TO,
                Kind::Superlative => GOVERNING_SUPERLATIVE,
                Kind::Gerund => GOVERNING_GERUND,
            };
            self.which = n;
        }
        governed
    }
}

/// How a claim qualifies what it states itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Own {
    /// Not at all.
    Nothing,
    /// By a rank ("one of the largest", "among the largest", "the 2nd
    /// largest"): a ranked source sentence does not contradict it, a
    /// forecast or a plan still does ("Among other deals, the bank
    /// acquired the lender" against "failed to acquire").
    Rank,
    /// By a qualifier, a modal, a permission or a condition: no qualified
    /// source sentence contradicts it.
    Everything,
}

/// How the claim text `claim` qualifies what it states itself, by its
/// words anywhere in it, any case but "May" (the month, as in sources);
/// read no further than `enough` (a caller that needs to know only of a
/// rank stops at one). Read once for a claim the rule would otherwise
/// flag.
pub(super) fn claim_qualifies(claim: &[u8], enough: Own) -> Own {
    let mut own = Own::Nothing;
    for w in claim_words(claim) {
        own = own.max(w);
        if own >= enough {
            break;
        }
    }
    own
}

/// What a claim holds of the tables, by its words: a qualifier other than
/// a rank ("may", "expected"), and a rank ("second", "one", "among").
pub(super) fn claim_holds(claim: &[u8]) -> (bool, bool) {
    claim_words(claim).fold((false, false), |(qualifier, rank), w| {
        (qualifier || w == Own::Everything, rank || w == Own::Rank)
    })
}

/// What each word of a claim of the tables is: [`Own::Rank`] for a rank
/// or "among", [`Own::Everything`] for another qualifier; other words,
/// and "May" the month, are left out.
fn claim_words(claim: &[u8]) -> impl Iterator<Item = Own> + '_ {
    claim
        .split(|b| !b.is_ascii_alphanumeric())
        .filter(|w| w != b"May")
        .filter_map(|w| match lookup(w)? {
            n if is_rank(n) || w.eq_ignore_ascii_case(b"among") => Some(Own::Rank),
            _ => Some(Own::Everything),
        })
}

/// Whether `w` is a possessive ("world's", "Europe’s").
fn possessive(w: &[u8]) -> bool {
    w.ends_with(b"'s") || w.ends_with("’s".as_bytes())
}

/// Whether the claim word at `at..end` of `text` states a possibility,
/// not a deed: an infinitive ("to" right before it: "the bank wants to
/// expand") or an adjective of what can be done ("redeemable",
/// "accessible").
pub(super) fn states_possible(text: &[u8], at: usize, end: usize) -> bool {
    let w = &text[at..end];
    if w.len() > 5 {
        let tail = &w[w.len() - 4..];
        if tail.eq_ignore_ascii_case(b"able") || tail.eq_ignore_ascii_case(b"ible") {
            return true;
        }
    }
    letters_before(text, at).eq_ignore_ascii_case(b"to")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_and_phrases_match_their_words() {
        for list in [BEFORE_WORD, BEFORE_TO, RANKS, WEIGHING, CLAIM_ONLY] {
            assert!(list.windows(2).all(|p| p[0] < p[1]), "{list:?}");
            assert!(list.iter().all(|w| w.len() <= LONGEST), "{list:?}");
        }
        assert_eq!(lookup(b"would"), Some(CLAIM_WORD));
        assert_eq!(lookup(b"Might"), Some(3));
        assert_eq!(number_of(b"would"), None);
        assert_eq!(lookup(b"will"), None);
        assert!(BEFORE_TO.iter().all(|p| without_to(p).len() + 3 == p.len()));
        let p = |w: &[u8]| number_of(w).map(|(n, _)| phrase(n));
        assert_eq!(p(b"may"), Some("may"));
        assert_eq!(p(b"expected"), Some("expected to"));
        assert_eq!(p(b"wants"), Some("wants to"));
        assert_eq!(p(b"rose"), None);
        assert_eq!(p(b"second"), Some("second"));
        assert_eq!(p(b"tenth"), Some("tenth"));
        assert_eq!(p(b"weighing"), Some("weighing"));
    }

    #[test]
    fn a_claim_qualifies_by_a_modal_a_condition_or_an_infinitive() {
        let q = |c: &str, w: &str| {
            let at = c.find(w).unwrap();
            claim_qualifies(c.as_bytes(), Own::Everything) == Own::Everything
                || states_possible(c.as_bytes(), at, at + w.len())
        };
        assert!(!q("The regulator approved the deal.", "approved"));
        assert!(!q("Revenue rose 5% in 2024.", "rose"));
        assert!(q(
            "The regulator is expected to approve the deal.",
            "approve"
        ));
        // A certain future is no qualifier: it overstates a "may".
        assert!(!q("The bank will cut its dividend.", "cut"));
        assert!(q("If rates rise, the bank gains.", "rise"));
        assert!(q("The bank wants to expand.", "expand"));
        assert!(q("The firm is working to expand.", "expand"));
        assert!(q("The bank MAY cut its dividend.", "cut"));
        // "May" with a capital is the month.
        assert!(!q("The chief executive resigned in May.", "resigned"));
        assert!(q("Shares are redeemable daily.", "redeemable"));
        assert!(q("Customers are permitted to close accounts.", "close"));
        assert!(!q("The table was sold.", "table"));
        // "to" elsewhere in the claim is no infinitive of the word.
        assert!(!q("The bank sold its stake to a rival.", "sold"));
        // A rank of the claim's own answers a rank only.
        for c in [
            "Among other deals, the bank acquired the lender.",
            "One branch closed.",
            "HSBC is one of the largest banks.",
            "It was the 2nd largest deal.",
        ] {
            assert_eq!(
                claim_qualifies(c.as_bytes(), Own::Everything),
                Own::Rank,
                "{c}"
            );
        }
        let c = b"One of the largest banks may cut its dividend.";
        assert_eq!(claim_qualifies(c, Own::Everything), Own::Everything);
        assert_eq!(claim_qualifies(c, Own::Rank), Own::Rank);
    }
}
