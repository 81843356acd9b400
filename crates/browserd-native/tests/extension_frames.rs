//! The extension's last-hop site gate on out-of-process frames and with a session's own lists, in headless Chromium
//! with the real extension and native host: a command sent to the child DevTools session of a cross-site frame on a
//! denied origin is refused `ORIGIN_NOT_AUTHORISED` (the top-level page is allowed, so only the frame's own document
//! can refuse it), and an agent session's `--blocked-origins`/`--allowed-origins` (handed over in `policy.set`'s
//! `sessions`) are enforced for that session's tabs only.

mod common;

use std::time::Duration;

use browserd_cdp::{Cdp, ConnectionOptions, SessionId};
use browserd_native::link::{ExtensionError, ExtensionLink};
use serde_json::{Value, json};

const AGENT: &str = "agent-frames";
const OTHER: &str = "agent-other";
const WAIT: Duration = Duration::from_secs(20);

fn refused_code(e: &ExtensionError) -> &str {
    match e {
        ExtensionError::Refused { code, .. } => code,
        other => panic!("expected a refusal, got {other}"),
    }
}

async fn evaluate(link: &ExtensionLink, tab: i64, expression: &str) -> Result<Value, ExtensionError> {
    link.call(
        "cdp.send",
        json!({"target": {"tabId": tab}, "method": "Runtime.evaluate",
               "params": {"expression": expression, "returnByValue": true}}),
    )
    .await
}

/// A tab of `session` at `url`, attached, once its document is `url` and complete.
async fn loaded_tab(link: &ExtensionLink, session: &str, url: &str) -> i64 {
    let tab = link.create_tab(session, url, true).await.unwrap().tab_id;
    link.call("debugger.attach", json!({"session": session, "tabId": tab})).await.unwrap();
    let probe = format!("location.href === {url:?} && document.readyState === 'complete'");
    for _ in 0..500 {
        if let Ok(r) = evaluate(link, tab, &probe).await
            && r["result"]["value"] == true
        {
            return tab;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("tab {tab} never loaded {url}");
}

/// The relay's session of the tab showing `url`, and the child session of its cross-site frame at `frame_url`.
async fn frame_session(cdp: &Cdp, url: &str, frame_url: &str) -> (SessionId, SessionId) {
    let targets = cdp.call(None, "Target.getTargets", json!({}), WAIT).await.unwrap();
    let target =
        targets["targetInfos"].as_array().unwrap().iter().find(|t| t["url"] == url).expect("the tab")["targetId"]
            .clone();
    let att =
        cdp.call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), WAIT).await.unwrap();
    let top = SessionId(att["sessionId"].as_str().unwrap().to_owned());
    let mut events = cdp.events();
    cdp.call(
        Some(&top),
        "Target.setAutoAttach",
        json!({"autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true}),
        WAIT,
    )
    .await
    .unwrap();
    let child = tokio::time::timeout(WAIT, async {
        loop {
            let ev = events.recv().await.unwrap();
            if ev.method == "Target.attachedToTarget"
                && ev.params["targetInfo"]["type"] == "iframe"
                && ev.params["targetInfo"]["url"] == frame_url
            {
                return SessionId(ev.params["sessionId"].as_str().unwrap().to_owned());
            }
        }
    })
    .await
    .expect("the cross-site frame is announced as an out-of-process target");
    (top, child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_to_a_denied_out_of_process_frame_is_refused_by_the_gate() {
    let h = common::start().await;
    let page = h.site.url("/policy-frame.html");
    let frame_url = h.site.cross_origin_url("/policy-inner.html");
    loaded_tab(&h.link, AGENT, &page).await;
    let cdp = Cdp::spawn(h.link.relay_transport(AGENT), ConnectionOptions::default());
    let (top, child) = frame_session(&cdp, &page, &frame_url).await;
    let read = json!({"expression": "document.body.innerText", "returnByValue": true});

    // Allowed everywhere: the frame's own session reads its text.
    let text = cdp.call(Some(&child), "Runtime.evaluate", read.clone(), WAIT).await.unwrap();
    assert!(text["result"]["value"].as_str().unwrap().contains("Partner secret"), "{text}");

    // The frame's origin denied: the top-level page (allowed) still works, the frame's session is refused.
    h.link.call("policy.set", json!({"allow": [], "deny": ["localhost"], "realProfileDeny": []})).await.unwrap();
    let top_text = cdp.call(Some(&top), "Runtime.evaluate", read.clone(), WAIT).await.unwrap();
    assert!(top_text["result"]["value"].as_str().unwrap().contains("Partner widget"), "{top_text}");
    let e = cdp.call(Some(&child), "Runtime.evaluate", read.clone(), WAIT).await.unwrap_err().to_string();
    assert!(e.contains("ORIGIN_NOT_AUTHORISED") && e.contains("http://localhost:"), "{e}");
    assert!(e.contains("nothing was sent") && !e.contains("Partner secret"), "{e}");
    let snapshot = cdp.call(Some(&child), "DOMSnapshot.captureSnapshot", json!({"computedStyles": []}), WAIT).await;
    assert!(snapshot.unwrap_err().to_string().contains("ORIGIN_NOT_AUTHORISED"));

    // A session's own blocked list does the same for that session's tabs only.
    h.link
        .call(
            "policy.set",
            json!({"allow": [], "deny": [], "realProfileDeny": [],
                   "sessions": {AGENT: {"allowed": [], "blocked": ["localhost"]}}}),
        )
        .await
        .unwrap();
    let e = cdp.call(Some(&child), "Runtime.evaluate", read.clone(), WAIT).await.unwrap_err().to_string();
    assert!(e.contains("ORIGIN_NOT_AUTHORISED") && e.contains("--blocked-origins"), "{e}");
    h.link.call("policy.set", json!({"allow": [], "deny": [], "realProfileDeny": []})).await.unwrap();
    let text = cdp.call(Some(&child), "Runtime.evaluate", read, WAIT).await.unwrap();
    assert!(text["result"]["value"].as_str().unwrap().contains("Partner secret"), "{text}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_own_lists_reach_the_gate_and_bind_only_its_tabs() {
    let h = common::start().await;
    let allowed_page = h.site.url("/form.html");
    let other_origin = h.site.cross_origin_url("/policy-landing.html");
    let mine = loaded_tab(&h.link, AGENT, &allowed_page).await;
    let theirs = loaded_tab(&h.link, OTHER, &other_origin).await;
    let mine_other = loaded_tab(&h.link, AGENT, &other_origin).await;

    // AGENT may use only 127.0.0.1 (--allowed-origins); OTHER has no lists of its own.
    let set = h
        .link
        .call(
            "policy.set",
            json!({"allow": [], "deny": [], "realProfileDeny": [],
                   "sessions": {AGENT: {"allowed": ["127.0.0.1"], "blocked": []}}}),
        )
        .await
        .unwrap();
    assert_eq!(set["sessions"], 1, "{set}");
    assert!(evaluate(&h.link, mine, "document.title").await.is_ok());
    let e = evaluate(&h.link, mine_other, "document.body.innerText").await.unwrap_err();
    assert_eq!(refused_code(&e), "ORIGIN_NOT_AUTHORISED", "{e}");
    assert!(e.to_string().contains("--allowed-origins") && !e.to_string().contains("Landing secret"), "{e}");
    let read = evaluate(&h.link, theirs, "document.body.innerText").await.unwrap();
    assert!(read["result"]["value"].as_str().unwrap().contains("Landing secret"), "{read}");

    // A navigation of AGENT's tab out of its list is refused before it is sent, even under a lease.
    let lease = h.link.grant_lease(AGENT, mine, 1).await.unwrap();
    let e = h
        .link
        .call(
            "cdp.send",
            json!({"target": {"tabId": mine}, "method": "Page.navigate", "params": {"url": other_origin},
                   "fence": {"token": lease.token, "epoch": lease.epoch}}),
        )
        .await
        .unwrap_err();
    assert_eq!(refused_code(&e), "ORIGIN_NOT_AUTHORISED", "{e}");
    let here = evaluate(&h.link, mine, "location.href").await.unwrap();
    assert_eq!(here["result"]["value"], allowed_page.as_str(), "{here}");

    // The gate shows what it holds.
    let status = h.link.status().await.unwrap();
    assert_eq!(status["sites"]["sessions"][AGENT]["allowed"], json!(["127.0.0.1"]), "{status}");
    h.stop().await;
}
