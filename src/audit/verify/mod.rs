//! `audit verify`'s judgement: given the records of an audit trail (rows and
//! seals, in the order they were read), say whether the trail is intact and
//! complete, and where it is not.
//!
//! Pure: the caller reads the records (a JSON Lines file, or an audit topic)
//! and hands over bytes with their location; nothing here does I/O.
//!
//! What is checked, per chain (one input partition):
//! - seals link: each seal names the hash of a seal one lower in sequence
//!   (seal 0: the genesis hash), so a dropped or altered seal breaks the
//!   link. Several seals may share a sequence number: a worker that dies
//!   after its seal was written but before its input offset was committed
//!   is replaced by one that re-processes those records and seals them again
//!   from the same chain head (a *reseal*, counted, not a problem). Every
//!   seal of such a fork must still link, be signed and have all its rows;
//! - with public keys, each seal carries an Ed25519 signature that verifies
//!   with one of them; the report says, per key, which seals it signed, and
//!   where a key signed a chain's seal again after a newer key had
//!   ([`keyring`]);
//! - every row a seal lists is present byte for byte (altered, deleted);
//! - rows of one seal appear in the listed order within one stream
//!   (reordered); rows spread over several streams (audit partitions) are
//!   not ordered against each other, as Kafka does not order them. A chain
//!   whose seals are `check`'s is one sequence: all its rows appear in the
//!   order of its seals, across streams in the order they were read, each
//!   after the seal before its own and before its own (a final seal, over
//!   an input's last row, comes after the seal before it). Of
//!   several byte-identical copies of a listed row, the one in order is
//!   the sealed one (a worker that sends a row again after a failed produce
//!   seals it where the copy it was told about landed);
//! - every row is covered by a seal, unless it is a *redelivery*: the same
//!   row as a sealed row of its input offset in every field but `ts` (the
//!   processing time). Two rows of one offset that differ in anything else
//!   (`outcome`, `answer_hash`, findings, …) are a *conflict*, sealed or not;
//! - rows after the chain's last seal (an *unsealed tail*) are a problem: a
//!   finished trail (`check`, a stopped worker) ends with a seal, so a tail
//!   means seals were stripped or the last one deleted. A reader who expects
//!   a running worker's live tail allows it ([`Options::allow_unsealed_tail`]);
//!   with a public key only above the group's committed offset, since every
//!   row a signed verification accepts must be covered by a signed seal. A
//!   trail holding any seal of `check`'s has no live tail: `check` seals
//!   every chain it writes and writes nothing after a chain's final seal;
//! - every row and seal is the compact JSON of what it parses to, each key
//!   once (not canonical), and a redelivery repeats its sealed row's bytes
//!   but for the integer in `ts`;
//! - a chain whose seals are `check`'s ends with its final seal and holds
//!   each row and seal once: `check` neither redelivers nor reseals, and a
//!   trail cut off after an earlier seal is otherwise consistent;
//! - the chains whose seals are `check`'s are grouped by the run their
//!   seals name: every seal of a chain names the run its last seal names,
//!   and a run holds as many chains as its final seals state, so a chain
//!   of another run, or a run short of a chain, stands out. Chains whose
//!   seals name no run (a `check` that did not name its run) are listed as
//!   not bound to a run;
//! - every input offset in the range has at least one row (gaps);
//! - a trail (or range) with no row at all is not a pass: nothing verified.
//!
//! With an [`Anchor`] per input partition (read by the shell from the input
//! topic and the worker's consumer group, which the audit trail's writers
//! cannot rewrite), also:
//! - every offset the input topic holds in the range has a row, including at
//!   the ends and for partitions with no row at all (a dropped tail or a
//!   dropped chain is a gap, not a shorter trail);
//! - every row below the group's committed offset is sealed (the worker
//!   commits only sealed offsets, so an unsealed one lost its seal);
//! - the seal the group committed as its chain head is in the trail with
//!   that hash (a truncated or rewritten tail of seals), and the group's
//!   committed metadata is a chain head at all (else the worker restarted
//!   the chain at seq 0 there, and the anchor is lost);
//! - no row stands for an offset the input topic never held (at or past its
//!   end, in a partition it does not have, or of another input topic).
//!
//! The gaps found against the input topic are then narrowed
//! ([`narrow`]) to the offsets that hold a record a worker is handed, which
//! the shell learns by reading the input topic over them.
//!
//! Records read from a topic come with their groundgate headers, which must
//! agree with the body: consumers skip seals by their seal header and may
//! take a row's input coordinates from its headers.

use std::collections::{BTreeMap, HashMap, HashSet};

use ed25519_dalek::{Signature, Verifier};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::core::wire::unframed;

use super::seal::{CHECK_WORKER, ChainHead, ChainId, GENESIS, SEAL_TYPE, row_hash, unsigned_bytes};

mod chain;
mod json;
mod keyring;
mod report;
mod runs;
mod undelivered;

use chain::{
    Chain, Row, SealRec, row_fields, run_fields, seal_before, seal_fields, sealed_anywhere,
    sealed_contents,
};
use json::Record;
pub use report::*;
pub use runs::{expect_runs, seal_run};
pub use undelivered::{Handed, gaps, narrow};

const NOT_CANONICAL: &str = "not the compact JSON of what it parses to (a repeated key, whitespace, another escape or number form): rows and seals are written compact with each key once, and readers may disagree on what these bytes say";

/// What a record's body is, for judging its headers: a row of an input
/// offset, or a seal of a sequence number.
#[derive(Clone, Copy)]
enum Body {
    Row(i64),
    Seal(u64),
}

/// Incremental verifier: feed records with [`Verifier::record`], then
/// [`Verifier::finish`].
pub struct AuditVerifier {
    opts: Options,
    report: Report,
    chains: BTreeMap<ChainId, Chain>,
    /// A seal of `check`'s was read: the trail is `check` output, which has
    /// no live tail in any chain, including one whose seals were all deleted.
    check_sealed: bool,
    /// The key the last signed seal verified with, tried first: a trail's
    /// seals come in long runs of one key.
    last_signer: usize,
}

impl AuditVerifier {
    pub fn new(opts: Options) -> AuditVerifier {
        let signatures_checked = opts.signed();
        AuditVerifier {
            report: Report {
                signatures_checked,
                unsealed_tail_allowed: opts.allow_unsealed_tail,
                // Only against the input topic: without it nothing says
                // whether rows were owed.
                empty_allowed: opts.allow_empty && opts.input_topic.is_some(),
                ..Report::default()
            },
            opts,
            chains: BTreeMap::new(),
            check_sealed: false,
            last_signer: 0,
        }
    }

    /// The input topic's end (high watermark) for `id`: rows at or past it
    /// are ghosts. Given after the trail was read, so that rows for records
    /// written meanwhile are not.
    pub fn input_end(&mut self, id: ChainId, end: i64) {
        self.opts.anchors.entry(id).or_default().end = Some(end);
    }

    /// Registers a stream name; records from it carry the returned index.
    pub fn stream(&mut self, name: impl Into<String>) -> u32 {
        self.report.streams.push(name.into());
        (self.report.streams.len() - 1) as u32
    }

    fn problem(
        &mut self,
        kind: ProblemKind,
        chain: Option<&ChainId>,
        detail: String,
    ) -> &mut Problem {
        self.report.problems.push(Problem::new(kind, chain, detail));
        let last = self.report.problems.len() - 1;
        &mut self.report.problems[last]
    }

    /// A line too long to be an audit row or a seal (`len` bytes, over
    /// `cap`), which the reader did not keep: counted and reported, not read.
    pub fn oversized(&mut self, at: Location, len: u64, cap: usize) {
        self.report.records += 1;
        self.problem(
            ProblemKind::Unreadable,
            None,
            format!("a line of {len} bytes, longer than any audit row or seal ({cap} bytes at most): not read"),
        )
        .at = Some(at);
    }

    /// One line of a trail file, without its newline. A line in Schema
    /// Registry wire format (an export of a framed audit topic, such as
    /// `kcat -e` writes) is judged by its JSON text, as the topic's value is.
    pub fn record(&mut self, at: Location, bytes: &[u8]) {
        self.read_unframed(at, bytes, None, "line");
    }

    /// One message of an audit topic: its value and its groundgate headers,
    /// which must agree with the value (see [`RecordHeaders`]).
    pub fn record_from_topic(&mut self, at: Location, bytes: &[u8], headers: &RecordHeaders) {
        self.read_unframed(at, bytes, Some(headers), "value");
    }

    /// A record in Schema Registry wire format (an audit topic given a
    /// schema id) is judged by its JSON text, the bytes its seal hashed; a
    /// plain one as it is. No JSON text starts with the header's byte 0x00,
    /// so no setting is needed and one trail may hold both.
    fn read_unframed(
        &mut self,
        at: Location,
        bytes: &[u8],
        headers: Option<&RecordHeaders>,
        what: &str,
    ) {
        match unframed(bytes) {
            Ok(json) => self.read(at, json, headers),
            Err(cut) => {
                self.report.records += 1;
                self.problem(ProblemKind::Unreadable, None, format!("the {what} {cut}"))
                    .at = Some(at);
            }
        }
    }

    fn read(&mut self, at: Location, bytes: &[u8], headers: Option<&RecordHeaders>) {
        self.report.records += 1;
        let record = match Record::read(bytes) {
            Ok(Some(r)) => r,
            Ok(None) => {
                self.problem(ProblemKind::Unreadable, None, "not a JSON object".into())
                    .at = Some(at);
                return;
            }
            Err(e) => {
                self.problem(
                    ProblemKind::Unreadable,
                    None,
                    format!("not a JSON object: {e}"),
                )
                .at = Some(at);
                return;
            }
        };
        // Rows and seals are written as compact JSON, each key once. Bytes
        // that are not the encoding of what they parse to may read
        // differently elsewhere: of a repeated key, serde_json keeps the
        // last value and other readers the first, so such a copy of a sealed
        // row could pass here as a redelivery while saying something else.
        let canonical = record.canonical;
        let map = &record.map;
        if map.get("type").and_then(Value::as_str) == Some(SEAL_TYPE) {
            if let (Some(h), Some((chain, seq, ..))) = (headers, seal_fields(map)) {
                self.judge_headers(at, h, &chain, Body::Seal(seq));
            }
            self.seal(at, map, canonical);
        } else if let Some((chain, offset)) = row_fields(map) {
            if let Some(h) = headers.filter(|_| self.opts.in_range(offset)) {
                self.judge_headers(at, h, &chain, Body::Row(offset));
            }
            // Rows outside --from/--to are judged by nothing: not kept, so
            // verifying a slice of a huge topic needs memory for the slice.
            if !self.opts.in_range(offset) {
                return;
            }
            if !canonical {
                let p = self.problem(
                    ProblemKind::NotCanonical,
                    Some(&chain),
                    NOT_CANONICAL.into(),
                );
                p.offsets = Some((offset, offset));
                p.at = Some(at);
            }
            let c = self.chains.entry(chain).or_default();
            let hash = row_hash(bytes);
            c.by_hash.entry(hash).or_default().push(c.rows.len());
            c.rows.push(Row {
                offset,
                content: record.content_hash(),
                hash,
                at,
                sealed: false,
                accounted: false,
                canonical,
            });
        } else {
            self.problem(
                ProblemKind::Unreadable,
                None,
                "neither an audit row (answer_hash, input) nor a seal".into(),
            )
            .at = Some(at);
        }
    }

    /// A record's groundgate headers against its body: a seal carries its
    /// sequence number in the seal header (consumers skip seals by it), a
    /// row carries none, and input coordinates in the headers, where
    /// present, are the record's own.
    fn judge_headers(&mut self, at: Location, h: &RecordHeaders, chain: &ChainId, body: Body) {
        let mut wrong = Vec::new();
        match body {
            Body::Seal(seq) if h.seal.is_empty() => wrong.push(format!(
                "no seal header on seal {seq}: consumers that skip seals by it read it as a row"
            )),
            Body::Seal(seq) => {
                if let Some(s) = h.seal.iter().find(|s| **s != seq.to_string()) {
                    wrong.push(format!("seal header {s:?} on seal {seq}"));
                }
            }
            Body::Row(_) => {
                if let Some(s) = h.seal.first() {
                    wrong.push(format!(
                        "seal header {s:?} on a row: consumers that skip seals by it never read the row"
                    ));
                }
            }
        }
        let offset = match body {
            Body::Row(o) => Some(o.to_string()),
            Body::Seal(_) => None,
        };
        for (name, said, is) in [
            ("input topic", &h.input_topic, Some(chain.topic.clone())),
            (
                "input partition",
                &h.input_partition,
                Some(chain.partition.to_string()),
            ),
            ("input offset", &h.input_offset, offset),
        ] {
            if let Some(said) = said.iter().find(|v| Some(*v) != is.as_ref()) {
                wrong.push(format!(
                    "{name} header {said:?}, the body says {}",
                    is.as_deref().map_or("none".into(), |v| format!("{v:?}"))
                ));
            }
        }
        if wrong.is_empty() {
            return;
        }
        let p = self.problem(
            ProblemKind::HeaderMismatch,
            Some(chain),
            format!(
                "the record's headers disagree with its body: {}",
                wrong.join("; ")
            ),
        );
        match body {
            Body::Row(o) => p.offsets = Some((o, o)),
            Body::Seal(seq) => p.seal_seq = Some(seq),
        }
        p.at = Some(at);
    }

    fn seal(&mut self, at: Location, map: &Map<String, Value>, canonical: bool) {
        let parsed = seal_fields(map);
        let Some((chain, seq, prev, first, last, mut rows)) = parsed else {
            self.problem(
                ProblemKind::SealMalformed,
                None,
                "seal lacks chain, seq, prev, first_offset, last_offset or rows".into(),
            )
            .at = Some(at);
            return;
        };
        let Some((run, run_inputs)) = run_fields(map) else {
            let p = self.problem(
                ProblemKind::SealMalformed,
                Some(&chain),
                "seal's run is not a string or its run_inputs not a count".into(),
            );
            p.seal_seq = Some(seq);
            p.at = Some(at);
            return;
        };
        if !canonical {
            let p = self.problem(
                ProblemKind::NotCanonical,
                Some(&chain),
                NOT_CANONICAL.into(),
            );
            p.seal_seq = Some(seq);
            p.offsets = Some((first, last));
            p.at = Some(at);
        }
        let unsigned = unsigned_bytes(map);
        let signer = if self.opts.signed() {
            match self.signer(map, &unsigned) {
                Ok(k) => Some(k),
                Err(why) => {
                    let p = self.problem(ProblemKind::SealSignature, Some(&chain), why);
                    p.seal_seq = Some(seq);
                    p.offsets = Some((first, last));
                    p.at = Some(at);
                    None
                }
            }
        } else {
            None
        };
        if rows.iter().any(|(o, _)| *o < first || *o > last) {
            let p = self.problem(
                ProblemKind::SealMalformed,
                Some(&chain),
                "seal lists a row outside its offset range".into(),
            );
            p.seal_seq = Some(seq);
            p.at = Some(at);
        }
        let hash: [u8; 32] = Sha256::digest(&unsigned).into();
        let by_check = map.get("worker").and_then(Value::as_str) == Some(CHECK_WORKER);
        self.check_sealed |= by_check;
        // As with rows: entries outside --from/--to are not judged.
        rows.retain(|(o, _)| self.opts.in_range(*o));
        self.chains.entry(chain).or_default().seals.push(SealRec {
            seq,
            prev,
            hash,
            first,
            last,
            rows,
            at,
            is_final: map.get("final") == Some(&Value::Bool(true)),
            by_check,
            run,
            run_inputs,
            signer,
            ts: map.get("ts").and_then(Value::as_i64),
        });
    }

    /// The given key `seal`'s signature verifies with (its index), or why
    /// none does.
    fn signer(&mut self, seal: &Map<String, Value>, unsigned: &[u8]) -> Result<usize, String> {
        let sig = seal
            .get("sig")
            .and_then(Value::as_str)
            .and_then(|s| hex::decode(s).ok())
            .and_then(|b| <[u8; 64]>::try_from(b).ok())
            .ok_or("seal is not signed")?;
        let sig = Signature::from_bytes(&sig);
        let keys = &self.opts.keys;
        let verifies = |k: usize| {
            keys.get(k)
                .is_some_and(|k| k.key.verify(unsigned, &sig).is_ok())
        };
        let last = self.last_signer;
        let found = std::iter::once(last)
            .chain((0..keys.len()).filter(|&k| k != last))
            .find(|&k| verifies(k));
        if let Some(k) = found {
            self.last_signer = k;
        }
        found.ok_or_else(|| match keys.len() {
            1 => "signature does not verify with the given public key".into(),
            n => format!("signature verifies with none of the {n} public keys given"),
        })
    }

    /// Judges everything fed so far.
    pub fn finish(mut self) -> Report {
        // A partition the input side accounts for but the trail never
        // mentions is judged too: all of it is a gap.
        for (id, a) in &self.opts.anchors {
            if a.cover.is_some()
                || a.head.is_some_and(|h| h.next_seq > 0)
                || a.head_unreadable.is_some()
            {
                self.chains.entry(id.clone()).or_default();
            }
        }
        self.report.keys = keyring::tally(&self.opts.keys, &self.chains);
        let runs = runs::judge(&self.chains);
        let chains = std::mem::take(&mut self.chains);
        for (id, mut chain) in chains {
            let mut cr = self.judge_chain(&id, &mut chain);
            cr.run = runs.of_chain.get(&id).cloned();
            self.report.chains.push(cr);
        }
        // A run is judged over its chains, after each chain on its own.
        self.report.problems.extend(runs.problems);
        self.report.runs = runs.runs;
        self.report.unbound_chains = runs.unbound;
        self.report.mark_nothing_verified();
        self.report
    }

    /// Judges one chain in phases: the seals' links, the committed head,
    /// each sealed row against its seal, the rows no seal covers, rows for
    /// offsets the input never had, duplicates, then completeness.
    fn judge_chain(&mut self, id: &ChainId, c: &mut Chain) -> ChainReport {
        let mut cr = ChainReport {
            topic: id.topic.clone(),
            partition: id.partition,
            rows: c.rows.len() as u64,
            seals: c.seals.len() as u64,
            ..ChainReport::default()
        };
        let anchor = self.opts.anchors.get(id).cloned().unwrap_or_default();
        let head_line = self.link_seals(id, c, &mut cr);
        // `check` writes each row and seal once and ends every chain with a
        // final seal; nothing of its chains is redelivered or resealed. One
        // seal of `check`'s puts the chain under these rules: a forger can
        // rename a seal's worker only where no signature is checked.
        let by_check = c.seals.iter().any(|s| s.by_check);
        if by_check {
            self.judge_check_seals(id, c, &mut cr);
        }
        if let Some(head) = anchor.head {
            self.check_committed_head(id, c, head);
        }
        if let (Some(reason), Some(at)) = (anchor.head_unreadable, anchor.committed) {
            let p = self.problem(
                ProblemKind::HeadUnreadable,
                Some(id),
                format!(
                    "the consumer group committed offset {at} with metadata that is not a seal head ({reason}): a worker taking the partition over starts a new chain at seq 0 there, and the trail's end cannot be checked against the group"
                ),
            );
            p.offsets = Some((at, at));
        }
        let seals = std::mem::take(&mut c.seals);
        self.match_sealed_rows(id, c, &seals, &head_line, by_check);
        let max_sealed = seals.iter().map(|s| s.last).max();
        self.judge_unsealed_rows(id, c, max_sealed, &anchor, by_check, &mut cr);
        self.judge_ghost_rows(id, c);
        self.judge_sealed_duplicates(id, c, by_check, &mut cr);
        cr.sealed_rows = c.rows.iter().filter(|r| r.sealed).count() as u64;
        self.judge_completeness(id, c, &seals, &anchor, &mut cr);
        cr
    }

    /// Marks every row a seal lists as sealed, in the listed order within
    /// each stream; a listed row that is absent is altered (a row at its
    /// offset that no seal lists) or missing. A chain `check` wrote is held
    /// to one order over its seals and streams: `check` writes a chain's
    /// rows one after another into one file, seal by seal, whereas a
    /// worker's seal may list a row sent again that landed after the rows
    /// of the next seal, on any audit partition.
    fn match_sealed_rows(
        &mut self,
        id: &ChainId,
        c: &mut Chain,
        seals: &[SealRec],
        head_line: &HashSet<[u8; 32]>,
        by_check: bool,
    ) {
        let mut order: Vec<&SealRec> = seals.iter().collect();
        if by_check {
            order.sort_by_key(|s| s.seq);
        }
        let mut matched: HashSet<[u8; 32]> = HashSet::new();
        // In a chain `check` wrote, the first seal read of each number is
        // the chain; another one is a duplicate (reported as such), ordered
        // on its own like a worker's seal.
        let mut numbers: HashSet<u64> = HashSet::new();
        let mut chain_at: HashMap<u32, Location> = HashMap::new();
        let mut seal_at: HashMap<u32, Location> = HashMap::new();
        // In a chain `check` wrote, where the seal before this one stands:
        // `check` writes a seal after the rows it lists, and those after the
        // seal before it, but for a final seal, written at the end of the
        // run over an input's last row, which the seal before it follows.
        let mut previous_seal: Option<Location> = None;
        for s in order {
            // A byte-identical copy of a seal (a producer retry) lists the
            // same rows; they were matched once.
            if !matched.insert(s.hash) {
                continue;
            }
            let whole_chain = by_check && numbers.insert(s.seq);
            // Streams compare in the order they were read (the files as
            // given), so one key for every stream orders them one after
            // another.
            let stream_of = |at: Location| if whole_chain { 0 } else { at.stream };
            // Rows of a chain `check` wrote on the wrong side of a seal.
            let (mut after, mut before) = (Moved::default(), Moved::default());
            let last_at = if whole_chain {
                &mut chain_at
            } else {
                seal_at.clear();
                &mut seal_at
            };
            for (off, h) in &s.rows {
                // Of several copies of the row (a produce the worker sent
                // again had been written after all), the first one after the
                // row matched before it in its stream; the others are
                // redeliveries, not a reordering.
                let found = c.by_hash.get(h).and_then(|ix| {
                    let unsealed = || ix.iter().copied().filter(|&i| !c.rows[i].sealed);
                    unsealed()
                        .find(|&i| {
                            let at = c.rows[i].at;
                            last_at.get(&stream_of(at)).is_none_or(|prev| at > *prev)
                        })
                        .or_else(|| unsealed().next())
                });
                match found {
                    Some(i) => {
                        c.rows[i].sealed = true;
                        let (roff, rat) = (c.rows[i].offset, c.rows[i].at);
                        if let Some(prev) = last_at.insert(stream_of(rat), rat)
                            && rat < prev
                        {
                            let p = self.problem(
                                ProblemKind::RowOutOfOrder,
                                Some(id),
                                format!(
                                    "row appears before a row sealed ahead of it (seal {})",
                                    s.seq
                                ),
                            );
                            p.offsets = Some((roff, roff));
                            p.seal_seq = Some(s.seq);
                            p.at = Some(rat);
                        } else if whole_chain && rat > s.at {
                            after.add(roff, rat);
                        } else if whole_chain
                            && !s.is_final
                            && previous_seal.is_some_and(|p| rat < p)
                        {
                            before.add(roff, rat);
                        }
                    }
                    None if !self.opts.in_range(*off) => {}
                    None => self.absent_sealed_row(id, c, seals, s, (*off, h), head_line),
                }
            }
            // One problem per seal and side, however many rows moved.
            for (moved, after_it) in [(after, true), (before, false)] {
                let Some((from, to, at)) = moved.span else {
                    continue;
                };
                let said = if after_it {
                    format!("stand after seal {}, which lists them", s.seq)
                } else {
                    format!(
                        "listed by seal {} stand before seal {}, the seal before it",
                        s.seq,
                        s.seq.saturating_sub(1)
                    )
                };
                let p = self.problem(
                    ProblemKind::RowOutOfOrder,
                    Some(id),
                    format!("{} row(s) {said}", moved.rows),
                );
                p.offsets = Some((from, to));
                p.seal_seq = Some(s.seq);
                p.at = Some(at);
            }
            if whole_chain {
                previous_seal = Some(s.at);
            }
        }
    }

    /// A row `s` lists is not in the trail byte for byte.
    fn absent_sealed_row(
        &mut self,
        id: &ChainId,
        c: &mut Chain,
        seals: &[SealRec],
        s: &SealRec,
        (off, h): (i64, &[u8; 32]),
        head_line: &HashSet<[u8; 32]>,
    ) {
        // A row at this offset that no seal lists is this entry with its
        // bytes changed.
        let altered = c.rows.iter().position(|r| {
            r.offset == off && !r.sealed && !r.accounted && !sealed_anywhere(seals, &r.hash)
        });
        let (kind, at, detail) = match altered {
            Some(i) => {
                c.rows[i].accounted = true;
                (
                    ProblemKind::RowAltered,
                    c.rows[i].at,
                    format!(
                        "row bytes differ from what seal {} recorded (sha256 {})",
                        s.seq,
                        hex::encode(h)
                    ),
                )
            }
            None => (
                ProblemKind::RowMissing,
                s.at,
                format!(
                    "row sealed by seal {} is absent (sha256 {}){}",
                    s.seq,
                    hex::encode(h),
                    if head_line.contains(&s.hash) {
                        ""
                    } else {
                        "; the seal is superseded by a reseal"
                    }
                ),
            ),
        };
        let p = self.problem(kind, Some(id), detail);
        p.offsets = Some((off, off));
        p.seal_seq = Some(s.seq);
        p.at = Some(at);
    }

    /// Rows no seal covers: a redelivery (the same row as a sealed one but
    /// for `ts`; in a chain `check` wrote, a duplicate), a conflict (a
    /// sealed row for that offset says something else), a row the group
    /// committed whose seal is gone, a row inside the sealed history
    /// (forged), or a row after the last seal (the unsealed tail, a problem
    /// unless a live tail is allowed). A row that is not canonical JSON was
    /// reported when read.
    fn judge_unsealed_rows(
        &mut self,
        id: &ChainId,
        c: &Chain,
        max_sealed: Option<i64>,
        anchor: &Anchor,
        by_check: bool,
        cr: &mut ChainReport,
    ) {
        let sealed = sealed_contents(c);
        let committed = anchor.committed;
        let mut problems = Vec::new();
        let mut tail: Vec<(i64, bool)> = Vec::new();
        // The first unsealed row read of each offset no seal covers: a
        // later one that says something else is a conflict, live tail or not.
        let mut first_unsealed: HashMap<i64, &Row> = HashMap::new();
        for r in c
            .rows
            .iter()
            .filter(|r| !r.sealed && !r.accounted && r.canonical)
        {
            if !self.opts.in_range(r.offset) {
                continue;
            }
            if !sealed.contains_key(&r.offset) {
                let first = *first_unsealed.entry(r.offset).or_insert(r);
                if first.content != r.content {
                    problems.push((
                        ProblemKind::Conflict,
                        r,
                        "unsealed row disagrees with an earlier unsealed row for its offset (fields other than ts differ)",
                    ));
                }
            }
            match sealed.get(&r.offset) {
                Some(contents) if contents.contains(&r.content) && by_check => problems.push((
                    ProblemKind::Duplicate,
                    r,
                    "a second row for this input offset, equal to the sealed one but for ts: `check` writes one row per input line",
                )),
                Some(contents) if contents.contains(&r.content) => cr.redeliveries += 1,
                Some(_) => problems.push((
                    ProblemKind::Conflict,
                    r,
                    "unsealed row disagrees with the sealed row for its offset (fields other than ts differ)",
                )),
                None if committed.is_some_and(|c| r.offset < c) => problems.push((
                    ProblemKind::UnsealedCommitted,
                    r,
                    "the worker committed this offset, so a seal covered its row: that seal is gone",
                )),
                // `check` ends its chains with a final seal and writes
                // nothing after it: its chains have no live tail.
                None if max_sealed.is_none_or(|m| r.offset > m) => {
                    cr.unsealed_tail += 1;
                    tail.push((
                        r.offset,
                        !self.check_sealed && self.opts.tail_allowed(committed, r.offset),
                    ));
                }
                None => problems.push((
                    ProblemKind::RowForged,
                    r,
                    "row inside the sealed history that no seal covers",
                )),
            }
        }
        for (kind, r, why) in problems {
            let (off, at) = (r.offset, r.at);
            let p = self.problem(kind, Some(id), why.into());
            p.offsets = Some((off, off));
            p.at = Some(at);
        }
        let refused: Vec<i64> = tail.iter().filter(|t| !t.1).map(|t| t.0).collect();
        if let (Some(&lo), Some(&hi)) = (refused.iter().min(), refused.iter().max()) {
            let why = if by_check {
                "`check` writes nothing after a chain's final seal, so no row of its chains is a live tail, with or without --allow-unsealed-tail"
            } else if self.check_sealed {
                "the trail holds seals `check` wrote, and `check` seals every chain it writes up to a final seal, so no row of it is a live tail, with or without --allow-unsealed-tail (seals deleted, or rows added?)"
            } else if self.opts.signed() && self.opts.allow_unsealed_tail {
                "with --public-key every row must be covered by a signed seal; only rows above the consumer group's committed offset (--group) may be a live tail"
            } else {
                "a finished trail ends with a seal (seals stripped or the last seal deleted?); a running worker's trail needs --allow-unsealed-tail"
            };
            let p = self.problem(
                ProblemKind::UnsealedTail,
                Some(id),
                format!(
                    "{} row(s) after the chain's last seal are covered by no seal: {why}",
                    refused.len()
                ),
            );
            p.offsets = Some((lo, hi));
        }
    }

    /// Rows for input offsets the input topic never held (at or beyond its
    /// end, or in a partition it does not have), sealed or not.
    fn judge_ghost_rows(&mut self, id: &ChainId, c: &Chain) {
        // With the input topic named, a chain of any other topic stands for
        // records it never held: a whole chain copied from another
        // pipeline's audit topic, signed with the same key, would otherwise
        // verify beside the real ones.
        let end = match (self.opts.anchors.get(id), &self.opts.input_topic) {
            (Some(a), _) => a.end,
            (None, Some(_)) => Some(i64::MIN),
            (None, None) => None,
        };
        let Some(end) = end else {
            return;
        };
        let input = self.opts.input_topic.clone().unwrap_or_default();
        let ghosts: Vec<(i64, Location)> = c
            .rows
            .iter()
            .filter(|r| r.offset >= end)
            .map(|r| (r.offset, r.at))
            .collect();
        for (off, at) in ghosts {
            let p = self.problem(
                ProblemKind::RowGhost,
                Some(id),
                if end == i64::MIN && id.topic != input {
                    format!(
                        "row for input topic {}, not for {input}, the input topic this trail is verified against",
                        id.topic
                    )
                } else if end == i64::MIN {
                    "row for a partition the input topic does not have".into()
                } else {
                    format!("row for an input offset the input topic never held (its end is {end})")
                },
            );
            p.offsets = Some((off, off));
            p.at = Some(at);
        }
    }

    /// Several sealed rows for one input offset (a reseal after a crash)
    /// must be the same row but for `ts`; in a chain `check` wrote, where
    /// nothing is resealed, they are duplicates, reported as runs of
    /// offsets (a trail written twice has one at every offset).
    fn judge_sealed_duplicates(
        &mut self,
        id: &ChainId,
        c: &Chain,
        by_check: bool,
        cr: &mut ChainReport,
    ) {
        let mut offsets: Vec<(i64, Vec<[u8; 32]>)> = sealed_contents(c).into_iter().collect();
        offsets.sort_unstable_by_key(|(o, _)| *o);
        let mut duplicated: Vec<(i64, i64)> = Vec::new();
        for (off, contents) in offsets {
            if contents.len() < 2 {
                continue;
            }
            if contents.iter().all(|h| *h == contents[0]) {
                if !by_check {
                    cr.redeliveries += contents.len() as u64 - 1;
                } else if let Some(run) = duplicated
                    .last_mut()
                    .filter(|r| r.1.checked_add(1) == Some(off))
                {
                    run.1 = off;
                } else {
                    duplicated.push((off, off));
                }
            } else {
                let p = self.problem(
                    ProblemKind::Conflict,
                    Some(id),
                    "sealed rows for one input offset differ in fields other than ts".into(),
                );
                p.offsets = Some((off, off));
            }
        }
        for (a, b) in duplicated {
            let p = self.problem(
                ProblemKind::Duplicate,
                Some(id),
                format!(
                    "{} input offset(s) with a second sealed row, equal but for ts: `check` writes and seals one row per input line",
                    i128::from(b) - i128::from(a) + 1
                ),
            );
            p.offsets = Some((a, b));
        }
    }

    /// The rules of a chain `check` wrote, on its seals: each sequence
    /// number once (a copy or a second seal of a number is a duplicate), and
    /// the last one marked final, with none after it. Without the final
    /// seal the trail was cut off after a seal, which leaves the rest of
    /// the chain consistent.
    fn judge_check_seals(&mut self, id: &ChainId, c: &Chain, cr: &mut ChainReport) {
        cr.reseals = 0;
        let mut by_seq: BTreeMap<u64, Vec<&SealRec>> = BTreeMap::new();
        for s in &c.seals {
            by_seq.entry(s.seq).or_default().push(s);
        }
        let mut problems = Vec::new();
        for seals in by_seq.values() {
            for s in seals.iter().skip(1) {
                let copy = s.hash == seals[0].hash;
                problems.push((
                    ProblemKind::Duplicate,
                    *s,
                    format!(
                        "seal {} again{}: `check` writes each seal of a chain once",
                        s.seq,
                        if copy {
                            ", byte for byte"
                        } else {
                            " with other contents"
                        }
                    ),
                ));
            }
        }
        let Some((&last_seq, last)) = by_seq.last_key_value() else {
            return;
        };
        for (&seq, seals) in by_seq.range(..last_seq) {
            for s in seals.iter().filter(|s| s.is_final) {
                problems.push((
                    ProblemKind::SealBroken,
                    *s,
                    format!(
                        "seal {seq} is marked final, yet seals up to {last_seq} follow it: `check` writes nothing after a chain's final seal"
                    ),
                ));
            }
        }
        if !last.iter().any(|s| s.is_final) {
            let s = last[last.len() - 1];
            problems.push((
                ProblemKind::FinalSealMissing,
                s,
                format!(
                    "the chain's last seal, {last_seq}, is not marked final: `check` ends every chain with a final seal, so the trail was cut off after seal {last_seq} (or its final seal deleted)"
                ),
            ));
        }
        for (kind, s, detail) in problems {
            let (seq, offsets, at) = (s.seq, (s.first, s.last), s.at);
            let p = self.problem(kind, Some(id), detail);
            p.seal_seq = Some(seq);
            p.offsets = Some(offsets);
            p.at = Some(at);
        }
    }

    /// Every input offset in the range (the input topic's, with an anchor;
    /// else the requested one, else the offsets seen) has a row.
    fn judge_completeness(
        &mut self,
        id: &ChainId,
        c: &Chain,
        seals: &[SealRec],
        anchor: &Anchor,
        cr: &mut ChainReport,
    ) {
        let mut offsets: Vec<i64> = c.rows.iter().map(|r| r.offset).collect();
        offsets.extend(seals.iter().flat_map(|s| [s.first, s.last]));
        offsets.sort_unstable();
        offsets.dedup();
        let seen = (offsets.first().copied(), offsets.last().copied());
        let (lo, hi) = match anchor.cover {
            Some((a, b)) => (Some(a), Some(b)),
            // The input topic holds nothing of this partition in the range
            // (or the group committed nothing of it): the range owes it no
            // row, and only the offsets seen are judged.
            None if self.opts.input_topic.as_deref() == Some(id.topic.as_str()) => (
                seen.0.map(|o| self.opts.from.map_or(o, |f| o.max(f))),
                seen.1.map(|o| self.opts.to.map_or(o, |t| o.min(t))),
            ),
            None => (self.opts.from.or(seen.0), self.opts.to.or(seen.1)),
        };
        cr.first_offset = lo;
        cr.last_offset = hi;
        if let (Some(lo), Some(hi)) = (lo, hi) {
            let mut have: Vec<i64> = c
                .rows
                .iter()
                .map(|r| r.offset)
                .filter(|o| (lo..=hi).contains(o))
                .collect();
            have.sort_unstable();
            have.dedup();
            // The first offset not yet accounted for; `None` past i64::MAX.
            let mut next = Some(lo);
            for o in have {
                if let Some(n) = next
                    && o > n
                {
                    cr.gaps.push((n, o - 1));
                }
                next = o.checked_add(1);
            }
            if let Some(n) = next
                && n <= hi
            {
                cr.gaps.push((n, hi));
            }
        }
        let gaps = cr.gaps.iter().map(|&(a, b)| Problem::gap(id, a, b));
        self.report.problems.extend(gaps);
    }

    /// The seal the consumer group committed as its chain head must be in
    /// the trail, byte for byte (its hash): without it, the seals after some
    /// point were dropped or rewritten, which the chain alone cannot show.
    fn check_committed_head(&mut self, id: &ChainId, c: &Chain, head: ChainHead) {
        let Some(seq) = head.next_seq.checked_sub(1) else {
            return;
        };
        if c.seals.iter().any(|s| s.seq == seq && s.hash == head.prev) {
            return;
        }
        let found = c.seals.iter().any(|s| s.seq == seq);
        let p = self.problem(
            ProblemKind::HeadMissing,
            Some(id),
            format!(
                "the consumer group committed seal {seq} ({}) as the chain head; {}",
                hex::encode(&head.prev[..8]),
                if found {
                    "the trail's seal with that number has another hash (rewritten)"
                } else {
                    "no seal with that number is in the trail (tail truncated)"
                }
            ),
        );
        p.seal_seq = Some(seq);
    }

    /// Checks that every seal names the hash of a seal one lower in
    /// sequence (seal 0: the genesis hash) and fills in the chain's reseals
    /// and head. Seals are judged by sequence number, not by where they were
    /// read, so a chain whose seals sit in several streams still links.
    /// Returns the hashes of the seals from the head back along the names
    /// (the line a fork continues on; the others are superseded).
    fn link_seals(&mut self, id: &ChainId, c: &Chain, cr: &mut ChainReport) -> HashSet<[u8; 32]> {
        let mut by_seq: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (i, s) in c.seals.iter().enumerate() {
            by_seq.entry(s.seq).or_default().push(i);
        }
        let Some((&root_seq, roots)) = by_seq.first_key_value() else {
            return HashSet::new();
        };
        let root_prev = c.seals[roots[0]].prev;
        // Distinct seals that link, per sequence number: more than one is a
        // reseal (a byte-identical copy of a seal is the same seal).
        let mut linked: BTreeMap<u64, Vec<[u8; 32]>> = BTreeMap::new();
        for (i, s) in c.seals.iter().enumerate() {
            let verdict = if s.seq == root_seq {
                if s.seq == 0 && s.prev != GENESIS {
                    Some((
                        ProblemKind::SealBroken,
                        "seal 0 does not name the genesis hash (altered or replaced)".into(),
                    ))
                } else if s.prev != root_prev {
                    Some((
                        ProblemKind::SealBroken,
                        format!(
                            "seal {} names another previous seal than the seal {} read first",
                            s.seq, s.seq
                        ),
                    ))
                } else if s.seq != 0 && self.opts.from.is_none() && i == roots[0] {
                    Some((
                        ProblemKind::SealMissing,
                        format!(
                            "first seal found is seq {}: seals 0..{} are missing",
                            s.seq, s.seq
                        ),
                    ))
                } else {
                    None
                }
            } else {
                match by_seq.get(&(s.seq - 1)) {
                    Some(parents) if parents.iter().any(|&j| c.seals[j].hash == s.prev) => None,
                    Some(_) => Some((
                        ProblemKind::SealBroken,
                        format!(
                            "seal {} does not name the hash of any seal {} (altered or replaced)",
                            s.seq,
                            s.seq - 1
                        ),
                    )),
                    None => {
                        let before = by_seq.range(..s.seq).next_back().map_or(0, |(q, _)| *q);
                        Some((
                            ProblemKind::SealMissing,
                            format!("seal seq {} follows seq {before}", s.seq),
                        ))
                    }
                }
            };
            match verdict {
                Some((kind, detail)) => {
                    let before = seal_before(&c.seals, &by_seq, s);
                    let offsets = match kind {
                        ProblemKind::SealMissing => before.map(|b| (b.last, s.first)),
                        _ => Some(before.map_or((s.first, s.last), |b| (b.first, s.last))),
                    };
                    let p = self.problem(kind, Some(id), detail);
                    p.seal_seq = Some(s.seq);
                    p.offsets = offsets;
                    p.at = Some(s.at);
                    // A seal 0..n missing before the first one found does
                    // not make that seal's own link doubtful.
                    if kind == ProblemKind::SealMissing && s.seq == root_seq {
                        linked.entry(s.seq).or_default().push(s.hash);
                    }
                }
                None => linked.entry(s.seq).or_default().push(s.hash),
            }
        }
        cr.reseals = linked
            .values_mut()
            .map(|hashes| {
                hashes.sort_unstable();
                hashes.dedup();
                hashes.len() as u64 - 1
            })
            .sum();
        // The head: the highest sequence number, the later one read on a tie.
        let head = by_seq
            .last_key_value()
            .and_then(|(_, ix)| ix.last().copied());
        cr.head_seal = head.map(|i| hex::encode(c.seals[i].hash));
        let by_hash: HashMap<[u8; 32], &SealRec> = c.seals.iter().map(|s| (s.hash, s)).collect();
        let mut line = HashSet::new();
        let mut at = head.map(|i| &c.seals[i]);
        while let Some(s) = at.filter(|s| line.insert(s.hash)) {
            at = by_hash
                .get(&s.prev)
                .copied()
                .filter(|p| p.seq.checked_add(1) == Some(s.seq));
        }
        line
    }
}

/// Rows of one seal found on one wrong side of a seal: how many, the
/// lowest and highest offset, and where the first of them stands.
#[derive(Default)]
struct Moved {
    rows: u64,
    span: Option<(i64, i64, Location)>,
}

impl Moved {
    fn add(&mut self, offset: i64, at: Location) {
        self.rows += 1;
        self.span = Some(match self.span {
            None => (offset, offset, at),
            Some((lo, hi, first)) => (lo.min(offset), hi.max(offset), first.min(at)),
        });
    }
}

#[cfg(test)]
mod tests {
    use ed25519_dalek::SigningKey;

    use super::super::keys::KnownKey;
    use super::super::seal::{ChainHead, Sealer, Written};
    use super::*;

    fn row(offset: i64, answer: &str, ts: i64) -> Vec<u8> {
        format!(
            r#"{{"answer_hash":"{answer}","input":{{"offset":{offset},"partition":0,"topic":"answers"}},"ts":{ts}}}"#
        )
        .into_bytes()
    }

    /// A clean trail of `n` rows sealed every `every` rows, plus a final seal.
    fn trail(n: i64, every: usize, key: Option<SigningKey>) -> Vec<Vec<u8>> {
        let chain = ChainId {
            topic: "answers".into(),
            partition: 0,
        };
        let mut s = Sealer::new(chain, "w1", every, ChainHead::START, key);
        let mut out = Vec::new();
        for o in 0..n {
            let r = row(o, &format!("h{o}"), 100 + o);
            let due = s.push(o, &r);
            out.push(r);
            if due {
                out.extend(s.seal(1_000 + o));
            }
        }
        out.extend(s.seal(9_999));
        out
    }

    /// The keyring of the public keys of `keys`, as if read from a bundle
    /// `ring.pem` in that order.
    fn ring(keys: &[&SigningKey]) -> Vec<KnownKey> {
        keys.iter()
            .enumerate()
            .map(|(i, k)| KnownKey::new(k.verifying_key(), "ring.pem", i + 1))
            .collect()
    }

    fn check(records: &[Vec<u8>], opts: Options) -> Report {
        let mut v = AuditVerifier::new(opts);
        let s = v.stream("audit.jsonl");
        for (i, r) in records.iter().enumerate() {
            v.record(
                Location {
                    stream: s,
                    pos: i as u64 + 1,
                },
                r,
            );
        }
        v.finish()
    }

    fn kinds(r: &Report) -> Vec<ProblemKind> {
        r.problems.iter().map(|p| p.kind).collect()
    }

    fn is_seal(r: &[u8]) -> bool {
        std::str::from_utf8(r).unwrap().contains(SEAL_TYPE)
    }

    fn answers(partition: i32) -> ChainId {
        ChainId {
            topic: "answers".into(),
            partition,
        }
    }

    /// `trail(10, 4)` with the anchor a worker that committed everything
    /// would leave: cover 0..=9, committed 10, head after the last seal.
    fn anchored(cover: Option<(i64, i64)>, committed: i64, head: ChainHead) -> Options {
        Options {
            anchors: [(
                answers(0),
                Anchor {
                    cover,
                    committed: Some(committed),
                    head: Some(head),
                    ..Anchor::default()
                },
            )]
            .into(),
            ..Options::default()
        }
    }

    /// The chain head after `trail(n, every)`'s last seal.
    fn head_of(n: i64, every: usize) -> ChainHead {
        let mut s = Sealer::new(answers(0), "w1", every, ChainHead::START, None);
        for o in 0..n {
            if s.push(o, &row(o, &format!("h{o}"), 100 + o)) {
                s.seal(1_000 + o);
            }
        }
        s.seal(9_999);
        s.head()
    }

    #[test]
    fn an_anchored_trail_verifies() {
        let r = check(
            &trail(10, 4, None),
            anchored(Some((0, 9)), 10, head_of(10, 4)),
        );
        assert!(r.ok(), "{:?}", r.problems);
    }

    #[test]
    fn a_dropped_tail_is_a_gap_against_the_input_topic() {
        // The last seal (offsets 8, 9) and its rows are gone: the chain alone
        // is shorter but consistent; the input topic says 8 and 9 exist, and
        // the group committed the dropped seal as its head.
        let t = trail(10, 4, None);
        let kept: Vec<Vec<u8>> = t[..t.len() - 3].to_vec();
        assert!(is_seal(kept.last().unwrap()));
        let plain = check(&kept, Options::default());
        assert!(plain.ok(), "without an anchor the truncation is invisible");
        let r = check(&kept, anchored(Some((0, 9)), 10, head_of(10, 4)));
        assert_eq!(kinds(&r), vec![ProblemKind::HeadMissing, ProblemKind::Gap]);
        assert_eq!(r.problems[0].seal_seq, Some(2));
        assert!(
            r.problems[0].detail.contains("tail truncated"),
            "{}",
            r.problems[0].detail
        );
        assert_eq!(r.problems[1].offsets, Some((8, 9)));
    }

    #[test]
    fn a_dropped_last_seal_leaves_committed_rows_unsealed() {
        let mut t = trail(10, 4, None);
        let last = t.pop().unwrap();
        assert!(is_seal(&last));
        let r = check(&t, anchored(Some((0, 9)), 10, head_of(10, 4)));
        assert_eq!(
            kinds(&r),
            vec![
                ProblemKind::HeadMissing,
                ProblemKind::UnsealedCommitted,
                ProblemKind::UnsealedCommitted
            ]
        );
        assert_eq!(r.problems[1].offsets, Some((8, 8)));
        // Rows above the committed offset are a live tail when one is
        // allowed, even with a key: nobody has vouched for them yet.
        let mut live = anchored(Some((0, 7)), 8, head_of(8, 4));
        live.allow_unsealed_tail = true;
        let r = check(&t, live.clone());
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(r.chains[0].unsealed_tail, 2);
        live.keys = ring(&[&SigningKey::from_bytes(&[1; 32])]);
        let signed = trail(10, 4, Some(SigningKey::from_bytes(&[1; 32])));
        let r = check(&signed[..signed.len() - 1], live);
        assert!(r.ok(), "{:?}", r.problems);
        let r = check(&t, anchored(Some((0, 7)), 8, head_of(8, 4)));
        assert_eq!(kinds(&r), vec![ProblemKind::UnsealedTail]);
    }

    #[test]
    fn a_rewritten_head_seal_is_reported() {
        let t = trail(10, 4, None);
        let mut head = head_of(10, 4);
        head.prev[0] ^= 1;
        let r = check(&t, anchored(Some((0, 9)), 10, head));
        assert_eq!(kinds(&r), vec![ProblemKind::HeadMissing]);
        assert!(
            r.problems[0].detail.contains("another hash"),
            "{}",
            r.problems[0].detail
        );
    }

    #[test]
    fn a_partition_the_trail_never_mentions_is_all_gap() {
        let mut opts = anchored(Some((0, 9)), 10, head_of(10, 4));
        opts.anchors.insert(
            answers(1),
            Anchor {
                cover: Some((0, 4)),
                ..Anchor::default()
            },
        );
        let r = check(&trail(10, 4, None), opts);
        assert_eq!(kinds(&r), vec![ProblemKind::Gap]);
        assert_eq!(r.problems[0].partition, Some(1));
        assert_eq!(r.problems[0].offsets, Some((0, 4)));
    }

    #[test]
    fn a_clean_trail_verifies() {
        let r = check(&trail(10, 4, None), Options::default());
        assert!(r.ok(), "{:?}", r.problems);
        let c = &r.chains[0];
        assert_eq!((c.rows, c.sealed_rows, c.seals), (10, 10, 3));
        assert_eq!((c.first_offset, c.last_offset), (Some(0), Some(9)));
    }

    #[test]
    fn a_flipped_byte_in_a_row_is_reported_at_its_offset() {
        let mut t = trail(10, 4, None);
        // Row for offset 5 is the 7th record (a seal follows offset 3).
        assert!(!is_seal(&t[6]));
        let key = b"\"answer_hash\":\"";
        let pos = t[6].windows(key.len()).position(|w| w == key).unwrap();
        t[6][pos + key.len()] = b'X';
        let r = check(&t, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::RowAltered]);
        assert_eq!(r.problems[0].offsets, Some((5, 5)));
        assert_eq!(r.problems[0].seal_seq, Some(1));
        assert_eq!(r.location(r.problems[0].at.unwrap()), "audit.jsonl:7");
    }

    #[test]
    fn a_deleted_row_is_missing_and_a_gap() {
        let mut t = trail(10, 4, None);
        t.remove(6);
        let r = check(&t, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::RowMissing, ProblemKind::Gap]);
        assert!(r.problems.iter().all(|p| p.offsets == Some((5, 5))));
    }

    #[test]
    fn reordered_rows_are_reported() {
        let mut t = trail(10, 4, None);
        t.swap(5, 6);
        let r = check(&t, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::RowOutOfOrder]);
        // Offset 5 now stands before offset 4, which the seal lists first.
        assert_eq!(r.problems[0].offsets, Some((5, 5)));
    }

    #[test]
    fn a_forged_row_inside_sealed_history_is_reported() {
        let mut t = trail(10, 4, None);
        t.insert(3, row(2, "forged", 5));
        let r = check(&t, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::Conflict]);
        // The same row with another ts: a redelivery.
        let mut t = trail(10, 4, None);
        t.insert(3, row(2, "h2", 5));
        let r = check(&t, Options::default());
        assert!(
            r.ok(),
            "same answer, new ts: a redelivery, {:?}",
            r.problems
        );
        assert_eq!(r.chains[0].redeliveries, 1);
        // The sealed row with whitespace added: not canonical, so no
        // redelivery either.
        let mut t = trail(10, 4, None);
        let mut extra = t[2].clone();
        extra.extend_from_slice(b" ");
        t.insert(3, extra);
        let r = check(&t, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::NotCanonical]);
        assert_eq!(r.chains[0].redeliveries, 0);
    }

    /// Rows of offsets 0..=3 as a worker delivers them when the row of
    /// offset 1 was refused and sent again (or replaced by its stand-in)
    /// after the row of offset 2: the audit partition holds 0, 2, 1, 3. The
    /// seal lists the rows where they landed (`positioned`) or in offset
    /// order.
    fn sent_again(positioned: bool) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let rows: Vec<Vec<u8>> = (0..4).map(|o| row(o, &format!("h{o}"), 100 + o)).collect();
        let landed = [0, 2, 1, 3];
        let mut s = sealer_at("w1", 0, GENESIS);
        for (o, r) in (0..).zip(&rows) {
            let offset = landed.iter().position(|&l| l == o).unwrap() as i64;
            if positioned {
                let at = Written {
                    partition: 0,
                    offset,
                };
                s.push_hash(o, row_hash(r), Some(at));
            } else {
                s.push(o, r);
            }
        }
        let mut t: Vec<Vec<u8>> = landed.iter().map(|&o| rows[o as usize].clone()).collect();
        t.extend(s.seal(9_999));
        (t, rows)
    }

    #[test]
    fn a_row_sent_again_after_later_rows_verifies_where_it_landed() {
        let (t, _) = sent_again(false);
        let r = check(&t, Options::default());
        assert_eq!(
            kinds(&r),
            vec![ProblemKind::RowOutOfOrder],
            "listed in offset order"
        );
        let (honest, rows) = sent_again(true);
        let r = check(&honest, Options::default());
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!((r.chains[0].sealed_rows, r.chains[0].redeliveries), (4, 0));
        // The first attempt had been written after all: an earlier copy.
        let mut copied = honest.clone();
        copied.insert(1, rows[1].clone());
        let r = check(&copied, Options::default());
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(r.chains[0].redeliveries, 1);
        // Someone else puts the rows back in offset order, or removes the
        // row sent again.
        let mut moved = honest.clone();
        moved.swap(1, 2);
        let r = check(&moved, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::RowOutOfOrder]);
        assert_eq!(r.problems[0].offsets, Some((1, 1)));
        let mut removed = honest.clone();
        removed.remove(2);
        let r = check(&removed, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::RowMissing, ProblemKind::Gap]);
        assert!(r.problems.iter().all(|p| p.offsets == Some((1, 1))));
        // With the first attempt's copy left, removing the row sent again
        // leaves the copy out of the sealed order.
        let mut copy_left = copied.clone();
        copy_left.remove(3);
        let r = check(&copy_left, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::RowOutOfOrder]);
        assert_eq!(r.problems[0].offsets, Some((1, 1)));
    }

    /// Offsets 0..=7 sealed every 4 rows by `worker`, with the row of
    /// offset 3 (listed by seal 0) written after the rows of seal 1, as a
    /// worker writes a row it sent again.
    fn sealed_past_the_next_seal(worker: &str) -> Vec<Vec<u8>> {
        let rows: Vec<Vec<u8>> = (0..8).map(|o| row(o, &format!("h{o}"), 100 + o)).collect();
        let mut s = Sealer::new(chain0(), worker, 4, ChainHead::START, None);
        let mut seals = Vec::new();
        for (o, r) in (0..).zip(&rows) {
            if s.push(o, r) {
                seals.extend(if o == 7 {
                    s.seal_final(9_999, 1)
                } else {
                    s.seal(1_000 + o)
                });
            }
        }
        let mut t: Vec<Vec<u8>> = [0, 1, 2, 4, 5, 6, 7, 3]
            .iter()
            .map(|&o| rows[o].clone())
            .collect();
        t.extend(seals);
        t
    }

    #[test]
    fn only_a_check_chain_is_ordered_across_its_seals() {
        let r = check(&sealed_past_the_next_seal("w1"), Options::default());
        assert!(r.ok(), "{:?}", r.problems);
        let r = check(&sealed_past_the_next_seal(CHECK_WORKER), Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::RowOutOfOrder]);
        // Offset 4, the first row of seal 1, stands before offset 3 of seal 0.
        assert_eq!(r.problems[0].offsets, Some((4, 4)));
    }

    #[test]
    fn no_chain_of_a_trail_holding_checks_seals_is_a_live_tail() {
        let live = Options {
            allow_unsealed_tail: true,
            ..Options::default()
        };
        // A row of another input, which no seal covers.
        let other = String::from_utf8(row(0, "h0", 1))
            .unwrap()
            .replace("\"answers\"", "\"other\"")
            .into_bytes();
        let mut t = trail(4, 4, None);
        t.push(other.clone());
        let r = check(&t, live.clone());
        assert!(
            r.ok(),
            "a worker's trail may have a live tail: {:?}",
            r.problems
        );
        assert_eq!(r.chains[1].unsealed_tail, 1);
        let mut s = Sealer::new(chain0(), CHECK_WORKER, 4, ChainHead::START, None);
        let mut t: Vec<Vec<u8>> = (0..4).map(|o| row(o, &format!("h{o}"), o)).collect();
        for (o, r) in (0..).zip(&t) {
            s.push(o, r);
        }
        t.extend(s.seal_final(9_999, 1));
        t.push(other);
        let r = check(&t, live);
        assert_eq!(kinds(&r), vec![ProblemKind::UnsealedTail]);
        assert_eq!(r.problems[0].topic.as_deref(), Some("other"));
    }

    #[test]
    fn a_dropped_seal_breaks_the_link() {
        let mut t = trail(10, 4, None);
        let seal_ix = t.iter().position(|r| is_seal(r)).unwrap();
        t.remove(seal_ix);
        let r = check(&t, Options::default());
        let k = kinds(&r);
        assert!(k.contains(&ProblemKind::SealMissing), "{k:?}");
        assert!(
            k.contains(&ProblemKind::RowForged),
            "rows of the dropped seal are unsealed: {k:?}"
        );
    }

    #[test]
    fn an_altered_seal_breaks_the_next_link() {
        let mut t = trail(10, 4, None);
        let seal_ix = t.iter().position(|r| is_seal(r)).unwrap();
        let s = String::from_utf8(t[seal_ix].clone()).unwrap();
        t[seal_ix] = s
            .replace("\"worker\":\"w1\"", "\"worker\":\"w2\"")
            .into_bytes();
        let r = check(&t, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::SealBroken]);
        assert_eq!(r.problems[0].seal_seq, Some(1));
    }

    #[test]
    fn signatures_are_checked_against_the_given_key() {
        let (key, opts) = key_and_options();
        assert!(check(&trail(6, 4, Some(key.clone())), opts.clone()).ok());
        let other = trail(6, 4, Some(SigningKey::from_bytes(&[2; 32])));
        let r = check(&other, opts.clone());
        assert_eq!(kinds(&r), vec![ProblemKind::SealSignature; 2]);
        let unsigned = check(&trail(6, 4, None), opts);
        assert_eq!(kinds(&unsigned), vec![ProblemKind::SealSignature; 2]);
    }

    #[test]
    fn a_crash_and_replay_is_redelivery_and_unsealed_tail_only() {
        // Worker 1 seals offsets 0..=3, writes 4..=5 and dies; worker 2
        // resumes the chain at the last seal and re-processes 4..=7.
        let chain = ChainId {
            topic: "answers".into(),
            partition: 0,
        };
        let mut t = Vec::new();
        let mut w1 = Sealer::new(chain.clone(), "w1", 4, ChainHead::START, None);
        for o in 0..6 {
            let r = row(o, &format!("h{o}"), o);
            if w1.push(o, &r) {
                t.push(r);
                t.extend(w1.seal(10));
            } else {
                t.push(r);
            }
        }
        let mut w2 = Sealer::new(chain, "w2", 4, w1.head(), None);
        for o in 4..8 {
            let r = row(o, &format!("h{o}"), 50 + o);
            w2.push(o, &r);
            t.push(r);
        }
        t.extend(w2.seal(99));
        let r = check(&t, Options::default());
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(r.chains[0].redeliveries, 2);
        // Before worker 2 seals, the crashed worker's rows are an unsealed
        // tail: a live one when asked for, else a problem.
        let live = Options {
            allow_unsealed_tail: true,
            ..Options::default()
        };
        let r = check(&t[..t.len() - 5], live);
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(r.chains[0].unsealed_tail, 2);
        let r = check(&t[..t.len() - 5], Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::UnsealedTail]);
        assert_eq!(r.problems[0].offsets, Some((4, 5)));
    }

    /// `row` with an `outcome`, as real rows have.
    fn row_with(offset: i64, outcome: &str, ts: i64) -> Vec<u8> {
        format!(
            r#"{{"answer_hash":"h{offset}","input":{{"offset":{offset},"partition":0,"topic":"answers"}},"outcome":"{outcome}","ts":{ts}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn a_trail_stripped_of_its_seals_does_not_verify() {
        let (key, signed) = key_and_options();
        let stripped: Vec<Vec<u8>> = trail(10, 4, Some(key.clone()))
            .into_iter()
            .filter(|r| !is_seal(r))
            .map(|r| {
                String::from_utf8(r)
                    .unwrap()
                    .replace("\"h5\"", "\"edited\"")
                    .into_bytes()
            })
            .collect();
        for opts in [Options::default(), signed.clone()] {
            let r = check(&stripped, opts);
            assert_eq!(kinds(&r), vec![ProblemKind::UnsealedTail]);
            assert_eq!(r.problems[0].offsets, Some((0, 9)));
        }
        // A live tail is no excuse with a key and no group to tell it apart.
        let r = check(
            &stripped,
            Options {
                allow_unsealed_tail: true,
                ..signed.clone()
            },
        );
        assert_eq!(kinds(&r), vec![ProblemKind::UnsealedTail]);
        assert!(
            r.problems[0].detail.contains("signed seal"),
            "{:?}",
            r.problems
        );
        // Without a key, asking for a live tail accepts it, counted.
        let live = Options {
            allow_unsealed_tail: true,
            ..Options::default()
        };
        let r = check(&stripped, live);
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(r.chains[0].unsealed_tail, 10);
        // Only the last seal deleted: its rows are an unsealed tail.
        let mut t = trail(10, 4, Some(key));
        assert!(is_seal(&t.pop().unwrap()));
        let r = check(&t, signed);
        assert_eq!(kinds(&r), vec![ProblemKind::UnsealedTail]);
        assert_eq!(r.problems[0].offsets, Some((8, 9)));
    }

    /// Rows of offsets 0..4, all accepted, and the seal over them.
    fn four_accepted_rows_sealed() -> Vec<Vec<u8>> {
        let mut s = sealer_at("w1", 0, GENESIS);
        let mut t = Vec::new();
        for o in 0..4 {
            let r = row_with(o, "accepted", 100 + o);
            s.push(o, &r);
            t.push(r);
        }
        t.extend(s.seal(1_000));
        t
    }

    #[test]
    fn a_copy_of_a_row_is_a_redelivery_only_if_it_differs_in_ts_alone() {
        let t = four_accepted_rows_sealed();
        // Same row, processed again later.
        let mut again = t.clone();
        again.push(row_with(2, "accepted", 777));
        let r = check(&again, Options::default());
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(r.chains[0].redeliveries, 1);
        // Same answer_hash, flipped outcome: a conflict, not a redelivery.
        let mut flipped = t.clone();
        flipped.push(row_with(2, "rejected", 102));
        let r = check(&flipped, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::Conflict]);
        assert_eq!(r.problems[0].offsets, Some((2, 2)));
        // Two seals (a reseal) over rows that disagree: a conflict too.
        let mut w2 = sealer_at("w2", 0, GENESIS);
        let mut forked = t.clone();
        for o in 0..4 {
            let r = row_with(o, if o == 1 { "rejected" } else { "accepted" }, 500 + o);
            w2.push(o, &r);
            forked.push(r);
        }
        forked.extend(w2.seal(2_000));
        let r = check(&forked, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::Conflict]);
        assert_eq!(r.problems[0].offsets, Some((1, 1)));
        assert_eq!(r.chains[0].reseals, 1);
    }

    #[test]
    fn a_copy_whose_ts_is_moved_dropped_or_not_an_integer_is_a_conflict() {
        let t = four_accepted_rows_sealed();
        let sealed = String::from_utf8(row_with(2, "accepted", 102)).unwrap();
        let copies = [
            sealed.replace(r#","ts":102"#, ""),
            sealed
                .replace(r#","ts":102"#, "")
                .replacen('{', r#"{"ts":102,"#, 1),
            sealed.replace(r#""ts":102"#, r#""ts":"102""#),
            sealed.replace(
                r#""ts":102"#,
                r#""ts":{"outcome":"rejected","validation_ok":false}"#,
            ),
            sealed.replace(r#""ts":102"#, r#""ts":null"#),
        ];
        for copy in copies {
            let mut tampered = t.clone();
            tampered.push(copy.clone().into_bytes());
            let r = check(&tampered, Options::default());
            assert_eq!(kinds(&r), vec![ProblemKind::Conflict], "{copy}");
            assert_eq!(r.problems[0].offsets, Some((2, 2)), "{copy}");
            assert_eq!(r.chains[0].redeliveries, 0, "{copy}");
        }
    }

    #[test]
    fn two_rows_of_a_live_tail_that_disagree_are_a_conflict() {
        let (key, _) = key_and_options();
        let mut t = trail(10, 4, Some(key.clone()));
        assert!(is_seal(&t.pop().unwrap()));
        let mut signed_live = anchored(Some((0, 7)), 8, head_of(8, 4));
        signed_live.allow_unsealed_tail = true;
        signed_live.keys = ring(&[&key]);
        let live = Options {
            allow_unsealed_tail: true,
            ..Options::default()
        };
        // Processed again, still unsealed: the same row but for ts.
        let mut again = t.clone();
        again.push(row(9, "h9", 777));
        for opts in [signed_live.clone(), live.clone()] {
            let r = check(&again, opts);
            assert!(r.ok(), "{:?}", r.problems);
            assert_eq!(r.chains[0].unsealed_tail, 3);
        }
        // A second row for offset 9 that says something else.
        let mut contradicted = t.clone();
        contradicted.push(row(9, "another answer", 777));
        for opts in [signed_live, live] {
            let r = check(&contradicted, opts);
            assert_eq!(kinds(&r), vec![ProblemKind::Conflict], "{:?}", r.problems);
            assert_eq!(r.problems[0].offsets, Some((9, 9)));
        }
    }

    #[test]
    fn rows_for_offsets_the_input_never_had_are_ghosts() {
        let mut opts = anchored(Some((0, 9)), 10, head_of(10, 4));
        opts.anchors.get_mut(&answers(0)).unwrap().end = Some(10);
        opts.input_topic = Some("answers".into());
        opts.allow_unsealed_tail = true;
        let mut t = trail(10, 4, None);
        t.push(row(999_999, "ghost", 5));
        let r = check(&t, opts.clone());
        assert_eq!(kinds(&r), vec![ProblemKind::RowGhost]);
        assert_eq!(r.problems[0].offsets, Some((999_999, 999_999)));
        // A partition the input topic does not have.
        let mut t = trail(10, 4, None);
        t.push(
            br#"{"answer_hash":"x","input":{"offset":0,"partition":7,"topic":"answers"},"ts":1}"#
                .to_vec(),
        );
        let r = check(&t, opts);
        assert_eq!(kinds(&r), vec![ProblemKind::RowGhost]);
        assert_eq!(r.problems[0].partition, Some(7));
    }

    #[test]
    fn a_chain_of_another_input_topic_is_ghosts_against_the_input_topic() {
        let (key, signed) = key_and_options();
        let mut t = trail(10, 4, Some(key.clone()));
        // Another pipeline's whole chain, signed with the same key.
        let other = ChainId {
            topic: "answers-b".into(),
            partition: 0,
        };
        let mut s = Sealer::new(other, "w1", 4, ChainHead::START, Some(key));
        for o in 0..3 {
            let r = format!(
                r#"{{"answer_hash":"b{o}","input":{{"offset":{o},"partition":0,"topic":"answers-b"}},"ts":{o}}}"#
            )
            .into_bytes();
            s.push(o, &r);
            t.push(r);
        }
        t.extend(s.seal(5));
        assert!(check(&t, signed.clone()).ok(), "a chain of its own");
        let mut opts = anchored(Some((0, 9)), 10, head_of(10, 4));
        opts.anchors.get_mut(&answers(0)).unwrap().end = Some(10);
        opts.input_topic = Some("answers".into());
        opts.keys = signed.keys;
        let r = check(&t, opts);
        assert_eq!(
            kinds(&r),
            vec![ProblemKind::RowGhost; 3],
            "{:?}",
            r.problems
        );
        assert!(
            r.problems
                .iter()
                .all(|p| p.topic.as_deref() == Some("answers-b")
                    && p.detail.contains("not for answers")),
            "{:?}",
            r.problems
        );
    }

    #[test]
    fn a_range_past_a_partitions_input_owes_that_partition_nothing() {
        // Partition 0 holds offsets 0..=9, partition 1 only 0..=3: a range
        // at the end of partition 0 asks partition 1 for nothing.
        let mut t = trail(10, 4, None);
        let mut s = Sealer::new(answers(1), "w1", 4, ChainHead::START, None);
        for o in 0..4 {
            let r = format!(
                r#"{{"answer_hash":"p1-{o}","input":{{"offset":{o},"partition":1,"topic":"answers"}},"ts":{o}}}"#
            )
            .into_bytes();
            s.push(o, &r);
            t.push(r);
        }
        t.extend(s.seal(5));
        let mut opts = Options {
            from: Some(8),
            to: Some(9),
            input_topic: Some("answers".into()),
            ..Options::default()
        };
        for (p, end) in [(0, 10), (1, 4)] {
            opts.anchors.insert(
                answers(p),
                Anchor {
                    cover: (end > 8).then_some((8, 9)),
                    end: Some(end),
                    ..Anchor::default()
                },
            );
        }
        let r = check(&t, opts.clone());
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(r.chains[0].rows, 2);
        // Partition 0's offsets in the range are still owed their rows.
        let without_9: Vec<Vec<u8>> = t
            .iter()
            .filter(|r| !r.starts_with(br#"{"answer_hash":"h9""#))
            .cloned()
            .collect();
        let r = check(&without_9, opts);
        assert!(kinds(&r).contains(&ProblemKind::Gap), "{:?}", r.problems);
        assert!(
            r.problems.iter().all(|p| p.partition == Some(0)),
            "{:?}",
            r.problems
        );
    }

    /// The headers the worker writes on `record` (a row or a seal of chain 0).
    fn worker_headers(record: &[u8]) -> RecordHeaders {
        let v: Value = serde_json::from_slice(record).unwrap();
        let mut h = RecordHeaders {
            input_topic: vec!["answers".into()],
            input_partition: vec!["0".into()],
            ..RecordHeaders::default()
        };
        match v.get("seq") {
            Some(seq) => h.seal = vec![seq.to_string()],
            None => h.input_offset = vec![v["input"]["offset"].to_string()],
        }
        h
    }

    /// [`trail`] as a worker writes it to a topic: each record with its headers.
    fn topic_trail() -> Vec<(Vec<u8>, RecordHeaders)> {
        trail(10, 4, None)
            .into_iter()
            .map(|r| {
                let h = worker_headers(&r);
                (r, h)
            })
            .collect()
    }

    fn check_topic(records: &[(Vec<u8>, RecordHeaders)]) -> Report {
        let mut v = AuditVerifier::new(Options::default());
        let s = v.stream("answers.audit/0");
        for (i, (r, h)) in records.iter().enumerate() {
            let at = Location {
                stream: s,
                pos: i as u64,
            };
            v.record_from_topic(at, r, h);
        }
        v.finish()
    }

    #[test]
    fn headers_that_disagree_with_the_body_are_reported() {
        let t = topic_trail();
        let r = check_topic(&t);
        assert!(r.ok(), "{:?}", r.problems);
        // Input headers are not required: a row without them says nothing.
        let mut bare = t.clone();
        bare[0].1 = RecordHeaders::default();
        assert!(check_topic(&bare).ok());
        let again = |h: RecordHeaders| (row(2, "h2", 777), h);
        let sealed_row = worker_headers(&row(2, "h2", 777));
        let cases: Vec<(&str, (Vec<u8>, RecordHeaders))> = vec![
            (
                "a row carrying a seal header",
                again(RecordHeaders {
                    seal: vec!["9".into()],
                    ..sealed_row.clone()
                }),
            ),
            (
                "a row naming another input offset",
                again(RecordHeaders {
                    input_offset: vec!["7".into()],
                    ..sealed_row.clone()
                }),
            ),
            (
                "a row naming its offset, then another",
                again(RecordHeaders {
                    input_offset: vec!["2".into(), "7".into()],
                    ..sealed_row.clone()
                }),
            ),
            (
                "a row naming another input partition",
                again(RecordHeaders {
                    input_partition: vec!["1".into()],
                    ..sealed_row.clone()
                }),
            ),
        ];
        for (what, extra) in cases {
            let mut tampered = t.clone();
            tampered.push(extra);
            let r = check_topic(&tampered);
            assert_eq!(kinds(&r), vec![ProblemKind::HeaderMismatch], "{what}");
            assert_eq!(r.problems[0].offsets, Some((2, 2)), "{what}");
        }
        // A seal without its seal header, and one with another number.
        let seal_at = t.iter().position(|(r, _)| is_seal(r)).unwrap();
        for seal in [vec![], vec!["5".to_string()]] {
            let mut tampered = t.clone();
            tampered[seal_at].1.seal = seal;
            let r = check_topic(&tampered);
            assert_eq!(kinds(&r), vec![ProblemKind::HeaderMismatch]);
            assert_eq!(r.problems[0].seal_seq, Some(0));
        }
    }

    #[test]
    fn a_topic_of_framed_records_verifies_as_its_plain_twin() {
        let t = topic_trail();
        let plain = check_topic(&t);
        assert!(plain.ok(), "{:?}", plain.problems);
        // Every record framed, or only some (a topic whose writers began
        // framing midway): the seals hashed the JSON text, so both verify.
        let framed: Vec<(Vec<u8>, RecordHeaders)> = t
            .iter()
            .map(|(r, h)| (crate::core::wire::framed(103, r), h.clone()))
            .collect();
        let mixed: Vec<(Vec<u8>, RecordHeaders)> = t
            .iter()
            .zip(&framed)
            .enumerate()
            .map(|(i, (p, f))| if i % 2 == 0 { p.clone() } else { f.clone() })
            .collect();
        for trail in [&framed, &mixed] {
            let r = check_topic(trail);
            assert!(r.ok(), "{:?}", r.problems);
            assert_eq!(
                (r.records, r.chains[0].rows, r.chains[0].sealed_rows),
                (
                    plain.records,
                    plain.chains[0].rows,
                    plain.chains[0].sealed_rows
                )
            );
        }
        // A framed row is still held to its seal: altered behind its
        // header, it is reported as any altered row.
        let mut altered = framed.clone();
        let at = altered.iter().position(|(r, _)| !is_seal(&r[5..])).unwrap();
        let text = String::from_utf8(altered[at].0[5..].to_vec()).unwrap();
        altered[at].0 = crate::core::wire::framed(103, text.replace("\"h0\"", "\"hX\"").as_bytes());
        assert!(!check_topic(&altered).ok());
    }

    #[test]
    fn an_export_of_a_framed_topic_verifies_as_a_file() {
        let t = trail(10, 4, None);
        let plain = check(&t, Options::default());
        assert!(plain.ok(), "{:?}", plain.problems);
        let framed: Vec<Vec<u8>> = t
            .iter()
            .map(|r| crate::core::wire::framed(103, r))
            .collect();
        let r = check(&framed, Options::default());
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(
            (r.records, r.chains[0].sealed_rows),
            (plain.records, plain.chains[0].sealed_rows)
        );
        let mut cut = framed;
        cut.push(vec![0, 0, 0]);
        let r = check(&cut, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::Unreadable]);
        assert!(
            r.problems[0]
                .detail
                .starts_with("the line starts with byte 0x00")
        );
    }

    #[test]
    fn a_value_cut_inside_its_schema_registry_header_is_unreadable() {
        let mut t = topic_trail();
        t.push((vec![0, 0, 0], RecordHeaders::default()));
        let r = check_topic(&t);
        assert_eq!(kinds(&r), vec![ProblemKind::Unreadable]);
        assert_eq!(r.records, t.len() as u64, "{r:?}");
        let p = &r.problems[0];
        assert!(
            p.detail.contains("starts with byte 0x00") && p.detail.contains("3 bytes long"),
            "{}",
            p.detail
        );
        assert_eq!(p.at.map(|a| a.pos), Some(t.len() as u64 - 1));
    }

    #[test]
    fn nothing_to_verify_is_not_a_pass() {
        let r = check(&[], Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::NothingToVerify]);
        let beyond = Options {
            from: Some(100),
            ..Options::default()
        };
        let r = check(&trail(10, 4, None), beyond.clone());
        assert_eq!(kinds(&r), vec![ProblemKind::NothingToVerify]);
        // A range named in full is owed rows: each offset is a gap.
        let r = check(
            &trail(10, 4, None),
            Options {
                to: Some(200),
                ..beyond
            },
        );
        assert_eq!(kinds(&r), vec![ProblemKind::Gap]);
    }

    /// An empty trail passes with `allow_empty` only against the input
    /// topic, and only when the topic owes no row: one input record in
    /// range is a gap, a committed chain head a missing head.
    #[test]
    fn an_empty_trail_passes_only_when_allowed_and_nothing_is_owed() {
        let quiet = Options {
            input_topic: Some("answers".into()),
            allow_empty: true,
            anchors: [(answers(0), Anchor::default())].into(),
            ..Options::default()
        };
        assert!(check(&[], quiet.clone()).ok());
        let strict = Options {
            allow_empty: false,
            ..quiet.clone()
        };
        assert_eq!(
            kinds(&check(&[], strict)),
            vec![ProblemKind::NothingToVerify]
        );
        let no_input = Options {
            input_topic: None,
            anchors: BTreeMap::new(),
            ..quiet.clone()
        };
        assert_eq!(
            kinds(&check(&[], no_input)),
            vec![ProblemKind::NothingToVerify]
        );
        let one_record = Options {
            anchors: [(
                answers(0),
                Anchor {
                    cover: Some((0, 0)),
                    end: Some(1),
                    ..Anchor::default()
                },
            )]
            .into(),
            ..quiet.clone()
        };
        assert_eq!(kinds(&check(&[], one_record)), vec![ProblemKind::Gap]);
        let mut head_committed = anchored(None, 10, head_of(10, 4));
        head_committed.input_topic = Some("answers".into());
        head_committed.allow_empty = true;
        assert_eq!(
            kinds(&check(&[], head_committed)),
            vec![ProblemKind::HeadMissing]
        );
    }

    #[test]
    fn a_committed_offset_without_a_readable_head_is_reported() {
        let mut opts = anchored(Some((0, 9)), 10, head_of(10, 4));
        let a = opts.anchors.get_mut(&answers(0)).unwrap();
        a.head = None;
        a.head_unreadable = Some("not_utf8");
        let r = check(&trail(10, 4, None), opts);
        assert_eq!(kinds(&r), vec![ProblemKind::HeadUnreadable]);
        assert!(
            r.problems[0].detail.contains("not_utf8"),
            "{:?}",
            r.problems
        );
        assert_eq!(r.problems[0].offsets, Some((10, 10)));
    }

    fn chain0() -> ChainId {
        ChainId {
            topic: "answers".into(),
            partition: 0,
        }
    }

    /// Feeds rows for `offsets` to `sealer` (row `ts` = `ts0 + offset`), as a
    /// worker writes them, sealing every time a seal is due and at the end
    /// when `seal_at_end`.
    fn work(
        sealer: &mut Sealer,
        offsets: std::ops::Range<i64>,
        ts0: i64,
        seal_at_end: bool,
    ) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for o in offsets {
            let r = row(o, &format!("h{o}"), ts0 + o);
            let due = sealer.push(o, &r);
            out.push(r);
            if due {
                out.extend(sealer.seal(ts0 + 1_000 + o));
            }
        }
        if seal_at_end {
            out.extend(sealer.seal(ts0 + 9_999));
        }
        out
    }

    /// A signing key and options requiring its signature.
    fn key_and_options() -> (SigningKey, Options) {
        let key = SigningKey::from_bytes(&[1; 32]);
        let opts = Options {
            keys: ring(&[&key]),
            ..Options::default()
        };
        (key, opts)
    }

    /// A sealer of chain 0 (every 4 rows, unsigned) starting at seal
    /// `next_seq` with `prev` as the previous seal's hash.
    fn sealer_at(worker: &str, next_seq: u64, prev: [u8; 32]) -> Sealer {
        Sealer::new(chain0(), worker, 4, ChainHead { next_seq, prev }, None)
    }

    /// A crash between seals and commit: worker 1 (key `keys[0]`) processes
    /// offsets `0..crash`, sealing every `every` rows, but only the head after
    /// its rows `0..committed` was committed; worker 2 (key `keys[1]`)
    /// resumes from that head and processes `committed..end` again (other
    /// `ts`, so other row bytes), sealing at the end when `seal_at_end`.
    fn replaced(
        every: usize,
        [committed, crash, end]: [i64; 3],
        [key1, key2]: [Option<SigningKey>; 2],
        seal_at_end: bool,
    ) -> Vec<Vec<u8>> {
        let mut w1 = Sealer::new(chain0(), "w1", every, ChainHead::START, key1);
        let mut t = work(&mut w1, 0..committed, 0, false);
        let committed_head = w1.head();
        t.extend(work(&mut w1, committed..crash, 0, false));
        let mut w2 = Sealer::new(chain0(), "w2", every, committed_head, key2);
        t.extend(work(&mut w2, committed..end, 500, seal_at_end));
        t
    }

    /// Worker 1 seals 0..=3 (seal 0) and 4..=7 (seal 1) and dies before
    /// committing past offset 3; worker 2 seals 4..=7 again (seal 1) and
    /// 8..=9 (seal 2).
    fn resealed(key1: Option<SigningKey>, key2: Option<SigningKey>) -> Vec<Vec<u8>> {
        replaced(4, [4, 8, 10], [key1, key2], true)
    }

    fn seals_of(t: &[Vec<u8>]) -> Vec<Map<String, Value>> {
        t.iter()
            .filter(|r| is_seal(r))
            .map(|r| serde_json::from_slice(r).unwrap())
            .collect()
    }

    #[test]
    fn a_reseal_after_a_crash_between_seal_and_commit_verifies() {
        let t = resealed(None, None);
        let seals = seals_of(&t);
        assert_eq!(
            seals
                .iter()
                .map(|s| s["seq"].as_u64().unwrap())
                .collect::<Vec<_>>(),
            vec![0, 1, 1, 2],
            "two seals 1 with the same prev"
        );
        assert_eq!(seals[1]["prev"], seals[2]["prev"]);
        let r = check(&t, Options::default());
        assert!(r.ok(), "{:?}", r.problems);
        let c = &r.chains[0];
        assert_eq!((c.seals, c.reseals, c.redeliveries), (4, 1, 4));
        assert_eq!((c.rows, c.sealed_rows, c.unsealed_tail), (14, 14, 0));
        // The head is the last seal, which continues from worker 2's seal 1.
        let last = seals.last().unwrap();
        assert_eq!(
            c.head_seal.as_deref(),
            Some(hex::encode(Sha256::digest(unsigned_bytes(last))).as_str())
        );
        assert_eq!(
            last["prev"],
            hex::encode(Sha256::digest(unsigned_bytes(&seals[2])))
        );
    }

    #[test]
    fn a_fork_over_several_seals_verifies_and_counts_each_reseal() {
        // Worker 1 seals 0, 1 and 2 but only the head after seal 0 was
        // committed: worker 2 seals 1 and 2 again, then 3.
        let t = replaced(2, [2, 6, 8], [None, None], false);
        let r = check(&t, Options::default());
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!((r.chains[0].seals, r.chains[0].reseals), (6, 2));
        assert_eq!(r.chains[0].redeliveries, 4);
    }

    #[test]
    fn without_a_next_seal_the_head_is_the_reseal_read_last() {
        let t = replaced(4, [4, 8, 8], [None, None], false);
        let r = check(&t, Options::default());
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(r.chains[0].reseals, 1);
        let last = seals_of(&t).pop().unwrap();
        assert_eq!(last["worker"], "w2");
        assert_eq!(
            r.chains[0].head_seal,
            Some(hex::encode(Sha256::digest(unsigned_bytes(&last))))
        );
    }

    /// A worker chain of chain 0 with one seal of two rows per entry of
    /// `signers`, each signed by that key: a key rotation as the workers
    /// roll, each seal continuing from the one before.
    fn signed_by(signers: &[&SigningKey]) -> Vec<Vec<u8>> {
        let mut head = ChainHead::START;
        let mut t = Vec::new();
        for (i, key) in signers.iter().enumerate() {
            let mut w = Sealer::new(chain0(), "w", 2, head, Some((*key).clone()));
            let o = 2 * i as i64;
            t.extend(work(&mut w, o..o + 2, 1_000_000_000 * i as i64, false));
            head = w.head();
        }
        t
    }

    fn signed(opts: &Options, keys: &[&SigningKey]) -> Options {
        Options {
            keys: ring(keys),
            ..opts.clone()
        }
    }

    /// (seals, first seq, last seq) of each key of the report.
    fn tallies(r: &Report) -> Vec<(u64, Option<u64>, Option<u64>)> {
        r.keys
            .iter()
            .map(|k| {
                let seq = |s: &Option<SealRef>| s.as_ref().map(|s| s.seq);
                (k.seals, seq(&k.first), seq(&k.last))
            })
            .collect()
    }

    #[test]
    fn a_chain_signed_by_two_keys_verifies_with_both_and_says_what_each_signed() {
        let (a, b, c) = (
            SigningKey::from_bytes(&[1; 32]),
            SigningKey::from_bytes(&[2; 32]),
            SigningKey::from_bytes(&[3; 32]),
        );
        let t = signed_by(&[&a, &a, &b, &b]);
        let none = Options::default();
        // One key alone: the other's seals are findings, as they always were.
        let r = check(&t, signed(&none, &[&a]));
        assert_eq!(kinds(&r), vec![ProblemKind::SealSignature; 2]);
        let seals: Vec<Option<u64>> = r.problems.iter().map(|p| p.seal_seq).collect();
        assert_eq!(seals, [Some(2), Some(3)]);
        assert_eq!(tallies(&r), [(2, Some(0), Some(1))]);
        let r = check(&t, signed(&none, &[&b]));
        assert_eq!(kinds(&r), vec![ProblemKind::SealSignature; 2]);
        let two = "signature verifies with none of the 2 public keys given";
        let r = check(&t, signed(&none, &[&c, &a]));
        assert_eq!(r.problems[0].detail, two);

        // The keyring: every seal verifies, and each key's seals are told.
        let r = check(&t, signed(&none, &[&a, &b, &c]));
        assert!(r.ok(), "{:?}", r.problems);
        assert!(r.signatures_checked);
        assert_eq!(
            tallies(&r),
            [
                (2, Some(0), Some(1)),
                (2, Some(2), Some(3)),
                (0, None, None)
            ]
        );
        assert!(r.keys.iter().all(|k| k.signed_again.is_empty()));
        let ring = ring(&[&a, &b, &c]);
        let names: Vec<(&str, &str, usize)> = r
            .keys
            .iter()
            .map(|k| (k.fingerprint.as_str(), k.file.as_str(), k.block))
            .collect();
        assert_eq!(
            names,
            ring.iter()
                .map(|k| (k.fingerprint.as_str(), "ring.pem", k.block))
                .collect::<Vec<_>>()
        );
        // The first and last seal by the time they state: seal 2 was made
        // 2 s after the epoch (plus its rows' offsets).
        let first_b = r.keys[1].first.clone().unwrap();
        assert_eq!(
            (first_b.topic.as_str(), first_b.partition, first_b.ts),
            ("answers", 0, Some(2_000_001_005))
        );
        assert_eq!(first_b.time.as_deref(), Some("1970-01-01T00:00:02.000Z"));
        assert_eq!(first_b.at.pos, 9, "the ninth record read");
        // Without keys, nothing is said of keys.
        let r = check(&t, none);
        assert!(r.ok() && r.keys.is_empty() && !r.signatures_checked);
    }

    #[test]
    fn a_copy_of_a_seal_is_counted_once_for_its_key() {
        let a = SigningKey::from_bytes(&[1; 32]);
        let mut t = signed_by(&[&a, &a]);
        let seal = t.iter().find(|r| is_seal(r)).unwrap().clone();
        t.push(seal);
        let r = check(&t, signed(&Options::default(), &[&a]));
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(tallies(&r), [(2, Some(0), Some(1))]);
    }

    /// `A, B, A` in one chain: an older key signs again after a newer one.
    /// A rolling restart or a rollback does it, and so does a retired key
    /// still in use: reported with its seal, not failed.
    #[test]
    fn an_older_key_signing_again_after_a_newer_one_is_reported_not_failed() {
        let (a, b) = (
            SigningKey::from_bytes(&[1; 32]),
            SigningKey::from_bytes(&[2; 32]),
        );
        let opts = signed(&Options::default(), &[&a, &b]);
        let r = check(&signed_by(&[&a, &b, &a, &b, &b, &a]), opts.clone());
        assert!(r.ok(), "{:?}", r.problems);
        let again: Vec<(u64, &str)> = r.keys[0]
            .signed_again
            .iter()
            .map(|x| (x.seal.seq, x.after.as_str()))
            .collect();
        let fp_b = r.keys[1].fingerprint.as_str();
        assert_eq!(again, [(2, fp_b), (5, fp_b)]);
        // B is the newer key: its signing after A is no return.
        assert!(r.keys[1].signed_again.is_empty());
        assert_eq!(tallies(&r), [(3, Some(0), Some(5)), (3, Some(1), Some(4))]);

        // Old to new only, in any number of chains: nothing to say.
        for signers in [vec![&a, &a, &b], vec![&b, &b], vec![&a]] {
            let r = check(&signed_by(&signers), opts.clone());
            assert!(r.ok(), "{:?}", r.problems);
            assert!(r.keys.iter().all(|k| k.signed_again.is_empty()));
        }
        // B alone in one chain, A in another: each chain on its own.
        let mut two = signed_by(&[&b, &b]);
        let mut w = Sealer::new(answers(1), "w", 2, ChainHead::START, Some(a.clone()));
        for o in 0..4 {
            let r = format!(
                r#"{{"answer_hash":"p1-{o}","input":{{"offset":{o},"partition":1,"topic":"answers"}},"ts":{o}}}"#
            )
            .into_bytes();
            let due = w.push(o, &r);
            two.push(r);
            if due {
                two.extend(w.seal(9));
            }
        }
        let r = check(&two, opts);
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(tallies(&r), [(2, Some(0), Some(1)), (2, Some(0), Some(1))]);
        assert!(r.keys.iter().all(|k| k.signed_again.is_empty()));
    }

    #[test]
    fn a_signed_reseal_verifies_and_an_unsigned_one_does_not() {
        let (key, opts) = key_and_options();
        let r = check(
            &resealed(Some(key.clone()), Some(key.clone())),
            opts.clone(),
        );
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(r.chains[0].reseals, 1);
        // The replacement worker had no key: its seals 1 and 2 are rejected.
        let r = check(&resealed(Some(key), None), opts);
        assert_eq!(kinds(&r), vec![ProblemKind::SealSignature; 2]);
        assert!(r.problems.iter().all(|p| p.at.is_some()));
    }

    #[test]
    fn a_forged_fork_seal_naming_another_prev_is_broken() {
        let mut t = trail(10, 4, None);
        // Someone without the chain's history re-writes rows 4..=7 and adds
        // a seal 1 over them with a made-up previous hash.
        let mut forger = sealer_at("forger", 1, [9; 32]);
        t.extend(work(&mut forger, 4..8, 500, false));
        let r = check(&t, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::SealBroken]);
        assert_eq!(r.problems[0].seal_seq, Some(1));
        assert_eq!(r.location(r.problems[0].at.unwrap()), "audit.jsonl:18");
        assert_eq!(r.chains[0].reseals, 0, "a broken seal is no reseal");
    }

    #[test]
    fn a_fork_seal_whose_rows_are_missing_is_a_problem() {
        let mut w1 = Sealer::new(chain0(), "w1", 4, ChainHead::START, None);
        let mut t = work(&mut w1, 0..10, 0, true);
        // A second seal 1 from the right head, over rows nobody wrote; the
        // real seal 2 names the real seal 1.
        let seal0 = seals_of(&t).remove(0);
        let mut fork = sealer_at("w2", 1, Sha256::digest(unsigned_bytes(&seal0)).into());
        fork.push(5, &row(5, "h5", 777));
        t.extend(fork.seal(2));
        let r = check(&t, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::RowMissing]);
        assert_eq!(r.problems[0].offsets, Some((5, 5)));
        assert_eq!(r.problems[0].seal_seq, Some(1));
        assert!(
            r.problems[0].detail.contains("superseded"),
            "seal 2 names the other seal 1: {}",
            r.problems[0].detail
        );
        // And with the rows it lists present, the same fork is a reseal.
        t.push(row(5, "h5", 777));
        let r = check(&t, Options::default());
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!((r.chains[0].reseals, r.chains[0].redeliveries), (1, 1));
    }

    #[test]
    fn a_seal_0_not_starting_from_genesis_is_broken() {
        let mut s = sealer_at("w1", 0, [3; 32]);
        let r = check(&work(&mut s, 0..4, 0, true), Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::SealBroken]);
        assert_eq!(r.problems[0].seal_seq, Some(0));
    }

    #[test]
    fn a_duplicated_seal_record_is_one_seal() {
        let mut t = trail(6, 4, None);
        let seal = t.iter().find(|r| is_seal(r)).unwrap().clone();
        t.push(seal);
        let r = check(&t, Options::default());
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(r.chains[0].reseals, 0);
    }

    /// Spreads a trail over `n` streams as a worker's producer does: rows by
    /// request (here round-robin), seals all in one stream; returns the
    /// records of each stream in order.
    fn spread(t: &[Vec<u8>], n: usize, seal_stream: usize) -> Vec<Vec<Vec<u8>>> {
        let mut streams = vec![Vec::new(); n];
        let mut next = 0;
        for r in t {
            if is_seal(r) {
                streams[seal_stream].push(r.clone());
            } else {
                streams[next % n].push(r.clone());
                next += 1;
            }
        }
        streams
    }

    /// Reads `streams` one after the other, in the order given.
    fn check_streams(streams: &[Vec<Vec<u8>>], order: &[usize]) -> Report {
        let mut v = AuditVerifier::new(Options::default());
        let ids: Vec<u32> = (0..streams.len())
            .map(|i| v.stream(format!("answers.audit/{i}")))
            .collect();
        for &i in order {
            for (pos, r) in streams[i].iter().enumerate() {
                v.record(
                    Location {
                        stream: ids[i],
                        pos: pos as u64,
                    },
                    r,
                );
            }
        }
        v.finish()
    }

    #[test]
    fn a_chain_spread_over_several_audit_partitions_verifies() {
        let t = resealed(None, None);
        let streams = spread(&t, 3, 1);
        // Seals first, then the rows, the last rows first: read order across
        // streams says nothing.
        let r = check_streams(&streams, &[1, 2, 0]);
        assert!(r.ok(), "{:?}", r.problems);
        let c = &r.chains[0];
        assert_eq!(
            (c.rows, c.sealed_rows, c.reseals, c.redeliveries),
            (14, 14, 1, 4)
        );
        // Within one stream the sealed order still holds.
        let mut swapped = streams.clone();
        swapped[0].swap(0, 1);
        let r = check_streams(&swapped, &[0, 1, 2]);
        assert_eq!(kinds(&r), vec![ProblemKind::RowOutOfOrder]);
        assert_eq!(r.location(r.problems[0].at.unwrap()), "answers.audit/0:0");
    }

    #[test]
    fn from_and_to_verify_a_slice() {
        let slice = Options {
            from: Some(4),
            to: Some(7),
            ..Options::default()
        };
        let t = trail(10, 4, None);
        let r = check(&t, slice.clone());
        assert!(r.ok(), "{:?}", r.problems);
        let c = &r.chains[0];
        assert_eq!((c.rows, c.sealed_rows), (4, 4));
        assert_eq!((c.first_offset, c.last_offset), (Some(4), Some(7)));
        // A row outside the slice is not judged; one inside is.
        let without = |offset: i64| -> Vec<Vec<u8>> {
            let needle = format!("\"offset\":{offset},");
            t.iter()
                .filter(|r| is_seal(r) || !String::from_utf8_lossy(r).contains(&needle))
                .cloned()
                .collect()
        };
        assert!(check(&without(2), slice.clone()).ok());
        let r = check(&without(5), slice);
        assert_eq!(kinds(&r), vec![ProblemKind::RowMissing, ProblemKind::Gap]);
        assert!(r.problems.iter().all(|p| p.offsets == Some((5, 5))));
    }

    #[test]
    fn garbage_lines_are_unreadable_not_a_panic() {
        let mut t = trail(3, 4, None);
        t.push(b"{not json".to_vec());
        t.push(b"[1,2]".to_vec());
        t.push(b"{\"type\":\"groundgate.seal/v1\"}".to_vec());
        let r = check(&t, Options::default());
        assert_eq!(
            kinds(&r),
            vec![
                ProblemKind::Unreadable,
                ProblemKind::Unreadable,
                ProblemKind::SealMalformed
            ]
        );
    }

    /// A trail of rows `1..=n` (with an `outcome`, `ts` from `ts0`) as
    /// `worker` seals them: a full seal written before the next row, and
    /// for `check` a final seal over the last rows.
    fn trail_of(
        worker: &str,
        n: i64,
        every: usize,
        key: Option<SigningKey>,
        ts0: i64,
    ) -> Vec<Vec<u8>> {
        let mut s = Sealer::new(chain0(), worker, every, ChainHead::START, key);
        let mut out = Vec::new();
        for o in 1..=n {
            if s.due() {
                out.extend(s.seal(ts0 + 1_000 + o));
            }
            let r = row_with(o, "accepted", ts0 + o);
            s.push(o, &r);
            out.push(r);
        }
        if worker == CHECK_WORKER {
            out.extend(s.seal_final(ts0 + 9_999, 1));
        } else {
            out.extend(s.seal(ts0 + 9_999));
        }
        out
    }

    fn check_trail(n: i64, every: usize, key: Option<SigningKey>) -> Vec<Vec<u8>> {
        trail_of(CHECK_WORKER, n, every, key, 100)
    }

    #[test]
    fn a_check_trail_cut_off_after_a_seal_is_missing_its_final_seal() {
        let (key, signed) = key_and_options();
        let t = check_trail(10, 4, Some(key.clone()));
        assert_eq!(seals_of(&t).len(), 3);
        assert!(seals_of(&t).iter().all(|s| s["worker"] == CHECK_WORKER));
        let r = check(&t, signed.clone());
        assert!(r.ok(), "{:?}", r.problems);
        // Cut after the second seal (row 8): a consistent, signed chain,
        // but not a finished one.
        let second = t
            .iter()
            .enumerate()
            .filter(|(_, r)| is_seal(r))
            .nth(1)
            .unwrap()
            .0;
        let cut = &t[..=second];
        let r = check(cut, signed.clone());
        assert_eq!(kinds(&r), vec![ProblemKind::FinalSealMissing]);
        assert_eq!(r.problems[0].seal_seq, Some(1));
        assert_eq!(r.problems[0].offsets, Some((5, 8)));
        assert_eq!(r.location(r.problems[0].at.unwrap()), "audit.jsonl:10");
        // A worker's chain needs none: its end is the group's to vouch for.
        let mut w = Sealer::new(chain0(), "w1", 4, ChainHead::START, Some(key));
        let r = check(&work(&mut w, 1..9, 0, false), signed);
        assert!(r.ok(), "{:?}", r.problems);
    }

    /// `check` writes each seal right after the rows it lists: a seal moved
    /// before its rows, or after the next seal's rows, puts rows across a
    /// seal, which its chain's order does not allow.
    #[test]
    fn a_check_trail_s_seal_moved_across_rows_puts_them_out_of_order() {
        let t = check_trail(10, 4, None);
        let (seals, rows): (Vec<_>, Vec<_>) = t.iter().cloned().partition(|r| is_seal(r));
        assert_eq!((seals.len(), rows.len()), (3, 10));
        let r = check(&t, Options::default());
        assert!(r.ok(), "{:?}", r.problems);
        // Every seal first, then every row: each row the seals list.
        let front: Vec<_> = seals.iter().chain(&rows).cloned().collect();
        let r = check(&front, Options::default());
        assert!(!r.ok());
        assert!(
            r.problems
                .iter()
                .all(|p| p.kind == ProblemKind::RowOutOfOrder),
            "{:?}",
            r.problems
        );
        let moved: Vec<_> = r.problems.iter().map(|p| (p.seal_seq, p.offsets)).collect();
        assert_eq!(
            moved,
            [
                (Some(0), Some((1, 4))),
                (Some(1), Some((5, 8))),
                (Some(2), Some((9, 10)))
            ]
        );
        assert_eq!(
            r.problems[0].detail,
            "4 row(s) stand after seal 0, which lists them"
        );
        // Seal 0 moved past the rows of seal 1: those stand before it.
        let mut late = t.clone();
        let first = late.iter().position(|r| is_seal(r)).unwrap();
        let s0 = late.remove(first);
        let second = late.iter().position(|r| is_seal(r)).unwrap();
        late.insert(second, s0);
        let r = check(&late, Options::default());
        assert_eq!(
            kinds(&r),
            vec![ProblemKind::RowOutOfOrder],
            "{:?}",
            r.problems
        );
        assert_eq!(r.problems[0].offsets, Some((5, 8)));
        assert_eq!(
            r.problems[0].detail,
            "4 row(s) listed by seal 1 stand before seal 0, the seal before it"
        );
        // A worker's seal may list a row that landed after it: not held so.
        let mut w = Sealer::new(chain0(), "w1", 4, ChainHead::START, None);
        let honest = work(&mut w, 1..9, 0, true);
        let (ws, wr): (Vec<_>, Vec<_>) = honest.iter().cloned().partition(|r| is_seal(r));
        let front: Vec<_> = ws.iter().chain(&wr).cloned().collect();
        assert!(!kinds(&check(&front, Options::default())).contains(&ProblemKind::RowOutOfOrder));
    }

    #[test]
    fn a_seal_after_a_final_seal_is_broken() {
        let mut s = Sealer::new(chain0(), CHECK_WORKER, 4, ChainHead::START, None);
        let mut t = Vec::new();
        for o in 1..=3 {
            let r = row_with(o, "accepted", o);
            s.push(o, &r);
            t.push(r);
        }
        t.extend(s.seal_final(10, 1));
        let r = row_with(4, "accepted", 4);
        s.push(4, &r);
        t.push(r);
        t.extend(s.seal_final(11, 1));
        let r = check(&t, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::SealBroken]);
        assert_eq!(r.problems[0].seal_seq, Some(0));
        assert!(r.problems[0].detail.contains("final"), "{:?}", r.problems);
    }

    #[test]
    fn nothing_follows_a_check_chains_final_seal_not_even_a_live_tail() {
        let (key, signed) = key_and_options();
        // Live-tail options: without a key; with one, the row above the
        // group's committed offset.
        let unsigned_live = Options {
            allow_unsealed_tail: true,
            ..Options::default()
        };
        let signed_live = Options {
            allow_unsealed_tail: true,
            anchors: [(
                chain0(),
                Anchor {
                    committed: Some(7),
                    ..Anchor::default()
                },
            )]
            .into(),
            ..signed
        };
        for (opts, key) in [(unsigned_live, None), (signed_live, Some(key))] {
            let label = if key.is_some() { "signed" } else { "unsigned" };
            let mut t = trail_of(CHECK_WORKER, 6, 4, key.clone(), 100);
            assert!(seals_of(&t).last().unwrap()["final"] == true);
            t.push(row_with(7, "accepted", 107));
            let r = check(&t, opts.clone());
            assert_eq!(kinds(&r), vec![ProblemKind::UnsealedTail], "{label}");
            assert_eq!(r.problems[0].offsets, Some((7, 7)), "{label}");
            assert!(
                r.problems[0].detail.contains("final seal"),
                "{label}: {}",
                r.problems[0].detail
            );
            // A worker's chain is never finished: the same row is its live
            // tail.
            let mut t = trail_of("w1", 6, 4, key, 100);
            t.push(row_with(7, "accepted", 107));
            let r = check(&t, opts);
            assert!(r.ok(), "{label}: {:?}", r.problems);
            assert_eq!(r.chains[0].unsealed_tail, 1, "{label}");
        }
    }

    #[test]
    fn a_row_that_is_not_compact_json_is_never_a_redelivery() {
        let t = check_trail(6, 4, None);
        let sealed = String::from_utf8(t[2].clone()).unwrap();
        assert!(sealed.contains("\"offset\":3,"), "{sealed}");
        // A repeated key (serde_json keeps the last value, so this parses
        // to the sealed row with another ts), whitespace.
        let repeated = sealed
            .replacen('{', "{\"outcome\":\"rejected\",", 1)
            .replace("\"ts\":103", "\"ts\":555");
        let spaced = sealed.replace("\"ts\":103", "\"ts\": 777");
        // Keys in another order: compact, but not the sealed row's bytes.
        let reordered = r#"{"outcome":"accepted","answer_hash":"h3","input":{"offset":3,"partition":0,"topic":"answers"},"ts":103}"#.to_string();
        for (bad, kind) in [
            (repeated, ProblemKind::NotCanonical),
            (spaced, ProblemKind::NotCanonical),
            (reordered, ProblemKind::Conflict),
        ] {
            let worker_trail = trail_of("w1", 6, 4, None, 100);
            for (mut trail, base) in [(t.clone(), "check"), (worker_trail, "worker")] {
                trail.push(bad.clone().into_bytes());
                let r = check(&trail, Options::default());
                assert_eq!(kinds(&r), vec![kind], "{base}: {bad}");
                assert_eq!(r.problems[0].offsets, Some((3, 3)));
                assert_eq!(r.chains[0].redeliveries, 0);
            }
        }
        // Rows carry floats; they re-encode to their own bytes.
        let scored = br#"{"answer_hash":"x","cost_usd":0.0017641654082022119,"grounding":{"score":0.22981246145434542},"input":{"offset":7,"partition":0,"topic":"answers"},"ts":1}"#;
        let r = check(&[scored.to_vec()], Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::UnsealedTail]);
        // A seal that is not compact is reported too.
        let mut t = check_trail(3, 4, None);
        let last = t.len() - 1;
        t[last] = String::from_utf8(t[last].clone())
            .unwrap()
            .replacen('{', "{ ", 1)
            .into_bytes();
        let r = check(&t, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::NotCanonical]);
        assert_eq!(r.problems[0].seal_seq, Some(0));
    }

    #[test]
    fn a_check_chain_holds_each_row_and_seal_once() {
        let t = check_trail(6, 4, None);
        let row3 = t[2].clone();
        // A byte-identical copy of a row.
        let mut copied = t.clone();
        copied.push(row3.clone());
        let r = check(&copied, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::Duplicate]);
        assert_eq!(r.problems[0].offsets, Some((3, 3)));
        assert_eq!(r.location(r.problems[0].at.unwrap()), "audit.jsonl:9");
        // The same row with another ts: what a worker's redelivery is.
        let mut again = t.clone();
        again.push(row_with(3, "accepted", 12_345));
        let r = check(&again, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::Duplicate]);
        assert_eq!(r.chains[0].redeliveries, 0);
        // A copy of a seal.
        let mut twice = t.clone();
        let seal = t.iter().find(|r| is_seal(r)).unwrap().clone();
        twice.push(seal);
        let r = check(&twice, Options::default());
        assert_eq!(kinds(&r), vec![ProblemKind::Duplicate]);
        assert_eq!(r.problems[0].seal_seq, Some(0));
        assert_eq!(r.location(r.problems[0].at.unwrap()), "audit.jsonl:9");
        // The whole trail twice (`check` run twice into one file): every
        // seal and every row is there twice.
        let mut rerun = t.clone();
        rerun.extend(trail_of(CHECK_WORKER, 6, 4, None, 500));
        let r = check(&rerun, Options::default());
        assert_eq!(
            kinds(&r),
            vec![
                ProblemKind::Duplicate,
                ProblemKind::Duplicate,
                ProblemKind::Duplicate
            ],
            "{:?}",
            r.problems
        );
        assert_eq!(r.problems[2].offsets, Some((1, 6)));
        assert_eq!((r.chains[0].reseals, r.chains[0].redeliveries), (0, 0));
    }

    const RUN_A: &str = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a";
    const RUN_B: &str = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b";

    /// The row `check` writes for line `offset` of `input` (`ts` = `ts0` +
    /// offset).
    fn input_row(input: &str, offset: i64, ts0: i64) -> Vec<u8> {
        format!(
            r#"{{"answer_hash":"h{offset}","input":{{"offset":{offset},"partition":0,"topic":"{input}"}},"outcome":"accepted","ts":{}}}"#,
            ts0 + offset
        )
        .into_bytes()
    }

    /// The chain `check` run `run` (`None`: a `check` that named no run)
    /// writes for `input`: rows 1..=`n` sealed every 4 rows, the last one
    /// under the final seal stating `inputs` chains.
    fn run_chain(
        input: &str,
        run: Option<&str>,
        inputs: u64,
        n: i64,
        key: &SigningKey,
        ts0: i64,
    ) -> Vec<Vec<u8>> {
        let chain = ChainId {
            topic: input.into(),
            partition: 0,
        };
        let mut s = Sealer::new(chain, CHECK_WORKER, 4, ChainHead::START, Some(key.clone()));
        if let Some(run) = run {
            s = s.in_run(run);
        }
        let mut out = Vec::new();
        for o in 1..=n {
            if s.due() {
                out.extend(s.seal(ts0 + 1_000 + o));
            }
            let r = input_row(input, o, ts0);
            s.push(o, &r);
            out.push(r);
        }
        out.extend(s.seal_keeping_last(ts0 + 9_998));
        out.extend(s.seal_final(ts0 + 9_999, inputs));
        out
    }

    /// The trail run `run` writes over inputs a.jsonl (6 lines) and b.jsonl
    /// (3 lines), per input.
    fn run_of_two(run: &str, key: &SigningKey, ts0: i64) -> [Vec<Vec<u8>>; 2] {
        [
            run_chain("a.jsonl", Some(run), 2, 6, key, ts0),
            run_chain("b.jsonl", Some(run), 2, 3, key, ts0),
        ]
    }

    fn problem_runs(r: &Report) -> Vec<Option<&str>> {
        r.problems.iter().map(|p| p.run.as_deref()).collect()
    }

    #[test]
    fn a_chain_replaced_by_another_runs_leaves_both_runs_incomplete() {
        let (key, signed) = key_and_options();
        let [a1, b1] = run_of_two(RUN_A, &key, 100);
        let [a2, _] = run_of_two(RUN_B, &key, 500);
        let r = check(&[a1.clone(), b1.clone()].concat(), signed.clone());
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(r.runs.len(), 1);
        assert_eq!(
            (r.runs[0].run.as_str(), r.runs[0].inputs, r.runs[0].chains),
            (RUN_A, Some(2), 2)
        );
        assert!(r.chains.iter().all(|c| c.run.as_deref() == Some(RUN_A)));
        assert!(r.unbound_chains.is_empty());
        // Run B's whole chain of a.jsonl, signed with the same key, in
        // place of run A's: every chain is intact on its own.
        let r = check(&[a2.clone(), b1].concat(), signed.clone());
        assert_eq!(
            kinds(&r),
            vec![ProblemKind::RunIncomplete, ProblemKind::RunIncomplete],
            "{:?}",
            r.problems
        );
        assert_eq!(problem_runs(&r), vec![Some(RUN_A), Some(RUN_B)]);
        assert!(
            r.problems[0].detail.contains("sealed 2 input chain(s)")
                && r.problems[0]
                    .detail
                    .contains("the trail holds 1 of them (b.jsonl/0)"),
            "{}",
            r.problems[0].detail
        );
        assert_eq!(
            r.runs
                .iter()
                .map(|x| (x.run.as_str(), x.inputs, x.chains))
                .collect::<Vec<_>>(),
            vec![(RUN_A, Some(2), 1), (RUN_B, Some(2), 1)]
        );
        // A chain of the run dropped: the run is short of it.
        let r = check(&a1, signed.clone());
        assert_eq!(kinds(&r), vec![ProblemKind::RunIncomplete]);
        // A chain of a run over one input only, added beside a run's.
        let lone = run_chain("b.jsonl", Some(RUN_B), 1, 3, &key, 500);
        let r = check(&[a1, lone].concat(), signed);
        assert_eq!(kinds(&r), vec![ProblemKind::RunIncomplete]);
        assert_eq!(problem_runs(&r), vec![Some(RUN_A)]);
    }

    /// A chain of rows 1..=6 whose seal 0 (rows 1..=4) names `first`, and
    /// whose final seal (rows 5..=6) names `then`, made by a sealer of that
    /// run continuing from seal 0: the chain links and every signature
    /// verifies.
    fn spliced(first: Option<&str>, then: &str, key: &SigningKey) -> Vec<Vec<u8>> {
        let sealer = |head, run: Option<&str>| {
            let s = Sealer::new(chain0(), CHECK_WORKER, 4, head, Some(key.clone()));
            match run {
                Some(run) => s.in_run(run),
                None => s,
            }
        };
        let mut t = Vec::new();
        let mut push = |s: &mut Sealer, o: i64| {
            let r = row_with(o, "accepted", o);
            s.push(o, &r);
            t.push(r);
        };
        let mut a = sealer(ChainHead::START, first);
        (1..=4).for_each(|o| push(&mut a, o));
        let seal0 = a.seal(10);
        let mut b = sealer(a.head(), Some(then));
        (5..=6).for_each(|o| push(&mut b, o));
        t.insert(4, seal0.unwrap());
        t.extend(b.seal_final(11, 1));
        t
    }

    #[test]
    fn seals_of_two_runs_in_one_chain_are_mixed() {
        let (key, signed) = key_and_options();
        let r = check(&spliced(Some(RUN_A), RUN_B, &key), signed.clone());
        assert_eq!(kinds(&r), vec![ProblemKind::RunMixed], "{:?}", r.problems);
        let p = &r.problems[0];
        assert_eq!((p.seal_seq, p.offsets), (Some(0), Some((1, 4))));
        assert_eq!(r.location(p.at.unwrap()), "audit.jsonl:5");
        assert_eq!(p.run.as_deref(), Some(RUN_B));
        assert!(
            p.detail.contains(&format!("name run {RUN_A}")),
            "{}",
            p.detail
        );
        // A seal naming no run, before a run's final seal.
        let r = check(&spliced(None, RUN_B, &key), signed);
        assert_eq!(kinds(&r), vec![ProblemKind::RunMixed], "{:?}", r.problems);
        assert!(
            r.problems[0].detail.contains("name no run"),
            "{}",
            r.problems[0].detail
        );
    }

    #[test]
    fn two_complete_runs_read_together_both_verify() {
        let (key, signed) = key_and_options();
        let [a, b] = run_of_two(RUN_A, &key, 100);
        let c = run_chain("c.jsonl", Some(RUN_B), 1, 5, &key, 500);
        let r = check(&[a, b, c].concat(), signed);
        assert!(r.ok(), "{:?}", r.problems);
        assert_eq!(
            r.runs
                .iter()
                .map(|x| (x.run.as_str(), x.inputs, x.chains))
                .collect::<Vec<_>>(),
            vec![(RUN_A, Some(2), 2), (RUN_B, Some(1), 1)]
        );
    }

    #[test]
    fn final_seals_of_one_run_stating_other_counts_are_an_incomplete_run() {
        let (key, signed) = key_and_options();
        let a = run_chain("a.jsonl", Some(RUN_A), 2, 6, &key, 100);
        let b = run_chain("b.jsonl", Some(RUN_A), 3, 3, &key, 100);
        let r = check(&[a, b].concat(), signed);
        assert_eq!(kinds(&r), vec![ProblemKind::RunIncomplete]);
        assert!(
            r.problems[0]
                .detail
                .contains("state different numbers of chains: 2 (a.jsonl/0), 3 (b.jsonl/0)"),
            "{}",
            r.problems[0].detail
        );
        assert_eq!(r.runs[0].inputs, None);
    }

    #[test]
    fn chains_of_a_check_naming_no_run_verify_unbound_and_cannot_stand_in_for_a_runs() {
        let (key, signed) = key_and_options();
        let a = run_chain("a.jsonl", None, 2, 6, &key, 100);
        let b = run_chain("b.jsonl", None, 2, 3, &key, 100);
        assert!(
            seals_of(&a)
                .iter()
                .all(|s| !s.contains_key("run") && !s.contains_key("run_inputs"))
        );
        let r = check(&[a.clone(), b].concat(), signed.clone());
        assert!(r.ok(), "{:?}", r.problems);
        assert!(r.runs.is_empty());
        assert_eq!(r.unbound_chains, ["a.jsonl/0", "b.jsonl/0"]);
        assert!(r.chains.iter().all(|c| c.run.is_none()));
        // In place of a run's chain, it leaves the run short.
        let [_, b1] = run_of_two(RUN_A, &key, 500);
        let r = check(&[a, b1].concat(), signed);
        assert_eq!(kinds(&r), vec![ProblemKind::RunIncomplete]);
        assert_eq!(r.unbound_chains, ["a.jsonl/0"]);
        // A worker's chain is neither bound nor unbound.
        let r = check(&trail(10, 4, None), Options::default());
        assert!(r.ok() && r.unbound_chains.is_empty() && r.runs.is_empty());
    }

    #[test]
    fn a_run_field_of_another_type_is_a_malformed_seal() {
        let (key, _) = key_and_options();
        let mut t = run_chain("a.jsonl", Some(RUN_A), 1, 3, &key, 100);
        let last = t.len() - 1;
        t[last] = String::from_utf8(t[last].clone())
            .unwrap()
            .replace("\"run_inputs\":1", "\"run_inputs\":\"1\"")
            .into_bytes();
        let r = check(&t, Options::default());
        assert_eq!(
            kinds(&r),
            vec![
                ProblemKind::SealMalformed,
                ProblemKind::FinalSealMissing,
                ProblemKind::UnsealedTail
            ]
        );
    }

    #[test]
    fn gaps_across_the_whole_offset_range_are_counted_without_overflow() {
        let t = vec![row(i64::MIN, "a", 1), row(i64::MAX, "b", 2)];
        let opts = Options {
            allow_unsealed_tail: true,
            ..Options::default()
        };
        let r = check(&t, opts.clone());
        assert_eq!(kinds(&r), vec![ProblemKind::Gap]);
        assert_eq!(r.problems[0].offsets, Some((i64::MIN + 1, i64::MAX - 1)));
        assert_eq!(
            r.problems[0].detail,
            "18446744073709551614 input offset(s) without an audit row"
        );
        // A range up to i64::MAX owes a row at i64::MAX too.
        let r = check(
            &trail(10, 4, None),
            Options {
                from: Some(0),
                to: Some(i64::MAX),
                ..Options::default()
            },
        );
        assert_eq!(kinds(&r), vec![ProblemKind::Gap]);
        assert_eq!(r.chains[0].gaps, vec![(10, i64::MAX)]);
        assert_eq!(
            r.problems[0].detail,
            "9223372036854775798 input offset(s) without an audit row"
        );
        let r = check(
            &t,
            Options {
                from: Some(i64::MIN),
                to: Some(i64::MAX),
                ..opts
            },
        );
        assert_eq!(r.chains[0].gaps, vec![(i64::MIN + 1, i64::MAX - 1)]);
    }
}
