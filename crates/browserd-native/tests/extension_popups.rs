//! The extension's popup gate (issue 16 item 2), in headless Chromium with the real extension and native host: a
//! window or tab that a page in an agent's tab opens at an origin the extension's own copy of the site policy refuses
//! is closed at once (`chrome.webNavigation`: the Fetch domain browserd pauses requests with does not reach a new
//! window). A popup's request may already be on its way when the browser announces the popup, so what is proven is
//! that the popup is gone before its page could commit: its page here answers only after 60 s, and the popup is closed
//! long before. A `target=_blank` link and a blank window sent there by script are closed too; a popup to an allowed
//! origin, and a popup of the user's own tab, stay open.

mod common;

use std::time::Duration;

use browserd_cdp::SessionId;
use browserd_native::link::ExtensionLink;
use serde_json::{Value, json};

const AGENT: &str = "agent-popups";
const T: Duration = Duration::from_secs(10);

/// Runs `expression` in agent tab `tab` as if the user had just clicked (a popup needs a user gesture).
async fn with_gesture(link: &ExtensionLink, tab: i64, expression: &str) -> Value {
    let r = link
        .call(
            "cdp.send",
            json!({"target": {"tabId": tab}, "method": "Runtime.evaluate",
                   "params": {"expression": expression, "userGesture": true, "returnByValue": true}}),
        )
        .await
        .unwrap();
    r["result"]["value"].clone()
}

/// The extension's record of the popup it closed at `url`, once the close took effect.
async fn closed_popup(link: &ExtensionLink, url: &str) -> Value {
    let mut closed = Value::Null;
    for _ in 0..500 {
        closed = link.status().await.unwrap()["closedPopups"].clone();
        if let Some(r) = closed.as_array().unwrap().iter().find(|r| r["url"] == url && r["closed"] == true) {
            return r.clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the popup at {url} was not closed: {closed}");
}

/// Whether a tab shows (or is loading) `url`, after waiting up to ~10 s for one to.
async fn tab_shows(link: &ExtensionLink, url: &str) -> bool {
    for _ in 0..500 {
        if link.list_tabs().await.unwrap().iter().any(|t| t.url == url) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_popup_to_a_denied_origin_is_closed_before_its_page_commits() {
    let h = common::start().await;
    h.link.call("policy.set", json!({"allow": [], "deny": ["localhost"], "realProfileDeny": []})).await.unwrap();
    let page = h.site.url("/policy-redirect.html");
    let tab = h.link.create_tab(AGENT, &page, true).await.unwrap().tab_id;
    h.link.call("debugger.attach", json!({"session": AGENT, "tabId": tab})).await.unwrap();
    for _ in 0..300 {
        if with_gesture(&h.link, tab, "document.readyState").await == "complete" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // window.open to the denied origin, on a page that answers only after 60 s: closed before it could commit.
    let slow = h.site.cross_origin_url("/slow.html?delay=60000&via=window.open");
    let opened =
        with_gesture(&h.link, tab, &format!("window.open({slow:?}, 'slow', 'width=400') ? 'window' : 'no'")).await;
    assert_eq!(opened, "window", "the page opened a window");
    let record = closed_popup(&h.link, &slow).await;
    assert_eq!(record["committed"], false, "{record}");
    assert_eq!(record["openerTabId"], tab, "{record}");
    assert!(record["why"].as_str().unwrap().contains("is denied by the browserd policy (localhost)"), "{record}");
    assert!(h.link.list_tabs().await.unwrap().iter().all(|t| t.url != slow), "the popup is gone");

    // A target=_blank link to the denied origin, and a blank window the page then sends there: closed too.
    let link_url = h.site.cross_origin_url("/policy-landing.html?popup=1");
    with_gesture(&h.link, tab, "document.getElementById('popup').click()").await;
    closed_popup(&h.link, &link_url).await;
    let later = h.site.cross_origin_url("/policy-landing.html?via=location");
    with_gesture(&h.link, tab, &format!("const w = window.open('', 'blank'); w.location = {later:?}; 'sent'")).await;
    closed_popup(&h.link, &later).await;
    assert!(h.link.list_tabs().await.unwrap().iter().all(|t| !t.url.contains("policy-landing")), "no popup stays");

    // A popup to an allowed origin stays open and loads.
    let fine = h.site.url("/popup-target.html?via=window.open");
    with_gesture(&h.link, tab, &format!("window.open({fine:?}, 'fine', 'width=400') ? 'window' : 'no'")).await;
    assert!(tab_shows(&h.link, &fine).await, "the allowed popup is open");

    // The user's own tab is not the agent's: its popup to the same origin is the user's and stays.
    let cdp = h.browser.cdp();
    let user = cdp.call(None, "Target.createTarget", json!({"url": page}), T).await.unwrap();
    let att = cdp.call(None, "Target.attachToTarget", json!({"targetId": user["targetId"], "flatten": true}), T).await;
    let s = SessionId(att.unwrap()["sessionId"].as_str().unwrap().to_owned());
    let users = h.site.cross_origin_url("/policy-landing.html?via=user");
    for _ in 0..300 {
        let r = cdp
            .call(Some(&s), "Runtime.evaluate", json!({"expression": "document.readyState", "returnByValue": true}), T)
            .await
            .unwrap();
        if r["result"]["value"] == "complete" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let expression = format!("window.open({users:?}, 'mine', 'width=400') ? 'window' : 'no'");
    cdp.call(Some(&s), "Runtime.evaluate", json!({"expression": expression, "userGesture": true}), T).await.unwrap();
    assert!(tab_shows(&h.link, &users).await, "the user's popup is open");
    let closed = h.link.status().await.unwrap()["closedPopups"].clone();
    assert_eq!(closed.as_array().unwrap().len(), 3, "only the agent's three denied popups were closed: {closed}");
    h.stop().await;
}
