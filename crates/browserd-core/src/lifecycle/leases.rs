//! Write leases and debugger leases through the engine, the idle-detach plan and the driver's next deadline.

use super::{Boundary, Lifecycle, Plan, StepAction, StepPurpose};
use crate::Millis;
use crate::debugger::{DebuggerAcquire, DebuggerState};
use crate::error::CoreError;
use crate::provider::{FencingToken, ProviderError, ProviderErrorKind, SessionKey, TabHandle};
use crate::recovery::{RecoveryAction, RecoveryRecord};

impl Lifecycle {
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
    /// [`WriteLeases::check`](crate::write_lease::WriteLeases::check)). With no token, the session's lease is taken (or reused) now.
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
}
