//! The extension's last-hop scheme gate (`extension/lib/schemes.js`) in headless Chromium with the real extension
//! and native host: a `javascript:` navigation, a tab opened at `file:`/`chrome:`/`data:`, a claim of a user tab
//! showing one, and any command to a tab that came to show one are refused with `POLICY_DENIED` before
//! `chrome.debugger` is asked, whatever the broker above sent; `file:` passes only inside the roots the broker sent.

mod common;

use std::time::Duration;

use browserd_cdp::SessionId;
use browserd_native::link::{ExtensionError, ExtensionLink};
use serde_json::{Value, json};

const AGENT: &str = "agent-a";
const T: Duration = Duration::from_secs(10);

fn refused_code(e: &ExtensionError) -> &str {
    match e {
        ExtensionError::Refused { code, .. } => code,
        other => panic!("expected a refusal, got {other}"),
    }
}

async fn tab_id_of(link: &ExtensionLink, url: &str) -> i64 {
    for _ in 0..200 {
        if let Some(t) = link.list_tabs().await.unwrap().into_iter().find(|t| t.url == url) {
            return t.tab_id;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no tab with url {url}");
}

async fn eval(link: &ExtensionLink, tab: i64, expression: &str) -> Result<Value, ExtensionError> {
    link.call(
        "cdp.send",
        json!({"target": {"tabId": tab}, "method": "Runtime.evaluate",
               "params": {"expression": expression, "returnByValue": true}}),
    )
    .await
}

/// An agent tab on the fixture page, loaded, with the debugger attached and a lease granted.
async fn agent_tab(h: &common::Harness) -> (i64, Value) {
    let url = h.site.url("/form.html");
    let tab = h.link.create_tab(AGENT, &url, true).await.unwrap().tab_id;
    h.link.call("debugger.attach", json!({"session": AGENT, "tabId": tab})).await.unwrap();
    for _ in 0..200 {
        let r = eval(&h.link, tab, "location.href + '|' + document.readyState").await.unwrap();
        if r["result"]["value"] == format!("{url}|complete").as_str() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let lease = h.link.grant_lease(AGENT, tab, 1).await.unwrap();
    (tab, json!({"token": lease.token, "epoch": lease.epoch}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scheme_gate_refuses_javascript_file_and_chrome_before_dispatch() {
    let h = common::start().await;
    let (tab, fence) = agent_tab(&h).await;
    let title = eval(&h.link, tab, "document.title").await.unwrap()["result"]["value"].clone();

    // A javascript: navigation carrying a valid lease: refused, nothing ran.
    for url in ["javascript:void(document.title='pwned')", " JavaScript:void(document.title='pwned')"] {
        let e = h
            .link
            .call(
                "cdp.send",
                json!({"target": {"tabId": tab}, "method": "Page.navigate", "params": {"url": url}, "fence": fence}),
            )
            .await
            .unwrap_err();
        assert_eq!(refused_code(&e), "POLICY_DENIED", "{e}");
        assert!(e.to_string().contains("`javascript:`") && e.to_string().contains("nothing was sent"), "{e}");
    }
    assert_eq!(eval(&h.link, tab, "document.title").await.unwrap()["result"]["value"], title, "no script ran");
    // Navigations to file:, chrome: and data: are refused too, by Page.navigate and by tabs.update.
    for url in ["file:///etc/passwd", "chrome://settings", "data:text/html,<p>x", "view-source:https://a.test/"] {
        let e = h
            .link
            .call(
                "cdp.send",
                json!({"target": {"tabId": tab}, "method": "Page.navigate", "params": {"url": url}, "fence": fence}),
            )
            .await
            .unwrap_err();
        assert_eq!(refused_code(&e), "POLICY_DENIED", "{url}: {e}");
        let e = h.link.call("tabs.update", json!({"session": AGENT, "tabId": tab, "url": url})).await.unwrap_err();
        assert_eq!(refused_code(&e), "POLICY_DENIED", "{url}: {e}");
        let e = h.link.create_tab(AGENT, url, false).await.unwrap_err();
        assert_eq!(refused_code(&e), "POLICY_DENIED", "{url}: {e}");
    }
    let gate = h.link.status().await.unwrap()["gate"].clone();
    assert_eq!(gate["dispatched"], 0, "no refused navigation reached the input gate: {gate}");

    // The user's own tabs at file: and chrome: cannot be claimed.
    for url in ["file:///etc/passwd", "chrome://version/"] {
        h.browser.cdp().call(None, "Target.createTarget", json!({"url": url}), T).await.unwrap();
        let user_tab = tab_id_of(&h.link, url).await;
        let e = h.link.claim_tab(AGENT, user_tab).await.unwrap_err();
        assert_eq!(refused_code(&e), "POLICY_DENIED", "{url}: {e}");
    }
    assert!(h.link.owners().await.unwrap().iter().all(|o| o.tab_id == tab), "nothing but the agent tab is owned");

    // The agent's tab taken to chrome:// by the user (browser-initiated): no command reaches it, reads included.
    let targets = h.browser.cdp().call(None, "Target.getTargets", json!({}), T).await.unwrap();
    let target = targets["targetInfos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["url"].as_str().unwrap_or_default().ends_with("/form.html"))
        .expect("the agent tab")["targetId"]
        .clone();
    let cdp = h.browser.cdp();
    let att = cdp.call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), T).await.unwrap();
    let s = SessionId(att["sessionId"].as_str().unwrap().to_owned());
    cdp.call(Some(&s), "Page.navigate", json!({"url": "chrome://version/"}), T).await.unwrap();
    let _ = tab_id_of(&h.link, "chrome://version/").await;
    let mut refused = None;
    for _ in 0..200 {
        match eval(&h.link, tab, "document.body.innerText").await {
            Err(e) => {
                refused = Some(e);
                break;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    let e = refused.expect("the read is refused");
    assert!(matches!(refused_code(&e), "POLICY_DENIED" | "UNSUPPORTED" | "BROWSER_ERROR"), "{e}");
    let e = h.link.call("debugger.attach", json!({"session": AGENT, "tabId": tab})).await.unwrap_err();
    assert_eq!(refused_code(&e), "POLICY_DENIED", "{e}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_urls_pass_the_gate_only_inside_the_roots_the_broker_sent() {
    let h = common::start().await;
    let check = |url: &str| {
        let link = h.link.clone();
        let url = url.to_owned();
        async move { link.call("schemes.check", json!({"url": url})).await.unwrap()["refusal"].clone() }
    };
    assert!(check("file:///srv/reports/q3.html").await.is_string(), "no roots: file: refused");
    let set =
        h.link.call("schemes.set", json!({"fileRoots": ["/srv/reports/"], "extra": ["data", "javascript"]})).await;
    assert_eq!(
        set.unwrap(),
        json!({"fileRoots": ["/srv/reports"], "extra": ["data:"], "uploadRoots": []}),
        "javascript: is never added; no upload roots were sent"
    );
    assert_eq!(check("file:///srv/reports/q3.html").await, Value::Null);
    assert_eq!(check("file://localhost/srv/reports/a%20b.html").await, Value::Null);
    for out in [
        "file:///srv/reports-old/x.html",
        "file:///srv/reports/../../etc/passwd",
        "file:///srv/reports/%2e%2e/%2e%2e/etc/passwd",
        "file://server/srv/reports/x",
        "javascript:1",
    ] {
        assert!(check(out).await.is_string(), "{out} refused");
    }
    assert_eq!(check("data:text/html,x").await, Value::Null, "an extra scheme the broker sent passes");
    assert_eq!(h.link.status().await.unwrap()["schemes"]["fileRoots"], json!(["/srv/reports"]));
    h.stop().await;
}
