//! Regenerates the shipped sample stream:
//! `cargo run --example gen_answers > examples/answers.jsonl`
use std::io::Write;

fn main() -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for i in 0..300u64 {
        // Answers between ~300 bytes and ~2 KB.
        let size = 300 + (i as usize * 173) % 1700;
        out.write_all(&groundgate::sample::mixed(i, size))?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
