//! Executing plans, and what runs before each operation: provider events drained, the connection re-made,
//! recovery records retried.

use tokio::sync::broadcast;

use crate::bridge::StopCause;
use crate::error::{CoreError, ErrorKind};
use crate::lifecycle::{CleanupReport, Plan, Step, StepAction, StepOutcome};
use crate::provider::SessionKey;

use super::guards::PendingSteps;
use super::{Runtime, lock};

impl Runtime {
    // ----- events, connection, recovery -----

    /// Apply pending provider events; re-read the tab list when events were lost.
    pub(super) async fn drain_events(&self, session: &SessionKey) {
        let mut events = Vec::new();
        let mut resync = false;
        {
            let mut rx = lock(&self.inner.events);
            loop {
                match rx.try_recv() {
                    Ok(ev) => events.push(ev),
                    Err(broadcast::error::TryRecvError::Lagged(_)) => resync = true,
                    Err(_) => break,
                }
            }
        }
        if !events.is_empty() {
            let now = self.now();
            let mut engine = self.engine();
            for ev in &events {
                resync |= engine.handle_event(ev, now);
            }
        }
        if resync && !self.engine().bridge().needs_connect() {
            let ctx = self.ctx(session, self.inner.config.op_timeout);
            if let Ok(tabs) = self.inner.provider.list_tabs(&ctx).await {
                let now = self.now();
                self.engine().handle_tab_snapshot(&tabs, now);
            }
        }
    }

    pub(super) async fn ensure_connected(&self, session: &SessionKey) -> Result<(), CoreError> {
        let (needs_connect, stop_cause) = {
            let engine = self.engine();
            (engine.bridge().needs_connect(), engine.bridge().stop_cause())
        };
        if !needs_connect {
            return Ok(());
        }
        if stop_cause == Some(StopCause::PluginDisposal) {
            return Err(CoreError::new(
                ErrorKind::ShuttingDown,
                "the bridge was stopped by plugin disposal; load the plugin again to use the browser",
            ));
        }
        let ctx = self.ctx(session, self.inner.config.op_timeout);
        match self.inner.provider.connect(&ctx).await {
            Ok(info) => {
                let caps = self.inner.provider.capabilities();
                let tabs = self.inner.provider.list_tabs(&ctx).await;
                let now = self.now();
                let mut engine = self.engine();
                engine.handle_connected(info.connection_epoch, now);
                engine.handle_capabilities(caps);
                if let Ok(tabs) = tabs {
                    engine.handle_tab_snapshot(&tabs, now);
                }
                Ok(())
            }
            Err(e) => Err(self.provider_err(e, None)),
        }
    }

    pub(super) async fn execute(&self, plan: Plan) -> CleanupReport {
        let mut pending = PendingSteps { inner: self.inner.clone(), steps: plan.steps.clone(), done: 0 };
        let mut outcomes: Vec<(Step, StepOutcome)> = Vec::with_capacity(plan.steps.len());
        for step in &plan.steps {
            let ctx = self.cleanup_ctx(&step.session);
            let provider = &self.inner.provider;
            let res = match step.action {
                StepAction::Close => provider.close_tab(&ctx, step.tab).await,
                StepAction::Release => provider.release_tab(&ctx, step.tab).await,
                StepAction::Detach => provider.detach_debugger(&ctx, step.tab).await,
            };
            let now = self.now();
            let outcome = self.engine().handle_step_result(step, res, now);
            pending.done += 1;
            outcomes.push((step.clone(), outcome));
        }
        let now = self.now();
        self.engine().complete(&plan, &outcomes, now)
    }

    /// Retry the session's recovery records, then those of closed sessions whose lock is free.
    pub(super) async fn prelude(&self, session: &SessionKey) {
        self.drain_events(session).await;
        if self.ensure_connected(session).await.is_err() {
            return;
        }
        let now = self.now();
        let plan = self.engine().plan_recovery(session, now);
        if !plan.steps.is_empty() {
            self.execute(plan).await;
        }
        self.retry_orphans().await;
    }

    /// Retry closed sessions' recovery records whose backoff has passed.
    pub(super) async fn retry_orphans(&self) {
        let now = self.now();
        let orphans = self.engine().orphaned_recovery_due(now);
        for key in orphans {
            let Some(slot) = lock(&self.inner.slots).get(&key).cloned() else {
                // Records of a session this runtime never opened (e.g. loaded from the journal).
                let now = self.now();
                let plan = self.engine().plan_recovery(&key, now);
                if !plan.steps.is_empty() {
                    self.execute(plan).await;
                }
                continue;
            };
            let Ok(_guard) = slot.try_lock_owned() else { continue };
            let now = self.now();
            let plan = self.engine().plan_recovery(&key, now);
            if !plan.steps.is_empty() {
                self.execute(plan).await;
            }
        }
        self.prune_sessions();
    }

    /// Retry every pending recovery record now (own and orphaned). Returns how many remain.
    pub async fn retry_recovery(&self) -> usize {
        let sessions: Vec<SessionKey> = self.engine().sessions().map(|s| s.key().clone()).collect();
        for key in sessions {
            let Ok(slot) = self.slot(&key) else { continue };
            let Ok(_guard) = slot.try_lock_owned() else { continue };
            self.drain_events(&key).await;
            if self.ensure_connected(&key).await.is_err() {
                break;
            }
            let now = self.now();
            let plan = self.engine().plan_recovery(&key, now);
            if !plan.steps.is_empty() {
                self.execute(plan).await;
            }
        }
        self.retry_orphans().await;
        self.engine().recovery().len()
    }
}
