use proptest::prelude::*;

use super::index::Like;
use super::lexicon::*;

use super::*;
use crate::core::citation;

fn run(answer: &str, sources: &[&str]) -> Grounding {
    let parsed = citation::parse(answer, sources.len());
    analyze(
        answer,
        &parsed.citations,
        sources,
        &GroundingSettings::default(),
    )
}

fn texts<'a>(answer: &'a str, g: &Grounding) -> Vec<&'a str> {
    g.claims.iter().map(|c| &answer[c.span.clone()]).collect()
}

/// Asserts that the one claim of `answer` is fully supported by `source`.
fn assert_fully_supported(answer: &str, source: &str) {
    let g = run(answer, &[source]);
    assert_eq!(g.claims[0].support, Some(1.0), "{answer}: {g:?}");
}

/// Asserts that the one claim of `answer`, cited against `source`, misses
/// exactly the terms `missing` (as its finding names them) and is flagged
/// at the default `min_support`.
fn assert_flagged_missing(answer: &str, source: &str, missing: &[&str]) {
    let g = run(answer, &[source]);
    assert_eq!(g.claims[0].unsupported_terms, missing, "{answer}: {g:?}");
    let min = GroundingSettings::default().min_support;
    assert!(g.claims[0].support.unwrap() < min, "{answer}: {g:?}");
}

/// `claim`, cited against `source`, still misses the term `missing` (as
/// its finding names it), whatever else it misses.
fn assert_still_missing(claim: &str, source: &str, missing: &str) {
    let g = run(&format!("{claim}[^1]."), &[source]);
    assert!(
        g.claims[0].unsupported_terms.iter().any(|t| t == missing),
        "{claim}: {g:?}"
    );
}

/// `claim`, cited against `source`, has every word found, no contradiction,
/// and is not flagged at the default `min_support`.
fn assert_found_not_flagged(claim: &str, source: &str) {
    let g = run(&format!("{claim}[^1]."), &[source]);
    let c = &g.claims[0];
    assert!(c.unsupported_terms.is_empty(), "{claim}: {g:?}");
    assert!(!c.contradicted, "{claim}: {g:?}");
    let min = GroundingSettings::default().min_support;
    assert!(c.support.unwrap() >= min, "{claim}: {g:?}");
}

const NRR: &str =
    "Net revenue retention fell from 118% to 109% as two enterprise accounts downgraded.";

#[test]
fn the_sample_claim_is_flagged_with_its_missing_terms() {
    let answer = "Net revenue retention fell from 118% to 109% as two enterprise accounts downgraded[^1]. Mid-market churn rose after the March price change[^2]. Expansion revenue slowed in EMEA while APAC held steady[^1].";
    let g = run(
        answer,
        &[NRR, "mid-market churn rose after the March price change."],
    );
    assert_eq!(g.claims.len(), 3);
    let min = GroundingSettings::default().min_support;
    for c in &g.claims[..2] {
        assert!(
            c.support.unwrap() >= min && c.unsupported_terms.is_empty(),
            "{c:?}"
        );
    }
    let c = &g.claims[2];
    assert!(c.support.unwrap() < min, "{c:?}");
    assert_eq!(&c.unsupported_terms[..2], ["emea", "apac"]);
    assert_eq!(g.score, c.support);
    let d = unsupported_detail(2, c);
    assert!(
        d.starts_with("sentence 3 cites [^1]: support 0.")
            && d.contains("; not in source 1: \"emea\", \"apac\", \"expansion\""),
        "{d}"
    );
    let f = findings(&g, &GroundingSettings::default());
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].0.kind, crate::core::FindingKind::UnsupportedClaim);
}

#[test]
fn a_wrong_number_is_unsupported_even_when_every_word_matches() {
    let g = run(
        "Net revenue retention fell from 118% to 104% as two enterprise accounts downgraded[^1].",
        &[NRR],
    );
    assert!(g.claims[0].support.unwrap() <= model::BROKEN, "{g:?}");
    assert_eq!(g.claims[0].unsupported_terms, ["104"]);
    // The same claim with the right number is fully supported.
    let g = run(
        "Retention fell from 118% to 109% as two enterprise accounts downgraded[^1].",
        &[NRR],
    );
    assert_eq!(g.claims[0].support, Some(1.0));
}

#[test]
fn numbers_match_across_spellings_and_suffixes() {
    assert_fully_supported(
        "The duo earned 2 platinum albums in the 1960s[^1].",
        "The duo earned two platinum albums in the 1960s.",
    );
    assert_fully_supported(
        "It was released on June 7th 2010[^1].",
        "It was released on June 7, 2010.",
    );
    assert_fully_supported("Five accounts churned[^1].", "5 accounts churned.");
    // Sorted by word: `spelled_other` looks words up by binary search.
    assert!(SPELLED.windows(2).all(|p| p[0].0 < p[1].0));
    assert_eq!(spelled_other("Twelve", false), Some("12"));
    assert_eq!(spelled_other("12", true), Some("twelve"));
    assert_eq!(spelled_other("twelfth", false), Some("12"));
    assert_eq!(spelled_other("12th", true), Some("twelfth"));
    // A different number is still a wrong number, whatever the spelling.
    let g = run(
        "The duo earned 3 platinum albums[^1].",
        &["The duo earned two platinum albums."],
    );
    assert!(g.claims[0].support.unwrap() <= model::BROKEN, "{g:?}");
    assert_eq!(g.claims[0].unsupported_terms, ["3"]);
}

#[test]
fn stems_and_case_match() {
    let g = run(
        "Enterprise ACCOUNT downgrades drove retention down[^1].",
        &["Two enterprise accounts downgraded; retention dropped."],
    );
    let c = &g.claims[0];
    // "drove" is the only term the source lacks.
    assert_eq!(c.unsupported_terms, ["drove"]);
    assert!(c.support.unwrap() > 0.4, "{c:?}");
}

#[test]
fn claims_split_at_sentence_ends_with_their_markers() {
    let answer = "First claim.[^1] Second one[^2]! Third without marker?\nFourth line\n\nFifth [^1][^2] here.";
    let g = run(answer, &["a", "b"]);
    assert_eq!(
        texts(answer, &g),
        [
            "First claim.[^1]",
            "Second one[^2]!",
            "Third without marker?",
            "Fourth line",
            "Fifth [^1][^2] here."
        ]
    );
    let markers: Vec<&[u32]> = g.claims.iter().map(|c| &c.markers[..]).collect();
    assert_eq!(markers, [&[1][..], &[2], &[], &[], &[1, 2]]);
    assert_eq!(g.claims[2].support, None);
    assert_eq!(g.claims[4].sources[..], [1, 2]);
    // Decimal points and abbreviations without a following space do not split.
    let answer = "Margins were 3.5 points higher (e.g.in Q3) than planned[^1].";
    assert_eq!(run(answer, &["x"]).claims.len(), 1);
}

#[test]
fn full_width_ends_split_claims_among_other_non_ascii_text() {
    // あ and ｗ share the lead bytes of 。 and ！: not ends.
    let answer = "Café in Zürich. あの店は東京にある。大きいｗ！ Really? Ａｎｄ more[^1]. Last";
    let g = run(answer, &["x"]);
    assert_eq!(
        texts(answer, &g),
        [
            "Café in Zürich.",
            "あの店は東京にある。",
            "大きいｗ！",
            "Really?",
            "Ａｎｄ more[^1].",
            "Last"
        ]
    );
}

#[test]
fn fenced_code_is_not_a_claim() {
    let answer = "Intro[^1].\n```rust\nlet x = 42; // [^1]\n```\nOutro[^1].";
    let g = run(answer, &["Intro and outro."]);
    assert_eq!(texts(answer, &g), ["Intro[^1].", "Outro[^1]."]);
    assert_eq!(g.score, Some(1.0));
}

#[test]
fn unresolvable_markers_leave_a_claim_uncited() {
    let parsed = citation::parse("Claim about Paris[^3].", 1);
    let settings = GroundingSettings {
        uncited_claim: Some(crate::core::Action::Warn),
        ..Default::default()
    };
    let g = analyze(
        "Claim about Paris[^3].",
        &parsed.citations,
        &["a"],
        &settings,
    );
    assert_eq!(g.claims[0].markers[..], [3]);
    assert_eq!(g.claims[0].support, None);
    assert_eq!(g.score, None);
    assert_eq!(g.claims[0].checkable_terms, ["paris"]);
}

#[test]
fn uncited_claims_are_reported_only_when_switched_on_and_checkable() {
    // On a line of its own: no marker covers it.
    let answer = "Revenue grew 12% in EMEA.\nIt was a good quarter. Churn fell[^1].";
    let parsed = citation::parse(answer, 1);
    let mut s = GroundingSettings::default();
    let g = analyze(answer, &parsed.citations, &["Churn fell."], &s);
    assert!(findings(&g, &s).is_empty());
    s.uncited_claim = Some(crate::core::Action::Warn);
    let g = analyze(answer, &parsed.citations, &["Churn fell."], &s);
    let f = findings(&g, &s);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0.kind, crate::core::FindingKind::UncitedClaim);
    assert_eq!(
        f[0].0.detail,
        "sentence 1 has no citation but states \"12\", \"emea\""
    );
}

#[test]
fn a_marker_covers_the_sentences_before_it_on_its_line() {
    let source = "Sarah Maas was born in 1986. She writes fantasy novels for Bloomsbury.";
    let answer = "Sarah Maas was born in 1991. She writes fantasy novels for Bloomsbury[^1].";
    let g = run(answer, &[source]);
    let c = &g.claims[0];
    assert!(c.support.unwrap() <= model::BROKEN, "{g:?}");
    assert!(c.markers.is_empty());
    assert_eq!(c.sources[..], [1]);
    assert_eq!(c.unsupported_terms, ["1991"]);
    assert_eq!(g.score, c.support);
    let d = unsupported_detail(0, c);
    assert!(
        d.starts_with("sentence 1, covered by [^1] after it: support 0."),
        "{d}"
    );
    // Through a run of unmarked sentences, up to the marker.
    let g = run(
        "Sarah Maas was born in 1986. She lives in Bucks County. She writes fantasy novels for Bloomsbury[^1].",
        &[source],
    );
    assert_eq!(g.claims[0].support, Some(1.0), "{g:?}");
    assert!(g.claims[1].support.unwrap() < 0.5, "{g:?}");
    assert_eq!(g.claims[1].unsupported_terms, ["bucks", "county", "lives"]);
    // Not across a line break, and not a sentence with no number or name
    // in it: nothing a source could contradict.
    for answer in [
        "Sarah Maas was born in 1991.\nShe writes fantasy novels for Bloomsbury[^1].",
        "Great question, thanks! She writes fantasy novels for Bloomsbury[^1].",
    ] {
        let g = run(answer, &[source]);
        assert_eq!(g.claims[0].support, None, "{answer}: {g:?}");
        assert_eq!(g.claims[1].support, Some(1.0), "{answer}: {g:?}");
    }
    // A marker that resolves to no source covers nothing.
    let g = run("Sarah Maas was born in 1991. She writes[^4].", &[source]);
    assert_eq!(g.score, None, "{g:?}");
}

#[test]
fn a_missing_entity_past_the_sentence_start_is_unsupported() {
    let g = run(
        "The report was written by Alice Smith[^1].",
        &["The report was written by the finance team."],
    );
    let c = &g.claims[0];
    assert!(
        c.support.unwrap() < GroundingSettings::default().min_support,
        "{c:?}"
    );
    assert_eq!(c.unsupported_terms, ["alice", "smith"]);
}

#[test]
fn non_ascii_words_are_segmented() {
    let g = run(
        "Der Umsatz in München stieg[^1].",
        &["In München stieg der Umsatz."],
    );
    assert!(g.claims[0].unsupported_terms.is_empty());
    assert!(g.claims[0].support.unwrap() >= GroundingSettings::default().min_support);
    let g = run("Ventes à Zürich[^1].", &["Ventes à Genève."]);
    assert_eq!(g.claims[0].unsupported_terms, ["zürich"]);
}

#[test]
fn prompt_addendum_lists_claims_and_missing_terms() {
    let answer = "Expansion revenue slowed in EMEA[^1].";
    let g = run(answer, &[NRR]);
    let p = prompt_addendum(answer, &g, 0.6, false).unwrap();
    assert!(
        p.contains("sentence 1: \"Expansion revenue slowed in EMEA[^1].\""),
        "{p}"
    );
    assert!(p.contains("missing: emea, expansion, slowed"), "{p}");
    assert!(p.contains("cite a source that states these terms, or drop the claim"));
    let g = run("Retention fell[^1].", &[NRR]);
    assert_eq!(prompt_addendum("Retention fell[^1].", &g, 0.6, false), None);
}

/// Words of `text` chunk by chunk at whitespace, each chunk by the ASCII
/// scanner when it is ASCII, else by `unicode-segmentation`: the reference
/// for [`for_each_word`], which scans the ASCII between chunks in runs.
fn words_by_chunk(text: &str) -> Vec<(usize, String, bool)> {
    use unicode_segmentation::UnicodeSegmentation;
    let mut out = Vec::new();
    let mut at = 0;
    for chunk in text.split(|c: char| c.is_ascii_whitespace()) {
        if chunk.is_ascii() {
            crate::core::terms::ascii_words(chunk, at, &mut |w, off| {
                out.push((off, String::from_utf8_lossy(w).into_owned(), true));
            });
        } else {
            for (off, w) in chunk.unicode_word_indices() {
                out.push((at + off, w.to_string(), w.is_ascii()));
            }
        }
        at += chunk.len() + 1;
    }
    out
}

proptest! {
    #[test]
    fn words_of_mixed_text_are_those_of_each_chunk(
        text in "([a-zA-Z0-9_'.:,;!?\\- ]|\n|\t|é|’|—|ü|。|Ⅻ|\u{2009}){0,120}",
    ) {
        let mut words = Vec::new();
        for_each_word(&text, &mut 0, &mut |w: &[u8], at, ascii| words.push((at, String::from_utf8_lossy(w).into_owned(), ascii)));
        prop_assert_eq!(words, words_by_chunk(&text));
    }
}

/// Every word of `texts`, as the source index knows it.
fn words_of(texts: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for t in texts {
        for_each_word(t, &mut 0, &mut |w: &[u8], _, _| {
            out.push(String::from_utf8_lossy(w).into_owned())
        });
    }
    out
}

/// The cover of `ids` and where each sits.
fn cover_of(
    index: &mut index::SourceIndex,
    ids: &[u32],
    cited: &[(usize, u64)],
) -> (index::Cover, Vec<u8>) {
    let mut seats = Vec::new();
    let cover = index.cover(ids, cited, &mut 0, &mut seats, Like::default());
    (cover, seats)
}

#[test]
fn a_replayed_source_indexes_exactly_what_reading_it_does() {
    // Sources of different sentence counts (one whose terms are in more
    // sentences than a term lists), a dotted word, negations, stop words,
    // numbers; indexed in another order each time, so each replay starts at
    // another sentence number.
    let long: String = (0..70)
        .map(|i| format!("Sentence {i} names Paris and the river. "))
        .collect();
    let texts = [
        long.as_str(),
        "The hotel is in Hawaii.Aulani opened in 2011. It has 21 floors. Its owner stepped down in 2019.",
        "No stop words here: revenue grew. Margins fell! Did churn rise? Yes.",
        "one two three",
    ];
    let orders = [[0usize, 1, 2, 3], [2, 0, 3, 1], [3, 2, 1, 0], [1, 3, 0, 2]];
    let mut warm = Scratch::new();
    let mut cold = Scratch::new();
    let mut capitals = 0;
    // Twice over: a text is summarised when seen the second time.
    for order in orders.iter().chain(&orders) {
        let sources: Vec<&str> = order.iter().map(|&k| texts[k]).collect();
        let (fw, iw) = warm.parts();
        let (fc, ic) = cold.parts();
        iw.want_everything();
        iw.start(sources.len(), false);
        // Cold: a fresh index (nothing cached) reads every source.
        *ic = index::SourceIndex::new();
        ic.want_everything();
        ic.start(sources.len(), false);
        for (idx, text) in sources.iter().enumerate() {
            iw.add(idx, text, fw, &mut 0);
            ic.add(idx, text, fc, &mut 0);
        }
        for s in 0..300 {
            assert_eq!(iw.negates(s), ic.negates(s), "{order:?} sentence {s}");
        }
        let all = [(0usize, (1u64 << sources.len()) - 1)];
        let words = words_of(&texts);
        for pair in words.windows(2) {
            let (x, y) = (pair[0].as_str(), pair[1].as_str());
            let (a, b) = (fw.fold(x, x.is_ascii()), fw.fold(y, y.is_ascii()));
            let (ca, cb) = (fc.fold(x, x.is_ascii()), fc.fold(y, y.is_ascii()));
            // Where the terms sit: the best sentences for one and for two.
            assert_eq!(
                cover_of(iw, &[a.id], &all),
                cover_of(ic, &[ca.id], &all),
                "{order:?} {x}"
            );
            assert_eq!(
                cover_of(iw, &[a.id, b.id], &all),
                cover_of(ic, &[ca.id, cb.id], &all),
                "{order:?} {pair:?}"
            );
            for k in 0..sources.len() {
                let cited = [(0usize, 1u64 << k)];
                assert_eq!(
                    iw.holds(&a, &cited),
                    ic.holds(&ca, &cited),
                    "{order:?} {}",
                    pair[0]
                );
                let (p, cp) = (
                    index::pair_hash(a.key(), b.key()),
                    index::pair_hash(ca.key(), cb.key()),
                );
                assert_eq!(
                    iw.holds_pair(p, &cited),
                    ic.holds_pair(cp, &cited),
                    "{order:?} {pair:?}"
                );
                // And with either word's capital marked ("University
                // located").
                for (x, y) in [(index::CAPITAL, 0), (0, index::CAPITAL)] {
                    let held = iw.holds_pair(index::pair_hash(a.key() ^ x, b.key() ^ y), &cited);
                    assert_eq!(
                        held,
                        ic.holds_pair(index::pair_hash(ca.key() ^ x, cb.key() ^ y), &cited),
                        "{order:?} {pair:?} capital"
                    );
                    capitals += usize::from(held);
                }
            }
        }
    }
    assert!(
        capitals > 0,
        "the sources write words of the language with a capital"
    );
    assert!(
        warm.index.cache_hits() >= 20,
        "from the third order on, every source is replayed: {}",
        warm.index.cache_hits()
    );
}

#[test]
fn the_cover_by_bits_finds_what_the_cover_by_lists_finds() {
    // A source of 64 sentences (the most a cover by bits takes), one of 70
    // (past it), short ones; terms in one sentence, in several, and in more
    // than a term lists.
    let wide: String = (0..64)
        .map(|i| format!("Line {} holds w{} and w{} and river. ", i, i % 5, i % 3))
        .collect();
    let wider: String = (0..70)
        .map(|i| format!("Row {} has w{}. ", i, i % 4))
        .collect();
    let texts = [
        wide.as_str(),
        "The river w1 runs. The w2 river w1 floods! Nothing w3 here. River w2 again w1.",
        wider.as_str(),
        "w0 w1 w2. w3 w4. w0 w4 river.",
    ];
    let words = words_of(&texts);
    let mut scratch = Scratch::new();
    let (folder, index) = scratch.parts();
    index.want_everything();
    index.start(texts.len(), false);
    for (idx, text) in texts.iter().enumerate() {
        index.add(idx, text, folder, &mut 0);
    }
    let mut ids: Vec<u32> = words
        .iter()
        .map(|w| folder.fold(w, w.is_ascii()).id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    for k in 0..texts.len() {
        let cited = [(0usize, 1u64 << k)];
        for start in 0..ids.len() {
            for len in [1, 2, 3, 5, 8, 40] {
                let some: Vec<u32> = ids
                    .iter()
                    .cycle()
                    .skip(start)
                    .step_by(1 + start % 4)
                    .take(len)
                    .copied()
                    .collect();
                let (mut s1, mut s2) = (0, 0);
                let (mut seats1, mut seats2) = (Vec::new(), Vec::new());
                let like = Like {
                    negations: (start % 3) as u32,
                    claim: if len % 2 == 0 {
                        b"It may rise"
                    } else {
                        b"It rose"
                    },
                };
                let bits = index.cover(&some, &cited, &mut s1, &mut seats1, like);
                let run = index.cited_run(&cited);
                let lists = index.cover_by_lists(&some, &cited, run, &mut s2, &mut seats2, like);
                assert_eq!(
                    (bits, s1, &seats1),
                    (lists, s2, &seats2),
                    "source {k}: {some:?}"
                );
            }
        }
    }
}

#[test]
fn an_index_of_the_wanted_terms_answers_like_an_index_of_every_word() {
    let long: String = (0..40)
        .map(|i| format!("Sentence {i} names Paris and the river. "))
        .collect();
    let texts = [
        long.as_str(),
        "The hotel is in Hawaii.Aulani opened in 2011. It has 21 floors. Its owner stepped down in 2019.",
        "Revenue did not grow. Margins fell! Did churn rise? No, never.",
    ];
    let words = words_of(&texts);
    let mut every = Scratch::new();
    let mut some = Scratch::new();
    // Every third word wanted, and each word's neighbour now and then, so
    // pairs of two wanted words, of one, and of none all occur.
    let wanted: Vec<&String> = words
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 == 0 || i % 7 == 1)
        .map(|(_, w)| w)
        .collect();
    let (fe, ie) = every.parts();
    let (fs, is) = some.parts();
    ie.want_everything();
    ie.start(texts.len(), false);
    is.start(texts.len(), false);
    for w in &wanted {
        is.want(fs.fold(w, w.is_ascii()).id);
    }
    for (idx, text) in texts.iter().enumerate() {
        ie.add(idx, text, fe, &mut 0);
        is.add(idx, text, fs, &mut 0);
    }
    for s in 0..200 {
        assert_eq!(ie.negates(s), is.negates(s), "sentence {s}");
    }
    let all = [(0usize, (1u64 << texts.len()) - 1)];
    for x in &wanted {
        for y in &wanted {
            let (a, b) = (fe.fold(x, x.is_ascii()), fe.fold(y, y.is_ascii()));
            let (sa, sb) = (fs.fold(x, x.is_ascii()), fs.fold(y, y.is_ascii()));
            assert_eq!(
                cover_of(ie, &[a.id, b.id], &all),
                cover_of(is, &[sa.id, sb.id], &all),
                "{x} {y}"
            );
            for k in 0..texts.len() {
                let cited = [(0usize, 1u64 << k)];
                assert_eq!(ie.holds(&a, &cited), is.holds(&sa, &cited), "{x}");
                // Keys are the folder's own: each index is asked with its own.
                for (e, s) in [
                    ((a.key(), b.key()), (sa.key(), sb.key())),
                    ((index::NEGATED, b.key()), (index::NEGATED, sb.key())),
                ] {
                    assert_eq!(
                        ie.holds_pair(index::pair_hash(e.0, e.1), &cited),
                        is.holds_pair(index::pair_hash(s.0, s.1), &cited),
                        "{x} {y}"
                    );
                }
                assert_eq!(
                    ie.sits(a.id, &cited, 0, 3),
                    is.sits(sa.id, &cited, 0, 3),
                    "{x}"
                );
            }
        }
    }
}

/// The grounding of record `rec` (default settings) with a fresh scratch,
/// and with `kept` (a scratch kept across records or set up otherwise).
fn fresh_and_kept(rec: &serde_json::Value, kept: &mut Scratch) -> (Grounding, Grounding) {
    let settings = GroundingSettings::default();
    let answer = rec["answer"].as_str().unwrap_or_default();
    let sources: Vec<&str> = rec["sources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["payload"].as_str())
        .collect();
    let citations = citation::parse(answer, sources.len()).citations;
    let mut fresh = Scratch::new();
    let a = analyze_with(answer, &citations, &sources, &settings, &mut 0, &mut fresh);
    let b = analyze_with(answer, &citations, &sources, &settings, &mut 0, kept);
    (a, b)
}

#[test]
fn a_kept_index_replaying_repeated_sources_scores_like_a_fresh_one() {
    // RAG-shaped records, half their sources from a small pool: a thread's
    // index kept across them replays the repeats from its cache, keeping
    // only the declared terms and their pairs, and must score every record
    // as a fresh index reading each source does.
    let mut kept = Scratch::new();
    for i in 0..60 {
        let line = crate::sample::rag(i, 50);
        let rec: serde_json::Value = serde_json::from_slice(&line).expect("a RAG record");
        let (fresh, replayed) = fresh_and_kept(&rec, &mut kept);
        assert_eq!(fresh, replayed, "record {i}");
    }
    assert!(
        kept.index.cache_hits() > 60,
        "sources replayed: {}",
        kept.index.cache_hits()
    );
}

#[test]
fn grounding_by_the_declared_terms_scores_like_an_index_of_every_word() {
    // The sample stream (short sources: every word kept) and RAG-shaped
    // records (long sources: only the claims' terms kept), each against an
    // index that keeps every word.
    let samples = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/answers.jsonl"
    ))
    .expect("examples/answers.jsonl");
    let rag = (0..40).map(|i| String::from_utf8_lossy(&crate::sample::rag(i, 0)).into_owned());
    // Words found only by another spelling or a synonym, in sources long
    // enough that only the declared terms are kept.
    let filler = "The committee met again in the spring and reviewed the budget. ".repeat(20);
    let variants = [
        ("Her favourite colour was blue[^1].", "Her favorite color was blue."),
        ("She enrolled at the college in two thousand[^1].", "She registered at the college in 2000."),
        ("It ended in the 14th round[^1].", "It ended in the fourteenth round."),
    ]
    .map(|(answer, source)| {
        serde_json::json!({"answer": answer, "sources": [{"payload": format!("{filler}{source} {filler}")}]})
            .to_string()
    });
    let mut every = Scratch::new();
    every.index.want_everything();
    let mut checked = 0;
    for line in samples
        .lines()
        .map(str::to_string)
        .chain(rag)
        .chain(variants)
    {
        // The sample stream holds broken lines on purpose.
        let Ok(rec) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let (declared, all) = fresh_and_kept(&rec, &mut every);
        assert_eq!(declared, all, "{line}");
        checked += usize::from(declared.score.is_some());
    }
    assert!(checked > 100, "{checked}");
}

#[test]
fn cached_sources_score_like_fresh_ones() {
    // RAG-shaped records whose sources mostly repeat, in other slots.
    let mut warm = Scratch::new();
    for i in 0..120 {
        let rec: serde_json::Value =
            serde_json::from_slice(&crate::sample::rag(i, 90)).expect("sample record");
        let (fresh, cached) = fresh_and_kept(&rec, &mut warm);
        assert_eq!(cached, fresh, "record {i}");
    }
    assert!(warm.index.cache_hits() > 500, "{}", warm.index.cache_hits());
}

fn steps_for(answer: &str, sources: &[&str]) -> usize {
    let parsed = citation::parse(answer, sources.len());
    let mut steps = 0;
    analyze_counting(
        answer,
        &parsed.citations,
        sources,
        &GroundingSettings::default(),
        &mut steps,
    );
    steps
}

#[test]
fn work_is_linear_on_adversarial_text() {
    let patterns = [
        "a.", "[^1]", ". [^1]", "x'", "1,", "```\n", "é.", "A ", "!?", "\n",
    ];
    for p in patterns {
        let small = p.repeat(1_000);
        let big = p.repeat(16_000);
        let (s, b) = (steps_for(&small, &["a 1 x"]), steps_for(&big, &["a 1 x"]));
        assert!(b <= s * 16 + 1_000, "{p:?}: {s} -> {b} steps");
        assert!(
            b >= big.len() / 4,
            "{p:?}: counted {b} for {} bytes",
            big.len()
        );
    }
    // Sources: dotted words split into parts, sentence ends.
    for p in ["Ab.", "ab.Cd", "Ab. C ", "é.É", "1.", "A. b ", "x.y.Z"] {
        let small = p.repeat(1_000);
        let big = p.repeat(16_000);
        let answer = "Ab Cd x y Z b[^1].";
        let (s, b) = (steps_for(answer, &[&small]), steps_for(answer, &[&big]));
        assert!(b <= s * 16 + 1_000, "source {p:?}: {s} -> {b} steps");
        assert!(
            b >= big.len(),
            "source {p:?}: counted {b} for {} bytes",
            big.len()
        );
    }
    // One claim repeating a word of a set of opposites (here read as
    // "increase") against a sentence it shares a word with: each place
    // among the opposites is judged once per claim.
    for p in ["5 higher ", "HSBC lower ", "rose fell "] {
        let source = ["HSBC rose 5% in Q3."];
        let s = steps_for(&format!("{}[^1].", p.repeat(1_000)), &source);
        let b = steps_for(&format!("{}[^1].", p.repeat(16_000)), &source);
        assert!(b <= s * 16 + 1_000, "{p:?}: {s} -> {b} steps");
    }
    // One claim and one source sentence, each repeating a period and a
    // rate: each claim word's qualifier look-up reads its own places.
    let p = "Q3 2x ";
    let (small, big) = (p.repeat(1_000), p.repeat(16_000));
    let s = steps_for(&format!("{small}[^1]."), &[&small]);
    let b = steps_for(&format!("{big}[^1]."), &[&big]);
    assert!(b <= s * 16 + 1_000, "{p:?} in both: {s} -> {b} steps");
    // Many claims against a source whose every sentence holds their words:
    // each claim's sentence look-up stays bounded per term.
    let claim = "Alpha beta gamma delta[^1]. ";
    let source = "Alpha beta gamma delta. ";
    let small = steps_for(&claim.repeat(100), &[&source.repeat(100)]);
    let big = steps_for(&claim.repeat(1_600), &[&source.repeat(1_600)]);
    assert!(
        big <= small * 16 + 1_000,
        "claims x sentences: {small} -> {big} steps"
    );
    // Many claims missing an acronym or a name, against a source that
    // grows with them: the scans for their initials stay within budget.
    for claim in ["The ZQ met today[^1]. ", "Zeta Quill met Xu Vo today[^1]. "] {
        let source = "Alpha Beta met Gamma today. ";
        let small = steps_for(&claim.repeat(100), &[&source.repeat(100)]);
        let big = steps_for(&claim.repeat(1_600), &[&source.repeat(1_600)]);
        assert!(
            big <= small * 16 + 1_000,
            "{claim:?} x source: {small} -> {big} steps"
        );
    }
    // Many claims setting a word beside a name, against a source that
    // sets it beside other names more and more often: each claim reads at
    // most a bounded number of the word's places.
    let claim = "Neil Gaiman directed Beowulf[^1]. ";
    let source = "Beowulf is a film directed by Robert Zemeckis. ";
    let small = steps_for(&claim.repeat(100), &[&source.repeat(100)]);
    let big = steps_for(&claim.repeat(1_600), &[&source.repeat(1_600)]);
    assert!(
        big <= small * 16 + 1_000,
        "relation words x source: {small} -> {big} steps"
    );
    // One sentence that writes the word more and more often, with no name
    // beside it: the sentence is read for its opening name once.
    let claim = "Hot Rod is a food magazine[^1].";
    let source = |n: usize| {
        format!(
            "Hot Rod is a magazine. Cooking Light is {}a food magazine.",
            "a food magazine and ".repeat(n)
        )
    };
    let small = steps_for(claim, &[&source(1_000)]);
    let big = steps_for(claim, &[&source(16_000)]);
    assert!(
        big <= small * 16 + 1_000,
        "a word's places in one sentence: {small} -> {big} steps"
    );
}

#[test]
fn a_source_word_of_two_sentences_run_together_is_indexed_by_its_parts() {
    // Sources pasted without a space after the period ("Hawaii.Aulani").
    let source = "He was General Manager of the Disney Aulani Resort in Hawaii.Aulani is a beachside hotel on Oahu.";
    assert_fully_supported("Hawaii[^1]", source);
    assert_fully_supported("Aulani is a beachside hotel[^1].", source);
    // The dotted word itself still matches, and an abbreviation is one sentence.
    assert_fully_supported(
        "He works in Washington, D.C today[^1].",
        "He works in Washington, D.C today.",
    );
}

#[test]
fn capitalised_stop_words_are_stop_words() {
    // "Own" and "The" in a title are not entities: no cap, and no pair
    // the source (which skips stop words in pairs) could not have.
    assert_fully_supported(
        "My Own Worst Enemy[^1]",
        "Lit is best known for their hit song \"My Own Worst Enemy\".",
    );
    assert_fully_supported(
        "The Fantastic The[^1]",
        "Gourley often uses the alias The Fantastic The.",
    );
}

const CURIE: &str = "Marie Curie was born in Warsaw in 1867. She won the Nobel Prize in Physics in 1903 together with Pierre Curie.";

#[test]
fn a_faithful_claim_drawing_on_two_sentences_is_supported_and_ranks_above_contradictions() {
    let min = GroundingSettings::default().min_support;
    let faithful = run(
        "Marie Curie, who was born in Warsaw, won the Nobel Prize in Physics in 1903[^1].",
        &[CURIE],
    );
    let f = faithful.claims[0].support.unwrap();
    assert!(f >= min, "{faithful:?}");
    for wrong in [
        "Marie Curie did not win the Nobel Prize in Physics in 1903[^1].",
        "Marie Curie won the Nobel Prize in Chemistry in 1903[^1].",
    ] {
        let g = run(wrong, &[CURIE]);
        let w = g.claims[0].support.unwrap();
        assert!(w < min && w < f, "{wrong}: {g:?}");
    }
}

/// Sources that cut sentences where a naive splitter would not, or not
/// where it would: initials, abbreviations, sentences glued together.
const TRICKY: &[&str] = &[
    "Ulysses S. Grant was elected in 1868.",
    "The office is at 220 S. Main Street in Dallas.",
    "He served as a U.S. Senator from Ohio.",
    "She was born on 6 March (O.S.) in Moscow.",
    "The team plays at Gerald J. Ford Stadium.",
    "Dr. Jonathan Crane does not declare him fit for trial.",
    "It hosts the Bathurst 12 Hour.Mount Panorama Circuit is a motor racing track.",
    "Cooking Light was founded in 1987.Hot Rod is a monthly car magazine.",
    "Sales rose 14% in the fourteenth week, e.g. in Texas.",
    "The single peaked at No. 21 on the Billboard Hot 100.",
    "Asked about a rate cut, the board said no.",
    "The bank is expected to raise rates.",
    "The bank did not raise rates in May.",
    "The bank raised rates.",
    "Rates were 5% higher than a year ago.",
    "Jazz records sold well in the 1920s.Radio sales rose after the war.",
    "The talks ended at 5 pm.Shares rose 3% by the close.",
    "Revenue rose to $5bn.The lender said costs fell.",
    "Pakistan is ranked 13th.India kept its place in the top five.",
    "The tranche is EUR30 million and profit was USD1.5bn in 2018\u{2013}19.",
    "It was 30\u{b0}C.Sales fell in the '90s by 1\u{202f}200 units.",
    "He earned $1\u{a0}million a year, a profes\u{ad}sional's pay.",
    "According to Source 1, the fee is $3.00 (Source 2).",
    "The bank lent $5 bln to 12 firms.",
];

#[test]
fn the_number_sign_is_not_a_negation() {
    let source = "The single peaked at No. 21 on the Billboard Hot 100 in 1967.";
    // The position without its sign, and with a sign the source lacks.
    assert_fully_supported(
        "The single peaked at 21 on the Billboard Hot 100 in 1967[^1].",
        source,
    );
    assert_fully_supported(
        "It peaked at No.21 on the Billboard Hot 100[^1].",
        "It peaked at 21 on the Billboard Hot 100.",
    );
    // A negation next to it still is one.
    let min = GroundingSettings::default().min_support;
    let g = run(
        "The single did not peak at No. 21 on the Billboard Hot 100[^1].",
        &[source],
    );
    assert!(g.claims[0].support.unwrap() < min, "{g:?}");
}

#[test]
fn a_verbatim_copy_scores_one() {
    let source = TRICKY.join(" ");
    for answer in TRICKY {
        let a = format!("{answer}[^1]");
        let g = run(&a, &[&source]);
        for c in &g.claims {
            if let Some(s) = c.support {
                assert_eq!(s, 1.0, "{a}: {g:?}");
            }
        }
        assert_eq!(g.score, Some(1.0), "{a}: {g:?}");
    }
    let all = format!("{source}[^1]");
    assert_eq!(run(&all, &[&source]).score, Some(1.0));
}

#[test]
fn negation_is_strict_both_ways() {
    let min = GroundingSettings::default().min_support;
    let source = "The bridge was opened in 1932 and carries a railway line across the river.";
    let g = run(
        "The bridge was not opened in 1932 and carries a railway line across the river[^1].",
        &[source],
    );
    assert!(g.claims[0].support.unwrap() < min, "{g:?}");
    assert!(g.claims[0].unsupported_terms.contains(&"not".to_string()));
    // The source negates, the claim does not.
    let negated = "The bridge was never opened to traffic and carries no railway line.";
    let g = run(
        "The bridge was opened to traffic and carries a railway line[^1].",
        &[negated],
    );
    let c = &g.claims[0];
    assert!(c.support.unwrap() < min && c.contradicted, "{g:?}");
    assert!(unsupported_detail(0, c).ends_with("; its best sentence in the source negates it"));
    // Both negate: supported.
    let g = run("The bridge was never opened to traffic[^1].", &[negated]);
    assert_eq!(g.claims[0].support, Some(1.0), "{g:?}");
    // A negation elsewhere in the sentence, of another word, is no contradiction.
    let g = run(
        "Dr. Jonathan Crane met Falcone in prison[^1].",
        &["In prison, Falcone met Dr. Jonathan Crane, who does not declare him fit for trial."],
    );
    assert!(!g.claims[0].contradicted, "{g:?}");
    assert!(g.claims[0].support.unwrap() >= min, "{g:?}");
}

#[test]
fn free_of_a_word_negates_it_as_without_does() {
    let min = GroundingSettings::default().min_support;
    // Said either way, the same fee: no negation is missing, and no word
    // is held only negated against the claim.
    for (claim, source) in [
        (
            "Withdrawals are free of charge[^1].",
            "Withdrawals are not charged.",
        ),
        (
            "Withdrawals are not charged[^1].",
            "Withdrawals are free of charge.",
        ),
        (
            "The account is free of fees[^1].",
            "The account has no fees.",
        ),
        (
            "There is no charge for withdrawals[^1].",
            "Withdrawals are free of charge.",
        ),
    ] {
        let g = run(claim, &[source]);
        let c = &g.claims[0];
        assert!(c.support.unwrap() >= min, "{claim}: {g:?}");
    }
    // A claim that drops it, or adds it, is held to it.
    let g = run(
        "Withdrawals are charged[^1].",
        &["Withdrawals are free of charge."],
    );
    let c = &g.claims[0];
    assert!(c.contradicted && c.support.unwrap() < min, "{g:?}");
    let g = run(
        "Withdrawals are free of charge[^1].",
        &["Withdrawals are charged at £2 each."],
    );
    let c = &g.claims[0];
    assert!(c.support.unwrap() < min, "{g:?}");
    assert!(unsupported_detail(0, c).contains("\"free of\""), "{g:?}");
    // "free" alone is a word of its own, found in "free of".
    assert_fully_supported("The account is free[^1].", "The account is free of charge.");
}

#[test]
fn a_comparison_the_sources_do_not_state_breaks_the_claim() {
    let dates = "Kim Clijsters was born on 8 June 1983 in Bilzen, Belgium. \
                 Mary Pierce was born on 15 January 1975 in Montreal, Canada.";
    for claim in [
        "Kim Clijsters, born in Bilzen, Belgium, is older than Mary Pierce, born in Montreal, Canada[^1].",
        "Mary Pierce, born in Montreal, Canada, was born first[^1].",
    ] {
        let g = run(claim, &[dates]);
        let c = &g.claims[0];
        assert!(
            c.compared && c.support.unwrap() <= model::BROKEN,
            "{claim}: {g:?}"
        );
        assert!(
            unsupported_detail(0, c).ends_with("; the source states no such comparison"),
            "{claim}: {g:?}"
        );
    }
    // Stated by the source: found like any word.
    assert_fully_supported(
        "Deposits grew faster than loans in 2023[^1].",
        "Deposits grew faster than loans in 2023.",
    );
    // A comparative that names a thing, or a span of time, is an ordinary
    // word: missing, but no broken rule.
    for (claim, source) in [
        (
            "Lady Amelia Windsor is the younger sister of Edward Windsor, Lord Downpatrick[^1].",
            "Lady Amelia Windsor is the sister of Edward Windsor, Lord Downpatrick, and Lady Marina Windsor.",
        ),
        (
            "The bank moved its headquarters to Leeds years later[^1].",
            "The bank was founded in York and moved its headquarters to Leeds in 1997.",
        ),
    ] {
        let g = run(claim, &[source]);
        let c = &g.claims[0];
        assert!(
            !c.compared && c.support.unwrap() > model::BROKEN,
            "{claim}: {g:?}"
        );
    }
}

#[test]
fn a_cited_question_the_sources_do_not_ask_is_not_supported() {
    let source = "Tom Brady won seven Super Bowls. The bank raised its rates in March.";
    // Most of their words are found: the model alone passes them.
    for claim in [
        "Did you know the bank raised its rates in March[^1]?",
        "Did Tom Brady win seven Super Bowls[^1]?",
        "What did the bank raise in March[^1]?",
        "Yes[^1]. Why did the bank raise its rates in March[^1]?",
    ] {
        let g = run(claim, &[source]);
        let c = g.claims.last().unwrap();
        assert!(
            c.asked && c.support.unwrap() <= model::BROKEN,
            "{claim}: {g:?}"
        );
        assert!(
            unsupported_detail(0, c).ends_with("; a question, which the source does not ask"),
            "{claim}: {g:?}"
        );
    }
    // A question without a marker of its own, before a cited answer,
    // asks the reader: it is judged by its words, as a statement is.
    let g = run(
        "Why did the bank raise its rates in March? Tom Brady won seven Super Bowls[^1].",
        &[source],
    );
    assert!(!g.claims[0].asked, "{g:?}");
    assert!(g.claims[0].support.unwrap() > model::BROKEN, "{g:?}");
    // A question the source asks, copied: it states what the source does.
    assert_fully_supported(
        "Does the account pay interest monthly[^1]?",
        "Does the account pay interest monthly? Yes, on the first day of each month.",
    );
    // A question mark inside a quotation ends a title the claim states:
    // the claim is judged as a statement, here with a word missing.
    let g = run(
        "The band recorded the song \"What's That Sound?\"[^1]",
        &["In 1967 the band recorded \"What's That Sound?\" in Los Angeles."],
    );
    let c = &g.claims[0];
    assert!(!c.asked && c.support.unwrap() > model::BROKEN, "{g:?}");
    assert_eq!(c.unsupported_terms, ["song"], "{g:?}");
}

#[test]
fn a_negation_reaches_past_yet_and_an_adverb() {
    let min = GroundingSettings::default().min_support;
    for (claim, source) in [
        (
            "The merger has been approved by regulators[^1].",
            "The merger has not yet been approved by regulators. It was announced in May.",
        ),
        (
            "The bank commented on the report[^1].",
            "The bank did not immediately comment on the report.",
        ),
        (
            "The fund is open to new investors[^1].",
            "The fund is not currently open to new investors.",
        ),
    ] {
        let g = run(claim, &[source]);
        let c = &g.claims[0];
        assert!(c.contradicted && c.support.unwrap() < min, "{claim}: {g:?}");
    }
    // The claim that keeps the negation is the source's statement.
    assert_fully_supported(
        "The merger has not yet been approved by regulators[^1].",
        "The merger has not yet been approved by regulators. It was announced in May.",
    );
}

#[test]
fn not_only_but_states_what_follows() {
    let source = "Regular running not only strengthens the heart muscle, but it also improves the body's use of oxygen.";
    assert_fully_supported("Regular running strengthens the heart muscle[^1].", source);
    assert_fully_supported(
        "Regular running not only strengthens the heart muscle, but it also improves the body's use of oxygen[^1].",
        source,
    );
    // Without its "but", the "not" negates as any other.
    let g = run(
        "That was just where I wanted it[^1].",
        &["He said that was not just where I wanted it."],
    );
    assert!(g.claims[0].contradicted, "{g:?}");
    let g = run(
        "Regular running strengthens the heart muscle[^1].",
        &[
            "Regular running does not strengthen the heart muscle, but it improves the body's use of oxygen.",
        ],
    );
    assert!(g.claims[0].contradicted, "{g:?}");
}

#[test]
fn a_negation_in_brackets_negates_nothing_past_them() {
    // The "without" of the aside negates nothing after its bracket: the
    // claim that leaves the aside out is the source's own statement.
    let source = "Kasich has pitched the importance of Ohio (a Republican cannot win without it) as a reason he should be the nominee.";
    let g = run(
        "Kasich has pitched the importance of Ohio as a reason he should be the nominee[^1].",
        &[source],
    );
    let min = GroundingSettings::default().min_support;
    assert!(!g.claims[0].contradicted, "{g:?}");
    assert!(g.claims[0].support.unwrap() >= min, "{g:?}");
    // A bracket that opens and closes after the negation does not end it.
    let g = run(
        "The bill was approved by the Senate[^1].",
        &["The bill was not (as it was) approved by the Senate."],
    );
    assert!(g.claims[0].contradicted, "{g:?}");
}

#[test]
fn a_no_that_answers_a_question_negates_nothing() {
    let source = "The fund is not open to retail investors. It is reserved for institutions.";
    // The answer's "No," answers the question; the "not" after it is the
    // one negation, and the source states it.
    assert_fully_supported("No, the fund is not open to retail investors[^1].", source);
    assert_fully_supported("No, it is reserved for institutions[^1].", source);
    // The "No," does not stand for the source's "not": the claim that
    // drops the "not" is contradicted.
    let g = run("No, the fund is open to retail investors[^1].", &[source]);
    let c = &g.claims[0];
    let min = GroundingSettings::default().min_support;
    assert!(c.contradicted && c.support.unwrap() < min, "{g:?}");
    // A source's "No," (a questions-and-answers page) negates nothing
    // after it either.
    assert_fully_supported(
        "Accounts opened online get a welcome bonus[^1].",
        "Is there a fee for opening an account? No, accounts opened online get a welcome bonus instead.",
    );
    // Also after a sentence that closes a bracket after its period: the
    // answer copied verbatim is the source's own sentence.
    assert_fully_supported(
        "No, all the members were reasonable men[^1].",
        "(He received his doctorate in 1952.) No, all the members were reasonable men.",
    );
    // Anywhere else, or before a noun, "no" is a negation.
    assert_flagged_missing(
        "There is no fee for accounts opened online[^1].",
        "There is a fee for accounts opened online.",
        &["no"],
    );
    assert_flagged_missing(
        "No fee is charged for accounts opened online[^1].",
        "A fee is charged for accounts opened online.",
        &["no"],
    );
}

/// What the first claim of `answer` against `source` is opposed by, and
/// whether it is flagged.
fn opposed(answer: &str, source: &str) -> (Option<&'static str>, bool) {
    let g = run(answer, &[source]);
    let c = &g.claims[0];
    (
        c.opposed,
        c.support.unwrap() < GroundingSettings::default().min_support,
    )
}

#[test]
fn a_word_whose_opposite_the_best_sentence_states_is_contradicted() {
    // Every other word matches; the swapped one is the claim's error.
    assert_eq!(
        opposed("Net revenue retention rose from 118% to 109%[^1].", NRR),
        (Some("fell"), true)
    );
    for (claim, source, word) in [
        (
            "The fund has a minimum investment of $1,000[^1].",
            "The fund has a maximum investment of $1,000 per customer.",
            "maximum",
        ),
        (
            "Interest is paid monthly[^1].",
            "Interest is paid annually on the anniversary of the account.",
            // The first word of its class the sentence holds by stem.
            "annual",
        ),
        (
            "The merger was approved by regulators in June[^1].",
            "The merger was rejected by regulators in June.",
            "reject",
        ),
        (
            "The policy covers flood damage[^1].",
            "The policy excludes flood damage and earthquake damage.",
            "exclude",
        ),
        (
            "The card offers unlimited cashback on groceries[^1].",
            "The card offers limited cashback on groceries.",
            "limited",
        ),
    ] {
        assert_eq!(opposed(claim, source), (Some(word), true), "{claim}");
    }
    // The change a number states ("up 5%", "$2bn higher") is opposed as
    // the verb is, named by the change it is read as.
    for (claim, source, word) in [
        (
            "Net income fell 5% on the year[^1].",
            "Net income was $5bn, up 5% on the year.",
            "increase",
        ),
        (
            "Net income rose 5% on the year[^1].",
            "Net income was $5bn, down 5% on the year.",
            "decrease",
        ),
        (
            "Costs fell by $2bn[^1].",
            "Costs were $2bn higher than a year earlier.",
            "increase",
        ),
        (
            "Deposits grew 3%[^1].",
            "Deposits were 3% lower at the end of the year.",
            "decrease",
        ),
        // The claim's second best sentence counts too: results are
        // written in short sentences.
        (
            "Net income fell 5% on the year[^1].",
            "Net income was $5bn. Up 5% on the year.",
            "increase",
        ),
        // A claim's change is read as its verb is, too.
        (
            "Profits were up 5% in the quarter[^1].",
            "Profits were down 5% in the quarter.",
            "decrease",
        ),
        (
            "Revenue was 5% higher[^1].",
            "Revenue fell 5% to $2bn.",
            "fell",
        ),
    ] {
        assert_eq!(opposed(claim, source), (Some(word), true), "{claim}");
    }
    // Words of markets and results.
    for (claim, source, word) in [
        (
            "Shares gained 3% on Tuesday[^1].",
            "Shares fell 3% on Tuesday.",
            "fell",
        ),
        (
            "The fund outperformed its benchmark last year[^1].",
            "The fund underperformed its benchmark last year.",
            "underperform",
        ),
        (
            "Inflation accelerated to 3% in March[^1].",
            "Inflation slowed to 3% in March.",
            "slowed",
        ),
        (
            "The bank's capital ratio improved to 13%[^1].",
            "The bank's capital ratio deteriorated to 13%.",
            "deteriorate",
        ),
        (
            "The euro strengthened against the dollar[^1].",
            "The euro weakened against the dollar.",
            "weaken",
        ),
        (
            "The stock hit a record high on Friday[^1].",
            "The stock hit a record low on Friday.",
            "low",
        ),
        (
            "The company reported a surplus of $2m[^1].",
            "The company reported a shortfall of $2m.",
            "shortfall",
        ),
        (
            "Profit doubled in 2023[^1].",
            "Profit fell in 2023.",
            "fell",
        ),
        (
            "The bank acquired the insurer in 2021[^1].",
            "The bank divested the insurer in 2021.",
            "divest",
        ),
        (
            "The firm booked a gain of $5m on the sale[^1].",
            "The firm booked a loss of $5m on the sale.",
            "loss",
        ),
        (
            "The bank was solvent at the end of 2023[^1].",
            "The bank was insolvent at the end of 2023.",
            "insolvent",
        ),
        (
            "The payments were legal under the rules[^1].",
            "The payments were unlawful under the rules.",
            "unlawful",
        ),
        (
            "The bank hired 50 staff in 2023[^1].",
            "The bank fired 50 staff in 2023.",
            "fired",
        ),
        (
            "The shares are listed in London[^1].",
            "The shares are unlisted in London.",
            "unlisted",
        ),
        (
            "The branch opened in 2020[^1].",
            "The branch closed in 2020.",
            "closed",
        ),
        (
            "The merger was approved by regulators in June[^1].",
            "The merger was blocked by regulators in June.",
            "block",
        ),
        (
            "The fee is waived for the first year[^1].",
            "The fee is charged from the first year.",
            "charge",
        ),
        // Held by its best sentence only through a synonym ("profit" by
        // "net"), a word is still judged.
        (
            "The bank reported a net profit of $3bn[^1].",
            "The bank reported a net loss of $3bn.",
            "loss",
        ),
        // A period's noun said as a rate is its adverb.
        (
            "The account costs £5 a month[^1].",
            "The account costs £5 a year.",
            "yearly",
        ),
        (
            "Interest is paid once a year[^1].",
            "Interest is paid quarterly.",
            "quarterly",
        ),
        (
            "The bank earns £5m a year from fees[^1].",
            "The bank earns £5m a month from fees.",
            "monthly",
        ),
        (
            "The bank will close 30 branches next year[^1].",
            "The bank will close 30 branches by last year.",
            "last",
        ),
        (
            "The deposits are insured[^1].",
            "The deposits are uninsured.",
            "uninsured",
        ),
        // A period's noun states its adverb ("a year" is "yearly").
        (
            "Interest is paid monthly[^1].",
            "Interest is paid once a year.",
            "yearly",
        ),
        // The words of those sets whose stems other words share, written.
        (
            "The bank sold unsecured loans[^1].",
            "The bank sold secured loans and other securities.",
            "secured",
        ),
        (
            "The firm has 500 employers[^1].",
            "The firm has 500 employees.",
            "employee",
        ),
        (
            "The country's exports of cars grew 5% in 2023[^1].",
            "The country's imports of cars grew 5% in 2023, an important change.",
            "import",
        ),
        (
            "The bank beat analyst expectations in the quarter[^1].",
            "The bank missed analyst expectations in the quarter.",
            "missed",
        ),
        (
            "The fund is open to new investors[^1].",
            "The fund is closed to new investors.",
            "closed",
        ),
        (
            "The chief executive joined the board in 2019[^1].",
            "The chief executive left the board in 2019.",
            "left",
        ),
        (
            "The bank entered the US market in 2015[^1].",
            "The bank exited the US market in 2015.",
            "exit",
        ),
        (
            "The bank gained market share in 2023[^1].",
            "The bank lost market share in 2023.",
            "lost",
        ),
        (
            "The majority of branches will close[^1].",
            "A minority of branches will close.",
            "minority",
        ),
        // A unit of time right after a number is a length.
        (
            "Transfers take two hours to clear[^1].",
            "Transfers take two days to clear.",
            "day",
        ),
        (
            "The offer lasts for 30 days[^1].",
            "The offer lasts for 30 months.",
            "month",
        ),
        (
            "The bank sold a 10-year bond[^1].",
            "The bank sold a 10-month bond.",
            "month",
        ),
    ] {
        assert_eq!(opposed(claim, source), (Some(word), true), "{claim}");
    }
    let g = run("Net revenue retention rose from 118% to 109%[^1].", &[NRR]);
    let w = explain::unsupported_detail(0, &g.claims[0]);
    assert!(w.ends_with("; the source says \"fell\" instead"), "{w}");
    // A word of the same meaning, the claim's own word beside the
    // opposite, an opposite the sentence negates, or a claim that says
    // both: no contradiction.
    for (claim, source) in [
        ("Interest is paid yearly[^1].", "Interest is paid annually."),
        (
            "Revenue increased in 2023[^1].",
            "Revenue rose in 2023 while costs fell.",
        ),
        (
            "Revenue rose in 2023[^1].",
            "Revenue rose in 2023 while costs fell.",
        ),
        (
            "Revenue rose in 2023[^1].",
            "Revenue did not decline in 2023.",
        ),
        (
            "Net income increased 5%[^1].",
            "Net income was $5bn, up 5% on the year.",
        ),
        ("Costs fell by $2bn[^1].", "Costs were $2bn lower."),
        ("Shares gained 3%[^1].", "Shares rose 3%."),
        (
            "The bank acquired the insurer in 2021[^1].",
            "The bank bought the insurer in 2021.",
        ),
        (
            "The euro strengthened against the dollar[^1].",
            "The euro grew stronger against the dollar.",
        ),
        // A source's noun of the same stem as an excluded word states
        // nothing: "regulated" is in no set.
        (
            "The exchange is unregulated[^1].",
            "Regulators warned that the exchange is unregulated.",
        ),
        // Nor does a word that shares the stem of a word of a set and is
        // another word: "employs" ("employer"), "important" ("import"),
        // "securities" ("secured"), "income" ("incoming"), "authorities"
        // ("authorized"), "law" ("lawful"), "options" ("optional"),
        // "adjusted" ("adjustable"), "insurance" ("insured"), "close"
        // ("closed"), "a fire" ("fired").
        (
            "The bank has about 20,000 employees[^1].",
            "The bank employs about 20,000 people.",
        ),
        (
            "The country's exports grew[^1].",
            "The country's important industries grew.",
        ),
        (
            "The bank sold unsecured loans[^1].",
            "The bank sold loans and securities.",
        ),
        (
            "Outgoing payments are free[^1].",
            "Payments from income are free.",
        ),
        (
            "The card payments were unauthorized[^1].",
            "The authorities said the card payments were made.",
        ),
        (
            "The practice was unlawful[^1].",
            "The law covered the practice.",
        ),
        (
            "A deposit is required[^1].",
            "Customers have several deposit options.",
        ),
        (
            "The loan has a fixed rate[^1].",
            "The loan rate is adjusted.",
        ),
        (
            "The deposits are uninsured[^1].",
            "Insurance covers the deposits.",
        ),
        (
            "The branch closed in 2020[^1].",
            "The branch is close to the station, built in 2020.",
        ),
        (
            "The bank fired 50 staff[^1].",
            "A fire hit the bank's 50 staff.",
        ),
        // A word after "non" says its opposite, on either side.
        (
            "The exchange is unregulated[^1].",
            "The exchange is non-regulated.",
        ),
        (
            "The exchange is non-regulated[^1].",
            "The exchange is unregulated.",
        ),
        ("The loan is unsecured[^1].", "The loan is non-secured."),
        // A unit of time after no number names no length.
        (
            "The bank has grown its lending for years[^1].",
            "The bank has grown its lending for months.",
        ),
        (
            "The loan runs for 2 years[^1].",
            "The loan runs for 2 years, or 24 months.",
        ),
        // Nor does one after a number its best sentence lacks.
        (
            "The theatre staged a 24-hour performance in 2011[^1].",
            "In 2011 the theatre staged a performance for its 400th year.",
        ),
        // A period's noun that is no rate is no period.
        (
            "The book was published within a year of his death[^1].",
            "The book was published months after his death.",
        ),
        (
            "The account costs £5 a month[^1].",
            "The account has a monthly fee of £5.",
        ),
        (
            "The exchange is unregulated[^1].",
            "The exchange is non regulated.",
        ),
        // An opposite in a sentence that holds none of the claim's words
        // is about something else.
        (
            "Deposits expanded in 2023[^1].",
            "Deposits reached $50bn in 2023. Loans shrank.",
        ),
        // "lower" without a number is itself, not a change.
        (
            "Rates were lower[^1].",
            "Rates were lower than a year earlier.",
        ),
        (
            "At higher altitudes water boils at lower temperatures[^1].",
            "As the altitude increases, water boils at lower temperatures.",
        ),
    ] {
        assert_eq!(opposed(claim, source).0, None, "{claim}");
    }
    // A claim that negates is the negation rule's.
    assert_eq!(
        opposed("Revenue did not rise in 2023[^1].", "Revenue fell in 2023.").0,
        None
    );
}

#[test]
fn a_number_the_sources_bound_the_other_way_is_contradicted() {
    for (claim, source, phrase) in [
        (
            "Customers can make at least six withdrawals per month[^1].",
            "Customers can make at most six withdrawals per month.",
            "at most",
        ),
        (
            "The fee is up to 5% of the transfer amount[^1].",
            "The fee is at least 5% of the transfer amount.",
            "at least",
        ),
        (
            "Deposits over $250,000 are insured[^1].",
            "Deposits under $250,000 are insured by the FDIC.",
            "under",
        ),
        (
            "Loans of no more than $10,000 need a guarantor[^1].",
            "Loans of more than $10,000 need a guarantor.",
            "more than",
        ),
        (
            "The branch opened before 2020[^1].",
            "The branch opened after 2020 in the old town.",
            "after",
        ),
        // A word bounded in time, everywhere the source writes it.
        (
            "Withdrawals are allowed before the maturity date[^1].",
            "Withdrawals are allowed after the maturity date without penalty.",
            "after",
        ),
    ] {
        assert_eq!(opposed(claim, source), (Some(phrase), true), "{claim}");
    }
    // Bounded the claim's way somewhere, not bounded, or bounded in
    // another sense: no contradiction.
    for (claim, source) in [
        (
            "Customers can make at least six withdrawals per month[^1].",
            "Customers can make at least six withdrawals per month, and at most six transfers.",
        ),
        (
            "The fee is 5% of the amount[^1].",
            "The fee is up to 5% of the amount.",
        ),
        (
            "Prices rose after 2020[^1].",
            "Prices rose more than 2020 levels.",
        ),
        // "15" is not the "5" of "up to 15%".
        (
            "The fee is at least 5%[^1].",
            "The fee is up to 15% and at least 5%.",
        ),
        // A word the source also writes unbounded, or a name.
        (
            "The fee is paid before the meeting[^1].",
            "The fee is paid after the meeting. The meeting is held each month.",
        ),
        (
            "Smith was hired after Stewart withdrew[^1].",
            "Smith was hired before Stewart withdrew from the race.",
        ),
    ] {
        assert_eq!(opposed(claim, source).0, None, "{claim}");
    }
}

#[test]
fn a_yes_no_question_in_a_source_states_nothing() {
    let faq = "Does the account pay interest monthly? Interest is paid once a year. \
               What is the minimum balance? It is $500.";
    let min = GroundingSettings::default().min_support;
    // Asked, not stated: the words of the question support nothing.
    assert_flagged_missing(
        "The account pays interest monthly[^1].",
        faq,
        &["account", "monthly"],
    );
    assert_fully_supported("Interest is paid once a year[^1].", faq);
    // A question that asks "what" names what the answer after it is about.
    let g = run("The minimum balance is $500[^1].", &[faq]);
    assert!(g.claims[0].unsupported_terms.is_empty(), "{g:?}");
    assert!(g.claims[0].support.unwrap() >= min, "{g:?}");
    // An answer that asks the question itself finds it.
    assert_fully_supported("Does the account pay interest monthly?[^1]", faq);
    // After a "Q:" label too; the "No," that answers it negates nothing.
    let qa = "Q: Is there a fee for early withdrawal? A: No, early withdrawals are free.";
    assert_flagged_missing("There is a fee for early withdrawal[^1].", qa, &["fee"]);
    assert_fully_supported("Early withdrawals are free[^1].", qa);
    // A sentence that opens as a statement states what comes before its
    // question mark.
    assert_fully_supported(
        "153 minutes of a grown man whacking two dolls together[^1].",
        "153 minutes of a grown man whacking two dolls together, has the meaning of film changed? It has.",
    );
}

#[test]
fn a_source_s_question_scores_alike_from_the_cache_whether_or_not_the_answer_asks() {
    // The same questions-and-answers page cited by answers that ask a
    // question (its questions are read, and it may be summarised) and by
    // answers that do not (they are left out): a thread's kept index must
    // score each as a fresh one does.
    let faq = "Does the account pay interest monthly? Interest is paid once a year. \
               Can I close it online? Yes, from the app.";
    let answers = [
        "Interest is paid once a year[^1].",
        "Does the account pay interest monthly?[^1] It is paid once a year[^1].",
        "The account pays interest monthly[^1].",
        "Can I close it online?[^1] Yes, from the app[^1].",
        "You can close the account online from the app[^1].",
    ];
    let mut kept = Scratch::new();
    for round in 0..3 {
        for answer in answers {
            let rec = serde_json::json!({"answer": answer, "sources": [{"payload": faq}]});
            let (fresh, replayed) = fresh_and_kept(&rec, &mut kept);
            assert_eq!(fresh, replayed, "round {round}: {answer}");
        }
    }
    assert!(kept.index.cache_hits() > 0, "{}", kept.index.cache_hits());
}

#[test]
fn spelling_variants_are_found() {
    assert_fully_supported(
        "It was the people’s choice in the 2000's[^1].",
        "It was the people's choice in the 2000s.",
    );
    assert_fully_supported(
        "It ended in the fourteenth round[^1].",
        "It ended in the 14th round.",
    );
    assert_fully_supported(
        "It ended in the 14th round[^1].",
        "It ended in the fourteenth round.",
    );
    assert_fully_supported("She didn’t win[^1].", "She didn't win.");
    // UK and US spellings, both ways, inflected.
    assert_fully_supported(
        "It was her favourite colour[^1].",
        "It was her favorite color.",
    );
    assert_fully_supported(
        "The students enrolled in the autumn programme[^1].",
        "The students enrolled in the autumn program.",
    );
    assert_fully_supported(
        "He analyzed the center's data[^1].",
        "He analysed the centre's data.",
    );
    // A synonym, and a verb's more general word.
    assert_fully_supported(
        "Students can enroll online before the course starts[^1].",
        "Students can register online before the course starts.",
    );
    assert_fully_supported(
        "The big house stands on the hill[^1].",
        "The large house stands on the hill.",
    );
    // A word that is neither a variant nor a synonym is still missing.
    let g = run(
        "Students can enroll online before the course starts[^1].",
        &["Students can apply online before the course starts."],
    );
    assert_eq!(g.claims[0].unsupported_terms, ["enroll"], "{g:?}");
}

#[test]
fn every_record_finds_a_word_by_its_alternates_on_a_kept_thread() {
    // A thread asks for a variants group's alternates once per record: the
    // same claim grounded again, and after another record, still finds its
    // words by the source's spellings and synonyms. Long sources, so only
    // the declared terms are kept.
    let filler = "The committee met again in the spring and reviewed the budget. ".repeat(20);
    let record = |answer: &str, source: &str| serde_json::json!({"answer": answer, "sources": [{"payload": format!("{filler}{source} {filler}")}]});
    let favourite = record(
        "Her favourite colour was blue[^1].",
        "Her favorite color was blue.",
    );
    let enrolled = record(
        "She enrolled in the autumn programme[^1].",
        "She registered in the autumn program.",
    );
    let mut kept = Scratch::new();
    for (i, rec) in [&favourite, &favourite, &enrolled, &favourite, &enrolled]
        .into_iter()
        .enumerate()
    {
        let (fresh, again) = fresh_and_kept(rec, &mut kept);
        assert!(fresh.claims[0].unsupported_terms.is_empty(), "{fresh:?}");
        assert_eq!(again, fresh, "record {i}");
    }
}

#[test]
fn word_variants_come_from_the_claim_word_alone() {
    use super::memo::Folder;
    let mut folder = Folder::new();
    // The alternates as word ids (what the index knows a word by).
    let alternates = |folder: &mut Folder, w: &str| {
        let info = folder.fold(w, true);
        folder.alternates(&info).to_vec()
    };
    let favourite = alternates(&mut folder, "favourite");
    assert_eq!(favourite, alternates(&mut folder, "Favourite"));
    assert!(favourite.contains(&folder.fold("favorite", true).id));
    let enrolled = alternates(&mut folder, "enrolled");
    assert!(enrolled.contains(&folder.fold("registered", true).id));
    // Stop words and negations have none: they are never looked up.
    assert!(alternates(&mut folder, "the").is_empty());
    assert!(alternates(&mut folder, "not").is_empty());
}

#[test]
fn words_scattered_over_a_long_source_are_not_support() {
    let min = GroundingSettings::default().min_support;
    // Thirty unrelated sentences, each holding one of the claim's words.
    let words = [
        "Helsinki",
        "orchestra",
        "premiered",
        "symphony",
        "Sibelius",
        "conducted",
    ];
    let mut scattered = String::new();
    for i in 0..30 {
        scattered.push_str(&format!(
            "Paragraph {i} talks about {} and other matters entirely. ",
            words[i % words.len()]
        ));
    }
    let claim = "Sibelius conducted the Helsinki orchestra[^1].";
    let g = run(claim, &[&scattered]);
    let c = &g.claims[0];
    assert!(c.unsupported_terms.is_empty(), "{c:?}");
    assert!(c.support.unwrap() < min, "{c:?}");
    assert!(!c.apart_terms.is_empty(), "{c:?}");
    // The same words in one of those sentences: supported.
    let together = format!("{scattered}Sibelius conducted the Helsinki orchestra.");
    assert_eq!(run(claim, &[&together]).claims[0].support, Some(1.0));
}

#[test]
fn a_claim_may_merge_sentences_of_two_cited_sources() {
    let min = GroundingSettings::default().min_support;
    let sources = [
        "Southwest Georgia Regional Airport serves Albany.",
        "Shelby County lies in Tennessee. Memphis is its seat.",
    ];
    let g = run(
        "Southwest Georgia Regional Airport serves Albany, and Shelby County lies in Tennessee[^1][^2].",
        &sources,
    );
    assert!(g.claims[0].support.unwrap() >= min, "{g:?}");
}

#[test]
fn claims_and_sources_share_the_sentence_rule() {
    use super::claims::sentence_end;
    let ends = |t: &str| -> Vec<usize> {
        let b = t.as_bytes();
        (0..b.len())
            .filter(|&i| sentence_end(b, i, b.len()).1)
            .collect()
    };
    assert!(ends("Ulysses S. Grant won.").len() == 1);
    assert!(ends("He met Mr. Smith at 220 S. Main St. in May.").len() == 1);
    assert!(ends("A U.S. Senator (O.S.) spoke, e.g. here.").len() == 1);
    assert_eq!(ends("the Bathurst 12 Hour.Mount Panorama is").len(), 1);
    // A year or a closing quote glued to the next sentence ends its own.
    assert_eq!(ends("founded in 1987.Hot Rod is").len(), 1);
    assert_eq!(ends("the \"Fortean Times\".Fortean Times is").len(), 1);
    assert_eq!(ends("(born 1950).Tom Hart is").len(), 1);
    // "No." numbers what follows it, unless a sentence starts there.
    assert_eq!(ends("It reached No. 1 in May, and no.2 in June.").len(), 1);
    assert_eq!(
        ends("Asked about a cut, the board said no. The deal fell.").len(),
        2
    );
    assert_eq!(ends("The board said no.").len(), 1);
    // A version or a decimal number is no sentence's end.
    assert!(ends("version 2.5 of v1.Net and 3.Hot").is_empty());
    assert!(ends("Washington, D.C today. Node.js and ASP.NET.").len() == 2);
}

/// Supported claims with a number and an auxiliary verb to negate.
const FACTS: &[(&str, &str)] = &[
    ("The plant was opened in 1932 by the city council.", "was"),
    ("Sales have grown by 14% since the merger in Texas.", "have"),
    (
        "The museum is home to 3200 paintings from Flemish masters.",
        "is",
    ),
    ("Ulysses S. Grant was elected president in 1868.", "was"),
];

proptest! {
    #[test]
    fn any_run_of_source_sentences_copied_verbatim_scores_one(
        start in 0..TRICKY.len(),
        len in 1..4usize,
        glue in proptest::sample::select(vec![" ", "\n", "  "]),
    ) {
        let source = TRICKY.join(glue);
        let end = (start + len).min(TRICKY.len());
        let answer = format!("{}[^1]", TRICKY[start..end].join(glue));
        let g = run(&answer, &[&source]);
        prop_assert_eq!(g.score, Some(1.0), "{}: {:?}", answer, g);
    }

    #[test]
    fn a_negation_or_a_changed_number_makes_a_supported_claim_unsupported(
        i in 0..FACTS.len(),
        delta in 1..9u32,
    ) {
        let min = GroundingSettings::default().min_support;
        let (fact, aux) = FACTS[i];
        let source = FACTS.iter().map(|f| f.0).collect::<Vec<_>>().join(" ");
        let claim = |s: &str| format!("{}[^1].", s.trim_end_matches('.'));
        prop_assert_eq!(run(&claim(fact), &[&source]).score, Some(1.0));
        let negated = fact.replacen(&format!(" {aux} "), &format!(" {aux} not "), 1);
        let g = run(&claim(&negated), &[&source]);
        prop_assert!(g.score.unwrap() < min, "{}: {:?}", negated, g);
        // Every number of the claim changed by `delta` in its last digit.
        let changed: String = fact
            .split(' ')
            .map(|w| {
                let digits: String = w.chars().filter(char::is_ascii_digit).collect();
                if digits.len() >= 2 {
                    let n: u32 = digits.parse().unwrap_or(0);
                    w.replace(&digits, &((n / 10) * 10 + (n % 10 + delta) % 10).to_string())
                } else {
                    w.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        let g = run(&claim(&changed), &[&source]);
        prop_assert!(g.score.unwrap() < min, "{}: {:?}", changed, g);
    }

    #[test]
    fn scores_are_in_range_and_deterministic(
        answer in "(\\PC|[\\[\\]^.!? \n`0-9A-Z])*",
        sources in proptest::collection::vec("(\\PC|[ .0-9A-Z])*", 0..4),
    ) {
        let s: Vec<&str> = sources.iter().map(String::as_str).collect();
        let a = run(&answer, &s);
        let b = run(&answer, &s);
        prop_assert_eq!(&a, &b);
        for c in &a.claims {
            if let Some(v) = c.support {
                prop_assert!((0.0..=1.0).contains(&v));
            }
            prop_assert!(c.unsupported_terms.len() <= MAX_TERMS);
            prop_assert!(answer.is_char_boundary(c.span.start) && answer.is_char_boundary(c.span.end));
            prop_assert!(c.span.start < c.span.end && c.span.end <= answer.len());
        }
        if let Some(v) = a.score {
            prop_assert!((0.0..=1.0).contains(&v));
        }
    }

    #[test]
    fn claims_never_overlap_and_keep_order(answer in "([a-z]{1,6}|[.!?]|\\[\\^[12]\\]| |\n|```){0,60}") {
        let g = run(&answer, &["a b c", "d e f"]);
        for w in g.claims.windows(2) {
            prop_assert!(w[0].span.end <= w[1].span.start);
        }
    }
}

/// A sentence glued by its period to the one before, which ends in a
/// number read with the words after it ("at 5 pm.Shares rose", "50
/// cents.Shares", "3 per cent.Shares"), with its unit or scale glued to it
/// ("5km.Shares", "$5bn.Shares"), or in a word ("today.Shares"): the
/// sentence is read from its first word on, alike by every reader of the
/// source (they number its sentences alike, so a negation is found in its
/// own) and by claims.
#[test]
fn a_host_name_is_no_pair_of_glued_sentences() {
    // "www.Geniewards.ca" reads as one name, not as a sentence that ends
    // at "www." and one that opens with "Geniewards": a copy is found.
    let source = "The awards take place on March 8.\nA full list of nominees is available at www.Geniewards.ca.\nTags: awards";
    assert_fully_supported(
        "A full list of nominees is available at www.Geniewards.ca[^1].",
        source,
    );
    assert_fully_supported("The list is at www.Geniewards.ca[^1].", source);
    // A run of capitalised words glued by periods is still a run of
    // sentences, each read on its own.
    assert_fully_supported(
        "Cognitive[^1].",
        "It applies to all disabilities, including:Auditory.Cognitive.Neurological.Physical.",
    );
}

#[test]
fn a_sentence_glued_to_a_number_is_read() {
    let min = GroundingSettings::default().min_support;
    for glued in [
        "The talks ended at 5 pm.",
        "The talks ended at 5 p.m.",
        "The talks ended at 5:00 PM.",
        "It cost 50 cents.",
        "The index lost 3 per cent.",
        "Rates rose by 25 bps.",
        "The track is 5km.",
        "Revenue rose to $5bn.",
        "The talks ended today.",
        "Jazz records sold well in the 1920s.",
    ] {
        let source = format!("{glued}Shares rose 3%. Profit did not fall.");
        let verbatim = run(&format!("{source}[^1]"), &[&source]);
        assert_eq!(verbatim.score, Some(1.0), "{source}: {verbatim:?}");
        let copy = run("Shares rose 3%[^1].", &[&source]);
        assert_eq!(copy.score, Some(1.0), "{source}: {copy:?}");
        let negated = run("Profit did not fall[^1].", &[&source]);
        assert_eq!(negated.score, Some(1.0), "{source}: {negated:?}");
        let contradicted = run("Profit fell[^1].", &[&source]);
        assert!(
            contradicted.score.unwrap() < min,
            "{source}: {contradicted:?}"
        );
    }
    // The shortest texts that made the readers disagree.
    for (answer, source) in [
        ("sold sinc[^1]", "5:00 pm.le.No sinc"),
        ("2 higher[^1]", "1 cent.Sh2"),
        ("highest EPISOD[^1]", "episod2 cent.No0"),
        ("Levin largest[^1]", "7:00gy.Lh Levin"),
    ] {
        let g = run(answer, &[source]);
        assert!(g.score.is_some(), "{source}: {g:?}");
    }
}

/// A sentence that ends in a contraction or a possessive ("won't.",
/// "John's.", the apostrophe straight or curly) ends there: its last letter
/// is no initial. Read as one sentence with the next, its negation was
/// held against the next sentence's words.
#[test]
fn a_sentence_ending_in_a_contraction_ends_there() {
    for source in [
        "Asked to sell, the bank said it won't. Shares rose 3% on Monday.",
        "Asked to sell, the bank said it won\u{2019}t. Shares rose 3% on Monday.",
        "The car is John's. Shares rose 3% on Monday.",
    ] {
        let g = run("Shares rose 3% on Monday[^1].", &[source]);
        assert_eq!(g.score, Some(1.0), "{source}: {g:?}");
    }
    // An initial is still none.
    let g = run(
        "Grant was elected in 1868[^1].",
        &["Ulysses S. Grant was elected in 1868."],
    );
    assert_eq!(g.score, Some(1.0), "{g:?}");
    let g = run(
        "Ulysses S. Grant was elected in 1868[^1].",
        &["Ulysses S. Grant was elected in 1868."],
    );
    assert_eq!(g.claims.len(), 1, "{g:?}");
}

/// The words read with a number before them ("bps", "per cent",
/// "percentage points", a scale) look at the byte before them; a text that
/// opens with one has none, and is read like any other.
#[test]
fn a_unit_word_that_opens_a_text_is_read() {
    for text in [
        "BP:0",
        "bps rose",
        "basis-point cut",
        "per cent of banks",
        "percentage points rose",
        "million people came",
        "percent",
    ] {
        let copy = run(&format!("{text}[^1]."), &[text]);
        assert!(copy.score.is_some(), "{text}: {copy:?}");
        let other = run("Banks rose[^1].", &[text]);
        assert!(other.score.is_some(), "{text}: {other:?}");
    }
}

#[test]
fn a_copied_sentence_is_found_whole() {
    // Both sentences hold every content word; the one that says it as
    // the claim does is its best, whichever comes first.
    assert_fully_supported(
        "The bank expanded[^1].",
        "The bank did not expand. The bank expanded.",
    );
    assert_fully_supported(
        "The bank did not expand[^1].",
        "The bank expanded. The bank did not expand.",
    );
    assert_fully_supported(
        "Profit rose[^1].",
        "Profit never rose in the first half. Profit rose.",
    );
    assert_fully_supported(
        "The bank raised rates[^1].",
        "The bank is expected to raise rates. The bank raised rates.",
    );
    assert_fully_supported(
        "The bank is expected to raise rates[^1].",
        "The bank raised rates. The bank is expected to raise rates.",
    );
    assert_fully_supported(
        "HSBC is the largest bank in Europe[^1].",
        "HSBC is one of the largest banks in Europe. HSBC is the largest bank in Europe.",
    );
    assert_fully_supported(
        "The bank is the second largest lender in Spain[^1].",
        "The bank is the largest lender in Spain. The bank is the second largest lender in Spain.",
    );
    // A "no" that ends a sentence is its negation, on both sides.
    assert_fully_supported(
        "Asked about a rate cut, the board said no[^1].",
        "Asked about a rate cut, the board said no. Markets fell.",
    );
    // A change stated after its number, with words after it: the claim
    // reads "increase" in the place of "higher", the source beside it.
    for sentence in [
        "Rates were 5% higher than a year ago.",
        "Shares closed 3% lower on Friday.",
        "Deposits were $2 billion higher than in March.",
    ] {
        let claim = format!("{}[^1].", sentence.trim_end_matches('.'));
        assert_fully_supported(&claim, sentence);
    }
    let min = GroundingSettings::default().min_support;
    let g = run(
        "Rates were 5% lower than a year ago[^1].",
        &["Rates were 5% higher than a year ago."],
    );
    assert!(g.claims[0].support.unwrap() < min, "{g:?}");
    // With one sentence only, the claim is still contradicted.
    let g = run("The bank expanded[^1].", &["The bank did not expand."]);
    assert!(g.claims[0].support.unwrap() < min, "{g:?}");
}

#[test]
fn a_claim_is_fully_supported_only_when_every_word_is_found() {
    let source = "The Oberoi Group is a hotel company with its head office in Delhi.";
    assert_fully_supported("The Oberoi Group is a hotel company[^1].", source);
    // No content word to miss, yet nothing of it is in the source: a
    // dialogue turn like this says nothing the source supports.
    let g = run("How about you[^1]?", &[source]);
    let min = GroundingSettings::default().min_support;
    assert!(g.claims[0].support.unwrap() < min, "{g:?}");
    // Every content word found, one small word not: weighed by the model,
    // and still well supported.
    let g = run(
        "The Oberoi Group is a hotel company that has its head office in Delhi[^1].",
        &[source],
    );
    let s = g.claims[0].support.unwrap();
    assert!(s < 1.0 && s >= min, "{g:?}");
}

#[test]
fn any_stretch_of_a_real_source_copied_verbatim_scores_one() {
    // Real web pages and knowledge texts, cut at every sentence-looking
    // end (". ", "! ", "? ") whether or not the sentence rule ends a
    // sentence there ("No. 21", "J. Ford"): a copy of one or two pieces
    // is still the source's own text.
    let data = [
        include_str!("../../../tests/data/grounding_wice_claims.jsonl"),
        include_str!("../../../tests/data/grounding_subset.jsonl"),
    ];
    let mut checked = 0;
    for line in data.iter().flat_map(|d| d.lines()) {
        let rec: serde_json::Value = serde_json::from_str(line).expect("a labelled record");
        let Some(source) = rec["sources"][0]["payload"].as_str() else {
            continue;
        };
        let b = source.as_bytes();
        let mut cuts = vec![0];
        cuts.extend(
            (1..b.len()).filter(|&i| matches!(b[i - 1], b'.' | b'!' | b'?') && b[i] == b' '),
        );
        cuts.push(b.len());
        for w in cuts.windows(3) {
            for piece in [&source[w[0]..w[1]], &source[w[0]..w[2]]] {
                let piece = piece.trim();
                if piece.chars().any(char::is_alphanumeric) {
                    let answer = format!("{piece}[^1]");
                    assert_eq!(run(&answer, &[source]).score, Some(1.0), "{answer}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 1_000, "{checked}");
}

#[test]
fn a_source_contradicts_a_word_only_where_its_best_sentence_negates_it() {
    let min = GroundingSettings::default().min_support;
    // Negated in another sentence, while the best sentence negates
    // something else: no contradiction.
    let source = "The plant does not export coal, and it employs 300 workers. \
                  No workers were hired in 2001.";
    assert_fully_supported("It employs 300 workers[^1].", source);
    // Negated later in the best sentence, and stated plainly there too.
    assert_fully_supported(
        "An intercity bus generally has a single stop in a city[^1].",
        "An intercity bus generally has a single stop in a city, and travels long distances without stopping.",
    );
    // Negated where the claim states it plainly: contradicted.
    let g = run(
        "The plant exports coal[^1].",
        &["The plant does not export coal, and it employs 300 workers."],
    );
    assert!(g.claims[0].support.unwrap() < min, "{g:?}");
    // A negation ends with its sentence: "Not." does not negate "Won",
    // so the claim's negation is not in the source.
    let g = run(
        "The award was not won by Weaving[^1].",
        &["The film is Ready or Not. Won by Weaving, the award came late."],
    );
    assert!(g.claims[0].support.unwrap() < min, "{g:?}");
}

#[test]
fn reading_a_source_again_numbers_its_sentences_as_the_index_does() {
    // `held_in` reads a source again and checks (in debug builds) that it
    // counts the sentences the index holds: real pages, in both orders,
    // with the sources' yes/no questions read and left out.
    let data = include_str!("../../../tests/data/grounding_wice_claims.jsonl");
    let texts: Vec<String> = data
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|r| r["sources"][0]["payload"].as_str().map(str::to_string))
        .take(20)
        .chain(["The hotel is in Hawaii.Aulani opened in 2011. It has 21 floors.".to_string()])
        .chain(["Is it open? Yes.\nQ: Does it pay interest?\nNo, it does not. Why?".to_string()])
        .collect();
    let mut scratch = Scratch::new();
    for (order, questions) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut sources: Vec<&str> = texts.iter().map(String::as_str).collect();
        if order {
            sources.reverse();
        }
        let (folder, index) = scratch.parts();
        index.want_everything();
        index.start(sources.len(), false);
        index.leave_out_questions(questions);
        for (idx, text) in sources.iter().enumerate() {
            index.add(idx, text, folder, &mut 0);
        }
        let total: usize = (0..sources.len()).map(|i| index.sentences_of(i)).sum();
        for s in 0..total as u32 {
            index.held_in(s, 0, &sources, folder, &mut 0);
        }
    }
}

#[test]
fn a_numbered_list_item_is_checked_without_its_number() {
    let source =
        "Marie Curie was born in Warsaw in 1867. She won the Nobel Prize in Physics in 1903.";
    for answer in [
        "1. Marie Curie was born in Warsaw in 1867[^1].\n2. She won the Nobel Prize in Physics in 1903[^1].",
        "Facts:\n  1) Marie Curie was born in Warsaw in 1867.[^1]\n  12) She won the Nobel Prize in Physics in 1903.[^1]",
    ] {
        let g = run(answer, &[source]);
        let checked: Vec<_> = g.claims.iter().filter_map(|c| c.support).collect();
        assert_eq!(checked, [1.0, 1.0], "{answer}: {g:?}");
    }
    // A year opening a line is a claim's number, not a list item.
    let g = run("1868. She was born in Warsaw that year[^1].", &[source]);
    assert!(
        g.claims
            .iter()
            .any(|c| c.unsupported_terms.contains(&"1868".to_string())),
        "{g:?}"
    );
}

#[test]
fn words_that_name_the_sources_are_not_claimed() {
    let source = "Revenue grew 5% in 2023, driven by strong demand in Europe.";
    for answer in [
        "According to the provided sources, revenue grew 5% in 2023[^1].",
        "Yes, based on the retrieved documents, revenue grew 5% in 2023[^1].",
        "The passage states that revenue grew 5% in 2023[^1].",
        "As mentioned in the report, revenue grew 5% in 2023[^1].",
        "Revenue grew 5% in 2023, according to the sources[^1].",
        // A source named by its number, or in brackets at the end.
        "According to Source 1, revenue grew 5% in 2023[^1].",
        "According to the first source, revenue grew 5% in 2023[^1].",
        "As stated in Document 1, revenue grew 5% in 2023[^1].",
        "Source 1 states that revenue grew 5% in 2023[^1].",
        "Per the report, revenue grew 5% in 2023[^1].",
        "Revenue grew 5% in 2023 (Source 1)[^1].",
        "Revenue grew 5% in 2023 [see sources 1 and 2][^1].",
        "Revenue grew 5% in 2023 (as per the source)[^1].",
        "Revenue grew 5% in 2023, according to sources 1, 2 and 3[^1].",
        "Revenue grew 5% in 2023, as noted in the report[^1].",
        // The kind of document, and a closing "the report says".
        "According to the annual report, revenue grew 5% in 2023[^1].",
        "Per the latest quarterly filing, revenue grew 5% in 2023[^1].",
        "The press release states that revenue grew 5% in 2023[^1].",
        "Revenue grew 5% in 2023, according to the filing[^1].",
        "Revenue grew 5% in 2023, the report says[^1].",
        "Revenue grew 5% in 2023, as the financial statements show[^1].",
    ] {
        assert_fully_supported(answer, source);
    }
    // "According to" a name: the name is still the claim's, "according"
    // is not.
    let named = "Healthline reports that revenue grew 5% in 2023.";
    assert_found_not_flagged("According to Healthline, revenue grew 5% in 2023", named);
    assert_still_missing(
        "According to Reuters, revenue grew 5% in 2023",
        named,
        "reuters",
    );
    // A kind of document only before its word: after it, the claim's own.
    assert_still_missing(
        "According to the report, annual revenue grew 5% in 2023",
        source,
        "annual",
    );
    // A closing verb only after a comma: "after the survey showed" is the
    // claim's.
    assert_still_missing(
        "Revenue grew 5% in 2023 after the survey showed",
        source,
        "survey",
    );
    // What follows them is still checked.
    let min = GroundingSettings::default().min_support;
    for answer in [
        "According to the sources, revenue did not grow in 2023[^1].",
        "The document states that revenue grew 7% in 2023[^1].",
        "According to Source 1, revenue grew 7% in 2023[^1].",
        "Revenue grew 7% in 2023 (Source 1)[^1].",
    ] {
        let g = run(answer, &[source]);
        assert!(g.claims[0].support.unwrap() < min, "{answer}: {g:?}");
    }
    // Within a claim they are words like any other: the source does not
    // hold "according" or "report".
    let g = run("Revenue, according to the report, grew 5%[^1].", &[source]);
    assert!(g.claims[0].support.unwrap() < 1.0, "{g:?}");
    // A bracket is a reference only when it holds one alone, and only at
    // the claim's end; a number of three digits or more names no source.
    for (answer, missing) in [
        ("Revenue grew 5% in 2023 (Asia)[^1].", "asia"),
        ("Revenue grew 5% in 2023 (source 1, Asia)[^1].", "asia"),
        ("Revenue grew 5% (source 1) in 2023 and 2024[^1].", "2024"),
        (
            "Revenue grew 5% in 2023, according to report 2024[^1].",
            "2024",
        ),
    ] {
        assert_still_missing(answer.trim_end_matches("[^1]."), source, missing);
    }
    // A source that opens that way, copied verbatim, is still found whole.
    assert_fully_supported(
        "According to the report, revenue grew 5% in 2023[^1].",
        "According to the report, revenue grew 5% in 2023.",
    );
}

#[test]
fn an_answer_s_summing_up_and_its_connectives_are_not_claimed() {
    let source = "Revenue grew 5% in 2023, driven by strong demand in Europe.";
    for answer in [
        "In summary, revenue grew 5% in 2023[^1].",
        "Overall, revenue grew 5% in 2023[^1].",
        "To sum up, revenue grew 5% in 2023[^1].",
        "It is important to note that revenue grew 5% in 2023[^1].",
        "It's worth noting that revenue grew 5% in 2023[^1].",
        "Note that revenue grew 5% in 2023[^1].",
        "Keep in mind that revenue grew 5% in 2023[^1].",
        "In conclusion, based on the documents provided, revenue grew 5% in 2023[^1].",
        "Revenue grew 5% in 2023, according to the documents provided[^1].",
        "Additionally, revenue grew 5% in 2023[^1].",
        "However, revenue grew 5% in 2023[^1].",
        "Revenue, however, grew 5% in 2023[^1].",
    ] {
        assert_fully_supported(answer, source);
    }
    // What follows them is still checked.
    assert_flagged_missing("In summary, revenue grew 7% in 2023[^1].", source, &["7"]);
    let g = run("Overall, revenue did not grow in 2023[^1].", &[source]);
    let min = GroundingSettings::default().min_support;
    assert!(g.claims[0].support.unwrap() < min, "{g:?}");
    // Only as an opening: within a claim, "summary" is a word to find.
    let g = run("Revenue grew 5% in 2023 in summary[^1].", &[source]);
    assert!(g.claims[0].support.unwrap() < 1.0, "{g:?}");
}

#[test]
fn a_number_is_found_however_it_is_written() {
    let pairs = [
        (
            "The city has 1.2 million residents",
            "The city has 1,200,000 residents.",
        ),
        (
            "The city has 1,200,000 residents",
            "The city has 1.2 million residents.",
        ),
        ("The deal was worth $5 billion", "The deal was worth $5bn."),
        (
            "The deal was worth $5bn",
            "The deal was worth $5,000,000,000.",
        ),
        ("Revenue grew 5 percent in 2023", "Revenue grew 5% in 2023."),
        ("Revenue grew 5% in 2023", "Revenue grew 5 percent in 2023."),
        ("It sold 2.5 thousand copies", "It sold 2,500 copies."),
        ("The deal was worth $5 bn", "The deal was worth $5 billion."),
        (
            "The deal was worth $5 billion",
            "The deal was worth $5 BLN.",
        ),
        (
            "The fund raised EUR 300 mln",
            "The fund raised EUR 300 million.",
        ),
        ("The fund raised EUR 300 mn", "The fund raised EUR 300mln."),
        ("Debt was 2 trillion yen", "Debt was 2 trn yen."),
        ("Debt was 2 tn yen", "Debt was 2trn yen."),
    ];
    for (claim, source) in pairs {
        assert_fully_supported(&format!("{claim}[^1]."), source);
    }
    // Another scale is another number.
    let min = GroundingSettings::default().min_support;
    for (claim, source) in [
        ("The deal was worth $5 million", "The deal was worth $5bn."),
        ("The deal was worth $5 mln", "The deal was worth $5 bn."),
        (
            "The city has 1.3 million residents",
            "The city has 1,200,000 residents.",
        ),
    ] {
        let g = run(&format!("{claim}[^1]."), &[source]);
        assert!(g.claims[0].support.unwrap() < min, "{claim}: {g:?}");
    }
}

proptest! {
    #[test]
    fn a_scaled_number_matches_its_digits(
        whole in 1u64..1000,
        hundredths in 0u64..100,
        scale in 0usize..3,
    ) {
        let (word, zeros) = [("thousand", 3u32), ("million", 6), ("billion", 9)][scale];
        let value = (whole * 100 + hundredths) * 10u64.pow(zeros) / 100;
        let digits = value.to_string();
        // Thousands separators, as a source writes them.
        let mut grouped = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(c);
        }
        let claim = format!("The fund holds {whole}.{hundredths:02} {word} dollars[^1].");
        let g = run(&claim, &[&format!("The fund holds {grouped} dollars.")]);
        prop_assert_eq!(g.score, Some(1.0), "{}: {:?}", claim, g);
    }
}

#[test]
fn a_web_address_says_where_not_what() {
    let source = "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.";
    for answer in [
        "The Eiffel Tower was completed in 1889 for the [World's Fair](https://en.wikipedia.org/wiki/Exposition_Universelle_(1889)) in Paris[^1].",
        "The Eiffel Tower was completed in 1889 (www.toureiffel.paris/en) for the World's Fair[^1].",
        "The Eiffel Tower was completed in 1889, i.e. for the World's Fair in Paris[^1].",
    ] {
        assert_fully_supported(answer, source);
    }
    // A source's own address, copied with the text around it.
    assert_fully_supported(
        "Details are at https://example.org/tower-history for visitors[^1].",
        "Details are at https://example.org/tower-history for visitors.",
    );
}

#[test]
fn the_word_lists_are_sorted_for_their_binary_search() {
    use super::lexicon::{
        FILLERS, GLUED_UNITS, NEGATIONS, REF_ADJECTIVES, REF_DETERMINERS, REF_NOUNS, REF_VERBS,
        STOP_WORDS,
    };
    for list in [
        STOP_WORDS,
        GLUED_UNITS,
        FILLERS,
        NEGATIONS,
        REF_DETERMINERS,
        REF_ADJECTIVES,
        REF_NOUNS,
        REF_VERBS,
    ] {
        assert!(list.windows(2).all(|w| w[0] < w[1]), "{list:?}");
    }
}

#[test]
fn a_number_spelled_in_words_is_its_digits() {
    let pairs = [
        (
            "The band released twenty-one albums",
            "The band released 21 albums.",
        ),
        (
            "The band released 21 albums",
            "The band released twenty-one albums.",
        ),
        (
            "It sold one hundred thousand copies",
            "It sold 100,000 copies.",
        ),
        (
            "The company has 1,500 employees",
            "The company has fifteen hundred employees.",
        ),
        (
            "It was built in the twenty-first century",
            "It was built in the 21st century.",
        ),
        (
            "The bill passed with 305 votes",
            "The bill passed with three hundred and five votes.",
        ),
        (
            "The city has two million residents",
            "The city has 2 million residents.",
        ),
        ("Turnout was seventy-five percent", "Turnout was 75%."),
        // Spelled differently, the same number.
        (
            "The band released twenty one albums",
            "The band released Twenty-One albums.",
        ),
    ];
    for (claim, source) in pairs {
        assert_fully_supported(&format!("{claim}[^1]."), source);
    }
    // Another number, spelled or not, breaks the number rule; words that
    // spell no one number are read one by one, as before.
    let min = GroundingSettings::default().min_support;
    for (claim, source) in [
        (
            "The band released twenty-two albums",
            "The band released 21 albums.",
        ),
        (
            "The band released 22 albums",
            "The band released twenty-one albums.",
        ),
        ("It sold one hundred copies", "It sold one thousand copies."),
    ] {
        let g = run(&format!("{claim}[^1]."), &[source]);
        assert!(g.claims[0].support.unwrap() < min, "{claim}: {g:?}");
    }
    assert_fully_supported("Pick one or two options[^1].", "Pick one or two options.");
    // A count spelled in one word is a number too: another count is
    // flagged, the same count in digits is found.
    assert_flagged_missing(
        "Withdrawals are limited to seven per month[^1].",
        "Withdrawals are limited to six per month.",
        &["seven"],
    );
    assert_fully_supported(
        "Withdrawals are limited to six per month[^1].",
        "Withdrawals are limited to 6 per month.",
    );
    assert_fully_supported(
        "Withdrawals are limited to 6 per month[^1].",
        "Withdrawals are limited to six per month.",
    );
    // "One" and the ordinals "first" and "second" stay words: missing, they
    // break no rule, and the model weighs them.
    for claim in ["One fund is closed", "The second fund is closed"] {
        let g = run(&format!("{claim}[^1]."), &["The other fund is closed."]);
        let rule = g.claims[0].evidence.map(|e| e.rule);
        assert_eq!(rule, Some(None), "{claim}: {g:?}");
    }
    let g = run("Two funds are closed[^1].", &["Three funds are closed."]);
    assert_eq!(
        g.claims[0].evidence.map(|e| e.rule),
        Some(Some(0.0)),
        "{g:?}"
    );
    let g = run(
        "He came second in nineteen eighty[^1].",
        &["He came second in 1980."],
    );
    assert!(g.claims[0].support.unwrap() < min, "{g:?}");
    // The finding names the number as the claim spells it.
    let g = run(
        "The band released twenty-two albums[^1].",
        &["The band released 21 albums."],
    );
    assert_eq!(
        g.claims[0].unsupported_terms,
        vec!["twenty-two".to_string()],
        "{g:?}"
    );
}

/// `n` (below a million) in English words, as a writer spells it.
fn spell(n: u64) -> String {
    const SMALL: [&str; 20] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 10] = [
        "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    fn below_thousand(n: u64, out: &mut Vec<String>) {
        if n >= 100 {
            out.push(format!("{} hundred", SMALL[(n / 100) as usize]));
            if !n.is_multiple_of(100) {
                out.push("and".to_string());
            }
        }
        let r = n % 100;
        if r >= 20 {
            out.push(match r % 10 {
                0 => TENS[(r / 10) as usize].to_string(),
                u => format!("{}-{}", TENS[(r / 10) as usize], SMALL[u as usize]),
            });
        } else if r > 0 {
            out.push(SMALL[r as usize].to_string());
        }
    }
    let mut words = Vec::new();
    if n >= 1000 {
        below_thousand(n / 1000, &mut words);
        words.push("thousand".to_string());
    }
    below_thousand(n % 1000, &mut words);
    words.join(" ")
}

proptest! {
    #[test]
    fn a_spelled_number_matches_its_digits(n in 21u64..1_000_000) {
        let words = spell(n);
        let claim = format!("The archive holds {words} letters[^1].");
        let g = run(&claim, &[&format!("The archive holds {n} letters.")]);
        prop_assert_eq!(g.score, Some(1.0), "{}: {:?}", claim, g);
        let g = run(&format!("The archive holds {n} letters[^1]."), &[&format!("The archive holds {words} letters.")]);
        prop_assert_eq!(g.score, Some(1.0), "{}: {:?}", words, g);
        let g = run(&claim, &[&format!("The archive holds {} letters.", n + 1)]);
        prop_assert!(g.score.unwrap() < 0.5, "{}: {:?}", claim, g);
    }
}

#[test]
fn an_abbreviation_finds_its_word() {
    let pairs = [
        ("The tower is 330 metres tall", "The tower is 330 m tall."),
        ("The tower is 330 m tall", "The tower is 330 meters tall."),
        (
            "The bridge is 2 km long",
            "The bridge is 2 kilometres long.",
        ),
        ("The parcel weighs 5 kilograms", "The parcel weighs 5 kg."),
        (
            "The treaty was signed on 4 Sept 1920",
            "The treaty was signed on 4 September 1920.",
        ),
        ("They climbed Mount Kenya", "They climbed Mt. Kenya."),
    ];
    for (claim, source) in pairs {
        assert_fully_supported(&format!("{claim}[^1]."), source);
    }
}

#[test]
fn an_acronym_is_found_by_a_name_that_keeps_its_small_words_and_back() {
    for (claim, source) in [
        ("The ROE was 12%", "The return on equity was 12%."),
        ("Return on equity was 12%", "ROE was 12%."),
        ("The LTV ratio is 80%", "The loan-to-value ratio is 80%."),
        ("The loan-to-value ratio is 80%", "The LTV ratio is 80%."),
        ("AUM grew 5%", "Assets under management grew 5%."),
        ("Assets under management grew 5%", "AUM grew 5%."),
        (
            "The TFGM board met",
            "The Transport for Greater Manchester board met.",
        ),
        // A capital that opens a sentence is not a name's.
        ("NII rose 4%", "Net interest income rose 4%."),
        // A number with a decimal point beside the name.
        ("The NIM was 2.1%", "The net interest margin was 2.1%."),
        ("The EU grew 2.1%", "The European Union grew 2.1%."),
    ] {
        assert_fully_supported(&format!("{claim}[^1]."), source);
    }
    // Not any three words: a stop word inside must be a small one, and a
    // capital inside a sentence before words in lower case is no name's.
    for (claim, source, missing) in [
        ("The TIL grew", "Texas is larger and grew.", "til"),
        ("The AFL grew", "An American football league grew.", "afl"),
        (
            "The UTC grew",
            "He understands the cruelty that grew.",
            "utc",
        ),
    ] {
        assert_still_missing(claim, source, missing);
    }
}

#[test]
fn an_acronym_in_mixed_case_or_of_a_name_with_and_is_found_and_back() {
    for (claim, source) in [
        // A small letter for a small word, at a claim's start too.
        ("The BoE raised rates", "The Bank of England raised rates."),
        ("BoE raised rates", "The Bank of England raised rates."),
        ("RoE was 12%", "Return on equity was 12%."),
        ("AuM rose 5%", "Assets under management rose 5%."),
        ("The Bank of England raised rates", "The BoE raised rates."),
        (
            "The bank's RoE was 12%",
            "The bank's return on equity was 12%.",
        ),
        (
            "The bank's return on equity was 12%",
            "The bank's RoE was 12%.",
        ),
        (
            "The bank's AuM reached $2tn",
            "The bank's assets under management reached $2tn.",
        ),
        (
            "The two banks signed an MoU",
            "The two banks signed an MoU.",
        ),
        // The name's first word found elsewhere in the source.
        (
            "The Bank of England raised Bank Rate",
            "The BoE raised Bank Rate.",
        ),
        // "and" inside a name of three initials.
        (
            "The SEC fined the bank",
            "The Securities and Exchange Commission fined the bank.",
        ),
        (
            "The Securities and Exchange Commission fined the bank",
            "The SEC fined the bank.",
        ),
        (
            "Loans to SMEs grew 6%",
            "Loans to small and medium-sized enterprises grew 6%.",
        ),
    ] {
        assert_fully_supported(&format!("{claim}[^1]."), source);
    }
    // Another name, other initials, or a name mostly found elsewhere:
    // still missing.
    for (claim, source, missing) in [
        (
            "The BoE raised rates",
            "The Bank of Japan raised rates.",
            "boe",
        ),
        (
            "The Bank of England raised rates",
            "The BoJ raised rates.",
            "england",
        ),
        ("The RoE was 12%", "The return on assets was 12%.", "roe"),
        (
            "The bank's return on equity was 12%",
            "The bank's RoA was 12%.",
            "equity",
        ),
        // A name's found words outnumber its missing one: the source's
        // "USA" is not the claim's "United States Army".
        (
            "He served in the United States Army",
            "He lived in the United States. Sports USA covered him.",
            "army",
        ),
        ("India and Pakistan signed", "IP signed.", "india"),
    ] {
        assert_still_missing(claim, source, missing);
    }
}

#[test]
fn a_chief_officer_is_found_by_a_title_without_its_officer_and_back() {
    for (claim, source) in [
        (
            "The CEO resigned in March",
            "The chief executive resigned in March.",
        ),
        (
            "The chief executive resigned in March",
            "The CEO resigned in March.",
        ),
        (
            "The Chief Executive resigned in March",
            "The CEO resigned in March.",
        ),
        (
            "The CFO resigned in March",
            "The Chief Financial resigned in March.",
        ),
        (
            "Barclays chief executive resigned",
            "The Barclays CEO resigned.",
        ),
    ] {
        assert_fully_supported(&format!("{claim}[^1]."), source);
    }
    // Another post, or another officer: still missing.
    for (claim, source, missing) in [
        ("The CEO resigned", "The chief economist resigned.", "ceo"),
        (
            "The CEO resigned",
            "The chief financial officer resigned.",
            "ceo",
        ),
        (
            "The chief economist resigned",
            "The CEO resigned.",
            "economist",
        ),
        (
            "The chief executive resigned",
            "The CFO resigned.",
            "executive",
        ),
    ] {
        assert_still_missing(claim, source, missing);
    }
}

#[test]
fn the_federal_reserve_is_the_fed_and_britain_the_uk() {
    for (claim, source) in [
        (
            "The Federal Reserve held rates steady",
            "The Fed held rates steady.",
        ),
        (
            "The Federal Reserve held rates steady",
            "The Fed held rates steady and watched the federal funds rate.",
        ),
        (
            "The bank is based in Britain",
            "The bank is based in the UK.",
        ),
        (
            "The bank is based in the UK",
            "The bank is based in Britain.",
        ),
    ] {
        assert_fully_supported(&format!("{claim}[^1]."), source);
    }
    assert_found_not_flagged(
        "The Federal Reserve held rates steady",
        "The Fed's board held rates steady.",
    );
    for (claim, source, missing) in [
        (
            "The Federal Reserve held rates steady",
            "The ECB held rates steady.",
            "reserve",
        ),
        (
            "The French Republic held rates steady",
            "The Fed held rates steady.",
            "republic",
        ),
        (
            "The bank is based in Britain",
            "The bank is based in Ireland.",
            "britain",
        ),
    ] {
        assert_still_missing(claim, source, missing);
    }
}

#[test]
fn a_claim_repeated_in_a_record_is_judged_as_it_is_alone() {
    // A record's acronym and bound scans of a source are kept for its
    // later claims.
    for (claim, source) in [
        (
            "The EU imposed tariffs on steel",
            "The European Union imposed tariffs on steel.",
        ),
        (
            "The Federal Bureau of Investigation opened an inquiry",
            "The F.B.I. opened an inquiry.",
        ),
        ("Return on equity was 12%", "ROE was 12%."),
        ("The United States grew", "The USA grew."),
        ("The TIL grew", "Texas is larger and grew."),
        ("Expansion slowed in EMEA while APAC held", NRR),
        ("Net revenue retention fell from 109% to 118%", NRR),
        (
            "The fee is paid after the maturity date",
            "The fee is paid before the maturity date.",
        ),
    ] {
        let alone = run(&format!("{claim}[^1]."), &[source]);
        let answer = format!("{claim}[^1]. {claim}[^1]. {claim}[^1].");
        let g = run(&answer, &[source]);
        assert_eq!(g.claims.len(), 3, "{answer}: {g:?}");
        for c in &g.claims {
            assert_eq!(c.support, alone.claims[0].support, "{answer}: {g:?}");
            assert_eq!(
                c.unsupported_terms, alone.claims[0].unsupported_terms,
                "{answer}: {g:?}"
            );
            assert_eq!(c.opposed, alone.claims[0].opposed, "{answer}: {g:?}");
        }
    }
}

#[test]
fn an_acronym_is_found_by_its_name_and_a_name_by_its_acronym() {
    let min = GroundingSettings::default().min_support;
    for (claim, source) in [
        (
            "The EU imposed tariffs on steel",
            "The European Union imposed tariffs on steel.",
        ),
        (
            "The European Union imposed tariffs on steel",
            "The EU imposed tariffs on steel.",
        ),
        (
            "European Union members imposed tariffs",
            "EU members imposed tariffs.",
        ),
        (
            "The FBI opened an inquiry in 2019",
            "The Federal Bureau of Investigation opened an inquiry in 2019.",
        ),
        (
            "The Federal Bureau of Investigation opened an inquiry",
            "The F.B.I. opened an inquiry.",
        ),
        (
            "Talks with NATO resumed",
            "Talks with the North Atlantic Treaty Organization resumed.",
        ),
        (
            "The CEO resigned in March",
            "The chief executive officer resigned in March.",
        ),
        (
            "The chief executive officer resigned in March",
            "The CEO resigned in March.",
        ),
        // "and" inside a name of four initials or more.
        (
            "NASA launched the probe in 1977",
            "The National Aeronautics and Space Administration launched the probe in 1977.",
        ),
        (
            "The National Aeronautics and Space Administration launched the probe",
            "NASA launched the probe.",
        ),
        // A country with two acronyms.
        ("The USA won the match", "The United States won the match."),
        ("The United States won the match", "The USA won the match."),
    ] {
        // Found where the source writes it, beside the claim's own words:
        // full support.
        assert_fully_supported(&format!("{claim}[^1]."), source);
    }
    // Found elsewhere in the source: found, but not beside the claim's
    // words.
    for (claim, source) in [
        (
            "The EU imposed tariffs on steel",
            "The European Union met in May. China imposed tariffs on steel.",
        ),
        (
            "Exports to the UK fell by 5%",
            "Exports to France fell by 5%, said the United Kingdom.",
        ),
    ] {
        assert_found_not_flagged(claim, source);
        let g = run(&format!("{claim}[^1]."), &[source]);
        assert!(g.claims[0].support.unwrap() < 1.0, "{claim}: {g:?}");
    }
    // A name's first words stand for an acronym when its last follows it in
    // the claim too.
    assert_fully_supported(
        "The US Senate passed the bill[^1].",
        "The United States Senate passed the bill.",
    );
    let g = run(
        "The US passed the bill[^1].",
        &["The United States Senate passed the bill."],
    );
    assert!(g.claims[0].support.unwrap() < 1.0, "{g:?}");
    // Other initials, another name: still missing.
    for (claim, source, missing) in [
        (
            "The EU imposed tariffs on steel",
            "The European Commission imposed tariffs on steel.",
            "eu",
        ),
        (
            "The European Union imposed tariffs",
            "The UN imposed tariffs.",
            "european",
        ),
        (
            "The FBI opened an inquiry",
            "The Federal Reserve of Boston opened an inquiry.",
            "fbi",
        ),
        // "and" joins no name of two initials.
        (
            "The IP address changed",
            "India and Pakistan changed the address.",
            "ip",
        ),
        (
            "India and Pakistan signed the treaty",
            "IP signed the treaty.",
            "india",
        ),
    ] {
        let g = run(&format!("{claim}[^1]."), &[source]);
        let c = &g.claims[0];
        assert!(
            c.unsupported_terms.iter().any(|t| t == missing),
            "{claim}: {g:?}"
        );
        assert!(c.support.unwrap() < min, "{claim}: {g:?}");
    }
}

#[test]
fn a_contraction_and_dotted_initials_read_as_their_plain_words() {
    // "didn't" is "did not": the negation is the same, found side by side.
    for (claim, source) in [
        (
            "The company did not report a loss",
            "The company didn't report a loss.",
        ),
        (
            "The company didn’t report a loss",
            "The company did not report a loss.",
        ),
        (
            "The council cannot approve the plan",
            "The council can not approve the plan.",
        ),
        (
            "The meeting is at 3 p.m. on Friday",
            "The meeting is at 3 pm on Friday.",
        ),
        (
            "He moved to the U.S. in 1990",
            "He moved to the US in 1990.",
        ),
    ] {
        // Only the auxiliary ("did" of "didn't") may be missing.
        assert_found_not_flagged(claim, source);
    }
    // A negation the source does not state is still one, also next to one
    // it does state.
    let g = run(
        "The company didn't report a loss[^1].",
        &["The company reported a loss."],
    );
    assert!(g.claims[0].support.unwrap() < 0.5, "{g:?}");
    let g = run(
        "Choose a place where you won't have not to worry about being overheard[^1].",
        &["Choose a place where you won't have to worry about being overheard."],
    );
    assert!(g.claims[0].support.unwrap() <= model::BROKEN, "{g:?}");
    assert!(
        g.claims[0].unsupported_terms.iter().any(|t| t == "not"),
        "{g:?}"
    );
    // One negation for another is no negation added.
    let g = run(
        "The company did not report a loss[^1].",
        &["The company reported no loss."],
    );
    assert!(g.claims[0].support.unwrap() > model::BROKEN, "{g:?}");
    assert_fully_supported(
        "He moved to the U.S. in 1990[^1].",
        "He moved to the U.S. in 1990.",
    );
}

#[test]
fn a_compound_is_found_hyphenated_or_closed_up() {
    for (claim, source) in [
        (
            "She sent an email to the board",
            "She sent an e-mail to the board.",
        ),
        (
            "She sent an e-mail to the board",
            "She sent an email to the board.",
        ),
        (
            "He is the co-founder of the firm",
            "He is the cofounder of the firm.",
        ),
        (
            "He is the cofounder of the firm",
            "He is the co-founder of the firm.",
        ),
    ] {
        assert_found_not_flagged(claim, source);
    }
    for text in [
        "She sent an e-mail to the board",
        "It is a state-of-the-art plant",
        "He was re-elected in 2004",
    ] {
        assert_fully_supported(&format!("{text}[^1]."), &format!("{text}."));
    }
    // Another compound is another word.
    let g = run(
        "She sent a letter to the board[^1].",
        &["She sent an e-mail to the board."],
    );
    assert!(
        g.claims[0].unsupported_terms.iter().any(|t| t == "letter"),
        "{g:?}"
    );
}

#[test]
fn a_currency_sign_reads_as_its_word() {
    for (claim, source) in [
        (
            "The fund raised 5 million dollars",
            "The fund raised $5 million.",
        ),
        (
            "The fund raised $5 million",
            "The fund raised 5 million dollars.",
        ),
        (
            "The bank holds €2.3bn in reserves",
            "The bank holds 2.3 billion euros in reserves.",
        ),
        (
            "The fund raised USD 5 million",
            "The fund raised $5 million.",
        ),
        (
            "The fund raised $5 million",
            "The fund raised USD 5 million.",
        ),
    ] {
        assert_found_not_flagged(claim, source);
    }
    assert_fully_supported(
        "The fund raised $5 million[^1].",
        "The fund raised $5 million.",
    );
    // Another currency is another amount.
    let g = run(
        "The fund raised €5 million[^1].",
        &["The fund raised $5 million."],
    );
    assert!(
        g.claims[0].unsupported_terms.iter().any(|t| t == "€"),
        "{g:?}"
    );
    assert!(
        g.claims[0].support.unwrap() < GroundingSettings::default().min_support,
        "{g:?}"
    );
}

#[test]
fn a_us_dollar_sign_is_the_dollar() {
    for (claim, source) in [
        (
            "The bank earned US$5 billion[^1].",
            "The bank earned $5 billion.",
        ),
        (
            "The bank earned $5 billion[^1].",
            "The bank earned US$5 billion.",
        ),
        (
            "The bank earned US$5 billion[^1].",
            "The bank earned USD 5 billion.",
        ),
        (
            "The bank earned US$5bn[^1].",
            "The bank earned US$5 billion.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    // The source's "US$" still states "US dollars", word by word, and so
    // does a dollar sign no letters name another dollar by.
    for source in [
        "The bank earned US$5 billion.",
        "The bank earned $5 billion.",
    ] {
        assert_found_not_flagged("The bank earned 5 billion US dollars", source);
    }
    assert_still_missing(
        "The bank earned 5 billion US dollars",
        "The bank earned C$5 billion.",
        "us",
    );
    // Another dollar is named by its letters; another amount is another.
    assert_flagged_missing(
        "The bank earned HK$5 billion[^1].",
        "The bank earned $5 billion.",
        &["hk"],
    );
    assert_flagged_missing(
        "The bank earned US$6 billion[^1].",
        "The bank earned US$5 billion.",
        &["6"],
    );
}

#[test]
fn an_acronym_in_the_plural_or_of_a_hyphenated_name_is_found() {
    for (claim, source) in [
        (
            "There were 200 IPOs in 2021[^1].",
            "There were 200 initial public offerings in 2021.",
        ),
        // Opening the claim.
        ("NPLs fell to 2%[^1].", "Non-performing loans fell to 2%."),
        (
            "There were 200 initial public offerings in 2021[^1].",
            "There were 200 IPOs in 2021.",
        ),
        (
            "Investors bought ETFs[^1].",
            "Investors bought exchange-traded funds.",
        ),
        (
            "Investors bought exchange-traded funds[^1].",
            "Investors bought ETFs.",
        ),
        (
            "Banks hold more RWAs[^1].",
            "Banks hold more risk-weighted assets.",
        ),
        (
            "The NPL ratio fell to 2%[^1].",
            "The Non-Performing Loan ratio fell to 2%.",
        ),
        (
            "The bank's IPOs raised $1bn[^1].",
            "The bank's IPO raised $1bn.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    // Another name is still missing.
    assert_flagged_missing(
        "Investors bought ETFs[^1].",
        "Investors bought exchange-traded notes.",
        &["etfs"],
    );
}

#[test]
fn an_iso_date_is_the_date_written_out() {
    for (claim, source) in [
        (
            "The treaty was signed on 2004-05-12 in Dublin[^1].",
            "The treaty was signed on May 12, 2004 in Dublin.",
        ),
        (
            "The treaty was signed on May 12, 2004 in Dublin[^1].",
            "The treaty was signed on 2004-05-12 in Dublin.",
        ),
        (
            "The treaty was signed on 2004-05-12 in Dublin[^1].",
            "The treaty was signed on 2004-05-12 in Dublin.",
        ),
        (
            "The plant opened on 1999-03-01[^1].",
            "The plant opened on March 1, 1999.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    assert_found_not_flagged(
        "The treaty was signed in May 2004",
        "The treaty was signed on 2004-05-12 in Dublin.",
    );
    // Another day is another date, named by the claim's own digits.
    assert_flagged_missing(
        "The treaty was signed on 2004-05-13 in Dublin[^1].",
        "The treaty was signed on May 12, 2004 in Dublin.",
        &["13"],
    );
    // A season is two years, not a date.
    assert_fully_supported(
        "The 2004-05 season was his best[^1].",
        "The 2004-05 season was his best.",
    );
}

#[test]
fn a_date_is_the_same_date_however_it_is_written() {
    for (claim, source) in [
        (
            "The treaty was signed on 12 May 2004 in Dublin[^1].",
            "The treaty was signed on May 12, 2004 in Dublin.",
        ),
        (
            "The treaty was signed on May 12, 2004 in Dublin[^1].",
            "The treaty was signed on 12 May 2004 in Dublin.",
        ),
        (
            "The treaty was signed on 12 May 2004 in Dublin[^1].",
            "The treaty was signed on 2004-05-12 in Dublin.",
        ),
        (
            "The plant opened on 1 March[^1].",
            "The plant opened on March 1.",
        ),
        (
            "The plant opened on 1 March 1999[^1].",
            "The plant opened on 1 March 1999.",
        ),
        (
            "The treaty was signed on the 12th of May 2004 in Dublin[^1].",
            "The treaty was signed on May 12, 2004 in Dublin.",
        ),
        (
            "The treaty was signed on May 12th, 2004 in Dublin[^1].",
            "The treaty was signed on 12 May 2004 in Dublin.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    // A source's date states its month with its year, however it is
    // written.
    for source in [
        "The treaty was signed on May 12, 2004 in Dublin.",
        "The treaty was signed on 12 May 2004 in Dublin.",
        "The treaty was signed on 2004-05-12 in Dublin.",
    ] {
        assert_fully_supported("The treaty was signed in May 2004[^1].", source);
        assert_flagged_missing("The treaty was signed in May 2005[^1].", source, &["2005"]);
    }
    // Another day is another date, named as the claim writes it; another
    // month too.
    for (claim, missing) in [
        ("The treaty was signed on 13 May 2004 in Dublin[^1].", "13"),
        (
            "The treaty was signed on 12 June 2004 in Dublin[^1].",
            "june",
        ),
    ] {
        assert_flagged_missing(
            claim,
            "The treaty was signed on May 12, 2004 in Dublin.",
            &[missing],
        );
    }
}

#[test]
fn a_period_written_short_is_its_words() {
    for (claim, source) in [
        (
            "Revenue rose 5% in Q3 2023[^1].",
            "Revenue rose 5% in third quarter 2023.",
        ),
        (
            "Revenue rose 5% in third quarter 2023[^1].",
            "Revenue rose 5% in Q3 2023.",
        ),
        (
            "Profit fell in FY2023[^1].",
            "Profit fell in fiscal year 2023.",
        ),
        (
            "Profit fell in fiscal year 2023[^1].",
            "Profit fell in FY2023.",
        ),
        ("Sales grew in H1 2024[^1].", "Sales grew in 1st half 2024."),
        // Written number first, and with a year of two digits.
        (
            "Revenue rose 5% in 3Q23[^1].",
            "Revenue rose 5% in Q3 2023.",
        ),
        (
            "Revenue rose 5% in Q3 2023[^1].",
            "Revenue rose 5% in 3Q23.",
        ),
        (
            "Revenue rose 5% in 3Q23[^1].",
            "Revenue rose 5% in the third quarter of 2023.",
        ),
        (
            "Revenue rose 5% in 3Q 2023[^1].",
            "Revenue rose 5% in Q3 2023.",
        ),
        ("Sales grew in 1H2024[^1].", "Sales grew in H1 2024."),
        ("Sales grew in H1 2024[^1].", "Sales grew in 1H24."),
        (
            "Profit fell in FY23[^1].",
            "Profit fell in fiscal year 2023.",
        ),
        ("Profit fell in FY2023[^1].", "Profit fell in FY23."),
        (
            "Profit fell in FY98[^1].",
            "Profit fell in fiscal year 1998.",
        ),
        (
            "Profit fell in FY 2023[^1].",
            "Profit fell in fiscal year 2023.",
        ),
        (
            "Profit fell in fiscal year 2023[^1].",
            "Profit fell in FY 2023.",
        ),
        ("Profit fell in FY 2023[^1].", "Profit fell in FY23."),
    ] {
        assert_fully_supported(claim, source);
    }
    // Another quarter, another year: flagged, named as the claim writes it.
    for (claim, missing) in [
        ("Revenue rose 5% in Q2 2023[^1].", "q2"),
        ("Profit fell in FY2022[^1].", "2022"),
        ("Revenue rose 5% in 4Q23[^1].", "4q23"),
        ("Revenue rose 5% in 3Q22[^1].", "3q22"),
        ("Profit fell in FY24[^1].", "fy24"),
    ] {
        assert_flagged_missing(
            claim,
            "Revenue rose 5% in Q3 2023. Profit fell in fiscal year 2023.",
            &[missing],
        );
    }
}

#[test]
fn a_multiple_written_with_an_x_is_its_number_and_times() {
    for (claim, source) in [
        (
            "Loans grew 2x faster than deposits[^1].",
            "Loans grew two times faster than deposits.",
        ),
        (
            "Loans grew two times faster than deposits[^1].",
            "Loans grew 2X faster than deposits.",
        ),
        (
            "The fund trades at 1.5x book value[^1].",
            "The fund trades at 1.5 times book value.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    // Another multiple is another number.
    for (claim, missing) in [
        ("Loans grew 3x faster than deposits[^1].", "3"),
        ("Loans grew three times faster than deposits[^1].", "three"),
    ] {
        assert_flagged_missing(claim, "Loans grew 2x faster than deposits.", &[missing]);
    }
}

#[test]
fn a_clock_time_is_read_on_the_24_hour_clock() {
    for (claim, source) in [
        (
            "Wires sent after 5 p.m. settle next day[^1].",
            "Wires sent after 5pm settle next day.",
        ),
        (
            "Wires sent after 5:00 p.m. settle next day[^1].",
            "Wires sent after 5 p.m. settle next day.",
        ),
        (
            "Wires sent after 17:00 settle next day[^1].",
            "Wires sent after 5 P.M. settle next day.",
        ),
        (
            "Wires sent after 5 p.m. settle next day[^1].",
            "Wires sent after 17:00 settle next day.",
        ),
        (
            "Wires sent after 10:05 pm settle next day[^1].",
            "Wires sent after 22:05 settle next day.",
        ),
        ("Open from 9am to 5pm[^1].", "Open from 09:00 to 17:00."),
        // Without "a.m." or "p.m." a time may be either; so may an hour.
        (
            "Wires sent after 5:00 settle next day[^1].",
            "Wires sent after 5 p.m. settle next day.",
        ),
        (
            "Wires sent after 5 settle next day[^1].",
            "Wires sent after 5 p.m. settle next day.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    // Another hour, "a.m." for "p.m." and back, other minutes: flagged.
    for (claim, source, missing) in [
        (
            "Wires sent after 6 p.m. settle next day[^1].",
            "Wires sent after 17:00 settle next day.",
            "6 p.m",
        ),
        (
            "Wires sent after 5 a.m. settle next day[^1].",
            "Wires sent after 5 p.m. settle next day.",
            "5 a.m",
        ),
        (
            "Wires sent after 5 p.m. settle next day[^1].",
            "Wires sent after 5 a.m. settle next day.",
            "5 p.m",
        ),
        (
            "Wires sent after 10:05 pm settle next day[^1].",
            "Wires sent after 22:50 settle next day.",
            "10:05 pm",
        ),
    ] {
        assert_flagged_missing(claim, source, &[missing]);
    }
    // Ratios, verses and durations stay numbers, read alike on both sides.
    for text in [
        "The score was 2:0 at 12:00:30[^1].",
        "John 3:16 is quoted[^1].",
    ] {
        assert_fully_supported(text, &text.replace("[^1]", ""));
    }
}

#[test]
fn a_name_glued_to_its_number_reads_as_written_apart() {
    for (claim, source) in [
        (
            "The bank's CET1 ratio was 13.2%[^1].",
            "The bank's Common Equity Tier 1 ratio was 13.2%.",
        ),
        (
            "The bank's Common Equity Tier 1 ratio was 13.2%[^1].",
            "The bank's CET1 ratio was 13.2%.",
        ),
        (
            "The CET1 ratio was 13.2%[^1].",
            "The CET 1 ratio was 13.2%.",
        ),
        ("TiO2 is a photocatalyst[^1].", "TiO 2 is a photocatalyst."),
        (
            "Brady follows the tb12 method[^1].",
            "Brady follows the TB12 method.",
        ),
        // "No1" is one word, "number one": its "no" is no negation.
        ("He is the No1 keeper[^1].", "He is the No1 keeper."),
    ] {
        assert_fully_supported(claim, source);
    }
    // Another tier is another number.
    assert_flagged_missing(
        "The bank's CET2 ratio was 13.2%[^1].",
        "The bank's CET1 ratio was 13.2%.",
        &["2"],
    );
}

#[test]
fn a_change_over_the_period_before_is_its_words_slashed_or_mom() {
    for (claim, source) in [
        (
            "Revenue rose 5% y/y[^1].",
            "Revenue rose 5% year over year.",
        ),
        (
            "Revenue rose 5% year over year[^1].",
            "Revenue rose 5% y/y.",
        ),
        ("Revenue rose 5% YoY[^1].", "Revenue rose 5% Y/Y."),
        (
            "Deposits grew 3% q/q[^1].",
            "Deposits grew 3% quarter over quarter.",
        ),
        ("Sales grew 2% m/m[^1].", "Sales grew 2% month over month."),
        ("Sales grew 2% MoM[^1].", "Sales grew 2% month over month."),
        ("Sales grew 2% month over month[^1].", "Sales grew 2% MoM."),
        // A mother is not a month.
        ("His mom grew roses[^1].", "His mom grew roses."),
    ] {
        assert_fully_supported(claim, source);
    }
    // Another period: flagged, named as the claim writes it.
    assert_flagged_missing(
        "Revenue rose 5% y/y[^1].",
        "Revenue rose 5% quarter over quarter.",
        &["y/y"],
    );
    assert_flagged_missing(
        "Sales grew 2% MoM[^1].",
        "Sales grew 2% as his mom said.",
        &["mom"],
    );
}

#[test]
fn a_financial_abbreviation_is_its_words() {
    for (claim, source) in [
        (
            "Margins widened by 120 bps[^1].",
            "Margins widened by 120 basis points.",
        ),
        (
            "Margins widened by 120 basis points[^1].",
            "Margins widened by 120 bps.",
        ),
        (
            "Revenue grew 5% YoY[^1].",
            "Revenue grew 5% year over year.",
        ),
        (
            "Revenue grew 5% year over year[^1].",
            "Revenue grew 5% YoY.",
        ),
        (
            "EPS rose to $2.10[^1].",
            "Earnings per share rose to $2.10.",
        ),
        (
            "Earnings per share rose to $2.10[^1].",
            "EPS rose to $2.10.",
        ),
        (
            "Deposits fell 3% QoQ[^1].",
            "Deposits fell 3% quarter over quarter.",
        ),
        (
            "The fund is up 4% YTD[^1].",
            "The fund is up 4% year to date.",
        ),
        ("Shares fell 3 pct[^1].", "Shares fell 3%."),
        ("Shares fell 3%[^1].", "Shares fell 3 pct."),
    ] {
        assert_fully_supported(claim, source);
    }
    // "p.a." is "per annum": only the stop word "per" is missing one way.
    let min = GroundingSettings::default().min_support;
    for (claim, source, missing) in [
        (
            "The bond pays 5% per annum[^1].",
            "The bond pays 5% p.a.",
            &["per"][..],
        ),
        (
            "The bond pays 5% p.a[^1].",
            "The bond pays 5% per annum.",
            &[],
        ),
        // "per annum" is "a year" and "annually".
        (
            "The bond pays 5% per annum[^1].",
            "The bond pays 5% a year.",
            &["per"][..],
        ),
        (
            "The bond pays 5% per annum[^1].",
            "The bond pays 5% annually.",
            &["per"][..],
        ),
        (
            "The bond pays 5% annually[^1].",
            "The bond pays 5% per annum.",
            &[],
        ),
        (
            "The bond pays 5% a year[^1].",
            "The bond pays 5% per annum.",
            &[],
        ),
    ] {
        let g = run(claim, &[source]);
        assert_eq!(g.claims[0].unsupported_terms, missing, "{claim}: {g:?}");
        assert!(g.claims[0].support.unwrap() >= min, "{claim}: {g:?}");
    }
    assert_flagged_missing(
        "The bond pays 5% per annum[^1].",
        "The bond pays 5% a month.",
        &["per", "annum"],
    );
    // "daily" is "per day" and "a day".
    assert_found_not_flagged(
        "The daily limit is $10,000",
        "The limit is $10,000 per day.",
    );
    assert_found_not_flagged("The daily limit is $10,000", "The limit is $10,000 a day.");
    let g = run(
        "The limit is $10,000 per day[^1].",
        &["The daily limit is $10,000."],
    );
    assert_eq!(g.claims[0].unsupported_terms, ["per"], "{g:?}");
    assert_flagged_missing(
        "The daily limit is $10,000[^1].",
        "The monthly limit is $10,000.",
        &["daily"],
    );
    // Another number is still another number; a word that only looks like
    // an abbreviation elsewhere is a word.
    assert_flagged_missing(
        "Margins widened by 150 bps[^1].",
        "Margins widened by 120 basis points.",
        &["150"],
    );
    let g = run(
        "Sales rose 5% mom[^1].",
        &["Sales rose 5% month over month."],
    );
    assert_eq!(g.claims[0].unsupported_terms, ["mom"], "{g:?}");
}

#[test]
fn a_rate_in_basis_points_is_its_percent() {
    for (claim, source) in [
        (
            "The Fed raised rates by 0.25% in March[^1].",
            "The Fed raised rates by 25 basis points in March.",
        ),
        (
            "The Fed raised rates by 25 bps in March[^1].",
            "The Fed raised rates by 0.25 percentage points in March.",
        ),
        (
            "The ECB made a 25-basis-point cut[^1].",
            "The ECB made a 0.25% cut.",
        ),
        (
            "The ECB made a 25bp cut[^1].",
            "The ECB made a 0.25 per cent cut.",
        ),
        (
            "Net interest margin was 3.1%[^1].",
            "Net interest margin was 310 basis points.",
        ),
        ("Spreads tightened 1 bp[^1].", "Spreads tightened 0.01%."),
        (
            "Spreads tightened 12.5 BPS[^1].",
            "Spreads tightened 0.125%.",
        ),
        (
            "The yield fell 4 percentage points[^1].",
            "The yield fell 4%.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    // Another rate is still another number, named as the claim writes it.
    for (claim, source, missing) in [
        ("Spreads widened 25 bps[^1].", "Spreads widened 2.5%.", "25"),
        ("Spreads widened 0.25%[^1].", "Spreads widened 25%.", "0.25"),
        ("Costs rose 2 percentage points[^1].", "Costs rose 3%.", "2"),
        (
            "Rates fell 50bps[^1].",
            "Rates fell 25 basis points.",
            "50bps",
        ),
    ] {
        assert_flagged_missing(claim, source, &[missing]);
    }
}

#[test]
fn a_fraction_of_a_point_is_its_percent() {
    for (claim, source) in [
        (
            "The Fed raised rates by a quarter point[^1].",
            "The Fed raised rates by 25 basis points.",
        ),
        (
            "The Fed raised rates by 25 bps[^1].",
            "The Fed raised rates by a quarter-point.",
        ),
        (
            "The ECB cut rates by half a percentage point[^1].",
            "The ECB cut rates by 50 bps.",
        ),
        (
            "The ECB cut rates by 0.5%[^1].",
            "The ECB cut rates by half a percent.",
        ),
        (
            "The BoE cut rates by three-quarters of a point[^1].",
            "The BoE cut rates by 0.75 percentage points.",
        ),
        (
            "The BoE cut rates by 75bp[^1].",
            "The BoE cut rates by three quarters of a point.",
        ),
        (
            "The BoE cut rates by 0.25 percentage points[^1].",
            "The BoE cut rates by a quarter of a percentage point.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    // Another fraction is another number, named as the claim writes it;
    // a fraction of anything but a point is no number.
    for (claim, source, missing) in [
        (
            "The Fed cut rates by half a point[^1].",
            "The Fed cut rates by 25 basis points.",
            "half a point",
        ),
        (
            "The Fed cut rates by a quarter point[^1].",
            "The Fed cut rates by half a point.",
            "quarter point",
        ),
        (
            "The Fed cut rates by 50 basis points[^1].",
            "The Fed cut rates by a quarter point.",
            "50",
        ),
    ] {
        assert_flagged_missing(claim, source, &[missing]);
    }
    assert_still_missing(
        "Half of the loans were repaid",
        "0.5 of the loans were repaid.",
        "half",
    );
}

#[test]
fn up_or_down_before_a_number_is_the_change_it_states() {
    for (claim, source) in [
        (
            "Revenue increased 5% in 2023[^1].",
            "Revenue was up 5% in 2023.",
        ),
        (
            "Deposits fell by $2bn[^1].",
            "Deposits were down by $2 billion.",
        ),
        ("The shares were up 3%[^1].", "The shares were up 3%."),
    ] {
        assert_fully_supported(claim, source);
    }
    for (claim, source) in [
        ("Revenue was up 5%", "Revenue grew 5%."),
        (
            "The stock closed down 2%",
            "The stock closed, having declined 2%.",
        ),
        (
            "Turnover rose 34 per cent",
            "Turnover reached $106 million, up 34 per cent.",
        ),
    ] {
        assert_found_not_flagged(claim, source);
    }
    // A sentence may open with it.
    let g = run(
        "Net income was $5bn. Up 5% on the year[^1].",
        &["Net income was $5bn, an increase of 5% on the year."],
    );
    assert!(g.claims.iter().all(|c| c.support == Some(1.0)), "{g:?}");
    // The other direction is not found; the particle of a verb states no
    // change.
    assert_flagged_missing("Shares were up 3%[^1].", "Shares were down 3%.", &["up"]);
    assert_still_missing(
        "Women increased 11% of the board",
        "Women make up 11% of the board.",
        "increased",
    );
}

/// What qualifier the first claim of `answer` against `source` is found
/// under, and whether it is flagged.
fn qualified(claim: &str, source: &str) -> (Option<&'static str>, bool) {
    let g = run(&format!("{claim}[^1]."), &[source]);
    let c = &g.claims[0];
    (
        c.qualified,
        c.support.unwrap() < GroundingSettings::default().min_support,
    )
}

#[test]
fn a_word_its_best_sentence_only_qualifies_is_not_stated_as_done() {
    // Every word is found; the claim turns a forecast, a plan, a
    // possibility or an allegation into a fact.
    for (claim, source, qualifier) in [
        (
            "The regulator approved the deal",
            "The regulator is expected to approve the deal.",
            "expected to",
        ),
        (
            "The bank cut its dividend",
            "The bank could cut its dividend, analysts said.",
            "could",
        ),
        (
            "The firm cut 200 jobs",
            "The firm plans to cut 200 jobs.",
            "plans to",
        ),
        (
            "The merger was completed in March",
            "The merger is likely to be completed in March.",
            "likely to",
        ),
        (
            "Early repayment charges apply",
            "Early repayment charges may apply.",
            "may",
        ),
        ("He stole $5m", "He allegedly stole $5m.", "allegedly"),
        // "May" the month in the claim is no qualifier of its own.
        (
            "The chief executive resigned in May",
            "The chief executive is expected to resign in May.",
            "expected to",
        ),
        // An adverb passes the qualifier on to its verb.
        (
            "The bank cut its dividend",
            "The bank could sharply cut its dividend.",
            "could",
        ),
        (
            "The bank acquired the lender",
            "The bank failed to acquire the lender.",
            "failed to",
        ),
        // A sale only weighed.
        (
            "The bank is selling its stake",
            "The bank is considering selling its stake.",
            "considering",
        ),
        // A first place the source ranks lower.
        (
            "HSBC is the largest bank in Europe",
            "HSBC is the second-largest bank in Europe.",
            "second",
        ),
        // One of several.
        (
            "HSBC is the largest bank in Europe",
            "HSBC is one of the largest banks in Europe.",
            "one of",
        ),
        (
            "Lloyds is the biggest mortgage lender",
            "Lloyds is one of the country's biggest mortgage lenders.",
            "one of",
        ),
        (
            "HSBC is the most successful bank in Asia",
            "HSBC is one of the most successful banks in Asia.",
            "one of",
        ),
        (
            "It was the most popular fund of the year",
            "It was the second most popular fund of the year.",
            "second",
        ),
        // A claim's own rank answers a rank only.
        (
            "Among other deals, the bank acquired the lender",
            "The bank failed to acquire the lender.",
            "failed to",
        ),
        (
            "One of the largest banks approved the deal",
            "One of the largest banks is expected to approve the deal.",
            "expected to",
        ),
        // A possibility ("redeemable") is no deed, but it can be ranked.
        (
            "HSBC is the most profitable bank in Europe",
            "HSBC is one of the most profitable banks in Europe.",
            "one of",
        ),
        (
            "Mall del Norte is the largest mall in South Texas",
            "Mall del Norte is the 2nd largest mall in South Texas.",
            "2nd",
        ),
        (
            "It was the best quarter on record",
            "It was the third best quarter on record.",
            "third",
        ),
        // A certain future overstates a possibility or a forecast.
        (
            "The bank will cut its dividend",
            "The bank may cut its dividend.",
            "may",
        ),
        (
            "Profit will rise 10% next year",
            "Profit is forecast to rise 10% next year.",
            "forecast to",
        ),
    ] {
        assert_eq!(
            qualified(claim, source),
            (Some(qualifier), true),
            "{claim} / {source}"
        );
    }
    let g = run(
        "The regulator approved the deal[^1].",
        &["The regulator is expected to approve the deal."],
    );
    let detail = explain::unsupported_detail(0, &g.claims[0]);
    assert!(
        detail.ends_with("; the source qualifies it with \"expected to\""),
        "{detail}"
    );
    // The claim qualifies it too, or states it where the sentence also
    // does plainly, or the qualifier governs another word: not flagged.
    for (claim, source) in [
        (
            "The regulator is likely to approve the deal",
            "The regulator is expected to approve the deal.",
        ),
        (
            "Customers can withdraw funds at any time",
            "Customers may withdraw funds at any time.",
        ),
        ("The CEO wants to step down", "The CEO plans to step down."),
        (
            "Shares are redeemable daily",
            "Investors may redeem shares daily.",
        ),
        (
            "The bank cut its dividend",
            "The bank cut its dividend, and analysts expect it to cut again.",
        ),
        (
            "The company reported a rise in revenue",
            "The company, which may be sold, reported a rise in revenue.",
        ),
        // A verb of deliberation governs only a gerund.
        (
            "The bank grew despite its size",
            "Considering its size, the bank grew.",
        ),
        // A rank governs only a superlative, and a claim that ranks
        // states no first place.
        (
            "Revenue rose in the quarter",
            "Revenue rose in the second quarter.",
        ),
        (
            "HSBC is one of the largest banks in Europe",
            "HSBC is the second-largest bank in Europe.",
        ),
        (
            "HSBC is one of the largest banks in Europe",
            "HSBC is one of the largest banks in Europe.",
        ),
        (
            "HSBC is among the largest banks in Europe",
            "HSBC is one of the largest banks in Europe.",
        ),
        (
            "Mall del Norte is the 2nd largest mall in South Texas",
            "Mall del Norte is the 2nd largest mall in South Texas.",
        ),
        (
            "Revenue rose in the 3rd quarter",
            "Revenue rose in the 3rd quarter.",
        ),
        (
            "HSBC is the most successful bank in Asia",
            "HSBC is the most successful bank in Asia.",
        ),
        // "One" before anything but a superlative ranks nothing.
        (
            "The bank has the largest branch network",
            "The bank opened one branch and has the largest branch network.",
        ),
        // "May" the month is no qualifier.
        ("Revenue rose in 2024", "Revenue rose in May 2024."),
    ] {
        assert_eq!(qualified(claim, source).0, None, "{claim} / {source}");
    }
    // Two claims against one qualified sentence are judged alike, and the
    // next record's sentence of the same number is read as its own.
    let g = run(
        "The regulator approved the deal[^1]. The deal was approved by the regulator[^1].",
        &["The regulator is expected to approve the deal."],
    );
    assert!(
        g.claims.iter().all(|c| c.qualified == Some("expected to")),
        "{g:?}"
    );
    assert_fully_supported(
        "The regulator approved the deal[^1].",
        "The regulator approved the deal and may approve the merger.",
    );
    // The sentence with the word stated plainly is the best one.
    assert_fully_supported(
        "Profits rose 5% last year[^1].",
        "Profits could rise as rates climb. Profits rose 5% last year.",
    );
    // The qualifier ends with its sentence.
    assert_fully_supported("Fees apply[^1].", "The rate may change. Fees apply.");
}

#[test]
fn cents_are_a_price_in_dollars_or_euros() {
    for (claim, source) in [
        (
            "The dividend is 50 cents a share[^1].",
            "The dividend is $0.50 a share.",
        ),
        (
            "The dividend is $0.50 a share[^1].",
            "The dividend is 50 cents a share.",
        ),
        (
            "The dividend is €0.50 a share[^1].",
            "The dividend is 50 cents a share.",
        ),
        ("The fee is 5 cents[^1].", "The fee is $0.05."),
        ("EPS was $1.50[^1].", "EPS was 150 cents."),
        ("The fee is 50 cents[^1].", "The fee is 50 cents."),
    ] {
        assert_fully_supported(claim, source);
    }
    // Another amount, or pence, is not found.
    for (claim, source, missing) in [
        (
            "The stock fell 30 cents[^1].",
            "The stock fell 40 cents.",
            "30 cents",
        ),
        (
            "The stock fell $0.30[^1].",
            "The stock fell 3 cents.",
            "0.30",
        ),
        ("The fee is 50 cents[^1].", "The fee is £0.50.", "cents"),
    ] {
        assert_flagged_missing(claim, source, &[missing]);
    }
}

#[test]
fn words_of_financial_reporting_are_found_by_each_other() {
    for (claim, source) in [
        ("The firm has 500 staff[^1].", "The firm has 500 employees."),
        ("The firm has 500 employees[^1].", "The firm has 500 staff."),
        ("The bank posted a loss[^1].", "The bank reported a loss."),
        ("The bank reported a loss[^1].", "The bank posted a loss."),
        (
            "Google bought the company[^1].",
            "Google acquired the company.",
        ),
        (
            "Google acquired the company[^1].",
            "Google bought the company.",
        ),
        ("Turnover rose 5%[^1].", "Revenue rose 5%."),
        (
            "The takeover was approved[^1].",
            "The acquisition was approved.",
        ),
        ("Shares fell 3%[^1].", "The stock fell 3%."),
        (
            "The deal was announced on Monday[^1].",
            "The deal was unveiled on Monday.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    for (claim, source) in [
        (
            "The firm was bankrupt in 2008",
            "The firm filed for bankruptcy in 2008.",
        ),
        ("Unemployment was 4.1%", "The jobless rate was 4.1%."),
        (
            "The bank repurchased $1 billion of stock",
            "The bank bought back $1bn of shares.",
        ),
        (
            "The bank was fined $5 million",
            "The bank paid a $5 million penalty.",
        ),
    ] {
        assert_found_not_flagged(claim, source);
    }
    // "bought back" is read as "repurchased" (see `phrases`).
    assert_fully_supported(
        "The bank bought back $1bn of shares[^1].",
        "The bank repurchased $1 billion of shares.",
    );
    // An opposite, or a measure the table does not join, is not found.
    assert_flagged_missing(
        "The bank sold the company[^1].",
        "The bank bought the company.",
        &["sold"],
    );
    assert_still_missing("Revenue rose 5%", "Profit rose 5%.", "revenue");
}

#[test]
fn a_change_is_found_by_another_verb_of_its_direction() {
    for (claim, source) in [
        (
            "Revenue increased 5% in 2023[^1].",
            "Revenue rose 5% in 2023.",
        ),
        ("Revenue rose 5% in 2023[^1].", "Revenue grew 5% in 2023."),
        (
            "Deposits declined 3% in 2023[^1].",
            "Deposits fell 3% in 2023.",
        ),
        ("Costs were reduced by 3%[^1].", "Costs dropped by 3%."),
    ] {
        assert_found_not_flagged(claim.trim_end_matches("[^1]."), source);
    }
    // The other direction is still the opposite, and flagged.
    let g = run(
        "Revenue declined 5% in 2023[^1].",
        &["Revenue rose 5% in 2023."],
    );
    let min = GroundingSettings::default().min_support;
    assert!(g.claims[0].support.unwrap() < min, "{g:?}");
}

#[test]
fn a_phrasal_verb_is_found_by_the_verb_it_means() {
    let pairs = [
        (
            "The chief executive stepped down in May",
            "The chief executive resigned in May.",
        ),
        (
            "The bank bought back shares worth $5 billion",
            "The bank repurchased shares worth $5 billion.",
        ),
        (
            "The bank repaid $5 million",
            "The bank paid back $5 million.",
        ),
        ("He died in 1990", "He passed away in 1990."),
        (
            "The meeting happened in Paris",
            "The meeting took place in Paris.",
        ),
        (
            "The company was founded in 1690",
            "The company was set up in 1690.",
        ),
        ("The plant closed in 2019", "The plant shut down in 2019."),
    ];
    for (claim, source) in pairs {
        // Either way round, and the phrase against itself.
        assert_fully_supported(&format!("{claim}[^1]."), source);
        let other = source.trim_end_matches('.');
        assert_fully_supported(&format!("{other}[^1]."), &format!("{claim}."));
        assert_fully_supported(&format!("{other}[^1]."), source);
    }
    // The verb alone, or with its particle further on, still finds the
    // verb of a phrase, as it did before phrases were read.
    for (claim, source) in [
        (
            "The company paid $5 million to its lenders",
            "The company paid back $5 million to its lenders.",
        ),
        (
            "The company paid back the loan",
            "The company paid the loan back.",
        ),
    ] {
        assert_found_not_flagged(claim, source);
    }
    // Said of another name, a phrase is named whole.
    let board = "John Smith stepped down as chairman. Jane Doe joined the board in 2019.";
    assert_eq!(
        misattributed("Jane Doe resigned as chairman[^1].", &[board]),
        (Some(("stepped down".into(), "John Smith".into())), true)
    );
    // A phrase is no word of its own: "shut down" is not "opened".
    assert_still_missing(
        "The bank shut down 50 branches",
        "The bank opened 50 branches.",
        "shut down",
    );
}

#[test]
fn an_irregular_past_is_found_by_its_participle() {
    for (claim, source) in [
        (
            "The novel was written by George Orwell in 1948",
            "George Orwell wrote the novel in 1948.",
        ),
        (
            "George Orwell wrote the novel in 1948",
            "The novel was written by George Orwell in 1948.",
        ),
        (
            "The prize was given to Curie in 1903",
            "The committee gave the prize to Curie in 1903.",
        ),
        (
            "The bridge was known as the Iron Bridge",
            "People knew the bridge as the Iron Bridge.",
        ),
    ] {
        assert_found_not_flagged(claim, source);
    }
    // Not the base form: a dialogue's "know" is not a source's "known".
    assert_still_missing(
        "They know the bridge",
        "The bridge was known to them.",
        "know",
    );
    assert_still_missing(
        "George Orwell writes novels",
        "George Orwell wrote novels.",
        "writes",
    );
}

#[test]
fn a_rate_is_the_same_with_or_without_trailing_zeros() {
    for (claim, source) in [
        ("The rate is 4.5 percent[^1].", "The rate is 4.50%."),
        ("The rate is 4.50%[^1].", "The rate is 4.5 percent."),
        ("The rate is 4%[^1].", "The rate is 4.00%."),
        ("The rate rose 4.50 per cent[^1].", "The rate rose 4.5%."),
        // A point with only zeros after it, anywhere.
        ("It cost $3[^1].", "It cost $3.00."),
        ("The ratio was 3.0 times[^1].", "The ratio was 3 times."),
        ("It weighs 2 kg[^1].", "It weighs 2.0 kg."),
        (
            "It rose 10.0 points in 2023[^1].",
            "It rose 10 points in 2023.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    // Other digits are another rate; trailing zeros after other digits
    // count where no percent follows ("Section 4.10" is not "Section 4.1").
    assert_flagged_missing("The rate is 4.05%[^1].", "The rate is 4.5%.", &["4.05"]);
    assert_flagged_missing("The rate is 40%[^1].", "The rate is 4.0%.", &["40"]);
    assert_flagged_missing("See Section 4.1[^1].", "See Section 4.10.", &["4.1"]);
    assert_flagged_missing("It cost $30[^1].", "It cost $3.00.", &["30"]);
}

#[test]
fn a_negative_number_is_not_its_positive() {
    for (claim, source) in [
        (
            "The temperature fell to -5 degrees[^1].",
            "The temperature fell to -5 degrees.",
        ),
        (
            "The temperature fell to minus 5 degrees[^1].",
            "The temperature fell to \u{2212}5 degrees.",
        ),
        ("The range is 5-10 metres[^1].", "The range is 5-10 metres."),
    ] {
        assert_fully_supported(claim, source);
    }
    for (claim, source, missing) in [
        (
            "The temperature fell to 5 degrees[^1].",
            "The temperature fell to -5 degrees.",
            "5",
        ),
        (
            "The temperature fell to -5 degrees[^1].",
            "The temperature fell to 5 degrees.",
            "-5",
        ),
        (
            "The temperature fell to minus 5 degrees[^1].",
            "The temperature fell to 5 degrees.",
            "minus 5",
        ),
    ] {
        assert_flagged_missing(claim, source, &[missing]);
    }
}

#[test]
fn a_slash_between_units_is_per() {
    for (claim, source) in [
        (
            "The train reaches 300 kilometres per hour[^1].",
            "The train reaches 300 km/h.",
        ),
        (
            "The train reaches 300 km/h[^1].",
            "The train reaches 300 kilometres per hour.",
        ),
        (
            "The ball fell at 9.8 metres per second[^1].",
            "The ball fell at 9.8 m/s.",
        ),
        ("Use TCP/IP and/or UDP[^1].", "Use TCP/IP and/or UDP."),
    ] {
        assert_fully_supported(claim, source);
    }
    // Another unit is still another unit.
    let g = run(
        "The train reaches 300 km/h[^1].",
        &["The train reaches 300 mph."],
    );
    assert!(
        g.claims[0].support.unwrap() < GroundingSettings::default().min_support,
        "{g:?}"
    );
}

#[test]
fn a_letter_with_an_accent_finds_its_plain_letter() {
    for (claim, source) in [
        (
            "Sebastien Buemi won the race in Sao Paulo[^1].",
            "Sébastien Buemi won the race in São Paulo.",
        ),
        (
            "Sébastien Buemi won the race in São Paulo[^1].",
            "Sebastien Buemi won the race in Sao Paulo.",
        ),
        (
            "The summit was held in Zürich[^1].",
            "The summit was held in Zurich.",
        ),
        (
            "The café draws naïve painters[^1].",
            "The cafe draws naive painters.",
        ),
        ("Łódź lies near Kraków[^1].", "Lodz lies near Krakow."),
        ("The Straße is closed[^1].", "The Strasse is closed."),
    ] {
        assert_fully_supported(claim, source);
    }
    // Another name is still another name, and a finding names the word as
    // the claim writes it.
    let g = run(
        "The summit was held in Zürich[^1].",
        &["The summit was held in Geneva."],
    );
    assert_eq!(g.claims[0].unsupported_terms, ["zürich"], "{g:?}");
}

#[test]
fn a_number_glued_to_its_unit_is_the_number_and_the_unit() {
    for (claim, source) in [
        ("The route is 5 km long[^1].", "The route is 5km long."),
        ("The route is 5km long[^1].", "The route is 5 km long."),
        (
            "The drive holds 1.5GB of data[^1].",
            "The drive holds 1.5 GB of data.",
        ),
        (
            "The meeting starts at 2 pm[^1].",
            "The meeting starts at 2pm.",
        ),
        (
            "The meeting starts at 2pm[^1].",
            "The meeting starts at 2 p.m.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    assert_found_not_flagged("The route is 5 kilometres long", "The route is 5km long.");
    // The number stays strict.
    let g = run("The route is 6km long[^1].", &["The route is 5 km long."]);
    assert_eq!(g.claims[0].unsupported_terms, ["6"], "{g:?}");
    // Ordinals, decades and scales keep their reading.
    assert_fully_supported(
        "He finished 7th in the 1960s[^1].",
        "He finished 7th in the 1960s.",
    );
    assert_fully_supported("The fund raised $5m[^1].", "The fund raised $5 million.");
}

#[test]
fn per_cent_is_percent() {
    assert_fully_supported(
        "Inflation rose 5 per cent last year[^1].",
        "Inflation rose 5% last year.",
    );
    assert_fully_supported(
        "Inflation rose 5% last year[^1].",
        "Inflation rose 5 per cent last year.",
    );
    assert_fully_supported(
        "Inflation rose 5 percent last year[^1].",
        "Inflation rose 5 per cent last year.",
    );
    // Only after a number: "per" and "cent" are words elsewhere.
    let g = run(
        "The tax is charged per cent of value[^1].",
        &["The tax is charged on the value."],
    );
    assert_eq!(g.claims[0].unsupported_terms, ["per", "cent"], "{g:?}");
}

#[test]
fn a_claim_made_up_between_supported_ones_is_flagged_on_its_own_words() {
    let source = "The bank opened its first branch in Leeds. It now serves small \
                  businesses across the north of England. Its lending grew steadily \
                  through the decade.";
    let answer = "The bank opened its first branch in Leeds[^1]. Customers praise the \
                  friendly staff and the modern mobile application[^1]. Its lending grew \
                  steadily through the decade[^1].";
    let g = run(answer, &[source]);
    let supports: Vec<f64> = g.claims.iter().filter_map(|c| c.support).collect();
    assert_eq!(supports.len(), 3, "{g:?}");
    assert_eq!((supports[0], supports[2]), (1.0, 1.0), "{g:?}");
    let min = GroundingSettings::default().min_support;
    assert!(supports[1] < min, "{g:?}");
    // The answer's other claims do not lift it: alone, it scores alike.
    let alone = run(
        "Customers praise the friendly staff and the modern mobile application[^1].",
        &[source],
    );
    assert!(alone.score.is_some_and(|s| s < min), "{alone:?}");
}

#[test]
fn reading_every_word_counts_the_words_grounding_reads() {
    // The raw text: a marker's number is a word here (the claims pass skips
    // markers); punctuation and spaces are none; a number glued to its unit
    // and a contraction are one word each, as the scanner splits them.
    let texts = [
        "Marie Curie was born in Warsaw[^1].",
        "It's 5km away, not 6.",
    ];
    assert_eq!(read_every_word(&texts), 7 + 5);
    assert_eq!(read_every_word(&[]), 0);
    assert_eq!(read_every_word(&["", " - ... "]), 0);
}

#[test]
fn a_deployments_own_coefficients_score_what_the_model_scores() {
    let with = |coefficients| {
        let settings = GroundingSettings {
            coefficients,
            ..Default::default()
        };
        move |answer: &str, source: &str| {
            let parsed = citation::parse(answer, 1);
            analyze(answer, &parsed.citations, &[source], &settings).score
        }
    };
    let source = "The fund raised 5 million dollars from pension funds in 2021.";
    // One word the source lacks: the model decides.
    let missing = "The fund quickly raised 5 million dollars in 2021[^1].";
    let shipped = with(model::COEFFICIENTS)(missing, source).unwrap();
    assert!(shipped > 0.0 && shipped < 1.0, "{shipped}");
    let lenient = with([20.0, 0.0, 0.0, 0.0])(missing, source).unwrap();
    let strict = with([-20.0, 0.0, 0.0, 0.0])(missing, source).unwrap();
    assert_eq!((lenient, strict), (1.0, 0.0));
    // The rules stand whatever the model: every word found is full
    // support, a number the source lacks is contradicted.
    let copied = "The fund raised 5 million dollars from pension funds in 2021[^1].";
    assert_eq!(with([-20.0, 0.0, 0.0, 0.0])(copied, source), Some(1.0));
    let wrong = "The fund raised 6 million dollars from pension funds in 2021[^1].";
    let capped = with([20.0, 0.0, 0.0, 0.0])(wrong, source).unwrap();
    assert!(capped <= model::BROKEN, "{capped}");
}

const BEOWULF: &str = "He wrote the screenplays for \"Silent Hill\" and \"Beowulf\".Beowulf is a 2007 British-American 3D motion capture epic fantasy film directed by Robert Zemeckis and written by Neil Gaiman and Roger Avary, based on the Old English epic poem of the same name.";

/// What the first claim of `answer` against `sources` is misattributed
/// by (the source's word and name), and whether it is flagged.
fn misattributed(answer: &str, sources: &[&str]) -> (Option<(String, String)>, bool) {
    let g = run(answer, sources);
    let c = &g.claims[0];
    (
        c.misattributed
            .as_deref()
            .map(|m| (m.word.clone(), m.name.clone())),
        c.support.unwrap() < GroundingSettings::default().min_support,
    )
}

#[test]
fn a_comparison_its_source_states_the_other_way_round_is_misattributed() {
    let said = |word: &str, name: &str| Some((word.to_string(), name.to_string()));
    for (claim, source, word, name) in [
        (
            "Lloyds is larger than Barclays[^1].",
            "Barclays is larger than Lloyds by total assets.",
            "larger",
            "Barclays",
        ),
        (
            "Kim Clijsters is older than Mary Pierce[^1].",
            "Mary Pierce is older than Kim Clijsters.",
            "older",
            "Mary Pierce",
        ),
        (
            "Costs grew faster than revenue in 2023[^1].",
            "In 2023 revenue grew faster than costs.",
            "faster",
            "revenue",
        ),
        (
            "The White House is larger than the guest house[^1].",
            "The President's Guest House is larger than the White House.",
            "larger",
            "Guest House",
        ),
    ] {
        assert_eq!(
            misattributed(claim, &[source]),
            (said(word, name), true),
            "{claim}"
        );
    }
    let g = run(
        "Lloyds is larger than Barclays[^1].",
        &["Barclays is larger than Lloyds."],
    );
    let w = explain::unsupported_detail(0, &g.claims[0]);
    assert!(
        w.ends_with("; the source says \"larger\" of \"Barclays\""),
        "{w}"
    );
    for (claim, source) in [
        // Stated the claim's way round, once of two.
        (
            "Revenue grew faster than costs in 2023[^1].",
            "Costs grew faster than revenue in 2022, but in 2023 revenue grew faster than costs.",
        ),
        (
            "Barclays is larger than Lloyds[^1].",
            "Barclays is larger than Lloyds.",
        ),
        // A word on both sides orders nothing: the claim drops the
        // source's second "average".
        (
            "The average lifetime earnings of an engineer are higher than the lifetime earnings of a player[^1].",
            "The average lifetime earnings of an engineer are higher than the average lifetime earnings of a player.",
        ),
        // Compared with the same thing, in another order of the rest.
        (
            "Inflation was higher than expected in March[^1].",
            "Inflation in March was higher than expected.",
        ),
    ] {
        assert_eq!(misattributed(claim, &[source]).0, None, "{claim}");
    }
}

#[test]
fn a_first_name_opening_a_claim_is_a_name() {
    let source = "Smith was named the game's most valuable player in 2014. \
                  Former President Obama praised the team.";
    // A name the sources lack, first in the claim as anywhere else.
    for claim in [
        "Malcolm Smith was named the game's most valuable player in 2014[^1].",
        "The game's most valuable player in 2014 was Malcolm Smith[^1].",
    ] {
        let g = run(claim, &[source]);
        let c = &g.claims[0];
        assert_eq!(c.evidence.unwrap().features[1], 1.0, "{claim}: {g:?}");
        assert!(c.support.unwrap() <= model::BROKEN, "{claim}: {g:?}");
    }
    // A word of the language opening a claim is no name ("Former").
    let g = run("Former President Obama praised the team[^1].", &[source]);
    assert_eq!(g.claims[0].support, Some(1.0), "{g:?}");
    let g = run("Recently President Obama praised the team[^1].", &[source]);
    assert_eq!(g.claims[0].unsupported_terms, ["recently"], "{g:?}");
    assert_eq!(g.claims[0].evidence.unwrap().features[1], 0.0, "{g:?}");
}

#[test]
fn a_word_said_of_both_names_must_be_said_of_each() {
    let source = "Eatza Pizza is a pizza buffet chain founded in Arizona in 1997. \
                  Your Pie is a fast casual pizza chain. \
                  It was founded in Athens, Georgia, in 2008.";
    for claim in [
        "Both Eatza Pizza and Your Pie were founded in Arizona[^1].",
        "Eatza Pizza and Your Pie were both founded in Arizona[^1].",
    ] {
        let g = run(claim, &[source]);
        let c = &g.claims[0];
        assert!(c.support.unwrap() <= model::BROKEN, "{claim}: {g:?}");
        assert!(
            unsupported_detail(0, c)
                .ends_with("; the source does not say \"Arizona\" of \"Your Pie\""),
            "{claim}: {g:?}"
        );
    }
    // Said of each: the sentence after a name's may name it by a pronoun.
    for claim in [
        "Both Eatza Pizza and Your Pie are pizza chains[^1].",
        "Both Eatza Pizza and Your Pie were founded[^1].",
    ] {
        let g = run(claim, &[source]);
        assert!(g.claims[0].misattributed.is_none(), "{claim}: {g:?}");
        assert!(
            g.claims[0].support.unwrap() > model::BROKEN,
            "{claim}: {g:?}"
        );
    }
}

#[test]
fn a_relation_word_the_source_says_of_another_name_is_misattributed() {
    // Every word is found; only the pair "Gaiman directed" is not, and the
    // source says "directed" of Robert Zemeckis.
    let answer = "Neil Gaiman directed Beowulf[^1].";
    let g = run(answer, &[BEOWULF]);
    let c = &g.claims[0];
    assert!(c.unsupported_terms.is_empty(), "{c:?}");
    assert!(c.support.unwrap() <= model::BROKEN, "{c:?}");
    assert_eq!(
        misattributed(answer, &[BEOWULF]),
        (Some(("directed".into(), "Robert Zemeckis".into())), true)
    );
    let d = unsupported_detail(0, c);
    assert!(
        d.ends_with("; the source says \"directed\" of \"Robert Zemeckis\""),
        "{d}"
    );
    let min = GroundingSettings::default().min_support;
    let p = prompt_addendum(answer, &g, min, false).unwrap();
    assert!(
        p.contains("the source says \"directed\" of \"Robert Zemeckis\""),
        "{p}"
    );
    // A source seen before on the thread is replayed from its cache with
    // where its sentences start: the third time, read from the cache.
    let first = "Beowulf is a 2007 film directed by Robert Zemeckis. It was released in November.";
    for _ in 0..3 {
        assert_eq!(
            misattributed(answer, &[first]).0,
            Some(("directed".into(), "Robert Zemeckis".into()))
        );
    }
    // Passive against passive, among other sentences of the source.
    let ceremony = "The ceremony was chaired by Isabelle Mergault. \"Tell No One\" won the award for Best Film. Written by Canet and Philippe Lefebvre and starring François Cluzet, the film won four categories.";
    assert_eq!(
        misattributed(
            "The ceremony was chaired by François Cluzet[^1].",
            &[ceremony]
        ),
        (Some(("chaired".into(), "Isabelle Mergault".into())), true)
    );
    // A number between the word and the name is no party.
    let college = "Balston was educated at New College, Oxford. Founded in 1379 by William of Wykeham, the full name of the college is St Mary's College of Winchester in Oxford.";
    assert_eq!(
        misattributed("Thomas Balston founded St Mary's College[^1].", &[college]).0,
        Some(("Founded".into(), "William of Wykeham".into()))
    );
}

#[test]
fn a_word_the_source_says_in_a_sentence_about_another_name_is_misattributed() {
    // No name stands beside "food" in the source: the sentence that says it
    // opens with the name it is said of, and the claim's name is not in it.
    let magazines = "Cooking Light is an American monthly food and lifestyle magazine founded in 1987.Hot Rod is a monthly American car magazine devoted to hot rodding.";
    for (claim, source, word, name) in [
        (
            "Hot Rod is a food magazine",
            magazines,
            "food",
            "Cooking Light",
        ),
        (
            "Hot Rod was founded in 1987",
            magazines,
            "founded",
            "Cooking Light",
        ),
        // A claim's first word and a sentence's first word, each a name alone.
        (
            "Barclays raised its mortgage rates",
            "Lloyds raised its mortgage rates on Monday. Barclays kept its rates unchanged.",
            "raised",
            "Lloyds",
        ),
        (
            "Santander bought the lender in 2023",
            "Santander is a Spanish bank. Monzo bought the lender in 2023.",
            "bought",
            "Monzo",
        ),
        // A name's word the source writes in lower case, as a word of its
        // own ("a research university located"), is not the name.
        (
            "Stanford University is located in Chestnut Hill",
            "Boston College is a private research university located in the village of Chestnut Hill, Massachusetts.Stanford University is a private research university in Stanford, California.",
            "located",
            "Boston College",
        ),
        // A passive claim: the party is whom the word was done to, not
        // who did it ("The FCA fined Lloyds").
        (
            "Barclays was fined $5m",
            "Barclays is a bank. The FCA fined Lloyds $5m on Monday.",
            "fined",
            "Lloyds",
        ),
        // ... nor is who did it, after "by": the sentence's opening name is
        // whom it was done to.
        (
            "Monzo is owned by Barclays",
            "Monzo is a digital bank in London. Starling Bank is a digital bank owned by Barclays.",
            "owned",
            "Starling Bank",
        ),
        // After "The", and with "of" inside the name.
        (
            "HSBC raised its mortgage rates",
            "HSBC is a bank. The Bank of Ireland on Monday raised its mortgage rates.",
            "raised",
            "Bank of Ireland",
        ),
    ] {
        assert_eq!(
            misattributed(&format!("{claim}[^1]."), &[source]),
            (Some((word.into(), name.into())), true),
            "{claim}"
        );
    }
    for (claim, source) in [
        // The sentence names the claim's party too.
        (
            "Curie won the prize in 1903[^1].",
            "Marie Curie was born in Warsaw. Together with Pierre Curie she won the prize in 1903.",
        ),
        // The sentence opens with no name: a pronoun, a preposition, a
        // capitalised word alone.
        (
            "Acme Corp is based in Ohio[^1].",
            "Acme Corp was founded in 1990. Its headquarters are based in Ohio.",
        ),
        (
            "Acme Corp is based in Ohio[^1].",
            "Acme Corp was founded in 1990. In Ohio Dayton Ltd is based there too, and Acme is based in Ohio.",
        ),
        (
            "Barclays cut 500 jobs[^1].",
            "Barclays said it would restructure. Meanwhile, 500 jobs were cut.",
        ),
        // The word after a report: the reporter is not the party.
        (
            "Deutsche Bank agreed to pay $7.2bn[^1].",
            "Deutsche Bank settled. The Justice Department said the lender agreed to pay $7.2bn.",
        ),
        // A name in a clause apart ("Based in London"): not one name.
        (
            "Wise Plc trains its staff[^1].",
            "Wise Plc is a fintech company. Based in London, the firm trains its staff.",
        ),
        // A pronoun between the name and the word, or as the word's
        // object, stands for a party the sentence does not name.
        (
            "Barclays reported a loss[^1].",
            "Barclays is a bank. Quarterly results showed it reported a loss.",
        ),
        (
            "Revolut was founded in 2015[^1].",
            "Revolut is a fintech company. Nikolay Storonsky founded it in 2015.",
        ),
        // A passive claim names whom the word was done to; the name right
        // before the word in the active voice is who did it.
        (
            "Revolut Ltd was founded in 2015[^1].",
            "Revolut Ltd is a fintech company. Nikolay Storonsky founded the company in 2015.",
        ),
        (
            "Revolut was acquired in 2015[^1].",
            "Revolut is a fintech company. HSBC acquired the company in 2015.",
        ),
        (
            "Monzo is owned by Barclays[^1].",
            "Monzo is a digital bank in London. The bank is owned by Barclays.",
        ),
        (
            "Curie won the prize in 1903[^1].",
            "Marie Curie was born in Warsaw. Together with Pierre she won the prize in 1903.",
        ),
        // A word alone that opens a sentence as an adverb or a participle,
        // or is a word of the language.
        (
            "Barclays cut 500 jobs[^1].",
            "Barclays is a bank. Separately 500 jobs were cut.",
        ),
        (
            "Lloyds varied its names[^1].",
            "Lloyds is a bank. Somewhere along the way, the bank varied its names.",
        ),
        // Nor is a claim's name read across a pronoun before its word.
        (
            "Educate them to use fraud checks[^1].",
            "Barclays staff use fraud checks daily. Educating staff matters.",
        ),
        // A sentence that opens with a preposition, and a pronoun after a
        // comma: the name that opens it is not the subject.
        (
            "Standard Chartered makes most of its profit in Asia[^1].",
            "Standard Chartered is a British bank. Unlike HSBC, the lender makes most of its profit in Asia.",
        ),
        (
            "Standard Chartered makes most of its profit in Asia[^1].",
            "Standard Chartered is a British bank. HSBC Holdings is larger, but it makes most of its profit in Asia.",
        ),
    ] {
        let (m, flagged) = misattributed(claim, &[source]);
        assert_eq!(m, None, "{claim}");
        assert!(!flagged, "{claim}");
    }
}

#[test]
fn a_relation_the_source_states_in_another_voice_or_in_a_list_is_not_misattributed() {
    let min = GroundingSettings::default().min_support;
    for claim in [
        // Passive and active voice: "directed by Robert Zemeckis" names
        // the party "Zemeckis directed" does.
        "Beowulf was directed by Robert Zemeckis",
        "Robert Zemeckis directed Beowulf",
        "Zemeckis directed Beowulf",
        // The second name of a list the word is said of.
        "Beowulf was written by Roger Avary",
        "The fantasy film was written by Neil Gaiman",
        // Names joined by "and" are a list, not a relation.
        "Neil Gaiman and Roger Avary wrote the film",
    ] {
        let g = run(&format!("{claim}[^1]."), &[BEOWULF]);
        let c = &g.claims[0];
        assert_eq!(c.misattributed, None, "{claim}");
        assert!(c.support.unwrap() >= min, "{claim}: {c:?}");
    }
    for (claim, source) in [
        // A word the sources say of several names says nothing of whom.
        (
            "The song was sung by Ann Lee[^1].",
            "The song Blue was sung by Tom Hart. The song Red was sung by Joe Moss. Ann Lee wrote both.",
        ),
        // The claim's name written as its initials.
        (
            "Michael Jordan holds the scoring record[^1].",
            "Michael Jordan played for Chicago. MJ holds the scoring record against 16 teams.",
        ),
        // A month or a day is a time, not a party.
        (
            "The series was renewed by Netflix on July 28[^1].",
            "Netflix announced the cast on July 28. The series was renewed in May by the studio.",
        ),
        // A clause apart: a comma between the word and the name, in the
        // claim or in the source.
        (
            "When Fischer dies in Sydney, the team takes the body[^1].",
            "When Fischer dies in Sydney, the team of Los Angeles takes the body.",
        ),
        (
            "Ann Lee founded the club[^1].",
            "The club was founded; Tom Hart joined, and Ann Lee coached it.",
        ),
    ] {
        assert_eq!(misattributed(claim, &[source]).0, None, "{claim}");
    }
}

#[test]
fn forgetting_the_thread_state_starts_the_memo_and_cache_afresh() {
    // Runs on its own thread, so the thread's scratch is this test's alone.
    std::thread::spawn(|| {
        let source = "Marie Curie was born in Warsaw in 1867. She won the Nobel Prize in 1903.";
        let answer = "Marie Curie won the Nobel Prize in 1903[^1].";
        let hits = || SCRATCH.with_borrow(|s| s.index.cache_hits());
        let first = run(answer, &[source]);
        run(answer, &[source]);
        run(answer, &[source]);
        assert!(hits() > 0, "the third reading is served from the cache");
        forget_thread_state();
        assert_eq!(hits(), 0, "a fresh scratch has served nothing");
        // And a fresh start judges as before.
        assert_eq!(
            format!("{:?}", run(answer, &[source])),
            format!("{first:?}")
        );
    })
    .join()
    .unwrap();
}

#[test]
fn a_million_and_half_a_million_are_their_numbers() {
    for (claim, source) in [
        (
            "The bank serves a million clients[^1].",
            "The bank serves 1 million clients.",
        ),
        (
            "The bank serves 1,000,000 clients[^1].",
            "The bank serves a million clients.",
        ),
        (
            "A million shares were sold[^1].",
            "One million shares were sold.",
        ),
        (
            "The bank has a thousand branches[^1].",
            "The bank has 1,000 branches.",
        ),
        ("About a hundred staff left[^1].", "About 100 staff left."),
        (
            "Half a million people attended[^1].",
            "500,000 people attended.",
        ),
        (
            "500,000 people attended[^1].",
            "Half a million people attended.",
        ),
        (
            "The fund holds 250 million shares[^1].",
            "The fund holds a quarter of a billion shares.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    assert_found_not_flagged(
        "The company has over a million customers",
        "The company has more than one million customers.",
    );
    // Another number is not found, named as the claim writes it.
    for (claim, source, missing) in [
        (
            "The bank serves a million clients[^1].",
            "The bank serves 2 million clients.",
            "a million",
        ),
        (
            "The bank has a thousand branches[^1].",
            "The bank has 100 branches.",
            "a thousand",
        ),
        (
            "Half a million people attended[^1].",
            "50,000 people attended.",
            "half a million",
        ),
    ] {
        assert_flagged_missing(claim, source, &[missing]);
    }
    // "a" before anything but a hundred or a scale is the article.
    assert_fully_supported(
        "A few thousand people attended[^1].",
        "A few thousand people attended.",
    );
    assert_still_missing(
        "A thousandth of the loans failed",
        "1000th loans failed.",
        "thousandth",
    );
}

#[test]
fn higher_or_lower_after_a_number_is_the_change_it_states() {
    for (claim, source) in [
        ("Revenue rose 5%[^1].", "Revenue was 5% higher."),
        ("Revenue climbed 5%[^1].", "Revenue was 5% higher."),
        ("Revenue fell 5%[^1].", "Revenue was 5% lower."),
        ("Revenue was 5% higher[^1].", "Revenue was up 5%."),
        ("Revenue was up 5%[^1].", "Revenue was 5% higher."),
        ("Revenue was 5% higher[^1].", "Revenue was 5% higher."),
    ] {
        assert_fully_supported(claim, source);
    }
    for (claim, source) in [
        ("Revenue was 5% higher", "Revenue rose 5%."),
        ("Costs were $2bn lower", "Costs fell by $2 billion."),
        ("Costs fell by $2 billion", "Costs were $2bn lower."),
        (
            "The yield was 40 basis points higher",
            "The yield rose 0.4 percentage points.",
        ),
        (
            "Net interest income was 3 per cent higher",
            "Net interest income increased 3%.",
        ),
        // A source's "higher" is also read as itself.
        ("Rates were higher", "Rates were 0.5 points higher."),
    ] {
        assert_found_not_flagged(claim, source);
    }
    // The other direction is not found, named by the claim's word.
    assert_flagged_missing(
        "Shares closed 5% lower[^1].",
        "Shares closed 5% higher.",
        &["lower"],
    );
    assert_flagged_missing("Revenue was 5% lower[^1].", "Revenue rose 5%.", &["lower"]);
    // Without a number before it, "higher" is itself.
    assert_still_missing("Rates were higher", "Rates rose.", "higher");
}

/// Typeset and scraped text: no-break, thin and narrow spaces, soft
/// hyphens and byte order marks read as the plain text they show, in
/// claims and sources alike, and the claims' spans stay the answer's own.
#[test]
fn typeset_spaces_and_invisible_characters_read_as_plain_text() {
    for (claim, source) in [
        (
            "He earned $1 million a year[^1].",
            "He earned $1\u{a0}million a year.",
        ),
        (
            "He earned $1\u{a0}million a year[^1].",
            "He earned $1 million a year.",
        ),
        (
            "The bank employs 1,200 staff[^1].",
            "The bank employs 1\u{202f}200 staff.",
        ),
        (
            "The bank employs 1\u{2009}200 staff[^1].",
            "The bank employs 1,200 staff.",
        ),
        (
            "The fund holds €12,000,000[^1].",
            "The fund holds €12\u{a0}000\u{a0}000.",
        ),
        (
            "Prices rose 5% in May[^1].",
            "Prices rose 5\u{a0}per cent in May.",
        ),
        (
            "He was born on January 8, 1935[^1].",
            "He was born on 8\u{a0}January 1935.",
        ),
        (
            "It leads the profession[^1].",
            "It leads the profes\u{ad}sion.",
        ),
        (
            "It leads the pro\u{ad}fession[^1].",
            "It leads the profession.",
        ),
        (
            "The plan aims at a safe home[^1].",
            "The plan aims at \u{feff}a safe home.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    // Digits parted by a plain space, or not in groups of three, stay apart.
    assert_flagged_missing(
        "The bank employs 1,200 staff[^1].",
        "The bank employs 1 200 staff.",
        &["1200"],
    );
    assert_flagged_missing(
        "In all 2,019,200 people came[^1].",
        "In 2019\u{a0}200 people came.",
        &["2019200"],
    );
    let answer = "Rates\u{a0}rose 5\u{202f}% in\u{2003}May[^1]. Prices fell[^1].";
    let g = run(answer, &["Rates rose 5% in May. Prices fell."]);
    assert_eq!(
        texts(answer, &g),
        [
            "Rates\u{a0}rose 5\u{202f}% in\u{2003}May[^1].",
            "Prices fell[^1]."
        ]
    );
    assert!(g.claims.iter().all(|c| c.support == Some(1.0)), "{g:?}");
}

#[test]
fn a_decade_written_short_is_the_decade() {
    for (claim, source) in [
        (
            "The band was popular in the 1990s[^1].",
            "The band was popular in the '90s.",
        ),
        (
            "The band was popular in the \u{2019}90s[^1].",
            "The band was popular in the 1990s.",
        ),
        (
            "The firm grew in the '00s[^1].",
            "The firm grew in the 2000s.",
        ),
        (
            "Birthrates were low in the early 1940s[^1].",
            "Birthrates were low in the early '40s.",
        ),
    ] {
        assert_fully_supported(claim, source);
    }
    // Another decade is another number; "'20s" may be either century, and
    // "90s" without its apostrophe may be a temperature.
    assert_flagged_missing(
        "The band was popular in the '90s[^1].",
        "The band was popular in the 1980s.",
        &["90"],
    );
    assert_flagged_missing(
        "It was popular in the '20s[^1].",
        "It was popular in the 1920s.",
        &["20"],
    );
    assert_flagged_missing(
        "Temperatures were in the 1990s[^1].",
        "Temperatures were in the 90s.",
        &["1990"],
    );
}

#[test]
fn a_degree_sign_is_its_words() {
    for (claim, source) in [
        (
            "It was 30 degrees Celsius in Paris[^1].",
            "It was 30 °C in Paris.",
        ),
        (
            "It was 30°C in Paris[^1].",
            "It was 30 degrees Celsius in Paris.",
        ),
        (
            "It was 86 degrees Fahrenheit in Paris[^1].",
            "It was 86°F in Paris.",
        ),
        ("Water boils at 100 \u{2103}[^1].", "Water boils at 100°C."),
        ("The slope is 45 degrees[^1].", "The slope is 45°."),
    ] {
        assert_fully_supported(claim, source);
    }
    assert_flagged_missing(
        "It was 30 °C in Paris[^1].",
        "It was 30 °F in Paris.",
        &["celsius"],
    );
    // A sentence ends after the sign's letter, which is no initial.
    let answer = "Water boils at 100°C. Ice melts at 0°C[^1].";
    let g = run(answer, &["Water boils at 100°C. Ice melts at 0°C."]);
    assert_eq!(
        texts(answer, &g),
        ["Water boils at 100°C.", "Ice melts at 0°C[^1]."]
    );
}

#[test]
fn the_second_year_of_a_span_written_short_is_the_year_in_full() {
    for (claim, source) in [
        (
            "It takes place during the 2018–19 academic year[^1].",
            "It takes place during the 2018-2019 academic year.",
        ),
        (
            "It takes place during the 2018-2019 academic year[^1].",
            "It takes place during the 2018–19 academic year.",
        ),
        (
            "The war lasted 1939–45[^1].",
            "The war lasted from 1939 to 1945.",
        ),
        (
            "The 1999–00 season was his best[^1].",
            "The 1999-2000 season was his best.",
        ),
        ("The 2023/24 budget rose[^1].", "The 2023-2024 budget rose."),
    ] {
        assert_fully_supported(claim, source);
    }
    assert_flagged_missing(
        "The 2004–2006 season was his best[^1].",
        "The 2004-05 season was his best.",
        &["2006"],
    );
    // A date's month and two numbers that are no years stay as written.
    assert_fully_supported(
        "It was signed on May 12, 2004[^1].",
        "It was signed on 2004-05-12.",
    );
    assert_flagged_missing(
        "The score was 12-2019[^1].",
        "The score was 12-19.",
        &["2019"],
    );
}

#[test]
fn a_currency_code_glued_to_an_amount_is_the_code_and_the_amount() {
    for (claim, source) in [
        ("Profit was USD1.5bn[^1].", "Profit was $1.5 billion."),
        ("Profit was $1.5 billion[^1].", "Profit was USD1.5bn."),
        (
            "The tranche is EUR30 million[^1].",
            "The tranche is €30 million.",
        ),
        (
            "The tranche is €30 million[^1].",
            "The tranche is EUR30 million.",
        ),
        (
            "The tranche is EUR30 million[^1].",
            "The tranche is EUR 30 million.",
        ),
        ("Costs were £5,000[^1].", "Costs were GBP5,000."),
    ] {
        assert_fully_supported(claim, source);
    }
    assert_flagged_missing("Profit was USD2bn[^1].", "Profit was USD1.5bn.", &["2bn"]);
    assert_flagged_missing(
        "The tranche is EUR30 billion[^1].",
        "The tranche is EUR30 million.",
        &["30"],
    );
}
