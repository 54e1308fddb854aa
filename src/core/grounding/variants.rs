//! Other words a claim's word may be found by in its sources: UK/US
//! spellings ("favourite" = "favorite") and WordNet synonyms ("enroll" →
//! "register"), from the data files `tools/wordnet_variants.py` generates
//! from WordNet 3.0 (notice in `data/LICENSE-WordNet`), stemmed by
//! `build.rs`.
//!
//! A pure function of the claim's word (by its stem): the alternates are
//! known before any source is read. Read once per process on first use
//! into a map of stem keys; it must never look at a source.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::core::terms::term_hash;

/// The tables stemmed by `build.rs`: `stem<TAB>alternate-stem …` per line,
/// UK/US spellings first, then synonyms (the first alternate found wins).
const STEMMED: &str = include_str!(concat!(env!("OUT_DIR"), "/variants.txt"));

/// Stem key → where its alternates start in `keys` (a count, then the keys).
struct Variants {
    groups: HashMap<u64, u32>,
    keys: Vec<u64>,
}

static VARIANTS: LazyLock<Variants> = LazyLock::new(|| Variants::build(STEMMED));

impl Variants {
    fn build(table: &str) -> Self {
        let mut groups = HashMap::new();
        let mut keys = Vec::new();
        for line in table.lines() {
            let Some((stem, others)) = line.split_once('\t') else {
                continue;
            };
            let at = keys.len();
            keys.push(0);
            keys.extend(others.split(' ').map(term_hash));
            keys[at] = (keys.len() - at - 1) as u64;
            groups.insert(term_hash(stem), at as u32 + 1);
        }
        Variants { groups, keys }
    }
}
/// The alternates of the word whose stem key is `stem`, as a handle for
/// [`alternates`] (0: none).
pub(super) fn group(stem: u64) -> u32 {
    VARIANTS.groups.get(&stem).copied().unwrap_or(0)
}

/// The stem keys a word of `group` may also be found by.
pub(super) fn alternates(group: u32) -> &'static [u64] {
    let Some(at) = (group as usize).checked_sub(1) else {
        return &[];
    };
    let keys = &VARIANTS.keys;
    let n = keys.get(at).map_or(0, |&n| n as usize);
    keys.get(at + 1..at + 1 + n).unwrap_or(&[])
}
