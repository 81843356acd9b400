//! proptest strategies shared by the fuzz targets (`tests/fuzz*.rs` of the protocol, IPC, native and broker crates):
//! arbitrary JSON biased towards the field names a reader knows, and byte streams cut at arbitrary points.

use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// A JSON scalar: null, booleans, edge-case and ordinary numbers, short strings (with a few hostile ones).
pub fn json_scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop_oneof![Just(0u64), Just(1), Just(u64::from(u32::MAX)), Just(u64::MAX), 0u64..64].prop_map(Value::from),
        any::<f64>().prop_filter_map("a finite number", |f| Number::from_f64(f).map(Value::Number)),
        ".{0,24}".prop_map(Value::String),
        prop_oneof![
            Just(String::new()),
            Just("2.0".to_owned()),
            Just("\u{0}".to_owned()),
            Just("e1".to_owned()),
            Just("f2e7b".to_owned()),
            Just("\u{202e}x".to_owned()),
            Just("a".repeat(300)),
        ]
        .prop_map(Value::String),
    ]
}

/// Arbitrary JSON up to depth 4 whose object keys are mostly drawn from `keys` (so readers get past "unknown field").
pub fn json_value(keys: Vec<String>) -> impl Strategy<Value = Value> {
    let keys: Vec<String> = if keys.is_empty() { vec!["x".to_owned()] } else { keys };
    json_scalar().prop_recursive(4, 48, 6, move |inner| {
        let key = prop_oneof![4 => proptest::sample::select(keys.clone()), 1 => "[a-zA-Z_]{0,10}"];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..7)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

/// An object holding some of `keys` with arbitrary values (a structured near-miss of a valid input).
pub fn json_object(keys: Vec<String>) -> impl Strategy<Value = Value> {
    let values = json_value(keys.clone());
    let key = proptest::sample::select(if keys.is_empty() { vec!["x".to_owned()] } else { keys });
    prop::collection::vec((key, values), 0..8).prop_map(|kv| Value::Object(kv.into_iter().collect()))
}

/// Every property name in a JSON Schema (recursively), for [`json_value`]'s key list.
pub fn schema_keys(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(m) => {
            for (k, v) in m {
                if k == "properties"
                    && let Value::Object(props) = v
                {
                    out.extend(props.keys().cloned());
                }
                if k == "enum"
                    && let Value::Array(items) = v
                {
                    out.extend(items.iter().filter_map(|i| i.as_str().map(str::to_owned)));
                }
                schema_keys(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| schema_keys(v, out)),
        _ => {}
    }
    out.sort();
    out.dedup();
}

/// `bytes` cut into pieces at arbitrary points (how a socket or pipe may deliver them).
pub fn split_points(len: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..=len, 0..8).prop_map(|mut v| {
        v.sort_unstable();
        v.dedup();
        v
    })
}

/// The pieces of `bytes` between the `cuts`.
pub fn pieces(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut start = 0;
    for &c in cuts.iter().chain(std::iter::once(&bytes.len())) {
        let c = c.min(bytes.len());
        if c > start {
            out.push(bytes[start..c].to_vec());
            start = c;
        }
    }
    out
}

/// Equal JSON, numbers within a relative 1e-15: serde_json's default float parser may be one unit in the last place off
/// (no browserd field depends on that), so a round trip compares with this.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => match (x.as_f64(), y.as_f64()) {
            // serde_json's default float parser is exact to the last bit for normal numbers only: a subnormal (below
            // f64::MIN_POSITIVE) has fewer significant bits, so it reads back within that absolute distance.
            (Some(x), Some(y)) => {
                x == y || ((x - y) / x.abs().max(y.abs())).abs() < 1e-15 || (x - y).abs() < f64::MIN_POSITIVE
            }
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}
