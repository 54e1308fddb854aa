//! A record's JSON as written: object members in their order, a repeated
//! key kept. `serde_json::Value` sorts members and keeps the last of a
//! repeated key, so it cannot tell whether the bytes were the plain encoding
//! of what they say, nor which of two values another reader would take.
//! Pure.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

pub(super) enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// One record read: the object as serde_json reads it, whether its bytes
/// are canonical, and its members in order.
pub(super) struct Record {
    pub(super) map: Map<String, Value>,
    /// The bytes are the compact encoding of what they parse to, in their
    /// own member order, with no key repeated at any depth: what
    /// groundgate's writers produce. A repeated key, whitespace, or another
    /// escape or number form is not.
    pub(super) canonical: bool,
    members: Vec<(String, Json)>,
}

impl Record {
    /// `None` when the bytes are JSON but not an object.
    pub(super) fn read(bytes: &[u8]) -> Result<Option<Record>, serde_json::Error> {
        let Json::Object(members) = serde_json::from_slice(bytes)? else {
            return Ok(None);
        };
        let encoded = serde_json::to_vec(&Members {
            members: &members,
            blank: None,
        })?;
        let mut repeated = false;
        let map = to_map(&members, &mut repeated);
        Ok(Some(Record {
            map,
            canonical: !repeated && encoded == bytes,
            members,
        }))
    }

    /// SHA-256 of the record as written with the value of its top-level
    /// `ts` blanked when that value is an integer, as groundgate writes it:
    /// equal for two canonical rows that are the same bytes but for the
    /// integer in `ts` (what a redelivery repeats). A `ts` moved, dropped,
    /// or holding anything but an integer (a string, an object with other
    /// fields inside) changes the content, so such a copy is no redelivery.
    pub(super) fn content_hash(&self) -> [u8; 32] {
        let bytes = serde_json::to_vec(&Members {
            members: &self.members,
            blank: Some("ts"),
        })
        .unwrap_or_default();
        // Tells a blanked integer from a `ts` that holds `null` itself.
        let blanked = self.members.iter().any(|(k, v)| k == "ts" && is_integer(v));
        let mut h = Sha256::new();
        h.update(if blanked { b"i" } else { b"-" });
        h.update(bytes);
        h.finalize().into()
    }
}

fn to_map(members: &[(String, Json)], repeated: &mut bool) -> Map<String, Value> {
    let mut map = Map::new();
    for (k, v) in members {
        // serde_json's own reading: the last value of a repeated key.
        *repeated |= map.insert(k.clone(), to_value(v, repeated)).is_some();
    }
    map
}

fn to_value(v: &Json, repeated: &mut bool) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::Number(n.clone()),
        Json::String(s) => Value::String(s.clone()),
        Json::Array(a) => Value::Array(a.iter().map(|v| to_value(v, repeated)).collect()),
        Json::Object(m) => Value::Object(to_map(m, repeated)),
    }
}

fn is_integer(v: &Json) -> bool {
    matches!(v, Json::Number(n) if n.is_i64() || n.is_u64())
}

/// An object's members in order; the member named `blank`, when its value
/// is an integer, with `null` in place of that value.
struct Members<'a> {
    members: &'a [(String, Json)],
    blank: Option<&'a str>,
}

impl Serialize for Members<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for (k, v) in self.members {
            if self.blank == Some(k.as_str()) && is_integer(v) {
                m.serialize_entry(k, &Json::Null)?;
            } else {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(v) => s.serialize_str(v),
            Json::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Json::Object(members) => Members {
                members,
                blank: None,
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Number::from_f64(v)
            .map(Json::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Json::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut out = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            out.push((k, v));
        }
        Ok(Json::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(s: &str) -> Record {
        Record::read(s.as_bytes()).unwrap().unwrap()
    }

    #[test]
    fn compact_json_in_any_member_order_is_canonical() {
        for s in [
            r#"{"b":1,"a":{"z":[1,-2,0.1,1e+300,"x\n\u0001é"],"y":null},"c":true}"#,
            r#"{"cost_usd":0.0017641654082022119,"score":0.22981246145434542}"#,
            r#"{"big":18446744073709551615,"small":-9223372036854775808}"#,
        ] {
            assert!(read(s).canonical, "{s}");
        }
    }

    #[test]
    fn a_repeated_key_whitespace_or_another_spelling_is_not() {
        for s in [
            r#"{"a":1,"a":2}"#,
            r#"{"o":{"a":1,"a":1}}"#,
            r#"{"a": 1}"#,
            r#"{"a":1} "#,
            r#"{"a":"\u0041"}"#,
            r#"{"a":"\/"}"#,
            r#"{"a":1.0e1}"#,
            r#"{"a":0.50}"#,
        ] {
            assert!(!read(s).canonical, "{s}");
        }
        // The last of a repeated key is what serde_json reads.
        assert_eq!(read(r#"{"a":1,"a":2}"#).map["a"], 2);
    }

    #[test]
    fn the_content_leaves_out_ts_only() {
        let a = read(r#"{"x":1,"ts":5,"y":{"ts":1}}"#);
        let b = read(r#"{"x":1,"ts":6,"y":{"ts":1}}"#);
        let c = read(r#"{"x":1,"ts":5,"y":{"ts":2}}"#);
        let reordered = read(r#"{"ts":5,"y":{"ts":1},"x":1}"#);
        assert_eq!(a.content_hash(), b.content_hash());
        assert_ne!(a.content_hash(), c.content_hash());
        assert_ne!(a.content_hash(), reordered.content_hash());
        assert!(Record::read(b"[1]").unwrap().is_none());
    }

    #[test]
    fn the_content_keeps_where_ts_is_and_what_it_holds_unless_an_integer() {
        let a = read(r#"{"x":1,"ts":5,"y":2}"#);
        for other in [
            r#"{"x":1,"y":2}"#,
            r#"{"ts":5,"x":1,"y":2}"#,
            r#"{"x":1,"y":2,"ts":5}"#,
            r#"{"x":1,"ts":"5","y":2}"#,
            r#"{"x":1,"ts":{"x":2},"y":2}"#,
            r#"{"x":1,"ts":null,"y":2}"#,
            r#"{"x":1,"ts":5.5,"y":2}"#,
        ] {
            assert_ne!(a.content_hash(), read(other).content_hash(), "{other}");
        }
        assert_eq!(
            a.content_hash(),
            read(r#"{"x":1,"ts":18446744073709551615,"y":2}"#).content_hash()
        );
    }
}
