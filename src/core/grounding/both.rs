//! Claims that say one thing of two names at once: "Both Eatza Pizza and
//! Your Pie were founded in Arizona", "Kings of Leon and The Strokes are
//! both rock bands". Such a claim states the words after the names of
//! each name; sources that say them of one name only do not support it,
//! though every word is found.
//!
//! Pure: finds the two names and where the words said of both start, in
//! the claim's terms as the scorer reads them; it must not look a word up
//! in a source (the scorer asks the index).

use std::ops::Range;

/// The two names of such a claim and the first term said of both, as
/// indexes into the claim's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shared {
    pub(super) names: [Range<usize>; 2],
    pub(super) said_from: usize,
}

/// Words that may join a name's words ("Kings of Leon", "The Lord of the
/// Rings", "Gabriel de la Torre").
const JOINERS: &[&[u8]] = &[b"de", b"la", b"of", b"the"];

/// The two names of a claim that says its words of both, and where those
/// words start: "both NAME and NAME …" or "NAME and NAME are|were both
/// …", names joined by "and" alone. `n` terms; `term(i)` gives a term's
/// text and whether it is a name's word. `None` for any other claim (most
/// claims: the caller asks only when the claim writes "both").
pub(super) fn shared_names<'a>(
    n: usize,
    term: impl Fn(usize) -> (&'a [u8], bool),
) -> Option<Shared> {
    let is = |i: usize, w: &[u8]| i < n && term(i).0.eq_ignore_ascii_case(w);
    let both = (0..n).find(|&i| is(i, b"both"))?;
    // A capitalised word that is no name's own ("Your Pie", "The
    // Strokes") opens the name after it.
    let opens = |i: usize| term(i).0.first().is_some_and(u8::is_ascii_uppercase) && !term(i).1;
    // A name from term `i` on (a lower-case "the" before it left out).
    let run_from = |mut i: usize| {
        if i < n && is(i, b"the") && !opens(i) {
            i += 1;
        }
        let start = i;
        if i + 1 < n && opens(i) && term(i + 1).1 {
            i += 1;
        }
        let mut end = start;
        while i < n {
            let (w, name) = term(i);
            if name {
                i += 1;
                end = i;
            } else if end > start && JOINERS.iter().any(|j| w.eq_ignore_ascii_case(j)) {
                i += 1;
            } else {
                break;
            }
        }
        (end > start).then_some(start..end)
    };
    // A name ending at term `end` (exclusive), and where it starts with a
    // lower-case "the" before it.
    let run_to = |end: usize| {
        let mut i = end;
        let mut start = end;
        while i > 0 {
            let (w, name) = term(i - 1);
            if name {
                i -= 1;
                start = i;
            } else if start < end && JOINERS.iter().any(|j| w.eq_ignore_ascii_case(j)) {
                i -= 1;
            } else {
                break;
            }
        }
        if start == end {
            return None;
        }
        if start > 0 && opens(start - 1) {
            start -= 1;
        }
        let from = if start > 0 && is(start - 1, b"the") {
            start - 1
        } else {
            start
        };
        Some((from, start..end))
    };
    // "Both NAME and NAME …", opening the claim: what follows the names
    // is said of both.
    if both == 0 {
        let first = run_from(1)?;
        if !is(first.end, b"and") {
            return None;
        }
        let second = run_from(first.end + 1)?;
        let said_from = second.end;
        return (said_from < n).then_some(Shared {
            names: [first, second],
            said_from,
        });
    }
    // "NAME and NAME are both …", the names opening the claim.
    if both >= 2 && (is(both - 1, b"are") || is(both - 1, b"were")) {
        let (opens, second) = run_to(both - 1)?;
        let and = opens.checked_sub(1)?;
        if !is(and, b"and") {
            return None;
        }
        let (0, first) = run_to(and)? else {
            return None;
        };
        return (both + 1 < n).then_some(Shared {
            names: [first, second],
            said_from: both + 1,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words of `claim` split on spaces; a name's word is capitalised.
    fn shared(claim: &str) -> Option<(Vec<String>, Vec<String>, String)> {
        let words: Vec<&str> = claim.split(' ').collect();
        let s = shared_names(words.len(), |i| {
            let w = words[i];
            let name = w.starts_with(|c: char| c.is_ascii_uppercase())
                && !["Both", "The", "Your"].contains(&w);
            (w.as_bytes(), name)
        })?;
        let text = |r: &Range<usize>| words[r.clone()].iter().map(|w| w.to_string()).collect();
        Some((
            text(&s.names[0]),
            text(&s.names[1]),
            words[s.said_from].to_string(),
        ))
    }

    #[test]
    fn both_names_and_what_is_said_of_them() {
        let s = |a: &[&str], b: &[&str], w: &str| {
            Some((
                a.iter().map(|x| x.to_string()).collect(),
                b.iter().map(|x| x.to_string()).collect(),
                w.to_string(),
            ))
        };
        assert_eq!(
            shared("Both Eatza Pizza and Your Pie were founded in Arizona"),
            s(&["Eatza", "Pizza"], &["Your", "Pie"], "were")
        );
        assert_eq!(
            shared("Both The New Pornographers and Kings of Leon are rock bands"),
            s(
                &["The", "New", "Pornographers"],
                &["Kings", "of", "Leon"],
                "are"
            )
        );
        assert_eq!(
            shared("Kings of Leon and The Strokes are both rock bands"),
            s(&["Kings", "of", "Leon"], &["The", "Strokes"], "rock")
        );
        // Not two names, or nothing said after them.
        for claim in [
            "The rate depends on both air and water",
            "Both games began in the 19th century",
            "It was owned by both Lloyds and Barclays in 2020",
            "Lloyds and Barclays are both",
            "In 2020 Lloyds and Barclays were both fined",
            "Lloyds and the bank are both lenders",
        ] {
            assert_eq!(shared(claim), None, "{claim}");
        }
    }
}
