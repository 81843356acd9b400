//! The extension relay transport: a browser-level CDP endpoint emulated over `chrome.debugger`, so the Chromium
//! provider's code runs unchanged. Tab sessions are synthesized (`tab-<tabId>`), OOPIF children keep their real flat
//! session ids, `Target.*` browser commands become extension tab/debugger commands, and tab events become
//! `Target.targetCreated/targetInfoChanged/targetDestroyed`.
//!
//! Differences from a real browser endpoint, each answered plainly:
//! - `Target.getTargets` is not allowed through chrome.debugger; the relay answers it from `chrome.debugger.getTargets`
//!   (pages with a tab only).
//! - `chrome://` and other extension-protected pages cannot be attached: `UNSUPPORTED: …` protocol error.
//! - Browser-level commands other than the emulated ones are refused as unsupported over the extension relay.
//! - `Browser.setDownloadBehavior` with `deny` is accepted without touching the user's download settings (the relay
//!   reports no download events, so the agent gets no downloads); any other behaviour is unsupported.
//! - Commands carry the tab's fence (lease token + control epoch); every page-mutating one (off the extension's
//!   read-only allow list) passes its last-hop gate: without a lease it fails with `LEASE_REVOKED`, after Stop with
//!   `USER_STOPPED`. A `Runtime` script made for an action (browserd's `forAction` mark) counts as page-mutating.

use std::collections::{HashMap, HashSet, VecDeque};

use async_trait::async_trait;
use browserd_cdp::{Transport, TransportError};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::link::{ExtensionError, ExtensionLink, Fence};

/// What the link pushes to a relay transport.
#[derive(Debug)]
pub(crate) enum Inbound {
    Message(String),
    Closed(String),
}

/// The relay's view of the browser: tab ↔ target ids, attached tabs, child sessions, fences.
#[derive(Debug, Default)]
pub(crate) struct RelayState {
    pub(crate) sink: Option<mpsc::Sender<Inbound>>,
    pub(crate) discover: bool,
    pub(crate) target_by_tab: HashMap<i64, String>,
    pub(crate) tab_by_target: HashMap<String, i64>,
    pub(crate) child_sessions: HashMap<String, i64>,
    pub(crate) attached_tabs: HashSet<i64>,
    pub(crate) fences: HashMap<i64, Fence>,
    /// The agent session that owns each tab (set when the link creates or claims it); tab commands of the relay run
    /// for that session, so the extension's ownership checks see the real owner.
    pub(crate) owner_session: HashMap<i64, String>,
    /// The session `Target.createTarget` opens tabs for, when a caller set one (else the transport's session).
    pub(crate) create_session: Option<String>,
    /// Attachment generation per tab: each new attachment gets a new synthesized session id (`tab-<id>.<gen>`), because
    /// CDP clients treat a detached session id as dead for good.
    pub(crate) attach_gen: HashMap<i64, u64>,
}

/// Attachment generations are unique in the process, so a new link's relay never reuses an old link's session id.
static NEXT_GEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

const TAB_SESSION_PREFIX: &str = "tab-";

/// The synthesized flat session id of a tab's top-level attachment (before any generation is assigned).
pub fn tab_session(tab_id: i64) -> String {
    format!("{TAB_SESSION_PREFIX}{tab_id}")
}

fn target_info(tab: &Value, target_id: &str, attached: bool) -> Value {
    json!({
        "targetId": target_id,
        "type": "page",
        "title": tab["title"].as_str().unwrap_or_default(),
        "url": tab["url"].as_str().unwrap_or_default(),
        "attached": attached,
        "canAccessOpener": false,
        "browserContextId": "default",
    })
}

impl RelayState {
    pub(crate) fn remember(&mut self, tab_id: i64, target_id: &str) {
        self.target_by_tab.insert(tab_id, target_id.to_owned());
        self.tab_by_target.insert(target_id.to_owned(), tab_id);
    }

    fn forget_tab(&mut self, tab_id: i64) -> Option<String> {
        self.attached_tabs.remove(&tab_id);
        self.fences.remove(&tab_id);
        self.owner_session.remove(&tab_id);
        self.child_sessions.retain(|_, t| *t != tab_id);
        let target = self.target_by_tab.remove(&tab_id);
        if let Some(t) = &target {
            self.tab_by_target.remove(t);
        }
        target
    }

    /// The current synthesized session id of a tab's top-level attachment.
    pub(crate) fn session_of(&self, tab_id: i64) -> String {
        match self.attach_gen.get(&tab_id) {
            Some(g) => format!("{TAB_SESSION_PREFIX}{tab_id}.{g}"),
            None => tab_session(tab_id),
        }
    }

    /// Records a new attachment of `tab_id` (a new session id when it was not attached) and returns its session id.
    pub(crate) fn attached(&mut self, tab_id: i64) -> String {
        if self.attached_tabs.insert(tab_id) {
            let generation = NEXT_GEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.attach_gen.insert(tab_id, generation);
        }
        self.session_of(tab_id)
    }

    /// Which tab (and child session) a flat session id names; a session id of an earlier attachment names nothing.
    pub(crate) fn resolve_session(&self, session: &str) -> Option<(i64, Option<String>)> {
        if let Some(rest) = session.strip_prefix(TAB_SESSION_PREFIX) {
            let n: i64 = rest.split('.').next()?.parse().ok()?;
            return (self.session_of(n) == session).then_some((n, None));
        }
        self.child_sessions.get(session).map(|t| (*t, Some(session.to_owned())))
    }

    pub(crate) fn detached_messages(&mut self, tab_id: i64, reason: &str) -> Vec<String> {
        if !self.attached_tabs.remove(&tab_id) {
            return Vec::new();
        }
        self.fences.remove(&tab_id);
        self.child_sessions.retain(|_, t| *t != tab_id);
        let session = self.session_of(tab_id);
        let target = self.target_by_tab.get(&tab_id).cloned().unwrap_or_default();
        vec![
            json!({"method": "Inspector.detached", "params": {"reason": reason}, "sessionId": session}).to_string(),
            json!({"method": "Target.detachedFromTarget", "params": {"sessionId": session, "targetId": target}})
                .to_string(),
        ]
    }

    /// Turns one extension event into the CDP messages a browser endpoint would have sent.
    pub(crate) fn translate_event(&mut self, ev: &Value) -> Vec<String> {
        match ev["kind"].as_str().unwrap_or_default() {
            "cdp" => {
                let Some(tab_id) = ev["source"]["tabId"].as_i64() else { return Vec::new() };
                let session = ev["source"]["sessionId"].as_str().map_or_else(|| self.session_of(tab_id), str::to_owned);
                let method = ev["method"].as_str().unwrap_or_default();
                let params = ev.get("params").cloned().unwrap_or_else(|| json!({}));
                match method {
                    "Target.attachedToTarget" => {
                        if let Some(child) = params["sessionId"].as_str() {
                            self.child_sessions.insert(child.to_owned(), tab_id);
                        }
                    }
                    "Target.detachedFromTarget" => {
                        if let Some(child) = params["sessionId"].as_str() {
                            self.child_sessions.remove(child);
                        }
                    }
                    _ => {}
                }
                vec![json!({"method": method, "params": params, "sessionId": session}).to_string()]
            }
            "detach" => {
                let Some(tab_id) = ev["source"]["tabId"].as_i64() else { return Vec::new() };
                if let Some(child) = ev["source"]["sessionId"].as_str() {
                    self.child_sessions.remove(child);
                    return vec![
                        json!({"method": "Target.detachedFromTarget", "params": {"sessionId": child}, "sessionId": self.session_of(tab_id)})
                            .to_string(),
                    ];
                }
                let reason = ev["reason"].as_str().unwrap_or("target_closed").to_owned();
                self.detached_messages(tab_id, &reason)
            }
            kind @ ("tabCreated" | "tabUpdated") => {
                let tab = &ev["tab"];
                let (Some(tab_id), Some(target)) = (tab["tabId"].as_i64(), tab["targetId"].as_str()) else {
                    return Vec::new();
                };
                let known = self.target_by_tab.contains_key(&tab_id);
                self.remember(tab_id, target);
                if !self.discover {
                    return Vec::new();
                }
                let info = target_info(tab, target, self.attached_tabs.contains(&tab_id));
                let method =
                    if kind == "tabCreated" || !known { "Target.targetCreated" } else { "Target.targetInfoChanged" };
                vec![json!({"method": method, "params": {"targetInfo": info}}).to_string()]
            }
            "tabRemoved" => {
                let Some(tab_id) = ev["tabId"].as_i64() else { return Vec::new() };
                let mut out = self.detached_messages(tab_id, "target_closed");
                let target = self.forget_tab(tab_id).or_else(|| ev["targetId"].as_str().map(str::to_owned));
                if let (true, Some(target)) = (self.discover, target) {
                    out.push(json!({"method": "Target.targetDestroyed", "params": {"targetId": target}}).to_string());
                }
                out
            }
            _ => Vec::new(),
        }
    }
}

/// The CDP error reply for an extension error object `{code, message}`. Browser errors that carry a CDP error as JSON
/// text (how chrome.debugger reports them) keep its code and message.
pub(crate) fn cdp_error_reply(cdp_id: u64, err: &Value) -> String {
    let code = err["code"].as_str().unwrap_or("BROWSER_ERROR");
    let message = err["message"].as_str().unwrap_or_default();
    if code == "BROWSER_ERROR"
        && let Ok(inner) = serde_json::from_str::<Value>(message)
        && inner["code"].is_i64()
    {
        return json!({"id": cdp_id, "error": {"code": inner["code"], "message": inner["message"]}}).to_string();
    }
    json!({"id": cdp_id, "error": {"code": -32000, "message": format!("{code}: {message}"), "data": code}}).to_string()
}

pub(crate) fn ext_error_reply(cdp_id: u64, e: &ExtensionError) -> String {
    match e {
        ExtensionError::Refused { code, message, .. } => {
            cdp_error_reply(cdp_id, &json!({"code": code, "message": message}))
        }
        other => json!({"id": cdp_id, "error": {"code": -32000, "message": other.to_string(), "data": other.code()}})
            .to_string(),
    }
}

fn reply(cdp_id: u64, result: Value) -> String {
    json!({"id": cdp_id, "result": result}).to_string()
}

fn unsupported(cdp_id: u64, what: &str) -> String {
    json!({"id": cdp_id, "error": {"code": -32601, "message": format!("UNSUPPORTED: {what} is unsupported over the extension relay (chrome.debugger gives no browser-level session)"), "data": "UNSUPPORTED"}}).to_string()
}

/// CDP over the extension. Made by [`ExtensionLink::relay_transport`].
#[derive(Debug)]
pub struct RelayTransport {
    link: ExtensionLink,
    session: String,
    tx: mpsc::Sender<Inbound>,
    rx: mpsc::Receiver<Inbound>,
    ready: VecDeque<String>,
    closed: Option<String>,
}

impl RelayTransport {
    pub(crate) fn new(link: ExtensionLink, session: String) -> RelayTransport {
        let (tx, rx) = mpsc::channel(1024);
        let previous =
            link.inner.relay.lock().unwrap_or_else(std::sync::PoisonError::into_inner).sink.replace(tx.clone());
        if let Some(p) = previous {
            let _ = p.try_send(Inbound::Closed("replaced by a newer relay transport on the same link".into()));
        }
        RelayTransport { link, session, tx, rx, ready: VecDeque::new(), closed: None }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, RelayState> {
        self.link.inner.relay.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs an emulated command; its messages (events first, then the reply) go to the transport in order.
    fn spawn_call(&self, fut: impl std::future::Future<Output = Vec<String>> + Send + 'static) {
        let tx = self.tx.clone();
        tokio::spawn(async move {
            for m in fut.await {
                if tx.send(Inbound::Message(m)).await.is_err() {
                    break;
                }
            }
        });
    }

    fn tab_of_target(&self, params: &Value) -> Option<i64> {
        params["targetId"].as_str().and_then(|t| self.state().tab_by_target.get(t).copied())
    }

    fn browser_command(&mut self, cdp_id: u64, method: &str, params: Value) {
        let link = self.link.clone();
        let session = self.session.clone();
        match method {
            "Browser.getVersion" => {
                let ua = link.info().user_agent.clone();
                let product = ua
                    .split_whitespace()
                    .find(|p| p.starts_with("Chrome/") || p.starts_with("HeadlessChrome/") || p.starts_with("Edg/"))
                    .unwrap_or("Chrome")
                    .to_owned();
                self.ready.push_back(reply(
                    cdp_id,
                    json!({"protocolVersion": "1.3", "product": product, "userAgent": ua, "jsVersion": "", "revision": "extension-relay"}),
                ));
            }
            "Target.setDiscoverTargets" => {
                self.state().discover = params["discover"].as_bool().unwrap_or(false);
                self.ready.push_back(reply(cdp_id, json!({})));
            }
            "Browser.setDownloadBehavior" if params["behavior"] == "deny" => {
                self.ready.push_back(reply(cdp_id, json!({})));
            }
            "Target.getTargets" => self.spawn_call(async move {
                match link.call("debugger.getTargets", json!({})).await {
                    Ok(list) => {
                        let mut st = link.inner.relay.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        let infos: Vec<Value> = list
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|t| {
                                let tab = t["tabId"].as_i64()?;
                                let id = t["id"].as_str()?;
                                st.remember(tab, id);
                                Some(target_info(t, id, st.attached_tabs.contains(&tab)))
                            })
                            .collect();
                        vec![reply(cdp_id, json!({"targetInfos": infos}))]
                    }
                    Err(e) => vec![ext_error_reply(cdp_id, &e)],
                }
            }),
            "Target.createTarget" => {
                let url = params["url"].as_str().unwrap_or("about:blank").to_owned();
                let active = !params["background"].as_bool().unwrap_or(false);
                let session = self.state().create_session.clone().unwrap_or(session);
                self.spawn_call(async move {
                    match link.create_tab(&session, &url, active).await {
                        Ok(tab) => match tab.target_id {
                            Some(t) => vec![reply(cdp_id, json!({"targetId": t}))],
                            None => vec![unsupported(cdp_id, "a tab without a debuggable target")],
                        },
                        Err(e) => vec![ext_error_reply(cdp_id, &e)],
                    }
                });
            }
            "Target.closeTarget" | "Target.activateTarget" | "Target.attachToTarget" => {
                let known = self.tab_of_target(&params);
                let target = params["targetId"].as_str().unwrap_or_default().to_owned();
                let method = method.to_owned();
                self.spawn_call(async move {
                    // A target this relay has not seen (a new link after a re-pairing): learn the tabs, their targets
                    // and their owners from the extension first.
                    let tab_id = match known {
                        Some(t) => Some(t),
                        None => match link.sync_relay().await {
                            Ok(()) => link.tab_of_target(&target),
                            Err(e) => return vec![ext_error_reply(cdp_id, &e)],
                        },
                    };
                    let Some(tab_id) = tab_id else {
                        return vec![
                            json!({"id": cdp_id, "error": {"code": -32602, "message": "No target with given id found"}})
                                .to_string(),
                        ];
                    };
                    let session = link.owner_session(tab_id).unwrap_or(session);
                    let r = match method.as_str() {
                        "Target.closeTarget" => {
                            link.close_tab(&session, tab_id).await.map(|()| json!({"success": true}))
                        }
                        "Target.activateTarget" => link
                            .call("tabs.update", json!({"session": session, "tabId": tab_id, "active": true}))
                            .await
                            .map(|_| json!({})),
                        _ => match link.call("debugger.attach", json!({"session": session, "tabId": tab_id})).await {
                            Ok(_) => {
                                let session = link
                                    .inner
                                    .relay
                                    .lock()
                                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                                    .attached(tab_id);
                                Ok(json!({"sessionId": session}))
                            }
                            Err(e) => Err(e),
                        },
                    };
                    match r {
                        Ok(v) => vec![reply(cdp_id, v)],
                        Err(e) => vec![ext_error_reply(cdp_id, &e)],
                    }
                });
            }
            "Target.detachFromTarget" => {
                let sid = params["sessionId"].as_str().unwrap_or_default().to_owned();
                let resolved = self.state().resolve_session(&sid);
                match resolved {
                    Some((tab_id, None)) => self.spawn_call(async move {
                        match link.call("debugger.detach", json!({"tabId": tab_id})).await {
                            Ok(_) => {
                                let mut out = link
                                    .inner
                                    .relay
                                    .lock()
                                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                                    .detached_messages(tab_id, "detached by browserd");
                                out.push(reply(cdp_id, json!({})));
                                out
                            }
                            Err(e) => vec![ext_error_reply(cdp_id, &e)],
                        }
                    }),
                    Some((tab_id, Some(child))) => {
                        let args = json!({"target": {"tabId": tab_id}, "method": "Target.detachFromTarget", "params": {"sessionId": child}});
                        self.pass_through(cdp_id, args);
                    }
                    None => self.ready.push_back(
                        json!({"id": cdp_id, "error": {"code": -32602, "message": "No session with given id"}})
                            .to_string(),
                    ),
                }
            }
            other => self.ready.push_back(unsupported(cdp_id, &format!("the browser-level command {other}"))),
        }
    }

    fn pass_through(&mut self, cdp_id: u64, args: Value) {
        let link = self.link.clone();
        let sink = self.tx.clone();
        tokio::spawn(async move {
            if let Err(e) = link.post_cdp(cdp_id, sink.clone(), args).await {
                let _ = sink.send(Inbound::Message(ext_error_reply(cdp_id, &e))).await;
            }
        });
    }
}

#[async_trait]
impl Transport for RelayTransport {
    async fn send(&mut self, message: String) -> Result<(), TransportError> {
        if let Some(reason) = &self.closed {
            return Err(TransportError::Closed { reason: reason.clone() });
        }
        let msg: Value = serde_json::from_str(&message)
            .map_err(|e| TransportError::Malformed { detail: format!("outgoing CDP message is not JSON: {e}") })?;
        let cdp_id = msg["id"].as_u64().ok_or_else(|| TransportError::Malformed { detail: "no id".into() })?;
        let method = msg["method"].as_str().unwrap_or_default().to_owned();
        let params = msg.get("params").cloned().unwrap_or_else(|| json!({}));
        let Some(session) = msg["sessionId"].as_str() else {
            self.browser_command(cdp_id, &method, params);
            return Ok(());
        };
        let resolved = self.state().resolve_session(session);
        let Some((tab_id, child)) = resolved else {
            self.ready.push_back(
                json!({"id": cdp_id, "error": {"code": -32001, "message": format!("Session with given id not found: {session}")}})
                    .to_string(),
            );
            return Ok(());
        };
        let target = match &child {
            Some(c) => json!({"tabId": tab_id, "sessionId": c}),
            None => json!({"tabId": tab_id}),
        };
        let mut args = json!({"target": target, "method": method, "params": params});
        // Every command carries the tab's fence when a lease is granted: the extension's one gate checks it for every
        // method off its read-only allow list.
        if let Some(f) = self.state().fences.get(&tab_id) {
            args["fence"] = json!({"token": f.token, "epoch": f.epoch});
        }
        // A `Runtime` call made for an action (browserd's mark, see `Transport::gates_actions`) is a write to the
        // gate, not a read.
        if msg["forAction"] == true {
            args["forAction"] = json!(true);
        }
        // Registered synchronously so the answer keeps its place relative to events.
        let link = self.link.clone();
        match link.post_cdp(cdp_id, self.tx.clone(), args).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.ready.push_back(ext_error_reply(cdp_id, &e));
                Ok(())
            }
        }
    }

    fn gates_actions(&self) -> bool {
        true
    }

    async fn recv(&mut self) -> Result<String, TransportError> {
        if let Some(m) = self.ready.pop_front() {
            return Ok(m);
        }
        if let Some(reason) = &self.closed {
            return Err(TransportError::Closed { reason: reason.clone() });
        }
        if let Some(reason) = self.link.closed_reason() {
            // Answers queued before the close (failed in-flight calls) still go out first.
            if let Ok(Inbound::Message(m)) = self.rx.try_recv() {
                return Ok(m);
            }
            self.closed = Some(reason.clone());
            return Err(TransportError::Closed { reason });
        }
        match self.rx.recv().await {
            Some(Inbound::Message(m)) => Ok(m),
            Some(Inbound::Closed(reason)) => {
                self.closed = Some(reason.clone());
                Err(TransportError::Closed { reason })
            }
            None => {
                let reason = "the extension link ended".to_owned();
                self.closed = Some(reason.clone());
                Err(TransportError::Closed { reason })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(msgs: Vec<String>) -> Vec<Value> {
        msgs.iter().map(|m| serde_json::from_str(m).unwrap()).collect()
    }

    #[test]
    fn tab_events_become_target_events_only_after_discovery() {
        let mut st = RelayState::default();
        let created =
            json!({"kind": "tabCreated", "tab": {"tabId": 7, "targetId": "T7", "url": "http://a/", "title": "A"}});
        assert!(st.translate_event(&created).is_empty(), "no discovery yet");
        assert_eq!(st.tab_by_target.get("T7"), Some(&7), "but the mapping is kept");
        st.discover = true;
        let out = parse(st.translate_event(
            &json!({"kind": "tabUpdated", "tab": {"tabId": 7, "targetId": "T7", "url": "http://b/", "title": "B"}}),
        ));
        assert_eq!(out[0]["method"], "Target.targetInfoChanged");
        assert_eq!(out[0]["params"]["targetInfo"]["url"], "http://b/");
        let out = parse(st.translate_event(&json!({"kind": "tabRemoved", "tabId": 7})));
        assert_eq!(out, vec![json!({"method": "Target.targetDestroyed", "params": {"targetId": "T7"}})]);
        assert!(st.tab_by_target.is_empty());
    }

    #[test]
    fn cdp_events_get_the_tab_or_child_session() {
        let mut st = RelayState::default();
        st.attached_tabs.insert(3);
        let ev = json!({"kind": "cdp", "source": {"tabId": 3}, "method": "Target.attachedToTarget",
                        "params": {"sessionId": "CHILD", "targetInfo": {"type": "iframe"}}});
        let out = parse(st.translate_event(&ev));
        assert_eq!(out[0]["sessionId"], "tab-3");
        assert_eq!(st.resolve_session("CHILD"), Some((3, Some("CHILD".to_owned()))));
        assert_eq!(st.resolve_session("tab-3"), Some((3, None)));
        assert_eq!(st.resolve_session("nope"), None);
        let ev = json!({"kind": "cdp", "source": {"tabId": 3, "sessionId": "CHILD"}, "method": "Runtime.consoleAPICalled", "params": {}});
        assert_eq!(parse(st.translate_event(&ev))[0]["sessionId"], "CHILD");
    }

    #[test]
    fn debugger_detach_becomes_inspector_detached_then_detached_from_target() {
        let mut st = RelayState::default();
        st.remember(4, "T4");
        st.attached_tabs.insert(4);
        st.child_sessions.insert("C".into(), 4);
        st.fences.insert(4, Fence { token: 1, epoch: 1 });
        let out =
            parse(st.translate_event(&json!({"kind": "detach", "source": {"tabId": 4}, "reason": "canceled_by_user"})));
        assert_eq!(
            out[0],
            json!({"method": "Inspector.detached", "params": {"reason": "canceled_by_user"}, "sessionId": "tab-4"})
        );
        assert_eq!(
            out[1],
            json!({"method": "Target.detachedFromTarget", "params": {"sessionId": "tab-4", "targetId": "T4"}})
        );
        assert!(st.fences.is_empty() && st.child_sessions.is_empty());
        // A second notice (tab removed after detach) does not repeat it.
        assert!(
            st.translate_event(&json!({"kind": "detach", "source": {"tabId": 4}, "reason": "target_closed"}))
                .is_empty()
        );
    }

    #[test]
    fn every_attachment_gets_a_new_session_id_and_old_ones_name_nothing() {
        let mut st = RelayState::default();
        let first = st.attached(5);
        assert_eq!(st.attached(5), first, "attaching an attached tab keeps its session");
        assert_eq!(st.resolve_session(&first), Some((5, None)));
        assert_eq!(st.detached_messages(5, "stopped").len(), 2);
        let second = st.attached(5);
        assert_ne!(second, first);
        assert_eq!(st.resolve_session(&second), Some((5, None)));
        assert_eq!(st.resolve_session(&first), None, "a detached session id stays dead");
    }

    #[test]
    fn extension_errors_map_to_cdp_errors() {
        let v: Value = serde_json::from_str(&cdp_error_reply(
            9,
            &json!({"code": "BROWSER_ERROR", "message": "{\"code\":-32000,\"message\":\"Not allowed\"}"}),
        ))
        .unwrap();
        assert_eq!(v, json!({"id": 9, "error": {"code": -32000, "message": "Not allowed"}}));
        let v: Value =
            serde_json::from_str(&cdp_error_reply(9, &json!({"code": "USER_STOPPED", "message": "stopped"}))).unwrap();
        assert_eq!(v["error"]["message"], "USER_STOPPED: stopped");
        assert_eq!(v["error"]["data"], "USER_STOPPED");
    }
}
