//! What a worker did, returned when it stops: counts by outcome and by
//! transaction end. Plain data; the worker fills it, `cmd` prints it.

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
