//! The error taxonomy: stable string codes, stable JSON-RPC numbers and a next step for each.
//!
//! Every error browserd reports on the wire is an [`ErrorData`] whose `code` is one of the
//! [`ErrorCode`]s below. The string (`STALE_TARGET`) and the number (`1001`) of a code never
//! change once released; new codes are only added. The JSON-RPC standard errors keep their
//! standard numbers (`-32700`..`-32603`); browserd's own codes use one block of a hundred per
//! [`ErrorCategory`].

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::SessionId;
use crate::page::CoveringElement;

/// What kind of failure a code describes; each category owns a block of numeric codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ErrorCategory {
    /// Malformed JSON-RPC (standard numbers, `-32700`..`-32603`).
    Protocol,
    /// An action or page read did not do what was asked (`1000`..`1099`).
    Action,
    /// The tab belongs to someone else (`1100`..`1199`).
    Ownership,
    /// Write leases, fencing tokens and debugger leases (`1200`..`1299`).
    Lease,
    /// Site, action and approval policy (`1300`..`1399`).
    Policy,
    /// A capability this browser or session lacks (`1400`..`1499`).
    Capability,
    /// A configured limit is reached; retry later (`1500`..`1599`).
    BackPressure,
    /// Unsupported here, and why (`1600`..`1699`).
    Unsupported,
    /// Sessions, turns, tool activation and cleanup (`1700`..`1799`).
    Lifecycle,
    /// Broker connections and peers (`1800`..`1899`).
    Broker,
}

impl ErrorCategory {
    /// The inclusive range of numeric codes this category owns.
    #[must_use]
    pub const fn rpc_range(self) -> (i64, i64) {
        match self {
            ErrorCategory::Protocol => (-32768, -32000),
            ErrorCategory::Action => (1000, 1099),
            ErrorCategory::Ownership => (1100, 1199),
            ErrorCategory::Lease => (1200, 1299),
            ErrorCategory::Policy => (1300, 1399),
            ErrorCategory::Capability => (1400, 1499),
            ErrorCategory::BackPressure => (1500, 1599),
            ErrorCategory::Unsupported => (1600, 1699),
            ErrorCategory::Lifecycle => (1700, 1799),
            ErrorCategory::Broker => (1800, 1899),
        }
    }
}

macro_rules! error_codes {
    ($( $variant:ident = $name:literal, $rpc:literal, $category:ident, $next:literal; )*) => {
        /// A stable error code. On the wire it is the SCREAMING_SNAKE string; in JSON-RPC error
        /// objects the number from [`ErrorCode::rpc_code`] goes alongside it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
        pub enum ErrorCode {
            $( #[serde(rename = $name)] $variant, )*
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[$( ErrorCode::$variant, )*];

            /// The stable string, e.g. `STALE_TARGET`.
            #[must_use]
            pub const fn as_str(self) -> &'static str {
                match self { $( ErrorCode::$variant => $name, )* }
            }

            /// The stable JSON-RPC error number.
            #[must_use]
            pub const fn rpc_code(self) -> i64 {
                match self { $( ErrorCode::$variant => $rpc, )* }
            }

            /// The category the code belongs to.
            #[must_use]
            pub const fn category(self) -> ErrorCategory {
                match self { $( ErrorCode::$variant => ErrorCategory::$category, )* }
            }

            /// The default next step: what the caller (often a model) should do about it.
            #[must_use]
            pub const fn next_step(self) -> &'static str {
                match self { $( ErrorCode::$variant => $next, )* }
            }
        }
    };
}

error_codes! {
    // Protocol: the JSON-RPC 2.0 standard errors.
    ParseError = "PARSE_ERROR", -32700, Protocol,
        "Send one valid JSON value per message.";
    InvalidRequest = "INVALID_REQUEST", -32600, Protocol,
        "Send a JSON-RPC 2.0 object with \"jsonrpc\":\"2.0\", a method and, for requests, an id.";
    MethodNotFound = "METHOD_NOT_FOUND", -32601, Protocol,
        "Check the method name; the peer may speak an older protocol (see hello).";
    InvalidParams = "INVALID_PARAMS", -32602, Protocol,
        "Fix the parameters as the message says; the input schema lists the allowed fields.";
    InternalError = "INTERNAL_ERROR", -32603, Protocol,
        "This is a browserd bug: retry once, then report it with `browserd doctor` output.";

    // Action: the seeds' action codes and page-level failures.
    StaleTarget = "STALE_TARGET", 1001, Action,
        "Observe again and use a ref from the new observation.";
    AmbiguousTarget = "AMBIGUOUS_TARGET", 1002, Action,
        "Pick one of the candidate refs from a fresh observation.";
    TargetNotFound = "TARGET_NOT_FOUND", 1003, Action,
        "Observe again; the element is not on the page (scroll or expand the region).";
    NotActionable = "NOT_ACTIONABLE", 1004, Action,
        "Dismiss or wait for what covers or disables the element (see covering), then retry.";
    UserStopped = "USER_STOPPED", 1005, Action,
        "The user stopped browser control; wait for the user, then observe before acting again.";
    ConnectionLost = "CONNECTION_LOST", 1006, Action,
        "Call browser_status and retry once the bridge is connected; observe before repeating a write.";
    DeadlineExceeded = "DEADLINE_EXCEEDED", 1007, Action,
        "Observe to see what happened before retrying; raise timeoutMs only for a known slow page.";
    TargetClosed = "TARGET_CLOSED", 1008, Action,
        "The tab or frame is gone; call browser_list and use another tab.";
    NavigationFailed = "NAVIGATION_FAILED", 1009, Action,
        "Check the URL; observe the tab to read the error page.";
    DialogBlocking = "DIALOG_BLOCKING", 1010, Action,
        "Accept or dismiss the open dialog first, then retry.";
    ExpectationFailed = "EXPECTATION_FAILED", 1011, Action,
        "The action ran but the expected result did not appear; observe before deciding. Do not blindly repeat.";
    InputNotApplied = "INPUT_NOT_APPLIED", 1012, Action,
        "The field does not hold the typed text; observe it, clear it and type again.";
    ActionFailed = "ACTION_FAILED", 1013, Action,
        "The browser refused the input; observe and try another way.";
    DuplicateRequest = "DUPLICATE_REQUEST", 1014, Action,
        "This request id already ran or is running; use its result, or a new id for a new action.";
    PayloadMismatch = "PAYLOAD_MISMATCH", 1015, Action,
        "The request id was used before with other parameters; use a new request id.";
    OutcomeUnknown = "OUTCOME_UNKNOWN", 1016, Action,
        "The action may have taken effect; observe before deciding whether to repeat it.";
    Cancelled = "CANCELLED", 1017, Action,
        "The call was cancelled; nothing more to do unless the task still needs it.";

    // Ownership: whose tab it is.
    NotOwner = "NOT_OWNER", 1101, Ownership,
        "Claim the tab with browser_claim, or open your own with browser_open.";
    OtherSessionTab = "OTHER_SESSION_TAB", 1102, Ownership,
        "Another agent session holds this tab (see holderSession); leave it and use your own tab.";
    UserTabProtected = "USER_TAB_PROTECTED", 1103, Ownership,
        "The user's tabs are never closed by agents; leave it open.";
    MixedOwnershipGroup = "MIXED_OWNERSHIP_GROUP", 1104, Ownership,
        "The group holds tabs that are not yours; close your own tabs by id instead.";
    TabNotFound = "TAB_NOT_FOUND", 1105, Ownership,
        "Call browser_list for the current tab ids.";

    // Leases: write leases, fencing and debugger leases.
    LeaseHeldByOther = "LEASE_HELD_BY_OTHER", 1201, Lease,
        "Another session is acting on this tab (see holderSession); retry after retryAfterMs or use another tab.";
    StaleFencingToken = "STALE_FENCING_TOKEN", 1202, Lease,
        "Control of the tab moved on; observe again before acting.";
    LeaseExpired = "LEASE_EXPIRED", 1203, Lease,
        "Observe the tab again to take a new lease, then retry.";
    LeaseRevoked = "LEASE_REVOKED", 1204, Lease,
        "Control was taken away (stop, handoff or reconnect); observe again before acting; old refs are void.";
    DebuggerInUse = "DEBUGGER_IN_USE", 1205, Lease,
        "Another debugging client holds this tab; ask the user to close developer tools on it, or use another tab.";

    // Policy.
    PolicyDenied = "POLICY_DENIED", 1301, Policy,
        "Policy forbids this here; ask the user to allow it or take another approach.";
    ApprovalRequired = "APPROVAL_REQUIRED", 1302, Policy,
        "Ask the user to approve this action, then retry.";
    OriginNotAuthorised = "ORIGIN_NOT_AUTHORISED", 1303, Policy,
        "This site or frame is not authorised; ask the user to allow its origin.";
    ApprovalDeclined = "APPROVAL_DECLINED", 1304, Policy,
        "The user declined this action and nothing was sent; do not repeat it unless the user asks for it.";

    // Capability.
    UnsupportedCapability = "UNSUPPORTED_CAPABILITY", 1401, Capability,
        "This browser lacks the capability (see details); take another approach.";
    CapabilityNotActivated = "CAPABILITY_NOT_ACTIVATED", 1402, Capability,
        "Advanced tools are off; ask the user to enable them.";
    VisionUnavailable = "VISION_UNAVAILABLE", 1403, Capability,
        "This session has no image route (semantic-only): ask the user what the picture shows, or enable a vision route (a model that takes images, or a grounding tool); until then work from the page's text and refs (details.observation).";

    // Back-pressure: configured limits.
    TooManyTabs = "TOO_MANY_TABS", 1501, BackPressure,
        "Close or release tabs you no longer need, then retry.";
    QueueFull = "QUEUE_FULL", 1502, BackPressure,
        "Too many queued requests; retry after retryAfterMs.";
    TooManyConcurrentOps = "TOO_MANY_CONCURRENT_OPS", 1503, BackPressure,
        "Too many page operations at once; retry after retryAfterMs.";
    TooManyBrowsers = "TOO_MANY_BROWSERS", 1504, BackPressure,
        "Every managed browser this broker may run (max_browsers) is in use: end a session that runs on another browser, drop the browser flags from this MCP entry, or raise max_browsers in the browserd config (`browserd config`).";

    // Unsupported, with the reason.
    UnsupportedByImplementation = "UNSUPPORTED_BY_IMPLEMENTATION", 1601, Unsupported,
        "Unsupported by this browser connection; take another approach.";
    UnsupportedByVersion = "UNSUPPORTED_BY_VERSION", 1602, Unsupported,
        "Upgrade the older component named in the message so both sides share a protocol version.";
    Unauthorised = "UNAUTHORISED", 1603, Unsupported,
        "This peer is not paired or allowed; re-run `browserd install` or re-pair the extension.";
    PolicyBlocked = "POLICY_BLOCKED", 1604, Unsupported,
        "Blocked by administrator or user policy; ask the user to change the policy.";
    Offline = "OFFLINE", 1605, Unsupported,
        "The browser is not connected; ask the user to start it, then call browser_status.";
    ProfileInUse = "PROFILE_IN_USE", 1606, Unsupported,
        "The profile directory (--user-data-dir) is used by another browser (the message names it): pick another directory, use the same browser flags as the browser that has it, or end that browser first.";

    // Lifecycle: sessions, turns, tool activation, cleanup.
    ToolsInactive = "TOOLS_INACTIVE", 1701, Lifecycle,
        "Browser tools are not active for this session; activate them first.";
    StaleToolSnapshot = "STALE_TOOL_SNAPSHOT", 1702, Lifecycle,
        "The tool set changed (reset or reactivation); refresh the tool list, then retry.";
    CleanupFailed = "CLEANUP_FAILED", 1703, Lifecycle,
        "Some tabs were not closed or released (see failed); they stay recorded and are retried by the next call or browser_cleanup.";
    AutoCleanupRefused = "AUTO_CLEANUP_REFUSED", 1704, Lifecycle,
        "The browser lacks the capabilities for safe automatic cleanup (see details); update the extension; until then clean up with browser_cleanup.";
    SessionClosed = "SESSION_CLOSED", 1705, Lifecycle,
        "The session has ended; open a new one with session.open.";
    SessionBusy = "SESSION_BUSY", 1706, Lifecycle,
        "Another lifecycle operation of this session is running; retry after retryAfterMs.";
    UnknownSession = "UNKNOWN_SESSION", 1707, Lifecycle,
        "Open the session with session.open first.";
    CleanupPending = "CLEANUP_PENDING", 1708, Lifecycle,
        "This tab's cleanup failed earlier and is waiting for a retry; call browser_cleanup or browser_status, then retry.";
    BrowserRestarted = "BROWSER_RESTARTED", 1709, Lifecycle,
        "The browser was lost and is back (relaunched or reconnected): old refs are void and tabs of a fresh browser are gone; call browser_list, then observe before acting.";

    // Broker: connections and peers.
    BrokerUnavailable = "BROKER_UNAVAILABLE", 1801, Broker,
        "Start the broker (any browserd command starts it) or run `browserd doctor`.";
    PeerRejected = "PEER_REJECTED", 1802, Broker,
        "The broker refused this peer; connect as the same OS user through the broker's socket.";
    VersionMismatch = "VERSION_MISMATCH", 1803, Broker,
        "Components come from different builds; reinstall so every browserd component matches.";
    HelloRequired = "HELLO_REQUIRED", 1804, Broker,
        "Send hello first on every connection.";
    ShuttingDown = "SHUTTING_DOWN", 1805, Broker,
        "The broker is stopping; reconnect to start a new one.";
    JournalUnavailable = "JOURNAL_UNAVAILABLE", 1806, Broker,
        "The broker's journal cannot be written (the message names the file and why): free disk space on its disk \
         or fix the file's permissions, then retry; the broker tries the journal again at every call that needs it. \
         Reading and cleaning up tabs still work.";
    NotAuthorised = "NOT_AUTHORISED", 1807, Broker,
        "The browser endpoint refused the credentials; fix the token in remote_cdp or BROWSERD_REMOTE_AUTHORIZATION (`browserd config`), then call browser_status.";
}

impl ErrorCode {
    /// The code for a string such as `STALE_TARGET`, if it is one.
    #[must_use]
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|code| code.as_str() == name)
    }

    /// The code for a JSON-RPC error number, if it is one.
    #[must_use]
    pub fn from_rpc_code(rpc_code: i64) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|code| code.rpc_code() == rpc_code)
    }

    /// Whether the same call may simply be sent again after `retryAfterMs`. Never true for codes
    /// where a write may already have happened (`CONNECTION_LOST`, `OUTCOME_UNKNOWN`, ...).
    #[must_use]
    pub const fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::QueueFull
                | ErrorCode::TooManyConcurrentOps
                | ErrorCode::LeaseHeldByOther
                | ErrorCode::SessionBusy
                | ErrorCode::BrokerUnavailable
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The structured error browserd sends: the JSON-RPC error object's `data`, and the body of a
/// failed tool result.
///
/// The rarely used parts are boxed so the type stays small enough to return in `Result`s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorData {
    /// Stable code.
    pub code: ErrorCode,
    /// What went wrong.
    pub message: String,
    /// What to do next.
    pub next_step: String,
    /// Retry after this many milliseconds (back-pressure, busy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// The session holding the tab or lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_session: Option<SessionId>,
    /// The element covering the target (`NOT_ACTIONABLE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covering: Option<Box<CoveringElement>>,
    /// Code-specific details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Box<Value>>,
}

impl ErrorData {
    /// An error with the code's default next step.
    #[must_use]
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            next_step: code.next_step().to_owned(),
            retry_after_ms: None,
            holder_session: None,
            covering: None,
            details: None,
        }
    }

    /// Replaces the default next step with a more specific one.
    #[must_use]
    pub fn with_next_step(mut self, next_step: impl Into<String>) -> Self {
        self.next_step = next_step.into();
        self
    }

    /// Sets the retry hint.
    #[must_use]
    pub fn with_retry_after_ms(mut self, retry_after_ms: u64) -> Self {
        self.retry_after_ms = Some(retry_after_ms);
        self
    }

    /// Names the session that holds the tab or lease.
    #[must_use]
    pub fn with_holder_session(mut self, holder: SessionId) -> Self {
        self.holder_session = Some(holder);
        self
    }

    /// Names the element covering the target.
    #[must_use]
    pub fn with_covering(mut self, covering: CoveringElement) -> Self {
        self.covering = Some(Box::new(covering));
        self
    }

    /// Attaches code-specific details.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// `INVALID_PARAMS` with the given explanation.
    #[must_use]
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParams, message)
    }
}

impl fmt::Display for ErrorData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} (next: {})", self.code, self.message, self.next_step)
    }
}

impl std::error::Error for ErrorData {}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn codes_are_unique_and_every_code_has_a_next_step() {
        let mut names = HashSet::new();
        let mut numbers = HashSet::new();
        for &code in ErrorCode::ALL {
            assert!(names.insert(code.as_str()), "duplicate string code {code}");
            assert!(numbers.insert(code.rpc_code()), "duplicate numeric code {} ({code})", code.rpc_code());
            assert!(!code.next_step().trim().is_empty(), "{code} has no next step");
        }
        assert_eq!(names.len(), ErrorCode::ALL.len());
    }

    #[test]
    fn codes_are_screaming_snake_and_serialise_as_their_name() {
        for &code in ErrorCode::ALL {
            let name = code.as_str();
            assert!(
                name.chars().all(|c| c.is_ascii_uppercase() || c == '_') && !name.starts_with('_'),
                "{name} is not SCREAMING_SNAKE"
            );
            assert_eq!(serde_json::to_value(code).unwrap(), Value::String(name.to_owned()));
            assert_eq!(serde_json::from_value::<ErrorCode>(Value::String(name.to_owned())).unwrap(), code);
            assert_eq!(ErrorCode::from_name(name), Some(code));
            assert_eq!(ErrorCode::from_rpc_code(code.rpc_code()), Some(code));
        }
    }

    #[test]
    fn numeric_codes_sit_in_their_category_block() {
        for &code in ErrorCode::ALL {
            let (low, high) = code.category().rpc_range();
            assert!((low..=high).contains(&code.rpc_code()), "{code} ({}) outside {low}..={high}", code.rpc_code());
        }
        assert_eq!(ErrorCode::InvalidParams.rpc_code(), -32602);
        assert_eq!(ErrorCode::MethodNotFound.rpc_code(), -32601);
    }

    #[test]
    fn every_page_action_code_is_in_the_taxonomy() {
        use crate::page::codes;
        for name in [
            codes::STALE_TARGET,
            codes::AMBIGUOUS_TARGET,
            codes::TARGET_NOT_FOUND,
            codes::NOT_ACTIONABLE,
            codes::DEADLINE_EXCEEDED,
            codes::DIALOG_BLOCKING,
            codes::EXPECTATION_FAILED,
            codes::INPUT_NOT_APPLIED,
            codes::INVALID_PARAMS,
            codes::POLICY_DENIED,
            codes::DUPLICATE_REQUEST,
            codes::ACTION_FAILED,
            codes::CONNECTION_LOST,
            codes::UNSUPPORTED_CAPABILITY,
            codes::CANCELLED,
        ] {
            assert!(ErrorCode::from_name(name).is_some(), "page code {name} is missing from ErrorCode");
        }
        for name in ["LEASE_REVOKED", "USER_STOPPED", "OUTCOME_UNKNOWN", "PAYLOAD_MISMATCH", "TARGET_CLOSED"] {
            assert!(ErrorCode::from_name(name).is_some(), "seed code {name} is missing");
        }
    }

    #[test]
    fn error_data_round_trips_and_omits_empty_fields() {
        let err = ErrorData::new(ErrorCode::OtherSessionTab, "tab 7 belongs to session s2")
            .with_holder_session(SessionId::new("s2"));
        let v = serde_json::to_value(&err).unwrap();
        assert_eq!(v["code"], "OTHER_SESSION_TAB");
        assert_eq!(v["holderSession"], "s2");
        assert_eq!(v["nextStep"], ErrorCode::OtherSessionTab.next_step());
        assert!(v.get("retryAfterMs").is_none());
        assert!(v.get("covering").is_none());
        assert_eq!(serde_json::from_value::<ErrorData>(v).unwrap(), err);
    }

    #[test]
    fn back_pressure_is_retryable_and_unknown_outcomes_are_not() {
        for &code in ErrorCode::ALL {
            if code.category() == ErrorCategory::BackPressure
                && !matches!(code, ErrorCode::TooManyTabs | ErrorCode::TooManyBrowsers)
            {
                assert!(code.is_retryable(), "{code}");
            }
        }
        for code in
            [ErrorCode::OutcomeUnknown, ErrorCode::ConnectionLost, ErrorCode::TooManyTabs, ErrorCode::UserStopped]
        {
            assert!(!code.is_retryable(), "{code}");
        }
        let err = ErrorData::new(ErrorCode::QueueFull, "16 requests queued").with_retry_after_ms(250);
        assert_eq!(serde_json::to_value(&err).unwrap()["retryAfterMs"], 250);
    }

    #[test]
    fn error_data_stays_small_enough_for_results() {
        assert!(std::mem::size_of::<ErrorData>() < 128, "{} bytes", std::mem::size_of::<ErrorData>());
    }

    #[test]
    fn an_unknown_code_string_is_refused() {
        assert!(serde_json::from_str::<ErrorCode>("\"NOT_A_CODE\"").is_err());
        assert_eq!(ErrorCode::from_name("NOT_A_CODE"), None);
    }
}
