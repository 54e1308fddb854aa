//! The worker's internal events, after vector's `internal_events`: one typed
//! event per thing that happens, whose [`emit`](InternalEvent::emit) writes
//! the log line and updates the counter together, so neither can be added
//! without the other.
//!
//! Nothing per record is logged above `trace`, but a record groundgate
//! failed to judge (a defect, logged as an error). Must not decide anything or
//! touch Kafka: an event is a fact that already happened.

use std::time::Duration;

use rdkafka::error::KafkaError;
use tracing::{debug, error, info, trace, warn};

use super::error::classify;
use super::seals::RestartReason;
use super::worker_report::Unfinished;
use crate::core::{DeadLetterKind, Outcome, OutputRole, Summary, Terminal};
use crate::metrics::{Metrics, RebalanceKind, Verdict};

/// Something that happened in the worker, logged and counted by `emit`.
pub trait InternalEvent {
    fn emit(self, metrics: &Metrics);
}

fn since_ms(now_ms: i64, ts_ms: i64) -> Duration {
    Duration::from_millis((now_ms - ts_ms).max(0) as u64)
}

/// The core validated one input record.
pub struct RecordProcessed<'a> {
    pub outcome: &'a Outcome,
    pub took: Duration,
    /// Where the record was read: topic, partition, offset.
    pub input: (&'a str, i32, i64),
}

impl InternalEvent for RecordProcessed<'_> {
    fn emit(self, m: &Metrics) {
        trace!(outcome = self.outcome.kind.as_str(), "record processed");
        if let Terminal::DeadLetter(d) = &self.outcome.terminal
            && d.kind == DeadLetterKind::Internal
        {
            let (topic, partition, offset) = self.input;
            error!(
                topic,
                partition,
                offset,
                detail = ?d.detail,
                "a record could not be judged (a defect in groundgate, to report): it is on the dead-letter topic as received"
            );
        }
        m.observe_processing(self.took);
    }
}

/// What the answers of records being written said (findings, citations,
/// usage, grounding): at-least-once as each is published, exactly-once
/// once its transaction commits, so that the records of an aborted
/// transaction, judged again when read again, count once.
pub struct AnswersWritten<'a> {
    pub summaries: &'a [Summary],
}

impl InternalEvent for AnswersWritten<'_> {
    fn emit(self, m: &Metrics) {
        for s in self.summaries {
            m.record_answer(s);
        }
    }
}

/// One output acknowledged by the brokers (at-least-once).
pub struct OutputPublished {
    pub role: OutputRole,
}

impl InternalEvent for OutputPublished {
    fn emit(self, m: &Metrics) {
        trace!(role = self.role.as_str(), "output published");
        m.record_published(self.role);
    }
}

/// Every output of one input record acknowledged (at-least-once).
pub struct RecordDelivered {
    pub input_ts_ms: Option<i64>,
    pub now_ms: i64,
    /// What its terminal record was written as (`None`: not judged, bench
    /// modes).
    pub verdict: Option<Verdict>,
}

impl InternalEvent for RecordDelivered {
    fn emit(self, m: &Metrics) {
        if let Some(ts) = self.input_ts_ms {
            m.observe_end_to_end(since_ms(self.now_ms, ts));
        }
        if let Some(v) = self.verdict {
            m.record_written(v);
        }
    }
}

/// What the worker does after a failed publish.
#[derive(Debug, Clone, Copy)]
pub enum PublishThen {
    /// Refused as too large: the core's bounded stand-in is published instead.
    ReplaceBounded,
    /// Transient: re-sent (this many times so far).
    Resend(u32),
    /// The worker stops with the input offset uncommitted.
    Stop,
    /// Exactly-once: the open transaction is aborted and rewound.
    AbortTransaction { records: usize },
}

/// An output failed to publish.
pub struct PublishFailed<'a> {
    pub error: &'a KafkaError,
    pub topic: &'a str,
    pub input: &'a str,
    pub then: PublishThen,
}

impl InternalEvent for PublishFailed<'_> {
    fn emit(self, m: &Metrics) {
        let (e, topic, input) = (self.error, self.topic, self.input);
        m.record_publish_error(classify(e));
        match self.then {
            PublishThen::ReplaceBounded => {
                warn!(error = %e, topic, input, "output refused as too large; publishing its bounded too_large dead letter instead")
            }
            PublishThen::Resend(resends) => {
                warn!(error = %e, topic, resends, "retriable publish failure; re-sending")
            }
            PublishThen::Stop => {
                error!(error = %e, topic, input, "publish failed; stopping the worker")
            }
            PublishThen::AbortTransaction { records } => {
                warn!(error = %e, records, "publishing inside the transaction failed; aborting and rewinding to the transaction's first offsets")
            }
        }
    }
}

/// Audit seals published (at-least-once: acknowledged; exactly-once: their
/// transaction committed) at `now_ms` (unix ms).
pub struct SealsPublished {
    pub seals: u64,
    pub now_ms: i64,
}

impl InternalEvent for SealsPublished {
    fn emit(self, m: &Metrics) {
        for _ in 0..self.seals {
            m.record_seal_published(self.now_ms as f64 / 1000.0);
        }
        trace!(seals = self.seals, "audit seals published");
    }
}

/// Audit seals that were not published: a seal's delivery failed
/// (at-least-once; the worker stops, the offsets it covers uncommitted), or
/// the transaction holding them aborted (exactly-once; sealed again when the
/// records are processed again). `PublishFailed` logs the error itself.
pub struct SealsFailed<'a> {
    pub seals: u64,
    pub chain: &'a str,
}

impl InternalEvent for SealsFailed<'_> {
    fn emit(self, m: &Metrics) {
        if self.seals == 0 {
            return;
        }
        m.record_seal_failures(self.seals);
        warn!(
            seals = self.seals,
            chain = self.chain,
            "audit seals not published; the input offsets they cover stay uncommitted"
        );
    }
}

/// This worker took over an input partition's audit chain. Logged only.
pub enum ChainStarted<'a> {
    /// Continued from the head in the committed offset's metadata.
    Continued { chain: &'a str, next_seq: u64 },
    /// Nothing committed yet: a new chain.
    Fresh { chain: &'a str },
    /// An offset is committed without a readable seal head: a new chain
    /// from there. `NoHead` is expected once (first run with sealing);
    /// unreadable metadata means something else wrote to the group.
    New {
        chain: &'a str,
        committed: i64,
        reason: RestartReason,
    },
}

impl InternalEvent for ChainStarted<'_> {
    fn emit(self, m: &Metrics) {
        match self {
            ChainStarted::Continued { chain, next_seq } => {
                debug!(chain, next_seq, "continuing the audit chain")
            }
            ChainStarted::Fresh { chain } => debug!(chain, "starting a new audit chain"),
            ChainStarted::New {
                chain,
                committed,
                reason,
            } => {
                m.record_chain_restart(reason.as_str());
                match reason {
                    RestartReason::NoHead => warn!(
                        chain,
                        committed,
                        reason = reason.as_str(),
                        "the committed offset carries no audit seal head (first run with sealing, or an offset reset by another tool): starting a new audit chain at seq 0; audit rows before this offset stay unsealed (audit verify --from {committed})"
                    ),
                    RestartReason::NotUtf8 | RestartReason::Foreign => error!(
                        chain,
                        committed,
                        reason = reason.as_str(),
                        "AUDIT CHAIN RESTARTED: the committed offset's metadata is not a groundgate seal head ({}), so something other than groundgate wrote to this consumer group; starting a new audit chain at seq 0, the chain before it can no longer be anchored to the group (audit verify --group reports it)",
                        if reason == RestartReason::NotUtf8 {
                            "not UTF-8"
                        } else {
                            "unrecognised text"
                        }
                    ),
                }
            }
        }
    }
}

/// A commit of stored offsets failed (at-least-once): a synchronous one
/// (revocation, shutdown), or one whose result the consumer reports later
/// (the periodic commits, the one after each seal). Counted every time;
/// logged unless `log` is false, which the consumer's reports are while the
/// same error repeats (a commit every `commit_interval_ms`).
pub struct OffsetCommitFailed<'a> {
    pub error: &'a KafkaError,
    pub log: bool,
}

impl InternalEvent for OffsetCommitFailed<'_> {
    fn emit(self, m: &Metrics) {
        m.record_commit_error(classify(self.error));
        if self.log {
            warn!(error = %self.error, "offset commit failed; outputs already published will be re-published after a restart (at-least-once)");
        }
    }
}

/// A Kafka client reported an error (librdkafka retries it). Counted every
/// time; logged at most once per `ERROR_LOG_EVERY` (`log`), because brokers
/// being away would otherwise log thousands of lines a minute.
pub struct ClientError<'a> {
    pub error: &'a KafkaError,
    pub reason: &'a str,
    pub log: bool,
}

impl InternalEvent for ClientError<'_> {
    fn emit(self, m: &Metrics) {
        m.record_client_error(classify(self.error));
        if self.log {
            let hint = super::error::retry_hint(self.error);
            warn!(error = %self.error, reason = self.reason, "Kafka client error ({hint})");
        }
    }
}

/// Partitions taken from this worker (`lost`: not handed over).
pub struct PartitionsRevoked {
    pub partitions: usize,
    pub lost: bool,
}

impl InternalEvent for PartitionsRevoked {
    fn emit(self, m: &Metrics) {
        m.record_rebalance(RebalanceKind::Revoke);
        info!(
            partitions = self.partitions,
            lost = self.lost,
            "partitions revoked"
        );
    }
}

/// Partitions given to this worker.
pub struct PartitionsAssigned {
    pub partitions: usize,
}

impl InternalEvent for PartitionsAssigned {
    fn emit(self, m: &Metrics) {
        m.record_rebalance(RebalanceKind::Assign);
        info!(partitions = self.partitions, "partitions assigned");
    }
}

/// A rebalance finished; this worker now holds `assigned` partitions.
pub struct RebalanceSettled {
    pub assigned: usize,
}

impl InternalEvent for RebalanceSettled {
    fn emit(self, m: &Metrics) {
        debug!(assigned = self.assigned, "rebalance settled");
        m.set_assigned_partitions(self.assigned);
    }
}

/// The transaction calls that may be made again after a timeout.
#[derive(Debug, Clone, Copy)]
pub enum TxnCall {
    SendOffsets,
    Commit,
    Abort,
}

impl TxnCall {
    fn as_str(self) -> &'static str {
        match self {
            TxnCall::SendOffsets => "send_offsets_to_transaction",
            TxnCall::Commit => "commit_transaction",
            TxnCall::Abort => "abort_transaction",
        }
    }
}

/// A transaction call failed in a way librdkafka says the same call may
/// retry (it timed out); it is made again. Counted with the client errors
/// and logged every time: it happens at most once per call timeout.
pub struct TransactionCallRetried<'a> {
    pub call: TxnCall,
    pub error: &'a KafkaError,
}

impl InternalEvent for TransactionCallRetried<'_> {
    fn emit(self, m: &Metrics) {
        m.record_client_error(classify(self.error));
        warn!(error = %self.error, call = self.call.as_str(), "transaction call did not complete; making it again (the brokers may still be finishing it)");
    }
}

/// A transaction committed with its outputs and input positions.
pub struct TransactionCommitted<'a> {
    pub records: usize,
    /// Outputs per role, in [`OutputRole::ALL`] order.
    pub published: [u64; 4],
    pub input_ts_ms: &'a [i64],
    /// What the terminal records of its records were written as.
    pub verdicts: &'a [Verdict],
    /// What its records' answers said.
    pub answers: &'a [Summary],
    /// Audit seals committed with it.
    pub seals: u64,
    pub now_ms: i64,
}

impl InternalEvent for TransactionCommitted<'_> {
    fn emit(self, m: &Metrics) {
        m.record_transaction_committed();
        SealsPublished {
            seals: self.seals,
            now_ms: self.now_ms,
        }
        .emit(m);
        for (role, n) in OutputRole::ALL.into_iter().zip(self.published) {
            for _ in 0..n {
                m.record_published(role);
            }
        }
        for &ts in self.input_ts_ms {
            m.observe_end_to_end(since_ms(self.now_ms, ts));
        }
        for &v in self.verdicts {
            m.record_written(v);
        }
        AnswersWritten {
            summaries: self.answers,
        }
        .emit(m);
        debug!(records = self.records, "transaction committed");
    }
}

/// A transaction aborted; its partitions rewind to their first offsets.
pub struct TransactionAborted<'a> {
    pub partitions: usize,
    /// The commit error that caused it, when the commit itself failed.
    pub cause: Option<&'a KafkaError>,
    /// Aborted by a stop that could not commit it: nothing is rewound, the
    /// next owner of the partitions reads its records again.
    pub at_stop: bool,
}

impl InternalEvent for TransactionAborted<'_> {
    fn emit(self, m: &Metrics) {
        m.record_transaction_aborted();
        match (self.cause, self.at_stop) {
            (_, true) => warn!(
                partitions = self.partitions,
                "open transaction aborted at stop; its records are read again from the last committed offsets"
            ),
            (Some(e), false) => {
                warn!(error = %e, partitions = self.partitions, "transaction failed; aborted and rewinding to the last committed offsets")
            }
            (None, false) => debug!(
                partitions = self.partitions,
                "transaction aborted; rewinding"
            ),
        }
    }
}

/// Start and stop of the worker. Logged only, on purpose: they happen once
/// per process, a counter of them would rarely be scraped before the exit,
/// and the exit status and error message already carry the outcome.
pub enum Lifecycle<'a> {
    Started {
        input: &'a str,
        group: &'a str,
        guarantee: &'a dyn std::fmt::Display,
    },
    /// No partitions came back within `kafka.unassigned_timeout_ms`.
    Unassigned { after: Duration },
    /// The consumer is closed; what that did to the group depends on how
    /// the worker stood in it.
    ConsumerClosed { membership: Membership },
    /// The shutdown completed: everything settled, committed and flushed.
    StoppedCleanly { records: u64 },
    /// The shutdown did not complete: `unfinished` says what was left.
    StoppedIncomplete {
        records: u64,
        unfinished: Unfinished,
        /// Why the producer flush did not complete, when it did not.
        flush_error: Option<&'a KafkaError>,
    },
}

/// How the worker stood in the consumer group when it closed its consumer.
/// Whether a leave request reached the group coordinator is not known to
/// the worker, so none of these claims that it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Membership {
    /// A dynamic member holding an assignment (possibly empty).
    Member,
    /// A static member (`kafka.group_instance_id`): it does not leave.
    Static,
    /// No partitions: none assigned, or the assignment was lost.
    Unassigned,
}

impl InternalEvent for Lifecycle<'_> {
    fn emit(self, _: &Metrics) {
        match self {
            Lifecycle::Started {
                input,
                group,
                guarantee,
            } => info!(input, group, guarantee = %guarantee, "worker started"),
            Lifecycle::Unassigned { after } => {
                error!(after = ?after, "no partitions assigned since they were lost; stopping")
            }
            Lifecycle::ConsumerClosed { membership } => match membership {
                Membership::Member => info!(
                    "consumer closed; its partitions go to the rest of the group at the next rebalance if its leave request reached the group coordinator, or after kafka.session_timeout_ms if it did not"
                ),
                Membership::Static => info!(
                    "consumer closed; as a static member (kafka.group_instance_id) it stays in the group, its partitions waiting for it, until kafka.session_timeout_ms passes without it"
                ),
                Membership::Unassigned => info!(
                    "consumer closed; it held no partitions of the consumer group (none assigned, or its assignment was lost), so it had none to hand over"
                ),
            },
            Lifecycle::StoppedCleanly { records } => info!(records, "worker stopped cleanly"),
            Lifecycle::StoppedIncomplete {
                records,
                unfinished: u,
                flush_error,
            } => warn!(
                records,
                unsettled = u.records,
                unacknowledged_seals = u.seals,
                commit_failed = u.commit_failed,
                flush_error = flush_error.map(|e| e.to_string()).as_deref(),
                "worker stopped with its shutdown incomplete ({u}): the input records whose offsets were not committed will be processed again by the next owner of their partitions"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_are_counted_and_stamped() {
        let m = Metrics::new(&crate::config::Config::default().metrics).unwrap();
        SealsPublished {
            seals: 2,
            now_ms: 1_700_000_000_500,
        }
        .emit(&m);
        SealsFailed {
            seals: 3,
            chain: "answers/0",
        }
        .emit(&m);
        let text = m.encode();
        assert!(text.contains("groundgate_audit_seals_total 2"), "{text}");
        assert!(text.contains("groundgate_audit_seal_failures_total 3"));
        assert!(text.contains("groundgate_audit_last_seal_timestamp_seconds 1700000000.5"));
    }

    #[test]
    fn a_failed_offset_commit_is_counted() {
        let m = Metrics::new(&crate::config::Config::default().metrics).unwrap();
        let e = KafkaError::ConsumerCommit(rdkafka::error::RDKafkaErrorCode::RequestTimedOut);
        OffsetCommitFailed {
            error: &e,
            log: true,
        }
        .emit(&m);
        assert!(
            m.encode()
                .contains("groundgate_offset_commit_errors_total{class=\"timeout\"} 1")
        );
    }
}
