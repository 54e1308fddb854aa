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
    #[error("{path} already exists; remove it or choose another --out")]
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

/// Writes `<prefix>.key` (private, mode 0600) and `<prefix>.pub`; refuses to
/// overwrite either. Returns both paths.
pub fn generate(prefix: &Path) -> Result<(PathBuf, PathBuf), KeyError> {
    let private = prefix.with_extension("key");
    let public = prefix.with_extension("pub");
    for p in [&private, &public] {
        if p.exists() {
            return Err(KeyError::Exists { path: p.clone() });
        }
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
