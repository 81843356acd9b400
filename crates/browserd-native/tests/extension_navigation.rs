//! The extension's last-hop gate stops a top-level navigation to a denied origin before it is requested, with its own
//! copy of the policy and whatever browserd answers, in headless Chromium with the real extension and native host:
//! with the Fetch domain on (as browserd enables it on each page session), a link click and a script's `location =`
//! to the denied origin are failed by the extension itself, and the denied site's request log shows it never received
//! them.

mod common;

use std::time::Duration;

use browserd_native::link::{ExtensionError, ExtensionLink};
use serde_json::{Value, json};

const AGENT: &str = "agent-navigation";

async fn send(link: &ExtensionLink, tab: i64, method: &str, params: Value) -> Result<Value, ExtensionError> {
    link.call("cdp.send", json!({"target": {"tabId": tab}, "method": method, "params": params})).await
}

async fn evaluate(link: &ExtensionLink, tab: i64, expression: &str) -> Result<Value, ExtensionError> {
    send(link, tab, "Runtime.evaluate", json!({"expression": expression, "returnByValue": true})).await
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

/// Waits until the extension has stopped `n` navigations in all.
async fn stopped(link: &ExtensionLink, n: u64) -> Value {
    let mut status = Value::Null;
    for _ in 0..300 {
        status = link.status().await.unwrap();
        if status["stoppedNavigations"].as_u64().unwrap_or(0) >= n {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the extension did not stop navigation {n}: {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extension_fails_a_denied_top_level_request_before_it_is_sent() {
    let h = common::start().await;
    h.link.call("policy.set", json!({"allow": [], "deny": ["localhost"], "realProfileDeny": []})).await.unwrap();
    let page = h.site.url("/policy-redirect.html");
    let tab = loaded_tab(&h.link, &page).await;
    let patterns = json!({"patterns": [{"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}]});
    send(&h.link, tab, "Fetch.enable", patterns).await.unwrap();

    // A link click (the page's own script clicks it: no input of the agent's) to the denied origin.
    evaluate(&h.link, tab, "document.getElementById('direct').click(); true").await.unwrap();
    let status = stopped(&h.link, 1).await;
    assert!(status["gate"]["refused"].as_u64().unwrap_or(0) >= 1, "{status}");
    assert_eq!(h.site.cross_origin_requests("/policy-landing.html"), Vec::<String>::new(), "never requested");

    // A script's `location =` to the denied origin, in a second tab of the allowed page.
    let second = loaded_tab(&h.link, &page).await;
    let patterns = json!({"patterns": [{"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}]});
    send(&h.link, second, "Fetch.enable", patterns).await.unwrap();
    evaluate(&h.link, second, "location = document.getElementById('direct').href + '?script=1'; true").await.unwrap();
    stopped(&h.link, 2).await;
    assert_eq!(h.site.cross_origin_requests("/policy-landing.html"), Vec::<String>::new(), "never requested");
    // Neither tab shows anything of the denied page.
    for t in [tab, second] {
        let e = evaluate(&h.link, t, "document.body ? document.body.innerText : ''").await;
        assert!(!format!("{e:?}").contains("Landing secret"), "{e:?}");
    }
    h.stop().await;
}
