//! The typed `[kafka]` security settings: protocol, SASL mechanism and
//! credentials, TLS files and OIDC, checked against each other and against
//! the passthrough, then (for the commands that connect) against the files,
//! the environment and what librdkafka was built with.
//!
//! Secrets are never held in a type that prints them: a [`Secret`] shows as
//! `"***"` in `Debug` and has no `Display` or `Serialize`. Checks name the
//! key, the file or the variable, never the value.
//!
//! Pure: the reading of files and variables and the librdkafka build's
//! features are passed in (by `load`, the shell side of configuration).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::RawKafka;
use super::secret_file::FileError;

/// What is said of a setting or secret holding a NUL byte: librdkafka
/// takes each as a C string, which the byte would end early.
pub(super) const NUL_REFUSED: &str = "holds a NUL byte, which librdkafka cannot take";

/// The most bytes a password or client secret file may hold: a larger one
/// is not such a file (a key or a log given by mistake).
pub const MAX_SECRET_BYTES: u64 = 64 * 1024;

/// The value of an environment variable is not UTF-8 text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotUtf8;

/// `security.protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SecurityProtocol {
    #[serde(rename = "PLAINTEXT", alias = "plaintext")]
    Plaintext,
    #[serde(rename = "SSL", alias = "ssl")]
    Ssl,
    #[serde(rename = "SASL_PLAINTEXT", alias = "sasl_plaintext")]
    SaslPlaintext,
    #[serde(rename = "SASL_SSL", alias = "sasl_ssl")]
    SaslSsl,
}

impl SecurityProtocol {
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    /// As librdkafka spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    fn parse(s: &str) -> Option<SecurityProtocol> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
    }

    pub fn tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    pub fn sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

/// `sasl.mechanism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SaslMechanism {
    #[serde(rename = "PLAIN")]
    Plain,
    #[serde(rename = "SCRAM-SHA-256")]
    ScramSha256,
    #[serde(rename = "SCRAM-SHA-512")]
    ScramSha512,
    #[serde(rename = "OAUTHBEARER")]
    OauthBearer,
    #[serde(rename = "GSSAPI")]
    Gssapi,
}

impl SaslMechanism {
    pub const ALL: [SaslMechanism; 5] = [
        SaslMechanism::Plain,
        SaslMechanism::ScramSha256,
        SaslMechanism::ScramSha512,
        SaslMechanism::OauthBearer,
        SaslMechanism::Gssapi,
    ];

    /// As librdkafka spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::OauthBearer => "OAUTHBEARER",
            SaslMechanism::Gssapi => "GSSAPI",
        }
    }

    fn parse(s: &str) -> Option<SaslMechanism> {
        Self::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s.trim()))
    }

    /// The entry of librdkafka's `builtin.features` this mechanism needs.
    pub fn feature(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "sasl_plain",
            SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => "sasl_scram",
            SaslMechanism::OauthBearer => "sasl_oauthbearer",
            SaslMechanism::Gssapi => "sasl_gssapi",
        }
    }

    /// Whether it authenticates with a user name and password.
    pub fn uses_password(self) -> bool {
        matches!(
            self,
            SaslMechanism::Plain | SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512
        )
    }
}

/// Where a secret is read from at start; the value itself is never part of
/// the configuration layers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// An environment variable (any name, e.g. `KAFKA_PASSWORD`).
    Env(String),
    /// A file (e.g. a mounted Kubernetes Secret); one trailing newline is dropped.
    File(PathBuf),
}

/// A secret value. Prints as `***`; there is no other way to see it than
/// [`Secret::expose`], which the client settings call once.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}

/// OAUTHBEARER with an OIDC token endpoint (client-credentials grant).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Oidc {
    pub token_endpoint: String,
    pub client_id: String,
    pub client_secret: SecretSource,
    pub scope: Option<String>,
}

/// The secrets read at start, by the commands that connect to Kafka.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Secrets {
    pub sasl_password: Option<Secret>,
    pub ssl_key_password: Option<Secret>,
    pub oidc_client_secret: Option<Secret>,
}

/// The validated security settings; everything `None` leaves librdkafka's
/// defaults (PLAINTEXT) or the passthrough in charge.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KafkaSecurity {
    pub protocol: Option<SecurityProtocol>,
    pub mechanism: Option<SaslMechanism>,
    pub username: Option<String>,
    pub password: Option<SecretSource>,
    pub ca_file: Option<PathBuf>,
    pub certificate_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    pub key_password: Option<SecretSource>,
    pub oidc: Option<Oidc>,
    /// Filled by [`check_access`]; empty after validation alone.
    pub secrets: Secrets,
}

/// Checks the typed security keys against each other and the passthrough
/// `properties`; lists every problem.
pub(super) fn validate_security(raw: &RawKafka, problems: &mut Vec<String>) -> KafkaSecurity {
    let props = &raw.properties;
    let passed = |key: &str| passthrough(props, key);
    let protocol = raw
        .security_protocol
        .or_else(|| passed("security.protocol").and_then(|v| SecurityProtocol::parse(&v)));
    let mechanism = raw
        .sasl_mechanism
        .or_else(|| passed("sasl.mechanism").and_then(|v| SaslMechanism::parse(&v)));

    let password = one_source(
        ("kafka.sasl_password_env", raw.sasl_password_env.as_ref()),
        ("kafka.sasl_password_file", raw.sasl_password_file.as_ref()),
        problems,
    );
    let key_password = raw.ssl_key_password_file.clone().map(SecretSource::File);
    let username = raw.sasl_username.clone().filter(|u| !u.trim().is_empty());

    match (protocol, mechanism) {
        (Some(p), Some(m)) if !p.sasl() => problems.push(format!(
            "kafka.sasl_mechanism = {:?} needs kafka.security_protocol = \"SASL_SSL\" (or \"SASL_PLAINTEXT\"), not {:?}",
            m.as_str(),
            p.as_str()
        )),
        (None, Some(m)) => problems.push(format!(
            "kafka.sasl_mechanism = {:?} needs kafka.security_protocol = \"SASL_SSL\" (or \"SASL_PLAINTEXT\")",
            m.as_str()
        )),
        (Some(p), None) if p.sasl() => problems.push(format!(
            "kafka.security_protocol = {:?} needs kafka.sasl_mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI)",
            p.as_str()
        )),
        _ => {}
    }
    let by_password = mechanism.is_some_and(SaslMechanism::uses_password);
    if by_password {
        if username.is_none() && passed("sasl.username").is_none() {
            problems.push(format!(
                "kafka.sasl_mechanism = {:?} needs kafka.sasl_username",
                mechanism.map_or("", SaslMechanism::as_str)
            ));
        }
        if password.is_none() {
            problems.push(format!(
                "kafka.sasl_mechanism = {:?} needs a password: kafka.sasl_password_file (a file, e.g. a mounted secret) or kafka.sasl_password_env (the name of an environment variable)",
                mechanism.map_or("", SaslMechanism::as_str)
            ));
        }
    } else {
        for (set, key) in [
            (username.is_some(), "kafka.sasl_username"),
            (password.is_some(), "kafka.sasl_password_*"),
        ] {
            if set {
                problems.push(format!(
                    "{key} is set but kafka.sasl_mechanism is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
                ));
            }
        }
    }

    let oidc = validate_oidc(raw, mechanism, problems);
    if mechanism == Some(SaslMechanism::OauthBearer)
        && oidc.is_none()
        && raw.oidc_token_endpoint.is_none()
        && passed("sasl.oauthbearer.method").is_none()
        && passed("sasl.oauthbearer.config").is_none()
    {
        problems.push(
            "kafka.sasl_mechanism = \"OAUTHBEARER\" needs kafka.oidc_token_endpoint, kafka.oidc_client_id and kafka.oidc_client_secret_file".into(),
        );
    }

    let files = [
        ("kafka.ssl_ca_file", &raw.ssl_ca_file),
        ("kafka.ssl_certificate_file", &raw.ssl_certificate_file),
        ("kafka.ssl_key_file", &raw.ssl_key_file),
        ("kafka.ssl_key_password_file", &raw.ssl_key_password_file),
    ];
    if let Some(p) = protocol.filter(|p| !p.tls()) {
        for (key, value) in files {
            if value.is_some() {
                problems.push(format!(
                    "{key} is set but kafka.security_protocol = {:?} does not use TLS (use \"SSL\" or \"SASL_SSL\")",
                    p.as_str()
                ));
            }
        }
    }
    match (&raw.ssl_certificate_file, &raw.ssl_key_file) {
        (Some(_), None) => problems.push(
            "kafka.ssl_certificate_file needs kafka.ssl_key_file (the client certificate's private key)".into(),
        ),
        (None, Some(_)) => problems.push(
            "kafka.ssl_key_file needs kafka.ssl_certificate_file (the client certificate)".into(),
        ),
        _ => {}
    }
    if raw.ssl_key_password_file.is_some() && raw.ssl_key_file.is_none() {
        problems.push("kafka.ssl_key_password_file needs kafka.ssl_key_file".into());
    }

    // The passthrough may set what no typed key sets; one value per setting.
    for key in props.keys() {
        if let Some(t) = super::managed::typed(key)
            && typed_is_set(raw, t.setting)
        {
            problems.push(format!(
                "kafka.properties {key:?} (-X {key}=...) and {} set the same librdkafka property: keep one",
                t.setting
            ));
        }
    }

    KafkaSecurity {
        protocol,
        mechanism,
        username,
        password,
        ca_file: raw.ssl_ca_file.clone(),
        certificate_file: raw.ssl_certificate_file.clone(),
        key_file: raw.ssl_key_file.clone(),
        key_password,
        oidc,
        secrets: Secrets::default(),
    }
}

fn validate_oidc(
    raw: &RawKafka,
    mechanism: Option<SaslMechanism>,
    problems: &mut Vec<String>,
) -> Option<Oidc> {
    let keys = [
        (
            "kafka.oidc_token_endpoint",
            raw.oidc_token_endpoint.is_some(),
        ),
        ("kafka.oidc_client_id", raw.oidc_client_id.is_some()),
        (
            "kafka.oidc_client_secret_file",
            raw.oidc_client_secret_file.is_some(),
        ),
        ("kafka.oidc_scope", raw.oidc_scope.is_some()),
    ];
    if !keys.iter().any(|(_, set)| *set) {
        return None;
    }
    if mechanism != Some(SaslMechanism::OauthBearer) {
        for (key, set) in keys {
            if set {
                problems.push(format!(
                    "{key} is set but kafka.sasl_mechanism is not \"OAUTHBEARER\""
                ));
            }
        }
        return None;
    }
    for (key, set) in &keys[..3] {
        if !set {
            problems.push(format!(
                "{key} is missing: OAUTHBEARER with OIDC needs kafka.oidc_token_endpoint, kafka.oidc_client_id and kafka.oidc_client_secret_file"
            ));
        }
    }
    let endpoint = raw.oidc_token_endpoint.clone().unwrap_or_default();
    if raw.oidc_token_endpoint.is_some()
        && !(endpoint.starts_with("https://") || endpoint.starts_with("http://"))
    {
        problems.push(format!(
            "kafka.oidc_token_endpoint = {endpoint:?}: not an http(s) URL (example: https://login.example.com/oauth2/token)"
        ));
    }
    Some(Oidc {
        token_endpoint: endpoint,
        client_id: raw.oidc_client_id.clone()?,
        client_secret: SecretSource::File(raw.oidc_client_secret_file.clone()?),
        scope: raw.oidc_scope.clone(),
    })
}

/// At most one of two ways to give a secret.
fn one_source(
    env: (&str, Option<&String>),
    file: (&str, Option<&PathBuf>),
    problems: &mut Vec<String>,
) -> Option<SecretSource> {
    match (env.1, file.1) {
        (Some(_), Some(_)) => {
            problems.push(format!("{} and {} are both set: keep one", env.0, file.0));
            None
        }
        (Some(var), None) if var.trim().is_empty() => {
            problems.push(format!("{} is blank: name an environment variable", env.0));
            None
        }
        (Some(var), None) => Some(SecretSource::Env(var.trim().to_string())),
        (None, Some(path)) => Some(SecretSource::File(path.clone())),
        (None, None) => None,
    }
}

fn typed_is_set(raw: &RawKafka, setting: &str) -> bool {
    match setting {
        "kafka.security_protocol" => raw.security_protocol.is_some(),
        "kafka.sasl_mechanism" => raw.sasl_mechanism.is_some(),
        "kafka.sasl_username" => raw.sasl_username.is_some(),
        "kafka.ssl_ca_file" => raw.ssl_ca_file.is_some(),
        "kafka.ssl_certificate_file" => raw.ssl_certificate_file.is_some(),
        "kafka.ssl_key_file" => raw.ssl_key_file.is_some(),
        "kafka.oidc_token_endpoint" => raw.oidc_token_endpoint.is_some(),
        "kafka.oidc_client_id" => raw.oidc_client_id.is_some(),
        "kafka.oidc_scope" => raw.oidc_scope.is_some(),
        _ => false,
    }
}

/// A passthrough value by librdkafka name or alias.
fn passthrough(props: &BTreeMap<String, String>, key: &str) -> Option<String> {
    let wanted = super::managed::typed(key).map_or(key, |t| t.key);
    props
        .iter()
        .find(|(k, _)| {
            k.trim().eq_ignore_ascii_case(key)
                || super::managed::typed(k).is_some_and(|t| t.key == wanted)
        })
        .map(|(_, v)| v.clone())
}

/// What the commands that connect need from outside the configuration.
pub struct Access<'a> {
    /// Reads at most so many bytes of a regular file (the shell passes
    /// [`super::secret_file::read`]).
    pub read: &'a ReadBounded<'a>,
    /// Reads an environment variable: `None` when it is not set, an error
    /// when its value is not UTF-8 (the value is not kept, so it cannot be
    /// shown).
    pub var: &'a dyn Fn(&str) -> Option<Result<String, NotUtf8>>,
    /// librdkafka's `builtin.features` (`None`: not checked).
    pub features: Option<&'a BTreeSet<String>>,
    /// Why librdkafka refuses a property and its value, if it does (`None`:
    /// not checked). Asked of each passthrough property alone, so every
    /// refused one is listed, not only the first the client would meet.
    pub refuses: Option<&'a Refuses<'a>>,
    /// Why librdkafka would not create the clients from the settings taken
    /// together, one problem a client (`None`: not checked). Asked only of
    /// a configuration whose every value was read and valid and whose
    /// every passthrough property librdkafka takes alone.
    pub clients: Option<&'a RefusesClients<'a>>,
}

/// Reads at most so many bytes of a regular file.
pub type ReadBounded<'a> = dyn Fn(&Path, u64) -> Result<Vec<u8>, FileError> + 'a;

/// Why librdkafka refuses a property and its value, if it does.
pub type Refuses<'a> = dyn Fn(&str, &str) -> Option<String> + 'a;

/// Why librdkafka would not create the clients from these settings.
pub type RefusesClients<'a> = dyn Fn(&super::KafkaConfig) -> Vec<String> + 'a;

/// For the commands that connect: the TLS files must be readable, the
/// secrets are read, and everything the settings ask of librdkafka (TLS,
/// the SASL mechanism, OIDC, the compression codec) must be built in.
/// Lists every problem, naming the key (and the file or variable), never a
/// secret. Runs on a configuration that failed validation too: a setting
/// that could not be read is absent and a secret with two sources is none,
/// so nothing is checked for them, and a passthrough property groundgate
/// refuses is not put to librdkafka.
pub fn check_access(
    security: &KafkaSecurity,
    properties: &BTreeMap<String, String>,
    access: &Access<'_>,
    problems: &mut Vec<String>,
) -> Secrets {
    // Only whether they can be opened: librdkafka reads them itself. The
    // key file holds a secret, so a value of it that names nothing is not
    // shown (it may be the key's text itself).
    let files = [
        ("kafka.ssl_ca_file", &security.ca_file, false),
        (
            "kafka.ssl_certificate_file",
            &security.certificate_file,
            false,
        ),
        ("kafka.ssl_key_file", &security.key_file, true),
    ];
    for (key, path, secret) in files {
        if let Some(path) = path
            && let Err(e) = (access.read)(path, 0)
        {
            problems.push(super::secret_file::problem(key, path, secret, &e));
        }
    }
    let mut secret = |key: &str, source: &Option<SecretSource>| -> Option<Secret> {
        let text = match source.as_ref()? {
            SecretSource::Env(var) => match (access.var)(var) {
                Some(Ok(v)) => v,
                Some(Err(NotUtf8)) => {
                    problems.push(format!(
                        "{key}: the environment variable {var} is not UTF-8 text"
                    ));
                    return None;
                }
                // Like a secret file's path, the name is shown only when it
                // names something: it may be the password itself.
                None => {
                    problems.push(format!(
                        "{key}: the environment variable it names is not set; its name is not shown, since it names nothing in this environment and may be the secret itself ({} character(s))",
                        var.chars().count()
                    ));
                    return None;
                }
            },
            SecretSource::File(path) => {
                let bytes = match (access.read)(path, MAX_SECRET_BYTES + 1) {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        problems.push(super::secret_file::problem(key, path, true, &e));
                        return None;
                    }
                };
                let shown = path.display().to_string();
                if bytes.len() as u64 > MAX_SECRET_BYTES {
                    problems.push(format!(
                        "{key} = {shown:?}: the file is larger than {MAX_SECRET_BYTES} bytes: is it the right file?"
                    ));
                    return None;
                }
                match String::from_utf8(bytes) {
                    Ok(s) => s,
                    Err(_) => {
                        problems.push(format!("{key} = {shown:?}: not UTF-8 text"));
                        return None;
                    }
                }
            }
        };
        let text = super::secret_file::without_line_end(text);
        // A NUL would end the C string librdkafka is given; the client
        // would refuse it with "FFI nul error" and no key named.
        let wrong = if text.is_empty() {
            Some(("is empty", ""))
        } else if text.contains('\0') {
            Some((NUL_REFUSED, ": is it the right file?"))
        } else {
            None
        };
        if let Some((what, file_hint)) = wrong {
            problems.push(match source.as_ref()? {
                SecretSource::Env(var) => {
                    format!("{key}: the environment variable {var} {what}")
                }
                SecretSource::File(path) => format!(
                    "{key} = {:?}: the file {what}{file_hint}",
                    path.display().to_string()
                ),
            });
            return None;
        }
        Some(Secret(text))
    };
    let password_key = match &security.password {
        Some(SecretSource::Env(_)) => "kafka.sasl_password_env",
        _ => "kafka.sasl_password_file",
    };
    let secrets = Secrets {
        sasl_password: secret(password_key, &security.password),
        ssl_key_password: secret("kafka.ssl_key_password_file", &security.key_password),
        oidc_client_secret: secret(
            "kafka.oidc_client_secret_file",
            &security.oidc.as_ref().map(|o| o.client_secret.clone()),
        ),
    };
    if let Some(refuses) = access.refuses {
        // A property groundgate refuses is to be removed whatever its value,
        // which validation already says; librdkafka's view of the value
        // would name it a second time.
        let kept = properties
            .iter()
            .filter(|(k, _)| !super::managed::refused(k));
        for (k, v) in kept {
            if let Some(why) = refuses(k, v) {
                problems.push(format!(
                    "kafka.properties {k:?} (-X {k}=...): librdkafka refuses it: {why}"
                ));
            }
        }
    }
    if let Some(features) = access.features {
        for (key, feature) in needed_features(security, properties) {
            if !features.contains(feature) {
                problems.push(format!(
                    "{key} needs librdkafka feature {feature:?}, which this build lacks (builtin.features: {}; `groundgate --version` lists them)",
                    features.iter().cloned().collect::<Vec<_>>().join(",")
                ));
            }
        }
    }
    secrets
}

/// Which `builtin.features` entries the settings need, by the key that asks.
pub fn needed_features(
    security: &KafkaSecurity,
    properties: &BTreeMap<String, String>,
) -> Vec<(String, &'static str)> {
    let mut needed = Vec::new();
    let protocol_key = if properties
        .keys()
        .any(|k| k.trim().eq_ignore_ascii_case("security.protocol"))
    {
        "kafka.properties \"security.protocol\""
    } else {
        "kafka.security_protocol"
    };
    if security.protocol.is_some_and(SecurityProtocol::tls) {
        needed.push((protocol_key.to_string(), "ssl"));
    }
    if let Some(m) = security.mechanism {
        needed.push(("kafka.sasl_mechanism".to_string(), m.feature()));
    }
    if security.oidc.is_some()
        || passthrough(properties, "sasl.oauthbearer.method")
            .is_some_and(|v| v.eq_ignore_ascii_case("oidc"))
    {
        needed.push(("kafka.oidc_token_endpoint".to_string(), "oidc"));
    }
    for (k, v) in properties {
        let k = k.trim();
        if ["compression.type", "compression.codec"]
            .iter()
            .any(|c| c.eq_ignore_ascii_case(k))
        {
            let feature = match v.trim().to_ascii_lowercase().as_str() {
                "zstd" => Some("zstd"),
                "lz4" => Some("lz4"),
                "snappy" => Some("snappy"),
                "gzip" => Some("gzip"),
                _ => None,
            };
            if let Some(f) = feature {
                needed.push((format!("kafka.properties {k:?} = {v:?}"), f));
            }
        }
    }
    needed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConfigError, RawConfig};

    fn assert_all(all: &str, needles: &[&str]) {
        for needle in needles {
            assert!(all.contains(needle), "missing {needle:?} in:\n{all}");
        }
    }

    fn problems(toml: &str) -> String {
        match RawConfig::from_toml_str(toml).and_then(RawConfig::validate) {
            Ok(_) => String::new(),
            Err(ConfigError::Invalid(p)) => p.join("\n"),
            Err(e) => e.to_string(),
        }
    }

    fn security(toml: &str) -> KafkaSecurity {
        RawConfig::from_toml_str(toml)
            .and_then(RawConfig::validate)
            .unwrap()
            .kafka
            .security
    }

    #[test]
    fn typed_keys_parse_as_librdkafka_spells_them() {
        let s = security(
            "[kafka]\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"SCRAM-SHA-512\"\nsasl_username = \"u\"\nsasl_password_env = \"KAFKA_PASSWORD\"\nssl_ca_file = \"/ca.pem\"\n",
        );
        assert_eq!(s.protocol, Some(SecurityProtocol::SaslSsl));
        assert_eq!(s.mechanism, Some(SaslMechanism::ScramSha512));
        assert_eq!(s.password, Some(SecretSource::Env("KAFKA_PASSWORD".into())));
        let s = security("[kafka]\nsecurity_protocol = \"ssl\"\n");
        assert_eq!(s.protocol, Some(SecurityProtocol::Ssl));
        // The passthrough alone still works, and is understood.
        let s = security(
            "[kafka.properties]\n\"security.protocol\" = \"sasl_ssl\"\n\"sasl.mechanisms\" = \"PLAIN\"\n\"sasl.username\" = \"u\"\n[kafka]\nsasl_password_file = \"/p\"\n",
        );
        assert_eq!(s.protocol, Some(SecurityProtocol::SaslSsl));
        assert_eq!(s.mechanism, Some(SaslMechanism::Plain));
    }

    #[test]
    fn a_setting_holding_a_nul_byte_is_named_by_its_key_and_a_value_passed_through_is_not_shown() {
        let all = problems(
            "[kafka]\nbrokers = \"k:9092\"\nclient_id = \"a\\u0000b\"\nsasl_username = \"u\\u0000\"\n[kafka.properties]\n\"linger.ms\" = \"5\\u0000secret\"\n\"x\\u0000y\" = \"1\"\n",
        );
        assert_all(
            &all,
            &[
                "kafka.client_id holds a NUL byte, which librdkafka cannot take",
                "kafka.sasl_username holds a NUL byte",
                "kafka.properties \"linger.ms\" (-X linger.ms=...): its value holds a NUL byte",
                "kafka.properties: the name \"x\\0y\" holds a NUL byte",
            ],
        );
        assert!(!all.contains("secret"), "{all}");
        assert!(!problems("[kafka]\nbrokers = \"k:9092\"\n").contains("NUL"));
    }

    #[test]
    fn inconsistent_settings_are_each_named() {
        let all = problems(
            "[kafka]\nsecurity_protocol = \"SASL_SSL\"\nssl_certificate_file = \"/c.pem\"\noidc_client_id = \"x\"\nsasl_password_env = \"A\"\nsasl_password_file = \"/p\"\n",
        );
        assert_all(
            &all,
            &[
                "kafka.security_protocol = \"SASL_SSL\" needs kafka.sasl_mechanism",
                "kafka.ssl_certificate_file needs kafka.ssl_key_file",
                "kafka.oidc_client_id is set but kafka.sasl_mechanism is not \"OAUTHBEARER\"",
                "kafka.sasl_password_env and kafka.sasl_password_file are both set",
            ],
        );
        let all = problems(
            "[kafka]\nsecurity_protocol = \"SASL_PLAINTEXT\"\nsasl_mechanism = \"SCRAM-SHA-256\"\nssl_ca_file = \"/ca.pem\"\n",
        );
        assert_all(
            &all,
            &[
                "needs kafka.sasl_username",
                "needs a password",
                "kafka.ssl_ca_file is set but kafka.security_protocol = \"SASL_PLAINTEXT\" does not use TLS",
            ],
        );
        let all = problems(
            "[kafka]\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"OAUTHBEARER\"\noidc_token_endpoint = \"idp/token\"\n",
        );
        assert_all(
            &all,
            &[
                "kafka.oidc_client_id is missing",
                "kafka.oidc_client_secret_file is missing",
                "not an http(s) URL",
            ],
        );
        assert!(
            problems("[kafka]\nsasl_mechanism = \"PLAIN\"\n")
                .contains("needs kafka.security_protocol")
        );
        assert!(problems("[kafka]\nsecurity_protocol = \"TLS\"\n").contains("security_protocol"));
    }

    #[test]
    fn a_setting_given_twice_or_a_secret_passed_through_is_refused() {
        let all = problems(
            "[kafka]\nsecurity_protocol = \"SSL\"\n[kafka.properties]\n\"security.protocol\" = \"SSL\"\n\"sasl.password\" = \"hunter2-secret\"\n\"ssl.key.password\" = \"k\"\n",
        );
        assert!(
            all.contains("kafka.properties \"security.protocol\" (-X security.protocol=...) and kafka.security_protocol set the same"),
            "{all}"
        );
        assert!(
            all.contains("\"sasl.password\"") && all.contains("kafka.sasl_password_file"),
            "{all}"
        );
        assert!(all.contains("\"ssl.key.password\""), "{all}");
        assert!(
            !all.contains("hunter2-secret"),
            "a refused secret is not echoed: {all}"
        );
        let all = problems(
            "[kafka.properties]\n\"sasl.oauthbearer.assertion.private.key.pem\" = \"-----BEGIN hunter2\"\n\"sasl.oauthbearer.assertion.private.key.passphrase\" = \"hunter2\"\n\"sasl.oauthbearer.assertion.private.key.file\" = \"/k.pem\"\n",
        );
        assert_eq!(all.lines().count(), 2, "{all}");
        assert!(
            all.contains("\"sasl.oauthbearer.assertion.private.key.pem\" (-X sasl.oauthbearer.assertion.private.key.pem=...) would put a secret"),
            "{all}"
        );
        assert!(!all.contains("hunter2"), "{all}");
    }

    fn access_problems(
        toml: &str,
        files: &[(&str, &str)],
        vars: &[(&str, &str)],
        features: &[&str],
    ) -> (Secrets, String) {
        let config = RawConfig::from_toml_str(toml)
            .and_then(RawConfig::validate)
            .unwrap();
        let files: BTreeMap<PathBuf, Vec<u8>> = files
            .iter()
            .map(|(p, c)| (PathBuf::from(p), c.as_bytes().to_vec()))
            .collect();
        // As on a machine where only "/" exists of each missing path.
        let read = |p: &Path, limit: u64| {
            let limit = usize::try_from(limit).unwrap_or(usize::MAX);
            files
                .get(p)
                .map(|b| b[..b.len().min(limit)].to_vec())
                .ok_or_else(|| FileError {
                    existing_dir: p.has_root().then(|| PathBuf::from("/")),
                    ..FileError::missing()
                })
        };
        let var = |n: &str| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| Ok(v.to_string()))
        };
        let features: BTreeSet<String> = features.iter().map(|f| f.to_string()).collect();
        let access = Access {
            read: &read,
            var: &var,
            features: Some(&features),
            refuses: None,
            clients: None,
        };
        let mut problems = Vec::new();
        let k = &config.kafka;
        let secrets = check_access(&k.security, &k.properties, &access, &mut problems);
        (secrets, problems.join("\n"))
    }

    const ALL: &[&str] = &[
        "ssl",
        "sasl_plain",
        "sasl_scram",
        "sasl_oauthbearer",
        "oidc",
        "zstd",
        "lz4",
        "snappy",
        "gzip",
    ];

    #[test]
    fn files_and_secrets_are_read_and_every_missing_one_is_named() {
        let toml = "[kafka]\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"SCRAM-SHA-512\"\nsasl_username = \"u\"\nsasl_password_file = \"/run/pw\"\nssl_ca_file = \"/ca.pem\"\nssl_certificate_file = \"/c.pem\"\nssl_key_file = \"/k.pem\"\n";
        let (secrets, all) = access_problems(
            toml,
            &[
                ("/run/pw", "s3cret\n"),
                ("/ca.pem", "x"),
                ("/c.pem", "x"),
                ("/k.pem", "x"),
            ],
            &[],
            ALL,
        );
        assert_eq!(all, "");
        assert_eq!(secrets.sasl_password, Some(Secret::new("s3cret")));
        assert_eq!(format!("{secrets:?}").matches("***").count(), 1);
        assert!(!format!("{secrets:?}").contains("s3cret"));

        let (_, all) = access_problems(toml, &[("/c.pem", "x")], &[], ALL);
        assert_all(
            &all,
            &[
                "kafka.ssl_ca_file = \"/ca.pem\": cannot read it: No such file",
                "kafka.ssl_key_file: cannot read it: No such file or directory (os error 2); its value is not shown, since it names nothing on this machine and may be the secret itself: of the path, only the directory \"/\" exists; the 5 character(s) after it do not",
                "kafka.sasl_password_file: cannot read it: No such file or directory (os error 2); its value is not shown",
            ],
        );
        assert!(!all.contains("c.pem\""), "{all}");
        assert!(!all.contains("/run/pw"), "{all}");

        let env = "[kafka]\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\nsasl_password_env = \"KAFKA_PW\"\n";
        let (_, all) = access_problems(env, &[], &[], ALL);
        assert!(
            all.contains(
                "kafka.sasl_password_env: the environment variable it names is not set; its name is not shown, since it names nothing in this environment and may be the secret itself (8 character(s))"
            ),
            "{all}"
        );
        assert!(!all.contains("KAFKA_PW"), "{all}");
        let (secrets, all) = access_problems(env, &[], &[("KAFKA_PW", "from-env")], ALL);
        assert_eq!(all, "");
        assert_eq!(secrets.sasl_password, Some(Secret::new("from-env")));
    }

    /// A secret is its text without one line end, whether it comes from a
    /// file or from a variable (a Kubernetes Secret made from a file keeps
    /// the file's newline, in either form).
    #[test]
    fn one_line_end_is_dropped_from_a_file_and_from_a_variable_alike() {
        let env = "[kafka]\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\nsasl_password_env = \"KAFKA_PW\"\n";
        let file = "[kafka]\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\nsasl_password_file = \"/pw\"\n";
        for (given, kept) in [("pw\n", "pw"), ("pw\r\n", "pw"), ("pw \n\n", "pw \n")] {
            let (secrets, all) = access_problems(env, &[], &[("KAFKA_PW", given)], ALL);
            assert_eq!(all, "");
            assert_eq!(secrets.sasl_password, Some(Secret::new(kept)), "{given:?}");
            let (secrets, all) = access_problems(file, &[("/pw", given)], &[], ALL);
            assert_eq!(all, "");
            assert_eq!(secrets.sasl_password, Some(Secret::new(kept)), "{given:?}");
        }
        let (_, all) = access_problems(env, &[], &[("KAFKA_PW", "\n")], ALL);
        assert!(
            all.contains("the environment variable KAFKA_PW is empty"),
            "{all}"
        );
        let (_, all) = access_problems(file, &[("/pw", "\r\n")], &[], ALL);
        assert_eq!(all, "kafka.sasl_password_file = \"/pw\": the file is empty");
    }

    /// A secret file is read no further than a secret can reach: a large
    /// file is the wrong one (a key, a log), not a password to send.
    #[test]
    fn a_secret_file_larger_than_a_secret_is_refused() {
        let toml = "[kafka]\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"OAUTHBEARER\"\noidc_token_endpoint = \"https://idp/token\"\noidc_client_id = \"c\"\noidc_client_secret_file = \"/cs\"\n";
        let big = "x".repeat(MAX_SECRET_BYTES as usize + 1);
        let (secrets, all) = access_problems(toml, &[("/cs", &big)], &[], ALL);
        assert_eq!(
            all,
            "kafka.oidc_client_secret_file = \"/cs\": the file is larger than 65536 bytes: is it the right file?"
        );
        assert_eq!(secrets.oidc_client_secret, None);
        let (secrets, all) = access_problems(toml, &[("/cs", &big[1..])], &[], ALL);
        assert_eq!(all, "");
        assert!(secrets.oidc_client_secret.is_some());
    }

    /// librdkafka takes a secret as a C string: a NUL byte in it is named
    /// with its key before any client is made, not left to the client's
    /// "FFI nul error".
    #[test]
    fn a_secret_holding_a_nul_byte_is_named_by_its_key() {
        let file = "[kafka]\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\nsasl_password_file = \"/pw\"\n";
        let (secrets, all) = access_problems(file, &[("/pw", "hun\0ter2\n")], &[], ALL);
        assert_eq!(
            all,
            "kafka.sasl_password_file = \"/pw\": the file holds a NUL byte, which librdkafka cannot take: is it the right file?"
        );
        assert_eq!(secrets.sasl_password, None);
        assert!(!all.contains("hun"), "{all}");
        let env = "[kafka]\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\nsasl_password_env = \"KAFKA_PW\"\n";
        let (_, all) = access_problems(env, &[], &[("KAFKA_PW", "a\0b")], ALL);
        assert_eq!(
            all,
            "kafka.sasl_password_env: the environment variable KAFKA_PW holds a NUL byte, which librdkafka cannot take"
        );
    }

    #[test]
    fn a_mechanism_or_codec_the_build_lacks_is_named_by_its_key() {
        let toml = "[kafka]\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"GSSAPI\"\n[kafka.properties]\n\"compression.type\" = \"zstd\"\n";
        let (_, all) = access_problems(toml, &[], &[], &["ssl", "lz4"]);
        assert_all(
            &all,
            &[
                "kafka.sasl_mechanism needs librdkafka feature \"sasl_gssapi\"",
                "kafka.properties \"compression.type\" = \"zstd\" needs librdkafka feature \"zstd\"",
            ],
        );
        assert!(!all.contains("\"ssl\", which"), "{all}");
        let (_, all) = access_problems("[kafka]\nsecurity_protocol = \"SSL\"\n", &[], &[], &[]);
        assert!(
            all.contains("kafka.security_protocol needs librdkafka feature \"ssl\""),
            "{all}"
        );
    }
}
