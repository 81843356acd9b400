//! Text: fill and type, with the field's value read back; typing (key events, or IME composition). Date, time,
//! colour and range fields are set whole instead (`value.rs`).

use std::time::Instant;

use browserd_protocol::{ActParams, ActionKind, Dispatch, codes};
use serde_json::json;

use crate::act::fail::{Fail, cdp_fail};
use crate::act::run::{Run, ms};
use crate::input::char_def;
use crate::observe::Resolved;
use crate::provider::truncate;

impl Run<'_> {
    /// Fill (replace) or type into (append to) a field, or type at the focus without a target.
    pub(super) async fn fill_or_type(&mut self, params: &ActParams, r0: Instant) -> Result<(), Fail> {
        let text = params
            .value
            .clone()
            .ok_or_else(|| Fail::new(codes::INVALID_PARAMS, "fill/type need `value` (the text)"))?;
        if params.target.is_none() && params.action == ActionKind::Type {
            let d0 = Instant::now();
            self.type_text(&text).await?;
            self.res.timings.dispatch = ms(d0.elapsed());
            return Ok(());
        }
        let res = self.resolve(params.target.as_ref())?;
        self.res.timings.resolve = ms(r0.elapsed());
        let a0 = Instant::now();
        if let Some(kind) = self.whole_value_kind(&res).await? {
            return self.fill_whole(&res, &kind, &text, a0).await;
        }
        self.actionable(&res, true, false, true).await?;
        self.res.timings.actionability = ms(a0.elapsed());
        let d0 = Instant::now();
        let before = self.read_value(&res).await?;
        self.p
            .call(Some(&res.session), "DOM.focus", json!({"backendNodeId": res.backend}), self.deadline)
            .await
            .map_err(|e| cdp_fail(&e, "focusing the field", false))?;
        let obj = self.object(&res).await?;
        let select = if params.action == ActionKind::Fill {
            "function(){ if ('select' in this && (this.tagName === 'INPUT' || this.tagName === 'TEXTAREA')) { this.select(); } else { const r = document.createRange(); r.selectNodeContents(this); const s = getSelection(); s.removeAllRanges(); s.addRange(r); } }"
        } else {
            "function(){ if (this.tagName === 'INPUT' || this.tagName === 'TEXTAREA') { try { const n = this.value.length; this.setSelectionRange(n, n); } catch (e) {} } else { const r = document.createRange(); r.selectNodeContents(this); r.collapse(false); const s = getSelection(); s.removeAllRanges(); s.addRange(r); } }"
        };
        self.act_on(&res.session, &obj, select, json!([])).await?;
        if params.action == ActionKind::Fill && !before.is_empty() {
            let del = crate::input::key_def("Delete").expect("Delete is defined");
            self.key(&del, 0, true).await?;
            self.key(&del, 0, false).await?;
        }
        self.type_text(&text).await?;
        self.res.timings.dispatch = ms(d0.elapsed());
        let after = self.read_value(&res).await?;
        let norm = |s: &str| s.replace("\r\n", "\n").trim_end_matches('\n').to_owned();
        let exact = norm(&after) == norm(&text);
        let ok = if params.action == ActionKind::Fill {
            exact || formatted(&after, &text)
        } else {
            norm(&after).ends_with(&norm(&text)) || after.len() > before.len()
        };
        if params.action == ActionKind::Fill && ok && !exact {
            self.res.message = Some(format!("the page formatted the value as {:?}", truncate(&after, 80)));
        }
        self.res.effects.value = Some(truncate(&after, 200));
        if !ok {
            self.res.dispatch = Dispatch::Observed;
            return Err(Fail::new(
                codes::INPUT_NOT_APPLIED,
                format!(
                    "after typing, the field holds {:?} instead of {:?} (maxlength, input filtering or a script rewrote it)",
                    truncate(&after, 80),
                    truncate(&text, 80)
                ),
            ));
        }
        self.suggests = self.offers_suggestions(&res.session, &obj).await;
        self.res.dispatch = Dispatch::Observed;
        Ok(())
    }

    /// Types text: printable ASCII as key events, other text (e.g. Chinese) through IME composition.
    pub(super) async fn type_text(&mut self, text: &str) -> Result<(), Fail> {
        let mut run = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\n' || (c.is_ascii() && !c.is_ascii_control()) {
                if c == '\n' {
                    let enter = crate::input::key_def("Enter").expect("Enter is defined");
                    self.key(&enter, 0, true).await?;
                    self.key(&enter, 0, false).await?;
                } else {
                    let d = char_def(c);
                    self.key(&d, 0, true).await?;
                    self.key(&d, 0, false).await?;
                }
                continue;
            }
            run.push(c);
            if chars.peek().is_none_or(|n| n.is_ascii()) {
                let chunk = std::mem::take(&mut run);
                let len = chunk.encode_utf16().count();
                self.input(
                    "Input.imeSetComposition",
                    json!({"text": chunk, "selectionStart": len, "selectionEnd": len}),
                )
                .await?;
                self.input("Input.insertText", json!({"text": chunk})).await?;
            }
        }
        Ok(())
    }

    /// What a field holds, read out of the page's reach.
    pub(in crate::act) async fn read_value(&self, res: &Resolved) -> Result<String, Fail> {
        let obj = self.object(res).await?;
        let v = self
            .call_on(
                &res.session,
                &obj,
                "function(){ const t = this.tagName; if (t === 'INPUT' || t === 'TEXTAREA' || t === 'SELECT') return this.value; return this.isContentEditable ? this.innerText : (this.textContent || ''); }",
                json!([]),
            )
            .await?;
        Ok(v.as_str().unwrap_or_default().to_owned())
    }
}

/// Whether a field holds `typed` as the page formats it: the same characters in the same order once the separators
/// a formatting field adds or drops are set aside (a card number in groups of four, an expiry as `MM / YY`, a phone
/// number as `(555) 123-4567`). A character that is gone or changed (a filtered letter, a cut at `maxlength`) is not
/// formatting.
fn formatted(held: &str, typed: &str) -> bool {
    let kept = |s: &str| s.chars().filter(|c| !c.is_whitespace() && !"()-/.,".contains(*c)).collect::<String>();
    let held = kept(held);
    !held.is_empty() && held == kept(typed)
}

/// Whether a field offers suggestions as it is typed into and shows none yet: a combobox, a field whose
/// `aria-autocomplete` lists them (ARIA 1.2 comboboxes), or a text field that turns the browser's own suggestions off
/// (`autocomplete="off"`: jQuery UI's autocomplete and most hand-made ones show theirs instead); not expanded.
const OFFERS_SUGGESTIONS: &str = "function(){ const a = (this.getAttribute('aria-autocomplete') || '').toLowerCase(); const r = (this.getAttribute('role') || '').toLowerCase(); const off = this.tagName === 'INPUT' && (this.getAttribute('autocomplete') || '').toLowerCase() === 'off' && ['text', 'search', ''].includes((this.getAttribute('type') || '').toLowerCase()); return (a === 'list' || a === 'both' || r === 'combobox' || off) && this.getAttribute('aria-expanded') !== 'true'; }";

impl Run<'_> {
    /// See [`OFFERS_SUGGESTIONS`]; a failed check counts as no.
    async fn offers_suggestions(&self, session: &browserd_cdp::SessionId, obj: &str) -> bool {
        self.call_on(session, obj, OFFERS_SUGGESTIONS, json!([])).await.is_ok_and(|v| v.as_bool() == Some(true))
    }
}

#[cfg(test)]
mod tests {
    use super::formatted;

    #[test]
    fn separators_a_field_adds_are_formatting_and_lost_characters_are_not() {
        assert!(formatted("4242 4242 4242 4242", "4242424242424242"));
        assert!(formatted("(555) 123-4567", "5551234567"));
        assert!(formatted("12 / 29", "1229"));
        assert!(formatted("555-123-4567", "(555) 123-4567"));
        assert!(!formatted("123", "12a3"), "a letter the field filtered out");
        assert!(!formatted("4242 4242 4242 4242", "42424242424242429"), "a digit cut at the field's length");
        assert!(!formatted("", "--"));
        assert!(!formatted("ab.com", "a@b.com"));
    }
}
