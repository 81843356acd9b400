//! Task finalize (`browser_cleanup`), and the final cleanup it shares with context reset and session close.

use std::collections::BTreeMap;

use super::{Boundary, Lifecycle, Plan, StepAction, StepPurpose};
use crate::Millis;
use crate::error::CoreError;
use crate::provider::{SessionKey, TabHandle};
use crate::tabs::{Mark, MarkKind, Origin, ResourceState};

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

impl Lifecycle {
    /// `browser_cleanup` (task finalize). Validates every named tab first: another session's tab
    /// is refused with [`ErrorKind::OtherSessionTab`](crate::error::ErrorKind::OtherSessionTab), a user tab in `close` with
    /// [`ErrorKind::UserTabProtected`](crate::error::ErrorKind::UserTabProtected); nothing is done then. Otherwise applies marks, then
    /// closes/releases/keeps as asked and applies the defaults to the rest of the session's tabs.
    pub fn plan_finalize(&mut self, key: &SessionKey, inputs: &FinalizeInputs, now: Millis) -> Result<Plan, CoreError> {
        self.check_active(key)?;
        self.plan_final(key, Boundary::Finalize, inputs, now)
    }

    pub(super) fn plan_final(
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
}
