//! What a worker did, returned when it stops: counts by outcome and by
//! transaction end, and what its shutdown left undone. Plain data; the
//! worker fills it, `cmd` prints it.

use std::fmt;

use crate::core::OutcomeKind;

/// What a worker did, returned when it stops.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WorkerReport {
    pub records: u64,
    pub accepted: u64,
    pub rejected: u64,
    pub retry: u64,
    pub dead_letter: u64,
    pub transactions_committed: u64,
    pub transactions_aborted: u64,
    /// What the shutdown did not finish; empty after a clean stop.
    pub unfinished: Unfinished,
}

impl WorkerReport {
    pub(super) fn count(&mut self, kind: OutcomeKind) {
        self.records += 1;
        match kind {
            OutcomeKind::Accepted => self.accepted += 1,
            OutcomeKind::Rejected => self.rejected += 1,
            OutcomeKind::Retry => self.retry += 1,
            OutcomeKind::DeadLetter => self.dead_letter += 1,
        }
    }
}

/// What a shutdown left undone; empty when it completed: every in-flight
/// record settled, its offsets (at-least-once) or its transaction
/// (exactly-once) committed, its seals acknowledged, the producer flushed.
/// Whatever is listed here leaves input offsets uncommitted, so the next
/// owner of those partitions processes the records again.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Unfinished {
    /// Input records not settled: at-least-once, their outputs (or those of
    /// an earlier record of their partition) not all acknowledged by the
    /// drain deadline; exactly-once, the records of the transaction that was
    /// aborted instead of committed.
    pub records: usize,
    /// Audit seals not acknowledged by the drain deadline (at-least-once;
    /// under exactly-once a seal is part of its transaction).
    pub seals: usize,
    /// The final commit failed: of the offsets stored since the previous
    /// commit (at-least-once), or of the open transaction (exactly-once).
    pub commit_failed: bool,
    /// The producer's flush did not complete by the drain deadline.
    pub flush_failed: bool,
}

impl Unfinished {
    /// Whether the shutdown completed.
    pub fn is_empty(&self) -> bool {
        *self == Unfinished::default()
    }
}

impl fmt::Display for Unfinished {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.records > 0 {
            parts.push(format!("{} input record(s) not settled", self.records));
        }
        if self.seals > 0 {
            parts.push(format!("{} audit seal(s) not acknowledged", self.seals));
        }
        if self.commit_failed {
            parts.push("the final commit failed".to_string());
        }
        if self.flush_failed {
            parts.push("the producer flush did not complete".to_string());
        }
        if parts.is_empty() {
            return f.write_str("nothing left undone");
        }
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_every_part_left_undone_and_nothing_else() {
        assert!(Unfinished::default().is_empty());
        let u = Unfinished {
            records: 3,
            seals: 1,
            commit_failed: true,
            flush_failed: true,
        };
        assert!(!u.is_empty());
        assert_eq!(
            u.to_string(),
            "3 input record(s) not settled, 1 audit seal(s) not acknowledged, the final commit failed, the producer flush did not complete"
        );
        let commit = Unfinished {
            commit_failed: true,
            ..Unfinished::default()
        };
        assert!(!commit.is_empty());
        assert_eq!(commit.to_string(), "the final commit failed");
        let flush = Unfinished {
            flush_failed: true,
            ..Unfinished::default()
        };
        assert!(!flush.is_empty(), "an incomplete flush alone is incomplete");
    }
}
