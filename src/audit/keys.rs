//! Audit signing keys on disk: an Ed25519 private key as PKCS#8 PEM
//! (`openssl pkey -in KEY -noout -text` reads it) and its public key as
//! SPKI PEM. Loaded once at start; nothing here runs per record.

use std::io;
use std::path::{Path, PathBuf};

use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::{SigningKey, VerifyingKey};

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read key file {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write key file {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("{path} is not an Ed25519 {what} in PEM form: {detail}")]
    Parse {
        path: PathBuf,
        what: &'static str,
        detail: String,
    },
    #[error("the operating system's random generator failed: {0}")]
    Random(String),
    #[error(
        "{path} already exists and is never overwritten (a key may still sign or check a trail): choose another --out"
    )]
    Exists { path: PathBuf },
}

fn read(path: &Path) -> Result<String, KeyError> {
    std::fs::read_to_string(path).map_err(|source| KeyError::Read {
        path: path.to_path_buf(),
        source,
    })
}

pub fn load_signing_key(path: &Path) -> Result<SigningKey, KeyError> {
    SigningKey::from_pkcs8_pem(&read(path)?).map_err(|e| KeyError::Parse {
        path: path.to_path_buf(),
        what: "private key (PKCS#8)",
        detail: e.to_string(),
    })
}

pub fn load_public_key(path: &Path) -> Result<VerifyingKey, KeyError> {
    VerifyingKey::from_public_key_pem(&read(path)?).map_err(|e| KeyError::Parse {
        path: path.to_path_buf(),
        what: "public key (SPKI)",
        detail: e.to_string(),
    })
}

/// Name of the key pair written into a directory given as the prefix.
pub const DEFAULT_KEY_NAME: &str = "groundgate-audit";

/// Where `generate` writes: `PREFIX.key` and `PREFIX.pub` (the prefix kept
/// whole: `audit-2026.11` gives `audit-2026.11.key`), or, when the prefix
/// names a directory (it exists as one, or ends with `/`), the default
/// name inside it.
pub fn key_paths(prefix: &Path) -> (PathBuf, PathBuf) {
    let text = prefix.as_os_str().to_string_lossy();
    let prefix = if prefix.is_dir() || text.ends_with('/') {
        prefix.join(DEFAULT_KEY_NAME)
    } else {
        prefix.to_path_buf()
    };
    let with = |ext: &str| {
        let mut s = prefix.as_os_str().to_owned();
        s.push(ext);
        PathBuf::from(s)
    };
    (with(".key"), with(".pub"))
}

/// Writes `<prefix>.key` (private, mode 0600) and `<prefix>.pub`, creating
/// missing directories on the way (mode 0700: they hold a private key);
/// refuses to overwrite either file. Returns both paths.
pub fn generate(prefix: &Path) -> Result<(PathBuf, PathBuf), KeyError> {
    let (private, public) = key_paths(prefix);
    for p in [&private, &public] {
        if p.exists() {
            return Err(KeyError::Exists { path: p.clone() });
        }
    }
    if let Some(dir) = private.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dirs(dir)?;
    }
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| KeyError::Random(e.to_string()))?;
    let key = SigningKey::from_bytes(&seed);
    let parse = |what, e: &dyn std::fmt::Display| KeyError::Parse {
        path: private.clone(),
        what,
        detail: e.to_string(),
    };
    let pem = key
        .to_pkcs8_pem(LineEnding::LF)
        .map_err(|e| parse("private key (PKCS#8)", &e))?;
    let pub_pem = key
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .map_err(|e| parse("public key (SPKI)", &e))?;
    write_private(&private, pem.as_bytes())?;
    std::fs::write(&public, pub_pem).map_err(|source| KeyError::Write {
        path: public.clone(),
        source,
    })?;
    Ok((private, public))
}

fn create_dirs(dir: &Path) -> Result<(), KeyError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|source| KeyError::Write {
        path: dir.to_path_buf(),
        source,
    })
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), KeyError> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let err = |source| KeyError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut f = opts.open(path).map_err(err)?;
    f.write_all(bytes).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_keep_the_whole_prefix_and_go_inside_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let names = key_paths;
        assert_eq!(
            names(&d.join("audit-2026.11")),
            (d.join("audit-2026.11.key"), d.join("audit-2026.11.pub"))
        );
        assert_eq!(
            names(d),
            (
                d.join("groundgate-audit.key"),
                d.join("groundgate-audit.pub")
            )
        );
        let slash = PathBuf::from(format!("{}/new/", d.display()));
        assert_eq!(names(&slash).0, slash.join("groundgate-audit.key"));
        let (private, _) = generate(d).unwrap();
        assert_eq!(private, d.join("groundgate-audit.key"));
        let again = generate(d).unwrap_err().to_string();
        assert!(again.contains("never overwritten"), "{again}");
    }

    /// `--out keys/audit` and `--out keys/` on a fresh machine: the
    /// directory is made, private to its owner.
    #[test]
    fn missing_directories_of_the_prefix_are_created() {
        let dir = tempfile::tempdir().unwrap();
        let (private, public) = generate(&dir.path().join("keys/2026/audit")).unwrap();
        assert_eq!(private, dir.path().join("keys/2026/audit.key"));
        assert!(private.is_file() && public.is_file());
        let slash = PathBuf::from(format!("{}/other/", dir.path().display()));
        let (private, _) = generate(&slash).unwrap();
        assert_eq!(private, slash.join("groundgate-audit.key"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("keys"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    #[test]
    fn generated_keys_load_back_and_match() {
        let dir = tempfile::tempdir().unwrap();
        let (private, public) = generate(&dir.path().join("audit")).unwrap();
        let sk = load_signing_key(&private).unwrap();
        let pk = load_public_key(&public).unwrap();
        assert_eq!(sk.verifying_key(), pk);
        assert!(matches!(
            generate(&dir.path().join("audit")),
            Err(KeyError::Exists { .. })
        ));
        assert!(matches!(
            load_public_key(&private),
            Err(KeyError::Parse { .. })
        ));
    }
}
