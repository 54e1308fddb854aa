//! The worker's audit chains: one [`Sealer`] per input partition the worker
//! owns, the seal outputs they emit, and the chain head carried across
//! owners in the committed offset's metadata (`gg-seal/v1:<next_seq>:<prev
//! hex>`), so whoever owns a partition next continues its chain.
//!
//! The invariant the deliveries keep with it: an input offset is committed
//! only once the audit row of that record is covered by a published seal,
//! and with the head after that seal as the offset's metadata. Rows above
//! the committed offset may be unsealed after a crash; their records are
//! processed again and sealed by the next owner.
//!
//! Pure: time comes in (an [`Instant`] for the seal interval, nanoseconds
//! for the seal's `ts`), nothing here talks to Kafka, logs or counts. The
//! deliveries (`super::at_least_once`, `super::exactly_once`) decide when a
//! seal is published and when an offset may be committed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ed25519_dalek::SigningKey;

use super::offsets::TopicPartition;
use super::outputs::{Output, seal_output};
use crate::audit::{ChainHead, ChainId, Sealer, Written};
use crate::config::{OutputSchemaIds, Topics};

/// Prefix of the committed offset's metadata that carries a chain head.
pub const HEAD_PREFIX: &str = "gg-seal/v1:";

/// The committed offset's metadata for the chain head `h`.
pub fn encode_head(h: &ChainHead) -> String {
    format!("{HEAD_PREFIX}{}:{}", h.next_seq, hex::encode(h.prev))
}

/// The chain head in a committed offset's metadata, or `None` when the
/// metadata is not ours or is malformed.
pub fn decode_head(metadata: &str) -> Option<ChainHead> {
    let rest = metadata.strip_prefix(HEAD_PREFIX)?;
    let (seq, prev) = rest.split_once(':')?;
    let next_seq = seq.parse().ok()?;
    let prev = <[u8; 32]>::try_from(hex::decode(prev).ok()?).ok()?;
    Some(ChainHead { next_seq, prev })
}

/// Why a committed offset's metadata holds no chain head. The labels are
/// the `reason` of `groundgate_audit_chain_restarts_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartReason {
    /// Empty: committed before sealing was on, or by a tool that writes no
    /// metadata (e.g. an offset reset).
    NoHead,
    /// Bytes that are not UTF-8: written by something else, or damaged.
    NotUtf8,
    /// Text that is not a head of ours (another prefix, a malformed head).
    Foreign,
}

impl RestartReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RestartReason::NoHead => "no_head",
            RestartReason::NotUtf8 => "not_utf8",
            RestartReason::Foreign => "foreign",
        }
    }
}

/// What a committed offset's metadata bytes say: a chain head, or why not.
pub fn read_head(metadata: &[u8]) -> Result<ChainHead, RestartReason> {
    if metadata.is_empty() {
        return Err(RestartReason::NoHead);
    }
    let text = std::str::from_utf8(metadata).map_err(|_| RestartReason::NotUtf8)?;
    decode_head(text).ok_or(RestartReason::Foreign)
}

/// Where a partition's chain starts when this worker takes it over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// Nothing committed: the chain starts at seq 0.
    Fresh,
    /// The committed offset carries the head after its last seal.
    Continue(ChainHead),
    /// An offset is committed without a head of ours: a new chain starts at
    /// seq 0 and the rows before `committed` stay unsealed.
    NewChain {
        committed: i64,
        reason: RestartReason,
    },
}

impl Resume {
    /// From the committed offset (if any) and its metadata bytes.
    pub fn from_committed(committed: Option<i64>, metadata: &[u8]) -> Resume {
        match (committed, read_head(metadata)) {
            (_, Ok(h)) => Resume::Continue(h),
            (None, Err(_)) => Resume::Fresh,
            (Some(committed), Err(reason)) => Resume::NewChain { committed, reason },
        }
    }

    pub fn head(self) -> ChainHead {
        match self {
            Resume::Continue(h) => h,
            Resume::Fresh | Resume::NewChain { .. } => ChainHead::START,
        }
    }
}

/// What every chain of this worker shares.
pub struct SealSettings {
    /// The `worker` of every seal (`kafka.group_instance_id`, else `kafka.client_id`).
    pub worker: String,
    pub seal_every: usize,
    /// A partition's pending rows are sealed once the oldest is this old.
    pub interval: Duration,
    pub key: Option<SigningKey>,
    pub topics: Topics,
    /// The audit topic's schema id frames seals as it frames rows.
    pub schema_ids: OutputSchemaIds,
}

/// One emitted seal: the output to publish, the input offset of the last
/// row it covers, and the chain head after it.
#[derive(Debug, Clone)]
pub struct Seal {
    pub output: Output,
    pub last_offset: i64,
    pub head: ChainHead,
}

struct Chain {
    sealer: Sealer,
    /// Exactly-once: the head at the open transaction's start (where an
    /// abort goes back to).
    checkpoint: ChainHead,
    /// When the oldest pending row was recorded.
    oldest: Option<Instant>,
    last_offset: i64,
}

/// The chains of the partitions this worker owns.
pub struct Chains {
    settings: SealSettings,
    chains: HashMap<TopicPartition, Chain>,
}

impl Chains {
    pub fn new(settings: SealSettings) -> Chains {
        Chains {
            settings,
            chains: HashMap::new(),
        }
    }

    /// Whether `tp`'s chain is loaded (else its head must be read first).
    pub fn has(&self, tp: &TopicPartition) -> bool {
        self.chains.contains_key(tp)
    }

    /// Starts (or restarts) `tp`'s chain at `head`.
    pub fn start(&mut self, tp: &TopicPartition, head: ChainHead) {
        let s = &self.settings;
        let sealer = Sealer::new(
            ChainId {
                topic: tp.0.clone(),
                partition: tp.1,
            },
            s.worker.clone(),
            s.seal_every,
            head,
            s.key.clone(),
        );
        self.chains.insert(
            tp.clone(),
            Chain {
                sealer,
                checkpoint: head,
                oldest: None,
                last_offset: -1,
            },
        );
    }

    /// Records the audit row of input `offset` (SHA-256 of the bytes
    /// published, and where the audit topic holds them when known); true
    /// when a seal is due by count. A partition whose chain was not started
    /// is ignored (false).
    pub fn push(
        &mut self,
        tp: &TopicPartition,
        offset: i64,
        hash: [u8; 32],
        at: Option<Written>,
        now: Instant,
    ) -> bool {
        let Some(c) = self.chains.get_mut(tp) else {
            return false;
        };
        c.oldest.get_or_insert(now);
        c.last_offset = offset;
        c.sealer.push_hash(offset, hash, at)
    }

    /// Seals `tp`'s pending rows; `None` when there are none.
    pub fn seal(&mut self, tp: &TopicPartition, now_nanos: i64) -> Option<Seal> {
        let c = self.chains.get_mut(tp)?;
        let bytes = c.sealer.seal(now_nanos)?;
        c.oldest = None;
        let head = c.sealer.head();
        let seq = head.next_seq.saturating_sub(1);
        Some(Seal {
            output: seal_output(
                &tp.0,
                tp.1,
                seq,
                bytes,
                &self.settings.topics,
                &self.settings.schema_ids,
            ),
            last_offset: c.last_offset,
            head,
        })
    }

    /// Partitions whose oldest pending row is at least the seal interval old.
    pub fn due(&self, now: Instant) -> Vec<TopicPartition> {
        let mut v: Vec<TopicPartition> = self
            .chains
            .iter()
            .filter(|(_, c)| {
                c.oldest
                    .is_some_and(|t| now.saturating_duration_since(t) >= self.settings.interval)
            })
            .map(|(tp, _)| tp.clone())
            .collect();
        v.sort();
        v
    }

    /// Partitions with rows not covered by a seal yet.
    pub fn unsealed(&self) -> Vec<TopicPartition> {
        let mut v: Vec<TopicPartition> = self
            .chains
            .iter()
            .filter(|(_, c)| c.sealer.pending() > 0)
            .map(|(tp, _)| tp.clone())
            .collect();
        v.sort();
        v
    }

    /// The head after `tp`'s last seal.
    pub fn head(&self, tp: &TopicPartition) -> Option<ChainHead> {
        self.chains.get(tp).map(|c| c.sealer.head())
    }

    /// Exactly-once: a transaction opens; an abort goes back to here.
    pub fn checkpoint(&mut self) {
        for c in self.chains.values_mut() {
            c.checkpoint = c.sealer.head();
        }
    }

    /// Exactly-once: the transaction aborted. Its rows and seals were never
    /// published (the records are read again from the rewound offsets), so
    /// every chain goes back to its head at the transaction's start.
    pub fn rollback(&mut self) {
        for c in self.chains.values_mut() {
            c.sealer.rewind(c.checkpoint);
            c.oldest = None;
        }
    }

    /// Partitions no longer owned: their next owner continues from the
    /// committed head.
    pub fn forget(&mut self, tps: &[TopicPartition]) {
        for tp in tps {
            self.chains.remove(tp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::seal::GENESIS;

    fn chains(every: usize) -> Chains {
        Chains::new(SealSettings {
            worker: "w1".into(),
            seal_every: every,
            interval: Duration::from_secs(5),
            key: None,
            topics: Topics::default(),
            schema_ids: OutputSchemaIds::default(),
        })
    }

    fn tp(p: i32) -> TopicPartition {
        ("answers".to_string(), p)
    }

    fn json(s: &Seal) -> serde_json::Value {
        serde_json::from_slice(s.output.payload.as_deref().unwrap()).unwrap()
    }

    #[test]
    fn head_metadata_round_trips_and_rejects_what_is_not_ours() {
        let h = ChainHead {
            next_seq: 42,
            prev: [0xab; 32],
        };
        let m = encode_head(&h);
        assert_eq!(m, format!("gg-seal/v1:42:{}", "ab".repeat(32)));
        assert_eq!(decode_head(&m), Some(h));
        for bad in [
            "",
            "some other tool",
            "gg-seal/v1:",
            "gg-seal/v1:42",
            "gg-seal/v1:x:00",
            "gg-seal/v1:-1:00",
            &format!("gg-seal/v1:1:{}", "ab".repeat(31)),
            &format!("gg-seal/v1:1:{}", "zz".repeat(32)),
            &format!("gg-seal/v2:1:{}", "ab".repeat(32)),
        ] {
            assert_eq!(decode_head(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn resume_continues_a_head_else_starts_a_chain() {
        let h = ChainHead {
            next_seq: 3,
            prev: [1; 32],
        };
        assert_eq!(
            Resume::from_committed(Some(10), encode_head(&h).as_bytes()),
            Resume::Continue(h)
        );
        assert_eq!(Resume::from_committed(None, b""), Resume::Fresh);
        let upgraded = Resume::from_committed(Some(10), b"");
        assert_eq!(
            upgraded,
            Resume::NewChain {
                committed: 10,
                reason: RestartReason::NoHead
            }
        );
        assert_eq!(upgraded.head(), ChainHead::START);
    }

    #[test]
    fn unreadable_metadata_is_a_restart_with_its_reason() {
        let h = ChainHead {
            next_seq: 3,
            prev: [1; 32],
        };
        assert_eq!(read_head(encode_head(&h).as_bytes()), Ok(h));
        assert_eq!(read_head(b""), Err(RestartReason::NoHead));
        assert_eq!(read_head(b"\xffgg-seal"), Err(RestartReason::NotUtf8));
        assert_eq!(read_head(b"other-tool:7"), Err(RestartReason::Foreign));
        let mut damaged = encode_head(&h).into_bytes();
        damaged[0] = b'G';
        assert_eq!(read_head(&damaged), Err(RestartReason::Foreign));
        assert_eq!(
            Resume::from_committed(Some(5), b"\xfe\xff"),
            Resume::NewChain {
                committed: 5,
                reason: RestartReason::NotUtf8
            }
        );
        let labels: Vec<&str> = [
            RestartReason::NoHead,
            RestartReason::NotUtf8,
            RestartReason::Foreign,
        ]
        .map(RestartReason::as_str)
        .into();
        assert_eq!(labels, crate::metrics::CHAIN_RESTART_REASONS);
    }

    #[test]
    fn seals_by_count_per_partition_keyed_by_chain() {
        let mut c = chains(2);
        let now = Instant::now();
        c.start(&tp(0), ChainHead::START);
        c.start(&tp(1), ChainHead::START);
        assert!(!c.push(&tp(0), 5, [1; 32], None, now));
        assert!(!c.push(&tp(1), 9, [2; 32], None, now));
        assert!(c.push(&tp(0), 6, [3; 32], None, now), "second row of p0");
        let s = c.seal(&tp(0), 7).unwrap();
        assert_eq!(s.last_offset, 6);
        assert_eq!(s.head.next_seq, 1);
        assert_eq!(s.output.key.as_deref(), Some(&b"answers/0"[..]));
        assert!(s.output.is_seal());
        assert_eq!(json(&s)["seq"], 0);
        assert_eq!(json(&s)["worker"], "w1");
        assert_eq!(c.unsealed(), [tp(1)]);
        assert!(c.seal(&tp(0), 8).is_none(), "nothing pending");
        assert!(
            !c.push(&("answers".into(), 7), 0, [0; 32], None, now),
            "unknown"
        );
    }

    #[test]
    fn seals_by_age_of_the_oldest_pending_row() {
        let mut c = chains(100);
        let t0 = Instant::now();
        c.start(&tp(0), ChainHead::START);
        c.start(&tp(1), ChainHead::START);
        c.push(&tp(0), 0, [1; 32], None, t0);
        c.push(&tp(1), 0, [1; 32], None, t0 + Duration::from_secs(3));
        c.push(&tp(0), 1, [1; 32], None, t0 + Duration::from_secs(4));
        assert!(c.due(t0 + Duration::from_secs(4)).is_empty());
        assert_eq!(c.due(t0 + Duration::from_secs(5)), [tp(0)]);
        c.seal(&tp(0), 1).unwrap();
        assert_eq!(c.due(t0 + Duration::from_secs(8)), [tp(1)]);
    }

    #[test]
    fn a_resumed_chain_continues_its_sequence_and_link() {
        let mut a = chains(1);
        a.start(&tp(0), ChainHead::START);
        a.push(&tp(0), 0, [1; 32], None, Instant::now());
        let first = a.seal(&tp(0), 1).unwrap();
        // The next owner reads the head from the committed metadata.
        let head = decode_head(&encode_head(&first.head)).unwrap();
        let mut b = chains(1);
        b.start(&tp(0), head);
        b.push(&tp(0), 1, [2; 32], None, Instant::now());
        let second = b.seal(&tp(0), 2).unwrap();
        assert_eq!(json(&second)["seq"], 1);
        assert_ne!(json(&second)["prev"], hex::encode(GENESIS));
        assert_eq!(json(&second)["prev"], hex::encode(first.head.prev));
    }

    #[test]
    fn rollback_returns_every_chain_to_the_transaction_start() {
        let mut c = chains(2);
        let now = Instant::now();
        c.start(&tp(0), ChainHead::START);
        c.push(&tp(0), 0, [1; 32], None, now);
        c.push(&tp(0), 1, [1; 32], None, now);
        let committed = c.seal(&tp(0), 1).unwrap().head;
        c.checkpoint();
        // The next transaction seals once, then aborts.
        c.push(&tp(0), 2, [2; 32], None, now);
        c.push(&tp(0), 3, [2; 32], None, now);
        let aborted = c.seal(&tp(0), 2).unwrap();
        c.push(&tp(0), 4, [2; 32], None, now);
        // A partition first seen inside the aborted transaction.
        c.start(&tp(1), ChainHead::START);
        c.push(&tp(1), 0, [3; 32], None, now);
        c.rollback();
        assert_eq!(c.head(&tp(0)), Some(committed));
        assert!(c.unsealed().is_empty(), "pending rows dropped");
        assert!(c.due(now + Duration::from_secs(60)).is_empty());
        // Processed again, the rows are sealed under the aborted seal's seq.
        c.push(&tp(0), 2, [2; 32], None, now);
        c.push(&tp(0), 3, [2; 32], None, now);
        let again = c.seal(&tp(0), 3).unwrap();
        assert_eq!(json(&again)["seq"], json(&aborted)["seq"]);
        assert_eq!(json(&again)["prev"], json(&aborted)["prev"]);
        c.forget(&[tp(0)]);
        assert!(!c.has(&tp(0)) && c.has(&tp(1)));
    }
}
