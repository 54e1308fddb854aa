//! The Confluent Schema Registry wire format of the values groundgate
//! writes: the header put in front of an output's JSON text, and the JSON
//! text read back from a value that may carry one. The header is transport:
//! hashes, seals and `check`'s files are of the JSON text alone.

use super::decode::{SCHEMA_REGISTRY_HEADER_BYTES, SCHEMA_REGISTRY_MAGIC, schema_registry_frame};

/// `json` behind a Schema Registry header naming `schema_id`: byte 0x00, the
/// id as 4 bytes big-endian, then the JSON text unchanged.
pub fn framed(schema_id: u32, json: &[u8]) -> Vec<u8> {
    let mut value = Vec::with_capacity(SCHEMA_REGISTRY_HEADER_BYTES + json.len());
    value.push(SCHEMA_REGISTRY_MAGIC);
    value.extend_from_slice(&schema_id.to_be_bytes());
    value.extend_from_slice(json);
    value
}

/// A value that starts with the magic byte but is shorter than the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "starts with byte 0x00, the Schema Registry magic byte, but is {0} bytes long: the wire format has {SCHEMA_REGISTRY_HEADER_BYTES} (magic byte and 4-byte schema id) before its payload"
)]
pub struct CutHeader(pub usize);

/// The JSON text of a value groundgate wrote, framed or not: a JSON text
/// never starts with byte 0x00, so a value that does holds a header, and
/// one that does not is the JSON text itself.
pub fn unframed(value: &[u8]) -> Result<&[u8], CutHeader> {
    match (value.first(), schema_registry_frame(value)) {
        (_, Some((_, json))) => Ok(json),
        (Some(&SCHEMA_REGISTRY_MAGIC), None) => Err(CutHeader(value.len())),
        _ => Ok(value),
    }
}

/// How many of the first bytes of `value` are a Schema Registry header:
/// none for a JSON text, which never starts with byte 0x00; for a value
/// that does, the header's five, or as many as there are. A reader that
/// cuts values out of lines (`check` on a topic dump) looks for a value's
/// newline only past them, since a schema id such as 10 or 266 holds byte
/// 0x0A.
pub fn header_bytes(value: &[u8]) -> usize {
    match value.first() {
        Some(&SCHEMA_REGISTRY_MAGIC) => SCHEMA_REGISTRY_HEADER_BYTES.min(value.len()),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_the_magic_byte_and_the_id_big_endian() {
        assert_eq!(framed(101, b"{}"), b"\x00\x00\x00\x00\x65{}");
        assert_eq!(framed(0x0102_0304, b"{}"), b"\x00\x01\x02\x03\x04{}");
        assert_eq!(framed(u32::MAX, b""), b"\x00\xff\xff\xff\xff");
    }

    #[test]
    fn unframed_reads_framed_and_plain_values_alike() {
        let json = br#"{"a":1}"#;
        assert_eq!(unframed(&framed(7, json)), Ok(&json[..]));
        assert_eq!(unframed(json), Ok(&json[..]));
        assert_eq!(unframed(b""), Ok(&b""[..]));
        assert_eq!(unframed(b"\x00\x00\x00\x00\x07"), Ok(&b""[..]));
        for cut in [&b"\x00"[..], b"\x00\x00\x00\x07"] {
            let e = unframed(cut).unwrap_err();
            assert_eq!(e, CutHeader(cut.len()));
            assert!(
                e.to_string().contains(&format!("{} bytes long", cut.len())),
                "{e}"
            );
        }
    }
}
