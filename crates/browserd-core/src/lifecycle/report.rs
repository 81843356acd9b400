//! Finishing a plan: the [`CleanupReport`] a boundary answers with, and the boundary's own effect.

use crate::Millis;
use crate::bridge::BridgeState;
use crate::error::{CoreError, ErrorKind};
use crate::provider::{Capability, TabHandle};
use crate::tabs::Ended;

use super::{Boundary, Lifecycle, Plan, Skipped, Step, StepAction, StepOutcome, StepPurpose};

/// A failed step, as reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFailure {
    /// The tab.
    pub tab: TabHandle,
    /// What failed.
    pub action: StepAction,
    /// Whether it may have happened anyway.
    pub outcome_unknown: bool,
    /// The error, as a core kind (for the wire code).
    pub kind: ErrorKind,
    /// The provider's message.
    pub message: String,
}

/// The result of a boundary: the compact `{ok, closed, released, kept, toolsActive, bridge}`
/// plus failures and details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanupReport {
    /// The boundary.
    pub boundary: Boundary,
    /// True only if every step was confirmed and nothing was refused.
    pub ok: bool,
    /// Agent tabs closed (confirmed).
    pub closed: Vec<TabHandle>,
    /// Claimed user tabs released (confirmed; the pages stay).
    pub released: Vec<TabHandle>,
    /// Pages kept with their ownership metadata dropped (confirmed).
    pub kept: Vec<TabHandle>,
    /// Marked tabs retained with ownership (turn end only).
    pub retained: Vec<TabHandle>,
    /// Tabs whose debugger was detached.
    pub detached: Vec<TabHandle>,
    /// Steps that failed or have an unknown outcome.
    pub failures: Vec<StepFailure>,
    /// Tabs a group request left alone, with reasons.
    pub skipped: Vec<Skipped>,
    /// Set when automatic turn cleanup was refused.
    pub auto_cleanup_refused: Option<Vec<Capability>>,
    /// Whether browser tools are active after this boundary.
    pub tools_active: bool,
    /// Bridge state after this boundary.
    pub bridge: BridgeState,
    /// Recovery records of this session still pending.
    pub pending_recovery: usize,
}

impl CleanupReport {
    /// `Err(CleanupFailed)` unless `ok`.
    pub fn into_result(self) -> Result<Self, CoreError> {
        if self.ok {
            return Ok(self);
        }
        if let Some(missing) = &self.auto_cleanup_refused {
            return Err(auto_cleanup_refused(missing));
        }
        Err(CoreError::new(
            ErrorKind::CleanupFailed { failed: self.failures.len() },
            format!(
                "{} cleanup step(s) failed or have an unknown outcome; they are kept as recovery records and retried \
                 by the next operation — call browser_status or run browser_cleanup again",
                self.failures.len()
            ),
        ))
    }
}

impl Lifecycle {
    /// Finish a plan: build its report and apply the boundary's own effect.
    pub fn complete(&mut self, plan: &Plan, outcomes: &[(Step, StepOutcome)], now: Millis) -> CleanupReport {
        let mut report = CleanupReport {
            boundary: plan.boundary,
            ok: true,
            closed: Vec::new(),
            released: Vec::new(),
            kept: Vec::new(),
            retained: plan.retained.clone(),
            detached: Vec::new(),
            failures: Vec::new(),
            skipped: plan.skipped.clone(),
            auto_cleanup_refused: plan.refused.clone(),
            tools_active: false,
            bridge: self.bridge.state(),
            pending_recovery: 0,
        };
        for (tab, ended) in &plan.already_done {
            match ended {
                Ended::Closed => report.closed.push(*tab),
                Ended::Released => report.released.push(*tab),
                Ended::Kept => report.kept.push(*tab),
            }
        }
        for (step, outcome) in outcomes {
            match outcome {
                StepOutcome::Confirmed { .. } => match step.purpose {
                    StepPurpose::CloseScratch => report.closed.push(step.tab),
                    StepPurpose::ReleaseClaim => report.released.push(step.tab),
                    StepPurpose::KeepPage => report.kept.push(step.tab),
                    StepPurpose::Detach => report.detached.push(step.tab),
                },
                StepOutcome::Failed { outcome_unknown, kind, message } => report.failures.push(StepFailure {
                    tab: step.tab,
                    action: step.action,
                    outcome_unknown: *outcome_unknown,
                    kind: kind.clone(),
                    message: message.clone(),
                }),
            }
        }
        for list in [&mut report.closed, &mut report.released, &mut report.kept, &mut report.detached] {
            list.sort();
            list.dedup();
        }
        report.ok = report.failures.is_empty() && report.auto_cleanup_refused.is_none();
        let key = &plan.session;
        let pending = self.recovery.for_session(key).count();
        match plan.boundary {
            Boundary::TurnEnd => self.finish_turn_end(key),
            Boundary::ContextReset => self.finish_context_reset(key, &mut report, pending, now),
            _ => {}
        }
        report.tools_active = self.sessions.get(key).is_some_and(|s| s.activation.is_active());
        report.bridge = self.bridge.state();
        report.pending_recovery = pending;
        self.reap_closed_sessions();
        report
    }
}

fn auto_cleanup_refused(missing: &[Capability]) -> CoreError {
    CoreError::new(
        ErrorKind::AutoCleanupRefused { missing: missing.to_vec() },
        format!(
            "automatic turn cleanup is refused: the browser side lacks {missing:?}; update the extension, or clean up \
             explicitly with browser_cleanup"
        ),
    )
}
