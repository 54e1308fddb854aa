//! Deterministic, realistic sample answers: the shipped sample stream
//! (`examples/answers.jsonl`, regenerated with
//! `cargo run --example gen_answers > examples/answers.jsonl`), the synthetic
//! source of `groundgate produce`, and the criterion bench records.
//!
//! No randomness source: record `i` is always the same bytes, so demos and
//! benchmarks are reproducible.

use serde_json::{Value, json};

const TOPICS: &[(&str, &str, &[&str])] = &[
    (
        "Why did net revenue retention drop in Q3?",
        "finance",
        &[
            "Net revenue retention fell from 118% to 109% as two enterprise accounts downgraded",
            "mid-market churn rose after the March price change",
            "expansion revenue slowed in EMEA while APAC held steady",
            "the sales team attributes the drop to longer procurement cycles",
        ],
    ),
    (
        "What caused the checkout latency regression on 14 October?",
        "engineering",
        &[
            "p99 checkout latency rose from 420 ms to 1.9 s after the payments client upgrade",
            "the new client opened a TLS connection per request instead of pooling",
            "rolling back the client restored latency within ten minutes",
            "a connection-pool limit of 32 was later found to be too low for peak traffic",
        ],
    ),
    (
        "Which suppliers are exposed to the new EU deforestation regulation?",
        "compliance",
        &[
            "three cocoa suppliers source from regions flagged as high risk",
            "the palm-oil supplier already provides geolocation data for every plot",
            "the regulation applies to operators placing products on the EU market from December",
            "due-diligence statements must be filed before goods clear customs",
        ],
    ),
    (
        "How did the hedging program affect Q2 gross margin?",
        "treasury",
        &[
            "fuel hedges covered 62% of expected consumption at an average of 2.10 USD per gallon",
            "hedging gains of 14 million offset most of the spot price increase",
            "gross margin contracted by 40 basis points instead of the 190 forecast unhedged",
            "the program will extend to 70% coverage next fiscal year",
        ],
    ),
];

const PROVIDERS: &[(&str, &str)] = &[
    ("openai", "gpt-4o-2024-08-06"),
    ("anthropic", "claude-sonnet-4"),
    ("azure-openai", "gpt-4o-mini"),
    ("local-llama", "llama-3.1-70b-instruct"),
];

/// The categories the sample stream mixes, in a fixed rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Clean,
    OutOfRange,
    Malformed,
    Lenient,
    NonCitingProvider,
    LowConfidence,
    MissingProvenance,
    ForbiddenTerm,
    EmptyAnswer,
    TooLong,
    RetryFixed,
    RetryStillFailing,
    CodeFence,
    BrokenJson,
    MissingRequestId,
    BadAttempt,
}

const ROTATION: &[Kind] = &[
    Kind::Clean,
    Kind::Clean,
    Kind::OutOfRange,
    Kind::Clean,
    Kind::Malformed,
    Kind::Lenient,
    Kind::Clean,
    Kind::NonCitingProvider,
    Kind::LowConfidence,
    Kind::Clean,
    Kind::MissingProvenance,
    Kind::RetryFixed,
    Kind::ForbiddenTerm,
    Kind::Clean,
    Kind::RetryStillFailing,
    Kind::CodeFence,
    Kind::EmptyAnswer,
    Kind::BrokenJson,
    Kind::Clean,
    Kind::TooLong,
    Kind::MissingRequestId,
    Kind::Clean,
    Kind::BadAttempt,
];

/// The kind of the `i`-th record of the mixed stream.
pub fn kind_of(i: u64) -> Kind {
    ROTATION[(i % ROTATION.len() as u64) as usize]
}

fn sources(topic: usize, n: usize) -> Vec<Value> {
    let (_, area, facts) = TOPICS[topic];
    (0..n)
        .map(|s| {
            let fact = facts[s % facts.len()];
            if s % 3 == 2 {
                json!({"urn": format!("urn:{area}:table:{topic}-{s}"),
                       "payload": {"metric": area, "row": s, "value": fact}})
            } else {
                json!({"urn": format!("urn:{area}:doc:{topic}-{s}#p{}", s + 1),
                       "payload": format!("{fact}.")})
            }
        })
        .collect()
}

/// An answer citing every source in turn, about `target_bytes` long.
fn answer_text(topic: usize, n_sources: usize, target_bytes: usize) -> String {
    let (_, _, facts) = TOPICS[topic];
    let mut a = String::with_capacity(target_bytes + 64);
    let mut k = 0;
    while a.len() < target_bytes.max(1) {
        let fact = facts[k % facts.len()];
        let mut sentence = fact.to_string();
        if let Some(first) = sentence.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        a.push_str(&sentence);
        a.push_str(&format!("[^{}]. ", k % n_sources.max(1) + 1));
        k += 1;
    }
    a.truncate(a.trim_end().len());
    a
}

/// The `i`-th record of the mixed stream, with an answer of roughly
/// `answer_bytes` bytes. Broken kinds return bytes that are not a valid record.
pub fn mixed(i: u64, answer_bytes: usize) -> Vec<u8> {
    record(i, kind_of(i), answer_bytes)
}

/// A record of the given kind.
pub fn record(i: u64, kind: Kind, answer_bytes: usize) -> Vec<u8> {
    let topic = (i % TOPICS.len() as u64) as usize;
    let n_sources = 2 + (i % 7) as usize;
    let (provider, model) = PROVIDERS[(i % 3) as usize];
    let mut answer = answer_text(topic, n_sources, answer_bytes);
    let mut v = json!({
        "request_id": format!("req-{i:08}"),
        "question": TOPICS[topic].0,
        "sources": sources(topic, n_sources),
        "provider": provider,
        "model": model,
        "tenant": format!("tenant-{}", i % 5),
        "user": format!("user-{}", i % 17),
        "role": if i.is_multiple_of(4) { "analyst" } else { "assistant-app" },
        "prompt_tokens": 900 + (i % 13) * 37,
        "completion_tokens": 120 + (i % 11) * 19,
        "cost_usd": 0.0021 + (i % 9) as f64 * 0.00037,
        "cache_hit": i.is_multiple_of(10),
        "temperature": 0.2,
        "seed": 1000 + i,
        "confidence": 0.72 + (i % 5) as f64 * 0.05,
        "provenance": "rag-pipeline/v3",
        "mode": "strict",
    });
    match kind {
        Kind::Clean => {}
        Kind::OutOfRange => answer.push_str(&format!(" See also the appendix[^{}].", n_sources + 3)),
        Kind::Malformed => answer.push_str(" Details are in the footnote[^note] and [^0]."),
        Kind::Lenient => {
            v["mode"] = json!("lenient");
            answer.push_str(&format!(" Earlier filings agree[^{}].", n_sources + 1));
        }
        Kind::NonCitingProvider => {
            v["provider"] = json!(PROVIDERS[3].0);
            v["model"] = json!(PROVIDERS[3].1);
            answer.push_str(" (model cites loosely)[^99]");
        }
        Kind::LowConfidence => v["confidence"] = json!(0.31),
        Kind::MissingProvenance => v["provenance"] = Value::Null,
        Kind::ForbiddenTerm => answer.push_str(" This is a guaranteed return for investors."),
        Kind::EmptyAnswer => answer = "   ".to_string(),
        Kind::TooLong => answer = answer_text(topic, n_sources, 12_000),
        Kind::RetryFixed => {
            v["attempt"] = json!(1);
            v["prior"] = json!({"prompt_tokens": 880, "completion_tokens": 140, "cost_usd": 0.0019});
        }
        Kind::RetryStillFailing => {
            v["attempt"] = json!(1);
            v["prior"] = json!({"prompt_tokens": 880, "completion_tokens": 140, "cost_usd": 0.0019});
            answer.push_str(&format!(" As noted in source[^{}].", n_sources + 2));
        }
        Kind::CodeFence => {
            answer.push_str("\n```sql\nSELECT * FROM t WHERE note = '[^42]';\n```\nThe query above is illustrative[^1].")
        }
        Kind::BrokenJson => {
            return format!("{{\"request_id\":\"req-{i:08}\",\"answer\":\"truncated by the upstream").into_bytes();
        }
        Kind::MissingRequestId => {
            v.as_object_mut().map(|o| o.remove("request_id"));
        }
        Kind::BadAttempt => v["attempt"] = json!(2),
    }
    v["answer"] = json!(answer);
    serde_json::to_vec(&v).unwrap_or_default()
}

/// SplitMix64: a fixed, seedable sequence (no randomness source).
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A deterministic stream of numbers from `seed`.
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: usize) -> usize {
        self.0 = mix64(self.0);
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

const RAG_NAMES: &[&str] = &[
    "Aurora",
    "Maleficent",
    "Stanford",
    "Chestnut Hill",
    "Boston College",
    "the NFL",
    "Hawaii",
    "Aulani",
    "Disney",
    "Lisbon",
    "the Danube",
    "Marie Curie",
    "the Senate",
    "Oxford",
    "IBM",
    "the Red Cross",
    "Nairobi",
    "the Louvre",
    "Kyoto",
    "the Andes",
    "NASA",
    "Toyota",
    "Bavaria",
    "the Premier League",
    "Mozart",
    "the Nile",
    "Quebec",
    "UNESCO",
    "the Atlantic",
    "Vermont",
];
const RAG_NOUNS: &[&str] = &[
    "season",
    "album",
    "river",
    "company",
    "university",
    "team",
    "film",
    "novel",
    "bridge",
    "election",
    "treaty",
    "museum",
    "species",
    "railway",
    "festival",
    "league",
    "province",
    "village",
    "record",
    "tournament",
    "church",
    "harbour",
    "castle",
    "regiment",
    "school",
    "painting",
    "opera",
    "reactor",
    "airline",
    "mountain",
    "island",
    "director",
    "album",
    "collection",
    "campaign",
    "population",
    "border",
    "county",
    "engine",
    "station",
];
const RAG_VERBS: &[&str] = &[
    "founded",
    "released",
    "built",
    "acquired",
    "won",
    "hosted",
    "described",
    "recorded",
    "opened",
    "restored",
    "expanded",
    "signed",
    "directed",
    "published",
    "replaced",
    "joined",
    "defeated",
    "visited",
    "renamed",
    "closed",
    "produced",
    "designed",
    "financed",
    "owned",
];
const RAG_ADJECTIVES: &[&str] = &[
    "first",
    "largest",
    "oldest",
    "regional",
    "national",
    "annual",
    "original",
    "northern",
    "popular",
    "final",
    "independent",
    "public",
    "private",
    "early",
    "modern",
    "famous",
    "historic",
    "second",
    "major",
    "small",
    "coastal",
    "local",
    "official",
    "royal",
];
const RAG_FUNCTION: &[&str] = &[
    "in", "during", "after", "before", "with", "near", "for", "under", "across", "from",
];

/// One sentence of a RAG source: a fact about named things, with a year or
/// a count now and then.
fn rag_sentence(d: &mut Draw) -> String {
    let mut s = String::with_capacity(160);
    s.push_str(d.pick(&[
        "The",
        "In its history, the",
        "By then the",
        "Later the",
        "Since then the",
    ]));
    s.push(' ');
    s.push_str(d.pick(RAG_ADJECTIVES));
    s.push(' ');
    s.push_str(d.pick(RAG_NOUNS));
    s.push_str(" of ");
    s.push_str(d.pick(RAG_NAMES));
    s.push_str(" was ");
    s.push_str(d.pick(RAG_VERBS));
    s.push(' ');
    s.push_str(d.pick(RAG_FUNCTION));
    s.push(' ');
    if d.below(3) == 0 {
        s.push_str(&(1850 + d.below(170)).to_string());
    } else {
        s.push_str("the ");
        s.push_str(d.pick(RAG_NOUNS));
    }
    s.push_str(" by ");
    s.push_str(d.pick(RAG_NAMES));
    if d.below(2) == 0 {
        s.push_str(", which ");
        s.push_str(d.pick(RAG_VERBS));
        s.push(' ');
        s.push_str(&(2 + d.below(400)).to_string());
        s.push(' ');
        s.push_str(d.pick(RAG_NOUNS));
        s.push_str("s and the ");
        s.push_str(d.pick(RAG_ADJECTIVES));
        s.push(' ');
        s.push_str(d.pick(RAG_NOUNS));
    }
    s.push('.');
    s
}

/// The sentences of RAG source number `id` (the same id, the same text):
/// about 1.2 KB.
fn rag_source(id: u64) -> Vec<String> {
    let mut d = Draw(mix64(id ^ 0x5eed));
    let mut out = Vec::new();
    let mut len = 0;
    while len < 1200 {
        let s = rag_sentence(&mut d);
        len += s.len() + 1;
        out.push(s);
    }
    out
}

/// Distinct sources a repeated source slot draws from: few enough that a
/// per-thread cache of a few hundred entries holds them all.
const RAG_POOL: u64 = 64;

/// The `i`-th record shaped like a RAG answer: 8 sources of ~1.2 KB of
/// English-like sentences and an answer of 35 sentences, each restating a
/// sentence of the source it cites (half with a word dropped, one in five
/// with two words replaced, which makes it unsupported). Each source slot
/// repeats an earlier record's source with probability `repeat_percent` %
/// (drawn from a small pool), otherwise it is new.
pub fn rag(i: u64, repeat_percent: u32) -> Vec<u8> {
    let mut d = Draw(mix64(i));
    let ids: Vec<u64> = (0..8u64)
        .map(|k| {
            if (d.below(100) as u32) < repeat_percent {
                // Pool ids are below 2^32, fresh ones above.
                d.below(RAG_POOL as usize) as u64
            } else {
                (1 << 32) + i * 8 + k
            }
        })
        .collect();
    let sources: Vec<Vec<String>> = ids.iter().map(|&id| rag_source(id)).collect();
    let mut answer = String::with_capacity(4400);
    for _ in 0..35 {
        let k = d.below(8);
        let sentence = &sources[k][d.below(sources[k].len())];
        let mut words: Vec<&str> = sentence.trim_end_matches('.').split(' ').collect();
        if d.below(5) == 0 {
            for _ in 0..2 {
                let at = d.below(words.len());
                words[at] = d.pick(RAG_NOUNS);
            }
        } else if d.below(2) == 0 {
            words.remove(1 + d.below(words.len() - 1));
        }
        answer.push_str(&words.join(" "));
        answer.push_str(&format!("[^{}]. ", k + 1));
    }
    answer.truncate(answer.trim_end().len());
    let v = json!({
        "request_id": format!("rag-{i:08}"),
        "question": "What do the sources say?",
        "answer": answer,
        "sources": ids.iter().zip(&sources).map(|(id, s)| json!({
            "urn": format!("urn:doc:{id}"),
            "payload": s.join(" "),
        })).collect::<Vec<_>>(),
        "provider": "openai",
        "model": "gpt-4o-mini",
        "tenant": "acme",
        "user": "u1",
        "role": "analyst",
        "prompt_tokens": 3000,
        "completion_tokens": 900,
        "cost_usd": 0.0009,
        "provenance": "openai:gpt-4o-mini",
        "mode": "strict",
    });
    serde_json::to_vec(&v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{CoreSettings, OutcomeKind, RecordMeta, process};

    #[test]
    fn sample_kinds_get_the_intended_verdicts() {
        let settings = CoreSettings {
            non_citing_providers: vec!["local-llama".into()],
            policy: crate::core::PolicySettings {
                forbidden_terms: vec!["guaranteed return".into()],
                ..Default::default()
            },
            ..Default::default()
        };
        let meta = RecordMeta {
            topic: "t",
            partition: 0,
            offset: 0,
        };
        for (kind, want) in [
            (Kind::Clean, OutcomeKind::Accepted),
            (Kind::OutOfRange, OutcomeKind::Retry),
            (Kind::Malformed, OutcomeKind::Retry),
            (Kind::Lenient, OutcomeKind::Accepted),
            (Kind::NonCitingProvider, OutcomeKind::Accepted),
            (Kind::LowConfidence, OutcomeKind::Accepted),
            (Kind::MissingProvenance, OutcomeKind::Accepted),
            (Kind::ForbiddenTerm, OutcomeKind::Rejected),
            (Kind::EmptyAnswer, OutcomeKind::Retry),
            (Kind::TooLong, OutcomeKind::Retry),
            (Kind::RetryFixed, OutcomeKind::Accepted),
            (Kind::RetryStillFailing, OutcomeKind::Rejected),
            (Kind::CodeFence, OutcomeKind::Accepted),
            (Kind::BrokenJson, OutcomeKind::DeadLetter),
            (Kind::MissingRequestId, OutcomeKind::DeadLetter),
            (Kind::BadAttempt, OutcomeKind::DeadLetter),
        ] {
            for i in [0u64, 5, 13] {
                let rec = record(i, kind, 600);
                let o = process(Some(&rec), &meta, 0, &settings);
                assert_eq!(
                    o.kind,
                    want,
                    "{kind:?} #{i}: {}",
                    String::from_utf8_lossy(&rec)
                );
            }
        }
        assert_eq!(mixed(7, 100), mixed(7, 100), "deterministic");
    }
}
