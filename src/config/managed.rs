//! The librdkafka properties groundgate sets itself, in one list that both
//! sides read: configuration validation refuses them in `kafka.properties` /
//! `-X`, and the Kafka client settings (the `kafka` module) set exactly
//! these (a unit test there checks it). Also the secrets that must never be
//! passed through, and the properties a typed `[kafka]` key maps to.
//!
//! Data only: nothing here reads, connects or logs.

/// A librdkafka property groundgate sets itself and refuses in
/// `kafka.properties` / `-X`.
#[derive(Debug, Clone, Copy)]
pub struct Managed {
    /// The property name, as librdkafka spells it.
    pub key: &'static str,
    /// Other names librdkafka accepts for the same property.
    pub aliases: &'static [&'static str],
    /// What groundgate sets and why overriding it would break a promise.
    pub why: &'static str,
    /// The groundgate setting to use instead, if there is one.
    pub instead: Option<&'static str>,
}

/// Every librdkafka property the worker manages. Changing any of them
/// through the passthrough would silently weaken the delivery guarantee or
/// contradict a groundgate setting, so config validation refuses them.
pub const MANAGED: &[Managed] = &[
    Managed {
        key: "bootstrap.servers",
        aliases: &["metadata.broker.list"],
        why: "the brokers",
        instead: Some("kafka.brokers / --brokers"),
    },
    Managed {
        key: "client.id",
        aliases: &[],
        why: "the client id reported to the brokers",
        instead: Some("kafka.client_id / --client-id"),
    },
    Managed {
        key: "group.id",
        aliases: &[],
        why: "the consumer group",
        instead: Some("kafka.group_id / --group-id"),
    },
    Managed {
        key: "group.instance.id",
        aliases: &[],
        why: "static group membership",
        instead: Some("kafka.group_instance_id"),
    },
    Managed {
        key: "session.timeout.ms",
        aliases: &[],
        why: "how long the group waits for a member that stopped without leaving",
        instead: Some("kafka.session_timeout_ms"),
    },
    Managed {
        key: "partition.assignment.strategy",
        aliases: &[],
        why: "cooperative-sticky: the rebalance callbacks drain and commit only the revoked partitions",
        instead: None,
    },
    Managed {
        key: "auto.offset.reset",
        aliases: &[],
        why: "earliest: a new group reads the input from its start, so no record is skipped",
        instead: None,
    },
    Managed {
        key: "enable.partition.eof",
        aliases: &[],
        why: "false: end-of-partition events are not records",
        instead: None,
    },
    Managed {
        key: "isolation.level",
        aliases: &[],
        why: "read_committed: records of aborted transactions are never validated",
        instead: None,
    },
    Managed {
        key: "enable.auto.offset.store",
        aliases: &[],
        why: "false: an offset is stored only after both outputs of its record are acknowledged",
        instead: None,
    },
    Managed {
        key: "enable.auto.commit",
        aliases: &["auto.commit.enable"],
        why: "true for at-least-once (commits only stored offsets), false for exactly-once (offsets travel in the transaction)",
        instead: Some("kafka.guarantee"),
    },
    Managed {
        key: "auto.commit.interval.ms",
        aliases: &[],
        why: "how often stored offsets are committed",
        instead: Some("kafka.commit_interval_ms"),
    },
    Managed {
        key: "statistics.interval.ms",
        aliases: &[],
        why: "the consumer lag metric",
        instead: Some("metrics.statistics_interval_ms"),
    },
    Managed {
        key: "enable.idempotence",
        aliases: &[],
        why: "true: re-sent outputs are not duplicated and stay in order",
        instead: None,
    },
    Managed {
        key: "acks",
        aliases: &["request.required.acks"],
        why: "all: an output counts as published only once every in-sync replica has it",
        instead: None,
    },
    Managed {
        key: "transactional.id",
        aliases: &[],
        why: "the exactly-once producer identity (fences a zombie predecessor)",
        instead: Some("kafka.transactional_id"),
    },
    Managed {
        key: "transaction.timeout.ms",
        aliases: &[],
        why: "exactly-once: kafka.commit_interval_ms plus 95 s (60 s for the commit's calls, and request.timeout.ms, 30 s, plus 5 s for its outputs' acknowledgements), so that the coordinator does not abort a transaction (and fence the producer) before its commit is due",
        instead: Some("kafka.commit_interval_ms"),
    },
    Managed {
        key: "message.max.bytes",
        aliases: &[],
        why: "the largest output, checked against max_record_bytes at start",
        instead: Some("kafka.max_message_bytes"),
    },
];

/// Keys set by the client settings as defaults for throughput only; a
/// passthrough may change them.
pub const TUNABLE: &[&str] = &["linger.ms", "compression.type"];

/// librdkafka properties that carry a secret. They are refused in
/// `kafka.properties` and `-X` (a command line is visible to every user of
/// the machine, a configuration file is usually not a secret): each has a
/// typed key that reads the secret from a file or an environment variable.
pub const SECRETS: &[Managed] = &[
    Managed {
        key: "sasl.password",
        aliases: &[],
        why: "the SASL password",
        instead: Some("kafka.sasl_password_file or kafka.sasl_password_env"),
    },
    Managed {
        key: "ssl.key.password",
        aliases: &[],
        why: "the passphrase of the client key",
        instead: Some("kafka.ssl_key_password_file"),
    },
    Managed {
        key: "sasl.oauthbearer.client.secret",
        aliases: &[],
        why: "the OIDC client secret",
        instead: Some("kafka.oidc_client_secret_file"),
    },
    Managed {
        key: "ssl.keystore.password",
        aliases: &[],
        why: "the PKCS#12 keystore password",
        instead: Some("kafka.ssl_certificate_file and kafka.ssl_key_file (PEM)"),
    },
    Managed {
        key: "ssl.key.pem",
        aliases: &[],
        why: "the client key itself",
        instead: Some("kafka.ssl_key_file"),
    },
    // The OIDC JWT-bearer grant signs its assertion with a private key of
    // its own; librdkafka reads it from a file as well.
    Managed {
        key: "sasl.oauthbearer.assertion.private.key.pem",
        aliases: &[],
        why: "the private key that signs the OIDC assertion",
        instead: Some("-X sasl.oauthbearer.assertion.private.key.file=PATH (a file holding it)"),
    },
    Managed {
        key: "sasl.oauthbearer.assertion.private.key.passphrase",
        aliases: &[],
        why: "the passphrase of the key that signs the OIDC assertion",
        instead: Some(
            "an unencrypted key in -X sasl.oauthbearer.assertion.private.key.file=PATH, readable by the worker alone",
        ),
    },
];

/// A librdkafka property that a typed `[kafka]` key sets. Passing it through
/// as well is refused (two values for one setting); without the typed key
/// the passthrough is free to set it.
#[derive(Debug, Clone, Copy)]
pub struct Typed {
    /// The property name, as librdkafka spells it.
    pub key: &'static str,
    /// Other names librdkafka accepts for the same property.
    pub aliases: &'static [&'static str],
    /// The typed key that sets it.
    pub setting: &'static str,
}

/// Every librdkafka property a typed `[kafka]` security key sets.
pub const TYPED: &[Typed] = &[
    Typed {
        key: "security.protocol",
        aliases: &[],
        setting: "kafka.security_protocol",
    },
    Typed {
        key: "sasl.mechanism",
        aliases: &["sasl.mechanisms"],
        setting: "kafka.sasl_mechanism",
    },
    Typed {
        key: "sasl.username",
        aliases: &[],
        setting: "kafka.sasl_username",
    },
    Typed {
        key: "ssl.ca.location",
        aliases: &[],
        setting: "kafka.ssl_ca_file",
    },
    Typed {
        key: "ssl.certificate.location",
        aliases: &[],
        setting: "kafka.ssl_certificate_file",
    },
    Typed {
        key: "ssl.key.location",
        aliases: &[],
        setting: "kafka.ssl_key_file",
    },
    Typed {
        key: "sasl.oauthbearer.method",
        aliases: &[],
        setting: "kafka.oidc_token_endpoint",
    },
    Typed {
        key: "sasl.oauthbearer.token.endpoint.url",
        aliases: &[],
        setting: "kafka.oidc_token_endpoint",
    },
    Typed {
        key: "sasl.oauthbearer.client.id",
        aliases: &[],
        setting: "kafka.oidc_client_id",
    },
    Typed {
        key: "sasl.oauthbearer.scope",
        aliases: &[],
        setting: "kafka.oidc_scope",
    },
];

/// librdkafka accepts any topic-level property with a `topic.` prefix
/// (`topic.acks` is `acks`): a key is matched with and without it, and by
/// name or alias, case-insensitively.
fn find<'a, T>(table: &'a [T], key: &str, names: impl Fn(&T) -> (&str, &[&str])) -> Option<&'a T> {
    let key = key.trim();
    let bare = key
        .get(..6)
        .filter(|p| p.eq_ignore_ascii_case("topic."))
        .map_or(key, |_| &key[6..]);
    table.iter().find(|entry| {
        let (name, aliases) = names(entry);
        [key, bare].iter().any(|k| {
            name.eq_ignore_ascii_case(k) || aliases.iter().any(|a| a.eq_ignore_ascii_case(k))
        })
    })
}

/// The managed entry a passthrough key collides with.
pub fn managed(key: &str) -> Option<&'static Managed> {
    find(MANAGED, key, |m| (m.key, m.aliases))
}

/// The secret a passthrough key would carry.
pub fn secret(key: &str) -> Option<&'static Managed> {
    find(SECRETS, key, |m| (m.key, m.aliases))
}

/// Whether validation refuses this passthrough key whatever its value:
/// groundgate manages it, or it would carry a secret.
pub fn refused(key: &str) -> bool {
    managed(key).is_some() || secret(key).is_some()
}

/// The typed key that also sets this passthrough key.
pub fn typed(key: &str) -> Option<&'static Typed> {
    find(TYPED, key, |t| (t.key, t.aliases))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_case_and_topic_prefix_are_recognised() {
        assert_eq!(
            managed("request.required.acks").map(|m| m.key),
            Some("acks")
        );
        assert_eq!(managed(" ACKS ").map(|m| m.key), Some("acks"));
        assert_eq!(managed("topic.acks").map(|m| m.key), Some("acks"));
        assert_eq!(
            managed("topic.request.required.acks").map(|m| m.key),
            Some("acks")
        );
        assert_eq!(
            managed("metadata.broker.list").map(|m| m.key),
            Some("bootstrap.servers")
        );
        assert!(managed("security.protocol").is_none());
        assert!(managed("linger.ms").is_none());
        assert!(managed("topic.").is_none());
        assert_eq!(
            secret("SASL.PASSWORD").map(|m| m.key),
            Some("sasl.password")
        );
        for assertion in ["pem", "passphrase"] {
            let key = format!("sasl.oauthbearer.assertion.private.key.{assertion}");
            assert!(refused(&key), "{key}");
        }
        assert!(!refused("sasl.oauthbearer.assertion.private.key.file"));
        assert_eq!(
            typed("sasl.mechanisms").map(|t| t.setting),
            Some("kafka.sasl_mechanism")
        );
    }

    #[test]
    fn no_key_is_in_two_tables() {
        for m in MANAGED.iter().chain(SECRETS) {
            for k in std::iter::once(&m.key).chain(m.aliases) {
                let hits = [
                    managed(k).is_some(),
                    secret(k).is_some(),
                    typed(k).is_some(),
                ];
                assert_eq!(hits.iter().filter(|h| **h).count(), 1, "{k}");
            }
        }
        for t in TYPED {
            assert!(
                managed(t.key).is_none() && secret(t.key).is_none(),
                "{}",
                t.key
            );
        }
    }
}
