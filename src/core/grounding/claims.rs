//! Claims: where the answer's sentences begin and end, with the markers that
//! belong to each. Pure; no scoring.

use std::ops::Range;

use crate::core::citation::Citation;
use crate::core::terms::{lower_word_ends, opens_glued_sentence};

/// Splits `answer` into claim spans, written into `spans` (emptied first):
/// sentences end after `.`, `!`, `?` (or their full-width forms) followed by
/// whitespace, and at every newline; the markers (and spaces) right after a
/// sentence's end belong to it. A list item's number is not a claim. Lines
/// inside a code fence (and the fence lines) are not claims.
pub(super) fn claim_spans(
    answer: &str,
    citations: &[Citation],
    steps: &mut usize,
    spans: &mut Vec<Range<usize>>,
) {
    let b = answer.as_bytes();
    spans.clear();
    let mut in_fence = false;
    let mut cite = 0; // next citation not yet passed
    let mut line_start = 0;
    while line_start < b.len() {
        let line_end = memchr::memchr(b'\n', &b[line_start..]).map_or(b.len(), |p| line_start + p);
        *steps += line_end - line_start + 1;
        let line = &answer[line_start..line_end];
        if line.trim_start_matches([' ', '\t']).starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence {
            // A list item's number ("1. ", "12) ") is not a sentence of
            // its own (nor a claim about the number 1): the claim starts
            // after it.
            let item = list_number(&b[line_start..line_end]);
            let mut start = line_start + item;
            let mut i = start;
            // The next lead byte of a full-width end at or after `i` (the
            // line's end when none); found again once `i` passes it.
            let wide_from =
                |i: usize| memchr::memchr2(0xE3, 0xEF, &b[i..line_end]).map_or(line_end, |p| i + p);
            let mut wide = wide_from(i);
            while i < line_end {
                // Only `.`, `!`, `?` and the lead bytes of their full-width
                // forms can end a sentence: jump to them.
                if wide < i {
                    wide = wide_from(i);
                }
                match memchr::memchr3(b'.', b'!', b'?', &b[i..wide]) {
                    Some(p) => i += p,
                    None if wide < line_end => i = wide,
                    None => break,
                }
                let (end_len, is_end) = sentence_end(b, i, line_end);
                if !is_end {
                    i += 1;
                    continue;
                }
                let mut end = i + end_len;
                // Attach the markers that follow the sentence end.
                loop {
                    let mut j = end;
                    while j < line_end && (b[j] == b' ' || b[j] == b'\t') {
                        j += 1;
                    }
                    while cite < citations.len() && citations[cite].span.start < j {
                        cite += 1;
                    }
                    match citations.get(cite) {
                        Some(c) if c.span.start == j => {
                            end = c.span.end;
                            cite += 1;
                        }
                        _ => break,
                    }
                }
                push_span(answer, spans, start..end);
                start = end;
                i = end.max(i + 1);
            }
            push_span(answer, spans, start..line_end);
        }
        line_start = line_end + 1;
    }
}

/// Length of the list-item number that opens `line` (indent, one to three
/// digits, `.` or `)`, then a space or tab), or 0.
fn list_number(line: &[u8]) -> usize {
    let indent = line
        .iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    let digits = line[indent..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    let after = indent + digits;
    let item = (1..=3).contains(&digits)
        && matches!(line.get(after), Some(b'.' | b')'))
        && matches!(line.get(after + 1), Some(b' ' | b'\t'));
    if item { after + 1 } else { 0 }
}

/// Abbreviations (case-folded) whose period does not end a sentence:
/// titles, "St." in an address, months, "No." (unless a sentence starts
/// after it), "vs.".
const ABBREVIATIONS: &[&[u8]] = &[
    b"adm", b"apr", b"approx", b"aug", b"capt", b"cf", b"cmdr", b"co", b"col", b"corp", b"dec",
    b"dept", b"dr", b"est", b"feb", b"fig", b"ft", b"gen", b"gov", b"hon", b"jan", b"jr", b"jul",
    b"jun", b"lt", b"mar", b"mr", b"mrs", b"ms", b"mt", b"no", b"nos", b"nov", b"oct", b"pp",
    b"prof", b"rep", b"rev", b"sen", b"sep", b"sept", b"sgt", b"sr", b"st", b"univ", b"vol", b"vs",
];

/// Whether the word at `at..at + len` of `b` is "No." ("No. 21 on the
/// Billboard chart", "No.1", "Symphony No. 5", "the no. of shares"): the
/// number sign, which the sentence rule reads as an abbreviation, not a
/// negation. Claims and sources both drop it, so a chart position is
/// neither a contradiction nor a missing word. A "no." that ends its
/// sentence ("The board said no. The deal collapsed.") is a negation.
#[inline]
pub(super) fn is_number_sign(b: &[u8], at: usize, len: usize) -> bool {
    len == 2
        && b[at] | 0x20 == b'n'
        && b[at + 1] | 0x20 == b'o'
        && b.get(at + 2) == Some(&b'.')
        && !ends_sentence_after(b, at + 2)
}

/// Whether the text after the period at `i` of a "No." or "Nos." starts
/// another sentence: the text or its line ends there, or a space and a
/// capital letter follow. Whatever else follows (a number, "of", a
/// marker) is what the sign numbers.
fn ends_sentence_after(b: &[u8], i: usize) -> bool {
    match b.get(i + 1) {
        None | Some(b'\n' | b'\r') => true,
        Some(b' ') => b.get(i + 2).is_none_or(u8::is_ascii_uppercase),
        _ => false,
    }
}

/// Whether a sentence ends at `i`: terminal punctuation followed by
/// whitespace, a marker, a closing quote/bracket, or the end of the line;
/// or a period glued between two sentences ("12 Hour.Mount Panorama").
/// Not after an initial ("Ulysses S. Grant", "U.S. Senator", "(O.S.)",
/// "e.g.") or an abbreviation ("220 S. Main St. in"). The one rule for
/// claims and sources, so a claim copied from a source is cut where the
/// source is.
pub(super) fn sentence_end(b: &[u8], i: usize, line_end: usize) -> (usize, bool) {
    if b[i] == b'.' && i >= 1 {
        // The letters right before the period (at most 8: bounded work).
        let mut w = i;
        while w > 0 && i - w < 8 && b[w - 1].is_ascii_alphabetic() {
            w -= 1;
        }
        let word = &b[w..i];
        let before = if w > 0 { b[w - 1] } else { b' ' };
        // An initial ("S." of "Ulysses S. Grant"), not the last letter of
        // a contraction or a possessive ("won't.", "John's.").
        if word.len() == 1 && !before.is_ascii_alphanumeric() && !after_apostrophe(b, w) {
            return (0, false);
        }
        if (2..=6).contains(&word.len())
            && !before.is_ascii_alphanumeric()
            && before != b'.'
            && ABBREVIATIONS.iter().any(|a| a.eq_ignore_ascii_case(word))
            && (!(word.eq_ignore_ascii_case(b"no") || word.eq_ignore_ascii_case(b"nos"))
                || !ends_sentence_after(b, i))
        {
            return (0, false);
        }
        // Glued: a lower-case word, a number or a closing quote, the
        // period, a capitalised word ("Hour.Mount", "Hawaii.Aulani",
        // "1987.Hot"; not "D.C", "Node.js", "ASP.NET", nor a host name,
        // "www.Geniewards.ca").
        if glued_after(b, i) && opens_glued_sentence(&b[..line_end], i) {
            return (1, true);
        }
    }
    let len = match b[i] {
        b'.' | b'!' | b'?' => 1,
        // 。！？ (U+3002, U+FF01, U+FF1F)
        0xE3 if b[i..line_end].starts_with("。".as_bytes()) => 3,
        0xEF if b[i..line_end].starts_with("！".as_bytes())
            || b[i..line_end].starts_with("？".as_bytes()) =>
        {
            3
        }
        _ => return (0, false),
    };
    let mut j = i + len;
    while j < line_end && matches!(b[j], b'"' | b'\'' | b')') {
        j += 1;
    }
    let next = b.get(j).copied();
    let ends = j >= line_end
        || len == 3
        || matches!(next, Some(b' ' | b'\t' | b'\r' | b'\n'))
        || (next == Some(b'[') && b.get(j + 1) == Some(&b'^'));
    (j - i, ends)
}

/// Whether an apostrophe, straight or curly, ends `b[..at]` after a letter.
fn after_apostrophe(b: &[u8], at: usize) -> bool {
    let quote = if b[..at].ends_with(b"'") {
        1
    } else if b[..at].ends_with("\u{2019}".as_bytes()) {
        3
    } else {
        return false;
    };
    at > quote && b[at - quote - 1].is_ascii_alphabetic()
}

/// Whether the text before a period at `i` can end a sentence glued to the
/// next: a lower-case word of two letters or more ("Hour."), a decade ("in
/// the 1990s."), as the word scanner parts them ([`lower_word_ends`]); a
/// number of two digits or more ("in 1987."); or a closing quote or bracket
/// ("\"Babe\".", "(born 1950).").
fn glued_after(b: &[u8], i: usize) -> bool {
    match b[i - 1] {
        b'a'..=b'z' => lower_word_ends(b, i),
        b'0'..=b'9' => i >= 2 && b[i - 2].is_ascii_digit(),
        b')' | b'"' => true,
        _ => false,
    }
}

/// Whether a sentence ends in `b[from..to]` (the bytes between two words of
/// a source): at a newline, or where [`sentence_end`] says so.
#[inline(always)]
pub(super) fn ends_between(b: &[u8], from: usize, to: usize) -> bool {
    // Most words are one space apart.
    if to == from + 1 && b[from] == b' ' {
        return false;
    }
    ends_in(b, from, to)
}

/// [`ends_between`] past its one-space test. Out of the source reader's
/// loop: most words are one space apart.
#[inline(never)]
fn ends_in(b: &[u8], from: usize, to: usize) -> bool {
    first_end(b, from, to).is_some()
}

/// The first sentence end of a source in `b[from..to]`: where it is, and
/// the length of its mark ([`sentence_end`]; 0 for a newline).
pub(super) fn first_end(b: &[u8], from: usize, to: usize) -> Option<(usize, usize)> {
    (from..to).find_map(|i| match b[i] {
        b'\n' => Some((i, 0)),
        b'.' | b'!' | b'?' | 0xE3 | 0xEF => {
            let (len, ends) = sentence_end(b, i, b.len());
            ends.then_some((i, len))
        }
        _ => None,
    })
}

pub(super) fn push_span(answer: &str, spans: &mut Vec<Range<usize>>, r: Range<usize>) {
    // Trim surrounding whitespace; a span with no word character is not a claim.
    let s = &answer[r.clone()];
    let lead = s.len() - s.trim_start().len();
    let trail = s.len() - s.trim_end().len();
    let r = r.start + lead..r.end - trail;
    if r.start < r.end && answer[r.clone()].chars().any(char::is_alphanumeric) {
        spans.push(r);
    }
}
