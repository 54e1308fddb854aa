//! Writes a deterministic mixed answer stream as JSON Lines on stdout.
//!
//! Regenerate the shipped sample: `cargo run --example gen_answers > examples/answers.jsonl`
//! A larger file for measuring `check`:
//! `cargo run --release --example gen_answers -- 40000 > /tmp/answers-100mb.jsonl`
use std::io::Write;

fn main() -> std::io::Result<()> {
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
    for i in 0..count {
        // Answers between ~300 bytes and ~2 KB.
        let size = 300 + (i as usize * 173) % 1700;
        out.write_all(&groundgate::sample::mixed(i, size))?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
