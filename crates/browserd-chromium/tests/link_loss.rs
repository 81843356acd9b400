//! Losing the link in the middle of an action. Once input may have reached the page, the result is `unknown` (with
//! the input counted as dispatched) and `CONNECTION_LOST` / `TARGET_CLOSED`, never `failed`, and the request is never
//! replayed; before any input it is `failed` / `notDispatched`. On a scripted CDP peer and on a real Chromium whose
//! tab is closed by another CDP client while a click waits for its expectation.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use browserd_cdp::LaunchOptions;
use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{CreateTab, HandleAllocator, OpContext, Provider, ProviderKind, SessionKey, TabHandle};
use browserd_protocol::{
    ActParams, ActionKind, ActionResult, Dispatch, Expectation, ImagePoint, ObserveParams, Outcome, Postcondition,
    ScreenshotOptions, ScrollDirection,
};
use browserd_test_support::scripted_cdp::{Answer, ReceivedCall, Rule, ScriptedCdp, ScriptedEvent, ScriptedServer};
use serde_json::{Value, json};
use tokio::sync::Notify;

fn ctx() -> OpContext {
    OpContext::new(SessionKey("test".into()), Duration::from_secs(10), "trace-link")
}

/// What the fake page answers to `Runtime.evaluate`: a visible page with an 800×600 viewport that can scroll.
fn evaluate(call: &ReceivedCall) -> Value {
    let e = call.params["expression"].as_str().unwrap_or_default();
    let v = if e.contains("visibilityState") {
        json!("visible")
    } else if e.contains("innerWidth / 2") {
        json!([400, 300])
    } else if e.contains("scrollingElement") {
        json!([0, 0, 800, 600, 800, 3000])
    } else if e.contains("__browserd") && e.contains("splice") {
        json!([1000, []])
    } else {
        Value::Null
    };
    json!({"result": {"type": "object", "value": v}})
}

/// A fake browser with one page; `extra` rules come first.
fn page_peer(extra: Vec<Rule>) -> (Arc<ChromiumProvider>, ScriptedServer) {
    let mut script = ScriptedCdp::new();
    for r in extra {
        script = script.rule(r);
    }
    let (cdp, server) = script
        .rule(Rule::reply(
            "Target.getTargets",
            json!({"targetInfos": [{"targetId": "T1", "type": "page", "url": "http://site/", "title": "Site", "attached": false}]}),
        ))
        .rule(Rule::reply("Target.attachToTarget", json!({"sessionId": "S1"})))
        .rule(Rule::reply(
            "Page.getFrameTree",
            json!({"frameTree": {"frame": {"id": "T1", "loaderId": "L1", "url": "http://site/"}}}),
        ))
        .rule(Rule::reply("Page.createIsolatedWorld", json!({"executionContextId": 7})))
        .rule(Rule::with("Runtime.evaluate", |c| Answer::Result(evaluate(c))))
        .answer_unmatched_with_empty_result()
        .spawn();
    let p = ChromiumProvider::new(cdp, ProviderKind::Remote, HandleAllocator::new(), ChromiumConfig::default());
    (p, server)
}

fn scroll_down(request_id: &str) -> ActParams {
    let mut p = ActParams::new(ActionKind::Scroll);
    p.direction = Some(ScrollDirection::Down);
    p.request_id = Some(request_id.into());
    p
}

fn inputs(server: &ScriptedServer) -> usize {
    server.calls().iter().filter(|c| c.method.starts_with("Input.")).count()
}

async fn first_tab(p: &ChromiumProvider) -> TabHandle {
    p.list_tabs(&ctx()).await.unwrap()[0].tab
}

#[tokio::test]
async fn connection_lost_after_input_was_sent_is_unknown_and_never_replayed() {
    let (p, mut server) = page_peer(vec![Rule::hold("Input.dispatchMouseEvent")]);
    let tab = first_tab(&p).await;
    let params = scroll_down("wheel-1");
    let act = tokio::spawn({
        let (p, params) = (p.clone(), params.clone());
        async move { p.act(&ctx(), tab, &params).await }
    });
    server.wait_for_call("Input.dispatchMouseEvent").await;
    server.close("the browser process crashed").await;
    let r = act.await.unwrap().unwrap();
    assert_eq!(
        (r.outcome, r.dispatch, r.code.as_deref()),
        (Outcome::Unknown, Dispatch::Dispatched, Some("CONNECTION_LOST")),
        "{r:#?}"
    );
    assert!(r.message.as_deref().unwrap().contains("not retried automatically"), "{r:#?}");
    // The same request again is answered from the record: nothing is replayed.
    let again = p.act(&ctx(), tab, &params).await.unwrap();
    assert!(again.deduplicated, "{again:#?}");
    assert_eq!((again.outcome, again.dispatch), (Outcome::Unknown, Dispatch::Dispatched));
    assert_eq!(inputs(&server), 1, "exactly one input command ever reached the browser");
}

#[tokio::test]
async fn target_closed_after_input_was_sent_is_unknown() {
    let (p, server) = page_peer(vec![Rule::hold("Input.dispatchMouseEvent")]);
    let tab = first_tab(&p).await;
    let act = tokio::spawn({
        let p = p.clone();
        async move { p.act(&ctx(), tab, &scroll_down("wheel-2")).await }
    });
    let mut server = server;
    server.wait_for_call("Input.dispatchMouseEvent").await;
    server
        .emit(ScriptedEvent::new(
            None,
            "Target.detachedFromTarget",
            json!({"sessionId": "S1", "targetId": "T1", "reason": "target_closed"}),
        ))
        .await;
    let r = act.await.unwrap().unwrap();
    assert_eq!(
        (r.outcome, r.dispatch, r.code.as_deref()),
        (Outcome::Unknown, Dispatch::Dispatched, Some("TARGET_CLOSED")),
        "{r:#?}"
    );
    assert_eq!(inputs(&server), 1);
}

#[tokio::test]
async fn connection_lost_before_any_input_is_failed_and_not_dispatched() {
    // The page answers everything except the viewport read that comes right before the wheel event.
    let reached = Arc::new(Notify::new());
    let signal = reached.clone();
    let hold_viewport = Rule::with("Runtime.evaluate", move |c| {
        if c.params["expression"].as_str().unwrap_or_default().contains("innerWidth / 2") {
            signal.notify_one();
            Answer::Hold
        } else {
            Answer::Result(evaluate(c))
        }
    });
    let (p, mut server) = page_peer(vec![hold_viewport]);
    let tab = first_tab(&p).await;
    let params = scroll_down("wheel-3");
    let act = tokio::spawn({
        let (p, params) = (p.clone(), params.clone());
        async move { p.act(&ctx(), tab, &params).await }
    });
    reached.notified().await;
    server.close("the browser process crashed").await;
    let r = act.await.unwrap().unwrap();
    assert_eq!(
        (r.outcome, r.dispatch, r.code.as_deref()),
        (Outcome::Failed, Dispatch::NotDispatched, Some("CONNECTION_LOST")),
        "{r:#?}"
    );
    assert_eq!(inputs(&server), 0);
    // Nothing reached the page, so the request id is free to be tried again (and fails the same way, unsent).
    let again = p.act(&ctx(), tab, &params).await.unwrap();
    assert!(!again.deduplicated);
    assert_eq!((again.outcome, again.dispatch), (Outcome::Failed, Dispatch::NotDispatched), "{again:#?}");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tab_closed_by_another_client_during_the_wait_is_unknown_not_failed() {
    let root = tempfile::tempdir().unwrap();
    let profile = root.path().join("profile");
    let opts = LaunchOptions {
        user_data_dir: Some(profile.clone()),
        env: vec![("XDG_CONFIG_HOME".into(), root.path().join("xdg").display().to_string())],
        extra_args: vec!["--remote-debugging-port=0".into(), "--remote-allow-origins=*".into()],
        ..LaunchOptions::default()
    };
    let (p, browser) =
        ChromiumProvider::launch_managed(opts, HandleAllocator::new(), ChromiumConfig::default()).await.unwrap();
    let other = browserd_cdp::connect_ws(&format!("http://127.0.0.1:{}", devtools_port(&profile).await)).await.unwrap();

    let url = "data:text/html,<title>waiting</title><button onclick=\"document.title='clicked'\">Go</button>";
    let tab = p.create_tab(&ctx(), CreateTab { url: url.into(), ..Default::default() }).await.unwrap().tab;
    let o = p.observe(&ctx(), tab, &ObserveParams::default()).await.unwrap();
    let line = o.untrusted_content.lines().find(|l| l.contains("button \"Go\"")).expect("the button is listed");
    let go = browserd_protocol::line_ref(line).expect("a ref line").to_owned();
    let mut click = ActParams::new(ActionKind::Click)
        .target(&go)
        .expect(Expectation::TextPresent { text: "this never appears".into() })
        .timeout_ms(15_000);
    click.request_id = Some("click-1".into());
    let act = tokio::spawn({
        let (p, click) = (p.clone(), click.clone());
        async move { p.act(&ctx(), tab, &click).await }
    });
    // Another client closes the tab once the click has landed (the page retitles itself on click).
    let target = loop {
        let t = other.call(None, "Target.getTargets", json!({}), Duration::from_secs(5)).await.unwrap();
        let clicked = t["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["type"] == "page" && i["title"] == "clicked")
            .map(|i| i["targetId"].as_str().unwrap().to_owned());
        if let Some(id) = clicked {
            break id;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    other.call(None, "Target.closeTarget", json!({"targetId": target}), Duration::from_secs(5)).await.unwrap();
    let r: ActionResult = act.await.unwrap().unwrap();
    assert_eq!(
        (r.outcome, r.code.as_deref(), r.postcondition),
        (Outcome::Unknown, Some("TARGET_CLOSED"), Postcondition::Unverified),
        "{r:#?}"
    );
    assert_ne!(r.dispatch, Dispatch::NotDispatched, "{r:#?}");
    // Never replayed: the same request id returns the recorded result.
    let again = p.act(&ctx(), tab, &click).await.unwrap();
    assert!(again.deduplicated && again.outcome == Outcome::Unknown, "{again:#?}");
    drop(other);
    browser.shutdown().await.unwrap();
}

#[tokio::test]
async fn cancelling_after_input_was_sent_is_unknown_and_never_replayed() {
    let (p, mut server) = page_peer(vec![Rule::hold("Input.dispatchMouseEvent")]);
    let tab = first_tab(&p).await;
    let params = scroll_down("wheel-4");
    let c = ctx();
    let cancel = c.cancel.clone();
    let act = tokio::spawn({
        let (p, params) = (p.clone(), params.clone());
        async move { p.act(&c, tab, &params).await }
    });
    server.wait_for_call("Input.dispatchMouseEvent").await;
    cancel.cancel();
    let r = act.await.unwrap().unwrap();
    assert_eq!(
        (r.outcome, r.dispatch, r.code.as_deref()),
        (Outcome::Unknown, Dispatch::Dispatched, Some("CANCELLED")),
        "{r:#?}"
    );
    let again = p.act(&ctx(), tab, &params).await.unwrap();
    assert!(again.deduplicated, "{again:#?}");
    assert_eq!(inputs(&server), 1);
}

/// Rules for the screenshot and point re-validation of a click `at` a screenshot point: an 800×600 viewport at scroll
/// (0, 0), zoom 1.
fn viewport() -> Vec<Rule> {
    let metrics = json!({
        "cssVisualViewport": {"clientWidth": 800, "clientHeight": 600, "pageX": 0, "pageY": 0, "zoom": 1},
        "cssLayoutViewport": {"pageX": 0, "pageY": 0},
        "cssContentSize": {"width": 800, "height": 600},
    });
    vec![Rule::reply("Page.getLayoutMetrics", metrics), Rule::reply("Page.captureScreenshot", json!({"data": ""}))]
}

/// A click at a point of a fresh screenshot of `tab`.
async fn click_at_point(p: &ChromiumProvider, tab: TabHandle, request_id: &str) -> ActParams {
    let shot = p.screenshot(&ctx(), tab, &ScreenshotOptions::default()).await.unwrap();
    let mut click = ActParams::new(ActionKind::Click);
    click.at = Some(ImagePoint { image_id: shot.image_id, x: 100.0, y: 100.0 });
    click.request_id = Some(request_id.into());
    click
}

/// The types of the mouse events the browser received, in order.
fn mouse_events(server: &ScriptedServer) -> Vec<String> {
    server
        .calls()
        .iter()
        .filter(|c| c.method == "Input.dispatchMouseEvent")
        .map(|c| c.params["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Answers mouse events of type `kind` with `answer`, every other one with an empty result.
fn mouse_rule(kind: &'static str, answer: Answer) -> Rule {
    Rule::with("Input.dispatchMouseEvent", move |c| {
        if c.params["type"] == kind { answer.clone() } else { Answer::Result(json!({})) }
    })
}

#[tokio::test]
async fn a_click_sends_the_press_with_the_move_and_the_release_once_the_press_is_handled() {
    let mut rules = viewport();
    rules.push(mouse_rule("mouseMoved", Answer::Hold));
    let (p, mut server) = page_peer(rules);
    let tab = first_tab(&p).await;
    let click = click_at_point(&p, tab, "click-order").await;
    let act = tokio::spawn({
        let p = p.clone();
        async move { p.act(&ctx(), tab, &click).await }
    });
    // The press is on the wire while the move is still unanswered, and nothing else is.
    let calls = server.wait_for_calls_of("Input.dispatchMouseEvent", 2).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(mouse_events(&server), ["mouseMoved", "mousePressed"]);
    server.answer(calls[0].id, Answer::Result(json!({}))).await;
    let r = act.await.unwrap().unwrap();
    assert_eq!((r.outcome, r.dispatch, r.code.as_deref()), (Outcome::Succeeded, Dispatch::Dispatched, None), "{r:#?}");
    assert_eq!(mouse_events(&server), ["mouseMoved", "mousePressed", "mouseReleased"]);
}

/// What [`click_refusing`] leaves: the provider, its tab, the click and its result, and the scripted browser.
type Refused = (Arc<ChromiumProvider>, TabHandle, ActParams, ActionResult, ScriptedServer);

/// A click at a screenshot point whose mouse events of type `kind` the browser refuses.
async fn click_refusing(kind: &'static str, request_id: &str) -> Refused {
    let mut rules = viewport();
    rules.push(mouse_rule(kind, Answer::Error { code: -32000, message: "refused".into() }));
    let (p, server) = page_peer(rules);
    let tab = first_tab(&p).await;
    let click = click_at_point(&p, tab, request_id).await;
    let r = p.act(&ctx(), tab, &click).await.unwrap();
    (p, tab, click, r, server)
}

#[tokio::test]
async fn a_press_refused_after_the_move_was_handled_is_failed_and_dispatched() {
    let (_p, _tab, _click, r, server) = click_refusing("mousePressed", "click-refused-press").await;
    assert_eq!(
        (r.outcome, r.dispatch, r.code.as_deref()),
        (Outcome::Failed, Dispatch::Dispatched, Some("ACTION_FAILED")),
        "{r:#?}"
    );
    assert_eq!(mouse_events(&server), ["mouseMoved", "mousePressed"], "no release follows a refused press");
}

#[tokio::test]
async fn a_move_refused_while_the_press_sent_with_it_was_accepted_is_unknown() {
    let (p, tab, click, r, server) = click_refusing("mouseMoved", "click-refused-move").await;
    assert_eq!(
        (r.outcome, r.dispatch, r.code.as_deref()),
        (Outcome::Unknown, Dispatch::Dispatched, Some("OUTCOME_UNKNOWN")),
        "{r:#?}"
    );
    assert!(r.message.as_deref().unwrap().contains("mouseMoved"), "{r:#?}");
    assert_eq!(mouse_events(&server), ["mouseMoved", "mousePressed"]);
    let again = p.act(&ctx(), tab, &click).await.unwrap();
    assert!(again.deduplicated, "never replayed: {again:#?}");
}

#[tokio::test]
async fn connection_lost_while_the_move_and_press_are_pending_is_unknown() {
    let mut rules = viewport();
    rules.push(Rule::hold("Input.dispatchMouseEvent"));
    let (p, mut server) = page_peer(rules);
    let tab = first_tab(&p).await;
    let click = click_at_point(&p, tab, "click-lost").await;
    let act = tokio::spawn({
        let p = p.clone();
        async move { p.act(&ctx(), tab, &click).await }
    });
    server.wait_for_calls_of("Input.dispatchMouseEvent", 2).await;
    server.close("the browser process crashed").await;
    let r = act.await.unwrap().unwrap();
    assert_eq!(
        (r.outcome, r.dispatch, r.code.as_deref()),
        (Outcome::Unknown, Dispatch::Dispatched, Some("CONNECTION_LOST")),
        "{r:#?}"
    );
    assert_eq!(mouse_events(&server), ["mouseMoved", "mousePressed"]);
}
