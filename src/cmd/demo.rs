//! `groundgate demo`: the one command for a newcomer. Embedded broker, the
//! five topics, the shipped sample stream, one worker in-process with
//! `/metrics`, then a summary read back from the output topics themselves.
//! The sample stream and its configuration are compiled into the binary so
//! the demo runs from any directory.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use rdkafka::Message;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use anyhow::{Context, bail};

use crate::cli::DemoArgs;
use crate::config::RawConfig;
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
        Some(p) => {
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?
        }
        None => SAMPLE.to_string(),
    };
    let lines: Vec<Vec<u8>> = text.lines().map(|l| l.as_bytes().to_vec()).collect();
    let want = lines.len();

    let started = Instant::now();
    let topics = config.kafka.topics.clone();
    let broker = EmbeddedBroker::start(4, &topics.all())?;
    let bootstrap = broker.bootstrap();
    println!(
        "groundgate demo: embedded in-memory broker at {bootstrap} (not durable), topics: {}",
        topics.all().join(", ")
    );

    let metrics = Arc::new(Metrics::new(&config.metrics)?);
    let health = Arc::new(Health::default());
    let (addr, _server) = http::serve(config.metrics.addr, metrics.clone(), health.clone()).await?;

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
    // The audit topic also holds the seals over its rows: counted apart.
    let seals = read[2].iter().filter(|m| inspect::is_seal(m)).count();
    read[2].retain(|m| !inspect::is_seal(m));
    let terminals = read[0].len() + read[1].len() + read[3].len();
    if read[2].len() < want || terminals < want {
        shutdown.cancel();
        bail!(
            "only {} of {want} records had both outputs within {DEADLINE:?}; the worker is not keeping up",
            read[2].len().min(terminals)
        );
    }
    if !args.serve {
        shutdown.cancel();
    }

    print_summary(&names, &read, started.elapsed());
    println!(
        "audit seals on {} so far: {seals} (a partition's rows are sealed every audit.seal_every rows, after audit.seal_interval_ms (default 1 s), and when the worker stops)",
        topics.audit
    );
    println!("\nmetrics: http://{addr}/metrics   (health: /healthz, readiness: /readyz)");
    if !args.serve {
        println!(
            "  (these stop when the demo exits; `groundgate demo --serve` keeps the broker, worker and /metrics up until Ctrl-C)"
        );
    }
    println!(
        "configuration: examples/demo.toml (built into the binary); `groundgate check` uses the built-in defaults unless given --config examples/demo.toml, so the same file can give different counts there"
    );
    println!("look at the records yourself while a broker runs, e.g.:");
    println!("  groundgate dev-broker --port 9092 &");
    println!(
        "  groundgate produce --brokers 127.0.0.1:9092 --file examples/answers.jsonl --rate 0"
    );
    println!("  groundgate run --brokers 127.0.0.1:9092 &");
    println!(
        "  kcat -b 127.0.0.1:9092 -C -t {} -e -f '%k %h\\n%s\\n\\n'",
        topics.retry
    );
    if args.serve {
        println!("\n--serve: broker, worker and /metrics stay up; Ctrl-C to stop");
        super::on_signals(shutdown.clone())?;
        shutdown.cancelled().await;
    }
    let report = worker.await??;
    // Clients go before the broker, or librdkafka reports the broker "down".
    drop(producer);
    drop(broker);
    tracing::info!(records = report.records, "demo worker stopped");
    Ok(ExitCode::SUCCESS)
}

fn print_summary(
    names: &[String; 4],
    read: &[Vec<rdkafka::message::OwnedMessage>],
    took: Duration,
) {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["output topic", "records"]);
    for (name, msgs) in names.iter().zip(read) {
        t.add_row(vec![name.clone(), msgs.len().to_string()]);
    }
    println!("\nwhat went where ({:.1} s):\n{t}", took.as_secs_f64());

    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    let mut findings: BTreeMap<String, u64> = BTreeMap::new();
    for m in &read[2] {
        if let Some(v) = m
            .payload()
            .and_then(|p| serde_json::from_slice::<Value>(p).ok())
        {
            let o = v["outcome"].as_str().unwrap_or("?").to_string();
            *outcomes.entry(o).or_default() += 1;
        }
    }
    // Findings as the consumers of the outputs see them.
    for m in read[0].iter().chain(&read[1]) {
        let Some(v) = m
            .payload()
            .and_then(|p| serde_json::from_slice::<Value>(p).ok())
        else {
            continue;
        };
        // Envelopes: validation.{warnings,errors}; retry requests: problems
        // and the non-blocking warnings they carry too.
        let lists = [
            &v["validation"]["warnings"],
            &v["validation"]["errors"],
            &v["problems"],
            &v["warnings"],
        ];
        for f in lists.into_iter().filter_map(Value::as_array).flatten() {
            let k = f["kind"].as_str().unwrap_or("?").to_string();
            *findings.entry(k).or_default() += 1;
        }
    }
    for m in &read[3] {
        let kind = m
            .headers()
            .and_then(|h| {
                use rdkafka::message::Headers;
                h.iter()
                    .find(|h| h.key == crate::kafka::outputs::H_ERROR_KIND)
                    .and_then(|h| h.value)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
            })
            .unwrap_or_else(|| "?".into());
        *findings.entry(format!("dead letter: {kind}")).or_default() += 1;
    }
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["outcome (audit)", "records"]);
    for (k, v) in &outcomes {
        t.add_row(vec![k.clone(), v.to_string()]);
    }
    println!("{t}");
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["finding", "count"]);
    for (k, v) in &findings {
        t.add_row(vec![k.clone(), v.to_string()]);
    }
    println!("{t}");
}
