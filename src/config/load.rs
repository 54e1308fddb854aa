//! Merging the layers (TOML file < `GROUNDGATE_*` environment < flags) into
//! one [`RawConfig`], listing every unknown key and type error at once, and
//! for the commands that connect to Kafka, every problem of the
//! configuration in one list: those of loading, validation and access.

use std::collections::BTreeSet;
use std::path::Path;

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};

use super::secret_file::{self, FileError};
use super::validate::Host;
use super::{Access, Config, ConfigError, NotUtf8, RawConfig, RawGrounding, check_access};
use crate::core::pseudonym::{MAX_KEY_FILE_BYTES, Pseudonyms};

/// The layers as far as they could be read.
#[derive(Debug, Default)]
struct Loaded {
    /// The keys that parsed, merged; `None` when the layers could not be
    /// read as a whole (a file that is not TOML), so nothing can be judged.
    raw: Option<RawConfig>,
    /// Unknown keys and type errors, those of the environment first.
    problems: Vec<String>,
    /// The keys given a value that could not be read, dotted
    /// (`kafka.brokers`); `""` stands for a problem no key could be
    /// blamed for.
    unread: BTreeSet<String>,
}

impl Loaded {
    /// Whether `key`, or a section holding it, was given a value that could
    /// not be read: a check of it would judge its default, not what was
    /// written.
    fn unread(&self, key: &str) -> bool {
        self.unread.iter().any(|u| {
            u.is_empty()
                || key
                    .strip_prefix(u.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        })
    }

    /// The configuration when every key was read; otherwise the load
    /// problems followed by the validation problems of the keys that were.
    fn into_raw(self) -> Result<RawConfig, ConfigError> {
        let mut problems = self.problems;
        match self.raw {
            Some(raw) if problems.is_empty() => return Ok(raw),
            Some(raw) => {
                if let Err(ConfigError::Invalid(p)) = raw.validate() {
                    problems.extend(p);
                }
            }
            None => {}
        }
        Err(ConfigError::Invalid(problems))
    }

    /// [`RawConfig::load_writing_audit`] over what was read, with the key
    /// file read by `read`: the load problems, the validation problems of
    /// the keys that were read, then the pseudonym and signing keys'.
    fn writing_audit(self, host: &Host, read: &ReadFile<'_>) -> Result<Config, ConfigError> {
        let Loaded {
            raw, mut problems, ..
        } = self;
        let Some(raw) = raw else {
            return Err(ConfigError::Invalid(problems));
        };
        let (mut config, invalid) = raw.validate_listing(host);
        problems.extend(invalid);
        read_pseudonym_key(&mut config, read, &mut problems);
        read_signing_key(&mut config, &mut problems);
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError::Invalid(problems))
        }
    }

    /// [`RawConfig::load_for_kafka`] over what was read: the load problems,
    /// the missing brokers, the validation problems and the access
    /// problems, in that order and in one list. A check of a key whose
    /// value could not be read is left out; so are the access checks of
    /// settings that validation refuses (see [`check_access`]).
    /// With `key`, the pseudonym key and the signing key are read too
    /// (see [`RawConfig::load_for_worker`]), and their problems come last.
    fn for_kafka(
        self,
        host: &Host,
        access: &Access<'_>,
        key: Option<&ReadFile<'_>>,
    ) -> Result<Config, ConfigError> {
        let brokers_unread = self.unread("kafka.brokers");
        let Loaded {
            raw, mut problems, ..
        } = self;
        let Some(raw) = raw else {
            return Err(ConfigError::Invalid(problems));
        };
        if !brokers_unread
            && raw
                .kafka
                .brokers
                .as_deref()
                .is_none_or(|b| b.trim().is_empty())
        {
            problems.push(
                "kafka.brokers is not set or empty: pass --brokers host:port[,host:port], GROUNDGATE_BROKERS or kafka.brokers (for development, `groundgate dev-broker` runs an in-memory broker)".to_string(),
            );
        }
        let (mut config, invalid) = raw.validate_listing(host);
        problems.extend(invalid);
        // The settings are put to librdkafka together only when each was
        // read, is valid and is taken alone: else the problem is said once,
        // of the value itself.
        let together = problems.is_empty()
            && config.kafka.properties.iter().all(|(k, v)| {
                super::managed::refused(k) || access.refuses.is_none_or(|r| r(k, v).is_none())
            });
        let k = &mut config.kafka;
        k.security.secrets = check_access(&k.security, &k.properties, access, &mut problems);
        if let Some(clients) = access.clients.filter(|_| together) {
            problems.extend(clients(&config.kafka));
        }
        if let Some(read) = key {
            read_pseudonym_key(&mut config, read, &mut problems);
            read_signing_key(&mut config, &mut problems);
        }
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError::Invalid(problems))
        }
    }
}

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
        load_layers(file, env, flags)?.into_raw()
    }

    /// Parses one TOML document (no environment, no flags): for configuration
    /// shipped inside the binary, such as the demo's.
    pub fn from_toml_str(text: &str) -> Result<RawConfig, ConfigError> {
        finish_load(&Figment::from(Toml::string(text)), Loaded::default()).into_raw()
    }

    /// Reads the process environment and delegates to [`RawConfig::load`].
    pub fn load_from_process(file: Option<&Path>, flags: RawConfig) -> Result<Config, ConfigError> {
        RawConfig::load(file, &process_env(), flags)?.validate_on(&process_host())
    }

    /// [`RawConfig::load_from_process`] for `check`, which writes audit
    /// rows: the pseudonym key is read into the core's settings as well,
    /// the signing key into `audit.signing_key`, and what is wrong with
    /// either is listed with every other problem.
    pub fn load_writing_audit(
        file: Option<&Path>,
        flags: RawConfig,
    ) -> Result<Config, ConfigError> {
        load_layers(file, &process_env(), flags)?
            .writing_audit(&process_host(), &read_pseudonym_key_file)
    }

    /// [`RawConfig::load_from_process`] for the commands that connect to
    /// Kafka (`run`, `produce`): the brokers must be configured, the TLS
    /// files readable, the secrets are read, and what the settings ask of
    /// librdkafka must be in its `features` (its `builtin.features`), and
    /// every passthrough property one it takes (`refuses` says why not).
    /// Every problem is listed in one error: unknown keys and type errors,
    /// the missing brokers, the invalid values, then what the files,
    /// variables and librdkafka say of every setting that could be read.
    /// A configuration file that is missing, or is not TOML at all, cuts
    /// the list short: nothing else can be judged without it.
    pub fn load_for_kafka(
        file: Option<&Path>,
        flags: RawConfig,
        librdkafka: &Librdkafka<'_>,
    ) -> Result<Config, ConfigError> {
        load_connecting(file, flags, librdkafka, None)
    }

    /// [`RawConfig::load_for_kafka`] for `run`, whose workers write audit
    /// rows: the pseudonym key and the signing key are read as well (the
    /// signing key into `audit.signing_key`), and what is wrong with either
    /// is listed with every other problem.
    /// The other commands that connect never read those secrets.
    pub fn load_for_worker(
        file: Option<&Path>,
        flags: RawConfig,
        librdkafka: &Librdkafka<'_>,
    ) -> Result<Config, ConfigError> {
        load_connecting(file, flags, librdkafka, Some(&read_pseudonym_key_file))
    }
}

/// [`RawConfig::load_for_kafka`], reading the pseudonym key with `key` if given.
fn load_connecting(
    file: Option<&Path>,
    flags: RawConfig,
    librdkafka: &Librdkafka<'_>,
    key: Option<&ReadFile<'_>>,
) -> Result<Config, ConfigError> {
    let read = |p: &Path, limit: u64| secret_file::read(p, limit);
    // Neither the value nor `VarError` (which holds it) is ever shown.
    let var = |name: &str| match std::env::var(name) {
        Ok(v) => Some(Ok(v)),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => Some(Err(NotUtf8)),
    };
    let access = Access {
        read: &read,
        var: &var,
        features: Some(librdkafka.features),
        refuses: Some(librdkafka.refuses),
        clients: Some(librdkafka.clients),
    };
    load_layers(file, &process_env(), flags)?.for_kafka(&process_host(), &access, key)
}

/// What the commands that connect ask of the librdkafka they run on (the
/// shell passes `crate::kafka::client`'s answers; nothing connects).
pub struct Librdkafka<'a> {
    /// Its `builtin.features`.
    pub features: &'a BTreeSet<String>,
    /// Why it refuses a property and its value, if it does.
    pub refuses: &'a super::security::Refuses<'a>,
    /// Why it would not create the clients from the settings together.
    pub clients: &'a super::security::RefusesClients<'a>,
}

/// Reads a whole file (or as much of it as the reader takes).
type ReadFile<'a> = dyn Fn(&Path) -> Result<Vec<u8>, FileError> + 'a;

/// The bytes of a pseudonym key file, one more than a key file may hold at
/// most: [`Pseudonyms::new`] then refuses a larger file without its being
/// read whole (a 1 GB file given by mistake). Only a regular file is read
/// (see [`secret_file::read`]).
pub fn read_pseudonym_key_file(path: &Path) -> Result<Vec<u8>, FileError> {
    secret_file::read(path, MAX_KEY_FILE_BYTES as u64 + 1)
}

/// Reads the key of `[audit] pseudonym_key_file` with `read` into the
/// core's settings, when fields are to be pseudonymised (validation has
/// said what is missing otherwise).
fn read_pseudonym_key(config: &mut Config, read: &ReadFile<'_>, problems: &mut Vec<String>) {
    let a = &config.audit;
    let Some(path) = a
        .pseudonym_key_file
        .as_deref()
        .filter(|_| !a.pseudonymize.is_empty())
    else {
        return;
    };
    let shown = path.display();
    match read(path) {
        Ok(bytes) => match Pseudonyms::new(&bytes, &a.pseudonymize) {
            Ok(p) => config.core.pseudonyms = Some(p),
            Err(e) => problems.push(format!("audit.pseudonym_key_file {shown} {e}")),
        },
        Err(e) => problems.push(secret_file::problem(
            "audit.pseudonym_key_file",
            path,
            true,
            &e,
        )),
    }
}

/// Reads the key of `[audit] signing_key_file` into the configuration, or
/// lists what is wrong with it with the other problems, before anything
/// starts. The worker and `check` sign with this key and never read the
/// file again, so they sign with the key that was checked.
fn read_signing_key(config: &mut Config, problems: &mut Vec<String>) {
    use crate::audit::keys::{KeyError, load_signing_key};
    let Some(path) = config.audit.signing_key_file.as_deref() else {
        return;
    };
    match load_signing_key(path) {
        Ok(key) => config.audit.signing_key = Some(super::AuditSigningKey::new(key)),
        Err(KeyError::Read(problem)) => problems.push(problem),
        Err(e) => problems.push(format!("audit.signing_key_file {e}")),
    }
}

/// The file, then the environment `env`, then `flags`, each key read on its
/// own; fails only when the file is missing.
fn load_layers(
    file: Option<&Path>,
    env: &[(String, String)],
    flags: RawConfig,
) -> Result<Loaded, ConfigError> {
    let mut fig = Figment::new();
    if let Some(path) = file {
        if !path.is_file() {
            return Err(ConfigError::Load(format!(
                "config file {} does not exist or is not a file",
                path.display()
            )));
        }
        // An unreadable file is said apart from one that is not TOML.
        if let Err(e) = std::fs::File::open(path) {
            return Err(ConfigError::Load(format!(
                "cannot read config file {}: {e}",
                path.display()
            )));
        }
        fig = fig.merge(Toml::file_exact(path));
    }
    let env = env_layer(env, password_variable(&fig, env).as_deref());
    if let Some(raw) = &env.raw {
        fig = fig.merge(Serialized::defaults(raw));
    }
    fig = fig.merge(Serialized::defaults(flags));
    Ok(finish_load(&fig, env))
}

const ENV_PREFIX: &str = "GROUNDGATE_";

/// The variable `kafka.sasl_password_env` names (the environment's value
/// of the key over the file's): it holds the password, not a setting, so
/// the environment layer does not read it, whatever its name.
fn password_variable(file: &Figment, env: &[(String, String)]) -> Option<String> {
    const KEY: &str = "kafka.sasl_password_env";
    let var = format!(
        "{ENV_PREFIX}{}",
        KEY.replace('.', "__").to_ascii_uppercase()
    );
    env.iter()
        .find(|(k, _)| *k == var)
        .map(|(_, v)| v.clone())
        .or_else(|| file.extract_inner::<String>(KEY).ok())
}

/// Stands for the value of a `GROUNDGATE_*` variable that is not UTF-8
/// text, which is never kept (it may be a secret): the value of a real
/// environment variable cannot hold NUL, so no value is mistaken for it.
const NOT_UTF8_VALUE: &str = "\0";

/// The `GROUNDGATE_*` variables of this process: the environment layer.
/// Other variables are not looked at, whatever they hold.
fn process_env() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter(|(k, _)| k.as_encoded_bytes().starts_with(ENV_PREFIX.as_bytes()))
        .map(|(k, v)| {
            let v = v
                .into_string()
                .unwrap_or_else(|_| NOT_UTF8_VALUE.to_string());
            (k.to_string_lossy().into_owned(), v)
        })
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
    ("VALUE_FRAMING", "value_framing"),
    ("VALUE_SCHEMA_IDS", "value_schema_ids"),
];

/// Top-level keys (of the file's first lines, before any section) are set
/// by their own names, like the aliases: `GROUNDGATE_MAX_RECORD_BYTES`.
/// A list is written with commas: `GROUNDGATE_NON_CITING_PROVIDERS=acme,perplexity`.
const ENV_LISTS: &[&str] = &[
    "non_citing_providers",
    "value_schema_ids",
    "policy.forbidden_terms",
    "audit.pseudonymize",
    "kafka.propagate_headers",
    "metrics.providers",
    "metrics.models",
];
/// The lists of numbers among them: each item is read as a number
/// (`GROUNDGATE_VALUE_SCHEMA_IDS=42,43`), where the others keep their items
/// as text.
const ENV_NUMBER_LISTS: &[&str] = &["value_schema_ids"];

/// The variables that could be read, and the problems of the others;
/// `password`, the variable holding the SASL password, is not one of them.
fn env_layer(env: &[(String, String)], password: Option<&str>) -> Loaded {
    let mut fig = Figment::new();
    let mut unknown = Vec::new();
    let mut problems = Vec::new();
    let mut unread = BTreeSet::new();
    // Two variables for one key (an alias and its nested spelling) would
    // leave the value to the order of the process environment.
    let mut set_by: std::collections::BTreeMap<String, &str> = std::collections::BTreeMap::new();
    for (k, v) in env {
        let Some(rest) = k.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        if password == Some(k.as_str()) {
            continue;
        }
        let path = match ENV_ALIASES.iter().find(|(alias, _)| *alias == rest) {
            Some((_, path)) => path.to_string(),
            None if rest.contains("__") => rest.to_ascii_lowercase().replace("__", "."),
            None => {
                unknown.push(k.clone());
                continue;
            }
        };
        if v == NOT_UTF8_VALUE {
            problems.push(format!(
                "{k}: its value is not UTF-8 text (it is not shown)"
            ));
            unread.insert(path);
            continue;
        }
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
            let items = v.split(',').map(str::trim).filter(|s| !s.is_empty());
            if ENV_NUMBER_LISTS.contains(&path.as_str()) {
                let items: Vec<figment::value::Value> = items
                    .map(|s| s.parse().unwrap_or_else(|_| s.into()))
                    .collect();
                items.into()
            } else {
                items.map(str::to_string).collect::<Vec<String>>().into()
            }
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
                // The value is shown only where it is a key's, of the
                // wrong type. A name that is no key may hold anything: a
                // secret put in a misspelt variable
                // (GROUNDGATE_KAFKA__SASL_PASSWORD) is not echoed.
                let names_key = e.path.join(".") == path
                    && !matches!(e.kind, figment::error::Kind::UnknownField(..));
                let shown = if names_key {
                    format!("{k}={v:?}")
                } else {
                    format!("{k} (value not shown)")
                };
                problems.push(format!("{shown}: {}", describe_kind(&e.kind)));
            }
            unread.insert(path);
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
    let raw = match fig.extract::<RawConfig>() {
        Ok(raw) => Some(raw),
        Err(e) => {
            problems.push(format!(
                "in GROUNDGATE_* environment: {}",
                describe_figment_error(e)
            ));
            unread.insert(String::new());
            None
        }
    };
    Loaded {
        raw,
        problems,
        unread,
    }
}

/// Extracts the merged layers, after the environment's problems (`env`);
/// on failure lists every unknown key and type error (serde stops at the
/// first one, so each leaf value is tried on its own) and keeps the keys
/// that did parse.
fn finish_load(fig: &Figment, env: Loaded) -> Loaded {
    use figment::value::{Dict, Tag, Value};
    let Loaded {
        mut problems,
        mut unread,
        ..
    } = env;
    let first = match fig.extract::<RawConfig>() {
        Ok(raw) => {
            return Loaded {
                raw: Some(raw),
                problems,
                unread,
            };
        }
        Err(e) => e,
    };
    // Not even a document: the file could be read (see `load_layers`), so
    // it is not TOML. A YAML or JSON file is the usual cause; say what is
    // expected rather than only where the TOML parser stopped.
    let Ok(root) = fig.extract::<Value>() else {
        problems.push(format!(
            "{NOT_TOML}: {}",
            describe_figment_error(first).trim_end()
        ));
        return Loaded {
            raw: None,
            problems,
            unread,
        };
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
                let key = path.join(".");
                for e in e {
                    let msg = format!("{key}: {}", describe_kind(&e.kind));
                    if !problems.contains(&format!("{msg}{origin}")) {
                        problems.push(format!("{msg}{origin}"));
                    }
                }
                unread.insert(key);
            }
        }
    }
    if problems.len() == before {
        problems.push(describe_figment_error(first));
        unread.insert(String::new());
    }
    Loaded {
        raw: good.extract::<RawConfig>().ok(),
        problems,
        unread,
    }
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
        figment::error::Kind::UnknownVariant(found, expected) => {
            // Several spellings of one value (`SSL`, `ssl`) are one choice.
            let mut values: Vec<&str> = Vec::new();
            for v in expected.iter() {
                if !values.iter().any(|k| k.eq_ignore_ascii_case(v)) {
                    values.push(v);
                }
            }
            format!(
                "unknown value {found:?} (known values: {})",
                values.join(", ")
            )
        }
        figment::error::Kind::Message(text) => one_line(text),
        other => other.to_string(),
    }
}

/// The TOML parser's message on one line: its source excerpt (the lines
/// of the file with a `|` gutter and a `^` under the place) is left out,
/// since the message names the line and column, and a problem is one line
/// of the list.
fn one_line(text: &str) -> String {
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter(|l| {
            !l.split_once('|')
                .is_some_and(|(gutter, _)| gutter.trim().chars().all(|c| c.is_ascii_digit()))
        });
    let Some(first) = lines.next() else {
        return String::new();
    };
    let rest: Vec<&str> = lines.collect();
    if rest.is_empty() {
        first.to_string()
    } else {
        format!("{first}: {}", rest.join(", "))
    }
}

/// What a configuration file must look like, for a file that is not TOML.
const NOT_TOML: &str = "the configuration file must be TOML (`[section]` headers and `key = value` lines, as in examples/groundgate.toml); YAML and JSON are not read";

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

#[cfg(test)]
mod tests {
    use super::*;

    fn write(toml: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), toml).unwrap();
        f
    }

    /// What librdkafka says of the few values these tests pass through.
    fn refuses(key: &str, value: &str) -> Option<String> {
        let takes = match key {
            "linger.ms" => value.parse::<u64>().is_ok(),
            "enable.idempotence" => ["true", "false"].contains(&value),
            "security.protocol" => ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
                .iter()
                .any(|p| p.eq_ignore_ascii_case(value)),
            _ => true,
        };
        (!takes).then(|| format!("Invalid value \"{value}\" for configuration property \"{key}\""))
    }

    /// The problems `load_for_kafka` lists for `toml` and `env`, on a
    /// machine where no file or variable can be read and librdkafka was
    /// built without any feature, so a check run on a guess would show.
    fn kafka_problems(toml: &str, env: &[(&str, &str)]) -> Vec<String> {
        let f = write(toml);
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let read = |_: &Path, _: u64| Err(FileError::missing());
        let var = |_: &str| None;
        let features = BTreeSet::new();
        let access = Access {
            read: &read,
            var: &var,
            features: Some(&features),
            refuses: Some(&refuses),
            clients: None,
        };
        match load_layers(Some(f.path()), &env, RawConfig::default())
            .and_then(|loaded| loaded.for_kafka(&Host::default(), &access, None))
        {
            Ok(_) => Vec::new(),
            Err(ConfigError::Invalid(p)) => p,
            Err(e) => vec![e.to_string()],
        }
    }

    fn assert_begin(problems: &[String], expected: &[&str]) {
        assert_eq!(
            problems.len(),
            expected.len(),
            "expected {expected:#?}, got {problems:#?}"
        );
        for (p, e) in problems.iter().zip(expected) {
            assert!(p.starts_with(e), "{p:?} does not begin with {e:?}");
        }
    }

    const NO_BROKERS: &str = "kafka.brokers is not set or empty: pass --brokers host:port[,host:port], GROUNDGATE_BROKERS or kafka.brokers";

    /// A problem of each kind the commands that connect meet, besides the
    /// missing brokers: its `[kafka]` line, its `[kafka.properties]` line
    /// and how its message begins.
    const KINDS: [(&str, &str, &str); 4] = [
        (
            "max_message_byts = 5\n",
            "",
            "kafka.max_message_byts: unknown key \"max_message_byts\" (known keys here: brokers, ",
        ),
        (
            "drain_deadline_ms = 5\n",
            "",
            "kafka.drain_deadline_ms = 5: must be between 100 and 600000",
        ),
        (
            "ssl_ca_file = \"/nonexistent/ca.pem\"\n",
            "",
            "kafka.ssl_ca_file = \"/nonexistent/ca.pem\": cannot read it: No such file or directory",
        ),
        (
            "",
            "\"linger.ms\" = \"abc\"\n",
            "kafka.properties \"linger.ms\" (-X linger.ms=...): librdkafka refuses it: Invalid value \"abc\"",
        ),
    ];

    fn config(brokers: bool, kinds: &[(&str, &str, &str)]) -> String {
        let mut kafka = String::from("[kafka]\n");
        let mut properties = String::from("[kafka.properties]\n");
        if brokers {
            kafka.push_str("brokers = \"kafka-1:9092\"\n");
        }
        for (line, property, _) in kinds {
            kafka.push_str(line);
            properties.push_str(property);
        }
        kafka + &properties
    }

    #[test]
    fn every_kind_of_problem_comes_in_one_list_load_problems_first() {
        let problems = kafka_problems(&config(false, &KINDS), &[]);
        let [unknown, range, ca, refused] = KINDS.map(|(_, _, message)| message);
        assert_begin(&problems, &[unknown, NO_BROKERS, range, ca, refused]);
    }

    #[test]
    fn each_problem_alone_gives_its_message_alone() {
        assert_begin(&kafka_problems(&config(false, &[]), &[]), &[NO_BROKERS]);
        for kind in KINDS {
            assert_begin(&kafka_problems(&config(true, &[kind]), &[]), &[kind.2]);
        }
        assert_eq!(
            kafka_problems(&config(true, &[]), &[]),
            Vec::<String>::new()
        );
    }

    /// A key that could not be read is not judged by its default: a broker
    /// list of the wrong type is not also a missing one.
    #[test]
    fn a_key_that_could_not_be_read_is_not_also_missing() {
        let problems = kafka_problems("[kafka]\nbrokers = 9092\n", &[]);
        assert_begin(
            &problems,
            &["kafka.brokers: invalid type: found signed int `9092`, expected a string"],
        );
        let problems = kafka_problems("[kafka]\ndrain_deadline_ms = \"soon\"\n", &[]);
        assert_begin(
            &problems,
            &[
                "kafka.drain_deadline_ms: invalid type: found string \"soon\", expected u64",
                NO_BROKERS,
            ],
        );
    }

    /// One variable that cannot be read leaves the others in force.
    #[test]
    fn a_bad_variable_does_not_drop_the_environment() {
        let problems = kafka_problems(
            "",
            &[
                ("GROUNDGATE_BROKERS", "kafka-1:9092"),
                ("GROUNDGATE_KAFKA__DRAIN_DEADLINE_MS", "soon"),
                ("GROUNDGATE_KAFKA__MAX_IN_FLIGHT", "0"),
            ],
        );
        assert_begin(
            &problems,
            &[
                "GROUNDGATE_KAFKA__DRAIN_DEADLINE_MS=\"soon\": invalid type",
                "kafka.max_in_flight = 0: must be between 1 and 100000",
            ],
        );
        // `check` and `eval` judge the other variables too.
        let env = [
            ("GROUNDGATE_MAX_RECORD_BYTES", "10"),
            ("GROUNDGATE_POLICY__MIN_CONFIDENCE", "high"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let Err(ConfigError::Invalid(problems)) = RawConfig::load(None, &env, RawConfig::default())
        else {
            panic!("two bad variables must fail");
        };
        assert_begin(
            &problems,
            &[
                "GROUNDGATE_POLICY__MIN_CONFIDENCE=\"high\": invalid type",
                "max_record_bytes = 10: must be between 1024 and 67108864",
            ],
        );
    }

    /// The value of a variable is shown only where it is a key's, of the
    /// wrong type: a variable that names no key may hold a secret.
    #[test]
    fn a_variable_that_names_no_key_is_named_without_its_value() {
        let problems = kafka_problems(
            "[kafka]\nbrokers = \"kafka-1:9092\"\n",
            &[
                ("GROUNDGATE_KAFKA__SASL_PASSWORD", "hunter2"),
                ("GROUNDGATE_KAFKA__PROPERTIES__SASL.PASSWORD", "hunter3"),
                ("GROUNDGATE_KAFKA__SSL_KEY_FILE__PEM", "hunter4"),
                ("GROUNDGATE_KAFKA__SESSION_TIMEOUT_MS", "soon"),
            ],
        );
        assert_begin(
            &problems,
            &[
                "GROUNDGATE_KAFKA__SASL_PASSWORD (value not shown): unknown key \"sasl_password\"",
                "GROUNDGATE_KAFKA__PROPERTIES__SASL.PASSWORD (value not shown): ",
                "GROUNDGATE_KAFKA__SSL_KEY_FILE__PEM (value not shown): invalid type: found map",
                "GROUNDGATE_KAFKA__SESSION_TIMEOUT_MS=\"soon\": invalid type",
            ],
        );
        assert!(
            !problems.iter().any(|p| p.contains("hunter")),
            "{problems:#?}"
        );
    }

    /// A variable whose value is not UTF-8 text is named without it.
    #[test]
    fn a_variable_that_is_not_text_is_named_without_its_value() {
        let problems = kafka_problems(
            "[kafka]\nbrokers = \"kafka-1:9092\"\n",
            &[("GROUNDGATE_KAFKA__CLIENT_ID", NOT_UTF8_VALUE)],
        );
        assert_eq!(
            problems,
            ["GROUNDGATE_KAFKA__CLIENT_ID: its value is not UTF-8 text (it is not shown)"]
        );
    }

    /// Whether TLS is wanted cannot be told from an unknown protocol: the
    /// build is not asked for it, while the CA file is still read.
    #[test]
    fn an_unknown_protocol_asks_nothing_of_the_build() {
        let ca = "ssl_ca_file = \"/nonexistent/ca.pem\"\n";
        let problems = kafka_problems(
            &format!("[kafka]\nbrokers = \"kafka-1:9092\"\nsecurity_protocol = \"TLS\"\n{ca}"),
            &[],
        );
        assert_begin(
            &problems,
            &[
                "kafka.security_protocol: unknown value \"TLS\" (known values: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)",
                KINDS[2].2,
            ],
        );
        let problems = kafka_problems(
            &format!(
                "[kafka]\nbrokers = \"kafka-1:9092\"\n{ca}[kafka.properties]\n\"security.protocol\" = \"TLS\"\n"
            ),
            &[],
        );
        assert_begin(
            &problems,
            &[
                KINDS[2].2,
                "kafka.properties \"security.protocol\" (-X security.protocol=...): librdkafka refuses it: Invalid value \"TLS\"",
            ],
        );
    }

    /// A property groundgate refuses is named once, by groundgate, however
    /// wrong its value.
    #[test]
    fn a_managed_property_is_named_once() {
        let problems = kafka_problems(
            "[kafka]\nbrokers = \"kafka-1:9092\"\n[kafka.properties]\n\"enable.idempotence\" = \"maybe\"\n",
            &[],
        );
        assert_begin(
            &problems,
            &[
                "kafka.properties \"enable.idempotence\" (-X enable.idempotence=...) is managed by groundgate",
            ],
        );
    }

    /// A file that is not TOML holds nothing to judge, not even the brokers.
    #[test]
    fn a_file_that_is_not_toml_is_reported_alone() {
        let problems = kafka_problems("[kafka\nbrokers = ", &[]);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(
            !problems[0].contains("kafka.brokers is not set"),
            "{problems:#?}"
        );
    }

    /// The parser's message is one line of the list: where, and what was
    /// expected, without the excerpt of the file drawn under it.
    #[test]
    fn a_toml_syntax_error_is_one_line_naming_the_place() {
        let problems = kafka_problems("[kafka]\nbrokers = \n", &[]);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(!problems[0].contains('\n'), "{:?}", problems[0]);
        assert!(
            problems[0].contains("TOML parse error at line 2, column 11: invalid string, expected"),
            "{:?}",
            problems[0]
        );
        assert!(!problems[0].contains('^'), "{:?}", problems[0]);
    }

    /// A YAML file given to --config is named for what it is not: the
    /// parser's position alone does not tell a first-time user that TOML
    /// was expected.
    #[test]
    fn a_yaml_file_is_told_the_configuration_is_toml() {
        let problems = kafka_problems("policy:\n  min_confidence: 0.5\n", &[]);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(
            problems[0].contains("the configuration file must be TOML")
                && problems[0].contains("YAML and JSON are not read"),
            "{problems:#?}"
        );
    }

    /// The problems `check` lists for `toml` and `env`, with the pseudonym
    /// key read by `read`.
    fn pseudonym_problems(
        toml: &str,
        env: &[(&str, &str)],
        read: &ReadFile<'_>,
    ) -> (Option<Config>, Vec<String>) {
        let f = write(toml);
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        match load_layers(Some(f.path()), &env, RawConfig::default())
            .and_then(|loaded| loaded.writing_audit(&Host::default(), read))
        {
            Ok(config) => (Some(config), Vec::new()),
            Err(ConfigError::Invalid(p)) => (None, p),
            Err(e) => panic!("{e}"),
        }
    }

    /// A key that cannot be used is one more configuration problem, listed
    /// with the others, for `check` and for `run`: one round of fixes.
    #[test]
    fn a_bad_pseudonym_key_is_listed_with_every_other_problem() {
        let toml = "max_record_bytes = 10
[audit]
pseudonymize = [\"user\"]
pseudonym_key_file = \"/run/k\"\n";
        let short = |_: &Path| Ok(b"tiny\n".to_vec());
        let (_, problems) = pseudonym_problems(toml, &[], &short);
        assert_begin(
            &problems,
            &[
                "max_record_bytes = 10: must be between",
                "audit.pseudonym_key_file /run/k is 4 bytes",
            ],
        );
        let f = write(&format!("{toml}[kafka]\nbrokers = \"kafka-1:9092\"\n"));
        let (read, var) = (|_: &Path, _: u64| Ok(Vec::new()), |_: &str| None);
        let access = Access {
            read: &read,
            var: &var,
            features: None,
            refuses: None,
            clients: None,
        };
        let with_key = |key: Option<&ReadFile<'_>>| -> Vec<String> {
            match load_layers(Some(f.path()), &[], RawConfig::default())
                .and_then(|loaded| loaded.for_kafka(&Host::default(), &access, key))
            {
                Ok(_) => Vec::new(),
                Err(ConfigError::Invalid(p)) => p,
                Err(e) => vec![e.to_string()],
            }
        };
        assert_begin(
            &with_key(Some(&short)),
            &[
                "max_record_bytes = 10: must be between",
                "audit.pseudonym_key_file /run/k is 4 bytes",
            ],
        );
        // The commands that never write audit rows never read the key.
        assert_begin(&with_key(None), &["max_record_bytes = 10: must be between"]);
    }

    /// A key file is read no further than a key file may reach, so a huge
    /// file (or `/dev/zero`) given by mistake is refused, not read whole.
    #[test]
    fn a_key_file_is_read_no_further_than_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(64 << 20).unwrap();
        let bytes = read_pseudonym_key_file(&path).unwrap();
        assert_eq!(bytes.len(), MAX_KEY_FILE_BYTES + 1);
        let read = |p: &Path| read_pseudonym_key_file(p);
        let (_, problems) = pseudonym_problems(
            &format!(
                "[audit]\npseudonymize = [\"user\"]\npseudonym_key_file = \"{}\"\n",
                path.display()
            ),
            &[],
            &read,
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].ends_with("is larger than 4096 bytes: a pseudonym key is a few dozen (e.g. `openssl rand -hex 32 > FILE`); is it the right file?"),
            "{problems:?}"
        );
    }

    /// `check` signs with the key its configuration carries: the loader
    /// reads it, and lists a file that holds none with the other problems.
    #[test]
    fn the_signing_key_is_read_with_the_configuration() {
        use crate::audit::keys;
        let dir = tempfile::tempdir().unwrap();
        let (private, public) = keys::generate(&dir.path().join("audit")).unwrap();
        let no_pseudonyms = |_: &Path| Ok(Vec::new());
        let toml = |path: &Path| format!("[audit]\nsigning_key_file = {:?}\n", path);
        let (config, problems) = pseudonym_problems(&toml(&private), &[], &no_pseudonyms);
        assert_eq!(problems, Vec::<String>::new());
        let config = config.unwrap();
        let want = keys::load_signing_key(&private).unwrap();
        assert_eq!(config.audit.signing_key().unwrap(), Some(&want));
        let (config, problems) = pseudonym_problems(&toml(&public), &[], &no_pseudonyms);
        assert!(config.is_none());
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with(&format!(
                "audit.signing_key_file {} is not an Ed25519 private key (PKCS#8) in PEM form",
                public.display()
            )),
            "{problems:?}"
        );
    }

    #[test]
    fn pseudonyms_need_known_fields_and_a_key_and_the_key_is_read_once_valid() {
        use crate::core::pseudonym::PseudonymField;
        let key = |_: &Path| Ok(b"0123456789abcdef0123456789abcdef\n".to_vec());
        let (config, problems) = pseudonym_problems(
            "[audit]\npseudonymize = [\"question\", \"user\", \"user\"]\npseudonym_key_file = \"k\"\n",
            &[],
            &key,
        );
        assert_eq!(problems, Vec::<String>::new());
        let config = config.unwrap();
        assert_eq!(
            config.audit.pseudonymize,
            [PseudonymField::User, PseudonymField::Question]
        );
        let p = config
            .core
            .pseudonyms
            .expect("key read into the core's settings");
        assert_eq!(p.key_id(), "3eb1bd43");
        assert!(p.covers(PseudonymField::User) && !p.covers(PseudonymField::Tenant));

        // Every problem in one list: an unknown field, and no key.
        let (_, problems) =
            pseudonym_problems("[audit]\npseudonymize = [\"user\", \"email\"]\n", &[], &key);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].starts_with("audit.pseudonymize: \"email\" is not a field")
                && problems[0].ends_with("user, tenant, question, sources_urns"),
            "{problems:?}"
        );
        assert!(
            problems[1]
                .starts_with("audit.pseudonymize is set but audit.pseudonym_key_file is not"),
            "{problems:?}"
        );
        // A key that names no field would pseudonymise nothing.
        let (_, problems) = pseudonym_problems("[audit]\npseudonym_key_file = \"k\"\n", &[], &key);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("lists no field"), "{problems:?}");
        // The environment takes a list with commas; a key too short, or
        // one that cannot be read, is named with its file.
        let short = |_: &Path| Ok(b"tiny\n".to_vec());
        let (_, problems) = pseudonym_problems(
            "",
            &[
                ("GROUNDGATE_AUDIT__PSEUDONYMIZE", "user, tenant"),
                ("GROUNDGATE_AUDIT__PSEUDONYM_KEY_FILE", "/run/k"),
            ],
            &short,
        );
        assert_eq!(
            problems,
            [
                "audit.pseudonym_key_file /run/k is 4 bytes once trailing white space is dropped: a pseudonym key needs at least 32 (e.g. `openssl rand -hex 32 > FILE`)"
            ]
        );
        let missing = |_: &Path| Err(FileError::missing());
        let (_, problems) = pseudonym_problems(
            "[audit]\npseudonymize = [\"tenant\"]\npseudonym_key_file = \"/run/k\"\n",
            &[],
            &missing,
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(
            problems[0],
            "audit.pseudonym_key_file: cannot read it: No such file or directory (os error 2); its value is not shown, since it names nothing on this machine and may be the secret itself: no part of it exists (6 character(s))"
        );
    }
}
