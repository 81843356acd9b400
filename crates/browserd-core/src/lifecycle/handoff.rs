//! `browser_handoff` and handoff waits: the tab handed to the user, and nobody writing to it while a session waits.

use super::{Boundary, Lifecycle, Plan, StepAction, StepPurpose};
use crate::Millis;
use crate::error::{CoreError, ErrorKind};
use crate::provider::{SessionKey, TabHandle};
use crate::tabs::{MarkKind, ResourceState};

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

    pub(super) fn check_not_awaiting(&self, tab: TabHandle) -> Result<(), CoreError> {
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
}
