//! The vocabulary of a boundary's plan (which boundary, which provider steps and why, what was decided
//! without the browser) and the helpers every plan is built with.

use super::{CloseReason, Lifecycle};
use crate::Millis;
use crate::error::CoreError;
use crate::provider::{Capability, SessionKey, TabHandle};
use crate::recovery::RecoveryAction;
use crate::tabs::{Ended, Origin, TabRecord};

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
    pub(super) fn new(session: &SessionKey, boundary: Boundary) -> Self {
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

impl Lifecycle {
    pub(super) fn step(
        &mut self,
        session: &SessionKey,
        tab: TabHandle,
        action: StepAction,
        purpose: StepPurpose,
    ) -> Step {
        self.next_step += 1;
        let step = Step { id: self.next_step, session: session.clone(), tab, action, purpose };
        self.in_flight.insert(step.id, step.clone());
        step
    }

    pub(super) fn push_cleanup(
        &mut self,
        plan: &mut Plan,
        tab: TabHandle,
        action: StepAction,
        purpose: StepPurpose,
        now: Millis,
    ) {
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

    pub(super) fn push_detaches(&mut self, plan: &mut Plan) {
        let session = plan.session.clone();
        for tab in self.debugger.begin_detach_all(&session) {
            let step = self.step(&session, tab, StepAction::Detach, StepPurpose::Detach);
            plan.steps.push(step);
        }
    }

    /// The step that retries a failed close/release of `rec`, from its recovery record.
    pub(super) fn retry_step_of(&self, rec: &TabRecord) -> (StepAction, StepPurpose) {
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

    pub(super) fn default_step_of(rec: &TabRecord) -> (StepAction, StepPurpose) {
        let o = rec.ownership.as_ref();
        match (o.map(|o| o.origin), o.and_then(|o| o.mark).is_some()) {
            (_, true) => (StepAction::Release, StepPurpose::KeepPage),
            (Some(Origin::AgentCreated), false) => (StepAction::Close, StepPurpose::CloseScratch),
            _ => (StepAction::Release, StepPurpose::ReleaseClaim),
        }
    }
}
