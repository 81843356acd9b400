//! Fields whose value is not typed character by character — a date, a time, a month or week, a colour, a range —
//! set whole in browserd's world (as a picker sets it: `input` and `change` follow), in the format the field takes,
//! and read back.

use std::time::Instant;

use browserd_protocol::{Dispatch, codes};
use serde_json::json;

use crate::act::fail::Fail;
use crate::act::run::{Run, ms};
use crate::observe::Resolved;

/// The field's input type when it is one of them (`null` else), read out of the page's reach.
const KIND: &str = "function(){ const k = ['date','time','datetime-local','month','week','color','range']; \
  return this.tagName === 'INPUT' && k.includes(this.type) ? this.type : null; }";

/// Whether the field would take the text: tried on a scratch input of the same type, so a refused text changes
/// nothing on the page.
const TAKES: &str = r"function(v) {
  const t = document.createElement('input');
  t.type = this.type;
  if (this.type === 'range') { t.min = this.min; t.max = this.max; t.step = this.step; }
  t.value = v;
  // A range clamps and rounds what it is given: only a value it holds as given is taken.
  return v === '' || (this.type === 'range' ? t.value === String(Number(v)) && v.trim() !== '' : t.value !== '');
}";

/// Sets the value with the native setter (a page's own setter or a framework's value tracker is not in this world),
/// then `input` and `change`, as the field's picker does. An empty value after the set: the field refused the text.
const SET: &str = r"function(v) {
  const set = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
  this.focus();
  set.call(this, v);
  this.dispatchEvent(new Event('input', { bubbles: true }));
  this.dispatchEvent(new Event('change', { bubbles: true }));
  return { value: this.value };
}";

impl Run<'_> {
    /// The input type of a field that is set whole (`date`, `color`, ...), if the target is one.
    pub(super) async fn whole_value_kind(&self, res: &Resolved) -> Result<Option<String>, Fail> {
        let obj = self.object(res).await?;
        let v = self.call_on(&res.session, &obj, KIND, json!([])).await?;
        Ok(v.as_str().map(str::to_owned))
    }

    /// Fill (or type into) a date, time, colour or range field: the value is set whole and read back.
    pub(super) async fn fill_whole(&mut self, res: &Resolved, kind: &str, text: &str, a0: Instant) -> Result<(), Fail> {
        self.actionable(res, false, false, true).await?;
        self.res.timings.actionability = ms(a0.elapsed());
        let d0 = Instant::now();
        let obj = self.object(res).await?;
        if self.call_on(&res.session, &obj, TAKES, json!([{"value": text}])).await? != json!(true) {
            return Err(Fail::new(
                codes::INVALID_PARAMS,
                format!("a {kind} field takes {}; {text:?} is not one, so nothing was changed", format_of(kind)),
            ));
        }
        self.sending()?;
        let v = self.act_on(&res.session, &obj, SET, json!([{"value": text}])).await?;
        self.res.timings.dispatch = ms(d0.elapsed());
        self.res.dispatch = Dispatch::Dispatched;
        let after = self.read_value(res).await?;
        self.res.effects.value = Some(after.clone());
        self.res.dispatch = Dispatch::Observed;
        if after != v["value"].as_str().unwrap_or_default() {
            return Err(Fail::new(
                codes::INPUT_NOT_APPLIED,
                format!("the field holds {after:?} after it was set to {text:?}; a script changed it back"),
            ));
        }
        if after != text {
            self.res.message = Some(format!("the field holds {after:?} (its own form of {text:?})"));
        }
        Ok(())
    }
}

/// The value format a field of this input type takes.
fn format_of(kind: &str) -> &'static str {
    match kind {
        "date" => "a date as YYYY-MM-DD (e.g. 2026-12-24)",
        "time" => "a time as HH:MM, 24-hour (e.g. 14:30)",
        "datetime-local" => "a date and time as YYYY-MM-DDTHH:MM (e.g. 2026-12-24T14:30)",
        "month" => "a month as YYYY-MM (e.g. 2026-12)",
        "week" => "a week as YYYY-Www (e.g. 2026-W52)",
        "color" => "a colour as #rrggbb (e.g. #1a73e8)",
        _ => "a number from its min to its max, on its step",
    }
}
