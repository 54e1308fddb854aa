//! Allocations counted by a global allocator of this test binary: once a
//! thread is warm, grounding a record allocates its result (the claim
//! list), not per claim nor per word, so the count does not grow with the
//! answer; an output record is written into one buffer sized up front.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use groundgate::core::grounding::analyze;
use groundgate::core::settings::GroundingSettings;
use groundgate::core::types::{Finding, FindingKind, Mode};
use groundgate::core::wire::{ClaimOut, Envelope, GroundingOut, SourceFlat, Validation};
use groundgate::core::{citation, encode};

struct Counting;

thread_local! {
    // Per thread: tests running in parallel do not count each other.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: the slot may be gone while the thread exits.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Eight sources of a few sentences each.
fn sources() -> Vec<String> {
    (1..=8)
        .map(|k| {
            (0..12)
                .map(|s| {
                    format!(
                        "Report {k} says the regional office number {s} opened in Lisbon \
                         with forty staff and a new archive center for the {k} northern provinces. "
                    )
                })
                .collect()
        })
        .collect()
}

/// An answer of `claims` supported sentences of about `words` words each,
/// citing the sources in turn.
fn answer(claims: usize, words: usize) -> String {
    let mut a = String::new();
    for c in 0..claims {
        let k = c % 8 + 1;
        let s = c % 12;
        let mut sentence =
            format!("Report {k} says the regional office number {s} opened in Lisbon");
        // "centre": found by its US spelling, an alternate of the claim's word.
        let tail = " with forty staff and a new archive centre for the northern provinces";
        for w in tail
            .split(' ')
            .filter(|w| !w.is_empty())
            .take(words.saturating_sub(11))
        {
            sentence.push(' ');
            sentence.push_str(w);
        }
        a.push_str(&sentence);
        a.push_str(&format!("[^{k}]. "));
    }
    a
}

/// Allocations made by grounding `answer` on this (warm) thread.
fn allocations(answer: &str, sources: &[&str]) -> (usize, usize) {
    let settings = GroundingSettings::default();
    let parsed = citation::parse(answer, sources.len());
    let before = ALLOCATIONS.with(Cell::get);
    let g = analyze(answer, &parsed.citations, sources, &settings);
    let after = ALLOCATIONS.with(Cell::get);
    assert!(
        g.claims.iter().all(|c| c.unsupported_terms.is_empty()),
        "every claim is supported: {g:?}"
    );
    (after - before, g.claims.len())
}

#[test]
fn grounding_allocates_per_record_not_per_claim_or_word() {
    let owned = sources();
    let sources: Vec<&str> = owned.iter().map(String::as_str).collect();
    let shapes = [(8, 12), (64, 12), (256, 12), (8, 22), (256, 22)];
    // Warm the thread on every shape: memo, index and working lists at
    // their largest (a short answer against these sources declares its
    // terms; a long one has every source word indexed).
    for _ in 0..3 {
        for (claims, words) in shapes {
            allocations(&answer(claims, words), &sources);
        }
    }
    let mut seen = Vec::new();
    for (claims, words) in shapes {
        let (n, got) = allocations(&answer(claims, words), &sources);
        assert_eq!(got, claims);
        seen.push(((claims, words), n));
    }
    let first = seen[0].1;
    assert!(
        seen.iter().all(|&(_, n)| n == first),
        "allocations by (claims, words per claim): {seen:?}"
    );
    assert!(first <= 2, "a record's own allocations: {seen:?}");
}

#[test]
fn a_final_envelope_is_written_into_one_buffer() {
    let owned = sources();
    let text = answer(40, 22);
    let terms: Vec<Vec<String>> = (0..40)
        .map(|c| vec![format!("unsupported{c}"), "Lisbon".into(), "archive".into()])
        .collect();
    let claims: Vec<ClaimOut<'_>> = terms
        .iter()
        .enumerate()
        .map(|(c, t)| ClaimOut {
            markers: &[1, 2],
            span: [c * 100, c * 100 + 99],
            support: Some(0.123_456),
            unsupported_terms: t,
        })
        .collect();
    let warnings: Vec<Finding> = (0..40)
        .map(|c| {
            Finding::new(
                FindingKind::UnsupportedClaim,
                format!("claim {c} (support 0.12 < 0.5): \"unsupported{c}\" not found in [^1]"),
            )
        })
        .collect();
    let e = Envelope {
        answer: &text,
        cache_hit: false,
        citations: Vec::new(),
        completion_tokens: 0,
        cost_usd: 0.0,
        grounding: GroundingOut {
            claims,
            score: Some(0.123_456),
        },
        mode: Mode::Lenient,
        model: "model",
        prompt_tokens: 0,
        provider: "provider",
        request_id: "request",
        retry_count: 0,
        sources_flat: owned
            .iter()
            .map(|p| SourceFlat {
                payload: p,
                urn: "urn:doc",
            })
            .collect(),
        validation: Validation {
            errors: &[],
            ok: true,
            warnings: &warnings,
        },
    };
    let before = ALLOCATIONS.with(Cell::get);
    let out = encode::envelope(&e);
    let after = ALLOCATIONS.with(Cell::get);
    assert!(
        out.len() > 20_000,
        "a RAG-sized envelope: {} bytes",
        out.len()
    );
    assert_eq!(after - before, 1, "allocations writing {} bytes", out.len());
}
