//! Text that groundgate did not write itself (a record's request id, answer
//! or field value, a file or topic name, a trail's chain names, an error
//! that quotes its input) made safe to show on a terminal, in a table cell
//! or in one line of a text log.
//!
//! The rule, applied here and nowhere else: every control character
//! (Unicode category Cc: C0, DEL, C1), every format character (Cf: bidi
//! overrides and isolates, zero-width characters, the soft hyphen, the
//! byte-order mark, tag characters) and the line and paragraph separators
//! (U+2028, U+2029) are written as escapes, `\t`, `\n` and `\r` by their
//! letter and the rest as `\u{…}` with the code point in lowercase hex.
//! Everything else is kept, so ordinary text in any script reads as it was
//! written. A terminal then shows such a character instead of obeying it:
//! no escape sequence clears the screen, moves the cursor, sets a
//! hyperlink or the clipboard, no `\r` or newline overwrites a line or
//! starts a fake one, and no bidi override reorders what follows.
//!
//! Backslashes are kept as they are, so text that is already escaped (a
//! Rust `{:?}` quote in an error message) is not escaped twice.
//!
//! JSON written for a person or a program ([`to_json`]) follows the same
//! rule inside its strings, with JSON's own `\uXXXX` escapes: the value a
//! parser reads is unchanged.

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::io;

use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// Whether `c` is shown as an escape rather than written to a terminal.
pub fn is_hazard(c: char) -> bool {
    // ASCII printable characters are by far the most common: no table look-up.
    if (' '..='~').contains(&c) {
        return false;
    }
    matches!(
        c.general_category(),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
    )
}

/// `text` with every character of [`is_hazard`] escaped; borrowed when there
/// is none.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_where(text, is_hazard)
}

/// `text` escaped line by line: the newlines stay, so a message of several
/// lines (a list of configuration problems) still reads as lines, while a
/// carriage return or an escape sequence inside a line is shown.
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| c != '\n' && is_hazard(c))
}

/// `text` with the characters `shown` picks escaped; borrowed when there is
/// none.
fn escape_where(text: &str, shown: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&shown) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !shown(c) => out.push(c),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// Shows its text escaped by [`escape`] wherever it is formatted with `{}`.
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&escape(self.0))
    }
}

/// `value` as JSON, indented when `pretty`: serde_json's encoding, with the
/// characters of [`is_hazard`] that JSON leaves raw (DEL, C1 controls,
/// format characters, U+2028, U+2029) written as `\uXXXX` escapes too. It
/// parses to the same value.
pub fn to_json<T: serde::Serialize + ?Sized>(
    value: &T,
    pretty: bool,
) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(256);
    if pretty {
        let mut ser = serde_json::Serializer::with_formatter(
            &mut out,
            Visible(serde_json::ser::PrettyFormatter::new()),
        );
        value.serialize(&mut ser)?;
    } else {
        let mut ser = serde_json::Serializer::with_formatter(
            &mut out,
            Visible(serde_json::ser::CompactFormatter),
        );
        value.serialize(&mut ser)?;
    }
    // serde_json writes UTF-8 only, and every escape added here is ASCII.
    String::from_utf8(out).map_err(|e| serde_json::Error::io(io::Error::other(e)))
}

/// Formatter methods that hand their call to the wrapped formatter, with
/// their `bool` argument when named in parentheses.
macro_rules! delegate {
    ($($name:ident $(($arg:ident))?),* $(,)?) => {
        $(
            fn $name<W: io::Write + ?Sized>(&mut self, w: &mut W $(, $arg: bool)?) -> io::Result<()> {
                self.0.$name(w $(, $arg)?)
            }
        )*
    };
}

/// A serde_json formatter that escapes the characters of [`is_hazard`] inside
/// strings and otherwise formats as the formatter it wraps.
struct Visible<F>(F);

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for Visible<F> {
    fn write_string_fragment<W: io::Write + ?Sized>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_hazard(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    write!(writer, "\\u{u:04x}")?;
                }
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }

    // Every method that places indentation and separators is the wrapped
    // formatter's.
    delegate!(
        begin_array,
        end_array,
        end_array_value,
        begin_object,
        end_object
    );
    delegate!(end_object_key, begin_object_value, end_object_value);
    delegate!(begin_array_value(first), begin_object_key(first));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_are_shown_not_obeyed() {
        let cases = [
            ("\x1b[2J\x1b[H", "\\u{1b}[2J\\u{1b}[H"),
            (
                "\x1b]8;;http://e.example/\x07link\x1b]8;;\x07",
                "\\u{1b}]8;;http://e.example/\\u{7}link\\u{1b}]8;;\\u{7}",
            ),
            ("\x1b]52;c;cHduZWQ=\x07", "\\u{1b}]52;c;cHduZWQ=\\u{7}"),
            ("ok\rFAKE", "ok\\rFAKE"),
            ("a\nINFO fake", "a\\nINFO fake"),
            ("a\x08\x08\x7f", "a\\u{8}\\u{8}\\u{7f}"),
            ("\u{9b}2J", "\\u{9b}2J"),
            ("abc\u{202e}fed", "abc\\u{202e}fed"),
            ("\u{2066}x\u{2069}", "\\u{2066}x\\u{2069}"),
            (
                "a\u{200b}b\u{2060}c\u{feff}",
                "a\\u{200b}b\\u{2060}c\\u{feff}",
            ),
            ("a\u{2028}b\u{2029}", "a\\u{2028}b\\u{2029}"),
            ("tag\u{e0041}", "tag\\u{e0041}"),
            ("tab\there", "tab\\there"),
        ];
        for (raw, shown) in cases {
            assert_eq!(escape(raw), shown, "{raw:?}");
            assert_eq!(Escaped(raw).to_string(), shown);
        }
    }

    #[test]
    fn ordinary_text_is_kept_as_written() {
        for s in [
            "req-00000001",
            "Umsatz stieg um 12 % — naïve café",
            "收入增长",
            "e\u{301}",
            "a\\u{1b} stays as typed",
            "\"quoted\" 'single'",
            "",
        ] {
            assert!(matches!(escape(s), Cow::Borrowed(_)), "{s:?}");
        }
    }

    #[test]
    fn lines_keep_their_newlines_only() {
        assert_eq!(
            escape_lines("invalid configuration:\n  - a\x1b[2J\r"),
            "invalid configuration:\n  - a\\u{1b}[2J\\r"
        );
    }

    #[test]
    fn json_escapes_what_a_terminal_obeys_and_parses_back_the_same() {
        let value = serde_json::json!({
            "id": "a\u{9b}2J\u{7f}\u{202e}b\u{2028}\u{e0041}\x1b",
            "n": [1, 2],
        });
        for pretty in [false, true] {
            let text = to_json(&value, pretty).unwrap();
            assert!(!text.chars().any(|c| is_hazard(c) && c != '\n'), "{text}");
            assert!(
                text.contains(r"a\u009b2J\u007f\u202eb\u2028\udb40\udc41\u001b"),
                "{text}"
            );
            let back: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(back, value);
        }
        assert_eq!(
            to_json(&value, true).unwrap(),
            serde_json::to_string_pretty(&serde_json::json!({"id": "x", "n": [1, 2]}))
                .unwrap()
                .replace(
                    "\"x\"",
                    r#""a\u009b2J\u007f\u202eb\u2028\udb40\udc41\u001b""#
                )
        );
    }
}
