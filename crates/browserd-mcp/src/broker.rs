//! The production [`ToolBackend`]: the broker, through [`browserd_broker::Client`].
//!
//! - The connection is made on first use (so `tools/list` answers at once, before any broker exists) and the
//!   broker is started on demand ([`ConnectOptions::spawn`]).
//! - A dropped connection is made again on the next call, and every session this process opened is re-opened
//!   with the same host session id, which re-attaches it within the broker's disconnect grace period.
//! - `open_session` is `session.open` then `tools.activate` (with the advanced tier when the server serves it):
//!   an MCP host lists the tools from the start, so they are active from the start.
//! - Cancellation: an MCP `notifications/cancelled` cancels the broker request (`broker.cancel`); the broker
//!   answers `CANCELLED` (or the result, if it finished first). An action cancelled after dispatch may still have
//!   taken effect, so the error says to observe before repeating.
//! - Progress: the broker sends none; the MCP layer's heartbeat covers long calls.
//! - The broker's `tools.changed` notifications (activation, the advanced tier, a reset) move the
//!   [`ToolBackend::tools_changed`] counter; the MCP layer turns each into `notifications/tools/list_changed`.

use async_trait::async_trait;
use browserd_broker::client::{Client, ConnectOptions};
use browserd_protocol::browser_settings::BrowserSettings;
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::{
    CleanupResult, CloseReason, HostKind, SessionCloseParams, SessionOpenParams, SessionOpenResult,
    ToolsActivateParams, TurnBeginParams, TurnBeginResult, TurnEndParams, TurnEndReason, TurnEndResult,
};
use browserd_protocol::methods::{MethodParams, ToolsListParams};
use browserd_protocol::policy::SessionPolicy;
use browserd_protocol::tools::{ToolCallParams, ToolSpec};
use browserd_protocol::vision::SessionVisionParams;
use browserd_protocol::{ErrorCode, ErrorData, SessionId, VisionMode};
use serde_json::Value;
use tokio::sync::{Mutex, watch};
use tokio_util::sync::CancellationToken;

use crate::backend::{ProgressReporter, ToolBackend, ToolRequest};

/// The label broker sessions opened by the MCP server carry (shown by `browserd status`).
const SESSION_LABEL: &str = "mcp";

/// [`ToolBackend`] over the broker.
#[derive(Debug)]
pub struct BrokerBackend {
    connect: ConnectOptions,
    advanced: bool,
    /// The session policy every session opened here carries.
    policy: Option<SessionPolicy>,
    /// The vision mode every session of this server gets (`browserd mcp --vision`).
    vision: VisionMode,
    /// The host's image limits (`browserd mcp --max-image-edge/--max-image-bytes`).
    image_limits: Option<browserd_protocol::ImageLimits>,
    /// The browser settings every session of this process asks for (`browserd mcp --headed …`).
    browser: Option<BrowserSettings>,
    state: Mutex<Connection>,
    /// Counts the broker's `tools.changed` notifications on every connection this backend made.
    changed: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct Connection {
    client: Option<Client>,
    /// Sessions this process opened and has not closed: re-opened after a reconnect.
    sessions: Vec<OwnedSession>,
}

#[derive(Debug, Clone)]
struct OwnedSession {
    session: SessionId,
    host: HostKind,
    host_session_id: String,
}

impl BrokerBackend {
    /// A backend reaching the broker as `connect` says; `advanced` asks `tools.activate` for the advanced tier.
    #[must_use]
    pub fn new(connect: ConnectOptions, advanced: bool) -> Self {
        Self {
            connect,
            advanced,
            policy: None,
            vision: VisionMode::NativeMultimodal,
            image_limits: None,
            browser: None,
            state: Mutex::new(Connection::default()),
            changed: watch::Sender::new(0),
        }
    }

    /// Every session this backend opens carries `policy` (`--allowed-origins/--blocked-origins`).
    #[must_use]
    pub fn with_policy(mut self, policy: Option<SessionPolicy>) -> Self {
        self.policy = policy.filter(|p| !p.is_empty());
        self
    }

    /// Opens every session in vision mode `mode` (`browserd mcp --vision`).
    #[must_use]
    pub fn with_vision(mut self, mode: VisionMode) -> Self {
        self.vision = mode;
        self
    }

    /// Every session's screenshots fit `limits` (`browserd mcp --max-image-edge/--max-image-bytes`).
    #[must_use]
    pub fn with_image_limits(mut self, limits: Option<browserd_protocol::ImageLimits>) -> Self {
        self.image_limits = limits;
        self
    }

    fn vision_params(&self, session: &SessionId) -> SessionVisionParams {
        let flag = if self.vision.has_image_route() { "native" } else { "semantic" };
        let mut source = format!("browserd mcp --vision {flag}");
        if let Some(l) = &self.image_limits {
            for (name, v) in [("--max-image-edge", l.max_edge), ("--max-image-bytes", l.max_bytes)] {
                if let Some(v) = v {
                    source.push_str(&format!(" {name} {v}"));
                }
            }
        }
        SessionVisionParams {
            session: session.clone(),
            mode: self.vision,
            source: Some(source),
            limits: self.image_limits.clone(),
        }
    }

    /// This backend, its sessions asking the broker for `browser` (refused by the broker when it cannot honour them).
    #[must_use]
    pub fn with_browser(mut self, browser: Option<BrowserSettings>) -> Self {
        self.browser = browser.filter(|b| !b.is_empty());
        self
    }

    /// The default: the user's broker (started on demand), as the MCP component.
    #[must_use]
    pub fn from_env(advanced: bool) -> Self {
        Self::new(ConnectOptions::new(ComponentRole::Mcp), advanced)
    }

    async fn client(&self) -> Result<Client, ErrorData> {
        let mut state = self.state.lock().await;
        if let Some(client) = &state.client
            && !client.is_closed()
        {
            return Ok(client.clone());
        }
        let client = Client::connect(&self.connect).await.map_err(browserd_broker::ClientError::into_error_data)?;
        if let Some(mut notes) = client.take_notifications() {
            // Ends with the connection.
            let changed = self.changed.clone();
            tokio::spawn(async move {
                while let Some(note) = notes.recv().await {
                    if note.method == browserd_protocol::methods::TOOLS_CHANGED {
                        changed.send_modify(|n| *n += 1);
                    }
                }
            });
        }
        for owned in &mut state.sessions {
            let params = SessionOpenParams {
                host: owned.host,
                host_session_id: owned.host_session_id.clone(),
                label: Some(SESSION_LABEL.to_owned()),
                policy: self.policy.clone(),
                browser: self.browser.clone(),
            };
            match client.call(&params).await {
                Ok(opened) => {
                    tracing::info!(session = %opened.session, reattached = opened.reattached, "session re-opened after a reconnect");
                    // A new id (the broker restarted): calls on the old id fail with UNKNOWN_SESSION and the
                    // MCP layer opens it again, which lands here on this id.
                    owned.session = opened.session;
                    if let Err(error) = client.call(&self.vision_params(&owned.session)).await {
                        tracing::warn!(%error, "setting the vision mode after a reconnect failed");
                    }
                }
                Err(error) => tracing::warn!(%error, "re-opening a session after a reconnect failed"),
            }
        }
        state.client = Some(client.clone());
        Ok(client)
    }

    async fn call<P: MethodParams>(&self, params: &P) -> Result<P::Result, ErrorData> {
        let client = self.client().await?;
        client.call(params).await.map_err(browserd_broker::ClientError::into_error_data)
    }
}

#[async_trait]
impl ToolBackend for BrokerBackend {
    async fn open_session(&self, host: HostKind, host_session_id: &str) -> Result<SessionOpenResult, ErrorData> {
        let params = SessionOpenParams {
            host,
            host_session_id: host_session_id.to_owned(),
            label: Some(SESSION_LABEL.to_owned()),
            policy: self.policy.clone(),
            browser: self.browser.clone(),
        };
        let mut opened = self.call(&params).await?;
        {
            let mut state = self.state.lock().await;
            state.sessions.retain(|owned| owned.host_session_id != host_session_id || owned.host != host);
            state.sessions.push(OwnedSession {
                session: opened.session.clone(),
                host,
                host_session_id: host_session_id.to_owned(),
            });
        }
        self.call(&self.vision_params(&opened.session)).await?;
        let set = self.call(&ToolsActivateParams { session: opened.session.clone(), advanced: self.advanced }).await?;
        if let Some(reason) = set.advanced_refused {
            tracing::warn!(?reason, "the broker refused the advanced tools; only the core tools will work");
        }
        opened.tools = set.tools;
        Ok(opened)
    }

    async fn begin_turn(&self, session: &SessionId, host_turn_id: Option<&str>) -> Result<TurnBeginResult, ErrorData> {
        self.call(&TurnBeginParams { session: session.clone(), host_turn_id: host_turn_id.map(str::to_owned) }).await
    }

    async fn end_turn(
        &self,
        session: &SessionId,
        reason: TurnEndReason,
        host_turn_id: Option<&str>,
    ) -> Result<TurnEndResult, ErrorData> {
        self.call(&TurnEndParams { session: session.clone(), reason, host_turn_id: host_turn_id.map(str::to_owned) })
            .await
    }

    async fn close_session(&self, session: &SessionId, reason: CloseReason) -> Result<CleanupResult, ErrorData> {
        let result = self.call(&SessionCloseParams { session: session.clone(), reason }).await;
        // Closed or not, this process no longer owns it: never re-open it after a reconnect.
        self.state.lock().await.sessions.retain(|owned| &owned.session != session);
        result
    }

    async fn call_tool(
        &self,
        request: ToolRequest,
        _progress: ProgressReporter,
        cancel: CancellationToken,
    ) -> Result<Value, ErrorData> {
        let params = ToolCallParams {
            session: request.session,
            name: request.name.clone(),
            arguments: request.arguments,
            call_id: request.call_id,
        };
        let client = self.client().await?;
        client.call_cancellable(&params, &cancel).await.map_err(|e| {
            let mut data = e.into_error_data();
            if data.code == ErrorCode::Cancelled {
                data =
                    ErrorData::new(ErrorCode::Cancelled, format!("`{}` was cancelled by the MCP client", request.name))
                        .with_next_step("Observe the tab before repeating the action: it may have taken effect.");
            }
            data
        })
    }

    async fn grant_approval(&self, approval: &str) -> Result<(), ErrorData> {
        let params = browserd_protocol::policy::ApprovalGrantParams { approval: approval.to_owned() };
        self.call(&params).await.map(|granted| tracing::info!(approved = %granted.approved, "the user approved"))
    }

    async fn list_tools(&self, session: &SessionId) -> Result<Vec<ToolSpec>, ErrorData> {
        Ok(self.call(&ToolsListParams { session: session.clone() }).await?.tools)
    }

    fn tools_changed(&self) -> Option<watch::Receiver<u64>> {
        Some(self.changed.subscribe())
    }
}
