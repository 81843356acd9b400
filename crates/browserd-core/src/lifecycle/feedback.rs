//! Step-result feedback: what the driver's answer to each step does to the records, and what became of it.

use super::{Lifecycle, Step, StepAction, StepPurpose};
use crate::Millis;
use crate::error::{CoreError, ErrorKind};
use crate::provider::{ProviderError, ProviderErrorKind};
use crate::recovery::RecoveryAction;
use crate::tabs::Ended;

/// What became of one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOutcome {
    /// The browser confirmed it (a note says when it was inferred, e.g. "tab already gone").
    Confirmed {
        /// Extra detail.
        note: Option<String>,
    },
    /// It failed or its outcome is unknown; a recovery record keeps it.
    Failed {
        /// Whether it may have happened.
        outcome_unknown: bool,
        /// The error, as a core kind (for the wire code).
        kind: ErrorKind,
        /// The provider's message.
        message: String,
    },
}

impl Lifecycle {
    /// Feed a step's provider answer back. Only `Ok` (or the tab being already gone) confirms.
    pub fn handle_step_result(&mut self, step: &Step, result: Result<(), ProviderError>, now: Millis) -> StepOutcome {
        self.in_flight.remove(&step.id);
        let tab = step.tab;
        match result {
            Ok(()) => self.confirm(step, None, now),
            Err(e) if e.kind == ProviderErrorKind::TabGone => {
                let note = match step.action {
                    StepAction::Close => "provider said the tab was already gone: counted as confirmed closed",
                    StepAction::Release => "provider said the tab was gone during release: counted as closed",
                    StepAction::Detach => "provider said the tab was gone: debugger counted as detached",
                };
                if step.action == StepAction::Detach {
                    self.confirm(step, Some(note), now)
                } else {
                    self.tab_gone(tab, now, note);
                    StepOutcome::Confirmed { note: Some(note.to_owned()) }
                }
            }
            Err(e) => {
                if e.kind == ProviderErrorKind::ConnectionLost {
                    self.bridge.handle_connection_lost(now);
                }
                let unknown = e.kind.outcome_unknown();
                let action = match step.action {
                    StepAction::Close => RecoveryAction::Close,
                    StepAction::Release => RecoveryAction::Release,
                    StepAction::Detach => RecoveryAction::Detach,
                };
                let verb = if unknown { "outcome unknown" } else { "failed" };
                let cause = format!("{} {verb}: {}", action.name(), e.message);
                match step.action {
                    StepAction::Detach => self.debugger.handle_detach_result(tab, false),
                    _ => self.tabs.handle_cleanup_failed(tab, now, &cause),
                }
                // A tab that is gone meanwhile (closed by an earlier step or by the user) has
                // nothing left to retry.
                let alive = self.tabs.get(tab).is_none_or(|r| r.alive);
                let err = CoreError::from_provider(e, Some(tab));
                if alive {
                    self.recovery.record_failure(&step.session, tab, action, &err, unknown, now);
                }
                StepOutcome::Failed { outcome_unknown: unknown, kind: err.kind, message: err.message }
            }
        }
    }

    fn confirm(&mut self, step: &Step, note: Option<&str>, now: Millis) -> StepOutcome {
        let tab = step.tab;
        match step.action {
            StepAction::Close => {
                self.tab_gone(tab, now, note.unwrap_or("close confirmed by the browser"));
            }
            StepAction::Release => {
                let ended = if step.purpose == StepPurpose::KeepPage { Ended::Kept } else { Ended::Released };
                let cause = if ended == Ended::Kept {
                    "page kept; ownership metadata dropped (confirmed by the browser)"
                } else {
                    "claim released (confirmed by the browser); the page stays with the user"
                };
                self.tabs.handle_released(tab, ended, now, cause);
                self.recovery.resolve(tab, RecoveryAction::Release);
                self.recovery.resolve(tab, RecoveryAction::Close);
                self.writes.revoke(tab);
            }
            StepAction::Detach => {
                self.debugger.handle_detach_result(tab, true);
                self.recovery.resolve(tab, RecoveryAction::Detach);
            }
        }
        StepOutcome::Confirmed { note: note.map(str::to_owned) }
    }

    /// A step was dropped before the provider answered (the caller was cancelled): its outcome
    /// is unknown.
    pub fn handle_step_abandoned(&mut self, step: &Step, now: Millis) -> StepOutcome {
        let err = ProviderError::new(
            ProviderErrorKind::OutcomeUnknown,
            "the operation was cancelled before the browser answered; it will be retried",
        );
        self.handle_step_result(step, Err(err), now)
    }

    /// Steps handed out and not yet answered.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }
}
