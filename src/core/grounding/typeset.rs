//! Text as the grounding readers see it. Typeset and scraped text writes
//! spaces other than the ASCII one ("$5\u{a0}billion", "42\u{a0}km"),
//! invisible characters inside words ("profes\u{ad}sion", a soft hyphen),
//! narrow or no-break spaces between groups of digits ("1\u{202f}200",
//! "12\u{a0}000") and the degree sign where a writer may spell the words
//! ("30\u{b0}C", "30 degrees Celsius"). The readers part words and join a
//! number with its scale, unit or date at an ASCII space, and read words,
//! not signs, so such text would read as other words and other numbers
//! than the same text typed plainly. Here each space of that kind becomes
//! an ASCII space, each invisible character nothing, a space between digit
//! groups the thousands separator it stands for ("1,200"), and a degree
//! sign its words ("30 degrees Celsius"), with a map from the rewritten
//! text's offsets back to the original's.
//!
//! Pure; it only rewrites text. It must not judge a word: what the words
//! mean is for the readers downstream.

use std::ops::Range;

/// A text rewritten for reading, with the offsets to map its positions back.
pub(super) struct Plain {
    pub text: String,
    /// Each rewrite, in order: where it stands in `text` and where in the
    /// original. Between two rewrites the bytes are the original's, one
    /// for one.
    rewrites: Vec<(Range<usize>, Range<usize>)>,
}

impl Plain {
    /// The original offset of `at`, an offset of [`Plain::text`] on a
    /// character boundary; on the original's character boundaries too (a
    /// place inside a rewrite's words maps to the rewritten text's end).
    pub fn original(&self, at: usize) -> usize {
        carry(&self.rewrites, at, |(new, old)| (new.clone(), old.clone()))
    }

    /// The offset of [`Plain::text`] that `at`, an original offset on a
    /// character boundary, stands at.
    pub fn plain(&self, at: usize) -> usize {
        carry(&self.rewrites, at, |(new, old)| (old.clone(), new.clone()))
    }

    /// [`Plain::original`] of both ends of `range`.
    pub fn original_range(&self, range: &Range<usize>) -> Range<usize> {
        self.original(range.start)..self.original(range.end)
    }
}

/// `at` carried from one side of the rewrites to the other, `side` giving
/// a rewrite's ranges as (this side, the other side): past the last
/// rewrite that starts at or before it, one for one; at a rewrite's start,
/// to the other's start; inside one, to the other's end.
fn carry(
    rewrites: &[(Range<usize>, Range<usize>)],
    at: usize,
    side: impl Fn(&(Range<usize>, Range<usize>)) -> (Range<usize>, Range<usize>),
) -> usize {
    let i = rewrites.partition_point(|r| side(r).0.start <= at);
    let Some(r) = i.checked_sub(1).map(|i| side(&rewrites[i])) else {
        return at;
    };
    let (from, to) = r;
    if at >= from.end {
        to.end + (at - from.end)
    } else if at == from.start {
        to.start
    } else {
        to.end
    }
}

/// What a character becomes for the readers, when not itself.
enum Rewrite {
    /// A space of typeset text: an ASCII space, or a thousands separator
    /// between digit groups when it may be one.
    Space { may_group: bool },
    /// An invisible character: nothing.
    Drop,
    /// A degree sign ("°", and "°C" or "°F" when its letter ends a word),
    /// or a sign of degrees with its scale ("℃", "℉"): its words.
    Degrees(Option<Scale>),
}

#[derive(Clone, Copy)]
enum Scale {
    Celsius,
    Fahrenheit,
}

fn rewrite_of(c: char) -> Option<Rewrite> {
    match c {
        // No-break, figure, thin and narrow no-break spaces: the ones
        // typesetting puts between digit groups.
        '\u{a0}' | '\u{2007}' | '\u{2009}' | '\u{202f}' => Some(Rewrite::Space { may_group: true }),
        // The other fixed-width spaces (en, em, hair, …) and the medium
        // mathematical space.
        '\u{2000}'..='\u{200a}' | '\u{205f}' => Some(Rewrite::Space { may_group: false }),
        // Soft hyphen, word joiner, zero-width no-break space (byte order
        // mark): nothing a reader sees.
        '\u{ad}' | '\u{2060}' | '\u{feff}' => Some(Rewrite::Drop),
        '\u{b0}' => Some(Rewrite::Degrees(None)),
        '\u{2103}' => Some(Rewrite::Degrees(Some(Scale::Celsius))),
        '\u{2109}' => Some(Rewrite::Degrees(Some(Scale::Fahrenheit))),
        _ => None,
    }
}

/// Whether `text` holds a character [`plain`] rewrites. Cheap on text
/// without one: ASCII text is passed whole, other text is searched for the
/// lead bytes of those characters only.
pub(super) fn needed(text: &str) -> bool {
    if text.is_ascii() {
        return false;
    }
    let bytes = text.as_bytes();
    memchr::memchr3_iter(0xc2, 0xe2, 0xef, bytes).any(|at| {
        let next = |k: usize| bytes.get(at + k).copied().unwrap_or(0);
        match bytes[at] {
            0xc2 => matches!(next(1), 0xa0 | 0xad | 0xb0),
            0xe2 => match next(1) {
                0x80 => matches!(next(2), 0x80..=0x8a | 0xaf),
                0x81 => matches!(next(2), 0x9f | 0xa0),
                0x84 => matches!(next(2), 0x83 | 0x89),
                _ => false,
            },
            _ => next(1) == 0xbb && next(2) == 0xbf,
        }
    })
}

/// `text` as the readers see it (see the module's doc).
pub(super) fn plain(text: &str) -> Plain {
    let mut out = Plain {
        text: String::with_capacity(text.len()),
        rewrites: Vec::new(),
    };
    let mut copied = 0;
    // The end of the last space read as a group separator, and which space.
    let mut last_group: Option<(usize, char)> = None;
    for (at, c) in text.char_indices() {
        if at < copied {
            // The scale's letter of a degree sign, read with it.
            continue;
        }
        let Some(rewrite) = rewrite_of(c) else {
            continue;
        };
        out.text.push_str(&text[copied..at]);
        let from = out.text.len();
        let mut end = at + c.len_utf8();
        match rewrite {
            Rewrite::Space { may_group } => {
                let chained = last_group == Some((at.wrapping_sub(3), c));
                if may_group && separates_groups(text, at, end, chained) {
                    out.text.push(',');
                    last_group = Some((end, c));
                } else {
                    out.text.push(' ');
                }
            }
            Rewrite::Drop => {}
            Rewrite::Degrees(mut scale) => {
                let rest = &text.as_bytes()[end..];
                let letter_ends = rest.get(1).is_none_or(|b| !b.is_ascii_alphabetic());
                if scale.is_none() && letter_ends {
                    scale = match rest.first() {
                        Some(b'C') => Some(Scale::Celsius),
                        Some(b'F') => Some(Scale::Fahrenheit),
                        _ => None,
                    };
                    end += usize::from(scale.is_some());
                }
                if !out.text.is_empty() && !out.text.ends_with(' ') {
                    out.text.push(' ');
                }
                out.text.push_str(match scale {
                    Some(Scale::Celsius) => "degrees Celsius",
                    Some(Scale::Fahrenheit) => "degrees Fahrenheit",
                    None => "degrees",
                });
                if text[end..].starts_with(char::is_alphanumeric) {
                    out.text.push(' ');
                }
            }
        }
        copied = end;
        out.rewrites.push((from..out.text.len(), at..end));
    }
    out.text.push_str(&text[copied..]);
    out
}

/// Whether the space at `at..end` parts two groups of a number's digits:
/// exactly three digits after it, with no decimal comma after those ("1
/// 200,5" is another convention's number); before it, three digits after
/// a separator of the same kind (`chained`), or one to three digits with
/// no digit, point, comma or other space before them. "in 2019 200
/// people" holds no group of four; "1,200 000" mixes two conventions.
fn separates_groups(text: &str, at: usize, end: usize, chained: bool) -> bool {
    let bytes = text.as_bytes();
    let after = bytes[end..]
        .iter()
        .take(4)
        .take_while(|b| b.is_ascii_digit())
        .count();
    let rest = &bytes[end + after..];
    let decimal_comma = rest.first() == Some(&b',') && rest.get(1).is_some_and(u8::is_ascii_digit);
    if after != 3 || decimal_comma {
        return false;
    }
    let before = bytes[..at]
        .iter()
        .rev()
        .take(4)
        .take_while(|b| b.is_ascii_digit())
        .count();
    if chained {
        return before == 3;
    }
    let lead = &text[..at - before];
    (1..=3).contains(&before)
        && !lead.ends_with(|p: char| {
            matches!(p, '0'..='9' | '.' | ',')
                || matches!(rewrite_of(p), Some(Rewrite::Space { .. }))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> String {
        assert_eq!(needed(text), text != plain(text).text, "{text:?}");
        plain(text).text
    }

    #[test]
    fn typeset_spaces_read_as_spaces_and_invisible_characters_as_nothing() {
        assert_eq!(read("$5\u{a0}billion"), "$5 billion");
        assert_eq!(read("42\u{2009}km\u{2003}long"), "42 km long");
        assert_eq!(read("profes\u{ad}sion"), "profession");
        assert_eq!(read("\u{feff}Rates rose\u{2060}."), "Rates rose.");
        // Curly quotes, dashes, accents and the zero-width space stay.
        let kept = "\u{201c}Z\u{fc}rich\u{201d} \u{2014} caf\u{e9}\u{200b}s";
        assert_eq!(read(kept), kept);
        assert!(!needed("plain ASCII text"));
    }

    #[test]
    fn a_degree_sign_reads_as_its_words() {
        assert_eq!(read("30\u{b0}C in Paris"), "30 degrees Celsius in Paris");
        assert_eq!(read("30 \u{b0}F."), "30 degrees Fahrenheit.");
        assert_eq!(
            read("30\u{2103}, 86\u{2109}"),
            "30 degrees Celsius, 86 degrees Fahrenheit"
        );
        assert_eq!(read("an angle of 45\u{b0}"), "an angle of 45 degrees");
        assert_eq!(read("45\u{b0}N"), "45 degrees N");
        // A letter that opens a word is no scale.
        assert_eq!(read("45\u{b0}Celsius"), "45 degrees Celsius");
        assert_eq!(read("\u{b0}Cold"), "degrees Cold");
    }

    #[test]
    fn a_space_between_digit_groups_is_a_thousands_separator() {
        assert_eq!(read("1\u{202f}200 staff"), "1,200 staff");
        assert_eq!(read("12\u{a0}000"), "12,000");
        assert_eq!(
            read("\u{20ac}1\u{2009}234\u{2009}567."),
            "\u{20ac}1,234,567."
        );
        assert_eq!(read("1\u{a0}200.50"), "1,200.50");
        // Not groups: a year before a count, a group of two or four, a
        // decimal comma after, a mixed separator, a number already grouped.
        assert_eq!(read("in 2019\u{a0}200 people"), "in 2019 200 people");
        assert_eq!(read("1\u{a0}20 and 1\u{a0}2000"), "1 20 and 1 2000");
        assert_eq!(read("1\u{a0}200,5"), "1 200,5");
        assert_eq!(read("1,200\u{a0}000"), "1,200 000");
        assert_eq!(read("12\u{a0}345\u{202f}678"), "12,345 678");
        // Spaces that typesetting does not put between groups.
        assert_eq!(read("1\u{2003}200"), "1 200");
    }

    #[test]
    fn offsets_map_back_to_the_original() {
        let text = "A\u{a0}b\u{ad}c 1\u{202f}200 d";
        let r = plain(text);
        assert_eq!(r.text, "A bc 1,200 d");
        for (new, old) in [
            (0, 0),
            (1, 1),
            (2, 3),
            (3, 6),
            (4, 7),
            (6, 9),
            (7, 12),
            (12, 17),
        ] {
            assert_eq!(r.original(new), old, "{new}");
        }
        for (old, new) in [(0, 0), (3, 2), (7, 4), (12, 7), (17, 12)] {
            assert_eq!(r.plain(old), new, "{old}");
        }
        let same = plain("no rewrites");
        assert_eq!((same.original(4), same.plain(4)), (4, 4));
        // A rewrite into words: its start maps to the sign's start, a place
        // inside its words to the sign's end.
        let r = plain("It was 30\u{b0}C.");
        assert_eq!(r.text, "It was 30 degrees Celsius.");
        for (new, old) in [(9, 9), (10, 12), (20, 12), (25, 12), (26, 13)] {
            assert_eq!(r.original(new), old, "{new}");
        }
        assert_eq!((r.plain(9), r.plain(12)), (9, 25));
    }
}
