//! The text of a tool result: one table from tool name to its renderer (one small function per tool, grouped by
//! family in this module's files), plus the broker status. Each renderer pushes lines; one item per line.

use browserd_protocol::tools::{
    BROWSER_BATCH, BROWSER_CDP, BROWSER_CLAIM, BROWSER_CLEANUP, BROWSER_CLOSE, BROWSER_CONSOLE, BROWSER_CONTEXT_RESET,
    BROWSER_EVALUATE, BROWSER_HANDOFF, BROWSER_LIST, BROWSER_MARK_DELIVERABLE, BROWSER_MARK_HANDOFF, BROWSER_NETWORK,
    BROWSER_OBSERVE, BROWSER_OPEN,
};
use serde_json::Value;

mod action;
mod advanced;
mod page;
mod status;
mod tabs;

pub use status::status_text;

/// A renderer: the lines of one tool's result.
type Render = fn(&Value, &mut Vec<String>);

/// The renderer table: tool name → renderer; a tool not named here prints its JSON on one line.
fn renderer(tool: &str) -> Render {
    match tool {
        BROWSER_OPEN | BROWSER_CLAIM => page::tab,
        BROWSER_OBSERVE => page::observe,
        "browser_act" => action::act,
        BROWSER_BATCH => action::batch,
        BROWSER_CLOSE => tabs::close,
        BROWSER_MARK_DELIVERABLE | BROWSER_MARK_HANDOFF => tabs::mark,
        BROWSER_CLEANUP | BROWSER_CONTEXT_RESET => tabs::cleanup,
        BROWSER_LIST => tabs::list,
        BROWSER_HANDOFF => tabs::handoff,
        BROWSER_EVALUATE => advanced::evaluate,
        BROWSER_CDP => advanced::cdp,
        BROWSER_CONSOLE => advanced::console,
        BROWSER_NETWORK => advanced::network,
        _ => |r, out| out.push(r.to_string()),
    }
}

/// Readable text of a tool result.
#[must_use]
pub fn tool_text(tool: &str, r: &Value) -> String {
    let mut out = Vec::new();
    renderer(tool)(r, &mut out);
    if let Some(spill) = r.get("spill") {
        out.push(format!("(large result written to {}: {})", s(spill, "path"), s(spill, "summary")));
    }
    out.join("\n")
}

/// Pretty JSON, as `--json` prints it.
pub(super) fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// The field `key` as text (a string without quotes; absent or null is empty).
/// An enum's wire name (`connected`, `activeSticky`), never Rust debug text.
pub(crate) fn wire<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

fn s(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The list field `key` as JSON (`[]` when absent).
fn list(v: &Value, key: &str) -> String {
    v.get(key).map_or_else(|| "[]".to_owned(), Value::to_string)
}

/// One line per failed tab of a close or cleanup.
fn failed_lines(v: &Value, out: &mut Vec<String>) {
    for f in v.get("failed").and_then(Value::as_array).into_iter().flatten() {
        out.push(format!("failed tab {}: {} ({})", s(f, "tab"), s(f, "code"), s(f, "nextStep")));
    }
}
