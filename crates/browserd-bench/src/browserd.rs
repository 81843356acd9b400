//! The browserd observer: browserd's own Chromium provider on a managed Chromium (pipe transport), one browser per
//! run and a fresh tab per page. It times `Provider::observe` plus the JSON serialisation of the `Observation` (the
//! text block of the `browser_observe` tool result is exactly that compact JSON), `Provider::act` clicks with an
//! expectation (the text is the serialised `ActionResult`, as `browser_act` returns it), and a raw CDP round trip
//! (`Runtime.evaluate 1+1` over the pipe). Refs are read back from the observation's line format for the
//! addressability check.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use browserd_cdp::{LaunchOptions, ManagedBrowser, SessionId};
use browserd_chromium::{ChromiumConfig, ChromiumProvider, DomFirst};
use browserd_core::provider::{CreateTab, HandleAllocator, OpContext, Provider, SessionKey, TabHandle};
use browserd_protocol::{ActParams, ActionKind, Dispatch, Expectation, ObserveParams, Outcome, Postcondition};
use serde_json::json;

use crate::observer::{Addressable, Observation, Observer, ObserverError};
use crate::report::TimingRow;

/// Untimed pause before each change of the page in `browserd-cold` and `browserd-changed` runs (and agent-browser's).
pub const COLD_PAUSE: Duration = Duration::from_millis(200);

/// Which observation budget the observer asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// browserd's defaults (120 operable nodes, 80 KiB of content): what an agent gets from `browser_observe {}`.
    Default,
    /// No practical limit (`maxNodes` and `maxBytes` set very high): every operable node of the page in one
    /// observation, to compare addressability and size with a tool that never truncates.
    Unbounded,
}

impl Budget {
    /// The observer's name in the rows.
    pub fn observer_name(self) -> &'static str {
        match self {
            Budget::Default => "browserd",
            Budget::Unbounded => "browserd-unbounded",
        }
    }

    fn params(self) -> ObserveParams {
        match self {
            Budget::Default => ObserveParams::default(),
            Budget::Unbounded => ObserveParams {
                max_nodes: Some(1_000_000),
                max_bytes: Some(64 * 1024 * 1024),
                max_tokens: Some(64 * 1024 * 1024),
                ..Default::default()
            },
        }
    }
}

/// How to run the browserd observer.
#[derive(Debug, Clone)]
pub struct BrowserdOptions {
    /// The Chromium executable (the same one Playwright MCP is pointed at).
    pub chromium: PathBuf,
    /// Observation budget.
    pub budget: Budget,
    /// Deadline of one provider call (navigation, observation, action).
    pub call_timeout: Duration,
    /// How the page is changed before every timed observation (untimed).
    pub change: PageChange,
    /// Whether a tree that must be read whole is built from the DOM snapshot where the page allows it (observer
    /// `browserd-cold-ax`: never, every tree is Chromium's — the comparison for the DOM-first first look).
    pub dom_first: DomFirst,
}

/// What changes on the page between timed observations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PageChange {
    /// Nothing: the observation may reuse what the previous one read (observers `browserd`, `browserd-unbounded`).
    #[default]
    None,
    /// An attribute of `<html>`: the whole page may have changed, so every accessibility tree is read whole
    /// (observer `browserd-cold`, the worst case).
    Whole,
    /// The text of one paragraph, as a counter or a status line changes after an action: only that element's
    /// part of the accessibility tree is read again (observer `browserd-changed`, the common case).
    Small,
}

/// The script that makes `change` on a page before timed run `run` (untimed), or `None` for no change. Every observer
/// with a changed-page variant runs the same script, so their "after a change" columns measure the same change.
pub fn change_script(change: PageChange, run: usize) -> Option<String> {
    match change {
        PageChange::None => None,
        PageChange::Small => Some(format!(
            "(() => {{ const p = document.querySelector('main p, p, li, td, h1, span') || document.body; \
             const t = p.firstChild && p.firstChild.nodeType === 3 ? p.firstChild : p.insertBefore(document.createTextNode(''), p.firstChild); \
             t.data = t.data.replace(/^\\[run \\d+\\] /, '') ; t.data = '[run {run}] ' + t.data; }})()"
        )),
        PageChange::Whole => Some(format!("document.documentElement.dataset.benchRun = '{run}'")),
    }
}

/// browserd's own observation and action loop on a managed Chromium.
pub struct BrowserdObserver {
    name: &'static str,
    params: ObserveParams,
    change: PageChange,
    call_timeout: Duration,
    provider: Arc<ChromiumProvider>,
    browser: Option<ManagedBrowser>,
    /// Holds the profile and `XDG_CONFIG_HOME` until the browser is shut down.
    _scratch: tempfile::TempDir,
}

impl std::fmt::Debug for BrowserdObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserdObserver").field("name", &self.name).finish_non_exhaustive()
    }
}

impl BrowserdObserver {
    /// Launches a headless managed Chromium (1280×720 window, like the Playwright MCP run) and connects the provider.
    pub async fn start(options: &BrowserdOptions) -> Result<BrowserdObserver, ObserverError> {
        let name = match options.change {
            PageChange::Whole if options.dom_first == DomFirst::Never => "browserd-cold-ax",
            PageChange::Whole => "browserd-cold",
            PageChange::Small => "browserd-changed",
            PageChange::None => options.budget.observer_name(),
        };
        let start_error = |reason: String| ObserverError::Start { observer: name.into(), reason };
        if !options.chromium.is_file() {
            return Err(start_error(format!(
                "no Chromium at {}; install Debian's chromium (apt-get install chromium) or set BROWSERD_CHROMIUM",
                options.chromium.display()
            )));
        }
        let scratch = tempfile::Builder::new()
            .prefix("browserd-bench-")
            .tempdir()
            .map_err(|e| start_error(format!("cannot create a temporary profile directory: {e}; check $TMPDIR")))?;
        let launch = LaunchOptions {
            executable: Some(options.chromium.clone()),
            user_data_dir: Some(scratch.path().join("profile")),
            env: vec![("XDG_CONFIG_HOME".into(), scratch.path().join("xdg").display().to_string())],
            window_size: Some((1280, 720)),
            ..LaunchOptions::default()
        };
        eprintln!("browserd-bench: launching a managed Chromium for {name} ({})", options.chromium.display());
        let (provider, browser) =
            ChromiumProvider::launch_managed(launch, HandleAllocator::new(), ChromiumConfig::default())
                .await
                .map_err(|e| start_error(e.to_string()))?;
        provider.set_dom_first(options.dom_first);
        Ok(BrowserdObserver {
            name,
            params: options.budget.params(),
            change: options.change,
            call_timeout: options.call_timeout,
            provider,
            browser: Some(browser),
            _scratch: scratch,
        })
    }

    fn ctx(&self, trace: &str) -> OpContext {
        OpContext::new(SessionKey("bench".into()), self.call_timeout, trace)
    }

    fn page_error(&self, url: &str, reason: impl Into<String>) -> ObserverError {
        // A lost connection means the browser is gone: no later page can be measured with this observer.
        if self.provider_gone() {
            return ObserverError::Gone { observer: self.name.into(), reason: reason.into() };
        }
        ObserverError::Page { observer: self.name.into(), url: url.into(), reason: reason.into() }
    }

    fn provider_gone(&self) -> bool {
        self.browser.as_ref().is_none_or(|b| b.cdp().is_closed())
    }

    /// Opens a fresh tab on `url` and waits for its load: the tab is created on `about:blank`, then browserd's own
    /// `navigate` action loads the page (it returns once the document has loaded). Untimed.
    async fn open(&self, url: &str) -> Result<TabHandle, ObserverError> {
        let info = self
            .provider
            .create_tab(&self.ctx("bench-open"), CreateTab { url: "about:blank".into(), ..Default::default() })
            .await
            .map_err(|e| self.page_error(url, format!("creating a tab: {e}")))?;
        let nav = self
            .provider
            .act(&self.ctx("bench-navigate"), info.tab, &ActParams::new(ActionKind::Navigate).value(url))
            .await;
        match nav {
            Ok(r) if r.outcome == Outcome::Succeeded => Ok(info.tab),
            Ok(r) => {
                self.close_tab(info.tab).await;
                Err(self.page_error(
                    url,
                    format!(
                        "navigating: {:?} {} {}",
                        r.outcome,
                        r.code.unwrap_or_default(),
                        r.message.unwrap_or_default()
                    ),
                ))
            }
            Err(e) => {
                self.close_tab(info.tab).await;
                Err(self.page_error(url, format!("navigating: {e}")))
            }
        }
    }

    async fn close_tab(&self, tab: TabHandle) {
        if let Err(e) = self.provider.close_tab(&self.ctx("bench-close"), tab).await {
            eprintln!("browserd-bench: {}: closing a tab failed: {e}", self.name);
        }
    }

    /// One timed observation: `Provider::observe` and the serialisation into the tool result's text.
    async fn observe_once(
        &self,
        url: &str,
        tab: TabHandle,
    ) -> Result<(String, browserd_protocol::Observation, f64), ObserverError> {
        let started = Instant::now();
        let observation = self
            .provider
            .observe(&self.ctx("bench-observe"), tab, &self.params)
            .await
            .map_err(|e| self.page_error(url, format!("observing: {e}")))?;
        // Exactly what the MCP server sends the model: the broker turns the `Observation` into a JSON value and
        // `browserd-mcp` (`render::observation_text`) makes it one envelope line, the page line (URL, title) and the page text, unescaped (with
        // no output schema declared, the default, that text block is all the result carries).
        let text = serde_json::to_value(&observation)
            .map(|v| browserd_mcp::render::observation_text(&v).unwrap_or_else(|| v.to_string()))
            .map_err(|e| self.page_error(url, format!("serialising the observation: {e}")))?;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok((text, observation, ms))
    }

    async fn observe_open(&self, url: &str, tab: TabHandle, runs: usize) -> Result<Observation, ObserverError> {
        let mut ms_runs = Vec::with_capacity(runs);
        let mut last = None;
        let toucher = if self.change == PageChange::None { None } else { Some(self.attach_page(url).await?) };
        for run in 0..runs.max(1) {
            if let Some(session) = &toucher {
                // An agent's think time (untimed): work an observation leaves running (browserd confirms fresh
                // accessibility trees with one more DOM snapshot after it returns) is done before the next change.
                tokio::time::sleep(COLD_PAUSE).await;
                self.touch_page(url, session, run).await?;
            }
            let (text, observation, ms) = self.observe_once(url, tab).await?;
            ms_runs.push(ms);
            last = Some((text, observation));
        }
        if let (Some(session), Some(browser)) = (&toucher, &self.browser) {
            let detach = json!({"sessionId": session.0});
            let _ = browser.cdp().call(None, "Target.detachFromTarget", detach, self.call_timeout).await;
        }
        let (text, observation) = last.unwrap_or_default();
        let omitted_nodes = observation.truncated.map(|t| t.omitted_nodes);
        Ok(Observation {
            text,
            content: Some(observation.untrusted_content),
            ms_runs,
            omitted_nodes,
            failures: 0,
            phases_p50_ms: None,
        })
    }

    async fn click_open(
        &self,
        url: &str,
        tab: TabHandle,
        role: &str,
        name: &str,
        runs: usize,
    ) -> Result<Observation, ObserverError> {
        let (_, observation, _) = self.observe_once(url, tab).await?;
        let target = find_ref(&observation.untrusted_content, role, name).ok_or_else(|| {
            self.page_error(url, format!("no {role} {name:?} with a ref in the observation (or several of them)"))
        })?;
        let mut ms_runs = Vec::with_capacity(runs);
        let mut failures = 0;
        let mut first_failure = None;
        let mut text = String::new();
        let mut phases = Vec::with_capacity(runs);
        for _ in 0..runs.max(1) {
            // Click with a postcondition: the clicked button has the focus afterwards.
            let params = ActParams::new(ActionKind::Click)
                .target(target.clone())
                .expect(Expectation::State { target: target.clone().into(), state: "focused".into() });
            let started = Instant::now();
            let result = self
                .provider
                .act(&self.ctx("bench-click"), tab, &params)
                .await
                .and_then(|r| serde_json::to_string(&r).map(|json| (r, json)).map_err(|e| serialise_error(&e)));
            ms_runs.push(started.elapsed().as_secs_f64() * 1000.0);
            match result {
                Ok((r, json)) => {
                    phases.push(r.timings.clone());
                    let ok = r.outcome == Outcome::Succeeded
                        && r.postcondition == Postcondition::Passed
                        && r.dispatch == Dispatch::Observed;
                    if !ok {
                        failures += 1;
                        first_failure.get_or_insert_with(|| {
                            format!("{:?}/{:?} {}", r.outcome, r.postcondition, r.message.clone().unwrap_or_default())
                        });
                    }
                    text = json;
                }
                Err(e) => {
                    failures += 1;
                    first_failure.get_or_insert_with(|| e.to_string());
                }
            }
        }
        if let Some(failure) = &first_failure {
            eprintln!("browserd-bench: {}: {failures} of {} clicks failed on {url}; first: {failure}", self.name, runs);
        }
        if failures == ms_runs.len() {
            return Err(
                self.page_error(url, format!("every click failed; first: {}", first_failure.unwrap_or_default()))
            );
        }
        Ok(Observation {
            text,
            content: None,
            ms_runs,
            omitted_nodes: None,
            failures,
            phases_p50_ms: Some(phase_medians(&phases)),
        })
    }

    /// A CDP session of the bench's own on the page open at `url` (the only page tab of this browser).
    async fn attach_page(&self, url: &str) -> Result<SessionId, ObserverError> {
        let Some(browser) = &self.browser else { return Err(self.page_error(url, "the browser is shut down")) };
        let cdp = browser.cdp();
        let targets = cdp
            .call(None, "Target.getTargets", json!({}), self.call_timeout)
            .await
            .map_err(|e| self.page_error(url, format!("Target.getTargets: {e}")))?;
        let target = targets["targetInfos"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["type"] == "page" && t["url"].as_str() == Some(url))
            .and_then(|t| t["targetId"].as_str())
            .ok_or_else(|| self.page_error(url, "no page target with this URL to change between runs"))?
            .to_owned();
        let attached = cdp
            .call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), self.call_timeout)
            .await
            .map_err(|e| self.page_error(url, format!("Target.attachToTarget: {e}")))?;
        Ok(SessionId(attached["sessionId"].as_str().unwrap_or_default().to_owned()))
    }

    /// Makes the observer's change on the page (untimed; see [`change_script`]).
    async fn touch_page(&self, url: &str, session: &SessionId, run: usize) -> Result<(), ObserverError> {
        let Some(browser) = &self.browser else { return Err(self.page_error(url, "the browser is shut down")) };
        let Some(expression) = change_script(self.change, run) else { return Ok(()) };
        browser
            .cdp()
            .call(Some(session), "Runtime.evaluate", json!({"expression": expression}), self.call_timeout)
            .await
            .map_err(|e| self.page_error(url, format!("changing the page between runs: {e}")))?;
        Ok(())
    }

    /// `runs` raw CDP round trips: `Runtime.evaluate 1+1` on a page session of its own, over the pipe, through
    /// browserd's connection task (`Cdp::call`), no provider logic.
    pub async fn cdp_round_trips(&self, runs: usize) -> Result<TimingRow, ObserverError> {
        let gone =
            |reason: String| ObserverError::Page { observer: self.name.into(), url: "about:blank".into(), reason };
        let Some(browser) = &self.browser else { return Err(gone("the browser is shut down".into())) };
        let cdp = browser.cdp();
        let timeout = self.call_timeout;
        let created = cdp
            .call(None, "Target.createTarget", json!({"url": "about:blank", "background": true}), timeout)
            .await
            .map_err(|e| gone(format!("Target.createTarget: {e}")))?;
        let target = created["targetId"].as_str().unwrap_or_default().to_owned();
        let attached = cdp
            .call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), timeout)
            .await
            .map_err(|e| gone(format!("Target.attachToTarget: {e}")))?;
        let session = SessionId(attached["sessionId"].as_str().unwrap_or_default().to_owned());
        let eval = || async {
            let v = cdp
                .call(Some(&session), "Runtime.evaluate", json!({"expression": "1+1", "returnByValue": true}), timeout)
                .await?;
            if v["result"]["value"] == 2 {
                Ok(())
            } else {
                Err(browserd_cdp::CdpError::InvalidResponse { detail: format!("1+1 evaluated to {v}") })
            }
        };
        // Warm up the session (first evaluation creates the execution context).
        eval().await.map_err(|e| gone(format!("Runtime.evaluate: {e}")))?;
        let row = crate::report::measure("cdp.roundtrip", Some(runs), runs, eval).await;
        let _ = cdp.call(None, "Target.closeTarget", json!({"targetId": target}), timeout).await;
        row.ok_or_else(|| gone("no timings (runs = 0)".into()))
    }
}

#[async_trait]
impl Observer for BrowserdObserver {
    fn name(&self) -> &str {
        self.name
    }

    async fn observe(&mut self, url: &str, runs: usize) -> Result<Observation, ObserverError> {
        let tab = self.open(url).await?;
        let result = self.observe_open(url, tab, runs).await;
        self.close_tab(tab).await;
        result
    }

    async fn click(&mut self, url: &str, role: &str, name: &str, runs: usize) -> Result<Observation, ObserverError> {
        let tab = self.open(url).await?;
        let result = self.click_open(url, tab, role, name, runs).await;
        self.close_tab(tab).await;
        result
    }

    fn addressable(&self, text: &str) -> Vec<Addressable> {
        parse_refs(&observation_content(text))
    }

    async fn timings(&mut self, runs: usize) -> Vec<Result<TimingRow, ObserverError>> {
        // The raw round trip is a property of the connection, not of the budget: measured once, by `browserd`.
        if self.name != Budget::Default.observer_name() {
            return Vec::new();
        }
        vec![self.cdp_round_trips(runs).await]
    }

    async fn close(mut self: Box<Self>) {
        if let Some(browser) = self.browser.take()
            && let Err(e) = browser.shutdown().await
        {
            eprintln!("browserd-bench: {}: the browser did not shut down cleanly: {e}", self.name);
        }
    }
}

/// The median of each phase over `runs` (the phases as `PhaseTimings` names them in JSON).
pub(crate) fn phase_medians(runs: &[browserd_protocol::PhaseTimings]) -> std::collections::BTreeMap<String, f64> {
    let mut by_phase: std::collections::BTreeMap<String, Vec<f64>> = std::collections::BTreeMap::new();
    for t in runs {
        if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(t) {
            for (phase, ms) in map {
                by_phase.entry(phase).or_default().extend(ms.as_f64());
            }
        }
    }
    by_phase
        .into_iter()
        .filter_map(|(phase, samples)| Some((phase, crate::stats::Summary::of(&samples)?.p50_ms)))
        .collect()
}

fn serialise_error(e: &serde_json::Error) -> browserd_core::provider::ProviderError {
    browserd_core::provider::ProviderError::new(
        browserd_core::provider::ProviderErrorKind::Internal,
        format!("the action result could not be serialised: {e}"),
    )
}

/// The `untrustedContent` of a serialised `Observation`; `text` itself when it is not one (the line rendering, or
/// the MCP server's text of an observation, whose envelope line holds no ref).
pub fn observation_content(text: &str) -> String {
    match serde_json::from_str::<browserd_protocol::Observation>(text) {
        Ok(o) => o.untrusted_content,
        Err(_) => text.to_owned(),
    }
}

/// One operable line of the line format: `e12 button "Delete" (in …)`, `f2e5 textbox "Inner input"`,
/// `e3 region "Inbox":` (a container with a ref). Returns the ref, the role and the name.
pub fn parse_line(line: &str) -> Option<(String, String, String)> {
    let (node_ref, rest) = browserd_protocol::split_ref(line)?;
    let role_len = rest.find([' ', ':']).unwrap_or(rest.len());
    let role = &rest[..role_len];
    if role.is_empty() {
        return None;
    }
    let name = match rest[role_len..].strip_prefix(" \"") {
        Some(quoted) => quoted_prefix(quoted)?,
        None => String::new(),
    };
    Some((node_ref.to_owned(), role.to_owned(), name))
}

/// Every element `untrustedContent` (the line rendering) gives a ref to. `clickable` and `focusable` (operable
/// elements without an ARIA role) are reported as `generic`, the ground truth's word for them.
pub fn parse_refs(content: &str) -> Vec<Addressable> {
    content
        .lines()
        .filter_map(parse_line)
        .map(|(_, role, name)| {
            let role = match role.as_str() {
                "clickable" | "focusable" => "generic".to_owned(),
                _ => role,
            };
            Addressable { role, name }
        })
        .collect()
}

/// The ref of the only line with this role and exact name, if exactly one has it.
pub fn find_ref(content: &str, role: &str, name: &str) -> Option<String> {
    let mut found = content.lines().filter_map(parse_line).filter(|(_, r, n)| r == role && n == name);
    let first = found.next()?;
    if found.next().is_some() {
        return None;
    }
    Some(first.0)
}

/// The name in a quoted string whose opening quote was consumed: `\"` stands for `"`, the first bare `"` ends it.
fn quoted_prefix(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'"') => {
                chars.next();
                out.push('"');
            }
            '"' => return Some(out),
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(role: &str, name: &str) -> Addressable {
        Addressable { role: role.into(), name: name.into() }
    }

    #[test]
    fn parses_refs_roles_names_and_states() {
        let content = "# Clickables\ne1 clickable \"Open the billing card\"\n\
                       Terms:\ne2 focusable \"Focusable panel\"\ntree \"Files\":\n e4 treeitem \"Documents\" branch \
                       collapsed\n e12 button \"Delete\" (in \"Invoice 1042\" in \"Inbox\")\n\
                       iframe \"Same-origin frame\" [f2]:\n f2e5 textbox \"Inner input\"\n\
                       e6 link \"Settings\" -> #settings-panel\ne7 button \"Say \\\"hi\\\"\"\n\
                       e8 region \"Inbox\":\ne9 textbox type=email\nx1 button \"Not a ref\"\n\
                       e10\ntext: e11 button \"Page text\"\n[e12] button \"Old format\"";
        assert_eq!(
            parse_refs(content),
            vec![
                a("generic", "Open the billing card"),
                a("generic", "Focusable panel"),
                a("treeitem", "Documents"),
                a("button", "Delete"),
                a("textbox", "Inner input"),
                a("link", "Settings"),
                a("button", "Say \"hi\""),
                a("region", "Inbox"),
                a("textbox", ""),
            ]
        );
        assert_eq!(parse_line(" f2e5 textbox \"Inner input\"").unwrap().0, "f2e5");
    }

    #[test]
    fn find_ref_needs_exactly_one_match() {
        let content = "e1 button \"Save\"\ne2 button \"Delete\" (in \"A\")\ne3 button \"Delete\"";
        assert_eq!(find_ref(content, "button", "Save").as_deref(), Some("e1"));
        assert_eq!(find_ref(content, "button", "Delete"), None);
        assert_eq!(find_ref(content, "link", "Save"), None);
    }

    #[test]
    fn content_is_read_from_the_serialised_observation() {
        let observation = browserd_protocol::Observation {
            url: "http://127.0.0.1/".into(),
            untrusted_content: "e1 button \"Go\"".into(),
            ..Default::default()
        };
        let text = serde_json::to_string(&observation).unwrap();
        assert_eq!(parse_refs(&observation_content(&text)), vec![a("button", "Go")]);
        // Plain line rendering is taken as it is.
        assert_eq!(observation_content("e2 link \"Home\""), "e2 link \"Home\"");
    }
}
