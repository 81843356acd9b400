//! The text of the action tools: `browser_act` (one line: outcome, dispatch, postcondition, code) and
//! `browser_batch` (one line per step, then where it stopped).

use serde_json::Value;

use super::page::observation_text;
use super::s;

/// `browser_act`.
pub(super) fn act(r: &Value, out: &mut Vec<String>) {
    out.push(action_line(r));
    if let Some(obs) = r.get("observation") {
        out.push(observation_text(obs));
    }
}

/// `browser_batch`.
pub(super) fn batch(r: &Value, out: &mut Vec<String>) {
    for (i, step) in r.get("steps").and_then(Value::as_array).into_iter().flatten().enumerate() {
        out.push(format!("step {i}: {}", action_line(step)));
    }
    if let Some(stop) = r.get("stopped") {
        out.push(format!("stopped at step {} ({})", s(stop, "step"), s(stop, "reason")));
    }
}

fn action_line(r: &Value) -> String {
    let mut line = format!("{} dispatch={} postcondition={}", s(r, "outcome"), s(r, "dispatch"), s(r, "postcondition"));
    if let Some(code) = r.get("code").and_then(Value::as_str) {
        line.push_str(&format!(" code={code}"));
    }
    if let Some(msg) = r.get("message").and_then(Value::as_str) {
        line.push_str(&format!(": {msg}"));
    }
    line
}
