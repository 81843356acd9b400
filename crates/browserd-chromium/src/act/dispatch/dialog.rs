//! Dialogs: accept or dismiss the open JavaScript dialog (with a prompt's text).

use std::time::Instant;

use browserd_protocol::{ActParams, Dispatch, codes};
use serde_json::json;

use crate::act::fail::{Fail, cdp_fail};
use crate::act::run::{Run, ms};

impl Run<'_> {
    /// Accepts or dismisses the open dialog.
    pub(super) async fn dialog(&mut self, params: &ActParams) -> Result<(), Fail> {
        let Some(d) = self.dialog_open() else {
            return Err(Fail::new(codes::INVALID_PARAMS, "no dialog is open"));
        };
        let accept = params.accept.unwrap_or(true);
        let mut p = json!({"accept": accept});
        if let Some(t) = &params.value {
            p["promptText"] = json!(t);
        }
        let d0 = Instant::now();
        self.sending()?;
        self.p
            .call(Some(&self.session), "Page.handleJavaScriptDialog", p, self.deadline)
            .await
            .map_err(|e| cdp_fail(&e, "handling the dialog", false))?;
        self.res.dispatch = Dispatch::Dispatched;
        if let Some(t) = self.p.st().tabs.get_mut(&self.tab) {
            t.dialog = None;
        }
        self.res.timings.dispatch = ms(d0.elapsed());
        self.res.message = Some(format!("{} the {} dialog", if accept { "accepted" } else { "dismissed" }, d.kind));
        Ok(())
    }
}
