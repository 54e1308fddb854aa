//! Words that cannot both hold of one thing: "rose" and "fell", "minimum"
//! and "maximum", "monthly" and "annually", "profit" and "loss". A claim
//! that says one where its best source sentence says the other is
//! contradicted, as one that drops the sentence's negation is: the words
//! around the swapped one all match, so the fitted model alone scored such
//! claims high.
//!
//! A pure table of the claim's word; it must not read a source (the scorer
//! asks the index what the best sentence states).

use std::sync::LazyLock;

use crate::core::terms::{Table, term_hash};

/// Sets of classes that exclude each other, one set a line: classes
/// parted by `|`, each the words of one meaning, every form written out
/// (words are matched as written, case aside). Words with a common other
/// sense stay out ("fall" the season, "lost" the keys, "close" to, "more"
/// and "most", "over" and "under", "positive" punishment).
const SETS: &str = "\
increase increases increased increasing rise rises rising rose risen grow grows grew grown \
growing climb climbs climbed jump jumps jumped surge surges surged soar soars soared raise \
raises raised hike hikes hiked boost boosts boosted | decrease decreases decreased decreasing \
decline declines declined declining falls fell fallen falling drop drops dropped dropping \
plunge plunges plunged slump slumps slumped tumble tumbles tumbled shrink shrinks shrank \
shrunk cut cuts reduce reduces reduced lowered slash slashes slashed
higher | lower
highest | lowest
minimum | maximum
profit profits profitable | loss losses unprofitable
approve approves approved approval | reject rejects rejected rejection deny denies denied
daily | weekly | monthly | quarterly | annual annually yearly
fixed | variable floating adjustable
buy buys bought buying purchase purchases purchased | sell sells sold selling
win wins won winning | lose loses losing
allow allows allowed permit permits permitted | prohibit prohibits prohibited forbid forbids \
forbidden ban bans banned
include includes included including | exclude excludes excluded excluding
secured | unsecured
limited | unlimited
upgrade upgrades upgraded | downgrade downgrades downgraded
surplus | deficit
import imports imported | export exports exported
inflow inflows | outflow outflows
strong stronger strongest | weak weaker weakest
earliest | latest";

/// A word's place in [`SETS`]: its set and its class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Place {
    set: u16,
    class: u16,
}

impl Place {
    /// Whether a word at `other` says the opposite of one here.
    pub(super) fn excludes(self, other: Place) -> bool {
        self.set == other.set && self.class != other.class
    }
}

/// [`SETS`] read: by set, by class, the words.
struct Opposites {
    sets: Vec<Vec<Vec<&'static str>>>,
    /// The hash of a word in lower case → its place.
    places: Table<u32>,
}

static OPPOSITES: LazyLock<Opposites> = LazyLock::new(|| {
    let sets: Vec<Vec<Vec<&str>>> = SETS
        .lines()
        .map(|line| {
            line.split('|')
                .map(|class| class.split_whitespace().collect())
                .collect()
        })
        .collect();
    let mut places = Table::with_capacity(512);
    for (set, classes) in sets.iter().enumerate() {
        for (class, words) in classes.iter().enumerate() {
            for w in words {
                // Place + 1: a table's missing key reads as 0.
                *places.entry(term_hash(w)) = ((set as u32) << 16 | class as u32) + 1;
            }
        }
    }
    Opposites { sets, places }
});

/// Where `word` (as written) stands among the opposites, if anywhere.
pub(super) fn place_of(word: &[u8]) -> Option<Place> {
    let mut lower = [0u8; 16];
    let folded = lower.get_mut(..word.len())?;
    for (l, c) in folded.iter_mut().zip(word) {
        *l = c.to_ascii_lowercase();
    }
    let p = OPPOSITES
        .places
        .get(term_hash(std::str::from_utf8(folded).ok()?))?
        .checked_sub(1)?;
    Some(Place {
        set: (p >> 16) as u16,
        class: (p & 0xFFFF) as u16,
    })
}

/// The words of `place`'s own class (`same`), or of the classes that
/// exclude it.
pub(super) fn words(place: Place, same: bool) -> impl Iterator<Item = &'static str> {
    OPPOSITES.sets[place.set as usize]
        .iter()
        .enumerate()
        .filter(move |(c, _)| (*c == place.class as usize) == same)
        .flat_map(|(_, words)| words.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_has_one_place_and_every_set_two_classes_or_more() {
        let mut seen = std::collections::HashSet::new();
        for (set, classes) in OPPOSITES.sets.iter().enumerate() {
            assert!(classes.len() >= 2, "set {set}");
            for (class, words) in classes.iter().enumerate() {
                assert!(!words.is_empty(), "set {set} class {class}");
                for w in words {
                    assert!(seen.insert(*w), "{w} twice");
                    assert!(
                        w.len() <= 16 && w.bytes().all(|b| b.is_ascii_lowercase()),
                        "{w}"
                    );
                    let p = place_of(w.to_uppercase().as_bytes()).expect(w);
                    assert_eq!((p.set as usize, p.class as usize), (set, class), "{w}");
                }
            }
        }
        assert_eq!(place_of(b"revenue"), None);
        assert_eq!(place_of(b"a-word-longer-than-sixteen"), None);
    }
}
