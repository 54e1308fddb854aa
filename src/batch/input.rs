//! How the commands that read a JSON Lines file (`check`, `eval`,
//! `produce --file`, `audit verify`) open it: a path or `-` for standard input, plain or
//! compressed with gzip or zstd, told by its first bytes rather than its
//! name (a pipe has no name), with a UTF-8 byte order mark skipped.
//! A zstd stream may open with a skippable frame, as `pzstd`'s do.
//! Formats recognised but not read (xz, bzip2, zip, lz4, UTF-16 text) are
//! refused with the command that unpacks or converts them, instead of
//! being read as lines of garbage.
//!
//! Must not parse records: it hands over a byte stream, and reads a line at
//! a time only with a bound on what it keeps.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::InputError;
use crate::core::wire::{SCHEMA_REGISTRY_HEADER_BYTES, SCHEMA_REGISTRY_MAGIC};

/// How an input's bytes are packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    Plain,
    Gzip,
    Zstd,
}

/// An opened input, ready to be read as lines.
pub struct Input {
    pub reader: Box<dyn Read + Send>,
    /// The file's name without its directories, or `stdin`.
    pub name: String,
    /// The file's size, when known (not for standard input); compressed,
    /// when the file is.
    pub size: Option<u64>,
    /// How many bytes have been read from the file so far, before
    /// unpacking: measured against `size`, the share of the input done.
    pub read: Arc<AtomicU64>,
    pub packing: Packing,
    /// The file's device and inode (not for standard input): two paths to
    /// one file have the same.
    pub file_id: Option<(u64, u64)>,
}

/// A reader that counts the bytes read through it.
struct Counted<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A reader that stays at its end once it has reached it. The end of a
/// terminal's input (Ctrl-D) is one read of 0 bytes, not a lasting state:
/// read again, the terminal waits for more typing. The readers here look
/// past an end (sniffing the packing, filling a block), which would have
/// the user press Ctrl-D two or three times.
struct Fused<R> {
    inner: R,
    ended: bool,
}

impl<R> Fused<R> {
    fn new(inner: R) -> Fused<R> {
        Fused {
            inner,
            ended: false,
        }
    }
}

impl<R: Read> Read for Fused<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ended {
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        // A read into no room says 0 without being the end.
        self.ended = n == 0 && !buf.is_empty();
        Ok(n)
    }
}

/// The first bytes of formats this module refuses, with their names and
/// the command that writes them out as UTF-8 JSON Lines. UTF-16 is told by
/// its byte order mark, which is never UTF-8 (Windows PowerShell 5 writes
/// text files so with `>`).
const REFUSED: [(&[u8], &str, &str); 8] = [
    (b"\xFD7zXZ\x00", "xz-compressed", "xz -dc"),
    (b"BZh", "bzip2-compressed", "bzip2 -dc"),
    (b"PK\x03\x04", "zip-compressed", "unzip -p"),
    // An empty zip archive: its end record alone.
    (b"PK\x05\x06", "zip-compressed", "unzip -p"),
    (b"\x04\x22\x4D\x18", "lz4-compressed", "lz4 -dc"),
    // lz4's legacy frame (`lz4 -l`).
    (b"\x02\x21\x4C\x18", "lz4-compressed", "lz4 -dc"),
    (b"\xFF\xFE", "UTF-16 text", "iconv -f UTF-16 -t UTF-8"),
    (b"\xFE\xFF", "UTF-16 text", "iconv -f UTF-16 -t UTF-8"),
];
const GZIP: &[u8] = b"\x1F\x8B\x08";
const ZSTD: &[u8] = b"\x28\xB5\x2F\xFD";
/// The last three bytes of a zstd skippable frame's magic number (its
/// first byte is 0x50 to 0x5F). `pzstd` writes one before every frame, so
/// its files open with one.
const ZSTD_SKIPPABLE: &[u8] = b"\x2A\x4D\x18";
const BOM: &[u8] = b"\xEF\xBB\xBF";
/// A bzip2 stream is `BZh`, a block size digit, then this block magic: a
/// JSON Lines file that happens to open with `BZh` is still read.
const BZIP2_BLOCK: &[u8] = b"\x31\x41\x59\x26\x53\x59";
/// The end-of-stream magic that follows the header of an empty bzip2 stream.
const BZIP2_END: &[u8] = b"\x17\x72\x45\x38\x50\x90";

/// Whether opening `path` again reads it from its start: a regular file
/// does; standard input (`-`), a pipe or a FIFO does not.
pub fn reopens(path: &Path) -> bool {
    path.as_os_str() != "-" && path.metadata().is_ok_and(|m| m.is_file())
}

/// Opens `path` (`-`: standard input) for reading as JSON Lines.
pub fn open(path: &Path) -> Result<Input, InputError> {
    open_counted(path, Arc::new(AtomicU64::new(0)))
}

/// [`open`], adding the bytes read from the file to `read` (shared by the
/// inputs of one run, for one measure of its progress).
pub fn open_counted(path: &Path, read: Arc<AtomicU64>) -> Result<Input, InputError> {
    use std::os::unix::fs::MetadataExt;
    let (reader, name, size, file_id): (Box<dyn Read + Send>, String, Option<u64>, _) =
        if path.as_os_str() == "-" {
            (
                Box::new(Fused::new(io::stdin())),
                "stdin".into(),
                None,
                None,
            )
        } else {
            let f = File::open(path).map_err(|source| InputError::Open {
                path: path.to_path_buf(),
                source,
            })?;
            let meta = f.metadata().ok();
            if meta.as_ref().is_some_and(|m| m.is_dir()) {
                return Err(InputError::Open {
                    path: path.to_path_buf(),
                    source: io::Error::new(
                        io::ErrorKind::IsADirectory,
                        "it is a directory; name a JSON Lines file in it",
                    ),
                });
            }
            let size = meta.as_ref().map(|m| m.len());
            let file_id = meta.map(|m| (m.dev(), m.ino()));
            let name = path.file_name().unwrap_or(path.as_os_str());
            (
                Box::new(f),
                name.to_string_lossy().into_owned(),
                size,
                file_id,
            )
        };
    let counted = Counted {
        inner: reader,
        read: read.clone(),
    };
    let (reader, packing) = unpacked(Box::new(counted), path)?;
    Ok(Input {
        reader,
        name,
        size,
        read,
        packing,
        file_id,
    })
}

/// Standard input's device and inode, to tell `-` and a path to the same
/// file apart from two inputs (`/dev/stdin`, the file it is redirected
/// from): read as two, a pipe's bytes would be split between them.
pub fn stdin_file_id() -> Option<(u64, u64)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let fd = io::stdin().as_fd().try_clone_to_owned().ok()?;
    let meta = File::from(fd).metadata().ok()?;
    Some((meta.dev(), meta.ino()))
}

/// The stream `input` holds, unpacked when it is gzip or zstd, its byte
/// order mark skipped. `path` names it in errors.
pub fn unpacked(
    mut input: Box<dyn Read + Send>,
    path: &Path,
) -> Result<(Box<dyn Read + Send>, Packing), InputError> {
    let read = |source| InputError::Read { line: 1, source };
    let head = read_head(&mut input, 10).map_err(read)?;
    for (magic, format, command) in REFUSED {
        let bzip2_block = format != "bzip2-compressed"
            || [BZIP2_BLOCK, BZIP2_END]
                .map(Some)
                .contains(&head.get(4..10));
        if head.starts_with(magic) && bzip2_block {
            return Err(InputError::Packed {
                path: path.to_path_buf(),
                format,
                command,
            });
        }
    }
    let whole = io::Cursor::new(head.clone()).chain(input);
    let (inner, packing): (Box<dyn Read + Send>, Packing) = if head.starts_with(GZIP) {
        (
            Box::new(GzipMembers::new(io::BufReader::new(whole))),
            Packing::Gzip,
        )
    } else if head.starts_with(ZSTD) || is_skippable(&head) {
        let z = zstd::stream::read::Decoder::new(whole).map_err(read)?;
        (Box::new(z), Packing::Zstd)
    } else {
        (Box::new(whole), Packing::Plain)
    };
    Ok((skip_bom(inner).map_err(read)?, packing))
}

/// A gzip stream read as `gzip -d` reads it: several members one after
/// another (`cat a.gz b.gz`) are one stream, and zero bytes after the last
/// member are padding (what a tape or a block device adds). Other bytes
/// there are an error that says so, where a decoder that took them for the
/// next member would report a bad header.
struct GzipMembers<R: io::BufRead> {
    member: Option<flate2::bufread::GzDecoder<R>>,
    /// Members read to their end.
    done: u64,
}

impl<R: io::BufRead> GzipMembers<R> {
    fn new(input: R) -> Self {
        GzipMembers {
            member: Some(flate2::bufread::GzDecoder::new(input)),
            done: 0,
        }
    }
}

impl<R: io::BufRead> Read for GzipMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(member) = self.member.as_mut() else {
                return Ok(0);
            };
            let n = member.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            let Some(member) = self.member.take() else {
                return Ok(0);
            };
            self.done += 1;
            let mut rest = member.into_inner();
            let next = filled(&mut rest)?.first().copied();
            match next {
                None => return Ok(0),
                Some(0) => return zero_padding(&mut rest, self.done).map(|()| 0),
                // The next member's header is its decoder's to judge.
                Some(b) if b == GZIP[0] => {
                    self.member = Some(flate2::bufread::GzDecoder::new(rest));
                }
                Some(other) => return Err(trailing(self.done, other)),
            }
        }
    }
}

/// Reads `rest` to its end, every byte zero, or fails naming the first
/// other byte.
fn zero_padding(rest: &mut impl io::BufRead, members: u64) -> io::Result<()> {
    loop {
        let b = filled(rest)?;
        if b.is_empty() {
            return Ok(());
        }
        if let Some(&other) = b.iter().find(|&&x| x != 0) {
            return Err(trailing(members, other));
        }
        let n = b.len();
        rest.consume(n);
    }
}

/// `r`'s buffered bytes, read again when a signal interrupted the read.
fn filled(r: &mut impl io::BufRead) -> io::Result<&[u8]> {
    loop {
        match r.fill_buf() {
            // Borrowed again: returning the first borrow from inside the
            // loop would hold it across the retry.
            Ok(_) => return r.fill_buf(),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn trailing(members: u64, byte: u8) -> io::Error {
    let after = if members == 1 {
        "the gzip stream".to_string()
    } else {
        format!("gzip member {members}")
    };
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "bytes after {after} are neither gzip nor zero padding (byte 0x{byte:02X}): \
             trailing garbage, which `gzip -t` reports too; cut it off or compress the lines again"
        ),
    )
}

/// Reads one line into `line` without its newline, keeping at most `cap`
/// bytes of it; returns the line's whole length (`None` at the end). A line
/// longer than `cap` is read to its end and dropped.
pub fn read_line_bounded(
    reader: &mut impl io::BufRead,
    line: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Option<u64>> {
    read_bounded(reader, line, cap, false)
}

/// [`read_line_bounded`] for a file of record values, as `check` reads
/// one: a line that starts with byte 0x00 is a Schema Registry framed
/// value, and no byte of its five-byte header ends it (a schema id such as
/// 10 or 266 holds byte 0x0A).
pub fn read_value_line_bounded(
    reader: &mut impl io::BufRead,
    line: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Option<u64>> {
    read_bounded(reader, line, cap, true)
}

fn read_bounded(
    reader: &mut impl io::BufRead,
    line: &mut Vec<u8>,
    cap: usize,
    values: bool,
) -> io::Result<Option<u64>> {
    let mut len = 0u64;
    let mut any = false;
    // Bytes still to come of the line's header, where a newline is data.
    let mut header = 0usize;
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(any.then_some(len));
        }
        if !any && values && buf[0] == SCHEMA_REGISTRY_MAGIC {
            header = SCHEMA_REGISTRY_HEADER_BYTES;
        }
        any = true;
        let from = header.min(buf.len());
        header -= from;
        let (chunk, done) = match memchr::memchr(b'\n', &buf[from..]) {
            Some(i) => (&buf[..from + i], Some(from + i + 1)),
            None => (buf, None),
        };
        len += chunk.len() as u64;
        if len <= cap as u64 {
            line.extend_from_slice(chunk);
        } else {
            line.clear();
        }
        let used = done.unwrap_or(buf.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(Some(len));
        }
    }
}

fn is_skippable(head: &[u8]) -> bool {
    head.first().is_some_and(|b| b & 0xF0 == 0x50) && head.get(1..4) == Some(ZSTD_SKIPPABLE)
}

/// Up to `n` first bytes of `input` (fewer only at its end).
fn read_head(input: &mut dyn Read, n: usize) -> io::Result<Vec<u8>> {
    let mut head = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match input.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(got);
    Ok(head)
}

fn skip_bom(mut input: Box<dyn Read + Send>) -> io::Result<Box<dyn Read + Send>> {
    let head = read_head(&mut input, BOM.len())?;
    let kept = if head == BOM { Vec::new() } else { head };
    Ok(Box::new(io::Cursor::new(kept).chain(input)))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const LINES: &[u8] = b"{\"a\":1}\n{\"b\":2}\n";

    /// A terminal: each chunk is what one read returns, an empty chunk
    /// being one Ctrl-D; reading past the script is waiting forever.
    struct Terminal(std::collections::VecDeque<&'static [u8]>);

    impl Read for Terminal {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let chunk = self
                .0
                .pop_front()
                .expect("read past Ctrl-D: a terminal would wait here for more typing");
            let n = chunk.len().min(buf.len());
            buf[..n].copy_from_slice(&chunk[..n]);
            if n < chunk.len() {
                self.0.push_front(&chunk[n..]);
            }
            Ok(n)
        }
    }

    #[test]
    fn one_ctrl_d_ends_what_a_terminal_types() {
        // Lines then Ctrl-D; Ctrl-D at once (an empty input), with typing
        // after it that must not be read.
        for (typed, read) in [
            (vec![LINES, b""], LINES),
            (vec![b"", b"{\"a\":1}\n"], &b""[..]),
        ] {
            let terminal = Terminal(typed.into_iter().collect());
            let (mut r, _) = unpacked(Box::new(Fused::new(terminal)), Path::new("-")).unwrap();
            let mut out = Vec::new();
            r.read_to_end(&mut out).unwrap();
            assert_eq!(out, read);
            // A block reader reads once more after the end.
            assert_eq!(r.read(&mut [0u8; 8]).unwrap(), 0);
        }
    }

    fn read_all(bytes: Vec<u8>) -> Result<(Vec<u8>, Packing), InputError> {
        let (mut r, p) = unpacked(Box::new(io::Cursor::new(bytes)), Path::new("in"))?;
        let mut out = Vec::new();
        r.read_to_end(&mut out)
            .map_err(|source| InputError::Read { line: 1, source })?;
        Ok((out, p))
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(bytes).unwrap();
        z.finish().unwrap()
    }

    #[test]
    fn plain_gzip_and_zstd_read_the_same_lines() {
        let mut bom = BOM.to_vec();
        bom.extend_from_slice(LINES);
        let cases = [
            (LINES.to_vec(), Packing::Plain),
            (bom.clone(), Packing::Plain),
            (gzip(LINES), Packing::Gzip),
            (gzip(&bom), Packing::Gzip),
            (zstd::encode_all(LINES, 1).unwrap(), Packing::Zstd),
            (Vec::new(), Packing::Plain),
            (b"{".to_vec(), Packing::Plain),
        ];
        for (i, (bytes, packing)) in cases.into_iter().enumerate() {
            let (out, p) = read_all(bytes).unwrap();
            assert_eq!(p, packing, "case {i}");
            let want: &[u8] = match i {
                5 => b"",
                6 => b"{",
                _ => LINES,
            };
            assert_eq!(out, want, "case {i}");
        }
    }

    #[test]
    fn a_byte_order_mark_is_dropped_and_nothing_else() {
        let read = |bytes: &[u8]| read_all(bytes.to_vec()).unwrap().0;
        assert_eq!(read(b"\xEF\xBB\xBF{}\n"), b"{}\n");
        assert_eq!(read(b"{}\n"), b"{}\n");
        assert_eq!(read(b"\xEF\xBB"), b"\xEF\xBB");
        // Only at the start.
        assert_eq!(read(b"a\xEF\xBB\xBF"), b"a\xEF\xBB\xBF");
    }

    #[test]
    fn lines_are_read_whole_up_to_the_cap_and_measured_past_it() {
        let text = b"ab\n\nabcd\nabcde\nxyz";
        // A tiny buffer, so lines span several fills.
        let mut r = io::BufReader::with_capacity(2, &text[..]);
        let mut got = Vec::new();
        let mut line = Vec::new();
        while let Some(len) = read_line_bounded(&mut r, &mut line, 4).unwrap() {
            got.push((len, String::from_utf8(line.clone()).unwrap()));
            line.clear();
        }
        let want = [(2, "ab"), (0, ""), (4, "abcd"), (5, ""), (3, "xyz")];
        assert_eq!(got, want.map(|(n, s)| (n, s.to_string())));
    }

    /// A line starting with byte 0x00 is a Schema Registry framed value:
    /// a newline among its first five bytes is a byte of its schema id
    /// (10, 266, ...), not the end of the line, as `check` reads it.
    #[test]
    fn a_framed_value_s_header_does_not_end_its_line() {
        let text = b"\x00\x00\x00\x00\x0a{\"a\":1}\n{}\n\x00\n\n\n\x00\n\n\x00\n";
        for fill in [1, 2, 3, 64] {
            let mut r = io::BufReader::with_capacity(fill, &text[..]);
            let mut got = Vec::new();
            let mut line = Vec::new();
            while let Some(len) = read_value_line_bounded(&mut r, &mut line, 64).unwrap() {
                got.push((len, line.clone()));
                line.clear();
            }
            let want: [(u64, &[u8]); 5] = [
                (12, b"\x00\x00\x00\x00\x0a{\"a\":1}"),
                (2, b"{}"),
                (5, b"\x00\n\n\n\x00"),
                (0, b""),
                (2, b"\x00\n"),
            ];
            assert_eq!(got, want.map(|(n, l)| (n, l.to_vec())), "fill {fill}");
        }
    }

    #[test]
    fn a_compressed_file_s_progress_is_counted_in_its_own_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.jsonl.gz");
        let packed = gzip(&LINES.repeat(1000));
        std::fs::write(&path, &packed).unwrap();
        let mut input = open(&path).unwrap();
        assert_eq!(
            (input.size, input.packing),
            (Some(packed.len() as u64), Packing::Gzip)
        );
        let mut out = Vec::new();
        input.reader.read_to_end(&mut out).unwrap();
        assert_eq!(out.len(), LINES.len() * 1000);
        assert_eq!(input.read.load(Ordering::Relaxed), packed.len() as u64);
    }

    #[test]
    fn a_directory_is_refused_at_open_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let Err(e) = open(dir.path()) else {
            panic!("a directory opened")
        };
        let msg = e.to_string();
        assert!(
            msg.starts_with("cannot open input") && msg.contains("it is a directory"),
            "{msg}"
        );
    }

    #[test]
    fn gzip_members_one_after_another_are_one_stream() {
        let mut two = gzip(b"{\"a\":1}\n");
        two.extend(gzip(b"{\"b\":2}\n"));
        assert_eq!(read_all(two).unwrap(), (LINES.to_vec(), Packing::Gzip));
    }

    #[test]
    fn zero_padding_after_gzip_is_read_as_gzip_reads_it_and_other_bytes_are_named() {
        let mut padded = gzip(b"{\"a\":1}\n");
        padded.extend(gzip(b"{\"b\":2}\n"));
        padded.extend([0u8; 20_000]);
        assert_eq!(
            read_all(padded.clone()).unwrap(),
            (LINES.to_vec(), Packing::Gzip)
        );
        for (tail, names) in [
            (&b"garbage\n"[..], "after gzip member 2"),
            (b"\0\0\0x", "(byte 0x78)"),
        ] {
            let mut bytes = padded.clone();
            bytes.truncate(padded.len() - 20_000);
            bytes.extend(tail);
            let e = read_all(bytes).unwrap_err().to_string();
            assert!(e.contains("neither gzip nor zero padding"), "{e}");
            assert!(e.contains(names), "{e}");
        }
        let mut one = gzip(LINES);
        one.push(b'x');
        let e = read_all(one).unwrap_err().to_string();
        assert!(e.contains("after the gzip stream"), "{e}");
    }

    #[test]
    fn a_zstd_stream_opening_with_a_skippable_frame_is_zstd() {
        // As pzstd writes: a skippable frame (magic 0x184D2A50, four bytes
        // of payload: the size of the frame after it) before every frame.
        let frame = zstd::encode_all(LINES, 1).unwrap();
        let mut bytes = b"\x50\x2A\x4D\x18\x04\x00\x00\x00".to_vec();
        bytes.extend((frame.len() as u32).to_le_bytes());
        bytes.extend(&frame);
        assert_eq!(read_all(bytes).unwrap(), (LINES.to_vec(), Packing::Zstd));
        // The other fifteen skippable magic numbers, and no payload.
        let only = b"\x5F\x2A\x4D\x18\x00\x00\x00\x00".to_vec();
        assert_eq!(read_all(only).unwrap(), (Vec::new(), Packing::Zstd));
    }

    #[test]
    fn a_cut_or_corrupt_stream_is_a_read_error_not_lines() {
        let z = gzip(LINES);
        let cut = z[..z.len() - 6].to_vec();
        let mut bad = z.clone();
        let mid = bad.len() / 2;
        bad[mid] ^= 0xFF;
        let zs = zstd::encode_all(LINES, 1).unwrap();
        let zcut = zs[..zs.len() - 3].to_vec();
        for (i, bytes) in [cut, bad, zcut].into_iter().enumerate() {
            assert!(
                matches!(read_all(bytes), Err(InputError::Read { .. })),
                "case {i}"
            );
        }
    }

    /// Pieces of text that `check`'s reading treats specially: line ends,
    /// a byte order mark, the magic numbers of packings, NUL, bytes that
    /// are not UTF-8, a record, runs longer than the small record limits.
    fn text() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            4 => Just(b"\n".to_vec()),
            2 => Just(b"\r\n".to_vec()),
            2 => Just(b"\r".to_vec()),
            1 => Just(BOM.to_vec()),
            1 => Just(GZIP.to_vec()),
            1 => Just(ZSTD.to_vec()),
            1 => Just(b"BZh91AY&SY".to_vec()),
            1 => Just(b"\0".to_vec()),
            1 => Just(b"\xFF\xC3".to_vec()),
            2 => Just(br#"{"request_id":"r","answer":"a"}"#.to_vec()),
            2 => (0usize..300).prop_map(|n| vec![b'a'; n]),
            2 => proptest::collection::vec(any::<u8>(), 0..12),
        ];
        proptest::collection::vec(piece, 0..24).prop_map(|p| p.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(192))]

        /// The fuzz target `check_input` on generated texts: plain, in
        /// gzip and zstd, cut and corrupted, every line one record with its
        /// number, none lost, merged or made up.
        #[test]
        fn any_text_reads_as_its_lines_plain_packed_cut_or_corrupt(
            head in proptest::prelude::any::<[u8; crate::fuzzing::INPUT_HEAD]>(),
            text in text(),
        ) {
            let mut head = head;
            // Texts repeated past 64 KiB, one case in sixteen: they take most
            // of the time in a debug build.
            if head[1] & 0xF0 != 0 {
                head[0] &= 0x7F;
            }
            crate::fuzzing::check_input(&[&head[..], &text].concat());
        }
    }

    #[test]
    fn formats_not_read_are_refused_by_name_with_the_unpacking_command() {
        let cases: [(&[u8], &str); 9] = [
            (b"\xFD7zXZ\x00\x00\x04", "xz -dc"),
            (b"BZh91AY&SY\x00\x00", "bzip2 -dc"),
            (b"PK\x03\x04\x14\x00", "unzip -p"),
            (b"\x04\x22\x4D\x18\x64\x40", "lz4 -dc"),
            (b"\x02\x21\x4C\x18\x00\x00", "lz4 -dc"),
            (b"PK\x05\x06\x00\x00", "unzip -p"),
            (b"BZh9\x17\x72\x45\x38\x50\x90", "bzip2 -dc"),
            (b"\xFF\xFE{\x00\"\x00", "iconv -f UTF-16 -t UTF-8"),
            (b"\xFE\xFF\x00{\x00\"", "iconv -f UTF-16 -t UTF-8"),
        ];
        for (bytes, command) in cases {
            let Err(e) = read_all(bytes.to_vec()) else {
                panic!("{command}: read")
            };
            let msg = e.to_string();
            assert!(msg.contains(command) && msg.contains("in"), "{msg}");
        }
        // Text that merely opens with the letters of bzip2's mark is text.
        let (out, p) = read_all(b"BZh is not a record\n".to_vec()).unwrap();
        assert_eq!(
            (out.as_slice(), p),
            (&b"BZh is not a record\n"[..], Packing::Plain)
        );
    }
}
