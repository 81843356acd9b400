//! Host turn end: unmarked agent tabs closed, claims released, marked tabs retained, debugger detached.

use super::{AutoCleanup, Boundary, Lifecycle, Plan};
use crate::Millis;
use crate::error::CoreError;
use crate::provider::SessionKey;
use crate::tabs::ResourceState;

impl Lifecycle {
    /// Host turn end: close unmarked agent tabs, release claims, retain marked tabs with their
    /// ownership, detach every debugger lease of the session, drop its write leases. Tools stay
    /// active. Refused (no tab changes; marks still expire; debugger still detached) when the
    /// browser lacks the capabilities of [`Capability::TURN_CLEANUP_REQUIRED`](crate::provider::Capability::TURN_CLEANUP_REQUIRED).
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

    /// The turn-end plan is finished: the turn is over.
    pub(super) fn finish_turn_end(&mut self, key: &SessionKey) {
        if let Some(s) = self.sessions.get_mut(key) {
            s.turn_open = false;
        }
    }
}
