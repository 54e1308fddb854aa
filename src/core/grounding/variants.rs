//! Other words a claim's word may be found by in its sources: UK/US
//! spellings ("favourite" = "favorite"), abbreviations of units, months
//! and titles ("km" = "kilometre", "Sept" = "September", "Mt" = "Mount"),
//! verbs of one direction of a change ("increased" = "rose" = "grew",
//! "fell" = "declined") and WordNet synonyms ("enroll" → "register"), from
//! the data files `tools/wordnet_variants.py` generates from WordNet 3.0
//! (notice in `data/LICENSE-WordNet`) and the hand-written
//! `data/abbreviations.txt` and `data/directions.txt`, stemmed by
//! `build.rs`.
//!
//! A pure function of the claim's word (by its stem): the alternates are
//! known before any source is read. Read once per process on first use
//! into a map of stem keys; it must never look at a source.

use std::sync::LazyLock;

use crate::core::terms::{Table, term_hash};

/// The tables stemmed by `build.rs`: `stem<TAB>alternate-stem …` per line,
/// UK/US spellings first, then abbreviations, directions and synonyms (the
/// first alternate found wins).
const STEMMED: &str = include_str!(concat!(env!("OUT_DIR"), "/variants.txt"));

/// Stem key → its group (1-based); a group's alternates are
/// `keys[ends[g - 1]..ends[g]]` (with `ends[0] = 0`). Keys are term
/// hashes, already mixed: the open-addressing table needs no hasher of its
/// own (every word the memo learns is looked up here).
struct Variants {
    groups: Table<u32>,
    ends: Vec<u32>,
    keys: Vec<u64>,
}

static VARIANTS: LazyLock<Variants> = LazyLock::new(|| Variants::build(STEMMED));

/// Most groups a table may hold: a group number fits the word memo's
/// packed slot (see `memo`).
pub(super) const MAX_GROUPS: usize = (1 << 17) - 1;

impl Variants {
    fn build(table: &str) -> Self {
        let mut groups = Table::with_capacity(1024);
        let mut ends = vec![0];
        let mut keys = Vec::new();
        for line in table.lines().take(MAX_GROUPS) {
            let Some((stem, others)) = line.split_once('\t') else {
                continue;
            };
            keys.extend(others.split(' ').map(term_hash));
            ends.push(keys.len() as u32);
            *groups.entry(term_hash(stem)) = (ends.len() - 1) as u32;
        }
        Variants { groups, ends, keys }
    }
}

/// The alternates of the word whose stem key is `stem`, as a handle for
/// [`alternates`] (0: none).
pub(super) fn group(stem: u64) -> u32 {
    VARIANTS.groups.get(stem).unwrap_or(0)
}

/// The stem keys a word of `group` may also be found by.
pub(super) fn alternates(group: u32) -> &'static [u64] {
    let v = &*VARIANTS;
    let g = group as usize;
    match (g.checked_sub(1).and_then(|p| v.ends.get(p)), v.ends.get(g)) {
        (Some(&from), Some(&to)) => v.keys.get(from as usize..to as usize).unwrap_or(&[]),
        _ => &[],
    }
}
