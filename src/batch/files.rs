//! Where `check` writes: its output files under `--out`, staged under
//! `.partial` names and renamed into place only when the run is complete;
//! the refusal to write over any file the run reads; and the placement of
//! each block of records at its offset in every output file.
//!
//! Must not validate or print: it only writes the bytes it is given.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use crate::cli::CheckArgs;
use crate::core::OutputRole;

use super::CheckError;

/// Suffix of an output file while it is written.
pub(crate) const PARTIAL: &str = ".partial";

pub(crate) fn partial(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(PARTIAL);
    s.into()
}

/// The outputs of a run, written under their `.partial` names and renamed
/// into place only when the run is complete, so a run that stops half-way
/// (disk full, killed) never leaves files that look like a finished run's,
/// and leaves a previous run's outputs as they were. `summary.json` goes
/// last: beside it, the other files are always the same run's. A run that
/// fails with an error removes its `.partial` files; a killed one leaves
/// them, recognisable by their names.
pub(crate) struct Staged {
    /// Final names, in the order they are put in place; `summary.json` last.
    files: Vec<PathBuf>,
    committed: bool,
}

impl Staged {
    pub(crate) fn new(out: &Path, report: Option<&Path>) -> Staged {
        let mut files: Vec<PathBuf> = OutputRole::ALL
            .iter()
            .map(|r| out.join(file_name(*r)))
            .collect();
        files.extend(report.map(Path::to_path_buf));
        files.push(out.join(SUMMARY));
        Staged {
            files,
            committed: false,
        }
    }

    /// The `.partial` names of the outputs, for a stop that cannot wait
    /// for this value to be dropped.
    pub(crate) fn partials(&self) -> Vec<PathBuf> {
        self.files.iter().map(|f| partial(f)).collect()
    }

    pub(crate) fn commit(mut self) -> Result<(), CheckError> {
        let rename = |to: &Path| {
            fs::rename(partial(to), to).map_err(|source| CheckError::Write {
                path: to.to_path_buf(),
                source,
            })
        };
        // The old summary goes first: until the new one is in place, the
        // directory has none, which says "not a finished run".
        let (summary, rest) = self.files.split_last().ok_or(CheckError::Flush)?;
        // A file cannot be renamed over a directory: found before anything
        // moves, so the previous run's outputs stay whole.
        if let Some(dir) = self.files.iter().find(|f| f.is_dir()) {
            return Err(CheckError::Write {
                path: dir.clone(),
                source: io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "a directory is in the way of this output",
                ),
            });
        }
        match fs::remove_file(summary) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(CheckError::Write {
                    path: summary.clone(),
                    source,
                });
            }
        }
        for f in rest {
            rename(f)?;
        }
        rename(summary)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            for f in &self.files {
                let _ = fs::remove_file(partial(f));
            }
        }
    }
}

pub(crate) const SUMMARY: &str = "summary.json";

/// `path` as the file system resolves it, to tell whether two paths name
/// one file: its longest existing ancestor canonicalized (symbolic links,
/// `..`), the rest appended with `.` and `..` applied by hand.
pub(crate) fn resolved(path: &Path) -> PathBuf {
    use std::path::Component;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let parts: Vec<Component<'_>> = abs.components().collect();
    for split in (1..=parts.len()).rev() {
        let head: PathBuf = parts[..split].iter().collect();
        if let Ok(mut out) = fs::canonicalize(&head) {
            for c in &parts[split..] {
                match c {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other),
                }
            }
            return out;
        }
    }
    abs
}

/// Whether two paths name one file: the same resolved path, or (hard
/// links) the same device and inode.
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if resolved(a) == resolved(b) {
        return true;
    }
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Every file the run writes, named for a message.
pub(crate) fn outputs(args: &CheckArgs) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let names = OutputRole::ALL
        .iter()
        .map(|r| file_name(*r))
        .chain([SUMMARY]);
    for name in names {
        let p = args.out.join(name);
        out.push((format!("the output {name} of --out"), partial(&p)));
        out.push((format!("the output {name} of --out"), p));
    }
    if let Some(r) = &args.report {
        out.push(("--report".to_string(), partial(r)));
        out.push(("--report".to_string(), r.clone()));
    }
    out
}

/// Refuses a run that would overwrite one of its own inputs (`inputs`:
/// what and where) or write two outputs to one file.
pub(crate) fn refuse_overwrites(
    args: &CheckArgs,
    inputs: &[(&str, &Path)],
) -> Result<(), CheckError> {
    let outs = outputs(args);
    let overwrite = |what: &str, path: &Path, (output, output_path): &(String, PathBuf)| {
        CheckError::Overwrite {
            what: what.to_string(),
            path: path.to_path_buf(),
            output: output.clone(),
            output_path: output_path.clone(),
        }
    };
    for (what, path) in inputs {
        if let Some(o) = outs.iter().find(|(_, o)| same_file(path, o)) {
            return Err(overwrite(what, path, o));
        }
    }
    if let Some(r) = &args.report
        && let Some(o) = outs
            .iter()
            .find(|(what, o)| what != "--report" && same_file(r, o))
    {
        return Err(overwrite("--report", r, o));
    }
    Ok(())
}

/// The file `check` writes an output role to, in `--out`.
pub(crate) fn file_name(role: OutputRole) -> &'static str {
    match role {
        OutputRole::Final => "final.jsonl",
        OutputRole::Retry => "retry.jsonl",
        OutputRole::Audit => "audit.jsonl",
        OutputRole::DeadLetter => "dead_letter.jsonl",
    }
}

/// The four output files. The in-order writer gives every block its byte
/// offsets in each file ([`Outputs::place`]); flush threads then copy the
/// blocks in at those offsets in parallel, so writing is not a one-core
/// step. (No fsync: like the serial writer before, `check` leaves
/// durability to the file system.)
pub(crate) struct Outputs {
    dir: PathBuf,
    /// Indexed by `OutputRole as usize` (ALL is in discriminant order).
    files: [File; 4],
}

impl Outputs {
    pub(crate) fn create(dir: &Path) -> Result<Outputs, CheckError> {
        if dir.exists() && !dir.is_dir() {
            return Err(CheckError::OutIsFile(dir.to_path_buf()));
        }
        fs::create_dir_all(dir).map_err(|source| CheckError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        let open = |role: OutputRole| -> Result<File, CheckError> {
            let path = partial(&dir.join(file_name(role)));
            File::create(&path).map_err(|source| CheckError::Write { path, source })
        };
        Ok(Outputs {
            dir: dir.to_path_buf(),
            files: [
                open(OutputRole::ALL[0])?,
                open(OutputRole::ALL[1])?,
                open(OutputRole::ALL[2])?,
                open(OutputRole::ALL[3])?,
            ],
        })
    }

    pub(crate) fn write_at(
        &self,
        role: OutputRole,
        at: u64,
        bytes: &[u8],
    ) -> Result<(), CheckError> {
        use std::os::unix::fs::FileExt;
        self.files[role as usize]
            .write_all_at(bytes, at)
            .map_err(|source| CheckError::Write {
                path: partial(&self.dir.join(file_name(role))),
                source,
            })
    }
}

/// Buffers handed to the kernel in one write, at most: Linux takes 1,024.
const WRITE_GROUP: usize = 512;

impl Outputs {
    /// Writes `bufs` one after another at `at`, a few hundred to a system
    /// call, without joining them into one buffer first.
    pub(crate) fn write_bufs_at(
        &self,
        role: OutputRole,
        mut at: u64,
        bufs: &[Vec<u8>],
    ) -> Result<(), CheckError> {
        let failed = |source| CheckError::Write {
            path: partial(&self.dir.join(file_name(role))),
            source,
        };
        let file = &self.files[role as usize];
        let mut slices = Vec::with_capacity(bufs.len().min(WRITE_GROUP));
        for group in bufs.chunks(WRITE_GROUP) {
            slices.clear();
            slices.extend(group.iter().map(|b| io::IoSlice::new(b)));
            let mut rest = &mut slices[..];
            while !rest.is_empty() {
                match rustix::io::pwritev(file, rest, at) {
                    Ok(0) => return Err(failed(io::ErrorKind::WriteZero.into())),
                    Ok(n) => {
                        at += n as u64;
                        io::IoSlice::advance_slices(&mut rest, n);
                    }
                    Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(failed(e.into())),
                }
            }
        }
        Ok(())
    }
}

/// Where the next bytes of each file go.
#[derive(Default)]
pub(crate) struct Layout {
    len: [u64; 4],
}

impl Layout {
    pub(crate) fn place(&mut self, role: OutputRole, n: usize) -> u64 {
        let at = self.len[role as usize];
        self.len[role as usize] += n as u64;
        at
    }
}

/// Bytes of a block to write at an offset: a range of the block's own
/// buffer for that file, or a seal line made by the writer.
pub(crate) enum Piece {
    Range(OutputRole, u64, std::ops::Range<usize>),
    Seal(u64, Vec<u8>),
    /// The block's final envelopes, one after another.
    Envelopes(u64),
}

pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CheckError> {
    fs::write(path, bytes).map_err(|source| CheckError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_written_one_after_another_past_a_system_call_s_share() {
        let dir = tempfile::tempdir().unwrap();
        let out = Outputs::create(dir.path()).unwrap();
        // More buffers than one call takes, of many lengths, after a
        // block already placed at the file's start.
        let bufs: Vec<Vec<u8>> = (0..WRITE_GROUP * 2 + 7)
            .map(|i| vec![b'a' + (i % 26) as u8; 1 + i % 700])
            .collect();
        out.write_at(OutputRole::Final, 0, b"head\n").unwrap();
        out.write_bufs_at(OutputRole::Final, 5, &bufs).unwrap();
        let written = fs::read(partial(&dir.path().join(file_name(OutputRole::Final)))).unwrap();
        assert_eq!(written, [b"head\n".to_vec(), bufs.concat()].concat());
    }
}
