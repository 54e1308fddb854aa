//! Merging the layers (TOML file < `GROUNDGATE_*` environment < flags) into
//! one [`RawConfig`], listing every unknown key and type error at once.

use std::collections::BTreeSet;
use std::path::Path;

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};

use super::validate::Host;
use super::{Access, Config, ConfigError, RawConfig, RawGrounding, check_access};

impl RawConfig {
    /// Merges the layers: the optional TOML file, then `GROUNDGATE_*`
    /// environment variables, then `flags` (highest precedence).
    ///
    /// Environment: `GROUNDGATE_BROKERS`, `GROUNDGATE_GROUP_ID`,
    /// `GROUNDGATE_CLIENT_ID`, `GROUNDGATE_GUARANTEE`,
    /// `GROUNDGATE_METRICS_ADDR`, `GROUNDGATE_LOG_FORMAT`,
    /// `GROUNDGATE_LOG_LEVEL`, the top-level keys by their names
    /// (`GROUNDGATE_MAX_RECORD_BYTES`), and any nested key spelled with `__`
    /// (`GROUNDGATE_KAFKA__TOPICS__INPUT`).
    pub fn load(
        file: Option<&Path>,
        env: &[(String, String)],
        flags: RawConfig,
    ) -> Result<RawConfig, ConfigError> {
        let mut fig = Figment::new();
        if let Some(path) = file {
            if !path.is_file() {
                return Err(ConfigError::Load(format!(
                    "config file {} does not exist or is not a file",
                    path.display()
                )));
            }
            fig = fig.merge(Toml::file_exact(path));
        }
        let mut problems = Vec::new();
        match env_layer(env) {
            Ok(raw) => fig = fig.merge(Serialized::defaults(raw)),
            Err(ConfigError::Load(p)) => problems.push(p),
            Err(ConfigError::Invalid(p)) => problems.extend(p),
        }
        fig = fig.merge(Serialized::defaults(flags));
        finish_load(&fig, problems)
    }

    /// Parses one TOML document (no environment, no flags): for configuration
    /// shipped inside the binary, such as the demo's.
    pub fn from_toml_str(text: &str) -> Result<RawConfig, ConfigError> {
        finish_load(&Figment::from(Toml::string(text)), Vec::new())
    }

    /// Reads the process environment and delegates to [`RawConfig::load`].
    pub fn load_from_process(file: Option<&Path>, flags: RawConfig) -> Result<Config, ConfigError> {
        RawConfig::load(file, &process_env(), flags)?.validate_on(&process_host())
    }

    /// [`RawConfig::load_from_process`] for the commands that connect to
    /// Kafka (`run`, `produce`): the brokers must be configured, the TLS
    /// files readable, the secrets are read, and what the settings ask of
    /// librdkafka must be in its `features` (its `builtin.features`), and
    /// every passthrough property one it takes (`refuses` says why not).
    /// Every problem is listed, after those of validation.
    pub fn load_for_kafka(
        file: Option<&Path>,
        flags: RawConfig,
        features: &BTreeSet<String>,
        refuses: &dyn Fn(&str, &str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let raw = RawConfig::load(file, &process_env(), flags)?;
        let mut problems = Vec::new();
        if raw
            .kafka
            .brokers
            .as_deref()
            .is_none_or(|b| b.trim().is_empty())
        {
            problems.push(
                "kafka.brokers is not set or empty: pass --brokers host:port[,host:port], GROUNDGATE_BROKERS or kafka.brokers (for development, `groundgate dev-broker` runs an in-memory broker)".to_string(),
            );
        }
        let mut config = match raw.validate_on(&process_host()) {
            Ok(c) => c,
            Err(ConfigError::Invalid(p)) => {
                problems.extend(p);
                return Err(ConfigError::Invalid(problems));
            }
            Err(e) => return Err(e),
        };
        let read = |p: &Path| std::fs::read(p);
        let var = |name: &str| std::env::var(name).ok();
        let access = Access {
            read: &read,
            var: &var,
            features: Some(features),
            refuses: Some(refuses),
        };
        let k = &mut config.kafka;
        k.security.secrets = check_access(&k.security, &k.properties, &access, &mut problems);
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError::Invalid(problems))
        }
    }
}

const ENV_PREFIX: &str = "GROUNDGATE_";

/// The `GROUNDGATE_*` variables of this process: the environment layer.
fn process_env() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| k.starts_with(ENV_PREFIX))
        .collect()
}

/// The host this process runs on (for defaults derived from its name).
fn process_host() -> Host {
    Host {
        name: std::env::var("HOSTNAME").ok(),
    }
}

/// Names (never values: a broker list may hold credentials) of the
/// `GROUNDGATE_*` variables that [`RawConfig::load_from_process`] applies,
/// sorted, so a command can say which layers made its configuration.
pub fn env_layer_names() -> Vec<String> {
    let mut names: Vec<String> = process_env().into_iter().map(|(k, _)| k).collect();
    names.sort();
    names
}

/// Flat aliases for the settings operators set most often.
const ENV_ALIASES: &[(&str, &str)] = &[
    ("BROKERS", "kafka.brokers"),
    ("GROUP_ID", "kafka.group_id"),
    ("CLIENT_ID", "kafka.client_id"),
    ("GUARANTEE", "kafka.guarantee"),
    ("TRANSACTIONAL_ID", "kafka.transactional_id"),
    ("METRICS_ADDR", "metrics.addr"),
    ("LOG_FORMAT", "log.format"),
    ("LOG_LEVEL", "log.level"),
    ("POLICY_VERSION", "policy_version"),
    ("INCLUDE_ANSWER", "include_answer"),
    ("MAX_RECORD_BYTES", "max_record_bytes"),
    ("MAX_OUTPUT_BYTES", "max_output_bytes"),
    ("NON_CITING_PROVIDERS", "non_citing_providers"),
];

/// Top-level keys (of the file's first lines, before any section) are set
/// by their own names, like the aliases: `GROUNDGATE_MAX_RECORD_BYTES`.
/// A list is written with commas: `GROUNDGATE_NON_CITING_PROVIDERS=acme,perplexity`.
const ENV_LISTS: &[&str] = &["non_citing_providers"];

fn env_layer(env: &[(String, String)]) -> Result<RawConfig, ConfigError> {
    let mut fig = Figment::new();
    let mut unknown = Vec::new();
    let mut problems = Vec::new();
    // Two variables for one key (an alias and its nested spelling) would
    // leave the value to the order of the process environment.
    let mut set_by: std::collections::BTreeMap<String, &str> = std::collections::BTreeMap::new();
    for (k, v) in env {
        let Some(rest) = k.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        let path = match ENV_ALIASES.iter().find(|(alias, _)| *alias == rest) {
            Some((_, path)) => path.to_string(),
            None if rest.contains("__") => rest.to_ascii_lowercase().replace("__", "."),
            None => {
                unknown.push(k.clone());
                continue;
            }
        };
        if let Some(first) = set_by.insert(path.clone(), k) {
            let (a, b) = if first < k.as_str() {
                (first, k.as_str())
            } else {
                (k.as_str(), first)
            };
            problems.push(format!("{a} and {b} both set {path}: unset one of them"));
            continue;
        }
        let value: figment::value::Value = if ENV_LISTS.contains(&path.as_str()) {
            let items: Vec<String> = v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            items.into()
        } else {
            v.parse().unwrap_or_else(|_| v.clone().into())
        };
        // Strings that look like numbers must stay strings where a string is wanted.
        let value = if path.ends_with("brokers")
            || path.ends_with("_id")
            || path.starts_with("kafka.sasl_")
            || path.starts_with("kafka.ssl_")
            || path.starts_with("kafka.oidc_")
            || path.ends_with("policy_version")
            || path.contains("topics.")
        {
            figment::value::Value::from(v.clone())
        } else {
            value
        };
        // Checked one variable at a time, so every bad one is reported.
        if let Err(e) =
            Figment::from(Serialized::global(&path, value.clone())).extract::<RawConfig>()
        {
            for e in e {
                problems.push(format!("{k}={v:?}: {}", describe_kind(&e.kind)));
            }
            continue;
        }
        fig = fig.merge(Serialized::global(&path, value));
    }
    if !unknown.is_empty() {
        let known: Vec<String> = ENV_ALIASES
            .iter()
            .map(|(a, _)| format!("{ENV_PREFIX}{a}"))
            .collect();
        problems.insert(0, format!(
            "unknown environment variable(s) {}; known: {} (or a nested key spelled with __, e.g. GROUNDGATE_KAFKA__TOPICS__INPUT)",
            unknown.join(", "),
            known.join(", ")
        ));
    }
    if !problems.is_empty() {
        return Err(ConfigError::Invalid(problems));
    }
    fig.extract::<RawConfig>().map_err(|e| {
        ConfigError::Load(format!(
            "in GROUNDGATE_* environment: {}",
            describe_figment_error(e)
        ))
    })
}

/// Extracts the merged layers; on failure lists every unknown key and type
/// error (serde stops at the first one, so each leaf value is tried on its
/// own), followed by the validation problems of the keys that did parse.
fn finish_load(fig: &Figment, mut problems: Vec<String>) -> Result<RawConfig, ConfigError> {
    use figment::value::{Dict, Tag, Value};
    let first = match fig.extract::<RawConfig>() {
        Ok(raw) if problems.is_empty() => return Ok(raw),
        Ok(raw) => {
            if let Err(ConfigError::Invalid(p)) = raw.validate() {
                problems.extend(p);
            }
            return Err(ConfigError::Invalid(problems));
        }
        Err(e) => e,
    };
    // Not even a document (TOML syntax error, unreadable file): say that.
    let Ok(root) = fig.extract::<Value>() else {
        problems.push(describe_figment_error(first));
        return Err(ConfigError::Invalid(problems));
    };
    fn leaves(v: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
        match v {
            Value::Dict(_, d) if !d.is_empty() => {
                for (k, child) in d {
                    path.push(k.clone());
                    leaves(child, path, out);
                    path.pop();
                }
            }
            other => out.push((path.clone(), other.clone())),
        }
    }
    let mut all = Vec::new();
    leaves(&root, &mut Vec::new(), &mut all);
    let nest = |path: &[String], v: Value| {
        path.iter().rev().fold(v, |acc, k| {
            let mut d = Dict::new();
            d.insert(k.clone(), acc);
            Value::Dict(Tag::Default, d)
        })
    };
    let before = problems.len();
    let mut good = Figment::new();
    for (path, value) in all {
        let origin = fig
            .get_metadata(value.tag())
            .and_then(|m| m.source.as_ref())
            .and_then(|s| s.file_path())
            .map(|p| format!(" (in {})", p.display()))
            .unwrap_or_default();
        let one = Figment::from(Serialized::defaults(nest(&path, value.clone())));
        match one.extract::<RawConfig>() {
            Ok(_) => good = good.merge(Serialized::defaults(nest(&path, value))),
            Err(e) => {
                for e in e {
                    let key = path.join(".");
                    let msg = format!("{key}: {}", describe_kind(&e.kind));
                    if !problems.contains(&format!("{msg}{origin}")) {
                        problems.push(format!("{msg}{origin}"));
                    }
                }
            }
        }
    }
    if problems.len() == before {
        problems.push(describe_figment_error(first));
    }
    if let Ok(raw) = good.extract::<RawConfig>()
        && let Err(ConfigError::Invalid(p)) = raw.validate()
    {
        problems.extend(p);
    }
    Err(ConfigError::Invalid(problems))
}

/// serde's unknown-field message nests backticks (`` expected `one of `a`` ``);
/// say it plainly.
fn describe_kind(kind: &figment::error::Kind) -> String {
    match kind {
        figment::error::Kind::UnknownField(field, expected) => {
            let removed = RawGrounding::default().removed_keys();
            let live: Vec<&str> = expected
                .iter()
                .filter(|k| !removed.iter().any(|(name, _)| name == *k))
                .copied()
                .collect();
            format!(
                "unknown key {field:?} (known keys here: {})",
                live.join(", ")
            )
        }
        other => other.to_string(),
    }
}

fn describe_figment_error(e: figment::Error) -> String {
    e.into_iter()
        .map(|e| {
            let path = e.path.join(".");
            let origin = e
                .metadata
                .as_ref()
                .and_then(|m| m.source.as_ref().map(|s| s.to_string()))
                .unwrap_or_default();
            let mut s = describe_kind(&e.kind);
            if !path.is_empty() {
                s = format!("{path}: {s}");
            }
            if !origin.is_empty() {
                s = format!("{s} (in {origin})");
            }
            s
        })
        .collect::<Vec<_>>()
        .join("; ")
}
