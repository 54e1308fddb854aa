//! The stream worker against the embedded broker (librdkafka's mock
//! cluster): end to end, bad input, injected faults, rebalances and the
//! exactly-once transaction state machine. Every wait polls a condition
//! with a generous deadline; nothing asserts on timing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{
    BIN, OUTPUTS, committed, committed_with_metadata, coords, header, problem_kinds,
};
use groundgate::config::{Config, Guarantee, OutputSchemaIds, RawConfig};
use groundgate::http::Health;
use groundgate::kafka::embedded::EmbeddedBroker;
use groundgate::kafka::inspect;
use groundgate::kafka::outputs;
use groundgate::kafka::produce;
use groundgate::kafka::worker::{self, WorkerError, WorkerReport};
use groundgate::metrics::Metrics;
use rdkafka::message::OwnedMessage;
use rdkafka::mocking::MockCoordinator;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
use rdkafka::{ClientConfig, Message};
use serde_json::{Value, json};
use sha2::Digest as _;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(90);
const PARTITIONS: i32 = 4;

fn config(bootstrap: &str, group: &str, guarantee: Guarantee) -> Arc<Config> {
    let mut raw = RawConfig::from_toml_str(
        "max_record_bytes = 8192\nnon_citing_providers = [\"local-llama\"]\n[policy]\nforbidden_terms = [\"guaranteed return\"]\n[kafka]\ncommit_interval_ms = 100\ncommit_max_records = 50\ndrain_deadline_ms = 20000\n[audit]\nseal_every = 10\nseal_interval_ms = 200\n",
    )
    .unwrap();
    raw.kafka.brokers = Some(bootstrap.to_string());
    raw.kafka.group_id = Some(group.to_string());
    raw.kafka.transactional_id = Some(format!("{group}-txn"));
    raw.kafka.guarantee = Some(guarantee);
    Arc::new(raw.validate().unwrap())
}

struct Running {
    token: CancellationToken,
    handle: JoinHandle<Result<WorkerReport, WorkerError>>,
    _stop_on_drop: StopOnDrop,
}

impl Running {
    async fn stop(self) -> Result<WorkerReport, WorkerError> {
        self.token.cancel();
        self.handle.await.unwrap()
    }
}

/// How long an unwinding test waits for its worker to finish.
const STOP_WAIT: Duration = Duration::from_secs(60);

/// Stops the worker when a failing assertion unwinds past `stop`. The
/// worker must finish before the test's broker is dropped (right after it):
/// a worker still closing its consumer then waits for the broker forever,
/// and the runtime for the worker's blocking thread, so the test would hang
/// instead of failing.
struct StopOnDrop {
    token: CancellationToken,
    /// Disconnected once the worker's task has finished.
    finished: std::sync::mpsc::Receiver<()>,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.token.cancel();
        if std::thread::panicking() {
            let _ = self.finished.recv_timeout(STOP_WAIT);
        }
    }
}

fn start(cfg: &Arc<Config>, bootstrap: &str) -> Running {
    start_with(
        cfg,
        bootstrap,
        Arc::new(Metrics::new(&cfg.metrics).unwrap()),
    )
}

fn start_with(cfg: &Arc<Config>, bootstrap: &str, metrics: Arc<Metrics>) -> Running {
    start_watched(cfg, bootstrap, metrics, Arc::new(Health::default()))
}

fn start_watched(
    cfg: &Arc<Config>,
    bootstrap: &str,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
) -> Running {
    let token = CancellationToken::new();
    let (finishing, finished) = std::sync::mpsc::channel();
    let run = worker::run_worker(
        cfg.clone(),
        bootstrap.to_string(),
        metrics,
        health,
        token.clone(),
    );
    let handle = tokio::spawn(async move {
        let _finishing = finishing;
        run.await
    });
    Running {
        _stop_on_drop: StopOnDrop {
            token: token.clone(),
            finished,
        },
        token,
        handle,
    }
}

/// Produces raw records (value None = tombstone) with optional keys.
/// (key, value); a `None` value is a tombstone.
type RawRecord = (Option<Vec<u8>>, Option<Vec<u8>>);

fn produce_raw(bootstrap: &str, topic: &str, records: &[RawRecord]) {
    let p: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("message.max.bytes", "10000000")
        .create()
        .unwrap();
    for (key, value) in records {
        let mut r: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(topic);
        if let Some(k) = key {
            r = r.key(k.as_slice());
        }
        if let Some(v) = value {
            r = r.payload(v.as_slice());
        }
        p.send(r).map_err(|(e, _)| e).unwrap();
    }
    p.flush(Duration::from_secs(30)).unwrap();
}

/// A record to produce: key, value and headers.
type HeadedRecord = (String, Vec<u8>, Vec<(&'static str, Vec<u8>)>);

/// Records to the input topic, in order.
fn produce_with_headers(bootstrap: &str, records: &[HeadedRecord]) {
    use rdkafka::message::{Header, OwnedHeaders};
    let p: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    for (key, value, headers) in records {
        let mut owned = OwnedHeaders::new();
        for (name, v) in headers {
            owned = owned.insert(Header {
                key: name,
                value: Some(v.as_slice()),
            });
        }
        let r: BaseRecord<'_, [u8], [u8]> = BaseRecord::to("answers")
            .key(key.as_bytes())
            .payload(value.as_slice())
            .headers(owned);
        p.send(r).map_err(|(e, _)| e).unwrap();
    }
    p.flush(Duration::from_secs(30)).unwrap();
}

/// `n` records of the deterministic mixed sample stream to the input topic.
async fn produce_mixed(bootstrap: &str, n: u64, answer_bytes: usize) {
    let values = (0..n)
        .map(|i| groundgate::sample::mixed(i, answer_bytes))
        .collect();
    produce_values(bootstrap, "answers", values).await;
}

async fn produce_values(bootstrap: &str, topic: &str, values: Vec<Vec<u8>>) {
    let cfg = Config::default();
    let p = produce::producer(&cfg.kafka, bootstrap).unwrap();
    produce::send_all(&p, topic, values.into_iter().map(Ok), 0)
        .await
        .unwrap();
}

/// final, retry, audit rows, dlq — read until `audit_distinct` distinct
/// inputs have an audit row. The audit topic's seals are left out.
async fn read_outputs(bootstrap: &str, audit_distinct: usize) -> [Vec<OwnedMessage>; 4] {
    let b = bootstrap.to_string();
    let got = tokio::task::spawn_blocking(move || {
        inspect::read_until(&b, &OUTPUTS, WAIT, |got| {
            let rows: Vec<&OwnedMessage> = got[2].iter().filter(|m| !inspect::is_seal(m)).collect();
            // Terminal records live on other topics and partitions and may
            // be fetched later than their audit rows: wait for both.
            rows.iter()
                .map(|m| coords(m))
                .collect::<BTreeSet<_>>()
                .len()
                >= audit_distinct
                && got[0].len() + got[1].len() + got[3].len() >= rows.len()
        })
    })
    .await
    .unwrap()
    .unwrap();
    let mut it = got.into_iter();
    let (final_, retry, audit, dlq) = (
        it.next().unwrap(),
        it.next().unwrap(),
        it.next().unwrap(),
        it.next().unwrap(),
    );
    let rows = audit.into_iter().filter(|m| !inspect::is_seal(m)).collect();
    [final_, retry, rows, dlq]
}

/// `audit verify` of the audit topic through `bootstrap`, with `extra`.
async fn run_verify(bootstrap: &str, extra: &[&str]) -> std::process::Output {
    let b = bootstrap.to_string();
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(BIN)
            .args(["audit", "verify", "--brokers", &b])
            .args(["--topic", "answers.audit"])
            .args(extra)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// `groundgate audit verify --brokers ... --json [extra]` over the audit
/// topic: (exit code, report).
async fn verify_audit_topic(bootstrap: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let out = run_verify(bootstrap, &args).await;
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "audit verify --json: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    crate::schemas::assert_valid("verify-report", &report);
    (out.status.code().unwrap_or(-1), report)
}

/// Verifies the audit topic and expects it clean with every row sealed and
/// every input offset of `answers` up to `inputs` audited: returns the
/// chains' reports by input partition.
async fn assert_all_sealed(bootstrap: &str, inputs: u64) -> BTreeMap<i64, Value> {
    let (code, report) = verify_audit_topic(bootstrap, &[]).await;
    assert_eq!(report["problems"], json!([]), "{report:#}");
    assert_eq!(code, 0, "{report:#}");
    let mut chains = BTreeMap::new();
    let mut rows = 0;
    for c in report["chains"].as_array().unwrap() {
        assert_eq!(c["topic"], "answers", "{c}");
        assert_eq!(c["unsealed_tail"], 0, "every row sealed: {c}");
        let count = |k: &str| c[k].as_u64().unwrap();
        let (chain_rows, redelivered) = (count("rows"), count("redeliveries"));
        // A redelivery is sealed too when the partition's next owner
        // reseals it: it counts among both the sealed rows and the
        // redeliveries.
        assert!(
            chain_rows - count("sealed_rows") <= redelivered,
            "every row sealed or a redelivery of a sealed one: {c}"
        );
        assert_eq!(
            chain_rows - redelivered,
            count("last_offset") - count("first_offset") + 1,
            "each input offset once, apart from redeliveries: {c}"
        );
        assert!(c["gaps"].as_array().unwrap().is_empty(), "{c}");
        assert_eq!(c["first_offset"], 0, "{c}");
        rows += c["last_offset"].as_u64().unwrap() + 1;
        chains.insert(c["partition"].as_i64().unwrap(), c.clone());
    }
    assert_eq!(rows, inputs, "every input offset covered: {report:#}");
    chains
}

/// Seals read from the audit topic, by input partition, in seq order:
/// (seq, worker, first offset, last offset).
fn seals_by_partition(seals: &[OwnedMessage]) -> BTreeMap<i64, Vec<(u64, String, i64, i64)>> {
    let mut by: BTreeMap<i64, Vec<(u64, String, i64, i64)>> = BTreeMap::new();
    for m in seals {
        let v = json_of(m);
        crate::schemas::assert_valid("seal", &v);
        assert_eq!(v["type"], "groundgate.seal/v1", "{v}");
        assert_eq!(
            m.key().unwrap(),
            format!("answers/{}", v["chain"]["partition"]).as_bytes(),
            "keyed by chain"
        );
        by.entry(v["chain"]["partition"].as_i64().unwrap())
            .or_default()
            .push((
                v["seq"].as_u64().unwrap(),
                v["worker"].as_str().unwrap().to_string(),
                v["first_offset"].as_i64().unwrap(),
                v["last_offset"].as_i64().unwrap(),
            ));
    }
    for v in by.values_mut() {
        v.sort();
    }
    by
}

/// Reads the audit topic's seals once `want` of them are there.
async fn read_seals(bootstrap: &str, want: usize) -> Vec<OwnedMessage> {
    let b = bootstrap.to_string();
    let got = tokio::task::spawn_blocking(move || {
        inspect::read_until(&b, &["answers.audit"], WAIT, |got| {
            got[0].iter().filter(|m| inspect::is_seal(m)).count() >= want
        })
    })
    .await
    .unwrap()
    .unwrap();
    got.into_iter().flatten().filter(inspect::is_seal).collect()
}

/// How many seals `group`'s chains hold: the `next_seq` of the heads in its
/// committed offsets' metadata, summed (for chains that started at seq 0
/// and were never sealed again after a crash). Seals are published after
/// their rows, so reading until the rows are there does not wait for them.
async fn committed_seals(bootstrap: &str, group: &str) -> usize {
    let (b, g) = (bootstrap.to_string(), group.to_string());
    let committed =
        tokio::task::spawn_blocking(move || committed_with_metadata(&b, &g, PARTITIONS))
            .await
            .unwrap();
    committed
        .values()
        // (0, "") is a partition the group never committed: keyless input
        // records may all land on the other partitions (the producer
        // sticks to one partition a while), and a partition that received
        // no record has no chain, so no seal. A committed offset still
        // needs its head.
        .filter(|(offset, m)| *offset != 0 || !m.is_empty())
        .map(|(_, m)| {
            let next_seq = m
                .strip_prefix("gg-seal/v1:")
                .and_then(|r| r.split(':').next());
            next_seq
                .unwrap_or_else(|| panic!("no head: {m:?}"))
                .parse::<usize>()
                .unwrap()
        })
        .sum()
}

fn seals_published(m: &Metrics) -> u64 {
    crate::common::samples(&m.encode(), "groundgate_audit_seals_total")
        .values()
        .sum::<f64>() as u64
}

/// `/healthz` fails when the worker stops polling; what it reads is the
/// polls of the consume loop. With no time allowed between polls, health
/// turns "stalled" only once a first poll has been seen, so this waits for
/// the loop's polls to reach it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consume_loop_reports_its_polls_to_the_liveness_check() {
    let broker = broker();
    let bs = broker.bootstrap();
    let cfg = config(&bs, "g-alive", Guarantee::AtLeastOnce);
    let health = Arc::new(Health::watching_polls(Duration::ZERO));
    assert_eq!(health.stalled_for(), None, "stalled before any poll");
    let w = start_watched(
        &cfg,
        &bs,
        Arc::new(Metrics::new(&cfg.metrics).unwrap()),
        health.clone(),
    );
    let deadline = std::time::Instant::now() + WAIT;
    while health.stalled_for().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the worker's polls never reached its health"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    w.stop().await.unwrap();
    // Draining or stopped: not judged by its polls.
    assert_eq!(health.stalled_for(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workers_audit_trail_verifies_with_every_row_sealed() {
    let broker = broker();
    let bs = broker.bootstrap();
    // Mixed outcomes (accepted, rejected, retry) and undecodable records
    // (dead letters) on every partition.
    let mut records: Vec<RawRecord> = (0..80)
        .map(|i| (None, Some(groundgate::sample::mixed(i, 300))))
        .collect();
    for i in 0..12 {
        records.push((
            Some(format!("bad-{i}").into_bytes()),
            Some(b"not json".to_vec()),
        ));
    }
    let total = records.len() as i64;
    produce_raw(&bs, "answers", &records);
    let cfg = config(&bs, "g-sealed", Guarantee::AtLeastOnce);
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    let out = read_outputs(&bs, total as usize).await;
    assert_eq!(assert_pairs(&out).len(), total as usize);
    assert!(
        out[3].len() >= 12,
        "the undecodable records are dead letters"
    );
    // Offsets move only behind published seals, so all committed means
    // all sealed.
    assert_eq!(wait_committed(&bs, "g-sealed", total).await, total);
    w.stop().await.unwrap();

    let chains = assert_all_sealed(&bs, total as u64).await;
    assert_eq!(
        chains.len(),
        PARTITIONS as usize,
        "one chain per input partition"
    );
    let published = seals_published(&metrics);
    assert!(published > 0);
    let seals = seals_by_partition(&read_seals(&bs, published as usize).await);
    assert_eq!(
        seals.values().map(Vec::len).sum::<usize>() as u64,
        published,
        "groundgate_audit_seals_total counts the seals on the topic"
    );
    let text = metrics.encode();
    let stamp = crate::common::samples(&text, "groundgate_audit_last_seal_timestamp_seconds");
    assert!(stamp.values().all(|t| *t > 1.0e9), "{stamp:?}");
    assert_eq!(
        crate::common::samples(&text, "groundgate_audit_seal_failures_total")
            .values()
            .sum::<f64>(),
        0.0
    );
    // The committed offset of each partition carries the chain head after
    // its last seal, which covers the offset just before it.
    let b = bs.clone();
    let committed =
        tokio::task::spawn_blocking(move || committed_with_metadata(&b, "g-sealed", PARTITIONS))
            .await
            .unwrap();
    for (p, (offset, metadata)) in &committed {
        let chain = &seals[&i64::from(*p)];
        let (last_seq, _, _, last_offset) = chain.last().unwrap();
        assert_eq!(*offset, last_offset + 1, "partition {p}");
        assert!(
            metadata.starts_with(&format!("gg-seal/v1:{}:", last_seq + 1)),
            "partition {p}: {metadata:?}"
        );
        let seqs: Vec<u64> = chain.iter().map(|s| s.0).collect();
        assert_eq!(seqs, (0..chain.len() as u64).collect::<Vec<_>>());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_committed_without_a_seal_head_start_a_new_chain_there() {
    let broker = broker();
    let bs = broker.bootstrap();
    let cfg = config(&bs, "g-upgrade", Guarantee::AtLeastOnce);
    // A worker that did not seal (as before sealing existed) commits plain
    // offsets.
    produce_mixed(&bs, 40, 300).await;
    let token = CancellationToken::new();
    let unsealed = tokio::spawn(worker::run_worker_with(
        cfg.clone(),
        bs.clone(),
        Arc::new(Metrics::new(&cfg.metrics).unwrap()),
        Arc::new(Health::default()),
        token.clone(),
        worker::Step::ValidateUnsealed,
    ));
    let _stop = token.clone().drop_guard();
    assert_eq!(wait_committed(&bs, "g-upgrade", 40).await, 40);
    token.cancel();
    unsealed.await.unwrap().unwrap();
    let b = bs.clone();
    let before =
        tokio::task::spawn_blocking(move || committed_with_metadata(&b, "g-upgrade", PARTITIONS))
            .await
            .unwrap();
    assert!(before.values().all(|(_, m)| m.is_empty()), "{before:?}");

    produce_mixed(&bs, 40, 300).await;
    let w = start(&cfg, &bs);
    assert_eq!(wait_committed(&bs, "g-upgrade", 80).await, 80);
    w.stop().await.unwrap();
    let seals = read_seals(&bs, committed_seals(&bs, "g-upgrade").await).await;
    for (p, chain) in seals_by_partition(&seals) {
        let start = before[&(p as i32)].0;
        assert_eq!(chain[0].0, 0, "partition {p}: a new chain");
        assert_eq!(
            chain[0].2, start,
            "partition {p}: from the committed offset"
        );
    }
    // The rows before the new chains are not sealed: the whole topic does
    // not verify, the offsets from the upgrade on do.
    let (code, report) = verify_audit_topic(&bs, &[]).await;
    assert_eq!(code, 1, "{report:#}");
    let from = before.values().map(|(o, _)| *o).max().unwrap().to_string();
    let (code, report) = verify_audit_topic(&bs, &["--from", &from]).await;
    assert_eq!(code, 0, "{report:#}");
}

/// Mixed records `range`, each under its own key: keyed records spread
/// over every partition by the key's hash, so each partition receives
/// records of both halves of a test that hands partitions over between
/// two runs (keyless ones may all stick to one partition a run).
fn keyed_mixed(range: std::ops::Range<u64>) -> Vec<RawRecord> {
    range
        .map(|i| {
            let key = format!("answer-{i}").into_bytes();
            (Some(key), Some(groundgate::sample::mixed(i, 300)))
        })
        .collect()
}

/// An at-least-once worker of `group` under its own client id, writing
/// the outputs framed with `schema_ids` (none: plain).
fn named_worker(
    bootstrap: &str,
    group: &str,
    client: &str,
    schema_ids: OutputSchemaIds,
) -> Arc<Config> {
    let mut c = (*config(bootstrap, group, Guarantee::AtLeastOnce)).clone();
    c.kafka.client_id = client.to_string();
    c.kafka.output_schema_ids = schema_ids;
    Arc::new(c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_owner_of_a_partition_continues_its_audit_chain() {
    let broker = broker();
    let bs = broker.bootstrap();
    let with_client =
        |client: &str| named_worker(&bs, "g-chain", client, OutputSchemaIds::default());
    produce_raw(&bs, "answers", &keyed_mixed(0..60));
    let a = start(&with_client("worker-a"), &bs);
    assert_eq!(wait_committed(&bs, "g-chain", 60).await, 60);
    a.stop().await.unwrap();
    produce_raw(&bs, "answers", &keyed_mixed(60..120));
    let b = start(&with_client("worker-b"), &bs);
    assert_eq!(wait_committed(&bs, "g-chain", 120).await, 120);
    b.stop().await.unwrap();

    // Clean: the chains link across the two owners (a new chain at seq 0
    // would be a broken or missing seal).
    assert_all_sealed(&bs, 120).await;
    let seals = read_seals(&bs, committed_seals(&bs, "g-chain").await).await;
    let by = seals_by_partition(&seals);
    let mut handed_over = 0;
    for (p, chain) in &by {
        let workers: Vec<&str> = chain.iter().map(|s| s.1.as_str()).collect();
        let first_b = workers.iter().position(|w| *w == "worker-b");
        if let Some(i) = first_b.filter(|i| *i > 0) {
            handed_over += 1;
            assert!(
                workers[..i].iter().all(|w| *w == "worker-a"),
                "partition {p}: {workers:?}"
            );
            assert_eq!(chain[i].0, chain[i - 1].0 + 1, "seq continues: {chain:?}");
            assert_eq!(chain[i].2, chain[i - 1].3 + 1, "rows continue: {chain:?}");
        }
    }
    assert_eq!(
        handed_over, PARTITIONS,
        "every partition's chain goes from worker-a to worker-b: {by:?}"
    );
}

/// Schema ids for the final, retry and audit topics: 101, 102, 103.
const FRAMED: OutputSchemaIds = OutputSchemaIds {
    final_: Some(101),
    retry: Some(102),
    audit: Some(103),
};

/// One produce request refused as too large, as by a topic whose
/// max.message.bytes is below what the worker may send.
const REFUSED_ONCE_AS_TOO_LARGE: [RDKafkaRespErr; 1] =
    [RDKafkaRespErr::RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE; 1];

/// The JSON value behind the Schema Registry header of `m`, whose header
/// must name `schema_id`.
fn unframed_json(m: &OwnedMessage, schema_id: u32) -> Value {
    let value = m.payload().unwrap();
    assert_eq!(
        value[..5],
        [&[0u8][..], &schema_id.to_be_bytes()].concat()[..],
        "header of a value of {}: {:?}",
        m.topic(),
        String::from_utf8_lossy(&value[..value.len().min(40)])
    );
    serde_json::from_slice(&value[5..]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outputs_framed_for_the_schema_registry_carry_their_ids_and_the_chain_continues() {
    let broker = broker();
    let bs = broker.bootstrap();
    let framed = |client: &str| named_worker(&bs, "g-framed", client, FRAMED);
    // Mixed outcomes, and dead letters: one plain, one whose value starts
    // with byte 0x00 as a framed record's does (read plain, it is one).
    let framed_input = b"\x00\x00\x00\x00\x2anot json".to_vec();
    let mut records = keyed_mixed(0..60);
    records.push((Some(b"bad".to_vec()), Some(b"not json".to_vec())));
    records.push((Some(b"bad-framed".to_vec()), Some(framed_input.clone())));
    produce_raw(&bs, "answers", &records);
    let a = start(&framed("worker-a"), &bs);
    assert_eq!(wait_committed(&bs, "g-framed", 62).await, 62);
    a.stop().await.unwrap();
    let later = keyed_mixed(60..120);
    produce_raw(&bs, "answers", &later);
    let b = start(&framed("worker-b"), &bs);
    assert_eq!(wait_committed(&bs, "g-framed", 122).await, 122);
    b.stop().await.unwrap();

    let out = read_outputs(&bs, 122).await;
    assert_pairs(&out);
    for (m, id, schema) in out[0]
        .iter()
        .map(|m| (m, 101, "final"))
        .chain(out[1].iter().map(|m| (m, 102, "retry")))
        .chain(out[2].iter().map(|m| (m, 103, "audit-record")))
    {
        crate::schemas::assert_valid(schema, &unframed_json(m, id));
    }
    assert!(
        !out[0].is_empty() && !out[1].is_empty(),
        "finals and retries"
    );
    // Dead letters carry the records as received (or the bounded summary
    // of one too large), never a header of ours.
    let sent: BTreeSet<Vec<u8>> = records
        .iter()
        .chain(&later)
        .filter_map(|(_, v)| v.clone())
        .collect();
    for m in &out[3] {
        let value = m.payload().unwrap();
        let bounded = || serde_json::from_slice::<Value>(value).unwrap()["kind"] == "too_large";
        assert!(
            sent.contains(value) || bounded(),
            "{:?}",
            String::from_utf8_lossy(value)
        );
    }
    let dead: BTreeSet<&[u8]> = out[3].iter().map(|m| m.payload().unwrap()).collect();
    assert!(dead.contains(&framed_input[..]) && dead.contains(&b"not json"[..]));

    // The seals are framed as the rows, and every chain went on from
    // worker-a's last seal to worker-b's first.
    let seals = read_seals(&bs, committed_seals(&bs, "g-framed").await).await;
    let mut by: BTreeMap<i64, Vec<Value>> = BTreeMap::new();
    for m in &seals {
        let seal = unframed_json(m, 103);
        crate::schemas::assert_valid("audit-record", &seal);
        by.entry(seal["chain"]["partition"].as_i64().unwrap())
            .or_default()
            .push(seal);
    }
    let mut handed_over = 0;
    for (p, chain) in &mut by {
        chain.sort_by_key(|s| s["seq"].as_u64());
        let seqs: Vec<u64> = chain.iter().map(|s| s["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, (0..chain.len() as u64).collect::<Vec<_>>(), "{p}");
        let first_b = chain.iter().position(|s| s["worker"] == "worker-b");
        if let Some(i) = first_b.filter(|i| *i > 0) {
            handed_over += 1;
            assert_eq!(chain[i - 1]["worker"], "worker-a", "{p}");
            let last = chain[i - 1]["last_offset"].as_i64().unwrap();
            assert_eq!(chain[i]["first_offset"], last + 1, "{p}");
        }
    }
    assert_eq!(
        handed_over, PARTITIONS,
        "every partition's chain goes from worker-a to worker-b"
    );
    // audit verify reads the framed trail with no setting, and every row
    // is sealed: the seals hashed the rows' JSON text.
    assert_all_sealed(&bs, 122).await;
}

fn json_of(m: &OwnedMessage) -> Value {
    serde_json::from_slice(m.payload().unwrap()).unwrap()
}

/// A broker holding `n` mixed input records, whose next produce requests
/// fail with `errors`, in order, and the configuration of an at-least-once
/// worker of `group` for it, with one produce request in flight
/// ([`one_request_in_flight`]).
async fn inputs_then_failing_produces(
    n: u64,
    errors: &[RDKafkaRespErr],
    group: &str,
) -> (EmbeddedBroker, String, Arc<Config>) {
    let broker = broker();
    let bs = broker.bootstrap();
    produce_mixed(&bs, n, 300).await;
    broker
        .cluster()
        .request_errors(RDKafkaApiKey::Produce, errors);
    let cfg = one_request_in_flight(&config(&bs, group, Guarantee::AtLeastOnce));
    (broker, bs, cfg)
}

/// `cfg` with at most one produce request in flight per broker connection,
/// for tests that make the embedded broker refuse produce requests. The
/// embedded broker checks the sequence numbers of transactional producers
/// only: when it refuses a batch of an idempotent producer while the next
/// batch of the same partition is already in flight, it appends that next
/// batch, and librdkafka, seeing a later sequence acknowledged, reports the
/// refused batch delivered too. A real broker refuses the later batch as
/// out of sequence, and both are sent again. With one request in flight
/// there is no next batch in flight, so a record such a test finds missing
/// is the worker's doing. Both halves are checked by
/// `the_embedded_broker_loses_a_refused_batch_unless_one_request_is_in_flight`.
fn one_request_in_flight(cfg: &Config) -> Arc<Config> {
    let mut cfg = cfg.clone();
    cfg.kafka
        .properties
        .insert("max.in.flight.requests.per.connection".into(), "1".into());
    Arc::new(cfg)
}

/// Waits until every one of `n` inputs has its terminal record and audit
/// row (one pair each, duplicates in pairs) and its offset committed by
/// `group`. A failure names each input without its outputs and whether its
/// offset was committed (the output lost behind a committed offset) or not
/// (`worker` stalled, or stopped, before it).
async fn all_delivered(
    bootstrap: &str,
    group: &str,
    n: u64,
    worker: &Running,
) -> [Vec<OwnedMessage>; 4] {
    let mut out = read_outputs(bootstrap, n as usize).await;
    let b = bootstrap.to_string();
    let ends = tokio::task::spawn_blocking(move || input_ends(&b))
        .await
        .unwrap();
    // Outputs missing at the read deadline will not come: wait for the
    // commits only when every output is there. A record redelivered after
    // a rebalance may have had its audit row read and not yet its terminal
    // record: once every offset is committed, each output of a record
    // processed so far is written, so they are read again for the pairs.
    if undelivered(&out, &ends, &BTreeMap::new()).is_empty() {
        wait_committed(bootstrap, group, n as i64).await;
        out = read_outputs(bootstrap, n as usize).await;
    }
    let committed = committed_offsets(bootstrap, group).await;
    let missing = undelivered(&out, &ends, &committed);
    let total: i64 = committed.values().sum();
    let worker = if worker.handle.is_finished() {
        "has stopped"
    } else {
        "is still running"
    };
    assert!(
        missing.is_empty() && total == n as i64,
        "{} of {n} inputs without their outputs, {total} offsets committed \
         (next offset per partition {committed:?}, input ends {ends:?}), \
         the worker {worker}:\n{}",
        missing.len(),
        missing.join("\n")
    );
    assert_eq!(
        assert_pairs(&out).len(),
        n as usize,
        "one terminal record and one audit row per input"
    );
    out
}

/// The end offset of each partition of the input topic `answers`.
fn input_ends(bootstrap: &str) -> BTreeMap<i32, i64> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    (0..PARTITIONS)
        .map(|p| {
            let (_, high) = c
                .fetch_watermarks("answers", p, Duration::from_secs(10))
                .unwrap();
            (p, high)
        })
        .collect()
}

/// Each input below `ends` that lacks its terminal record or its audit row
/// in `out`, said with whether `committed` (the next offset to read, per
/// partition) has moved past it.
fn undelivered(
    out: &[Vec<OwnedMessage>; 4],
    ends: &BTreeMap<i32, i64>,
    committed: &BTreeMap<i32, i64>,
) -> Vec<String> {
    let audited: BTreeSet<(i32, i64)> = out[2].iter().map(coords).collect();
    let terminal: BTreeSet<(i32, i64)> = out[0]
        .iter()
        .chain(&out[1])
        .chain(&out[3])
        .map(coords)
        .collect();
    let mut found = Vec::new();
    for (&p, &end) in ends {
        let next = committed.get(&p).copied().unwrap_or(0);
        for o in 0..end {
            let missing: Vec<&str> = [
                (!terminal.contains(&(p, o))).then_some("terminal record"),
                (!audited.contains(&(p, o))).then_some("audit row"),
            ]
            .into_iter()
            .flatten()
            .collect();
            if missing.is_empty() {
                continue;
            }
            let state = if o < next {
                "offset COMMITTED: the output was lost"
            } else {
                "offset not committed: the worker stalled or stopped"
            };
            found.push(format!(
                "answers/{p}@{o}: no {}; {state}",
                missing.join(", no ")
            ));
        }
    }
    found
}

/// Every input has at least one audit row and as many terminal records as
/// audit rows (duplicates come in pairs after a redelivery); returns the
/// distinct input coordinates seen.
fn assert_pairs(out: &[Vec<OwnedMessage>; 4]) -> BTreeSet<(i32, i64)> {
    let mut audits: BTreeMap<(i32, i64), usize> = BTreeMap::new();
    for m in &out[2] {
        *audits.entry(coords(m)).or_default() += 1;
    }
    let mut terminals: BTreeMap<(i32, i64), usize> = BTreeMap::new();
    for m in out[0].iter().chain(&out[1]).chain(&out[3]) {
        *terminals.entry(coords(m)).or_default() += 1;
    }
    assert_eq!(audits, terminals, "each audit row has its terminal record");
    audits.keys().copied().collect()
}

/// The committed offsets of `group` on the input topic, per partition.
async fn committed_offsets(bootstrap: &str, group: &str) -> BTreeMap<i32, i64> {
    let (b, g) = (bootstrap.to_string(), group.to_string());
    tokio::task::spawn_blocking(move || committed(&b, &g, PARTITIONS))
        .await
        .unwrap()
}

async fn wait_committed(bootstrap: &str, group: &str, want: i64) -> i64 {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let got = committed_offsets(bootstrap, group).await.values().sum();
        if got >= want || tokio::time::Instant::now() > deadline {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Worker logs go to the test output when `RUST_LOG` asks for them.
fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

fn broker() -> EmbeddedBroker {
    init_logs();
    EmbeddedBroker::start(
        PARTITIONS,
        &[
            "answers",
            "answers.final",
            "answers.retry",
            "answers.audit",
            "answers.dlq",
        ],
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_to_end_mixed_stream_and_retry_round_trip() {
    let broker = broker();
    let bs = broker.bootstrap();
    let n = 92u64;
    let values: Vec<Vec<u8>> = (0..n).map(|i| groundgate::sample::mixed(i, 400)).collect();
    produce_values(&bs, "answers", values.clone()).await;
    let cfg = config(&bs, "g-e2e", Guarantee::AtLeastOnce);
    let w = start(&cfg, &bs);
    let out = read_outputs(&bs, n as usize).await;
    let seen = assert_pairs(&out);
    assert_eq!(seen.len(), n as usize);
    assert_eq!(out[2].len(), n as usize, "no duplicates without faults");

    // Outcomes agree with the offline core, terminal records sit on the right topic with the right key.
    let mut expected: BTreeMap<&str, usize> = BTreeMap::new();
    for v in &values {
        let o = groundgate::core::process(
            Some(v),
            &groundgate::core::RecordMeta {
                topic: "answers",
                partition: 0,
                offset: 0,
            },
            0,
            &cfg.core,
        );
        *expected.entry(o.kind.as_str()).or_default() += 1;
    }
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for a in &out[2] {
        let v = json_of(a);
        *outcomes
            .entry(v["outcome"].as_str().unwrap().to_string())
            .or_default() += 1;
        if !v["request_id"].as_str().unwrap().is_empty() {
            assert_eq!(
                a.key().unwrap(),
                v["request_id"].as_str().unwrap().as_bytes()
            );
        }
        assert_eq!(
            header(a, outputs::H_INPUT_TOPIC).as_deref(),
            Some("answers")
        );
    }
    let outcomes: BTreeMap<&str, usize> = outcomes.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(outcomes, expected);
    assert_eq!(out[0].len(), expected["accepted"] + expected["rejected"]);
    assert_eq!(out[1].len(), expected["retry"]);
    assert_eq!(out[3].len(), expected["dead_letter"]);
    for f in &out[0] {
        let v = json_of(f);
        assert_eq!(
            f.key().unwrap(),
            v["request_id"].as_str().unwrap().as_bytes()
        );
    }

    // Close the loop: answer every retry request (half fixed, half still wrong).
    let mut follow_ups = Vec::new();
    let mut want_fixed = BTreeSet::new();
    for (i, r) in out[1].iter().enumerate() {
        let v = json_of(r);
        assert_eq!(v["attempt"], 1);
        let fixed = i % 2 == 0;
        let n_sources = v["sources"].as_array().unwrap().len();
        let answer = if fixed {
            "Corrected claim[^1].".to_string()
        } else {
            format!("Still wrong[^{}].", n_sources + 5)
        };
        let id = v["request_id"].as_str().unwrap().to_string();
        if fixed {
            want_fixed.insert(id.clone());
        }
        follow_ups.push(
            serde_json::to_vec(&json!({
                "request_id": id, "attempt": 1, "answer": answer, "sources": v["sources"],
                "provider": v["provider"], "model": v["model"], "mode": v["mode"], "prior": v["prior"],
                "provenance": "rag", "prompt_tokens": 10, "completion_tokens": 2, "cost_usd": 0.001
            }))
            .unwrap(),
        );
    }
    assert!(!follow_ups.is_empty());
    produce_values(&bs, "answers", follow_ups.clone()).await;
    let out2 = read_outputs(&bs, n as usize + follow_ups.len()).await;
    let finals: Vec<Value> = out2[0]
        .iter()
        .map(json_of)
        .filter(|v| v["retry_count"] == 1)
        .collect();
    let retried: Vec<&Value> = finals
        .iter()
        .filter(|v| {
            out[1]
                .iter()
                .any(|r| json_of(r)["request_id"] == v["request_id"])
        })
        .collect();
    assert_eq!(
        retried.len(),
        follow_ups.len(),
        "every follow-up is finalized, none retried again"
    );
    for v in retried {
        let fixed = want_fixed.contains(v["request_id"].as_str().unwrap());
        assert_eq!(v["validation"]["ok"], fixed, "{v}");
        assert!(
            v["prompt_tokens"].as_u64().unwrap() > 10,
            "usage summed with the first attempt"
        );
    }
    assert_eq!(out2[1].len(), out[1].len(), "no second retry request");

    let total = (n as usize + follow_ups.len()) as i64;
    assert_eq!(
        wait_committed(&bs, "g-e2e", total).await,
        total,
        "offsets committed to the end"
    );
    let report = w.stop().await.unwrap();
    assert_eq!(report.records, total as u64);
}

/// zstd is a common producer default upstream: records compressed with it
/// are consumed and judged, and the worker's own outputs can use it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zstd_compressed_input_is_consumed_and_judged() {
    let broker = broker();
    let bs = broker.bootstrap();
    let n = 40u64;
    let values: Vec<Vec<u8>> = (0..n).map(|i| groundgate::sample::mixed(i, 400)).collect();
    let mut upstream = Config::default();
    upstream
        .kafka
        .properties
        .insert("compression.type".into(), "zstd".into());
    let p = produce::producer(&upstream.kafka, &bs).unwrap();
    produce::send_all(&p, "answers", values.iter().cloned().map(Ok), 0)
        .await
        .unwrap();
    let mut cfg = (*config(&bs, "g-zstd", Guarantee::AtLeastOnce)).clone();
    cfg.kafka
        .properties
        .insert("compression.type".into(), "zstd".into());
    let cfg = Arc::new(cfg);
    let w = start(&cfg, &bs);
    let out = read_outputs(&bs, n as usize).await;
    let mut expected: BTreeMap<String, usize> = BTreeMap::new();
    for v in &values {
        let meta = groundgate::core::RecordMeta {
            topic: "answers",
            partition: 0,
            offset: 0,
        };
        let o = groundgate::core::process(Some(v), &meta, 0, &cfg.core);
        *expected.entry(o.kind.as_str().to_string()).or_default() += 1;
    }
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for a in &out[2] {
        let outcome = json_of(a)["outcome"].as_str().unwrap().to_string();
        *outcomes.entry(outcome).or_default() += 1;
    }
    assert_eq!(outcomes, expected);
    assert_eq!(out[2].len(), n as usize);
    w.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_goes_to_the_dead_letter_topic_untouched() {
    let broker = broker();
    let bs = broker.bootstrap();
    let big = format!(
        "{{\"request_id\":\"big\",\"answer\":\"{}\"}}",
        "x".repeat(9000)
    );
    let records: Vec<RawRecord> = vec![
        (
            Some(b"k-utf8".to_vec()),
            Some(b"{\"request_id\":\"u\",\"answer\":\"\xff\"}".to_vec()),
        ),
        (Some(b"k-json".to_vec()), Some(b"this is not json".to_vec())),
        (
            Some(b"k-missing".to_vec()),
            Some(br#"{"request_id":"m"}"#.to_vec()),
        ),
        (None, Some(big.clone().into_bytes())),
        (Some(b"k-empty".to_vec()), Some(Vec::new())),
        (Some(b"k-tomb".to_vec()), None),
        (
            Some(b"k-good".to_vec()),
            Some(groundgate::sample::record(
                1,
                groundgate::sample::Kind::Clean,
                200,
            )),
        ),
    ];
    produce_raw(&bs, "answers", &records);
    let cfg = config(&bs, "g-bad", Guarantee::AtLeastOnce);
    let w = start(&cfg, &bs);
    let out = read_outputs(&bs, records.len()).await;
    assert_pairs(&out);
    assert_eq!(out[3].len(), 6, "six dead letters");
    assert_eq!(out[0].len(), 1, "the good record still goes through");
    let mut kinds = BTreeMap::new();
    for d in &out[3] {
        let original = records
            .iter()
            .find(|(k, _)| k.as_deref() == d.key())
            .expect("dead letter keeps the original key");
        match &original.1 {
            // Too large: a bounded summary instead of the bytes.
            Some(v) if v.len() > 8192 => {
                let b = json_of(d);
                assert_eq!(b["kind"], "too_large");
                assert_eq!(b["length"], v.len());
                assert_eq!(b["sha256"].as_str().unwrap().len(), 64);
                assert!(d.payload().unwrap().len() < 2048);
            }
            Some(v) if !v.is_empty() => {
                assert_eq!(
                    d.payload().unwrap(),
                    v.as_slice(),
                    "original bytes untouched"
                )
            }
            _ => assert!(
                d.payload().is_none_or(<[u8]>::is_empty),
                "empty stays empty"
            ),
        }
        let kind = header(d, outputs::H_ERROR_KIND).unwrap();
        assert!(header(d, outputs::H_ERROR_DETAIL).is_some_and(|s| !s.is_empty()));
        assert!(header(d, outputs::H_INPUT_TIMESTAMP).is_some());
        kinds.insert(
            String::from_utf8_lossy(d.key().unwrap_or(b"")).into_owned(),
            kind,
        );
    }
    assert_eq!(kinds["k-utf8"], "invalid_utf8");
    assert_eq!(kinds["k-json"], "invalid_json");
    assert_eq!(kinds["k-missing"], "schema");
    assert_eq!(kinds[""], "too_large");
    assert_eq!(kinds["k-empty"], "invalid_json");
    assert_eq!(kinds["k-tomb"], "invalid_json");
    let audits: Vec<Value> = out[2].iter().map(json_of).collect();
    assert_eq!(
        audits
            .iter()
            .filter(|a| a["outcome"] == "dead_letter")
            .count(),
        6
    );
    w.stop().await.unwrap();
}

/// The W3C trace context of an input record continues on its final or
/// retry record and its audit row (the default `kafka.propagate_headers`);
/// other headers do not, and a dead letter keeps all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_context_of_an_input_continues_on_its_outputs() {
    let broker = broker();
    let bs = broker.bootstrap();
    let values = [
        groundgate::sample::record(1, groundgate::sample::Kind::Clean, 200),
        groundgate::sample::record(2, groundgate::sample::Kind::OutOfRange, 200),
        b"this is not json".to_vec(),
    ];
    let records: Vec<HeadedRecord> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let parent = format!("00-0af7651916cd43dd8448eb211c80319{i}-b7ad6b7169203331-01");
            let headers = vec![
                ("traceparent", parent.into_bytes()),
                ("x-tenant", b"bank-1".to_vec()),
            ];
            (format!("k{i}"), v.clone(), headers)
        })
        .collect();
    produce_with_headers(&bs, &records);
    let cfg = config(&bs, "g-trace", Guarantee::AtLeastOnce);
    let w = start(&cfg, &bs);
    let out = read_outputs(&bs, values.len()).await;
    assert_eq!(
        [out[0].len(), out[1].len(), out[3].len()],
        [1, 1, 1],
        "one final, one retry, one dead letter"
    );
    let trace = |m: &OwnedMessage| {
        let id = header(m, "traceparent").expect("traceparent carried");
        id.split('-').nth(1).unwrap().to_string()
    };
    // Each output carries the trace of its own input.
    let mut traces = BTreeMap::new();
    for m in out[0].iter().chain(&out[1]).chain(&out[3]) {
        traces.insert(coords(m), trace(m));
    }
    assert_eq!(
        traces.values().collect::<BTreeSet<_>>().len(),
        3,
        "{traces:?}"
    );
    for row in &out[2] {
        assert_eq!(traces[&coords(row)], trace(row), "the audit row's trace");
        assert_eq!(header(row, "x-tenant"), None);
    }
    for m in out[0].iter().chain(&out[1]) {
        assert_eq!(header(m, "x-tenant"), None, "only the listed headers");
    }
    assert_eq!(header(&out[3][0], "x-tenant").as_deref(), Some("bank-1"));
    w.stop().await.unwrap();
}

/// `groundgate replay` puts the dead letters of the chosen kinds back on
/// the input topic as they were received (key, value, the input's own
/// headers, a `groundgate.*` one under its own name again); a dry run sends
/// nothing; a `too_large` dead letter is never sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_puts_chosen_dead_letters_back_as_received() {
    use rdkafka::message::Headers;
    let broker = broker();
    let bs = broker.bootstrap();
    let big = format!("{{\"answer\":\"{}\"}}", "x".repeat(9000));
    let values: [(&str, Vec<u8>); 4] = [
        ("k-json", b"this is not json".to_vec()),
        ("k-schema", br#"{"request_id":"m"}"#.to_vec()),
        ("k-big", big.into_bytes()),
        (
            "k-good",
            groundgate::sample::record(1, groundgate::sample::Kind::Clean, 200),
        ),
    ];
    let records: Vec<HeadedRecord> = values
        .iter()
        .map(|(key, v)| {
            let headers = vec![
                ("x-tenant", b"bank-1".to_vec()),
                (outputs::H_ERROR_KIND, b"spoofed".to_vec()),
            ];
            (key.to_string(), v.clone(), headers)
        })
        .collect();
    produce_with_headers(&bs, &records);
    let cfg = config(&bs, "g-replay", Guarantee::AtLeastOnce);
    let w = start(&cfg, &bs);
    let out = read_outputs(&bs, values.len()).await;
    assert_eq!(out[3].len(), 3, "three dead letters");
    w.stop().await.unwrap();

    let replay = |extra: &[&str]| {
        let o = crate::common::bin()
            .args(["replay", "--brokers", &bs])
            .args(extra)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{text}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        text
    };
    let dry = replay(&["--kind", "schema", "--kind", "invalid_json", "--dry-run"]);
    assert!(
        dry.contains("would put back 2 dead letters on answers (invalid_json 1, schema 1)"),
        "{dry}"
    );
    assert!(dry.contains("1 too_large"), "{dry}");
    assert!(dry.contains("dry run: nothing was sent"), "{dry}");
    let sent = replay(&["--kind", "schema"]);
    assert!(
        sent.contains("put back 1 dead letter on answers (schema 1)"),
        "{sent}"
    );
    assert!(
        sent.contains("left where they are: 1 of kinds not chosen, 1 too_large"),
        "{sent}"
    );
    // The input topic now holds the four records and the one put back.
    let b = bs.clone();
    let got = tokio::task::spawn_blocking(move || {
        inspect::read_until(&b, &["answers"], WAIT, |got| got[0].len() > values.len())
    })
    .await
    .unwrap()
    .unwrap();
    // Put back exactly as received: the same key, value and headers (the
    // input's `groundgate.error.kind`, renamed on the dead letter, under
    // its own name again).
    let as_sent = |m: &OwnedMessage| {
        let headers: Vec<(String, Vec<u8>)> = m
            .headers()
            .map(|hs| {
                hs.iter()
                    .map(|h| (h.key.to_string(), h.value.unwrap_or_default().to_vec()))
                    .collect()
            })
            .unwrap_or_default();
        (m.payload().map(<[u8]>::to_vec), headers)
    };
    let schema: Vec<_> = got[0]
        .iter()
        .filter(|m| m.key() == Some(&b"k-schema"[..]))
        .map(as_sent)
        .collect();
    assert_eq!(schema.len(), 2, "the record and its replay");
    assert_eq!(schema[0], schema[1]);
    assert_eq!(schema[1].1.len(), 2, "{:?}", schema[1].1);
}

/// A topic written by a Schema Registry JSON Schema serializer while some
/// producers still write plain JSON: with `value_framing =
/// "schema-registry"` every record is judged as its JSON text would be,
/// each with one audit row, the trail verifies, and a record whose schema
/// id is not allowed is a dead letter that keeps the framed bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_registry_framed_and_plain_records_are_judged_alike() {
    use groundgate::sample::Kind;
    let broker = broker();
    let bs = broker.bootstrap();
    let kinds = [
        Kind::Clean,
        Kind::OutOfRange,
        Kind::ForbiddenTerm,
        Kind::Lenient,
        Kind::Malformed,
        Kind::LowConfidence,
        Kind::EmptyAnswer,
        Kind::CodeFence,
    ];
    let frame = |id: u32, json: &[u8]| [&[0u8][..], &id.to_be_bytes(), json].concat();
    let plain: Vec<Vec<u8>> = (0..48u64)
        .map(|i| groundgate::sample::record(i, kinds[i as usize % kinds.len()], 300))
        .collect();
    // Ids 42 and 200 (a byte that is not UTF-8) framed, every third plain.
    let mut values: Vec<Vec<u8>> = plain
        .iter()
        .enumerate()
        .map(|(i, v)| match i % 3 {
            0 => frame(42, v),
            1 => frame(200, v),
            _ => v.clone(),
        })
        .collect();
    let refused = frame(43, &plain[0]);
    values.push(refused.clone());
    let total = values.len();
    produce_values(&bs, "answers", values).await;

    let mut cfg = (*config(&bs, "g-framed", Guarantee::AtLeastOnce)).clone();
    let unframed = cfg.core.clone();
    cfg.core.value_framing = groundgate::core::ValueFraming::SchemaRegistry {
        schema_ids: Some(vec![42, 200]),
    };
    let cfg = Arc::new(cfg);
    let w = start(&cfg, &bs);
    let out = read_outputs(&bs, total).await;
    assert_eq!(assert_pairs(&out).len(), total);
    assert_eq!(out[2].len(), total, "one audit row per record");

    // Each final envelope and retry request is the one its plain JSON text gets.
    let meta = groundgate::core::RecordMeta {
        topic: "answers",
        partition: 0,
        offset: 0,
    };
    let mut want: BTreeMap<String, String> = BTreeMap::new();
    for v in &plain {
        let o = groundgate::core::process(Some(v), &meta, 0, &unframed);
        let bytes = match o.terminal {
            groundgate::core::Terminal::Final(b) | groundgate::core::Terminal::Retry(b) => b,
            other => panic!("{other:?}"),
        };
        want.insert(o.request_id.unwrap(), String::from_utf8(bytes).unwrap());
    }
    assert!(
        !out[0].is_empty() && !out[1].is_empty(),
        "finals and retries"
    );
    let mut got: BTreeMap<String, String> = BTreeMap::new();
    for m in out[0].iter().chain(&out[1]) {
        let key = String::from_utf8(m.key().unwrap().to_vec()).unwrap();
        got.insert(
            key,
            String::from_utf8_lossy(m.payload().unwrap()).into_owned(),
        );
    }
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "every record, framed or plain, has its final envelope or retry request"
    );
    assert_eq!(got, want);

    assert_eq!(out[3].len(), 1, "only the refused id is a dead letter");
    let d = &out[3][0];
    assert_eq!(
        d.payload().unwrap(),
        refused.as_slice(),
        "kept with its frame"
    );
    assert_eq!(header(d, outputs::H_ERROR_KIND).as_deref(), Some("schema"));
    assert_eq!(
        header(d, outputs::H_ERROR_DETAIL).as_deref(),
        Some("Schema Registry schema id 43 is not one of value_schema_ids = [42, 200]")
    );
    let row = out[2]
        .iter()
        .map(json_of)
        .find(|a| a["outcome"] == "dead_letter")
        .unwrap();
    assert_eq!(
        row["answer_hash"],
        hex::encode(sha2::Sha256::digest(&refused))
    );

    assert_eq!(
        wait_committed(&bs, "g-framed", total as i64).await,
        total as i64
    );
    w.stop().await.unwrap();
    assert_all_sealed(&bs, total as u64).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retriable_produce_errors_lose_nothing() {
    let n = 40;
    // Retriable errors: librdkafka and the worker retry them.
    let errors = [RDKafkaRespErr::RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS; 6]
        .iter()
        .chain(&[RDKafkaRespErr::RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT; 2])
        .copied()
        .collect::<Vec<_>>();
    let (_broker, bs, cfg) = inputs_then_failing_produces(n, &errors, "g-retriable").await;
    let w = start(&cfg, &bs);
    all_delivered(&bs, "g-retriable", n, &w).await;
    w.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_refused_as_too_large_is_dead_lettered_in_bounded_form() {
    let n = 6;
    // As from a topic whose max.message.bytes is below what the worker may
    // send. One refused request: the broker would refuse the next one
    // whatever it holds, and when that is the stand-in itself, the worker
    // stops (nothing smaller can take its place).
    let (_broker, bs, cfg) =
        inputs_then_failing_produces(n, &REFUSED_ONCE_AS_TOO_LARGE, "g-too-large").await;
    let w = start(&cfg, &bs);
    // Never retried forever: everything is committed.
    let out = all_delivered(&bs, "g-too-large", n, &w).await;
    // The refused outputs were replaced by their bounded stand-ins.
    let stand_ins: Vec<Value> = out[3]
        .iter()
        .filter(|d| header(d, outputs::H_ERROR_KIND).as_deref() == Some("too_large"))
        .map(json_of)
        .chain(
            out[2]
                .iter()
                .map(json_of)
                .filter(|a| a["errors"][0]["kind"] == "too_large"),
        )
        .collect();
    assert!(!stand_ins.is_empty(), "no output was refused: {out:?}");
    for s in &stand_ins {
        let text = s.to_string();
        assert!(text.contains("MSG_SIZE_TOO_LARGE"), "{text}");
        assert!(text.len() < 4096, "bounded: {text}");
    }
    assert_rows_agree(&out);
    assert!(!w.handle.is_finished(), "the worker must not stop");
    w.stop().await.unwrap();
    // The seals list the rows as delivered (stand-ins included).
    assert_all_sealed(&bs, n).await;
}

/// What `/metrics` says a worker wrote agrees with the output topics when
/// the broker refused a terminal record as too large: the record counts as
/// the too_large dead letter that replaced it, not as the outcome refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_record_refused_as_too_large_counts_as_its_dead_letter() {
    let n = 6;
    let group = "g-too-large-counted";
    let (_broker, bs, cfg) =
        inputs_then_failing_produces(n, &REFUSED_ONCE_AS_TOO_LARGE, group).await;
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    let out = all_delivered(&bs, group, n, &w).await;
    let too_large = out[3]
        .iter()
        .filter(|d| header(d, outputs::H_ERROR_KIND).as_deref() == Some("too_large"))
        .count() as f64;
    assert!(too_large >= 1.0, "no terminal record was refused: {out:?}");
    let m = metrics.encode();
    let sum = |name: &str, filter: &str| crate::common::sum_where(&m, name, filter);
    let outcome = |o: &str| sum("groundgate_records_total", &format!("outcome=\"{o}\""));
    let written = out.each_ref().map(|t| t.len() as f64);
    assert_eq!(outcome("accepted") + outcome("rejected"), written[0], "{m}");
    assert_eq!(outcome("retry"), written[1], "{m}");
    assert_eq!(outcome("dead_letter"), written[3], "{m}");
    assert_eq!(sum("groundgate_records_total", ""), n as f64, "{m}");
    assert_eq!(sum("groundgate_dead_letters_total", ""), written[3], "{m}");
    assert_eq!(
        sum("groundgate_dead_letters_total", "kind=\"too_large\""),
        too_large,
        "{m}"
    );
    w.stop().await.unwrap();
}

/// The same refusal with every topic framed: the stand-in dead letter is
/// plain, every audit row (a stand-in among them) carries its header, and
/// the seals hash the rows' JSON text, a row replaced on the way included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_framed_output_refused_as_too_large_is_replaced_and_sealed_by_its_json() {
    let n = 6;
    let group = "g-too-large-framed";
    let (_broker, bs, cfg) =
        inputs_then_failing_produces(n, &REFUSED_ONCE_AS_TOO_LARGE, group).await;
    let mut cfg = (*cfg).clone();
    cfg.kafka.output_schema_ids = FRAMED;
    let cfg = Arc::new(cfg);
    let w = start(&cfg, &bs);
    let out = all_delivered(&bs, group, n, &w).await;
    let refused = stand_ins(&out);
    assert!(!refused.is_empty(), "no output was refused: {out:?}");
    for m in &refused {
        if outputs_is_row(m) {
            unframed_json(m, 103);
        } else {
            assert_eq!(m.payload().unwrap()[0], b'{', "a dead letter is plain");
        }
    }
    for row in &out[2] {
        crate::schemas::assert_valid("audit-row", &unframed_json(row, 103));
    }
    w.stop().await.unwrap();
    assert_all_sealed(&bs, n).await;
}

/// A record whose terminal record was replaced by its too_large stand-in
/// has an audit row that says so (the last one, after a redelivery), not
/// the outcome of the terminal record that was refused.
fn assert_rows_agree(out: &[Vec<OwnedMessage>; 4]) {
    if let Some((at, row)) = rows_disagreeing(out).into_iter().next() {
        panic!("{at:?}: the last audit row is not the stand-in's dead letter: {row}");
    }
}

/// The stand-ins of terminal records whose last audit row (seals aside)
/// does not say `dead_letter` / `too_large`, with that row (`null` if none).
fn rows_disagreeing(out: &[Vec<OwnedMessage>]) -> Vec<((i32, i64), Value)> {
    stand_ins(out)
        .into_iter()
        .filter(|m| !outputs_is_row(m))
        .filter_map(|d| {
            let at = coords(d);
            let row = out[2]
                .iter()
                .filter(|r| !inspect::is_seal(r))
                .rfind(|r| coords(r) == at)
                .map(json_of)
                .unwrap_or(Value::Null);
            let agrees = row["outcome"] == "dead_letter" && row["errors"][0]["kind"] == "too_large";
            (!agrees).then_some((at, row))
        })
        .collect()
}

fn outputs_is_row(m: &OwnedMessage) -> bool {
    m.topic() == "answers.audit"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fatal_produce_error_stops_the_worker_without_committing_then_restart_delivers() {
    let n = 20;
    let (broker, bs, cfg) = inputs_then_failing_produces(
        n,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED; 50],
        "g-fatal",
    )
    .await;
    let w = start(&cfg, &bs);
    let err = tokio::time::timeout(WAIT, w.handle)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(!err.is_retriable(), "{err}");
    assert!(err.to_string().contains("not committed"), "{err}");
    let committed_after_failure = committed(&bs, "g-fatal", PARTITIONS).values().sum::<i64>();
    assert!(
        committed_after_failure < n as i64,
        "the failing records were not committed"
    );

    broker
        .cluster()
        .clear_request_errors(RDKafkaApiKey::Produce);
    let w = start(&cfg, &bs);
    all_delivered(&bs, "g-fatal", n, &w).await;
    w.stop().await.unwrap();
}

/// A record the brokers refuse as invalid (INVALID_RECORD: a broker's
/// schema validation, a record without a key on a compacted topic) is no
/// size problem: the worker stops as on any fatal refusal, and says and
/// counts it as fatal, never as too_large, which would send the operator
/// after the size limits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_refused_as_invalid_is_counted_and_reported_as_fatal() {
    let (_broker, bs, cfg) = inputs_then_failing_produces(
        10,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_INVALID_RECORD; 50],
        "g-invalid-record",
    )
    .await;
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    let err = tokio::time::timeout(WAIT, w.handle)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("(fatal)"), "{text}");
    assert!(!err.is_retriable(), "{text}");
    let errors = crate::common::samples(&metrics.encode(), "groundgate_publish_errors_total");
    assert_eq!(errors["class=\"too_large\""], 0.0, "{errors:?}");
    assert!(errors["class=\"fatal\""] >= 1.0, "{errors:?}");
}

/// Every output acknowledged and sealed, but the group coordinator refuses
/// every offset commit: the stop is not clean. The report says the final
/// commit failed (and `run` exits 3 on it), and the records stay
/// uncommitted for the next owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_commit_that_fails_leaves_the_stop_unfinished() {
    let n = 20;
    let broker = broker();
    let bs = broker.bootstrap();
    produce_mixed(&bs, n, 300).await;
    broker.cluster().request_errors(
        RDKafkaApiKey::OffsetCommit,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_OFFSET_METADATA_TOO_LARGE; 2000],
    );
    let group = "g-commit-refused";
    let cfg = config(&bs, group, Guarantee::AtLeastOnce);
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    read_outputs(&bs, n as usize).await;
    let report = w.stop().await.unwrap();
    assert_eq!(
        report.unfinished,
        worker::Unfinished {
            commit_failed: true,
            ..worker::Unfinished::default()
        },
        "{report:?}"
    );
    let refused =
        crate::common::samples(&metrics.encode(), "groundgate_offset_commit_errors_total");
    assert!(refused.values().sum::<f64>() >= 1.0, "{refused:?}");
    assert_eq!(committed_offsets(&bs, group).await.values().sum::<i64>(), 0);
}

/// The worker's periodic commits (and those after each seal) are not the
/// synchronous ones of a revocation or a stop: their failures are counted
/// and logged while the worker runs, not only once it stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn periodic_commits_that_fail_are_counted_while_the_worker_runs() {
    let n = 20;
    let broker = broker();
    let bs = broker.bootstrap();
    produce_mixed(&bs, n, 300).await;
    broker.cluster().request_errors(
        RDKafkaApiKey::OffsetCommit,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_OFFSET_METADATA_TOO_LARGE; 2000],
    );
    let group = "g-periodic-commit-refused";
    let cfg = config(&bs, group, Guarantee::AtLeastOnce);
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    read_outputs(&bs, n as usize).await;
    let refused = || {
        crate::common::samples(&metrics.encode(), "groundgate_offset_commit_errors_total")
            .values()
            .sum::<f64>()
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    while refused() < 1.0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        refused() >= 1.0,
        "no failed commit counted while running: {}",
        metrics.encode()
    );
    assert_eq!(committed_offsets(&bs, group).await.values().sum::<i64>(), 0);
    w.stop().await.unwrap();
}

/// A consumer error librdkafka calls fatal (here: fenced by another
/// member with its `group.instance.id`) leaves a consumer that never
/// consumes again: the worker stops with it, so a restart gets a new one,
/// rather than waiting, not ready, for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fatal_consumer_error_stops_the_worker() {
    let broker = broker();
    let bs = broker.bootstrap();
    broker.cluster().request_errors(
        RDKafkaApiKey::JoinGroup,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID],
    );
    let mut cfg = (*config(&bs, "g-fenced", Guarantee::AtLeastOnce)).clone();
    cfg.kafka.group_instance_id = Some("pod-0".into());
    let w = start(&Arc::new(cfg), &bs);
    let Running {
        handle,
        _stop_on_drop,
        ..
    } = w;
    let stopped = tokio::time::timeout(WAIT, handle)
        .await
        .expect("the worker stops on its own")
        .unwrap();
    let e = stopped.expect_err("stopped with an error");
    let text = e.to_string();
    for says in [
        "fatal error",
        "a restart creates a new consumer",
        "the same kafka.group_instance_id",
    ] {
        assert!(text.contains(says), "{says:?} in {text}");
    }
}

/// A producer may name a header with bytes that are not UTF-8 (the Java
/// client cannot, librdkafka and kcat can). Such a record is judged like
/// any other and the worker goes on: its dead letter carries the header
/// under the name with each invalid sequence replaced by U+FFFD. `audit
/// verify` reads such a record on the audit topic as it reads any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_name_that_is_not_utf8_is_no_poison_record() {
    use std::os::unix::ffi::OsStrExt;
    let test = "a_header_name_that_is_not_utf8_is_no_poison_record";
    if !crate::common::need_tool(test, "kcat", "kcat") {
        return;
    }
    let broker = broker();
    let bs = broker.bootstrap();
    let dir = tempfile::tempdir().unwrap();
    let value = dir.path().join("value");
    std::fs::write(&value, b"not json").unwrap();
    let mut cmd = std::process::Command::new("kcat");
    cmd.args(["-b", &bs, "-P", "-t", "answers", "-p", "0", "-H"])
        .arg(std::ffi::OsStr::from_bytes(b"x-\xffname=v"))
        .arg(&value);
    crate::common::succeeded(&mut cmd, "kcat -P");
    let group = "g-header-not-utf8";
    let cfg = config(&bs, group, Guarantee::AtLeastOnce);
    let w = start(&cfg, &bs);
    let out = read_outputs(&bs, 1).await;
    assert_eq!(out[3].len(), 1, "the dead letter: {out:?}");
    assert_eq!(
        header(&out[3][0], "x-\u{fffd}name").as_deref(),
        Some("v"),
        "{:?}",
        out[3][0]
    );
    assert_eq!(wait_committed(&bs, group, 1).await, 1);
    assert!(!w.handle.is_finished(), "the worker must not stop");
    w.stop().await.unwrap();
    assert_all_sealed(&bs, 1).await;
    // Such a record appended to the audit topic is a finding of `audit
    // verify`, not the end of it.
    let mut cmd = std::process::Command::new("kcat");
    cmd.args(["-b", &bs, "-P", "-t", "answers.audit", "-p", "0", "-H"])
        .arg(std::ffi::OsStr::from_bytes(b"\xff=v"))
        .arg(&value);
    crate::common::succeeded(&mut cmd, "kcat -P");
    let (code, report) = verify_audit_topic(&bs, &[]).await;
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(problem_kinds(&report), ["unreadable"], "{report:#}");
}

/// What `one_request_in_flight` is for, on the embedded broker: two
/// single-record batches ("a" then "b") of one partition are sent together
/// by the worker's producer, and the broker refuses the first once with a
/// retriable error. With several requests in flight it appends "b" and
/// librdkafka reports "a" delivered without "a" ever being written; with one
/// request in flight "a" is sent again and written before "b". Should the
/// first half ever fail, the embedded broker checks idempotent sequence
/// numbers and the fault-injection tests no longer need the setting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_broker_loses_a_refused_batch_unless_one_request_is_in_flight() {
    let mut cfg = Config::default();
    cfg.kafka
        .properties
        .insert("batch.num.messages".into(), "1".into());
    assert_eq!(
        refused_then_next(&cfg).await,
        ["b"],
        "the embedded broker no longer loses the refused batch: it may check \
         idempotent sequence numbers now"
    );
    assert_eq!(
        refused_then_next(&one_request_in_flight(&cfg)).await,
        ["a", "b"],
        "with one request in flight the refused batch is sent again"
    );
}

/// Sends "a" and "b" to `answers.final` partition 0 with `cfg`'s producer
/// settings, the first produce request refused with NOT_ENOUGH_REPLICAS;
/// both must be reported delivered. Returns the values the partition holds.
async fn refused_then_next(cfg: &Config) -> Vec<String> {
    use rdkafka::producer::FutureRecord;
    let broker = broker();
    let bs = broker.bootstrap();
    // Both records are queued while the broker is down, so the producer
    // builds their requests together once it is up.
    broker.broker_down(1).unwrap();
    broker.cluster().request_errors(
        RDKafkaApiKey::Produce,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS],
    );
    let p = produce::producer(&cfg.kafka, &bs).unwrap();
    let deliveries: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|v| {
            let r = FutureRecord::<(), str>::to("answers.final")
                .partition(0)
                .payload(v);
            p.send_result(r).map_err(|(e, _)| e).unwrap()
        })
        .collect();
    broker.cluster().broker_up(1).unwrap();
    for (v, d) in ["a", "b"].iter().zip(deliveries) {
        let r = tokio::time::timeout(WAIT, d).await.unwrap().unwrap();
        assert!(r.is_ok(), "{v}: {r:?}");
    }
    let b = bs.clone();
    let got = tokio::task::spawn_blocking(move || {
        inspect::read_until(&b, &["answers.final"], WAIT, |got| {
            got[0].iter().any(|m| m.payload() == Some(b"b"))
        })
    })
    .await
    .unwrap()
    .unwrap();
    got[0]
        .iter()
        .filter(|m| m.partition() == 0)
        .map(|m| String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_down_and_coordinator_moves_lose_nothing() {
    let broker = EmbeddedBroker::start_with_brokers(
        3,
        PARTITIONS,
        &[
            "answers",
            "answers.final",
            "answers.retry",
            "answers.audit",
            "answers.dlq",
        ],
    )
    .unwrap();
    let bs = broker.bootstrap();
    let n = 60;
    produce_mixed(&bs, n, 300).await;
    let w = start(&config(&bs, "g-down", Guarantee::AtLeastOnce), &bs);
    let first = read_outputs(&bs, 10).await;
    assert!(first[2].len() >= 10);
    broker
        .cluster()
        .coordinator(MockCoordinator::Group("g-down".into()), 2)
        .unwrap();
    broker.broker_down(3).unwrap();
    // The fault lasts a while; then the broker comes back.
    tokio::time::sleep(Duration::from_secs(2)).await;
    broker.cluster().broker_up(3).unwrap();
    broker
        .cluster()
        .coordinator(MockCoordinator::Group("g-down".into()), 1)
        .unwrap();
    all_delivered(&bs, "g-down", n, &w).await;
    w.stop().await.unwrap();
}

/// Audit partitions in the test of seals waiting for their rows: more than
/// the chains, so some hold rows and no seal.
const AUDIT_PARTITIONS: i32 = 16;

/// The audit partitions the seals of `answers`' chains land in (seals are
/// keyed `answers/<partition>`): found by producing those keys to a probe
/// topic of as many partitions with the producer's default partitioner,
/// the one the worker uses.
async fn seal_partitions(bootstrap: &str) -> BTreeSet<i32> {
    let p: rdkafka::producer::FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let mut got = BTreeSet::new();
    for chain in 0..PARTITIONS {
        let key = format!("answers/{chain}");
        let d = p
            .send(
                rdkafka::producer::FutureRecord::<_, [u8]>::to("probe").key(&key),
                Duration::from_secs(30),
            )
            .await
            .unwrap();
        got.insert(d.partition);
    }
    got
}

/// A seal goes out only once every row it lists is
/// acknowledged. The audit partitions that receive rows but no seal are led
/// by a broker that is down while the first worker runs, so their rows are
/// never acknowledged; everything else (the seals, the other rows, the
/// terminal records, the group) is on a broker that is up. A seal published
/// anyway would, after the crash-like loss of those rows, make verify report
/// them missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seal_is_published_only_after_every_row_it_lists_is_acknowledged() {
    init_logs();
    let broker = EmbeddedBroker::start_with_brokers(
        2,
        PARTITIONS,
        &["answers", "answers.final", "answers.retry", "answers.dlq"],
    )
    .unwrap();
    let cluster = broker.cluster();
    cluster
        .create_topic("answers.audit", AUDIT_PARTITIONS, 1)
        .unwrap();
    cluster.create_topic("probe", AUDIT_PARTITIONS, 1).unwrap();
    for t in ["answers", "answers.final", "answers.retry", "answers.dlq"] {
        for p in 0..PARTITIONS {
            cluster.partition_leader(t, p, Some(1)).unwrap();
        }
    }
    let bs = broker.bootstrap();
    let sealed_on = seal_partitions(&bs).await;
    let rows_only: Vec<i32> = (0..AUDIT_PARTITIONS)
        .filter(|p| !sealed_on.contains(p))
        .collect();
    for p in 0..AUDIT_PARTITIONS {
        let leader = if rows_only.contains(&p) { 2 } else { 1 };
        cluster
            .partition_leader("answers.audit", p, Some(leader))
            .unwrap();
    }
    let group = "g-seal-waits";
    cluster
        .coordinator(MockCoordinator::Group(group.into()), 1)
        .unwrap();
    let n = 60;
    produce_mixed(&bs, n, 300).await;
    broker.broker_down(2).unwrap();

    let mut cfg = (*config(&bs, group, Guarantee::AtLeastOnce)).clone();
    // The rows on broker 2 are never acknowledged: the shutdown drain ends
    // at its deadline.
    cfg.kafka.drain_deadline = Duration::from_secs(3);
    let cfg = Arc::new(cfg);
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    // Every record processed: its terminal record is on broker 1.
    let b = bs.clone();
    tokio::task::spawn_blocking(move || {
        inspect::read_until(
            &b,
            &["answers.final", "answers.retry", "answers.dlq"],
            WAIT,
            |got| {
                got.iter()
                    .flatten()
                    .map(coords)
                    .collect::<BTreeSet<_>>()
                    .len()
                    >= n as usize
            },
        )
    })
    .await
    .unwrap()
    .unwrap();
    // Shutdown cuts the last seals; the drain gives up on broker 2's rows,
    // and the report says their records were left unsettled.
    let report = w.stop().await.unwrap();
    assert!(report.unfinished.records > 0, "{report:?}");

    // Every seal published so far lists only rows that are on the topic
    // (all on broker 1: broker 2 has been down throughout).
    let published = seals_published(&metrics) as usize;
    let b = bs.clone();
    let audit = tokio::task::spawn_blocking(move || {
        let listed_rows_read = |got: &[Vec<OwnedMessage>]| {
            let (seals, rows): (Vec<&OwnedMessage>, Vec<&OwnedMessage>) =
                got[0].iter().partition(|m| inspect::is_seal(m));
            seals.len() >= published && unlisted(&seals, &rows).is_empty()
        };
        inspect::read_until(&b, &["answers.audit"], WAIT, listed_rows_read)
    })
    .await
    .unwrap()
    .unwrap();
    let (seals, rows): (Vec<&OwnedMessage>, Vec<&OwnedMessage>) =
        audit[0].iter().partition(|m| inspect::is_seal(m));
    let missing = unlisted(&seals, &rows);
    assert!(
        missing.is_empty(),
        "seals published before these rows they list were acknowledged: {missing:?}"
    );
    assert!(seals.len() >= published, "every published seal read");

    // Broker 2 back: the next worker reprocesses from the committed heads
    // and the whole trail verifies.
    cluster.broker_up(2).unwrap();
    let w = start(&cfg, &bs);
    assert_eq!(wait_committed(&bs, group, n as i64).await, n as i64);
    w.stop().await.unwrap();
    assert_all_sealed(&bs, n).await;
}

/// The rows (input partition, offset, sha256) that `seals` list and that
/// are not among `rows`.
fn unlisted(seals: &[&OwnedMessage], rows: &[&OwnedMessage]) -> Vec<(i64, i64, String)> {
    let have: BTreeSet<(i64, i64, String)> = rows
        .iter()
        .map(|m| {
            let (p, o) = coords(m);
            let h = sha2::Sha256::digest(m.payload().unwrap_or_default());
            (i64::from(p), o, hex::encode(h))
        })
        .collect();
    let mut missing = Vec::new();
    for s in seals {
        let v = json_of(s);
        let p = v["chain"]["partition"].as_i64().unwrap();
        for r in v["rows"].as_array().unwrap() {
            let row = (
                p,
                r[0].as_i64().unwrap(),
                r[1].as_str().unwrap().to_string(),
            );
            if !have.contains(&row) {
                missing.push(row);
            }
        }
    }
    missing
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_share_the_group_and_one_leaving_loses_nothing() {
    let broker = broker();
    let bs = broker.bootstrap();
    let n = 200;
    produce_mixed(&bs, n, 300).await;
    let cfg = config(&bs, "g-rebalance", Guarantee::AtLeastOnce);
    let a = start(&cfg, &bs);
    let b = start(&cfg, &bs);
    read_outputs(&bs, (n / 4) as usize).await;
    let report_b = b.stop().await.unwrap();
    // Nothing lost when a worker leaves.
    all_delivered(&bs, "g-rebalance", n, &a).await;
    let report_a = a.stop().await.unwrap();
    assert!(report_a.records + report_b.records >= n);
    // Partitions moved between the workers twice; their chains continued.
    assert_all_sealed(&bs, n).await;
}

/// The input partitions a worker exports a consumer lag for, and how many
/// it says it is assigned.
fn lag_partitions(metrics: &Metrics) -> (BTreeSet<String>, f64) {
    let text = metrics.encode();
    let lags = crate::common::samples(&text, "groundgate_consumer_lag_records");
    let assigned = crate::common::sum_where(&text, "groundgate_assigned_partitions", "");
    (lags.into_keys().collect(), assigned)
}

/// A partition handed to another worker in a rebalance is no longer this
/// worker's lag: each partition's lag is exported by its owner alone, so
/// the group's lag (what the alerts and the autoscaler add up) counts each
/// once, never a stale figure kept by a former owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_handed_over_leaves_the_former_owners_lag() {
    let broker = broker();
    let bs = broker.bootstrap();
    let n = 80;
    produce_mixed(&bs, n, 300).await;
    let mut cfg = (*config(&bs, "g-lag-handover", Guarantee::AtLeastOnce)).clone();
    cfg.metrics.statistics_interval = Duration::from_millis(100);
    let cfg = Arc::new(cfg);
    let (ma, mb) = (
        Arc::new(Metrics::new(&cfg.metrics).unwrap()),
        Arc::new(Metrics::new(&cfg.metrics).unwrap()),
    );
    let a = start_with(&cfg, &bs, ma.clone());
    all_delivered(&bs, "g-lag-handover", n, &a).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while lag_partitions(&ma).0.len() < PARTITIONS as usize {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            lag_partitions(&ma)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let b = start_with(&cfg, &bs, mb.clone());
    let deadline = tokio::time::Instant::now() + WAIT;
    let (lags_a, lags_b) = loop {
        let ((la, na), (lb, nb)) = (lag_partitions(&ma), lag_partitions(&mb));
        let split = na == 2.0 && nb == 2.0 && la.len() == 2 && lb.len() == 2;
        if split || tokio::time::Instant::now() > deadline {
            break (la, lb);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    b.stop().await.unwrap();
    a.stop().await.unwrap();
    assert_eq!(lags_a.len(), 2, "A's lag: {lags_a:?}, B's: {lags_b:?}");
    assert_eq!(lags_b.len(), 2, "A's lag: {lags_a:?}, B's: {lags_b:?}");
    assert!(lags_a.is_disjoint(&lags_b), "A: {lags_a:?}, B: {lags_b:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_commits_outputs_and_offsets_in_transactions() {
    let broker = broker();
    let bs = broker.bootstrap();
    let n = 120;
    produce_mixed(&bs, n, 300).await;
    // Framed audit records (the final and retry topics plain): the
    // transactions carry what the output builder made, as at-least-once does.
    let mut cfg = (*config(&bs, "g-eos", Guarantee::ExactlyOnce)).clone();
    cfg.kafka.output_schema_ids.audit = Some(103);
    let cfg = Arc::new(cfg);
    let w = start(&cfg, &bs);
    let out = read_outputs(&bs, n as usize).await;
    // The mock does not enforce read_committed nor store transactional
    // offsets, so this checks the state machine: batched transactions (never
    // one per record) that cover every input exactly once.
    assert_eq!(assert_pairs(&out).len(), n as usize);
    assert_eq!(out[2].len(), n as usize);
    for row in &out[2] {
        crate::schemas::assert_valid("audit-row", &unframed_json(row, 103));
    }
    for m in out[0].iter().chain(&out[1]) {
        assert_eq!(m.payload().unwrap()[0], b'{', "plain without an id");
    }
    let report = w.stop().await.unwrap();
    // The seals went with their rows into the transactions.
    assert_all_sealed(&bs, n).await;
    assert!(report.transactions_committed >= 2, "{report:?}");
    assert!(
        report.transactions_committed < n,
        "batched, not one transaction per record: {report:?}"
    );
    assert_eq!(report.records, n);
}

/// Outputs the brokers acknowledge slowly (6 s a produce request, well
/// within librdkafka's `request.timeout.ms` of 30 s, as a broker waiting
/// on a slow in-sync replica does) are no stalled delivery: the
/// transactions commit rather than being aborted and rewound, over and over,
/// for as long as the brokers stay slow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_commits_while_the_outputs_are_acknowledged_slowly() {
    init_logs();
    let group = "g-eos-slow";
    let broker = crate::common::outputs_on_broker_2(group);
    let cluster = broker.cluster();
    let bs = broker.bootstrap();
    let n = 6;
    produce_mixed(&bs, n, 300).await;
    cluster
        .broker_round_trip_time(2, Duration::from_secs(6))
        .unwrap();
    let cfg = config(&bs, group, Guarantee::ExactlyOnce);
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    let transactions = |result: &str| {
        crate::common::sum_where(
            &metrics.encode(),
            "groundgate_transactions_total",
            &format!("result=\"{result}\""),
        )
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    while transactions("committed") < 1.0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (committed, aborted) = (transactions("committed"), transactions("aborted"));
    assert!(
        committed >= 1.0 && aborted == 0.0,
        "{committed} transaction(s) committed, {aborted} aborted"
    );
    let report = w.stop().await.unwrap();
    assert_eq!(report.transactions_aborted, 0, "{report:?}");
}

/// Outputs acknowledged more slowly than `max.poll.interval.ms` (10 s a
/// request to their broker against 7 s) hold the at-least-once worker at
/// `max_in_flight` for longer than that: the consumer is still polled, its
/// partitions paused, so it stays in its group (no revocation, one
/// assignment; not polled, it was evicted and assigned again), and every
/// record is committed once the acknowledgements come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_waiting_for_slow_acknowledgements_stays_in_its_group() {
    let group = "g-slow-acks";
    let broker = crate::common::outputs_on_broker_2(group);
    let cluster = broker.cluster();
    let bs = broker.bootstrap();
    let n = 1;
    produce_mixed(&bs, n, 300).await;
    cluster
        .broker_round_trip_time(2, Duration::from_secs(10))
        .unwrap();
    let mut cfg = (*config(&bs, group, Guarantee::AtLeastOnce)).clone();
    cfg.kafka.max_in_flight = 1;
    cfg.kafka.session_timeout = Duration::from_millis(6000);
    cfg.kafka
        .properties
        .insert("max.poll.interval.ms".into(), "7000".into());
    let cfg = Arc::new(cfg);
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    // The first acknowledgement comes after a 10 s stall at max_in_flight;
    // then the brokers answer at once, so what is left commits quickly.
    let published = || crate::common::samples(&metrics.encode(), "groundgate_published_total");
    let deadline = tokio::time::Instant::now() + WAIT;
    while published().values().sum::<f64>() < 1.0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cluster.broker_round_trip_time(2, Duration::ZERO).unwrap();
    let committed = wait_committed(&bs, group, n as i64).await;
    let rebalances = |kind: &str| {
        crate::common::sum_where(
            &metrics.encode(),
            "groundgate_rebalances_total",
            &format!("kind=\"{kind}\""),
        )
    };
    let (assigned, revoked) = (rebalances("assign"), rebalances("revoke"));
    w.stop().await.unwrap();
    assert_eq!(
        (committed, assigned, revoked),
        (n as i64, 1.0, 0.0),
        "records committed, assignments and revocations while the outputs were slow"
    );
}

/// With large records and slow acknowledgements, the records waiting for
/// their outputs to be acknowledged hold about `max_in_flight_bytes` (up
/// to one record more), not `max_in_flight` records: what bounds a
/// worker's memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_waiting_for_slow_acknowledgements_stay_within_max_in_flight_bytes() {
    let group = "g-in-flight-bytes";
    let broker = crate::common::outputs_on_broker_2(group);
    let cluster = broker.cluster();
    let bs = broker.bootstrap();
    let n = 12;
    let values: Vec<Vec<u8>> = (0..n)
        .map(|i| groundgate::sample::record(i, groundgate::sample::Kind::Clean, 100_000))
        .collect();
    let largest = values.iter().map(Vec::len).max().unwrap_or(0);
    produce_values(&bs, "answers", values).await;
    cluster
        .broker_round_trip_time(2, Duration::from_secs(2))
        .unwrap();
    let bound = 400_000;
    let mut cfg = (*config(&bs, group, Guarantee::AtLeastOnce)).clone();
    cfg.core.max_record_bytes = 1 << 20;
    cfg.core.policy.max_answer_bytes = 1 << 20;
    cfg.kafka.max_in_flight_bytes = bound;
    let cfg = Arc::new(cfg);
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    let sum = |name: &str| {
        crate::common::samples(&metrics.encode(), name)
            .values()
            .sum::<f64>()
    };
    // Sampled until every record is written: while the outputs wait (2 s
    // a round trip), the gauge holds what is in flight.
    let deadline = tokio::time::Instant::now() + WAIT;
    let (mut most, mut most_records) = (0.0f64, 0.0f64);
    while sum("groundgate_records_total") < n as f64 && tokio::time::Instant::now() < deadline {
        most = most.max(sum("groundgate_in_flight_bytes"));
        most_records = most_records.max(sum("groundgate_in_flight_records"));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let written = sum("groundgate_records_total");
    w.stop().await.unwrap();
    assert_eq!(written, n as f64, "every record written");
    let allowed = (bound + largest) as f64;
    assert!(
        most > 0.0 && most <= allowed,
        "most bytes in flight {most}, allowed {allowed} (records of {largest} bytes at most)"
    );
    assert!(
        (1.0..=4.0).contains(&most_records),
        "most records in flight: {most_records}"
    );
}

/// Under exactly-once the producer commits the offsets, so the consumer's
/// own statistics never see them (on the mock broker they show no lag at
/// all; on Kafka, the lag found at assignment growing with every record).
/// The exported lag follows the transactions: every partition is reported,
/// and falls to 0 once every record is committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_exports_the_lag_left_after_its_transactions() {
    let broker = broker();
    let bs = broker.bootstrap();
    let n = 80;
    produce_mixed(&bs, n, 300).await;
    let mut cfg = (*config(&bs, "g-eos-lag", Guarantee::ExactlyOnce)).clone();
    cfg.metrics.statistics_interval = Duration::from_millis(100);
    let cfg = Arc::new(cfg);
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    read_outputs(&bs, n as usize).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let lags = loop {
        let lags = crate::common::samples(&metrics.encode(), "groundgate_consumer_lag_records");
        let settled = lags.len() == PARTITIONS as usize && lags.values().all(|v| *v == 0.0);
        if settled || tokio::time::Instant::now() > deadline {
            break lags;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    w.stop().await.unwrap();
    assert_eq!(
        lags.len(),
        PARTITIONS as usize,
        "a lag per partition: {lags:?}"
    );
    assert!(lags.values().all(|v| *v == 0.0), "{lags:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_aborts_and_rewinds_on_an_abortable_error() {
    let broker = broker();
    let bs = broker.bootstrap();
    let n = 60;
    produce_mixed(&bs, n, 300).await;
    // The first transaction cannot add its output partitions: librdkafka
    // makes that an abortable transaction error, as Kafka prescribes.
    broker.cluster().request_errors(
        RDKafkaApiKey::AddPartitionsToTxn,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED],
    );
    let cfg = config(&bs, "g-eos-abort", Guarantee::ExactlyOnce);
    let w = start(&cfg, &bs);
    let out = read_outputs(&bs, n as usize).await;
    let audited: BTreeSet<(i32, i64)> = out[2].iter().map(coords).collect();
    assert_eq!(
        audited.len(),
        n as usize,
        "every input is covered after the abort"
    );
    let report = w.stop().await.unwrap();
    assert!(report.transactions_aborted >= 1, "{report:?}");
    assert!(report.transactions_committed >= 1, "{report:?}");
    // The aborted batch was processed again from the rewound offsets.
    assert!(report.records > n, "{report:?}");
    assert_all_sealed(&bs, n).await;
}

/// The counters of what the answers said (findings, citations, tokens,
/// cost, grounding) count each record written once under exactly-once, as
/// `groundgate_records_total` does: the records of an aborted transaction
/// are judged again when read again, and were counted at each judgement.
/// The reference is the same records judged once each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_counts_what_the_answers_said_once_per_record_written() {
    let broker = broker();
    let bs = broker.bootstrap();
    let n = 60;
    produce_mixed(&bs, n, 300).await;
    broker.cluster().request_errors(
        RDKafkaApiKey::AddPartitionsToTxn,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED],
    );
    let cfg = config(&bs, "g-eos-judged-once", Guarantee::ExactlyOnce);
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    read_outputs(&bs, n as usize).await;
    let report = w.stop().await.unwrap();
    assert!(report.transactions_aborted >= 1, "{report:?}");
    assert!(report.records > n, "records judged again: {report:?}");
    let reference = Metrics::new(&cfg.metrics).unwrap();
    for i in 0..n {
        let value = groundgate::sample::mixed(i, 300);
        let meta = groundgate::core::RecordMeta {
            topic: "answers",
            partition: 0,
            offset: i as i64,
        };
        let o = groundgate::core::process(Some(&value), &meta, 0, &cfg.core);
        reference.record_outcome(o.kind, &o.summary, Duration::ZERO);
    }
    let (got, want) = (metrics.encode(), reference.encode());
    for family in [
        "groundgate_records_total",
        "groundgate_findings_total",
        "groundgate_citations_total",
        "groundgate_answers_without_citations_total",
        "groundgate_llm_tokens_total",
        "groundgate_grounding_answers_total",
    ] {
        assert_eq!(
            crate::common::samples(&got, family),
            crate::common::samples(&want, family),
            "{family}"
        );
    }
    // Added up in another order: equal but for rounding.
    let cost = |text: &str| crate::common::sum_where(text, "groundgate_llm_cost_usd_total", "");
    assert!(
        (cost(&got) - cost(&want)).abs() < 1e-9,
        "{} {}",
        cost(&got),
        cost(&want)
    );
}

/// The outputs the broker refused as too large and replaced by their
/// bounded stand-ins: too_large dead letters and audit rows whose detail
/// names the refusal.
fn stand_ins(out: &[Vec<OwnedMessage>]) -> Vec<&OwnedMessage> {
    let refused = |m: &&OwnedMessage| {
        m.payload()
            .is_some_and(|p| String::from_utf8_lossy(p).contains("MSG_SIZE_TOO_LARGE"))
    };
    let dead_letters = out[3]
        .iter()
        .filter(|d| header(d, outputs::H_ERROR_KIND).as_deref() == Some("too_large"));
    let rows = out[2].iter().filter(|m| !inspect::is_seal(m));
    dead_letters.chain(rows).filter(refused).collect()
}

/// Under exactly-once a broker refusal fails the commit; the transaction is
/// aborted, and when its records are processed again the refused output is
/// replaced by its bounded stand-in, so the partition moves on. The
/// embedded broker refuses only the injected request, so without the
/// stand-in the records would go through unchanged on the second try: the
/// stand-ins are what shows the refusal was remembered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_replaces_an_output_the_broker_refuses_as_too_large() {
    let broker = broker();
    let bs = broker.bootstrap();
    let n = 8;
    produce_mixed(&bs, n, 300).await;
    broker.cluster().request_errors(
        RDKafkaApiKey::Produce,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE],
    );
    let cfg = config(&bs, "g-eos-too-large", Guarantee::ExactlyOnce);
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    let b = bs.clone();
    let out = tokio::task::spawn_blocking(move || {
        inspect::read_until(&b, &OUTPUTS, WAIT, |got| {
            let audited: BTreeSet<(i32, i64)> = got[2]
                .iter()
                .filter(|m| !inspect::is_seal(m))
                .map(coords)
                .collect();
            // The stand-in and the audit row that replaces the aborted
            // transaction's row are on different topics: read both.
            audited.len() >= n as usize
                && !stand_ins(got).is_empty()
                && rows_disagreeing(got).is_empty()
        })
    })
    .await
    .unwrap()
    .unwrap();
    let replaced = stand_ins(&out);
    assert!(
        !replaced.is_empty(),
        "no refused output was replaced by its stand-in"
    );
    for s in &replaced {
        assert!(s.payload().unwrap().len() < 4096, "bounded: {s:?}");
    }
    let mut out: [Vec<OwnedMessage>; 4] = out
        .try_into()
        .unwrap_or_else(|_| panic!("one list per output topic"));
    out[2].retain(|m| !inspect::is_seal(m));
    assert_rows_agree(&out);
    assert!(!w.handle.is_finished(), "the worker must not stop");
    let report = w.stop().await.unwrap();
    assert!(report.transactions_aborted >= 1, "{report:?}");
    assert!(report.transactions_committed >= 1, "{report:?}");
    // Counted as committed: the aborted transaction's records once, when
    // processed again.
    let m = metrics.encode();
    let records = crate::common::sum_where(&m, "groundgate_records_total", "");
    assert_eq!(records, n as f64, "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_fails_at_start_when_transactions_cannot_be_initialised() {
    let broker = broker();
    let bs = broker.bootstrap();
    broker.cluster().request_errors(
        RDKafkaApiKey::InitProducerId,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED; 5],
    );
    let w = start(&config(&bs, "g-eos-init", Guarantee::ExactlyOnce), &bs);
    let err = tokio::time::timeout(WAIT, w.handle)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(err, WorkerError::TransactionsUnsupported(_)),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("support transactions") && text.contains("at-least-once"),
        "{text}"
    );
    assert!(!err.is_retriable(), "{text}");
}

/// Waits until the worker's clients have reported a Kafka error (brokers
/// unreachable).
async fn wait_client_errors(metrics: &Metrics) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while crate::common::sum_where(
        &metrics.encode(),
        "groundgate_kafka_client_errors_total",
        "",
    ) == 0.0
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no Kafka client error reported"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Brokers that do not answer when an exactly-once worker starts are
/// waited for, as under at-least-once: a stop meanwhile ends the worker
/// cleanly, having done nothing, rather than waiting out the
/// initialisation of its transactional producer and then failing as if
/// the cluster did not support transactions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_waits_for_brokers_unreachable_at_start_and_stops_cleanly_meanwhile() {
    let broker = broker();
    let bs = broker.bootstrap();
    broker.broker_down(1).unwrap();
    let cfg = config(&bs, "g-eos-unreachable", Guarantee::ExactlyOnce);
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    wait_client_errors(&metrics).await;
    let report = w.stop().await.unwrap();
    assert_eq!(report, WorkerReport::default());
}

/// An exactly-once worker started while its brokers are away goes on once
/// they answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_starts_once_brokers_unreachable_at_start_answer() {
    let broker = broker();
    let bs = broker.bootstrap();
    let n = 20;
    produce_mixed(&bs, n, 300).await;
    broker.broker_down(1).unwrap();
    let cfg = config(&bs, "g-eos-late", Guarantee::ExactlyOnce);
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let w = start_with(&cfg, &bs, metrics.clone());
    wait_client_errors(&metrics).await;
    broker.cluster().broker_up(1).unwrap();
    let out = read_outputs(&bs, n as usize).await;
    assert_eq!(assert_pairs(&out).len(), n as usize);
    let report = w.stop().await.unwrap();
    assert_eq!(report.records, n, "{report:?}");
}

/// `verify_audit_topic` with the input topic and `group` as the anchor.
async fn verify_anchored(bootstrap: &str, group: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["--input-topic", "answers", "--group", group];
    args.extend_from_slice(extra);
    verify_audit_topic(bootstrap, &args).await
}

/// Writes `row` onto the audit topic, as `kcat -P -t answers.audit` would.
async fn append_audit(bootstrap: &str, row: &Value) {
    let bytes = serde_json::to_vec(row).unwrap();
    produce_values(bootstrap, "answers.audit", vec![bytes]).await;
}

/// Commits `offset` of input partition 0 for `group` with `metadata`, as a
/// tool other than groundgate (or someone with admin rights on the group)
/// would: a standalone commit, without joining the group.
async fn commit_foreign(bootstrap: &str, group: &str, offset: i64, metadata: &str) {
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    let (b, g, m) = (
        bootstrap.to_string(),
        group.to_string(),
        metadata.to_string(),
    );
    tokio::task::spawn_blocking(move || {
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &b)
            .set("group.id", &g)
            .set("enable.auto.commit", "false")
            .create()
            .unwrap();
        let mut tpl = rdkafka::TopicPartitionList::new();
        let mut e = tpl.add_partition("answers", 0);
        e.set_offset(rdkafka::Offset::Offset(offset)).unwrap();
        e.set_metadata(m);
        c.assign(&tpl).unwrap();
        c.commit(&tpl, CommitMode::Sync).unwrap();
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampering_with_the_audit_topic_is_caught() {
    let broker = broker();
    let bs = broker.bootstrap();
    // Nothing on the audit topic yet: nothing verified is no pass.
    let (code, report) = verify_audit_topic(&bs, &[]).await;
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(problem_kinds(&report), ["nothing_to_verify"]);

    produce_mixed(&bs, 40, 300).await;
    let cfg = config(&bs, "g-tamper", Guarantee::AtLeastOnce);
    let w = start(&cfg, &bs);
    assert_eq!(wait_committed(&bs, "g-tamper", 40).await, 40);
    w.stop().await.unwrap();
    let (code, report) = verify_anchored(&bs, "g-tamper", &[]).await;
    assert_eq!(code, 0, "{report:#}");
    // A group that committed nothing (a mistyped name) anchors nothing:
    // verify says so rather than pass as if anchored.
    let typo = run_verify(&bs, &["--input-topic", "answers", "--group", "g-tampr"]).await;
    let err = String::from_utf8_lossy(&typo.stderr);
    assert!(
        err.contains("group g-tampr has committed no offset of answers: nothing anchors the trail"),
        "{err}"
    );

    // A copy of a sealed row with the same answer_hash and a flipped
    // outcome, as `kcat -P -t answers.audit` would write it.
    let rows = read_outputs(&bs, 40).await[2].clone();
    let original = json_of(&rows[0]);
    let mut flipped = original.clone();
    flipped["outcome"] = json!(if original["outcome"] == "accepted" {
        "rejected"
    } else {
        "accepted"
    });
    append_audit(&bs, &flipped).await;
    let (code, report) = verify_anchored(&bs, "g-tamper", &[]).await;
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(problem_kinds(&report), ["conflict"], "{report:#}");
    let at = &original["input"];
    assert_eq!(report["problems"][0]["partition"], at["partition"]);
    assert_eq!(
        report["problems"][0]["offsets"],
        json!([at["offset"], at["offset"]])
    );

    // A row for an input offset the input topic never had.
    let mut ghost = original.clone();
    ghost["input"]["offset"] = json!(999_999);
    append_audit(&bs, &ghost).await;
    let (code, report) = verify_anchored(&bs, "g-tamper", &[]).await;
    assert_eq!(code, 1, "{report:#}");
    let kinds = problem_kinds(&report);
    assert!(kinds.contains(&"row_ghost".to_string()), "{report:#}");
    // Without the input topic it is still no acceptable tail.
    let (code, report) = verify_audit_topic(&bs, &[]).await;
    assert_eq!(code, 1, "{report:#}");
    assert!(
        problem_kinds(&report).contains(&"unsealed_tail".to_string()),
        "{report:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_committed_head_is_counted_logged_and_reported() {
    let broker = broker();
    let bs = broker.bootstrap();
    produce_mixed(&bs, 40, 300).await;
    // Another tool committed partition 0 of the workers' group, with
    // metadata that is not a chain head.
    commit_foreign(&bs, "g-foreign", 3, "other-tool:reset").await;
    let (code, report) = verify_anchored(&bs, "g-foreign", &[]).await;
    assert_eq!(code, 1, "{report:#}");
    let unreadable: Vec<&Value> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "head_unreadable")
        .collect();
    assert_eq!(unreadable.len(), 1, "{report:#}");
    assert_eq!(unreadable[0]["partition"], 0);
    assert_eq!(unreadable[0]["offsets"], json!([3, 3]), "{report:#}");
    assert!(
        unreadable[0]["detail"]
            .as_str()
            .unwrap()
            .contains("foreign"),
        "{report:#}"
    );

    // The worker restarts partition 0's chain at seq 0 there, and counts it.
    let cfg = config(&bs, "g-foreign", Guarantee::AtLeastOnce);
    let metrics = Arc::new(Metrics::new(&cfg.metrics).unwrap());
    let before = crate::common::samples(&metrics.encode(), "groundgate_audit_chain_restarts_total");
    assert_eq!(
        before.get("reason=\"foreign\"").copied(),
        Some(0.0),
        "{before:?}"
    );
    let w = start_with(&cfg, &bs, metrics.clone());
    assert_eq!(wait_committed(&bs, "g-foreign", 40).await, 40);
    w.stop().await.unwrap();
    let restarts =
        crate::common::samples(&metrics.encode(), "groundgate_audit_chain_restarts_total");
    assert_eq!(
        restarts.get("reason=\"foreign\"").copied(),
        Some(1.0),
        "{restarts:?}"
    );
    assert_eq!(restarts.get("reason=\"no_head\"").copied(), Some(0.0));
    // Once the worker committed a head again, the group anchors the trail
    // from the restart on.
    let (code, report) = verify_anchored(&bs, "g-foreign", &["--from", "3"]).await;
    assert!(
        !problem_kinds(&report).contains(&"head_unreadable".to_string()),
        "{report:#}"
    );
    let _ = code;
}

/// Appends `value` to `partition` of the audit topic with kcat, an
/// independent producer, with `headers` (`key=value` each).
fn kcat_append(bootstrap: &str, partition: i32, headers: &[String], value: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("value");
    std::fs::write(&file, value).unwrap();
    let mut cmd = std::process::Command::new("kcat");
    cmd.args(["-b", bootstrap, "-P", "-t", "answers.audit", "-p"])
        .arg(partition.to_string());
    for h in headers {
        cmd.args(["-H", h]);
    }
    cmd.arg(&file);
    crate::common::succeeded(&mut cmd, "kcat -P");
}

/// The headers of `m` as kcat's `-H key=value` arguments.
fn kcat_headers(m: &OwnedMessage) -> Vec<String> {
    use rdkafka::message::Headers;
    m.headers()
        .map(|hs| {
            hs.iter()
                .map(|h| {
                    format!(
                        "{}={}",
                        h.key,
                        String::from_utf8_lossy(h.value.unwrap_or_default())
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Problems of `kind` in a verify report, as (input topic, partition, offsets).
fn problems_of(report: &Value, kind: &str) -> Vec<(String, i64, Value)> {
    report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == kind)
        .map(|p| {
            (
                p["topic"].as_str().unwrap_or_default().to_string(),
                p["partition"].as_i64().unwrap_or(-1),
                p["offsets"].clone(),
            )
        })
        .collect()
}

/// Someone who can write to the audit topic but holds no signing key
/// appends records to a signed worker trail with kcat. Each forgery is
/// caught by `audit verify --brokers --input-topic --group --public-key`:
/// a copy of a sealed row with its `ts` moved, a copy hidden from consumers
/// behind a seal header, another pipeline's chain signed with the same key,
/// and two contradicting rows for an input offset not sealed yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_appended_to_a_signed_trail_with_kcat_are_caught() {
    let test = "records_appended_to_a_signed_trail_with_kcat_are_caught";
    if !crate::common::need_tool(test, "kcat", "kcat") {
        return;
    }
    let broker = broker();
    let bs = broker.bootstrap();
    let dir = tempfile::tempdir().unwrap();
    crate::common::succeeded(
        std::process::Command::new(BIN)
            .args(["audit", "keygen", "--out"])
            .arg(dir.path().join("audit")),
        "audit keygen",
    );
    let (private, public) = (dir.path().join("audit.key"), dir.path().join("audit.pub"));
    let signed = |group: &str, input: &str, audit: &str| {
        let mut c = (*config(&bs, group, Guarantee::AtLeastOnce)).clone();
        c.audit.sign_with(private.clone()).unwrap();
        c.kafka.topics.input = input.to_string();
        c.kafka.topics.audit = audit.to_string();
        Arc::new(c)
    };
    produce_mixed(&bs, 60, 300).await;
    let w = start(&signed("g-kcat", "answers", "answers.audit"), &bs);
    assert_eq!(wait_committed(&bs, "g-kcat", 60).await, 60);
    w.stop().await.unwrap();
    let public = public.to_str().unwrap().to_string();
    let verify = |extra: &'static [&'static str]| {
        let mut args = vec!["--public-key", public.as_str()];
        args.extend_from_slice(extra);
        let bs = bs.clone();
        async move { verify_anchored(&bs, "g-kcat", &args).await }
    };
    let (code, report) = verify(&[]).await;
    assert_eq!(code, 0, "{report:#}");

    let rows = read_outputs(&bs, 60).await[2].clone();
    let sealed = &rows[0];
    let (p, o) = coords(sealed);
    let text = String::from_utf8(sealed.payload().unwrap().to_vec()).unwrap();
    let ts = json_of(sealed)["ts"].as_i64().unwrap();
    let row_headers = |partition: i32, offset: i64| {
        vec![
            "groundgate.input.topic=answers".to_string(),
            format!("groundgate.input.partition={partition}"),
            format!("groundgate.input.offset={offset}"),
        ]
    };

    // The sealed row with its ts moved to the front: compact JSON, every
    // field equal, but not what a second processing writes.
    let without_ts = text.replacen(&format!(",\"ts\":{ts}"), "", 1);
    assert_ne!(without_ts, text, "{text}");
    let moved = format!("{{\"ts\":{ts},{}", &without_ts[1..]);
    kcat_append(
        &bs,
        sealed.partition(),
        &row_headers(p, o),
        moved.as_bytes(),
    );
    let (code, report) = verify(&[]).await;
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(problem_kinds(&report), ["conflict"], "{report:#}");
    assert_eq!(
        problems_of(&report, "conflict"),
        [("answers".to_string(), i64::from(p), json!([o, o]))]
    );

    // A redelivery of the sealed row that consumers skip as a seal.
    let again = text.replacen(&format!("\"ts\":{ts}"), &format!("\"ts\":{}", ts + 1), 1);
    let mut hidden = row_headers(p, o);
    hidden.push("groundgate.seal=0".into());
    kcat_append(&bs, sealed.partition(), &hidden, again.as_bytes());
    let (_, report) = verify(&[]).await;
    assert_eq!(
        problems_of(&report, "header_mismatch"),
        [("answers".to_string(), i64::from(p), json!([o, o]))],
        "{report:#}"
    );

    // Another pipeline's trail, signed with the same key, copied over
    // record by record with its headers.
    for t in [
        "answers-b",
        "answers-b.audit",
        "b.final",
        "b.retry",
        "b.dlq",
    ] {
        broker.cluster().create_topic(t, 2, 1).unwrap();
    }
    let values: Vec<Vec<u8>> = (0..8).map(|i| groundgate::sample::mixed(i, 300)).collect();
    produce_values(&bs, "answers-b", values).await;
    let mut b = (*signed("g-kcat-b", "answers-b", "answers-b.audit")).clone();
    b.kafka.topics.final_ = "b.final".into();
    b.kafka.topics.retry = "b.retry".into();
    b.kafka.topics.dead_letter = "b.dlq".into();
    let wb = start(&Arc::new(b), &bs);
    let b_bs = bs.clone();
    let other = tokio::task::spawn_blocking(move || {
        inspect::read_until(&b_bs, &["answers-b.audit"], WAIT, |got| {
            let (seals, rows): (Vec<&OwnedMessage>, Vec<&OwnedMessage>) =
                got[0].iter().partition(|m| inspect::is_seal(m));
            let listed: usize = seals
                .iter()
                .map(|m| json_of(m)["rows"].as_array().unwrap().len())
                .sum();
            listed >= 8 && rows.len() >= 8
        })
    })
    .await
    .unwrap()
    .unwrap()
    .concat();
    wb.stop().await.unwrap();
    for m in &other {
        kcat_append(&bs, 0, &kcat_headers(m), m.payload().unwrap());
    }
    let (_, report) = verify(&[]).await;
    let ghosts = problems_of(&report, "row_ghost");
    assert!(
        ghosts.len() >= 8 && ghosts.iter().all(|g| g.0 == "answers-b"),
        "{report:#}"
    );

    // An input record the workers have not processed, and two rows for it
    // that disagree: a live tail, but not one that contradicts itself.
    let input = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(input.path(), groundgate::sample::mixed(99, 300)).unwrap();
    let b = bs.clone();
    let end = tokio::task::spawn_blocking(move || input_ends(&b)[&0])
        .await
        .unwrap();
    crate::common::succeeded(
        std::process::Command::new("kcat")
            .args(["-b", &bs, "-P", "-t", "answers", "-p", "0"])
            .arg(input.path()),
        "kcat -P",
    );
    let mut tail = json_of(sealed);
    tail["input"]["partition"] = json!(0);
    tail["input"]["offset"] = json!(end);
    for outcome in ["accepted", "rejected"] {
        tail["outcome"] = json!(outcome);
        kcat_append(
            &bs,
            0,
            &row_headers(0, end),
            &serde_json::to_vec(&tail).unwrap(),
        );
    }
    let (code, report) = verify(&["--allow-unsealed-tail"]).await;
    assert_eq!(code, 1, "{report:#}");
    assert!(
        problems_of(&report, "conflict").contains(&("answers".to_string(), 0, json!([end, end]))),
        "{report:#}"
    );
    let kinds: BTreeSet<String> = problem_kinds(&report).into_iter().collect();
    assert_eq!(
        kinds,
        ["conflict", "header_mismatch", "row_ghost"]
            .map(String::from)
            .into(),
        "{report:#}"
    );
}

/// `groundgate audit verify` with the workers' own configuration: the
/// brokers, the audit topic and the passthrough come from the file (or
/// from `GROUNDGATE_*` variables), as they do for `run`, so a trail on a
/// renamed topic of a configured cluster is found without repeating them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_verify_reaches_the_trail_through_the_workers_configuration() {
    let broker = broker();
    let bs = broker.bootstrap();
    let topics = [
        "pipe.in",
        "pipe.final",
        "pipe.retry",
        "pipe.audit",
        "pipe.dlq",
    ];
    for t in topics {
        broker.cluster().create_topic(t, 2, 1).unwrap();
    }
    let mut c = (*config(&bs, "g-pipe", Guarantee::AtLeastOnce)).clone();
    c.kafka.topics.input = "pipe.in".into();
    c.kafka.topics.final_ = "pipe.final".into();
    c.kafka.topics.retry = "pipe.retry".into();
    c.kafka.topics.audit = "pipe.audit".into();
    c.kafka.topics.dead_letter = "pipe.dlq".into();
    let values: Vec<Vec<u8>> = (0..24).map(|i| groundgate::sample::mixed(i, 300)).collect();
    produce_values(&bs, "pipe.in", values).await;
    let w = start(&Arc::new(c), &bs);
    let b = bs.clone();
    tokio::task::spawn_blocking(move || {
        inspect::read_until(&b, &["pipe.audit"], WAIT, |got| {
            got[0].iter().filter(|m| !inspect::is_seal(m)).count() >= 24
        })
    })
    .await
    .unwrap()
    .unwrap();
    // A clean stop seals every row and commits every offset.
    w.stop().await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("worker.toml");
    std::fs::write(
        &file,
        format!(
            "[kafka]\nbrokers = \"{bs}\"\ngroup_id = \"g-pipe\"\n[kafka.topics]\ninput = \"pipe.in\"\naudit = \"pipe.audit\"\n[kafka.properties]\n\"fetch.wait.max.ms\" = \"50\"\n"
        ),
    )
    .unwrap();
    let verify = |args: Vec<String>, env: Vec<(&'static str, String)>| {
        tokio::task::spawn_blocking(move || {
            let mut cmd = std::process::Command::new(BIN);
            for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("GROUNDGATE_")) {
                cmd.env_remove(k);
            }
            let out = cmd
                .args(["audit", "verify", "--json", "--input-topic", "pipe.in"])
                .args(["--group", "g-pipe"])
                .args(&args)
                .envs(env)
                .output()
                .unwrap();
            let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr))
            });
            (out.status.code(), report)
        })
    };
    let rows = |report: &Value| -> u64 {
        let chains = report["chains"].as_array().unwrap();
        assert!(chains.iter().all(|c| c["topic"] == "pipe.in"), "{report:#}");
        chains.iter().map(|c| c["rows"].as_u64().unwrap()).sum()
    };

    // The file alone: brokers, audit topic and a passthrough property.
    let args = vec!["--config".to_string(), file.display().to_string()];
    let (code, report) = verify(args, Vec::new()).await.unwrap();
    assert_eq!(report["problems"], json!([]), "{report:#}");
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(rows(&report), 24, "{report:#}");

    // The variables a deployment gives its workers, and -X beside them.
    let env = vec![
        ("GROUNDGATE_BROKERS", bs.clone()),
        ("GROUNDGATE_KAFKA__TOPICS__AUDIT", "pipe.audit".to_string()),
    ];
    let args = vec!["-X".to_string(), "fetch.wait.max.ms=50".to_string()];
    let (code, report) = verify(args, env).await.unwrap();
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(rows(&report), 24, "{report:#}");

    // --topic names another trail than the file's: that one is read (it
    // holds no row of pipe.in, so every input offset is owed one).
    let args = vec![
        "--config".to_string(),
        file.display().to_string(),
        "--topic".to_string(),
        "answers.audit".to_string(),
    ];
    let (code, report) = verify(args, Vec::new()).await.unwrap();
    assert_eq!(code, Some(1), "{report:#}");
    assert!(
        problem_kinds(&report).contains(&"gap".to_string()),
        "{report:#}"
    );
}

/// A key rotation and a rollback on the worker's trail: workers signing
/// with key A, then B, then A again continue each partition's chain. The
/// keyring verifies it whole, says what each key signed, and reports on
/// every chain that A signed again after B, without failing; either key
/// alone leaves the other's seals as `seal_signature` problems.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_and_rolled_back_signing_key_verifies_with_the_keyring() {
    let broker = broker();
    let bs = broker.bootstrap();
    let dir = tempfile::tempdir().unwrap();
    let keygen = |name: &str| {
        let o = std::process::Command::new(BIN)
            .args(["audit", "keygen", "--out"])
            .arg(dir.path().join(name))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8(o.stdout).unwrap();
        let fingerprint = out
            .lines()
            .find_map(|l| l.strip_prefix("public key fingerprint: "))
            .unwrap_or_else(|| panic!("{out}"))
            .to_string();
        let public = dir.path().join(format!("{name}.pub"));
        (dir.path().join(format!("{name}.key")), public, fingerprint)
    };
    let (key_a, pub_a, fp_a) = keygen("a");
    let (key_b, pub_b, fp_b) = keygen("b");
    // The same 40 request ids each time: every partition they fall in gets
    // rows in each phase, so each of its seals of A, B, A.
    for (phase, key) in [&key_a, &key_b, &key_a].into_iter().enumerate() {
        produce_mixed(&bs, 40, 300).await;
        let mut c = (*config(&bs, "g-rotate", Guarantee::AtLeastOnce)).clone();
        c.audit.sign_with(key.clone()).unwrap();
        let w = start(&Arc::new(c), &bs);
        let want = 40 * (phase as i64 + 1);
        assert_eq!(wait_committed(&bs, "g-rotate", want).await, want);
        w.stop().await.unwrap();
    }
    let (a, b) = (pub_a.to_str().unwrap(), pub_b.to_str().unwrap());

    let (code, r) = verify_anchored(&bs, "g-rotate", &["--public-key", a, "--public-key", b]).await;
    assert_eq!(code, 0, "{r:#}");
    let chains: BTreeSet<i64> = r["chains"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["rows"].as_u64() > Some(0))
        .map(|c| c["partition"].as_i64().unwrap())
        .collect();
    assert!(!chains.is_empty(), "{r:#}");
    let keys = r["keys"].as_array().unwrap();
    assert_eq!(keys[0]["fingerprint"], fp_a.as_str());
    assert_eq!(keys[1]["fingerprint"], fp_b.as_str());
    let seals: u64 = r["chains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["seals"].as_u64().unwrap())
        .sum();
    let signed = |k: &Value| k["seals"].as_u64().unwrap();
    assert_eq!(signed(&keys[0]) + signed(&keys[1]), seals, "{r:#}");
    assert!(signed(&keys[1]) >= chains.len() as u64, "{r:#}");
    // A's return after B, once on every chain; B never returns.
    let again: BTreeSet<i64> = keys[0]["signed_again"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            assert_eq!(x["after"], fp_b.as_str(), "{x}");
            x["partition"].as_i64().unwrap()
        })
        .collect();
    assert_eq!(again, chains, "{r:#}");
    assert_eq!(
        keys[0]["signed_again"].as_array().unwrap().len(),
        chains.len()
    );
    assert_eq!(keys[1]["signed_again"], json!([]), "{r:#}");

    for (alone, other) in [(a, &keys[1]), (b, &keys[0])] {
        let (code, r) = verify_anchored(&bs, "g-rotate", &["--public-key", alone]).await;
        assert_eq!(code, 1, "{r:#}");
        let kinds = problem_kinds(&r);
        assert!(kinds.iter().all(|k| k == "seal_signature"), "{r:#}");
        assert_eq!(kinds.len() as u64, signed(other), "{r:#}");
    }
}
