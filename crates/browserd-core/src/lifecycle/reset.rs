//! Context reset (`browser_context_reset`): the default finalize; tools go inactive only if it fully succeeded.

use crate::Millis;
use crate::activation::DeactivationCause;
use crate::error::CoreError;
use crate::provider::SessionKey;

use super::{Boundary, CleanupReport, FinalizeInputs, Lifecycle, Plan};

impl Lifecycle {
    /// `browser_context_reset`: the default finalize; [`Self::complete`] deactivates tools only
    /// if it fully succeeded. Does not need active tools (a repeated reset is a no-op success).
    pub fn plan_context_reset(&mut self, key: &SessionKey, now: Millis) -> Result<Plan, CoreError> {
        self.live(key)?;
        self.plan_final(key, Boundary::ContextReset, &FinalizeInputs::default(), now)
    }

    /// The reset plan is finished: tools go inactive (and the closed tabs are forgotten) only if every step was
    /// confirmed and no recovery record is left; otherwise the report is not ok.
    pub(super) fn finish_context_reset(
        &mut self,
        key: &SessionKey,
        report: &mut CleanupReport,
        pending: usize,
        now: Millis,
    ) {
        if report.ok && pending == 0 {
            if let Some(s) = self.sessions.get_mut(key) {
                s.activation.handle_deactivate(DeactivationCause::ContextReset, now);
            }
            self.tabs.forget_closed_of(key);
        } else if report.ok {
            report.ok = false;
        }
    }
}
