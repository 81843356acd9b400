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

mod access;
mod close_tabs;
mod disposal;
mod events;
mod feedback;
mod finalize;
mod handoff;
mod leases;
mod plan;
mod popups;
mod recovery;
mod report;
mod reset;
mod turn_end;
mod view;

use std::collections::{BTreeMap, VecDeque};

use crate::Millis;
use crate::activation::ToolActivation;
use crate::bridge::Bridge;
use crate::debugger::{DEFAULT_IDLE_DETACH_MS, DebuggerLeases};
use crate::error::{CoreError, ErrorKind};
use crate::provider::{Capability, CapabilityMatrix, SessionKey, TabHandle};
use crate::recovery::RecoveryLog;
use crate::tabs::TabTable;
use crate::write_lease::WriteLeases;

pub use disposal::CloseReason;
pub use feedback::StepOutcome;
pub use finalize::FinalizeInputs;
pub use handoff::HandoffCheck;
pub use plan::{Boundary, Plan, Skipped, Step, StepAction, StepPurpose};
pub use report::{CleanupReport, StepFailure};
pub use view::{SessionStatus, TabView};

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
    /// Claims handed to the provider and not answered yet, by tab: another session's claim of the tab is refused
    /// meanwhile, as if the tab were owned (the provider must never be asked to claim a tab for two sessions).
    claiming: BTreeMap<TabHandle, SessionKey>,
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
            claiming: BTreeMap::new(),
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
}
