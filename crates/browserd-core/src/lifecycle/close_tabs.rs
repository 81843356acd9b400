//! `browser_close`: this session's agent tabs closed, named or in groups.

use std::collections::BTreeSet;

use super::{Boundary, Lifecycle, Plan, Skipped, StepAction, StepPurpose};
use crate::Millis;
use crate::error::CoreError;
use crate::provider::{GroupHandle, SessionKey, TabHandle};
use crate::tabs::{Ended, Origin, ResourceState};

impl Lifecycle {
    /// `browser_close`: close this session's agent tabs, named or in groups. A named tab that is
    /// not closable is refused as a whole (nothing done): another session's tab with
    /// [`ErrorKind::OtherSessionTab`](crate::error::ErrorKind::OtherSessionTab), a user or claimed tab with [`ErrorKind::UserTabProtected`](crate::error::ErrorKind::UserTabProtected).
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
}
