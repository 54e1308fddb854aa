//! Writes a deterministic mixed answer stream as JSON Lines on stdout.
//!
//! Regenerate the shipped sample: `cargo run --example gen_answers > examples/answers.jsonl`
//! A larger file for measuring `check`:
//! `cargo run --release --example gen_answers -- 40000 > /tmp/answers-100mb.jsonl`
//! Fixed-size answers (the scaling and grounding speed measurements):
//! `cargo run --release --example gen_answers -- 200000 4096 > /tmp/answers-4k.jsonl`
//! RAG-shaped records (8 sources of ~1.2 KB, 35 cited sentences), each
//! source slot repeating a recent source with the given percentage:
//! `cargo run --release --example gen_answers -- 20000 rag 50 > /tmp/rag-50.jsonl`
use std::io::Write;

fn main() -> std::io::Result<()> {
    match write() {
        // A reader that has seen enough (`| head`) is not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

fn write() -> std::io::Result<()> {
    let count: u64 = match std::env::args().nth(1) {
        None => 300,
        Some(n) => n.parse().map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("count {n:?}: {e}"),
            )
        })?,
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if std::env::args().nth(2).as_deref() == Some("rag") {
        let repeat: u32 = match std::env::args().nth(3) {
            None => 0,
            Some(p) => p.parse().map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("repeat percent {p:?}: {e}"),
                )
            })?,
        };
        for i in 0..count {
            out.write_all(&groundgate::sample::rag(i, repeat))?;
            out.write_all(b"\n")?;
        }
        return out.flush();
    }
    let fixed: Option<usize> = match std::env::args().nth(2) {
        None => None,
        Some(n) => Some(n.parse().map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("answer bytes {n:?}: {e}"),
            )
        })?),
    };
    for i in 0..count {
        // Answers between ~300 bytes and ~2 KB unless a size is given.
        let size = fixed.unwrap_or(300 + (i as usize * 173) % 1700);
        out.write_all(&groundgate::sample::mixed(i, size))?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
