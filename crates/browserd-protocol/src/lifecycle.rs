//! Lifecycle calls that host adapters make (`session.open`, `turn.end`, ...) and the state
//! vocabulary they and `status` report: tool activation, tab provenance, task-resource states,
//! bridge state, leases, recovery records, limits and capabilities.
//!
//! These calls are made by adapters and the CLI, never by models; models see the compact
//! results of `browser_cleanup`, `browser_context_reset` and `browser_status` (see `tools`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::errors::{ErrorCode, ErrorData};
use crate::ids::{FencingToken, GroupId, SessionId, TabId};
use crate::jsonrpc::Validate;

/// The host an agent session lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum HostKind {
    /// Pi.
    Pi,
    /// DeepSeek Harness.
    Dsh,
    /// A generic MCP host.
    Mcp,
    /// Codex (through MCP and hooks).
    Codex,
    /// Claude Code (through MCP and hooks).
    ClaudeCode,
    /// The `browserd` command line.
    Cli,
    /// Anything else.
    Other,
}

impl HostKind {
    /// The wire name (`claudeCode`, `codex`, ...), for text meant for people.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            HostKind::Pi => "pi",
            HostKind::Dsh => "dsh",
            HostKind::Mcp => "mcp",
            HostKind::Codex => "codex",
            HostKind::ClaudeCode => "claudeCode",
            HostKind::Cli => "cli",
            HostKind::Other => "other",
        }
    }
}

/// Why a session ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CloseReason {
    /// The host process exits.
    HostExit,
    /// The host switched to another session.
    SessionSwitch,
    /// The host forked the session.
    Fork,
    /// The plugin/extension hosting the adapter is unloaded.
    PluginUnload,
    /// The agent was disposed.
    AgentDisposed,
    /// The client connection went away (e.g. MCP stdin EOF).
    ClientGone,
    /// A person asked for it.
    User,
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnEndReason {
    /// The agent loop finished (Pi `agent_end`, DSH `turn/end`).
    AgentEnd,
    /// The host's stop hook fired (Codex/Claude Code `Stop`).
    HostStop,
    /// A new turn was noticed before the old one was ended.
    NewTurnDetected,
    /// No activity for the configured idle window (backstop for missed signals).
    IdleTimeout,
    /// An explicit `browserd hook turn-end`.
    Hook,
}

/// Whether a session's browser tools are visible (per session; turn end and finalize never change it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ToolActivation {
    /// Tools hidden.
    #[default]
    Inactive,
    /// Tools visible until context reset, session end or disposal.
    ActiveSticky,
}

impl ToolActivation {
    /// Whether the tools are visible.
    #[must_use]
    pub const fn is_active(self) -> bool {
        matches!(self, ToolActivation::ActiveSticky)
    }
}

/// How a tab came to be known to the asking session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Provenance {
    /// The user's tab; never closed by agents.
    User,
    /// Opened by this session.
    AgentCreated,
    /// A user tab this session claimed; released, not closed.
    Claimed,
    /// Marked for handoff to the user.
    Handoff,
    /// Marked as a deliverable.
    Deliverable,
    /// Held by another session; not touchable.
    OtherSession,
}

/// A tab record's task-resource state. Only a confirmed close/release reaches `released`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ResourceState {
    /// No browser resources held.
    NoResources,
    /// Held by the session.
    Owned,
    /// Kept past cleanup (marked deliverable/handoff).
    Retained,
    /// Cleanup in progress.
    Finalizing,
    /// Closed or released, confirmed by the browser.
    Released,
    /// A close/release failed or its outcome is unknown; a recovery record retries it.
    CleanupUnknown,
}

/// A turn-scoped mark: the tab is kept past turn end only if marked again each turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MarkKind {
    /// A result for the user.
    Deliverable,
    /// Waiting for the user to continue.
    Handoff,
}

/// A browser connection's bridge state; it never closes tabs or changes tool activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum BridgeState {
    /// Not connected.
    Stopped,
    /// Connected and healthy.
    Connected,
    /// Lost and trying again.
    Reconnecting,
}

/// Why a capability is unavailable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum UnsupportedReason {
    /// This browser connection does not implement it.
    ByImplementation,
    /// The peer's protocol or browser version is too old.
    ByVersion,
    /// Not paired or not permitted.
    Unauthorised,
    /// Administrator or user policy blocks it.
    PolicyBlocked,
    /// The browser is not connected.
    Offline,
}

impl UnsupportedReason {
    /// The matching error code.
    #[must_use]
    pub const fn code(self) -> ErrorCode {
        match self {
            UnsupportedReason::ByImplementation => ErrorCode::UnsupportedByImplementation,
            UnsupportedReason::ByVersion => ErrorCode::UnsupportedByVersion,
            UnsupportedReason::Unauthorised => ErrorCode::Unauthorised,
            UnsupportedReason::PolicyBlocked => ErrorCode::PolicyBlocked,
            UnsupportedReason::Offline => ErrorCode::Offline,
        }
    }
}

/// One capability and, when unavailable, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapabilityStatus {
    /// Capability name, e.g. `turnCleanup`.
    pub name: String,
    /// Absent when supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<UnsupportedReason>,
    /// When unsupported: why, in words, and what applies instead (e.g. downloads over the extension relay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Whether the broker runs cleanup automatically at turn end on a browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AutoTurnCleanup {
    /// Runs at every turn end.
    Enabled,
    /// Refused: the browser lacks a required capability (listed in `missingCapabilities`).
    Refused,
    /// No browser yet: it starts at the first browser operation, and its capabilities are checked then. Nothing can
    /// be owned before that, so there is nothing to clean up.
    Pending,
}

/// Whether the broker's browser has been started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum BrowserStart {
    /// The browser starts on first use and has not been needed yet.
    NotStarted,
    /// The browser has been started (or connected); see `bridge` for whether it is reachable now.
    #[default]
    Started,
}

/// Whether the broker's durable journal (de-duplication log, owned-tab ledger, recovery records, audit) works.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum JournalState {
    /// Open, and its last write succeeded.
    #[default]
    Ok,
    /// It could not be opened, or a write failed: operations that dispatch input or open or claim a tab are refused
    /// (`JOURNAL_UNAVAILABLE`) until it works again; reads and cleanup keep working.
    Degraded,
    /// This broker runs without a journal (no state directory configured).
    Off,
}

/// The journal as `status` and `browser_status` report it (`browserd doctor` reads it from `status`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JournalStatus {
    /// State.
    pub state: JournalState,
    /// The journal file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Why it is degraded (the failed open or write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What to free or fix (when degraded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
}

/// A tab that a cleanup or close could not handle, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TabFailure {
    /// Tab id.
    pub tab: TabId,
    /// Why.
    pub code: ErrorCode,
    /// What to do.
    pub next_step: String,
}

impl TabFailure {
    /// A failure with the code's default next step.
    #[must_use]
    pub fn new(tab: TabId, code: ErrorCode) -> Self {
        Self { tab, code, next_step: code.next_step().to_owned() }
    }
}

/// The compact result of a finalize: `browser_cleanup`, `session.close`, `context.reset`.
/// `ok` is false whenever any requested close or release was not confirmed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CleanupResult {
    /// Everything asked was done.
    pub ok: bool,
    /// Tabs closed.
    pub closed: Vec<TabId>,
    /// Claimed tabs released (left open).
    pub released: Vec<TabId>,
    /// Tabs kept open.
    pub kept: Vec<TabId>,
    /// Browser tools still visible.
    pub tools_active: bool,
    /// Bridge state.
    pub bridge: BridgeState,
    /// Tabs not handled; retried later.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<TabFailure>,
}

/// Params of `session.open`: a host session starts (or re-attaches to) a broker session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionOpenParams {
    /// The host.
    pub host: HostKind,
    /// The host's own session id; the same id re-attaches to the same broker session.
    pub host_session_id: String,
    /// Display label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The session's own origin lists (narrow the broker's `[policy]`); a re-attach with them replaces the old.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<crate::policy::SessionPolicy>,
    /// Browser settings this session asks for (`browserd mcp --headed …`). Browser-wide ones the broker's default
    /// managed browser does not have get a managed browser of their own (shared by the sessions asking the same, up
    /// to `max_browsers`: else `TOO_MANY_BROWSERS`; a profile directory another browser has: `PROFILE_IN_USE`); with
    /// a remote endpoint or the extension they are refused (`UNSUPPORTED_BY_IMPLEMENTATION`), never ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<crate::browser_settings::BrowserSettings>,
}

impl Validate for SessionOpenParams {
    fn validate(&self) -> Result<(), String> {
        if self.host_session_id.trim().is_empty() {
            return Err("hostSessionId must not be empty".to_owned());
        }
        self.browser.as_ref().map_or(Ok(()), crate::browser_settings::BrowserSettings::validate)
    }
}

/// Result of `session.open`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionOpenResult {
    /// The broker's session id, used in every later call.
    pub session: SessionId,
    /// An existing session with this host session id was re-attached.
    pub reattached: bool,
    /// Current tool activation (a re-attached session keeps its own).
    pub tools: ToolActivation,
    /// Current turn number (0 before the first `turn.begin`).
    pub turn: u64,
}

/// Params of `session.close`: final cleanup, then the session ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionCloseParams {
    /// Session to close.
    pub session: SessionId,
    /// Why.
    pub reason: CloseReason,
}

impl Validate for SessionCloseParams {}

/// Params of `turn.begin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TurnBeginParams {
    /// Session.
    pub session: SessionId,
    /// The host's turn id, when it has one (e.g. Codex turn metadata).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_turn_id: Option<String>,
}

impl Validate for TurnBeginParams {}

/// Result of `turn.begin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnBeginResult {
    /// The new turn's number.
    pub turn: u64,
}

/// Params of `turn.end`: the host-internal turn cleanup (never model-visible).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TurnEndParams {
    /// Session.
    pub session: SessionId,
    /// Why the turn ended.
    pub reason: TurnEndReason,
    /// The host's turn id, when it has one; a repeated end of the same turn is a no-op.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_turn_id: Option<String>,
}

impl Validate for TurnEndParams {}

/// Result of `turn.end`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnEndResult {
    /// Everything the turn cleanup attempted was confirmed.
    pub ok: bool,
    /// The turn that ended.
    pub turn: u64,
    /// Whether automatic cleanup ran.
    pub auto_turn_cleanup: AutoTurnCleanup,
    /// Why automatic cleanup was refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_capabilities: Vec<String>,
    /// Unmarked scratch tabs closed.
    pub closed: Vec<TabId>,
    /// Claimed tabs released.
    pub released: Vec<TabId>,
    /// Marked tabs kept with their ownership records.
    pub kept: Vec<TabId>,
    /// Tabs whose debugger lease was detached.
    pub detached: Vec<TabId>,
    /// Tabs not handled; a recovery record retries them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<TabFailure>,
}

/// Params of `tools.activate`: make the session's browser tools visible (active-sticky).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolsActivateParams {
    /// Session.
    pub session: SessionId,
    /// Also enable the advanced tier (policy-gated).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub advanced: bool,
}

impl Validate for ToolsActivateParams {}

/// Result of `tools.activate`, and the params of the `tools.changed` notification (hence it
/// refuses unknown fields like every params type).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolSet {
    /// Session.
    pub session: SessionId,
    /// Activation state.
    pub tools: ToolActivation,
    /// The advanced tier is enabled.
    pub advanced: bool,
    /// Why the advanced tier was refused, when asked for and refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advanced_refused: Option<UnsupportedReason>,
    /// What to do to get the advanced tier, when it was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advanced_next_step: Option<String>,
    /// Names of the tools now visible.
    pub names: Vec<String>,
}

impl Validate for ToolSet {}

/// Params of `context.reset`: finalize, then hide the tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContextResetParams {
    /// Session.
    pub session: SessionId,
    /// Also disconnect this client from the bridge (the shared bridge keeps running).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disconnect_client: bool,
}

impl Validate for ContextResetParams {}

/// The compact result of a context reset (`context.reset`, `browser_context_reset`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextResetResult {
    /// Finalize succeeded and tools were hidden. When false nothing was reset.
    pub ok: bool,
    /// Tabs closed.
    pub closed: Vec<TabId>,
    /// Claimed tabs released.
    pub released: Vec<TabId>,
    /// Tabs kept open (marked).
    pub kept: Vec<TabId>,
    /// Browser tools still visible (false after success).
    pub tools_active: bool,
    /// Bridge state.
    pub bridge: BridgeState,
    /// This client was disconnected.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client_disconnected: bool,
    /// Tabs not handled; retried later.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<TabFailure>,
}

/// Params of `client.disconnect`: this client leaves; its sessions stay for re-attachment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientDisconnectParams {
    /// Cancel this client's running requests instead of waiting for them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel_active: bool,
}

impl Validate for ClientDisconnectParams {}

/// Result of `client.disconnect`: the minimum needed to reconnect later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientDisconnectResult {
    /// Sessions this client had open; `session.open` with the same host session id re-attaches.
    pub sessions: Vec<SessionId>,
    /// Requests cancelled.
    pub cancelled: u32,
    /// Recovery records still pending for those sessions.
    pub pending_recovery: u32,
}

/// Params of `status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusParams {
    /// Only this session (and the tabs it sees); all sessions when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
}

impl Validate for StatusParams {}

/// One used/maximum pair of a configured limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// In use now.
    pub used: u32,
    /// Configured maximum.
    pub max: u32,
}

/// Configured limits and their current use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Controlled tabs per task (default 3).
    pub tabs_per_task: Usage,
    /// Running actions per tab (default 1).
    pub running_actions_per_tab: Usage,
    /// Queued requests (default 16).
    pub queued_requests: Usage,
    /// Concurrent page operations, all sessions (default 4).
    pub concurrent_page_ops: Usage,
}

/// The operation a recovery record retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RecoveryAction {
    /// Close a tab.
    Close,
    /// Release a claimed tab.
    Release,
    /// Detach a debugger lease.
    Detach,
}

/// Cleanup that failed or whose outcome is unknown; retried by the next operation, finalize or disposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryRecord {
    /// What is retried.
    pub what: RecoveryAction,
    /// Tab.
    pub tab: TabId,
    /// Session that owns the record (kept across session switch).
    pub session: SessionId,
    /// Attempts so far.
    pub attempts: u32,
    /// Code of the last failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_code: Option<ErrorCode>,
    /// Message of the last failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl RecoveryRecord {
    /// Records a failure of `what` on `tab`, taking code and message from `error`.
    #[must_use]
    pub fn from_failure(
        what: RecoveryAction,
        tab: TabId,
        session: SessionId,
        attempts: u32,
        error: &ErrorData,
    ) -> Self {
        Self { what, tab, session, attempts, last_code: Some(error.code), last_error: Some(error.message.clone()) }
    }
}

/// A session as `status` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatus {
    /// Broker session id.
    pub session: SessionId,
    /// Host.
    pub host: HostKind,
    /// Host's session id.
    pub host_session_id: String,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Tool activation.
    pub tools: ToolActivation,
    /// Advanced tier enabled.
    pub advanced: bool,
    /// Current turn number.
    pub turn: u64,
    /// A lifecycle operation is running.
    pub busy: bool,
}

/// A tab as `status` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TabStatus {
    /// Tab id.
    pub tab: TabId,
    /// Owning session, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
    /// Provenance.
    pub provenance: Provenance,
    /// Task-resource state.
    pub state: ResourceState,
    /// This turn's mark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<MarkKind>,
    /// Tab group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupId>,
    /// URL (omitted when not authorised).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Title (omitted when not authorised).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Kind of browser connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum BrowserKind {
    /// A browser browserd launched itself.
    Managed,
    /// A remote endpoint.
    Remote,
    /// The user's browser through the extension.
    Extension,
    /// A test double.
    Fake,
}

/// A browser connection as `status` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowserStatus {
    /// Opaque browser id.
    pub browser: String,
    /// Kind of connection.
    pub kind: BrowserKind,
    /// Product and version, when connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
    /// Whether the browser has been started yet.
    #[serde(default)]
    pub browser_start: BrowserStart,
    /// Bridge state.
    pub bridge: BridgeState,
    /// Capabilities, each with the reason when unsupported.
    pub capabilities: Vec<CapabilityStatus>,
    /// Whether turn-end cleanup runs automatically.
    pub auto_turn_cleanup: AutoTurnCleanup,
    /// Required capabilities the browser lacks (when refused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_capabilities: Vec<String>,
    /// A remote endpoint's secret-free identity (scheme, host, port, path; never its query or userinfo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Where a lost connection stands (set once a connection was lost at least once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconnect: Option<ReconnectInfo>,
    /// A managed browser's browser-wide settings (headless, executable, profile directory; absent: a throwaway
    /// profile): `b1` runs with the configuration's, every other managed browser with the settings its sessions
    /// asked for (`browserd mcp --headed …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<crate::browser_settings::BrowserSettings>,
    /// The managed browser's process id, while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The sessions that asked for this browser's settings (a browser other than `b1` closes with the last of them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<SessionId>,
}

/// The reconnect state of a browser connection: a lost managed browser is relaunched, a remote one reconnected, with
/// backoff between failed attempts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconnectInfo {
    /// Why the connection was lost, while it is not back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
    /// Why the connection was lost the last time (kept once it is back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_lost: Option<String>,
    /// Attempts made since the loss.
    pub attempts: u32,
    /// Whether an attempt is running now.
    pub in_progress: bool,
    /// The last failed attempt's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Milliseconds until the next attempt, while waiting out the backoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_in_ms: Option<u64>,
    /// How many times the browser came back.
    pub reconnects: u64,
    /// How long the last comeback took, from the loss to the new connection, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reconnect_ms: Option<u64>,
}

/// A per-tab write lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteLeaseStatus {
    /// Tab.
    pub tab: TabId,
    /// Holding session.
    pub holder: SessionId,
    /// Current fencing token.
    pub fencing_token: FencingToken,
    /// Milliseconds until it expires, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_ms: Option<u64>,
}

/// Debugger lease state of one tab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DebuggerLeaseState {
    /// Not attached.
    Detached,
    /// Attached with operations running.
    Attached,
    /// Attached, no operations; detaches after the idle window.
    Idle,
    /// A detach failed; a recovery record retries it.
    DetachFailed,
}

/// A debugger lease (per tab, per session, reference-counted by operation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DebuggerLeaseStatus {
    /// Tab.
    pub tab: TabId,
    /// Holding session.
    pub holder: SessionId,
    /// State.
    pub state: DebuggerLeaseState,
    /// Operations using it now.
    pub active_refs: u32,
}

/// Result of `status`: the broker's whole lifecycle state (or one session's view of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusResult {
    /// Protocol version in use on this connection.
    pub protocol_version: u32,
    /// Component name → version.
    pub components: BTreeMap<String, String>,
    /// Sessions.
    pub sessions: Vec<SessionStatus>,
    /// Tab records.
    pub tabs: Vec<TabStatus>,
    /// Browser connections.
    pub browsers: Vec<BrowserStatus>,
    /// Write leases.
    pub write_leases: Vec<WriteLeaseStatus>,
    /// Debugger leases.
    pub debugger_leases: Vec<DebuggerLeaseStatus>,
    /// Pending recovery records.
    pub recovery: Vec<RecoveryRecord>,
    /// Limits in use.
    pub limits: Limits,
    /// The durable journal.
    #[serde(default)]
    pub journal: JournalStatus,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::hello::{capability, missing_for_auto_turn_cleanup};

    fn usage(used: u32, max: u32) -> Usage {
        Usage { used, max }
    }

    fn sample_status() -> StatusResult {
        let s1 = SessionId::new("s1");
        let announced =
            [capability::TURN_CLEANUP, capability::TURN_SCOPED_MARKS].into_iter().map(str::to_owned).collect();
        StatusResult {
            protocol_version: 1,
            components: BTreeMap::from([("browserd".to_owned(), "0.0.0".to_owned())]),
            sessions: vec![SessionStatus {
                session: s1.clone(),
                host: HostKind::Pi,
                host_session_id: "pi-1".into(),
                label: None,
                tools: ToolActivation::ActiveSticky,
                advanced: false,
                turn: 3,
                busy: false,
            }],
            tabs: vec![
                TabStatus {
                    tab: TabId(4),
                    session: Some(s1.clone()),
                    provenance: Provenance::AgentCreated,
                    state: ResourceState::CleanupUnknown,
                    mark: None,
                    group: Some(GroupId(2)),
                    url: Some("https://a.test/".into()),
                    title: Some("A".into()),
                },
                TabStatus {
                    tab: TabId(5),
                    session: None,
                    provenance: Provenance::User,
                    state: ResourceState::NoResources,
                    mark: None,
                    group: None,
                    url: None,
                    title: None,
                },
            ],
            browsers: vec![BrowserStatus {
                browser: "b1".into(),
                kind: BrowserKind::Extension,
                product: None,
                browser_start: BrowserStart::Started,
                bridge: BridgeState::Reconnecting,
                capabilities: vec![
                    CapabilityStatus { name: capability::TURN_CLEANUP.into(), unsupported: None, detail: None },
                    CapabilityStatus {
                        name: "screenshots".into(),
                        unsupported: Some(UnsupportedReason::Offline),
                        detail: None,
                    },
                ],
                auto_turn_cleanup: AutoTurnCleanup::Refused,
                missing_capabilities: missing_for_auto_turn_cleanup(&announced),
                endpoint: None,
                reconnect: None,
                settings: None,
                pid: None,
                sessions: Vec::new(),
            }],
            write_leases: vec![WriteLeaseStatus {
                tab: TabId(4),
                holder: s1.clone(),
                fencing_token: FencingToken(17),
                expires_in_ms: Some(900),
            }],
            debugger_leases: vec![DebuggerLeaseStatus {
                tab: TabId(4),
                holder: s1.clone(),
                state: DebuggerLeaseState::DetachFailed,
                active_refs: 0,
            }],
            recovery: vec![RecoveryRecord::from_failure(
                RecoveryAction::Close,
                TabId(4),
                s1,
                2,
                &ErrorData::new(ErrorCode::ConnectionLost, "bridge dropped during close"),
            )],
            limits: Limits {
                tabs_per_task: usage(1, 3),
                running_actions_per_tab: usage(0, 1),
                queued_requests: usage(0, 16),
                concurrent_page_ops: usage(0, 4),
            },
            journal: JournalStatus {
                state: JournalState::Degraded,
                path: Some("/state/browserd/journal.sqlite3".into()),
                reason: Some("database or disk is full".into()),
                next_step: Some(ErrorCode::JournalUnavailable.next_step().into()),
            },
        }
    }

    #[test]
    fn status_round_trips_with_camel_case_states() {
        let status = sample_status();
        let v = serde_json::to_value(&status).unwrap();
        assert_eq!(v["sessions"][0]["tools"], "activeSticky");
        assert_eq!(v["tabs"][0]["provenance"], "agentCreated");
        assert_eq!(v["tabs"][0]["state"], "cleanupUnknown");
        assert_eq!(v["tabs"][1], json!({"tab": 5, "provenance": "user", "state": "noResources"}));
        assert_eq!(v["browsers"][0]["autoTurnCleanup"], "refused");
        assert_eq!(v["browsers"][0]["missingCapabilities"], json!(["retainedCleanup", "debuggerLeaseRecovery"]));
        assert_eq!(v["browsers"][0]["capabilities"][1], json!({"name": "screenshots", "unsupported": "offline"}));
        assert_eq!(v["writeLeases"][0]["fencingToken"], 17);
        assert_eq!(v["debuggerLeases"][0]["state"], "detachFailed");
        assert_eq!(v["recovery"][0]["lastCode"], "CONNECTION_LOST");
        assert_eq!(v["limits"]["tabsPerTask"], json!({"used": 1, "max": 3}));
        assert_eq!(serde_json::from_value::<StatusResult>(v).unwrap(), status);
    }

    #[test]
    fn turn_end_result_reports_refused_auto_cleanup() {
        let result = TurnEndResult {
            ok: true,
            turn: 3,
            auto_turn_cleanup: AutoTurnCleanup::Refused,
            missing_capabilities: vec![capability::DEBUGGER_LEASE_RECOVERY.into()],
            closed: Vec::new(),
            released: Vec::new(),
            kept: Vec::new(),
            detached: vec![TabId(4)],
            failed: Vec::new(),
        };
        let v = serde_json::to_value(&result).unwrap();
        assert_eq!(v["autoTurnCleanup"], "refused");
        assert_eq!(v["missingCapabilities"][0], "debuggerLeaseRecovery");
        assert!(v.get("failed").is_none());
        assert_eq!(serde_json::from_value::<TurnEndResult>(v).unwrap(), result);
    }

    #[test]
    fn every_unsupported_reason_has_its_own_code() {
        let reasons = [
            UnsupportedReason::ByImplementation,
            UnsupportedReason::ByVersion,
            UnsupportedReason::Unauthorised,
            UnsupportedReason::PolicyBlocked,
            UnsupportedReason::Offline,
        ];
        let codes: std::collections::HashSet<_> = reasons.iter().map(|reason| reason.code()).collect();
        assert_eq!(codes.len(), reasons.len());
        assert!(codes.iter().all(|code| code.category() == crate::errors::ErrorCategory::Unsupported));
    }

    #[test]
    fn close_and_turn_reasons_use_their_wire_names() {
        let names: Vec<Value> = [
            CloseReason::HostExit,
            CloseReason::SessionSwitch,
            CloseReason::Fork,
            CloseReason::PluginUnload,
            CloseReason::AgentDisposed,
            CloseReason::ClientGone,
            CloseReason::User,
        ]
        .iter()
        .map(|reason| serde_json::to_value(reason).unwrap())
        .collect();
        assert_eq!(
            names,
            [
                json!("hostExit"),
                json!("sessionSwitch"),
                json!("fork"),
                json!("pluginUnload"),
                json!("agentDisposed"),
                json!("clientGone"),
                json!("user")
            ]
        );
        assert_eq!(serde_json::to_value(TurnEndReason::IdleTimeout).unwrap(), "idleTimeout");
        assert_eq!(serde_json::to_value(HostKind::ClaudeCode).unwrap(), "claudeCode");
    }
}
