//! `process` on realistic records: 1, 4 and 8 KB answers, 8 sources, a
//! citation every ~80 bytes. Covers JSON decode, citation scan, decision,
//! policy, SHA-256 and encoding of the envelope and the audit row.
//!
//! cargo bench --bench process

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use groundgate::core::{CoreSettings, PolicySettings, RecordMeta, citation, process};
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
