//! Timers: idle debugger detach and background recovery retries, at the engine's next deadline.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::Millis;

use super::Runtime;

impl Runtime {
    // ----- timers -----

    /// When [`Self::tick`] should run next (idle debugger detach, background recovery retry).
    #[must_use]
    pub fn next_deadline(&self) -> Option<Millis> {
        self.engine().poll_timeout()
    }

    /// Timer hook: apply events, detach idle debuggers whose window passed (skipping sessions
    /// busy with an operation — that operation re-arms the timer), retry closed sessions'
    /// recovery records whose backoff passed. Returns the next deadline.
    pub async fn tick(&self) -> Option<Millis> {
        let now = self.now();
        let due = self.engine().idle_due_sessions(now);
        for key in due {
            let Ok(slot) = self.slot(&key) else { continue };
            let Ok(_guard) = slot.try_lock_owned() else { continue };
            self.drain_events(&key).await;
            let now = self.now();
            let plan = self.engine().plan_idle_detach(&key, now);
            if !plan.steps.is_empty() {
                self.execute(plan).await;
            }
        }
        let now = self.now();
        // Bound first: a guard in an `if let` scrutinee would live across the await below.
        let due = self.engine().orphaned_recovery_due(now);
        if let Some(key) = due.first()
            && self.ensure_connected(key).await.is_ok()
        {
            self.retry_orphans().await;
        }
        self.next_deadline()
    }

    /// Run [`Self::tick`] at each deadline until `cancel` fires. Meant for a real clock (the
    /// broker spawns it as a tracked task); tests advance a fake clock and call `tick` instead.
    pub async fn run_timers(&self, cancel: CancellationToken) {
        loop {
            let changed = self.inner.timer_changed.notified();
            let wait = match self.next_deadline() {
                Some(deadline) => Duration::from_millis(deadline.0.saturating_sub(self.now().0)),
                None => Duration::from_secs(3600),
            };
            tokio::select! {
                () = cancel.cancelled() => return,
                () = changed => continue,
                () = tokio::time::sleep(wait) => {}
            }
            self.tick().await;
        }
    }
}
