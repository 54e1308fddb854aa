//! Seals: the records that make an audit chain tamper-evident.
//!
//! One chain per input partition (for `check`, per input file). The shell
//! hands every audit row it writes to the chain's [`Sealer`], in input
//! offset order; every `seal_every` rows (or when the shell's timer says so)
//! the sealer emits a seal record listing the input offset and SHA-256 of
//! each row written since the previous seal, in the order a reader finds
//! them (the order of `check`'s file; on the worker's audit topic, within
//! each partition, the order that partition holds them, see
//! [`Written`]), the hash of that previous seal and, when a key is
//! configured, an Ed25519 signature. Altering, reordering
//! or inserting a sealed row, deleting one, or dropping a seal before the
//! chain's last then breaks a hash that `audit verify` recomputes. Cutting a
//! trail off after a seal breaks none: the rest is a shorter, consistent
//! chain. `check` therefore marks the last seal of each chain `final`
//! ([`Sealer::seal_final`]), which verify requires of a chain `check` wrote;
//! a worker's chain never ends while its partition is consumed, and its
//! completeness rests on the consumer group's committed offsets instead.
//!
//! A seal names its chain, which another run of `check` over the same input
//! names alike. So every seal of a `check` run also names the run
//! ([`Sealer::in_run`]), and each final seal states how many chains the run
//! sealed: a chain of another run then stands out, and so does a run missing
//! one of its chains.
//!
//! Pure: no clock (time comes in), no I/O (the key comes in loaded), no
//! Kafka. The seal's bytes are canonical JSON (keys in alphabetical order,
//! compact), so the verifier can rebuild exactly the bytes that were hashed
//! and signed from the parsed record.

use std::collections::BTreeMap;

use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The `type` of a seal record, versioned so the format can evolve.
pub const SEAL_TYPE: &str = "groundgate.seal/v1";

/// `prev` of a chain's first seal.
pub const GENESIS: [u8; 32] = [0; 32];

/// The `worker` of the seals `check` writes: a chain with such seals must
/// end with a final seal, and holds each row and seal once.
pub const CHECK_WORKER: &str = "check";

/// The name a worker gives its seals: its static member id when set (one
/// per replica), else its client id.
pub fn worker_name<'a>(group_instance_id: Option<&'a str>, client_id: &'a str) -> &'a str {
    group_instance_id.unwrap_or(client_id)
}

/// Most rows one seal may list: keeps a seal well under a Kafka message
/// (each entry is ~80 bytes of JSON, so 8,192 rows ≈ 660 KB).
pub const MAX_SEAL_EVERY: usize = 8192;

/// SHA-256 of an audit row's bytes exactly as written (without the newline
/// of a JSON Lines file).
pub fn row_hash(row: &[u8]) -> [u8; 32] {
    Sha256::digest(row).into()
}

/// Which input partition a chain covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChainId {
    pub topic: String,
    pub partition: i32,
}

/// Where the audit topic holds a row: its partition and its offset there.
/// A row re-sent after a failed produce, or the stand-in of a row refused
/// as too large, lands after rows of later input offsets that were sent
/// meanwhile; a seal lists the rows of one partition in the order the
/// partition holds them, which is the order `audit verify` reads them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Written {
    pub partition: i32,
    pub offset: i64,
}

/// A row recorded for the next seal: its input offset, its hash and, when
/// known, where it was written.
type PendingRow = (i64, [u8; 32], Option<Written>);

/// Builds the seals of one chain.
pub struct Sealer {
    chain: ChainId,
    worker: String,
    seal_every: usize,
    seq: u64,
    prev: [u8; 32],
    pending: Vec<PendingRow>,
    key: Option<SigningKey>,
    /// The `check` run whose seals these are; `None` for a worker.
    run: Option<String>,
}

/// Where a chain resumes: the last seal's sequence number and hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainHead {
    pub next_seq: u64,
    pub prev: [u8; 32],
}

impl ChainHead {
    pub const START: ChainHead = ChainHead {
        next_seq: 0,
        prev: GENESIS,
    };
}

impl Sealer {
    /// `seal_every` is clamped to `1..=MAX_SEAL_EVERY` (config validation
    /// reports out-of-range values before this is reached).
    pub fn new(
        chain: ChainId,
        worker: impl Into<String>,
        seal_every: usize,
        head: ChainHead,
        key: Option<SigningKey>,
    ) -> Sealer {
        let seal_every = seal_every.clamp(1, MAX_SEAL_EVERY);
        Sealer {
            chain,
            worker: worker.into(),
            seal_every,
            seq: head.next_seq,
            prev: head.prev,
            pending: Vec::with_capacity(seal_every),
            key,
            run: None,
        }
    }

    /// Binds the chain to the `check` run `run` (its id): every seal names
    /// it, and the final seal states how many chains the run sealed.
    pub fn in_run(mut self, run: impl Into<String>) -> Sealer {
        self.run = Some(run.into());
        self
    }

    /// Records one written audit row. Returns true when a seal is due.
    #[cfg(test)]
    pub fn push(&mut self, input_offset: i64, row: &[u8]) -> bool {
        self.push_hash(input_offset, row_hash(row), None)
    }

    /// As [`Sealer::push`], with the row's [`row_hash`] computed elsewhere
    /// (on the thread that built the row). `at`: where the audit topic
    /// holds the row, when known; the seal lists the rows of one audit
    /// partition in the order of their offsets there, whatever the order
    /// they were recorded in. Without it, a row is listed as recorded.
    pub fn push_hash(&mut self, input_offset: i64, hash: [u8; 32], at: Option<Written>) -> bool {
        self.pending.push((input_offset, hash, at));
        self.due()
    }

    /// The head the chain would resume from after the last emitted seal
    /// (the worker writes it into the committed offset's metadata).
    pub fn head(&self) -> ChainHead {
        ChainHead {
            next_seq: self.seq,
            prev: self.prev,
        }
    }

    /// Rows recorded since the last seal.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Whether the pending rows fill a seal.
    pub fn due(&self) -> bool {
        self.pending.len() >= self.seal_every
    }

    /// Forgets the pending rows and continues from `head`: an exactly-once
    /// worker whose transaction aborted (its rows and seals were never
    /// published) goes back to the head at the transaction's start.
    pub fn rewind(&mut self, head: ChainHead) {
        self.seq = head.next_seq;
        self.prev = head.prev;
        self.pending.clear();
    }

    /// Emits the seal over the pending rows, or `None` when there are none.
    pub fn seal(&mut self, now_nanos: i64) -> Option<Vec<u8>> {
        self.emit(now_nanos, None)
    }

    /// Emits a seal over every pending row but the last, which stays for
    /// the final seal; `None` when at most one row is pending. A chain of a
    /// `check` run waits so, until the run knows how many chains it sealed.
    pub fn seal_keeping_last(&mut self, now_nanos: i64) -> Option<Vec<u8>> {
        let last = self.pending.pop()?;
        let seal = self.emit(now_nanos, None);
        self.pending.push(last);
        // Many chains may wait at once, each with its one row.
        self.pending.shrink_to_fit();
        seal
    }

    /// Emits the chain's last seal, marked `"final": true` (under the hash
    /// and the signature like every other field): a trail cut off after an
    /// earlier seal then lacks it. A chain bound to a run also states
    /// `run_inputs`, the number of chains the run sealed. `None` when no row
    /// is pending, so a writer that knows where its chain ends keeps at
    /// least one row back for this seal.
    pub fn seal_final(&mut self, now_nanos: i64, run_inputs: u64) -> Option<Vec<u8>> {
        self.emit(now_nanos, Some(run_inputs))
    }

    /// `run_inputs`: `Some` for the final seal.
    fn emit(&mut self, now_nanos: i64, run_inputs: Option<u64>) -> Option<Vec<u8>> {
        if self.pending.is_empty() {
            return None;
        }
        let first = self.pending.iter().map(|r| r.0).min().unwrap_or_default();
        let last = self.pending.iter().map(|r| r.0).max().unwrap_or_default();
        let rows: Vec<Value> = listing_order(&self.pending)
            .into_iter()
            .map(|i| {
                let (off, h, _) = &self.pending[i];
                json!([off, hex::encode(h)])
            })
            .collect();
        let mut seal = Map::new();
        seal.insert(
            "chain".into(),
            json!({"partition": self.chain.partition, "topic": self.chain.topic}),
        );
        // Absent from every other seal: no key means not final.
        if run_inputs.is_some() {
            seal.insert("final".into(), json!(true));
        }
        seal.insert("first_offset".into(), json!(first));
        seal.insert("last_offset".into(), json!(last));
        seal.insert("prev".into(), json!(hex::encode(self.prev)));
        seal.insert("rows".into(), Value::Array(rows));
        if let Some(run) = &self.run {
            seal.insert("run".into(), json!(run));
            if let Some(n) = run_inputs {
                seal.insert("run_inputs".into(), json!(n));
            }
        }
        seal.insert("seq".into(), json!(self.seq));
        seal.insert("ts".into(), json!(now_nanos));
        seal.insert("type".into(), json!(SEAL_TYPE));
        seal.insert("worker".into(), json!(self.worker));
        let unsigned = canonical(&seal);
        let hash: [u8; 32] = Sha256::digest(&unsigned).into();
        let sig = match &self.key {
            Some(k) => json!(hex::encode(k.sign(&unsigned).to_bytes())),
            None => Value::Null,
        };
        seal.insert("sig".into(), sig);
        self.prev = hash;
        self.seq += 1;
        self.pending.clear();
        Some(canonical(&seal))
    }
}

/// The order a seal lists `pending` in (indices): as recorded, except that
/// the rows written to one audit partition are listed in the order of their
/// offsets there, in the places the partition's rows had.
fn listing_order(pending: &[PendingRow]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pending.len()).collect();
    let mut by_partition: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    for (i, (_, _, at)) in pending.iter().enumerate() {
        if let Some(at) = at {
            by_partition.entry(at.partition).or_default().push(i);
        }
    }
    for places in by_partition.values() {
        let mut rows = places.clone();
        rows.sort_by_key(|&i| pending[i].2);
        for (&place, &row) in places.iter().zip(&rows) {
            order[place] = row;
        }
    }
    order
}

/// Canonical bytes of a JSON object: serde_json's map is ordered by key
/// (the `preserve_order` feature is off), and its compact writer adds no
/// whitespace.
pub fn canonical(map: &Map<String, Value>) -> Vec<u8> {
    serde_json::to_vec(map).unwrap_or_default()
}

/// The bytes a seal's hash and signature cover: the seal without `sig`.
pub fn unsigned_bytes(seal: &Map<String, Value>) -> Vec<u8> {
    let mut m = seal.clone();
    m.remove("sig");
    canonical(&m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain() -> ChainId {
        ChainId {
            topic: "answers".into(),
            partition: 3,
        }
    }

    #[test]
    fn seals_every_n_rows_and_links_to_the_previous_seal() {
        let mut s = Sealer::new(chain(), "w1", 2, ChainHead::START, None);
        assert!(s.seal(1).is_none(), "no rows, no seal");
        assert!(!s.push(10, b"{\"a\":1}"));
        assert!(s.push(11, b"{\"a\":2}"));
        let first = s.seal(5).unwrap();
        let v: Map<String, Value> = serde_json::from_slice(&first).unwrap();
        assert_eq!(v["seq"], 0);
        assert_eq!(v["prev"], hex::encode(GENESIS));
        assert_eq!(v["first_offset"], 10);
        assert_eq!(v["last_offset"], 11);
        assert_eq!(v["rows"][1][1], hex::encode(row_hash(b"{\"a\":2}")));
        assert_eq!(v["sig"], Value::Null);
        // The record is canonical: re-encoding the parsed value is identical.
        assert_eq!(canonical(&v), first);

        s.push(12, b"{\"a\":3}");
        let second: Map<String, Value> = serde_json::from_slice(&s.seal(6).unwrap()).unwrap();
        assert_eq!(second["seq"], 1);
        let first_hash = hex::encode(Sha256::digest(unsigned_bytes(&v)));
        assert_eq!(second["prev"], first_hash);
        assert_eq!(s.head().next_seq, 2);
    }

    #[test]
    fn signed_seals_verify_with_the_public_key_only() {
        use ed25519_dalek::{Signature, Verifier};
        let key = SigningKey::from_bytes(&[7; 32]);
        let mut s = Sealer::new(chain(), "w1", 10, ChainHead::START, Some(key.clone()));
        s.push(0, b"row");
        let seal: Map<String, Value> = serde_json::from_slice(&s.seal(1).unwrap()).unwrap();
        let sig: [u8; 64] = hex::decode(seal["sig"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let sig = Signature::from_bytes(&sig);
        let msg = unsigned_bytes(&seal);
        assert!(key.verifying_key().verify(&msg, &sig).is_ok());
        let other = SigningKey::from_bytes(&[8; 32]).verifying_key();
        assert!(other.verify(&msg, &sig).is_err());
    }

    #[test]
    fn only_the_final_seal_is_marked_final_and_the_mark_is_signed() {
        use ed25519_dalek::{Signature, Verifier};
        let key = SigningKey::from_bytes(&[7; 32]);
        let mut s = Sealer::new(
            chain(),
            CHECK_WORKER,
            1,
            ChainHead::START,
            Some(key.clone()),
        );
        assert!(s.seal_final(1, 1).is_none(), "no rows, no seal");
        s.push(1, b"row 1");
        assert!(s.due());
        let first: Map<String, Value> = serde_json::from_slice(&s.seal(2).unwrap()).unwrap();
        assert!(!first.contains_key("final"), "{first:?}");
        s.push(2, b"row 2");
        let bytes = s.seal_final(3, 1).unwrap();
        let mut last: Map<String, Value> = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(last["final"], true);
        assert_eq!(last["seq"], 1);
        assert_eq!(canonical(&last), bytes);
        let sig: [u8; 64] = hex::decode(last["sig"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let sig = Signature::from_bytes(&sig);
        let vk = key.verifying_key();
        assert!(vk.verify(&unsigned_bytes(&last), &sig).is_ok());
        last.remove("final");
        assert!(vk.verify(&unsigned_bytes(&last), &sig).is_err());
        // Not bound to a run: no run, no count.
        assert!(!last.contains_key("run") && !last.contains_key("run_inputs"));
    }

    #[test]
    fn a_run_s_seals_name_it_and_its_final_seal_counts_the_chains_under_the_signature() {
        use ed25519_dalek::{Signature, Verifier};
        let key = SigningKey::from_bytes(&[7; 32]);
        let run = "00112233445566778899aabbccddeeff";
        let mut s = Sealer::new(
            chain(),
            CHECK_WORKER,
            10,
            ChainHead::START,
            Some(key.clone()),
        )
        .in_run(run);
        for o in 1..=3 {
            s.push(o, format!("row {o}").as_bytes());
        }
        // Rows 1 and 2 sealed now, row 3 kept for the final seal.
        let first: Map<String, Value> =
            serde_json::from_slice(&s.seal_keeping_last(1).unwrap()).unwrap();
        assert_eq!(first["run"], run);
        assert!(!first.contains_key("run_inputs") && !first.contains_key("final"));
        assert_eq!(first["rows"].as_array().unwrap().len(), 2);
        assert_eq!(s.pending(), 1);
        assert!(s.seal_keeping_last(2).is_none(), "one row stays");
        let bytes = s.seal_final(3, 4).unwrap();
        let mut last: Map<String, Value> = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            (
                &last["run"],
                &last["run_inputs"],
                &last["final"],
                &last["seq"]
            ),
            (
                &Value::from(run),
                &Value::from(4),
                &Value::from(true),
                &Value::from(1)
            )
        );
        assert_eq!(last["rows"][0][0], 3);
        assert_eq!(canonical(&last), bytes, "keys in canonical order");
        let sig: [u8; 64] = hex::decode(last["sig"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let (sig, vk) = (Signature::from_bytes(&sig), key.verifying_key());
        assert!(vk.verify(&unsigned_bytes(&last), &sig).is_ok());
        last["run_inputs"] = Value::from(3);
        assert!(vk.verify(&unsigned_bytes(&last), &sig).is_err());
        last["run_inputs"] = Value::from(4);
        last["run"] = Value::from("ffeeddccbbaa99887766554433221100");
        assert!(vk.verify(&unsigned_bytes(&last), &sig).is_err());
    }

    #[test]
    fn rows_of_one_audit_partition_are_listed_in_the_order_it_holds_them() {
        let at = |partition, offset| Some(Written { partition, offset });
        let mut s = Sealer::new(chain(), "w1", 10, ChainHead::START, None);
        // Input offset 0's row was sent again after a failed produce and
        // landed in audit partition 2 after the rows of offsets 1 and 3.
        s.push_hash(0, [0; 32], at(2, 12));
        s.push_hash(1, [1; 32], at(2, 10));
        s.push_hash(2, [2; 32], at(5, 3));
        s.push_hash(3, [3; 32], at(2, 11));
        let v: Map<String, Value> = serde_json::from_slice(&s.seal(1).unwrap()).unwrap();
        let listed: Vec<(i64, String)> = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r[0].as_i64().unwrap(),
                    r[1].as_str().unwrap()[..2].to_string(),
                )
            })
            .collect();
        let expected: Vec<(i64, String)> = [1, 3, 2, 0].map(|o: i64| (o, format!("{o:02}"))).into();
        assert_eq!(
            listed, expected,
            "partition 2 in its order, partition 5's row in its place"
        );
        assert_eq!(
            (v["first_offset"].clone(), v["last_offset"].clone()),
            (0.into(), 3.into())
        );
        // Rows recorded without a place are listed as recorded.
        for o in [2, 0, 1] {
            s.push_hash(o, [o as u8; 32], None);
        }
        let v: Map<String, Value> = serde_json::from_slice(&s.seal(2).unwrap()).unwrap();
        let offsets: Vec<i64> = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[0].as_i64().unwrap())
            .collect();
        assert_eq!(offsets, [2, 0, 1]);
    }

    #[test]
    fn seal_every_is_bounded() {
        let mut s = Sealer::new(chain(), "w", usize::MAX, ChainHead::START, None);
        for i in 0..MAX_SEAL_EVERY as i64 - 1 {
            assert!(!s.push(i, b"r"));
        }
        assert!(s.push(0, b"r"));
    }
}
