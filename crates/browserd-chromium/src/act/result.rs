//! The result: what a failure means once input may have reached the page, the observation attached on request, the
//! action's objects released, and the answer to a cancelled action.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use browserd_core::provider::OpContext;
use browserd_protocol::{ActParams, ActionResult, Dispatch, NodeRef, Observation, Outcome, codes};
use serde_json::json;

use super::GROUP;
use super::fail::{Fail, OUTCOME_UNKNOWN, TARGET_CLOSED, unknown_message};
use super::run::{Run, ms};
use crate::observe::render;

/// The answer to an action cancelled midway: unknown once input was sent, else cancelled with nothing sent.
pub(super) fn cancelled(ctx: &OpContext, sent: bool) -> ActionResult {
    if sent {
        ActionResult {
            trace_id: ctx.trace_id.clone(),
            outcome: Outcome::Unknown,
            dispatch: Dispatch::Dispatched,
            code: Some(codes::CANCELLED.into()),
            message: Some(unknown_message("the action was cancelled after input was sent")),
            ..Default::default()
        }
    } else {
        ActionResult {
            trace_id: ctx.trace_id.clone(),
            outcome: Outcome::Cancelled,
            code: Some(codes::CANCELLED.into()),
            message: Some("the action was cancelled before any input was sent; nothing reached the page".into()),
            ..Default::default()
        }
    }
}

impl Run<'_> {
    /// Records how the action's steps ended: success, or a failure — which is `unknown`, never `failed`, when the
    /// link failed or a read-back could not be made after input may have reached the page.
    pub(super) async fn conclude(&mut self, result: Result<(), Fail>) {
        let (p, tab, deadline, sent) = (self.p, self.tab, self.deadline, self.sent);
        match result {
            Ok(()) => {
                if self.res.outcome == Outcome::Unknown {
                    self.res.outcome = Outcome::Succeeded;
                }
            }
            Err(f) if f.link && sent.load(Ordering::SeqCst) => {
                // The link failed after input may have reached the page: never "failed", never retried.
                self.res.outcome = Outcome::Unknown;
                if self.res.dispatch == Dispatch::NotDispatched {
                    self.res.dispatch = Dispatch::Dispatched;
                }
                self.res.code = Some(f.code.into());
                self.res.message = Some(unknown_message(&f.message));
                if f.code == TARGET_CLOSED {
                    // The browser's target-destroyed event may still be on its way: give it a moment, so the effect
                    // summary below names the tab when the tab itself (not only a frame) went away.
                    let until = deadline.min(Instant::now() + Duration::from_millis(500));
                    while p.st().tabs.contains_key(&tab) && Instant::now() < until {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            Err(f) if f.world && sent.load(Ordering::SeqCst) => {
                // The input was sent and its read-back could not be made out of the page's reach: unknown, never
                // success on the page's word, never "failed".
                self.res.outcome = Outcome::Unknown;
                if self.res.dispatch == Dispatch::NotDispatched {
                    self.res.dispatch = Dispatch::Dispatched;
                }
                self.res.code = Some(OUTCOME_UNKNOWN.into());
                self.res.message = Some(format!(
                    "{}; the input was already sent, so whether it took effect is unknown: it is not retried \
                     automatically — observe the page before deciding to act again",
                    f.message
                ));
            }
            Err(f) => {
                self.res.outcome = f.outcome;
                self.res.code = Some(f.code.into());
                self.res.message = Some(if f.world {
                    format!(
                        "{}; nothing was sent to the page — observe again and retry; if it keeps failing, this browser \
                         connection does not let browserd check this frame: act on the page another way",
                        f.message
                    )
                } else {
                    f.message
                });
                self.res.covering = f.covering;
                self.res.candidates = f.candidates;
            }
        }
    }

    /// The answer: the observation attached when asked for, and the action's objects released.
    pub(super) async fn finish(mut self, params: &ActParams) -> ActionResult {
        let (p, tab) = (self.p, self.tab);
        let s0 = Instant::now();
        if params.observe {
            if self.last_built.is_none() && p.st().tabs.get(&tab).is_some_and(|t| t.dialog.is_none()) {
                let _ = self.effects_snapshot().await;
            }
            if let Some(b) = self.last_built.take() {
                crate::observe::commit_seen(p, tab, &b.nodes);
                let st = p.st();
                let t = st.tabs.get(&tab);
                self.res.observation = Some(Box::new(Observation {
                    url: b.url.clone(),
                    title: b.title.clone(),
                    untrusted_content: render(&b.lines),
                    frames: b.frames.clone(),
                    node_count: b.node_count,
                    truncated: b.truncated.clone(),
                    cursor: crate::observe::cursor(p, t.map_or(0, |t| t.revision)),
                    revision: t.map_or(0, |t| t.revision),
                    connection_epoch: p.epoch,
                    dialog: t.and_then(|t| t.dialog.clone()),
                    modal: b.modal.clone(),
                    focused: b.focused.clone().map(NodeRef),
                    load_state: t.map(|t| t.load_state).unwrap_or_default(),
                    ..Default::default()
                }));
            }
        }
        let blocked = p.st().tabs.get(&tab).is_some_and(|t| t.dialog.is_some());
        // The action's objects are released without waiting for the answer: the command is queued before the tab is
        // free for the next action, so it reaches the browser before anything that action sends.
        for s in self.sessions_used.iter().filter(|_| !blocked) {
            let release = json!({"objectGroup": GROUP});
            if let Ok(q) =
                p.cdp.enqueue(Some(s), "Runtime.releaseObjectGroup", release, Duration::from_millis(200)).await
            {
                // The answer is waited for elsewhere: a command whose answer nobody waits for is not sent.
                drop(tokio::spawn(q.answer()));
            }
        }
        self.res.timings.serialize = ms(s0.elapsed());
        self.res
    }
}
