//! The closed Prometheus vocabulary of groundgate. Names follow
//! `groundgate_<name>_<unit>` and counters end in `_total`. Every label takes
//! its values from an enum of this crate, or (provider, model) from the
//! configured allow-lists with everything else reported as `other`, so label
//! cardinality is bounded by construction: no request ids, tenants, raw
//! error text or free-form strings ever become label values.
//!
//! Every enum label combination is created at start-up with value 0, so
//! dashboards and `rate()` work from the first scrape.
//!
//! This module only counts; it never decides anything and does no I/O.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
    Opts, Registry, TextEncoder,
};

use crate::config::MetricsConfig;
use crate::core::{
    DeadLetterKind, FindingKind, GroundingModel, Mode, OutcomeKind, OutputRole, Summary,
};

/// Class of a Kafka publish/commit/client error (decided in
/// `kafka::error`), used as the `class` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// Transient: librdkafka or the worker retries it.
    Retriable,
    /// Message exceeds the broker/topic size limit.
    TooLarge,
    /// Delivery timed out (`message.timeout.ms`).
    Timeout,
    /// Authorization, fencing, unknown topic, invalid config...: stops the worker.
    Fatal,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 4] = [
        ErrorClass::Retriable,
        ErrorClass::TooLarge,
        ErrorClass::Timeout,
        ErrorClass::Fatal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Retriable => "retriable",
            ErrorClass::TooLarge => "too_large",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Fatal => "fatal",
        }
    }

    /// Whether re-sending (or restarting) may succeed.
    pub fn is_transient(self) -> bool {
        matches!(self, ErrorClass::Retriable | ErrorClass::Timeout)
    }
}

/// Kind of consumer-group rebalance event, used as the `kind` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RebalanceKind {
    Assign,
    Revoke,
}

impl RebalanceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RebalanceKind::Assign => "assign",
            RebalanceKind::Revoke => "revoke",
        }
    }
}

/// Buckets of `groundgate_grounding_score_ratio`: tenths, so any `min_support` on
/// a tenth reads straight off a bucket.
const GROUNDING_BUCKETS: [f64; 10] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

/// Label value used for a provider or model outside the allow-list.
pub const OTHER: &str = "other";
/// `mode` label of a dead letter, which has no effective mode.
pub const NO_MODE: &str = "none";

/// The `reason` values of `groundgate_audit_chain_restarts_total` (the
/// worker's `RestartReason`, in `kafka::seals`).
pub const CHAIN_RESTART_REASONS: [&str; 3] = ["no_head", "not_utf8", "foreign"];

/// What a record's terminal record was written as, which
/// `groundgate_records_total` and `groundgate_dead_letters_total` count:
/// the core's verdict, or the too_large dead letter that replaced a
/// terminal record the broker refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub kind: OutcomeKind,
    /// `None` for a dead letter.
    pub mode: Option<Mode>,
    pub dead_letter: Option<DeadLetterKind>,
}

impl Verdict {
    /// The core's verdict on a record.
    pub fn of(kind: OutcomeKind, summary: &Summary) -> Verdict {
        Verdict {
            kind,
            mode: summary.mode,
            dead_letter: summary.dead_letter,
        }
    }

    /// A terminal record refused as too large and replaced by its bounded
    /// stand-in: a too_large dead letter.
    pub const STAND_IN: Verdict = Verdict {
        kind: OutcomeKind::DeadLetter,
        mode: None,
        dead_letter: Some(DeadLetterKind::TooLarge),
    };
}

/// Handle to every groundgate metric, registered in its own registry.
pub struct Metrics {
    registry: Registry,
    providers: HashSet<String>,
    models: HashSet<String>,
    records: IntCounterVec,
    findings: IntCounterVec,
    dead_letters: IntCounterVec,
    citations: IntCounter,
    uncited: IntCounter,
    process_seconds: Histogram,
    end_to_end_seconds: Histogram,
    published: IntCounterVec,
    publish_errors: IntCounterVec,
    commit_errors: IntCounterVec,
    client_errors: IntCounterVec,
    transactions: IntCounterVec,
    rebalances: IntCounterVec,
    assigned: IntGauge,
    in_flight_records: IntGauge,
    in_flight_bytes: IntGauge,
    grounding_model: IntGaugeVec,
    lag: IntGaugeVec,
    lag_series: Mutex<Vec<(String, String)>>,
    tokens: IntCounterVec,
    cost: prometheus::CounterVec,
    grounding_score: prometheus::HistogramVec,
    grounding_answers: IntCounterVec,
    seals: IntCounter,
    seal_failures: IntCounter,
    chain_restarts: IntCounterVec,
    last_seal: Gauge,
    _build: Gauge,
}

fn counter_vec(
    r: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<IntCounterVec, prometheus::Error> {
    let c = IntCounterVec::new(Opts::new(name, help), labels)?;
    r.register(Box::new(c.clone()))?;
    Ok(c)
}

fn histogram(
    r: &Registry,
    name: &str,
    help: &str,
    buckets: Vec<f64>,
) -> Result<Histogram, prometheus::Error> {
    let h = Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets))?;
    r.register(Box::new(h.clone()))?;
    Ok(h)
}

impl Metrics {
    pub fn new(cfg: &MetricsConfig) -> Result<Metrics, prometheus::Error> {
        let r = Registry::new();
        #[cfg(target_os = "linux")]
        r.register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ))?;

        let records = counter_vec(
            &r,
            "groundgate_records_total",
            "Input records whose terminal record was written (acknowledged, or committed with its transaction), by the outcome written and effective mode.",
            &["outcome", "mode"],
        )?;
        let findings = counter_vec(
            &r,
            "groundgate_findings_total",
            "Validation findings reported (warnings and errors), by kind.",
            &["kind"],
        )?;
        let dead_letters = counter_vec(
            &r,
            "groundgate_dead_letters_total",
            "Dead letters written, by kind (too_large includes the stand-in of an output the broker refused).",
            &["kind"],
        )?;
        let citations = IntCounter::new(
            "groundgate_citations_total",
            "Citation markers parsed (in range or not).",
        )?;
        r.register(Box::new(citations.clone()))?;
        let uncited = IntCounter::new(
            "groundgate_answers_without_citations_total",
            "Decoded answers with zero citation markers.",
        )?;
        r.register(Box::new(uncited.clone()))?;
        let process_seconds = histogram(
            &r,
            "groundgate_process_duration_seconds",
            "Time of the pure validation step per record.",
            prometheus::exponential_buckets(1e-6, 2.5, 14)?,
        )?;
        let end_to_end_seconds = histogram(
            &r,
            "groundgate_end_to_end_latency_seconds",
            "Input record timestamp to both outputs acknowledged (or the transaction committed).",
            prometheus::exponential_buckets(0.001, 2.0, 18)?,
        )?;
        let published = counter_vec(
            &r,
            "groundgate_published_total",
            "Output records acknowledged by the brokers, by topic role.",
            &["role"],
        )?;
        let publish_errors = counter_vec(
            &r,
            "groundgate_publish_errors_total",
            "Failed output deliveries, by error class.",
            &["class"],
        )?;
        let commit_errors = counter_vec(
            &r,
            "groundgate_offset_commit_errors_total",
            "Failed input offset commits (at-least-once; the outputs are re-published after a restart), by error class.",
            &["class"],
        )?;
        let client_errors = counter_vec(
            &r,
            "groundgate_kafka_client_errors_total",
            "Errors reported by the Kafka clients (brokers unreachable, poll errors; librdkafka retries them) and transaction calls that timed out (made again), by error class.",
            &["class"],
        )?;
        let transactions = counter_vec(
            &r,
            "groundgate_transactions_total",
            "Transactions finished (exactly-once), by result.",
            &["result"],
        )?;
        let rebalances = counter_vec(
            &r,
            "groundgate_rebalances_total",
            "Consumer-group rebalance events, by kind.",
            &["kind"],
        )?;
        let assigned = IntGauge::new(
            "groundgate_assigned_partitions",
            "Input partitions currently assigned to this worker.",
        )?;
        r.register(Box::new(assigned.clone()))?;
        let in_flight_records = IntGauge::new(
            "groundgate_in_flight_records",
            "Input records whose outputs are not yet acknowledged (at-least-once) or committed (exactly-once).",
        )?;
        r.register(Box::new(in_flight_records.clone()))?;
        let in_flight_bytes = IntGauge::new(
            "groundgate_in_flight_bytes",
            "Input bytes (values and keys) of the records whose outputs are not yet acknowledged (at-least-once) or committed (exactly-once).",
        )?;
        r.register(Box::new(in_flight_bytes.clone()))?;
        let grounding_model = IntGaugeVec::new(
            Opts::new(
                "groundgate_grounding_model_info",
                "Which grounding model this worker judges with: 1 for the one in force.",
            ),
            &["coefficients"],
        )?;
        r.register(Box::new(grounding_model.clone()))?;
        for which in GroundingModel::ALL {
            grounding_model.with_label_values(&[which.as_str()]);
        }
        let lag = IntGaugeVec::new(
            Opts::new(
                "groundgate_consumer_lag_records",
                "Consumer lag per assigned input partition (librdkafka statistics).",
            ),
            &["topic", "partition"],
        )?;
        r.register(Box::new(lag.clone()))?;
        let tokens = counter_vec(
            &r,
            "groundgate_llm_tokens_total",
            "LLM tokens reported by the answers, by provider, model and type (prompt/completion).",
            &["provider", "model", "type"],
        )?;
        let cost = prometheus::CounterVec::new(
            Opts::new(
                "groundgate_llm_cost_usd_total",
                "LLM cost in USD reported by the answers, by provider and model.",
            ),
            &["provider", "model"],
        )?;
        r.register(Box::new(cost.clone()))?;
        let grounding_score = prometheus::HistogramVec::new(
            HistogramOpts::new(
                "groundgate_grounding_score_ratio",
                "Grounding score of answers with at least one cited claim (minimum support over their cited claims), by provider and model.",
            )
            .buckets(GROUNDING_BUCKETS.to_vec()),
            &["provider", "model"],
        )?;
        r.register(Box::new(grounding_score.clone()))?;
        let grounding_answers = counter_vec(
            &r,
            "groundgate_grounding_answers_total",
            "Answers with at least one cited claim, by provider, model and result (unsupported: an unsupported_claim finding).",
            &["provider", "model", "result"],
        )?;
        let seals = IntCounter::new(
            "groundgate_audit_seals_total",
            "Audit seals published (acknowledged, or committed with their transaction).",
        )?;
        r.register(Box::new(seals.clone()))?;
        let seal_failures = IntCounter::new(
            "groundgate_audit_seal_failures_total",
            "Audit seals that failed to publish (their input offsets stay uncommitted).",
        )?;
        r.register(Box::new(seal_failures.clone()))?;
        let chain_restarts = counter_vec(
            &r,
            "groundgate_audit_chain_restarts_total",
            "Audit chains started again at seq 0 over an offset already committed, by why the committed metadata held no chain head: no_head (empty), not_utf8, foreign (not a groundgate head).",
            &["reason"],
        )?;
        // Every reason exported from the start, so a rate over it exists
        // before the first restart.
        for reason in CHAIN_RESTART_REASONS {
            chain_restarts.with_label_values(&[reason]);
        }
        let last_seal = Gauge::new(
            "groundgate_audit_last_seal_timestamp_seconds",
            "Unix time of the last published audit seal; 0 until the first.",
        )?;
        r.register(Box::new(last_seal.clone()))?;
        let build = Gauge::with_opts(
            Opts::new("groundgate_build_info", "Build information; always 1.")
                .const_label("version", env!("CARGO_PKG_VERSION"))
                .const_label(
                    "git_sha",
                    option_env!("GG_BUILD_GIT_SHA").unwrap_or("unknown"),
                ),
        )?;
        build.set(1.0);
        r.register(Box::new(build.clone()))?;

        // Pre-create every closed label combination at 0.
        for o in OutcomeKind::ALL {
            let modes: &[&str] = if o == OutcomeKind::DeadLetter {
                &[NO_MODE]
            } else {
                &["strict", "lenient"]
            };
            for m in modes {
                records.with_label_values(&[o.as_str(), m]);
            }
        }
        for k in FindingKind::ALL {
            findings.with_label_values(&[k.as_str()]);
        }
        for k in DeadLetterKind::ALL {
            dead_letters.with_label_values(&[k.as_str()]);
        }
        for role in OutputRole::ALL {
            published.with_label_values(&[role.as_str()]);
        }
        for c in ErrorClass::ALL {
            publish_errors.with_label_values(&[c.as_str()]);
            commit_errors.with_label_values(&[c.as_str()]);
            client_errors.with_label_values(&[c.as_str()]);
        }
        for res in ["committed", "aborted"] {
            transactions.with_label_values(&[res]);
        }
        for k in [RebalanceKind::Assign, RebalanceKind::Revoke] {
            rebalances.with_label_values(&[k.as_str()]);
        }

        Ok(Metrics {
            registry: r,
            providers: cfg.providers.iter().cloned().collect(),
            models: cfg.models.iter().cloned().collect(),
            records,
            findings,
            dead_letters,
            citations,
            uncited,
            process_seconds,
            end_to_end_seconds,
            published,
            publish_errors,
            commit_errors,
            client_errors,
            transactions,
            rebalances,
            assigned,
            in_flight_records,
            in_flight_bytes,
            grounding_model,
            lag,
            lag_series: Mutex::new(Vec::new()),
            tokens,
            cost,
            grounding_score,
            grounding_answers,
            seals,
            seal_failures,
            chain_restarts,
            last_seal,
            _build: build,
        })
    }

    fn allowed<'a>(set: &HashSet<String>, value: &'a str) -> &'a str {
        if set.contains(value) { value } else { OTHER }
    }

    /// One input record judged and written as judged:
    /// [`Metrics::observe_processing`], [`Metrics::record_answer`] and
    /// [`Metrics::record_written`] together.
    pub fn record_outcome(&self, kind: OutcomeKind, summary: &Summary, processing: Duration) {
        self.observe_processing(processing);
        self.record_answer(summary);
        self.record_written(Verdict::of(kind, summary));
    }

    /// What a record's terminal record was written as (at-least-once:
    /// acknowledged; exactly-once: committed): outcome and mode, and the
    /// dead-letter kind.
    pub fn record_written(&self, v: Verdict) {
        let mode = v.mode.map(Mode::as_str).unwrap_or(NO_MODE);
        self.records
            .with_label_values(&[v.kind.as_str(), mode])
            .inc();
        if let Some(d) = v.dead_letter {
            self.dead_letters.with_label_values(&[d.as_str()]).inc();
        }
    }

    /// The pure step's time on one record, each time it is judged.
    pub fn observe_processing(&self, processing: Duration) {
        self.process_seconds.observe(processing.as_secs_f64());
    }

    /// What one record's answer said: findings, citations, usage,
    /// grounding. Counted once per record written, as
    /// [`Metrics::record_written`].
    pub fn record_answer(&self, summary: &Summary) {
        for f in &summary.findings {
            self.findings.with_label_values(&[f.as_str()]).inc();
        }
        if summary.mode.is_none() {
            return;
        }
        self.citations.inc_by(summary.citations as u64);
        if summary.citations == 0 {
            self.uncited.inc();
        }
        let provider = Self::allowed(&self.providers, &summary.provider);
        let model = Self::allowed(&self.models, &summary.model);
        self.tokens
            .with_label_values(&[provider, model, "prompt"])
            .inc_by(summary.prompt_tokens);
        self.tokens
            .with_label_values(&[provider, model, "completion"])
            .inc_by(summary.completion_tokens);
        self.cost
            .with_label_values(&[provider, model])
            .inc_by(summary.cost_usd);
        if let Some(score) = summary.grounding_score {
            self.grounding_score
                .with_label_values(&[provider, model])
                .observe(score);
            let unsupported = summary.findings.contains(&FindingKind::UnsupportedClaim);
            let result = if unsupported {
                "unsupported"
            } else {
                "supported"
            };
            self.grounding_answers
                .with_label_values(&[provider, model, result])
                .inc();
        }
    }

    /// Input record timestamp → both outputs acknowledged.
    pub fn observe_end_to_end(&self, latency: Duration) {
        self.end_to_end_seconds.observe(latency.as_secs_f64());
    }

    pub fn record_published(&self, role: OutputRole) {
        self.published.with_label_values(&[role.as_str()]).inc();
    }

    /// Records acknowledged on the topic of `role` so far (used by `bench`
    /// to know when a run is complete).
    pub fn published(&self, role: OutputRole) -> u64 {
        self.published.with_label_values(&[role.as_str()]).get()
    }

    pub fn record_publish_error(&self, class: ErrorClass) {
        self.publish_errors
            .with_label_values(&[class.as_str()])
            .inc();
    }

    pub fn record_commit_error(&self, class: ErrorClass) {
        self.commit_errors
            .with_label_values(&[class.as_str()])
            .inc();
    }

    pub fn record_client_error(&self, class: ErrorClass) {
        self.client_errors
            .with_label_values(&[class.as_str()])
            .inc();
    }

    pub fn record_transaction_committed(&self) {
        self.transactions.with_label_values(&["committed"]).inc();
    }

    pub fn record_transaction_aborted(&self) {
        self.transactions.with_label_values(&["aborted"]).inc();
    }

    pub fn record_rebalance(&self, kind: RebalanceKind) {
        self.rebalances.with_label_values(&[kind.as_str()]).inc();
    }

    /// One audit seal published at `unix_secs`.
    pub fn record_seal_published(&self, unix_secs: f64) {
        self.seals.inc();
        self.last_seal.set(unix_secs);
    }

    /// Findings of `kind` counted so far: one per finding, as `check`
    /// counts them (used by `demo`).
    pub fn findings(&self, kind: FindingKind) -> u64 {
        self.findings.with_label_values(&[kind.as_str()]).get()
    }

    /// Audit seals published so far (used by `bench`).
    pub fn seals_published(&self) -> u64 {
        self.seals.get()
    }

    pub fn record_seal_failures(&self, n: u64) {
        self.seal_failures.inc_by(n);
    }

    /// An audit chain restarted at seq 0 (`reason`: a closed vocabulary,
    /// the worker's `RestartReason`, in `kafka::seals`).
    pub fn record_chain_restart(&self, reason: &'static str) {
        self.chain_restarts.with_label_values(&[reason]).inc();
    }

    /// Marks the grounding model in force.
    pub fn set_grounding_model(&self, model: GroundingModel) {
        for which in GroundingModel::ALL {
            self.grounding_model
                .with_label_values(&[which.as_str()])
                .set(i64::from(which == model));
        }
    }

    pub fn set_assigned_partitions(&self, n: usize) {
        self.assigned.set(n as i64);
    }

    pub fn set_in_flight(&self, records: usize, bytes: usize) {
        self.in_flight_records.set(records as i64);
        self.in_flight_bytes.set(bytes as i64);
    }

    /// Replaces the per-partition lag gauges with `lags` (topic, partition, lag);
    /// partitions no longer present are removed so cardinality stays bounded.
    pub fn set_consumer_lag(&self, lags: &[(String, i32, i64)]) {
        let mut series = self.lag_series.lock().unwrap_or_else(|p| p.into_inner());
        let new: Vec<(String, String)> = lags
            .iter()
            .map(|(t, p, _)| (t.clone(), p.to_string()))
            .collect();
        for old in series.iter() {
            if !new.contains(old) {
                let _ = self.lag.remove_label_values(&[&old.0, &old.1]);
            }
        }
        for ((t, p), (_, _, lag)) in new.iter().zip(lags) {
            self.lag.with_label_values(&[t, p]).set(*lag);
        }
        *series = new;
    }

    /// Prometheus text exposition of every registered metric.
    pub fn encode(&self) -> String {
        let mut buf = Vec::new();
        // Encoding our own well-formed families into a Vec cannot fail.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8(buf).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn metrics(providers: &[&str], models: &[&str]) -> Metrics {
        let mut cfg = Config::default().metrics;
        cfg.providers = providers.iter().map(|s| s.to_string()).collect();
        cfg.models = models.iter().map(|s| s.to_string()).collect();
        Metrics::new(&cfg).unwrap()
    }

    #[test]
    fn every_metric_is_exposed_from_the_start() {
        let text = metrics(&[], &[]).encode();
        for name in [
            "groundgate_records_total{mode=\"strict\",outcome=\"accepted\"} 0",
            "groundgate_records_total{mode=\"none\",outcome=\"dead_letter\"} 0",
            "groundgate_findings_total{kind=\"out_of_range\"} 0",
            "groundgate_findings_total{kind=\"forbidden_term\"} 0",
            "groundgate_dead_letters_total{kind=\"invalid_utf8\"} 0",
            "groundgate_dead_letters_total{kind=\"internal\"} 0",
            "groundgate_citations_total 0",
            "groundgate_answers_without_citations_total 0",
            "groundgate_process_duration_seconds_bucket",
            "groundgate_end_to_end_latency_seconds_bucket",
            "groundgate_published_total{role=\"audit\"} 0",
            "groundgate_publish_errors_total{class=\"fatal\"} 0",
            "groundgate_offset_commit_errors_total{class=\"retriable\"} 0",
            "groundgate_kafka_client_errors_total{class=\"fatal\"} 0",
            "groundgate_transactions_total{result=\"aborted\"} 0",
            "groundgate_rebalances_total{kind=\"assign\"} 0",
            "groundgate_assigned_partitions 0",
            "groundgate_in_flight_records 0",
            "groundgate_in_flight_bytes 0",
            "groundgate_audit_seals_total 0",
            "groundgate_audit_seal_failures_total 0",
            "groundgate_audit_last_seal_timestamp_seconds 0",
            "groundgate_build_info{git_sha=",
            "groundgate_grounding_model_info{coefficients=\"shipped\"} 0",
            "groundgate_grounding_model_info{coefficients=\"configured\"} 0",
        ] {
            assert!(text.contains(name), "missing {name}");
        }
    }

    #[test]
    fn the_grounding_model_in_force_is_the_one_marked() {
        let m = metrics(&[], &[]);
        m.set_grounding_model(GroundingModel::Configured);
        let text = m.encode();
        assert!(text.contains("groundgate_grounding_model_info{coefficients=\"configured\"} 1"));
        assert!(text.contains("groundgate_grounding_model_info{coefficients=\"shipped\"} 0"));
        m.set_grounding_model(GroundingModel::Shipped);
        let text = m.encode();
        assert!(text.contains("groundgate_grounding_model_info{coefficients=\"configured\"} 0"));
        assert!(text.contains("groundgate_grounding_model_info{coefficients=\"shipped\"} 1"));
    }

    #[test]
    fn usage_labels_come_from_the_allow_list_only() {
        let m = metrics(&["openai"], &["gpt-4o"]);
        let s = Summary {
            mode: Some(Mode::Strict),
            provider: "openai".into(),
            model: "gpt-4o".into(),
            prompt_tokens: 10,
            completion_tokens: 3,
            cost_usd: 0.5,
            citations: 2,
            ..Default::default()
        };
        m.record_outcome(OutcomeKind::Accepted, &s, Duration::from_micros(5));
        let rogue = Summary {
            provider: "tenant-acme-secret-model".into(),
            model: "ft:gpt-4o:acme:2026".into(),
            ..s.clone()
        };
        m.record_outcome(OutcomeKind::Accepted, &rogue, Duration::from_micros(5));
        let text = m.encode();
        assert!(text.contains(
            "groundgate_llm_tokens_total{model=\"gpt-4o\",provider=\"openai\",type=\"prompt\"} 10"
        ));
        assert!(text.contains(
            "groundgate_llm_tokens_total{model=\"other\",provider=\"other\",type=\"prompt\"} 10"
        ));
        assert!(!text.contains("acme"));
        assert!(text.contains("groundgate_records_total{mode=\"strict\",outcome=\"accepted\"} 2"));
        assert!(
            !text.contains("groundgate_grounding_score_ratio_count"),
            "no grounding score, no observation"
        );
        assert!(text.contains("groundgate_citations_total 4"));
    }

    /// Dashboards and alerts are written against these names, so a name
    /// outside the vocabulary is caught here rather than by a user's query.
    /// The standard `process_*` family of the process collector is exempt.
    #[test]
    fn every_name_is_groundgate_name_unit() {
        const UNITS: [&str; 6] = ["seconds", "bytes", "records", "partitions", "ratio", "info"];
        let m = metrics(&[], &[]);
        let families = m.registry.gather();
        assert!(families.len() > 20, "{} families", families.len());
        for f in families
            .iter()
            .filter(|f| !f.name().starts_with("process_"))
        {
            let name = f.name();
            let rest = name
                .strip_prefix("groundgate_")
                .unwrap_or_else(|| panic!("{name}: no groundgate_ prefix"));
            let counter = f.get_field_type() == prometheus::proto::MetricType::COUNTER;
            let unit = rest.rsplit('_').next().unwrap_or_default();
            if counter {
                assert_eq!(unit, "total", "{name}: a counter ends in _total");
            } else {
                assert!(
                    UNITS.contains(&unit),
                    "{name}: {unit} is not one of {UNITS:?}"
                );
                assert_ne!(rest, unit, "{name}: no name before the unit");
            }
        }
    }

    #[test]
    fn dead_letters_and_lag_series_are_bounded() {
        let m = metrics(&[], &[]);
        let s = Summary {
            dead_letter: Some(DeadLetterKind::Schema),
            ..Default::default()
        };
        m.record_outcome(OutcomeKind::DeadLetter, &s, Duration::from_micros(1));
        m.set_consumer_lag(&[("answers".into(), 0, 5), ("answers".into(), 1, 7)]);
        m.set_consumer_lag(&[("answers".into(), 1, 2)]);
        let text = m.encode();
        assert!(text.contains("groundgate_dead_letters_total{kind=\"schema\"} 1"));
        assert!(text.contains("groundgate_records_total{mode=\"none\",outcome=\"dead_letter\"} 1"));
        assert!(
            text.contains("groundgate_consumer_lag_records{partition=\"1\",topic=\"answers\"} 2")
        );
        assert!(
            !text.contains("partition=\"0\""),
            "revoked partition removed"
        );
        assert!(
            !text.contains("groundgate_llm_tokens_total{"),
            "dead letters carry no usage"
        );
    }

    #[test]
    fn grounding_score_and_unsupported_answers_by_provider_and_model() {
        let m = metrics(&["openai"], &["gpt-4o"]);
        let s = Summary {
            mode: Some(Mode::Lenient),
            provider: "openai".into(),
            model: "gpt-4o".into(),
            grounding_score: Some(0.25),
            findings: vec![FindingKind::UnsupportedClaim],
            ..Default::default()
        };
        m.record_outcome(OutcomeKind::Accepted, &s, Duration::from_micros(5));
        let ok = Summary {
            grounding_score: Some(0.95),
            findings: vec![],
            provider: "someone-else".into(),
            ..s.clone()
        };
        m.record_outcome(OutcomeKind::Accepted, &ok, Duration::from_micros(5));
        let text = m.encode();
        assert!(text.contains(
            "groundgate_grounding_score_ratio_bucket{model=\"gpt-4o\",provider=\"openai\",le=\"0.3\"} 1"
        ), "{text}");
        assert!(text.contains(
            "groundgate_grounding_score_ratio_bucket{model=\"gpt-4o\",provider=\"openai\",le=\"0.2\"} 0"
        ));
        assert!(text.contains(
            "groundgate_grounding_answers_total{model=\"gpt-4o\",provider=\"openai\",result=\"unsupported\"} 1"
        ));
        assert!(text.contains(
            "groundgate_grounding_answers_total{model=\"gpt-4o\",provider=\"other\",result=\"supported\"} 1"
        ));
        assert!(text.contains("groundgate_findings_total{kind=\"unsupported_claim\"} 1"));
        assert!(text.contains("groundgate_findings_total{kind=\"uncited_claim\"} 0"));
    }
}
