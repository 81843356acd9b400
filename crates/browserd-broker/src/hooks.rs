//! Host hooks: `browserd hook turn-end` and `browserd hook session-end` read Codex / Claude Code `Stop` and
//! `SessionEnd` hook JSON on stdin (or Codex `notify` JSON as the last argument), find the browser session of that
//! host session, and end its turn or close it.
//!
//! They never block the host: a short overall timeout, no broker start (with no broker there is nothing to clean
//! up), exit status 0 whatever happens, and nothing on stdout (a host reads stdout as a decision); what happened is
//! logged to stderr.

use std::time::Duration;

use browserd_journal::hash::PayloadHash;
use browserd_protocol::SessionId;
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::{
    CloseReason, HostKind, SessionCloseParams, StatusParams, TurnEndParams, TurnEndReason,
};
use serde_json::Value;

use crate::client::{Client, ConnectOptions};

/// Which boundary the hook reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// The host's turn ended (Codex/Claude Code `Stop`, Codex `notify` `agent-turn-complete`).
    TurnEnd,
    /// The host session ended (Claude Code `SessionEnd`).
    SessionEnd,
}

/// What a hook payload says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookInput {
    /// The host, when the payload shows it (`None`: match any hook-capable host).
    pub host: Option<HostKind>,
    /// The host's session (Codex: `session_id` / notify `thread-id`; Claude Code: `session_id`).
    pub host_session_id: String,
    /// The host's turn id, when it has one (Codex).
    pub host_turn_id: Option<String>,
    /// `hook_event_name` or the notify `type`.
    pub event_name: Option<String>,
    /// Claude Code `SessionEnd` reason (`clear`, `logout`, `prompt_input_exit`, `other`).
    pub reason: Option<String>,
    /// The payload's `transcript_path` (Claude Code, Codex `Stop`), read by [`HookInput::turn_identity`].
    pub transcript_path: Option<std::path::PathBuf>,
    /// A digest of the whole payload (canonical JSON).
    pub payload_digest: String,
}

impl HookInput {
    /// What names this turn end, so a repeated delivery of the same one changes nothing (`turn.end`'s
    /// `hostTurnId`): the host's turn id when it sends one (Codex), else a digest of the payload together with the
    /// length and modification time of its transcript. Claude Code's `Stop` carries no turn id and its payloads of
    /// two turns can be alike, but it appends every turn to the transcript: a second delivery of the same `Stop` (the
    /// hook configured twice, a retry) reads the same transcript, the next turn's does not.
    #[must_use]
    pub fn turn_identity(&self) -> String {
        if let Some(turn) = &self.host_turn_id {
            return turn.clone();
        }
        let transcript = self.transcript_path.as_deref().and_then(|path| std::fs::metadata(path).ok()).map(|m| {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{}:{modified}", m.len())
        });
        let identity = serde_json::json!({"payload": self.payload_digest, "transcript": transcript});
        format!("hook:{}", &PayloadHash::of_json(&identity).to_hex()[..24])
    }
}

/// Wire ids (`[3, 7]`), never Rust debug text.
fn ids(tabs: &[browserd_protocol::TabId]) -> String {
    let list: Vec<String> = tabs.iter().map(ToString::to_string).collect();
    format!("[{}]", list.join(", "))
}

/// The failed tabs of a cleanup as `tab CODE` pairs.
fn failures(failed: &[browserd_protocol::lifecycle::TabFailure]) -> String {
    let list: Vec<String> = failed.iter().map(|f| format!("{} {}", f.tab, f.code)).collect();
    format!("[{}]", list.join(", "))
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty()).map(str::to_owned)
}

/// Parses a hook payload: Codex `notify` JSON (`notify_arg`, from argv) wins over stdin hook JSON.
///
/// Host detection: a `notify` payload or a `turn_id` field means Codex (its `Stop` schema requires `turn_id`);
/// otherwise the host is left open (Claude Code sends none), and the session is matched by its id.
///
/// # Errors
/// Neither input is JSON with a session id; the message says what was expected.
pub fn parse_input(stdin: &str, notify_arg: Option<&str>) -> Result<HookInput, String> {
    if let Some(arg) = notify_arg.filter(|a| !a.trim().is_empty()) {
        let v: Value = serde_json::from_str(arg).map_err(|e| format!("the notify argument is not JSON: {e}"))?;
        let session = text(&v, "thread-id")
            .or_else(|| text(&v, "thread_id"))
            .or_else(|| text(&v, "session_id"))
            .ok_or("the notify JSON has no `thread-id`")?;
        return Ok(HookInput {
            host: Some(HostKind::Codex),
            host_session_id: session,
            host_turn_id: text(&v, "turn-id").or_else(|| text(&v, "turn_id")),
            event_name: text(&v, "type"),
            reason: None,
            transcript_path: None,
            payload_digest: PayloadHash::of_json(&v).to_hex(),
        });
    }
    let trimmed = stdin.trim();
    if trimmed.is_empty() {
        return Err("no hook JSON on stdin and no notify JSON argument".to_owned());
    }
    let v: Value = serde_json::from_str(trimmed).map_err(|e| format!("the hook input on stdin is not JSON: {e}"))?;
    let session = text(&v, "session_id").ok_or("the hook JSON has no `session_id`")?;
    let turn = text(&v, "turn_id");
    Ok(HookInput {
        host: turn.is_some().then_some(HostKind::Codex),
        host_session_id: session,
        host_turn_id: turn,
        event_name: text(&v, "hook_event_name"),
        reason: text(&v, "reason"),
        transcript_path: text(&v, "transcript_path").map(std::path::PathBuf::from),
        payload_digest: PayloadHash::of_json(&v).to_hex(),
    })
}

/// The close reason of a `SessionEnd`.
#[must_use]
pub fn close_reason(reason: Option<&str>) -> CloseReason {
    match reason {
        Some("clear") => CloseReason::SessionSwitch,
        _ => CloseReason::HostExit,
    }
}

/// Options of a hook run.
#[derive(Debug, Clone)]
pub struct HookOptions {
    /// Overall time limit.
    pub timeout: Duration,
    /// Force the host kind.
    pub host: Option<HostKind>,
    /// The broker's runtime directory (default: from the environment).
    pub runtime_dir: Option<std::path::PathBuf>,
}

/// Runs a hook: finds the browser session and ends its turn or closes it. Returns a one-line summary for stderr;
/// every failure is a summary too (the caller exits 0 regardless).
pub async fn run_hook(event: HookEvent, input: &HookInput, options: &HookOptions) -> String {
    match tokio::time::timeout(options.timeout, run_inner(event, input, options)).await {
        Ok(Ok(summary)) => summary,
        Ok(Err(why)) => why,
        Err(_) => format!("gave up after {:?}; the broker's idle and lease timeouts will clean up", options.timeout),
    }
}

async fn run_inner(event: HookEvent, input: &HookInput, options: &HookOptions) -> Result<String, String> {
    let connect = ConnectOptions {
        role: ComponentRole::Cli,
        runtime_dir: options.runtime_dir.clone(),
        spawn: false,
        timeout: Some(options.timeout),
        broker_exe: None,
    };
    let client = Client::connect(&connect)
        .await
        .map_err(|e| format!("no browserd broker reachable ({e}); nothing to clean up"))?;
    let status = client.call(&StatusParams::default()).await.map_err(|e| format!("status failed: {e}"))?;
    let host = options.host.or(input.host);
    let candidates: Vec<(SessionId, HostKind)> = status
        .sessions
        .iter()
        .filter(|s| s.host_session_id == input.host_session_id)
        .filter(|s| match host {
            Some(h) => s.host == h,
            None => matches!(s.host, HostKind::Codex | HostKind::ClaudeCode | HostKind::Mcp | HostKind::Other),
        })
        .map(|s| (s.session.clone(), s.host))
        .collect();
    if candidates.is_empty() {
        return Ok(format!("no browser session for host session {}; nothing to do", input.host_session_id));
    }
    let mut lines = Vec::new();
    for (session, host) in candidates {
        match event {
            HookEvent::TurnEnd => {
                let params = TurnEndParams {
                    session: session.clone(),
                    reason: TurnEndReason::HostStop,
                    host_turn_id: Some(input.turn_identity()),
                };
                match client.call(&params).await {
                    Ok(r) => lines.push(format!(
                        "turn {} of {session} ({}) ended: ok={} closed={} released={} kept={} failed={}",
                        r.turn,
                        host.as_str(),
                        r.ok,
                        ids(&r.closed),
                        ids(&r.released),
                        ids(&r.kept),
                        failures(&r.failed)
                    )),
                    Err(e) => lines.push(format!("turn end of {session} failed: {e}")),
                }
            }
            HookEvent::SessionEnd => {
                let params =
                    SessionCloseParams { session: session.clone(), reason: close_reason(input.reason.as_deref()) };
                match client.call(&params).await {
                    Ok(r) => lines.push(format!(
                        "session {session} ({}) closed: ok={} closed={} released={} kept={} failed={}",
                        host.as_str(),
                        r.ok,
                        ids(&r.closed),
                        ids(&r.released),
                        ids(&r.kept),
                        failures(&r.failed)
                    )),
                    Err(e) => lines.push(format!("closing {session} failed: {e}")),
                }
            }
        }
    }
    Ok(lines.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Codex `Stop` hook payload with every required field of `stop.command.input.schema.json`.
    const CODEX_STOP: &str = r#"{"cwd":"/work/repo","hook_event_name":"Stop","last_assistant_message":"done",
        "model":"gpt-5.5","permission_mode":"default","session_id":"019a-codex-thread",
        "stop_hook_active":false,"transcript_path":null,"turn_id":"turn-7"}"#;
    /// A Claude Code `Stop` payload.
    const CLAUDE_STOP: &str = r#"{"session_id":"cc-abc-123","transcript_path":"/home/u/.claude/projects/x.jsonl",
        "cwd":"/work/repo","permission_mode":"default","hook_event_name":"Stop","stop_hook_active":false}"#;
    /// A Claude Code `SessionEnd` payload.
    const CLAUDE_SESSION_END: &str = r#"{"session_id":"cc-abc-123","transcript_path":"/tmp/t.jsonl",
        "cwd":"/work/repo","permission_mode":"default","hook_event_name":"SessionEnd","reason":"prompt_input_exit"}"#;
    /// A Codex `notify` argument.
    const CODEX_NOTIFY: &str = r#"{"type":"agent-turn-complete","thread-id":"019a-codex-thread","turn-id":"12345",
        "cwd":"/work/repo","input-messages":["open the page"],"last-assistant-message":"done"}"#;

    #[test]
    fn codex_stop_is_recognised_with_its_turn() {
        let input = parse_input(CODEX_STOP, None).unwrap();
        assert_eq!(input.host, Some(HostKind::Codex));
        assert_eq!(input.host_session_id, "019a-codex-thread");
        assert_eq!(input.host_turn_id.as_deref(), Some("turn-7"));
        assert_eq!(input.event_name.as_deref(), Some("Stop"));
    }

    #[test]
    fn claude_payloads_leave_the_host_open() {
        let stop = parse_input(CLAUDE_STOP, None).unwrap();
        assert_eq!(stop.host, None);
        assert_eq!(stop.host_session_id, "cc-abc-123");
        assert_eq!(stop.host_turn_id, None);
        let end = parse_input(CLAUDE_SESSION_END, None).unwrap();
        assert_eq!(end.reason.as_deref(), Some("prompt_input_exit"));
        assert_eq!(close_reason(end.reason.as_deref()), CloseReason::HostExit);
        assert_eq!(close_reason(Some("clear")), CloseReason::SessionSwitch);
    }

    #[test]
    fn the_notify_argument_wins_over_stdin() {
        let input = parse_input("", Some(CODEX_NOTIFY)).unwrap();
        assert_eq!(input.host, Some(HostKind::Codex));
        assert_eq!(input.host_session_id, "019a-codex-thread");
        assert_eq!(input.host_turn_id.as_deref(), Some("12345"));
        assert_eq!(input.event_name.as_deref(), Some("agent-turn-complete"));
    }

    #[test]
    fn a_turn_end_is_named_by_the_hosts_turn_id_or_by_its_payload_and_transcript() {
        assert_eq!(parse_input(CODEX_STOP, None).unwrap().turn_identity(), "turn-7");
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("t.jsonl");
        std::fs::write(&transcript, "{\"turn\":1}\n").unwrap();
        let payload = CLAUDE_STOP.replace("/home/u/.claude/projects/x.jsonl", &transcript.display().to_string());
        let first = parse_input(&payload, None).unwrap().turn_identity();
        assert_eq!(parse_input(&payload, None).unwrap().turn_identity(), first, "the same Stop delivered twice");
        // The next turn appends to the transcript: the same-looking payload is another turn end.
        std::fs::write(&transcript, "{\"turn\":1}\n{\"turn\":2}\n").unwrap();
        let second = parse_input(&payload, None).unwrap().turn_identity();
        assert_ne!(second, first);
        assert!(second.starts_with("hook:"), "{second}");
    }

    #[test]
    fn hook_lines_show_wire_ids() {
        use browserd_protocol::TabId;
        assert_eq!(ids(&[TabId(10), TabId(11)]), "[10, 11]");
        let failed =
            [browserd_protocol::lifecycle::TabFailure::new(TabId(4), browserd_protocol::ErrorCode::CleanupFailed)];
        assert_eq!(failures(&failed), "[4 CLEANUP_FAILED]");
    }

    #[test]
    fn unusable_input_says_what_was_expected() {
        assert!(parse_input("", None).unwrap_err().contains("no hook JSON"));
        assert!(parse_input("not json", None).unwrap_err().contains("not JSON"));
        assert!(parse_input(r#"{"hook_event_name":"Stop"}"#, None).unwrap_err().contains("session_id"));
        assert!(parse_input("", Some(r#"{"type":"x"}"#)).unwrap_err().contains("thread-id"));
    }
}
