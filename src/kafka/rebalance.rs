//! The consumer's context: rebalance callbacks, client errors and
//! statistics, and the [`LoopState`] they share with the consume loop. On
//! revocation the delivery settles what it can for the revoked partitions
//! ([`Delivery::on_revoke`]); losing the assignment (not handed over) makes
//! the worker not ready until partitions come back.
//!
//! The one tie between rooms that points both ways, and must: the context
//! holds the [`Delivery`] (a revocation has to settle the revoked
//! partitions' outputs and offsets before librdkafka hands them over), and
//! the delivery's consumer type names this context (`BaseConsumer<WorkerContext>`).
//!
//! Must not know the HTTP server: readiness goes out through [`Readiness`],
//! which the shell implements. Both callbacks and loop run on the consumer
//! thread; the mutex is never held across `poll`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rdkafka::ClientContext;
use rdkafka::TopicPartitionList;
use rdkafka::consumer::{BaseConsumer, Consumer as _, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, KafkaResult, RDKafkaErrorCode};
use rdkafka::statistics::Statistics;

use super::client;
use super::delivery::Delivery;
use super::error::WorkerError;
use super::events::{
    ClientError, InternalEvent, Lifecycle, Membership, OffsetCommitFailed, PartitionsAssigned,
    PartitionsRevoked, RebalanceSettled,
};
use super::offsets::TopicPartition;
use super::worker_report::WorkerReport;
use crate::metrics::Metrics;

/// Where the worker says whether it is ready (the HTTP shell's `/readyz`
/// implements it).
pub trait Readiness: Send + Sync {
    fn set_ready(&self, ready: bool);
    /// A shutdown drain started: not ready from now on, whatever
    /// `set_ready` says later.
    fn begin_drain(&self);
    /// The consume loop polled its consumer: it is alive.
    fn polled(&self);
}

/// State shared by the consume loop and the rebalance callbacks.
pub struct LoopState {
    pub delivery: Box<dyn Delivery>,
    pub fatal: Option<WorkerError>,
    pub report: WorkerReport,
}

impl LoopState {
    /// Keeps the first fatal error: the one that stopped the worker.
    pub fn fail(&mut self, e: WorkerError) {
        self.fatal.get_or_insert(e);
    }
}

pub struct WorkerContext {
    metrics: Arc<Metrics>,
    readiness: Arc<dyn Readiness>,
    input_topic: String,
    lag: bool,
    /// Bumped on every revocation, so a batch polled across one can drop
    /// records of partitions it no longer owns.
    revocations: AtomicU64,
    state: Mutex<LoopState>,
    error_log: client::LogLimiter,
    /// Failed commits reported by the consumer, logged as client errors are.
    commit_log: client::LogLimiter,
    /// When the assignment was lost (not handed over in a rebalance); cleared
    /// by the next assignment. Bounded by `unassigned_timeout`.
    lost_at: Mutex<Option<Instant>>,
    /// The group has assigned this worker partitions (possibly none) at
    /// least once.
    assigned: AtomicBool,
    unassigned_timeout: Duration,
    /// The next offset committed in a transaction, per input partition this
    /// worker owns. The producer commits a transaction's offsets, so the
    /// consumer's statistics never see them (see [`lag`]).
    committed_in_txn: Mutex<HashMap<i32, i64>>,
    /// The input partitions assigned to this worker. librdkafka's
    /// statistics go on listing a partition handed over in a rebalance,
    /// with the lag it had then: only the owner's figure is exported.
    owned: Mutex<HashSet<i32>>,
    /// The consumer is being closed: a rebalance served while it closes
    /// must not ask librdkafka for the assignment (see `post_rebalance`).
    closing: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock would already have stopped the worker.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl WorkerContext {
    pub fn new(
        metrics: Arc<Metrics>,
        readiness: Arc<dyn Readiness>,
        input_topic: String,
        lag: bool,
        delivery: Box<dyn Delivery>,
        unassigned_timeout: Duration,
    ) -> WorkerContext {
        WorkerContext {
            metrics,
            readiness,
            input_topic,
            lag,
            revocations: AtomicU64::new(0),
            state: Mutex::new(LoopState {
                delivery,
                fatal: None,
                report: WorkerReport::default(),
            }),
            error_log: client::LogLimiter::default(),
            commit_log: client::LogLimiter::default(),
            lost_at: Mutex::new(None),
            assigned: AtomicBool::new(false),
            unassigned_timeout,
            committed_in_txn: Mutex::new(HashMap::new()),
            owned: Mutex::new(HashSet::new()),
            closing: AtomicBool::new(false),
        }
    }

    /// Positions (next offset to read) a transaction committed.
    pub fn note_committed_in_txn(&self, positions: &[(TopicPartition, i64)]) {
        let mut committed = lock(&self.committed_in_txn);
        for ((topic, partition), next) in positions {
            if *topic == self.input_topic {
                let at = committed.entry(*partition).or_insert(*next);
                *at = (*at).max(*next);
            }
        }
    }

    /// How this worker stands in the group now; `static_member`: it has a
    /// `kafka.group_instance_id`.
    pub fn membership(&self, static_member: bool) -> Membership {
        let holds = self.assigned.load(Ordering::Acquire) && lock(&self.lost_at).is_none();
        match (holds, static_member) {
            (false, _) => Membership::Unassigned,
            (true, true) => Membership::Static,
            (true, false) => Membership::Member,
        }
    }

    /// The consumer is about to be closed (dropped).
    pub fn closing(&self) {
        self.closing.store(true, Ordering::Release);
    }

    /// The worker is draining (stopping, or stopped by a fatal error).
    pub fn begin_drain(&self) {
        self.readiness.begin_drain();
    }

    /// The consume loop polled the consumer.
    pub fn polled(&self) {
        self.readiness.polled();
    }

    pub fn state(&self) -> MutexGuard<'_, LoopState> {
        lock(&self.state)
    }

    pub fn revocations(&self) -> u64 {
        self.revocations.load(Ordering::Acquire)
    }

    /// Err once the partitions were lost and none came back in time.
    pub fn check_assigned(&self) -> Result<(), WorkerError> {
        let lost_for = lock(&self.lost_at).map(|t| t.elapsed());
        if lost_for.is_some_and(|d| d >= self.unassigned_timeout) {
            Lifecycle::Unassigned {
                after: self.unassigned_timeout,
            }
            .emit(&self.metrics);
            return Err(WorkerError::Unassigned(self.unassigned_timeout));
        }
        Ok(())
    }
}

/// A partition's consumer lag: librdkafka's own figure (its last stable
/// offset less the offset committed by this consumer or found at
/// assignment), unless a transaction committed a later position, which
/// librdkafka cannot see: under exactly-once the producer commits the
/// offsets, so librdkafka's figure keeps the position found at assignment
/// and grows with every record. `None` when neither is known yet.
fn lag(librdkafka_lag: i64, last_stable: i64, committed_in_txn: Option<&i64>) -> Option<i64> {
    match committed_in_txn {
        Some(&next) if last_stable >= 0 && next >= 0 => {
            let from_txn = (last_stable - next).max(0);
            Some(if librdkafka_lag >= 0 {
                librdkafka_lag.min(from_txn)
            } else {
                from_txn
            })
        }
        _ => (librdkafka_lag >= 0).then_some(librdkafka_lag),
    }
}

impl ClientContext for WorkerContext {
    fn stats(&self, stats: Statistics) {
        if !self.lag {
            return;
        }
        let in_txn = lock(&self.committed_in_txn).clone();
        let owned = lock(&self.owned).clone();
        let lags: Vec<(String, i32, i64)> = stats
            .topics
            .get(&self.input_topic)
            .map(|t| {
                t.partitions
                    .values()
                    .filter(|p| owned.contains(&p.partition))
                    .filter_map(|p| {
                        let lag = lag(p.consumer_lag, p.ls_offset, in_txn.get(&p.partition))?;
                        Some((self.input_topic.clone(), p.partition, lag))
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.metrics.set_consumer_lag(&lags);
    }

    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, log_message: &str) {
        client::log(level, fac, log_message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        ClientError {
            error: &error,
            reason,
            log: self.error_log.allow(&error),
        }
        .emit(&self.metrics);
    }
}

impl ConsumerContext for WorkerContext {
    /// The result of a commit the consumer made on its own (the periodic
    /// commits of stored offsets) or was asked to make without waiting
    /// (after a seal); a synchronous commit's failure is its caller's to
    /// report. A request that succeeded may still have failed partitions.
    fn commit_callback(&self, result: KafkaResult<()>, offsets: &TopicPartitionList) {
        let failed = match result {
            Err(e) => Some(e),
            Ok(()) => offsets
                .elements()
                .iter()
                .find_map(|e| e.error().err()?.rdkafka_error_code())
                .map(KafkaError::ConsumerCommit),
        };
        let Some(e) = failed else {
            return;
        };
        // Nothing was stored since the last commit: nothing failed.
        if e.rdkafka_error_code() == Some(RDKafkaErrorCode::NoOffset) {
            return;
        }
        OffsetCommitFailed {
            error: &e,
            log: self.commit_log.allow(&e),
        }
        .emit(&self.metrics);
    }

    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let Rebalance::Revoke(tpl) = rebalance else {
            return;
        };
        self.revocations.fetch_add(1, Ordering::AcqRel);
        let revoked: Vec<TopicPartition> = tpl
            .elements()
            .iter()
            .map(|e| (e.topic().to_string(), e.partition()))
            .collect();
        let lost = consumer.assignment_lost();
        PartitionsRevoked {
            partitions: revoked.len(),
            lost,
        }
        .emit(&self.metrics);
        if lost {
            // Not handed over: the group moved on without this member. Not
            // ready until partitions come back (see `unassigned_timeout`).
            self.readiness.set_ready(false);
            *lock(&self.lost_at) = Some(Instant::now());
        }
        {
            let mut committed = lock(&self.committed_in_txn);
            let mut owned = lock(&self.owned);
            for (_, partition) in revoked.iter().filter(|(t, _)| *t == self.input_topic) {
                committed.remove(partition);
                owned.remove(partition);
            }
        }
        let mut st = self.state();
        if let Err(e) = st.delivery.on_revoke(consumer, &revoked, lost) {
            st.fail(e);
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Assign(tpl) => {
                PartitionsAssigned {
                    partitions: tpl.count(),
                }
                .emit(&self.metrics);
                *lock(&self.lost_at) = None;
                self.assigned.store(true, Ordering::Release);
            }
            Rebalance::Revoke(_) => {}
            Rebalance::Error(e) => ClientError {
                error: e,
                reason: "rebalance",
                log: true,
            }
            .emit(&self.metrics),
        }
        // Closing, the consumer gives up every partition. Asking librdkafka
        // for the assignment then can wait for ever: the request goes to the
        // consumer group's queue, which stops being served once the group
        // has left, and the revocation may be served after that.
        let assigned = if self.closing.load(Ordering::Acquire) {
            lock(&self.owned).clear();
            0
        } else {
            let assignment = consumer.assignment().unwrap_or_default();
            *lock(&self.owned) = assignment
                .elements()
                .iter()
                .filter(|e| e.topic() == self.input_topic)
                .map(|e| e.partition())
                .collect();
            assignment.count()
        };
        RebalanceSettled { assigned }.emit(&self.metrics);
        // The group has settled: with or without partitions, this worker is
        // doing what the group asked of it; unless it lost its partitions
        // and has not been given any back yet.
        let lost = lock(&self.lost_at).is_some();
        self.readiness.set_ready(!lost);
    }
}

#[cfg(test)]
mod tests {
    use super::lag;

    #[test]
    fn lag_is_librdkafkas_until_a_transaction_commits_further() {
        // At-least-once: the consumer commits, librdkafka knows the lag.
        assert_eq!(lag(7, 100, None), Some(7));
        // Nothing committed and nothing found at assignment: unknown.
        assert_eq!(lag(-1, 100, None), None);
        // Exactly-once: librdkafka keeps the position found at assignment
        // (lag 60), a transaction committed up to 95.
        assert_eq!(lag(60, 100, Some(&95)), Some(5));
        // ... or found none at all.
        assert_eq!(lag(-1, 100, Some(&100)), Some(0));
        // Statistics older than the commit: no negative lag.
        assert_eq!(lag(-1, 90, Some(&100)), Some(0));
        // No stable offset known yet: librdkafka's figure, if any.
        assert_eq!(lag(-1, -1001, Some(&100)), None);
        assert_eq!(lag(3, -1001, Some(&100)), Some(3));
    }
}
