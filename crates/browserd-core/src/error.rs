//! Core errors: a stable [`ErrorKind`] (one variant per protocol error code) plus a message that
//! says what to do next.
//!
//! The core's errors are not serializable; the coordinator maps [`ErrorKind`] 1:1 onto the wire's
//! stable codes ([`ErrorKind::code`] gives the code name the mapping should use).

use std::fmt;

use crate::provider::{
    Capability, FencingToken, ProviderError, ProviderErrorKind, SessionKey, TabHandle, UnsupportedReason,
};

/// What went wrong, in a form callers can match on. Maps 1:1 to the protocol's stable codes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// No session with that key was opened.
    UnknownSession,
    /// The session was closed (disposal, switch, fork, unload); open a new one.
    SessionClosed,
    /// The runtime is shutting down (plugin disposal); no new work is accepted.
    ShuttingDown,
    /// Browser tools are not active for this session; activate them first.
    ToolsInactive,
    /// The caller's tool set is from an older activation (e.g. before a context reset).
    StaleToolSnapshot {
        /// The generation the caller presented.
        presented: u64,
        /// The current generation (0 when tools are inactive).
        current: u64,
    },
    /// The tab handle is not known to the runtime.
    UnknownTab {
        /// The handle asked for.
        tab: TabHandle,
    },
    /// The tab no longer exists.
    TabGone {
        /// The tab, when known.
        tab: Option<TabHandle>,
    },
    /// The tab belongs to another session; nothing was done to it.
    OtherSessionTab {
        /// The tab.
        tab: TabHandle,
        /// The session that holds it.
        holder: SessionKey,
    },
    /// The tab is the user's; it is never closed by browserd (it may be claimed and released).
    UserTabProtected {
        /// The tab.
        tab: TabHandle,
    },
    /// The tab is the user's and has not been claimed by this session; claim it first.
    NotClaimed {
        /// The tab.
        tab: TabHandle,
    },
    /// A cleanup of this tab failed or has an unknown outcome and is waiting for a retry.
    CleanupPending {
        /// The tab.
        tab: TabHandle,
    },
    /// The session already controls the maximum number of tabs.
    TooManyTabs {
        /// The configured limit.
        limit: usize,
    },
    /// Another session holds the tab's write lease.
    LeaseHeldByOther {
        /// The tab.
        tab: TabHandle,
        /// The session holding the lease.
        holder: SessionKey,
    },
    /// The fencing token presented is not the current one (the lease was lost or renewed).
    StaleFencingToken {
        /// The tab.
        tab: TabHandle,
        /// The token presented.
        presented: FencingToken,
        /// The current token, if any lease is held.
        current: Option<FencingToken>,
    },
    /// The provider revoked the lease (stale fencing at the last hop).
    LeaseRevoked,
    /// Another debugging client is attached to the tab; browserd did not attach and sent nothing.
    DebuggerInUse {
        /// The tab, when known.
        tab: Option<TabHandle>,
    },
    /// A cleanup finished with failures; recovery records keep them for a retry.
    CleanupFailed {
        /// How many steps failed or have an unknown outcome.
        failed: usize,
    },
    /// Automatic turn cleanup is refused because the browser side lacks capabilities.
    AutoCleanupRefused {
        /// The missing capabilities.
        missing: Vec<Capability>,
    },
    /// The browser connection is down.
    ConnectionLost,
    /// The browser connection was lost and is back, to a relaunched or reconnected browser: refs and cursors of
    /// before are void, tabs of a fresh browser are gone. Told once per session.
    BrowserRestarted,
    /// The browser endpoint refused the credentials.
    NotAuthorised,
    /// The browser grid is full; retry after the hint.
    GridBusy {
        /// When to retry, in milliseconds.
        retry_after_ms: u64,
    },
    /// The deadline passed; whether the browser did it is unknown.
    DeadlineExceeded,
    /// The operation was cancelled before it was dispatched.
    Cancelled,
    /// The browser refused the operation.
    BrowserRefused,
    /// The capability is not available.
    Unsupported {
        /// Why.
        reason: UnsupportedReason,
    },
    /// The request was sent but no acknowledgement came back.
    OutcomeUnknown,
    /// The request is invalid.
    InvalidRequest,
    /// Anything else; a bug or an unexpected browser answer.
    Internal,
}

impl ErrorKind {
    /// The stable wire code of this kind: the SCREAMING_SNAKE string of `browserd-protocol`'s
    /// `ErrorCode` (so the conversion is a lookup).
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownSession => "UNKNOWN_SESSION",
            Self::SessionClosed => "SESSION_CLOSED",
            Self::ShuttingDown => "SHUTTING_DOWN",
            Self::ToolsInactive => "TOOLS_INACTIVE",
            Self::StaleToolSnapshot { .. } => "STALE_TOOL_SNAPSHOT",
            Self::UnknownTab { .. } => "TAB_NOT_FOUND",
            Self::TabGone { .. } => "TARGET_CLOSED",
            Self::OtherSessionTab { .. } => "OTHER_SESSION_TAB",
            Self::UserTabProtected { .. } => "USER_TAB_PROTECTED",
            Self::NotClaimed { .. } => "NOT_OWNER",
            Self::CleanupPending { .. } => "CLEANUP_PENDING",
            Self::TooManyTabs { .. } => "TOO_MANY_TABS",
            Self::LeaseHeldByOther { .. } => "LEASE_HELD_BY_OTHER",
            Self::StaleFencingToken { .. } => "STALE_FENCING_TOKEN",
            Self::LeaseRevoked => "LEASE_REVOKED",
            Self::DebuggerInUse { .. } => "DEBUGGER_IN_USE",
            Self::CleanupFailed { .. } => "CLEANUP_FAILED",
            Self::AutoCleanupRefused { .. } => "AUTO_CLEANUP_REFUSED",
            Self::ConnectionLost => "CONNECTION_LOST",
            Self::BrowserRestarted => "BROWSER_RESTARTED",
            Self::NotAuthorised => "NOT_AUTHORISED",
            Self::GridBusy { .. } => "QUEUE_FULL",
            Self::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Self::Cancelled => "CANCELLED",
            Self::BrowserRefused => "ACTION_FAILED",
            Self::Unsupported { reason } => match reason {
                UnsupportedReason::ByImplementation => "UNSUPPORTED_BY_IMPLEMENTATION",
                UnsupportedReason::ByVersion => "UNSUPPORTED_BY_VERSION",
                UnsupportedReason::Unauthorised => "UNAUTHORISED",
                UnsupportedReason::PolicyBlocked => "POLICY_BLOCKED",
                UnsupportedReason::Offline => "OFFLINE",
            },
            Self::OutcomeUnknown => "OUTCOME_UNKNOWN",
            Self::InvalidRequest => "INVALID_PARAMS",
            Self::Internal => "INTERNAL_ERROR",
        }
    }
}

/// A core error: a kind callers match on plus a message that ends with what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct CoreError {
    /// What went wrong.
    pub kind: ErrorKind,
    /// Human-readable detail, ending with what to do next.
    pub message: String,
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.code(), self.message)
    }
}

impl CoreError {
    /// A new error.
    #[must_use]
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }

    pub(crate) fn unknown_session(session: &SessionKey) -> Self {
        Self::new(ErrorKind::UnknownSession, format!("session {session} was never opened; call session.open first"))
    }

    pub(crate) fn session_closed(session: &SessionKey) -> Self {
        Self::new(
            ErrorKind::SessionClosed,
            format!("session {session} is closed; open a new session to use the browser"),
        )
    }

    pub(crate) fn tools_inactive(session: &SessionKey) -> Self {
        Self::new(
            ErrorKind::ToolsInactive,
            format!("browser tools are not active for session {session}; activate them (tools.activate) first"),
        )
    }

    pub(crate) fn other_session(tab: TabHandle, holder: &SessionKey) -> Self {
        Self::new(
            ErrorKind::OtherSessionTab { tab, holder: holder.clone() },
            format!("tab {tab} belongs to session {holder}; nothing was done to it. Use a tab of your own session"),
        )
    }

    pub(crate) fn user_tab_protected(tab: TabHandle) -> Self {
        Self::new(
            ErrorKind::UserTabProtected { tab },
            format!("tab {tab} is the user's tab and is never closed by browserd; release it instead"),
        )
    }

    pub(crate) fn not_claimed(tab: TabHandle) -> Self {
        Self::new(ErrorKind::NotClaimed { tab }, format!("tab {tab} is the user's tab; claim it before using it"))
    }

    pub(crate) fn unknown_tab(tab: TabHandle) -> Self {
        Self::new(ErrorKind::UnknownTab { tab }, format!("tab {tab} is not known; call browser_list for current tabs"))
    }

    pub(crate) fn tab_gone(tab: TabHandle) -> Self {
        Self::new(
            ErrorKind::TabGone { tab: Some(tab) },
            format!("tab {tab} no longer exists; open or claim another tab"),
        )
    }

    pub(crate) fn cleanup_pending(tab: TabHandle) -> Self {
        Self::new(
            ErrorKind::CleanupPending { tab },
            format!(
                "tab {tab} has a failed or unknown cleanup waiting for a retry; run browser_cleanup or check browser_status"
            ),
        )
    }

    /// Map a provider error about `tab` (if any) into a core error.
    #[must_use]
    pub fn from_provider(err: ProviderError, tab: Option<TabHandle>) -> Self {
        let kind = match err.kind {
            ProviderErrorKind::TabGone => ErrorKind::TabGone { tab },
            ProviderErrorKind::ConnectionLost => ErrorKind::ConnectionLost,
            ProviderErrorKind::Timeout => ErrorKind::DeadlineExceeded,
            ProviderErrorKind::Cancelled => ErrorKind::Cancelled,
            ProviderErrorKind::Refused => ErrorKind::BrowserRefused,
            ProviderErrorKind::Unsupported(reason) => ErrorKind::Unsupported { reason },
            ProviderErrorKind::StaleFencing => ErrorKind::LeaseRevoked,
            ProviderErrorKind::DebuggerInUse => ErrorKind::DebuggerInUse { tab },
            ProviderErrorKind::InvalidRequest => ErrorKind::InvalidRequest,
            ProviderErrorKind::OutcomeUnknown => ErrorKind::OutcomeUnknown,
            ProviderErrorKind::NotAuthorised => ErrorKind::NotAuthorised,
            ProviderErrorKind::Busy { retry_after_ms } => ErrorKind::GridBusy { retry_after_ms },
            ProviderErrorKind::Internal => ErrorKind::Internal,
        };
        Self { kind, message: err.message }
    }
}

impl From<ProviderError> for CoreError {
    fn from(err: ProviderError) -> Self {
        Self::from_provider(err, None)
    }
}
