//! The provider contract: what browserd needs from a browser, in browserd's own vocabulary.
//!
//! A provider is one browser connection (a managed Chromium over a pipe, a remote CDP endpoint,
//! or the user's browser through the extension relay). The lifecycle engine and the broker only
//! ever talk to browsers through [`Provider`]. Handles are opaque: a [`TabHandle`] is allocated
//! by browserd and never reveals the browser's own target or tab id.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use browserd_protocol::tools::{
    ConsoleParams, ConsoleResult, EvaluateParams, EvaluateResult, NetworkParams, NetworkResult, RawProtocolParams,
    RawProtocolResult,
};
use browserd_protocol::{ActParams, ActionResult, Observation, ObserveParams};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// An opaque tab handle, unique within one broker process. Displayed as `t<N>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TabHandle(pub u64);

impl fmt::Display for TabHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{}", self.0)
    }
}

/// An opaque frame handle, unique within one broker process. Displayed as `f<N>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameHandle(pub u64);

impl fmt::Display for FrameHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "f{}", self.0)
    }
}

/// An opaque tab-group handle. Displayed as `g<N>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupHandle(pub u64);

impl fmt::Display for GroupHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "g{}", self.0)
    }
}

/// Hands out handles that are unique across every provider of one broker.
///
/// Cloning shares the counter. Providers take one at construction and map their browser's ids
/// to handles internally.
#[derive(Debug, Clone, Default)]
pub struct HandleAllocator(Arc<AtomicU64>);

impl HandleAllocator {
    /// A fresh allocator whose first handle is 1.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The next number; never 0, never repeated.
    #[must_use]
    pub fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// A new tab handle.
    #[must_use]
    pub fn tab(&self) -> TabHandle {
        TabHandle(self.next())
    }

    /// A new frame handle.
    #[must_use]
    pub fn frame(&self) -> FrameHandle {
        FrameHandle(self.next())
    }

    /// A new group handle.
    #[must_use]
    pub fn group(&self) -> GroupHandle {
        GroupHandle(self.next())
    }
}

/// The lifecycle session a provider call is made for (the broker's session key).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionKey(pub String);

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A write-lease fencing token: strictly increasing per tab; a stale token is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken(pub u64);

/// Which kind of browser connection a provider is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// A Chromium that browserd launched itself (pipe transport).
    Managed,
    /// A remote DevTools endpoint (WebSocket).
    Remote,
    /// The user's own browser through the extension and Native Messaging.
    Extension,
    /// A test double.
    Fake,
}

/// What a provider found when it connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserInfo {
    /// Kind of connection.
    pub kind: ProviderKind,
    /// Product and version, e.g. `Chrome/156.0.8078.108`.
    pub product: String,
    /// Incremented each time the provider (re)connects; refs from an older epoch are void.
    pub connection_epoch: u64,
}

/// One tab as the provider sees it. Ownership is *not* here: the lifecycle engine owns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabInfo {
    /// browserd's handle.
    pub tab: TabHandle,
    /// Current URL.
    pub url: String,
    /// Current title.
    pub title: String,
    /// The tab group it is in, if any.
    pub group: Option<GroupHandle>,
    /// The tab that opened it (popups, `target=_blank`), if known.
    pub opener: Option<TabHandle>,
    /// Whether this is the active tab of its window.
    pub active: bool,
}

/// A request to create a tab.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreateTab {
    /// URL to load (`about:blank` when empty).
    pub url: String,
    /// Open in the background (do not focus).
    pub background: bool,
    /// Put the tab in this session's group, when the provider supports groups.
    pub group_for: Option<SessionKey>,
}

/// What an action's target is, read without acting on it ([`Provider::describe_target`]): the broker classes the
/// action by it (its role, name and form) and binds the user's approval to exactly this node of this document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetDescription {
    /// Its role (`button`, `link`, `textbox`, …).
    pub role: String,
    /// Its accessible name, as the page shows it now.
    pub name: String,
    /// The frame it is in (the provider's own opaque id).
    pub frame: String,
    /// That frame's document (opaque: a new document of the same frame is another value).
    pub document: String,
    /// The node in that document (opaque, stable for the node's life).
    pub node: String,
    /// Whether activating it submits a form: a submit button of a form, or a text field of one (Enter).
    pub submits: bool,
    /// What names the form it belongs to: the form's name, id, label, `action` URL, legend and headings (empty
    /// outside a form).
    pub form: Vec<String>,
}

/// Everything an operation carries: its deadline, its cancellation, its trace id and, for
/// writes, the fencing token of the lease it runs under.
#[derive(Debug, Clone)]
pub struct OpContext {
    /// Give up after this long.
    pub timeout: Duration,
    /// Cancelled by Stop, by MCP cancellation or by disposal.
    pub cancel: CancellationToken,
    /// Trace id for logs and results.
    pub trace_id: String,
    /// The session the call is made for.
    pub session: SessionKey,
    /// The write lease's fencing token (writes only).
    pub fencing: Option<FencingToken>,
}

impl OpContext {
    /// A context with a timeout and a fresh cancellation token.
    #[must_use]
    pub fn new(session: SessionKey, timeout: Duration, trace_id: impl Into<String>) -> Self {
        Self { timeout, cancel: CancellationToken::new(), trace_id: trace_id.into(), session, fencing: None }
    }
}

/// A capability a provider may or may not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// Automatic cleanup at turn end is safe (ownership records are verifiable).
    TurnCleanup,
    /// Deliverable/handoff marks are turn-scoped.
    TurnScopedMarks,
    /// Retained tabs survive cleanup with their ownership metadata dropped.
    RetainedCleanup,
    /// Failed debugger detaches can be retried.
    DebuggerLeaseRecovery,
    /// Named, coloured tab groups.
    TabGroups,
    /// Claiming tabs the user opened.
    ClaimUserTabs,
    /// Screenshots.
    Screenshots,
    /// File upload from authorised files.
    Upload,
    /// Downloads into a confined directory.
    Downloads,
    /// Out-of-process iframes.
    CrossOriginFrames,
    /// Arbitrary script evaluation (advanced tier).
    Evaluate,
    /// Raw protocol access (advanced tier).
    RawProtocol,
}

impl Capability {
    /// The four capabilities without which automatic turn cleanup is refused (BRIEF §2).
    pub const TURN_CLEANUP_REQUIRED: [Capability; 4] = [
        Capability::TurnCleanup,
        Capability::TurnScopedMarks,
        Capability::RetainedCleanup,
        Capability::DebuggerLeaseRecovery,
    ];
}

/// Why a capability is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnsupportedReason {
    /// This implementation does not do it.
    ByImplementation,
    /// The browser or extension version is too old.
    ByVersion,
    /// The user has not authorised it.
    Unauthorised,
    /// Policy blocks it.
    PolicyBlocked,
    /// The browser is not connected right now.
    Offline,
}

/// Whether a capability is there, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapabilityState {
    /// Available.
    Supported,
    /// Missing, with a reason and a human-readable detail that says what to do.
    Unsupported { reason: UnsupportedReason, detail: String },
}

/// Every capability with its state. A capability absent from the map is unsupported by
/// implementation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CapabilityMatrix(pub BTreeMap<Capability, CapabilityState>);

impl CapabilityMatrix {
    /// Whether `cap` is supported.
    #[must_use]
    pub fn supports(&self, cap: Capability) -> bool {
        matches!(self.0.get(&cap), Some(CapabilityState::Supported))
    }

    /// The required turn-cleanup capabilities that are missing.
    #[must_use]
    pub fn missing_for_turn_cleanup(&self) -> Vec<Capability> {
        Capability::TURN_CLEANUP_REQUIRED.into_iter().filter(|c| !self.supports(*c)).collect()
    }
}

/// What went wrong in a provider call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderErrorKind {
    /// The tab no longer exists (closed by the user, crashed, navigated away from us).
    TabGone,
    /// The connection to the browser is down; nothing was done, or it is unknown.
    ConnectionLost,
    /// The deadline passed; whether the browser did it is unknown.
    Timeout,
    /// The operation was cancelled before it was dispatched.
    Cancelled,
    /// The browser refused (e.g. a `chrome://` page cannot be debugged).
    Refused,
    /// The capability is missing.
    Unsupported(UnsupportedReason),
    /// The fencing token is stale or the lease is gone.
    StaleFencing,
    /// Another debugging client (developer tools, another extension, a second protocol client) is attached to the
    /// tab, so browserd did not attach and sent nothing.
    DebuggerInUse,
    /// The request itself is invalid.
    InvalidRequest,
    /// The request was sent but no acknowledgement came back: it may or may not have happened.
    OutcomeUnknown,
    /// The browser endpoint refused the credentials (a grid's token or Authorization header).
    NotAuthorised,
    /// The browser endpoint (a grid) has no free browser and its queue is full; retry after the hint.
    Busy {
        /// When to retry, in milliseconds.
        retry_after_ms: u64,
    },
    /// Anything else the browser reported.
    Internal,
}

impl ProviderErrorKind {
    /// Whether the operation may have taken effect (so it must never be reported as not done,
    /// nor as done).
    #[must_use]
    pub fn outcome_unknown(self) -> bool {
        matches!(self, Self::Timeout | Self::OutcomeUnknown | Self::ConnectionLost)
    }
}

/// A provider error: a kind the core can reason about plus a message that says what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind:?}: {message}")]
pub struct ProviderError {
    /// What kind of failure.
    pub kind: ProviderErrorKind,
    /// Human-readable detail, ending with what to do next.
    pub message: String,
}

impl ProviderError {
    /// A new error.
    #[must_use]
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }
}

/// Why a debugger attachment went away without us asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DetachCause {
    /// The user cancelled it (infobar "Cancel").
    UserCancelled,
    /// The tab closed or crashed.
    TargetClosed,
    /// Another client took the debugger.
    ReplacedByOtherClient,
    /// The connection dropped.
    ConnectionLost,
}

/// Something that happened in the browser that browserd did not cause (or must hear about).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderEvent {
    /// A tab appeared (user-opened, popup, `target=_blank`).
    TabCreated(TabInfo),
    /// A tab went away; `by_user` when browserd did not close it.
    TabClosed { tab: TabHandle, by_user: bool },
    /// A tab's URL or title changed.
    TabUpdated(TabInfo),
    /// The debugger detached from a tab without a request.
    DebuggerDetached { tab: TabHandle, cause: DetachCause },
    /// The connection was lost; the provider will try to reconnect.
    ConnectionLost { detail: String },
    /// The connection came back, with a new epoch.
    ConnectionRestored { connection_epoch: u64 },
    /// The user pressed Stop in the browser (the extension's local gate is already closed).
    UserStopped { tab: Option<TabHandle>, control_epoch: u64 },
    /// Events were lost (gap in sequence numbers): state must be re-read.
    ResyncRequired,
}

/// The provider contract.
///
/// Every call is cancellable and bounded by [`OpContext::timeout`]. A call that returns `Ok`
/// has been confirmed by the browser; an error whose kind says
/// [`ProviderErrorKind::outcome_unknown`] may or may not have taken effect.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// Kind of connection.
    fn kind(&self) -> ProviderKind;

    /// What this provider can do right now, with a reason per missing capability.
    fn capabilities(&self) -> CapabilityMatrix;

    /// Subscribe to browser events. Lagging receivers get `ResyncRequired` semantics from
    /// `broadcast`'s `Lagged` error.
    fn events(&self) -> broadcast::Receiver<ProviderEvent>;

    /// The user pressed Stop: every ref issued for `tab` so far is void for good (an action naming one is stale,
    /// `controlEpochChanged`, also after the resume) and the next observation gives its nodes new refs. A provider
    /// with no refs of its own does nothing.
    fn void_refs(&self, _tab: TabHandle) {}

    /// Connect (or confirm the connection) and describe the browser.
    async fn connect(&self, ctx: &OpContext) -> Result<BrowserInfo, ProviderError>;

    /// Every tab of the browser, including the user's. A tab the list holds that no event announced yet is announced
    /// (`TabCreated`) before this returns: the runtime learns of tabs by events only.
    async fn list_tabs(&self, ctx: &OpContext) -> Result<Vec<TabInfo>, ProviderError>;

    /// Create a tab.
    async fn create_tab(&self, ctx: &OpContext, req: CreateTab) -> Result<TabInfo, ProviderError>;

    /// Close a tab. `Ok` means the browser confirmed the tab is gone.
    async fn close_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError>;

    /// Bring a tab to the front.
    async fn activate_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError>;

    /// Record in the browser that `ctx.session` controls this existing tab.
    async fn claim_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError>;

    /// Drop `ctx.session`'s claim or ownership record of this tab without closing it.
    async fn release_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError>;

    /// Attach the debugger to a tab (idempotent).
    async fn attach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError>;

    /// Detach the debugger from a tab (idempotent; `Ok` if it was not attached).
    async fn detach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError>;

    /// Observe a tab.
    async fn observe(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &ObserveParams,
    ) -> Result<Observation, ProviderError>;

    /// Act on a tab. The result says what was dispatched and what was observed; errors are for
    /// failures before anything could be attempted.
    async fn act(&self, ctx: &OpContext, tab: TabHandle, params: &ActParams) -> Result<ActionResult, ProviderError>;

    /// What `params`'s target is (a ref, `role "name"`, or a screenshot point hit-tested as the page is now), read
    /// without sending anything to the page. `Ok(None)`: the action has no target, or its target does not resolve
    /// (the action itself is then refused the same way before anything is sent). A provider with no targets of its
    /// own answers `None`.
    async fn describe_target(
        &self,
        _ctx: &OpContext,
        _tab: TabHandle,
        _params: &ActParams,
    ) -> Result<Option<TargetDescription>, ProviderError> {
        Ok(None)
    }

    // ----- advanced tier (off by default, policy-gated by the broker) -----

    /// Evaluate a script expression in the tab's main frame and return its JSON value (advanced tier). A script
    /// that throws is `Ok` with [`EvaluateResult::exception`] set; errors are for failures of the call itself.
    /// The value is not bounded here: the caller bounds and spills it.
    async fn evaluate(
        &self,
        _ctx: &OpContext,
        _tab: TabHandle,
        _params: &EvaluateParams,
    ) -> Result<EvaluateResult, ProviderError> {
        Err(advanced_unsupported("script evaluation (browser_evaluate)"))
    }

    /// The tab's console messages and uncaught exceptions collected since the advanced tier was first used on it
    /// (advanced tier; bounded ring, oldest dropped).
    async fn console(
        &self,
        _ctx: &OpContext,
        _tab: TabHandle,
        _params: &ConsoleParams,
    ) -> Result<ConsoleResult, ProviderError> {
        Err(advanced_unsupported("console reading (browser_console)"))
    }

    /// The tab's network requests collected since the advanced tier was first used on it (advanced tier; bounded
    /// ring; URLs without query string unless asked).
    async fn network(
        &self,
        _ctx: &OpContext,
        _tab: TabHandle,
        _params: &NetworkParams,
    ) -> Result<NetworkResult, ProviderError> {
        Err(advanced_unsupported("network reading (browser_network)"))
    }

    /// Send one raw protocol command (method name + params) to the tab's session (advanced tier). The caller has
    /// already applied the method policy; the result is not bounded here.
    async fn raw_protocol(
        &self,
        _ctx: &OpContext,
        _tab: TabHandle,
        _params: &RawProtocolParams,
    ) -> Result<RawProtocolResult, ProviderError> {
        Err(advanced_unsupported("raw protocol access (browser_cdp)"))
    }
}

/// The error of an advanced-tier method a provider does not implement.
#[must_use]
pub fn advanced_unsupported(what: &str) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::Unsupported(UnsupportedReason::ByImplementation),
        format!("{what} is unsupported by this browser connection; use a managed or remote Chromium, or do without it"),
    )
}
