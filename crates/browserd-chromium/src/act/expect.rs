//! Expectations: after the settle window, each `expected` is checked against the page, read out of the page's reach,
//! and re-checked until all hold or the deadline passes; the postcondition and what it means for the outcome.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use browserd_cdp::SessionId;
use browserd_protocol::{ActParams, Dispatch, Expectation, ExpectationResult, Outcome, Postcondition, codes};
use serde_json::Value;

use super::fail::{Fail, OUTCOME_UNKNOWN};
use super::run::{Run, index};
use super::settle::{QUIET_EXPECTING_MS, QUIET_MS};
use crate::observe::resolve_ref;
use crate::provider::truncate;
use crate::state::LogEvent;
use crate::world::{self, WorldError};

/// What a look for a text found.
enum Seen {
    Present,
    Absent,
    /// Not found where it could be read, and some frame could not be read out of the page's reach (why).
    Unverifiable(String),
    /// Not found before the look was cut short (the deadline passed, or the link failed: judged by the caller).
    Unread,
}

impl Run<'_> {
    /// Whether `text` is shown in the page or any of its frames. Read in browserd's world, so a page cannot fake the
    /// answer (by replacing `String.prototype.includes` or `innerText`). A frame whose world cannot be had is never
    /// read from the page's own world instead: without a match elsewhere the answer is [`Seen::Unverifiable`] (and
    /// [`Seen::Unread`] when a look was cut short).
    async fn text_present(&self, text: &str) -> Seen {
        let roots: Vec<SessionId> = {
            let st = self.p.st();
            let Some(t) = st.tabs.get(&self.tab) else {
                return Seen::Unverifiable("the tab closed".into());
            };
            t.session.iter().cloned().chain(t.children.keys().cloned()).collect()
        };
        let expr = format!(
            "(() => {{ const t = {}; const has = (d) => {{ try {{ if (d.body && d.body.innerText.includes(t)) return true; for (const f of d.querySelectorAll('iframe')) {{ try {{ if (f.contentDocument && has(f.contentDocument)) return true; }} catch (e) {{}} }} }} catch (e) {{}} return false; }}; return has(document); }})()",
            serde_json::to_string(text).unwrap_or_default()
        );
        let (mut unread, mut cut) = (None, false);
        for s in roots {
            match world::eval(self.p, self.tab, &s, &expr, self.deadline).await {
                Ok(Value::Bool(true)) => return Seen::Present,
                Ok(_) => {}
                // Cut short by the deadline (or a lost link, judged by the caller).
                Err(WorldError::Link(_)) => cut = true,
                Err(e) => unread = Some(e.to_string()),
            }
        }
        match (unread, cut) {
            (Some(why), _) => Seen::Unverifiable(why),
            (None, true) => Seen::Unread,
            (None, false) => Seen::Absent,
        }
    }

    /// Records whether expectation `i` could be checked out of the page's reach (`Some(false)`: it could not;
    /// `None`: the check was cut short, which proves nothing either way).
    fn verifiable(&mut self, i: usize, checked: Option<bool>) {
        let i = index(i);
        match checked {
            Some(true) => self.unverified.retain(|x| *x != i),
            Some(false) if !self.unverified.contains(&i) => self.unverified.push(i),
            _ => {}
        }
    }

    /// Checks the expectations once. Those that could not be checked out of the page's reach fail and are listed in
    /// `self.unverified`: they are never passed on the page's word.
    async fn check(&mut self, exps: &[Expectation]) -> Vec<ExpectationResult> {
        let mut out = Vec::new();
        let evs = {
            let st = self.p.st();
            st.log_since(self.tab, self.seq0)
        };
        let dialog = self.dialog_open();
        for (i, e) in exps.iter().enumerate() {
            let (passed, detail) = match e {
                Expectation::Navigated => {
                    let n = evs.iter().any(|e| matches!(e, LogEvent::Navigated(_) | LogEvent::SameDocument(_)));
                    (n, if n { "navigated".into() } else { "no navigation".into() })
                }
                Expectation::NewTab => {
                    let t: Vec<String> = evs
                        .iter()
                        .filter_map(|e| if let LogEvent::Popup(h) = e { Some(h.to_string()) } else { None })
                        .collect();
                    (!t.is_empty(), if t.is_empty() { "no new tab".into() } else { format!("new tab {}", t.join(",")) })
                }
                Expectation::Dialog => {
                    let d = dialog.is_some() || evs.iter().any(|e| matches!(e, LogEvent::Dialog(_)));
                    (d, if d { "a dialog opened".into() } else { "no dialog".into() })
                }
                Expectation::DownloadFinished => {
                    let d =
                        evs.iter().any(|e| matches!(e, LogEvent::Download { info, .. } if info.state == "completed"));
                    (d, if d { "download completed".into() } else { "no finished download".into() })
                }
                Expectation::Url { contains } => {
                    let url = self.p.st().tabs.get(&self.tab).map(|t| t.url.clone()).unwrap_or_default();
                    (url.contains(contains.as_str()), format!("url is {}", truncate(&url, 120)))
                }
                _ if dialog.is_some() => (false, "a dialog blocks the page; cannot check".into()),
                Expectation::TextPresent { text } => match self.text_present(text).await {
                    Seen::Present => {
                        self.verifiable(i, Some(true));
                        (true, "text found".into())
                    }
                    Seen::Absent => {
                        self.verifiable(i, Some(true));
                        (false, "text not found".into())
                    }
                    Seen::Unverifiable(why) => {
                        self.verifiable(i, Some(false));
                        (false, format!("not found, and could not be checked everywhere: {why}"))
                    }
                    Seen::Unread => (false, "text not found before the deadline".into()),
                },
                Expectation::Value { target, equals } => match resolve_ref(self.p, self.tab, target.as_str()) {
                    Ok(res) => match self.read_value(&res).await {
                        Ok(v) => {
                            self.verifiable(i, Some(true));
                            (v == *equals, format!("value is {:?}", truncate(&v, 80)))
                        }
                        Err(f) => {
                            // Not readable out of the page's reach is not "does not hold"; a read cut short proves
                            // nothing (a lost link is judged after); a field that is gone does not hold the value.
                            let checked = if f.world { Some(false) } else { (!f.link).then_some(true) };
                            self.verifiable(i, checked);
                            (false, f.message)
                        }
                    },
                    Err(_) => {
                        self.verifiable(i, Some(true));
                        (false, format!("{target} is stale or unknown"))
                    }
                },
                Expectation::Appears { role, name } => {
                    let found = self.last_built.as_ref().and_then(|b| {
                        b.nodes.iter().find(|n| {
                            role.as_ref().is_none_or(|r| n.role == *r)
                                && name.as_ref().is_none_or(|nm| n.name.to_lowercase().contains(&nm.to_lowercase()))
                        })
                    });
                    match found {
                        Some(n) => (true, format!("found [{}] {} {:?}", n.node_ref, n.role, n.name)),
                        None => (false, "no such node".into()),
                    }
                }
                Expectation::Disappears { target, text } => {
                    let mut gone = true;
                    let mut detail = "gone".to_owned();
                    if let Some(t) = target {
                        let listed =
                            self.last_built.as_ref().is_some_and(|b| b.nodes.iter().any(|n| n.node_ref == t.as_str()));
                        if listed {
                            gone = false;
                            detail = format!("{t} is still shown");
                        }
                    }
                    if let Some(tx) = text {
                        // Not seeing a text where it cannot be read, or not in time, is no evidence that it is gone.
                        match self.text_present(tx).await {
                            Seen::Present => {
                                self.verifiable(i, Some(true));
                                gone = false;
                                detail = format!("{tx:?} is still on the page");
                            }
                            Seen::Absent => self.verifiable(i, Some(true)),
                            Seen::Unverifiable(why) => {
                                self.verifiable(i, Some(!gone));
                                if gone {
                                    gone = false;
                                    detail = format!("whether {tx:?} is gone could not be checked: {why}");
                                }
                            }
                            Seen::Unread if gone => {
                                gone = false;
                                detail = format!("whether {tx:?} is gone was not checked before the deadline");
                            }
                            Seen::Unread => {}
                        }
                    }
                    (gone, detail)
                }
                Expectation::State { target, state } => {
                    let node = self
                        .last_built
                        .as_ref()
                        .and_then(|b| b.nodes.iter().find(|n| n.node_ref == target.as_str()).cloned());
                    match node {
                        None => (false, format!("{target} is not shown")),
                        Some(n) => {
                            let has = |s: &str| n.states.iter().any(|x| x == s);
                            let focused = self.last_built.as_ref().and_then(|b| b.focused.clone()).as_deref()
                                == Some(target.as_str());
                            let ok = match state.as_str() {
                                "enabled" => !has("disabled"),
                                "unchecked" => has("unchecked") || !has("checked"),
                                "focused" => focused,
                                "visible" => true,
                                s => has(s),
                            };
                            (ok, format!("states: {}", n.states.join(" ")))
                        }
                    }
                }
            };
            out.push(ExpectationResult { index: index(i), passed, detail });
        }
        out
    }

    /// The link went away after the action's input: effects gathered so far stay; expectations not yet seen to hold
    /// cannot be verified, and then the outcome is unknown (or failed, for a `wait` that sent nothing).
    fn link_lost_while_settling(&mut self, params: &ActParams, f: &Fail) {
        let verified = !params.expected.is_empty()
            && self.res.expectations.len() == params.expected.len()
            && self.res.expectations.iter().all(|r| r.passed);
        if verified {
            self.res.postcondition = Postcondition::Passed;
            return;
        }
        let sent = self.sent.load(Ordering::SeqCst);
        if params.expected.is_empty() {
            if self.res.message.is_none() {
                self.res.message =
                    Some(format!("{} while the effects were gathered; later effects are unknown", f.message));
            }
            return;
        }
        self.res.postcondition = Postcondition::Unverified;
        if self.res.outcome != Outcome::Succeeded {
            return;
        }
        self.res.code = Some(f.code.into());
        if sent {
            self.res.outcome = Outcome::Unknown;
            self.res.message = Some(format!(
                "{} before the expectation could be verified; the input was sent, so its effect is unknown: it is not \
                 retried automatically — observe the page (reconnecting first if needed) before acting again",
                f.message
            ));
        } else {
            self.res.outcome = Outcome::Failed;
            self.res.message = Some(format!("{} before the expectation held; nothing was sent to the page", f.message));
        }
    }

    pub(super) async fn settle_and_verify(&mut self, params: &ActParams) {
        let quiet = if params.expected.is_empty() { QUIET_MS } else { QUIET_EXPECTING_MS };
        // Not for a navigation (its load is waited for; the new document's own requests, a long-poll among them, are
        // not the answer to the input), nor when no input went out.
        let mut requests_awaited = params.action.navigates() || self.input_at.is_none();
        let mut lost;
        loop {
            self.settle(quiet).await;
            // Only a page that showed nothing as it was typed into (a list that filters as each key goes in has
            // answered already) is given time for a debounced one.
            if std::mem::take(&mut self.suggests) && self.dom_changed != Some(true) {
                self.await_suggestions().await;
            }
            if !requests_awaited {
                requests_awaited = true;
                // A click that navigated (a link) waits for its load instead, as a navigation does.
                let navigated = {
                    let st = self.p.st();
                    st.log_since(self.tab, self.seq0).iter().any(|e| matches!(e, LogEvent::Navigated(_)))
                };
                if let Some(input) = self.input_at.filter(|_| !navigated) {
                    self.res.effects.pending = self.await_requests(input).await;
                }
            }
            lost = self.link_lost();
            if lost.is_none() {
                self.await_exits().await;
                self.take_effects().await;
            }
            self.log_effects();
            if params.expected.is_empty() || lost.is_some() {
                break;
            }
            let results = self.check(&params.expected).await;
            // A check that ran while the link went away proves nothing.
            lost = self.link_lost();
            if lost.is_some() {
                break;
            }
            let all = results.iter().all(|r| r.passed);
            self.res.expectations = results;
            if all || Instant::now() + Duration::from_millis(30) >= self.deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        let lost_none = lost.is_none();
        if let Some(f) = lost {
            self.link_lost_while_settling(params, &f);
        } else if !params.expected.is_empty() {
            let all = self.res.expectations.iter().all(|r| r.passed);
            // Failed only when some expectation is known not to hold; when every one that did not pass could not be
            // checked out of the page's reach, nothing is known.
            let unverifiable =
                !all && self.res.expectations.iter().filter(|r| !r.passed).all(|r| self.unverified.contains(&r.index));
            self.res.postcondition = if all {
                Postcondition::Passed
            } else if unverifiable {
                Postcondition::Unverified
            } else {
                Postcondition::Failed
            };
            if all && self.res.dispatch == Dispatch::Dispatched {
                self.res.dispatch = Dispatch::Observed;
            }
            // What did not hold, for the message: `#1: text not found; #2: …`.
            let why = {
                let failed: Vec<String> = self
                    .res
                    .expectations
                    .iter()
                    .filter(|r| !r.passed)
                    .map(|r| format!("#{}: {}", r.index, r.detail))
                    .collect();
                failed.join("; ")
            };
            if unverifiable && self.res.code.is_none() {
                if self.sent.load(Ordering::SeqCst) {
                    self.res.outcome = Outcome::Unknown;
                    self.res.code = Some(OUTCOME_UNKNOWN.into());
                    self.res.message = Some(format!(
                        "the input was sent but the expectation could not be verified out of the page's reach ({why}); \
                         its effect is unknown: it is not retried automatically — observe the page before acting again"
                    ));
                } else {
                    self.res.outcome = Outcome::Failed;
                    self.res.code = Some(codes::ACTION_FAILED.into());
                    self.res.message = Some(format!(
                        "the expectation could not be verified out of the page's reach ({why}); nothing was sent to \
                         the page — observe it instead"
                    ));
                }
            } else if !all && self.res.code.is_none() {
                self.res.code = Some(codes::EXPECTATION_FAILED.into());
                self.res.message = Some(format!(
                    "the action ran but the expectation did not hold before the deadline ({why}); check the effects before retrying"
                ));
            }
        }
        let e = &self.res.effects;
        // Nothing observable happened: said so, so that `succeeded` never reads as "it worked". Only when the
        // tracker was read (the DOM did not change since the input) and there was an observation to compare with.
        let quiet_everywhere = self.dom_changed == Some(false)
            && self.baseline.is_some()
            && e.navigated.is_none()
            && e.appeared.is_empty()
            && e.updated.is_empty()
            && e.disappeared.is_empty()
            && e.changed.is_empty()
            && e.announced.is_empty()
            && e.dialog.is_none()
            && e.tabs_opened.is_empty()
            && e.tabs_closed.is_empty()
            && e.downloads.is_empty()
            && e.blocked.is_empty()
            && e.value.is_none()
            && e.pending.is_empty();
        if quiet_everywhere && self.sent.load(Ordering::SeqCst) && lost_none {
            self.res.effects.none = true;
        }
        let e = &self.res.effects;
        if self.res.dispatch == Dispatch::Dispatched
            && (e.navigated.is_some()
                || !e.appeared.is_empty()
                || !e.updated.is_empty()
                || !e.disappeared.is_empty()
                || !e.changed.is_empty()
                || !e.announced.is_empty()
                || e.dialog.is_some()
                || !e.tabs_opened.is_empty())
        {
            self.res.dispatch = Dispatch::Observed;
        }
    }
}
