//! Who the MCP host is and which of its sessions and turns a call belongs to.
//!
//! - Codex sends `_meta["x-codex-turn-metadata"]` on every `tools/call` with `session_id` and `turn_id`
//!   (openai/codex PRs #15190, #21219); [`CodexTurnMetadata::from_meta`] reads it (an object, or the same
//!   object as a JSON string, as Codex sends it in its HTTP header).
//! - Claude Code (2.1.154 and later, per its changelog) starts stdio MCP servers with `CLAUDECODE=1` and
//!   `CLAUDE_CODE_SESSION_ID`; Codex puts `CODEX_THREAD_ID` in its children's environment in some setups.
//! - Otherwise the MCP process makes up one id for itself ([`generated_session_id`]).

use browserd_protocol::lifecycle::HostKind;
use serde_json::{Map, Value};

/// The `_meta` key Codex uses for its turn metadata.
pub const CODEX_TURN_METADATA_KEY: &str = "x-codex-turn-metadata";

/// Environment variable: Claude Code's session id (given to stdio MCP servers since 2.1.154).
pub const ENV_CLAUDE_SESSION_ID: &str = "CLAUDE_CODE_SESSION_ID";
/// Environment variable: set to `1` in processes Claude Code spawns.
pub const ENV_CLAUDECODE: &str = "CLAUDECODE";
/// Environment variable: Codex's thread (session) id, when Codex passes it on.
pub const ENV_CODEX_THREAD_ID: &str = "CODEX_THREAD_ID";

/// The identity fields of Codex's per-call turn metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexTurnMetadata {
    /// Codex's session (thread) id; the same id its `Stop` hook reports.
    pub session_id: Option<String>,
    /// Codex's turn id; a new one means the previous turn is over.
    pub turn_id: Option<String>,
}

impl CodexTurnMetadata {
    /// Reads `x-codex-turn-metadata` from a request's `_meta` map. `None` when absent, malformed, or
    /// carrying neither id.
    #[must_use]
    pub fn from_meta(meta: &Map<String, Value>) -> Option<Self> {
        let raw = meta.get(CODEX_TURN_METADATA_KEY)?;
        let parsed;
        let object = match raw {
            Value::Object(object) => object,
            Value::String(text) => {
                parsed = serde_json::from_str::<Value>(text).ok()?;
                parsed.as_object()?
            }
            _ => return None,
        };
        let field = |names: &[&str]| {
            names.iter().find_map(|name| match object.get(*name) {
                Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
                Some(Value::Number(n)) => Some(n.to_string()),
                _ => None,
            })
        };
        let session_id = field(&["session_id", "thread_id", "sessionId", "threadId"]);
        let turn_id = field(&["turn_id", "turnId"]);
        (session_id.is_some() || turn_id.is_some()).then_some(Self { session_id, turn_id })
    }
}

/// The host and host session id the MCP process knows at start, before any call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostIdentity {
    /// The host.
    pub host: HostKind,
    /// The host's session id, or a generated one.
    pub host_session_id: String,
    /// Whether `host_session_id` came from the host (environment or flags) rather than being made up.
    pub from_host: bool,
}

/// Works out the host from environment variables (read through `var`, so tests need no process env).
///
/// Order: `CLAUDE_CODE_SESSION_ID` (Claude Code), `CODEX_THREAD_ID` (Codex), then a generated id with
/// the host kind `ClaudeCode` when `CLAUDECODE=1`, else `Mcp`. The MCP client's name
/// (see [`host_from_client_name`]) can refine `Mcp` later.
pub fn identity_from_env(var: impl Fn(&str) -> Option<String>) -> HostIdentity {
    let present = |name: &str| var(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    if let Some(id) = present(ENV_CLAUDE_SESSION_ID) {
        return HostIdentity { host: HostKind::ClaudeCode, host_session_id: id, from_host: true };
    }
    if let Some(id) = present(ENV_CODEX_THREAD_ID) {
        return HostIdentity { host: HostKind::Codex, host_session_id: id, from_host: true };
    }
    let host = if present(ENV_CLAUDECODE).as_deref() == Some("1") { HostKind::ClaudeCode } else { HostKind::Mcp };
    HostIdentity { host, host_session_id: generated_session_id(), from_host: false }
}

/// The host kind an MCP client's `clientInfo.name` names, when it is one browserd knows.
#[must_use]
pub fn host_from_client_name(name: &str) -> Option<HostKind> {
    let name = name.to_ascii_lowercase();
    if name.starts_with("codex") {
        Some(HostKind::Codex)
    } else if name.starts_with("claude-code") || name.starts_with("claude code") {
        Some(HostKind::ClaudeCode)
    } else {
        None
    }
}

/// A host session id for an MCP process whose host gave none: unique per process and start time.
#[must_use]
pub fn generated_session_id() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("mcp-{}-{nanos:x}", std::process::id())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn meta(value: Value) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert(CODEX_TURN_METADATA_KEY.to_owned(), value);
        map
    }

    #[test]
    fn codex_metadata_is_read_as_object_or_json_string() {
        let object = meta(json!({"session_id": "s-1", "turn_id": "t-1", "turn_started_at_unix_ms": 5}));
        let expected = CodexTurnMetadata { session_id: Some("s-1".into()), turn_id: Some("t-1".into()) };
        assert_eq!(CodexTurnMetadata::from_meta(&object), Some(expected.clone()));
        let string = meta(Value::String(r#"{"session_id":"s-1","turn_id":"t-1"}"#.into()));
        assert_eq!(CodexTurnMetadata::from_meta(&string), Some(expected));
        let thread = meta(json!({"thread_id": "th", "turn_id": 42}));
        assert_eq!(
            CodexTurnMetadata::from_meta(&thread),
            Some(CodexTurnMetadata { session_id: Some("th".into()), turn_id: Some("42".into()) })
        );
    }

    #[test]
    fn absent_or_malformed_codex_metadata_is_none() {
        assert_eq!(CodexTurnMetadata::from_meta(&Map::new()), None);
        assert_eq!(CodexTurnMetadata::from_meta(&meta(json!("not json"))), None);
        assert_eq!(CodexTurnMetadata::from_meta(&meta(json!(7))), None);
        assert_eq!(CodexTurnMetadata::from_meta(&meta(json!({"model": "m", "turn_id": " "}))), None);
    }

    #[test]
    fn host_identity_prefers_host_given_ids() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
        };
        let claude = identity_from_env(env(&[("CLAUDE_CODE_SESSION_ID", "c-9"), ("CODEX_THREAD_ID", "x")]));
        assert_eq!(claude, HostIdentity { host: HostKind::ClaudeCode, host_session_id: "c-9".into(), from_host: true });
        let codex = identity_from_env(env(&[("CODEX_THREAD_ID", "th-1")]));
        assert_eq!((codex.host, codex.host_session_id.as_str(), codex.from_host), (HostKind::Codex, "th-1", true));
        let bare_claude = identity_from_env(env(&[("CLAUDECODE", "1"), ("CLAUDE_CODE_SESSION_ID", " ")]));
        assert_eq!((bare_claude.host, bare_claude.from_host), (HostKind::ClaudeCode, false));
        assert!(bare_claude.host_session_id.starts_with("mcp-"));
        let generic = identity_from_env(env(&[]));
        assert_eq!((generic.host, generic.from_host), (HostKind::Mcp, false));
    }

    #[test]
    fn client_names_map_to_hosts() {
        assert_eq!(host_from_client_name("codex-mcp-client"), Some(HostKind::Codex));
        assert_eq!(host_from_client_name("claude-code"), Some(HostKind::ClaudeCode));
        assert_eq!(host_from_client_name("inspector"), None);
    }
}
