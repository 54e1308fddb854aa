//! One chain as `audit verify` collects it: its rows and seals as read, and
//! the reading of a row's and a seal's fields out of their JSON. Pure; the
//! judging is in the parent module.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

use super::Location;
use crate::audit::seal::ChainId;

pub(super) struct Row {
    pub(super) offset: i64,
    /// SHA-256 of the row as written without `ts` (the processing time, the
    /// one field a second processing of the same input changes): equal for
    /// a redelivery.
    pub(super) content: [u8; 32],
    pub(super) hash: [u8; 32],
    pub(super) at: Location,
    pub(super) sealed: bool,
    /// Matched to a sealed entry whose bytes differ (already reported).
    pub(super) accounted: bool,
    /// Its bytes are the canonical JSON of what it parses to; a row that
    /// is not was reported when read, and is never a redelivery.
    pub(super) canonical: bool,
}

pub(super) struct SealRec {
    pub(super) seq: u64,
    pub(super) prev: [u8; 32],
    pub(super) hash: [u8; 32],
    pub(super) first: i64,
    pub(super) last: i64,
    pub(super) rows: Vec<(i64, [u8; 32])>,
    pub(super) at: Location,
    /// Marked `"final": true`: the last seal of a chain `check` wrote.
    pub(super) is_final: bool,
    /// Written by `check` (its `worker`).
    pub(super) by_check: bool,
    /// The `check` run the seal names; `None` for a worker's seal and for
    /// one of a `check` that did not name its run.
    pub(super) run: Option<String>,
    /// On a final seal of a run: how many chains the run sealed.
    pub(super) run_inputs: Option<u64>,
    /// The given key its signature verifies with (an index into the
    /// keyring); `None` when no key was given or none verifies it.
    pub(super) signer: Option<usize>,
    /// Its `ts`, when an integer.
    pub(super) ts: Option<i64>,
}

#[derive(Default)]
pub(super) struct Chain {
    pub(super) rows: Vec<Row>,
    pub(super) by_hash: HashMap<[u8; 32], Vec<usize>>,
    pub(super) seals: Vec<SealRec>,
}

/// The last seal read with the nearest lower sequence number than `s`.
pub(super) fn seal_before<'c>(
    seals: &'c [SealRec],
    by_seq: &BTreeMap<u64, Vec<usize>>,
    s: &SealRec,
) -> Option<&'c SealRec> {
    let (_, ix) = by_seq.range(..s.seq).next_back()?;
    ix.last().map(|&i| &seals[i])
}

pub(super) fn sealed_anywhere(seals: &[SealRec], hash: &[u8; 32]) -> bool {
    seals.iter().any(|s| s.rows.iter().any(|(_, h)| h == hash))
}

/// What identifies a row: its chain and input offset (and it must have an
/// `answer_hash` to be an audit row at all).
pub(super) fn row_fields(m: &Map<String, Value>) -> Option<(ChainId, i64)> {
    m.get("answer_hash")?.as_str()?;
    let input = m.get("input")?.as_object()?;
    let chain = ChainId {
        topic: input.get("topic")?.as_str()?.to_string(),
        partition: i32::try_from(input.get("partition")?.as_i64()?).ok()?,
    };
    Some((chain, input.get("offset")?.as_i64()?))
}

/// The contents of the sealed rows, per input offset.
pub(super) fn sealed_contents(c: &Chain) -> HashMap<i64, Vec<[u8; 32]>> {
    let mut by: HashMap<i64, Vec<[u8; 32]>> = HashMap::new();
    for r in c.rows.iter().filter(|r| r.sealed) {
        by.entry(r.offset).or_default().push(r.content);
    }
    by
}

pub(super) type SealFields = (ChainId, u64, [u8; 32], i64, i64, Vec<(i64, [u8; 32])>);

pub(super) fn seal_fields(m: &Map<String, Value>) -> Option<SealFields> {
    let c = m.get("chain")?.as_object()?;
    let chain = ChainId {
        topic: c.get("topic")?.as_str()?.to_string(),
        partition: i32::try_from(c.get("partition")?.as_i64()?).ok()?,
    };
    let seq = m.get("seq")?.as_u64()?;
    let prev = hash32(m.get("prev")?)?;
    let first = m.get("first_offset")?.as_i64()?;
    let last = m.get("last_offset")?.as_i64()?;
    let rows = m
        .get("rows")?
        .as_array()?
        .iter()
        .map(|e| {
            let pair = e.as_array()?;
            Some((pair.first()?.as_i64()?, hash32(pair.get(1)?)?))
        })
        .collect::<Option<Vec<_>>>()?;
    Some((chain, seq, prev, first, last, rows))
}

/// The run a seal names and the number of chains it states (`run`,
/// `run_inputs`), each absent when the key is; `None` when one is present
/// but not a string / not a count.
pub(super) fn run_fields(m: &Map<String, Value>) -> Option<(Option<String>, Option<u64>)> {
    let run = match m.get("run") {
        None => None,
        Some(v) => Some(v.as_str()?.to_string()),
    };
    let inputs = match m.get("run_inputs") {
        None => None,
        Some(v) => Some(v.as_u64()?),
    };
    Some((run, inputs))
}

pub(super) fn hash32(v: &Value) -> Option<[u8; 32]> {
    hex::decode(v.as_str()?).ok()?.try_into().ok()
}
