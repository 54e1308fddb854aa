//! From [`RawConfig`] to [`Config`]: every value checked, defaults filled
//! in, every problem listed. Reads nothing: what it needs from the
//! environment arrives as a [`Host`].

use std::net::SocketAddr;
use std::time::Duration;

use super::*;
use super::{managed, security};
use crate::core::grounding::model::{COEFFICIENTS, FEATURES, coefficient_names};
use crate::core::process::MIN_OUTPUT_BYTES;
use crate::core::pseudonym::PseudonymField;
use crate::core::{CoreSettings, GroundingSettings, PolicySettings, ValueFraming};

/// What validation needs to know about the machine it runs on, read by the
/// shell (`RawConfig::load_from_process`) and passed in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Host {
    /// The host (pod) name: the default transactional id is `<group>-<host>`,
    /// stable across restarts of one pod so a restart fences its zombie.
    pub name: Option<String>,
}

impl RawConfig {
    /// Checks every value and fills defaults; lists every problem found.
    /// Runs as on an anonymous host (transactional id `<group>-local`).
    pub fn validate(self) -> Result<Config, ConfigError> {
        self.validate_on(&Host::default())
    }

    /// [`RawConfig::validate`] with what the shell knows about this host.
    pub fn validate_on(self, host: &Host) -> Result<Config, ConfigError> {
        let (config, problems) = self.validate_listing(host);
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError::Invalid(problems))
        }
    }

    /// The configuration and every problem found in it. Where a value is
    /// invalid the configuration holds it, or its default, all the same:
    /// with problems listed, only what does not depend on an invalid value
    /// may be read from it (the commands that connect check the files,
    /// secrets and passthrough properties that were set).
    pub(super) fn validate_listing(self, host: &Host) -> (Config, Vec<String>) {
        let mut problems = Vec::new();
        let d = PolicySettings::default();
        let p = &self.policy;
        let min_confidence = p.min_confidence.unwrap_or(d.min_confidence);
        if !(0.0..=1.0).contains(&min_confidence) {
            problems.push(format!(
                "policy.min_confidence = {min_confidence}: must be between 0 and 1"
            ));
        }
        let max_answer_bytes = p.max_answer_bytes.unwrap_or(d.max_answer_bytes as u64);
        if max_answer_bytes == 0 {
            problems.push("policy.max_answer_bytes = 0: must be at least 1".to_string());
        }
        let forbidden_terms = p.forbidden_terms.clone().unwrap_or_default();
        for (i, t) in forbidden_terms.iter().enumerate() {
            if t.trim().is_empty() {
                problems.push(format!(
                    "policy.forbidden_terms[{i}] is blank: every term must contain a non-space character"
                ));
            }
        }
        let a = &p.actions;
        let policy = PolicySettings {
            min_confidence,
            low_confidence: a.low_confidence.unwrap_or(d.low_confidence),
            max_answer_bytes: max_answer_bytes as usize,
            too_long: a.too_long.unwrap_or(d.too_long),
            empty_answer: a.empty_answer.unwrap_or(d.empty_answer),
            require_provenance: p.require_provenance.unwrap_or(d.require_provenance),
            missing_provenance: a.missing_provenance.unwrap_or(d.missing_provenance),
            forbidden_terms,
            forbidden_term: a.forbidden_term.unwrap_or(d.forbidden_term),
            prior_missing: a.prior_missing.unwrap_or(d.prior_missing),
            prior_unexpected: a.prior_unexpected.unwrap_or(d.prior_unexpected),
        };

        let dc = CoreSettings::default();
        let max_record_bytes = self.max_record_bytes.unwrap_or(dc.max_record_bytes as u64);
        if !(1024..=(64 << 20)).contains(&max_record_bytes) {
            problems.push(format!(
                "max_record_bytes = {max_record_bytes}: must be between 1024 and 67108864 (64 MiB)"
            ));
        }
        let max_output_bytes = self.max_output_bytes.unwrap_or(dc.max_output_bytes as u64);
        if !(MIN_OUTPUT_BYTES as u64..=(64 << 20)).contains(&max_output_bytes) {
            problems.push(format!(
                "max_output_bytes = {max_output_bytes}: must be between {MIN_OUTPUT_BYTES} and 67108864 (64 MiB)"
            ));
        } else if max_record_bytes > max_output_bytes {
            problems.push(format!(
                "max_record_bytes = {max_record_bytes} is larger than max_output_bytes = {max_output_bytes}: a dead letter forwards the original record, so raise max_output_bytes to at least {max_record_bytes} or lower max_record_bytes"
            ));
        }
        let policy_version = self.policy_version.unwrap_or(dc.policy_version);
        if policy_version.trim().is_empty() {
            problems
                .push("policy_version is blank: give the rules a name, e.g. \"2026-11-01\"".into());
        }
        if policy_version.len() > 256 {
            problems.push(format!(
                "policy_version is {} bytes: at most 256 (it is stamped on every audit row)",
                policy_version.len()
            ));
        }
        let core = CoreSettings {
            policy,
            non_citing_providers: self.non_citing_providers.unwrap_or_default(),
            include_answer: self.include_answer.unwrap_or(false),
            policy_version,
            max_record_bytes: max_record_bytes as usize,
            value_framing: validate_framing(
                self.value_framing,
                self.value_schema_ids,
                &mut problems,
            ),
            max_output_bytes: max_output_bytes as usize,
            grounding: validate_grounding(&self.grounding, &mut problems),
            // Set with the key, once the shell has read it (see
            // `RawConfig::load_writing_audit`).
            pseudonyms: None,
        };

        let mut kafka = validate_kafka(self.kafka, max_output_bytes as usize, host, &mut problems);
        kafka.output_schema_ids =
            validate_output_schema_ids(&self.output_schema_ids, &mut problems);
        let metrics = validate_metrics(self.metrics, &mut problems);
        let log = LogConfig {
            format: self.log.format.unwrap_or_default(),
            level: self.log.level.unwrap_or_else(|| "info".to_string()),
        };
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&log.level) {
            problems.push(format!("log.level = {:?}: {e}", log.level));
        }

        let audit = validate_audit(self.audit, &mut problems);

        let config = Config {
            core,
            kafka,
            metrics,
            log,
            audit,
        };
        (config, problems)
    }
}
/// `value_framing` and its schema-id allow-list.
fn validate_framing(
    framing: Option<Framing>,
    schema_ids: Option<Vec<i64>>,
    problems: &mut Vec<String>,
) -> ValueFraming {
    let framing = framing.unwrap_or_default();
    let schema_ids = schema_ids.map(|ids| {
        if ids.is_empty() {
            problems.push(
                "value_schema_ids = []: lists no id, so every framed record would be a dead letter; list the ids of your producers' schemas, or remove the key to read any".into(),
            );
        }
        ids.iter()
            .enumerate()
            .filter_map(|(i, id)| schema_id(&format!("value_schema_ids[{i}]"), *id, problems))
            .collect::<Vec<u32>>()
    });
    match framing {
        Framing::None => {
            if schema_ids.is_some() {
                problems.push(
                    "value_schema_ids is set but value_framing is \"none\": schema ids are read from Schema Registry framed values only; set value_framing = \"schema-registry\", or remove value_schema_ids".into(),
                );
            }
            ValueFraming::None
        }
        Framing::SchemaRegistry => ValueFraming::SchemaRegistry { schema_ids },
    }
}

fn validate_audit(raw: RawAudit, problems: &mut Vec<String>) -> AuditConfig {
    let d = AuditConfig::default();
    let max = crate::audit::seal::MAX_SEAL_EVERY as u64;
    let seal_every = raw.seal_every.unwrap_or(d.seal_every as u64);
    if !(1..=max).contains(&seal_every) {
        problems.push(format!(
            "audit.seal_every = {seal_every}: must be between 1 and {max} (a seal lists every row it covers)"
        ));
    }
    let interval_ms = in_range(
        "audit.seal_interval_ms",
        raw.seal_interval_ms
            .unwrap_or(d.seal_interval.as_millis() as u64),
        100..=3_600_000,
        problems,
    );
    let mut pseudonymize = Vec::new();
    for name in raw.pseudonymize.iter().flatten() {
        match PseudonymField::parse(name) {
            Some(f) => pseudonymize.push(f),
            None => problems.push(format!(
                "audit.pseudonymize: {name:?} is not a field that can be pseudonymised; the fields are {}",
                PseudonymField::ALL.map(PseudonymField::as_str).join(", ")
            )),
        }
    }
    pseudonymize.sort();
    pseudonymize.dedup();
    let listed = raw.pseudonymize.as_ref().is_some_and(|f| !f.is_empty());
    match (listed, raw.pseudonym_key_file.is_some()) {
        (true, false) => problems.push(
            "audit.pseudonymize is set but audit.pseudonym_key_file is not: pseudonyms need a secret key (e.g. `openssl rand -hex 32 > pseudonym.key`)".to_string(),
        ),
        (false, true) => problems.push(
            "audit.pseudonym_key_file is set but audit.pseudonymize lists no field: name the fields to pseudonymise, e.g. pseudonymize = [\"user\", \"question\"]".to_string(),
        ),
        _ => {}
    }
    AuditConfig {
        seal_every: seal_every.clamp(1, max) as usize,
        seal_interval: Duration::from_millis(interval_ms),
        signing_key_file: raw.signing_key_file,
        signing_key: None,
        pseudonymize,
        pseudonym_key_file: raw.pseudonym_key_file,
    }
}

fn validate_grounding(raw: &RawGrounding, problems: &mut Vec<String>) -> GroundingSettings {
    let d = GroundingSettings::default();
    let mut range = |name: &str, v: Option<f64>, default: f64, max: f64| {
        let v = v.unwrap_or(default);
        if !(v.is_finite() && (0.0..=max).contains(&v)) {
            problems.push(format!(
                "grounding.{name} = {v}: must be between 0 and {max}"
            ));
        }
        v
    };
    let min_support = range("min_support", raw.min_support, d.min_support, 1.0);
    // The hand-set weights gave way to a fitted model: a file that still
    // sets one says which key does the job now.
    for (name, set) in raw.removed_keys() {
        if set {
            problems.push(format!(
                "grounding.{name} was removed: the evidence weights are fitted (`groundgate eval --fit`, see docs/grounding.md); use grounding.min_support to flag more or fewer claims, or grounding.coefficients for a model fitted on your own labelled answers"
            ));
        }
    }
    let coefficients = raw
        .coefficients
        .as_ref()
        .map_or(d.coefficients, |set| coefficients(set, problems));
    GroundingSettings {
        enabled: raw.enabled.unwrap_or(d.enabled),
        min_support,
        unsupported_claim: raw.unsupported_claim.unwrap_or(d.unsupported_claim),
        uncited_claim: raw
            .uncited_claim
            .map_or(d.uncited_claim, OptionalAction::action),
        strict_numbers: raw.strict_numbers.unwrap_or(d.strict_numbers),
        coefficients,
    }
}

/// `grounding.coefficients` as the model's array: every name of the model
/// (the intercept and each feature) set to a finite number, no other name.
/// A partial set would mix two fits, so none is filled in from the shipped
/// model.
fn coefficients(set: &BTreeMap<String, f64>, problems: &mut Vec<String>) -> [f64; FEATURES + 1] {
    let names: Vec<&str> = coefficient_names().collect();
    let mut out = COEFFICIENTS;
    let mut lacking = Vec::new();
    for (slot, name) in out.iter_mut().zip(&names) {
        match set.get(*name) {
            Some(v) if v.is_finite() => *slot = *v,
            Some(v) => problems.push(format!(
                "grounding.coefficients.{name} = {v}: must be a finite number"
            )),
            None => lacking.push(*name),
        }
    }
    if !lacking.is_empty() {
        problems.push(format!(
            "grounding.coefficients lacks {}: set all of {}, as `groundgate eval --fit` prints them",
            lacking.join(", "),
            names.join(", ")
        ));
    }
    for name in set.keys().filter(|k| !names.contains(&k.as_str())) {
        problems.push(format!(
            "grounding.coefficients.{name}: the model has no such coefficient (it has {})",
            names.join(", ")
        ));
    }
    out
}

/// librdkafka takes every setting as a C string, which a NUL byte would
/// end early: the client refuses such a value with nothing more than "FFI
/// nul error", so each is named here instead. A passthrough value is not
/// shown (it may be a secret), only its key.
fn nul_free(
    settings: &[(&str, Option<&str>)],
    properties: &std::collections::BTreeMap<String, String>,
    problems: &mut Vec<String>,
) {
    use security::NUL_REFUSED as WHY;
    for (key, value) in settings {
        if value.is_some_and(|v| v.contains('\0')) {
            problems.push(format!("{key} {WHY}"));
        }
    }
    for (key, value) in properties {
        if key.contains('\0') {
            problems.push(format!("kafka.properties: the name {key:?} {WHY}"));
        } else if value.contains('\0') {
            problems.push(format!(
                "kafka.properties {key:?} (-X {key}=...): its value {WHY}"
            ));
        }
    }
}

/// Room left in a Kafka message beside an output of `max_output_bytes` for
/// its key (a request id, or a dead letter's original key) and headers.
pub const MESSAGE_HEADROOM_BYTES: usize = 64 << 10;

fn validate_kafka(
    raw: RawKafka,
    max_output_bytes: usize,
    host: &Host,
    problems: &mut Vec<String>,
) -> KafkaConfig {
    let security = security::validate_security(&raw, problems);
    let brokers = raw.brokers.filter(|b| !b.trim().is_empty());
    if let Some(b) = &brokers {
        for part in b.split(',') {
            let part = part.trim();
            let ok = part
                .rsplit_once(':')
                .map(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
                .unwrap_or(false);
            if !ok {
                problems.push(format!(
                    "kafka.brokers: {part:?} is not host:port (example: kafka-1:9092,kafka-2:9092)"
                ));
            }
        }
    }
    let group_id = raw.group_id.unwrap_or_else(|| "groundgate".into());
    if group_id.trim().is_empty() {
        problems.push("kafka.group_id is blank".into());
    }
    let client_id = raw.client_id.unwrap_or_else(|| "groundgate".into());
    if client_id.trim().is_empty() {
        problems.push("kafka.client_id is blank".into());
    }
    let transactional_id = raw.transactional_id.unwrap_or_else(|| {
        // Stable across restarts of the same pod/host so a restarted worker
        // fences its zombie predecessor.
        let host = host.name.as_deref().unwrap_or("local");
        format!("{group_id}-{host}")
    });
    let max_in_flight = in_range(
        "kafka.max_in_flight",
        raw.max_in_flight.unwrap_or(1000),
        1..=100_000,
        problems,
    );
    let max_in_flight_bytes = in_range(
        "kafka.max_in_flight_bytes",
        raw.max_in_flight_bytes.unwrap_or(32 << 20),
        (1 << 20)..=(16 << 30),
        problems,
    );
    let commit_interval_ms = in_range(
        "kafka.commit_interval_ms",
        raw.commit_interval_ms.unwrap_or(1000),
        10..=600_000,
        problems,
    );
    let commit_max_records = in_range(
        "kafka.commit_max_records",
        raw.commit_max_records.unwrap_or(5000),
        1..=1_000_000,
        problems,
    );
    let drain_deadline_ms = in_range(
        "kafka.drain_deadline_ms",
        raw.drain_deadline_ms.unwrap_or(10_000),
        100..=600_000,
        problems,
    );
    // The core bounds every output value by max_output_bytes; the producer's
    // message.max.bytes must hold that plus the key and headers.
    let needed = (max_output_bytes + MESSAGE_HEADROOM_BYTES) as u64;
    let max_message_bytes = raw.max_message_bytes.unwrap_or(needed.max(2 << 20));
    if max_message_bytes < needed {
        problems.push(format!(
            "kafka.max_message_bytes = {max_message_bytes} is smaller than max_output_bytes = {max_output_bytes} plus {MESSAGE_HEADROOM_BYTES} bytes for key and headers: raise kafka.max_message_bytes to at least {needed} (and the output topics' max.message.bytes on the brokers), or lower max_output_bytes"
        ));
    }
    let d = Topics::default();
    let t = raw.topics;
    let topics = Topics {
        input: t.input.unwrap_or(d.input),
        final_: t.final_.unwrap_or(d.final_),
        retry: t.retry.unwrap_or(d.retry),
        audit: t.audit.unwrap_or(d.audit),
        dead_letter: t.dead_letter.unwrap_or(d.dead_letter),
    };
    let names = [
        ("input", &topics.input),
        ("final", &topics.final_),
        ("retry", &topics.retry),
        ("audit", &topics.audit),
        ("dead_letter", &topics.dead_letter),
    ];
    for (role, name) in names {
        if name.is_empty()
            || name.len() > 249
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            problems.push(format!(
                "kafka.topics.{role} = {name:?}: a topic name is 1-249 characters of [a-zA-Z0-9._-]"
            ));
        }
    }
    for (i, (ra, a)) in names.iter().enumerate() {
        for (rb, b) in &names[i + 1..] {
            if a == b {
                problems.push(format!(
                    "kafka.topics.{ra} and kafka.topics.{rb} are both {a:?}: every role needs its own topic"
                ));
            }
        }
    }
    for key in raw.properties.keys() {
        if let Some(m) = managed::managed(key) {
            let instead = match m.instead {
                Some(s) => format!("; use {s} instead"),
                None => "; remove it".to_string(),
            };
            problems.push(format!(
                "kafka.properties {key:?} (-X {key}=...) is managed by groundgate: {} ({}){instead}",
                m.key, m.why
            ));
        } else if let Some(m) = managed::secret(key) {
            problems.push(format!(
                "kafka.properties {key:?} (-X {key}=...) would put a secret ({}) on the command line or in the configuration file: use {} instead",
                m.why,
                m.instead.unwrap_or("a typed key")
            ));
        }
    }
    let session_timeout_ms = raw.session_timeout_ms.unwrap_or(10_000);
    if !(1_000..=3_600_000).contains(&session_timeout_ms) {
        problems.push(format!(
            "kafka.session_timeout_ms = {session_timeout_ms}: must be between 1000 and 3600000 (brokers allow 6000..=1800000 by default)"
        ));
    }
    let group_instance_id = raw.group_instance_id.filter(|s| !s.trim().is_empty());
    // The worker names its seals so, and `audit verify` holds a chain with
    // seals named `check` to `check`'s rules (a final seal, no redelivery).
    let seal_worker = crate::audit::seal::worker_name(group_instance_id.as_deref(), &client_id);
    if seal_worker == crate::audit::seal::CHECK_WORKER {
        problems.push(format!(
            "kafka.{} = \"{seal_worker}\": the worker names its audit seals so, and that name is reserved for `groundgate check`'s seals",
            if group_instance_id.is_some() {
                "group_instance_id"
            } else {
                "client_id"
            }
        ));
    }
    let propagate_headers = propagated_headers(raw.propagate_headers, problems);
    nul_free(
        &[
            ("kafka.brokers", brokers.as_deref()),
            ("kafka.group_id", Some(&group_id)),
            ("kafka.client_id", Some(&client_id)),
            ("kafka.transactional_id", Some(&transactional_id)),
            ("kafka.group_instance_id", group_instance_id.as_deref()),
            ("kafka.sasl_username", security.username.as_deref()),
            (
                "kafka.oidc_token_endpoint",
                security.oidc.as_ref().map(|o| o.token_endpoint.as_str()),
            ),
            (
                "kafka.oidc_client_id",
                security.oidc.as_ref().map(|o| o.client_id.as_str()),
            ),
            (
                "kafka.oidc_scope",
                security.oidc.as_ref().and_then(|o| o.scope.as_deref()),
            ),
        ],
        &raw.properties,
        problems,
    );
    let unassigned_timeout_ms = in_range(
        "kafka.unassigned_timeout_ms",
        raw.unassigned_timeout_ms.unwrap_or(60_000),
        1_000..=3_600_000,
        problems,
    );
    KafkaConfig {
        brokers,
        group_id,
        client_id,
        guarantee: raw.guarantee.unwrap_or_default(),
        transactional_id,
        max_in_flight: max_in_flight as usize,
        max_in_flight_bytes: max_in_flight_bytes as usize,
        commit_interval: Duration::from_millis(commit_interval_ms),
        commit_max_records: commit_max_records as usize,
        drain_deadline: Duration::from_millis(drain_deadline_ms),
        max_message_bytes: max_message_bytes as usize,
        session_timeout: Duration::from_millis(session_timeout_ms),
        group_instance_id,
        unassigned_timeout: Duration::from_millis(unassigned_timeout_ms),
        topics,
        output_schema_ids: OutputSchemaIds::default(),
        propagate_headers,
        security,
        properties: raw.properties,
    }
}

/// The input headers copied onto the outputs when none are configured:
/// the W3C trace context, so a trace continues through groundgate.
pub const DEFAULT_PROPAGATED_HEADERS: [&str; 2] = ["traceparent", "tracestate"];

/// Most header names `kafka.propagate_headers` may list.
const MAX_PROPAGATED_NAMES: usize = 32;

/// `kafka.propagate_headers`: names of 1-255 bytes, each once (without
/// regard to case, as they are matched), none of groundgate's own.
fn propagated_headers(raw: Option<Vec<String>>, problems: &mut Vec<String>) -> Vec<String> {
    let Some(names) = raw else {
        return DEFAULT_PROPAGATED_HEADERS.map(String::from).to_vec();
    };
    const KEY: &str = "kafka.propagate_headers";
    if names.len() > MAX_PROPAGATED_NAMES {
        problems.push(format!(
            "{KEY} lists {} names: at most {MAX_PROPAGATED_NAMES}",
            names.len()
        ));
    }
    for (i, name) in names.iter().enumerate() {
        let own = crate::kafka::outputs::OWN_HEADER_PREFIX;
        if name.is_empty() || name.len() > 255 {
            problems.push(format!(
                "{KEY}[{i}] = {name:?}: a header name is 1-255 bytes"
            ));
        } else if name
            .as_bytes()
            .get(..own.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(own.as_bytes()))
        {
            problems.push(format!(
                "{KEY}[{i}] = {name:?}: groundgate writes the {own}* headers itself; an input's own arrive renamed original.{own}* on dead letters"
            ));
        } else if names[..i].iter().any(|n| n.eq_ignore_ascii_case(name)) {
            problems.push(format!(
                "{KEY}[{i}] = {name:?}: listed twice (names are matched without regard to case)"
            ));
        }
    }
    names
}

/// `[output_schema_ids]`: each id set must fit the wire format's 4 bytes.
fn validate_output_schema_ids(
    raw: &RawOutputSchemaIds,
    problems: &mut Vec<String>,
) -> OutputSchemaIds {
    let mut id = |key: &str, value: Option<i64>| {
        value.and_then(|v| schema_id(&format!("output_schema_ids.{key}"), v, problems))
    };
    OutputSchemaIds {
        final_: id("final", raw.final_),
        retry: id("retry", raw.retry),
        audit: id("audit", raw.audit),
    }
}

/// `value` of `key` as a Schema Registry schema id, which the wire format
/// holds in 4 bytes; otherwise one problem naming the key. A registry
/// numbers its schemas from 1, so 0 is no schema's id: set, it is taken
/// for "off", which an absent key already means.
fn schema_id(key: &str, value: i64, problems: &mut Vec<String>) -> Option<u32> {
    match u32::try_from(value) {
        Ok(0) => {
            problems.push(format!(
                "{key} = 0: a Schema Registry numbers its schemas from 1, so 0 is no schema's id; give the id the registry gave the schema, or remove the key (without an id, nothing is framed or checked)"
            ));
            None
        }
        Ok(id) => Some(id),
        Err(_) => {
            problems.push(format!(
                "{key} = {value}: a schema id is between 1 and {} (the wire format's 4 bytes)",
                u32::MAX
            ));
            None
        }
    }
}

/// `value` of `key` when it lies in `range`; otherwise one problem naming
/// the key and the range (the value is returned as is: once a problem is
/// listed, no setting that depends on it is used).
fn in_range(
    key: &str,
    value: u64,
    range: std::ops::RangeInclusive<u64>,
    problems: &mut Vec<String>,
) -> u64 {
    if !range.contains(&value) {
        problems.push(format!(
            "{key} = {value}: must be between {} and {}",
            range.start(),
            range.end()
        ));
    }
    value
}

/// Where `/metrics`, `/healthz` and `/readyz` are served unless configured.
pub const DEFAULT_METRICS_ADDR: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::UNSPECIFIED,
    9464,
));

fn validate_metrics(raw: RawMetrics, problems: &mut Vec<String>) -> MetricsConfig {
    let addr = match raw.addr.as_deref().map(str::parse::<SocketAddr>) {
        None => DEFAULT_METRICS_ADDR,
        Some(Ok(a)) => a,
        Some(Err(_)) => {
            problems.push(format!(
                "metrics.addr = {:?}: not an ip:port socket address (example: {DEFAULT_METRICS_ADDR})",
                raw.addr.as_deref().unwrap_or_default()
            ));
            DEFAULT_METRICS_ADDR
        }
    };
    let interval_ms = in_range(
        "metrics.statistics_interval_ms",
        raw.statistics_interval_ms.unwrap_or(5000),
        100..=600_000,
        problems,
    );
    let providers = raw.providers.unwrap_or_default();
    let models = raw.models.unwrap_or_default();
    for (what, list) in [("providers", &providers), ("models", &models)] {
        if list.len() > 200 {
            problems.push(format!(
                "metrics.{what} lists {} values: at most 200, to keep label cardinality bounded",
                list.len()
            ));
        }
        if list.iter().any(|v| v == "other") {
            problems.push(format!(
                "metrics.{what} contains \"other\", which is reserved for values outside the list"
            ));
        }
    }
    MetricsConfig {
        addr,
        providers,
        models,
        consumer_lag: raw.consumer_lag.unwrap_or(true),
        statistics_interval: Duration::from_millis(interval_ms),
    }
}
