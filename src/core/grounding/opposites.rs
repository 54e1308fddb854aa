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

use super::lexicon::letters_before;
use super::memo::Folder;
use crate::core::terms::{Table, ascii_word};

/// Sets of classes that exclude each other, one set a line: classes
/// parted by `|`, each the words of one meaning, every form written out
/// (a claim's words are matched as written, case aside). Words with a
/// common other sense stay out ("fall" the season, "lost" the keys,
/// "close" to, "more" and "most", "over" and "under", "positive"
/// punishment). A source states a class where its sentence holds a word's
/// stem and writes one of the class's words: "employs" holds the stem of
/// "employer", "regulators" that of "regulated", "a fire" that of
/// "fired", and none states anything. The changes and the periods are
/// stated by stem alone (see [`stated_by_stem`]). The units of time of the
/// last set are a claim's only after a number ("2 hours" against "2
/// days"; see [`is_duration`]): alone they name no length ("in recent
/// years", "day to day").
const SETS: &str = "\
increase increases increased increasing rise rises rising rose risen grow grows grew grown \
growing climb climbs climbed jump jumps jumped surge surges surged soar soars soared raise \
raises raised hike hikes hiked boost boosts boosted gained rallied expand expands expanded \
expanding doubled doubling tripled tripling quadrupled | decrease decreases decreased decreasing \
decline declines declined declining falls fell fallen falling drop drops dropped dropping \
plunge plunges plunged slump slumps slumped tumble tumbles tumbled shrink shrinks shrank \
shrunk cut cuts reduce reduces reduced lowered slash slashes slashed halved halving lost
higher | lower
beat beats beaten | missed misses
majority | minority
highest | lowest
minimum | maximum
profit profits profitable gain gains | loss losses unprofitable
waive waives waived waiving waiver | charge charges charged charging
approve approves approved approval | reject rejects rejected rejection deny denies denied \
block blocks blocked blocking veto vetoes vetoed vetoing
next | last previous
daily | weekly | monthly | quarterly | annual annually yearly
fixed | variable floating adjustable
buy buys bought buying purchase purchases purchased acquire acquires acquired acquiring \
acquisition acquisitions | sell sells sold selling divest divests divested divesting \
divestment dispose disposes disposed disposal disposals
win wins won winning | lose loses losing
allow allows allowed permit permits permitted | prohibit prohibits prohibited forbid forbids \
forbidden ban bans banned
include includes included including cover covers covered covering | exclude excludes \
excluded excluding
secured | unsecured
limited | unlimited
upgrade upgrades upgraded | downgrade downgrades downgraded
surplus | deficit shortfall
accelerate accelerates accelerated accelerating | decelerate decelerates decelerated \
decelerating slowed slowing
outperform outperforms outperformed outperforming | underperform underperforms underperformed \
underperforming
tighten tightens tightened tightening | loosen loosens loosened loosening
steepen steepens steepened steepening | flatten flattens flattened flattening
widen widens widened widening | narrows narrowed narrowing
improve improves improved improving improvement | deteriorate deteriorates deteriorated \
deteriorating deterioration worsen worsens worsened worsening
appreciate appreciates appreciated appreciating appreciation | depreciate depreciates \
depreciated depreciating depreciation
devalue devalues devalued devaluing devaluation | revalue revalues revalued revaluing \
revaluation
overstate overstates overstated overstating | understate understates understated \
understating
high | low
bullish | bearish
hawkish | dovish
oversubscribed | undersubscribed
premium premiums | discount discounts
creditor creditors | debtor debtors
senior | junior subordinated
solvent | insolvent
legal lawful | illegal unlawful
authorised authorized | unauthorised unauthorized
collateralised collateralized | uncollateralised uncollateralized
import imports imported importer importers | export exports exported exporter exporters
inflow inflows | outflow outflows
strong stronger strongest strengthen strengthens strengthened strengthening | weak weaker \
weakest weaken weakens weakened weakening
earliest | latest
oldest | youngest newest
largest biggest | smallest
longest | shortest
required mandatory compulsory | optional voluntary
eligible | ineligible
available | unavailable
refundable | nonrefundable
taxable | nontaxable
domestic | international foreign
credit credits | debit debits
deposit deposits deposited | withdraw withdraws withdrew withdrawn withdrawal withdrawals
asset assets | liability liabilities
lend lends lent lending lender lenders | borrow borrows borrowed borrowing borrower borrowers
employer employers | employee employees
buyer buyers | seller sellers
landlord landlords | tenant tenants
inbound | outbound
regulated | unregulated
insured | uninsured
audited | unaudited
listed | unlisted
liquid | illiquid
hired | fired
open opens opened | closed
join joins joined joining | left depart departs departed departing
enter enters entered entering | exit exits exited exiting
incoming | outgoing
male | female
hour hours | day days | week weeks | month months | year years";

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
                *places.entry(ascii_word(w.as_bytes()).hash) =
                    ((set as u32) << 16 | class as u32) + 1;
            }
        }
    }
    Opposites { sets, places }
});

/// Whether the word at `at` of `bytes` follows "non" ("non-regulated",
/// "non insured"): it then says its opposite, and no set of opposites
/// reads it, in a claim or in a source.
pub(super) fn after_non(bytes: &[u8], at: usize) -> bool {
    at >= 4
        && matches!(bytes[at - 1], b'-' | b' ')
        && bytes[at - 4..at - 1].eq_ignore_ascii_case(b"non")
        && (at == 4 || !bytes[at - 5].is_ascii_alphabetic())
}

/// Where `word` (as written) stands among the opposites, if anywhere.
pub(super) fn place_of(word: &[u8]) -> Option<Place> {
    if !word.is_ascii() {
        return None;
    }
    let p = OPPOSITES
        .places
        .get(ascii_word(word).hash)?
        .checked_sub(1)?;
    Some(Place {
        set: (p >> 16) as u16,
        class: (p & 0xFFFF) as u16,
    })
}

/// Where a claim's term stands among the opposites: for a term that is
/// "increase" or "decrease", where that change stands, whatever it writes
/// ("up" of "up 5%" and "higher" of "5% higher" are read as "increase");
/// else where the word it writes stands.
pub(super) fn place_of_term(
    written: &[u8],
    id: u32,
    ids: &mut Ids,
    folder: &mut Folder,
) -> Option<Place> {
    let change = *CHANGE;
    match ids.changes(folder).iter().position(|&i| i == id) {
        Some(class) => Some(Place {
            class: class as u16,
            ..change
        }),
        None => place_of(written),
    }
}

/// The nouns of the periods, and the adverb each is read as after "a",
/// "per", "each" or "every" in a claim ("£5 a month" is "monthly").
const PERIOD_NOUNS: [(&str, &str); 4] = [
    ("day", "daily"),
    ("week", "weekly"),
    ("month", "monthly"),
    ("year", "yearly"),
];

/// Whether `word` is a noun of [`PERIOD_NOUNS`], any case: the word memo
/// marks it, so that a claim holding one is read by [`period_of`].
pub(super) fn is_period_noun(word: &[u8]) -> bool {
    PERIOD_NOUNS
        .iter()
        .any(|(noun, _)| word.eq_ignore_ascii_case(noun.as_bytes()))
}

/// Where the claim word at `at..at + len` of `text` stands among the
/// periods when it is a period's noun said as a rate: after "per",
/// "each" or "every", or after "a" that follows an amount or "once",
/// "twice", "times" ("£5 a month", "4.5% a year", "twice a week":
/// "monthly", "yearly", "weekly"); `None` for any other word ("in the
/// year 2020", "within a year", "five years").
pub(super) fn period_of(text: &[u8], at: usize, len: usize) -> Option<Place> {
    let word = &text[at..at + len];
    let (_, adverb) = PERIOD_NOUNS
        .iter()
        .find(|(noun, _)| word.eq_ignore_ascii_case(noun.as_bytes()))?;
    let before = letters_before(text, at);
    let rate = if before.eq_ignore_ascii_case(b"a") {
        // The text before "a", to the space before it.
        let a = before.as_ptr() as usize - text.as_ptr() as usize;
        let prior = text[..a].trim_ascii_end();
        let from = prior.iter().rposition(|&b| b == b' ').map_or(0, |p| p + 1);
        let prior = &prior[from..];
        // An amount, with its sign and scale ("£5", "4.5%", "$2bn", "£5m").
        let amount = prior.iter().rposition(u8::is_ascii_digit).is_some_and(|d| {
            let unit = &prior[d + 1..];
            unit.is_empty()
                || [&b"%"[..], b"m", b"bn", b"k"]
                    .iter()
                    .any(|u| unit.eq_ignore_ascii_case(u))
        });
        amount
            || [
                &b"once"[..],
                b"twice",
                b"times",
                b"thousand",
                b"million",
                b"billion",
            ]
            .iter()
            .any(|w| prior.eq_ignore_ascii_case(w))
    } else {
        [&b"per"[..], b"each", b"every"]
            .iter()
            .any(|w| before.eq_ignore_ascii_case(w))
    };
    rate.then(|| place_of(adverb.as_bytes())).flatten()
}

/// Whether a source states `place`'s classes by a word's stem alone: the
/// changes, which a number states too ("up 5%", "5% lower"), and the
/// periods, whose nouns mean what their adverbs do ("each year" is
/// "yearly", "per month" "monthly").
pub(super) fn stated_by_stem(place: Place) -> bool {
    place.set == CHANGE.set || place.set == PERIODS.set
}

/// Whether `place` is of the units of time, which a claim states only
/// right after a number ("30 days", "two-year").
pub(super) fn is_duration(place: Place) -> bool {
    place.set == DURATIONS.set
}

/// The place of "hour": its set is the units of time.
static DURATIONS: LazyLock<Place> =
    LazyLock::new(|| place_of(b"hour").expect("\"hour\" is in the sets"));

/// The place of "daily": its set is the periods'.
static PERIODS: LazyLock<Place> =
    LazyLock::new(|| place_of(b"daily").expect("\"daily\" is in the sets"));

/// The place of "increase": its set is the changes'.
static CHANGE: LazyLock<Place> =
    LazyLock::new(|| place_of(b"increase").expect("\"increase\" is in the first set"));

/// The sets' words by their ids in a thread's word memo: per set, per
/// class, each id once with the first word of the class it stands for.
/// Learned on first use, forgotten when the memo's ids start over, so a
/// claim's check costs a look-up per id, not a folding per word.
#[derive(Default)]
pub(super) struct Ids {
    sets: Vec<Option<Vec<Class>>>,
    /// The ids of "increase" and "decrease".
    changes: Option<[u32; 2]>,
}

/// A class's words by id: each id once, with the first word of the class
/// it stands for.
pub(super) type Class = Vec<(u32, &'static str)>;

impl Ids {
    /// Forgets every id (the memo's ids started over).
    pub(super) fn clear(&mut self) {
        self.sets.clear();
        self.changes = None;
    }

    /// The ids of "increase" and "decrease", the first words of the
    /// classes of changes.
    fn changes(&mut self, folder: &mut Folder) -> [u32; 2] {
        if let Some(ids) = self.changes {
            return ids;
        }
        let ids = [b"increase".as_slice(), b"decrease"].map(|w| folder.fold_packed(w, true).id());
        self.changes = Some(ids);
        ids
    }

    /// The classes of `place`'s set, as ids.
    pub(super) fn of(&mut self, place: Place, folder: &mut Folder) -> &[Class] {
        let set = place.set as usize;
        if self.sets.len() <= set {
            self.sets.resize(set + 1, None);
        }
        self.sets[set].get_or_insert_with(|| {
            OPPOSITES.sets[set]
                .iter()
                .map(|class| {
                    let mut ids: Vec<(u32, &str)> = Vec::new();
                    for w in class {
                        let id = folder.fold_packed(w.as_bytes(), true).id();
                        if !ids.iter().any(|&(i, _)| i == id) {
                            ids.push((id, w));
                        }
                    }
                    ids
                })
                .collect()
        })
    }
}

/// Most sets of [`SETS`], and most classes a set (the bits of a byte):
/// [`Places`] keeps a class mask per set.
const MAX_SETS: usize = 128;
const MAX_CLASSES: usize = 8;

/// The number of sets (lines) of [`SETS`] and the most classes of one.
const fn sets_and_classes(table: &str) -> (usize, usize) {
    let b = table.as_bytes();
    let (mut sets, mut most, mut classes, mut i) = (1, 0, 1, 0);
    while i < b.len() {
        if b[i] == b'\n' {
            sets += 1;
            classes = 1;
        } else if b[i] == b'|' {
            classes += 1;
        }
        if classes > most {
            most = classes;
        }
        i += 1;
    }
    (sets, most)
}

const _: () = {
    let (sets, classes) = sets_and_classes(SETS);
    assert!(sets <= MAX_SETS && classes <= MAX_CLASSES);
};

/// A set of places among the opposites (a class mask per set), in a
/// fixed array so that a claim's check allocates nothing.
pub(super) struct Places([u8; MAX_SETS]);

impl Places {
    pub(super) fn new() -> Self {
        Places([0; MAX_SETS])
    }

    pub(super) fn add(&mut self, p: Place) {
        self.0[usize::from(p.set)] |= 1 << p.class;
    }

    pub(super) fn holds(&self, p: Place) -> bool {
        self.0[usize::from(p.set)] & (1 << p.class) != 0
    }

    /// Whether a word at `p` says the opposite of a place held.
    pub(super) fn excludes(&self, p: Place) -> bool {
        self.0[usize::from(p.set)] & !(1u8 << p.class) != 0
    }
}

impl Place {
    /// Its class's index within its set.
    pub(super) fn class(self) -> usize {
        self.class as usize
    }

    /// Class `class` of its set.
    pub(super) fn in_class(self, class: usize) -> Place {
        Place {
            class: class as u16,
            ..self
        }
    }
}

/// Phrases that bound the number after them, longest first (so "no more
/// than" is not read as "more than"): by set (amounts, times) and class
/// (from below, from above; before, after). The classes of a set exclude
/// each other: "at least six" against "at most six".
const BOUNDS: &[(&str, u8, u8)] = &[
    ("no more than", 0, 1),
    ("not more than", 0, 1),
    ("no less than", 0, 0),
    ("no fewer than", 0, 0),
    ("in excess of", 0, 0),
    ("not exceeding", 0, 1),
    ("at least", 0, 0),
    ("more than", 0, 0),
    ("greater than", 0, 0),
    ("upwards of", 0, 0),
    ("minimum of", 0, 0),
    ("at most", 0, 1),
    ("up to", 0, 1),
    ("less than", 0, 1),
    ("fewer than", 0, 1),
    ("maximum of", 0, 1),
    ("prior to", TIME, 0),
    ("over", 0, 0),
    ("above", 0, 0),
    ("exceeding", 0, 0),
    ("under", 0, 1),
    ("below", 0, 1),
    ("before", TIME, 0),
    ("until", TIME, 0),
    ("after", TIME, 1),
    ("since", TIME, 1),
];

/// The set of [`BOUNDS`] that bound in time.
const TIME: u8 = 1;

/// The place of a bound of `set` and `class`. Bounds' sets count down from
/// the top: no set of words reaches them.
fn bound_place(set: u8, class: u16) -> Place {
    Place {
        set: u16::MAX - u16::from(set),
        class,
    }
}

/// [`BOUNDS`] read: each phrase's words from its last, its place and the
/// phrase; the letters its last words end in (a bit per letter), and those
/// last words.
struct Bounds {
    phrases: Vec<(Vec<&'static [u8]>, Place, &'static str)>,
    last_letters: u32,
    last_words: Vec<&'static [u8]>,
    /// The first words of the phrases that bound in time.
    time_first: Vec<&'static [u8]>,
}

static BOUND_PHRASES: LazyLock<Bounds> = LazyLock::new(|| {
    let mut last_letters = 0;
    let mut last_words: Vec<&[u8]> = Vec::new();
    let mut time_first = Vec::new();
    let phrases = BOUNDS
        .iter()
        .map(|&(phrase, set, class)| {
            let words: Vec<&[u8]> = phrase.split(' ').rev().map(str::as_bytes).collect();
            if let Some(&c) = words[0].last() {
                last_letters |= 1 << (c - b'a');
            }
            if !last_words.contains(&words[0]) {
                last_words.push(words[0]);
            }
            if let (TIME, Some(&first)) = (set, words.last()) {
                time_first.push(first);
            }
            (words, bound_place(set, u16::from(class)), phrase)
        })
        .collect();
    Bounds {
        phrases,
        last_letters,
        last_words,
        time_first,
    }
});

/// The bound the phrase right before `at` puts on the number at `at` (a
/// currency sign between them aside): its place, and the phrase.
pub(super) fn bound_before(b: &[u8], at: usize) -> Option<(Place, &'static str)> {
    let bounds = &*BOUND_PHRASES;
    let mut end = at;
    // A sign's last byte first: most numbers follow a space.
    if matches!(b[..end].last(), Some(b'$' | 0xA3 | 0xA5 | 0xAC)) {
        for sign in ["$", "€", "£", "¥"] {
            if b[..end].ends_with(sign.as_bytes()) {
                end -= sign.len();
                break;
            }
        }
    }
    // Most numbers follow no word, or one that bounds nothing: its last
    // letter tells most apart.
    let last = b[..end].strip_suffix(b" ")?.last()?.to_ascii_lowercase();
    if !last.is_ascii_lowercase() || bounds.last_letters & 1 << (last - b'a') == 0 {
        return None;
    }
    // The three words before, last first, in lower case.
    let mut words = [[0u8; 12]; 3];
    let mut lens = [0usize; 3];
    let mut n = 0;
    while n < 3 {
        let Some(stop) = b[..end].iter().rposition(|c| *c != b' ') else {
            break;
        };
        let start = b[..=stop]
            .iter()
            .rposition(|c| !c.is_ascii_alphabetic())
            .map_or(0, |p| p + 1);
        let len = stop + 1 - start;
        if len == 0 || len > 12 {
            break;
        }
        for (o, c) in words[n].iter_mut().zip(&b[start..=stop]) {
            *o = c.to_ascii_lowercase();
        }
        // A word that ends no phrase ("the", "in" before most numbers):
        // no phrase is read further.
        if n == 0 && !bounds.last_words.contains(&&words[0][..len]) {
            return None;
        }
        lens[n] = len;
        n += 1;
        end = start;
    }
    bounds.phrases.iter().find_map(|(parts, place, phrase)| {
        let matched = parts.len() <= n
            && parts
                .iter()
                .enumerate()
                .all(|(i, w)| *w == &words[i][..lens[i]]);
        matched.then_some((*place, *phrase))
    })
}

/// Words between a time bound and the word it bounds ("before *the*
/// maturity date").
const DETERMINERS: &[&[u8]] = &[
    b"a", b"an", b"each", b"her", b"his", b"its", b"our", b"that", b"the", b"their", b"this",
    b"your",
];

/// The time bound ("before", "after", "until", "since", "prior to") of
/// the word at `at` that is not a number ("before the maturity date"), a
/// determiner between them aside.
pub(super) fn time_bound_before(b: &[u8], at: usize) -> Option<(Place, &'static str)> {
    let mut end = at;
    let before = b[..end].strip_suffix(b" ")?;
    let start = before
        .iter()
        .rposition(|c| !c.is_ascii_alphabetic())
        .map_or(0, |p| p + 1);
    if is_determiner(&before[start..]) {
        end = start;
    }
    bound_before(b, end).filter(|&(place, _)| place == bound_place(TIME, place.class))
}

/// Whether `word` may open a time bound (see [`time_bound_before`]): the
/// first word of a phrase of [`BOUNDS`] that bounds in time.
pub(super) fn is_time_bound(word: &[u8]) -> bool {
    BOUND_PHRASES
        .time_first
        .iter()
        .any(|first| first.eq_ignore_ascii_case(word))
}

/// Whether `word` is one [`time_bound_before`] steps over.
pub(super) fn is_determiner(word: &[u8]) -> bool {
    DETERMINERS.iter().any(|d| d.eq_ignore_ascii_case(word))
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

    #[test]
    fn the_phrase_before_a_number_bounds_it() {
        let bound = |text: &str| {
            let at = text
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(text.len());
            bound_before(text.as_bytes(), at).map(|(_, phrase)| phrase)
        };
        assert_eq!(bound("at least 6"), Some("at least"));
        assert_eq!(bound("Customers can make at most 6"), Some("at most"));
        assert_eq!(bound("deposits over $250,000"), Some("over"));
        assert_eq!(bound("no more than 5%"), Some("no more than"));
        assert_eq!(bound("more than 130"), Some("more than"));
        assert_eq!(bound("before 2020"), Some("before"));
        assert_eq!(bound("the 130 branches"), None);
        assert_eq!(bound("130 branches"), None);
        assert_eq!(bound("rose 5%"), None);
        let (low, _) = bound_before(b"at least 6", 9).expect("bound");
        let (high, _) = bound_before(b"up to 6", 6).expect("bound");
        let (after, _) = bound_before(b"after 6", 6).expect("bound");
        assert!(low.excludes(high) && high.excludes(low));
        assert!(!low.excludes(after) && !low.excludes(low));
    }
}
