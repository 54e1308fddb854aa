//! `groundgate produce`: streams a JSON Lines file, or synthetic answers, to
//! the input topic, and says so when the dev broker would not keep them all.

use std::io::BufReader;
use std::process::ExitCode;

use tokio_util::sync::CancellationToken;
use tracing::info;

use super::UsageError;

use crate::cli::ProduceArgs;
use crate::kafka::produce::{MockCheck, ProduceError, producer, reachable, send_until};

/// Lines read from the input ahead of the producer, at most.
const READ_AHEAD: usize = 256;

pub async fn main(args: ProduceArgs) -> anyhow::Result<ExitCode> {
    let (config, bootstrap) = super::client_config(&args.kafka, "produce")?;
    // The file is opened before anything connects: a mistyped path is said
    // at once, not after the brokers were asked for metadata.
    let input = args
        .file
        .as_ref()
        .map(|path| {
            // An input that cannot be read is exit 2, as in `check`: 1 says
            // the dev broker dropped records.
            crate::batch::input::open(path)
                .map(|input| (path, input))
                .map_err(|e| UsageError(e.to_string()))
        })
        .transpose()?;
    if args.file.as_ref().is_some_and(|p| p.as_os_str() == "-") {
        super::note_terminal_stdin("produce");
    }
    let producer = producer(&config.kafka, &bootstrap)?;
    let topic = config.kafka.topics.input.clone();
    // Ctrl-C or SIGTERM stops sending; what was sent is still awaited and
    // counted, so "sent N" is true after a stop as after a full run.
    let stop = CancellationToken::new();
    super::on_signals(
        stop.clone(),
        "stopping: no more records, waiting for those already sent",
    )
    .map_err(|e| anyhow::anyhow!("cannot install signal handlers: {e}"))?;
    info!(%bootstrap, topic = %topic, "producing");
    let limit = if args.count == 0 {
        u64::MAX
    } else {
        args.count
    };
    // Asking the cluster whether it is the dev broker blocks (metadata and
    // watermarks): off the async runtime, like every blocking client call.
    let mock = {
        let (p, t, b) = (producer.clone(), topic.clone(), bootstrap.clone());
        let count = (args.count > 0).then_some(args.count);
        tokio::task::spawn_blocking(move || {
            let partitions = reachable(&p, &b, &t)?;
            MockCheck::start(&p, &t, &partitions, count)
        })
        .await??
    };
    let sent = match input {
        Some((path, input)) => {
            let p = path.display().to_string();
            // A line longer than a message may be is not held whole: it
            // could not be sent anyway.
            let cap = config.kafka.max_message_bytes;
            let skip = args.skip;
            let mut reader = BufReader::new(input.reader);
            let mut n = 0u64;
            let lines = std::iter::from_fn(move || {
                loop {
                    let mut line = Vec::new();
                    n += 1;
                    let read =
                        crate::batch::input::read_value_line_bounded(&mut reader, &mut line, cap);
                    // A line left out is read through, whatever its length; a
                    // stream that ends or breaks before the first line to send
                    // stops the run.
                    if n <= skip {
                        let what = match read {
                            Ok(Some(_)) => continue,
                            Ok(None) => format!("it holds {} records", n - 1),
                            Err(e) => format!("line {n}: {e}"),
                        };
                        return Some(Err(ProduceError::Skipping {
                            path: p.clone(),
                            skip,
                            what,
                        }));
                    }
                    return match read {
                        Ok(None) => None,
                        Ok(Some(len)) if len > cap as u64 => Some(Err(ProduceError::TooLong {
                            path: p.clone(),
                            line: n,
                            bytes: len,
                            cap,
                        })),
                        Ok(Some(_)) => {
                            // A `\r` within a framed value's header is a byte
                            // of its schema id, as `check` reads it.
                            if line.len() > crate::core::wire::header_bytes(&line)
                                && line.last() == Some(&b'\r')
                            {
                                line.pop();
                            }
                            Some(Ok(line))
                        }
                        Err(source) => Some(Err(ProduceError::Read {
                            path: p.clone(),
                            source,
                        })),
                    };
                }
            })
            .take(limit as usize);
            // Read on a thread of its own: a read blocks until a line comes
            // (standard input may stay open with nothing to read), and a
            // stop must not wait for one. The channel bounds what is read
            // ahead of the producer.
            let (tx, mut rx) = tokio::sync::mpsc::channel(READ_AHEAD);
            std::thread::Builder::new()
                .name("produce-read".into())
                .spawn(move || {
                    for line in lines {
                        if tx.blocking_send(line).is_err() {
                            break;
                        }
                    }
                })
                .map_err(|e| anyhow::anyhow!("cannot start the input reader: {e}"))?;
            let next = async || rx.recv().await;
            send_until(&producer, &topic, next, args.rate, args.skip, &stop)
                .await
                .map_err(|e| match e {
                    ProduceError::Stopped { .. } | ProduceError::Skipping { .. } => {
                        anyhow::Error::new(UsageError(e.to_string()))
                    }
                    e => e.into(),
                })?
        }
        None => {
            info!(topic = %topic, rate = args.rate, "producing synthetic answers");
            let mut records = (args.skip..)
                .take(limit as usize)
                .map(|i| Ok(crate::sample::mixed(i, 600 + (i as usize * 131) % 3000)));
            let next = async || records.next();
            send_until(&producer, &topic, next, args.rate, args.skip, &stop).await?
        }
    };
    let left_out = if args.skip > 0 {
        format!(", after the first {} left out by --skip", args.skip)
    } else {
        String::new()
    };
    // The number that goes on from here, so that a stopped run can be
    // finished without sending a record twice.
    // A signal that came once every record was sent stopped nothing.
    let stopped = if sent.stopped {
        format!(
            " (stopped by a signal: go on with --skip {})",
            args.skip + sent.records
        )
    } else {
        String::new()
    };
    println!(
        "sent {} records to {topic}{left_out}{stopped}",
        sent.records
    );
    if let Some(m) = mock {
        let p = producer.clone();
        tokio::task::spawn_blocking(move || m.finish(&p)).await??;
    }
    // A file or a --count is a whole to send, and a run stopped short of
    // it did not do its job (a Job's pod evicted with SIGTERM must not
    // count as completed); synthetic answers without a count end only so.
    if sent.stopped && (args.file.is_some() || args.count > 0) {
        return Ok(ExitCode::from(super::EXIT_INTERRUPTED as u8));
    }
    Ok(ExitCode::SUCCESS)
}
