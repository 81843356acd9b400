//! The tool-activation state machine (one per session): `inactive → activeSticky → inactive`.
//!
//! **Owner:** [`crate::lifecycle::Lifecycle`], one [`ToolActivation`] inside each session.
//!
//! Only three causes deactivate ([`DeactivationCause`]): a *successful* context reset, the end of
//! the session, and disposal. Turn end, task finalize and bridge reconnects have no method here
//! at all, so they cannot change activation by construction.

use crate::Millis;

/// Whether the session's browser tools are visible to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActivationState {
    /// No browser tools (a new session, or after reset/close).
    Inactive,
    /// Tools registered and kept across turns until an explicit reset or the session's end.
    ActiveSticky,
}

/// Why tools were deactivated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeactivationCause {
    /// `browser_context_reset` succeeded (its finalize fully succeeded).
    ContextReset,
    /// The session ended (host session shutdown, switch, fork).
    SessionEnd,
    /// Agent or plugin disposal.
    Disposal,
}

/// The per-session tool-activation machine.
#[derive(Debug, Clone)]
pub struct ToolActivation {
    state: ActivationState,
    generation: u64,
    changed_at: Option<Millis>,
    last_cause: Option<DeactivationCause>,
}

impl Default for ToolActivation {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolActivation {
    /// A new, inactive machine.
    #[must_use]
    pub fn new() -> Self {
        Self { state: ActivationState::Inactive, generation: 0, changed_at: None, last_cause: None }
    }

    /// Current state.
    #[must_use]
    pub fn state(&self) -> ActivationState {
        self.state
    }

    /// Whether tools are active.
    #[must_use]
    pub fn is_active(&self) -> bool {
        self.state == ActivationState::ActiveSticky
    }

    /// Incremented on every activation; a tool snapshot from an older generation is stale.
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Why tools were last deactivated, if they were.
    #[must_use]
    pub fn last_cause(&self) -> Option<DeactivationCause> {
        self.last_cause
    }

    /// When the state last changed.
    #[must_use]
    pub fn changed_at(&self) -> Option<Millis> {
        self.changed_at
    }

    /// The skill loaded or the first browser use: become active-sticky. Idempotent; returns
    /// whether the state changed.
    pub fn handle_activate(&mut self, now: Millis) -> bool {
        if self.is_active() {
            return false;
        }
        self.state = ActivationState::ActiveSticky;
        self.generation += 1;
        self.changed_at = Some(now);
        true
    }

    /// Deactivate for one of the allowed causes. Idempotent; returns whether the state changed.
    pub fn handle_deactivate(&mut self, cause: DeactivationCause, now: Millis) -> bool {
        if !self.is_active() {
            return false;
        }
        self.state = ActivationState::Inactive;
        self.changed_at = Some(now);
        self.last_cause = Some(cause);
        true
    }
}
