//! Navigation: navigate, reload, back and forward, waiting for the commit and the load.

use std::time::{Duration, Instant};

use browserd_protocol::{ActParams, ActionKind, Dispatch, codes};
use serde_json::json;

use crate::act::fail::{Fail, cdp_fail};
use crate::act::run::{Run, ms};
use crate::state::LogEvent;

impl Run<'_> {
    /// A navigation command the extension's gate refused never reached the page: the result says `notDispatched`.
    fn not_sent_if_gated(&mut self, f: Fail) -> Fail {
        if f.gate_refused_whole() {
            self.res.dispatch = Dispatch::NotDispatched;
        }
        f
    }

    pub(super) async fn navigate(&mut self, params: &ActParams) -> Result<(), Fail> {
        let d0 = Instant::now();
        let s = self.session.clone();
        let r = match params.action {
            ActionKind::Navigate => {
                let url = params
                    .value
                    .clone()
                    .ok_or_else(|| Fail::new(codes::INVALID_PARAMS, "navigate needs `value` (the URL)"))?;
                self.sending()?;
                self.res.dispatch = Dispatch::Dispatched;
                let r = self
                    .p
                    .call(Some(&s), "Page.navigate", json!({"url": url}), self.deadline)
                    .await
                    .map_err(|e| cdp_fail(&e, "navigating", true))
                    .map_err(|f| self.not_sent_if_gated(f))?;
                if let Some(err) = r["errorText"].as_str().filter(|e| !e.is_empty()) {
                    if let Some(origin) = self.blocked_since_start() {
                        return Err(Fail::new(
                            codes::ORIGIN_NOT_AUTHORISED,
                            format!(
                                "the navigation led to {origin}, which the site policy does not authorise; the \
                                 browser stopped it before anything was requested from {origin}"
                            ),
                        ));
                    }
                    return Err(Fail::new(codes::NAVIGATION_FAILED, format!("navigation to {url} failed: {err}")));
                }
                r
            }
            ActionKind::Reload => {
                self.sending()?;
                self.res.dispatch = Dispatch::Dispatched;
                self.p
                    .call(Some(&s), "Page.reload", json!({}), self.deadline)
                    .await
                    .map_err(|e| cdp_fail(&e, "reloading", true))
                    .map_err(|f| self.not_sent_if_gated(f))?
            }
            _ => {
                let h = self
                    .p
                    .call(Some(&s), "Page.getNavigationHistory", json!({}), self.deadline)
                    .await
                    .map_err(|e| cdp_fail(&e, "reading history", false))?;
                let cur = h["currentIndex"].as_i64().unwrap_or(0);
                let idx = if params.action == ActionKind::Back { cur - 1 } else { cur + 1 };
                let entry =
                    h["entries"].as_array().and_then(|e| usize::try_from(idx).ok().and_then(|i| e.get(i))).cloned();
                let Some(entry) = entry else {
                    return Err(Fail::new(
                        codes::ACTION_FAILED,
                        format!(
                            "there is no history entry to go {}",
                            if params.action == ActionKind::Back { "back to" } else { "forward to" }
                        ),
                    ));
                };
                self.sending()?;
                self.res.dispatch = Dispatch::Dispatched;
                self.p
                    .call(Some(&s), "Page.navigateToHistoryEntry", json!({"entryId": entry["id"]}), self.deadline)
                    .await
                    .map_err(|e| cdp_fail(&e, "navigating history", true))
                    .map_err(|f| self.not_sent_if_gated(f))?
            }
        };
        let same_doc = params.action == ActionKind::Navigate && r.get("loaderId").is_none();
        // Wait for the commit and the load event (or a same-document navigation).
        let mut polls = 0u32;
        loop {
            let (committed, loaded, same) = {
                let st = self.p.st();
                let evs = st.log_since(self.tab, self.seq0);
                let committed = evs.iter().any(|e| matches!(e, LogEvent::Navigated(_)));
                let loaded = committed
                    && evs
                        .iter()
                        .skip_while(|e| !matches!(e, LogEvent::Navigated(_)))
                        .any(|e| matches!(e, LogEvent::Loaded));
                let same = evs.iter().any(|e| matches!(e, LogEvent::SameDocument(_)));
                (committed, loaded, same)
            };
            if loaded || (same && !committed) || (same_doc && same) {
                break;
            }
            if self.dialog_open().is_some() {
                break;
            }
            if committed
                && polls % 10 == 9
                && self.eval("document.readyState", "reading the load state").await.ok() == Some(json!("complete"))
            {
                break;
            }
            polls += 1;
            if Instant::now() >= self.deadline {
                if committed {
                    self.res.message = Some("the page committed but is still loading".into());
                    break;
                }
                return Err(Fail::new(
                    codes::DEADLINE_EXCEEDED,
                    "the navigation did not commit before the deadline; it may still happen",
                )
                .unknown());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.res.timings.dispatch = ms(d0.elapsed());
        Ok(())
    }

    /// The origin of the first top-level navigation stopped by the site policy since the action began.
    fn blocked_since_start(&self) -> Option<String> {
        let st = self.p.st();
        st.log_since(self.tab, self.seq0).into_iter().find_map(|e| match e {
            LogEvent::Blocked(origin) => Some(origin),
            _ => None,
        })
    }
}
