//! The extension's last-hop gate checks the site policy with its own copy (`policy.set` from the broker), in headless
//! Chromium with the real extension and native host: a command to a tab showing a denied origin — a read or an
//! input — a navigation to one, a tab opened or updated at one and a claim of a user tab showing one are refused with
//! `ORIGIN_NOT_AUTHORISED` before anything reaches the page, while the allowed origin keeps working.

mod common;

use std::time::Duration;

use browserd_cdp::SessionId;
use browserd_native::link::{ExtensionError, ExtensionLink};
use serde_json::{Value, json};

const AGENT: &str = "agent-sites";
const T: Duration = Duration::from_secs(10);

fn refused_code(e: &ExtensionError) -> &str {
    match e {
        ExtensionError::Refused { code, .. } => code,
        other => panic!("expected a refusal, got {other}"),
    }
}

async fn send(
    link: &ExtensionLink,
    tab: i64,
    method: &str,
    params: Value,
    fence: Value,
) -> Result<Value, ExtensionError> {
    link.call("cdp.send", json!({"target": {"tabId": tab}, "method": method, "params": params, "fence": fence})).await
}

async fn evaluate(link: &ExtensionLink, tab: i64, expression: &str) -> Result<Value, ExtensionError> {
    send(link, tab, "Runtime.evaluate", json!({"expression": expression, "returnByValue": true}), Value::Null).await
}

/// The user (the harness's own DevTools pipe, not the extension) takes the page showing `from` to `to`.
async fn user_navigates(h: &common::Harness, from: &str, to: &str) {
    let cdp = h.browser.cdp();
    let targets = cdp.call(None, "Target.getTargets", json!({}), T).await.unwrap();
    let target = targets["targetInfos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["url"] == from)
        .expect("the page is open")["targetId"]
        .clone();
    let att = cdp.call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), T).await.unwrap();
    let s = SessionId(att["sessionId"].as_str().unwrap().to_owned());
    cdp.call(Some(&s), "Page.navigate", json!({"url": to}), T).await.unwrap();
    let _ = cdp.call(None, "Target.detachFromTarget", json!({"sessionId": s.0}), T).await;
}

/// A tab of the session at `url`, attached, once its document is `url` and complete.
async fn loaded_tab(link: &ExtensionLink, url: &str) -> i64 {
    let tab = link.create_tab(AGENT, url, true).await.unwrap().tab_id;
    link.call("debugger.attach", json!({"session": AGENT, "tabId": tab})).await.unwrap();
    let probe = format!("location.href === {url:?} && document.readyState === 'complete'");
    for _ in 0..300 {
        if let Ok(r) = evaluate(link, tab, &probe).await
            && r["result"]["value"] == true
        {
            return tab;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("tab {tab} never loaded {url}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_hop_gate_refuses_a_denied_origin_with_its_own_copy_of_the_policy() {
    let h = common::start().await;
    let set =
        h.link.call("policy.set", json!({"allow": [], "deny": ["localhost"], "realProfileDeny": []})).await.unwrap();
    assert_eq!(set["deny"], 1, "{set}");

    // The allowed origin: reads and fenced input go through.
    let allowed = loaded_tab(&h.link, &h.site.url("/form.html")).await;
    let fence = h.link.grant_lease(AGENT, allowed, 1).await.unwrap();
    let fence = json!({"token": fence.token, "epoch": fence.epoch});
    send(&h.link, allowed, "Input.dispatchMouseEvent", json!({"type": "mouseMoved", "x": 5, "y": 5}), fence.clone())
        .await
        .unwrap();

    // A navigation to the denied origin, with a valid lease: refused at the last hop, the tab stays where it was.
    let denied_url = h.site.cross_origin_url("/policy-landing.html");
    let e = send(&h.link, allowed, "Page.navigate", json!({"url": denied_url}), fence.clone()).await.unwrap_err();
    assert_eq!(refused_code(&e), "ORIGIN_NOT_AUTHORISED", "{e}");
    assert!(e.to_string().contains("http://localhost:") && e.to_string().contains("nothing was sent"), "{e}");
    let here = evaluate(&h.link, allowed, "location.href").await.unwrap();
    assert_eq!(here["result"]["value"], h.site.url("/form.html"), "{here}");

    // A tab of the agent's that the user took to the denied origin: no read, no input, even under a lease.
    let user_tab = loaded_tab(&h.link, &h.site.url("/form.html?taken")).await;
    user_navigates(&h, &h.site.url("/form.html?taken"), &denied_url).await;
    let mut shown = false;
    for _ in 0..300 {
        let tabs = h.link.list_tabs().await.unwrap();
        if tabs.iter().any(|t| t.tab_id == user_tab && t.url == denied_url) {
            shown = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(shown, "the tab shows the denied page");
    h.link.call("debugger.attach", json!({"session": AGENT, "tabId": user_tab})).await.unwrap();
    let e = evaluate(&h.link, user_tab, "document.body.innerText").await.unwrap_err();
    assert_eq!(refused_code(&e), "ORIGIN_NOT_AUTHORISED", "{e}");
    assert!(!e.to_string().contains("Landing secret"), "{e}");
    let lease = h.link.grant_lease(AGENT, user_tab, 1).await.unwrap();
    let e = send(
        &h.link,
        user_tab,
        "Input.dispatchMouseEvent",
        json!({"type": "mousePressed", "x": 5, "y": 5, "button": "left", "clickCount": 1}),
        json!({"token": lease.token, "epoch": lease.epoch}),
    )
    .await
    .unwrap_err();
    assert_eq!(refused_code(&e), "ORIGIN_NOT_AUTHORISED", "{e}");

    // The broker lifts the deny: the same tab can be read again.
    h.link.call("policy.set", json!({"allow": [], "deny": [], "realProfileDeny": []})).await.unwrap();
    let mut text = Value::Null;
    for _ in 0..300 {
        // The page may still be loading: read until its text is there.
        text = evaluate(&h.link, user_tab, "document.body ? document.body.innerText : ''").await.unwrap();
        if text["result"]["value"].as_str().unwrap_or_default().contains("Landing secret") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(text["result"]["value"].as_str().unwrap_or_default().contains("Landing secret"), "{text}");
    h.stop().await;
}

/// Opening a tab at a denied origin (`tabs.create`), taking an agent tab there (`tabs.update`) and claiming a user tab
/// that shows one (`own.claim`) are refused by the extension's own site gate with `ORIGIN_NOT_AUTHORISED`, whatever
/// the broker above sent: the opened and updated pages are never requested from the denied site, the updated tab
/// stays where it was and the user's tab stays the user's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_site_gate_refuses_to_open_navigate_or_claim_a_denied_origin() {
    let h = common::start().await;
    h.link.call("policy.set", json!({"allow": [], "deny": ["localhost"], "realProfileDeny": []})).await.unwrap();

    let opened = h.site.cross_origin_url("/policy-landing.html?via=open");
    let e = h.link.create_tab(AGENT, &opened, true).await.unwrap_err();
    assert_eq!(refused_code(&e), "ORIGIN_NOT_AUTHORISED", "{e}");
    assert!(e.to_string().contains("site gate") && e.to_string().contains("nothing was sent"), "{e}");
    assert!(h.link.list_tabs().await.unwrap().iter().all(|t| !t.url.contains("policy-landing")), "no tab was opened");

    let page = h.site.url("/form.html");
    let tab = loaded_tab(&h.link, &page).await;
    let updated = h.site.cross_origin_url("/policy-landing.html?via=update");
    let e = h.link.call("tabs.update", json!({"session": AGENT, "tabId": tab, "url": updated})).await.unwrap_err();
    assert_eq!(refused_code(&e), "ORIGIN_NOT_AUTHORISED", "{e}");
    assert!(e.to_string().contains(&format!("navigating tab {tab}")), "{e}");

    // The user's own tab on the denied origin (the user opened it, so the site served it once).
    let users = h.site.cross_origin_url("/policy-landing.html?via=user");
    h.browser.cdp().call(None, "Target.createTarget", json!({"url": users}), T).await.unwrap();
    let mut user_tab = None;
    for _ in 0..300 {
        user_tab = h.link.list_tabs().await.unwrap().into_iter().find(|t| t.url == users).map(|t| t.tab_id);
        if user_tab.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let user_tab = user_tab.expect("the user's tab shows the denied page");
    let e = h.link.claim_tab(AGENT, user_tab).await.unwrap_err();
    assert_eq!(refused_code(&e), "ORIGIN_NOT_AUTHORISED", "{e}");
    assert!(e.to_string().contains(&format!("claiming tab {user_tab}")), "{e}");
    assert!(h.link.owners().await.unwrap().iter().all(|o| o.tab_id == tab), "only the agent's own tab is owned");

    // Wait out anything in flight, then read what reached the denied site and where the agent tab is.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let here = evaluate(&h.link, tab, "location.href").await.unwrap();
    assert_eq!(here["result"]["value"], page, "the updated tab stays where it was: {here}");
    assert_eq!(
        h.site.cross_origin_requests("/policy-landing.html"),
        vec![users.clone()],
        "the denied site got only the user's own request"
    );
    let gate = h.link.status().await.unwrap()["gate"].clone();
    assert!(gate["refused"].as_u64().unwrap() >= 3, "{gate}");
    h.stop().await;
}
