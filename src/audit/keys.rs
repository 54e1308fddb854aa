//! Audit signing keys on disk: an Ed25519 private key as PKCS#8 PEM
//! (`openssl pkey -in KEY -noout -text` reads it) and its public key as
//! SPKI PEM; the keyring `audit verify` checks signatures against (every
//! public key that signed seals the trail still holds, from several files
//! or from one bundle of PEM blocks), and each key's fingerprint. Loaded
//! once at start; nothing here runs per record.

use std::io;
use std::path::{Path, PathBuf};

use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::config::secret_file;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// A key file that could not be read, said by
    /// [`crate::config::secret_file::problem`] (a private key file's value
    /// is not shown unless it exists).
    #[error("{0}")]
    Read(String),
    #[error("{path} is larger than {limit} bytes: is it the right file?")]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("cannot write key file {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("{path} is not an Ed25519 {what} in PEM form: {detail}")]
    Parse {
        path: PathBuf,
        what: &'static str,
        detail: String,
    },
    #[error("{path} holds no PEM block: {advice}")]
    NoPublicKey { path: PathBuf, advice: String },
    #[error("{path}, PEM block {block}: {detail}")]
    Block {
        path: PathBuf,
        /// 1-based, counting every PEM block of the file.
        block: usize,
        detail: String,
    },
    #[error("the operating system's random generator failed: {0}")]
    Random(String),
    #[error(
        "{path} already exists and is never overwritten (a key may still sign or check a trail): choose another --out"
    )]
    Exists { path: PathBuf },
    /// A configuration that names a signing key file but was not loaded by
    /// a loader that reads it (a defect of the caller, not of the file).
    #[error(
        "audit.signing_key_file {} was not read with the configuration: nothing signs with a key the configuration's checks did not read",
        .0.display()
    )]
    NotLoaded(PathBuf),
}

/// The most bytes of a private key file (its PEM is about 120).
const MAX_PRIVATE_KEY_BYTES: u64 = 64 * 1024;
/// The most bytes of a public key file or bundle (a key is about 110).
const MAX_PUBLIC_KEYS_BYTES: u64 = 1 << 20;

/// The text of a key file named by `key`; a private key's (`secret`) value
/// is shown only as far as it exists. Only a regular file is read, no
/// further than `limit` bytes (see [`secret_file::read`]).
fn read(key: &str, path: &Path, secret: bool, limit: u64) -> Result<String, KeyError> {
    let bytes = secret_file::read(path, limit + 1)
        .map_err(|e| KeyError::Read(secret_file::problem(key, path, secret, &e)))?;
    if bytes.len() as u64 > limit {
        return Err(KeyError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    String::from_utf8(bytes).map_err(|_| KeyError::Parse {
        path: path.to_path_buf(),
        what: if secret {
            "private key (PKCS#8)"
        } else {
            "public key (SPKI)"
        },
        detail: format!(
            "not text; a DER key converts with `openssl pkey{} -inform DER -in {1} -out {1}.pem`",
            if secret { "" } else { " -pubin" },
            path.display()
        ),
    })
}

/// The signing key of `[audit] signing_key_file`.
pub fn load_signing_key(path: &Path) -> Result<SigningKey, KeyError> {
    let pem = read("audit.signing_key_file", path, true, MAX_PRIVATE_KEY_BYTES)?;
    SigningKey::from_pkcs8_pem(&pem).map_err(|e| KeyError::Parse {
        path: path.to_path_buf(),
        what: "private key (PKCS#8)",
        detail: e.to_string(),
    })
}

/// DER of an Ed25519 SubjectPublicKeyInfo up to the key (RFC 8410): the
/// algorithm identifier 1.3.101.112 and the header of the 32-byte key.
const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The fingerprint of a public key: `SHA256:` and the first 16 bytes of the
/// SHA-256 of its SPKI DER in lower-case hex. The DER is what `openssl pkey
/// -pubin -outform DER` writes for the `.pub` file, so anyone can compute
/// it without groundgate; 128 bits tell the keys of one keyring apart,
/// which is all the name is for (signatures are checked with the key).
pub fn fingerprint(key: &VerifyingKey) -> String {
    let mut h = Sha256::new();
    h.update(ED25519_SPKI_PREFIX);
    h.update(key.as_bytes());
    let digest: [u8; 32] = h.finalize().into();
    format!("SHA256:{}", hex::encode(&digest[..16]))
}

/// A public key `audit verify` was given, with where it was read.
#[derive(Debug, Clone)]
pub struct KnownKey {
    pub key: VerifyingKey,
    pub fingerprint: String,
    /// The file as it was named on the command line.
    pub file: String,
    /// Its PEM block in that file, from 1.
    pub block: usize,
}

impl KnownKey {
    pub fn new(key: VerifyingKey, file: impl Into<String>, block: usize) -> KnownKey {
        KnownKey {
            fingerprint: fingerprint(&key),
            key,
            file: file.into(),
            block,
        }
    }
}

/// Why the text of a key file is not a bundle of public keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleError {
    /// No PEM block at all.
    Empty,
    /// PEM block `block` (from 1) is not an Ed25519 public key.
    Block { block: usize, detail: String },
}

/// The public keys of a bundle: one or more PEM `PUBLIC KEY` blocks (SPKI,
/// as `audit keygen` writes them), in order, each numbered from 1. Text
/// outside the blocks is skipped, as in a CA bundle, so a bundle may name
/// its keys in lines of its own. Every block must be an Ed25519 public key:
/// one that is not (another label, a private key, a damaged block) makes
/// the whole file refused rather than one key quietly missing.
pub fn parse_public_keys(text: &str) -> Result<Vec<(usize, VerifyingKey)>, BundleError> {
    let mut keys = Vec::new();
    let mut block = 0;
    // The open block: its label and its lines, BEGIN line included.
    let mut open: Option<(&str, Vec<&str>)> = None;
    // A bundle saved by an editor that marks UTF-8 starts with a BOM.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for line in text.lines().map(str::trim_end) {
        let begin = line
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"));
        if let Some((label, lines)) = open.as_mut() {
            if begin.is_some() {
                return Err(BundleError::Block {
                    block,
                    detail: "no END line before the next BEGIN line".into(),
                });
            }
            lines.push(line);
            if line.starts_with("-----END ") {
                let (label, pem) = (*label, lines.join("\n"));
                open = None;
                keys.push((block, public_key_block(label, &pem, block)?));
            }
        } else if let Some(label) = begin {
            block += 1;
            open = Some((label, vec![line]));
        }
    }
    if let Some((label, _)) = open {
        return Err(BundleError::Block {
            block,
            detail: format!("no END line (-----END {label}-----)"),
        });
    }
    if keys.is_empty() {
        return Err(BundleError::Empty);
    }
    Ok(keys)
}

/// The key of one PEM block labelled `label` (`pem`: the block's lines).
fn public_key_block(label: &str, pem: &str, block: usize) -> Result<VerifyingKey, BundleError> {
    let refuse = |detail: String| BundleError::Block { block, detail };
    if label != "PUBLIC KEY" {
        let hint = if label.contains("PRIVATE") {
            ": a private key has no place in a verifier's keyring; keep it with the workers"
        } else {
            ""
        };
        return Err(refuse(format!("a {label}, not a PUBLIC KEY{hint}")));
    }
    VerifyingKey::from_public_key_pem(pem)
        .map_err(|e| refuse(format!("not an Ed25519 public key (SPKI PEM): {e}")))
}

/// The public keys of one file (a `.pub` file of `audit keygen`, or a
/// bundle of them), each with its block number.
pub fn load_public_keys(path: &Path) -> Result<Vec<(usize, VerifyingKey)>, KeyError> {
    let text = read("public key file", path, false, MAX_PUBLIC_KEYS_BYTES)?;
    parse_public_keys(&text).map_err(|e| match e {
        BundleError::Empty => KeyError::NoPublicKey {
            path: path.to_path_buf(),
            advice: if text.trim_start().starts_with("ssh-ed25519 ") {
                "it is an OpenSSH public key, not one that signs seals: give the PEM public key of the workers' signing key (the .pub file `audit keygen` wrote beside it)".into()
            } else {
                "give a public key of `audit keygen` (its .pub file), or a bundle of them".into()
            },
        },
        BundleError::Block { block, detail } => KeyError::Block {
            path: path.to_path_buf(),
            block,
            detail,
        },
    })
}

/// The keyring of `paths`, in the order given; a key given again (in
/// another file, or twice in one) is kept once, where it was first read.
pub fn load_keyring(paths: &[PathBuf]) -> Result<Vec<KnownKey>, KeyError> {
    let mut ring: Vec<KnownKey> = Vec::new();
    for path in paths {
        for (block, key) in load_public_keys(path)? {
            if ring.iter().all(|k| k.key != key) {
                ring.push(KnownKey::new(key, path.display().to_string(), block));
            }
        }
    }
    Ok(ring)
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
    // PKCS#8 version 1, the seed alone: OpenSSL 3.0 (in Debian 12 and RHEL 9)
    // cannot read version 2, which embeds the public key as well, so a
    // security team could not inspect or convert the key with it.
    let pem = ed25519_dalek::pkcs8::KeypairBytes {
        secret_key: key.to_bytes(),
        public_key: None,
    }
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
        let pk = load_public_keys(&public).unwrap();
        assert_eq!(pk, [(1, sk.verifying_key())]);
        assert!(matches!(
            generate(&dir.path().join("audit")),
            Err(KeyError::Exists { .. })
        ));
        let refused = load_public_keys(&private).unwrap_err();
        assert!(
            matches!(&refused, KeyError::Block { block: 1, detail, .. } if detail.contains("PRIVATE KEY")),
            "{refused}"
        );
    }

    /// The private key is PKCS#8 version 1 (the 48-byte DER of RFC 8410's
    /// example: version 0, the algorithm, the seed), which OpenSSL 3.0
    /// reads; version 2 (with the public key) it refuses.
    #[test]
    fn a_generated_private_key_is_pkcs8_version_1() {
        use base64::Engine as _;
        let dir = tempfile::tempdir().unwrap();
        let (private, _) = generate(&dir.path().join("audit")).unwrap();
        let pem = std::fs::read_to_string(&private).unwrap();
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap();
        assert_eq!(der.len(), 48, "{der:02x?}");
        assert_eq!(
            &der[..16],
            b"\x30\x2e\x02\x01\x00\x30\x05\x06\x03\x2b\x65\x70\x04\x22\x04\x20"
        );
    }

    /// The public key of the private key whose seed is 32 bytes of 7.
    const KEY_7: &str = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEA6kpsY+KcUgq+9VB7Ey7F+ZVHdq6+vnuSQh7qaRRG0iw=
-----END PUBLIC KEY-----
";

    fn public(seed: u8) -> VerifyingKey {
        SigningKey::from_bytes(&[seed; 32]).verifying_key()
    }

    fn pem(seed: u8) -> String {
        public(seed).to_public_key_pem(LineEnding::LF).unwrap()
    }

    #[test]
    fn a_fingerprint_is_the_start_of_the_sha256_of_the_spki_der() {
        // `openssl pkey -pubin -in k.pub -outform DER | sha256sum | cut -c1-32`
        // on KEY_7 prints these 32 digits.
        let key = VerifyingKey::from_public_key_pem(KEY_7).unwrap();
        assert_eq!(key, public(7));
        assert_eq!(fingerprint(&key), "SHA256:324be2dea8bc44461b0233e51fa48902");
        for seed in [1, 2, 255] {
            let der = public(seed).to_public_key_der().unwrap();
            let digest = Sha256::digest(der.as_bytes());
            assert_eq!(
                fingerprint(&public(seed)),
                format!("SHA256:{}", hex::encode(&digest[..16]))
            );
        }
        assert_ne!(fingerprint(&public(1)), fingerprint(&public(2)));
    }

    #[test]
    fn a_bundle_holds_its_keys_in_order_with_text_between_them() {
        let bundle = format!(
            "# audit keys, oldest first\r\n{}\r\nretired 2026-11-27:\n{}{}",
            pem(1).replace('\n', "\r\n"),
            pem(2),
            KEY_7
        );
        assert_eq!(
            parse_public_keys(&bundle).unwrap(),
            [(1, public(1)), (2, public(2)), (3, public(7))]
        );
        assert_eq!(parse_public_keys(KEY_7).unwrap(), [(1, public(7))]);
        let marked = format!("\u{feff}{KEY_7}");
        assert_eq!(parse_public_keys(&marked).unwrap(), [(1, public(7))]);
    }

    #[test]
    fn a_bundle_with_a_block_that_is_no_public_key_is_refused_naming_the_block() {
        let block = |text: &str| match parse_public_keys(text) {
            Err(BundleError::Block { block, detail }) => (block, detail),
            other => panic!("{other:?}"),
        };
        assert_eq!(parse_public_keys(""), Err(BundleError::Empty));
        assert_eq!(parse_public_keys("no key here\n"), Err(BundleError::Empty));
        // A damaged key: one base64 character of the second block dropped.
        let damaged = format!("{}{}", pem(1), KEY_7.replacen("MCow", "MCo", 1));
        let (n, detail) = block(&damaged);
        assert_eq!(n, 2, "{detail}");
        assert!(detail.contains("not an Ed25519 public key"), "{detail}");
        let private = SigningKey::from_bytes(&[3; 32])
            .to_pkcs8_pem(LineEnding::LF)
            .unwrap();
        let (n, detail) = block(&format!("{}{}{}", pem(1), pem(2), private.as_str()));
        assert_eq!(n, 3);
        assert!(
            detail.contains("a PRIVATE KEY, not a PUBLIC KEY"),
            "{detail}"
        );
        let cert = "-----BEGIN CERTIFICATE-----\nMCow\n-----END CERTIFICATE-----\n";
        assert_eq!(block(cert).0, 1);
        let unended = format!(
            "{}{}",
            pem(1),
            pem(2).replace("-----END PUBLIC KEY-----", "")
        );
        let (n, detail) = block(&unended);
        assert_eq!((n, detail.contains("no END line")), (2, true), "{detail}");
        let (n, _) = block(&format!(
            "{}{}",
            pem(1).replace("-----END PUBLIC KEY-----\n", ""),
            pem(2)
        ));
        assert_eq!(n, 1);
    }

    #[test]
    fn a_keyring_keeps_each_key_once_where_it_was_first_given() {
        let dir = tempfile::tempdir().unwrap();
        let one = dir.path().join("one.pub");
        let bundle = dir.path().join("ring.pem");
        std::fs::write(&one, pem(2)).unwrap();
        std::fs::write(&bundle, format!("{}{}{}", pem(1), pem(2), pem(1))).unwrap();
        let ring = load_keyring(&[one.clone(), bundle.clone(), one.clone()]).unwrap();
        let got: Vec<(VerifyingKey, String, usize)> = ring
            .iter()
            .map(|k| (k.key, k.file.clone(), k.block))
            .collect();
        assert_eq!(
            got,
            [
                (public(2), one.display().to_string(), 1),
                (public(1), bundle.display().to_string(), 1)
            ]
        );
        assert_eq!(ring[1].fingerprint, fingerprint(&public(1)));
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let e = load_keyring(&[one.clone(), empty.clone()]).unwrap_err();
        assert!(
            matches!(&e, KeyError::NoPublicKey { path, .. } if *path == empty),
            "{e}"
        );
        let missing = dir.path().join("missing.pem");
        let e = load_keyring(std::slice::from_ref(&missing)).unwrap_err();
        assert!(e.to_string().contains("missing.pem"), "{e}");
    }
}
