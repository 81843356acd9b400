//! Scrolling: the page or a scroll container, by a screen in a direction or until a text is on screen.

use std::time::{Duration, Instant};

use browserd_cdp::SessionId;
use browserd_protocol::{ActParams, Dispatch, ScrollDirection, codes};
use serde_json::{Value, json};

use crate::act::fail::Fail;
use crate::act::run::{Run, ms};

impl Run<'_> {
    pub(super) async fn scroll(&mut self, params: &ActParams) -> Result<(), Fail> {
        let r0 = Instant::now();
        let dir = params.direction.unwrap_or_default();
        let target = match &params.target {
            Some(_) => Some(self.resolve(params.target.as_ref())?),
            None => None,
        };
        self.res.timings.resolve = ms(r0.elapsed());
        let a0 = Instant::now();
        let (x, y, obj, session) = match &target {
            Some(res) => {
                let (x, y) = self.actionable(res, false, false, false).await?;
                (x, y, Some(self.object(res).await?), res.session.clone())
            }
            None => {
                let v = self.eval("[innerWidth / 2, innerHeight / 2]", "reading the viewport").await?;
                (v[0].as_f64().unwrap_or(400.0), v[1].as_f64().unwrap_or(300.0), None, self.session.clone())
            }
        };
        self.res.timings.actionability = ms(a0.elapsed());
        let d0 = Instant::now();
        const POS: &str = "function(){ const e = this && this.nodeType === 1 ? this : document.scrollingElement; return [e.scrollLeft, e.scrollTop, e.clientWidth, e.clientHeight, e.scrollWidth, e.scrollHeight]; }";
        const FIND: &str = r"function(t) {
          const root = this && this.nodeType === 1 ? this : document.body;
          const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
          for (let n = w.nextNode(); n; n = w.nextNode()) {
            if (n.data.includes(t) && n.parentElement && n.parentElement.getClientRects().length) {
              n.parentElement.scrollIntoView({ block: 'center', inline: 'nearest' });
              return true;
            }
          }
          return false;
        }";
        let mut rounds = 0;
        loop {
            if let Some(t) = &params.until_text
                && self.scroll_find(&session, obj.as_deref(), FIND, t).await? == json!(true)
            {
                self.res.dispatch = Dispatch::Observed;
                self.res.message = Some(format!("{t:?} is on screen"));
                break;
            }
            if params.until_text.is_some() && rounds > 0 && Instant::now() >= self.deadline {
                return Err(Fail::new(codes::DEADLINE_EXCEEDED, "the text did not appear before the deadline"));
            }
            let before = self.scroll_pos(&session, obj.as_deref(), POS).await?;
            let h = before[3].as_f64().unwrap_or(600.0) * 0.8;
            let w = before[2].as_f64().unwrap_or(800.0) * 0.8;
            let (dx, dy) = match dir {
                ScrollDirection::Down => (0.0, h),
                ScrollDirection::Up => (0.0, -h),
                ScrollDirection::Left => (-w, 0.0),
                ScrollDirection::Right => (w, 0.0),
            };
            self.input(
                "Input.dispatchMouseEvent",
                json!({"type": "mouseWheel", "x": x, "y": y, "deltaX": dx, "deltaY": dy}),
            )
            .await?;
            // Wait for the scroll to land (wheel scrolling is asynchronous).
            let mut moved = false;
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_millis(15)).await;
                let after = self.scroll_pos(&session, obj.as_deref(), POS).await?;
                if after[0] != before[0] || after[1] != before[1] {
                    moved = true;
                    break;
                }
            }
            rounds += 1;
            if params.until_text.is_none() {
                if !moved {
                    self.res.message = Some("already at the end; nothing moved".into());
                }
                break;
            }
            if !moved {
                if let Some(t) = &params.until_text
                    && self.scroll_find(&session, obj.as_deref(), FIND, t).await? == json!(true)
                {
                    self.res.dispatch = Dispatch::Observed;
                    break;
                }
                // Not moved: at the end, or the wheel event was slow to land (a busy page); only the geometry says.
                let f = |i: usize| before[i].as_f64().unwrap_or(0.0);
                let at_end = match dir {
                    ScrollDirection::Down => f(1) + f(3) >= f(5) - 1.0,
                    ScrollDirection::Up => f(1) <= 0.0,
                    ScrollDirection::Right => f(0) + f(2) >= f(4) - 1.0,
                    ScrollDirection::Left => f(0) <= 0.0,
                };
                if !at_end && Instant::now() < self.deadline {
                    continue;
                }
                return Err(Fail::new(
                    codes::TARGET_NOT_FOUND,
                    format!("scrolled to the end without finding {:?}", params.until_text.clone().unwrap_or_default()),
                ));
            }
        }
        self.res.timings.dispatch = ms(d0.elapsed());
        Ok(())
    }

    async fn scroll_pos(&self, session: &SessionId, obj: Option<&str>, f: &str) -> Result<Value, Fail> {
        match obj {
            Some(o) => self.call_on(session, o, f, json!([])).await,
            None => {
                self.eval(
                    "(() => { const e = document.scrollingElement; return [scrollX, scrollY, innerWidth, innerHeight, e.scrollWidth, e.scrollHeight]; })()",
                    "reading the scroll position",
                )
                .await
            }
        }
    }

    async fn scroll_find(&self, session: &SessionId, obj: Option<&str>, f: &str, t: &str) -> Result<Value, Fail> {
        match obj {
            // It scrolls the text into view: the action's input, a write to the extension relay's gate.
            Some(o) => self.act_on(session, o, f, json!([{"value": t}])).await,
            None => {
                let expr = format!("({f}).call(null, {})", serde_json::to_string(t).unwrap_or_default());
                self.eval_for_action(&expr, "searching the text").await
            }
        }
    }
}
