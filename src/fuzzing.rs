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
//!
//! [`check_input`] does the same for the way `check` reads an input file
//! before any record is judged: packing, byte order mark, line cutting and
//! the record size bound, through the reading code `check` itself runs.

use std::borrow::Cow;
use std::io::{Cursor, Read, Write};
use std::ops::Range;
use std::path::Path;

use ed25519_dalek::VerifyingKey;
use ed25519_dalek::pkcs8::DecodePublicKey;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::audit::keys::KnownKey;
use crate::audit::verify::{AuditVerifier, Options, expect_runs, seal_run};
use crate::batch::InputError;
use crate::batch::input::{Packing, unpacked};
use crate::batch::pipeline::{self, Fold, Line, PREVIEW, Progress, Shape};
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
    // A number read with the words after it, or with its unit or scale,
    // glued by its period to the next sentence.
    "5:00 pm.No",
    "5 p.m.Shares",
    "50 cents.The",
    "3 per cent.Shares",
    "25 bps.No",
    "5km.The",
    "$5bn.Shares",
    // A host name, and sentences glued in a run.
    "www.Geniewards.ca",
    "Auditory.Cognitive.Neurological.",
    "1952.) No, ",
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
    "\u{2009}",
    "\u{202F}",
    // Typeset numbers: digit groups parted by narrow or no-break spaces.
    "1\u{202F}200\u{202F}000",
    "$5\u{A0}billion",
    "12\u{A0}345\u{202F}678",
    "1\u{A0}200,5",
    "profes\u{AD}sion",
    "EUR30 million",
    "USD1.5bn",
    "2018\u{2013}19",
    "1999-00",
    "'90s",
    "30\u{B0}C.",
    "\u{B0}Cold",
    "45\u{B0}N",
    "\u{2103}",
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

/// One line as `check`'s reading hands it on to be judged, by its 0-based
/// index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Whole(u64, Vec<u8>),
    /// Longer than the limit: only its length, SHA-256 and first bytes.
    TooLong {
        index: u64,
        len: u64,
        sha256: [u8; 32],
        preview: Vec<u8>,
    },
}

#[derive(Default)]
struct Collect(Vec<Record>);

impl Fold for Collect {
    fn line(&mut self, index: u64, line: Line<'_>) {
        self.0.push(match line {
            Line::Whole(b) => Record::Whole(index, b.to_vec()),
            Line::TooLong {
                len,
                sha256,
                preview,
            } => Record::TooLong {
                index,
                len,
                sha256,
                preview: preview.to_vec(),
            },
        });
    }
}

/// How `check` cuts a stream into records: at most `max_line` bytes a
/// line kept, `block` bytes read at a time, on `threads` workers.
#[derive(Debug, Clone, Copy)]
pub struct Cutting {
    pub max_line: usize,
    pub block: usize,
    pub threads: usize,
}

/// Why reading an input stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// Refused by its first bytes: a packing groundgate does not unpack.
    Refused,
    /// A read error, naming the 1-based line it broke.
    Read(u64),
}

/// What `check`'s reading made of an input.
#[derive(Debug)]
pub struct Reading {
    /// The packing told from the first bytes (`None`: refused).
    pub packing: Option<Packing>,
    /// Every record handed on, in order, those before an error included.
    pub records: Vec<Record>,
    pub stop: Option<Stop>,
}

/// The records of `input`, cut by `check`'s pipeline, and the line a read
/// error named.
pub(crate) fn cut_lines(input: impl Read + Send, cutting: Cutting) -> (Vec<Record>, Option<u64>) {
    let shape = Shape {
        threads: cutting.threads,
        max_line: cutting.max_line,
        block: cutting.block,
    };
    let mut records = Vec::new();
    let read = pipeline::run(input, shape, &Progress::default(), Collect::default, |c| {
        records.extend(c.0);
        Ok::<(), ()>(())
    });
    match read {
        Ok(n) => {
            assert_eq!(n, records.len() as u64, "lines counted");
            (records, None)
        }
        Err(pipeline::PipelineError::Read { line, .. }) => (records, Some(line)),
        Err(pipeline::PipelineError::Sink(())) => unreachable!("the sink never fails"),
    }
}

/// `bytes` read as `check` reads an input file: its packing told from its
/// first bytes, unpacked, a byte order mark skipped, cut into records.
pub fn read_as_check(bytes: &[u8], cutting: Cutting) -> Reading {
    let input = Box::new(Cursor::new(bytes.to_vec()));
    match unpacked(input, Path::new("input")) {
        Ok((reader, packing)) => {
            let (records, line) = cut_lines(reader, cutting);
            Reading {
                packing: Some(packing),
                records,
                stop: line.map(Stop::Read),
            }
        }
        Err(InputError::Packed { .. }) => Reading {
            packing: None,
            records: Vec::new(),
            stop: Some(Stop::Refused),
        },
        Err(InputError::Read { line, .. }) => Reading {
            packing: None,
            records: Vec::new(),
            stop: Some(Stop::Read(line)),
        },
        Err(e) => panic!("reading bytes in memory: {e}"),
    }
}

/// The records a text holds, as docs/input-and-outputs.md defines a line:
/// cut at every `\n`, one `\r` before it dropped, the last line a record
/// even without a newline (a `\r` ending it is data), none after a final
/// newline, an empty line a record of its own; a line that starts with
/// byte 0x00 (a Schema Registry framed value) cut at no byte of its first
/// five, the header; a line longer than `max_line` measured, not kept.
pub fn expected_records(text: &[u8], max_line: usize) -> Vec<Record> {
    // (line, ended by a newline, bytes of its header)
    let mut parts: Vec<(&[u8], bool, usize)> = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let header = if text[start] == 0 { 5 } else { 0 };
        let from = (start + header).min(text.len());
        match text[from..].iter().position(|b| *b == b'\n') {
            Some(i) => {
                parts.push((&text[start..from + i], true, header));
                start = from + i + 1;
            }
            None => {
                parts.push((&text[start..], false, header));
                start = text.len();
            }
        }
    }
    parts
        .into_iter()
        .enumerate()
        .map(|(i, (p, ended, header))| {
            let p = match p.strip_suffix(b"\r") {
                Some(q) if ended && q.len() >= header => q,
                _ => p,
            };
            if p.len() > max_line {
                Record::TooLong {
                    index: i as u64,
                    len: p.len() as u64,
                    sha256: Sha256::digest(p).into(),
                    preview: p[..PREVIEW.min(p.len())].to_vec(),
                }
            } else {
                Record::Whole(i as u64, p.to_vec())
            }
        })
        .collect()
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A text without the byte order mark it may open with.
fn without_bom(text: &[u8]) -> &[u8] {
    text.strip_prefix(BOM).unwrap_or(text)
}

/// What an input's first bytes make of it, as docs/input-and-outputs.md
/// states: gzip or zstd by their magic numbers (zstd's skippable frames
/// too), xz, bzip2 (its magic and a block or its end), zip (an archive or
/// an empty one), lz4 (its frame or its legacy frame) and UTF-16 (its byte
/// order mark) refused, anything else plain text.
fn looks(bytes: &[u8]) -> Option<Packing> {
    let refused: [&[u8]; 7] = [
        b"\xFD7zXZ\x00",
        b"PK\x03\x04",
        b"PK\x05\x06",
        b"\x04\x22\x4D\x18",
        b"\x02\x21\x4C\x18",
        b"\xFF\xFE",
        b"\xFE\xFF",
    ];
    let bzip2 = bytes.starts_with(b"BZh")
        && [&b"1AY&SY"[..], b"\x17\x72\x45\x38\x50\x90"]
            .map(Some)
            .contains(&bytes.get(4..10));
    if bzip2 || refused.iter().any(|m| bytes.starts_with(m)) {
        None
    } else if bytes.starts_with(b"\x1F\x8B\x08") {
        Some(Packing::Gzip)
    } else if bytes.starts_with(b"\x28\xB5\x2F\xFD")
        || bytes.first().is_some_and(|b| b >> 4 == 5) && bytes.get(1..4) == Some(b"\x2A\x4D\x18")
    {
        Some(Packing::Zstd)
    } else {
        Some(Packing::Plain)
    }
}

/// The largest record sizes `check_input` cuts with: tiny ones, so that
/// lines over the limit are within reach, and the default.
const MAX_LINES: [usize; 8] = [1, 2, 3, 5, 16, 64, 1024, 1 << 20];
/// The bytes read at a time: tiny ones, so that lines and line endings
/// straddle blocks, and `check`'s own.
const BLOCKS: [usize; 8] = [1, 2, 3, 7, 64, 4096, 1 << 16, 1 << 20];
/// The bytes of a `check_input` input that choose how its text is cut and
/// packed.
pub const INPUT_HEAD: usize = 8;
/// What a repeated text grows to: past 64 KiB and the decoders' buffers.
const REPEATED: usize = 80 << 10;

/// A text packed into members (gzip) or frames (zstd) one after another,
/// with where each ends: (in the packed bytes, in the text).
struct Packed {
    bytes: Vec<u8>,
    ends: Vec<(usize, usize)>,
    /// Each member or frame: its bytes and the part of the text it holds.
    frames: Vec<(Range<usize>, Range<usize>)>,
    /// Where each skippable frame's size is, and where its payload starts.
    sizes: Vec<(usize, usize)>,
}

impl Packed {
    /// The text left when the skippable frame whose size holds the byte at
    /// `at` skips what `bad` says it does: the frames that span covers are
    /// gone. No checksum covers a skippable frame, so a size corrupted to
    /// end where a frame ends is a valid stream of less text.
    fn skipped(&self, bad: &[u8], at: usize, text: &[u8]) -> Option<Vec<u8>> {
        let &(field, payload) = self.sizes.iter().find(|(f, _)| (*f..f + 4).contains(&at))?;
        let size: [u8; 4] = bad.get(field..field + 4)?.try_into().ok()?;
        let end = payload.saturating_add(u32::from_le_bytes(size) as usize);
        let kept = self
            .frames
            .iter()
            .filter(|(bytes, _)| bytes.end <= payload || bytes.start >= end);
        Some(kept.flat_map(|(_, t)| &text[t.clone()]).copied().collect())
    }
}

/// `text` split at `split` (none: one part), and an empty part at the end
/// when `empty_last`.
fn parts(text: &[u8], split: u8, empty_last: bool) -> Vec<&[u8]> {
    let at = text.len() * usize::from(split) / 256;
    let mut parts = if split == 0 {
        vec![text]
    } else {
        vec![&text[..at], &text[at..]]
    };
    if empty_last {
        parts.push(&[]);
    }
    parts
}

/// `parts` packed one after another; `wrap` chooses the level (its low two
/// bits), whether a zstd frame states its text's size (bit 3, as the zstd
/// tool writes a file; not a pipe) and follows a skippable frame with its
/// size (bit 4, as `pzstd` writes).
fn pack(packing: Packing, parts: &[&[u8]], wrap: u8) -> Packed {
    let mut packed = Packed {
        bytes: Vec::new(),
        ends: vec![(0, 0)],
        frames: Vec::new(),
        sizes: Vec::new(),
    };
    let mut text_end = 0;
    for part in parts {
        let member = match packing {
            Packing::Gzip => {
                let level = [0, 1, 6, 1][usize::from(wrap % 4)];
                let mut z =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
                z.write_all(part).and_then(|()| z.finish())
            }
            // With a checksum, as the zstd tool writes by default: without
            // one a frame cannot tell a corrupt byte of its text.
            Packing::Zstd | Packing::Plain => {
                let level = [-5, 1, 3, 1][usize::from(wrap % 4)];
                zstd::stream::write::Encoder::new(Vec::new(), level).and_then(|mut z| {
                    z.include_checksum(true)?;
                    if wrap & 8 != 0 {
                        z.set_pledged_src_size(Some(part.len() as u64))?;
                    }
                    z.write_all(part)?;
                    z.finish()
                })
            }
        };
        let member = member.unwrap_or_else(|e| panic!("packing in memory: {e}"));
        if packing == Packing::Zstd && wrap & 16 != 0 {
            let start = packed.bytes.len();
            packed.bytes.extend(b"\x50\x2A\x4D\x18\x04\x00\x00\x00");
            packed.bytes.extend((member.len() as u32).to_le_bytes());
            packed.sizes.push((start + 4, start + 8));
            packed.ends.push((packed.bytes.len(), text_end));
        }
        let start = packed.bytes.len();
        packed.bytes.extend(member);
        packed
            .frames
            .push((start..packed.bytes.len(), text_end..text_end + part.len()));
        text_end += part.len();
        packed.ends.push((packed.bytes.len(), text_end));
    }
    packed
}

/// What a reading of packed bytes must give, beside the records of the
/// whole text.
enum Want<'a> {
    /// The packing of these bytes, whole: the records of the text.
    Whole,
    /// Cut at a byte: an error naming a line past the records handed on,
    /// which are the first records of the text, or, cut where a member or
    /// frame ends, the records of the text (the last argument) up to where
    /// it ends.
    Cut(&'a Packed, usize, &'a [u8]),
    /// A corrupt byte: an error naming a line past the records handed on,
    /// or the records of the text, or, when the byte is a skippable frame's
    /// size, of the text it leaves (the argument).
    Corrupt(Option<Vec<u8>>),
}

/// `check`'s reading on one input of a fuzzer: the first [`INPUT_HEAD`]
/// bytes choose the record size limit, the block size, one or two
/// workers, whether the text is repeated past 64 KiB, and how it is packed
/// into gzip and zstd (level, split into two members or frames, an empty
/// one at the end, zstd's frame sizes and skippable frames) and then cut
/// short and corrupted. The rest is the text.
/// Panics when a reading breaks the contract of
/// docs/input-and-outputs.md: read plain, packed or packed in parts, the
/// text gives exactly its lines as records, with their line numbers and the
/// ones over the limit measured; cut or corrupt, an error or a prefix of
/// them, never a record that is not the text's.
pub fn check_input(data: &[u8]) {
    let mut head = [0u8; INPUT_HEAD];
    let n = data.len().min(INPUT_HEAD);
    head[..n].copy_from_slice(&data[..n]);
    let [shape, wrap, split, cut_lo, cut_hi, flip_lo, flip_hi, mask] = head;
    let mut cutting = Cutting {
        max_line: MAX_LINES[usize::from(shape & 7)],
        block: BLOCKS[usize::from(shape >> 3 & 7)],
        threads: 1 + usize::from(shape >> 6 & 1),
    };
    let mut text = Cow::Borrowed(&data[n..]);
    if shape & 0x80 != 0 && !text.is_empty() {
        text = Cow::Owned(text.repeat(REPEATED.div_ceil(text.len())));
        // A tiny block rescans a long unfinished line once a block: too
        // slow for a fuzzer, and no other path.
        cutting.block = cutting.block.max(4096);
    }
    let want = expected_records(without_bom(&text), cutting.max_line);
    judge(&text, cutting, None, &want);

    let parts = parts(&text, split, wrap & 4 != 0);
    let cut_at = usize::from(u16::from_le_bytes([cut_lo, cut_hi]));
    let flip_at = usize::from(u16::from_le_bytes([flip_lo, flip_hi]));
    for packing in [Packing::Gzip, Packing::Zstd] {
        let packed = pack(packing, &parts, wrap);
        let wrapped = |w| Some((packing, w));
        judge(&packed.bytes, cutting, wrapped(Want::Whole), &want);
        let cut = cut_at % (packed.bytes.len() + 1);
        judge(
            &packed.bytes[..cut],
            cutting,
            wrapped(Want::Cut(&packed, cut, &text)),
            &want,
        );
        let mut bad = packed.bytes.clone();
        let at = flip_at % (packed.bytes.len() + 1);
        match bad.get_mut(at) {
            Some(b) => *b ^= mask.max(1),
            None => bad.push(mask),
        }
        let left = packed.skipped(&bad, at, &text);
        judge(&bad, cutting, wrapped(Want::Corrupt(left)), &want);
    }
}

/// Asserts that `got` are the records `want`, naming the first that
/// differs (a record may be 80 KiB long: not printed whole).
fn assert_records(got: &[Record], want: &[Record]) {
    let short = |r: Option<&Record>| match r {
        Some(Record::Whole(i, b)) => format!(
            "line {} of {} bytes: {:?}",
            i + 1,
            b.len(),
            String::from_utf8_lossy(&b[..b.len().min(64)])
        ),
        Some(Record::TooLong { index, len, .. }) => {
            format!("line {} over the limit, {len} bytes", index + 1)
        }
        None => "none".into(),
    };
    if let Some(i) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        panic!(
            "record {i} of {} (want {}): got {}, want {}",
            got.len(),
            want.len(),
            short(got.get(i)),
            short(want.get(i))
        );
    }
}

/// Reads `bytes` as `check` does and asserts the contract: by what their
/// first bytes make of them, refused, their plain lines, or, packed as
/// `wrapped` says, what [`Want`] says of the records of the text (`want`);
/// packed otherwise, the same records as reading the unpacked stream whole.
fn judge(bytes: &[u8], cutting: Cutting, wrapped: Option<(Packing, Want<'_>)>, want: &[Record]) {
    let got = read_as_check(bytes, cutting);
    let looks = looks(bytes);
    let Some(packing) = looks else {
        assert_eq!(got.stop, Some(Stop::Refused), "refused by its first bytes");
        return;
    };
    match got.packing {
        Some(p) => assert_eq!(p, packing, "told by its first bytes"),
        // The decoder failed on the stream's first bytes.
        None => assert!(
            got.stop == Some(Stop::Read(1)) && packing != Packing::Plain,
            "{:?}",
            got.stop
        ),
    }
    let past_records = |line: u64| {
        assert!(
            line > got.records.len() as u64,
            "the error names line {line}, one of the {} records handed on",
            got.records.len()
        );
    };
    match (packing, wrapped) {
        (Packing::Plain, _) => {
            assert_eq!(got.stop, None, "plain text reads to its end");
            let plain = expected_records(without_bom(bytes), cutting.max_line);
            assert_records(&got.records, &plain);
        }
        (p, Some((wrapped, w))) if p == wrapped => match (w, &got.stop) {
            (Want::Whole, stop) => {
                assert_eq!(stop, &None, "an intact {p:?} stream reads to its end");
                assert_records(&got.records, want);
            }
            (Want::Cut(packed, cut, text), stop) => {
                match packed.ends.iter().find(|(at, _)| *at == cut) {
                    Some(&(_, text_end)) => {
                        assert_eq!(stop, &None, "cut where a {p:?} member ends");
                        let kept =
                            expected_records(without_bom(&text[..text_end]), cutting.max_line);
                        assert_records(&got.records, &kept);
                    }
                    None => {
                        let Some(Stop::Read(line)) = *stop else {
                            panic!("a {p:?} stream cut at byte {cut} read without an error")
                        };
                        past_records(line);
                        assert!(
                            line <= want.len() as u64 + 1,
                            "the error names line {line} of {}",
                            want.len()
                        );
                        let first = got.records.len().min(want.len());
                        assert_records(&got.records, &want[..first]);
                    }
                }
            }
            (Want::Corrupt(Some(left)), None) if got.records != want => assert_records(
                &got.records,
                &expected_records(without_bom(&left), cutting.max_line),
            ),
            (Want::Corrupt(_), None) => assert_records(&got.records, want),
            (Want::Corrupt(_), Some(Stop::Read(line))) => past_records(*line),
            (Want::Corrupt(_), Some(Stop::Refused)) => panic!("refused, yet {p:?}"),
        },
        (_, _) => {
            let mut all = Vec::new();
            let whole = unpacked(Box::new(Cursor::new(bytes.to_vec())), Path::new("input"))
                .map_err(|_| ())
                .and_then(|(mut r, _)| r.read_to_end(&mut all).map_err(|_| ()));
            match (whole, &got.stop) {
                (Ok(_), None) => {
                    assert_records(&got.records, &expected_records(&all, cutting.max_line))
                }
                (Err(()), Some(Stop::Read(line))) => past_records(*line),
                (whole, stop) => panic!("read whole: {whole:?}; cut into records: {stop:?}"),
            }
        }
    }
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

    /// Found by the fuzzer: the size of a skippable frame (pzstd-style, one
    /// before each frame) corrupted from 4 to 18 skips the next frame
    /// whole, its 4-byte payload and 14 bytes; the stream stays valid and
    /// the text of that frame (`a`) is gone, as `zstd -d` would read it.
    #[test]
    fn a_corrupt_skippable_frame_size_can_skip_a_frame() {
        let data = b"\x00\xff\xff\xf7\x40\x20\x05\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16\x61";
        check_input(data);
        let text = &data[INPUT_HEAD..];
        let packed = pack(Packing::Zstd, &parts(text, 0xff, true), 0xff);
        let mut bad = packed.bytes.clone();
        let at = 0x0520 % (bad.len() + 1);
        bad[at] ^= 0x16;
        assert_eq!(packed.skipped(&bad, at, text).as_deref(), Some(&text[..23]));
        let cutting = Cutting {
            max_line: 1 << 20,
            block: 1 << 20,
            threads: 1,
        };
        let got = read_as_check(&bad, cutting);
        assert_eq!(got.stop, None);
        assert_eq!(got.records, vec![Record::Whole(0, text[..23].to_vec())]);
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
