//! `groundgate replay`: puts dead letters of the chosen kinds back on the
//! input topic (`crate::kafka::replay`) and says what it read and sent.

use std::process::ExitCode;

use tokio_util::sync::CancellationToken;

use crate::cli::ReplayArgs;
use crate::kafka::replay::{
    REMEMBERED_INPUTS, ReplayError, Replayed, Selection, go_on_runs, replay,
};

pub async fn main(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let (config, bootstrap) = super::client_config(&args.kafka, "replay")?;
    let selection = Selection {
        kinds: args.kind.iter().map(|k| k.dead_letter_kind()).collect(),
        partition: args.partition,
        from_offset: args.from_offset,
        dry_run: args.dry_run,
        from_input_topic: args.from_input_topic.clone(),
    };
    // Ctrl-C or SIGTERM stops before the next dead letter, once the one
    // being sent is acknowledged, and the summary says where to go on.
    let stop = CancellationToken::new();
    super::on_signals(
        stop.clone(),
        "stopping: no more dead letters, waiting for the one being sent",
    )
    .map_err(|e| anyhow::anyhow!("cannot install signal handlers: {e}"))?;
    let done = match replay(&config.kafka, &bootstrap, &selection, &stop).await {
        // A partition the topic does not have is the command line's
        // mistake, as a malformed flag is: exit 2.
        Err(e @ ReplayError::NoPartition { .. }) => {
            return Err(super::UsageError(e.to_string()).into());
        }
        done => done?,
    };
    println!(
        "{}",
        summary(
            &done,
            &config.kafka.topics.dead_letter,
            &config.kafka.topics.input,
            args.dry_run
        )
    );
    if done.stopped {
        return Ok(ExitCode::from(super::EXIT_INTERRUPTED as u8));
    }
    Ok(ExitCode::SUCCESS)
}

/// What a replay read and sent, in a few lines.
fn summary(r: &Replayed, from: &str, to: &str, dry_run: bool) -> String {
    let ranges: Vec<String> = r
        .ranges
        .iter()
        .map(|(p, (first, end))| {
            if first > end {
                // Told to start past the partition's end: nothing to read.
                format!("{p} none from {first} (it ends at {end})")
            } else {
                format!("{p} [{first}, {end})")
            }
        })
        .collect();
    let sent: u64 = r.sent.values().sum();
    let by_kind: Vec<String> = r.sent.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let verb = if dry_run {
        "would put back"
    } else {
        "put back"
    };
    let mut lines = vec![
        format!(
            "read {from}, partition [first offset, end): {}",
            ranges.join(", ")
        ),
        format!(
            "{verb} {sent} dead letter{} on {to}{}",
            if sent == 1 { "" } else { "s" },
            if by_kind.is_empty() {
                String::new()
            } else {
                format!(" ({})", by_kind.join(", "))
            }
        ),
    ];
    if !r.gone.is_empty() {
        let gone: Vec<String> = r
            .gone
            .iter()
            .map(|(p, (from, to))| format!("partition {p} offsets [{from}, {to})"))
            .collect();
        lines.push(format!(
            "no longer on the topic (deleted before this run read them), not put back: {}",
            gone.join(", ")
        ));
    }
    let mut left = Vec::new();
    if r.other_kinds > 0 {
        left.push(format!("{} of kinds not chosen", r.other_kinds));
    }
    if r.duplicates > 0 {
        left.push(format!(
            "{} more of an input record {} already (the same groundgate.input.topic, partition and offset)",
            r.duplicates,
            if dry_run { "counted" } else { "put back" }
        ));
    }
    if r.summaries > 0 {
        left.push(format!(
            "{} too_large (a summary of the record, not the record)",
            r.summaries
        ));
    }
    if r.other_input > 0 {
        left.push(format!(
            "{} read from another input topic ({}{}; --from-input-topic NAME puts back those of NAME)",
            r.other_input,
            r.other_inputs.join(", "),
            if r.other_inputs_more { ", …" } else { "" }
        ));
    }
    if r.foreign > 0 {
        left.push(format!(
            "{} without groundgate's dead-letter headers",
            r.foreign
        ));
    }
    if !left.is_empty() {
        lines.push(format!("left where they are: {}", left.join(", ")));
    }
    if r.forgot_inputs {
        lines.push(format!(
            "more than {REMEMBERED_INPUTS} input records {verb}: a second dead letter of one is known only while it is among the last {REMEMBERED_INPUTS}"
        ));
    }
    if r.stopped {
        lines.push(format!(
            "stopped by a signal before the end: go on with {}",
            go_on_runs(&r.left)
        ));
    }
    if dry_run {
        lines.push("dry run: nothing was sent".into());
    } else if !r.stopped {
        // Offsets are per partition: one --from-offset for all would read
        // again what this run put back in one partition and pass over
        // dead letters in another.
        let next: Vec<(i32, i64)> = r
            .ranges
            .iter()
            .map(|(p, (first, end))| (*p, *first.max(end)))
            .collect();
        lines.push(format!(
            "next time, to leave out what this run read: {}",
            go_on_runs(&next)
        ));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A run that read its range through says where the next run starts
    /// in each partition: one offset for all of them would read again
    /// what this one put back in some, or pass over dead letters in
    /// others.
    #[test]
    fn a_finished_run_says_where_each_partition_goes_on_next_time() {
        let done = Replayed {
            ranges: BTreeMap::from([(0, (0, 3)), (1, (0, 0)), (2, (0, 1)), (3, (7, 2))]),
            sent: BTreeMap::from([("schema", 1)]),
            ..Replayed::default()
        };
        let text = summary(&done, "answers.dlq", "answers", false);
        let next = "next time, to leave out what this run read: --partition 0 --from-offset 3, then --partition 1 --from-offset 0, then --partition 2 --from-offset 1, then --partition 3 --from-offset 7 (one run each)";
        assert!(text.lines().any(|l| l == next), "{text}");
        for (stopped, dry_run) in [(true, false), (false, true)] {
            let other = Replayed {
                stopped,
                left: vec![(0, 2)],
                ..done.clone()
            };
            let text = summary(&other, "answers.dlq", "answers", dry_run);
            assert!(!text.contains("next time"), "{text}");
        }
    }

    #[test]
    fn one_dead_letter_is_one_and_a_start_past_the_end_reads_none() {
        let done = Replayed {
            ranges: BTreeMap::from([(0, (0, 3)), (1, (100, 5))]),
            sent: BTreeMap::from([("schema", 1)]),
            ..Replayed::default()
        };
        let text = summary(&done, "answers.dlq", "answers", false);
        assert!(
            text.contains("put back 1 dead letter on answers (schema 1)"),
            "{text}"
        );
        assert!(
            text.contains(
                "partition [first offset, end): 0 [0, 3), 1 none from 100 (it ends at 5)"
            ),
            "{text}"
        );
    }

    #[test]
    fn dead_letters_of_a_record_put_back_already_are_named_as_left_where_they_are() {
        let done = Replayed {
            ranges: BTreeMap::from([(0, (0, 4))]),
            sent: BTreeMap::from([("schema", 2)]),
            duplicates: 2,
            ..Replayed::default()
        };
        let text = summary(&done, "answers.dlq", "answers", false);
        assert!(
            text.contains(
                "left where they are: 2 more of an input record put back already (the same groundgate.input.topic, partition and offset)"
            ),
            "{text}"
        );
        let text = summary(&done, "answers.dlq", "answers", true);
        assert!(
            text.contains("2 more of an input record counted already"),
            "{text}"
        );
        assert!(!text.contains("more than"), "{text}");
        let forgot = Replayed {
            forgot_inputs: true,
            ..done
        };
        let text = summary(&forgot, "answers.dlq", "answers", false);
        assert!(
            text.contains(&format!(
                "more than {REMEMBERED_INPUTS} input records put back: a second dead letter"
            )),
            "{text}"
        );
    }

    #[test]
    fn dead_letters_of_another_input_topic_are_named_as_left_where_they_are() {
        let done = Replayed {
            ranges: BTreeMap::from([(0, (0, 4))]),
            other_input: 3,
            other_inputs: vec!["answers-eu".into()],
            ..Replayed::default()
        };
        let text = summary(&done, "answers.dlq", "answers", false);
        assert!(
            text.contains(
                "left where they are: 3 read from another input topic (answers-eu; --from-input-topic NAME puts back those of NAME)"
            ),
            "{text}"
        );
    }
}
