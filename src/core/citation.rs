//! The `[^N]` citation-marker scanner.
//!
//! Pure and total: any `&str` is accepted, nothing panics, and the scan is a
//! single linear pass. It must not allocate per byte or look further than the
//! 16-byte marker window when deciding what a `[^` starts, except along a
//! digit-only body, which is read to its end (a digit run cannot hide another
//! `[^`, so the scan stays linear).

use std::ops::Range;

/// A marker that parsed as a positive integer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Citation {
    /// N as written in `[^N]` (1-based).
    pub marker: u32,
    /// Byte range of the whole marker, `[^` through `]`.
    pub span: Range<usize>,
}

impl Citation {
    /// Index into the answer's `sources`, `N - 1`.
    pub fn source_index(&self) -> usize {
        self.marker as usize - 1
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningKind {
    Malformed,
    OutOfRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseWarning {
    pub kind: WarningKind,
    pub detail: String,
    pub span: Range<usize>,
}

/// Citations and warnings, each in order of appearance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed {
    pub citations: Vec<Citation>,
    pub warnings: Vec<ParseWarning>,
}

/// Longest marker body (between `[^` and `]`) that is still recognised; a
/// longer run is plain text. Bounds the look-ahead, keeping the scan linear.
pub const MAX_BODY_BYTES: usize = 16;

/// Digit runs longer than this are quoted abbreviated in findings.
const LONG_DIGITS: usize = 20;

/// Scans `text` for markers; `num_sources` decides which are out of range.
pub fn parse(text: &str, num_sources: usize) -> Parsed {
    parse_counting(text, num_sources, &mut 0)
}

/// [`parse`], counting every byte inspected into `steps`, so tests can check
/// the scan is linear by counting instead of timing.
fn parse_counting(text: &str, num_sources: usize, steps: &mut usize) -> Parsed {
    let bytes = text.as_bytes();
    let mut out = Parsed::default();
    let mut i = 0;
    let mut line_start = true;
    let mut in_fence = false;
    while i < bytes.len() {
        *steps += 1;
        if line_start {
            line_start = false;
            let mut j = i;
            while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
                *steps += 1;
                j += 1;
            }
            if bytes[j..].starts_with(b"```") {
                // The fence line (with its info string) is skipped whole.
                in_fence = !in_fence;
                i = skip_line(bytes, j, steps);
                line_start = true;
                continue;
            }
        }
        if in_fence {
            i = skip_line(bytes, i, steps);
            line_start = true;
            continue;
        }
        // Jump to the next byte that can matter; everything between is text.
        let Some(p) = memchr::memchr2(b'[', b'\n', &bytes[i..]) else {
            *steps += bytes.len() - i;
            break;
        };
        *steps += p;
        i += p;
        if bytes[i] == b'\n' {
            line_start = true;
            i += 1;
        } else if bytes.get(i + 1) == Some(&b'^') && !escaped(bytes, i) {
            i = scan_marker(text, i, num_sources, &mut out, steps);
        } else {
            i += 1;
        }
    }
    out
}

/// Index just past the next newline (or the end).
fn skip_line(bytes: &[u8], from: usize, steps: &mut usize) -> usize {
    match memchr::memchr(b'\n', &bytes[from..]) {
        Some(p) => {
            *steps += p + 1;
            from + p + 1
        }
        None => {
            *steps += bytes.len() - from;
            bytes.len()
        }
    }
}

/// A `[` is escaped by an odd run of backslashes right before it.
fn escaped(bytes: &[u8], at: usize) -> bool {
    let run = bytes[..at]
        .iter()
        .rev()
        .take_while(|&&b| b == b'\\')
        .count();
    run % 2 == 1
}

/// Scans a candidate marker starting at `start` (`[^`); returns where to resume.
/// Looks at most `MAX_BODY_BYTES + 1` bytes past `[^`, except along a run of
/// digits, which is read to its end.
fn scan_marker(
    text: &str,
    start: usize,
    num_sources: usize,
    out: &mut Parsed,
    steps: &mut usize,
) -> usize {
    let bytes = text.as_bytes();
    let body_start = start + 2;
    let window_end = (body_start + MAX_BODY_BYTES + 1).min(bytes.len());
    let mut close = None;
    for (k, &b) in bytes[body_start..window_end].iter().enumerate() {
        *steps += 1;
        match b {
            b']' => {
                close = Some(body_start + k);
                break;
            }
            b'\n' => break,
            _ => {}
        }
    }
    let Some(close) = close else {
        // A digit-only body is read to its `]` with no window: a runaway
        // number is reported (malformed), not hidden as text. Still linear:
        // a digit run cannot contain another `[^`, so resuming after it
        // skips nothing. (A run that fits the window closed or failed above.)
        if window_end - body_start > MAX_BODY_BYTES
            && bytes[body_start..window_end].iter().all(u8::is_ascii_digit)
        {
            let digits = bytes[window_end..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            *steps += digits;
            let digits_end = window_end + digits;
            if bytes.get(digits_end) == Some(&b']') {
                return close_marker(text, start, digits_end, num_sources, out);
            }
            return digits_end;
        }
        // Not a marker: plain text. Resume right after `[` so a later `[^`
        // inside the window is still seen.
        return start + 1;
    };
    close_marker(text, start, close, num_sources, out)
}

/// Records the marker `[^` at `start` closed by the `]` at `close`; returns
/// where to resume (just past the `]`).
fn close_marker(
    text: &str,
    start: usize,
    close: usize,
    num_sources: usize,
    out: &mut Parsed,
) -> usize {
    let body_start = start + 2;
    let span = start..close + 1;
    // `]` and `[` are ASCII, so both ends are char boundaries.
    let body = &text[body_start..close];
    match parse_number(body) {
        Some(marker) => {
            if marker as usize > num_sources {
                out.warnings.push(ParseWarning {
                    kind: WarningKind::OutOfRange,
                    detail: format!(
                        "citation [^{marker}] refers to source {marker}, but only {num_sources} source{} exist{}",
                        if num_sources == 1 { "" } else { "s" },
                        if num_sources == 1 { "s" } else { "" },
                    ),
                    span: span.clone(),
                });
            }
            out.citations.push(Citation { marker, span });
        }
        None => {
            let detail = if body.is_empty() {
                "empty citation marker [^]".to_string()
            } else if body.len() > LONG_DIGITS {
                // Only a digit run can be this long; quote its start, so the
                // finding stays small whatever the run's length.
                format!(
                    "malformed citation marker [^{}…]: a {}-digit number is above the 32-bit maximum 4294967295",
                    &body[..LONG_DIGITS],
                    body.len()
                )
            } else {
                format!(
                    "malformed citation marker [^{body}]: {body:?} is not a positive integer without leading zeros that fits in 32 bits"
                )
            };
            out.warnings.push(ParseWarning {
                kind: WarningKind::Malformed,
                detail,
                span: span.clone(),
            });
        }
    }
    close + 1
}

/// N >= 1, ASCII digits only, no leading zero, fits in u32.
fn parse_number(body: &str) -> Option<u32> {
    let b = body.as_bytes();
    if b.is_empty() || b[0] == b'0' || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    body.parse::<u32>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn markers(p: &Parsed) -> Vec<u32> {
        p.citations.iter().map(|c| c.marker).collect()
    }

    fn kinds(p: &Parsed) -> Vec<WarningKind> {
        p.warnings.iter().map(|w| w.kind).collect()
    }

    use WarningKind::{Malformed as M, OutOfRange as O};

    /// The marker grammar's reference vectors: (text, sources, markers, warning kinds).
    const VECTORS: &[(&str, usize, &[u32], &[WarningKind])] = &[
        ("Churn was driven by pricing[^1].", 1, &[1], &[]),
        ("see [^42] and [^1234]", 1300, &[42, 1234], &[]),
        ("a[^1] b[^1] c[^2]", 2, &[1, 1, 2], &[]),
        ("a[^] b", 0, &[], &[M]),
        ("see [^abc] for context", 0, &[], &[M]),
        ("nope[^-1]nope", 0, &[], &[M]),
        ("nope[^01]nope", 5, &[], &[M]),
        ("nope[^0]nope", 5, &[], &[M]),
        ("see [^4294967295]", 1, &[4294967295], &[O]),
        ("see [^9999999999999]", 0, &[], &[M]),
        ("see [^12345678901234567890]", 0, &[], &[M]),
        ("literal \\[^1\\] in text", 1, &[], &[]),
        ("path\\\\[^1] continues", 1, &[1], &[]),
        (
            "before[^1]\n```\nthe code uses [^2] internally\n```\nafter[^3]",
            3,
            &[1, 3],
            &[],
        ),
        (
            "head[^1]\n```rust\nlet x = [^99];\n```\ntail[^2]",
            2,
            &[1, 2],
            &[],
        ),
        ("感谢[^1]谢谢", 1, &[1], &[]),
        ("see [^5] and [^1]", 2, &[5, 1], &[O]),
        ("", 0, &[], &[]),
        ("see [^12\n] here", 0, &[], &[]),
        ("[^1][^2][^3]", 3, &[1, 2, 3], &[]),
    ];

    #[test]
    fn spec_vectors() {
        for (text, n, want_markers, want_kinds) in VECTORS {
            let p = parse(text, *n);
            assert_eq!(markers(&p), *want_markers, "markers of {text:?}");
            assert_eq!(kinds(&p), *want_kinds, "warnings of {text:?}");
        }
    }

    #[test]
    fn digit_bodies_have_no_window() {
        // Read to the `]` whatever the length; above u32::MAX is malformed.
        let long = format!("x [^{}] y[^1]", "7".repeat(5000));
        let p = parse(&long, 1);
        assert_eq!(kinds(&p), vec![M]);
        assert_eq!(markers(&p), vec![1]);
        assert!(p.warnings[0].detail.len() < 200, "{}", p.warnings[0].detail);
        assert!(p.warnings[0].detail.contains("5000-digit"));
        assert_eq!(&long[p.warnings[0].span.clone()], &long[2..5005]);
        // 17 digits closed: malformed (the window applies to non-digit bodies only).
        assert_eq!(kinds(&parse("[^12345678901234567]", 0)), vec![M]);
        // A long digit run that does not close is text; so is one cut by a newline.
        assert!(
            parse(&format!("[^{}", "1".repeat(40)), 0)
                .warnings
                .is_empty()
        );
        assert!(
            parse(&format!("[^{}\n]", "1".repeat(40)), 0)
                .warnings
                .is_empty()
        );
        assert!(
            parse(&format!("[^{}a]", "1".repeat(40)), 0)
                .warnings
                .is_empty()
        );
        // A short digit prefix followed by a non-digit is the usual window rule.
        assert_eq!(kinds(&parse("[^12a]", 0)), vec![M]);
    }

    #[test]
    fn truncated_inputs_do_not_panic_and_are_text() {
        for text in ["[", "[^", "[^1", "[^123", "[^abc", "[^\n1]", "[^99"] {
            let p = parse(text, 0);
            assert!(p.citations.is_empty() && p.warnings.is_empty(), "{text:?}");
        }
    }

    #[test]
    fn spans_cover_the_whole_marker_next_to_multibyte_text() {
        let text = "感谢[^1]谢谢";
        let p = parse(text, 1);
        assert_eq!(&text[p.citations[0].span.clone()], "[^1]");
        let text = "Churn was driven by pricing[^1].";
        assert_eq!(&text[parse(text, 1).citations[0].span.clone()], "[^1]");
        assert_eq!(parse(text, 1).citations[0].source_index(), 0);
    }

    #[test]
    fn warning_details() {
        let p = parse("see [^abc] and [^]", 0);
        assert!(
            p.warnings[0].detail.contains("\"abc\""),
            "{}",
            p.warnings[0].detail
        );
        assert_eq!(p.warnings[1].detail, "empty citation marker [^]");
        let p = parse("see [^5] and [^1]", 2);
        assert_eq!(
            p.warnings[0].detail,
            "citation [^5] refers to source 5, but only 2 sources exist"
        );
        let p = parse("[^2]", 1);
        assert_eq!(
            p.warnings[0].detail,
            "citation [^2] refers to source 2, but only 1 source exists"
        );
    }

    #[test]
    fn window_and_newline_rules() {
        // A body of exactly 16 bytes is still a (malformed) marker; 17 is text.
        assert_eq!(kinds(&parse(&format!("[^{}]", "a".repeat(16)), 0)), vec![M]);
        assert!(
            parse(&format!("[^{}]", "a".repeat(17)), 0)
                .warnings
                .is_empty()
        );
        // The scan resumes after the `]` of a malformed marker...
        assert_eq!(markers(&parse("[^x][^1]", 1)), vec![1]);
        // A `]` within the window closes the first `[^`, even across another opener...
        let p = parse("[^ab [^1]", 1);
        assert!(p.citations.is_empty());
        assert_eq!(kinds(&p), vec![M]);
        // ...and an unclosed `[^` is text; the scan resumes right after its `[`.
        assert_eq!(markers(&parse("[^abcdefghijklmnopq [^1]", 1)), vec![1]);
        assert_eq!(markers(&parse("[^abc\n[^1]", 1)), vec![1]);
        // Fences may be indented; inline backticks are not fences.
        assert_eq!(markers(&parse("  ```\n[^1]\n  ```\n[^2]", 2)), vec![2]);
        assert_eq!(markers(&parse("`x` [^1]", 1)), vec![1]);
        // An unterminated fence hides the rest.
        assert_eq!(markers(&parse("[^1]\n```\n[^2]", 2)), vec![1]);
        // Odd and even backslash runs.
        assert!(parse("\\\\\\[^1]", 1).citations.is_empty());
        assert_eq!(markers(&parse("\\\\\\\\[^1]", 1)), vec![1]);
    }

    /// Reference oracle for marker-rich inputs without fences or escapes: a
    /// regex-free restatement of the grammar.
    fn oracle(text: &str, n: usize) -> (Vec<u32>, usize) {
        let mut cites = Vec::new();
        let mut warns = 0;
        let mut rest = text;
        let mut offset = 0;
        while let Some(p) = rest.find("[^") {
            let after = &rest[p + 2..];
            let run = after.bytes().take_while(u8::is_ascii_digit).count();
            if run > MAX_BODY_BYTES {
                if after.as_bytes().get(run) == Some(&b']') {
                    let m = parse_number(&after[..run]);
                    warns += 1;
                    cites.extend(m);
                    offset += p + 2 + run + 1;
                } else {
                    offset += p + 1;
                }
                rest = &text[offset..];
                continue;
            }
            let window = &after.as_bytes()[..after.len().min(MAX_BODY_BYTES + 1)];
            let close = window
                .iter()
                .position(|&b| b == b']')
                .filter(|c| !window[..*c].contains(&b'\n'));
            match close {
                Some(c) => {
                    let body = &after[..c];
                    match parse_number(body) {
                        Some(m) => {
                            cites.push(m);
                            if m as usize > n {
                                warns += 1;
                            }
                        }
                        None => warns += 1,
                    }
                    let consumed = p + 2 + c + 1;
                    offset += consumed;
                    rest = &text[offset..];
                }
                None => {
                    offset += p + 1;
                    rest = &text[offset..];
                }
            }
        }
        (cites, warns)
    }

    fn marker_soup() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("[^".to_string()),
            Just("]".to_string()),
            Just("[".to_string()),
            Just("^".to_string()),
            Just("\n".to_string()),
            Just("0".to_string()),
            (1u64..20_000_000_000).prop_map(|n| n.to_string()),
            "[a-z ]{0,6}",
            Just("é".to_string()),
            Just("感".to_string()),
        ];
        prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_strings(s in any::<String>(), n in 0usize..10) {
            let _ = parse(&s, n);
        }

        #[test]
        fn never_panics_on_arbitrary_bytes(b in prop::collection::vec(any::<u8>(), 0..512), n in 0usize..10) {
            let _ = parse(&String::from_utf8_lossy(&b), n);
        }

        #[test]
        fn spans_always_slice_to_a_marker(s in marker_soup(), n in 0usize..10) {
            let p = parse(&s, n);
            for span in p.citations.iter().map(|c| &c.span).chain(p.warnings.iter().map(|w| &w.span)) {
                let m = &s[span.clone()];
                prop_assert!(m.starts_with("[^") && m.ends_with(']'), "{:?}", m);
            }
            for c in &p.citations {
                prop_assert_eq!(&s[c.span.clone()], format!("[^{}]", c.marker));
            }
        }

        #[test]
        fn agrees_with_the_oracle(s in marker_soup(), n in 0usize..10) {
            let p = parse(&s, n);
            let (cites, warns) = oracle(&s, n);
            prop_assert_eq!(markers(&p), cites);
            prop_assert_eq!(p.warnings.len(), warns);
        }

        /// Linearity, by counting inspected bytes (never by timing): each
        /// `[^` looks at most MAX_BODY_BYTES + 1 bytes ahead, so the work is
        /// at most (MAX_BODY_BYTES + 3) per input byte, on any input,
        /// including adversarial runs of unclosed openers.
        #[test]
        fn scan_work_is_linear(s in marker_soup(), k in 1usize..500) {
            for text in [
                s.clone(),
                "[^".repeat(k),
                format!("[^{}", "1".repeat(15)).repeat(k),
                format!("[^{}", "1".repeat(k)).repeat(k),
                format!("[^{}]", "9".repeat(k)).repeat(k),
                format!("[^{}\n", "1".repeat(40)).repeat(k),
                s.repeat(k.min(20)),
            ] {
                let mut steps = 0;
                let _ = parse_counting(&text, 3, &mut steps);
                prop_assert!(steps <= (MAX_BODY_BYTES + 3) * text.len() + 1, "{} steps for {} bytes", steps, text.len());
            }
            prop_assert_eq!(parse(&"[^]".repeat(k), 1).warnings.len(), k);
        }
    }
}
