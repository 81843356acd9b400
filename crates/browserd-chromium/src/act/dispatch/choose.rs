//! Choosing: select an option of a `<select>`, check or uncheck a checkbox, radio or switch, read back.

use std::time::Instant;

use browserd_protocol::{ActParams, ActionKind, Dispatch, Outcome, codes};
use serde_json::json;

use crate::act::fail::Fail;
use crate::act::run::{Run, ms};
use crate::observe::Resolved;

impl Run<'_> {
    /// Selects an option by label or value, in browserd's world, and reads the choice back.
    pub(super) async fn select(&mut self, params: &ActParams, r0: Instant) -> Result<(), Fail> {
        let want = params
            .value
            .clone()
            .ok_or_else(|| Fail::new(codes::INVALID_PARAMS, "select needs `value` (an option label or value)"))?;
        let res = self.resolve(params.target.as_ref())?;
        self.res.timings.resolve = ms(r0.elapsed());
        let a0 = Instant::now();
        self.actionable(&res, false, false, true).await?;
        self.res.timings.actionability = ms(a0.elapsed());
        let d0 = Instant::now();
        let obj = self.object(&res).await?;
        const SELECT: &str = r"function(want) {
          if (this.tagName !== 'SELECT') return { error: 'not a <select>' };
          const w = want.trim().toLowerCase();
          const opts = Array.from(this.options);
          const o = opts.find(o => o.label.trim().toLowerCase() === w) || opts.find(o => o.value.toLowerCase() === w);
          if (!o) return { error: 'no option ' + JSON.stringify(want) + '; options: ' + opts.map(o => o.label.trim()).join(' | ') };
          if (o.disabled) return { error: 'option ' + JSON.stringify(want) + ' is disabled' };
          this.focus();
          o.selected = true;
          this.dispatchEvent(new Event('input', { bubbles: true }));
          this.dispatchEvent(new Event('change', { bubbles: true }));
          return { value: this.value, label: o.label };
        }";
        self.sending()?;
        let v = self.act_on(&res.session, &obj, SELECT, json!([{"value": want}])).await?;
        if let Some(e) = v["error"].as_str() {
            let code = if e.starts_with("no option") { codes::TARGET_NOT_FOUND } else { codes::NOT_ACTIONABLE };
            return Err(Fail::new(code, e.to_owned()));
        }
        self.res.dispatch = Dispatch::Dispatched;
        self.res.timings.dispatch = ms(d0.elapsed());
        let after = self.read_value(&res).await?;
        self.res.effects.value = Some(after.clone());
        if after != v["value"].as_str().unwrap_or_default() {
            return Err(Fail::new(
                codes::INPUT_NOT_APPLIED,
                format!("the select holds {after:?} after choosing {want:?}; a script reverted it"),
            ));
        }
        self.res.dispatch = Dispatch::Observed;
        Ok(())
    }

    /// Checks or unchecks by clicking, unless it already is; the state is read back.
    pub(super) async fn set_checked(&mut self, params: &ActParams, r0: Instant) -> Result<(), Fail> {
        let want = params.action == ActionKind::Check;
        let res = self.resolve(params.target.as_ref())?;
        self.res.timings.resolve = ms(r0.elapsed());
        let a0 = Instant::now();
        let Some(now) = self.checked(&res).await? else {
            return Err(Fail::new(codes::NOT_ACTIONABLE, "the node is not a checkbox, radio or switch"));
        };
        if now == want {
            self.res.message = Some(format!("already {}; nothing sent", if want { "checked" } else { "unchecked" }));
            self.res.outcome = Outcome::Succeeded;
            return Ok(());
        }
        let (x, y) = self.actionable(&res, false, true, true).await?;
        self.res.timings.actionability = ms(a0.elapsed());
        let d0 = Instant::now();
        self.click_at(x, y, 1).await?;
        self.res.timings.dispatch = ms(d0.elapsed());
        let after = self.checked(&res).await?;
        if after != Some(want) {
            self.res.dispatch = Dispatch::Observed;
            return Err(Fail::new(
                codes::INPUT_NOT_APPLIED,
                format!(
                    "the click did not {} it (a radio cannot be unchecked by clicking; a script may revert it)",
                    if want { "check" } else { "uncheck" }
                ),
            ));
        }
        self.res.dispatch = Dispatch::Observed;
        Ok(())
    }

    /// Whether a checkbox, radio or switch is checked (`None`: it is none of them), read out of the page's reach.
    async fn checked(&self, res: &Resolved) -> Result<Option<bool>, Fail> {
        let obj = self.object(res).await?;
        let v = self
            .call_on(&res.session, &obj, "function(){ if (this.type === 'checkbox' || this.type === 'radio') return this.checked; const a = this.getAttribute && this.getAttribute('aria-checked'); return a === null ? null : a === 'true'; }", json!([]))
            .await?;
        Ok(v.as_bool())
    }
}
