//! Keys: press a chord (`Enter`, `Control+A`, several separated by spaces), on a target or at the focus.

use std::time::Instant;

use browserd_protocol::{ActParams, codes};
use serde_json::json;

use crate::act::fail::{Fail, cdp_fail};
use crate::act::run::{Run, ms};
use crate::input::{KeyDef, parse_chord};

impl Run<'_> {
    /// Presses the chords in `value`, focusing the target first if one is given.
    pub(super) async fn press(&mut self, params: &ActParams, r0: Instant) -> Result<(), Fail> {
        let chord = params
            .value
            .clone()
            .ok_or_else(|| Fail::new(codes::INVALID_PARAMS, "press needs `value`, e.g. `Enter` or `Control+A`"))?;
        if params.target.is_some() {
            let res = self.resolve(params.target.as_ref())?;
            self.res.timings.resolve = ms(r0.elapsed());
            let a0 = Instant::now();
            self.actionable(&res, false, false, true).await?;
            self.p
                .call(Some(&res.session), "DOM.focus", json!({"backendNodeId": res.backend}), self.deadline)
                .await
                .map_err(|e| cdp_fail(&e, "focusing the node", false))?;
            self.res.timings.actionability = ms(a0.elapsed());
        }
        let d0 = Instant::now();
        for c in chord.split_whitespace() {
            self.press_chord(c).await?;
        }
        self.res.timings.dispatch = ms(d0.elapsed());
        Ok(())
    }

    pub(super) async fn key(&mut self, def: &KeyDef, modifiers: u32, down: bool) -> Result<(), Fail> {
        let kind = if !down {
            "keyUp"
        } else if def.text.is_some() {
            "keyDown"
        } else {
            "rawKeyDown"
        };
        let mut p = json!({"type": kind, "key": def.key, "code": def.code, "windowsVirtualKeyCode": def.vk, "modifiers": modifiers});
        if down && let Some(t) = &def.text {
            p["text"] = json!(t);
            p["unmodifiedText"] = json!(t);
        }
        self.input("Input.dispatchKeyEvent", p).await
    }

    async fn press_chord(&mut self, chord: &str) -> Result<(), Fail> {
        let (mods, bits, key) = parse_chord(chord).map_err(|e| Fail::new(codes::INVALID_PARAMS, e))?;
        let mut held = 0;
        for m in &mods {
            held |= crate::input::modifier_bit(&m.key).unwrap_or(0);
            self.key(m, held, true).await?;
        }
        self.key(&key, bits, true).await?;
        self.key(&key, bits, false).await?;
        for m in mods.iter().rev() {
            held &= !crate::input::modifier_bit(&m.key).unwrap_or(0);
            self.key(m, held, false).await?;
        }
        Ok(())
    }
}
