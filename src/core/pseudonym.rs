//! Keyed pseudonyms for the personal fields of audit rows.
//!
//! The audit trail is kept for years and cannot be edited: a row removed or
//! changed breaks its seal. Personal data in it (who asked, for which
//! tenant, what they asked) would then outlive any erasure request. With
//! pseudonyms configured, those fields are written as an HMAC-SHA256 of the
//! value under a key kept outside the trail: equal values still give equal
//! pseudonyms (an investigator can follow one user, or look one up with the
//! key), and destroying the key leaves nothing in the trail that leads back
//! to a person.
//!
//! Pure: the key arrives as bytes, read by the configuration's shell.

use std::borrow::Cow;
use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// Fewest key bytes accepted: HMAC-SHA256's own block of security.
pub const MIN_KEY_BYTES: usize = 32;
/// Most bytes a key file may hold. A key is a few dozen bytes: a larger
/// file is another file given by mistake (a certificate bundle, a log,
/// `/dev/zero`), and the shell reads no more than one byte beyond this.
pub const MAX_KEY_FILE_BYTES: usize = 4096;

/// A field of the audit row that can be written as a pseudonym.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PseudonymField {
    User,
    Tenant,
    Question,
    SourcesUrns,
}

impl PseudonymField {
    pub const ALL: [PseudonymField; 4] = [
        PseudonymField::User,
        PseudonymField::Tenant,
        PseudonymField::Question,
        PseudonymField::SourcesUrns,
    ];

    /// The field's key in the audit row and in `[audit] pseudonymize`.
    pub fn as_str(self) -> &'static str {
        match self {
            PseudonymField::User => "user",
            PseudonymField::Tenant => "tenant",
            PseudonymField::Question => "question",
            PseudonymField::SourcesUrns => "sources_urns",
        }
    }

    pub fn parse(name: &str) -> Option<PseudonymField> {
        Self::ALL.into_iter().find(|f| f.as_str() == name)
    }
}

/// The key and the fields it pseudonymises. `Debug` shows the key's id,
/// never the key.
#[derive(Clone)]
pub struct Pseudonyms {
    key: Vec<u8>,
    /// HMAC state with the key already absorbed: each value then costs a
    /// copy of it, not the key's two padded blocks hashed again.
    keyed: Hmac<Sha256>,
    key_id: String,
    fields: Vec<PseudonymField>,
}

impl PartialEq for Pseudonyms {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.fields == other.fields
    }
}

impl fmt::Debug for Pseudonyms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pseudonyms")
            .field("key_id", &self.key_id)
            .field("fields", &self.fields)
            .finish()
    }
}

/// Why a key cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyProblem {
    #[error(
        "is {0} bytes once trailing white space is dropped: a pseudonym key needs at least {MIN_KEY_BYTES} (e.g. `openssl rand -hex 32 > FILE`)"
    )]
    TooShort(usize),
    #[error(
        "is larger than {MAX_KEY_FILE_BYTES} bytes: a pseudonym key is a few dozen (e.g. `openssl rand -hex 32 > FILE`); is it the right file?"
    )]
    TooLong,
}

impl Pseudonyms {
    /// `file` is the key file's content: trailing white space (the newline
    /// an editor or `openssl rand -hex 32 > FILE` leaves) is not part of
    /// the key, so `openssl dgst -hmac "$(cat FILE)"` computes the same
    /// pseudonyms.
    pub fn new(file: &[u8], fields: &[PseudonymField]) -> Result<Pseudonyms, KeyProblem> {
        if file.len() > MAX_KEY_FILE_BYTES {
            return Err(KeyProblem::TooLong);
        }
        let key = file.trim_ascii_end();
        if key.len() < MIN_KEY_BYTES {
            return Err(KeyProblem::TooShort(key.len()));
        }
        let mut fields = fields.to_vec();
        fields.sort();
        fields.dedup();
        let keyed = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        Ok(Pseudonyms {
            key: key.to_vec(),
            keyed,
            key_id: key_id(key),
            fields,
        })
    }

    /// The key's id: the first 8 hex digits of its SHA-256, written in
    /// every pseudonym so a trail that spans a change of key says which
    /// key each row needs.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The fields pseudonymised, by name: `user, question`.
    pub fn field_names(&self) -> String {
        let names: Vec<&str> = self.fields.iter().map(|f| f.as_str()).collect();
        names.join(", ")
    }

    pub fn covers(&self, field: PseudonymField) -> bool {
        self.fields.contains(&field)
    }

    /// `hmac-sha256:<key id>:<hex HMAC of value>`. An empty value stays
    /// empty: "no user given" is not personal, and rows keep saying it.
    pub fn of(&self, value: &str) -> String {
        if value.is_empty() {
            return String::new();
        }
        let mut mac = self.keyed.clone();
        mac.update(value.as_bytes());
        let tag = mac.finalize().into_bytes();
        format!("hmac-sha256:{}:{}", self.key_id, hex::encode(tag))
    }

    /// A dead letter's `detail` with no value of a pseudonymised field in
    /// it. A field of the wrong type is named with the value read
    /// (`user: invalid type: integer `48151623`, expected a string`, or a
    /// source given as its URN alone): in the audit row that would keep
    /// the very value the field's pseudonym keeps out of the trail. The
    /// value is left out and its kind kept (`invalid type: integer,
    /// expected a string`).
    pub fn without_values<'a>(&self, detail: &'a str) -> Cow<'a, str> {
        const TYPE: &str = ": invalid type: ";
        let Some((path, rest)) = detail.split_once(TYPE) else {
            return Cow::Borrowed(detail);
        };
        let field = match path.split(['.', '[']).next() {
            Some("sources") => Some(PseudonymField::SourcesUrns),
            Some(name) => PseudonymField::parse(name),
            None => None,
        };
        // The expected type is serde's own words, after the value.
        let Some((value, expected)) = rest.rsplit_once(", expected") else {
            return Cow::Borrowed(detail);
        };
        if !field.is_some_and(|f| self.covers(f)) {
            return Cow::Borrowed(detail);
        }
        let kind = value
            .split(['`', '"'])
            .next()
            .unwrap_or_default()
            .trim_end();
        Cow::Owned(format!("{path}{TYPE}{kind}, expected{expected}"))
    }

    /// `value` as the audit row writes `field`.
    pub fn apply<'a>(&self, field: PseudonymField, value: &'a str) -> Cow<'a, str> {
        if self.covers(field) {
            Cow::Owned(self.of(value))
        } else {
            Cow::Borrowed(value)
        }
    }
}

/// `value` as the audit row writes `field` under `pseudonyms`, if any.
pub fn written<'a>(
    pseudonyms: Option<&Pseudonyms>,
    field: PseudonymField,
    value: &'a str,
) -> Cow<'a, str> {
    match pseudonyms {
        Some(p) => p.apply(field, value),
        None => Cow::Borrowed(value),
    }
}

fn key_id(key: &[u8]) -> String {
    hex::encode(&Sha256::digest(key)[..4])
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef\n";

    #[test]
    fn a_pseudonym_is_the_hmac_of_the_value_under_the_trimmed_key() {
        let p = Pseudonyms::new(KEY, &[PseudonymField::User]).unwrap();
        // `printf alice | openssl dgst -sha256 -hmac 0123…cdef`, and the
        // key id the first 8 hex digits of the key's `sha256sum`.
        assert_eq!(
            p.of("alice"),
            "hmac-sha256:3eb1bd43:433deb45467e4e53dbaba594c88bc3a200f705a2150788c3d11e6040e63e8510"
        );
    }

    #[test]
    fn equal_values_share_a_pseudonym_and_empty_stays_empty() {
        let p = Pseudonyms::new(KEY, &[PseudonymField::User]).unwrap();
        assert_eq!(p.of("alice"), p.of("alice"));
        assert_ne!(p.of("alice"), p.of("bob"));
        assert_eq!(p.of(""), "");
        let other = Pseudonyms::new(&[7u8; 32], &[PseudonymField::User]).unwrap();
        assert_ne!(other.of("alice"), p.of("alice"));
        assert_ne!(other.key_id(), p.key_id());
    }

    #[test]
    fn only_the_chosen_fields_are_rewritten() {
        let p = Pseudonyms::new(KEY, &[PseudonymField::User, PseudonymField::User]).unwrap();
        assert!(matches!(
            p.apply(PseudonymField::Question, "why?"),
            Cow::Borrowed("why?")
        ));
        assert!(
            p.apply(PseudonymField::User, "alice")
                .starts_with("hmac-sha256:")
        );
        assert_eq!(written(None, PseudonymField::User, "alice"), "alice");
    }

    #[test]
    fn a_short_or_oversized_key_is_refused_and_the_key_never_shows_in_debug() {
        assert_eq!(
            Pseudonyms::new(b"short\n\n", &[]),
            Err(KeyProblem::TooShort(5))
        );
        assert_eq!(
            Pseudonyms::new(&[b'k'; MAX_KEY_FILE_BYTES + 1], &[]),
            Err(KeyProblem::TooLong)
        );
        assert!(Pseudonyms::new(&[b'k'; MAX_KEY_FILE_BYTES], &[]).is_ok());
        let p = Pseudonyms::new(KEY, &[PseudonymField::Tenant]).unwrap();
        let shown = format!("{p:?}");
        assert!(!shown.contains("0123456789abcdef"), "{shown}");
        assert!(shown.contains(p.key_id()), "{shown}");
    }

    #[test]
    fn a_type_error_of_a_pseudonymised_field_keeps_its_kind_not_its_value() {
        let p = Pseudonyms::new(KEY, &[PseudonymField::User, PseudonymField::SourcesUrns]).unwrap();
        for (detail, kept) in [
            (
                "user: invalid type: integer `48151623`, expected a string at line 1 column 46",
                "user: invalid type: integer, expected a string at line 1 column 46",
            ),
            (
                "sources[1]: invalid type: string \"urn:hr:alice, expected x\", expected an object {urn, payload} at line 1 column 80",
                "sources[1]: invalid type: string, expected an object {urn, payload} at line 1 column 80",
            ),
            (
                "sources[0].urn: invalid type: floating point `1.5`, expected a string at line 1 column 9",
                "sources[0].urn: invalid type: floating point, expected a string at line 1 column 9",
            ),
            (
                "tenant: invalid type: integer `7`, expected a string at line 1 column 9",
                "tenant: invalid type: integer `7`, expected a string at line 1 column 9",
            ),
            (
                "mode: invalid value: string \"x\", expected \"strict\" or \"lenient\"",
                "mode: invalid value: string \"x\", expected \"strict\" or \"lenient\"",
            ),
            (
                "sources[0]: missing field `urn` at line 1 column 9",
                "sources[0]: missing field `urn` at line 1 column 9",
            ),
        ] {
            assert_eq!(p.without_values(detail), kept);
        }
    }

    #[test]
    fn every_field_parses_from_its_name() {
        for f in PseudonymField::ALL {
            assert_eq!(PseudonymField::parse(f.as_str()), Some(f));
        }
        assert_eq!(PseudonymField::parse("answer"), None);
    }
}
