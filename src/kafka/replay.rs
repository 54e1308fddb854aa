//! `groundgate replay`: puts dead letters of chosen kinds back on the input
//! topic, as they were received, once what sent them there is fixed (a
//! defect behind an `internal` dead letter, a producer's schema, the
//! worker's `value_framing`).
//!
//! [`restored`] is the pure part: what input record a dead letter was. The
//! reading and sending around it reads the dead-letter topic from a start
//! up to the end it had when the command started, so records that fail
//! again and come back to the topic are not replayed in a loop, and puts
//! back each input record once, however many dead letters it has.
//!
//! Must not: judge a record (the worker does that again), or change the
//! dead-letter topic or any consumer group's offsets.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::time::Duration;

use rdkafka::Message;
use rdkafka::consumer::BaseConsumer;
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::FutureRecord;

use super::client::{FutureProducer, LogContext};
use super::outputs::{
    H_ERROR_KIND, H_INPUT_OFFSET, H_INPUT_PARTITION, H_INPUT_TOPIC, OutHeader, unescaped_name,
};
use super::range_read::{RangeError, RangeRead};
use crate::config::KafkaConfig;
use crate::core::DeadLetterKind;
use tokio_util::sync::CancellationToken;

/// The input record a dead letter was: its key, value and headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    pub kind: DeadLetterKind,
    /// The input topic the record was read from (`groundgate.input.topic`),
    /// when the dead letter names one.
    pub input_topic: Option<String>,
    /// The record's partition and offset in `input_topic`
    /// (`groundgate.input.partition`, `groundgate.input.offset`), when the
    /// dead letter names all three: what tells two dead letters of one
    /// input record apart from two records that look the same.
    pub input_position: Option<(i32, i64)>,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<OutHeader>,
}

/// Why a record of the dead-letter topic cannot be put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRestored {
    /// No `groundgate.error.kind` header naming a kind: not a dead letter
    /// groundgate wrote.
    NotADeadLetter,
    /// A `too_large` dead letter holds groundgate's summary of the record,
    /// not the record.
    Summary,
}

/// The input record behind a dead letter: the key and value as they are
/// (a dead letter keeps them as received), the headers without the ones
/// groundgate added, and an input's own `groundgate.*` headers, which the
/// dead letter carries renamed `original.groundgate.*`, under their names
/// again (one `original.` taken off any name that starts with
/// `groundgate.` after it and any more of them: [`unescaped_name`]).
pub fn restored(
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[(&str, Option<&[u8]>)],
) -> Result<Restored, NotRestored> {
    let kind = headers
        .iter()
        .find(|(k, _)| *k == H_ERROR_KIND)
        .and_then(|(_, v)| std::str::from_utf8((*v)?).ok())
        .and_then(|v| DeadLetterKind::ALL.into_iter().find(|k| k.as_str() == v))
        .ok_or(NotRestored::NotADeadLetter)?;
    if kind == DeadLetterKind::TooLarge {
        return Err(NotRestored::Summary);
    }
    let value_of = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| *v)
    };
    let input_topic = value_of(H_INPUT_TOPIC).map(|v| String::from_utf8_lossy(v).into_owned());
    fn number<T: std::str::FromStr>(value: Option<&[u8]>) -> Option<T> {
        std::str::from_utf8(value?).ok()?.parse().ok()
    }
    let input_position = input_topic
        .as_ref()
        .and(number(value_of(H_INPUT_PARTITION)).zip(number(value_of(H_INPUT_OFFSET))));
    let headers = headers
        .iter()
        .filter_map(|(k, v)| Some((unescaped_name(k)?.to_string(), v.map(<[u8]>::to_vec))))
        .collect();
    Ok(Restored {
        kind,
        input_topic,
        input_position,
        key: key.map(<[u8]>::to_vec),
        value: value.map(<[u8]>::to_vec),
        headers,
    })
}

/// Which dead letters to put back, and from where.
#[derive(Debug, Clone)]
pub struct Selection {
    pub kinds: Vec<DeadLetterKind>,
    /// Only this partition of the dead-letter topic; all when `None`.
    pub partition: Option<i32>,
    /// First offset read in each partition read; the earliest kept when `None`.
    pub from_offset: Option<i64>,
    /// Count what would be put back, and send nothing.
    pub dry_run: bool,
    /// Put back the dead letters of records read from this input topic
    /// instead of the one written to (a topic renamed since).
    pub from_input_topic: Option<String>,
}

/// What a replay did, per dead-letter partition and in all.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Replayed {
    /// Partition → (first offset read, end offset: where reading stopped).
    pub ranges: BTreeMap<i32, (i64, i64)>,
    /// Partition → the offsets from `--from-offset` up to the first one
    /// the topic still held, where that is later: dead letters deleted
    /// before they could be read.
    pub gone: BTreeMap<i32, (i64, i64)>,
    /// Put back (or, in a dry run, that would be), by kind.
    pub sent: BTreeMap<&'static str, u64>,
    /// Dead letters of an input record this run put back already (the same
    /// input topic, partition and offset: a worker that restarted before
    /// committing judged the record again and wrote a second dead letter).
    pub duplicates: u64,
    /// Whether more input records were put back than [`REMEMBERED_INPUTS`]:
    /// a dead letter whose record was put back that many records before
    /// is not known as a duplicate.
    pub forgot_inputs: bool,
    /// `too_large` dead letters, which hold a summary, not the record.
    pub summaries: u64,
    /// Dead letters of kinds not chosen.
    pub other_kinds: u64,
    /// Records without groundgate's dead-letter headers.
    pub foreign: u64,
    /// Dead letters of a chosen kind read from another input topic than
    /// the one written to (or `from_input_topic`), and the first few such
    /// topics.
    pub other_input: u64,
    pub other_inputs: Vec<String>,
    /// Whether more such topics were read than `other_inputs` names.
    pub other_inputs_more: bool,
    /// Whether a stop ended the run before the end of its ranges.
    pub stopped: bool,
    /// After a stop: every partition with dead letters left, and the first
    /// offset left in it.
    pub left: Vec<(i32, i64)>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot create the Kafka client: {0}")]
    Client(KafkaError),
    #[error(
        "cannot read the dead-letter topic {topic}: {source}{}",
        read_hint(source)
    )]
    Read { topic: String, source: KafkaError },
    #[error("the dead-letter topic {0} does not exist or has no partition{1}")]
    NoTopic(String, String),
    /// `--partition` names a partition the dead-letter topic does not
    /// have: a mistake in the command line.
    #[error(
        "--partition {partition}: the dead-letter topic {topic} has {}",
        super::range_read::partitions_of(*.partitions)
    )]
    NoPartition {
        topic: String,
        partition: i32,
        partitions: usize,
    },
    #[error("the dead-letter topic's reader stopped unexpectedly: {0}")]
    Reader(String),
    #[error(transparent)]
    Send(Box<SendFailed>),
    #[error(transparent)]
    ReadFailed(Box<ReadFailed>),
}

/// The dead-letter topic could not be read to the end of its range after
/// the reading had begun, and where to go on from.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot read the dead-letter topic {topic} after {sent} dead letters were {}: {source}{}: go on with {}",
    if *.dry_run { "counted (a dry run: nothing was sent)" } else { "put back" },
    read_hint(.source),
    go_on_runs(.go_on)
)]
pub struct ReadFailed {
    pub topic: String,
    pub sent: u64,
    pub dry_run: bool,
    pub source: KafkaError,
    /// Every partition with dead letters left, and the first offset left
    /// in it.
    pub go_on: Vec<(i32, i64)>,
}

/// What a read error of the dead-letter topic leaves unsaid.
fn read_hint(e: &KafkaError) -> &'static str {
    if super::client::deleted_under_reader(e) {
        ": the dead letters at the reader's position are no longer on the topic (deleted by its retention, or by a deletion of records, while this run read it)"
    } else {
        super::error::unreachable_hint(e)
    }
}

/// A dead letter the brokers did not take back, and where to go on from.
#[derive(Debug, thiserror::Error)]
#[error(
    "sending to {topic} failed after {sent} records were put back: {source}; the dead letter at partition {partition} offset {offset} was not, nor any read after it: go on with {}",
    go_on_runs(.go_on)
)]
pub struct SendFailed {
    pub topic: String,
    pub sent: u64,
    pub partition: i32,
    pub offset: i64,
    pub source: KafkaError,
    /// Every partition with dead letters left, and the first offset left
    /// in it (the partitions are read together, so several may have some
    /// left).
    pub go_on: Vec<(i32, i64)>,
}

/// The runs that go on from `go_on`: one a partition.
pub fn go_on_runs(go_on: &[(i32, i64)]) -> String {
    let runs: Vec<String> = go_on
        .iter()
        .map(|(p, o)| format!("--partition {p} --from-offset {o}"))
        .collect();
    match runs.len() {
        0 => "nothing: every dead letter of the range was handled".to_string(),
        1 => runs.concat(),
        _ => format!("{} (one run each)", runs.join(", then ")),
    }
}

/// Input topics other than the one written to that a summary names.
const OTHER_INPUTS_NAMED: usize = 5;

/// Records read ahead of the sends: each waits here for the one before it
/// to be acknowledged.
const READ_AHEAD: usize = 8;

/// Input records (partition and offset) a run remembers having put back,
/// the latest ones, to put back each once: about 50 bytes each, so at most
/// about 26 MB. A worker writes the second dead letter of a record soon
/// after the first (when it judges again what it had not committed), so
/// the two lie far fewer dead letters apart than this.
pub const REMEMBERED_INPUTS: usize = 1 << 19;

/// The input records put back by a run, the latest `capacity` of them.
#[derive(Debug)]
struct PutBack {
    capacity: usize,
    set: HashSet<(i32, i64)>,
    order: VecDeque<(i32, i64)>,
    /// Whether one was forgotten to make room.
    forgot: bool,
}

impl PutBack {
    fn new(capacity: usize) -> Self {
        Self {
            capacity,
            set: HashSet::new(),
            order: VecDeque::new(),
            forgot: false,
        }
    }

    fn contains(&self, input: (i32, i64)) -> bool {
        self.set.contains(&input)
    }

    /// Remembers `input`, forgetting the oldest one past the capacity.
    fn insert(&mut self, input: (i32, i64)) {
        if !self.set.insert(input) {
            return;
        }
        // Room made before the push: the queue never grows past `capacity`.
        if self.order.len() >= self.capacity
            && let Some(oldest) = self.order.pop_front()
        {
            self.set.remove(&oldest);
            self.forgot = true;
        }
        self.order.push_back(input);
    }
}

/// What the reading thread hands the sender.
enum Read {
    /// Partition → (first offset read, end offset), before any record.
    Ranges(BTreeMap<i32, (i64, i64)>),
    Record {
        partition: i32,
        offset: i64,
        restored: Result<Restored, NotRestored>,
    },
}

/// Reads the dead-letter topic from the selection's start up to its end at
/// the start of the run and puts every dead letter of a chosen kind back on
/// the input topic, in order per partition, each send acknowledged before
/// the next is sent (a failure says where to go on from). The reading
/// blocks, so it runs on a blocking thread, a few records ahead at most.
/// `stop` ends the run after the send under way is acknowledged; the
/// result then says where each partition goes on.
pub async fn replay(
    k: &KafkaConfig,
    bootstrap: &str,
    selection: &Selection,
    stop: &CancellationToken,
) -> Result<Replayed, ReplayError> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(READ_AHEAD);
    let reading = tokio::task::spawn_blocking({
        let (k, bootstrap) = (k.clone(), bootstrap.to_string());
        let (partition, from) = (selection.partition, selection.from_offset);
        move || read(&k, &bootstrap, partition, from, &tx)
    });
    let sent = send_all(k, bootstrap, selection, &mut rx, stop).await;
    // Closed, the channel stops the reader at its next record or poll.
    drop(rx);
    let read = reading.await;
    // A send's failure stopped the reader; otherwise the reader's error is
    // why the records stopped coming.
    let (out, next) = sent?;
    match read.map_err(|e| ReplayError::Reader(e.to_string()))? {
        // Once the ranges are read, dead letters may have been put back:
        // the error says how many and where to go on.
        Err(ReplayError::Read { topic, source }) if !out.ranges.is_empty() => {
            Err(ReplayError::ReadFailed(Box::new(ReadFailed {
                topic,
                sent: out.sent.values().sum(),
                dry_run: selection.dry_run,
                source,
                go_on: left(&next, &out.ranges),
            })))
        }
        Err(e) => Err(e),
        Ok(()) => Ok(out),
    }
}

/// Per partition, the first offset not handled yet.
type Next = BTreeMap<i32, i64>;

/// Puts back what the reader hands over, each send acknowledged before the
/// next record is taken; ends with the channel (read through, or the
/// reader's error, which [`replay`] reports) or a send's failure. Returns
/// also, per partition, the first offset not handled.
async fn send_all(
    k: &KafkaConfig,
    bootstrap: &str,
    selection: &Selection,
    rx: &mut tokio::sync::mpsc::Receiver<Read>,
    stop: &CancellationToken,
) -> Result<(Replayed, Next), ReplayError> {
    let mut out = Replayed::default();
    let Some(Read::Ranges(ranges)) = rx.recv().await else {
        return Ok((out, Next::new()));
    };
    out.ranges = ranges;
    // A range starts at the oldest record kept when the offset asked for
    // is older: what lies between was deleted, and is said.
    if let Some(asked) = selection.from_offset {
        out.gone = out
            .ranges
            .iter()
            .filter(|(_, (first, _))| asked < *first)
            .map(|(p, (first, _))| (*p, (asked, *first)))
            .collect();
    }
    let producer = (!selection.dry_run)
        .then(|| producer_config(k, bootstrap).create_with_context(LogContext::loud()))
        .transpose()
        .map_err(ReplayError::Client)?;
    let mut sent_total = 0u64;
    // Dead letters that name no input position are each put back: two of
    // them cannot be told to be of one record.
    let mut put_back = PutBack::new(REMEMBERED_INPUTS);
    let mut next: Next = out
        .ranges
        .iter()
        .map(|(p, (from, _))| (*p, *from))
        .collect();
    loop {
        let read = tokio::select! {
            biased;
            _ = stop.cancelled() => {
                out.left = left(&next, &out.ranges);
                out.stopped = !out.left.is_empty();
                break;
            }
            read = rx.recv() => read,
        };
        let Some(Read::Record {
            partition,
            offset,
            restored,
        }) = read
        else {
            break;
        };
        match restored {
            Err(NotRestored::NotADeadLetter) => out.foreign += 1,
            Err(NotRestored::Summary) => out.summaries += 1,
            Ok(r) if !selection.kinds.contains(&r.kind) => out.other_kinds += 1,
            // Put on this input topic, a record read from another would
            // be judged by a pipeline it never came from.
            Ok(Restored {
                input_topic: Some(topic),
                ..
            }) if topic
                != *selection
                    .from_input_topic
                    .as_ref()
                    .unwrap_or(&k.topics.input) =>
            {
                out.other_input += 1;
                if !out.other_inputs.contains(&topic) {
                    if out.other_inputs.len() < OTHER_INPUTS_NAMED {
                        out.other_inputs.push(topic);
                    } else {
                        out.other_inputs_more = true;
                    }
                }
            }
            // Read from the input topic put back (the arm above), so its
            // partition and offset name the record.
            Ok(Restored {
                input_position: Some(input),
                ..
            }) if put_back.contains(input) => out.duplicates += 1,
            Ok(r) => {
                if let Some(producer) = &producer
                    && let Err(source) = send(producer, &k.topics.input, &r).await
                {
                    next.insert(partition, offset);
                    let go_on = left(&next, &out.ranges);
                    return Err(ReplayError::Send(Box::new(SendFailed {
                        topic: k.topics.input.clone(),
                        sent: sent_total,
                        partition,
                        offset,
                        source,
                        go_on,
                    })));
                }
                sent_total += 1;
                *out.sent.entry(r.kind.as_str()).or_default() += 1;
                if let Some(input) = r.input_position {
                    put_back.insert(input);
                }
            }
        }
        next.insert(partition, offset + 1);
    }
    out.forgot_inputs = put_back.forgot;
    Ok((out, next))
}

/// The settings of the producer that puts dead letters back: the one of
/// `produce`, without waiting to batch, since each record is sent alone
/// once the one before it is acknowledged (a wait for more records would
/// be paid by every record, and no record would come).
fn producer_config(k: &KafkaConfig, bootstrap: &str) -> rdkafka::ClientConfig {
    super::produce::producer_config(k, bootstrap, Duration::ZERO)
}

/// Every partition whose first offset not handled (`next`) is short of
/// the end of its range, with that offset.
fn left(next: &BTreeMap<i32, i64>, ranges: &BTreeMap<i32, (i64, i64)>) -> Vec<(i32, i64)> {
    next.iter()
        .filter(|(p, o)| ranges.get(p).is_some_and(|(_, end)| *o < end))
        .map(|(p, o)| (*p, *o))
        .collect()
}

/// Reads the dead-letter topic (see [`super::range_read`]) into `tx`, the
/// ranges first; stops early when `tx` is closed.
fn read(
    k: &KafkaConfig,
    bootstrap: &str,
    partition: Option<i32>,
    from: Option<i64>,
    tx: &tokio::sync::mpsc::Sender<Read>,
) -> Result<(), ReplayError> {
    let topic = &k.topics.dead_letter;
    // Assigned partitions, no commits: the group id only names the reader.
    let reader: BaseConsumer<LogContext> = super::client::reader(k, bootstrap)
        .set("group.id", "groundgate-replay")
        .create_with_context(LogContext::loud())
        .map_err(ReplayError::Client)?;
    let read_err = |source| ReplayError::Read {
        topic: topic.clone(),
        source,
    };
    let range = RangeRead::open(reader, topic, partition, from).map_err(|e| match e {
        RangeError::NoTopic(_) => ReplayError::NoTopic(
            topic.clone(),
            partition.map_or(String::new(), |p| format!(" {p}")),
        ),
        RangeError::NoPartition {
            partition,
            partitions,
            ..
        } => ReplayError::NoPartition {
            topic: topic.clone(),
            partition,
            partitions,
        },
        RangeError::Kafka(source) => read_err(source),
    })?;
    let ranges = range
        .spans()
        .iter()
        .map(|s| (s.partition, (s.from, s.end)))
        .collect();
    if tx.blocking_send(Read::Ranges(ranges)).is_err() {
        return Ok(());
    }
    let mut range = range.stop_when({
        let tx = tx.clone();
        move || tx.is_closed()
    });
    while let Some(msg) = range.next_record().map_err(read_err)? {
        let read = super::client::headers_of(&msg);
        let headers: Vec<(&str, Option<&[u8]>)> =
            read.iter().map(|(k, v)| (k.as_ref(), *v)).collect();
        let record = Read::Record {
            partition: msg.partition(),
            offset: msg.offset(),
            restored: restored(msg.key(), msg.payload(), &headers),
        };
        if tx.blocking_send(record).is_err() {
            break;
        }
    }
    Ok(())
}

/// Sends one restored record and waits for its acknowledgement.
async fn send(producer: &FutureProducer, topic: &str, r: &Restored) -> Result<(), KafkaError> {
    let mut headers = OwnedHeaders::new_with_capacity(r.headers.len());
    for (key, value) in &r.headers {
        headers = headers.insert(Header {
            key,
            value: value.as_deref(),
        });
    }
    let mut record: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic).headers(headers);
    if let Some(key) = &r.key {
        record = record.key(key);
    }
    if let Some(value) = &r.value {
        record = record.payload(value);
    }
    producer
        .send(
            record,
            rdkafka::util::Timeout::After(Duration::from_secs(60)),
        )
        .await
        .map(|_| ())
        .map_err(|(e, _)| e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::outputs::{H_ERROR_DETAIL, dead_letter_headers};

    #[test]
    fn a_dead_letter_becomes_the_record_it_was() {
        let original: [(&str, Option<&[u8]>); 3] = [
            ("traceparent", Some(b"00-aa-bb-01")),
            (H_ERROR_KIND, Some(b"schema")),
            ("tombstone-marker", None),
        ];
        let coordinates = vec![(H_INPUT_OFFSET.to_string(), Some(b"7".to_vec()))];
        let written =
            dead_letter_headers(&original, &coordinates, "internal", "it panicked", Some(5));
        let written: Vec<(&str, Option<&[u8]>)> = written
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        let r = restored(Some(b"k1"), Some(b"{\"answer\":1}"), &written).unwrap();
        assert_eq!(r.kind, DeadLetterKind::Internal);
        assert_eq!(r.key.as_deref(), Some(&b"k1"[..]));
        assert_eq!(r.value.as_deref(), Some(&b"{\"answer\":1}"[..]));
        let want: Vec<OutHeader> = original
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(<[u8]>::to_vec)))
            .collect();
        assert_eq!(
            r.headers, want,
            "the input's headers, its own groundgate.* one too"
        );
        assert!(!r.headers.iter().any(|(k, _)| k == H_ERROR_DETAIL));
    }

    /// An input header named as a renamed one (`original.groundgate.x`)
    /// is put back under its own name, not as `groundgate.x`, while a dead
    /// letter written with `groundgate.x` renamed `original.groundgate.x`
    /// gets `groundgate.x` back.
    #[test]
    fn an_input_header_named_original_groundgate_keeps_its_name() {
        let original: [(&str, Option<&[u8]>); 3] = [
            ("original.groundgate.error.kind", Some(b"a")),
            ("groundgate.error.kind", Some(b"b")),
            ("original.original.groundgate.x", Some(b"c")),
        ];
        let written = dead_letter_headers(&original, &[], "schema", "d", None);
        let names: Vec<&str> = written[..3].iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "original.original.groundgate.error.kind",
                "original.groundgate.error.kind",
                "original.original.original.groundgate.x",
            ]
        );
        let written: Vec<(&str, Option<&[u8]>)> = written
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        let r = restored(None, None, &written).unwrap();
        let names: Vec<&str> = r.headers.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "original.groundgate.error.kind",
                "groundgate.error.kind",
                "original.original.groundgate.x",
            ]
        );
    }

    mod header_names {
        use super::*;
        use proptest::prelude::*;

        /// A header name made of `original.`, `groundgate.` and other text,
        /// in any order.
        fn name() -> impl Strategy<Value = String> {
            let piece = prop_oneof![
                Just("original.".to_string()),
                Just("groundgate.".to_string()),
                Just("original".to_string()),
                Just("groundgate".to_string()),
                Just(".".to_string()),
                "[a-zA-Z0-9._-]{0,6}",
                ".{0,4}",
            ];
            prop::collection::vec(piece, 0..6).prop_map(|p| p.concat())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            /// Replay gives back every input header as it was, in order,
            /// and none of the dead letter's headers that the producer
            /// named is named as one of groundgate's.
            #[test]
            fn dead_letter_headers_round_trip_through_replay(
                input in prop::collection::vec(
                    (name(), proptest::option::of(prop::collection::vec(any::<u8>(), 0..4))),
                    0..8,
                ),
            ) {
                let original: Vec<(&str, Option<&[u8]>)> = input
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_deref()))
                    .collect();
                let coordinates = vec![(H_INPUT_OFFSET.to_string(), Some(b"7".to_vec()))];
                let written =
                    dead_letter_headers(&original, &coordinates, "schema", "d", Some(1));
                for (k, _) in &written[..input.len()] {
                    prop_assert!(!k.starts_with("groundgate."), "{k:?} in {written:?}");
                }
                let written: Vec<(&str, Option<&[u8]>)> = written
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_deref()))
                    .collect();
                let r = restored(None, None, &written).unwrap();
                prop_assert_eq!(r.headers, input);
            }
        }
    }

    /// An embedded broker holding, on the dead-letter topic, `schema` dead
    /// letters, then a `too_large` one and a record groundgate did not
    /// write; and the configuration pointed at it.
    fn dead_letters(schema: usize) -> (crate::kafka::embedded::EmbeddedBroker, KafkaConfig) {
        let kinds = std::iter::repeat_n(Some("schema"), schema).chain([Some("too_large"), None]);
        holding(1, kinds.map(|kind| (None, kind)))
    }

    /// An embedded broker whose dead-letter topic has `partitions`
    /// partitions and holds `records`, in order: each on its partition (or
    /// where the producer puts it) and of its dead-letter kind (`None`: a
    /// record groundgate did not write); and the configuration pointed at it.
    fn holding(
        partitions: i32,
        records: impl IntoIterator<Item = (Option<i32>, Option<&'static str>)>,
    ) -> (crate::kafka::embedded::EmbeddedBroker, KafkaConfig) {
        let records = records.into_iter().map(|(partition, kind)| {
            let header = match kind {
                Some(kind) => (H_ERROR_KIND, kind),
                None => ("x-tenant", "bank-1"),
            };
            (partition, vec![header])
        });
        holding_headers(partitions, records)
    }

    /// [`holding`], each record with its own headers.
    fn holding_headers(
        partitions: i32,
        records: impl IntoIterator<Item = (Option<i32>, Vec<(&'static str, &'static str)>)>,
    ) -> (crate::kafka::embedded::EmbeddedBroker, KafkaConfig) {
        use rdkafka::ClientConfig;
        use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
        let topics = crate::config::Topics::default();
        let broker = crate::kafka::embedded::EmbeddedBroker::start(
            partitions,
            &[&topics.dead_letter, &topics.input],
        )
        .unwrap();
        let producer: BaseProducer = ClientConfig::new()
            .set("bootstrap.servers", broker.bootstrap())
            .create()
            .unwrap();
        for (partition, headers) in records {
            let headers = headers
                .into_iter()
                .fold(OwnedHeaders::new(), |h, (key, value)| {
                    h.insert(Header {
                        key,
                        value: Some(value),
                    })
                });
            let mut record = BaseRecord::<[u8], [u8]>::to(&topics.dead_letter)
                .payload(&b"{}"[..])
                .headers(headers);
            if let Some(p) = partition {
                record = record.partition(p);
            }
            producer.send(record).unwrap();
        }
        producer.flush(Duration::from_secs(10)).unwrap();
        let mut raw = crate::config::RawConfig::default();
        raw.kafka.brokers = Some(broker.bootstrap());
        (broker, raw.validate().unwrap().kafka)
    }

    fn schema_only(dry_run: bool) -> Selection {
        Selection {
            kinds: vec![DeadLetterKind::Schema],
            partition: None,
            from_offset: None,
            dry_run,
            from_input_topic: None,
        }
    }

    /// On a runtime of one thread, every connection to the broker goes
    /// through a relay that is a task of that runtime: the replay ends
    /// only if its blocking reads leave the thread to the relay.
    #[test]
    fn replay_leaves_the_runtime_to_other_tasks() {
        let (broker, k) = dead_letters(2);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let done = runtime
            .block_on(async {
                let relay = broker.forward_from(0).await.unwrap();
                replay(&k, &relay, &schema_only(false), &CancellationToken::new()).await
            })
            .unwrap();
        assert_eq!(done.ranges, BTreeMap::from([(0, (0, 4))]));
        assert_eq!(done.sent, BTreeMap::from([("schema", 2)]));
        assert_eq!((done.summaries, done.foreign), (1, 1));
    }

    /// A partition the dead-letter topic does not have is named with the
    /// partitions it has, before anything is read or sent.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_partition_the_topic_does_not_have_is_named_with_those_it_has() {
        let (broker, k) = holding(2, [(Some(0), Some("schema"))]);
        let run = Selection {
            partition: Some(5),
            ..schema_only(false)
        };
        let e = replay(&k, &broker.bootstrap(), &run, &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                ReplayError::NoPartition {
                    partition: 5,
                    partitions: 2,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "--partition 5: the dead-letter topic answers.dlq has 2 partitions, 0 and 1"
        );
    }

    /// A stop ends the replay before the next dead letter, saying where
    /// to go on from; the run from there puts back the rest, once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stop_says_where_to_go_on_from() {
        let (broker, k) = dead_letters(5);
        let stop = CancellationToken::new();
        stop.cancel();
        let done = replay(&k, &broker.bootstrap(), &schema_only(false), &stop)
            .await
            .unwrap();
        assert!(done.stopped);
        assert_eq!(done.left, [(0, 0)]);
        assert!(done.sent.is_empty(), "{done:?}");
        let run = Selection {
            partition: Some(0),
            from_offset: Some(0),
            ..schema_only(false)
        };
        let rest = replay(&k, &broker.bootstrap(), &run, &CancellationToken::new())
            .await
            .unwrap();
        assert!(!rest.stopped && rest.left.is_empty(), "{rest:?}");
        assert_eq!(rest.sent, BTreeMap::from([("schema", 5)]));
    }

    /// A refused send ends the replay with where to go on from, while the
    /// reader still had records to hand over.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_send_says_where_to_go_on_from() {
        use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
        let (broker, k) = dead_letters(40);
        broker.cluster().request_errors(
            RDKafkaApiKey::Produce,
            &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED; 8],
        );
        let e = replay(
            &k,
            &broker.bootstrap(),
            &schema_only(false),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(
                &e,
                ReplayError::Send(f) if (f.sent, f.partition, f.offset) == (0, 0, 0)
            ),
            "{e}"
        );
        assert!(
            e.to_string()
                .ends_with("go on with --partition 0 --from-offset 0"),
            "{e}"
        );
    }

    /// The partitions of the dead-letter topic are read together: when a
    /// send fails, others may have dead letters left too, and the error
    /// says where each goes on. The runs it names put back every dead
    /// letter not put back yet, once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_send_says_where_every_partition_goes_on() {
        use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
        let per_partition: u64 = 6;
        let (broker, k) = holding(
            3,
            (0..3).flat_map(|p| {
                std::iter::repeat_n((Some(p), Some("schema")), per_partition as usize)
            }),
        );
        // Each record is sent on its own: four go through, then one is refused.
        let mut errors = vec![RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR; 4];
        errors.extend([RDKafkaRespErr::RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED; 8]);
        broker
            .cluster()
            .request_errors(RDKafkaApiKey::Produce, &errors);
        let e = replay(
            &k,
            &broker.bootstrap(),
            &schema_only(false),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
        let ReplayError::Send(failed) = &e else {
            panic!("{e}");
        };
        let SendFailed { sent, go_on, .. } = &**failed;
        assert_eq!(*sent, 4, "{e}");
        // Five records handled of six a partition: at least two partitions
        // have some left, whichever were read first.
        assert!(go_on.len() >= 2, "{e}");
        for (p, o) in go_on {
            assert!(
                e.to_string()
                    .contains(&format!("--partition {p} --from-offset {o}")),
                "{e}"
            );
        }
        broker
            .cluster()
            .clear_request_errors(RDKafkaApiKey::Produce);
        let mut resumed = 0;
        for (p, o) in go_on {
            let run = Selection {
                partition: Some(*p),
                from_offset: Some(*o),
                ..schema_only(false)
            };
            let done = replay(&k, &broker.bootstrap(), &run, &CancellationToken::new())
                .await
                .unwrap();
            resumed += done.sent.values().sum::<u64>();
        }
        assert_eq!(sent + resumed, 3 * per_partition, "{e}");
    }

    /// Writes `n` `schema` dead letters of `bytes` bytes each to
    /// partition 0 of the dead-letter topic.
    fn write_dead_letters(bootstrap: &str, n: usize, bytes: usize) {
        use rdkafka::ClientConfig;
        use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
        let producer: BaseProducer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .create()
            .unwrap();
        let value = vec![b'x'; bytes];
        let topic = crate::config::Topics::default().dead_letter;
        for _ in 0..n {
            let headers = OwnedHeaders::new().insert(Header {
                key: H_ERROR_KIND,
                value: Some("schema"),
            });
            let record = BaseRecord::<[u8], [u8]>::to(&topic)
                .partition(0)
                .payload(&value)
                .headers(headers);
            producer.send(record).unwrap();
        }
        producer.flush(Duration::from_secs(10)).unwrap();
    }

    /// The high watermark of partition `partition` of `topic`.
    fn high_watermark(bootstrap: &str, topic: &str, partition: i32) -> i64 {
        let consumer: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .create()
            .unwrap();
        rdkafka::consumer::Consumer::fetch_watermarks(
            &consumer,
            topic,
            partition,
            Duration::from_secs(10),
        )
        .unwrap()
        .1
    }

    /// 100 KB dead letters put back while more are written: the
    /// embedded broker keeps 5 MB a partition, so the oldest are deleted
    /// (as a topic's retention deletes them) while the replay reads them.
    /// Returns the broker, the configuration and the replay's result.
    async fn replay_while_the_oldest_are_deleted() -> (
        crate::kafka::embedded::EmbeddedBroker,
        KafkaConfig,
        Result<Replayed, ReplayError>,
    ) {
        let topics = crate::config::Topics::default();
        let broker = crate::kafka::embedded::EmbeddedBroker::start_with_brokers(
            2,
            1,
            &[&topics.dead_letter, &topics.input],
        )
        .unwrap();
        // Every record put back takes 300 ms to be acknowledged: the
        // deletion below is done long before the replay gets near it.
        let cluster = broker.cluster();
        cluster
            .partition_leader(&topics.dead_letter, 0, Some(1))
            .unwrap();
        cluster.partition_leader(&topics.input, 0, Some(2)).unwrap();
        cluster
            .broker_round_trip_time(2, Duration::from_millis(300))
            .unwrap();
        let bs = broker.bootstrap();
        const BYTES: usize = 100_000;
        write_dead_letters(&bs, 40, BYTES);
        let mut raw = crate::config::RawConfig::default();
        raw.kafka.brokers = Some(bs.clone());
        let mut k = raw.validate().unwrap().kafka;
        // A record a fetch, and none fetched ahead: the reader's position
        // stays a few records ahead of what is put back.
        for (key, value) in [
            ("fetch.message.max.bytes", "1"),
            ("queued.min.messages", "1"),
            ("queued.max.messages.kbytes", "1"),
        ] {
            k.properties.insert(key.into(), value.into());
        }
        let run = tokio::spawn({
            let (k, bs) = (k.clone(), bs.clone());
            async move { replay(&k, &bs, &schema_only(false), &CancellationToken::new()).await }
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while high_watermark(&bs, &topics.input, 0) == 0 {
            assert!(std::time::Instant::now() < deadline, "nothing was put back");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // 40 more push the partition past 5 MB: the oldest go.
        write_dead_letters(&bs, 40, BYTES);
        // A replay that lost its place waits for its end for ever.
        let done = tokio::time::timeout(Duration::from_secs(120), run)
            .await
            .expect("the replay did not end")
            .unwrap();
        (broker, k, done)
    }

    /// The dead letters after the deleted ones are still there: a replay
    /// that lost its place does not pass them over as read.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dead_letters_deleted_under_the_reader_are_not_passed_over() {
        let (broker, _, done) = replay_while_the_oldest_are_deleted().await;
        let put_back = high_watermark(&broker.bootstrap(), "answers", 0);
        match done {
            Ok(done) => {
                panic!("the replay ended as read through, {put_back} of the 40 put back: {done:?}")
            }
            Err(e) => assert!(e.to_string().contains("deleted"), "{e}"),
        }
    }

    /// A read that fails part way says how many dead letters were put
    /// back and where to go on; the run from there puts back every one
    /// still on the topic that was not put back yet, once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_failure_says_what_was_put_back_and_where_to_go_on() {
        let (broker, k, done) = replay_while_the_oldest_are_deleted().await;
        let bs = broker.bootstrap();
        let put_back = high_watermark(&bs, &k.topics.input, 0);
        let e = done.unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains(&format!("after {put_back} dead letters were put back")),
            "{text}"
        );
        let go_on = format!("go on with --partition 0 --from-offset {put_back}");
        assert!(text.ends_with(&go_on), "{text}");
        let run = Selection {
            partition: Some(0),
            from_offset: Some(put_back),
            ..schema_only(false)
        };
        let rest = replay(&k, &bs, &run, &CancellationToken::new())
            .await
            .unwrap();
        let consumer: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &bs)
            .create()
            .unwrap();
        let (kept_from, _) = rdkafka::consumer::Consumer::fetch_watermarks(
            &consumer,
            &k.topics.dead_letter,
            0,
            Duration::from_secs(10),
        )
        .unwrap();
        assert!(kept_from > put_back, "none was deleted: {text}");
        // The 40 written during the first run are read this time.
        assert_eq!(
            rest.sent,
            BTreeMap::from([("schema", 80 - kept_from as u64)])
        );
    }

    /// A dead letter names the input topic its record was read from: one
    /// from another topic than the one replay writes to (a dead-letter
    /// topic shared by two deployments, or the wrong configuration given)
    /// is not sent to a pipeline it never came from.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dead_letter_of_another_input_topic_is_not_put_back() {
        use crate::kafka::outputs::H_INPUT_TOPIC;
        let inputs = ["answers", "answers-eu", "answers", "answers-eu"];
        let (broker, k) = holding_headers(
            1,
            inputs.map(|input| (None, vec![(H_INPUT_TOPIC, input), (H_ERROR_KIND, "schema")])),
        );
        let bs = broker.bootstrap();
        let done = replay(&k, &bs, &schema_only(false), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(done.sent, BTreeMap::from([("schema", 2)]), "{done:?}");
        assert_eq!(done.other_inputs, ["answers-eu"]);
        // Named, the other input topic's dead letters are the ones put
        // back (on the topic written to), and this one's are left.
        let renamed = Selection {
            from_input_topic: Some("answers-eu".into()),
            ..schema_only(false)
        };
        let done = replay(&k, &bs, &renamed, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(done.sent, BTreeMap::from([("schema", 2)]), "{done:?}");
        assert_eq!(done.other_inputs, ["answers"]);
    }

    /// A worker that restarts before committing judges a record again and
    /// writes a second dead letter of it, in the same dead-letter partition
    /// or another: the record is put back once. Dead letters that name no
    /// input position, or another input topic's, are not taken for
    /// duplicates.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_record_with_two_dead_letters_is_put_back_once() {
        /// Input topic, partition and offset.
        type Input = Option<(&'static str, &'static str, &'static str)>;
        // (dead-letter partition, kind, input record)
        let records: [(i32, &str, Input); 8] = [
            (0, "schema", Some(("answers", "0", "5"))),
            (1, "schema", Some(("answers", "0", "5"))),
            (0, "schema", Some(("answers", "0", "6"))),
            (0, "schema", Some(("answers", "1", "5"))),
            (1, "schema", Some(("answers-eu", "0", "5"))),
            (0, "schema", None),
            (0, "schema", None),
            (1, "internal", Some(("answers", "0", "6"))),
        ];
        let (broker, k) = holding_headers(
            2,
            records.map(|(partition, kind, input)| {
                let mut headers = vec![(H_ERROR_KIND, kind)];
                if let Some((topic, p, o)) = input {
                    headers.extend([
                        (H_INPUT_TOPIC, topic),
                        (H_INPUT_PARTITION, p),
                        (H_INPUT_OFFSET, o),
                    ]);
                }
                (Some(partition), headers)
            }),
        );
        let bs = broker.bootstrap();
        for dry_run in [true, false] {
            let done = replay(&k, &bs, &schema_only(dry_run), &CancellationToken::new())
                .await
                .unwrap();
            assert_eq!(done.sent, BTreeMap::from([("schema", 5)]), "{done:?}");
            assert_eq!(
                (done.duplicates, done.other_input, done.other_kinds),
                (1, 1, 1),
                "{done:?}"
            );
            assert!(!done.forgot_inputs);
        }
        let on_input: i64 = (0..2)
            .map(|p| high_watermark(&bs, &k.topics.input, p))
            .sum();
        assert_eq!(on_input, 5);
    }

    /// The latest input records put back are remembered, the oldest
    /// forgotten past the capacity.
    #[test]
    fn the_latest_input_records_put_back_are_remembered() {
        let mut put_back = PutBack::new(2);
        for input in [(0, 1), (0, 2), (0, 2)] {
            put_back.insert(input);
        }
        assert!(!put_back.forgot);
        put_back.insert((1, 1));
        assert!(put_back.forgot);
        assert!(!put_back.contains((0, 1)));
        assert!(put_back.contains((0, 2)) && put_back.contains((1, 1)));
        assert_eq!(put_back.order.len(), 2);
    }

    #[test]
    fn a_dead_letter_names_its_input_position_only_with_its_input_topic() {
        let full: [(&str, Option<&[u8]>); 4] = [
            (H_ERROR_KIND, Some(b"schema")),
            (H_INPUT_TOPIC, Some(b"answers")),
            (H_INPUT_PARTITION, Some(b"3")),
            (H_INPUT_OFFSET, Some(b"41")),
        ];
        let r = restored(None, None, &full).unwrap();
        assert_eq!(r.input_position, Some((3, 41)));
        for missing in 1..4 {
            let mut h = full.to_vec();
            h.remove(missing);
            assert_eq!(restored(None, None, &h).unwrap().input_position, None);
        }
        let mut h = full.to_vec();
        h[3].1 = Some(b"x");
        assert_eq!(restored(None, None, &h).unwrap().input_position, None);
    }

    /// One record is in flight at a time: a linger for a batch would delay
    /// every one of them and gather nothing. `-X linger.ms` still decides.
    #[test]
    fn dead_letters_are_sent_without_waiting_for_a_batch() {
        let mut raw = crate::config::RawConfig::default();
        raw.kafka.brokers = Some("127.0.0.1:9".into());
        let mut k = raw.validate().unwrap().kafka;
        assert_eq!(
            producer_config(&k, "127.0.0.1:9").get("linger.ms"),
            Some("0")
        );
        k.properties.insert("linger.ms".into(), "7".into());
        assert_eq!(
            producer_config(&k, "127.0.0.1:9").get("linger.ms"),
            Some("7")
        );
    }

    #[test]
    fn a_summary_or_a_foreign_record_is_not_put_back() {
        let too_large: [(&str, Option<&[u8]>); 1] = [(H_ERROR_KIND, Some(b"too_large"))];
        assert_eq!(
            restored(None, Some(b"{\"kind\":\"too_large\"}"), &too_large),
            Err(NotRestored::Summary)
        );
        for headers in [
            &[][..],
            &[(H_ERROR_KIND, Some(&b"made_up"[..]))][..],
            &[(H_ERROR_KIND, None)][..],
            &[("original.groundgate.error.kind", Some(&b"schema"[..]))][..],
        ] {
            assert_eq!(
                restored(None, Some(b"x"), headers),
                Err(NotRestored::NotADeadLetter),
                "{headers:?}"
            );
        }
    }
}
