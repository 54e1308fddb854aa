//! Adversarial inputs and the checks run on them, shared by the fuzz targets
//! under `fuzz/` (built with the `fuzzing` feature) and the property tests.
//!
//! Random bytes rarely get past JSON decoding, so the deep text code of the
//! core (word blocks, sentence splitting, initials, numbers, dates, the
//! relation rules) is reached through [`Spec`]: an answer and its sources
//! assembled from [`FRAGMENTS`] (the pieces of text those scanners treat
//! specially), citation markers, long runs of one character and copies of
//! answer spans, encoded as a valid input record. Each `check_*` function
//! panics when an invariant of the core does not hold, which is what a
//! fuzzer or a property test reports.

use std::io::Cursor;

use ed25519_dalek::VerifyingKey;
use ed25519_dalek::pkcs8::DecodePublicKey;
use serde_json::{Value, json};

use crate::audit::keys::KnownKey;
use crate::audit::verify::{AuditVerifier, Options, expect_runs, seal_run};
use crate::cmd::audit::{lines_of, record_line};
use crate::core::grounding::{self, Grounding};
use crate::core::{
    Action, CoreSettings, DeadLetterKind, GroundingSettings, Outcome, PolicySettings, RecordMeta,
    Terminal, citation, normalize,
};

/// Pieces of text that the scanners of the core read specially: sentence
/// ends and abbreviations, initials, numbers with scales, currencies and
/// dates, negations, bounds, acronyms, quotes, markers and near-markers,
/// code fences, combining marks, right-to-left text, emoji, full-width and
/// compatibility forms, invisible and control characters.
pub const FRAGMENTS: &[&str] = &[
    // Words, spelling variants, relation words.
    "the",
    "revenue",
    "Revenue",
    "fell",
    "rose",
    "grew",
    "increased",
    "decreased",
    "colour",
    "color",
    "analysed",
    "analyzed",
    "directed",
    "founded",
    "born",
    "married",
    "acquired",
    "capital",
    "largest",
    "smallest",
    "before",
    "after",
    "during",
    "between",
    "and",
    "or",
    "of",
    "in",
    "by",
    "was",
    "is",
    "were",
    "has",
    "had",
    "will",
    // Negations and bounds.
    "not",
    "n't",
    "never",
    "no",
    "no longer",
    "neither",
    "nor",
    "without",
    "except",
    "only",
    "all",
    "none",
    "more than",
    "less than",
    "at least",
    "at most",
    "up to",
    "over",
    "under",
    // Abbreviations, initials, acronyms.
    "e.g.",
    "i.e.",
    "etc.",
    "vs.",
    "Dr.",
    "Mr.",
    "St.",
    "No.",
    "Inc.",
    "U.S.",
    "U.K.",
    "J. R. R.",
    "A.",
    "b.",
    "NASA",
    "EMEA",
    "APAC",
    "Q3",
    "FY2023",
    "COVID-19",
    "iPhone",
    "McDonald's",
    "O'Neill",
    // Numbers, scales, currencies, dates, times, ordinals.
    "0",
    "1",
    "42",
    "007",
    "3.14",
    ".5",
    "5.",
    "1,234,567",
    "1.234,5",
    "12,34",
    "-7",
    "+3",
    "1e10",
    "1E-9",
    "0.000001",
    "99999999999999999999999",
    "18446744073709551616",
    "$5",
    "$1.2bn",
    "€3.5",
    "£",
    "¥100",
    "5 million",
    "2.5 billion",
    "trillion",
    "thousand",
    "dozen",
    "half",
    "twice",
    "10%",
    "10 %",
    "per cent",
    "½",
    "¾",
    "٣",
    "①",
    "²",
    "Ⅻ",
    "2019",
    "1990s",
    "'90s",
    "March 3, 2021",
    "3 March 2021",
    "3/4/2021",
    "2021-03-04",
    "12:30",
    "5pm",
    "1st",
    "2nd",
    "20th",
    "first",
    "third",
    "one",
    "ten",
    "hundred",
    "km",
    "ms",
    "s",
    "kg",
    // Sentence ends, punctuation, brackets, markers that are not quite markers.
    ".",
    ". ",
    "! ",
    "? ",
    "...",
    "…",
    "?!",
    ".\"",
    ".)",
    "\n",
    "\n\n",
    "\r\n",
    " ",
    "  ",
    "\t",
    ", ",
    "; ",
    ": ",
    "\"",
    "'",
    "“",
    "”",
    "‘",
    "’",
    "«",
    "»",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "[^",
    "^",
    "]",
    "[^1",
    "[^]",
    "[^0]",
    "[^01]",
    "[^-1]",
    "[^ 1]",
    "[^1][^2]",
    "```",
    "```\n",
    "`",
    "-",
    "–",
    "—",
    "/",
    "\\",
    "%",
    "*",
    "**",
    "#",
    "&",
    "@",
    "<",
    ">",
    "|",
    // Case folding and normal forms.
    "é",
    "e\u{301}",
    "\u{301}",
    "\u{301}\u{301}\u{301}",
    "ß",
    "ẞ",
    "İ",
    "ı",
    "ǅ",
    "Ω",
    "Ω",
    "ﬁ",
    "ﬃ",
    "Ｆｕｌｌ",
    "ＮＡＳＡ",
    "１２３",
    "﹒",
    "。",
    "，",
    "！",
    "？",
    "：",
    "ﷺ",
    "㍿",
    "ﾞ",
    "\u{FDFA}",
    "\u{1D400}",
    "ℌ",
    // Other scripts, direction marks, emoji.
    "שלום",
    "مرحبا",
    "١٢٣",
    "\u{200F}",
    "\u{202E}",
    "\u{2066}",
    "中文",
    "日本語",
    "한국어",
    "ไทย",
    "हिन्दी",
    "Ελληνικά",
    "кириллица",
    "а",
    "😀",
    "👩\u{200D}👩\u{200D}👧",
    "🇺🇸",
    "1\u{FE0F}\u{20E3}",
    // Invisible, control and odd code points.
    "\u{0}",
    "\u{1}",
    "\u{7F}",
    "\u{85}",
    "\u{A0}",
    "\u{AD}",
    "\u{200B}",
    "\u{2028}",
    "\u{2029}",
    "\u{FEFF}",
    "\u{FFFD}",
    "\u{FFFF}",
    "\u{10FFFF}",
    "\u{E000}",
    // Names, relations, references to the sources, questions, list items.
    "Robert Zemeckis",
    "Neil Armstrong",
    "Paris",
    "France",
    "directed by",
    "was born in",
    "won",
    "lost",
    "according to the",
    "the source states",
    "this document",
    "Q:",
    "Question:",
    "Answer:",
    "\n- ",
    "\n1. ",
    "2) ",
    "• ",
    // Glued units, ranges, rates, bounds, abbreviated dates and times.
    "5km",
    "1.5GB",
    "10mph",
    "3x",
    "x3",
    "#1",
    "No.1",
    "1-2",
    "2010–2015",
    "mid-2020",
    "per",
    "per year",
    "a year",
    "no more than",
    "prior to",
    "Jan.",
    "approx.",
    "ca.",
    "c.",
    "p.m.",
    "a.m.",
    // Terms the fuzzing settings forbid.
    "guaranteed",
    "guaran\u{200B}teed",
    "return",
];

/// The characters a [`Piece::Run`] repeats: letters (a word longer than a
/// scan block), digits, sentence ends, spaces, brackets, multi-byte
/// characters straddling block edges, combining marks.
pub const RUN_CHARS: &[char] = &[
    'a', 'Z', '9', '.', ' ', '\n', '[', '^', ']', '-', '\'', 'é', '中', '😀', '\u{301}', '\u{0}',
    '\u{200B}', 'ｱ',
];

/// One piece of an answer or a source.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "fuzzing", derive(arbitrary::Arbitrary))]
pub enum Piece {
    /// [`FRAGMENTS`]`[i % len]` and a space.
    Word(u16),
    /// [`FRAGMENTS`]`[i % len]` joined to what follows.
    Glued(u16),
    /// A citation marker `[^n]`: small numbers mostly resolve to a source.
    Marker(u8),
    /// A marker with any number, out of range or past `u32`.
    BigMarker(u64),
    /// [`RUN_CHARS`]`[c % len]` repeated `len` times (at most 600).
    Run { c: u8, len: u16 },
    /// Any one character.
    Char(char),
    /// In a source: a span of the answer as written (markers included),
    /// cut back to character boundaries.
    Copy { start: u16, len: u16 },
}

/// One source of a [`Spec`].
#[derive(Debug, Clone)]
#[cfg_attr(feature = "fuzzing", derive(arbitrary::Arbitrary))]
pub struct SourceSpec {
    pub pieces: Vec<Piece>,
    /// Sent as a structured payload (`{"text": …}`) instead of a string.
    pub object: bool,
}

/// An input record: the answer, its sources and the fields that choose how
/// it is judged.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "fuzzing", derive(arbitrary::Arbitrary))]
pub struct Spec {
    pub answer: Vec<Piece>,
    pub sources: Vec<SourceSpec>,
    pub strict: bool,
    pub retry: bool,
}

const MAX_RUN: usize = 600;

fn render(pieces: &[Piece], answer: &str, out: &mut String) {
    for p in pieces {
        match *p {
            Piece::Word(i) => {
                out.push_str(FRAGMENTS[usize::from(i) % FRAGMENTS.len()]);
                out.push(' ');
            }
            Piece::Glued(i) => out.push_str(FRAGMENTS[usize::from(i) % FRAGMENTS.len()]),
            Piece::Marker(n) => {
                out.push_str("[^");
                out.push_str(&(n % 8).to_string());
                out.push(']');
            }
            Piece::BigMarker(n) => {
                out.push_str("[^");
                out.push_str(&n.to_string());
                out.push(']');
            }
            Piece::Run { c, len } => {
                let c = RUN_CHARS[usize::from(c) % RUN_CHARS.len()];
                out.extend(std::iter::repeat_n(c, usize::from(len) % (MAX_RUN + 1)));
            }
            Piece::Char(c) => out.push(c),
            Piece::Copy { start, len } => {
                let start = answer.floor_char_boundary(usize::from(start));
                let end = answer.floor_char_boundary(start + usize::from(len));
                out.push_str(&answer[start..end]);
            }
        }
    }
}

impl Spec {
    /// The answer and the texts of the sources.
    pub fn texts(&self) -> (String, Vec<String>) {
        let mut answer = String::new();
        render(&self.answer, "", &mut answer);
        let sources = self
            .sources
            .iter()
            .map(|s| {
                let mut text = String::new();
                render(&s.pieces, &answer, &mut text);
                text
            })
            .collect();
        (answer, sources)
    }

    /// The record as a producer would send it.
    pub fn record(&self) -> Vec<u8> {
        let (answer, texts) = self.texts();
        let sources: Vec<Value> = texts
            .into_iter()
            .zip(&self.sources)
            .enumerate()
            .map(|(i, (text, s))| {
                let payload = if s.object {
                    json!({ "text": text, "page": i })
                } else {
                    Value::String(text)
                };
                json!({ "urn": format!("urn:fuzz:{i}"), "payload": payload })
            })
            .collect();
        let mut rec = json!({
            "request_id": "fuzz",
            "answer": answer,
            "sources": sources,
            "mode": if self.strict { "strict" } else { "lenient" },
            "provider": "openai",
            "model": "m",
            "confidence": 0.9,
            "provenance": "fuzz",
        });
        if self.retry {
            rec["attempt"] = json!(1);
            rec["prior"] = json!({ "completion_tokens": 1, "cost_usd": 0.5, "prompt_tokens": 2 });
        }
        rec.to_string().into_bytes()
    }
}

/// Settings that run every check the core has on a record: grounding with
/// uncited claims reported, and forbidden terms (the normal form).
pub fn settings() -> CoreSettings {
    CoreSettings {
        policy: PolicySettings {
            forbidden_terms: vec!["guaranteed return".into(), "l0ss".into(), "ﬁ".into()],
            ..PolicySettings::default()
        },
        include_answer: true,
        grounding: GroundingSettings {
            uncited_claim: Some(Action::Warn),
            ..GroundingSettings::default()
        },
        ..CoreSettings::default()
    }
}

const META: RecordMeta<'static> = RecordMeta {
    topic: "answers",
    partition: 0,
    offset: 7,
};

/// `process` on `bytes`: exactly one outcome, every output within
/// `max_output_bytes`, the audit row and a terminal record present, a
/// grounding score in [0, 1], and no panic, which `process` would
/// contain as an `internal` dead letter.
pub fn check_record(bytes: &[u8], settings: &CoreSettings) -> Outcome {
    let outcome = crate::core::process(Some(bytes), &META, 1, settings);
    assert!(!outcome.audit.is_empty(), "no audit row");
    assert!(outcome.audit.len() <= settings.max_output_bytes);
    match &outcome.terminal {
        Terminal::Final(b) | Terminal::Retry(b) => {
            assert!(!b.is_empty() && b.len() <= settings.max_output_bytes);
        }
        Terminal::DeadLetter(d) => {
            assert_ne!(d.kind, DeadLetterKind::Internal, "{}", d.detail);
        }
    }
    if let Some(s) = outcome.summary.grounding_score {
        assert!((0.0..=1.0).contains(&s), "grounding score {s}");
    }
    outcome
}

/// The grounding check on an answer and its sources: claims lie within the
/// answer on character boundaries, in order and without overlap, and every
/// support is in [0, 1]. Also the citation parser and the normal form.
pub fn check_texts(answer: &str, sources: &[&str]) -> Grounding {
    let parsed = citation::parse(answer, sources.len());
    for c in &parsed.citations {
        assert!(
            answer.get(c.span.clone()).is_some(),
            "marker span {:?}",
            c.span
        );
    }
    let markers: Vec<_> = parsed.citations.iter().map(|c| c.span.clone()).collect();
    normalize::normalize(answer, &markers);
    let g = grounding::analyze(answer, &parsed.citations, sources, &settings().grounding);
    let mut end = 0;
    for c in &g.claims {
        assert!(
            answer.get(c.span.clone()).is_some(),
            "claim span {:?}",
            c.span
        );
        assert!(
            c.span.start >= end,
            "claims overlap or go back: {:?}",
            c.span
        );
        end = c.span.end;
        if let Some(s) = c.support {
            assert!((0.0..=1.0).contains(&s), "support {s}");
        }
    }
    if let Some(s) = g.score {
        assert!((0.0..=1.0).contains(&s), "score {s}");
    }
    g
}

/// A public key whose signing key made the signed trails of the fuzz
/// corpus, so that their signatures check.
const PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAmYcGACNCVe/qaV06VkhVb5XsuaDfTwq2+x4RuveVV+M=
-----END PUBLIC KEY-----
";

/// The ends of the offset ranges `audit verify --from/--to` is fuzzed with:
/// none, small ones and the extremes.
const BOUNDS: [Option<i64>; 6] = [
    None,
    Some(0),
    Some(2),
    Some(5),
    Some(i64::MIN),
    Some(i64::MAX),
];

/// `audit verify` on a trail file's bytes: the first byte chooses the
/// options (signatures, a range, a live tail, an expected run), the rest
/// is read line by line as the verifier reads a file. Whether the trail
/// passed.
pub fn check_trail(data: &[u8]) -> bool {
    let Some((&opts, trail)) = data.split_first() else {
        return false;
    };
    let (from, to) = (
        BOUNDS[usize::from(opts >> 1) % BOUNDS.len()],
        BOUNDS[usize::from(opts >> 4) % BOUNDS.len()],
    );
    // `audit verify` refuses a range whose start is past its end.
    if let (Some(from), Some(to)) = (from, to)
        && from > to
    {
        return false;
    }
    let options = Options {
        keys: (opts & 1 != 0)
            .then(|| VerifyingKey::from_public_key_pem(PUBLIC_KEY).ok())
            .flatten()
            .map(|k| KnownKey::new(k, "fuzz.pub", 1))
            .into_iter()
            .collect(),
        from,
        to,
        allow_unsealed_tail: opts & 0x80 != 0,
        ..Options::default()
    };
    // Shorter than the command's limit, so that an over-long line is
    // within the fuzzer's reach.
    const MAX_LINE: usize = 1 << 16;
    let mut runs = Vec::new();
    let mut v = AuditVerifier::new(options);
    let stream = v.stream("trail");
    // As the command reads files: once for the runs their seals name, once
    // to judge them.
    let read = lines_of(Cursor::new(trail), MAX_LINE, |_, _, line| {
        if let Some(Some(run)) = seal_run(line) {
            runs.push(run);
        }
    })
    .and_then(|()| {
        lines_of(Cursor::new(trail), MAX_LINE, |n, len, line| {
            record_line(&mut v, stream, n, len, line, MAX_LINE)
        })
    });
    assert!(read.is_ok(), "a trail in memory reads: {read:?}");
    let mut report = v.finish();
    if opts & 0x40 != 0 {
        runs.push("another-run".into());
        expect_runs(&mut report, &runs);
    }
    for p in &report.problems {
        if let Some(at) = p.at {
            report.location(at);
        }
    }
    assert!(serde_json::to_vec(&report).is_ok());
    report.ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{ChainHead, ChainId, Sealer};

    /// A worker's trail of five rows, sealed two at a time.
    fn worker_trail() -> Vec<u8> {
        let chain = ChainId {
            topic: "answers".into(),
            partition: 0,
        };
        let mut sealer = Sealer::new(chain, "w", 2, ChainHead::START, None);
        let mut trail: Vec<u8> = Vec::new();
        for offset in 1..=5 {
            if sealer.due()
                && let Some(seal) = sealer.seal(100 + offset)
            {
                trail.extend(seal);
                trail.push(b'\n');
            }
            let meta = RecordMeta {
                topic: "answers",
                partition: 0,
                offset,
            };
            let row = crate::core::process(Some(b"{}"), &meta, offset, &settings()).audit;
            sealer.push(offset, &row);
            trail.extend(row);
            trail.push(b'\n');
        }
        trail.extend(sealer.seal(200).unwrap_or_default());
        trail
    }

    #[test]
    fn every_option_byte_judges_a_trail() {
        let trail = worker_trail();
        assert!(check_trail(&[&[0], &trail[..]].concat()));
        for opts in 0..=u8::MAX {
            check_trail(&[&[opts], &trail[..]].concat());
            check_trail(&[&[opts], &trail[..trail.len() / 2]].concat());
        }
    }
}
