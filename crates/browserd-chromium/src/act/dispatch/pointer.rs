//! Pointer actions: click, dblclick and hover, on a target or a screenshot point.

use std::time::Instant;

use browserd_protocol::{ActParams, ActionKind, codes};
use serde_json::{Value, json};

use crate::act::fail::Fail;
use crate::act::run::{Run, ms};

impl Run<'_> {
    /// Click, dblclick or hover on a target or a screenshot point (`at`).
    pub(super) async fn pointer(&mut self, params: &ActParams, r0: Instant) -> Result<(), Fail> {
        let (x, y) = if let Some(pt) = &params.at {
            if params.target.is_some() {
                return Err(Fail::new(codes::INVALID_PARAMS, "give either `target` or `at`, not both"));
            }
            let (x, y) = self.at_point(pt, true).await?;
            self.res.timings.resolve = ms(r0.elapsed());
            (x, y)
        } else {
            let res = self.resolve(params.target.as_ref())?;
            self.res.timings.resolve = ms(r0.elapsed());
            let a0 = Instant::now();
            let xy = self.actionable(&res, false, true, params.action != ActionKind::Hover).await?;
            self.res.timings.actionability = ms(a0.elapsed());
            xy
        };
        let d0 = Instant::now();
        match params.action {
            ActionKind::Hover => self.mouse("mouseMoved", x, y, 0).await?,
            ActionKind::Dblclick => self.click_at(x, y, 2).await?,
            _ => self.click_at(x, y, 1).await?,
        }
        self.res.timings.dispatch = ms(d0.elapsed());
        Ok(())
    }

    pub(super) fn mouse_params(kind: &str, x: f64, y: f64, clicks: u32) -> Value {
        let mut p = json!({"type": kind, "x": x, "y": y, "modifiers": 0});
        if kind != "mouseMoved" {
            p["button"] = json!("left");
            p["clickCount"] = json!(clicks);
        } else {
            p["button"] = json!("none");
        }
        p
    }

    pub(super) async fn mouse(&mut self, kind: &str, x: f64, y: f64, clicks: u32) -> Result<(), Fail> {
        self.input("Input.dispatchMouseEvent", Self::mouse_params(kind, x, y, clicks)).await
    }

    pub(super) async fn click_at(&mut self, x: f64, y: f64, count: u32) -> Result<(), Fail> {
        // The move and the first press go out together: the page handles the press right after the move, instead of
        // first acknowledging the move at its next animation frame. Every release waits for its press to be handled,
        // so a press that opens a dialog is followed by no release, as with a real mouse.
        const MOUSE: &str = "Input.dispatchMouseEvent";
        self.inputs(vec![
            (MOUSE, Self::mouse_params("mouseMoved", x, y, 0)),
            (MOUSE, Self::mouse_params("mousePressed", x, y, 1)),
        ])
        .await?;
        for c in 1..=count {
            if c > 1 {
                self.mouse("mousePressed", x, y, c).await?;
            }
            if self.dialog_open().is_some() {
                return Ok(());
            }
            self.mouse("mouseReleased", x, y, c).await?;
            if self.dialog_open().is_some() {
                return Ok(());
            }
        }
        Ok(())
    }
}
