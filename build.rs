//! Stamps the git commit into the binary for `groundgate_build_info`, and
//! stems the word-variant tables of the grounding check
//! (`src/core/grounding/data/*.txt`: see `tools/wordnet_variants.py`, and
//! the hand-written `abbreviations.txt`, `directions.txt`, `finance.txt`
//! and `participles.txt`) into `$OUT_DIR/variants.txt`, so the binary does not
//! stem them at run time.

use std::collections::{BTreeSet, HashMap};

use rust_stemmers::{Algorithm, Stemmer};

/// The tables, in order: a word's alternates from the first table are
/// tried first.
const TABLES: [&str; 6] = [
    "src/core/grounding/data/spellings.txt",
    "src/core/grounding/data/abbreviations.txt",
    "src/core/grounding/data/directions.txt",
    "src/core/grounding/data/finance.txt",
    "src/core/grounding/data/participles.txt",
    "src/core/grounding/data/synonyms.txt",
];

fn main() {
    stamp_commit();
    stem_variants();
}

/// `stem<TAB>alternate-stem …` per line, one line per stem with
/// alternates, lines and alternates in table order; a word whose stem is
/// its alternate's gains nothing and is left out.
fn stem_variants() {
    let stemmer = Stemmer::create(Algorithm::English);
    let mut stems: HashMap<String, String> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut alternates: HashMap<String, Vec<String>> = HashMap::new();
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for path in TABLES {
        println!("cargo:rerun-if-changed={path}");
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("{path}: {e} (generate it with tools/wordnet_variants.py)"));
        let mut stem = |w: &str| {
            stems
                .entry(w.to_string())
                .or_insert_with(|| stemmer.stem(w).into_owned())
                .clone()
        };
        for line in text.lines() {
            let Some((word, others)) = line.split_once('\t') else {
                continue;
            };
            let k = stem(word);
            for other in others.split(' ') {
                let o = stem(other);
                if o != k && seen.insert((k.clone(), o.clone())) {
                    if !alternates.contains_key(&k) {
                        order.push(k.clone());
                    }
                    alternates.entry(k.clone()).or_default().push(o);
                }
            }
        }
    }
    let mut out = String::new();
    for k in &order {
        out.push_str(k);
        out.push('\t');
        out.push_str(&alternates[k].join(" "));
        out.push('\n');
    }
    let dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(format!("{dir}/variants.txt"), out).expect("OUT_DIR is writable");
    // The same table as the keys the binary looks words up by, so a
    // process does not split and hash the text on its first word: each
    // stem's key, where each stem's alternates end, and the alternates'
    // keys, little-endian.
    let (mut stem_keys, mut ends, mut keys) = (Vec::new(), Vec::new(), Vec::new());
    let mut n = 0u32;
    for k in &order {
        stem_keys.extend(term_hash(k.as_bytes()).to_le_bytes());
        for o in &alternates[k] {
            keys.extend(term_hash(o.as_bytes()).to_le_bytes());
            n += 1;
        }
        ends.extend(n.to_le_bytes());
    }
    for (name, bytes) in [("stems", stem_keys), ("ends", ends), ("keys", keys)] {
        std::fs::write(format!("{dir}/variants-{name}.bin"), bytes).expect("OUT_DIR is writable");
    }
}

/// `crate::core::terms::term_hash` of `s` (a test of `variants` checks
/// that the two agree on every word of the table): its length as the
/// seed, then each 8 bytes, the last zero-padded, as one mixing step.
fn term_hash(s: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mix = |h: u64, x: u64| (h.rotate_left(5) ^ x).wrapping_mul(K);
    let mut h = s.len() as u64;
    for chunk in s.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = mix(h, u64::from_le_bytes(word));
    }
    h
}

/// The commit given in `GG_BUILD_GIT_SHA`, for builds without the git
/// history (the Docker build context leaves `.git` out), else git's.
fn stamp_commit() {
    let given = std::env::var("GG_BUILD_GIT_SHA")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let sha = given
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=GG_BUILD_GIT_SHA={sha}");
    // A commit moves the branch's ref, not HEAD (which names the branch),
    // and in a worktree `.git` is a file: ask git where both live.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for name in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
        if let Some(path) = git(&["rev-parse", "--git-path", name])
            && std::path::Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-env-changed=GG_BUILD_GIT_SHA");
}

/// What `git ARGS` prints, trimmed; `None` without git or a repository.
fn git(args: &[&str]) -> Option<String> {
    std::process::Command::new("git")
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}
