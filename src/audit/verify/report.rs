//! What `audit verify` answers: the problem kinds, each problem with where
//! it was found, the per-chain and overall report, and the options that
//! scope a verification (range, anchors, live tail). Plain data; the
//! judging is in the parent module.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::audit::keys::KnownKey;
use crate::audit::seal::{ChainHead, ChainId};

/// Where a record was read: a stream (a file, an audit partition) and the
/// position in it (line number, offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Location {
    pub stream: u32,
    pub pos: u64,
}

/// The groundgate headers of a record read from an audit topic: every
/// value of each, in order, as text (bytes that are not UTF-8 are read
/// lossily, and then agree with nothing). Headers are not under any hash or
/// signature, but consumers of audit rows go by them: they skip records
/// with a seal header, and may take a row's input coordinates from them. A
/// header repeated is judged by each of its values, since one consumer
/// reads the first and another the last.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordHeaders {
    pub input_topic: Vec<String>,
    pub input_partition: Vec<String>,
    pub input_offset: Vec<String>,
    pub seal: Vec<String>,
}

/// What is wrong. The names are part of `--json` output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// Not JSON, or neither an audit row nor a seal.
    Unreadable,
    /// A row or seal whose bytes are not the canonical JSON of what it
    /// parses to (a repeated key, whitespace): readers may disagree on what
    /// it says.
    NotCanonical,
    /// A sealed row is present with different bytes.
    RowAltered,
    /// A sealed row is absent.
    RowMissing,
    /// A row inside the sealed history that no seal covers.
    RowForged,
    /// Rows of one seal appear out of the sealed order.
    RowOutOfOrder,
    /// Two rows for one input offset that differ in more than `ts`.
    Conflict,
    /// In a chain `check` wrote: a second row for an input offset, or a
    /// seal repeated; `check` writes each once.
    Duplicate,
    /// A row for an input offset the input topic never held.
    RowGhost,
    /// A record on the audit topic whose groundgate headers say something
    /// else than its body: a seal without its seal header, a row with one,
    /// or input coordinates that are not the record's own.
    HeaderMismatch,
    /// Rows after the chain's last seal, when no live tail is allowed.
    UnsealedTail,
    /// Nothing in the trail (or the range) to verify: not a pass.
    NothingToVerify,
    /// A seal does not name the previous seal's hash.
    SealBroken,
    /// Seal sequence numbers skip.
    SealMissing,
    /// A chain `check` wrote does not end with its final seal (cut off
    /// after a seal).
    FinalSealMissing,
    /// A chain `check` wrote holds seals of more than one run (or seals
    /// naming a run beside seals naming none).
    RunMixed,
    /// A `check` run's chains in the trail are not the number its final
    /// seals state (a chain removed, or replaced by another run's), or its
    /// final seals state different numbers.
    RunIncomplete,
    /// A run of `check` in the trail that is not one of the runs the trail
    /// was expected to be (`--run`), or a chain `check` sealed naming no run.
    RunUnexpected,
    /// A run the trail was expected to hold (`--run`) has no chain in it.
    RunAbsent,
    /// A seal is malformed (missing fields, rows outside its range).
    SealMalformed,
    /// A seal's signature verifies with none of the given keys, or is absent.
    SealSignature,
    /// Input offsets with no audit row.
    Gap,
    /// A row below the consumer group's committed offset that no seal covers.
    UnsealedCommitted,
    /// The chain head the consumer group committed is not in the trail.
    HeadMissing,
    /// The consumer group's committed metadata is not a chain head.
    HeadUnreadable,
}

#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub kind: ProblemKind,
    pub topic: Option<String>,
    pub partition: Option<i32>,
    /// Input offsets concerned (first, last).
    pub offsets: Option<(i64, i64)>,
    pub seal_seq: Option<u64>,
    pub at: Option<Location>,
    /// The `check` run concerned, for the problems of a run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    pub detail: String,
}

impl Problem {
    /// A problem of `kind`, of chain `chain` when it concerns one; the
    /// other coordinates are set where known.
    pub(super) fn new(kind: ProblemKind, chain: Option<&ChainId>, detail: String) -> Problem {
        Problem {
            kind,
            topic: chain.map(|c| c.topic.clone()),
            partition: chain.map(|c| c.partition),
            offsets: None,
            seal_seq: None,
            at: None,
            run: None,
            detail,
        }
    }

    /// Input offsets `a..=b` of `chain` without an audit row.
    pub(super) fn gap(chain: &ChainId, a: i64, b: i64) -> Problem {
        // Wider than i64: a gap may span nearly all of it.
        let n = i128::from(b) - i128::from(a) + 1;
        Problem {
            offsets: Some((a, b)),
            ..Problem::new(
                ProblemKind::Gap,
                Some(chain),
                format!("{n} input offset(s) without an audit row"),
            )
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ChainReport {
    pub topic: String,
    pub partition: i32,
    /// Rows read for input offsets in the verified range.
    pub rows: u64,
    pub sealed_rows: u64,
    pub seals: u64,
    pub redeliveries: u64,
    /// Seals that repeat a sequence number of the chain (a worker replaced
    /// after a crash sealed the same rows again); not a problem.
    pub reseals: u64,
    /// Hash of the chain's latest seal (highest sequence number, the later
    /// one read on a tie): keep it outside the trail to detect a truncated
    /// tail later.
    pub head_seal: Option<String>,
    pub unsealed_tail: u64,
    pub first_offset: Option<i64>,
    pub last_offset: Option<i64>,
    pub gaps: Vec<(i64, i64)>,
    /// Input offsets in the range that a `read_committed` reader of the
    /// input topic was not handed (transaction markers, records of aborted
    /// transactions): no row is owed for them.
    pub undelivered: u64,
    /// The `check` run the chain's last seal names; `None` for a worker's
    /// chain and a chain of `check` whose seals name no run.
    pub run: Option<String>,
}

/// A `check` run whose chains the trail holds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunReport {
    pub run: String,
    /// The number of chains the run sealed, as its final seals state
    /// (`None` when none is read, or they disagree).
    pub inputs: Option<u64>,
    /// The run's chains in the trail.
    pub chains: u64,
}

/// A seal, named for a reader: its chain (and run), its number, the time
/// it states and where it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SealRef {
    pub topic: String,
    pub partition: i32,
    /// The `check` run the seal names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    pub seq: u64,
    /// The seal's `ts` (nanoseconds since the Unix epoch, the writer's
    /// clock, under the signature); `None` when it has none.
    pub ts: Option<i64>,
    /// `ts` in RFC 3339, UTC.
    pub time: Option<String>,
    pub at: Location,
}

impl SealRef {
    /// Earlier by the time the seals state, then by where they were read.
    fn earlier(&self, other: &SealRef) -> bool {
        (self.ts, self.at) < (other.ts, other.at)
    }
}

/// A key signing a seal of a chain after a key that first signed in that
/// chain after it did: an older key in use again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignedAgain {
    /// The seal it signed.
    #[serde(flatten)]
    pub seal: SealRef,
    /// The fingerprint of the newer key, which signed the chain's seal
    /// before this one.
    pub after: String,
}

/// A public key given to verify and the seals it signed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KeyReport {
    pub fingerprint: String,
    /// The file it was read from, as named, and its PEM block there.
    pub file: String,
    pub block: usize,
    /// Seals whose signature verifies with this key (a copy of a seal
    /// counted once).
    pub seals: u64,
    /// Of those, the earliest and the latest by their `ts`.
    pub first: Option<SealRef>,
    pub last: Option<SealRef>,
    pub signed_again: Vec<SignedAgain>,
}

impl KeyReport {
    pub(super) fn of(key: &KnownKey) -> KeyReport {
        KeyReport {
            fingerprint: key.fingerprint.clone(),
            file: key.file.clone(),
            block: key.block,
            ..KeyReport::default()
        }
    }

    /// Counts `seal` as one the key signed.
    pub(super) fn signed(&mut self, seal: &SealRef) {
        self.seals += 1;
        self.widen(seal);
    }

    /// Takes `seal` as the first or the last one signed if it is earlier
    /// or later than those.
    fn widen(&mut self, seal: &SealRef) {
        if self.first.as_ref().is_none_or(|f| seal.earlier(f)) {
            self.first = Some(seal.clone());
        }
        if self.last.as_ref().is_none_or(|l| l.earlier(seal)) {
            self.last = Some(seal.clone());
        }
    }

    /// Adds what the same key signed in another part of the trail.
    fn absorb(&mut self, other: KeyReport) {
        self.seals += other.seals;
        for s in other.first.iter().chain(&other.last) {
            self.widen(s);
        }
        self.signed_again.extend(other.signed_again);
    }

    fn places(&mut self) -> impl Iterator<Item = &mut Location> {
        self.first
            .iter_mut()
            .chain(self.last.iter_mut())
            .chain(self.signed_again.iter_mut().map(|a| &mut a.seal))
            .map(|s| &mut s.at)
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub records: u64,
    pub streams: Vec<String>,
    pub signatures_checked: bool,
    /// Per public key given, in the order given: the seals it signed.
    pub keys: Vec<KeyReport>,
    /// Rows after a chain's last seal were accepted as a live tail.
    pub unsealed_tail_allowed: bool,
    /// A trail with no row may pass, the input topic owing no row either.
    pub empty_allowed: bool,
    pub chains: Vec<ChainReport>,
    /// The `check` runs the chains belong to.
    pub runs: Vec<RunReport>,
    /// Chains `check` sealed without naming a run (`topic/partition`): a
    /// chain of another run signed with the same key could stand in for one.
    pub unbound_chains: Vec<String>,
    pub problems: Vec<Problem>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    pub fn location(&self, at: Location) -> String {
        let stream = self
            .streams
            .get(at.stream as usize)
            .map(String::as_str)
            .unwrap_or("?");
        format!("{stream}:{}", at.pos)
    }

    /// One report of a trail whose parts were verified apart (the files of
    /// different `check` runs): their streams one after another, each
    /// problem's place renumbered to match, and "nothing to verify" judged
    /// over the whole.
    pub fn merge(parts: Vec<Report>) -> Report {
        let mut out = Report::default();
        for mut part in parts {
            let first = u32::try_from(out.streams.len()).unwrap_or(u32::MAX);
            for p in &mut part.problems {
                if let Some(at) = &mut p.at {
                    at.stream = at.stream.saturating_add(first);
                }
            }
            for k in &mut part.keys {
                for at in k.places() {
                    at.stream = at.stream.saturating_add(first);
                }
            }
            part.problems
                .retain(|p| p.kind != ProblemKind::NothingToVerify);
            // Every part was verified with the same keyring.
            if out.keys.is_empty() {
                out.keys = std::mem::take(&mut part.keys);
            } else {
                for (k, more) in out.keys.iter_mut().zip(part.keys) {
                    k.absorb(more);
                }
            }
            out.records += part.records;
            out.streams.extend(part.streams);
            out.signatures_checked = part.signatures_checked;
            out.unsealed_tail_allowed = part.unsealed_tail_allowed;
            out.empty_allowed = part.empty_allowed;
            out.chains.extend(part.chains);
            out.runs.extend(part.runs);
            out.unbound_chains.extend(part.unbound_chains);
            out.problems.extend(part.problems);
        }
        out.mark_nothing_verified();
        out
    }

    /// Reports a trail (or range) that holds no row and shows no problem as
    /// nothing verified: never a pass, unless empty trails are allowed (the
    /// input topic, read beside the trail, owes no row: any row it owed
    /// would be a gap).
    pub(super) fn mark_nothing_verified(&mut self) {
        if self.empty_allowed {
            return;
        }
        if self.problems.is_empty() && self.chains.iter().all(|c| c.rows == 0) {
            self.problems.push(Problem::new(
                ProblemKind::NothingToVerify,
                None,
                "no audit row in the trail or the range: nothing was verified".into(),
            ));
        }
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = serde_json::to_value(self).unwrap_or(Value::Null);
        f.write_str(v.as_str().unwrap_or("?"))
    }
}

/// Options of a verification.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Require every seal to be signed by one of these keys.
    pub keys: Vec<KnownKey>,
    /// Only input offsets in this inclusive range are checked for
    /// completeness and coverage.
    pub from: Option<i64>,
    pub to: Option<i64>,
    /// What the input side says, per input partition.
    pub anchors: BTreeMap<ChainId, Anchor>,
    /// The input topic the anchors were read from: a chain of this topic
    /// without an anchor is a partition the topic does not have.
    pub input_topic: Option<String>,
    /// Rows after a chain's last seal are a live tail (a running worker),
    /// not a problem. With a public key, only above the committed offset.
    pub allow_unsealed_tail: bool,
    /// A trail with no row passes when the input side (`anchors`) owes no
    /// row either; only meaningful with the input topic read.
    pub allow_empty: bool,
}

/// What the input topic and the worker's consumer group say about one input
/// partition: an account the audit trail's writers cannot rewrite.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Anchor {
    /// Input offsets (inclusive) the input topic holds in the verified
    /// range (up to the group's committed offset when one is known): each
    /// must have a row. `None`: no record in range.
    pub cover: Option<(i64, i64)>,
    /// The group's committed offset: every row below it must be sealed.
    pub committed: Option<i64>,
    /// The chain head committed with that offset (next seq, hash of the
    /// last seal): that seal must be in the trail.
    pub head: Option<ChainHead>,
    /// Why the metadata committed with that offset holds no chain head
    /// (`no_head`, `not_utf8`, `foreign`): the worker restarted the chain at
    /// seq 0 there, and the head cannot be checked.
    pub head_unreadable: Option<&'static str>,
    /// The input topic's end (high watermark, exclusive): a row at or past
    /// it stands for a record the input never had.
    pub end: Option<i64>,
}

impl Options {
    /// Whether an unsealed row at `offset` after the chain's last seal may
    /// stand as a live tail: only when asked for, and with a key only where
    /// the consumer group has not committed it yet (nobody vouched for it).
    pub(super) fn tail_allowed(&self, committed: Option<i64>, offset: i64) -> bool {
        self.allow_unsealed_tail && (!self.signed() || committed.is_some_and(|c| offset >= c))
    }

    /// Whether every seal must be signed (a key was given).
    pub(super) fn signed(&self) -> bool {
        !self.keys.is_empty()
    }

    pub(super) fn in_range(&self, offset: i64) -> bool {
        self.from.is_none_or(|f| offset >= f) && self.to.is_none_or(|t| offset <= t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(stream: &str, rows: u64, problem: Option<ProblemKind>) -> Report {
        let mut r = Report {
            records: rows,
            streams: vec![stream.to_string()],
            chains: vec![ChainReport {
                topic: "answers.jsonl".into(),
                rows,
                ..ChainReport::default()
            }],
            ..Report::default()
        };
        if let Some(kind) = problem {
            r.problems.push(Problem {
                at: Some(Location { stream: 0, pos: 7 }),
                ..Problem::new(kind, None, String::new())
            });
        }
        r.mark_nothing_verified();
        r
    }

    #[test]
    fn parts_verified_apart_report_as_one_trail() {
        let r = Report::merge(vec![
            part("a.jsonl", 0, None),
            part("b.jsonl", 3, Some(ProblemKind::RowAltered)),
        ]);
        assert_eq!(r.streams, ["a.jsonl", "b.jsonl"]);
        assert_eq!(r.records, 3);
        assert_eq!(r.chains.len(), 2);
        // The empty part verified nothing, but the trail did.
        assert_eq!(r.problems.len(), 1);
        assert_eq!(r.problems[0].kind, ProblemKind::RowAltered);
        assert_eq!(r.location(r.problems[0].at.unwrap()), "b.jsonl:7");

        let none = Report::merge(vec![part("a.jsonl", 0, None), part("b.jsonl", 0, None)]);
        let kinds: Vec<ProblemKind> = none.problems.iter().map(|p| p.kind).collect();
        assert_eq!(kinds, [ProblemKind::NothingToVerify]);
    }
}
