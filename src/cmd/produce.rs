//! `groundgate produce`: streams a JSON Lines file, or synthetic answers, to
//! the input topic, and says so when the dev broker would not keep them all.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::process::ExitCode;

use anyhow::Context;
use tracing::info;

use crate::cli::ProduceArgs;
use crate::config::{ConfigError, RawConfig};
use crate::kafka::produce::{MockCheck, ProduceError, producer, send_all};

pub async fn main(args: ProduceArgs) -> anyhow::Result<ExitCode> {
    let features = crate::kafka::client::library().features;
    let config = match args
        .kafka
        .raw_layer()
        .map_err(|p| ConfigError::Invalid(vec![p]))
        .and_then(|flags| RawConfig::load_for_kafka(args.kafka.config.as_deref(), flags, &features))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("groundgate produce: {e}");
            return Ok(ExitCode::from(super::run::EXIT_USAGE));
        }
    };
    super::init_logging(config.log.format, &config.log.level);
    // `load_for_kafka` refuses a configuration without brokers; produce
    // never starts a broker (`groundgate dev-broker` runs one).
    let bootstrap = config
        .kafka
        .brokers
        .clone()
        .context("no brokers configured")?;
    let producer = producer(&config.kafka, &bootstrap)?;
    let topic = config.kafka.topics.input.clone();
    let limit = if args.count == 0 {
        u64::MAX
    } else {
        args.count
    };
    let mock = MockCheck::start(&producer, &topic, (args.count > 0).then_some(args.count))?;
    let sent = match &args.file {
        Some(path) => {
            let f = File::open(path).map_err(|source| ProduceError::Read {
                path: path.display().to_string(),
                source,
            })?;
            let p = path.display().to_string();
            let lines = BufReader::new(f)
                .split(b'\n')
                .map(move |l| {
                    l.map(|mut l| {
                        if l.last() == Some(&b'\r') {
                            l.pop();
                        }
                        l
                    })
                    .map_err(|source| ProduceError::Read {
                        path: p.clone(),
                        source,
                    })
                })
                .take(limit as usize);
            send_all(&producer, &topic, lines, args.rate).await?
        }
        None => {
            info!(topic = %topic, rate = args.rate, "producing synthetic answers");
            let records =
                (0..limit).map(|i| Ok(crate::sample::mixed(i, 600 + (i as usize * 131) % 3000)));
            send_all(&producer, &topic, records, args.rate).await?
        }
    };
    println!("sent {sent} records to {topic}");
    if let Some(m) = mock {
        m.finish(&producer)?;
    }
    Ok(ExitCode::SUCCESS)
}
