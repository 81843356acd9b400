//! The answer sent in place of one over the connection's frame limit (16 MiB): a typed `INVALID_PARAMS` error under
//! the request's own id that names the size, the limit and how to ask for less (what to ask for depends on what the
//! answer held: an observation's text, a screenshot, a script's value), so the caller never sees the connection
//! close instead.

use browserd_protocol::jsonrpc::{RequestId, Response};
use browserd_protocol::{ErrorCode, ErrorData};
use serde_json::Value;

/// The error answer for `message` (an answer of `size` bytes over `limit`); `None` when the message answered no
/// request (a notification), which is then dropped.
#[must_use]
pub(crate) fn too_large_answer(message: &Value, size: usize, limit: usize) -> Option<Value> {
    let id = serde_json::from_value::<RequestId>(message.get("id")?.clone()).ok()?;
    let result = message.get("result").unwrap_or(&Value::Null);
    let next = next_step(result);
    let e = ErrorData::new(
        ErrorCode::InvalidParams,
        format!(
            "the answer is {size} bytes, over the broker's frame limit of {limit} bytes ({} MiB), so it was not sent; \
             nothing else changed: {next}",
            limit / (1024 * 1024)
        ),
    )
    .with_next_step(next);
    serde_json::to_value(Response::failure(Some(id), e)).ok()
}

/// How to ask for less, from what the answer held.
fn next_step(result: &Value) -> String {
    let holds = |key: &str| has_key(result, key, 3);
    let mut steps = Vec::new();
    if holds("screenshot") {
        steps.push(
            "ask for a smaller screenshot (browser_observe screenshotOptions: a lower quality or maxBytes, a smaller \
             maxSize, no fullPage, or a target ref)",
        );
    }
    if holds("untrustedContent") {
        steps.push(
            "observe less at a time (browser_observe with a smaller maxBytes or maxTokens, `within` a ref, or a \
             `window` of rows; CLI: browserd observe --within REF --limit N)",
        );
    }
    if steps.is_empty() {
        steps.push(
            "ask for less in one call (e.g. a browser_evaluate expression that returns a shorter value, fewer \
             console or network entries), or write large data to a file and pass its path",
        );
    }
    steps.join("; or ")
}

/// Whether `v` holds `key` in an object at most `depth` levels down (an act's `observation`, a tool result's
/// envelope).
fn has_key(v: &Value, key: &str, depth: u32) -> bool {
    match v {
        Value::Object(map) => {
            map.get(key).is_some_and(|v| !v.is_null())
                || (depth > 0 && map.values().any(|v| has_key(v, key, depth - 1)))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_limit_and_what_to_ask_for_under_the_request_id() {
        let obs = json!({"jsonrpc": "2.0", "id": 7, "result": {"untrustedContent": "x"}});
        let a = too_large_answer(&obs, 20_000_000, 16 * 1024 * 1024).unwrap();
        assert_eq!(a["id"], 7);
        assert_eq!(a["error"]["data"]["code"], "INVALID_PARAMS", "{a}");
        let message = a["error"]["message"].as_str().unwrap();
        assert!(message.contains("20000000 bytes") && message.contains("16777216 bytes (16 MiB)"), "{message}");
        assert!(message.contains("maxBytes or maxTokens"), "{message}");
        let shot = json!({"jsonrpc": "2.0", "id": "s", "result": {"observation": {"screenshot": {"data": "x"}}}});
        let a = too_large_answer(&shot, 20_000_000, 16 * 1024 * 1024).unwrap();
        assert!(a["error"]["message"].as_str().unwrap().contains("lower quality"), "{a}");
        let other = json!({"jsonrpc": "2.0", "id": 1, "result": {"value": "x"}});
        let a = too_large_answer(&other, 20_000_000, 16 * 1024 * 1024).unwrap();
        assert!(a["error"]["message"].as_str().unwrap().contains("browser_evaluate"), "{a}");
        assert!(too_large_answer(&json!({"jsonrpc": "2.0", "method": "x"}), 1, 0).is_none());
    }
}
