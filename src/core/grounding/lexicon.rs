//! Words: how text is cut into words, which words carry little content
//! (stop words, fillers), which negate, and how numbers are folded and
//! spelled. Pure tables and functions; no state.

use unicode_segmentation::UnicodeSegmentation;

use super::claims::is_number_sign;
use super::memo::Packed;
use super::phrases::phrase;
use crate::core::terms::{ascii_words, glued_sentences};

/// What receives a text's words from [`for_each_word`]: a closure
/// `f(word, byte_offset, ascii)`, or a reader whose per-word work is
/// inlined into the scanner's loop.
pub(super) trait Words {
    fn on_word(&mut self, w: &[u8], at: usize, ascii: bool);
}

impl<F: FnMut(&[u8], usize, bool)> Words for F {
    #[inline(always)]
    fn on_word(&mut self, w: &[u8], at: usize, ascii: bool) {
        self(w, at, ascii);
    }
}

/// Calls `f(word, byte_offset, ascii)` for every word of `text`, as bytes (UAX #29
/// words with at least one letter or digit, parted where a period glues two
/// sentences: "Hour.Mount" is two words, so a source's sentence opens with
/// a word of its own, as a claim cut there does). ASCII runs take a scanner that
/// follows the same rules for ASCII, 64 bytes at a time
/// ([`ascii_words`]); the whitespace-delimited chunks holding a non-ASCII
/// character go through `unicode-segmentation`. Whitespace never joins
/// words, so the split at whitespace is exact, and the ASCII text between
/// two such chunks is scanned in one run, however many chunks it holds.
#[inline(always)]
pub(super) fn for_each_word(text: &str, steps: &mut usize, f: &mut impl Words) {
    // Each byte is visited a bounded number of times; count them once here.
    *steps += text.len();
    // Most texts are ASCII throughout: one test of many bytes at a time
    // (the library's), then one run.
    if text.is_ascii() {
        return ascii_words(text, 0, &mut |w, at| f.on_word(w, at, true));
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // The ASCII run from `i`: to the text's end, or to the chunk holding
        // the next non-ASCII byte (both ends of a chunk are ASCII whitespace
        // or the text's ends, so char boundaries).
        let (start, end) = match first_non_ascii(&bytes[i..]) {
            None => (bytes.len(), bytes.len()),
            Some(p) => (
                bytes[i..i + p]
                    .iter()
                    .rposition(u8::is_ascii_whitespace)
                    .map_or(i, |w| i + w + 1),
                bytes[i + p..]
                    .iter()
                    .position(u8::is_ascii_whitespace)
                    .map_or(bytes.len(), |w| i + p + w),
            ),
        };
        if start > i {
            ascii_words(&text[i..start], i, &mut |w, at| f.on_word(w, at, true));
        }
        for (off, w) in text[start..end].unicode_word_indices() {
            if w.contains('.') {
                parted(w.as_bytes(), start + off, f);
            } else {
                f.on_word(w.as_bytes(), start + off, w.is_ascii());
            }
        }
        i = end;
    }
}

/// The word `w` at `at`, cut where a period glues two sentences, as ASCII
/// runs are ([`ascii_words`]). Kept out of the loop: few words hold a
/// period.
#[inline(never)]
fn parted(w: &[u8], mut at: usize, f: &mut impl Words) {
    let mut from = 0;
    for p in 1..w.len() {
        if glued_sentences(w, p) {
            f.on_word(&w[from..p], at, w[from..p].is_ascii());
            at += p + 1 - from;
            from = p + 1;
        }
    }
    f.on_word(&w[from..], at, w[from..].is_ascii());
}

/// Where the first non-ASCII byte of `b` is, 8 bytes at a time.
fn first_non_ascii(b: &[u8]) -> Option<usize> {
    let (words, tail) = b.as_chunks::<8>();
    for (k, w) in words.iter().enumerate() {
        let high = u64::from_le_bytes(*w) & 0x8080_8080_8080_8080;
        if high != 0 {
            return Some(k * 8 + high.trailing_zeros() as usize / 8);
        }
    }
    let at = words.len() * 8;
    tail.iter().position(|c| !c.is_ascii()).map(|p| at + p)
}

/// English stop words (case-folded, sorted): little checkable content, so
/// they are not terms a claim must find; they still count in the answer's
/// share of words found (an answer that wraps a fact in words its source
/// never uses keeps less closely to it). Negations are deliberately absent:
/// see [`NEGATIONS`].
pub(super) const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "it's",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Conversational fillers and discourse connectives ("however",
/// "moreover"), sorted: never a term, whatever the weights.
pub(super) const FILLERS: &[&str] = &[
    "absolutely",
    "actually",
    "additionally",
    "ah",
    "certainly",
    // Latin abbreviations ("e.g.", "i.e.") introduce, they do not state.
    "cf",
    "definitely",
    "e.g",
    "etc",
    "furthermore",
    "hmm",
    "however",
    "i.e",
    "importantly",
    "indeed",
    "lol",
    // Before a number, its sign ("minus 5" is "-5": `minus_before`).
    "minus",
    "moreover",
    "nevertheless",
    "nonetheless",
    "oh",
    "ok",
    "okay",
    "really",
    // The "s" of "2000's", cut off by word segmentation.
    "s",
    "sure",
    "um",
    "viz",
    "well",
    "wow",
    "yeah",
    "yes",
];

/// Words that name the sources themselves ("the provided documents"),
/// their verbs ("states", "mentions") and what may stand between.
pub(super) const REF_DETERMINERS: &[&str] =
    &["each", "my", "our", "the", "these", "this", "those", "your"];
pub(super) const REF_ADJECTIVES: &[&str] = &[
    "above",
    "attached",
    "available",
    "cited",
    "given",
    "provided",
    "referenced",
    "relevant",
    "retrieved",
    "search",
    "supplied",
];
/// Words that may stand before a word for the sources and say what kind
/// of document it is ("the annual report", "the press release"), read only
/// there: after it they are the claim's own words ("according to the
/// report, annual revenue rose").
pub(super) const REF_KINDS: &[&str] = &[
    "annual",
    "company",
    "earnings",
    "financial",
    "latest",
    "official",
    "original",
    "press",
    "quarterly",
    "recent",
];
pub(super) const REF_NOUNS: &[&str] = &[
    "article",
    "articles",
    "author",
    "authors",
    "context",
    "data",
    "document",
    "documents",
    "excerpt",
    "excerpts",
    "filing",
    "filings",
    "information",
    "material",
    "materials",
    "page",
    "pages",
    "paper",
    "papers",
    "passage",
    "passages",
    "presentation",
    "prospectus",
    "reference",
    "references",
    "release",
    "report",
    "reports",
    "results",
    "snippet",
    "snippets",
    "source",
    "sources",
    "statement",
    "statements",
    "studies",
    "study",
    "survey",
    "text",
    "texts",
    "transcript",
    "website",
];
pub(super) const REF_VERBS: &[&str] = &[
    "confirm",
    "confirmed",
    "confirms",
    "describe",
    "described",
    "describes",
    "explain",
    "explained",
    "explains",
    "indicate",
    "indicated",
    "indicates",
    "mention",
    "mentioned",
    "mentions",
    "note",
    "noted",
    "notes",
    "report",
    "reported",
    "reports",
    "say",
    "says",
    "show",
    "showed",
    "shown",
    "shows",
    "state",
    "stated",
    "states",
    "suggest",
    "suggested",
    "suggests",
];

/// Whether the word at `at..at + len` of `bytes` is read as no word of its
/// own: a word of a web address (which, once one opens, ends at
/// `*address_end`), "No." (the number sign), or the scale of the number
/// before it ("million" of "1.2 million"). Claims and sources skip the same
/// words, so a source copied verbatim is still found whole. A date or a
/// clock time moves `*address_end` past the words its first word reads.
#[inline(always)]
pub(super) fn skipped(bytes: &[u8], address_end: &mut usize, at: usize, len: usize) -> bool {
    if at < *address_end {
        return true;
    }
    // Most words: followed by neither ':' nor '.', not "www.…", and not a
    // word of seven letters or more after a number.
    let unusual = matches!(bytes.get(at + len), Some(b':' | b'.' | b'$'))
        || (len > 4 && bytes[at + 3] == b'.')
        || ((len >= 7 || matches!(len, 2 | 3 | 5)) && at >= 2 && bytes[at - 2].is_ascii_digit());
    if !unusual {
        return false;
    }
    match unusual_word(bytes, at, len) {
        Unusual::Read => false,
        Unusual::Skipped => true,
        Unusual::Through(end) => {
            *address_end = end;
            true
        }
    }
}

/// Where the part of the word `w` at `at` that lies past `end`, the end of
/// words read as one before it, starts: after the first period at or past
/// `end` ("Shares" of "p.m.Shares" after the time "5 p.m", "Shares" of
/// "PM.Shares" after "5:00 PM", which no word cut parts: see
/// [`for_each_word`]). A sentence glued to such words by its period is read
/// from its first word, by claims and sources alike. `None`: the word ends
/// before `end`, or no part follows it.
#[cold]
#[inline(never)]
pub(super) fn rest_past(w: &[u8], at: usize, end: usize) -> Option<usize> {
    if end <= at || end >= at + w.len() {
        return None;
    }
    let from = end - at;
    let dot = from + w[from..].iter().position(|&b| b == b'.')?;
    (dot + 1 < w.len()).then_some(dot + 1)
}

/// What [`skipped`] makes of a word its first test could not pass.
enum Unusual {
    Read,
    Skipped,
    /// It opens words read as none, which end there: a web address, or
    /// the "per cent" of "5 per cent" (as "5%").
    Through(usize),
}

#[inline(never)]
fn unusual_word(bytes: &[u8], at: usize, len: usize) -> Unusual {
    if let Some(end) = web_address(bytes, at, len)
        .or_else(|| per_cent(bytes, at, len))
        .or_else(|| percentage_points(bytes, at, len))
        .or_else(|| basis_points_of_number(bytes, at))
    {
        Unusual::Through(end)
    } else if is_number_sign(bytes, at, len)
        || us_dollar(bytes, at, len)
        || ((len >= 7 || matches!(len, 2 | 3)) && is_scale_of_number(bytes, at, len))
    {
        Unusual::Skipped
    } else {
        Unusual::Read
    }
}

/// Whether the word at `at..at + len` is the "US" of "US$": the dollar
/// sign after it is read as the dollar (see [`currency_before`]), as the
/// "$" of "$5" and "USD" are, so "US$5 billion" finds "$5 billion". Other
/// letters before "$" ("HK$", "A$") name another dollar and are read.
pub(super) fn us_dollar(bytes: &[u8], at: usize, len: usize) -> bool {
    len == 2
        && bytes[at..at + 2].eq_ignore_ascii_case(b"us")
        && bytes.get(at + 2) == Some(&b'$')
        && (at == 0 || !bytes[at - 1].is_ascii_alphanumeric())
}

/// Where the rate unit that the word at `at` opens ends, when a numeral
/// comes right before it ("bps" of "25 bps", "basis" of "25-basis-point"):
/// read as none, as "%" is, since the number is read as its percent.
fn basis_points_of_number(bytes: &[u8], at: usize) -> Option<usize> {
    let end = basis_points(bytes, at)?;
    numeral_then(bytes, at, b" -").then_some(end)
}

/// Where the words at `at` that write basis points end: "bps", "bp",
/// "basis point(s)", "basis-point(s)"; `None` when they do not.
fn basis_points(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = &bytes[at..];
    let n = rest.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    let word = &rest[..n];
    if word.eq_ignore_ascii_case(b"bps") || word.eq_ignore_ascii_case(b"bp") {
        return Some(at + n);
    }
    if !word.eq_ignore_ascii_case(b"basis") || !matches!(rest.get(n), Some(b' ' | b'-')) {
        return None;
    }
    points_at(bytes, at + n + 1)
}

/// Where "point" or "points" at `at` ends ("basis points", "percentage
/// point"); `None` when another word or none is there.
fn points_at(bytes: &[u8], at: usize) -> Option<usize> {
    let next = bytes.get(at..)?;
    let m = next.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    let unit = &next[..m];
    (unit.eq_ignore_ascii_case(b"point") || unit.eq_ignore_ascii_case(b"points")).then_some(at + m)
}

/// `numeral` in basis points written as its percent ("25": "0.25", "150":
/// "1.5", "12.5": "0.125"), into `out`: its length, or `None` when it does
/// not fit.
fn percent_of_basis_points(numeral: &[u8], out: &mut [u8; 48]) -> Option<usize> {
    scaled_numeral(numeral, -2, out)
}

/// Where the "cent" or "cents" after the number ending at `end` ends ("50
/// cents"); `None` when another word or none follows.
#[inline(always)]
pub(super) fn cents_after(bytes: &[u8], end: usize) -> Option<usize> {
    // Most numbers are followed by no word that starts with "c".
    if bytes.get(end) != Some(&b' ') || bytes.get(end + 1).is_none_or(|b| b | 0x20 != b'c') {
        return None;
    }
    cents_word(bytes, end + 1)
}

#[inline(never)]
fn cents_word(bytes: &[u8], at: usize) -> Option<usize> {
    let n = bytes[at..]
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    let word = &bytes[at..at + n];
    (word.eq_ignore_ascii_case(b"cents") || word.eq_ignore_ascii_case(b"cent")).then_some(at + n)
}

/// `numeral` in cents written as the amount in the currency's units, its
/// cents as two decimals ("50": "0.50", "5": "0.05", "150": "1.50", "2.5":
/// "0.025", "1000": "10"), into `out`, as a price is written with its
/// sign ("$0.50"): its length, or `None` when it does not fit.
pub(super) fn units_of_cents(numeral: &[u8], out: &mut [u8; 48]) -> Option<usize> {
    let mut n = scaled_numeral(numeral, -2, out)?;
    if n >= 2 && out[n - 2] == b'.' {
        *out.get_mut(n)? = b'0';
        n += 1;
    }
    Some(n)
}

/// Whether the number at `at` is negative, and how many bytes before it
/// its sign starts: a minus sign right before it ("-5", "−5") after a
/// space, a bracket, a quote or the start (not "5-10", not "2004-05"), or
/// the word "minus" and a space ("minus 5"; the word itself is a filler).
/// Claims and sources read such a number with its sign, so "-5" and "5"
/// are two numbers and "minus 5" is "-5".
#[inline(always)]
pub(super) fn minus_before(bytes: &[u8], at: usize) -> Option<usize> {
    // Most numbers follow a space after anything but "minus".
    let may = at > 0
        && match bytes[at - 1] {
            b'-' | 0x92 => true,
            b' ' => at >= 6 && bytes[at - 2] | 0x20 == b's' && bytes[at - 3] | 0x20 == b'u',
            _ => false,
        };
    if !may {
        return None;
    }
    sign_before(bytes, at)
}

#[inline(never)]
fn sign_before(bytes: &[u8], at: usize) -> Option<usize> {
    let before = &bytes[..at];
    let (rest, sign) = if let Some(r) = before.strip_suffix(b"-") {
        (r, 1)
    } else if let Some(r) = before.strip_suffix("\u{2212}".as_bytes()) {
        (r, 3)
    } else {
        let word = trailing_letters(before.strip_suffix(b" ")?);
        return word
            .eq_ignore_ascii_case(b"minus")
            .then_some(word.len() + 1);
    };
    rest.last()
        .is_none_or(|b| matches!(b, b' ' | b'(' | b'[' | b'"' | b'\n' | b'\t'))
        .then_some(sign)
}

/// The run of ASCII letters that ends `s` ("May" of "on May").
fn trailing_letters(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_alphabetic())
        .count();
    &s[s.len() - n..]
}

/// Room for a number written out: with its scale, then with its sign.
pub(super) type NumberText = ([u8; 48], [u8; 49]);

/// The number at `at..at + len` as claims and sources read it: with its
/// scale ("1.2 million": 1200000) and its sign ("-5", "minus 5"), and how
/// many bytes before `at` its sign starts, if it has one.
#[inline(never)]
pub(super) fn number_text<'a>(
    bytes: &'a [u8],
    at: usize,
    len: usize,
    (scaled, signed): &'a mut NumberText,
) -> (&'a [u8], Option<usize>) {
    if let Some(year) = decade_written_short(bytes, at, len).or_else(|| second_year(bytes, at, len))
    {
        scaled[..4].copy_from_slice(&year);
        return (&scaled[..4], None);
    }
    let w = with_scale(bytes, &bytes[at..at + len], at + len, scaled);
    let w = without_trailing_zeros(bytes, w, at + len);
    match minus_before(bytes, at) {
        Some(k) => (with_minus(w, signed), Some(k)),
        None => (w, None),
    }
}

/// The decade of the word at `at..at + len` written short after an
/// apostrophe ("'90s", "’70s", "'00s"), in full ("1990", as "1990s" is
/// read): the 1930s to the 1990s, and the 2000s and 2010s. Not "'20s"
/// (the 1920s or the 2020s), nor "90s" without its apostrophe (also
/// temperatures and ages: "in the 90s").
#[inline(always)]
fn decade_written_short(bytes: &[u8], at: usize, len: usize) -> Option<[u8; 4]> {
    // Most numbers are no two digits and an "s".
    let &[tens, b'0', b's'] = bytes.get(at..at + len)? else {
        return None;
    };
    let before = &bytes[..at];
    let apostrophe = [&b"'"[..], "\u{2019}".as_bytes(), "\u{2018}".as_bytes()]
        .into_iter()
        .find(|a| before.ends_with(a))?;
    let opens = before[..before.len() - apostrophe.len()]
        .last()
        .is_none_or(|b| !b.is_ascii_alphanumeric());
    let century: &[u8; 2] = match tens {
        b'3'..=b'9' => b"19",
        b'0' | b'1' => b"20",
        _ => return None,
    };
    opens.then_some([century[0], century[1], tens, b'0'])
}

/// The second year of a span written short after a year in full and a
/// hyphen, an en dash or a slash ("2018–19", "2004-05", "1939–45",
/// "2023/24"), in full ("2019"), as a span written out states it
/// ("2018–2019"); in the next century when its digits are below the first
/// year's ("1999–00": "2000"). Not a date's month ("2004-05-12"), nor two
/// digits after a number that is no year of four digits ("12-19",
/// "12345-67").
#[inline(always)]
fn second_year(bytes: &[u8], at: usize, len: usize) -> Option<[u8; 4]> {
    // Most numbers are no two digits after a sign.
    let &[tens @ b'0'..=b'9', ones @ b'0'..=b'9'] = bytes.get(at..at + len)? else {
        return None;
    };
    let before = &bytes[..at];
    let sign = [&b"-"[..], b"/", "\u{2013}".as_bytes()]
        .into_iter()
        .find(|s| before.ends_with(s))?;
    let first = before[..before.len() - sign.len()]
        .rsplit(|b| !b.is_ascii_digit())
        .next()?;
    let &[c1 @ (b'1' | b'2'), c2, y1, y2] = first else {
        return None;
    };
    let lead = before.len() - sign.len() - 4;
    let after = bytes.get(at + len..at + len + 2).unwrap_or_default();
    let date = matches!(after, [b'-' | b'/', d] if d.is_ascii_digit());
    let joined = lead
        .checked_sub(1)
        .is_some_and(|i| matches!(bytes[i], b'-' | b'/' | b'.' | b','));
    if date || joined {
        return None;
    }
    let century = u16::from(c1 - b'0') * 10 + u16::from(c2 - b'0');
    let next = (tens, ones) < (y1, y2);
    let century = century + u16::from(next);
    if century > 99 {
        return None;
    }
    let [a, b] = [(century / 10) as u8, (century % 10) as u8];
    Some([b'0' + a, b'0' + b, tens, ones])
}

/// A decimal's trailing zeros, and a point they leave last, cut: all of
/// them when nothing but zeros follows the point ("3.0" is "3", "$3.00"
/// "$3", "2.0 kg" "2 kg"), and any when a percent sign or word follows the
/// number ending at `end` ("4.50%" is "4.5%", "4.0 percent" "4%"), as
/// amounts and rates are written both ways. Not other zeros: "Section
/// 4.10" is not "Section 4.1", nor "version 3.10" "3.1".
#[inline(always)]
fn without_trailing_zeros<'w>(bytes: &[u8], w: &'w [u8], end: usize) -> &'w [u8] {
    // Most numbers do not end in a zero.
    if w.last() != Some(&b'0') || !w.contains(&b'.') {
        return w;
    }
    let kept = w.len() - w.iter().rev().take_while(|&&b| b == b'0').count();
    let whole = w[kept - 1] == b'.';
    if !(whole || percent_after(bytes, end)) || !is_numeral(w) {
        return w;
    }
    &w[..if whole { kept - 1 } else { kept }]
}

/// Whether "%", "percent", "pct" or "per cent" follows the number ending
/// at `end`.
fn percent_after(bytes: &[u8], end: usize) -> bool {
    match bytes.get(end) {
        Some(b'%') => true,
        Some(b' ') => {
            let at = end + 1;
            let len = bytes[at..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric())
                .count();
            is_percent_word(&bytes[at..at + len]) || per_cent(bytes, at, len).is_some()
        }
        _ => false,
    }
}

/// `number` with a minus sign before it, into `out`.
fn with_minus<'a>(number: &[u8], out: &'a mut [u8; 49]) -> &'a [u8] {
    let n = number.len().min(48);
    out[0] = b'-';
    out[1..=n].copy_from_slice(&number[..n]);
    &out[..=n]
}

/// Where the web address that the word at `at..at + len` of `bytes` opens
/// ends ("https" of "https://…", "www" of "www.…"): at the next whitespace
/// or marker. `None` when the word opens none.
fn web_address(bytes: &[u8], at: usize, len: usize) -> Option<usize> {
    if !matches!(bytes[at] | 0x20, b'h' | b'w') {
        return None;
    }
    let word = &bytes[at..at + len];
    let next = bytes.get(at + len).copied();
    // "https" before "://"; "www" before "." or joined to it as one word
    // ("www.example.org").
    let opens = (next == Some(b':')
        && (word.eq_ignore_ascii_case(b"https") || word.eq_ignore_ascii_case(b"http"))
        && bytes[at + len..].starts_with(b"://"))
        || (next == Some(b'.') && word.eq_ignore_ascii_case(b"www"))
        || (len > 4 && word[..4].eq_ignore_ascii_case(b"www."));
    opens.then(|| {
        let tail = &bytes[at..];
        at + tail
            .iter()
            .enumerate()
            .position(|(k, &b)| b.is_ascii_whitespace() || tail[k..].starts_with(b"[^"))
            .unwrap_or(tail.len())
    })
}

/// Lower-case words, sorted, and where the words of each first letter
/// start among them: a word is compared with the few that share its first
/// letter only.
struct List(&'static [&'static str], [u8; 27]);

impl List {
    const fn new(words: &'static [&'static str]) -> List {
        let mut starts = [0u8; 27];
        let mut letter = 0;
        while letter < 27 {
            let mut i = 0;
            while i < words.len() && (words[i].as_bytes()[0] - b'a') < letter as u8 {
                i += 1;
            }
            starts[letter] = i as u8;
            letter += 1;
        }
        List(words, starts)
    }

    #[inline(always)]
    fn has(&self, w: &[u8]) -> bool {
        let first = usize::from(w[0].to_ascii_lowercase().wrapping_sub(b'a'));
        first < 26
            && self.0[usize::from(self.1[first])..usize::from(self.1[first + 1])]
                .iter()
                .any(|l| l.len() == w.len() && l.as_bytes().eq_ignore_ascii_case(w))
    }
}

const DETERMINER: List = List::new(REF_DETERMINERS);
const ADJECTIVE: List = List::new(REF_ADJECTIVES);
const KIND: List = List::new(REF_KINDS);
const NOUN: List = List::new(REF_NOUNS);
const VERB: List = List::new(REF_VERBS);
const FILLER: List = List::new(FILLERS);
/// Before a word for the sources: "the first source", "the second
/// document"; never after it, where a word of the claim may follow.
const ORDINAL: List = List::new(&["fifth", "first", "fourth", "last", "second", "third"]);
const AND_OR: List = List::new(&["and", "or"]);
/// What may open a bracketed reference: "(see source 1)", "(cf. the report)".
const SEE: List = List::new(&["cf", "see"]);
const PER_WORD: List = List::new(&["per"]);
const ACCORDING: List = List::new(&["according"]);
const BASED: List = List::new(&["based"]);
const TO: List = List::new(&["to"]);
const ON: List = List::new(&["on"]);
const AS: List = List::new(&["as"]);
const BY_IN: List = List::new(&["by", "in"]);
const THAT: List = List::new(&["that"]);
const IN_TO: List = List::new(&["in", "to"]);
const SUMMING: List = List::new(&[
    "brief",
    "conclusion",
    "short",
    "sum",
    "summarise",
    "summarize",
    "summary",
]);
const UP: List = List::new(&["up"]);
const OVERALL: List = List::new(&["overall"]);
const IT: List = List::new(&["it"]);
const IS: List = List::new(&["is"]);
const ITS: List = List::new(&["it's", "it’s"]);
const WORTHY: List = List::new(&["important", "worth"]);
const NOTING: List = List::new(&["mention", "mentioning", "note", "noting"]);
const PLEASE: List = List::new(&["please"]);
const NOTE: List = List::new(&["note"]);
const KEEP: List = List::new(&["keep"]);
const IN: List = List::new(&["in"]);
const MIND: List = List::new(&["mind"]);

/// Which of a claim's `n` words (word `i` is `word(i)`) refer to the
/// sources rather than state anything, as `(lead, trail)`: words before
/// `lead` and from `trail` on. A claim may open with such words ("According
/// to the provided sources, …", "Based on the documents, …", "The passage
/// states that …", "As mentioned in the article, …", "Per Source 2, …",
/// after fillers such as "Yes,") or close with them ("…, according to the
/// sources", "… (Source 1)", "… [see sources 1 and 3]"; in brackets,
/// `bracketed(i)` telling that words `i..n` stand alone inside a pair),
/// or after a comma with a word for the sources and a verb ("…, the
/// report says", "…, as the filing shows"; `comma_before(i)`: a comma
/// stands between words `i - 1` and `i`). A source may be named by its
/// number ("Source 1", "document 2"). "According to" before anything else
/// ("According to Healthline, …") is left out alone: the name is still
/// the claim's. Only at the ends: within a claim they would join words the
/// sources hold apart.
pub(super) fn source_reference<'a>(
    n: usize,
    word: impl Fn(usize) -> &'a [u8],
    bracketed: impl Fn(usize) -> bool,
    comma_before: impl Fn(usize) -> bool,
) -> (usize, usize) {
    let is = |i: usize, list: &List| i < n && list.has(word(i));
    // The number a source is named by ("Source 1"): one or two digits.
    let numbered =
        |i: usize| i < n && matches!(word(i), [b'1'..=b'9'] | [b'1'..=b'9', b'0'..=b'9']);
    // [determiner] [ordinal] [adjectives] noun [numbers], from `i`: where
    // it ends.
    let noun_phrase = |mut i: usize| {
        if is(i, &DETERMINER) {
            i += 1;
        }
        if is(i, &ORDINAL) {
            i += 1;
        }
        while is(i, &ADJECTIVE) || is(i, &KIND) {
            i += 1;
        }
        if !is(i, &NOUN) {
            return None;
        }
        i += 1;
        if numbered(i) {
            // "Sources 1, 2 and 4".
            while numbered(i) || (is(i, &AND_OR) && numbered(i + 1)) {
                i += 1;
            }
            return Some(i);
        }
        // "the documents provided": an adjective may follow its noun.
        Some(i + usize::from(is(i, &ADJECTIVE)))
    };
    // A summing-up or a call to note, from `i` ("In summary", "Overall",
    // "It is important to note that", "Keep in mind that"): where it ends.
    let discourse = |i: usize| {
        if is(i, &IN_TO) && is(i + 1, &SUMMING) {
            return Some(i + 2 + usize::from(is(i + 2, &UP)));
        }
        if is(i, &OVERALL) {
            return Some(i + 1);
        }
        let it = if is(i, &IT) && is(i + 1, &IS) {
            2
        } else {
            usize::from(is(i, &ITS))
        };
        if it > 0 {
            let mut j = i + it;
            if !is(j, &WORTHY) {
                return None;
            }
            j += 1 + usize::from(is(j + 1, &TO));
            return is(j, &NOTING).then(|| j + 1 + usize::from(is(j + 1, &THAT)));
        }
        let j = i + usize::from(is(i, &PLEASE));
        if is(j, &NOTE) && is(j + 1, &THAT) {
            return Some(j + 2);
        }
        (is(i, &KEEP) && is(i + 1, &IN) && is(i + 2, &MIND))
            .then(|| i + 3 + usize::from(is(i + 3, &THAT)))
    };
    // "according to …", "based on …", "per …", "as per …" from `i`:
    // where it ends.
    let attributed = |i: usize| {
        if (is(i, &ACCORDING) && is(i + 1, &TO)) || (is(i, &BASED) && is(i + 1, &ON)) {
            noun_phrase(i + 2)
        } else if is(i, &PER_WORD) {
            noun_phrase(i + 1)
        } else if is(i, &AS) && is(i + 1, &PER_WORD) {
            noun_phrase(i + 2)
        } else {
            None
        }
    };
    let mut start = 0;
    let mut opened = 0;
    loop {
        while is(start, &FILLER) {
            start += 1;
        }
        match discourse(start) {
            Some(end) => (start, opened) = (end, end),
            None => break,
        }
    }
    // "as mentioned in …", "as stated by …" from `i`: where it ends.
    let as_said = |i: usize| {
        (is(i, &AS) && is(i + 1, &VERB) && is(i + 2, &BY_IN))
            .then(|| noun_phrase(i + 3))
            .flatten()
    };
    let lead = attributed(start)
        .or_else(|| as_said(start))
        .or_else(|| {
            noun_phrase(start)
                .filter(|&i| is(i, &VERB))
                .map(|i| i + 1 + usize::from(is(i + 1, &THAT)))
        })
        .or_else(|| {
            (is(start, &ACCORDING) && is(start + 1, &TO) && start + 2 < n).then_some(start + 2)
        })
        .unwrap_or(opened);
    // A closing phrase ends with its noun or a source's number; the
    // shortest is "Source 1" in brackets (two words), the longest looked
    // for nine ("according to sources 1, 2, 3 and 4" is eight).
    let last = n.wrapping_sub(1);
    let ends_noun =
        is(last, &NOUN) || (is(last, &ADJECTIVE) && is(n.wrapping_sub(2), &NOUN)) || numbered(last);
    let ends_verb = is(last, &VERB);
    let closes = |i: usize| {
        attributed(i) == Some(n)
            || as_said(i) == Some(n)
            || (bracketed(i)
                && (noun_phrase(i) == Some(n) || (is(i, &SEE) && noun_phrase(i + 1) == Some(n))))
            || (ends_verb
                && i > lead
                && comma_before(i)
                && (noun_phrase(i) == Some(last)
                    || (is(i, &AS) && noun_phrase(i + 1) == Some(last))))
    };
    let trail = if n > lead && (ends_noun || ends_verb) {
        (lead.max(n.saturating_sub(9))..n.saturating_sub(1))
            .find(|&i| closes(i))
            .unwrap_or(n)
    } else {
        n
    };
    (lead, trail)
}

/// Negations count as content words, weighted like entities: a claim that
/// says "not" where its source does not is the cheapest contradiction to see.
/// Sorted: looked up by binary search.
pub(super) const NEGATIONS: &[&str] = &[
    "cannot", "neither", "never", "no", "nobody", "none", "nor", "not", "nothing", "nowhere",
    "without",
];

pub(super) fn is_stop(lower: &str) -> bool {
    STOP_WORDS.binary_search(&lower).is_ok()
}

/// The bytes of a word of at most 16 bytes as one number, byte `i` in
/// bits `8 i..`, each lower-cased by `case` (distinct words give distinct
/// numbers: no word holds a zero byte).
pub(super) const fn packed_word(word: &[u8], case: u8) -> u128 {
    let mut x = 0u128;
    let mut i = 0;
    while i < word.len() {
        x |= ((word[i] | case) as u128) << (8 * i);
        i += 1;
    }
    x
}

/// The first `N` of `words` (in lower case) packed (see [`packed_word`])
/// and sorted, for a search of numbers instead of byte comparisons.
pub(super) const fn packed_sorted<const N: usize>(words: &[&str]) -> [u128; N] {
    let mut out = [0u128; N];
    let mut i = 0;
    while i < N {
        let x = packed_word(words[i].as_bytes(), 0);
        let mut j = i;
        while j > 0 && out[j - 1] > x {
            out[j] = out[j - 1];
            j -= 1;
        }
        out[j] = x;
        i += 1;
    }
    out
}

/// [`STOP_WORDS`] packed (see [`packed_word`]), sorted.
const STOP_PACKED: [u128; STOP_WORDS.len()] = packed_sorted(STOP_WORDS);

/// Longest of [`STOP_WORDS`].
const STOP_LEN: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < STOP_WORDS.len() {
        if STOP_WORDS[i].len() > n {
            n = STOP_WORDS[i].len();
        }
        i += 1;
    }
    n
};

// A packed word holds 16 bytes.
const _: () = assert!(STOP_LEN <= 16);

/// Whether `word`, of ASCII letters, digits, `'` and `-` in any case, is a
/// stop word: for the scans of a source's text that test every word
/// (setting bit 5 lower-cases a letter and leaves those other bytes as
/// they are), without copying the word nor comparing it byte by byte with
/// each word the search passes.
pub(super) fn is_stop_name_word(word: &[u8]) -> bool {
    word.len() <= STOP_LEN && STOP_PACKED.binary_search(&packed_word(word, 0x20)).is_ok()
}

pub(super) fn is_filler(lower: &str) -> bool {
    FILLERS.binary_search(&lower).is_ok()
}

pub(super) fn is_negation(lower: &str) -> bool {
    NEGATIONS.binary_search(&lower).is_ok() || lower.ends_with("n't")
}

/// The word before `at` in `bytes`, spaces between passed over: the run of
/// ASCII letters ending there, empty when the byte there is no letter
/// ("5%", a comma).
pub(super) fn letters_before(bytes: &[u8], at: usize) -> &[u8] {
    let before = bytes[..at].trim_ascii_end();
    let start = before
        .iter()
        .rposition(|b| !b.is_ascii_alphabetic())
        .map_or(0, |p| p + 1);
    &before[start..]
}

/// Whether the negation at `at..at + len` of `bytes` negates nothing: a
/// "no" that answers a question ([`answer_particle`]), or the "not" of "not
/// only … but" ("not just", "not merely", "not simply"), which states what
/// follows and adds to it ("was not only approved but also funded").
/// Claims and sources alike read it as a filler.
pub(super) fn negates_nothing(bytes: &[u8], at: usize, len: usize) -> bool {
    answer_particle(bytes, at, len) || not_only(bytes, at, len)
}

/// Whether the word `w`, negated, passes its negation on to the next
/// content word as well: "yet" or an adverb in "-ly" ("was not yet
/// approved", "did not immediately respond", "is not necessarily opposed"
/// negate "approved", "respond", "opposed"). Not the verbs in "-ply"
/// ("did not apply for a licence").
pub(super) fn passes_negation_on(w: &[u8]) -> bool {
    w.eq_ignore_ascii_case(b"yet")
        || (w.len() >= 5
            && w[w.len() - 2..].eq_ignore_ascii_case(b"ly")
            && !w[w.len() - 3].eq_ignore_ascii_case(&b'p'))
}

/// The "not" of "not only … but" and its kin (see [`negates_nothing`]):
/// with a "but" further on in its sentence, as the construction has it.
/// Without one the "not" negates ("That was not just where I wanted
/// it").
#[inline(never)]
fn not_only(bytes: &[u8], at: usize, len: usize) -> bool {
    if !bytes[at..at + len].eq_ignore_ascii_case(b"not") {
        return false;
    }
    let rest = &bytes[at + len..];
    let gap = rest.iter().take_while(|&&b| b == b' ').count();
    let word = &rest[gap..];
    let n = word.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    if gap == 0
        || ![&b"only"[..], b"just", b"merely", b"simply"]
            .iter()
            .any(|w| word[..n].eq_ignore_ascii_case(w))
    {
        return false;
    }
    // The rest of its sentence, up to the first mark that may end one (a
    // period, `!` or `?` before a space; a newline).
    let rest = &word[n..];
    let end = (0..rest.len())
        .find(|&i| {
            rest[i] == b'\n'
                || (matches!(rest[i], b'.' | b'!' | b'?')
                    && rest.get(i + 1).is_none_or(u8::is_ascii_whitespace))
        })
        .unwrap_or(rest.len());
    let sentence = &rest[..end];
    (0..sentence.len()).any(|i| {
        sentence[i..].len() >= 4
            && sentence[i] == b' '
            && sentence[i + 1..i + 4].eq_ignore_ascii_case(b"but")
            && sentence
                .get(i + 4)
                .is_none_or(|b| !b.is_ascii_alphanumeric())
    })
}

/// Whether the word at `at..at + len` of `bytes` is a "no" that answers a
/// question ("No, the fund is closed to new investors."): first in its
/// sentence, and followed by a comma or an exclamation mark. Such a "no"
/// negates nothing after it and states nothing a source could hold, so
/// claims and sources alike read it as a filler.
pub(super) fn answer_particle(bytes: &[u8], at: usize, len: usize) -> bool {
    if !bytes[at..at + len].eq_ignore_ascii_case(b"no") {
        return false;
    }
    let after = bytes[at + len..].iter().find(|b| !b.is_ascii_whitespace());
    if !matches!(after, Some(b',' | b'!')) {
        return false;
    }
    // Quotes and brackets may open the sentence, or close the one before
    // after its period ("(born 1952.) No,"), as the sentence rule reads
    // them; a citation marker ("[^1]") may close the one before.
    let before = bytes[..at]
        .iter()
        .rev()
        .find(|b| !b.is_ascii_whitespace() && !matches!(b, b'"' | b'\'' | b'(' | b')'));
    matches!(before, None | Some(b'.' | b'?' | b'!' | b':' | b']'))
}

/// Case folding into a reused buffer. Numbers drop their digit-group
/// separators so `1,000` and `1000` agree, and an ordinal or plural suffix
/// after the last digit so `7th` and `7`, `1960s` and `1960` agree.
pub(super) fn fold_into(buf: &mut String, word: &str) -> bool {
    fold_with(buf, word, true)
}

/// [`fold_into`] keeping accents and a number's glued scale or unit: how a
/// finding names a claim's word ("zürich", which the check also finds as
/// "Zurich"; "5bn", found as "5000000000").
pub(super) fn name_into(buf: &mut String, word: &str) -> bool {
    fold_with(buf, word, false)
}

fn fold_with(buf: &mut String, word: &str, plain: bool) -> bool {
    buf.clear();
    let mut number = false;
    if word.is_ascii() {
        buf.push_str(word);
        buf.make_ascii_lowercase();
        number = word.bytes().any(|b| b.is_ascii_digit());
    } else {
        for c in word.chars() {
            number |= c.is_numeric();
            // A curly apostrophe ("people’s", "didn’t") is the straight one.
            if c == '\u{2019}' {
                buf.push('\'');
            } else if !(plain && plain_latin(c, buf)) {
                buf.extend(c.to_lowercase());
            }
        }
    }
    if number {
        buf.retain(|c| c != ',' && c != '\'');
        for suffix in ["st", "nd", "rd", "th", "s"] {
            if let Some(rest) = buf.strip_suffix(suffix)
                && rest.ends_with(|c: char| c.is_ascii_digit())
            {
                buf.truncate(rest.len());
                break;
            }
        }
        // "$5bn", "3k": the number written out, to be found as "$5 billion"
        // and "3,000" are.
        let digits = buf
            .trim_end_matches(|c: char| c.is_ascii_alphabetic())
            .len();
        // "25bps": the rate as its percent. A finding names them as
        // written.
        let (numeral, suffix) = buf.as_bytes().split_at(digits);
        let mut out = [0u8; 48];
        let written = if !plain || !is_numeral(numeral) {
            None
        } else if let Some(zeros) = scale_of(suffix, SCALE_SUFFIXES) {
            scaled_numeral(numeral, zeros, &mut out)
        } else if suffix == b"bps" || suffix == b"bp" {
            percent_of_basis_points(numeral, &mut out)
        } else {
            None
        };
        if let Some(len) = written {
            buf.clear();
            buf.extend(out[..len].iter().map(|&b| char::from(b)));
        }
    }
    number
}

/// A Latin letter with a diacritic written as its plain letter, in lower
/// case, into `buf` ("é" → "e", "ß" → "ss", "ø" → "o"): answers and
/// sources spell names with and without accents ("São Paulo", "Sao Paulo").
/// Whether `c` was one; letters of other scripts keep their marks.
fn plain_latin(c: char, buf: &mut String) -> bool {
    if !('\u{c0}'..'\u{250}').contains(&c) {
        return false;
    }
    let plain = match c {
        'ß' => "ss",
        'æ' | 'Æ' => "ae",
        'œ' | 'Œ' => "oe",
        'ø' | 'Ø' => "o",
        'ł' | 'Ł' => "l",
        'đ' | 'Đ' | 'ð' | 'Ð' => "d",
        'þ' | 'Þ' => "th",
        'ı' => "i",
        _ => {
            let mut letters = 0;
            unicode_normalization::char::decompose_canonical(c, |d| {
                // The combining diacritical marks (acute, grave, umlaut, …).
                if !('\u{300}'..'\u{370}').contains(&d) {
                    buf.extend(d.to_lowercase());
                    letters += 1;
                }
            });
            return letters > 0;
        }
    };
    buf.push_str(plain);
    true
}

/// Scale words that may follow a number ("1.2 million", "$5 billion") and
/// the same glued to it ("$5bn", "3k", "1.2m"), as powers of ten: a number
/// with its scale is one number, written out ("1200000"), so each way of
/// writing it finds the others.
///
/// The abbreviations that say only a scale are scales after a space too
/// ("$5 bn", "$5 bln", "EUR 3 mln"); "m", "k" and "b" are not (metres,
/// kilo-, bytes).
const SCALES: &[(&str, i32)] = &[
    ("billion", 9),
    ("million", 6),
    ("thousand", 3),
    ("trillion", 12),
    ("bn", 9),
    ("bln", 9),
    ("mn", 6),
    ("mln", 6),
    ("tn", 12),
    ("trn", 12),
];
const SCALE_SUFFIXES: &[(&str, i32)] = &[
    ("b", 9),
    ("bn", 9),
    ("bln", 9),
    ("k", 3),
    ("m", 6),
    ("mn", 6),
    ("mln", 6),
    ("tn", 12),
    ("trn", 12),
];

fn scale_of(word: &[u8], table: &[(&str, i32)]) -> Option<i32> {
    table
        .iter()
        .find(|(s, _)| s.as_bytes().eq_ignore_ascii_case(word))
        .map(|&(_, zeros)| zeros)
}

/// Digits with `,` separators and at most one `.`, from a digit to a digit.
fn is_numeral(w: &[u8]) -> bool {
    w.first().is_some_and(u8::is_ascii_digit)
        && w.last().is_some_and(u8::is_ascii_digit)
        && w.iter()
            .all(|&b| b.is_ascii_digit() || b == b',' || b == b'.')
        && w.iter().filter(|&&b| b == b'.').count() <= 1
}

/// The digits of `numeral` without its separators, into `digits` from
/// `from` on: where they end, and where its point stood among them.
fn digits_of(numeral: &[u8], digits: &mut [u8; 48], from: usize) -> Option<(usize, Option<usize>)> {
    let mut n = from;
    let mut point = None;
    for &b in numeral {
        match b {
            b',' => {}
            b'.' => point = Some(n),
            _ => {
                *digits.get_mut(n)? = b;
                n += 1;
            }
        }
    }
    Some((n, point))
}

/// `numeral` times ten to the `zeros`, written as a folded number is
/// ("1.2", 6: "1200000"; "2.25", 1: "22.5"; "25", -2: "0.25"), into `out`:
/// its length, or `None` when it does not fit.
fn scaled_numeral(numeral: &[u8], zeros: i32, out: &mut [u8; 48]) -> Option<usize> {
    // Zeros before the digits, for a point that moves left past them.
    let before = zeros.min(0).unsigned_abs() as usize;
    let mut digits = [b'0'; 48];
    let (n, point) = digits_of(numeral, &mut digits, before)?;
    // The point moves `zeros` places right; a numeral opens with a digit,
    // so one is left before it.
    let point = point.unwrap_or(n).checked_add_signed(zeros as isize)?;
    let end = n.max(point);
    let mut len = 0;
    let mut push = |b: u8, len: &mut usize| -> Option<()> {
        *out.get_mut(*len)? = b;
        *len += 1;
        Some(())
    };
    for i in 0..end {
        if i == point && i < n {
            if len == 0 {
                push(b'0', &mut len)?;
            }
            push(b'.', &mut len)?;
        }
        let d = digits[..n].get(i).copied().unwrap_or(b'0');
        // No leading zeros before the point.
        if len == 0 && d == b'0' && i + 1 < point {
            continue;
        }
        push(d, &mut len)?;
    }
    if out[..len].contains(&b'.') {
        while out[len - 1] == b'0' {
            len -= 1;
        }
        if out[len - 1] == b'.' {
            len -= 1;
        }
    }
    Some(len)
}

/// The number word `w`, ending at `end` of `bytes`, with the scale word
/// after it ("1.2" of "1.2 million"): the number written out, in `out`.
pub(super) fn with_scale<'b>(
    bytes: &[u8],
    w: &'b [u8],
    end: usize,
    out: &'b mut [u8; 48],
) -> &'b [u8] {
    let after = bytes.get(end).copied();
    if !matches!(after, Some(b' ' | b'-')) || !is_numeral(w) {
        return w;
    }
    let scaled = if after == Some(b' ')
        && let Some(zeros) = {
            let rest = &bytes[end + 1..];
            let word = &rest[..rest.iter().take_while(|b| b.is_ascii_alphabetic()).count()];
            scale_of(word, SCALES)
        } {
        scaled_numeral(w, zeros, out)
    } else if basis_points(bytes, end + 1).is_some() {
        percent_of_basis_points(w, out)
    } else {
        None
    };
    match scaled {
        Some(len) => &out[..len],
        None => w,
    }
}

/// Whether the word at `at..at + len` of `bytes` belongs to the number
/// before it: its scale ("million" of "1.2 million"), read with it, or
/// "percent" (or "pct"), which "5%" writes as a sign (not a word).
fn is_scale_of_number(bytes: &[u8], at: usize, len: usize) -> bool {
    let word = &bytes[at..at + len];
    (scale_of(word, SCALES).is_some() || is_percent_word(word)) && numeral_then(bytes, at, b" ")
}

/// A clock time that the number at `at..at + len` opens: a number with
/// "a.m." or "p.m." after it (its minutes between, one space before it or
/// none), or with minutes after it. Its hour and minutes on the 24-hour
/// clock, written into `out` ("5:30 p.m.", "5:30pm" and "17:30" are
/// "17:30"; "5 p.m." is "17:00", "12 a.m." "0:00", "09:00" "9:00"), whether
/// it says "a.m." or "p.m." (without, "5:00" may be either), and where its
/// last word ends. `None` for any other number.
#[inline(always)]
pub(super) fn clock_time<'o>(
    bytes: &[u8],
    at: usize,
    len: usize,
    out: &'o mut [u8; 5],
) -> Option<(&'o [u8], bool, usize)> {
    // Most numbers are followed by neither a colon nor an "a" or "p",
    // glued or after a space.
    let next = |i: usize| bytes.get(i).map_or(0, |b| b | 0x20);
    let end = at + len;
    let may = match next(end) {
        b':' | b'a' | b'p' => true,
        b' ' => matches!(next(end + 1), b'a' | b'p'),
        _ => false,
    };
    if !may || len > 2 {
        return None;
    }
    clock_time_at(bytes, at, len, out)
}

#[inline(never)]
fn clock_time_at<'o>(
    bytes: &[u8],
    at: usize,
    len: usize,
    out: &'o mut [u8; 5],
) -> Option<(&'o [u8], bool, usize)> {
    let hour = match bytes[at..at + len] {
        [d] if d.is_ascii_digit() => d - b'0',
        [t, d] if t.is_ascii_digit() && d.is_ascii_digit() => (t - b'0') * 10 + d - b'0',
        _ => return None,
    };
    // Not the minutes of "10:05 pm", nor a part of "1.5" or "1,5".
    if at > 0 && matches!(bytes[at - 1], b':' | b'.' | b',') {
        return None;
    }
    let minutes = minutes_after(bytes, at + len);
    let end = minutes.unwrap_or(at + len);
    let space = usize::from(bytes.get(end) == Some(&b' '));
    let (hour, marked, end) = match meridiem_at(bytes, end + space) {
        Some((pm, end)) if (1..=12).contains(&hour) => (hour % 12 + 12 * u8::from(pm), true, end),
        None if minutes.is_some() && hour <= 24 => (hour, false, end),
        _ => return None,
    };
    let mm = minutes.map_or(*b"00", |e| [bytes[e - 2], bytes[e - 1]]);
    let n = if hour < 10 {
        out[0] = b'0' + hour;
        1
    } else {
        out[..2].copy_from_slice(&[b'0' + hour / 10, b'0' + hour % 10]);
        2
    };
    out[n] = b':';
    out[n + 1..n + 3].copy_from_slice(&mm);
    Some((&out[..n + 3], marked, end))
}

/// Where the minutes of a clock time end, when ":" and two digits follow
/// at `at` and no third digit or colon ("17:00", not "1:00:00").
fn minutes_after(bytes: &[u8], at: usize) -> Option<usize> {
    let [b':', tens, ones] = *bytes.get(at..at + 3)? else {
        return None;
    };
    let end = at + 3;
    (tens.is_ascii_digit()
        && ones.is_ascii_digit()
        && !bytes
            .get(end)
            .is_some_and(|b| b.is_ascii_digit() || *b == b':'))
    .then_some(end)
}

/// "a.m." or "p.m." at `at`, in any case, with its dots or without ("pm",
/// "P.M."), as a word of its own: whether it is "p.m.", and where its word
/// ends ("p.m" of "p.m.", as the scanner gives it).
fn meridiem_at(bytes: &[u8], at: usize) -> Option<(bool, usize)> {
    let rest = bytes.get(at..)?;
    let pm = match rest.first()? | 0x20 {
        b'a' => false,
        b'p' => true,
        _ => return None,
    };
    let len = match rest.get(1..)? {
        [m, ..] if m | 0x20 == b'm' => 2,
        [b'.', m, ..] if m | 0x20 == b'm' => 3,
        _ => return None,
    };
    // "am" of "amount".
    (!rest.get(len).is_some_and(u8::is_ascii_alphanumeric)).then_some((pm, at + len))
}

/// "percent" and its short form "pct", which follow a number as "%" does.
fn is_percent_word(word: &[u8]) -> bool {
    word.eq_ignore_ascii_case(b"percent") || word.eq_ignore_ascii_case(b"pct")
}

/// Where "per cent" ends when the word at `at` is its "per", after a
/// number ("5 per cent", British for "5 percent"): read as none, as
/// "percent" and "%" are.
fn per_cent(bytes: &[u8], at: usize, len: usize) -> Option<usize> {
    let end = at + len + 5;
    let words = bytes.get(at..end)?;
    let whole = bytes.get(end).is_none_or(|b| !b.is_ascii_alphanumeric());
    (words.eq_ignore_ascii_case(b"per cent") && whole && numeral_then(bytes, at, b" "))
        .then_some(end)
}

/// Where "percentage point(s)" ends when the word at `at` is its
/// "percentage", after a number ("0.25 percentage points"): read as none,
/// as "%" is, so that a change written in points finds the same change
/// written with "%" or in basis points.
fn percentage_points(bytes: &[u8], at: usize, len: usize) -> Option<usize> {
    if len != 10 || !bytes[at..at + len].eq_ignore_ascii_case(b"percentage") {
        return None;
    }
    let end = points_at(bytes, at + len + 1)?;
    (bytes[at + len] == b' ' && numeral_then(bytes, at, b" ")).then_some(end)
}

/// Whether a numeral that is a word of its own ends right before the one
/// byte before `at`, and that byte is one of `between` ("5 per cent",
/// "25-basis-point"). A word that opens the text has none before it.
fn numeral_then(bytes: &[u8], at: usize, between: &[u8]) -> bool {
    at.checked_sub(1)
        .is_some_and(|i| between.contains(&bytes[i]) && follows_numeral(bytes, at))
}

/// Whether a numeral that is a word of its own ("$5", not "A5"), or an
/// amount after a currency's code ("EUR30": [`currency_glued`]), ends one
/// space before `at`.
fn follows_numeral(bytes: &[u8], at: usize) -> bool {
    let before = &bytes[..at - 1];
    let start = before
        .iter()
        .rposition(|b| !(b.is_ascii_digit() || *b == b',' || *b == b'.'))
        .map_or(0, |p| p + 1);
    let own = |from: usize| from == 0 || !before[from - 1].is_ascii_alphanumeric();
    is_numeral(&before[start..])
        && (own(start)
            || (start >= 3 && currency_code(&before[start - 3..start]).is_some() && own(start - 3)))
}

/// `word` in ASCII lower case, in `buf`; `None` when longer.
pub(super) fn lower_case<'b>(word: &[u8], buf: &'b mut [u8; 16]) -> Option<&'b [u8]> {
    let lower = buf.get_mut(..word.len())?;
    for (l, c) in lower.iter_mut().zip(word) {
        *l = c.to_ascii_lowercase();
    }
    Some(lower)
}

/// The compound that the word at `at..at + len` closes by a hyphen,
/// closed up ("mail" of "e-mail": "email") into `out`: its length. Only a
/// compound a writer may also close up: a prefix of one to five letters and
/// a word ("e-mail", "co-founder", "re-elected"), two halves only. Claims
/// and sources also read such a compound as one word, so either spelling
/// finds the other. Callers test first that a hyphen comes right before
/// the word.
#[inline(never)]
pub(super) fn closed_compound(
    bytes: &[u8],
    at: usize,
    len: usize,
    out: &mut [u8; 48],
) -> Option<usize> {
    let prev_end = at.checked_sub(1)?;
    let prefix = bytes[..prev_end]
        .iter()
        .rev()
        .take(6)
        .take_while(|b| b.is_ascii_alphabetic())
        .count();
    let start = prev_end - prefix;
    let whole_word =
        start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'-');
    if !((1..=5).contains(&prefix)
        && whole_word
        && bytes[at..at + len].iter().all(u8::is_ascii_alphabetic)
        && bytes.get(at + len) != Some(&b'-'))
    {
        return None;
    }
    let mut n = 0;
    for &b in &bytes[start..at + len] {
        if b != b'-' {
            *out.get_mut(n)? = b;
            n += 1;
        }
    }
    Some(n)
}

/// A word that writes other words short, read as them: a period of a
/// financial year ("Q3" and "3Q" are "3rd quarter", "H1" is "1st half",
/// "FY2023" is "fiscal year" before "2023", "3Q23" is "3rd quarter 2023"),
/// or a financial abbreviation ("bps" is "basis points", "YoY" is "year
/// over year"). `words` come before the rest of the word, from `rest` on
/// (the year's digits of "FY2023"; nothing for the others).
#[derive(Debug, PartialEq)]
pub(super) struct ShortForm {
    pub(super) words: &'static [&'static [u8]],
    pub(super) rest: usize,
    /// The year a period writes with two digits ("2023" of "FY23" and
    /// "3Q23"), read after `words`; its digits are not read as they are.
    pub(super) year: Option<[u8; 4]>,
    /// It names a time (a period), as a date does: a sentence stating one
    /// is checked like one stating a number.
    pub(super) dated: bool,
}

/// The words that `w` writes short (see [`ShortForm`]): `Q1`–`Q4`, `H1`,
/// `H2`, `FY` alone or glued to a year of two or four digits, a quarter
/// written digit first (`3Q`) and the halves and quarters so written with
/// their year (`3Q23`, `1H2024`), and the abbreviations of [`ABBREVIATED`]
/// in any case.
#[inline(always)]
pub(super) fn short_form(w: &[u8]) -> Option<ShortForm> {
    // Most words end in a letter; a period ends in a digit or opens with
    // one, and the abbreviations have three letters.
    let last = *w.last()?;
    if w.len() > 3
        && w[3].is_ascii_digit()
        && let Some(code) = currency_glued(w)
    {
        return Some(code);
    }
    if last.is_ascii_digit() || w[0].is_ascii_digit() {
        return period_words(w);
    }
    match w.len() {
        3 => abbreviation(w),
        2 if w == b"FY" => Some(ShortForm {
            words: &FISCAL_YEAR,
            rest: 2,
            year: None,
            dated: true,
        }),
        _ => None,
    }
}

/// The words of "FY".
const FISCAL_YEAR: [&[u8]; 2] = [b"fiscal", b"year"];

/// The word of a currency's code ("usd" of "USD"), in capitals only.
fn currency_code(code: &[u8]) -> Option<&'static [&'static [u8]]> {
    const CODES: [&[&[u8]]; 4] = [&[b"usd"], &[b"eur"], &[b"gbp"], &[b"jpy"]];
    match code {
        b"USD" => Some(CODES[0]),
        b"EUR" => Some(CODES[1]),
        b"GBP" => Some(CODES[2]),
        b"JPY" => Some(CODES[3]),
        _ => None,
    }
}

/// A currency's code glued to an amount ("USD1.5bn", "EUR300m",
/// "GBP5,000"), read as the code and the amount written apart ("USD
/// 1.5bn"), as claims and sources read that.
#[inline(never)]
fn currency_glued(w: &[u8]) -> Option<ShortForm> {
    let words = currency_code(&w[..3])?;
    let amount = &w[3..];
    let numeral = amount.len() - trailing_letters(amount).len();
    let scale = &amount[numeral..];
    let read = is_numeral(&amount[..numeral])
        && (scale.is_empty() || scale_of(scale, SCALE_SUFFIXES).is_some());
    read.then_some(ShortForm {
        words,
        rest: 3,
        year: None,
        dated: false,
    })
}

/// An abbreviation of [`ABBREVIATED`], or "MoM", that the word of three
/// letters `w` is.
#[inline(always)]
fn abbreviation(w: &[u8]) -> Option<ShortForm> {
    // Their first letters: one test turns most words of three letters
    // ("the", "and") away. Setting bit 5 makes a lower-case letter only of
    // a letter.
    let first = (w[0] | 0x20).wrapping_sub(b'a');
    if first >= 26 || ABBREVIATED_FIRST & 1 << first == 0 {
        return None;
    }
    let key = u32::from_le_bytes([w[0] | 0x20, w[1] | 0x20, w[2] | 0x20, 0]);
    if key == short_key(b"mom") {
        return (w == b"MoM").then_some(MOM);
    }
    abbreviated(key)
}

/// Three letters of [`ABBREVIATED`] as the one number `short_form` makes
/// of a word.
const fn short_key(short: &[u8]) -> u32 {
    u32::from_le_bytes([short[0], short[1], short[2], 0])
}

#[inline(never)]
fn period_words(w: &[u8]) -> Option<ShortForm> {
    const QUARTERS: [[&[u8]; 2]; 4] = [
        [b"1st", b"quarter"],
        [b"2nd", b"quarter"],
        [b"3rd", b"quarter"],
        [b"4th", b"quarter"],
    ];
    const HALVES: [[&[u8]; 2]; 2] = [[b"1st", b"half"], [b"2nd", b"half"]];
    let nth = |d: u8, of: &'static [[&'static [u8]; 2]]| {
        d.checked_sub(b'1')
            .and_then(|i| of.get(usize::from(i)))
            .map(|w| w.as_slice())
    };
    let (words, rest, year): Period = match *w {
        [b'Q', d] => (nth(d, &QUARTERS)?, w.len(), None),
        [b'H', d] => (nth(d, &HALVES)?, w.len(), None),
        [b'F', b'Y', ref year @ ..] => period_of_year(&FISCAL_YEAR, year)?,
        [d, b'Q'] => (nth(d, &QUARTERS)?, w.len(), None),
        [d, b'Q', ref year @ ..] => period_of_year(nth(d, &QUARTERS)?, year)?,
        [d, b'H', ref year @ ..] => period_of_year(nth(d, &HALVES)?, year)?,
        _ => return None,
    };
    Some(ShortForm {
        words,
        rest,
        year,
        dated: true,
    })
}

/// A period's words, where the rest of its word starts and the year it
/// writes with two digits (the fields of [`ShortForm`]).
type Period = (&'static [&'static [u8]], usize, Option<[u8; 4]>);

/// The [`Period`] whose `year` follows its first two characters ("23" of
/// "3Q23", "2024" of "1H2024" and of "FY2024").
fn period_of_year(words: &'static [&'static [u8]], year: &[u8]) -> Option<Period> {
    Some(match year_digits(year)? {
        None => (words, 2, None),
        short => (words, 2 + year.len(), short),
    })
}

/// Whether `digits` are a year of a period: four digits (`Some(None)`,
/// read as they are) or two, read as the year of the century they most
/// likely mean (`Some(Some(year))`): "23" is 2023, "98" is 1998, as
/// POSIX reads a year of two digits (69–99 in the 1900s, the others in
/// the 2000s).
fn year_digits(digits: &[u8]) -> Option<Option<[u8; 4]>> {
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    match *digits {
        [_, _, _, _] => Some(None),
        [tens, ones] => {
            let century = if (tens, ones) >= (b'6', b'9') {
                *b"19"
            } else {
                *b"20"
            };
            Some(Some([century[0], century[1], tens, ones]))
        }
        _ => None,
    }
}

/// Financial abbreviations of three letters, in lower case, that stand for
/// one phrase whatever the text is about, and the words of that phrase.
/// Not "mom" (a mother: "MoM" written so is read, see `short_form`) nor
/// "bp" (a company, a blood pressure).
const ABBREVIATED: [(&[u8], &[&[u8]]); 5] = [
    (b"bps", &[b"basis", b"points"]),
    (b"eps", &[b"earnings", b"per", b"share"]),
    (b"qoq", QUARTER_OVER_QUARTER),
    (b"yoy", YEAR_OVER_YEAR),
    (b"ytd", &[b"year", b"to", b"date"]),
];

const YEAR_OVER_YEAR: &[&[u8]] = &[b"year", b"over", b"year"];
const QUARTER_OVER_QUARTER: &[&[u8]] = &[b"quarter", b"over", b"quarter"];
const MONTH_OVER_MONTH: &[&[u8]] = &[b"month", b"over", b"month"];

/// "MoM" written so: "month over month" (in other cases, a mother).
const MOM: ShortForm = ShortForm {
    words: MONTH_OVER_MONTH,
    rest: 3,
    year: None,
    dated: false,
};

/// A change over the period before written with a slash, the letter of
/// the period on either side in any case ("y/y", "Q/Q", "m/m"): its words
/// ("year over year"), when `bytes[at..]` opens one. The [`ShortForm`] is
/// of the first letter; the slash and the second letter are read with it
/// (see [`slashed_period_before`]).
#[inline(never)]
pub(super) fn slashed_period(bytes: &[u8], at: usize) -> Option<ShortForm> {
    let &[first, b'/', second, ..] = bytes.get(at..)? else {
        return None;
    };
    let words = match first | 0x20 {
        b'y' => YEAR_OVER_YEAR,
        b'q' => QUARTER_OVER_QUARTER,
        b'm' => MONTH_OVER_MONTH,
        _ => return None,
    };
    let word_byte = |b: &u8| b.is_ascii_alphanumeric() || *b == b'/';
    if !first.eq_ignore_ascii_case(&second)
        || bytes.get(at + 3).is_some_and(word_byte)
        || at.checked_sub(1).is_some_and(|i| word_byte(&bytes[i]))
    {
        return None;
    }
    Some(ShortForm {
        words,
        rest: 1,
        year: None,
        dated: false,
    })
}

/// Whether the word at `at` is the second letter of a slashed period
/// ("y" after "y/"), read with the first.
pub(super) fn slashed_period_before(bytes: &[u8], at: usize) -> bool {
    at >= 2 && bytes[at - 1] == b'/' && slashed_period(bytes, at - 2).is_some()
}

/// The first letters of [`ABBREVIATED`] and of "MoM", a bit each (`a` is
/// bit 0).
const ABBREVIATED_FIRST: u32 = {
    let mut bits = 1 << (b'm' - b'a');
    let mut i = 0;
    while i < ABBREVIATED.len() {
        bits |= 1 << (ABBREVIATED[i].0[0] - b'a');
        i += 1;
    }
    bits
};

#[inline(never)]
fn abbreviated(key: u32) -> Option<ShortForm> {
    ABBREVIATED
        .iter()
        .find(|&&(short, _)| short_key(short) == key)
        .map(|&(_, words)| ShortForm {
            words,
            rest: 3,
            year: None,
            dated: false,
        })
}

/// The word a slash between two units stands for ("km/h").
pub(super) const PER: &[u8] = b"per";

/// Units of time after a slash, and the words they abbreviate: "km/h" is
/// read "km per hour", so "300 km/h" finds "300 kilometres per hour".
const PER_UNITS: [(&[u8], &[u8]); 6] = [
    (b"h", b"hour"),
    (b"hr", b"hour"),
    (b"min", b"minute"),
    (b"s", b"second"),
    (b"sec", b"second"),
    (b"yr", b"year"),
];

/// The word that the unit at `at..at + len` abbreviates when a slash
/// joins it to a unit before it ("h" of "km/h", "s" of "m/s"): a word of
/// one to three letters in lower case. Claims and sources read the slash
/// as [`PER`] before it.
#[inline(always)]
pub(super) fn per_unit(bytes: &[u8], at: usize, len: usize) -> Option<&'static [u8]> {
    // Most words follow no slash.
    if at < 2 || bytes[at - 1] != b'/' {
        return None;
    }
    unit_after_slash(bytes, at, len)
}

/// The word a claim reads for the unit at `at..at + len` that follows a
/// slash ("h" of "km/h": "hour", after [`PER`], the `bool`) or a number it
/// is glued to ("x" of "2x": [`TIMES`]).
#[inline(always)]
pub(super) fn unit_word(bytes: &[u8], at: usize, len: usize) -> Option<(bool, &'static [u8])> {
    // Most words follow a space.
    let before = *bytes.get(at.checked_sub(1)?)?;
    if before != b'/' && !before.is_ascii_digit() {
        return None;
    }
    unit_after_joint(bytes, at, len)
}

#[inline(never)]
fn unit_after_joint(bytes: &[u8], at: usize, len: usize) -> Option<(bool, &'static [u8])> {
    if bytes[at - 1] == b'/' {
        return per_unit(bytes, at, len).map(|w| (true, w));
    }
    (len == 1 && multiple_sign(bytes, at)).then_some((false, TIMES))
}

#[inline(never)]
fn unit_after_slash(bytes: &[u8], at: usize, len: usize) -> Option<&'static [u8]> {
    let unit = &bytes[at..at + len];
    let (_, word) = PER_UNITS.iter().find(|(u, _)| *u == unit)?;
    if bytes.get(at + len).is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    let before = &bytes[..at - 1];
    let n = before
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_lowercase())
        .count();
    let joined = n < before.len() && before[before.len() - n - 1].is_ascii_alphanumeric();
    ((1..=3).contains(&n) && !joined).then_some(*word)
}

/// Units a number is written glued to ("5km", "3GB", "2pm"), and the "x"
/// of a multiple ("2x", read "2 times": [`multiple_sign`]): such a word is
/// read as its number and its unit, as "5 km" is. Not the scales
/// ("5m", "3k": [`SCALE_SUFFIXES`]) nor ordinals and decades ("7th",
/// "1960s").
pub(super) const GLUED_UNITS: &[&str] = &[
    "am", "cm", "ft", "gb", "ghz", "gw", "ha", "hr", "hrs", "hz", "kb", "kg", "khz", "km", "kmh",
    "kph", "kw", "kwh", "lb", "lbs", "mb", "mg", "mhz", "mi", "min", "mins", "ml", "mm", "mph",
    "mw", "oz", "pm", "tb", "x", "yd", "yr", "yrs",
];

/// The length of the number of `w` when `w` is a number glued to one of
/// the [`GLUED_UNITS`] ("5km": 1, "1.5GB": 3).
#[inline(always)]
pub(super) fn glued_unit(w: &[u8]) -> Option<usize> {
    // Most words start with a letter.
    if !may_glue_unit(w) {
        return None;
    }
    unit_split(w)
}

fn may_glue_unit(w: &[u8]) -> bool {
    w.len() >= 2 && w[0].is_ascii_digit() && w[w.len() - 1].is_ascii_alphabetic()
}

/// The word "x" glued after a number stands for ("2x" is "2 times").
pub(super) const TIMES: &[u8] = b"times";

/// Whether the word of one letter at `at` is the "x" of a multiple ("2x",
/// "1.5X"), read as [`TIMES`].
#[inline(always)]
pub(super) fn multiple_sign(bytes: &[u8], at: usize) -> bool {
    bytes[at] | 0x20 == b'x' && at > 0 && bytes[at - 1].is_ascii_digit()
}

/// Where the word `w` splits into two when it is a number glued to a unit
/// ("5km": [`glued_unit`]) or a name glued to a number ("CET1":
/// [`acronym_glued_to_number`]).
#[inline(always)]
pub(super) fn glued_split(w: &[u8]) -> Option<usize> {
    // Most words neither open nor end with a digit.
    if !(w[0].is_ascii_digit() || w[w.len() - 1].is_ascii_digit()) {
        return None;
    }
    glued_either(w)
}

#[inline(never)]
fn glued_either(w: &[u8]) -> Option<usize> {
    glued_unit(w).or_else(|| acronym_glued_to_number(w))
}

/// The length of the letters of `w` when `w` is a name glued to a number
/// ("CET1", "SHA256": 3): read as two words, as the same name written with
/// a space or a hyphen is ("CET 1", "SHA-256"), so that an acronym's
/// initials are found ("Common Equity Tier 1"). In any case, so that
/// "tb12" is read as "TB12" is. Two letters at least: "G7" and "A4" stay
/// one word, as does "No1" ("number one", whose "no" is not a negation),
/// and a period ("FY23") is read as its words instead.
#[inline(always)]
pub(super) fn acronym_glued_to_number(w: &[u8]) -> Option<usize> {
    // Most words end in a letter.
    if !(w[w.len() - 1].is_ascii_digit() && w[0].is_ascii_alphabetic()) {
        return None;
    }
    acronym_split(w)
}

#[inline(never)]
fn acronym_split(w: &[u8]) -> Option<usize> {
    let n = w.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    (n >= 2
        && w[n..].iter().all(u8::is_ascii_digit)
        && !w[..n].eq_ignore_ascii_case(b"no")
        && short_form(w).is_none())
    .then_some(n)
}

#[inline(never)]
fn unit_split(w: &[u8]) -> Option<usize> {
    let n = w.len() - trailing_letters(w).len();
    let mut buf = [0u8; 16];
    let unit = lower_case(&w[n..], &mut buf)?;
    let known = GLUED_UNITS
        .binary_search_by(|u| u.as_bytes().cmp(unit))
        .is_ok();
    (known && is_numeral(&w[..n])).then_some(n)
}

/// A date read the way a writer in the US spells it: its month's name,
/// its day and its year ("May 12 2004"), so that "May 12, 2004" finds the
/// ISO date "2004-05-12" and the day-first "12 May 2004", and is found by
/// them. Claims and sources read the month's name (and, for an ISO date,
/// its day) before the word the date opens with, and skip the date's
/// other words up to `end`. A source's date with a year also states its
/// month with its year, which its words do not put side by side ("in May
/// 2004" finds "May 12, 2004"), and a day written first still follows the
/// word before it ("born 17" finds "born 17 March").
#[derive(Debug, PartialEq)]
pub(super) struct Date {
    /// The month's name, and where the text names it (`at`, `len`): a
    /// finding names it in the claim's own spelling ("05", "May").
    pub(super) month: (&'static [u8], usize, usize),
    /// Whether the month is read before the date's first word ("12 May",
    /// an ISO date); not when the text names it first ("May 12, 2004").
    pub(super) month_first_read: bool,
    /// An ISO date's day, and where its digits are; any other date's day
    /// is a word of its own.
    pub(super) day: Option<(&'static [u8], usize, usize)>,
    /// Where the year's four digits are, if the date has a year.
    pub(super) year: Option<usize>,
    /// Where the words the date reads before its first word end: the ones
    /// up to here are skipped.
    pub(super) end: usize,
}

impl Date {
    /// The words read before the date's first word.
    pub(super) fn words(&self) -> impl Iterator<Item = &'static [u8]> {
        self.month_first_read
            .then_some(self.month.0)
            .into_iter()
            .chain(self.day.map(|d| d.0))
    }
}

const MONTHS: [&[u8]; 12] = [
    b"January",
    b"February",
    b"March",
    b"April",
    b"May",
    b"June",
    b"July",
    b"August",
    b"September",
    b"October",
    b"November",
    b"December",
];

/// The date that the word at `at..at + len` opens: an ISO date
/// (`YYYY-MM-DD`), a day before its month's name ("12 May", "12 May
/// 2004"), or the day of a month named first, with its year ("12" of "May
/// 12, 2004"). Not a date: a run of more numbers ("2004-05-12-7"), one
/// glued to letters ("2004-05-12T10:00", a timestamp), a month past 12 or
/// a day past 31, a season ("2004-05"), a number that ends another ("1.12
/// May"), and a month's name in lower case ("5 may").
#[inline(always)]
pub(super) fn date(bytes: &[u8], at: usize, len: usize) -> Option<Date> {
    // Most words are no number, and most numbers no date.
    if !may_open_date(bytes, at, len) {
        return None;
    }
    parse_date(bytes, at, len)
}

/// The cheap first test of [`date`]: whether the word at `at..at + len`
/// may open a date.
#[inline(always)]
pub(super) fn may_open_date(bytes: &[u8], at: usize, len: usize) -> bool {
    if !bytes[at].is_ascii_digit() {
        return false;
    }
    let after = |i: usize| bytes.get(at + len + i).copied().unwrap_or(0);
    // "May 12": a word ends right before the day ("Sept." too).
    let named_before =
        at >= 2 && bytes[at - 1] == b' ' && matches!(bytes[at - 2], b'a'..=b'z' | b'.');
    // A day: one or two digits, or an ordinal ("12th").
    let day = len <= 2 || (len <= 4 && bytes[at + len - 1].is_ascii_lowercase());
    match after(0) {
        b'-' => len == 4,
        // "12 May", "12th of May", or "May 12 2004".
        b' ' => {
            day && (after(1).is_ascii_uppercase()
                || (after(1) == b'o' && after(2) == b'f')
                || (named_before && after(1).is_ascii_digit()))
        }
        // "May 12, 2004".
        b',' => day && named_before && after(1) == b' ' && after(2).is_ascii_digit(),
        _ => false,
    }
}

#[inline(never)]
fn parse_date(bytes: &[u8], at: usize, len: usize) -> Option<Date> {
    if bytes.get(at + len) == Some(&b'-') {
        iso_date(bytes, at)
    } else {
        day_first(bytes, at, len).or_else(|| month_first(bytes, at, len))
    }
}

const DAYS: [&[u8]; 31] = [
    b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"8", b"9", b"10", b"11", b"12", b"13", b"14", b"15",
    b"16", b"17", b"18", b"19", b"20", b"21", b"22", b"23", b"24", b"25", b"26", b"27", b"28",
    b"29", b"30", b"31",
];

fn iso_date(bytes: &[u8], at: usize) -> Option<Date> {
    let text = bytes.get(at..at + 10)?;
    let digits = |r: std::ops::Range<usize>| text[r].iter().all(u8::is_ascii_digit);
    if !(digits(0..4) && text[4] == b'-' && digits(5..7) && text[7] == b'-' && digits(8..10)) {
        return None;
    }
    let joined = |b: &u8| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_';
    if (at > 0 && joined(&bytes[at - 1])) || bytes.get(at + 10).is_some_and(joined) {
        return None;
    }
    let two = |i: usize| usize::from(text[i] - b'0') * 10 + usize::from(text[i + 1] - b'0');
    let (month, day) = (two(5), two(8));
    Some(Date {
        month: (MONTHS.get(month.checked_sub(1)?)?, at + 5, 2),
        month_first_read: true,
        day: Some((DAYS.get(day.checked_sub(1)?)?, at + 8, 2)),
        year: Some(at),
        end: at + 10,
    })
}

/// "12 May", "4 Sept", "12th of May": a day of one or two digits (or its
/// ordinal), one space (or " of "), and a month's name in capitals, whole
/// or cut to its first three letters ("Sept" too), ending there.
fn day_first(bytes: &[u8], at: usize, len: usize) -> Option<Date> {
    if !is_day(&bytes[at..at + len]) || bytes[at + len] != b' ' {
        return None;
    }
    // "1.12 May", "3,12 May": the end of another number.
    if at > 0 && matches!(bytes[at - 1], b'0'..=b'9' | b'.' | b',' | b':' | b'/') {
        return None;
    }
    let mut name = at + len + 1;
    if bytes[name..].starts_with(b"of ") {
        name += 3;
    }
    let word = bytes.get(name..)?;
    let n = word.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    if word.get(n).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let month = month_named(&word[..n])?;
    Some(Date {
        month: (month, name, n),
        month_first_read: true,
        day: None,
        year: year_after(bytes, name + n),
        end: name + n,
    })
}

/// "12" of "May 12, 2004" or "Sept. 4 1920": a day right after its
/// month's name, then a year. Nothing is read differently; only the
/// month's pair with the year is new.
fn month_first(bytes: &[u8], at: usize, len: usize) -> Option<Date> {
    if !is_day(&bytes[at..at + len]) || at < 4 || bytes[at - 1] != b' ' {
        return None;
    }
    let before = &bytes[..at - 1];
    let before = before.strip_suffix(b".").unwrap_or(before);
    let name = trailing_letters(before);
    let (from, n) = (before.len() - name.len(), name.len());
    if from > 0 && bytes[from - 1].is_ascii_alphanumeric() {
        return None;
    }
    let month = month_named(name)?;
    Some(Date {
        month: (month, from, n),
        month_first_read: false,
        day: None,
        year: Some(year_after(bytes, at + len)?),
        end: at + len,
    })
}

/// A day of the month as digits: 1 to 31, without a leading zero, and
/// perhaps its ordinal's suffix ("12th", "1st").
fn is_day(w: &[u8]) -> bool {
    let w = [b"st", b"nd", b"rd", b"th"]
        .iter()
        .find_map(|s| w.strip_suffix(*s))
        .unwrap_or(w);
    match *w {
        [b'1'..=b'9'] => true,
        [a @ b'1'..=b'3', b @ b'0'..=b'9'] => (a - b'0') * 10 + (b - b'0') <= 31,
        _ => false,
    }
}

/// Whether `word`, capitalised, names a month or a day of the week
/// ("November", "Nov", "Wednesday"): a time, not a party.
pub(super) fn names_time(word: &[u8]) -> bool {
    const DAYS: [&[u8]; 7] = [
        b"Monday",
        b"Tuesday",
        b"Wednesday",
        b"Thursday",
        b"Friday",
        b"Saturday",
        b"Sunday",
    ];
    month_named(word).is_some() || DAYS.contains(&word)
}

/// The month `word` names: its whole name or its first three letters
/// ("Sept" too), in capitals.
fn month_named(word: &[u8]) -> Option<&'static [u8]> {
    let [a, b, c, ..] = *word else {
        return None;
    };
    let month = MONTHS
        .iter()
        .find(|m| m[0] == a && m[1] == b && m[2] == c)?;
    (word.len() == 3 || word == *month || (word == b"Sept" && month[0] == b'S')).then_some(month)
}

/// Where the year of a date is when one follows `at` (", 2004", " 2004").
fn year_after(bytes: &[u8], at: usize) -> Option<usize> {
    let at = at + usize::from(bytes.get(at) == Some(&b','));
    if bytes.get(at) != Some(&b' ') {
        return None;
    }
    let year = bytes.get(at + 1..at + 5)?;
    let joined = bytes
        .get(at + 5)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'-');
    (year.iter().all(u8::is_ascii_digit) && !joined).then_some(at + 1)
}

/// The currency sign right before the number at `at` ("$5", "€2.3bn"), as
/// the word a writer may use instead ("dollar", "euro"), and the sign's
/// length. Claims and sources read the sign as that word before the number,
/// so "$5 million" finds "5 million dollars" and "€5m" does not find "$5m".
#[inline(always)]
pub(super) fn currency_before(bytes: &[u8], at: usize) -> Option<(&'static [u8], usize)> {
    // Most words follow a space, and most numbers no sign.
    if !bytes[at].is_ascii_digit() || at == 0 || bytes[at - 1].is_ascii_whitespace() {
        return None;
    }
    currency_sign(bytes, at)
}

#[inline(never)]
fn currency_sign(bytes: &[u8], at: usize) -> Option<(&'static [u8], usize)> {
    const SIGNS: [(&str, &[u8]); 4] = [
        ("$", b"dollar"),
        ("€", b"euro"),
        ("£", b"pound"),
        ("¥", b"yen"),
    ];
    SIGNS.iter().find_map(|&(sign, word)| {
        let from = at.checked_sub(sign.len())?;
        (&bytes[from..at] == sign.as_bytes()).then_some((word, sign.len()))
    })
}

/// The change a number states when "up" or "down" comes before it ("up
/// 5%", "down by $2 billion"): "increase" or "decrease", read as a word
/// before the number (or its currency sign) starting at `at`, as claims
/// read the "up" itself, so "Revenue was up 5%" finds "Revenue increased
/// 5%" and "rose 5%", and the other way round.
pub(super) fn direction_before(bytes: &[u8], at: usize) -> Option<&'static [u8]> {
    // Most numbers follow no "up" or "down".
    if at < 3 || bytes[at - 1] != b' ' || !matches!(bytes[at - 2] | 0x20, b'p' | b'n' | b'y') {
        return None;
    }
    let mut end = at - 1;
    if bytes[..end].len() >= 3 && bytes[end - 3..end].eq_ignore_ascii_case(b" by") {
        end -= 3;
    }
    let start = bytes[..end]
        .iter()
        .rposition(|b| !b.is_ascii_alphabetic())
        .map_or(0, |p| p + 1);
    if start > 0 && bytes[start - 1].is_ascii_alphanumeric() {
        return None;
    }
    direction(&bytes[start..end]).filter(|_| states_a_level(bytes, start))
}

/// What the word `w` at `at` of a claim is read as when a number follows
/// it: "increase" for the "up" of "up 5%", "decrease" for "down" (see
/// [`direction_before`]).
#[inline(never)]
pub(super) fn direction_of_number(bytes: &[u8], at: usize, len: usize) -> Option<&'static [u8]> {
    let word = direction(&bytes[at..at + len])?;
    if !states_a_level(bytes, at) {
        return None;
    }
    let mut next = at + len;
    if bytes.get(next) != Some(&b' ') {
        return None;
    }
    next += 1;
    if bytes
        .get(next..next + 3)
        .is_some_and(|b| b.eq_ignore_ascii_case(b"by "))
    {
        next += 3;
    }
    let digit_at = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
    let number = digit_at(next)
        || (1..=3).any(|sign| {
            digit_at(next + sign)
                && currency_sign(bytes, next + sign).is_some_and(|(_, n)| n == sign)
        });
    number.then_some(word)
}

/// The change a number states when "higher" or "lower" follows it and its
/// unit ("5% higher", "2 percentage points lower", "$3bn higher", "5 per
/// cent lower", "40 basis points higher"): "increase" or "decrease", with
/// where the comparative word is and its length. The number's digits are
/// `at..end`; its unit follows glued ("%", "bn") or as words, or a
/// currency sign comes before it ("$2 higher"): a number of nothing ("25
/// Lower Street") states no change. Claims read the change in place of the
/// comparative, sources beside it, both before the number (as "up 5%" is
/// read), so "Revenue was 5% higher" finds "Revenue rose 5%" and the other
/// way round.
#[inline(always)]
pub(super) fn comparative_after(
    bytes: &[u8],
    at: usize,
    end: usize,
) -> Option<(&'static [u8], usize, usize)> {
    // Most numbers are followed by punctuation, or by a space and a word
    // that opens neither a unit nor a comparative.
    match bytes.get(end) {
        Some(b' ') if !may_open_unit(bytes.get(end + 1)) => None,
        Some(b) if *b == b' ' || b.is_ascii_alphanumeric() || *b == b'%' => {
            comparative_at(bytes, at, end)
        }
        _ => None,
    }
}

/// The changes a source's number at `at..end` states, `sign` bytes of
/// currency sign before it: "increase" for "up 5%" ([`direction_before`])
/// and for "5% higher" ([`comparative_after`]). The index and the
/// rereading of a sentence both read them here, so they agree.
#[inline(always)]
pub(super) fn changes_of_number(
    bytes: &[u8],
    at: usize,
    end: usize,
    sign: usize,
) -> [Option<&'static [u8]>; 2] {
    [
        direction_before(bytes, at - sign),
        comparative_after(bytes, at, end).map(|(change, ..)| change),
    ]
}

/// Whether a word starting with `first` may be a unit of
/// [`comparative_after`] or its comparative, by its first letter.
#[inline(always)]
fn may_open_unit(first: Option<&u8>) -> bool {
    matches!(
        first.map(|b| b | 0x20),
        Some(b'b' | b'c' | b'h' | b'l' | b'm' | b'p' | b't')
    )
}

/// [`comparative_after`] past its first test. Kept out of the loop.
#[inline(never)]
fn comparative_at(bytes: &[u8], at: usize, end: usize) -> Option<(&'static [u8], usize, usize)> {
    let mut pos = end;
    while bytes
        .get(pos)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'%')
    {
        pos += 1;
    }
    let mut unit = pos > end;
    // "$2 higher": the sign is the unit.
    let signed = || at > 0 && currency_sign(bytes, at).is_some();
    for _ in 0..4 {
        if bytes.get(pos) != Some(&b' ') {
            return None;
        }
        let from = pos + 1;
        if !may_open_unit(bytes.get(from)) {
            return None;
        }
        // No unit or comparative is longer than ten letters.
        let n = bytes[from..]
            .iter()
            .take(11)
            .take_while(|b| b.is_ascii_alphabetic())
            .count();
        let to = from + n;
        if n > 10 || bytes.get(to).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        let mut lower = [0u8; 10];
        for (l, b) in lower.iter_mut().zip(&bytes[from..to]) {
            *l = b | 0x20;
        }
        let change: &'static [u8] = match &lower[..n] {
            b"higher" => b"increase",
            b"lower" => b"decrease",
            b"basis" | b"billion" | b"bln" | b"bn" | b"bp" | b"bps" | b"cent" | b"million"
            | b"mln" | b"mn" | b"per" | b"percent" | b"percentage" | b"point" | b"points"
            | b"pp" | b"thousand" | b"tn" | b"trillion" | b"trn" => {
                unit = true;
                pos = to;
                continue;
            }
            _ => return None,
        };
        return (unit || signed()).then_some((change, from, n));
    }
    None
}

/// Whether the "up" or "down" at `at` says where a level stands: after a
/// form of "be" or a verb of where a price ends ("were up 5%", "closed
/// down 2%", "moved up 3 places"), or after punctuation or at the start
/// (", up 34 per cent", ". Up 5%"). After any other word it is most often the particle
/// of a verb ("makes up 11%", "put up 44 points"), which states no change.
fn states_a_level(bytes: &[u8], at: usize) -> bool {
    const LEVEL_VERBS: [&[u8]; 20] = [
        b"are",
        b"be",
        b"been",
        b"being",
        b"closed",
        b"ended",
        b"finished",
        b"go",
        b"goes",
        b"going",
        b"gone",
        b"is",
        b"moved",
        b"remained",
        b"stood",
        b"traded",
        b"trading",
        b"was",
        b"went",
        b"were",
    ];
    let before = bytes[..at].trim_ascii_end();
    let Some(&last) = before.last() else {
        return true;
    };
    if !last.is_ascii_alphabetic() {
        // A sentence's end too: "Revenue was $5bn. Up 5% on the year."
        return matches!(last, b',' | b';' | b':' | b'(' | b'.' | b'!' | b'?');
    }
    let word = letters_before(bytes, at);
    let start = before.len() - word.len();
    // "Revenue's up": the apostrophe's "is".
    let is = word.eq_ignore_ascii_case(b"s")
        && (before[..start].ends_with(b"'") || before[..start].ends_with("\u{2019}".as_bytes()));
    is || LEVEL_VERBS.iter().any(|v| word.eq_ignore_ascii_case(v))
}

/// "increase" for "up", "decrease" for "down" (case aside).
pub(super) fn direction(w: &[u8]) -> Option<&'static [u8]> {
    if w.eq_ignore_ascii_case(b"up") {
        Some(b"increase")
    } else if w.eq_ignore_ascii_case(b"down") {
        Some(b"decrease")
    } else {
        None
    }
}

/// What a number word of a run is worth, and how it joins the words
/// before it.
#[derive(Clone, Copy, PartialEq)]
enum Part {
    /// 1–9, 10–19, or a multiple of ten from 20 to 90.
    Unit(u64),
    Teen(u64),
    Tens(u64),
    /// "hundred", or a scale: thousand, million, …
    Hundred,
    Scale(u64),
    And,
}

/// The number words a spelled number is made of (those of [`SPELLED`] and
/// the scales), with whether each is an ordinal ("twenty-*first*", "one
/// *hundredth*").
fn number_part(word: &[u8]) -> Option<(Part, bool)> {
    if word.len() > 11 || !word.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    let mut buf = [0u8; 16];
    let w = std::str::from_utf8(lower_case(word, &mut buf)?).ok()?;
    if w == "and" {
        return Some((Part::And, false));
    }
    if let Ok(i) = SPELLED.binary_search_by(|(s, _)| s.cmp(&w)) {
        let (spelled, digits) = SPELLED[i];
        let part = match digits.parse::<u64>().ok()? {
            v @ 1..=9 => Part::Unit(v),
            v @ 10..=19 => Part::Teen(v),
            v @ 20..=90 => Part::Tens(v),
            100 => Part::Hundred,
            v @ 1000 => Part::Scale(v),
            _ => return None,
        };
        return Some((part, is_ordinal(spelled)));
    }
    let (scale, ordinal) = match w.strip_suffix("th") {
        Some(s) => (s, true),
        None => (w, false),
    };
    scale_of(scale.as_bytes(), SCALES)
        .map(|zeros| (Part::Scale(10u64.pow(zeros.unsigned_abs())), ordinal))
}

/// The letters of the word after the one ending at `end`, when a space,
/// a hyphen, or a hyphen between spaces (tokenised text: "twenty - one")
/// is all that comes between.
fn next_word(bytes: &[u8], end: usize) -> Option<(usize, usize)> {
    let gap = match bytes.get(end..end + 3) {
        Some(b" - ") => 3,
        _ if matches!(bytes.get(end), Some(b' ' | b'-')) => 1,
        _ => return None,
    };
    let pos = end + gap;
    let word_end = pos
        + bytes[pos..]
            .iter()
            .take_while(|b| b.is_ascii_alphabetic())
            .count();
    (word_end > pos).then_some((pos, word_end))
}

/// Whether `word` can follow the first word of a spelled number: a unit
/// ("twenty-*one*", "twenty-*first*"), "hundred" or a scale.
fn goes_on_a_number(word: &[u8]) -> bool {
    matches!(
        number_part(word),
        Some((Part::Unit(_) | Part::Hundred | Part::Scale(_), _))
    )
}

/// A number spelled in two or more words, from the word at `at..at + len`
/// of `bytes` on ("twenty-one", "one hundred and five", "fifteen hundred",
/// "two million", "a million", "twenty-first"), or a fraction ("half a
/// million", "a quarter point": [`fraction`]): its value written into `out`
/// (an ordinal with "th", so it stays an ordinal), and where the run ends.
/// Claims and sources read the run as this one number and skip its other
/// words, so "twenty-one" finds "21" and "21" finds "twenty-one". `None`
/// for a single number word ("two" is found by its spelling alone) or a
/// run that is no number ("one two", "nineteen eighty").
#[inline(never)]
pub(super) fn spelled_run(
    bytes: &[u8],
    at: usize,
    len: usize,
    out: &mut [u8; 48],
) -> Option<(usize, usize)> {
    // "a million": the article is one, before a hundred or a scale only.
    let article = len == 1 && bytes[at] | 0x20 == b'a';
    if !article && let Some(read) = fraction(bytes, at, len, out) {
        return Some(read);
    }
    // Most number words start no run ("one of", "two years"): the word
    // after must be one a number goes on with.
    let next = next_word(bytes, at + len)?;
    let opens = if article {
        // One space and a first letter of a hundred or a scale, as callers
        // test before the run is read; then a word of seven or eight
        // letters. "a thousandth" is no thousand.
        may_open_run(bytes, at, len)
            && matches!(next.1 - next.0, 7 | 8)
            && matches!(
                number_part(&bytes[next.0..next.1]),
                Some((Part::Hundred | Part::Scale(_), false))
            )
    } else {
        goes_on_a_number(&bytes[next.0..next.1])
    };
    if !opens {
        return None;
    }
    let (mut total, mut group) = (0u64, 0u64);
    // The smallest scale used so far: scales must fall ("two million
    // three thousand").
    let mut last_scale = u64::MAX;
    let mut prev: Option<Part> = None;
    let (mut words, mut end, mut ordinal) = (0usize, at, false);
    let mut pos = at;
    let mut word_end = at + len;
    loop {
        let word = &bytes[pos..word_end];
        let read = if article && pos == at {
            Some((Part::Unit(1), false))
        } else {
            number_part(word)
        };
        let Some((part, th)) = read else {
            break;
        };
        let fits = match (prev, part) {
            (None, Part::Unit(_) | Part::Teen(_) | Part::Tens(_)) => true,
            (Some(Part::Tens(_)), Part::Unit(_)) => group.is_multiple_of(10),
            (Some(Part::Unit(_) | Part::Teen(_) | Part::Tens(_)), Part::Hundred) => {
                group > 0 && group < 100
            }
            (
                Some(Part::Unit(_) | Part::Teen(_) | Part::Tens(_) | Part::Hundred),
                Part::Scale(s),
            ) => group > 0 && s < last_scale,
            (Some(Part::Hundred | Part::Scale(_)), Part::And) => !ordinal,
            (
                Some(Part::Hundred | Part::Scale(_) | Part::And),
                Part::Unit(_) | Part::Teen(_) | Part::Tens(_),
            ) => group.is_multiple_of(100),
            _ => false,
        };
        if !fits || ordinal {
            break;
        }
        match part {
            Part::Unit(v) | Part::Teen(v) | Part::Tens(v) => group += v,
            Part::Hundred => group *= 100,
            Part::Scale(s) => {
                total += group * s;
                group = 0;
                last_scale = s;
            }
            Part::And => {}
        }
        prev = Some(part);
        words += 1;
        if part != Part::And {
            end = word_end;
            ordinal = th;
        }
        let Some((p, e)) = next_word(bytes, word_end) else {
            break;
        };
        (pos, word_end) = (p, e);
    }
    if prev == Some(Part::And) {
        words -= 1;
    }
    if words < 2 {
        return None;
    }
    // "seventy-five percent" is "75%", as "75 percent" is.
    if bytes.get(end) == Some(&b' ')
        && bytes
            .get(end + 1..end + 8)
            .is_some_and(|w| w.eq_ignore_ascii_case(b"percent"))
        && !bytes.get(end + 8).is_some_and(u8::is_ascii_alphanumeric)
    {
        end += 8;
    }
    let mut n = write_digits(total + group, out);
    if ordinal {
        out[n..n + 2].copy_from_slice(b"th");
        n += 2;
    }
    Some((n, end))
}

/// `value` in decimal digits at the start of `out`; how many.
fn write_digits(value: u64, out: &mut [u8; 48]) -> usize {
    let mut digits = [0u8; 24];
    let mut n = 0;
    let mut v = value;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for (k, d) in digits[..n].iter().rev().enumerate() {
        out[k] = *d;
    }
    n
}

/// The words read as one from the word `info` at `at..at + len` on, which
/// the word memo marks as one that may open a run: the verb a phrase means
/// ("stepped down": "resign"; see `phrases`) or a spelled number
/// ([`spelled_run`]), written into `out`, and where the run ends. Claims
/// and sources read runs alike through it.
#[inline(always)]
pub(super) fn run_read_as_one(
    info: Packed,
    bytes: &[u8],
    at: usize,
    len: usize,
    out: &mut [u8; 48],
) -> Option<(usize, usize)> {
    if info.opens_phrase() {
        phrase(bytes, at, len, out)
    } else {
        spelled_run(bytes, at, len, out)
    }
}

/// Whether the word at `at..at + len`, which the word memo marks as one
/// that may open a spelled number, may open one here: a test of two
/// bytes for the many "a" that open none, before [`spelled_run`] reads
/// the words after it.
#[inline(always)]
pub(super) fn may_open_run(bytes: &[u8], at: usize, len: usize) -> bool {
    len != 1
        || (bytes.get(at + 1) == Some(&b' ')
            && matches!(
                bytes.get(at + 2).map(|b| b | 0x20),
                Some(b'b' | b'h' | b'm' | b't')
            ))
}

/// The words that open a spelled number without spelling one themselves:
/// "half" and "quarter" a fraction ([`fraction`]), "a" a hundred or a
/// scale ("a million"). The word memo marks them as it marks number words,
/// so that they reach [`spelled_run`].
pub(super) const RUN_OPENERS: [&str; 3] = ["a", "half", "quarter"];

/// A fraction written in words, from the word at `at..at + len` on, of a
/// percentage point or of a scale, written into `out` as its value and
/// with where its words end:
/// - of a point ("quarter point", "quarter-point", "half a point", "half a
///   percentage point", "quarter of a percentage point", "three-quarters
///   of a point", "half a percent"): its value in percent ("0.25", "0.5",
///   "0.75"), read as "0.25 percentage points" is (its unit read as none),
///   so "a quarter point" finds "25 basis points" and "0.25%";
/// - of a scale ("half a million", "a quarter of a billion", "three
///   quarters of a million"): the number ("500000"), so "half a million"
///   finds "500,000" and "0.5 million".
///
/// A fraction of anything else ("half a share", "a quarter of the loans")
/// is no number.
fn fraction(bytes: &[u8], at: usize, len: usize, out: &mut [u8; 48]) -> Option<(usize, usize)> {
    let first = bytes.get(at..at + len)?;
    let is = |(from, to): (usize, usize), w: &[u8]| bytes[from..to].eq_ignore_ascii_case(w);
    let (quarters, mut end) = if first.eq_ignore_ascii_case(b"half") {
        (2, at + len)
    } else if first.eq_ignore_ascii_case(b"quarter") {
        (1, at + len)
    } else if first.eq_ignore_ascii_case(b"three") {
        let next = next_word(bytes, at + len)?;
        if !(is(next, b"quarter") || is(next, b"quarters")) {
            return None;
        }
        (3, next.1)
    } else {
        return None;
    };
    let mut next = next_word(bytes, end)?;
    if is(next, b"of") {
        next = next_word(bytes, next.1)?;
    }
    if is(next, b"a") {
        next = next_word(bytes, next.1)?;
    }
    let n = if let Some((Part::Scale(scale), false)) = number_part(&bytes[next.0..next.1]) {
        write_digits(scale / 4 * quarters, out)
    } else {
        if is(next, b"percentage") {
            next = next_word(bytes, next.1)?;
            points_at(bytes, next.0)?;
        } else if is(next, b"per") {
            next = next_word(bytes, next.1)?;
            if !is(next, b"cent") {
                return None;
            }
        } else if points_at(bytes, next.0).is_none() && !is_percent_word(&bytes[next.0..next.1]) {
            return None;
        }
        let value: &[u8] = [b"0.25".as_slice(), b"0.5", b"0.75"][quarters as usize - 1];
        out[..value.len()].copy_from_slice(value);
        value.len()
    };
    end = next.1;
    // A word goes on past the letters ("pointed", "point5"): no unit.
    if bytes.get(end).is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    Some((n, end))
}

/// Whether the word "a" at `at` opens a fraction ("a quarter point", "a
/// half million"): a claim reads it with the fraction, so that "a quarter
/// point" finds "25 basis points", which has no "a".
pub(super) fn article_of_fraction(bytes: &[u8], at: usize) -> bool {
    bytes[at].eq_ignore_ascii_case(&b'a')
        && next_word(bytes, at + 1)
            .is_some_and(|(from, to)| fraction(bytes, from, to - from, &mut [0; 48]).is_some())
}

/// Small numbers and ordinals in words and in digits (sorted by word): a
/// claim's "2" is found in a source that says "two", "14th" in one that
/// says "fourteenth", and the other way round.
pub(super) const SPELLED: &[(&str, &str)] = &[
    ("eight", "8"),
    ("eighteen", "18"),
    ("eighteenth", "18"),
    ("eighth", "8"),
    ("eighty", "80"),
    ("eleven", "11"),
    ("eleventh", "11"),
    ("fifteen", "15"),
    ("fifteenth", "15"),
    ("fifth", "5"),
    ("fiftieth", "50"),
    ("fifty", "50"),
    ("first", "1"),
    ("five", "5"),
    ("fortieth", "40"),
    ("forty", "40"),
    ("four", "4"),
    ("fourteen", "14"),
    ("fourteenth", "14"),
    ("fourth", "4"),
    ("hundred", "100"),
    ("hundredth", "100"),
    ("nine", "9"),
    ("nineteen", "19"),
    ("nineteenth", "19"),
    ("ninety", "90"),
    ("ninth", "9"),
    ("one", "1"),
    ("second", "2"),
    ("seven", "7"),
    ("seventeen", "17"),
    ("seventeenth", "17"),
    ("seventh", "7"),
    ("seventy", "70"),
    ("six", "6"),
    ("sixteen", "16"),
    ("sixteenth", "16"),
    ("sixth", "6"),
    ("sixty", "60"),
    ("ten", "10"),
    ("tenth", "10"),
    ("third", "3"),
    ("thirteen", "13"),
    ("thirteenth", "13"),
    ("thirtieth", "30"),
    ("thirty", "30"),
    ("thousand", "1000"),
    ("three", "3"),
    ("twelfth", "12"),
    ("twelve", "12"),
    ("twentieth", "20"),
    ("twenty", "20"),
    ("two", "2"),
    ("zero", "0"),
];

/// Whether a spelled number is an ordinal ("fourteenth", "first").
const fn is_ordinal(word: &str) -> bool {
    let w = word.as_bytes();
    let n = w.len();
    (n >= 2 && w[n - 2] == b't' && w[n - 1] == b'h')
        || same(w, b"first")
        || same(w, b"second")
        || same(w, b"third")
}

/// `a == b`, in a constant.
const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Rows of [`SPELLED_BY_NUMBER`]: 0 to 100, then 1000.
const SPELLED_ROWS: usize = 102;

/// [`SPELLED`] by number (its row: the value up to 100, then 1000) and
/// ordinal (cardinal, ordinal): 1 + the index of the first entry that
/// spells it, 0 for none. A number's word is one look-up, not a pass over
/// the table. An entry of another number fails the build (its row is out
/// of bounds).
const SPELLED_BY_NUMBER: [[u8; 2]; SPELLED_ROWS] = {
    let mut rows = [[0u8; 2]; SPELLED_ROWS];
    let mut i = 0;
    while i < SPELLED.len() {
        let (word, digits) = SPELLED[i];
        let d = digits.as_bytes();
        let mut value = 0;
        let mut k = 0;
        while k < d.len() {
            value = value * 10 + (d[k] - b'0') as usize;
            k += 1;
        }
        let row = if value == 1000 {
            SPELLED_ROWS - 1
        } else {
            value
        };
        let ordinal = is_ordinal(word) as usize;
        if rows[row][ordinal] == 0 {
            rows[row][ordinal] = i as u8 + 1;
        }
        i += 1;
    }
    rows
};

/// The other spelling of `w` (as written in the claim) when it is a small
/// number: its word for digits, its digits for a word. Digits are looked up
/// for missing numbers only; words once per distinct word (the memo).
pub(super) fn spelled_other(w: &str, number: bool) -> Option<&'static str> {
    if number {
        // "14th" is the ordinal "fourteenth", "14" the cardinal "fourteen".
        let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let ordinal = digits.len() < w.len();
        // Digits as the table writes them: no sign, separator or leading
        // zero, at most four.
        let d = digits.as_bytes();
        if d.is_empty() || d.len() > 4 || (d.len() > 1 && d[0] == b'0') {
            return None;
        }
        let mut value = 0usize;
        for &b in d {
            if !b.is_ascii_digit() {
                return None;
            }
            value = value * 10 + usize::from(b - b'0');
        }
        let row = match value {
            0..=100 => value,
            1000 => SPELLED_ROWS - 1,
            _ => return None,
        };
        let entry = SPELLED_BY_NUMBER[row][usize::from(ordinal)];
        return (entry != 0).then(|| SPELLED[usize::from(entry) - 1].0);
    }
    let b = w.as_bytes();
    if !(3..=11).contains(&b.len()) || !b.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    let mut buf = [0u8; 16];
    let lower = lower_case(b, &mut buf)?;
    SPELLED
        .binary_search_by(|(word, _)| word.as_bytes().cmp(lower))
        .ok()
        .map(|i| SPELLED[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table read entry by entry.
    fn spelled_by_scan(w: &str) -> Option<&'static str> {
        let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let ordinal = digits.len() < w.len();
        SPELLED
            .iter()
            .find_map(|&(word, d)| (d == digits && is_ordinal(word) == ordinal).then_some(word))
    }

    #[test]
    fn a_name_word_is_a_stop_word_as_the_list_reads() {
        let mut words: Vec<String> = STOP_WORDS.iter().map(|w| w.to_string()).collect();
        words.extend(STOP_WORDS.iter().map(|w| w.to_ascii_uppercase()));
        words.extend(STOP_WORDS.iter().map(|w| format!("{w}s")));
        words.extend(STOP_WORDS.iter().map(|w| w[1..].to_string()));
        words.extend(
            [
                "",
                "The",
                "tHe",
                "IT'S",
                "it-s",
                "its",
                "don't",
                "x",
                "A1",
                "0f",
                "of-",
                "yourselves",
                "Yourselvess",
                "themselves-",
                "'",
                "-",
                "99",
            ]
            .map(String::from),
        );
        for w in words {
            let lower = w.to_ascii_lowercase();
            assert_eq!(is_stop_name_word(w.as_bytes()), is_stop(&lower), "{w}");
        }
    }

    #[test]
    fn higher_and_lower_after_a_number_and_its_unit_state_its_change() {
        for (text, change) in [
            ("5% higher", Some("increase")),
            ("5 per cent lower", Some("decrease")),
            ("2 percentage points Higher,", Some("increase")),
            ("40 basis points lower", Some("decrease")),
            ("3bn higher", Some("increase")),
            ("3 billion lower.", Some("decrease")),
            ("5% higher than last year", Some("increase")),
            ("5 times higher", None),
            ("5% of higher income", None),
            ("5% highest", None),
            ("5% higher5", None),
            ("5%", None),
            ("5 points", None),
            ("25 Lower Street", None),
            ("$2 higher", Some("increase")),
            ("€2 lower", Some("decrease")),
        ] {
            let b = text.as_bytes();
            let at = b.iter().position(u8::is_ascii_digit).unwrap();
            let digits = b[at..].iter().take_while(|c| c.is_ascii_digit()).count();
            let read = comparative_after(b, at, at + digits);
            assert_eq!(read.map(|(c, _, _)| c), change.map(str::as_bytes), "{text}");
            if let Some((_, at, len)) = read {
                let word = text[at..at + len].to_ascii_lowercase();
                assert!(word == "higher" || word == "lower", "{text}");
            }
        }
    }

    #[test]
    fn a_is_one_before_a_hundred_or_a_scale() {
        let read = |text: &str| {
            let mut out = [0u8; 48];
            spelled_run(text.as_bytes(), 0, 1, &mut out)
                .map(|(n, end)| (String::from_utf8(out[..n].to_vec()).unwrap(), end))
        };
        assert_eq!(read("a million people"), Some(("1000000".into(), 9)));
        assert_eq!(read("A hundred and five"), Some(("105".into(), 18)));
        assert_eq!(read("a thousand"), Some(("1000".into(), 10)));
        for text in ["a thousandth", "a few", "a one", "a", "a bank", "a twenty"] {
            assert_eq!(read(text), None, "{text}");
        }
    }

    #[test]
    fn up_and_down_before_a_number_read_alike_in_claims_and_sources() {
        for (text, change) in [
            ("Revenue was up 5%", Some("increase")),
            ("Deposits were down by $2 billion", Some("decrease")),
            ("Revenue's up 5%", Some("increase")),
            ("turnover, up 34 per cent", Some("increase")),
            ("Up 5% on the year", Some("increase")),
            ("Revenue held. Up 5% on the year", Some("increase")),
            ("Costs fell! Down 2% in all", Some("decrease")),
            ("The stock closed DOWN 2%", Some("decrease")),
            ("Prices were up €5", Some("increase")),
            ("Women make up 11% of staff", None),
            ("He put up 44 points", None),
            ("Prices were up sharply", None),
            ("Prices were up to 5%", None),
            ("a setup 5 times", None),
        ] {
            let (b, lower) = (text.as_bytes(), text.to_ascii_lowercase());
            // The "up" or "down", as a claim reads it.
            let word = lower
                .find(" up ")
                .or_else(|| lower.find(" down "))
                .map_or(0, |p| p + 1);
            let len = b[word..]
                .iter()
                .take_while(|c| c.is_ascii_alphabetic())
                .count();
            let change = change.map(str::as_bytes);
            assert_eq!(
                direction_of_number(b, word, len),
                change,
                "{text}: the claim's word"
            );
            // The number after it, and its sign, as a source reads them.
            let Some(n) = b.iter().position(u8::is_ascii_digit) else {
                continue;
            };
            if n > word + len + 8 {
                continue;
            }
            let sign = currency_sign(b, n).map_or(0, |(_, s)| s);
            assert_eq!(
                direction_before(b, n - sign),
                change,
                "{text}: before the source's number"
            );
        }
    }

    #[test]
    fn cents_are_written_as_their_units() {
        for (cents, units) in [
            ("50", "0.50"),
            ("5", "0.05"),
            ("150", "1.50"),
            ("2.5", "0.025"),
            ("1,000", "10"),
            ("99", "0.99"),
        ] {
            let mut out = [0u8; 48];
            let n = units_of_cents(cents.as_bytes(), &mut out).unwrap();
            assert_eq!(&out[..n], units.as_bytes(), "{cents}");
        }
        assert_eq!(cents_after(b"50 cents a share", 2), Some(8));
        assert_eq!(cents_after(b"1 cent", 1), Some(6));
        for other in ["5 per cent", "5 centimes", "5cents", "5 Cent5"] {
            assert_eq!(cents_after(other.as_bytes(), 1), None, "{other}");
        }
    }

    #[test]
    fn fractions_of_a_point_or_a_scale_are_read_with_their_unit() {
        fn read(text: &str) -> Option<(Vec<u8>, &str)> {
            let len = text.find([' ', '-']).unwrap_or(text.len());
            let mut out = [0u8; 48];
            fraction(text.as_bytes(), 0, len, &mut out)
                .map(|(n, end)| (out[..n].to_vec(), &text[..end]))
        }
        for (text, value, words) in [
            ("quarter point cut", "0.25", "quarter point"),
            ("quarter-point cut", "0.25", "quarter-point"),
            (
                "Quarter of a Percentage Point.",
                "0.25",
                "Quarter of a Percentage Point",
            ),
            ("half a point", "0.5", "half a point"),
            ("half a per cent", "0.5", "half a per cent"),
            ("half a percent", "0.5", "half a percent"),
            ("half-point", "0.5", "half-point"),
            (
                "three-quarters of a point",
                "0.75",
                "three-quarters of a point",
            ),
            ("three quarter points", "0.75", "three quarter points"),
            ("half a million people", "500000", "half a million"),
            ("Half a billion.", "500000000", "Half a billion"),
            ("half million", "500000", "half million"),
            ("quarter of a million", "250000", "quarter of a million"),
            (
                "three-quarters of a trillion",
                "750000000000",
                "three-quarters of a trillion",
            ),
        ] {
            assert_eq!(
                read(text),
                Some((value.as_bytes().to_vec(), words)),
                "{text}"
            );
        }
        for text in [
            "half of the loans",
            "quarter of a share",
            "half a percentage",
            "half a percentage of",
            "quarter pointed",
            "three points",
            "three quarters of the year",
            "half",
            "quarter per share",
            "half a millionth",
            "half a million5",
            "half a hundred",
        ] {
            assert_eq!(read(text), None, "{text}");
        }
        assert!(article_of_fraction(b"a quarter point", 0));
        assert!(article_of_fraction(b"a half million", 0));
        assert!(!article_of_fraction(b"a quarter of loans", 0));
    }

    #[test]
    fn basis_points_are_written_as_their_percent() {
        let percent = |w: &str| {
            let mut out = [0u8; 48];
            let len = percent_of_basis_points(w.as_bytes(), &mut out).unwrap();
            String::from_utf8(out[..len].to_vec()).unwrap()
        };
        for (bps, pct) in [
            ("25", "0.25"),
            ("1", "0.01"),
            ("100", "1"),
            ("150", "1.5"),
            ("310", "3.1"),
            ("12.5", "0.125"),
            ("0.5", "0.005"),
            ("1,250", "12.5"),
            ("10000", "100"),
            ("0", "0"),
            ("007", "0.07"),
        ] {
            assert_eq!(percent(bps), pct, "{bps}");
        }
        let unit = |t: &str| basis_points(t.as_bytes(), 0);
        assert_eq!(unit("bps cut"), Some(3));
        assert_eq!(unit("BP."), Some(2));
        assert_eq!(unit("basis points"), Some(12));
        assert_eq!(unit("basis-point cut"), Some(11));
        for other in ["bpss", "basis", "basis of", "basis pointed", "b"] {
            assert_eq!(unit(other), None, "{other}");
        }
        // The unit after a number is read as none; "bps" alone is a word.
        let text = b"a 25-basis-point cut, 25 bps, 0.25 percentage points, the bps";
        let skipped_at = |at: usize, len: usize| skipped(text, &mut 0, at, len);
        let last = text.len() - 3;
        assert!(skipped_at(5, 5), "basis");
        assert!(skipped_at(25, 3), "bps");
        assert!(skipped_at(35, 10), "percentage");
        assert!(!skipped_at(17, 3), "cut");
        assert!(!skipped_at(last, 3), "the bps");
    }

    #[test]
    fn numbers_are_spelled_as_the_table_reads() {
        let mut numerals: Vec<String> = (0..=10_000).map(|n| n.to_string()).collect();
        numerals.extend((0..=100).map(|n| format!("0{n}")));
        numerals.extend(["", "1,000", "1.5", "100.0", "2.", "٣", "99999"].map(String::from));
        for n in numerals {
            for w in [
                n.clone(),
                format!("{n}th"),
                format!("{n}st"),
                format!("{n}s"),
            ] {
                assert_eq!(spelled_other(&w, true), spelled_by_scan(&w), "{w:?}");
            }
        }
        assert_eq!(spelled_other("1000", true), Some("thousand"));
        assert_eq!(spelled_other("100th", true), Some("hundredth"));
    }

    #[test]
    fn yet_and_adverbs_pass_a_negation_on() {
        for yes in [
            "yet",
            "Yet",
            "immediately",
            "fully",
            "necessarily",
            "currently",
        ] {
            assert!(passes_negation_on(yes.as_bytes()), "{yes}");
        }
        for no in ["apply", "supply", "reply", "only", "fly", "approved", "ly"] {
            assert!(!passes_negation_on(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn the_not_of_not_only_but_negates_nothing() {
        let void = |text: &str| negates_nothing(text.as_bytes(), text.find("not").unwrap(), 3);
        for yes in [
            "It was not only approved but also funded.",
            "It not only rose, but it also paid a dividend.",
            "He is not just a singer but an actor.",
            "It not only led the league by a mile (the next was at 7.5), but tied the record.",
            "It was not merely cheap but",
        ] {
            assert!(void(yes), "{yes}");
        }
        for no in [
            "That was not just where I wanted it.",
            "It can not only be used once. But it is cheap.",
            "It is not the only bank, but it is the largest.",
            "It was not approved but it was funded.",
            "It was not only approved, butter was also bought.",
        ] {
            assert!(!void(no), "{no}");
        }
    }

    #[test]
    fn a_no_answers_a_question_first_in_its_sentence_before_a_comma() {
        let particle = |text: &str| {
            let at = text.find("No").or_else(|| text.find("no")).unwrap();
            answer_particle(text.as_bytes(), at, 2)
        };
        for yes in [
            "No, it is closed.",
            "no , it is closed.",
            "No! It is closed.",
            "Is it open? No, it is closed.",
            "Q: Is it open? A: No, it is closed.",
            "It opened in May[^1]. \"No, it is closed.\"",
            "(It opened in May.) No, it is closed.",
            "It opened in May.) No, it is closed.",
        ] {
            assert!(particle(yes), "{yes}");
        }
        for no in [
            "No fee is charged.",
            "No. It is closed.",
            "There is no, or almost no, fee.",
            "It has no fee, and no minimum.",
            "It has (as before) no, or almost no, fee.",
        ] {
            assert!(!particle(no), "{no}");
        }
    }

    #[test]
    fn a_period_or_an_abbreviation_written_short_is_read_as_its_words() {
        let read = |w: &str| {
            short_form(w.as_bytes()).map(|p| {
                let mut out: Vec<String> = p
                    .words
                    .iter()
                    .map(|x| String::from_utf8_lossy(x).into())
                    .collect();
                if let Some(year) = p.year {
                    out.push(String::from_utf8_lossy(&year).into());
                }
                out.push(w[p.rest..].to_string());
                out.join(" ").trim_end().to_string()
            })
        };
        assert_eq!(read("Q3").as_deref(), Some("3rd quarter"));
        assert_eq!(read("Q1").as_deref(), Some("1st quarter"));
        assert_eq!(read("H2").as_deref(), Some("2nd half"));
        assert_eq!(read("FY2023").as_deref(), Some("fiscal year 2023"));
        assert_eq!(read("bps").as_deref(), Some("basis points"));
        assert_eq!(read("YoY").as_deref(), Some("year over year"));
        assert_eq!(read("EPS").as_deref(), Some("earnings per share"));
        assert_eq!(read("QoQ").as_deref(), Some("quarter over quarter"));
        assert_eq!(read("YTD").as_deref(), Some("year to date"));
        // "MoM" only so: "mom", "Mom" and "MOM" are a mother.
        assert_eq!(read("MoM").as_deref(), Some("month over month"));
        assert_eq!(read("3Q").as_deref(), Some("3rd quarter"));
        assert_eq!(read("3Q23").as_deref(), Some("3rd quarter 2023"));
        assert_eq!(read("4Q2024").as_deref(), Some("4th quarter 2024"));
        assert_eq!(read("1H24").as_deref(), Some("1st half 2024"));
        assert_eq!(read("2H2024").as_deref(), Some("2nd half 2024"));
        assert_eq!(read("FY23").as_deref(), Some("fiscal year 2023"));
        assert_eq!(read("FY").as_deref(), Some("fiscal year"));
        // A year of two digits is in the century POSIX reads it in.
        assert_eq!(read("FY68").as_deref(), Some("fiscal year 2068"));
        assert_eq!(read("FY69").as_deref(), Some("fiscal year 1969"));
        assert_eq!(read("3Q99").as_deref(), Some("3rd quarter 1999"));
        for w in [
            "Q5", "Q0", "H3", "q3", "FY2023a", "FY234", "FY2", "G7", "A4", "5Q", "0Q23", "3q23",
            "3Q2", "3Q234", "3Q23a", "1H", "3H23", "2024", "Q", "fy", "Fy", "bp", "mom", "Mom",
            "MOM", "the", "bpss", "yo", "twice", "times",
        ] {
            assert_eq!(read(w), None, "{w}");
        }
    }

    #[test]
    fn a_name_glued_to_a_number_splits_after_its_letters() {
        let split = |w: &str| acronym_glued_to_number(w.as_bytes());
        for (w, n) in [
            ("CET1", 3),
            ("SHA256", 3),
            ("TiO2", 3),
            ("tb12", 2),
            ("COVID19", 5),
        ] {
            assert_eq!(split(w), Some(n), "{w}");
        }
        for w in [
            "G7", "A4", "No1", "no2", "FY23", "FY2023", "H1", "CET1a", "C3PO", "2024", "3Q23",
            "word",
        ] {
            assert_eq!(split(w), None, "{w}");
        }
    }

    #[test]
    fn a_clock_time_is_its_hour_and_minutes_on_the_24_hour_clock() {
        let read = |text: &str| {
            let len = text.bytes().take_while(u8::is_ascii_digit).count();
            let mut out = [0u8; 5];
            clock_time(text.as_bytes(), 0, len, &mut out)
                .map(|(t, marked, end)| (String::from_utf8_lossy(t).into_owned(), marked, end))
        };
        assert_eq!(read("5 p.m."), Some(("17:00".into(), true, 5)));
        assert_eq!(read("5pm"), Some(("17:00".into(), true, 3)));
        assert_eq!(read("5:30 PM."), Some(("17:30".into(), true, 7)));
        assert_eq!(read("12 a.m."), Some(("0:00".into(), true, 6)));
        assert_eq!(read("12 p.m."), Some(("12:00".into(), true, 6)));
        assert_eq!(read("9 am"), Some(("9:00".into(), true, 4)));
        assert_eq!(read("09:00"), Some(("9:00".into(), false, 5)));
        assert_eq!(read("17:30,"), Some(("17:30".into(), false, 5)));
        for text in [
            "5", "5 pmx", "5 amount", "13 p.m.", "0 a.m.", "25:00", "1:00:00", "3:1", "5  pm", "5.",
        ] {
            assert_eq!(read(text), None, "{text}");
        }
    }

    proptest::proptest! {
        #[test]
        fn a_clock_time_ends_within_its_text(text in "[0-9apmAPM.: ]{0,12}") {
            let bytes = text.as_bytes();
            for at in 0..bytes.len() {
                for len in 1..=bytes.len() - at {
                    if let Some((_, _, end)) = clock_time(bytes, at, len, &mut [0u8; 5]) {
                        proptest::prop_assert!(end > at && end <= bytes.len());
                    }
                }
            }
        }

        #[test]
        fn basis_points_are_a_hundredth_of_a_percent(
            whole in 0u64..10_000_000,
            fraction in proptest::option::of("[0-9]{1,6}"),
        ) {
            let numeral = match &fraction {
                Some(f) => format!("{whole}.{f}"),
                None => whole.to_string(),
            };
            let mut out = [0u8; 48];
            let len = percent_of_basis_points(numeral.as_bytes(), &mut out).unwrap();
            let written = std::str::from_utf8(&out[..len]).unwrap();
            // Written as a folded number is: no leading zero but the one
            // before a point, no trailing zero after one.
            proptest::prop_assert!(
                !written.starts_with('.')
                    && (!written.starts_with('0') || written.len() == 1 || written.as_bytes()[1] == b'.')
            );
            proptest::prop_assert!(!written.contains('.') || !written.ends_with(['0', '.']));
            let value: f64 = written.parse().unwrap();
            let expected = numeral.parse::<f64>().unwrap() / 100.0;
            proptest::prop_assert!((value - expected).abs() <= expected * 1e-12, "{numeral}: {written}");
        }
    }

    #[test]
    fn an_x_after_a_number_is_a_multiple() {
        let at = |text: &str, at: usize| multiple_sign(text.as_bytes(), at);
        assert!(at("2x", 1));
        assert!(at("1.5X", 3));
        assert!(!at("x", 0));
        assert!(!at("2 x", 2));
        assert!(!at("2y", 1));
    }

    #[test]
    fn a_slashed_period_is_its_words_with_the_same_letter_on_both_sides() {
        let read = |text: &str, at: usize| {
            slashed_period(text.as_bytes(), at).map(|p| {
                p.words
                    .iter()
                    .map(|x| String::from_utf8_lossy(x))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        };
        assert_eq!(read("5% y/y.", 3).as_deref(), Some("year over year"));
        assert_eq!(read("Q/Q", 0).as_deref(), Some("quarter over quarter"));
        assert_eq!(read("(m/m)", 1).as_deref(), Some("month over month"));
        for (text, at) in [
            ("y/q", 0),
            ("y/x", 0),
            ("y/yr", 0),
            ("xy/y", 1),
            ("a/y/y", 2),
            ("y/y/y", 0),
            ("y/", 0),
            ("h/h", 0),
        ] {
            assert_eq!(read(text, at), None, "{text}");
        }
        assert!(slashed_period_before(b"up y/y", 5));
        assert!(!slashed_period_before(b"up x/y", 5));
    }

    #[test]
    fn a_number_after_a_minus_sign_is_negative() {
        let minus = |text: &str, at: usize| minus_before(text.as_bytes(), at);
        assert_eq!(minus("-5", 1), Some(1));
        assert_eq!(minus("fell to -5 degrees", 9), Some(1));
        assert_eq!(minus("fell to \u{2212}5", 11), Some(3));
        assert_eq!(minus("(-5)", 2), Some(1));
        assert_eq!(minus("fell to minus 5", 14), Some(6));
        assert_eq!(minus("Minus 5", 6), Some(6));
        assert_eq!(minus("a negative 5% return", 11), None);
        for (text, at) in [
            ("5-10", 2),
            ("2004-05", 5),
            ("e-5", 2),
            ("fell to 5", 8),
            ("Xminus 5", 7),
        ] {
            assert_eq!(minus(text, at), None, "{text}");
        }
        let mut out = [0u8; 49];
        assert_eq!(with_minus(b"5.2", &mut out), b"-5.2");
    }

    #[test]
    fn a_unit_after_a_slash_is_read_per_its_word() {
        let per = |text: &str, at: usize, len: usize| {
            per_unit(text.as_bytes(), at, len).map(|w| String::from_utf8_lossy(w).into_owned())
        };
        assert_eq!(per("300 km/h", 7, 1).as_deref(), Some("hour"));
        assert_eq!(per("9.8 m/s", 6, 1).as_deref(), Some("second"));
        assert_eq!(per("60 mi/hr.", 6, 2).as_deref(), Some("hour"));
        for (text, at, len) in [
            ("and/or", 4, 2),
            ("TCP/IP", 4, 2),
            ("km/hour", 3, 4),
            ("Km/h", 3, 1),
            ("km/h2", 3, 2),
            ("kilo/h", 5, 1),
            ("5/h", 2, 1),
            ("km h", 3, 1),
        ] {
            assert_eq!(per(text, at, len), None, "{text}");
        }
    }

    #[test]
    fn a_date_is_read_as_month_day_and_year() {
        let date = |text: &str, at: usize, len: usize| {
            date(text.as_bytes(), at, len).map(|d| {
                let words: Vec<_> = d.words().map(String::from_utf8_lossy).collect();
                (words.join(" "), d.year, d.end)
            })
        };
        let d = |words: &str, year, end| Some((words.to_string(), year, end));
        assert_eq!(date("2004-05-12", 0, 4), d("May 12", Some(0), 10));
        assert_eq!(date("on 1999-12-01.", 3, 4), d("December 1", Some(3), 13));
        assert_eq!(date("(2020-01-31)", 1, 4), d("January 31", Some(1), 11));
        assert_eq!(date("on 12 May 2004", 3, 2), d("May", Some(10), 9));
        assert_eq!(date("1 March, 1999", 0, 1), d("March", Some(9), 7));
        assert_eq!(date("(31 December)", 1, 2), d("December", None, 12));
        assert_eq!(date("4 Sept. 1920", 0, 1), d("September", None, 6));
        assert_eq!(date("4 Dec 1920", 0, 1), d("December", Some(6), 5));
        assert_eq!(date("the 12th of May, 2004", 4, 4), d("May", Some(17), 15));
        assert_eq!(date("1st March 1999", 0, 3), d("March", Some(10), 9));
        assert_eq!(date("on May 12th, 2004", 7, 4), d("", Some(13), 11));
        assert_eq!(date("the 1st Battalion", 4, 3), None);
        assert_eq!(date("the 40th May", 4, 4), None);
        // Named first: nothing read before the day, the year found.
        assert_eq!(date("on May 12, 2004.", 7, 2), d("", Some(11), 9));
        assert_eq!(date("Sept. 4 1920", 6, 1), d("", Some(8), 7));
        assert_eq!(date("May 12 2004-05", 4, 2), None);
        assert_eq!(date("May 12, in 2004", 4, 2), None);
        assert_eq!(date("Mayor 12, 2004", 6, 2), None);
        assert_eq!(date("XMay 12, 2004", 5, 2), None);
        for not_a_date in [
            "2004-05",
            "2004-05 season",
            "2004-13-01",
            "2004-00-10",
            "2004-05-00",
            "2004-05-32",
            "2004-05-12-7",
            "2004-05-12T10:00",
            "2004-5-12",
            "2004-05-123",
        ] {
            assert_eq!(date(not_a_date, 0, 4), None, "{not_a_date}");
        }
        for not_a_date in [
            "32 May",
            "0 May",
            "05 May",
            "12 may",
            "12 Mayfair",
            "12 Ma",
            "12  May",
            "12 Mays",
        ] {
            let len = not_a_date.find(' ').unwrap_or(0);
            assert_eq!(date(not_a_date, 0, len), None, "{not_a_date}");
        }
        assert_eq!(date("1.12 May", 2, 2), None);
        assert_eq!(date("ID-2004-05-12", 3, 4), None);
        assert_eq!(date("12004-05-12", 1, 4), None);
        assert!(may_open_date(b"2004-05-12", 0, 4));
        assert!(may_open_date(b"12 May", 0, 2));
        assert!(may_open_date(b"May 12, 2004", 4, 2));
        assert!(may_open_date(b"Sept. 4 1920", 6, 1));
        assert!(!may_open_date(b"2004 05 12", 0, 4));
        assert!(!may_open_date(b"123 May", 0, 3));
        assert!(!may_open_date(b"12 members", 0, 2));
        assert!(!may_open_date(b"with 12, the", 5, 2));
    }
}
