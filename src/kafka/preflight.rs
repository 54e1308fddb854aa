//! `groundgate run --preflight`: asks the cluster, with the worker's own
//! client settings (TLS, SASL, passthrough properties), what the worker will
//! need once it runs: brokers that answer, the five topics present with a
//! leader for every partition, and, where the brokers let this principal
//! read topic configurations, output topics that take the largest message
//! groundgate writes and an audit topic that compaction cannot thin out.
//! A deployment learns of a missing topic or a too-small message limit
//! before the first record, not from a worker stopped on it.
//!
//! Reading the cluster ([`survey`]) is blocking I/O; judging what was read
//! ([`judge`]) is pure. Must not create, alter, produce or consume anything,
//! nor join the consumer group: it only reads metadata and configurations.

use std::collections::BTreeMap;
use std::time::Duration;

use super::client::LogContext;
use rdkafka::admin::{AdminClient, AdminOptions, OwnedResourceSpecifier, ResourceSpecifier};
use rdkafka::config::FromClientConfigAndContext;
use rdkafka::consumer::BaseConsumer;
use rdkafka::error::KafkaError;

use crate::config::{Config, Guarantee};
use crate::core::{OutputRole, ValueFraming};

/// What the cluster said.
#[derive(Debug, Clone, PartialEq)]
pub struct Survey {
    /// Broker ids and addresses, as the metadata lists them.
    pub brokers: Vec<(i32, String)>,
    /// The topics this principal may describe, by name.
    pub topics: BTreeMap<String, TopicView>,
    /// Configuration entries of the groundgate topics that exist, by topic;
    /// `Err` says why they could not be read (not every broker or
    /// principal allows it).
    pub configs: Result<BTreeMap<String, BTreeMap<String, String>>, String>,
}

/// One topic in the metadata.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicView {
    pub partitions: usize,
    /// Partitions without a leader. (A partition's other metadata errors,
    /// such as a replica being unavailable, leave it writable.)
    pub leaderless: Vec<i32>,
    /// The fewest replicas of any of its partitions.
    pub replicas: usize,
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Ok,
    Note,
    Problem,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Note => "note",
            Level::Problem => "problem",
        }
    }
}

/// One line of the preflight's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub level: Level,
    /// The cluster, or a topic with its role (`answers.audit (audit)`).
    pub subject: String,
    pub detail: String,
}

fn check(level: Level, subject: impl Into<String>, detail: impl Into<String>) -> Check {
    Check {
        level,
        subject: subject.into(),
        detail: detail.into(),
    }
}

/// Reads the cluster's metadata within `timeout`, then the groundgate
/// topics' configurations within half of it (a broker that does not serve
/// them is not worth the whole wait). Fails only when the metadata
/// cannot be read (brokers unreachable, TLS or SASL refused);
/// configurations that cannot be read are recorded in [`Survey::configs`].
pub async fn survey(
    config: &Config,
    bootstrap: &str,
    timeout: Duration,
) -> Result<Survey, KafkaError> {
    let k = &config.kafka;
    // The consumer's settings, so the brokers see the same principal the
    // worker will be; a BaseConsumer that never subscribes joins no group.
    let settings = super::client::consumer(k, bootstrap, None);
    let meta_settings = settings.clone();
    let names: Vec<String> = k.topics.all().map(str::to_string).into();
    let (brokers, topics) =
        tokio::task::spawn_blocking(move || metadata(&meta_settings, &names, timeout))
            .await
            .map_err(|_| KafkaError::Canceled)??;
    let present: Vec<&str> = k
        .topics
        .all()
        .into_iter()
        .filter(|t| topics.contains_key(*t))
        .collect();
    let configs = read_configs(&settings, &present, timeout / 2)
        .await
        .map_err(|e| e.to_string());
    Ok(Survey {
        brokers,
        topics,
        configs,
    })
}

type Brokers = Vec<(i32, String)>;

/// The brokers and topics of the cluster. Blocking (librdkafka waits).
/// While one of `wanted` has a partition without a leader, the metadata is
/// read again until `timeout` has passed: a topic created a moment ago
/// (as a deployment script does just before the preflight) has its leaders
/// elected a moment later.
fn metadata(
    settings: &rdkafka::ClientConfig,
    wanted: &[String],
    timeout: Duration,
) -> Result<(Brokers, BTreeMap<String, TopicView>), KafkaError> {
    // Client errors are logged as the worker's are: once, then at most
    // every 10 s while they repeat, not once for each broker and retry.
    let consumer: BaseConsumer<LogContext> = settings.create_with_context(LogContext::loud())?;
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let read = read_metadata(&consumer, timeout)?;
        let settled = wanted
            .iter()
            .all(|t| read.1.get(t).is_none_or(|v| v.leaderless.is_empty()));
        if settled || std::time::Instant::now() + LEADER_RETRY >= deadline {
            return Ok(read);
        }
        std::thread::sleep(LEADER_RETRY);
    }
}

/// How long to wait before reading the metadata again for a leader.
const LEADER_RETRY: Duration = Duration::from_millis(500);

fn read_metadata(
    consumer: &BaseConsumer<LogContext>,
    timeout: Duration,
) -> Result<(Brokers, BTreeMap<String, TopicView>), KafkaError> {
    let metadata = super::client::fetch_metadata(consumer, None, timeout)?;
    let brokers = metadata
        .brokers()
        .iter()
        .map(|b| (b.id(), format!("{}:{}", b.host(), b.port())))
        .collect();
    let topics = metadata
        .topics()
        .iter()
        .filter(|t| t.error().is_none())
        .map(|t| {
            let leaderless = t
                .partitions()
                .iter()
                .filter(|p| p.leader() < 0)
                .map(|p| p.id())
                .collect();
            let replicas = t
                .partitions()
                .iter()
                .map(|p| p.replicas().len())
                .min()
                .unwrap_or(0);
            (
                t.name().to_string(),
                TopicView {
                    partitions: t.partitions().len(),
                    leaderless,
                    replicas,
                },
            )
        })
        .collect();
    Ok((brokers, topics))
}

async fn read_configs(
    settings: &rdkafka::ClientConfig,
    topics: &[&str],
    timeout: Duration,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, KafkaError> {
    if topics.is_empty() {
        return Ok(BTreeMap::new());
    }
    let admin = AdminClient::<LogContext>::from_config_and_context(settings, LogContext::loud())?;
    let resources: Vec<ResourceSpecifier<'_>> =
        topics.iter().map(|t| ResourceSpecifier::Topic(t)).collect();
    let options = AdminOptions::new().request_timeout(Some(timeout));
    let answer = tokio::time::timeout(timeout, admin.describe_configs(&resources, &options))
        .await
        .map_err(|_| KafkaError::AdminOp(rdkafka::types::RDKafkaErrorCode::RequestTimedOut))??;
    let mut out = BTreeMap::new();
    for resource in answer {
        let resource = resource.map_err(KafkaError::AdminOp)?;
        let OwnedResourceSpecifier::Topic(topic) = resource.specifier else {
            continue;
        };
        let entries = resource
            .entries
            .into_iter()
            .filter_map(|e| e.value.map(|v| (e.name, v)))
            .collect();
        out.insert(topic, entries);
    }
    Ok(out)
}

/// What a worker with `config` would meet on the surveyed cluster, in the
/// order: the cluster, then each topic (input first).
pub fn judge(config: &Config, s: &Survey) -> Vec<Check> {
    let k = &config.kafka;
    let mut out = Vec::new();
    let ids: Vec<String> = s.brokers.iter().map(|(id, _)| id.to_string()).collect();
    out.push(check(
        Level::Ok,
        "cluster",
        format!(
            "{} broker(s) answered (ids {})",
            s.brokers.len(),
            ids.join(", ")
        ),
    ));
    if let Err(why) = &s.configs {
        out.push(check(
            Level::Note,
            "cluster",
            format!(
                "topic configurations could not be read ({why}): max.message.bytes, cleanup.policy and retention.ms are not checked"
            ),
        ));
    }
    if k.guarantee == Guarantee::ExactlyOnce && s.brokers.len() < 3 {
        out.push(check(
            Level::Note,
            "cluster",
            format!(
                "exactly-once with {} broker(s): transactions need the brokers' transaction state log, whose default replication factor (transaction.state.log.replication.factor) is 3; on a smaller cluster lower it and transaction.state.log.min.isr on the brokers, or the worker cannot start a transaction",
                s.brokers.len()
            ),
        ));
    }
    let t = &k.topics;
    let single: Vec<&str> = t
        .all()
        .into_iter()
        .filter(|name| s.topics.get(*name).is_some_and(|v| v.replicas == 1))
        .collect();
    if !single.is_empty() {
        out.push(check(
            Level::Note,
            "cluster",
            format!(
                "a single replica for {}: a broker lost loses the partitions it holds",
                single.join(", ")
            ),
        ));
    }
    // Each topic with the name checks call its role by, and its output role
    // (none for the input).
    let roles = [
        (t.input.as_str(), "input", None),
        (&t.final_, "final", Some(OutputRole::Final)),
        (&t.retry, "retry", Some(OutputRole::Retry)),
        (&t.audit, "audit", Some(OutputRole::Audit)),
        (&t.dead_letter, "dead letter", Some(OutputRole::DeadLetter)),
    ];
    for (name, role, output) in roles {
        let subject = format!("{name} ({role})");
        let Some(view) = s.topics.get(name) else {
            let what = if role == "input" {
                "the worker would wait for it and consume nothing"
            } else {
                "the first record routed there would stop the worker"
            };
            out.push(check(
                Level::Problem,
                subject,
                format!(
                    "does not exist, or this principal may not describe it: {what}; groundgate does not create topics (unless the brokers create them on first use, auto.create.topics.enable)"
                ),
            ));
            continue;
        };
        let mut ok = format!(
            "{} partition(s), {} replica(s)",
            view.partitions, view.replicas
        );
        if role == "input" {
            ok.push_str(&format!(
                "; at most {} worker(s) of group {} take part",
                view.partitions, k.group_id
            ));
        }
        out.push(check(Level::Ok, subject.clone(), ok));
        if !view.leaderless.is_empty() {
            let ids: Vec<String> = view.leaderless.iter().map(i32::to_string).collect();
            out.push(check(
                Level::Problem,
                subject.clone(),
                format!("partition(s) {} have no leader", ids.join(", ")),
            ));
        }
        let Ok(configs) = &s.configs else { continue };
        let Some(c) = configs.get(name) else { continue };
        let number = |key: &str| c.get(key).and_then(|v| v.parse::<i64>().ok());
        if role == "input"
            && let Some(limit) = number("max.message.bytes")
            && limit > config.core.max_record_bytes as i64
        {
            out.push(check(
                Level::Note,
                subject.clone(),
                format!(
                    "max.message.bytes = {limit} admits records above max_record_bytes = {}: those go to the dead-letter topic as too_large",
                    config.core.max_record_bytes
                ),
            ));
        }
        if role != "input"
            && let Some(limit) = number("max.message.bytes")
            && limit < k.max_message_bytes as i64
        {
            out.push(check(
                Level::Problem,
                subject.clone(),
                format!(
                    "max.message.bytes = {limit} is below kafka.max_message_bytes = {}: the broker refuses an output between the two, which is then replaced by a bounded too_large dead letter (under exactly-once after its transaction was aborted once); raise the topic's max.message.bytes to at least {}, or lower kafka.max_message_bytes and max_output_bytes to fit it",
                    k.max_message_bytes, k.max_message_bytes
                ),
            ));
        }
        // Confluent Server refuses, on a topic that validates schemas, a
        // value without a Schema Registry header naming a registered schema.
        let validated = c
            .get("confluent.value.schema.validation")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let framed = matches!(
            config.core.value_framing,
            ValueFraming::SchemaRegistry { .. }
        );
        // An output topic given a schema id gets framed values; dead letters
        // are the records as received and never are.
        let schema_id = output.and_then(|r| k.output_schema_ids.of(r));
        if validated && role == "dead letter" {
            out.push(check(
                Level::Problem,
                subject.clone(),
                "confluent.value.schema.validation = true: the brokers refuse a value without a Schema Registry header, and a dead letter is the record as received (or a bounded JSON summary of it), never framed by groundgate, so the first one routed here would stop the worker; turn schema validation off for the dead-letter topic",
            ));
        } else if validated && role != "input" && schema_id.is_none() {
            out.push(check(
                Level::Problem,
                subject.clone(),
                format!(
                    "confluent.value.schema.validation = true: the brokers refuse a value without a Schema Registry header, and groundgate writes this topic's values as plain JSON, so the first record routed here would stop the worker; register the topic's schema and set output_schema_ids.{role} to its id, or turn schema validation off for this topic"
                ),
            ));
        }
        if validated && role == "input" && !framed {
            out.push(check(
                Level::Problem,
                subject.clone(),
                "confluent.value.schema.validation = true: every record carries a Schema Registry header, which value_framing = \"none\" reads as a dead letter; set value_framing = \"schema-registry\"",
            ));
        }
        if role == "audit" {
            if c.get("cleanup.policy")
                .is_some_and(|p| p.split(',').any(|p| p.trim() == "compact"))
            {
                out.push(check(
                    Level::Problem,
                    subject.clone(),
                    "cleanup.policy includes compact: compaction keeps one record per key and deletes the rest of the trail, which audit verify then reports as missing rows; use cleanup.policy=delete",
                ));
            }
            match number("retention.ms") {
                Some(ms) if ms >= 0 => out.push(check(
                    Level::Note,
                    subject.clone(),
                    format!(
                        "retention.ms = {ms} ({}): rows and seals older than that are deleted; archive the trail if it must be kept longer",
                        days(ms)
                    ),
                )),
                _ => {}
            }
        }
        if role != "input"
            && view.replicas > 1
            && number("min.insync.replicas").is_some_and(|m| m < 2)
        {
            out.push(check(
                Level::Note,
                subject,
                "min.insync.replicas = 1: an output acknowledged with acks=all may be on one broker only",
            ));
        }
    }
    out
}

fn days(ms: i64) -> String {
    let d = ms as f64 / 86_400_000.0;
    if d >= 1.0 {
        format!("{d:.1} days")
    } else {
        format!("{:.1} hours", d * 24.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(topics: &[(&str, usize)]) -> Survey {
        Survey {
            brokers: vec![(1, "b1:9092".into()), (2, "b2:9092".into())],
            topics: topics
                .iter()
                .map(|(t, replicas)| {
                    (
                        (*t).to_string(),
                        TopicView {
                            partitions: 6,
                            leaderless: Vec::new(),
                            replicas: *replicas,
                        },
                    )
                })
                .collect(),
            configs: Ok(BTreeMap::new()),
        }
    }

    /// A topic configuration with Confluent's broker-side schema validation on.
    fn validating() -> BTreeMap<String, String> {
        BTreeMap::from([(
            "confluent.value.schema.validation".to_string(),
            "true".to_string(),
        )])
    }

    const ALL: [&str; 5] = [
        "answers",
        "answers.final",
        "answers.retry",
        "answers.audit",
        "answers.dlq",
    ];

    fn problems(checks: &[Check]) -> Vec<(String, String)> {
        checks
            .iter()
            .filter(|c| c.level == Level::Problem)
            .map(|c| (c.subject.clone(), c.detail.clone()))
            .collect()
    }

    fn notes(checks: &[Check]) -> Vec<&str> {
        checks
            .iter()
            .filter(|c| c.level == Level::Note)
            .map(|c| c.detail.as_str())
            .collect()
    }

    #[test]
    fn a_cluster_with_the_five_topics_replicated_passes_without_notes() {
        let k = Config::default();
        let checks = judge(&k, &cluster(&ALL.map(|t| (t, 3))));
        assert!(checks.iter().all(|c| c.level == Level::Ok), "{checks:#?}");
        assert!(checks[0].detail.contains("2 broker(s) answered (ids 1, 2)"));
        assert!(
            checks[1]
                .detail
                .contains("at most 6 worker(s) of group groundgate")
        );
    }

    #[test]
    fn each_missing_or_leaderless_topic_is_a_problem_of_its_own() {
        let k = Config::default();
        let mut s = cluster(&[("answers", 3), ("answers.final", 3), ("answers.audit", 3)]);
        s.topics.get_mut("answers.final").unwrap().leaderless = vec![2, 5];
        let p = problems(&judge(&k, &s));
        let subjects: Vec<&str> = p.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(
            subjects,
            [
                "answers.final (final)",
                "answers.retry (retry)",
                "answers.dlq (dead letter)"
            ]
        );
        assert!(p[0].1.contains("partition(s) 2, 5 have no leader"));
        assert!(p[1].1.contains("does not exist"));
    }

    #[test]
    fn topic_configurations_that_would_stop_or_thin_the_trail_are_problems() {
        let k = Config::default();
        let mut s = cluster(&ALL.map(|t| (t, 3)));
        let small = (k.kafka.max_message_bytes - 1).to_string();
        let entries = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(a, b)| ((*a).to_string(), (*b).to_string()))
                .collect()
        };
        s.configs = Ok(BTreeMap::from([
            // Below max_record_bytes: every record that arrives is read.
            ("answers".into(), entries(&[("max.message.bytes", "1000")])),
            (
                "answers.final".into(),
                entries(&[("max.message.bytes", &small), ("min.insync.replicas", "1")]),
            ),
            (
                "answers.audit".into(),
                entries(&[
                    ("cleanup.policy", "compact,delete"),
                    ("retention.ms", "604800000"),
                ]),
            ),
            (
                "answers.dlq".into(),
                entries(&[("retention.ms", "-1"), ("max.message.bytes", "99999999")]),
            ),
        ]));
        let checks = judge(&k, &s);
        let p = problems(&checks);
        assert_eq!(p.len(), 2, "{checks:#?}");
        assert!(p[0].0 == "answers.final (final)" && p[0].1.contains("max.message.bytes"));
        assert!(p[1].0 == "answers.audit (audit)" && p[1].1.contains("compact"));
        let notes = notes(&checks);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("min.insync.replicas = 1"));
        assert!(notes[1].contains("604800000 (7.0 days)"));
    }

    #[test]
    fn topics_that_validate_schemas_are_problems_unless_the_input_is_read_framed() {
        let mut config = Config::default();
        let mut s = cluster(&ALL.map(|t| (t, 3)));
        s.configs = Ok(BTreeMap::from([
            ("answers".into(), validating()),
            ("answers.retry".into(), validating()),
            (
                "answers.final".into(),
                BTreeMap::from([(
                    "confluent.value.schema.validation".to_string(),
                    "false".to_string(),
                )]),
            ),
        ]));
        let checks = judge(&config, &s);
        let p = problems(&checks);
        assert_eq!(p.len(), 2, "{checks:#?}");
        assert!(
            p[0].0 == "answers (input)" && p[0].1.contains("value_framing"),
            "{p:?}"
        );
        assert!(
            p[1].0 == "answers.retry (retry)" && p[1].1.contains("as plain JSON"),
            "{p:?}"
        );
        config.core.value_framing = ValueFraming::SchemaRegistry { schema_ids: None };
        let p = problems(&judge(&config, &s));
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].0, "answers.retry (retry)");
    }

    #[test]
    fn an_output_topic_that_validates_schemas_is_a_problem_only_without_its_schema_id() {
        let mut config = Config::default();
        let mut s = cluster(&ALL.map(|t| (t, 3)));
        s.configs = Ok(ALL[1..]
            .iter()
            .map(|t| ((*t).to_string(), validating()))
            .collect());
        let subjects = |config: &Config| -> Vec<String> {
            problems(&judge(config, &s))
                .into_iter()
                .map(|(subject, _)| subject)
                .collect()
        };
        assert_eq!(
            subjects(&config),
            [
                "answers.final (final)",
                "answers.retry (retry)",
                "answers.audit (audit)",
                "answers.dlq (dead letter)"
            ]
        );
        config.kafka.output_schema_ids = crate::config::OutputSchemaIds {
            final_: Some(101),
            retry: None,
            audit: Some(103),
        };
        let p = problems(&judge(&config, &s));
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(p[0].0, "answers.retry (retry)");
        assert!(p[0].1.contains("set output_schema_ids.retry"), "{p:?}");
        // Dead letters are never framed: an id for every other topic does
        // not make validation on the dead-letter topic safe.
        assert_eq!(p[1].0, "answers.dlq (dead letter)");
        assert!(p[1].1.contains("never framed"), "{p:?}");
    }

    #[test]
    fn unreadable_configurations_and_single_replicas_are_notes_not_problems() {
        let k = Config::default();
        let mut s = cluster(&ALL.map(|t| (t, 1)));
        s.configs = Err("Broker: Unsupported version".into());
        let checks = judge(&k, &s);
        assert!(problems(&checks).is_empty());
        let notes = checks.iter().filter(|c| c.level == Level::Note).count();
        assert_eq!(notes, 2, "{checks:#?}");
        assert!(checks[1].detail.contains("are not checked"));
        assert!(checks[2].detail.starts_with(
            "a single replica for answers, answers.final, answers.retry, answers.audit, answers.dlq:"
        ));
    }

    #[test]
    fn notes_for_exactly_once_on_a_small_cluster_and_input_records_above_the_record_limit() {
        let mut config = Config::default();
        config.kafka.guarantee = Guarantee::ExactlyOnce;
        let mut s = cluster(&ALL.map(|t| (t, 3)));
        let limit = (config.core.max_record_bytes + 1).to_string();
        s.configs = Ok(BTreeMap::from([(
            "answers".to_string(),
            BTreeMap::from([("max.message.bytes".to_string(), limit)]),
        )]));
        let checks = judge(&config, &s);
        let notes = notes(&checks);
        assert_eq!(notes.len(), 2, "{checks:#?}");
        assert!(notes[0].starts_with("exactly-once with 2 broker(s)"));
        assert!(notes[1].contains("above max_record_bytes = 1048576"));
        // Three brokers carry the transaction state log's default.
        s.brokers.push((3, "b3:9092".into()));
        let checks = judge(&config, &s);
        assert!(!checks.iter().any(|c| c.detail.starts_with("exactly-once")));
    }
}
