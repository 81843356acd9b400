//! The one place where core types become wire types (and wire ids become core handles): errors, tabs, states,
//! recovery records and cleanup reports.
//!
//! Tab and group ids on the wire are the numbers of the broker's own opaque handles (`TabId(n)` ⇔ `TabHandle(n)`);
//! those handles are allocated by browserd and never carry a browser's target or tab id.

use browserd_core::bridge::BridgeState as CoreBridge;
use browserd_core::error::{CoreError, ErrorKind};
use browserd_core::lifecycle::{AutoCleanup, CleanupReport, StepFailure, TabView};
use browserd_core::provider::{
    Capability, CapabilityMatrix, CapabilityState, GroupHandle, SessionKey, TabHandle, UnsupportedReason as CoreReason,
};
use browserd_core::recovery::{RecoveryAction as CoreRecoveryAction, RecoveryRecord as CoreRecord};
use browserd_core::tabs::{MarkKind as CoreMark, Provenance as CoreProvenance, ResourceState as CoreState};
use browserd_protocol::lifecycle::{
    AutoTurnCleanup, BridgeState, CapabilityStatus, CleanupResult, ContextResetResult, MarkKind, Provenance,
    RecoveryAction, RecoveryRecord, ResourceState, TabFailure, TurnEndResult, UnsupportedReason,
};
use browserd_protocol::tools::{CloseResult, ListedTab, TabResult};
use browserd_protocol::{ErrorCode, ErrorData, GroupId, SessionId, TabId};
use serde_json::json;

/// Retry hint for a lease held by another session.
pub const LEASE_RETRY_AFTER_MS: u64 = 500;

/// The retry hint of `DEBUGGER_IN_USE`: long enough for a person to close developer tools.
pub const DEBUGGER_RETRY_AFTER_MS: u64 = 2_000;

/// The wire id of a tab handle.
#[must_use]
pub fn tab_id(tab: TabHandle) -> TabId {
    TabId(tab.0)
}

/// The handle of a wire tab id.
#[must_use]
pub fn tab_handle(tab: TabId) -> TabHandle {
    TabHandle(tab.0)
}

/// The wire id of a group handle.
#[must_use]
pub fn group_id(group: GroupHandle) -> GroupId {
    GroupId(group.0)
}

/// The handle of a wire group id.
#[must_use]
pub fn group_handle(group: GroupId) -> GroupHandle {
    GroupHandle(group.0)
}

/// The wire session id of a core session key.
#[must_use]
pub fn session_id(key: &SessionKey) -> SessionId {
    SessionId::new(key.0.clone())
}

/// The core session key of a wire session id.
#[must_use]
pub fn session_key(id: &SessionId) -> SessionKey {
    SessionKey(id.as_str().to_owned())
}

fn tabs(list: &[TabHandle]) -> Vec<TabId> {
    list.iter().copied().map(tab_id).collect()
}

/// A core error as the wire's structured error, with the holder session, retry hint and details it implies.
#[must_use]
pub fn error_data(err: &CoreError) -> ErrorData {
    let code = ErrorCode::from_name(err.kind.code()).unwrap_or(ErrorCode::InternalError);
    // The provider's site-policy refusal (a page or frame of an origin the policy does not authorise).
    if let Some(at) = err.message.find(browserd_chromium::ORIGIN_NOT_AUTHORISED_PREFIX) {
        let why = &err.message[at + browserd_chromium::ORIGIN_NOT_AUTHORISED_PREFIX.len()..];
        return ErrorData::new(ErrorCode::OriginNotAuthorised, why.to_owned()).with_next_step(
            "Ask the user to allow that origin (browser_status shows the policy), or go elsewhere (browser_act \
             navigate or back) or close the tab (browser_close).",
        );
    }
    let mut data = ErrorData::new(code, err.message.clone());
    match &err.kind {
        ErrorKind::OtherSessionTab { tab, holder } => {
            data = data.with_holder_session(session_id(holder)).with_details(json!({"tab": tab_id(*tab)}));
        }
        ErrorKind::LeaseHeldByOther { tab, holder } => {
            data = data
                .with_holder_session(session_id(holder))
                .with_retry_after_ms(LEASE_RETRY_AFTER_MS)
                .with_details(json!({"tab": tab_id(*tab)}));
        }
        ErrorKind::StaleFencingToken { tab, presented, current } => {
            data = data.with_details(json!({
                "tab": tab_id(*tab),
                "presented": presented.0,
                "current": current.map(|t| t.0),
            }));
        }
        ErrorKind::TooManyTabs { limit } => {
            data = data.with_details(json!({"limit": limit}));
        }
        ErrorKind::AutoCleanupRefused { missing } => {
            data = data.with_details(json!({"missingCapabilities": capability_names(missing)}));
        }
        ErrorKind::StaleToolSnapshot { presented, current } => {
            data = data.with_details(json!({"presented": presented, "current": current}));
        }
        ErrorKind::CleanupPending { tab } => {
            data = data.with_details(json!({"tab": tab_id(*tab)}));
        }
        ErrorKind::UnknownTab { tab } | ErrorKind::UserTabProtected { tab } | ErrorKind::NotClaimed { tab } => {
            data = data.with_details(json!({"tab": tab_id(*tab)}));
        }
        ErrorKind::TabGone { tab: Some(tab) } => {
            data = data.with_details(json!({"tab": tab_id(*tab)}));
        }
        ErrorKind::GridBusy { retry_after_ms } => {
            data = data.with_retry_after_ms(*retry_after_ms).with_details(json!({"grid": "full"}));
        }
        ErrorKind::DebuggerInUse { tab } => {
            data = data.with_retry_after_ms(DEBUGGER_RETRY_AFTER_MS);
            if let Some(tab) = tab {
                data = data.with_details(json!({"tab": tab_id(*tab)}));
            }
        }
        _ => {}
    }
    data
}

/// The wire name of a capability (`turnCleanup`, `tabGroups`, ...).
#[must_use]
pub fn capability_name(cap: Capability) -> &'static str {
    match cap {
        Capability::TurnCleanup => "turnCleanup",
        Capability::TurnScopedMarks => "turnScopedMarks",
        Capability::RetainedCleanup => "retainedCleanup",
        Capability::DebuggerLeaseRecovery => "debuggerLeaseRecovery",
        Capability::TabGroups => "tabGroups",
        Capability::ClaimUserTabs => "claimUserTabs",
        Capability::Screenshots => "screenshots",
        Capability::Upload => "upload",
        Capability::Downloads => "downloads",
        Capability::CrossOriginFrames => "crossOriginFrames",
        Capability::Evaluate => "evaluate",
        Capability::RawProtocol => "rawProtocol",
    }
}

/// Wire names of capabilities, in order.
#[must_use]
pub fn capability_names(caps: &[Capability]) -> Vec<String> {
    caps.iter().map(|c| capability_name(*c).to_owned()).collect()
}

/// The wire reason of a core unsupported reason.
#[must_use]
pub fn unsupported_reason(reason: CoreReason) -> UnsupportedReason {
    match reason {
        CoreReason::ByImplementation => UnsupportedReason::ByImplementation,
        CoreReason::ByVersion => UnsupportedReason::ByVersion,
        CoreReason::Unauthorised => UnsupportedReason::Unauthorised,
        CoreReason::PolicyBlocked => UnsupportedReason::PolicyBlocked,
        CoreReason::Offline => UnsupportedReason::Offline,
    }
}

/// Every capability of a matrix with its state (absent ones are unsupported by implementation).
#[must_use]
pub fn capabilities(matrix: &CapabilityMatrix) -> Vec<CapabilityStatus> {
    const ALL: [Capability; 12] = [
        Capability::TurnCleanup,
        Capability::TurnScopedMarks,
        Capability::RetainedCleanup,
        Capability::DebuggerLeaseRecovery,
        Capability::TabGroups,
        Capability::ClaimUserTabs,
        Capability::Screenshots,
        Capability::Upload,
        Capability::Downloads,
        Capability::CrossOriginFrames,
        Capability::Evaluate,
        Capability::RawProtocol,
    ];
    ALL.iter()
        .map(|cap| {
            let (unsupported, detail) = match matrix.0.get(cap) {
                Some(CapabilityState::Supported) => (None, None),
                Some(CapabilityState::Unsupported { reason, detail }) => {
                    (Some(unsupported_reason(*reason)), Some(detail.clone()).filter(|d| !d.is_empty()))
                }
                None => (Some(UnsupportedReason::ByImplementation), None),
            };
            CapabilityStatus { name: capability_name(*cap).to_owned(), unsupported, detail }
        })
        .collect()
}

/// The wire bridge state.
#[must_use]
pub fn bridge(state: CoreBridge) -> BridgeState {
    match state {
        CoreBridge::Stopped => BridgeState::Stopped,
        CoreBridge::Connected { .. } => BridgeState::Connected,
        CoreBridge::Reconnecting { .. } => BridgeState::Reconnecting,
    }
}

/// Automatic turn cleanup and the missing capabilities when refused.
#[must_use]
pub fn auto_cleanup(auto: &AutoCleanup) -> (AutoTurnCleanup, Vec<String>) {
    match auto {
        AutoCleanup::Enabled => (AutoTurnCleanup::Enabled, Vec::new()),
        AutoCleanup::Refused { missing } => (AutoTurnCleanup::Refused, capability_names(missing)),
    }
}

/// The wire provenance.
#[must_use]
pub fn provenance(p: &CoreProvenance) -> Provenance {
    match p {
        CoreProvenance::User => Provenance::User,
        CoreProvenance::AgentCreated => Provenance::AgentCreated,
        CoreProvenance::Claimed => Provenance::Claimed,
        CoreProvenance::Handoff => Provenance::Handoff,
        CoreProvenance::Deliverable => Provenance::Deliverable,
        CoreProvenance::OtherSession { .. } => Provenance::OtherSession,
    }
}

/// The wire resource state.
#[must_use]
pub fn resource_state(s: CoreState) -> ResourceState {
    match s {
        CoreState::NoResources => ResourceState::NoResources,
        CoreState::Owned => ResourceState::Owned,
        CoreState::Retained => ResourceState::Retained,
        CoreState::Finalizing => ResourceState::Finalizing,
        CoreState::Released => ResourceState::Released,
        CoreState::CleanupUnknown => ResourceState::CleanupUnknown,
    }
}

/// The wire mark kind.
#[must_use]
pub fn mark_kind(kind: CoreMark) -> MarkKind {
    match kind {
        CoreMark::Deliverable => MarkKind::Deliverable,
        CoreMark::Handoff => MarkKind::Handoff,
    }
}

/// The core mark kind of a wire mark.
#[must_use]
pub fn core_mark_kind(kind: MarkKind) -> CoreMark {
    match kind {
        MarkKind::Deliverable => CoreMark::Deliverable,
        MarkKind::Handoff => CoreMark::Handoff,
    }
}

/// A tab as `browser_list` shows it to the viewing session (other sessions' tabs carry only id and provenance).
#[must_use]
pub fn listed_tab(view: &TabView) -> ListedTab {
    let provenance = provenance(&view.provenance);
    if provenance == Provenance::OtherSession {
        return ListedTab {
            tab: tab_id(view.tab),
            provenance,
            state: None,
            mark: None,
            url: None,
            title: None,
            group: None,
            active: false,
        };
    }
    let own = provenance != Provenance::User;
    ListedTab {
        tab: tab_id(view.tab),
        provenance,
        state: own.then(|| resource_state(view.state)),
        mark: view.mark.map(|m| mark_kind(m.kind)),
        url: Some(view.url.clone()),
        title: Some(view.title.clone()),
        group: view.group.map(group_id),
        active: false,
    }
}

/// The result of `browser_open` / `browser_claim` (observation attached by the caller).
#[must_use]
pub fn tab_result(view: &TabView) -> TabResult {
    TabResult {
        tab: tab_id(view.tab),
        url: view.url.clone(),
        title: view.title.clone(),
        observation: None,
        resumed: None,
    }
}

/// The wire recovery action.
#[must_use]
pub fn recovery_action(action: CoreRecoveryAction) -> RecoveryAction {
    match action {
        CoreRecoveryAction::Close => RecoveryAction::Close,
        CoreRecoveryAction::Release => RecoveryAction::Release,
        CoreRecoveryAction::Detach => RecoveryAction::Detach,
    }
}

/// A wire recovery record.
#[must_use]
pub fn recovery_record(rec: &CoreRecord) -> RecoveryRecord {
    RecoveryRecord {
        what: recovery_action(rec.action),
        tab: tab_id(rec.tab),
        session: session_id(&rec.session),
        attempts: rec.attempts,
        last_code: Some(ErrorCode::from_name(rec.last_kind.code()).unwrap_or(ErrorCode::CleanupFailed)),
        last_error: Some(rec.last_error.clone()),
    }
}

fn failure(f: &StepFailure) -> TabFailure {
    let code = if f.outcome_unknown && !matches!(f.kind, ErrorKind::ConnectionLost | ErrorKind::DeadlineExceeded) {
        ErrorCode::OutcomeUnknown
    } else {
        ErrorCode::from_name(f.kind.code()).unwrap_or(ErrorCode::CleanupFailed)
    };
    TabFailure {
        tab: tab_id(f.tab),
        code,
        next_step: format!("{} ({}; it is retried automatically)", code.next_step(), f.message),
    }
}

fn failures(report: &CleanupReport) -> Vec<TabFailure> {
    let mut out: Vec<TabFailure> = report.failures.iter().map(failure).collect();
    for skipped in &report.skipped {
        let data = error_data(&skipped.reason);
        out.push(TabFailure { tab: tab_id(skipped.tab), code: data.code, next_step: data.next_step });
    }
    out
}

/// The compact result of a finalize or session close.
#[must_use]
pub fn cleanup_result(report: &CleanupReport) -> CleanupResult {
    CleanupResult {
        ok: report.ok,
        closed: tabs(&report.closed),
        released: tabs(&report.released),
        kept: tabs(&report.kept),
        tools_active: report.tools_active,
        bridge: bridge(report.bridge),
        failed: failures(report),
    }
}

/// The result of `turn.end`. Marked tabs retained with ownership are reported as `kept`.
#[must_use]
pub fn turn_end_result(report: &CleanupReport, turn: u64) -> TurnEndResult {
    let (auto_turn_cleanup, missing_capabilities) = match &report.auto_cleanup_refused {
        Some(missing) => (AutoTurnCleanup::Refused, capability_names(missing)),
        None => (AutoTurnCleanup::Enabled, Vec::new()),
    };
    let mut kept = tabs(&report.kept);
    kept.extend(tabs(&report.retained));
    kept.sort();
    kept.dedup();
    TurnEndResult {
        ok: report.ok,
        turn,
        auto_turn_cleanup,
        missing_capabilities,
        closed: tabs(&report.closed),
        released: tabs(&report.released),
        kept,
        detached: tabs(&report.detached),
        failed: failures(report),
    }
}

/// The result of a context reset.
#[must_use]
pub fn context_reset_result(report: &CleanupReport, client_disconnected: bool) -> ContextResetResult {
    ContextResetResult {
        ok: report.ok,
        closed: tabs(&report.closed),
        released: tabs(&report.released),
        kept: tabs(&report.kept),
        tools_active: report.tools_active,
        bridge: bridge(report.bridge),
        client_disconnected,
        failed: failures(report),
    }
}

/// The result of `browser_close`.
#[must_use]
pub fn close_result(report: &CleanupReport) -> CloseResult {
    CloseResult { ok: report.ok, closed: tabs(&report.closed), failed: failures(report) }
}

#[cfg(test)]
mod tests {
    use browserd_core::provider::FencingToken;

    use super::*;

    #[test]
    fn every_core_kind_maps_to_a_protocol_code() {
        let tab = TabHandle(4);
        let holder = SessionKey("s2".into());
        let kinds = vec![
            ErrorKind::UnknownSession,
            ErrorKind::SessionClosed,
            ErrorKind::ShuttingDown,
            ErrorKind::ToolsInactive,
            ErrorKind::StaleToolSnapshot { presented: 1, current: 2 },
            ErrorKind::UnknownTab { tab },
            ErrorKind::TabGone { tab: Some(tab) },
            ErrorKind::OtherSessionTab { tab, holder: holder.clone() },
            ErrorKind::UserTabProtected { tab },
            ErrorKind::NotClaimed { tab },
            ErrorKind::CleanupPending { tab },
            ErrorKind::TooManyTabs { limit: 3 },
            ErrorKind::LeaseHeldByOther { tab, holder: holder.clone() },
            ErrorKind::StaleFencingToken { tab, presented: FencingToken(1), current: Some(FencingToken(2)) },
            ErrorKind::LeaseRevoked,
            ErrorKind::DebuggerInUse { tab: Some(tab) },
            ErrorKind::CleanupFailed { failed: 1 },
            ErrorKind::AutoCleanupRefused { missing: vec![Capability::TurnCleanup] },
            ErrorKind::ConnectionLost,
            ErrorKind::BrowserRestarted,
            ErrorKind::NotAuthorised,
            ErrorKind::GridBusy { retry_after_ms: 5000 },
            ErrorKind::DeadlineExceeded,
            ErrorKind::Cancelled,
            ErrorKind::BrowserRefused,
            ErrorKind::Unsupported { reason: CoreReason::Offline },
            ErrorKind::OutcomeUnknown,
            ErrorKind::InvalidRequest,
            ErrorKind::Internal,
        ];
        for kind in kinds {
            let expected = kind.code();
            let data = error_data(&CoreError::new(kind.clone(), "m"));
            assert_eq!(data.code.as_str(), expected, "{kind:?}");
        }
    }

    #[test]
    fn holder_and_retry_hints_are_carried() {
        let holder = SessionKey("s7".into());
        let data = error_data(&CoreError::new(
            ErrorKind::LeaseHeldByOther { tab: TabHandle(3), holder: holder.clone() },
            "held",
        ));
        assert_eq!(data.holder_session, Some(SessionId::new("s7")));
        assert_eq!(data.retry_after_ms, Some(LEASE_RETRY_AFTER_MS));
        let data = error_data(&CoreError::new(ErrorKind::OtherSessionTab { tab: TabHandle(3), holder }, "other"));
        assert_eq!(data.code, ErrorCode::OtherSessionTab);
        assert_eq!(data.holder_session, Some(SessionId::new("s7")));
        assert_eq!(data.details.as_deref().unwrap()["tab"], 3);
    }

    #[test]
    fn ids_round_trip() {
        assert_eq!(tab_handle(tab_id(TabHandle(9))), TabHandle(9));
        assert_eq!(group_handle(group_id(GroupHandle(2))), GroupHandle(2));
        assert_eq!(session_key(&session_id(&SessionKey("s1".into()))), SessionKey("s1".into()));
    }
}
