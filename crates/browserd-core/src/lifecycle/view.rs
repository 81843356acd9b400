//! How a session sees its tabs and its state: [`TabView`], `browser_status`.

use super::{AutoCleanup, CloseReason, Lifecycle};
use crate::bridge::BridgeState;
use crate::debugger::DebuggerState;
use crate::error::CoreError;
use crate::provider::{FencingToken, GroupHandle, SessionKey, TabHandle};
use crate::recovery::RecoveryRecord;
use crate::tabs::{Mark, Provenance, ResourceState};

/// One tab as a session sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabView {
    /// Handle.
    pub tab: TabHandle,
    /// URL.
    pub url: String,
    /// Title.
    pub title: String,
    /// Group.
    pub group: Option<GroupHandle>,
    /// Provenance from the viewer's point of view.
    pub provenance: Provenance,
    /// Resource state.
    pub state: ResourceState,
    /// The current mark (own tabs only).
    pub mark: Option<Mark>,
}

/// `browser_status` for one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStatus {
    /// The session.
    pub session: SessionKey,
    /// Whether browser tools are active.
    pub tools_active: bool,
    /// Activation generation (a tool snapshot from an older one is stale).
    pub activation_generation: u64,
    /// Current turn number.
    pub turn: u64,
    /// Whether a turn is open.
    pub turn_open: bool,
    /// Why the session was closed, if it was.
    pub closed: Option<CloseReason>,
    /// Whether automatic turn cleanup runs.
    pub auto_cleanup: AutoCleanup,
    /// Bridge state.
    pub bridge: BridgeState,
    /// Live tabs, with provenance from this session.
    pub tabs: Vec<TabView>,
    /// This session's pending recovery records.
    pub recovery: Vec<RecoveryRecord>,
    /// Tabs with this session's debugger attached (or a failed detach).
    pub debugger: Vec<(TabHandle, DebuggerState)>,
    /// This session's write leases.
    pub write_leases: Vec<(TabHandle, FencingToken)>,
}

impl Lifecycle {
    /// A tab as `viewer` sees it.
    #[must_use]
    pub fn view(&self, viewer: &SessionKey, tab: TabHandle) -> Option<TabView> {
        self.tabs.get(tab).map(|r| TabView {
            tab: r.tab,
            url: r.url.clone(),
            title: r.title.clone(),
            group: r.group,
            provenance: r.provenance(viewer),
            state: r.state,
            mark: r.ownership.as_ref().filter(|o| &o.session == viewer).and_then(|o| o.mark),
        })
    }

    /// Every live tab with provenance from `viewer`'s point of view.
    #[must_use]
    pub fn list_tabs(&self, viewer: &SessionKey) -> Vec<TabView> {
        self.tabs.iter().filter(|r| r.alive).filter_map(|r| self.view(viewer, r.tab)).collect()
    }

    /// `browser_status`.
    pub fn status(&self, key: &SessionKey) -> Result<SessionStatus, CoreError> {
        let s = self.session(key).ok_or_else(|| CoreError::unknown_session(key))?;
        Ok(SessionStatus {
            session: key.clone(),
            tools_active: s.activation.is_active(),
            activation_generation: s.activation.generation(),
            turn: s.turn,
            turn_open: s.turn_open,
            closed: s.closed,
            auto_cleanup: self.auto_cleanup(),
            bridge: self.bridge.state(),
            tabs: self.list_tabs(key),
            recovery: self.recovery.for_session(key).cloned().collect(),
            debugger: self.debugger.iter().filter(|(_, l)| &l.session == key).map(|(t, l)| (t, l.state)).collect(),
            write_leases: self
                .tabs
                .iter()
                .filter_map(|r| self.writes.get(r.tab))
                .filter(|l| &l.holder == key)
                .map(|l| (l.tab, l.token))
                .collect(),
        })
    }
}

pub(super) fn unreachable_view(tab: TabHandle) -> TabView {
    TabView {
        tab,
        url: String::new(),
        title: String::new(),
        group: None,
        provenance: Provenance::User,
        state: ResourceState::NoResources,
        mark: None,
    }
}
