//! Fuzz target (bounded, in the default run): the JSON-RPC envelope and the params of every method and tool. Arbitrary
//! text and structured near-misses (objects built from the field names of each schema) must give a message or a typed
//! error, never a panic; a well-formed request survives a round trip. Found cases are kept in
//! `tests/fuzz.proptest-regressions`. `PROPTEST_CASES` raises the number of cases for a deep run.

use browserd_protocol::ErrorCode;
use browserd_protocol::jsonrpc::{Message, Request, RequestId};
use browserd_protocol::methods::{Method, MethodCall};
use browserd_protocol::tools::{Tool, ToolCall};
use browserd_test_support::fuzz::{json_eq, json_object, json_value, schema_keys};
use proptest::prelude::*;
use serde_json::{Value, json};

fn config() -> ProptestConfig {
    ProptestConfig { cases: 256, max_shrink_iters: 2048, ..ProptestConfig::default() }
}

fn envelope_keys() -> Vec<String> {
    ["jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data"].map(str::to_owned).to_vec()
}

/// Every field name of every method's and tool's params, and every method and tool name.
fn all_keys() -> Vec<String> {
    let mut keys = envelope_keys();
    for m in Method::ALL {
        keys.push(m.name().to_owned());
        schema_keys(&m.params_schema(), &mut keys);
    }
    for t in Tool::ALL {
        keys.push(t.name().to_owned());
        schema_keys(&t.input_schema(), &mut keys);
    }
    keys.sort();
    keys.dedup();
    keys
}

fn method_name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(Method::ALL.to_vec()).prop_map(|m| m.name().to_owned()),
        1 => ".{0,16}",
    ]
}

/// One envelope-shaped object: maybe `jsonrpc`, `id`, `method`, `params`, `result`, `error`, each arbitrary.
fn envelope() -> impl Strategy<Value = Value> {
    let keys = all_keys();
    (
        prop_oneof![Just(json!("2.0")), json_value(keys.clone())],
        proptest::option::of(json_value(keys.clone())),
        proptest::option::of(method_name().prop_map(Value::String)),
        proptest::option::of(json_object(keys.clone())),
        proptest::option::of(json_value(keys)),
    )
        .prop_map(|(version, id, method, params, other)| {
            let mut m = serde_json::Map::new();
            m.insert("jsonrpc".into(), version);
            if let Some(id) = id {
                m.insert("id".into(), id);
            }
            if let Some(method) = method {
                m.insert("method".into(), method);
            }
            if let Some(params) = params {
                m.insert("params".into(), params);
            }
            if let Some(other) = other {
                m.insert(if other.is_object() { "error" } else { "result" }.into(), other);
            }
            Value::Object(m)
        })
}

/// A message or a typed error; a request's method and params decode to a call or a typed error.
fn read(value: Value) {
    match Message::from_value(value) {
        Ok(Message::Request(r)) => match MethodCall::from_request(&r) {
            Ok(call) => assert_eq!(call.method().name(), r.method),
            Err(e) => {
                assert!(matches!(e.code, ErrorCode::MethodNotFound | ErrorCode::InvalidParams), "{e:?}");
                assert!(!e.message.is_empty());
            }
        },
        Ok(_) => {}
        Err(invalid) => {
            assert!(matches!(invalid.error.code, ErrorCode::InvalidRequest | ErrorCode::ParseError), "{invalid}");
            let response = invalid.into_response();
            serde_json::to_string(&response).expect("an error response always encodes");
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_text_is_a_message_or_a_typed_error(text in ".{0,200}") {
        if let Err(invalid) = Message::parse(&text) {
            prop_assert!(matches!(invalid.error.code, ErrorCode::ParseError | ErrorCode::InvalidRequest));
        }
    }

    #[test]
    fn envelopes_decode_or_fail_typed(value in envelope()) {
        read(value.clone());
        read(Value::Array(vec![value.clone()]));
        // The same bytes through the text path.
        let _ = Message::parse(&value.to_string());
    }

    #[test]
    fn every_methods_params_decode_or_fail_typed(
        method in proptest::sample::select(Method::ALL.to_vec()),
        params in json_object(all_keys()),
        any_value in json_value(all_keys()),
    ) {
        for p in [Some(&params), Some(&any_value), None] {
            if let Err(e) = MethodCall::parse(method.name(), p) {
                prop_assert_eq!(e.code, ErrorCode::InvalidParams, "{}: {:?}", method.name(), e);
                prop_assert!(!e.message.is_empty());
            }
        }
    }

    #[test]
    fn every_tools_arguments_decode_or_fail_typed(
        tool in proptest::sample::select(Tool::ALL.to_vec()),
        args in json_object(all_keys()),
        any_value in json_value(all_keys()),
    ) {
        for a in [&args, &any_value, &Value::Null] {
            if let Err(e) = ToolCall::parse(tool.name(), a) {
                prop_assert_eq!(e.code, ErrorCode::InvalidParams, "{}: {:?}", tool.name(), e);
            }
        }
        // Through `tool.call`, as a client sends it.
        let call = json!({"session": "s1", "name": tool.name(), "arguments": args});
        let _ = MethodCall::parse("tool.call", Some(&call));
    }

    #[test]
    fn a_well_formed_request_round_trips(
        id in prop_oneof![any::<i64>().prop_map(RequestId::from), "[a-z0-9-]{1,12}".prop_map(RequestId::from)],
        method in method_name(),
        params in json_object(all_keys()),
    ) {
        let request = Request::new(id, method, &params).unwrap();
        let text = serde_json::to_string(&request).unwrap();
        match Message::parse(&text) {
            Ok(Message::Request(back)) => {
                prop_assert_eq!(&back.id, &request.id);
                prop_assert_eq!(&back.method, &request.method);
                prop_assert!(json_eq(back.params.as_ref().unwrap(), request.params.as_ref().unwrap()), "{text}");
            }
            other => prop_assert!(false, "{text} read back as {other:?}"),
        }
    }
}
