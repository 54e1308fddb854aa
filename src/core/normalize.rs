//! Text as the forbidden-term rule compares it: a form in which the usual
//! ways of hiding a word from a substring search no longer work.
//!
//! Each character of the input becomes: its NFKC form (fullwidth and other
//! compatibility letters become plain ones), case folded (full folding, so
//! `ß` ~ `ss`), NFKC again, then its Unicode TR39 confusable skeleton (a
//! Cyrillic `а` becomes a Latin `a`; the skeleton also drops
//! default-ignorable characters such as the zero-width space and the soft
//! hyphen), case folded once more. Format characters (general category Cf) are dropped, runs of
//! whitespace become one space, and citation markers (`[^N]` spans the
//! caller hands in) are removed, so `re[^1]turn` reads `return`.
//!
//! Every piece of the normal form remembers the bytes of the original it
//! came from, so a match is reported at the original's byte range.
//!
//! Pure: no I/O, no clock. Not a place for verdicts: it only rewrites text.

use std::ops::Range;
use std::sync::LazyLock;

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// A normal form with a map back to the original's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    pub text: String,
    /// Where each part of `text` came from, in order of `text`.
    pieces: Vec<Piece>,
}

/// A stretch of the normal form and the bytes of the original it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Piece {
    /// Start in the normal form.
    at: usize,
    /// The bytes of the original.
    from: Range<usize>,
    /// Byte for byte: ASCII characters that each became one ASCII byte, so
    /// an offset into the stretch is the same offset into `from`. Runs of
    /// them (most text) are one piece, not one per character.
    one_to_one: bool,
}

impl Normalized {
    /// The byte range of the original that `range` of [`Normalized::text`]
    /// came from: from the original of its first byte to the original of
    /// its last (a character the normal form changed maps to all of its
    /// bytes).
    pub fn original(&self, range: Range<usize>) -> Range<usize> {
        if self.pieces.is_empty() || range.is_empty() {
            return 0..0;
        }
        let of = |at: usize| {
            let i = self
                .pieces
                .partition_point(|p| p.at <= at)
                .saturating_sub(1);
            let p = &self.pieces[i];
            if p.one_to_one {
                let b = p.from.start + (at - p.at);
                b..b + 1
            } else {
                p.from.clone()
            }
        };
        of(range.start).start..of(range.end - 1).end
    }

    /// Appends `piece`, the normal form of the original bytes `from`.
    fn push(&mut self, piece: &str, from: Range<usize>) {
        if let &[b] = piece.as_bytes()
            && from.len() == 1
        {
            return self.push_byte(b, from.start);
        }
        self.pieces.push(Piece {
            at: self.text.len(),
            from,
            one_to_one: false,
        });
        self.text.push_str(piece);
    }

    /// Appends the ASCII byte `b`, the normal form of the original's byte `at`.
    fn push_byte(&mut self, b: u8, at: usize) {
        self.text.push(char::from(b));
        self.one_to_one(at..at + 1);
    }

    /// Records that the last `from.len()` bytes of the text are the
    /// original's `from`, byte for byte.
    fn one_to_one(&mut self, from: Range<usize>) {
        match self.pieces.last_mut() {
            Some(last) if last.one_to_one && last.from.end == from.start => {
                last.from.end = from.end
            }
            _ => self.pieces.push(Piece {
                at: self.text.len() - from.len(),
                from,
                one_to_one: true,
            }),
        }
    }
}

/// What an ASCII character becomes.
enum AsciiForm {
    /// Nothing (a control character of category Cf; none in ASCII today).
    Dropped,
    /// Whitespace, collapsed with its neighbours.
    Blank,
    /// One ASCII byte (most characters: themselves, or lowercased).
    Byte(u8),
    /// Anything longer.
    Text(String),
}

/// The normal form of `s`, leaving out the byte ranges in `skip` (sorted,
/// not overlapping, on character boundaries). Leading and trailing
/// whitespace is dropped.
pub fn normalize(s: &str, skip: &[Range<usize>]) -> Normalized {
    let mut out = Normalized {
        text: String::with_capacity(s.len()),
        pieces: Vec::new(),
    };
    let bytes = s.as_bytes();
    let mut skip = skip.iter();
    let mut next_skip = skip.next();
    // Whitespace seen since the last piece: written as one space when a
    // piece follows.
    let mut space: Option<Range<usize>> = None;
    let mut buf = String::new();
    let ascii = &*ASCII;
    let mut at = 0;
    while at < bytes.len() {
        if let Some(r) = next_skip
            && r.start <= at
        {
            // A marker: move past it.
            at = at.max(r.end);
            next_skip = skip.next();
            continue;
        }
        let (piece, len): (&str, usize) = if bytes[at].is_ascii() {
            match &ascii.forms[usize::from(bytes[at])] {
                AsciiForm::Dropped => {
                    at += 1;
                    continue;
                }
                AsciiForm::Blank => {
                    space = Some(space.map_or(at..at + 1, |r| r.start..at + 1));
                    at += 1;
                    continue;
                }
                AsciiForm::Byte(b) if !ascii.plain[usize::from(bytes[at])] => {
                    flush_space(&mut out, &mut space);
                    out.push_byte(*b, at);
                    at += 1;
                    continue;
                }
                AsciiForm::Byte(_) => {
                    flush_space(&mut out, &mut space);
                    // The run of characters whose normal form is their
                    // lowercase (most of a text): copied and lowercased in
                    // one go, one piece of the offset map.
                    let stop = next_skip.map_or(bytes.len(), |r| r.start);
                    let start = at;
                    let plain = |at: usize| {
                        at < stop && ascii.plain.get(usize::from(bytes[at])) == Some(&true)
                    };
                    // A single space between two such characters is its own
                    // normal form too (nothing to collapse): the run goes on.
                    while plain(at) || (bytes.get(at) == Some(&b' ') && plain(at + 1)) {
                        at += 1;
                    }
                    let from = out.text.len();
                    out.text.push_str(&s[start..at]);
                    out.text[from..].make_ascii_lowercase();
                    out.one_to_one(start..at);
                    continue;
                }
                AsciiForm::Text(t) => (t, 1),
            }
        } else {
            let Some(c) = s[at..].chars().next() else {
                break;
            };
            buf.clear();
            normal_form(c, &mut buf);
            if buf.is_empty() {
                at += c.len_utf8();
                continue;
            }
            if buf.chars().all(char::is_whitespace) {
                let end = at + c.len_utf8();
                space = Some(space.map_or(at..end, |r| r.start..end));
                at = end;
                continue;
            }
            (&buf, c.len_utf8())
        };
        flush_space(&mut out, &mut space);
        out.push(piece, at..at + len);
        at += len;
    }
    out
}

/// Writes pending whitespace as one space, unless nothing precedes it.
fn flush_space(out: &mut Normalized, space: &mut Option<Range<usize>>) {
    if let Some(r) = space.take()
        && !out.text.is_empty()
    {
        if r.len() == 1 {
            out.push_byte(b' ', r.start);
        } else {
            out.push(" ", r);
        }
    }
}

/// The normal form of each ASCII character, computed once.
struct AsciiTable {
    forms: Vec<AsciiForm>,
    /// The character's normal form is its ASCII lowercase.
    plain: [bool; 128],
}

static ASCII: LazyLock<AsciiTable> = LazyLock::new(|| {
    let forms: Vec<AsciiForm> = (0u8..128)
        .map(|b| {
            let mut s = String::new();
            normal_form(char::from(b), &mut s);
            match s.as_bytes() {
                [] => AsciiForm::Dropped,
                _ if s.chars().all(char::is_whitespace) => AsciiForm::Blank,
                &[one] => AsciiForm::Byte(one),
                _ => AsciiForm::Text(s),
            }
        })
        .collect();
    let mut plain = [false; 128];
    for (b, form) in (0u8..).zip(&forms) {
        plain[usize::from(b)] = matches!(form, AsciiForm::Byte(n) if *n == b.to_ascii_lowercase());
    }
    AsciiTable { forms, plain }
});

/// One character's normal form, appended to `out`.
fn normal_form(c: char, out: &mut String) {
    if c.general_category() == GeneralCategory::Format {
        return;
    }
    let compat: String = std::iter::once(c).nfkc().collect();
    let folded: String = caseless::default_case_fold_str(&compat).nfkc().collect();
    let skeleton: String = unicode_security::skeleton(&folded).collect();
    // Some prototypes are capitals (the digit 0's is `O`): folded again, so
    // look-alikes compare equal whatever their case.
    out.push_str(&caseless::default_case_fold_str(&skeleton));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> String {
        normalize(s, &[]).text
    }

    #[test]
    fn hidden_spellings_have_the_plain_normal_form() {
        let plain = n("guaranteed return");
        for hidden in [
            "guaranteed  return",
            "guaranteed\treturn",
            "guaranteed\nreturn",
            "guaranteed\u{a0}return",
            "guaran\u{200b}teed return",
            "guaran\u{ad}teed return",
            "gu\u{2060}aranteed re\u{feff}turn",
            "gu\u{430}ranteed return",
            "ＧＵＡＲＡＮＴＥＥＤ ＲＥＴＵＲＮ",
            "GUARANTEED RETURN",
            " guaranteed \u{3000} return ",
            "guaranteed\u{600}return",
        ] {
            let got = n(hidden);
            // A format character between two words joins them: compare
            // without the one space.
            let want = if hidden.contains('\u{600}') {
                plain.replace(' ', "")
            } else {
                plain.clone()
            };
            assert_eq!(got, want, "{hidden:?}");
        }
        assert_ne!(n("guaranteed returns"), plain);
    }

    #[test]
    fn ascii_look_alikes_compare_equal() {
        assert_eq!(n("l0ss"), n("LOSS"));
        assert_eq!(n("1oss"), n("loss"));
        assert_eq!(n("|oss"), n("loss"));
        // Not look-alikes in the Unicode data: kept apart.
        assert_ne!(n("gu4ranteed"), n("guaranteed"));
        assert_ne!(n("Ioss"), n("loss"));
    }

    #[test]
    fn skipped_ranges_are_left_out_and_pieces_map_back() {
        let s = "a re[^1]turn, é";
        let marker = s.find("[^1]").unwrap();
        let skip: Vec<Range<usize>> = std::iter::once(marker..marker + 4).collect();
        let m = normalize(s, &skip);
        assert_eq!(m.text, n("a return, é"));
        let at = m.text.find(&n("return")).unwrap();
        let orig = m.original(at..at + n("return").len());
        assert_eq!(&s[orig], "re[^1]turn");
        // A multi-byte original maps to all of its bytes.
        let e = m.text.rfind(&n("é")).unwrap();
        assert_eq!(&s[m.original(e..m.text.len())], "é");
    }

    #[test]
    fn offsets_inside_plain_text_map_byte_for_byte() {
        let s = "plain words, then a guaranteed return and more";
        let m = normalize(s, &[]);
        let at = m.text.find("guaranteed").unwrap();
        assert_eq!(&s[m.original(at..at + "guaranteed".len())], "guaranteed");
        let at = m.text.find("en a g").unwrap();
        assert_eq!(&s[m.original(at..at + 6)], "en a g");
    }

    /// The normal form character by character, with no fast path.
    fn reference(s: &str) -> String {
        let mut out = String::new();
        let mut space = false;
        for c in s.chars() {
            let mut piece = String::new();
            normal_form(c, &mut piece);
            if piece.is_empty() {
                continue;
            }
            if piece.chars().all(char::is_whitespace) {
                space = true;
                continue;
            }
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push_str(&piece);
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn the_fast_paths_agree_with_the_reference(
            chars in proptest::collection::vec(
                proptest::sample::select(vec![
                    'a', 'B', 'z', '0', '1', 'I', 'l', '|', '"', '`', ' ', '\t', '\n', '.',
                    '\u{a0}', '\u{200b}', '\u{ad}', '\u{430}', 'ｇ', 'é', 'ß', '\u{600}',
                ]),
                0..60,
            )
        ) {
            let s: String = chars.into_iter().collect();
            let m = normalize(&s, &[]);
            proptest::prop_assert_eq!(&m.text, &reference(&s));
            // Every stretch of the normal form maps to whole characters of
            // the original.
            for (i, _) in m.text.char_indices() {
                let r = m.original(i..i + 1);
                proptest::prop_assert!(s.is_char_boundary(r.start) && s.is_char_boundary(r.end));
                proptest::prop_assert!(r.start < r.end && r.end <= s.len());
            }
        }
    }

    #[test]
    fn a_collapsed_space_maps_to_the_whole_run() {
        let s = "x \u{a0}\t y";
        let m = normalize(s, &[]);
        assert_eq!(m.text, "x y");
        assert_eq!(&s[m.original(1..2)], " \u{a0}\t ");
    }
}
