//! Other words a claim's word may be found by in its sources: UK/US
//! spellings ("favourite" = "favorite") and WordNet synonyms ("enroll" →
//! "register"), read from the data files `tools/wordnet_variants.py`
//! generates from WordNet 3.0 (notice in `data/LICENSE-WordNet`).
//!
//! A pure function of the claim's word (by its stem): the alternates are
//! known before any source is read. Built once per process on first use
//! into a map of stems; it must never look at a source.

use std::collections::HashMap;
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};

use crate::core::terms::term_hash;

/// UK/US spelling pairs, both ways: `word<TAB>variant …` per line.
const SPELLINGS: &str = include_str!("data/spellings.txt");
/// A word's synonyms (its most frequent sense), and a verb's more general
/// word: `word<TAB>synonym …` per line.
const SYNONYMS: &str = include_str!("data/synonyms.txt");

/// Stem key → where its alternates start in `keys` (a count, then the keys).
struct Variants {
    groups: HashMap<u64, u32>,
    keys: Vec<u64>,
}

static VARIANTS: LazyLock<Variants> = LazyLock::new(|| Variants::build(&[SPELLINGS, SYNONYMS]));

impl Variants {
    fn build(tables: &[&str]) -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let key = |w: &str| term_hash(&stemmer.stem(w));
        // In file order, spellings first: the first alternate found wins.
        let mut order: Vec<u64> = Vec::new();
        let mut alternates: HashMap<u64, Vec<u64>> = HashMap::new();
        for table in tables {
            for line in table.lines() {
                let Some((word, others)) = line.split_once('\t') else {
                    continue;
                };
                let k = key(word);
                let list = alternates.entry(k).or_insert_with(|| {
                    order.push(k);
                    Vec::new()
                });
                for other in others.split(' ') {
                    let o = key(other);
                    if o != k && !list.contains(&o) {
                        list.push(o);
                    }
                }
            }
        }
        let mut groups = HashMap::with_capacity(order.len());
        let mut keys = Vec::new();
        for k in order {
            let list = &alternates[&k];
            if list.is_empty() {
                continue;
            }
            groups.insert(k, keys.len() as u32 + 1);
            keys.push(list.len() as u64);
            keys.extend_from_slice(list);
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
