//! An ordered parallel fold over the lines of a byte stream: the engine of
//! `groundgate check`.
//!
//! One reader thread cuts the input into blocks of whole lines (splitting
//! is a `memchr` for the block's last newline, not a per-line step), a pool
//! of workers folds each block's lines into one result (the caller's
//! [`Fold`]: outputs pre-joined, counts pre-summed), and the calling thread
//! receives the folds in input order. Nothing serial is done per line.
//!
//! Bounded: at most `2 × threads + 2` blocks exist at once (read, being mapped or
//! waiting to be written), whatever the speed of each stage; a line is held
//! only up to `max_line` bytes and one block, and streamed through SHA-256
//! past that. A line longer than `max_line` is handed over as
//! [`Line::TooLong`] with its length, digest and a preview, by the worker
//! when it fits in a block, so that long lines cost no more hand-offs than
//! short ones.
//!
//! A line that starts with byte 0x00 is a value in Schema Registry wire
//! format (a JSON text never starts so): its newline is looked for past the
//! header, whose schema id may hold byte 0x0A. Otherwise it knows nothing
//! of answers, Kafka or outputs: it moves bytes.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_channel::{Receiver, Sender, bounded};
use sha2::{Digest, Sha256};

use crate::core::wire::{SCHEMA_REGISTRY_HEADER_BYTES, header_bytes};

/// Bytes read per block (a block holds whole lines, so it may be larger).
const BLOCK: usize = 1 << 20;
/// Bytes of a too-long line kept as its preview.
pub const PREVIEW: usize = 1024;

/// One input line, without its `\n` (and `\r` before it).
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    Whole(&'a [u8]),
    /// Longer than `max_line`: only its length, digest and first bytes.
    TooLong {
        len: u64,
        sha256: [u8; 32],
        preview: &'a [u8],
    },
}

impl<'a> Line<'a> {
    /// A line held whole, told as one over the limit: its length, digest
    /// and preview, as the reader gives a line it did not hold.
    pub fn too_long(l: &'a [u8]) -> Line<'a> {
        Line::TooLong {
            len: l.len() as u64,
            sha256: Sha256::digest(l).into(),
            preview: &l[..PREVIEW.min(l.len())],
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PipelineError<E> {
    #[error("cannot read input at line {line}: {source}")]
    Read { line: u64, source: io::Error },
    #[error(transparent)]
    Sink(E),
}

/// Settings of a run.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub threads: usize,
    /// Lines longer than this are [`Line::TooLong`].
    pub max_line: usize,
    /// Bytes read at a time (tests make it tiny to hit every boundary).
    pub block: usize,
}

impl Shape {
    pub fn new(threads: usize, max_line: usize) -> Shape {
        Shape {
            threads,
            max_line,
            block: BLOCK,
        }
    }
}

/// What a block carries from the reader to the workers.
enum Block {
    /// Whole lines (each ending in `\n`, except perhaps the input's last):
    /// the first `len` bytes of `bytes`. The bytes past them are read
    /// into again when the buffer comes back to the reader.
    Lines { bytes: Vec<u8>, len: usize },
    TooLong {
        len: u64,
        sha256: [u8; 32],
        preview: Vec<u8>,
    },
}

struct Numbered {
    seq: u64,
    first_line: u64,
    block: Block,
}

/// Progress counters a caller may watch from another thread. (The bytes
/// read are counted where the input is opened, before any unpacking.)
#[derive(Debug, Default)]
pub struct Progress {
    pub lines: AtomicU64,
}

/// What a worker builds from one block of lines: the caller's per-line
/// work, and whatever it wants to pre-combine per block (output buffers,
/// partial counts) so the in-order writer has little left to do.
pub trait Fold: Send {
    fn line(&mut self, index: u64, line: Line<'_>);
}

/// Feeds every line of `input` (0-based index, line) to a [`Fold`] made by
/// `new_block`, one per block, on `shape.threads` workers, and hands the
/// folds to `sink` in input order. Returns the number of lines.
pub fn run<R, B, E, N, S>(
    input: R,
    shape: Shape,
    progress: &Progress,
    new_block: N,
    mut sink: S,
) -> Result<u64, PipelineError<E>>
where
    R: Read + Send,
    B: Fold,
    E: Send,
    N: Fn() -> B + Sync,
    S: FnMut(B) -> Result<(), E>,
{
    let threads = shape.threads.max(1);
    // Blocks in flight: two per worker plus two, so workers stay busy while
    // the writer holds finished blocks back for order (with one per worker,
    // 16 threads scaled 9.5x instead of 10-11x over one). Memory is about
    // this many blocks (input plus outputs).
    let in_flight = threads * 2 + 2;
    let (tickets_tx, tickets_rx) = bounded::<()>(in_flight);
    for _ in 0..in_flight {
        let _ = tickets_tx.send(());
    }
    let (blocks_tx, blocks_rx) = bounded::<Numbered>(in_flight);
    let (done_tx, done_rx) = bounded::<(u64, u64, B)>(in_flight);
    // Folded blocks' buffers, back to the reader: each is zero-filled once,
    // when first made, not for every megabyte read.
    let (spare_tx, spare_rx) = bounded::<Vec<u8>>(in_flight);

    std::thread::scope(|scope| {
        let reader =
            scope.spawn(move || read_blocks(input, shape, &tickets_rx, &blocks_tx, &spare_rx));
        for _ in 0..threads {
            let blocks_rx = blocks_rx.clone();
            let done_tx = done_tx.clone();
            let spare_tx = spare_tx.clone();
            let new_block = &new_block;
            scope.spawn(move || {
                for b in blocks_rx {
                    let mut fold = new_block();
                    let n = fold_block(&b, shape.max_line, &mut fold);
                    if let Block::Lines { bytes, .. } = b.block {
                        let _ = spare_tx.try_send(bytes);
                    }
                    if done_tx.send((b.seq, n, fold)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(spare_tx);
        drop(done_tx);
        drop(blocks_rx);

        let written = write_in_order(&done_rx, &tickets_tx, progress, &mut sink);
        // Unblock the stages if the sink failed early: dropping the
        // receivers makes their sends fail and the threads end.
        drop(done_rx);
        drop(tickets_tx);
        let read = reader.join().unwrap_or_else(|_| {
            Err(PipelineError::Read {
                line: 0,
                source: io::Error::other("reader thread panicked"),
            })
        });
        let lines = written?;
        read?;
        Ok(lines)
    })
}

fn write_in_order<B, E>(
    done: &Receiver<(u64, u64, B)>,
    tickets: &Sender<()>,
    progress: &Progress,
    sink: &mut impl FnMut(B) -> Result<(), E>,
) -> Result<u64, PipelineError<E>> {
    let mut waiting: BTreeMap<u64, (u64, B)> = BTreeMap::new();
    let mut next = 0u64;
    let mut lines = 0u64;
    for (seq, n, fold) in done {
        waiting.insert(seq, (n, fold));
        while let Some((n, fold)) = waiting.remove(&next) {
            sink(fold).map_err(PipelineError::Sink)?;
            lines += n;
            progress.lines.fetch_add(n, Ordering::Relaxed);
            next += 1;
            let _ = tickets.send(());
        }
    }
    Ok(lines)
}

/// The index of the `\n` that ends the line starting `text`, and where a
/// `\r` before it may end the line too (past a framed value's header,
/// whose id bytes may be either).
fn line_end(text: &[u8]) -> Option<(usize, usize)> {
    let from = header_bytes(text);
    memchr::memchr(b'\n', &text[from..]).map(|i| (from + i, from))
}

/// Where the whole lines at the start of `buf` end, and how many they are.
fn whole_lines(buf: &[u8]) -> (usize, u64) {
    // No line of a JSON text holds byte 0x00: the last newline ends the
    // whole lines, found from the end.
    if memchr::memchr(0, buf).is_none() {
        let cut = memchr::memrchr(b'\n', buf).map_or(0, |i| i + 1);
        return (cut, memchr::memchr_iter(b'\n', &buf[..cut]).count() as u64);
    }
    let (mut cut, mut lines) = (0, 0);
    while let Some((end, _)) = line_end(&buf[cut..]) {
        cut += end + 1;
        lines += 1;
    }
    (cut, lines)
}

/// Feeds a block's lines to `fold`, those longer than `max_line` as
/// [`Line::TooLong`]; returns how many there were.
fn fold_block(b: &Numbered, max_line: usize, fold: &mut impl Fold) -> u64 {
    match &b.block {
        Block::TooLong {
            len,
            sha256,
            preview,
        } => {
            fold.line(
                b.first_line,
                Line::TooLong {
                    len: *len,
                    sha256: *sha256,
                    preview,
                },
            );
            1
        }
        Block::Lines { bytes, len } => {
            let mut line = b.first_line;
            let mut rest: &[u8] = &bytes[..*len];
            while !rest.is_empty() {
                // `\r\n` ends a line; a `\r` at the very end of the input
                // without `\n` is data.
                let (l, next) = match line_end(rest) {
                    Some((i, from)) if i > from && rest[i - 1] == b'\r' => {
                        (&rest[..i - 1], &rest[i + 1..])
                    }
                    Some((i, _)) => (&rest[..i], &rest[i + 1..]),
                    None => (rest, &rest[rest.len()..]),
                };
                // A line over the limit shares its block with the lines
                // around it: split out, each would cost a hand-off between
                // threads.
                let l = if l.len() > max_line {
                    Line::too_long(l)
                } else {
                    Line::Whole(l)
                };
                fold.line(line, l);
                line += 1;
                rest = next;
            }
            line - b.first_line
        }
    }
}

/// The input with bytes pushed back in front of it.
struct Source<R> {
    input: R,
    carry: Vec<u8>,
}

impl<R: Read> Source<R> {
    /// Reads until `buf` is full or the input ends. An error comes with
    /// the number of bytes read into `buf` before it, so the line it broke
    /// can be named.
    fn read_full(&mut self, buf: &mut [u8]) -> Result<usize, (usize, io::Error)> {
        let mut n = self.carry.len().min(buf.len());
        buf[..n].copy_from_slice(&self.carry[..n]);
        self.carry.drain(..n);
        while n < buf.len() {
            match self.input.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err((n, e)),
            }
        }
        Ok(n)
    }

    fn unread(&mut self, bytes: &[u8]) {
        self.carry.splice(0..0, bytes.iter().copied());
    }
}

/// The reader: fills blocks of whole lines; streams over too-long lines.
fn read_blocks<R: Read, E>(
    input: R,
    shape: Shape,
    tickets: &Receiver<()>,
    blocks: &Sender<Numbered>,
    spare: &Receiver<Vec<u8>>,
) -> Result<(), PipelineError<E>> {
    let (max_line, block) = (shape.max_line, shape.block.max(1));
    let mut src = Source {
        input,
        carry: Vec::new(),
    };
    let mut seq = 0u64;
    let mut line = 0u64;
    // Bytes read but not yet sent (the start of an unfinished line) are
    // `buf[..filled]`; the rest of `buf` is room to read into, its bytes
    // initialised but of no meaning.
    let mut buf: Vec<u8> = Vec::with_capacity(block * 2);
    let mut filled = 0;
    // Sends a block, once a ticket says there is room for it.
    let mut send = |block: Block, lines: u64, line: &mut u64| -> bool {
        let ok = blocks
            .send(Numbered {
                seq,
                first_line: *line,
                block,
            })
            .is_ok();
        seq += 1;
        *line += lines;
        ok
    };
    let read_err = |line: u64, source| PipelineError::Read {
        line: line + 1,
        source,
    };
    loop {
        let start = filled;
        if buf.len() < start + block {
            buf.resize(start + block, 0);
        }
        // A stream that breaks mid-block (a cut or corrupt gzip file)
        // names the first line it did not deliver whole.
        let n = src
            .read_full(&mut buf[start..start + block])
            .map_err(|(n, e)| {
                let whole = whole_lines(&buf[..start + n]).1;
                read_err(line + whole, e)
            })?;
        filled = start + n;
        let eof = n == 0;

        // Send every whole line (at the end, the last one without its
        // newline too); keep the unfinished tail.
        let (mut cut, mut lines) = whole_lines(&buf[..filled]);
        if eof && cut < filled {
            (cut, lines) = (filled, lines + 1);
        }
        if cut > 0 {
            if tickets.recv().is_err() {
                return Ok(());
            }
            // The tail moves to the front of a buffer back from the
            // workers (the block whose ticket came back has handed its
            // buffer back), or of a new one.
            let tail = filled - cut;
            let mut next = spare
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(tail + block));
            if next.len() < tail {
                next.resize(tail, 0);
            }
            next[..tail].copy_from_slice(&buf[cut..filled]);
            let bytes = std::mem::replace(&mut buf, next);
            filled = tail;
            if !send(Block::Lines { bytes, len: cut }, lines, &mut line) {
                return Ok(());
            }
        }
        if eof {
            return Ok(());
        }
        // (+1: a final `\r` may yet turn out to be half of a `\r\n`.)
        if filled > max_line + 1 {
            // An unfinished line already past the limit: stream the rest of
            // it through the digest without keeping it.
            buf.truncate(filled);
            filled = 0;
            let (len, sha256, preview) = drain_long_line(&mut src, std::mem::take(&mut buf), block)
                .map_err(|e| read_err(line, e))?;
            let block = Block::TooLong {
                len,
                sha256,
                preview,
            };
            if tickets.recv().is_err() || !send(block, 1, &mut line) {
                return Ok(());
            }
        }
    }
}

/// Consumes a too-long line whose first bytes are `head`, up to and
/// including its newline (or the end of input). Returns its length and
/// SHA-256 without the `\n` / `\r\n`, and a preview.
fn drain_long_line<R: Read>(
    src: &mut Source<R>,
    head: Vec<u8>,
    block: usize,
) -> io::Result<(u64, [u8; 32], Vec<u8>)> {
    let mut d = LineDigest::default();
    // A framed value's header ends nothing, neither as `\n` nor as `\r`;
    // with a limit shorter than the header, part of it is still to come.
    let in_head = header_bytes(&head);
    let mut header_left = if in_head > 0 {
        SCHEMA_REGISTRY_HEADER_BYTES - in_head
    } else {
        0
    };
    d.take(&head[..in_head]);
    d.feed(&head[in_head..]);
    let mut chunk = vec![0u8; block];
    loop {
        let n = src.read_full(&mut chunk).map_err(|(_, e)| e)?;
        if n == 0 {
            break;
        }
        let skip = header_left.min(n);
        header_left -= skip;
        d.take(&chunk[..skip]);
        if let Some(i) = memchr::memchr(b'\n', &chunk[skip..n]).map(|i| skip + i) {
            d.feed(&chunk[skip..i]);
            // The newline ends the line: a held `\r` was its `\r\n`.
            d.held_cr = false;
            src.unread(&chunk[i + 1..n]);
            break;
        }
        d.feed(&chunk[skip..n]);
    }
    Ok(d.finish())
}

/// SHA-256 and length of a line fed in pieces, without its line ending.
#[derive(Default)]
struct LineDigest {
    hasher: Sha256,
    len: u64,
    /// A trailing `\r` is part of the line ending only if `\n` follows it,
    /// so one is held back until the next byte is known.
    held_cr: bool,
    preview: Vec<u8>,
}

impl LineDigest {
    fn take(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.len += bytes.len() as u64;
        let room = PREVIEW - self.preview.len();
        self.preview
            .extend_from_slice(&bytes[..room.min(bytes.len())]);
    }

    fn feed(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        if self.held_cr {
            self.take(b"\r");
        }
        let (body, cr) = match chunk.strip_suffix(b"\r") {
            Some(b) => (b, true),
            None => (chunk, false),
        };
        self.take(body);
        self.held_cr = cr;
    }

    fn finish(mut self) -> (u64, [u8; 32], Vec<u8>) {
        if self.held_cr {
            self.take(b"\r");
        }
        (self.len, self.hasher.finalize().into(), self.preview)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzzing::{Cutting, Record, cut_lines, expected_records};
    use proptest::prelude::*;

    /// Line indices seen, for tests that only count.
    #[derive(Default)]
    struct Indices(Vec<u64>);

    impl Fold for Indices {
        fn line(&mut self, i: u64, _: Line<'_>) {
            self.0.push(i);
        }
    }

    fn collect(input: &[u8], shape: Shape) -> Vec<Record> {
        let cutting = Cutting {
            max_line: shape.max_line,
            block: shape.block,
            threads: shape.threads,
        };
        let (records, error) = cut_lines(input, cutting);
        assert_eq!(error, None);
        records
    }

    proptest! {
        #[test]
        fn lines_match_the_oracle_at_any_block_size(
            input in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b'a'), Just(0u8), any::<u8>()], 0..400),
            block in 1usize..40,
            max_line in 1usize..30,
            threads in 1usize..4,
        ) {
            let shape = Shape { threads, max_line, block };
            prop_assert_eq!(collect(&input, shape), expected_records(&input, max_line));
        }
    }

    #[test]
    fn a_framed_value_is_one_line_whatever_bytes_its_schema_id_holds() {
        // Ids 10 and 266 hold byte 0x0A, 0x0D0A0D0A a `\r\n` twice; kcat
        // ends each value with a newline.
        let values: Vec<Vec<u8>> = [10u32, 266, 0x0d0a_0d0a, 7]
            .iter()
            .map(|id| crate::core::wire::framed(*id, br#"{"answer":"a"}"#))
            .chain([
                b"{\"plain\":1}".to_vec(),
                crate::core::wire::framed(10, b""),
            ])
            .collect();
        let mut input = Vec::new();
        for v in &values {
            input.extend_from_slice(v);
            input.extend_from_slice(b"\r\n");
        }
        let want: Vec<Record> = values
            .iter()
            .enumerate()
            .map(|(i, v)| Record::Whole(i as u64, v.clone()))
            .collect();
        for block in 1..input.len() + 2 {
            for max_line in [3, 1024] {
                let shape = Shape {
                    threads: 2,
                    max_line,
                    block,
                };
                let got = collect(&input, shape);
                assert_eq!(got, expected_records(&input, max_line), "block {block}");
                if max_line == 1024 {
                    assert_eq!(got, want, "block {block}");
                }
            }
        }
    }

    #[test]
    fn a_huge_line_is_streamed_not_held() {
        // 8 MiB line between two normal ones; blocks of 64 KiB, limit 1 KiB:
        // the reader never holds more than a block plus the limit.
        let mut input = b"first\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 8 << 20));
        input.extend_from_slice(b"\r\nlast");
        let got = collect(
            &input,
            Shape {
                threads: 2,
                max_line: 1024,
                block: 64 << 10,
            },
        );
        assert_eq!(got, expected_records(&input, 1024));
        assert!(
            matches!(&got[1], Record::TooLong { index: 1, len, preview, .. } if *len == 8 << 20 && preview.len() == PREVIEW)
        );
    }

    #[test]
    fn lines_over_the_limit_share_their_block_with_the_lines_around_them() {
        // 1,000 lines over the limit, between short ones, in one read: one
        // block goes to the workers, not one per long line (a hand-off
        // between threads each).
        let input: Vec<u8> = (0..1000)
            .flat_map(|i| format!("{}\nok\r\n", "x".repeat(20 + i % 7)).into_bytes())
            .collect();
        let shape = Shape {
            threads: 2,
            max_line: 10,
            block: 1 << 20,
        };
        let blocks = AtomicU64::new(0);
        let mut got = Vec::new();
        run(
            &input[..],
            shape,
            &Progress::default(),
            || {
                blocks.fetch_add(1, Ordering::Relaxed);
                Indices::default()
            },
            |b| {
                got.extend(b.0);
                Ok::<(), ()>(())
            },
        )
        .unwrap();
        assert_eq!(got, (0..2000).collect::<Vec<u64>>());
        assert_eq!(blocks.into_inner(), 1);
        assert_eq!(collect(&input, shape), expected_records(&input, 10));
    }

    #[test]
    fn results_come_back_in_input_order_with_many_threads() {
        let input: Vec<u8> = (0..20_000)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let got = collect(
            &input,
            Shape {
                threads: 8,
                max_line: 100,
                block: 97,
            },
        );
        assert_eq!(got.len(), 20_000);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(g, &Record::Whole(i as u64, i.to_string().into_bytes()));
        }
    }

    #[test]
    fn a_failing_sink_stops_the_run_with_its_error() {
        let input: Vec<u8> = (0..10_000)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let mut seen = 0;
        let r = run(
            &input[..],
            Shape {
                threads: 4,
                max_line: 100,
                block: 64,
            },
            &Progress::default(),
            Indices::default,
            |b| {
                for i in b.0 {
                    seen += 1;
                    if i == 500 {
                        return Err("disk full");
                    }
                }
                Ok(())
            },
        );
        assert!(matches!(r, Err(PipelineError::Sink("disk full"))));
        assert_eq!(seen, 501);
    }

    #[test]
    fn a_read_error_names_the_line() {
        let line_of_error = |input: Box<dyn Read + Send>, block: usize| {
            let r = run(
                input,
                Shape {
                    threads: 2,
                    max_line: 1000.min(block * 10),
                    block,
                },
                &Progress::default(),
                Indices::default,
                |_| Ok::<(), ()>(()),
            );
            match r {
                Err(PipelineError::Read { line, .. }) => line,
                other => panic!("{other:?}"),
            }
        };
        struct Broken(usize);
        impl Read for Broken {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::Error::other("device gone"));
                }
                self.0 -= 1;
                buf[0] = b'\n';
                Ok(1)
            }
        }
        assert_eq!(line_of_error(Box::new(Broken(3)), 1), 4);
        // Lines read whole into a block before the error count too.
        struct Cut(bool);
        impl Read for Cut {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if std::mem::replace(&mut self.0, true) {
                    return Err(io::Error::other("incomplete stream"));
                }
                buf[..7].copy_from_slice(b"a\nb\nc\nd");
                Ok(7)
            }
        }
        assert_eq!(line_of_error(Box::new(Cut(false)), 1000), 4);
    }
}
