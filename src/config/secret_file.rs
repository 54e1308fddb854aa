//! Reading the files a configuration names, and saying what is wrong with
//! one without showing a secret.
//!
//! A file is opened without blocking and read only when it is a regular
//! file (after symbolic links, so the files of a mounted Kubernetes Secret,
//! which are links, work): a FIFO would hold the start until something
//! writes to it, and a device such as `/dev/zero` never ends. It is read no
//! further than a limit the caller gives.
//!
//! The value of a key that names a file holding a secret (the SASL
//! password, the TLS key and its passphrase, the OIDC client secret, the
//! audit trail's pseudonym and signing keys) may be the secret itself,
//! typed where its path belongs. Such a value is shown in a message only as
//! far as it exists on this machine: a file that exists is named in full; of
//! a path that does not, only its longest leading part that is an existing
//! directory is shown, and the rest by its length.

use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Why a file could not be read.
#[derive(Debug)]
pub enum Why {
    /// Opening or reading it failed.
    Io(io::Error),
    /// It is something else than a regular file (this kind, e.g. "a FIFO").
    NotRegular(&'static str),
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Io(e) => write!(f, "cannot read it: {e}"),
            Why::NotRegular(kind) => write!(
                f,
                "it is {kind}, not a regular file (a file, or a symbolic link to one, such as a mounted Kubernetes Secret's)"
            ),
        }
    }
}

/// A file that could not be read, with what of its path exists.
#[derive(Debug)]
pub struct FileError {
    pub why: Why,
    /// Whether the path names something that exists on this machine.
    pub exists: bool,
    /// The longest leading part of the path that is an existing directory
    /// (`None`: no part of a relative path is one).
    pub existing_dir: Option<PathBuf>,
}

impl FileError {
    /// A file that does not exist and no part of whose path does (for tests
    /// that read from memory).
    pub fn missing() -> FileError {
        FileError {
            why: Why::Io(io::Error::new(
                io::ErrorKind::NotFound,
                "No such file or directory (os error 2)",
            )),
            exists: false,
            existing_dir: None,
        }
    }
}

/// Reads at most `limit` bytes of the file at `path`, which must be a
/// regular file; never blocks on a FIFO.
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let failed = |why: Why| FileError {
        why,
        exists: path.try_exists().unwrap_or(false),
        existing_dir: existing_dir(path),
    };
    let file = match open_nonblocking(path) {
        Ok(file) => file,
        // A socket cannot be opened at all; say what it is rather than
        // "No such device or address".
        Err(e) => {
            return Err(match std::fs::metadata(path) {
                Ok(m) if !m.is_file() => failed(Why::NotRegular(kind(&m.file_type()))),
                _ => failed(Why::Io(e)),
            });
        }
    };
    // The type of what was opened, not of what the path named a moment
    // before: the two can differ if the path is replaced in between.
    match file.metadata() {
        Ok(m) if m.is_file() => {}
        Ok(m) => return Err(failed(Why::NotRegular(kind(&m.file_type())))),
        Err(e) => return Err(failed(Why::Io(e))),
    }
    let mut bytes = Vec::new();
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| failed(Why::Io(e)))?;
    Ok(bytes)
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// What a file that is not a regular one is, in words.
fn kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// The longest leading part of `path`, itself excluded, that is an
/// existing directory.
fn existing_dir(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .find(|a| a.is_dir())
        .map(Path::to_path_buf)
}

/// The problem of the file named by `key` (`path` its value). `secret`:
/// the file holds a secret, so its value is shown only as far as it exists
/// (see the module's documentation).
pub fn problem(key: &str, path: &Path, secret: bool, e: &FileError) -> String {
    let why = &e.why;
    let shown = path.display().to_string();
    if !secret || e.exists {
        return format!("{key} = {shown:?}: {why}");
    }
    let total = shown.chars().count();
    let rest = match &e.existing_dir {
        Some(dir) => {
            let dir = dir.display().to_string();
            let after = total
                .saturating_sub(dir.chars().count())
                .saturating_sub(usize::from(!dir.ends_with('/')));
            format!(
                "of the path, only the directory {dir:?} exists; the {after} character(s) after it do not"
            )
        }
        None if path.is_relative() => format!(
            "no part of it exists ({total} character(s), a path relative to the working directory)"
        ),
        None => format!("no part of it exists ({total} character(s))"),
    };
    format!(
        "{key}: {why}; its value is not shown, since it names nothing on this machine and may be the secret itself: {rest}"
    )
}

/// A secret's text as read from a file or a variable: one line end at its
/// end (`\n`, `\r\n` or `\r`, as an editor or `echo` leaves it) is not part
/// of it; every other character is.
pub fn without_line_end(mut text: String) -> String {
    if text.ends_with('\n') {
        text.pop();
    }
    if text.ends_with('\r') {
        text.pop();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_names_nothing_is_not_shown() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(Path::new("hunter2-secret"), 100).unwrap_err();
        let said = problem(
            "kafka.sasl_password_file",
            Path::new("hunter2-secret"),
            true,
            &e,
        );
        assert!(!said.contains("hunter2"), "{said}");
        assert!(
            said.starts_with("kafka.sasl_password_file: cannot read it: No such file or directory"),
            "{said}"
        );
        assert!(
            said.ends_with(
                "no part of it exists (14 character(s), a path relative to the working directory)"
            ),
            "{said}"
        );

        // A wrong file name in a directory that exists: the directory is shown.
        let wrong = dir.path().join("pasword");
        let e = read(&wrong, 100).unwrap_err();
        let said = problem("kafka.sasl_password_file", &wrong, true, &e);
        let shown = format!("{:?}", dir.path().display().to_string());
        assert!(
            said.contains(&format!(
                "only the directory {shown} exists; the 7 character(s) after it do not"
            )),
            "{said}"
        );
        assert!(!said.contains("pasword"), "{said}");

        // A secret that begins with `/` shows no more than "/".
        let e = read(Path::new("/hunter2-secret"), 100).unwrap_err();
        let said = problem(
            "audit.signing_key_file",
            Path::new("/hunter2-secret"),
            true,
            &e,
        );
        assert!(!said.contains("hunter2"), "{said}");
        assert!(
            said.contains("only the directory \"/\" exists; the 14 character(s) after it do not"),
            "{said}"
        );

        // A path that is not a secret's is shown whole.
        let e = read(Path::new("/nonexistent/ca.pem"), 100).unwrap_err();
        assert_eq!(
            problem(
                "kafka.ssl_ca_file",
                Path::new("/nonexistent/ca.pem"),
                false,
                &e
            ),
            "kafka.ssl_ca_file = \"/nonexistent/ca.pem\": cannot read it: No such file or directory (os error 2)"
        );
    }

    #[test]
    fn a_file_that_exists_is_named_in_full() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(dir.path(), 100).unwrap_err();
        let said = problem("kafka.sasl_password_file", dir.path(), true, &e);
        assert_eq!(
            said,
            format!(
                "kafka.sasl_password_file = {:?}: it is a directory, not a regular file (a file, or a symbolic link to one, such as a mounted Kubernetes Secret's)",
                dir.path().display().to_string()
            )
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_device_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path and a mode.
        #[allow(unsafe_code)]
        let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(made, 0, "mkfifo");
        // Opening it for reading would wait for a writer: the test would hang.
        let e = read(&fifo, 100).unwrap_err();
        assert!(
            matches!(e.why, Why::NotRegular("a FIFO (named pipe)")),
            "{e:?}"
        );
        let e = read(Path::new("/dev/zero"), 100).unwrap_err();
        assert!(
            matches!(e.why, Why::NotRegular("a character device")),
            "{e:?}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_to_a_file_is_read_like_the_file() {
        let dir = tempfile::tempdir().unwrap();
        // As a Kubernetes Secret volume lays its files out.
        let data = dir.path().join("..data");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("password"), "s3cret\n").unwrap();
        let link = dir.path().join("password");
        std::os::unix::fs::symlink(data.join("password"), &link).unwrap();
        assert_eq!(read(&link, 100).unwrap(), b"s3cret\n");
        assert_eq!(read(&link, 3).unwrap(), b"s3c");
    }

    #[test]
    fn one_line_end_is_dropped() {
        for (given, kept) in [
            ("pw\n", "pw"),
            ("pw\r\n", "pw"),
            ("pw\r", "pw"),
            ("pw\n\n", "pw\n"),
            ("pw ", "pw "),
            ("pw", "pw"),
        ] {
            assert_eq!(without_line_end(given.to_string()), kept, "{given:?}");
        }
    }
}
