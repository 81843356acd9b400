//! Payload hashes for de-duplication: SHA-256 over canonical JSON bytes.
//!
//! Canonical JSON here means: no whitespace; object keys sorted by their Unicode code points
//! (byte order of their UTF-8); strings escaped minimally (`"`, `\`, and control characters
//! below U+0020, with `\b \f \n \r \t` short forms and `\u00XX` for the rest); numbers as
//! `serde_json` prints them. Two payloads that differ only in key order or whitespace hash alike.

use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{JournalError, Result};

/// The SHA-256 of a request's canonical payload bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PayloadHash([u8; 32]);

impl PayloadHash {
    /// The hash of `value`'s canonical JSON (see the module docs).
    #[must_use]
    pub fn of_json(value: &Value) -> Self {
        Self::of_canonical_bytes(&canonical_json(value))
    }

    /// The hash of bytes the caller already made canonical.
    #[must_use]
    pub fn of_canonical_bytes(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// A hash from its 32 raw bytes.
    #[must_use]
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The 32 raw bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The hash as 64 lower-case hex digits.
    #[must_use]
    pub fn to_hex(&self) -> String {
        let mut hex = String::with_capacity(64);
        push_hex(&mut hex, &self.0);
        hex
    }

    /// A hash from 64 hex digits; fails with [`JournalError::InvalidInput`] otherwise.
    pub fn from_hex(hex: &str) -> Result<Self> {
        let invalid = || JournalError::InvalidInput {
            what: "payload hash",
            reason: format!("expected 64 hex digits, got {:?}", hex.chars().take(80).collect::<String>()),
        };
        if hex.len() != 64 || !hex.is_ascii() {
            return Err(invalid());
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| invalid())?;
        }
        Ok(Self(bytes))
    }

    /// A hash read back from a stored blob; `None` when it is not 32 bytes.
    pub(crate) fn from_slice(bytes: &[u8]) -> Option<Self> {
        <[u8; 32]>::try_from(bytes).ok().map(Self)
    }
}

impl fmt::Debug for PayloadHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PayloadHash({})", self.to_hex())
    }
}

impl fmt::Display for PayloadHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// Appends `bytes` as lower-case hex digits.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
}

/// `value` as canonical JSON bytes (see the module docs).
#[must_use]
pub fn canonical_json(value: &Value) -> Vec<u8> {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out.into_bytes()
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => out.push_str(&number.to_string()),
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
    }
}

fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                out.push_str("\\u00");
                push_hex(out, &[u8::try_from(c).unwrap_or(0)]);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn canonical_json_sorts_keys_and_drops_whitespace() {
        let value: Value =
            serde_json::from_str(r#"{ "b": [1, 2.5, {"z": null, "a": true}], "a": "x\"y\n\u0001é" }"#).unwrap();
        assert_eq!(
            String::from_utf8(canonical_json(&value)).unwrap(),
            r#"{"a":"x\"y\n\u0001é","b":[1,2.5,{"a":true,"z":null}]}"#
        );
    }

    #[test]
    fn key_order_does_not_change_the_hash_but_values_do() {
        let one = PayloadHash::of_json(&json!({"tool": "act", "args": {"ref": "e3", "text": "hi"}}));
        let same: Value = serde_json::from_str(r#"{"args":{"text":"hi","ref":"e3"},"tool":"act"}"#).unwrap();
        assert_eq!(one, PayloadHash::of_json(&same));
        assert_ne!(one, PayloadHash::of_json(&json!({"tool": "act", "args": {"ref": "e3", "text": "ho"}})));
    }

    #[test]
    fn hex_round_trips_and_rejects_garbage() {
        let hash = PayloadHash::of_canonical_bytes(b"{}");
        assert_eq!(PayloadHash::from_hex(&hash.to_hex()).unwrap(), hash);
        assert_eq!(hash.to_hex(), "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
        assert!(PayloadHash::from_hex("zz").is_err());
        assert!(PayloadHash::from_hex(&"g".repeat(64)).is_err());
    }
}
