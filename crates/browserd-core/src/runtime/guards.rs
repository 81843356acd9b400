//! Drop guards of the driver: an active request, a plan's unanswered steps, a debugger use, a handoff wait and
//! an agent action each end their engine state when dropped, also when the operation is cancelled mid-way.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::lifecycle::Step;
use crate::provider::{ProviderError, ProviderErrorKind, TabHandle};

use super::{Inner, lock};

/// Counts an active request; plugin disposal waits for the count to reach zero.
pub(super) struct ActiveGuard(pub(super) Arc<Inner>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        if self.0.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Steps of a plan not yet answered; dropped early, they are recorded as outcome-unknown.
pub(super) struct PendingSteps {
    pub(super) inner: Arc<Inner>,
    pub(super) steps: Vec<Step>,
    pub(super) done: usize,
}

impl Drop for PendingSteps {
    fn drop(&mut self) {
        if self.done < self.steps.len() {
            let now = self.inner.clock.now();
            let mut engine = lock(&self.inner.engine);
            for step in &self.steps[self.done..] {
                engine.handle_step_abandoned(step, now);
            }
        }
    }
}

/// One operation's use of a tab's debugger; gives the reference back when dropped (also when
/// the operation is cancelled mid-way).
pub(super) struct DebuggerUse {
    pub(super) inner: Arc<Inner>,
    pub(super) tab: TabHandle,
    pub(super) phase: UsePhase,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum UsePhase {
    Attaching,
    InUse,
    Done,
}

impl Drop for DebuggerUse {
    fn drop(&mut self) {
        let now = self.inner.clock.now();
        let mut engine = lock(&self.inner.engine);
        match self.phase {
            UsePhase::Attaching => {
                let err = ProviderError::new(ProviderErrorKind::Cancelled, "attach abandoned");
                engine.handle_attach_result(self.tab, &Err(err), now);
            }
            UsePhase::InUse => engine.debugger_release(self.tab, now),
            UsePhase::Done => {}
        }
        drop(engine);
        self.inner.timer_changed.notify_one();
    }
}

/// A running handoff wait on a tab; ends the engine's "awaiting the user" state when dropped (also when the wait
/// is cancelled by dropping its future).
pub(super) struct AwaitingUser {
    pub(super) inner: Arc<Inner>,
    pub(super) tab: TabHandle,
}

impl Drop for AwaitingUser {
    fn drop(&mut self) {
        lock(&self.inner.engine).end_handoff_wait(self.tab);
    }
}

/// An agent action in progress on a tab: tabs it opens meanwhile are the session's popups. Ends when dropped.
pub(super) struct Acting {
    pub(super) inner: Arc<Inner>,
    pub(super) tab: TabHandle,
}

impl Drop for Acting {
    fn drop(&mut self) {
        lock(&self.inner.engine).end_action(self.tab);
    }
}
