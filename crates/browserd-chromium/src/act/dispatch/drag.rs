//! Drag: from a target or point to a target or point, with the pointer and HTML5 drag-and-drop.

use std::time::{Duration, Instant};

use browserd_protocol::{ActParams, codes};
use serde_json::{Value, json};

use crate::act::fail::Fail;
use crate::act::run::{Run, ms};

impl Run<'_> {
    /// Drags from a target or point (`at`) to a target (`to`) or point (`dropAt`).
    pub(super) async fn drag(&mut self, params: &ActParams, r0: Instant) -> Result<(), Fail> {
        if (params.at.is_some() && params.target.is_some()) || (params.drop_at.is_some() && params.to.is_some()) {
            return Err(Fail::new(
                codes::INVALID_PARAMS,
                "give either `target` or `at` for the start, and either `to` or `dropAt` for the drop",
            ));
        }
        let from = if params.at.is_some() { None } else { Some(self.resolve(params.target.as_ref())?) };
        let to = if params.drop_at.is_some() { None } else { Some(self.resolve(params.to.as_ref())?) };
        self.res.timings.resolve = ms(r0.elapsed());
        let a0 = Instant::now();
        let (x1, y1) = match (&from, &params.at) {
            (Some(from), _) => self.actionable(from, false, true, true).await?,
            (None, Some(pt)) => self.at_point(pt, true).await?,
            (None, None) => unreachable!("`at` is set when there is no `target`"),
        };
        let (x2, y2) = match (&to, &params.drop_at) {
            (Some(to), _) => self.actionable(to, false, false, false).await?,
            (None, Some(pt)) => self.at_point(pt, false).await?,
            (None, None) => unreachable!("`dropAt` is set when there is no `to`"),
        };
        self.res.timings.actionability = ms(a0.elapsed());
        let d0 = Instant::now();
        self.drag_path(x1, y1, x2, y2).await?;
        self.res.timings.dispatch = ms(d0.elapsed());
        Ok(())
    }

    /// Drags from one point to the other: pointer moves in steps, and HTML5 drag-and-drop when the browser hands the
    /// drag over.
    async fn drag_path(&mut self, x1: f64, y1: f64, x2: f64, y2: f64) -> Result<(), Fail> {
        let _ =
            self.p.call(Some(&self.session), "Input.setInterceptDrags", json!({"enabled": true}), self.deadline).await;
        let mut events = self.p.cdp.session_events(&self.session);
        self.mouse("mouseMoved", x1, y1, 0).await?;
        self.mouse("mousePressed", x1, y1, 1).await?;
        let mut intercepted: Option<Value> = None;
        for i in 1..=5 {
            let f = f64::from(i) / 5.0;
            let (x, y) = (x1 + (x2 - x1) * f, y1 + (y2 - y1) * f);
            self.input(
                "Input.dispatchMouseEvent",
                json!({"type": "mouseMoved", "x": x, "y": y, "button": "left", "buttons": 1}),
            )
            .await?;
            if intercepted.is_none() {
                // HTML5 drag-and-drop: the browser hands the drag to us once the pointer moved far enough.
                let wait = if i == 1 { 150 } else { 20 };
                let until = Instant::now() + Duration::from_millis(wait);
                while let Ok(Ok(ev)) =
                    tokio::time::timeout(until.saturating_duration_since(Instant::now()), events.recv()).await
                {
                    if ev.method == "Input.dragIntercepted" {
                        intercepted = Some(ev.params["data"].clone());
                        break;
                    }
                }
            }
        }
        if let Some(data) = intercepted {
            for kind in ["dragEnter", "dragOver", "drop"] {
                self.input("Input.dispatchDragEvent", json!({"type": kind, "x": x2, "y": y2, "data": data})).await?;
            }
        }
        self.mouse("mouseReleased", x2, y2, 1).await?;
        let _ =
            self.p.call(Some(&self.session), "Input.setInterceptDrags", json!({"enabled": false}), self.deadline).await;
        Ok(())
    }
}
