//! The boundaries the driver executes as cleanup plans: turn end, `browser_close`, finalize, context reset and
//! session close.

use crate::error::{CoreError, ErrorKind};
use crate::lifecycle::{CleanupReport, CloseReason, FinalizeInputs};
use crate::provider::{GroupHandle, SessionKey, TabHandle};

use super::Runtime;

impl Runtime {
    /// `session.close`: final cleanup (close scratch tabs, release claims, keep marked pages
    /// dropping their ownership metadata, detach debugger), tools hidden, session closed.
    /// Failed steps stay as recovery records and are retried later, even after a switch.
    /// Closing a closed session only retries its recovery records (a session removed meanwhile answers an empty,
    /// successful report). Once nothing refers to a closed session any more its records are removed; see
    /// [`Lifecycle::reap_closed_sessions`](crate::lifecycle::Lifecycle::reap_closed_sessions).
    pub async fn close_session(&self, session: &SessionKey, reason: CloseReason) -> Result<CleanupReport, CoreError> {
        self.cancel_handoff_waits(session);
        let slot = match self.slot(session) {
            Ok(slot) => slot,
            Err(e) if e.kind == ErrorKind::SessionClosed => {
                let now = self.now();
                let mut engine = self.engine();
                let plan = engine.plan_close(session, reason, now)?;
                return Ok(engine.complete(&plan, &[], now));
            }
            Err(e) => return Err(e),
        };
        let report = {
            let _serial = slot.lock().await;
            self.close_locked(session, reason).await
        };
        drop(slot);
        self.prune_sessions();
        report
    }

    pub(super) async fn close_locked(
        &self,
        session: &SessionKey,
        reason: CloseReason,
    ) -> Result<CleanupReport, CoreError> {
        self.drain_events(session).await;
        // A failed reconnect must not stop the final cleanup from being attempted and recorded.
        let _ = self.ensure_connected(session).await;
        let now = self.now();
        let plan = self.engine().plan_close(session, reason, now)?;
        let report = self.execute(plan).await;
        self.retry_orphans().await;
        Ok(report)
    }

    /// `turn.end` (host-internal turn cleanup). Produces no transcript output: the report is for
    /// the host and `browser_status` only. Refused cleanup is reported in
    /// [`CleanupReport::auto_cleanup_refused`] and in status.
    pub async fn end_turn(&self, session: &SessionKey) -> Result<CleanupReport, CoreError> {
        self.cancel_handoff_waits(session);
        let _op = self.serialized(session).await?;
        self.drain_events(session).await;
        let _ = self.ensure_connected(session).await;
        let caps = self.inner.provider.capabilities();
        let now = self.now();
        let plan = {
            let mut engine = self.engine();
            engine.handle_capabilities(caps);
            engine.plan_turn_end(session, now)?
        };
        let report = self.execute(plan).await;
        self.retry_orphans().await;
        Ok(report)
    }

    /// `browser_close`: close own agent tabs, named or by group (groups never closed whole).
    pub async fn close_tabs(
        &self,
        session: &SessionKey,
        tabs: &[TabHandle],
        groups: &[GroupHandle],
    ) -> Result<CleanupReport, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.prelude(session).await;
        let now = self.now();
        let plan = self.engine().plan_close_tabs(session, tabs, groups, now)?;
        Ok(self.execute(plan).await)
    }

    /// `browser_cleanup` (task finalize). Tools stay active; the bridge stays up.
    pub async fn finalize(&self, session: &SessionKey, inputs: &FinalizeInputs) -> Result<CleanupReport, CoreError> {
        self.cancel_handoff_waits(session);
        let _op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.drain_events(session).await;
        let _ = self.ensure_connected(session).await;
        let now = self.now();
        let plan = self.engine().plan_finalize(session, inputs, now)?;
        let report = self.execute(plan).await;
        self.retry_orphans().await;
        Ok(report)
    }

    /// `browser_context_reset`: finalize first; tools are deactivated only if it fully
    /// succeeded. Never reports success for a failed cleanup.
    pub async fn context_reset(&self, session: &SessionKey) -> Result<CleanupReport, CoreError> {
        self.cancel_handoff_waits(session);
        let _op = self.serialized(session).await?;
        self.drain_events(session).await;
        let _ = self.ensure_connected(session).await;
        let now = self.now();
        let plan = self.engine().plan_context_reset(session, now)?;
        Ok(self.execute(plan).await)
    }
}
