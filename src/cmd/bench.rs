//! `groundgate bench`: how much the validation and the audit seals cost on
//! the wire. In one process and one run it produces the same records once,
//! then drains them five times through the very same worker code on the
//! same broker: a passthrough (no validation, no seals, same two outputs per
//! record), the worker in at-least-once and in exactly-once as `run` runs
//! it (sealing), and both again without seals. Each run has its own
//! consumer group and output topics. The clock starts when the run's
//! partitions are assigned (so group joins are not measured) and stops
//! when the last audit row is acknowledged (seals are not waited for; those
//! published by then are counted).
//!
//! It measures; it asserts nothing (tests never depend on speed).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use tokio_util::sync::CancellationToken;

use anyhow::bail;

use crate::cli::{BenchArgs, BenchShape};
use crate::config::{Guarantee, RawConfig, RawTopics};
use crate::core::OutputRole;
use crate::http::Health;
use crate::kafka::embedded::EmbeddedBroker;
use crate::kafka::produce;
use crate::kafka::worker::{Step, run_worker_with};
use crate::metrics::Metrics;

const INPUT: &str = "bench.answers";
const DEADLINE: Duration = Duration::from_secs(600);

struct Run {
    name: &'static str,
    /// In topic and group names.
    slug: &'static str,
    step: Step,
    guarantee: Guarantee,
}

const RUNS: [Run; 5] = [
    Run {
        name: "passthrough",
        slug: "passthrough",
        step: Step::Passthrough,
        guarantee: Guarantee::AtLeastOnce,
    },
    Run {
        name: "at-least-once",
        slug: "alo",
        step: Step::Validate,
        guarantee: Guarantee::AtLeastOnce,
    },
    Run {
        name: "at-least-once, no seals",
        slug: "alo-unsealed",
        step: Step::ValidateUnsealed,
        guarantee: Guarantee::AtLeastOnce,
    },
    Run {
        name: "exactly-once",
        slug: "eos",
        step: Step::Validate,
        guarantee: Guarantee::ExactlyOnce,
    },
    Run {
        name: "exactly-once, no seals",
        slug: "eos-unsealed",
        step: Step::ValidateUnsealed,
        guarantee: Guarantee::ExactlyOnce,
    },
];

fn topics(run: &str) -> [String; 4] {
    ["final", "retry", "audit", "dlq"].map(|t| format!("bench.{run}.{t}"))
}

pub async fn main(args: BenchArgs) -> anyhow::Result<ExitCode> {
    super::init_logging(crate::config::LogFormat::Human, "warn");
    let mut all_topics = vec![INPUT.to_string()];
    for r in &RUNS {
        all_topics.extend(topics(r.slug));
    }
    let names: Vec<&str> = all_topics.iter().map(String::as_str).collect();
    let broker = EmbeddedBroker::start(args.partitions, &names)?;
    let bootstrap = broker.bootstrap();

    let base = RawConfig::default().validate()?;
    let producer = produce::producer(&base.kafka, &bootstrap)?;
    let bytes = args.answer_bytes;
    let (shape, repeat) = (args.shape, args.repeat_percent);
    let records = (0..args.records).map(|i| {
        Ok(match shape {
            BenchShape::Mixed => crate::sample::mixed(i, bytes),
            BenchShape::Rag => crate::sample::rag(i, repeat),
        })
    });
    let what = match shape {
        BenchShape::Mixed => format!("~{bytes} B answers"),
        BenchShape::Rag => format!("RAG shape, {repeat} % repeated sources"),
    };
    println!(
        "producing {} records ({what}, {} partitions) to the embedded broker (librdkafka mock cluster)",
        args.records, args.partitions
    );
    produce::send_all(&producer, INPUT, records, 0).await?;
    drop(producer);

    // Rounds interleave the runs so drift (other load, allocator warm-up)
    // hits all of them alike; the median of each is reported.
    let mut secs: [Vec<f64>; 5] = Default::default();
    let mut seal_rates: [Vec<f64>; 5] = Default::default();
    for round in 0..args.rounds.max(1) {
        for (i, run) in RUNS.iter().enumerate() {
            let (s, seals) = one_run(run, round, &bootstrap, args.records).await?;
            println!(
                "round {}: {:>24} {:.2} s, {seals} seals",
                round + 1,
                run.name,
                s
            );
            secs[i].push(s);
            seal_rates[i].push(seals as f64 / s);
        }
    }
    drop(broker);
    let [pass, alo, alo_unsealed, eos, eos_unsealed] = secs.map(median);
    let seal_rates = seal_rates.map(median);

    let rate = |secs: f64| args.records as f64 / secs;
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["run (median)", "records/s", "seals/s", "ratio"]);
    let rows = [
        (pass, None, "1.00".to_string()),
        (
            alo,
            Some(seal_rates[1]),
            format!("{:.2} × passthrough", pass / alo),
        ),
        (
            alo_unsealed,
            None,
            format!("sealed at {:.2} × this", alo_unsealed / alo),
        ),
        (
            eos,
            Some(seal_rates[3]),
            format!("{:.2} × at-least-once", alo / eos),
        ),
        (
            eos_unsealed,
            None,
            format!("sealed at {:.2} × this", eos_unsealed / eos),
        ),
    ];
    for (run, (secs, seals, ratio)) in RUNS.iter().zip(rows) {
        t.add_row(vec![
            run.name.to_string(),
            format!("{:.0}", rate(secs)),
            seals.map_or_else(String::new, |s| format!("{s:.1}")),
            ratio,
        ]);
    }
    println!("{t}");
    if let Some(note) = broker_paced(pass, alo) {
        println!("{note}");
    }
    println!(
        "broker: librdkafka mock cluster, in this process (it shares the CPU with the worker); measure against real Kafka before drawing conclusions"
    );
    Ok(ExitCode::SUCCESS)
}

/// A note when passthrough (seconds `pass`) took longer than at-least-once
/// (`alo`): validation cannot make a run faster, so the broker set the pace
/// and the ratio would mislead.
fn broker_paced(pass: f64, alo: f64) -> Option<&'static str> {
    (pass > alo).then_some(
        "note: passthrough drained slower than at-least-once: the embedded broker, not the worker, set its pace (passthrough writes each input twice), so the ratio says nothing about the worker here",
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Drains the input once with `run`'s settings; returns seconds from
/// assignment to the last acknowledged audit row of this round, and the
/// seals published by then.
async fn one_run(run: &Run, round: u32, bootstrap: &str, want: u64) -> anyhow::Result<(f64, u64)> {
    let [final_, retry, audit, dead_letter] = topics(run.slug);
    let mut raw = RawConfig::default();
    raw.kafka.brokers = Some(bootstrap.to_string());
    raw.kafka.group_id = Some(format!("bench-{}-{round}", run.slug));
    raw.kafka.transactional_id = Some(format!("bench-{}-{round}", run.slug));
    raw.kafka.guarantee = Some(run.guarantee);
    raw.kafka.topics = RawTopics {
        input: Some(INPUT.into()),
        final_: Some(final_),
        retry: Some(retry),
        audit: Some(audit),
        dead_letter: Some(dead_letter),
    };
    let config = Arc::new(raw.validate()?);
    let metrics = Arc::new(Metrics::new(&config.metrics)?);
    metrics.set_grounding_model(config.core.grounding.model());
    let health = Arc::new(Health::default());
    let token = CancellationToken::new();
    let worker = tokio::spawn(run_worker_with(
        config,
        bootstrap.to_string(),
        metrics.clone(),
        health.clone(),
        token.clone(),
        run.step,
    ));
    let outcome = async {
        let deadline = Instant::now() + DEADLINE;
        while !health.is_ready() {
            if Instant::now() > deadline || worker.is_finished() {
                bail!(
                    "{}: partitions were never assigned within {DEADLINE:?}",
                    run.name
                );
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let started = Instant::now();
        loop {
            let got = metrics.published(OutputRole::Audit);
            if got >= want {
                return Ok((started.elapsed().as_secs_f64(), metrics.seals_published()));
            }
            if Instant::now() > deadline || worker.is_finished() {
                bail!(
                    "{}: only {got} of {want} records done within {DEADLINE:?}",
                    run.name
                );
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    .await;
    token.cancel();
    worker.await??;
    outcome
}

#[cfg(test)]
mod tests {
    use super::broker_paced;

    #[test]
    fn a_passthrough_slower_than_validation_is_called_broker_paced() {
        assert!(broker_paced(2.2, 0.8).is_some_and(|n| n.contains("embedded broker")));
        assert_eq!(broker_paced(0.2, 0.3), None);
        assert_eq!(broker_paced(0.3, 0.3), None);
    }
}
