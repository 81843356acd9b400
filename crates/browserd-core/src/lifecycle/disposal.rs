//! Session close (agent disposal, session switch, fork, plugin unload, host exit): the final cleanup with the
//! defaults, tools deactivated and the session closed right away.

use super::{Boundary, FinalizeInputs, Lifecycle, Plan};
use crate::Millis;
use crate::activation::DeactivationCause;
use crate::error::CoreError;
use crate::provider::SessionKey;

/// Why a session was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CloseReason {
    /// The host session ended normally.
    SessionEnd,
    /// The agent was disposed.
    AgentDisposed,
    /// The host switched to another session.
    SessionSwitch,
    /// The host forked the session.
    Fork,
    /// The plugin/extension is being unloaded.
    PluginUnload,
    /// The host is exiting.
    HostExit,
}

impl CloseReason {
    fn deactivation(self) -> DeactivationCause {
        match self {
            Self::SessionEnd | Self::SessionSwitch | Self::Fork => DeactivationCause::SessionEnd,
            Self::AgentDisposed | Self::PluginUnload | Self::HostExit => DeactivationCause::Disposal,
        }
    }
}

impl Lifecycle {
    /// Session close (agent disposal, session switch, fork, plugin unload, host exit): final
    /// cleanup with the defaults; tools are deactivated and the session is closed right away;
    /// failed steps stay as recovery records, retried later by any operation of the runtime.
    /// Idempotent: closing a closed session only retries its recovery records.
    pub fn plan_close(&mut self, key: &SessionKey, reason: CloseReason, now: Millis) -> Result<Plan, CoreError> {
        if !self.sessions.contains_key(key) && self.retired_session(key).is_some() {
            // Closed earlier and already removed: nothing is left to retry.
            let mut plan = Plan::new(key, Boundary::Close(reason));
            plan.repeated = true;
            return Ok(plan);
        }
        let s = self.sessions.get_mut(key).ok_or_else(|| CoreError::unknown_session(key))?;
        if s.closed.is_some() {
            let mut plan = self.plan_recovery(key, now);
            plan.boundary = Boundary::Close(reason);
            plan.repeated = true;
            return Ok(plan);
        }
        s.activation.handle_deactivate(reason.deactivation(), now);
        s.closed = Some(reason);
        s.turn_open = false;
        self.plan_final(key, Boundary::Close(reason), &FinalizeInputs::default(), now)
    }
}
