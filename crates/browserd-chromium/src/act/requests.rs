//! Requests an action started: the `Network` domain is enabled on the tab's page session and those of its
//! out-of-process frames (a payment form's iframe) for the action's window,
//! the fetch/XHR requests the page begins after the input are tracked until they end, and the settle waits for their
//! answer (bounded), so an effect that lands after a server round trip (a save, a search) is seen rather than
//! reported as `effects.none`; one still open at the bound is reported in `effects.pending`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use browserd_cdp::SessionId;
use futures_util::future::join_all;
use serde_json::{Value, json};

use super::run::Run;
use super::settle::QUIET_EXPECTING_MS;

/// Longest wait for the requests an action started, after the DOM went quiet.
const REQUEST_WAIT: Duration = Duration::from_secs(3);

/// How often the requests are looked at while waiting.
const POLL: Duration = Duration::from_millis(10);

/// At most this many open requests are kept (an action cancelled mid-way, by Stop, leaves the tab watched until the
/// next action begins: what it keeps meanwhile stays bounded).
const MAX_OPEN: usize = 256;

/// The fetch/XHR requests of a tab's page and frame sessions while an action watches (`Network` enabled for it).
#[derive(Debug, Default)]
pub(crate) struct Requests {
    /// An action is watching: events are kept.
    pub(crate) watching: bool,
    /// Requests begun and not ended: request id → (`POST /api/save`, when it began).
    pub(crate) open: HashMap<String, (String, Instant)>,
}

/// Keeps a `Network` event of the tab's page or frame sessions while an action watches.
pub(crate) fn apply(r: &mut Requests, method: &str, params: &Value) {
    if !r.watching {
        return;
    }
    let Some(id) = params["requestId"].as_str() else { return };
    match method {
        "Network.requestWillBeSent" => {
            // Only what a script asked for: documents are navigations (waited for as loads), and images, styles,
            // fonts or an event stream's connection are not the answer to an action.
            if !matches!(params["type"].as_str(), Some("Fetch" | "XHR")) || r.open.len() >= MAX_OPEN {
                return;
            }
            let req = &params["request"];
            let method = req["method"].as_str().unwrap_or("GET");
            r.open.insert(
                id.to_owned(),
                (format!("{method} {}", path_of(req["url"].as_str().unwrap_or_default())), Instant::now()),
            );
        }
        "Network.loadingFinished" | "Network.loadingFailed" => {
            r.open.remove(id);
        }
        _ => {}
    }
}

/// A URL without its query and fragment, which may hold what the page put there (a token, a search):
/// `https://app.test/api/save`.
fn path_of(url: &str) -> String {
    let url = &url[..url.find(['?', '#']).unwrap_or(url.len())];
    match url.find("://") {
        Some(i) if !url[i + 3..].contains('/') => format!("{url}/"),
        _ => url.to_owned(),
    }
}

impl Run<'_> {
    /// Starts watching the requests of the tab's page session and of its out-of-process frames' sessions: `Network`
    /// enabled on each. Returns the sessions to disable it on after the action: not the page session when the
    /// advanced tier collects the tab's events (`browser_network`), whose collection keeps it on.
    pub(super) async fn watch_requests(&self) -> Vec<SessionId> {
        let collected = self.p.advanced.collecting(self.tab);
        let mut sessions = vec![self.session.clone()];
        {
            let mut st = self.p.st();
            let Some(t) = st.tabs.get_mut(&self.tab) else { return Vec::new() };
            t.requests.watching = true;
            t.requests.open.clear();
            sessions.extend(t.children.keys().cloned());
        }
        let params = json!({"maxTotalBufferSize": 0, "maxResourceBufferSize": 0});
        let enabled =
            join_all(sessions.iter().map(|s| self.p.call(Some(s), "Network.enable", params.clone(), self.deadline)))
                .await;
        sessions
            .into_iter()
            .zip(enabled)
            .filter(|(s, r)| r.is_ok() && !(collected && *s == self.session))
            .map(|(s, _)| s)
            .collect()
    }

    /// Stops watching: the kept requests are dropped and `Network` is disabled again on the sessions this action
    /// enabled it on (the commands are queued before the tab is free for the next action, their answers not waited for).
    pub(super) async fn unwatch_requests(&self) {
        if let Some(t) = self.p.st().tabs.get_mut(&self.tab) {
            t.requests.watching = false;
            t.requests.open.clear();
        }
        for s in &self.network_enabled {
            if let Ok(q) = self.p.cdp.enqueue(Some(s), "Network.disable", json!({}), Duration::from_millis(200)).await {
                // A command whose answer nobody waits for is not sent.
                drop(tokio::spawn(q.answer()));
            }
        }
    }

    /// Waits (up to [`REQUEST_WAIT`] and the deadline) for the requests begun after `input` and before now to end,
    /// then for the DOM to settle on their answer. Returns what is still open at the bound (`POST /api/save`).
    pub(super) async fn await_requests(&mut self, input: Instant) -> Vec<String> {
        let ids: Vec<String> = {
            let st = self.p.st();
            let Some(t) = st.tabs.get(&self.tab) else { return Vec::new() };
            t.requests.open.iter().filter(|(_, (_, at))| *at >= input).map(|(id, _)| id.clone()).collect()
        };
        if ids.is_empty() {
            return Vec::new();
        }
        let bound = (Instant::now() + REQUEST_WAIT).min(self.deadline);
        loop {
            let still: Vec<String> = {
                let st = self.p.st();
                let Some(t) = st.tabs.get(&self.tab) else { return Vec::new() };
                ids.iter().filter_map(|id| t.requests.open.get(id).map(|(what, _)| what.clone())).collect()
            };
            if still.is_empty() {
                break;
            }
            if Instant::now() >= bound || self.dialog_open().is_some() || self.link_lost().is_some() {
                return still;
            }
            tokio::time::sleep(POLL).await;
        }
        // The answer arrived: the page renders it (a fetch's `then`, a React update) before the DOM is quiet again.
        self.settle(QUIET_EXPECTING_MS).await;
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_script_requests_begun_while_watching_are_kept_until_they_end() {
        let mut r = Requests::default();
        let sent = |id: &str, kind: &str, url: &str| json!({"requestId": id, "type": kind, "request": {"method": "POST", "url": url}});
        apply(&mut r, "Network.requestWillBeSent", &sent("1", "Fetch", "http://a.test/api/save?token=x"));
        assert!(r.open.is_empty(), "not watching");
        r.watching = true;
        apply(&mut r, "Network.requestWillBeSent", &sent("1", "Fetch", "http://a.test/api/save?token=x#f"));
        apply(&mut r, "Network.requestWillBeSent", &sent("2", "XHR", "http://a.test/search"));
        apply(&mut r, "Network.requestWillBeSent", &sent("3", "Image", "http://a.test/logo.png"));
        apply(&mut r, "Network.requestWillBeSent", &sent("4", "Document", "http://a.test/next"));
        let mut open: Vec<&str> = r.open.values().map(|(w, _)| w.as_str()).collect();
        open.sort_unstable();
        assert_eq!(open, ["POST http://a.test/api/save", "POST http://a.test/search"]);
        apply(&mut r, "Network.loadingFinished", &json!({"requestId": "1"}));
        apply(&mut r, "Network.loadingFailed", &json!({"requestId": "2"}));
        assert!(r.open.is_empty());
    }

    #[test]
    fn a_url_loses_its_query_and_fragment() {
        assert_eq!(path_of("https://a.test/api/save?token=secret#x"), "https://a.test/api/save");
        assert_eq!(path_of("https://a.test?q=1"), "https://a.test/");
        assert_eq!(path_of("blob:abc"), "blob:abc");
    }
}
