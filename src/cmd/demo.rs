//! `groundgate demo`: the one command for a newcomer. Embedded broker, the
//! five topics, the shipped sample stream, one worker in-process with
//! `/metrics`, then a summary read back from the output topics themselves.
//! The sample stream and its configuration are compiled into the binary so
//! the demo runs from any directory.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use rdkafka::Message;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use anyhow::{Context, bail};

use super::UsageError;

use crate::cli::{AuditVerifyArgs, DemoArgs};
use crate::config::RawConfig;
use crate::core::FindingKind;
use crate::http::{self, Health};
use crate::kafka::embedded::EmbeddedBroker;
use crate::kafka::inspect;
use crate::kafka::produce;
use crate::kafka::worker::run_worker;
use crate::metrics::Metrics;

const SAMPLE: &str = include_str!("../../examples/answers.jsonl");
const DEMO_CONFIG: &str = include_str!("../../examples/demo.toml");
/// Generous: the demo normally completes in a few seconds.
const DEADLINE: Duration = Duration::from_secs(120);

pub async fn main(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let mut raw = RawConfig::from_toml_str(DEMO_CONFIG)?;
    raw.metrics.addr = Some(args.metrics_addr.clone());
    let config = Arc::new(raw.validate()?);
    super::init_logging(config.log.format, "warn");

    let text = match &args.input {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| UsageError(format!("--input {}: cannot read it: {e}", p.display())))?,
        None => SAMPLE.to_string(),
    };
    let lines: Vec<Vec<u8>> = text.lines().map(|l| l.as_bytes().to_vec()).collect();
    let want = lines.len();

    let started = Instant::now();
    let metrics = Arc::new(Metrics::new(&config.metrics)?);
    metrics.set_grounding_model(config.core.grounding.model());
    let health = Arc::new(Health::default());
    // Bound before anything else starts, so a taken port is the only message.
    let (addr, _server) = http::serve(config.metrics.addr, metrics.clone(), health.clone())
        .await
        .map_err(|e| {
            let who = if e.in_use() {
                " (a running `groundgate run` or another demo listens there by default)"
            } else {
                ""
            };
            anyhow::anyhow!(
                "{e}{who}; choose another address with --metrics-addr HOST:PORT, e.g. --metrics-addr 127.0.0.1:0 for any free port"
            )
        })?;

    let topics = config.kafka.topics.clone();
    let broker = EmbeddedBroker::start(4, &topics.all())?;
    let bootstrap = broker.bootstrap();
    println!(
        "groundgate demo: embedded in-memory broker at {bootstrap} (not durable), topics: {}",
        topics.all().join(", ")
    );

    let producer = produce::producer(&config.kafka, &bootstrap)?;
    let sent = produce::send_all(&producer, &topics.input, lines.into_iter().map(Ok), 0).await?;
    println!("produced {sent} sample answers to {}", topics.input);

    let shutdown = CancellationToken::new();
    let worker = tokio::spawn(run_worker(
        config.clone(),
        bootstrap.clone(),
        metrics.clone(),
        health,
        shutdown.clone(),
    ));
    println!("worker running; metrics at http://{addr}/metrics");

    let b = bootstrap.clone();
    let names = [
        topics.final_.clone(),
        topics.retry.clone(),
        topics.audit.clone(),
        topics.dead_letter.clone(),
    ];
    let read_names = names.clone();
    let mut read = tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = read_names.iter().map(String::as_str).collect();
        // Every input has one terminal record and one audit row, on different
        // topics that are fetched independently: wait for both halves, or the
        // summary would undercount whichever topic arrives last.
        inspect::read_until(&b, &refs, DEADLINE, |got| {
            let rows = got[2].iter().filter(|m| !inspect::is_seal(m)).count();
            rows >= want && got[0].len() + got[1].len() + got[3].len() >= want
        })
    })
    .await?
    .context("reading the output topics failed")?;
    // Seals are counted after the worker's final flush, from the trail itself.
    read[2].retain(|m| !inspect::is_seal(m));
    let terminals = read[0].len() + read[1].len() + read[3].len();
    if read[2].len() < want || terminals < want {
        shutdown.cancel();
        bail!(
            "only {} of {want} records had both outputs within {DEADLINE:?}; the worker is not keeping up",
            read[2].len().min(terminals)
        );
    }

    print_summary(&names, &read, started.elapsed(), &metrics);
    print_examples(&names, &read);
    println!("\nmetrics: http://{addr}/metrics   (health: /healthz, readiness: /readyz)");
    if !args.serve {
        println!(
            "  (these stop when the demo exits; `groundgate demo --serve` keeps the broker, worker and /metrics up until Ctrl-C)"
        );
    }
    println!(
        "configuration: examples/demo.toml (built into the binary); `groundgate check` uses the built-in defaults unless given --config examples/demo.toml, so the same file can give different counts there"
    );
    if args.serve {
        let config_path = demo_config_file()?;
        println!(
            "\nlook further while the demo runs, from another terminal (this broker, this configuration):"
        );
        println!(
            "  kcat -b {bootstrap} -C -t {} -e -f '%k %h\\n%s\\n\\n'",
            topics.retry
        );
        println!(
            "  groundgate produce --brokers {bootstrap} --file examples/answers.jsonl --rate 0"
        );
        println!(
            "  groundgate run --brokers {bootstrap} --config {} --metrics-addr 127.0.0.1:0   # a second worker in the demo's group",
            config_path.display()
        );
        println!(
            "  groundgate audit verify --brokers {bootstrap} --input-topic {} --group {}",
            topics.input, config.kafka.group_id
        );
        // Handled before the prompt: a Ctrl-C right after it stops cleanly.
        super::on_signals(
            shutdown.clone(),
            "stopping the demo worker: draining, sealing the audit trail, committing",
        )?;
        println!("\n--serve: broker, worker and /metrics stay up; Ctrl-C to stop");
        shutdown.cancelled().await;
    }
    shutdown.cancel();
    let report = worker.await??;
    tracing::info!(records = report.records, "demo worker stopped");

    let verified = verify_trail(&bootstrap, &config.kafka).await?;
    let seals: u64 = verified.chains.iter().map(|c| c.seals).sum();
    let rows: u64 = verified.chains.iter().map(|c| c.rows).sum();
    println!(
        "\naudit trail on {}: {rows} rows and {seals} seals after the worker's final flush (each partition's rows are sealed every audit.seal_every rows, after audit.seal_interval_ms, and when the worker stops)",
        topics.audit
    );
    let code = if verified.ok() {
        println!(
            "trail verified: {rows} rows, {seals} seals (as `groundgate audit verify --brokers {bootstrap} --input-topic {} --group {}` checks it: every input offset has a row, every row is sealed, no row altered)",
            topics.input, config.kafka.group_id
        );
        ExitCode::SUCCESS
    } else {
        println!("trail NOT verified:");
        super::audit::print_report(&verified);
        ExitCode::FAILURE
    };
    if !args.serve {
        println!("\nlook at the records yourself with a broker that outlives a command, e.g.:");
        println!("  groundgate dev-broker --port 9092 &");
        println!(
            "  groundgate produce --brokers 127.0.0.1:9092 --file examples/answers.jsonl --rate 0"
        );
        println!(
            "  groundgate run --brokers 127.0.0.1:9092 --config examples/demo.toml --metrics-addr 127.0.0.1:0 &"
        );
        println!(
            "  kcat -b 127.0.0.1:9092 -C -t {} -e -f '%k %h\\n%s\\n\\n'",
            topics.retry
        );
    }
    // Clients go before the broker, or librdkafka reports the broker "down".
    drop(producer);
    drop(broker);
    Ok(code)
}

/// `audit verify` on the demo's own trail: the audit topic against the
/// input topic and the group's committed offsets.
async fn verify_trail(
    bootstrap: &str,
    kafka: &crate::config::KafkaConfig,
) -> anyhow::Result<crate::audit::verify::Report> {
    let topic = super::audit::TopicSource {
        client: crate::kafka::client::reader(kafka, bootstrap),
        audit: kafka.topics.audit.clone(),
    };
    let args = AuditVerifyArgs {
        files: Vec::new(),
        brokers: None,
        config: None,
        kafka_property: Vec::new(),
        topic: None,
        input_topic: Some(kafka.topics.input.clone()),
        group: Some(kafka.group_id.clone()),
        from_time: None,
        to_time: None,
        from: None,
        to: None,
        runs: Vec::new(),
        public_key: Vec::new(),
        allow_unsealed_tail: false,
        allow_empty: false,
        json: false,
    };
    tokio::task::spawn_blocking(move || super::audit::verify_trail(&args, Some(&topic)))
        .await?
        .context("verifying the demo's audit trail failed")
}

/// Where a second `run` finds the demo's configuration: the repository's
/// examples/demo.toml when run from a clone (and unchanged), otherwise a
/// copy of the built-in one in the temporary directory.
fn demo_config_file() -> anyhow::Result<PathBuf> {
    let in_repo = PathBuf::from("examples/demo.toml");
    if std::fs::read_to_string(&in_repo).is_ok_and(|t| t == DEMO_CONFIG) {
        return Ok(in_repo);
    }
    let copy = std::env::temp_dir().join("groundgate-demo.toml");
    std::fs::write(&copy, DEMO_CONFIG)
        .with_context(|| format!("cannot write the demo configuration to {}", copy.display()))?;
    Ok(copy)
}

fn print_summary(
    names: &[String; 4],
    read: &[Vec<rdkafka::message::OwnedMessage>],
    took: Duration,
    metrics: &Metrics,
) {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["output topic", "records"]);
    for (name, msgs) in names.iter().zip(read) {
        t.add_row(vec![name.clone(), msgs.len().to_string()]);
    }
    println!("\nwhat went where ({:.1} s):\n{t}", took.as_secs_f64());

    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    // Answers with at least one unsupported claim, from the audit rows'
    // uncapped per-answer count.
    let mut answers_with_unsupported = 0u64;
    for v in read[2].iter().filter_map(json) {
        let o = v["outcome"].as_str().unwrap_or("?").to_string();
        *outcomes.entry(o).or_default() += 1;
        if v["grounding"]["unsupported_claims"]
            .as_u64()
            .is_some_and(|n| n > 0)
        {
            answers_with_unsupported += 1;
        }
    }
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["outcome (audit)", "records"]);
    for (k, v) in &outcomes {
        t.add_row(vec![k.clone(), v.to_string()]);
    }
    println!("{t}");

    // Counted by the worker as `check` counts them: every finding of every
    // answer. The envelopes list at most 100 findings each, so counting
    // their lists would undercount long answers.
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["finding", "count"]);
    for kind in FindingKind::ALL {
        let n = metrics.findings(kind);
        if n > 0 {
            t.add_row(vec![kind.as_str().to_string(), n.to_string()]);
        }
    }
    let mut dead: BTreeMap<String, u64> = BTreeMap::new();
    for m in &read[3] {
        let kind = header(m, crate::kafka::outputs::H_ERROR_KIND).unwrap_or_else(|| "?".into());
        *dead.entry(kind).or_default() += 1;
    }
    for (k, v) in &dead {
        t.add_row(vec![format!("dead letter: {k}"), v.to_string()]);
    }
    println!("{t}");
    let claims = metrics.findings(FindingKind::UnsupportedClaim);
    if claims > 0 {
        println!(
            "unsupported_claim counts sentences, not answers: {claims} cited sentences in {answers_with_unsupported} answers are not stated by the source they cite (one answer can have many); `groundgate check --config examples/demo.toml` counts the same"
        );
    }
}

/// One short example of each outcome, read back from the output topics:
/// picked by request id so every run shows the same ones.
fn print_examples(names: &[String; 4], read: &[Vec<rdkafka::message::OwnedMessage>]) {
    println!("\none of each, as the consumers of the output topics see them:");
    let by_id = |v: &Value| v["request_id"].as_str().unwrap_or_default().to_string();
    let accepted = read[0]
        .iter()
        .filter_map(json)
        .filter(|v| v["validation"]["ok"] == true)
        .min_by_key(by_id);
    if let Some(v) = accepted {
        let warnings = v["validation"]["warnings"].as_array().map_or(0, Vec::len);
        let score = v["grounding"]["score"]
            .as_f64()
            .map_or_else(|| "none".to_string(), |s| format!("{s:.2}"));
        println!(
            "  accepted     {} on {}: validation.ok true, {warnings} warning(s), grounding score {score}",
            by_id(&v),
            names[0]
        );
        println!(
            "               answer: {}",
            clip(v["answer"].as_str().unwrap_or_default(), 110)
        );
    }
    let retry = read[1].iter().filter_map(json).min_by_key(by_id);
    if let Some(v) = retry {
        println!(
            "  retry        {} on {}: the corrective prompt sent back to the model lists",
            by_id(&v),
            names[1]
        );
        let prompt = v["prompt"].as_str().unwrap_or_default();
        for line in prompt.lines().filter(|l| l.starts_with("- ")).take(3) {
            println!("               {}", clip(line, 110));
        }
    }
    // By kind and value: a record without a key lands in any partition, so
    // its offset differs from run to run.
    let dead = read[3].iter().min_by_key(|m| {
        (
            header(m, crate::kafka::outputs::H_ERROR_KIND),
            m.payload().map(<[u8]>::to_vec),
        )
    });
    if let Some(m) = dead {
        use crate::kafka::outputs::{
            H_ERROR_DETAIL, H_ERROR_KIND, H_INPUT_OFFSET, H_INPUT_PARTITION,
        };
        let h = |k| header(m, k).unwrap_or_else(|| "?".into());
        println!(
            "  dead letter  input partition {} offset {} on {}: {}: {}",
            h(H_INPUT_PARTITION),
            h(H_INPUT_OFFSET),
            names[3],
            h(H_ERROR_KIND),
            clip(&h(H_ERROR_DETAIL), 90)
        );
        let raw = String::from_utf8_lossy(m.payload().unwrap_or_default());
        println!("               value kept as sent: {}", clip(&raw, 90));
    }
    // The least supported cited sentence of any envelope, ties by request id.
    let mut worst: Option<(f64, String, String, Vec<String>)> = None;
    for v in read[0].iter().filter_map(json) {
        let answer = v["answer"].as_str().unwrap_or_default();
        for c in v["grounding"]["claims"].as_array().into_iter().flatten() {
            let (Some(support), Some(a), Some(b)) = (
                c["support"].as_f64(),
                c["span"][0].as_u64(),
                c["span"][1].as_u64(),
            ) else {
                continue;
            };
            let id = by_id(&v);
            let better = worst.as_ref().is_none_or(|w| (support, &id) < (w.0, &w.1));
            if better && let Some(text) = answer.get(a as usize..b as usize) {
                let missing = c["unsupported_terms"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.as_str().map(str::to_string))
                    .collect();
                worst = Some((support, id, text.to_string(), missing));
            }
        }
    }
    if let Some((support, id, text, missing)) = worst {
        println!(
            "  worst claim  {id}, the least supported cited sentence (support {support:.2}):\n               {}",
            clip(&text, 100)
        );
        println!(
            "               not in its cited source: {}",
            if missing.is_empty() {
                "(every term is there, but not side by side)".to_string()
            } else {
                missing.join(", ")
            }
        );
    }
    println!(
        "  (accepted answers can carry unsupported claims: in this configuration they warn; [grounding] unsupported_claim = \"retry\" or \"reject\" acts on them)"
    );
}

fn json(m: &rdkafka::message::OwnedMessage) -> Option<Value> {
    m.payload()
        .and_then(|p| serde_json::from_slice::<Value>(p).ok())
}

fn header(m: &rdkafka::message::OwnedMessage, key: &str) -> Option<String> {
    use rdkafka::message::Headers;
    m.headers().and_then(|h| {
        h.iter()
            .find(|h| h.key == key)
            .and_then(|h| h.value)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    })
}

/// `s` on one line, escaped for the terminal, cut to at most `max`
/// characters.
fn clip(s: &str, max: usize) -> String {
    let one_line = crate::terminal::escape(s);
    if one_line.chars().count() <= max {
        return one_line.into_owned();
    }
    let mut cut: String = one_line.chars().take(max).collect();
    cut.push('…');
    cut
}
