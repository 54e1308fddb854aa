//! The at-least-once ledger, pure: which offsets are in flight, which
//! acknowledged audit rows may go on their chain (in offset order, each with
//! where the audit topic holds it), which cut seals may be sent, and which
//! offsets may be stored (with the chain head as their metadata). The
//! delivery driver in `super::at_least_once` feeds it acks and does what it
//! answers; all the ordering rules live, and are tested, here.
//!
//! Must not touch a client, a clock or a channel.

use std::collections::{BTreeMap, HashMap, VecDeque};

use super::error::WorkerError;
use super::offsets::{OffsetTracker, TopicPartition};
use super::outputs::Output;
use super::seals::Seal;
use crate::audit::{ChainHead, Written};

/// What an [`Ack`] acknowledges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acked {
    /// Every output of the record at `offset`.
    Record,
    /// A seal whose last row is at `offset` (published on its own, once
    /// every row it lists was acknowledged).
    Seal,
}

/// A delivery outcome, sent from the async side to the consumer thread.
pub struct Ack {
    pub tp: TopicPartition,
    /// The assignment of `tp` the delivery was made in
    /// ([`AckLedger::generation`]).
    pub generation: u64,
    pub offset: i64,
    pub input_ts_ms: Option<i64>,
    pub what: Acked,
    /// [`Acked::Record`]: the input bytes of the record.
    pub bytes: usize,
    /// [`Acked::Record`] of a judged record: what its terminal record was
    /// written as.
    pub verdict: Option<crate::metrics::Verdict>,
    /// [`Acked::Record`] of a sealed record: its audit row as delivered.
    pub audit_row: Option<DeliveredRow>,
    pub result: Result<(), WorkerError>,
}

/// An audit row as delivered: the SHA-256 of the bytes the audit topic
/// holds, and where it holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveredRow {
    pub hash: [u8; 32],
    pub at: Written,
}

/// An offset that may be stored: `done` and everything before it is
/// finished; `head`, when sealing, is the chain head after the seal that
/// covers `done` (the offset's metadata).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    pub tp: TopicPartition,
    pub done: i64,
    pub head: Option<ChainHead>,
}

/// Where a seal is between being cut and moving the offset.
#[derive(Debug)]
enum SealState {
    /// Cut, not sent: a row it lists is not acknowledged yet. Rows are
    /// keyed by request id and land on other audit partitions than the
    /// seal, so sending it now could publish it before a row it lists,
    /// which a crash could then leave unwritten (verify: `row_missing`).
    Waiting(Output),
    Sent,
    Acked,
}

/// A seal of one partition, not yet allowed to move the offset.
#[derive(Debug)]
struct WaitingSeal {
    last: i64,
    head: ChainHead,
    state: SealState,
}

/// The pure bookkeeping: which offsets are in flight, which seals may be
/// sent and which offsets may be stored. Without sealing, the highest
/// contiguous finished offset is stored; with sealing, a seal is released
/// (to be sent) only once every row it lists is finished, and only the last
/// row of an acknowledged seal is stored.
#[derive(Default)]
pub struct AckLedger {
    tracker: OffsetTracker,
    sealing: bool,
    /// Sealing: highest contiguous finished offset per partition.
    done: HashMap<TopicPartition, i64>,
    /// Sealing: the delivered audit rows by offset, until every earlier
    /// record of their partition is finished too.
    rows: HashMap<TopicPartition, BTreeMap<i64, DeliveredRow>>,
    /// Sealing: seals per partition in chain order (the sent ones first).
    marks: HashMap<TopicPartition, VecDeque<WaitingSeal>>,
    /// Per partition: how many times it was forgotten (revoked or lost).
    /// An ack of an earlier assignment names an offset or a seal that a
    /// later assignment of the partition to this worker may have again.
    generations: HashMap<TopicPartition, u64>,
}

impl AckLedger {
    pub fn new(sealing: bool) -> AckLedger {
        AckLedger {
            sealing,
            ..AckLedger::default()
        }
    }

    /// The current assignment of `tp`: what the acks of deliveries made
    /// now carry.
    pub fn generation(&self, tp: &TopicPartition) -> u64 {
        self.generations.get(tp).copied().unwrap_or(0)
    }

    pub fn sent(&mut self, tp: &TopicPartition, offset: i64) {
        self.tracker.start(tp, offset);
    }

    /// A seal of `tp` was cut: it waits for its rows ([`AckLedger::release`]).
    /// Holds the seal's bytes (at most `seal_every` rows) until then.
    pub fn cut(&mut self, tp: &TopicPartition, seal: Seal) {
        self.marks
            .entry(tp.clone())
            .or_default()
            .push_back(WaitingSeal {
                last: seal.last_offset,
                head: seal.head,
                state: SealState::Waiting(seal.output),
            });
    }

    /// The next seal of `tp` to send, if every row it lists (every offset
    /// up to its last) is finished; it is then in flight until its
    /// [`Acked::Seal`]. Call until `None`: seals come out in chain order.
    pub fn release(&mut self, tp: &TopicPartition) -> Option<Seal> {
        let done = *self.done.get(tp)?;
        let m = self
            .marks
            .get_mut(tp)?
            .iter_mut()
            .find(|m| matches!(m.state, SealState::Waiting(_)))?;
        if m.last > done {
            return None;
        }
        let SealState::Waiting(output) = std::mem::replace(&mut m.state, SealState::Sent) else {
            return None;
        };
        Some(Seal {
            output,
            last_offset: m.last,
            head: m.head,
        })
    }

    /// Applies one ack: `Ok(Some(store))` when an offset may now be stored;
    /// `Err` for a failed publish (its offset and the seals listing it stay
    /// where they are). An ack of an earlier assignment of its partition is
    /// dropped, failed or not: that assignment's unfinished records are
    /// read again from the committed offset.
    pub fn acked(&mut self, ack: Ack) -> Result<Option<Store>, WorkerError> {
        if ack.generation != self.generation(&ack.tp) {
            return Ok(None);
        }
        ack.result?;
        let tp = ack.tp;
        match ack.what {
            Acked::Record => {
                if self.sealing
                    && let Some(row) = ack.audit_row
                    && self.tracker.in_flight_for(&tp) > 0
                {
                    self.rows
                        .entry(tp.clone())
                        .or_default()
                        .insert(ack.offset, row);
                }
                let Some(done) = self.tracker.complete(&tp, ack.offset) else {
                    return Ok(None);
                };
                if !self.sealing {
                    return Ok(Some(Store {
                        tp,
                        done,
                        head: None,
                    }));
                }
                self.done.insert(tp.clone(), done);
            }
            Acked::Seal => match self.marks.get_mut(&tp).and_then(|m| {
                m.iter_mut()
                    .find(|m| m.last == ack.offset && matches!(m.state, SealState::Sent))
            }) {
                Some(m) => m.state = SealState::Acked,
                // Acks of a revoked partition's seals.
                None => return Ok(None),
            },
        }
        Ok(self.covered(tp))
    }

    /// The delivered audit rows of `tp` whose records and every earlier one
    /// are finished, in offset order, each once: they may go on the chain.
    pub fn delivered_rows(&mut self, tp: &TopicPartition) -> Vec<(i64, DeliveredRow)> {
        let (Some(&done), Some(rows)) = (self.done.get(tp), self.rows.get_mut(tp)) else {
            return Vec::new();
        };
        let later = rows.split_off(&(done + 1));
        std::mem::replace(rows, later).into_iter().collect()
    }

    /// The last seal of `tp` whose rows are all finished and which is
    /// acknowledged, with every seal before it.
    fn covered(&mut self, tp: TopicPartition) -> Option<Store> {
        let done = *self.done.get(&tp)?;
        let marks = self.marks.get_mut(&tp)?;
        let mut last = None;
        while marks
            .front()
            .is_some_and(|m| matches!(m.state, SealState::Acked) && m.last <= done)
        {
            last = marks.pop_front();
        }
        last.map(|m| Store {
            tp,
            done: m.last,
            head: Some(m.head),
        })
    }

    /// Records, and seals waiting or sent, not yet acknowledged.
    pub fn in_flight(&self) -> usize {
        self.tracker.in_flight() + self.marks.values().map(unacked).sum::<usize>()
    }

    /// Records not yet acknowledged.
    pub fn records_in_flight(&self) -> usize {
        self.tracker.in_flight()
    }

    pub fn records_in_flight_for(&self, tps: &[TopicPartition]) -> usize {
        tps.iter().map(|tp| self.tracker.in_flight_for(tp)).sum()
    }

    pub fn in_flight_for(&self, tps: &[TopicPartition]) -> usize {
        tps.iter()
            .map(|tp| self.tracker.in_flight_for(tp) + self.marks.get(tp).map_or(0, unacked))
            .sum()
    }

    /// Revoked partitions: acks still coming for them are ignored (also
    /// once a partition is assigned here again), and their waiting seals
    /// are dropped (the next owner seals those rows).
    pub fn forget(&mut self, tps: &[TopicPartition]) {
        for tp in tps {
            *self.generations.entry(tp.clone()).or_default() += 1;
            self.tracker.forget(tp);
            self.done.remove(tp);
            self.rows.remove(tp);
            self.marks.remove(tp);
        }
    }
}

fn unacked(marks: &VecDeque<WaitingSeal>) -> usize {
    marks
        .iter()
        .filter(|m| !matches!(m.state, SealState::Acked))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(tp: &TopicPartition, offset: i64, ok: bool) -> Ack {
        Ack {
            tp: tp.clone(),
            generation: 0,
            offset,
            input_ts_ms: None,
            what: Acked::Record,
            bytes: 0,
            verdict: None,
            audit_row: None,
            result: if ok {
                Ok(())
            } else {
                Err(WorkerError::Thread("boom".into()))
            },
        }
    }

    #[test]
    fn stores_only_after_every_earlier_record_is_acked() {
        let p0 = ("answers".to_string(), 0);
        let p1 = ("answers".to_string(), 1);
        let mut b = AckLedger::default();
        for o in 5..8 {
            b.sent(&p0, o);
        }
        b.sent(&p1, 3);
        assert_eq!(
            b.acked(ack(&p0, 6, true)).unwrap(),
            None,
            "5 still in flight"
        );
        assert_eq!(
            b.acked(ack(&p1, 3, true)).unwrap(),
            Some(store(&p1, 3, None))
        );
        assert_eq!(
            b.acked(ack(&p0, 5, true)).unwrap(),
            Some(store(&p0, 6, None))
        );
        assert_eq!(b.in_flight(), 1);
        assert_eq!(b.in_flight_for(&[p0.clone(), p1.clone()]), 1);
    }

    fn store(tp: &TopicPartition, done: i64, head: Option<ChainHead>) -> Store {
        Store {
            tp: tp.clone(),
            done,
            head,
        }
    }

    fn head(seq: u64) -> ChainHead {
        ChainHead {
            next_seq: seq,
            prev: [seq as u8; 32],
        }
    }

    fn seal_ack(tp: &TopicPartition, last: i64) -> Ack {
        Ack {
            what: Acked::Seal,
            bytes: 0,
            verdict: None,
            ..ack(tp, last, true)
        }
    }

    /// A seal of `tp`'s rows up to `last`, with the head after it.
    fn seal(tp: &TopicPartition, last: i64, seq: u64) -> Seal {
        Seal {
            output: crate::kafka::outputs::seal_output(
                &tp.0,
                tp.1,
                seq - 1,
                format!("seal {seq}").into_bytes(),
                &crate::config::Topics::default(),
                &crate::config::OutputSchemaIds::default(),
            ),
            last_offset: last,
            head: head(seq),
        }
    }

    fn released(b: &mut AckLedger, tp: &TopicPartition) -> Vec<i64> {
        std::iter::from_fn(|| b.release(tp))
            .map(|s| s.last_offset)
            .collect()
    }

    #[test]
    fn a_seal_is_released_only_once_every_row_it_lists_is_acknowledged() {
        let p0 = ("answers".to_string(), 0);
        let p1 = ("answers".to_string(), 1);
        let mut b = AckLedger::new(true);
        for o in 0..6 {
            b.sent(&p0, o);
        }
        b.sent(&p1, 0);
        // Rows 0..=2 due by count at record 2, then 3..=4 by the interval.
        b.cut(&p0, seal(&p0, 2, 1));
        b.cut(&p0, seal(&p0, 4, 2));
        b.cut(&p1, seal(&p1, 0, 1));
        assert!(released(&mut b, &p0).is_empty(), "no row acknowledged");
        assert_eq!(b.in_flight(), 7 + 3, "records and waiting seals");
        assert_eq!(b.acked(ack(&p0, 2, true)).unwrap(), None);
        assert_eq!(b.acked(ack(&p0, 1, true)).unwrap(), None);
        assert!(released(&mut b, &p0).is_empty(), "row 0 unacknowledged");
        assert_eq!(b.acked(ack(&p0, 4, true)).unwrap(), None);
        assert_eq!(b.acked(ack(&p0, 0, true)).unwrap(), None, "not sent");
        assert_eq!(released(&mut b, &p0), [2], "rows 0..=2 acknowledged");
        assert!(released(&mut b, &p0).is_empty(), "sent once");
        assert!(released(&mut b, &p1).is_empty(), "partitions apart");
        assert_eq!(b.acked(ack(&p0, 3, true)).unwrap(), None, "seal unacked");
        assert_eq!(released(&mut b, &p0), [4], "the next, in chain order");
        assert_eq!(b.acked(ack(&p0, 5, true)).unwrap(), None);
        assert!(released(&mut b, &p0).is_empty(), "5 is not sealed");
        // Seals acknowledged out of order still move the offset in order.
        assert_eq!(b.acked(seal_ack(&p0, 4)).unwrap(), None, "2 unacked");
        assert_eq!(
            b.acked(seal_ack(&p0, 2)).unwrap(),
            Some(store(&p0, 4, Some(head(2)))),
            "5 is finished but unsealed: not stored"
        );
        assert_eq!(b.in_flight(), 1 + 1, "p1's record and seal");
        assert_eq!(b.in_flight_for(std::slice::from_ref(&p0)), 0);
        assert_eq!(b.acked(ack(&p1, 0, true)).unwrap(), None);
        assert_eq!(released(&mut b, &p1), [0]);
        assert_eq!(
            b.acked(seal_ack(&p1, 0)).unwrap(),
            Some(store(&p1, 0, Some(head(1))))
        );
        assert_eq!(b.in_flight(), 0);
    }

    #[test]
    fn a_seal_listing_a_failed_row_is_never_released() {
        let p0 = ("answers".to_string(), 0);
        let mut b = AckLedger::new(true);
        for o in 7..10 {
            b.sent(&p0, o);
        }
        b.cut(&p0, seal(&p0, 7, 1));
        b.cut(&p0, seal(&p0, 9, 2));
        assert_eq!(b.acked(ack(&p0, 7, true)).unwrap(), None);
        assert_eq!(released(&mut b, &p0), [7]);
        assert_eq!(
            b.acked(seal_ack(&p0, 7)).unwrap(),
            Some(store(&p0, 7, Some(head(1))))
        );
        assert!(b.acked(ack(&p0, 8, false)).is_err(), "row 8 failed");
        assert_eq!(b.acked(ack(&p0, 9, true)).unwrap(), None);
        assert!(released(&mut b, &p0).is_empty(), "the seal lists row 8");
        assert_eq!(b.in_flight(), 3, "records 8, 9 (behind 8) and the seal");
        // A failed seal stores nothing either.
        let p1 = ("answers".to_string(), 1);
        b.sent(&p1, 0);
        b.cut(&p1, seal(&p1, 0, 1));
        assert_eq!(b.acked(ack(&p1, 0, true)).unwrap(), None);
        assert_eq!(released(&mut b, &p1), [0]);
        let failed = Ack {
            result: Err(WorkerError::Thread("boom".into())),
            ..seal_ack(&p1, 0)
        };
        assert!(b.acked(failed).is_err());
        assert_eq!(b.in_flight_for(std::slice::from_ref(&p1)), 1);
        // Revoked: the waiting seal is dropped, late acks ignored.
        b.forget(&[p0.clone(), p1.clone()]);
        assert_eq!(b.acked(ack(&p0, 8, true)).unwrap(), None, "revoked");
        assert!(released(&mut b, &p0).is_empty());
        assert_eq!(b.acked(seal_ack(&p1, 0)).unwrap(), None, "revoked");
        assert_eq!(b.in_flight(), 0);
    }

    fn row_ack(tp: &TopicPartition, offset: i64, hash: u8) -> Ack {
        Ack {
            audit_row: Some(row(hash)),
            ..ack(tp, offset, true)
        }
    }

    /// A row whose bytes hash to `[hash; 32]`, written at offset `hash` of
    /// audit partition 0.
    fn row(hash: u8) -> DeliveredRow {
        DeliveredRow {
            hash: [hash; 32],
            at: Written {
                partition: 0,
                offset: i64::from(hash),
            },
        }
    }

    #[test]
    fn rows_go_on_the_chain_once_delivered_in_offset_order_with_their_delivered_hash() {
        let p0 = ("answers".to_string(), 0);
        let mut b = AckLedger::new(true);
        for o in 0..4 {
            b.sent(&p0, o);
        }
        assert_eq!(b.acked(row_ack(&p0, 1, 11)).unwrap(), None);
        assert!(b.delivered_rows(&p0).is_empty(), "row 0 not delivered");
        assert_eq!(b.acked(row_ack(&p0, 3, 13)).unwrap(), None);
        assert_eq!(b.acked(row_ack(&p0, 0, 10)).unwrap(), None);
        assert_eq!(
            b.delivered_rows(&p0),
            [(0, row(10)), (1, row(11))],
            "in offset order, 3 behind 2"
        );
        assert!(b.delivered_rows(&p0).is_empty(), "each row once");
        assert!(b.acked(ack(&p0, 2, false)).is_err(), "row 2 failed");
        assert!(b.delivered_rows(&p0).is_empty(), "3 waits behind 2");
        assert_eq!(b.records_in_flight(), 2);
        assert_eq!(b.records_in_flight_for(std::slice::from_ref(&p0)), 2);
    }

    #[test]
    fn a_failed_ack_stores_nothing_and_keeps_the_offset_in_flight() {
        let p0 = ("answers".to_string(), 0);
        let mut b = AckLedger::default();
        b.sent(&p0, 0);
        b.sent(&p0, 1);
        assert!(b.acked(ack(&p0, 0, false)).is_err());
        assert_eq!(b.acked(ack(&p0, 1, true)).unwrap(), None, "0 never done");
        assert_eq!(b.in_flight(), 2);
    }

    #[test]
    fn acks_of_an_earlier_assignment_are_dropped_once_the_partition_is_back() {
        let p0 = ("answers".to_string(), 0);
        let mut b = AckLedger::new(true);
        let old = b.generation(&p0);
        b.sent(&p0, 5);
        b.sent(&p0, 6);
        b.cut(&p0, seal(&p0, 5, 1));
        b.forget(std::slice::from_ref(&p0));
        // Assigned here again: read again from the committed offset 5.
        let new = b.generation(&p0);
        assert_ne!(new, old);
        b.sent(&p0, 5);
        let late = |a: Ack| Ack {
            generation: old,
            ..a
        };
        assert_eq!(b.acked(late(row_ack(&p0, 5, 1))).unwrap(), None);
        assert!(
            b.delivered_rows(&p0).is_empty(),
            "not this assignment's row"
        );
        assert_eq!(b.records_in_flight(), 1, "offset 5 is still in flight");
        let failed = Ack {
            result: Err(WorkerError::Thread("boom".into())),
            ..late(ack(&p0, 5, false))
        };
        assert_eq!(b.acked(failed).unwrap(), None, "dropped, failed or not");
        let now = |a: Ack| Ack {
            generation: new,
            ..a
        };
        assert_eq!(b.acked(now(row_ack(&p0, 5, 2))).unwrap(), None);
        assert_eq!(b.delivered_rows(&p0), [(5, row(2))]);
        // The new assignment's seal ends where the old one's did.
        b.cut(&p0, seal(&p0, 5, 1));
        assert_eq!(released(&mut b, &p0), [5]);
        assert_eq!(b.acked(late(seal_ack(&p0, 5))).unwrap(), None);
        assert_eq!(b.in_flight(), 1, "the new seal is not acknowledged");
        assert_eq!(
            b.acked(now(seal_ack(&p0, 5))).unwrap(),
            Some(store(&p0, 5, Some(head(1))))
        );
        assert_eq!(b.in_flight(), 0);
    }

    #[test]
    fn acks_of_revoked_partitions_are_ignored() {
        let p0 = ("answers".to_string(), 0);
        let mut b = AckLedger::default();
        b.sent(&p0, 0);
        b.forget(std::slice::from_ref(&p0));
        assert_eq!(b.acked(ack(&p0, 0, true)).unwrap(), None);
        assert_eq!(b.in_flight(), 0);
    }
}
