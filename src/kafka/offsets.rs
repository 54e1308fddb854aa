//! In-order offset tracking per partition for at-least-once delivery.
//!
//! Outputs of different records are acknowledged out of order; an input
//! offset may only be committed once it and every earlier offset of its
//! partition are done. Pure data structure, no Kafka calls.

use std::collections::{BTreeMap, HashMap};

/// (topic, partition)
pub type TopicPartition = (String, i32);

#[derive(Debug, Default)]
pub struct OffsetTracker {
    /// Per partition: offset → done?
    pending: HashMap<TopicPartition, BTreeMap<i64, bool>>,
}

impl OffsetTracker {
    pub fn start(&mut self, tp: &TopicPartition, offset: i64) {
        self.pending
            .entry(tp.clone())
            .or_default()
            .insert(offset, false);
    }

    /// Marks `offset` done; returns the highest offset now safe to commit
    /// (every offset up to it is done), if that advanced.
    pub fn complete(&mut self, tp: &TopicPartition, offset: i64) -> Option<i64> {
        let map = self.pending.get_mut(tp)?;
        if let Some(done) = map.get_mut(&offset) {
            *done = true;
        }
        let mut last = None;
        while let Some((&o, &done)) = map.first_key_value() {
            if !done {
                break;
            }
            map.remove(&o);
            last = Some(o);
        }
        last
    }

    pub fn in_flight(&self) -> usize {
        self.pending.values().map(BTreeMap::len).sum()
    }

    pub fn in_flight_for(&self, tp: &TopicPartition) -> usize {
        self.pending.get(tp).map_or(0, BTreeMap::len)
    }

    /// Forgets a partition (revoked or lost): its records' acks are ignored.
    pub fn forget(&mut self, tp: &TopicPartition) {
        self.pending.remove(tp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_only_the_contiguous_prefix() {
        let tp = ("answers".to_string(), 0);
        let mut t = OffsetTracker::default();
        for o in 10..15 {
            t.start(&tp, o);
        }
        assert_eq!(t.complete(&tp, 12), None, "10 and 11 still in flight");
        assert_eq!(t.complete(&tp, 11), None);
        assert_eq!(t.complete(&tp, 10), Some(12));
        assert_eq!(t.in_flight_for(&tp), 2);
        assert_eq!(t.complete(&tp, 14), None);
        assert_eq!(t.complete(&tp, 13), Some(14));
        assert_eq!(t.in_flight(), 0);
    }

    #[test]
    fn partitions_are_independent_and_forgettable() {
        let a = ("t".to_string(), 0);
        let b = ("t".to_string(), 1);
        let mut t = OffsetTracker::default();
        t.start(&a, 0);
        t.start(&b, 0);
        t.start(&b, 1);
        assert_eq!(t.complete(&b, 0), Some(0));
        t.forget(&a);
        assert_eq!(
            t.complete(&a, 0),
            None,
            "acks of a revoked partition are ignored"
        );
        assert_eq!(t.in_flight(), 1);
    }
}
