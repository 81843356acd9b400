//! Scrolling: the page or a scroll container (the target's, or the one under the wheel), by a screen in a direction
//! or until a text is on screen.

use std::time::{Duration, Instant};

use browserd_cdp::SessionId;
use browserd_protocol::{ActParams, Dispatch, ScrollDirection, codes};
use serde_json::{Value, json};

use crate::act::fail::Fail;
use crate::act::run::{Run, ms};
use crate::scroller::SCROLLER;

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
        let vertical = matches!(dir, ScrollDirection::Up | ScrollDirection::Down);
        let (x, y, obj, session) = match &target {
            Some(res) => {
                let (x, y) = self.actionable(res, false, false, false).await?;
                // The container is held from here on: the target itself may leave the document as the container
                // scrolls (a virtualised list unmounts the rows it scrolls away from).
                let obj = self.scroller_of(&res.session, &self.object(res).await?, vertical).await?;
                (x, y, obj, res.session.clone())
            }
            None => {
                let v = self.eval("[innerWidth / 2, innerHeight / 2]", "reading the viewport").await?;
                (v[0].as_f64().unwrap_or(400.0), v[1].as_f64().unwrap_or(300.0), None, self.session.clone())
            }
        };
        self.res.timings.actionability = ms(a0.elapsed());
        let d0 = Instant::now();
        // What the wheel scrolls, measured and searched: the target when it scrolls, else its nearest ancestor that
        // scrolls along the axis (a row inside a chat's message list scrolls the list), else the page; without a
        // target, the same from the element under the wheel's point.
        let args = json!([{"value": x}, {"value": y}, {"value": vertical}]);
        let mut rounds = 0;
        loop {
            if let Some(t) = &params.until_text
                && self.scroll_find(&session, obj.as_deref(), &args, t).await? == json!(true)
            {
                self.res.dispatch = Dispatch::Observed;
                self.res.message = Some(format!("{t:?} is on screen"));
                break;
            }
            if params.until_text.is_some() && rounds > 0 && Instant::now() >= self.deadline {
                return Err(Fail::new(codes::DEADLINE_EXCEEDED, "the text did not appear before the deadline"));
            }
            let before = self.scroll_pos(&session, obj.as_deref(), &args).await?;
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
                let after = self.scroll_pos(&session, obj.as_deref(), &args).await?;
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
                    && self.scroll_find(&session, obj.as_deref(), &args, t).await? == json!(true)
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

    /// What a wheel at `target` scrolls: its scroll container (an object of browserd's world, in the target's
    /// object group), or `None` for the page.
    async fn scroller_of(&self, session: &SessionId, target: &str, vertical: bool) -> Result<Option<String>, Fail> {
        let f = format!("function(vertical) {{ {SCROLLER} return scroller(this, 0, 0, vertical); }}");
        let params = json!({"objectId": target, "functionDeclaration": f, "arguments": [{"value": vertical}]});
        let v = self
            .p
            .call(Some(session), "Runtime.callFunctionOn", params, self.deadline)
            .await
            .map_err(|e| crate::act::fail::cdp_fail(&e, "finding what the target scrolls", false))?;
        Ok(v["result"]["objectId"].as_str().map(str::to_owned))
    }

    async fn scroll_pos(&self, session: &SessionId, obj: Option<&str>, args: &Value) -> Result<Value, Fail> {
        let f = format!(
            "function(x, y, vertical) {{ {SCROLLER} {SCROLL_HELPERS} return pos(scroller(this, x, y, vertical)); }}"
        );
        match obj {
            Some(o) => self.call_on(session, o, &f, args.clone()).await,
            // No target: the page, or the container under the wheel's point.
            None => self.eval(&call_expr(&f, args), "reading the scroll position").await,
        }
    }

    async fn scroll_find(&self, session: &SessionId, obj: Option<&str>, args: &Value, t: &str) -> Result<Value, Fail> {
        let f = format!(
            "function(x, y, vertical, t) {{ {SCROLLER} {SCROLL_HELPERS} return find(scroller(this, x, y, vertical), t); }}"
        );
        let mut args = args.clone();
        if let Some(a) = args.as_array_mut() {
            a.push(json!({"value": t}));
        }
        match obj {
            // It scrolls the text into view: the action's input, a write to the extension relay's gate.
            Some(o) => self.act_on(session, o, &f, args).await,
            None => self.eval_for_action(&call_expr(&f, &args), "searching the text").await,
        }
    }
}

/// `f` called without a `this` (no target) on the values of `args` (`[{"value": v}, …]`).
fn call_expr(f: &str, args: &Value) -> String {
    let values: Vec<String> = args
        .as_array()
        .map(|a| a.iter().map(|v| serde_json::to_string(&v["value"]).unwrap_or_else(|_| "null".into())).collect())
        .unwrap_or_default();
    format!("({f}).call(null, {})", values.join(", "))
}

/// The page-side helpers of a scroll, after [`SCROLLER`]: `pos` (the scroll position and sizes of what `scroller`
/// found, or of the page) and `find` (a text inside it, scrolled into view).
const SCROLL_HELPERS: &str = r"
  const pos = (e) => e
    ? [e.scrollLeft, e.scrollTop, e.clientWidth, e.clientHeight, e.scrollWidth, e.scrollHeight]
    : [scrollX, scrollY, innerWidth, innerHeight, document.scrollingElement.scrollWidth, document.scrollingElement.scrollHeight];
  const find = (e, t) => {
    const w = document.createTreeWalker(e || document.body, NodeFilter.SHOW_TEXT);
    for (let n = w.nextNode(); n; n = w.nextNode()) {
      if (n.data.includes(t) && n.parentElement && n.parentElement.getClientRects().length) {
        n.parentElement.scrollIntoView({ block: 'center', inline: 'nearest', behavior: 'instant' });
        return true;
      }
    }
    return false;
  };";
