//! `process` on realistic records: 1, 4 and 8 KB answers, 8 sources, a
//! citation every ~80 bytes; and RAG-shaped records (35 cited sentences, 8
//! sources of ~1.2 KB, `groundgate::sample::rag`), with new sources every
//! record and with every source seen before. Covers JSON decode, citation
//! scan, grounding, decision, policy, SHA-256 and encoding of the envelope
//! and the audit row.
//!
//! cargo bench --bench process
//!
//! The RAG group also prints µs per record and ns per source byte, the
//! same records without grounding, and the floor of today's word reader
//! (each word scanned and looked up in the word memo, nothing else).

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use groundgate::core::{
    CoreSettings, GroundingSettings, PolicySettings, RecordMeta, citation, grounding, process,
};
use serde_json::json;

/// A realistic record whose answer is `answer_bytes` long, with a `[^N]`
/// marker (N cycling over 8 sources) roughly every 80 bytes.
pub fn record(answer_bytes: usize) -> Vec<u8> {
    let words = [
        "Revenue",
        "grew",
        "in",
        "the",
        "third",
        "quarter",
        "as",
        "enterprise",
        "renewals",
        "improved",
        "and",
        "churn",
        "fell",
        "across",
        "mid-market",
        "accounts",
        "while",
        "pricing",
        "changes",
        "lifted",
        "margins",
    ];
    let mut answer = String::with_capacity(answer_bytes + 16);
    let (mut i, mut since) = (0usize, 0usize);
    while answer.len() < answer_bytes {
        let w = words[i % words.len()];
        answer.push_str(w);
        since += w.len() + 1;
        if since >= 80 {
            answer.push_str(&format!("[^{}]", i % 8 + 1));
            since = 0;
        }
        answer.push(' ');
        i += 1;
    }
    let sources: Vec<_> = (1..=8)
        .map(|n| {
            json!({"urn": format!("urn:doc:finance/report-{n}#p{n}"),
                   "payload": format!("Excerpt {n}: quarterly figures and commentary from the filing.")})
        })
        .collect();
    serde_json::to_vec(&json!({
        "request_id": "req-00000000-0000-0000-0000-000000000001",
        "answer": answer,
        "question": "Why did revenue grow in Q3?",
        "sources": sources,
        "provider": "openai", "model": "gpt-4o-2024-08-06", "tenant": "acme", "user": "analyst-17", "role": "analyst",
        "prompt_tokens": 3100, "completion_tokens": 820, "cost_usd": 0.0213,
        "cache_hit": false, "temperature": 0.2, "seed": 42, "confidence": 0.87, "provenance": "rag-v3"
    }))
    .unwrap()
}

fn bench_process(c: &mut Criterion) {
    let settings = CoreSettings {
        policy: PolicySettings {
            forbidden_terms: vec!["guaranteed returns".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let meta = RecordMeta {
        topic: "answers",
        partition: 0,
        offset: 1,
    };
    let mut g = c.benchmark_group("process");
    for kb in [1usize, 4, 8] {
        let rec = record(kb * 1024);
        g.throughput(Throughput::Elements(1));
        g.bench_function(format!("{kb}KB"), |b| {
            b.iter(|| {
                process(
                    Some(black_box(&rec)),
                    &meta,
                    1_700_000_000_000_000_000,
                    &settings,
                )
            })
        });
    }
    g.finish();

    // New sources every record: more distinct records than any per-thread
    // cache holds, cycled. Repeated: one record's sources every time.
    let fresh: Vec<Vec<u8>> = (0..4096).map(|i| groundgate::sample::rag(i, 0)).collect();
    // Each record's answer, then its sources' texts: the floor below reads
    // these, and their sizes give the figures per source byte.
    let record_texts: Vec<Vec<String>> = fresh
        .iter()
        .map(|rec| {
            let v: serde_json::Value = serde_json::from_slice(rec).unwrap();
            let sources = v["sources"].as_array().unwrap();
            let payloads = sources
                .iter()
                .map(|s| s["payload"].as_str().unwrap().to_string());
            std::iter::once(v["answer"].as_str().unwrap().to_string())
                .chain(payloads)
                .collect()
        })
        .collect();
    let mean_source_bytes = record_texts
        .iter()
        .map(|t| t[1..].iter().map(String::len).sum::<usize>())
        .sum::<usize>() as f64
        / record_texts.len() as f64;
    let mut g = c.benchmark_group("process_rag");
    g.throughput(Throughput::Elements(1));
    let mut next = 0usize;
    g.bench_function("new_sources", |b| {
        b.iter(|| {
            next = (next + 1) % fresh.len();
            process(
                Some(black_box(&fresh[next])),
                &meta,
                1_700_000_000_000_000_000,
                &settings,
            )
        })
    });
    g.bench_function("repeated_sources", |b| {
        b.iter(|| {
            process(
                Some(black_box(&fresh[0])),
                &meta,
                1_700_000_000_000_000_000,
                &settings,
            )
        })
    });
    g.finish();
    // Criterion reports time per record; per source byte is what says
    // whether the grounding work scales with the sources.
    for (name, repeated) in [("new sources", false), ("repeated sources", true)] {
        let rounds = 4 * fresh.len();
        let start = Instant::now();
        for i in 0..rounds {
            let rec = if repeated {
                &fresh[0]
            } else {
                &fresh[i % fresh.len()]
            };
            black_box(process(
                Some(black_box(rec)),
                &meta,
                1_700_000_000_000_000_000,
                &settings,
            ));
        }
        let ns = start.elapsed().as_nanos() as f64 / rounds as f64;
        println!(
            "process_rag {name}: {:.1} µs/record, {:.2} ns per source byte ({mean_source_bytes:.0} source bytes a record)",
            ns / 1000.0,
            ns / mean_source_bytes
        );
    }

    // Beside it, what the same records cost without grounding (the run the
    // speed goals compare with), and the floor of today's word reader: each
    // word of the answer and the sources scanned and looked up in the word
    // memo, nothing indexed or scored.
    let off = CoreSettings {
        grounding: GroundingSettings {
            enabled: false,
            ..Default::default()
        },
        ..settings.clone()
    };
    let texts: Vec<Vec<&str>> = record_texts
        .iter()
        .map(|t| t.iter().map(String::as_str).collect())
        .collect();
    let rounds = 4 * fresh.len();
    let start = Instant::now();
    for i in 0..rounds {
        black_box(process(
            Some(black_box(&fresh[i % fresh.len()])),
            &meta,
            1_700_000_000_000_000_000,
            &off,
        ));
    }
    let off_ns = start.elapsed().as_nanos() as f64 / rounds as f64;
    let mut words = 0usize;
    let start = Instant::now();
    for i in 0..rounds {
        words += grounding::read_every_word(black_box(&texts[i % texts.len()]));
    }
    let floor_ns = start.elapsed().as_nanos() as f64;
    println!(
        "process_rag new sources, grounding off: {:.1} µs/record; every word read through the word memo alone: {:.1} µs/record ({:.1} ns a word, {} words a record)",
        off_ns / 1000.0,
        floor_ns / rounds as f64 / 1000.0,
        floor_ns / words as f64,
        words / rounds
    );

    let mut g = c.benchmark_group("citation_scan");
    for kb in [1usize, 4, 8] {
        let rec = record(kb * 1024);
        let v: serde_json::Value = serde_json::from_slice(&rec).unwrap();
        let answer = v["answer"].as_str().unwrap().to_string();
        g.throughput(Throughput::Bytes(answer.len() as u64));
        g.bench_function(format!("{kb}KB"), |b| {
            b.iter(|| citation::parse(black_box(&answer), 8))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_process);
criterion_main!(benches);
