//! The MCP server itself: an rmcp [`ServerHandler`] that serves the tool catalog and forwards each call
//! to a [`ToolBackend`], plus the session and turn bookkeeping the MCP layer owns.
//!
//! # Session and turns
//! - The broker session is opened lazily, on the first `tools/call`, because Codex names its session
//!   only in the per-call `_meta`. Host and id come from Codex's turn metadata, else the environment
//!   ([`crate::host::identity_from_env`]), else a generated id; a generic host is refined by the
//!   client's name from `initialize`.
//! - Each call's `x-codex-turn-metadata` turn id is compared with the last one: a new id ends the
//!   previous turn (`turn.end {reason: newTurnDetected}`) and begins the new one before the call runs.
//!   A new Codex session id closes the old session (`sessionSwitch`) and opens the new one.
//! - Lifecycle steps are serialised by one async lock; tool calls themselves run concurrently.
//! - When the transport ends (stdin EOF), [`McpServer::shutdown`] closes the session with
//!   `clientGone`, the broker's normal disposal path.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use browserd_protocol::lifecycle::{CloseReason, HostKind, TurnEndReason};
use browserd_protocol::tools::{self, Tool as ProtocolTool, ToolCall, ToolSpec, ToolTier};
use browserd_protocol::{ErrorCode, ErrorData, SessionId};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities, Tool,
    ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value};
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use crate::backend::{ProgressReporter, ProgressUpdate, ToolBackend, ToolRequest};
use crate::host::{CodexTurnMetadata, HostIdentity, host_from_client_name};
use crate::render::{self, ScreenshotStore};

/// How the server behaves; built from [`crate::McpArgs`] or by tests.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Serve the advanced tier too (`browser_evaluate`, console, network, raw CDP). Off by default.
    pub advanced: bool,
    /// Include each tool's output schema in `tools/list` (`browserd mcp --output-schemas`); results carry
    /// `structuredContent` either way.
    pub output_schemas: bool,
    /// The host and host session id when no Codex turn metadata names them.
    pub identity: HostIdentity,
    /// Where screenshots are saved (`None`: image content only).
    pub screenshot_dir: Option<std::path::PathBuf>,
    /// While a call that has a progress token runs, send a progress notification this often
    /// even when the backend reports nothing (keeps host timeouts informed).
    pub heartbeat: Duration,
    /// The host session id was named explicitly (`--host-session-id`): when this server ends, that session is left
    /// to the broker's disconnect grace instead of closed, so the next server started with the same id takes it back
    /// with its tabs (one-shot clients such as the MCP Inspector CLI start one server per call).
    pub keep_named_session: bool,
}

impl ServerOptions {
    /// Defaults for a given identity: core tier only, no output schemas, no screenshot files,
    /// a 5 s heartbeat.
    #[must_use]
    pub fn new(identity: HostIdentity) -> Self {
        Self {
            advanced: false,
            output_schemas: false,
            identity,
            screenshot_dir: None,
            heartbeat: Duration::from_secs(5),
            keep_named_session: false,
        }
    }

    fn serves(&self, tier: ToolTier) -> bool {
        tier == ToolTier::Core || self.advanced
    }
}

/// What the open broker session looks like from here.
#[derive(Debug, Clone)]
struct OpenSession {
    session: SessionId,
    host_session_id: String,
    turn: Option<String>,
    /// Turns already ended here: a late call of one of them must not re-open it.
    ended: Vec<String>,
}

/// How many ended turn ids to remember per session.
const ENDED_TURNS_KEPT: usize = 64;

#[derive(Debug)]
struct State {
    identity: HostIdentity,
    open: Option<OpenSession>,
    closed: bool,
}

struct Inner {
    backend: Arc<dyn ToolBackend>,
    /// Makes call ids unique across MCP processes (MCP request ids restart at 0 in each one).
    call_prefix: String,
    options: ServerOptions,
    screenshots: ScreenshotStore,
    state: Mutex<State>,
    /// Forwards the backend's tool-set changes to the client; started with the first call.
    forwarder: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(task) = self.forwarder.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            task.abort();
        }
    }
}

/// The rmcp handler. Cheap to clone; all clones share one session.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer").field("options", &self.inner.options).finish_non_exhaustive()
    }
}

/// How the session ended when the transport closed.
#[derive(Debug, Clone, PartialEq)]
pub enum ShutdownOutcome {
    /// No session was ever opened; nothing to close.
    NoSession,
    /// `session.close` succeeded (its cleanup result may still list failed tabs).
    Closed(browserd_protocol::lifecycle::CleanupResult),
    /// `session.close` failed; the broker's grace period and leases are the backstop.
    Failed(ErrorData),
    /// The session the host named (`--host-session-id`) was not closed: the broker keeps it through its disconnect
    /// grace for the next server with that id, then disposes of it.
    Left(SessionId),
}

impl McpServer {
    /// A server over `backend`.
    pub fn new(backend: Arc<dyn ToolBackend>, options: ServerOptions) -> Self {
        // Retention limits from the user's config (`[retention]`); the defaults when it cannot be read.
        let retention = browserd_broker::config::load().map(|e| e.config.retention).unwrap_or_default();
        let screenshots = ScreenshotStore::with_retention(options.screenshot_dir.clone(), retention);
        let state = State { identity: options.identity.clone(), open: None, closed: false };
        let call_prefix = crate::host::generated_session_id();
        Self {
            inner: Arc::new(Inner {
                backend,
                call_prefix,
                options,
                screenshots,
                state: Mutex::new(state),
                forwarder: std::sync::Mutex::new(None),
            }),
        }
    }

    /// Starts forwarding the backend's tool-set changes (the broker's `tools.changed`: activation, the advanced
    /// tier, a reset) to the client as `notifications/tools/list_changed`, once per server.
    fn forward_tool_changes(&self, peer: &Peer<RoleServer>) {
        let mut forwarder = self.inner.forwarder.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if forwarder.is_some() {
            return;
        }
        let Some(mut changed) = self.inner.backend.tools_changed() else { return };
        let peer = peer.clone();
        *forwarder = Some(tokio::spawn(async move {
            while changed.changed().await.is_ok() {
                if let Err(error) = peer.notify_tool_list_changed().await {
                    tracing::debug!(%error, "tools/list_changed not sent");
                }
            }
        }));
    }

    /// The tools this server offers, in catalog order, before any session narrows them.
    #[must_use]
    pub fn offered_tools(&self) -> Vec<Tool> {
        offered_specs(&self.inner.options)
            .iter()
            .map(|spec| to_mcp_tool(spec, self.inner.options.output_schemas))
            .collect()
    }

    /// The broker session, if one is open.
    pub async fn session(&self) -> Option<SessionId> {
        self.inner.state.lock().await.open.as_ref().map(|open| open.session.clone())
    }

    /// Closes the session through the normal disposal path (`session.close`); later calls fail with
    /// `SESSION_CLOSED`. Called when the transport ends.
    pub async fn shutdown(&self, reason: CloseReason) -> ShutdownOutcome {
        let mut state = self.inner.state.lock().await;
        state.closed = true;
        let Some(open) = state.open.take() else { return ShutdownOutcome::NoSession };
        if self.inner.options.keep_named_session && open.host_session_id == self.inner.options.identity.host_session_id
        {
            return ShutdownOutcome::Left(open.session);
        }
        match self.inner.backend.close_session(&open.session, reason).await {
            Ok(result) => ShutdownOutcome::Closed(result),
            Err(error) => ShutdownOutcome::Failed(error),
        }
    }

    /// Opens the session if needed and applies the turn change `codex` announces; returns the session.
    async fn prepare(
        &self,
        codex: Option<&CodexTurnMetadata>,
        client: Option<HostKind>,
    ) -> Result<SessionId, ErrorData> {
        let backend = &self.inner.backend;
        let mut state = self.inner.state.lock().await;
        if state.closed {
            return Err(ErrorData::new(ErrorCode::SessionClosed, "this MCP server is shutting down")
                .with_next_step("Restart the MCP server (the host does this when it reconnects)."));
        }
        // Only Codex's metadata names a session per call; without it the open session (or the process identity) holds,
        // so a host that sends the metadata on some calls only never flips between two sessions.
        let named = codex.and_then(|meta| meta.session_id.clone());
        if let (Some(open), Some(named)) = (&state.open, &named)
            && &open.host_session_id != named
        {
            // Codex switched sessions under the same MCP process.
            let old = open.session.clone();
            state.open = None;
            if let Err(error) = backend.close_session(&old, CloseReason::SessionSwitch).await {
                tracing::warn!(session = %old, code = %error.code, message = %error.message, "closing the previous session failed");
            }
        }

        if state.open.is_none() {
            let (host, host_session_id) = match named {
                Some(id) => (HostKind::Codex, id),
                None => {
                    let identity = &state.identity;
                    let host = match (identity.host, client) {
                        (HostKind::Mcp, Some(known)) => known,
                        (host, _) => host,
                    };
                    (host, identity.host_session_id.clone())
                }
            };
            let opened = backend.open_session(host, &host_session_id).await?;
            tracing::info!(session = %opened.session, ?host, %host_session_id, reattached = opened.reattached, "browser session open");
            state.open = Some(OpenSession { session: opened.session, host_session_id, turn: None, ended: Vec::new() });
        }
        let open = state.open.as_mut().expect("opened above");

        if let Some(turn) = codex.and_then(|meta| meta.turn_id.as_deref())
            && open.turn.as_deref() != Some(turn)
        {
            if open.ended.iter().any(|ended| ended == turn) {
                // A late call of a turn that already ended: run it in the current turn, never re-open the old one.
                tracing::debug!(%turn, "call from an ended turn");
                return Ok(open.session.clone());
            }
            if let Some(previous) = open.turn.take() {
                match backend.end_turn(&open.session, TurnEndReason::NewTurnDetected, Some(&previous)).await {
                    Ok(ended) if !ended.ok => {
                        tracing::warn!(turn = %previous, failed = ended.failed.len(), "turn cleanup left tabs for retry");
                    }
                    Ok(_) => {}
                    // Turn cleanup is host-internal: it is recorded and retried by the broker, never shown to the model.
                    Err(error) => {
                        tracing::warn!(turn = %previous, code = %error.code, message = %error.message, "turn.end failed")
                    }
                }
                if open.ended.len() == ENDED_TURNS_KEPT {
                    open.ended.remove(0);
                }
                open.ended.push(previous);
            }
            backend.begin_turn(&open.session, Some(turn)).await?;
            open.turn = Some(turn.to_owned());
        }
        Ok(open.session.clone())
    }

    /// Forgets the open session if it is still `session` (the broker no longer knows it).
    async fn forget(&self, session: &SessionId) {
        let mut state = self.inner.state.lock().await;
        if state.open.as_ref().is_some_and(|open| &open.session == session) {
            state.open = None;
        }
    }

    async fn run_call(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let name = params.name.to_string();
        let Some(tool) = ProtocolTool::from_name(&name) else {
            return Err(ErrorData::new(ErrorCode::InvalidParams, format!("unknown tool `{name}`"))
                .with_next_step("Use a tool from the current tool list."));
        };
        if !self.inner.options.serves(tool.tier()) {
            return Err(ErrorData::new(
                ErrorCode::CapabilityNotActivated,
                format!("`{name}` is an advanced tool and advanced tools are off in this MCP server"),
            )
            .with_next_step("Ask the user to start `browserd mcp --advanced` (or set BROWSERD_MCP_ADVANCED=1)."));
        }
        let arguments = params.arguments.map_or(Value::Object(Map::new()), Value::Object);
        ToolCall::parse(&name, &arguments)?;

        let codex = CodexTurnMetadata::from_meta(&context.meta)
            .or_else(|| params.meta.as_ref().and_then(|meta| CodexTurnMetadata::from_meta(meta)));
        let client = context
            .meta
            .client_info()
            .map(|info| info.name)
            .or_else(|| context.peer.peer_info().map(|info| info.client_info.name.clone()))
            .and_then(|name| host_from_client_name(&name));
        let token = context.meta.get_progress_token();
        let call_id = Some(format!("{}:{}", self.inner.call_prefix, context.id));

        self.forward_tool_changes(&context.peer);
        let mut retried = false;
        // Set once the user approved through elicitation: the same call runs once more (a batch: from that step on).
        let mut approved: Option<(usize, Value)> = None;
        loop {
            let session = self.prepare(codex.as_ref(), client).await?;
            let request = ToolRequest {
                session: session.clone(),
                name: name.clone(),
                arguments: match &approved {
                    Some((from, _)) if *from > 0 => crate::approval::rest_of(&arguments, *from),
                    _ => arguments.clone(),
                },
                // Another call id: the broker answers a repeated call id with its first answer.
                call_id: call_id
                    .as_ref()
                    .map(|id| if approved.is_some() { format!("{id}:approved") } else { id.clone() }),
            };
            let outcome =
                self.call_with_progress(request, &context.peer, token.clone(), context.ct.child_token()).await;
            match outcome {
                // The broker lost or ended the session before running the call: open a new one, once.
                Err(error)
                    if !retried && matches!(error.code, ErrorCode::UnknownSession | ErrorCode::SessionClosed) =>
                {
                    tracing::info!(session = %session, code = %error.code, "session gone; reopening");
                    self.forget(&session).await;
                    retried = true;
                }
                // The user is asked (when the client can be); accept grants and runs it once more.
                Err(error) if error.code == ErrorCode::ApprovalRequired && approved.is_none() => {
                    let details = error.details.as_deref().cloned().unwrap_or_default();
                    match self.ask_user(&context.peer, &details).await {
                        crate::approval::Answer::Accepted => approved = Some((0, Value::Null)),
                        crate::approval::Answer::Declined => return Err(crate::approval::declined(&details)),
                        crate::approval::Answer::NotAsked => return Err(error),
                    }
                }
                Err(error) => return Err(error),
                Ok(value) if tool == ProtocolTool::Batch && approved.is_none() => {
                    let Some((from, details)) = crate::approval::batch_waits(&value) else {
                        return Ok(self.render(value));
                    };
                    match self.ask_user(&context.peer, &details).await {
                        crate::approval::Answer::Accepted => approved = Some((from, value)),
                        crate::approval::Answer::Declined => {
                            return Ok(self.render(crate::approval::batch_declined(value, from)));
                        }
                        crate::approval::Answer::NotAsked => return Ok(self.render(value)),
                    }
                }
                Ok(value) if tool == ProtocolTool::Batch => {
                    let (from, first) = approved.take().unwrap_or_default();
                    return Ok(self.render(if from > 0 { crate::approval::merge(first, from, &value) } else { value }));
                }
                Ok(value) => {
                    if tool == ProtocolTool::ContextReset && self.inner.backend.tools_changed().is_none() {
                        // The session's tools are hidden now; tell the host to list them again.
                        if let Err(error) = context.peer.notify_tool_list_changed().await {
                            tracing::debug!(%error, "tools/list_changed not sent");
                        }
                    }
                    return Ok(self.render(value));
                }
            }
        }
    }

    fn render(&self, value: Value) -> CallToolResult {
        render::success_with(value, &self.inner.screenshots, self.inner.options.output_schemas)
    }

    /// Asks the user through elicitation about the approval `details` names; on accept, grants it.
    async fn ask_user(&self, peer: &Peer<RoleServer>, details: &Value) -> crate::approval::Answer {
        let answer = crate::approval::ask(peer, details).await;
        if answer != crate::approval::Answer::Accepted {
            return answer;
        }
        let id = details["approval"].as_str().unwrap_or_default();
        match self.inner.backend.grant_approval(id).await {
            Ok(()) => answer,
            Err(error) => {
                tracing::warn!(code = %error.code, message = %error.message, "granting the approval failed");
                crate::approval::Answer::NotAsked
            }
        }
    }

    /// Runs the backend call while forwarding its progress (and heartbeats) as MCP progress
    /// notifications, in this task so they precede the response.
    async fn call_with_progress(
        &self,
        request: ToolRequest,
        peer: &Peer<RoleServer>,
        token: Option<ProgressToken>,
        cancel: CancellationToken,
    ) -> Result<Value, ErrorData> {
        let backend = &self.inner.backend;
        let Some(token) = token else {
            return backend.call_tool(request, ProgressReporter::disabled(), cancel).await;
        };
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let call = backend.call_tool(request, ProgressReporter::new(sender), cancel);
        tokio::pin!(call);
        let mut progress = ProgressState::default();
        let mut heartbeat = tokio::time::interval(self.inner.options.heartbeat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        heartbeat.tick().await; // the first tick is immediate
        let result = loop {
            tokio::select! {
                biased;
                Some(update) = receiver.recv() => progress.send(peer, &token, update).await,
                result = &mut call => break result,
                _ = heartbeat.tick() => progress.heartbeat(peer, &token).await,
            }
        };
        while let Ok(update) = receiver.try_recv() {
            progress.send(peer, &token, update).await;
        }
        result
    }

    async fn visible_tools(&self) -> Vec<Tool> {
        let offered = offered_specs(&self.inner.options);
        let session = self.session().await;
        let visible: Vec<&ToolSpec> = match session {
            None => offered.iter().collect(),
            Some(session) => match self.inner.backend.list_tools(&session).await {
                Ok(specs) => {
                    let names: HashSet<String> = specs.into_iter().map(|spec| spec.name).collect();
                    offered.iter().filter(|spec| names.contains(&spec.name)).collect()
                }
                Err(error) => {
                    tracing::warn!(code = %error.code, message = %error.message, "tools.list failed; offering the catalog");
                    offered.iter().collect()
                }
            },
        };
        visible.into_iter().map(|spec| to_mcp_tool(spec, self.inner.options.output_schemas)).collect()
    }
}

/// Keeps progress values strictly increasing, as MCP requires.
#[derive(Debug, Default)]
struct ProgressState {
    last: f64,
    total: Option<f64>,
}

impl ProgressState {
    async fn send(&mut self, peer: &Peer<RoleServer>, token: &ProgressToken, update: ProgressUpdate) {
        let next = match update.progress {
            Some(progress) if progress > self.last => progress,
            _ => self.last + 1.0,
        };
        self.last = next;
        if update.total.is_some() {
            self.total = update.total;
        }
        let mut param = ProgressNotificationParam::new(token.clone(), next);
        param.total = self.total.filter(|total| *total >= next);
        param.message = update.message;
        if let Err(error) = peer.notify_progress(param).await {
            tracing::debug!(%error, "progress notification not sent");
        }
    }

    async fn heartbeat(&mut self, peer: &Peer<RoleServer>, token: &ProgressToken) {
        if self.total.is_some() {
            return; // the backend reports real progress; do not invent steps past it
        }
        let update = ProgressUpdate { progress: None, total: None, message: Some("still working".to_owned()) };
        self.send(peer, token, update).await;
    }
}

fn offered_specs(options: &ServerOptions) -> Vec<ToolSpec> {
    tools::tool_catalog().into_iter().filter(|spec| options.serves(spec.tier)).collect()
}

fn to_mcp_tool(spec: &ToolSpec, output_schemas: bool) -> Tool {
    let input = schema_object(&spec.input_schema);
    let mut tool = Tool::new(spec.name.clone(), spec.description.clone(), Arc::new(input));
    if output_schemas {
        tool = tool.with_raw_output_schema(Arc::new(schema_object(&spec.output_schema)));
    }
    if !spec.title.is_empty() {
        tool = tool.with_title(spec.title.clone());
    }
    if let Some(hints) = &spec.annotations {
        tool = tool.with_annotations(
            ToolAnnotations::new()
                .read_only(hints.read_only_hint)
                .destructive(hints.destructive_hint)
                .idempotent(hints.idempotent_hint)
                .open_world(hints.open_world_hint),
        );
    }
    tool
}

fn schema_object(schema: &Value) -> JsonObject {
    schema.as_object().cloned().unwrap_or_default()
}

const INSTRUCTIONS: &str = "Browser tools for a real Chromium. Tabs you open are closed when your turn ends unless \
you mark them (browser_mark_deliverable / browser_mark_handoff); the user's tabs are never closed. Observe before \
acting; act with refs from the latest observation.";

impl ServerHandler for McpServer {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_server_info(Implementation::new("browserd", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.visible_tools().await))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        offered_specs(&self.inner.options)
            .iter()
            .find(|spec| spec.name == name)
            .map(|spec| to_mcp_tool(spec, self.inner.options.output_schemas))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let result = match self.run_call(request, context).await {
            Ok(result) => result,
            Err(error) => render::error(&error),
        };
        Ok(result.into())
    }
}
