//! The advanced tier on Chromium: script evaluation, console and network reading, raw protocol commands.
//!
//! Nothing here runs for core-tier users: the first advanced call on a tab starts one collector for the provider and
//! marks the tab as collected; only then are `Network` and `Log` enabled on that tab's session (again after every
//! re-attach, see [`on_session_setup`]). The collector keeps a bounded ring per tab of console messages, uncaught
//! exceptions and log entries, and of network requests (URL, method, type, status, timing, failure text).
//! Events are applied in order from one subscription to the connection's event stream; a read first applies
//! everything already received, so a message logged before a read's call returned is in that read.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use browserd_cdp::{Cdp, CdpError, CdpEvent, SessionId};
use browserd_core::provider::{OpContext, ProviderError, ProviderErrorKind, TabHandle};
use browserd_protocol::tools::{
    ConsoleEntry, ConsoleLevel, ConsoleParams, ConsoleResult, EvaluateParams, EvaluateResult, NetworkEntry,
    NetworkParams, NetworkResult, RawProtocolParams, RawProtocolResult,
};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::provider::{ChromiumProvider, cdp_err, remaining, truncate};
use crate::screenshot;
use crate::state::State;

/// Console entries kept per tab (oldest dropped first).
const CONSOLE_RING: usize = 1000;
/// Network requests kept per tab (oldest dropped first).
const NETWORK_RING: usize = 1000;
/// Longest console text kept per entry, in characters.
const TEXT_MAX: usize = 2000;
/// Longest URL shown, in characters.
const URL_MAX: usize = 500;
/// Default and largest number of entries one read returns.
const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = 500;

/// Domains browserd itself depends on: a raw command may not disable them under its feet.
const PROTECTED_DISABLE: &[&str] =
    &["Page.disable", "Runtime.disable", "Network.disable", "Log.disable", "DOM.disable", "Inspector.disable"];

/// The advanced-tier records of one provider. Empty (and costless) until the first advanced call.
#[derive(Default)]
pub(crate) struct Advanced {
    rings: Arc<Mutex<Rings>>,
    collector: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for Advanced {
    fn drop(&mut self) {
        if let Some(task) = self.collector.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            task.abort();
        }
    }
}

#[derive(Default)]
struct Rings {
    /// The subscription events are applied from (by the collector task on every wake-up and by every read).
    rx: Option<broadcast::Receiver<CdpEvent>>,
    tabs: HashMap<TabHandle, TabRing>,
}

#[derive(Default)]
struct TabRing {
    /// The page session `Network`/`Log` were last enabled on.
    enabled_on: Option<SessionId>,
    console: VecDeque<(u64, ConsoleEntry)>,
    console_seq: u64,
    console_dropped: u64,
    network: VecDeque<Request>,
    network_seq: u64,
    network_dropped: u64,
    /// Events were lost (the subscription lagged) after these console / network sequence numbers.
    lost_after: Option<(u64, u64)>,
}

struct Request {
    seq: u64,
    id: String,
    start: f64,
    entry: NetworkEntry,
}

fn lock(m: &Mutex<Rings>) -> MutexGuard<'_, Rings> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Advanced {
    /// Whether advanced calls were made on this tab (its events are being collected).
    pub(crate) fn collecting(&self, tab: TabHandle) -> bool {
        lock(&self.rings).tabs.contains_key(&tab)
    }

    /// Starts the collector (once per provider) and collection for `tab`.
    fn start(&self, cdp: &Cdp, state: &Arc<Mutex<State>>, tab: TabHandle) {
        let mut collector = self.collector.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        {
            let mut rings = lock(&self.rings);
            rings.tabs.entry(tab).or_default();
            if rings.rx.is_none() {
                rings.rx = Some(cdp.events());
            }
        }
        if collector.is_none() {
            let mut wake = cdp.events();
            let rings = self.rings.clone();
            let state = state.clone();
            *collector = Some(tokio::spawn(async move {
                loop {
                    match wake.recv().await {
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => drain(&rings, &state),
                        Err(broadcast::error::RecvError::Closed) => return,
                    }
                }
            }));
        }
    }
}

/// Applies every event received so far.
fn drain(rings: &Mutex<Rings>, state: &Mutex<State>) {
    let mut rings = lock(rings);
    let Rings { rx, tabs } = &mut *rings;
    let Some(rx) = rx else { return };
    loop {
        match rx.try_recv() {
            Ok(ev) => {
                let Some(session) = &ev.session else { continue };
                if !is_collected(&ev.method) {
                    continue;
                }
                let tab =
                    state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).by_session.get(session).copied();
                if let Some(ring) = tab.and_then(|t| tabs.get_mut(&t)) {
                    ring.apply(&ev);
                }
            }
            Err(broadcast::error::TryRecvError::Lagged(_)) => {
                for r in tabs.values_mut() {
                    r.lost_after = Some((r.console_seq, r.network_seq));
                }
            }
            Err(_) => break,
        }
    }
    // Closed tabs take their rings with them.
    let st = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    tabs.retain(|tab, _| st.tabs.contains_key(tab));
}

fn is_collected(method: &str) -> bool {
    matches!(method, "Runtime.consoleAPICalled" | "Runtime.exceptionThrown" | "Log.entryAdded")
        || method.starts_with("Network.")
}

/// `url:line` of a call frame or log entry.
fn source_of(url: Option<&str>, line: Option<i64>) -> Option<String> {
    let url = url.filter(|u| !u.is_empty())?;
    let url = display_url(url, false);
    Some(match line {
        Some(l) => format!("{url}:{}", l + 1),
        None => url,
    })
}

/// A URL as shown: without query string and fragment unless asked (they often carry tokens), bounded in length.
fn display_url(url: &str, include_query: bool) -> String {
    if let Some(rest) = url.strip_prefix("data:") {
        let mime = rest.split([';', ',']).next().unwrap_or_default();
        return format!("data:{mime},…");
    }
    let shown = if include_query { url } else { url.split(['?', '#']).next().unwrap_or(url) };
    truncate(shown, URL_MAX)
}

fn arg_text(v: &Value) -> String {
    match &v["value"] {
        Value::String(s) => s.clone(),
        Value::Null => v["unserializableValue"]
            .as_str()
            .or_else(|| v["description"].as_str())
            .unwrap_or_else(|| v["type"].as_str().unwrap_or("undefined"))
            .to_owned(),
        other => other.to_string(),
    }
}

impl TabRing {
    fn push_console(&mut self, entry: ConsoleEntry) {
        self.console_seq += 1;
        self.console.push_back((self.console_seq, entry));
        while self.console.len() > CONSOLE_RING {
            if let Some((seq, _)) = self.console.pop_front() {
                self.console_dropped = seq;
            }
        }
    }

    fn request(&mut self, id: &str) -> Option<&mut Request> {
        self.network.iter_mut().rev().find(|r| r.id == id)
    }

    fn apply(&mut self, ev: &CdpEvent) {
        let p = &ev.params;
        match ev.method.as_str() {
            "Runtime.consoleAPICalled" => {
                let level = match p["type"].as_str().unwrap_or("log") {
                    "debug" => ConsoleLevel::Debug,
                    "info" => ConsoleLevel::Info,
                    "warning" => ConsoleLevel::Warning,
                    "error" | "assert" => ConsoleLevel::Error,
                    _ => ConsoleLevel::Log,
                };
                let args: Vec<String> = p["args"].as_array().into_iter().flatten().map(arg_text).collect();
                let frame = &p["stackTrace"]["callFrames"][0];
                self.push_console(ConsoleEntry {
                    level,
                    text: truncate(&args.join(" "), TEXT_MAX),
                    source: source_of(frame["url"].as_str(), frame["lineNumber"].as_i64()),
                });
            }
            "Runtime.exceptionThrown" => {
                let d = &p["exceptionDetails"];
                let text = d["exception"]["description"]
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| d["exception"]["value"].as_str().map(|v| format!("Uncaught {v}")))
                    .unwrap_or_else(|| d["text"].as_str().unwrap_or("Uncaught exception").to_owned());
                let text = if text.starts_with("Uncaught") { text } else { format!("Uncaught {text}") };
                self.push_console(ConsoleEntry {
                    level: ConsoleLevel::Error,
                    text: truncate(&text, TEXT_MAX),
                    source: source_of(d["url"].as_str(), d["lineNumber"].as_i64()),
                });
            }
            "Log.entryAdded" => {
                let e = &p["entry"];
                let level = match e["level"].as_str().unwrap_or("info") {
                    "verbose" => ConsoleLevel::Debug,
                    "warning" => ConsoleLevel::Warning,
                    "error" => ConsoleLevel::Error,
                    _ => ConsoleLevel::Info,
                };
                self.push_console(ConsoleEntry {
                    level,
                    text: truncate(e["text"].as_str().unwrap_or_default(), TEXT_MAX),
                    source: source_of(e["url"].as_str(), e["lineNumber"].as_i64()),
                });
            }
            "Network.requestWillBeSent" => {
                let id = p["requestId"].as_str().unwrap_or_default().to_owned();
                let ts = p["timestamp"].as_f64().unwrap_or_default();
                // A redirect ends the previous hop of the same request id.
                if p.get("redirectResponse").is_some_and(|r| !r.is_null())
                    && let Some(prev) = self.request(&id)
                {
                    prev.entry.status = p["redirectResponse"]["status"].as_u64().and_then(|s| u16::try_from(s).ok());
                    prev.entry.duration_ms = Some(millis(ts - prev.start));
                }
                self.network_seq += 1;
                self.network.push_back(Request {
                    seq: self.network_seq,
                    id,
                    start: ts,
                    entry: NetworkEntry {
                        method: p["request"]["method"].as_str().unwrap_or("GET").to_owned(),
                        url: p["request"]["url"].as_str().unwrap_or_default().to_owned(),
                        kind: p["type"].as_str().unwrap_or("other").to_ascii_lowercase(),
                        status: None,
                        error: None,
                        duration_ms: None,
                    },
                });
                while self.network.len() > NETWORK_RING {
                    if let Some(r) = self.network.pop_front() {
                        self.network_dropped = r.seq;
                    }
                }
            }
            "Network.responseReceived" => {
                if let Some(r) = self.request(p["requestId"].as_str().unwrap_or_default()) {
                    r.entry.status = p["response"]["status"].as_u64().and_then(|s| u16::try_from(s).ok());
                    if let Some(kind) = p["type"].as_str() {
                        r.entry.kind = kind.to_ascii_lowercase();
                    }
                }
            }
            "Network.loadingFinished" => {
                let ts = p["timestamp"].as_f64().unwrap_or_default();
                if let Some(r) = self.request(p["requestId"].as_str().unwrap_or_default()) {
                    r.entry.duration_ms = Some(millis(ts - r.start));
                }
            }
            "Network.loadingFailed" => {
                let ts = p["timestamp"].as_f64().unwrap_or_default();
                if let Some(r) = self.request(p["requestId"].as_str().unwrap_or_default()) {
                    let mut error = p["errorText"].as_str().unwrap_or("failed").to_owned();
                    if let Some(reason) = p["blockedReason"].as_str() {
                        error = format!("{error} (blocked: {reason})");
                    } else if p["canceled"].as_bool() == Some(true) {
                        error = format!("{error} (canceled)");
                    }
                    r.entry.error = Some(error);
                    r.entry.duration_ms = Some(millis(ts - r.start));
                }
            }
            _ => {}
        }
    }
}

fn millis(seconds: f64) -> u64 {
    // Protocol timestamps are seconds; a negative or absurd difference reads as 0.
    let ms = (seconds * 1000.0).round();
    if ms.is_finite() && ms > 0.0 && ms < 1e12 {
        // In range by the check above.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let ms = ms as u64;
        ms
    } else {
        0
    }
}

/// Starts collection for the tab, attaches, and enables `Network`/`Log` on its page session once per session.
async fn prepare(p: &ChromiumProvider, tab: TabHandle, deadline: Instant) -> Result<SessionId, ProviderError> {
    p.advanced.start(&p.cdp, &p.state, tab);
    let session = p.ensure_attached(tab, deadline).await?;
    on_session_setup(p, &session, tab, deadline).await?;
    Ok(session)
}

/// Hook of every page-session setup: a tab whose events are collected gets `Network` and `Log` enabled on its new
/// session (after an idle detach and re-attach). Does nothing for tabs the advanced tier never touched.
///
/// # Errors
/// The browser refused to enable the domains.
pub(crate) async fn on_session_setup(
    p: &ChromiumProvider,
    session: &SessionId,
    tab: TabHandle,
    deadline: Instant,
) -> Result<(), ProviderError> {
    let needed = {
        let rings = lock(&p.advanced.rings);
        rings.tabs.get(&tab).is_some_and(|r| r.enabled_on.as_ref() != Some(session))
    };
    if !needed {
        return Ok(());
    }
    let s = Some(session);
    let (net, log) = tokio::join!(
        p.call(s, "Network.enable", json!({"maxTotalBufferSize": 0, "maxResourceBufferSize": 0}), deadline),
        p.call(s, "Log.enable", json!({}), deadline),
    );
    net.map_err(|e| cdp_err(&e, "enabling network collection"))?;
    log.map_err(|e| cdp_err(&e, "enabling log collection"))?;
    if let Some(ring) = lock(&p.advanced.rings).tabs.get_mut(&tab) {
        ring.enabled_on = Some(session.clone());
    }
    Ok(())
}

fn read_limit(limit: Option<u32>) -> usize {
    limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize
}

/// `browser_evaluate`: `Runtime.evaluate` in the main frame, by value, awaiting a promise when asked, bounded by the
/// call's deadline. A thrown exception or rejected promise is a result with `exception`.
pub(crate) async fn evaluate(
    p: &ChromiumProvider,
    ctx: &OpContext,
    tab: TabHandle,
    params: &EvaluateParams,
) -> Result<EvaluateResult, ProviderError> {
    let deadline = Instant::now() + ctx.timeout;
    let lock = p.tab_lock(tab);
    let _g = lock.lock().await;
    let session = prepare(p, tab, deadline).await?;
    // The script's own run time is bounded a little inside the call's deadline, so a busy loop is terminated and
    // reported rather than left running.
    let script_ms = remaining(deadline).as_millis().saturating_sub(250).max(1);
    let args = json!({
        "expression": params.expression,
        "awaitPromise": params.await_promise,
        "returnByValue": true,
        "userGesture": true,
        "timeout": u64::try_from(script_ms).unwrap_or(u64::MAX),
    });
    let r = p
        .cdp
        // The agent's script may change the page: a write to the extension relay's last-hop gate.
        .call_for_action(Some(&session), "Runtime.evaluate", args, remaining(deadline), Some(&ctx.cancel))
        .await
        .map_err(|e| match e {
            CdpError::Protocol { message, .. } if message.contains("serializ") || message.contains("by value") => {
                ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    format!(
                        "the expression's value cannot be returned as JSON ({message}); return plain data, e.g. \
                         wrap it in JSON.stringify or pick the fields you need"
                    ),
                )
            }
            other => cdp_err(&other, "evaluating the expression"),
        })?;
    if let Some(d) = r.get("exceptionDetails").filter(|d| !d.is_null()) {
        let text = d["exception"]["description"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| {
                d["exception"]
                    .get("value")
                    .filter(|v| !v.is_null())
                    .map(|_| format!("Uncaught {}", arg_text(&d["exception"])))
            })
            .unwrap_or_else(|| d["text"].as_str().unwrap_or("Uncaught exception").to_owned());
        return Ok(EvaluateResult { value: Value::Null, exception: Some(truncate(&text, TEXT_MAX)), spill: None });
    }
    let obj = &r["result"];
    let value = match obj.get("value") {
        Some(v) => v.clone(),
        None => obj["unserializableValue"].as_str().map_or(Value::Null, |u| Value::String(u.to_owned())),
    };
    Ok(EvaluateResult { value, exception: None, spill: None })
}

/// `browser_console`: entries after `since` at or above `level`, oldest first, at most `limit`.
pub(crate) async fn console(
    p: &ChromiumProvider,
    ctx: &OpContext,
    tab: TabHandle,
    params: &ConsoleParams,
) -> Result<ConsoleResult, ProviderError> {
    prepare(p, tab, Instant::now() + ctx.timeout).await?;
    drain(&p.advanced.rings, &p.state);
    let rings = lock(&p.advanced.rings);
    let Some(ring) = rings.tabs.get(&tab) else { return Err(crate::provider::gone(tab)) };
    let since = params.since.unwrap_or(0);
    let limit = read_limit(params.limit);
    let min = params.level.unwrap_or(ConsoleLevel::Debug);
    let matching = ring.console.iter().filter(|(seq, e)| *seq > since && e.level >= min).cloned();
    let (entries, cursor, more) = page(matching, limit, since, ring.console_seq);
    Ok(ConsoleResult {
        entries,
        cursor,
        truncated: more || ring.lost_after.is_some_and(|(c, _)| c >= since) || ring.console_dropped > since,
        spill: None,
    })
}

/// One page of `matching` (sequence number, item) pairs: at most `limit` items, the cursor to read on from (the last
/// item taken when more match, else everything up to `newest` has been seen), and whether more match.
fn page<T>(mut matching: impl Iterator<Item = (u64, T)>, limit: usize, since: u64, newest: u64) -> (Vec<T>, u64, bool) {
    let taken: Vec<(u64, T)> = matching.by_ref().take(limit).collect();
    let more = matching.next().is_some();
    let cursor = if more { taken.last().map_or(since, |(s, _)| *s) } else { newest.max(since) };
    (taken.into_iter().map(|(_, item)| item).collect(), cursor, more)
}

/// `browser_network`: requests first seen after `since`, filtered, oldest first, at most `limit`.
pub(crate) async fn network(
    p: &ChromiumProvider,
    ctx: &OpContext,
    tab: TabHandle,
    params: &NetworkParams,
) -> Result<NetworkResult, ProviderError> {
    prepare(p, tab, Instant::now() + ctx.timeout).await?;
    drain(&p.advanced.rings, &p.state);
    let rings = lock(&p.advanced.rings);
    let Some(ring) = rings.tabs.get(&tab) else { return Err(crate::provider::gone(tab)) };
    let since = params.since.unwrap_or(0);
    let limit = read_limit(params.limit);
    let shown = |r: &Request| {
        let mut e = r.entry.clone();
        e.url = display_url(&e.url, params.include_query);
        (r.seq, e)
    };
    let matching = ring.network.iter().filter(|r| r.seq > since).map(shown).filter(|(_, e)| {
        params.url_contains.as_deref().is_none_or(|needle| e.url.contains(needle))
            && (!params.failed_only || e.error.is_some() || e.status.is_some_and(|s| s >= 400))
    });
    let (requests, cursor, more) = page(matching, limit, since, ring.network_seq);
    Ok(NetworkResult {
        requests,
        cursor,
        truncated: more || ring.lost_after.is_some_and(|(_, n)| n >= since) || ring.network_dropped > since,
        spill: None,
    })
}

/// Raw protocol methods (`browser_cdp`) that hand back the page's pixels or a rendering of it: a screenshot, a
/// screencast, a PDF, an MHTML snapshot (with the page's images), a headless frame's screenshot, a layer replay.
/// They get what a screenshot gets: refused without an image route (`VISION_UNAVAILABLE`, by the broker) and on a tab
/// that shows an origin the site policy does not authorise (`ORIGIN_NOT_AUTHORISED`, here).
pub const PIXEL_CAPTURE_METHODS: &[&str] = &[
    "Page.captureScreenshot",
    "Page.startScreencast",
    "Page.printToPDF",
    "Page.captureSnapshot",
    "HeadlessExperimental.beginFrame",
    "LayerTree.replaySnapshot",
];

/// Whether a raw protocol method (`Domain.method`) captures the page's pixels ([`PIXEL_CAPTURE_METHODS`]).
#[must_use]
pub fn captures_pixels(method: &str) -> bool {
    PIXEL_CAPTURE_METHODS.contains(&method.trim())
}

/// `browser_cdp`: one command on the tab's page session. The broker has applied the method policy; this refuses
/// what would break browserd's own tracking of the tab, and a pixel-capturing method on a tab that shows (or frames)
/// an origin the site policy does not authorise.
pub(crate) async fn raw_protocol(
    p: &ChromiumProvider,
    ctx: &OpContext,
    tab: TabHandle,
    params: &RawProtocolParams,
) -> Result<RawProtocolResult, ProviderError> {
    if PROTECTED_DISABLE.contains(&params.method.as_str()) {
        return Err(ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            format!("`{}` is refused: browserd relies on that domain for this tab; leave it enabled", params.method),
        ));
    }
    if !params.method.split_once('.').is_some_and(|(d, m)| !d.is_empty() && !m.is_empty()) {
        return Err(ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            format!("`{}` is not a protocol method; use `Domain.method`, e.g. `Page.reload`", params.method),
        ));
    }
    let deadline = Instant::now() + ctx.timeout;
    let lock = p.tab_lock(tab);
    let _g = lock.lock().await;
    let session = prepare(p, tab, deadline).await?;
    // A method that captures the page's pixels is a screenshot: the site policy applies to it as to one, before the
    // command (nothing is sent) and again after it (a page that navigated meanwhile is not handed over either).
    let pixels = captures_pixels(&params.method);
    if pixels {
        screenshot::policy_refusal(p, tab, screenshot::main_frame_url(p, &session, deadline).await?.as_deref())?;
    }
    let args = params.params.clone().map_or_else(|| json!({}), Value::Object);
    let result = p
        .cdp
        // Any raw command may change the page: a write to the extension relay's last-hop gate.
        .call_for_action(Some(&session), &params.method, args, remaining(deadline), Some(&ctx.cancel))
        .await
        .map_err(|e| cdp_err(&e, &format!("sending {}", params.method)))?;
    if pixels {
        screenshot::policy_refusal(p, tab, screenshot::main_frame_url(p, &session, deadline).await?.as_deref())?;
    }
    Ok(RawProtocolResult { result, spill: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(method: &str, params: Value) -> CdpEvent {
        CdpEvent { session: Some(SessionId("s".into())), method: method.to_owned(), params }
    }

    #[test]
    fn urls_lose_their_query_unless_asked() {
        assert_eq!(display_url("http://a.test/x?token=1#f", false), "http://a.test/x");
        assert_eq!(display_url("http://a.test/x?token=1", true), "http://a.test/x?token=1");
        assert_eq!(display_url("data:text/plain;base64,AAAA", false), "data:text/plain,…");
    }

    #[test]
    fn rings_are_bounded_and_requests_follow_their_events() {
        let mut ring = TabRing::default();
        for i in 0..(CONSOLE_RING + 5) {
            ring.apply(&ev(
                "Runtime.consoleAPICalled",
                json!({"type": "log", "args": [{"type": "number", "value": i}]}),
            ));
        }
        assert_eq!(ring.console.len(), CONSOLE_RING);
        assert_eq!(ring.console_dropped, 5);
        assert_eq!(ring.console.front().unwrap().1.text, "5");

        ring.apply(&ev(
            "Network.requestWillBeSent",
            json!({"requestId": "r1", "timestamp": 1.0, "type": "Fetch", "request": {"method": "POST", "url": "http://a/x?q=1"}}),
        ));
        ring.apply(&ev(
            "Network.responseReceived",
            json!({"requestId": "r1", "type": "Fetch", "response": {"status": 404}}),
        ));
        ring.apply(&ev("Network.loadingFinished", json!({"requestId": "r1", "timestamp": 1.25})));
        let r = &ring.network[0].entry;
        assert_eq!(
            (r.method.as_str(), r.kind.as_str(), r.status, r.duration_ms),
            ("POST", "fetch", Some(404), Some(250))
        );
        ring.apply(&ev(
            "Network.requestWillBeSent",
            json!({"requestId": "r2", "timestamp": 2.0, "type": "XHR", "request": {"method": "GET", "url": "http://a/y"}}),
        ));
        ring.apply(&ev(
            "Network.loadingFailed",
            json!({"requestId": "r2", "timestamp": 2.5, "errorText": "net::ERR_FAILED", "canceled": true}),
        ));
        assert_eq!(ring.network[1].entry.error.as_deref(), Some("net::ERR_FAILED (canceled)"));
    }
}
