//! Recovery records of failed or unknown cleanup steps: which sessions have them, and the plan that retries them.

use std::collections::BTreeSet;

use super::{Boundary, Lifecycle, Plan, StepAction, StepPurpose};
use crate::Millis;
use crate::provider::{SessionKey, TabHandle};
use crate::recovery::{RecoveryAction, RecoveryRecord};
use crate::tabs::ResourceState;

impl Lifecycle {
    pub(super) fn is_orphan(&self, record: &RecoveryRecord) -> bool {
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
}
