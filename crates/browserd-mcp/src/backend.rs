//! The seam between the MCP layer and whatever owns browser state: the [`ToolBackend`] trait.
//!
//! The MCP process never holds browser state. Everything a tool does goes through a backend: the broker
//! client in production ([`crate::broker`]), an in-process fake in tests. The MCP layer only translates MCP
//! requests, `_meta` and transport events into these calls.

use async_trait::async_trait;
use browserd_protocol::lifecycle::{
    CleanupResult, CloseReason, HostKind, SessionOpenResult, TurnBeginResult, TurnEndReason, TurnEndResult,
};
use browserd_protocol::tools::ToolSpec;
use browserd_protocol::{ErrorData, SessionId};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// One model tool call, as the backend receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRequest {
    /// The broker session the call runs in.
    pub session: SessionId,
    /// Tool name, e.g. `browser_open`.
    pub name: String,
    /// The tool's arguments (already checked against its input schema by the MCP layer).
    pub arguments: Value,
    /// The host's id for the call (the MCP request id), for logs and de-duplication.
    pub call_id: Option<String>,
}

/// A progress update a backend reports while a call runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    /// Progress so far; must grow from one update to the next. `None` means "one step more".
    pub progress: Option<f64>,
    /// Total, when known.
    pub total: Option<f64>,
    /// What is happening now, for a person.
    pub message: Option<String>,
}

/// Where a backend reports progress. Reporting is free when the client asked for no progress
/// (no `progressToken`): the updates are dropped.
#[derive(Debug, Clone, Default)]
pub struct ProgressReporter {
    sender: Option<mpsc::UnboundedSender<ProgressUpdate>>,
}

impl ProgressReporter {
    /// A reporter that drops every update (the client sent no progress token).
    #[must_use]
    pub fn disabled() -> Self {
        Self { sender: None }
    }

    /// A reporter feeding `sender`.
    #[must_use]
    pub fn new(sender: mpsc::UnboundedSender<ProgressUpdate>) -> Self {
        Self { sender: Some(sender) }
    }

    /// Whether anybody listens; a backend may skip computing progress when not.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.sender.as_ref().is_some_and(|sender| !sender.is_closed())
    }

    /// Reports one update; silently dropped when nobody listens any more.
    pub fn report(&self, update: ProgressUpdate) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(update);
        }
    }

    /// Reports a step with a message and no numbers.
    pub fn step(&self, message: impl Into<String>) {
        self.report(ProgressUpdate { progress: None, total: None, message: Some(message.into()) });
    }
}

/// What the MCP server needs from the owner of browser state (the broker).
///
/// Every method is one broker request; errors are the protocol's typed [`ErrorData`] so the MCP
/// layer can show the stable code and next step to the model.
#[async_trait]
pub trait ToolBackend: Send + Sync + 'static {
    /// `session.open` (and whatever the backend needs to make the tools visible, such as
    /// `tools.activate`). Re-opening the same host session id re-attaches.
    async fn open_session(&self, host: HostKind, host_session_id: &str) -> Result<SessionOpenResult, ErrorData>;

    /// `turn.begin` with the host's turn id, when it has one.
    async fn begin_turn(&self, session: &SessionId, host_turn_id: Option<&str>) -> Result<TurnBeginResult, ErrorData>;

    /// `turn.end`: the host-internal turn cleanup.
    async fn end_turn(
        &self,
        session: &SessionId,
        reason: TurnEndReason,
        host_turn_id: Option<&str>,
    ) -> Result<TurnEndResult, ErrorData>;

    /// `session.close`: final cleanup through the normal disposal path, then the session ends.
    async fn close_session(&self, session: &SessionId, reason: CloseReason) -> Result<CleanupResult, ErrorData>;

    /// `tool.call`. `cancel` fires when the MCP client cancels the request; the backend must then
    /// cancel its own request (the broker decides what a half-done action means) and return.
    async fn call_tool(
        &self,
        request: ToolRequest,
        progress: ProgressReporter,
        cancel: CancellationToken,
    ) -> Result<Value, ErrorData>;

    /// `tools.list`: the tools visible to the session now (empty when its tools are inactive).
    async fn list_tools(&self, session: &SessionId) -> Result<Vec<ToolSpec>, ErrorData>;

    /// `approval.grant`: the user approved the action an `APPROVAL_REQUIRED` answer named (never a model tool; the
    /// MCP layer calls it only on the user's answer to an elicitation).
    async fn grant_approval(&self, approval: &str) -> Result<(), ErrorData> {
        Err(ErrorData::new(
            browserd_protocol::ErrorCode::UnsupportedCapability,
            format!("this backend cannot grant approval {approval}"),
        )
        .with_next_step("Ask the user to run `browserd approve <id>` in a terminal."))
    }

    /// A counter that moves each time the owner of browser state says this process's tool set changed (the
    /// broker's `tools.changed`); the MCP layer forwards each change as `notifications/tools/list_changed`.
    /// `None`: the backend never announces changes.
    fn tools_changed(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }
}
