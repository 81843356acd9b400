//! The text of the broker status (`browserd status`, `browserd broker status`): one line per browser, session, tab,
//! lease and recovery record, then the limits.

use browserd_protocol::lifecycle::StatusResult;

use super::wire;

/// Readable text of the broker status.
#[must_use]
pub fn status_text(st: &StatusResult) -> String {
    let mut out = Vec::new();
    let components: Vec<String> = st.components.iter().map(|(k, v)| format!("{k} {v}")).collect();
    out.push(format!("broker: running, protocol v{}, {}", st.protocol_version, components.join(", ")));
    for b in &st.browsers {
        let mut line = format!(
            "browser {}: {}{} bridge={} autoTurnCleanup={}",
            b.browser,
            wire(&b.kind),
            if b.browser_start == browserd_protocol::lifecycle::BrowserStart::NotStarted {
                " (not started)"
            } else {
                ""
            },
            wire(&b.bridge),
            wire(&b.auto_turn_cleanup)
        );
        if !b.missing_capabilities.is_empty() {
            line.push_str(&format!(" (missing {})", b.missing_capabilities.join(", ")));
        }
        out.push(line);
    }
    for s in &st.sessions {
        out.push(format!(
            "session {}: {} {} turn={} tools={}{}{}",
            s.session,
            s.host.as_str(),
            s.host_session_id,
            s.turn,
            wire(&s.tools),
            if s.advanced { " advanced" } else { "" },
            if s.busy { " busy" } else { "" }
        ));
    }
    for t in &st.tabs {
        out.push(format!(
            "tab {}: {} {}{} {}",
            t.tab,
            wire(&t.provenance),
            wire(&t.state),
            t.session.as_ref().map(|s| format!(" session={s}")).unwrap_or_default(),
            t.url.clone().unwrap_or_default()
        ));
    }
    for l in &st.write_leases {
        out.push(format!("write lease: tab {} held by {} (token {})", l.tab, l.holder, l.fencing_token));
    }
    for d in &st.debugger_leases {
        out.push(format!("debugger: tab {} {} by {} refs={}", d.tab, wire(&d.state), d.holder, d.active_refs));
    }
    for r in &st.recovery {
        out.push(format!(
            "recovery: {} tab {} for {} attempts={} last={}",
            wire(&r.what),
            r.tab,
            r.session,
            r.attempts,
            r.last_code.map(|c| c.as_str()).unwrap_or("-")
        ));
    }
    let l = &st.limits;
    out.push(format!(
        "limits: tabs/task {}/{}, running/tab {}/{}, queued {}/{}, page ops {}/{}",
        l.tabs_per_task.used,
        l.tabs_per_task.max,
        l.running_actions_per_tab.used,
        l.running_actions_per_tab.max,
        l.queued_requests.used,
        l.queued_requests.max,
        l.concurrent_page_ops.used,
        l.concurrent_page_ops.max
    ));
    let j = &st.journal;
    let mut line = format!("journal: {}", wire(&j.state));
    if let Some(path) = &j.path {
        line.push_str(&format!(" {path}"));
    }
    if let Some(reason) = &j.reason {
        line.push_str(&format!(" ({reason}); {}", j.next_step.as_deref().unwrap_or_default()));
    }
    out.push(line);
    out.join("\n")
}
