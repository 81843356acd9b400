//! The text of the tab-lifecycle tools: `browser_close`, the marks, `browser_cleanup` / `browser_context_reset`,
//! `browser_list`, `browser_handoff`.

use serde_json::Value;

use super::{failed_lines, list as ids, s};

/// `browser_close`.
pub(super) fn close(r: &Value, out: &mut Vec<String>) {
    out.push(format!("ok={} closed={}", s(r, "ok"), ids(r, "closed")));
    failed_lines(r, out);
}

/// `browser_mark_deliverable`, `browser_mark_handoff`.
pub(super) fn mark(r: &Value, out: &mut Vec<String>) {
    out.push(format!("tab {} marked {} (until this turn ends)", s(r, "tab"), s(r, "mark")));
}

/// `browser_cleanup`, `browser_context_reset`.
pub(super) fn cleanup(r: &Value, out: &mut Vec<String>) {
    out.push(format!(
        "ok={} closed={} released={} kept={} toolsActive={} bridge={}",
        s(r, "ok"),
        ids(r, "closed"),
        ids(r, "released"),
        ids(r, "kept"),
        s(r, "toolsActive"),
        s(r, "bridge")
    ));
    failed_lines(r, out);
}

/// `browser_list`.
pub(super) fn list(r: &Value, out: &mut Vec<String>) {
    for t in r.get("tabs").and_then(Value::as_array).into_iter().flatten() {
        out.push(
            format!("tab {} {} {} {} — {}", s(t, "tab"), s(t, "provenance"), s(t, "state"), s(t, "url"), s(t, "title"))
                .replace("  ", " "),
        );
    }
    if out.is_empty() {
        out.push("no tabs".to_owned());
    }
}

/// `browser_handoff`.
pub(super) fn handoff(r: &Value, out: &mut Vec<String>) {
    out.push(format!("tab {} handed to the user: {}", s(r, "tab"), s(r, "status")));
}
