//! Pages that lie to scripts in their own world. browserd's actionability checks, hit tests, scroll search, select
//! and read-backs run in its isolated world, so none of the lies of `/hostile-actions.html` (and its cross-site frame)
//! is believed; the page's own counters, kept with the real built-ins, show what really happened. And where the
//! isolated world cannot be had, an action fails closed instead of asking the page's world: on a real Chromium behind
//! a CDP connection that refuses browserd's world.
mod common;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use browserd_cdp::{Cdp, ConnectionOptions, LaunchOptions, ManagedBrowser, Transport, TransportError, WsTransport};
use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{CreateTab, HandleAllocator, OpContext, Provider, ProviderKind, SessionKey, TabHandle};
use browserd_protocol::tools::RawProtocolParams;
use browserd_protocol::{
    ActParams, ActionKind, ActionResult, Dispatch, Expectation, Observation, ObserveParams, Outcome, Postcondition,
    ScrollDirection, TabId,
};
use browserd_test_support::fixtures::FixtureSite;
use common::{Page, ref_of};
use serde_json::{Value, json};

fn text(t: &str) -> Expectation {
    Expectation::TextPresent { text: t.into() }
}

fn not_actionable(r: &ActionResult) {
    assert_eq!(
        (r.outcome, r.code.as_deref(), r.dispatch),
        (Outcome::Failed, Some("NOT_ACTIONABLE"), Dispatch::NotDispatched),
        "{r:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_covered_button_made_to_look_free_is_refused_naming_the_real_cover() {
    // The page patches `elementFromPoint`, the `parentNode` getter, `getBoundingClientRect`, `getComputedStyle` and
    // `textContent` so that the promo over "Publish" looks absent, part of the button, or harmless.
    let page = Page::open("/hostile-actions.html").await;
    let o = page.observe().await;
    let publish = ref_of(&o, "button \"Publish\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&publish).timeout_ms(3000)).await;
    not_actionable(&r);
    let cover = r.covering.clone().expect("the covering element is named");
    // Its name is read in browserd's world too: the page's `textContent` says "Nothing here".
    assert!(cover.name.contains("Limited offer"), "{cover:?}");
    assert!(r.message.as_deref().unwrap().contains(cover.node.as_str()), "{r:#?}");
    // The cover's ref is real: acting on it reaches the promo (and only it).
    let r =
        page.act(ActParams::new(ActionKind::Click).target(cover.node.as_str()).expect(text("promo clicks: 1"))).await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    let o = page.observe().await;
    assert!(o.untrusted_content.contains("Publish clicks: 0; promo clicks: 1"), "{}", o.untrusted_content);
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_covered_button_in_a_cross_site_frame_is_refused_naming_the_real_cover() {
    // The frame runs in its own process and session; its veil claims (through `parentNode` and `elementFromPoint`)
    // to be part of the button under it.
    let page = Page::open("/hostile-actions.html").await;
    let o = page.observe().await;
    let confirm = ref_of(&o, "button \"Confirm order\"");
    assert!(confirm.starts_with('f'), "the button is in a frame: {confirm}");
    let r = page.act(ActParams::new(ActionKind::Click).target(&confirm).timeout_ms(3000)).await;
    not_actionable(&r);
    let cover = r.covering.clone().expect("the covering element in the frame is named");
    assert_eq!(cover.name, "Sponsored veil", "{cover:?}");
    let o = page.observe().await;
    assert!(
        o.untrusted_content.contains("Confirm clicks: 0; veil clicks: 0"),
        "nothing reached the frame: {}",
        o.untrusted_content
    );
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_button_made_to_look_visible_is_refused() {
    let page = Page::open("/hostile-actions.html").await;
    let o = page.observe().await;
    let ghost = ref_of(&o, "button \"Delete all\"");
    let hide = ref_of(&o, "button \"Hide the delete button\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&hide)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    // `visibility: hidden`, while the page's `getComputedStyle` says visible and its `elementFromPoint` returns the
    // button for the point (a click there lands on the box behind it).
    let r = page.act(ActParams::new(ActionKind::Click).target(&ghost).timeout_ms(3000)).await;
    not_actionable(&r);
    assert!(r.message.as_deref().unwrap().contains("hidden"), "{r:#?}");
    let o = page.observe().await;
    assert!(
        o.untrusted_content.contains("trap clicks: 0; delete clicks: 0"),
        "nothing was clicked: {}",
        o.untrusted_content
    );
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_button_made_to_look_enabled_is_refused() {
    // The page's `disabled` getter and `closest` say it is enabled; a click on it would do nothing, so taking their
    // word would report a click that did nothing as a success.
    let page = Page::open("/hostile-actions.html").await;
    let o = page.observe().await;
    let archive = ref_of(&o, "button \"Archive\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&archive).timeout_ms(3000)).await;
    not_actionable(&r);
    assert!(r.message.as_deref().unwrap().contains("disabled"), "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_select_that_lies_is_set_and_verified_by_the_truth() {
    // The page makes choosing an option a no-op and `select.value` read back whatever was asked for.
    let page = Page::open("/hostile-actions.html").await;
    let o = page.observe().await;
    let plan = ref_of(&o, "combobox \"Plan\"");
    let r = page.act(ActParams::new(ActionKind::Select).target(&plan).value("Pro")).await;
    assert_eq!((r.outcome, r.dispatch, r.code.as_deref()), (Outcome::Succeeded, Dispatch::Observed, None), "{r:#?}");
    assert_eq!(r.effects.value.as_deref(), Some("pro"), "{r:#?}");
    // The page's own record (kept by its change handler with the real getter), read from the accessibility tree: not
    // through any script of browserd's, whose word alone could be a lie believed twice.
    let o = page.observe().await;
    assert!(o.untrusted_content.contains("Plan (truth): pro;"), "{}", o.untrusted_content);
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_field_that_lies_is_typed_into_and_verified_by_the_truth() {
    // The note reads "forged", its `select()` does nothing and `setSelectionRange` puts any caret at the start.
    let page = Page::open("/hostile-actions.html").await;
    let o = page.observe().await;
    let note = ref_of(&o, "textbox \"Note\"");
    // Typing appends at the real end of the text (the page's caret would put it first, and the read-back would
    // still see a longer text).
    let r = page.act(ActParams::new(ActionKind::Type).target(&note).value(" sharp")).await;
    assert_eq!((r.outcome, r.dispatch), (Outcome::Succeeded, Dispatch::Observed), "{r:#?}");
    assert_eq!(r.effects.value.as_deref(), Some("Meeting at noon sharp"), "{r:#?}");
    let o = page.observe().await;
    assert!(o.untrusted_content.contains("note (truth): Meeting at noon sharp"), "{}", o.untrusted_content);
    // Fill replaces the real text, and the value expectation reads the truth.
    let r = page
        .act(
            ActParams::new(ActionKind::Fill)
                .target(&note)
                .value("Rescheduled")
                .expect(Expectation::Value { target: note.clone().into(), equals: "Rescheduled".into() }),
        )
        .await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    assert_eq!(r.effects.value.as_deref(), Some("Rescheduled"), "{r:#?}");
    let o = page.observe().await;
    assert!(
        o.untrusted_content.contains("note (truth): Rescheduled"),
        "the page's own record agrees: {}",
        o.untrusted_content
    );
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrolling_until_a_text_finds_the_real_text() {
    // The page's `String.prototype.includes` finds every text anywhere, and its `scrollIntoView` does nothing.
    let page = Page::open("/hostile-actions.html").await;
    page.observe().await;
    let mut p = ActParams::new(ActionKind::Scroll);
    p.direction = Some(ScrollDirection::Down);
    p.until_text = Some("End of the hostile page".into());
    let r = page.act(p).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(r.message.as_deref().unwrap_or_default().contains("is on screen"), "{r:#?}");
    // The browser's own layout says the page is scrolled to its end (where the text is)...
    let raw = RawProtocolParams { tab: TabId(page.tab.0), method: "Page.getLayoutMetrics".into(), params: None };
    let m = common::env().provider.raw_protocol(&common::ctx(), page.tab, &raw).await.unwrap().result;
    let f = |v: &Value| v.as_f64().unwrap();
    let (top, height) = (f(&m["cssVisualViewport"]["pageY"]), f(&m["cssVisualViewport"]["clientHeight"]));
    assert!(top + height >= f(&m["cssContentSize"]["height"]) - 2.0, "not scrolled to the end: {m}");
    // ... and the page itself saw the scroll and sees its end on screen.
    let r = page.act(ActParams::new(ActionKind::Wait).expect(text("end in view: yes"))).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    page.close().await;
}

// --- A real Chromium behind a connection that can refuse browserd's isolated world. ---

/// Everything passes.
const OPEN: u8 = 0;
/// browserd's world is out of reach: `Page.createIsolatedWorld` for it is refused (as a restricted relay or browser
/// might), and every call into an execution context fails as if its document were gone.
const REFUSED: u8 = 1;
/// Like `OPEN` until the first `Input.*` command, then `REFUSED`.
const REFUSED_AFTER_INPUT: u8 = 2;

/// A transport between the provider and the browser that answers some calls itself, and logs every call sent.
struct Gate<T> {
    inner: T,
    mode: Arc<AtomicU8>,
    log: Arc<Mutex<Vec<Value>>>,
    answers: VecDeque<String>,
}

impl<T> Gate<T> {
    fn refuse(&mut self, call: &Value, message: &str) {
        let mut reply = json!({"id": call["id"], "error": {"code": -32000, "message": message}});
        if let Some(s) = call.get("sessionId") {
            reply["sessionId"] = s.clone();
        }
        self.answers.push_back(reply.to_string());
    }
}

#[async_trait]
impl<T: Transport> Transport for Gate<T> {
    async fn send(&mut self, message: String) -> Result<(), TransportError> {
        let call: Value = serde_json::from_str(&message).unwrap_or_default();
        self.log.lock().unwrap().push(call.clone());
        let method = call["method"].as_str().unwrap_or_default();
        let mode = self.mode.load(Ordering::SeqCst);
        let ours = method == "Page.createIsolatedWorld" && call["params"]["worldName"] == "browserd-act";
        let in_context =
            call["params"].get("executionContextId").is_some() || call["params"].get("contextId").is_some();
        if mode == REFUSED && ours {
            self.refuse(&call, "Could not create isolated world (refused by the test's connection)");
            return Ok(());
        }
        if mode == REFUSED && in_context {
            self.refuse(&call, "Cannot find context with specified id");
            return Ok(());
        }
        if mode == REFUSED_AFTER_INPUT && method.starts_with("Input.") {
            self.mode.store(REFUSED, Ordering::SeqCst);
        }
        self.inner.send(message).await
    }

    async fn recv(&mut self) -> Result<String, TransportError> {
        if let Some(a) = self.answers.pop_front() {
            return Ok(a);
        }
        self.inner.recv().await
    }
}

fn ctx() -> OpContext {
    OpContext::new(SessionKey("gate".into()), Duration::from_secs(20), "trace-gate")
}

/// The port of a browser started with `--remote-debugging-port=0`.
async fn devtools_port(profile: &Path) -> u16 {
    let file = profile.join("DevToolsActivePort");
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(&file)
            && let Some(port) = text.lines().next().and_then(|l| l.trim().parse().ok())
        {
            return port;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} did not appear", file.display());
}

struct Gated {
    p: Arc<ChromiumProvider>,
    mode: Arc<AtomicU8>,
    log: Arc<Mutex<Vec<Value>>>,
    site: FixtureSite,
    tab: TabHandle,
    _browser: ManagedBrowser,
    _root: tempfile::TempDir,
}

impl Gated {
    /// A managed Chromium reached through a [`Gate`], with one tab on `path` of a fixture site of its own.
    async fn open(path: &str) -> Gated {
        let root = tempfile::tempdir().unwrap();
        let profile = root.path().join("profile");
        let opts = LaunchOptions {
            user_data_dir: Some(profile.clone()),
            env: vec![("XDG_CONFIG_HOME".into(), root.path().join("xdg").display().to_string())],
            extra_args: vec!["--remote-debugging-port=0".into(), "--remote-allow-origins=*".into()],
            window_size: Some((1000, 800)),
            ..LaunchOptions::default()
        };
        let browser = ManagedBrowser::launch(opts).await.unwrap();
        let endpoint = format!("http://127.0.0.1:{}", devtools_port(&profile).await);
        let ws = WsTransport::connect(&browserd_cdp::resolve_ws_url(&endpoint).await.unwrap()).await.unwrap();
        let (mode, log) = (Arc::new(AtomicU8::new(OPEN)), Arc::new(Mutex::new(Vec::new())));
        let gate = Gate { inner: ws, mode: mode.clone(), log: log.clone(), answers: VecDeque::new() };
        let cdp = Cdp::spawn(gate, ConnectionOptions::default());
        let p = ChromiumProvider::new(cdp, ProviderKind::Remote, HandleAllocator::new(), ChromiumConfig::default());
        p.connect(&ctx()).await.unwrap();
        let site = FixtureSite::start().await.unwrap();
        let tab =
            p.create_tab(&ctx(), CreateTab { url: "about:blank".into(), ..Default::default() }).await.unwrap().tab;
        let g = Gated { p, mode, log, site, tab, _browser: browser, _root: root };
        let r = g.act(ActParams::new(ActionKind::Navigate).value(g.site.url(path))).await;
        assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
        g
    }

    async fn act(&self, p: ActParams) -> ActionResult {
        self.p.act(&ctx(), self.tab, &p).await.unwrap()
    }

    async fn observe(&self) -> Observation {
        self.p.observe(&ctx(), self.tab, &ObserveParams::default()).await.unwrap()
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }
}

/// A failed action that sent nothing because browserd's world could not be had, saying what to do next.
fn refused_for_want_of_the_world(r: &ActionResult) {
    assert_eq!(
        (r.outcome, r.dispatch, r.code.as_deref()),
        (Outcome::Failed, Dispatch::NotDispatched, Some("ACTION_FAILED")),
        "{r:#?}"
    );
    let m = r.message.as_deref().unwrap();
    assert!(m.contains("isolated world") && m.contains("nothing was sent") && m.contains("retry"), "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_script_of_an_action_runs_in_browserds_world() {
    let g = Gated::open("/hostile-actions.html").await;
    let o = g.observe().await;
    g.log.lock().unwrap().clear();
    // Every kind of step that runs a script: actionability with a hit test (refused and passed), select, fill and
    // type with their read-backs, check of expectations, a scroll with its viewport and text search.
    let publish = ref_of(&o, "button \"Publish\"");
    not_actionable(&g.act(ActParams::new(ActionKind::Click).target(&publish).timeout_ms(3000)).await);
    let hide = ref_of(&o, "button \"Hide the delete button\"");
    assert_eq!(g.act(ActParams::new(ActionKind::Click).target(&hide)).await.outcome, Outcome::Succeeded);
    let plan = ref_of(&o, "combobox \"Plan\"");
    assert_eq!(g.act(ActParams::new(ActionKind::Select).target(&plan).value("Team")).await.outcome, Outcome::Succeeded);
    let note = ref_of(&o, "textbox \"Note\"");
    let r = g
        .act(
            ActParams::new(ActionKind::Fill)
                .target(&note)
                .value("Later")
                .expect(Expectation::Value { target: note.clone().into(), equals: "Later".into() })
                .expect(text("note (truth): Later")),
        )
        .await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    let mut p = ActParams::new(ActionKind::Scroll);
    p.direction = Some(ScrollDirection::Down);
    p.until_text = Some("End of the hostile page".into());
    assert_eq!(g.act(p).await.outcome, Outcome::Succeeded);
    let mut p = ActParams::new(ActionKind::Scroll);
    p.direction = Some(ScrollDirection::Up);
    assert_eq!(g.act(p).await.outcome, Outcome::Succeeded);
    let log = g.log.lock().unwrap().clone();
    let main_world: Vec<&Value> = log
        .iter()
        .filter(|c| match c["method"].as_str().unwrap_or_default() {
            "DOM.resolveNode" => c["params"].get("executionContextId").is_none(),
            // The observation's readiness probe is the one evaluation outside a context (not an action's).
            "Runtime.evaluate" => {
                c["params"].get("contextId").is_none()
                    && c["params"]["expression"] != "[document.readyState, location.href]"
            }
            _ => false,
        })
        .collect();
    assert!(main_world.is_empty(), "calls into the page's own world: {main_world:#?}");
    let worlds = log.iter().filter(|c| c["params"].get("executionContextId").is_some()).count();
    assert!(worlds > 0, "nodes were resolved into browserd's world");
    g.p.close_tab(&ctx(), g.tab).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_its_world_an_action_fails_closed_before_any_input() {
    let g = Gated::open("/hostile-actions.html").await;
    let o = g.observe().await;
    g.set(REFUSED);
    // On this page, asking the page's world instead would click through the promo, forge the select and the field.
    let publish = ref_of(&o, "button \"Publish\"");
    refused_for_want_of_the_world(&g.act(ActParams::new(ActionKind::Click).target(&publish)).await);
    let plan = ref_of(&o, "combobox \"Plan\"");
    refused_for_want_of_the_world(&g.act(ActParams::new(ActionKind::Select).target(&plan).value("Pro")).await);
    let note = ref_of(&o, "textbox \"Note\"");
    refused_for_want_of_the_world(&g.act(ActParams::new(ActionKind::Fill).target(&note).value("x")).await);
    let mut p = ActParams::new(ActionKind::Scroll);
    p.direction = Some(ScrollDirection::Down);
    refused_for_want_of_the_world(&g.act(p).await);
    // A text that is there cannot be confirmed, and one that is there is not reported gone: both unverified.
    let r = g.act(ActParams::new(ActionKind::Wait).expect(text("Publish clicks: 0")).timeout_ms(500)).await;
    assert_eq!(
        (r.outcome, r.postcondition, r.code.as_deref()),
        (Outcome::Failed, Postcondition::Unverified, Some("ACTION_FAILED")),
        "{r:#?}"
    );
    let gone = Expectation::Disappears { target: None, text: Some("Publish clicks: 0".into()) };
    let r = g.act(ActParams::new(ActionKind::Wait).expect(gone).timeout_ms(500)).await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Failed, Postcondition::Unverified), "{r:#?}");
    let inputs = g.log.lock().unwrap().iter().filter(|c| c["method"].as_str().unwrap().starts_with("Input.")).count();
    assert_eq!(inputs, 0, "no input was sent");
    g.set(OPEN);
    let o = g.observe().await;
    assert!(o.untrusted_content.contains("Publish clicks: 0; promo clicks: 0"), "{}", o.untrusted_content);
    assert!(
        o.untrusted_content.contains("Plan (truth): free; note (truth): Meeting at noon"),
        "{}",
        o.untrusted_content
    );
    g.p.close_tab(&ctx(), g.tab).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_world_after_input_makes_the_outcome_unknown_never_success() {
    let g = Gated::open("/hostile-actions.html").await;
    let o = g.observe().await;
    let note = ref_of(&o, "textbox \"Note\"");
    g.set(REFUSED_AFTER_INPUT);
    let fill = ActParams::new(ActionKind::Fill)
        .target(&note)
        .value("Rescheduled")
        .expect(Expectation::Value { target: note.clone().into(), equals: "Rescheduled".into() })
        .timeout_ms(4000);
    let r = g.act(fill).await;
    assert_eq!(
        (r.outcome, r.code.as_deref(), r.postcondition),
        (Outcome::Unknown, Some("OUTCOME_UNKNOWN"), Postcondition::Unverified),
        "{r:#?}"
    );
    assert_ne!(r.dispatch, Dispatch::NotDispatched, "{r:#?}");
    let m = r.message.as_deref().unwrap();
    assert!(m.contains("isolated world") && m.contains("already sent") && m.contains("observe"), "{m}");
    assert_eq!(r.effects.value, None, "no value is reported without a read-back: {r:#?}");
    // The text was in fact typed, as the page's own record shows.
    g.set(OPEN);
    let o = g.observe().await;
    assert!(o.untrusted_content.contains("note (truth): Rescheduled"), "{}", o.untrusted_content);
    g.p.close_tab(&ctx(), g.tab).await.unwrap();
}
