//! The extension's popup gate (issue 16 item 2), in headless Chromium with the real extension and native host: a
//! window or tab that a page in an agent's tab opens at an origin the extension's own copy of the site policy refuses
//! is closed at once (`chrome.webNavigation`: the Fetch domain browserd pauses requests with does not reach a new
//! window). A popup's request may already be on its way when the browser announces the popup, so what is proven is
//! that the popup is gone before its page could commit: its page here answers only after 60 s, and the popup is closed
//! long before. A `target=_blank` link and a blank window sent there by script are closed too; a popup to an allowed
//! origin, and a popup of the user's own tab, stay open. A popup an allowed URL redirects to a denied origin is
//! closed as the denied document commits (the first moment the extension sees the redirect), and a restarted service
//! worker still judges the popups it tracked.

mod common;

use std::time::Duration;

use browserd_cdp::SessionId;
use browserd_native::install::DEV_EXTENSION_ID;
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

/// An agent tab on `/policy-redirect.html`, attached and loaded, under a policy that denies `localhost` (the second
/// site).
async fn agent_tab(h: &common::Harness) -> i64 {
    h.link.call("policy.set", json!({"allow": [], "deny": ["localhost"], "realProfileDeny": []})).await.unwrap();
    let tab = h.link.create_tab(AGENT, &h.site.url("/policy-redirect.html"), true).await.unwrap().tab_id;
    h.link.call("debugger.attach", json!({"session": AGENT, "tabId": tab})).await.unwrap();
    for _ in 0..300 {
        if with_gesture(&h.link, tab, "document.readyState").await == "complete" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tab
}

/// `/redirect` on the allowed site: a 302 to `path` (with its query) on the denied one.
fn redirect_to(h: &common::Harness, path: &str) -> String {
    let to: String = path
        .chars()
        .map(|c| match c {
            '/' => "%2F".to_owned(),
            '?' => "%3F".to_owned(),
            '=' => "%3D".to_owned(),
            '&' => "%26".to_owned(),
            c => c.to_string(),
        })
        .collect();
    h.site.url(&format!("/redirect?to={to}"))
}

/// A server redirect fires no new `onBeforeNavigate`: a popup opened at an allowed URL that 302s to a denied origin is
/// judged again by the document that commits, and closed then. What this proves: the popup does not stay open, and it
/// is closed by the commit of the denied document (`via: "commit"`), not later. What it cannot prove: that nothing of
/// the denied page ran or was drawn: the extension has no signal before that commit (no `webRequest`), so the
/// denied site receives the redirected request (the fixture's log shows it) and may receive the page's first
/// subresource requests before the close takes effect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_popup_redirected_to_a_denied_origin_is_closed_as_it_commits() {
    let h = common::start().await;
    let tab = agent_tab(&h).await;
    let allowed = redirect_to(&h, "/policy-landing.html?via=redirect");
    let denied = h.site.cross_origin_url("/policy-landing.html?via=redirect");
    let opened =
        with_gesture(&h.link, tab, &format!("window.open({allowed:?}, 'redirected', 'width=400') ? 'window' : 'no'"))
            .await;
    assert_eq!(opened, "window", "the page opened a window");
    let record = closed_popup(&h.link, &denied).await;
    assert_eq!(record["via"], "commit", "judged by the committed document: {record}");
    assert_eq!(record["committed"], true, "{record}");
    assert!(record["why"].as_str().unwrap().contains("is denied by the browserd policy (localhost)"), "{record}");
    let tabs = h.link.list_tabs().await.unwrap();
    assert!(tabs.iter().all(|t| t.url != denied && t.url != allowed), "the popup is gone: {tabs:?}");
    let requests = h.site.requests();
    let at = |url: &str| requests.iter().position(|r| r == url);
    assert!(at(&allowed) < at(&denied) && at(&denied).is_some(), "the browser followed the 302: {requests:?}");
    h.stop().await;
}

/// A service-worker restart forgets nothing about popups: a popup of an agent's tab opened before the restart, which
/// then goes (through the allowed site's redirect) to a denied origin, is closed by the new worker, by the site policy
/// the old worker kept (the broker has not sent it again); and a popup the agent's tab opens after the restart (its
/// owner not yet read back from storage) is judged too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn popups_are_still_judged_after_a_service_worker_restart() {
    let mut h = common::start().await;
    let tab = agent_tab(&h).await;
    let fine = h.site.url("/popup-target.html?via=before-restart");
    with_gesture(&h.link, tab, &format!("window.open({fine:?}, 'kept', 'width=400') ? 'window' : 'no'")).await;
    assert!(tab_shows(&h.link, &fine).await, "the allowed popup is open");
    // The worker keeps the popup's record in its session storage: wait until it is written, or the restart below may
    // come first (the tab shows before the worker has looked up whose popup it is), and no worker would judge it.
    let mut popups = Value::Null;
    for _ in 0..500 {
        popups = h.link.status().await.unwrap()["popups"].clone();
        if popups.as_array().is_some_and(|a| a.iter().any(|p| p["stored"] == true)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(popups.as_array().is_some_and(|a| a.iter().any(|p| p["stored"] == true)), "the popup's record: {popups}");
    let old = h.link.info().instance.clone();

    // Stop the service worker through the harness's own DevTools pipe, then wake it with a tab event.
    let cdp = h.browser.cdp();
    let mut targets = Value::Null;
    for _ in 0..300 {
        targets = cdp.call(None, "Target.getTargets", json!({}), T).await.unwrap()["targetInfos"].clone();
        if targets.as_array().unwrap().iter().any(|t| t["url"] == fine) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let target = |kind: &str, part: &str| {
        targets
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == kind && t["url"].as_str().unwrap().contains(part))
            .map(|t| t["targetId"].clone())
    };
    let sw = target("service_worker", DEV_EXTENSION_ID).expect("the extension's service worker");
    let (popup, opener) = (target("page", &fine).expect("the popup"), target("page", "/policy-redirect.html").unwrap());
    cdp.call(None, "Target.closeTarget", json!({"targetId": sw}), T).await.unwrap();
    h.link.wait_closed().await;
    cdp.call(None, "Target.createTarget", json!({"url": "about:blank"}), T).await.unwrap();
    let link = tokio::time::timeout(Duration::from_secs(30), h.links.recv()).await.unwrap().unwrap();
    assert_ne!(link.info().instance, old, "a new service-worker instance");
    h.link = link;
    // The broker hands its policy to a new worker only before its next page work: until then the new worker
    // judges by the copy the old one kept.
    let sites = h.link.status().await.unwrap()["sites"].clone();
    assert_eq!(sites["deny"], json!(["localhost"]), "the kept policy: {sites}");

    // The popup from before the restart goes to the denied origin: closed by the new worker.
    let session = |target: Value| async move {
        let att = cdp.call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), T).await;
        SessionId(att.unwrap()["sessionId"].as_str().unwrap().to_owned())
    };
    let s = session(popup).await;
    let denied = h.site.cross_origin_url("/policy-landing.html?via=kept-popup");
    let expression = format!("location.href = {:?}; 'sent'", redirect_to(&h, "/policy-landing.html?via=kept-popup"));
    cdp.call(Some(&s), "Runtime.evaluate", json!({"expression": expression}), T).await.unwrap();
    let record = closed_popup(&h.link, &denied).await;
    assert_eq!(record["via"], "commit", "{record}");

    // A new popup of the agent's tab, opened while the new worker has not read the tab's owner yet: judged too.
    let s = session(opener).await;
    let denied = h.site.cross_origin_url("/policy-landing.html?via=after-restart");
    let url = redirect_to(&h, "/policy-landing.html?via=after-restart");
    let expression = format!("window.open({url:?}, 'after', 'width=400') ? 'window' : 'no'");
    let r = cdp.call(Some(&s), "Runtime.evaluate", json!({"expression": expression, "userGesture": true}), T).await;
    assert_eq!(r.unwrap()["result"]["value"], "window");
    closed_popup(&h.link, &denied).await;
    assert!(h.link.list_tabs().await.unwrap().iter().all(|t| !t.url.contains("policy-landing")), "no popup stays");
    h.stop().await;
}
