//! The text of the advanced tier's tools: `browser_evaluate`, `browser_cdp`, `browser_console`, `browser_network`
//! (the log tools end with their cursor).

use serde_json::{Value, json};

use super::s;

/// `browser_evaluate`.
pub(super) fn evaluate(r: &Value, out: &mut Vec<String>) {
    match r.get("exception").and_then(Value::as_str) {
        Some(exception) => out.push(format!("exception: {exception}")),
        None => out.push(r.get("value").map_or_else(|| "null".to_owned(), Value::to_string)),
    }
}

/// `browser_cdp`.
pub(super) fn cdp(r: &Value, out: &mut Vec<String>) {
    out.push(r.get("result").map_or_else(|| "null".to_owned(), Value::to_string));
}

/// `browser_console`.
pub(super) fn console(r: &Value, out: &mut Vec<String>) {
    for e in r.get("entries").and_then(Value::as_array).into_iter().flatten() {
        let source = e.get("source").and_then(Value::as_str).map(|s| format!("  ({s})")).unwrap_or_default();
        out.push(format!("{}: {}{source}", s(e, "level"), s(e, "text")));
    }
    out.push(cursor_line(r));
}

/// `browser_network`.
pub(super) fn network(r: &Value, out: &mut Vec<String>) {
    for e in r.get("requests").and_then(Value::as_array).into_iter().flatten() {
        let status = e.get("error").and_then(Value::as_str).map_or_else(|| s(e, "status"), str::to_owned);
        let status = if status.is_empty() { "pending".to_owned() } else { status };
        let ms = e.get("durationMs").map(|d| format!(" {d} ms")).unwrap_or_default();
        out.push(format!("{} {} {} {status}{ms}", s(e, "method"), s(e, "url"), s(e, "kind")));
    }
    out.push(cursor_line(r));
}

/// The cursor to pass as `--since` next, and whether more entries wait.
fn cursor_line(r: &Value) -> String {
    format!(
        "cursor {}{}",
        s(r, "cursor"),
        if r.get("truncated") == Some(&json!(true)) { " (more available)" } else { "" }
    )
}
