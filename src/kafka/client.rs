//! librdkafka client configurations for the worker, produced from the
//! validated [`KafkaConfig`]: the settings groundgate's guarantees depend on
//! are set here, then the typed security settings, and the user's
//! passthrough properties are layered on top (config validation already
//! refused passthrough of managed keys and secrets).
//!
//! `crate::config::managed` is the one list of those keys: every key the
//! functions below set is in it (a unit test checks that).
//!
//! Also what librdkafka was built with ([`library`]), for `--version`, the
//! start-up line and the configuration check of the commands that connect.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::{ClientConfig, ClientContext};
use tracing::{debug, error, info, warn};

use super::events::InternalEvent;
use crate::config::{Guarantee, KafkaConfig, KafkaSecurity, SecretSource};
use crate::metrics::Metrics;

/// The producer type every groundgate client uses: errors go through
/// [`LogContext`], so each is logged once.
pub type FutureProducer = rdkafka::producer::FutureProducer<LogContext>;

/// Minimum spacing of repeated client-error logs.
const ERROR_LOG_EVERY: Duration = Duration::from_secs(10);

/// The raw metadata bytes committed with `topic`/`partition` in `tpl`
/// (empty when there are none or the entry is absent). rdkafka's accessor
/// panics on metadata that is not UTF-8, which another tool or a damaged
/// group can hold: those bytes must be reported, not crash the reader.
#[allow(unsafe_code)]
pub fn metadata_bytes(tpl: &rdkafka::TopicPartitionList, topic: &str, partition: i32) -> Vec<u8> {
    // SAFETY: `tpl` owns its native list for the borrow's lifetime; `elems`
    // holds `cnt` initialised entries, each with a NUL-terminated topic and
    // `metadata_size` bytes at `metadata` when that is not null.
    unsafe {
        let list = &*tpl.ptr();
        let Ok(n) = usize::try_from(list.cnt) else {
            return Vec::new();
        };
        if list.elems.is_null() {
            return Vec::new();
        }
        std::slice::from_raw_parts(list.elems, n)
            .iter()
            .find(|e| {
                e.partition == partition
                    && !e.topic.is_null()
                    && std::ffi::CStr::from_ptr(e.topic).to_bytes() == topic.as_bytes()
            })
            .filter(|e| !e.metadata.is_null())
            .map(|e| std::slice::from_raw_parts(e.metadata as *const u8, e.metadata_size).to_vec())
            .unwrap_or_default()
    }
}

/// The headers of a consumed message, in order, as (name, value) pairs.
/// rdkafka's own accessor panics on a name that is not UTF-8, which any
/// producer but the Java client can write: such a record must not stop the
/// reader of its topic (the worker would stop on it again after every
/// restart). A name that is not UTF-8 is read with each invalid sequence
/// replaced by U+FFFD; one that holds a NUL byte ends there (librdkafka
/// hands names out as C strings).
#[allow(unsafe_code)]
pub fn headers_of<'a>(
    msg: &'a rdkafka::message::BorrowedMessage<'_>,
) -> Vec<(std::borrow::Cow<'a, str>, Option<&'a [u8]>)> {
    use rdkafka::bindings::{rd_kafka_header_get_all, rd_kafka_message_headers};
    use rdkafka::types::RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR as NO_ERROR;
    let mut out = Vec::new();
    // SAFETY: `msg` owns its native message for the borrow's lifetime; the
    // headers librdkafka returns for it belong to it, and so do each
    // header's NUL-terminated name and the `size` bytes at its value when
    // that is not null.
    unsafe {
        let mut headers = std::ptr::null_mut();
        if rd_kafka_message_headers(msg.ptr(), &mut headers) != NO_ERROR || headers.is_null() {
            return out;
        }
        for idx in 0.. {
            let (mut name, mut value, mut size) = (std::ptr::null(), std::ptr::null(), 0);
            if rd_kafka_header_get_all(headers, idx, &mut name, &mut value, &mut size) != NO_ERROR {
                break;
            }
            if name.is_null() {
                continue;
            }
            let name = String::from_utf8_lossy(std::ffi::CStr::from_ptr(name).to_bytes());
            let value = (!value.is_null()).then(|| std::slice::from_raw_parts(value.cast(), size));
            out.push((name, value));
        }
    }
    out
}

/// librdkafka's own log lines, forwarded to `tracing`. A connection failure
/// (facility `FAIL`) is also delivered as an error event, which the client
/// context logs (rate-limited); the log line is kept at debug so the same
/// failure is not printed twice.
pub fn log(level: RDKafkaLogLevel, fac: &str, msg: &str) {
    match level {
        _ if fac == "FAIL" => debug!(target: "librdkafka", "{fac} {msg}"),
        RDKafkaLogLevel::Emerg
        | RDKafkaLogLevel::Alert
        | RDKafkaLogLevel::Critical
        | RDKafkaLogLevel::Error => error!(target: "librdkafka", "{fac} {msg}"),
        RDKafkaLogLevel::Warning => warn!(target: "librdkafka", "{fac} {msg}"),
        RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
            info!(target: "librdkafka", "{fac} {msg}")
        }
        RDKafkaLogLevel::Debug => debug!(target: "librdkafka", "{fac} {msg}"),
    }
}

/// Lets a repeated client error through to the log at most once per
/// [`ERROR_LOG_EVERY`] for each kind of error: brokers being away is
/// retried by librdkafka forever, and said so, but not thousands of times
/// a minute; and one kind ("all brokers are down") never holds back
/// another that arrives with it (the refused TLS handshake that says why).
#[derive(Debug, Default)]
pub struct LogLimiter(Mutex<Vec<(Option<RDKafkaErrorCode>, Instant)>>);

impl LogLimiter {
    /// Whether to log `error` now (and, if so, the next of its kind waits).
    /// The kinds are librdkafka's error codes, a closed set, so the list
    /// stays small.
    pub fn allow(&self, error: &KafkaError) -> bool {
        let code = error.rdkafka_error_code();
        let mut last = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        match last.iter_mut().find(|(c, _)| *c == code) {
            Some((_, at)) if now.duration_since(*at) < ERROR_LOG_EVERY => false,
            Some((_, at)) => {
                *at = now;
                true
            }
            None => {
                last.push((code, now));
                true
            }
        }
    }
}

/// Client context of producers and readers: logs each client error once
/// (at most every 10 s while it repeats), or only at debug where another
/// client of the same command reports the same brokers. The worker's
/// producer also counts its errors, as its consumer does: with sparse
/// connections, a broker that leads only output partitions is one the
/// consumer never talks to, so only the producer can report it.
pub struct LogContext {
    loud: bool,
    limiter: LogLimiter,
    metrics: Option<Arc<Metrics>>,
}

impl LogContext {
    /// Reports client errors (a producer on its own, e.g. `produce`).
    pub fn loud() -> LogContext {
        LogContext {
            loud: true,
            limiter: LogLimiter::default(),
            metrics: None,
        }
    }

    /// Leaves client errors to another client's context.
    pub fn quiet() -> LogContext {
        LogContext {
            loud: false,
            limiter: LogLimiter::default(),
            metrics: None,
        }
    }

    /// Reports client errors and counts them in
    /// `groundgate_kafka_client_errors_total` (the worker's producer).
    pub fn counted(metrics: Arc<Metrics>) -> LogContext {
        LogContext {
            loud: true,
            limiter: LogLimiter::default(),
            metrics: Some(metrics),
        }
    }
}

impl ClientContext for LogContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        log(level, fac, log_message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if let Some(m) = &self.metrics {
            super::events::ClientError {
                error: &error,
                reason,
                log: self.limiter.allow(&error),
            }
            .emit(m);
            return;
        }
        if !self.loud {
            debug!(error = %error, reason, "Kafka producer client error");
            return;
        }
        if self.limiter.allow(&error) {
            let hint = super::error::retry_hint(&error);
            warn!(error = %error, reason, "Kafka client error ({hint})");
        }
    }
}

impl rdkafka::consumer::ConsumerContext for LogContext {}

/// How long the client's pending error events are served after a failed
/// metadata read.
const ERRORS_WAIT: Duration = Duration::from_secs(1);

/// The cluster's metadata, of `topic` or of every topic. A failed read says
/// only "broker transport failure"; why (a refused TLS handshake, a failed
/// login) waits in the client's queue as error events, which are served,
/// so logged, before the error is returned.
pub fn fetch_metadata(
    consumer: &rdkafka::consumer::BaseConsumer<LogContext>,
    topic: Option<&str>,
    timeout: Duration,
) -> Result<rdkafka::metadata::Metadata, KafkaError> {
    use rdkafka::consumer::Consumer;
    consumer.fetch_metadata(topic, timeout).inspect_err(|_| {
        let _ = consumer.poll(ERRORS_WAIT);
    })
}

/// The librdkafka this binary links: its version and `builtin.features`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    pub version: String,
    pub features: BTreeSet<String>,
}

impl Library {
    /// `builtin.features` as librdkafka prints it.
    pub fn features_line(&self) -> String {
        self.features.iter().cloned().collect::<Vec<_>>().join(",")
    }
}

/// The `builtin.features` every build of groundgate has (Cargo.toml's
/// rdkafka features); `oidc` also needs the system's libcurl at build time.
pub const PROMISED_FEATURES: &[&str] = &[
    "ssl",
    "sasl_plain",
    "sasl_scram",
    "sasl_oauthbearer",
    "zstd",
    "lz4",
    "snappy",
    "gzip",
];

/// Asks librdkafka (no client is created, nothing connects).
pub fn library() -> Library {
    let (_, version) = rdkafka::util::get_rdkafka_version();
    let features = ClientConfig::new()
        .create_native_config()
        .and_then(|c| c.get("builtin.features"))
        .map(|f| {
            f.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default();
    Library { version, features }
}

/// Why librdkafka refuses `key = value` on its own (an unknown property, a
/// value of the wrong kind), or `None` when it takes it. Nothing connects.
pub fn refuses(key: &str, value: &str) -> Option<String> {
    ClientConfig::new()
        .set(key, value)
        .create_native_config()
        .err()
        .map(|e| match e {
            rdkafka::error::KafkaError::ClientConfig(_, why, _, _) => why,
            e => e.to_string(),
        })
}

/// Why librdkafka would not create the worker's consumer or producer from
/// these settings taken together, which it takes one by one
/// (`max.poll.interval.ms` below `kafka.session_timeout_ms`, an
/// exactly-once producer's `message.timeout.ms` above its
/// `transaction.timeout.ms`, a `fetch.max.bytes` below the consumer's
/// `message.max.bytes`): one problem a client, listed with the
/// configuration's others. The clients are made without brokers, so
/// nothing connects, and dropped at once; and without any security setting
/// or plugin, typed or passed through (judged on their own, or not at all):
/// a client made with them could read key files, load plugins or ask an
/// identity provider for a token.
pub fn refuses_clients(k: &KafkaConfig) -> Vec<String> {
    use rdkafka::consumer::BaseConsumer;
    use rdkafka::producer::BaseProducer;
    const LEFT_OUT: [&str; 5] = ["security.", "sasl.", "ssl.", "enable.sasl.", "plugin."];
    let properties = k
        .properties
        .iter()
        .filter(|(key, _)| {
            let key = key.trim().to_ascii_lowercase();
            !LEFT_OUT.iter().any(|p| key.starts_with(p))
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let bare = KafkaConfig {
        security: KafkaSecurity::default(),
        properties,
        ..k.clone()
    };
    // What groundgate sets on each client from its own keys.
    let ours = |which: &str| match which {
        "consumer" => format!(
            "groundgate sets session.timeout.ms = {} from kafka.session_timeout_ms",
            k.session_timeout.as_millis()
        ),
        _ if k.guarantee == Guarantee::ExactlyOnce => format!(
            "groundgate sets transaction.timeout.ms = {} from kafka.commit_interval_ms (+ 60000 + request.timeout.ms + 5000) and message.max.bytes = {} from kafka.max_message_bytes",
            super::exactly_once::transaction_timeout(k).as_millis(),
            k.max_message_bytes
        ),
        _ => format!(
            "groundgate sets message.max.bytes = {} from kafka.max_message_bytes",
            k.max_message_bytes
        ),
    };
    let mut problems = Vec::new();
    let mut refused = |which: &str, made: Result<(), KafkaError>| {
        if let Err(e) = made {
            let why = match e {
                KafkaError::ClientCreation(why) => why,
                e => e.to_string(),
            };
            problems.push(format!(
                "the Kafka {which} would not be created from these settings together: librdkafka says {why:?}; {}: change that key or the kafka.properties (-X) named",
                ours(which)
            ));
        }
    };
    let mut consumer = consumer(&bare, "", None);
    consumer.remove("bootstrap.servers");
    refused("consumer", consumer.create::<BaseConsumer>().map(drop));
    let mut producer = producer(&bare, "");
    producer.remove("bootstrap.servers");
    refused("producer", producer.create::<BaseProducer>().map(drop));
    problems
}

fn base(k: &KafkaConfig, bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("client.id", &k.client_id);
    secured(&mut c, &k.security);
    c
}

/// The typed security settings as librdkafka properties. A secret whose
/// source was not read (configuration validated without
/// `RawConfig::load_for_kafka`) is left unset, so authentication fails
/// at the broker instead of using an empty one.
pub fn secured(c: &mut ClientConfig, s: &KafkaSecurity) {
    if let Some(p) = s.protocol {
        c.set("security.protocol", p.as_str());
    }
    if let Some(m) = s.mechanism {
        c.set("sasl.mechanism", m.as_str());
    }
    if let Some(u) = &s.username {
        c.set("sasl.username", u);
    }
    if let (Some(_), Some(p)) = (&s.password, &s.secrets.sasl_password) {
        c.set("sasl.password", p.expose());
    }
    let files = [
        ("ssl.ca.location", &s.ca_file),
        ("ssl.certificate.location", &s.certificate_file),
        ("ssl.key.location", &s.key_file),
    ];
    for (key, path) in files {
        if let Some(path) = path {
            c.set(key, path.to_string_lossy());
        }
    }
    if let (Some(SecretSource::File(_)), Some(p)) = (&s.key_password, &s.secrets.ssl_key_password) {
        c.set("ssl.key.password", p.expose());
    }
    if let Some(o) = &s.oidc {
        c.set("sasl.oauthbearer.method", "oidc")
            .set("sasl.oauthbearer.token.endpoint.url", &o.token_endpoint)
            .set("sasl.oauthbearer.client.id", &o.client_id);
        if let Some(secret) = &s.secrets.oidc_client_secret {
            c.set("sasl.oauthbearer.client.secret", secret.expose());
        }
        if let Some(scope) = &o.scope {
            c.set("sasl.oauthbearer.scope", scope);
        }
    }
}

/// The user's librdkafka properties go last so they can tune anything that
/// is not managed (managed keys were refused when the config was validated).
fn with_passthrough(mut c: ClientConfig, k: &KafkaConfig) -> ClientConfig {
    for (key, value) in &k.properties {
        c.set(key, value);
    }
    c
}

/// The consumer: manual offset store, cooperative-sticky assignment.
pub fn consumer(k: &KafkaConfig, bootstrap: &str, statistics_ms: Option<u64>) -> ClientConfig {
    let mut c = base(k, bootstrap);
    c.set("group.id", &k.group_id)
        .set("partition.assignment.strategy", "cooperative-sticky")
        .set("auto.offset.reset", "earliest")
        .set("enable.partition.eof", "false")
        .set("isolation.level", "read_committed")
        // A clean stop leaves the group (the consumer is closed), so this
        // only matters after SIGKILL, a crash or a network partition.
        .set(
            "session.timeout.ms",
            k.session_timeout.as_millis().to_string(),
        )
        // Offsets are stored by the worker only after both outputs of a
        // record are acknowledged; librdkafka then commits what was stored.
        .set("enable.auto.offset.store", "false");
    if let Some(id) = &k.group_instance_id {
        c.set("group.instance.id", id);
    }
    match k.guarantee {
        Guarantee::AtLeastOnce => {
            c.set("enable.auto.commit", "true").set(
                "auto.commit.interval.ms",
                k.commit_interval.as_millis().to_string(),
            );
        }
        // Offsets travel inside the transaction instead.
        Guarantee::ExactlyOnce => {
            c.set("enable.auto.commit", "false");
        }
    }
    if let Some(ms) = statistics_ms {
        c.set("statistics.interval.ms", ms.to_string());
    }
    with_passthrough(c, k)
}

/// librdkafka's default `max.poll.interval.ms`.
const MAX_POLL_INTERVAL_DEFAULT: Duration = Duration::from_secs(300);

/// How long the worker's consumer may go unpolled before librdkafka puts it
/// out of its group: `max.poll.interval.ms` as passed through, or its
/// default.
pub fn max_poll_interval(k: &KafkaConfig) -> Duration {
    k.properties
        .get("max.poll.interval.ms")
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .map_or(MAX_POLL_INTERVAL_DEFAULT, Duration::from_millis)
}

/// Whether `e`, from a [`reader`], says the records at its position are no
/// longer on the topic (deleted by retention while it read): the reader
/// stops there rather than jump past them.
pub fn deleted_under_reader(e: &rdkafka::error::KafkaError) -> bool {
    e.rdkafka_error_code() == Some(rdkafka::types::RDKafkaErrorCode::AutoOffsetReset)
}

/// The group id `audit verify`'s readers name: they assign partitions
/// themselves, never join a group and never commit.
pub const VERIFY_GROUP: &str = "groundgate-audit-verify";

/// The readers of `audit verify`: the worker's brokers, client id, security
/// settings and passthrough, so whatever reaches the worker's cluster
/// reaches its trail; reading only, never committing an offset. Each reader
/// adds what it needs (`isolation.level`, `enable.partition.eof`, ...).
pub fn reader(k: &KafkaConfig, bootstrap: &str) -> ClientConfig {
    let mut c = base(k, bootstrap);
    // An offset no longer on the topic (its oldest records deleted while a
    // command reads it) is an error. A reset to the end leaves the
    // position short of the range's end until a newer record comes, so
    // the read waits for it and then ends having passed the records in
    // between over; a reset to the start passes the deleted ones over
    // without a word.
    c.set("group.id", VERIFY_GROUP)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "error");
    with_passthrough(c, k)
}

/// The producer: idempotent, acks from all in-sync replicas; transactional
/// for exactly-once.
pub fn producer(k: &KafkaConfig, bootstrap: &str) -> ClientConfig {
    let mut c = base(k, bootstrap);
    c.set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("compression.type", "lz4")
        .set("message.max.bytes", k.max_message_bytes.to_string());
    if k.guarantee == Guarantee::ExactlyOnce {
        let timeout = super::exactly_once::transaction_timeout(k);
        c.set("transactional.id", &k.transactional_id)
            .set("transaction.timeout.ms", timeout.as_millis().to_string());
    }
    with_passthrough(c, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::managed::{TUNABLE, managed, secret, typed};
    use crate::config::{Oidc, RawConfig, SaslMechanism, Secret, Secrets, SecurityProtocol};

    /// Settings librdkafka takes one by one but not together are refused
    /// with the configuration's other problems, before anything starts:
    /// the worker's clients would not be created from them.
    #[test]
    fn settings_the_clients_refuse_together_are_configuration_problems() {
        let load = |toml: &str| {
            let raw = RawConfig::from_toml_str(&format!("[kafka]\nbrokers = \"b:9092\"\n{toml}"))
                .unwrap();
            let config = raw.validate().unwrap();
            refuses_clients(&config.kafka)
        };
        assert_eq!(load(""), Vec::<String>::new());
        assert_eq!(
            load("guarantee = \"exactly-once\"\n[kafka.properties]\n\"linger.ms\" = \"20\"\n"),
            Vec::<String>::new()
        );
        let session = load("session_timeout_ms = 400000\n");
        assert_eq!(session.len(), 1, "{session:#?}");
        assert!(
            session[0].contains("session.timeout.ms = 400000 from kafka.session_timeout_ms"),
            "{session:#?}"
        );
        assert!(session[0].contains("max.poll.interval.ms"), "{session:#?}");
        let timeout = load(
            "guarantee = \"exactly-once\"\n[kafka.properties]\n\"message.timeout.ms\" = \"120000\"\n",
        );
        assert_eq!(timeout.len(), 1, "{timeout:#?}");
        assert!(timeout[0].contains("producer"), "{timeout:#?}");
        assert!(
            timeout[0].contains("transaction.timeout.ms"),
            "{timeout:#?}"
        );
        // The typed security settings go with a passthrough protocol: the
        // mechanism is SCRAM, not librdkafka's default (GSSAPI, not built
        // in), and OIDC has its client secret.
        assert_eq!(
            load(
                "sasl_mechanism = \"SCRAM-SHA-512\"\nsasl_username = \"u\"\nsasl_password_env = \"PW\"\n[kafka.properties]\n\"security.protocol\" = \"SASL_SSL\"\n"
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            load(
                "security_protocol = \"SASL_SSL\"\nsasl_mechanism = \"OAUTHBEARER\"\noidc_token_endpoint = \"https://idp.example/token\"\noidc_client_id = \"gg\"\noidc_client_secret_file = \"/run/secrets/oidc\"\nssl_ca_file = \"/run/ca.pem\"\n"
            ),
            Vec::<String>::new()
        );
        let fetch = load("[kafka.properties]\n\"fetch.max.bytes\" = \"500000\"\n");
        assert_eq!(fetch.len(), 1, "{fetch:#?}");
        assert!(fetch[0].contains("consumer"), "{fetch:#?}");
        assert!(fetch[0].contains("fetch.max.bytes"), "{fetch:#?}");
    }

    /// `run`, `produce` and `audit verify` list such settings with the
    /// other problems of the configuration and exit 2 before anything
    /// starts, instead of failing to create a client once started.
    #[test]
    fn settings_the_clients_refuse_together_are_listed_at_load() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("groundgate.toml");
        std::fs::write(
            &file,
            "[kafka]\nbrokers = \"b:9092\"\nsession_timeout_ms = 400000\nssl_ca_file = \"/nonexistent/ca.pem\"\n",
        )
        .unwrap();
        let library = library();
        let checks = crate::config::Librdkafka {
            features: &library.features,
            refuses: &refuses,
            clients: &refuses_clients,
        };
        let got = RawConfig::load_for_kafka(Some(&file), RawConfig::default(), &checks);
        let Err(crate::config::ConfigError::Invalid(problems)) = got else {
            panic!("loaded: {got:?}");
        };
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(
            problems[0].starts_with("kafka.ssl_ca_file"),
            "{problems:#?}"
        );
        assert!(
            problems[1].contains("max.poll.interval.ms"),
            "{problems:#?}"
        );
    }

    #[test]
    fn every_property_librdkafka_refuses_is_listed_with_its_reason() {
        assert_eq!(refuses("linger.ms", "5"), None);
        assert_eq!(refuses("compression.type", "zstd"), None);
        let raw = RawConfig::from_toml_str(
            "[kafka]\nbrokers = \"b:9092\"\n[kafka.properties]\n\"linger.ms\" = \"abc\"\n\"bogus.prop\" = \"1\"\n\"compression.type\" = \"brotli\"\n\"batch.size\" = \"1000\"\n",
        )
        .unwrap();
        let config = raw.validate().unwrap();
        let (read, var) = (|_: &std::path::Path, _: u64| Ok(Vec::new()), |_: &str| None);
        let access = crate::config::Access {
            read: &read,
            var: &var,
            features: None,
            refuses: Some(&refuses),
            clients: None,
        };
        let mut problems = Vec::new();
        crate::config::check_access(
            &config.kafka.security,
            &config.kafka.properties,
            &access,
            &mut problems,
        );
        assert_eq!(problems.len(), 3, "{problems:#?}");
        for (key, why) in [
            ("bogus.prop", "No such configuration property"),
            ("compression.type", "brotli"),
            ("linger.ms", "Invalid value"),
        ] {
            assert!(
                problems.iter().any(|p| p
                    .contains(&format!("{key:?} (-X {key}=...): librdkafka refuses it: "))
                    && p.contains(why)),
                "{key}: {problems:#?}"
            );
        }
    }

    /// Every key this module sets is managed, an explicit tunable, a typed
    /// security key or a secret: a new setting cannot be added without
    /// deciding which.
    #[test]
    fn every_key_set_here_is_in_the_managed_table() {
        for guarantee in [Guarantee::AtLeastOnce, Guarantee::ExactlyOnce] {
            let mut raw = RawConfig::default();
            raw.kafka.guarantee = Some(guarantee);
            raw.kafka.group_instance_id = Some("worker-0".into());
            let mut k = raw.validate().unwrap().kafka;
            k.security = every_security_setting();
            let clients = [
                consumer(&k, "b:9092", Some(1000)),
                producer(&k, "b:9092"),
                reader(&k, "b:9092"),
            ];
            for c in clients {
                for key in c.config_map().keys() {
                    assert!(
                        managed(key).is_some()
                            || TUNABLE.contains(key)
                            || typed(key).is_some()
                            || secret(key).is_some(),
                        "{key} is set by groundgate but neither managed, tunable, typed nor secret"
                    );
                }
            }
        }
    }

    #[test]
    fn each_kind_of_client_error_is_logged_once_a_while_and_none_hides_another() {
        let l = LogLimiter::default();
        let down = KafkaError::Global(RDKafkaErrorCode::AllBrokersDown);
        let ssl = KafkaError::Global(RDKafkaErrorCode::SSL);
        assert!(l.allow(&down));
        assert!(
            l.allow(&ssl),
            "the reason is logged beside all brokers down"
        );
        assert!(!l.allow(&down));
        assert!(!l.allow(&ssl));
    }

    /// The worker's producer counts every client error, as its consumer
    /// does: a broker that leads only output partitions is reported by it
    /// alone. Quiet contexts count nothing.
    #[test]
    fn the_worker_s_producer_counts_its_client_errors() {
        let metrics = Arc::new(Metrics::new(&crate::config::Config::default().metrics).unwrap());
        let counted = LogContext::counted(metrics.clone());
        let down = || KafkaError::Global(RDKafkaErrorCode::BrokerTransportFailure);
        counted.error(down(), "broker 2: Connection refused");
        counted.error(down(), "broker 2: Connection refused");
        LogContext::quiet().error(down(), "broker 2: Connection refused");
        let text = metrics.encode();
        let line = text
            .lines()
            .find(|l| l.starts_with(r#"groundgate_kafka_client_errors_total{class="retriable"}"#))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(line.ends_with(" 2"), "{line}");
    }

    /// `audit verify` reaches the cluster the way the worker does: same
    /// brokers, client id, security settings and passthrough; it reads
    /// under its own group id and commits nothing.
    #[test]
    fn verify_reads_with_the_workers_connection_and_commits_nothing() {
        let raw = RawConfig::from_toml_str(
            "[kafka]\nbrokers = \"b:9093\"\nclient_id = \"gg-1\"\ngroup_id = \"workers\"\nsecurity_protocol = \"SSL\"\nssl_ca_file = \"/etc/ca.pem\"\n[kafka.properties]\n\"fetch.wait.max.ms\" = \"50\"\n",
        )
        .unwrap();
        let k = raw.validate().unwrap().kafka;
        let (r, c) = (reader(&k, "b:9093"), consumer(&k, "b:9093", None));
        for key in [
            "bootstrap.servers",
            "client.id",
            "security.protocol",
            "ssl.ca.location",
            "fetch.wait.max.ms",
        ] {
            assert!(r.get(key).is_some(), "{key} unset");
            assert_eq!(r.get(key), c.get(key), "{key}");
        }
        assert_eq!(r.get("group.id"), Some(VERIFY_GROUP));
        assert_eq!(r.get("enable.auto.commit"), Some("false"));
    }

    #[test]
    fn an_exactly_once_transaction_may_stay_open_for_the_longest_commit_interval() {
        let mut raw = RawConfig::default();
        raw.kafka.guarantee = Some(Guarantee::ExactlyOnce);
        raw.kafka.commit_interval_ms = Some(600_000);
        let k = raw.validate().unwrap().kafka;
        let c = producer(&k, "b:9092");
        let ms = |key: &str| c.get(key).map(|v| v.parse::<u64>().unwrap());
        let timeout = ms("transaction.timeout.ms").expect("transaction.timeout.ms set");
        assert!(
            timeout >= 600_000 + 2 * super::super::exactly_once::TXN_TIMEOUT.as_millis() as u64,
            "{timeout}: the commit interval and the commit's own calls"
        );
        assert!(
            timeout <= 900_000,
            "{timeout}: within the brokers' default transaction.max.timeout.ms"
        );
        // librdkafka takes it (message.timeout.ms follows it).
        let created: Result<rdkafka::producer::BaseProducer, _> = c.create();
        assert!(created.is_ok(), "{:?}", created.err());
        let mut raw = RawConfig::default();
        raw.kafka.guarantee = Some(Guarantee::AtLeastOnce);
        let k = raw.validate().unwrap().kafka;
        assert!(
            producer(&k, "b:9092")
                .get("transaction.timeout.ms")
                .is_none()
        );
    }

    fn every_security_setting() -> KafkaSecurity {
        KafkaSecurity {
            protocol: Some(SecurityProtocol::SaslSsl),
            mechanism: Some(SaslMechanism::OauthBearer),
            username: Some("u".into()),
            password: Some(SecretSource::Env("P".into())),
            ca_file: Some("/ca.pem".into()),
            certificate_file: Some("/c.pem".into()),
            key_file: Some("/k.pem".into()),
            key_password: Some(SecretSource::File("/kp".into())),
            oidc: Some(Oidc {
                token_endpoint: "https://idp/token".into(),
                client_id: "id".into(),
                client_secret: SecretSource::File("/s".into()),
                scope: Some("kafka".into()),
            }),
            secrets: Secrets {
                sasl_password: Some(Secret::new("p")),
                ssl_key_password: Some(Secret::new("kp")),
                oidc_client_secret: Some(Secret::new("s")),
            },
        }
    }

    #[test]
    fn the_library_reports_what_the_settings_need() {
        let lib = library();
        assert!(lib.version.starts_with("2."), "{lib:?}");
        for f in PROMISED_FEATURES {
            assert!(lib.features.contains(*f), "{f} missing from {lib:?}");
        }
    }

    #[test]
    fn consumer_lag_is_exported_by_default() {
        let c = crate::config::Config::default();
        assert!(c.metrics.consumer_lag);
        assert!(c.metrics.statistics_interval <= std::time::Duration::from_secs(10));
        let settings = consumer(&c.kafka, "b:9092", Some(5000));
        assert_eq!(settings.get("statistics.interval.ms"), Some("5000"));
    }

    #[test]
    fn session_timeout_and_static_membership_are_settings() {
        let c = RawConfig::from_toml_str(
            "[kafka]\nsession_timeout_ms = 6000\ngroup_instance_id = \"pod-0\"\n",
        )
        .unwrap()
        .validate()
        .unwrap();
        let settings = consumer(&c.kafka, "b:9092", None);
        assert_eq!(settings.get("session.timeout.ms"), Some("6000"));
        assert_eq!(settings.get("group.instance.id"), Some("pod-0"));
        let d = crate::config::Config::default();
        let settings = consumer(&d.kafka, "b:9092", None);
        assert_eq!(settings.get("group.instance.id"), None);
    }

    /// Every `security.protocol` × `sasl.mechanism` this build claims in
    /// `builtin.features` gives a producer and a consumer that librdkafka
    /// creates without a configuration error (nothing is listening: only
    /// the client settings are tested here; tests/it/secured.rs connects).
    #[test]
    fn every_protocol_and_mechanism_the_build_claims_creates_clients() {
        use rdkafka::consumer::BaseConsumer;
        use rdkafka::producer::BaseProducer;
        let lib = library();
        let mut combos = 0;
        for protocol in SecurityProtocol::ALL {
            if protocol.tls() && !lib.features.contains("ssl") {
                continue;
            }
            let mechanisms: Vec<Option<SaslMechanism>> = if protocol.sasl() {
                SaslMechanism::ALL
                    .into_iter()
                    .filter(|m| lib.features.contains(m.feature()))
                    .map(Some)
                    .collect()
            } else {
                vec![None]
            };
            for mechanism in mechanisms {
                let mut k = crate::config::Config::default().kafka;
                k.security = KafkaSecurity {
                    protocol: Some(protocol),
                    mechanism,
                    ..KafkaSecurity::default()
                };
                if mechanism.is_some_and(SaslMechanism::uses_password) {
                    k.security.username = Some("u".into());
                    k.security.password = Some(SecretSource::Env("P".into()));
                    k.security.secrets.sasl_password = Some(Secret::new("p"));
                }
                if mechanism == Some(SaslMechanism::OauthBearer) && !lib.features.contains("oidc") {
                    k.properties.insert(
                        "sasl.oauthbearer.config".into(),
                        "principal=groundgate".into(),
                    );
                } else if mechanism == Some(SaslMechanism::OauthBearer) {
                    // A port nothing listens on: the token request fails at once.
                    k.security.oidc = Some(Oidc {
                        token_endpoint: "http://127.0.0.1:9/token".into(),
                        client_id: "id".into(),
                        client_secret: SecretSource::File("/s".into()),
                        scope: None,
                    });
                    k.security.secrets.oidc_client_secret = Some(Secret::new("s"));
                }
                let what = format!("{} {:?}", protocol.as_str(), mechanism.map(|m| m.as_str()));
                let p: Result<BaseProducer, _> = producer(&k, "127.0.0.1:9").create();
                assert!(p.is_ok(), "producer {what}: {:?}", p.err());
                let c: Result<BaseConsumer, _> = consumer(&k, "127.0.0.1:9", None).create();
                assert!(c.is_ok(), "consumer {what}: {:?}", c.err());
                combos += 1;
            }
        }
        // PLAINTEXT, SSL, and PLAIN, SCRAM-SHA-256/512, OAUTHBEARER over both SASL protocols.
        assert!(combos >= 10, "{combos} combinations in {lib:?}");
    }

    #[test]
    fn the_liveness_bound_is_max_poll_interval_as_passed_through() {
        let mut k = crate::config::Config::default().kafka;
        assert_eq!(max_poll_interval(&k), Duration::from_secs(300));
        k.properties
            .insert("max.poll.interval.ms".into(), "600000".into());
        assert_eq!(max_poll_interval(&k), Duration::from_secs(600));
    }
}
