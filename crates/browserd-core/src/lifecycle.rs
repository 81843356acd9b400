//! The lifecycle engine: sessions, turns, turn-scoped marks and every lifecycle boundary, as one
//! sans-I/O state machine that owns the smaller machines.
//!
//! [`Lifecycle`] is the single owner of: each session's [`ToolActivation`], the [`TabTable`]
//! (provenance + resource state), the [`DebuggerLeases`], the [`WriteLeases`], the
//! [`RecoveryLog`] and the [`Bridge`]. Nothing else mutates them.
//!
//! It reads no clock and does no I/O (`now` is an argument). A boundary is driven in three
//! steps, quinn-proto style:
//! 1. `plan_*` validates, applies what needs no browser (marks, retained tabs, write leases) and
//!    returns a [`Plan`] of provider [`Step`]s (close, release, detach); the affected records move
//!    to `finalizing` / `detaching`;
//! 2. the driver executes each step against the provider and feeds the answer to
//!    [`Lifecycle::handle_step_result`] (a dropped step goes to [`Lifecycle::handle_step_abandoned`]);
//! 3. [`Lifecycle::complete`] turns the outcomes into a [`CleanupReport`] and applies the
//!    boundary's own effect (end the turn, deactivate tools after a fully successful reset, …).
//!
//! What each boundary does (BRIEF §3):
//!
//! | | turn end | finalize | context reset | close (disposal, switch, fork, unload) |
//! | --- | --- | --- | --- | --- |
//! | close unmarked agent tabs | yes | yes | yes | yes |
//! | release claimed user tabs | yes | yes | yes | yes |
//! | marked tabs | retained with ownership | page kept, metadata dropped | same | same |
//! | detach this session's debugger | yes | yes (unless asked not to) | yes | yes |
//! | tools | unchanged | unchanged | inactive only if everything succeeded | inactive |

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::Millis;
use crate::activation::{DeactivationCause, ToolActivation};
use crate::bridge::{Bridge, BridgeState, StopCause};
use crate::debugger::{DEFAULT_IDLE_DETACH_MS, DebuggerAcquire, DebuggerLeases, DebuggerState};
use crate::error::{CoreError, ErrorKind};
use crate::provider::{
    Capability, CapabilityMatrix, FencingToken, GroupHandle, ProviderError, ProviderErrorKind, ProviderEvent,
    SessionKey, TabHandle, TabInfo,
};
use crate::recovery::{RecoveryAction, RecoveryLog, RecoveryRecord};
use crate::tabs::{Ended, Mark, MarkKind, Origin, Provenance, ResourceState, TabRecord, TabTable};
use crate::write_lease::WriteLeases;

/// How many closed sessions are remembered after their records are removed (a bounded tombstone ring): their
/// operations keep answering `SESSION_CLOSED`, a re-open of their key is refused, and `browser_status` still reads
/// them. Older ones are forgotten entirely.
pub const MAX_CLOSED_SESSIONS: usize = 512;

/// Engine configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifecycleConfig {
    /// Idle window before an unused debugger is detached.
    pub idle_detach_ms: u64,
    /// Controlled tabs per session (BRIEF §7: 3 per task).
    pub max_tabs_per_session: usize,
}

impl Default for LifecycleConfig {
    fn default() -> Self {
        Self { idle_detach_ms: DEFAULT_IDLE_DETACH_MS, max_tabs_per_session: 3 }
    }
}

/// Why a session was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CloseReason {
    /// The host session ended normally.
    SessionEnd,
    /// The agent was disposed.
    AgentDisposed,
    /// The host switched to another session.
    SessionSwitch,
    /// The host forked the session.
    Fork,
    /// The plugin/extension is being unloaded.
    PluginUnload,
    /// The host is exiting.
    HostExit,
}

impl CloseReason {
    fn deactivation(self) -> DeactivationCause {
        match self {
            Self::SessionEnd | Self::SessionSwitch | Self::Fork => DeactivationCause::SessionEnd,
            Self::AgentDisposed | Self::PluginUnload | Self::HostExit => DeactivationCause::Disposal,
        }
    }
}

/// Whether automatic turn cleanup runs on this browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutoCleanup {
    /// The browser announced every capability automatic cleanup needs.
    Enabled,
    /// Refused: these capabilities are missing.
    Refused {
        /// The missing capabilities.
        missing: Vec<Capability>,
    },
}

/// One session's lifecycle state.
#[derive(Debug, Clone)]
pub struct Session {
    key: SessionKey,
    activation: ToolActivation,
    turn: u64,
    turn_open: bool,
    closed: Option<CloseReason>,
    opened_at: Millis,
}

impl Session {
    /// The session key.
    #[must_use]
    pub fn key(&self) -> &SessionKey {
        &self.key
    }

    /// Tool activation.
    #[must_use]
    pub fn activation(&self) -> &ToolActivation {
        &self.activation
    }

    /// The current (or last) turn number; 0 before the first turn.
    #[must_use]
    pub fn turn(&self) -> u64 {
        self.turn
    }

    /// Whether a turn is in progress.
    #[must_use]
    pub fn turn_open(&self) -> bool {
        self.turn_open
    }

    /// Why the session was closed, if it was.
    #[must_use]
    pub fn closed(&self) -> Option<CloseReason> {
        self.closed
    }

    /// When it was opened.
    #[must_use]
    pub fn opened_at(&self) -> Millis {
        self.opened_at
    }
}

/// Which boundary or operation a plan is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Boundary {
    /// Host turn end (internal; no transcript output).
    TurnEnd,
    /// `browser_cleanup` (task finalize).
    Finalize,
    /// `browser_context_reset`.
    ContextReset,
    /// Session close: disposal, switch, fork, unload.
    Close(CloseReason),
    /// `browser_close` of tabs or groups.
    CloseTabs,
    /// `browser_handoff`.
    Handoff,
    /// Retry of recovery records before an operation.
    Recovery,
    /// Idle debugger detach (timer).
    IdleDetach,
}

/// A provider call the driver must make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StepAction {
    /// `close_tab`.
    Close,
    /// `release_tab`.
    Release,
    /// `detach_debugger`.
    Detach,
}

/// Why a step is made; decides where its success is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepPurpose {
    /// Close an agent-created tab → `closed`.
    CloseScratch,
    /// Release a claimed user tab → `released`.
    ReleaseClaim,
    /// Keep a marked (or explicitly kept) page and drop its ownership metadata → `kept`.
    KeepPage,
    /// Detach the debugger → `detached`.
    Detach,
}

/// One provider call of a plan. The provider call must carry `session` as its context session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Unique id.
    pub id: u64,
    /// The session the call is made for.
    pub session: SessionKey,
    /// The tab.
    pub tab: TabHandle,
    /// What to call.
    pub action: StepAction,
    /// Why.
    pub purpose: StepPurpose,
}

/// A tab a group operation left alone, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The tab.
    pub tab: TabHandle,
    /// Why it was not touched.
    pub reason: CoreError,
}

/// The provider calls a boundary needs, plus what it decided without the browser.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The session.
    pub session: SessionKey,
    /// The boundary.
    pub boundary: Boundary,
    /// Calls to make, in order (detaches first).
    pub steps: Vec<Step>,
    /// Marked tabs retained with their ownership (turn end).
    pub retained: Vec<TabHandle>,
    /// Tabs a group request left alone.
    pub skipped: Vec<Skipped>,
    /// Requests already satisfied by an earlier call (idempotent answers).
    pub already_done: Vec<(TabHandle, Ended)>,
    /// Set when automatic turn cleanup was refused.
    pub refused: Option<Vec<Capability>>,
    /// Whether this turn end had already happened (a repeated signal).
    pub repeated: bool,
}

impl Plan {
    fn new(session: &SessionKey, boundary: Boundary) -> Self {
        Self {
            session: session.clone(),
            boundary,
            steps: Vec::new(),
            retained: Vec::new(),
            skipped: Vec::new(),
            already_done: Vec::new(),
            refused: None,
            repeated: false,
        }
    }
}

/// What became of one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOutcome {
    /// The browser confirmed it (a note says when it was inferred, e.g. "tab already gone").
    Confirmed {
        /// Extra detail.
        note: Option<String>,
    },
    /// It failed or its outcome is unknown; a recovery record keeps it.
    Failed {
        /// Whether it may have happened.
        outcome_unknown: bool,
        /// The error, as a core kind (for the wire code).
        kind: ErrorKind,
        /// The provider's message.
        message: String,
    },
}

/// A failed step, as reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFailure {
    /// The tab.
    pub tab: TabHandle,
    /// What failed.
    pub action: StepAction,
    /// Whether it may have happened anyway.
    pub outcome_unknown: bool,
    /// The error, as a core kind (for the wire code).
    pub kind: ErrorKind,
    /// The provider's message.
    pub message: String,
}

/// The result of a boundary: the compact `{ok, closed, released, kept, toolsActive, bridge}`
/// plus failures and details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanupReport {
    /// The boundary.
    pub boundary: Boundary,
    /// True only if every step was confirmed and nothing was refused.
    pub ok: bool,
    /// Agent tabs closed (confirmed).
    pub closed: Vec<TabHandle>,
    /// Claimed user tabs released (confirmed; the pages stay).
    pub released: Vec<TabHandle>,
    /// Pages kept with their ownership metadata dropped (confirmed).
    pub kept: Vec<TabHandle>,
    /// Marked tabs retained with ownership (turn end only).
    pub retained: Vec<TabHandle>,
    /// Tabs whose debugger was detached.
    pub detached: Vec<TabHandle>,
    /// Steps that failed or have an unknown outcome.
    pub failures: Vec<StepFailure>,
    /// Tabs a group request left alone, with reasons.
    pub skipped: Vec<Skipped>,
    /// Set when automatic turn cleanup was refused.
    pub auto_cleanup_refused: Option<Vec<Capability>>,
    /// Whether browser tools are active after this boundary.
    pub tools_active: bool,
    /// Bridge state after this boundary.
    pub bridge: BridgeState,
    /// Recovery records of this session still pending.
    pub pending_recovery: usize,
}

impl CleanupReport {
    /// `Err(CleanupFailed)` unless `ok`.
    pub fn into_result(self) -> Result<Self, CoreError> {
        if self.ok {
            return Ok(self);
        }
        if let Some(missing) = &self.auto_cleanup_refused {
            return Err(auto_cleanup_refused(missing));
        }
        Err(CoreError::new(
            ErrorKind::CleanupFailed { failed: self.failures.len() },
            format!(
                "{} cleanup step(s) failed or have an unknown outcome; they are kept as recovery records and retried \
                 by the next operation — call browser_status or run browser_cleanup again",
                self.failures.len()
            ),
        ))
    }
}

/// The inputs of `browser_cleanup` (task finalize).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalizeInputs {
    /// Tabs whose page is kept (ownership metadata dropped).
    pub keep: Vec<TabHandle>,
    /// Agent-created tabs to close (even if marked).
    pub close: Vec<TabHandle>,
    /// Claimed user tabs to release.
    pub release: Vec<TabHandle>,
    /// Marks to apply first.
    pub mark: Vec<(TabHandle, MarkKind)>,
    /// Detach this session's debugger leases (default true).
    pub release_debugger: bool,
}

impl Default for FinalizeInputs {
    fn default() -> Self {
        Self { keep: Vec::new(), close: Vec::new(), release: Vec::new(), mark: Vec::new(), release_debugger: true }
    }
}

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

/// The lifecycle engine. See the module docs.
#[derive(Debug)]
pub struct Lifecycle {
    config: LifecycleConfig,
    /// Open sessions, and closed ones something still refers to (a recovery record, an owned tab, a lease, …).
    sessions: BTreeMap<SessionKey, Session>,
    /// Closed sessions nothing refers to any more, newest last, at most [`MAX_CLOSED_SESSIONS`].
    retired: VecDeque<Session>,
    tabs: TabTable,
    debugger: DebuggerLeases,
    writes: WriteLeases,
    recovery: RecoveryLog,
    bridge: Bridge,
    capabilities: CapabilityMatrix,
    next_step: u64,
    in_flight: BTreeMap<u64, Step>,
    /// Tabs with an agent action in progress, and whose: a tab they open meanwhile is that session's popup.
    acting: BTreeMap<TabHandle, SessionKey>,
    /// Popups opened by a tab during its session's action, not yet adopted: (session, popup, opener).
    popups: Vec<(SessionKey, TabHandle, TabHandle)>,
    /// Handed-off tabs whose session waits for the user (`browser_handoff` with `until`): no writes meanwhile.
    awaiting: BTreeMap<TabHandle, SessionKey>,
}

/// What a handoff wait found when it looked at its tab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandoffCheck {
    /// The tab is still handed off by the session; its last known URL.
    Waiting {
        /// The URL.
        url: String,
    },
    /// The tab is gone (closed by the user, or crashed).
    Closed,
    /// The session no longer owns the tab with a handoff mark (cleanup ran, the mark expired).
    NoLongerHandedOff,
}

impl Lifecycle {
    /// A new engine. Until [`Self::handle_capabilities`] is called the browser is assumed to have
    /// no capabilities (automatic turn cleanup refused).
    #[must_use]
    pub fn new(config: LifecycleConfig) -> Self {
        let debugger = DebuggerLeases::new(config.idle_detach_ms);
        Self {
            config,
            sessions: BTreeMap::new(),
            retired: VecDeque::new(),
            tabs: TabTable::new(),
            debugger,
            writes: WriteLeases::new(),
            recovery: RecoveryLog::new(),
            bridge: Bridge::new(),
            capabilities: CapabilityMatrix::default(),
            next_step: 0,
            in_flight: BTreeMap::new(),
            acting: BTreeMap::new(),
            popups: Vec::new(),
            awaiting: BTreeMap::new(),
        }
    }

    // ----- getters -----

    /// Configuration.
    #[must_use]
    pub fn config(&self) -> &LifecycleConfig {
        &self.config
    }

    /// A session: an open one, a closed one still tracked, or a recently closed one from the tombstone ring.
    #[must_use]
    pub fn session(&self, key: &SessionKey) -> Option<&Session> {
        self.sessions.get(key).or_else(|| self.retired_session(key))
    }

    fn retired_session(&self, key: &SessionKey) -> Option<&Session> {
        self.retired.iter().rev().find(|s| &s.key == key)
    }

    /// Every tracked session: the open ones, and closed ones something still refers to (see
    /// [`Self::reap_closed_sessions`]). Closed sessions already removed are not listed.
    pub fn sessions(&self) -> impl Iterator<Item = &Session> {
        self.sessions.values()
    }

    /// How many sessions are tracked (open, or closed with something left); see [`Self::sessions`].
    #[must_use]
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// How many removed closed sessions the tombstone ring remembers (at most [`MAX_CLOSED_SESSIONS`]).
    #[must_use]
    pub fn closed_tombstones(&self) -> usize {
        self.retired.len()
    }

    /// Whether the closed session `key` still has something the engine must keep it for: a pending recovery
    /// record, a live tab it owns (retained, finalizing, cleanup pending), a debugger or write lease, a handoff wait,
    /// a running action, a popup waiting for adoption, or a step handed to the driver and not yet answered.
    fn still_referenced(&self, key: &SessionKey) -> bool {
        self.recovery.for_session(key).next().is_some()
            || self.tabs.iter().any(|r| r.alive && r.owned_by(key))
            || self.debugger.iter().any(|(_, l)| &l.session == key)
            || self.tabs.iter().any(|r| self.writes.get(r.tab).is_some_and(|l| &l.holder == key))
            || self.awaiting.values().any(|s| s == key)
            || self.acting.values().any(|s| s == key)
            || self.popups.iter().any(|(s, ..)| s == key)
            || self.in_flight.values().any(|step| &step.session == key)
    }

    /// Remove closed sessions nothing refers to any more (see `still_referenced`) from the session map; each moves
    /// to the bounded tombstone ring, so its operations still answer `SESSION_CLOSED` and its key cannot be opened
    /// again while it is remembered. Called by [`Self::complete`]; the driver calls it too after events that may have
    /// resolved the last record. Returns the removed keys.
    pub fn reap_closed_sessions(&mut self) -> Vec<SessionKey> {
        let done: Vec<SessionKey> = self
            .sessions
            .values()
            .filter(|s| s.closed.is_some() && !self.still_referenced(&s.key))
            .map(|s| s.key.clone())
            .collect();
        for key in &done {
            if let Some(session) = self.sessions.remove(key) {
                self.retired.push_back(session);
            }
        }
        while self.retired.len() > MAX_CLOSED_SESSIONS {
            self.retired.pop_front();
        }
        done
    }

    /// The tab table.
    #[must_use]
    pub fn tabs(&self) -> &TabTable {
        &self.tabs
    }

    /// The debugger leases.
    #[must_use]
    pub fn debugger(&self) -> &DebuggerLeases {
        &self.debugger
    }

    /// The write leases.
    #[must_use]
    pub fn write_leases(&self) -> &WriteLeases {
        &self.writes
    }

    /// The recovery log.
    #[must_use]
    pub fn recovery(&self) -> &RecoveryLog {
        &self.recovery
    }

    /// The bridge.
    #[must_use]
    pub fn bridge(&self) -> &Bridge {
        &self.bridge
    }

    /// Whether automatic turn cleanup runs on this browser.
    #[must_use]
    pub fn auto_cleanup(&self) -> AutoCleanup {
        let missing = self.capabilities.missing_for_turn_cleanup();
        if missing.is_empty() { AutoCleanup::Enabled } else { AutoCleanup::Refused { missing } }
    }

    fn is_orphan(&self, record: &RecoveryRecord) -> bool {
        self.sessions.get(&record.session).is_none_or(|s| s.closed.is_some())
    }

    /// Closed sessions that still have recovery records (retried by any later operation).
    #[must_use]
    pub fn orphaned_recovery_sessions(&self) -> Vec<SessionKey> {
        let mut out: Vec<SessionKey> =
            self.recovery.iter().filter(|r| self.is_orphan(r)).map(|r| r.session.clone()).collect();
        out.sort();
        out.dedup();
        out
    }

    /// Closed sessions with a recovery record whose background retry is due at `now` (backoff:
    /// [`RecoveryRecord::next_retry_at`]).
    #[must_use]
    pub fn orphaned_recovery_due(&self, now: Millis) -> Vec<SessionKey> {
        let mut out: Vec<SessionKey> = self
            .recovery
            .iter()
            .filter(|r| self.is_orphan(r) && r.next_retry_at() <= now)
            .map(|r| r.session.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    // ----- browser inputs -----

    /// The provider's capability matrix (at connect and whenever it changes).
    pub fn handle_capabilities(&mut self, capabilities: CapabilityMatrix) {
        self.capabilities = capabilities;
    }

    /// The provider connected (first operation or reconnect) with this epoch.
    pub fn handle_connected(&mut self, epoch: u64, now: Millis) {
        self.bridge.handle_connected(epoch, now);
    }

    /// A provider call failed because the connection is down.
    pub fn handle_connection_lost(&mut self, now: Millis) {
        self.bridge.handle_connection_lost(now);
    }

    /// Plugin disposal or an explicit host disconnect stopped the bridge.
    pub fn handle_bridge_stopped(&mut self, cause: StopCause, now: Millis) {
        self.bridge.handle_stop(cause, now);
    }

    /// A full tab list from the browser: new tabs become user tabs, tabs missing from the list
    /// are gone.
    pub fn handle_tab_snapshot(&mut self, tabs: &[TabInfo], now: Millis) {
        let present: BTreeSet<TabHandle> = tabs.iter().map(|t| t.tab).collect();
        for info in tabs {
            let new = self.tabs.get(info.tab).is_none();
            self.tabs.handle_seen(info, now);
            if new {
                self.note_popup(info);
            }
        }
        let gone: Vec<TabHandle> =
            self.tabs.iter().filter(|r| r.alive && !present.contains(&r.tab)).map(|r| r.tab).collect();
        for tab in gone {
            self.tab_gone(tab, now, "missing from the browser's tab list: counted as closed");
        }
    }

    /// A provider event. Returns `true` when the driver must re-read the tab list (events lost).
    pub fn handle_event(&mut self, event: &ProviderEvent, now: Millis) -> bool {
        match event {
            ProviderEvent::TabCreated(info) | ProviderEvent::TabUpdated(info) => {
                let new = self.tabs.get(info.tab).is_none();
                self.tabs.handle_seen(info, now);
                if new {
                    self.note_popup(info);
                }
            }
            ProviderEvent::TabClosed { tab, by_user } => {
                let cause = if *by_user { "closed in the browser by the user" } else { "closed in the browser" };
                self.tab_gone(*tab, now, cause);
            }
            ProviderEvent::DebuggerDetached { tab, .. } => {
                // Clears only debugger state: no tab, claim or ownership change.
                self.debugger.handle_detached_externally(*tab);
                self.recovery.resolve(*tab, RecoveryAction::Detach);
            }
            ProviderEvent::ConnectionLost { .. } => self.bridge.handle_connection_lost(now),
            ProviderEvent::ConnectionRestored { connection_epoch } => {
                self.bridge.handle_connected(*connection_epoch, now);
            }
            ProviderEvent::UserStopped { tab, .. } => match tab {
                Some(tab) => {
                    self.writes.revoke(*tab);
                }
                None => {
                    let tabs: Vec<TabHandle> = self.tabs.iter().map(|r| r.tab).collect();
                    for tab in tabs {
                        self.writes.revoke(tab);
                    }
                }
            },
            ProviderEvent::ResyncRequired => return true,
        }
        false
    }

    /// A provider call reported the tab gone (the browser's own answer, so it counts as closed).
    pub fn handle_tab_gone(&mut self, tab: TabHandle, now: Millis) {
        self.tab_gone(tab, now, "provider reported the tab gone during an operation: counted as closed");
    }

    fn tab_gone(&mut self, tab: TabHandle, now: Millis, cause: &str) {
        self.tabs.handle_closed(tab, now, cause);
        self.popups.retain(|(_, popup, _)| *popup != tab);
        self.recovery.resolve_tab(tab);
        self.debugger.handle_detached_externally(tab);
        self.writes.revoke(tab);
    }

    // ----- sessions, turns, activation -----

    /// Open a session. Idempotent for an open session; a closed key is refused.
    pub fn open_session(&mut self, key: &SessionKey, now: Millis) -> Result<(), CoreError> {
        if self.retired_session(key).is_some() {
            return Err(CoreError::session_closed(key));
        }
        match self.sessions.get(key) {
            Some(s) if s.closed.is_some() => Err(CoreError::session_closed(key)),
            Some(_) => Ok(()),
            None => {
                self.sessions.insert(
                    key.clone(),
                    Session {
                        key: key.clone(),
                        activation: ToolActivation::new(),
                        turn: 0,
                        turn_open: false,
                        closed: None,
                        opened_at: now,
                    },
                );
                Ok(())
            }
        }
    }

    fn live(&self, key: &SessionKey) -> Result<&Session, CoreError> {
        match self.sessions.get(key) {
            None => Err(self.missing_session(key)),
            Some(s) if s.closed.is_some() => Err(CoreError::session_closed(key)),
            Some(s) => Ok(s),
        }
    }

    fn live_mut(&mut self, key: &SessionKey) -> Result<&mut Session, CoreError> {
        if !self.sessions.contains_key(key) {
            return Err(self.missing_session(key));
        }
        match self.sessions.get_mut(key) {
            None => Err(CoreError::unknown_session(key)),
            Some(s) if s.closed.is_some() => Err(CoreError::session_closed(key)),
            Some(s) => Ok(s),
        }
    }

    /// The error for a key with no tracked session: `SESSION_CLOSED` for a remembered closed session, otherwise
    /// `UNKNOWN_SESSION`.
    #[must_use]
    pub fn missing_session(&self, key: &SessionKey) -> CoreError {
        if self.retired_session(key).is_some() {
            CoreError::session_closed(key)
        } else {
            CoreError::unknown_session(key)
        }
    }

    /// Check that `key` is open and its tools are active (every model-visible browser tool).
    pub fn check_active(&self, key: &SessionKey) -> Result<(), CoreError> {
        if self.live(key)?.activation.is_active() { Ok(()) } else { Err(CoreError::tools_inactive(key)) }
    }

    /// Check a tool call made from a tool set registered under activation `generation`: a tool
    /// snapshot from before a context reset (or from another activation) is refused at execution.
    pub fn check_tool_snapshot(&self, key: &SessionKey, generation: u64) -> Result<(), CoreError> {
        self.check_active(key)?;
        let current = self.live(key)?.activation.generation();
        if generation != current {
            return Err(CoreError::new(
                ErrorKind::StaleToolSnapshot { presented: generation, current },
                format!(
                    "this browser tool set is from activation {generation}, but session {key} is at activation \
                     {current}; use the current tools"
                ),
            ));
        }
        Ok(())
    }

    /// Start a turn. Idempotent while a turn is open; returns the turn number.
    pub fn begin_turn(&mut self, key: &SessionKey) -> Result<u64, CoreError> {
        let s = self.live_mut(key)?;
        if !s.turn_open {
            s.turn += 1;
            s.turn_open = true;
        }
        Ok(s.turn)
    }

    /// Activate browser tools (skill loaded / first browser use). Idempotent; returns whether
    /// the state changed.
    pub fn activate_tools(&mut self, key: &SessionKey, now: Millis) -> Result<bool, CoreError> {
        Ok(self.live_mut(key)?.activation.handle_activate(now))
    }

    // ----- tabs -----

    fn live_owned_count(&self, key: &SessionKey) -> usize {
        self.tabs.iter().filter(|r| r.alive && r.owned_by(key)).count()
    }

    fn check_tab_limit(&self, key: &SessionKey) -> Result<(), CoreError> {
        let limit = self.config.max_tabs_per_session;
        if self.live_owned_count(key) >= limit {
            return Err(CoreError::new(
                ErrorKind::TooManyTabs { limit },
                format!(
                    "session {key} already controls {limit} tabs; close or release one first (browser_close or browser_cleanup)"
                ),
            ));
        }
        Ok(())
    }

    /// Before `create_tab`: the session must be active and under its tab limit. Opens a turn if
    /// none is open.
    pub fn check_open_tab(&mut self, key: &SessionKey) -> Result<(), CoreError> {
        self.check_active(key)?;
        self.check_tab_limit(key)?;
        self.begin_turn(key)?;
        Ok(())
    }

    /// The provider created a tab for `key`.
    pub fn handle_tab_created(&mut self, key: &SessionKey, info: &TabInfo, now: Millis) -> TabView {
        self.tabs.handle_created(key, info, now);
        self.view(key, info.tab).unwrap_or_else(|| unreachable_view(info.tab))
    }

    /// Before `claim_tab`: returns `false` when the session already owns the tab (idempotent).
    pub fn check_claim(&mut self, key: &SessionKey, tab: TabHandle) -> Result<bool, CoreError> {
        self.check_active(key)?;
        let rec = self.tabs.get(tab).ok_or_else(|| CoreError::unknown_tab(tab))?;
        if !rec.alive {
            return Err(CoreError::tab_gone(tab));
        }
        match rec.owner() {
            Some(owner) if owner == key => {
                if rec.state == ResourceState::CleanupUnknown || rec.state == ResourceState::Finalizing {
                    return Err(CoreError::cleanup_pending(tab));
                }
                Ok(false)
            }
            Some(owner) => Err(CoreError::other_session(tab, owner)),
            None => {
                self.check_tab_limit(key)?;
                self.begin_turn(key)?;
                Ok(true)
            }
        }
    }

    /// The provider confirmed the claim.
    pub fn handle_claimed(&mut self, key: &SessionKey, tab: TabHandle, now: Millis) -> Option<TabView> {
        if self.tabs.get(tab).is_some_and(|r| r.alive && r.ownership.is_none()) {
            self.tabs.handle_claimed(key, tab, now);
            // A debugger the previous owner failed to detach is now this session's to detach:
            // its calls must never again be made for a session that no longer owns the tab.
            self.debugger.reassign(tab, key);
            self.recovery.reassign(tab, RecoveryAction::Detach, key);
        }
        self.view(key, tab)
    }

    /// Check that `key` may use `tab` (observe, act, debugger): active tools, own live tab, no
    /// cleanup pending. Opens a turn if none is open.
    pub fn check_tab_access(&mut self, key: &SessionKey, tab: TabHandle) -> Result<(), CoreError> {
        self.check_active(key)?;
        self.own_usable(key, tab)?;
        self.begin_turn(key)?;
        Ok(())
    }

    fn own_usable(&self, key: &SessionKey, tab: TabHandle) -> Result<&TabRecord, CoreError> {
        let rec = self.tabs.get(tab).ok_or_else(|| CoreError::unknown_tab(tab))?;
        if !rec.alive {
            return Err(CoreError::tab_gone(tab));
        }
        match rec.owner() {
            Some(owner) if owner != key => Err(CoreError::other_session(tab, owner)),
            None => Err(CoreError::not_claimed(tab)),
            Some(_) => match rec.state {
                ResourceState::Owned | ResourceState::Retained => Ok(rec),
                _ => Err(CoreError::cleanup_pending(tab)),
            },
        }
    }

    /// Mark a tab deliverable or handoff for the current turn (latest mark wins).
    pub fn mark(&mut self, key: &SessionKey, tab: TabHandle, kind: MarkKind) -> Result<Mark, CoreError> {
        self.check_active(key)?;
        self.own_usable(key, tab)?;
        let turn = self.begin_turn(key)?;
        let mark = Mark { kind, turn };
        self.tabs.set_mark(tab, mark);
        Ok(mark)
    }

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

    // ----- write leases -----

    /// Acquire the write lease of an own tab.
    pub fn acquire_write_lease(
        &mut self,
        key: &SessionKey,
        tab: TabHandle,
        now: Millis,
    ) -> Result<FencingToken, CoreError> {
        self.check_tab_access(key, tab)?;
        self.check_not_awaiting(tab)?;
        self.writes.acquire(key, tab, now)
    }

    /// Release the write lease of a tab. Idempotent.
    pub fn release_write_lease(&mut self, key: &SessionKey, tab: TabHandle) -> Result<bool, CoreError> {
        self.live(key)?;
        Ok(self.writes.release(key, tab))
    }

    /// Check a write: ownership, activation, then the fencing token (the one place it is checked,
    /// [`WriteLeases::check`]). With no token, the session's lease is taken (or reused) now.
    pub fn check_write(
        &mut self,
        key: &SessionKey,
        tab: TabHandle,
        token: Option<FencingToken>,
        now: Millis,
    ) -> Result<FencingToken, CoreError> {
        self.check_tab_access(key, tab)?;
        self.check_not_awaiting(tab)?;
        let token = match token {
            Some(t) => t,
            None => self.writes.acquire(key, tab, now)?,
        };
        self.writes.check(key, tab, token)?;
        Ok(token)
    }

    // ----- debugger leases -----

    /// An operation needs the debugger of `tab` (access must already be checked).
    pub fn debugger_acquire(&mut self, key: &SessionKey, tab: TabHandle) -> DebuggerAcquire {
        if self.debugger.get(tab).is_some_and(|l| l.state == DebuggerState::DetachFailed) {
            // Attaching again on purpose supersedes the failed detach; the next detach retries.
            self.recovery.resolve(tab, RecoveryAction::Detach);
        }
        self.debugger.acquire(key, tab)
    }

    /// The attach finished.
    pub fn handle_attach_result(&mut self, tab: TabHandle, result: &Result<(), ProviderError>, now: Millis) {
        if let Err(e) = result
            && e.kind == ProviderErrorKind::ConnectionLost
        {
            self.bridge.handle_connection_lost(now);
        }
        self.debugger.handle_attach_result(tab, result.is_ok());
    }

    /// The operation finished with the debugger: the last reference arms the idle timer.
    pub fn debugger_release(&mut self, tab: TabHandle, now: Millis) {
        self.debugger.release(tab, now);
    }

    /// When the driver must act next: an idle debugger to detach ([`Self::plan_idle_detach`]) or
    /// a closed session's recovery record due for a background retry
    /// ([`Self::orphaned_recovery_due`]).
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Millis> {
        let orphan = self.recovery.iter().filter(|r| self.is_orphan(r)).map(RecoveryRecord::next_retry_at).min();
        match (self.debugger.poll_timeout(), orphan) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Sessions with an idle debugger due at `now`.
    #[must_use]
    pub fn idle_due_sessions(&self, now: Millis) -> Vec<SessionKey> {
        self.debugger.due_sessions(now)
    }

    /// Idle debugger leases of `key` whose window has passed: detach steps.
    pub fn plan_idle_detach(&mut self, key: &SessionKey, now: Millis) -> Plan {
        let mut plan = Plan::new(key, Boundary::IdleDetach);
        for (session, tab) in self.debugger.handle_timeout(Some(key), now) {
            let step = self.step(&session, tab, StepAction::Detach, StepPurpose::Detach);
            plan.steps.push(step);
        }
        plan
    }

    // ----- boundaries -----

    fn step(&mut self, session: &SessionKey, tab: TabHandle, action: StepAction, purpose: StepPurpose) -> Step {
        self.next_step += 1;
        let step = Step { id: self.next_step, session: session.clone(), tab, action, purpose };
        self.in_flight.insert(step.id, step.clone());
        step
    }

    fn push_cleanup(&mut self, plan: &mut Plan, tab: TabHandle, action: StepAction, purpose: StepPurpose, now: Millis) {
        let cause = match purpose {
            StepPurpose::CloseScratch => "close requested",
            StepPurpose::ReleaseClaim => "release of the claim requested",
            StepPurpose::KeepPage => "keep page: dropping ownership metadata",
            StepPurpose::Detach => "detach requested",
        };
        self.tabs.begin_cleanup(tab, now, cause);
        let session = plan.session.clone();
        let step = self.step(&session, tab, action, purpose);
        plan.steps.push(step);
    }

    fn push_detaches(&mut self, plan: &mut Plan) {
        let session = plan.session.clone();
        for tab in self.debugger.begin_detach_all(&session) {
            let step = self.step(&session, tab, StepAction::Detach, StepPurpose::Detach);
            plan.steps.push(step);
        }
    }

    /// The step that retries a failed close/release of `rec`, from its recovery record.
    fn retry_step_of(&self, rec: &TabRecord) -> (StepAction, StepPurpose) {
        let close = self.recovery.get(rec.tab, RecoveryAction::Close).is_some();
        let origin = rec.ownership.as_ref().map(|o| o.origin);
        let marked = rec.ownership.as_ref().and_then(|o| o.mark).is_some();
        if close {
            (StepAction::Close, StepPurpose::CloseScratch)
        } else if origin == Some(Origin::Claimed) && !marked {
            (StepAction::Release, StepPurpose::ReleaseClaim)
        } else if self.recovery.get(rec.tab, RecoveryAction::Release).is_some() {
            (StepAction::Release, StepPurpose::KeepPage)
        } else if origin == Some(Origin::AgentCreated) {
            (StepAction::Close, StepPurpose::CloseScratch)
        } else {
            (StepAction::Release, StepPurpose::ReleaseClaim)
        }
    }

    fn default_step_of(rec: &TabRecord) -> (StepAction, StepPurpose) {
        let o = rec.ownership.as_ref();
        match (o.map(|o| o.origin), o.and_then(|o| o.mark).is_some()) {
            (_, true) => (StepAction::Release, StepPurpose::KeepPage),
            (Some(Origin::AgentCreated), false) => (StepAction::Close, StepPurpose::CloseScratch),
            _ => (StepAction::Release, StepPurpose::ReleaseClaim),
        }
    }

    /// Retry the recovery records of `key` (open or closed): called before each operation, and by
    /// the driver for closed sessions' records.
    pub fn plan_recovery(&mut self, key: &SessionKey, now: Millis) -> Plan {
        let mut plan = Plan::new(key, Boundary::Recovery);
        let records: Vec<(TabHandle, RecoveryAction)> =
            self.recovery.for_session(key).map(|r| (r.tab, r.action)).collect();
        let mut seen = BTreeSet::new();
        for (tab, action) in records {
            if action == RecoveryAction::Detach {
                if self.debugger.begin_detach(tab) {
                    let step = self.step(key, tab, StepAction::Detach, StepPurpose::Detach);
                    plan.steps.push(step);
                } else if self.debugger.get(tab).is_none() {
                    // No attachment left to detach (it went away with the tab or was cleared).
                    self.recovery.resolve(tab, RecoveryAction::Detach);
                }
                continue;
            }
            let Some(rec) = self.tabs.get(tab) else { continue };
            if rec.state != ResourceState::CleanupUnknown || !seen.insert(tab) {
                continue;
            }
            let (action, purpose) = self.retry_step_of(rec);
            self.push_cleanup(&mut plan, tab, action, purpose, now);
        }
        plan
    }

    /// Host turn end: close unmarked agent tabs, release claims, retain marked tabs with their
    /// ownership, detach every debugger lease of the session, drop its write leases. Tools stay
    /// active. Refused (no tab changes; marks still expire; debugger still detached) when the
    /// browser lacks the capabilities of [`Capability::TURN_CLEANUP_REQUIRED`].
    pub fn plan_turn_end(&mut self, key: &SessionKey, now: Millis) -> Result<Plan, CoreError> {
        let s = self.live_mut(key)?;
        let repeated = !s.turn_open;
        let turn = s.turn;
        let mut plan = Plan::new(key, Boundary::TurnEnd);
        plan.repeated = repeated;
        self.writes.release_all(key);
        self.push_detaches(&mut plan);
        let refused = match self.auto_cleanup() {
            AutoCleanup::Enabled => None,
            AutoCleanup::Refused { missing } => Some(missing),
        };
        for tab in self.tabs.owned_by(key) {
            // Marks are turn-scoped: one made before this turn expires now, whatever the state.
            let mark = self.tabs.get(tab).and_then(|r| r.ownership.as_ref()).and_then(|o| o.mark);
            let current = mark.is_some_and(|m| m.turn == turn);
            if mark.is_some() && !current {
                self.tabs.clear_mark(tab);
            }
            let Some(rec) = self.tabs.get(tab) else { continue };
            match rec.state {
                ResourceState::Finalizing => continue,
                ResourceState::CleanupUnknown => {
                    if refused.is_none() {
                        let (action, purpose) = self.retry_step_of(rec);
                        self.push_cleanup(&mut plan, tab, action, purpose, now);
                    }
                    continue;
                }
                _ => {}
            }
            if current {
                self.tabs.set_retained(tab, now);
                plan.retained.push(tab);
                continue;
            }
            if refused.is_some() {
                self.tabs.set_owned(tab, now, "mark expired at turn end (automatic cleanup refused)");
                continue;
            }
            let (action, purpose) = Self::default_step_of(rec);
            self.push_cleanup(&mut plan, tab, action, purpose, now);
        }
        plan.refused = refused;
        Ok(plan)
    }

    /// `browser_cleanup` (task finalize). Validates every named tab first: another session's tab
    /// is refused with [`ErrorKind::OtherSessionTab`], a user tab in `close` with
    /// [`ErrorKind::UserTabProtected`]; nothing is done then. Otherwise applies marks, then
    /// closes/releases/keeps as asked and applies the defaults to the rest of the session's tabs.
    pub fn plan_finalize(&mut self, key: &SessionKey, inputs: &FinalizeInputs, now: Millis) -> Result<Plan, CoreError> {
        self.check_active(key)?;
        self.plan_final(key, Boundary::Finalize, inputs, now)
    }

    /// `browser_context_reset`: the default finalize; [`Self::complete`] deactivates tools only
    /// if it fully succeeded. Does not need active tools (a repeated reset is a no-op success).
    pub fn plan_context_reset(&mut self, key: &SessionKey, now: Millis) -> Result<Plan, CoreError> {
        self.live(key)?;
        self.plan_final(key, Boundary::ContextReset, &FinalizeInputs::default(), now)
    }

    /// Session close (agent disposal, session switch, fork, plugin unload, host exit): final
    /// cleanup with the defaults; tools are deactivated and the session is closed right away;
    /// failed steps stay as recovery records, retried later by any operation of the runtime.
    /// Idempotent: closing a closed session only retries its recovery records.
    pub fn plan_close(&mut self, key: &SessionKey, reason: CloseReason, now: Millis) -> Result<Plan, CoreError> {
        if !self.sessions.contains_key(key) && self.retired_session(key).is_some() {
            // Closed earlier and already removed: nothing is left to retry.
            let mut plan = Plan::new(key, Boundary::Close(reason));
            plan.repeated = true;
            return Ok(plan);
        }
        let s = self.sessions.get_mut(key).ok_or_else(|| CoreError::unknown_session(key))?;
        if s.closed.is_some() {
            let mut plan = self.plan_recovery(key, now);
            plan.boundary = Boundary::Close(reason);
            plan.repeated = true;
            return Ok(plan);
        }
        s.activation.handle_deactivate(reason.deactivation(), now);
        s.closed = Some(reason);
        s.turn_open = false;
        self.plan_final(key, Boundary::Close(reason), &FinalizeInputs::default(), now)
    }

    fn plan_final(
        &mut self,
        key: &SessionKey,
        boundary: Boundary,
        inputs: &FinalizeInputs,
        now: Millis,
    ) -> Result<Plan, CoreError> {
        let mut plan = Plan::new(key, boundary);
        // Validate every named tab before changing anything.
        let mut explicit: BTreeMap<TabHandle, (StepAction, StepPurpose)> = BTreeMap::new();
        let named = inputs
            .keep
            .iter()
            .map(|t| (*t, 'k'))
            .chain(inputs.close.iter().map(|t| (*t, 'c')))
            .chain(inputs.release.iter().map(|t| (*t, 'r')))
            .chain(inputs.mark.iter().map(|(t, _)| (*t, 'm')));
        for (tab, what) in named {
            let rec = self.tabs.get(tab).ok_or_else(|| CoreError::unknown_tab(tab))?;
            match rec.owner() {
                Some(owner) if owner != key => return Err(CoreError::other_session(tab, owner)),
                Some(_) => {
                    let origin = rec.ownership.as_ref().map(|o| o.origin);
                    if what == 'c' && origin == Some(Origin::Claimed) {
                        return Err(CoreError::user_tab_protected(tab));
                    }
                    if what == 'm' && !matches!(rec.state, ResourceState::Owned | ResourceState::Retained) {
                        return Err(CoreError::cleanup_pending(tab));
                    }
                    let chosen = match (what, origin) {
                        ('c', _) => (StepAction::Close, StepPurpose::CloseScratch),
                        ('r', Some(Origin::Claimed)) => (StepAction::Release, StepPurpose::ReleaseClaim),
                        ('r' | 'k', _) => (StepAction::Release, StepPurpose::KeepPage),
                        _ => continue,
                    };
                    explicit.entry(tab).or_insert(chosen);
                }
                None => match &rec.former {
                    Some(f) if &f.session == key => plan.already_done.push((tab, f.ended)),
                    _ if what == 'c' => return Err(CoreError::user_tab_protected(tab)),
                    _ if !rec.alive => return Err(CoreError::tab_gone(tab)),
                    _ => return Err(CoreError::not_claimed(tab)),
                },
            }
        }
        // Marks first (latest wins), in the current turn.
        if !inputs.mark.is_empty() {
            let turn = match self.sessions.get(key) {
                Some(s) if s.closed.is_none() => self.begin_turn(key)?,
                Some(s) => s.turn,
                None => 0,
            };
            for (tab, kind) in &inputs.mark {
                if self.tabs.get(*tab).is_some_and(|r| r.owned_by(key)) {
                    self.tabs.set_mark(*tab, Mark { kind: *kind, turn });
                }
            }
        }
        self.writes.release_all(key);
        if inputs.release_debugger {
            self.push_detaches(&mut plan);
        }
        for tab in self.tabs.owned_by(key) {
            let Some(rec) = self.tabs.get(tab) else { continue };
            let (action, purpose) = match rec.state {
                ResourceState::Finalizing => continue,
                ResourceState::CleanupUnknown => self.retry_step_of(rec),
                _ => explicit.get(&tab).copied().unwrap_or_else(|| Self::default_step_of(rec)),
            };
            self.push_cleanup(&mut plan, tab, action, purpose, now);
        }
        plan.already_done.sort_by_key(|(t, _)| *t);
        plan.already_done.dedup();
        Ok(plan)
    }

    /// `browser_close`: close this session's agent tabs, named or in groups. A named tab that is
    /// not closable is refused as a whole (nothing done): another session's tab with
    /// [`ErrorKind::OtherSessionTab`], a user or claimed tab with [`ErrorKind::UserTabProtected`].
    /// A group is never closed whole: only this session's agent tabs in it are closed; the rest
    /// are reported in [`Plan::skipped`].
    pub fn plan_close_tabs(
        &mut self,
        key: &SessionKey,
        tabs: &[TabHandle],
        groups: &[GroupHandle],
        now: Millis,
    ) -> Result<Plan, CoreError> {
        self.check_active(key)?;
        let mut plan = Plan::new(key, Boundary::CloseTabs);
        let mut to_close = BTreeSet::new();
        for &tab in tabs {
            let rec = self.tabs.get(tab).ok_or_else(|| CoreError::unknown_tab(tab))?;
            match rec.owner() {
                Some(owner) if owner != key => return Err(CoreError::other_session(tab, owner)),
                Some(_) if rec.ownership.as_ref().is_some_and(|o| o.origin == Origin::Claimed) => {
                    return Err(CoreError::user_tab_protected(tab));
                }
                Some(_) => {
                    to_close.insert(tab);
                }
                None => match &rec.former {
                    Some(f) if &f.session == key && f.ended == Ended::Closed => {
                        plan.already_done.push((tab, Ended::Closed));
                    }
                    _ => return Err(CoreError::user_tab_protected(tab)),
                },
            }
        }
        for &group in groups {
            for rec in self.tabs.iter().filter(|r| r.alive && r.group == Some(group)) {
                match rec.ownership.as_ref() {
                    Some(o) if &o.session == key && o.origin == Origin::AgentCreated => {
                        to_close.insert(rec.tab);
                    }
                    Some(o) if &o.session != key => {
                        plan.skipped
                            .push(Skipped { tab: rec.tab, reason: CoreError::other_session(rec.tab, &o.session) });
                    }
                    _ => plan.skipped.push(Skipped { tab: rec.tab, reason: CoreError::user_tab_protected(rec.tab) }),
                }
            }
        }
        for tab in to_close {
            let Some(rec) = self.tabs.get(tab) else { continue };
            let (action, purpose) = match rec.state {
                ResourceState::Finalizing => continue,
                // A pending cleanup is only ever retried as recorded: after an unknown release the
                // browser may already have handed the page to the user, so it must not be closed.
                ResourceState::CleanupUnknown => self.retry_step_of(rec),
                _ => (StepAction::Close, StepPurpose::CloseScratch),
            };
            self.writes.revoke(tab);
            self.push_cleanup(&mut plan, tab, action, purpose, now);
        }
        Ok(plan)
    }

    /// `browser_handoff`: mark the tab handoff for this turn, detach its debugger and drop the
    /// write lease; the page and its ownership stay.
    pub fn plan_handoff(&mut self, key: &SessionKey, tab: TabHandle, now: Millis) -> Result<Plan, CoreError> {
        let _ = now;
        self.mark(key, tab, MarkKind::Handoff)?;
        self.writes.release(key, tab);
        let mut plan = Plan::new(key, Boundary::Handoff);
        if self.debugger.begin_detach(tab) {
            let step = self.step(key, tab, StepAction::Detach, StepPurpose::Detach);
            plan.steps.push(step);
        }
        plan.retained.push(tab);
        Ok(plan)
    }

    // ----- handoff waits -----

    /// `browser_handoff` with `until` starts waiting on a tab it just handed off: from now until
    /// [`Self::end_handoff_wait`] nobody writes to it (the user has it). Returns the tab's URL at the start.
    pub fn begin_handoff_wait(&mut self, key: &SessionKey, tab: TabHandle) -> Result<String, CoreError> {
        let rec = self.own_usable(key, tab)?;
        if rec.ownership.as_ref().and_then(|o| o.mark).map(|m| m.kind) != Some(MarkKind::Handoff) {
            return Err(CoreError::new(
                ErrorKind::InvalidRequest,
                format!("tab {tab} is not handed off; call browser_handoff before waiting for the user"),
            ));
        }
        let url = rec.url.clone();
        self.awaiting.insert(tab, key.clone());
        Ok(url)
    }

    /// Where a waited-on handoff stands, from the records only (no browser call).
    #[must_use]
    pub fn check_handoff_wait(&self, key: &SessionKey, tab: TabHandle) -> HandoffCheck {
        match self.tabs.get(tab) {
            None => HandoffCheck::Closed,
            Some(rec) if !rec.alive => HandoffCheck::Closed,
            Some(rec) => {
                let marked = rec
                    .ownership
                    .as_ref()
                    .is_some_and(|o| &o.session == key && o.mark.map(|m| m.kind) == Some(MarkKind::Handoff));
                let usable = matches!(rec.state, ResourceState::Owned | ResourceState::Retained);
                if marked && usable {
                    HandoffCheck::Waiting { url: rec.url.clone() }
                } else {
                    HandoffCheck::NoLongerHandedOff
                }
            }
        }
    }

    /// The wait is over (completed, timed out, cancelled or the tab is gone). Idempotent.
    pub fn end_handoff_wait(&mut self, tab: TabHandle) {
        self.awaiting.remove(&tab);
    }

    /// Whether a session is waiting for the user on this tab.
    #[must_use]
    pub fn handoff_waiting(&self, tab: TabHandle) -> Option<&SessionKey> {
        self.awaiting.get(&tab)
    }

    fn check_not_awaiting(&self, tab: TabHandle) -> Result<(), CoreError> {
        match self.awaiting.get(&tab) {
            None => Ok(()),
            Some(_) => Err(CoreError::new(
                ErrorKind::LeaseHeldByOther { tab, holder: SessionKey("user".to_owned()) },
                format!(
                    "tab {tab} is handed off to the user and a browser_handoff wait is running; nothing was done. \
                     Wait for the handoff to finish (or stop it) before acting on the tab"
                ),
            )),
        }
    }

    // ----- popups -----

    /// An agent action on `tab` is about to run: tabs it opens until [`Self::end_action`] are the session's.
    pub fn begin_action(&mut self, key: &SessionKey, tab: TabHandle) {
        self.acting.insert(tab, key.clone());
    }

    /// The action on `tab` finished (or was dropped).
    pub fn end_action(&mut self, tab: TabHandle) {
        self.acting.remove(&tab);
    }

    /// A tab new to the table: when its opener is a live tab its owning session is acting on, it is that session's
    /// popup (adopted once the browser records the session's control). Anything else stays the user's.
    fn note_popup(&mut self, info: &TabInfo) {
        let Some(opener) = info.opener else { return };
        let Some(session) = self.acting.get(&opener) else { return };
        let owned = self.tabs.get(opener).is_some_and(|r| r.alive && r.owned_by(session));
        if owned && !self.popups.iter().any(|(_, p, _)| *p == info.tab) {
            self.popups.push((session.clone(), info.tab, opener));
        }
    }

    /// Popups `key`'s actions opened that are waiting for adoption: (popup, opener). The driver records control
    /// in the browser (`claim_tab`), then calls [`Self::handle_popup_adopted`].
    pub fn take_popups(&mut self, key: &SessionKey) -> Vec<(TabHandle, TabHandle)> {
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.popups).into_iter().partition(|(s, ..)| s == key);
        self.popups = rest;
        mine.into_iter()
            .filter(|(_, popup, _)| self.tabs.get(*popup).is_some_and(|r| r.alive && r.ownership.is_none()))
            .map(|(_, popup, opener)| (popup, opener))
            .collect()
    }

    /// The browser recorded `key`'s control of a popup its action opened: it becomes the session's scratch tab
    /// (closed at cleanup unless marked), like a tab the agent created.
    pub fn handle_popup_adopted(
        &mut self,
        key: &SessionKey,
        popup: TabHandle,
        opener: TabHandle,
        now: Millis,
    ) -> Option<TabView> {
        if self.tabs.get(popup).is_some_and(|r| r.alive && r.ownership.is_none()) {
            self.tabs.handle_adopted(key, popup, opener, now);
        }
        self.view(key, popup)
    }

    /// Feed a step's provider answer back. Only `Ok` (or the tab being already gone) confirms.
    pub fn handle_step_result(&mut self, step: &Step, result: Result<(), ProviderError>, now: Millis) -> StepOutcome {
        self.in_flight.remove(&step.id);
        let tab = step.tab;
        match result {
            Ok(()) => self.confirm(step, None, now),
            Err(e) if e.kind == ProviderErrorKind::TabGone => {
                let note = match step.action {
                    StepAction::Close => "provider said the tab was already gone: counted as confirmed closed",
                    StepAction::Release => "provider said the tab was gone during release: counted as closed",
                    StepAction::Detach => "provider said the tab was gone: debugger counted as detached",
                };
                if step.action == StepAction::Detach {
                    self.confirm(step, Some(note), now)
                } else {
                    self.tab_gone(tab, now, note);
                    StepOutcome::Confirmed { note: Some(note.to_owned()) }
                }
            }
            Err(e) => {
                if e.kind == ProviderErrorKind::ConnectionLost {
                    self.bridge.handle_connection_lost(now);
                }
                let unknown = e.kind.outcome_unknown();
                let action = match step.action {
                    StepAction::Close => RecoveryAction::Close,
                    StepAction::Release => RecoveryAction::Release,
                    StepAction::Detach => RecoveryAction::Detach,
                };
                let verb = if unknown { "outcome unknown" } else { "failed" };
                let cause = format!("{} {verb}: {}", action.name(), e.message);
                match step.action {
                    StepAction::Detach => self.debugger.handle_detach_result(tab, false),
                    _ => self.tabs.handle_cleanup_failed(tab, now, &cause),
                }
                // A tab that is gone meanwhile (closed by an earlier step or by the user) has
                // nothing left to retry.
                let alive = self.tabs.get(tab).is_none_or(|r| r.alive);
                let err = CoreError::from_provider(e, Some(tab));
                if alive {
                    self.recovery.record_failure(&step.session, tab, action, &err, unknown, now);
                }
                StepOutcome::Failed { outcome_unknown: unknown, kind: err.kind, message: err.message }
            }
        }
    }

    fn confirm(&mut self, step: &Step, note: Option<&str>, now: Millis) -> StepOutcome {
        let tab = step.tab;
        match step.action {
            StepAction::Close => {
                self.tab_gone(tab, now, note.unwrap_or("close confirmed by the browser"));
            }
            StepAction::Release => {
                let ended = if step.purpose == StepPurpose::KeepPage { Ended::Kept } else { Ended::Released };
                let cause = if ended == Ended::Kept {
                    "page kept; ownership metadata dropped (confirmed by the browser)"
                } else {
                    "claim released (confirmed by the browser); the page stays with the user"
                };
                self.tabs.handle_released(tab, ended, now, cause);
                self.recovery.resolve(tab, RecoveryAction::Release);
                self.recovery.resolve(tab, RecoveryAction::Close);
                self.writes.revoke(tab);
            }
            StepAction::Detach => {
                self.debugger.handle_detach_result(tab, true);
                self.recovery.resolve(tab, RecoveryAction::Detach);
            }
        }
        StepOutcome::Confirmed { note: note.map(str::to_owned) }
    }

    /// A step was dropped before the provider answered (the caller was cancelled): its outcome
    /// is unknown.
    pub fn handle_step_abandoned(&mut self, step: &Step, now: Millis) -> StepOutcome {
        let err = ProviderError::new(
            ProviderErrorKind::OutcomeUnknown,
            "the operation was cancelled before the browser answered; it will be retried",
        );
        self.handle_step_result(step, Err(err), now)
    }

    /// Steps handed out and not yet answered.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Finish a plan: build its report and apply the boundary's own effect.
    pub fn complete(&mut self, plan: &Plan, outcomes: &[(Step, StepOutcome)], now: Millis) -> CleanupReport {
        let mut report = CleanupReport {
            boundary: plan.boundary,
            ok: true,
            closed: Vec::new(),
            released: Vec::new(),
            kept: Vec::new(),
            retained: plan.retained.clone(),
            detached: Vec::new(),
            failures: Vec::new(),
            skipped: plan.skipped.clone(),
            auto_cleanup_refused: plan.refused.clone(),
            tools_active: false,
            bridge: self.bridge.state(),
            pending_recovery: 0,
        };
        for (tab, ended) in &plan.already_done {
            match ended {
                Ended::Closed => report.closed.push(*tab),
                Ended::Released => report.released.push(*tab),
                Ended::Kept => report.kept.push(*tab),
            }
        }
        for (step, outcome) in outcomes {
            match outcome {
                StepOutcome::Confirmed { .. } => match step.purpose {
                    StepPurpose::CloseScratch => report.closed.push(step.tab),
                    StepPurpose::ReleaseClaim => report.released.push(step.tab),
                    StepPurpose::KeepPage => report.kept.push(step.tab),
                    StepPurpose::Detach => report.detached.push(step.tab),
                },
                StepOutcome::Failed { outcome_unknown, kind, message } => report.failures.push(StepFailure {
                    tab: step.tab,
                    action: step.action,
                    outcome_unknown: *outcome_unknown,
                    kind: kind.clone(),
                    message: message.clone(),
                }),
            }
        }
        for list in [&mut report.closed, &mut report.released, &mut report.kept, &mut report.detached] {
            list.sort();
            list.dedup();
        }
        report.ok = report.failures.is_empty() && report.auto_cleanup_refused.is_none();
        let key = &plan.session;
        let pending = self.recovery.for_session(key).count();
        match plan.boundary {
            Boundary::TurnEnd => {
                if let Some(s) = self.sessions.get_mut(key) {
                    s.turn_open = false;
                }
            }
            Boundary::ContextReset => {
                if report.ok && pending == 0 {
                    if let Some(s) = self.sessions.get_mut(key) {
                        s.activation.handle_deactivate(DeactivationCause::ContextReset, now);
                    }
                    self.tabs.forget_closed_of(key);
                } else if report.ok {
                    report.ok = false;
                }
            }
            _ => {}
        }
        report.tools_active = self.sessions.get(key).is_some_and(|s| s.activation.is_active());
        report.bridge = self.bridge.state();
        report.pending_recovery = pending;
        self.reap_closed_sessions();
        report
    }
}

fn auto_cleanup_refused(missing: &[Capability]) -> CoreError {
    CoreError::new(
        ErrorKind::AutoCleanupRefused { missing: missing.to_vec() },
        format!(
            "automatic turn cleanup is refused: the browser side lacks {missing:?}; update the extension, or clean up \
             explicitly with browser_cleanup"
        ),
    )
}

fn unreachable_view(tab: TabHandle) -> TabView {
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
